// Which instance of a kernel with a `tiles` clause the compiler builds, for one target and one set
// of sizes (docs/kernels.md, "Tile sizes the compiler chooses"):
//  1. each instance (core::KernelInfo::instances: the kernel checked with each combination of its
//     candidates) is lowered to the tile IR, synthesized for the target (Z3 chooses its layouts,
//     instructions and stages) and its pipelines scheduled;
//  2. its cost is the cost model's predicted time (schedule/cost.h: a block's time, the grid's
//     blocks in waves over the multiprocessors) at the given sizes, by name: a call's constant sizes,
//     or `weft explain --size`; a size not given is the cost model's default, 4096, as at a call
//     whose sizes are known only at run time. A kernel without a `pipeline` has no prediction, and
//     costs 0 (the first instance that builds wins);
//  3. Z3 chooses one: a 0/1 variable per instance that builds, exactly one, the least predicted
//     time, then the least index (synth::ChooseInstanceByZ3; the search is its test oracle).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/ir.h"
#include "synth/choose.h"
#include "synth/plan.h"

namespace weft::codegen {

struct InstanceCost {
  std::string values;             // "bm = 64, bn = 128"
  std::optional<double> seconds;  // the predicted time; nothing without a `pipeline`
  std::string why;                // why it does not build for the target; empty when it does
};

struct TileChoice {
  std::size_t index = 0;  // into core::KernelInfo::instances
  std::vector<InstanceCost> instances;
  std::vector<std::optional<std::int64_t>> costs;  // what Z3 minimized: nanoseconds, nothing where it fails
  synth::InstanceChoice chosen;
  std::string sizes;    // the sizes the times are predicted at ("m = 4096, k = 4096, n = 4096")
  std::string unknown;  // Z3's reason where it gave no answer (then the search chose)
};

// The choice for `def`, a kernel with instances. Nothing when no instance builds for the target
// (the first one's errors then say why: build it to see them).
std::optional<TileChoice> ChooseTiles(const core::Module& module, const core::VarStore& vars, const core::Def& def,
                                      synth::Target target, const std::map<std::string, std::int64_t>& sizes);

// `weft explain`'s lines for the choice: the chosen sizes, who chose and whether it is proved
// optimal, then each instance's predicted time.
std::string Print(const core::Def& def, const TileChoice& choice);

}  // namespace weft::codegen
