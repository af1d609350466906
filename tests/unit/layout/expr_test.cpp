// Layout expressions as users type them (`weft layout EXPR`): results in CuTe notation, and errors
// with clear messages for malformed expressions and failed preconditions.
#include <catch2/catch.hpp>

#include "layout/expr.h"
#include "layout/tv_layout.h"

namespace weft::layout {
namespace {

std::string Eval(const std::string& text) {
  auto v = EvaluateExpression(text);
  return v.ok() ? ToString(*v) : "error: " + v.error();
}

TEST_CASE("expressions evaluate to CuTe notation", "[layout][expr]") {
  CHECK(Eval("(4,(2,2)):(2,(1,8))") == "(4,(2,2)):(2,(1,8))");
  CHECK(Eval("(_4,_2):(_1,_4)") == "(4,2):(1,4)");  // CuTe's static-integer spelling is accepted
  CHECK(Eval("composition((4,2):(2,1), (2,2):(1,2))") == "(2,2):(2,4)");
  CHECK(Eval("composition((6,2):(8,2), (4,3):(3,1))") == "((2,2),3):((24,2),8)");
  CHECK(Eval("complement(4:2, 24)") == "(2,3):(1,8)");
  CHECK(Eval("complement((2,2):(1,6))") == "3:2");
  CHECK(Eval("logical_divide((4,2,3):(2,1,8), 4:2)") == "((2,2),(2,3)):((4,1),(2,8))");
  CHECK(Eval("logical_divide((16,8):(8,1), (4,2):(1,4))") == "((4,2),(2,8)):((8,32),(64,1))");
  CHECK(Eval("zipped_divide((9,(4,8)):(59,(13,1)), <3:3, (2,4):(1,8)>)") ==
        Eval("zipped_divide((9,(4,8)):(59,(13,1)), (3:3, (2,4):(1,8)))"));
  CHECK(Eval("shape(zipped_divide((9,(4,8)):(59,(13,1)), <3:3, (2,4):(1,8)>))") == "((3,(2,4)),(3,(2,2)))");
  CHECK(Eval("rank(tiled_divide((9,(4,8)):(59,(13,1)), <3:3, (2,4):(1,8)>))") == "3");
  CHECK(Eval("composition((12,(4,8)):(59,(13,1)), (3,8))") == "(3,(4,2)):(59,(13,1))");
  CHECK(Eval("blocked_product((2,5):(5,1), (3,4):(1,3))") == "((2,3),(5,4)):((5,10),(1,30))");
  CHECK(Eval("raked_product((2,5):(5,1), (3,4):(1,3))") == "((3,2),(4,5)):((10,5),(30,1))");
  CHECK(Eval("logical_product((2,2):(4,1), 6:1)") == "((2,2),(2,3)):((4,1),(2,8))");
  CHECK(Eval("coalesce((2,(1,6)):(1,(6,2)))") == "12:1");
  CHECK(Eval("coalesce((2,(1,6)):(1,(6,2)), (1,1))") == "(2,6):(1,2)");
  CHECK(Eval("flatten((4,(2,2)):(2,(1,8)))") == "(4,2,2):(2,1,8)");
  CHECK(Eval("size((4,(2,2)):(2,(1,8)))") == "16");
  CHECK(Eval("cosize((4,2):(2,1))") == "8");
  CHECK(Eval("depth((4,(2,2)):(2,(1,8)))") == "2");
  CHECK(Eval("rank(8:1)") == "1");
  CHECK(Eval("right_inverse((4,2):(2,1))") == "(2,4):(4,1)");
  CHECK(Eval("left_inverse((4,2):(2,1))") == "(2,4):(4,1)");
  CHECK(Eval("make_layout((4,2))") == "(4,2):(1,4)");
  CHECK(Eval("make_layout(4:1, 2:4)") == "(4,2):(1,4)");
  CHECK(Eval("eval((4,(2,2)):(2,(1,8)), (3,(1,1)))") == "15");
  CHECK(Eval("eval((4,(2,2)):(2,(1,8)), 5)") == "3");
  CHECK(Eval("Sw<3,4,3>") == "Sw<3,4,3>");
  CHECK(Eval("composition(Sw<3,3,3>, (8,64):(64,1))") == "Sw<3,3,3> o 0 o (8,64):(64,1)");
  CHECK(Eval("composition(Sw<3,3,3> o 0 o (8,64):(64,1), (8,8):(1,8))") == "Sw<3,3,3> o 0 o (8,8):(64,1)");
  CHECK(Eval("eval(Sw<3,3,3> o 0 o (8,64):(64,1), (1,0))") == "72");
  CHECK(Eval("swizzle(2,3,3)") == "Sw<2,3,3>");
}

TEST_CASE("malformed expressions and failed preconditions are clear errors", "[layout][expr]") {
  CHECK(Eval("complement((2,2):(2,3), 24)") ==
        "error: complement of `(2,2):(2,3)` does not exist: stride 3 falls inside the span 4 of the smaller strides");
  CHECK(Eval("complement((2,2):(1,3), 24)") ==
        "error: complement of `(2,2):(1,3)` does not exist: stride 3 is not a multiple of 2, the span of the smaller "
        "strides");
  CHECK(Eval("composition((3,4):(1,5), 4:2)").find("error: cannot compose `(3,4):(1,5)` with `4:2`") == 0);
  CHECK(Eval("composition((4,2):(2,1)") ==
        "error: expected `)` or `,` in the arguments of `composition` at column 24 of "
        "`composition((4,2):(2,1)`");
  CHECK(Eval("(4,2):(1)") == "error: shape `(4,2)` and stride `(1)` are not congruent at column 10 of `(4,2):(1)`");
  CHECK(Eval("frobnicate(4:1)").find("error: unknown layout operation `frobnicate` (known: size,") == 0);
  CHECK(Eval("size(4:1, 2:1)") == "error: `size` takes 1 arguments, got 2");
  CHECK(Eval("complement(Sw<1,2,3>)").find("error: `complement` expects a layout as argument 1, not a swizzle") == 0);
  CHECK(Eval("Sw<3,4,2>") == "error: swizzle `Sw<3,4,2>` overlaps itself: |S| must be at least B");
  CHECK(Eval("(4,0):(1,1)").find("has an extent below 1") != std::string::npos);
  CHECK(Eval("").find("error: expected an expression") == 0);
  CHECK(Eval("4:1 junk").find("error: unexpected `j`") == 0);
  CHECK(Eval("()").find("error: empty tuple") == 0);
  CHECK(Eval("logical_divide((4,2):(1,4), <2:1, 2:1, 2:1>)").find("has only 2") != std::string::npos);
  CHECK(Eval("eval((4,2):(1,4), (1,1,1))").find("does not match shape") != std::string::npos);
  CHECK(Eval("99999999999999999999").find("too large") != std::string::npos);
}

TEST_CASE("table and grid formatters", "[layout][expr]") {
  auto l = ParseLayout("(2,3):(3,1)");
  REQUIRE(l.ok());
  CHECK(FormatLayoutTable(*l) ==
        "0  (0,0)  ->  0\n1  (1,0)  ->  3\n2  (0,1)  ->  1\n3  (1,1)  ->  4\n4  (0,2)  ->  2\n5  (1,2)  ->  5\n");
  CHECK(FormatLayoutGrid(*l) == "    0 1 2\n0 | 0 1 2\n1 | 3 4 5\n");
  CHECK(FormatLayoutGrid(Layout(4, 2)) == "    0 1 2 3\n0 | 0 2 4 6\n");
  CHECK(Operations().size() >= 20);
}

}  // namespace
}  // namespace weft::layout
