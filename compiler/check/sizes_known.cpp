// Every size a definition reads is known when it is read. A size is a value too (`n`, `zeros [n]`,
// `x[0:n]`), and the interpreter and the compiled program know a size only from a value's shape:
// an argument's (when the call binds the parameters), a `let`'s or a `fn`'s (when it binds its
// pattern), a `load`'s (when it checks the file). A size named only in the result's annotation or
// in an ascription (`def f (a: f32[2]) : f32[n] = zeros [n]`) is known to no one: E0246, where
// the size is read.
//
// The walk follows evaluation order and reads sizes back as the interpreter's MatchValue does
// (compiler/interp/interpreter.cpp): each dim of a bound type in order, a size alone or
// `core::SolvableFor` (a positive constant times the one unknown size, plus known ones). What a
// branch, a loop's body or a `fn`'s body binds is forgotten after it: it may not run.
#include <set>

#include "base/overloaded.h"
#include "check/checker.h"

namespace weft::check {
namespace {

class SizesKnown {
 public:
  SizesKnown(const core::Module& module, const VarStore& vars, Diagnostics& diagnostics, std::string_view where)
      : module_(module), vars_(vars), diagnostics_(diagnostics), where_(where) {}

  void Bind(core::PatternId id) { Learn(module_.Get(id).type); }

  void Walk(core::ExprId id) {
    namespace ce = core::expr;
    const core::Expr& e = module_.Get(id);
    std::visit(Overloaded{
                   [&](const ce::SizeValue& size) { Need(size.dim, e.span); },
                   [&](const ce::ShapeArg& shape) {
                     for (const Dim& d : shape.dims) Need(d, e.span);
                   },
                   [&](const ce::Apply& apply) {
                     Walk(apply.callee);
                     for (core::ExprId a : apply.args) Walk(a);
                     const auto* builtin = std::get_if<ce::Builtin>(&module_.Get(apply.callee).node);
                     if (builtin && builtin->name == "load") Learn(e.type);
                   },
                   [&](const ce::Lambda& lambda) {
                     std::set<std::uint32_t> saved = known_;
                     for (core::PatternId p : lambda.params) Bind(p);
                     Walk(lambda.body);
                     known_ = std::move(saved);
                   },
                   [&](const ce::Let& let) {
                     Walk(let.value);
                     Bind(let.pattern);
                     Walk(let.body);
                   },
                   [&](const ce::If& branch) {
                     Walk(branch.condition);
                     std::set<std::uint32_t> saved = known_;
                     Walk(branch.then_branch);
                     known_ = saved;
                     Walk(branch.else_branch);
                     known_ = std::move(saved);
                   },
                   [&](const ce::Tuple& tuple) {
                     for (core::ExprId x : tuple.elements) Walk(x);
                   },
                   [&](const ce::TensorLit& list) {
                     for (core::ExprId x : list.elements) Walk(x);
                     // An empty list's shape is its type's.
                     if (list.elements.empty()) NeedShape(e.type, e.span);
                   },
                   [&](const ce::Index& index) {
                     Walk(index.base);
                     for (const ce::IndexItem& item : index.items) {
                       if (item.kind == ce::IndexItem::Kind::At) Walk(item.at);
                       if (item.kind != ce::IndexItem::Kind::Slice) continue;
                       Need(item.lo, e.span);
                       if (item.hi) Need(*item.hi, e.span);
                     }
                   },
                   [&](const ce::Loop& loop) {
                     Walk(loop.init);
                     Walk(loop.bound);
                     std::set<std::uint32_t> saved = known_;
                     Bind(loop.state);
                     Walk(loop.body);
                     known_ = std::move(saved);
                   },
                   [&](const ce::Cast& cast) { Walk(cast.operand); },
                   [](const auto&) {},
               },
               e.node);
  }

  bool ok() const { return ok_; }

 private:
  bool Known(SizeVarId v) const { return known_.count(v.index) > 0; }

  // The sizes a value of `type` gives, dim by dim in order (tuples element by element).
  void Learn(const TypeRef& type) {
    TypeRef t = vars_.Resolve(type);
    if (const auto* tuple = std::get_if<TupleType>(&t->node)) {
      for (const TypeRef& element : tuple->elements) Learn(element);
      return;
    }
    const auto* tensor = std::get_if<TensorType>(&t->node);
    if (!tensor) return;
    core::Shape shape = vars_.Resolve(tensor->shape);
    // A size alone (`n`) is the simplest case SolvableFor takes.
    auto learn = [&](const Dim& d) {
      if (auto v = core::SolvableFor(d, [&](SizeVarId u) { return Known(u); })) known_.insert(v->index);
    };
    for (const Dim& d : shape.before) learn(vars_.Resolve(d));
    for (const Dim& d : shape.after) learn(vars_.Resolve(d));
  }

  void NeedShape(const TypeRef& type, Span span) {
    TypeRef t = vars_.Resolve(type);
    const auto* tensor = std::get_if<TensorType>(&t->node);
    if (!tensor) return;
    core::Shape shape = vars_.Resolve(tensor->shape);
    for (const Dim& d : shape.before) Need(d, span);
    for (const Dim& d : shape.after) Need(d, span);
  }

  void Need(const Dim& dim, Span span) {
    for (SizeVarId v : vars_.Resolve(dim).Vars()) {
      if (Known(v) || reported_.count(v.index)) continue;
      reported_.insert(v.index);
      ok_ = false;
      const auto& info = vars_.info(v);
      std::string name = info.name.empty() ? core::TypePrinter(vars_).Print(Dim::Var(v)) : info.name;
      Diagnostic& error = diagnostics_.Emit(DiagnosticKind::SizeNotKnown, span, name, where_);
      if (info.origin.valid()) error.notes.push_back(MakeNote(DiagnosticKind::NoteBoundHere, info.origin, name));
    }
  }

  const core::Module& module_;
  const VarStore& vars_;
  Diagnostics& diagnostics_;
  std::string where_;              // what could have given a size, for the message
  std::set<std::uint32_t> known_;  // SizeVarId indices
  std::set<std::uint32_t> reported_;
  bool ok_ = true;
};

}  // namespace

bool Checker::CheckSizesKnown(const core::Def& def) {
  if (!def.ok || !def.body.valid()) return true;
  std::string where = in_main_             ? "no `load` or annotated `let` before it gives it"
                      : def.params.empty() ? "a value has no parameters whose shapes could give it"
                                           : "no parameter's shape gives it";
  SizesKnown walk(module_, vars_, diagnostics_, where);
  for (core::PatternId p : def.params) walk.Bind(p);
  walk.Walk(def.body);
  return walk.ok();
}

}  // namespace weft::check
