// The tile IR verifier (tile/verify.cpp) on hand-built kernels: a gemm that holds, then one broken
// invariant at a time, each of which it must report. And the printer's format on the same gemm.
#include <algorithm>
#include <string>

#include <catch2/catch.hpp>

#include "tile/ir.h"

namespace weft::tile {
namespace {

using core::Dim;

std::vector<Dim> Shape(std::initializer_list<std::int64_t> extents) {
  std::vector<Dim> out;
  for (std::int64_t e : extents) out.push_back(Dim::Constant(e));
  return out;
}

// kernel gemm (a: bf16[256, 128]) (b: bf16[128, 256]) (out c: f32[256, 256]) grid (2, 2) threads 128,
// built op by op as the lowering would.
struct Gemm {
  Kernel k;
  ValueId a, b, c, i, j, zero, fill, acc, kk, bound, va, sa, ra, vb, sb, rb, prod, result, vc;
  OpId loop;

  ValueId Value(std::string name, Dtype dtype, Space space, std::vector<Dim> shape = {}) {
    tile::Value v;
    v.name = std::move(name);
    v.dtype = dtype;
    v.space = space;
    v.shape = std::move(shape);
    return k.Add(std::move(v));
  }
  ValueId Emit(std::vector<OpId>& block, OpNode node, std::string name, Dtype dtype, Space space,
               std::vector<Dim> shape = {}) {
    ValueId r = Value(std::move(name), dtype, space, std::move(shape));
    OpId op = k.Add(Op{Span{}, std::move(node), {r}});
    k.Get(r).def = op;
    block.push_back(op);
    return r;
  }

  Gemm() {
    k.name = "gemm";
    k.grid = {Dim::Constant(2), Dim::Constant(2)};
    k.threads = 128;
    a = Value("a", Dtype::BF16, Space::Global, Shape({256, 128}));
    b = Value("b", Dtype::BF16, Space::Global, Shape({128, 256}));
    c = Value("c", Dtype::F32, Space::Global, Shape({256, 256}));
    k.params = {{"a", a, false}, {"b", b, false}, {"c", c, true}};
    i = Emit(k.body, op::BlockIdx{0}, "i", Dtype::I64, Space::Scalar);
    j = Emit(k.body, op::BlockIdx{1}, "j", Dtype::I64, Space::Scalar);
    zero = Emit(k.body, op::Constant{0.0}, "", Dtype::F32, Space::Scalar);
    fill = Emit(k.body, op::Fill{zero, {128, 128}}, "", Dtype::F32, Space::Reg, Shape({128, 128}));
    bound = Emit(k.body, op::Constant{std::int64_t{2}}, "", Dtype::I64, Space::Scalar);
    op::Loop l;
    l.counter = kk = Value("kk", Dtype::I64, Space::Scalar);
    l.bound = bound;
    l.carried = {acc = Value("acc", Dtype::F32, Space::Reg, Shape({128, 128}))};
    l.init = {fill};
    va = Emit(l.body, op::View{a, {128, 64}, {i, kk}}, "", Dtype::BF16, Space::Global, Shape({128, 64}));
    sa = Emit(l.body, op::ToShared{va}, "sa", Dtype::BF16, Space::Shared, Shape({128, 64}));
    ra = Emit(l.body, op::ToRegs{sa}, "", Dtype::BF16, Space::Reg, Shape({128, 64}));
    vb = Emit(l.body, op::View{b, {64, 128}, {kk, j}}, "", Dtype::BF16, Space::Global, Shape({64, 128}));
    sb = Emit(l.body, op::ToShared{vb}, "sb", Dtype::BF16, Space::Shared, Shape({64, 128}));
    rb = Emit(l.body, op::ToRegs{sb}, "", Dtype::BF16, Space::Reg, Shape({64, 128}));
    prod = Emit(l.body, op::Mma{ra, rb, acc}, "", Dtype::F32, Space::Reg, Shape({128, 128}));
    l.yields = {prod};
    result = Value("acc", Dtype::F32, Space::Reg, Shape({128, 128}));
    loop = k.Add(Op{Span{}, std::move(l), {result}});
    k.Get(result).def = loop;
    k.body.push_back(loop);
    vc = Emit(k.body, op::View{c, {128, 128}, {i, j}}, "", Dtype::F32, Space::Global, Shape({128, 128}));
    k.body.push_back(k.Add(Op{Span{}, op::Store{vc, result}, {}}));
  }

  op::Loop& Loop() { return std::get<op::Loop>(k.ops[loop.index].node); }
  // Emit into the loop's body (adding an op may move the loop's node: look it up after).
  ValueId EmitInLoop(OpNode node, Dtype dtype, Space space, std::vector<Dim> shape) {
    std::vector<OpId> block;
    ValueId r = Emit(block, std::move(node), "", dtype, space, std::move(shape));
    Loop().body.push_back(block.front());
    return r;
  }
  template <typename T>
  T& Node(ValueId v) {
    return std::get<T>(k.ops[k.Get(v).def.index].node);
  }
};

// The verifier reports something containing `needle`.
void RequireViolation(const Kernel& k, const std::string& needle) {
  std::vector<std::string> violations = Verify(k);
  INFO("violations: " << violations.size() << (violations.empty() ? "" : ", first: " + violations.front()));
  REQUIRE(std::any_of(violations.begin(), violations.end(),
                      [&](const std::string& v) { return v.find(needle) != std::string::npos; }));
}

TEST_CASE("a well-formed gemm verifies", "[tile]") {
  Gemm g;
  CHECK(Verify(g.k).empty());
}

TEST_CASE("a value used before it is defined", "[tile]") {
  Gemm g;
  std::swap(g.Loop().body[0], g.Loop().body[1]);  // shared before its view
  RequireViolation(g.k, "used before it is defined");
}

TEST_CASE("a loop's carried value used after the loop", "[tile]") {
  Gemm g;
  std::get<op::Store>(g.k.ops[g.k.body.back().index].node).src = g.acc;
  RequireViolation(g.k, "used before it is defined");
}

TEST_CASE("an op in two blocks", "[tile]") {
  Gemm g;
  g.k.body.push_back(g.k.body.front());
  RequireViolation(g.k, "in two places");
}

TEST_CASE("mma with disagreeing K", "[tile]") {
  Gemm g;
  g.k.Get(g.rb).shape = Shape({32, 128});
  g.k.Get(g.sb).shape = Shape({32, 128});
  g.k.Get(g.vb).shape = Shape({32, 128});
  g.Node<op::View>(g.vb).shape = {32, 128};
  RequireViolation(g.k, "mma's M, K, N disagree");
}

TEST_CASE("mma with an operand in global memory", "[tile]") {
  Gemm g;
  g.Node<op::Mma>(g.prod).a = g.va;
  RequireViolation(g.k, "mma's A");
}

TEST_CASE("regs of a global view, shared of a register tile", "[tile]") {
  Gemm g;
  g.Node<op::ToRegs>(g.ra).src = g.va;
  RequireViolation(g.k, "regs' operand");
  Gemm h;
  h.Node<op::ToShared>(h.sa).src = h.fill;
  RequireViolation(h.k, "not a tile view in global memory");
}

TEST_CASE("a view of a view, and coordinates of the wrong count", "[tile]") {
  Gemm g;
  g.Node<op::View>(g.vb).tensor = g.va;
  RequireViolation(g.k, "not a tensor parameter");
  Gemm h;
  h.Node<op::View>(h.va).coords = {h.i};
  RequireViolation(h.k, "has 1 coordinates");
}

TEST_CASE("transpose: a view of a shared tile with the axes swapped, never of a register tile", "[tile]") {
  Gemm g;
  // B as the transposed view of an N x K shared tile: sb.T
  ValueId t = g.EmitInLoop(op::Transpose{g.sa}, Dtype::BF16, Space::Shared, Shape({64, 128}));
  ValueId rt = g.EmitInLoop(op::ToRegs{t}, Dtype::BF16, Space::Reg, Shape({64, 128}));
  (void)rt;
  CHECK(Verify(g.k).empty());
  g.k.Get(t).shape = Shape({128, 64});
  RequireViolation(g.k, "the result's shape is not the one its operands give");
  Gemm h;
  h.EmitInLoop(op::Transpose{h.ra}, Dtype::BF16, Space::Shared, Shape({64, 128}));
  RequireViolation(h.k, "transpose's operand");
}

TEST_CASE("store into an input", "[tile]") {
  Gemm g;
  g.k.params[2].out = false;
  RequireViolation(g.k, "not a tile of an `out` parameter");
}

TEST_CASE("map operands that do not broadcast", "[tile]") {
  Gemm g;
  ValueId bad = g.EmitInLoop(op::Map{"+", {g.prod, g.ra}}, Dtype::F32, Space::Reg, Shape({128, 128}));
  g.Loop().yields = {bad};
  RequireViolation(g.k, "does not broadcast");
  // A row vector broadcasts; a scalar operand too.
  Gemm h;
  ValueId row = h.EmitInLoop(op::Fill{h.zero, {128}}, Dtype::F32, Space::Reg, Shape({128}));
  ValueId ok = h.EmitInLoop(op::Map{"+", {h.prod, row, h.zero}}, Dtype::F32, Space::Reg, Shape({128, 128}));
  h.Loop().yields = {ok};
  CHECK(Verify(h.k).empty());
}

TEST_CASE("reduce keeps the wrong axis", "[tile]") {
  Gemm g;
  ValueId red = g.EmitInLoop(op::Reduce{"max", g.prod}, Dtype::F32, Space::Reg, Shape({128, 128}));
  ValueId back = g.EmitInLoop(op::Map{"+", {g.prod, red}}, Dtype::F32, Space::Reg, Shape({128, 128}));
  g.Loop().yields = {back};
  RequireViolation(g.k, "shape is not the one its operands give");
}

TEST_CASE("a loop yield of another type than its carried value", "[tile]") {
  Gemm g;
  g.Loop().yields = {g.ra};
  RequireViolation(g.k, "of another type");
  Gemm h;
  h.Loop().yields = {};
  RequireViolation(h.k, "0 yields");
}

TEST_CASE("block_idx beyond the grid's rank", "[tile]") {
  Gemm g;
  g.Node<op::BlockIdx>(g.j).axis = 2;
  RequireViolation(g.k, "block_idx 2 of a grid of rank 2");
}

TEST_CASE("the printer's format", "[tile]") {
  Gemm g;
  layout::Layout rows = *layout::Layout::Make(layout::IntTuple::Tuple({128, 64}), layout::IntTuple::Tuple({64, 1}));
  g.k.Get(g.sa).pin = Pin{"Sw<3,4,3> o 0 o (128,64):(64,1)", Span{},
                          layout::Value(layout::SwizzledLayout(*layout::Swizzle::Make(3, 4, 3), 0, rows))};
  CHECK(Print(g.k) ==
        "kernel gemm (%a : bf16[256, 128] @global) (%b : bf16[128, 256] @global) (out %c : f32[256, 256] @global)\n"
        "    grid (2, 2) threads 128 {\n"
        "  %i : i64 = block_idx 0\n"
        "  %j : i64 = block_idx 1\n"
        "  %5 : f32 = constant 0\n"
        "  %6 : f32[128, 128] @reg = fill [128, 128] %5\n"
        "  %7 : i64 = constant 2\n"
        "  %acc.1 = pipeline %kk < %7 with (%acc : f32[128, 128] @reg = %6) {\n"
        "    %10 : bf16[128, 64] @global = tile %a [128, 64] (%i, %kk)\n"
        "    %sa : bf16[128, 64] @shared Sw<3,4,3> o 0 o (128,64):(64,1) = shared %10\n"
        "    %12 : bf16[128, 64] @reg = regs %sa\n"
        "    %13 : bf16[64, 128] @global = tile %b [64, 128] (%kk, %j)\n"
        "    %sb : bf16[64, 128] @shared = shared %13\n"
        "    %15 : bf16[64, 128] @reg = regs %sb\n"
        "    %16 : f32[128, 128] @reg = mma %12 %15 %acc\n"
        "    yield %16\n"
        "  }\n"
        "  %18 : f32[128, 128] @global = tile %c [128, 128] (%i, %j)\n"
        "  store %18 %acc.1\n"
        "}\n");
}

}  // namespace
}  // namespace weft::tile
