// Renders diagnostics for people:
//
//   file.weft:3:12: error[E0100]: expected `in` to end this `let`, found `def`
//       3 | let x = 1
//         |          ^
//   file.weft:2:3: note: this `let` starts here
//       2 |   let x = 1
//         |   ^~~
//
// Colour is used only when asked (ColorMode::Always) or when stderr is a terminal (Auto).
#pragma once

#include <iosfwd>
#include <string>

#include "base/source.h"
#include "diagnostics/diagnostic.h"

namespace weft {

enum class ColorMode { Auto, Always, Never };

// Decides Auto for the given file descriptor: a terminal that is not TERM=dumb, and NO_COLOR unset.
bool UseColor(ColorMode mode, int fd);

std::string Render(const SourceManager& sources, const Diagnostic& diagnostic, bool color);

}  // namespace weft
