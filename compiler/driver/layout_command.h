// `weft layout`: evaluates a layout-algebra expression given on the command line and prints the
// result in CuTe's notation (docs/layouts.md, "The `weft layout` command").
#pragma once

#include <iosfwd>

#include "driver/options.h"

namespace weft::driver {

// Runs `weft layout EXPR [--table] [--grid]` or `weft layout --tv ATOM|list`. Results go to `out`,
// diagnostics to `err`. Returns the exit status: 0 success, 1 an error in the expression (a parse
// error, or E0300/E0301), 2 bad usage (an unknown atom).
int RunLayout(const Options& options, std::ostream& out, std::ostream& err);

}  // namespace weft::driver
