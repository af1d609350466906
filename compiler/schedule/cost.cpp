// Predict: the steps are in cost.h.
#include "schedule/cost.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "schedule/schedule.h"

namespace weft::schedule {

namespace {

using tile::ValueId;

// Scalars of the kernel at given sizes: block indices 0, scalar parameters 0 (false).
class Scalars {
 public:
  Scalars(const tile::Kernel& kernel, std::function<std::int64_t(core::SizeVarId)> size)
      : kernel_(kernel), size_(std::move(size)) {}

  std::optional<double> Get(ValueId v, int depth = 0) {
    if (depth > 64) return std::nullopt;
    const tile::Value& value = kernel_.Get(v);
    if (!value.def.valid()) return 0.0;  // a scalar parameter
    const tile::OpNode& node = kernel_.Get(value.def).node;
    if (const auto* c = std::get_if<tile::op::Constant>(&node)) {
      return std::visit([](auto x) { return static_cast<double>(x); }, c->value);
    }
    if (const auto* s = std::get_if<tile::op::Size>(&node)) {
      auto r = core::Evaluate(s->dim, size_);
      if (!r) return std::nullopt;
      return static_cast<double>(*r);
    }
    if (std::holds_alternative<tile::op::BlockIdx>(node)) return 0.0;
    const auto* op = std::get_if<tile::op::ScalarOp>(&node);
    if (!op) return std::nullopt;
    std::vector<double> a;
    for (ValueId arg : op->args) {
      auto x = Get(arg, depth + 1);
      if (!x) return std::nullopt;
      a.push_back(*x);
    }
    const std::string& f = op->fn;
    bool integer = IsInteger(value.dtype);
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
    return std::nullopt;
  }

 private:
  static bool IsInteger(Dtype d) { return d != Dtype::F32 && d != Dtype::F64 && d != Dtype::F16 && d != Dtype::BF16; }
  const tile::Kernel& kernel_;
  std::function<std::int64_t(core::SizeVarId)> size_;
};

double DtypeBytes(Dtype d) {
  return Bits(d) / 8.0;
}

}  // namespace

Prediction Predict(const tile::Kernel& kernel, const synth::Plan& plan, const LoopSchedule& loop,
                   const Machine& machine, std::int64_t default_size) {
  Prediction p;
  // A size that only ever indexes leading axes (a batch of heads, `bh`) is 16, not `default_size`.
  std::map<core::SizeVarId, std::int64_t> sizes;
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
    sizes[var] = seen && leading_only ? 16 : default_size;
    if (!p.sizes.empty()) p.sizes += ", ";
    p.sizes += name + " = " + std::to_string(sizes[var]);
  }
  auto size = [&](core::SizeVarId v) {
    auto it = sizes.find(v);
    return it == sizes.end() ? default_size : it->second;
  };
  // 1. Blocks and trip count.
  p.blocks = 1;
  for (const core::Dim& d : kernel.grid) {
    auto v = core::Evaluate(d, size);
    p.blocks *= v ? std::max<std::int64_t>(1, *v) : 1;
  }
  const auto& l = std::get<tile::op::Loop>(kernel.Get(loop.graph.loop).node);
  Scalars scalars(kernel, size);
  auto trip = scalars.Get(l.bound);
  if (trip && *trip >= 1) {
    p.trip = static_cast<std::int64_t>(*trip);
  } else {
    p.trip = 64;
    p.note = "trip count unknown: 64 assumed";
  }
  // 2. Blocks per SM.
  std::int64_t threads = 0, registers = 0;
  for (const Role& r : loop.roles) {
    threads += 32 * r.warps;
    registers += 32 * r.warps * (r.registers > 0 ? r.registers : loop.graph.registers);
  }
  if (threads == 0) threads = plan.threads;
  if (registers == 0) registers = plan.threads * plan.registers_per_thread;
  std::int64_t shared = loop.graph.fixed_shared_bytes + loop.ring_stages * loop.graph.stage_bytes;
  std::int64_t by_shared = shared > 0 ? (228 * 1024) / shared : 32;
  std::int64_t by_registers = registers > 0 ? machine.registers_per_sm / registers : 32;
  std::int64_t by_threads = 2048 / std::max<std::int64_t>(1, threads);
  p.blocks_per_sm =
      static_cast<int>(std::max<std::int64_t>(1, std::min({by_shared, by_registers, by_threads, std::int64_t{32}})));
  // 3. One block.
  std::int64_t store_bytes = 0;
  for (std::size_t i = 0; i < kernel.ops.size(); ++i)
    if (std::holds_alternative<tile::op::Store>(kernel.ops[i].node)) store_bytes += plan.ops[i].bytes;
  double block_cycles = static_cast<double>(loop.length) + static_cast<double>(p.trip - 1) * loop.ii +
                        static_cast<double>(store_bytes) / machine.copy_bytes_per_cycle;
  // 4. Waves.
  std::int64_t unit_busy = 0;
  for (int u = 0; u < kUnits; ++u) {
    std::int64_t sum = 0;
    for (const Node& n : loop.graph.nodes) sum += n.occupancy[u];
    unit_busy = std::max(unit_busy, sum);
  }
  double wave_cycles = std::max(block_cycles, static_cast<double>(p.blocks_per_sm) * p.trip * unit_busy);
  p.waves = (p.blocks + machine.sms * p.blocks_per_sm - 1) / (machine.sms * p.blocks_per_sm);
  p.schedule_seconds = p.waves * wave_cycles / (machine.clock_ghz * 1e9);
  // 5. Memory.
  double bytes = 0;
  for (const tile::Param& param : kernel.params) {
    const tile::Value& v = kernel.Get(param.value);
    if (v.space != tile::Space::Global) continue;
    double elements = 1;
    for (const core::Dim& d : v.shape) {
      auto x = core::Evaluate(d, size);
      elements *= x ? static_cast<double>(*x) : 1.0;
    }
    bytes += elements * DtypeBytes(v.dtype);
  }
  p.memory_seconds = bytes / machine.hbm_bytes_per_second;
  for (const Node& n : loop.graph.nodes) p.flops += static_cast<double>(n.flops);
  p.flops *= static_cast<double>(p.trip) * static_cast<double>(p.blocks);
  p.seconds = std::max(p.schedule_seconds, p.memory_seconds);
  p.bound = p.schedule_seconds >= p.memory_seconds ? "schedule" : "memory";
  return p;
}

}  // namespace weft::schedule
