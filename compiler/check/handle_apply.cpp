// Inference of applications, including the built-ins whose types need more than a type scheme:
// those that read a shape from a list argument (`zeros [m, 2 * n]`, `reshape [a * b] x`), and
// the elementwise ones that broadcast (`maximum`, `minimum`, `select`).
#include <numeric>

#include "check/checker.h"

namespace weft::check {
namespace {

TypeRef HeadOf(const VarStore& vars, TypeRef type) {
  while (const auto* var = std::get_if<VarType>(&type->node)) {
    if (!vars.info(var->var).binding) break;
    type = vars.info(var->var).binding;
  }
  return type;
}

}  // namespace

bool IsShapeBuiltin(std::string_view name) {
  static const std::set<std::string, std::less<>> names = {"zeros",  "ones",    "full",    "iota",
                                                           "random", "reshape", "permute", "dequant"};
  return names.count(name) > 0;
}

TypeRef Checker::InferApply(const syntax::Expr& e, const syntax::expr::Apply& apply) {
  const syntax::Expr& callee = ast_->Get(apply.callee);
  std::string name = "the function";
  std::size_t first_arg = 0;
  TypeRef f;
  if (const auto* var = std::get_if<syntax::expr::Var>(&callee.node)) {
    name = var->name;
    bool builtin = !env_.Find(var->name) && !globals_.count(var->name) && builtins_.count(var->name);
    if (builtin && IsShapeBuiltin(var->name)) return InferShapeBuiltin(var->name, e, apply);
    bool kernel_op = !env_.Find(var->name) && !globals_.count(var->name) && IsKernelOp(var->name);
    if (kernel_op && (var->name == "tile" || var->name == "mma" || var->name == "store")) {
      return InferKernelOp(var->name, e, apply);
    }
    if (builtin && (var->name == "maximum" || var->name == "minimum") && apply.args.size() == 2) {
      TypeRef lt = Infer(apply.args[0]), rt = Infer(apply.args[1]);
      return Elementwise("take the " + var->name + " of", BinaryTypes::Arithmetic, apply.args[0], lt, apply.args[1], rt,
                         e.span);
    }
    if (builtin && var->name == "select" && apply.args.size() == 3) {
      TypeRef ct = Infer(apply.args[0]), at = Infer(apply.args[1]), bt = Infer(apply.args[2]);
      TypeRef values = Elementwise("select between", BinaryTypes::Choice, apply.args[1], at, apply.args[2], bt, e.span);
      // The condition is bool, and broadcasts against the values as they do against each other: a
      // condition no broadcast can align with the values is an error here, not at run time.
      Span cspan = ast_->Get(apply.args[0]).span;
      if (!Expect(MakeTensor(Elem{Dtype::Bool}, Shape::Spread(vars_.NewShapeVar())), ct, cspan,
                  "the condition of `select`")) {
        return values;
      }
      Elem elem = std::get<TensorType>(vars_.Resolve(values)->node).elem;
      std::vector<Note> notes = OperandNotes(apply.args[0], apply.args[1]);
      return BroadcastOperands(
          "select with the condition", elem, {cspan, LazyText{&vars_, ct}},
          {ast_->Get(apply.args[1]).span.To(ast_->Get(apply.args[2]).span), LazyText{&vars_, values}}, notes);
    }
  }
  f = Infer(apply.callee);
  for (std::size_t i = first_arg; i < apply.args.size(); ++i) {
    syntax::ExprId arg = apply.args[i];
    TypeRef arg_type = Infer(arg);
    TypeRef head = HeadOf(vars_, f);
    if (std::holds_alternative<VarType>(head->node)) {
      TypeRef result = MakeVar(vars_.NewTypeVar());
      if (!Expect(head, MakeFunction(arg_type, result), callee.span, "applying `" + name + "`")) {
        return MakeVar(vars_.NewTypeVar());
      }
      f = result;
      continue;
    }
    const auto* function = std::get_if<FunctionType>(&head->node);
    if (!function) {
      TypePrinter p(vars_);
      diagnostics_.Emit(DiagnosticKind::NotAFunction, i == 0 ? callee.span : e.span,
                        name == "the function" ? std::string("this expression") : "`" + name + "`", p.Print(head));
      return MakeVar(vars_.NewTypeVar());
    }
    if (auto m = unifier_.Unify(function->param, arg_type)) {
      unifier_.TakeDeferred();
      // The argument first, so that the program's own size names win over the callee's.
      TypePrinter printer(vars_);
      std::string arg_text = printer.Print(arg_type);
      std::string param_text = printer.Print(function->param);
      diagnostics_.Emit(DiagnosticKind::ArgumentMismatch, ast_->Get(arg).span, i + 1, name, arg_text,
                        "`" + name + "` takes `" + param_text + "`: " + m->message);
      return MakeVar(vars_.NewTypeVar());
    }
    RecordDeferred(ast_->Get(arg).span, "argument " + std::to_string(i + 1) + " of `" + name + "`");
    f = function->result;
  }
  return f;
}

TypeRef Checker::InferShapeBuiltin(const std::string& name, const syntax::Expr& e, const syntax::expr::Apply& apply) {
  // `name [dims] args...`: the shape is read from the list; the arguments after it may be left out,
  // and then the application is a function of them (`x |> reshape [a * b]`).
  std::optional<std::vector<Dim>> dims = ShapeArgument(apply.args[0]);
  Span shape_span = ast_->Get(apply.args[0]).span;
  auto give_up = [&] {
    for (std::size_t i = 1; i < apply.args.size(); ++i) Infer(apply.args[i]);
    return MakeVar(vars_.NewTypeVar());
  };
  if (!dims) return give_up();
  // The parameters after the shape argument, with what a mismatch is about, and the result.
  struct Param {
    TypeRef type;
    std::string context;
  };
  std::vector<Param> params;
  TypeRef result;
  if (name == "zeros" || name == "ones") {
    result = MakeTensor(Elem{vars_.NewElemVar(ElemClass::Num)}, Shape::Of(*dims));
  } else if (name == "full") {
    ElemVarId t = vars_.NewElemVar();
    params.push_back({MakeTensor(Elem{t}, Shape{}), "the fill value of `full`"});
    result = MakeTensor(Elem{t}, Shape::Of(*dims));
  } else if (name == "iota") {
    if (dims->size() != 1) {
      diagnostics_.Emit(DiagnosticKind::NotAShapeArgument, shape_span,
                        "a list of " + std::to_string(dims->size()) + " dims: `iota` takes one, `iota [n]`");
      return give_up();
    }
    result = MakeTensor(Elem{Dtype::I64}, Shape::Of(*dims));
  } else if (name == "random") {
    params.push_back({MakeScalar(Dtype::I64), "the seed of `random`"});
    result = MakeTensor(Elem{vars_.NewElemVar()}, Shape::Of(*dims));
  } else if (name == "reshape") {
    ElemVarId t = vars_.NewElemVar();
    Shape s = Shape::Spread(vars_.NewShapeVar());
    TypeRef x = MakeTensor(Elem{t}, s);
    params.push_back({x, "the tensor `reshape` reshapes"});
    result = MakeTensor(Elem{t}, Shape::Of(*dims));
    // The element counts must agree; the operand's rank may only be known later in the definition
    // (a lambda's parameter, a partial application applied later), so the obligation is made once
    // the body is inferred.
    late_.push_back([this, s, t, x, target = Shape::Of(*dims), span = e.span] {
      Shape from = vars_.Resolve(s);
      TypePrinter printer(vars_);
      std::string from_text = printer.Print(x);
      std::string to_text = printer.Print(MakeTensor(Elem{t}, target));
      if (!from.Known()) {
        diagnostics_.Emit(DiagnosticKind::UndecidedObligation, span, "the element count of `reshape`", current_);
        return;
      }
      Dim before = Dim::Constant(1), after = Dim::Constant(1);
      for (const Dim& d : from.before) {
        if (auto product = core::Mul(before, d)) before = *product;
      }
      for (const Dim& d : target.before) {
        if (auto product = core::Mul(after, d)) after = *product;
      }
      Oblige(
          DimFact{before, Relation::kEq, after, span},
          [this, from_text, to_text, before, after, span](bool refuted) {
            TypePrinter p(vars_);
            diagnostics_.Emit(DiagnosticKind::ReshapeProduct, span, from_text, to_text, p.Print(before), p.Print(after),
                              refuted ? "" : ": add a `where` clause that says they are equal");
          },
          "the element count of `reshape`");
    });
  } else if (name == "permute") {
    std::vector<std::int64_t> order;
    for (const Dim& d : *dims) order.push_back(d.AsConstant().value_or(-1));
    std::vector<std::int64_t> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    std::vector<std::int64_t> identity(order.size());
    std::iota(identity.begin(), identity.end(), 0);
    if (sorted != identity) {
      diagnostics_.Emit(DiagnosticKind::BadPermutation, shape_span, std::string(sources_.Text(shape_span)),
                        order.size());
      return give_up();
    }
    std::vector<Dim> axes;
    for (std::size_t i = 0; i < order.size(); ++i) axes.push_back(Dim::Var(vars_.NewSizeVar()));
    ElemVarId t = vars_.NewElemVar();
    params.push_back({MakeTensor(Elem{t}, Shape::Of(axes)), "the tensor `permute` permutes"});
    std::vector<Dim> permuted;
    for (std::int64_t p : order) permuted.push_back(axes[static_cast<std::size_t>(p)]);
    result = MakeTensor(Elem{t}, Shape::Of(permuted));
  } else {  // dequant [g] q scales : 'q[..s, k] -> 't[..s, k / g] -> 't[..s, k]
    if (dims->size() != 1 || !(*dims)[0].AsConstant() || *(*dims)[0].AsConstant() <= 0) {
      diagnostics_.Emit(DiagnosticKind::NotAShapeArgument, shape_span, "a group size that is not one positive literal");
      return give_up();
    }
    std::int64_t g = *(*dims)[0].AsConstant();
    ShapeVarId s = vars_.NewShapeVar();
    Dim k = Dim::Var(vars_.NewSizeVar());
    ElemVarId q = vars_.NewElemVar(ElemClass::Int);
    ElemVarId t = vars_.NewElemVar(ElemClass::Float);
    ObligeDivisible(k, g, e.span);
    params.push_back({MakeTensor(Elem{q}, Shape{{}, s, {k}}), "the quantized tensor of `dequant`"});
    params.push_back({MakeTensor(Elem{t}, Shape{{}, s, {*core::Div(k, g)}}), "the scales of `dequant`"});
    result = MakeTensor(Elem{t}, Shape{{}, s, {k}});
  }
  // The arguments given, in order; those left out make the result a function of them.
  std::size_t given = std::min(apply.args.size() - 1, params.size());
  for (std::size_t i = 0; i < given; ++i) {
    syntax::ExprId arg = apply.args[i + 1];
    Expect(params[i].type, Infer(arg), ast_->Get(arg).span, params[i].context);
  }
  for (std::size_t i = params.size(); i > given; --i) result = MakeFunction(params[i - 1].type, result);
  // Further arguments apply to the result, which is a tensor: an error.
  std::size_t used = 1 + params.size();
  if (apply.args.size() > used) {
    Span applied = ast_->Get(apply.callee).span.To(ast_->Get(apply.args[used - 1]).span);
    diagnostics_.Emit(DiagnosticKind::NotAFunction, e.span, "`" + std::string(sources_.Text(applied)) + "`",
                      TypePrinter(vars_).Print(result));
    for (std::size_t i = used; i < apply.args.size(); ++i) Infer(apply.args[i]);
  }
  return result;
}

}  // namespace weft::check
