// Lowering a checked kernel (a core::Def with `kernel` set) to the tile IR (tile/ir.h). See
// docs/tile-ir.md for what is lowered to what and what is refused.
#pragma once

#include <string>
#include <vector>

#include "base/result.h"
#include "core/ir.h"
#include "diagnostics/diagnostic.h"
#include "tile/ir.h"

namespace weft::tile {

// Whether the definition is a kernel (core::Def::kernel is set).
bool IsKernel(const core::Def& def);

// The kernel's tile IR, or the diagnostics (E0500-E0549) that say what in its body the kernel tier
// does not take. @pre `kernel` checked (kernel.ok) and is a kernel (kernel.kernel is set).
Result<Kernel, std::vector<Diagnostic>> Lower(const core::Module& module, const core::VarStore& vars,
                                              const core::Def& kernel);

// The kernels of one file, lowered: what `weft check` (its types and --emit=tile) and the language
// server report. The tier's errors (E05xx) are errors of the file, found without a target;
// synthesis (E06xx) depends on the target and is left to `weft explain` and `weft build`.
struct FileKernels {
  std::vector<Kernel> lowered;       // in source order
  std::vector<std::string> refused;  // the names of the kernels whose lowering failed
};

// Lowers each kernel of `file` that checked (imported ones are not), in source order, and adds what
// the tier refuses in each to `diagnostics`.
FileKernels LowerKernels(const core::Module& module, const core::VarStore& vars, FileId file, Diagnostics& diagnostics);

}  // namespace weft::tile
