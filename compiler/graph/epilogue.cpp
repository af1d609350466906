// A product on the stdlib gemm tile with its epilogue (epilogue.h).
//
// The kernel is the stdlib gemm's (stdlib/gemm.weft: 128 x 256 outputs a block, 64 deep, 256
// threads) up to its store; after the main loop each node of the epilogue is one step over the
// block's register tile, in program order, on the node's own dtype. A tensor the epilogue reads is
// a tile of the block: a row vector ([n] or [1, n], a bias) as its [1, 256] slice, a matrix of the
// product's shape (a residual) as its [128, 256] tile.
//
// Three parts: the Analysis that finds the steps (or why there are none), the text `--emit=graph`
// prints (EpilogueText), and the tile IR (EpilogueTile), which is what tile::Lower makes of that
// text, op for op, built from the lowered stdlib gemm.
#include "graph/epilogue.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <set>

#include "base/overloaded.h"
#include "weft/numerics.h"

namespace weft::graph {

bool TransposedOperand(const Graph& graph, NodeId operand) {
  const Node& view = graph.Get(operand);
  // bf16 and f16 have `_nt` and `_tn` tiles (stdlib/gemm.weft's gemm_bf16_nt, gemm_bf16_tn, ...).
  if (view.kind != Kind::View || view.fn != "transpose" || (view.dtype != Dtype::BF16 && view.dtype != Dtype::F16) ||
      graph.Get(view.args[0]).kind == Kind::View)
    return false;
  std::size_t users = 0;
  for (const Node& n : graph.nodes)
    if (!n.in_body) users += static_cast<std::size_t>(std::count(n.args.begin(), n.args.end(), operand));
  return users == 1 && !(graph.result && *graph.result == operand);
}

Transposed TransposedOperands(const Graph& graph, const Node& mm) {
  Transposed t;
  t.b = TransposedOperand(graph, mm.args[1]);
  t.a = !t.b && graph.Get(mm.args[0]).shape.size() == 2 && TransposedOperand(graph, mm.args[0]);
  return t;
}

bool CopiedInput(const Graph& graph, NodeId id) {
  const Node& n = graph.Get(id);
  return n.kind == Kind::View && (n.fn == "index" || n.fn == "transpose" || n.fn == "permute" || n.fn == "reshape");
}

namespace {

constexpr std::string_view kInfix[] = {"+", "-", "*", "/", "==", "!=", "<", "<=", ">", ">=", "&&", "||"};
// Not `negate` (unary minus): the kernel tier has no name for it, so the text --emit=graph prints
// would not read back, and its kernel was never built; taking it changes which products fuse.
constexpr std::string_view kPrefix[] = {"maximum", "minimum", "exp", "log", "sqrt", "rsqrt",
                                        "tanh",    "sigmoid", "sin", "cos", "abs"};
constexpr std::size_t kMaxInputs = 4;             // tensors an epilogue reads besides the product
constexpr std::int64_t kRows = 128, kCols = 256;  // the stdlib gemm's block of outputs

bool IsHalf(Dtype d) {
  return d == Dtype::BF16 || d == Dtype::F16;
}
bool IsTileFloat(Dtype d) {
  return d == Dtype::F32 || IsHalf(d);
}
bool IsComparison(std::string_view fn) {
  return fn == "==" || fn == "!=" || fn == "<" || fn == "<=" || fn == ">" || fn == ">=";
}
bool IsInfix(std::string_view fn) {
  return std::find(std::begin(kInfix), std::end(kInfix), fn) != std::end(kInfix);
}
std::string Dt(Dtype d) {
  return std::string(Spelling(d));
}

// The value of a literal the kernel tier can write: a bool, or a finite float.
std::optional<double> LiteralValue(const Node& n) {
  if (n.dtype == Dtype::Bool) return n.bits ? 1.0 : 0.0;
  if (!runtime::IsFloatDtype(n.dtype)) return std::nullopt;
  double v = runtime::DecodeFloat(n.dtype, n.bits);
  if (!std::isfinite(v)) return std::nullopt;
  return v;
}

// The literal as the kernel tier reads it back, the same value: `1.5`, `1.0e30`, `(-0.25)`.
std::string LiteralText(Dtype dtype, double v) {
  if (dtype == Dtype::Bool) return v != 0 ? "true" : "false";
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.17g", std::fabs(v));
  std::string text = buffer, mantissa = text, exponent;
  if (std::size_t e = text.find('e'); e != std::string::npos) {
    mantissa = text.substr(0, e);
    exponent = text.substr(e + 1);
    if (!exponent.empty() && exponent[0] == '+') exponent.erase(0, 1);
  }
  if (mantissa.find('.') == std::string::npos) mantissa += ".0";
  text = mantissa + (exponent.empty() ? "" : "e" + exponent);
  return std::signbit(v) ? "(-" + text + ")" : text;
}

// ---- The analysis: which steps compute `nodes`, or why the tile cannot ----

class Analysis {
 public:
  Analysis(const Graph& graph, std::vector<NodeId> nodes) : g_(graph), nodes_(std::move(nodes)) {
    std::sort(nodes_.begin(), nodes_.end(), [](NodeId a, NodeId b) { return a.index < b.index; });
    for (NodeId id : nodes_) inside_.insert(id.index);
  }

  std::optional<Epilogue> Run(const std::string& name, std::string& why) {
    if (!Product(why) || !Contained(why)) return std::nullopt;
    const Node& root = g_.Get(nodes_.back());
    if (!IsTileFloat(root.dtype))
      return Fail(why, "its result is " + Dt(root.dtype) + ", which the tile does not store");
    if (!(root.shape == space_)) return Fail(why, "its result has another shape than the product");
    const Node& mm = g_.Get(product_);
    EpilogueStep product;
    product.kind = EpilogueStep::Kind::Product;
    product.dtype = mm.dtype;
    product.span = mm.span;
    step_of_[product_.index] = 0;
    out_.steps.push_back(product);
    for (NodeId id : nodes_) {
      if (id == product_ || id == a_view_ || id == b_view_ || operand_views_.count(id.index)) continue;
      if (!Step(id, why)) return std::nullopt;
    }
    out_.name = name;
    out_.tile = tile_;
    out_.operands = in_;
    out_.transposed_b = b_view_.index != kNone;
    out_.transposed_a = a_view_.index != kNone;
    out_.result = root.dtype;
    return std::move(out_);
  }

 private:
  std::nullopt_t Fail(std::string& why, std::string text) {
    why = std::move(text);
    return std::nullopt;
  }
  bool Refuse(std::string& why, std::string text) {
    why = std::move(text);
    return false;
  }

  // The product, its operands as stored (a, and b or the tensor a transposed b views), its tile.
  bool Product(std::string& why) {
    for (NodeId id : nodes_) {
      if (g_.Get(id).kind != Kind::MatMul) continue;
      if (product_.index != kNone) return Refuse(why, "two products");
      product_ = id;
    }
    if (product_.index == kNone) return Refuse(why, "no product");
    const Node& mm = g_.Get(product_);
    a_ = mm.args[0];
    b_ = mm.args[1];
    // A transposed b (in the group, or not yet: fusion asks before the view joins) is the `_nt`
    // tile's operand, stored as [n, k]; else a transposed a the `_tn` tile's, stored as [k, m].
    const Transposed transposed = TransposedOperands(g_, mm);
    if (transposed.b) {
      b_view_ = b_;
      b_ = g_.Get(b_).args[0];
    }
    if (transposed.a) {
      a_view_ = a_;
      a_ = g_.Get(a_).args[0];
    }
    // Any other view operand is outside the group (fusion copies it to a dense tensor first), or
    // inside it with the views down to its data: the kernel reads it in place (Group::in_place).
    for (NodeId x : {a_, b_}) {
      if (!inside_.count(x.index)) continue;
      if (g_.Get(x).kind != Kind::View) return Refuse(why, "an operand is computed in the group");
      for (NodeId v = x; inside_.count(v.index); v = g_.Get(v).args.at(0)) {
        if (g_.Get(v).kind != Kind::View) return Refuse(why, "an operand is computed in the group");
        operand_views_.insert(v.index);
      }
    }
    const Node &a = g_.Get(a_), &b = g_.Get(b_);
    if (a.dtype != b.dtype || !IsHalf(a.dtype) || a.shape.size() < 2 || b.shape.size() != 2)
      return Refuse(why, "the stdlib gemm takes bf16 or f16 operands, b a matrix");
    if (a.shape.size() > 2 && inside_.count(a_.index)) return Refuse(why, "a's rows read through a view");
    if (mm.dtype != Dtype::F32 && mm.dtype != a.dtype) return Refuse(why, "a product of another dtype");
    in_ = a.dtype;
    tile_ = "gemm_" + Dt(a.dtype) + (b_view_.index != kNone ? "_nt" : a_view_.index != kNone ? "_tn" : "");
    space_ = mm.shape;
    return true;
  }

  // Every value but the last is read only inside (it lives in registers).
  bool Contained(std::string& why) {
    for (std::size_t i = 0; i < g_.nodes.size(); ++i) {
      const Node& n = g_.nodes[i];
      if (n.in_body || inside_.count(static_cast<std::uint32_t>(i))) continue;
      for (NodeId a : n.args)
        if (inside_.count(a.index) && a != nodes_.back()) return Refuse(why, "a value inside it is read elsewhere");
    }
    if (g_.result && inside_.count(g_.result->index) && *g_.result != nodes_.back())
      return Refuse(why, "a value inside it is `main`'s result");
    return true;
  }

  bool RowShape(const std::vector<Dim>& shape) const {
    return (shape.size() == 1 && shape[0] == space_.back()) ||
           (shape.size() == 2 && shape[0] == Dim::Constant(1) && shape[1] == space_.back());
  }

  // Operand `id` of the node at `at`: a value of the epilogue, a literal, or the tile of an input
  // (a Load step, added before the node's own step where the tensor is first read, so that its
  // registers are live only from there).
  std::optional<EpilogueOperand> Operand(NodeId id, Span at, std::string& why) {
    EpilogueOperand out;
    if (inside_.count(id.index)) {
      out.step = step_of_.at(id.index);
      return out;
    }
    const Node& n = g_.Get(id);
    if (n.kind == Kind::Constant) {
      std::optional<double> value = LiteralValue(n);
      if (!value) {
        Refuse(why, "a literal of " + Dt(n.dtype));
        return std::nullopt;
      }
      out.dtype = n.dtype;
      out.literal = *value;
      out.span = n.span;
      return out;
    }
    for (std::size_t i = 0; i < out_.inputs.size(); ++i)
      if (out_.inputs[i].node == id) {
        out.step = load_of_.at(i);
        return out;
      }
    // A view that moves data (a slice, a transpose) is read as a dense tensor: fusion copies it
    // first (CopiedInput); a broadcast stays the elementwise kernel's, which reads it in place.
    if ((n.kind == Kind::View && !CopiedInput(g_, id)) || !IsTileFloat(n.dtype)) {
      Refuse(why, "it reads a view or a tensor of " + Dt(n.dtype));
      return std::nullopt;
    }
    bool matrix = n.shape == space_;
    if (!matrix && !RowShape(n.shape)) {
      Refuse(why, "it reads a tensor that is neither [n] nor the product's shape");
      return std::nullopt;
    }
    if (matrix && (matrices_ > 0 || !IsHalf(n.dtype))) {
      Refuse(why, "the tile's shared memory holds one 16-bit matrix beside the product");
      return std::nullopt;
    }
    if (out_.inputs.size() == kMaxInputs) {
      Refuse(why, "it reads more than " + std::to_string(kMaxInputs) + " tensors");
      return std::nullopt;
    }
    matrices_ += matrix ? 1 : 0;
    out_.inputs.push_back(EpilogueInput{id, n.dtype, matrix});
    EpilogueStep load;
    load.kind = EpilogueStep::Kind::Load;
    load.dtype = n.dtype;
    load.input = out_.inputs.size() - 1;
    load.span = at;
    load_of_.push_back(out_.steps.size());
    out.step = out_.steps.size();
    out_.steps.push_back(load);
    return out;
  }

  // The step of node `id`.
  bool Step(NodeId id, std::string& why) {
    const Node& n = g_.Get(id);
    if (!(n.shape == space_) && !RowShape(n.shape)) return Refuse(why, "a value of another shape");
    EpilogueStep step;
    step.dtype = n.dtype;
    step.span = n.span;
    if (n.kind == Kind::Cast) {
      const Node& from = g_.Get(n.args[0]);
      if (!IsTileFloat(n.dtype) || !IsTileFloat(from.dtype)) return Refuse(why, "`cast` to or from " + Dt(n.dtype));
      auto x = Operand(n.args[0], n.span, why);
      if (!x) return false;
      step.kind = EpilogueStep::Kind::Cast;
      step.args.push_back(*x);
    } else if (n.kind == Kind::Map) {
      bool prefix = std::find(std::begin(kPrefix), std::end(kPrefix), n.fn) != std::end(kPrefix);
      if (n.fn == "negate") return Refuse(why, "unary minus, which an epilogue does not take");
      if (!IsInfix(n.fn) && !prefix && n.fn != "select") return Refuse(why, "`" + n.fn + "` in the kernel tier");
      for (std::size_t i = 0; i < n.args.size(); ++i) {
        Dtype d = g_.Get(n.args[i]).dtype;
        bool condition = n.fn == "select" && i == 0;
        bool logical = n.fn == "&&" || n.fn == "||";
        if ((condition || logical) ? d != Dtype::Bool : !IsTileFloat(d))
          return Refuse(why, "`" + n.fn + "` on " + Dt(d));
        auto x = Operand(n.args[i], n.span, why);
        if (!x) return false;
        step.args.push_back(*x);
      }
      bool boolean = IsComparison(n.fn) || n.fn == "&&" || n.fn == "||";
      if (boolean != (n.dtype == Dtype::Bool) || (!boolean && !IsTileFloat(n.dtype)))
        return Refuse(why, "`" + n.fn + "` of " + Dt(n.dtype));
      step.kind = EpilogueStep::Kind::Map;
      step.fn = n.fn;
    } else {
      return Refuse(why, "a `" + std::string(Spelling(n.kind)) + "` node in the kernel tier");
    }
    step_of_[id.index] = out_.steps.size();
    out_.steps.push_back(std::move(step));
    return true;
  }

  static constexpr std::uint32_t kNone = ~0u;

  const Graph& g_;
  std::vector<NodeId> nodes_;
  std::set<std::uint32_t> inside_;
  std::set<std::uint32_t> operand_views_;  // views of an operand read in place, down to its data
  NodeId product_{kNone}, a_view_{kNone}, b_view_{kNone}, a_{kNone}, b_{kNone};
  Dtype in_ = Dtype::BF16;
  std::string tile_;
  std::vector<Dim> space_;
  int matrices_ = 0;
  Epilogue out_;
  std::map<std::uint32_t, std::size_t> step_of_;  // per node inside: its step
  std::vector<std::size_t> load_of_;              // per input: its Load step
};

// The name of each step's value in the text (and of its tile value): v0 the product, then v1,
// v2 ... for the computed ones in order, r0, r1 ... for the loaded ones, by input.
std::vector<std::string> StepNames(const Epilogue& e) {
  std::vector<std::string> names;
  std::size_t computed = 0;
  for (const EpilogueStep& step : e.steps) {
    if (step.kind == EpilogueStep::Kind::Load) {
      names.push_back("r" + std::to_string(step.input));
    } else {
      names.push_back("v" + std::to_string(computed++));
    }
  }
  return names;
}

// ---- The tile IR ----

// Every value id an op names (operands, results, a loop's counter and carried values), through `f`.
void RenameValues(tile::Op& op, const std::function<tile::ValueId(tile::ValueId)>& f) {
  namespace o = tile::op;
  for (tile::ValueId& r : op.results) r = f(r);
  auto all = [&](std::vector<tile::ValueId>& values) {
    for (tile::ValueId& v : values) v = f(v);
  };
  std::visit(Overloaded{
                 [](o::BlockIdx&) {},
                 [](o::Constant&) {},
                 [](o::Size&) {},
                 [](o::Iota&) {},
                 [&](o::ScalarOp& x) { all(x.args); },
                 [&](o::Map& x) { all(x.args); },
                 [&](o::View& x) {
                   x.tensor = f(x.tensor);
                   all(x.coords);
                 },
                 [&](o::ToShared& x) { x.src = f(x.src); },
                 [&](o::ToRegs& x) { x.src = f(x.src); },
                 [&](o::Transpose& x) { x.src = f(x.src); },
                 [&](o::Reduce& x) { x.src = f(x.src); },
                 [&](o::Expand& x) { x.src = f(x.src); },
                 [&](o::Cast& x) { x.src = f(x.src); },
                 [&](o::Convert& x) { x.src = f(x.src); },
                 [&](o::Fill& x) { x.value = f(x.value); },
                 [&](o::Store& x) {
                   x.dst = f(x.dst);
                   x.src = f(x.src);
                 },
                 [&](o::Mma& x) {
                   x.a = f(x.a);
                   x.b = f(x.b);
                   x.acc = f(x.acc);
                 },
                 [&](o::Loop& x) {
                   x.counter = f(x.counter);
                   x.bound = f(x.bound);
                   all(x.carried);
                   all(x.init);
                   all(x.yields);
                 },
             },
             op.node);
}

// Builds the kernel as tile::Lower builds it from EpilogueText: the same values and ops in the
// same order, named as the text's `let`s name them.
class TileBuilder {
 public:
  TileBuilder(const Epilogue& epilogue, const tile::Kernel& gemm) : e_(epilogue), gemm_(gemm) {}

  Result<tile::Kernel, std::string> Run() {
    if (std::optional<std::string> why = Shape()) return "the stdlib's `" + e_.tile + "` " + *why;
    Copy();
    std::vector<std::string> names = StepNames(e_);
    std::vector<tile::ValueId> values;
    for (std::size_t s = 0; s < e_.steps.size(); ++s) {
      values.push_back(Step(e_.steps[s], values));
      tile::Value& v = k_.Get(values.back());
      if (v.name.empty()) v.name = names[s];  // as `let` binds it
    }
    // store (tile c [128, 256] (i, j)) v
    const tile::Op& view = gemm_.Get(view_op_);
    const auto& tile = std::get<tile::op::View>(view.node);
    tile::ValueId dst = Emit(view.span, tile::op::View{c_, tile.shape, {i_, j_}}, e_.result, tile::Space::Global,
                             gemm_.Get(view.results[0]).shape);
    tile::OpId store = k_.Add(tile::Op{gemm_.Get(store_op_).span, tile::op::Store{dst, values.back()}, {}});
    k_.body.push_back(store);
    NoteCopy(core::CopyKind::Store, values.back(), std::nullopt, gemm_.Get(store_op_).span, "`store`");
#ifndef NDEBUG
    if (std::vector<std::string> violations = tile::Verify(k_); !violations.empty())
      WEFT_INTERNAL_ERROR("the tile IR of `" + k_.name + "` does not verify: " + violations.front());
#endif
    return std::move(k_);
  }

 private:
  // Why `gemm` is not the kernel this builds on (parameters a, b and `out c`, its body ending in
  // `store (tile c [..] (i, j)) acc`, those two ops and the view's value made last), or nullopt.
  std::optional<std::string> Shape() {
    const auto& params = gemm_.params;
    if (params.size() != 3 || params[0].out || params[1].out || !params[2].out || params[0].value.index != 0 ||
        params[1].value.index != 1 || params[2].value.index != 2 || gemm_.Get(params[2].value).shape.size() != 2)
      return std::optional<std::string>("does not take (a) (b) (out c: [m, n])");
    std::size_t ops = gemm_.ops.size(), body = gemm_.body.size();
    if (ops < 2 || body < 2 || gemm_.body[body - 1].index != ops - 1 || gemm_.body[body - 2].index != ops - 2)
      return std::optional<std::string>("does not end in its store");
    store_op_ = gemm_.body[body - 1];
    view_op_ = gemm_.body[body - 2];
    const auto* store = std::get_if<tile::op::Store>(&gemm_.Get(store_op_).node);
    const auto* view = std::get_if<tile::op::View>(&gemm_.Get(view_op_).node);
    if (!store || !view || gemm_.Get(view_op_).results.size() != 1 || store->dst != gemm_.Get(view_op_).results[0] ||
        store->dst.index != gemm_.values.size() - 1 || view->tensor != params[2].value || view->coords.size() != 2 ||
        view->shape != std::vector<std::int64_t>{kRows, kCols})
      return std::optional<std::string>("does not end in the store of a [128, 256] tile of c at (i, j)");
    return std::nullopt;
  }

  // The gemm up to its store, with the epilogue's tensors as parameters between b and c.
  void Copy() {
    const std::uint32_t inputs = static_cast<std::uint32_t>(e_.inputs.size());
    auto renamed = [&](tile::ValueId v) { return tile::ValueId(v.index < 2 ? v.index : v.index + inputs); };
    k_.name = e_.name;
    k_.span = gemm_.span;
    k_.where = gemm_.where;
    k_.grid = gemm_.grid;
    k_.threads = gemm_.threads;
    k_.size_names = gemm_.size_names;
    const tile::Value& c = gemm_.Get(gemm_.params[2].value);
    k_.Add(gemm_.Get(gemm_.params[0].value));
    k_.Add(gemm_.Get(gemm_.params[1].value));
    k_.params = {gemm_.params[0], gemm_.params[1]};
    for (std::size_t x = 0; x < e_.inputs.size(); ++x) {
      const EpilogueInput& input = e_.inputs[x];
      tile::Value v;
      v.name = "x" + std::to_string(x);
      v.span = c.span;
      v.dtype = input.dtype;
      v.space = tile::Space::Global;
      v.shape = input.matrix ? c.shape : std::vector<core::Dim>{core::Dim::Constant(1), c.shape[1]};
      std::string name = v.name;
      k_.params.push_back(tile::Param{name, k_.Add(std::move(v)), false, {}});
    }
    for (std::size_t v = 2; v + 1 < gemm_.values.size(); ++v) k_.Add(gemm_.values[v]);  // all but the view of c
    c_ = renamed(gemm_.params[2].value);
    k_.Get(c_).dtype = e_.result;
    k_.params.push_back(tile::Param{gemm_.params[2].name, c_, true, {}});
    for (std::size_t o = 0; o < view_op_.index; ++o) {
      tile::Op op = gemm_.ops[o];
      RenameValues(op, renamed);
      k_.Add(std::move(op));
    }
    k_.body.assign(gemm_.body.begin(), gemm_.body.end() - 2);
    // The gemm's layout constraints, but its store's (the epilogue stores its own value).
    auto renamed_index = [&](std::int32_t v) {
      return v == core::kNoTile
                 ? v
                 : static_cast<std::int32_t>(renamed(tile::ValueId(static_cast<std::uint32_t>(v))).index);
    };
    for (core::TileConstraint c : gemm_.layouts) {
      if (c.relation == core::TileRelation::Copy && c.copy == core::CopyKind::Store) continue;
      c.a = renamed_index(c.a);
      c.b = renamed_index(c.b);
      k_.layouts.push_back(std::move(c));
    }
    const auto& view = std::get<tile::op::View>(gemm_.Get(view_op_).node);
    i_ = renamed(view.coords[0]);
    j_ = renamed(view.coords[1]);
    acc_ = renamed(std::get<tile::op::Store>(gemm_.Get(store_op_).node).src);
  }

  // Appends an op with one result to the kernel's body (tile::Lower's Emit).
  tile::ValueId Emit(Span span, tile::OpNode node, Dtype dtype, tile::Space space, std::vector<core::Dim> shape = {}) {
    tile::Value v;
    v.span = span;
    v.dtype = dtype;
    v.space = space;
    v.shape = std::move(shape);
    tile::ValueId result = k_.Add(std::move(v));
    tile::OpId op = k_.Add(tile::Op{span, std::move(node), {result}});
    k_.Get(result).def = op;
    k_.body.push_back(op);
    return result;
  }

  static std::vector<core::Dim> Extents(std::int64_t rows, std::int64_t cols) {
    return {core::Dim::Constant(rows), core::Dim::Constant(cols)};
  }

  // A literal where it is read: a constant, negated when it is negative (`(-0.25)`).
  tile::ValueId Literal(const EpilogueOperand& x) {
    if (x.dtype == Dtype::Bool) return Emit(x.span, tile::op::Constant{x.literal != 0}, x.dtype, tile::Space::Scalar);
    tile::ValueId c = Emit(x.span, tile::op::Constant{std::fabs(x.literal)}, x.dtype, tile::Space::Scalar);
    if (!std::signbit(x.literal)) return c;
    return Emit(x.span, tile::op::ScalarOp{"negate", {c}}, x.dtype, tile::Space::Scalar);
  }

  tile::ValueId Step(const EpilogueStep& step, const std::vector<tile::ValueId>& values) {
    using Kind = EpilogueStep::Kind;
    switch (step.kind) {
      case Kind::Product:
        if (step.dtype == Dtype::F32) return acc_;
        return Cast(step, acc_);
      case Kind::Load: {
        // regs (shared (tile x [1, 256] (0, j))), or [128, 256] (i, j) for a matrix.
        const bool matrix = e_.inputs[step.input].matrix;
        tile::ValueId param = k_.params[2 + step.input].value;
        tile::ValueId row =
            matrix ? i_ : Emit(step.span, tile::op::Constant{std::int64_t{0}}, Dtype::I64, tile::Space::Scalar);
        std::int64_t rows = matrix ? kRows : 1;
        tile::ValueId view = Emit(step.span, tile::op::View{param, {rows, kCols}, {row, j_}}, step.dtype,
                                  tile::Space::Global, Extents(rows, kCols));
        tile::ValueId shared =
            Emit(step.span, tile::op::ToShared{view}, step.dtype, tile::Space::Shared, Extents(rows, kCols));
        NoteCopy(core::CopyKind::ToShared, shared, std::nullopt, step.span, "`shared`");
        tile::ValueId regs =
            Emit(step.span, tile::op::ToRegs{shared}, step.dtype, tile::Space::Reg, Extents(rows, kCols));
        NoteCopy(core::CopyKind::ToRegs, regs, shared, step.span, "`regs`");
        return regs;
      }
      case Kind::Cast: {
        return Cast(step, Operand(step.args[0], values));
      }
      case Kind::Map: {
        std::vector<tile::ValueId> args;
        std::int64_t rows = 1;
        for (const EpilogueOperand& x : step.args) {
          args.push_back(Operand(x, values));
          const tile::Value& v = k_.Get(args.back());
          if (v.space == tile::Space::Reg && v.shape[0] == core::Dim::Constant(kRows)) rows = kRows;
        }
        tile::ValueId result =
            Emit(step.span, tile::op::Map{step.fn, args}, step.dtype, tile::Space::Reg, Extents(rows, kCols));
        std::vector<core::TileTerm> operands;
        for (tile::ValueId a : args)
          if (k_.Get(a).space == tile::Space::Reg) operands.push_back(Term(a));
        core::ElementwiseConstraints(k_.layouts, step.fn, Term(result), operands, step.span);
        return result;
      }
    }
    WEFT_INTERNAL_ERROR("an epilogue step of no kind");
  }

  // `cast` of a register tile: the same layout (core/tile_layout.h's rule, as the checker's).
  tile::ValueId Cast(const EpilogueStep& step, tile::ValueId src) {
    std::vector<core::Dim> shape = k_.Get(src).shape;
    tile::ValueId result = Emit(step.span, tile::op::Cast{step.dtype, src}, step.dtype, tile::Space::Reg, shape);
    k_.layouts.push_back(core::CastConstraint(Index(src), Index(result), step.span));
    return result;
  }

  // The layout constraints of the ops this adds, over values (tile::Kernel::layouts).
  static std::int32_t Index(tile::ValueId v) {
    return static_cast<std::int32_t>(v.index);
  }
  core::TileTerm Term(tile::ValueId v) const {
    core::TileTerm term{Index(v), {}};
    for (const core::Dim& d : k_.Get(v).shape) term.shape.push_back(d.AsConstant().value_or(-1));
    return term;
  }
  void NoteCopy(core::CopyKind kind, tile::ValueId a, std::optional<tile::ValueId> b, Span span, std::string who) {
    core::TileConstraint c;
    c.relation = core::TileRelation::Copy;
    c.copy = kind;
    c.a = Index(a);
    c.b = b ? Index(*b) : core::kNoTile;
    c.span = span;
    c.who = std::move(who);
    k_.layouts.push_back(std::move(c));
  }

  tile::ValueId Operand(const EpilogueOperand& x, const std::vector<tile::ValueId>& values) {
    return x.step ? values.at(*x.step) : Literal(x);
  }

  const Epilogue& e_;
  const tile::Kernel& gemm_;
  tile::Kernel k_;
  tile::OpId view_op_, store_op_;  // the gemm's `tile c [..] (i, j)` and its store
  tile::ValueId c_, i_, j_, acc_;  // in k_
};

}  // namespace

std::optional<Epilogue> EpilogueKernel(const Graph& graph, std::vector<NodeId> nodes, const std::string& name,
                                       std::string* why) {
  std::string reason;
  auto out = Analysis(graph, std::move(nodes)).Run(name, reason);
  if (why) *why = reason;
  return out;
}

std::string EpilogueName(std::size_t kernel) {
  return "gemm_epilogue_" + std::to_string(kernel);
}

std::string EpilogueText(const Epilogue& e) {
  const std::string in = Dt(e.operands);
  const std::vector<std::string> names = StepNames(e);
  auto operand = [&](const EpilogueOperand& x) { return x.step ? names[*x.step] : LiteralText(x.dtype, x.literal); };
  std::string s = "-- generated: " + e.tile + "'s tile with an epilogue (graph/epilogue.cpp)\n";
  s += "kernel " + e.name + " (a: " + in + (e.transposed_a ? "[k, m]" : "[m, k]") + ") (b: " + in +
       (e.transposed_b ? "[n, k]" : "[k, n]") + ")";
  for (std::size_t i = 0; i < e.inputs.size(); ++i)
    s += " (x" + std::to_string(i) + ": " + Dt(e.inputs[i].dtype) + (e.inputs[i].matrix ? "[m, n]" : "[1, n]") + ")";
  s += " (out c: " + Dt(e.result) + "[m, n])\n";
  s += "    where m % 128 == 0, n % 256 == 0, k % 64 == 0\n";
  s += "    grid (m / 128, n / 256) threads 256 =\n";
  s += "  let (i, j) = block_idx in\n";
  s += "  let acc = pipeline kk < k / 64 with acc = zeros [128, 256] do\n";
  s += e.transposed_a ? "    mma (regs (transpose (shared (tile a [64, 128] (kk, i))))) "
                      : "    mma (regs (shared (tile a [128, 64] (i, kk)))) ";
  s += e.transposed_b ? "(regs (transpose (shared (tile b [256, 64] (j, kk)))))"
                      : "(regs (shared (tile b [64, 256] (kk, j))))";
  s += " acc\n  in\n";
  for (std::size_t i = 0; i < e.steps.size(); ++i) {
    const EpilogueStep& step = e.steps[i];
    std::string expr;
    switch (step.kind) {
      case EpilogueStep::Kind::Product:
        expr = step.dtype == Dtype::F32 ? std::string("acc") : "cast " + Dt(step.dtype) + " acc";
        break;
      case EpilogueStep::Kind::Load:
        expr = "regs (shared (tile x" + std::to_string(step.input) +
               (e.inputs[step.input].matrix ? " [128, 256] (i, j)" : " [1, 256] (0, j)") + "))";
        break;
      case EpilogueStep::Kind::Cast:
        expr = "cast " + Dt(step.dtype) + " " + operand(step.args[0]);
        break;
      case EpilogueStep::Kind::Map:
        if (IsInfix(step.fn)) {
          expr = operand(step.args[0]) + " " + step.fn + " " + operand(step.args[1]);
        } else {
          expr = step.fn;
          for (const EpilogueOperand& x : step.args) expr += " " + operand(x);
        }
        break;
    }
    s += "  let " + names[i] + " = " + expr + " in\n";
  }
  s += "  store (tile c [128, 256] (i, j)) " + names.back() + "\n";
  return s;
}

std::string EpilogueTexts(const Graph& graph, const Plan& plan) {
  std::string out;
  std::set<std::string> written;  // groups of the same work share a kernel (fuse.cpp)
  for (const Group& group : plan.groups) {
    if (!group.epilogue || !written.insert(group.kernel).second) continue;
    if (auto e = EpilogueKernel(graph, group.nodes, group.kernel)) out += EpilogueText(*e) + "\n";
  }
  return out;
}

Result<tile::Kernel, std::string> EpilogueTile(const Epilogue& epilogue, const tile::Kernel& gemm) {
  return TileBuilder(epilogue, gemm).Run();
}

}  // namespace weft::graph
