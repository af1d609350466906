// Swizzle<B,M,S> and swizzled layouts. Shared memory is read by rows and by columns; XOR-ing a few
// address bits with a few higher ones spreads both kinds of access over all 32 banks. This is CuTe's
// definition, which the wgmma/TMA canonical layouts (32/64/128-byte swizzles) also follow.
//
// Swizzle<B,M,S>(o) = o ^ ((o & yyy) >> S), yyy = ((1 << B) - 1) << (M + max(0,S)):
//   1. the B bits starting at M + S (the row bits, "YYY") are selected;
//   2. shifted right by S (left by -S when S < 0) onto the B bits starting at M ("ZZZ");
//   3. XOR-ed into the offset. The low M bits (the element's bytes within a 16-byte chunk, say) and
//      the YYY bits themselves are unchanged, so the map is an involution, hence a bijection.
// A SwizzledLayout is CuTe's ComposedLayout<Swizzle, offset, Layout>: c -> swizzle(offset + L(c)).
#pragma once

#include <cstdint>
#include <string>

#include "layout/layout.h"
#include "layout/result.h"

namespace weft::layout {

class Swizzle {
 public:
  Swizzle() = default;
  // @pre bits >= 0, base >= 0, |shift| >= bits (checked by Make)
  Swizzle(int bits, int base, int shift) : bits_(bits), base_(base), shift_(shift) {}
  static Result<Swizzle> Make(int bits, int base, int shift);

  int bits() const { return bits_; }
  int base() const { return base_; }
  int shift() const { return shift_; }
  std::int64_t yyy_mask() const;
  std::int64_t zzz_mask() const;

  // @post (*this)((*this)(o)) == o
  std::int64_t operator()(std::int64_t offset) const;
  bool operator==(const Swizzle& o) const { return bits_ == o.bits_ && base_ == o.base_ && shift_ == o.shift_; }

 private:
  int bits_ = 0;
  int base_ = 0;
  int shift_ = 0;
};

// `Sw<3,4,3>` as CuTe prints it.
std::string ToString(const Swizzle& swizzle);

// The shared-memory swizzle modes of TMA and wgmma descriptors.
enum class SwizzleMode { kNone, k32B, k64B, k128B };
std::string ToString(SwizzleMode mode);
// The swizzle that a mode implies on offsets counted in elements of `element_bytes` bytes (1, 2, 4, 8,
// or 16): 16-byte chunks (M = log2(16 / element_bytes)) XOR-ed with the 128-byte row index (S = 3):
// 32B = Swizzle<1,M,3>, 64B = Swizzle<2,M,3>, 128B = Swizzle<3,M,3>, none = Swizzle<0,M,3>.
Result<Swizzle> SwizzleFor(SwizzleMode mode, int element_bytes);

class SwizzledLayout {
 public:
  SwizzledLayout(Swizzle swizzle, std::int64_t offset, Layout layout)
      : swizzle_(swizzle), offset_(offset), layout_(std::move(layout)) {}

  const Swizzle& swizzle() const { return swizzle_; }
  std::int64_t offset() const { return offset_; }
  const Layout& layout() const { return layout_; }
  std::int64_t size() const { return layout_.size(); }

  std::int64_t operator()(std::int64_t index) const { return swizzle_(offset_ + layout_(index)); }
  Result<std::int64_t> Evaluate(const IntTuple& coord) const;

 private:
  Swizzle swizzle_;
  std::int64_t offset_;
  Layout layout_;
};

// `Sw<3,3,3> o 0 o (8,64):(64,1)` as CuTe prints a ComposedLayout.
std::string ToString(const SwizzledLayout& layout);

// swizzle o L: the layout's offsets are swizzled.
SwizzledLayout Compose(const Swizzle& swizzle, const Layout& layout);
// (swizzle o L) o B = swizzle o (L o B): composition on the right goes inside the swizzle.
Result<SwizzledLayout> Compose(const SwizzledLayout& a, const Layout& b);

}  // namespace weft::layout
