// The typed core IR: what the checker elaborates a program into (check/elaborate.cpp), and what
// the interpreter and the later phases consume. It is the AST with everything inference learned
// made explicit and the sugar gone:
//  - every expression and every binding carries its type, resolved (dims in normal form); a name
//    of a polymorphic definition carries the type it is used at, so an evaluator can pass types
//    (a weak literal or `zeros` in a polymorphic function gets its dtype from the caller);
//  - a name says what it refers to: a local, a top-level definition, a built-in, or a size used
//    as an `i64` value (then it is a dim);
//  - operators are applications of built-ins named by their spelling (`+`, `@`, `negate`),
//    `x |> f` is `f x`, ascriptions are gone (the type is on the node), shape arguments are dims;
//  - run-time checks (obligations over sizes known only at run time) sit on the expression whose
//    evaluation needs them, with the source location of the obligation.
// The printer (`weft check --emit=core`) and the verifier are in ir_printer.cpp and verify.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "base/dtype.h"
#include "base/source.h"
#include "base/typed_id.h"
#include "core/tile_layout.h"
#include "core/types.h"
#include "layout/expr.h"

namespace weft::core {

using ExprId = TypedId<struct CoreExprTag>;
using PatternId = TypedId<struct CorePatternTag>;

namespace expr {
struct IntLit {
  std::uint64_t value;
};  // its type says its dtype, or an element-type variable for a weak literal
struct FloatLit {
  double value;
  std::string text;  // as written, so that it is rounded once to its dtype
};
struct BoolLit {
  bool value;
};
struct StringLit {
  std::string value;
};
struct Local {
  std::string name;
};  // a parameter, or a name bound by `let`, `fn` or `loop`
struct Global {
  std::string name;
};  // a top-level definition (of this file or an import)
struct Builtin {
  std::string name;
};  // a prelude name, or an operator by its spelling: `+`, `==`, `@`, `&&`, `negate`
struct SizeValue {
  Dim dim;
};  // a size used as an `i64` value
struct ShapeArg {
  std::vector<Dim> dims;
};  // the shape argument of a built-in: `zeros [m, 2 * n]`
struct Apply {
  ExprId callee;
  std::vector<ExprId> args;
};  // curried: `f a b`
struct Lambda {
  std::vector<PatternId> params;
  ExprId body;
};
struct Let {
  PatternId pattern;
  ExprId value;
  ExprId body;
};
struct If {
  ExprId condition;
  ExprId then_branch;
  ExprId else_branch;
};
struct Tuple {
  std::vector<ExprId> elements;
};  // `()` when empty
struct TensorLit {
  std::vector<ExprId> elements;
};  // `[a, b]`: one more leading axis
struct IndexItem {
  enum class Kind : std::uint8_t { At, Slice, All };
  Kind kind;
  ExprId at;              // At: the i64 index
  Dim lo;                 // Slice: the lower bound
  std::optional<Dim> hi;  // Slice: the upper bound; none when omitted (the axis' length)
};
struct Index {
  ExprId base;
  std::vector<IndexItem> items;
};
struct Loop {
  PatternId state;
  ExprId init;
  std::string counter;
  ExprId bound;
  ExprId body;
  bool pipelined = false;  // the kernel tier's `pipeline`: iterations the compiler may overlap
};                         // loop p = init for counter < bound do body
struct Cast {
  Dtype dtype;
  ExprId operand;
};
}  // namespace expr

using ExprNode = std::variant<expr::IntLit, expr::FloatLit, expr::BoolLit, expr::StringLit, expr::Local, expr::Global,
                              expr::Builtin, expr::SizeValue, expr::ShapeArg, expr::Apply, expr::Lambda, expr::Let,
                              expr::If, expr::Tuple, expr::TensorLit, expr::Index, expr::Loop, expr::Cast>;

// A layout written on a kernel-tier type (`@reg (128,128):(128,1)`), evaluated once by the checker
// (check/kernel.cpp, layout/from_syntax.h): synthesis honours its value and parses nothing.
struct WrittenLayout {
  std::string text;                     // as written (`?L`, `(128,64):(64,1)`), for printing and messages
  layout::Result<layout::Value> value;  // its value, or why it has none (`?L`: only synthesis gives one)
};

// Where a kernel-tier ascription puts a value: `(e : f32[128, 128] @reg (128,128):(128,1))`.
struct Placement {
  std::string space;                    // "@global", "@shared" or "@reg" (tile::Spelling's spelling)
  std::optional<WrittenLayout> layout;  // unset when none is written
  Span span;                            // the ascribed type
};

struct Expr {
  Span span;
  TypeRef type;
  ExprNode node;
  std::vector<RuntimeCheck> checks;    // made once the node's operands are evaluated
  std::optional<Placement> placement;  // kernel bodies only: a space (and layout) the program wrote
};

namespace pattern {
struct Name {
  std::string name;
};
struct Wildcard {};
struct Tuple {
  std::vector<PatternId> elements;
};
}  // namespace pattern

using PatternNode = std::variant<pattern::Name, pattern::Wildcard, pattern::Tuple>;

struct Pattern {
  Span span;
  TypeRef type;
  PatternNode node;
  FreeVars quantified;  // a generalized `let` of a function: the variables each use instantiates
};

// What a kernel has beyond a definition (docs/kernels.md, docs/core-ir.md). Its `params` are all
// of its parameters in source order, `out` ones included; its type (scheme) takes only the others
// and returns the `out` ones (a tuple if several, `()` if none). Its body has type `()`: its
// effects are its `store`s. The kernel-only operations are built-ins: `block_idx`, `tile`,
// `shared`, `regs`, `convert`, `mma`, `store` (`tile x [t..] (c..)` is Apply(tile, [x, ShapeArg,
// coords]), coords a Tuple of i64 expressions or one i64 expression).
struct Def;

// A size of a kernel's body the compiler chooses (`tiles bm in [64, 128]`; docs/kernels.md, "Tile
// sizes the compiler chooses").
struct TileSize {
  std::string name;
  std::vector<std::int64_t> candidates;
};

struct KernelInfo {
  std::vector<bool> out;                               // per parameter: an `out` parameter
  std::vector<std::optional<Placement>> param_spaces;  // per parameter: `@global` and a layout, if written
  std::vector<ExprId> grid;                            // 1 to 3 extents: SizeValue expressions (i64)
  ExprId threads;                                      // an i64 IntLit, a positive multiple of 32
  // Its tiles' layout variables and the constraints between them (check/tile_layouts.cpp); empty
  // until the checker's tile layout stage runs, and when the body had errors.
  TileLayouts tiles;
  // A kernel with a `tiles` clause: its sizes, and this definition's value of each (its instance's).
  std::vector<TileSize> tile_sizes;
  std::vector<std::int64_t> tile_values;
  // The kernel as written, with a `tiles` clause: each combination of the candidates checked with
  // them substituted for the names (`gemm_bm64_bn128`, the first size varying slowest), every one
  // of them checked. The definition itself is instance 0 (the interpreter runs it: every instance
  // computes the same values); the compiler builds the one it chooses (codegen/instance.h).
  std::vector<Def> instances;
};

// A top-level definition (`def` or `kernel`).
struct Def {
  std::string name;
  Span span;
  Scheme scheme;                     // type, quantified variables, `where` facts
  std::vector<PatternId> params;     // empty for a value
  ExprId body;                       // invalid when the definition had errors
  std::vector<RuntimeCheck> checks;  // every run-time check of the body (also on its expressions)
  bool ok = true;                    // false: it had errors; only its signature is known
  std::optional<KernelInfo> kernel;  // set for a kernel (even one with errors)
};

// A program: the definitions of a file and of what it imports, in the order they were checked
// (so a definition only refers to those before it). A name defined twice (the REPL) refers to the
// latest definition.
class Module {
 public:
  ExprId Add(Expr e) {
    exprs_.push_back(std::move(e));
    return ExprId(static_cast<std::uint32_t>(exprs_.size() - 1));
  }
  PatternId Add(Pattern p) {
    patterns_.push_back(std::move(p));
    return PatternId(static_cast<std::uint32_t>(patterns_.size() - 1));
  }
  const Expr& Get(ExprId id) const { return exprs_[id.index]; }
  Expr& Mutable(ExprId id) { return exprs_[id.index]; }  // for elaboration to annotate a node it made
  const Pattern& Get(PatternId id) const { return patterns_[id.index]; }
  Pattern& Mutable(PatternId id) { return patterns_[id.index]; }  // for the layout stage (check/layouts.cpp)
  std::size_t expr_count() const { return exprs_.size(); }
  std::size_t pattern_count() const { return patterns_.size(); }

  std::vector<Def>& defs() { return defs_; }
  const std::vector<Def>& defs() const { return defs_; }
  // The latest definition named `name`, or null.
  const Def* Find(std::string_view name) const;

 private:
  std::vector<Expr> exprs_;
  std::vector<Pattern> patterns_;
  std::vector<Def> defs_;
};

// The operator built-ins' names in the core IR (`+` ... `@`), and `negate` for prefix `-`.
inline constexpr std::string_view kNegate = "negate";

// Prints a module, or one definition, in weft-like syntax with the type of every binding
// (`weft check --emit=core`). Variables are named consistently within a definition.
std::string Print(const Module& module, const VarStore& vars);
std::string Print(const Module& module, const VarStore& vars, const Def& def);

// Checks the IR's invariants (every node typed, names bound, shapes of applications, patterns
// and conditions consistent with their types). Returns the violations, empty when it holds; the
// driver runs it after elaboration in debug builds and reports a violation as an internal error.
std::vector<std::string> Verify(const Module& module, const VarStore& vars);

}  // namespace weft::core
