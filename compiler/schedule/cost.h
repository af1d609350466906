// The cost model: a kernel's predicted time from its schedule (docs/scheduling.md, "Cost model").
//
//   1. Sizes: every size variable at the caller's value (`weft explain`: 4096; 16 for one that only
//      indexes leading axes, such as attention's `bh`), scalar parameters 0
//      or false (so attention is predicted non-causal); the grid's blocks and the loop's trip count
//      are evaluated from the tile IR at those values.
//   2. Blocks per SM: the least of shared memory (228 KB per SM), registers (65536 per SM) and
//      threads (2048 per SM) allow.
//   3. One block: the first iteration's length (its last result, from the schedule) plus II for each
//      further iteration, plus storing the outputs at the copy rate.
//   4. A wave of b blocks per SM: b blocks share the SM's units, so a wave takes the longer of one
//      block's time and b times the units' busy cycles; waves = ceil(blocks / (SMs * b)).
//   5. Memory: every tensor parameter read or written once from HBM at the machine's bandwidth.
//   The prediction is the larger of 4 and 5, with which one bounds it.
#pragma once

#include <cstdint>
#include <string>

#include "schedule/machine.h"
#include "synth/plan.h"
#include "tile/ir.h"

namespace weft::schedule {

struct LoopSchedule;

struct Prediction {
  std::string sizes;  // "m = 4096, k = 4096, n = 4096"
  std::int64_t blocks = 0;
  std::int64_t trip = 0;  // iterations of the pipeline per block
  int blocks_per_sm = 1;
  std::int64_t waves = 0;
  double flops = 0;             // mma flops of the whole kernel
  double schedule_seconds = 0;  // step 4
  double memory_seconds = 0;    // step 5
  double seconds = 0;
  std::string bound;  // "schedule" or "memory"
  std::string note;   // what was assumed (an unknown trip count)
};

Prediction Predict(const tile::Kernel& kernel, const synth::Plan& plan, const LoopSchedule& loop,
                   const Machine& machine, std::int64_t default_size);

}  // namespace weft::schedule
