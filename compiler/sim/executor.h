// Runs a synthesized tile kernel on the simulated machine (machine.h), thread by thread, as its GPU
// code would: every register tile lives in per-thread registers placed by its TV layout, every shared
// tile at the byte addresses its swizzled layout gives, and every operation is carried out by the
// instruction the plan chose (cp.async or TMA, ldmatrix or vector loads, mma.sync or wgmma, shuffles,
// vector stores). The outputs are compared with the interpreter's (docs/simulator.md); a layout that
// does not deliver an element where an instruction needs it is a Fault naming the op, the thread and
// the element, and a layout that delivers the wrong element gives a wrong output.
//
// The algorithm, per block of the grid (blocks run one after another; each gets fresh, poisoned
// registers and shared memory):
//   1. Scalar ops compute one value for the whole block (the interpreter's ops on rank-0 tensors).
//   2. Views compute a base address and strides into a global buffer.
//   3. Copies issue the plan's instruction for every thread (ToShared: cp.async vectors along the
//      copy TV layout, or TMA boxes; ToRegs: ldmatrix with each lane's row address, or vector
//      ld.shared; a wgmma operand stays in shared memory). What each lane receives is placed in the
//      destination register that the destination's TV layout assigns to that element.
//   4. Mma issues the atom over the warp (or warpgroup) tiling: fragments are gathered from the
//      registers that hold their elements (renaming registers is free on the GPU; holding the element
//      is not), and the product is scattered back the same way.
//   5. Elementwise ops, casts, fills and iotas compute, in each thread, exactly the elements the
//      result's TV layout gives that thread, from the operands' elements that thread holds.
//   6. Reduce combines a thread's values per row, then across the lanes holding the row with
//      shfl.bfly, then across warps through shared memory.
//   7. Loops run their iterations in order; a shared tile defined in a pipelined loop uses buffer
//      slot iteration % stages, so ring addressing is exercised.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/source.h"
#include "core/dim.h"
#include "sim/machine.h"
#include "synth/plan.h"
#include "tile/ir.h"
#include "weft/tensor.h"

namespace weft::sim {

struct RunError {
  Span span;            // the op being simulated (invalid for an error about the whole kernel)
  std::string message;  // lowercase: what failed, with the block, thread and element involved
};

struct RunOutput {
  std::vector<runtime::HostTensor> outputs;  // one per `out` parameter, in parameter order
  InstructionCounts counts;                  // over all blocks
  std::int64_t blocks = 0;
};

struct RunOptions {
  // Sizes not readable from the inputs' shapes (an `out` parameter's own size, say).
  std::map<core::SizeVarId, std::int64_t> sizes;
  std::uint8_t shared_poison = 0xA5;  // what unwritten shared memory holds
};

// Runs `kernel` under `plan` on `inputs`: one tensor per non-`out` parameter, in parameter order
// (a scalar parameter as a rank-0 tensor). The `out` tensors start zero-filled, as the kernel tier's
// meaning says (docs/kernels.md).
Result<RunOutput, RunError> Run(const tile::Kernel& kernel, const synth::Plan& plan,
                                const std::vector<runtime::HostTensor>& inputs, const RunOptions& options = {});

}  // namespace weft::sim
