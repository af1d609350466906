// The kernels device codegen is tested on (stdlib's gemm and attention, examples/gemm_kernel.weft,
// tests/lit/sim/*.weft): each source file checked, every kernel lowered to tile IR, synthesized for a
// target and generated (codegen::EmitKernel). Shared by the Catch tests and the ptxas check.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "codegen/device.h"

namespace weft::codegen::testing {

// Files relative to the source tree.
const std::vector<std::string>& KernelFiles();

struct Emitted {
  std::string file;
  std::string kernel;
  synth::Target target = synth::Target::Sm80;
  bool synthesized = false;  // false: synthesis refused the kernel on this target (not codegen's job)
  std::optional<DeviceKernel> device;
  std::string diagnostics;  // rendered, when EmitKernel refused
  bool has_mma = false, has_reduce = false;
  int tma_copies = 0;
};

// Every kernel of `file` (relative to the source tree) on `target`.
// `lowering`: the schedule's choices (schedule::BuildOptions() with them).
std::vector<Emitted> EmitFile(const std::string& file, synth::Target target,
                              const schedule::LoweringOptions& lowering = {});

// `ptxas` from CMake's WEFT_PTXAS, else PATH, else /usr/local/cuda/bin; empty when absent.
std::string FindPtxas();

// Runs `ptxas -arch=ARCH -v` on `ptx`; its output (registers, spills, errors) into `report`. True
// when it assembled.
bool Assemble(const std::string& ptxas, const std::string& ptx, const std::string& arch, std::string& report);

}  // namespace weft::codegen::testing
