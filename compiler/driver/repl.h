// `weft repl`: the interactive session (docs/repl.md). One check::Session holds everything defined
// so far; each input is a small source file of its own (`<repl:N>`), so that diagnostics point into
// it with carets, and the session goes on after an error with what was defined before.
//
// How an input is read and run:
//  1. Lines are read (libedit when standard input is a terminal, plain reads otherwise) until the
//     input is complete (IsComplete): brackets balanced, no trailing operator or `=`, `in`, `->`,
//     `then`, `else`..., and no parse error at the end of the input. A blank line ends it anyway.
//  2. A `:command` runs. `def`, `kernel` and `import` are declarations, checked in the session.
//     `let x = e` with no `in` is the value definition `def x = e`. Anything else is an expression:
//     it is checked as the definition `def it = e`, evaluated, and shown with its type.
//  3. Diagnostics of the input are rendered to the error stream; what was defined stays defined.
#pragma once

#include <iosfwd>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "driver/options.h"

namespace weft::driver {

// Whether `text` (the lines read so far, joined by newlines) is a finished input, or continues on
// the next line (an unbalanced bracket, a trailing operator, `=`, `in`, `->`, `then`, `else`, an
// open block comment, or a parse error at the end of the text).
bool IsComplete(std::string_view text);

// What tab completes in `line` with the cursor at `cursor`: the word before the cursor starts at
// `start`, and each candidate replaces it. A `:` word at the start of the line completes a
// command; the argument of `:load` a file name; any other word a name in `names`.
struct Completion {
  std::size_t start = 0;
  std::vector<std::string> candidates;  // sorted, unique
};
Completion Complete(std::string_view line, std::size_t cursor, const std::vector<std::string>& names);

// The longest common prefix of the candidates (what tab inserts when there are several).
std::string CommonPrefix(const std::vector<std::string>& candidates);

struct ReplConfig {
  bool color = false;      // colour in diagnostics
  std::string stdlib_dir;  // where `import nn` looks
};

class Repl {
 public:
  Repl(std::ostream& out, std::ostream& err, ReplConfig config);
  ~Repl();
  Repl(const Repl&) = delete;
  Repl& operator=(const Repl&) = delete;

  // Runs one complete input (a command, declarations, a `let` or an expression). Returns false when
  // the session should end (`:quit`).
  bool Run(const std::string& input);
  // Every name completion offers: definitions in scope, built-ins, keywords.
  std::vector<std::string> NamesInScope() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Runs `weft repl [FILE...]`: loads the files, then reads inputs until `:quit` or the end of input.
int RunRepl(const Options& options);

}  // namespace weft::driver
