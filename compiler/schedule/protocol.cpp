// The protocols of protocol.h and their explicit-state deadlock check.
#include "schedule/protocol.h"

#include <algorithm>
#include <unordered_set>

namespace weft::schedule {

std::string ProtocolCheck::ToString() const {
  if (deadlock_free)
    return "no deadlock (" + std::to_string(states) + " states" + (complete ? "" : ", cut short") + ")";
  std::string s = "deadlock:";
  for (std::size_t i = 0; i < blocked.size(); ++i) s += (i ? "; " : " ") + blocked[i];
  return s;
}

namespace {

Action Make(Action::Kind kind, int barrier, int iteration, std::string what) {
  Action a;
  a.kind = kind;
  a.barrier = barrier;
  a.iteration = iteration;
  a.what = std::move(what);
  return a;
}

std::string Slot(const char* name, int s) {
  return std::string(name) + "[" + std::to_string(s) + "]";
}

}  // namespace

Protocol TmaRingProtocol(int slots, int iterations, std::int64_t bytes) {
  Protocol p;
  p.name = "the sm_90a TMA ring";
  p.slots = slots;
  p.iterations = iterations;
  for (int s = 0; s < slots; ++s) p.barriers.push_back(Barrier{Slot("full", s), false, 1});
  int block = static_cast<int>(p.barriers.size());
  p.barriers.push_back(Barrier{"bar.sync 0", true, 2});
  ProtocolRole thread0{"thread 0", {}}, others{"other threads", {}};
  auto issue = [&](int it) {
    int s = it % slots;
    Action arm = Make(Action::kArriveExpectTx, s, it, "arrive.expect_tx " + Slot("full", s));
    arm.bytes = bytes;
    Action copy = Make(Action::kIssueTma, s, it, "TMA into slot " + std::to_string(s));
    copy.bytes = bytes;
    thread0.program.push_back(arm);
    thread0.program.push_back(copy);
  };
  for (int it = 0; it < std::min(slots - 1, iterations); ++it) issue(it);
  for (int it = 0; it < iterations; ++it) {
    int s = it % slots;
    for (ProtocolRole* r : {&thread0, &others}) {
      Action wait = Make(Action::kWait, s, it, "wait " + Slot("full", s));
      wait.parity = (it / slots) & 1;
      r->program.push_back(wait);
      r->program.push_back(Make(Action::kWork, -1, it, "body"));
      r->program.push_back(Make(Action::kBarSync, block, it, "bar.sync"));
    }
    if (it + slots - 1 < iterations) issue(it + slots - 1);
  }
  p.roles = {thread0, others};
  return p;
}

Protocol CpAsyncRingProtocol(int slots, int iterations) {
  Protocol p;
  p.name = "the sm_80 cp.async ring";
  p.slots = slots;
  p.iterations = iterations;
  p.barriers.push_back(Barrier{"bar.sync 0", true, 2});
  ProtocolRole warp0{"warp 0", {}}, others{"other warps", {}};
  for (ProtocolRole* r : {&warp0, &others}) {
    for (int it = 0; it < slots - 1; ++it) r->program.push_back(Make(Action::kIssueGroup, -1, it, "cp.async group"));
    for (int it = 0; it < iterations; ++it) {
      Action wait = Make(Action::kWaitGroup, -1, it, "cp.async.wait_group " + std::to_string(std::max(0, slots - 2)));
      wait.pending = std::max(0, slots - 2);
      r->program.push_back(wait);
      r->program.push_back(Make(Action::kBarSync, 0, it, "bar.sync"));
      r->program.push_back(Make(Action::kIssueGroup, -1, it + slots - 1, "cp.async group"));
      r->program.push_back(Make(Action::kWork, -1, it, "body"));
    }
  }
  p.roles = {warp0, others};
  return p;
}

Protocol WarpSpecializedProtocol(int slots, int iterations, int consumers, bool ping_pong, std::int64_t bytes,
                                 const WarpSpecializedDetail& detail) {
  Protocol p;
  p.name = "warp-specialized";
  p.slots = slots;
  p.iterations = iterations;
  int arrivals = std::max(1, detail.arrivals);
  for (int s = 0; s < slots; ++s) p.barriers.push_back(Barrier{Slot("full", s), false, 1});
  int empty0 = static_cast<int>(p.barriers.size());
  for (int s = 0; s < slots; ++s) p.barriers.push_back(Barrier{Slot("empty", s), false, consumers * arrivals});
  int turn0 = static_cast<int>(p.barriers.size());
  ping_pong = ping_pong && consumers == 2;
  if (ping_pong) {
    p.barriers.push_back(Barrier{"turn 0", true, 2});
    p.barriers.push_back(Barrier{"turn 1", true, 2});
  }
  ProtocolRole producer{"producer warp", {}};
  for (int it = 0; it < iterations; ++it) {
    int s = it % slots;
    Action wait = Make(Action::kWait, empty0 + s, it, "wait " + Slot("empty", s));
    wait.parity = ((it / slots) & 1) ^ 1;
    Action arm = Make(Action::kArriveExpectTx, s, it, "arrive.expect_tx " + Slot("full", s));
    arm.bytes = bytes;
    Action copy = Make(Action::kIssueTma, s, it, "TMA into slot " + std::to_string(s));
    copy.bytes = bytes;
    producer.program.insert(producer.program.end(), {wait, arm, copy});
  }
  p.roles.push_back(producer);
  for (int c = 0; c < consumers; ++c) {
    ProtocolRole consumer{"consumer warpgroup " + std::to_string(c), {}};
    if (ping_pong && c == 1) consumer.program.push_back(Make(Action::kBarArrive, turn0, 0, "bar.arrive turn 0"));
    auto release = [&](int it) {
      for (int a = 0; a < arrivals; ++a)
        consumer.program.push_back(
            Make(Action::kArrive, empty0 + it % slots, it, "arrive " + Slot("empty", it % slots)));
    };
    for (int it = 0; it < iterations; ++it) {
      int s = it % slots;
      Action wait = Make(Action::kWait, s, it, "wait " + Slot("full", s));
      wait.parity = (it / slots) & 1;
      consumer.program.push_back(wait);
      for (int t = 0; t < std::max(1, detail.turns); ++t) {
        if (ping_pong)
          consumer.program.push_back(Make(Action::kBarSync, turn0 + c, it, "bar.sync turn " + std::to_string(c)));
        consumer.program.push_back(Make(Action::kWork, -1, it, "products"));
        if (ping_pong)
          consumer.program.push_back(
              Make(Action::kBarArrive, turn0 + 1 - c, it, "bar.arrive turn " + std::to_string(1 - c)));
        consumer.program.push_back(Make(Action::kWork, -1, it, "vector work"));
      }
      if (!detail.release_previous)
        release(it);
      else if (it > 0)
        release(it - 1);
    }
    // Consumer 1's last hand-over, taken after the loop.
    if (ping_pong && c == 0)
      consumer.program.push_back(Make(Action::kBarSync, turn0, iterations, "bar.sync turn 0 (after the loop)"));
    p.roles.push_back(consumer);
  }
  return p;
}

namespace {

// The state of the search, flattened into integers (hashable as a string of bytes).
struct State {
  std::vector<std::int64_t> pc;                               // per role
  std::vector<std::int64_t> sync_gen;                         // per role: generation it waits past at a bar.sync, or -1
  std::vector<std::int64_t> groups;                           // per role: cp.async groups pending
  std::vector<std::int64_t> phase;                            // per barrier: completed phases (named: generation)
  std::vector<std::int64_t> pending;                          // per barrier: arrivals still expected in this phase
  std::vector<std::int64_t> tx;                               // per mbarrier: transaction bytes outstanding
  std::vector<std::pair<std::int64_t, std::int64_t>> copies;  // TMA in flight: (barrier, bytes), sorted

  std::string Key() const {
    std::string k;
    auto put = [&](const std::vector<std::int64_t>& v) {
      k.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(std::int64_t));
      k.push_back('|');
    };
    put(pc);
    put(sync_gen);
    put(groups);
    put(phase);
    put(pending);
    put(tx);
    for (auto [b, n] : copies) {
      k.append(reinterpret_cast<const char*>(&b), sizeof b);
      k.append(reinterpret_cast<const char*>(&n), sizeof n);
    }
    return k;
  }
};

class Search {
 public:
  explicit Search(const Protocol& p) : p_(p) {}

  ProtocolCheck Run(std::int64_t max_states) {
    ProtocolCheck out;
    State init;
    std::size_t roles = p_.roles.size(), bars = p_.barriers.size();
    init.pc.assign(roles, 0);
    init.sync_gen.assign(roles, -1);
    init.groups.assign(roles, 0);
    init.phase.assign(bars, 0);
    init.tx.assign(bars, 0);
    for (const Barrier& b : p_.barriers) init.pending.push_back(b.named ? 0 : b.count);
    std::vector<State> stack{init};
    std::unordered_set<std::string> seen{init.Key()};
    while (!stack.empty()) {
      State s = std::move(stack.back());
      stack.pop_back();
      std::vector<State> next = Successors(s);
      if (next.empty() && !Done(s)) {
        out.deadlock_free = false;
        out.states = static_cast<std::int64_t>(seen.size());
        for (std::size_t r = 0; r < roles; ++r) {
          if (s.pc[r] >= static_cast<std::int64_t>(p_.roles[r].program.size())) continue;
          const Action& a = p_.roles[r].program[s.pc[r]];
          std::string what = p_.roles[r].name + ": " + a.what;
          if (a.kind == Action::kWait) what += " parity " + std::to_string(a.parity);
          what += " (iteration " + std::to_string(a.iteration) + ")";
          out.blocked.push_back(what);
        }
        return out;
      }
      for (State& n : next) {
        if (static_cast<std::int64_t>(seen.size()) >= max_states) {
          out.complete = false;
          break;
        }
        if (seen.insert(n.Key()).second) stack.push_back(std::move(n));
      }
    }
    out.deadlock_free = true;
    out.states = static_cast<std::int64_t>(seen.size());
    return out;
  }

 private:
  bool Done(const State& s) const {
    for (std::size_t r = 0; r < p_.roles.size(); ++r)
      if (s.pc[r] < static_cast<std::int64_t>(p_.roles[r].program.size())) return false;
    return true;
  }
  // An mbarrier phase completes when no arrival and no byte is outstanding.
  void Settle(State& s, int b) const {
    if (s.pending[b] == 0 && s.tx[b] == 0) {
      s.phase[b] += 1;
      s.pending[b] = p_.barriers[b].count;
    }
  }
  // Arrival at named barrier b; true when this arrival completes the generation.
  void NamedArrive(State& s, int b) const {
    s.pending[b] += 1;
    if (s.pending[b] >= p_.barriers[b].count) {
      s.pending[b] = 0;
      s.phase[b] += 1;
    }
  }

  std::vector<State> Successors(const State& s) const {
    std::vector<State> out;
    // The copies in flight complete in any order.
    for (std::size_t i = 0; i < s.copies.size(); ++i) {
      if (i > 0 && s.copies[i] == s.copies[i - 1]) continue;
      State n = s;
      auto [b, bytes] = n.copies[i];
      n.copies.erase(n.copies.begin() + static_cast<std::ptrdiff_t>(i));
      n.tx[b] -= bytes;
      Settle(n, static_cast<int>(b));
      out.push_back(std::move(n));
    }
    for (std::size_t r = 0; r < p_.roles.size(); ++r) {
      // cp.async groups complete in order, at any time.
      if (s.groups[r] > 0) {
        State n = s;
        n.groups[r] -= 1;
        out.push_back(std::move(n));
      }
      if (s.pc[r] >= static_cast<std::int64_t>(p_.roles[r].program.size())) continue;
      const Action& a = p_.roles[r].program[s.pc[r]];
      State n = s;
      bool moves = true;
      switch (a.kind) {
        case Action::kArrive:
          n.pending[a.barrier] -= 1;
          Settle(n, a.barrier);
          break;
        case Action::kArriveExpectTx:
          n.tx[a.barrier] += a.bytes;
          n.pending[a.barrier] -= 1;
          Settle(n, a.barrier);
          break;
        case Action::kIssueTma:
          n.copies.push_back({a.barrier, a.bytes});
          std::sort(n.copies.begin(), n.copies.end());
          break;
        case Action::kWait:
          moves = (s.phase[a.barrier] & 1) != a.parity;
          break;
        case Action::kBarSync:
          if (s.sync_gen[r] < 0) {  // arrive, then wait for the generation to turn
            n.sync_gen[r] = s.phase[a.barrier];
            NamedArrive(n, a.barrier);
            out.push_back(std::move(n));
            continue;
          }
          moves = s.phase[a.barrier] > s.sync_gen[r];
          if (moves) n.sync_gen[r] = -1;
          break;
        case Action::kBarArrive:
          NamedArrive(n, a.barrier);
          break;
        case Action::kIssueGroup:
          n.groups[r] += 1;
          break;
        case Action::kWaitGroup:
          moves = s.groups[r] <= a.pending;
          break;
        case Action::kWork:
          break;
      }
      if (!moves) continue;
      n.pc[r] += 1;
      out.push_back(std::move(n));
    }
    return out;
  }

  const Protocol& p_;
};

}  // namespace

ProtocolCheck CheckProtocol(const Protocol& protocol, std::int64_t max_states) {
  // Work never blocks and touches nothing another role sees: running it at once, together with the
  // action before it, changes no interleaving that matters to a deadlock and saves most states.
  Protocol reduced = protocol;
  for (ProtocolRole& role : reduced.roles)
    std::erase_if(role.program, [](const Action& a) { return a.kind == Action::kWork; });
  return Search(reduced).Run(max_states);
}

}  // namespace weft::schedule
