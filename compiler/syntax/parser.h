// The parser: tokens to an Ast, with the grammar written in Boost.Spirit X3 (grammar.cpp; X3 does
// not leave this folder). Errors are diagnostics: "expected X, found Y" at the token where parsing
// stopped, with a note at the construct left open. After an error, parsing resumes at the next
// top-level declaration, so one run reports every broken declaration.
//
// Recursion is bounded: nesting deeper than kMaxNesting (parentheses, `let` chains, prefix `-`,
// types, dims, patterns, layouts) is refused with an error, and parsing runs on a thread with a
// large stack (base/stack.h), so no input overflows the stack in any build preset.
#pragma once

#include "base/source.h"
#include "diagnostics/diagnostic.h"
#include "syntax/ast.h"

namespace weft::syntax {

inline constexpr int kMaxNesting = 1000;

// Lexes and parses a whole file.
Ast Parse(const SourceManager& sources, FileId file, Diagnostics& diagnostics);

// Parses a file that holds one layout expression, such as `composition((4,2):(2,1), (2,2):(1,2))`
// (the language of `weft layout`). On success the layout is the returned Ast's `layout`.
struct LayoutParse {
  Ast ast;
  LayoutId layout;  // invalid when there were errors
};
LayoutParse ParseLayoutExpression(const SourceManager& sources, FileId file, Diagnostics& diagnostics);

// Parses a file that holds one type, such as `'t[..s, n] -> 't[..s]` (the prelude's signatures).
struct TypeParse {
  Ast ast;
  TypeId type;  // invalid when there were errors
};
TypeParse ParseTypeExpression(const SourceManager& sources, FileId file, Diagnostics& diagnostics);

// Parses a file that holds one expression, such as `[1.0, 2.0] * 2.0` (what the REPL reads).
struct ExprParse {
  Ast ast;
  ExprId expr;  // invalid when there were errors
};
ExprParse ParseExpression(const SourceManager& sources, FileId file, Diagnostics& diagnostics);

}  // namespace weft::syntax
