#include <catch2/catch.hpp>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "diagnostics/diagnostic.h"

namespace weft {
namespace {

// The highest `{N}` placeholder in a formatv string, plus one.
int CountPlaceholders(std::string_view format) {
  int count = 0;
  for (std::size_t i = 0; i + 2 < format.size(); ++i) {
    if (format[i] == '{' && format[i + 1] >= '0' && format[i + 1] <= '9' && format[i + 2] == '}') {
      count = std::max(count, format[i + 1] - '0' + 1);
    }
  }
  return count;
}

TEST_CASE("every diagnostic kind is well formed", "[diagnostics]") {
  std::set<std::string_view> ids;
  for (const DiagnosticInfo& info : AllDiagnosticInfos()) {
    INFO(info.name);
    if (info.severity == Severity::Note) {
      CHECK(info.id.empty());
    } else {
      // Errors E0000-E9999, warnings W0000-W9999.
      CHECK(std::regex_match(std::string(info.id),
                             std::regex(info.severity == Severity::Warning ? "W[0-9]{4}" : "E[0-9]{4}")));
      CHECK(ids.insert(info.id).second);  // ids are unique
    }
    CHECK(CountPlaceholders(info.format) == info.arity);
    // Wording: lowercase first letter, no final period.
    CHECK_FALSE(info.format.empty());
    CHECK_FALSE((info.format.front() >= 'A' && info.format.front() <= 'Z'));
    CHECK(info.format.back() != '.');
  }
}

TEST_CASE("every error id has an entry in docs/error_index.md", "[diagnostics]") {
  std::ifstream in(WEFT_SOURCE_DIR "/docs/error_index.md");
  REQUIRE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  for (const DiagnosticInfo& info : AllDiagnosticInfos()) {
    if (info.id.empty()) continue;
    INFO(info.id);
    CHECK(text.str().find("## " + std::string(info.id)) != std::string::npos);
  }
}

TEST_CASE("messages are formatted from their arguments", "[diagnostics]") {
  Diagnostics diagnostics;
  Diagnostic& d = diagnostics.Emit(DiagnosticKind::ExpectedFound, Span{}, "`in`", "`def`");
  CHECK(d.message == "expected `in`, found `def`");
  CHECK(diagnostics.error_count() == 1);
  Note note = MakeNote(DiagnosticKind::NoteStartsHere, Span{}, "this `let`");
  CHECK(note.message == "this `let` starts here");
  // A format with literal braces and no arguments is used as it is.
  CHECK(FormatMessage(DiagnosticKind::UnterminatedComment) == "unterminated block comment: `{-` has no matching `-}`");
}

}  // namespace
}  // namespace weft
