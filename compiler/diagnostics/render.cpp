#include "diagnostics/render.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace weft {
namespace {

constexpr const char* kBold = "\033[1m";
constexpr const char* kRed = "\033[1;31m";
constexpr const char* kCyan = "\033[1;36m";
constexpr const char* kGreen = "\033[1;32m";
constexpr const char* kBlue = "\033[1;34m";
constexpr const char* kReset = "\033[0m";

struct Painter {
  bool color;
  std::string operator()(const char* style, std::string_view text) const {
    if (!color) return std::string(text);
    return std::string(style) + std::string(text) + kReset;
  }
};

// One located message: the header line, the source line and the caret line under the span. The
// line number is left-aligned in a gutter `gutter_width` digits wide, so that all the lines of one
// diagnostic (its error and its notes) share one gutter, as in rustc.
void RenderLocated(std::string& out, const SourceManager& sources, Span span, Severity severity, std::string_view id,
                   std::string_view message, const Painter& paint, std::size_t gutter_width) {
  const char* style = severity == Severity::Error ? kRed : severity == Severity::Warning ? kBlue : kCyan;
  std::string label = severity == Severity::Error ? "error" : severity == Severity::Warning ? "warning" : "note";
  if (!id.empty()) label += "[" + std::string(id) + "]";

  if (!span.valid()) {
    out += paint(kBold, "weft: ") + paint(style, label) + paint(kBold, ": ") + paint(kBold, message) + "\n";
    return;
  }
  const SourceBuffer& buffer = sources.Get(span.file);
  LineCol at = buffer.Locate(span.begin);
  out +=
      paint(kBold, std::string(buffer.name()) + ":" + std::to_string(at.line) + ":" + std::to_string(at.column) + ": ");
  out += paint(style, label) + paint(kBold, ": ") + paint(kBold, message) + "\n";

  std::string_view line = buffer.Line(at.line);
  std::string number = std::to_string(at.line);
  number.resize(std::max(number.size(), gutter_width), ' ');
  std::string gutter(number.size() + 1, ' ');
  std::string_view shown = line;
  while (!shown.empty() && (shown.back() == ' ' || shown.back() == '\t')) shown.remove_suffix(1);
  out += paint(kBlue, " " + number + " |") + (shown.empty() ? "" : " " + std::string(shown)) + "\n";

  // The caret line copies the tabs of the source line so that the caret lines up.
  std::string marks;
  std::size_t column = 0;
  std::size_t byte = 0;
  for (; byte < line.size() && column + 1 < at.column; ++byte) {
    unsigned char c = static_cast<unsigned char>(line[byte]);
    if ((c & 0xC0) == 0x80) continue;
    marks += c == '\t' ? '\t' : ' ';
    ++column;
  }
  // Underline to the end of the span or of the line, whichever comes first; at least one caret.
  std::uint32_t line_start = span.begin - static_cast<std::uint32_t>(byte);
  std::uint32_t span_end_in_line =
      std::min<std::uint32_t>(span.end, line_start + static_cast<std::uint32_t>(line.size()));
  std::uint32_t width = span_end_in_line > span.begin
                            ? CountCodePoints(buffer.text().substr(span.begin, span_end_in_line - span.begin))
                            : 1;
  std::string underline = "^" + std::string(width > 0 ? width - 1 : 0, '~');
  out += paint(kBlue, gutter + " | ") + marks + paint(kGreen, underline) + "\n";
}

}  // namespace

bool UseColor(ColorMode mode, int fd) {
  if (mode != ColorMode::Auto) return mode == ColorMode::Always;
  if (std::getenv("NO_COLOR") != nullptr) return false;
  const char* term = std::getenv("TERM");
  if (term != nullptr && std::strcmp(term, "dumb") == 0) return false;
  return isatty(fd) != 0;
}

std::string Render(const SourceManager& sources, const Diagnostic& diagnostic, bool color) {
  Painter paint{color};
  const DiagnosticInfo& info = Info(diagnostic.kind);
  std::size_t width = 0;
  auto widen = [&](Span span) {
    if (span.valid()) width = std::max(width, std::to_string(sources.Get(span.file).Locate(span.begin).line).size());
  };
  widen(diagnostic.span);
  for (const Note& note : diagnostic.notes) widen(note.span);
  std::string out;
  RenderLocated(out, sources, diagnostic.span, info.severity, info.id, diagnostic.message, paint, width);
  for (const Note& note : diagnostic.notes) {
    RenderLocated(out, sources, note.span, Severity::Note, "", note.message, paint, width);
  }
  return out;
}

}  // namespace weft
