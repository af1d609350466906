// graph::ReadInPlace: which views a stdlib kernel on sm_90a reads through a TMA map of their layout
// (the data they view, the layout, the last axis's inner modes) and why the others are copied; and
// FuseOptions::views_in_place, which puts such views in the kernel's group instead of a copy.
#include <catch2/catch.hpp>

#include <string>

#include "graph/layout.h"
#include "program.h"

namespace weft::graph {
namespace {

using testing::Build;

// The operand `which` (0: a, 1: b) of main's first product.
NodeId Operand(const Graph& graph, std::size_t which) {
  for (const Node& n : graph.nodes)
    if (n.kind == Kind::MatMul) return n.args.at(which);
  FAIL("no product");
  return NodeId(0);
}

// Both operands of every product, in program order.
std::vector<NodeId> Operands(const Graph& graph) {
  std::vector<NodeId> out;
  for (const Node& n : graph.nodes)
    if (n.kind == Kind::MatMul) out.insert(out.end(), n.args.begin(), n.args.end());
  return out;
}

std::string Why(const Graph& graph, NodeId id) {
  auto read = ReadInPlace(graph, id, 64);
  return read ? std::string() : read.error();
}

TEST_CASE("heads permuted back to rows are a 3-D map whose last axis splits at the head dim", "[graph][in_place]") {
  auto p = Build(R"(def main =
  let o = (random [32, 256, 128] 1 : bf16[32, 256, 128]) in
  let w = (random [4096, 512] 2 : bf16[4096, 512]) in
  save "y.npy" (reshape [256, 4096] (permute [1, 0, 2] o) @ w)
)");
  NodeId a = Operand(p->graph, 0);
  auto read = ReadInPlace(p->graph, a, 64);
  REQUIRE(read);
  CHECK(p->graph.Get(read->root).kind == Kind::Random);  // the data the views read
  CHECK(read->inner == std::vector<std::vector<std::int64_t>>{{}, {128}});
  REQUIRE(read->layout.axes.size() == 2);
  CHECK(read->layout.axes[1].modes.size() == 2);
  CHECK(read->layout.axes[1].modes[0].stride == core::Dim::Constant(256 * 128));
  // A box of 256 columns would straddle a head.
  auto wide = ReadInPlace(p->graph, a, 256);
  REQUIRE_FALSE(wide);
  CHECK(wide.error().find("not a multiple of the box's 256") != std::string::npos);
}

TEST_CASE("slices are 2-D maps with a pitch and an offset, when both are 16-byte aligned", "[graph][in_place]") {
  auto p = Build(R"(def main =
  let x = (random [256, 512] 1 : bf16[256, 512]) in
  let w = (random [512, 256] 2 : bf16[512, 256]) in
  let _ = save "a.npy" (x[:, 128:448] @ w[128:448, :]) in
  save "b.npy" (x[:, 3:67] @ w[0:64, :])
)");
  std::vector<NodeId> operands = Operands(p->graph);
  REQUIRE(operands.size() == 4);
  auto a = ReadInPlace(p->graph, operands[0], 64);
  REQUIRE(a);
  CHECK(a->layout.offset == core::Dim::Constant(128));
  CHECK(a->layout.axes[0].modes[0].stride == core::Dim::Constant(512));
  CHECK(a->inner == std::vector<std::vector<std::int64_t>>{{}, {}});
  CHECK(Why(p->graph, operands[1]).empty());
  CHECK(Why(p->graph, operands[2]) == "its offset of 3 elements is not a multiple of 16 bytes");
}

TEST_CASE("views no map takes say why", "[graph][in_place]") {
  auto p = Build(R"(def main =
  let x = (random [256, 512] 1 : bf16[256, 512]) in
  let y = (random [255, 512] 2 : bf16[255, 512]) in
  let w = (random [256, 256] 3 : bf16[256, 256]) in
  let _ = save "t.npy" (transpose x[:, 0:256] @ w) in
  save "p.npy" (y[0:255, 0:255] @ w[0:255, :])
)");
  std::vector<NodeId> operands = Operands(p->graph);
  REQUIRE(operands.size() == 4);
  // A transposed slice: its columns are a row apart (and its rows a column).
  CHECK(Why(p->graph, operands[0]) == "its last axis is not contiguous (stride 512)");
  // w[0:255, :] is fine; y's rows of 512 are aligned, its 255 columns need no alignment.
  CHECK(Why(p->graph, operands[2]).empty());
  CHECK(Why(p->graph, operands[3]).empty());
}

TEST_CASE(
    "a stride over sizes is aligned where a `where` fact proves it (the solver), refuted where one "
    "refutes it, else checked at run time",
    "[graph][in_place]") {
  auto p = Build(R"(def rows (x: bf16[s, k]) (w: bf16[64, 256]) where k % 8 == 0, k >= 128 = x[:, 64:128] @ w
def plain (x: bf16[s, k]) (w: bf16[64, 256]) where k >= 128 = x[:, 64:128] @ w
def odd (x: bf16[s, k]) (w: bf16[64, 256]) where k % 8 == 4, k >= 128 = x[:, 64:128] @ w
def main =
  let w = (random [64, 256] 1 : bf16[64, 256]) in
  let _ = save "y.npy" (rows (load "x.npy" : bf16[s, k]) w) in
  let _ = save "o.npy" (odd (load "x3.npy" : bf16[u, i]) w) in
  save "z.npy" (plain (load "x2.npy" : bf16[t, j]) w)
)");
  std::vector<NodeId> slices;
  for (const Node& n : p->graph.nodes)
    if (n.kind == Kind::MatMul) slices.push_back(n.args.at(0));
  REQUIRE(slices.size() == 3);
  // k % 8 == 0: a row of k bf16 is a multiple of 16 bytes, proved; nothing left for run time.
  auto proved = ReadInPlace(p->graph, slices[0], 64);
  REQUIRE(proved);
  CHECK(proved->when.empty());
  // k % 8 == 4: never.
  CHECK(Why(p->graph, slices[1]) == "its axis 0's stride is never a multiple of 16 bytes");
  // Nothing known of j: read in place where j % 8 == 0 holds at run time.
  auto run_time = ReadInPlace(p->graph, slices[2], 64);
  REQUIRE(run_time);
  REQUIRE(run_time->when.size() == 1);
  const core::DimFact& fact = run_time->when[0];
  CHECK(fact.relation == core::RelOp::kEq);
  CHECK(fact.rhs == core::Dim::Constant(0));
  REQUIRE(fact.lhs.Vars().size() == 1);
  CHECK(fact.lhs == *core::Mod(core::Dim::Var(fact.lhs.Vars().front()), 8));
}

TEST_CASE("on sm_90a a product's operand views join its group instead of copies", "[graph][in_place]") {
  auto p = Build(R"(def main =
  let o = (random [4, 256, 128] 1 : bf16[4, 256, 128]) in
  let w = (random [512, 256] 2 : bf16[512, 256]) in
  save "y.npy" (reshape [256, 512] (permute [1, 0, 2] o) @ w)
)");
  FuseOptions options;
  options.views_in_place = true;
  Plan plan = Fuse(p->graph, options);
  std::size_t gemms = 0, copies = 0;
  for (const Group& g : plan.groups) {
    if (g.kind == GroupKind::Gemm) {
      ++gemms;
      CHECK(g.kernel == "gemm_bf16_bf16");
      REQUIRE(g.in_place.size() == 1);
      CHECK(g.in_place[0].view == Operand(p->graph, 0));
    }
    copies += g.why.find("a copy") == 0 ? 1 : 0;
  }
  CHECK(gemms == 1);
  CHECK(copies == 0);
  // Without it (sm_80) the view is a copy of its own, which says it would be read in place on sm_90a.
  Plan copied = Fuse(p->graph);
  std::size_t said = 0;
  for (const Group& g : copied.groups) {
    CHECK(g.in_place.empty());
    said += g.why.find("read in place on sm_90a") != std::string::npos ? 1 : 0;
  }
  CHECK(said == 1);
}

TEST_CASE("a product read through heads stores heads-major: the view is row-major over it", "[graph][stored]") {
  auto p = Build(R"(def main =
  let x = (random [256, 512] 1 : bf16[256, 512]) in
  let w = (random [512, 512] 2 : bf16[512, 512]) in
  let b = (random [2, 128, 512] 3 : bf16[2, 128, 512]) in
  let _ = save "q.npy" (permute [1, 0, 2] (reshape [256, 4, 128] (x @ w))) in
  let _ = save "qb.npy" (permute [0, 2, 1, 3] (reshape [2, 128, 4, 128] (b @ w))) in
  let _ = save "t.npy" (transpose (x @ w)) in
  save "s.npy" ((x @ w)[:, 0:256])
)");
  std::vector<NodeId> tops;  // the last view of each saved chain
  for (const Node& n : p->graph.nodes)
    if (n.kind == Kind::Save) tops.push_back(n.args.at(1));
  REQUIRE(tops.size() == 4);
  auto heads = StoreLayout(p->graph, tops[0]);
  REQUIRE(heads);
  CHECK(p->graph.Get(heads->root).kind == Kind::MatMul);
  CHECK(core::ToString(heads->layout) == "(256, (4, 128)):(128, (32768, 1))");
  CHECK(heads->inner == std::vector<std::vector<std::int64_t>>{{}, {128}});
  CHECK(heads->order == std::vector<int>{1, 0, 2});  // heads, rows, within a head
  // Rows of two modes (b, s) over the kernel's [m, n].
  auto batched = StoreLayout(p->graph, tops[1]);
  REQUIRE(batched);
  CHECK(core::ToString(batched->flat) == "((2, 128), (4, 128)):((65536, 128), (16384, 1))");
  CHECK(batched->inner == std::vector<std::vector<std::int64_t>>{{128}, {128}});
  CHECK(batched->order == std::vector<int>{0, 2, 1, 3});
  // A transpose's rows would be columns: no contiguous run; a slice is not undone.
  auto transposed = StoreLayout(p->graph, tops[2]);
  REQUIRE_FALSE(transposed);
  CHECK(transposed.error().find("contiguous") != std::string::npos);
  auto slice = StoreLayout(p->graph, tops[3]);
  REQUIRE_FALSE(slice);
  CHECK(slice.error().find("`index` view") != std::string::npos);
}

TEST_CASE("at run-time sizes a product stores heads-major where the modes inside each axis are constants",
          "[graph][stored]") {
  auto p = Build(R"(def main =
  let x = (load "x.npy" : bf16[s, 512]) in
  let b = (load "b.npy" : bf16[n, s, 512]) in
  let w = (random [512, 512] 2 : bf16[512, 512]) in
  let _ = save "q.npy" (permute [1, 0, 2] (reshape [s, 4, 128] (x @ w))) in
  save "qb.npy" (permute [0, 2, 1, 3] (reshape [n, s, 4, 128] (b @ w)))
)");
  std::vector<NodeId> tops;
  for (const Node& n : p->graph.nodes)
    if (n.kind == Kind::Save) tops.push_back(n.args.at(1));
  REQUIRE(tops.size() == 2);
  // (s, (4, 128)):(128, (128 s, 1)): dense for every s, the heads' stride a dim over s.
  auto heads = StoreLayout(p->graph, tops[0]);
  REQUIRE(heads);
  CHECK(heads->inner == std::vector<std::vector<std::int64_t>>{{}, {128}});
  CHECK(heads->order == std::vector<int>{1, 0, 2});
  const core::StridedView& l = heads->layout;
  REQUIRE(l.axes.size() == 2);
  REQUIRE(l.axes[1].modes.size() == 2);
  CHECK_FALSE(l.axes[1].modes[0].stride.AsConstant());
  CHECK(l.axes[1].modes[0].stride == *core::Mul(l.axes[0].modes[0].extent, core::Dim::Constant(128)));
  CHECK(l.axes[0].modes[0].stride == core::Dim::Constant(128));
  // Rows of two modes (n, s) over [m, n]: the kernel would split a row index by s, a run-time size.
  auto batched = StoreLayout(p->graph, tops[1]);
  REQUIRE_FALSE(batched);
  CHECK(batched.error().find("not a constant") != std::string::npos);
}

TEST_CASE("projections at run-time sizes read by attention store heads-major, and the attention stores rows",
          "[graph][stored]") {
  auto p = Build(R"(import nn
def heads (t: bf16[s, 512]) = permute [1, 0, 2] (reshape [s, 4, 128] t)
def main =
  let x = (load "x.npy" : bf16[s, 512]) in
  let w = (random [512, 512] 2 : bf16[512, 512]) in
  let o = causal_attention (heads (x @ transpose w)) (heads (x @ transpose w)) (heads (x @ transpose w)) in
  save "y.npy" (reshape [s, 512] (permute [1, 0, 2] o) @ transpose w)
)");
  // sm_80 (no view read in place): without stores each of the four views would be a copy.
  std::size_t stored = 0, copies = 0, alternative = 0;
  for (const Group& g : p->plan.groups) {
    stored += g.stored ? 1 : 0;
    copies += g.why.find("a copy") == 0 ? 1 : 0;
    alternative += g.alternative.empty() ? 0 : 1;
  }
  CHECK(stored == 4);  // three projections and the attention's last part
  CHECK(copies == 0);
  CHECK(alternative == 1);
  for (const ViewChoice& c : p->plan.views.views) {
    CHECK(c.stored);
    CHECK_FALSE(c.copied);
  }
}

}  // namespace
}  // namespace weft::graph
