// Unification of types, element types, shapes and dims, and NumPy-style broadcasting of shapes.
//
// Dims unify syntactically in their normal form: equal polynomials unify; a flexible size variable
// is bound to the other side; an equation linear in one flexible variable is solved for it when the
// solution is a polynomial (`m + 1 ~ n` binds m := n - 1, `64*k ~ 128` binds k := 2). Whatever is left (`2*n ~ 2*n +
// 1`, equations over rigid sizes) is not decided here: it is recorded as a deferred equality, which the checker turns
// into an obligation for the solver with the source location at hand.
//
// Shapes with shape variables unify by stripping the dims they share at the front and at the back,
// then binding a shape variable to what remains on the other side (a fresh variable covers the case
// `[x, ..s] ~ [..t, y]`: s := [..u, y], t := [x, ..u]).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/types.h"

namespace weft::check {

using namespace weft::core;  // NOLINT(google-build-using-namespace): inference works on core types

// Why two types do not unify, in words for a message ("`f32` and `i32` differ").
struct Mismatch {
  enum class Kind { Structure, Dtype, Class, Rank, Dim, Occurs, Rigid };
  Kind kind;
  std::string message;
};

// The names of the element-type variables of literals (never a program's names: they have spaces),
// so that a mismatch can say what the literal was.
inline constexpr const char* kIntLiteralName = "an integer literal";
inline constexpr const char* kFloatLiteralName = "a float literal";

// An equation between dims that unification could not decide.
struct DeferredEquality {
  Dim lhs;
  Dim rhs;
};

class Unifier {
 public:
  explicit Unifier(VarStore& vars) : vars_(vars) {}

  std::optional<Mismatch> Unify(const TypeRef& a, const TypeRef& b);
  std::optional<Mismatch> UnifyElem(const Elem& a, const Elem& b);
  std::optional<Mismatch> UnifyShape(const Shape& a, const Shape& b);
  std::optional<Mismatch> UnifyDim(const Dim& a, const Dim& b);
  // Adds a class to an element type: binds nothing, may fail (`bool` is not `num`).
  std::optional<Mismatch> RequireClass(const Elem& elem, ElemClass cls);

  // Equalities deferred since the last call; the caller attaches them to a source location.
  std::vector<DeferredEquality> TakeDeferred();

  // Lowers the generalization level of every variable free in `type` to at most `level`: they are
  // in an environment entry made at that level (a value that is not generalized).
  void LowerLevels(const TypeRef& type, int level);

 private:
  bool Occurs(TypeVarId var, const TypeRef& type) const;
  void LowerLevels(const Shape& shape, int level);
  void LowerLevels(const Dim& dim, int level);
  std::optional<Mismatch> BindShape(ShapeVarId var, const Shape& shape);
  std::optional<Mismatch> BindSize(SizeVarId var, const Dim& dim);

  VarStore& vars_;
  std::vector<DeferredEquality> deferred_;
};

// The result of broadcasting two shapes (language.md, Arithmetic and broadcasting).
struct Broadcast {
  enum class Status { Ok, Ambiguous, Mismatch };
  Status status;
  Shape shape;          // Ok: the result shape
  std::string message;  // Mismatch: which dims differ
};

// Broadcasts `a` with `b`: trailing dims aligned; each pair equal, or one of them the literal 1, or
// else unified (binding flexible sizes, deferring the rest as equalities); what remains on the left
// is taken from the operand that has it. Ambiguous when a shape variable's position leaves the
// alignment undecided (the checker retries later and reports an ambiguous rank if it stays so).
Broadcast BroadcastShapes(Unifier& unifier, VarStore& vars, const Shape& a, const Shape& b);

}  // namespace weft::check
