// LayoutOf: see layout.h.
#include "graph/layout.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "core/array_layout.h"
#include "solver/solver.h"

namespace weft::graph {

namespace {

// The view step node `n` takes (core/array_layout.h): the checker's layout types apply the same
// steps with the same function, core::ApplyView, so a view has one layout in both.
std::optional<core::ViewStep> StepOf(const Graph& graph, const Node& n) {
  using Op = core::ViewStep::Op;
  if (n.fn == "transpose") return core::ViewStep{Op::Transpose, {}, {}, {}};
  if (n.fn == "permute") return core::ViewStep{Op::Permute, n.permutation, {}, {}};
  if (n.fn == "reshape") return core::ViewStep{Op::Reshape, {}, n.shape, {}};
  if (n.fn == "expand") return core::ViewStep{Op::Expand, {}, {}, {}};
  if (n.fn == "broadcast") return core::ViewStep{Op::Broadcast, {}, n.shape, {}};
  if (n.fn != "index") return std::nullopt;
  core::ViewStep step{Op::Index, {}, {}, {}};
  for (const IndexItem& item : n.index) {
    using Item = core::ViewIndexItem::Kind;
    if (item.what == IndexItem::What::At) {
      // An element chosen at run time (not a constant) has no strided layout.
      const Node& at = graph.Get(n.args.at(item.at));
      std::optional<core::Dim> index;
      if (at.kind == Kind::Constant) index = core::Dim::Constant(static_cast<std::int64_t>(at.bits));
      step.items.push_back({Item::At, index, std::nullopt});
    } else if (item.what == IndexItem::What::Slice) {
      step.items.push_back({Item::Slice, item.lo, item.hi});
    } else {
      step.items.push_back({Item::All, std::nullopt, std::nullopt});
    }
  }
  return step;
}

}  // namespace

namespace {

// The node that holds the data under `id`: the first down its chain of views that is not a view.
NodeId DataUnder(const Graph& graph, NodeId id) {
  while (graph.Get(id).kind == Kind::View) id = graph.Get(id).args.at(0);
  return id;
}

// The layout a plan has node `id` (not a view) stored in, if it chose one (Group::stored).
const core::StridedView* StoredLayout(const Plan* plan, NodeId id) {
  if (!plan || id.index >= plan->group_of.size() || plan->group_of[id.index] < 0) return nullptr;
  const Group& group = plan->groups[static_cast<std::size_t>(plan->group_of[id.index])];
  return group.stored && group.stored->root == id ? &group.stored->layout : nullptr;
}

core::ViewResult LayoutOf(const Graph& graph, const Plan* plan, NodeId id) {
  const Node& n = graph.Get(id);
  if (n.kind != Kind::View) {
    if (const core::StridedView* stored = StoredLayout(plan, id)) return *stored;
    return core::RowMajor(n.shape);
  }
  // The checker's layout, unless the data under the view is stored in a layout the plan chose
  // (after checking): then the view's steps are applied to that, by the checker's function.
  if (n.layout && (!plan || !StoredLayout(plan, DataUnder(graph, id)))) return *n.layout;
  core::ViewResult base = LayoutOf(graph, plan, n.args.at(0));
  if (!base) return base;
  std::optional<core::ViewStep> step = StepOf(graph, n);
  if (!step) return "a view `" + n.fn + "` of no known layout";
  return core::ApplyView(*step, *base);
}

// A dim's value with every size taken as 4096 (as fusion's cost model does): for ordering strides
// of a dense layout, whose order does not depend on the sizes.
std::optional<std::int64_t> Guess(const core::Dim& d) {
  auto v = core::Evaluate(d, [](core::SizeVarId) { return std::int64_t{4096}; });
  return v ? std::optional<std::int64_t>(*v) : std::nullopt;
}

}  // namespace

core::ViewResult LayoutOf(const Graph& graph, NodeId id) {
  return LayoutOf(graph, nullptr, id);
}

core::ViewResult LayoutOf(const Graph& graph, const Plan& plan, NodeId id) {
  return LayoutOf(graph, &plan, id);
}

weft::Result<StoredOut, std::string> StoreLayout(const Graph& graph, NodeId id, bool flatten) {
  std::vector<NodeId> chain;
  NodeId root = id;
  for (; graph.Get(root).kind == Kind::View; root = graph.Get(root).args.at(0)) chain.push_back(root);
  if (chain.empty()) return std::string("it is not a view");
  core::ViewResult layout = core::RowMajor(graph.Get(id).shape);
  for (NodeId v : chain) {
    const Node& n = graph.Get(v);
    const Node& below = graph.Get(n.args.at(0));
    if (n.fn == "permute") {
      std::vector<int> inverse(n.permutation.size());
      for (std::size_t k = 0; k < n.permutation.size(); ++k)
        inverse.at(static_cast<std::size_t>(n.permutation[k])) = static_cast<int>(k);
      layout = core::Permute(*layout, inverse);
    } else if (n.fn == "transpose") {
      layout = core::Transpose(*layout);
    } else if (n.fn == "reshape") {
      layout = core::Reshape(*layout, below.shape);
    } else {
      return "a `" + n.fn + "` view, which no layout of the stored data undoes";
    }
    if (!layout) return "its steps do not invert: " + layout.error();
  }
  // The view over the data in that layout is row-major (the steps applied forward again).
  core::ViewResult forward = layout;
  for (std::size_t i = chain.size(); i-- > 0 && forward;) {
    std::optional<core::ViewStep> step = StepOf(graph, graph.Get(chain[i]));
    if (!step) return std::string("a view of no known layout");
    forward = core::ApplyView(*step, *forward);
  }
  if (!forward || !core::IsRowMajor(*forward)) return std::string("the view is not row-major over the stored data");
  const Node& data = graph.Get(root);
  if (data.shape.size() < 2) return std::string("the stored value is of rank ") + std::to_string(data.shape.size());
  StoredOut out{id, root, *layout, *layout, {}, {}};
  if (flatten && data.shape.size() > 2) {
    core::Dim rows = core::Dim::Constant(1);
    for (std::size_t a = 0; a + 1 < data.shape.size(); ++a) rows = *core::Mul(rows, data.shape[a]);
    core::ViewResult flat = core::Reshape(*layout, {rows, data.shape.back()});
    if (!flat) return "its rows do not flatten: " + flat.error();
    out.flat = *flat;
  }
  if (!out.flat.offset.IsZero()) return std::string("the stored layout has an offset");
  const std::int64_t e = (weft::Bits(data.dtype) + 7) / 8;
  // Each mode: its number across the axes, its stride and extent, and the stride guessed (sizes
  // taken as 4096) to order the modes; the order is then checked on the dims themselves, so that
  // sizes known only at run time (the tokens of `[s, 4096]`) store densely whatever they are.
  struct Mode {
    int number;
    core::Dim stride, extent;
    std::int64_t guess;
  };
  std::vector<Mode> modes;
  out.inner.resize(out.flat.axes.size());
  for (std::size_t a = 0; a < out.flat.axes.size(); ++a) {
    const std::vector<core::StridedMode>& ms = out.flat.axes[a].modes;
    for (std::size_t m = 0; m < ms.size(); ++m) {
      if (m > 0) {
        std::optional<std::int64_t> extent = ms[m].extent.AsConstant();
        if (!extent) return "its axis " + std::to_string(a) + " has a mode whose extent is not a constant";
        out.inner[a].push_back(*extent);
      }
      std::optional<std::int64_t> stride = Guess(ms[m].stride);
      if (!stride) return std::string("a stride it cannot evaluate");
      modes.push_back({static_cast<int>(modes.size()), ms[m].stride, ms[m].extent, *stride});
    }
  }
  const core::StridedMode& innermost = out.flat.axes.back().modes.back();
  std::optional<std::int64_t> run = innermost.extent.AsConstant();
  if (!(innermost.stride == core::Dim::Constant(1)) || !run || (*run * e) % 16 != 0)
    return std::string("its last axis's innermost mode is not a contiguous run of a multiple of 16 bytes");
  // Dense in some order of the modes: sorted by stride, each the product of the extents inside it.
  std::stable_sort(modes.begin(), modes.end(), [](const Mode& x, const Mode& y) { return x.guess > y.guess; });
  core::Dim dense = core::Dim::Constant(1);
  for (std::size_t i = modes.size(); i-- > 0;) {
    if (!(modes[i].extent == core::Dim::Constant(1)) && !(modes[i].stride == dense))
      return std::string("the stored layout is not dense");
    auto outer = core::Mul(dense, modes[i].extent);
    if (!outer) return std::string("the stored layout's size does not multiply out");
    dense = *outer;
  }
  for (const Mode& m : modes) out.order.push_back(m.number);
  return out;
}

namespace {

// Facts proved by the solver under `facts` (the program's run-time checks made before a view is
// read: the `where` facts of the definitions it calls, say `k % 8 == 0`); nothing without facts.
core::ProveFact SolverProver(const std::vector<solver::Fact>& facts) {
  if (facts.empty()) return {};
  return [facts](const core::DimFact& goal) -> std::optional<bool> {
    static thread_local solver::Solver prover;
    switch (prover.Prove(facts, {goal.lhs, goal.relation, goal.rhs}).verdict) {
      case solver::Verdict::kProved:
        return true;
      case solver::Verdict::kRefuted:
        return false;
      default:
        return std::nullopt;
    }
  };
}

}  // namespace

std::size_t MapDims(const InPlaceRead& read) {
  std::size_t dims = 0;
  for (const core::StridedAxis& axis : read.layout.axes) dims += axis.modes.size();
  return dims;
}

std::int64_t TmaBoxColumns(Dtype dtype) {
  return 128 / ((weft::Bits(dtype) + 7) / 8);
}

namespace {

// The program's run-time checks made before node `id` (the `where` facts of the definitions it
// calls), as the solver takes them.
std::vector<solver::Fact> FactsBefore(const Graph& graph, NodeId id) {
  std::vector<solver::Fact> facts;
  for (const Check& check : graph.checks)
    if (check.before <= id.index) facts.push_back({{check.fact.lhs, check.fact.relation, check.fact.rhs}, check.what});
  return facts;
}

}  // namespace

weft::Result<DenseRead, std::string> ReadDense(const Graph& graph, NodeId id) {
  core::ViewResult layout = LayoutOf(graph, id);
  if (!layout) return "it has no strided layout (" + layout.error() + ")";
  const NodeId root = DataUnder(graph, id);
  weft::Result<core::RowRead, std::string> read =
      core::AdmitsRow(*layout, (weft::Bits(graph.Get(id).dtype) + 7) / 8, SolverProver(FactsBefore(graph, id)));
  if (!read) return read.error();
  DenseRead out{id, root, read->offset, {}};
  if (read->when) out.when.push_back(*read->when);
  return out;
}

weft::Result<InPlaceRead, std::string> ReadInPlace(const Graph& graph, NodeId id, std::int64_t box_cols) {
  core::ViewResult layout = LayoutOf(graph, id);
  if (!layout) return "it has no strided layout (" + layout.error() + ")";
  weft::Result<core::TmaRead, std::string> read = core::AdmitsTma(*layout, (weft::Bits(graph.Get(id).dtype) + 7) / 8,
                                                                  box_cols, SolverProver(FactsBefore(graph, id)));
  if (!read) return read.error();
  return InPlaceRead{id, DataUnder(graph, id), std::move(read->layout), std::move(read->inner), std::move(read->when)};
}

}  // namespace weft::graph
