// The checker's types: what inference works on. A type is immutable and shared (TypeRef); the
// variables in it (type variables 'a, element-type variables 't, shape variables ..s, size
// variables n) live in a VarStore, which records their bindings (union-find by substitution),
// their levels (for let-generalization, as in OCaml), their classes, and whether they are rigid.
//
// language.md's type grammar maps onto these as follows:
//   `f32`, `f32[]`           Tensor{f32, []}          a scalar is a rank-0 tensor
//   `'t[..s, n]`             Tensor{'t, [..s, n]}     element var, shape var, size var
//   `'a`                     Var{'a}                  any type
//   `(a, b)`, `()`           Tuple
//   `a -> b`                 Function
//   `string`                 String
//
// A tensor type also has a layout (core/array_layout.h, docs/layouts.md "Layouts in types"): which
// element of its buffer each index reads. Shape inference leaves it unset; the checker's layout
// stage (check/layouts.cpp) fills it in. Printing shows it only when asked (`weft check --layouts`).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "base/dtype.h"
#include "base/source.h"
#include "base/typed_id.h"
#include "core/dim.h"

namespace weft::core {

using TypeVarId = TypedId<struct TypeVarTag>;
using ElemVarId = TypedId<struct ElemVarTag>;
using ShapeVarId = TypedId<struct ShapeVarTag>;
using LayoutVarId = TypedId<struct LayoutVarTag>;

// A class on an element type: `num` (any dtype but bool), `float` (f8 to f64) or `int` (i4 to u64).
// Float and int imply num; no dtype is both.
enum class ElemClass : std::uint8_t { None, Num, Float, Int };
std::string_view Spelling(ElemClass cls);
bool InClass(Dtype dtype, ElemClass cls);
// What an element type that nothing fixes becomes (language.md: `num` and `int` to i32, else f32).
Dtype DefaultDtype(ElemClass cls);
// The class of the dtypes in both: nullopt when there are none (`int` and `float`).
std::optional<ElemClass> JoinClasses(ElemClass a, ElemClass b);

struct Elem {
  std::variant<Dtype, ElemVarId> value;
  bool is_var() const { return value.index() == 1; }
  Dtype dtype() const { return std::get<Dtype>(value); }
  ElemVarId var() const { return std::get<ElemVarId>(value); }
};

// `[d0, d1, ..s, d2]`: dims before the shape variable, the variable, dims after it. Without a shape
// variable every dim is in `before` and `after` is empty.
struct Shape {
  std::vector<Dim> before;
  std::optional<ShapeVarId> spread;
  std::vector<Dim> after;

  bool Known() const { return !spread.has_value(); }  // rank known
  std::size_t FixedRank() const { return before.size() + after.size(); }
  static Shape Of(std::vector<Dim> dims) { return Shape{std::move(dims), std::nullopt, {}}; }
  static Shape Spread(ShapeVarId var) { return Shape{{}, var, {}}; }
};

struct Type;
using TypeRef = std::shared_ptr<const Type>;
struct Layout;  // core/array_layout.h
using LayoutRef = std::shared_ptr<const Layout>;

struct VarType {
  TypeVarId var;
};
struct TensorType {
  Elem elem;
  Shape shape;
  LayoutRef layout;  // null: `row`, what owns its data (core/array_layout.h)
};
struct FunctionType {
  TypeRef param;
  TypeRef result;
};
struct TupleType {
  std::vector<TypeRef> elements;
};
struct StringType {};

struct Type {
  std::variant<VarType, TensorType, FunctionType, TupleType, StringType> node;
};

TypeRef MakeVar(TypeVarId var);
TypeRef MakeTensor(Elem elem, Shape shape, LayoutRef layout = nullptr);
TypeRef MakeScalar(Dtype dtype);
TypeRef MakeFunction(TypeRef param, TypeRef result);
// a -> b -> ... -> result
TypeRef MakeFunction(const std::vector<TypeRef>& params, TypeRef result);
TypeRef MakeTuple(std::vector<TypeRef> elements);
TypeRef MakeString();
TypeRef MakeUnit();

// Where a size or shape variable came from, and how inference may treat it.
enum class VarKind : std::uint8_t {
  Flexible,  // may be bound by unification
  Rigid,     // named in a signature: only proofs, never bindings (language.md, rigid sizes)
  Runtime,   // bound by `load` in main: obligations on it become run-time checks
};

class VarStore {
 public:
  // Generalization levels: variables created deeper than the level being generalized are quantified.
  int level() const { return level_; }
  void Enter() { ++level_; }
  void Leave() { --level_; }

  TypeVarId NewTypeVar(std::string name = "");
  ElemVarId NewElemVar(ElemClass cls = ElemClass::None, std::string name = "");
  ShapeVarId NewShapeVar(VarKind kind = VarKind::Flexible, std::string name = "", Span origin = {});
  SizeVarId NewSizeVar(VarKind kind = VarKind::Flexible, std::string name = "", Span origin = {});
  // A layout variable: the layout of a parameter (check/layouts.cpp). Layouts are not unified, so
  // it has no binding: a call substitutes its arguments' layouts.
  LayoutVarId NewLayoutVar(std::string name = "");

  struct TypeVarInfo {
    TypeRef binding;
    int level;
    std::string name;
  };
  struct ElemVarInfo {
    std::optional<Elem> binding;
    ElemClass cls;
    int level;
    std::string name;
  };
  struct ShapeVarInfo {
    std::optional<Shape> binding;
    VarKind kind;
    int level;
    std::string name;
    Span origin;
  };
  struct SizeVarInfo {
    std::optional<Dim> binding;
    VarKind kind;
    int level;
    std::string name;
    Span origin;
  };
  struct LayoutVarInfo {
    std::string name;  // the parameter's, for printing
  };

  TypeVarInfo& info(TypeVarId v) { return types_[v.index]; }
  ElemVarInfo& info(ElemVarId v) { return elems_[v.index]; }
  ShapeVarInfo& info(ShapeVarId v) { return shapes_[v.index]; }
  SizeVarInfo& info(SizeVarId v) { return sizes_[v.index]; }
  const TypeVarInfo& info(TypeVarId v) const { return types_[v.index]; }
  const ElemVarInfo& info(ElemVarId v) const { return elems_[v.index]; }
  const ShapeVarInfo& info(ShapeVarId v) const { return shapes_[v.index]; }
  const SizeVarInfo& info(SizeVarId v) const { return sizes_[v.index]; }
  const LayoutVarInfo& info(LayoutVarId v) const { return layouts_[v.index]; }

  // Applying the bindings, deeply: the result mentions only unbound variables.
  TypeRef Resolve(const TypeRef& type) const;
  Elem Resolve(const Elem& elem) const;
  Shape Resolve(const Shape& shape) const;
  Dim Resolve(const Dim& dim) const;
  LayoutRef Resolve(const LayoutRef& layout) const;  // its dims and shapes resolved

 private:
  int level_ = 0;
  std::vector<TypeVarInfo> types_;
  std::vector<ElemVarInfo> elems_;
  std::vector<ShapeVarInfo> shapes_;
  std::vector<SizeVarInfo> sizes_;
  std::vector<LayoutVarInfo> layouts_;
};

// The resolved type of what a function of type `type` returns after `arity` arguments (a built-in's
// result, for the interpreter and the graph); as far as it goes when `type` takes fewer.
TypeRef ResultAfter(const VarStore& vars, const TypeRef& type, std::size_t arity);

// The free (unbound) variables of a resolved type, in order of first appearance.
struct FreeVars {
  std::vector<TypeVarId> types;
  std::vector<ElemVarId> elems;
  std::vector<ShapeVarId> shapes;
  std::vector<SizeVarId> sizes;
  std::vector<LayoutVarId> layouts;
};
void CollectFreeVars(const VarStore& vars, const TypeRef& type, FreeVars& out);
void CollectFreeVars(const VarStore& vars, const Shape& shape, FreeVars& out);
void CollectFreeVars(const VarStore& vars, const Dim& dim, FreeVars& out);

// A relation between dims, as in a `where` clause or an obligation (the solver takes it as it is).
using Relation = RelOp;

struct DimFact {
  Dim lhs;
  Relation relation;
  Dim rhs;
  Span span;
};

// A check the compiled program makes at run time (language.md: sizes known only at run time).
struct RuntimeCheck {
  DimFact fact;
  std::string what;  // "the inner dimensions of `@`"
};

// What a kernel's tensor parameter admits (docs/layouts.md, "Layouts in types"): its layout
// variable, carried in the kernel's scheme beside its `where` clause, must be row-major at an
// offset whose address is a multiple of `offset_bytes` (its tiles address rows from the
// parameter's shape; TMA boxes, cp.async and 16-byte vectors need no more: core::AdmitsRow).
// Where the kernel reads the parameter only through `shared` copies of its tiles (`tma`), which
// sm_90a makes by TMA, there the layout may also be any that a TMA map covers (strided: a column
// slice, permuted heads; core::AdmitsTma), read through a kernel instance that takes the map.
// `weft check --layouts` prints it after the `where` facts: `'l1 row-major at 16 bytes` (`or a
// TMA map on sm_90a`).
struct LayoutPredicate {
  LayoutVarId var;      // the parameter's layout variable
  std::string param;    // the parameter's name
  std::size_t arg = 0;  // its position among the call's arguments (the kernel's inputs)
  std::int64_t offset_bytes = 16;
  Span span;         // the parameter
  bool tma = false;  // read only through `shared` copies (check/tile_layouts.cpp)
};

// How a kernel call reads one argument: the predicate discharged (check/layouts.cpp), by the
// normal forms, then by Z3 under the `where` facts in scope.
struct KernelRead {
  enum class Verdict : std::uint8_t {
    kInPlace,   // proved: the kernel reads the argument where it is
    kCopy,      // refuted: the kernel reads a row-major copy (`why`; `core`: the `where` facts refuting it)
    kRunTime,   // the offset's alignment depends on run-time sizes: in place where `when` holds, else a copy
    kDeferred,  // over a parameter's layout variable (or sizes): kept in the scheme, decided by each caller
  };
  std::string kernel;
  LayoutPredicate predicate;
  std::int64_t element_bytes = 0;  // the argument's (0: not known yet)
  Verdict verdict = Verdict::kDeferred;
  std::string why;
  std::vector<DimFact> when;
  std::vector<Span> core;
  // Where the row-major rule does not read it in place and the parameter admits a TMA map on
  // sm_90a (LayoutPredicate::tma): whether one reads it there (core::AdmitsTma): kInPlace through a
  // map of `tma_dims` dims, kRunTime where `tma_when` holds, kCopy (`tma_why`, its refuting `where`
  // facts in `core` too); kDeferred where that rule does not apply.
  Verdict tma = Verdict::kDeferred;
  std::string tma_why;
  std::vector<DimFact> tma_when;
  std::size_t tma_dims = 0;
};

// A view of a layout that is not known yet (`transpose 'l` in a definition over its parameter's
// layout 'l), where the definition's body makes it: kept in the scheme as `where` facts are, and
// known at a call whose arguments' layouts are (check/layouts.cpp).
struct LayoutFact {
  LayoutRef layout;
  Span span;  // the view
  Span call;  // the call in this definition that brought a callee's view in (invalid for its own)
  // A kernel call's argument: how the kernel reads it. Deferred ones are kept in the scheme and
  // discharged again at each call, with the layout the call gives.
  std::optional<KernelRead> read;
};

// A definition's type scheme: its type, the variables quantified in it, and its `where` facts
// (which a caller must establish).
struct Scheme {
  TypeRef type;
  FreeVars quantified;
  std::vector<DimFact> where;
  Span where_span;
  std::vector<LayoutFact> layouts;  // views over its parameters' layouts, in its body and its callees'
  // A kernel's: what each tensor input admits (its layout variable's predicate).
  std::vector<LayoutPredicate> admits;
};

}  // namespace weft::core
