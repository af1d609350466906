// Strided views: see strided.h.
#include "core/strided.h"

#include <utility>

namespace weft::core {

namespace {

// A dim's arithmetic, or the overflow's message (a layout's dims are products of a program's
// sizes; an overflow is the program's, given back as the reason).
using DimOr = weft::Result<Dim, std::string>;

DimOr Checked(const core::Result<Dim>& d) {
  if (!d) return d.error().message;
  return *d;
}

bool IsOne(const Dim& d) {
  return d == Dim::Constant(1);
}

std::string Rank(std::size_t rank) {
  return "a rank-" + std::to_string(rank) + " view";
}

// Adjacent modes merged where the outer one's stride is the inner one's extent times its stride;
// unit modes dropped (one unit mode left for a unit axis).
weft::Result<std::vector<StridedMode>, std::string> Canonical(const std::vector<StridedMode>& modes) {
  std::vector<StridedMode> out;
  for (const StridedMode& m : modes) {
    if (IsOne(m.extent)) continue;
    if (!out.empty()) {
      DimOr inner = Checked(Mul(m.extent, m.stride));
      if (!inner) return inner.error();
      if (out.back().stride == *inner) {
        DimOr extent = Checked(Mul(out.back().extent, m.extent));
        if (!extent) return extent.error();
        out.back() = {*extent, m.stride};
        continue;
      }
    }
    out.push_back(m);
  }
  if (out.empty()) out.push_back({Dim::Constant(1), Dim::Constant(0)});
  return out;
}

}  // namespace

Dim StridedAxis::Extent() const {
  Dim out = Dim::Constant(1);
  for (const StridedMode& m : modes) {
    auto next = Mul(out, m.extent);
    if (next) out = *next;  // a view's extents were multiplied when it was made
  }
  return out;
}

std::vector<Dim> StridedView::Shape() const {
  std::vector<Dim> out;
  for (const StridedAxis& a : axes) out.push_back(a.Extent());
  return out;
}

ViewResult RowMajor(const std::vector<Dim>& shape) {
  StridedView out;
  out.offset = Dim::Constant(0);
  out.axes.resize(shape.size());
  Dim stride = Dim::Constant(1);
  for (std::size_t k = shape.size(); k-- > 0;) {
    out.axes[k].modes = {{shape[k], stride}};
    DimOr next = Checked(Mul(stride, shape[k]));
    if (!next) return next.error();
    stride = *next;
  }
  return out;
}

bool IsRowMajor(const StridedView& view) {
  if (!view.offset.IsZero()) return false;
  std::vector<StridedMode> modes;
  for (const StridedAxis& a : view.axes) modes.insert(modes.end(), a.modes.begin(), a.modes.end());
  auto merged = Canonical(modes);
  if (!merged) return false;
  return merged->size() == 1 && (IsOne(merged->front().extent) || merged->front().stride == Dim::Constant(1));
}

ViewResult Permute(const StridedView& view, const std::vector<int>& order) {
  if (order.size() != view.rank())
    return "a permutation of " + std::to_string(order.size()) + " axes of " + Rank(view.rank());
  std::vector<bool> seen(view.rank(), false);
  StridedView out;
  out.offset = view.offset;
  for (int k : order) {
    if (k < 0 || k >= static_cast<int>(view.rank()) || seen[static_cast<std::size_t>(k)])
      return std::string("the order is not a permutation of the view's axes");
    seen[static_cast<std::size_t>(k)] = true;
    out.axes.push_back(view.axes[static_cast<std::size_t>(k)]);
  }
  return out;
}

ViewResult Transpose(const StridedView& view) {
  if (view.rank() < 2) return "a transpose of " + Rank(view.rank());
  StridedView out = view;
  std::swap(out.axes[view.rank() - 2], out.axes[view.rank() - 1]);
  return out;
}

ViewResult Slice(const StridedView& view, int axis, const Dim& start, const Dim& stop) {
  if (axis < 0 || axis >= static_cast<int>(view.rank()))
    return "axis " + std::to_string(axis) + " of " + Rank(view.rank());
  StridedView out = view;
  std::vector<StridedMode>& modes = out.axes[static_cast<std::size_t>(axis)].modes;
  // The inner modes' extent: a slice of a merged axis keeps them whole and slices the outer one.
  Dim inner = Dim::Constant(1);
  for (std::size_t k = 1; k < modes.size(); ++k) {
    DimOr next = Checked(Mul(inner, modes[k].extent));
    if (!next) return next.error();
    inner = *next;
  }
  Dim outer_start = start, outer_stop = stop;
  if (modes.size() > 1) {
    auto unit = inner.AsConstant();
    auto first = unit ? DivExact(start, *unit) : std::nullopt;
    auto last = unit ? DivExact(stop, *unit) : std::nullopt;
    if (!first || !last)
      return "a slice " + ToString(start) + " .. " + ToString(stop) + " across the modes of a merged axis (" +
             ToString(inner) + " elements a step of its outer mode)";
    outer_start = *first;
    outer_stop = *last;
  }
  StridedMode& m = modes.front();
  DimOr step = Checked(Mul(outer_start, m.stride));
  if (!step) return step.error();
  DimOr offset = Checked(Add(view.offset, *step));
  if (!offset) return offset.error();
  DimOr extent = Checked(Sub(outer_stop, outer_start));
  if (!extent) return extent.error();
  out.offset = *offset;
  m.extent = *extent;
  return out;
}

ViewResult Expand(const StridedView& view, int axis) {
  if (axis < 0 || axis > static_cast<int>(view.rank()))
    return "a unit axis at " + std::to_string(axis) + " of " + Rank(view.rank());
  StridedView out = view;
  out.axes.insert(out.axes.begin() + axis, StridedAxis{{{Dim::Constant(1), Dim::Constant(0)}}});
  return out;
}

ViewResult At(const StridedView& view, int axis, const Dim& index) {
  DimOr stop = Checked(Add(index, Dim::Constant(1)));
  if (!stop) return stop.error();
  ViewResult one = Slice(view, axis, index, *stop);
  if (!one) return one;
  one->axes.erase(one->axes.begin() + axis);
  return one;
}

ViewResult Broadcast(const StridedView& view, const std::vector<Dim>& shape) {
  if (shape.size() < view.rank())
    return "a broadcast of " + Rank(view.rank()) + " to rank " + std::to_string(shape.size());
  StridedView out;
  out.offset = view.offset;
  std::size_t added = shape.size() - view.rank();
  for (std::size_t k = 0; k < shape.size(); ++k) {
    const StridedAxis* from = k < added ? nullptr : &view.axes[k - added];
    if (from && from->Extent() == shape[k]) {
      out.axes.push_back(*from);
    } else if (!from || IsOne(from->Extent())) {
      out.axes.push_back(StridedAxis{{{shape[k], Dim::Constant(0)}}});
    } else {
      return "axis " + std::to_string(k - added) + " of extent " + ToString(from->Extent()) +
             " does not broadcast to " + ToString(shape[k]);
    }
  }
  return out;
}

ViewResult Reshape(const StridedView& view, const std::vector<Dim>& shape) {
  std::vector<StridedMode> modes;  // every axis's modes in order, unit modes dropped
  for (const StridedAxis& a : view.axes)
    for (const StridedMode& m : a.modes)
      if (!IsOne(m.extent)) modes.push_back(m);
  StridedView out;
  out.offset = view.offset;
  std::size_t next = 0;  // the first mode not taken yet
  bool assumed = false;  // a mode of symbolic extent was split (its extent taken to be a multiple)
  for (std::size_t k = 0; k < shape.size(); ++k) {
    const Dim& extent = shape[k];
    std::vector<StridedMode> taken;
    Dim product = Dim::Constant(1);
    if (k + 1 == shape.size()) {
      // The last axis takes the modes left: the shapes have the same number of elements, so they
      // make its extent (`4 * (e / 4)` is `e` where the reshape checked).
      taken.assign(modes.begin() + static_cast<std::ptrdiff_t>(next), modes.end());
      next = modes.size();
      for (const StridedMode& m : taken) {
        DimOr with = Checked(Mul(product, m.extent));
        if (!with) return with.error();
        product = *with;
      }
      auto want = extent.AsConstant(), have = product.AsConstant();
      if (want && have && *want != *have)
        return "the new shape has " + std::string(*have > *want ? "fewer" : "more") + " elements than the view";
      // The equal counts of elements make the modes left the last extent, unless a split assumed a
      // divisibility: then they must be it as written.
      if (assumed && product != extent)
        return "the modes left, of " + ToString(product) + " elements, are not the new extent " + ToString(extent);
      product = extent;
    }
    while (product != extent) {
      if (next == modes.size())
        return "the view's " + std::to_string(view.rank()) + " axes run out before the new shape's extent " +
               ToString(extent);
      StridedMode m = modes[next];
      DimOr with = Checked(Mul(product, m.extent));
      if (!with) return with.error();
      auto want = extent.AsConstant(), have = product.AsConstant(), size = m.extent.AsConstant();
      if (want && have && !size && *want % *have == 0 && *want != *have) {
        // A constant extent out of a mode of symbolic extent (`reshape [s, 4, e / 4]` of [s, e]):
        // its outer part of `part`, the inner part `extent / part` left for the next axes. The
        // shapes' products are equal (the checker's obligation for `reshape`), so where the other
        // extents then match the other modes, the mode's extent is `part` times the inner one.
        std::int64_t part = *want / *have;
        DimOr inner = Checked(Div(m.extent, part));
        if (!inner) return inner.error();
        DimOr outer_stride = Checked(Mul(m.stride, *inner));
        if (!outer_stride) return outer_stride.error();
        taken.push_back({Dim::Constant(part), *outer_stride});
        modes[next] = {*inner, m.stride};
        product = extent;
        assumed = true;
        continue;
      }
      if (*with == extent || !want || !have || !size || *want % (*have * *size) == 0) {
        taken.push_back(m);  // the whole mode (with symbolic extents: in the hope of meeting `extent`)
        product = *with;
        ++next;
        continue;
      }
      // Split the mode: its outer part completes `extent`, its inner part stays for the next axis.
      std::int64_t part = *want / *have;
      if (*want % *have != 0 || *size % part != 0)
        return "a mode of extent " + ToString(m.extent) + " does not split into " + std::to_string(part) +
               " (the new extent " + ToString(extent) + ")";
      DimOr outer_stride = Checked(Mul(m.stride, Dim::Constant(*size / part)));
      if (!outer_stride) return outer_stride.error();
      taken.push_back({Dim::Constant(part), *outer_stride});
      modes[next] = {Dim::Constant(*size / part), m.stride};
      product = extent;
    }
    auto merged = Canonical(taken);
    if (!merged) return merged.error();
    if (merged->size() == 1 && !taken.empty())
      merged->front().extent = extent;  // the same number, in the new shape's terms
    out.axes.push_back(StridedAxis{std::move(*merged)});
  }
  if (next != modes.size()) return "the new shape's extents end before the view's elements (its product is smaller)";
  return out;
}

std::string ToString(const StridedView& view, const SizeVarNames& names) {
  auto group = [&](const StridedAxis& a, bool strides) {
    std::string s;
    for (std::size_t k = 0; k < a.modes.size(); ++k) {
      if (k) s += ", ";
      s += ToString(strides ? a.modes[k].stride : a.modes[k].extent, names);
    }
    return a.modes.size() > 1 ? "(" + s + ")" : s;
  };
  std::string extents, strides;
  for (std::size_t k = 0; k < view.rank(); ++k) {
    if (k) extents += ", ", strides += ", ";
    extents += group(view.axes[k], false);
    strides += group(view.axes[k], true);
  }
  std::string out = "(" + extents + "):(" + strides + ")";
  if (!view.offset.IsZero()) out += " + " + ToString(view.offset, names);
  return out;
}

}  // namespace weft::core
