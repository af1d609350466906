// The layout-free meaning of a tile kernel; see reference.h.
#include "sim/reference.h"

#include <map>
#include <optional>

#include "interp/ops.h"
#include "weft/numerics.h"

namespace weft::sim {

namespace {

using runtime::HostTensor;
using tile::OpId;
using tile::ValueId;

// A global tensor, or a tile of one: the parameter, and per parameter axis the first index (and
// whether the view keeps the axis).
struct View {
  int param = -1;
  std::vector<std::int64_t> start;
  std::vector<std::int64_t> shape;  // the view's extents
};

class ReferenceRun {
 public:
  ReferenceRun(const tile::Kernel& kernel, const RunOptions& options) : kernel_(kernel), options_(options) {}

  Result<std::vector<HostTensor>, RunError> Run(const std::vector<HostTensor>& inputs) {
    try {
      values_.assign(kernel_.values.size(), std::nullopt);
      views_.assign(kernel_.values.size(), std::nullopt);
      sizes_ = options_.sizes;
      std::size_t input = 0;
      for (const tile::Param& p : kernel_.params) {
        if (p.out) continue;
        if (input >= inputs.size()) throw Fault("kernel `" + kernel_.name + "` takes more inputs");
        const HostTensor& t = inputs[input++];
        const tile::Value& v = kernel_.Get(p.value);
        for (std::size_t i = 0; i < t.shape.size() && i < v.shape.size(); ++i)
          if (auto var = v.shape[i].AsVar()) sizes_.emplace(*var, t.shape[i]);
      }
      input = 0;
      for (const tile::Param& p : kernel_.params) {
        const tile::Value& v = kernel_.Get(p.value);
        if (v.space != tile::Space::Global) {
          values_[p.value.index] = inputs.at(input++);
          continue;
        }
        HostTensor t;
        if (p.out) {
          std::vector<std::int64_t> shape;
          for (const core::Dim& d : v.shape) shape.push_back(EvalDim(d));
          t = HostTensor::Zeros(v.dtype, shape);
          outs_.push_back(static_cast<int>(params_.size()));
        } else {
          t = inputs.at(input++);
        }
        views_[p.value.index] =
            View{static_cast<int>(params_.size()), std::vector<std::int64_t>(t.shape.size(), 0), t.shape};
        params_.push_back(std::move(t));
      }
      std::vector<std::int64_t> grid;
      for (const core::Dim& d : kernel_.grid) grid.push_back(EvalDim(d));
      std::int64_t blocks = 1;
      for (std::int64_t g : grid) blocks *= g;
      for (std::int64_t b = 0; b < blocks; ++b) {
        block_.assign(grid.size(), 0);
        std::int64_t rest = b;
        for (std::size_t i = grid.size(); i-- > 0;) {
          block_[i] = rest % grid[i];
          rest /= grid[i];
        }
        for (OpId id : kernel_.body) Exec(id);
      }
      std::vector<HostTensor> out;
      for (int i : outs_) out.push_back(params_[static_cast<std::size_t>(i)]);
      return out;
    } catch (const Fault& fault) {
      return RunError{span_, std::string("reference: ") + fault.what()};
    }
  }

 private:
  std::int64_t EvalDim(const core::Dim& d) const {
    auto r = core::Evaluate(d, [&](core::SizeVarId var) -> std::int64_t {
      auto it = sizes_.find(var);
      if (it == sizes_.end()) throw Fault("size `" + core::ToString(d) + "` is not known");
      return it->second;
    });
    if (!r) throw Fault(r.error().message);
    return *r;
  }
  const HostTensor& Get(ValueId v) {
    auto& slot = values_.at(v.index);
    if (!slot) {
      if (!views_.at(v.index)) throw Fault("a value is used before it is computed");
      slot = Materialize(*views_[v.index]);
    }
    return *slot;
  }
  void Set(ValueId v, interp::OpResult r) {
    if (!r) throw Fault(r.error().message);
    values_.at(v.index) = std::move(*r);
  }
  // The elements of a view, copied out of its parameter.
  HostTensor Materialize(const View& view) {
    const HostTensor& p = params_[static_cast<std::size_t>(view.param)];
    std::vector<interp::IndexItem> items;
    std::size_t q = p.shape.size(), r = view.shape.size();
    for (std::size_t i = 0; i < q; ++i) {
      if (i < q - r)
        items.push_back(view.start[i]);
      else
        items.push_back(interp::Slice{view.start[i], view.start[i] + view.shape[i - (q - r)]});
    }
    auto t = interp::Index(p, items);
    if (!t) throw Fault(t.error().message);
    return *t;
  }
  void Exec(OpId id);

  const tile::Kernel& kernel_;
  const RunOptions& options_;
  std::vector<std::optional<HostTensor>> values_;
  std::vector<std::optional<View>> views_;
  std::vector<HostTensor> params_;
  std::vector<int> outs_;
  std::map<core::SizeVarId, std::int64_t> sizes_;
  std::vector<std::int64_t> block_;
  Span span_;
};

interp::OpResult Apply(const std::string& fn, const std::vector<HostTensor>& args) {
  static const std::map<std::string, interp::BinaryOp, std::less<>> binary = {
      {"+", interp::BinaryOp::Add},          {"-", interp::BinaryOp::Sub},
      {"*", interp::BinaryOp::Mul},          {"/", interp::BinaryOp::Div},
      {"%", interp::BinaryOp::Mod},          {"==", interp::BinaryOp::Eq},
      {"!=", interp::BinaryOp::Ne},          {"<", interp::BinaryOp::Lt},
      {"<=", interp::BinaryOp::Le},          {">", interp::BinaryOp::Gt},
      {">=", interp::BinaryOp::Ge},          {"&&", interp::BinaryOp::And},
      {"||", interp::BinaryOp::Or},          {"maximum", interp::BinaryOp::Maximum},
      {"minimum", interp::BinaryOp::Minimum}};
  static const std::map<std::string, interp::UnaryOp, std::less<>> unary = {
      {"negate", interp::UnaryOp::Neg}, {"abs", interp::UnaryOp::Abs},         {"exp", interp::UnaryOp::Exp},
      {"log", interp::UnaryOp::Log},    {"sqrt", interp::UnaryOp::Sqrt},       {"rsqrt", interp::UnaryOp::Rsqrt},
      {"tanh", interp::UnaryOp::Tanh},  {"sigmoid", interp::UnaryOp::Sigmoid}, {"sin", interp::UnaryOp::Sin},
      {"cos", interp::UnaryOp::Cos}};
  if (auto b = binary.find(fn); b != binary.end() && args.size() == 2)
    return interp::Binary(b->second, args[0], args[1]);
  if (auto u = unary.find(fn); u != unary.end() && args.size() == 1) return interp::Unary(u->second, args[0]);
  if (fn == "select" && args.size() == 3) return interp::Select(args[0], args[1], args[2]);
  return interp::OpError{"`" + fn + "` is not simulated"};
}

void ReferenceRun::Exec(OpId id) {
  const tile::Op& op = kernel_.Get(id);
  span_ = op.span;
  auto result = [&] { return op.results.at(0); };
  std::visit(
      [&](const auto& node) {
        using T = std::decay_t<decltype(node)>;
        if constexpr (std::is_same_v<T, tile::op::BlockIdx>) {
          values_[result().index] = interp::ScalarFromInt(Dtype::I64, block_.at(static_cast<std::size_t>(node.axis)));
        } else if constexpr (std::is_same_v<T, tile::op::Constant>) {
          Dtype d = kernel_.Get(result()).dtype;
          if (auto* i = std::get_if<std::int64_t>(&node.value)) values_[result().index] = interp::ScalarFromInt(d, *i);
          if (auto* f = std::get_if<double>(&node.value)) values_[result().index] = interp::ScalarFromDouble(d, *f);
          if (auto* b = std::get_if<bool>(&node.value)) values_[result().index] = interp::ScalarFromInt(d, *b);
        } else if constexpr (std::is_same_v<T, tile::op::Size>) {
          values_[result().index] = interp::ScalarFromInt(Dtype::I64, EvalDim(node.dim));
        } else if constexpr (std::is_same_v<T, tile::op::ScalarOp> || std::is_same_v<T, tile::op::Map>) {
          std::vector<HostTensor> args;
          for (ValueId a : node.args) args.push_back(Get(a));
          Set(result(), Apply(node.fn, args));
        } else if constexpr (std::is_same_v<T, tile::op::View>) {
          View v = *views_.at(node.tensor.index);
          std::size_t q = v.start.size(), r = node.shape.size();
          for (std::size_t i = 0; i < q; ++i) {
            std::int64_t c = runtime::LoadInt64(Get(node.coords.at(i)), 0);
            std::int64_t extent = i >= q - r ? node.shape[i - (q - r)] : 1;
            if (c < 0 || (c + 1) * extent > params_[static_cast<std::size_t>(v.param)].shape[i])
              throw Fault("tile coordinate " + std::to_string(c) + " of axis " + std::to_string(i) +
                          " is out of range");
            v.start[i] = c * extent;
          }
          v.shape = node.shape;
          views_[result().index] = v;
          values_[result().index].reset();
        } else if constexpr (std::is_same_v<T, tile::op::ToShared> || std::is_same_v<T, tile::op::ToRegs> ||
                             std::is_same_v<T, tile::op::Convert>) {
          values_[result().index] = Get(node.src);
        } else if constexpr (std::is_same_v<T, tile::op::Store>) {
          const View& dst = *views_.at(node.dst.index);
          const HostTensor& src = Get(node.src);
          HostTensor& p = params_[static_cast<std::size_t>(dst.param)];
          std::size_t q = p.shape.size(), r = dst.shape.size();
          for (std::int64_t i = 0; i < src.Count(); ++i) {
            std::int64_t rest = i, flat = 0, stride = 1;
            std::vector<std::int64_t> index(q);
            for (std::size_t a = q; a-- > 0;) {
              std::int64_t local = 0;
              if (a >= q - r) {
                local = rest % dst.shape[a - (q - r)];
                rest /= dst.shape[a - (q - r)];
              }
              flat += (dst.start[a] + local) * stride;
              stride *= p.shape[a];
            }
            runtime::StoreBits(p, flat, runtime::LoadBits(src, i));
          }
        } else if constexpr (std::is_same_v<T, tile::op::Mma>) {
          auto product = interp::MatMulF32(Get(node.a), Get(node.b));
          if (!product) throw Fault(product.error().message);
          Set(result(), interp::Binary(interp::BinaryOp::Add, Get(node.acc), *product));
        } else if constexpr (std::is_same_v<T, tile::op::Fill>) {
          auto value = interp::Cast(kernel_.Get(result()).dtype, Get(node.value));
          if (!value) throw Fault(value.error().message);
          Set(result(), interp::Full(node.shape, *value));
        } else if constexpr (std::is_same_v<T, tile::op::Iota>) {
          Set(result(), interp::Iota(node.n));
        } else if constexpr (std::is_same_v<T, tile::op::Reduce>) {
          interp::ReduceOp r = node.fn == "sum"   ? interp::ReduceOp::Sum
                               : node.fn == "max" ? interp::ReduceOp::Max
                                                  : interp::ReduceOp::Min;
          Set(result(), interp::Reduce(r, Get(node.src)));
        } else if constexpr (std::is_same_v<T, tile::op::Expand>) {
          Set(result(), interp::Expand(Get(node.src)));
        } else if constexpr (std::is_same_v<T, tile::op::Cast>) {
          Set(result(), interp::Cast(node.dtype, Get(node.src)));
        } else if constexpr (std::is_same_v<T, tile::op::Loop>) {
          for (std::size_t i = 0; i < node.carried.size(); ++i) values_[node.carried[i].index] = Get(node.init.at(i));
          std::int64_t bound = runtime::LoadInt64(Get(node.bound), 0);
          for (std::int64_t it = 0; it < bound; ++it) {
            values_[node.counter.index] = interp::ScalarFromInt(kernel_.Get(node.counter).dtype, it);
            for (OpId b : node.body) Exec(b);
            std::vector<HostTensor> next;
            for (ValueId y : node.yields) next.push_back(Get(y));
            for (std::size_t i = 0; i < node.carried.size(); ++i) values_[node.carried[i].index] = next[i];
          }
          for (std::size_t i = 0; i < op.results.size(); ++i) values_[op.results[i].index] = Get(node.carried.at(i));
        }
      },
      op.node);
}

}  // namespace

Result<std::vector<runtime::HostTensor>, RunError> Reference(const tile::Kernel& kernel,
                                                             const std::vector<runtime::HostTensor>& inputs,
                                                             const RunOptions& options) {
  ReferenceRun reference(kernel, options);
  return reference.Run(inputs);
}

}  // namespace weft::sim
