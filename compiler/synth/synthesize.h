// Layout synthesis and instruction selection: a tile::Kernel in, a Plan (plan.h) out, or the
// diagnostics that say why no plan exists. See docs/synthesis.md for how it chooses.
//
// The algorithm:
//   1. Anchors: each `mma` takes the target's atom (mma.sync m16n8k16 on sm_80, wgmma m64nNk16 on
//      sm_90a) and enumerates the tilings of warps (warpgroups) over its M x N tile; A, B and the
//      accumulator get the tiled atom's TV layouts (wgmma's A and B stay in shared memory).
//   2. Propagation by unification along the constraints the checker recorded between the tiles'
//      layout variables (tile::Kernel::layouts; core/tile_layout.h states the rules): tiles that
//      are Equal (elementwise ops, `cast`, `expand`, loop-carried values) form one class with one
//      layout; a broadcast [M, 1] operand and a reduction's result (SliceOf) get the slice of their
//      parent's layout; pinned layouts join their class first. Two different layouts in one class
//      are an error naming both ops; weft never inserts `convert`.
//   3. Realization: `regs` gets ldmatrix (x4/x2/x1, .trans for a K x N operand) when the Reg layout
//      is ldmatrix-shaped, else the widest vector ld.shared; `shared` gets 16-byte cp.async spread
//      coalesced over the threads (sm_80) or TMA boxes (sm_90a); `store` the widest st.global.
//   4. Choice: every combination of warp tilings is evaluated, and for each shared tile every
//      swizzle costed by the exact bank-conflict wavefronts of all its accesses (memoized per class of
//      readers' copies), plus instructions issued; Z3 chooses a combination, a layout per shared tile
//      and the stages within the shared-memory and register budgets, minimizing that cost
//      (choose.h: a 0/1 integer program, lexicographic objective, proved optimal).
#pragma once

#include <optional>
#include <vector>

#include "base/result.h"
#include "diagnostics/diagnostic.h"
#include "synth/choose.h"
#include "synth/plan.h"
#include "tile/ir.h"

namespace weft::synth {

struct Options {
  // Copies of a tile loaded inside a `pipeline` (default: 3 on sm_80, 4 on sm_90a; fewer if the
  // shared-memory budget demands).
  std::optional<int> stages;
  // Who chooses among the candidates: Z3 (the default), or the exhaustive search (the test oracle).
  Chooser chooser = Chooser::kZ3;
  // Z3's context; when null, one the process shares (synthesize.cpp). The answer does not depend on
  // it when Z3 proves it optimal (the objective has one optimum).
  solver::Session* session = nullptr;
};

// The shared-memory and register budgets of a target.
std::int64_t SharedBudget(Target target);  // bytes per block
int RegisterBudget(Target target);         // 32-bit registers per thread

// "sm_80" -> Sm80, "sm_90a" -> Sm90a.
std::optional<Target> ParseTarget(std::string_view text);

Result<Plan, std::vector<Diagnostic>> Synthesize(const tile::Kernel& kernel, Target target,
                                                 const Options& options = {});

// Steps 1 to 3 and the candidate space of step 4, every cost tabulated, without choosing: what the
// choosers (choose.h) choose from. The agreement test runs both on it.
Result<Space, std::vector<Diagnostic>> TabulateSpace(const tile::Kernel& kernel, Target target,
                                                     const Options& options = {});

}  // namespace weft::synth
