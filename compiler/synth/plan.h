// What layout synthesis decides for one kernel on one target: a layout for every Shared and Reg tile
// and an instruction for every operation, with the costs that ranked them. Indexed by the tile IR's
// ids (plan.values[v.index] for tile::ValueId v, plan.ops[o.index] for tile::OpId o). `weft explain`
// prints it; the thread-level simulator (synth/simulate) and codegen execute it.
//
// Conventions (layout/tv_layout.h): a tile of rows x cols is indexed column-major, row + rows * col;
// a rank-1 tile of n elements is n x 1. A Reg tile's TV layout covers the whole block:
// (thread in 0..threads, value) -> (row, col); a value held by several threads (a reduction's result)
// is a broadcast. A Shared tile's layout maps (row, col) to an element offset in its buffer, swizzle
// included; byte address = shared_offset + stage * stage_bytes + offset * element bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "layout/atoms.h"
#include "layout/bank_conflicts.h"
#include "layout/swizzle.h"
#include "layout/tv_layout.h"

namespace weft::synth {

enum class Target : std::uint8_t { Sm80, Sm90a };
std::string_view Spelling(Target target);  // "sm_80", "sm_90a"

struct ValueChoice {
  // Shared tiles
  std::optional<layout::SwizzledLayout> shared;
  std::int64_t shared_offset = 0;  // bytes from the start of the block's shared memory
  std::int64_t stage_bytes = 0;    // bytes of one copy of the tile
  int stages = 1;                  // copies of a tile loaded inside a pipeline (the ring's depth)
  // Reg tiles
  std::optional<layout::TvLayout> regs;
  bool pinned = false;  // the program wrote this layout
};

// One shared-memory access pattern of an op (per warp, per instruction), costed exactly.
struct Access {
  std::string what;  // "cp.async writes of sa", "ldmatrix reads of sb"
  layout::BankConflicts conflicts;
};

struct OpChoice {
  // The instruction: an atom's name (layout::FindAtom) such as `cp.async.cg.16`, `ldmatrix.x4`,
  // `ldmatrix.x4.trans`, `mma.m16n8k16.bf16`, `wgmma.m64n128k16.bf16`, `tma.2d`, `st.global.v4`,
  // or a description for ops without an atom (`shfl.bfly x2`, `elementwise`, `none: wgmma reads it
  // from shared memory`).
  std::string instruction;
  // Copies: which thread moves which elements. (thread, v) -> the (row, col) of the first element
  // of the thread's v-th vector; a vector is vector_bytes of consecutive elements along the tile's
  // last axis (its contiguous axis in global memory).
  std::optional<layout::TvLayout> copy;
  int vector_bytes = 0;
  std::optional<layout::TmaBox> tma;  // a TMA copy: the box (global fields symbolic ones left 0)
  // Mma: the tiling of warps (sm_80) or warpgroups (sm_90a) over the M x N tile.
  int warps_m = 1, warps_n = 1;
  std::int64_t instructions_per_thread = 0;  // per execution of the op
  std::int64_t bytes = 0;                    // bytes moved per execution (copies), block-wide
  std::vector<Access> accesses;
};

struct Plan {
  Target target = Target::Sm80;
  std::int64_t threads = 0;  // the block size
  std::vector<ValueChoice> values;
  std::vector<OpChoice> ops;
  std::int64_t shared_bytes = 0;
  int registers_per_thread = 0;  // an estimate
  // How the choice was made: candidates considered, the cost of the chosen one, whether it is
  // proved optimal for that cost (exhaustive search, or Z3's optimizer within its resource limit),
  // and the time it took (not printed with --no-timings).
  std::int64_t candidates = 0;
  std::string objective;
  bool optimal = false;
  double seconds = 0;
};

}  // namespace weft::synth
