// Layout = Shape:Stride, CuTe's function from coordinates to offsets, e.g. `(4,(2,2)):(2,(1,8))`.
// Every tile in weft (registers, shared memory, a thread-value assignment) is described by one, so
// this is the vocabulary of layout synthesis and code generation. See docs/layouts.md.
//
// Evaluation (CuTe's crd2idx) of a coordinate c against shape S and stride D:
//   1. c, S, D all integers: c * D;
//   2. c a tuple: the sum of each mode's evaluation (c congruent with S where c is a tuple);
//   3. c an integer, S a tuple: split c colexicographically, c % size(S_0) into mode 0 and
//      c / size(S_0) into the remaining modes; the last mode takes the whole quotient, so a 1-D index
//      past size() extends the last mode (composition relies on this).
// coalesce, flatten and filter keep the function on [0, size()) and only change the mode structure.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "layout/int_tuple.h"
#include "layout/result.h"

namespace weft::layout {

class Layout {
 public:
  Layout() : shape_(1), stride_(0) {}
  // @pre Congruent(shape, stride) and every shape leaf >= 1 (use Make to check).
  Layout(IntTuple shape, IntTuple stride) : shape_(std::move(shape)), stride_(std::move(stride)) {}

  // Checks congruence and positive extents.
  static Result<Layout> Make(IntTuple shape, IntTuple stride);
  // The column-major (CuTe LayoutLeft) compact layout of a shape: stride 1 for the first leaf.
  static Layout Compact(const IntTuple& shape);
  // The row-major (LayoutRight) compact layout: stride 1 for the last leaf.
  static Layout CompactRowMajor(const IntTuple& shape);
  // (L0, L1, ...): a layout whose modes are the given layouts.
  static Layout Tuple(const std::vector<Layout>& modes);

  const IntTuple& shape() const { return shape_; }
  const IntTuple& stride() const { return stride_; }

  // @post rank() == shape().rank(): 1 for a leaf layout such as `8:1`.
  int rank() const { return shape_.rank(); }
  int depth() const { return Depth(shape_); }
  // The number of coordinates: the product of the shape.
  std::int64_t size() const { return Product(shape_); }
  // @post cosize() == 1 + sum over leaves of (shape - 1) * |stride| (CuTe's coshape); for non-negative
  //       strides that is 1 + the largest offset.
  std::int64_t cosize() const;
  // Mode i as a layout. @pre 0 <= i < rank()
  Layout Mode(int i) const { return Layout(shape_[i], stride_[i]); }

  // The offset of a 1-D (colexicographic) index; past size() the last mode extends.
  std::int64_t operator()(std::int64_t index) const;
  // The offset of a natural or partially-flattened coordinate (integers may stand for whole modes).
  Result<std::int64_t> Evaluate(const IntTuple& coord) const;

  // The hierarchical coordinate, congruent with shape(), of a 1-D index in [0, size()).
  IntTuple IndexToCoord(std::int64_t index) const;

  bool operator==(const Layout& other) const { return shape_ == other.shape_ && stride_ == other.stride_; }
  bool operator!=(const Layout& other) const { return !(*this == other); }

 private:
  IntTuple shape_;
  IntTuple stride_;
};

// `shape:stride` in CuTe notation, e.g. `(4,(2,2)):(2,(1,8))`.
std::string ToString(const Layout& layout);

// The flat (shape, stride) modes, leaves left to right.
std::vector<std::pair<std::int64_t, std::int64_t>> FlatModes(const Layout& layout);
// A layout from flat modes: a leaf for one mode, `1:0` for none, else a depth-1 tuple.
Layout FromFlatModes(const std::vector<std::pair<std::int64_t, std::int64_t>>& modes);

// @post depth(result) <= 1, rank(result) == number of leaves, same function everywhere.
Layout Flatten(const Layout& layout);
// Merge modes while keeping the function on [0, size()) (CuTe's coalesce).
// @post size(result) == size(layout)
// @post depth(result) <= 1
// @post for all i in [0, size(layout)): result(i) == layout(i)
Layout Coalesce(const Layout& layout);
// Coalesce each mode of the layout separately where `profile` has a leaf (CuTe's by-mode coalesce).
// @pre profile's tuples nest inside layout's shape
Result<Layout> Coalesce(const Layout& layout, const IntTuple& profile);
// As Coalesce, but also keeps the function for indices past size(): a trailing size-1 mode is kept as
// a stride carrier (CuTe's detail::coalesce_x, used by composition).
// @post for all i >= 0: result(i) == layout(i)
Layout CoalesceExtended(const Layout& layout);
// Replace stride-0 modes' shapes with 1, then coalesce (CuTe's filter).
// @post result is injective iff layout restricted to its non-broadcast modes is
Layout Filter(const Layout& layout);

}  // namespace weft::layout
