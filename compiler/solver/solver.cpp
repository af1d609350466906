// Prove over Z3; the algorithm is in solver.h. Here, the pieces:
//   1. Translate: a core::Dim becomes a Z3 integer term (variables are `v<index>` integer constants,
//      coefficients int64 numerals, Div/Mod atoms Z3 div/mod by a positive numeral). Only integer
//      sorts are ever built, so Z3 never sees mixed sorts.
//   2. Check: one Z3 check of a list of literals (a relation, possibly negated), each behind an
//      assumption literal, in a fresh context with fixed seed and rlimit. Returns sat/unsat/unknown,
//      the indices of the literals in the unsat core, and the model's values.
//   3. Prove: the fast path, the cache, then the two checks and core minimization (deletion: drop
//      each core literal in turn, keep it out if the rest is still unsat).
#include "solver/solver.h"

#include <z3++.h>

#include <algorithm>
#include <map>
#include <set>
#include <utility>

namespace weft::solver {

using core::AtomKind;
using core::Dim;
using core::SizeVarId;

std::string ToString(const Relation& r, const core::SizeVarNames& names) {
  return core::ToString(r.lhs, names) + " " + std::string(Spelling(r.op)) + " " + core::ToString(r.rhs, names);
}

std::string_view ToString(Verdict v) {
  switch (v) {
    case Verdict::kProved:
      return "proved";
    case Verdict::kRefuted:
      return "refuted";
    case Verdict::kUnknown:
      return "unknown";
  }
  return "?";
}

namespace {

bool Holds(RelOp op, std::int64_t difference) {
  switch (op) {
    case RelOp::kEq:
      return difference == 0;
    case RelOp::kNe:
      return difference != 0;
    case RelOp::kLt:
      return difference < 0;
    case RelOp::kLe:
      return difference <= 0;
    case RelOp::kGt:
      return difference > 0;
    case RelOp::kGe:
      return difference >= 0;
  }
  return false;
}

// ---------------------------------------------------------------------------------------------------
// 1. Translation

class Translator {
 public:
  explicit Translator(z3::context& ctx) : ctx_(ctx) {}

  z3::expr Var(SizeVarId var) {
    auto it = vars_.find(var);
    if (it != vars_.end()) return it->second;
    z3::expr x = ctx_.int_const(("v" + std::to_string(var.index)).c_str());
    vars_.emplace(var, x);
    return x;
  }

  z3::expr Term(const Dim& d) {
    if (d.IsZero()) return ctx_.int_val(std::int64_t{0});
    std::optional<z3::expr> sum;
    for (const core::Term& t : d.terms()) {
      z3::expr product = ctx_.int_val(t.coefficient);
      for (const core::Factor& f : t.monomial) {
        z3::expr base = Atom(f.atom);
        for (std::int32_t i = 0; i < f.power; ++i) product = product * base;
      }
      sum = sum ? *sum + product : product;
    }
    return *sum;
  }

  z3::expr Formula(const Relation& r) {
    z3::expr a = Term(r.lhs);
    z3::expr b = Term(r.rhs);
    switch (r.op) {
      case RelOp::kEq:
        return a == b;
      case RelOp::kNe:
        return a != b;
      case RelOp::kLt:
        return a < b;
      case RelOp::kLe:
        return a <= b;
      case RelOp::kGt:
        return a > b;
      case RelOp::kGe:
        return a >= b;
    }
    return ctx_.bool_val(false);
  }

  const std::map<SizeVarId, z3::expr>& vars() const { return vars_; }

 private:
  z3::expr Atom(const core::Atom& atom) {
    if (atom.kind == AtomKind::kVar) return Var(atom.var);
    z3::expr operand = Term(*atom.operand);
    z3::expr divisor = ctx_.int_val(atom.divisor);  // >= 2 by core::Dim's invariant
    return atom.kind == AtomKind::kDiv ? operand / divisor : z3::mod(operand, divisor);
  }

  z3::context& ctx_;
  std::map<SizeVarId, z3::expr> vars_;
};

// ---------------------------------------------------------------------------------------------------
// 2. One check

struct Literal {
  const Relation* relation;
  bool negated;
};

struct CheckOutcome {
  z3::check_result result = z3::unknown;
  std::vector<std::size_t> core;                 // indices into the literal list, ascending (unsat only)
  std::optional<std::vector<Assignment>> model;  // sat only
  std::string reason;                            // unknown only
};

std::string DescribeUnknown(const std::string& z3_reason) {
  if (z3_reason == "canceled" || z3_reason.find("resource") != std::string::npos) {
    return "resource limit reached (" + z3_reason + ")";
  }
  return z3_reason;
}

CheckOutcome Check(const Options& options, const std::vector<Literal>& literals, const std::vector<std::size_t>& use,
                   bool want_model) {
  CheckOutcome out;
  try {
    z3::context ctx;
    // The plain SMT kernel: the default solver's preprocessing costs ~5 ms a check and adds nothing
    // for these small queries.
    z3::solver solver(ctx, z3::solver::simple());
    z3::params params(ctx);
    params.set("rlimit", options.rlimit);
    params.set("random_seed", options.random_seed);
    params.set("arith.solver", 2u);  // see solver.h: the default one runs nlsat outside the budget
    solver.set(params);
    Translator translate(ctx);
    z3::expr_vector assumptions(ctx);
    std::vector<std::pair<std::string, std::size_t>> names;  // assumption name -> literal index
    for (std::size_t i : use) {
      const Literal& lit = literals[i];
      z3::expr formula = translate.Formula(*lit.relation);
      if (lit.negated) formula = !formula;
      std::string name = "a" + std::to_string(i);
      z3::expr a = ctx.bool_const(name.c_str());
      solver.add(z3::implies(a, formula));
      assumptions.push_back(a);
      names.emplace_back(std::move(name), i);
    }
    for (const auto& [var, x] : translate.vars()) solver.add(x >= 0);
    out.result = solver.check(assumptions);
    if (out.result == z3::unsat) {
      z3::expr_vector core = solver.unsat_core();
      for (unsigned k = 0; k < core.size(); ++k) {
        std::string name = core[static_cast<int>(k)].decl().name().str();
        for (const auto& [n, i] : names) {
          if (n == name) out.core.push_back(i);
        }
      }
      std::sort(out.core.begin(), out.core.end());
    } else if (out.result == z3::sat && want_model) {
      z3::model model = solver.get_model();
      std::vector<Assignment> values;
      bool fits = true;
      for (const auto& [var, x] : translate.vars()) {
        std::int64_t v = 0;
        if (!model.eval(x, /*model_completion=*/true).is_numeral_i64(v)) fits = false;
        values.push_back(Assignment{var, v});
      }
      if (fits) out.model = std::move(values);
    } else {
      out.reason = DescribeUnknown(solver.reason_unknown());
    }
  } catch (const z3::exception& e) {
    out.result = z3::unknown;
    out.reason = std::string("z3 error: ") + e.msg();
  }
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------------------------------
// 3. Prove

Solver::Solver(Options options) : options_(options) {}

Answer Solver::Prove(const std::vector<Fact>& facts, const Relation& goal) {
  ++stats_.queries;
  // Step 1: decided by normalization.
  if (auto difference = core::Sub(goal.lhs, goal.rhs); difference.ok()) {
    if (auto c = difference->AsConstant(); c && Holds(goal.op, *c)) {
      ++stats_.decided_without_z3;
      Answer answer;
      answer.verdict = Verdict::kProved;
      return answer;
    }
  }

  // Step 2: the canonical query text (names `v<index>` are one-to-one) and the cache.
  std::vector<std::string> printed_facts;
  printed_facts.reserve(facts.size());
  for (const Fact& f : facts) printed_facts.push_back(ToString(f.relation));
  std::map<std::string, const Relation*> unique;  // sorted, de-duplicated
  for (std::size_t i = 0; i < facts.size(); ++i) unique.emplace(printed_facts[i], &facts[i].relation);
  std::string key = "rlimit " + std::to_string(options_.rlimit) + " seed " + std::to_string(options_.random_seed) +
                    (options_.minimize_cores ? " min" : "") + ":";
  for (const auto& [text, relation] : unique) key += " " + text + ";";
  key += " |- " + ToString(goal);

  // Labels for a core given as printed relations: the first fact with each, in the caller's order.
  auto label = [&](const std::vector<std::string>& core_relations) {
    std::vector<std::string> labels;
    std::set<std::string> wanted(core_relations.begin(), core_relations.end());
    for (std::size_t i = 0; i < facts.size(); ++i) {
      if (wanted.erase(printed_facts[i]) > 0) labels.push_back(facts[i].label);
    }
    return labels;
  };

  if (auto it = cache_.find(key); it != cache_.end()) {
    ++stats_.cache_hits;
    Answer answer = it->second.answer;
    answer.core = label(it->second.core_relations);
    answer.from_cache = true;
    return answer;
  }
  ++stats_.cache_misses;

  // Step 3: facts && !goal. Literals 0..k-1 are the unique facts, literal k the goal.
  std::vector<Literal> literals;
  std::vector<std::string> literal_text;
  for (const auto& [text, relation] : unique) {
    literals.push_back(Literal{relation, false});
    literal_text.push_back(text);
  }
  const std::size_t goal_index = literals.size();
  literals.push_back(Literal{&goal, true});
  std::vector<std::size_t> all(literals.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;

  auto run = [&](const std::vector<std::size_t>& use, bool want_model) {
    ++stats_.z3_checks;
    return Check(options_, literals, use, want_model);
  };
  // Shrinks an unsat core (indices, the goal literal possibly among them) to a minimal one by
  // deletion: each fact in turn is left out, and stays out if the rest is still unsat. The goal
  // literal is never left out on purpose, but drops out when the facts alone are contradictory.
  auto minimize = [&](std::vector<std::size_t> core) {
    if (!options_.minimize_cores) return core;
    const std::vector<std::size_t> candidates = core;
    for (std::size_t candidate : candidates) {
      if (candidate == goal_index || !std::binary_search(core.begin(), core.end(), candidate)) continue;
      std::vector<std::size_t> without;
      for (std::size_t i : core) {
        if (i != candidate) without.push_back(i);
      }
      CheckOutcome smaller = run(without, /*want_model=*/false);
      if (smaller.result == z3::unsat) core = smaller.core;  // a subset of `without`
    }
    return core;
  };
  auto to_relations = [&](const std::vector<std::size_t>& core) {
    std::vector<std::string> relations;
    for (std::size_t i : core) {
      if (i != goal_index) relations.push_back(literal_text[i]);
    }
    return relations;
  };

  CachedAnswer result;
  Answer& answer = result.answer;
  CheckOutcome refute_goal = run(all, /*want_model=*/true);
  if (refute_goal.result == z3::unsat) {
    answer.verdict = Verdict::kProved;
    std::vector<std::size_t> core = minimize(refute_goal.core);
    answer.vacuous = !std::binary_search(core.begin(), core.end(), goal_index);
    result.core_relations = to_relations(core);
  } else {
    if (refute_goal.result == z3::sat) answer.counterexample = refute_goal.model;
    // Step 4: facts && goal.
    literals[goal_index].negated = false;
    CheckOutcome hold_goal = run(all, /*want_model=*/false);
    if (hold_goal.result == z3::unsat) {
      answer.verdict = Verdict::kRefuted;
      result.core_relations = to_relations(minimize(hold_goal.core));
    } else if (refute_goal.result == z3::unknown) {
      answer.reason = refute_goal.reason;
    } else if (hold_goal.result == z3::unknown) {
      answer.reason = hold_goal.reason;
    } else {
      answer.reason = "the facts neither imply the goal nor contradict it";
    }
  }
  cache_.emplace(key, result);
  answer.core = label(result.core_relations);
  return answer;
}

}  // namespace weft::solver
