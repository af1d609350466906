// LayoutOf: see layout.h.
#include "graph/layout.h"

#include <string>

namespace weft::graph {

core::ViewResult LayoutOf(const Graph& graph, NodeId id) {
  const Node& n = graph.Get(id);
  if (n.kind != Kind::View) return core::RowMajor(n.shape);
  core::ViewResult base = LayoutOf(graph, n.args.at(0));
  if (!base) return base;
  if (n.fn == "transpose") return core::Transpose(*base);
  if (n.fn == "permute") return core::Permute(*base, n.permutation);
  if (n.fn == "reshape") return core::Reshape(*base, n.shape);
  if (n.fn == "expand") return core::Expand(*base, static_cast<int>(base->rank()));
  if (n.fn == "broadcast") return core::Broadcast(*base, n.shape);
  if (n.fn == "index") {
    // Items apply to the leading axes in order; an At drops its axis, so later items move down.
    core::StridedView view = *base;
    int axis = 0;
    for (const IndexItem& item : n.index) {
      core::ViewResult next = view;
      if (item.what == IndexItem::What::At) {
        const Node& at = graph.Get(n.args.at(item.at));
        if (at.kind != Kind::Constant) return std::string("an element chosen at run time");
        next = core::At(view, axis, core::Dim::Constant(static_cast<std::int64_t>(at.bits)));
      } else if (item.what == IndexItem::What::Slice) {
        next = core::Slice(view, axis, item.lo, item.hi);
        ++axis;
      } else {
        ++axis;
      }
      if (!next) return next;
      view = *next;
    }
    return view;
  }
  return "a view `" + n.fn + "` of no known layout";
}

}  // namespace weft::graph
