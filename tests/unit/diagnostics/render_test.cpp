#include <catch2/catch.hpp>

#include "diagnostics/render.h"

namespace weft {
namespace {

TEST_CASE("a diagnostic renders as location and source line and caret", "[render]") {
  SourceManager sources;
  FileId file = sources.Add("m.weft", "def f =\n  let x = 1\ndef g = 2\n");
  Diagnostic error = MakeDiagnostic(DiagnosticKind::ExpectedFound, Span{file, 20, 23}, "`in`", "`def`");
  error.notes.push_back(MakeNote(DiagnosticKind::NoteStartsHere, Span{file, 10, 13}, "this `let`"));
  CHECK(Render(sources, error, false) ==
        "m.weft:3:1: error[E0100]: expected `in`, found `def`\n"
        " 3 | def g = 2\n"
        "   | ^~~\n"
        "m.weft:2:3: note: this `let` starts here\n"
        " 2 |   let x = 1\n"
        "   |   ^~~\n");
}

TEST_CASE("carets line up under tabs and wide characters", "[render]") {
  SourceManager sources;
  FileId file = sources.Add("t.weft", "\t\xC3\xA9 $");
  Diagnostic error = MakeDiagnostic(DiagnosticKind::UnexpectedCharacter, Span{file, 4, 5}, "`$`");
  CHECK(Render(sources, error, false) ==
        "t.weft:1:4: error[E0010]: unexpected character `$`\n"
        " 1 | \t\xC3\xA9 $\n"
        "   | \t  ^\n");
}

TEST_CASE("a span over several lines is underlined to the end of its first line", "[render]") {
  SourceManager sources;
  FileId file = sources.Add("t.weft", "ab cd\nef");
  Diagnostic error = MakeDiagnostic(DiagnosticKind::UnterminatedString, Span{file, 3, 8});
  CHECK(Render(sources, error, false) ==
        "t.weft:1:4: error[E0011]: unterminated string literal\n"
        " 1 | ab cd\n"
        "   |    ^~\n");
}

TEST_CASE("colour codes appear only when asked", "[render]") {
  SourceManager sources;
  FileId file = sources.Add("t.weft", "x");
  Diagnostic error = MakeDiagnostic(DiagnosticKind::UnexpectedCharacter, Span{file, 0, 1}, "`x`");
  CHECK(Render(sources, error, true).find("\033[") != std::string::npos);
  CHECK(Render(sources, error, false).find("\033[") == std::string::npos);
  CHECK(UseColor(ColorMode::Always, -1));
  CHECK_FALSE(UseColor(ColorMode::Never, -1));
  CHECK_FALSE(UseColor(ColorMode::Auto, -1));  // not a terminal
}

TEST_CASE("a diagnostic without a location names weft", "[render]") {
  SourceManager sources;
  Diagnostic error = MakeDiagnostic(DiagnosticKind::CannotReadFile, Span{}, "x.weft", "No such file or directory");
  CHECK(Render(sources, error, false) == "weft: error[E0001]: cannot read `x.weft`: No such file or directory\n");
}

}  // namespace
}  // namespace weft
