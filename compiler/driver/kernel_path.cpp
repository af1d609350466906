#include "driver/kernel_path.h"

#include <utility>

#include "codegen/instance.h"
#include "synth/synthesize.h"
#include "tile/lower.h"

namespace weft::driver {

namespace {

template <typename T>
bool Failed(const Result<T, std::vector<Diagnostic>>& result, Diagnostics& diagnostics) {
  if (result) return false;
  for (const Diagnostic& d : result.error()) diagnostics.Add(d);
  return true;
}

}  // namespace

KernelPath CompileKernel(const core::Module& module, const core::VarStore& vars, const core::Def& def,
                         synth::Target target, const SourceManager& sources, KernelPhase last, Diagnostics& diagnostics,
                         const std::map<std::string, std::int64_t>& sizes) {
  const core::Def* instance = &def;
  std::string tiles;
  if (def.kernel && !def.kernel->instances.empty() && last != KernelPhase::Tile) {
    std::optional<codegen::TileChoice> choice = codegen::ChooseTiles(module, vars, def, target, sizes);
    instance = &def.kernel->instances[choice ? choice->index : 0];  // none builds: the first says why
    if (choice) tiles = codegen::Print(def, *choice);
  }
  auto kernel = tile::Lower(module, vars, *instance);
  if (Failed(kernel, diagnostics)) return {};
  if (last == KernelPhase::Tile) return KernelPath{std::move(*kernel), {}, {}, {}, {}};
  KernelPath path = CompileKernel(std::move(*kernel), target, sources, last, diagnostics);
  path.tiles = std::move(tiles);
  return path;
}

KernelPath CompileKernel(tile::Kernel kernel, synth::Target target, const SourceManager& sources, KernelPhase last,
                         Diagnostics& diagnostics) {
  KernelPath path;
  path.kernel = std::move(kernel);
  if (last == KernelPhase::Tile) return path;
  auto plan = synth::Synthesize(*path.kernel, target);
  if (Failed(plan, diagnostics)) return path;
  path.plan = std::move(*plan);
  if (last == KernelPhase::Plan) return path;
  path.schedule = schedule::Build(*path.kernel, *path.plan, schedule::BuildOptions());
  if (last == KernelPhase::Schedule) return path;
  auto device = codegen::EmitKernel(*path.kernel, *path.plan, *path.schedule, sources);
  if (Failed(device, diagnostics)) return path;
  path.device = std::move(*device);
  return path;
}

}  // namespace weft::driver
