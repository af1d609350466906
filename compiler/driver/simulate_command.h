// `weft simulate FILE --kernel NAME --target sm_80|sm_90a --size m=256 ... [--seed N]`: checks FILE,
// lowers the kernel to the tile IR, synthesizes its plan for the target, runs it on the thread-level
// simulator (compiler/sim) on random inputs, and compares the outputs with the interpreter's call of
// the kernel on the same inputs (its meaning, from the core IR) within gpu.md's tolerances. See
// docs/simulator.md.
#pragma once

#include <iosfwd>

#include "driver/options.h"

namespace weft::driver {

// Prints one line per output (errors and PASS/FAIL) and the instructions issued to `out`,
// diagnostics to `err`. Returns 0 when every output passes, 1 on a failed comparison or an error in
// the input (a fault in the simulated kernel is error E0700, a failure in the interpreter's run
// E0400), 2 on bad usage (no such kernel, a missing or unknown size, sizes that break the kernel's
// `where` clause, a bad --scalar).
int RunSimulate(const Options& options, std::ostream& out, std::ostream& err);

}  // namespace weft::driver
