// Whether a kernel stores every element of an `out` parameter; stores.h states the proof.
#include "tile/stores.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <set>

namespace weft::tile {

namespace {

using core::Dim;
using core::SizeVarId;

// A scalar of the kernel as base + coefficient * block_idx[axis] (no block index: coefficient 0).
struct Affine {
  Dim base;
  int axis = -1;
  std::int64_t coefficient = 0;
};

std::optional<Dim> Ok(const core::Result<Dim>& d) {
  if (!d) return std::nullopt;
  return *d;
}

// Step 1: each size a `where` fact pins, as a dim of fresh sizes (n % 128 == 0: n = 128 * n').
std::map<SizeVarId, Dim> FactSubstitution(const Kernel& kernel) {
  std::uint32_t fresh = 0;
  for (const auto& [var, name] : kernel.size_names) fresh = std::max(fresh, var.index + 1);
  for (const core::DimFact& fact : kernel.where)
    for (const Dim* side : {&fact.lhs, &fact.rhs})
      for (SizeVarId v : side->Vars()) fresh = std::max(fresh, v.index + 1);
  std::map<SizeVarId, std::int64_t> multiple_of;
  std::map<SizeVarId, std::int64_t> equal_to;
  for (const core::DimFact& fact : kernel.where) {
    if (fact.relation != core::RelOp::kEq) continue;
    auto diff = core::Sub(fact.lhs, fact.rhs);
    if (!diff || diff->terms().size() != 1) {
      // `n == c` (or `c == n`): n - c with one variable term and a constant.
      if (diff && diff->terms().size() == 2 && diff->terms()[1].monomial.empty()) {
        const core::Term& t = diff->terms()[0];
        if ((t.coefficient == 1 || t.coefficient == -1) && t.monomial.size() == 1 && t.monomial[0].power == 1 &&
            t.monomial[0].atom.kind == core::AtomKind::kVar)
          equal_to[t.monomial[0].atom.var] = -diff->ConstantTerm() * t.coefficient;
      }
      continue;
    }
    const core::Term& t = diff->terms()[0];
    if (t.monomial.size() != 1 || t.monomial[0].power != 1) continue;
    const core::Atom& atom = t.monomial[0].atom;
    if (atom.kind != core::AtomKind::kMod) continue;
    std::optional<SizeVarId> var = atom.operand->AsVar();
    if (!var) continue;
    auto [it, fresh_entry] = multiple_of.emplace(*var, atom.divisor);
    if (!fresh_entry) it->second = std::lcm(it->second, atom.divisor);
  }
  std::map<SizeVarId, Dim> subst;
  for (const auto& [var, divisor] : multiple_of) {
    if (auto d = Ok(Dim::Var(SizeVarId(fresh++)) * divisor)) subst[var] = *d;
  }
  for (const auto& [var, value] : equal_to) subst[var] = Dim::Constant(value);
  return subst;
}

// Non-negative for every non-negative value of the sizes: non-negative coefficients over sizes,
// remainders, and quotients of such polynomials.
bool NonNegative(const Dim& d) {
  for (const core::Term& t : d.terms()) {
    if (t.coefficient < 0) return false;
    for (const core::Factor& f : t.monomial)
      if (f.atom.kind == core::AtomKind::kDiv && !NonNegative(*f.atom.operand)) return false;
  }
  return true;
}

class Prover {
 public:
  explicit Prover(const Kernel& kernel) : k_(kernel), subst_(FactSubstitution(kernel)) {}

  bool Prove(ValueId out, std::string& why) {
    std::string last = "no store at the kernel's top level writes `" + k_.Get(out).name + "`";
    for (OpId id : k_.body) {
      const auto* store = std::get_if<op::Store>(&k_.Get(id).node);
      if (!store) continue;
      const Op* view_op = k_.Get(store->dst).def.valid() ? &k_.Get(k_.Get(store->dst).def) : nullptr;
      const auto* view = view_op ? std::get_if<op::View>(&view_op->node) : nullptr;
      if (!view || view->tensor != out) continue;
      std::string reason;
      if (Covers(*view, reason)) return true;
      last = reason;
    }
    why = last;
    return false;
  }

 private:
  // Steps 2-4 for one store's view.
  bool Covers(const op::View& view, std::string& why) {
    const std::vector<Dim>& extents = k_.Get(view.tensor).shape;
    const std::size_t indexed = view.coords.size() - view.shape.size();
    std::set<int> used;
    for (std::size_t a = 0; a < view.coords.size(); ++a) {
      std::optional<Affine> c = Evaluate(view.coords[a]);
      if (!c || (c->coefficient != 0 && c->coefficient != 1 && c->coefficient != -1)) {
        why = "coordinate " + std::to_string(a) + " of the store is not a size plus or minus one block index";
        return false;
      }
      if (c->coefficient != 0 && !used.insert(c->axis).second) {
        why = "two coordinates of the store use block index " + std::to_string(c->axis);
        return false;
      }
      const std::int64_t tile = a < indexed ? 1 : view.shape[a - indexed];
      // 3. lo .. hi, the values the coordinate takes over the grid.
      std::optional<Dim> lo = c->base, hi = c->base;
      if (c->coefficient != 0) {
        std::optional<Dim> last = Ok(core::Sub(Grid(c->axis), Dim::Constant(1)));
        if (!last) return false;
        (c->coefficient > 0 ? hi : lo) = Ok(c->coefficient > 0 ? core::Add(c->base, *last) : core::Sub(c->base, *last));
      }
      std::optional<Dim> start = lo ? Normal(core::Neg(*lo)) : std::nullopt;
      std::optional<Dim> reach = hi ? Normal((core::Result<Dim>(*hi) + 1) * tile - extents.at(a)) : std::nullopt;
      if (!start || !reach || !NonNegative(*start) || !NonNegative(*reach)) {
        why = "the grid's blocks are not shown to reach every index of axis " + std::to_string(a);
        return false;
      }
    }
    // 4. A grid axis no coordinate uses must have a block.
    for (std::size_t g = 0; g < k_.grid.size(); ++g) {
      if (used.count(static_cast<int>(g))) continue;
      std::optional<Dim> some = Normal(core::Sub(k_.grid[g], Dim::Constant(1)));
      if (!some || !NonNegative(*some)) {
        why = "the grid's axis " + std::to_string(g) + " may have no block";
        return false;
      }
    }
    return true;
  }

  Dim Grid(int axis) const {
    return static_cast<std::size_t>(axis) < k_.grid.size() ? k_.grid[static_cast<std::size_t>(axis)] : Dim::Constant(1);
  }

  // A dim with the facts' substitution applied.
  std::optional<Dim> Normal(const core::Result<Dim>& d) const {
    if (!d) return std::nullopt;
    return Ok(core::Substitute(*d, subst_));
  }

  // Step 2: a scalar as base + a * block_idx, or nothing.
  std::optional<Affine> Evaluate(ValueId id) {
    const Value& v = k_.Get(id);
    if (v.space != Space::Scalar || !v.def.valid()) return std::nullopt;  // a parameter, a loop's counter
    const Op& op = k_.Get(v.def);
    if (const auto* b = std::get_if<op::BlockIdx>(&op.node)) return Affine{Dim(), b->axis, 1};
    if (const auto* c = std::get_if<op::Constant>(&op.node)) {
      if (const auto* i = std::get_if<std::int64_t>(&c->value)) return Affine{Dim::Constant(*i)};
      return std::nullopt;
    }
    if (const auto* s = std::get_if<op::Size>(&op.node)) return Affine{s->dim};
    const auto* s = std::get_if<op::ScalarOp>(&op.node);
    if (!s) return std::nullopt;
    std::vector<Affine> args;
    for (ValueId arg : s->args) {
      std::optional<Affine> a = Evaluate(arg);
      if (!a) return std::nullopt;
      args.push_back(*a);
    }
    if (s->fn == "negate" && args.size() == 1) return Scale(args[0], -1);
    if (args.size() != 2) return std::nullopt;
    const Affine& x = args[0];
    const Affine& y = args[1];
    if (s->fn == "+" || s->fn == "-") {
      const std::int64_t sign = s->fn == "+" ? 1 : -1;
      if (x.coefficient != 0 && y.coefficient != 0 && x.axis != y.axis) return std::nullopt;
      std::optional<Dim> base = Ok(sign > 0 ? core::Add(x.base, y.base) : core::Sub(x.base, y.base));
      if (!base) return std::nullopt;
      Affine r{*base, x.coefficient != 0 ? x.axis : y.axis, x.coefficient + sign * y.coefficient};
      if (r.coefficient == 0) r.axis = -1;
      return r;
    }
    if (s->fn == "*") {
      if (y.coefficient == 0 && y.base.AsConstant()) return Scale(x, *y.base.AsConstant());
      if (x.coefficient == 0 && x.base.AsConstant()) return Scale(y, *x.base.AsConstant());
      if (x.coefficient != 0 || y.coefficient != 0) return std::nullopt;
      if (std::optional<Dim> p = Ok(core::Mul(x.base, y.base))) return Affine{*p};
      return std::nullopt;
    }
    if ((s->fn == "/" || s->fn == "%") && x.coefficient == 0 && y.coefficient == 0) {
      std::optional<std::int64_t> d = y.base.AsConstant();
      if (!d || *d <= 0) return std::nullopt;
      if (std::optional<Dim> q = Ok(s->fn == "/" ? core::Div(x.base, *d) : core::Mod(x.base, *d))) return Affine{*q};
    }
    return std::nullopt;
  }

  static std::optional<Affine> Scale(const Affine& a, std::int64_t by) {
    if (by < -(std::int64_t{1} << 31) || by > (std::int64_t{1} << 31)) return std::nullopt;
    std::optional<Dim> base = Ok(core::Result<Dim>(a.base) * by);
    if (!base) return std::nullopt;
    Affine r{*base, a.axis, a.coefficient * by};
    if (r.coefficient == 0) r.axis = -1;
    return r;
  }

  const Kernel& k_;
  std::map<SizeVarId, Dim> subst_;
};

}  // namespace

bool StoresEveryElement(const Kernel& kernel, ValueId out, std::string* why) {
  std::string reason;
  bool covered = Prover(kernel).Prove(out, reason);
  if (why) *why = covered ? "" : reason;
  return covered;
}

}  // namespace weft::tile
