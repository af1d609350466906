// The layout of an array value (../shared/design/layout-types.md, "Two kinds of layout"): which
// element of its buffer each index of a view reads, as dims (polynomials over the program's sizes).
//
// A view has an offset and, per axis, one or more modes (extent, stride), outermost first; an index
// i along an axis is split over its modes' extents (the last mode fastest) and each part times its
// mode's stride is added to the offset. A row-major tensor has one mode an axis; views compute
// their layout and move no data: `transpose` and `permute` permute the axes, a slice moves the
// offset, `expand` adds a unit axis, and `reshape` regroups the modes in order, merging where it
// can and keeping the modes apart where it cannot (CuTe's hierarchical modes). So
// `reshape [s, 4096] (permute [1, 0, 2] o)` with o: [32, s, 128] is (s, (32, 128)):(128, (128*s, 1)):
// its last axis runs over the heads and within a head, and a TMA map of it has three dimensions.
// Only a reshape that would split a mode whose extent it cannot divide, or a slice across the modes
// of a merged axis, needs a copy; the result says why.
//
// Not the CuTe algebra of compiler/layout: its preconditions (divisibility, sorted strides) would
// need a solver on symbolic strides; tiles' layouts stay integer ones there. The graph (issue
// "Views reach the fast kernels") and the checker's layout types (issue "Layout types in the
// checker") use this one type.
#pragma once

#include <string>
#include <vector>

#include "core/dim.h"

namespace weft::core {

struct StridedMode {
  Dim extent;
  Dim stride;
  friend bool operator==(const StridedMode&, const StridedMode&) = default;
};

struct StridedAxis {
  std::vector<StridedMode> modes;  // outermost first; at least one
  Dim Extent() const;              // the product of the modes' extents
  friend bool operator==(const StridedAxis&, const StridedAxis&) = default;
};

struct StridedView {
  Dim offset;
  std::vector<StridedAxis> axes;

  std::size_t rank() const { return axes.size(); }
  std::vector<Dim> Shape() const;
  friend bool operator==(const StridedView&, const StridedView&) = default;
};

// A view's layout, or why the view cannot be read in place (it needs a copy).
using ViewResult = weft::Result<StridedView, std::string>;

// Densely packed, last axis fastest, offset 0: one mode an axis.
ViewResult RowMajor(const std::vector<Dim>& shape);

// Whether `view` reads the same elements as RowMajor(view.Shape()) (unit modes' strides aside).
bool IsRowMajor(const StridedView& view);

// Axis k of the result is axis order[k] of `view`; `order` must be a permutation of 0 .. rank - 1.
ViewResult Permute(const StridedView& view, const std::vector<int>& order);

// The last two axes swapped (rank >= 2).
ViewResult Transpose(const StridedView& view);

// Elements start .. stop - 1 of `axis` (step 1). On an axis of several modes, only where start and
// stop are constant multiples of the inner modes' (constant) extents.
ViewResult Slice(const StridedView& view, int axis, const Dim& start, const Dim& stop);

// A unit axis inserted before axis `axis` (0 .. rank).
ViewResult Expand(const StridedView& view, int axis);

// Element `index` of `axis`, the axis dropped.
ViewResult At(const StridedView& view, int axis, const Dim& index);

// Broadcast to `shape` (rank at least the view's, axes aligned on the right): a new axis, or a unit
// axis widened, reads its one element again and again (stride 0).
ViewResult Broadcast(const StridedView& view, const std::vector<Dim>& shape);

// The same elements, in row-major order, seen with `shape`: the modes of every axis in order,
// regrouped into the new axes (a mode split where a constant extent divides it, or where a constant
// extent comes out of a mode of symbolic extent `e`, as `e / c` is left for the next axes), adjacent
// modes of an axis merged where the outer one's stride is the inner one's extent times its stride.
// @pre the shapes have the same number of elements (the checker's obligation for `reshape`).
ViewResult Reshape(const StridedView& view, const std::vector<Dim>& shape);

// CuTe's shape:stride, an axis of several modes in parentheses, then ` + offset` when not 0:
// `(s, (32, 128)):(128, (128*s, 1))`.
std::string ToString(const StridedView& view, const SizeVarNames& names = {});

}  // namespace weft::core
