// Software pipelining and warp specialization of a kernel's `pipeline` loops: the phase between
// layout synthesis (synth/) and code generation. A tile::Kernel and its synth::Plan in, a
// schedule::Schedule out: for each `pipeline`, its dependence graph (graph.h), a modulo schedule with
// warp roles found by Z3's optimizer, the barrier protocol that schedule lowers to with its
// deadlock check (protocol.h), and the predicted time (cost.h). docs/scheduling.md explains the
// model; `weft explain` prints it (Print below).
//
// The algorithm (Twill's formulation, docs/scheduling.md "The solver"):
//   1. Build the dependence graph of each `pipeline` (graph.h).
//   2. For each role configuration codegen can lower (the ring: the whole block issues everything;
//      where ProducerLowerable holds, warp-specialized: a producer warpgroup for the copies and the
//      block's warpgroups as its consumers, the products and vector work split between them by
//      rows), find the least initiation interval II by bisection over feasibility problems: offsets
//      and stages of every operation instance with II fixed (then every constraint is linear),
//      dependence latencies across iterations, each unit and each role's issuing warps busy at most
//      once at any time modulo II, the ring's depth (stages) within the block's share of shared
//      memory and the slot-release edges, registers within the block's share of the register file
//      after setmaxnreg (consumers at least kMinConsumerRegisters). The producer issues every copy,
//      as codegen's does.
//   3. At the least II, minimize lexicographically: the ring's depth, then the schedule's depth.
//   4. Across configurations, the least II wins; on a tie the ring (a producer only where it
//      shortens II), then the fewer stages. The lowering (lowering.h, Schedule::lowering) takes the
//      winner's roles, with the plan's ring depth, at least the schedule's (a deeper ring only
//      loosens the slot-release edges); codegen lowers that.
//   5. Without an answer within the time limit: the ring's schedule, with a note saying so.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "schedule/cost.h"
#include "schedule/graph.h"
#include "schedule/lowering.h"
#include "schedule/machine.h"
#include "schedule/protocol.h"
#include "synth/plan.h"
#include "tile/ir.h"

namespace weft::schedule {

struct Options {
  unsigned time_limit_ms = 2000;  // for the whole kernel's solver calls
  // Z3's resource limit for each call: answers depend on it, not on the machine's speed or load,
  // as long as the time limit is not reached first (then the answer says so).
  unsigned rlimit = 3'000'000;
  int max_stages = 8;     // ring depth searched (shared memory bounds it too)
  int max_consumers = 2;  // consumer warpgroups a producer may have
  // Blocks a multiprocessor holds (their shares of registers and shared memory bound each block's
  // schedule); 0: the plan's (synth::Plan::blocks_per_sm), as codegen launches it.
  int blocks_per_sm = 0;
  const Machine* machine = nullptr;  // default: H100 (the cost model's machine too)
  // The sizes and scalar parameters at which the cost model predicts the time (`weft explain
  // --size/--scalar`; cost.h, step 1): by name; a size not named is `default_size` (16 for one that
  // only indexes leading axes), a scalar 0 or false.
  CostInputs cost;
  // The choices of the lowering (lowering.h) that callers vary.
  LoweringOptions lowering;
  // Every `pipeline` solved (`weft explain` prints each one's schedule); off (`weft build`), the
  // solver runs only where a decision rests on its answer: whether a producer warpgroup pays.
  bool solve_every_loop = true;
};

// What `weft build` schedules with: each of Z3's questions ends at its resource limit, so the same
// kernel always gets the same schedule; the time limit only bounds a runaway (then the ring, and
// the answer says so). `weft explain` asks with these too, but solves every loop.
Options BuildOptions();

// Where one instance of a node runs: role, stage and offset within the II window.
struct Slot {
  int node = 0;
  int copy = 0;  // which consumer warpgroup's share (0 for unsplit nodes)
  int role = 0;  // index into LoopSchedule::roles
  int stage = 0;
  std::int64_t offset = 0;  // cycles within [0, II)
};

struct Role {
  std::string name;  // "producer warp", "consumer warpgroup 0", "block" (today's)
  int warps = 4;
  int registers = 0;      // setmaxnreg value (0: none; today's code keeps the launch's)
  std::int64_t busy = 0;  // issue cycles per II
};

struct LoopSchedule {
  Graph graph;
  std::vector<Role> roles;
  std::vector<Slot> slots;
  std::int64_t ii = 0;          // initiation interval, cycles
  std::string bound;            // what limits II: "tensor cores", "consumer warpgroup 0", "recurrence"
  int ring_stages = 1;          // ring slots per loaded tile
  int depth = 1;                // stages of the modulo schedule (max stage + 1)
  int consumers = 1;            // consumer warpgroups
  bool producer = false;        // a producer warp issues the copies
  bool ping_pong = false;       // two consumers whose tensor-core work alternates
  bool from_solver = false;     // false: the ring's schedule (the default)
  bool optimal = false;         // proved optimal within the model (all configurations decided)
  std::int64_t length = 0;      // cycles from the first op of iteration 0 to its last result
  std::int64_t default_ii = 0;  // today's codegen's II under the same model
  int default_stages = 1;
  std::vector<std::string> notes;
  Protocol protocol;          // what this schedule lowers to
  ProtocolCheck check;        // its deadlock check
  Protocol default_protocol;  // today's sm_90a / sm_80 codegen's
  ProtocolCheck default_check;
  double seconds = 0;
};

struct Schedule {
  std::string kernel;
  std::vector<LoopSchedule> loops;       // the solver's, one a `pipeline` (see Options::solve_every_loop)
  std::optional<Prediction> prediction;  // the kernel's predicted time (cost.h), with its first loop
  Lowering lowering;                     // what codegen lowers (lowering.h): the roles the solver chose
};

Schedule Build(const tile::Kernel& kernel, const synth::Plan& plan, const Options& options = {},
               const std::function<std::string(Span)>& where = nullptr);

// `weft explain`'s lines for the schedule (each prefixed by `indent`); `timings` adds solver time.
std::string Print(const Schedule& schedule, bool timings, const std::string& indent = "  ");

}  // namespace weft::schedule
