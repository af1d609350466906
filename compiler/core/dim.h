// Dimensions (`dim` in language.md) as integer polynomials over size variables in one canonical normal
// form, so that the checker can unify `n + n` with `2*n` and `m*n` with `n*m` by plain equality, and
// hand only what normalization cannot decide to the solver.
//
// The representation, from the inside out:
//   1. An atom is a size variable, or `Div(p, c)` / `Mod(p, c)`: floor division and its (non-negative)
//      remainder of a dim `p` by a constant `c >= 2`. Atoms are opaque to the polynomial arithmetic.
//   2. A monomial is a product of atoms with positive powers, sorted by atom, no atom twice.
//   3. A Dim is a sum of terms (coefficient, monomial) with no zero coefficient and no monomial twice,
//      sorted by monomial (higher degree first); the constant is the term with the empty monomial.
//   Equal polynomials therefore have identical representations, and ==, <=> and Hash are structural.
//   Every operation returns a normalized Dim; none of them can make a non-normal one.
//
// Division by a constant `d` simplifies as follows (all identities hold for every integer value of
// the variables, not only non-negative ones, because Div/Mod are floor division and floor modulo):
//   1. Split each coefficient a = d*q + r with 0 <= r < d: p = d*Q + R, so p / d = Q + R / d and
//      p % d = R % d. `(4*n + 8) / 4` is `n + 2`, `(2*n) % 2` is `0`, `6 / 4` is `1`, `6 % 4` is `2`.
//   2. If R is a constant, R / d = 0 and R % d = R (0 <= R < d). Otherwise divide R and d by
//      g = gcd(R's coefficients, d): R / d = (R/g) / (d/g) and R % d = g * ((R/g) % (d/g)).
//   3. Nested atoms: `(p / a) / b` is `p / (a*b)`; `(p % a) % b` is `p % b` when b divides a.
//   4. What is left is a Div or Mod atom: `n / 64`, `(n + 1) % 64`.
//
// Arithmetic overflow of int64 coefficients is detected (__builtin_*_overflow) and returned as an
// error, as are division by zero and by a negative constant: dims come from user programs.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "base/result.h"
#include "base/typed_id.h"

namespace weft::core {

// A relation between dims, as in a `where` clause, an obligation or a solver goal.
enum class RelOp : std::uint8_t { kEq, kNe, kLt, kLe, kGt, kGe };

// `==`, `!=`, `<`, `<=`, `>`, `>=`.
std::string_view Spelling(RelOp op);

// A size variable (`n` in `f32[n]`). Created and named by the checker; here only an id.
using SizeVarId = TypedId<struct SizeVarTag>;

// Names size variables for printing. An empty function prints `v<index>` (see DefaultSizeVarName).
using SizeVarNames = std::function<std::string(SizeVarId)>;
std::string DefaultSizeVarName(SizeVarId var);
// `text` (printed with DefaultSizeVarName, as the reasons core builds without names are) with each
// `v<index>` word named by `names`: `4*v25` reads `4*s`. Unchanged when `names` is empty.
std::string WithSizeNames(const std::string& text, const SizeVarNames& names);

// ---------------------------------------------------------------------------------------------------
// Errors

enum class DimErrorKind {
  kOverflow,         // a coefficient, constant or power does not fit its integer type
  kDivisionByZero,   // `p / 0`, `p % 0`
  kNegativeDivisor,  // `p / -3`: language.md allows only positive constant divisors
};

struct DimError {
  DimErrorKind kind;
  std::string message;  // lowercase, no final period, code in backticks (style.md)
};

// A value or a DimError.
template <typename T>
using Result = weft::Result<T, DimError>;

// ---------------------------------------------------------------------------------------------------
// The normal form

class Dim;

enum class AtomKind : std::uint8_t { kVar, kDiv, kMod };

// A size variable, or floor division / floor modulo of a normalized Dim by a constant >= 2.
struct Atom {
  AtomKind kind = AtomKind::kVar;
  SizeVarId var;                       // kVar only
  std::shared_ptr<const Dim> operand;  // kDiv, kMod only; never null there
  std::int64_t divisor = 0;            // kDiv, kMod only; >= 2

  friend bool operator==(const Atom& a, const Atom& b);
  friend std::strong_ordering operator<=>(const Atom& a, const Atom& b);
};

// atom^power, power >= 1.
struct Factor {
  Atom atom;
  std::int32_t power = 1;

  friend bool operator==(const Factor&, const Factor&) = default;
  friend std::strong_ordering operator<=>(const Factor&, const Factor&) = default;
};

// A product of factors sorted by atom, each atom at most once. Empty: the constant monomial 1.
using Monomial = std::vector<Factor>;

// coefficient * monomial, coefficient != 0.
struct Term {
  std::int64_t coefficient = 0;
  Monomial monomial;

  friend bool operator==(const Term&, const Term&) = default;
};

// An integer polynomial in normal form (see the file comment). Default-constructed: zero.
// Cheap to copy (vectors of small terms; atoms share their operands).
class Dim {
 public:
  Dim() = default;

  static Dim Constant(std::int64_t c);
  static Dim Var(SizeVarId var);

  // Terms in canonical order: descending total degree, then by atoms (by SizeVarId for variables).
  // This is the storage order, not the printing order (printing sorts by names).
  const std::vector<Term>& terms() const { return terms_; }

  bool IsZero() const { return terms_.empty(); }
  // The value if the dim has no variables and no atoms.
  std::optional<std::int64_t> AsConstant() const;
  // The variable if the dim is exactly one size variable (coefficient 1, power 1).
  std::optional<SizeVarId> AsVar() const;
  // The constant term (0 if none).
  std::int64_t ConstantTerm() const;
  // Highest total degree of a term, each atom counting as degree 1 per power; 0 for constants
  // (zero included).
  int Degree() const;
  // Every size variable mentioned, including inside Div/Mod atoms; sorted by id, no duplicates.
  std::vector<SizeVarId> Vars() const;
  bool Mentions(SizeVarId var) const;

  friend bool operator==(const Dim& a, const Dim& b);
  // A total order (structural); for map keys and deterministic iteration, not numeric comparison.
  friend std::strong_ordering operator<=>(const Dim& a, const Dim& b);

  std::size_t Hash() const;

 private:
  friend struct DimBuilder;  // dim.cpp: the only code that builds terms_ directly
  std::vector<Term> terms_;
};

struct DimHash {
  std::size_t operator()(const Dim& d) const { return d.Hash(); }
};

// ---------------------------------------------------------------------------------------------------
// Arithmetic. Every result is in normal form; errors are overflow and bad divisors only.

Result<Dim> Add(const Dim& a, const Dim& b);
Result<Dim> Sub(const Dim& a, const Dim& b);
Result<Dim> Neg(const Dim& a);
Result<Dim> Mul(const Dim& a, const Dim& b);
// Floor division by a constant: `d > 0` or an error (kDivisionByZero, kNegativeDivisor). Simplifies as
// the file comment says; `p / 1` is `p`.
Result<Dim> Div(const Dim& p, std::int64_t d);
// Floor modulo by a constant, 0 <= p % d < d: `d > 0` or an error. `p % 1` is `0`.
Result<Dim> Mod(const Dim& p, std::int64_t d);
// The polynomial quotient p / d when d divides every coefficient of p (so the division is exact for
// every value of the variables), nullopt otherwise (then the checker uses Div and the obligation
// `p % d == 0`). @pre d > 0
std::optional<Dim> DivExact(const Dim& p, std::int64_t d);

// Replaces variables by dims (those not in `subst` stay) and re-normalizes, Div/Mod atoms included.
Result<Dim> Substitute(const Dim& p, const std::map<SizeVarId, Dim>& subst);

// The value at a point: `value(var)` for every variable. Errors on overflow.
Result<std::int64_t> Evaluate(const Dim& p, const std::function<std::int64_t(SizeVarId)>& value);

// The one size of `p` that `known` does not hold, when `p` is that size times a positive constant
// plus sizes `known` holds (`n + 1`, `2 * n + m` with m known), so that a value of `p` gives it back.
// Nothing for a dim of known sizes only, of several unknown ones, or not of that form (`m * n`,
// `n / 2`). How a size is read from an argument's shape (the interpreter binds it; the checker
// asks that every size a body reads can be).
std::optional<SizeVarId> SolvableFor(const Dim& p, const std::function<bool(SizeVarId)>& known);

// Printing in language.md's order: terms by descending degree, then by variable names; the constant
// last; factors of a monomial by name; `2*n*m`, `n*n` for powers, `n - 1`, `-n + 4`, `n / 64`,
// `(n + 1) / 64`. An atom inside a larger product is parenthesized: `2*(n / 64)`.
std::string ToString(const Dim& p, const SizeVarNames& names = {});

// Operators for writing dims in code and tests: `Var(n) * Var(n) - 1`. Errors propagate (the first
// error wins).
Result<Dim> operator+(const Result<Dim>& a, const Result<Dim>& b);
Result<Dim> operator-(const Result<Dim>& a, const Result<Dim>& b);
Result<Dim> operator*(const Result<Dim>& a, const Result<Dim>& b);
Result<Dim> operator+(const Result<Dim>& a, std::int64_t b);
Result<Dim> operator-(const Result<Dim>& a, std::int64_t b);
Result<Dim> operator*(const Result<Dim>& a, std::int64_t b);
Result<Dim> operator+(std::int64_t a, const Result<Dim>& b);
Result<Dim> operator-(std::int64_t a, const Result<Dim>& b);
Result<Dim> operator*(std::int64_t a, const Result<Dim>& b);
Result<Dim> operator-(const Result<Dim>& a);
Result<Dim> operator/(const Result<Dim>& a, std::int64_t d);
Result<Dim> operator%(const Result<Dim>& a, std::int64_t d);

}  // namespace weft::core

template <>
struct std::hash<weft::core::Dim> {
  std::size_t operator()(const weft::core::Dim& d) const { return d.Hash(); }
};
