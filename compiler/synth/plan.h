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
//
// Changes since the contract of 9959e88 (synth owns this file; consumers: compiler/sim, codegen):
//   - ValueChoice: `swizzle_mode` (the TMA/wgmma mode of a Shared tile on sm_90a), `registers`
//     (32-bit registers per thread a Reg tile takes), `mma_operand` (a `regs` result that a wgmma
//     reads from shared memory has no Reg layout: `regs` is empty and this names the Shared tile).
//   - OpChoice: `desc_a`/`desc_b` with `a_mn_major`/`b_mn_major` (wgmma descriptors, start 0: add
//     the tile's byte address, and 32 bytes per k16 step for K-major or 2 * SBO for MN-major),
//     `a_from_shared`, `mma_n` (the wgmma instruction's N), `tma_boxes` (boxes per copy: box b
//     covers columns [b * box_dims[0], (b + 1) * box_dims[0]) and lands at byte b * box bytes of the
//     stage; the map is 2-D over the tensor with its leading axes flattened into rows, so a tile of
//     a rank-3 tensor at (z, i, j) is the box at column j * cols, row z * extent(1) + i * rows),
//     `shuffles`/`shared_trip` (reductions), `note`.
//   - Plan: `kernel`, `cost`, `notes` (decisions worth printing: stages reduced, ...).
//   - ldmatrix convention: instruction i of a thread (copy value i) fills the Reg tile's values
//     [2 * count * i, 2 * count * (i + 1)): register j of the instruction holds values
//     2 * (count * i + j) and 2 * (count * i + j) + 1. `copy` gives, per (thread, i), the (row, col)
//     of the 16-byte row of the shared tile whose address the thread supplies (lanes past 8 * count
//     supply none; their entries repeat lane % (8 * count)).
//   - Transposed shared views (tile op Transpose, `regs (transpose sb)`): the view's ValueChoice
//     has `shared` = its parent's layout with the two modes swapped, the parent's swizzle and mode,
//     and no memory of its own (stage_bytes 0, stages and offset unset: address it through the
//     parent's buffer). A `regs` of a view gives its `copy` in the *parent's* coordinates (the
//     parent's last axis is the contiguous one): element (r, c) of the copy is element (c, r) of
//     the `regs` result. wgmma reading B through a view has `b_mn_major` false and `desc_b` the
//     parent's K-major descriptor; reading A through one, `a_mn_major` true and an MN-major
//     `desc_a` of the view's layout.
//   - Streamed mma operands (ValueChoice::streamed, sm_80): a `regs r` of a shared tile (or of a
//     transposed view) whose every use is the A or B operand of an mma.sync is loaded where it is
//     used, one k16 slice at a time, not where the `regs` stands. With K the mma's depth and
//     S = K / 16, slice s is the k range [16 s, 16 s + 16): columns of A, rows of B. Synthesis
//     streams r only when (a) each thread's Reg values are slice-major: with V = regs->values(),
//     value v of every thread lies in slice v / (V / S), so slice s is values [s V / S, (s + 1) V / S)
//     (TileMma's order: k repeats outermost); and (b) the ToRegs op's copy splits into whole slices:
//     with I = copy->values() instructions per thread (I % S == 0), instruction i (ldmatrix i fills
//     values [2 count i, 2 count (i + 1)), a vector of n elements values [n i, n (i + 1))) belongs
//     to slice i / (I / S), so slice s is instructions [s I / S, (s + 1) I / S) with the op's copy
//     addresses, instruction name and vector bytes unchanged. Codegen: the ToRegs op emits nothing
//     where it stands; each mma reading r issues, before its k-steps of slice s (every m16n8k16 with
//     k0 = 16 s, over all of the warp's m and n atoms), slice s's instructions into registers that
//     slice s + 1 may reuse (or double-buffer: load s + 1 before the mma of s). The shared tile is
//     read at the mma, so it is read once per execution of the mma: attention's Q, loaded by a
//     `regs` before the pipeline, is re-read from shared memory every iteration, as FlashAttention-2
//     does (shared tiles are never reused for another tile, so Q's bytes stay there). Loading the
//     whole tile at the ToRegs op instead (the contract before this change) computes the same
//     values with more registers. The simulator loads streamed operands slice by slice at the mma
//     and checks that slice s's instructions deliver exactly slice s's values.
//   - Plan::registers_per_thread: registers live at the busiest op (a liveness estimate: tiles from
//     definition to last use, a value read inside a loop live through the loop, elementwise ops and
//     accumulators in place), streamed operands one slice at their mma, plus 16.
//   - An mma operand's TV layout may equal the tiled atom's only up to the order of each thread's
//     values (attention's P, in the accumulator layout of the first mma, as the A operand of the
//     second): codegen finds each fragment register's value by its (row, col).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "layout/atoms.h"
#include "layout/bank_conflicts.h"
#include "layout/swizzle.h"
#include "layout/tv_layout.h"
#include "synth/instruction.h"

namespace weft::synth {

enum class Target : std::uint8_t { Sm80, Sm90a };
std::string_view Spelling(Target target);  // "sm_80", "sm_90a"

// What chose the plan among the candidates (choose.h): Z3's optimizer, or the exhaustive search
// that is its test oracle.
enum class Chooser : std::uint8_t { kZ3, kSearch };
std::string_view Spelling(Chooser chooser);  // "Z3", "exhaustive search"

struct ValueChoice {
  // Shared tiles
  std::optional<layout::SwizzledLayout> shared;
  std::int64_t shared_offset = 0;  // bytes from the start of the block's shared memory
  std::int64_t stage_bytes = 0;    // bytes of one copy of the tile
  int stages = 1;                  // copies of a tile loaded inside a pipeline (the ring's depth)
  // Reg tiles
  layout::SwizzleMode swizzle_mode = layout::SwizzleMode::kNone;  // sm_90a TMA/wgmma tiles
  std::optional<layout::TvLayout> regs;
  int registers = 0;    // 32-bit registers per thread that a Reg tile takes
  bool pinned = false;  // the program wrote this layout
  // A `regs s` that a wgmma reads from shared memory: no Reg layout; the Shared tile s.
  std::optional<std::uint32_t> mma_operand;
  // sm_80: a `regs` operand of mma.sync loaded one k16 slice at a time right before the mma steps
  // that read it, never held whole (the header's "Streamed mma operands"); `registers` is still the
  // whole tile's, and the estimate counts registers / (K / 16) of it, at the mma only.
  bool streamed = false;
};

// One shared-memory access pattern of an op, costed exactly: CountBankConflicts of every
// instruction of every warp in one execution of the op, summed (wavefronts, ideal and phases).
struct Access {
  std::string what;  // "cp.async writes of sa", "ldmatrix reads of sb"
  layout::BankConflicts conflicts;
};

struct OpChoice {
  // The instruction: one of instructions.def's kinds with its parameters (instruction.h). Readers
  // switch over instruction.kind; Spelling(instruction) is what `weft explain` prints (`cp.async.cg.16`,
  // `ldmatrix.x4.trans`, `wgmma.m64n128k16.bf16`, `shfl.bfly x2`, `none: a view`, ...).
  Instruction instruction;
  // Copies: which thread moves which elements. (thread, v) -> the (row, col) of the first element
  // of the thread's v-th vector; a vector is vector_bytes of consecutive elements along the tile's
  // last axis (its contiguous axis in global memory).
  std::optional<layout::TvLayout> copy;
  int vector_bytes = 0;
  std::optional<layout::TmaBox> tma;  // a TMA copy: the box (global fields symbolic ones left 0)
  // Mma: the tiling of warps (sm_80) or warpgroups (sm_90a) over the M x N tile.
  int warps_m = 1, warps_n = 1;
  // wgmma (sm_90a): the instruction's N, descriptors (start address 0) and whether A is read from
  // shared memory (else from registers in the atom's A layout).
  int mma_n = 0;
  bool a_from_shared = false;
  std::optional<layout::GmmaDescriptor> desc_a, desc_b;
  bool a_mn_major = false, b_mn_major = false;
  int tma_boxes = 0;
  // Reductions along the last axis: butterfly shuffles per value, and whether the row spans several
  // warps (partial results go through shared memory).
  int shuffles = 0;
  bool shared_trip = false;
  std::string note;                          // one line for `weft explain`
  std::int64_t instructions_per_thread = 0;  // per execution of the op
  std::int64_t bytes = 0;                    // bytes moved per execution (copies), block-wide
  std::vector<Access> accesses;
};

struct Plan {
  std::string kernel;
  Target target = Target::Sm80;
  std::int64_t threads = 0;  // the block size
  std::vector<ValueChoice> values;
  std::vector<OpChoice> ops;
  std::int64_t shared_bytes = 0;
  // Blocks a multiprocessor is to hold at once (1 unless said): 2 for an sm_90a block of one
  // warpgroup whose pipeline's stages were budgeted so that two fit (Finish; codegen gives it a
  // producer warpgroup and budgets its registers for two blocks, docs/codegen.md).
  int blocks_per_sm = 1;
  int registers_per_thread = 0;  // an estimate
  // How the choice was made: candidates considered, the chooser, the objective's values (the cost,
  // then warp instructions; then come stages and the candidates' indices: choose.h), whether it is proved
  // optimal (the exhaustive search always is, Z3's optimizer within its resource limit), Z3's answer
  // (or why the search chose instead), and the time it took (not printed with --no-timings).
  std::int64_t candidates = 0;
  std::string objective;
  std::int64_t cost = 0;
  std::int64_t instructions = 0;
  bool optimal = false;
  Chooser chooser = Chooser::kZ3;
  std::string chooser_status;
  double seconds = 0;
  std::vector<std::string> notes;
};

}  // namespace weft::synth
