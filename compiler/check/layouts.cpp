// The layout stage: layouts of array values (docs/layouts.md, "Layouts in types"), inferred on a
// definition's core IR once its shapes are (as Futhark infers sizes after types). Layouts never
// decide whether a program checks: they follow from the shapes and from which operations are views.
//
//  1. Each tensor in a parameter's type gets a fresh layout variable ('l1): a definition is
//     polymorphic in the layouts of its arguments.
//  2. Bottom-up over the body: a value that owns its data (a literal, `load`, `random`, `zeros`, an
//     elementwise, reducing or matrix operation, a `cast`, a kernel's output) is `row`; a view
//     (`transpose`, `permute`, `reshape`, `expand`, indexing) applies its step to its operand's
//     layout (core::ApplyView: evaluated when the operand's is known, else kept as an expression);
//     a call substitutes its arguments' layouts for the callee's parameters' variables in its
//     result (and in the views of its body the callee's scheme keeps); `let`, tuples and names
//     pass layouts on; an `if` whose branches differ, and a loop whose state changes layout, join
//     them to `row` (the value is materialized).
//  3. The definition's type gets its parameters' variables and its body's layout; its scheme
//     keeps the views over its parameters' layouts (its own and its callees'), which a caller
//     substitutes as it does `where` facts; views whose layouts are known are listed for
//     `weft check --layouts`. In `main` no layout has a variable: every view is known.
#include <algorithm>
#include <set>

#include "base/overloaded.h"
#include "check/checker.h"
#include "core/array_layout.h"

namespace weft::check {
namespace {

using Subst = std::map<LayoutVarId, LayoutRef>;

// A cap on the views over variables a scheme keeps (a deep chain of calls, each viewing its
// argument, would keep one per call path); past it, views are listed only where they are known.
constexpr std::size_t kMaxLayoutFacts = 256;

// `type` with each tensor `row` (a value that owns its data: a null layout), through tuples. Types
// are shared: one that already is is returned as it is, so most expressions allocate nothing.
TypeRef Owned(const TypeRef& type) {
  if (const auto* tensor = std::get_if<TensorType>(&type->node))
    return tensor->layout ? MakeTensor(tensor->elem, tensor->shape) : type;
  if (const auto* tuple = std::get_if<TupleType>(&type->node)) {
    std::vector<TypeRef> elements;
    bool changed = false;
    for (const TypeRef& e : tuple->elements) {
      elements.push_back(Owned(e));
      changed = changed || elements.back() != e;
    }
    return changed ? MakeTuple(std::move(elements)) : type;
  }
  return type;
}

bool SameElem(const Elem& a, const Elem& b) {
  return a.is_var() == b.is_var() && (a.is_var() ? a.var() == b.var() : a.dtype() == b.dtype());
}

// `shapes` (the core IR's type: elements and shapes) with the layouts of `layouts` (the same
// structure, as the stage computed it); a tensor without one is `row`. Types are shared and their
// shapes are costly to copy: this returns `shapes` or `layouts` themselves where it can (a name's
// type is its binder's), and allocates only what differs from both.
TypeRef Graft(const TypeRef& shapes, const TypeRef& layouts) {
  if (!layouts) return Owned(shapes);
  if (shapes == layouts) return shapes;
  return std::visit(Overloaded{
                        [&](const TensorType& t) -> TypeRef {
                          const auto* l = std::get_if<TensorType>(&layouts->node);
                          LayoutRef layout = l ? l->layout : nullptr;
                          if (layout == t.layout) return shapes;
                          if (l && SameElem(t.elem, l->elem) && t.shape.before == l->shape.before &&
                              t.shape.spread == l->shape.spread && t.shape.after == l->shape.after)
                            return layouts;
                          return MakeTensor(t.elem, t.shape, layout);
                        },
                        [&](const TupleType& t) -> TypeRef {
                          const auto* l = std::get_if<TupleType>(&layouts->node);
                          bool same = l && l->elements.size() == t.elements.size();
                          std::vector<TypeRef> elements;
                          bool from_shapes = true, from_layouts = same;
                          for (std::size_t i = 0; i < t.elements.size(); ++i) {
                            elements.push_back(Graft(t.elements[i], same ? l->elements[i] : nullptr));
                            from_shapes = from_shapes && elements.back() == t.elements[i];
                            from_layouts = from_layouts && elements.back() == l->elements[i];
                          }
                          return from_shapes ? shapes : from_layouts ? layouts : MakeTuple(std::move(elements));
                        },
                        [&](const FunctionType& t) -> TypeRef {
                          const auto* l = std::get_if<FunctionType>(&layouts->node);
                          if (!l) return shapes;
                          TypeRef param = Graft(t.param, l->param), result = Graft(t.result, l->result);
                          if (param == t.param && result == t.result) return shapes;
                          if (param == l->param && result == l->result) return layouts;
                          return MakeFunction(param, result);
                        },
                        [&](const auto&) { return shapes; },
                    },
                    shapes->node);
}

// Binds the layout variables of `param` (a callee's parameter type) to the layouts of `arg`.
void Match(const TypeRef& param, const TypeRef& arg, Subst& subst) {
  if (!param || !arg) return;
  if (const auto* p = std::get_if<TensorType>(&param->node)) {
    const auto* a = std::get_if<TensorType>(&arg->node);
    const auto* var = p->layout ? std::get_if<Layout::Var>(&p->layout->node) : nullptr;
    if (a && var) subst.emplace(var->var, Detached(a->layout, a->shape));
  } else if (const auto* p = std::get_if<TupleType>(&param->node)) {
    const auto* a = std::get_if<TupleType>(&arg->node);
    if (!a || a->elements.size() != p->elements.size()) return;
    for (std::size_t i = 0; i < p->elements.size(); ++i) Match(p->elements[i], a->elements[i], subst);
  } else if (const auto* p = std::get_if<FunctionType>(&param->node)) {
    const auto* a = std::get_if<FunctionType>(&arg->node);
    if (!a) return;
    Match(p->param, a->param, subst);
    Match(p->result, a->result, subst);
  }
}

LayoutMap VarsOf(const Subst& subst) {
  LayoutMap map;
  map.var = [&subst](LayoutVarId v) -> LayoutRef {
    auto it = subst.find(v);
    return it == subst.end() ? nullptr : it->second;
  };
  return map;
}

TypeRef Substitute(const TypeRef& type, const Subst& subst) {
  if (subst.empty() || !type) return type;
  return std::visit(
      Overloaded{
          [&](const TensorType& t) {
            LayoutRef layout = t.layout ? MapLayout(t.layout, VarsOf(subst)) : nullptr;
            return layout == t.layout ? type : MakeTensor(t.elem, t.shape, layout);
          },
          [&](const TupleType& t) {
            std::vector<TypeRef> elements;
            for (const TypeRef& e : t.elements) elements.push_back(Substitute(e, subst));
            return MakeTuple(std::move(elements));
          },
          [&](const FunctionType& t) { return MakeFunction(Substitute(t.param, subst), Substitute(t.result, subst)); },
          [&](const auto&) { return type; },
      },
      type->node);
}

// The join of two values' layouts (`if`, a loop's state): equal ones stay, others are `row`.
TypeRef Join(const TypeRef& a, const TypeRef& b) {
  if (const auto* x = std::get_if<TensorType>(&a->node)) {
    const auto* y = std::get_if<TensorType>(&b->node);
    if (y && SameLayout(x->layout, y->layout)) return a;
    return Owned(a);
  }
  if (const auto* x = std::get_if<TupleType>(&a->node)) {
    const auto* y = std::get_if<TupleType>(&b->node);
    if (!y || y->elements.size() != x->elements.size()) return Owned(a);
    std::vector<TypeRef> elements;
    for (std::size_t i = 0; i < x->elements.size(); ++i) elements.push_back(Join(x->elements[i], y->elements[i]));
    return MakeTuple(std::move(elements));
  }
  return a;
}

bool SameLayouts(const TypeRef& a, const TypeRef& b) {
  if (const auto* x = std::get_if<TensorType>(&a->node)) {
    const auto* y = std::get_if<TensorType>(&b->node);
    return y && SameLayout(x->layout, y->layout);
  }
  if (const auto* x = std::get_if<TupleType>(&a->node)) {
    const auto* y = std::get_if<TupleType>(&b->node);
    if (!y || y->elements.size() != x->elements.size()) return false;
    for (std::size_t i = 0; i < x->elements.size(); ++i)
      if (!SameLayouts(x->elements[i], y->elements[i])) return false;
  }
  return true;
}

void LayoutVarsOf(const TypeRef& type, std::vector<LayoutVarId>& out) {
  if (const auto* t = std::get_if<TensorType>(&type->node)) {
    CollectLayoutVars(t->layout, out);
  } else if (const auto* t = std::get_if<TupleType>(&type->node)) {
    for (const TypeRef& e : t->elements) LayoutVarsOf(e, out);
  } else if (const auto* t = std::get_if<FunctionType>(&type->node)) {
    LayoutVarsOf(t->param, out);
    LayoutVarsOf(t->result, out);
  }
}

// Whether a value's type has a layout other than `row` (through tuples).
bool HasLayout(const TypeRef& type) {
  if (!type) return false;
  if (const auto* t = std::get_if<TensorType>(&type->node)) return t->layout != nullptr;
  if (const auto* t = std::get_if<TupleType>(&type->node))
    return std::any_of(t->elements.begin(), t->elements.end(), HasLayout);
  return false;
}

const TensorType* TensorOf(const TypeRef& type) {
  return type ? std::get_if<TensorType>(&type->node) : nullptr;
}

class LayoutStage {
 public:
  LayoutStage(Checker& checker, const decltype(Checker::layout_instances_)& instances)
      : checker_(checker), module_(checker.module_), vars_(checker.vars_), instances_(instances) {}

  // A fresh layout variable for each tensor of `type`, through tuples and functions; a scalar's
  // layout is its one element: `row`.
  TypeRef Fresh(const TypeRef& type) {
    return std::visit(Overloaded{
                          [&](const TensorType& t) {
                            bool scalar = t.shape.Known() && t.shape.before.empty();
                            return MakeTensor(t.elem, t.shape, scalar ? nullptr : VarLayout(vars_.NewLayoutVar()));
                          },
                          [&](const TupleType& t) {
                            std::vector<TypeRef> elements;
                            for (const TypeRef& e : t.elements) elements.push_back(Fresh(e));
                            return MakeTuple(std::move(elements));
                          },
                          [&](const FunctionType& t) { return MakeFunction(Fresh(t.param), Fresh(t.result)); },
                          [&](const auto&) { return type; },
                      },
                      type->node);
  }

  // Binds a pattern's names to the parts of `type` and records it as the pattern's type.
  void Bind(core::PatternId id, const TypeRef& type) {
    core::Pattern& p = module_.Mutable(id);
    p.type = Graft(p.type, type);
    if (const auto* name = std::get_if<core::pattern::Name>(&p.node)) {
      env_.emplace_back(name->name, p.type);
    } else if (const auto* tuple = std::get_if<core::pattern::Tuple>(&p.node)) {
      const auto* parts = std::get_if<TupleType>(&p.type->node);
      for (std::size_t i = 0; i < tuple->elements.size(); ++i) {
        Bind(tuple->elements[i], parts && i < parts->elements.size() ? parts->elements[i] : nullptr);
      }
    }
  }

  TypeRef Expr(core::ExprId id);

  std::vector<LayoutFact> deferred;  // views over variables
  std::vector<LayoutFact> known;     // views whose layouts are known

 private:
  TypeRef Node(core::ExprId id);
  TypeRef Apply(const core::Expr& e, const core::expr::Apply& apply);
  TypeRef BuiltinView(const core::Expr& e, const std::string& name, const std::vector<core::ExprId>& args,
                      const std::vector<TypeRef>& arg_types);
  // A built-in as a value (`transpose`, `map f`): it reads its arguments in any layout; its result
  // owns its data, but for a view's (`transpose : 'a[..b, m, n] @ 'l1 -> 'a[..b, n, m] @ transpose 'l1`).
  TypeRef BuiltinValue(const core::Expr& e, const std::string& name) {
    std::vector<TypeRef> params;
    TypeRef type = e.type;
    while (const auto* function = std::get_if<FunctionType>(&type->node)) {
      params.push_back(Fresh(function->param));
      type = function->result;
    }
    TypeRef result = Owned(type);
    const TensorType* operand = params.size() == 1 ? TensorOf(params[0]) : nullptr;
    const TensorType* out = TensorOf(type);
    if ((name == "transpose" || name == "expand") && operand && out) {
      ViewStep step{name == "transpose" ? ViewStep::Op::Transpose : ViewStep::Op::Expand, {}, {}, {}};
      result = MakeTensor(out->elem, out->shape, ApplyView(step, Detached(operand->layout, operand->shape)));
    }
    return MakeFunction(params, result);
  }
  // A view's layout: a fact of the definition.
  TypeRef View(const core::Expr& e, const ViewStep& step, const TypeRef& operand) {
    const TensorType* base = TensorOf(operand);
    if (!base) return Owned(e.type);
    LayoutRef layout = ApplyView(step, Detached(base->layout, base->shape));
    Note({layout, e.span, {}});
    const TensorType* t = TensorOf(e.type);
    return t ? MakeTensor(t->elem, t->shape, layout) : Owned(e.type);
  }
  // A kernel call: each tensor input's predicate (Scheme::admits) discharged on its argument's
  // layout (Checker::DischargeRead), noted on the argument's view line or a line of its own
  // (`weft check --layouts`); a deferred one is kept in the scheme, for the callers to decide.
  void AdmitArguments(const std::string& kernel, const std::vector<LayoutPredicate>& admits,
                      const std::vector<core::ExprId>& exprs, const std::vector<TypeRef>& args) {
    for (const LayoutPredicate& predicate : admits) {
      if (predicate.arg >= args.size() || predicate.arg >= exprs.size()) continue;
      const TensorType* t = TensorOf(args[predicate.arg]);
      if (!t) continue;
      KernelRead read{kernel, predicate};
      const Elem elem = vars_.Resolve(t->elem);
      read.element_bytes = elem.is_var() ? 0 : (weft::Bits(elem.dtype()) + 7) / 8;
      LayoutRef layout = Detached(t->layout, t->shape);
      checker_.DischargeRead(read, layout);
      // What owns its data is read in place, with nothing to say.
      if (!t->layout && read.verdict == KernelRead::Verdict::kInPlace) continue;
      const Span span = module_.Get(exprs[predicate.arg]).span;
      auto same = [&](const LayoutFact& f) { return SpanKey(f.span) == SpanKey(span) && !f.call.valid() && !f.read; };
      known.erase(std::remove_if(known.begin(), known.end(), same), known.end());
      deferred.erase(std::remove_if(deferred.begin(), deferred.end(), same), deferred.end());
      Note({layout, span, {}, std::move(read)});
    }
  }
  void Note(const LayoutFact& fact) {
    const bool deferred_read = fact.read && fact.read->verdict == KernelRead::Verdict::kDeferred;
    if (fact.read) WarnCopy(fact);
    if (IsKnown(fact.layout) && !deferred_read) {
      known.push_back(fact);
    } else if (deferred.size() < kMaxLayoutFacts) {
      deferred.push_back(fact);
    }
  }
  // A kernel call that reads a copy of its argument because the `where` facts refute what the
  // parameter admits (no silent slow paths): W0902 at the view (at the call that makes it, for a
  // callee's), naming the parameter, the layout, the failed condition and the refuting facts.
  void WarnCopy(const LayoutFact& fact) {
    const KernelRead& read = *fact.read;
    const bool no_map = read.tma == KernelRead::Verdict::kDeferred || read.tma == KernelRead::Verdict::kCopy;
    if (read.verdict != KernelRead::Verdict::kCopy || read.core.empty() || !no_map) return;
    const Span at = fact.call.valid() ? fact.call : fact.span;
    if (!warned_.insert(SpanKey(at)).second) return;
    TypePrinter printer(vars_, true);
    std::string why = read.why;
    if (read.tma == KernelRead::Verdict::kCopy && read.tma_why != read.why)
      why += "; and no TMA map on sm_90a: " + read.tma_why;
    Diagnostic& warning = checker_.diagnostics_.Emit(DiagnosticKind::KernelReadsCopy, at, read.kernel,
                                                     printer.Print(fact.layout), read.predicate.param, why);
    if (fact.call.valid()) warning.notes.push_back({fact.span, "the view"});
    for (const Span& span : read.core)
      warning.notes.push_back(MakeNote(DiagnosticKind::NoteWhereFact, span, std::string(checker_.sources_.Text(span))));
  }
  TypeRef Lookup(const std::string& name) const {
    for (auto it = env_.rbegin(); it != env_.rend(); ++it)
      if (it->first == name) return it->second;
    return nullptr;
  }

  Checker& checker_;
  core::Module& module_;
  VarStore& vars_;
  const decltype(Checker::layout_instances_)& instances_;
  std::vector<std::pair<std::string, TypeRef>> env_;
  std::set<decltype(SpanKey(Span{}))> warned_;
};

TypeRef LayoutStage::Expr(core::ExprId id) {
  TypeRef type = Node(id);
  core::Expr& e = module_.Mutable(id);
  e.type = Graft(e.type, type);
  return e.type;
}

TypeRef LayoutStage::Node(core::ExprId id) {
  const core::Expr& e = module_.Get(id);
  namespace ce = core::expr;
  return std::visit(
      Overloaded{
          [&](const ce::Local& local) -> TypeRef { return Lookup(local.name); },
          [&](const ce::Global&) -> TypeRef { return e.type; },  // the callee's scheme, instantiated
          [&](const ce::Builtin& builtin) -> TypeRef { return BuiltinValue(e, builtin.name); },
          [&](const ce::Apply& apply) { return Apply(e, apply); },
          [&](const ce::Lambda& lambda) -> TypeRef {
            std::size_t mark = env_.size();
            std::vector<TypeRef> params;
            for (core::PatternId p : lambda.params) {
              Bind(p, Fresh(module_.Get(p).type));
              params.push_back(module_.Get(p).type);
            }
            TypeRef body = Expr(lambda.body);
            env_.resize(mark);
            return MakeFunction(params, body);
          },
          [&](const ce::Let& let) -> TypeRef {
            TypeRef value = Expr(let.value);
            std::size_t mark = env_.size();
            Bind(let.pattern, value);
            TypeRef body = Expr(let.body);
            env_.resize(mark);
            return body;
          },
          [&](const ce::If& branch) -> TypeRef {
            Expr(branch.condition);
            TypeRef then_type = Expr(branch.then_branch);
            TypeRef else_type = Expr(branch.else_branch);
            return Join(then_type, else_type);
          },
          [&](const ce::Tuple& tuple) -> TypeRef {
            std::vector<TypeRef> elements;
            for (core::ExprId x : tuple.elements) elements.push_back(Expr(x));
            return MakeTuple(std::move(elements));
          },
          [&](const ce::TensorLit& list) -> TypeRef {
            for (core::ExprId x : list.elements) Expr(x);
            return nullptr;
          },
          [&](const ce::Cast& cast) -> TypeRef {
            Expr(cast.operand);
            return nullptr;
          },
          [&](const ce::Index& index) -> TypeRef {
            TypeRef base = Expr(index.base);
            ViewStep step{ViewStep::Op::Index, {}, {}, {}};
            for (const ce::IndexItem& item : index.items) {
              ViewIndexItem out{};
              if (item.kind == ce::IndexItem::Kind::At) {
                Expr(item.at);
                out.kind = ViewIndexItem::Kind::At;
                const core::Expr& at = module_.Get(item.at);
                if (const auto* lit = std::get_if<ce::IntLit>(&at.node)) {
                  out.lo = Dim::Constant(static_cast<std::int64_t>(lit->value));
                } else if (const auto* size = std::get_if<ce::SizeValue>(&at.node)) {
                  out.lo = size->dim;
                }
              } else if (item.kind == ce::IndexItem::Kind::Slice) {
                out.kind = ViewIndexItem::Kind::Slice;
                out.lo = item.lo;
                out.hi = item.hi;
              } else {
                out.kind = ViewIndexItem::Kind::All;
              }
              step.items.push_back(out);
            }
            return View(e, step, base);
          },
          [&](const ce::Loop& loop) -> TypeRef {
            TypeRef init = Expr(loop.init);
            Expr(loop.bound);
            std::size_t mark = env_.size(), deferred_mark = deferred.size(), known_mark = known.size();
            Bind(loop.state, init);
            env_.emplace_back(loop.counter, nullptr);  // an i64
            TypeRef body = Expr(loop.body);
            env_.resize(mark);
            if (SameLayouts(init, body)) return init;
            // The state changes layout from one iteration to the next: it is materialized, and the
            // body is read again with the state `row`.
            TypeRef state = Join(init, body);
            deferred.resize(deferred_mark);
            known.resize(known_mark);
            Bind(loop.state, state);
            env_.emplace_back(loop.counter, nullptr);
            Expr(loop.body);
            env_.resize(mark);
            return state;
          },
          [&](const auto&) -> TypeRef { return nullptr; },  // literals, sizes, shape arguments: they own their data
      },
      e.node);
}

TypeRef LayoutStage::BuiltinView(const core::Expr& e, const std::string& name, const std::vector<core::ExprId>& args,
                                 const std::vector<TypeRef>& arg_types) {
  auto shape_arg = [&]() -> const std::vector<Dim>* {
    const auto* shape = std::get_if<core::expr::ShapeArg>(&module_.Get(args[0]).node);
    return shape ? &shape->dims : nullptr;
  };
  if ((name == "transpose" || name == "expand") && args.size() == 1) {
    return View(e, {name == "transpose" ? ViewStep::Op::Transpose : ViewStep::Op::Expand, {}, {}, {}}, arg_types[0]);
  }
  if (name == "reshape" && args.size() == 2 && shape_arg()) {
    return View(e, {ViewStep::Op::Reshape, {}, *shape_arg(), {}}, arg_types[1]);
  }
  if (name == "permute" && args.size() == 2 && shape_arg()) {
    ViewStep step{ViewStep::Op::Permute, {}, {}, {}};
    for (const Dim& d : *shape_arg()) step.order.push_back(static_cast<int>(d.AsConstant().value_or(-1)));
    return View(e, step, arg_types[1]);
  }
  return nullptr;  // every other built-in's result owns its data
}

TypeRef LayoutStage::Apply(const core::Expr& e, const core::expr::Apply& apply) {
  const core::Expr& callee_expr = module_.Get(apply.callee);
  const auto* builtin = std::get_if<core::expr::Builtin>(&callee_expr.node);
  // A built-in applied (an operator, mostly) is typed by BuiltinView below; its callee's type is
  // the instance used here (as elaboration gives it), with the layouts met here where one is not
  // `row` (the common case allocates nothing).
  TypeRef callee = builtin ? nullptr : Expr(apply.callee);
  std::vector<TypeRef> args;
  for (core::ExprId a : apply.args) args.push_back(Expr(a));
  if (builtin) {
    TypeRef result = BuiltinView(e, builtin->name, apply.args, args);
    if (HasLayout(result) || std::any_of(args.begin(), args.end(), HasLayout)) {
      core::Expr& c = module_.Mutable(apply.callee);
      c.type = Graft(c.type, MakeFunction(args, result ? result : Owned(e.type)));
    }
    return result;
  }
  // A function value: its parameters' layout variables take the arguments' layouts.
  Subst subst;
  TypeRef type = callee;
  for (const TypeRef& arg : args) {
    const auto* function = type ? std::get_if<FunctionType>(&type->node) : nullptr;
    if (!function) return nullptr;
    Match(function->param, arg, subst);
    type = function->result;
  }
  if (const auto* global = std::get_if<core::expr::Global>(&callee_expr.node)) {
    const core::Def* def = module_.Find(global->name);
    if (def && def->kernel) AdmitArguments(global->name, def->scheme.admits, apply.args, args);
    // The views the callee's scheme keeps, as this call makes them; its kernel calls' reads deferred
    // to its callers are discharged again on the layouts this call gives.
    if (auto it = instances_.find(SpanKey(callee_expr.span)); it != instances_.end()) {
      // Resolved first: the instance's sizes were unified with the arguments' after it was made.
      for (const LayoutFact& fact : it->second) {
        LayoutFact made{MapLayout(vars_.Resolve(fact.layout), VarsOf(subst)), fact.span, e.span, fact.read};
        if (made.read) checker_.DischargeRead(*made.read, made.layout);
        Note(made);
      }
    }
  }
  return Substitute(type, subst);
}

}  // namespace

void Checker::InferLayouts(CheckedDef& checked) {
  core::Def& def = module_.defs().back();
  if (!def.ok || !def.body.valid() || def.kernel) return;
  LayoutStage stage(*this, layout_instances_);
  std::vector<TypeRef> params;
  for (core::PatternId p : def.params) {
    stage.Bind(p, stage.Fresh(module_.Get(p).type));
    params.push_back(module_.Get(p).type);
  }
  TypeRef body = stage.Expr(def.body);
  def.scheme.type = Graft(def.scheme.type, MakeFunction(params, body));
  // Quantified: the parameters' variables. A view over another variable (a lambda's parameter, a
  // function passed in) cannot be made known by a call: it is not kept.
  FreeVars free;  // only its layouts: the type is resolved, and its other variables are quantified
  LayoutVarsOf(def.scheme.type, free.layouts);
  def.scheme.quantified.layouts = free.layouts;
  std::vector<LayoutFact> deferred;
  for (const LayoutFact& fact : stage.deferred) {
    std::vector<LayoutVarId> over;
    CollectLayoutVars(fact.layout, over);
    bool quantified = std::all_of(over.begin(), over.end(), [&](LayoutVarId v) {
      return std::find(free.layouts.begin(), free.layouts.end(), v) != free.layouts.end();
    });
    bool seen = std::any_of(deferred.begin(), deferred.end(), [&](const LayoutFact& f) {
      return SpanKey(f.span) == SpanKey(fact.span) && SameLayout(f.layout, fact.layout);
    });
    if (quantified && !seen) deferred.push_back(fact);
  }
  def.scheme.layouts = std::move(deferred);
  checked.scheme.type = def.scheme.type;
  checked.scheme.quantified.layouts = def.scheme.quantified.layouts;
  checked.scheme.layouts = def.scheme.layouts;
  checked.views = std::move(stage.known);
}

void Checker::AdmitLayouts(const syntax::KernelDecl& kernel, CheckedDef& checked) {
  std::vector<const syntax::Param*> inputs;
  for (const syntax::Param& param : kernel.params)
    if (!param.out) inputs.push_back(&param);
  std::vector<TypeRef> params;
  TypeRef type = checked.scheme.type;
  while (params.size() < inputs.size()) {
    const auto* function = type ? std::get_if<FunctionType>(&type->node) : nullptr;
    if (!function) return;
    params.push_back(function->param);
    type = function->result;
  }
  bool any = false;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const TensorType* t = TensorOf(params[i]);
    if (!t || (t->shape.Known() && t->shape.before.empty())) continue;  // a scalar: its one element
    const syntax::Pattern& pattern = ast_->Get(inputs[i]->pattern);
    const auto* typed = std::get_if<syntax::pattern::Typed>(&pattern.node);
    const auto* name = typed ? std::get_if<syntax::pattern::Name>(&ast_->Get(typed->pattern).node) : nullptr;
    std::string text = name ? name->name : std::string(sources_.Text(pattern.span));
    LayoutVarId var = vars_.NewLayoutVar(text);
    params[i] = MakeTensor(t->elem, t->shape, VarLayout(var));
    checked.scheme.quantified.layouts.push_back(var);
    checked.scheme.admits.push_back(LayoutPredicate{var, text, i, 16, inputs[i]->span, false});
    any = true;
  }
  if (any) checked.scheme.type = MakeFunction(params, type);
}

void Checker::DischargeRead(KernelRead& read, const LayoutRef& layout) {
  using Verdict = KernelRead::Verdict;
  read.verdict = Verdict::kDeferred;
  read.why.clear();
  read.when.clear();
  read.core.clear();
  read.tma = Verdict::kDeferred;
  read.tma_why.clear();
  read.tma_when.clear();
  read.tma_dims = 0;
  if (layout) {
    if (const auto* not_strided = std::get_if<Layout::NotStrided>(&layout->node)) {
      read.verdict = Verdict::kCopy;
      read.why = "it has no strided layout (" + not_strided->why + ")";
      return;
    }
  }
  const StridedView* view = layout ? std::get_if<StridedView>(&layout->node) : nullptr;
  if (!view || read.element_bytes == 0) return;  // over a layout variable: each caller decides
  // The `where` facts in scope, for the solver; a refutation's unsat core names them.
  const std::vector<solver::Fact> facts = SolverFacts(facts_);
  std::vector<Span> core;
  core::ProveFact prove = [&](const DimFact& goal) -> std::optional<bool> {
    if (facts.empty()) return std::nullopt;
    solver::Answer answer = solver_.Prove(facts, {goal.lhs, goal.relation, goal.rhs});
    if (answer.verdict == solver::Verdict::kProved && !answer.vacuous) return true;
    if (answer.verdict != solver::Verdict::kRefuted || answer.vacuous) return std::nullopt;
    for (const DimFact* fact : WrittenFacts(core_solver_.Prove(facts, {goal.lhs, goal.relation, goal.rhs}).core))
      core.push_back(fact->span);
    return false;
  };
  auto names = [&](SizeVarId v) { return vars_.info(v).name; };
  weft::Result<core::RowRead, std::string> admitted = core::AdmitsRow(*view, read.element_bytes, prove, names);
  if (!admitted) {
    read.verdict = Verdict::kCopy;
    read.why = admitted.error();
    if (read.predicate.tma) {
      // On sm_90a a TMA map of the layout, the kernel's box along the last axis at most 128 bytes
      // (graph::TmaBoxColumns), as the graph's ReadInPlace decides it.
      weft::Result<core::TmaRead, std::string> map =
          core::AdmitsTma(*view, read.element_bytes, 128 / read.element_bytes, prove, names);
      if (!map) {
        read.tma = Verdict::kCopy;
        read.tma_why = map.error();
      } else {
        read.tma_dims = 0;
        for (const core::StridedAxis& axis : map->layout.axes) read.tma_dims += axis.modes.size();
        if (map->when.empty()) {
          read.tma = Verdict::kInPlace;
        } else if (in_main_) {
          read.tma = Verdict::kRunTime;
          read.tma_when = map->when;
        } else {
          read.verdict = Verdict::kDeferred;  // the definition's own sizes: its callers decide
          read.why.clear();
          return;
        }
      }
    }
    read.core = std::move(core);
  } else if (!admitted->when) {
    read.verdict = Verdict::kInPlace;
  } else if (in_main_) {
    // Sizes known only at run time: the host checks the offset's alignment before the call.
    read.verdict = Verdict::kRunTime;
    read.when.push_back(*admitted->when);
  }
  // Else a definition's own sizes: its callers decide, with the sizes they give.
}

}  // namespace weft::check
