// Generated families of small layouts for the property tests: every law is checked at every
// coordinate of every member, as CUTLASS's own layout tests do.
#pragma once

#include <cstdint>
#include <vector>

#include "layout/layout.h"

namespace weft::layout::testing {

// A deterministic linear congruential generator (tests must not depend on the platform's rand).
class Lcg {
 public:
  explicit Lcg(std::uint64_t seed) : state_(seed * 6364136223846793005ULL + 1442695040888963407ULL) {}
  std::uint32_t Next() {
    state_ = state_ * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<std::uint32_t>(state_ >> 33);
  }
  int Below(int n) { return static_cast<int>(Next() % static_cast<std::uint32_t>(n)); }

 private:
  std::uint64_t state_;
};

// Random shape trees: a leaf (1 in 5), else ranks 1 to 3 whose modes are leaves or (1 in 3) tuples of
// 1 to 3 leaves, so depth up to 2; extents 1 to 4.
inline IntTuple RandomShape(Lcg& rng, int depth) {
  if (depth == 0 || rng.Below(5) == 0) return IntTuple(1 + rng.Below(4));
  int rank = 1 + rng.Below(3);
  std::vector<IntTuple> elems;
  for (int i = 0; i < rank; ++i) {
    if (depth > 1 && rng.Below(3) == 0) {
      std::vector<IntTuple> inner;
      int inner_rank = 1 + rng.Below(3);
      for (int j = 0; j < inner_rank; ++j) inner.emplace_back(1 + rng.Below(4));
      elems.push_back(IntTuple::Tuple(std::move(inner)));
    } else {
      elems.emplace_back(1 + rng.Below(4));
    }
  }
  return IntTuple::Tuple(std::move(elems));
}

inline IntTuple WithLeaves(const IntTuple& shape, const std::vector<std::int64_t>& leaves, std::size_t& next) {
  if (shape.is_leaf()) return IntTuple(leaves[next++]);
  std::vector<IntTuple> elems;
  for (const IntTuple& e : shape.elems()) elems.push_back(WithLeaves(e, leaves, next));
  return IntTuple::Tuple(std::move(elems));
}

// Arbitrary strides drawn from {0, 1, 2, 3, 4, 6, 8, 13}: not injective in general.
inline std::vector<Layout> GeneralFamily(int count, std::uint64_t seed) {
  static const std::int64_t kStrides[] = {0, 1, 2, 3, 4, 6, 8, 13};
  Lcg rng(seed);
  std::vector<Layout> out;
  for (int k = 0; k < count; ++k) {
    IntTuple shape = RandomShape(rng, 2);
    std::vector<std::int64_t> strides;
    for (std::size_t i = 0; i < FlattenLeaves(shape).size(); ++i) strides.push_back(kStrides[rng.Below(8)]);
    std::size_t next = 0;
    out.emplace_back(shape, WithLeaves(shape, strides, next));
  }
  return out;
}

// Injective layouts: a compact layout whose leaf strides are permuted, with optional gaps (a stride
// multiplied by 2 or 3 together with every larger stride) and optional broadcast (stride-0) modes.
inline std::vector<Layout> InjectiveFamily(int count, std::uint64_t seed, bool allow_broadcast) {
  Lcg rng(seed);
  std::vector<Layout> out;
  for (int k = 0; k < count; ++k) {
    IntTuple shape = RandomShape(rng, 2);
    std::vector<std::int64_t> leaves = FlattenLeaves(shape);
    std::vector<std::size_t> order(leaves.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    for (std::size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.Below(static_cast<int>(i))]);
    std::vector<std::int64_t> strides(leaves.size());
    std::int64_t span = 1;
    for (std::size_t i : order) {
      if (rng.Below(4) == 0) span *= 2 + rng.Below(2);  // a gap below this mode
      strides[i] = span;
      span *= leaves[i];
    }
    if (allow_broadcast)
      for (std::size_t i = 0; i < strides.size(); ++i)
        if (rng.Below(6) == 0) strides[i] = 0;
    std::size_t next = 0;
    out.emplace_back(shape, WithLeaves(shape, strides, next));
  }
  return out;
}

}  // namespace weft::layout::testing
