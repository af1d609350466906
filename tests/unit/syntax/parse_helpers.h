// Test helpers: parse a string and look at the tree and the diagnostics.
#pragma once

#include <string>
#include <vector>

#include "diagnostics/render.h"
#include "syntax/lexer.h"
#include "syntax/parser.h"
#include "syntax/printer.h"

namespace weft::syntax::testing {

struct Parsed {
  SourceManager sources;
  Diagnostics diagnostics;
  Ast ast;
  std::string dump;

  std::string Errors() const {
    std::string out;
    for (const Diagnostic& d : diagnostics.all()) out += Render(sources, d, false);
    return out;
  }
};

inline Parsed ParseText(const std::string& text) {
  Parsed parsed;
  FileId file = parsed.sources.Add("t.weft", text);
  parsed.ast = Parse(parsed.sources, file, parsed.diagnostics);
  parsed.dump = Dump(parsed.ast);
  return parsed;
}

// The S-expression of the body of `def f = <expr>`.
inline std::string DumpExpr(const std::string& expr) {
  Parsed parsed = ParseText("def f = " + expr);
  if (parsed.diagnostics.has_errors()) return "error: " + parsed.Errors();
  const std::string prefix = "(def f (sizes) (params) (no-type) (where) ";
  std::string dump = parsed.dump;
  if (dump.rfind(prefix, 0) != 0) return "unexpected: " + dump;
  return dump.substr(prefix.size(), dump.size() - prefix.size() - 2);  // drop ")\n"
}

}  // namespace weft::syntax::testing
