// Bank-conflict counting; the model is in bank_conflicts.h.
#include "layout/bank_conflicts.h"

#include <algorithm>
#include <set>
#include <string>

namespace weft::layout {

Result<BankConflicts> CountBankConflicts(const std::vector<LaneAccess>& lanes) {
  if (lanes.size() > 32) return MakeError("a warp has 32 lanes, got " + std::to_string(lanes.size()) + " accesses");
  int width = 0;
  for (std::size_t l = 0; l < lanes.size(); ++l) {
    const LaneAccess& a = lanes[l];
    if (!a.active) continue;
    if (a.bytes != 1 && a.bytes != 2 && a.bytes != 4 && a.bytes != 8 && a.bytes != 16)
      return MakeError("lane " + std::to_string(l) + " accesses " + std::to_string(a.bytes) +
                       " bytes: shared-memory accesses are 1, 2, 4, 8 or 16 bytes");
    if (width != 0 && a.bytes != width)
      return MakeError("lanes of one access have different widths (" + std::to_string(width) + " and " +
                       std::to_string(a.bytes) + " bytes)");
    width = a.bytes;
    if (a.address < 0 || a.address % a.bytes != 0)
      return MakeError("lane " + std::to_string(l) + " address " + std::to_string(a.address) +
                       " is not aligned to its width " + std::to_string(a.bytes));
  }
  BankConflicts out;
  if (width == 0) return out;
  int lanes_per_phase = width <= 4 ? 32 : 128 / width;
  for (std::size_t begin = 0; begin < lanes.size(); begin += lanes_per_phase) {
    std::set<std::int64_t> words[32];
    bool any = false;
    for (std::size_t l = begin; l < std::min(lanes.size(), begin + lanes_per_phase); ++l) {
      if (!lanes[l].active) continue;
      any = true;
      std::int64_t first = lanes[l].address / 4;
      std::int64_t last = (lanes[l].address + lanes[l].bytes - 1) / 4;
      for (std::int64_t w = first; w <= last; ++w) words[w % 32].insert(w);
    }
    if (!any) continue;
    ++out.phases;
    ++out.ideal;
    std::size_t worst = 1;
    for (const auto& bank : words) worst = std::max(worst, bank.size());
    out.wavefronts += static_cast<int>(worst);
  }
  return out;
}

}  // namespace weft::layout
