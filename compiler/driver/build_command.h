// `weft build FILE -o EXE [--target T]`: `def main` and the kernels it calls to an executable;
// `weft build FILE --emit=ptx|llvm [--kernel NAME]`: their device code (and host module) as text.
// The pieces `weft run` uses to run a program on the GPU are here too. docs/building.md.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>

#include "base/source.h"
#include "codegen/host.h"
#include "core/ir.h"
#include "diagnostics/diagnostic.h"
#include "driver/options.h"
#include "synth/plan.h"

namespace weft::driver {

// Device code to `out` (--emit) or the executable options.output, diagnostics to `err`. Returns 0
// on success, 1 on an error in the input (or a failed link), 2 on bad usage.
int RunBuild(const Options& options, std::ostream& out, std::ostream& err);

// `weft build --shared FILE -o libNAME.so [--instance 'NAME TYPE...']`: FILE's functions as a
// shared library with weft/library.h's C ABI (docs/python.md); notes on the functions it does not
// export and diagnostics to `err`. Returns 0, 1 (errors) or 2 (bad usage).
int RunBuildShared(const Options& options, std::ostream& err);

// `weft call FILE NAME ARG.npy... --out DIR`: NAME on the files' tensors, on the interpreter; its
// results to DIR/0.npy, ... (the Python package's interpreter path). Returns 0 or 1.
int RunCall(const Options& options, std::ostream& err);

// Whether `main` (through the definitions it calls) calls a kernel: whether it has GPU work.
bool CallsKernels(const core::Module& module, const core::Def& main);

// Steps 2 to 4 of host.h for a lowered `main`: synthesizes and generates each kernel for `target`
// (assembling a cubin when ptxas is found), writes the object file and links `output`. Errors are
// added to `diagnostics`; returns whether it built.
bool BuildExecutable(codegen::HostModule& program, synth::Target target, const SourceManager& sources,
                     const std::string& output, Diagnostics& diagnostics);

// What `weft run` needs of the GPU: the target to build for, or why it cannot run there (no driver,
// no GPU, a GPU older than sm_80) in one line.
struct GpuProbe {
  std::optional<synth::Target> target;
  std::string reason;
};
GpuProbe ProbeGpu();

// `weft run`'s choice (docs/building.md), after FILE checked: builds `main` for the GPU and runs
// it there, returning its exit status; or, when it cannot (and `options.gpu` does not forbid it),
// writes why as one `weft: note:` line to `err` when `main` calls kernels, and returns nothing:
// the caller interprets. Under --gpu every reason is an error (status 1).
std::optional<int> RunOnGpu(const Options& options, const core::Module& module, const core::VarStore& vars,
                            const core::Def& main, SourceManager& sources, std::ostream& err);

}  // namespace weft::driver
