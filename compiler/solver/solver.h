// The one wrapper around Z3. The checker (and later synth/ and schedule/) asks: do these facts about
// sizes imply this goal? Z3 aborts the process when sorts are mixed instead of throwing, so nothing
// but solver.cpp includes z3++.h, and solver.cpp builds only integer terms.
//
// How Prove answers `facts |- goal`:
//   1. A goal that normalization decides (lhs - rhs is a constant that satisfies op) is Proved
//      without Z3.
//   2. The query is printed canonically (facts sorted and de-duplicated, variables by id); a cached
//      answer for the same text is returned as is (labels re-attached to this query's facts).
//   3. Z3 checks facts && !goal with one assumption literal per fact and one for !goal. unsat: the goal
//      is Proved; the unsat core, shrunk to a minimal one by deletion, names the facts it needs (if
//      !goal is not in the core, the facts contradict each other: `vacuous`). sat: the model is a
//      counterexample.
//   4. Otherwise Z3 checks facts && goal: unsat means the goal can never hold (Refuted, with a minimal
//      core); sat or unknown leaves the answer Unknown.
//
// Semantics: every size variable is an integer >= 0 (asserted for every variable the query mentions;
// not a labelled fact, so never in a core). Div/Mod atoms become Z3's integer div/mod by a positive
// constant. Z3's are Euclidean (0 <= a mod d < |d|), which for d > 0 is exactly floor division and
// floor modulo for every integer a, negative included: the same semantics as core::Dim.
//
// Determinism: each Z3 check runs in a fresh context with a fixed random seed, bounded by Z3's
// resource limit (`rlimit`), never by wall-clock time, so an answer does not depend on the machine,
// its load, or earlier queries. Z3 4.8.12's default arithmetic solver (arith.solver=6) spends
// unbounded time on nonlinear integer problems without charging rlimit (x^3 + y^3 == z^3 ran 80 s
// under rlimit 100000, and past 60 s with arith.nl.nra, grobner and horner off), so the wrapper uses
// Z3's older arithmetic solver (`arith.solver=2`), which respects the budget, in the plain SMT kernel
// (`solver::simple()`, ~1 ms a check). The price: a few nonlinear facts the newer solver proves are
// Unknown here (`n <= m |- n*n <= m*m`).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/dim.h"

namespace weft::solver {

using core::RelOp;

// lhs op rhs over integers.
struct Relation {
  core::Dim lhs;
  RelOp op = RelOp::kEq;
  core::Dim rhs;
};

// `n % 64 == 0`, dims printed by core::ToString.
std::string ToString(const Relation& r, const core::SizeVarNames& names = {});

// Something known: a `where` clause, a unification, a slice bound. `label` is the caller's name for
// it (an index into its own table, a description); Prove returns labels, never interprets them.
struct Fact {
  Relation relation;
  std::string label;
};

enum class Verdict : std::uint8_t {
  kProved,   // the facts imply the goal
  kRefuted,  // the facts and the goal cannot hold together: the goal is false wherever the facts hold
  kUnknown,  // the goal holds for some values and not others, or Z3 gave up within its budget
};

std::string_view ToString(Verdict v);

struct Assignment {
  core::SizeVarId var;
  std::int64_t value = 0;

  friend bool operator==(const Assignment&, const Assignment&) = default;
};

struct Answer {
  Verdict verdict = Verdict::kUnknown;
  // Proved / Refuted: the labels of a minimal set of facts that the proof needs, in the order the
  // facts were given (empty when the goal alone decides). Empty for Unknown.
  std::vector<std::string> core;
  // Proved only because the facts contradict each other (`core` names the contradicting facts).
  bool vacuous = false;
  // When the goal is not proved and Z3 found values where every fact holds and the goal fails: the
  // value of every size variable of the query, sorted by variable. Absent when there is none, when Z3
  // did not find one, or when a value does not fit in int64.
  std::optional<std::vector<Assignment>> counterexample;
  // Unknown: why (`resource limit reached`, Z3's incompleteness reason, an overflow or Z3 error).
  std::string reason;
  bool from_cache = false;
};

struct Options {
  // Z3's resource budget for each check (Prove makes at most 2 checks plus one per fact of a core it
  // minimizes). Resource units, not time; the default decides ordinary obligations in milliseconds.
  unsigned rlimit = 2'000'000;
  unsigned random_seed = 0;
  // Shrink unsat cores to minimal ones (each fact removed in turn, kept if the rest is satisfiable).
  bool minimize_cores = true;
};

struct Stats {
  std::int64_t queries = 0;
  std::int64_t cache_hits = 0;
  std::int64_t cache_misses = 0;
  std::int64_t decided_without_z3 = 0;
  std::int64_t z3_checks = 0;
};

// Not thread-safe: one Solver per thread.
class Solver {
 public:
  explicit Solver(Options options = {});

  // Does `facts` imply `goal`? See the file comment. Never throws; Z3 errors are Unknown answers.
  Answer Prove(const std::vector<Fact>& facts, const Relation& goal);

  const Stats& stats() const { return stats_; }
  void ClearCache() { cache_.clear(); }

 private:
  // An answer with its core as printed relations (so it can be re-labelled for a later query).
  struct CachedAnswer {
    Answer answer;
    std::vector<std::string> core_relations;
  };

  Options options_;
  std::unordered_map<std::string, CachedAnswer> cache_;
  Stats stats_;
};

}  // namespace weft::solver
