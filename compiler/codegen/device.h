// Device code generation: a synthesized tile kernel (tile::Kernel + synth::Plan) to LLVM IR for
// `nvptx64-nvidia-cuda`, then PTX through LLVM's NVPTX back end (and a cubin through ptxas when the
// CUDA toolkit is installed). The generated code is what the simulator (compiler/sim) executes, per
// thread: each Reg tile lives in the registers its TV layout gives the thread, each Shared tile at
// the swizzled byte addresses of its layout, each op is the instruction the plan chose.
//
// The launch contract (how the host side, `weft build`'s generated code and tests/gpu, calls an
// entry). The entry is named after the kernel and takes, in this order:
//   1. every tensor parameter of the kernel, `out` ones included, in source order: a 64-bit
//      address of its first element in global memory (row-major, densely packed);
//   2. every size in `DeviceKernel::sizes` order: an i64 (the extent the host bound it to);
//   3. every scalar parameter, in source order: i64 for integer dtypes, f32/f64 for floats, and i32
//      (0 or 1) for bool;
//   4. every tensor map in `DeviceKernel::tensor_maps` order (sm_90a TMA copies): a 128-byte
//      CUtensorMap by value (`.param .align 64 .b8 NAME[128]`), encoded by the host with
//      weft_tensor_map_encode_tiled from the spec.
// The block is DeviceKernel::threads x 1 x 1 (the kernel's threads, plus a producer warpgroup's
// 128 when warp-specialized) with `shared_bytes` of dynamic shared memory; the grid is the
// kernel's `grid` extents evaluated over the bound sizes (x = the first). `out` tensors must be
// zero-filled before the launch (the kernel tier's meaning, docs/kernels.md). The host checks the
// kernel's `where` facts before launching; the entry assumes them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/source.h"
#include "core/dim.h"
#include "diagnostics/diagnostic.h"
#include "layout/swizzle.h"
#include "schedule/protocol.h"
#include "synth/plan.h"
#include "tile/ir.h"

namespace weft::codegen {

// A TMA tensor map the entry takes (sm_90a): the 2-D view of a tensor parameter with its leading
// axes flattened into rows (plan.h's `tma_boxes` convention), one box shape and swizzle. The host
// encodes it as weft_tensor_map_encode_tiled(map, <the tensor's dtype>, 2, <its device address>,
// dims {last extent, product of the other extents}, strides_bytes {last extent * element bytes},
// box {box_cols, box_rows}, element strides null, no interleave, `swizzle`, any L2 promotion,
// out-of-bounds zero) and passes it by value (docs/codegen.md, the launch contract).
struct TensorMapSpec {
  int param = 0;              // index into Kernel::params
  std::int64_t box_cols = 0;  // the box's extent along the tensor's last axis (elements)
  std::int64_t box_rows = 0;  // ... and along the flattened rows
  layout::SwizzleMode swizzle = layout::SwizzleMode::kNone;
};

struct DeviceKernel {
  std::string entry;  // the PTX entry's name
  synth::Target target = synth::Target::Sm80;
  std::string llvm_ir;  // the module as text, before the O3 pipeline (`--emit=llvm`)
  std::string ptx;      // what LLVM's NVPTX target printed after O3 (`--emit=ptx`)
  std::int64_t threads = 0;
  std::int64_t shared_bytes = 0;  // dynamic shared memory per block
  // The entry loops over its grid's blocks (Options::persistent): launch min(blocks, multiprocessors
  // x blocks a multiprocessor holds) blocks in x; the full grid is correct too, one block each.
  bool persistent = false;
  std::vector<core::SizeVarId> sizes;
  std::vector<TensorMapSpec> tensor_maps;
  // The barrier protocol of each pipelined loop's ring as emitted (the sm_90a TMA ring, the
  // warp-specialized one, the sm_80 cp.async ring: schedule/protocol.h), which `weft build` checks
  // for deadlock before using the kernel.
  std::vector<schedule::Protocol> protocols;
};

struct Options {
  bool line_info = true;  // .loc/.file directives that point at the .weft source
  // sm_90a: a producer warpgroup issues a pipeline's TMA copies (docs/codegen.md); the block is then
  // `threads` of the kernel plus 128. Off: the whole block runs the ring, as on sm_80.
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
  // memory and TMA, whole 128-byte lines (device.cpp's TmaStoreSpec says which qualify); the `out`
  // tensor gets a tensor map (DeviceKernel::tensor_maps). Off: each thread stores its own elements
  // (docs/codegen.md, "Epilogues through shared memory").
  bool tma_store = true;
  // Blocks a multiprocessor must hold at once (PTX .minnctapersm: ptxas keeps the registers a thread
  // uses within the file's share); 0: no bound.
  int min_blocks = 0;
};

// The kernel's PTX for its plan's target. Errors are diagnostics at the op codegen cannot emit
// (E0750-E0799; E07xx below 50 are the simulator's), never a crash; a plan the simulator runs must generate.
Result<DeviceKernel, std::vector<Diagnostic>> EmitKernel(const tile::Kernel& kernel, const synth::Plan& plan,
                                                         const SourceManager& sources, const Options& options = {});

}  // namespace weft::codegen
