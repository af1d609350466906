// Printing an Ast, two ways:
//  - Print: weft source, with the fewest parentheses that keep the tree (`weft check --emit=ast`).
//    Parsing the output gives the same tree: Dump(parse(Print(ast))) == Dump(ast).
//  - Dump: a fully parenthesized S-expression of the tree, one form per node, no spans
//    (`--emit=ast-sexp`): what tests use to see how a program was grouped.
#pragma once

#include <string>

#include "syntax/ast.h"

namespace weft::syntax {

std::string Print(const Ast& ast);
std::string PrintLayout(const Ast& ast, LayoutId layout);
std::string FormatIntTree(const IntTree& tree);
// A string literal as weft writes it: quoted, with `\\`, `\"`, `\n` and `\t` escaped.
std::string QuoteString(std::string_view value);

std::string Dump(const Ast& ast);

}  // namespace weft::syntax
