// `weft repl`; see repl.h for how an input is read and run, and docs/repl.md for what a user sees.
#include "driver/repl.h"

#include <histedit.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "base/stack.h"
#include "check/check.h"
#include "core/type_printer.h"
#include "diagnostics/render.h"
#include "driver/explain_command.h"
#include "driver/frontend.h"
#include "driver/kernel_path.h"
#include "driver/layout_command.h"
#include "interp/interpreter.h"
#include "syntax/lexer.h"
#include "syntax/parser.h"
#include "synth/synthesize.h"
#include "tile/lower.h"

namespace weft::driver {
namespace {

using syntax::TokenKind;

// ---- Reading: when is an input finished ----

std::string_view Trim(std::string_view text) {
  std::size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return {};
  std::size_t last = text.find_last_not_of(" \t\r\n");
  return text.substr(first, last - first + 1);
}

// The text with each run of white space (newlines too) made one space.
std::string OneLine(std::string_view text) {
  std::string out;
  for (char c : Trim(text)) {
    bool space = c == ' ' || c == '\t' || c == '\n' || c == '\r';
    if (!space) {
      out += c;
    } else if (out.back() != ' ') {
      out += ' ';
    }
  }
  return out;
}

// A string as weft writes it: in double quotes, with `"` and `\` escaped.
std::string StringLiteral(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c == '\n' ? std::string("\\n") : std::string(1, c);
  }
  return out + "\"";
}

// Tokens after which an input cannot end: binary operators, `=`, `->`, `,`, `:`, and the keywords
// that must be followed by more (`let` ... `in`, `if` ... `then` ... `else`, `def`, ...).
bool ContinuesAfter(TokenKind kind) {
  switch (kind) {
    case TokenKind::Equal:
    case TokenKind::Arrow:
    case TokenKind::PipeRight:
    case TokenKind::OrOr:
    case TokenKind::AndAnd:
    case TokenKind::EqualEqual:
    case TokenKind::NotEqual:
    case TokenKind::Less:
    case TokenKind::LessEqual:
    case TokenKind::Greater:
    case TokenKind::GreaterEqual:
    case TokenKind::Plus:
    case TokenKind::Minus:
    case TokenKind::Star:
    case TokenKind::Slash:
    case TokenKind::Percent:
    case TokenKind::At:
    case TokenKind::Comma:
    case TokenKind::Colon:
    case TokenKind::DotDot:
    case TokenKind::Def:
    case TokenKind::Kernel:
    case TokenKind::Let:
    case TokenKind::In:
    case TokenKind::Fn:
    case TokenKind::If:
    case TokenKind::Then:
    case TokenKind::Else:
    case TokenKind::Loop:
    case TokenKind::For:
    case TokenKind::With:
    case TokenKind::Do:
    case TokenKind::Pipeline:
    case TokenKind::Where:
    case TokenKind::Grid:
    case TokenKind::Threads:
    case TokenKind::Import:
    case TokenKind::Cast:
      return true;
    default:
      return false;
  }
}

struct CommandInfo {
  const char* name;
  const char* args;
  const char* help;
};

// In the order prefixes resolve: `:l` is `:load`, `:la` `:layout`.
constexpr CommandInfo kReplCommands[] = {
    {"type", "EXPR", "EXPR's most general type; nothing is evaluated (`:type --layouts EXPR`: with layouts)"},
    {"load", "FILE", "check FILE and add its definitions (and its imports')"},
    {"reload", "", "load the files again, then redo the definitions made here"},
    {"browse", "", "the definitions in scope (loaded, imported, made here), with types"},
    {"layout", "[--table] [--grid] EXPR", "evaluate a layout-algebra expression as `weft layout` does"},
    {"explain", "NAME [sm_80|sm_90a]",
     "kernel NAME's layouts and instructions, as `weft explain` shows them (sm_80 unless named)"},
    {"help", "", "this text"},
    {"quit", "", "end the session (so does the end of input, Ctrl-D)"},
    {"!", "COMMAND", "run a shell command"},
};

const CommandInfo* FindCommand(std::string_view name) {
  if (name.empty()) return nullptr;
  for (const CommandInfo& info : kReplCommands) {
    if (std::string_view(info.name) == name) return &info;
  }
  for (const CommandInfo& info : kReplCommands) {
    if (std::string_view(info.name).substr(0, name.size()) == name) return &info;
  }
  return nullptr;
}

enum class InputKind { Declarations, Let, Expression };

InputKind KindOf(const std::vector<syntax::Token>& tokens) {
  switch (tokens.front().kind) {
    case TokenKind::Def:
    case TokenKind::Kernel:
    case TokenKind::Import:
      return InputKind::Declarations;
    case TokenKind::Let:
      return InputKind::Let;
    default:
      return InputKind::Expression;
  }
}

// The text of a top-level `let x = e` read as the definition `def x = e` (same length, so spans
// carry over).
std::string LetAsDef(std::string_view text, const syntax::Token& let) {
  std::string rewritten(text);
  rewritten.replace(let.span.begin, 3, "def");
  return rewritten;
}

// Whether parsing `text` as the input kind fails only at its end: then the input goes on.
bool ErrorsOnlyAtEnd(const Diagnostics& diagnostics, std::uint32_t end) {
  bool any = false;
  for (const Diagnostic& d : diagnostics.all()) {
    if (Info(d.kind).severity != Severity::Error) continue;
    if (d.span.begin < end) return false;
    any = true;
  }
  return any;
}

}  // namespace

bool IsComplete(std::string_view input) {
  std::string_view text = Trim(input);
  if (text.empty()) return true;
  if (text.front() == ':') {
    // Commands are one line, but for `:type EXPR`, whose EXPR may go on.
    std::size_t end = text.find_first_of(" \t\n");
    if (end == std::string_view::npos) return true;
    const CommandInfo* command = FindCommand(text.substr(1, end - 1));
    return command == nullptr || std::string_view(command->name) != "type" || IsComplete(text.substr(end));
  }
  SourceManager sources;
  Diagnostics diagnostics;
  FileId file = sources.Add("<input>", std::string(input));
  std::vector<syntax::Token> tokens = syntax::Lex(sources, file, diagnostics);
  for (const Diagnostic& d : diagnostics.all()) {
    if (d.kind == DiagnosticKind::UnterminatedComment) return false;
  }
  if (diagnostics.has_errors() || tokens.size() == 1) return true;  // a lexical error, or only comments
  int depth = 0;
  for (const syntax::Token& token : tokens) {
    if (token.kind == TokenKind::LParen || token.kind == TokenKind::LBracket || token.kind == TokenKind::IndexBracket)
      ++depth;
    if (token.kind == TokenKind::RParen || token.kind == TokenKind::RBracket) --depth;
  }
  if (depth > 0) return false;
  if (ContinuesAfter(tokens[tokens.size() - 2].kind)) return false;

  std::uint32_t end = tokens.back().span.begin;
  auto parse_fails_at_end = [&](const std::string& source, bool as_expression) {
    SourceManager scratch;
    Diagnostics errors;
    FileId id = scratch.Add("<input>", source);
    if (as_expression) {
      syntax::ParseExpression(scratch, id, errors);
    } else {
      syntax::Parse(scratch, id, errors);
    }
    return ErrorsOnlyAtEnd(errors, end);
  };
  switch (KindOf(tokens)) {
    case InputKind::Declarations:
      return !parse_fails_at_end(std::string(input), false);
    case InputKind::Expression:
      return !parse_fails_at_end(std::string(input), true);
    case InputKind::Let:
      // `let x = 1` is a definition; `let x = 1 in` or `let x = if c` goes on.
      return !(parse_fails_at_end(std::string(input), true) &&
               parse_fails_at_end(LetAsDef(input, tokens.front()), false));
  }
  return true;
}

// ---- Completion ----

namespace {

bool IsIdentifierChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '\'';
}

// A name a user can write (not one of the REPL's own, such as `<it:3>`).
bool IsUserName(std::string_view name) {
  return !name.empty() && (std::isalpha(static_cast<unsigned char>(name[0])) != 0 || name[0] == '_');
}

std::vector<std::string> SortedUnique(std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

// `.weft` files and folders whose path starts with `prefix`.
std::vector<std::string> CompleteFile(std::string_view prefix) {
  std::string text(prefix);
  std::size_t slash = text.rfind('/');
  std::string dir = slash == std::string::npos ? "" : text.substr(0, slash + 1);
  std::string base = slash == std::string::npos ? text : text.substr(slash + 1);
  std::vector<std::string> out;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir.empty() ? "." : dir, error)) {
    std::string name = entry.path().filename().string();
    if (name.rfind(base, 0) != 0 || (name[0] == '.' && (base.empty() || base[0] != '.'))) continue;
    std::error_code ignored;
    if (entry.is_directory(ignored)) {
      out.push_back(dir + name + "/");
    } else if (entry.path().extension() == ".weft") {
      out.push_back(dir + name);
    }
  }
  return SortedUnique(std::move(out));
}

}  // namespace

Completion Complete(std::string_view line, std::size_t cursor, const std::vector<std::string>& names) {
  std::string_view before = line.substr(0, std::min(cursor, line.size()));
  std::size_t first = before.find_first_not_of(" \t");
  if (first != std::string_view::npos && before[first] == ':') {
    std::size_t space = before.find_first_of(" \t", first);
    if (space == std::string_view::npos) {
      std::string_view word = before.substr(first + 1);
      Completion completion{first, {}};
      for (const CommandInfo& info : kReplCommands) {
        if (std::string_view(info.name).substr(0, word.size()) == word)
          completion.candidates.push_back(std::string(":") + info.name);
      }
      completion.candidates = SortedUnique(std::move(completion.candidates));
      return completion;
    }
    const CommandInfo* command = FindCommand(before.substr(first + 1, space - first - 1));
    if (command != nullptr && std::string_view(command->name) == "load") {
      std::size_t start = before.find_first_not_of(" \t", space);
      if (start == std::string_view::npos) start = before.size();
      return {start, CompleteFile(before.substr(start))};
    }
    if (command == nullptr || std::string_view(command->name) != "type") return {before.size(), {}};
  }
  std::size_t start = before.size();
  while (start > 0 && IsIdentifierChar(before[start - 1])) --start;
  while (start < before.size() && before[start] == '\'') ++start;  // `'a` is a type variable
  std::string_view word = before.substr(start);
  Completion completion{start, {}};
  if (word.empty() || std::isdigit(static_cast<unsigned char>(word[0])) != 0) return completion;
  for (const std::string& name : names) {
    if (name.size() >= word.size() && std::string_view(name).substr(0, word.size()) == word)
      completion.candidates.push_back(name);
  }
  completion.candidates = SortedUnique(std::move(completion.candidates));
  return completion;
}

std::string CommonPrefix(const std::vector<std::string>& candidates) {
  if (candidates.empty()) return "";
  std::string prefix = candidates.front();
  for (const std::string& candidate : candidates) {
    std::size_t n = 0;
    while (n < prefix.size() && n < candidate.size() && prefix[n] == candidate[n]) ++n;
    prefix.resize(n);
  }
  return prefix;
}

// ---- The session ----

struct Repl::State {
  State(std::ostream& out, std::ostream& err, ReplConfig config) : out(out), err(err), config(std::move(config)) {
    NewSession();
  }

  // A loaded file, or declarations made at the prompt: what `:reload` does again, in order.
  struct LogEntry {
    std::string file;                  // a loaded file, or
    const syntax::Ast* ast = nullptr;  // declarations typed at the prompt that checked
  };

  std::ostream& out;
  std::ostream& err;
  ReplConfig config;
  SourceManager sources;
  Diagnostics diagnostics;
  std::size_t reported = 0;  // diagnostics already rendered
  std::unique_ptr<check::Session> session;
  std::unique_ptr<interp::Interpreter> interpreter;  // over the session's module, which grows
  // Every tree given to the session, kept alive with it (and replayed by :reload).
  std::vector<std::unique_ptr<syntax::Ast>> asts;
  std::vector<LogEntry> log;
  int inputs = 0;
  int results = 0;
  std::string last_result;  // the hidden name that holds the last good `it`, or empty

  void NewSession() {
    check::CheckOptions options;
    options.stdlib_dir = config.stdlib_dir;
    options.host_anywhere = true;  // the prompt is a program's `main`
    interpreter.reset();
    session = std::make_unique<check::Session>(sources, diagnostics, options);
    interp::InterpreterOptions run_options;
    run_options.args = {"repl"};
    run_options.out = &out;  // what `print` writes comes in order with the results
    interpreter = std::make_unique<interp::Interpreter>(session->module(), session->vars(), run_options);
    last_result.clear();
  }

  // Renders the diagnostics not shown yet (after what was written to `out`).
  void Report() {
    out.flush();
    for (; reported < diagnostics.all().size(); ++reported)
      err << Render(sources, diagnostics.all()[reported], config.color);
    err.flush();
  }

  void Error(const std::string& message) {
    out.flush();
    err << "error: " << message << "\n";
    err.flush();
  }

  FileId AddInput(std::string text) { return sources.Add("<repl:" + std::to_string(++inputs) + ">", std::move(text)); }

  syntax::Ast& Keep(syntax::Ast ast) {
    asts.push_back(std::make_unique<syntax::Ast>(std::move(ast)));
    return *asts.back();
  }

  std::vector<check::CheckedDef> Add(const syntax::Ast& ast) { return session->Add(ast); }

  // Appends `def name params = body` to `ast`.
  static void AddDef(syntax::Ast& ast, const std::string& name, Span span, std::vector<syntax::Param> params,
                     syntax::ExprId body) {
    syntax::Def def;
    def.name = syntax::Name{name, span};
    def.params = std::move(params);
    def.body = body;
    ast.decls().push_back(syntax::Decl{span, std::move(def)});
  }

  std::string TypeText(const core::TypeRef& type, bool layouts = false) const {
    core::TypePrinter printer(session->vars(), layouts);
    return printer.PrintWithClasses(type);
  }

  // ---- Inputs ----

  bool Run(const std::string& input) {
    std::string_view text = Trim(input);
    if (text.empty()) return true;
    if (text.front() == ':') return RunCommand(text.substr(1));
    Diagnostics lexical;
    SourceManager scratch;
    std::vector<syntax::Token> tokens = syntax::Lex(scratch, scratch.Add("<input>", input), lexical);
    if (tokens.size() == 1 && !lexical.has_errors()) return true;  // only comments
    FileId file = AddInput(input);
    switch (KindOf(tokens)) {
      case InputKind::Declarations:
        Declarations(file);
        break;
      case InputKind::Let:
        Let(file, tokens.front());
        break;
      case InputKind::Expression:
        Expression(file);
        break;
    }
    Report();
    return true;
  }

  // Parses `file`; returns the tree, or nothing when it has errors (then nothing is checked).
  std::optional<syntax::Ast> ParseFile(FileId file) {
    int before = diagnostics.error_count();
    syntax::Ast ast = syntax::Parse(sources, file, diagnostics);
    if (diagnostics.error_count() != before) return std::nullopt;
    return ast;
  }

  void Declarations(FileId file) {
    std::optional<syntax::Ast> parsed = ParseFile(file);
    if (parsed) Define(Keep(std::move(*parsed)));
  }

  // Checks declarations typed at the prompt; prints the signature of each that checked, and
  // evaluates those that are values, so that a run-time error shows where the value is defined.
  void Define(const syntax::Ast& ast) {
    std::size_t first = session->module().defs().size();
    std::vector<check::CheckedDef> defs = Add(ast);
    bool all_ok = true;
    for (const check::CheckedDef& def : defs) {
      if (def.ok) out << session->Signature(def) << "\n";
      all_ok = all_ok && def.ok;
    }
    if (all_ok) log.push_back({"", &ast});
    const std::vector<core::Def>& added = session->module().defs();
    for (std::size_t i = first; i < added.size(); ++i) {
      if (added[i].ok && added[i].params.empty() && added[i].body.valid()) Evaluate(added[i]);
    }
  }

  // The value of a definition without parameters, or nothing after reporting a run-time error.
  std::optional<interp::ValueRef> Evaluate(const core::Def& def) {
    std::optional<interp::RuntimeError> failure;
    std::optional<interp::ValueRef> value;
    RunWithDeepStack([&] {
      interp::EvalResult<interp::ValueRef> result = interpreter->Evaluate(def);
      if (result) {
        value = *result;
      } else {
        failure = result.error();
      }
    });
    if (failure) diagnostics.Emit(DiagnosticKind::RuntimeFailure, failure->span, failure->message);
    return value;
  }

  void Let(FileId file, const syntax::Token& let) {
    // `let p = e in b` is an expression; `let x = e` alone defines `x`. The definition's text is the
    // input with `let` spelled `def`, parsed under the input's own file id (the SourceManager below
    // is padded to it), so that its diagnostics show what was typed.
    {
      Diagnostics probe;
      syntax::ParseExpression(sources, file, probe);
      if (!probe.has_errors()) return Expression(file);
    }
    SourceManager rewritten;
    for (std::uint32_t i = 0; i < file.index; ++i) rewritten.Add("", "");
    FileId same = rewritten.Add(std::string(sources.Get(file).name()), LetAsDef(sources.Get(file).text(), let));
    WEFT_CHECK(same == file);
    int before = diagnostics.error_count();
    syntax::Ast ast = syntax::Parse(rewritten, same, diagnostics);
    if (diagnostics.error_count() == before) Define(Keep(std::move(ast)));
  }

  void Expression(FileId file) {
    int before = diagnostics.error_count();
    syntax::ExprParse parsed = syntax::ParseExpression(sources, file, diagnostics);
    if (diagnostics.error_count() != before || !parsed.expr.valid()) return;
    syntax::Ast& ast = Keep(std::move(parsed.ast));
    Span span = ast.Get(parsed.expr).span;
    AddDef(ast, "it", span, {}, parsed.expr);
    std::vector<check::CheckedDef> defs = Add(ast);
    if (defs.empty() || !defs.front().ok) {
      RestoreIt(span);
      return;
    }
    // Remember this `it` under a name of its own, so that a later failed expression can restore it.
    std::string name = "<it:" + std::to_string(++results) + ">";
    syntax::Ast& alias = Keep(syntax::Ast(file));
    AddDef(alias, name, span, {}, alias.Add(syntax::Expr{span, syntax::expr::Var{"it"}}));
    Add(alias);
    const core::Def* it = session->module().Find("it");
    std::optional<interp::ValueRef> value = it ? Evaluate(*it) : std::nullopt;
    if (!value) {
      RestoreIt(span);
      return;
    }
    last_result = name;
    Evaluate(*session->module().Find(name));  // remembered, as `it` is
    Show(**value, defs.front());
  }

  // After an expression with errors, `it` is again the last good result (or stays undefined).
  void RestoreIt(Span span) {
    if (last_result.empty()) return;
    syntax::Ast& alias = Keep(syntax::Ast(span.file));
    AddDef(alias, "it", span, {}, alias.Add(syntax::Expr{span, syntax::expr::Var{last_result}}));
    Add(alias);  // it checked before: no diagnostics
  }

  // `VALUE : TYPE`, the type after the value's last line; nothing for `()` (what `print` returns).
  void Show(const interp::Value& value, const check::CheckedDef& def) {
    core::TypeRef type = session->vars().Resolve(def.scheme.type);
    const auto* tuple = std::get_if<core::TupleType>(&type->node);
    if (tuple != nullptr && tuple->elements.empty()) return;
    std::string text = interp::Interpreter::Show(value);
    while (!text.empty() && text.back() == '\n') text.pop_back();
    if (std::holds_alternative<core::StringType>(type->node)) text = StringLiteral(text);
    out << text << " : " << TypeText(type) << "\n";
  }

  // ---- Commands ----

  bool RunCommand(std::string_view line) {
    std::size_t name_end = line.empty() || line[0] != '!' ? line.find_first_of(" \t\n") : 1;
    std::string_view name = line.substr(0, name_end);
    std::string_view rest = name_end == std::string_view::npos ? "" : Trim(line.substr(name_end));
    const CommandInfo* command = FindCommand(name);
    if (command == nullptr) {
      Error("unknown command `:" + std::string(name) + "`; `:help` lists the commands");
      return true;
    }
    std::string_view which = command->name;
    bool needs_argument = *command->args != '\0' && which != "layout";
    if (needs_argument && rest.empty()) {
      Error("`:" + std::string(which) + "` needs " + command->args);
      return true;
    }
    if (!needs_argument && !rest.empty() && which != "layout") {
      Error("`:" + std::string(which) + "` takes no argument");
      return true;
    }
    if (which == "quit") return false;
    if (which == "help") {
      Help();
    } else if (which == "type") {
      Type(std::string(rest));
    } else if (which == "load") {
      Load(std::string(rest), "loaded");
    } else if (which == "reload") {
      Reload();
    } else if (which == "browse") {
      Browse();
    } else if (which == "layout") {
      Layout(rest);
    } else if (which == "explain") {
      Explain(rest);
    } else if (which == "!") {
      out.flush();
      err.flush();
      std::fflush(stdout);
      [[maybe_unused]] int status = std::system(std::string(rest).c_str());
    }
    Report();
    return true;
  }

  void Help() {
    out << "Type an expression to evaluate it and see its type (it is then `it`), a declaration (`def`,\n"
           "`kernel`, `import`) or `let x = e` to define a name, or a command:\n";
    auto usage = [](const CommandInfo& info) {
      return std::string(":") + info.name + (*info.args ? std::string(" ") + info.args : "");
    };
    std::size_t width = 0;
    for (const CommandInfo& info : kReplCommands) width = std::max(width, usage(info).size());
    for (const CommandInfo& info : kReplCommands)
      out << "  " << usage(info) << std::string(width + 2 - usage(info).size(), ' ') << info.help << "\n";
    out << "A command may be shortened to a prefix (`:t`, `:l`, `:r`, `:q`). Tab completes names and commands.\n"
           "An unfinished input (open bracket, trailing operator, `in`, `then`...) continues on the next line;\n"
           "a blank line ends it.\n";
  }

  void Type(std::string text) {
    // `:type --layouts EXPR`: with each tensor's layout (docs/layouts.md, "Layouts in types"). An
    // expression cannot start with `--`, which would begin a comment.
    constexpr std::string_view kLayouts = "--layouts";
    bool layouts = false;
    if (std::string_view t = Trim(text);
        t.starts_with(kLayouts) &&
        (t.size() == kLayouts.size() || std::isspace(static_cast<unsigned char>(t[kLayouts.size()])))) {
      layouts = true;
      text = std::string(Trim(t.substr(kLayouts.size())));
      if (text.empty()) {
        Error("`:type --layouts` needs EXPR");
        return;
      }
    }
    FileId file = AddInput(text);  // numbered as every input is, used or not
    // A name defined in this session is shown as `weft check` and `:browse` show it, `where` clause
    // included: checked again as an expression, its clause would be an obligation that nothing
    // discharges (E0221).
    if (const core::Def* def = DefinitionInScope(Trim(text))) {
      out << SignatureOf(*def, layouts) << (def->ok ? "" : "  -- has errors") << "\n";
      if (layouts && def->kernel) out << check::TileLayoutLines(sources, def->kernel->tiles);
      return;
    }
    int before = diagnostics.error_count();
    syntax::ExprParse parsed = syntax::ParseExpression(sources, file, diagnostics);
    if (diagnostics.error_count() != before || !parsed.expr.valid()) return;
    // Checked as `def <type> _ = EXPR`, a function, so that its type is generalized (as `:type` in
    // GHCi shows `Num a => a` for `1`); its result is EXPR's type.
    syntax::Ast& ast = Keep(std::move(parsed.ast));
    Span span = ast.Get(parsed.expr).span;
    syntax::PatternId wildcard = ast.Add(syntax::Pattern{span, syntax::pattern::Wildcard{}});
    AddDef(ast, "<type>", span, {syntax::Param{wildcard, false, span}}, parsed.expr);
    std::vector<check::CheckedDef> defs = Add(ast);
    if (defs.empty() || !defs.front().ok) return;
    core::TypeRef type = session->vars().Resolve(defs.front().scheme.type);
    const auto& function = std::get<core::FunctionType>(type->node);
    out << OneLine(text) << " : " << TypeText(function.result, layouts) << "\n";
  }

  // `:explain NAME [TARGET]`: lowers kernel NAME (loaded or defined here) to the tile IR and prints
  // its synthesized plan (synth/explain.h), or the errors that say why there is none.
  void Explain(std::string_view rest) {
    std::vector<std::string> words;
    for (std::size_t i = 0; i < rest.size();) {
      std::size_t end = rest.find_first_of(" \t", i);
      if (end == std::string_view::npos) end = rest.size();
      if (end > i) words.emplace_back(rest.substr(i, end - i));
      i = end + 1;
    }
    ExplainOptions options;
    options.sources = &sources;
    std::string name, target_text = "sm_80";
    for (const std::string& w : words) {
      if (w == "--no-timings")
        options.timings = false;
      else if (name.empty())
        name = w;
      else
        target_text = w;
    }
    auto target = synth::ParseTarget(target_text);
    if (!target) {
      Error("unknown target `" + target_text + "`; expected `sm_80` or `sm_90a`");
      return;
    }
    const core::Def* def = session->module().Find(std::string(name));
    if (def == nullptr || !tile::IsKernel(*def)) {
      Error("`" + std::string(name) + "` is not a kernel in scope");
      return;
    }
    if (!def->ok) return;
    KernelPath path =
        CompileKernel(session->module(), session->vars(), *def, *target, sources, KernelPhase::Plan, diagnostics);
    if (path.plan) out << ExplainKernel(*path.kernel, *path.plan, options);
  }

  // Loads a file (again, for :reload); prints `VERB PATH (N definitions)`.
  void Load(const std::string& path, const char* verb) {
    bool known = std::any_of(log.begin(), log.end(), [&](const LogEntry& entry) { return entry.file == path; });
    std::string reason;
    std::optional<FileId> file = sources.Load(path, reason);
    if (!file) {
      diagnostics.Emit(DiagnosticKind::CannotReadFile, Span{}, path, reason);
      return;
    }
    if (!known) log.push_back({path, nullptr});  // even with errors: fix it, then :reload
    std::optional<syntax::Ast> parsed = ParseFile(*file);
    if (!parsed) return;
    std::vector<check::CheckedDef> defs = Add(Keep(std::move(*parsed)));
    std::size_t broken = std::count_if(defs.begin(), defs.end(), [](const auto& def) { return !def.ok; });
    Report();  // the errors, then the summary
    out << verb << " " << path << " (" << defs.size() << (defs.size() == 1 ? " definition" : " definitions");
    if (broken > 0) out << ", " << broken << " with errors";
    out << ")\n";
  }

  // Starts a new session and does again, in order, every load and every prompt definition that
  // checked when it was typed (results, `it` and `:type`s are not kept, as in GHCi).
  void Reload() {
    if (std::none_of(log.begin(), log.end(), [](const LogEntry& entry) { return !entry.file.empty(); })) {
      Error("no file is loaded: nothing to reload");
      return;
    }
    NewSession();
    std::vector<LogEntry> entries = std::exchange(log, {});
    for (const LogEntry& entry : entries) {
      if (!entry.file.empty()) {
        Load(entry.file, "reloaded");
        continue;
      }
      // Kept even when it fails now (a file it uses is broken): it checked when it was typed, and
      // a later :reload after the fix brings it back.
      Add(*entry.ast);
      log.push_back(entry);
    }
  }

  // The latest definition of each name a user can write, in the order they were made.
  std::vector<const core::Def*> DefinitionsInScope() const {
    const std::vector<core::Def>& defs = session->module().defs();
    std::map<std::string_view, std::size_t> latest;
    for (std::size_t i = 0; i < defs.size(); ++i) latest[defs[i].name] = i;
    std::vector<const core::Def*> out;
    for (std::size_t i = 0; i < defs.size(); ++i) {
      if (latest[defs[i].name] == i && IsUserName(defs[i].name) && defs[i].name != "it") out.push_back(&defs[i]);
    }
    return out;
  }

  // The definition a user means by `name`, if it is one of DefinitionsInScope.
  const core::Def* DefinitionInScope(std::string_view name) const {
    for (const core::Def* def : DefinitionsInScope()) {
      if (def->name == name) return def;
    }
    return nullptr;
  }

  // `name : type`, with the classes and then the `where` clause, as `weft check` prints it.
  std::string SignatureOf(const core::Def& def, bool layouts = false) const {
    return session->Signature(check::CheckedDef{def.name, def.span, def.ok, def.scheme, {}, {}}, layouts);
  }

  void Browse() {
    std::vector<const core::Def*> defs = DefinitionsInScope();
    if (defs.empty()) out << "no definitions yet (the built-ins are in docs/language.md)\n";
    for (const core::Def* def : defs) out << SignatureOf(*def) << (def->ok ? "" : "  -- has errors") << "\n";
  }

  void Layout(std::string_view rest) {
    Options options;
    options.command = Command::Layout;
    options.color = config.color ? ColorMode::Always : ColorMode::Never;
    for (;;) {
      if (rest.substr(0, 7) == "--table" || rest.substr(0, 6) == "--grid") {
        bool table = rest.substr(0, 7) == "--table";
        (table ? options.table : options.grid) = true;
        rest = Trim(rest.substr(table ? 7 : 6));
      } else if (rest.substr(0, 5) == "--tv ") {
        rest = Trim(rest.substr(5));
        std::size_t end = rest.find_first_of(" \t");
        options.tv = std::string(rest.substr(0, end));
        rest = end == std::string_view::npos ? "" : Trim(rest.substr(end));
      } else {
        break;
      }
    }
    if (!rest.empty()) options.inputs.emplace_back(rest);
    if (options.tv ? !options.inputs.empty() || options.table || options.grid : options.inputs.empty()) {
      Error("usage: `:layout [--table] [--grid] EXPR` or `:layout --tv ATOM|list`");
      return;
    }
    out.flush();
    RunLayout(options, out, err);
  }

  std::vector<std::string> NamesInScope() const {
    std::vector<std::string> names;
    for (const core::Def* def : DefinitionsInScope()) names.push_back(def->name);
    if (!last_result.empty()) names.emplace_back("it");
    for (const std::string& name : check::BuiltinNames()) names.push_back(name);
#define WEFT_TOKEN(Name, Description)
#define WEFT_KEYWORD(Name, Spelling) names.emplace_back(Spelling);
#include "syntax/token_kinds.def"
    return SortedUnique(std::move(names));
  }
};

Repl::Repl(std::ostream& out, std::ostream& err, ReplConfig config)
    : state_(std::make_unique<State>(out, err, std::move(config))) {}

Repl::~Repl() = default;

bool Repl::Run(const std::string& input) {
  // A bug in weft should not end the session (and lose what was defined): it is reported, and the
  // next input runs in the session as the failed one left it.
  try {
    return state_->Run(input);
  } catch (const InternalError& error) {
    state_->Report();
    state_->err << "weft: internal compiler error: " << error.what() << "\n";
  }
  return true;
}

std::vector<std::string> Repl::NamesInScope() const {
  return state_->NamesInScope();
}

// ---- Reading lines ----

namespace {

constexpr const char* kPrompt = "weft> ";
constexpr const char* kContinuationPrompt = "...   ";

// libedit: line editing, history (one entry a line, saved when the session ends), tab completion.
class LineEditor {
 public:
  LineEditor(Repl& repl, std::string history_path) : repl_(repl), history_path_(std::move(history_path)) {
    editline_ = el_init("weft", stdin, stdout, stderr);
    history_ = history_init();
    history(history_, &event_, H_SETSIZE, 1000);
    history(history_, &event_, H_SETUNIQUE, 1);
    if (!history_path_.empty()) history(history_, &event_, H_LOAD, history_path_.c_str());
    el_set(editline_, EL_EDITOR, "emacs");
    el_set(editline_, EL_CLIENTDATA, this);
    el_set(editline_, EL_PROMPT, &LineEditor::Prompt);
    el_set(editline_, EL_HIST, history, history_);
    el_set(editline_, EL_ADDFN, "weft-complete", "complete a name or a command", &LineEditor::CompleteKey);
    el_set(editline_, EL_BIND, "^I", "weft-complete", nullptr);
    el_source(editline_, nullptr);  // the user's ~/.editrc
  }
  ~LineEditor() {
    if (!history_path_.empty()) history(history_, &event_, H_SAVE, history_path_.c_str());
    history_end(history_);
    el_end(editline_);
  }
  LineEditor(const LineEditor&) = delete;
  LineEditor& operator=(const LineEditor&) = delete;

  std::optional<std::string> Read(bool continuation) {
    prompt_ = continuation ? kContinuationPrompt : kPrompt;
    int count = 0;
    const char* line = el_gets(editline_, &count);
    if (line == nullptr || count <= 0) {
      std::fputs("\n", stdout);
      return std::nullopt;
    }
    std::string text(line, static_cast<std::size_t>(count));
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
    if (!Trim(text).empty()) history(history_, &event_, H_ENTER, text.c_str());
    return text;
  }

 private:
  static LineEditor& Self(EditLine* editline) {
    void* data = nullptr;
    el_get(editline, EL_CLIENTDATA, &data);
    return *static_cast<LineEditor*>(data);
  }

  static char* Prompt(EditLine* editline) { return const_cast<char*>(Self(editline).prompt_); }

  static unsigned char CompleteKey(EditLine* editline, int /*key*/) {
    LineEditor& self = Self(editline);
    const LineInfo* info = el_line(editline);
    std::string_view line(info->buffer, static_cast<std::size_t>(info->lastchar - info->buffer));
    auto cursor = static_cast<std::size_t>(info->cursor - info->buffer);
    Completion completion = Complete(line, cursor, self.repl_.NamesInScope());
    if (completion.candidates.empty()) return CC_ERROR;
    std::size_t typed = cursor - completion.start;
    std::string prefix = CommonPrefix(completion.candidates);
    if (completion.candidates.size() == 1) {
      std::string insert = prefix.substr(typed);
      if (prefix.back() != '/') insert += " ";
      el_insertstr(editline, insert.c_str());
      return CC_REFRESH;
    }
    if (prefix.size() > typed) {
      el_insertstr(editline, prefix.substr(typed).c_str());
      return CC_REFRESH;
    }
    std::string listing = "\n";
    std::size_t column = 0;
    for (const std::string& candidate : completion.candidates) {
      if (column > 0 && column + candidate.size() + 2 > 80) {
        listing += "\n";
        column = 0;
      }
      listing += candidate + "  ";
      column += candidate.size() + 2;
    }
    std::fputs((listing + "\n").c_str(), stdout);
    return CC_REDISPLAY;
  }

  Repl& repl_;
  std::string history_path_;
  EditLine* editline_ = nullptr;
  History* history_ = nullptr;
  HistEvent event_{};
  const char* prompt_ = kPrompt;
};

std::string HistoryPath() {
  if (const char* path = std::getenv("WEFT_HISTORY")) return path;
  if (const char* home = std::getenv("HOME")) return std::string(home) + "/.weft_history";
  return "";
}

}  // namespace

int RunRepl(const Options& options) {
  ReplConfig config;
  config.color = UseColor(options.color, STDERR_FILENO);
  config.stdlib_dir = StdlibDir();
  Repl repl(std::cout, std::cerr, config);
  for (const std::string& file : options.inputs) repl.Run(":load " + file);

  // Without a terminal (a script, a test) there are no prompts and no history: only results and
  // errors are written, so a transcript reads as the output of its input.
  std::optional<LineEditor> editor;
  if (isatty(STDIN_FILENO) != 0) {
    editor.emplace(repl, HistoryPath());
    std::cout << "weft repl: `:help` lists the commands, `:quit` or Ctrl-D ends the session\n";
  }
  auto read = [&](bool continuation) -> std::optional<std::string> {
    if (editor) return editor->Read(continuation);
    std::string line;
    if (!std::getline(std::cin, line)) return std::nullopt;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    return line;
  };
  std::string input;
  bool continuation = false;
  for (;;) {
    std::optional<std::string> line = read(continuation);
    if (!line) {
      if (continuation) repl.Run(input);
      break;
    }
    if (!continuation || !Trim(*line).empty()) {  // a blank line ends an unfinished input
      input += continuation ? "\n" + *line : *line;
      if (!IsComplete(input)) {
        continuation = true;
        continue;
      }
    }
    continuation = false;
    bool go_on = repl.Run(std::exchange(input, {}));
    if (!go_on) break;
  }
  std::cout.flush();
  return 0;
}

}  // namespace weft::driver
