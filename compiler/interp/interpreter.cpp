// The evaluator of the core IR; interpreter.h has the design. Built-ins are in builtins.cpp.
#include "interp/interpreter.h"

#include <iostream>
#include <set>

#include "base/overloaded.h"
#include "core/type_printer.h"
#include "interp/eval.h"
#include "weft/format.h"
#include "weft/numerics.h"

namespace weft::interp {

namespace ce = core::expr;

// ---- Substitutions: what the type variables of the code being evaluated stand for ----

Dtype Frame::ElemOf(const Elem& elem) const {
  Elem e = vars.Resolve(elem);
  if (!e.is_var()) return e.dtype();
  if (auto it = subst.elems.find(e.var().index); it != subst.elems.end()) return it->second;
  // Nothing fixes it (no caller can): the defaults of a value.
  return core::DefaultDtype(vars.info(e.var()).cls);
}

std::optional<std::int64_t> Frame::SizeOf(SizeVarId v) const {
  if (auto it = subst.sizes.find(v.index); it != subst.sizes.end()) return it->second;
  return std::nullopt;
}

std::optional<std::int64_t> Frame::TryDim(const Dim& dim) const {
  Dim d = vars.Resolve(dim);
  bool known = true;
  core::Result<std::int64_t> value = core::Evaluate(d, [&](SizeVarId v) -> std::int64_t {
    std::optional<std::int64_t> size = SizeOf(v);
    if (!size) known = false;
    return size.value_or(0);
  });
  if (!known || !value) return std::nullopt;
  return *value;
}

EvalResult<std::int64_t> Frame::DimOf(const Dim& dim, Span span) const {
  if (std::optional<std::int64_t> value = TryDim(dim)) return *value;
  return RuntimeError{span, "internal: the size `" + core::TypePrinter(vars).Print(dim) + "` is not known here"};
}

EvalResult<std::vector<std::int64_t>> Frame::ShapeOf(const core::Shape& shape, Span span) const {
  core::Shape s = vars.Resolve(shape);
  std::vector<std::int64_t> out;
  for (const Dim& d : s.before) {
    EvalResult<std::int64_t> v = DimOf(d, span);
    if (!v) return v.error();
    out.push_back(*v);
  }
  if (s.spread) {
    auto it = subst.shapes.find(s.spread->index);
    if (it == subst.shapes.end()) return RuntimeError{span, "internal: a shape variable is not known here"};
    out.insert(out.end(), it->second.begin(), it->second.end());
  }
  for (const Dim& d : s.after) {
    EvalResult<std::int64_t> v = DimOf(d, span);
    if (!v) return v.error();
    out.push_back(*v);
  }
  return out;
}

// Element types of `pattern` (the callee's variables) from `concrete` (the caller's, under
// `caller`): how a call tells a polymorphic body its dtypes.
void MatchTypes(const VarStore& vars, const TypeRef& pattern, const TypeRef& concrete, const Frame& caller,
                Subst& out) {
  TypeRef p = vars.Resolve(pattern), c = vars.Resolve(concrete);
  if (const auto* pt = std::get_if<TensorType>(&p->node)) {
    const auto* ct = std::get_if<TensorType>(&c->node);
    if (!ct) return;
    Elem pe = vars.Resolve(pt->elem);
    if (pe.is_var() && !out.elems.count(pe.var().index)) {
      Elem ce = vars.Resolve(ct->elem);
      if (!ce.is_var() || caller.subst.elems.count(ce.var().index)) out.elems[pe.var().index] = caller.ElemOf(ce);
    }
    // Sizes the caller knows: a single size variable of the pattern against a dim of the caller.
    core::Shape ps = vars.Resolve(pt->shape), cs = vars.Resolve(ct->shape);
    if (ps.Known() && cs.Known() && ps.before.size() == cs.before.size()) {
      for (std::size_t i = 0; i < ps.before.size(); ++i) {
        std::optional<SizeVarId> v = ps.before[i].AsVar();
        if (!v || out.sizes.count(v->index)) continue;
        if (std::optional<std::int64_t> value = caller.TryDim(cs.before[i])) out.sizes[v->index] = *value;
      }
    }
  } else if (const auto* pf = std::get_if<FunctionType>(&p->node)) {
    if (const auto* cf = std::get_if<FunctionType>(&c->node)) {
      MatchTypes(vars, pf->param, cf->param, caller, out);
      MatchTypes(vars, pf->result, cf->result, caller, out);
    }
  } else if (const auto* ptu = std::get_if<TupleType>(&p->node)) {
    if (const auto* ctu = std::get_if<TupleType>(&c->node)) {
      for (std::size_t i = 0; i < ptu->elements.size() && i < ctu->elements.size(); ++i)
        MatchTypes(vars, ptu->elements[i], ctu->elements[i], caller, out);
    }
  }
}

// A dim linear in one size that `frame` does not know yet (`n + 1`, `2 * n`, `2 * n + m` with m
// known): that size, and the value that makes the dim `actual` (nullopt when no natural number
// does). Nothing for a dim of known sizes, of several unknown ones, or not linear in its unknown.
struct Solved {
  SizeVarId var;
  std::optional<std::int64_t> value;
};
std::optional<Solved> SolveLinear(const Dim& dim, std::int64_t actual, const Frame& frame) {
  std::optional<SizeVarId> unknown;
  bool several = false;
  auto at = [&](std::int64_t x) {
    return core::Evaluate(dim, [&](SizeVarId v) -> std::int64_t {
      if (std::optional<std::int64_t> size = frame.SizeOf(v)) return *size;
      if (unknown && unknown->index != v.index) several = true;
      unknown = v;
      return x;
    });
  };
  core::Result<std::int64_t> f0 = at(0), f1 = at(1), f2 = at(2);
  if (several || !unknown || !f0 || !f1 || !f2) return std::nullopt;
  std::int64_t slope = *f1 - *f0;
  if (slope <= 0 || *f2 - *f1 != slope) return std::nullopt;
  if (actual < *f0 || (actual - *f0) % slope != 0) return Solved{*unknown, std::nullopt};
  return Solved{*unknown, (actual - *f0) / slope};
}

// Element types, sizes and shapes of `type` from a value of that type. A mismatch with what is
// already known is an error (it is how `load`'s file is checked against the program).
std::optional<std::string> MatchValue(const VarStore& vars, const TypeRef& type, const Value& value, Frame& frame) {
  TypeRef t = vars.Resolve(type);
  if (const auto* tensor_type = std::get_if<TensorType>(&t->node)) {
    const auto* tensor = std::get_if<HostTensor>(&value.node);
    if (!tensor) return std::nullopt;
    Elem e = vars.Resolve(tensor_type->elem);
    if (e.is_var()) {
      auto [it, fresh] = frame.subst.elems.emplace(e.var().index, tensor->dtype);
      if (!fresh && it->second != tensor->dtype)
        return "its dtype is " + std::string(Spelling(tensor->dtype)) + ", not " + std::string(Spelling(it->second));
    } else if (e.dtype() != tensor->dtype) {
      return "its dtype is " + std::string(Spelling(tensor->dtype)) + ", not " + std::string(Spelling(e.dtype()));
    }
    core::Shape s = vars.Resolve(tensor_type->shape);
    const std::vector<std::int64_t>& dims = tensor->shape;
    std::size_t fixed = s.FixedRank();
    if (s.Known() ? dims.size() != fixed : dims.size() < fixed) {
      return "its rank is " + std::to_string(dims.size()) + ", not " + (s.Known() ? "" : "at least ") +
             std::to_string(fixed);
    }
    auto bind = [&](const Dim& d, std::size_t axis, std::int64_t actual) -> std::optional<std::string> {
      Dim r = vars.Resolve(d);
      if (std::optional<SizeVarId> v = r.AsVar(); v && !frame.SizeOf(*v)) {
        frame.subst.sizes[v->index] = actual;
        frame.bound_new = true;
        return std::nullopt;
      }
      // A dim such as `n + 1` or `2 * n` binds its one unknown size (`f (x: f32[n + 1])` called
      // with 5 elements has n = 4); before, n stayed unknown and its first use failed.
      if (std::optional<Solved> solved = SolveLinear(r, actual, frame)) {
        if (!solved->value) {
          return "axis " + std::to_string(axis) + " is " + std::to_string(actual) + ", which `" +
                 core::TypePrinter(vars).Print(r) + "` is for no size";
        }
        frame.subst.sizes[solved->var.index] = *solved->value;
        frame.bound_new = true;
      }
      std::optional<std::int64_t> expected = frame.TryDim(r);
      if (expected && *expected != actual) {
        std::string text = core::TypePrinter(vars).Print(r);
        return "axis " + std::to_string(axis) + " is " + std::to_string(actual) + ", not " +
               (r.AsConstant() ? text : "`" + text + "` = " + std::to_string(*expected));
      }
      return std::nullopt;
    };
    for (std::size_t i = 0; i < s.before.size(); ++i) {
      if (auto error = bind(s.before[i], i, dims[i])) return error;
    }
    std::size_t tail = dims.size() - s.after.size();
    for (std::size_t i = 0; i < s.after.size(); ++i) {
      if (auto error = bind(s.after[i], tail + i, dims[tail + i])) return error;
    }
    if (s.spread) {
      std::vector<std::int64_t> middle(dims.begin() + static_cast<std::ptrdiff_t>(s.before.size()),
                                       dims.begin() + static_cast<std::ptrdiff_t>(tail));
      auto [it, fresh] = frame.subst.shapes.emplace(s.spread->index, middle);
      if (!fresh && it->second != middle) return "its shape does not match the shape variable's";
    }
    return std::nullopt;
  }
  if (const auto* tuple_type = std::get_if<TupleType>(&t->node)) {
    const auto* tuple = std::get_if<Tuple>(&value.node);
    if (!tuple || tuple->size() != tuple_type->elements.size()) return std::nullopt;
    for (std::size_t i = 0; i < tuple->size(); ++i) {
      if (auto error = MatchValue(vars, tuple_type->elements[i], *(*tuple)[i], frame)) return error;
    }
  }
  return std::nullopt;
}

// ---- The evaluator ----

EvalResult<ValueRef> Evaluator::Bind(core::PatternId id, const ValueRef& value, Frame& frame) {
  const core::Pattern& p = module.Get(id);
  if (auto mismatch = MatchValue(vars, p.type, *value, frame)) {
    return RuntimeError{p.span, "the value bound here does not have its type: " + *mismatch};
  }
  if (auto error = RetryChecks(frame)) return *error;
  if (const auto* name = std::get_if<core::pattern::Name>(&p.node)) {
    frame.env = std::make_shared<const Env>(
        Env{name->name, value,
            p.quantified.elems.empty() && p.quantified.sizes.empty() && p.quantified.shapes.empty() ? nullptr : p.type,
            frame.env});
    return value;
  }
  if (const auto* tuple = std::get_if<core::pattern::Tuple>(&p.node)) {
    const auto* values = std::get_if<Tuple>(&value->node);
    if (!values || values->size() != tuple->elements.size())
      return RuntimeError{p.span, "internal: a tuple pattern bound to a value that is not such a tuple"};
    for (std::size_t i = 0; i < values->size(); ++i) {
      EvalResult<ValueRef> bound = Bind(tuple->elements[i], (*values)[i], frame);
      if (!bound) return bound.error();
    }
  }
  return value;
}

std::optional<RuntimeError> Evaluator::Check(const RuntimeCheck& check, Frame& frame, bool defer) {
  std::optional<std::int64_t> lhs = frame.TryDim(check.fact.lhs), rhs = frame.TryDim(check.fact.rhs);
  if (!lhs || !rhs) {
    if (defer) frame.pending.push_back(check);
    return std::nullopt;
  }
  bool holds = false;
  switch (check.fact.relation) {
    case core::RelOp::kEq:
      holds = *lhs == *rhs;
      break;
    case core::RelOp::kNe:
      holds = *lhs != *rhs;
      break;
    case core::RelOp::kLt:
      holds = *lhs < *rhs;
      break;
    case core::RelOp::kLe:
      holds = *lhs <= *rhs;
      break;
    case core::RelOp::kGt:
      holds = *lhs > *rhs;
      break;
    case core::RelOp::kGe:
      holds = *lhs >= *rhs;
      break;
  }
  if (holds) return std::nullopt;
  core::TypePrinter printer(vars);
  std::string fact = printer.Print(check.fact.lhs) + " " + std::string(Spelling(check.fact.relation)) + " " +
                     printer.Print(check.fact.rhs);
  std::string values;
  FreeVars free;
  CollectFreeVars(vars, vars.Resolve(check.fact.lhs), free);
  CollectFreeVars(vars, vars.Resolve(check.fact.rhs), free);
  for (SizeVarId v : free.sizes) {
    values += (values.empty() ? " with " : ", ") + printer.Print(Dim::Var(v)) + " = " +
              std::to_string(frame.SizeOf(v).value_or(0));
  }
  return RuntimeError{check.fact.span, "run-time check failed: " + check.what + ": `" + fact + "` is false" + values};
}

std::optional<RuntimeError> Evaluator::RetryChecks(Frame& frame) {
  if (!frame.bound_new || frame.pending.empty()) return std::nullopt;
  frame.bound_new = false;
  std::vector<RuntimeCheck> pending = std::exchange(frame.pending, {});
  for (const RuntimeCheck& c : pending) {
    if (auto error = Check(c, frame, true)) return error;
  }
  return std::nullopt;
}

EvalResult<ValueRef> Evaluator::Eval(core::ExprId id, Frame& frame) {
  // An application makes its checks (and its callee's: a `where` clause) once its arguments are
  // evaluated, before the call (EvalNode); other nodes before they are evaluated. A check whose
  // sizes are not known yet waits for them (RetryChecks).
  const core::Expr& e = module.Get(id);
  if (!std::holds_alternative<core::expr::Apply>(e.node)) {
    for (const RuntimeCheck& c : e.checks) {
      if (auto error = Check(c, frame, true)) return *error;
    }
  }
  return EvalNode(e, frame);
}

EvalResult<ValueRef> Evaluator::Literal(const core::Expr& e, const Frame& frame, std::uint64_t bits) {
  TensorType tensor = std::get<TensorType>(vars.Resolve(e.type)->node);
  HostTensor t = HostTensor::Zeros(frame.ElemOf(tensor.elem), {});
  runtime::StoreBits(t, 0, bits);
  return MakeValue(std::move(t));
}

EvalResult<ValueRef> Evaluator::EvalNode(const core::Expr& e, Frame& frame) {
  return std::visit(
      Overloaded{
          [&](const ce::IntLit& lit) -> EvalResult<ValueRef> {
            TensorType type = std::get<TensorType>(vars.Resolve(e.type)->node);
            Dtype d = frame.ElemOf(type.elem);
            HostTensor t = HostTensor::Zeros(d, {});
            if (runtime::IsFloatDtype(d)) {
              runtime::StoreBits(t, 0, runtime::EncodeFloatFromU64(d, lit.value));
            } else {
              runtime::StoreUint64(t, 0, lit.value);
            }
            return MakeValue(std::move(t));
          },
          [&](const ce::FloatLit& lit) -> EvalResult<ValueRef> {
            TensorType type = std::get<TensorType>(vars.Resolve(e.type)->node);
            Dtype d = frame.ElemOf(type.elem);
            std::optional<std::uint64_t> bits = runtime::EncodeFloatLiteral(d, lit.text);
            return Literal(e, frame, bits ? *bits : runtime::EncodeFloat(d, lit.value));
          },
          [&](const ce::BoolLit& lit) -> EvalResult<ValueRef> {
            HostTensor t = HostTensor::Zeros(Dtype::Bool, {});
            t.bytes[0] = lit.value ? 1 : 0;
            return MakeValue(std::move(t));
          },
          [&](const ce::StringLit& lit) -> EvalResult<ValueRef> { return MakeValue(lit.value); },
          [&](const ce::Local& local) -> EvalResult<ValueRef> {
            for (const Env* env = frame.env.get(); env; env = env->next.get()) {
              if (env->name != local.name) continue;
              if (!env->generic) return env->value;
              // A generalized `let` of a function: this use instantiates it.
              const auto* fn = std::get_if<Function>(&env->value->node);
              if (!fn) return env->value;
              Function copy = *fn;
              MatchTypes(vars, env->generic, e.type, frame, copy.subst);
              return MakeValue(std::move(copy));
            }
            return RuntimeError{e.span, "internal: `" + local.name + "` is not bound"};
          },
          [&](const ce::Global& global) -> EvalResult<ValueRef> { return EvalGlobal(global, e, frame); },
          [&](const ce::Builtin& builtin) -> EvalResult<ValueRef> {
            std::optional<std::size_t> arity = BuiltinArity(builtin.name);
            if (!arity) return RuntimeError{e.span, "the built-in `" + builtin.name + "` cannot run here"};
            Function fn;
            fn.kind = Function::Kind::Builtin;
            fn.builtin = builtin.name;
            fn.arity = *arity;
            fn.type = e.type;
            fn.subst = frame.subst;
            fn.span = e.span;
            if (*arity == 0) return CallBuiltin(fn, e.span);
            return MakeValue(std::move(fn));
          },
          [&](const ce::SizeValue& size) -> EvalResult<ValueRef> {
            EvalResult<std::int64_t> v = frame.DimOf(size.dim, e.span);
            if (!v) return v.error();
            return MakeValue(ScalarFromInt(Dtype::I64, *v));
          },
          [&](const ce::ShapeArg& shape) -> EvalResult<ValueRef> {
            HostTensor t = HostTensor::Zeros(Dtype::I64, {static_cast<std::int64_t>(shape.dims.size())});
            for (std::size_t i = 0; i < shape.dims.size(); ++i) {
              EvalResult<std::int64_t> v = frame.DimOf(shape.dims[i], e.span);
              if (!v) return v.error();
              if (*v < 0) return RuntimeError{e.span, "the dimension " + std::to_string(*v) + " is negative"};
              runtime::StoreInt64(t, static_cast<std::int64_t>(i), *v);
            }
            return MakeValue(std::move(t));
          },
          [&](const ce::Apply& apply) -> EvalResult<ValueRef> { return EvalApply(apply, e, frame); },
          [&](const ce::Lambda& lambda) -> EvalResult<ValueRef> {
            Function fn;
            fn.kind = Function::Kind::Lambda;
            fn.lambda = &lambda;
            fn.env = frame.env;
            fn.subst = frame.subst;
            fn.def_index = frame.def_index;
            fn.arity = lambda.params.size();
            fn.span = e.span;
            return MakeValue(std::move(fn));
          },
          [&](const ce::Let& let) -> EvalResult<ValueRef> {
            EvalResult<ValueRef> value = Eval(let.value, frame);
            if (!value) return value;
            std::shared_ptr<const Env> saved = frame.env;
            EvalResult<ValueRef> bound = Bind(let.pattern, *value, frame);
            if (!bound) return bound;
            EvalResult<ValueRef> body = Eval(let.body, frame);
            frame.env = saved;
            return body;
          },
          [&](const ce::If& branch) -> EvalResult<ValueRef> {
            EvalResult<ValueRef> c = Eval(branch.condition, frame);
            if (!c) return c;
            bool taken = runtime::LoadBits(std::get<HostTensor>((*c)->node), 0) != 0;
            return Eval(taken ? branch.then_branch : branch.else_branch, frame);
          },
          [&](const ce::Tuple& tuple) -> EvalResult<ValueRef> {
            Tuple values;
            for (core::ExprId x : tuple.elements) {
              EvalResult<ValueRef> v = Eval(x, frame);
              if (!v) return v;
              values.push_back(*v);
            }
            return MakeValue(std::move(values));
          },
          [&](const ce::TensorLit& list) -> EvalResult<ValueRef> { return EvalTensorLit(list, e, frame); },
          [&](const ce::Index& index) -> EvalResult<ValueRef> { return EvalIndex(index, e, frame); },
          [&](const ce::Loop& loop) -> EvalResult<ValueRef> { return EvalLoop(loop, e, frame); },
          [&](const ce::Cast& cast) -> EvalResult<ValueRef> {
            EvalResult<ValueRef> x = Eval(cast.operand, frame);
            if (!x) return x;
            return Lift(interp::Cast(cast.dtype, std::get<HostTensor>((*x)->node)), e.span);
          },
      },
      e.node);
}

EvalResult<ValueRef> Evaluator::EvalGlobal(const ce::Global& global, const core::Expr& e, Frame& frame) {
  std::optional<std::size_t> index = FindDef(global.name, frame.def_index);
  if (!index) return RuntimeError{e.span, "internal: no definition `" + global.name + "`"};
  const core::Def& def = module.defs()[*index];
  if (def.params.empty()) return EvaluateDef(*index);
  if (!def.body) return RuntimeError{e.span, "`" + global.name + "` has no body to run here"};
  Function fn;
  fn.kind = Function::Kind::Def;
  fn.def_index = *index;
  fn.arity = Arity(def);
  if (fn.arity == 0) {  // a kernel without inputs: the call is its use
    MatchTypes(vars, def.scheme.type, e.type, frame, fn.subst);
    return RunKernel(fn, e.span);
  }
  fn.span = e.span;
  MatchTypes(vars, def.scheme.type, e.type, frame, fn.subst);
  return MakeValue(std::move(fn));
}

EvalResult<ValueRef> Evaluator::EvalApply(const ce::Apply& apply, const core::Expr& e, Frame& frame) {
  const core::Expr& callee = module.Get(apply.callee);
  EvalResult<ValueRef> f = EvalNode(callee, frame);
  if (!f) return f;
  std::vector<ValueRef> args;
  for (core::ExprId a : apply.args) {
    EvalResult<ValueRef> v = Eval(a, frame);
    if (!v) return v;
    args.push_back(*v);
  }
  if (!callee.checks.empty() || !e.checks.empty()) {
    // The arguments' sizes, for the checks.
    for (std::size_t i = 0; i < args.size(); ++i) MatchValue(vars, module.Get(apply.args[i]).type, *args[i], frame);
    for (const std::vector<RuntimeCheck>* checks : {&callee.checks, &e.checks}) {
      for (const RuntimeCheck& c : *checks) {
        if (auto error = Check(c, frame, true)) return *error;
      }
    }
  }
  ValueRef fn = *f;
  for (const ValueRef& arg : args) {
    EvalResult<ValueRef> next = Call(fn, arg, e.span);
    if (!next) return next;
    fn = *next;
  }
  return fn;
}

EvalResult<ValueRef> Evaluator::EvalTensorLit(const ce::TensorLit& list, const core::Expr& e, Frame& frame) {
  std::vector<HostTensor> elements;
  for (core::ExprId x : list.elements) {
    EvalResult<ValueRef> v = Eval(x, frame);
    if (!v) return v;
    elements.push_back(std::get<HostTensor>((*v)->node));
  }
  TensorType type = std::get<TensorType>(vars.Resolve(e.type)->node);
  Dtype d = frame.ElemOf(type.elem);
  std::vector<std::int64_t> element_shape;
  if (!elements.empty()) {
    element_shape = elements.front().shape;
  } else {
    EvalResult<std::vector<std::int64_t>> shape = frame.ShapeOf(type.shape, e.span);
    if (!shape) return shape.error();
    element_shape.assign(shape->begin() + 1, shape->end());
  }
  return Lift(Stack(d, element_shape, elements), e.span);
}

EvalResult<ValueRef> Evaluator::EvalIndex(const ce::Index& index, const core::Expr& e, Frame& frame) {
  EvalResult<ValueRef> base = Eval(index.base, frame);
  if (!base) return base;
  const HostTensor& x = std::get<HostTensor>((*base)->node);
  std::vector<IndexItem> items;
  for (std::size_t i = 0; i < index.items.size(); ++i) {
    const ce::IndexItem& item = index.items[i];
    switch (item.kind) {
      case ce::IndexItem::Kind::At: {
        EvalResult<ValueRef> at = Eval(item.at, frame);
        if (!at) return at;
        items.emplace_back(runtime::LoadInt64(std::get<HostTensor>((*at)->node), 0));
        break;
      }
      case ce::IndexItem::Kind::All:
        items.emplace_back(All{});
        break;
      case ce::IndexItem::Kind::Slice: {
        EvalResult<std::int64_t> lo = frame.DimOf(item.lo, e.span);
        if (!lo) return lo.error();
        std::int64_t hi = i < x.shape.size() ? x.shape[i] : 0;
        if (item.hi) {
          EvalResult<std::int64_t> h = frame.DimOf(*item.hi, e.span);
          if (!h) return h.error();
          hi = *h;
        }
        items.emplace_back(Slice{*lo, hi});
        break;
      }
    }
  }
  return Lift(interp::Index(x, items), e.span);
}

EvalResult<ValueRef> Evaluator::EvalLoop(const ce::Loop& loop, const core::Expr& e, Frame& frame) {
  EvalResult<ValueRef> state = Eval(loop.init, frame);
  if (!state) return state;
  EvalResult<ValueRef> bound = Eval(loop.bound, frame);
  if (!bound) return bound;
  std::int64_t n = runtime::LoadInt64(std::get<HostTensor>((*bound)->node), 0);
  std::shared_ptr<const Env> saved = frame.env;
  ValueRef current = *state;
  for (std::int64_t i = 0; i < n; ++i) {
    frame.env = saved;
    EvalResult<ValueRef> b = Bind(loop.state, current, frame);
    if (!b) return b;
    frame.env =
        std::make_shared<const Env>(Env{loop.counter, MakeValue(ScalarFromInt(Dtype::I64, i)), nullptr, frame.env});
    EvalResult<ValueRef> next = Eval(loop.body, frame);
    if (!next) return next;
    current = *next;
  }
  frame.env = saved;
  return current;
}

EvalResult<ValueRef> Evaluator::Call(const ValueRef& callee, const ValueRef& arg, Span span) {
  const auto* fn = std::get_if<Function>(&callee->node);
  if (!fn) return RuntimeError{span, "internal: applying a value that is not a function"};
  Function next = *fn;
  next.args.push_back(arg);
  if (next.args.size() < next.arity) return MakeValue(std::move(next));
  switch (next.kind) {
    case Function::Kind::Builtin:
      return CallBuiltin(next, span);
    case Function::Kind::Lambda: {
      Frame frame{vars, next.subst, next.env, next.def_index, {}, false};
      for (std::size_t i = 0; i < next.arity; ++i) {
        EvalResult<ValueRef> bound = Bind(next.lambda->params[i], next.args[i], frame);
        if (!bound) return bound;
      }
      return Eval(next.lambda->body, frame);
    }
    case Function::Kind::Def: {
      const core::Def& def = module.defs()[next.def_index];
      if (def.kernel) return RunKernel(next, span);
      Frame frame{vars, next.subst, nullptr, next.def_index, {}, false};
      for (std::size_t i = 0; i < next.arity; ++i) {
        EvalResult<ValueRef> bound = Bind(def.params[i], next.args[i], frame);
        if (!bound) return bound;
      }
      return Eval(def.body, frame);
    }
  }
  return RuntimeError{span, "internal: unknown function kind"};
}

std::optional<std::size_t> Evaluator::FindDef(std::string_view name, std::size_t before) const {
  const std::vector<core::Def>& defs = module.defs();
  for (std::size_t i = std::min(before, defs.size()); i-- > 0;) {
    // A definition with errors does not replace an earlier one of its name (the REPL's session).
    if (defs[i].name == name && defs[i].ok) return i;
  }
  return std::nullopt;
}

EvalResult<ValueRef> Evaluator::EvaluateDef(std::size_t index) {
  if (auto it = cache.find(index); it != cache.end()) return it->second;
  const core::Def& def = module.defs()[index];
  if (!def.body) return RuntimeError{def.span, "`" + def.name + "` cannot be evaluated: it has errors or no body"};
  if (!def.params.empty()) {
    Function fn;
    fn.kind = Function::Kind::Def;
    fn.def_index = index;
    fn.arity = Arity(def);
    fn.span = def.span;
    if (fn.arity == 0) {  // a kernel without inputs
      EvalResult<ValueRef> value = RunKernel(fn, def.span);
      if (value) cache.emplace(index, *value);
      return value;
    }
    return MakeValue(std::move(fn));
  }
  Frame frame{vars, {}, nullptr, index, {}, false};
  EvalResult<ValueRef> value = Eval(def.body, frame);
  if (value) cache.emplace(index, *value);
  return value;
}

std::size_t Evaluator::Arity(const core::Def& def) const {
  if (!def.kernel) return def.params.size();
  std::size_t inputs = 0;
  for (bool out : def.kernel->out) inputs += out ? 0 : 1;
  return inputs;
}

EvalResult<ValueRef> Evaluator::RunKernel(const Function& fn, Span span) {
  // docs/kernels.md, Meaning: the body once per block, blocks in row-major order, spaces and
  // layouts ignored; the out tensors start as zeros.
  const core::Def& def = module.defs()[fn.def_index];
  const core::KernelInfo& kernel = *def.kernel;
  Frame frame{vars, fn.subst, nullptr, fn.def_index, {}, false};
  std::size_t arg = 0;
  for (std::size_t i = 0; i < def.params.size(); ++i) {
    if (kernel.out[i]) continue;
    EvalResult<ValueRef> bound = Bind(def.params[i], fn.args[arg++], frame);
    if (!bound) return bound;
  }
  KernelRun run;
  for (std::size_t i = 0; i < def.params.size(); ++i) {
    if (!kernel.out[i]) continue;
    const core::Pattern& p = module.Get(def.params[i]);
    TypeRef type = vars.Resolve(p.type);
    const auto* tensor = std::get_if<TensorType>(&type->node);
    if (!tensor) return RuntimeError{p.span, "internal: an `out` parameter that is not a tensor"};
    EvalResult<std::vector<std::int64_t>> dims = frame.ShapeOf(tensor->shape, p.span);
    if (!dims) {
      const auto* name = std::get_if<core::pattern::Name>(&p.node);
      return RuntimeError{span, "the shape `" + core::TypePrinter(vars).Print(p.type) + "` of `out` parameter `" +
                                    (name ? name->name : "_") + "` is not determined by the kernel's inputs"};
    }
    run.outs.push_back(HostTensor::Zeros(frame.ElemOf(tensor->elem), *dims));
    EvalResult<ValueRef> bound = Bind(def.params[i], MakeValue(OutRef{run.outs.size() - 1, false, {}, {}}), frame);
    if (!bound) return bound;
  }
  std::vector<std::int64_t> grid;
  for (core::ExprId g : kernel.grid) {
    EvalResult<ValueRef> extent = Eval(g, frame);
    if (!extent) return extent;
    grid.push_back(runtime::LoadInt64(std::get<HostTensor>((*extent)->node), 0));
  }
  kernels.push_back(std::move(run));
  std::shared_ptr<const Env> saved = frame.env;
  std::vector<std::int64_t> block(grid.size(), 0);
  bool empty = false;
  for (std::int64_t g : grid) empty = empty || g <= 0;
  while (!empty) {
    kernels.back().block = block;
    frame.env = saved;
    EvalResult<ValueRef> done = Eval(def.body, frame);
    if (!done) {
      kernels.pop_back();
      return done;
    }
    // The next block, the last axis fastest.
    std::size_t axis = grid.size();
    while (axis > 0 && ++block[axis - 1] == grid[axis - 1]) block[--axis] = 0;
    if (axis == 0) break;
  }
  std::vector<HostTensor> outs = std::move(kernels.back().outs);
  kernels.pop_back();
  if (outs.size() == 1) return MakeValue(std::move(outs.front()));
  Tuple values;
  for (HostTensor& t : outs) values.push_back(MakeValue(std::move(t)));
  return MakeValue(std::move(values));
}

EvalResult<ValueRef> Evaluator::Lift(OpResult result, Span span) {
  if (pending_error) return *std::exchange(pending_error, std::nullopt);
  if (!result) return RuntimeError{span, result.error().message};
  return MakeValue(std::move(*result));
}

std::string ShowValue(const Value& value) {
  return std::visit(Overloaded{
                        [](const HostTensor& t) { return runtime::FormatTensor(t); },
                        [](const std::string& s) { return s; },
                        [](const Tuple& tuple) {
                          std::string out = "(";
                          for (std::size_t i = 0; i < tuple.size(); ++i) {
                            out += (i ? ", " : "") + ShowValue(*tuple[i]);
                          }
                          return out + ")";
                        },
                        [](const Function&) { return std::string("<function>"); },
                        [](const OutRef&) { return std::string("<out tile>"); },
                    },
                    value.node);
}

// ---- Interpreter ----

struct Interpreter::State {
  Evaluator evaluator;
};

Interpreter::Interpreter(const core::Module& module, const core::VarStore& vars, InterpreterOptions options)
    : state_(std::make_unique<State>(State{Evaluator{module, vars, std::move(options), {}, {}, {}}})) {}

Interpreter::~Interpreter() = default;

EvalResult<ValueRef> Interpreter::Evaluate(const core::Def& def) {
  const std::vector<core::Def>& defs = state_->evaluator.module.defs();
  for (std::size_t i = 0; i < defs.size(); ++i) {
    if (&defs[i] != &def) continue;
    return state_->evaluator.EvaluateDef(i);
  }
  return RuntimeError{def.span, "internal: the definition is not in the module"};
}

EvalResult<std::vector<HostTensor>> Interpreter::Call(const core::Def& def, const std::vector<HostTensor>& args,
                                                      const std::map<core::SizeVarId, std::int64_t>& sizes) {
  Evaluator& evaluator = state_->evaluator;
  EvalResult<ValueRef> value = Evaluate(def);  // its closure
  if (!value) return value.error();
  if (const auto* fn = std::get_if<Function>(&(*value)->node)) {
    Function known = *fn;
    for (const auto& [var, size] : sizes) known.subst.sizes[var.index] = size;
    value = MakeValue(std::move(known));
  }
  for (const HostTensor& arg : args) {
    value = evaluator.Call(*value, MakeValue(arg), def.span);
    if (!value) return value.error();
  }
  std::vector<HostTensor> tensors;
  if (const auto* tensor = std::get_if<HostTensor>(&(*value)->node)) tensors.push_back(*tensor);
  if (const auto* tuple = std::get_if<Tuple>(&(*value)->node)) {
    for (const ValueRef& element : *tuple) {
      const auto* tensor = std::get_if<HostTensor>(&element->node);
      if (!tensor) return RuntimeError{def.span, "`" + def.name + "` returns a tuple of other things than tensors"};
      tensors.push_back(*tensor);
    }
  }
  if (tensors.empty() && !std::holds_alternative<Tuple>((*value)->node))
    return RuntimeError{
        def.span, "`" + def.name + "` does not return tensors with " + std::to_string(args.size()) + " arguments"};
  return tensors;
}

void Interpreter::Reset() {
  state_->evaluator.cache.clear();
}

std::string Interpreter::Show(const Value& value) {
  return ShowValue(value);
}

}  // namespace weft::interp
