// `weft explain`: check -> core -> tile::Lower -> synth::Synthesize -> synth::Explain, per kernel.
// ForEachKernel is the shared front half (`weft build --emit` uses it too).
#include "driver/explain_command.h"

#include <unistd.h>

#include <cstdlib>
#include <iostream>

#include "check/check.h"
#include "diagnostics/render.h"
#include "driver/frontend.h"
#include "driver/kernel_call.h"
#include "driver/kernel_path.h"
#include "graph/graph.h"
#include "schedule/schedule.h"
#include "syntax/parser.h"
#include "synth/explain.h"
#include "synth/synthesize.h"
#include "tile/lower.h"

namespace weft::driver {

std::string ExplainKernel(const tile::Kernel& kernel, const synth::Plan& plan, const ExplainOptions& options) {
  synth::ExplainOptions synth_options;
  synth_options.timings = options.timings;
  synth_options.sources = options.sources;
  std::string out = synth::Explain(kernel, plan, synth_options);
  // Each question of the solver ends at Z3's resource limit, not at a loaded machine's clock: the
  // same answers as a build's, with or without timings.
  schedule::Options schedule_options = schedule::BuildOptions();
  schedule_options.solve_every_loop = true;
  schedule_options.machine = options.machine == "h200" ? &schedule::H200() : &schedule::H100();
  schedule_options.cost.sizes = options.sizes;
  schedule_options.cost.scalars = options.scalars;
  const SourceManager* sources = options.sources;
  auto where = [sources](Span span) -> std::string {
    if (!sources || !span.valid()) return "";
    LineCol lc = sources->Get(span.file).Locate(span.begin);
    return std::to_string(lc.line) + ":" + std::to_string(lc.column);
  };
  schedule::Schedule s = schedule::Build(kernel, plan, schedule_options, where);
  if (!s.loops.empty()) out += "schedule:\n" + schedule::Print(s, options.timings);
  return out;
}

int ForEachKernel(const Options& options, std::ostream& err, KernelPhase last, const KernelAction& action,
                  const MainAction& main_action) {
  SourceManager sources;
  Diagnostics diagnostics;
  bool color = UseColor(options.color, STDERR_FILENO);
  auto report = [&] {
    for (const Diagnostic& d : diagnostics.all()) err << Render(sources, d, color);
    return diagnostics.has_errors() ? 1 : 0;
  };
  auto target = synth::ParseTarget(options.target);
  if (!target) {
    err << "weft: unknown target `" << options.target << "`; expected `sm_80` or `sm_90a`\n";
    return 2;
  }
  const std::string& path = options.inputs.front();
  Front front = LoadParseCheck(sources, diagnostics, path);
  if (!front.result || diagnostics.has_errors()) return report();
  const check::CheckResult& checked = *front.result;
  const FileId file = *front.file;

  int kernels = 0;
  for (const core::Def& def : checked.module.defs()) {
    if (!tile::IsKernel(def) || def.span.file != file) continue;
    if (!options.kernel.empty() && def.name != options.kernel) continue;
    ++kernels;
    // The cost model's sizes by name (`--size m=256`), for the choice of a `tiles` clause.
    std::map<std::string, std::int64_t> sizes;
    for (const std::string& text : options.sizes)
      if (std::size_t eq = text.find('='); eq != std::string::npos)
        sizes[text.substr(0, eq)] = std::strtoll(text.c_str() + eq + 1, nullptr, 10);
    KernelPath path = CompileKernel(checked.module, checked.vars, def, *target, sources, last, diagnostics, sizes);
    bool reached = last == KernelPhase::Tile       ? path.kernel.has_value()
                   : last == KernelPhase::Plan     ? path.plan.has_value()
                   : last == KernelPhase::Schedule ? path.schedule.has_value()
                                                   : path.device.has_value();
    if (reached) action(path, sources, diagnostics, kernels);
  }
  if (main_action && options.kernel.empty()) {
    for (const core::Def& def : checked.module.defs()) {
      if (def.name == "main" && def.ok && def.span.file == file && !def.kernel)
        main_action(checked.module, checked.vars, def, sources, diagnostics);
    }
  }
  if (kernels == 0 && !options.kernel.empty()) {
    err << "weft: `" << path << "` has no kernel named `" << options.kernel << "`\n";
    return 2;
  }
  return report();
}

int RunExplain(const Options& options, std::ostream& out, std::ostream& err) {
  bool explained = false, bad_usage = false;
  int status = ForEachKernel(
      options, err, KernelPhase::Plan,
      [&](const KernelPath& path, const SourceManager& sources, Diagnostics&, int index) {
        const tile::Kernel& kernel = *path.kernel;
        const synth::Plan& plan = *path.plan;
        ExplainOptions explain;
        explain.timings = options.timings;
        explain.sources = &sources;
        explain.machine = options.machine;
        if (!options.sizes.empty() || !options.scalars.empty()) {
          // The cost model's sizes and scalars, checked as `weft simulate` checks them (every size,
          // the `where` clause, the scalars' types); scalars not given stay 0 or false.
          auto call = PrepareKernelCall(kernel, options.kernel, options.sizes, options.scalars, 1, false, err);
          if (!call) {
            bad_usage = true;
            return;
          }
          for (const auto& [var, value] : call->sizes) explain.sizes[kernel.size_names.at(var)] = value;
          for (const std::string& text : options.scalars) {
            std::string name = text.substr(0, text.find('=')), value = text.substr(text.find('=') + 1);
            explain.scalars[name] = value == "true"    ? 1.0
                                    : value == "false" ? 0.0
                                                       : std::strtod(value.c_str(), nullptr);
          }
        }
        if (index > 1) out << "\n";
        out << path.tiles << ExplainKernel(kernel, plan, explain);
        explained = true;
      },
      [&](const core::Module& module, const core::VarStore& vars, const core::Def& main, const SourceManager& sources,
          Diagnostics&) {
        auto graph = graph::Build(module, vars, main);
        if (!graph) {
          // What `main` does that is not compiled yet is `weft build`'s error to report.
          return;
        }
        if (explained) out << "\n";
        graph::FuseOptions fuse;
        fuse.views_in_place = synth::ParseTarget(options.target) == synth::Target::Sm90a;
        out << graph::Summary(*graph, graph::Fuse(*graph, fuse), vars, sources);
      });
  out.flush();
  return bad_usage ? 2 : status;
}

}  // namespace weft::driver
