// runtime/numerics.h on hand-derived cases (each derivation in a comment) and round-trip laws over
// every bit pattern of the narrow formats. oracle_test.cpp checks the same functions against NumPy.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "weft/numerics.h"

namespace weft::runtime {
namespace {

TEST_CASE("every narrow float pattern round-trips through f32", "[numerics]") {
  for (Dtype d : {Dtype::F16, Dtype::BF16, Dtype::F8E4M3, Dtype::F8E5M2}) {
    std::uint64_t patterns = std::uint64_t{1} << Bits(d);
    for (std::uint64_t bits = 0; bits < patterns; ++bits) {
      double v = DecodeFloat(d, bits);
      INFO(Spelling(d) << " bits " << bits << " value " << v);
      if (std::isnan(v)) {
        // A NaN comes back as the canonical NaN: every bit but the sign set.
        CHECK(EncodeFloat(d, v) == (patterns >> 1) - 1);
      } else if (std::isinf(v) && d == Dtype::F8E5M2) {
        // Conversions to f8 saturate, infinities included: 0 11110 11 = 0x7b, and with the sign 0xfb.
        CHECK(EncodeFloat(d, v) == (v > 0 ? 0x7bu : 0xfbu));
      } else {
        CHECK(EncodeFloat(d, v) == bits);
        CHECK(static_cast<double>(static_cast<float>(v)) == v);  // every value is exact in f32
      }
    }
  }
}

TEST_CASE("f16 decodes and rounds at the edges", "[numerics]") {
  CHECK(HalfToFloat(0x3c00) == 1.0f);
  CHECK(HalfToFloat(0x7bff) == 65504.0f);               // (2 - 2^-10) * 2^15
  CHECK(HalfToFloat(0x0001) == std::ldexp(1.0f, -24));  // least subnormal: 2^-14 * 2^-10
  CHECK(HalfToFloat(0x0400) == std::ldexp(1.0f, -14));  // least normal
  CHECK(HalfToFloat(0xfc00) == -std::numeric_limits<float>::infinity());
  CHECK(std::isnan(HalfToFloat(0x7e00)));
  // Ties to even: 1 + 2^-11 lies halfway between 1 (mantissa 0) and 1 + 2^-10 (mantissa 1).
  CHECK(FloatToHalf(1.0f + std::ldexp(1.0f, -11)) == 0x3c00);
  // 1 + 3 * 2^-11 lies halfway between mantissas 1 and 2: 2 is even.
  CHECK(FloatToHalf(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3c02);
  // Subnormal ties: 2^-25 is half the least subnormal (rounds to 0), 3 * 2^-25 between 1 and 2 units.
  CHECK(FloatToHalf(std::ldexp(1.0f, -25)) == 0x0000);
  CHECK(FloatToHalf(-std::ldexp(1.0f, -25)) == 0x8000);
  CHECK(FloatToHalf(3 * std::ldexp(1.0f, -25)) == 0x0002);
  // Overflow: 65520 is halfway between 65504 and 65536 (= infinity's place, even): infinity.
  CHECK(FloatToHalf(65520.0f) == 0x7c00);
  CHECK(FloatToHalf(std::nextafter(65520.0f, 0.0f)) == 0x7bff);
  CHECK(FloatToHalf(-1e10f) == 0xfc00);
  CHECK(FloatToHalf(std::numeric_limits<float>::quiet_NaN()) == 0x7fff);
}

TEST_CASE("bf16 rounds at the edges", "[numerics]") {
  CHECK(Bf16ToFloat(0x3f80) == 1.0f);
  CHECK(FloatToBf16(1.0f + std::ldexp(1.0f, -8)) == 0x3f80);                          // tie between mantissas 0 and 1
  CHECK(FloatToBf16(1.0f + 3 * std::ldexp(1.0f, -8)) == 0x3f82);                      // tie between 1 and 2
  CHECK(FloatToBf16(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20)) == 0x3f81);  // just above the tie
  CHECK(FloatToBf16(std::numeric_limits<float>::max()) == 0x7f80);  // above max + half an ulp: infinity
  CHECK(FloatToBf16(std::numeric_limits<float>::quiet_NaN()) == 0x7fff);
  CHECK(FloatToBf16(std::numeric_limits<float>::denorm_min()) == 0x0000);  // 2^-149 < half of 2^-133
}

TEST_CASE("f8 conversions saturate like cvt.rn.satfinite", "[numerics]") {
  float inf = std::numeric_limits<float>::infinity();
  // E4M3: 1.0 is exponent 7 (the bias), mantissa 0: 0 0111 000. The largest finite is 0 1111 110
  // = 1.75 * 2^8 = 448; 0 1111 111 is NaN.
  CHECK(FloatToF8e4m3(1.0f) == 0x38);
  CHECK(F8e4m3ToFloat(0x7e) == 448.0f);
  CHECK(std::isnan(F8e4m3ToFloat(0x7f)));
  CHECK(std::isnan(F8e4m3ToFloat(0xff)));
  CHECK(F8e4m3ToFloat(0x01) == std::ldexp(1.0f, -9));  // least subnormal: 2^-6 * 2^-3
  CHECK(FloatToF8e4m3(464.0f) == 0x7e);                // halfway to the missing 480
  CHECK(FloatToF8e4m3(1e6f) == 0x7e);
  CHECK(FloatToF8e4m3(inf) == 0x7e);
  CHECK(FloatToF8e4m3(-inf) == 0xfe);
  CHECK(FloatToF8e4m3(std::numeric_limits<float>::quiet_NaN()) == 0x7f);
  CHECK(FloatToF8e4m3(std::ldexp(1.0f, -10)) == 0x00);  // half the least subnormal: tie to 0
  // E5M2: 1.0 is 0 01111 00; the largest finite 0 11110 11 = 1.75 * 2^15 = 57344; 0 11111 00 is
  // infinity, but conversions saturate to 57344 (PTX has only the .satfinite form).
  CHECK(FloatToF8e5m2(1.0f) == 0x3c);
  CHECK(F8e5m2ToFloat(0x7b) == 57344.0f);
  CHECK(F8e5m2ToFloat(0x7c) == inf);
  CHECK(std::isnan(F8e5m2ToFloat(0x7d)));
  CHECK(FloatToF8e5m2(61440.0f) == 0x7b);  // halfway to 65536
  CHECK(FloatToF8e5m2(inf) == 0x7b);
  CHECK(FloatToF8e5m2(-inf) == 0xfb);
  CHECK(FloatToF8e5m2(std::numeric_limits<float>::quiet_NaN()) == 0x7f);
}

TEST_CASE("f64 and i64 round once, not through f32 or f64", "[numerics]") {
  // 1 + 2^-11 + 2^-40 is above the f16 tie 1 + 2^-11, so it rounds up to 0x3c01; through f32
  // (24 bits) it would first become the tie itself and then go to the even 0x3c00.
  double x = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  CHECK(EncodeFloat(Dtype::F16, x) == 0x3c01);
  CHECK(FloatToHalf(static_cast<float>(x)) == 0x3c00);
  // 2^62 + 2^54 + 1 is just above the bf16 tie 2^62 + 2^54 (the ulp at 2^62 is 2^55): it rounds up
  // to 2^62 + 2^55. bf16(2^62): exponent 62 + 127 = 0xbd, so 0 10111101 0000000 = 0x5e80; one ulp
  // more is 0x5e81. Through f64 (53 bits) it would become the tie and round to even, 0x5e80.
  std::int64_t big = (std::int64_t{1} << 62) + (std::int64_t{1} << 54) + 1;
  CHECK(EncodeFloatFromI64(Dtype::BF16, big) == 0x5e81);
  CHECK(EncodeFloatFromI64(Dtype::BF16, -big) == 0xde81);
  CHECK(EncodeFloatFromU64(Dtype::BF16, static_cast<std::uint64_t>(big)) == 0x5e81);
  CHECK(EncodeFloat(Dtype::BF16, static_cast<double>(big)) == 0x5e80);
  CHECK(EncodeFloatFromI64(Dtype::F8E4M3, 1000) == 0x7e);  // saturates
  CHECK(EncodeFloatFromI64(Dtype::F16, 65520) == 0x7c00);  // the overflow tie, as above
}

TEST_CASE("float to integer truncates saturates and maps NaN to 0", "[numerics]") {
  double nan = std::numeric_limits<double>::quiet_NaN();
  double inf = std::numeric_limits<double>::infinity();
  CHECK(CastToSigned(300.7, Dtype::I8) == 127);
  CHECK(CastToSigned(-300.0, Dtype::I8) == -128);
  CHECK(CastToSigned(-0.9, Dtype::I32) == 0);
  CHECK(CastToSigned(-2.5, Dtype::I32) == -2);
  CHECK(CastToSigned(nan, Dtype::I64) == 0);
  CHECK(CastToSigned(1e30, Dtype::I64) == std::numeric_limits<std::int64_t>::max());
  CHECK(CastToSigned(-inf, Dtype::I64) == std::numeric_limits<std::int64_t>::min());
  CHECK(CastToSigned(7.9, Dtype::I4) == 7);
  CHECK(CastToSigned(-9.0, Dtype::I4) == -8);
  CHECK(CastToUnsigned(-5.0, Dtype::U8) == 0);
  CHECK(CastToUnsigned(255.9, Dtype::U8) == 255);
  CHECK(CastToUnsigned(20.0, Dtype::U4) == 15);
  CHECK(CastToUnsigned(1e30, Dtype::U64) == std::numeric_limits<std::uint64_t>::max());
  CHECK(CastToUnsigned(nan, Dtype::Bool) == 1);  // bool is `!= 0`
  CHECK(CastToUnsigned(-0.0, Dtype::Bool) == 0);
}

TEST_CASE("integers wrap and i4 packs two to a byte", "[numerics]") {
  CHECK(WrapSigned(0xff, Dtype::I8) == -1);
  CHECK(WrapSigned(0x80, Dtype::I8) == -128);
  CHECK(WrapSigned(0x1f, Dtype::I4) == -1);
  CHECK(WrapUnsigned(0x1ff, Dtype::U8) == 0xff);
  HostTensor t = HostTensor::Zeros(Dtype::I4, {4});
  StoreInt64(t, 0, -8);
  StoreInt64(t, 1, 7);
  StoreInt64(t, 2, -1);
  StoreInt64(t, 3, 19);  // wraps: 19 = 0x13, low nibble 3
  // Element 2k in the low nibble: byte 0 = 0x7 << 4 | 0x8, byte 1 = 0x3 << 4 | 0xf.
  REQUIRE(t.bytes.size() == 2);
  CHECK(t.bytes[0] == 0x78);
  CHECK(t.bytes[1] == 0x3f);
  CHECK(LoadInt64(t, 0) == -8);
  CHECK(LoadInt64(t, 1) == 7);
  CHECK(LoadInt64(t, 2) == -1);
  CHECK(LoadInt64(t, 3) == 3);
  CHECK(LoadUint64(t, 2) == std::numeric_limits<std::uint64_t>::max());
  CHECK(LoadDouble(t, 0) == -8.0);
  StoreDouble(t, 1, -100.0);  // saturates to -8
  CHECK(LoadInt64(t, 1) == -8);
  CHECK(t.bytes[0] == 0x88);
  HostTensor u = HostTensor::Zeros(Dtype::U4, {2});
  StoreUint64(u, 1, 0xab);
  CHECK(u.bytes[0] == 0xb0);
  CHECK(LoadUint64(u, 1) == 0xb);
}

}  // namespace
}  // namespace weft::runtime
