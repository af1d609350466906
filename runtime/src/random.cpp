// `random` (random.h; the decisions are in docs/runtime.md). Philox-4x32-10 as published:
//
// 1. A round multiplies counter words 0 and 2 by 0xD2511F53 and 0xCD9E8D57 into 64-bit products
//    and mixes: (hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0).
// 2. Between rounds the key is bumped by the Weyl constants 0x9E3779B9 and 0xBB67AE85.
// 3. Ten rounds give the block; element i of a tensor uses the block of counter i.
#include "weft/random.h"

#include "weft/numerics.h"

namespace weft::runtime {

std::array<std::uint32_t, 4> Philox4x32x10(std::array<std::uint32_t, 4> counter, std::array<std::uint32_t, 2> key) {
  constexpr std::uint64_t kMul0 = 0xD2511F53;
  constexpr std::uint64_t kMul1 = 0xCD9E8D57;
  constexpr std::uint32_t kWeyl0 = 0x9E3779B9;
  constexpr std::uint32_t kWeyl1 = 0xBB67AE85;
  std::array<std::uint32_t, 4> c = counter;
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key[0] += kWeyl0;
      key[1] += kWeyl1;
    }
    std::uint64_t p0 = kMul0 * c[0];
    std::uint64_t p1 = kMul1 * c[2];
    c = {static_cast<std::uint32_t>(p1 >> 32) ^ c[1] ^ key[0], static_cast<std::uint32_t>(p1),
         static_cast<std::uint32_t>(p0 >> 32) ^ c[3] ^ key[1], static_cast<std::uint32_t>(p0)};
  }
  return c;
}

std::uint64_t RandomElement(Dtype dtype, std::uint64_t seed, std::uint64_t index) {
  const std::array<std::uint32_t, 2> key = {static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)};
  const int bits = Bits(dtype);
  const std::uint64_t mask = bits == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1;
  std::array<std::uint32_t, 4> block =
      Philox4x32x10({static_cast<std::uint32_t>(index), static_cast<std::uint32_t>(index >> 32), 0, 0}, key);
  if (dtype == Dtype::Bool) return block[0] >> 31;
  if (IsFloatDtype(dtype)) {
    // An integer below 2^24 times a power of two: exact in f32, so rounding happens once, here.
    double value = static_cast<double>(block[0] >> 8) * 0x1p-24;
    return EncodeFloat(dtype, value);
  }
  return (block[0] | static_cast<std::uint64_t>(block[1]) << 32) & mask;
}

void FillRandom(HostTensor& out, std::uint64_t seed) {
  const std::int64_t count = out.Count();
  out.bytes.assign(static_cast<std::size_t>(ByteSize(out.dtype, count)), 0);
  for (std::int64_t i = 0; i < count; ++i)
    StoreBits(out, i, RandomElement(out.dtype, seed, static_cast<std::uint64_t>(i)));
}

}  // namespace weft::runtime
