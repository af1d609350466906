// The layout pieces synthesis assembles, each a pure function of layouts and numbers, so that the
// unit tests can check them one by one: tiled MMA operand layouts (an atom's TV layout repeated over
// warps and values), slices (what a reduction's result or a broadcast operand holds), ldmatrix and
// vector realizations of a Reg layout, and fitting a CuTe layout to a table of (thread, value).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/tile_layout.h"
#include "layout/atoms.h"
#include "layout/bank_conflicts.h"
#include "layout/swizzle.h"
#include "layout/tv_layout.h"

namespace weft::synth {

// Which operand of a tiled MMA: A (M x K), B (K x N) or the accumulator C (M x N).
enum class Operand { A, B, C };

// An atom operand's TV layout tiled over a block: `groups_m` x `groups_n` groups of `group_threads`
// threads (warps for mma.sync, warpgroups for wgmma), group g = gm + groups_m * gn holding the
// (M / groups_m) x (N / groups_n) sub-tile; inside a group the atom repeats over the values.
// Threads: (atom threads, gm, gn), a group stride of 0 where the operand does not depend on it (A
// is the same for every gn, B for every gm). Values: (atom values, then the repeats, in the order
// that lets ldmatrix x4 fill consecutive values: A (m, k), B (n, k), C (m, n)).
// Built with the algebra: the atom's layout composed with the embedding of its rows_a x cols_a tile
// into the block's rows x cols tile, then the group and repeat modes.
// @pre the atom tiles the sub-tile (the caller checks divisibility)
// @post IsBijectionOntoTile for C; for A and B, a broadcast whose filter is a bijection
layout::TvLayout TileMma(const layout::TvLayout& atom, Operand operand, std::int64_t m, std::int64_t n, std::int64_t k,
                         int groups_m, int groups_n);

// The same (thread, value) -> element map over the transposed tile (cols x rows): r + rows * c
// becomes c + cols * r. How a `regs` of a transposed shared view is fitted in its parent's
// coordinates. Nothing when a mode moves along both axes at once (no mma or vector layout does).
std::optional<layout::TvLayout> TransposeTv(const layout::TvLayout& tv);

using SliceKeep = core::SliceKeep;
// The layout of a [rows, 1] (Rows), [1, cols] (Cols) or [1, 1] (None) tile whose elements are
// broadcast to where the parent's are: thread modes along a dropped axis become stride 0 (several
// threads hold the element), value modes along it disappear.
// Fails when a mode of the parent moves along both axes at once.
layout::Result<layout::TvLayout> Slice(const layout::TvLayout& parent, SliceKeep keep);

// Same (thread -> set of elements) for every thread: layouts that differ only in the order of each
// thread's values (a register renaming, free).
bool SameElements(const layout::TvLayout& a, const layout::TvLayout& b);

// A layout with IsBijectionOntoTile, or a broadcast: every element held, and the same number of
// times.
bool IsWellFormed(const layout::TvLayout& tv);

// The CuTe layout of a table f(thread, value) -> row + rows * col over threads x values, found by
// reading each prime digit's stride off the table and checking every entry; nothing if no layout of
// that digit structure matches (the table is not affine in the mixed-radix digits).
std::optional<layout::TvLayout> FitTv(const std::vector<std::int64_t>& table, std::int64_t threads, std::int64_t values,
                                      std::int64_t rows, std::int64_t cols);

// ldmatrix realizing a Reg layout of a 16-bit tile stored with its last axis contiguous (plan.h's
// convention: instruction i fills values [2 * count * i, 2 * count * (i + 1))). `copy` gives the row
// each lane supplies per instruction; nothing when the layout is not ldmatrix-shaped.
struct LdmatrixPlan {
  int count = 4;
  bool trans = false;
  layout::TvLayout copy;
  std::int64_t instructions = 0;  // per thread
};
std::optional<LdmatrixPlan> FitLdmatrix(const layout::TvLayout& reg, int count, bool trans);

// The widest vector (16, 8, 4 bytes, else one element) of consecutive elements along the last axis
// that the Reg layout allows: runs of `elements` consecutive values of every thread are consecutive
// columns of one row, the first column a multiple of the run. `copy` is (thread, vector) -> first
// element.
struct VectorPlan {
  int bytes = 0;
  int elements = 1;
  layout::TvLayout copy;
};
VectorPlan FitVector(const layout::TvLayout& reg, int element_bytes, int max_bytes = 16);

// The bank conflicts of a copy: every warp's instructions, each lane's `vector_bytes` at
// smem(row + rows * col) * element_bytes; lanes past `active_lanes` take no part (ldmatrix x1/x2).
// Fails when a vector is misaligned for its width.
layout::Result<layout::BankConflicts> CountCopyConflicts(const layout::TvLayout& copy,
                                                         const layout::SwizzledLayout& smem, int element_bytes,
                                                         int vector_bytes, int active_lanes = 32);

}  // namespace weft::synth
