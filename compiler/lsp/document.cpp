#include "lsp/document.h"

#include <algorithm>
#include <exception>
#include <utility>

#include "syntax/lexer.h"
#include "syntax/parser.h"

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

std::shared_ptr<const Analysis> Analyze(const std::string& path, std::string text, const check::CheckOptions& options) {
  auto analysis = std::make_shared<Analysis>();
  analysis->path = path;
  analysis->options = options;
  analysis->file = analysis->sources.Add(path, std::move(text));
  Diagnostics lexer_errors;  // the parser reports them again
  for (const syntax::Token& token : syntax::Lex(analysis->sources, analysis->file, lexer_errors)) {
    if (token.kind != syntax::TokenKind::EndOfFile) analysis->tokens.push_back({token.kind, token.span});
  }
  analysis->ast = syntax::Parse(analysis->sources, analysis->file, analysis->diagnostics);
  analysis->parsed = !analysis->diagnostics.has_errors();
  // What did not parse is missing from the tree, and the checker would report its names as unknown
  // where they are used: its errors are not shown until the file parses.
  Diagnostics unshown;
  try {
    analysis->result =
        check::Check(analysis->sources, analysis->ast, analysis->parsed ? analysis->diagnostics : unshown, options);
  } catch (const std::exception& error) {  // InternalError, or an allocation failure
    analysis->internal_error = error.what();
  }
  return analysis;
}

namespace {

// Whether `text` has the tokens of the analysed text, each in a part that the edit left alone.
bool SameTokens(const Analysis& analysis, const std::string& text, const TextMap& map) {
  SourceManager sources;
  FileId file = sources.Add(analysis.path, text);
  Diagnostics errors;
  std::vector<syntax::Token> tokens = syntax::Lex(sources, file, errors);
  if (tokens.size() != analysis.tokens.size() + 1) return false;
  std::string_view old_text = analysis.text();
  for (std::size_t i = 0; i < analysis.tokens.size(); ++i) {
    const Span& old_span = analysis.tokens[i].span;
    if (tokens[i].kind != analysis.tokens[i].kind ||
        tokens[i].text != old_text.substr(old_span.begin, old_span.end - old_span.begin) ||
        !map.ToNew(old_span.begin) || !map.EndToNew(old_span.end)) {
      return false;
    }
  }
  return true;
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

bool Document::Refresh(const check::CheckOptions& options) {
  if (!stale_) return false;
  stale_ = false;
  if (current_.analysis && !std::exchange(forced_, false)) {
    TextMap map(current_.analysis->text(), text_);
    if (map.identity() || SameTokens(*current_.analysis, text_, map)) {
      current_.map = map;
      return false;
    }
  }
  std::shared_ptr<const Analysis> analysis = Analyze(path_, text_, options);
  current_ = View{analysis, TextMap()};
  order_[analysis.get()] = ++analyses_;
  for (const core::Def* def : analysis->OwnDefs()) {
    if (def->ok && def->body.valid()) last_good_[def->name] = analysis;
  }
  // Forget the order of analyses that nothing holds any more.
  std::map<const Analysis*, std::uint64_t> kept;
  kept[analysis.get()] = order_[analysis.get()];
  for (const auto& [name, held] : last_good_) kept[held.get()] = order_[held.get()];
  order_ = std::move(kept);
  return true;
}

std::vector<View> Document::Earlier() const {
  std::vector<std::shared_ptr<const Analysis>> held;
  for (const auto& [name, analysis] : last_good_) {
    if (analysis != current_.analysis && std::find(held.begin(), held.end(), analysis) == held.end())
      held.push_back(analysis);
  }
  std::sort(held.begin(), held.end(),
            [&](const auto& a, const auto& b) { return order_.at(a.get()) > order_.at(b.get()); });
  std::vector<View> out;
  for (auto& analysis : held) {
    TextMap map(analysis->text(), text_);
    out.push_back(View{std::move(analysis), map});
  }
  return out;
}

}  // namespace weft::lsp
