// Host code generation: `def main` (and the definitions it calls) to LLVM IR for x86-64, an object
// file, and an executable linked with the runtime by the system's `cc` (docs/building.md).
//
// In this issue `main` runs kernels and the host built-ins; the array tier outside kernels comes
// with the graph phase and is refused here (E0800) at the operation. The steps, one a function:
//   1. LowerMain walks `main`'s core IR the way the interpreter evaluates it, but at compile time:
//      definitions are inlined (their element types are fixed per call, as the interpreter's
//      substitutions fix them), sizes become i64 values read from tensors' run-time shapes, and
//      each operation becomes a call of runtime.h's "compiled programs" API. A kernel call
//      binds the kernel's sizes from its inputs' shapes, checks its `where` facts and the inputs'
//      dims in generated code (one clear message each), allocates its `out` tensors zero-filled,
//      evaluates its grid and launches it through a static descriptor (weft_program_kernel).
//   2. The driver synthesizes and generates each kernel the program uses (codegen::EmitKernel)
//      and AttachKernel puts its PTX (and cubin, when ptxas made one) into its descriptor; so does
//      AttachRandomKernel for the `random` kernel of each dtype `main` draws (random.h).
//   3. EmitObject writes the module as an x86-64 object file; Link calls `cc`.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/source.h"
#include "codegen/device.h"
#include "core/ir.h"
#include "diagnostics/diagnostic.h"
#include "synth/plan.h"
#include "tile/ir.h"

namespace llvm {
class LLVMContext;
class Module;
}  // namespace llvm

namespace weft::codegen {

// A kernel `main` calls, lowered to the tile IR; launches refer to its descriptor.
struct KernelUse {
  const core::Def* def = nullptr;
  tile::Kernel kernel;
};

struct HostModule {
  HostModule();
  HostModule(HostModule&&) noexcept;
  HostModule& operator=(HostModule&&) noexcept;
  ~HostModule();

  std::unique_ptr<llvm::LLVMContext> context;
  std::unique_ptr<llvm::Module> module;
  std::vector<KernelUse> kernels;  // in the order of their first call; AttachKernel each one
  // The element types of `random` calls that run on the GPU (random.h), in the order of their first
  // call; AttachRandomKernel each one. Empty when `main` calls no kernel: such a program never opens
  // the GPU, and its `random` tensors are filled on the host.
  std::vector<Dtype> randoms;
};

struct HostOptions {
  synth::Target target = synth::Target::Sm90a;  // checked against the GPU when the program starts
};

// Step 1: `main`'s host code, or the diagnostics that say what in it `weft build` does not compile
// (E0800, E0801) or what a kernel it calls does not lower (tile::Lower's). @pre `main` checked.
Result<HostModule, std::vector<Diagnostic>> LowerMain(const core::Module& module, const core::VarStore& vars,
                                                      const core::Def& main, const SourceManager& sources,
                                                      const HostOptions& options = {});

// Step 2: the device code of `program.kernels[index]` (`cubin` empty when there is none).
void AttachKernel(HostModule& program, std::size_t index, const DeviceKernel& device, const std::string& cubin);

// Step 2 for `random`: the device code of `random` of `dtype` (EmitRandomKernel's), into the
// descriptor weft_program_random launches. @pre `dtype` is in `program.randoms`
void AttachRandomKernel(HostModule& program, Dtype dtype, const DeviceKernel& device, const std::string& cubin);

// The host module as LLVM IR text (`weft build --emit=llvm`).
std::string PrintHost(const HostModule& program);

// Step 3: the module as an x86-64 (host) object file at `path`; an error is one line.
Result<std::monostate, std::string> EmitObject(HostModule& program, const std::string& path);

// Step 4: `cc` links `object` with the runtime archive into the executable `output`. `cc` is the
// compiler driver to call (WEFT_CC or "cc"); an error is one line with cc's own message.
Result<std::monostate, std::string> Link(const std::string& cc, const std::string& object, const std::string& runtime,
                                         const std::string& output);

}  // namespace weft::codegen
