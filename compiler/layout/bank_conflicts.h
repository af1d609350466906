// Exact shared-memory bank-conflict counts for one warp's access. Layout synthesis ranks candidate
// shared layouts and swizzles by this number, and `weft explain` prints it per tile.
//
// The model (the one Nsight Compute's "shared memory wavefronts" follow for these accesses):
//   1. shared memory has 32 banks of 4 bytes; byte address a is in bank (a / 4) % 32;
//   2. a warp's request is split into phases of 128 bytes' worth of lanes: 32 lanes for accesses of
//      1, 2 or 4 bytes, 16 lanes (half warps) for 8 bytes, 8 lanes (quarter warps) for 16 bytes;
//      ldmatrix/stmatrix are 16-byte row accesses, one phase per 8x8 matrix;
//   3. in a phase, lanes touching the same 4-byte word share it (broadcast), and a bank that holds k
//      distinct words needs k wavefronts: the phase needs max over banks of k (at least 1);
//   4. the request needs the sum over phases; inactive lanes take no part.
#pragma once

#include <cstdint>
#include <vector>

#include "layout/result.h"

namespace weft::layout {

struct LaneAccess {
  std::int64_t address = 0;  // bytes
  int bytes = 4;             // 1, 2, 4, 8 or 16; the same for every active lane
  bool active = true;
};

struct BankConflicts {
  int wavefronts = 0;  // what the access costs
  int ideal = 0;       // the fewest possible for this many bytes: one per phase that has active lanes
  int phases = 0;
  // wavefronts / ideal: 1 means conflict-free
  int ways() const { return ideal == 0 ? 0 : wavefronts / ideal; }
};

// @pre at most 32 lanes; the active lanes share a width in {1,2,4,8,16}; each address is aligned to it
// @post ideal <= wavefronts <= number of active lanes * max(1, bytes / 4)
Result<BankConflicts> CountBankConflicts(const std::vector<LaneAccess>& lanes);

}  // namespace weft::layout
