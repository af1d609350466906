// The layout component of a tensor type (docs/layouts.md, "Layouts in types"): which element of its
// buffer each index of an array value reads. A layout is one of
//   - a strided layout (core/strided.h), known: `(m, n):(1, m)`, or `row` when it is row-major;
//   - `row` of a shape whose rank is not known yet (`'t[..s, n]`): contiguous, a value that owns
//     its data (a load, a literal, a kernel's or an elementwise operation's result);
//   - a layout variable 'l: a definition's parameter's, generalized in its scheme;
//   - a view of a layout that is not known yet: `transpose 'l`, `reshape [a * b] 'l`, `'l[0:4, :]`,
//     kept until a call substitutes the variable (then it is evaluated, by the same functions the
//     graph uses: ApplyView);
//   - not strided: a view that no strided layout describes (a reshape that would split a mode it
//     cannot, an element chosen at run time), with the reason; a kernel reads it by index
//     arithmetic or from a copy.
// Layouts are immutable and shared, as types are. The smart constructors evaluate what they can, so
// a layout over no variable is always known (strided or not strided).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/strided.h"
#include "core/types.h"

namespace weft::core {

// An item of an indexing view, as the core IR's (ir.h) with its dims.
struct ViewIndexItem {
  enum class Kind : std::uint8_t { At, Slice, All };
  Kind kind;
  std::optional<Dim> lo;  // At: the element (none: chosen at run time); Slice: the first element
  std::optional<Dim> hi;  // Slice: one past the last (none: the axis's extent)
  friend bool operator==(const ViewIndexItem&, const ViewIndexItem&) = default;
};

// One view operation: the built-ins that move no data (language.md), and broadcasting's read of a
// unit axis inside the kernel that broadcasts (the graph's).
struct ViewStep {
  enum class Op : std::uint8_t { Transpose, Permute, Reshape, Expand, Index, Broadcast };
  Op op;
  std::vector<int> order;            // Permute: axis k of the result is axis order[k]
  std::vector<Dim> shape;            // Reshape, Broadcast: the new shape
  std::vector<ViewIndexItem> items;  // Index: on the leading axes, in order
  friend bool operator==(const ViewStep&, const ViewStep&) = default;
};

// The one evaluation of a view on a known layout, for the checker's types and the graph's nodes.
ViewResult ApplyView(const ViewStep& step, const StridedView& base);

struct Layout {
  struct Row {
    Shape shape;  // its rank is not known (a known one is a StridedView)
  };
  struct Var {
    LayoutVarId var;
  };
  struct View {
    ViewStep step;
    LayoutRef base;  // a Row, a Var or a View: not known
  };
  struct NotStrided {
    std::string why;
  };
  std::variant<Row, Var, StridedView, View, NotStrided> node;
};

// A tensor type's null layout is `row` over its own shape: the layout of what owns its data, the
// most common by far, so that a type needs no layout of its own (nothing to allocate, resolve or
// substitute). Shape inference leaves every layout null; the layout stage sets the others.
//
// Contiguous, last axis fastest, of `shape` (a layout apart from its type): known (strided) when
// the shape's rank is.
LayoutRef RowLayout(const Shape& shape);
// `layout`, the layout of a tensor of `shape`, apart from its type: null made `RowLayout(shape)`.
LayoutRef Detached(const LayoutRef& layout, const Shape& shape);
LayoutRef VarLayout(LayoutVarId var);
LayoutRef KnownLayout(const ViewResult& view);  // strided, or not strided with the reason
// `step` applied to `base` (not null: see Detached): evaluated when `base` is known, kept as a
// view otherwise.
LayoutRef ApplyView(const ViewStep& step, const LayoutRef& base);

// Known: strided or not strided, or null (no variable, no rank left to learn).
bool IsKnown(const LayoutRef& layout);
// Structural equality (null equals null only).
bool SameLayout(const LayoutRef& a, const LayoutRef& b);

// The layout with its dims, shapes and variables replaced (then evaluated where it became known):
// how a call instantiates a scheme's layouts and how resolution applies the sizes' bindings. A
// function left empty changes nothing of its kind.
struct LayoutMap {
  std::function<Dim(const Dim&)> dim;
  std::function<Shape(const Shape&)> shape;
  std::function<LayoutRef(LayoutVarId)> var;  // null: the variable stays
};
LayoutRef MapLayout(const LayoutRef& layout, const LayoutMap& map);

// The layout variables `layout` mentions, each once, in order of appearance.
void CollectLayoutVars(const LayoutRef& layout, std::vector<LayoutVarId>& out);

// `'l`, `row` (null too), `(m, n):(1, m) + 4`, `transpose 'l`, `reshape [a * b] (transpose 'l)`, `'l[0:4, :]`,
// `(not strided: why)`.
using LayoutVarNames = std::function<std::string(LayoutVarId)>;
std::string ToString(const LayoutRef& layout, const SizeVarNames& sizes = {}, const LayoutVarNames& vars = {});

// ---------------------------------------------------------------------------------------------------
// What a called kernel's tensor parameter admits (docs/graph.md, "Views a called kernel reads")

// A prover of facts about dims: true where the fact holds, false where it is refuted, nothing where
// only run-time sizes decide (the graph's proves under the program's checks with the solver; the
// checker's has the normal forms alone).
using ProveFact = std::function<std::optional<bool>(const DimFact& fact)>;

enum class Alignment : std::uint8_t { kProved, kRefuted, kRunTime };

// Whether `elements` of `element_bytes` each are a multiple of 16 bytes: by the normal form, else
// by `prove`. Where neither decides, `fact` is the condition for the run-time sizes, in elements
// (`n % 8 == 0` for n bf16 elements).
Alignment Aligned16(const Dim& elements, std::int64_t element_bytes, const ProveFact& prove, DimFact& fact);

// A kernel's tensor parameter admits a row-major layout at an offset whose address is a multiple of
// 16 bytes (its tiles' addresses, TMA boxes and 16-byte vectors come from the parameter's shape).
// Gives `layout`'s offset where `layout` is one, with the condition on the run-time sizes under
// which the offset is aligned where neither the normal form nor `prove` decides it (`when`); else
// why not: not row-major (its layout printed with `names`), or an offset never aligned.
struct RowRead {
  Dim offset;
  std::optional<DimFact> when;
};
weft::Result<RowRead, std::string> AdmitsRow(const StridedView& layout, std::int64_t element_bytes,
                                             const ProveFact& prove, const SizeVarNames& names = {});

// A kernel's tensor parameter that it reads only through `shared` copies of its tiles, which
// sm_90a makes by TMA (LayoutPredicate::tma), admits there any layout that a TMA map covers (the
// tensor map's rules, layout/atoms.h's CheckTmaBox; the stdlib kernels' operands read in place the
// same way, graph::ReadInPlace): rank 2 or more; one map dim per mode of each axis, at most 5; the
// next-to-last axis (a box's rows) of one mode; every axis's modes after its outermost of constant
// extents (the kernel splits an index over them); the last axis's innermost mode contiguous, and,
// where that axis has several modes, its extent a multiple of `box_cols` (the kernel's box along
// the last axis, elements) so that no box straddles two; the offset and every other stride a
// multiple of 16 bytes (by the normal form, else by `prove`; what neither decides is a condition
// on the run-time sizes, `when`). A unit mode's stride is immaterial: it is given one that is
// aligned. Gives the layout so mended and, per axis, the extents of its modes after the outermost
// (tile::InPlace::inner); else the first condition that fails, its dims printed with `names`.
struct TmaRead {
  StridedView layout;
  std::vector<std::vector<std::int64_t>> inner;
  std::vector<DimFact> when;
};
weft::Result<TmaRead, std::string> AdmitsTma(const StridedView& layout, std::int64_t element_bytes,
                                             std::int64_t box_cols, const ProveFact& prove,
                                             const SizeVarNames& names = {});

}  // namespace weft::core
