// `weft layout`; see layout_command.h.
//
// 1. The EXPR becomes a source buffer named `<layout>`, so that diagnostics point into it with a caret.
// 2. syntax::ParseLayoutExpression parses it (the X3 grammar's layout rules; no other parser exists).
// 3. layout::Evaluate walks the tree; a failed precondition is error E0300 at the call that failed.
// 4. The value prints with layout::ToString, which the grammar reads back; --table and --grid draw it,
//    and a value that is not a layout (a tiler, a swizzle) cannot be drawn: error E0301.
// `--tv` is separate: it looks an atom up (layout::FindAtom) and draws each operand's TV layout.
#include "driver/layout_command.h"

#include <unistd.h>

#include <algorithm>
#include <optional>
#include <ostream>
#include <string>
#include <variant>

#include "diagnostics/render.h"
#include "layout/atoms.h"
#include "layout/from_syntax.h"
#include "layout/tv_layout.h"
#include "syntax/parser.h"

namespace weft::driver {
namespace {

std::string Extent(const layout::TvLayout& tv) {
  return std::to_string(tv.rows) + "x" + std::to_string(tv.cols);
}

std::string Threads(int threads) {
  return std::to_string(threads) + (threads == 1 ? " thread" : " threads");
}

std::string PadRight(const std::string& text, std::size_t width) {
  return text + std::string(width - std::min(width, text.size()), ' ');
}

// One atom a line, in columns: name, first target, threads, operands with their tile extents.
void ListAtoms(std::ostream& out) {
  std::size_t name_width = 0, target_width = 0, threads_width = 0;
  for (const layout::Atom& atom : layout::Atoms()) {
    name_width = std::max(name_width, atom.name.size());
    target_width = std::max(target_width, atom.target.size());
    threads_width = std::max(threads_width, Threads(atom.threads).size());
  }
  for (const layout::Atom& atom : layout::Atoms()) {
    std::string line = PadRight(atom.name, name_width) + "  " + PadRight(atom.target, target_width) + "  " +
                       PadRight(Threads(atom.threads), threads_width);
    for (const layout::AtomOperand& operand : atom.operands) line += "  " + operand.name + " " + Extent(operand.tv);
    out << line << "\n";
  }
}

void DrawAtom(const layout::Atom& atom, std::ostream& out) {
  out << atom.name << ": " << atom.instruction << " (" << atom.target << "), " << Threads(atom.threads) << "\n";
  if (!atom.note.empty()) out << atom.note << "\n";
  for (const layout::AtomOperand& operand : atom.operands) {
    out << "\n"
        << operand.name << ": " << Extent(operand.tv) << " of " << operand.element_bits << "-bit elements in "
        << (operand.in_registers ? "registers" : "memory") << ", " << layout::ToString(operand.tv.layout) << "\n"
        << layout::FormatTvGrid(operand.tv);
  }
}

int RunTv(const std::string& name, std::ostream& out, std::ostream& err) {
  if (name == "list") {
    ListAtoms(out);
    return 0;
  }
  auto atom = layout::FindAtom(name);
  if (!atom) {
    err << "weft: " << atom.error() << "\n";
    return 2;
  }
  DrawAtom(*atom, out);
  return 0;
}

// What --table and --grid draw of `value`, or nothing (and error E0301) when it is not a layout. A
// shape is drawn as its compact column-major layout, as operations take it.
std::optional<std::string> Drawing(const layout::Value& value, const Options& options, Span span,
                                   Diagnostics& diagnostics) {
  const auto* shape = std::get_if<layout::IntTuple>(&value);
  const auto* plain = std::get_if<layout::Layout>(&value);
  const auto* swizzled = std::get_if<layout::SwizzledLayout>(&value);
  std::optional<layout::Layout> compact;
  if (shape != nullptr) plain = &compact.emplace(layout::Layout::Compact(*shape));
  if (plain == nullptr && swizzled == nullptr) {
    diagnostics.Emit(DiagnosticKind::LayoutNotDrawable, span, options.table ? "`--table`" : "`--grid`",
                     layout::KindName(value), layout::ToString(value));
    return std::nullopt;
  }
  std::string text;
  if (options.grid) text += plain ? layout::FormatLayoutGrid(*plain) : layout::FormatLayoutGrid(*swizzled);
  if (options.table) text += plain ? layout::FormatLayoutTable(*plain) : layout::FormatLayoutTable(*swizzled);
  return text;
}

}  // namespace

int RunLayout(const Options& options, std::ostream& out, std::ostream& err) {
  if (options.tv) return RunTv(*options.tv, out, err);

  SourceManager sources;
  Diagnostics diagnostics;
  FileId file = sources.Add("<layout>", options.inputs.front());
  syntax::LayoutParse parsed = syntax::ParseLayoutExpression(sources, file, diagnostics);
  if (parsed.layout.valid()) {
    if (auto value = layout::Evaluate(parsed.ast, parsed.layout, diagnostics)) {
      std::optional<std::string> drawing = "";
      if (options.table || options.grid)
        drawing = Drawing(*value, options, parsed.ast.Get(parsed.layout).span, diagnostics);
      if (drawing) out << layout::ToString(*value) << "\n" << *drawing;
    }
  }
  out.flush();
  bool use_color = UseColor(options.color, STDERR_FILENO);
  for (const Diagnostic& diagnostic : diagnostics.all()) err << Render(sources, diagnostic, use_color);
  return diagnostics.has_errors() ? 1 : 0;
}

}  // namespace weft::driver
