// The kernels of the repository's programs, checked and lowered, for the tests that range over all
// of them (choose_test.cpp, constraints_test.cpp).
#pragma once

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "check/check.h"
#include "syntax/parser.h"
#include "tile/lower.h"

namespace weft::synth {

inline std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Every .weft file under the directories that holds a kernel (lit tests: their `--` lines are
// comments to the parser too).
inline std::vector<std::filesystem::path> KernelFiles() {
  std::vector<std::filesystem::path> out;
  for (const char* dir : {"stdlib", "examples", "tests/gpu/programs", "tests/lit"}) {
    for (const auto& entry :
         std::filesystem::recursive_directory_iterator(std::filesystem::path(WEFT_SOURCE_DIR) / dir)) {
      if (entry.path().extension() != ".weft") continue;
      if (ReadFile(entry.path()).find("kernel ") == std::string::npos) continue;
      out.push_back(entry.path());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The kernels of a file that check and lower (files that do not, and error tests, give none).
inline std::vector<tile::Kernel> Kernels(const std::filesystem::path& path) {
  SourceManager sources;
  Diagnostics diagnostics;
  FileId file = sources.Add(path.string(), ReadFile(path));
  syntax::Ast ast = syntax::Parse(sources, file, diagnostics);
  std::vector<tile::Kernel> out;
  if (diagnostics.has_errors()) return out;
  check::CheckOptions options;
  options.stdlib_dir = WEFT_SOURCE_DIR "/stdlib";
  check::CheckResult result = check::Check(sources, ast, diagnostics, options);
  if (diagnostics.has_errors()) return out;
  for (const core::Def& def : result.module.defs()) {
    if (!tile::IsKernel(def)) continue;
    // A kernel with a `tiles` clause: each of its instances (the kernel itself is the first).
    std::vector<const core::Def*> instances = {&def};
    if (!def.kernel->instances.empty()) {
      instances.clear();
      for (const core::Def& instance : def.kernel->instances) instances.push_back(&instance);
    }
    for (const core::Def* instance : instances)
      if (auto k = tile::Lower(result.module, result.vars, *instance)) out.push_back(std::move(*k));
  }
  return out;
}

}  // namespace weft::synth
