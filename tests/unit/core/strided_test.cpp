// core/strided.h: the layouts of array views, checked by the elements they read. Each test builds a
// view through the operations and compares the offset it computes for every index (at sizes chosen
// here) with the row-major offset of the element the same view reaches by index arithmetic.
#include "core/strided.h"

#include <catch2/catch.hpp>

#include <cstdint>
#include <functional>
#include <vector>

namespace weft::core {
namespace {

const SizeVarId kS{0};

std::string Name(SizeVarId v) {
  return v.index == 0 ? "s" : DefaultSizeVarName(v);
}

Dim C(std::int64_t c) {
  return Dim::Constant(c);
}

Dim S() {
  return Dim::Var(kS);
}

std::int64_t At(const Dim& d, std::int64_t s) {
  auto v = Evaluate(d, [&](SizeVarId) { return s; });
  REQUIRE(v.ok());
  return *v;
}

// The element `view` reads at `index`, with s = `s`.
std::int64_t Offset(const StridedView& view, const std::vector<std::int64_t>& index, std::int64_t s) {
  std::int64_t out = At(view.offset, s);
  for (std::size_t k = 0; k < view.rank(); ++k) {
    std::int64_t i = index[k];
    const auto& modes = view.axes[k].modes;
    for (std::size_t m = modes.size(); m-- > 0;) {
      std::int64_t e = At(modes[m].extent, s);
      out += (m == 0 ? i : i % e) * At(modes[m].stride, s);
      i /= e;
    }
  }
  return out;
}

// Every index of a view of `shape` (at s), row-major.
void EachIndex(const std::vector<std::int64_t>& shape, const std::function<void(const std::vector<std::int64_t>&)>& f) {
  std::vector<std::int64_t> i(shape.size(), 0);
  for (;;) {
    f(i);
    std::size_t k = shape.size();
    while (k > 0 && ++i[k - 1] == shape[k - 1]) i[--k] = 0;
    if (k == 0) return;
  }
}

std::vector<std::int64_t> ShapeAt(const StridedView& view, std::int64_t s) {
  std::vector<std::int64_t> out;
  for (const Dim& d : view.Shape()) out.push_back(At(d, s));
  return out;
}

TEST_CASE("strided: row-major, permute and transpose read the elements index arithmetic names") {
  auto o = RowMajor({C(2), S(), C(4)});
  REQUIRE(o.ok());
  CHECK(IsRowMajor(*o));
  CHECK(ToString(*o, Name) == "(2, s, 4):(4*s, 4, 1)");
  auto p = Permute(*o, {1, 0, 2});
  REQUIRE(p.ok());
  CHECK_FALSE(IsRowMajor(*p));
  for (std::int64_t s : {1, 3, 5})
    EachIndex(ShapeAt(*p, s),
              [&](const std::vector<std::int64_t>& i) { CHECK(Offset(*p, i, s) == (i[1] * s + i[0]) * 4 + i[2]); });
  auto t = Transpose(*o);
  REQUIRE(t.ok());
  CHECK(ToString(*t, Name) == "(2, 4, s):(4*s, 1, 4)");
  CHECK_FALSE(Permute(*o, {0, 0, 1}).ok());
  CHECK_FALSE(Permute(*o, {0, 1}).ok());
  CHECK_FALSE(Transpose(*RowMajor({C(3)})).ok());
}

TEST_CASE("strided: attention's heads permuted back to rows are one view of three modes (issue 28's example)") {
  // o: [32, s, 128]; reshape [s, 4096] (permute [1, 0, 2] o): the K axis runs over heads and within one.
  auto o = RowMajor({C(32), S(), C(128)});
  REQUIRE(o.ok());
  auto rows = Reshape(*Permute(*o, {1, 0, 2}), {S(), C(4096)});
  REQUIRE(rows.ok());
  CHECK(ToString(*rows, Name) == "(s, (32, 128)):(128, (128*s, 1))");
  for (std::int64_t s : {1, 2, 3})
    EachIndex(ShapeAt(*rows, s), [&](const std::vector<std::int64_t>& i) {
      std::int64_t head = i[1] / 128, d = i[1] % 128;
      CHECK(Offset(*rows, i, s) == (head * s + i[0]) * 128 + d);
    });
  // Without the permute the merge is contiguous: one mode.
  auto plain = Reshape(*RowMajor({S(), C(32), C(128)}), {S(), C(4096)});
  REQUIRE(plain.ok());
  CHECK(ToString(*plain, Name) == "(s, 4096):(4096, 1)");
  CHECK(IsRowMajor(*plain));
}

TEST_CASE("strided: reshape splits modes a constant divides, and refuses what would need a copy") {
  auto t = Transpose(*RowMajor({C(6), C(4)}));  // (4, 6):(1, 4)
  REQUIRE(t.ok());
  auto split = Reshape(*t, {C(2), C(2), C(3), C(2)});
  REQUIRE(split.ok());
  CHECK(ToString(*split) == "(2, 2, 3, 2):(2, 1, 8, 4)");
  EachIndex(ShapeAt(*split, 1), [&](const std::vector<std::int64_t>& i) {
    std::int64_t row = i[0] * 2 + i[1], col = i[2] * 2 + i[3];  // the transposed view's (row, col)
    CHECK(Offset(*split, i, 1) == col * 4 + row);
  });
  auto merged = Reshape(*t, {C(24)});
  REQUIRE(merged.ok());
  CHECK(ToString(*merged) == "((4, 6)):((1, 4))");
  EachIndex({24},
            [&](const std::vector<std::int64_t>& i) { CHECK(Offset(*merged, i, 1) == (i[0] % 6) * 4 + i[0] / 6); });
  // 4 rows of 6 split as 3 x 8: the mode of extent 4 does not split into pieces of 3.
  auto bad = Reshape(*t, {C(3), C(8)});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().find("does not split") != std::string::npos);
  CHECK_FALSE(Reshape(*t, {C(5), C(5)}).ok());
  CHECK_FALSE(Reshape(*t, {C(4), C(3)}).ok());
  // Unit axes come and go.
  auto unit = Reshape(*RowMajor({C(1), C(6)}), {C(6), C(1)});
  REQUIRE(unit.ok());
  CHECK(ToString(*unit) == "(6, 1):(1, 0)");
}

TEST_CASE("strided: slices move the offset, and a merged axis slices only along its outer mode") {
  auto w = RowMajor({C(4096), C(8)});
  REQUIRE(w.ok());
  auto rows = Slice(*w, 0, C(1024), C(3072));
  REQUIRE(rows.ok());
  CHECK(ToString(*rows) == "(2048, 8):(8, 1) + 8192");
  auto x = RowMajor({S(), C(4096)});
  REQUIRE(x.ok());
  auto cols = Slice(*x, 1, C(1024), C(3072));
  REQUIRE(cols.ok());
  CHECK(ToString(*cols, Name) == "(s, 2048):(4096, 1) + 1024");
  auto heads = Reshape(*Permute(*RowMajor({C(32), S(), C(128)}), {1, 0, 2}), {S(), C(4096)});
  REQUIRE(heads.ok());
  auto some = Slice(*heads, 1, C(1024), C(3072));  // heads 8 .. 23
  REQUIRE(some.ok());
  CHECK(ToString(*some, Name) == "(s, (16, 128)):(128, (128*s, 1)) + 1024*s");
  for (std::int64_t s : {1, 2})
    EachIndex(ShapeAt(*some, s), [&](const std::vector<std::int64_t>& i) {
      std::int64_t k = i[1] + 1024, head = k / 128, d = k % 128;
      CHECK(Offset(*some, i, s) == (head * s + i[0]) * 128 + d);
    });
  auto across = Slice(*heads, 1, C(64), C(192));
  REQUIRE_FALSE(across.ok());
  CHECK(across.error().find("across the modes") != std::string::npos);
  CHECK_FALSE(Slice(*x, 2, C(0), C(1)).ok());
  auto e = Expand(*x, 1);
  REQUIRE(e.ok());
  CHECK(ToString(*e, Name) == "(s, 1, 4096):(4096, 0, 1)");
  CHECK(IsRowMajor(*e));
}

TEST_CASE("strided: an element of an axis, and broadcasts read with stride 0") {
  auto x = RowMajor({C(3), S(), C(4)});
  REQUIRE(x.ok());
  auto row = At(*x, 1, C(2));
  REQUIRE(row.ok());
  CHECK(ToString(*row, Name) == "(3, 4):(4*s, 1) + 8");
  auto b = Broadcast(*RowMajor({S(), C(1)}), {C(2), S(), C(5)});
  REQUIRE(b.ok());
  CHECK(ToString(*b, Name) == "(2, s, 5):(0, 1, 0)");
  for (std::int64_t s : {1, 3})
    EachIndex(ShapeAt(*b, s), [&](const std::vector<std::int64_t>& i) { CHECK(Offset(*b, i, s) == i[1]); });
  CHECK_FALSE(Broadcast(*x, {C(3), S()}).ok());
  CHECK_FALSE(Broadcast(*RowMajor({C(2)}), {C(3)}).ok());
}

}  // namespace
}  // namespace weft::core
