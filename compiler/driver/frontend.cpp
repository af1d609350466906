#include "driver/frontend.h"

#include <cstdlib>
#include <iostream>
#include <iterator>

#include "syntax/parser.h"

namespace weft::driver {

const std::string& StdlibDir() {
  static const std::string dir = [] {
    const char* stdlib = std::getenv("WEFT_STDLIB");
    return std::string(stdlib ? stdlib : WEFT_STDLIB_DIR);
  }();
  return dir;
}

check::CheckOptions DefaultCheckOptions() {
  check::CheckOptions options;
  options.stdlib_dir = StdlibDir();
  return options;
}

std::optional<FileId> LoadInput(SourceManager& sources, const std::string& path, Diagnostics& diagnostics) {
  if (path == "-") {
    std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
    return sources.Add("<stdin>", std::move(text));
  }
  std::string reason;
  std::optional<FileId> file = sources.Load(path, reason);
  if (!file) diagnostics.Emit(DiagnosticKind::CannotReadFile, Span{}, path, reason);
  return file;
}

Front Parse(SourceManager& sources, Diagnostics& diagnostics, FileId file) {
  Front front;
  front.file = file;
  front.ast = syntax::Parse(sources, file, diagnostics);
  return front;
}

Front LoadParse(SourceManager& sources, Diagnostics& diagnostics, const std::string& path) {
  std::optional<FileId> file = LoadInput(sources, path, diagnostics);
  if (!file) return Front{};
  return Parse(sources, diagnostics, *file);
}

void Check(Front& front, SourceManager& sources, Diagnostics& diagnostics, const check::CheckOptions& options) {
  if (!front.ast || diagnostics.has_errors()) return;
  front.result = check::Check(sources, *front.ast, diagnostics, options);
}

Front LoadParseCheck(SourceManager& sources, Diagnostics& diagnostics, const std::string& path,
                     const check::CheckOptions& options) {
  Front front = LoadParse(sources, diagnostics, path);
  Check(front, sources, diagnostics, options);
  return front;
}

}  // namespace weft::driver
