// `weft build FILE --emit=ptx|llvm [--kernel NAME] [--target T]`: each kernel's device code
// (codegen::EmitKernel). Executables come with the host side of code generation.
#pragma once

#include <iosfwd>

#include "driver/options.h"

namespace weft::driver {

// The PTX or LLVM IR of each kernel to `out`, diagnostics to `err`. Returns as RunExplain does.
int RunBuild(const Options& options, std::ostream& out, std::ostream& err);

}  // namespace weft::driver
