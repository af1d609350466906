// The NVPTX back end as every device module goes through it (device.cpp's kernels, random.cpp's
// `random` kernels): one target machine per target (sm_80 or sm_90a, PTX ISA 8.0, 32-bit shared
// pointers), LLVM's O3 pipeline, then PTX. Internal to compiler/codegen.
#pragma once

#include <string>

#include "synth/plan.h"

namespace llvm {
class Module;
class TargetMachine;
}  // namespace llvm

namespace weft::codegen {

// The NVPTX target machine for `target` (made once, shared); null when this LLVM has no NVPTX.
llvm::TargetMachine* NvptxMachine(synth::Target target);

// Runs O3 over `module` (its triple and data layout already NVPTX's) and prints it as PTX into
// `ptx`. False when the target machine cannot (no NVPTX, or no assembly printer).
bool EmitPtx(llvm::Module& module, synth::Target target, std::string& ptx);

}  // namespace weft::codegen
