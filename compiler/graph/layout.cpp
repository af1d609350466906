// LayoutOf: see layout.h.
#include "graph/layout.h"

#include <algorithm>
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

namespace {

// Whether `bytes` (a dim) is a multiple of 16, by its normal form.
bool Aligned16(const core::Dim& elements, std::int64_t element_bytes) {
  auto bytes = core::Mul(elements, core::Dim::Constant(element_bytes));
  return bytes && core::DivExact(*bytes, 16).has_value();
}

}  // namespace

weft::Result<InPlaceRead, std::string> ReadInPlace(const Graph& graph, NodeId id, std::int64_t box_cols) {
  core::ViewResult layout = LayoutOf(graph, id);
  if (!layout) return "it has no strided layout (" + layout.error() + ")";
  NodeId root = id;
  while (graph.Get(root).kind == Kind::View) root = graph.Get(root).args.at(0);
  const std::int64_t e = (weft::Bits(graph.Get(id).dtype) + 7) / 8;
  InPlaceRead read{root, *layout, {}};
  std::vector<core::StridedAxis>& axes = read.layout.axes;
  const std::size_t rank = axes.size();
  if (rank < 2) return std::string("it is of rank ") + std::to_string(rank) + ", and a TMA map needs 2 or more";
  const core::Dim aligned = core::Dim::Constant(16 / std::min<std::int64_t>(e, 16));
  for (std::size_t a = 0; a < rank; ++a) {
    std::vector<core::StridedMode>& modes = axes[a].modes;
    if (a + 1 < rank && modes.size() != 1)
      return "its axis " + std::to_string(a) + " has " + std::to_string(modes.size()) +
             " modes, and only the last axis may have several";
    for (std::size_t m = 0; m < modes.size(); ++m) {
      core::StridedMode& mode = modes[m];
      const bool contiguous = a + 1 == rank && m + 1 == modes.size();
      if (mode.extent == core::Dim::Constant(1)) mode.stride = contiguous ? core::Dim::Constant(1) : aligned;
      if (contiguous) {
        if (!(mode.stride == core::Dim::Constant(1)))
          return "its last axis is not contiguous (stride " + core::ToString(mode.stride) + ")";
        continue;
      }
      if (mode.stride.IsZero()) return "it repeats elements along axis " + std::to_string(a) + " (stride 0)";
      if (!Aligned16(mode.stride, e))
        return "its axis " + std::to_string(a) + "'s stride of " + core::ToString(mode.stride) +
               " elements is not a multiple of 16 bytes";
    }
  }
  const std::vector<core::StridedMode>& last = axes.back().modes;
  for (std::size_t m = 1; m < last.size(); ++m) {
    std::optional<std::int64_t> extent = last[m].extent.AsConstant();
    if (!extent) return "its last axis's mode of " + core::ToString(last[m].extent) + " elements is not a constant";
    read.inner.push_back(*extent);
  }
  if (!read.inner.empty() && read.inner.back() % box_cols != 0)
    return "its last axis's innermost mode of " + std::to_string(read.inner.back()) +
           " elements is not a multiple of the box's " + std::to_string(box_cols);
  if (rank + last.size() - 1 > 5)
    return "its map would have " + std::to_string(rank + last.size() - 1) + " dims, and TMA takes at most 5";
  if (!Aligned16(read.layout.offset, e))
    return "its offset of " + core::ToString(read.layout.offset) + " elements is not a multiple of 16 bytes";
  return read;
}

}  // namespace weft::graph
