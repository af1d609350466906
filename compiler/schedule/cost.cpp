// Predict: the steps are in cost.h.
#include "schedule/cost.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <queue>
#include <set>

#include "schedule/lowering.h"
#include "schedule/schedule.h"

namespace weft::schedule {

int ConsumerRegisters(std::int64_t threads, int blocks_per_sm) {
  std::int64_t consumers = std::max<std::int64_t>(1, threads / 128);
  return static_cast<int>(std::min<std::int64_t>(256, (512 / std::max(1, blocks_per_sm) - 24) / consumers / 8 * 8));
}

namespace {

using synth::InstructionKind;
using tile::OpId;
using tile::ValueId;

bool IsInteger(Dtype d) {
  return d != Dtype::F32 && d != Dtype::F64 && d != Dtype::F16 && d != Dtype::BF16;
}

std::optional<double> Apply(const std::string& f, const std::vector<double>& a, bool integer) {
  if (a.size() == 2) {
    if (f == "+") return a[0] + a[1];
    if (f == "-") return a[0] - a[1];
    if (f == "*") return a[0] * a[1];
    if (f == "/") return a[1] == 0 ? std::nullopt : std::optional(integer ? std::floor(a[0] / a[1]) : a[0] / a[1]);
    if (f == "%") return a[1] == 0 ? std::nullopt : std::optional(a[0] - a[1] * std::floor(a[0] / a[1]));
    if (f == "maximum") return std::max(a[0], a[1]);
    if (f == "minimum") return std::min(a[0], a[1]);
    if (f == "==") return double(a[0] == a[1]);
    if (f == "!=") return double(a[0] != a[1]);
    if (f == "<") return double(a[0] < a[1]);
    if (f == "<=") return double(a[0] <= a[1]);
    if (f == ">") return double(a[0] > a[1]);
    if (f == ">=") return double(a[0] >= a[1]);
    if (f == "&&") return double(a[0] != 0 && a[1] != 0);
    if (f == "||") return double(a[0] != 0 || a[1] != 0);
  }
  if (a.size() == 3 && f == "select") return a[0] != 0 ? a[1] : a[2];
  if (a.size() == 1 && f == "negate") return -a[0];
  if (a.size() == 1 && f == "not") return double(a[0] == 0);
  return std::nullopt;
}

// Scalars of the kernel at given sizes, block indices and scalar parameters (0 when not given).
class Scalars {
 public:
  Scalars(const tile::Kernel& kernel, std::function<std::int64_t(core::SizeVarId)> size,
          const std::map<std::uint32_t, double>& params)
      : kernel_(kernel), size_(std::move(size)), params_(params) {}

  void SetBlock(const std::vector<std::int64_t>& block) {
    block_ = block;
    cache_.clear();
  }
  // The loop's counter at an iteration (it has no definition: without this, 0).
  void SetCounter(ValueId counter, double x) {
    counter_ = counter.index;
    counter_value_ = x;
    cache_.clear();
  }

  std::optional<double> Get(ValueId v, int depth = 0) {
    if (depth > 64) return std::nullopt;
    if (auto it = cache_.find(v.index); it != cache_.end()) return it->second;
    auto r = Compute(v, depth);
    cache_[v.index] = r;
    return r;
  }

 private:
  std::optional<double> Compute(ValueId v, int depth) {
    const tile::Value& value = kernel_.Get(v);
    if (!value.def.valid()) {  // a scalar parameter, or the loop's counter
      if (counter_ && *counter_ == v.index) return counter_value_;
      auto it = params_.find(v.index);
      return it == params_.end() ? 0.0 : it->second;
    }
    const tile::OpNode& node = kernel_.Get(value.def).node;
    if (const auto* c = std::get_if<tile::op::Constant>(&node)) {
      return std::visit([](auto x) { return static_cast<double>(x); }, c->value);
    }
    if (const auto* s = std::get_if<tile::op::Size>(&node)) {
      auto r = core::Evaluate(s->dim, size_);
      if (!r) return std::nullopt;
      return static_cast<double>(*r);
    }
    if (const auto* b = std::get_if<tile::op::BlockIdx>(&node)) {
      auto axis = static_cast<std::size_t>(b->axis);
      return axis < block_.size() ? static_cast<double>(block_[axis]) : 0.0;
    }
    const auto* op = std::get_if<tile::op::ScalarOp>(&node);
    if (!op) return std::nullopt;
    std::vector<double> a;
    for (ValueId arg : op->args) {
      auto x = Get(arg, depth + 1);
      if (!x) return std::nullopt;
      a.push_back(*x);
    }
    return Apply(op->fn, a, IsInteger(value.dtype));
  }

  const tile::Kernel& kernel_;
  std::function<std::int64_t(core::SizeVarId)> size_;
  const std::map<std::uint32_t, double>& params_;
  std::vector<std::int64_t> block_;
  std::optional<std::uint32_t> counter_;
  double counter_value_ = 0;
  std::map<std::uint32_t, std::optional<double>> cache_;
};

// The smallest and largest element of an integer tile built from iota, expand, + - * and scalars
// (codegen's IntBounds), at the block and iteration `scalars` is set to.
std::optional<std::pair<double, double>> Range(const tile::Kernel& kernel, Scalars& scalars, ValueId v, int depth = 0) {
  const tile::Value& value = kernel.Get(v);
  if (depth > 16 || !IsInteger(value.dtype)) return std::nullopt;
  if (value.space == tile::Space::Scalar) {
    auto x = scalars.Get(v);
    if (!x) return std::nullopt;
    return std::pair{*x, *x};
  }
  if (!value.def.valid()) return std::nullopt;
  const tile::OpNode& node = kernel.Get(value.def).node;
  if (const auto* i = std::get_if<tile::op::Iota>(&node)) return std::pair{0.0, static_cast<double>(i->n - 1)};
  if (const auto* e = std::get_if<tile::op::Expand>(&node)) return Range(kernel, scalars, e->src, depth + 1);
  const auto* m = std::get_if<tile::op::Map>(&node);
  if (!m || m->args.size() != 2 || (m->fn != "+" && m->fn != "-" && m->fn != "*")) return std::nullopt;
  auto a = Range(kernel, scalars, m->args[0], depth + 1);
  auto b = Range(kernel, scalars, m->args[1], depth + 1);
  if (!a || !b) return std::nullopt;
  if (m->fn == "+") return std::pair{a->first + b->first, a->second + b->second};
  if (m->fn == "-") return std::pair{a->first - b->second, a->second - b->first};
  double p[] = {a->first * b->first, a->first * b->second, a->second * b->first, a->second * b->second};
  return std::pair{*std::min_element(p, p + 4), *std::max_element(p, p + 4)};
}

// Whether every element of the bool tile `v` is true (codegen's AllTrue: compares of Range tiles,
// || and &&, bool scalars).
bool AllTrue(const tile::Kernel& kernel, Scalars& scalars, ValueId v, int depth = 0) {
  const tile::Value& value = kernel.Get(v);
  if (depth > 16) return false;
  if (value.space == tile::Space::Scalar) {
    auto x = scalars.Get(v);
    return x && *x != 0;
  }
  if (!value.def.valid()) return false;
  const auto* m = std::get_if<tile::op::Map>(&kernel.Get(value.def).node);
  if (!m || m->args.size() != 2) return false;
  if (m->fn == "||")
    return AllTrue(kernel, scalars, m->args[0], depth + 1) || AllTrue(kernel, scalars, m->args[1], depth + 1);
  if (m->fn == "&&")
    return AllTrue(kernel, scalars, m->args[0], depth + 1) && AllTrue(kernel, scalars, m->args[1], depth + 1);
  auto a = Range(kernel, scalars, m->args[0], depth + 1);
  auto b = Range(kernel, scalars, m->args[1], depth + 1);
  if (!a || !b) return false;
  if (m->fn == "<=") return a->second <= b->first;
  if (m->fn == "<") return a->second < b->first;
  if (m->fn == ">=") return a->first >= b->second;
  if (m->fn == ">") return a->first > b->second;
  return false;
}

// The body's ops that cost nothing in the code codegen emits for the given bool parameters (step 3
// of cost.h): those the known bools make constant or a copy of an operand (`x || true`,
// `select true a b`), those only such ops read, and zero fills a wgmma accumulates into.
std::set<std::uint32_t> FreeOps(const tile::Kernel& kernel, const synth::Plan& plan, const tile::op::Loop& loop,
                                const std::map<std::uint32_t, double>& bools,
                                const std::set<std::uint32_t>& true_masks = {}) {
  std::map<std::uint32_t, double> known;   // value index -> constant (a scalar, or every element)
  std::map<std::uint32_t, ValueId> alias;  // op index -> the operand its result copies
  std::set<std::uint32_t> folded;          // op index: its result is a constant
  auto value_of = [&](ValueId v) -> std::optional<double> {
    if (auto it = known.find(v.index); it != known.end()) return it->second;
    const tile::Value& value = kernel.Get(v);
    if (!value.def.valid()) {
      auto it = bools.find(v.index);
      if (it != bools.end()) return it->second;
      return std::nullopt;
    }
    if (const auto* c = std::get_if<tile::op::Constant>(&kernel.Get(value.def).node))
      return std::visit([](auto x) { return static_cast<double>(x); }, c->value);
    return std::nullopt;
  };
  auto fold = [&](OpId id, const std::string& fn, const std::vector<ValueId>& args, Dtype dtype) {
    std::vector<std::optional<double>> a;
    bool all = true;
    for (ValueId arg : args) {
      a.push_back(value_of(arg));
      all = all && a.back().has_value();
    }
    ValueId result = kernel.Get(id).results.at(0);
    if (all) {
      std::vector<double> x;
      for (const auto& v : a) x.push_back(*v);
      if (auto r = Apply(fn, x, IsInteger(dtype))) {
        known[result.index] = *r;
        folded.insert(id.index);
      }
      return;
    }
    if (args.size() == 2 && (fn == "||" || fn == "&&")) {
      double absorbing = fn == "||" ? 1 : 0;
      for (int k = 0; k < 2; ++k) {
        if (!a[k]) continue;
        if ((*a[k] != 0) == (absorbing != 0)) {
          known[result.index] = absorbing;
          folded.insert(id.index);
        } else {
          alias[id.index] = args[1 - k];  // `x || false`, `x && true`
        }
        return;
      }
    }
    if (args.size() == 3 && fn == "select" && a[0]) alias[id.index] = *a[0] != 0 ? args[1] : args[2];
    if (args.size() == 3 && fn == "select" && true_masks.count(args[0].index)) alias[id.index] = args[1];
  };
  for (OpId id : loop.body) {
    const tile::Op& op = kernel.Get(id);
    if (const auto* s = std::get_if<tile::op::ScalarOp>(&op.node))
      fold(id, s->fn, s->args, kernel.Get(op.results[0]).dtype);
    if (const auto* m = std::get_if<tile::op::Map>(&op.node)) fold(id, m->fn, m->args, kernel.Get(op.results[0]).dtype);
  }
  // Liveness, backwards from the yields and the ops with effects.
  std::set<std::uint32_t> live_values;
  for (ValueId y : loop.yields) live_values.insert(y.index);
  std::set<std::uint32_t> free;
  for (auto it = loop.body.rbegin(); it != loop.body.rend(); ++it) {
    const tile::Op& op = kernel.Get(*it);
    bool effect = std::holds_alternative<tile::op::Mma>(op.node) || std::holds_alternative<tile::op::Store>(op.node) ||
                  std::holds_alternative<tile::op::ToShared>(op.node) ||
                  std::holds_alternative<tile::op::Loop>(op.node);
    bool live = effect;
    for (ValueId r : op.results) live = live || live_values.count(r.index);
    if (!live) {
      free.insert(it->index);
      continue;
    }
    if (auto a = alias.find(it->index); a != alias.end()) {
      free.insert(it->index);
      live_values.insert(a->second.index);
    } else if (folded.count(it->index)) {
      free.insert(it->index);
    } else {
      for (ValueId operand : tile::Operands(op)) live_values.insert(operand.index);
    }
  }
  // Zero fills that only a wgmma accumulates into: scale-d 0, no instructions.
  std::map<std::uint32_t, int> uses, acc_uses;
  for (const tile::Op& op : kernel.ops)
    for (ValueId v : tile::Operands(op)) ++uses[v.index];
  for (std::size_t i = 0; i < kernel.ops.size(); ++i)
    if (const auto* m = std::get_if<tile::op::Mma>(&kernel.ops[i].node))
      if (plan.ops[i].instruction.kind == InstructionKind::kWgmma) ++acc_uses[m->acc.index];
  for (OpId id : loop.body) {
    const tile::Op& op = kernel.Get(id);
    const auto* f = std::get_if<tile::op::Fill>(&op.node);
    if (!f) continue;
    ValueId r = op.results.at(0);
    auto zero = value_of(f->value);
    if (zero && *zero == 0 && acc_uses[r.index] > 0 && acc_uses[r.index] == uses[r.index]) free.insert(id.index);
  }
  return free;
}

// An elementwise op on 64-bit integers is two instructions of 32 bits.
bool Wide(const tile::Kernel& kernel, const tile::Op& op) {
  if (op.results.empty()) return false;
  if (kernel.Get(op.results[0]).dtype == Dtype::I64 && !std::holds_alternative<tile::op::Fill>(op.node)) return true;
  if (const auto* m = std::get_if<tile::op::Map>(&op.node))
    for (ValueId a : m->args)
      if (kernel.Get(a).dtype == Dtype::I64 && kernel.Get(a).space != tile::Space::Scalar) return true;
  return false;
}

struct VectorCycles {
  std::int64_t alu = 0, sfu = 0;
};

VectorCycles Vector(const tile::Kernel& kernel, const synth::Plan& plan, const Machine& machine,
                    const std::vector<OpId>& ops, const std::set<std::uint32_t>& free) {
  std::int64_t warps = std::max<std::int64_t>(1, plan.threads / 32);
  std::int64_t alu = 0, sfu = 0;
  for (OpId id : ops) {
    if (free.count(id.index)) continue;
    const tile::Op& op = kernel.Get(id);
    std::int64_t per_thread = plan.ops[id.index].instructions_per_thread * (Wide(kernel, op) ? 2 : 1);
    const auto* map = std::get_if<tile::op::Map>(&op.node);
    if (map && (map->fn == "exp" || map->fn == "tanh" || map->fn == "log" || map->fn == "rsqrt" || map->fn == "sqrt"))
      sfu += per_thread * plan.threads;
    alu += per_thread;
  }
  VectorCycles out;
  out.alu = (alu * warps + machine.smsps - 1) / machine.smsps;
  out.sfu = (sfu + machine.sfu_lanes - 1) / machine.sfu_lanes;
  return out;
}

// Whether node `n`'s result is read in the same iteration (a product waited for).
bool ReadNow(const Graph& g, int n) {
  for (const Edge& e : g.edges)
    if (e.from == n && e.distance == 0 && !e.release) return true;
  return false;
}

}  // namespace

std::set<std::uint32_t> DeferredProducts(const tile::Kernel& kernel, const synth::Plan& plan,
                                         const tile::op::Loop& loop, std::vector<std::size_t>* carried) {
  std::map<std::uint32_t, int> uses;
  for (const tile::Op& op : kernel.ops)
    for (tile::ValueId v : tile::Operands(op)) ++uses[v.index];
  std::set<std::uint32_t> out;
  for (std::size_t i = 0; i < loop.carried.size(); ++i) {
    tile::ValueId c = loop.carried[i], y = loop.yields.at(i);
    const tile::Value& yv = kernel.Get(y);
    if (!yv.def.valid() || std::find(loop.body.begin(), loop.body.end(), yv.def) == loop.body.end()) continue;
    const auto* m = std::get_if<tile::op::Mma>(&kernel.Get(yv.def).node);
    if (!m || m->acc != c || uses[c.index] != 1 || uses[y.index] != 1) continue;
    if (plan.ops.at(yv.def.index).instruction.kind != InstructionKind::kWgmma) continue;
    out.insert(yv.def.index);
    if (carried) carried->push_back(i);
  }
  return out;
}

bool WarpSpecializable(const tile::Kernel& kernel, const synth::Plan& plan, const tile::op::Loop& loop,
                       int blocks_per_sm) {
  if (plan.target != synth::Target::Sm90a || plan.threads % 128 || (plan.threads < 256 && blocks_per_sm < 2) ||
      plan.threads + 128 > 1024)
    return false;
  int pipelines = 0;
  for (tile::OpId id : kernel.body)
    if (const auto* l = std::get_if<tile::op::Loop>(&kernel.Get(id).node); l && l->pipelined) ++pipelines;
  if (pipelines != 1) return false;
  bool product = false;
  for (tile::OpId id : loop.body) {
    if (std::holds_alternative<tile::op::Loop>(kernel.Get(id).node)) return false;
    product = product || plan.ops.at(id.index).instruction.kind == InstructionKind::kWgmma;
  }
  return product;
}

bool ProducerLowerable(const tile::Kernel& kernel, const synth::Plan& plan, const Graph& graph, int blocks_per_sm) {
  const auto& loop = std::get<tile::op::Loop>(kernel.Get(graph.loop).node);
  if (!WarpSpecializable(kernel, plan, loop, blocks_per_sm)) return false;
  bool loads = false;
  for (const Node& n : graph.nodes)
    for (OpId id : n.ops)
      if (n.kind == NodeKind::kLoad) {
        loads = true;
        if (!synth::IsTma(plan.ops[id.index].instruction.kind)) return false;
      }
  return loads;
}

namespace {

// Predict's steps (cost.h) over what they share: each step one method, in order.
struct PredictionSteps {
  PredictionSteps(const tile::Kernel& k, const synth::Plan& pl, const LoopSchedule& lp, const Machine& m,
                  const CostInputs& in)
      : kernel(k),
        plan(pl),
        loop(lp),
        machine(m),
        inputs(in),
        l(std::get<tile::op::Loop>(k.Get(lp.graph.loop).node)),
        g(lp.graph) {
    p.machine = std::string(machine.name);
  }
  const tile::Kernel& kernel;
  const synth::Plan& plan;
  const LoopSchedule& loop;
  const Machine& machine;
  const CostInputs& inputs;
  const tile::op::Loop& l;
  const Graph& g;
  Prediction p;
  std::map<core::SizeVarId, std::int64_t> sizes;
  std::map<std::uint32_t, double> params, bools;  // scalar parameters, and the bool ones
  std::vector<std::int64_t> grid;
  std::optional<Scalars> scalars;
  std::vector<std::int64_t> trips, masked;  // per block evaluated: its iterations, those masked
  double scale = 1, total_trips = 0;
  bool specialized = false, tma = false, turns = false;
  int consumers = 1;
  std::optional<OpId> staged;
  std::set<std::uint32_t> masks;
  std::int64_t busiest = 0, busiest_folded = 0, issue = 0, issue_folded = 0;
  double folded = 0;

  std::int64_t Size(core::SizeVarId v) const {
    auto it = sizes.find(v);
    return it == sizes.end() ? inputs.default_size : it->second;
  }
  // Block b's indices (x fastest) to the scalars.
  void SetBlock(std::int64_t b) {
    std::vector<std::int64_t> index;
    for (std::int64_t extent : grid) {
      index.push_back(b % extent);
      b /= extent;
    }
    scalars->SetBlock(index);
  }

  void Sizes() {
    // 1. Sizes: given, else `default_size` (16 for a size that only ever indexes leading axes).
    for (const auto& [var, name] : kernel.size_names) {
      bool leading_only = true, seen = false;
      for (const tile::Param& param : kernel.params) {
        const tile::Value& v = kernel.Get(param.value);
        for (std::size_t axis = 0; axis < v.shape.size(); ++axis) {
          if (!v.shape[axis].Mentions(var)) continue;
          seen = true;
          if (axis + 2 >= v.shape.size()) leading_only = false;
        }
      }
      auto given = inputs.sizes.find(name);
      sizes[var] = given != inputs.sizes.end() ? given->second : seen && leading_only ? 16 : inputs.default_size;
      if (!p.sizes.empty()) p.sizes += ", ";
      p.sizes += name + " = " + std::to_string(sizes[var]);
    }
  }

  void ScalarParameters() {
    // Scalar parameters: given, else 0 (false). Bools are what codegen decides the body on.
    for (const tile::Param& param : kernel.params) {
      const tile::Value& v = kernel.Get(param.value);
      if (v.space == tile::Space::Global || param.out) continue;
      auto given = inputs.scalars.find(param.name);
      double x = given != inputs.scalars.end() ? given->second : 0.0;
      params[param.value.index] = x;
      if (v.dtype == Dtype::Bool) {
        bools[param.value.index] = x;
        p.sizes += (p.sizes.empty() ? "" : ", ") + param.name + " = " + (x != 0 ? "true" : "false");
      } else if (given != inputs.scalars.end()) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%g", x);
        p.sizes += (p.sizes.empty() ? "" : ", ") + param.name + " = " + buf;
      }
    }
  }

  void Trips() {
    // The grid, and each block's trip count (x fastest, the hardware's launch order).
    p.blocks = 1;
    for (const core::Dim& d : kernel.grid) {
      auto v = core::Evaluate(d, [this](core::SizeVarId x) { return Size(x); });
      grid.push_back(v ? std::max<std::int64_t>(1, *v) : 1);
      p.blocks *= grid.back();
    }
    scalars.emplace(
        kernel, [this](core::SizeVarId v) { return Size(v); }, params);
    constexpr std::int64_t kMaxBlocks = std::int64_t{1} << 20;
    bool unknown = false;
    std::int64_t evaluated = std::min(p.blocks, kMaxBlocks);
    trips.reserve(static_cast<std::size_t>(evaluated));
    for (std::int64_t b = 0; b < evaluated; ++b) {
      SetBlock(b);
      auto trip = scalars->Get(l.bound);
      if (!trip) {
        unknown = true;
        trips.push_back(64);
      } else {
        trips.push_back(std::max<std::int64_t>(0, static_cast<std::int64_t>(*trip)));
      }
    }
    if (unknown) p.note = "trip count unknown: 64 assumed";
    // Beyond kMaxBlocks blocks, the first ones stand for the rest (the time is scaled).
    scale = static_cast<double>(p.blocks) / static_cast<double>(std::max<std::int64_t>(1, evaluated));
    if (evaluated < p.blocks)
      p.note += std::string(p.note.empty() ? "" : "; ") + "the first " + std::to_string(evaluated) +
                " blocks stand for all " + std::to_string(p.blocks);
    p.trip = trips.empty() ? 0 : *std::max_element(trips.begin(), trips.end());
    p.trip_min = trips.empty() ? 0 : *std::min_element(trips.begin(), trips.end());
    for (std::int64_t t : trips) total_trips += static_cast<double>(t);
    p.trip_mean = trips.empty() ? 0 : total_trips / static_cast<double>(trips.size());
    for (const Node& n : g.nodes) p.flops += static_cast<double>(n.flops);
    p.flops *= total_trips * scale;
  }

  void Lowered() {
    // 2. What the loop lowers to.
    specialized = loop.producer;
    consumers = static_cast<int>(plan.threads / 128);
    tma = false;
    for (const Node& n : g.nodes)
      if (n.kind == NodeKind::kLoad && synth::IsTma(plan.ops[n.ops.front().index].instruction.kind)) tma = true;
    // The lowering's staged product (lowering.h), where the zeroed block it reads fits.
    if (auto product = specialized ? StagedProduct(kernel, plan, l) : std::nullopt;
        product && StagedBlockFits(plan, g.plan_stages))
      staged = product->first;
    turns = specialized && consumers == 2;  // schedule::LoweringOptions::ping_pong, on by default
    if (specialized) {
      p.lowered = "warp-specialized: " + std::to_string(consumers) + " consumer warpgroups " +
                  (turns ? "in ping-pong" : "in lock-step");
      if (staged)
        for (const Node& n : g.nodes)
          if (n.kind == NodeKind::kMma && std::find(n.ops.begin(), n.ops.end(), *staged) != n.ops.end())
            p.lowered += ", " + n.name + " staged behind the next iteration's first product";
    } else {
      p.lowered = tma ? "the TMA ring" : g.plan_stages > 1 ? "the cp.async ring" : "no ring";
    }
  }

  void Masks() {
    // 3. One iteration, with the masks codegen folds (codegen's AllTrue: the body emitted twice in a
    // TMA ring, warp-specialized or not) as they are, and all true; the iterations of each block that
    // need them as they are (causal attention: the diagonal key block).
    if (specialized || tma)
      for (OpId id : l.body)
        if (const auto* m = std::get_if<tile::op::Map>(&kernel.Get(id).node);
            m && m->fn == "select" && m->args.size() == 3) {
          const tile::Value& mask = kernel.Get(m->args[0]);
          if (mask.space == tile::Space::Reg && mask.def.valid() &&
              std::find(l.body.begin(), l.body.end(), mask.def) != l.body.end())
            masks.insert(m->args[0].index);
        }
    masked.assign(trips.size(), 0);
    for (std::size_t b = 0; b < trips.size() && !masks.empty(); ++b) {
      SetBlock(static_cast<std::int64_t>(b));
      for (std::int64_t j = 0; j < trips[b]; ++j) {
        scalars->SetCounter(l.counter, static_cast<double>(j));
        bool all = true;
        for (std::uint32_t mask : masks) all = all && AllTrue(kernel, *scalars, ValueId{mask});
        masked[b] += all ? 0 : 1;
      }
    }
  }

  // `busiest`: the busiest unit's cycles; `issue`: the vector work's, ALU and SFU together (their
  // instructions share the sub-partitions' issue slots).
  double Iteration(const std::set<std::uint32_t>& free, std::int64_t& busiest, std::int64_t& issue) const {
    std::array<std::int64_t, kUnits> unit{};
    for (const Node& n : g.nodes)
      for (int u = 0; u < kUnits; ++u)
        if (n.kind != NodeKind::kVector) unit[u] += n.occupancy[u];
    double chain = static_cast<double>(machine.barrier);
    double staged_busy = 0;  // the staged product's tensor-core cycles (whole block)
    double vector_all = 0;   // lock-step: the consumers' vector work, interleaved
    for (int k = 0; k < static_cast<int>(g.nodes.size()); ++k) {
      const Node& n = g.nodes[k];
      switch (n.kind) {
        case NodeKind::kLoad:
          if (!specialized) chain += static_cast<double>(n.issue);
          break;
        case NodeKind::kMma: {
          double busy = static_cast<double>(n.occupancy[static_cast<int>(Unit::kTensorCore)]);
          if (!specialized) {
            chain += static_cast<double>(n.async && ReadNow(g, k) ? n.latency : n.issue);
          } else if (staged && std::find(n.ops.begin(), n.ops.end(), *staged) != n.ops.end()) {
            staged_busy += busy;
          } else if (turns) {  // one warpgroup's share, in its turn (a named barrier), then waited for
            chain += busy / consumers + static_cast<double>(machine.mma_latency + machine.barrier);
          } else {  // the consumers wait for every product they issue, together
            chain += busy + static_cast<double>(machine.mma_latency);
          }
          break;
        }
        case NodeKind::kVector: {
          VectorCycles v = Vector(kernel, plan, machine, n.ops, free);
          unit[static_cast<int>(Unit::kAlu)] += v.alu;
          unit[static_cast<int>(Unit::kSfu)] += v.sfu;
          if (!specialized) {
            chain += static_cast<double>(v.alu + v.sfu);
          } else if (turns) {
            // One warpgroup's vector work while the other's products run: a lone warp on each
            // sub-partition, whose instructions issue `lone_warp_issue` cycles apart and whose ex2
            // the arithmetic that reads them waits for.
            chain += (static_cast<double>(v.alu) * machine.lone_warp_issue + static_cast<double>(v.sfu)) / consumers;
          } else {
            vector_all += static_cast<double>(std::max(v.alu, v.sfu));
          }
          break;
        }
        case NodeKind::kStore:
          chain += static_cast<double>(n.issue);
          break;
      }
    }
    if (specialized && turns) {
      // The staged product runs behind the warpgroup's first one, through its vector work; the body
      // waits for it before it reads the accumulator (charged in the chain at one warpgroup's share).
      chain += staged_busy / consumers;
    } else if (specialized) {
      // In lock-step the staged product overlaps the consumers' vector work.
      chain += std::max(vector_all, staged_busy);
    }
    busiest = 0;
    for (std::int64_t u : unit) busiest = std::max(busiest, u);
    issue = unit[static_cast<int>(Unit::kAlu)] + unit[static_cast<int>(Unit::kSfu)];
    return std::max(chain, static_cast<double>(busiest));
  }

  void Iterations() {
    p.iteration = Iteration(FreeOps(kernel, plan, l, bools), busiest, issue);
    folded =
        masks.empty() ? p.iteration : Iteration(FreeOps(kernel, plan, l, bools, masks), busiest_folded, issue_folded);
    if (masks.empty()) busiest_folded = busiest, issue_folded = issue;
    p.folded_iteration = folded;
    double masked_total = 0;
    for (std::int64_t x : masked) masked_total += static_cast<double>(x);
    p.masked = masks.empty() || trips.empty() ? 0 : masked_total / static_cast<double>(trips.size());
  }

  void Edges() {
    // 4. One block: the prologue and epilogue around the loop.
    double hbm_per_cycle = machine.hbm_bytes_per_second / static_cast<double>(machine.sms) / (machine.clock_ghz * 1e9);
    double before_bytes = 0, store_bytes = 0;
    std::vector<OpId> after;
    bool past = false;
    for (OpId id : kernel.body) {
      const tile::Op& op = kernel.Get(id);
      if (id == g.loop) {
        past = true;
        continue;
      }
      if (std::holds_alternative<tile::op::ToShared>(op.node) && !past) before_bytes += plan.ops[id.index].bytes;
      if (std::holds_alternative<tile::op::Store>(op.node)) store_bytes += plan.ops[id.index].bytes;
      const tile::OpNode& node = op.node;
      bool vector = std::holds_alternative<tile::op::Map>(node) || std::holds_alternative<tile::op::Reduce>(node) ||
                    std::holds_alternative<tile::op::Cast>(node) || std::holds_alternative<tile::op::Convert>(node) ||
                    std::holds_alternative<tile::op::Expand>(node);
      if (past && vector) after.push_back(id);
    }
    double iteration_bytes = 0;
    for (const Node& n : g.nodes)
      if (n.kind == NodeKind::kLoad) iteration_bytes += static_cast<double>(n.bytes);
    p.prologue = static_cast<double>(machine.copy_latency) + (before_bytes + iteration_bytes) / hbm_per_cycle;
    VectorCycles tail = Vector(kernel, plan, machine, after, {});
    p.epilogue = static_cast<double>(tail.alu + tail.sfu) + store_bytes / hbm_per_cycle;
  }

  void Blocks() {
    // 5. Blocks per SM, then the blocks to the SMs' slots in launch order.
    std::int64_t threads = plan.threads + (specialized ? 128 : 0);
    std::int64_t registers = specialized
                                 ? machine.registers_per_sm / std::max(1, plan.blocks_per_sm)  // setmaxnreg's budget
                                 : plan.threads * std::max<std::int64_t>(1, plan.registers_per_thread);
    std::int64_t shared = plan.shared_bytes;
    std::int64_t by_shared = shared > 0 ? (228 * 1024) / shared : 32;
    std::int64_t by_registers = registers > 0 ? machine.registers_per_sm / registers : 32;
    std::int64_t by_threads = 2048 / std::max<std::int64_t>(1, threads);
    p.blocks_per_sm =
        static_cast<int>(std::max<std::int64_t>(1, std::min({by_shared, by_registers, by_threads, std::int64_t{32}})));
    std::int64_t slots = machine.sms * p.blocks_per_sm;
    p.waves = static_cast<double>(p.blocks) / static_cast<double>(slots);
    // Blocks that share an SM share its units: an iteration takes at least b x the busiest unit, and
    // b x the vector work's issue (ALU and SFU instructions, one issue slot each, measured: two
    // blocks of one warpgroup's attention at head dim 64 ran 1.25-1.33x the units' bound alone).
    auto sharing = [&](double one, std::int64_t unit, std::int64_t vector) {
      std::int64_t b = p.blocks_per_sm;
      return std::max(one, static_cast<double>(b * (b > 1 ? std::max(unit, vector) : unit)));
    };
    double shared_iteration = sharing(p.iteration, busiest, issue);
    double shared_folded = sharing(folded, busiest_folded, issue_folded);
    std::priority_queue<double, std::vector<double>, std::greater<double>> free_at;
    for (std::int64_t s = 0; s < std::min<std::int64_t>(slots, static_cast<std::int64_t>(trips.size())); ++s)
      free_at.push(0);
    double end = 0;
    for (std::size_t b = 0; b < trips.size(); ++b) {
      double start = free_at.top();
      free_at.pop();
      double finish = start + p.prologue + static_cast<double>(masked[b]) * shared_iteration +
                      static_cast<double>(trips[b] - masked[b]) * shared_folded + p.epilogue;
      end = std::max(end, finish);
      free_at.push(finish);
    }
    p.schedule_seconds = machine.launch_seconds + end * scale / (machine.clock_ghz * 1e9);
  }

  void MemoryBound() {
    // 6. The memory bound.
    double bytes = 0;
    for (const tile::Param& param : kernel.params) {
      const tile::Value& v = kernel.Get(param.value);
      if (v.space != tile::Space::Global) continue;
      double elements = 1;
      for (const core::Dim& d : v.shape) {
        auto x = core::Evaluate(d, [this](core::SizeVarId v) { return Size(v); });
        elements *= x ? static_cast<double>(*x) : 1.0;
      }
      bytes += elements * Bits(v.dtype) / 8.0;
    }
    p.memory_seconds = bytes / machine.hbm_bytes_per_second;
    p.seconds = std::max(p.schedule_seconds, p.memory_seconds);
    p.bound = p.schedule_seconds >= p.memory_seconds ? "schedule" : "memory";
  }
};

}  // namespace

Prediction Predict(const tile::Kernel& kernel, const synth::Plan& plan, const LoopSchedule& loop,
                   const Machine& machine, const CostInputs& inputs) {
  PredictionSteps steps(kernel, plan, loop, machine, inputs);
  steps.Sizes();
  steps.ScalarParameters();
  steps.Trips();
  steps.Lowered();
  steps.Masks();
  steps.Iterations();
  steps.Edges();
  steps.Blocks();
  steps.MemoryBound();
  return steps.p;
}

}  // namespace weft::schedule
