// `random shape seed` on the GPU: one generated kernel per element type, bit for bit the
// interpreter's values (runtime/src/random.cpp; the definition is docs/runtime.md's "On the GPU").
//
// 1. DefineRandomElement writes, in LLVM IR, element `index`'s value: the Philox-4x32-10 block of
//    counter (index lo, index hi, 0, 0) under key (seed lo, seed hi), ten rounds unrolled, then the
//    dtype's mapping. It is the only place the arithmetic lives, so that a unit test can JIT it for
//    the host and compare it with the runtime's FillRandom (tests/unit/codegen/random_test.cpp).
// 2. EmitRandomKernel wraps it in a grid-stride loop, `weft_random_<dtype>(i64 out, i64 count,
//    i64 seed)`, and prints PTX through the same NVPTX path as every kernel (O3, sm_80 or sm_90a).
// Executables embed one kernel per dtype `main` draws with (host.h's AttachRandomKernel); the
// runtime launches it when the program uses the GPU and fills on the host otherwise.
#pragma once

#include <string>
#include <vector>

#include "base/dtype.h"
#include "base/result.h"
#include "codegen/device.h"
#include "synth/plan.h"

namespace llvm {
class Function;
class Module;
}  // namespace llvm

namespace weft::codegen {

// Threads per block of every random kernel; the grid is any number of blocks (a grid-stride loop).
inline constexpr int kRandomThreads = 256;

// Whether `random` of `dtype` has a device kernel: every dtype but f8e4m3 and f8e5m2, which LLVM
// 19 cannot round to (their tensors are filled on the host and uploaded when a kernel reads them).
bool HasRandomKernel(Dtype dtype);

// The dtypes HasRandomKernel holds for, in dtypes.def's order.
std::vector<Dtype> RandomKernelDtypes();

// The entry's name: `weft_random_<spelling>` (`weft_random_bf16`).
std::string RandomEntry(Dtype dtype);

// Defines (or returns) `weft_random_element_<spelling>(i64 seed, i64 index) -> i<Bits(dtype)>` in
// `module`: the element's bits as the tensor stores them (floats bitcast; bool 0 or 1 in an i8;
// i4/u4 an i4). Internal and always inlined. @pre HasRandomKernel(dtype)
llvm::Function* DefineRandomElement(llvm::Module& module, Dtype dtype);

// The kernel for `target`. Its contract: parameters (out: the tensor's 64-bit global address, count:
// its elements, seed: the `random` seed's i64 bits); kRandomThreads threads a block, any grid, no
// shared memory. Thread u of the grid, then u + the grid's threads, and so on, writes unit u: element u,
// or for i4/u4 byte u (elements 2u in the low nibble, 2u + 1 in the high one, 0 past the end).
// An error is one line (no NVPTX target). @pre HasRandomKernel(dtype)
Result<DeviceKernel, std::string> EmitRandomKernel(Dtype dtype, synth::Target target);

}  // namespace weft::codegen
