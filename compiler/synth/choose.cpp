// The choosers of choose.h over a tabulated candidate space.
#include "synth/choose.h"

#include <algorithm>
#include <limits>

#include "diagnostics/diagnostic.h"
#include "solver/optimize.h"

namespace weft::synth {

std::string_view Spelling(Chooser chooser) {
  return chooser == Chooser::kZ3 ? "Z3" : "exhaustive search";
}

namespace {

// The stage count's copies of a tile.
std::int64_t Copies(const SpaceTile& tile, int stages) {
  return tile.pipelined ? stages : 1;
}

std::int64_t SharedBytes(const Space& space, const Choice& choice) {
  std::int64_t bytes = space.combos[choice.combo].scratch;
  for (std::size_t s = 0; s < space.tiles.size(); ++s) {
    const SpaceTile& tile = space.tiles[s];
    int c = choice.candidates[s];
    bytes += tile.bytes[c] * Copies(tile, choice.stages) + tile.padding[c];
  }
  return bytes;
}

bool CombinationAllowed(const Space& space, int k) {
  const SpaceCombo& combo = space.combos[k];
  return combo.feasible && (!space.budgets || combo.registers <= space.register_budget);
}

// Per tile, the candidates no earlier candidate dominates (at most as many wavefronts in every class
// where it fits, and no more bytes or padding). Dropping the dominated ones keeps the optimum: with
// an earlier candidate instead, every objective is as good and the tile's index smaller.
std::vector<std::vector<int>> Undominated(const Space& space) {
  std::vector<std::vector<int>> kept(space.tiles.size());
  for (std::size_t s = 0; s < space.tiles.size(); ++s) {
    const SpaceTile& tile = space.tiles[s];
    auto dominates = [&](int a, int b) {
      if (tile.bytes[a] > tile.bytes[b] || tile.padding[a] > tile.padding[b]) return false;
      for (const auto& row : tile.wavefronts)
        if (row[b] && (!row[a] || *row[a] > *row[b])) return false;
      return true;
    };
    for (int c = 0; c < tile.candidates(); ++c) {
      bool fits = false;
      for (const auto& row : tile.wavefronts) fits = fits || row[c].has_value();
      if (!fits) continue;
      bool dominated = false;
      for (int earlier : kept[s]) dominated = dominated || dominates(earlier, c);
      if (!dominated) kept[s].push_back(c);
    }
  }
  return kept;
}

// The program solved within synthesis's limits (10 s), or nothing: infeasible, or (`unknown` says
// why) no answer within the limits.
std::optional<solver::OptimizeResult> Solve(const solver::IntegerProgram& p, solver::Session* session,
                                            std::string& unknown) {
  solver::OptimizeOptions options;
  options.timeout_ms = 10'000;
  solver::OptimizeResult r = p.Solve(options, session);
  if (r.status == solver::OptimizeStatus::kOptimal || r.status == solver::OptimizeStatus::kFeasible) return r;
  if (r.status != solver::OptimizeStatus::kInfeasible) unknown = "no answer within the limits: " + r.reason;
  return std::nullopt;
}

}  // namespace

bool Feasible(const Space& space, const Choice& choice) {
  if (choice.combo < 0 || choice.combo >= static_cast<int>(space.combos.size())) return false;
  if (!CombinationAllowed(space, choice.combo)) return false;
  if (choice.candidates.size() != space.tiles.size()) return false;
  for (std::size_t s = 0; s < space.tiles.size(); ++s) {
    const SpaceTile& tile = space.tiles[s];
    int c = choice.candidates[s];
    if (c < 0 || c >= tile.candidates()) return false;
    int g = tile.class_of[choice.combo];
    if (g < 0 || !tile.wavefronts[g][c]) return false;
  }
  if (std::find(space.stages.begin(), space.stages.end(), choice.stages) == space.stages.end()) return false;
  return !space.budgets || SharedBytes(space, choice) <= space.shared_budget;
}

void Evaluate(const Space& space, Choice& choice) {
  choice.instructions = space.combos[choice.combo].instructions;
  choice.wavefronts = 0;
  for (std::size_t s = 0; s < space.tiles.size(); ++s) {
    const SpaceTile& tile = space.tiles[s];
    choice.wavefronts += tile.wavefronts[tile.class_of[choice.combo]][choice.candidates[s]].value_or(0);
  }
  choice.cost = choice.wavefronts + choice.instructions;
}

std::optional<Choice> ChooseBySearch(const Space& space) {
  std::vector<std::vector<int>> kept = Undominated(space);
  // The objective as a key compared lexicographically: cost, instructions, stage index, combination,
  // then each tile's candidate.
  std::optional<std::vector<std::int64_t>> best_key;
  std::optional<Choice> best;
  std::int64_t tried = 0;
  std::size_t n = space.tiles.size();
  for (int k = 0; k < static_cast<int>(space.combos.size()); ++k) {
    if (!CombinationAllowed(space, k)) continue;
    std::vector<std::vector<int>> options(n);
    bool any = true;
    for (std::size_t s = 0; s < n && any; ++s) {
      int g = space.tiles[s].class_of[k];
      for (int c : kept[s])
        if (g >= 0 && space.tiles[s].wavefronts[g][c]) options[s].push_back(c);
      any = !options[s].empty();
    }
    if (!any) continue;
    std::vector<std::size_t> at(n, 0);  // an odometer over the tiles' options
    for (;;) {
      Choice choice;
      choice.combo = k;
      for (std::size_t s = 0; s < n; ++s) choice.candidates.push_back(options[s][at[s]]);
      Evaluate(space, choice);
      // The most stages that fit (the fewest when the budgets are off: what exceeds them is reported).
      for (std::size_t i = 0; i < space.stages.size(); ++i) {
        std::size_t si = space.budgets ? i : space.stages.size() - 1 - i;
        choice.stages = space.stages[si];
        ++tried;
        if (!Feasible(space, choice)) continue;
        std::vector<std::int64_t> key{choice.cost, choice.instructions, static_cast<std::int64_t>(i), k};
        for (int c : choice.candidates) key.push_back(c);
        if (!best_key || key < *best_key) {
          best_key = std::move(key);
          best = choice;
        }
        break;
      }
      std::size_t s = 0;
      while (s < n && ++at[s] == options[s].size()) at[s++] = 0;
      if (s == n) break;
    }
  }
  if (best) {
    best->chooser = Chooser::kSearch;
    best->optimal = true;
    best->variables = tried;
  }
  return best;
}

std::optional<Choice> ChooseByZ3(const Space& space, solver::Session* session, std::string& unknown) {
  using solver::LinearConstraint;
  using solver::LinearTerm;
  std::vector<std::vector<int>> kept = Undominated(space);
  solver::IntegerProgram p;
  auto exactly_one = [&](const std::vector<int>& vars) {
    LinearConstraint c{{}, core::RelOp::kEq, 1};
    for (int v : vars) c.terms.push_back({1, v});
    p.Add(std::move(c));
  };
  // A 0/1 variable per candidate of each choice; -1 where the candidate is out.
  std::vector<int> x(space.combos.size(), -1);
  std::vector<int> combos;
  for (int k = 0; k < static_cast<int>(space.combos.size()); ++k)
    if (space.combos[k].feasible) combos.push_back(x[k] = p.Var("x" + std::to_string(k), 0, 1));
  if (combos.empty()) return std::nullopt;
  exactly_one(combos);
  std::size_t n = space.tiles.size();
  std::vector<std::vector<int>> z(n);
  for (std::size_t s = 0; s < n; ++s) {
    z[s].assign(space.tiles[s].candidates(), -1);
    std::vector<int> vars;
    for (int c : kept[s]) vars.push_back(z[s][c] = p.Var("z" + std::to_string(s) + "_" + std::to_string(c), 0, 1));
    exactly_one(vars);
  }
  std::vector<int> w;
  for (std::size_t i = 0; i < space.stages.size(); ++i) w.push_back(p.Var("w" + std::to_string(i), 0, 1));
  exactly_one(w);

  std::vector<LinearTerm> cost, instructions, stages, combo_index;
  for (int k = 0; k < static_cast<int>(space.combos.size()); ++k) {
    if (x[k] < 0) continue;
    cost.push_back({space.combos[k].instructions, x[k]});
    instructions.push_back({space.combos[k].instructions, x[k]});
    combo_index.push_back({k, x[k]});
  }
  for (std::size_t i = 0; i < w.size(); ++i) stages.push_back({static_cast<std::int64_t>(i), w[i]});
  // Pair costs: a candidate costs its cheapest class's wavefronts; a pair (class, candidate) that
  // costs more adds the difference through y >= X_g + z - 1 (X_g: the class's combinations), which the
  // minimization keeps at 0 unless both are chosen. A pair where a vector misaligns is excluded.
  for (std::size_t s = 0; s < n; ++s) {
    const SpaceTile& tile = space.tiles[s];
    std::vector<std::vector<int>> members(tile.wavefronts.size());
    for (int k = 0; k < static_cast<int>(space.combos.size()); ++k)
      if (x[k] >= 0 && tile.class_of[k] >= 0) members[tile.class_of[k]].push_back(x[k]);
    for (int c : kept[s]) {
      std::int64_t cheapest = std::numeric_limits<std::int64_t>::max();
      for (std::size_t g = 0; g < members.size(); ++g)
        if (!members[g].empty() && tile.wavefronts[g][c]) cheapest = std::min(cheapest, *tile.wavefronts[g][c]);
      if (cheapest == std::numeric_limits<std::int64_t>::max()) cheapest = 0;
      if (cheapest) cost.push_back({cheapest, z[s][c]});
      for (std::size_t g = 0; g < members.size(); ++g) {
        if (members[g].empty()) continue;
        const std::optional<std::int64_t>& wf = tile.wavefronts[g][c];
        if (wf && *wf == cheapest) continue;
        // X_g + z (<= 1 to exclude the pair; - y <= 1 to pay its extra cost)
        LinearConstraint both{{{1, z[s][c]}}, core::RelOp::kLe, 1};
        for (int v : members[g]) both.terms.push_back({1, v});
        if (wf) {
          int y = p.Var("y" + std::to_string(s) + "_" + std::to_string(g) + "_" + std::to_string(c), 0, 1);
          both.terms.push_back({-1, y});
          cost.push_back({*wf - cheapest, y});
        }
        p.Add(std::move(both));
      }
    }
  }
  if (space.budgets) {
    LinearConstraint registers{{}, core::RelOp::kLe, space.register_budget};
    for (int k = 0; k < static_cast<int>(space.combos.size()); ++k)
      if (x[k] >= 0) registers.terms.push_back({space.combos[k].registers, x[k]});
    p.Add(std::move(registers));
    for (std::size_t i = 0; i < w.size(); ++i) {
      LinearConstraint shared{{}, core::RelOp::kLe, space.shared_budget, w[i], 1};
      for (int k = 0; k < static_cast<int>(space.combos.size()); ++k)
        if (x[k] >= 0 && space.combos[k].scratch) shared.terms.push_back({space.combos[k].scratch, x[k]});
      for (std::size_t s = 0; s < n; ++s) {
        const SpaceTile& tile = space.tiles[s];
        for (int c : kept[s])
          if (std::int64_t b = tile.bytes[c] * Copies(tile, space.stages[i]) + tile.padding[c])
            shared.terms.push_back({b, z[s][c]});
      }
      p.Add(std::move(shared));
    }
  } else {
    // Ignoring the budgets (to report what exceeds them): the fewest stages.
    stages.clear();
    for (std::size_t i = 0; i < w.size(); ++i) stages.push_back({static_cast<std::int64_t>(w.size() - 1 - i), w[i]});
  }
  // The objective's terms in lexicographic order, each with its range (a bound on its value, plus
  // one): cost, instructions, stages, the combination, each tile's candidate. Consecutive terms are
  // digits of one mixed-radix number where that fits in 62 bits: one objective where there would be
  // several (Z3 takes about a millisecond an objective), the same order.
  std::int64_t most_instructions = 0, most_wavefronts = 0;
  for (int k = 0; k < static_cast<int>(space.combos.size()); ++k)
    if (x[k] >= 0) most_instructions = std::max(most_instructions, space.combos[k].instructions);
  for (const SpaceTile& tile : space.tiles) {
    std::int64_t most = 0;
    for (const auto& row : tile.wavefronts)
      for (const auto& wf : row) most = std::max(most, wf.value_or(0));
    most_wavefronts += most;
  }
  std::vector<std::pair<std::int64_t, std::vector<LinearTerm>>> digits;  // (range, value)
  digits.push_back({most_instructions + most_wavefronts + 1, cost});
  digits.push_back({most_instructions + 1, instructions});
  digits.push_back({static_cast<std::int64_t>(w.size()), stages});
  digits.push_back({static_cast<std::int64_t>(space.combos.size()), combo_index});
  for (std::size_t s = 0; s < n; ++s) {
    std::vector<LinearTerm> index;
    for (int c : kept[s])
      if (c) index.push_back({c, z[s][c]});
    digits.push_back({space.tiles[s].candidates(), index});
  }
  // Groups from the least significant digit up, each within 62 bits.
  std::vector<std::vector<LinearTerm>> objectives;
  std::int64_t weight = 1;
  const std::int64_t limit = std::int64_t{1} << 62;
  for (auto it = digits.rbegin(); it != digits.rend(); ++it) {
    std::int64_t range = std::max<std::int64_t>(1, it->first);
    if (objectives.empty() || weight > limit / range) {
      objectives.emplace_back();
      weight = 1;
    }
    for (const LinearTerm& t : it->second) objectives.back().push_back({t.coefficient * weight, t.var});
    weight *= range;
  }
  for (auto it = objectives.rbegin(); it != objectives.rend(); ++it) p.Minimize(*it);

  std::optional<solver::OptimizeResult> solved = Solve(p, session, unknown);
  if (!solved) return std::nullopt;
  const solver::OptimizeResult& r = *solved;
  Choice choice;
  choice.candidates.assign(n, -1);
  for (int k = 0; k < static_cast<int>(space.combos.size()); ++k)
    if (x[k] >= 0 && r.values[x[k]]) choice.combo = k;
  for (std::size_t s = 0; s < n; ++s)
    for (int c : kept[s])
      if (r.values[z[s][c]]) choice.candidates[s] = c;
  for (std::size_t i = 0; i < w.size(); ++i)
    if (r.values[w[i]]) choice.stages = space.stages[i];
  Evaluate(space, choice);
  WEFT_CHECK(Feasible(space, choice));
  choice.chooser = Chooser::kZ3;
  choice.optimal = r.status == solver::OptimizeStatus::kOptimal;
  choice.status = std::string(solver::ToString(r.status));
  choice.variables = p.size();
  return choice;
}

std::optional<InstanceChoice> ChooseInstanceBySearch(const std::vector<std::optional<std::int64_t>>& costs) {
  std::optional<InstanceChoice> best;
  for (std::size_t i = 0; i < costs.size(); ++i) {
    if (!costs[i] || (best && *costs[i] >= best->cost)) continue;
    best = InstanceChoice{static_cast<int>(i), *costs[i], Chooser::kSearch, true, "", 0};
  }
  if (best) best->variables = static_cast<std::int64_t>(costs.size());
  return best;
}

std::optional<InstanceChoice> ChooseInstanceByZ3(const std::vector<std::optional<std::int64_t>>& costs,
                                                 solver::Session* session, std::string& unknown) {
  using solver::LinearConstraint;
  solver::IntegerProgram p;
  std::vector<int> x(costs.size(), -1);
  LinearConstraint one{{}, core::RelOp::kEq, 1};
  std::vector<solver::LinearTerm> cost, index;
  for (std::size_t i = 0; i < costs.size(); ++i) {
    if (!costs[i]) continue;
    x[i] = p.Var("t" + std::to_string(i), 0, 1);
    one.terms.push_back({1, x[i]});
    if (*costs[i]) cost.push_back({*costs[i], x[i]});
    if (i) index.push_back({static_cast<std::int64_t>(i), x[i]});
  }
  if (one.terms.empty()) return std::nullopt;
  p.Add(std::move(one));
  if (!cost.empty()) p.Minimize(cost);
  if (!index.empty()) p.Minimize(index);
  std::optional<solver::OptimizeResult> solved = Solve(p, session, unknown);
  if (!solved) return std::nullopt;
  const solver::OptimizeResult& r = *solved;
  InstanceChoice choice;
  for (std::size_t i = 0; i < costs.size(); ++i)
    if (x[i] >= 0 && r.values[x[i]]) choice.index = static_cast<int>(i);
  WEFT_CHECK(choice.index >= 0);
  choice.cost = *costs[static_cast<std::size_t>(choice.index)];
  choice.chooser = Chooser::kZ3;
  choice.optimal = r.status == solver::OptimizeStatus::kOptimal;
  choice.status = std::string(solver::ToString(r.status));
  choice.variables = p.size();
  return choice;
}

}  // namespace weft::synth
