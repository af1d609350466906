// Dims in normal form: arithmetic, division by constants, substitution, evaluation and printing.
// The representation and the simplification rules are described in dim.h. Here:
//   1. Every result goes through Normalize: sort terms by monomial, merge equal monomials (adding
//      coefficients with overflow checks), drop zero coefficients.
//   2. Products multiply term by term (MulMonomials merges two sorted factor lists), then normalize.
//   3. Div/Mod split the coefficients by floor division (SplitByDivisor), reduce by the gcd, fold
//      nested atoms, and otherwise make an atom whose operand is itself normalized.
//   4. Printing sorts factors and terms by their printed names, which storage order (by id) cannot
//      know.
#include "core/dim.h"

#include <algorithm>
#include <numeric>

namespace weft::core {

std::string_view Spelling(RelOp op) {
  switch (op) {
    case RelOp::kEq:
      return "==";
    case RelOp::kNe:
      return "!=";
    case RelOp::kLt:
      return "<";
    case RelOp::kLe:
      return "<=";
    case RelOp::kGt:
      return ">";
    case RelOp::kGe:
      return ">=";
  }
  return "?";
}

std::string DefaultSizeVarName(SizeVarId var) {
  return "v" + std::to_string(var.index);
}

std::string WithSizeNames(const std::string& text, const SizeVarNames& names) {
  if (!names) return text;
  auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '\''; };
  auto digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
  std::string out;
  std::size_t i = 0;
  while (i < text.size()) {
    const bool starts = text[i] == 'v' && (i == 0 || !word(text[i - 1])) && i + 1 < text.size() && digit(text[i + 1]);
    std::size_t end = i + 1;
    while (starts && end < text.size() && digit(text[end])) ++end;
    if (!starts || (end < text.size() && word(text[end])) || end - i > 10) {
      out += text[i++];
      continue;
    }
    const std::string name = names(SizeVarId{static_cast<std::uint32_t>(std::stoul(text.substr(i + 1, end - i - 1)))});
    out += name.empty() ? text.substr(i, end - i) : name;
    i = end;
  }
  return out;
}

// A builder with access to Dim's terms; everything that creates a Dim goes through here.
struct DimBuilder {
  static Dim FromNormalTerms(std::vector<Term> terms) {
    Dim d;
    d.terms_ = std::move(terms);
    return d;
  }
};

namespace {

DimError Overflow() {
  return DimError{DimErrorKind::kOverflow, "dimension arithmetic overflows a 64-bit integer"};
}

std::int64_t Degree(const Monomial& m) {
  std::int64_t degree = 0;
  for (const Factor& f : m) degree += f.power;
  return degree;
}

// The canonical order of terms: higher total degree first, then factor lists lexicographically.
std::strong_ordering CompareMonomials(const Monomial& a, const Monomial& b) {
  std::int64_t da = Degree(a);
  std::int64_t db = Degree(b);
  if (da != db) return db <=> da;
  return std::lexicographical_compare_three_way(a.begin(), a.end(), b.begin(), b.end());
}

// Sorts, merges equal monomials and drops zero coefficients.
Result<Dim> Normalize(std::vector<Term> terms) {
  std::stable_sort(terms.begin(), terms.end(),
                   [](const Term& a, const Term& b) { return CompareMonomials(a.monomial, b.monomial) < 0; });
  std::vector<Term> out;
  out.reserve(terms.size());
  for (Term& t : terms) {
    if (!out.empty() && out.back().monomial == t.monomial) {
      if (__builtin_add_overflow(out.back().coefficient, t.coefficient, &out.back().coefficient)) return Overflow();
    } else {
      out.push_back(std::move(t));
    }
  }
  std::erase_if(out, [](const Term& t) { return t.coefficient == 0; });
  return DimBuilder::FromNormalTerms(std::move(out));
}

Result<Monomial> MulMonomials(const Monomial& a, const Monomial& b) {
  Monomial out;
  out.reserve(a.size() + b.size());
  std::size_t i = 0;
  std::size_t j = 0;
  while (i < a.size() || j < b.size()) {
    if (j == b.size() || (i < a.size() && a[i].atom < b[j].atom)) {
      out.push_back(a[i++]);
    } else if (i == a.size() || b[j].atom < a[i].atom) {
      out.push_back(b[j++]);
    } else {
      Factor f = a[i++];
      if (__builtin_add_overflow(f.power, b[j++].power, &f.power)) return Overflow();
      out.push_back(std::move(f));
    }
  }
  return out;
}

Dim FromAtom(Atom atom, std::int64_t coefficient = 1) {
  return DimBuilder::FromNormalTerms({Term{coefficient, Monomial{Factor{std::move(atom), 1}}}});
}

// The single atom of `p` if p is exactly that atom (coefficient 1, power 1).
const Atom* AsBareAtom(const Dim& p) {
  if (p.terms().size() != 1) return nullptr;
  const Term& t = p.terms()[0];
  if (t.coefficient != 1 || t.monomial.size() != 1 || t.monomial[0].power != 1) return nullptr;
  return &t.monomial[0].atom;
}

// Floor division and the non-negative remainder. @pre d > 0
std::int64_t FloorDiv(std::int64_t a, std::int64_t d) {
  std::int64_t q = a / d;
  if (a % d != 0 && a < 0) --q;
  return q;
}
std::int64_t FloorMod(std::int64_t a, std::int64_t d) {
  return a - FloorDiv(a, d) * d;
}

Result<Dim> DivOrMod(const Dim& p, std::int64_t d, bool is_mod) {
  if (d == 0) {
    // The caller knows the source text and the user's names; the message stays generic.
    return DimError{DimErrorKind::kDivisionByZero,
                    is_mod ? "a dimension modulo zero is undefined" : "division of a dimension by zero"};
  }
  if (d < 0) {
    return DimError{DimErrorKind::kNegativeDivisor,
                    "a dimension can only be divided by a positive constant, not `" + std::to_string(d) + "`"};
  }
  // 1. p = d*Q + R with R's coefficients in [0, d).
  std::vector<Term> quotient;
  std::vector<Term> remainder;
  for (const Term& t : p.terms()) {
    std::int64_t q = FloorDiv(t.coefficient, d);
    std::int64_t r = FloorMod(t.coefficient, d);
    if (q != 0) quotient.push_back(Term{q, t.monomial});
    if (r != 0) remainder.push_back(Term{r, t.monomial});
  }
  Dim q_dim = DimBuilder::FromNormalTerms(std::move(quotient));  // same order as p: still normal
  Dim r_dim = DimBuilder::FromNormalTerms(std::move(remainder));
  // 2. A constant remainder divides to 0 and is its own modulo.
  if (r_dim.AsConstant()) return is_mod ? r_dim : q_dim;
  std::int64_t g = d;
  for (const Term& t : r_dim.terms()) g = std::gcd(g, t.coefficient);
  std::int64_t reduced_d = d / g;
  Dim reduced_r = r_dim;
  if (g != 1) reduced_r = *DivExact(r_dim, g);
  // 3. Nested atoms.
  if (const Atom* inner = AsBareAtom(reduced_r)) {
    if (inner->kind == AtomKind::kDiv && !is_mod) {
      std::int64_t product;
      if (!__builtin_mul_overflow(inner->divisor, reduced_d, &product)) {
        auto nested = DivOrMod(*inner->operand, product, false);
        if (!nested.ok()) return nested;
        return Add(q_dim, *nested);
      }
    }
    if (inner->kind == AtomKind::kMod) {
      // 0 <= x % a < a: when a <= d it is its own remainder and divides to 0.
      if (inner->divisor <= reduced_d) {
        if (!is_mod) return q_dim;
        return Mul(reduced_r, Dim::Constant(g));
      }
      if (is_mod && inner->divisor % reduced_d == 0) {
        auto nested = DivOrMod(*inner->operand, reduced_d, true);
        if (!nested.ok()) return nested;
        return Mul(*nested, Dim::Constant(g));
      }
    }
  }
  // 4. An atom.
  Atom atom;
  atom.kind = is_mod ? AtomKind::kMod : AtomKind::kDiv;
  atom.operand = std::make_shared<const Dim>(std::move(reduced_r));
  atom.divisor = reduced_d;
  if (is_mod) return FromAtom(std::move(atom), g);
  return Add(q_dim, FromAtom(std::move(atom)));
}

Result<Dim> Power(const Dim& base, std::int32_t power) {
  Dim result = Dim::Constant(1);
  for (std::int32_t i = 0; i < power; ++i) {
    auto next = Mul(result, base);
    if (!next.ok()) return next;
    result = std::move(*next);
  }
  return result;
}

void CollectVars(const Dim& p, std::vector<SizeVarId>& out) {
  for (const Term& t : p.terms()) {
    for (const Factor& f : t.monomial) {
      if (f.atom.kind == AtomKind::kVar) {
        out.push_back(f.atom.var);
      } else {
        CollectVars(*f.atom.operand, out);
      }
    }
  }
}

void HashCombine(std::size_t& seed, std::size_t value) {
  seed ^= value + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2);
}

}  // namespace

// ---------------------------------------------------------------------------------------------------
// Atom order

bool operator==(const Atom& a, const Atom& b) {
  return (a <=> b) == 0;
}

std::strong_ordering operator<=>(const Atom& a, const Atom& b) {
  if (auto c = a.kind <=> b.kind; c != 0) return c;
  if (a.kind == AtomKind::kVar) return a.var <=> b.var;
  if (auto c = a.divisor <=> b.divisor; c != 0) return c;
  return *a.operand <=> *b.operand;
}

// ---------------------------------------------------------------------------------------------------
// Dim

Dim Dim::Constant(std::int64_t c) {
  if (c == 0) return Dim();
  return DimBuilder::FromNormalTerms({Term{c, {}}});
}

Dim Dim::Var(SizeVarId var) {
  Atom atom;
  atom.var = var;
  return FromAtom(std::move(atom));
}

std::optional<std::int64_t> Dim::AsConstant() const {
  if (terms_.empty()) return 0;
  if (terms_.size() == 1 && terms_[0].monomial.empty()) return terms_[0].coefficient;
  return std::nullopt;
}

std::optional<SizeVarId> Dim::AsVar() const {
  const Atom* atom = AsBareAtom(*this);
  if (atom == nullptr || atom->kind != AtomKind::kVar) return std::nullopt;
  return atom->var;
}

std::int64_t Dim::ConstantTerm() const {
  // The constant monomial has degree 0: it sorts last.
  if (!terms_.empty() && terms_.back().monomial.empty()) return terms_.back().coefficient;
  return 0;
}

int Dim::Degree() const {
  return terms_.empty() ? 0 : static_cast<int>(core::Degree(terms_.front().monomial));
}

std::vector<SizeVarId> Dim::Vars() const {
  std::vector<SizeVarId> vars;
  CollectVars(*this, vars);
  std::sort(vars.begin(), vars.end());
  vars.erase(std::unique(vars.begin(), vars.end()), vars.end());
  return vars;
}

bool Dim::Mentions(SizeVarId var) const {
  auto vars = Vars();
  return std::binary_search(vars.begin(), vars.end(), var);
}

std::optional<SizeVarId> SolvableFor(const Dim& p, const std::function<bool(SizeVarId)>& known) {
  std::optional<SizeVarId> unknown;
  for (SizeVarId v : p.Vars()) {
    if (known(v)) continue;
    if (unknown) return std::nullopt;
    unknown = v;
  }
  if (!unknown) return std::nullopt;
  // Exactly one term mentions it, and that term is `c * unknown` with c > 0.
  const Term* linear = nullptr;
  for (const Term& t : p.terms()) {
    std::vector<SizeVarId> vars;
    CollectVars(DimBuilder::FromNormalTerms({t}), vars);
    if (std::find(vars.begin(), vars.end(), *unknown) == vars.end()) continue;
    if (linear || t.coefficient <= 0 || t.monomial.size() != 1 || t.monomial[0].power != 1 ||
        t.monomial[0].atom.kind != AtomKind::kVar)
      return std::nullopt;
    linear = &t;
  }
  return linear ? unknown : std::nullopt;
}

bool operator==(const Dim& a, const Dim& b) {
  return a.terms_ == b.terms_;
}

std::strong_ordering operator<=>(const Dim& a, const Dim& b) {
  return std::lexicographical_compare_three_way(a.terms_.begin(), a.terms_.end(), b.terms_.begin(), b.terms_.end(),
                                                [](const Term& x, const Term& y) {
                                                  if (auto c = CompareMonomials(x.monomial, y.monomial); c != 0)
                                                    return c;
                                                  return x.coefficient <=> y.coefficient;
                                                });
}

std::size_t Dim::Hash() const {
  std::size_t seed = terms_.size();
  for (const Term& t : terms_) {
    HashCombine(seed, std::hash<std::int64_t>()(t.coefficient));
    for (const Factor& f : t.monomial) {
      HashCombine(seed, static_cast<std::size_t>(f.atom.kind));
      HashCombine(seed, static_cast<std::size_t>(f.power));
      if (f.atom.kind == AtomKind::kVar) {
        HashCombine(seed, f.atom.var.index);
      } else {
        HashCombine(seed, std::hash<std::int64_t>()(f.atom.divisor));
        HashCombine(seed, f.atom.operand->Hash());
      }
    }
  }
  return seed;
}

// ---------------------------------------------------------------------------------------------------
// Arithmetic

Result<Dim> Add(const Dim& a, const Dim& b) {
  std::vector<Term> terms = a.terms();
  terms.insert(terms.end(), b.terms().begin(), b.terms().end());
  return Normalize(std::move(terms));
}

Result<Dim> Neg(const Dim& a) {
  std::vector<Term> terms = a.terms();
  for (Term& t : terms) {
    if (__builtin_mul_overflow(t.coefficient, std::int64_t{-1}, &t.coefficient)) return Overflow();
  }
  return DimBuilder::FromNormalTerms(std::move(terms));  // same monomials, same order
}

Result<Dim> Sub(const Dim& a, const Dim& b) {
  auto nb = Neg(b);
  if (!nb.ok()) return nb;
  return Add(a, *nb);
}

Result<Dim> Mul(const Dim& a, const Dim& b) {
  std::vector<Term> terms;
  terms.reserve(a.terms().size() * b.terms().size());
  for (const Term& x : a.terms()) {
    for (const Term& y : b.terms()) {
      Term t;
      if (__builtin_mul_overflow(x.coefficient, y.coefficient, &t.coefficient)) return Overflow();
      auto m = MulMonomials(x.monomial, y.monomial);
      if (!m.ok()) return m.error();
      t.monomial = std::move(*m);
      terms.push_back(std::move(t));
    }
  }
  return Normalize(std::move(terms));
}

Result<Dim> Div(const Dim& p, std::int64_t d) {
  return DivOrMod(p, d, /*is_mod=*/false);
}

Result<Dim> Mod(const Dim& p, std::int64_t d) {
  return DivOrMod(p, d, /*is_mod=*/true);
}

std::optional<Dim> DivExact(const Dim& p, std::int64_t d) {
  if (d <= 0) return std::nullopt;
  std::vector<Term> terms = p.terms();
  for (Term& t : terms) {
    if (t.coefficient % d != 0) return std::nullopt;
    t.coefficient /= d;
  }
  return DimBuilder::FromNormalTerms(std::move(terms));
}

Result<Dim> Substitute(const Dim& p, const std::map<SizeVarId, Dim>& subst) {
  Dim sum;
  for (const Term& t : p.terms()) {
    Dim product = Dim::Constant(t.coefficient);
    for (const Factor& f : t.monomial) {
      Dim base;
      if (f.atom.kind == AtomKind::kVar) {
        auto it = subst.find(f.atom.var);
        base = it == subst.end() ? Dim::Var(f.atom.var) : it->second;
      } else {
        auto operand = Substitute(*f.atom.operand, subst);
        if (!operand.ok()) return operand;
        auto atom = DivOrMod(*operand, f.atom.divisor, f.atom.kind == AtomKind::kMod);
        if (!atom.ok()) return atom;
        base = std::move(*atom);
      }
      auto power = Power(base, f.power);
      if (!power.ok()) return power;
      auto next = Mul(product, *power);
      if (!next.ok()) return next;
      product = std::move(*next);
    }
    auto next = Add(sum, product);
    if (!next.ok()) return next;
    sum = std::move(*next);
  }
  return sum;
}

Result<std::int64_t> Evaluate(const Dim& p, const std::function<std::int64_t(SizeVarId)>& value) {
  std::int64_t sum = 0;
  for (const Term& t : p.terms()) {
    std::int64_t product = t.coefficient;
    for (const Factor& f : t.monomial) {
      std::int64_t base;
      if (f.atom.kind == AtomKind::kVar) {
        base = value(f.atom.var);
      } else {
        auto operand = Evaluate(*f.atom.operand, value);
        if (!operand.ok()) return operand;
        base = f.atom.kind == AtomKind::kDiv ? FloorDiv(*operand, f.atom.divisor) : FloorMod(*operand, f.atom.divisor);
      }
      for (std::int32_t i = 0; i < f.power; ++i) {
        if (__builtin_mul_overflow(product, base, &product)) return Overflow();
      }
    }
    if (__builtin_add_overflow(sum, product, &sum)) return Overflow();
  }
  return sum;
}

// ---------------------------------------------------------------------------------------------------
// Printing

namespace {

std::string Print(const Dim& p, const SizeVarNames& names);

std::string PrintAtom(const Atom& atom, const SizeVarNames& names) {
  if (atom.kind == AtomKind::kVar) return names ? names(atom.var) : DefaultSizeVarName(atom.var);
  std::string operand = Print(*atom.operand, names);
  const Atom* inner = AsBareAtom(*atom.operand);
  if (atom.operand->terms().size() > 1 || (inner != nullptr && inner->kind != AtomKind::kVar)) {
    operand = "(" + operand + ")";
  }
  return operand + (atom.kind == AtomKind::kDiv ? " / " : " % ") + std::to_string(atom.divisor);
}

// A term ready to print: its factors, each repeated `power` times, sorted by (is atom, text).
struct PrintedTerm {
  std::int64_t coefficient;
  std::int64_t degree;
  std::vector<std::pair<bool, std::string>> factors;
};

std::string Magnitude(std::int64_t c) {
  std::uint64_t m = c < 0 ? std::uint64_t{0} - static_cast<std::uint64_t>(c) : static_cast<std::uint64_t>(c);
  return std::to_string(m);
}

std::string Print(const Dim& p, const SizeVarNames& names) {
  if (p.IsZero()) return "0";
  std::vector<PrintedTerm> printed;
  for (const Term& t : p.terms()) {
    PrintedTerm pt{t.coefficient, Degree(t.monomial), {}};
    for (const Factor& f : t.monomial) {
      std::string text = PrintAtom(f.atom, names);
      for (std::int32_t i = 0; i < f.power; ++i) pt.factors.emplace_back(f.atom.kind != AtomKind::kVar, text);
    }
    std::sort(pt.factors.begin(), pt.factors.end());
    printed.push_back(std::move(pt));
  }
  std::stable_sort(printed.begin(), printed.end(), [](const PrintedTerm& a, const PrintedTerm& b) {
    if (a.degree != b.degree) return a.degree > b.degree;
    return a.factors < b.factors;
  });
  std::string out;
  for (std::size_t i = 0; i < printed.size(); ++i) {
    const PrintedTerm& t = printed[i];
    bool negative = t.coefficient < 0;
    bool unit = t.coefficient == 1 || t.coefficient == -1;
    // A lone atom prints bare where the grammar reads it correctly: `n / 64`, `m - n / 64`; inside a
    // product or after a leading minus (`-(n / 64)` is not `-n / 64`) it needs parentheses.
    bool bare_atom = unit && t.factors.size() == 1 && (!negative || i > 0);
    std::string body;
    if (!unit || t.factors.empty()) body = Magnitude(t.coefficient);
    for (const auto& [is_atom, text] : t.factors) {
      if (!body.empty()) body += "*";
      body += is_atom && !bare_atom ? "(" + text + ")" : text;
    }
    if (i == 0) {
      out = (negative ? "-" : "") + body;
    } else {
      out += (negative ? " - " : " + ") + body;
    }
  }
  return out;
}

}  // namespace

std::string ToString(const Dim& p, const SizeVarNames& names) {
  return Print(p, names);
}

// ---------------------------------------------------------------------------------------------------
// Operators

namespace {

template <typename F>
Result<Dim> Lift(const Result<Dim>& a, const Result<Dim>& b, F f) {
  if (!a.ok()) return a.error();
  if (!b.ok()) return b.error();
  return f(*a, *b);
}

}  // namespace

Result<Dim> operator+(const Result<Dim>& a, const Result<Dim>& b) {
  return Lift(a, b, Add);
}
Result<Dim> operator-(const Result<Dim>& a, const Result<Dim>& b) {
  return Lift(a, b, Sub);
}
Result<Dim> operator*(const Result<Dim>& a, const Result<Dim>& b) {
  return Lift(a, b, Mul);
}
Result<Dim> operator+(const Result<Dim>& a, std::int64_t b) {
  return a + Result<Dim>(Dim::Constant(b));
}
Result<Dim> operator-(const Result<Dim>& a, std::int64_t b) {
  return a - Result<Dim>(Dim::Constant(b));
}
Result<Dim> operator*(const Result<Dim>& a, std::int64_t b) {
  return a * Result<Dim>(Dim::Constant(b));
}
Result<Dim> operator+(std::int64_t a, const Result<Dim>& b) {
  return Result<Dim>(Dim::Constant(a)) + b;
}
Result<Dim> operator-(std::int64_t a, const Result<Dim>& b) {
  return Result<Dim>(Dim::Constant(a)) - b;
}
Result<Dim> operator*(std::int64_t a, const Result<Dim>& b) {
  return Result<Dim>(Dim::Constant(a)) * b;
}
Result<Dim> operator-(const Result<Dim>& a) {
  if (!a.ok()) return a.error();
  return Neg(*a);
}
Result<Dim> operator/(const Result<Dim>& a, std::int64_t d) {
  if (!a.ok()) return a.error();
  return Div(*a, d);
}
Result<Dim> operator%(const Result<Dim>& a, std::int64_t d) {
  if (!a.ok()) return a.error();
  return Mod(*a, d);
}

}  // namespace weft::core
