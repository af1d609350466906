// The type checker: Hindley-Milner inference with let-polymorphism over dtypes, type variables,
// tuples, functions and tensor types whose shapes hold symbolic dims (language.md, Types).
//
// The algorithm, per top-level definition in source order:
//  1. Enter a new generalization level. Read the signature: explicit size binders, parameter and
//     result annotations (their size and shape variables are rigid), `where` clauses (facts, and
//     classes on element types).
//  2. Infer the body bottom-up (handle_expr.cpp), unifying as it goes (unify.h): dims unify in
//     normal form; broadcasting aligns shapes; what unification cannot decide becomes an obligation
//     with its source location.
//  3. Retry broadcasts that were ambiguous; report those that stay so.
//  4. Discharge the obligations (obligations.cpp): proved ones vanish, refuted ones are errors
//     naming both facts, unproved ones over rigid sizes are errors suggesting a `where` clause, and
//     those over run-time sizes (in `main`) become run-time checks.
//  5. Leave the level and generalize: functions are quantified over what is left free, values
//     (definitions without parameters) are not, and their element types default (f32, i32).
//  6. Elaborate to the core IR, then infer layouts on it (layouts.cpp, docs/layouts.md): a layout
//     variable per parameter, views as layout expressions over them, `row` for every value that
//     owns its data; at a call, the arguments' layouts substituted into the callee's. A kernel's
//     tiles instead get layout variables related by constraints (tile_layouts.cpp) that synthesis
//     solves per target.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/source.h"
#include "core/ir.h"
#include "core/types.h"
#include "diagnostics/diagnostic.h"
#include "solver/solver.h"
#include "syntax/ast.h"

namespace weft::check {

// The types, dims and facts of inference are the core IR's (core/types.h).
using namespace weft::core;  // NOLINT(google-build-using-namespace)

struct CheckedDef {
  std::string name;
  Span span;
  bool ok = true;  // false when its body had errors; its signature may still be known
  Scheme scheme;
  std::vector<RuntimeCheck> runtime_checks;
  // The views its body reads whose layouts are known: its own, and its callees' at its calls
  // (`weft check --layouts` prints them; in `main` every view is known).
  std::vector<LayoutFact> views;
  // A kernel's tiles' layout variables and the constraints between them (core/tile_layout.h), as
  // its core IR has them (KernelInfo::tiles); `weft check --layouts` prints them.
  TileLayouts tiles;
};

struct CheckResult {
  VarStore vars;
  std::vector<CheckedDef> defs;  // the file's own definitions, in source order
  core::Module module;           // those and the imported ones, elaborated (checked ones have bodies)
};

struct CheckOptions {
  std::string stdlib_dir;  // where `import nn` finds nn.weft
  // `load`, `save`, `arg` and `time` outside `def main` (the REPL's prompt); refused otherwise.
  bool host_anywhere = false;
};

// Checks a parsed file (and what it imports). Errors go to `diagnostics`; the definitions that
// checked are in the result, those with errors are marked.
CheckResult Check(SourceManager& sources, const syntax::Ast& ast, Diagnostics& diagnostics,
                  const CheckOptions& options);

// The built-ins a program can name, from the prelude's table (check/prelude.cpp) in its order; the
// REPL and the language server complete them.
const std::vector<std::string>& BuiltinNames();
// The operations only a kernel's body can name (`block_idx`, `tile`, `mma`, ...; check/kernel.cpp).
const std::vector<std::string>& KernelOpNames();

// `name : type`, as `weft check` prints it; with `layouts`, each tensor's layout after its shape.
std::string Signature(const CheckResult& result, const CheckedDef& def);
std::string Signature(const VarStore& vars, const CheckedDef& def, bool layouts = false);
// What `weft check --layouts` prints after a definition's signature: a line per view whose layout
// is not known yet (`view 3:11 `transpose x` @ transpose 'l1`) and per view whose layout is
// (`view 5:3 `heads q` -> 3:11 `transpose y` @ (4, 3):(1, 4)`).
// For a kernel, a line per tile's layout variable (`tile 'L1 `sa` : bf16[128, 64] @shared  (9:14)`)
// and per constraint between them (`'L3 = 'L1  (the elementwise `exp` at 12:9)`) follow.
std::string LayoutLines(const SourceManager& sources, const VarStore& vars, const CheckedDef& def);
// Those lines of a kernel's tiles alone (tile_layouts.cpp; the REPL's `:type --layouts KERNEL`).
std::string TileLayoutLines(const SourceManager& sources, const TileLayouts& tiles);
// One of those lines, without its indent: variable `var`'s, and constraint `c`'s (the language
// server's hover on a tile shows its variable's and the constraints that mention it).
std::string TileVarLine(const SourceManager& sources, const TileLayouts& tiles, std::int32_t var);
std::string TileConstraintLine(const SourceManager& sources, const TileLayouts& tiles, const TileConstraint& c);

class Checker;

// An incremental checker, for the REPL: each Add checks more declarations in the scope of all
// those added before (a later definition of a name replaces the earlier one for what follows).
class Session {
 public:
  Session(SourceManager& sources, Diagnostics& diagnostics, const CheckOptions& options);
  ~Session();
  // Checks the file's declarations; returns them as `Check` does. Errors go to the diagnostics.
  std::vector<CheckedDef> Add(const syntax::Ast& ast);
  const core::Module& module() const;
  const VarStore& vars() const;
  std::string Signature(const CheckedDef& def, bool layouts = false) const;

 private:
  std::unique_ptr<Checker> checker_;
};

}  // namespace weft::check
