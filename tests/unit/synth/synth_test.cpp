// Layout synthesis: the pieces as laws over every (thread, value), and the plans of docs/kernels.md's
// gemm (sm_80 and sm_90a) and of an attention-like kernel as invariants: every Reg layout is a
// bijection onto its tile or a well-formed broadcast, ldmatrix's row addresses deliver exactly the
// consumer's layout (checked against the ldmatrix atom's own table, not synthesis's code), the chosen
// swizzles are conflict-free, wgmma tiles have valid descriptors, and the search is deterministic.
#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "check/check.h"
#include "layout/atoms.h"
#include "syntax/parser.h"
#include "synth/explain.h"
#include "synth/synthesize.h"
#include "synth/tiling.h"
#include "tile/lower.h"

namespace weft::synth {
namespace {

using layout::TvLayout;
using tile::ValueId;

const char* kGemm = R"(kernel gemm (a: bf16[m, k]) (b: bf16[k, n]) (out c: f32[m, n])
    where m % 128 == 0, n % 128 == 0, k % 64 == 0
    grid (m / 128, n / 128) threads 128 =
  let (i, j) = block_idx in
  let acc = pipeline kk < k / 64 with acc = zeros [128, 128] do
    let sa = shared (tile a [128, 64] (i, kk)) in
    let sb = shared (tile b [64, 128] (kk, j)) in
    mma (regs sa) (regs sb) acc
  in
  store (tile c [128, 128] (i, j)) acc
)";

// Source -> check -> tile::Lower, for the one kernel in `text`.
struct Lowered {
  SourceManager sources;
  std::optional<tile::Kernel> kernel;
};
std::unique_ptr<Lowered> Lower(const std::string& text) {
  auto out = std::make_unique<Lowered>();
  Diagnostics diagnostics;
  FileId file = out->sources.Add("test.weft", text);
  syntax::Ast ast = syntax::Parse(out->sources, file, diagnostics);
  check::CheckOptions options;
  options.stdlib_dir = WEFT_SOURCE_DIR "/stdlib";
  check::CheckResult result = check::Check(out->sources, ast, diagnostics, options);
  REQUIRE_FALSE(diagnostics.has_errors());
  for (const core::Def& def : result.module.defs()) {
    if (!tile::IsKernel(def)) continue;
    auto k = tile::Lower(result.module, result.vars, def);
    REQUIRE(k.ok());
    out->kernel = *k;
  }
  REQUIRE(out->kernel.has_value());
  return out;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The kernel text of a lit test (its lines that are not `--` comments).
std::string KernelOf(const std::string& path) {
  std::istringstream in(ReadFile(path));
  std::string line, out;
  while (std::getline(in, line))
    if (line.rfind("--", 0) != 0) out += line + "\n";
  return out;
}

const layout::Atom& Atom(const std::string& name) {
  static std::map<std::string, layout::Atom> cache;
  if (!cache.count(name)) cache.emplace(name, *layout::FindAtom(name));
  return cache.at(name);
}

// ldmatrix's semantics from the atom table: lane 8j + r supplies row r of matrix j; the atom's
// register TV layout says which stored (row, col) each lane's register j, element e receives.
// Checks that for every thread and instruction the received element is the Reg layout's value
// 2 * (count * i + j) + e (plan.h's convention).
void CheckLdmatrixRealizes(const OpChoice& oc, const TvLayout& reg) {
  REQUIRE(oc.copy.has_value());
  bool trans = oc.instruction.trans;
  int count = oc.instruction.count;
  const layout::Atom& atom = Atom("ldmatrix.x" + std::to_string(count) + (trans ? ".trans" : ""));
  const TvLayout& regs = atom.Operand("dst")->tv;  // (lane, (e, j)) -> stored row + 8N * col
  const TvLayout& copy = *oc.copy;
  for (std::int64_t t = 0; t < reg.threads(); ++t) {
    std::int64_t warp = t / 32, lane = t % 32;
    for (std::int64_t i = 0; i < copy.values(); ++i) {
      for (int j = 0; j < count; ++j) {
        for (int e = 0; e < 2; ++e) {
          auto stored = regs.At(lane, e + 2 * j);  // row of the 8N-row stored tile, col within it
          TvLayout::RowCol row_start = copy.At(warp * 32 + stored.row, i);
          TvLayout::RowCol got{row_start.row, row_start.col + stored.col};
          INFO("thread " << t << " instruction " << i << " register " << j << " element " << e);
          REQUIRE(got == reg.At(t, 2 * (count * i + j) + e));
        }
      }
    }
  }
}

TEST_CASE("tiled mma layouts: the accumulator is a bijection, A and B are broadcasts of one", "[synth]") {
  const layout::Atom& atom = Atom("mma.m16n8k16.bf16");
  for (auto [m, n, k] : {std::tuple{128, 128, 64}, std::tuple{64, 64, 64}, std::tuple{64, 128, 32}}) {
    for (auto [wm, wn] : {std::pair{1, 4}, std::pair{2, 2}, std::pair{4, 1}}) {
      TvLayout c = TileMma(atom.Operand("C")->tv, Operand::C, m, n, k, wm, wn);
      TvLayout a = TileMma(atom.Operand("A")->tv, Operand::A, m, n, k, wm, wn);
      TvLayout b = TileMma(atom.Operand("B")->tv, Operand::B, m, n, k, wm, wn);
      CHECK(c.threads() == 128);
      CHECK(layout::IsBijectionOntoTile(c));
      CHECK(IsWellFormed(a));
      CHECK(IsWellFormed(b));
      CHECK(a.threads() * a.values() == m * k * wn);  // A repeats over the warps along N
      CHECK(b.threads() * b.values() == k * n * wm);
      // Each warp's accumulator piece is the atom's C fragment at the warp's corner.
      for (std::int64_t lane = 0; lane < 32; ++lane)
        for (std::int64_t v = 0; v < 4; ++v) CHECK(c.At(lane, v) == atom.Operand("C")->tv.At(lane, v));
    }
  }
  const layout::Atom& wg = Atom("wgmma.m64n128k16.bf16");
  TvLayout c = TileMma(wg.Operand("C")->tv, Operand::C, 128, 128, 64, 1, 1);
  CHECK(c.threads() == 128);
  CHECK(layout::IsBijectionOntoTile(c));
}

TEST_CASE("slices: a reduction's result holds the rows of its parent, broadcast over the lanes of a row", "[synth]") {
  TvLayout c = TileMma(Atom("mma.m16n8k16.bf16").Operand("C")->tv, Operand::C, 64, 64, 64, 4, 1);
  auto rows = Slice(c, SliceKeep::Rows);
  REQUIRE(rows.ok());
  CHECK(IsWellFormed(*rows));
  for (std::int64_t t = 0; t < 128; ++t) {
    std::set<std::int64_t> parent, slice;
    for (std::int64_t v = 0; v < c.values(); ++v) parent.insert(c.At(t, v).row);
    for (std::int64_t v = 0; v < rows->values(); ++v) slice.insert(rows->At(t, v).row);
    CHECK(parent == slice);
  }
  auto cols = Slice(c, SliceKeep::Cols);
  REQUIRE(cols.ok());
  CHECK(IsWellFormed(*cols));
}

TEST_CASE("FitTv finds the layout of a table and refuses a table no layout gives", "[synth]") {
  TvLayout c = TileMma(Atom("mma.m16n8k16.bf16").Operand("C")->tv, Operand::C, 64, 64, 64, 2, 2);
  std::vector<std::int64_t> table;
  for (std::int64_t i = 0; i < c.layout.size(); ++i) table.push_back(c.layout(i));
  auto fitted = FitTv(table, c.threads(), c.values(), c.rows, c.cols);
  REQUIRE(fitted.has_value());
  for (std::int64_t i = 0; i < c.layout.size(); ++i) CHECK(fitted->layout(i) == c.layout(i));
  std::swap(table[3], table[5]);
  CHECK_FALSE(FitTv(table, c.threads(), c.values(), c.rows, c.cols).has_value());
}

TEST_CASE("gemm on sm_80: mma.sync, ldmatrix, 16-byte cp.async into conflict-free swizzled tiles", "[synth]") {
  auto lowered = Lower(kGemm);
  const tile::Kernel& k = *lowered->kernel;
  auto plan = Synthesize(k, Target::Sm80);
  REQUIRE(plan.ok());
  CHECK(plan->optimal);
  CHECK(plan->candidates > 1);
  CHECK(plan->shared_bytes <= SharedBudget(Target::Sm80));
  CHECK(plan->registers_per_thread <= 255);
  std::map<std::string, int> instructions;
  for (std::size_t i = 0; i < k.ops.size(); ++i) {
    const OpChoice& oc = plan->ops[i];
    ++instructions[Spelling(oc.instruction)];
    for (const Access& a : oc.accesses) {
      INFO(a.what);
      CHECK(a.conflicts.wavefronts == a.conflicts.ideal);  // 0 extra wavefronts
    }
    if (oc.instruction.kind == InstructionKind::kLdmatrix) {
      ValueId r = k.ops[i].results[0];
      CheckLdmatrixRealizes(oc, *plan->values[r.index].regs);
    }
    if (std::holds_alternative<tile::op::Mma>(k.ops[i].node)) {
      CHECK(oc.warps_m == 2);
      CHECK(oc.warps_n == 2);
    }
  }
  CHECK(instructions["mma.m16n8k16.bf16"] == 1);
  CHECK(instructions["ldmatrix.x4"] == 1);
  CHECK(instructions["ldmatrix.x4.trans"] == 1);
  CHECK(instructions["cp.async.cg.16"] == 2);
  CHECK(instructions["st.global.v2.b32"] == 1);
  for (std::size_t v = 0; v < k.values.size(); ++v) {
    const ValueChoice& vc = plan->values[v];
    if (vc.regs) {
      INFO("value " << v << " " << layout::ToString(vc.regs->layout));
      CHECK(IsWellFormed(*vc.regs));
    }
    if (k.values[v].space == tile::Space::Shared) {
      REQUIRE(vc.shared.has_value());
      CHECK(vc.shared->swizzle().bits() == 3);  // a swizzle was needed and chosen
      CHECK(vc.stages == 3);
    }
  }
}

TEST_CASE("gemm on sm_80: without a swizzle, ldmatrix.trans reads of the B tile conflict", "[synth]") {
  // The cost the search minimizes is real: B's rows are 256 bytes apart, so the 8 rows one
  // ldmatrix phase reads all fall in the same four banks.
  auto lowered = Lower(kGemm);
  const tile::Kernel& k = *lowered->kernel;
  auto plan = Synthesize(k, Target::Sm80);
  REQUIRE(plan.ok());
  for (std::size_t i = 0; i < k.ops.size(); ++i) {
    const OpChoice& oc = plan->ops[i];
    if (oc.instruction != Instruction::Ldmatrix(4, true)) continue;
    ValueId src = std::get<tile::op::ToRegs>(k.ops[i].node).src;
    const layout::SwizzledLayout& chosen = *plan->values[src.index].shared;
    layout::SwizzledLayout plain(layout::Swizzle(0, 3, 3), 0, chosen.layout());
    auto conflicts = CountCopyConflicts(*oc.copy, plain, 2, 16);
    REQUIRE(conflicts.ok());
    CHECK(conflicts->wavefronts == 8 * conflicts->ideal);
  }
}

TEST_CASE("gemm on sm_90a: wgmma from 128-byte swizzled tiles that TMA fills", "[synth]") {
  auto lowered = Lower(kGemm);
  const tile::Kernel& k = *lowered->kernel;
  auto plan = Synthesize(k, Target::Sm90a);
  REQUIRE(plan.ok());
  int tma = 0, wgmma = 0;
  for (std::size_t i = 0; i < k.ops.size(); ++i) {
    const OpChoice& oc = plan->ops[i];
    if (oc.instruction.kind == InstructionKind::kTma2d) {
      ++tma;
      REQUIRE(oc.tma.has_value());
      CHECK(oc.tma->swizzle == layout::SwizzleMode::k128B);
      CHECK(oc.tma->box_dims[0] * 2 == 128);
      layout::TmaBox box = *oc.tma;
      box.global_dims = {4096, 4096};
      box.global_strides_bytes = {8192};
      CHECK(layout::CheckTmaBox(box).ok());
    }
    if (oc.instruction == Instruction::Wgmma(128, Dtype::BF16)) {
      ++wgmma;
      CHECK(oc.a_from_shared);
      CHECK(oc.desc_a.has_value());
      CHECK(oc.desc_b.has_value());
      CHECK(oc.desc_b->stride_byte_offset == 1024);
    }
  }
  CHECK(tma == 2);
  CHECK(wgmma == 1);
  for (std::size_t v = 0; v < k.values.size(); ++v) {
    const ValueChoice& vc = plan->values[v];
    if (k.values[v].space == tile::Space::Shared) {
      CHECK(vc.swizzle_mode == layout::SwizzleMode::k128B);
      CHECK(vc.stages == 4);
      CHECK(vc.shared_offset % 1024 == 0);
    }
    if (vc.regs) CHECK(IsWellFormed(*vc.regs));
  }
}

const char* kGemmNt = R"(kernel gemm_nt (a: bf16[m, k]) (b: bf16[n, k]) (out c: f32[m, n])
    where m % 128 == 0, n % 128 == 0, k % 64 == 0
    grid (m / 128, n / 128) threads 128 =
  let (i, j) = block_idx in
  let acc = pipeline kk < k / 64 with acc = zeros [128, 128] do
    let sa = shared (tile a [128, 64] (i, kk)) in
    let sb = shared (tile b [128, 64] (j, kk)) in
    mma (regs sa) (regs (transpose sb)) acc
  in
  store (tile c [128, 128] (i, j)) acc
)";

TEST_CASE("TransposeTv: every (thread, value) holds the transposed element", "[synth]") {
  TvLayout b = TileMma(Atom("mma.m16n8k16.bf16").Operand("B")->tv, Operand::B, 128, 128, 64, 2, 2);
  auto t = TransposeTv(b);
  REQUIRE(t.has_value());
  CHECK(t->rows == b.cols);
  CHECK(t->cols == b.rows);
  for (std::int64_t th = 0; th < b.threads(); ++th)
    for (std::int64_t v = 0; v < b.values(); ++v) {
      CHECK(t->At(th, v).row == b.At(th, v).col);
      CHECK(t->At(th, v).col == b.At(th, v).row);
    }
}

TEST_CASE("gemm with column-major B on sm_80: the view of sb is read by ldmatrix without .trans", "[synth]") {
  auto lowered = Lower(kGemmNt);
  const tile::Kernel& k = *lowered->kernel;
  auto plan = Synthesize(k, Target::Sm80);
  REQUIRE(plan.ok());
  auto row_major = Synthesize(*Lower(kGemm)->kernel, Target::Sm80);
  REQUIRE(row_major.ok());
  CHECK(plan->shared_bytes == row_major->shared_bytes);  // the view takes no memory
  std::map<std::string, int> instructions;
  for (std::size_t i = 0; i < k.ops.size(); ++i) {
    const OpChoice& oc = plan->ops[i];
    ++instructions[Spelling(oc.instruction)];
    for (const Access& a : oc.accesses) {
      INFO(a.what);
      CHECK(a.conflicts.wavefronts == a.conflicts.ideal);
    }
    if (const auto* load = std::get_if<tile::op::ToRegs>(&k.ops[i].node)) {
      ValueId r = k.ops[i].results[0];
      const tile::Value& src = k.Get(load->src);
      bool view = std::holds_alternative<tile::op::Transpose>(k.Get(src.def).node);
      // Through the view the copy is in the parent's coordinates.
      TvLayout reg = view ? *TransposeTv(*plan->values[r.index].regs) : *plan->values[r.index].regs;
      CheckLdmatrixRealizes(oc, reg);
    }
    if (const auto* t = std::get_if<tile::op::Transpose>(&k.ops[i].node)) {
      const ValueChoice& view = plan->values[k.ops[i].results[0].index];
      const ValueChoice& parent = plan->values[t->src.index];
      REQUIRE(view.shared.has_value());
      REQUIRE(parent.shared.has_value());
      CHECK(view.shared->swizzle().bits() == parent.shared->swizzle().bits());
      CHECK(view.shared->layout().shape()[0] == parent.shared->layout().shape()[1]);
      CHECK(view.shared->layout().stride()[0] == parent.shared->layout().stride()[1]);
      CHECK(view.stage_bytes == 0);
    }
  }
  CHECK(instructions["ldmatrix.x4"] == 2);
  CHECK(instructions["ldmatrix.x4.trans"] == 0);
  CHECK(instructions["cp.async.cg.16"] == 2);
}

TEST_CASE("gemm with column-major B on sm_90a: wgmma's B descriptor is K-major", "[synth]") {
  auto lowered = Lower(kGemmNt);
  const tile::Kernel& k = *lowered->kernel;
  auto plan = Synthesize(k, Target::Sm90a);
  REQUIRE(plan.ok());
  int wgmma = 0, tma = 0;
  for (std::size_t i = 0; i < k.ops.size(); ++i) {
    const OpChoice& oc = plan->ops[i];
    if (oc.instruction.kind == InstructionKind::kTma2d) {
      ++tma;
      REQUIRE(oc.tma.has_value());
      CHECK(oc.tma->box_dims == std::vector<std::int64_t>{64, 128});  // the parent's box
    }
    if (oc.instruction.kind == InstructionKind::kWgmma) {
      ++wgmma;
      CHECK_FALSE(oc.b_mn_major);
      REQUIRE(oc.desc_a.has_value());
      REQUIRE(oc.desc_b.has_value());
      CHECK(oc.desc_b->leading_byte_offset == oc.desc_a->leading_byte_offset);
      CHECK(oc.desc_b->stride_byte_offset == oc.desc_a->stride_byte_offset);
    }
  }
  CHECK(wgmma == 1);
  CHECK(tma == 2);
}

TEST_CASE("attention: P in the first mma's accumulator layout is the second mma's A operand", "[synth]") {
  auto lowered = Lower(KernelOf(WEFT_SOURCE_DIR "/tests/lit/explain/attention_sm80.weft"));
  const tile::Kernel& k = *lowered->kernel;
  for (Target target : {Target::Sm80, Target::Sm90a}) {
    auto plan = Synthesize(k, target);
    REQUIRE(plan.ok());
    for (std::size_t i = 0; i < k.ops.size(); ++i) {
      const OpChoice& oc = plan->ops[i];
      for (const Access& a : oc.accesses) CHECK(a.conflicts.wavefronts == a.conflicts.ideal);
      if (oc.instruction.kind == InstructionKind::kLdmatrix)
        CheckLdmatrixRealizes(oc, *plan->values[k.ops[i].results[0].index].regs);
      if (std::holds_alternative<tile::op::Reduce>(k.ops[i].node)) {
        CHECK(oc.shuffles == 2);  // the 4 lanes of a quad share a row
        CHECK_FALSE(oc.shared_trip);
      }
    }
    for (const ValueChoice& vc : plan->values)
      if (vc.regs) CHECK(IsWellFormed(*vc.regs));
  }
}

TEST_CASE("synthesis is deterministic", "[synth]") {
  auto lowered = Lower(kGemm);
  ExplainOptions options;
  options.timings = false;
  for (Target target : {Target::Sm80, Target::Sm90a}) {
    auto a = Synthesize(*lowered->kernel, target);
    auto b = Synthesize(*lowered->kernel, target);
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    CHECK(Explain(*lowered->kernel, *a, options) == Explain(*lowered->kernel, *b, options));
  }
}

TEST_CASE("an f32 mma has no atom (E0606), and a pinned shared layout is honoured", "[synth]") {
  auto lowered = Lower(kGemm);
  tile::Kernel k = *lowered->kernel;
  SECTION("f32 operands") {
    for (auto& v : k.values)
      if (v.dtype == Dtype::BF16) v.dtype = Dtype::F32;
    auto plan = Synthesize(k, Target::Sm80);
    REQUIRE_FALSE(plan.ok());
    CHECK(plan.error().front().kind == DiagnosticKind::SynthNoMmaAtom);
  }
  SECTION("a pin") {
    layout::Layout rows = *layout::Layout::Make(layout::IntTuple::Tuple({128, 64}), layout::IntTuple::Tuple({64, 1}));
    layout::Value pinned = layout::SwizzledLayout(*layout::Swizzle::Make(3, 3, 3), 0, rows);  // the checker's value
    for (auto& v : k.values)
      if (v.space == tile::Space::Shared && v.name == "sa")
        v.pin = tile::Pin{"Sw<3,3,3> o 0 o (128,64):(64,1)", {}, pinned};
    auto plan = Synthesize(k, Target::Sm80);
    REQUIRE(plan.ok());
    for (std::size_t v = 0; v < k.values.size(); ++v)
      if (k.values[v].name == "sa") CHECK(plan->values[v].pinned);
  }
}

}  // namespace
}  // namespace weft::synth
