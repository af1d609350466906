// `weft explain FILE [--kernel NAME] [--target sm_80|sm_90a] [--no-timings]`: checks FILE, lowers
// each kernel (or the one named) to the tile IR, synthesizes its layouts and instructions for the
// target, and prints the plan (synth/explain.h). See docs/synthesis.md.
#pragma once

#include <iosfwd>
#include <string>

#include "driver/options.h"

namespace weft::driver {

// The plan of each kernel to `out`, diagnostics to `err`. Returns 0 when every kernel synthesized,
// 1 on an error in the input (a check, lowering or synthesis error), 2 on bad usage (no such
// kernel, an unknown target).
int RunExplain(const Options& options, std::ostream& out, std::ostream& err);

}  // namespace weft::driver
