#include "syntax/token.h"

#include <string>

namespace weft::syntax {

std::string_view Describe(TokenKind kind) {
  switch (kind) {
#define WEFT_TOKEN(Name, Description) \
  case TokenKind::Name:               \
    return Description;
#include "syntax/token_kinds.def"
  }
  return "a token";
}

std::string_view Spelling(TokenKind kind) {
  switch (kind) {
#define WEFT_TOKEN(Name, Description) \
  case TokenKind::Name:               \
    return "";
#define WEFT_KEYWORD(Name, Text) \
  case TokenKind::Name:          \
    return Text;
#define WEFT_SYMBOL(Name, Text) \
  case TokenKind::Name:         \
    return Text;
#include "syntax/token_kinds.def"
  }
  return "";
}

bool IsDtype(TokenKind kind) {
  switch (kind) {
#define WEFT_TOKEN(Name, Description) \
  case TokenKind::Name:               \
    return false;
#define WEFT_DTYPE_KEYWORD(Name, Text) \
  case TokenKind::Name:                \
    return true;
#include "syntax/token_kinds.def"
  }
  return false;
}

Dtype DtypeOf(TokenKind kind) {
  switch (kind) {
#define WEFT_TOKEN(Name, Description) \
  case TokenKind::Name:               \
    break;
#define WEFT_DTYPE_KEYWORD(Name, Text) \
  case TokenKind::Name:                \
    return Dtype::Name;
#include "syntax/token_kinds.def"
  }
  return Dtype::Bool;
}

std::string DescribeFound(const Token& token) {
  switch (token.kind) {
    case TokenKind::Identifier:
      return "name `" + std::string(token.text) + "`";
    case TokenKind::TypeVariable:
      return "type variable `" + std::string(token.text) + "`";
    case TokenKind::LayoutVariable:
      return "layout variable `" + std::string(token.text) + "`";
    case TokenKind::IntLiteral:
      return "integer `" + std::string(token.text) + "`";
    case TokenKind::FloatLiteral:
      return "float `" + std::string(token.text) + "`";
    case TokenKind::StringLiteral:
      return "string " + std::string(token.text);
    case TokenKind::EndOfFile:
      return "end of file";
    case TokenKind::Error:
      return "`" + std::string(token.text) + "`";
    default:
      return "`" + std::string(Spelling(token.kind)) + "`";
  }
}

}  // namespace weft::syntax
