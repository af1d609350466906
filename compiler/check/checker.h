// The checker's internal state, shared by its files: checker.cpp (definitions, imports,
// generalization), handle_expr.cpp (expressions), annotations.cpp (written types), prelude.cpp
// (built-ins) and obligations.cpp (what unification could not decide). See check.h.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "check/check.h"
#include "check/unify.h"
#include "core/type_printer.h"
#include "solver/solver.h"

namespace weft::check {

struct Binding {
  enum class Kind { Value, Size };
  Kind kind = Kind::Value;
  Scheme scheme;   // Value
  SizeVarId size;  // Size: a size variable, usable as an i64 value
  Span span;       // where it is bound, for notes
};

// Names in scope, innermost last.
class Env {
 public:
  void Push(std::string name, Binding binding) { entries_.emplace_back(std::move(name), std::move(binding)); }
  std::size_t Mark() const { return entries_.size(); }
  void Reset(std::size_t mark) { entries_.resize(mark); }
  const Binding* Find(std::string_view name) const;
  void Names(std::vector<std::string>& out) const;

 private:
  std::vector<std::pair<std::string, Binding>> entries_;
};

// What the obligation's failure says: called with true when it was refuted, false when it could
// not be proved.
using Report = std::function<void(bool refuted)>;

struct Obligation {
  DimFact goal;
  Report report;
  std::string what;      // for run-time checks: "the inner dimensions of `@`"
  syntax::ExprId where;  // the expression being inferred when it was made
};

// What inference learned about one definition's syntax, for elaboration to the core IR
// (elaborate.cpp): the type of every expression and pattern, the dims read from shape arguments
// and slice bounds, the variables a `let` generalized, and the run-time checks by expression.
enum class RefKind : std::uint8_t { Local, Global, Builtin, Size };
struct Elaboration {
  std::unordered_map<std::uint32_t, TypeRef> expr_types;
  std::unordered_map<std::uint32_t, RefKind> refs;  // what each name (`Var`) refers to
  std::unordered_map<std::uint32_t, SizeVarId> size_refs;
  std::unordered_map<std::uint32_t, Dim> expr_dims;
  std::unordered_map<std::uint32_t, TypeRef> pattern_types;
  std::unordered_map<std::uint32_t, FreeVars> pattern_quantified;
  std::unordered_map<std::uint32_t, std::vector<RuntimeCheck>> checks;
  std::unordered_map<std::uint32_t, Placement> placements;  // kernel-tier ascriptions, by `Ascribe`
  void Clear() { *this = Elaboration{}; }
};

// The kernel whose body is being checked (kernel.cpp): what its operations need to know.
struct KernelContext {
  struct Param {
    Span span;  // of the name that binds it
    bool out = false;
    bool tensor = false;  // a tensor of rank >= 1 (not a scalar)
  };
  std::string name;
  std::map<std::string, Param> params;
  std::vector<Dim> grid;
  std::vector<Span> grid_spans;
  Span grid_span;   // the whole grid
  Span where_span;  // the `where` clause, if any
  std::optional<std::int64_t> threads;
  std::vector<std::optional<Placement>> param_spaces;
};

// A broadcast whose alignment was ambiguous when first seen, retried once the definition's body is
// inferred (RetryBroadcasts). Then it may still be ambiguous (`report` with an empty detail), turn
// out not to broadcast or not to fit what the result became meanwhile (`report` with the detail),
// or need dims proved equal (`report_dims`, as obligations: refuted or unproved).
struct PendingBroadcast {
  Shape lhs, rhs;
  ShapeVarId result;
  Span span;  // the operation's
  std::function<void(const std::string& detail)> report;
  std::function<void(bool refuted, const Dim& x, const Dim& y)> report_dims;
};

// The names an annotation introduces, per definition.
struct AnnotationScope {
  std::map<std::string, TypeVarId> type_vars;
  std::map<std::string, ElemVarId> elem_vars;
  std::map<std::string, ShapeVarId> shape_vars;
  VarKind new_sizes = VarKind::Rigid;  // what a new size name in an annotation becomes
};

// A type printed only when a message needs it: inference is on the hot path, errors are not.
struct LazyText {
  const VarStore* vars;
  TypeRef type;
  std::string str() const { return TypePrinter(*vars).Print(type); }
};

// A span as a map key.
inline std::tuple<std::uint32_t, std::uint32_t, std::uint32_t> SpanKey(Span span) {
  return {span.file.index, span.begin, span.end};
}

// The built-ins whose type is read from a shape argument written in place (`zeros [m, n]`).
bool IsShapeBuiltin(std::string_view name);

// How an elementwise operator constrains its operands. Choice: values of one element type, any
// (`select`'s), and the result has it.
enum class BinaryTypes { Arithmetic, Comparison, Equality, Logical, Choice };

class Checker {
 public:
  Checker(SourceManager& sources, Diagnostics& diagnostics, const CheckOptions& options);

  // Checks a file; its definitions are added to the globals, and returned when `own` is set.
  void CheckFile(const syntax::Ast& ast, std::vector<CheckedDef>* own);
  VarStore& vars() { return vars_; }

  // ---- checker.cpp ----
  void CheckDef(const syntax::Decl& decl, const syntax::Def& def, std::vector<CheckedDef>* own);
  void CheckKernel(const syntax::Decl& decl, const syntax::KernelDecl& kernel, std::vector<CheckedDef>* own);
  // ---- kernel.cpp: a kernel is checked as one instance, or one per choice of its `tiles` ----
  CheckedDef CheckKernelInstance(const syntax::Decl& decl, const syntax::KernelDecl& kernel);
  CheckedDef CheckTiledKernel(const syntax::Decl& decl, const syntax::KernelDecl& kernel);
  void Import(const syntax::Decl& decl, const syntax::Import& import);
  TypeRef Instantiate(const Scheme& scheme, Span call, const std::string& name);
  // A `where` clause's text with its size names replaced by the dims a call gave them.
  std::string InstantiateClause(std::string_view clause, const std::map<std::string, Dim>& sizes);
  Scheme Generalize(const TypeRef& type);
  void DefaultElems(const TypeRef& type);
  void Define(const std::string& name, Span span, Binding binding);
  // Binds a pattern's names to the parts of `type`; generalizes them when `generalize` (a `let`
  // of a function). Returns the type, refined by the pattern's annotation if it has one.
  // `site`, when given, is the span notes point at for a name (a typed parameter's whole `(x: t)`).
  TypeRef BindPattern(syntax::PatternId pattern, const TypeRef& type, Env& env, bool generalize, Span site = {});

  // ---- handle_expr.cpp ----
  TypeRef Infer(syntax::ExprId id);  // records the type for elaboration
  TypeRef InferNode(syntax::ExprId id);
  // A name: a local, a size, a global, a built-in or a kernel operation (its reference kind recorded).
  TypeRef InferVar(syntax::ExprId id, const syntax::Expr& e, const syntax::expr::Var& var);
  // An operator as a function, `(+)`.
  TypeRef InferOperatorRef(const syntax::Expr& e, const syntax::expr::OperatorRef& ref);
  // A tensor literal `[a, b, ..]`.
  TypeRef InferList(const syntax::Expr& e, const syntax::expr::List& list);
  TypeRef InferApply(const syntax::Expr& e, const syntax::expr::Apply& apply);
  TypeRef InferBinary(const syntax::Expr& e, const syntax::expr::Binary& binary);
  TypeRef InferIndex(const syntax::Expr& e, const syntax::expr::Index& index);
  TypeRef InferShapeBuiltin(const std::string& name, const syntax::Expr& e, const syntax::expr::Apply& apply);
  TypeRef Elementwise(std::string_view verb, BinaryTypes kind, syntax::ExprId lhs, const TypeRef& lt,
                      syntax::ExprId rhs, const TypeRef& rt, Span span);
  // One operand of an elementwise operation: where it is, and its type (printed only for an error).
  struct Operand {
    Span span;
    LazyText text;
  };
  // The shape part of an elementwise operation: broadcasts the operands' shapes (trailing dims
  // aligned, 1 stretching), reporting a mismatch (E0205), dims it cannot prove equal (E0215) or an
  // ambiguous alignment (E0216) as `cannot VERB `L` and `R``. Returns `out[shape]`.
  TypeRef BroadcastOperands(std::string_view verb, Elem out, const Operand& left, const Operand& right,
                            const std::vector<Note>& notes);
  // E0247 once the body is inferred, if the axis that `max`, `min` or `argmax` (instantiated as
  // `type`) reduces is statically empty.
  void RefuseEmptyAxis(const std::string& name, const TypeRef& type, Span span);
  std::optional<Dim> ExprToDim(syntax::ExprId id);
  std::optional<std::vector<Dim>> ShapeArgument(syntax::ExprId id);
  // Unifies, reporting a mismatch as `context: expected A, found B` at `span`.
  bool Expect(const TypeRef& expected, const TypeRef& found, Span span, std::string_view context);
  void RecordDeferred(Span span, std::string_view context);
  void UnknownName(const std::string& name, Span span);
  // Notes for an error about two operands: where each operand that is a variable was bound.
  std::vector<Note> OperandNotes(syntax::ExprId lhs, syntax::ExprId rhs);

  // ---- kernel.cpp ----
  // The kernel-only operations (docs/kernels.md): `block_idx`, `tile`, `shared`, `regs`, `convert`,
  // `mma`, `store`.
  static bool IsKernelOp(std::string_view name);
  // A kernel operation named alone (not applied): its type, or an error outside kernels.
  TypeRef InferKernelOpValue(const std::string& name, const syntax::Expr& e);
  // `tile`, `mma`, `store` applied; `block_idx`, `shared`, `regs`, `convert` applied go through
  // InferKernelOpValue like any function.
  TypeRef InferKernelOp(const std::string& name, const syntax::Expr& e, const syntax::expr::Apply& apply);
  TypeRef InferTile(const syntax::Expr& e, const syntax::expr::Apply& apply);
  TypeRef InferMma(const syntax::Expr& e, const syntax::expr::Apply& apply);
  TypeRef InferStore(const syntax::Expr& e, const syntax::expr::Apply& apply);
  // The kernel parameter `name` refers to here, if it does (not shadowed by a local).
  const KernelContext::Param* KernelParamOf(const std::string& name) const;
  // `let (i, j) = block_idx` with a pattern of the wrong arity: reports it; true if it did.
  bool CheckBlockIdxPattern(syntax::PatternId pattern, syntax::ExprId value);
  std::optional<Placement> PlacementOf(syntax::TypeId type);

  // ---- elaborate.cpp ----
  // Appends the definition to module_.
  void Elaborate(const syntax::Def* def, const CheckedDef& checked);
  void ElaborateKernel(const syntax::KernelDecl& kernel, const CheckedDef& checked, const KernelContext& context);

  // ---- layouts.cpp ----
  // The layout stage (docs/layouts.md): the layouts of the definition's core IR (the last of
  // module_), of its scheme and of the views it reads.
  void InferLayouts(CheckedDef& checked);
  // A kernel's tensor inputs: a layout variable each, and its predicate (core::LayoutPredicate) in
  // the scheme beside the `where` clause.
  void AdmitLayouts(const syntax::KernelDecl& kernel, CheckedDef& checked);
  // Discharges `read`'s predicate on the layout `layout` its call gives (docs/layouts.md): by the
  // normal forms, then by Z3 under the definition's `where` facts (a refutation names them: the
  // unsat core); an offset whose alignment neither decides is checked at run time in `main`, and
  // deferred to the callers elsewhere, as is a layout over a parameter's layout variable.
  void DischargeRead(KernelRead& read, const LayoutRef& layout);

  // ---- tile_layouts.cpp ----
  // A kernel's tile layout types (core/tile_layout.h): its tiles' layout variables and the
  // constraints between them, on the kernel's core IR (the last of module_) and on `checked`.
  void InferTileLayouts(CheckedDef& checked);

  // ---- sizes_known.cpp ----
  // E0246 for each size the definition reads (as a value, a shape argument, a slice bound) that no
  // value's shape gives before it; false if there was one.
  bool CheckSizesKnown(const core::Def& def);

  // ---- annotations.cpp ----
  TypeRef FromAnnotation(syntax::TypeId id, AnnotationScope& scope);
  TypeRef FromAnnotationInKernel(syntax::TypeId id, AnnotationScope& scope);
  std::optional<Dim> FromDim(syntax::DimId id, AnnotationScope& scope);
  std::optional<DimFact> WhereFact(syntax::ExprId condition);

  // ---- prelude.cpp ----
  void LoadPrelude();
  bool IsBuiltin(const std::string& name) const { return builtins_.count(name) > 0; }

  // ---- obligations.cpp ----
  void Oblige(DimFact goal, Report report, std::string what = "");
  // `p / d` obliges `p % d == 0` (language.md, Types).
  void ObligeDivisible(const Dim& p, std::int64_t d, Span span);
  // Every dim is >= 0 (language.md, Types): E0227 when it may not be.
  void ObligeNonNegative(const Dim& d, Span span);
  // `facts` (the `where` facts in scope, facts_, then any assumed since), resolved, as the solver
  // takes them: each labelled by its index, so that an unsat core's labels name them (WrittenFacts).
  std::vector<solver::Fact> SolverFacts(const std::vector<DimFact>& facts) const;
  // The written `where` facts among an unsat core's labels (later labels are not facts_).
  std::vector<const DimFact*> WrittenFacts(const std::vector<std::string>& core) const;
  void Discharge(CheckedDef& def, bool has_params);
  // Retries ambiguous broadcasts until no progress; reports the rest when `report`, then drops them.
  void RetryBroadcasts(bool report);

  SourceManager& sources_;
  Diagnostics& diagnostics_;
  CheckOptions options_;
  VarStore vars_;
  Unifier unifier_{vars_};
  const syntax::Ast* ast_ = nullptr;  // the file being checked
  Env env_;                           // locals and sizes of the definition being checked
  std::map<std::string, Binding> globals_;
  std::map<std::string, Binding> builtins_;
  std::map<std::string, Span> defined_below_;  // names defined later in the file, for messages
  std::set<std::string> importing_;            // modules being imported (cycle detection)
  std::set<std::string> imported_;
  AnnotationScope* scope_ = nullptr;  // the annotation scope of the current definition
  std::string current_;               // the definition being checked
  bool in_main_ = false;
  bool in_kernel_ = false;           // kernel-tier types (spaces, layouts) are allowed
  KernelContext* kernel_ = nullptr;  // the kernel whose body is being checked
  bool store_destination_ = false;   // inferring `store`'s destination: `out` parameters may appear
  int errors_at_start_ = 0;
  std::vector<DimFact> facts_;  // `where` facts of the current definition
  std::vector<Obligation> obligations_;
  std::vector<PendingBroadcast> pending_;
  std::vector<std::function<void()>> late_;  // checks that need the whole body inferred first
  std::vector<RuntimeCheck> runtime_checks_;
  // The layout facts of the callees' schemes as each call (by the span of the callee's name)
  // instantiated them; layouts.cpp substitutes the arguments' layouts.
  std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>, std::vector<LayoutFact>> layout_instances_;
  Elaboration elaboration_;      // of the definition being checked
  core::Module module_;          // every definition checked so far, elaborated
  syntax::ExprId current_expr_;  // the innermost expression being inferred
  solver::Solver solver_{solver::Options{2'000'000, 0, /*minimize_cores=*/false}};
  // For errors only: which `where` facts a refutation or a contradiction needs (a minimal core).
  solver::Solver core_solver_{solver::Options{2'000'000, 0, /*minimize_cores=*/true}};
};

}  // namespace weft::check
