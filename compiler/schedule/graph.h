// The dependence graph of one `pipeline` loop: what the modulo scheduler (schedule.h) schedules.
//
// Built from the loop's tile IR and the synthesized plan (docs/scheduling.md, "The graph"):
//   1. Loads: each `shared` (ToShared) op of the body is a node on the copy engine; its bytes come from
//      the plan, its latency is the copy latency plus the transfer time.
//   2. Products: each `mma` is a node on the tensor cores, 2*M*N*K flops (async on sm_90a: wgmma is
//      issued and runs while its warpgroup goes on; synchronous mma.sync on sm_80).
//   3. Vector work: the body's other register ops (elementwise, reductions, casts, ldmatrix) are
//      grouped by the first operand they feed, in program order: the A/B operands of an mma, its
//      accumulator, a store, or the carried values. Attention's body becomes `softmax` (the cone of
//      P), `rescale` (the cone of the accumulator's correction) and `bookkeeping` (the running sum).
//      A group occupies the ALU and, for `exp`, the SFU; its issuing warps are busy for the sum.
//   4. Edges: a value read from another node of the same iteration (distance 0), a carried value read
//      in the next iteration (distance 1), and for every ring tile the slot release: the next load
//      into a slot waits until the last reader of the load `stages` iterations before is done
//      (distance = the ring's depth, which the scheduler chooses).
// Views, transposes, scalar arithmetic and `regs` that wgmma reads in place cost nothing: no node.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "schedule/machine.h"
#include "synth/plan.h"
#include "tile/ir.h"

namespace weft::schedule {

enum class NodeKind : std::uint8_t { kLoad, kMma, kVector, kStore };

struct Node {
  std::string name;  // "load k", "mma 13:18", "softmax", ...
  NodeKind kind = NodeKind::kVector;
  std::vector<tile::OpId> ops;
  std::array<std::int64_t, kUnits> occupancy{};  // busy cycles of each unit per iteration, whole block
  std::int64_t issue = 0;                        // busy cycles of the warps that issue it (their role's timeline)
  std::int64_t latency = 0;                      // from its start until its results may be used
  bool async = false;                            // TMA, cp.async, wgmma: the issuer goes on while the unit works
  // Work that divides among consumer warpgroups by rows (products, vector work); loads do not: every
  // consumer reads the whole K/V or B tile.
  bool splits = true;
  std::int64_t bytes = 0;                          // loads: bytes per iteration
  std::int64_t flops = 0;                          // products: 2*M*N*K
  std::int64_t sfu_ops = 0, alu_instructions = 0;  // vector work: per block
};

struct Edge {
  int from = 0, to = 0;
  int distance = 0;      // iterations between the producer's and the consumer's instance
  bool release = false;  // a ring slot's release: distance is the ring's depth (chosen), not this
  std::string why;       // the value, or "slot of <tile>"
};

struct Graph {
  tile::OpId loop;
  std::string where;  // "8:13" when sources are known
  std::vector<Node> nodes;
  std::vector<Edge> edges;
  // Shared memory: bytes of one stage of every ring tile, and the rest of the plan's (fixed).
  std::int64_t stage_bytes = 0;
  std::int64_t fixed_shared_bytes = 0;
  int plan_stages = 1;  // the ring depth synthesis chose (today's codegen)
  int plan_warpgroups = 1;
  int registers = 0;  // the plan's estimate per thread, for plan.threads threads
  std::int64_t threads = 0;
};

// One graph per `pipeline` op of the kernel (nested loops are not pipelined: their ops count as
// vector work of the enclosing node). `where(span)` names source positions; may be null.
std::vector<Graph> BuildGraphs(const tile::Kernel& kernel, const synth::Plan& plan, const Machine& machine,
                               const std::function<std::string(Span)>& where = nullptr);

}  // namespace weft::schedule
