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

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "base/stack.h"
#include "check/check.h"
#include "diagnostics/render.h"
#include "interp/interpreter.h"
#include "interp/ops.h"
#include "sim/executor.h"
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

// `a`, `b`, `c`
std::string NameList(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "`" : ", `") + n + "`";
  return out;
}

// NAME=VALUE, or nothing when there is no `=` or either side is empty.
std::optional<std::pair<std::string, std::string>> SplitAssignment(const std::string& text) {
  auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) return std::nullopt;
  return std::pair{text.substr(0, eq), text.substr(eq + 1)};
}

// A scalar parameter's value from its text: `true`/`false` for bool, an integer, a float.
std::optional<runtime::HostTensor> ParseScalar(Dtype dtype, const std::string& text) {
  if (dtype == Dtype::Bool) {
    if (text == "true") return interp::ScalarFromInt(dtype, 1);
    if (text == "false") return interp::ScalarFromInt(dtype, 0);
    return std::nullopt;
  }
  char* end = nullptr;
  errno = 0;
  if (runtime::IsFloatDtype(dtype)) {
    double value = std::strtod(text.c_str(), &end);
    if (*end != '\0' || errno != 0) return std::nullopt;
    return interp::ScalarFromDouble(dtype, value);
  }
  long long value = std::strtoll(text.c_str(), &end, 10);
  if (*end != '\0' || errno != 0) return std::nullopt;
  return interp::ScalarFromInt(dtype, value);
}

bool Holds(std::int64_t lhs, core::RelOp relation, std::int64_t rhs) {
  switch (relation) {
    case core::RelOp::kEq:
      return lhs == rhs;
    case core::RelOp::kNe:
      return lhs != rhs;
    case core::RelOp::kLt:
      return lhs < rhs;
    case core::RelOp::kLe:
      return lhs <= rhs;
    case core::RelOp::kGt:
      return lhs > rhs;
    case core::RelOp::kGe:
      return lhs >= rhs;
  }
  return false;
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
  auto kernel = tile::Lower(checked.module, checked.vars, *def);
  if (!kernel) {
    for (const Diagnostic& d : kernel.error()) diagnostics.Add(d);
    return report();
  }

  // 2. Sizes, checked against the `where` clause, and the inputs.
  // The sizes in the order the parameters' types name them (`m`, `k`, `n` for gemm's a and b).
  std::vector<core::SizeVarId> order;
  for (const tile::Param& p : kernel->params)
    for (const core::Dim& d : kernel->Get(p.value).shape)
      for (core::SizeVarId var : d.Vars())
        if (std::find(order.begin(), order.end(), var) == order.end()) order.push_back(var);
  for (const auto& [var, name] : kernel->size_names)
    if (std::find(order.begin(), order.end(), var) == order.end()) order.push_back(var);
  std::vector<std::string> size_names;
  for (core::SizeVarId var : order)
    if (auto it = kernel->size_names.find(var); it != kernel->size_names.end()) size_names.push_back(it->second);
  sim::RunOptions run_options;
  for (const std::string& size : options.sizes) {
    auto assignment = SplitAssignment(size);
    char* end = nullptr;
    std::int64_t value = assignment ? std::strtoll(assignment->second.c_str(), &end, 10) : 0;
    if (!assignment || *end != '\0' || value <= 0) {
      err << "weft: `--size " << size << "`: expected NAME=N with N a positive integer (`--size m=256`)\n";
      return 2;
    }
    bool found = false;
    for (const auto& [var, name] : kernel->size_names)
      if (name == assignment->first) {
        run_options.sizes[var] = value;
        found = true;
      }
    if (!found) {
      err << "weft: `--size " << size << "`: kernel `" << options.kernel << "` has no size `" << assignment->first
          << "`; its sizes are " << NameList(size_names) << "\n";
      return 2;
    }
  }
  std::vector<std::string> missing;
  for (core::SizeVarId var : order)
    if (!run_options.sizes.count(var) && kernel->size_names.count(var)) missing.push_back(kernel->size_names.at(var));
  if (!missing.empty()) {
    err << "weft: kernel `" << options.kernel << "` needs a value for each of its sizes: give " << NameList(missing)
        << " with --size (`--size " << missing.front() << "=128`)\n";
    return 2;
  }
  auto names = [&](core::SizeVarId var) {
    auto it = kernel->size_names.find(var);
    return it == kernel->size_names.end() ? "?" : it->second;
  };
  auto eval_dim = [&](const core::Dim& d) {
    return core::Evaluate(d, [&](core::SizeVarId var) -> std::int64_t { return run_options.sizes.at(var); });
  };
  for (const core::DimFact& fact : kernel->where) {
    auto lhs = eval_dim(fact.lhs), rhs = eval_dim(fact.rhs);
    if (lhs && rhs && !Holds(*lhs, fact.relation, *rhs)) {
      std::string values;
      for (core::SizeVarId var : order)
        if (kernel->size_names.count(var))
          values += (values.empty() ? "" : ", ") + kernel->size_names.at(var) + " = " +
                    std::to_string(run_options.sizes.at(var));
      err << "weft: the sizes break kernel `" << options.kernel << "`'s `where` clause: `"
          << core::ToString(fact.lhs, names) << " " << core::Spelling(fact.relation) << " "
          << core::ToString(fact.rhs, names) << "` is false with " << values << "\n";
      return 2;
    }
  }
  std::map<std::string, std::string> scalars;
  for (const std::string& text : options.scalars) {
    auto assignment = SplitAssignment(text);
    if (!assignment) {
      err << "weft: `--scalar " << text << "`: expected NAME=VALUE (`--scalar causal=true`)\n";
      return 2;
    }
    scalars[assignment->first] = assignment->second;
  }
  std::vector<runtime::HostTensor> inputs;
  bool narrow_float = false;
  for (std::size_t i = 0; i < kernel->params.size(); ++i) {
    const tile::Param& p = kernel->params[i];
    const tile::Value& v = kernel->Get(p.value);
    if (runtime::IsFloatDtype(v.dtype) && Bits(v.dtype) <= 16) narrow_float = true;
    if (p.out) continue;
    if (auto given = scalars.find(p.name); given != scalars.end()) {
      std::optional<runtime::HostTensor> value;
      if (v.space != tile::Space::Global) value = ParseScalar(v.dtype, given->second);
      if (!value) {
        err << "weft: `--scalar " << p.name << "=" << given->second << "`: `" << p.name << "` is "
            << (v.space == tile::Space::Global ? "a tensor, not a scalar parameter"
                                               : std::string("a scalar of type ") + std::string(Spelling(v.dtype)) +
                                                     (v.dtype == Dtype::Bool ? ": expected `true` or `false`" : ""))
            << "\n";
        return 2;
      }
      inputs.push_back(std::move(*value));
      scalars.erase(given);
      continue;
    }
    std::vector<std::int64_t> shape;
    for (const core::Dim& d : v.shape) {
      auto value = eval_dim(d);
      if (!value || *value < 0) {
        err << "weft: the shape `" << core::ToString(d, names) << "` of `" << p.name << "` has no value\n";
        return 2;
      }
      shape.push_back(*value);
    }
    runtime::HostTensor t = runtime::HostTensor::Zeros(v.dtype, shape);
    runtime::FillRandom(t, options.seed + i);
    inputs.push_back(std::move(t));
  }
  if (!scalars.empty()) {
    std::vector<std::string> names;
    for (const tile::Param& p : kernel->params)
      if (!p.out && kernel->Get(p.value).space != tile::Space::Global) names.push_back(p.name);
    err << "weft: `--scalar " << scalars.begin()->first << "=" << scalars.begin()->second << "`: kernel `"
        << options.kernel << "` has no scalar parameter `" << scalars.begin()->first << "`"
        << (names.empty() ? std::string("; it has none") : "; its scalar parameters are " + NameList(names)) << "\n";
    return 2;
  }

  // 3. The kernel's meaning: the interpreter calls it, as a `def` would, on the same inputs.
  std::optional<interp::RuntimeError> failure;
  interp::EvalResult<std::vector<runtime::HostTensor>> expected = std::vector<runtime::HostTensor>{};
  RunWithDeepStack([&] {
    interp::Interpreter interpreter(checked.module, checked.vars, {});
    expected = interpreter.Call(*def, inputs, run_options.sizes);
  });
  if (!expected) {
    diagnostics.Emit(DiagnosticKind::RuntimeFailure, expected.error().span,
                     "the interpreter's run of `" + options.kernel + "` failed: " + expected.error().message);
    return report();
  }

  // 4. The plan and the simulation.
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

  // 5. The comparison.
  double tolerance = narrow_float ? 1e-2 : 1e-5;
  out << "kernel `" << options.kernel << "` on " << options.target << ": " << simulated->blocks << " blocks of "
      << plan->threads << " threads\n";
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
