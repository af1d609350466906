// The core IR verifier. Elaboration copies types from inference; this checks, independently of the
// checker, that what it produced is a well-typed program: every node typed, every local name bound
// by an enclosing binder, every global defined earlier, and the typing rules that need no
// unification (an application's arguments match its callee's parameter types, a `let` binds its
// value's type, branches agree, a lambda's type is its parameters' to its body's). Types are
// compared structurally after resolving through the VarStore, so two types that inference made
// equal compare equal. A violation is a compiler bug, reported as an internal error.
#include <algorithm>
#include <set>

#include "base/overloaded.h"
#include "core/ir.h"
#include "core/type_printer.h"

namespace weft::core {
namespace {

bool SameElem(const VarStore& vars, const Elem& a, const Elem& b) {
  Elem x = vars.Resolve(a), y = vars.Resolve(b);
  if (x.is_var() != y.is_var()) return false;
  return x.is_var() ? x.var() == y.var() : x.dtype() == y.dtype();
}

// Dims that are equal, or that a run-time check of the expression equates (`equal`: the checks of
// an application, made before it runs: a rigid size a file gives against another, `s == 512`).
bool SameDims(const VarStore& vars, const std::vector<Dim>& a, const std::vector<Dim>& b,
              const std::vector<RuntimeCheck>* equal = nullptr) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    Dim x = vars.Resolve(a[i]), y = vars.Resolve(b[i]);
    if (x == y) continue;
    bool checked = false;
    for (const RuntimeCheck& c : equal ? *equal : std::vector<RuntimeCheck>{}) {
      if (c.fact.relation != RelOp::kEq) continue;
      Dim l = vars.Resolve(c.fact.lhs), r = vars.Resolve(c.fact.rhs);
      checked = checked || (l == x && r == y) || (l == y && r == x);
    }
    if (!checked) return false;
  }
  return true;
}

bool SameType(const VarStore& vars, const TypeRef& a, const TypeRef& b,
              const std::vector<RuntimeCheck>* equal = nullptr) {
  TypeRef x = vars.Resolve(a), y = vars.Resolve(b);
  if (x->node.index() != y->node.index()) return false;
  return std::visit(Overloaded{
                        [&](const VarType& v) { return v.var == std::get<VarType>(y->node).var; },
                        [&](const TensorType& t) {
                          const auto& u = std::get<TensorType>(y->node);
                          Shape s = vars.Resolve(t.shape), r = vars.Resolve(u.shape);
                          return SameElem(vars, t.elem, u.elem) && s.spread == r.spread &&
                                 SameDims(vars, s.before, r.before, equal) && SameDims(vars, s.after, r.after, equal);
                        },
                        [&](const FunctionType& f) {
                          const auto& g = std::get<FunctionType>(y->node);
                          return SameType(vars, f.param, g.param, equal) && SameType(vars, f.result, g.result, equal);
                        },
                        [&](const TupleType& t) {
                          const auto& u = std::get<TupleType>(y->node);
                          if (t.elements.size() != u.elements.size()) return false;
                          for (std::size_t i = 0; i < t.elements.size(); ++i) {
                            if (!SameType(vars, t.elements[i], u.elements[i], equal)) return false;
                          }
                          return true;
                        },
                        [&](const StringType&) { return true; },
                    },
                    x->node);
}

class Verifier {
 public:
  Verifier(const Module& module, const VarStore& vars) : module_(module), vars_(vars), printer_(vars) {}

  void Def(const core::Def& def) {
    def_ = &def;
    Body(def);
    defined_.insert(def.name);
  }

  std::vector<std::string> violations;

 private:
  void Body(const core::Def& def) {
    if (!def.body) return;
    if (!def.scheme.type) return Fail("has no type");
    if (def.kernel) return Kernel(def);
    std::vector<std::string> scope;
    TypeRef t = def.scheme.type;
    for (PatternId p : def.params) {
      TypeRef f_type = vars_.Resolve(t);
      const auto* f = std::get_if<FunctionType>(&f_type->node);
      if (!f) return Fail("has more parameters than its type has arrows");
      Pattern(p, f->param, scope);
      t = f->result;
    }
    Expr(def.body, scope);
    if (!SameType(vars_, module_.Get(def.body).type, t)) Mismatch("its body", module_.Get(def.body).type, t);
  }

  // A kernel: its type takes the parameters that are not `out` and returns the `out` ones (a
  // tuple unless there is one); its grid has 1 to 3 i64 sizes, its thread count is a positive
  // multiple of 32, its body is `()`.
  void Kernel(const core::Def& def) {
    const KernelInfo& kernel = *def.kernel;
    if (kernel.out.size() != def.params.size()) return Fail("has `out` flags for a different number of parameters");
    std::vector<std::string> scope;
    TypeRef t = def.scheme.type;
    std::vector<TypeRef> outs;
    for (std::size_t i = 0; i < def.params.size(); ++i) {
      if (kernel.out[i]) {
        Pattern(def.params[i], nullptr, scope);
        outs.push_back(module_.Get(def.params[i]).type);
        continue;
      }
      TypeRef f_type = vars_.Resolve(t);
      const auto* f = std::get_if<FunctionType>(&f_type->node);
      if (!f) return Fail("has more inputs than its type has arrows");
      Pattern(def.params[i], f->param, scope);
      t = f->result;
    }
    TypeRef result = outs.size() == 1 ? outs.front() : MakeTuple(outs);
    if (!SameType(vars_, t, result)) Mismatch("its `out` parameters", result, t);
    if (kernel.grid.empty() || kernel.grid.size() > 3)
      Fail("has a grid of " + std::to_string(kernel.grid.size()) + " extents");
    for (ExprId g : kernel.grid) {
      if (g.index >= module_.expr_count()) return Fail("refers to a missing expression");
      if (!std::holds_alternative<expr::SizeValue>(module_.Get(g).node) || !IsScalar(module_.Get(g).type, Dtype::I64))
        Fail("has a grid extent that is not an i64 size");
    }
    if (!kernel.threads || kernel.threads.index >= module_.expr_count()) return Fail("has no thread count");
    const auto* threads = std::get_if<expr::IntLit>(&module_.Get(kernel.threads).node);
    if (!threads || threads->value == 0 || threads->value % 32 != 0 ||
        !IsScalar(module_.Get(kernel.threads).type, Dtype::I64))
      Fail("has a thread count that is not a positive multiple of 32");
    Expr(def.body, scope);
    if (!SameType(vars_, module_.Get(def.body).type, MakeTuple({})))
      Mismatch("its body", module_.Get(def.body).type, MakeTuple({}));
  }

  void Fail(const std::string& what) { violations.push_back("`" + def_->name + "` " + what); }
  void Mismatch(const std::string& what, const TypeRef& found, const TypeRef& expected) {
    Fail(what + " has type `" + printer_.Print(found) + "` where `" + printer_.Print(expected) + "` is expected");
  }

  void Pattern(PatternId id, const TypeRef& expected, std::vector<std::string>& scope) {
    if (id.index >= module_.pattern_count()) return Fail("refers to a missing pattern");
    const core::Pattern& p = module_.Get(id);
    if (!p.type) return Fail("has an untyped pattern");
    if (expected && !SameType(vars_, p.type, expected)) Mismatch("a pattern", p.type, expected);
    std::visit(Overloaded{
                   [&](const pattern::Name& n) { scope.push_back(n.name); },
                   [&](const pattern::Wildcard&) {},
                   [&](const pattern::Tuple& t) {
                     TypeRef tuple_type = vars_.Resolve(p.type);
                     const auto* tuple = std::get_if<TupleType>(&tuple_type->node);
                     if (!tuple || tuple->elements.size() != t.elements.size()) {
                       return Fail("has a tuple pattern whose type is not a tuple of its size");
                     }
                     for (std::size_t i = 0; i < t.elements.size(); ++i)
                       Pattern(t.elements[i], tuple->elements[i], scope);
                   },
               },
               p.node);
  }

  bool IsScalar(const TypeRef& type, Dtype dtype) {
    TypeRef t_type = vars_.Resolve(type);
    const auto* t = std::get_if<TensorType>(&t_type->node);
    if (!t) return false;
    Shape s = vars_.Resolve(t->shape);
    Elem e = vars_.Resolve(t->elem);
    return s.Known() && s.FixedRank() == 0 && !e.is_var() && e.dtype() == dtype;
  }

  void Expr(ExprId id, std::vector<std::string>& scope) {
    if (id.index >= module_.expr_count()) return Fail("refers to a missing expression");
    const core::Expr& e = module_.Get(id);
    if (!e.type) return Fail("has an untyped expression");
    auto type_of = [&](ExprId x) { return module_.Get(x).type; };
    std::visit(Overloaded{
                   [&](const expr::Local& v) {
                     if (std::find(scope.rbegin(), scope.rend(), v.name) == scope.rend())
                       Fail("uses `" + v.name + "`, which no enclosing binder binds");
                   },
                   [&](const expr::Global& v) {
                     if (!defined_.count(v.name)) Fail("uses `" + v.name + "`, which is not defined before it");
                   },
                   [&](const expr::Apply& apply) {
                     Expr(apply.callee, scope);
                     TypeRef f = type_of(apply.callee);
                     std::vector<RuntimeCheck> checks = e.checks;
                     const auto& callee_checks = module_.Get(apply.callee).checks;
                     checks.insert(checks.end(), callee_checks.begin(), callee_checks.end());
                     for (ExprId a : apply.args) {
                       Expr(a, scope);
                       TypeRef fn_type = vars_.Resolve(f);
                       const auto* fn = std::get_if<FunctionType>(&fn_type->node);
                       if (!fn) return Fail("applies `" + printer_.Print(f) + "`, which is not a function");
                       if (!SameType(vars_, type_of(a), fn->param, &checks))
                         Mismatch("an argument", type_of(a), fn->param);
                       f = fn->result;
                     }
                     if (!SameType(vars_, e.type, f)) Mismatch("an application", e.type, f);
                   },
                   [&](const expr::Lambda& lambda) {
                     std::size_t mark = scope.size();
                     std::vector<TypeRef> params;
                     for (PatternId p : lambda.params) {
                       Pattern(p, nullptr, scope);
                       params.push_back(module_.Get(p).type);
                     }
                     Expr(lambda.body, scope);
                     scope.resize(mark);
                     TypeRef expected = MakeFunction(params, type_of(lambda.body));
                     if (!SameType(vars_, e.type, expected)) Mismatch("a lambda", e.type, expected);
                   },
                   [&](const expr::Let& let) {
                     Expr(let.value, scope);
                     std::size_t mark = scope.size();
                     Pattern(let.pattern, type_of(let.value), scope);
                     Expr(let.body, scope);
                     scope.resize(mark);
                     if (!SameType(vars_, e.type, type_of(let.body))) Mismatch("a `let`", e.type, type_of(let.body));
                   },
                   [&](const expr::If& branch) {
                     Expr(branch.condition, scope);
                     Expr(branch.then_branch, scope);
                     Expr(branch.else_branch, scope);
                     if (!IsScalar(type_of(branch.condition), Dtype::Bool))
                       Fail("has an `if` whose condition is not bool");
                     if (!SameType(vars_, e.type, type_of(branch.then_branch)))
                       Mismatch("a `then` branch", type_of(branch.then_branch), e.type);
                     if (!SameType(vars_, e.type, type_of(branch.else_branch)))
                       Mismatch("an `else` branch", type_of(branch.else_branch), e.type);
                   },
                   [&](const expr::Tuple& tuple) {
                     std::vector<TypeRef> elements;
                     for (ExprId x : tuple.elements) {
                       Expr(x, scope);
                       elements.push_back(type_of(x));
                     }
                     if (!SameType(vars_, e.type, MakeTuple(elements)))
                       Mismatch("a tuple", e.type, MakeTuple(elements));
                   },
                   [&](const expr::TensorLit& list) {
                     for (ExprId x : list.elements) Expr(x, scope);
                     TypeRef t_type = vars_.Resolve(e.type);
                     const auto* t = std::get_if<TensorType>(&t_type->node);
                     if (!t) return Fail("has a tensor literal whose type is not a tensor");
                   },
                   [&](const expr::Index& index) {
                     Expr(index.base, scope);
                     for (const expr::IndexItem& item : index.items) {
                       if (item.kind != expr::IndexItem::Kind::At) continue;
                       Expr(item.at, scope);
                       if (!IsScalar(type_of(item.at), Dtype::I64)) Fail("indexes with a value that is not an i64");
                     }
                   },
                   [&](const expr::Loop& loop) {
                     Expr(loop.init, scope);
                     Expr(loop.bound, scope);
                     if (!IsScalar(type_of(loop.bound), Dtype::I64)) Fail("has a loop bound that is not an i64");
                     std::size_t mark = scope.size();
                     Pattern(loop.state, type_of(loop.init), scope);
                     scope.push_back(loop.counter);
                     Expr(loop.body, scope);
                     scope.resize(mark);
                     if (!SameType(vars_, type_of(loop.body), type_of(loop.init)))
                       Mismatch("a loop body", type_of(loop.body), type_of(loop.init));
                     if (!SameType(vars_, e.type, type_of(loop.init))) Mismatch("a loop", e.type, type_of(loop.init));
                   },
                   [&](const expr::Cast& cast) {
                     Expr(cast.operand, scope);
                     TypeRef t_type = vars_.Resolve(e.type);
                     const auto* t = std::get_if<TensorType>(&t_type->node);
                     Elem elem = t ? vars_.Resolve(t->elem) : Elem{};
                     if (!t || elem.is_var() || elem.dtype() != cast.dtype)
                       Fail("has a cast whose type is not its dtype");
                   },
                   [&](const expr::SizeValue&) {
                     if (!IsScalar(e.type, Dtype::I64)) Fail("uses a size as a value that is not an i64");
                   },
                   [&](const auto&) {},  // literals, built-ins, shape arguments
               },
               e.node);
  }

  const Module& module_;
  const VarStore& vars_;
  TypePrinter printer_;
  const core::Def* def_ = nullptr;
  std::set<std::string> defined_;
};

}  // namespace

std::vector<std::string> Verify(const Module& module, const VarStore& vars) {
  Verifier verifier(module, vars);
  for (const Def& def : module.defs()) verifier.Def(def);
  return verifier.violations;
}

}  // namespace weft::core
