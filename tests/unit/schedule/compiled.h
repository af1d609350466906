// The kernels the schedule's tests run on: every kernel of a source file, lowered and synthesized
// for a target, compiled once per test run (synthesizing stdlib/gemm.weft for sm_80 takes seconds).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "base/source.h"
#include "synth/plan.h"
#include "tile/ir.h"

namespace weft::schedule::testing {

struct Compiled {
  SourceManager sources;
  std::vector<tile::Kernel> kernels;
  std::vector<synth::Plan> plans;
};

// `file` is relative to the source tree; the kernels defined in it (not those it imports).
const Compiled* Cached(const std::string& file, synth::Target target);

// The index of kernel `name` in `c` (the test fails when there is none).
std::size_t Find(const Compiled& c, const std::string& name);

}  // namespace weft::schedule::testing
