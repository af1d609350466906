// `weft simulate`; see simulate_command.h. The steps, each a phase's own function:
//   1. check FILE, find the kernel, lower it (tile::Lower);
//   2. sizes from --size (by the names the kernel's types use), inputs from `random`'s generator
//      (Philox, seed + the parameter's position, so each input differs);
//   3. synthesize the plan (synth::Synthesize), run it (sim::Run) and the reference (sim::Reference);
//   4. per output: max abs error, ‖out − ref‖ / ‖ref‖ against 1e-2 (f16/bf16 inputs), 1e-5 (f32),
//      bitwise (integers), NaN never.
#include "driver/simulate_command.h"

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>

#include "check/check.h"
#include "diagnostics/render.h"
#include "sim/executor.h"
#include "sim/reference.h"
#include "syntax/parser.h"
#include "synth/synthesize.h"
#include "tile/lower.h"
#include "weft/numerics.h"
#include "weft/random.h"

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
  std::string reason;
  std::optional<FileId> file = sources.Load(path, reason);
  if (!file) {
    diagnostics.Emit(DiagnosticKind::CannotReadFile, Span{}, path, reason);
    return report();
  }
  syntax::Ast ast = syntax::Parse(sources, *file, diagnostics);
  if (diagnostics.has_errors()) return report();
  check::CheckOptions check_options;
  const char* stdlib = std::getenv("WEFT_STDLIB");
  check_options.stdlib_dir = stdlib ? stdlib : WEFT_STDLIB_DIR;
  check::CheckResult checked = check::Check(sources, ast, diagnostics, check_options);
  if (diagnostics.has_errors()) return report();

  // 1. The kernel.
  const core::Def* def = checked.module.Find(options.kernel);
  if (!def || !tile::IsKernel(*def)) {
    err << "weft: `" << path << "` has no kernel named `" << options.kernel << "`\n";
    return 2;
  }
  auto kernel = tile::Lower(checked.module, checked.vars, *def);
  if (!kernel) {
    for (const Diagnostic& d : kernel.error()) diagnostics.Add(d);
    return report();
  }
  auto target = synth::ParseTarget(options.target);
  if (!target) {
    err << "weft: unknown target `" << options.target << "`; expected `sm_80` or `sm_90a`\n";
    return 2;
  }

  // 2. Sizes and inputs.
  sim::RunOptions run_options;
  for (const std::string& size : options.sizes) {
    auto eq = size.find('=');
    std::string name = size.substr(0, eq);
    std::int64_t value = 0;
    bool found = false;
    if (eq != std::string::npos) value = std::strtoll(size.c_str() + eq + 1, nullptr, 10);
    for (const auto& [var, var_name] : kernel->size_names)
      if (var_name == name) {
        run_options.sizes[var] = value;
        found = true;
      }
    if (!found || eq == std::string::npos) {
      std::string names;
      for (const auto& [var, var_name] : kernel->size_names) names += (names.empty() ? "`" : ", `") + var_name + "`";
      err << "weft: `--size " << size << "`: kernel `" << options.kernel << "` has sizes " << names << "\n";
      return 2;
    }
  }
  std::vector<runtime::HostTensor> inputs;
  bool narrow_float = false, wide_float = false;
  for (std::size_t i = 0; i < kernel->params.size(); ++i) {
    const tile::Param& p = kernel->params[i];
    const tile::Value& v = kernel->Get(p.value);
    if (runtime::IsFloatDtype(v.dtype)) (Bits(v.dtype) <= 16 ? narrow_float : wide_float) = true;
    if (p.out) continue;
    std::vector<std::int64_t> shape;
    for (const core::Dim& d : v.shape) {
      auto value = core::Evaluate(d, [&](core::SizeVarId var) -> std::int64_t {
        auto it = run_options.sizes.find(var);
        return it == run_options.sizes.end() ? -1 : it->second;
      });
      if (!value || *value < 0) {
        err << "weft: the shape of `" << p.name << "` needs a size: give every size of `" << options.kernel
            << "` with --size\n";
        return 2;
      }
      shape.push_back(*value);
    }
    runtime::HostTensor t = runtime::HostTensor::Zeros(v.dtype, shape);
    runtime::FillRandom(t, options.seed + i);
    inputs.push_back(std::move(t));
  }

  // 3. The plan, the simulation and the reference.
  auto plan = synth::Synthesize(*kernel, *target);
  if (!plan) {
    for (const Diagnostic& d : plan.error()) diagnostics.Add(d);
    return report();
  }
  auto simulated = sim::Run(*kernel, *plan, inputs, run_options);
  if (!simulated) {
    diagnostics.Emit(DiagnosticKind::SimulationFault, simulated.error().span, simulated.error().message);
    return report();
  }
  auto reference = sim::Reference(*kernel, inputs, run_options);
  if (!reference) {
    diagnostics.Emit(DiagnosticKind::SimulationFault, reference.error().span, reference.error().message);
    return report();
  }

  // 4. The comparison.
  double tolerance = narrow_float ? 1e-2 : 1e-5;
  out << "kernel `" << options.kernel << "` on " << options.target << ": " << simulated->blocks << " blocks of "
      << plan->threads << " threads\n";
  bool pass = true;
  std::size_t o = 0;
  for (const tile::Param& p : kernel->params) {
    if (!p.out) continue;
    const runtime::HostTensor& got = simulated->outputs.at(o);
    const runtime::HostTensor& want = (*reference).at(o);
    ++o;
    std::ostringstream line;
    line << p.name << ": " << Shape(got) << ": ";
    bool ok = true;
    if (!runtime::IsFloatDtype(got.dtype)) {
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
    pass &= ok;
    out << line.str() << ": " << (ok ? "PASS" : "FAIL") << "\n";
  }
  out << "instructions:";
  for (const auto& [name, count] : simulated->counts) out << " " << name << " " << count << ";";
  out << "\n" << (pass ? "PASS" : "FAIL") << "\n";
  return pass ? 0 : 1;
}

}  // namespace weft::driver
