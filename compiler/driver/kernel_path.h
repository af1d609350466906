// The kernel path of every command, written once, a phase at a time in the order the compiler runs
// them (Halide's Lower.cpp is the model: x = Phase(x)): a checked kernel to the tile IR
// (tile::Lower; `weft check --emit=tile`), its plan for a target (synth::Synthesize; `weft
// explain`, `weft simulate`), its schedule (schedule::Build with schedule::BuildOptions(): every
// decision about its pipelines; `weft explain` prints it), its device code (codegen::EmitKernel;
// `weft build --emit=llvm|ptx`, executables). Each command asks for the phases it needs
// (docs/architecture.md, "The driver's recipe").
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "base/source.h"
#include "codegen/device.h"
#include "core/ir.h"
#include "diagnostics/diagnostic.h"
#include "schedule/schedule.h"
#include "synth/plan.h"
#include "tile/ir.h"

namespace weft::driver {

enum class KernelPhase { Tile, Plan, Schedule, Device };

// What the phases made, up to the last one asked for or the first that failed (its diagnostics are
// in the caller's Diagnostics; the later members stay empty).
struct KernelPath {
  std::optional<tile::Kernel> kernel;
  std::optional<synth::Plan> plan;
  std::optional<schedule::Schedule> schedule;
  std::optional<codegen::DeviceKernel> device;
  // A kernel with a `tiles` clause: the instance chosen for the target (codegen/instance.h), as
  // `weft explain` prints it; the later members are that instance's.
  std::string tiles;
};

// From a checked kernel's definition; one with a `tiles` clause builds the instance chosen for the
// target at `sizes` (by name; the cost model's default for those not given), except for the tile IR
// alone, which is instance 0's.
KernelPath CompileKernel(const core::Module& module, const core::VarStore& vars, const core::Def& def,
                         synth::Target target, const SourceManager& sources, KernelPhase last, Diagnostics& diagnostics,
                         const std::map<std::string, std::int64_t>& sizes = {});
// From a kernel already in the tile IR (a program's stdlib and epilogue kernels, or one lowered
// before: `weft simulate` lowers, reads the call's sizes, then plans).
KernelPath CompileKernel(tile::Kernel kernel, synth::Target target, const SourceManager& sources, KernelPhase last,
                         Diagnostics& diagnostics);

}  // namespace weft::driver
