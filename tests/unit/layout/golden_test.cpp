// Worked examples from CuTe's documentation, written in as facts. Source: NVIDIA/cutlass,
// media/docs/cpp/cute/01_layout.md and 02_layout_algebra.md ("CuTe Layout Algebra"); the numbers are
// the documents', the code is ours. CuTe prints static integers with a leading `_`; we print plain
// integers and follow CuTe's static-integer results (size-1 modes are dropped as CuTe does when
// their extent is known at compile time, which it always is here).
#include <catch2/catch.hpp>

#include "evaluate_text.h"
#include "layout/algebra.h"

namespace weft::layout {
namespace {

Layout L(const std::string& text) {
  auto l = testing::ParseLayoutText(text);
  REQUIRE(l.ok());
  return *l;
}

std::string Str(const Result<Layout>& r) {
  return r.ok() ? ToString(*r) : "error: " + r.error();
}

TEST_CASE("golden: coalesce (02_layout_algebra.md Coalesce)", "[layout][golden]") {
  CHECK(ToString(Coalesce(L("(2,(1,6)):(1,(6,2))"))) == "12:1");
  // by-mode coalesce with the profile Step<_1,_1>
  CHECK(Str(Coalesce(L("(2,(1,6)):(1,(6,2))"), IntTuple::Tuple({1, 1}))) == "(2,6):(1,2)");
  // "column-major (2,4):(1,2) acts identically to 8:1 for 1-D coordinates"
  CHECK(ToString(Coalesce(L("(2,4):(1,2)"))) == "8:1");
}

TEST_CASE("golden: composition (02_layout_algebra.md Composition)", "[layout][golden]") {
  CHECK(Str(Composition(L("(6,2):(8,2)"), L("(4,3):(3,1)"))) == "((2,2),3):((24,2),8)");
  CHECK(Str(Composition(L("20:2"), L("(5,4):(4,1)"))) == "(5,4):(8,2)");
  // "The following C++ code prints (_5,(_2,_2)):(_16,(_80,_4))"
  CHECK(Str(Composition(L("(10,2):(16,4)"), L("(5,4):(1,5)"))) == "(5,(2,2)):(16,(80,4))");
  // By-mode composition with the tiler <3:4, 8:2>
  Layout a = L("(12,(4,8)):(59,(13,1))");
  CHECK(Str(Composition(a, Tiler(std::vector<Layout>{L("3:4"), L("8:2")}))) == "(3,(2,4)):(236,(26,1))");
  // ... and with the shape (3,8), i.e. <3:1, 8:1>
  CHECK(Str(Composition(a, Tiler(std::vector<Layout>{L("3:1"), L("8:1")}))) == "(3,(4,2)):(59,(13,1))");
  // The shape and stride arithmetic: (3,6,2,8):(w,x,y,z) o 16:9 = (1,2,2,4):(9w,3x,y,z); with
  // (w,x,y,z) = (1,3,18,36) the size-1 mode is dropped.
  CHECK(Str(Composition(L("(3,6,2,8):(1,100,1000,10000)"), L("16:9"))) == "(2,2,4):(300,1000,10000)");
}

TEST_CASE("golden: complement (02_layout_algebra.md Complement)", "[layout][golden]") {
  CHECK(Str(Complement(L("4:1"), 24)) == "6:4");
  CHECK(Str(Complement(L("6:4"), 24)) == "4:1");
  CHECK(Str(Complement(L("(4,6):(1,4)"), 24)) == "1:0");
  CHECK(Str(Complement(L("4:2"), 24)) == "(2,3):(1,8)");
  CHECK(Str(Complement(L("(2,4):(1,6)"), 24)) == "3:2");
  CHECK(Str(Complement(L("(2,2):(1,6)"), 24)) == "(3,2):(2,12)");
}

TEST_CASE("golden: divides (02_layout_algebra.md Division)", "[layout][golden]") {
  // 1-D: A = (4,2,3):(2,1,8), B = 4:2
  CHECK(Str(Complement(L("4:2"), 24)) == "(2,3):(1,8)");
  CHECK(Str(LogicalDivide(L("(4,2,3):(2,1,8)"), L("4:2"))) == "((2,2),(2,3)):((4,1),(2,8))");
  // 2-D: A = (9,(4,8)):(59,(13,1)), B = <3:3, (2,4):(1,8)>
  Layout a = L("(9,(4,8)):(59,(13,1))");
  Tiler b = std::vector<Layout>{L("3:3"), L("(2,4):(1,8)")};
  auto d = LogicalDivide(a, b);
  REQUIRE(d.ok());
  // "the first mode of each mode of the result is the sublayout (3,(2,4)):(177,(13,2))"
  CHECK(ToString(d->Mode(0).Mode(0)) == "3:177");
  CHECK(ToString(d->Mode(1).Mode(0)) == "(2,4):(13,2)");
  auto z = ZippedDivide(a, b);
  REQUIRE(z.ok());
  // ((TileM,TileN), (RestM,RestN)) with shape ((3,8), (3,4))
  CHECK(Product(z->shape()[0][0]) == 3);
  CHECK(Product(z->shape()[0][1]) == 8);
  CHECK(Product(z->shape()[1][0]) == 3);
  CHECK(Product(z->shape()[1][1]) == 4);
  // layout<0>(zipped_divide(a, b)) == composition(a, b)
  auto c = Composition(a, b);
  REQUIRE(c.ok());
  CHECK(z->Mode(0) == *c);
  CHECK(ToString(*c) == "(3,(2,4)):(177,(13,2))");
  auto t = TiledDivide(a, b);
  REQUIRE(t.ok());
  CHECK(t->rank() == 3);  // ((TileM,TileN), RestM, RestN)
}

TEST_CASE("golden: products (02_layout_algebra.md Product)", "[layout][golden]") {
  // 1-D: A = (2,2):(4,1), B = 6:1
  CHECK(Str(Complement(L("(2,2):(4,1)"), 24)) == "(2,3):(2,8)");
  CHECK(Str(LogicalProduct(L("(2,2):(4,1)"), L("6:1"))) == "((2,2),(2,3)):((4,1),(2,8))");
  // "the result is identical to the result of the 1-D Logical Divide example"
  CHECK(Str(LogicalProduct(L("(2,2):(4,1)"), L("6:1"))) == Str(LogicalDivide(L("(4,2,3):(2,1,8)"), L("4:2"))));
  // B = (4,2):(2,1): 8 repetitions in a different order
  auto p = LogicalProduct(L("(2,2):(4,1)"), L("(4,2):(2,1)"));
  REQUIRE(p.ok());
  CHECK(p->size() == 32);
  // 2-D: a 2x5 row-major block tiled over a 3x4 column-major arrangement
  CHECK(Str(BlockedProduct(L("(2,5):(5,1)"), L("(3,4):(1,3)"))) == "((2,3),(5,4)):((5,10),(1,30))");
  CHECK(Str(RakedProduct(L("(2,5):(5,1)"), L("(3,4):(1,3)"))) == "((3,2),(4,5)):((10,5),(30,1))");
}

TEST_CASE("golden: evaluation (01_layout.md)", "[layout][golden]") {
  // (4,(2,2)):(2,(1,8)), the hierarchical example used throughout the CuTe docs
  Layout l = L("(4,(2,2)):(2,(1,8))");
  CHECK(l.size() == 16);
  CHECK(l.cosize() == 16);
  CHECK(l.rank() == 2);
  CHECK(l.depth() == 2);
  // 1-D index 5 is the natural coordinate (1,(1,0))
  CHECK(ToString(l.IndexToCoord(5)) == "(1,(1,0))");
  CHECK(l(5) == 2 + 1);
  CHECK(*l.Evaluate(IntTuple::Tuple({1, 1})) == l(5));  // (1,1) is the 2-D coordinate of index 5
  CHECK(*l.Evaluate(IntTuple::Tuple({3, IntTuple::Tuple({1, 1})})) == 6 + 1 + 8);
  // the column of offsets of (8,(2,2)):(2,(1,16))... 8x4 grid in 01_layout.md: (2,4):(1,2) is col-major
  Layout cm = L("(2,4):(1,2)");
  for (int i = 0; i < 8; ++i) CHECK(cm(i) == i);
  Layout rm = L("(2,4):(4,1)");
  CHECK(rm(1) == 4);
  CHECK(rm(2) == 1);
}

}  // namespace
}  // namespace weft::layout
