// The server's answers; queries.h states how a position is read.
#include "lsp/queries.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "base/overloaded.h"
#include "check/check.h"
#include "core/type_printer.h"

namespace weft::lsp {
namespace {

using core::TypeRef;
using core::VarStore;
using syntax::TokenKind;

bool Holds(Span outer, std::uint32_t begin, std::uint32_t end) {
  return outer.begin <= begin && end <= outer.end;
}

// ---- Spans to places in the document or in the files it imports ----

// A span of an analysis in the document's current text; nothing when an edit since then touched it.
std::optional<Range> DocumentRange(const Document& document, const OffsetMap& map, Span span) {
  std::optional<std::uint32_t> begin = map.ToNew(span.begin);
  std::optional<std::uint32_t> end = span.end == span.begin ? begin : map.EndToNew(span.end);
  if (!begin || !end) return std::nullopt;
  return document.lines().ToRange(*begin, *end);
}

std::optional<Location> LocationOf(const Document& document, const Analysis& analysis, const OffsetMap& map,
                                   Span span) {
  if (span.file == analysis.file) {
    std::optional<Range> range = DocumentRange(document, map, span);
    if (!range) return std::nullopt;
    return Location{document.path(), *range};
  }
  if (!span.valid()) return std::nullopt;
  const SourceBuffer& buffer = analysis.sources.Get(span.file);
  LineIndex lines(buffer.text());
  return Location{std::string(buffer.name()), lines.ToRange(span.begin, span.end)};
}

std::optional<Location> LocationOf(const Document& document, const View& view, Span span) {
  return LocationOf(document, *view.analysis, view.map, span);
}

// The file an `import` reads, as check/checker.cpp's Import resolves it.
std::string ImportPath(const Analysis& analysis, const syntax::Import& import) {
  namespace fs = std::filesystem;
  fs::path path = import.is_path ? fs::path(analysis.path).parent_path() / import.target
                                 : fs::path(analysis.options.stdlib_dir) / (import.target + ".weft");
  return path.lexically_normal().string();
}

// The name of a definition: the word after `def` or `kernel` at the start of its span.
Span NameSpan(const SourceManager& sources, const core::Def& def) {
  std::string_view text = sources.Get(def.span.file).text();
  std::uint32_t i = def.span.begin;
  auto word = [&](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '\''; };
  while (i < text.size() && word(text[i])) ++i;  // the keyword
  while (i < text.size() && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r')) ++i;
  std::uint32_t begin = i;
  while (i < text.size() && word(text[i])) ++i;
  return Span{def.span.file, begin, i};
}

// ---- Text for hovers ----

std::string CodeBlock(const std::string& line) {
  return "```weft\n" + line + "\n```";
}

// An expression's source on one line, shortened if long.
std::string OneLine(std::string_view text) {
  std::string out;
  for (char c : text) {
    bool space = c == ' ' || c == '\t' || c == '\n' || c == '\r';
    if (!space) {
      out += c;
    } else if (!out.empty() && out.back() != ' ') {
      out += ' ';
    }
  }
  constexpr std::size_t kMax = 60;
  if (out.size() > kMax) {
    std::size_t cut = kMax;
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;  // not inside a character
    out = out.substr(0, cut) + " ...";
  }
  return out;
}

std::string Signature(const VarStore& vars, const core::Def& def, bool layouts = false) {
  core::TypePrinter printer(vars, layouts);
  return def.name + " : " + printer.PrintWithClasses(def.scheme.type);
}

// ---- The core IR: the innermost node at a token, and the binders in scope ----

struct CoreChildren {
  std::vector<core::ExprId> exprs;
  std::vector<core::PatternId> patterns;
};

CoreChildren ChildrenOf(const core::Expr& e) {
  namespace ce = core::expr;
  CoreChildren c;
  auto add = [&](const std::vector<core::ExprId>& ids) { c.exprs.insert(c.exprs.end(), ids.begin(), ids.end()); };
  std::visit(Overloaded{
                 [](const ce::IntLit&) {},
                 [](const ce::FloatLit&) {},
                 [](const ce::BoolLit&) {},
                 [](const ce::StringLit&) {},
                 [](const ce::Local&) {},
                 [](const ce::Global&) {},
                 [](const ce::Builtin&) {},
                 [](const ce::SizeValue&) {},
                 [](const ce::ShapeArg&) {},
                 [&](const ce::Apply& apply) {
                   c.exprs.push_back(apply.callee);
                   add(apply.args);
                 },
                 [&](const ce::Lambda& lambda) {
                   c.patterns = lambda.params;
                   c.exprs.push_back(lambda.body);
                 },
                 [&](const ce::Let& let) {
                   c.patterns.push_back(let.pattern);
                   c.exprs = {let.value, let.body};
                 },
                 [&](const ce::If& branch) {
                   c.exprs = {branch.condition, branch.then_branch, branch.else_branch};
                 },
                 [&](const ce::Tuple& tuple) { add(tuple.elements); },
                 [&](const ce::TensorLit& list) { add(list.elements); },
                 [&](const ce::Index& index) {
                   c.exprs.push_back(index.base);
                   for (const ce::IndexItem& item : index.items) {
                     if (item.kind == ce::IndexItem::Kind::At) c.exprs.push_back(item.at);
                   }
                 },
                 [&](const ce::Loop& loop) {
                   c.patterns.push_back(loop.state);
                   c.exprs = {loop.init, loop.bound, loop.body};
                 },
                 [&](const ce::Cast& cast) { c.exprs.push_back(cast.operand); },
             },
             e.node);
  return c;
}

// A name bound in the core IR, and where.
struct Binder {
  std::string name;
  Span span;  // the name in its pattern (a loop's counter: the name after `for`)
  TypeRef type;
};

struct CoreNode {
  bool is_pattern = false;
  core::ExprId expr;
  core::PatternId pattern;
};

class CoreReader {
 public:
  CoreReader(const Analysis& analysis, const core::Def& def)
      : analysis_(analysis), module_(analysis.result->module), def_(def) {}

  // The innermost expression or pattern whose span holds [begin, end).
  std::optional<CoreNode> Innermost(std::uint32_t begin, std::uint32_t end) {
    begin_ = begin;
    end_ = end;
    best_.reset();
    for (core::PatternId p : def_.params) VisitPattern(p);
    if (def_.body.valid()) VisitExpr(def_.body);
    return best_;
  }

  // The binders visible at `offset`, innermost last.
  std::vector<Binder> ScopeAt(std::uint32_t offset) {
    std::vector<Binder> scope;
    for (core::PatternId p : def_.params) Bind(p, scope);
    if (def_.body.valid()) ScopeIn(def_.body, offset, scope);
    return scope;
  }

  const core::Module& module() const { return module_; }

 private:
  void Consider(Span span, CoreNode node) {
    if (span.file != analysis_.file || !Holds(span, begin_, end_)) return;
    std::uint32_t size = span.end - span.begin;
    if (best_ && size > best_size_) return;  // on a tie the later, deeper node wins
    best_ = node;
    best_size_ = size;
  }

  void VisitPattern(core::PatternId id) {
    const core::Pattern& p = module_.Get(id);
    Consider(p.span, CoreNode{true, {}, id});
    if (const auto* tuple = std::get_if<core::pattern::Tuple>(&p.node)) {
      for (core::PatternId element : tuple->elements) VisitPattern(element);
    }
  }

  void VisitExpr(core::ExprId id) {
    const core::Expr& e = module_.Get(id);
    Consider(e.span, CoreNode{false, id, {}});
    CoreChildren children = ChildrenOf(e);
    for (core::PatternId p : children.patterns) VisitPattern(p);
    for (core::ExprId child : children.exprs) VisitExpr(child);
  }

  void Bind(core::PatternId id, std::vector<Binder>& scope) const {
    const core::Pattern& p = module_.Get(id);
    std::visit(Overloaded{
                   [&](const core::pattern::Name& name) {
                     scope.push_back({name.name, p.span, p.type});
                   },
                   [](const core::pattern::Wildcard&) {},
                   [&](const core::pattern::Tuple& tuple) {
                     for (core::PatternId element : tuple.elements) Bind(element, scope);
                   },
               },
               p.node);
  }

  // A loop's counter has no pattern: it is the name after `for` (or `pipeline`) in the loop.
  Span CounterSpan(Span loop, const std::string& counter) const {
    std::string_view text = analysis_.text();
    bool after_keyword = false;
    for (const Analysis::TokenSpan& token : analysis_.tokens) {
      if (token.span.begin < loop.begin) continue;
      if (token.span.begin >= loop.end) break;
      if (after_keyword && token.kind == TokenKind::Identifier &&
          text.substr(token.span.begin, token.span.end - token.span.begin) == counter)
        return token.span;
      after_keyword = token.kind == TokenKind::For || token.kind == TokenKind::Pipeline;
    }
    return Span{};
  }

  void ScopeIn(core::ExprId id, std::uint32_t offset, std::vector<Binder>& scope) const {
    const core::Expr& e = module_.Get(id);
    if (e.span.file != analysis_.file || offset < e.span.begin || offset > e.span.end) return;
    if (const auto* let = std::get_if<core::expr::Let>(&e.node)) {
      if (offset <= module_.Get(let->value).span.end) return ScopeIn(let->value, offset, scope);
      Bind(let->pattern, scope);
      return ScopeIn(let->body, offset, scope);
    }
    if (const auto* lambda = std::get_if<core::expr::Lambda>(&e.node)) {
      if (!lambda->params.empty() && offset < module_.Get(lambda->params.back()).span.end) return;
      for (core::PatternId p : lambda->params) Bind(p, scope);
      return ScopeIn(lambda->body, offset, scope);
    }
    if (const auto* loop = std::get_if<core::expr::Loop>(&e.node)) {
      if (offset <= module_.Get(loop->bound).span.end) {
        ScopeIn(loop->init, offset, scope);
        return ScopeIn(loop->bound, offset, scope);
      }
      Bind(loop->state, scope);
      scope.push_back({loop->counter, CounterSpan(e.span, loop->counter), module_.Get(loop->bound).type});
      return ScopeIn(loop->body, offset, scope);
    }
    for (core::ExprId child : ChildrenOf(e).exprs) ScopeIn(child, offset, scope);
  }

  const Analysis& analysis_;
  const core::Module& module_;
  const core::Def& def_;
  std::uint32_t begin_ = 0, end_ = 0;
  std::optional<CoreNode> best_;
  std::uint32_t best_size_ = 0;
};

const Binder* Find(const std::vector<Binder>& scope, std::string_view name) {
  for (auto it = scope.rbegin(); it != scope.rend(); ++it) {
    if (it->name == name) return &*it;
  }
  return nullptr;
}

// The definition of the view's analysis whose span holds `offset`.
const core::Def* DefAt(const Analysis& analysis, std::uint32_t offset) {
  for (const core::Def* def : analysis.OwnDefs()) {
    if (def->span.begin <= offset && offset <= def->span.end) return def;
  }
  return nullptr;
}

// Whether the definition has core IR to read: it checked, and it is not a kernel.
bool Readable(const core::Def* def) {
  return def && def->ok && def->body.valid();
}

const syntax::Name* DeclName(const syntax::Decl& decl) {
  if (const auto* def = std::get_if<syntax::Def>(&decl.node)) return &def->name;
  if (const auto* kernel = std::get_if<syntax::KernelDecl>(&decl.node)) return &kernel->name;
  return nullptr;
}

// The syntax declaration named by a token of it (its name), if the token is one.
const syntax::Decl* DeclNamed(const Analysis& analysis, Span token) {
  for (const syntax::Decl& decl : analysis.ast.decls()) {
    const syntax::Name* name = DeclName(decl);
    if (name && name->span.begin == token.begin && name->span.end == token.end) return &decl;
  }
  return nullptr;
}

// ---- The syntax tree: binders in scope where the core IR has nothing ----

struct SyntaxBinder {
  std::string name;
  Span span;
  syntax::TypeId annotation;  // invalid when none is written
};

class SyntaxReader {
 public:
  explicit SyntaxReader(const syntax::Ast& ast) : ast_(ast) {}

  std::vector<SyntaxBinder> ScopeAt(const syntax::Def& def, std::uint32_t offset) const {
    std::vector<SyntaxBinder> scope;
    for (const syntax::Name& size : def.size_binders) scope.push_back({size.text, size.span, {}});
    for (const syntax::Param& param : def.params) Bind(param.pattern, {}, scope);
    if (def.body.valid()) ScopeIn(def.body, offset, scope);
    return scope;
  }

 private:
  void Bind(syntax::PatternId id, syntax::TypeId annotation, std::vector<SyntaxBinder>& scope) const {
    const syntax::Pattern& p = ast_.Get(id);
    namespace sp = syntax::pattern;
    std::visit(Overloaded{
                   [](std::monostate) {},
                   [&](const sp::Name& name) {
                     scope.push_back({name.name, p.span, annotation});
                   },
                   [](const sp::Wildcard&) {},
                   [&](const sp::Tuple& tuple) {
                     for (syntax::PatternId element : tuple.elements) Bind(element, {}, scope);
                   },
                   [&](const sp::Typed& typed) { Bind(typed.pattern, typed.type, scope); },
               },
               p.node);
  }

  Span SpanOf(syntax::ExprId id) const { return ast_.Get(id).span; }

  void ScopeIn(syntax::ExprId id, std::uint32_t offset, std::vector<SyntaxBinder>& scope) const {
    if (!id.valid()) return;
    const syntax::Expr& e = ast_.Get(id);
    if (offset < e.span.begin || offset > e.span.end) return;
    namespace se = syntax::expr;
    auto each = [&](std::initializer_list<syntax::ExprId> ids) {
      for (syntax::ExprId child : ids) ScopeIn(child, offset, scope);
    };
    auto all = [&](const std::vector<syntax::ExprId>& ids) {
      for (syntax::ExprId child : ids) ScopeIn(child, offset, scope);
    };
    std::visit(Overloaded{
                   [](std::monostate) {},
                   [](const se::IntLit&) {},
                   [](const se::FloatLit&) {},
                   [](const se::StringLit&) {},
                   [](const se::BoolLit&) {},
                   [](const se::Var&) {},
                   [](const se::OperatorRef&) {},
                   [&](const se::Apply& apply) {
                     each({apply.callee});
                     all(apply.args);
                   },
                   [&](const se::Lambda& lambda) {
                     if (!lambda.params.empty() && offset < ast_.Get(lambda.params.back()).span.end) return;
                     for (syntax::PatternId p : lambda.params) Bind(p, {}, scope);
                     each({lambda.body});
                   },
                   [&](const se::Let& let) {
                     if (offset <= SpanOf(let.value).end) return each({let.value});
                     Bind(let.pattern, {}, scope);
                     each({let.body});
                   },
                   [&](const se::If& branch) {
                     each({branch.condition, branch.then_branch, branch.else_branch});
                   },
                   [&](const se::Binary& binary) {
                     each({binary.lhs, binary.rhs});
                   },
                   [&](const se::Negate& negate) { each({negate.operand}); },
                   [&](const se::Tuple& tuple) { all(tuple.elements); },
                   [&](const se::List& list) { all(list.elements); },
                   [&](const se::Ascribe& ascribe) { each({ascribe.expr}); },
                   [&](const se::Index& index) {
                     each({index.base});
                     for (const se::IndexItem& item : index.items) each({item.lo, item.hi});
                   },
                   [&](const se::Loop& loop) {
                     if (offset <= SpanOf(loop.bound).end) return each({loop.init, loop.bound});
                     Bind(loop.state, {}, scope);
                     scope.push_back({loop.counter.text, loop.counter.span, {}});
                     each({loop.body});
                   },
                   [&](const se::Pipeline& pipeline) {
                     if (offset <= SpanOf(pipeline.init).end) return each({pipeline.bound, pipeline.init});
                     scope.push_back({pipeline.counter.text, pipeline.counter.span, {}});
                     Bind(pipeline.state, {}, scope);
                     each({pipeline.body});
                   },
                   [&](const se::Cast& cast) { each({cast.operand}); },
               },
               e.node);
  }

  const syntax::Ast& ast_;
};

const syntax::Def* SyntaxDefAt(const Analysis& analysis, std::uint32_t offset) {
  for (const syntax::Decl& decl : analysis.ast.decls()) {
    if (decl.span.begin <= offset && offset <= decl.span.end) return std::get_if<syntax::Def>(&decl.node);
  }
  return nullptr;
}

std::string TokenText(const Analysis& analysis, Span span) {
  return std::string(analysis.text().substr(span.begin, span.end - span.begin));
}

// ---- Size and shape names in a declaration's types ----

// A size name (`n` in `(x: f32[n, 4])`) or shape name (`..s`) of a declaration: where the
// declaration binds it, the other places that name it, and the `where` conditions on it.
struct SizeName {
  std::string name;
  bool shape = false;
  Span binder;                                     // the name where it is bound
  std::string bound_by;                            // "the parameter `(x: f32[n, 4])`", ...
  std::vector<std::pair<Span, std::string>> also;  // other parameters or the result type naming it
  std::vector<Span> where;
};

class SizeNames {
 public:
  SizeNames(const Analysis& analysis, const syntax::Decl& decl) : analysis_(analysis), decl_(decl) {}

  // The size or shape name the token is, in a type, a size binder or a `where` condition.
  std::optional<SizeName> At(Span token) const {
    std::string name = std::string(analysis_.text().substr(token.begin, token.end - token.begin));
    bool mention = false, shape = false;
    for (const Span& span : Mentions(name, false)) mention = mention || span.begin == token.begin;
    for (const Span& span : Mentions(name, true)) shape = shape || Holds(span, token.begin, token.end);
    for (const syntax::Name& binder : SizeBinders()) mention = mention || binder.span.begin == token.begin;
    for (const syntax::WhereItem& item : Where()) {
      if (!item.condition.valid()) continue;
      std::vector<Span> vars;
      VarsIn(item.condition, name, vars);
      for (const Span& span : vars) mention = mention || span.begin == token.begin;
    }
    if (!mention && !shape) return std::nullopt;
    return Describe(name, shape);
  }

  // A size the declaration's types name, used as a value in its body (`reshape [n / 4, 4]`).
  std::optional<SizeName> Value(const std::string& name) const {
    SizeName size = Describe(name, false);
    if (!size.binder.valid()) return std::nullopt;
    return size;
  }

 private:
  SizeName Describe(const std::string& name, bool shape) const {
    SizeName out{name, shape, {}, "", {}, {}};
    std::vector<Span> mentions = Mentions(name, shape);
    for (const syntax::Name& binder : SizeBinders()) {
      if (!shape && binder.text == name) {
        out.binder = binder.span;
        out.bound_by = "`[" + name + "]` after the definition's name";
      }
    }
    // The signature's pieces that name it: the parameters in order, then the result type.
    std::vector<std::pair<Span, std::string>> pieces;
    for (const syntax::Param& param : Params()) pieces.push_back({param.span, "the parameter"});
    if (const auto* def = std::get_if<syntax::Def>(&decl_.node); def && def->result.valid())
      pieces.push_back({analysis_.ast.Get(def->result).span, "the result type"});
    for (const auto& [piece, what] : pieces) {
      auto named = std::find_if(mentions.begin(), mentions.end(), [&](Span m) { return Holds(piece, m.begin, m.end); });
      if (named == mentions.end()) continue;
      std::string text = "`" + OneLine(analysis_.sources.Text(piece)) + "`";
      if (!out.binder.valid()) {
        out.binder = *named;
        out.bound_by = what + " " + text;
      } else {
        out.also.push_back({piece, what + " " + text});
      }
    }
    if (!out.binder.valid() && !mentions.empty()) {
      out.binder = mentions.front();
      out.bound_by = "its first use";
    }
    for (const syntax::WhereItem& item : Where()) {
      std::vector<Span> vars;
      if (item.condition.valid()) VarsIn(item.condition, name, vars);
      if (!vars.empty()) out.where.push_back(item.span);
    }
    return out;
  }

  // Where the declaration's types name `name`: a dim (`n`), or a spread (`..s`).
  std::vector<Span> Mentions(const std::string& name, bool shape) const {
    std::vector<Span> out;
    if (!shape) {
      for (const syntax::Dim& dim : analysis_.ast.dims()) {
        const auto* var = std::get_if<syntax::dim::Var>(&dim.node);
        if (var && var->name == name && Holds(decl_.span, dim.span.begin, dim.span.end)) out.push_back(dim.span);
      }
    } else {
      for (const syntax::Type& type : analysis_.ast.types()) {
        const auto* tensor = std::get_if<syntax::type::Tensor>(&type.node);
        if (!tensor || !Holds(decl_.span, type.span.begin, type.span.end)) continue;
        for (const syntax::ShapeItem& item : tensor->shape) {
          if (item.spread && item.spread_name == name) out.push_back(item.span);
        }
      }
    }
    std::sort(out.begin(), out.end(), [](Span a, Span b) { return a.begin < b.begin; });
    return out;
  }

  // The variables named `name` in a `where` condition.
  void VarsIn(syntax::ExprId id, const std::string& name, std::vector<Span>& out) const {
    if (!id.valid()) return;
    const syntax::Expr& e = analysis_.ast.Get(id);
    namespace se = syntax::expr;
    if (const auto* var = std::get_if<se::Var>(&e.node)) {
      if (var->name == name) out.push_back(e.span);
    } else if (const auto* binary = std::get_if<se::Binary>(&e.node)) {
      VarsIn(binary->lhs, name, out);
      VarsIn(binary->rhs, name, out);
    } else if (const auto* negate = std::get_if<se::Negate>(&e.node)) {
      VarsIn(negate->operand, name, out);
    } else if (const auto* apply = std::get_if<se::Apply>(&e.node)) {
      VarsIn(apply->callee, name, out);
      for (syntax::ExprId arg : apply->args) VarsIn(arg, name, out);
    }
  }

  std::vector<syntax::Name> SizeBinders() const {
    const auto* def = std::get_if<syntax::Def>(&decl_.node);
    return def ? def->size_binders : std::vector<syntax::Name>{};
  }
  const std::vector<syntax::Param>& Params() const {
    if (const auto* def = std::get_if<syntax::Def>(&decl_.node)) return def->params;
    return std::get<syntax::KernelDecl>(decl_.node).params;
  }
  const std::vector<syntax::WhereItem>& Where() const {
    if (const auto* def = std::get_if<syntax::Def>(&decl_.node)) return def->where;
    return std::get<syntax::KernelDecl>(decl_.node).where;
  }

  const Analysis& analysis_;
  const syntax::Decl& decl_;
};

const syntax::Decl* DeclAt(const Analysis& analysis, Span token) {
  for (const syntax::Decl& decl : analysis.ast.decls()) {
    if (!std::holds_alternative<syntax::Import>(decl.node) && Holds(decl.span, token.begin, token.end)) return &decl;
  }
  return nullptr;
}

// The size or shape name at a token of the analysis, if the token is one.
std::optional<SizeName> SizeNameAt(const Analysis& analysis, Span token) {
  const syntax::Decl* decl = DeclAt(analysis, token);
  return decl ? SizeNames(analysis, *decl).At(token) : std::nullopt;
}

// A name in a definition's body that is a size of its types, not a local (sizes are values there).
std::optional<SizeName> SizeValueAt(const Analysis& analysis, Span token) {
  const syntax::Decl* decl = DeclAt(analysis, token);
  const auto* def = decl ? std::get_if<syntax::Def>(&decl->node) : nullptr;
  if (!def || !def->body.valid() || !Holds(analysis.ast.Get(def->body).span, token.begin, token.end))
    return std::nullopt;
  std::string name = TokenText(analysis, token);
  std::vector<SyntaxBinder> scope = SyntaxReader(analysis.ast).ScopeAt(*def, token.begin);
  for (auto it = scope.rbegin(); it != scope.rend(); ++it) {
    if (it->name != name) continue;
    bool size_binder = std::any_of(def->size_binders.begin(), def->size_binders.end(),
                                   [&](const syntax::Name& binder) { return binder.span.begin == it->span.begin; });
    if (!size_binder) return std::nullopt;  // a local of that name
    break;
  }
  return SizeNames(analysis, *decl).Value(name);
}

// ---- Reading a position in the current analysis, then in earlier ones ----

// A token of a view, with the definition around it when that definition can be read.
struct Point {
  const View* view;
  const Analysis::TokenSpan* token;
  const core::Def* def;  // readable (checked, with a body)
};

// Steps 1 and 2 of queries.h: the first view whose definition at `offset` checked. Stops at the
// current analysis when its definition there checked, even if the token is not in its IR.
std::optional<Point> ReadablePoint(const std::vector<View>& views, std::uint32_t offset) {
  for (const View& view : views) {
    std::optional<std::uint32_t> old = view.map.ToOld(offset);
    if (!old) continue;
    const Analysis::TokenSpan* token = view.analysis->TokenAt(*old);
    if (!token) return std::nullopt;  // white space or a comment
    const core::Def* def = DefAt(*view.analysis, *old);
    if (Readable(def)) return Point{&view, token, def};
  }
  return std::nullopt;
}

// A definition of the document, with the analysis that checked it.
struct Checked {
  const View* view;
  const core::Def* def;
};

// The checked definition of a declaration of the current text (`begin`: where it starts there),
// from the most recent analysis that checked it where it now is.
std::optional<Checked> CheckedDecl(const std::vector<View>& views, const std::string& name, std::uint32_t begin) {
  for (const View& view : views) {
    for (const core::Def* def : view.analysis->OwnDefs()) {
      if (def->name == name && view.map.ToNew(def->span.begin) == begin) return Checked{&view, def};
    }
  }
  return std::nullopt;
}

// The declaration of the current text named `name`, and where it starts there.
const syntax::Decl* DeclOf(const View& current, const std::string& name) {
  for (const syntax::Decl& decl : current.analysis->ast.decls()) {
    const syntax::Name* own = DeclName(decl);
    if (own && own->text == name) return &decl;
  }
  return nullptr;
}

// A top-level name's definition: in the document, else an imported one.
std::optional<Checked> GlobalDef(const std::vector<View>& views, const std::string& name) {
  const View& current = views.front();
  if (const syntax::Decl* decl = DeclOf(current, name)) {
    std::optional<std::uint32_t> begin = current.map.ToNew(decl->span.begin);
    return begin ? CheckedDecl(views, name, *begin) : std::nullopt;
  }
  for (const View& view : views) {
    if (!view.analysis->result) continue;
    const core::Def* def = view.analysis->result->module.Find(name);
    if (def && def->span.file != view.analysis->file) return Checked{&view, def};
  }
  return std::nullopt;
}

std::optional<Location> GlobalLocation(const Document& document, const std::vector<View>& views,
                                       const std::string& name) {
  const View& current = views.front();
  if (const syntax::Decl* decl = DeclOf(current, name)) return LocationOf(document, current, DeclName(*decl)->span);
  std::optional<Checked> imported = GlobalDef(views, name);
  if (!imported) return std::nullopt;
  return LocationOf(document, *imported->view, NameSpan(imported->view->analysis->sources, *imported->def));
}

// ---- The cursor of a query ----

// A position of the document's current text as Hover, Definition and Complete start from it: the
// views (the current analysis first, then the earlier ones), and the token of the current analysis
// under it; none on white space, in a comment, or where an edit since that analysis touched it.
struct Cursor {
  Cursor(const Document& document, std::uint32_t offset) : document(document), offset(offset), views(document.Views()) {
    std::optional<std::uint32_t> at = current().map.ToOld(offset);
    token = at ? now().TokenAt(*at) : nullptr;
  }

  const View& current() const { return views.front(); }
  const Analysis& now() const { return *views.front().analysis; }
  // The position in the current analysis' text; inside an edit, where the edit starts.
  std::uint32_t Before() const { return current().map.ToOldBefore(offset); }
  bool OnIdentifier() const { return token && token->kind == TokenKind::Identifier; }
  // The token's text and its range in the current text. @pre token
  std::string Text() const { return TokenText(now(), token->span); }
  std::optional<Range> TokenRange() const { return DocumentRange(document, current().map, token->span); }

  const Document& document;
  std::uint32_t offset;
  std::vector<View> views;
  const Analysis::TokenSpan* token = nullptr;
};

// A size name's hover: `n : size`, where it is bound, the other places that name it, its `where`
// conditions.
std::string SizeHover(const Cursor& cursor, const SizeName& size) {
  const Analysis& now = cursor.now();
  auto line = [&](Span span) {
    std::optional<std::uint32_t> begin = cursor.current().map.ToNew(span.begin);
    return begin ? " (line " + std::to_string(cursor.document.lines().ToPosition(*begin).line + 1) + ")"
                 : std::string();
  };
  std::string out = CodeBlock((size.shape ? ".." : "") + size.name + (size.shape ? " : shape" : " : size"));
  if (size.binder.valid()) out += "\n\nbound by " + size.bound_by + line(size.binder);
  for (const auto& [also, what] : size.also) out += "\n\nalso in " + what + line(also);
  for (Span where : size.where) out += "\n\nconstrained by `where " + OneLine(now.sources.Text(where)) + "`";
  return out;
}

}  // namespace

// ---- Diagnostics ----

std::vector<PublishedDiagnostic> Diagnose(const Document& document) {
  const View& current = document.current();
  const Analysis& now = *current.analysis;
  std::vector<PublishedDiagnostic> out;
  // Where an error in an imported file is shown: the `import` that reads that file.
  auto import_of = [&](std::string_view file) -> std::optional<Range> {
    std::string stem = std::filesystem::path(file).stem().string();
    for (const syntax::Decl& decl : now.ast.decls()) {
      const auto* import = std::get_if<syntax::Import>(&decl.node);
      if (import && (import->target == stem || file.ends_with(import->target)))
        return DocumentRange(document, current.map, decl.span);
    }
    return std::nullopt;
  };
  for (const DiagnosticRef& ref : document.Diagnostics()) {
    const Analysis& analysis = *ref.analysis;
    const OffsetMap& map = document.MapOf(ref.analysis);
    const Diagnostic& diagnostic = *ref.diagnostic;
    auto related = [&](Span span, const std::string& message, std::vector<RelatedInformation>& list) {
      if (std::optional<Location> location = LocationOf(document, analysis, map, span))
        list.push_back({*location, message});
    };
    const DiagnosticInfo& info = Info(diagnostic.kind);
    PublishedDiagnostic d;
    d.severity = info.severity == Severity::Error     ? DiagnosticSeverity::Error
                 : info.severity == Severity::Warning ? DiagnosticSeverity::Warning
                                                      : DiagnosticSeverity::Information;
    d.code = std::string(info.id);
    d.message = diagnostic.message;
    if (diagnostic.span.file == analysis.file) {
      std::optional<Range> range = DocumentRange(document, map, diagnostic.span);
      if (!range) continue;  // cannot happen: Document::Refresh checks again what moved
      d.range = *range;
    } else if (diagnostic.span.valid()) {
      const SourceBuffer& buffer = analysis.sources.Get(diagnostic.span.file);
      LineCol at = buffer.Locate(diagnostic.span.begin);
      d.message = "in " + std::string(buffer.name()) + ":" + std::to_string(at.line) + ":" + std::to_string(at.column) +
                  ": " + d.message;
      d.range = import_of(buffer.name()).value_or(Range{});
      related(diagnostic.span, diagnostic.message, d.related);
    }
    for (const Note& note : diagnostic.notes) related(note.span, note.message, d.related);
    out.push_back(std::move(d));
  }
  if (!now.internal_error.empty()) {
    out.push_back({Range{}, DiagnosticSeverity::Error, "", "internal compiler error: " + now.internal_error, {}});
  }
  return out;
}

// ---- Hover ----

// The kernel tile a hovered expression or binder is (docs/layouts.md, "Kernel tiles"): its
// layout variable. An expression that makes a tile is that tile; a name is the tile of its
// nearest binding before it (a loop's carried value inside the loop, its result after); a `let`'s
// binder is the tile of the value it binds.
std::optional<std::int32_t> TileVarAt(const core::Module& module, const core::Def& def, const CoreNode& node) {
  if (!def.kernel) return std::nullopt;
  const core::TileLayouts& tiles = def.kernel->tiles;
  std::optional<std::int32_t> found;
  auto index = [](std::size_t i) { return static_cast<std::int32_t>(i); };
  if (node.is_pattern) {
    const core::Pattern& p = module.Get(node.pattern);
    const auto* name = std::get_if<core::pattern::Name>(&p.node);
    if (!name) return std::nullopt;
    for (std::size_t i = 0; i < tiles.vars.size(); ++i) {
      const core::TileLayoutVar& v = tiles.vars[i];
      if (v.name != name->name || v.loop || v.span.begin < p.span.end) continue;
      if (!found || v.span.begin < tiles.vars[static_cast<std::size_t>(*found)].span.begin) found = index(i);
    }
    return found;
  }
  const core::Expr& e = module.Get(node.expr);
  for (std::size_t i = 0; i < tiles.vars.size(); ++i)
    if (tiles.vars[i].expr == node.expr && !tiles.vars[i].carried) return index(i);
  const auto* local = std::get_if<core::expr::Local>(&e.node);
  if (!local) return std::nullopt;
  for (std::size_t i = 0; i < tiles.vars.size(); ++i) {
    const core::TileLayoutVar& v = tiles.vars[i];
    if (v.name != local->name || v.span.begin > e.span.begin) continue;
    // A loop's state: the carried value inside the loop, its result after it.
    if (v.loop && v.carried != (e.span.begin < v.span.end)) continue;
    if (!found || v.span.begin >= tiles.vars[static_cast<std::size_t>(*found)].span.begin) found = index(i);
  }
  return found;
}

// A tile's layout variable and the constraints that mention it, as `weft check --layouts` prints
// them.
std::string TileLayoutHover(const SourceManager& sources, const core::TileLayouts& tiles, std::int32_t var) {
  std::string lines = check::TileVarLine(sources, tiles, var);
  for (const core::TileConstraint& c : tiles.constraints)
    if (c.a == var || c.b == var) lines += "\n" + check::TileConstraintLine(sources, tiles, c);
  return "\n\nits layout, solved per target (`weft explain`):\n\n" + CodeBlock(lines);
}

std::optional<HoverText> Hover(const Document& document, std::uint32_t offset, bool layouts) {
  Cursor cursor(document, offset);
  const Analysis& now = cursor.now();
  if (cursor.token) {
    // A definition's name: its signature (known even when its body has errors).
    if (const syntax::Decl* decl = DeclNamed(now, cursor.token->span)) {
      std::optional<std::uint32_t> begin = cursor.current().map.ToNew(decl->span.begin);
      std::optional<Checked> checked = begin ? CheckedDecl(cursor.views, DeclName(*decl)->text, *begin) : std::nullopt;
      std::optional<Range> range = cursor.TokenRange();
      if (checked && range) {
        return HoverText{CodeBlock(Signature(checked->view->analysis->result->vars, *checked->def, layouts)), *range};
      }
    }
    // A size or shape name in a type, a size binder or a `where` condition, or a size as a value.
    if (cursor.OnIdentifier()) {
      std::optional<SizeName> size = SizeNameAt(now, cursor.token->span);
      if (!size) size = SizeValueAt(now, cursor.token->span);
      std::optional<Range> range = cursor.TokenRange();
      if (size && range) return HoverText{SizeHover(cursor, *size), *range};
    }
  }

  if (std::optional<Point> point = ReadablePoint(cursor.views, offset)) {
    const Analysis& analysis = *point->view->analysis;
    CoreReader reader(analysis, *point->def);
    std::optional<CoreNode> node = reader.Innermost(point->token->span.begin, point->token->span.end);
    if (!node) return std::nullopt;
    const VarStore& vars = analysis.result->vars;
    core::TypePrinter printer(vars, layouts);
    Span span;
    std::string text, extra;
    if (node->is_pattern) {
      const core::Pattern& p = reader.module().Get(node->pattern);
      span = p.span;
      const auto* name = std::get_if<core::pattern::Name>(&p.node);
      text = (name ? name->name : OneLine(analysis.sources.Text(p.span))) + " : " + printer.PrintWithClasses(p.type);
    } else {
      const core::Expr& e = reader.module().Get(node->expr);
      span = e.span;
      std::string label = std::visit(Overloaded{
                                         [](const core::expr::Local& local) { return local.name; },
                                         [](const core::expr::Global& global) { return global.name; },
                                         [](const core::expr::Builtin& builtin) { return builtin.name; },
                                         [&](const auto&) { return OneLine(analysis.sources.Text(e.span)); },
                                     },
                                     e.node);
      text = label + " : " + printer.PrintWithClasses(e.type);
      if (const auto* global = std::get_if<core::expr::Global>(&e.node)) {
        // The type at this use, and the definition's own when it is more general.
        if (const core::Def* def = reader.module().Find(global->name)) {
          std::string general = Signature(vars, *def, layouts);
          if (general != text) extra = "\n\ndefined as `" + general + "`";
        }
      }
    }
    if (layouts)
      if (std::optional<std::int32_t> var = TileVarAt(reader.module(), *point->def, *node))
        extra += TileLayoutHover(analysis.sources, point->def->kernel->tiles, *var);
    std::optional<Range> range = DocumentRange(document, point->view->map, span);
    if (!range) range = DocumentRange(document, point->view->map, point->token->span);
    if (!range) return std::nullopt;
    return HoverText{CodeBlock(text) + extra, *range};
  }

  // Step 3: the syntax tree of the current analysis.
  if (!cursor.OnIdentifier()) return std::nullopt;
  std::optional<Range> range = cursor.TokenRange();
  if (!range) return std::nullopt;
  std::string name = cursor.Text();
  if (const syntax::Def* def = SyntaxDefAt(now, cursor.token->span.begin)) {
    std::vector<SyntaxBinder> scope = SyntaxReader(now.ast).ScopeAt(*def, cursor.token->span.begin);
    for (auto it = scope.rbegin(); it != scope.rend(); ++it) {
      if (it->name != name) continue;
      if (!it->annotation.valid()) return std::nullopt;  // a local whose type is not known
      std::string type = OneLine(now.sources.Text(now.ast.Get(it->annotation).span));
      return HoverText{CodeBlock(name + " : " + type), *range};
    }
  }
  if (std::optional<Checked> global = GlobalDef(cursor.views, name)) {
    return HoverText{CodeBlock(Signature(global->view->analysis->result->vars, *global->def, layouts)), *range};
  }
  return std::nullopt;
}

// ---- Go to definition ----

std::optional<Location> Definition(const Document& document, std::uint32_t offset) {
  Cursor cursor(document, offset);
  const View& current = cursor.current();
  const Analysis& now = cursor.now();
  if (const Analysis::TokenSpan* token = cursor.token) {
    for (const syntax::Decl& decl : now.ast.decls()) {
      const auto* import = std::get_if<syntax::Import>(&decl.node);
      if (import && Holds(decl.span, token->span.begin, token->span.end)) {
        return Location{ImportPath(now, *import), Range{}};
      }
    }
    if (DeclNamed(now, token->span)) return LocationOf(document, current, token->span);
    // A size or shape name in a type, or a size as a value: where the declaration binds it.
    if (cursor.OnIdentifier()) {
      std::optional<SizeName> size = SizeNameAt(now, token->span);
      if (!size) size = SizeValueAt(now, token->span);
      if (size && size->binder.valid()) return LocationOf(document, current, size->binder);
    }
  }

  if (std::optional<Point> point = ReadablePoint(cursor.views, offset)) {
    const Analysis& analysis = *point->view->analysis;
    CoreReader reader(analysis, *point->def);
    std::optional<CoreNode> node = reader.Innermost(point->token->span.begin, point->token->span.end);
    if (!node) return std::nullopt;
    if (node->is_pattern) return LocationOf(document, *point->view, reader.module().Get(node->pattern).span);
    const core::Expr& e = reader.module().Get(node->expr);
    if (const auto* local = std::get_if<core::expr::Local>(&e.node)) {
      std::vector<Binder> scope = reader.ScopeAt(e.span.begin);
      const Binder* binder = Find(scope, local->name);
      if (!binder || !binder->span.valid()) return std::nullopt;
      return LocationOf(document, *point->view, binder->span);
    }
    if (const auto* global = std::get_if<core::expr::Global>(&e.node)) {
      return GlobalLocation(document, cursor.views, global->name);
    }
    if (const auto* size = std::get_if<core::expr::SizeValue>(&e.node)) {
      std::optional<core::SizeVarId> var = size->dim.AsVar();
      if (!var) return std::nullopt;
      Span origin = analysis.result->vars.info(*var).origin;
      return origin.valid() ? LocationOf(document, *point->view, origin) : std::nullopt;
    }
    return std::nullopt;
  }

  // Step 3: the syntax tree.
  if (!cursor.OnIdentifier()) return std::nullopt;
  std::string name = cursor.Text();
  if (const syntax::Def* def = SyntaxDefAt(now, cursor.token->span.begin)) {
    std::vector<SyntaxBinder> scope = SyntaxReader(now.ast).ScopeAt(*def, cursor.token->span.begin);
    for (auto it = scope.rbegin(); it != scope.rend(); ++it) {
      if (it->name == name) return LocationOf(document, current, it->span);
    }
  }
  return GlobalLocation(document, cursor.views, name);
}

// ---- Document symbols ----

std::vector<Symbol> Symbols(const Document& document) {
  std::vector<View> views = document.Views();
  const View& current = views.front();
  std::vector<Symbol> out;
  for (const syntax::Decl& decl : current.analysis->ast.decls()) {
    std::optional<Range> range = DocumentRange(document, current.map, decl.span);
    if (!range) continue;
    if (const auto* import = std::get_if<syntax::Import>(&decl.node)) {
      out.push_back({import->target, "import", SymbolKind::Module, *range, *range});
      continue;
    }
    const auto* def = std::get_if<syntax::Def>(&decl.node);
    const syntax::Name& name = *DeclName(decl);
    Symbol symbol{name.text, "", def && def->params.empty() ? SymbolKind::Variable : SymbolKind::Function, *range,
                  DocumentRange(document, current.map, name.span).value_or(*range)};
    std::optional<std::uint32_t> begin = current.map.ToNew(decl.span.begin);
    if (std::optional<Checked> checked = begin ? CheckedDecl(views, name.text, *begin) : std::nullopt) {
      core::TypePrinter printer(checked->view->analysis->result->vars);
      symbol.detail = printer.PrintWithClasses(checked->def->scheme.type);
      if (!def) symbol.detail = "kernel : " + symbol.detail;
    }
    out.push_back(std::move(symbol));
  }
  return out;
}

// ---- Completion ----

std::vector<CompletionItem> Complete(const Document& document, std::uint32_t offset) {
  std::vector<CompletionItem> out;
  std::set<std::string> seen;
  auto add = [&](const std::string& label, CompletionKind kind, const std::string& detail) {
    if (seen.insert(label).second) out.push_back({label, kind, detail});
  };

  // Locals: from the core IR where the definition checked, here or earlier (a position inside an
  // edit is read where the edit starts), else from the syntax tree.
  Cursor cursor(document, offset);
  bool found = false;
  for (const View& view : cursor.views) {
    std::uint32_t old = view.map.ToOldBefore(offset);
    const core::Def* def = DefAt(*view.analysis, old);
    if (!Readable(def)) continue;
    CoreReader reader(*view.analysis, *def);
    std::vector<Binder> scope = reader.ScopeAt(old);
    core::TypePrinter printer(view.analysis->result->vars);
    for (auto it = scope.rbegin(); it != scope.rend(); ++it) {
      add(it->name, CompletionKind::Variable, printer.PrintWithClasses(it->type));
    }
    found = true;
    break;
  }
  const View& current = cursor.current();
  const Analysis& now = cursor.now();
  std::uint32_t here = cursor.Before();
  if (!found) {
    if (const syntax::Def* def = SyntaxDefAt(now, here)) {
      std::vector<SyntaxBinder> scope = SyntaxReader(now.ast).ScopeAt(*def, here);
      for (auto it = scope.rbegin(); it != scope.rend(); ++it) {
        std::string type = it->annotation.valid() ? OneLine(now.sources.Text(now.ast.Get(it->annotation).span)) : "";
        add(it->name, CompletionKind::Variable, type);
      }
    }
  }

  // The definitions above the position (definitions are checked in order: one further down is not
  // in scope yet), then the imported ones.
  auto add_def = [&](const std::string& name, const Checked* checked) {
    if (!checked) return add(name, CompletionKind::Function, "");
    const core::Def& def = *checked->def;
    core::TypePrinter printer(checked->view->analysis->result->vars);
    bool function = std::holds_alternative<core::FunctionType>(def.scheme.type->node);
    add(name, function ? CompletionKind::Function : CompletionKind::Variable,
        printer.PrintWithClasses(def.scheme.type));
  };
  for (const syntax::Decl& decl : now.ast.decls()) {
    const syntax::Name* name = DeclName(decl);
    if (!name || decl.span.end >= here) continue;
    std::optional<std::uint32_t> begin = current.map.ToNew(decl.span.begin);
    std::optional<Checked> checked = begin ? CheckedDecl(cursor.views, name->text, *begin) : std::nullopt;
    add_def(name->text, checked ? &*checked : nullptr);
  }
  if (now.result) {
    for (const core::Def& def : now.result->module.defs()) {
      if (def.span.file == now.file) continue;
      Checked checked{&current, &def};
      add_def(def.name, &checked);
    }
  }
  for (const std::string& name : check::BuiltinNames()) add(name, CompletionKind::Function, "built-in");
  // A kernel's operations, in a kernel's body.
  const syntax::Decl* decl = DeclAt(now, Span{now.file, here, here});
  if (decl && std::holds_alternative<syntax::KernelDecl>(decl->node)) {
    for (const std::string& name : check::KernelOpNames()) add(name, CompletionKind::Function, "kernel operation");
  }
#define WEFT_TOKEN(Name, Description)
#define WEFT_KEYWORD(Name, Spelling) add(Spelling, CompletionKind::Keyword, "keyword");
#define WEFT_DTYPE_KEYWORD(Name, Spelling) add(Spelling, CompletionKind::Keyword, "element type");
#include "syntax/token_kinds.def"
  return out;
}

}  // namespace weft::lsp
