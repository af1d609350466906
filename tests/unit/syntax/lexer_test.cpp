#include <catch2/catch.hpp>

#include "syntax/lexer.h"

namespace weft::syntax {
namespace {

std::vector<TokenKind> Kinds(const std::string& text, Diagnostics* out = nullptr) {
  SourceManager sources;
  Diagnostics diagnostics;
  FileId file = sources.Add("t.weft", text);
  std::vector<TokenKind> kinds;
  for (const Token& token : Lex(sources, file, diagnostics)) kinds.push_back(token.kind);
  if (out) *out = diagnostics;
  return kinds;
}

using K = TokenKind;

TEST_CASE("keywords and dtypes and names and variables", "[lexer]") {
  CHECK(Kinds("def kernel let in fn x_1' f32 bf16 'a ?L _ cast") ==
        std::vector<K>{K::Def, K::Kernel, K::Let, K::In, K::Fn, K::Identifier, K::F32, K::BF16, K::TypeVariable,
                       K::LayoutVariable, K::Underscore, K::Cast, K::EndOfFile});
}

TEST_CASE("a bracket right after a token indexes and after a space opens a list", "[lexer]") {
  CHECK(Kinds("x[0]") == std::vector<K>{K::Identifier, K::IndexBracket, K::IntLiteral, K::RBracket, K::EndOfFile});
  CHECK(Kinds("f [0]") == std::vector<K>{K::Identifier, K::LBracket, K::IntLiteral, K::RBracket, K::EndOfFile});
  CHECK(Kinds("[1]")[0] == K::LBracket);           // start of file counts as space
  CHECK(Kinds("f {- c -}[1]")[1] == K::LBracket);  // so does a comment
  CHECK(Kinds("f\n[1]")[1] == K::LBracket);
}

TEST_CASE("numbers", "[lexer]") {
  CHECK(Kinds("42 1.0 2.5e-3 1e5 7E+2") == std::vector<K>{K::IntLiteral, K::FloatLiteral, K::FloatLiteral,
                                                          K::FloatLiteral, K::FloatLiteral, K::EndOfFile});
  // `1..` is not a float: the dots are a shape-variable marker.
  CHECK(Kinds("1..s") == std::vector<K>{K::IntLiteral, K::DotDot, K::Identifier, K::EndOfFile});
  Diagnostics diagnostics;
  CHECK(Kinds("1e 3x", &diagnostics) == std::vector<K>{K::Error, K::Error, K::EndOfFile});
  CHECK(diagnostics.error_count() == 2);
}

TEST_CASE("operators take the longest match", "[lexer]") {
  CHECK(Kinds("-> |> || && == != <= >= < > = @ ..") ==
        std::vector<K>{K::Arrow, K::PipeRight, K::OrOr, K::AndAnd, K::EqualEqual, K::NotEqual, K::LessEqual,
                       K::GreaterEqual, K::Less, K::Greater, K::Equal, K::At, K::DotDot, K::EndOfFile});
}

TEST_CASE("comments including nested block comments vanish", "[lexer]") {
  CHECK(Kinds("a -- b c\nd") == std::vector<K>{K::Identifier, K::Identifier, K::EndOfFile});
  CHECK(Kinds("a {- x {- y -} z -} b") == std::vector<K>{K::Identifier, K::Identifier, K::EndOfFile});
  Diagnostics diagnostics;
  CHECK(Kinds("a {- x {- y -} z", &diagnostics) == std::vector<K>{K::Identifier, K::EndOfFile});
  REQUIRE(diagnostics.all().size() == 1);
  CHECK(diagnostics.all()[0].kind == DiagnosticKind::UnterminatedComment);
  CHECK(diagnostics.all()[0].span.begin == 2);
}

TEST_CASE("strings and their errors", "[lexer]") {
  CHECK(Kinds(R"("a \"b\" \\ \n")") == std::vector<K>{K::StringLiteral, K::EndOfFile});
  Diagnostics diagnostics;
  Kinds("\"abc\nx", &diagnostics);
  REQUIRE(diagnostics.all().size() == 1);
  CHECK(diagnostics.all()[0].kind == DiagnosticKind::UnterminatedString);
  Kinds(R"("a\q")", &diagnostics);
  REQUIRE(diagnostics.all().size() == 1);
  CHECK(diagnostics.all()[0].kind == DiagnosticKind::UnknownEscape);
}

TEST_CASE("bad characters and bytes are reported once each and lexing goes on", "[lexer]") {
  Diagnostics diagnostics;
  CHECK(Kinds("a $ \xFF b \xE2\x82\xAC", &diagnostics) ==
        std::vector<K>{K::Identifier, K::Error, K::Error, K::Identifier, K::Error, K::EndOfFile});
  REQUIRE(diagnostics.all().size() == 3);
  CHECK(diagnostics.all()[0].message == "unexpected character `$`");
  CHECK(diagnostics.all()[1].message == "invalid UTF-8 byte `0xFF`");
  CHECK(diagnostics.all()[2].message == "unexpected character `\xE2\x82\xAC`");
}

TEST_CASE("end of file sits right after the last token", "[lexer]") {
  SourceManager sources;
  Diagnostics diagnostics;
  FileId file = sources.Add("t.weft", "a b  \n\n-- trailing comment\n");
  std::vector<Token> tokens = Lex(sources, file, diagnostics);
  CHECK(tokens.back().kind == K::EndOfFile);
  CHECK(tokens.back().span.begin == 3);
}

}  // namespace
}  // namespace weft::syntax
