// What the server knows about one open document: its text, the analysis of it (the compiler's
// phases, run as `weft check` runs them), and the last analysis in which each definition checked.
//
// Incremental analysis, in steps (Document::Refresh):
//  1. A change only replaces the text and marks the document stale; analysis waits until the
//     server has read every message that arrived (edits typed quickly are analysed once), or until
//     a request needs it.
//  2. The new text is lexed. If its tokens are those of the analysed text (an edit inside a comment
//     or of white space), nothing is parsed or checked again: the analysis is kept and read through
//     a TextMap, which moves its spans to the new text.
//  3. Otherwise the file is parsed and checked (with what it imports, from disk). A file that does
//     not parse is checked as far as it parsed, so that its good definitions still have types; as
//     `weft check` does, only its syntax errors are reported then.
//  4. Each definition that checked (with a body in the core IR) becomes that name's last good
//     analysis. A definition that now fails, or no longer parses, is read in its last good
//     analysis (queries.h), through the TextMap from that analysis' text: hovers and go to
//     definition keep working wherever the text around the cursor is unchanged.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/source.h"
#include "check/check.h"
#include "diagnostics/diagnostic.h"
#include "lsp/positions.h"
#include "syntax/ast.h"
#include "syntax/token.h"

namespace weft::lsp {

// One run of the phases over one text of a document. Immutable once made; shared by the
// document's current state and by the names whose last good analysis it is.
struct Analysis {
  std::string path;  // the document's file: relative imports are resolved from its folder
  check::CheckOptions options;
  SourceManager sources;
  FileId file;  // the document's text in `sources`; imported files follow it
  syntax::Ast ast;
  struct TokenSpan {
    syntax::TokenKind kind;
    Span span;
  };
  std::vector<TokenSpan> tokens;             // the document's tokens, without the end of file
  Diagnostics diagnostics;                   // what is reported: syntax errors, or else the checker's
  bool parsed = false;                       // no syntax errors
  std::optional<check::CheckResult> result;  // none when the checker stopped on an internal error
  std::string internal_error;                // then, what it said

  std::string_view text() const { return sources.Get(file).text(); }
  // The definitions of the document in the core IR (not the imported ones).
  std::vector<const core::Def*> OwnDefs() const;
  // The innermost token at `offset`, or else one that ends there (a cursor after a name).
  const TokenSpan* TokenAt(std::uint32_t offset) const;
};

// Runs the phases over `text`, the contents of the document at `path`.
std::shared_ptr<const Analysis> Analyze(const std::string& path, std::string text, const check::CheckOptions& options);

// An analysis as seen from the document's current text.
struct View {
  std::shared_ptr<const Analysis> analysis;
  TextMap map;  // from the analysis' text to the document's
};

class Document {
 public:
  Document(std::string uri, std::string path, std::string text, int version);
  Document(const Document&) = delete;  // lines_ points into text_
  Document& operator=(const Document&) = delete;

  const std::string& uri() const { return uri_; }
  const std::string& path() const { return path_; }
  const std::string& text() const { return text_; }
  int version() const { return version_; }
  const LineIndex& lines() const { return lines_; }
  bool stale() const { return stale_; }

  void Update(std::string text, int version);
  // Analyse again even if the text is unchanged: a file it imports changed on disk.
  void Invalidate() { stale_ = forced_ = true; }
  // Brings the analysis up to date (see the steps above). Returns whether the compiler ran.
  bool Refresh(const check::CheckOptions& options);

  // The current analysis. @pre !stale()
  const View& current() const { return current_; }
  // The analyses where some definition last checked, other than the current one, most recent first.
  std::vector<View> Earlier() const;

 private:
  std::string uri_, path_, text_;
  int version_;
  LineIndex lines_;
  bool stale_ = true;
  bool forced_ = false;
  View current_;
  std::map<std::string, std::shared_ptr<const Analysis>> last_good_;
  std::uint64_t analyses_ = 0;  // how many times the compiler ran, to order the earlier analyses
  std::map<const Analysis*, std::uint64_t> order_;
};

}  // namespace weft::lsp
