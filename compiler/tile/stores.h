// Whether a kernel stores every element of an `out` parameter, whatever the sizes its `where` facts
// allow. An `out` parameter starts zero-filled (docs/kernels.md); when the kernel overwrites all of
// it, the fill is work nobody sees, and the host skips it (codegen/host.cpp, docs/runtime.md
// "Device memory"). The proof normalizes dims (core/dim.h) and calls no solver:
//
//   1. Each `where` fact `n % d == 0` (n a size) is used by writing n = d * n' for a fresh n', so
//      that `n / d * d` normalizes to `n`; a fact `n == c` by writing c for n.
//   2. A store at the kernel's top level (not in a loop: every block runs it once) into a view of
//      the parameter is the candidate. Each coordinate of the view must evaluate to a dim plus an
//      integer multiple of one block index (`i`, `s / 128 - 1 - b`, `0`); anything else (a loop's
//      counter, a scalar parameter, a product of block indices) fails the proof.
//   3. Over the grid's extent G on its axis, a coordinate c = base + a * block_idx with a = 1 or -1
//      takes every value from lo to hi (base .. base + G - 1, or base - G + 1 .. base); with a = 0,
//      only base. The tensor's axis of extent e, tiled by t (1 for an axis the view indexes), is
//      covered when lo <= 0 and (hi + 1) * t >= e, each difference normalizing to a polynomial that
//      is non-negative for non-negative sizes.
//   4. No two coordinates use one block axis (the blocks would cover a diagonal), and each grid
//      axis no coordinate uses is at least 1 (else there may be no block at all).
//
// What the proof cannot show keeps the fill: a store in a loop, a grid rounded up without a `where`
// fact (`(n + 127) / 128` against n), coordinates computed otherwise.
#pragma once

#include <string>

#include "tile/ir.h"

namespace weft::tile {

// True when every element of `out` (an `out` parameter's value) is stored by some block of the
// grid, for every sizes the kernel's `where` facts allow. False otherwise, with `why` (when given)
// saying what the proof could not show.
bool StoresEveryElement(const Kernel& kernel, ValueId out, std::string* why = nullptr);

}  // namespace weft::tile
