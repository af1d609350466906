// The front of every command's pipeline, written once: where `import` finds the standard library,
// and a file loaded, parsed and checked (docs/architecture.md, "The driver's recipe"). `weft check`,
// `run`, `build`, `call`, `explain`, `simulate`, the REPL and the language server start here.
#pragma once

#include <optional>
#include <string>

#include "base/source.h"
#include "check/check.h"
#include "diagnostics/diagnostic.h"
#include "syntax/ast.h"

namespace weft::driver {

// $WEFT_STDLIB when it is set, else this source tree's stdlib/ (WEFT_STDLIB_DIR); read once.
const std::string& StdlibDir();

// The checker's options for a program: the standard library at StdlibDir().
check::CheckOptions DefaultCheckOptions();

// PATH's text into `sources` (`-`: standard input), or E0001 in `diagnostics`.
std::optional<FileId> LoadInput(SourceManager& sources, const std::string& path, Diagnostics& diagnostics);

// A file through the front phases. Each is run only when the one before succeeded: `file` once it
// is loaded, `ast` once it is parsed (it may hold parse errors, reported in the diagnostics), and
// `result` once it parsed without errors and was checked (its definitions may still have errors).
struct Front {
  std::optional<FileId> file;
  std::optional<syntax::Ast> ast;
  std::optional<check::CheckResult> result;
};

// Loads and parses PATH; Check below goes on.
Front LoadParse(SourceManager& sources, Diagnostics& diagnostics, const std::string& path);
// Parses a file already in `sources` (text the driver made, such as an exported function's wrapper).
Front Parse(SourceManager& sources, Diagnostics& diagnostics, FileId file);
// Checks what parsed cleanly; nothing after parse errors (a broken declaration would only echo them).
void Check(Front& front, SourceManager& sources, Diagnostics& diagnostics,
           const check::CheckOptions& options = DefaultCheckOptions());
// LoadParse, then Check.
Front LoadParseCheck(SourceManager& sources, Diagnostics& diagnostics, const std::string& path,
                     const check::CheckOptions& options = DefaultCheckOptions());

}  // namespace weft::driver
