// Layouts in types: see array_layout.h.
#include "core/array_layout.h"

#include <algorithm>
#include <memory>

#include "base/overloaded.h"

namespace weft::core {

namespace {

LayoutRef Make(Layout::Row row) {
  return std::make_shared<const Layout>(Layout{std::move(row)});
}

bool SameShape(const Shape& a, const Shape& b) {
  return a.before == b.before && a.spread == b.spread && a.after == b.after;
}

ViewResult ApplyIndex(const StridedView& base, const std::vector<ViewIndexItem>& items) {
  // Items apply to the leading axes in order; an At drops its axis, so later items move down.
  StridedView view = base;
  int axis = 0;
  for (const ViewIndexItem& item : items) {
    ViewResult next = view;
    if (item.kind == ViewIndexItem::Kind::At) {
      if (!item.lo) return std::string("an element chosen at run time");
      next = At(view, axis, *item.lo);
    } else if (item.kind == ViewIndexItem::Kind::Slice) {
      bool inside = axis < static_cast<int>(view.rank());  // else Slice says which axis is missing
      Dim hi = item.hi ? *item.hi : inside ? view.axes[static_cast<std::size_t>(axis)].Extent() : Dim();
      next = Slice(view, axis, item.lo.value_or(Dim()), hi);
      ++axis;
    } else {
      ++axis;
    }
    if (!next) return next;
    view = *next;
  }
  return view;
}

}  // namespace

ViewResult ApplyView(const ViewStep& step, const StridedView& base) {
  switch (step.op) {
    case ViewStep::Op::Transpose:
      return Transpose(base);
    case ViewStep::Op::Permute:
      return Permute(base, step.order);
    case ViewStep::Op::Reshape:
      return Reshape(base, step.shape);
    case ViewStep::Op::Expand:
      return Expand(base, static_cast<int>(base.rank()));
    case ViewStep::Op::Index:
      return ApplyIndex(base, step.items);
    case ViewStep::Op::Broadcast:
      return Broadcast(base, step.shape);
  }
  return std::string("an unknown view");
}

LayoutRef RowLayout(const Shape& shape) {
  if (shape.Known()) return KnownLayout(RowMajor(shape.before));
  return Make(Layout::Row{shape});
}

LayoutRef Detached(const LayoutRef& layout, const Shape& shape) {
  return layout ? layout : RowLayout(shape);
}

LayoutRef VarLayout(LayoutVarId var) {
  return std::make_shared<const Layout>(Layout{Layout::Var{var}});
}

LayoutRef KnownLayout(const ViewResult& view) {
  if (view) return std::make_shared<const Layout>(Layout{*view});
  return std::make_shared<const Layout>(Layout{Layout::NotStrided{view.error()}});
}

LayoutRef ApplyView(const ViewStep& step, const LayoutRef& base) {
  if (step.op == ViewStep::Op::Index) {
    // An element chosen at run time moves the offset by a value no layout has (as the graph says).
    for (const ViewIndexItem& item : step.items) {
      if (item.kind == ViewIndexItem::Kind::At && !item.lo)
        return KnownLayout(ViewResult(std::string("an element chosen at run time")));
    }
  }
  if (!base) return nullptr;
  if (const auto* known = std::get_if<StridedView>(&base->node)) return KnownLayout(ApplyView(step, *known));
  if (std::holds_alternative<Layout::NotStrided>(base->node)) return base;  // a view of it is not strided either
  return std::make_shared<const Layout>(Layout{Layout::View{step, base}});
}

bool IsKnown(const LayoutRef& layout) {
  if (!layout) return true;
  return std::holds_alternative<StridedView>(layout->node) || std::holds_alternative<Layout::NotStrided>(layout->node);
}

bool SameLayout(const LayoutRef& a, const LayoutRef& b) {
  if (a == b) return true;
  if (!a || !b || a->node.index() != b->node.index()) return false;
  return std::visit(Overloaded{
                        [&](const Layout::Row& x) { return SameShape(x.shape, std::get<Layout::Row>(b->node).shape); },
                        [&](const Layout::Var& x) { return x.var == std::get<Layout::Var>(b->node).var; },
                        [&](const StridedView& x) { return x == std::get<StridedView>(b->node); },
                        [&](const Layout::View& x) {
                          const auto& y = std::get<Layout::View>(b->node);
                          return x.step == y.step && SameLayout(x.base, y.base);
                        },
                        [&](const Layout::NotStrided& x) { return x.why == std::get<Layout::NotStrided>(b->node).why; },
                    },
                    a->node);
}

LayoutRef MapLayout(const LayoutRef& layout, const LayoutMap& map) {
  if (!layout) return layout;
  auto dim = [&](const Dim& d) { return map.dim ? map.dim(d) : d; };
  auto dims = [&](std::vector<Dim> ds) {
    for (Dim& d : ds) d = dim(d);
    return ds;
  };
  return std::visit(Overloaded{
                        [&](const Layout::Row& row) { return map.shape ? RowLayout(map.shape(row.shape)) : layout; },
                        [&](const Layout::Var& var) {
                          LayoutRef to = map.var ? map.var(var.var) : nullptr;
                          return to ? to : layout;
                        },
                        [&](const StridedView& view) {
                          if (!map.dim) return layout;
                          StridedView out{dim(view.offset), view.axes};
                          for (StridedAxis& axis : out.axes) {
                            for (StridedMode& mode : axis.modes) mode = {dim(mode.extent), dim(mode.stride)};
                          }
                          return std::make_shared<const Layout>(Layout{std::move(out)});
                        },
                        [&](const Layout::View& view) {
                          ViewStep step = view.step;
                          step.shape = dims(step.shape);
                          for (ViewIndexItem& item : step.items) {
                            if (item.lo) item.lo = dim(*item.lo);
                            if (item.hi) item.hi = dim(*item.hi);
                          }
                          return ApplyView(step, MapLayout(view.base, map));
                        },
                        [&](const Layout::NotStrided&) { return layout; },
                    },
                    layout->node);
}

void CollectLayoutVars(const LayoutRef& layout, std::vector<LayoutVarId>& out) {
  if (!layout) return;
  if (const auto* var = std::get_if<Layout::Var>(&layout->node)) {
    if (std::find(out.begin(), out.end(), var->var) == out.end()) out.push_back(var->var);
  } else if (const auto* view = std::get_if<Layout::View>(&layout->node)) {
    CollectLayoutVars(view->base, out);
  }
}

std::string ToString(const LayoutRef& layout, const SizeVarNames& sizes, const LayoutVarNames& vars) {
  if (!layout) return "row";
  auto list = [&](const std::vector<Dim>& ds) {
    std::string s = "[";
    for (std::size_t k = 0; k < ds.size(); ++k) s += (k ? ", " : "") + ToString(ds[k], sizes);
    return s + "]";
  };
  // An operand of a view: in parentheses unless it is one word.
  auto operand = [&](const LayoutRef& base) {
    std::string text = ToString(base, sizes, vars);
    bool word = std::holds_alternative<Layout::Var>(base->node) || std::holds_alternative<Layout::Row>(base->node);
    return word ? text : "(" + text + ")";
  };
  return std::visit(
      Overloaded{
          [&](const Layout::Row&) { return std::string("row"); },
          [&](const Layout::Var& var) { return vars ? vars(var.var) : "'l" + std::to_string(var.var.index); },
          [&](const StridedView& view) { return IsRowMajor(view) ? std::string("row") : ToString(view, sizes); },
          [&](const Layout::NotStrided& n) { return "(not strided: " + WithSizeNames(n.why, sizes) + ")"; },
          [&](const Layout::View& view) {
            const ViewStep& step = view.step;
            switch (step.op) {
              case ViewStep::Op::Transpose:
                return "transpose " + operand(view.base);
              case ViewStep::Op::Expand:
                return "expand " + operand(view.base);
              case ViewStep::Op::Reshape:
                return "reshape " + list(step.shape) + " " + operand(view.base);
              case ViewStep::Op::Broadcast:
                return "broadcast " + list(step.shape) + " " + operand(view.base);
              case ViewStep::Op::Permute: {
                std::string s = "permute [";
                for (std::size_t k = 0; k < step.order.size(); ++k)
                  s += (k ? ", " : "") + std::to_string(step.order[k]);
                return s + "] " + operand(view.base);
              }
              case ViewStep::Op::Index: {
                std::string s = operand(view.base) + "[";
                for (std::size_t k = 0; k < step.items.size(); ++k) {
                  const ViewIndexItem& item = step.items[k];
                  s += k ? ", " : "";
                  if (item.kind == ViewIndexItem::Kind::All) {
                    s += ":";
                  } else if (item.kind == ViewIndexItem::Kind::At) {
                    s += item.lo ? ToString(*item.lo, sizes) : "?";
                  } else {
                    s += ToString(item.lo.value_or(Dim()), sizes) + ":" + (item.hi ? ToString(*item.hi, sizes) : "");
                  }
                }
                return s + "]";
              }
            }
            return std::string("?");
          },
      },
      layout->node);
}

Alignment Aligned16(const Dim& elements, std::int64_t element_bytes, const ProveFact& prove, DimFact& fact) {
  auto bytes = Mul(elements, Dim::Constant(element_bytes));
  if (!bytes) return Alignment::kRefuted;
  if (DivExact(*bytes, 16)) return Alignment::kProved;
  // Element sizes divide 16 bytes: a multiple of 16 bytes is a multiple of 16 / element_bytes elements.
  auto rest = Mod(elements, 16 / std::min<std::int64_t>(element_bytes, 16));
  if (!rest || bytes->AsConstant()) return Alignment::kRefuted;
  fact = DimFact{*rest, RelOp::kEq, Dim::Constant(0), {}};
  std::optional<bool> proved = prove ? prove(fact) : std::nullopt;
  if (!proved) return Alignment::kRunTime;
  return *proved ? Alignment::kProved : Alignment::kRefuted;
}

weft::Result<RowRead, std::string> AdmitsRow(const StridedView& layout, std::int64_t element_bytes,
                                             const ProveFact& prove, const SizeVarNames& names) {
  StridedView at_zero = layout;
  at_zero.offset = Dim();
  if (!IsRowMajor(at_zero)) return "its layout " + ToString(layout, names) + " is not row-major";
  DimFact fact;
  switch (Aligned16(layout.offset, element_bytes, prove, fact)) {
    case Alignment::kProved:
      return RowRead{layout.offset, std::nullopt};
    case Alignment::kRefuted:
      break;
    case Alignment::kRunTime:
      return RowRead{layout.offset, fact};
  }
  std::optional<std::int64_t> c = layout.offset.AsConstant();
  return c ? "its offset of " + std::to_string(*c) + " element" + (*c == 1 ? "" : "s") +
                 " is not a multiple of 16 bytes"
           : "its offset " + ToString(layout.offset, names) + " is never a multiple of 16 bytes";
}

weft::Result<TmaRead, std::string> AdmitsTma(const StridedView& layout, std::int64_t element_bytes,
                                             std::int64_t box_cols, const ProveFact& prove, const SizeVarNames& names) {
  // ` of 3 elements` for a constant, ` n` for a dim over sizes with names (nothing without).
  auto elements = [&](const Dim& d) {
    std::optional<std::int64_t> c = d.AsConstant();
    if (c) return " of " + std::to_string(*c) + " element" + (*c == 1 ? "" : "s");
    return names ? " " + ToString(d, names) : std::string();
  };
  // ` is not` for a constant, ` is never` for a dim over sizes (the facts refute it).
  auto is_not = [](const Dim& d) { return d.AsConstant() ? std::string(" is not") : std::string(" is never"); };
  const std::int64_t e = element_bytes;
  TmaRead read{layout, {}, {}};
  std::vector<StridedAxis>& axes = read.layout.axes;
  const std::size_t rank = axes.size();
  if (rank < 2) return "it is of rank " + std::to_string(rank) + ", and a TMA map needs 2 or more";
  // The last axis first: a transpose is refused for that, whatever its other strides.
  if (const StridedMode& inner = axes.back().modes.back();
      !(inner.extent == Dim::Constant(1)) && !(inner.stride == Dim::Constant(1)))
    return "its last axis is not contiguous (stride " + ToString(inner.stride, names) + ")";
  const Dim aligned = Dim::Constant(16 / std::min<std::int64_t>(e, 16));
  for (std::size_t a = 0; a < rank; ++a) {
    std::vector<StridedMode>& modes = axes[a].modes;
    if (a + 2 == rank && modes.size() != 1)
      return "its axis " + std::to_string(a) + " (the box's rows) has " + std::to_string(modes.size()) +
             " modes, and a box's rows must be one";
    for (std::size_t m = 0; m < modes.size(); ++m) {
      StridedMode& mode = modes[m];
      const bool contiguous = a + 1 == rank && m + 1 == modes.size();
      if (mode.extent == Dim::Constant(1)) mode.stride = contiguous ? Dim::Constant(1) : aligned;
      if (contiguous) {
        if (!(mode.stride == Dim::Constant(1)))
          return "its last axis is not contiguous (stride " + ToString(mode.stride, names) + ")";
        continue;
      }
      if (mode.stride.IsZero()) return "it repeats elements along axis " + std::to_string(a) + " (stride 0)";
      DimFact fact;
      switch (Aligned16(mode.stride, e, prove, fact)) {
        case Alignment::kProved:
          break;
        case Alignment::kRefuted:
          return "its axis " + std::to_string(a) + "'s stride" + elements(mode.stride) + is_not(mode.stride) +
                 " a multiple of 16 bytes";
        case Alignment::kRunTime:
          read.when.push_back(fact);
          break;
      }
    }
  }
  // Each axis's modes after its outermost: constants, so that the kernel splits an index over them.
  std::size_t dims = 0;
  read.inner.resize(rank);
  for (std::size_t a = 0; a < rank; ++a) {
    const std::vector<StridedMode>& modes = axes[a].modes;
    dims += modes.size();
    for (std::size_t m = 1; m < modes.size(); ++m) {
      std::optional<std::int64_t> extent = modes[m].extent.AsConstant();
      if (!extent) return "its axis " + std::to_string(a) + " has a mode whose extent is not a constant";
      read.inner[a].push_back(*extent);
    }
  }
  const std::vector<std::int64_t>& last = read.inner.back();
  if (!last.empty() && last.back() % box_cols != 0)
    return "its last axis's innermost mode of " + std::to_string(last.back()) +
           " elements is not a multiple of the box's " + std::to_string(box_cols);
  if (dims > 5) return "its map would have " + std::to_string(dims) + " dims, and TMA takes at most 5";
  DimFact fact;
  switch (Aligned16(read.layout.offset, e, prove, fact)) {
    case Alignment::kProved:
      break;
    case Alignment::kRefuted:
      return "its offset" + elements(read.layout.offset) + is_not(read.layout.offset) + " a multiple of 16 bytes";
    case Alignment::kRunTime:
      read.when.push_back(fact);
      break;
  }
  return read;
}

}  // namespace weft::core
