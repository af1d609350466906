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
#include "schedule/schedule.h"
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
  std::int64_t box_rows = 0;  // ... and along the flattened rows (dense), or the next-to-last axis
  layout::SwizzleMode swizzle = layout::SwizzleMode::kNone;
  // 0: the dense 2-D map (leading axes flattened into rows). Else the parameter is read in place,
  // or (an `out` one) stored through a layout (tile::Param::in_place): a map of `rank` dims in
  // InPlaceMapDims's order, box
  // (box_cols, box_rows, 1, ...), whose extents and strides the launch gives.
  int rank = 0;
  friend bool operator==(const TensorMapSpec&, const TensorMapSpec&) = default;
};

// One dim of the map of a parameter read in place: mode `mode` (0 the outermost) of axis `axis`.
struct MapDim {
  int axis = 0;
  int mode = 0;
};
// The dims of the map of a parameter read in place, whose axis a has inner[a].size() + 1 modes
// (tile::InPlace::inner; rank >= 2, the next-to-last axis one mode), innermost first: the last
// axis's innermost mode (contiguous), the next-to-last axis (the box's rows), the last axis's other
// modes inward-out, then the leading axes from the innermost, each axis's modes inward-out. Its
// size is the map's rank; codegen's TMA coordinates and the host's weft_program_view both follow it.
std::vector<MapDim> InPlaceMapDims(const std::vector<std::vector<std::int64_t>>& inner);

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

// The choices about loops (warp roles, staging, persistence, TMA stores, blocks a multiprocessor)
// are the schedule's (schedule/lowering.h): codegen lowers schedule.lowering and decides none.
struct Options {
  bool line_info = true;  // .loc/.file directives that point at the .weft source
};

// The kernel's PTX for its plan's target. Errors are diagnostics at the op codegen cannot emit
// (E0750-E0799; E07xx below 50 are the simulator's), never a crash; a plan the simulator runs must generate.
// `schedule` is schedule::Build's for this kernel and plan (its `lowering`).
Result<DeviceKernel, std::vector<Diagnostic>> EmitKernel(const tile::Kernel& kernel, const synth::Plan& plan,
                                                         const schedule::Schedule& schedule,
                                                         const SourceManager& sources, const Options& options = {});

}  // namespace weft::codegen
