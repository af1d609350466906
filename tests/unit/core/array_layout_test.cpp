// core/array_layout.h: layouts in types. The law: a view kept as an expression over a layout
// variable and evaluated once the variable is substituted is the view evaluated on the known
// layout at once (deferring never changes a layout), for every step over a family of bases.
#include "core/array_layout.h"

#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace weft::core {
namespace {

const SizeVarId kN{0};

Dim C(std::int64_t c) {
  return Dim::Constant(c);
}

std::string Name(SizeVarId v) {
  return v.index == 0 ? "n" : DefaultSizeVarName(v);
}

std::string VarName(LayoutVarId v) {
  return "'l" + std::to_string(v.index);
}

std::string Text(const LayoutRef& layout) {
  return ToString(layout, Name, VarName);
}

// The known bases: row-major ones, a transposed one, a sliced one (an offset), a merged reshape.
std::vector<StridedView> Bases() {
  std::vector<StridedView> out;
  for (std::vector<Dim> shape :
       {std::vector<Dim>{C(4), C(6)}, std::vector<Dim>{C(2), C(3), C(8)}, std::vector<Dim>{Dim::Var(kN), C(8)}}) {
    StridedView row = *RowMajor(shape);
    out.push_back(row);
    out.push_back(*Transpose(row));
    out.push_back(*Slice(row, 0, C(1), row.axes[0].Extent()));
  }
  return out;
}

// Steps that apply to a base of rank >= 2 (some fail on some bases: then both sides must fail alike).
std::vector<ViewStep> Steps(const StridedView& base) {
  using Op = ViewStep::Op;
  std::vector<ViewStep> out;
  out.push_back({Op::Transpose, {}, {}, {}});
  out.push_back({Op::Expand, {}, {}, {}});
  std::vector<int> reversed;
  for (std::size_t k = base.rank(); k-- > 0;) reversed.push_back(static_cast<int>(k));
  out.push_back({Op::Permute, reversed, {}, {}});
  // Every axis merged, and the first two axes merged.
  Dim all = C(1);
  for (const Dim& d : base.Shape()) all = *Mul(all, d);
  out.push_back({Op::Reshape, {}, {all}, {}});
  std::vector<Dim> merged{*Mul(base.Shape()[0], base.Shape()[1])};
  for (std::size_t k = 2; k < base.rank(); ++k) merged.push_back(base.Shape()[k]);
  out.push_back({Op::Reshape, {}, merged, {}});
  using Item = ViewIndexItem;
  out.push_back({Op::Index, {}, {}, {Item{Item::Kind::At, C(1), {}}}});
  out.push_back({Op::Index, {}, {}, {Item{Item::Kind::All, {}, {}}, Item{Item::Kind::Slice, C(1), C(2)}}});
  out.push_back({Op::Index, {}, {}, {Item{Item::Kind::Slice, C(0), {}}, Item{Item::Kind::At, C(0), {}}}});
  return out;
}

TEST_CASE("a view deferred over a variable is the view evaluated at once", "[array_layout]") {
  const LayoutVarId l{7};
  for (const StridedView& base : Bases()) {
    LayoutRef known = KnownLayout(base);
    for (const ViewStep& step : Steps(base)) {
      // One step, and the step after a transpose (a chain).
      for (bool chain : {false, true}) {
        ViewStep transpose{ViewStep::Op::Transpose, {}, {}, {}};
        LayoutRef over_var = ApplyView(step, chain ? ApplyView(transpose, VarLayout(l)) : VarLayout(l));
        REQUIRE(std::holds_alternative<Layout::View>(over_var->node));
        CHECK_FALSE(IsKnown(over_var));
        LayoutMap map;
        map.var = [&](LayoutVarId v) { return v == l ? known : nullptr; };
        LayoutRef later = MapLayout(over_var, map);
        LayoutRef now = ApplyView(step, chain ? ApplyView(transpose, known) : known);
        INFO(ToString(base, Name) << " then " << Text(over_var) << ": " << Text(later) << " vs " << Text(now));
        CHECK(IsKnown(later));
        CHECK(SameLayout(later, now));
      }
    }
  }
}

TEST_CASE("row layouts are known when the rank is", "[array_layout]") {
  LayoutRef known = RowLayout(Shape::Of({Dim::Var(kN), C(4)}));
  REQUIRE(std::holds_alternative<StridedView>(known->node));
  CHECK(std::get<StridedView>(known->node) == *RowMajor({Dim::Var(kN), C(4)}));
  CHECK(Text(known) == "row");
  LayoutRef spread = RowLayout(Shape{{}, ShapeVarId(0), {C(4)}});
  CHECK(std::holds_alternative<Layout::Row>(spread->node));
  CHECK_FALSE(IsKnown(spread));
  // Once the shape variable is bound (resolution maps the shape), it is known.
  LayoutMap map;
  map.shape = [](const Shape&) { return Shape::Of({C(3), C(4)}); };
  LayoutRef resolved = MapLayout(ApplyView({ViewStep::Op::Transpose, {}, {}, {}}, spread), map);
  REQUIRE(IsKnown(resolved));
  CHECK(Text(resolved) == "(4, 3):(1, 4)");
}

TEST_CASE("views print as expressions over their variable", "[array_layout]") {
  using Op = ViewStep::Op;
  LayoutRef l = VarLayout(LayoutVarId{1});
  LayoutRef reshaped = ApplyView({Op::Reshape, {}, {Dim::Var(kN), C(8), C(4)}, {}}, l);
  CHECK(Text(reshaped) == "reshape [n, 8, 4] 'l1");
  CHECK(Text(ApplyView({Op::Permute, {1, 0, 2}, {}, {}}, reshaped)) == "permute [1, 0, 2] (reshape [n, 8, 4] 'l1)");
  using Item = ViewIndexItem;
  CHECK(Text(ApplyView({Op::Index, {}, {}, {Item{Item::Kind::Slice, C(0), C(4)}, Item{Item::Kind::All, {}, {}}}}, l)) ==
        "'l1[0:4, :]");
}

TEST_CASE("views no strided layout describes say why", "[array_layout]") {
  using Op = ViewStep::Op;
  using Item = ViewIndexItem;
  // An element chosen at run time: whatever the base.
  LayoutRef at = ApplyView({Op::Index, {}, {}, {Item{Item::Kind::At, std::nullopt, {}}}}, VarLayout(LayoutVarId{0}));
  REQUIRE(IsKnown(at));
  CHECK(Text(at) == "(not strided: an element chosen at run time)");
  // A transposed [4, 6] merged into 24 elements: its modes do not merge, but they regroup; split
  // into [4, 6] they cannot (4 does not divide the first mode's 6).
  LayoutRef t = KnownLayout(Transpose(*RowMajor({C(4), C(6)})));
  CHECK(Text(ApplyView({Op::Reshape, {}, {C(24)}, {}}, t)) == "((6, 4)):((1, 6))");
  LayoutRef bad = ApplyView({Op::Reshape, {}, {C(4), C(6)}, {}}, t);
  REQUIRE(std::holds_alternative<Layout::NotStrided>(bad->node));
  // A view of a view that is not strided is not strided either, for the same reason.
  CHECK(SameLayout(ApplyView({Op::Transpose, {}, {}, {}}, bad), bad));
}

// AdmitsRow's contract (the predicate a kernel's tensor parameter states, `'l1 row-major at 16
// bytes`): where it admits a layout with no condition, every size gives an offset of a multiple of
// 16 bytes; where it admits one under a condition on the sizes (`when`, checked at run time), the
// condition holds for exactly the sizes that align the offset; where it refuses a row-major layout,
// no size aligns it; a layout that is not row-major is refused. Over rows starting at several
// offsets of [4, n], [4, 2n + 1] and [4, 8] tensors of 1-, 2- and 4-byte elements, at n = 0..63.
TEST_CASE("AdmitsRow admits exactly the sizes that align the offset", "[array_layout]") {
  const Dim n = Dim::Var(kN);
  const Dim odd = *Add(*Mul(C(2), n), C(1));
  for (const Dim& pitch : {n, odd, C(8)}) {
    const StridedView row = *RowMajor({C(4), pitch});
    for (const Dim& lo : {C(0), C(1), C(2), C(3)}) {
      const StridedView rows = *Slice(row, 0, lo, C(4));
      for (std::int64_t bytes : {1, 2, 4}) {
        CAPTURE(ToString(rows, Name), bytes);
        weft::Result<RowRead, std::string> read = AdmitsRow(rows, bytes, {}, Name);
        for (std::int64_t value = 0; value < 64; ++value) {
          auto at = [&](const Dim& d) { return *Evaluate(d, [&](SizeVarId) { return value; }); };
          const bool aligned = at(rows.offset) * bytes % 16 == 0;
          if (!read) {
            CHECK_FALSE(aligned);
          } else if (!read->when) {
            CHECK(aligned);
          } else {
            CHECK(read->when->relation == RelOp::kEq);
            CHECK((at(read->when->lhs) == at(read->when->rhs)) == aligned);
          }
        }
      }
    }
    // Transposed, it is not row-major (but where an extent of 1 makes it so: not here, n aside).
    if (pitch == C(8)) CHECK_FALSE(AdmitsRow(*Transpose(row), 2, {}, Name));
  }
}

// AdmitsTma's contract (what a parameter read only through `shared` copies admits on sm_90a, and
// what the stdlib kernels' in-place reads take): where it admits a column slice of a [4, pitch]
// tensor with no condition, every size makes the row stride and the offset multiples of 16 bytes;
// under a condition (`when`, checked at run time), the conditions hold for exactly the sizes that
// do; where it refuses one, no size does. Over slices at several columns of [4, n], [4, 2n + 1],
// [4, 8n] and [4, 72] tensors of 1-, 2- and 4-byte elements, at n = 0..63. A transpose is refused
// (its last axis is not contiguous), and rows of permuted heads are a 3-D map.
TEST_CASE("AdmitsTma admits exactly the sizes that align strides and offset", "[array_layout]") {
  const Dim n = Dim::Var(kN);
  const Dim odd = *Add(*Mul(C(2), n), C(1));
  for (const Dim& pitch : {n, odd, *Mul(C(8), n), C(72)}) {
    const StridedView rows = *RowMajor({C(4), pitch});
    for (const Dim& lo : {C(0), C(1), C(4), C(8)}) {
      const StridedView slice = *Slice(rows, 1, lo, *Add(lo, C(8)));
      for (std::int64_t bytes : {1, 2, 4}) {
        CAPTURE(ToString(slice, Name), bytes);
        weft::Result<TmaRead, std::string> read = AdmitsTma(slice, bytes, 128 / bytes, {}, Name);
        for (std::int64_t value = 0; value < 64; ++value) {
          auto at = [&](const Dim& d) { return *Evaluate(d, [&](SizeVarId) { return value; }); };
          const bool aligned = at(slice.offset) * bytes % 16 == 0 && at(pitch) * bytes % 16 == 0;
          if (!read) {
            CHECK_FALSE(aligned);
          } else {
            bool holds = true;
            for (const DimFact& fact : read->when) {
              CHECK(fact.relation == RelOp::kEq);
              holds = holds && at(fact.lhs) == at(fact.rhs);
            }
            CHECK(holds == aligned);
          }
        }
      }
    }
    weft::Result<TmaRead, std::string> transposed = AdmitsTma(*Transpose(rows), 2, 64, {}, Name);
    REQUIRE_FALSE(transposed);
    CHECK(transposed.error().find("not contiguous") != std::string::npos);
  }
  // Rows of heads [2, 128, 64] permuted to [128, 2, 64] and merged: ((128), (2, 64)):((64), (8192, 1)).
  const StridedView heads = *RowMajor({C(2), C(128), C(64)});
  ViewResult merged = Reshape(*Permute(heads, {1, 0, 2}), {C(128), C(128)});
  REQUIRE(merged);
  weft::Result<TmaRead, std::string> read = AdmitsTma(*merged, 2, 64, {}, Name);
  REQUIRE(read);
  CHECK(read->when.empty());
  CHECK(read->inner == std::vector<std::vector<std::int64_t>>{{}, {64}});
  // A box wider than the heads' 64 columns would straddle two heads.
  CHECK_FALSE(AdmitsTma(*merged, 2, 128, {}, Name));
}

}  // namespace
}  // namespace weft::core
