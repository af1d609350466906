// The answers of the language server, computed from a Document (document.h) and free of JSON:
// diagnostics, hover, go to definition, document symbols and completion. Offsets are bytes of the
// document's current text; results carry LSP ranges and file paths (server.cpp makes URIs).
//
// How a position is read, in steps (queries.cpp):
//  1. In the current analysis, if the definition around the position checked: the innermost
//     expression or pattern of its core IR whose span holds the position (its type is the one at
//     that use; a name of a local is resolved by walking the binders that enclose it).
//  2. Otherwise in the earlier analyses where that definition last checked, if the text around the
//     position survives since (OffsetMap), with the results moved back to the current text.
//  3. Otherwise from the syntax tree: a parameter or `let` with a written type shows that type, a
//     top-level name its signature, and binders are found by walking the tree.
// Before these, a definition's name shows its signature, and a size or shape name (in a type, a
// size binder, a `where` condition, or a size used as a value) is read in the syntax tree of the
// current analysis: `n : size`, what binds it, where else it is named, its `where` conditions.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "lsp/document.h"

namespace weft::lsp {

struct Location {
  std::string path;
  Range range;
};

struct RelatedInformation {
  Location location;
  std::string message;
};

// The protocol's DiagnosticSeverity.
enum class DiagnosticSeverity { Error = 1, Warning = 2, Information = 3, Hint = 4 };

struct PublishedDiagnostic {
  Range range;
  DiagnosticSeverity severity;
  std::string code;  // the error id, as E0206; empty for none
  std::string message;
  std::vector<RelatedInformation> related;  // the diagnostic's notes
};

// The diagnostics of the current analysis. An error in an imported file is shown on the `import`
// that brought it in, with its own place as the first related location.
std::vector<PublishedDiagnostic> Diagnose(const Document& document);

struct HoverText {
  std::string markdown;  // a weft code block with `name : type` or `expression : type`
  Range range;           // what the type belongs to
};
// With `layouts`, each tensor's layout after its shape (docs/layouts.md, "Layouts in types"): the
// client asks for them with the initialization option `{"layouts": true}`.
std::optional<HoverText> Hover(const Document& document, std::uint32_t offset, bool layouts = false);

// Where the name at `offset` is defined: a local's binder, a top-level definition's name (also in
// an imported file), the file an `import` names.
std::optional<Location> Definition(const Document& document, std::uint32_t offset);

// The protocol's SymbolKind and CompletionItemKind, the values used here.
enum class SymbolKind { Module = 2, Function = 12, Variable = 13 };
enum class CompletionKind { Function = 3, Variable = 6, Module = 9, Keyword = 14 };

struct Symbol {
  std::string name;
  std::string detail;  // its type
  SymbolKind kind;
  Range range;      // the whole declaration
  Range selection;  // its name
};
// Each definition, kernel and import of the document, in source order.
std::vector<Symbol> Symbols(const Document& document);

struct CompletionItem {
  std::string label;
  CompletionKind kind;
  std::string detail;  // a type, "built-in" or "keyword"
};
// Names in scope at `offset`: locals (innermost first), the definitions above it and imported ones,
// built-ins (check::BuiltinNames; in a kernel's body also check::KernelOpNames), keywords and element
// types. The client filters them by what is typed.
std::vector<CompletionItem> Complete(const Document& document, std::uint32_t offset);

}  // namespace weft::lsp
