// `weft explain FILE [--kernel NAME] [--target sm_80|sm_90a] [--no-timings]`: checks FILE, lowers
// each kernel (or the one named) to the tile IR, synthesizes its layouts and instructions for the
// target, and prints the plan (synth/explain.h). See docs/synthesis.md.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <string>

#include "core/ir.h"
#include "diagnostics/diagnostic.h"
#include "driver/kernel_path.h"
#include "driver/options.h"
#include "synth/plan.h"
#include "tile/ir.h"

namespace weft::driver {

struct ExplainOptions {
  bool timings = true;                     // synthesis's and the solver's time (off for golden tests)
  const SourceManager* sources = nullptr;  // for line:col and each op's source text
  // The cost model's inputs (schedule/cost.h): sizes and scalar parameters by name (a bool is 1 or
  // 0), and the GPU ("h100" or "h200").
  std::map<std::string, std::int64_t> sizes;
  std::map<std::string, double> scalars;
  std::string machine = "h100";
};

// One kernel's explanation: its plan (synth::Explain), then, for a kernel with a `pipeline`, the
// schedule `weft build` lowers (schedule::Build with schedule::BuildOptions(), every loop solved so
// that each one's schedule shows; schedule::Print).
std::string ExplainKernel(const tile::Kernel& kernel, const synth::Plan& plan, const ExplainOptions& options);

// The plan of each kernel to `out`, diagnostics to `err`. Returns 0 when every kernel synthesized,
// 1 on an error in the input (a check, lowering or synthesis error), 2 on bad usage (no such
// kernel, an unknown target).
int RunExplain(const Options& options, std::ostream& out, std::ostream& err);

// Checks options.inputs[0], then runs each of its kernels (or options.kernel) down the kernel path
// (kernel_path.h) for options.target through phase `last`, and calls `action` with each one that got
// there (index counts kernels from 1). Diagnostics of every step, and those `action` adds, go to
// `err`. Returns as RunExplain does.
using KernelAction = std::function<void(const KernelPath&, const SourceManager&, Diagnostics&, int index)>;
// `main`'s definition, when FILE has one and no --kernel was given (`weft explain` summarizes the
// kernels its array-tier work fuses into).
using MainAction = std::function<void(const core::Module&, const core::VarStore&, const core::Def& main,
                                      const SourceManager&, Diagnostics&)>;
int ForEachKernel(const Options& options, std::ostream& err, KernelPhase last, const KernelAction& action,
                  const MainAction& main_action = nullptr);

}  // namespace weft::driver
