// The lexer: source text to tokens. Whitespace and comments (`-- ...`, nestable `{- ... -}`) are
// dropped; a `[` that directly follows a token (no space or comment between) becomes IndexBracket,
// which is how language.md's whitespace rule for indexing reaches the grammar. Malformed input gives
// a diagnostic and an Error token, and lexing goes on, so that one run reports every problem.
#pragma once

#include <vector>

#include "base/source.h"
#include "diagnostics/diagnostic.h"
#include "syntax/token.h"

namespace weft::syntax {

// The result always ends with an EndOfFile token.
std::vector<Token> Lex(const SourceManager& sources, FileId file, Diagnostics& diagnostics);

}  // namespace weft::syntax
