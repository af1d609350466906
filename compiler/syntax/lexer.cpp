#include "syntax/lexer.h"

#include <llvm/ADT/StringMap.h>

#include <cstdio>
#include <string>

namespace weft::syntax {
namespace {

const llvm::StringMap<TokenKind>& Keywords() {
  static const llvm::StringMap<TokenKind> keywords = [] {
    llvm::StringMap<TokenKind> map;
#define WEFT_TOKEN(Name, Description)
#define WEFT_KEYWORD(Name, Text) map[Text] = TokenKind::Name;
#define WEFT_SYMBOL(Name, Text)
#include "syntax/token_kinds.def"
    return map;
  }();
  return keywords;
}

bool IsIdentStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool IsDigit(char c) {
  return c >= '0' && c <= '9';
}
bool IsIdentContinue(char c) {
  return IsIdentStart(c) || IsDigit(c) || c == '\'';
}

class Lexer {
 public:
  Lexer(const SourceManager& sources, FileId file, Diagnostics& diagnostics)
      : file_(file), text_(sources.Get(file).text()), diagnostics_(diagnostics) {}

  std::vector<Token> Run() {
    while (true) {
      bool spaced = SkipTrivia();
      if (pos_ >= text_.size()) break;
      LexOne(spaced);
    }
    // End of file sits right after the last token, so "found end of file" points where the
    // program stops rather than at an empty line below it.
    auto eof = tokens_.empty() ? 0u : tokens_.back().span.end;
    tokens_.push_back({TokenKind::EndOfFile, Span{file_, eof, eof}, {}});
    return std::move(tokens_);
  }

 private:
  Span SpanFrom(std::uint32_t begin) const { return {file_, begin, static_cast<std::uint32_t>(pos_)}; }
  char Peek(std::size_t ahead = 0) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0'; }

  void Push(TokenKind kind, std::uint32_t begin) {
    Span span = SpanFrom(begin);
    tokens_.push_back({kind, span, text_.substr(begin, span.end - begin)});
  }

  // Skips whitespace and comments; returns whether anything was skipped (or this is the start).
  bool SkipTrivia() {
    std::size_t start = pos_;
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++pos_;
      } else if (c == '-' && Peek(1) == '-') {
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
      } else if (c == '{' && Peek(1) == '-') {
        SkipBlockComment();
      } else {
        break;
      }
    }
    return pos_ != start || tokens_.empty();
  }

  void SkipBlockComment() {
    auto open = static_cast<std::uint32_t>(pos_);
    int depth = 0;
    while (pos_ < text_.size()) {
      if (text_[pos_] == '{' && Peek(1) == '-') {
        ++depth;
        pos_ += 2;
      } else if (text_[pos_] == '-' && Peek(1) == '}') {
        pos_ += 2;
        if (--depth == 0) return;
      } else {
        ++pos_;
      }
    }
    diagnostics_.Emit(DiagnosticKind::UnterminatedComment, Span{file_, open, open + 2});
  }

  void LexOne(bool spaced) {
    auto begin = static_cast<std::uint32_t>(pos_);
    char c = text_[pos_];
    if (IsIdentStart(c)) {
      while (pos_ < text_.size() && IsIdentContinue(text_[pos_])) ++pos_;
      std::string_view word = text_.substr(begin, pos_ - begin);
      if (word == "_") return Push(TokenKind::Underscore, begin);
      auto keyword = Keywords().find(word);
      return Push(keyword != Keywords().end() ? keyword->second : TokenKind::Identifier, begin);
    }
    if (IsDigit(c)) return LexNumber(begin);
    if (c == '"') return LexString(begin);
    if (c == '\'' || c == '?') {
      ++pos_;
      if (!IsIdentStart(Peek())) {
        diagnostics_.Emit(c == '\'' ? DiagnosticKind::LoneQuote : DiagnosticKind::LoneQuestion, SpanFrom(begin));
        return Push(TokenKind::Error, begin);
      }
      while (pos_ < text_.size() && IsIdentContinue(text_[pos_])) ++pos_;
      return Push(c == '\'' ? TokenKind::TypeVariable : TokenKind::LayoutVariable, begin);
    }
    if (c == '[') {
      ++pos_;
      return Push(spaced ? TokenKind::LBracket : TokenKind::IndexBracket, begin);
    }
    struct Symbol {
      std::string_view text;
      TokenKind kind;
    };
    static constexpr Symbol kSymbols[] = {
        {"->", TokenKind::Arrow},      {"|>", TokenKind::PipeRight},
        {"||", TokenKind::OrOr},       {"&&", TokenKind::AndAnd},
        {"==", TokenKind::EqualEqual}, {"!=", TokenKind::NotEqual},
        {"<=", TokenKind::LessEqual},  {">=", TokenKind::GreaterEqual},
        {"..", TokenKind::DotDot},     {"(", TokenKind::LParen},
        {")", TokenKind::RParen},      {"]", TokenKind::RBracket},
        {",", TokenKind::Comma},       {":", TokenKind::Colon},
        {"=", TokenKind::Equal},       {"<", TokenKind::Less},
        {">", TokenKind::Greater},     {"+", TokenKind::Plus},
        {"-", TokenKind::Minus},       {"*", TokenKind::Star},
        {"/", TokenKind::Slash},       {"%", TokenKind::Percent},
        {"@", TokenKind::At},
    };
    for (const Symbol& symbol : kSymbols) {
      if (text_.substr(pos_, symbol.text.size()) == symbol.text) {
        pos_ += symbol.text.size();
        return Push(symbol.kind, begin);
      }
    }
    LexBadCharacter(begin);
  }

  void LexBadCharacter(std::uint32_t begin) {
    auto byte = static_cast<unsigned char>(text_[pos_]);
    // Decode one UTF-8 sequence so the message shows the character, not its bytes.
    std::size_t length = byte < 0x80             ? 1
                         : (byte & 0xE0) == 0xC0 ? 2
                         : (byte & 0xF0) == 0xE0 ? 3
                         : (byte & 0xF8) == 0xF0 ? 4
                                                 : 0;
    bool valid = length > 0 && pos_ + length <= text_.size();
    for (std::size_t i = 1; valid && i < length; ++i) {
      valid = (static_cast<unsigned char>(text_[pos_ + i]) & 0xC0) == 0x80;
    }
    if (!valid) {
      ++pos_;
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02X", byte);
      diagnostics_.Emit(DiagnosticKind::InvalidUtf8, SpanFrom(begin), hex);
      return Push(TokenKind::Error, begin);
    }
    pos_ += length;
    std::string shown;
    if (byte < 0x20 || byte == 0x7F) {
      char hex[16];
      std::snprintf(hex, sizeof hex, "U+%04X", byte);
      shown = hex;
    } else {
      shown = "`" + std::string(text_.substr(begin, length)) + "`";
      if (shown == "`!`") shown += " (`!=` is not-equal; there is no `!`)";
      if (shown == "`&`") shown += " (logical and is `&&`)";
      if (shown == "`|`") shown += " (logical or is `||`, the pipe is `|>`)";
      if (shown == "`.`") shown += " (shape variables are written `..s`)";
    }
    diagnostics_.Emit(DiagnosticKind::UnexpectedCharacter, SpanFrom(begin), shown);
    Push(TokenKind::Error, begin);
  }

  void LexNumber(std::uint32_t begin) {
    while (IsDigit(Peek())) ++pos_;
    bool is_float = false;
    if (Peek() == '.' && IsDigit(Peek(1))) {
      is_float = true;
      ++pos_;
      while (IsDigit(Peek())) ++pos_;
    }
    if (Peek() == '.' && Peek(1) != '.') {
      // `1.` or `1.5.2`: not a number weft reads (`1..s` is an integer and a shape variable).
      while (IsDigit(Peek()) || (Peek() == '.' && Peek(1) != '.')) ++pos_;
      diagnostics_.Emit(DiagnosticKind::MalformedNumber, SpanFrom(begin), text_.substr(begin, pos_ - begin),
                        is_float ? "a number has at most one `.`" : "a float needs digits after the `.`, as in `1.0`");
      return Push(TokenKind::Error, begin);
    }
    if (Peek() == 'e' || Peek() == 'E') {
      ++pos_;
      if (Peek() == '+' || Peek() == '-') ++pos_;
      if (!IsDigit(Peek())) {
        while (IsIdentContinue(Peek())) ++pos_;
        diagnostics_.Emit(DiagnosticKind::MalformedNumber, SpanFrom(begin), text_.substr(begin, pos_ - begin),
                          "an exponent needs digits, as in `2.5e-3`");
        return Push(TokenKind::Error, begin);
      }
      is_float = true;
      while (IsDigit(Peek())) ++pos_;
    }
    if (IsIdentStart(Peek())) {
      while (IsIdentContinue(Peek())) ++pos_;
      diagnostics_.Emit(DiagnosticKind::MalformedNumber, SpanFrom(begin), text_.substr(begin, pos_ - begin),
                        "a number cannot run into a name; put a space or an operator between them");
      return Push(TokenKind::Error, begin);
    }
    Push(is_float ? TokenKind::FloatLiteral : TokenKind::IntLiteral, begin);
  }

  void LexString(std::uint32_t begin) {
    ++pos_;
    while (pos_ < text_.size() && text_[pos_] != '"' && text_[pos_] != '\n') {
      if (text_[pos_] == '\\' && pos_ + 1 < text_.size() && text_[pos_ + 1] != '\n') {
        char escape = text_[pos_ + 1];
        if (escape != '\\' && escape != '"' && escape != 'n' && escape != 't') {
          auto at = static_cast<std::uint32_t>(pos_);
          diagnostics_.Emit(DiagnosticKind::UnknownEscape, Span{file_, at, at + 2}, std::string(1, escape));
        }
        pos_ += 2;
      } else {
        ++pos_;
      }
    }
    if (pos_ >= text_.size() || text_[pos_] != '"') {
      diagnostics_.Emit(DiagnosticKind::UnterminatedString, Span{file_, begin, begin + 1});
      return Push(TokenKind::Error, begin);
    }
    ++pos_;
    Push(TokenKind::StringLiteral, begin);
  }

  FileId file_;
  std::string_view text_;
  Diagnostics& diagnostics_;
  std::size_t pos_ = 0;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> Lex(const SourceManager& sources, FileId file, Diagnostics& diagnostics) {
  return Lexer(sources, file, diagnostics).Run();
}

}  // namespace weft::syntax
