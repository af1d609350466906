// How each loop of a kernel is lowered: every decision code generation carries out about a
// `pipeline` (which ops form the ring's copy slice and how deep the ring is, TMA or cp.async, the
// sm_80 gemm's operand ring, which products wait one iteration late, the warp roles and their
// registers, ping-pong, the staged product, persistence, the barrier protocol), made once here from
// the tile IR, the plan and the solver's schedule (schedule.h) and read by codegen, which decides
// none of it (docs/codegen.md says what each lowers to).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "schedule/protocol.h"
#include "synth/plan.h"
#include "tile/ir.h"

namespace weft::schedule {

// The choices a caller of the schedule makes (`weft build` takes the defaults; codegen's tests and
// tests/gpu vary them).
struct LoweringOptions {
  // sm_90a: a producer warpgroup issues a pipeline's TMA copies (docs/codegen.md), where the
  // solver's schedule has one; the block is then `threads` of the kernel plus 128. Off: the whole
  // block runs the ring, as on sm_80.
  bool warp_specialize = true;
  // ... and its two consumer warpgroups take turns at the tensor cores (ping-pong, FlashAttention-3's
  // named-barrier hand-over): with staged products, attention measured 1-16% faster with it on an
  // H100 at 10 of 12 points, within 1% at the others (docs/codegen.md).
  bool ping_pong = true;
  // A pipeline's last product, whose result only goes around the loop (attention's P V), is issued
  // in the next iteration behind its first product, so the vector work between them overlaps it
  // (FlashAttention-3's intra-warpgroup overlap; docs/codegen.md, "Staged products").
  bool stage_products = true;
  // A warp-specialized kernel is persistent: each block loops over the grid's blocks (linearized,
  // from its own index with the launched grid's stride), so the producer runs into the next
  // block's copies while the consumers finish this one's. Any launched grid covers the kernel's
  // grid; DeviceKernel::persistent tells the launcher to launch as many blocks as the GPU holds at
  // once. Off by default: with this static assignment of blocks, attention measured 1-7% slower
  // non-causal and up to 37% slower causal on an H100 than the hardware's block scheduler
  // (docs/codegen.md, "Persistent kernels").
  bool persistent = false;
  // sm_90a: a top-level `store` of a register tile whose threads store under 8 bytes at a time
  // (bf16 and f16 accumulators), after the kernel's last use of shared memory, goes through shared
  // memory and TMA, whole 128-byte lines (codegen's TmaStoreSpec says which qualify); the `out`
  // tensor gets a tensor map (DeviceKernel::tensor_maps). Off, or in a persistent kernel: each
  // thread stores its own elements (docs/codegen.md, "Epilogues through shared memory").
  bool tma_store = true;
  // Blocks a multiprocessor must hold at once (PTX .minnctapersm: ptxas keeps the registers a thread
  // uses within the file's share); 0: the plan's where above 1, else no bound.
  int min_blocks = 0;
};

// The ring of one `pipeline`: its copies (and the pure ops they read) are issued `stages - 1`
// iterations ahead into `stages` slots of their shared tiles.
struct Ring {
  std::vector<tile::OpId> copies;  // the copy slice in body order; empty: no ring (the loop runs plainly)
  int stages = 0;
  bool tma = false;               // TMA copies completing on mbarriers (else cp.async groups)
  std::int64_t tma_bytes = 0;     // the bytes a slot's TMA copies bring (the mbarrier's tx count)
  std::optional<tile::OpId> mma;  // sm_80: the one mma.sync whose operands are loaded a slice ahead
  // wgmma products that only accumulate into a carried value: each waits for the previous
  // iteration's products only (TMA rings).
  std::set<std::uint32_t> deferred;
  std::vector<std::size_t> deferred_carried;  // their carried values' indices
  std::optional<Protocol> protocol;           // the ring's barrier protocol, for the deadlock check
};

// A warp-specialized kernel (sm_90a; docs/codegen.md, "Warp specialization"): a producer warpgroup
// past the kernel's threads issues the one pipeline's copies; the kernel's threads consume.
struct WarpRoles {
  tile::OpId loop;
  std::vector<tile::OpId> prelude;  // the top-level ops before the loop that its copies and bound read
  int stages = 0;
  int producer_registers = 0, consumer_registers = 0;  // setmaxnreg (0: none)
  bool ping_pong = false;                              // two consumer warpgroups take turns at the tensor cores
  // The consumers' staged product and its carried value's index.
  std::optional<std::pair<tile::OpId, std::size_t>> staged;
  bool persistent = false;  // each block loops over the grid's blocks
};

struct Lowering {
  std::map<std::uint32_t, Ring> rings;  // by the `pipeline` op's index; a loop absent runs plainly
  std::optional<WarpRoles> roles;       // warp-specialized, or the whole block runs every ring
  bool tma_store = true;                // stores may go through shared memory and TMA
  int min_blocks = 0;                   // .minnctapersm (0: none)
  const Ring* RingOf(tile::OpId loop) const;
};

// Registers a consumer of a warp-specialized kernel may use, and whether codegen could lower `loop`
// warp-specialized: see cost.h (ConsumerRegisters, WarpSpecializable).

// The blocks a multiprocessor must hold (LoweringOptions::min_blocks, else the plan's where above 1).
int MinBlocks(const synth::Plan& plan, const LoweringOptions& options);

// The warp roles the kernel would have if the solver's schedule of their loop has a producer: all
// but that question decided (nullopt: not lowerable warp-specialized, or not asked for).
std::optional<WarpRoles> WarpRolesCandidate(const tile::Kernel& kernel, const synth::Plan& plan,
                                            const LoweringOptions& options);

// The staged product of a warp-specialized `loop` (docs/codegen.md, "Staged products") and its
// carried value's index: with no deferred product, a wgmma yielded as carried value `c` and read by
// nothing else, accumulating into something computed from `c` (attention's `acc * expand alpha`),
// A computed in registers in the body, B a shared tile that stays put until the next iteration's
// wait (a TMA ring tile of the loop, or a tile from before it), behind another wgmma that comes
// before the body first reads `c`. It is issued in the next iteration right after that iteration's
// first product and waited for just before the body reads `c`.
std::optional<std::pair<tile::OpId, std::size_t>> StagedProduct(const tile::Kernel& kernel, const synth::Plan& plan,
                                                                const tile::op::Loop& loop);
// Whether the zeroed 1 KiB block a staged product's first issue reads fits in shared memory beside
// the plan's tiles and a ring of `stages` slots' mbarriers.
bool StagedBlockFits(const synth::Plan& plan, int stages);

// Every `pipeline`'s ring, given the warp roles chosen.
std::map<std::uint32_t, Ring> Rings(const tile::Kernel& kernel, const synth::Plan& plan,
                                    const std::optional<WarpRoles>& roles);

}  // namespace weft::schedule
