// Layout expressions as users type them (`weft layout EXPR`): parsed by syntax/ (X3), evaluated by
// layout::Evaluate. Results in CuTe notation that parses back to the same value, and errors with clear
// messages for malformed expressions (from the parser) and failed preconditions (from the algebra).
#include <catch2/catch.hpp>

#include "evaluate_text.h"
#include "layout/tv_layout.h"

namespace weft::layout {
namespace {

using testing::EvaluateText;
using testing::ParseLayoutText;

std::string Eval(const std::string& text) {
  auto v = EvaluateText(text);
  if (v.ok()) return ToString(*v);
  // Parse errors carry their id (`error[E0100]: ...`); evaluation errors are the algebra's message.
  return v.error().rfind("error[", 0) == 0 ? v.error() : "error: " + v.error();
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
  // Malformed text is the parser's: the id and message of the first diagnostic.
  CHECK(Eval("composition((4,2):(2,1)") == "error[E0100]: expected `)` to close this `(`, found end of file");
  CHECK(Eval("(4,2):(1)") == "error[E0107]: layout shape `(4,2)` and stride `(1)` have different structures");
  CHECK(Eval("frobnicate(4:1)").find("error: unknown layout operation `frobnicate` (known: size,") == 0);
  CHECK(Eval("size(4:1, 2:1)") == "error: `size` takes 1 arguments, got 2");
  CHECK(Eval("complement(Sw<1,2,3>)").find("error: `complement` expects a layout as argument 1, not a swizzle") == 0);
  CHECK(Eval("Sw<3,4,2>") == "error: swizzle `Sw<3,4,2>` overlaps itself: |S| must be at least B");
  CHECK(Eval("(4,0):(1,1)").find("has an extent below 1") != std::string::npos);
  CHECK(Eval("") == "error[E0100]: expected a layout, found end of file");
  CHECK(Eval("4:1 junk").find("error[E0109]: unexpected name `junk` after the end of the") == 0);
  CHECK(Eval("()") == "error[E0100]: expected a layout, found `)`");
  CHECK(Eval("logical_divide((4,2):(1,4), <2:1, 2:1, 2:1>)").find("has only 2") != std::string::npos);
  CHECK(Eval("eval((4,2):(1,4), (1,1,1))").find("does not match shape") != std::string::npos);
  CHECK(Eval("99999999999999999999") == "error[E0014]: integer literal `99999999999999999999` does not fit in 64 bits");
}

TEST_CASE("the evaluator's own rules: compositions, offsets, tilers, variables", "[layout][expr]") {
  // `A o B` is composition(A, B); an integer after a swizzle is CuTe's offset.
  CHECK(Eval("(4,2):(2,1) o (2,2):(1,2)") == "(2,2):(2,4)");
  CHECK(Eval("Sw<3,3,3> o (8,64):(64,1)") == "Sw<3,3,3> o 0 o (8,64):(64,1)");
  CHECK(Eval("Sw<3,3,3> o 0 o (8,64):(64,1) o (8,8):(1,8)") == "Sw<3,3,3> o 0 o (8,8):(64,1)");
  CHECK(Eval("Sw<1,0,1> o 2 o 8:1") == "Sw<1,0,1> o 2 o 8:1");
  CHECK(Eval("eval(Sw<1,0,1> o 2 o 8:1, 1)") == "2");                       // Sw<1,0,1>(2 + 1) = 3 ^ ((3 & 2) >> 1)
  CHECK(Eval("Sw<3,3,3> o 0 o (8,64)") == "Sw<3,3,3> o 0 o (8,64):(1,8)");  // a shape is its compact layout
  CHECK(Eval("Sw<3,3,3> o 0 o <8:1>") == "error: `Sw<3,3,3> o 0 o L` swizzles a layout L, not a tiler `<8:1>`");
  // CuTe prints static integers with `_`, including the offset: its output pastes in.
  CHECK(Eval("Sw<3,4,3> o _0 o (_8,_64):(_64,_1)") == "Sw<3,4,3> o 0 o (8,64):(64,1)");
  // Negative integers: strides and swizzle shifts.
  CHECK(Eval("(4,2):(-1,4)") == "(4,2):(-1,4)");
  CHECK(Eval("swizzle(1,4,-3)") == "Sw<1,4,-3>");
  CHECK(Eval("Sw<1,4,-3>") == "Sw<1,4,-3>");
  CHECK(Eval("Sw<100,4,3>") == "error: swizzle `Sw<100,4,3>` reaches past bit 40");
  // Tilers: one layout per mode, a shape for its compact layout; they do not nest.
  CHECK(Eval("<3:3, (2,4)>") == "<3:3,(2,4):(1,2)>");
  CHECK(Eval("((4:1, 2:1), 3)") ==
        "error: tilers nest one level only: a mode of a tiler is a layout, not the tiler `<4:1,2:1>`");
  CHECK(Eval("<Sw<1,2,3>, 4:1>") == "error: a mode of a tiler is a layout, not a swizzle `Sw<1,2,3>`");
  CHECK(Eval("composition(?L, 4:1)") ==
        "error: `?L` is a layout variable: only layout synthesis gives it a value, so it cannot be evaluated here");
}

TEST_CASE("a failure points at the node that failed", "[layout][expr]") {
  SourceManager sources;
  Diagnostics diagnostics;
  std::string text = "composition((8,8):(8,1), complement((2,2):(2,3), 24))";
  FileId file = sources.Add("<layout>", text);
  syntax::LayoutParse parsed = syntax::ParseLayoutExpression(sources, file, diagnostics);
  REQUIRE(parsed.layout.valid());
  CHECK_FALSE(Evaluate(parsed.ast, parsed.layout, diagnostics).has_value());
  REQUIRE(diagnostics.all().size() == 1);
  const Diagnostic& error = diagnostics.all()[0];
  CHECK(Info(error.kind).id == "E0300");
  CHECK(sources.Text(error.span) == "complement((2,2):(2,3), 24)");
  // Inside a tiler, the mode that is not a layout.
  file = sources.Add("<layout>", "logical_divide(8:1, <2:1, Sw<1,2,3>>)");
  parsed = syntax::ParseLayoutExpression(sources, file, diagnostics);
  REQUIRE(parsed.layout.valid());
  Span at;
  CHECK_FALSE(Evaluate(parsed.ast, parsed.layout, &at).ok());
  CHECK(sources.Text(at) == "Sw<1,2,3>");
}

TEST_CASE("printed values parse back to themselves", "[layout][expr]") {
  for (const char* text : {
           "(4,(2,2)):(2,(1,8))",
           "logical_divide((16,8):(8,1), (4,2):(1,4))",
           "zipped_divide((9,(4,8)):(59,(13,1)), <3:3, (2,4):(1,8)>)",
           "shape(zipped_divide((9,(4,8)):(59,(13,1)), <3:3, (2,4):(1,8)>))",
           "composition(Sw<3,3,3>, (8,64):(64,1))",
           "composition(Sw<3,3,3> o 0 o (8,64):(64,1), (8,8):(1,8))",
           "Sw<1,0,1> o 2 o 8:1",
           "swizzle(1,4,-3)",
           "<3:3, (2,4)>",
           "(4,2):(-1,4)",
           "size((4,(2,2)):(2,(1,8)))",
           "complement((2,2):(1,6))",
       }) {
    INFO(text);
    std::string once = Eval(text);
    REQUIRE(once.rfind("error", 0) != 0);
    CHECK(Eval(once) == once);
  }
}

TEST_CASE("table and grid formatters", "[layout][expr]") {
  auto l = ParseLayoutText("(2,3):(3,1)");
  REQUIRE(l.ok());
  CHECK(FormatLayoutTable(*l) ==
        "0  (0,0)  ->  0\n1  (1,0)  ->  3\n2  (0,1)  ->  1\n3  (1,1)  ->  4\n4  (0,2)  ->  2\n5  (1,2)  ->  5\n");
  CHECK(FormatLayoutGrid(*l) == "    0 1 2\n0 | 0 1 2\n1 | 3 4 5\n");
  CHECK(FormatLayoutGrid(Layout(4, 2)) == "    0 1 2 3\n0 | 0 2 4 6\n");
  // Sw<1,0,1> swaps the offsets 2,3 with 3,2 in every block of four: (x ^ ((x & 2) >> 1)).
  CHECK(FormatLayoutTable(Compose(Swizzle(1, 0, 1), Layout(4, 1))) ==
        "0  0  ->  0\n1  1  ->  1\n2  2  ->  3\n3  3  ->  2\n");
  CHECK(Operations().size() >= 20);
}

}  // namespace
}  // namespace weft::layout
