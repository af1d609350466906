// The executor on hand-written tile kernels and plans (what tile/ lowering and synth/ will produce):
// a pipelined GEMM on sm_80 (cp.async into swizzled shared tiles, ldmatrix, mma.sync over a 2x2 warp
// tiling, a 2-stage ring) and on sm_90a (TMA with the 128-byte swizzle, wgmma through descriptors),
// a row reduction across lanes and warps, and plans that are wrong in ways synthesis could get wrong:
// each must give a wrong answer or a fault, never the right answer by accident.
#include <catch2/catch.hpp>

#include <cstring>
#include <random>

#include "layout/atoms.h"
#include "sim/executor.h"
#include "weft/numerics.h"

namespace weft::sim {
namespace {

using layout::IntTuple;
using layout::Layout;
using layout::SwizzledLayout;
using layout::TvLayout;
using tile::OpId;
using tile::ValueId;

// A mode of a TV layout: `size` steps, each moving (drow, dcol) in the tile.
struct Mode {
  std::int64_t size, drow, dcol;
};

// The TV layout ((thread modes), (value modes)) over a rows x cols tile (index row + rows * col).
TvLayout MakeTv(std::int64_t rows, std::int64_t cols, const std::vector<Mode>& threads,
                const std::vector<Mode>& values) {
  auto group = [&](const std::vector<Mode>& modes) {
    std::vector<IntTuple> shape, stride;
    for (const Mode& m : modes) {
      shape.push_back(m.size);
      stride.push_back(m.drow + rows * m.dcol);
    }
    return std::pair{IntTuple::Tuple(shape), IntTuple::Tuple(stride)};
  };
  auto [ts, td] = group(threads);
  auto [vs, vd] = group(values);
  auto tv = layout::MakeTvLayout(Layout(IntTuple::Tuple({ts, vs}), IntTuple::Tuple({td, vd})), rows, cols);
  REQUIRE(tv.ok());
  return *tv;
}

// The atom's own TV layout as modes in (row, col) steps (its strides are pure row or column moves).
std::pair<std::vector<Mode>, std::vector<Mode>> AtomModes(const std::string& atom, const std::string& operand) {
  auto a = layout::FindAtom(atom);
  REQUIRE(a.ok());
  const TvLayout& tv = a->Operand(operand)->tv;
  std::vector<Mode> t, v;
  for (int side = 0; side < 2; ++side) {
    Layout mode = tv.layout.Mode(side);
    for (auto [size, stride] : layout::FlatModes(mode))
      (side == 0 ? t : v).push_back(Mode{size, stride % tv.rows, stride / tv.rows});
  }
  return {t, v};
}

std::vector<Mode> Concat(std::vector<Mode> a, const std::vector<Mode>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

core::Dim Var(int i) {
  return core::Dim::Var(core::SizeVarId(static_cast<std::uint32_t>(i)));
}
core::Dim Const(std::int64_t c) {
  return core::Dim::Constant(c);
}

// A GEMM kernel c = a @ b (bf16 in, f32 accumulation, bf16 out), tiles tm x tn x tk, as tile/ would
// lower it: sizes m = var 0, k = var 1, n = var 2.
struct Gemm {
  tile::Kernel k;
  ValueId a, b, c, i, j, zero, acc0, bound, counter, carried, va, vb, sa, sb, ra, rb, acc1, result, cast, vc;
  OpId loop, to_sa, to_sb, to_ra, to_rb, mma, store;
};

Gemm MakeGemm(std::int64_t tm, std::int64_t tn, std::int64_t tk, std::int64_t threads) {
  Gemm g;
  tile::Kernel& k = g.k;
  k.name = "gemm";
  k.threads = threads;
  auto value = [&](std::string name, Dtype d, tile::Space s, std::vector<core::Dim> shape) {
    tile::Value v;
    v.name = std::move(name);
    v.dtype = d;
    v.space = s;
    v.shape = std::move(shape);
    return k.Add(v);
  };
  auto op = [&](tile::OpNode node, std::vector<ValueId> results) {
    tile::Op o;
    o.node = std::move(node);
    o.results = results;
    OpId id = k.Add(o);
    for (ValueId r : results) k.Get(r).def = id;
    return id;
  };
  using S = tile::Space;
  g.a = value("a", Dtype::BF16, S::Global, {Var(0), Var(1)});
  g.b = value("b", Dtype::BF16, S::Global, {Var(1), Var(2)});
  g.c = value("c", Dtype::BF16, S::Global, {Var(0), Var(2)});
  k.params = {{"a", g.a, false}, {"b", g.b, false}, {"c", g.c, true}};
  k.grid = {*core::Div(Var(0), tm), *core::Div(Var(2), tn)};
  g.i = value("i", Dtype::I64, S::Scalar, {});
  g.j = value("j", Dtype::I64, S::Scalar, {});
  k.body.push_back(op(tile::op::BlockIdx{0}, {g.i}));
  k.body.push_back(op(tile::op::BlockIdx{1}, {g.j}));
  g.zero = value("", Dtype::F32, S::Scalar, {});
  k.body.push_back(op(tile::op::Constant{0.0}, {g.zero}));
  g.acc0 = value("", Dtype::F32, S::Reg, {Const(tm), Const(tn)});
  k.body.push_back(op(tile::op::Fill{g.zero, {tm, tn}}, {g.acc0}));
  g.bound = value("", Dtype::I64, S::Scalar, {});
  k.body.push_back(op(tile::op::Size{*core::Div(Var(1), tk)}, {g.bound}));
  g.counter = value("kk", Dtype::I64, S::Scalar, {});
  g.carried = value("acc", Dtype::F32, S::Reg, {Const(tm), Const(tn)});
  g.va = value("", Dtype::BF16, S::Global, {Const(tm), Const(tk)});
  g.vb = value("", Dtype::BF16, S::Global, {Const(tk), Const(tn)});
  g.sa = value("sa", Dtype::BF16, S::Shared, {Const(tm), Const(tk)});
  g.sb = value("sb", Dtype::BF16, S::Shared, {Const(tk), Const(tn)});
  g.ra = value("", Dtype::BF16, S::Reg, {Const(tm), Const(tk)});
  g.rb = value("", Dtype::BF16, S::Reg, {Const(tk), Const(tn)});
  g.acc1 = value("", Dtype::F32, S::Reg, {Const(tm), Const(tn)});
  std::vector<OpId> body = {op(tile::op::View{g.a, {tm, tk}, {g.i, g.counter}}, {g.va}),
                            op(tile::op::View{g.b, {tk, tn}, {g.counter, g.j}}, {g.vb})};
  g.to_sa = op(tile::op::ToShared{g.va}, {g.sa});
  g.to_sb = op(tile::op::ToShared{g.vb}, {g.sb});
  g.to_ra = op(tile::op::ToRegs{g.sa}, {g.ra});
  g.to_rb = op(tile::op::ToRegs{g.sb}, {g.rb});
  g.mma = op(tile::op::Mma{g.ra, g.rb, g.carried}, {g.acc1});
  body.insert(body.end(), {g.to_sa, g.to_sb, g.to_ra, g.to_rb, g.mma});
  g.result = value("", Dtype::F32, S::Reg, {Const(tm), Const(tn)});
  tile::op::Loop loop{g.counter, g.bound, {g.carried}, {g.acc0}, body, {g.acc1}, true};
  g.loop = op(loop, {g.result});
  k.body.push_back(g.loop);
  g.cast = value("", Dtype::BF16, S::Reg, {Const(tm), Const(tn)});
  k.body.push_back(op(tile::op::Cast{Dtype::BF16, g.result}, {g.cast}));
  g.vc = value("", Dtype::BF16, S::Global, {Const(tm), Const(tn)});
  k.body.push_back(op(tile::op::View{g.c, {tm, tn}, {g.i, g.j}}, {g.vc}));
  g.store = op(tile::op::Store{g.vc, g.cast}, {});
  k.body.push_back(g.store);
  return g;
}

synth::Plan EmptyPlan(const tile::Kernel& k, synth::Target target) {
  synth::Plan p;
  p.target = target;
  p.threads = k.threads;
  p.values.resize(k.values.size());
  p.ops.resize(k.ops.size());
  return p;
}

// The sm_80 plan for a 64 x 64 x 32 tile, 4 warps in 2 x 2 (warp tiles 32 x 32): cp.async.cg 16 B
// into row-major swizzled tiles (2 stages), ldmatrix.x4 for A, ldmatrix.x4.trans for B, mma.sync.
synth::Plan Sm80Plan(const Gemm& g) {
  synth::Plan p = EmptyPlan(g.k, synth::Target::Sm80);
  const std::int64_t M = 64, N = 64, K = 32;
  auto [at, av] = AtomModes("mma.m16n8k16.bf16", "A");
  auto [bt, bv] = AtomModes("mma.m16n8k16.bf16", "B");
  auto [ct, cv] = AtomModes("mma.m16n8k16.bf16", "C");
  // warps w = wm + 2 wn; each warp's tile is 32 x 32: 2 x 4 atoms of 16 x 8, 2 k-steps of 16.
  TvLayout acc = MakeTv(M, N, Concat(ct, {{2, 32, 0}, {2, 0, 32}}), Concat(cv, {{2, 16, 0}, {4, 0, 8}}));
  TvLayout a = MakeTv(M, K, Concat(at, {{2, 32, 0}, {2, 0, 0}}), Concat(av, {{2, 16, 0}, {2, 0, 16}}));
  TvLayout b = MakeTv(K, N, Concat(bt, {{2, 0, 0}, {2, 0, 32}}), Concat(bv, {{2, 16, 0}, {4, 0, 8}}));
  for (ValueId v : {g.acc0, g.carried, g.acc1, g.result, g.cast}) p.values[v.index].regs = acc;
  p.values[g.ra.index].regs = a;
  p.values[g.rb.index].regs = b;
  p.values[g.sa.index].shared =
      SwizzledLayout(layout::Swizzle(2, 3, 3), 0, Layout(IntTuple::Tuple({M, K}), IntTuple::Tuple({K, 1})));
  p.values[g.sa.index].shared_offset = 0;
  p.values[g.sa.index].stage_bytes = M * K * 2;
  p.values[g.sa.index].stages = 2;
  p.values[g.sb.index].shared =
      SwizzledLayout(layout::Swizzle(3, 3, 3), 0, Layout(IntTuple::Tuple({K, N}), IntTuple::Tuple({N, 1})));
  p.values[g.sb.index].shared_offset = 2 * M * K * 2;
  p.values[g.sb.index].stage_bytes = K * N * 2;
  p.values[g.sb.index].stages = 2;
  p.shared_bytes = 2 * M * K * 2 + 2 * K * N * 2;
  auto& ca = p.ops[g.to_sa.index];
  ca.instruction = synth::Instruction::Vector(synth::InstructionKind::kCpAsyncCg, 16);
  ca.vector_bytes = 16;
  ca.copy = MakeTv(M, K, {{4, 0, 8}, {32, 1, 0}}, {{2, 32, 0}});  // rows of 4 vectors, 2 vectors a thread
  auto& cb = p.ops[g.to_sb.index];
  cb.instruction = synth::Instruction::Vector(synth::InstructionKind::kCpAsyncCg, 16);
  cb.vector_bytes = 16;
  cb.copy = MakeTv(K, N, {{8, 0, 8}, {16, 1, 0}}, {{2, 16, 0}});
  // ldmatrix.x4 of A: lane 8j + r gives row r of matrix j = (rows 8 (j % 2), cols 8 (j / 2)).
  auto& la = p.ops[g.to_ra.index];
  la.instruction = synth::Instruction::Ldmatrix(4, false);
  la.vector_bytes = 16;
  la.copy = MakeTv(M, K, {{8, 1, 0}, {2, 8, 0}, {2, 0, 8}, {2, 32, 0}, {2, 0, 0}}, {{2, 16, 0}, {2, 0, 16}});
  // ldmatrix.x4.trans of B: lanes 0..15 give k rows 0..15 at n0, lanes 16..31 at n0 + 8.
  auto& lb = p.ops[g.to_rb.index];
  lb.instruction = synth::Instruction::Ldmatrix(4, true);
  lb.vector_bytes = 16;
  lb.copy = MakeTv(K, N, {{16, 1, 0}, {2, 0, 8}, {2, 0, 0}, {2, 0, 32}}, {{2, 16, 0}, {2, 0, 16}});
  auto& mm = p.ops[g.mma.index];
  mm.instruction = synth::Instruction::MmaSync(Dtype::BF16);
  mm.warps_m = 2;
  mm.warps_n = 2;
  p.ops[g.store.index].instruction = synth::Instruction::Vector(synth::InstructionKind::kStGlobal, 2);
  return p;
}

// The sm_90a plan for a 64 x 64 x 64 tile, one warpgroup: TMA boxes of 64 x 64 with the 128-byte
// swizzle into canonical tiles (A K-major, B N-major), wgmma.m64n64k16 reading both from shared.
synth::Plan Sm90Plan(const Gemm& g) {
  synth::Plan p = EmptyPlan(g.k, synth::Target::Sm90a);
  auto c = layout::FindAtom("wgmma.m64n64k16.bf16");
  REQUIRE(c.ok());
  TvLayout acc = c->Operand("C")->tv;
  for (ValueId v : {g.acc0, g.carried, g.acc1, g.result, g.cast}) p.values[v.index].regs = acc;
  auto a = layout::WgmmaSmemTile(layout::SwizzleMode::k128B, layout::Major::kK, 2, 64, 64);
  auto bt = layout::WgmmaSmemTile(layout::SwizzleMode::k128B, layout::Major::kMN, 2, 64, 64);  // (n, k)
  REQUIRE(a.ok());
  REQUIRE(bt.ok());
  // sb is indexed (k, n): the (n, k) tile with its modes swapped.
  const Layout& l = bt->layout();
  SwizzledLayout b(
      bt->swizzle(), 0,
      Layout(IntTuple::Tuple({l.shape()[1], l.shape()[0]}), IntTuple::Tuple({l.stride()[1], l.stride()[0]})));
  p.values[g.sa.index].shared = *a;
  p.values[g.sa.index].stage_bytes = 8192;
  p.values[g.sa.index].stages = 2;
  p.values[g.sb.index].shared = b;
  p.values[g.sb.index].shared_offset = 16384;
  p.values[g.sb.index].stage_bytes = 8192;
  p.values[g.sb.index].stages = 2;
  p.shared_bytes = 32768;
  layout::TmaBox box;
  box.box_dims = {64, 64};
  box.swizzle = layout::SwizzleMode::k128B;
  for (OpId o : {g.to_sa, g.to_sb}) {
    p.ops[o.index].instruction = synth::Instruction::Of(synth::InstructionKind::kTma2d);
    p.ops[o.index].tma = box;
  }
  for (OpId o : {g.to_ra, g.to_rb})
    p.ops[o.index].instruction = synth::Instruction::None("wgmma reads it from shared memory");
  p.ops[g.mma.index].instruction = synth::Instruction::Wgmma(64, Dtype::BF16);
  return p;
}

runtime::HostTensor RandomBf16(std::vector<std::int64_t> shape, std::uint32_t seed) {
  runtime::HostTensor t = runtime::HostTensor::Zeros(Dtype::BF16, shape);
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> dist(-8, 8);
  for (std::int64_t i = 0; i < t.Count(); ++i) runtime::StoreDouble(t, i, dist(gen) / 4.0);
  return t;
}

// c = a @ b rounded to bf16; the inputs are small multiples of 1/4, so every sum is exact in f32 and
// the simulated result must be equal bit for bit.
runtime::HostTensor Reference(const runtime::HostTensor& a, const runtime::HostTensor& b) {
  std::int64_t m = a.shape[0], k = a.shape[1], n = b.shape[1];
  runtime::HostTensor c = runtime::HostTensor::Zeros(Dtype::BF16, {m, n});
  for (std::int64_t r = 0; r < m; ++r)
    for (std::int64_t col = 0; col < n; ++col) {
      double sum = 0;
      for (std::int64_t x = 0; x < k; ++x)
        sum += runtime::LoadDouble(a, r * k + x) * runtime::LoadDouble(b, x * n + col);
      runtime::StoreDouble(c, r * n + col, sum);
    }
  return c;
}

TEST_CASE("a pipelined sm_80 GEMM: cp.async, ldmatrix, mma.sync over 2x2 warps", "[sim][executor]") {
  Gemm g = MakeGemm(64, 64, 32, 128);
  synth::Plan plan = Sm80Plan(g);
  auto a = RandomBf16({128, 96}, 1), b = RandomBf16({96, 64}, 2);
  auto out = Run(g.k, plan, {a, b});
  if (!out) FAIL(out.error().message);
  REQUIRE(out->outputs.size() == 1);
  CHECK(out->outputs[0].bytes == Reference(a, b).bytes);
  CHECK(out->blocks == 2);
  // per block: 3 k-steps x 4 warps x (2 x 4 atoms) x 2 k16 steps
  CHECK(out->counts.at("mma.sync.m16n8k16.bf16") == 2 * 3 * 4 * 8 * 2);
  CHECK(out->counts.at("ldmatrix.x4") == 2 * 3 * 4 * 4);
  CHECK(out->counts.at("ldmatrix.x4.trans") == 2 * 3 * 4 * 4);
  CHECK(out->counts.at("cp.async") == 2 * 3 * (256 + 256));
}

TEST_CASE("an sm_90a GEMM: TMA with the 128-byte swizzle and wgmma through descriptors", "[sim][executor]") {
  Gemm g = MakeGemm(64, 64, 64, 128);
  synth::Plan plan = Sm90Plan(g);
  auto a = RandomBf16({64, 192}, 3), b = RandomBf16({192, 128}, 4);
  auto out = Run(g.k, plan, {a, b});
  if (!out) FAIL(out.error().message);
  CHECK(out->outputs[0].bytes == Reference(a, b).bytes);
  CHECK(out->counts.at("wgmma.m64n64k16.bf16") == 2 * 3 * 4);
  CHECK(out->counts.at("cp.async.bulk.tensor.2d") == 2 * 3 * 2);
}

TEST_CASE("wrong plans give wrong answers or faults", "[sim][executor]") {
  auto a = RandomBf16({64, 64}, 5), b = RandomBf16({64, 64}, 6);
  runtime::HostTensor want = Reference(a, b);
  auto wrong_or_fault = [&](const Gemm& g, const synth::Plan& plan) {
    auto out = Run(g.k, plan, {a, b});
    if (!out) return std::string("fault: ") + out.error().message;
    return out->outputs[0].bytes == want.bytes ? std::string("right") : std::string("wrong");
  };
  {
    Gemm g = MakeGemm(64, 64, 32, 128);
    synth::Plan p = Sm80Plan(g);
    REQUIRE(wrong_or_fault(g, p) == "right");
    // A column-major shared tile: a 16-byte vector is not 8 consecutive elements of a row (the
    // cp.async destinations are not even aligned).
    p.values[g.sa.index].shared =
        SwizzledLayout(layout::Swizzle(0, 3, 3), 0, Layout(IntTuple::Tuple({64, 32}), IntTuple::Tuple({1, 64})));
    CHECK(wrong_or_fault(g, p).rfind("fault: cp.async", 0) == 0);
    // Row-major but with another swizzle for the ldmatrix reads than for the cp.async writes cannot
    // be written in one plan; a row-major tile whose rows are padded wrongly can: 40-element rows
    // hold 32 elements, so the rows do not overlap, and the product stays right.
    p.values[g.sa.index].shared =
        SwizzledLayout(layout::Swizzle(0, 3, 3), 0, Layout(IntTuple::Tuple({64, 32}), IntTuple::Tuple({40, 1})));
    p.values[g.sa.index].stage_bytes = 64 * 40 * 2;
    p.values[g.sb.index].shared_offset = 2 * 64 * 40 * 2;
    p.shared_bytes = 2 * 64 * 40 * 2 + 2 * 32 * 64 * 2;
    CHECK(wrong_or_fault(g, p) == "right");
    // Rows 24 elements apart overlap: the later rows' cp.async overwrite the earlier rows' ends.
    p.values[g.sa.index].shared =
        SwizzledLayout(layout::Swizzle(0, 3, 3), 0, Layout(IntTuple::Tuple({64, 32}), IntTuple::Tuple({24, 1})));
    CHECK(wrong_or_fault(g, p) == "wrong");
  }
  {
    Gemm g = MakeGemm(64, 64, 32, 128);
    synth::Plan p = Sm80Plan(g);
    p.ops[g.to_rb.index].instruction = synth::Instruction::Ldmatrix(4, false);  // B's rows are K: it needs .trans
    std::string r = wrong_or_fault(g, p);
    CHECK(r != "right");
  }
  {
    Gemm g = MakeGemm(64, 64, 32, 128);
    synth::Plan p = Sm80Plan(g);
    // the accumulator tiled over warps as 1 x 4 while the mma is told 2 x 2
    auto [ct, cv] = AtomModes("mma.m16n8k16.bf16", "C");
    p.values[g.acc1.index].regs = MakeTv(64, 64, Concat(ct, {{4, 0, 16}}), Concat(cv, {{4, 16, 0}, {2, 0, 8}}));
    std::string r = wrong_or_fault(g, p);
    CHECK(r.rfind("fault: thread", 0) == 0);
  }
  {
    Gemm g = MakeGemm(64, 64, 64, 128);
    synth::Plan p = Sm90Plan(g);
    REQUIRE(wrong_or_fault(g, p) == "right");
    p.ops[g.to_sb.index].tma->swizzle = layout::SwizzleMode::k64B;  // the box no longer fits a 64B row
    CHECK(wrong_or_fault(g, p).rfind("fault: tma", 0) == 0);
  }
  {
    Gemm g = MakeGemm(64, 64, 64, 128);
    synth::Plan p = Sm90Plan(g);
    p.values[g.sb.index].shared_offset = 16384 + 512;  // not 1024-aligned: the swizzle pattern slips
    CHECK(wrong_or_fault(g, p) != "right");
  }
}

TEST_CASE("a row reduction across lanes and warps, broadcast back with expand", "[sim][executor]") {
  // x: f32[64, 64] in the mma accumulator layout over 2 x 2 warps; s = sum x (rows span both warps
  // along n: shuffles, then shared memory); y = x - expand s.
  tile::Kernel k;
  k.name = "center";
  k.threads = 128;
  auto value = [&](std::string name, Dtype d, tile::Space s, std::vector<core::Dim> shape) {
    tile::Value v;
    v.name = std::move(name);
    v.dtype = d;
    v.space = s;
    v.shape = std::move(shape);
    return k.Add(v);
  };
  auto op = [&](tile::OpNode node, std::vector<ValueId> results) {
    tile::Op o;
    o.node = std::move(node);
    o.results = results;
    return k.Add(o);
  };
  using S = tile::Space;
  ValueId x = value("x", Dtype::F32, S::Global, {Const(64), Const(64)});
  ValueId y = value("y", Dtype::F32, S::Global, {Const(64), Const(64)});
  ValueId mx = value("mx", Dtype::F32, S::Global, {Const(64)});
  k.params = {{"x", x, false}, {"y", y, true}, {"mx", mx, true}};
  k.grid = {Const(1)};
  ValueId zero = value("", Dtype::I64, S::Scalar, {});
  ValueId vx = value("", Dtype::F32, S::Global, {Const(64), Const(64)});
  ValueId sx = value("", Dtype::F32, S::Shared, {Const(64), Const(64)});
  ValueId rx = value("", Dtype::F32, S::Reg, {Const(64), Const(64)});
  ValueId sum = value("s", Dtype::F32, S::Reg, {Const(64)});
  ValueId mxr = value("m", Dtype::F32, S::Reg, {Const(64)});
  ValueId ex = value("", Dtype::F32, S::Reg, {Const(64), Const(1)});
  ValueId ry = value("", Dtype::F32, S::Reg, {Const(64), Const(64)});
  ValueId vy = value("", Dtype::F32, S::Global, {Const(64), Const(64)});
  ValueId vm = value("", Dtype::F32, S::Global, {Const(64)});
  OpId o_sx, o_rx, o_st, o_stm;
  k.body = {op(tile::op::Constant{std::int64_t{0}}, {zero}),
            op(tile::op::View{x, {64, 64}, {zero, zero}}, {vx}),
            o_sx = op(tile::op::ToShared{vx}, {sx}),
            o_rx = op(tile::op::ToRegs{sx}, {rx}),
            op(tile::op::Reduce{"sum", rx}, {sum}),
            op(tile::op::Reduce{"max", rx}, {mxr}),
            op(tile::op::Expand{sum}, {ex}),
            op(tile::op::Map{"-", {rx, ex}}, {ry}),
            op(tile::op::View{y, {64, 64}, {zero, zero}}, {vy}),
            o_st = op(tile::op::Store{vy, ry}, {}),
            op(tile::op::View{mx, {64}, {zero}}, {vm}),
            o_stm = op(tile::op::Store{vm, mxr}, {})};
  synth::Plan p = EmptyPlan(k, synth::Target::Sm80);
  auto [ct, cv] = AtomModes("mma.m16n8k16.f16", "C");
  TvLayout acc = MakeTv(64, 64, Concat(ct, {{2, 32, 0}, {2, 0, 32}}), Concat(cv, {{2, 16, 0}, {4, 0, 8}}));
  // the row vector: thread (t, g, wm, wn) holds rows g, g + 8, + 16 am of its warp: a broadcast over t and wn
  TvLayout rows = MakeTv(64, 1, {{4, 0, 0}, {8, 1, 0}, {2, 32, 0}, {2, 0, 0}}, {{2, 8, 0}, {2, 16, 0}});
  p.values[rx.index].regs = acc;
  p.values[ry.index].regs = acc;
  p.values[sum.index].regs = rows;
  p.values[mxr.index].regs = rows;
  p.values[ex.index].regs = rows;
  p.values[sx.index].shared =
      SwizzledLayout(layout::Swizzle(3, 2, 3), 0, Layout(IntTuple::Tuple({64, 64}), IntTuple::Tuple({64, 1})));
  p.shared_bytes = 64 * 64 * 4;
  p.ops[o_sx.index].instruction = synth::Instruction::Vector(synth::InstructionKind::kCpAsyncCg, 16);
  p.ops[o_sx.index].vector_bytes = 16;
  p.ops[o_sx.index].copy = MakeTv(64, 64, {{16, 0, 4}, {8, 1, 0}}, {{8, 8, 0}});
  p.ops[o_rx.index].instruction = synth::Instruction::Vector(synth::InstructionKind::kLdShared, 8);
  p.ops[o_rx.index].vector_bytes = 8;
  p.ops[o_rx.index].copy =
      MakeTv(64, 64, Concat({ct[0], ct[1]}, {{2, 32, 0}, {2, 0, 32}}), {{2, 8, 0}, {2, 16, 0}, {4, 0, 8}});
  (void)o_st;
  (void)o_stm;
  runtime::HostTensor in = runtime::HostTensor::Zeros(Dtype::F32, {64, 64});
  std::mt19937 gen(7);
  std::uniform_int_distribution<int> dist(-100, 100);
  for (std::int64_t i = 0; i < in.Count(); ++i) runtime::StoreDouble(in, i, dist(gen) / 8.0);
  auto out = Run(k, p, {in});
  if (!out) FAIL(out.error().message);
  for (std::int64_t r = 0; r < 64; ++r) {
    double s = 0, m = -1e30;
    for (std::int64_t c = 0; c < 64; ++c) {
      s += runtime::LoadDouble(in, r * 64 + c);
      m = std::max(m, runtime::LoadDouble(in, r * 64 + c));
    }
    CHECK(runtime::LoadDouble(out->outputs[1], r) == m);
    for (std::int64_t c = 0; c < 64; ++c)
      CHECK(runtime::LoadDouble(out->outputs[0], r * 64 + c) ==
            static_cast<float>(runtime::LoadDouble(in, r * 64 + c) - s));
  }
  CHECK(out->counts.at("shfl.sync.bfly") > 0);
  CHECK(out->counts.at("st.shared") > 0);  // the partials of the two warps along n
}

}  // namespace
}  // namespace weft::sim
