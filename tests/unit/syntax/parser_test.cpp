#include <catch2/catch.hpp>

#include "syntax/parse_helpers.h"

namespace weft::syntax {
namespace {

using testing::DumpExpr;
using testing::ParseText;

TEST_CASE("binary operators follow language.md's precedence loosest first", "[parser]") {
  CHECK(DumpExpr("a |> f || b") == "(|> (var a) (|| (var f) (var b)))");
  CHECK(DumpExpr("a || b && c") == "(|| (var a) (&& (var b) (var c)))");
  CHECK(DumpExpr("a && b == c") == "(&& (var a) (== (var b) (var c)))");
  CHECK(DumpExpr("a < b + c") == "(< (var a) (+ (var b) (var c)))");
  CHECK(DumpExpr("a + b * c") == "(+ (var a) (* (var b) (var c)))");
  CHECK(DumpExpr("a * b @ c") == "(* (var a) (@ (var b) (var c)))");
  CHECK(DumpExpr("-a @ b") == "(@ (negate (var a)) (var b))");
  CHECK(DumpExpr("-f x") == "(negate (apply (var f) (var x)))");
  CHECK(DumpExpr("f x[0]") == "(apply (var f) (index (var x) (at (int 0))))");
}

TEST_CASE("binary operators associate to the left", "[parser]") {
  CHECK(DumpExpr("a - b - c") == "(- (- (var a) (var b)) (var c))");
  CHECK(DumpExpr("a / b * c % d") == "(% (* (/ (var a) (var b)) (var c)) (var d))");
  CHECK(DumpExpr("x |> f |> g") == "(|> (|> (var x) (var f)) (var g))");
  CHECK(DumpExpr("a @ b @ c") == "(@ (@ (var a) (var b)) (var c))");
}

TEST_CASE("open constructs extend as far right as they can", "[parser]") {
  CHECK(DumpExpr("let x = 1 in x + 2") == "(let (pname x) (int 1) (+ (var x) (int 2)))");
  CHECK(DumpExpr("1 + let x = 2 in x * 3") == "(+ (int 1) (let (pname x) (int 2) (* (var x) (int 3))))");
  CHECK(DumpExpr("x |> fn y -> y + 1") == "(|> (var x) (fn (pname y) (+ (var y) (int 1))))");
  CHECK(DumpExpr("if a then b else c + d") == "(if (var a) (var b) (+ (var c) (var d)))");
}

TEST_CASE("the whitespace rule for an opening bracket", "[parser]") {
  CHECK(DumpExpr("zeros [m, 2 * n]") == "(apply (var zeros) (list (var m) (* (int 2) (var n))))");
  CHECK(DumpExpr("x[0:4]") == "(index (var x) (slice (int 0) (int 4)))");
  CHECK(DumpExpr("x [0]") == "(apply (var x) (list (int 0)))");
  CHECK(DumpExpr("x[i, :, a:, :b]") == "(index (var x) (at (var i)) (all) (slice (var a) _) (slice _ (var b)))");
  CHECK(DumpExpr("[[1, 2],[3]]") == "(list (list (int 1) (int 2)) (list (int 3)))");
}

TEST_CASE("atoms are tuples and unit and sections and ascriptions and casts and literals", "[parser]") {
  CHECK(DumpExpr("(a, b, c)") == "(tuple (var a) (var b) (var c))");
  CHECK(DumpExpr("()") == "(tuple)");
  CHECK(DumpExpr("((a))") == "(var a)");
  CHECK(DumpExpr("(+)") == "(operator +)");
  CHECK(DumpExpr("(-)") == "(operator -)");
  CHECK(DumpExpr("(-x)") == "(negate (var x))");
  CHECK(DumpExpr("(x : f32[n])") == "(ascribe (var x) (tensor f32 (shape n)))");
  CHECK(DumpExpr("cast bf16 x @ y") == "(@ (cast bf16 (var x)) (var y))");
  CHECK(DumpExpr("true && false") == "(&& (bool true) (bool false))");
  CHECK(DumpExpr("2.5e-3") == "(float 2.5e-3)");
}

TEST_CASE("loops and pipelines", "[parser]") {
  CHECK(DumpExpr("loop acc = 0 for i < n do acc + i") == "(loop (pname acc) (int 0) i (var n) (+ (var acc) (var i)))");
  CHECK(DumpExpr("pipeline k < n / 64 with (a, b) = (x, y) do f a b") ==
        "(pipeline k (/ (var n) (int 64)) (ptuple (pname a) (pname b)) (tuple (var x) (var y)) "
        "(apply (var f) (var a) (var b)))");
}

TEST_CASE("types and shapes and dims", "[parser]") {
  auto parsed = ParseText("def f (x: 't[..b, n + 1, 2 * (m - 1)]) (g: 'a -> 'a -> ('a, string)) : 't[] = x");
  CHECK(parsed.Errors().empty());
  CHECK(parsed.dump ==
        "(def f (sizes) (params (ptyped (pname x) (tensor 't (shape (spread b) (+ n 1) (* 2 (- m 1))))) "
        "(ptyped (pname g) (-> (tvar 'a) (-> (tvar 'a) (ttuple (tvar 'a) (string-type)))))) (tensor 't (shape)) "
        "(where) (var x))\n");
}

TEST_CASE("kernel-tier types carry spaces and layouts", "[parser]") {
  auto parsed = ParseText(
      "def f (a: f32[128, 64] @shared swizzle<3,4,3>) (b: bf16[8] @reg ?L) (c: f32[4] @shared (4,(2,2)):(2,(1,8))) = "
      "a");
  CHECK(parsed.Errors().empty());
  CHECK(parsed.dump ==
        "(def f (sizes) (params (ptyped (pname a) (tensor f32 (shape 128 64) (space shared) swizzle<3,4,3>)) "
        "(ptyped (pname b) (tensor bf16 (shape 8) (space reg) ?L)) "
        "(ptyped (pname c) (tensor f32 (shape 4) (space shared) (4,(2,2)):(2,(1,8))))) (no-type) (where) (var a))\n");
}

TEST_CASE("declarations with binders and where clauses and kernels and imports", "[parser]") {
  auto parsed = ParseText(
      "import nn\n"
      "import \"lib/x.weft\"\n"
      "def g [n] (x: f32[n, k]) where k % 64 == 0, 't : num = x\n"
      "kernel k (a: f32[m]) (out c: f32[m]) where m % 128 == 0 grid (m / 128) threads 128 = store c a\n");
  CHECK(parsed.Errors().empty());
  CHECK(parsed.dump ==
        "(import module nn)\n"
        "(import path lib/x.weft)\n"
        "(def g (sizes n) (params (ptyped (pname x) (tensor f32 (shape n k)))) (no-type) "
        "(where (== (% (var k) (int 64)) (int 0)) (class 't num)) (var x))\n"
        "(kernel k (params (ptyped (pname a) (tensor f32 (shape m))) (out (ptyped (pname c) (tensor f32 (shape m))))) "
        "(where (== (% (var m) (int 128)) (int 0))) (grid (/ (var m) (int 128))) (threads (int 128)) "
        "(apply (var store) (var c) (var a)))\n");
}

TEST_CASE("after an error parsing resumes at the next declaration", "[parser]") {
  auto parsed = ParseText(
      "def a = (1 +\n"
      "def b = 2\n"
      "def c = let x = 1\n"
      "def d = x y\n"
      "def e = ]\n");
  CHECK(parsed.diagnostics.error_count() == 3);
  CHECK(parsed.dump ==
        "(def b (sizes) (params) (no-type) (where) (int 2))\n"
        "(def d (sizes) (params) (no-type) (where) (apply (var x) (var y)))\n");
}

std::string Nested(int depth, const std::string& open, const std::string& core, const std::string& close) {
  std::string text;
  for (int i = 0; i < depth; ++i) text += open;
  text += core;
  for (int i = 0; i < depth; ++i) text += close;
  return text;
}

TEST_CASE("deep nesting parses up to the limit and is refused beyond it", "[parser]") {
  // 200 levels of every recursive form parse in every preset.
  CHECK(ParseText("def f = " + Nested(200, "(", "x", ")")).Errors().empty());
  CHECK(ParseText("def f = " + Nested(200, "[", "x", "]")).Errors().empty());
  CHECK(ParseText("def f = " + Nested(200, "let x = 1 in ", "x", "")).Errors().empty());
  CHECK(ParseText("def f = " + Nested(200, "- ", "x", "")).Errors().empty());
  CHECK(ParseText("def f = " + Nested(200, "if a then b else ", "x", "")).Errors().empty());
  CHECK(ParseText("def f (x: f32[" + Nested(200, "(", "n", ")") + "]) = x").Errors().empty());
  CHECK(ParseText("def f (x: " + Nested(200, "(", "f32", ")") + ") = x").Errors().empty());
  CHECK(ParseText("def f " + Nested(200, "(", "x", ")") + " = x").Errors().empty());
  CHECK(ParseText("def f (x: f32 @shared " + Nested(200, "(", "1", ")") + ":" + Nested(200, "(", "1", ")") + ") = x")
            .Errors()
            .empty());
  CHECK(ParseText("def f = " + Nested(kMaxNesting - 2, "(", "x", ")")).Errors().empty());

  // Far deeper input gets one clear error, not a stack overflow.
  for (const auto& text : {"def f = " + Nested(100000, "(", "x", ")"), "def f = " + Nested(100000, "- ", "x", ""),
                           "def f = " + Nested(100000, "let x = 1 in ", "x", ""),
                           "def f (x: f32[" + Nested(100000, "(", "n", ")") + "]) = x"}) {
    auto parsed = ParseText(text);
    REQUIRE(parsed.diagnostics.all().size() == 1);
    CHECK(parsed.diagnostics.all()[0].kind == DiagnosticKind::NestingTooDeep);
  }
}

TEST_CASE("a layout expression parses on its own", "[parser]") {
  SourceManager sources;
  Diagnostics diagnostics;
  FileId file = sources.Add("<layout>", "logical_divide((16,8):(8,1), (4,2):(1,4))");
  LayoutParse result = ParseLayoutExpression(sources, file, diagnostics);
  CHECK_FALSE(diagnostics.has_errors());
  REQUIRE(result.layout.valid());
  CHECK(PrintLayout(result.ast, result.layout) == "logical_divide((16,8):(8,1), (4,2):(1,4))");

  FileId bad = sources.Add("<layout>", "(4,2):(1) x");
  result = ParseLayoutExpression(sources, bad, diagnostics);
  CHECK_FALSE(result.layout.valid());
  CHECK(diagnostics.error_count() == 2);  // structure mismatch, then trailing input
}

// A layout expression on its own: its printed form, or its rendered errors.
std::string LayoutText(const std::string& text) {
  SourceManager sources;
  Diagnostics diagnostics;
  FileId file = sources.Add("<layout>", text);
  LayoutParse result = ParseLayoutExpression(sources, file, diagnostics);
  if (diagnostics.has_errors()) {
    std::string out;
    for (const Diagnostic& d : diagnostics.all()) out += Render(sources, d, false);
    return out;
  }
  return PrintLayout(result.ast, result.layout);
}

TEST_CASE("layouts parse in CuTe's printed notation", "[parser]") {
  // Compositions `A o B o C`, as CuTe prints a swizzled layout: swizzle, offset, layout.
  CHECK(LayoutText("Sw<3,3,3> o 0 o (8,64):(64,1)") == "swizzle<3,3,3> o 0 o (8,64):(64,1)");
  CHECK(LayoutText("composition(Sw<3,3,3> o 0 o (8,64):(64,1), (8,8):(1,8))") ==
        "composition(swizzle<3,3,3> o 0 o (8,64):(64,1), (8,8):(1,8))");
  CHECK(LayoutText("(4,2):(2,1)o(2,2):(1,2)") == "(4,2):(2,1) o (2,2):(1,2)");
  CHECK(LayoutText("<3:3 o 1:1, ?L o 4>") == "<3:3 o 1:1, ?L o 4>");
  CHECK(LayoutText("o(4:1)") == "o(4:1)");  // `o` is a word only between two layouts
  // CuTe's static integers `_4` (the lexer reads them as names) and negative integers.
  CHECK(LayoutText("Sw<3,4,3> o _0 o (_8,_64):(_64,_1)") == "swizzle<3,4,3> o 0 o (8,64):(64,1)");
  CHECK(LayoutText("_4") == "4");
  CHECK(LayoutText("(4,2):(-1,4)") == "(4,2):(-1,4)");
  CHECK(LayoutText("Sw<1,4,-3>") == "swizzle<1,4,-3>");
  CHECK(LayoutText("-3") == "-3");
  // Tilers, in both spellings.
  CHECK(LayoutText("<3:3, (2,4):(1,8)>") == "<3:3, (2,4):(1,8)>");
  CHECK(LayoutText("(4:1, 2)") == "<4:1, 2>");
  CHECK(LayoutText("<4:1,2:1>") == "<4:1, 2:1>");
}

TEST_CASE("the layout tree: a composition is one node with its parts in order", "[parser]") {
  SourceManager sources;
  Diagnostics diagnostics;
  FileId file = sources.Add("<layout>", "Sw<3,3,3> o 0 o (8,64):(64,1)");
  LayoutParse result = ParseLayoutExpression(sources, file, diagnostics);
  REQUIRE(result.layout.valid());
  const auto* compose = std::get_if<layout::Compose>(&result.ast.Get(result.layout).node);
  REQUIRE(compose != nullptr);
  REQUIRE(compose->parts.size() == 3);
  CHECK(std::holds_alternative<layout::Swizzle>(result.ast.Get(compose->parts[0]).node));
  const auto* offset = std::get_if<layout::IntTuple>(&result.ast.Get(compose->parts[1]).node);
  REQUIRE(offset != nullptr);
  CHECK((offset->tuple.leaf && offset->tuple.value == 0));
  CHECK(std::holds_alternative<layout::Literal>(result.ast.Get(compose->parts[2]).node));
  CHECK(sources.Text(result.ast.Get(result.layout).span) == "Sw<3,3,3> o 0 o (8,64):(64,1)");
}

TEST_CASE("malformed layouts are parse errors", "[parser]") {
  CHECK(LayoutText("Sw<3,3,3> o") ==
        "<layout>:1:12: error[E0100]: expected a layout, found end of file\n"
        " 1 | Sw<3,3,3> o\n"
        "   |            ^\n");
  CHECK(LayoutText("(4,2):(2,-)") ==
        "<layout>:1:10: error[E0100]: expected an integer or a tuple of integers, found `-`\n"
        " 1 | (4,2):(2,-)\n"
        "   |          ^\n");
  CHECK(LayoutText("Sw<3,_x,3>") ==
        "<layout>:1:6: error[E0100]: expected an integer, found name `_x`\n"
        " 1 | Sw<3,_x,3>\n"
        "   |      ^~\n");
  CHECK(LayoutText("(8,64):(64,1) (8,8)").find("error[E0109]: unexpected `(` after the end of the") !=
        std::string::npos);
}

}  // namespace
}  // namespace weft::syntax
