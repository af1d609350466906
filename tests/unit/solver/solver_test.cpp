// Tests of the Z3 wrapper (solver/solver.h): verdicts on the obligations the checker makes, minimal
// unsat cores named by the caller's labels, counterexamples, the cache, the budget, determinism.
#include "solver/solver.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <vector>

namespace weft::solver {
namespace {

using core::Dim;
using core::SizeVarId;

const SizeVarId kN{0};
const SizeVarId kM{1};
const SizeVarId kK{2};

Dim Ok(const core::Result<Dim>& r) {
  REQUIRE(r.ok());
  return *r;
}
core::Result<Dim> N() {
  return Dim::Var(kN);
}
core::Result<Dim> M() {
  return Dim::Var(kM);
}
core::Result<Dim> K() {
  return Dim::Var(kK);
}
Dim C(std::int64_t c) {
  return Dim::Constant(c);
}

Relation Rel(const core::Result<Dim>& a, RelOp op, const core::Result<Dim>& b) {
  return Relation{Ok(a), op, Ok(b)};
}
Relation Rel(const core::Result<Dim>& a, RelOp op, std::int64_t b) {
  return Relation{Ok(a), op, C(b)};
}
Fact F(std::string label, Relation r) {
  return Fact{std::move(r), std::move(label)};
}

std::string Names(SizeVarId v) {
  return v == kN ? "n" : v == kM ? "m" : v == kK ? "k" : "?";
}

// Checks a counterexample: every fact holds and the goal fails at its values.
void CheckCounterexample(const std::vector<Fact>& facts, const Relation& goal, const Answer& answer) {
  REQUIRE(answer.counterexample.has_value());
  auto value = [&](SizeVarId var) -> std::int64_t {
    for (const Assignment& a : *answer.counterexample) {
      if (a.var == var) return a.value;
    }
    FAIL("no value for a variable");
    return 0;
  };
  auto holds = [&](const Relation& r) {
    auto l = core::Evaluate(r.lhs, value);
    auto rr = core::Evaluate(r.rhs, value);
    REQUIRE(l.ok());
    REQUIRE(rr.ok());
    switch (r.op) {
      case RelOp::kEq:
        return *l == *rr;
      case RelOp::kNe:
        return *l != *rr;
      case RelOp::kLt:
        return *l < *rr;
      case RelOp::kLe:
        return *l <= *rr;
      case RelOp::kGt:
        return *l > *rr;
      case RelOp::kGe:
        return *l >= *rr;
    }
    return false;
  };
  for (const Assignment& a : *answer.counterexample) CHECK(a.value >= 0);
  for (const Fact& f : facts) CHECK(holds(f.relation));
  CHECK_FALSE(holds(goal));
}

TEST_CASE("Solver proves exact division from a where clause", "[solver]") {
  Solver solver;
  std::vector<Fact> facts = {F("where k % 64", Rel(N() % 64, RelOp::kEq, 0)),
                             F("where k >= 64", Rel(N(), RelOp::kGe, 64))};
  Answer a = solver.Prove(facts, Rel(N() / 64, RelOp::kGe, 1));
  CHECK(a.verdict == Verdict::kProved);
  CHECK(a.core == std::vector<std::string>{"where k >= 64"});  // n >= 64 alone implies n / 64 >= 1
  CHECK_FALSE(a.vacuous);
  CHECK_FALSE(a.counterexample.has_value());

  Answer exact = solver.Prove(facts, Rel(N() / 64 * 64, RelOp::kEq, N()));
  CHECK(exact.verdict == Verdict::kProved);
  CHECK(exact.core == std::vector<std::string>{"where k % 64"});

  // n % 64 == 0 and n >= 1 give n >= 64: both facts needed.
  std::vector<Fact> positive = {F("where k % 64", Rel(N() % 64, RelOp::kEq, 0)), F("noise", Rel(M(), RelOp::kGe, 3)),
                                F("where k >= 1", Rel(N(), RelOp::kGe, 1))};
  Answer both = solver.Prove(positive, Rel(N(), RelOp::kGe, 64));
  CHECK(both.verdict == Verdict::kProved);
  CHECK(both.core == std::vector<std::string>{"where k % 64", "where k >= 1"});
}

TEST_CASE("Solver refutes an impossible goal", "[solver]") {
  Solver solver;
  Relation goal = Rel(N(), RelOp::kEq, N() + 1);
  Answer a = solver.Prove({}, goal);
  CHECK(a.verdict == Verdict::kRefuted);
  CHECK(a.core.empty());
  // Not proved, so a counterexample: any value of n.
  CheckCounterexample({}, goal, a);

  std::vector<Fact> facts = {F("a", Rel(N(), RelOp::kLe, 4)), F("b", Rel(M(), RelOp::kEq, 7))};
  Relation too_big = Rel(N(), RelOp::kGe, 5);
  Answer b = solver.Prove(facts, too_big);
  CHECK(b.verdict == Verdict::kRefuted);
  CHECK(b.core == std::vector<std::string>{"a"});
  CheckCounterexample(facts, too_big, b);
}

TEST_CASE("Solver answers unknown with a counterexample", "[solver]") {
  Solver solver;
  Relation goal = Rel(N(), RelOp::kEq, M());
  Answer a = solver.Prove({}, goal);
  CHECK(a.verdict == Verdict::kUnknown);
  CHECK(a.core.empty());
  CHECK_FALSE(a.reason.empty());
  CheckCounterexample({}, goal, a);
  REQUIRE(a.counterexample->size() == 2);
  CHECK((*a.counterexample)[0].var == kN);
  CHECK((*a.counterexample)[1].var == kM);

  // Slice bounds: 0 <= a <= b <= n does not give b - a >= 1.
  std::vector<Fact> facts = {F("a <= b", Rel(K(), RelOp::kLe, M())), F("b <= n", Rel(M(), RelOp::kLe, N()))};
  Relation nonempty = Rel(M() - K(), RelOp::kGe, 1);
  Answer b = solver.Prove(facts, nonempty);
  CHECK(b.verdict == Verdict::kUnknown);
  CheckCounterexample(facts, nonempty, b);
}

TEST_CASE("Solver decides what normalization decides without Z3", "[solver]") {
  Solver solver;
  Answer a = solver.Prove({}, Rel(2 * N(), RelOp::kNe, 2 * N() + 1));
  CHECK(a.verdict == Verdict::kProved);
  CHECK(a.core.empty());
  CHECK(solver.stats().decided_without_z3 == 1);
  CHECK(solver.stats().z3_checks == 0);
  // Parity is beyond normalization: 2*n != 2*m + 1 needs Z3.
  Answer b = solver.Prove({}, Rel(2 * N(), RelOp::kNe, 2 * M() + 1));
  CHECK(b.verdict == Verdict::kProved);
  CHECK(solver.stats().z3_checks > 0);
}

TEST_CASE("Solver unsat cores name exactly the needed facts", "[solver]") {
  Solver solver;
  // The chain n <= m <= k <= 10 proves n <= 10; the other facts are noise.
  std::vector<Fact> facts = {
      F("noise 1", Rel(N() * M(), RelOp::kGe, 0)), F("n <= m", Rel(N(), RelOp::kLe, M())),
      F("noise 2", Rel(K() % 2, RelOp::kEq, 0)),   F("m <= k", Rel(M(), RelOp::kLe, K())),
      F("noise 3", Rel(M() + N(), RelOp::kGe, 1)), F("k <= 10", Rel(K(), RelOp::kLe, 10)),
      F("noise 4", Rel(N(), RelOp::kLe, 1000000)), F("weaker", Rel(K(), RelOp::kLe, 20)),
  };
  Answer a = solver.Prove(facts, Rel(N(), RelOp::kLe, 10));
  CHECK(a.verdict == Verdict::kProved);
  CHECK(a.core == std::vector<std::string>{"n <= m", "m <= k", "k <= 10"});

  // Refutation cores too: n + m == 5 and n >= 3 leave m <= 2.
  std::vector<Fact> sum = {F("sum", Rel(N() + M(), RelOp::kEq, 5)), F("noise", Rel(K(), RelOp::kGe, 2)),
                           F("n >= 3", Rel(N(), RelOp::kGe, 3))};
  Answer b = solver.Prove(sum, Rel(M(), RelOp::kGe, 3));
  CHECK(b.verdict == Verdict::kRefuted);
  CHECK(b.core == std::vector<std::string>{"sum", "n >= 3"});

  // Contradictory facts prove anything, vacuously, and the core names the contradiction.
  std::vector<Fact> contradiction = {F("n < 2", Rel(N(), RelOp::kLt, 2)), F("m free", Rel(M(), RelOp::kGe, 0)),
                                     F("n > 5", Rel(N(), RelOp::kGt, 5))};
  Answer c = solver.Prove(contradiction, Rel(M(), RelOp::kEq, 3));
  CHECK(c.verdict == Verdict::kProved);
  CHECK(c.vacuous);
  CHECK(c.core == std::vector<std::string>{"n < 2", "n > 5"});
}

TEST_CASE("Solver uses that sizes are non-negative", "[solver]") {
  Solver solver;
  CHECK(solver.Prove({}, Rel(N() + M(), RelOp::kGe, 0)).verdict == Verdict::kProved);
  CHECK(solver.Prove({}, Rel(N() * M(), RelOp::kGe, 0)).verdict == Verdict::kProved);
  CHECK(solver.Prove({}, Rel(N(), RelOp::kLt, 0)).verdict == Verdict::kRefuted);
  // f32[n - 5] obliges n >= 5: not provable without a fact.
  CHECK(solver.Prove({}, Rel(N() - 5, RelOp::kGe, 0)).verdict == Verdict::kUnknown);
  CHECK(solver.Prove({F("where", Rel(N(), RelOp::kGe, 5))}, Rel(N() - 5, RelOp::kGe, 0)).verdict == Verdict::kProved);
}

TEST_CASE("Solver handles reshape products and division atoms", "[solver]") {
  Solver solver;
  // reshape [a*b] of f32[n] with n == a*b given.
  std::vector<Fact> facts = {F("n = m*k", Rel(N(), RelOp::kEq, M() * K()))};
  CHECK(solver.Prove(facts, Rel(M() * K(), RelOp::kEq, N())).verdict == Verdict::kProved);
  CHECK(solver.Prove(facts, Rel(K() * M() + 0, RelOp::kLe, N())).verdict == Verdict::kProved);
  // Floor semantics agree with core::Dim: (n + 63) / 64 * 64 >= n.
  CHECK(solver.Prove({}, Rel((N() + 63) / 64 * 64, RelOp::kGe, N())).verdict == Verdict::kProved);
  CHECK(solver.Prove({}, Rel((N() + 63) / 64 * 64, RelOp::kLt, N() + 64)).verdict == Verdict::kProved);
  CHECK(solver.Prove({}, Rel(N() % 64, RelOp::kLt, 64)).verdict == Verdict::kProved);
  // Negative operands: (n - 1) / 2 at n = 0 is -1 (floor), and Z3 must agree.
  CHECK(solver.Prove({F("n == 0", Rel(N(), RelOp::kEq, 0))}, Rel((N() - 1) / 2, RelOp::kEq, -1)).verdict ==
        Verdict::kProved);
  CHECK(solver.Prove({F("n == 0", Rel(N(), RelOp::kEq, 0))}, Rel((N() - 1) % 2, RelOp::kEq, 1)).verdict ==
        Verdict::kProved);
}

TEST_CASE("Solver caches answers by the canonical query", "[solver]") {
  Solver solver;
  std::vector<Fact> facts = {F("first", Rel(N() % 64, RelOp::kEq, 0)), F("second", Rel(N(), RelOp::kGe, 64))};
  Relation goal = Rel(N() / 64, RelOp::kGe, 1);
  Answer a = solver.Prove(facts, goal);
  CHECK_FALSE(a.from_cache);
  CHECK(solver.stats().cache_misses == 1);
  CHECK(solver.stats().cache_hits == 0);
  std::int64_t checks = solver.stats().z3_checks;

  Answer b = solver.Prove(facts, goal);
  CHECK(b.from_cache);
  CHECK(b.verdict == a.verdict);
  CHECK(b.core == a.core);
  CHECK(solver.stats().cache_hits == 1);
  CHECK(solver.stats().z3_checks == checks);

  // The same facts in another order, written differently, under other labels: the same query.
  std::vector<Fact> reordered = {F("B", Rel(64 + 0 * M(), RelOp::kLe, N())), F("A", Rel(N() % 64, RelOp::kEq, 0)),
                                 F("A again", Rel(N() % 64, RelOp::kEq, 0))};
  Answer c = solver.Prove(reordered, Rel(N() / 64, RelOp::kGe, 1));
  // 64 <= n prints differently from n >= 64: a different query, a miss.
  CHECK_FALSE(c.from_cache);
  std::vector<Fact> relabelled = {F("B", Rel(N(), RelOp::kGe, 64)), F("A", Rel(N() % 64, RelOp::kEq, 0)),
                                  F("A again", Rel(N() % 64, RelOp::kEq, 0))};
  Answer d = solver.Prove(relabelled, goal);
  CHECK(d.from_cache);
  CHECK(d.core == std::vector<std::string>{"B"});  // labels of this query's facts

  CHECK(solver.stats().cache_hits == 2);
  CHECK(solver.stats().cache_misses == 2);
  solver.ClearCache();
  CHECK_FALSE(solver.Prove(facts, goal).from_cache);
}

TEST_CASE("Solver returns unknown when the budget runs out", "[solver]") {
  // x^3 + y^3 == z^3 with x, y, z >= 1 has no solution (Fermat, n = 3), which Z3 cannot show: the
  // check must stop within its budget and say unknown, not run on.
  std::vector<Fact> facts = {F("n >= 1", Rel(N(), RelOp::kGe, 1)), F("m >= 1", Rel(M(), RelOp::kGe, 1)),
                             F("k >= 1", Rel(K(), RelOp::kGe, 1))};
  Relation goal = Rel(N() * N() * N() + M() * M() * M(), RelOp::kNe, K() * K() * K());
  for (unsigned rlimit : {20'000u, Options().rlimit}) {
    Solver solver(Options{.rlimit = rlimit});
    auto start = std::chrono::steady_clock::now();
    Answer a = solver.Prove(facts, goal);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    INFO("rlimit " << rlimit << " reason " << a.reason << " seconds " << seconds);
    CHECK(a.verdict == Verdict::kUnknown);
    CHECK_FALSE(a.reason.empty());
    CHECK(seconds < 30);  // generous for sanitizer builds; in practice well under a second
  }
  // A tiny budget cannot even decide an easy query: unknown, with the budget named as the reason.
  Solver tiny(Options{.rlimit = 1});
  Answer t = tiny.Prove({F("n % 64", Rel(N() % 64, RelOp::kEq, 0)), F("n >= 64", Rel(N(), RelOp::kGe, 64))},
                        Rel(N() / 64, RelOp::kGe, 1));
  CHECK(t.verdict == Verdict::kUnknown);
  CHECK(t.reason.find("resource limit") != std::string::npos);
}

TEST_CASE("Solver answers are deterministic", "[solver]") {
  std::vector<Fact> facts = {F("x", Rel(N() + M(), RelOp::kEq, 10)), F("y", Rel(N(), RelOp::kLe, K()))};
  Relation goal = Rel(M(), RelOp::kGe, 3);
  Answer first = Solver().Prove(facts, goal);
  for (int i = 0; i < 3; ++i) {
    Answer again = Solver().Prove(facts, goal);
    CHECK(again.verdict == first.verdict);
    CHECK(again.core == first.core);
    CHECK(again.counterexample == first.counterexample);
  }
}

TEST_CASE("Solver prints relations", "[solver]") {
  CHECK(ToString(Rel(N() % 64, RelOp::kEq, 0), Names) == "n % 64 == 0");
  CHECK(ToString(Rel(N() + M(), RelOp::kLe, K() - 1), Names) == "m + n <= k - 1");
  CHECK(Spelling(RelOp::kNe) == "!=");
  CHECK(ToString(Verdict::kRefuted) == "refuted");
}

}  // namespace
}  // namespace weft::solver
