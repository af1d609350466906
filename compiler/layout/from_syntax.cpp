// Evaluating layout ASTs; see from_syntax.h.
#include "layout/from_syntax.h"
#include "base/overloaded.h"

#include <cstdlib>
#include <variant>

#include "base/stack.h"

namespace weft::layout {
namespace {

IntTuple FromTree(const syntax::IntTree& tree) {
  if (tree.leaf) return IntTuple(tree.value);
  std::vector<IntTuple> elems;
  elems.reserve(tree.children.size());
  for (const syntax::IntTree& child : tree.children) elems.push_back(FromTree(child));
  return IntTuple::Tuple(std::move(elems));
}

class Evaluator {
 public:
  explicit Evaluator(const syntax::Ast& ast) : ast_(ast) {}

  // The span of the innermost node that failed; valid after a failure.
  Span failed_at() const { return failed_at_; }

  Result<Value> Eval(syntax::LayoutId id) {
    const syntax::Layout& node = ast_.Get(id);
    return std::visit(
        Overloaded{
            [&](std::monostate) -> Result<Value> { WEFT_INTERNAL_ERROR("empty layout node"); },
            [&](const syntax::layout::Variable& var) -> Result<Value> {
              return Fail(node.span, "`?" + var.name +
                                         "` is a layout variable: only layout synthesis gives it a value, so it "
                                         "cannot be evaluated here");
            },
            [&](const syntax::layout::IntTuple& tuple) -> Result<Value> { return Value(FromTree(tuple.tuple)); },
            [&](const syntax::layout::Literal& literal) -> Result<Value> {
              auto layout = Layout::Make(FromTree(literal.shape), FromTree(literal.stride));
              if (!layout) return Fail(node.span, layout.error());
              return Value(*layout);
            },
            [&](const syntax::layout::Swizzle& swizzle) { return EvalSwizzle(node.span, swizzle); },
            [&](const syntax::layout::Call& call) { return EvalCall(node.span, call); },
            [&](const syntax::layout::Tiler& tiler) { return EvalTiler(tiler); },
            [&](const syntax::layout::Compose& compose) { return EvalCompose(node.span, compose); },
        },
        node.node);
  }

 private:
  Error Fail(Span span, std::string message) {
    failed_at_ = span;
    return Error{std::move(message)};
  }
  // An error from a child keeps the child's span.
  static Error Pass(const Result<Value>& failed) { return Error{failed.error()}; }

  Result<Value> EvalSwizzle(Span span, const syntax::layout::Swizzle& swizzle) {
    auto spelled = [&] {
      return "Sw<" + std::to_string(swizzle.bits) + "," + std::to_string(swizzle.base) + "," +
             std::to_string(swizzle.shift) + ">";
    };
    // Swizzle::Make takes ints; anything this large reaches past bit 40 anyway.
    for (std::int64_t v : {swizzle.bits, swizzle.base, swizzle.shift}) {
      if (std::llabs(v) > 64) return Fail(span, "swizzle `" + spelled() + "` reaches past bit 40");
    }
    auto made =
        Swizzle::Make(static_cast<int>(swizzle.bits), static_cast<int>(swizzle.base), static_cast<int>(swizzle.shift));
    if (!made) return Fail(span, made.error());
    return Value(*made);
  }

  Result<Value> EvalCall(Span span, const syntax::layout::Call& call) {
    std::vector<Value> args;
    args.reserve(call.args.size());
    for (syntax::LayoutId arg : call.args) {
      auto value = Eval(arg);
      if (!value) return Pass(value);
      args.push_back(std::move(*value));
    }
    auto result = Apply(call.function.text, args);
    if (!result) return Fail(span, result.error());
    return result;
  }

  Result<Value> EvalTiler(const syntax::layout::Tiler& tiler) {
    std::vector<Layout> modes;
    modes.reserve(tiler.modes.size());
    for (syntax::LayoutId mode : tiler.modes) {
      auto value = Eval(mode);
      if (!value) return Pass(value);
      if (auto* layout = std::get_if<Layout>(&*value)) {
        modes.push_back(*layout);
      } else if (auto* shape = std::get_if<IntTuple>(&*value)) {
        modes.push_back(Layout::Compact(*shape));
      } else if (std::holds_alternative<std::vector<Layout>>(*value)) {
        return Fail(ast_.Get(mode).span, "tilers nest one level only: a mode of a tiler is a layout, not the tiler `" +
                                             ToString(*value) + "`");
      } else {
        return Fail(ast_.Get(mode).span,
                    "a mode of a tiler is a layout, not " + KindName(*value) + " `" + ToString(*value) + "`");
      }
    }
    return Value(std::move(modes));
  }

  Result<Value> EvalCompose(Span span, const syntax::layout::Compose& compose) {
    const std::vector<syntax::LayoutId>& parts = compose.parts;
    auto acc = Eval(parts[0]);
    if (!acc) return acc;
    for (std::size_t i = 1; i < parts.size(); ++i) {
      // `Sw o n o L`: an integer after a swizzle is CuTe's offset into the swizzle.
      const auto* offset = std::get_if<syntax::layout::IntTuple>(&ast_.Get(parts[i]).node);
      const auto* swizzle = std::get_if<Swizzle>(&*acc);
      if (swizzle != nullptr && offset != nullptr && offset->tuple.leaf && i + 1 < parts.size()) {
        auto inner = Eval(parts[i + 1]);
        if (!inner) return Pass(inner);
        Layout layout;
        if (auto* l = std::get_if<Layout>(&*inner)) {
          layout = *l;
        } else if (auto* shape = std::get_if<IntTuple>(&*inner)) {
          layout = Layout::Compact(*shape);
        } else {
          return Fail(ast_.Get(parts[i + 1]).span, "`" + ToString(*acc) + " o " + std::to_string(offset->tuple.value) +
                                                       " o L` swizzles a layout L, not " + KindName(*inner) + " `" +
                                                       ToString(*inner) + "`");
        }
        acc = Value(SwizzledLayout(*swizzle, offset->tuple.value, std::move(layout)));
        ++i;
        continue;
      }
      auto next = Eval(parts[i]);
      if (!next) return Pass(next);
      acc = Apply("composition", {*acc, *next});
      if (!acc) return Fail(span, acc.error());
    }
    return acc;
  }

  const syntax::Ast& ast_;
  Span failed_at_;
};

}  // namespace

Result<Value> Evaluate(const syntax::Ast& ast, syntax::LayoutId layout, Span* failed_at) {
  WEFT_CHECK(layout.valid());
  std::optional<Result<Value>> result;
  Evaluator evaluator(ast);
  // Expressions nest as deep as the parser allows (kMaxNesting), and so does the recursion here.
  RunWithDeepStack([&] { result.emplace(evaluator.Eval(layout)); });
  if (!*result && failed_at != nullptr) *failed_at = evaluator.failed_at();
  return std::move(*result);
}

std::optional<Value> Evaluate(const syntax::Ast& ast, syntax::LayoutId layout, Diagnostics& diagnostics) {
  Span failed_at;
  auto result = Evaluate(ast, layout, &failed_at);
  if (result) return std::move(*result);
  diagnostics.Emit(DiagnosticKind::LayoutEvaluation, failed_at, result.error());
  return std::nullopt;
}

}  // namespace weft::layout
