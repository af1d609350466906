// `weft simulate`; see simulate_command.h. The steps, each a phase's own function:
//   1. check FILE, find the kernel, lower it (tile::Lower);
//   2. sizes from --size (by the names the kernel's types use), checked against its `where` clause;
//      scalar parameters from --scalar; tensor inputs from `random`'s generator (Philox, seed + the
//      parameter's position, so each input differs);
//   3. the kernel's meaning: the interpreter's call of the kernel on those inputs (interp::Interpreter,
//      from the core IR, before tile lowering);
//   4. synthesize the plan (synth::Synthesize) and run it on the simulator (sim::Run);
//   5. per output: max abs error, ‖out − ref‖ / ‖ref‖ against 1e-2 (f16/bf16 tensors), 1e-5 (f32),
//      bitwise (integers), NaN never.
#include "driver/simulate_command.h"

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "check/check.h"
#include "diagnostics/render.h"
#include "driver/frontend.h"
#include "driver/kernel_call.h"
#include "driver/kernel_path.h"
#include "sim/executor.h"
#include "syntax/parser.h"
#include "synth/synthesize.h"
#include "tile/lower.h"
#include "weft/numerics.h"

namespace weft::driver {

namespace {

std::string Shape(const runtime::HostTensor& t) {
  return std::string(Spelling(t.dtype)) + runtime::ShapeText(t.shape);
}

}  // namespace

int RunSimulate(const Options& options, std::ostream& out, std::ostream& err) {
  SourceManager sources;
  Diagnostics diagnostics;
  bool color = UseColor(options.color, STDERR_FILENO);
  auto report = [&] {
    for (const Diagnostic& d : diagnostics.all()) err << Render(sources, d, color);
    return diagnostics.has_errors() ? 1 : 0;
  };
  const std::string& path = options.inputs.front();
  Front front = LoadParseCheck(sources, diagnostics, path);
  if (!front.result || diagnostics.has_errors()) return report();
  const check::CheckResult& checked = *front.result;

  // 1. The kernel.
  const core::Def* def = checked.module.Find(options.kernel);
  if (!def || !tile::IsKernel(*def)) {
    std::vector<std::string> kernels;
    std::set<std::string> seen;
    for (const core::Def& d : checked.module.defs())
      if (tile::IsKernel(d) && seen.insert(d.name).second) kernels.push_back(d.name);
    err << "weft: `" << path << "` has no kernel named `" << options.kernel << "`" << (def ? " (it is a `def`)" : "")
        << "; " << (kernels.empty() ? "it has no kernels" : "its kernels (with what it imports): " + NameList(kernels))
        << "\n";
    return 2;
  }
  auto target = synth::ParseTarget(options.target);
  if (!target) {
    err << "weft: unknown target `" << options.target << "`; expected `sm_80` or `sm_90a`\n";
    return 2;
  }
  KernelPath lowered =
      CompileKernel(checked.module, checked.vars, *def, *target, sources, KernelPhase::Tile, diagnostics);
  if (!lowered.kernel) return report();
  const tile::Kernel* kernel = &*lowered.kernel;

  // 2. Sizes, checked against the `where` clause, and the inputs.
  auto call = PrepareKernelCall(*kernel, options.kernel, options.sizes, options.scalars, options.seed, true, err);
  if (!call) return 2;
  sim::RunOptions run_options;
  run_options.sizes = call->sizes;
  const std::vector<runtime::HostTensor>& inputs = call->args;
  bool narrow_float = call->narrow_float;

  // 3. The kernel's meaning: the interpreter calls it, as a `def` would, on the same inputs.
  auto expected = InterpretKernelCall(checked.module, checked.vars, *def, *call);
  if (!expected) {
    diagnostics.Emit(DiagnosticKind::RuntimeFailure, expected.error().span,
                     "the interpreter's run of `" + options.kernel + "` failed: " + expected.error().message);
    return report();
  }

  // 4. The plan and the simulation.
  KernelPath planned = CompileKernel(*kernel, *target, sources, KernelPhase::Plan, diagnostics);
  if (!planned.plan) return report();
  const synth::Plan* plan = &*planned.plan;
  auto simulated = sim::Run(*kernel, *plan, inputs, run_options);
  if (!simulated) {
    diagnostics.Emit(DiagnosticKind::SimulationFault, simulated.error().span, simulated.error().message);
    return report();
  }

  // 5. The comparison.
  double tolerance = narrow_float ? 1e-2 : 1e-5;
  out << "kernel `" << options.kernel << "` on " << options.target << ": " << simulated->blocks
      << (simulated->blocks == 1 ? " block of " : " blocks of ") << plan->threads << " threads\n";
  bool pass = true;
  std::size_t o = 0;
  for (const tile::Param& p : kernel->params) {
    if (!p.out) continue;
    const runtime::HostTensor& got = simulated->outputs.at(o);
    std::ostringstream line;
    line << p.name << ": " << Shape(got) << ": ";
    bool ok = true;
    if (o >= expected->size()) {
      ok = false;
      line << "the interpreter returned no value for it";
    } else if (const runtime::HostTensor& want = (*expected)[o]; want.dtype != got.dtype || want.shape != got.shape) {
      ok = false;
      line << "the interpreter's is " << Shape(want);
    } else if (!runtime::IsFloatDtype(got.dtype)) {
      std::int64_t differ = 0;
      for (std::int64_t i = 0; i < got.Count(); ++i) differ += runtime::LoadBits(got, i) != runtime::LoadBits(want, i);
      ok = differ == 0;
      line << differ << " elements differ (bitwise comparison)";
    } else {
      double max_abs = 0, diff2 = 0, ref2 = 0;
      std::int64_t nans = 0;
      for (std::int64_t i = 0; i < got.Count(); ++i) {
        double g = runtime::LoadDouble(got, i), w = runtime::LoadDouble(want, i);
        if (std::isnan(g)) ++nans;
        max_abs = std::max(max_abs, std::abs(g - w));
        diff2 += (g - w) * (g - w);
        ref2 += w * w;
      }
      double rel = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
      ok = nans == 0 && rel < tolerance;
      line << std::setprecision(3) << "max abs error " << max_abs << ", relative error " << rel << " (tolerance "
           << tolerance << ")";
      if (nans) line << ", " << nans << " NaN";
    }
    ++o;
    pass &= ok;
    out << line.str() << ": " << (ok ? "PASS" : "FAIL") << "\n";
  }
  out << "instructions:";
  for (const auto& [name, count] : simulated->counts) out << " " << name << " " << count << ";";
  out << "\n" << (pass ? "PASS" : "FAIL") << "\n";
  return pass ? 0 : 1;
}

}  // namespace weft::driver
