// Written types (annotations, signatures, the prelude) to checker types. Names are resolved in an
// AnnotationScope: one per definition, so that `'t` or `..s` written twice in a signature is one
// variable. A size name already in scope (a size binder, or a size from an earlier annotation)
// is that size; a new one becomes a size variable of the scope's kind: rigid in a signature,
// flexible in an annotation inside a body, run-time in `main`.
#include "check/checker.h"

namespace weft::check {

std::optional<Dim> Checker::FromDim(syntax::DimId id, AnnotationScope& scope) {
  const syntax::Dim& d = ast_->Get(id);
  if (const auto* i = std::get_if<syntax::dim::Int>(&d.node)) return Dim::Constant(i->value);
  if (const auto* v = std::get_if<syntax::dim::Var>(&d.node)) {
    const Binding* binding = env_.Find(v->name);
    if (binding && binding->kind == Binding::Kind::Size) return Dim::Var(binding->size);
    SizeVarId var = vars_.NewSizeVar(scope.new_sizes, v->name, d.span);
    env_.Push(v->name, Binding{Binding::Kind::Size, {}, var, d.span});
    return Dim::Var(var);
  }
  const auto& b = std::get<syntax::dim::Binary>(d.node);
  std::optional<Dim> lhs = FromDim(b.lhs, scope);
  std::optional<Dim> rhs = FromDim(b.rhs, scope);
  if (!lhs || !rhs) return std::nullopt;
  core::Result<Dim> result = Dim();
  switch (b.op) {
    case syntax::BinaryOp::Add:
      result = core::Add(*lhs, *rhs);
      break;
    case syntax::BinaryOp::Sub:
      result = core::Sub(*lhs, *rhs);
      break;
    case syntax::BinaryOp::Mul:
      result = core::Mul(*lhs, *rhs);
      break;
    default: {
      std::optional<std::int64_t> divisor = rhs->AsConstant();
      if (!divisor || *divisor <= 0) {
        diagnostics_.Emit(DiagnosticKind::NotAShapeArgument, ast_->Get(b.rhs).span,
                          "a divisor that is not a positive integer literal");
        return std::nullopt;
      }
      if (b.op == syntax::BinaryOp::Mod) {
        result = core::Mod(*lhs, *divisor);
        break;
      }
      ObligeDivisible(*lhs, *divisor, d.span);
      Dim p = *lhs;
      std::int64_t c = *divisor;
      result = core::Div(p, c);
    }
  }
  if (!result) {
    diagnostics_.Emit(DiagnosticKind::NotAShapeArgument, d.span, "a dimension that overflows 64 bits");
    return std::nullopt;
  }
  return *result;
}

TypeRef Checker::FromAnnotation(syntax::TypeId id, AnnotationScope& scope) {
  const syntax::Type& t = ast_->Get(id);
  using namespace syntax::type;
  if (const auto* tensor = std::get_if<Tensor>(&t.node)) {
    if (tensor->space && !in_kernel_) {
      diagnostics_.Emit(DiagnosticKind::KernelTierType, t.span, sources_.Text(t.span));
    } else if (tensor->space && tensor->space->text != "global" && tensor->space->text != "shared" &&
               tensor->space->text != "reg") {
      diagnostics_.Emit(DiagnosticKind::UnknownSpace, tensor->space->span, tensor->space->text);
    }
    Elem elem{Dtype::F32};
    if (tensor->elem.dtype) {
      elem = Elem{*tensor->elem.dtype};
    } else {
      auto [it, inserted] = scope.elem_vars.emplace(tensor->elem.var, ElemVarId());
      if (inserted) it->second = vars_.NewElemVar(ElemClass::None, tensor->elem.var);
      elem = Elem{it->second};
    }
    Shape shape;
    for (const syntax::ShapeItem& item : tensor->shape) {
      if (item.spread) {
        auto [it, inserted] = scope.shape_vars.emplace(item.spread_name, ShapeVarId());
        if (inserted) {
          VarKind kind = scope.new_sizes == VarKind::Rigid ? VarKind::Rigid : VarKind::Flexible;
          it->second = vars_.NewShapeVar(kind, item.spread_name, item.span);
        }
        shape.spread = it->second;
        continue;
      }
      std::optional<Dim> d = FromDim(item.dim, scope);
      Dim value = d ? *d : Dim::Var(vars_.NewSizeVar());
      (shape.spread ? shape.after : shape.before).push_back(value);
      // Every dimension is >= 0 (language.md: `f32[n - 5]` obliges `n >= 5`).
      if (d) ObligeNonNegative(value, item.span);
    }
    // i4 and u4 are packed two to a byte: their last axis is even (when it is written: `i4[..s]`
    // leaves it to the shape variable).
    const std::vector<Dim>& tail = shape.spread ? shape.after : shape.before;
    if (tensor->elem.dtype && (*tensor->elem.dtype == Dtype::I4 || *tensor->elem.dtype == Dtype::U4) && !tail.empty()) {
      Dim last = tail.back();
      Dtype dtype = *tensor->elem.dtype;
      Oblige(
          DimFact{*core::Mod(last, 2), Relation::kEq, Dim(), t.span},
          [this, last, dtype, span = t.span](bool refuted) {
            std::string text = TypePrinter(vars_).Print(last);
            diagnostics_.Emit(DiagnosticKind::PackedOddAxis, span, Spelling(dtype), text,
                              refuted ? "is odd" : "may be odd: add `where " + text + " % 2 == 0`");
          },
          "an even last axis of a packed tensor");
    }
    return MakeTensor(elem, shape);
  }
  if (const auto* var = std::get_if<Variable>(&t.node)) {
    auto [it, inserted] = scope.type_vars.emplace(var->name, TypeVarId());
    if (inserted) it->second = vars_.NewTypeVar(var->name);
    return MakeVar(it->second);
  }
  if (const auto* tuple = std::get_if<Tuple>(&t.node)) {
    std::vector<TypeRef> elements;
    for (syntax::TypeId e : tuple->elements) elements.push_back(FromAnnotation(e, scope));
    return MakeTuple(std::move(elements));
  }
  if (const auto* function = std::get_if<Function>(&t.node)) {
    TypeRef param = FromAnnotation(function->param, scope);
    return MakeFunction(param, FromAnnotation(function->result, scope));
  }
  return MakeString();
}

std::optional<DimFact> Checker::WhereFact(syntax::ExprId condition) {
  const syntax::Expr& e = ast_->Get(condition);
  const auto* binary = std::get_if<syntax::expr::Binary>(&e.node);
  Relation relation = Relation::kEq;
  bool comparison = binary != nullptr;
  if (binary) {
    switch (binary->op) {
      case syntax::BinaryOp::Eq:
        relation = Relation::kEq;
        break;
      case syntax::BinaryOp::Ne:
        relation = Relation::kNe;
        break;
      case syntax::BinaryOp::Lt:
        relation = Relation::kLt;
        break;
      case syntax::BinaryOp::Le:
        relation = Relation::kLe;
        break;
      case syntax::BinaryOp::Gt:
        relation = Relation::kGt;
        break;
      case syntax::BinaryOp::Ge:
        relation = Relation::kGe;
        break;
      default:
        comparison = false;
    }
  }
  if (!comparison) {
    diagnostics_.Emit(DiagnosticKind::NotAShapeArgument, e.span,
                      "a `where` condition that is not a comparison of dims such as `k % 64 == 0`");
    return std::nullopt;
  }
  // Divisions in a condition state facts; they oblige nothing.
  std::size_t before = obligations_.size();
  std::optional<Dim> lhs = ExprToDim(binary->lhs);
  std::optional<Dim> rhs = ExprToDim(binary->rhs);
  obligations_.resize(before);
  if (!lhs || !rhs) return std::nullopt;
  return DimFact{*lhs, relation, *rhs, e.span};
}

}  // namespace weft::check
