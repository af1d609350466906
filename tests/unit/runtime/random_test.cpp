// `random` (runtime/include/weft/random.h): Philox-4x32-10 against Random123's published
// known-answer vectors, and the mapping of a block to each dtype checked from its definition.
#include "weft/random.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <set>

#include "weft/numerics.h"

namespace weft::runtime {
namespace {

using Block = std::array<std::uint32_t, 4>;

// Random123's kat_vectors for philox4x32 with 10 rounds: counter, key, expected block.
TEST_CASE("Philox4x32x10 matches Random123's known-answer vectors") {
  CHECK(Philox4x32x10({0, 0, 0, 0}, {0, 0}) == Block{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8});
  CHECK(Philox4x32x10({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}) ==
        Block{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd});
  CHECK(Philox4x32x10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}) ==
        Block{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1});
}

Block BlockOf(std::uint64_t seed, std::uint64_t index) {
  return Philox4x32x10({static_cast<std::uint32_t>(index), static_cast<std::uint32_t>(index >> 32), 0, 0},
                       {static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)});
}

HostTensor Random(Dtype dtype, std::vector<std::int64_t> shape, std::uint64_t seed) {
  HostTensor t{dtype, std::move(shape), {}};
  FillRandom(t, seed);
  REQUIRE(static_cast<std::int64_t>(t.bytes.size()) == ByteSize(dtype, t.Count()));
  return t;
}

TEST_CASE("random f32 and f64 are the top 24 bits of word 0 scaled by 2^-24") {
  const std::uint64_t seed = 0x0123456789abcdefULL;
  HostTensor f32 = Random(Dtype::F32, {4, 50}, seed);
  HostTensor f64 = Random(Dtype::F64, {200}, seed);
  for (std::int64_t i = 0; i < 200; ++i) {
    double expected = std::ldexp(static_cast<double>(BlockOf(seed, i)[0] >> 8), -24);
    CHECK(LoadDouble(f32, i) == expected);
    CHECK(LoadDouble(f64, i) == expected);
  }
}

// The nearest value of `dtype` to `x`, ties to the even pattern, found by looking at neighbours
// (independent of EncodeFloat's algorithm). @pre 0 <= x <= 1
bool IsNearest(Dtype dtype, std::uint64_t bits, double x) {
  double v = DecodeFloat(dtype, bits);
  double below = bits > 0 ? DecodeFloat(dtype, bits - 1) : -1.0;
  double above = DecodeFloat(dtype, bits + 1);
  double d = std::fabs(v - x);
  if (d > std::fabs(below - x) || d > std::fabs(above - x)) return false;
  if (d == std::fabs(below - x) || d == std::fabs(above - x)) return bits % 2 == 0;
  return true;
}

TEST_CASE("random narrow floats are the f32 value rounded to nearest even") {
  const std::uint64_t seed = 42;
  for (Dtype dtype : {Dtype::F16, Dtype::BF16, Dtype::F8E4M3, Dtype::F8E5M2}) {
    INFO("dtype " << Spelling(dtype));
    HostTensor t = Random(dtype, {3000}, seed);
    int ones = 0;
    for (std::int64_t i = 0; i < 3000; ++i) {
      double x = std::ldexp(static_cast<double>(BlockOf(seed, i)[0] >> 8), -24);
      std::uint64_t bits = LoadBits(t, i);
      CHECK(IsNearest(dtype, bits, x));
      double v = DecodeFloat(dtype, bits);
      CHECK(v >= 0.0);
      CHECK(v <= 1.0);
      ones += v == 1.0;
    }
    if (dtype == Dtype::F8E4M3 || dtype == Dtype::F8E5M2) CHECK(ones > 0);  // 1 - 2^-4 .. 1 rounds up
  }
}

TEST_CASE("random integers are the low bits of the block and bool its top bit") {
  const std::uint64_t seed = 0xfffffffffffffff0ULL;  // the i64 seed -16
  const std::int64_t n = 101;                        // odd: the last i4 byte is half used
  HostTensor i4 = Random(Dtype::I4, {n}, seed);
  HostTensor u4 = Random(Dtype::U4, {n}, seed);
  HostTensor i8 = Random(Dtype::I8, {n}, seed);
  HostTensor u16 = Random(Dtype::U16, {n}, seed);
  HostTensor i32 = Random(Dtype::I32, {n}, seed);
  HostTensor u32 = Random(Dtype::U32, {n}, seed);
  HostTensor i64 = Random(Dtype::I64, {n}, seed);
  HostTensor u64 = Random(Dtype::U64, {n}, seed);
  HostTensor b = Random(Dtype::Bool, {n}, seed);
  for (std::int64_t i = 0; i < n; ++i) {
    Block block = BlockOf(seed, i);
    std::uint32_t w0 = block[0];
    std::uint64_t w01 = w0 | static_cast<std::uint64_t>(block[1]) << 32;
    CHECK(LoadInt64(i4, i) == static_cast<std::int64_t>(w0 & 15) - ((w0 & 8) ? 16 : 0));
    CHECK(LoadUint64(u4, i) == (w0 & 15));
    CHECK(LoadInt64(i8, i) == static_cast<std::int8_t>(w0 & 0xff));
    CHECK(LoadUint64(u16, i) == (w0 & 0xffff));
    CHECK(LoadInt64(i32, i) == static_cast<std::int32_t>(w0));
    CHECK(LoadUint64(u32, i) == w0);
    CHECK(static_cast<std::uint64_t>(LoadInt64(i64, i)) == w01);
    CHECK(LoadUint64(u64, i) == w01);
    CHECK(LoadUint64(b, i) == (w0 >> 31));
  }
  CHECK(i4.bytes.back() >> 4 == 0);  // the unused nibble stays zero
}

TEST_CASE("random depends on the seed and the flat index only") {
  HostTensor flat = Random(Dtype::F32, {24}, 7);
  HostTensor cube = Random(Dtype::F32, {2, 3, 4}, 7);
  CHECK(flat.bytes == cube.bytes);
  CHECK(Random(Dtype::F32, {24}, 8).bytes != flat.bytes);
  CHECK(Random(Dtype::F32, {24}, 7 + (std::uint64_t{1} << 32)).bytes != flat.bytes);  // the key's high word counts
  HostTensor scalar = Random(Dtype::F32, {}, 7);
  CHECK(LoadDouble(scalar, 0) == LoadDouble(flat, 0));
  HostTensor empty = Random(Dtype::F32, {0, 3}, 7);
  CHECK(empty.bytes.empty());
}

TEST_CASE("random values are spread uniformly") {
  const std::int64_t n = 100000;
  HostTensor f = Random(Dtype::F32, {n}, 2024);
  HostTensor b = Random(Dtype::Bool, {n}, 2024);
  HostTensor u8 = Random(Dtype::U8, {n}, 2024);
  double sum = 0;
  std::int64_t trues = 0;
  std::set<std::uint64_t> bytes_seen;
  int low_decile = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    double v = LoadDouble(f, i);
    REQUIRE(v >= 0.0);
    REQUIRE(v < 1.0);
    sum += v;
    low_decile += v < 0.1;
    trues += LoadUint64(b, i);
    bytes_seen.insert(LoadUint64(u8, i));
  }
  // Five standard deviations: 1/sqrt(12 n) for the mean, sqrt(n)/2 for the count of trues.
  CHECK(std::fabs(sum / n - 0.5) < 5 * 0.000913);
  CHECK(std::abs(trues - n / 2) < 5 * 159);
  CHECK(std::abs(low_decile - n / 10) < 5 * 95);
  CHECK(bytes_seen.size() == 256);
}

}  // namespace
}  // namespace weft::runtime
