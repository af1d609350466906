// The cost model: a kernel's predicted time from the code it lowers to (docs/scheduling.md, "Cost
// model"). The solver's schedule (schedule.h) is what the compiler would like to run; the
// prediction is of what code generation emits today, so that it can be checked against the device
// (bench/cost/predict.py).
//
//   1. Sizes and scalars: those the caller gives (`weft explain --size`, `--scalar`); a size not
//      given is 4096 (16 for one that only indexes leading axes, such as attention's `bh`), a scalar
//      0 or false. The grid's blocks are evaluated at those values, and the loop's trip count for
//      each block (its bound may read block indices: causal attention's `minimum (i + 1) (t / 128)`).
//   2. What the loop lowers to: the solver's roles, as codegen lowers them (the lowering's
//      StagedProduct rule, lowering.h): a schedule with a producer is warp-specialized: a producer warpgroup, and
//      consumer warpgroups that take turns at the tensor cores when there are two (ping-pong, codegen's
//      default) and run in lock-step otherwise. A product whose result only goes around the loop,
//      accumulating into something computed from the carried value (attention's `mma P V (acc *
//      alpha)`), A in registers, B a shared tile, is staged: issued in the next iteration right after
//      the first product, waited for just before the body reads the carried value. Else: the TMA or
//      cp.async ring, whose warps issue the body in program order and meet at one block barrier an
//      iteration.
//   3. One iteration of the lowered loop (cycles): in ping-pong, one warpgroup's chain: its share
//      of each product it waits for, with the wgmma latency and its turn (a named barrier), its share
//      of the staged product, its vector work as a lone warp on each sub-partition (ALU instructions
//      `lone_warp_issue` cycles apart, plus its SFU cycles), a barrier; in lock-step, every product's
//      tensor-core time and latency, the consumers' vector work interleaved (a group at the longer of
//      its ALU issue and SFU cycles) or the staged product under it, a barrier; the ring, the body's
//      issue in program order (a product waited for at its latency) plus the barrier and the copies'
//      issue. Each is at least the busiest unit's cycles (copy engine, tensor cores: both
//      warpgroups' products). Vector work is that of the body codegen emits for the given scalars: a
//      bool parameter the body reads is decided once (codegen emits the body per value), so ops it
//      makes constant or dead (causal's mask when causal is false) cost nothing; a zero `fill` that a
//      wgmma accumulates into costs nothing (scale-d 0); an i64 elementwise op is two instructions.
//   4. One block: a prologue (the copy latency, then the tiles loaded before the loop and one
//      iteration's tiles at the block's share of HBM bandwidth: every SM starts at once), trip x the
//      iteration, an epilogue (the vector work after the loop at the ALU issue rate, the stores at
//      the share of HBM bandwidth).
//   5. Blocks to SMs: the blocks in launch order (x fastest), each to the first free slot of
//      `blocks per SM` x SMs, as the hardware's block scheduler does: waves, the tail of the last
//      one, and uneven blocks (causal) come out of it. Blocks per SM from shared memory, registers
//      (a warp-specialized kernel takes the whole register file: setmaxnreg) and threads; blocks that
//      share an SM share its units.
//   6. The kernel: the launch, then the last block's end; at least every tensor parameter read or
//      written once at the HBM bandwidth (the memory bound).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "schedule/machine.h"
#include "synth/plan.h"
#include "tile/ir.h"

namespace weft::schedule {

struct LoopSchedule;

// The registers a thread of a warp-specialized kernel's consumer warpgroups get (setmaxnreg): the
// producer warpgroup keeps 24 (FlashAttention-3's split), the consumers share the rest of the
// file's share of a block (64K registers: 512 a thread over the warpgroups), up to 256, in steps of
// 8.
int ConsumerRegisters(std::int64_t threads, int blocks_per_sm);

// The fewest registers a consumer thread may get (the solver's register constraint, schedule.cpp):
// a warpgroup's 64 x 128 f32 tiles and its operands spill under it. Attention at head dim 64 (two
// warpgroups, two blocks a multiprocessor: 112 each with a producer) runs without a producer, the
// other block's warps hiding the copies: 1.02-1.21x faster than 64 rows a block of one warpgroup
// with a producer, measured (a producer at 112 registers was not measured).
inline constexpr int kMinConsumerRegisters = 128;

// The wgmma products of `loop` that only accumulate into a carried value (the product yielded as
// the value it accumulates into, each read once: the gemm's accumulator), whose waits codegen
// defers to the next iteration; `carried`, when given, gets their carried values' indices.
std::set<std::uint32_t> DeferredProducts(const tile::Kernel& kernel, const synth::Plan& plan,
                                         const tile::op::Loop& loop, std::vector<std::size_t>* carried = nullptr);

// Whether codegen can lower `loop` warp-specialized (lowering.h, WarpRolesCandidate), as far
// as the IR and the plan decide it: on sm_90a, a block of two or more warpgroups, or of one where
// `blocks_per_sm` >= 2 (one warpgroup alone gains nothing from a producer of its own and loses
// occupancy, measured), `loop` the kernel's one top-level `pipeline`, no loop in its body, a wgmma
// in it. That its copies are TMA copies the callers check, each on its own view of them; whether a
// producer pays is the solver's answer (schedule.h: the least II, and a producer only where it
// shortens it).
bool WarpSpecializable(const tile::Kernel& kernel, const synth::Plan& plan, const tile::op::Loop& loop,
                       int blocks_per_sm);

struct Graph;

// WarpSpecializable for the loop of `graph`, whose loads are all TMA copies: the solver tries a
// producer warpgroup only where this holds (schedule.cpp).
bool ProducerLowerable(const tile::Kernel& kernel, const synth::Plan& plan, const Graph& graph, int blocks_per_sm);

// Step 1's inputs: sizes and scalar parameters by name (absent: the defaults above).
struct CostInputs {
  std::map<std::string, std::int64_t> sizes;
  std::map<std::string, double> scalars;  // bool: 1 or 0
  std::int64_t default_size = 4096;
};

struct Prediction {
  std::string sizes;    // "m = 4096, k = 4096, n = 4096", then scalars: "causal = false"
  std::string machine;  // "H100 SXM"
  std::string lowered;  // "warp-specialized: 2 consumer warpgroups in ping-pong, mma 67:6 staged ...", "TMA ring"
  std::int64_t blocks = 0;
  std::int64_t trip = 0;  // iterations of the pipeline in the longest block
  std::int64_t trip_min = 0;
  double trip_mean = 0;
  int blocks_per_sm = 1;
  double waves = 0;             // blocks / (SMs x blocks per SM)
  double iteration = 0;         // cycles of one iteration of the lowered loop (step 3)
  double folded_iteration = 0;  // ... where codegen folds its masks to true (all but `masked` a block)
  double masked = 0;            // iterations a block, on average, whose masks are not all true
  double prologue = 0;          // cycles of a block before its loop (step 4)
  double epilogue = 0;          // and after it
  double flops = 0;             // mma flops of the whole kernel
  double schedule_seconds = 0;  // steps 5 and 6 without the memory bound
  double memory_seconds = 0;    // the memory bound
  double seconds = 0;           // the prediction
  std::string bound;            // "schedule" or "memory"
  std::string note;             // what was assumed (an unknown trip count)
};

Prediction Predict(const tile::Kernel& kernel, const synth::Plan& plan, const LoopSchedule& loop,
                   const Machine& machine, const CostInputs& inputs);

}  // namespace weft::schedule
