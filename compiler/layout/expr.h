// Layout-algebra expressions as users type them (`weft layout EXPR`, the REPL's `:layout`), e.g.
// `composition((4,2):(2,1), (2,2):(1,2))` or `logical_divide((16,8):(8,1), <4:1, 2:1>)`. The CLI is a
// thin layer over EvaluateExpression and ToString(Value).
//
// Grammar (CuTe's printed notation, so that output can be pasted back in):
//   expr   := name '(' [expr {',' expr}] ')'     an operation, see Apply
//           | 'Sw<' int ',' int ',' int '>'      a swizzle
//           | '<' expr {',' expr} '>'            a tiler: one layout per mode
//           | tuple [':' tuple]                  a shape (an IntTuple) or a layout
//   tuple  := int | '(' elem {',' elem} ')'       elem := tuple [':' tuple]
// A parenthesized list of layouts, `(4:1,2:1)`, is a tiler too (that is how CuTe prints one).
//
// Evaluation: 1. parse to a tree of calls and literals; 2. evaluate arguments; 3. Apply the named
// operation, converting a shape to the layout or tiler the operation needs (CuTe's conventions: a
// shape is a compact column-major layout, or a by-mode tiler of n:1 layouts).
#pragma once

#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "layout/algebra.h"
#include "layout/layout.h"
#include "layout/result.h"
#include "layout/swizzle.h"

namespace weft::layout {

using Value = std::variant<IntTuple, Layout, std::vector<Layout>, Swizzle, SwizzledLayout>;

// CuTe notation for each kind of value; tilers print as `<4:1,2:1>`.
std::string ToString(const Value& value);

Result<Value> EvaluateExpression(std::string_view text);
// Parses a layout literal such as `(4,(2,2)):(2,(1,8))`, or a shape (taken as compact column-major).
Result<Layout> ParseLayout(std::string_view text);

// Applies a named operation: size cosize rank depth shape stride coalesce flatten filter composition
// complement right_inverse left_inverse logical_divide zipped_divide tiled_divide logical_product
// blocked_product raked_product make_layout swizzle eval.
Result<Value> Apply(std::string_view name, const std::vector<Value>& args);
// The names Apply accepts, with a one-line description each, for `--help` and errors.
const std::vector<std::pair<std::string, std::string>>& Operations();

}  // namespace weft::layout
