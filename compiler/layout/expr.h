// Layout-algebra values and the operations on them by name: what `weft layout EXPR` and the REPL's
// `:layout` evaluate, e.g. `composition((4,2):(2,1), (2,2):(1,2))` or
// `logical_divide((16,8):(8,1), <4:1, 2:1>)`.
//
// The expressions themselves are parsed by syntax/ (the X3 grammar's layout rules; docs/syntax.md,
// Layouts) and evaluated by from_syntax.h, which calls Apply for each operation. This file knows
// nothing of text: it names the operations and prints values in CuTe's notation, so that what it
// prints parses back to the same value.
//
// Conventions (CuTe's): a shape where an operation needs a layout is its compact column-major layout;
// a shape where it needs a tiler is one n:1 layout per mode.
#pragma once

#include <string>
#include <string_view>
#include <utility>
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

// "a shape", "a layout", "a tiler", "a swizzle" or "a swizzled layout", for messages.
std::string KindName(const Value& value);

// Applies a named operation: size cosize rank depth shape stride coalesce flatten filter composition
// complement right_inverse left_inverse logical_divide zipped_divide tiled_divide logical_product
// blocked_product raked_product make_layout swizzle eval.
Result<Value> Apply(std::string_view name, const std::vector<Value>& args);
// The names Apply accepts, with a one-line description each, for `--help` and errors.
const std::vector<std::pair<std::string, std::string>>& Operations();

}  // namespace weft::layout
