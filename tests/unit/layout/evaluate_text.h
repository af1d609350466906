// Layout expressions from text, read the way `weft layout` reads them: syntax::ParseLayoutExpression
// (the X3 grammar), then layout::Evaluate on the tree. A parse error comes back as its id and message,
// `error[E0100]: expected ...`; an evaluation error as the evaluator's message.
#pragma once

#include <string>
#include <string_view>

#include "layout/from_syntax.h"
#include "syntax/parser.h"

namespace weft::layout::testing {

inline Result<Value> EvaluateText(std::string_view text) {
  SourceManager sources;
  Diagnostics diagnostics;
  FileId file = sources.Add("<layout>", std::string(text));
  syntax::LayoutParse parsed = syntax::ParseLayoutExpression(sources, file, diagnostics);
  if (diagnostics.has_errors()) {
    const Diagnostic& first = diagnostics.all().front();
    return MakeError("error[" + std::string(Info(first.kind).id) + "]: " + first.message);
  }
  return Evaluate(parsed.ast, parsed.layout);
}

// A layout literal such as `(4,(2,2)):(2,(1,8))`, or a shape (its compact column-major layout).
inline Result<Layout> ParseLayoutText(std::string_view text) {
  auto value = EvaluateText(text);
  if (!value) return Error{value.error()};
  if (auto* layout = std::get_if<Layout>(&*value)) return *layout;
  if (auto* shape = std::get_if<IntTuple>(&*value)) return Layout::Compact(*shape);
  return MakeError("`" + std::string(text) + "` is " + KindName(*value) + ", not a layout");
}

}  // namespace weft::layout::testing
