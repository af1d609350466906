// Hierarchical integer tuples: the shapes, strides and coordinates of CuTe's layout algebra.
// An IntTuple is either an integer (a leaf) or a tuple of IntTuples, e.g. `(4,(2,2))`.
//
// Algorithms are structural recursions:
//   1. leaves answer directly (size of a leaf is itself, depth 0, rank 1);
//   2. tuples combine their children's answers (size multiplies, depth is 1 + the deepest child);
//   3. flatten lists the leaves left to right.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace weft::layout {

class IntTuple {
 public:
  IntTuple() : leaf_(true), value_(0) {}
  IntTuple(std::int64_t value) : leaf_(true), value_(value) {}  // NOLINT: leaves convert
  IntTuple(int value) : leaf_(true), value_(value) {}           // NOLINT
  static IntTuple Tuple(std::vector<IntTuple> elems);
  static IntTuple Tuple(std::initializer_list<IntTuple> elems) { return Tuple(std::vector<IntTuple>(elems)); }

  bool is_leaf() const { return leaf_; }
  std::int64_t value() const { return value_; }                  // @pre is_leaf()
  const std::vector<IntTuple>& elems() const { return elems_; }  // @pre !is_leaf()
  std::vector<IntTuple>& elems() { return elems_; }

  // Rank: 1 for a leaf, the number of elements of a tuple.
  int rank() const { return leaf_ ? 1 : static_cast<int>(elems_.size()); }
  // Mode i: the leaf itself for a leaf (i == 0), else element i.
  const IntTuple& operator[](int i) const { return leaf_ ? *this : elems_[i]; }

  bool operator==(const IntTuple& other) const;
  bool operator!=(const IntTuple& other) const { return !(*this == other); }

 private:
  bool leaf_;
  std::int64_t value_;
  std::vector<IntTuple> elems_;
};

// The product of the leaves (1 for an empty tuple).
std::int64_t Product(const IntTuple& t);
// 0 for a leaf, 1 + the largest depth of the elements for a tuple (an empty tuple has depth 1).
int Depth(const IntTuple& t);
// The leaves in order.
std::vector<std::int64_t> FlattenLeaves(const IntTuple& t);
// A depth-1 tuple of the leaves; a leaf stays a leaf.
IntTuple Flatten(const IntTuple& t);
// Same tree structure (leaf where leaf, equal ranks where tuple).
bool Congruent(const IntTuple& a, const IntTuple& b);
// A tuple of one element becomes that element (CuTe's unwrap), applied once at the top.
IntTuple Unwrap(const IntTuple& t);
// CuTe notation: `8`, `(4,(2,2))`, `()`.
std::string ToString(const IntTuple& t);

// Inclusive-exclusive prefix products of a flat list: (1, s0, s0*s1, ...), one per element.
std::vector<std::int64_t> PrefixProducts(const std::vector<std::int64_t>& shape);

}  // namespace weft::layout
