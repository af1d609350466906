// A product on the stdlib gemm tile with its epilogue, written in the kernel tier (epilogue.h).
//
// The kernel is the stdlib gemm's (stdlib/gemm.weft: 128 x 256 outputs a block, 64 deep, 256
// threads) up to its store; after the main loop each node of the epilogue is one `let` over the
// block's register tile, in program order, on the node's own dtype: device code computes bf16 and
// f16 arithmetic in f32 and rounds once, as the interpreter and the array kernels do. A tensor the
// epilogue reads is a tile of the block: a row vector ([n] or [1, n], a bias) as its [1, 256]
// slice, a matrix of the product's shape (a residual) as its [128, 256] tile.
#include "graph/epilogue.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "weft/numerics.h"

namespace weft::graph {
namespace {

constexpr std::string_view kInfix[] = {"+", "-", "*", "/", "==", "!=", "<", "<=", ">", ">=", "&&", "||"};
constexpr std::string_view kPrefix[] = {"maximum", "minimum", "exp", "log", "sqrt", "rsqrt",
                                        "tanh",    "sigmoid", "sin", "cos", "abs",  "negate"};
constexpr std::size_t kMaxInputs = 4;  // tensors an epilogue reads besides the product

bool IsHalf(Dtype d) {
  return d == Dtype::BF16 || d == Dtype::F16;
}
bool IsTileFloat(Dtype d) {
  return d == Dtype::F32 || IsHalf(d);
}
bool IsComparison(std::string_view fn) {
  return fn == "==" || fn == "!=" || fn == "<" || fn == "<=" || fn == ">" || fn == ">=";
}
std::string Dt(Dtype d) {
  return std::string(Spelling(d));
}

// A literal the kernel tier reads back as the same value: `1.5`, `1.0e30`, `(-0.25)`.
std::optional<std::string> Literal(const Node& n) {
  if (n.dtype == Dtype::Bool) return std::string(n.bits ? "true" : "false");
  if (!runtime::IsFloatDtype(n.dtype)) return std::nullopt;
  double v = runtime::DecodeFloat(n.dtype, n.bits);
  if (!std::isfinite(v)) return std::nullopt;
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

class Writer {
 public:
  Writer(const Graph& graph, std::vector<NodeId> nodes) : g_(graph), nodes_(std::move(nodes)) {
    std::sort(nodes_.begin(), nodes_.end(), [](NodeId a, NodeId b) { return a.index < b.index; });
    for (NodeId id : nodes_) inside_.insert(id.index);
  }

  std::optional<Epilogue> Run(const std::string& name, std::string& why) {
    if (!Product(why) || !Contained(why)) return std::nullopt;
    const Node& root = g_.Get(nodes_.back());
    if (!IsTileFloat(root.dtype))
      return Fail(why, "its result is " + Dt(root.dtype) + ", which the tile does not store");
    if (!(root.shape == space_)) return Fail(why, "its result has another shape than the product");
    Value(product_);  // v0
    for (NodeId id : nodes_) {
      if (id == product_ || id == b_view_) continue;
      if (!Line(id, why)) return std::nullopt;
    }
    Epilogue out;
    out.name = name;
    out.tile = tile_;
    out.inputs = inputs_;
    out.source = Source(name, root);
    return out;
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
    // tile's operand, stored as [n, k].
    if (const Node& view = g_.Get(b_); view.kind == Kind::View && view.fn == "transpose") {
      b_view_ = b_;
      b_ = view.args[0];
    } else if (inside_.count(b_.index)) {
      return Refuse(why, "b is computed in the group");
    }
    const Node &a = g_.Get(a_), &b = g_.Get(b_);
    if (inside_.count(a_.index) || inside_.count(b_.index) || a.kind == Kind::View || b.kind == Kind::View)
      return Refuse(why, "operands read through views");
    if (a.dtype != b.dtype || !IsHalf(a.dtype) || a.shape.size() != 2 || b.shape.size() != 2)
      return Refuse(why, "the stdlib gemm takes rank-2 bf16 or f16 operands");
    if (b_view_.index != kNone && a.dtype != Dtype::BF16) return Refuse(why, "no stdlib gemm_f16_nt");
    if (mm.dtype != Dtype::F32 && mm.dtype != a.dtype) return Refuse(why, "a product of another dtype");
    in_ = a.dtype;
    tile_ = "gemm_" + Dt(a.dtype) + (b_view_.index != kNone ? "_nt" : "");
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
    return (shape.size() == 1 && shape[0] == space_[1]) ||
           (shape.size() == 2 && shape[0] == Dim::Constant(1) && shape[1] == space_[1]);
  }

  // The name of a value of the epilogue: v0 the product, then v1, v2 ... in program order, so that
  // two epilogues of the same work are the same text (one kernel, EpilogueSources).
  std::string Value(NodeId id) {
    auto [it, fresh] = values_.emplace(id.index, "v" + std::to_string(values_.size()));
    return it->second;
  }

  // The text of operand `id` (a value of the epilogue, a literal, or a tile of an input).
  std::optional<std::string> Operand(NodeId id, std::string& why) {
    if (inside_.count(id.index)) return Value(id);
    const Node& n = g_.Get(id);
    if (n.kind == Kind::Constant) {
      auto literal = Literal(n);
      if (!literal) Refuse(why, "a literal of " + Dt(n.dtype));
      return literal;
    }
    for (std::size_t i = 0; i < inputs_.size(); ++i)
      if (inputs_[i] == id) return "r" + std::to_string(i);
    if (n.kind == Kind::View || !IsTileFloat(n.dtype)) {
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
    if (inputs_.size() == kMaxInputs) {
      Refuse(why, "it reads more than " + std::to_string(kMaxInputs) + " tensors");
      return std::nullopt;
    }
    matrices_ += matrix ? 1 : 0;
    inputs_.push_back(id);
    // Loaded where it is first read, so that its registers are live only from there.
    std::string k = std::to_string(inputs_.size() - 1);
    lines_.push_back("  let r" + k + " = regs (shared (tile x" + k +
                     (matrix ? " [128, 256] (i, j)" : " [1, 256] (0, j)") + ")) in\n");
    return "r" + k;
  }

  // One `let` of the epilogue.
  bool Line(NodeId id, std::string& why) {
    const Node& n = g_.Get(id);
    if (!(n.shape == space_) && !RowShape(n.shape)) return Refuse(why, "a value of another shape");
    std::string expr;
    if (n.kind == Kind::Cast) {
      const Node& from = g_.Get(n.args[0]);
      if (!IsTileFloat(n.dtype) || !IsTileFloat(from.dtype)) return Refuse(why, "`cast` to or from " + Dt(n.dtype));
      auto x = Operand(n.args[0], why);
      if (!x) return false;
      expr = "cast " + Dt(n.dtype) + " " + *x;
    } else if (n.kind == Kind::Map) {
      bool infix = std::find(std::begin(kInfix), std::end(kInfix), n.fn) != std::end(kInfix);
      bool prefix = std::find(std::begin(kPrefix), std::end(kPrefix), n.fn) != std::end(kPrefix);
      if (!infix && !prefix && n.fn != "select") return Refuse(why, "`" + n.fn + "` in the kernel tier");
      std::vector<std::string> args;
      for (std::size_t i = 0; i < n.args.size(); ++i) {
        Dtype d = g_.Get(n.args[i]).dtype;
        bool condition = n.fn == "select" && i == 0;
        bool logical = n.fn == "&&" || n.fn == "||";
        if ((condition || logical) ? d != Dtype::Bool : !IsTileFloat(d))
          return Refuse(why, "`" + n.fn + "` on " + Dt(d));
        auto x = Operand(n.args[i], why);
        if (!x) return false;
        args.push_back(*x);
      }
      if (infix) {
        expr = args[0] + " " + n.fn + " " + args[1];
      } else {
        expr = n.fn;
        for (const std::string& x : args) expr += " " + x;
      }
      bool boolean = IsComparison(n.fn) || n.fn == "&&" || n.fn == "||";
      if (boolean != (n.dtype == Dtype::Bool) || (!boolean && !IsTileFloat(n.dtype)))
        return Refuse(why, "`" + n.fn + "` of " + Dt(n.dtype));
    } else {
      return Refuse(why, "a `" + std::string(Spelling(n.kind)) + "` node in the kernel tier");
    }
    lines_.push_back("  let " + Value(id) + " = " + expr + " in\n");
    return true;
  }

  std::string Source(const std::string& name, const Node& root) const {
    const Node& mm = g_.Get(product_);
    const std::string in = Dt(in_);
    const bool nt = b_view_.index != kNone;
    std::string s = "-- generated: " + tile_ + "'s tile with an epilogue (graph/epilogue.cpp)\n";
    s += "kernel " + name + " (a: " + in + "[m, k]) (b: " + in + (nt ? "[n, k]" : "[k, n]") + ")";
    for (std::size_t i = 0; i < inputs_.size(); ++i) {
      const Node& x = g_.Get(inputs_[i]);
      s += " (x" + std::to_string(i) + ": " + Dt(x.dtype) + (x.shape == space_ ? "[m, n]" : "[1, n]") + ")";
    }
    s += " (out c: " + Dt(root.dtype) + "[m, n])\n";
    s += "    where m % 128 == 0, n % 256 == 0, k % 64 == 0\n";
    s += "    grid (m / 128, n / 256) threads 256 =\n";
    s += "  let (i, j) = block_idx in\n";
    s += "  let acc = pipeline kk < k / 64 with acc = zeros [128, 256] do\n";
    s += "    mma (regs (shared (tile a [128, 64] (i, kk)))) ";
    s += nt ? "(regs (transpose (shared (tile b [256, 64] (j, kk)))))" : "(regs (shared (tile b [64, 256] (kk, j))))";
    s += " acc\n  in\n";
    s += "  let v0 = " + (mm.dtype == Dtype::F32 ? std::string("acc") : "cast " + Dt(mm.dtype) + " acc") + " in\n";
    for (const std::string& line : lines_) s += line;
    s += "  store (tile c [128, 256] (i, j)) " + values_.at(nodes_.back().index) + "\n";
    return s;
  }

  static constexpr std::uint32_t kNone = ~0u;

  const Graph& g_;
  std::vector<NodeId> nodes_;
  std::set<std::uint32_t> inside_;
  NodeId product_{kNone}, b_view_{kNone}, a_{kNone}, b_{kNone};
  Dtype in_ = Dtype::BF16;
  std::string tile_;
  std::vector<Dim> space_;
  std::vector<NodeId> inputs_;
  int matrices_ = 0;
  std::vector<std::string> lines_;
  std::map<std::uint32_t, std::string> values_;
};

}  // namespace

std::optional<Epilogue> EpilogueKernel(const Graph& graph, std::vector<NodeId> nodes, const std::string& name,
                                       std::string* why) {
  std::string reason;
  auto out = Writer(graph, std::move(nodes)).Run(name, reason);
  if (why) *why = reason;
  return out;
}

std::string EpilogueName(std::size_t kernel) {
  return "gemm_epilogue_" + std::to_string(kernel);
}

std::string EpilogueSources(const Graph& graph, const Plan& plan) {
  std::string out;
  std::set<std::string> written;  // groups of the same work share a kernel (fuse.cpp)
  for (const Group& group : plan.groups) {
    if (!group.epilogue || !written.insert(group.kernel).second) continue;
    if (auto e = EpilogueKernel(graph, group.nodes, group.kernel)) out += e->source + "\n";
  }
  return out;
}

}  // namespace weft::graph
