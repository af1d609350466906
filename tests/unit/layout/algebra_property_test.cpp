// Laws of the layout algebra, checked at every coordinate of generated families of small layouts
// (ranks 1-3, depth up to 2, strides including 0). Each TEST_CASE checks the @post conditions that
// compiler/layout/algebra.h and layout.h state, and counts how many members exercised them so that a
// family that degenerated into precondition failures would be noticed.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

#include "layout/algebra.h"
#include "layout_family.h"

namespace weft::layout {
namespace {

using testing::GeneralFamily;
using testing::InjectiveFamily;

bool SameFunction(const Layout& a, const Layout& b, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i)
    if (a(i) != b(i)) return false;
  return true;
}

TEST_CASE("the generated families are large and varied", "[layout][property]") {
  auto general = GeneralFamily(400, 1);
  auto injective = InjectiveFamily(400, 2, false);
  std::set<int> ranks, depths;
  bool has_zero = false;
  for (const Layout& l : general) {
    ranks.insert(l.rank());
    depths.insert(l.depth());
    for (auto [s, d] : FlatModes(l)) has_zero |= d == 0;
  }
  CHECK(general.size() >= 300);
  CHECK(injective.size() >= 300);
  CHECK(ranks == std::set<int>{1, 2, 3});
  CHECK(depths == std::set<int>{0, 1, 2});
  CHECK(has_zero);
  for (const Layout& l : injective) CHECK(IsInjective(l));
}

TEST_CASE("a natural coordinate and its 1-D index give the same offset", "[layout][property]") {
  for (const Layout& l : GeneralFamily(400, 3)) {
    for (std::int64_t i = 0; i < l.size(); ++i) {
      IntTuple c = l.IndexToCoord(i);
      REQUIRE(Congruent(c, l.shape()));
      auto o = l.Evaluate(c);
      REQUIRE(o.ok());
      CHECK(*o == l(i));
      // The index itself is a coordinate too.
      CHECK(*l.Evaluate(IntTuple(i)) == l(i));
    }
  }
}

TEST_CASE("cosize is one past the largest offset for non-negative strides", "[layout][property]") {
  for (const Layout& l : GeneralFamily(400, 4)) {
    std::int64_t hi = 0;
    for (std::int64_t i = 0; i < l.size(); ++i) hi = std::max(hi, l(i));
    CHECK(l.cosize() == hi + 1);
  }
}

TEST_CASE("coalesce and flatten and filter keep the function", "[layout][property]") {
  for (const Layout& l : GeneralFamily(400, 5)) {
    INFO(ToString(l));
    Layout c = Coalesce(l);
    CHECK(c.size() == l.size());
    CHECK(c.depth() <= 1);
    CHECK(SameFunction(l, c, l.size()));
    Layout f = Flatten(l);
    CHECK(f.depth() <= 1);
    CHECK(f.rank() == static_cast<int>(FlattenLeaves(l.shape()).size()));
    CHECK(SameFunction(l, f, 3 * l.size()));  // flatten keeps the extension past size() too
    Layout x = CoalesceExtended(l);
    CHECK(SameFunction(l, x, 3 * l.size()));
    // coalesce is idempotent and leaves no mergeable neighbours
    CHECK(Coalesce(c) == c);
    auto modes = FlatModes(c);
    for (std::size_t i = 0; i + 1 < modes.size(); ++i) CHECK(modes[i].first * modes[i].second != modes[i + 1].second);
    // filter keeps the image (as a set)
    Layout fl = Filter(l);
    std::set<std::int64_t> image, filtered;
    for (std::int64_t i = 0; i < l.size(); ++i) image.insert(l(i));
    for (std::int64_t i = 0; i < fl.size(); ++i) filtered.insert(fl(i));
    CHECK(image == filtered);
    // by-mode coalesce keeps the rank and the function
    if (!l.shape().is_leaf()) {
      auto bm = Coalesce(l, IntTuple::Tuple(std::vector<IntTuple>(l.rank(), IntTuple(1))));
      REQUIRE(bm.ok());
      CHECK(bm->rank() == l.rank());
      CHECK(SameFunction(l, *bm, l.size()));
    }
  }
}

TEST_CASE("composition(A B)(c) == A(B(c)) at every coordinate", "[layout][property]") {
  auto as = GeneralFamily(150, 6);
  auto more = InjectiveFamily(150, 7, true);
  as.insert(as.end(), more.begin(), more.end());
  auto bs = InjectiveFamily(40, 8, true);
  auto general_bs = GeneralFamily(20, 9);
  bs.insert(bs.end(), general_bs.begin(), general_bs.end());
  int composed = 0, refused = 0;
  for (const Layout& a : as) {
    for (const Layout& b : bs) {
      auto r = Composition(a, b);
      if (!r) {
        ++refused;
        CHECK(!r.error().empty());
        continue;
      }
      ++composed;
      INFO(ToString(a) << " o " << ToString(b) << " = " << ToString(*r));
      REQUIRE(r->size() == b.size());
      // compatible(B, R): R refines B's top-level modes
      if (!b.shape().is_leaf()) {
        REQUIRE(r->rank() == b.rank());
        for (int m = 0; m < b.rank(); ++m) CHECK(Product(r->shape()[m]) == Product(b.shape()[m]));
      }
      for (std::int64_t c = 0; c < b.size(); ++c) {
        REQUIRE((*r)(c) == a(b(c)));
        // and with the natural coordinate of B
        IntTuple nat = b.IndexToCoord(c);
        if (!b.shape().is_leaf()) {
          auto via_b = b.Evaluate(nat);
          REQUIRE(via_b.ok());
          CHECK(a(*via_b) == (*r)(c));
        }
      }
    }
  }
  INFO("composed " << composed << ", refused " << refused);
  CHECK(composed >= 3000);
  CHECK(refused >= 1);
}

TEST_CASE("complement is ordered and disjoint and fills out the cotarget", "[layout][property]") {
  auto as = InjectiveFamily(200, 10, true);
  auto general = GeneralFamily(200, 11);
  as.insert(as.end(), general.begin(), general.end());
  int built = 0, refused = 0;
  for (const Layout& a : as) {
    Layout fa = Filter(a);
    for (std::int64_t cotarget : {std::int64_t{1}, a.size(), a.cosize(), 2 * a.cosize() + 1, std::int64_t{64}}) {
      auto c = Complement(a, cotarget);
      INFO("complement(" << ToString(a) << ", " << cotarget << ")");
      if (!c) {
        ++refused;
        // Refused only when A's filtered modes do not chain by divisibility (or A is not injective).
        auto modes = FlatModes(fa);
        std::sort(modes.begin(), modes.end(), [](auto x, auto y) { return x.second < y.second; });
        bool chains = true;
        std::int64_t span = 1;
        for (auto [s, d] : modes) {
          chains &= d >= span && d % span == 0;
          span = s * d;
        }
        CHECK((!chains || !IsInjective(fa)));
        continue;
      }
      ++built;
      std::set<std::int64_t> image;
      for (std::int64_t j = 0; j < a.size(); ++j) image.insert(a(j));
      for (std::int64_t i = 1; i < c->size(); ++i) {
        CHECK((*c)(i) > (*c)(i - 1));      // ordered
        CHECK(image.count((*c)(i)) == 0);  // disjoint
      }
      CHECK(c->size() >= cotarget / fa.size());
      CHECK(fa.size() * c->size() >= cotarget);
      CHECK(IsBijective(Layout::Tuple({fa, *c})));  // A and its complement tile [0, N)
    }
    // complement(A) with the default cotarget cosize(filter(A))
    if (auto c = Complement(a); c.ok()) CHECK(fa.size() * c->size() >= fa.cosize());
  }
  INFO("built " << built << ", refused " << refused);
  CHECK(built >= 1000);
  CHECK(refused >= 1);
}

TEST_CASE("logical_divide(A B) == composition(A (B complement(B size(A))))", "[layout][property]") {
  auto as = InjectiveFamily(150, 12, false);
  auto general = GeneralFamily(150, 13);
  as.insert(as.end(), general.begin(), general.end());
  std::vector<Layout> tilers = {Layout(1, 0),
                                Layout(2, 1),
                                Layout(2, 2),
                                Layout(3, 1),
                                Layout(4, 1),
                                Layout(2, 3),
                                Layout(IntTuple::Tuple({2, 2}), IntTuple::Tuple({1, 4})),
                                Layout(IntTuple::Tuple({2, 2}), IntTuple::Tuple({2, 1})),
                                Layout(4, 2)};
  int divided = 0;
  for (const Layout& a : as) {
    for (const Layout& b : tilers) {
      INFO("logical_divide(" << ToString(a) << ", " << ToString(b) << ")");
      auto d = LogicalDivide(a, b);
      // CuTe passes shape(coalesce(A)) as the cotarget, dividing mode by mode and rounding up, so its
      // rest mode can differ in length from complement(B, size(A))'s; they agree on their common domain.
      auto comp_shape = Complement(b, Coalesce(a).shape());
      auto comp_size = Complement(b, a.size());
      REQUIRE(comp_size.ok() == comp_shape.ok());
      if (!comp_shape) {
        CHECK(!d.ok());
        continue;
      }
      CHECK(SameFunction(*comp_shape, *comp_size, std::min(comp_shape->size(), comp_size->size())));
      auto expect = Composition(a, Layout::Tuple({b, *comp_shape}));
      REQUIRE(d.ok() == expect.ok());
      if (!d) continue;
      ++divided;
      REQUIRE(d->rank() == 2);
      CHECK(Product(d->shape()[0]) == b.size());
      for (std::int64_t c = 0; c < d->size(); ++c) REQUIRE((*d)(c) == (*expect)(c));
      // the law as the issue states it, with complement(B, size(A)), on its domain
      auto by_size = Composition(a, Layout::Tuple({b, *comp_size}));
      REQUIRE(by_size.ok());
      for (std::int64_t c = 0; c < std::min(d->size(), by_size->size()); ++c) REQUIRE((*d)(c) == (*by_size)(c));
      if (a.size() % b.cosize() == 0 && b.size() == b.cosize()) CHECK(*comp_size == *comp_shape);
      // the tile mode is composition(A, B)
      auto tile = Composition(a, b);
      REQUIRE(tile.ok());
      CHECK(SameFunction(d->Mode(0), *tile, b.size()));
      // zipped and tiled divides are the same function, regrouped
      auto z = ZippedDivide(a, b);
      auto t = TiledDivide(a, b);
      REQUIRE(z.ok());
      REQUIRE(t.ok());
      CHECK(SameFunction(*z, *d, d->size()));
      CHECK(SameFunction(*t, *d, d->size()));
    }
  }
  INFO("divided " << divided);
  CHECK(divided >= 1000);
}

TEST_CASE("by-mode divides: each mode is divided by its tiler", "[layout][property]") {
  int checked = 0;
  for (const Layout& a : InjectiveFamily(300, 14, false)) {
    if (a.shape().is_leaf() || a.rank() < 2) continue;
    std::vector<Layout> tiler = {Layout(2, 1), Layout(1, 0)};
    auto d = LogicalDivide(a, Tiler(tiler));
    if (!d) continue;
    ++checked;
    REQUIRE(d->rank() == a.rank());
    auto m0 = LogicalDivide(a.Mode(0), Tiler(tiler[0]));
    REQUIRE(m0.ok());
    CHECK(d->Mode(0) == *m0);
    auto z = ZippedDivide(a, Tiler(tiler));
    REQUIRE(z.ok());
    CHECK(z->rank() == 2);
    CHECK(z->Mode(0).rank() == 2);
    CHECK(z->size() == d->size());
    // zipped_divide regroups: ((t0, t1), (r0, r1, ...)) evaluated at ((i0,i1),(j0,j1,...)) equals
    // the divided layout at ((i0,j0),(i1,j1),...)
    for (std::int64_t i = 0; i < z->size(); ++i) {
      IntTuple zc = z->IndexToCoord(i);
      std::vector<IntTuple> modes;
      for (int m = 0; m < a.rank(); ++m) {
        if (m < 2) {
          modes.push_back(IntTuple::Tuple({zc[0][m], zc[1][m]}));
        } else {
          modes.push_back(zc[1][m]);
        }
      }
      auto dv = d->Evaluate(IntTuple::Tuple(modes));
      REQUIRE(dv.ok());
      CHECK(*dv == (*z)(i));
    }
  }
  CHECK(checked >= 50);
}

TEST_CASE("right_inverse and left_inverse are inverses on their domains", "[layout][property]") {
  auto as = InjectiveFamily(200, 15, true);
  auto general = GeneralFamily(200, 16);
  as.insert(as.end(), general.begin(), general.end());
  int left_built = 0, right_nontrivial = 0;
  for (const Layout& a : as) {
    INFO(ToString(a));
    Layout r = RightInverse(a);
    for (std::int64_t i = 0; i < r.size(); ++i) CHECK(a(r(i)) == i);
    right_nontrivial += r.size() > 1;
    auto l = LeftInverse(a);
    if (IsInjective(a)) {
      if (!l) continue;
      ++left_built;
      for (std::int64_t i = 0; i < a.size(); ++i) CHECK((*l)(a(i)) == i);
    } else if (l) {
      for (std::int64_t i = 0; i < a.size(); ++i) CHECK(a((*l)(a(i))) == a(i));
    }
  }
  // compact layouts: the inverses are two-sided
  for (const Layout& a : InjectiveFamily(200, 17, false)) {
    Layout c = Layout::Compact(a.shape());
    Layout r = RightInverse(c);
    CHECK(r.size() == c.size());
  }
  INFO("left " << left_built << ", right " << right_nontrivial);
  CHECK(left_built >= 150);
  CHECK(right_nontrivial >= 100);
}

TEST_CASE("products: the block repeated as the tiler says", "[layout][property]") {
  auto blocks = InjectiveFamily(120, 18, false);
  std::vector<Layout> tilers = {Layout(3, 1), Layout(IntTuple::Tuple({2, 3}), IntTuple::Tuple({1, 2})),
                                Layout(IntTuple::Tuple({2, 2}), IntTuple::Tuple({2, 1})),
                                Layout(IntTuple::Tuple({2, 1, 2}), IntTuple::Tuple({1, 2, 2}))};
  int built = 0;
  for (const Layout& a : blocks) {
    for (const Layout& b : tilers) {
      INFO(ToString(a) << " * " << ToString(b));
      auto p = LogicalProduct(a, b);
      if (!p) continue;
      ++built;
      REQUIRE(p->rank() == 2);
      CHECK(p->Mode(0) == a);
      auto c = Complement(a, a.size() * b.cosize());
      REQUIRE(c.ok());
      // mode 1 is complement(A, size(A)*cosize(B)) o B
      for (std::int64_t j = 0; j < b.size(); ++j) CHECK(p->Mode(1)(j) == (*c)(b(j)));
      // an injective block times an injective tiler is injective
      CHECK(IsInjective(*p));
      int rank = std::max(a.rank(), b.rank());
      auto blocked = BlockedProduct(a, b);
      auto raked = RakedProduct(a, b);
      REQUIRE(blocked.ok());
      REQUIRE(raked.ok());
      CHECK(blocked->rank() == rank);
      CHECK(raked->rank() == rank);
      CHECK(blocked->size() == p->size());
      CHECK(IsInjective(*blocked));
      CHECK(IsInjective(*raked));
      // blocked: mode i is (A_i, B'_i); raked: (B'_i, A_i), the same offsets
      for (int m = 0; m < rank; ++m) {
        Layout bm = blocked->Mode(m), rm = raked->Mode(m);
        CHECK(bm.Mode(0) == rm.Mode(1));
        CHECK(bm.Mode(1) == rm.Mode(0));
      }
    }
  }
  CHECK(built >= 300);
}

TEST_CASE("preconditions that fail are errors with messages and not crashes", "[layout]") {
  Layout a(IntTuple::Tuple({2, 2}), IntTuple::Tuple({2, 3}));
  auto c = Complement(a, 24);
  REQUIRE(!c.ok());
  CHECK(c.error().find("does not exist") != std::string::npos);
  auto d = Complement(Layout(IntTuple::Tuple({2, 2}), IntTuple::Tuple({1, 1})), 8);
  REQUIRE(!d.ok());
  CHECK(d.error().find("falls inside the span") != std::string::npos);
  // (3,4):(1,5) o 4:2 would need offsets 0,2,6,10: not a layout
  auto e = Composition(Layout(IntTuple::Tuple({3, 4}), IntTuple::Tuple({1, 5})), Layout(4, 2));
  REQUIRE(!e.ok());
  CHECK(e.error().find("divisibility") != std::string::npos);
  // stride 4 against a mode of size 3
  auto f = Composition(Layout(IntTuple::Tuple({3, 4}), IntTuple::Tuple({1, 10})), Layout(2, 4));
  REQUIRE(!f.ok());
  auto g = Layout::Make(IntTuple::Tuple({2, 2}), IntTuple(1));
  REQUIRE(!g.ok());
  CHECK(g.error() == "shape `(2,2)` and stride `1` are not congruent");
  // left_inverse of a non-injective layout is CuTe's quasi-inverse: A(L(A(i))) == A(i)
  Layout twice(IntTuple::Tuple({2, 2}), IntTuple::Tuple({1, 1}));
  auto h = LeftInverse(twice);
  REQUIRE(h.ok());
  for (std::int64_t i = 0; i < 4; ++i) CHECK(twice((*h)(twice(i))) == twice(i));
  CHECK(!LeftInverse(Layout(IntTuple::Tuple({2, 2}), IntTuple::Tuple({2, 3}))).ok());
  auto bad = Layout(IntTuple::Tuple({2, 3}), IntTuple::Tuple({1, 2})).Evaluate(IntTuple::Tuple({1, 1, 1}));
  CHECK(!bad.ok());
}

}  // namespace
}  // namespace weft::layout
