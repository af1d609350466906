// The choice of a kernel's instance (instance.h).
#include "codegen/instance.h"

#include <cmath>
#include <cstdio>

#include "schedule/schedule.h"
#include "solver/optimize.h"
#include "synth/synthesize.h"
#include "tile/lower.h"

namespace weft::codegen {

std::optional<TileChoice> ChooseTiles(const core::Module& module, const core::VarStore& vars, const core::Def& def,
                                      synth::Target target, const std::map<std::string, std::int64_t>& sizes) {
  const std::vector<core::Def>& instances = def.kernel->instances;
  TileChoice out;
  std::vector<std::optional<std::int64_t>>& costs = out.costs;
  for (const core::Def& instance : instances) {
    InstanceCost cost;
    const core::KernelInfo& info = *instance.kernel;
    for (std::size_t k = 0; k < info.tile_sizes.size(); ++k)
      cost.values += (k ? ", " : "") + info.tile_sizes[k].name + " = " + std::to_string(info.tile_values[k]);
    std::optional<std::int64_t> nanoseconds;
    auto kernel = tile::Lower(module, vars, instance);
    if (!kernel) {
      cost.why = kernel.error().front().message;
    } else if (auto plan = synth::Synthesize(*kernel, target); !plan) {
      cost.why = plan.error().front().message;
    } else {
      schedule::Options options = schedule::BuildOptions();
      options.solve_every_loop = true;  // a prediction needs the loop's schedule
      options.cost.sizes = sizes;
      schedule::Schedule s = schedule::Build(*kernel, *plan, options);
      if (s.prediction) cost.seconds = s.prediction->seconds;
      if (s.prediction && out.sizes.empty()) out.sizes = s.prediction->sizes;
      nanoseconds = cost.seconds ? std::llround(*cost.seconds * 1e9) : 0;
    }
    costs.push_back(nanoseconds);
    out.instances.push_back(std::move(cost));
  }
  solver::Session session;
  std::optional<synth::InstanceChoice> chosen = synth::ChooseInstanceByZ3(costs, &session, out.unknown);
  if (!chosen) chosen = synth::ChooseInstanceBySearch(costs);
  if (!chosen) return std::nullopt;
  out.chosen = *chosen;
  out.index = static_cast<std::size_t>(chosen->index);
  return out;
}

std::string Print(const core::Def& def, const TileChoice& choice) {
  const synth::InstanceChoice& c = choice.chosen;
  std::string out = "tiles: " + choice.instances[choice.index].values + " (instance `" +
                    def.kernel->instances[choice.index].name + "`), chosen by " +
                    std::string(synth::Spelling(c.chooser));
  if (c.chooser == synth::Chooser::kZ3)
    out += c.optimal ? " (proved optimal" : " (not proved optimal: " + c.status;
  else
    out += " (" + (choice.unknown.empty() ? std::string("every instance tried") : choice.unknown);
  out += ", " + std::to_string(choice.instances.size()) + " instances) of least predicted time" +
         (choice.sizes.empty() ? std::string() : " at " + choice.sizes) + ":\n";
  for (std::size_t i = 0; i < choice.instances.size(); ++i) {
    const InstanceCost& cost = choice.instances[i];
    out += "  " + cost.values + ": ";
    if (!cost.why.empty()) {
      out += "does not build: " + cost.why;
    } else if (cost.seconds) {
      char buffer[32];
      std::snprintf(buffer, sizeof buffer, "%.1f", *cost.seconds * 1e6);
      out += std::string(buffer) + " us";
    } else {
      out += "no predicted time (no `pipeline`)";
    }
    out += i == choice.index ? " (chosen)\n" : "\n";
  }
  return out;
}

}  // namespace weft::codegen
