// Inference of expressions: one case per AST node kind; see check.h for the whole algorithm.
#include <algorithm>

#include <llvm/ADT/StringRef.h>
#include "base/overloaded.h"

#include "check/checker.h"

namespace weft::check {
namespace {

std::string_view Verb(syntax::BinaryOp op) {
  switch (op) {
    case syntax::BinaryOp::Add:
      return "add";
    case syntax::BinaryOp::Sub:
      return "subtract";
    case syntax::BinaryOp::Mul:
      return "multiply";
    case syntax::BinaryOp::Div:
      return "divide";
    case syntax::BinaryOp::Mod:
      return "take the remainder of";
    case syntax::BinaryOp::And:
    case syntax::BinaryOp::Or:
      return "combine";
    default:
      return "compare";
  }
}

}  // namespace

void Checker::UnknownName(const std::string& name, Span span) {
  if (auto later = defined_below_.find(name); later != defined_below_.end()) {
    Diagnostic& error = diagnostics_.Emit(DiagnosticKind::DefinedBelow, span, name);
    error.notes.push_back(MakeNote(DiagnosticKind::NoteDefinedHere, later->second, name));
    return;
  }
  std::vector<std::string> names;
  env_.Names(names);
  for (const auto& [global, binding] : globals_) names.push_back(global);
  for (const auto& [builtin, binding] : builtins_) names.push_back(builtin);
  // "Did you mean": the closest name within a third of the name's length (two letters swapped
  // count as two edits); none for names shorter than three letters, where anything is close.
  std::string best;
  unsigned best_distance = static_cast<unsigned>((name.size() + 2) / 3) + 1;
  for (const std::string& candidate : names) {
    if (name.size() < 3) break;
    unsigned d = llvm::StringRef(name).edit_distance(candidate, true, best_distance);
    if (d < best_distance) {
      best_distance = d;
      best = candidate;
    }
  }
  diagnostics_.Emit(DiagnosticKind::UnknownName, span, name, best.empty() ? "" : "; did you mean `" + best + "`?");
}

std::vector<Note> Checker::OperandNotes(syntax::ExprId lhs, syntax::ExprId rhs) {
  std::vector<Note> notes;
  // Where the operands' variables got their types: the facts the error is about.
  for (syntax::ExprId operand : {lhs, rhs}) {
    const auto* var = std::get_if<syntax::expr::Var>(&ast_->Get(operand).node);
    if (!var) continue;
    const Binding* binding = env_.Find(var->name);
    if (binding && binding->span.valid()) {
      notes.push_back(MakeNote(DiagnosticKind::NoteBoundHere, binding->span, var->name));
    }
  }
  return notes;
}

void Checker::ObligeDivisible(const Dim& p, std::int64_t d, Span span) {
  Oblige(
      DimFact{*core::Mod(p, d), Relation::kEq, Dim(), span},
      [this, p, d, span](bool refuted) {
        std::string text = TypePrinter(vars_).Print(p);
        // `(n + 4) % 4`, not `n + 4 % 4`.
        std::string operand = vars_.Resolve(p).terms().size() > 1 ? "(" + text + ")" : text;
        diagnostics_.Emit(DiagnosticKind::NonExactDivision, span, text, d,
                          refuted ? "" : ": add `where " + operand + " % " + std::to_string(d) + " == 0`");
      },
      "an exact division");
}

void Checker::RecordDeferred(Span span, std::string_view context) {
  for (DeferredEquality& eq : unifier_.TakeDeferred()) {
    std::string what(context);
    DimFact goal{eq.lhs, Relation::kEq, eq.rhs, span};
    Oblige(
        goal,
        [this, goal, what](bool refuted) {
          TypePrinter printer(vars_);
          std::string a = printer.Print(goal.lhs), b = printer.Print(goal.rhs);
          if (refuted) {
            diagnostics_.Emit(DiagnosticKind::TypeMismatch, goal.span, what, a, b, "");
          } else {
            diagnostics_.Emit(DiagnosticKind::RigidSize, goal.span, what, a, b);
          }
        },
        what);
  }
}

bool Checker::Expect(const TypeRef& expected, const TypeRef& found, Span span, std::string_view context) {
  std::optional<Mismatch> mismatch = unifier_.Unify(expected, found);
  if (!mismatch) {
    RecordDeferred(span, context);
    return true;
  }
  TypePrinter after(vars_);
  std::string expected_text = after.Print(expected);
  std::string found_text = after.Print(found);
  unifier_.TakeDeferred();
  switch (mismatch->kind) {
    case Mismatch::Kind::Occurs:
      diagnostics_.Emit(DiagnosticKind::OccursCheck, span, context);
      break;
    case Mismatch::Kind::Rank:
      diagnostics_.Emit(DiagnosticKind::RankMismatch, span, context, expected_text, found_text);
      break;
    case Mismatch::Kind::Class:
      diagnostics_.Emit(DiagnosticKind::ClassMismatch, span, context, mismatch->message);
      break;
    default:
      diagnostics_.Emit(DiagnosticKind::TypeMismatch, span, context, expected_text, found_text,
                        ": " + mismatch->message);
  }
  return false;
}

std::optional<Dim> Checker::ExprToDim(syntax::ExprId id) {
  const syntax::Expr& e = ast_->Get(id);
  auto fail = [&](const std::string& found) -> std::optional<Dim> {
    diagnostics_.Emit(DiagnosticKind::NotAShapeArgument, e.span, found);
    return std::nullopt;
  };
  if (const auto* lit = std::get_if<syntax::expr::IntLit>(&e.node)) {
    if (lit->value > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      return fail("a huge integer");
    return Dim::Constant(static_cast<std::int64_t>(lit->value));
  }
  if (const auto* var = std::get_if<syntax::expr::Var>(&e.node)) {
    const Binding* binding = env_.Find(var->name);
    if (binding && binding->kind == Binding::Kind::Size) return Dim::Var(binding->size);
    if (!binding && !globals_.count(var->name) && !builtins_.count(var->name)) {
      UnknownName(var->name, e.span);
      return std::nullopt;
    }
    return fail("`" + var->name + "`, which is a value, not a size");
  }
  if (const auto* binary = std::get_if<syntax::expr::Binary>(&e.node)) {
    std::optional<Dim> lhs = ExprToDim(binary->lhs);
    if (!lhs) return std::nullopt;
    if (binary->op == syntax::BinaryOp::Div || binary->op == syntax::BinaryOp::Mod) {
      const auto* divisor = std::get_if<syntax::expr::IntLit>(&ast_->Get(binary->rhs).node);
      if (!divisor || divisor->value == 0 || divisor->value > (1u << 30)) {
        return fail("a division by something other than a positive integer literal");
      }
      auto d = static_cast<std::int64_t>(divisor->value);
      if (binary->op == syntax::BinaryOp::Mod) return *core::Mod(*lhs, d);
      // `p / d` obliges `p % d == 0` (language.md, Types).
      ObligeDivisible(*lhs, d, e.span);
      return *core::Div(*lhs, d);
    }
    std::optional<Dim> rhs = ExprToDim(binary->rhs);
    if (!rhs) return std::nullopt;
    core::Result<Dim> result = binary->op == syntax::BinaryOp::Add   ? core::Add(*lhs, *rhs)
                               : binary->op == syntax::BinaryOp::Sub ? core::Sub(*lhs, *rhs)
                               : binary->op == syntax::BinaryOp::Mul ? core::Mul(*lhs, *rhs)
                                                                     : core::Result<Dim>(core::DimError{});
    if (binary->op != syntax::BinaryOp::Add && binary->op != syntax::BinaryOp::Sub &&
        binary->op != syntax::BinaryOp::Mul) {
      return fail("the operator `" + std::string(syntax::Spelling(binary->op)) + "`");
    }
    if (!result) return fail("a dimension that overflows 64 bits");
    return *result;
  }
  return fail("an expression that is not a dim");
}

std::optional<std::vector<Dim>> Checker::ShapeArgument(syntax::ExprId id) {
  const syntax::Expr& e = ast_->Get(id);
  const auto* list = std::get_if<syntax::expr::List>(&e.node);
  if (!list) {
    diagnostics_.Emit(DiagnosticKind::NotAShapeArgument, e.span, "an expression that is not a list `[...]`");
    return std::nullopt;
  }
  std::vector<Dim> dims;
  bool ok = true;
  for (syntax::ExprId element : list->elements) {
    std::optional<Dim> d = ExprToDim(element);
    if (d) {
      elaboration_.expr_dims[element.index] = *d;
      ObligeNonNegative(*d, ast_->Get(element).span);
      dims.push_back(*d);
    } else {
      ok = false;
    }
  }
  if (!ok) return std::nullopt;
  return dims;
}

TypeRef Checker::Elementwise(std::string_view verb, BinaryTypes kind, syntax::ExprId lhs, const TypeRef& lt,
                             syntax::ExprId rhs, const TypeRef& rt, Span span) {
  Span lspan = ast_->Get(lhs).span, rspan = ast_->Get(rhs).span;
  std::vector<Note> notes = OperandNotes(lhs, rhs);
  ElemClass cls = kind == BinaryTypes::Arithmetic || kind == BinaryTypes::Comparison ? ElemClass::Num : ElemClass::None;
  Elem elem = kind == BinaryTypes::Logical ? Elem{Dtype::Bool} : Elem{vars_.NewElemVar(cls)};
  Shape ls = Shape::Spread(vars_.NewShapeVar());
  Shape rs = Shape::Spread(vars_.NewShapeVar());
  TypePrinter printer(vars_);
  LazyText ltext{&vars_, lt}, rtext{&vars_, rt};  // printed only for an error
  // Both operands are tensors of one element type.
  for (auto [type, shape, where] : {std::tuple{lt, ls, lspan}, std::tuple{rt, rs, rspan}}) {
    std::optional<Mismatch> m = unifier_.Unify(MakeTensor(Elem{vars_.NewElemVar()}, shape), type);
    if (m) {
      diagnostics_.Emit(DiagnosticKind::TypeMismatch, where, "an operand of `" + std::string(verb) + "`", "'a[..s]",
                        printer.Print(type), "");
      return MakeTensor(elem, Shape::Spread(vars_.NewShapeVar()));
    }
  }
  auto elem_of = [&](const TypeRef& t) { return std::get<TensorType>(vars_.Resolve(t)->node).elem; };
  Elem le = elem_of(lt), re = elem_of(rt);
  if (kind == BinaryTypes::Logical) {
    for (auto [e, type, where] : {std::tuple{le, lt, lspan}, std::tuple{re, rt, rspan}}) {
      if (auto m = unifier_.UnifyElem(Elem{Dtype::Bool}, e)) {
        diagnostics_.Emit(DiagnosticKind::TypeMismatch, where, "an operand of a logical operator", "bool[..s]",
                          TypePrinter(vars_).Print(type), "");
        return MakeTensor(elem, Shape::Spread(vars_.NewShapeVar()));
      }
    }
  } else {
    if (auto m = unifier_.UnifyElem(le, re)) {
      if (m->kind == Mismatch::Kind::Class) {  // a literal of the wrong kind: `x + 0.5` on integers
        auto text = [&](syntax::ExprId operand, const LazyText& type) {
          const auto& node = ast_->Get(operand).node;
          bool literal = std::holds_alternative<syntax::expr::IntLit>(node) ||
                         std::holds_alternative<syntax::expr::FloatLit>(node);
          return literal ? std::string(sources_.Text(ast_->Get(operand).span)) : type.str();
        };
        Diagnostic& error = diagnostics_.Emit(
            DiagnosticKind::ClassMismatch, lspan,
            "cannot " + std::string(verb) + " `" + text(lhs, ltext) + "` and `" + text(rhs, rtext) + "`", m->message);
        error.notes.insert(error.notes.end(), notes.begin(), notes.end());
        return MakeTensor(elem, Shape::Spread(vars_.NewShapeVar()));
      }
      TypePrinter p(vars_);
      Diagnostic& error = diagnostics_.Emit(DiagnosticKind::DtypeMismatch, lspan, verb, ltext.str(), rtext.str(),
                                            p.Print(le), p.Print(re));
      error.notes.push_back(MakeNote(DiagnosticKind::NoteHasType, rspan, "the other operand", rtext.str()));
      error.notes.insert(error.notes.end(), notes.begin(), notes.end());
      return MakeTensor(elem, Shape::Spread(vars_.NewShapeVar()));
    }
    if (auto m = unifier_.RequireClass(le, cls)) {
      diagnostics_.Emit(DiagnosticKind::ClassMismatch, span, "cannot " + std::string(verb) + " `" + ltext.str() + "`",
                        m->message);
    }
    if (kind != BinaryTypes::Comparison && kind != BinaryTypes::Equality) unifier_.UnifyElem(elem, le);
  }
  Elem out = kind == BinaryTypes::Comparison || kind == BinaryTypes::Equality ? Elem{Dtype::Bool} : vars_.Resolve(elem);
  return BroadcastOperands(verb, out, {lspan, ltext}, {rspan, rtext}, notes);
}

TypeRef Checker::BroadcastOperands(std::string_view verb, Elem out, const Operand& left, const Operand& right,
                                   const std::vector<Note>& notes) {
  Span lspan = left.span, rspan = right.span;
  LazyText ltext = left.text, rtext = right.text;
  const TypeRef& lt = left.text.type;
  const TypeRef& rt = right.text.type;
  Shape a = std::get<TensorType>(vars_.Resolve(lt)->node).shape;
  Shape b = std::get<TensorType>(vars_.Resolve(rt)->node).shape;
  Broadcast result = BroadcastShapes(unifier_, vars_, a, b);
  std::string what = "cannot " + std::string(verb) + " `" + ltext.str() + "` and `" + rtext.str() + "`";
  auto report_shapes = [this, verb = std::string(verb), ltext, rtext, lspan, rspan, notes](bool refuted, const Dim& x,
                                                                                           const Dim& y) {
    TypePrinter p(vars_);
    std::string detail = refuted ? "dimensions `" + p.Print(x) + "` and `" + p.Print(y) + "` differ"
                                 : "dimensions `" + p.Print(x) + "` and `" + p.Print(y) + "` may differ; add `where " +
                                       p.Print(x) + " == " + p.Print(y) + "` or use one size name";
    Diagnostic& error = diagnostics_.Emit(refuted ? DiagnosticKind::ShapeMismatch : DiagnosticKind::UnprovedDims, lspan,
                                          verb, ltext.str(), rtext.str(), detail);
    error.notes.push_back(MakeNote(DiagnosticKind::NoteHasType, rspan, "the other operand", rtext.str()));
    error.notes.insert(error.notes.end(), notes.begin(), notes.end());
  };
  for (DeferredEquality& eq : unifier_.TakeDeferred()) {
    DimFact goal{eq.lhs, Relation::kEq, eq.rhs, lspan};
    Oblige(
        goal, [report_shapes, eq](bool refuted) { report_shapes(refuted, eq.lhs, eq.rhs); }, what);
  }
  switch (result.status) {
    case Broadcast::Status::Ok:
      return MakeTensor(out, result.shape);
    case Broadcast::Status::Mismatch: {
      Diagnostic& error =
          diagnostics_.Emit(DiagnosticKind::ShapeMismatch, lspan, verb, ltext.str(), rtext.str(), result.message);
      error.notes.push_back(MakeNote(DiagnosticKind::NoteHasType, rspan, "the other operand", rtext.str()));
      error.notes.insert(error.notes.end(), notes.begin(), notes.end());
      return MakeTensor(out, Shape::Spread(vars_.NewShapeVar()));
    }
    case Broadcast::Status::Ambiguous: {
      ShapeVarId r = vars_.NewShapeVar();
      auto report = [this, verb = std::string(verb), ltext, rtext, lspan, rspan, notes](const std::string& detail) {
        Diagnostic& error =
            detail.empty()
                ? diagnostics_.Emit(DiagnosticKind::AmbiguousRank, lspan, verb, ltext.str(), rtext.str())
                : diagnostics_.Emit(DiagnosticKind::ShapeMismatch, lspan, verb, ltext.str(), rtext.str(), detail);
        error.notes.push_back(MakeNote(DiagnosticKind::NoteHasType, rspan, "the other operand", rtext.str()));
        error.notes.insert(error.notes.end(), notes.begin(), notes.end());
      };
      pending_.push_back({a, b, r, lspan, report, report_shapes});
      return MakeTensor(out, Shape::Spread(r));
    }
  }
  return MakeTensor(out, Shape::Spread(vars_.NewShapeVar()));
}

TypeRef Checker::InferBinary(const syntax::Expr& e, const syntax::expr::Binary& binary) {
  using syntax::BinaryOp;
  if (binary.op == BinaryOp::Pipe) {
    // x |> f == f x
    TypeRef x = Infer(binary.lhs);
    TypeRef f = Infer(binary.rhs);
    TypeRef result = MakeVar(vars_.NewTypeVar());
    Expect(MakeFunction(x, result), f, ast_->Get(binary.rhs).span, "the right side of `|>`");
    return result;
  }
  TypeRef lt = Infer(binary.lhs);
  TypeRef rt = Infer(binary.rhs);
  if (binary.op == BinaryOp::MatMul) {
    // 't[..b, m, k] @ 't[..b, k, n] -> 't[..b, m, n]; batch dims broadcast.
    Span lspan = ast_->Get(binary.lhs).span, rspan = ast_->Get(binary.rhs).span;
    LazyText ltext{&vars_, lt}, rtext{&vars_, rt};  // printed only for an error
    std::vector<Note> notes = OperandNotes(binary.lhs, binary.rhs);
    ElemVarId t = vars_.NewElemVar(ElemClass::Num);
    SizeVarId m = vars_.NewSizeVar(), k1 = vars_.NewSizeVar(), k2 = vars_.NewSizeVar(), n = vars_.NewSizeVar();
    Shape lb = Shape::Spread(vars_.NewShapeVar()), rb = Shape::Spread(vars_.NewShapeVar());
    TypeRef lpattern = MakeTensor(Elem{t}, Shape{{}, lb.spread, {Dim::Var(m), Dim::Var(k1)}});
    TypeRef rpattern =
        MakeTensor(Elem{vars_.NewElemVar(ElemClass::Num)}, Shape{{}, rb.spread, {Dim::Var(k2), Dim::Var(n)}});
    if (!Expect(lpattern, lt, lspan, "the left operand of `@` (a matrix or a batch of them)") ||
        !Expect(rpattern, rt, rspan, "the right operand of `@` (a matrix or a batch of them)")) {
      return MakeTensor(Elem{t}, Shape::Spread(vars_.NewShapeVar()));
    }
    Elem le = std::get<TensorType>(vars_.Resolve(lt)->node).elem;
    Elem re = std::get<TensorType>(vars_.Resolve(rt)->node).elem;
    if (unifier_.UnifyElem(le, re)) {
      TypePrinter p(vars_);
      Diagnostic& error = diagnostics_.Emit(DiagnosticKind::DtypeMismatch, lspan, "multiply", ltext.str(), rtext.str(),
                                            p.Print(le), p.Print(re));
      error.notes.push_back(MakeNote(DiagnosticKind::NoteHasType, rspan, "the right operand", rtext.str()));
      error.notes.insert(error.notes.end(), notes.begin(), notes.end());
    }
    Dim inner_l = vars_.Resolve(Dim::Var(k1)), inner_r = vars_.Resolve(Dim::Var(k2));
    if (auto mismatch = unifier_.UnifyDim(inner_l, inner_r)) {
      TypePrinter p(vars_);
      Diagnostic& error = diagnostics_.Emit(DiagnosticKind::MatmulInnerDims, lspan, ltext.str(), rtext.str(),
                                            p.Print(inner_l), p.Print(inner_r));
      error.notes.push_back(MakeNote(DiagnosticKind::NoteHasType, rspan, "the right operand", rtext.str()));
      error.notes.insert(error.notes.end(), notes.begin(), notes.end());
    }
    for (DeferredEquality& eq : unifier_.TakeDeferred()) {
      DimFact goal{eq.lhs, Relation::kEq, eq.rhs, lspan};
      Oblige(
          goal,
          [this, ltext, rtext, lspan, rspan, notes, eq](bool refuted) {
            TypePrinter p(vars_);
            Diagnostic& error =
                refuted ? diagnostics_.Emit(DiagnosticKind::MatmulInnerDims, lspan, ltext.str(), rtext.str(),
                                            p.Print(eq.lhs), p.Print(eq.rhs))
                        : diagnostics_.Emit(
                              DiagnosticKind::UnprovedDims, lspan, "multiply", ltext.str(), rtext.str(),
                              "inner dimensions `" + p.Print(eq.lhs) + "` and `" + p.Print(eq.rhs) + "` may differ");
            error.notes.push_back(MakeNote(DiagnosticKind::NoteHasType, rspan, "the right operand", rtext.str()));
            error.notes.insert(error.notes.end(), notes.begin(), notes.end());
          },
          "the inner dimensions of `@`");
    }
    Broadcast batch = BroadcastShapes(unifier_, vars_, lb, rb);
    RecordDeferred(lspan, "the batch dimensions of `@`");
    Shape result = batch.status == Broadcast::Status::Ok ? batch.shape : Shape::Spread(vars_.NewShapeVar());
    if (batch.status == Broadcast::Status::Mismatch) {
      diagnostics_.Emit(DiagnosticKind::ShapeMismatch, lspan, "multiply", ltext.str(), rtext.str(),
                        "batch dimensions: " + batch.message);
    } else if (batch.status == Broadcast::Status::Ambiguous) {
      // As for elementwise operators: decided once the definition is inferred, or an error then.
      ShapeVarId r = vars_.NewShapeVar();
      auto report = [this, ltext, rtext, lspan, rspan](const std::string& detail) {
        Diagnostic& error = detail.empty() ? diagnostics_.Emit(DiagnosticKind::AmbiguousRank, lspan, "multiply",
                                                               ltext.str(), rtext.str())
                                           : diagnostics_.Emit(DiagnosticKind::ShapeMismatch, lspan, "multiply",
                                                               ltext.str(), rtext.str(), "batch dimensions: " + detail);
        error.notes.push_back(MakeNote(DiagnosticKind::NoteHasType, rspan, "the right operand", rtext.str()));
      };
      auto report_dims = [this, ltext, rtext, lspan, rspan](bool refuted, const Dim& x, const Dim& y) {
        TypePrinter p(vars_);
        std::string detail = "batch dimensions `" + p.Print(x) + "` and `" + p.Print(y) + "` " +
                             (refuted ? "differ" : "may differ; add `where " + p.Print(x) + " == " + p.Print(y) + "`");
        Diagnostic& error = diagnostics_.Emit(refuted ? DiagnosticKind::ShapeMismatch : DiagnosticKind::UnprovedDims,
                                              lspan, "multiply", ltext.str(), rtext.str(), detail);
        error.notes.push_back(MakeNote(DiagnosticKind::NoteHasType, rspan, "the right operand", rtext.str()));
      };
      pending_.push_back({lb, rb, r, lspan, report, report_dims});
      result = Shape::Spread(r);
    }
    if (result.spread) {
      result.after.push_back(Dim::Var(m));
      result.after.push_back(Dim::Var(n));
    } else {
      result.before.push_back(Dim::Var(m));
      result.before.push_back(Dim::Var(n));
    }
    return MakeTensor(Elem{t}, vars_.Resolve(result));
  }
  BinaryTypes kind = BinaryTypes::Arithmetic;
  switch (binary.op) {
    case BinaryOp::Eq:
    case BinaryOp::Ne:
      kind = BinaryTypes::Equality;
      break;
    case BinaryOp::Lt:
    case BinaryOp::Le:
    case BinaryOp::Gt:
    case BinaryOp::Ge:
      kind = BinaryTypes::Comparison;
      break;
    case BinaryOp::And:
    case BinaryOp::Or:
      kind = BinaryTypes::Logical;
      break;
    default:
      break;
  }
  return Elementwise(Verb(binary.op), kind, binary.lhs, lt, binary.rhs, rt, e.span);
}

TypeRef Checker::InferIndex(const syntax::Expr& e, const syntax::expr::Index& index) {
  TypeRef base = Infer(index.base);
  Span bspan = ast_->Get(index.base).span;
  LazyText btext{&vars_, base};
  std::vector<Dim> leading;
  for (std::size_t i = 0; i < index.items.size(); ++i) leading.push_back(Dim::Var(vars_.NewSizeVar()));
  ElemVarId t = vars_.NewElemVar();
  ShapeVarId rest = vars_.NewShapeVar();
  TypeRef pattern = MakeTensor(Elem{t}, Shape{leading, rest, {}});
  if (auto m = unifier_.Unify(pattern, base)) {
    Shape known =
        vars_.Resolve(base)->node.index() == 1 ? std::get<TensorType>(vars_.Resolve(base)->node).shape : Shape{};
    if (!known.Known() && known.before.size() < index.items.size()) {
      diagnostics_.Emit(DiagnosticKind::UnknownLeadingAxes, e.span, btext.str(), index.items.size());
    } else if (m->kind == Mismatch::Kind::Rank || m->kind == Mismatch::Kind::Rigid) {
      diagnostics_.Emit(DiagnosticKind::TooManyIndices, e.span, btext.str(), known.FixedRank(), index.items.size());
    } else {
      diagnostics_.Emit(DiagnosticKind::TypeMismatch, bspan, "indexing", "'a[..s]", btext.str(), "");
    }
    return MakeVar(vars_.NewTypeVar());
  }
  RecordDeferred(bspan, "indexing");
  std::vector<Dim> kept;
  for (std::size_t i = 0; i < index.items.size(); ++i) {
    const syntax::expr::IndexItem& item = index.items[i];
    Dim axis = vars_.Resolve(leading[i]);
    switch (item.kind) {
      case syntax::expr::IndexItem::Kind::At:
        // An i64 value, checked against the axis at run time.
        Expect(MakeScalar(Dtype::I64), Infer(item.lo), ast_->Get(item.lo).span, "an index");
        break;
      case syntax::expr::IndexItem::Kind::All:
        kept.push_back(axis);
        break;
      case syntax::expr::IndexItem::Kind::Slice: {
        std::optional<Dim> lo = item.lo ? ExprToDim(item.lo) : Dim();
        std::optional<Dim> hi = item.hi ? ExprToDim(item.hi) : axis;
        if (!lo || !hi) {
          kept.push_back(Dim::Var(vars_.NewSizeVar()));
          break;
        }
        if (item.lo) elaboration_.expr_dims[item.lo.index] = *lo;
        if (item.hi) elaboration_.expr_dims[item.hi.index] = *hi;
        // 0 <= lo <= hi <= axis
        for (auto [a, b] : {std::pair{Dim(), *lo}, std::pair{*lo, *hi}, std::pair{*hi, axis}}) {
          Dim lo_copy = *lo, hi_copy = *hi;
          Oblige(
              DimFact{a, Relation::kLe, b, item.span},
              [this, lo_copy, hi_copy, axis, span = item.span](bool refuted) {
                TypePrinter p(vars_);
                diagnostics_.Emit(DiagnosticKind::SliceOutOfBounds, span, p.Print(lo_copy) + ":" + p.Print(hi_copy),
                                  p.Print(axis),
                                  refuted ? "it is out of bounds"
                                          : "`0 <= " + p.Print(lo_copy) + " <= " + p.Print(hi_copy) +
                                                " <= " + p.Print(axis) + "` is not provable; add a `where` clause");
              },
              "a slice within bounds");
        }
        core::Result<Dim> length = core::Sub(*hi, *lo);
        kept.push_back(length ? *length : Dim::Var(vars_.NewSizeVar()));
        break;
      }
    }
  }
  return MakeTensor(Elem{t}, Shape{kept, rest, {}});
}

TypeRef Checker::Infer(syntax::ExprId id) {
  syntax::ExprId saved = std::exchange(current_expr_, id);
  TypeRef type = InferNode(id);
  current_expr_ = saved;
  elaboration_.expr_types[id.index] = type;
  return type;
}

TypeRef Checker::InferNode(syntax::ExprId id) {
  const syntax::Expr& e = ast_->Get(id);
  using namespace syntax::expr;
  return std::visit(
      Overloaded{
          [&](std::monostate) -> TypeRef { WEFT_INTERNAL_ERROR("empty expression node"); },
          [&](const IntLit&) { return MakeTensor(Elem{vars_.NewElemVar(ElemClass::Num, kIntLiteralName)}, Shape{}); },
          [&](const FloatLit&) {
            return MakeTensor(Elem{vars_.NewElemVar(ElemClass::Float, kFloatLiteralName)}, Shape{});
          },
          [&](const StringLit&) { return MakeString(); },
          [&](const BoolLit&) { return MakeScalar(Dtype::Bool); },
          [&](const Var& var) { return InferVar(id, e, var); },
          [&](const OperatorRef& ref) { return InferOperatorRef(e, ref); },
          [&](const Apply& apply) { return InferApply(e, apply); },
          [&](const Lambda& lambda) -> TypeRef {
            std::size_t mark = env_.Mark();
            std::vector<TypeRef> params;
            for (syntax::PatternId p : lambda.params)
              params.push_back(BindPattern(p, MakeVar(vars_.NewTypeVar()), env_, false));
            TypeRef body = Infer(lambda.body);
            env_.Reset(mark);
            return MakeFunction(params, body);
          },
          [&](const Let& let) -> TypeRef {
            bool is_function = std::holds_alternative<Lambda>(ast_->Get(let.value).node);
            vars_.Enter();
            TypeRef value = Infer(let.value);
            vars_.Leave();
            // A value is not generalized: what its type leaves free is now the environment's, at this
            // level, so a later `let` of a function over it does not quantify it (`let run = fn () ->
            // f x` would otherwise give `run` a fresh size for each use of x's loaded size).
            if (!is_function) unifier_.LowerLevels(value, vars_.level());
            std::size_t mark = env_.Mark();
            // `let (i, j) = block_idx` of a grid of another rank: said once, in the grid's terms.
            if (CheckBlockIdxPattern(let.pattern, let.value)) value = MakeVar(vars_.NewTypeVar());
            BindPattern(let.pattern, value, env_, is_function);
            TypeRef body = Infer(let.body);
            env_.Reset(mark);
            return body;
          },
          [&](const If& branch) -> TypeRef {
            Expect(MakeScalar(Dtype::Bool), Infer(branch.condition), ast_->Get(branch.condition).span,
                   "the condition of `if`");
            TypeRef then_type = Infer(branch.then_branch);
            TypeRef else_type = Infer(branch.else_branch);
            Expect(then_type, else_type, ast_->Get(branch.else_branch).span,
                   "the `else` branch must have the type of the `then` branch");
            return then_type;
          },
          [&](const Binary& binary) { return InferBinary(e, binary); },
          [&](const Negate& negate) -> TypeRef {
            TypeRef operand = Infer(negate.operand);
            ElemVarId t = vars_.NewElemVar(ElemClass::Num);
            TypeRef pattern = MakeTensor(Elem{t}, Shape::Spread(vars_.NewShapeVar()));
            Expect(pattern, operand, ast_->Get(negate.operand).span, "the operand of `-`");
            return pattern;
          },
          [&](const Tuple& tuple) -> TypeRef {
            std::vector<TypeRef> elements;
            for (syntax::ExprId x : tuple.elements) elements.push_back(Infer(x));
            return MakeTuple(std::move(elements));
          },
          [&](const List& list) { return InferList(e, list); },
          [&](const Ascribe& ascribe) -> TypeRef {
            VarKind saved = scope_->new_sizes;
            scope_->new_sizes = in_main_ ? VarKind::Runtime : VarKind::Flexible;
            TypeRef annotated = FromAnnotation(ascribe.type, *scope_);
            scope_->new_sizes = saved;
            if (kernel_) {
              if (std::optional<Placement> placement = PlacementOf(ascribe.type))
                elaboration_.placements[id.index] = *placement;
            }
            Expect(annotated, Infer(ascribe.expr), ast_->Get(ascribe.expr).span, "the annotation");
            return annotated;
          },
          [&](const Index& index) { return InferIndex(e, index); },
          [&](const Loop& loop) -> TypeRef {
            TypeRef state = Infer(loop.init);
            Expect(MakeScalar(Dtype::I64), Infer(loop.bound), ast_->Get(loop.bound).span, "the trip count of `loop`");
            std::size_t mark = env_.Mark();
            BindPattern(loop.state, state, env_, false);
            Scheme counter{MakeScalar(Dtype::I64), {}, {}, {}, {}};
            env_.Push(loop.counter.text, Binding{Binding::Kind::Value, counter, {}, loop.counter.span});
            Expect(state, Infer(loop.body), ast_->Get(loop.body).span, "the body of `loop` must give the next state");
            env_.Reset(mark);
            return state;
          },
          [&](const Pipeline& pipeline) -> TypeRef {
            Expect(MakeScalar(Dtype::I64), Infer(pipeline.bound), ast_->Get(pipeline.bound).span,
                   "the trip count of `pipeline`");
            TypeRef state = Infer(pipeline.init);
            std::size_t mark = env_.Mark();
            BindPattern(pipeline.state, state, env_, false);
            Scheme counter{MakeScalar(Dtype::I64), {}, {}, {}, {}};
            env_.Push(pipeline.counter.text, Binding{Binding::Kind::Value, counter, {}, pipeline.counter.span});
            Expect(state, Infer(pipeline.body), ast_->Get(pipeline.body).span,
                   "the body of `pipeline` must give the next state");
            env_.Reset(mark);
            return state;
          },
          [&](const Cast& cast) -> TypeRef {
            TypeRef operand = Infer(cast.operand);
            Shape s = Shape::Spread(vars_.NewShapeVar());
            Expect(MakeTensor(Elem{vars_.NewElemVar()}, s), operand, ast_->Get(cast.operand).span,
                   "the operand of `cast`");
            return MakeTensor(Elem{cast.dtype}, vars_.Resolve(s));
          },
      },
      e.node);
}

TypeRef Checker::InferVar(syntax::ExprId id, const syntax::Expr& e, const syntax::expr::Var& var) {
  if (const Binding* local = env_.Find(var.name)) {
    if (kernel_ && !store_destination_) {
      const KernelContext::Param* param = KernelParamOf(var.name);
      if (param && param->out) {
        Diagnostic& error = diagnostics_.Emit(DiagnosticKind::OutParamRead, e.span, var.name);
        error.notes.push_back(MakeNote(DiagnosticKind::NoteOutParam, param->span, var.name));
      }
    }
    if (local->kind == Binding::Kind::Size) {
      elaboration_.refs[id.index] = RefKind::Size;
      elaboration_.size_refs[id.index] = local->size;
      return MakeScalar(Dtype::I64);
    }
    elaboration_.refs[id.index] = RefKind::Local;
    return Instantiate(local->scheme, e.span, var.name);
  }
  if (auto global = globals_.find(var.name); global != globals_.end()) {
    elaboration_.refs[id.index] = RefKind::Global;
    return Instantiate(global->second.scheme, e.span, var.name);
  }
  if (auto builtin = builtins_.find(var.name); builtin != builtins_.end()) {
    elaboration_.refs[id.index] = RefKind::Builtin;
    if (!in_main_ && !options_.host_anywhere &&
        (var.name == "load" || var.name == "save" || var.name == "arg" || var.name == "time")) {
      // Effects and the command line belong to the program (language.md, host-only
      // built-ins); `print` and `random` (seeded, so pure) are allowed anywhere.
      diagnostics_.Emit(DiagnosticKind::HostOutsideMain, e.span, var.name, current_);
    }
    if (IsShapeBuiltin(var.name)) {
      // Its type depends on the list written after it (handle_apply.cpp): it has none alone.
      diagnostics_.Emit(DiagnosticKind::ShapeBuiltinValue, e.span, var.name);
      return MakeVar(vars_.NewTypeVar());
    }
    TypeRef type = Instantiate(builtin->second.scheme, e.span, var.name);
    if (var.name == "max" || var.name == "min" || var.name == "argmax") RefuseEmptyAxis(var.name, type, e.span);
    return type;
  }
  if (IsKernelOp(var.name)) {
    elaboration_.refs[id.index] = RefKind::Builtin;
    return InferKernelOpValue(var.name, e);
  }
  if (var.name != "_") UnknownName(var.name, e.span);
  return MakeVar(vars_.NewTypeVar());
}

TypeRef Checker::InferOperatorRef(const syntax::Expr& e, const syntax::expr::OperatorRef& ref) {
  // An operator as a function: operands of one shape (broadcasting needs both operands).
  bool equality = ref.op == syntax::BinaryOp::Eq || ref.op == syntax::BinaryOp::Ne;
  ElemVarId t = vars_.NewElemVar(equality ? ElemClass::None : ElemClass::Num);
  Shape s = Shape::Spread(vars_.NewShapeVar());
  TypeRef operand = MakeTensor(Elem{t}, s);
  TypeRef result = operand;
  switch (ref.op) {
    case syntax::BinaryOp::Eq:
    case syntax::BinaryOp::Ne:
    case syntax::BinaryOp::Lt:
    case syntax::BinaryOp::Le:
    case syntax::BinaryOp::Gt:
    case syntax::BinaryOp::Ge:
      result = MakeTensor(Elem{Dtype::Bool}, s);
      break;
    case syntax::BinaryOp::And:
    case syntax::BinaryOp::Or:
      operand = result = MakeTensor(Elem{Dtype::Bool}, s);
      break;
    case syntax::BinaryOp::Pipe: {
      TypeRef a = MakeVar(vars_.NewTypeVar()), b = MakeVar(vars_.NewTypeVar());
      return MakeFunction({a, MakeFunction(a, b)}, b);
    }
    case syntax::BinaryOp::MatMul: {
      SizeVarId m = vars_.NewSizeVar(), k = vars_.NewSizeVar(), n = vars_.NewSizeVar();
      ShapeVarId b = vars_.NewShapeVar();
      auto matrix = [&](SizeVarId r, SizeVarId c) {
        return MakeTensor(Elem{t}, Shape{{}, b, {Dim::Var(r), Dim::Var(c)}});
      };
      return MakeFunction({matrix(m, k), matrix(k, n)}, matrix(m, n));
    }
    default:
      break;
  }
  return MakeFunction({operand, operand}, result);
}

TypeRef Checker::InferList(const syntax::Expr& e, const syntax::expr::List& list) {
  // A tensor literal: elements of one type 't[..s]; the result is 't[count, ..s].
  ElemVarId t = vars_.NewElemVar();
  Shape s = Shape::Spread(vars_.NewShapeVar());
  TypeRef element = MakeTensor(Elem{t}, s);
  for (syntax::ExprId x : list.elements) {
    TypeRef found = Infer(x);
    // A literal's element type is bound to the list's, not the list's to it, so that a
    // later element that does not fit is described as itself: after `[1.0,`, a `true`
    // is "`bool` is not a `float` type", not "found a float literal" under the `true`.
    TypeRef resolved = vars_.Resolve(found);  // kept alive: `tensor` points into it
    const auto* tensor = std::get_if<TensorType>(&resolved->node);
    if (tensor && vars_.Resolve(tensor->elem).is_var()) unifier_.UnifyElem(tensor->elem, Elem{t});
    Expect(element, found, ast_->Get(x).span, "an element of a tensor literal");
  }
  Shape rs = vars_.Resolve(s);
  rs.before.insert(rs.before.begin(), Dim::Constant(static_cast<std::int64_t>(list.elements.size())));
  return MakeTensor(Elem{t}, rs);
}

void Checker::RefuseEmptyAxis(const std::string& name, const TypeRef& type, Span span) {
  // 't[..s, n] -> ...: n, once the body has decided it. A size that may be 0 is the run time's
  // business (an empty axis of `max` is an error there, as an index out of bounds is).
  const auto* function = std::get_if<FunctionType>(&type->node);
  const auto* tensor = function ? std::get_if<TensorType>(&function->param->node) : nullptr;
  if (!tensor || tensor->shape.after.empty()) return;
  TypeRef param = function->param;
  Dim axis = tensor->shape.after.back();
  late_.push_back([this, name, param, axis, span] {
    if (vars_.Resolve(axis).AsConstant() != std::int64_t{0}) return;
    diagnostics_.Emit(DiagnosticKind::EmptyReduction, span, name, TypePrinter(vars_).Print(param),
                      name == "max"   ? "maximum"
                      : name == "min" ? "minimum"
                                      : "largest element");
  });
}

}  // namespace weft::check
