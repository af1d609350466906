// `weft simulate FILE --kernel NAME --target sm_80|sm_90a --size m=256 ... [--seed N]`: checks FILE,
// lowers the kernel to the tile IR, synthesizes its plan for the target, runs it on the thread-level
// simulator (compiler/sim) on random inputs, and compares the outputs with the kernel's layout-free
// meaning (sim::Reference) within gpu.md's tolerances. See docs/simulator.md.
#pragma once

#include <iosfwd>

#include "driver/options.h"

namespace weft::driver {

// Prints one line per output (errors and PASS/FAIL) and the instructions issued to `out`,
// diagnostics to `err`. Returns 0 when every output passes, 1 on a failed comparison or an error in
// the input (a fault in the simulated kernel is error E0700), 2 on bad usage (an unknown size).
int RunSimulate(const Options& options, std::ostream& out, std::ostream& err);

}  // namespace weft::driver
