// The graph takes its views' layouts from the checker (graph::Node::layout, docs/graph.md, "Layouts
// of views"): a view made from an expression has the layout of that expression's type, with the
// inlined calls' sizes and argument layouts substituted; LayoutOf gives it, and the plan's stored
// layouts alone make LayoutOf apply the view's steps again.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "graph/layout.h"
#include "program.h"

namespace weft::graph {
namespace {

using testing::Build;

std::vector<NodeId> Views(const Graph& graph) {
  std::vector<NodeId> out;
  for (std::size_t i = 0; i < graph.nodes.size(); ++i)
    if (graph.nodes[i].kind == Kind::View) out.push_back(NodeId(static_cast<std::uint32_t>(i)));
  return out;
}

std::string Text(const core::ViewResult& layout) {
  return layout ? core::ToString(*layout) : "not strided: " + layout.error();
}

TEST_CASE("views inside an inlined definition take the checker's layout with its variable substituted",
          "[graph][layout]") {
  auto p = Build(R"(def heads (x: f32[b, s, d]) where d % 4 == 0 =
  let y = reshape [b, s, 4, d / 4] x in
  permute [0, 2, 1, 3] y
def main =
  let q = heads (random [2, 3, 16] 1 : f32[2, 3, 16]) in
  let t = heads (transpose (random [2, 16, 3] 2 : f32[2, 16, 3])) in
  (sum q, sum t)
)");
  std::vector<NodeId> views = Views(p->graph);
  // reshape and permute of the first call; transpose, reshape and permute of the second.
  REQUIRE(views.size() == 5);
  for (NodeId v : views) {
    INFO("view " << v.index << " `" << p->graph.Get(v).fn << "`");
    REQUIRE(p->graph.Get(v).layout.has_value());
    CHECK(Text(LayoutOf(p->graph, v)) == Text(*p->graph.Get(v).layout));
  }
  CHECK(Text(*p->graph.Get(views[1]).layout) == "(2, 4, 3, 4):(48, 4, 16, 1)");
  // Over the transposed argument, the callee's `permute [..] (reshape [..] 'l1)` with 'l1 the
  // argument's layout (2, 3, 16):(48, 1, 3).
  CHECK(Text(*p->graph.Get(views[2]).layout) == "(2, 3, 16):(48, 1, 3)");
  CHECK(Text(*p->graph.Get(views[4]).layout) == "(2, 4, 3, 4):(48, 12, 1, 3)");
}

TEST_CASE("an element a parameter chooses: the checker says not strided, the inlined call's steps may know it",
          "[graph][layout]") {
  auto p = Build(R"(def pick (x: f32[n, m]) (i: i64) = x[i]
def main =
  let x = (random [4, 6] 1 : f32[4, 6]) in
  sum (pick x 2) + sum (x[1:3, :][1])
)");
  std::vector<NodeId> views = Views(p->graph);
  REQUIRE(views.size() == 3);
  // `x[i]` in `pick` is not strided for every call: the node takes its steps' layout, row 2.
  CHECK_FALSE(p->graph.Get(views[0]).layout.has_value());
  CHECK(Text(LayoutOf(p->graph, views[0])) == "(6):(1) + 12");
  // Constant indices in `main`: the checker's.
  REQUIRE(p->graph.Get(views[2]).layout.has_value());
  CHECK(Text(*p->graph.Get(views[2]).layout) == "(6):(1) + 12");
}

TEST_CASE("a broadcast's read is the graph's own view, evaluated by its steps", "[graph][layout]") {
  auto p = Build(R"(def main =
  let x = (random [4, 6] 1 : f32[4, 6]) in
  let b = (random [6] 2 : f32[6]) in
  sum (map (fn u -> 2.0) x) + sum b
)");
  for (NodeId v : Views(p->graph)) {
    const Node& n = p->graph.Get(v);
    if (n.fn != "broadcast") continue;
    CHECK_FALSE(n.layout.has_value());
    CHECK(LayoutOf(p->graph, v).ok());
  }
}

}  // namespace
}  // namespace weft::graph
