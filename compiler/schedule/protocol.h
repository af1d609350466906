// The barrier protocol of a pipelined loop and a static check that it cannot deadlock.
//
// A protocol is a few roles (thread 0, the rest of the block; or a producer warp and consumer
// warpgroups), each a straight-line program of k iterations unrolled, over mbarriers (arrival count,
// transaction bytes, phase parity), named barriers (bar.sync / bar.arrive with a thread count) and
// asynchronous copies (TMA completing bytes on an mbarrier; cp.async groups). Semantics, as the PTX
// ISA states them:
//   - mbarrier.arrive decrements the pending arrivals; arrive.expect_tx also adds bytes to the
//     transaction count; a TMA copy's completion subtracts its bytes. When both reach zero the phase
//     completes: the phase number advances and the arrivals are re-armed to the barrier's count.
//   - try_wait.parity(p) passes once the phase with parity p has completed: when the current phase's
//     parity differs from p. (So waiting with the parity of a phase two back passes at once, and
//     waiting with the wrong one blocks until the next phase completes, maybe never.)
//   - bar.sync(id, n) blocks until n threads have arrived at barrier id (bar.arrive arrives without
//     waiting); then the barrier resets.
//   - cp.async.wait_group(n) blocks until at most n of the thread's groups are pending.
// The check (CheckProtocol) is an explicit-state search over every interleaving of the roles and of
// the copies' completions: states are the roles' program counters, every barrier's state and the
// copies in flight; a state where some role has not finished and nothing can move is a deadlock,
// reported with the wait each blocked role is stuck at. With k = 2 * slots + 1 iterations every slot
// is reused at both parities; the state space is small (thousands of states). docs/scheduling.md says
// why an explicit search rather than Z3.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace weft::schedule {

struct Barrier {
  std::string name;    // "full[1]", "empty[0]", "bar 1"
  bool named = false;  // a named barrier (bar.sync) rather than an mbarrier
  int count = 1;       // mbarrier: arrivals per phase; named: participants (roles) per generation
};

struct Action {
  enum Kind : std::uint8_t {
    kArrive,          // mbarrier.arrive on `barrier`
    kArriveExpectTx,  // mbarrier.arrive.expect_tx `bytes`
    kIssueTma,        // cp.async.bulk.tensor completing `bytes` on `barrier`
    kWait,            // mbarrier.try_wait.parity `parity` (spins)
    kBarSync,         // bar.sync on named `barrier`
    kBarArrive,       // bar.arrive on named `barrier`
    kIssueGroup,      // cp.async copies + commit_group
    kWaitGroup,       // cp.async.wait_group `pending`
    kWork,            // anything else (products, softmax): never blocks
  };
  Kind kind = kWork;
  int barrier = -1;
  int parity = 0;
  std::int64_t bytes = 0;
  int pending = 0;
  int iteration = 0;
  std::string what;  // "wait full[it % 2] for tile k"
};

struct ProtocolRole {
  std::string name;
  std::vector<Action> program;
};

struct Protocol {
  std::string name;  // "the sm_90a TMA ring", "warp-specialized"
  std::vector<Barrier> barriers;
  std::vector<ProtocolRole> roles;
  int slots = 0;
  int iterations = 0;
};

struct ProtocolCheck {
  bool deadlock_free = false;
  bool complete = true;  // the search visited every state (false: the state limit cut it)
  std::int64_t states = 0;
  // A deadlock: each blocked role and the action it waits at ("consumer warpgroup 0: wait full[0]
  // parity 1 (iteration 2)").
  std::vector<std::string> blocked;
  std::string ToString() const;
};

// Today's sm_90a codegen (docs/codegen.md): thread 0 initializes one mbarrier per slot, arms and
// issues iterations 0..slots-2; iteration `it` waits on slot it % slots with parity (it / slots) & 1,
// works, syncs the block, then thread 0 arms and issues iteration it + slots - 1.
Protocol TmaRingProtocol(int slots, int iterations, std::int64_t bytes);
// Today's sm_80 codegen: cp.async groups `slots - 1` ahead, wait_group(slots - 2), one bar.sync.
Protocol CpAsyncRingProtocol(int slots, int iterations);
// The warp-specialized lowering of a schedule (codegen/device.cpp): a producer warp waits empty[s]
// (parity flipped: the first round passes), arms full[s] with the stage's bytes and issues the
// copies; each of `consumers` warpgroups waits full[s] with parity (it / slots) & 1, works, and
// arrives on empty[s] (`arrivals` times: once per warp; count = consumers * arrivals), or, with
// `release_previous` (products still reading the slot after the body), on the previous iteration's
// slot. With two consumers in ping-pong, named barriers hand the tensor cores from one to the
// other `turns` times an iteration: consumer c waits bar c before its products and arrives on
// bar 1 - c after issuing them; consumer 1 hands consumer 0 the first turn before the loop, and
// consumer 0 takes consumer 1's last hand-over after it.
struct WarpSpecializedDetail {
  int arrivals = 1;
  bool release_previous = false;
  int turns = 1;
};
Protocol WarpSpecializedProtocol(int slots, int iterations, int consumers, bool ping_pong, std::int64_t bytes,
                                 const WarpSpecializedDetail& detail = {});

ProtocolCheck CheckProtocol(const Protocol& protocol, std::int64_t max_states = 2'000'000);

}  // namespace weft::schedule
