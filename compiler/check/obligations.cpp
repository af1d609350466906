// Obligations: facts about dims that unification could not decide (language.md, Types, and the
// rigid-size rules). Each is decided at the end of its definition, against that definition's
// `where` facts and the fact that every size is >= 0:
//  1. Normalization decides most: `n % 64 == 0` with `n / 64` written, `2*n == 2*n + 1`, `n + 1 >= 1`.
//  2. A goal stated by a `where` fact (up to normalization) holds.
//  3. Z3 (through compiler/solver, bounded by its resource limit) decides the rest from the facts.
//  4. What remains is unknown: over rigid sizes an error that suggests the `where` clause to add;
//     over sizes known only at run time (in `main`) a run-time check; over inferred sizes of an
//     unannotated function an error asking for annotations.
#include <map>

#include "check/checker.h"
#include "solver/solver.h"

namespace weft::check {
namespace {

enum class Verdict { Proved, Refuted, Unknown };

// `e >= 0` for every value of the sizes (all >= 0)? Decided from signs alone: a polynomial whose
// coefficients are all >= 0 is >= 0; one whose are all <= 0 with a negative constant is < 0.
Verdict NonNegative(const Dim& e);

// Variables and Mod atoms are >= 0, and so is a Div atom whose operand is.
bool MonomialNonNegative(const core::Monomial& monomial) {
  for (const core::Factor& factor : monomial) {
    if (factor.atom.kind == core::AtomKind::kDiv && NonNegative(*factor.atom.operand) != Verdict::Proved) {
      return false;
    }
  }
  return true;
}

Verdict NonNegative(const Dim& e) {
  if (auto c = e.AsConstant()) return *c >= 0 ? Verdict::Proved : Verdict::Refuted;
  bool all_non_negative = true, all_non_positive = true;
  for (const core::Term& term : e.terms()) {
    if (!MonomialNonNegative(term.monomial)) return Verdict::Unknown;
    if (term.coefficient > 0) all_non_positive = false;
    if (term.coefficient < 0) all_non_negative = false;
  }
  if (all_non_negative) return Verdict::Proved;
  if (all_non_positive && e.ConstantTerm() < 0) return Verdict::Refuted;
  return Verdict::Unknown;
}

std::optional<Dim> Difference(const Dim& a, const Dim& b) {
  core::Result<Dim> d = core::Sub(a, b);
  if (!d) return std::nullopt;
  return *d;
}

// Decides `lhs relation rhs` from normalization alone.
Verdict DecideAlone(const Dim& lhs, Relation relation, const Dim& rhs) {
  std::optional<Dim> d = Difference(lhs, rhs);  // lhs - rhs
  std::optional<Dim> r = Difference(rhs, lhs);  // rhs - lhs
  if (!d || !r) return Verdict::Unknown;
  auto negate = [](Verdict v) {
    return v == Verdict::Proved ? Verdict::Refuted : v == Verdict::Refuted ? Verdict::Proved : Verdict::Unknown;
  };
  switch (relation) {
    case Relation::kEq:
      if (d->IsZero()) return Verdict::Proved;
      if (d->AsConstant()) return Verdict::Refuted;
      // `2*n + 1 == 0`: all coefficients positive and a positive constant cannot be zero.
      if (NonNegative(*d) == Verdict::Proved && d->ConstantTerm() > 0) return Verdict::Refuted;
      if (NonNegative(*r) == Verdict::Proved && r->ConstantTerm() > 0) return Verdict::Refuted;
      return Verdict::Unknown;
    case Relation::kNe:
      return negate(DecideAlone(lhs, Relation::kEq, rhs));
    case Relation::kLe:
      return NonNegative(*r);
    case Relation::kGe:
      return NonNegative(*d);
    case Relation::kLt:
      return negate(NonNegative(*d));
    case Relation::kGt:
      return negate(NonNegative(*r));
  }
  return Verdict::Unknown;
}

bool SameFact(const DimFact& fact, const Dim& lhs, Relation relation, const Dim& rhs) {
  auto flip = [](Relation r) {
    switch (r) {
      case Relation::kLt:
        return Relation::kGt;
      case Relation::kLe:
        return Relation::kGe;
      case Relation::kGt:
        return Relation::kLt;
      case Relation::kGe:
        return Relation::kLe;
      default:
        return r;
    }
  };
  std::optional<Dim> goal = Difference(lhs, rhs);
  std::optional<Dim> have = Difference(fact.lhs, fact.rhs);
  if (!goal || !have) return false;
  if (fact.relation == relation && *goal == *have) return true;
  std::optional<Dim> flipped = Difference(fact.rhs, fact.lhs);
  if (flipped && fact.relation == flip(relation) && *goal == *flipped) return true;
  // An equation holds either way round.
  return (relation == Relation::kEq || relation == Relation::kNe) && fact.relation == relation && flipped &&
         *goal == *flipped;
}

// `e >= 0` as a person would write it: terms with a positive coefficient on the left, the others
// moved to the right (`-n + 5 >= 0` is `n <= 5`, `a - b >= 0` is `a >= b`).
std::string NaturalNonNegative(TypePrinter& printer, const Dim& e) {
  auto term_dim = [](const core::Term& term) {
    core::Result<Dim> out = Dim::Constant(term.coefficient < 0 ? -term.coefficient : term.coefficient);
    for (const core::Factor& factor : term.monomial) {
      Dim atom = factor.atom.kind == core::AtomKind::kVar   ? Dim::Var(factor.atom.var)
                 : factor.atom.kind == core::AtomKind::kDiv ? *core::Div(*factor.atom.operand, factor.atom.divisor)
                                                            : *core::Mod(*factor.atom.operand, factor.atom.divisor);
      for (std::int32_t i = 0; i < factor.power && out; ++i) out = out * core::Result<Dim>(atom);
    }
    return out;
  };
  core::Result<Dim> left = Dim(), right = Dim();
  bool has_left_vars = false;
  for (const core::Term& term : e.terms()) {
    if (term.monomial.empty()) continue;
    if (term.coefficient > 0) {
      left = left + term_dim(term);
      has_left_vars = true;
    } else {
      right = right + term_dim(term);
    }
  }
  if (!left || !right) return printer.Print(e) + " >= 0";
  if (!has_left_vars) return printer.Print(*right) + " <= " + std::to_string(e.ConstantTerm());
  right = right - e.ConstantTerm();
  if (!right) return printer.Print(e) + " >= 0";
  return printer.Print(*left) + " >= " + printer.Print(*right);
}

// Whether one simple assignment (every size the same value) satisfies all the facts: a witness
// that they are consistent, found without Z3. Most `where` clauses (`k % 64 == 0`, `n >= 4`) have
// one, so the contradiction check calls Z3 only for the rare clauses that might conflict.
bool HasSimpleWitness(const std::vector<DimFact>& facts) {
  for (std::int64_t value : {0, 1, 64, 840, 6720, 1 << 20}) {
    bool all = true;
    for (const DimFact& f : facts) {
      auto evaluate = [&](const Dim& d) { return core::Evaluate(d, [&](SizeVarId) { return value; }); };
      core::Result<std::int64_t> l = evaluate(f.lhs), r = evaluate(f.rhs);
      if (!l || !r || DecideAlone(Dim::Constant(*l), f.relation, Dim::Constant(*r)) != Verdict::Proved) {
        all = false;
        break;
      }
    }
    if (all) return true;
  }
  return false;
}

}  // namespace

void Checker::ObligeNonNegative(const Dim& d, Span span) {
  Oblige(
      DimFact{d, Relation::kGe, Dim(), span},
      [this, d, span](bool refuted) {
        TypePrinter printer(vars_);
        Dim value = vars_.Resolve(d);
        std::string text = printer.Print(value);
        diagnostics_.Emit(
            DiagnosticKind::NegativeDim, span, text,
            refuted ? " is negative" : " may be negative: add `where " + NaturalNonNegative(printer, value) + "`");
      },
      "a dimension that is not negative");
}

void Checker::Oblige(DimFact goal, Report report, std::string what) {
  obligations_.push_back({std::move(goal), std::move(report), std::move(what), current_expr_});
}

std::vector<solver::Fact> Checker::SolverFacts(const std::vector<DimFact>& facts) const {
  std::vector<solver::Fact> out;
  for (std::size_t i = 0; i < facts.size(); ++i)
    out.push_back({{vars_.Resolve(facts[i].lhs), facts[i].relation, vars_.Resolve(facts[i].rhs)}, std::to_string(i)});
  return out;
}

std::vector<const DimFact*> Checker::WrittenFacts(const std::vector<std::string>& core) const {
  std::vector<const DimFact*> out;
  for (const std::string& label : core)
    if (std::size_t i = std::stoul(label); i < facts_.size()) out.push_back(&facts_[i]);
  return out;
}

void Checker::Discharge(CheckedDef& def, bool has_params) {
  std::vector<DimFact> facts;
  for (const DimFact& f : facts_) facts.push_back({vars_.Resolve(f.lhs), f.relation, vars_.Resolve(f.rhs), f.span});
  // Facts `v % c == 0` over a single size variable v, as the substitution v := c*q (q fresh).
  std::map<SizeVarId, Dim> divisible;
  for (const DimFact& f : facts) {
    if (f.relation != Relation::kEq) continue;
    for (auto [mod, zero] : {std::pair{f.lhs, f.rhs}, std::pair{f.rhs, f.lhs}}) {
      if (!zero.IsZero() || mod.terms().size() != 1 || mod.terms()[0].coefficient != 1) continue;
      const core::Monomial& m = mod.terms()[0].monomial;
      if (m.size() != 1 || m[0].power != 1 || m[0].atom.kind != core::AtomKind::kMod) continue;
      std::optional<SizeVarId> v = m[0].atom.operand->AsVar();
      if (!v || divisible.count(*v)) continue;
      core::Result<Dim> multiple = core::Mul(Dim::Constant(m[0].atom.divisor), Dim::Var(vars_.NewSizeVar()));
      if (multiple) divisible.emplace(*v, *multiple);
    }
  }
  // Built again at each use: `facts` grows by the obligations assumed below.
  auto solver_facts = [&] { return SolverFacts(facts); };
  // Facts that contradict each other make every obligation hold vacuously: an error of their own.
  if (!facts.empty() && !HasSimpleWitness(facts)) {
    solver::Answer answer = core_solver_.Prove(solver_facts(), {Dim(), Relation::kEq, Dim::Constant(1)});
    if (answer.verdict == solver::Verdict::kProved) {
      std::vector<const DimFact*> core = WrittenFacts(answer.core);
      std::string listed;
      for (std::size_t i = 0; i < core.size(); ++i) {
        listed += std::string(i == 0                 ? ""
                              : i + 1 == core.size() ? " and "
                                                     : ", ") +
                  "`" + std::string(sources_.Text(core[i]->span)) + "`";
      }
      Span span = core.empty() ? facts_.front().span : core.front()->span.To(core.back()->span);
      diagnostics_.Emit(DiagnosticKind::WhereContradiction, span, listed.empty() ? "them" : listed);
      def.ok = false;
      obligations_.clear();
      return;
    }
  }
  for (Obligation& obligation : obligations_) {
    Dim lhs = vars_.Resolve(obligation.goal.lhs);
    Dim rhs = vars_.Resolve(obligation.goal.rhs);
    Relation relation = obligation.goal.relation;
    Verdict verdict = DecideAlone(lhs, relation, rhs);
    if (verdict == Verdict::Unknown) {
      for (const DimFact& fact : facts) {
        if (SameFact(fact, lhs, relation, rhs)) verdict = Verdict::Proved;
      }
    }
    if (verdict == Verdict::Unknown && !divisible.empty()) {
      // Under `v % c == 0`, v is c*q: substituting lets normalization cancel `c*(v / c)` against v.
      core::Result<Dim> l = core::Substitute(lhs, divisible), r = core::Substitute(rhs, divisible);
      if (l && r) verdict = DecideAlone(*l, relation, *r) == Verdict::Proved ? Verdict::Proved : Verdict::Unknown;
    }
    if (verdict == Verdict::Unknown) {
      solver::Answer answer = solver_.Prove(solver_facts(), {lhs, relation, rhs});
      if (answer.verdict == solver::Verdict::kProved) verdict = Verdict::Proved;
      // Refuted under the facts only if the facts themselves are consistent.
      if (answer.verdict == solver::Verdict::kRefuted && !answer.vacuous) verdict = Verdict::Refuted;
    }
    if (verdict == Verdict::Proved) continue;
    if (verdict == Verdict::Refuted) {
      std::size_t before = diagnostics_.all().size();
      obligation.report(true);
      def.ok = false;
      // A refutation that needs `where` facts points at them (Z3's minimal unsat core).
      if (diagnostics_.all().size() > before && !facts.empty()) {
        solver::Answer answer = core_solver_.Prove(solver_facts(), {lhs, relation, rhs});
        Diagnostic& error = diagnostics_.last();
        for (const DimFact* fact : WrittenFacts(answer.core)) {
          error.notes.push_back(
              MakeNote(DiagnosticKind::NoteWhereFact, fact->span, std::string(sources_.Text(fact->span))));
        }
      }
      continue;
    }
    // Unknown: who owns the sizes decides what happens.
    bool runtime = false, inferred = false;
    for (const Dim& side : {lhs, rhs}) {
      for (SizeVarId v : side.Vars()) {
        VarKind kind = vars_.info(v).kind;
        runtime = runtime || kind == VarKind::Runtime || (in_main_ && kind == VarKind::Flexible);
        inferred = inferred || kind == VarKind::Flexible;
      }
    }
    if (runtime) {
      RuntimeCheck check{DimFact{lhs, relation, rhs, obligation.goal.span}, obligation.what};
      runtime_checks_.push_back(check);
      elaboration_.checks[obligation.where.index].push_back(std::move(check));
    } else if (inferred && !has_params) {
      obligation.report(false);
      def.ok = false;
    } else if (inferred && diagnostics_.error_count() > errors_at_start_) {
      // Sizes left open by an earlier error of the definition (an argument that did not unify):
      // asking for annotations would only echo it.
      def.ok = false;
    } else if (inferred) {
      TypePrinter p(vars_);
      diagnostics_.Emit(DiagnosticKind::UndecidedObligation, obligation.goal.span,
                        "`" + p.Print(lhs) + " " + std::string(Spelling(relation)) + " " + p.Print(rhs) + "`",
                        current_);
      def.ok = false;
    } else {
      std::size_t before = diagnostics_.all().size();
      obligation.report(false);
      def.ok = false;
      // Assume it from here on, so that one missing `where` clause is reported once.
      facts.push_back(DimFact{lhs, relation, rhs, obligation.goal.span});
      // Point at where each rigid size of the goal was bound: the facts that could not be related.
      if (diagnostics_.all().size() > before) {
        Diagnostic& error = diagnostics_.last();
        for (const Dim& side : {lhs, rhs}) {
          for (SizeVarId v : side.Vars()) {
            const auto& info = vars_.info(v);
            bool noted = false;
            for (const Note& n : error.notes)
              noted = noted || (n.span.begin == info.origin.begin && n.span.file == info.origin.file);
            if (info.origin.valid() && !noted)
              error.notes.push_back(MakeNote(DiagnosticKind::NoteBoundHere, info.origin, info.name));
          }
        }
      }
    }
  }
  obligations_.clear();
}

void Checker::RetryBroadcasts(bool report) {
  bool progress = true;
  while (progress && !pending_.empty()) {
    progress = false;
    for (std::size_t i = 0; i < pending_.size(); ++i) {
      PendingBroadcast p = pending_[i];
      Broadcast b = BroadcastShapes(unifier_, vars_, p.lhs, p.rhs);
      if (b.status == Broadcast::Status::Ambiguous) continue;
      pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(i));
      // What was deferred is checked now, never dropped: a mismatch, the result's shape against what
      // the rest of the definition made it (`map (fn t -> t + x)` with x: f32[3] makes it `[]`), and
      // the dims the broadcast needs equal.
      std::string detail = b.message;
      if (b.status == Broadcast::Status::Ok) {
        if (auto m = unifier_.UnifyShape(Shape::Spread(p.result), b.shape)) {
          detail = "its result is needed with another shape here: " + m->message;
        }
      }
      if (!detail.empty()) {
        unifier_.TakeDeferred();
        if (report) p.report(detail);
      } else {
        for (DeferredEquality& eq : unifier_.TakeDeferred()) {
          Oblige(
              DimFact{eq.lhs, Relation::kEq, eq.rhs, p.span},
              [report = p.report_dims, eq](bool refuted) { report(refuted, eq.lhs, eq.rhs); }, "a broadcast");
        }
      }
      progress = true;
      break;
    }
  }
  if (report) {
    for (PendingBroadcast& p : pending_) p.report("");
  }
  pending_.clear();
}

}  // namespace weft::check
