// What the server knows about one open document: its text, the analyses of its earlier texts that
// still answer for some of it, and the diagnostics to show.
//
// Incremental analysis, in steps (Document::Refresh):
//  1. A change only replaces the text and marks the document stale; analysis waits until the
//     server has read every message that arrived (edits typed quickly are analysed once), or until
//     a request needs it.
//  2. The new text is lexed. If its tokens are those of the current analysis (an edit inside a
//     comment or of white space), nothing is parsed or checked: every held analysis' OffsetMap is
//     moved on by the edit (the text's common prefix and suffix).
//  3. Otherwise the file is parsed, and its declarations compared with the current analysis' by name
//     and text; the maps are moved on by the edit and by each declaration whose text is unchanged,
//     wherever it now is. A definition is affected when its text changed, or it names (one of its identifier
//     tokens is) a definition that changed, appeared or went away, or an affected one. Only the
//     affected definitions are checked, with the definitions they name (transitively: definitions
//     only see those above them) and the imports, as one smaller file; a name they use that is
//     unknown brings in the definitions whose names are close to it, so "did you mean" is what a
//     check of the whole file says. A change to the imports, a name defined twice, or a save of
//     another file (imports are read from disk) checks the whole file.
//  4. Diagnostics: those of the affected definitions (for a kernel, its lowering to the tile IR's
//     too, as in `weft check`) and of the imports come from the new check; those of the other
//     definitions are kept from the analyses that made them, moved by their maps.
//     A file with syntax errors shows only those, as `weft check` does.
//  5. Each definition that checked (with a body in the core IR) makes that analysis its last good
//     one. Queries (queries.h) read a position in the current analysis, then in the last good ones,
//     each through its map: a definition that was not checked again, or that fails now, or no longer
//     parses, is read where it last checked, wherever the text around the cursor survives.
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

// One run of the phases over one text of a document: the whole file parsed, and the definitions
// that were affected (or all) checked. Immutable once made; shared by the document and by the names
// whose last good analysis it is.
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
  std::vector<TokenSpan> tokens;  // the document's tokens, without the end of file
  Diagnostics syntax_errors;
  Diagnostics check_errors;                  // of the definitions checked (with syntax errors: of what parsed)
  std::optional<check::CheckResult> result;  // none when the checker stopped on an internal error
  std::string internal_error;                // then, what it said
  std::vector<std::string> checked;          // the names of the definitions checked
  bool whole = false;                        // every definition was checked

  std::string_view text() const { return sources.Get(file).text(); }
  // The definitions of the document in the core IR (not the imported ones).
  std::vector<const core::Def*> OwnDefs() const;
  // The innermost token at `offset`, or else one that ends there (a cursor after a name).
  const TokenSpan* TokenAt(std::uint32_t offset) const;
};

// An analysis as seen from the document's current text.
struct View {
  std::shared_ptr<const Analysis> analysis;
  OffsetMap map;  // from the analysis' text to the document's
};

// A diagnostic to publish: one of an analysis' check errors, or of its syntax errors.
struct DiagnosticRef {
  const Analysis* analysis;
  const Diagnostic* diagnostic;
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
  // Analyse again, and the whole file, even if the text is unchanged: a file it imports changed.
  void Invalidate() { stale_ = whole_ = true; }
  // Brings the analysis up to date (see the steps above). Returns whether the compiler ran.
  bool Refresh(const check::CheckOptions& options);

  // The current analysis, then the other held ones, most recent first. @pre !stale()
  std::vector<View> Views() const;
  const View& current() const { return held_.at(current_).view; }
  const OffsetMap& MapOf(const Analysis* analysis) const { return held_.at(analysis).view.map; }
  // What to publish, in source order of the analyses that made them.
  std::vector<DiagnosticRef> Diagnostics() const;

 private:
  struct Held {
    View view;
    std::uint64_t order;  // when it was made
  };
  void Hold(std::shared_ptr<const Analysis> analysis);
  void Release();  // forgets the analyses nothing refers to

  std::string uri_, path_, text_;
  std::string analysed_;  // the text of the last analysis: what the held maps lead to
  int version_;
  LineIndex lines_;
  bool stale_ = true;
  bool whole_ = true;  // the next analysis checks the whole file
  std::map<const Analysis*, Held> held_;
  const Analysis* current_ = nullptr;
  std::map<std::string, const Analysis*> last_good_;
  std::vector<DiagnosticRef> check_errors_;  // the check errors shown, from whichever analysis
  std::uint64_t analyses_ = 0;
};

}  // namespace weft::lsp
