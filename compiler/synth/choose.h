// Choosing a plan from synthesis's candidates: the candidate space, every candidate's cost
// tabulated exactly, and two choosers over it that find the same optimum: Z3's (the default) and the
// exhaustive search (the test oracle). See docs/synthesis.md "How it chooses".
//
// The choices, one candidate of each:
//   - the combination of warp tilings (one tiling per mma): unification and realization give every
//     register layout and instruction from it, so it carries their warp instructions, its registers a
//     thread (the liveness estimate) and the shared scratch its reductions need;
//   - each shared tile's layout (a swizzle on sm_80, a TMA swizzle mode and box on sm_90a), costing
//     the exact bank-conflict wavefronts of its writes and reads (plus its TMA instructions). The
//     reads depend on the combination only through the readers' copies, so combinations fall into
//     classes with equal copies and the wavefronts are tabulated per (class, candidate): the pair
//     costs, each counted once (synthesize.cpp memoizes them by the readers' copies);
//   - the pipeline's stages, most first.
// Budgets: registers a thread (a linear sum over the combinations) and shared bytes (per stage count,
// a linear sum over the tiles' candidates: a candidate's bytes times its stages is one number, and
// `padding` bounds the alignment before it, so the sum bounds the real layout's bytes).
// The objective, lexicographic: cost (wavefronts + warp instructions), then warp instructions, then
// stages (more first), then the combination's index, then each tile's candidate index in turn. It has
// one optimum, so the two choosers agree exactly when both prove it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "synth/plan.h"

namespace weft::solver {
class Session;
}

namespace weft::synth {

struct SpaceCombo {
  bool feasible = false;          // unification found layouts (else no candidate)
  std::int64_t instructions = 0;  // warp instructions per execution
  std::int64_t registers = 0;     // a thread's, estimated
  std::int64_t scratch = 0;       // shared bytes for reductions whose rows span warps
};

struct SpaceTile {
  std::vector<int> class_of;  // per combination: its class of readers' copies (-1: infeasible combination)
  // [class][candidate]: the wavefronts (TMA instructions included), or nothing where a vector
  // misaligns.
  std::vector<std::vector<std::optional<std::int64_t>>> wavefronts;
  std::vector<std::int64_t> bytes;    // per candidate: one stage's bytes
  std::vector<std::int64_t> padding;  // per candidate: alignment bytes that may precede it, at most
  bool pipelined = false;             // loaded inside a `pipeline`: a copy per stage
  int candidates() const { return static_cast<int>(bytes.size()); }
};

struct Space {
  std::vector<SpaceCombo> combos;
  std::vector<SpaceTile> tiles;
  std::vector<int> stages;  // the stage counts allowed, most preferred (most) first
  std::int64_t shared_budget = 0;
  std::int64_t register_budget = 0;
  bool budgets = true;  // false: choose ignoring the budgets (to report what exceeds them)
};

struct Choice {
  int combo = 0;
  std::vector<int> candidates;  // per tile
  int stages = 1;               // the stage count (not its index)
  // The objectives' values: cost, warp instructions.
  std::int64_t cost = 0, wavefronts = 0, instructions = 0;
  Chooser chooser = Chooser::kSearch;
  bool optimal = false;        // proved optimal (the search always is; Z3 within its limits)
  std::string status;          // Z3's answer ("optimal", "feasible") or why the search ran instead
  std::int64_t variables = 0;  // the encoding's 0/1 variables (Z3), or assignments tried (search)
};

// Whether the choice satisfies every constraint of the space (budgets included where on).
bool Feasible(const Space& space, const Choice& choice);
// The choice's objective values (cost, wavefronts, instructions) filled in from the tables.
void Evaluate(const Space& space, Choice& choice);

// Every assignment in lexicographic order of the objective: exact, exponential in the tiles (the
// candidates dominated by an earlier one are dropped first, which keeps the optimum). Nothing when no
// assignment is feasible.
std::optional<Choice> ChooseBySearch(const Space& space);

// The same problem as a 0/1 integer program for Z3's optimizer: a variable per candidate,
// exactly-one per choice, the budgets as linear constraints, a 0/1 variable per pair (class,
// candidate) whose cost exceeds the candidate's cheapest, and the lexicographic objective. Nothing
// when Z3 proves no assignment feasible, or finds none within its limits (then `unknown` says why).
std::optional<Choice> ChooseByZ3(const Space& space, solver::Session* session, std::string& unknown);

// A kernel's instances (its `tiles` clause; docs/kernels.md, "Tile sizes the compiler chooses"):
// per instance its cost, the cost model's predicted time in nanoseconds, or nothing where it does
// not build for the target. The objective, lexicographic: cost, then the instance's index.
struct InstanceChoice {
  int index = -1;
  std::int64_t cost = 0;
  Chooser chooser = Chooser::kSearch;
  bool optimal = false;
  std::string status;          // Z3's answer, as Choice's
  std::int64_t variables = 0;  // the encoding's 0/1 variables (Z3), or instances tried (search)
};

// Every instance in turn: the oracle. Nothing when none builds.
std::optional<InstanceChoice> ChooseInstanceBySearch(const std::vector<std::optional<std::int64_t>>& costs);
// A 0/1 variable per instance that builds, exactly one, and the objective as above. Nothing when
// none builds, or Z3 finds none within its limits (then `unknown` says why).
std::optional<InstanceChoice> ChooseInstanceByZ3(const std::vector<std::optional<std::int64_t>>& costs,
                                                 solver::Session* session, std::string& unknown);

}  // namespace weft::synth
