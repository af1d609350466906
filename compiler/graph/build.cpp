// Build: `main`'s core IR to a dataflow graph (graph.h). The evaluator mirrors the interpreter's
// (interp/interpreter.cpp) one node at a time, with its names, at compile time: values are nodes,
// sizes are dims over `main`'s size variables. codegen/host.cpp lowers the graph, not the core IR.
// docs/architecture.md ("`main`'s meaning, twice") says why this is a second evaluator rather than
// the interpreter's with another value domain, and what keeps the two in step.
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <variant>

#include "base/overloaded.h"
#include "core/array_layout.h"
#include "core/type_printer.h"
#include "graph/graph.h"
#include "graph/layout.h"
#include "weft/numerics.h"

namespace weft::graph {
namespace {

namespace ce = core::expr;
using core::Elem;
using core::SizeVarId;
using core::TensorType;
using core::TypeRef;
using core::VarStore;

struct GValue;
using GRef = std::shared_ptr<const GValue>;

struct GShape {
  std::vector<Dim> dims;  // a built-in's shape argument
};
using GTuple = std::vector<GRef>;

// What the type variables of the code being evaluated stand for: element types, and sizes and
// shape variables as dims in `main`'s terms.
struct GSubst {
  std::map<std::uint32_t, Dtype> elems;
  std::map<std::uint32_t, Dim> sizes;
  std::map<std::uint32_t, std::vector<Dim>> shapes;
  std::map<std::uint32_t, core::LayoutRef> layouts;  // a parameter's layout variable: its argument's layout
};

struct GEnv;
struct GFunction {
  enum class Which { Builtin, Lambda, Def };
  Which which = Which::Builtin;
  std::string builtin;
  TypeRef type;
  const ce::Lambda* lambda = nullptr;
  std::shared_ptr<const GEnv> env;
  std::size_t def_index = 0;
  GSubst subst;
  std::size_t arity = 0;
  std::vector<GRef> args;
  Span span;
};

struct GValue {
  std::variant<NodeId, GShape, GTuple, GFunction> node;
};

template <typename T>
GRef Make(T&& node) {
  return std::make_shared<const GValue>(GValue{std::forward<T>(node)});
}

struct GEnv {
  std::string name;
  GRef value;
  TypeRef generic;
  std::shared_ptr<const GEnv> next;
};

struct GFrame {
  GSubst subst;
  std::shared_ptr<const GEnv> env;
  std::size_t def_index = 0;
  std::vector<core::RuntimeCheck> pending;
  const core::FreeVars* quantified = nullptr;  // the variables of the definition being inlined
};

struct Refusal {
  Diagnostic diagnostic;
};

// Dim arithmetic the checker already did on the same dims, so it cannot overflow here.
Dim Checked(core::Result<Dim> dim) {
  if (!dim) WEFT_INTERNAL_ERROR("graph: dim arithmetic failed: " + dim.error().message);
  return *dim;
}

// `loop`s in `main` are unrolled at compile time up to this many iterations, and this many nodes
// in all (a fused chain's kernel takes LLVM time in proportion).
constexpr std::int64_t kMaxUnroll = 10000;
constexpr std::size_t kMaxUnrolledNodes = 20000;
// A tensor literal in `main` is elementwise work of one `select` per element along its leading
// axis (Stack), computed per element read: up to this many elements.
constexpr std::size_t kMaxLiteral = 256;

const std::set<std::string, std::less<>>& ElementwiseBuiltins() {
  static const std::set<std::string, std::less<>> names = {
      "+",       "-",       "*",      "/",      "%",   "==",  "!=",  "<",    "<=",    ">",    ">=",      "&&",  "||",
      "maximum", "minimum", "select", "negate", "abs", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "sin", "cos"};
  return names;
}

std::size_t BuiltinArity(std::string_view name) {
  static const std::map<std::string, std::size_t, std::less<>> arity = {
      {"map", 2},     {"map2", 3},    {"reduce", 3}, {"scan", 3}, {"sum", 1},        {"max", 1},       {"min", 1},
      {"mean", 1},    {"argmax", 1},  {"select", 3}, {"@", 2},    {"matmul_f32", 2}, {"transpose", 1}, {"permute", 2},
      {"reshape", 2}, {"concat", 2},  {"expand", 1}, {"iota", 1}, {"zeros", 1},      {"ones", 1},      {"full", 2},
      {"gather", 2},  {"dequant", 3}, {"load", 1},   {"save", 2}, {"random", 2},     {"arg", 1},       {"print", 1},
      {"time", 1},    {"negate", 1},  {"abs", 1},    {"exp", 1},  {"log", 1},        {"sqrt", 1},      {"rsqrt", 1},
      {"tanh", 1},    {"sigmoid", 1}, {"sin", 1},    {"cos", 1}};
  if (auto it = arity.find(name); it != arity.end()) return it->second;
  return 2;  // the binary operators, maximum, minimum
}

class Builder {
 public:
  Builder(const core::Module& module, const VarStore& vars, Graph& out) : module_(module), vars_(vars), g_(out) {}

  void BuildMain(std::size_t index) { EvaluateDef(index); }
  GRef Result(std::size_t index) { return cache_.at(index); }

 private:
  // ---- Types and sizes ----
  Dtype ElemOf(const Elem& elem, const GSubst& subst) const {
    Elem e = vars_.Resolve(elem);
    if (!e.is_var()) return e.dtype();
    if (auto it = subst.elems.find(e.var().index); it != subst.elems.end()) return it->second;
    return core::DefaultDtype(vars_.info(e.var()).cls);
  }
  Dim DimOf(const Dim& dim, const GSubst& subst) const {
    Dim d = vars_.Resolve(dim);
    std::map<SizeVarId, Dim> map;
    for (SizeVarId v : d.Vars())
      if (auto it = subst.sizes.find(v.index); it != subst.sizes.end()) map.emplace(v, it->second);
    if (map.empty()) return d;
    auto r = core::Substitute(d, map);
    if (!r) WEFT_INTERNAL_ERROR("graph: a dim does not substitute: " + r.error().message);
    return *r;
  }
  // A shape in `main`'s terms (nullopt: its rank unknown).
  std::optional<std::vector<Dim>> DimsOf(const core::Shape& shape, const GSubst& subst) const {
    core::Shape s = vars_.Resolve(shape);
    std::vector<Dim> dims;
    for (const Dim& d : s.before) dims.push_back(DimOf(d, subst));
    if (s.spread) {
      auto it = subst.shapes.find(s.spread->index);
      if (it == subst.shapes.end()) return std::nullopt;
      dims.insert(dims.end(), it->second.begin(), it->second.end());
    }
    for (const Dim& d : s.after) dims.push_back(DimOf(d, subst));
    return dims;
  }
  // A tensor type's dtype and shape in `main`'s terms (nullopt: not a tensor, or its rank unknown).
  std::optional<std::pair<Dtype, std::vector<Dim>>> TensorOf(const TypeRef& type, const GSubst& subst) const {
    TypeRef t = vars_.Resolve(type);
    const auto* tensor = std::get_if<TensorType>(&t->node);
    if (!tensor) return std::nullopt;
    std::optional<std::vector<Dim>> dims = DimsOf(tensor->shape, subst);
    if (!dims) return std::nullopt;
    return std::make_pair(ElemOf(tensor->elem, subst), std::move(*dims));
  }
  bool Known(const Dim& dim, const GFrame& frame) const {
    if (!frame.quantified) return true;
    for (SizeVarId v : vars_.Resolve(dim).Vars()) {
      bool ours = false;
      for (SizeVarId q : frame.quantified->sizes) ours = ours || q == v;
      if (ours && !frame.subst.sizes.count(v.index)) return false;
    }
    return true;
  }
  // The layout the checker's `type` has (core/array_layout.h) in `main`'s terms: its dims, shapes
  // and layout variables substituted; nullopt where that leaves it not known.
  std::optional<core::ViewResult> CheckedLayout(const TypeRef& type, const GSubst& subst) const;
  // Gives `value`, when it is a view node made from `first` on with no layout yet, the checker's
  // layout of `type`, the type of the expression that made it.
  void TakeLayout(std::size_t first, const GRef& value, const TypeRef& type, const GSubst& subst);
  void MatchTypes(const TypeRef& pattern, const TypeRef& concrete, const GSubst& caller, GSubst& out);
  void BindValue(const TypeRef& type, const GValue& value, GFrame& frame, Span span);
  void Check(const core::RuntimeCheck& check, GFrame& frame);
  void RetryChecks(GFrame& frame);

  // ---- Expressions ----
  GRef Eval(core::ExprId id, GFrame& frame);
  GRef EvalNode(const core::Expr& e, GFrame& frame);
  // EvalNode's longer cases: a definition named, an application, `if`, a tensor literal, indexing, `loop`.
  GRef EvalGlobal(const ce::Global& global, const core::Expr& e, GFrame& frame);
  GRef EvalApply(const ce::Apply& apply, const core::Expr& e, GFrame& frame);
  GRef EvalIf(const ce::If& branch, const core::Expr& e, GFrame& frame);
  GRef EvalTensorLit(const ce::TensorLit& lit, const core::Expr& e, GFrame& frame);
  GRef EvalIndex(const ce::Index& index, const core::Expr& e, GFrame& frame);
  GRef EvalLoop(const ce::Loop& loop, const core::Expr& e, GFrame& frame);
  void Bind(core::PatternId pattern, const GRef& value, GFrame& frame);
  GRef Call(const GRef& callee, const GRef& arg, Span span);
  GRef CallBuiltin(const GFunction& fn, Span span);
  GRef CallHostBuiltin(const GFunction& fn, Span span);
  Dtype ResultDtype(const GFunction& fn) const;
  static std::vector<Dim> ShapeArg(const GFunction& fn, std::size_t i) {
    return std::get<GShape>(fn.args.at(i)->node).dims;
  }
  static std::vector<Dim> ProductShape(const std::vector<Dim>& a, const std::vector<Dim>& b);
  GRef RunKernel(const GFunction& fn, Span span);
  GRef EvaluateDef(std::size_t index);
  std::optional<std::size_t> FindDef(std::string_view name, std::size_t before) const;
  std::size_t Arity(const core::Def& def) const;

  // ---- Nodes ----
  [[noreturn]] void Refuse(DiagnosticKind kind, Span span, const std::string& what) {
    throw Refusal{MakeDiagnostic(kind, span, what)};
  }
  // What `main` does that the array tier does not compile (E0800).
  [[noreturn]] void RefuseArray(Span span, const std::string& what) {
    Refuse(DiagnosticKind::HostArrayTier, span, what);
  }
  NodeId Add(Node node) {
    node.in_body = body_depth_ > 0;
    bool effect = node.kind == Kind::Load || node.kind == Kind::Random || node.kind == Kind::Save ||
                  node.kind == Kind::Print || node.kind == Kind::TimeBegin || node.kind == Kind::TimeEnd ||
                  node.kind == Kind::Kernel;
    NodeId id = g_.Add(std::move(node));
    if (effect) g_.effects.push_back(id);
    return id;
  }
  NodeId NodeOf(const GRef& value, Span span) {
    if (const auto* id = std::get_if<NodeId>(&value->node)) return *id;
    Refuse(DiagnosticKind::HostUnsupported, span, "a value that is not a tensor where a tensor is needed");
  }
  const Node& Get(NodeId id) const { return g_.Get(id); }
  NodeId Constant(Dtype dtype, std::uint64_t bits, Span span) {
    Node n;
    n.kind = Kind::Constant;
    n.dtype = dtype;
    n.bits = bits;
    n.span = span;
    return Add(std::move(n));
  }
  std::vector<Dim> Broadcast(const std::vector<NodeId>& operands) const;
  std::optional<std::int64_t> ConstantInt(NodeId id) const;
  std::optional<bool> ConstantBool(NodeId id) const;
  NodeId Stack(Dtype dtype, const std::vector<Dim>& shape, const std::vector<NodeId>& elements, Span span);
  static std::uint64_t IntLitBits(const ce::IntLit& lit, Dtype d);
  static std::uint64_t FloatLitBits(const ce::FloatLit& lit, Dtype d);
  GRef NegativeLiteral(const core::Expr& e, const core::Expr& callee, const ce::Apply& apply, GFrame& frame);
  void Leaves(const GRef& value, std::vector<NodeId>& out, std::string& format, Span span);

  const core::Module& module_;
  const VarStore& vars_;
  Graph& g_;
  std::map<std::size_t, GRef> cache_;
  int body_depth_ = 0;
};

// ---- Types and sizes (the interpreter's MatchTypes and MatchValue, at compile time) ----

std::optional<core::ViewResult> Builder::CheckedLayout(const TypeRef& type, const GSubst& subst) const {
  TypeRef t = vars_.Resolve(type);
  const auto* tensor = std::get_if<TensorType>(&t->node);
  if (!tensor) return std::nullopt;
  core::LayoutMap map;
  map.dim = [&](const Dim& d) { return DimOf(d, subst); };
  map.shape = [&](const core::Shape& shape) {
    std::optional<std::vector<Dim>> dims = DimsOf(shape, subst);
    if (!dims) return vars_.Resolve(shape);
    core::Shape out;
    out.before = std::move(*dims);
    return out;
  };
  map.var = [&](core::LayoutVarId v) -> core::LayoutRef {
    auto it = subst.layouts.find(v.index);
    return it == subst.layouts.end() ? nullptr : it->second;
  };
  core::LayoutRef layout = core::MapLayout(core::Detached(vars_.Resolve(tensor->layout), tensor->shape), map);
  if (const auto* strided = std::get_if<core::StridedView>(&layout->node)) return core::ViewResult(*strided);
  if (const auto* not_strided = std::get_if<core::Layout::NotStrided>(&layout->node))
    return core::ViewResult(not_strided->why);
  return std::nullopt;
}

void Builder::TakeLayout(std::size_t first, const GRef& value, const TypeRef& type, const GSubst& subst) {
  const auto* id = std::get_if<NodeId>(&value->node);
  if (!id || id->index < first || Get(*id).kind != Kind::View || Get(*id).layout) return;
  if (Get(*id).fn == "broadcast") return;  // the graph's own view (the expression's value owns its data)
  std::optional<core::ViewResult> layout = CheckedLayout(type, subst);
  // Not strided for the checker, which types a definition once for all its calls: an element
  // chosen by a parameter (`x[i]`) is chosen at run time there, but the graph, which inlines each
  // call, may know it (`pick x 2`); the view's steps then say.
  if (!layout || !layout->ok()) return;
#ifndef NDEBUG
  // The law that makes the checker's layouts the graph's: evaluated step by step from the data up,
  // a view has the layout the checker gave it. Compared at two values of the sizes, every size the
  // same: the checker knows sizes equal that the graph has as two variables and checks equal at
  // run time (`s == s1`, a function value's result generalized). For the same reason the steps
  // may find no strided layout where the checker has one.
  core::ViewResult steps = LayoutOf(g_, *id);
  auto same_at = [&](std::int64_t size) {
    auto value = [&](const Dim& d) { return core::Evaluate(d, [&](SizeVarId) { return size; }); };
    auto equal = [&](const Dim& a, const Dim& b) {
      auto x = value(a), y = value(b);
      return x.ok() && y.ok() && *x == *y;
    };
    const core::StridedView &a = *steps, &b = **layout;
    if (!equal(a.offset, b.offset) || a.rank() != b.rank()) return false;
    for (std::size_t k = 0; k < a.rank(); ++k) {
      const auto &ma = a.axes[k].modes, &mb = b.axes[k].modes;
      if (ma.size() != mb.size()) return false;
      for (std::size_t m = 0; m < ma.size(); ++m)
        if (!equal(ma[m].extent, mb[m].extent) || !equal(ma[m].stride, mb[m].stride)) return false;
    }
    return true;
  };
  if (steps.ok() && !(same_at(4096) && same_at(96)))
    WEFT_INTERNAL_ERROR("graph: the checker's layout of the view `" + Get(*id).fn + "` is " + core::ToString(**layout) +
                        ", its steps give " + core::ToString(*steps));
#endif
  g_.Get(*id).layout = std::move(*layout);
}

void Builder::MatchTypes(const TypeRef& pattern, const TypeRef& concrete, const GSubst& caller, GSubst& out) {
  TypeRef p = vars_.Resolve(pattern), c = vars_.Resolve(concrete);
  if (const auto* pt = std::get_if<TensorType>(&p->node)) {
    const auto* ct = std::get_if<TensorType>(&c->node);
    if (!ct) return;
    Elem pe = vars_.Resolve(pt->elem);
    if (pe.is_var() && !out.elems.count(pe.var().index)) {
      Elem cel = vars_.Resolve(ct->elem);
      if (!cel.is_var() || caller.elems.count(cel.var().index)) out.elems[pe.var().index] = ElemOf(cel, caller);
    }
    core::Shape ps = vars_.Resolve(pt->shape), cs = vars_.Resolve(ct->shape);
    if (ps.Known() && cs.Known() && ps.before.size() == cs.before.size()) {
      for (std::size_t i = 0; i < ps.before.size(); ++i) {
        std::optional<SizeVarId> v = ps.before[i].AsVar();
        if (!v || out.sizes.count(v->index)) continue;
        out.sizes.emplace(v->index, DimOf(cs.before[i], caller));
      }
    }
  } else if (const auto* pf = std::get_if<core::FunctionType>(&p->node)) {
    if (const auto* cf = std::get_if<core::FunctionType>(&c->node)) {
      MatchTypes(pf->param, cf->param, caller, out);
      MatchTypes(pf->result, cf->result, caller, out);
    }
  } else if (const auto* ptu = std::get_if<core::TupleType>(&p->node)) {
    if (const auto* ctu = std::get_if<core::TupleType>(&c->node)) {
      for (std::size_t i = 0; i < ptu->elements.size() && i < ctu->elements.size(); ++i)
        MatchTypes(ptu->elements[i], ctu->elements[i], caller, out);
    }
  }
}

void Builder::BindValue(const TypeRef& type, const GValue& value, GFrame& frame, Span span) {
  TypeRef t = vars_.Resolve(type);
  if (const auto* tensor_type = std::get_if<TensorType>(&t->node)) {
    const auto* id = std::get_if<NodeId>(&value.node);
    if (!id) return;
    const Node& node = Get(*id);
    Elem e = vars_.Resolve(tensor_type->elem);
    if (e.is_var()) frame.subst.elems.emplace(e.var().index, node.dtype);
    // A parameter's layout variable: the argument's layout (the checker's, or row for what owns
    // its data).
    if (const auto* var = tensor_type->layout ? std::get_if<core::Layout::Var>(&tensor_type->layout->node) : nullptr;
        var && !frame.subst.layouts.count(var->var.index)) {
      core::ViewResult layout = LayoutOf(g_, *id);
      frame.subst.layouts.emplace(var->var.index, core::KnownLayout(layout));
    }
    core::Shape s = vars_.Resolve(tensor_type->shape);
    const std::vector<Dim>& dims = node.shape;
    std::size_t fixed = s.FixedRank();
    // A scalar function's parameter bound to a whole tensor (`map`): no sizes to learn.
    if (s.Known() ? dims.size() != fixed : dims.size() < fixed) return;
    auto bind = [&](const Dim& d, std::size_t axis) {
      Dim r = vars_.Resolve(d);
      if (std::optional<SizeVarId> v = r.AsVar(); v && frame.quantified && !frame.subst.sizes.count(v->index)) {
        bool ours = false;
        for (SizeVarId q : frame.quantified->sizes) ours = ours || q == *v;
        if (ours) {
          frame.subst.sizes.emplace(v->index, dims[axis]);
          return;
        }
      }
      if (!Known(r, frame)) return;
      Dim expected = DimOf(r, frame.subst);
      if (expected == dims[axis]) return;
      g_.checks.push_back(graph::Check{core::DimFact{dims[axis], core::RelOp::kEq, expected, span},
                                       "the value bound here has its type (axis " + std::to_string(axis) + ")",
                                       g_.nodes.size()});
    };
    for (std::size_t i = 0; i < s.before.size(); ++i) bind(s.before[i], i);
    std::size_t tail = dims.size() - s.after.size();
    for (std::size_t i = 0; i < s.after.size(); ++i) bind(s.after[i], tail + i);
    if (s.spread && !frame.subst.shapes.count(s.spread->index)) {
      frame.subst.shapes[s.spread->index] =
          std::vector<Dim>(dims.begin() + static_cast<std::ptrdiff_t>(s.before.size()),
                           dims.begin() + static_cast<std::ptrdiff_t>(tail));
    }
    return;
  }
  if (const auto* tuple_type = std::get_if<core::TupleType>(&t->node)) {
    const auto* tuple = std::get_if<GTuple>(&value.node);
    if (!tuple || tuple->size() != tuple_type->elements.size()) return;
    for (std::size_t i = 0; i < tuple->size(); ++i) BindValue(tuple_type->elements[i], *(*tuple)[i], frame, span);
  }
}

void Builder::Check(const core::RuntimeCheck& check, GFrame& frame) {
  if (!Known(check.fact.lhs, frame) || !Known(check.fact.rhs, frame)) {
    frame.pending.push_back(check);
    return;
  }
  core::DimFact fact{DimOf(check.fact.lhs, frame.subst), check.fact.relation, DimOf(check.fact.rhs, frame.subst),
                     check.fact.span};
  if (fact.relation == core::RelOp::kEq && fact.lhs == fact.rhs) return;  // holds for every size
  g_.checks.push_back(graph::Check{std::move(fact), check.what, g_.nodes.size()});
}

void Builder::RetryChecks(GFrame& frame) {
  if (frame.pending.empty()) return;
  std::vector<core::RuntimeCheck> pending = std::exchange(frame.pending, {});
  for (const core::RuntimeCheck& c : pending) Check(c, frame);
}

// ---- Expressions ----

GRef Builder::Eval(core::ExprId id, GFrame& frame) {
  const core::Expr& e = module_.Get(id);
  if (!std::holds_alternative<ce::Apply>(e.node)) {
    for (const core::RuntimeCheck& c : e.checks) Check(c, frame);
  }
  return EvalNode(e, frame);
}

void Builder::Bind(core::PatternId id, const GRef& value, GFrame& frame) {
  const core::Pattern& p = module_.Get(id);
  BindValue(p.type, *value, frame, p.span);
  RetryChecks(frame);
  if (const auto* name = std::get_if<core::pattern::Name>(&p.node)) {
    bool generic = !(p.quantified.elems.empty() && p.quantified.sizes.empty() && p.quantified.shapes.empty());
    frame.env = std::make_shared<const GEnv>(GEnv{name->name, value, generic ? p.type : nullptr, frame.env});
  } else if (const auto* tuple = std::get_if<core::pattern::Tuple>(&p.node)) {
    const auto* values = std::get_if<GTuple>(&value->node);
    if (!values || values->size() != tuple->elements.size())
      WEFT_INTERNAL_ERROR("graph: a tuple pattern bound to a value that is not such a tuple");
    for (std::size_t i = 0; i < values->size(); ++i) Bind(tuple->elements[i], (*values)[i], frame);
  }
}

std::uint64_t Builder::IntLitBits(const ce::IntLit& lit, Dtype d) {
  std::uint64_t bits = runtime::IsFloatDtype(d) ? runtime::EncodeFloatFromU64(d, lit.value) : lit.value;
  if (!runtime::IsFloatDtype(d) && weft::Bits(d) < 64) bits &= (std::uint64_t{1} << weft::Bits(d)) - 1;
  return bits;
}

std::uint64_t Builder::FloatLitBits(const ce::FloatLit& lit, Dtype d) {
  std::optional<std::uint64_t> bits = runtime::EncodeFloatLiteral(d, lit.text);
  return bits ? *bits : runtime::EncodeFloat(d, lit.value);
}

GRef Builder::NegativeLiteral(const core::Expr& e, const core::Expr& callee, const ce::Apply& apply, GFrame& frame) {
  const auto* builtin = std::get_if<ce::Builtin>(&callee.node);
  if (!builtin || builtin->name != "negate" || apply.args.size() != 1) return nullptr;
  const core::Expr& operand = module_.Get(apply.args[0]);
  if (!std::holds_alternative<ce::IntLit>(operand.node) && !std::holds_alternative<ce::FloatLit>(operand.node))
    return nullptr;
  const TypeRef resolved = vars_.Resolve(e.type);
  const auto* type = std::get_if<TensorType>(&resolved->node);
  if (!type) return nullptr;
  Dtype d = ElemOf(type->elem, frame.subst);
  if (d == Dtype::Bool) return nullptr;
  const int width = weft::Bits(d);
  const std::uint64_t mask = width == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << width) - 1;
  std::uint64_t v = std::holds_alternative<ce::IntLit>(operand.node)
                        ? IntLitBits(std::get<ce::IntLit>(operand.node), d)
                        : FloatLitBits(std::get<ce::FloatLit>(operand.node), d);
  v = runtime::IsFloatDtype(d) ? v ^ (std::uint64_t{1} << (width - 1)) : (0 - v) & mask;
  return Make(Constant(d, v, e.span));
}

GRef Builder::EvalNode(const core::Expr& e, GFrame& frame) {
  auto dtype_of = [&]() { return ElemOf(std::get<TensorType>(vars_.Resolve(e.type)->node).elem, frame.subst); };
  return std::visit(
      Overloaded{
          [&](const ce::IntLit& lit) -> GRef {
            Dtype d = dtype_of();
            return Make(Constant(d, IntLitBits(lit, d), e.span));
          },
          [&](const ce::FloatLit& lit) -> GRef {
            Dtype d = dtype_of();
            return Make(Constant(d, FloatLitBits(lit, d), e.span));
          },
          [&](const ce::BoolLit& lit) -> GRef { return Make(Constant(Dtype::Bool, lit.value ? 1 : 0, e.span)); },
          [&](const ce::StringLit& lit) -> GRef {
            Node n;
            n.kind = Kind::String;
            n.text = lit.value;
            n.span = e.span;
            return Make(Add(std::move(n)));
          },
          [&](const ce::Local& local) -> GRef {
            for (const GEnv* env = frame.env.get(); env; env = env->next.get()) {
              if (env->name != local.name) continue;
              if (!env->generic) return env->value;
              const auto* fn = std::get_if<GFunction>(&env->value->node);
              if (!fn) return env->value;
              GFunction copy = *fn;
              MatchTypes(env->generic, e.type, frame.subst, copy.subst);
              return Make(std::move(copy));
            }
            WEFT_INTERNAL_ERROR("graph: `" + local.name + "` is not bound");
          },
          [&](const ce::Global& global) -> GRef { return EvalGlobal(global, e, frame); },
          [&](const ce::Builtin& builtin) -> GRef {
            GFunction fn;
            fn.which = GFunction::Which::Builtin;
            fn.builtin = builtin.name;
            fn.arity = BuiltinArity(builtin.name);
            fn.type = e.type;
            fn.subst = frame.subst;
            fn.span = e.span;
            return Make(std::move(fn));
          },
          [&](const ce::SizeValue& size) -> GRef {
            Node n;
            n.kind = Kind::Size;
            n.dtype = Dtype::I64;
            n.size = DimOf(size.dim, frame.subst);
            n.span = e.span;
            return Make(Add(std::move(n)));
          },
          [&](const ce::ShapeArg& shape) -> GRef {
            GShape s;
            for (const Dim& d : shape.dims) s.dims.push_back(DimOf(d, frame.subst));
            return Make(std::move(s));
          },
          [&](const ce::Apply& apply) -> GRef { return EvalApply(apply, e, frame); },
          [&](const ce::Lambda& lambda) -> GRef {
            GFunction fn;
            fn.which = GFunction::Which::Lambda;
            fn.lambda = &lambda;
            fn.env = frame.env;
            fn.subst = frame.subst;
            fn.def_index = frame.def_index;
            fn.arity = lambda.params.size();
            fn.span = e.span;
            return Make(std::move(fn));
          },
          [&](const ce::Let& let) -> GRef {
            GRef value = Eval(let.value, frame);
            std::shared_ptr<const GEnv> saved = frame.env;
            Bind(let.pattern, value, frame);
            GRef body = Eval(let.body, frame);
            frame.env = saved;
            return body;
          },
          [&](const ce::If& branch) -> GRef { return EvalIf(branch, e, frame); },
          [&](const ce::Tuple& tuple) -> GRef {
            GTuple values;
            for (core::ExprId x : tuple.elements) values.push_back(Eval(x, frame));
            return Make(std::move(values));
          },
          [&](const ce::TensorLit& lit) -> GRef { return EvalTensorLit(lit, e, frame); },
          [&](const ce::Index& index) -> GRef { return EvalIndex(index, e, frame); },
          [&](const ce::Loop& loop) -> GRef { return EvalLoop(loop, e, frame); },
          [&](const ce::Cast& cast) -> GRef {
            Node n;
            n.kind = Kind::Cast;
            n.dtype = cast.dtype;
            n.args = {NodeOf(Eval(cast.operand, frame), e.span)};
            n.shape = Get(n.args[0]).shape;
            n.span = e.span;
            return Make(Add(std::move(n)));
          },
      },
      e.node);
}

GRef Builder::EvalGlobal(const ce::Global& global, const core::Expr& e, GFrame& frame) {
  std::optional<std::size_t> index = FindDef(global.name, frame.def_index);
  if (!index) WEFT_INTERNAL_ERROR("graph: no definition `" + global.name + "`");
  const core::Def& def = module_.defs()[*index];
  if (def.params.empty()) return EvaluateDef(*index);
  if (!def.body) WEFT_INTERNAL_ERROR("graph: `" + global.name + "` has no body");
  GFunction fn;
  fn.which = GFunction::Which::Def;
  fn.def_index = *index;
  fn.arity = Arity(def);
  fn.span = e.span;
  MatchTypes(def.scheme.type, e.type, frame.subst, fn.subst);
  if (fn.arity == 0) return RunKernel(fn, e.span);
  return Make(std::move(fn));
}

GRef Builder::EvalApply(const ce::Apply& apply, const core::Expr& e, GFrame& frame) {
  const core::Expr& callee = module_.Get(apply.callee);
  bool builtin = std::holds_alternative<ce::Builtin>(callee.node);
  if (GRef literal = NegativeLiteral(e, callee, apply, frame)) return literal;
  GRef f = builtin ? nullptr : EvalNode(callee, frame);
  std::vector<GRef> args;
  for (core::ExprId a : apply.args) args.push_back(Eval(a, frame));
  if (builtin) f = EvalNode(callee, frame);
  if (!callee.checks.empty() || !e.checks.empty()) {
    for (std::size_t i = 0; i < args.size(); ++i)
      BindValue(module_.Get(apply.args[i]).type, *args[i], frame, module_.Get(apply.args[i]).span);
    for (const std::vector<core::RuntimeCheck>* checks : {&callee.checks, &e.checks})
      for (const core::RuntimeCheck& c : *checks) Check(c, frame);
  }
  GRef fn = f;
  std::size_t first = g_.nodes.size();
  for (const GRef& arg : args) fn = Call(fn, arg, e.span);
  TakeLayout(first, fn, e.type, frame.subst);
  return fn;
}

GRef Builder::EvalIf(const ce::If& branch, const core::Expr& e, GFrame& frame) {
  // A condition known at compile time picks its branch; otherwise both branches are
  // computed and `select` picks elementwise, which means the same when neither branch
  // has an effect or can fail (only elementwise work, which is total).
  NodeId condition = NodeOf(Eval(branch.condition, frame), e.span);
  if (std::optional<bool> known = ConstantBool(condition)) {
    return Eval(*known ? branch.then_branch : branch.else_branch, frame);
  }
  std::size_t first = g_.nodes.size();
  NodeId a = NodeOf(Eval(branch.then_branch, frame), e.span);
  NodeId b = NodeOf(Eval(branch.else_branch, frame), e.span);
  for (std::size_t i = first; i < g_.nodes.size(); ++i) {
    Kind k = g_.nodes[i].kind;
    if (k != Kind::Map && k != Kind::Cast && k != Kind::Constant && k != Kind::Size && k != Kind::Fill)
      RefuseArray(e.span, "`if` whose branches do more than elementwise arithmetic");
  }
  Node n;
  n.kind = Kind::Map;
  n.fn = "select";
  n.dtype = Get(a).dtype;
  n.args = {condition, a, b};
  n.shape = Broadcast(n.args);
  n.span = e.span;
  return Make(Add(std::move(n)));
}

GRef Builder::EvalTensorLit(const ce::TensorLit& lit, const core::Expr& e, GFrame& frame) {
  std::vector<NodeId> elements;
  for (core::ExprId x : lit.elements) elements.push_back(NodeOf(Eval(x, frame), e.span));
  auto type = TensorOf(e.type, frame.subst);
  if (!type) Refuse(DiagnosticKind::HostUnsupported, e.span, "a tensor literal whose shape is not known");
  if (elements.size() > kMaxLiteral)
    RefuseArray(e.span, "a tensor literal of " + std::to_string(elements.size()) +
                            " elements along an axis (the GPU takes at most " + std::to_string(kMaxLiteral) + ")");
  return Make(Stack(type->first, type->second, elements, e.span));
}

GRef Builder::EvalIndex(const ce::Index& index, const core::Expr& e, GFrame& frame) {
  Node n;
  n.kind = Kind::View;
  n.fn = "index";
  n.span = e.span;
  n.args.push_back(NodeOf(Eval(index.base, frame), e.span));
  const Node& base = Get(n.args[0]);
  n.dtype = base.dtype;
  std::size_t axis = 0;
  for (const core::expr::IndexItem& item : index.items) {
    IndexItem out;
    if (item.kind == core::expr::IndexItem::Kind::At) {
      out.what = IndexItem::What::At;
      out.at = n.args.size();
      n.args.push_back(NodeOf(Eval(item.at, frame), e.span));
    } else if (item.kind == core::expr::IndexItem::Kind::Slice) {
      out.what = IndexItem::What::Slice;
      out.lo = DimOf(item.lo, frame.subst);
      out.hi = item.hi ? DimOf(*item.hi, frame.subst) : Get(n.args[0]).shape.at(axis);
      n.shape.push_back(Checked(core::Sub(out.hi, out.lo)));
    } else {
      n.shape.push_back(Get(n.args[0]).shape.at(axis));
    }
    n.index.push_back(std::move(out));
    ++axis;
  }
  const std::vector<Dim>& base_shape = Get(n.args[0]).shape;
  for (std::size_t i = axis; i < base_shape.size(); ++i) n.shape.push_back(base_shape[i]);
  NodeId id = Add(std::move(n));
  GRef value = Make(id);
  TakeLayout(id.index, value, e.type, frame.subst);
  return value;
}

GRef Builder::EvalLoop(const ce::Loop& loop, const core::Expr& e, GFrame& frame) {
  // Unrolled: each iteration's body is evaluated with the counter a constant, so the
  // graph is the straight-line program and fuses across iterations.
  GRef state = Eval(loop.init, frame);
  NodeId bound = NodeOf(Eval(loop.bound, frame), e.span);
  std::optional<std::int64_t> count = ConstantInt(bound);
  if (!count) RefuseArray(e.span, "`loop` whose trip count is not known at compile time (`main`'s loops are unrolled)");
  if (*count > kMaxUnroll)
    RefuseArray(e.span, "`loop` of " + std::to_string(*count) + " iterations (`main`'s loops are unrolled, " +
                            "up to " + std::to_string(kMaxUnroll) + " iterations)");
  std::shared_ptr<const GEnv> saved = frame.env;
  std::size_t first = g_.nodes.size();
  for (std::int64_t i = 0; i < *count; ++i) {
    if (g_.nodes.size() - first > kMaxUnrolledNodes)
      RefuseArray(e.span, "`loop` of " + std::to_string(*count) + " iterations, which unrolls to more than " +
                              std::to_string(kMaxUnrolledNodes) + " operations (by iteration " + std::to_string(i) +
                              ")");
    frame.env = saved;
    Bind(loop.state, state, frame);
    NodeId counter = Constant(Dtype::I64, static_cast<std::uint64_t>(i), e.span);
    frame.env = std::make_shared<const GEnv>(GEnv{loop.counter, Make(counter), nullptr, frame.env});
    state = Eval(loop.body, frame);
  }
  frame.env = saved;
  return state;
}

GRef Builder::Call(const GRef& callee, const GRef& arg, Span span) {
  const auto* fn = std::get_if<GFunction>(&callee->node);
  if (!fn) WEFT_INTERNAL_ERROR("graph: applying a value that is not a function");
  GFunction next = *fn;
  next.args.push_back(arg);
  if (next.args.size() < next.arity) return Make(std::move(next));
  switch (next.which) {
    case GFunction::Which::Builtin:
      return CallBuiltin(next, span);
    case GFunction::Which::Lambda: {
      GFrame frame{next.subst, next.env, next.def_index, {}, nullptr};
      for (std::size_t i = 0; i < next.arity; ++i) Bind(next.lambda->params[i], next.args[i], frame);
      return Eval(next.lambda->body, frame);
    }
    case GFunction::Which::Def: {
      const core::Def& def = module_.defs()[next.def_index];
      if (def.kernel) return RunKernel(next, span);
      GFrame frame{next.subst, nullptr, next.def_index, {}, &def.scheme.quantified};
      for (std::size_t i = 0; i < next.arity; ++i) Bind(def.params[i], next.args[i], frame);
      return Eval(def.body, frame);
    }
  }
  WEFT_INTERNAL_ERROR("graph: unknown function kind");
}

std::optional<std::size_t> Builder::FindDef(std::string_view name, std::size_t before) const {
  const std::vector<core::Def>& defs = module_.defs();
  for (std::size_t i = std::min(before, defs.size()); i-- > 0;) {
    if (defs[i].name == name && defs[i].ok) return i;
  }
  return std::nullopt;
}

std::size_t Builder::Arity(const core::Def& def) const {
  if (!def.kernel) return def.params.size();
  std::size_t n = 0;
  for (bool out : def.kernel->out) n += out ? 0 : 1;
  return n;
}

GRef Builder::EvaluateDef(std::size_t index) {
  if (auto it = cache_.find(index); it != cache_.end()) return it->second;
  const core::Def& def = module_.defs()[index];
  if (!def.body) WEFT_INTERNAL_ERROR("graph: `" + def.name + "` has no body");
  GFrame frame{{}, nullptr, index, {}, nullptr};
  GRef value = Eval(def.body, frame);
  cache_.emplace(index, value);
  return value;
}

// The value of a rank-0 integer node known at compile time (a literal, a constant size, integer
// arithmetic and casts on them), with the interpreter's wrapping and floor division; else nullopt.
std::optional<std::int64_t> Builder::ConstantInt(NodeId id) const {
  const Node& n = Get(id);
  if (!n.shape.empty() || !runtime::IsIntegerDtype(n.dtype)) return std::nullopt;
  auto wrap = [&](std::uint64_t v) -> std::int64_t {
    return runtime::IsSignedDtype(n.dtype) ? runtime::WrapSigned(v, n.dtype)
                                           : static_cast<std::int64_t>(runtime::WrapUnsigned(v, n.dtype));
  };
  switch (n.kind) {
    case Kind::Constant:
      return wrap(n.bits);
    case Kind::Size:
      return n.size.AsConstant();
    case Kind::Cast: {
      if (!runtime::IsIntegerDtype(Get(n.args[0]).dtype)) return std::nullopt;
      std::optional<std::int64_t> x = ConstantInt(n.args[0]);
      if (!x) return std::nullopt;
      return wrap(static_cast<std::uint64_t>(*x));
    }
    case Kind::Map: {
      std::vector<std::int64_t> x;
      for (NodeId a : n.args) {
        std::optional<std::int64_t> v = ConstantInt(a);
        if (!v || Get(a).dtype != n.dtype) return std::nullopt;
        x.push_back(*v);
      }
      auto u = [](std::int64_t v) { return static_cast<std::uint64_t>(v); };
      if (x.size() == 1 && n.fn == "negate") return wrap(0 - u(x[0]));
      if (x.size() != 2) return std::nullopt;
      if (n.fn == "+") return wrap(u(x[0]) + u(x[1]));
      if (n.fn == "-") return wrap(u(x[0]) - u(x[1]));
      if (n.fn == "*") return wrap(u(x[0]) * u(x[1]));
      if (n.fn == "maximum" || n.fn == "minimum") {
        bool first = runtime::IsSignedDtype(n.dtype) ? x[0] > x[1] : u(x[0]) > u(x[1]);
        return first == (n.fn == "maximum") ? x[0] : x[1];
      }
      if ((n.fn == "/" || n.fn == "%") && runtime::IsSignedDtype(n.dtype) && x[1] > 0) {
        // Floor division by a positive divisor (the only kind a trip count needs).
        std::int64_t q = x[0] / x[1], r = x[0] % x[1];
        if (r < 0) {
          q -= 1;
          r += x[1];
        }
        return n.fn == "/" ? q : r;
      }
      return std::nullopt;
    }
    default:
      return std::nullopt;
  }
}

// A tensor literal `[e0, .., ek-1]` of `shape` = [k, ..s]: elementwise work that picks element j
// at leading index j, `select (i == j) ej (..)` with `i` an iota of shape [k, 1, ..] (an iota's
// value is its leading coordinate), so that it is computed where it is read, like any elementwise
// value. One element is `full` of it; an empty literal is `zeros`.
NodeId Builder::Stack(Dtype dtype, const std::vector<Dim>& shape, const std::vector<NodeId>& elements, Span span) {
  Node fill;
  fill.kind = Kind::Fill;
  fill.dtype = dtype;
  fill.shape = shape;
  fill.span = span;
  if (elements.size() <= 1) {
    fill.fn = elements.empty() ? "zeros" : "full";
    fill.args = elements;
    return Add(std::move(fill));
  }
  Node iota;
  iota.kind = Kind::Iota;
  iota.fn = "iota";
  iota.dtype = Dtype::I64;
  iota.shape.assign(shape.size(), Dim::Constant(1));
  iota.shape.front() = shape.front();
  iota.span = span;
  NodeId index = Add(std::move(iota));
  NodeId value = elements.back();
  for (std::size_t j = elements.size() - 1; j-- > 0;) {
    Node is;
    is.kind = Kind::Map;
    is.fn = "==";
    is.dtype = Dtype::Bool;
    is.args = {index, Constant(Dtype::I64, j, span)};
    is.shape = Get(index).shape;
    is.span = span;
    Node select;
    select.kind = Kind::Map;
    select.fn = "select";
    select.dtype = dtype;
    select.args = {Add(std::move(is)), elements[j], value};
    select.shape = Broadcast(select.args);
    select.span = span;
    value = Add(std::move(select));
  }
  return value;
}

// The value of a rank-0 bool node known at compile time: a literal, a comparison of ConstantInts
// (an unrolled loop's counter: `if i == 0 then ..`), `&&` and `||` of such; else nullopt.
std::optional<bool> Builder::ConstantBool(NodeId id) const {
  const Node& n = Get(id);
  if (!n.shape.empty() || n.dtype != Dtype::Bool) return std::nullopt;
  if (n.kind == Kind::Constant) return (n.bits & 1) != 0;
  if (n.kind != Kind::Map || n.args.size() != 2) return std::nullopt;
  if (n.fn == "&&" || n.fn == "||") {
    std::optional<bool> a = ConstantBool(n.args[0]), b = ConstantBool(n.args[1]);
    if (!a || !b) return std::nullopt;
    return n.fn == "&&" ? (*a && *b) : (*a || *b);
  }
  Dtype d = Get(n.args[0]).dtype;
  std::optional<std::int64_t> a = ConstantInt(n.args[0]), b = ConstantInt(n.args[1]);
  if (!a || !b || Get(n.args[1]).dtype != d) return std::nullopt;
  bool is_signed = runtime::IsSignedDtype(d);
  auto u = [](std::int64_t v) { return static_cast<std::uint64_t>(v); };
  bool less = is_signed ? *a < *b : u(*a) < u(*b);
  bool greater = is_signed ? *a > *b : u(*a) > u(*b);
  if (n.fn == "==") return *a == *b;
  if (n.fn == "!=") return *a != *b;
  if (n.fn == "<") return less;
  if (n.fn == "<=") return !greater;
  if (n.fn == ">") return greater;
  if (n.fn == ">=") return !less;
  return std::nullopt;
}

// NumPy's broadcasting over the operands' shapes: aligned on the right, a literal 1 stretches. The
// checker proved the rest equal, or left a run-time check.
std::vector<Dim> Builder::Broadcast(const std::vector<NodeId>& operands) const {
  std::vector<Dim> out;
  for (NodeId id : operands) {
    const std::vector<Dim>& s = Get(id).shape;
    if (s.size() > out.size()) out.insert(out.begin(), s.size() - out.size(), Dim::Constant(1));
    for (std::size_t i = 0; i < s.size(); ++i) {
      Dim& o = out[out.size() - s.size() + i];
      if (o == Dim::Constant(1)) o = s[i];
    }
  }
  return out;
}

// The leaves of a printed value and how they print: `%` stands for each leaf.
void Builder::Leaves(const GRef& value, std::vector<NodeId>& out, std::string& format, Span span) {
  std::visit(Overloaded{
                 [&](const NodeId& id) {
                   out.push_back(id);
                   format += "%";
                 },
                 [&](const GTuple& tuple) {
                   format += "(";
                   for (std::size_t i = 0; i < tuple.size(); ++i) {
                     if (i) format += ", ";
                     Leaves(tuple[i], out, format, span);
                   }
                   format += ")";
                 },
                 [&](const GShape&) { format += "<shape>"; },
                 [&](const GFunction&) { format += "<function>"; },
             },
             value->node);
}

// The dtype of a built-in's result (a tensor).
Dtype Builder::ResultDtype(const GFunction& fn) const {
  TypeRef result_type = core::ResultAfter(vars_, fn.type, fn.arity);
  const auto* t = std::get_if<TensorType>(&result_type->node);
  if (!t) WEFT_INTERNAL_ERROR("graph: `" + fn.builtin + "` does not return a tensor");
  return ElemOf(t->elem, fn.subst);
}

// The shape of `a @ b`: the batch axes broadcast, then m and n.
std::vector<Dim> Builder::ProductShape(const std::vector<Dim>& a, const std::vector<Dim>& b) {
  if (a.size() < 2 || b.size() < 2) WEFT_INTERNAL_ERROR("graph: a product of operands of rank < 2");
  std::vector<Dim> x(a.begin(), a.end() - 2), y(b.begin(), b.end() - 2);
  if (x.size() < y.size()) std::swap(x, y);
  std::vector<Dim> shape = x;
  for (std::size_t i = 0; i < y.size(); ++i) {
    Dim& o = shape[x.size() - y.size() + i];
    if (o == Dim::Constant(1)) o = y[i];
  }
  shape.push_back(a[a.size() - 2]);
  shape.push_back(b.back());
  return shape;
}

// The built-ins of the array tier, each a node (or, for `map`, `reduce` and `scan`, the nodes of
// the function it applies); the host's are CallHostBuiltin's.
GRef Builder::CallBuiltin(const GFunction& fn, Span span) {
  const std::string& name = fn.builtin;
  auto result_dtype = [&]() { return ResultDtype(fn); };
  auto node = [&](std::size_t i) { return NodeOf(fn.args.at(i), span); };
  auto shape_arg = [&](std::size_t i) { return ShapeArg(fn, i); };
  Node n;
  n.span = span;
  n.fn = name;
  if (ElementwiseBuiltins().count(name)) {
    n.kind = Kind::Map;
    for (std::size_t i = 0; i < fn.args.size(); ++i) n.args.push_back(node(i));
    n.dtype = result_dtype();
    n.shape = Broadcast(n.args);
    return Make(Add(std::move(n)));
  }
  if (name == "map" || name == "map2") {
    // The scalar function applied to the whole tensors: each operation in it broadcasts, so this
    // is the elementwise application, and its work becomes nodes of this graph.
    GRef value = fn.args[0];
    std::vector<NodeId> operands;
    for (std::size_t i = 1; i < fn.args.size(); ++i) {
      operands.push_back(node(i));
      value = Call(value, fn.args[i], span);
    }
    NodeId id = NodeOf(value, span);
    std::vector<Dim> shape = Broadcast(operands);
    if (Get(id).shape == shape) return Make(id);
    n.kind = Kind::View;
    n.fn = "broadcast";
    n.dtype = Get(id).dtype;
    n.args = {id};
    n.shape = shape;
    return Make(Add(std::move(n)));
  }
  if (name == "reduce" || name == "scan") {
    // The combiner: a body over two rank-0 parameters, outside the program's dataflow.
    NodeId init = node(1), x = node(2);
    Dtype d = Get(x).dtype;
    ++body_depth_;
    Node acc;
    acc.kind = Kind::Param;
    acc.dtype = d;
    acc.output = 0;
    acc.span = span;
    Node element = acc;
    element.output = 1;
    NodeId acc_id = Add(std::move(acc)), element_id = Add(std::move(element));
    GRef partial = Call(fn.args[0], Make(acc_id), span);
    NodeId result = NodeOf(Call(partial, Make(element_id), span), span);
    --body_depth_;
    n.kind = name == "reduce" ? Kind::Reduce : Kind::Scan;
    n.combiner = Combiner{acc_id, element_id, result};
    n.args = {x, init};
    n.dtype = d;
    n.shape = Get(x).shape;
    if (name == "reduce" && !n.shape.empty()) n.shape.pop_back();
    return Make(Add(std::move(n)));
  }
  if (name == "sum" || name == "max" || name == "min" || name == "mean" || name == "argmax") {
    n.kind = Kind::Reduce;
    n.args = {node(0)};
    n.dtype = result_dtype();
    n.shape = Get(n.args[0]).shape;
    if (!n.shape.empty()) n.shape.pop_back();
    return Make(Add(std::move(n)));
  }
  if (name == "@" || name == "matmul_f32") {
    n.kind = Kind::MatMul;
    n.args = {node(0), node(1)};
    n.dtype = result_dtype();
    n.shape = ProductShape(Get(n.args[0]).shape, Get(n.args[1]).shape);
    return Make(Add(std::move(n)));
  }
  if (name == "transpose" || name == "expand" || name == "reshape" || name == "permute") {
    n.kind = Kind::View;
    NodeId x = node(name == "reshape" || name == "permute" ? 1 : 0);
    n.args = {x};
    n.dtype = Get(x).dtype;
    n.shape = Get(x).shape;
    if (name == "transpose") {
      std::swap(n.shape[n.shape.size() - 1], n.shape[n.shape.size() - 2]);
    } else if (name == "expand") {
      n.shape.push_back(Dim::Constant(1));
    } else if (name == "reshape") {
      n.shape = shape_arg(0);
    } else {
      std::vector<Dim> permutation = shape_arg(0);
      std::vector<Dim> shape;
      for (const Dim& p : permutation) {
        std::optional<std::int64_t> axis = p.AsConstant();
        if (!axis || *axis < 0 || static_cast<std::size_t>(*axis) >= n.shape.size())
          WEFT_INTERNAL_ERROR("graph: a permutation that is not of constants");
        n.permutation.push_back(static_cast<int>(*axis));
        shape.push_back(n.shape[static_cast<std::size_t>(*axis)]);
      }
      n.shape = shape;
    }
    return Make(Add(std::move(n)));
  }
  if (name == "concat") {
    n.kind = Kind::Concat;
    n.args = {node(0), node(1)};
    n.dtype = Get(n.args[0]).dtype;
    n.shape = Get(n.args[0]).shape;
    n.shape.back() = Checked(core::Add(n.shape.back(), Get(n.args[1]).shape.back()));
    return Make(Add(std::move(n)));
  }
  if (name == "gather") {
    n.kind = Kind::Gather;
    n.args = {node(0), node(1)};
    n.dtype = Get(n.args[0]).dtype;
    n.shape = Get(n.args[0]).shape;
    n.shape.front() = Get(n.args[1]).shape.front();
    return Make(Add(std::move(n)));
  }
  if (name == "dequant") {
    n.kind = Kind::Dequant;
    std::vector<Dim> g = shape_arg(0);
    std::optional<std::int64_t> group = g.empty() ? std::nullopt : g[0].AsConstant();
    if (!group) WEFT_INTERNAL_ERROR("graph: `dequant`'s group is not a constant");
    n.group = *group;
    n.args = {node(1), node(2)};
    n.dtype = result_dtype();
    n.shape = Get(n.args[0]).shape;
    return Make(Add(std::move(n)));
  }
  if (name == "iota" || name == "zeros" || name == "ones" || name == "full") {
    n.kind = name == "iota" ? Kind::Iota : Kind::Fill;
    n.shape = shape_arg(0);
    if (name == "full") n.args = {node(1)};
    n.dtype = result_dtype();
    return Make(Add(std::move(n)));
  }
  return CallHostBuiltin(fn, span);
}

// The host built-ins: `random`, `load`, `save`, `print`, `arg` and `time`, each a node with an
// effect (or, for `arg`, a string) in program order.
GRef Builder::CallHostBuiltin(const GFunction& fn, Span span) {
  const std::string& name = fn.builtin;
  auto node = [&](std::size_t i) { return NodeOf(fn.args.at(i), span); };
  Node n;
  n.span = span;
  n.fn = name;
  if (name == "random") {
    n.kind = Kind::Random;
    n.shape = ShapeArg(fn, 0);
    n.args = {node(1)};
    n.dtype = ResultDtype(fn);
    return Make(Add(std::move(n)));
  }
  if (name == "load") {
    TypeRef result_type = core::ResultAfter(vars_, fn.type, fn.arity);
    core::TypePrinter printer(vars_);
    std::string type_text = printer.Print(result_type);
    auto type = TensorOf(result_type, fn.subst);
    const auto* tensor = std::get_if<TensorType>(&result_type->node);
    if (!tensor) Refuse(DiagnosticKind::HostUnsupported, span, "`load` of `" + type_text + "`, which is not a tensor");
    if (!vars_.Resolve(tensor->shape).Known() || !type)
      Refuse(DiagnosticKind::HostUnsupported, span,
             "`load` of `" + type_text + "`, whose rank is not known: write the type out (`(load f : f32[n, m])`)");
    Elem elem = vars_.Resolve(tensor->elem);
    if (elem.is_var() && !fn.subst.elems.count(elem.var().index))
      Refuse(
          DiagnosticKind::HostUnsupported, span,
          "`load` of `" + type_text + "`, whose element type is not known: write the type out (`(load f : f32[n])`)");
    n.kind = Kind::Load;
    n.args = {node(0)};
    n.dtype = type->first;
    n.shape = type->second;
    n.text = type_text;
    return Make(Add(std::move(n)));
  }
  if (name == "save" || name == "print") {
    n.kind = name == "save" ? Kind::Save : Kind::Print;
    if (name == "save") {
      n.args = {node(0), node(1)};
    } else {
      Leaves(fn.args[0], n.args, n.text, span);
    }
    Add(std::move(n));
    return Make(GTuple{});
  }
  if (name == "arg") {
    n.kind = Kind::String;
    n.args = {node(0)};
    return Make(Add(std::move(n)));
  }
  if (name == "time") {
    n.kind = Kind::TimeBegin;
    NodeId begin = Add(std::move(n));
    GRef value = Call(fn.args[0], Make(GTuple{}), span);
    Node end;
    end.kind = Kind::TimeEnd;
    end.fn = "time";
    end.span = span;
    end.dtype = Dtype::F64;
    Leaves(value, end.args, end.text, span);
    end.args.insert(end.args.begin(), begin);
    return Make(GTuple{value, Make(Add(std::move(end)))});
  }
  Refuse(DiagnosticKind::HostArrayTier, span, "`" + name + "`");
}

GRef Builder::RunKernel(const GFunction& fn, Span span) {
  const core::Def& def = module_.defs()[fn.def_index];
  GFrame frame{fn.subst, nullptr, fn.def_index, {}, &def.scheme.quantified};
  Node call;
  call.kind = Kind::Kernel;
  call.text = def.name;
  call.def = &def;
  call.span = span;
  std::size_t next = 0;
  for (std::size_t p = 0; p < def.params.size(); ++p) {
    if (def.kernel->out[p]) continue;
    const GRef& arg = fn.args.at(next++);
    call.args.push_back(NodeOf(arg, span));
    BindValue(module_.Get(def.params[p]).type, *arg, frame, span);
  }
  NodeId id = Add(std::move(call));
  GTuple outs;
  for (std::size_t p = 0; p < def.params.size(); ++p) {
    if (!def.kernel->out[p]) continue;
    const core::Pattern& param = module_.Get(def.params[p]);
    auto type = TensorOf(param.type, frame.subst);
    for (const Dim& d : type ? type->second : std::vector<Dim>{}) {
      for (SizeVarId v : d.Vars()) {
        bool ours = false;
        for (SizeVarId q : def.scheme.quantified.sizes) ours = ours || q == v;
        if (ours)
          Refuse(DiagnosticKind::HostUnsupported, span,
                 "a call of `" + def.name + "` whose size `" + vars_.info(v).name +
                     "` no input's shape gives: write the result's type out (`(" + def.name + " ... : ...)`)");
      }
    }
    if (!type) WEFT_INTERNAL_ERROR("graph: a kernel's `out` parameter is not a tensor");
    Node out;
    out.kind = Kind::KernelOut;
    out.args = {id};
    out.output = outs.size();
    out.dtype = type->first;
    out.shape = type->second;
    out.span = span;
    out.text = std::get<core::pattern::Name>(param.node).name;
    outs.push_back(Make(Add(std::move(out))));
  }
  if (outs.size() == 1) return outs.front();
  return Make(std::move(outs));
}

}  // namespace

Result<Graph, std::vector<Diagnostic>> Build(const core::Module& module, const core::VarStore& vars,
                                             const core::Def& main) {
  Graph graph;
  graph.main = &main;
  std::optional<std::size_t> index;
  for (std::size_t i = 0; i < module.defs().size(); ++i)
    if (&module.defs()[i] == &main) index = i;
  if (!index) WEFT_INTERNAL_ERROR("graph: `main` is not a definition of the module");
  Builder builder(module, vars, graph);
  try {
    builder.BuildMain(*index);
  } catch (const Refusal& refusal) {
    return std::vector<Diagnostic>{refusal.diagnostic};
  }
  if (const auto* id = std::get_if<NodeId>(&builder.Result(*index)->node)) graph.result = *id;
  return graph;
}

}  // namespace weft::graph
