// Print: the schedule as `weft explain` shows it (docs/scheduling.md has a worked example).
#include <algorithm>
#include <cstdio>
#include <sstream>

#include "schedule/schedule.h"

namespace weft::schedule {

namespace {

std::string Fixed(double x, const char* format) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, x);
  return buf;
}

std::string NodeLine(const Node& n) {
  std::string s = n.name + ":";
  bool first = true;
  for (int u = 0; u < kUnits; ++u) {
    if (n.occupancy[u] == 0) continue;
    s += (first ? " " : " + ") + std::string(Spelling(static_cast<Unit>(u))) + " " + std::to_string(n.occupancy[u]);
    first = false;
  }
  if (first) s += " no unit";
  s += " cycles, issue " + std::to_string(n.issue) + ", latency " + std::to_string(n.latency);
  if (n.bytes) s += ", " + std::to_string(n.bytes) + " bytes";
  if (n.flops) s += ", " + std::to_string(n.flops) + " flops";
  if (n.kind == NodeKind::kVector) s += ", " + std::to_string(n.ops.size()) + (n.ops.size() == 1 ? " op" : " ops");
  if (n.sfu_ops) s += " (" + std::to_string(n.sfu_ops) + " exp)";
  return s;
}

}  // namespace

std::string Print(const Schedule& schedule, bool timings, const std::string& indent) {
  std::ostringstream out;
  const std::string i1 = indent, i2 = indent + "  ", i3 = indent + "    ";
  for (const LoopSchedule& loop : schedule.loops) {
    const Graph& g = loop.graph;
    out << i1 << "schedule of the `pipeline`" << (g.where.empty() ? "" : " at " + g.where) << ":\n";
    int carried = 0, releases = 0;
    for (const Edge& e : g.edges) {
      carried += e.distance > 0;
      releases += e.release;
    }
    out << i2 << "graph: " << g.nodes.size() << " nodes, " << g.edges.size() << " edges (" << carried
        << " loop-carried, " << releases << " slot releases)\n";
    for (const Node& n : g.nodes) out << i3 << NodeLine(n) << "\n";
    for (const Edge& e : g.edges) {
      out << i3 << g.nodes[e.from].name << " -> " << g.nodes[e.to].name << ": " << e.why;
      if (e.release)
        out << ", the ring's depth later";
      else if (e.distance > 0)
        out << ", next iteration";
      out << "\n";
    }
    // Roles.
    out << i2 << "roles: ";
    bool first = true;
    int consumers = 0;
    for (const Role& r : loop.roles) {
      if (r.name.rfind("consumer", 0) == 0) {
        ++consumers;
        continue;
      }
      out << (first ? "" : ", ") << r.name;
      if (r.registers) out << " (setmaxnreg " << r.registers << ")";
      first = false;
    }
    if (consumers > 0) {
      const Role& c = loop.roles.back();
      out << (first ? "" : ", ") << consumers << (consumers == 1 ? " consumer warpgroup" : " consumer warpgroups");
      if (c.registers) out << " (setmaxnreg " << c.registers << ")";
      if (loop.ping_pong) out << " in ping-pong";
    }
    if (loop.roles.size() == 1) out << ": every warp issues everything, thread 0 the copies";
    out << "\n";
    out << i2 << "initiation interval: " << loop.ii << " cycles, bound by " << loop.bound << "; "
        << (loop.from_solver ? (loop.optimal ? "proved optimal" : "not proved optimal") : "the ring's schedule")
        << "\n";
    out << i2 << "stages: ring of " << loop.ring_stages << (loop.ring_stages == 1 ? " slot" : " slots") << " ("
        << g.stage_bytes << " bytes each), schedule depth " << loop.depth << "\n";
    for (std::size_t r = 0; r < loop.roles.size(); ++r) {
      std::vector<const Slot*> mine;
      for (const Slot& s : loop.slots)
        if (s.role == static_cast<int>(r)) mine.push_back(&s);
      if (mine.empty()) continue;
      std::sort(mine.begin(), mine.end(), [](const Slot* a, const Slot* b) {
        return std::tie(a->offset, a->stage, a->node) < std::tie(b->offset, b->stage, b->node);
      });
      out << i3 << loop.roles[r].name << ":";
      for (std::size_t k = 0; k < mine.size(); ++k)
        out << (k ? "," : "") << " " << g.nodes[mine[k]->node].name << " @" << mine[k]->offset << " stage "
            << mine[k]->stage;
      out << "\n";
    }
    for (const std::string& n : loop.notes) out << i2 << "note: " << n << "\n";
    out << i2 << "the ring's schedule: II " << loop.default_ii << " cycles, ring of " << loop.default_stages
        << " slots (the block issues everything; a block barrier per iteration)\n";
    out << i2 << "barrier protocol (" << loop.protocol.name << ", " << loop.protocol.slots << " slots, "
        << loop.protocol.iterations << " iterations): " << loop.check.ToString() << "\n";
    if (loop.protocol.name != loop.default_protocol.name || loop.protocol.slots != loop.default_protocol.slots)
      out << i2 << "the ring's protocol (" << loop.default_protocol.name << ", " << loop.default_protocol.slots
          << " slots, " << loop.default_protocol.iterations << " iterations): " << loop.default_check.ToString()
          << "\n";
    if (timings) out << i2 << "solver time: " << Fixed(loop.seconds * 1000, "%.1f") << " ms\n";
  }
  if (schedule.prediction) {
    const Prediction& p = *schedule.prediction;
    out << i1 << "predicted time at " << p.sizes << " on the " << p.machine << ": " << Fixed(p.seconds * 1e3, "%.3f")
        << " ms";
    if (p.flops > 0) out << " (" << Fixed(p.flops / p.seconds / 1e12, "%.0f") << " TFLOP/s)";
    out << ", " << p.bound << "-bound; memory alone " << Fixed(p.memory_seconds * 1e3, "%.3f") << " ms\n";
    out << i2 << "as lowered (" << p.lowered << "): " << Fixed(p.iteration, "%.0f") << " cycles an iteration";
    if (p.folded_iteration > 0 && p.folded_iteration != p.iteration)
      out << " (" << Fixed(p.folded_iteration, "%.0f") << " with its masks folded, all but " << Fixed(p.masked, "%.1f")
          << " a block)";
    out << "; a block's prologue " << Fixed(p.prologue, "%.0f") << " and epilogue " << Fixed(p.epilogue, "%.0f")
        << " cycles\n";
    out << i2 << p.blocks << " blocks, " << p.blocks_per_sm << " per SM (" << Fixed(p.waves, "%.2f") << " waves), ";
    if (p.trip_min == p.trip)
      out << p.trip << " iterations each\n";
    else
      out << p.trip_min << " to " << p.trip << " iterations (" << Fixed(p.trip_mean, "%.1f") << " on average)\n";
    if (!p.note.empty()) out << i2 << "note: " << p.note << "\n";
  }
  return out.str();
}

}  // namespace weft::schedule
