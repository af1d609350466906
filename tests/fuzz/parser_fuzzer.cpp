// Fuzzes the lexer, the parser, diagnostic rendering and the printer. Beyond "no crash, leak or
// hang", each input that parses without errors must round-trip: its printed form parses to the
// same tree and prints identically. A violation traps, so libFuzzer saves the input.
#include <cstddef>
#include <cstdint>
#include <string>

#include "diagnostics/render.h"
#include "syntax/parser.h"
#include "syntax/printer.h"

namespace {

struct Parsed {
  weft::SourceManager sources;
  weft::Diagnostics diagnostics;
  weft::syntax::Ast ast;
};

void ParseInto(Parsed& parsed, std::string text) {
  weft::FileId file = parsed.sources.Add("fuzz.weft", std::move(text));
  parsed.ast = weft::syntax::Parse(parsed.sources, file, parsed.diagnostics);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 64 * 1024) return 0;  // the interesting inputs are small; keep each run fast
  Parsed first;
  ParseInto(first, std::string(reinterpret_cast<const char*>(data), size));
  for (const weft::Diagnostic& diagnostic : first.diagnostics.all()) {
    std::string text = weft::Render(first.sources, diagnostic, /*color=*/true);
    if (text.empty()) __builtin_trap();
  }
  if (first.diagnostics.has_errors()) return 0;

  std::string printed = weft::syntax::Print(first.ast);
  Parsed second;
  ParseInto(second, printed);
  if (second.diagnostics.has_errors()) __builtin_trap();  // the printer wrote something unparsable
  if (weft::syntax::Dump(second.ast) != weft::syntax::Dump(first.ast)) __builtin_trap();
  if (weft::syntax::Print(second.ast) != printed) __builtin_trap();
  return 0;
}
