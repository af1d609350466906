// Tokens: the lexer's output and the grammar's input. Kinds are declared in token_kinds.def.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "base/dtype.h"
#include "base/source.h"

namespace weft::syntax {

enum class TokenKind : std::uint8_t {
#define WEFT_TOKEN(Name, Description) Name,
#include "syntax/token_kinds.def"
};

struct Token {
  TokenKind kind;
  Span span;
  std::string_view text;  // the token's source text (a view into the SourceBuffer)
};

// "`let`", "a name", "end of file": how a token kind reads in "expected ..." messages.
std::string_view Describe(TokenKind kind);
// How a found token reads in "..., found X" messages: "`def`", "name `foo`", "end of file".
std::string DescribeFound(const Token& token);
// The fixed spelling of a keyword or symbol kind; empty for kinds with variable text.
std::string_view Spelling(TokenKind kind);
bool IsDtype(TokenKind kind);
// The element type a dtype keyword names. @pre IsDtype(kind)
Dtype DtypeOf(TokenKind kind);

}  // namespace weft::syntax
