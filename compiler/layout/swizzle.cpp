// Swizzles and swizzled layouts; see swizzle.h.
#include "layout/swizzle.h"

#include <algorithm>
#include <cstdlib>

#include "layout/algebra.h"

namespace weft::layout {

Result<Swizzle> Swizzle::Make(int bits, int base, int shift) {
  if (bits < 0 || base < 0)
    return MakeError("swizzle `Sw<" + std::to_string(bits) + "," + std::to_string(base) + "," + std::to_string(shift) +
                     ">` has a negative bit count or base");
  if (std::abs(shift) < bits)
    return MakeError("swizzle `Sw<" + std::to_string(bits) + "," + std::to_string(base) + "," + std::to_string(shift) +
                     ">` overlaps itself: |S| must be at least B");
  if (bits + base + std::abs(shift) > 40) return MakeError("swizzle reaches past bit 40");
  return Swizzle(bits, base, shift);
}

std::int64_t Swizzle::yyy_mask() const {
  return ((std::int64_t{1} << bits_) - 1) << (base_ + std::max(0, shift_));
}

std::int64_t Swizzle::zzz_mask() const {
  return ((std::int64_t{1} << bits_) - 1) << (base_ - std::min(0, shift_));
}

std::int64_t Swizzle::operator()(std::int64_t offset) const {
  std::int64_t y = offset & yyy_mask();
  return offset ^ (shift_ >= 0 ? (y >> shift_) : (y << -shift_));
}

std::string ToString(const Swizzle& s) {
  return "Sw<" + std::to_string(s.bits()) + "," + std::to_string(s.base()) + "," + std::to_string(s.shift()) + ">";
}

std::string ToString(SwizzleMode mode) {
  switch (mode) {
    case SwizzleMode::kNone:
      return "none";
    case SwizzleMode::k32B:
      return "32B";
    case SwizzleMode::k64B:
      return "64B";
    case SwizzleMode::k128B:
      return "128B";
  }
  return "?";
}

Result<Swizzle> SwizzleFor(SwizzleMode mode, int element_bytes) {
  int m = 0;
  switch (element_bytes) {
    case 1:
      m = 4;
      break;
    case 2:
      m = 3;
      break;
    case 4:
      m = 2;
      break;
    case 8:
      m = 1;
      break;
    case 16:
      m = 0;
      break;
    default:
      return MakeError("element size " + std::to_string(element_bytes) + " bytes has no swizzle");
  }
  int b = mode == SwizzleMode::kNone ? 0 : mode == SwizzleMode::k32B ? 1 : mode == SwizzleMode::k64B ? 2 : 3;
  return Swizzle(b, m, 3);
}

Result<std::int64_t> SwizzledLayout::Evaluate(const IntTuple& coord) const {
  auto o = layout_.Evaluate(coord);
  if (!o) return o;
  return swizzle_(offset_ + *o);
}

std::string ToString(const SwizzledLayout& l) {
  return ToString(l.swizzle()) + " o " + std::to_string(l.offset()) + " o " + ToString(l.layout());
}

SwizzledLayout Compose(const Swizzle& swizzle, const Layout& layout) {
  return SwizzledLayout(swizzle, 0, layout);
}

Result<SwizzledLayout> Compose(const SwizzledLayout& a, const Layout& b) {
  auto inner = Composition(a.layout(), b);
  if (!inner) return Error{inner.error()};
  return SwizzledLayout(a.swizzle(), a.offset(), *inner);
}

}  // namespace weft::layout
