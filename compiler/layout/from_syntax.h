// Evaluates a parsed layout expression (syntax::ParseLayoutExpression, or a layout in a kernel type)
// to a layout Value: the bridge from the grammar to the algebra, under `weft layout EXPR` and the
// REPL's `:layout EXPR`. Text is parsed only by syntax/ (X3); this file sees only the AST.
//
// Why it is a library of its own, weft_layout_syntax, beside weft_layout rather than inside it: the
// AST brings in diagnostics/ (and through it LLVM's formatv), while weft_layout is pure C++ that
// synthesis and codegen link without LLVM or a solver. Why it is in layout/ rather than driver/: it is
// the layout language's meaning, which the REPL, the CLI and the layout tests all need, and those
// should not have to link the driver (and with it the checker and the solver).
//
// The algorithm, a post-order walk of the layout AST:
//   1. literals become values: an integer tree a shape (an IntTuple), `s:d` a Layout (Layout::Make
//      checks the extents), `Sw<B,M,S>` a Swizzle (Swizzle::Make checks the bits);
//   2. a call evaluates its arguments left to right, then applies the named operation (Apply);
//   3. a tiler's modes must be layouts, a shape standing for its compact layout; tilers do not nest;
//   4. a composition `A o B o C` folds left to right as composition(A, B, C), except that an integer
//      between a swizzle and a layout is CuTe's offset: `Sw<3,3,3> o 0 o (8,64):(64,1)` is the
//      swizzled layout c -> Sw(0 + L(c)), which is how ToString prints one;
//   5. a layout variable `?L` has no value here: layout synthesis solves those.
// The walk stops at the first failure; the failure's span is the innermost node that failed.
#pragma once

#include <optional>

#include "base/source.h"
#include "diagnostics/diagnostic.h"
#include "layout/expr.h"
#include "layout/result.h"
#include "syntax/ast.h"

namespace weft::layout {

// The value of `layout`, or the message of the first failure; `failed_at`, when given, is set to the
// span of the node whose evaluation failed.
Result<Value> Evaluate(const syntax::Ast& ast, syntax::LayoutId layout, Span* failed_at = nullptr);

// As above, reporting a failure as error E0300 at the node that failed.
std::optional<Value> Evaluate(const syntax::Ast& ast, syntax::LayoutId layout, Diagnostics& diagnostics);

}  // namespace weft::layout
