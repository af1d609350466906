// Elaboration: a checked definition's syntax, with what inference recorded about it
// (Checker::elaboration_), to the typed core IR (core/ir.h). It runs after the definition is
// generalized, so every type it copies is resolved: bound variables replaced, dims in normal form,
// and what is left free is what the definition's scheme quantifies (or a run-time size in `main`).
//
// Built-ins that the checker types from their syntax (shape arguments, broadcasting `maximum`,
// `select`, operators) have no recorded callee type; elaboration gives their callee the function
// type from the arguments' types to the application's, which is the instance used there.
#include <cstdlib>
#include <set>

#include "base/overloaded.h"
#include "check/checker.h"

namespace weft::check {
namespace {

class Elaborator {
 public:
  Elaborator(const syntax::Ast& ast, const VarStore& vars, const Elaboration& info, core::Module& module)
      : ast_(ast), vars_(vars), info_(info), module_(module) {}

  core::ExprId Expr(syntax::ExprId id);
  core::PatternId Pattern(syntax::PatternId id);

 private:
  TypeRef TypeOf(syntax::ExprId id) const {
    auto it = info_.expr_types.find(id.index);
    if (it == info_.expr_types.end()) WEFT_INTERNAL_ERROR("elaborating an expression that was never inferred");
    return vars_.Resolve(it->second);
  }
  Dim DimOf(syntax::ExprId id) const {
    auto it = info_.expr_dims.find(id.index);
    if (it == info_.expr_dims.end()) WEFT_INTERNAL_ERROR("elaborating a dim that was never read");
    return vars_.Resolve(it->second);
  }
  core::ExprId Add(const syntax::Expr& e, TypeRef type, core::ExprNode node, syntax::ExprId from = {}) {
    core::Expr out{e.span, std::move(type), std::move(node), {}, {}};
    if (from) {
      if (auto it = info_.checks.find(from.index); it != info_.checks.end()) {
        for (const RuntimeCheck& c : it->second) {
          out.checks.push_back(
              {DimFact{vars_.Resolve(c.fact.lhs), c.fact.relation, vars_.Resolve(c.fact.rhs), c.fact.span}, c.what});
        }
      }
    }
    return module_.Add(std::move(out));
  }
  // `callee args...` where the callee is a built-in without a recorded type.
  core::ExprId ApplyBuiltin(const syntax::Expr& e, syntax::ExprId id, Span callee_span, std::string name,
                            std::vector<core::ExprId> args) {
    std::vector<TypeRef> params;
    for (core::ExprId a : args) params.push_back(module_.Get(a).type);
    TypeRef result = TypeOf(id);
    core::ExprId callee = module_.Add(
        core::Expr{callee_span, MakeFunction(params, result), core::expr::Builtin{std::move(name)}, {}, {}});
    return Add(e, result, core::expr::Apply{callee, std::move(args)}, id);
  }

  // `loop p = init for i < bound do body` (or `pipeline`, the same fields) as a core loop.
  template <typename LoopNode>
  core::ExprId LoopOf(const syntax::Expr& e, syntax::ExprId id, const LoopNode& loop, bool pipelined) {
    core::ExprId init = Expr(loop.init);
    core::ExprId bound = Expr(loop.bound);
    core::PatternId state = Pattern(loop.state);
    core::ExprId body = Expr(loop.body);
    return Add(e, TypeOf(id), core::expr::Loop{state, init, loop.counter.text, bound, body, pipelined}, id);
  }

  const syntax::Ast& ast_;
  const VarStore& vars_;
  const Elaboration& info_;
  core::Module& module_;
};

core::PatternId Elaborator::Pattern(syntax::PatternId id) {
  const syntax::Pattern& p = ast_.Get(id);
  using namespace syntax::pattern;
  if (const auto* typed = std::get_if<Typed>(&p.node)) return Pattern(typed->pattern);
  auto it = info_.pattern_types.find(id.index);
  if (it == info_.pattern_types.end()) WEFT_INTERNAL_ERROR("elaborating a pattern that was never bound");
  TypeRef type = vars_.Resolve(it->second);
  core::Pattern out{p.span, type, core::pattern::Wildcard{}, {}};
  if (const auto* name = std::get_if<Name>(&p.node)) {
    out.node = core::pattern::Name{name->name};
    if (auto q = info_.pattern_quantified.find(id.index); q != info_.pattern_quantified.end())
      out.quantified = q->second;
  } else if (const auto* tuple = std::get_if<Tuple>(&p.node)) {
    core::pattern::Tuple t;
    for (syntax::PatternId element : tuple->elements) t.elements.push_back(Pattern(element));
    out.node = std::move(t);
  }
  return module_.Add(std::move(out));
}

core::ExprId Elaborator::Expr(syntax::ExprId id) {
  const syntax::Expr& e = ast_.Get(id);
  using namespace syntax::expr;
  namespace ce = core::expr;
  return std::visit(
      Overloaded{
          [&](std::monostate) -> core::ExprId { WEFT_INTERNAL_ERROR("empty expression node"); },
          [&](const IntLit& lit) { return Add(e, TypeOf(id), ce::IntLit{lit.value}, id); },
          [&](const FloatLit& lit) {
            return Add(e, TypeOf(id), ce::FloatLit{std::strtod(lit.text.c_str(), nullptr), lit.text}, id);
          },
          [&](const StringLit& lit) { return Add(e, TypeOf(id), ce::StringLit{lit.value}, id); },
          [&](const BoolLit& lit) { return Add(e, TypeOf(id), ce::BoolLit{lit.value}, id); },
          [&](const Var& var) -> core::ExprId {
            auto ref = info_.refs.find(id.index);
            if (ref == info_.refs.end()) WEFT_INTERNAL_ERROR("elaborating an unresolved name `" + var.name + "`");
            switch (ref->second) {
              case RefKind::Local:
                return Add(e, TypeOf(id), ce::Local{var.name}, id);
              case RefKind::Global:
                return Add(e, TypeOf(id), ce::Global{var.name}, id);
              case RefKind::Builtin:
                return Add(e, TypeOf(id), ce::Builtin{var.name}, id);
              case RefKind::Size:
                return Add(e, TypeOf(id), ce::SizeValue{vars_.Resolve(Dim::Var(info_.size_refs.at(id.index)))}, id);
            }
            WEFT_INTERNAL_ERROR("unknown reference kind");
          },
          [&](const OperatorRef& ref) {
            std::string name = ref.op == syntax::BinaryOp::Pipe ? "|>" : std::string(syntax::Spelling(ref.op));
            return Add(e, TypeOf(id), ce::Builtin{name}, id);
          },
          [&](const Apply& apply) -> core::ExprId {
            const syntax::Expr& callee = ast_.Get(apply.callee);
            const auto* var = std::get_if<Var>(&callee.node);
            bool untyped_builtin = var && !info_.expr_types.count(apply.callee.index);
            if (untyped_builtin && IsShapeBuiltin(var->name)) {
              // The shape argument's dims, then the other arguments.
              const auto& list = std::get<List>(ast_.Get(apply.args[0]).node);
              std::vector<Dim> dims;
              for (syntax::ExprId d : list.elements) dims.push_back(DimOf(d));
              TypeRef shape_type =
                  MakeTensor(Elem{Dtype::I64}, Shape::Of({Dim::Constant(static_cast<std::int64_t>(dims.size()))}));
              std::vector<core::ExprId> args{Add(ast_.Get(apply.args[0]), shape_type, ce::ShapeArg{std::move(dims)})};
              for (std::size_t i = 1; i < apply.args.size(); ++i) args.push_back(Expr(apply.args[i]));
              return ApplyBuiltin(e, id, callee.span, var->name, std::move(args));
            }
            if (untyped_builtin && var->name == "tile") {
              // tile x [t..] (c..): the tensor, the extents as a shape argument, the coordinates.
              const auto& list = std::get<List>(ast_.Get(apply.args[1]).node);
              std::vector<Dim> dims;
              for (syntax::ExprId d : list.elements) dims.push_back(DimOf(d));
              TypeRef shape_type =
                  MakeTensor(Elem{Dtype::I64}, Shape::Of({Dim::Constant(static_cast<std::int64_t>(dims.size()))}));
              core::ExprId x = Expr(apply.args[0]);
              core::ExprId shape = Add(ast_.Get(apply.args[1]), shape_type, ce::ShapeArg{std::move(dims)});
              return ApplyBuiltin(e, id, callee.span, "tile", {x, shape, Expr(apply.args[2])});
            }
            if (untyped_builtin) {  // maximum, minimum, select, mma, store
              std::vector<core::ExprId> args;
              for (syntax::ExprId a : apply.args) args.push_back(Expr(a));
              return ApplyBuiltin(e, id, callee.span, var->name, std::move(args));
            }
            core::ExprId f = Expr(apply.callee);
            std::vector<core::ExprId> args;
            for (syntax::ExprId a : apply.args) args.push_back(Expr(a));
            return Add(e, TypeOf(id), ce::Apply{f, std::move(args)}, id);
          },
          [&](const Lambda& lambda) {
            ce::Lambda out;
            for (syntax::PatternId p : lambda.params) out.params.push_back(Pattern(p));
            out.body = Expr(lambda.body);
            return Add(e, TypeOf(id), std::move(out), id);
          },
          [&](const Let& let) {
            core::ExprId value = Expr(let.value);
            core::PatternId pattern = Pattern(let.pattern);
            core::ExprId body = Expr(let.body);
            return Add(e, TypeOf(id), ce::Let{pattern, value, body}, id);
          },
          [&](const If& branch) {
            core::ExprId c = Expr(branch.condition), t = Expr(branch.then_branch), f = Expr(branch.else_branch);
            return Add(e, TypeOf(id), ce::If{c, t, f}, id);
          },
          [&](const Binary& binary) -> core::ExprId {
            if (binary.op == syntax::BinaryOp::Pipe) {  // x |> f == f x
              core::ExprId x = Expr(binary.lhs);
              core::ExprId f = Expr(binary.rhs);
              return Add(e, TypeOf(id), ce::Apply{f, {x}}, id);
            }
            core::ExprId lhs = Expr(binary.lhs);
            core::ExprId rhs = Expr(binary.rhs);
            return ApplyBuiltin(e, id, binary.op_span, std::string(syntax::Spelling(binary.op)), {lhs, rhs});
          },
          [&](const Negate& negate) {
            core::ExprId x = Expr(negate.operand);
            return ApplyBuiltin(e, id, e.span, std::string(core::kNegate), {x});
          },
          [&](const Tuple& tuple) {
            ce::Tuple out;
            for (syntax::ExprId x : tuple.elements) out.elements.push_back(Expr(x));
            return Add(e, TypeOf(id), std::move(out), id);
          },
          [&](const List& list) {
            ce::TensorLit out;
            for (syntax::ExprId x : list.elements) out.elements.push_back(Expr(x));
            return Add(e, TypeOf(id), std::move(out), id);
          },
          [&](const Ascribe& ascribe) {
            core::ExprId inner = Expr(ascribe.expr);
            // A kernel-tier ascription leaves its space and layout on the expression it ascribes.
            if (auto it = info_.placements.find(id.index); it != info_.placements.end())
              module_.Mutable(inner).placement = it->second;
            return inner;
          },
          [&](const Index& index) {
            ce::Index out;
            out.base = Expr(index.base);
            for (const IndexItem& item : index.items) {
              ce::IndexItem o{};
              switch (item.kind) {
                case IndexItem::Kind::At:
                  o.kind = ce::IndexItem::Kind::At;
                  o.at = Expr(item.lo);
                  break;
                case IndexItem::Kind::All:
                  o.kind = ce::IndexItem::Kind::All;
                  break;
                case IndexItem::Kind::Slice:
                  o.kind = ce::IndexItem::Kind::Slice;
                  o.lo = item.lo ? DimOf(item.lo) : Dim();
                  if (item.hi) o.hi = DimOf(item.hi);
                  break;
              }
              out.items.push_back(std::move(o));
            }
            return Add(e, TypeOf(id), std::move(out), id);
          },
          // `loop`, and the kernel tier's software-pipelined `pipeline`, which means, sequentially, a loop.
          [&](const Loop& loop) { return LoopOf(e, id, loop, false); },
          [&](const Pipeline& pipeline) { return LoopOf(e, id, pipeline, true); },
          [&](const Cast& cast) {
            core::ExprId x = Expr(cast.operand);
            return Add(e, TypeOf(id), ce::Cast{cast.dtype, x}, id);
          },
      },
      e.node);
}

}  // namespace

namespace {

// Element types inside the body that neither the definition's type nor a `let` of a function
// quantifies cannot be fixed by any caller: they default as a value's do (f32, or i32 for num).
void DefaultBodyElems(VarStore& vars, const Elaboration& elaboration, const Scheme& scheme) {
  std::set<ElemVarId> kept(scheme.quantified.elems.begin(), scheme.quantified.elems.end());
  for (const auto& [pattern, quantified] : elaboration.pattern_quantified)
    kept.insert(quantified.elems.begin(), quantified.elems.end());
  for (const auto& [expr, type] : elaboration.expr_types) {
    FreeVars free;
    CollectFreeVars(vars, vars.Resolve(type), free);
    for (ElemVarId v : free.elems) {
      if (kept.count(v) || vars.info(v).level <= vars.level()) continue;
      vars.info(v).binding = Elem{DefaultDtype(vars.info(v).cls)};
    }
  }
}

}  // namespace

void Checker::Elaborate(const syntax::Def* def, const CheckedDef& checked) {
  core::Def out;
  out.name = checked.name;
  out.span = checked.span;
  out.scheme = checked.scheme;
  out.checks = checked.runtime_checks;
  out.ok = checked.ok;
  if (def && checked.ok) {
    DefaultBodyElems(vars_, elaboration_, checked.scheme);
    Elaborator elaborator(*ast_, vars_, elaboration_, module_);
    for (const syntax::Param& param : def->params) out.params.push_back(elaborator.Pattern(param.pattern));
    out.body = elaborator.Expr(def->body);
  }
  module_.defs().push_back(std::move(out));
}

void Checker::ElaborateKernel(const syntax::KernelDecl& kernel, const CheckedDef& checked,
                              const KernelContext& context) {
  // docs/core-ir.md, Kernels: every parameter (`out` ones marked), the grid as sizes, the thread
  // count as a literal, the body.
  core::Def out;
  out.name = checked.name;
  out.span = checked.span;
  out.scheme = checked.scheme;
  out.checks = checked.runtime_checks;
  out.ok = checked.ok;
  core::KernelInfo info;
  for (const syntax::Param& param : kernel.params) info.out.push_back(param.out);
  info.param_spaces = context.param_spaces;
  if (checked.ok) {
    DefaultBodyElems(vars_, elaboration_, checked.scheme);
    Elaborator elaborator(*ast_, vars_, elaboration_, module_);
    for (const syntax::Param& param : kernel.params) out.params.push_back(elaborator.Pattern(param.pattern));
    out.body = elaborator.Expr(kernel.body);
    for (std::size_t i = 0; i < context.grid.size(); ++i) {
      info.grid.push_back(module_.Add(core::Expr{context.grid_spans[i],
                                                 MakeScalar(Dtype::I64),
                                                 core::expr::SizeValue{vars_.Resolve(context.grid[i])},
                                                 {},
                                                 {}}));
    }
    info.threads = module_.Add(core::Expr{ast_->Get(kernel.threads).span,
                                          MakeScalar(Dtype::I64),
                                          core::expr::IntLit{static_cast<std::uint64_t>(context.threads.value_or(0))},
                                          {},
                                          {}});
  }
  out.kernel = std::move(info);
  module_.defs().push_back(std::move(out));
}

}  // namespace weft::check
