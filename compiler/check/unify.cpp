#include "check/unify.h"

#include <algorithm>

#include "core/type_printer.h"
#include "diagnostics/diagnostic.h"

namespace weft::check {
namespace {

// A shallow resolve: follows bound type variables at the head only.
TypeRef Head(const VarStore& vars, TypeRef type) {
  while (const auto* var = std::get_if<VarType>(&type->node)) {
    const auto& info = vars.info(var->var);
    if (!info.binding) break;
    type = info.binding;
  }
  return type;
}

std::string_view KindName(const TypeRef& type) {
  switch (type->node.index()) {
    case 0:
      return "a type variable";
    case 1:
      return "a tensor";
    case 2:
      return "a function";
    case 3:
      return "a tuple";
    default:
      return "a string";
  }
}

bool Flexible(const VarStore& vars, SizeVarId var) {
  return vars.info(var).kind == VarKind::Flexible;
}

}  // namespace

std::vector<DeferredEquality> Unifier::TakeDeferred() {
  return std::exchange(deferred_, {});
}

bool Unifier::Occurs(TypeVarId var, const TypeRef& type) const {
  FreeVars free;
  CollectFreeVars(vars_, type, free);
  return std::find(free.types.begin(), free.types.end(), var) != free.types.end();
}

void Unifier::LowerLevels(const Dim& dim, int level) {
  for (SizeVarId v : vars_.Resolve(dim).Vars()) vars_.info(v).level = std::min(vars_.info(v).level, level);
}

void Unifier::LowerLevels(const Shape& shape, int level) {
  FreeVars free;
  CollectFreeVars(vars_, shape, free);
  for (ShapeVarId v : free.shapes) vars_.info(v).level = std::min(vars_.info(v).level, level);
  for (SizeVarId v : free.sizes) vars_.info(v).level = std::min(vars_.info(v).level, level);
}

void Unifier::LowerLevels(const TypeRef& type, int level) {
  FreeVars free;
  CollectFreeVars(vars_, type, free);
  for (TypeVarId v : free.types) vars_.info(v).level = std::min(vars_.info(v).level, level);
  for (ElemVarId v : free.elems) vars_.info(v).level = std::min(vars_.info(v).level, level);
  for (ShapeVarId v : free.shapes) vars_.info(v).level = std::min(vars_.info(v).level, level);
  for (SizeVarId v : free.sizes) vars_.info(v).level = std::min(vars_.info(v).level, level);
}

std::optional<Mismatch> Unifier::Unify(const TypeRef& a, const TypeRef& b) {
  TypeRef x = Head(vars_, a);
  TypeRef y = Head(vars_, b);
  if (x == y) return std::nullopt;
  const auto* xv = std::get_if<VarType>(&x->node);
  const auto* yv = std::get_if<VarType>(&y->node);
  if (xv && yv && xv->var == yv->var) return std::nullopt;
  if (!xv && yv) return Unify(y, x);
  if (xv) {
    if (Occurs(xv->var, y)) return Mismatch{Mismatch::Kind::Occurs, "a type would contain itself"};
    LowerLevels(y, vars_.info(xv->var).level);
    vars_.info(xv->var).binding = y;
    return std::nullopt;
  }
  if (x->node.index() != y->node.index()) {
    return Mismatch{Mismatch::Kind::Structure, std::string(KindName(x)) + " is not " + std::string(KindName(y))};
  }
  if (const auto* xt = std::get_if<TensorType>(&x->node)) {
    const auto& yt = std::get<TensorType>(y->node);
    if (auto m = UnifyElem(xt->elem, yt.elem)) return m;
    return UnifyShape(xt->shape, yt.shape);
  }
  if (const auto* xf = std::get_if<FunctionType>(&x->node)) {
    const auto& yf = std::get<FunctionType>(y->node);
    if (auto m = Unify(xf->param, yf.param)) return m;
    return Unify(xf->result, yf.result);
  }
  if (const auto* xt = std::get_if<TupleType>(&x->node)) {
    const auto& yt = std::get<TupleType>(y->node);
    if (xt->elements.size() != yt.elements.size()) {
      return Mismatch{Mismatch::Kind::Structure, "a tuple of " + std::to_string(xt->elements.size()) +
                                                     " is not a tuple of " + std::to_string(yt.elements.size())};
    }
    for (std::size_t i = 0; i < xt->elements.size(); ++i) {
      if (auto m = Unify(xt->elements[i], yt.elements[i])) return m;
    }
    return std::nullopt;
  }
  return std::nullopt;  // two strings
}

namespace {

// "a `num`", "an `int`".
std::string WithArticle(ElemClass cls) {
  return std::string(cls == ElemClass::Int ? "an `" : "a `") + std::string(Spelling(cls)) + "`";
}

Mismatch ClassConflict(ElemClass a, ElemClass b) {
  return Mismatch{Mismatch::Kind::Class,
                  "no element type is both " + WithArticle(a) + " and " + WithArticle(b) + " type"};
}

}  // namespace

std::optional<Mismatch> Unifier::RequireClass(const Elem& elem, ElemClass cls) {
  Elem e = vars_.Resolve(elem);
  if (!e.is_var()) {
    if (InClass(e.dtype(), cls)) return std::nullopt;
    return Mismatch{Mismatch::Kind::Class,
                    "`" + std::string(Spelling(e.dtype())) + "` is not " + WithArticle(cls) + " type"};
  }
  auto& info = vars_.info(e.var());
  std::optional<ElemClass> joined = JoinClasses(info.cls, cls);
  if (!joined) return ClassConflict(info.cls, cls);
  info.cls = *joined;
  return std::nullopt;
}

std::optional<Mismatch> Unifier::UnifyElem(const Elem& a, const Elem& b) {
  Elem x = vars_.Resolve(a);
  Elem y = vars_.Resolve(b);
  if (!x.is_var() && !y.is_var()) {
    if (x.dtype() == y.dtype()) return std::nullopt;
    return Mismatch{Mismatch::Kind::Dtype,
                    "`" + std::string(Spelling(x.dtype())) + "` and `" + std::string(Spelling(y.dtype())) + "` differ"};
  }
  if (!x.is_var()) std::swap(x, y);
  if (y.is_var() && x.var() == y.var()) return std::nullopt;
  auto& xi = vars_.info(x.var());
  if (y.is_var()) {
    auto& yi = vars_.info(y.var());
    std::optional<ElemClass> joined = JoinClasses(yi.cls, xi.cls);
    if (!joined) return ClassConflict(yi.cls, xi.cls);
    yi.cls = *joined;
    yi.level = std::min(yi.level, xi.level);
  } else if (auto m = RequireClass(y, xi.cls)) {
    if (xi.name == kIntLiteralName || xi.name == kFloatLiteralName) {
      // `(2.5 : i64)`: say what was found where, rather than which class the dtype lacks.
      Dtype d = y.dtype();
      bool integer = d != Dtype::Bool && !InClass(d, ElemClass::Float);
      m->message =
          "found " + xi.name + " where " +
          (integer ? "an integer (`" + std::string(Spelling(d)) + "`)" : "`" + std::string(Spelling(d)) + "`") +
          " is needed";
    }
    return m;
  }
  xi.binding = y;
  return std::nullopt;
}

std::optional<Mismatch> Unifier::BindSize(SizeVarId var, const Dim& dim) {
  if (dim.Mentions(var)) {
    deferred_.push_back({Dim::Var(var), dim});
    return std::nullopt;
  }
  LowerLevels(dim, vars_.info(var).level);
  vars_.info(var).binding = dim;
  return std::nullopt;
}

std::optional<Mismatch> Unifier::UnifyDim(const Dim& a, const Dim& b) {
  Dim x = vars_.Resolve(a);
  Dim y = vars_.Resolve(b);
  if (x == y) return std::nullopt;
  if (auto v = x.AsVar(); v && Flexible(vars_, *v)) return BindSize(*v, y);
  if (auto v = y.AsVar(); v && Flexible(vars_, *v)) return BindSize(*v, x);
  if (x.AsConstant() && y.AsConstant()) {
    TypePrinter p(vars_);
    std::string first = p.Print(x);
    return Mismatch{Mismatch::Kind::Dim, "`" + first + "` and `" + p.Print(y) + "` differ"};
  }
  // Solve x - y == 0 for a flexible variable that appears once, linearly, with coefficient +-1.
  core::Result<Dim> difference = core::Sub(x, y);
  if (difference) {
    for (const core::Term& term : difference->terms()) {
      if (term.monomial.size() != 1 || term.monomial[0].power != 1) continue;
      const core::Atom& atom = term.monomial[0].atom;
      if (atom.kind != core::AtomKind::kVar || !Flexible(vars_, atom.var)) continue;
      // c*v + rest == 0 has the one solution v = -rest / c when c divides every coefficient of rest.
      core::Result<Dim> rest = core::Sub(*difference, *(core::Result<Dim>(Dim::Var(atom.var)) * term.coefficient));
      if (!rest || rest->Mentions(atom.var)) continue;
      core::Result<Dim> negated = core::Neg(*rest);
      if (!negated) continue;
      std::int64_t c = term.coefficient;
      std::optional<Dim> solution = c > 0 ? core::DivExact(*negated, c) : core::DivExact(*rest, -c);
      if (!solution) continue;
      return BindSize(atom.var, *solution);
    }
  }
  deferred_.push_back({x, y});
  return std::nullopt;
}

std::optional<Mismatch> Unifier::BindShape(ShapeVarId var, const Shape& shape) {
  Shape s = vars_.Resolve(shape);
  if (s.spread == var) {
    if (s.FixedRank() == 0) return std::nullopt;
    return Mismatch{Mismatch::Kind::Occurs, "`.." + vars_.info(var).name + "` would contain itself"};
  }
  if (vars_.info(var).kind != VarKind::Flexible) {
    return Mismatch{Mismatch::Kind::Rigid, "the shape `.." + vars_.info(var).name + "` of the signature is not `" +
                                               TypePrinter(vars_).Print(s) + "`"};
  }
  LowerLevels(s, vars_.info(var).level);
  vars_.info(var).binding = s;
  return std::nullopt;
}

std::optional<Mismatch> Unifier::UnifyShape(const Shape& a, const Shape& b) {
  Shape x = vars_.Resolve(a);
  Shape y = vars_.Resolve(b);
  auto rank_mismatch = [&] {
    TypePrinter p(vars_);
    std::string first = p.Print(x);
    return Mismatch{Mismatch::Kind::Rank, "`" + first + "` and `" + p.Print(y) + "` have different ranks"};
  };
  if (x.Known() && y.Known()) {
    if (x.before.size() != y.before.size()) return rank_mismatch();
    for (std::size_t i = 0; i < x.before.size(); ++i) {
      if (auto m = UnifyDim(x.before[i], y.before[i])) return m;
    }
    return std::nullopt;
  }
  if (x.Known()) std::swap(x, y);
  // x has a shape variable; y has a known rank, or a shape variable of its own.
  if (y.Known()) {
    // y = [d0 .. dk]: x's fixed dims must fit, and its variable takes the middle.
    if (y.before.size() < x.FixedRank()) return rank_mismatch();
    for (std::size_t i = 0; i < x.before.size(); ++i) {
      if (auto m = UnifyDim(x.before[i], y.before[i])) return m;
    }
    std::size_t tail_start = y.before.size() - x.after.size();
    for (std::size_t i = 0; i < x.after.size(); ++i) {
      if (auto m = UnifyDim(x.after[i], y.before[tail_start + i])) return m;
    }
    std::vector<Dim> middle(y.before.begin() + static_cast<std::ptrdiff_t>(x.before.size()),
                            y.before.begin() + static_cast<std::ptrdiff_t>(tail_start));
    return BindShape(*x.spread, Shape::Of(std::move(middle)));
  }
  const std::vector<Dim>& y_front = y.before;
  const std::vector<Dim>& y_back = y.after;
  std::size_t front = std::min(x.before.size(), y_front.size());
  for (std::size_t i = 0; i < front; ++i) {
    if (auto m = UnifyDim(x.before[i], y_front[i])) return m;
  }
  std::size_t back = std::min(x.after.size(), y_back.size());
  for (std::size_t i = 0; i < back; ++i) {
    if (auto m = UnifyDim(x.after[x.after.size() - 1 - i], y_back[y_back.size() - 1 - i])) return m;
  }
  std::vector<Dim> a1(x.before.begin() + static_cast<std::ptrdiff_t>(front), x.before.end());
  std::vector<Dim> a2(x.after.begin(), x.after.end() - static_cast<std::ptrdiff_t>(back));
  std::vector<Dim> b1(y_front.begin() + static_cast<std::ptrdiff_t>(front), y_front.end());
  std::vector<Dim> b2(y_back.begin(), y_back.end() - static_cast<std::ptrdiff_t>(back));
  ShapeVarId s = *x.spread;
  ShapeVarId t = *y.spread;
  if (s == t) {
    if (a1.empty() && a2.empty() && b1.empty() && b2.empty()) return std::nullopt;
    return rank_mismatch();
  }
  if (a1.empty() && a2.empty()) return BindShape(s, Shape{b1, t, b2});
  if (b1.empty() && b2.empty()) return BindShape(t, Shape{a1, s, a2});
  // [a1.., ..s] ~ [..t, b2..] (or the mirror image): s := [..u, b2], t := [a1, ..u].
  bool mirrored = !(a2.empty() && b1.empty());
  if (mirrored && !(a1.empty() && b2.empty())) return rank_mismatch();
  if (vars_.info(s).kind != VarKind::Flexible || vars_.info(t).kind != VarKind::Flexible) return rank_mismatch();
  ShapeVarId u = vars_.NewShapeVar();
  vars_.info(u).level = std::min(vars_.info(s).level, vars_.info(t).level);
  if (!mirrored) {
    if (auto m = BindShape(s, Shape{{}, u, b2})) return m;
    return BindShape(t, Shape{a1, u, {}});
  }
  if (auto m = BindShape(s, Shape{b1, u, {}})) return m;
  return BindShape(t, Shape{{}, u, a2});
}

Broadcast BroadcastShapes(Unifier& unifier, VarStore& vars, const Shape& a, const Shape& b) {
  Shape x = vars.Resolve(a);
  Shape y = vars.Resolve(b);
  if (x.Known() && x.before.empty()) return {Broadcast::Status::Ok, y, ""};
  if (y.Known() && y.before.empty()) return {Broadcast::Status::Ok, x, ""};
  const std::vector<Dim>& x_tail = x.Known() ? x.before : x.after;
  const std::vector<Dim>& y_tail = y.Known() ? y.before : y.after;
  std::size_t pairs = std::min(x_tail.size(), y_tail.size());
  std::vector<Dim> paired(pairs);
  for (std::size_t i = 0; i < pairs; ++i) {
    Dim p = vars.Resolve(x_tail[x_tail.size() - 1 - i]);
    Dim q = vars.Resolve(y_tail[y_tail.size() - 1 - i]);
    Dim& out = paired[pairs - 1 - i];
    if (p == q || q.AsConstant() == 1) {
      out = p;
    } else if (p.AsConstant() == 1) {
      out = q;
    } else if (auto m = unifier.UnifyDim(p, q)) {
      return {Broadcast::Status::Mismatch, {}, m->message};
    } else {
      out = vars.Resolve(p);
    }
  }
  // What is left on the left of each operand: its remaining tail dims, and before them its shape
  // variable and leading dims, if it has one.
  auto left_of = [](const Shape& s, const std::vector<Dim>& tail, std::size_t used) {
    Shape left;
    std::vector<Dim> rest(tail.begin(), tail.end() - static_cast<std::ptrdiff_t>(used));
    if (s.Known()) return Shape::Of(std::move(rest));
    left.before = s.before;
    left.spread = s.spread;
    left.after = std::move(rest);
    return left;
  };
  Shape x_left = left_of(x, x_tail, pairs);
  Shape y_left = left_of(y, y_tail, pairs);
  auto empty = [](const Shape& s) { return s.Known() && s.before.empty(); };
  Shape left;
  if (empty(y_left)) {
    left = x_left;
  } else if (empty(x_left)) {
    left = y_left;
  } else if (x_left.spread && y_left.spread && x_left.FixedRank() == 0 && y_left.FixedRank() == 0) {
    if (auto m = unifier.UnifyShape(x_left, y_left)) return {Broadcast::Status::Mismatch, {}, m->message};
    left = x_left;
  } else {
    return {Broadcast::Status::Ambiguous, {}, ""};
  }
  // The result: left, then the paired dims.
  Shape result = vars.Resolve(left);
  if (result.spread) {
    result.after.insert(result.after.end(), paired.begin(), paired.end());
  } else {
    result.before.insert(result.before.end(), paired.begin(), paired.end());
  }
  return {Broadcast::Status::Ok, vars.Resolve(result), ""};
}

}  // namespace weft::check
