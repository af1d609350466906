#include "compiled.h"

#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include "check/check.h"
#include "syntax/parser.h"
#include "synth/synthesize.h"
#include "tile/lower.h"

namespace weft::schedule::testing {
namespace {

std::unique_ptr<Compiled> Compile(const std::string& file, synth::Target target) {
  auto out = std::make_unique<Compiled>();
  std::ifstream in(std::string(WEFT_SOURCE_DIR) + "/" + file);
  std::stringstream text;
  text << in.rdbuf();
  Diagnostics diagnostics;
  FileId id = out->sources.Add(file, text.str());
  syntax::Ast ast = syntax::Parse(out->sources, id, diagnostics);
  check::CheckOptions options;
  options.stdlib_dir = WEFT_SOURCE_DIR "/stdlib";
  check::CheckResult result = check::Check(out->sources, ast, diagnostics, options);
  REQUIRE_FALSE(diagnostics.has_errors());
  for (const core::Def& def : result.module.defs()) {
    if (!tile::IsKernel(def) || def.span.file != id) continue;
    auto kernel = tile::Lower(result.module, result.vars, def);
    if (!kernel) continue;
    auto plan = synth::Synthesize(*kernel, target);
    if (!plan) continue;
    out->kernels.push_back(*kernel);
    out->plans.push_back(*plan);
  }
  return out;
}

}  // namespace

const Compiled* Cached(const std::string& file, synth::Target target) {
  static std::map<std::pair<std::string, synth::Target>, std::unique_ptr<Compiled>> cache;
  auto& slot = cache[{file, target}];
  if (!slot) slot = Compile(file, target);
  return slot.get();
}

std::size_t Find(const Compiled& c, const std::string& name) {
  for (std::size_t i = 0; i < c.kernels.size(); ++i)
    if (c.kernels[i].name == name) return i;
  FAIL("no kernel " << name);
  return 0;
}

}  // namespace weft::schedule::testing
