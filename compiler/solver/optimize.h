// Z3's optimizer (z3::optimize) behind a small integer-programming interface, so that only solver/
// includes z3++.h (solver.h says why). Used by compiler/schedule for modulo scheduling and by
// compiler/synth to choose layouts (synth/choose.h).
//
// A problem is integer variables with bounds, linear constraints (sum of coefficient * variable,
// compared with a constant), each optionally guarded by a literal (`x == value` for a variable x,
// so 0/1 variables serve as booleans), and linear objectives minimized lexicographically in the
// order they were added. Solve returns the model and whether Z3 proved it optimal.
//
// Only integer terms are built (Z3 aborts on mixed sorts). Each Solve builds a fresh z3::optimize
// (a fresh context, or a Session's), with a fixed seed, bounded by a resource limit (deterministic)
// and a wall-clock timeout (the caller's promise to its user; a watchdog interrupts Z3 at it); an
// answer cut short by either is reported as such, with the best model found so far when there is
// one.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/dim.h"

namespace weft::solver {

struct LinearTerm {
  std::int64_t coefficient = 1;
  int var = 0;
};

// sum(terms) op rhs, enforced only where `guard_var == guard_value` (no guard when guard_var < 0).
struct LinearConstraint {
  std::vector<LinearTerm> terms;
  core::RelOp op = core::RelOp::kLe;
  std::int64_t rhs = 0;
  int guard_var = -1;
  std::int64_t guard_value = 1;
};

struct OptimizeOptions {
  unsigned timeout_ms = 2000;
  unsigned rlimit = 50'000'000;
  unsigned random_seed = 0;
};

enum class OptimizeStatus : std::uint8_t {
  kOptimal,     // a model, proved optimal for every objective
  kFeasible,    // a model, not proved optimal (limit reached while improving)
  kInfeasible,  // proved: no model
  kUnknown,     // no model within the limits, or a Z3 error (`reason`)
};

struct OptimizeResult {
  OptimizeStatus status = OptimizeStatus::kUnknown;
  std::vector<std::int64_t> values;  // one per variable, when there is a model
  std::string reason;
};

// A Z3 context shared by a sequence of Solve calls: creating one costs more than solving a
// scheduler's problem (120 ms against 20 under AddressSanitizer). Answers depend on the sequence of
// problems a session has seen, so a caller that wants the same answers for the same input gives each
// input its own session. Not thread-safe.
class Session {
 public:
  Session();
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

 private:
  friend class IntegerProgram;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class IntegerProgram {
 public:
  // A new variable lo <= x <= hi; returns its index.
  int Var(std::string name, std::int64_t lo, std::int64_t hi);
  void Add(LinearConstraint constraint) { constraints_.push_back(std::move(constraint)); }
  // Convenience: a op b + c, for variables a and b (guarded like LinearConstraint).
  void AddDifference(int a, core::RelOp op, int b, std::int64_t c, int guard_var = -1, std::int64_t guard_value = 1);
  void Minimize(std::vector<LinearTerm> objective) { objectives_.push_back(std::move(objective)); }

  // In `session`'s context, or a fresh one when null.
  OptimizeResult Solve(const OptimizeOptions& options = {}, Session* session = nullptr) const;

  int size() const { return static_cast<int>(names_.size()); }

 private:
  std::vector<std::string> names_;
  std::vector<std::int64_t> lo_, hi_;
  std::vector<LinearConstraint> constraints_;
  std::vector<std::vector<LinearTerm>> objectives_;
};

std::string_view ToString(OptimizeStatus status);

}  // namespace weft::solver
