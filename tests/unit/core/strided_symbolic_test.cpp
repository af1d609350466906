// core::Reshape over symbolic extents: a constant extent taken out of a mode whose extent is a size
// (`[s, 4, e / 4]` of `[s, e]`), and the last axis taking the modes left (`4 * (e / 4)` is `e`
// where the reshape checked). Checked by the elements each view reads, at sizes where the
// reshape's obligation holds, against row-major index arithmetic.
#include "core/strided.h"

#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

namespace weft::core {
namespace {

const SizeVarId kS{0}, kE{1};

std::string Name(SizeVarId v) {
  return v.index == 0 ? "s" : "e";
}

Dim C(std::int64_t c) {
  return Dim::Constant(c);
}

std::int64_t At(const Dim& d, std::int64_t s, std::int64_t e) {
  auto v = Evaluate(d, [&](SizeVarId id) { return id == kS ? s : e; });
  REQUIRE(v.ok());
  return *v;
}

std::int64_t Offset(const StridedView& view, const std::vector<std::int64_t>& index, std::int64_t s, std::int64_t e) {
  std::int64_t out = At(view.offset, s, e);
  for (std::size_t k = 0; k < view.rank(); ++k) {
    std::int64_t i = index[k];
    const auto& modes = view.axes[k].modes;
    for (std::size_t m = modes.size(); m-- > 0;) {
      std::int64_t extent = At(modes[m].extent, s, e);
      out += (i % extent) * At(modes[m].stride, s, e);
      i /= extent;
    }
  }
  return out;
}

TEST_CASE("strided: a constant extent out of a mode of symbolic extent, and back") {
  const Dim s = Dim::Var(kS), e = Dim::Var(kE);
  const Dim quarter = *Div(e, 4);
  auto rows = RowMajor({s, e});
  REQUIRE(rows.ok());
  auto split = Reshape(*rows, {s, C(4), quarter});
  REQUIRE(split.ok());
  CHECK(ToString(*split, Name) == "(s, 4, e / 4):(e, e / 4, 1)");
  auto heads = Permute(*split, {1, 0, 2});
  REQUIRE(heads.ok());
  CHECK(ToString(*heads, Name) == "(4, s, e / 4):(e / 4, e, 1)");
  // Back to [s, e]: the last axis takes the two modes left, merged, of extent `e`.
  auto back = Reshape(*split, {s, e});
  REQUIRE(back.ok());
  CHECK(IsRowMajor(*back));
  // Each element is the one row-major index arithmetic reaches, at sizes where e % 4 == 0.
  for (std::int64_t sv : {1, 3})
    for (std::int64_t ev : {4, 12, 20}) {
      for (std::int64_t h = 0; h < 4; ++h)
        for (std::int64_t r = 0; r < sv; ++r)
          for (std::int64_t c = 0; c < ev / 4; ++c)
            CHECK(Offset(*heads, {h, r, c}, sv, ev) == r * ev + h * (ev / 4) + c);
    }
}

TEST_CASE("strided: the last axis still refuses a constant count of elements that differs") {
  auto rows = RowMajor({C(4), C(6)});
  REQUIRE(rows.ok());
  auto bad = Reshape(*rows, {C(4), C(5)});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().find("fewer elements") != std::string::npos);
  CHECK_FALSE(Reshape(*rows, {C(4), C(7)}).ok());
  // 4 out of a mode of extent s assumes s % 4 == 0, which [s, 6] -> [4, 6 s / 4] does not need (s = 2
  // is 12 elements as 4 x 3): the modes left, (s / 4) x 6, are not written 6 s / 4, so it is refused.
  const Dim s = Dim::Var(kS);
  auto sym = RowMajor({s, C(6)});
  REQUIRE(sym.ok());
  auto unsure = Reshape(*sym, {C(4), *Div(*Mul(s, C(6)), 4)});
  REQUIRE_FALSE(unsure.ok());
  CHECK(unsure.error().find("are not the new extent") != std::string::npos);
}

}  // namespace
}  // namespace weft::core
