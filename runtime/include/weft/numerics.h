// The numerics that the interpreter, `random`, printing and `.npy` I/O share, so that every part of
// weft rounds a value the same way and GPU code has one reference to match bit for bit
// (docs/numerics.md):
//
// 1. Float formats. f16 is IEEE binary16, bf16 the top half of an f32, f8e4m3 the OCP/NVIDIA
//    E4M3 "fn" format (no infinities, largest finite 448, NaN only S.1111.111), f8e5m2 IEEE-like
//    (has infinities). Every conversion to them rounds to nearest, ties to even, once, from the
//    exact value (an f64 is not rounded through f32 on the way, nor an i64 through f64).
// 2. Overflow. f16 and bf16 overflow to infinity (PTX `cvt.rn.f16.f32`). Conversions to the f8
//    formats saturate to the largest finite value of the sign, infinities included, as PTX's
//    `cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32` does (the only rounding PTX offers for them); NaN stays NaN.
// 3. NaN. A NaN converted to a narrower format becomes that format's canonical NaN, all bits but
//    the sign set (f16/bf16 0x7fff, f8 0x7f), as NVIDIA's conversions produce.
// 4. Float to integer (`cast`): truncate toward zero, saturate to the destination's range, NaN
//    gives 0 (PTX `cvt.rzi`, which clamps float-to-integer results by default). Integer to integer
//    wraps (keeps the low bits). Anything to bool is `!= 0` (so NaN is true); bool is 0 or 1.
//
// f32 and f64 arithmetic here relies on the default floating-point environment (round to nearest
// even, no flush to zero); nothing in weft changes it.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "base/dtype.h"
#include "weft/tensor.h"

namespace weft::runtime {

// Dtype classes. Bool is neither signed nor unsigned.
constexpr bool IsFloatDtype(Dtype d) {
  return d == Dtype::F8E4M3 || d == Dtype::F8E5M2 || d == Dtype::F16 || d == Dtype::BF16 || d == Dtype::F32 ||
         d == Dtype::F64;
}
constexpr bool IsSignedDtype(Dtype d) {
  return d == Dtype::I4 || d == Dtype::I8 || d == Dtype::I16 || d == Dtype::I32 || d == Dtype::I64;
}
constexpr bool IsUnsignedDtype(Dtype d) {
  return d == Dtype::U4 || d == Dtype::U8 || d == Dtype::U16 || d == Dtype::U32 || d == Dtype::U64;
}
constexpr bool IsIntegerDtype(Dtype d) {
  return IsSignedDtype(d) || IsUnsignedDtype(d);
}

// The range of an integer dtype (bool: 0..1).
std::int64_t MinInt(Dtype d);
std::uint64_t MaxInt(Dtype d);

// Narrow floats as bit patterns. Decoding is exact; encoding rounds once (RNE) as above.
float HalfToFloat(std::uint16_t bits);
std::uint16_t FloatToHalf(float value);
float Bf16ToFloat(std::uint16_t bits);
std::uint16_t FloatToBf16(float value);
float F8e4m3ToFloat(std::uint8_t bits);
std::uint8_t FloatToF8e4m3(float value);  // saturating
float F8e5m2ToFloat(std::uint8_t bits);
std::uint8_t FloatToF8e5m2(float value);  // saturating
float DoubleToFloat(double value);        // RNE; overflows to infinity

// Any float dtype, by dtype: the bit pattern (in the low bits) of `value` rounded once to `dtype`.
std::uint64_t EncodeFloat(Dtype dtype, double value);
// The same for an integer value, rounded once (no detour through f64).
std::uint64_t EncodeFloatFromI64(Dtype dtype, std::int64_t value);
std::uint64_t EncodeFloatFromU64(Dtype dtype, std::uint64_t value);
// A decimal literal (`0.1`, `2.5e-3`, `-7`) rounded once, from its exact value, to a float dtype
// (language.md: weak literals round at compile time with RNE). nullopt if `text` is not a number.
std::optional<std::uint64_t> EncodeFloatLiteral(Dtype dtype, std::string_view text);
// The exact value of a float dtype's bit pattern.
double DecodeFloat(Dtype dtype, std::uint64_t bits);
// `value` rounded to the nearest value of a float dtype (EncodeFloat, then DecodeFloat).
double RoundToDtype(Dtype dtype, double value);

// `cast` from a float to an integer dtype (truncate, saturate, NaN -> 0) or to bool (`!= 0`).
std::int64_t CastToSigned(double value, Dtype dtype);
std::uint64_t CastToUnsigned(double value, Dtype dtype);
// The low Bits(dtype) bits of `value`, as the integer dtype reads them (sign-extended if signed).
std::int64_t WrapSigned(std::uint64_t value, Dtype dtype);
std::uint64_t WrapUnsigned(std::uint64_t value, Dtype dtype);

// Element `index` (flat, C order) of a tensor of any dtype, with `cast`'s rules where the kinds
// differ: LoadDouble is exact for floats and for integers up to 2^53; LoadInt64 of a float truncates
// and saturates; LoadUint64 of a signed value wraps (-1 -> 2^64 - 1).
double LoadDouble(const HostTensor& tensor, std::int64_t index);
std::int64_t LoadInt64(const HostTensor& tensor, std::int64_t index);
std::uint64_t LoadUint64(const HostTensor& tensor, std::int64_t index);

// Store `value` into element `index` with `cast`'s rules: into floats rounding once (RNE, f8
// saturating), into integers from a double truncating and saturating, from an integer wrapping,
// into bool `!= 0`.
void StoreDouble(HostTensor& tensor, std::int64_t index, double value);
void StoreInt64(HostTensor& tensor, std::int64_t index, std::int64_t value);
void StoreUint64(HostTensor& tensor, std::int64_t index, std::uint64_t value);

// The raw bit pattern of element `index` (zero-extended; a nibble for i4/u4), and its inverse.
std::uint64_t LoadBits(const HostTensor& tensor, std::int64_t index);
void StoreBits(HostTensor& tensor, std::int64_t index, std::uint64_t bits);

}  // namespace weft::runtime
