// `random shape seed` (language.md, host-only built-ins): a counter-based generator, so element i's
// value depends only on the seed and i, and the CPU and GPU produce the same bits in any order.
// Philox-4x32-10 (Salmon et al., "Parallel Random Numbers: As Easy as 1, 2, 3", SC11) keyed by the
// seed, counter = flat index; docs/runtime.md states how a block becomes each dtype's value.
#pragma once

#include <array>
#include <cstdint>

#include "weft/tensor.h"

namespace weft::runtime {

// One Philox-4x32-10 block: ten rounds of the counter under the key, the key bumped between rounds.
std::array<std::uint32_t, 4> Philox4x32x10(std::array<std::uint32_t, 4> counter, std::array<std::uint32_t, 2> key);

// Fills every element of `out` (its dtype and shape as given; its bytes are resized to fit) with `random`'s value for
// `seed`: block i = Philox4x32x10({i low 32, i high 32, 0, 0}, {seed low 32, seed high 32}); then
//   floats:   (word0 >> 8) * 2^-24, an f32 in [0, 1), rounded once (RNE) to the dtype (exact for
//             f32 and f64; f16, bf16 and f8 may round up to 1.0);
//   integers: the low bits of word0 (64-bit dtypes: word0 | word1 << 32), as the dtype reads them;
//   bool:     the top bit of word0.
void FillRandom(HostTensor& out, std::uint64_t seed);

// The bits of element `index` of `random` of `dtype` for `seed` (what FillRandom stores there; the
// low Bits(dtype) bits, zero above).
std::uint64_t RandomElement(Dtype dtype, std::uint64_t seed, std::uint64_t index);

}  // namespace weft::runtime
