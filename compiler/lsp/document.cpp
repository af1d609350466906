#include "lsp/document.h"

#include <algorithm>
#include <exception>
#include <set>
#include <utility>

#include <llvm/ADT/StringRef.h>

#include "syntax/lexer.h"
#include "syntax/parser.h"
#include "tile/lower.h"

namespace weft::lsp {

std::vector<const core::Def*> Analysis::OwnDefs() const {
  std::vector<const core::Def*> out;
  if (!result) return out;
  for (const core::Def& def : result->module.defs()) {
    if (def.span.file == file) out.push_back(&def);
  }
  return out;
}

const Analysis::TokenSpan* Analysis::TokenAt(std::uint32_t offset) const {
  auto it = std::upper_bound(tokens.begin(), tokens.end(), offset,
                             [](std::uint32_t at, const TokenSpan& token) { return at < token.span.begin; });
  if (it == tokens.begin()) return nullptr;
  const TokenSpan& before = *std::prev(it);
  return offset <= before.span.end ? &before : nullptr;
}

namespace {

// ---- Steps 2 and 3 of document.h ----

std::shared_ptr<Analysis> ParseText(const std::string& path, const std::string& text,
                                    const check::CheckOptions& options) {
  auto analysis = std::make_shared<Analysis>();
  analysis->path = path;
  analysis->options = options;
  analysis->file = analysis->sources.Add(path, text);
  Diagnostics lexer_errors;  // the parser reports them again
  for (const syntax::Token& token : syntax::Lex(analysis->sources, analysis->file, lexer_errors)) {
    if (token.kind != syntax::TokenKind::EndOfFile) analysis->tokens.push_back({token.kind, token.span});
  }
  analysis->ast = syntax::Parse(analysis->sources, analysis->file, analysis->syntax_errors);
  return analysis;
}

// Whether `text` has the analysis' tokens, each where the map puts it.
bool SameTokens(const Analysis& analysis, const std::string& text, const OffsetMap& map) {
  SourceManager sources;
  FileId file = sources.Add(analysis.path, text);
  Diagnostics errors;
  std::vector<syntax::Token> tokens = syntax::Lex(sources, file, errors);
  if (tokens.size() != analysis.tokens.size() + 1) return false;
  for (std::size_t i = 0; i < analysis.tokens.size(); ++i) {
    const Span& old_span = analysis.tokens[i].span;
    if (tokens[i].kind != analysis.tokens[i].kind || map.ToNew(old_span.begin) != tokens[i].span.begin ||
        map.EndToNew(old_span.end) != tokens[i].span.end) {
      return false;
    }
  }
  return true;
}

const syntax::Name* DeclName(const syntax::Decl& decl) {
  if (const auto* def = std::get_if<syntax::Def>(&decl.node)) return &def->name;
  if (const auto* kernel = std::get_if<syntax::KernelDecl>(&decl.node)) return &kernel->name;
  return nullptr;
}

std::string_view TextOf(const Analysis& analysis, Span span) {
  return analysis.text().substr(span.begin, span.end - span.begin);
}

// The index of the declaration of `analysis` whose span holds `offset`, or -1.
int DeclAt(const Analysis& analysis, std::uint32_t offset) {
  const auto& decls = analysis.ast.decls();
  for (std::size_t i = 0; i < decls.size(); ++i) {
    if (decls[i].span.begin <= offset && offset < std::max(decls[i].span.end, decls[i].span.begin + 1))
      return static_cast<int>(i);
  }
  return -1;
}

// Checks the declarations of `analysis` at `indices` (and every import), or all of them.
void CheckDecls(Analysis& analysis, const std::vector<bool>* subset) {
  try {
    if (!subset) {
      analysis.result = check::Check(analysis.sources, analysis.ast, analysis.check_errors, analysis.options);
    } else {
      syntax::Ast part = analysis.ast;
      part.decls().clear();
      for (std::size_t i = 0; i < analysis.ast.decls().size(); ++i) {
        if ((*subset)[i] || std::holds_alternative<syntax::Import>(analysis.ast.decls()[i].node))
          part.decls().push_back(analysis.ast.decls()[i]);
      }
      analysis.result = check::Check(analysis.sources, part, analysis.check_errors, analysis.options);
    }
    // The kernels checked are lowered to the tile IR, as `weft check` lowers them: the tier's
    // errors are the file's (step 4 sorts them as it sorts the checker's).
    tile::LowerKernels(analysis.result->module, analysis.result->vars, analysis.file, analysis.check_errors);
  } catch (const std::exception& error) {  // InternalError, or an allocation failure
    analysis.internal_error = error.what();
  }
  for (std::size_t i = 0; i < analysis.ast.decls().size(); ++i) {
    const syntax::Name* name = DeclName(analysis.ast.decls()[i]);
    if (name && (!subset || (*subset)[i])) analysis.checked.push_back(name->text);
  }
  analysis.whole = subset == nullptr;
}

}  // namespace

Document::Document(std::string uri, std::string path, std::string text, int version)
    : uri_(std::move(uri)), path_(std::move(path)), text_(std::move(text)), version_(version), lines_(text_) {}

void Document::Update(std::string text, int version) {
  text_ = std::move(text);
  version_ = version;
  lines_ = LineIndex(text_);
  stale_ = true;
}

void Document::Hold(std::shared_ptr<const Analysis> analysis) {
  const Analysis* key = analysis.get();
  auto size = static_cast<std::uint32_t>(analysis->text().size());
  held_[key] = Held{View{std::move(analysis), OffsetMap::Identity(size)}, ++analyses_};
}

void Document::Release() {
  std::set<const Analysis*> used{current_};
  for (const auto& [name, analysis] : last_good_) used.insert(analysis);
  for (const DiagnosticRef& ref : check_errors_) used.insert(ref.analysis);
  std::erase_if(held_, [&](const auto& entry) { return !used.count(entry.first); });
}

bool Document::Refresh(const check::CheckOptions& options) {
  if (!stale_) return false;
  stale_ = false;
  const Analysis* previous = current_;
  OffsetMap step = OffsetMap::Between(analysed_, text_);
  auto move_maps = [&](const OffsetMap& edit) {
    for (auto& [key, held] : held_) held.view.map = held.view.map.Then(edit);
    analysed_ = text_;
  };
  if (previous && !whole_ && SameTokens(*previous, text_, MapOf(previous).Then(step))) {
    move_maps(step);
    return false;
  }

  std::shared_ptr<Analysis> analysis = ParseText(path_, text_, options);
  const auto& decls = analysis->ast.decls();
  std::size_t count = decls.size();
  if (previous) {
    // The declarations whose text is unchanged survive where they now are.
    std::map<std::string, const syntax::Decl*> now;
    for (const syntax::Decl& decl : decls) {
      if (const syntax::Name* name = DeclName(decl)) now.emplace(name->text, &decl);
    }
    std::string_view old_text = analysed_;
    OffsetMap refined;
    for (const syntax::Decl& old : previous->ast.decls()) {
      const syntax::Name* name = DeclName(old);
      auto it = name ? now.find(name->text) : now.end();
      if (it == now.end()) continue;
      std::optional<std::uint32_t> begin = MapOf(previous).ToNew(old.span.begin);
      std::optional<std::uint32_t> end = MapOf(previous).EndToNew(old.span.end);
      if (!begin || !end) continue;
      Span moved = it->second->span;
      if (step.ToNew(*begin) == moved.begin && step.EndToNew(*end) == moved.end) continue;  // the edit keeps it
      if (old_text.substr(*begin, *end - *begin) == TextOf(*analysis, moved))
        refined.Add(*begin, *end, static_cast<std::int64_t>(moved.begin) - *begin);
    }
    refined.Add(step);  // the edit's prefix and suffix, where they do not contradict a definition's move
    move_maps(refined);
  }

  // Which declarations to check: all, or those affected by the edit (step 3 of document.h).
  bool whole = whole_ || !previous || !previous->result;
  std::vector<bool> affected(count, false), needed(count, false);
  std::map<std::string, std::size_t> by_name;
  std::vector<std::set<std::string>> names_used(count);
  if (!whole) {
    for (std::size_t i = 0; i < count; ++i) {
      if (const syntax::Name* name = DeclName(decls[i]); name && !by_name.emplace(name->text, i).second) whole = true;
    }
    // The imports, in order and as written, must be those of the previous text.
    std::vector<std::string> imports, previous_imports;
    for (const syntax::Decl& decl : decls) {
      if (std::holds_alternative<syntax::Import>(decl.node)) imports.emplace_back(TextOf(*analysis, decl.span));
    }
    for (const syntax::Decl& decl : previous->ast.decls()) {
      if (std::holds_alternative<syntax::Import>(decl.node))
        previous_imports.emplace_back(TextOf(*previous, decl.span));
    }
    if (imports != previous_imports) whole = true;
  }
  if (!whole) {
    for (const Analysis::TokenSpan& token : analysis->tokens) {
      if (token.kind != syntax::TokenKind::Identifier) continue;
      int decl = DeclAt(*analysis, token.span.begin);
      if (decl >= 0) names_used[decl].emplace(TextOf(*analysis, token.span));
    }
    // A declaration is unchanged if one of the previous text with its name and text maps onto it.
    const OffsetMap& map = MapOf(previous);
    std::set<std::string> changed;  // names whose definition changed, appeared or went away
    std::set<std::string> unchanged;
    for (const syntax::Decl& old : previous->ast.decls()) {
      const syntax::Name* name = DeclName(old);
      if (!name) continue;
      auto it = by_name.find(name->text);
      bool same = it != by_name.end() && TextOf(*previous, old.span) == TextOf(*analysis, decls[it->second].span) &&
                  map.ToNew(old.span.begin) == decls[it->second].span.begin &&
                  map.EndToNew(old.span.end) == decls[it->second].span.end;
      (same ? unchanged : changed).insert(name->text);
    }
    // A diagnostic kept from an earlier analysis must still have its place.
    for (const DiagnosticRef& ref : check_errors_) {
      const Span& span = ref.diagnostic->span;
      if (span.file != ref.analysis->file) continue;
      if (!MapOf(ref.analysis).ToNew(span.begin)) {
        int decl = DeclAt(*ref.analysis, span.begin);
        if (decl < 0) continue;
        if (const syntax::Name* name = DeclName(ref.analysis->ast.decls()[decl])) changed.insert(name->text);
      }
    }
    for (const auto& [name, index] : by_name) {
      if (!unchanged.count(name) || changed.count(name)) {
        affected[index] = true;
        changed.insert(name);
      }
    }
    // Whatever names a changed definition is affected, and so on.
    for (bool grew = true; grew;) {
      grew = false;
      for (std::size_t i = 0; i < count; ++i) {
        if (affected[i] || !DeclName(decls[i])) continue;
        for (const std::string& used : names_used[i]) {
          if (!changed.count(used)) continue;
          affected[i] = grew = true;
          changed.insert(DeclName(decls[i])->text);
          break;
        }
      }
    }
  }
  // What the affected definitions need: the definitions they name, transitively.
  auto close = [&] {
    std::vector<std::size_t> work;
    for (std::size_t i = 0; i < count; ++i) {
      if (needed[i]) work.push_back(i);
    }
    while (!work.empty()) {
      std::size_t i = work.back();
      work.pop_back();
      for (const std::string& used : names_used[i]) {
        auto it = by_name.find(used);
        if (it != by_name.end() && !needed[it->second]) {
          needed[it->second] = true;
          work.push_back(it->second);
        }
      }
    }
  };
  if (whole) {
    CheckDecls(*analysis, nullptr);
  } else {
    needed = affected;
    close();
    CheckDecls(*analysis, &needed);
    // An unknown name: the definitions named like it join, so that "did you mean" is the same as in
    // a check of the whole file (UnknownName in check/handle_expr.cpp), and the check is redone.
    bool grew = false;
    for (const Diagnostic& d : analysis->check_errors.all()) {
      if (d.kind != DiagnosticKind::UnknownName || d.span.file != analysis->file) continue;
      llvm::StringRef unknown(TextOf(*analysis, d.span).data(), d.span.end - d.span.begin);
      unsigned bound = static_cast<unsigned>((unknown.size() + 2) / 3) + 1;
      if (unknown.size() < 3) continue;
      for (const auto& [name, index] : by_name) {
        if (!needed[index] && unknown.edit_distance(name, true, bound) < bound) needed[index] = grew = true;
      }
    }
    if (grew) {
      close();
      analysis->check_errors = weft::Diagnostics();
      analysis->result.reset();
      analysis->internal_error.clear();
      analysis->checked.clear();
      CheckDecls(*analysis, &needed);
    }
  }

  // Step 4: the diagnostics to show.
  std::vector<DiagnosticRef> errors;
  if (!whole) {
    for (const DiagnosticRef& ref : check_errors_) {
      const Span& span = ref.diagnostic->span;
      if (span.file != ref.analysis->file) continue;  // an imported file's: the new check has it
      std::optional<std::uint32_t> at = MapOf(ref.analysis).ToNew(span.begin);
      int decl = at ? DeclAt(*analysis, *at) : -1;
      if (decl >= 0 && !affected[decl] && DeclName(decls[decl])) errors.push_back(ref);
    }
  }
  for (const Diagnostic& d : analysis->check_errors.all()) {
    int decl = d.span.file == analysis->file ? DeclAt(*analysis, d.span.begin) : -1;
    if (whole || decl < 0 || affected[decl] || !DeclName(decls[decl])) errors.push_back({analysis.get(), &d});
  }

  whole_ = false;
  current_ = analysis.get();
  for (const core::Def* def : analysis->OwnDefs()) {
    if (def->ok && def->body.valid()) last_good_[def->name] = analysis.get();
  }
  analysed_ = text_;
  Hold(std::move(analysis));
  check_errors_ = std::move(errors);
  Release();
  return true;
}

std::vector<View> Document::Views() const {
  std::vector<const Held*> held;
  for (const auto& [analysis, entry] : held_) held.push_back(&entry);
  std::sort(held.begin(), held.end(), [&](const Held* a, const Held* b) {
    bool a_current = a->view.analysis.get() == current_, b_current = b->view.analysis.get() == current_;
    if (a_current != b_current) return a_current;
    return a->order > b->order;
  });
  std::vector<View> out;
  for (const Held* entry : held) out.push_back(entry->view);
  return out;
}

std::vector<DiagnosticRef> Document::Diagnostics() const {
  const Analysis& now = *current().analysis;
  if (now.syntax_errors.has_errors()) {
    std::vector<DiagnosticRef> out;
    for (const Diagnostic& d : now.syntax_errors.all()) out.push_back({&now, &d});
    return out;
  }
  return check_errors_;
}

}  // namespace weft::lsp
