// Hierarchical integer tuples; see int_tuple.h.
#include "layout/int_tuple.h"

#include <algorithm>

namespace weft::layout {

IntTuple IntTuple::Tuple(std::vector<IntTuple> elems) {
  IntTuple t;
  t.leaf_ = false;
  t.elems_ = std::move(elems);
  return t;
}

bool IntTuple::operator==(const IntTuple& other) const {
  if (leaf_ != other.leaf_) return false;
  if (leaf_) return value_ == other.value_;
  return elems_ == other.elems_;
}

std::int64_t Product(const IntTuple& t) {
  if (t.is_leaf()) return t.value();
  std::int64_t p = 1;
  for (const IntTuple& e : t.elems()) p *= Product(e);
  return p;
}

int Depth(const IntTuple& t) {
  if (t.is_leaf()) return 0;
  int d = 0;
  for (const IntTuple& e : t.elems()) d = std::max(d, Depth(e));
  return d + 1;
}

static void CollectLeaves(const IntTuple& t, std::vector<std::int64_t>& out) {
  if (t.is_leaf()) {
    out.push_back(t.value());
    return;
  }
  for (const IntTuple& e : t.elems()) CollectLeaves(e, out);
}

std::vector<std::int64_t> FlattenLeaves(const IntTuple& t) {
  std::vector<std::int64_t> out;
  CollectLeaves(t, out);
  return out;
}

IntTuple Flatten(const IntTuple& t) {
  if (t.is_leaf()) return t;
  std::vector<IntTuple> elems;
  for (std::int64_t v : FlattenLeaves(t)) elems.emplace_back(v);
  return IntTuple::Tuple(std::move(elems));
}

bool Congruent(const IntTuple& a, const IntTuple& b) {
  if (a.is_leaf() || b.is_leaf()) return a.is_leaf() && b.is_leaf();
  if (a.elems().size() != b.elems().size()) return false;
  for (std::size_t i = 0; i < a.elems().size(); ++i)
    if (!Congruent(a.elems()[i], b.elems()[i])) return false;
  return true;
}

IntTuple Unwrap(const IntTuple& t) {
  if (!t.is_leaf() && t.elems().size() == 1) return t.elems()[0];
  return t;
}

std::string ToString(const IntTuple& t) {
  if (t.is_leaf()) return std::to_string(t.value());
  std::string s = "(";
  for (std::size_t i = 0; i < t.elems().size(); ++i) {
    if (i) s += ',';
    s += ToString(t.elems()[i]);
  }
  return s + ")";
}

std::vector<std::int64_t> PrefixProducts(const std::vector<std::int64_t>& shape) {
  std::vector<std::int64_t> out;
  std::int64_t p = 1;
  for (std::int64_t s : shape) {
    out.push_back(p);
    p *= s;
  }
  return out;
}

}  // namespace weft::layout
