// IntegerProgram over z3::optimize; see optimize.h.
#include "solver/optimize.h"

#include <z3++.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

namespace weft::solver {

std::string_view ToString(OptimizeStatus status) {
  switch (status) {
    case OptimizeStatus::kOptimal:
      return "optimal";
    case OptimizeStatus::kFeasible:
      return "feasible";
    case OptimizeStatus::kInfeasible:
      return "infeasible";
    case OptimizeStatus::kUnknown:
      return "unknown";
  }
  return "?";
}

int IntegerProgram::Var(std::string name, std::int64_t lo, std::int64_t hi) {
  names_.push_back(std::move(name));
  lo_.push_back(lo);
  hi_.push_back(hi);
  return size() - 1;
}

void IntegerProgram::AddDifference(int a, core::RelOp op, int b, std::int64_t c, int guard_var,
                                   std::int64_t guard_value) {
  Add(LinearConstraint{{{1, a}, {-1, b}}, op, c, guard_var, guard_value});
}

namespace {

z3::expr Compare(const z3::expr& lhs, core::RelOp op, const z3::expr& rhs) {
  switch (op) {
    case core::RelOp::kEq:
      return lhs == rhs;
    case core::RelOp::kNe:
      return lhs != rhs;
    case core::RelOp::kLt:
      return lhs < rhs;
    case core::RelOp::kLe:
      return lhs <= rhs;
    case core::RelOp::kGt:
      return lhs > rhs;
    case core::RelOp::kGe:
      return lhs >= rhs;
  }
  return lhs == rhs;
}

}  // namespace

struct Session::Impl {
  z3::context ctx;
};
Session::Session() : impl_(std::make_unique<Impl>()) {}
Session::~Session() = default;

OptimizeResult IntegerProgram::Solve(const OptimizeOptions& options, Session* session) const {
  OptimizeResult out;
  try {
    std::optional<z3::context> own;
    if (!session) own.emplace();
    z3::context& ctx = session ? session->impl_->ctx : *own;
    ctx.set("smt.random_seed", std::to_string(options.random_seed).c_str());
    z3::params params(ctx);
    params.set("timeout", options.timeout_ms);
    params.set("rlimit", options.rlimit);
    std::vector<z3::expr> vars;
    vars.reserve(names_.size());
    std::vector<z3::expr> assertions;
    for (int i = 0; i < size(); ++i) {
      vars.push_back(ctx.int_const(names_[i].c_str()));
      assertions.push_back(vars[i] >= ctx.int_val(lo_[i]));
      assertions.push_back(vars[i] <= ctx.int_val(hi_[i]));
    }
    auto sum = [&](const std::vector<LinearTerm>& terms) {
      z3::expr s = ctx.int_val(std::int64_t{0});
      for (const LinearTerm& t : terms) s = s + ctx.int_val(t.coefficient) * vars[t.var];
      return s;
    };
    for (const LinearConstraint& c : constraints_) {
      z3::expr f = Compare(sum(c.terms), c.op, ctx.int_val(c.rhs));
      if (c.guard_var >= 0) f = z3::implies(vars[c.guard_var] == ctx.int_val(c.guard_value), f);
      assertions.push_back(f);
    }
    z3::check_result result = z3::unknown;
    std::optional<z3::model> model;
    std::string reason;
    // Z3's interrupt is not checked in every phase either, hence also the resource limit: a watchdog
    // interrupts the context at the deadline (a 2-second limit once ran 40 seconds without it).
    auto watched = [&](auto&& check) {
      std::mutex mutex;
      std::condition_variable done;
      bool finished = false;
      z3::context* context = &ctx;
      std::thread watchdog([&, context] {
        std::unique_lock lock(mutex);
        if (!done.wait_for(lock, std::chrono::milliseconds(options.timeout_ms), [&] { return finished; }))
          context->interrupt();
      });
      z3::check_result r = check();
      {
        std::lock_guard lock(mutex);
        finished = true;
      }
      done.notify_one();
      watchdog.join();
      return r;
    };
    if (objectives_.empty()) {
      // Feasibility alone: the solver for linear integer arithmetic (simplex, branch and bound,
      // cuts) decides the scheduler's disjunctive problems far faster than the optimizer's core.
      z3::solver solver(ctx, "QF_LIA");
      solver.set(params);
      for (const z3::expr& a : assertions) solver.add(a);
      result = watched([&] { return solver.check(); });
      if (result == z3::sat) model = solver.get_model();
      if (result == z3::unknown) reason = solver.reason_unknown();
    } else {
      z3::optimize opt(ctx);
      params.set("priority", ctx.str_symbol("lex"));
      opt.set(params);
      for (const z3::expr& a : assertions) opt.add(a);
      for (const auto& objective : objectives_) opt.minimize(sum(objective));
      result = watched([&] { return opt.check(); });
      if (result != z3::unsat) {
        // sat: every objective at its optimum. unknown: the limits cut the search; the model, if
        // any, is the best found so far.
        model = opt.get_model();
        if (result == z3::unknown) {
          reason = Z3_optimize_get_reason_unknown(ctx, opt);
          if (model->num_consts() == 0) model.reset();
        }
      }
    }
    out.reason = reason;
    if (result == z3::unsat) {
      out.status = OptimizeStatus::kInfeasible;
      return out;
    }
    if (!model) return out;
    for (const z3::expr& v : vars) {
      z3::expr value = model->eval(v, true);
      std::int64_t x = 0;
      if (!value.is_numeral_i64(x)) {
        out.status = OptimizeStatus::kUnknown;
        out.values.clear();
        out.reason = "a value does not fit in int64";
        return out;
      }
      out.values.push_back(x);
    }
    out.status = result == z3::sat ? OptimizeStatus::kOptimal : OptimizeStatus::kFeasible;
  } catch (const z3::exception& e) {
    out.status = OptimizeStatus::kUnknown;
    out.values.clear();
    out.reason = e.msg();
  }
  return out;
}

}  // namespace weft::solver
