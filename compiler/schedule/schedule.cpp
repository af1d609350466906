// Build: the modulo scheduler of schedule.h over solver::IntegerProgram (Z3's optimizer).
#include "schedule/schedule.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <numeric>

#include "solver/optimize.h"

namespace weft::schedule {

namespace {

using solver::IntegerProgram;
using solver::LinearConstraint;
using solver::LinearTerm;
using solver::OptimizeStatus;
using RelOp = core::RelOp;
using Clock = std::chrono::steady_clock;

// A role configuration (step 2 of schedule.h).
struct Config {
  bool specialized = false;  // a producer may issue the copies; consumers split the work by rows
  int consumers = 1;
};

// One node's share for one consumer warpgroup.
struct Instance {
  int node = 0;
  int copy = 0;
  int role = 0;  // fixed role: 0 = the block (today) or consumer `copy` + 1 (specialized); loads: see below
  std::array<std::int64_t, kUnits> occupancy{};
  std::int64_t issue = 0;
  std::int64_t latency = 0;
  bool load = false;
};

// Durations in units of `quantum` cycles, rounded up (the solver's problems stay small; the
// numbers are estimates far coarser than a few cycles anyway).
std::vector<Instance> Instances(const Graph& g, const Config& c, std::int64_t quantum = 1) {
  std::vector<Instance> out;
  for (int n = 0; n < static_cast<int>(g.nodes.size()); ++n) {
    const Node& node = g.nodes[n];
    int copies = c.specialized && node.splits ? c.consumers : 1;
    for (int k = 0; k < copies; ++k) {
      Instance i;
      i.node = n;
      i.copy = k;
      i.load = node.kind == NodeKind::kLoad;
      i.role = c.specialized ? 1 + k : 0;
      std::int64_t work = 0;
      for (int u = 0; u < kUnits; ++u) {
        i.occupancy[u] = (node.occupancy[u] + copies - 1) / copies;
        work = std::max(work, node.occupancy[u]);
      }
      if (node.kind == NodeKind::kVector) work = node.issue;
      i.issue = (node.issue + copies - 1) / copies;
      std::int64_t fixed = node.latency - work;
      i.latency = fixed + (work + copies - 1) / copies;
      auto up = [&](std::int64_t x) { return (x + quantum - 1) / quantum; };
      for (std::int64_t& x : i.occupancy) x = up(x);
      i.issue = up(i.issue);
      i.latency = up(i.latency);
      out.push_back(i);
    }
  }
  return out;
}

int Roles(const Config& c) {
  return c.specialized ? 1 + c.consumers : 1;
}

// Registers a consumer thread needs when `consumers` warpgroups share the plan's work by rows: the
// plan's estimate above a base of 16 scales with the rows each thread holds.
int ConsumerRegisters(const Graph& g, const Config& c) {
  if (!c.specialized) return g.registers;
  std::int64_t above = std::max(0, g.registers - 16);
  return static_cast<int>(16 + (above * g.plan_warpgroups + c.consumers - 1) / c.consumers);
}

int FloorTo8(int x) {
  return x / 8 * 8;
}

// The scheduler's time unit, in cycles.
constexpr std::int64_t kQuantum = 32;

struct Attempt {
  OptimizeStatus status = OptimizeStatus::kUnknown;
  std::vector<std::int64_t> values;
};

class Modulo {
 public:
  Modulo(const Graph& g, const Config& c, const Options& o, std::int64_t shared_budget,
         solver::Session* session = nullptr)
      : g_(g), c_(c), o_(o), shared_budget_(shared_budget), session_(session), inst_(Instances(g, c, kQuantum)) {}

  const std::vector<Instance>& instances() const { return inst_; }

  // The instance pairs an edge constrains: copies of two split nodes pair by warpgroup; an unsplit
  // node (a load) pairs with every copy.
  template <typename F>
  void ForEachPair(const Edge& e, F&& f) const {
    bool both_split = g_.nodes[e.from].splits && g_.nodes[e.to].splits;
    for (std::size_t a = 0; a < inst_.size(); ++a) {
      if (inst_[a].node != e.from) continue;
      for (std::size_t b = 0; b < inst_.size(); ++b)
        if (inst_[b].node == e.to && !(both_split && inst_[a].copy != inst_[b].copy)) f(a, b);
    }
  }

  // The deepest ring: the slots synthesis laid out (codegen's), within the shared-memory budget.
  int MaxRing() const {
    std::int64_t room = shared_budget_ - g_.fixed_shared_bytes;
    int slots = std::min(o_.max_stages, std::max(LeastRing(), g_.plan_stages));
    return static_cast<int>(std::clamp<std::int64_t>(room / (g_.stage_bytes + 16), 1, slots));
  }

  // Today's ring issues `stages - 1` iterations ahead, after the wait: one slot would wait for a
  // copy it has not issued (the deadlock check finds it). A producer warp can live with one.
  int LeastRing() const { return c_.specialized ? 1 : 2; }

  // True when the dependences admit II: no cycle whose latency exceeds II times its distance
  // (Bellman-Ford for a positive cycle in latency - distance * II), and the longest chain of one
  // iteration fits in the schedule's depth.
  bool Recurrences(std::int64_t ii) const {
    std::size_t n = inst_.size();
    std::vector<std::int64_t> dist(n, 0);
    std::vector<std::int64_t> longest(n, 0);
    int ring = MaxRing();
    for (std::size_t round = 0; round <= n; ++round) {
      bool changed = false;
      for (const Edge& e : g_.edges) {
        std::int64_t distance = e.release ? ring : e.distance;
        ForEachPair(e, [&](std::size_t a, std::size_t b) {
          std::int64_t w = inst_[a].latency - distance * ii;
          if (dist[a] + w > dist[b]) {
            dist[b] = dist[a] + w;
            changed = true;
          }
          if (distance == 0 && longest[a] + inst_[a].latency > longest[b]) longest[b] = longest[a] + inst_[a].latency;
        });
      }
      if (!changed) break;
      if (round == n) return false;
    }
    for (std::size_t k = 0; k < n; ++k)
      if (longest[k] >= ii * o_.max_stages) return false;
    return true;
  }

  // Lower bound on II: unit and role capacity, single operations, recurrences.
  std::int64_t MinII() const {
    std::int64_t lo = 1;
    std::array<std::int64_t, kUnits> unit{};
    std::vector<std::int64_t> role(Roles(c_), 0);
    std::int64_t latencies = 0;
    for (const Instance& i : inst_) {
      for (int u = 0; u < kUnits; ++u) {
        unit[u] += i.occupancy[u];
        lo = std::max(lo, i.occupancy[u]);
      }
      if (!i.load || !c_.specialized) role[i.role] += i.issue;
      lo = std::max(lo, i.issue);
      latencies += i.latency;
    }
    for (std::int64_t u : unit) lo = std::max(lo, u);
    for (std::int64_t r : role) lo = std::max(lo, r);
    std::int64_t hi = std::max(lo, latencies + 1);
    if (Recurrences(lo)) return lo;
    while (hi - lo > 1) {  // Recurrences(lo) is false, Recurrences(hi) true
      std::int64_t mid = lo + (hi - lo) / 2;
      (Recurrences(mid) ? hi : lo) = mid;
    }
    return hi;
  }

  // The feasibility problem at `ii`, with the objectives when `optimize`.
  Attempt Solve(std::int64_t ii, bool optimize, unsigned timeout_ms) {
    IntegerProgram p;
    int depth = o_.max_stages;
    offset_.clear();
    stage_.clear();
    for (std::size_t k = 0; k < inst_.size(); ++k) {
      offset_.push_back(p.Var("o" + std::to_string(k), 0, ii - 1));
      stage_.push_back(p.Var("s" + std::to_string(k), 0, depth - 1));
    }
    ring_ = p.Var("ring", LeastRing(), std::max(LeastRing(), MaxRing()));
    // Shared memory: the ring's slots (with two 8-byte mbarriers each) and the fixed tiles.
    p.Add(LinearConstraint{{{g_.stage_bytes + 16, ring_}}, RelOp::kLe, shared_budget_ - g_.fixed_shared_bytes});
    if (c_.specialized) {
      // The producer warp issues every copy, as codegen's does: at most II cycles of them.
      std::int64_t producer_busy = 0;
      for (const Instance& i : inst_)
        if (i.load) producer_busy += i.issue;
      if (producer_busy > ii) p.Add(LinearConstraint{{}, RelOp::kLe, -1});  // no schedule with a producer
    }
    auto time = [&](std::size_t k, std::int64_t sign) {
      return std::vector<LinearTerm>{{sign * ii, stage_[k]}, {sign, offset_[k]}};
    };
    // Dependences: t_b + distance * II - t_a >= latency_a.
    for (const Edge& e : g_.edges) {
      ForEachPair(e, [&](std::size_t a, std::size_t b) {
        std::vector<LinearTerm> terms = time(b, 1);
        for (const LinearTerm& t : time(a, -1)) terms.push_back(t);
        std::int64_t rhs = inst_[a].latency;
        if (e.release)
          terms.push_back({ii, ring_});
        else
          rhs -= e.distance * ii;
        p.Add(LinearConstraint{terms, RelOp::kGe, rhs});
      });
    }
    // Busy at most once at any time modulo II: units, and each role's issuing warps.
    auto disjoint = [&](std::size_t a, std::int64_t da, std::size_t b, std::int64_t db) {
      int order = p.Var("x" + std::to_string(p.size()), 0, 1);
      // order 1: a then b within the window; order 0: b then a.
      auto add = [&](int first, std::int64_t d_first, int second, std::int64_t d_second, int value) {
        std::vector<LinearTerm> t1{{1, offset_[first]}, {-1, offset_[second]}};
        std::vector<LinearTerm> t2{{1, offset_[second]}, {-1, offset_[first]}};
        p.Add(LinearConstraint{t1, RelOp::kLe, -d_first, order, value});
        p.Add(LinearConstraint{t2, RelOp::kLe, ii - d_second, order, value});
      };
      add(static_cast<int>(a), da, static_cast<int>(b), db, 1);
      add(static_cast<int>(b), db, static_cast<int>(a), da, 0);
    };
    // The tensor cores run one warpgroup's wgmma at a time: a disjunctive resource. The copy engine,
    // the ALUs and the SFUs interleave the instructions of every warp: throughput, at most II busy
    // cycles in each window of II.
    for (int u = 0; u < kUnits; ++u) {
      if (static_cast<Unit>(u) == Unit::kTensorCore) {
        for (std::size_t a = 0; a < inst_.size(); ++a)
          for (std::size_t b = a + 1; b < inst_.size(); ++b)
            if (inst_[a].occupancy[u] > 0 && inst_[b].occupancy[u] > 0)
              disjoint(a, inst_[a].occupancy[u], b, inst_[b].occupancy[u]);
      } else {
        std::int64_t sum = 0;
        for (const Instance& i : inst_) sum += i.occupancy[u];
        if (sum > ii) p.Add(LinearConstraint{{}, RelOp::kLe, -1});  // no schedule: II below capacity
      }
    }
    for (std::size_t a = 0; a < inst_.size(); ++a) {
      for (std::size_t b = a + 1; b < inst_.size(); ++b) {
        if (inst_[a].issue == 0 || inst_[b].issue == 0) continue;
        // The producer's copies: its capacity is the sum above.
        if (c_.specialized && (inst_[a].load || inst_[b].load)) continue;
        if (inst_[a].role != inst_[b].role) continue;
        disjoint(a, inst_[a].issue, b, inst_[b].issue);
      }
    }
    depth_ = p.Var("depth", 1, depth);
    for (std::size_t k = 0; k < inst_.size(); ++k) p.AddDifference(depth_, RelOp::kGe, stage_[k], 1);
    if (optimize) {
      p.Minimize({{1, ring_}});
      p.Minimize({{1, depth_}});
    }
    solver::OptimizeOptions options;
    options.timeout_ms = std::max(1u, timeout_ms);
    options.rlimit = o_.rlimit;
    auto r = p.Solve(options, session_);
    return Attempt{r.status, r.values};
  }

  // Fills `loop` from a model of the last Solve.
  void Read(const std::vector<std::int64_t>& v, std::int64_t ii, LoopSchedule& loop) const {
    loop.ii = ii * kQuantum;
    loop.ring_stages = static_cast<int>(v[ring_]);
    loop.depth = static_cast<int>(v[depth_]);
    loop.consumers = c_.specialized ? c_.consumers : 1;
    loop.producer = c_.specialized;
    loop.slots.clear();
    for (std::size_t k = 0; k < inst_.size(); ++k) {
      Slot s;
      s.node = inst_[k].node;
      s.copy = inst_[k].copy;
      s.role = inst_[k].role;
      if (c_.specialized && inst_[k].load) s.role = 0;  // the producer
      s.stage = static_cast<int>(v[stage_[k]]);
      s.offset = v[offset_[k]] * kQuantum;
      loop.slots.push_back(s);
    }
  }

 private:
  const Graph& g_;
  Config c_;
  const Options& o_;
  std::int64_t shared_budget_;
  solver::Session* session_;
  std::vector<Instance> inst_;
  std::vector<int> offset_, stage_;
  int ring_ = 0, depth_ = 0;
};

// The role list of a schedule (specialized: role 0 is the producer).
std::vector<Role> RolesOf(const Graph& g, const LoopSchedule& loop, bool specialized, int blocks_per_sm,
                          const Machine& machine) {
  std::vector<Role> roles;
  if (!specialized) {
    roles.push_back(Role{"block", static_cast<int>(std::max<std::int64_t>(1, g.threads / 32)), 0, 0});
  } else {
    int need = ConsumerRegisters(g, Config{true, loop.consumers});
    int producer_regs = 24;
    int consumer_regs = std::max(
        need,
        FloorTo8(std::min(
            255, (static_cast<int>(machine.registers_per_sm / 128 / blocks_per_sm) - producer_regs) / loop.consumers)));
    consumer_regs = std::min(consumer_regs, 240 + 8 * (loop.consumers == 1 ? 1 : 0));
    // setmaxnreg applies to whole warpgroups: the producer is a warpgroup of which one warp issues.
    roles.push_back(Role{"producer warpgroup", 4, producer_regs, 0});
    for (int c = 0; c < loop.consumers; ++c)
      roles.push_back(Role{"consumer warpgroup " + std::to_string(c), 4, consumer_regs, 0});
  }
  return roles;
}

void Finish(LoopSchedule& loop, const std::vector<Instance>& inst, const Machine& machine) {
  const Graph& g = loop.graph;
  for (std::size_t k = 0; k < loop.slots.size(); ++k) {
    const Slot& s = loop.slots[k];
    if (s.role < static_cast<int>(loop.roles.size())) loop.roles[s.role].busy += inst[k].issue;
    loop.length = std::max(loop.length, s.stage * loop.ii + s.offset + inst[k].latency);
  }
  // What bounds II: the busiest unit or role, else a recurrence.
  std::int64_t best = 0;
  loop.bound = "a dependence cycle";
  for (int u = 0; u < kUnits; ++u) {
    std::int64_t sum = 0;
    for (const Instance& i : inst) sum += i.occupancy[u];
    if (sum > best) {
      best = sum;
      loop.bound = std::string(Spelling(static_cast<Unit>(u)));
    }
  }
  for (const Role& r : loop.roles)
    if (r.busy > best) {
      best = r.busy;
      loop.bound = r.name;
    }
  if (best < loop.ii) loop.bound = best * 100 >= loop.ii * 97 ? loop.bound : "dependences (latency)";
  // Ping-pong: two consumers, and one's vector work overlaps the other's tensor-core work.
  loop.ping_pong = false;
  if (loop.consumers == 2) {
    auto overlap = [&](std::int64_t a0, std::int64_t a1, std::int64_t b0, std::int64_t b1) {
      for (std::int64_t shift : {-loop.ii, std::int64_t{0}, loop.ii})
        if (a0 < b1 + shift && b0 + shift < a1) return true;
      return false;
    };
    for (std::size_t a = 0; a < loop.slots.size(); ++a)
      for (std::size_t b = 0; b < loop.slots.size(); ++b) {
        const Slot& sa = loop.slots[a];
        const Slot& sb = loop.slots[b];
        if (g.nodes[sa.node].kind != NodeKind::kVector || g.nodes[sb.node].kind != NodeKind::kMma) continue;
        if (sa.copy == sb.copy || inst[a].issue == 0) continue;
        std::int64_t tc = inst[b].occupancy[static_cast<int>(Unit::kTensorCore)];
        if (overlap(sa.offset, sa.offset + inst[a].issue, sb.offset, sb.offset + tc)) loop.ping_pong = true;
      }
  }
  (void)machine;
}

// Today's codegen under the same model (step 5's fallback and the baseline explain prints): the
// whole block issues everything in program order; every wgmma whose result the iteration reads is
// waited for at once; one block barrier and thread 0's copies per iteration; loads `stages - 1`
// iterations ahead.
LoopSchedule DefaultSchedule(const Graph& g, const synth::Plan& plan, const Machine& machine) {
  LoopSchedule loop;
  loop.graph = g;
  loop.ring_stages = g.plan_stages;
  loop.depth = g.plan_stages;
  Config c{false, 1};
  auto inst = Instances(g, c);
  std::int64_t t = 0;
  std::array<std::int64_t, kUnits> unit{};
  std::int64_t issue_copies = 0;
  for (std::size_t k = 0; k < inst.size(); ++k) {
    const Node& n = g.nodes[inst[k].node];
    for (int u = 0; u < kUnits; ++u) unit[u] += inst[k].occupancy[u];
    Slot s{inst[k].node, 0, 0, 0, 0};
    if (n.kind == NodeKind::kLoad) {
      issue_copies += inst[k].issue;
      s.stage = 0;
      loop.slots.push_back(s);
      continue;
    }
    bool read_now = false;
    for (const Edge& e : g.edges)
      if (e.from == inst[k].node && e.distance == 0 && !e.release) read_now = true;
    s.stage = std::max(0, g.plan_stages - 1);
    s.offset = t;
    loop.slots.push_back(s);
    t += n.kind == NodeKind::kMma && n.async && read_now ? inst[k].latency : inst[k].issue;
  }
  t += machine.barrier + issue_copies;
  std::int64_t ii = t;
  for (std::int64_t u : unit) ii = std::max(ii, u);
  loop.ii = std::max<std::int64_t>(1, (ii + kQuantum - 1) / kQuantum * kQuantum);  // the solver's unit
  for (Slot& s : loop.slots) s.offset = std::min(s.offset, loop.ii - 1);
  loop.roles = RolesOf(g, loop, false, 1, machine);
  loop.default_ii = loop.ii;
  loop.default_stages = g.plan_stages;
  Finish(loop, inst, machine);
  (void)plan;
  return loop;
}

// Whether a loop's copies are TMA (else cp.async).
bool Tma(const Graph& g, const synth::Plan& plan) {
  bool tma = plan.target == synth::Target::Sm90a;
  for (const Node& n : g.nodes)
    for (tile::OpId id : n.ops)
      if (n.kind == NodeKind::kLoad && !synth::IsTma(plan.ops[id.index].instruction.kind)) tma = false;
  return tma;
}

// Today's codegen's protocol for a loop of `slots` ring slots, over enough iterations to wrap the
// ring twice.
Protocol TodaysProtocol(const Graph& g, const synth::Plan& plan) {
  int slots = std::max(1, g.plan_stages);
  return Tma(g, plan) ? TmaRingProtocol(slots, 2 * slots + 1, g.stage_bytes)
                      : CpAsyncRingProtocol(slots, 2 * slots + 1);
}

void Protocols(LoopSchedule& loop, const synth::Plan& plan) {
  int chosen = std::max(1, loop.ring_stages);
  std::int64_t bytes = loop.graph.stage_bytes;
  bool tma = Tma(loop.graph, plan);
  loop.default_protocol = TodaysProtocol(loop.graph, plan);
  loop.default_check = CheckProtocol(loop.default_protocol);
  int slots = loop.default_protocol.slots;
  if (loop.from_solver && loop.producer) {
    loop.protocol = WarpSpecializedProtocol(chosen, 2 * chosen + 1, loop.consumers, loop.ping_pong, bytes);
    loop.check = CheckProtocol(loop.protocol);
  } else if (loop.from_solver && chosen != slots) {
    loop.protocol = tma ? TmaRingProtocol(chosen, 2 * chosen + 1, bytes) : CpAsyncRingProtocol(chosen, 2 * chosen + 1);
    loop.check = CheckProtocol(loop.protocol);
  } else {
    loop.protocol = loop.default_protocol;
    loop.check = loop.default_check;
  }
}

// Step 2 to 5 of schedule.h for every `pipeline` of the kernel: out.loops and out.prediction.
void Solve(const tile::Kernel& kernel, const synth::Plan& plan, const Options& options,
           const std::function<std::string(Span)>& where, Schedule& out) {
  const Machine& machine = options.machine ? *options.machine : H100();
  auto started = Clock::now();
  auto left_ms = [&]() -> std::int64_t {
    auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started).count();
    return static_cast<std::int64_t>(options.time_limit_ms) - spent;
  };
  // One question may take half of what is left: a hard one (proving that no schedule exists at an
  // II) must not starve the rest; Z3's resource limit usually ends it first, deterministically.
  auto per_call = [&]() {
    return static_cast<unsigned>(std::clamp<std::int64_t>(left_ms() / 2, 1, options.time_limit_ms));
  };
  // A block's share of the multiprocessor: with two blocks, half its shared memory (less the 1 KiB
  // the hardware keeps a block) and half its registers.
  int blocks_per_sm =
      options.blocks_per_sm > 0 ? options.blocks_per_sm : std::max(1, MinBlocks(plan, options.lowering));
  std::int64_t shared_budget = plan.target == synth::Target::Sm80 ? 163 * 1024 : machine.shared_per_block;
  if (blocks_per_sm > 1) shared_budget = std::min(shared_budget, machine.shared_per_sm / blocks_per_sm - 1024);
  for (Graph& g : BuildGraphs(kernel, plan, machine, where)) {
    auto loop_started = Clock::now();
    solver::Session session;  // one Z3 context for this loop's questions: the same answers each time
    LoopSchedule fallback = DefaultSchedule(g, plan, machine);
    // The ring, and where codegen can lower one (ProducerLowerable), a producer warpgroup with the
    // block's warpgroups as its consumers.
    std::vector<Config> configs{{false, 1}};
    int consumers = static_cast<int>(plan.threads / 128);
    if (consumers <= options.max_consumers && ProducerLowerable(kernel, plan, g, blocks_per_sm))
      configs.push_back({true, consumers});
    std::optional<LoopSchedule> best;
    bool best_stages_optimal = false;
    bool all_decided = true;
    // The configurations in order of their lower bounds: the first answer prunes the rest.
    std::vector<std::pair<std::int64_t, Config>> order;
    for (const Config& config : configs) {
      if (config.specialized) {
        // Registers: the producer warpgroup at setmaxnreg 24 and the consumers at what they need (at
        // least kMinConsumerRegisters, at most setmaxnreg's 240 for two), within the block's share of
        // the file (512 a thread of a warpgroup, over the blocks a multiprocessor holds).
        int need = std::max(ConsumerRegisters(g, config), kMinConsumerRegisters);
        if (need > 240 + (config.consumers == 1 ? 8 : 0) || 24 + config.consumers * need > 512 / blocks_per_sm)
          continue;
      }
      order.push_back({Modulo(g, config, options, shared_budget).MinII(), config});
    }
    std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [lo, config] : order) {
      Modulo m(g, config, options, shared_budget, &session);
      if (best && lo * kQuantum > best->ii) continue;  // cannot win
      // Probe the lower bound (often feasible: then II is proved optimal at once), then find a
      // feasible II above it by doubling the distance, then bisect. `infeasible` is the largest II
      // known to have no schedule (proved), `feasible` the least with one.
      std::int64_t infeasible = lo - 1, feasible = -1, step = std::max<std::int64_t>(1, lo / 8);
      std::vector<std::int64_t> feasible_values;
      bool decided = true;
      for (std::int64_t ii = lo; ii <= 64 * lo + 4096; ii = lo + step, step *= 2) {
        if (left_ms() <= 0) {
          decided = false;
          break;
        }
        Attempt a = m.Solve(ii, false, per_call());
        if (a.status == OptimizeStatus::kOptimal || a.status == OptimizeStatus::kFeasible) {
          feasible = ii;
          feasible_values = a.values;
          break;
        }
        if (a.status == OptimizeStatus::kInfeasible && decided) infeasible = ii;
        if (a.status != OptimizeStatus::kInfeasible) decided = false;
      }
      if (feasible < 0) {
        all_decided = false;
        continue;
      }
      while (feasible - infeasible > 1 && left_ms() > 0) {
        std::int64_t mid = infeasible + (feasible - infeasible) / 2;
        Attempt a = m.Solve(mid, false, per_call());
        if (a.status == OptimizeStatus::kOptimal || a.status == OptimizeStatus::kFeasible) {
          feasible = mid;
          feasible_values = a.values;
        } else {
          if (a.status != OptimizeStatus::kInfeasible) decided = false;
          infeasible = mid;
        }
      }
      if (feasible - infeasible > 1) decided = false;
      // The stages at that II: the optimizer's least, or (out of time) the feasible model's.
      Attempt a{OptimizeStatus::kFeasible, feasible_values};
      if (left_ms() > 0) {
        Attempt o = m.Solve(feasible, true, per_call());
        if (o.status == OptimizeStatus::kOptimal || o.status == OptimizeStatus::kFeasible) a = o;
      }
      if (a.status != OptimizeStatus::kOptimal) all_decided = false;
      LoopSchedule s;
      s.graph = g;
      s.from_solver = true;
      m.Read(a.values, feasible, s);
      s.roles = RolesOf(g, s, config.specialized, blocks_per_sm, machine);
      s.optimal = decided && a.status == OptimizeStatus::kOptimal;
      all_decided = all_decided && s.optimal;
      Finish(s, Instances(g, config), machine);
      // Least II, then no producer (a producer warpgroup only where it shortens II: on a tie the
      // ring keeps the block's occupancy and registers), then ring depth, then schedule depth.
      auto key = [](const LoopSchedule& x) { return std::tuple(x.ii, x.producer, x.ring_stages, x.depth); };
      bool better = !best || key(s) < key(*best);
      if (better) {
        best_stages_optimal = a.status == OptimizeStatus::kOptimal;
        best = std::move(s);
      }
    }
    LoopSchedule chosen;
    if (best) {
      chosen = std::move(*best);
      // Proved optimal: II is the least over every configuration (all decided, or II meets the
      // least lower bound of them all) and the chosen one's stages are proved least at that II.
      bool at_bound = !order.empty() && chosen.ii <= order.front().first * kQuantum;
      chosen.optimal = (chosen.optimal && all_decided) || (at_bound && best_stages_optimal);
      if (!chosen.optimal && !all_decided)
        chosen.notes.push_back(
            "not every role configuration was decided within the solver's limits (Z3's "
            "resource limit a question, " +
            std::to_string(options.time_limit_ms) + " ms in all): not proved optimal");
    } else {
      chosen = fallback;
      chosen.notes.push_back("no schedule from the solver within " + std::to_string(options.time_limit_ms) +
                             " ms: the ring's schedule (the fallback) is used");
    }
    chosen.default_ii = fallback.ii;
    chosen.default_stages = fallback.ring_stages;
    Protocols(chosen, plan);
    chosen.seconds = std::chrono::duration<double>(Clock::now() - loop_started).count();
    out.loops.push_back(std::move(chosen));
  }
  if (!out.loops.empty()) out.prediction = Predict(kernel, plan, out.loops.front(), machine, options.cost);
}

}  // namespace

Schedule Build(const tile::Kernel& kernel, const synth::Plan& plan, const Options& options,
               const std::function<std::string(Span)>& where) {
  Schedule out;
  out.kernel = kernel.name;
  out.lowering.min_blocks = MinBlocks(plan, options.lowering);
  out.lowering.tma_store = options.lowering.tma_store && !options.lowering.persistent;
  if (plan.values.size() != kernel.values.size() || plan.ops.size() != kernel.ops.size())
    return out;  // not this kernel's plan: codegen says so
  // The warp roles, where all but the solver's answer allow them: the solver then decides.
  std::optional<WarpRoles> roles = WarpRolesCandidate(kernel, plan, options.lowering);
  if (options.solve_every_loop || roles) Solve(kernel, plan, options, where, out);
  if (roles) {
    bool producer = false;
    for (const LoopSchedule& l : out.loops)
      if (l.graph.loop == roles->loop) producer = l.producer;
    if (!producer) roles.reset();
  }
  out.lowering.roles = roles;
  out.lowering.rings = Rings(kernel, plan, out.lowering.roles);
  return out;
}

Options BuildOptions() {
  Options options;
  options.time_limit_ms = 60'000;
  options.solve_every_loop = false;
  return options;
}

}  // namespace weft::schedule
