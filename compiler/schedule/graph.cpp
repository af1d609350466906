// BuildGraphs: the steps are in graph.h.
#include "schedule/graph.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

namespace weft::schedule {

namespace {

using synth::InstructionKind;
using tile::OpId;
using tile::ValueId;

class Builder {
 public:
  Builder(const tile::Kernel& kernel, const synth::Plan& plan, const Machine& machine,
          const std::function<std::string(Span)>& where)
      : kernel_(kernel), plan_(plan), machine_(machine), where_(where) {}

  Graph Build(OpId loop_id) {
    graph_ = Graph{};
    graph_.loop = loop_id;
    graph_.where = Where(kernel_.Get(loop_id).span);
    loop_ = &std::get<tile::op::Loop>(kernel_.Get(loop_id).node);
    node_of_.clear();
    def_.clear();
    for (OpId id : loop_->body)
      for (ValueId r : kernel_.Get(id).results) def_[r.index] = id;
    Classify();
    Group();
    Edges();
    Memory();
    return std::move(graph_);
  }

 private:
  std::string Where(Span span) const { return where_ && span.valid() ? where_(span) : ""; }
  std::int64_t Warps() const { return std::max<std::int64_t>(1, plan_.threads / 32); }
  const synth::OpChoice& Choice(OpId id) const { return plan_.ops[id.index]; }
  // Cycles of `instructions` per thread issued by every warp, the warps spread over the SMSPs.
  std::int64_t IssueCycles(std::int64_t instructions) const {
    return (instructions * Warps() + machine_.smsps - 1) / machine_.smsps;
  }
  std::string TensorName(ValueId v) const {
    for (int depth = 0; depth < 8; ++depth) {
      const tile::Value& value = kernel_.Get(v);
      if (!value.name.empty() && value.space == tile::Space::Global) return value.name;
      if (!value.def.valid()) return value.name;
      const auto* view = std::get_if<tile::op::View>(&kernel_.Get(value.def).node);
      if (!view) return value.name;
      v = view->tensor;
    }
    return "";
  }
  // An op that costs nothing and belongs to no node: data flows through it.
  bool Free(OpId id) const {
    const tile::OpNode& node = kernel_.Get(id).node;
    if (std::holds_alternative<tile::op::ToRegs>(node)) return Choice(id).instruction.kind == InstructionKind::kNone;
    return std::holds_alternative<tile::op::View>(node) || std::holds_alternative<tile::op::Transpose>(node) ||
           std::holds_alternative<tile::op::ScalarOp>(node) || std::holds_alternative<tile::op::Constant>(node) ||
           std::holds_alternative<tile::op::Size>(node) || std::holds_alternative<tile::op::BlockIdx>(node) ||
           std::holds_alternative<tile::op::Loop>(node);
  }
  bool Vector(OpId id) const {
    const tile::OpNode& node = kernel_.Get(id).node;
    return !Free(id) && !std::holds_alternative<tile::op::ToShared>(node) &&
           !std::holds_alternative<tile::op::Mma>(node) && !std::holds_alternative<tile::op::Store>(node);
  }

  // "mma 13:18" with sources, else "mma 1", "mma 2" in body order.
  std::string MmaName(OpId id) const {
    std::string where = Where(kernel_.Get(id).span);
    if (!where.empty()) return "mma " + where;
    int k = 0;
    for (OpId o : loop_->body) {
      k += std::holds_alternative<tile::op::Mma>(kernel_.Get(o).node);
      if (o == id) break;
    }
    return "mma " + std::to_string(k);
  }

  int AddNode(Node node) {
    graph_.nodes.push_back(std::move(node));
    return static_cast<int>(graph_.nodes.size()) - 1;
  }

  // Steps 1 and 2: loads, products and stores.
  void Classify() {
    bool sm90 = plan_.target == synth::Target::Sm90a;
    for (OpId id : loop_->body) {
      const tile::Op& op = kernel_.Get(id);
      const synth::OpChoice& oc = Choice(id);
      Node n;
      n.ops = {id};
      if (const auto* s = std::get_if<tile::op::ToShared>(&op.node)) {
        n.kind = NodeKind::kLoad;
        n.name = "load " + TensorName(s->src);
        n.bytes = oc.bytes;
        n.splits = false;
        n.async = true;
        std::int64_t transfer = (oc.bytes + machine_.copy_bytes_per_cycle - 1) / machine_.copy_bytes_per_cycle;
        n.occupancy[static_cast<int>(Unit::kCopy)] = transfer;
        n.latency = machine_.copy_latency + transfer;
        n.issue = synth::IsTma(oc.instruction.kind) ? machine_.tma_issue + 10 * std::max(1, oc.tma_boxes)
                                                    : IssueCycles(oc.instructions_per_thread);
      } else if (const auto* m = std::get_if<tile::op::Mma>(&op.node)) {
        const tile::Value& a = kernel_.Get(m->a);
        const tile::Value& acc = kernel_.Get(m->acc);
        auto dim = [](const tile::Value& v, std::size_t i) { return v.shape[i].AsConstant().value_or(0); };
        n.kind = NodeKind::kMma;
        n.name = MmaName(id);
        n.flops = 2 * dim(acc, 0) * dim(acc, 1) * dim(a, 1);
        bool wgmma = sm90 && oc.instruction.kind == InstructionKind::kWgmma;
        std::int64_t rate = wgmma ? machine_.wgmma_flops_per_cycle : machine_.mma_sync_flops_per_cycle;
        std::int64_t busy = (n.flops + rate - 1) / rate;
        n.occupancy[static_cast<int>(Unit::kTensorCore)] = busy;
        n.async = wgmma;
        n.issue = wgmma ? 16 + 4 * oc.instructions_per_thread : busy;
        n.latency = busy + machine_.mma_latency;
      } else if (std::holds_alternative<tile::op::Store>(op.node)) {
        n.kind = NodeKind::kStore;
        n.name = "store";
        n.bytes = oc.bytes;
        n.occupancy[static_cast<int>(Unit::kCopy)] =
            (oc.bytes + machine_.copy_bytes_per_cycle - 1) / machine_.copy_bytes_per_cycle;
        n.issue = IssueCycles(oc.instructions_per_thread);
        n.latency = n.issue;
      } else {
        continue;
      }
      node_of_[id.index] = AddNode(std::move(n));
    }
  }

  // Step 3: vector work, grouped by the first operand it feeds.
  void Claim(ValueId v, int group, std::vector<std::vector<OpId>>& groups) {
    auto it = def_.find(v.index);
    if (it == def_.end()) return;
    OpId id = it->second;
    if (node_of_.count(id.index) || claimed_.count(id.index)) return;
    if (Vector(id)) {
      claimed_.insert(id.index);
      groups[group].push_back(id);
    } else if (!Free(id)) {
      return;
    }
    for (ValueId operand : tile::Operands(kernel_.Get(id))) Claim(operand, group, groups);
  }

  void Group() {
    claimed_.clear();
    std::vector<std::string> names;
    std::vector<std::vector<OpId>> groups;
    auto start = [&](std::string name) {
      names.push_back(std::move(name));
      groups.emplace_back();
      return static_cast<int>(groups.size()) - 1;
    };
    for (OpId id : loop_->body) {
      const tile::Op& op = kernel_.Get(id);
      if (const auto* m = std::get_if<tile::op::Mma>(&op.node)) {
        int operands = start("operands of " + MmaName(id));
        Claim(m->a, operands, groups);
        Claim(m->b, operands, groups);
        Claim(m->acc, start("accumulator of " + MmaName(id)), groups);
      } else if (const auto* s = std::get_if<tile::op::Store>(&op.node)) {
        Claim(s->src, start("stored values"), groups);
      }
    }
    int carried = start("carried values");
    for (ValueId y : loop_->yields) Claim(y, carried, groups);
    int rest = start("other vector work");
    for (OpId id : loop_->body)
      if (Vector(id) && !claimed_.count(id.index)) {
        claimed_.insert(id.index);
        groups[rest].push_back(id);
      }
    for (std::size_t g = 0; g < groups.size(); ++g) {
      if (groups[g].empty()) continue;
      Node n;
      n.kind = NodeKind::kVector;
      n.name = names[g];
      std::sort(groups[g].begin(), groups[g].end(), [](OpId a, OpId b) { return a.index < b.index; });
      n.ops = groups[g];
      std::int64_t alu = 0, sfu = 0;
      for (OpId id : n.ops) {
        std::int64_t per_thread = Choice(id).instructions_per_thread;
        const auto* map = std::get_if<tile::op::Map>(&kernel_.Get(id).node);
        if (map &&
            (map->fn == "exp" || map->fn == "tanh" || map->fn == "log" || map->fn == "rsqrt" || map->fn == "sqrt")) {
          sfu += per_thread * plan_.threads;
          alu += per_thread;  // exp is ex2.approx(x * log2 e): one multiply on the FP32 pipe
        } else {
          alu += per_thread;
        }
      }
      n.sfu_ops = sfu;
      n.alu_instructions = alu * Warps();
      std::int64_t alu_cycles = IssueCycles(alu);
      std::int64_t sfu_cycles = (sfu + machine_.sfu_lanes - 1) / machine_.sfu_lanes;
      n.occupancy[static_cast<int>(Unit::kAlu)] = alu_cycles;
      n.occupancy[static_cast<int>(Unit::kSfu)] = sfu_cycles;
      // One warp per SMSP issues in order: the SFU's ex2 and the ALU's work of a warp do not overlap
      // much within one warpgroup (dependent chains), so its timeline holds both.
      n.issue = alu_cycles + sfu_cycles;
      n.latency = n.issue + machine_.alu_latency;
      int index = AddNode(std::move(n));
      for (OpId id : graph_.nodes[index].ops) node_of_[id.index] = index;
    }
  }

  // The nodes (with distances) whose results `v` carries into its reader.
  void Sources(ValueId v, int distance, std::set<std::pair<int, int>>& out, int depth = 0) {
    if (depth > 16 || distance > 1) return;
    auto it = def_.find(v.index);
    if (it != def_.end()) {
      auto n = node_of_.find(it->second.index);
      if (n != node_of_.end()) {
        out.insert({n->second, distance});
        return;
      }
      for (ValueId operand : tile::Operands(kernel_.Get(it->second))) Sources(operand, distance, out, depth + 1);
      return;
    }
    for (std::size_t c = 0; c < loop_->carried.size(); ++c)
      if (loop_->carried[c] == v) Sources(loop_->yields[c], distance + 1, out, depth + 1);
  }

  // Step 4.
  void Edges() {
    std::set<std::tuple<int, int, int>> seen;
    for (int to = 0; to < static_cast<int>(graph_.nodes.size()); ++to) {
      for (OpId id : graph_.nodes[to].ops) {
        for (ValueId operand : tile::Operands(kernel_.Get(id))) {
          std::set<std::pair<int, int>> sources;
          Sources(operand, 0, sources);
          for (auto [from, distance] : sources) {
            if (from == to && distance == 0) continue;
            if (!seen.insert({from, to, distance}).second) continue;
            const tile::Value& value = kernel_.Get(operand);
            std::string why = value.name.empty() ? "%" + std::to_string(operand.index) : value.name;
            graph_.edges.push_back(Edge{from, to, distance, false, why});
          }
        }
      }
    }
    std::vector<Edge> releases;
    for (const Edge& e : graph_.edges)
      if (graph_.nodes[e.from].kind == NodeKind::kLoad && e.distance == 0)
        releases.push_back(Edge{e.to, e.from, 0, true, "slot of " + graph_.nodes[e.from].name.substr(5)});
    graph_.edges.insert(graph_.edges.end(), releases.begin(), releases.end());
  }

  void Memory() {
    std::int64_t ring = 0;
    for (const Node& n : graph_.nodes) {
      if (n.kind != NodeKind::kLoad) continue;
      ValueId s = kernel_.Get(n.ops.front()).results.front();
      const synth::ValueChoice& vc = plan_.values[s.index];
      graph_.stage_bytes += vc.stage_bytes;
      ring += vc.stage_bytes * vc.stages;
      graph_.plan_stages = std::max(graph_.plan_stages, vc.stages);
    }
    graph_.fixed_shared_bytes = plan_.shared_bytes - ring;
    graph_.registers = plan_.registers_per_thread;
    graph_.threads = plan_.threads;
    graph_.plan_warpgroups = static_cast<int>(std::max<std::int64_t>(1, plan_.threads / 128));
  }

  const tile::Kernel& kernel_;
  const synth::Plan& plan_;
  const Machine& machine_;
  const std::function<std::string(Span)>& where_;
  const tile::op::Loop* loop_ = nullptr;
  Graph graph_;
  std::map<std::uint32_t, int> node_of_;  // op index -> node
  std::map<std::uint32_t, OpId> def_;     // value index -> body op defining it
  std::set<std::uint32_t> claimed_;
};

}  // namespace

std::vector<Graph> BuildGraphs(const tile::Kernel& kernel, const synth::Plan& plan, const Machine& machine,
                               const std::function<std::string(Span)>& where) {
  std::vector<Graph> out;
  Builder builder(kernel, plan, machine, where);
  for (std::uint32_t i = 0; i < kernel.ops.size(); ++i) {
    const auto* loop = std::get_if<tile::op::Loop>(&kernel.ops[i].node);
    if (loop && loop->pipelined) out.push_back(builder.Build(OpId(i)));
  }
  return out;
}

}  // namespace weft::schedule
