// Conversions between weft's float formats and element access over HostTensor (numerics.h states
// the rules; docs/numerics.md the reasons). Encoding to a narrow format works on an exact
// (mantissa, exponent) pair, so f64 and 64-bit integers round once, like f32 does:
//
// 1. Split the value into sign, integer mantissa m and binary exponent e (value = m * 2^e).
// 2. Pick the format's quantum at that magnitude: 2^(max(floor(log2 value), emin) - M), M the
//    format's mantissa bits, emin its least normal exponent (below it the quantum stays fixed:
//    subnormals).
// 3. Divide by the quantum with round-half-even on the integers; the count n of quanta, added to
//    the exponent field, is the bit pattern (a carry out of the mantissa bumps the exponent by
//    itself).
// 4. A pattern above the largest finite one overflows: to infinity, or to the largest finite value
//    for the saturating f8 conversions.
#include "weft/numerics.h"

#include <bit>
#include <cfenv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>

namespace weft::runtime {
namespace {

struct Format {
  int exp_bits;
  int man_bits;
  bool has_inf;              // else the all-ones exponent is a normal binade (E4M3)
  bool saturate;             // overflow gives the largest finite value instead of infinity
  std::uint32_t max_finite;  // bit pattern of the largest finite value
  int Bias() const { return (1 << (exp_bits - 1)) - 1; }
  int Emin() const { return 1 - Bias(); }
  std::uint32_t SignBit() const { return 1u << (exp_bits + man_bits); }
  std::uint32_t Infinity() const { return ((1u << exp_bits) - 1) << man_bits; }
  std::uint32_t Nan() const { return SignBit() - 1; }
};

constexpr Format kHalf{5, 10, true, false, 0x7bff};
constexpr Format kBf16{8, 7, true, false, 0x7f7f};
constexpr Format kE4m3{4, 3, false, true, 0x7e};
constexpr Format kE5m2{5, 2, true, true, 0x7b};

// Round m / 2^shift to an integer, ties to even. @pre shift >= 1
std::uint64_t ShiftRoundEven(std::uint64_t m, int shift) {
  if (shift > 64) return 0;
  if (shift == 64) return m > (std::uint64_t{1} << 63) ? 1 : 0;
  std::uint64_t n = m >> shift;
  std::uint64_t rest = m & ((std::uint64_t{1} << shift) - 1);
  std::uint64_t half = std::uint64_t{1} << (shift - 1);
  if (rest > half || (rest == half && (n & 1))) ++n;
  return n;
}

// The bit pattern nearest to (-1)^negative * m * 2^e in `f`.
std::uint32_t EncodeExact(const Format& f, bool negative, std::uint64_t m, int e) {
  std::uint32_t sign = negative ? f.SignBit() : 0;
  if (m == 0) return sign;
  int top = std::bit_width(m) - 1;  // value in [2^(top + e), 2^(top + e + 1))
  int exp = std::max(top + e, f.Emin());
  int shift = exp - f.man_bits - e;  // the quantum is 2^(exp - man_bits) = 2^(e + shift)
  std::uint64_t n;
  if (shift <= 0) {
    n = m << -shift;  // exact: small integers (shift >= -man_bits, since top >= 0 here)
  } else {
    n = ShiftRoundEven(m, shift);
  }
  if (n == 0) return sign;
  std::uint64_t bits = (static_cast<std::uint64_t>(exp - f.Emin()) << f.man_bits) + n;
  if (bits > f.max_finite) bits = f.saturate || !f.has_inf ? f.max_finite : f.Infinity();
  return sign | static_cast<std::uint32_t>(bits);
}

std::uint32_t EncodeDouble(const Format& f, double value) {
  if (std::isnan(value)) return f.Nan();
  bool negative = std::signbit(value);
  if (std::isinf(value)) return (negative ? f.SignBit() : 0) | (f.has_inf && !f.saturate ? f.Infinity() : f.max_finite);
  std::uint64_t u = std::bit_cast<std::uint64_t>(value);
  int biased = static_cast<int>((u >> 52) & 0x7ff);
  std::uint64_t frac = u & ((std::uint64_t{1} << 52) - 1);
  // An f64 subnormal is far below half the least subnormal of every narrow format: it rounds to zero.
  if (biased == 0) return negative ? f.SignBit() : 0;
  return EncodeExact(f, negative, frac | (std::uint64_t{1} << 52), biased - 1075);
}

std::uint32_t EncodeI64(const Format& f, std::int64_t value) {
  bool negative = value < 0;
  std::uint64_t magnitude = negative ? 0 - static_cast<std::uint64_t>(value) : static_cast<std::uint64_t>(value);
  return EncodeExact(f, negative, magnitude, 0);
}

float Decode(const Format& f, std::uint32_t bits) {
  bool negative = (bits & f.SignBit()) != 0;
  std::uint32_t exp = (bits >> f.man_bits) & ((1u << f.exp_bits) - 1);
  std::uint32_t man = bits & ((1u << f.man_bits) - 1);
  std::uint32_t sign32 = negative ? 0x80000000u : 0;
  std::uint32_t all_ones = (1u << f.exp_bits) - 1;
  bool special = f.has_inf ? exp == all_ones : (exp == all_ones && man == (1u << f.man_bits) - 1);
  if (special) {
    if (f.has_inf && man == 0) return std::bit_cast<float>(sign32 | 0x7f800000u);
    return std::bit_cast<float>(sign32 | 0x7fc00000u | (man << (23 - f.man_bits)));  // a quiet NaN
  }
  if (exp == 0) {  // zero or subnormal: man * 2^(emin - man_bits), exact in f32
    float magnitude = std::ldexp(static_cast<float>(man), f.Emin() - f.man_bits);
    return negative ? -magnitude : magnitude;
  }
  std::uint32_t exp32 = exp - static_cast<std::uint32_t>(f.Bias()) + 127;
  return std::bit_cast<float>(sign32 | (exp32 << 23) | (man << (23 - f.man_bits)));
}

// The 256 values of an f8 format, decoded once.
struct F8Table {
  float values[256];
  explicit F8Table(const Format& f) {
    for (int i = 0; i < 256; ++i) values[i] = Decode(f, static_cast<std::uint32_t>(i));
  }
};

const Format* FormatOf(Dtype dtype) {
  switch (dtype) {
    case Dtype::F16:
      return &kHalf;
    case Dtype::BF16:
      return &kBf16;
    case Dtype::F8E4M3:
      return &kE4m3;
    case Dtype::F8E5M2:
      return &kE5m2;
    default:
      return nullptr;
  }
}

std::uint64_t LowMask(Dtype dtype) {
  int bits = Bits(dtype);
  return bits >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1;
}

}  // namespace

std::int64_t MinInt(Dtype d) {
  if (IsSignedDtype(d))
    return Bits(d) == 64 ? std::numeric_limits<std::int64_t>::min() : -(std::int64_t{1} << (Bits(d) - 1));
  return 0;
}

std::uint64_t MaxInt(Dtype d) {
  if (d == Dtype::Bool) return 1;
  if (IsSignedDtype(d)) return (std::uint64_t{1} << (Bits(d) - 1)) - 1;
  return LowMask(d);
}

float HalfToFloat(std::uint16_t bits) {
  return Decode(kHalf, bits);
}
std::uint16_t FloatToHalf(float value) {
  return static_cast<std::uint16_t>(EncodeDouble(kHalf, value));
}

float Bf16ToFloat(std::uint16_t bits) {
  // bf16 is the top half of an f32; NaNs keep their payload.
  return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
}

std::uint16_t FloatToBf16(float value) {
  if (std::isnan(value)) return static_cast<std::uint16_t>(kBf16.Nan());
  // Add just under half of the dropped part, plus the kept part's lowest bit: ties go to even,
  // and a carry into the exponent (up to infinity) is the correct result.
  std::uint32_t u = std::bit_cast<std::uint32_t>(value);
  u += 0x7fffu + ((u >> 16) & 1);
  return static_cast<std::uint16_t>(u >> 16);
}

float F8e4m3ToFloat(std::uint8_t bits) {
  static const F8Table table(kE4m3);
  return table.values[bits];
}
std::uint8_t FloatToF8e4m3(float value) {
  return static_cast<std::uint8_t>(EncodeDouble(kE4m3, value));
}

float F8e5m2ToFloat(std::uint8_t bits) {
  static const F8Table table(kE5m2);
  return table.values[bits];
}
std::uint8_t FloatToF8e5m2(float value) {
  return static_cast<std::uint8_t>(EncodeDouble(kE5m2, value));
}

float DoubleToFloat(double value) {
  return static_cast<float>(value);
}

std::uint64_t EncodeFloat(Dtype dtype, double value) {
  if (dtype == Dtype::F64) return std::bit_cast<std::uint64_t>(value);
  if (dtype == Dtype::F32) return std::bit_cast<std::uint32_t>(static_cast<float>(value));
  if (const Format* f = FormatOf(dtype)) return EncodeDouble(*f, value);
  return 0;
}

std::uint64_t EncodeFloatFromI64(Dtype dtype, std::int64_t value) {
  if (dtype == Dtype::F64) return std::bit_cast<std::uint64_t>(static_cast<double>(value));
  if (dtype == Dtype::F32) return std::bit_cast<std::uint32_t>(static_cast<float>(value));
  if (const Format* f = FormatOf(dtype)) return EncodeI64(*f, value);
  return 0;
}

std::uint64_t EncodeFloatFromU64(Dtype dtype, std::uint64_t value) {
  if (dtype == Dtype::F64) return std::bit_cast<std::uint64_t>(static_cast<double>(value));
  if (dtype == Dtype::F32) return std::bit_cast<std::uint32_t>(static_cast<float>(value));
  if (const Format* f = FormatOf(dtype)) return EncodeExact(*f, false, value, 0);
  return 0;
}

std::optional<std::uint64_t> EncodeFloatLiteral(Dtype dtype, std::string_view text) {
  // strtod rounds the decimal to the nearest double, and rounding that double again to a narrower
  // type can land on the wrong side of a tie. So parse again toward -inf and +inf: either both give
  // the decimal's exact value, or it lies strictly between two consecutive doubles lo < x < hi. No
  // tie of a narrower type (a double itself) lies strictly between them, so x rounds like their
  // midpoint, which needs one bit more than a double: encode it as an exact (mantissa, exponent).
  std::string owned(text);
  char* end = nullptr;
  auto parse = [&](int mode) {
    int saved = std::fegetround();
    std::fesetround(mode);
    double d = std::strtod(owned.c_str(), &end);
    std::fesetround(saved);
    return d;
  };
  double nearest = parse(FE_TONEAREST);
  if (owned.empty() || end != owned.c_str() + owned.size()) return std::nullopt;
  if (dtype == Dtype::F32) return std::bit_cast<std::uint32_t>(std::strtof(owned.c_str(), nullptr));
  const Format* f = FormatOf(dtype);
  if (f == nullptr) return std::bit_cast<std::uint64_t>(nearest);  // f64
  double lo = parse(FE_DOWNWARD), hi = parse(FE_UPWARD);
  if (lo == hi || std::isnan(nearest)) return EncodeDouble(*f, nearest);
  bool negative = hi <= 0 && lo < 0;
  double inner = negative ? -hi : lo;  // the bound nearer zero; the other is one ulp further out
  std::uint64_t u = std::bit_cast<std::uint64_t>(inner);
  int biased = static_cast<int>((u >> 52) & 0x7ff);
  std::uint64_t m = u & ((std::uint64_t{1} << 52) - 1);
  int e = -1074;  // inner = m * 2^e
  if (biased != 0) {
    m |= std::uint64_t{1} << 52;
    e = biased - 1075;
  }
  return EncodeExact(*f, negative, 2 * m + 1, e - 1);
}

double DecodeFloat(Dtype dtype, std::uint64_t bits) {
  switch (dtype) {
    case Dtype::F64:
      return std::bit_cast<double>(bits);
    case Dtype::F32:
      return std::bit_cast<float>(static_cast<std::uint32_t>(bits));
    case Dtype::BF16:
      return Bf16ToFloat(static_cast<std::uint16_t>(bits));
    case Dtype::F8E4M3:
      return F8e4m3ToFloat(static_cast<std::uint8_t>(bits));
    case Dtype::F8E5M2:
      return F8e5m2ToFloat(static_cast<std::uint8_t>(bits));
    default:
      if (const Format* f = FormatOf(dtype)) return Decode(*f, static_cast<std::uint32_t>(bits));
      return 0;
  }
}

double RoundToDtype(Dtype dtype, double value) {
  return DecodeFloat(dtype, EncodeFloat(dtype, value));
}

std::int64_t CastToSigned(double value, Dtype dtype) {
  if (dtype == Dtype::Bool) return value != 0;
  if (std::isnan(value)) return 0;
  double t = std::trunc(value);
  std::int64_t lo = MinInt(dtype);
  std::int64_t hi = static_cast<std::int64_t>(MaxInt(dtype));
  if (t <= static_cast<double>(lo)) return lo;
  // hi as a double may round up (2^63 for i64): compare with >= so the cast below stays in range.
  if (t >= static_cast<double>(hi)) return hi;
  return static_cast<std::int64_t>(t);
}

std::uint64_t CastToUnsigned(double value, Dtype dtype) {
  if (dtype == Dtype::Bool) return value != 0;
  if (IsSignedDtype(dtype)) return static_cast<std::uint64_t>(CastToSigned(value, dtype)) & LowMask(dtype);
  if (std::isnan(value)) return 0;
  double t = std::trunc(value);
  std::uint64_t hi = MaxInt(dtype);
  if (t <= 0) return 0;
  if (t >= static_cast<double>(hi)) return hi;
  return static_cast<std::uint64_t>(t);
}

std::int64_t WrapSigned(std::uint64_t value, Dtype dtype) {
  int bits = Bits(dtype);
  if (dtype == Dtype::Bool) return value != 0;
  if (bits >= 64) return static_cast<std::int64_t>(value);
  std::uint64_t low = value & LowMask(dtype);
  if (IsUnsignedDtype(dtype)) return static_cast<std::int64_t>(low);
  std::uint64_t sign = std::uint64_t{1} << (bits - 1);
  return static_cast<std::int64_t>((low ^ sign) - sign);  // sign extension, in unsigned arithmetic
}

std::uint64_t WrapUnsigned(std::uint64_t value, Dtype dtype) {
  if (dtype == Dtype::Bool) return value != 0;
  return value & LowMask(dtype);
}

std::uint64_t LoadBits(const HostTensor& tensor, std::int64_t index) {
  const std::uint8_t* p = tensor.bytes.data();
  switch (Bits(tensor.dtype)) {
    case 4: {
      std::uint8_t byte = p[index / 2];
      return (index & 1) ? byte >> 4 : byte & 0xf;
    }
    case 8:
      return p[index];
    case 16: {
      std::uint16_t v;
      std::memcpy(&v, p + index * 2, 2);
      return v;
    }
    case 32: {
      std::uint32_t v;
      std::memcpy(&v, p + index * 4, 4);
      return v;
    }
    default: {
      std::uint64_t v;
      std::memcpy(&v, p + index * 8, 8);
      return v;
    }
  }
}

void StoreBits(HostTensor& tensor, std::int64_t index, std::uint64_t bits) {
  std::uint8_t* p = tensor.bytes.data();
  switch (Bits(tensor.dtype)) {
    case 4: {
      std::uint8_t& byte = p[index / 2];
      std::uint8_t nibble = bits & 0xf;
      byte = (index & 1) ? static_cast<std::uint8_t>((byte & 0x0f) | (nibble << 4))
                         : static_cast<std::uint8_t>((byte & 0xf0) | nibble);
      return;
    }
    case 8:
      p[index] = static_cast<std::uint8_t>(bits);
      return;
    case 16: {
      auto v = static_cast<std::uint16_t>(bits);
      std::memcpy(p + index * 2, &v, 2);
      return;
    }
    case 32: {
      auto v = static_cast<std::uint32_t>(bits);
      std::memcpy(p + index * 4, &v, 4);
      return;
    }
    default:
      std::memcpy(p + index * 8, &bits, 8);
      return;
  }
}

double LoadDouble(const HostTensor& tensor, std::int64_t index) {
  std::uint64_t bits = LoadBits(tensor, index);
  if (IsFloatDtype(tensor.dtype)) return DecodeFloat(tensor.dtype, bits);
  if (IsSignedDtype(tensor.dtype)) return static_cast<double>(WrapSigned(bits, tensor.dtype));
  return static_cast<double>(bits);
}

std::int64_t LoadInt64(const HostTensor& tensor, std::int64_t index) {
  std::uint64_t bits = LoadBits(tensor, index);
  if (IsFloatDtype(tensor.dtype)) return CastToSigned(DecodeFloat(tensor.dtype, bits), Dtype::I64);
  return WrapSigned(bits, IsSignedDtype(tensor.dtype) ? tensor.dtype : Dtype::U64);
}

std::uint64_t LoadUint64(const HostTensor& tensor, std::int64_t index) {
  std::uint64_t bits = LoadBits(tensor, index);
  if (IsFloatDtype(tensor.dtype)) return CastToUnsigned(DecodeFloat(tensor.dtype, bits), Dtype::U64);
  if (IsSignedDtype(tensor.dtype)) return static_cast<std::uint64_t>(WrapSigned(bits, tensor.dtype));
  return bits;
}

void StoreDouble(HostTensor& tensor, std::int64_t index, double value) {
  Dtype d = tensor.dtype;
  std::uint64_t bits = IsFloatDtype(d)    ? EncodeFloat(d, value)
                       : IsSignedDtype(d) ? static_cast<std::uint64_t>(CastToSigned(value, d))
                                          : CastToUnsigned(value, d);
  StoreBits(tensor, index, bits);
}

void StoreInt64(HostTensor& tensor, std::int64_t index, std::int64_t value) {
  Dtype d = tensor.dtype;
  std::uint64_t bits =
      IsFloatDtype(d) ? EncodeFloatFromI64(d, value) : WrapUnsigned(static_cast<std::uint64_t>(value), d);
  StoreBits(tensor, index, bits);
}

void StoreUint64(HostTensor& tensor, std::int64_t index, std::uint64_t value) {
  Dtype d = tensor.dtype;
  std::uint64_t bits = IsFloatDtype(d) ? EncodeFloatFromU64(d, value) : WrapUnsigned(value, d);
  StoreBits(tensor, index, bits);
}

}  // namespace weft::runtime
