// Tests of the dim normal form (core/dim.h): the examples of language.md and the brief, printing,
// errors, and property tests over random expression trees with a fixed seed:
//   1. building a tree through Dim's operations agrees with evaluating the tree directly;
//   2. normalization is idempotent: rebuilding a normal form from its own terms gives itself;
//   3. two polynomials (degree <= 3, 3 variables) have equal normal forms iff they agree at 20 random
//      points (Schwartz-Zippel: distinct polynomials agree there with negligible probability);
//   4. Substitute agrees with evaluating at the substituted point.
#include "core/dim.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

namespace weft::core {
namespace {

const SizeVarId kN{0};
const SizeVarId kM{1};
const SizeVarId kK{2};

std::string Name(SizeVarId v) {
  switch (v.index) {
    case 0:
      return "n";
    case 1:
      return "m";
    case 2:
      return "k";
    default:
      return DefaultSizeVarName(v);
  }
}

Result<Dim> N() {
  return Dim::Var(kN);
}
Result<Dim> M() {
  return Dim::Var(kM);
}
Result<Dim> K() {
  return Dim::Var(kK);
}
Result<Dim> C(std::int64_t c) {
  return Dim::Constant(c);
}

Dim Ok(const Result<Dim>& r) {
  if (!r.ok()) FAIL("unexpected error: " << r.error().message);
  return *r;
}

std::string Str(const Result<Dim>& r) {
  return ToString(Ok(r), Name);
}

TEST_CASE("Dim normal form: like terms and commutativity", "[core][dim]") {
  CHECK(Ok(N() + N()) == Ok(2 * N()));
  CHECK(Str(N() + N()) == "2*n");
  CHECK(Ok(M() * N()) == Ok(N() * M()));
  CHECK(Ok((N() + 1) * (N() - 1)) == Ok(N() * N() - 1));
  CHECK(Str((N() + 1) * (N() - 1)) == "n*n - 1");
  CHECK(Ok(N() - N()).IsZero());
  CHECK(Ok(N() - N()) == Dim());
  CHECK(Ok(C(0)).IsZero());
  CHECK(Ok((N() + M()) * (N() + M())) == Ok(N() * N() + 2 * N() * M() + M() * M()));
}

TEST_CASE("Dim division and modulo by constants", "[core][dim]") {
  CHECK(Str((4 * N() + 8) / 4) == "n + 2");
  CHECK(Ok((2 * N()) % 2).IsZero());
  CHECK(Ok(N() / 1) == Ok(N()));
  CHECK(Ok(N() % 1).IsZero());
  CHECK(Ok(C(6) / 4).AsConstant() == 1);
  CHECK(Ok(C(6) % 4).AsConstant() == 2);
  CHECK(Ok(C(-7) / 2).AsConstant() == -4);  // floor
  CHECK(Ok(C(-7) % 2).AsConstant() == 1);
  CHECK(Str(N() / 64) == "n / 64");
  CHECK(Str(N() % 64) == "n % 64");
  CHECK(Str((N() + 1) / 64) == "(n + 1) / 64");
  CHECK(Str((N() + 65) / 64) == "(n + 1) / 64 + 1");  // whole multiples leave the atom
  CHECK(Str((N() + 65) % 64) == "(n + 1) % 64");
  CHECK(Str((64 * N() + M()) / 64) == "n + m / 64");
  CHECK(Str((2 * N()) / 4) == "n / 2");  // gcd reduction
  CHECK(Str((2 * N()) % 4) == "2*(n % 2)");
  CHECK(Str((N() / 4) / 2) == "n / 8");  // nested division
  CHECK(Str((N() % 8) % 4) == "n % 4");
  CHECK(Ok((N() % 4) % 8) == Ok(N() % 4));
  CHECK(Ok((N() % 4) / 8).IsZero());
  CHECK(Ok(N() / 64) == Ok(N() / 64));
  CHECK(Ok(N() / 64) != Ok(N() / 32));
  CHECK(Ok(N() / 64) != Ok(N() % 64));
}

TEST_CASE("Dim division errors", "[core][dim]") {
  auto zero = N() / 0;
  REQUIRE_FALSE(zero.ok());
  CHECK(zero.error().kind == DimErrorKind::kDivisionByZero);
  auto zero_mod = N() % 0;
  REQUIRE_FALSE(zero_mod.ok());
  CHECK(zero_mod.error().kind == DimErrorKind::kDivisionByZero);
  auto negative = N() / -3;
  REQUIRE_FALSE(negative.ok());
  CHECK(negative.error().kind == DimErrorKind::kNegativeDivisor);
  CHECK(negative.error().message.find("`-3`") != std::string::npos);
  CHECK_FALSE(DivExact(Ok(2 * N() + 1), 2).has_value());
  CHECK(DivExact(Ok(4 * N() + 8), 4) == Ok(N() + 2));
}

TEST_CASE("Dim overflow is an error", "[core][dim]") {
  const std::int64_t big = INT64_MAX;
  auto sum = C(big) + 1;
  REQUIRE_FALSE(sum.ok());
  CHECK(sum.error().kind == DimErrorKind::kOverflow);
  CHECK_FALSE((big * N() + big * N()).ok());
  CHECK_FALSE((C(big) * 2).ok());
  CHECK_FALSE((-C(INT64_MIN)).ok());
  CHECK((C(INT64_MIN) + 0).ok());
  CHECK(Str(C(INT64_MIN)) == "-9223372036854775808");
  // Errors propagate through operators.
  CHECK_FALSE(((C(big) + 1) * N() + 3).ok());
  auto at_big = Evaluate(Ok(N() * N()), [](SizeVarId) { return std::int64_t{1} << 40; });
  REQUIRE_FALSE(at_big.ok());
  CHECK(at_big.error().kind == DimErrorKind::kOverflow);
}

TEST_CASE("Dim queries", "[core][dim]") {
  CHECK(Ok(C(5)).AsConstant() == 5);
  CHECK(Dim().AsConstant() == 0);
  CHECK_FALSE(Ok(N()).AsConstant().has_value());
  CHECK(Ok(N()).AsVar() == kN);
  CHECK_FALSE(Ok(2 * N()).AsVar().has_value());
  CHECK_FALSE(Ok(N() + 1).AsVar().has_value());
  CHECK_FALSE(Ok(N() / 2).AsVar().has_value());
  CHECK(Ok(N() * N() * M() + N() + 3).Degree() == 3);
  CHECK(Ok(C(7)).Degree() == 0);
  CHECK(Dim().Degree() == 0);
  CHECK(Ok(N() / 64 * M()).Degree() == 2);
  CHECK(Ok(N() * N() + 3).ConstantTerm() == 3);
  CHECK(Ok(N() * N()).ConstantTerm() == 0);
  CHECK(Ok((N() + K()) / 64 + M()).Vars() == std::vector<SizeVarId>{kN, kM, kK});
  CHECK(Ok(C(3)).Vars().empty());
  CHECK(Ok(K() % 4).Mentions(kK));
  CHECK_FALSE(Ok(K() % 4).Mentions(kN));
}

TEST_CASE("SolvableFor: the one unknown size a value of the dim gives back", "[core][dim]") {
  auto none = [](SizeVarId) { return false; };
  auto m_known = [](SizeVarId v) { return v == kM; };
  CHECK(SolvableFor(Ok(N()), none) == kN);
  CHECK(SolvableFor(Ok(2 * N() + 1), none) == kN);
  CHECK(SolvableFor(Ok(2 * N() + M()), m_known) == kN);
  CHECK(SolvableFor(Ok(M() * M() + 3 * N()), m_known) == kN);
  // Several unknowns, none, or not a positive constant times it.
  CHECK_FALSE(SolvableFor(Ok(N() + M()), none).has_value());
  CHECK_FALSE(SolvableFor(Ok(C(4)), none).has_value());
  CHECK_FALSE(SolvableFor(Ok(M()), m_known).has_value());
  CHECK_FALSE(SolvableFor(Ok(M() * N()), m_known).has_value());
  CHECK_FALSE(SolvableFor(Ok(N() * N()), none).has_value());
  CHECK_FALSE(SolvableFor(Ok(C(8) - N()), none).has_value());
  CHECK_FALSE(SolvableFor(Ok(N() / 2), none).has_value());
  CHECK_FALSE(SolvableFor(Ok(N() + N() / 2), none).has_value());
}

TEST_CASE("Dim printing order and signs", "[core][dim]") {
  CHECK(Str(N() - 1) == "n - 1");
  CHECK(Str(4 - N()) == "-n + 4");
  CHECK(Str(C(0)) == "0");
  CHECK(Str(C(-3)) == "-3");
  CHECK(Str(-2 * N()) == "-2*n");
  CHECK(Str(1 + N() + 2 * N() * M()) == "2*m*n + n + 1");  // factors by name: m before n
  CHECK(Str(K() * M() * N() + M() * M() + N()) == "k*m*n + m*m + n");
  CHECK(Str(N() * N() * N() - M() * M() * N()) == "-m*m*n + n*n*n");
  CHECK(Str(M() + K() + N()) == "k + m + n");
  CHECK(Str(M() - N() / 64) == "m - n / 64");
  CHECK(Str(-(N() / 64)) == "-(n / 64)");
  CHECK(Str(2 * (N() / 64) + 1) == "2*(n / 64) + 1");
  CHECK(Str(M() * (N() / 64)) == "m*(n / 64)");
  CHECK(Str((N() * M() + 1) % 3) == "(m*n + 1) % 3");
  CHECK(Str((N() % 4) / 2) == "(n % 4) / 2");
  CHECK(Str(M() * N() / 64) == "m*n / 64");
  CHECK(ToString(Ok(N() + 1)) == "v0 + 1");  // default names
}

TEST_CASE("Dim order and hash are structural", "[core][dim]") {
  std::set<Dim> ordered;
  std::unordered_set<Dim> hashed;
  for (const Result<Dim>& r : {N() + 1, 1 + N(), N() * M(), M() * N(), N() / 2, (2 * N()) / 4, C(3), C(3)}) {
    ordered.insert(Ok(r));
    hashed.insert(Ok(r));
  }
  CHECK(ordered.size() == 4);
  CHECK(hashed.size() == 4);
  CHECK(Ok(N() + 1).Hash() == Ok(1 + N()).Hash());
}

TEST_CASE("Dim substitution", "[core][dim]") {
  std::map<SizeVarId, Dim> s{{kN, Ok(2 * M() + 2)}};
  CHECK(Str(Substitute(Ok(N() * N() - 4), s)) == "4*m*m + 8*m");
  CHECK(Str(Substitute(Ok(N() / 2 + K()), s)) == "k + m + 1");
  CHECK(Ok(Substitute(Ok(N() % 2), s)).IsZero());
  CHECK(Ok(Substitute(Ok(M() + 1), s)) == Ok(M() + 1));
}

// ---------------------------------------------------------------------------------------------------
// Property tests

// An expression tree over n, m, k, evaluated directly with 128-bit arithmetic.
struct Tree {
  enum Kind { kConst, kVar, kAdd, kSub, kMul, kDiv, kMod } kind = kConst;
  std::int64_t value = 0;  // constant, variable index or divisor
  std::shared_ptr<Tree> a, b;
};
using TreePtr = std::shared_ptr<Tree>;

TreePtr Leaf(Tree::Kind kind, std::int64_t value) {
  auto t = std::make_shared<Tree>();
  t->kind = kind;
  t->value = value;
  return t;
}
TreePtr Node(Tree::Kind kind, TreePtr a, TreePtr b, std::int64_t value = 0) {
  auto t = std::make_shared<Tree>();
  t->kind = kind;
  t->a = std::move(a);
  t->b = std::move(b);
  t->value = value;
  return t;
}

using Point = std::array<std::int64_t, 3>;

__int128 FloorDiv128(__int128 a, __int128 d) {
  __int128 q = a / d;
  if (a % d != 0 && a < 0) --q;
  return q;
}

__int128 EvalTree(const Tree& t, const Point& x) {
  switch (t.kind) {
    case Tree::kConst:
      return t.value;
    case Tree::kVar:
      return x[t.value];
    case Tree::kAdd:
      return EvalTree(*t.a, x) + EvalTree(*t.b, x);
    case Tree::kSub:
      return EvalTree(*t.a, x) - EvalTree(*t.b, x);
    case Tree::kMul:
      return EvalTree(*t.a, x) * EvalTree(*t.b, x);
    case Tree::kDiv:
      return FloorDiv128(EvalTree(*t.a, x), t.value);
    case Tree::kMod: {
      __int128 v = EvalTree(*t.a, x);
      return v - FloorDiv128(v, t.value) * t.value;
    }
  }
  return 0;
}

Result<Dim> BuildTree(const Tree& t) {
  switch (t.kind) {
    case Tree::kConst:
      return Dim::Constant(t.value);
    case Tree::kVar:
      return Dim::Var(SizeVarId(static_cast<std::uint32_t>(t.value)));
    case Tree::kAdd:
      return BuildTree(*t.a) + BuildTree(*t.b);
    case Tree::kSub:
      return BuildTree(*t.a) - BuildTree(*t.b);
    case Tree::kMul:
      return BuildTree(*t.a) * BuildTree(*t.b);
    case Tree::kDiv:
      return BuildTree(*t.a) / t.value;
    case Tree::kMod:
      return BuildTree(*t.a) % t.value;
  }
  return Dim();
}

int TreeDegree(const Tree& t) {
  switch (t.kind) {
    case Tree::kConst:
      return 0;
    case Tree::kVar:
    case Tree::kDiv:
    case Tree::kMod:
      return 1;
    case Tree::kAdd:
    case Tree::kSub:
      return std::max(TreeDegree(*t.a), TreeDegree(*t.b));
    case Tree::kMul:
      return TreeDegree(*t.a) + TreeDegree(*t.b);
  }
  return 0;
}

class TreeGen {
 public:
  explicit TreeGen(std::uint64_t seed) : rng_(seed) {}

  // A random tree of the given depth; with_atoms adds Div/Mod by constants in [1, 9].
  TreePtr Make(int depth, bool with_atoms) {
    if (depth == 0 || Pick(4) == 0) {
      if (Pick(2) == 0) return Leaf(Tree::kConst, Pick(9) - 4);
      return Leaf(Tree::kVar, Pick(3));
    }
    int ops = with_atoms ? 5 : 3;
    switch (Pick(ops)) {
      case 0:
        return Node(Tree::kAdd, Make(depth - 1, with_atoms), Make(depth - 1, with_atoms));
      case 1:
        return Node(Tree::kSub, Make(depth - 1, with_atoms), Make(depth - 1, with_atoms));
      case 2:
        return Node(Tree::kMul, Make(depth - 1, with_atoms), Make(depth - 1, with_atoms));
      case 3:
        return Node(Tree::kDiv, Make(depth - 1, with_atoms), nullptr, 1 + Pick(9));
      default:
        return Node(Tree::kMod, Make(depth - 1, with_atoms), nullptr, 1 + Pick(9));
    }
  }

  // A tree of degree <= 3 without atoms, from a small family so that equal pairs occur often.
  TreePtr MakePolynomial() {
    for (;;) {
      TreePtr t = Make(3, false);
      if (TreeDegree(*t) <= 3) return t;
    }
  }

  // An equal polynomial written differently: operands commuted, products distributed, constants
  // added and taken away.
  TreePtr Rewrite(const TreePtr& t) {
    switch (t->kind) {
      case Tree::kConst:
        if (Pick(3) == 0) return Node(Tree::kSub, Leaf(Tree::kConst, t->value + 3), Leaf(Tree::kConst, 3));
        return t;
      case Tree::kVar:
        if (Pick(3) == 0) return Node(Tree::kAdd, Leaf(Tree::kConst, 0), t);
        if (Pick(3) == 0) return Node(Tree::kMul, Leaf(Tree::kConst, 1), t);
        return t;
      case Tree::kAdd:
      case Tree::kMul: {
        TreePtr a = Rewrite(t->a);
        TreePtr b = Rewrite(t->b);
        if (t->kind == Tree::kMul && b->kind == Tree::kAdd && Pick(2) == 0) {
          return Node(Tree::kAdd, Node(Tree::kMul, a, b->a), Node(Tree::kMul, a, b->b));
        }
        return Pick(2) == 0 ? Node(t->kind, b, a) : Node(t->kind, a, b);
      }
      case Tree::kSub: {
        // a - b == a + (-1)*b
        TreePtr a = Rewrite(t->a);
        TreePtr b = Rewrite(t->b);
        if (Pick(2) == 0) return Node(Tree::kAdd, a, Node(Tree::kMul, Leaf(Tree::kConst, -1), b));
        return Node(Tree::kSub, a, b);
      }
      case Tree::kDiv:
      case Tree::kMod:
        return Node(t->kind, Rewrite(t->a), nullptr, t->value);
    }
    return t;
  }

  Point RandomPoint(std::int64_t range) {
    return {Pick(2 * range + 1) - range, Pick(2 * range + 1) - range, Pick(2 * range + 1) - range};
  }

  std::int64_t Pick(std::int64_t n) { return std::uniform_int_distribution<std::int64_t>(0, n - 1)(rng_); }

 private:
  std::mt19937_64 rng_;
};

std::int64_t At(const Dim& d, const Point& x) {
  auto v = Evaluate(d, [&](SizeVarId var) { return x[var.index]; });
  REQUIRE(v.ok());
  return *v;
}

// Rebuilds a dim from its own terms through the public operations (atoms from their operands).
Result<Dim> Rebuild(const Dim& d) {
  Result<Dim> sum = Dim();
  for (const Term& t : d.terms()) {
    Result<Dim> product = Dim::Constant(t.coefficient);
    for (const Factor& f : t.monomial) {
      Result<Dim> base = Dim();
      if (f.atom.kind == AtomKind::kVar) {
        base = Dim::Var(f.atom.var);
      } else {
        Result<Dim> operand = Rebuild(*f.atom.operand);
        base = f.atom.kind == AtomKind::kDiv ? operand / f.atom.divisor : operand % f.atom.divisor;
      }
      for (int i = 0; i < f.power; ++i) product = product * base;
    }
    sum = sum + product;
  }
  return sum;
}

TEST_CASE("Dim property: operations agree with evaluation and normalization is idempotent", "[core][dim]") {
  TreeGen gen(20240611);
  int checked = 0;
  for (int i = 0; i < 3000; ++i) {
    TreePtr t = gen.Make(5, /*with_atoms=*/true);
    Result<Dim> built = BuildTree(*t);
    REQUIRE(built.ok());
    const Dim& d = *built;
    INFO("dim: " << ToString(d, Name));
    for (int p = 0; p < 5; ++p) {
      Point x = gen.RandomPoint(50);
      __int128 expected = EvalTree(*t, x);
      if (expected > INT64_MAX || expected < INT64_MIN) continue;
      REQUIRE(At(d, x) == static_cast<std::int64_t>(expected));
      ++checked;
    }
    // Idempotence: a normal form rebuilt from its terms is itself, as are trivial identities.
    CHECK(Ok(Rebuild(d)) == d);
    CHECK(Ok(d + 0) == d);
    CHECK(Ok(d * 1) == d);
    CHECK(Ok(d / 1) == d);
    CHECK(Ok(d - d).IsZero());
    CHECK(Ok(Substitute(d, {})) == d);
    CHECK(Ok(Substitute(d, {{kN, Ok(N())}, {kM, Ok(M())}})) == d);
    CHECK(ToString(Ok(Rebuild(d)), Name) == ToString(d, Name));
  }
  CHECK(checked > 10000);
}

TEST_CASE("Dim property: equal polynomials normalize identically", "[core][dim]") {
  TreeGen gen(7);
  int equal_pairs = 0;
  int distinct_pairs = 0;
  for (int i = 0; i < 3000; ++i) {
    TreePtr a = gen.MakePolynomial();
    // Half the pairs are rewrites of one polynomial, half are independent (and sometimes equal).
    TreePtr b = i % 2 == 0 ? gen.Rewrite(a) : gen.MakePolynomial();
    Dim da = Ok(BuildTree(*a));
    Dim db = Ok(BuildTree(*b));
    bool agree = true;
    for (int p = 0; p < 20; ++p) {
      Point x = gen.RandomPoint(1000);
      if (EvalTree(*a, x) != EvalTree(*b, x)) agree = false;
    }
    INFO("a: " << ToString(da, Name) << "  b: " << ToString(db, Name));
    CHECK(agree == (da == db));
    if (agree) {
      CHECK(da.Hash() == db.Hash());
      CHECK(ToString(da, Name) == ToString(db, Name));
      CHECK(std::is_eq(da <=> db));
      ++equal_pairs;
    } else {
      CHECK(std::is_neq(da <=> db));
      ++distinct_pairs;
    }
  }
  CHECK(equal_pairs > 1500);
  CHECK(distinct_pairs > 500);
}

TEST_CASE("Dim property: Substitute agrees with evaluation", "[core][dim]") {
  TreeGen gen(99);
  for (int i = 0; i < 2000; ++i) {
    Dim d = Ok(BuildTree(*gen.Make(4, /*with_atoms=*/true)));
    std::map<SizeVarId, Dim> subst;
    std::vector<TreePtr> images(3);
    for (std::uint32_t v = 0; v < 3; ++v) {
      if (gen.Pick(3) == 0) continue;  // some variables stay
      images[v] = gen.Make(2, /*with_atoms=*/gen.Pick(2) == 0);
      subst[SizeVarId(v)] = Ok(BuildTree(*images[v]));
    }
    Dim s = Ok(Substitute(d, subst));
    INFO("dim: " << ToString(d, Name) << "  substituted: " << ToString(s, Name));
    for (int p = 0; p < 5; ++p) {
      Point x = gen.RandomPoint(20);
      Point y = x;
      for (std::uint32_t v = 0; v < 3; ++v) {
        if (images[v]) y[v] = static_cast<std::int64_t>(EvalTree(*images[v], x));
      }
      auto lhs = Evaluate(s, [&](SizeVarId var) { return x[var.index]; });
      auto rhs = Evaluate(d, [&](SizeVarId var) { return y[var.index]; });
      if (!lhs.ok() || !rhs.ok()) continue;  // overflow at this point: nothing to compare
      REQUIRE(*lhs == *rhs);
    }
    // Substituted variables are gone (unless an image mentions them).
    for (const auto& [var, image] : subst) {
      bool in_images = false;
      for (const auto& [other, img] : subst) in_images = in_images || img.Mentions(var);
      if (!in_images) CHECK_FALSE(s.Mentions(var));
    }
  }
}

}  // namespace
}  // namespace weft::core
