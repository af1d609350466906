// The grammar of weft (language.md) in Boost.Spirit X3, over the lexer's tokens.
//
// How it works:
//  1. The input is the token vector; `last` is the EndOfFile token, which is never consumed, so
//     the token at any failure position can be named in the message.
//  2. Token parsers (`tk`, `kw`, `ops`) match token kinds; every other parser is a named rule whose
//     name ("an expression", "`in` to end this `let`") is what an expectation failure reports.
//  3. Semantic actions build nodes straight into the Ast's arenas through the Builder found in the
//     parse context, and every rule's attribute is the id of the node it built. Alternatives are
//     arranged so that an alternative that fails has consumed nothing and built nothing.
//  4. `a > b` (expectation) turns a failure after a committed prefix into an expectation_failure;
//     Parse() catches it, reports "expected B, found T", and resumes at the next declaration.
//     Rules for constructs that are opened and must be closed (`let`, `(`, ...) have an on_error
//     hook that records where the construct began, which becomes the diagnostic's note.
//  5. The `nested[...]` directive counts recursion depth and stops at kMaxNesting.

#include <boost/spirit/home/x3.hpp>

#include <algorithm>
#include <charconv>
#include <functional>
#include <limits>
#include <string>

#include "base/stack.h"
#include "syntax/lexer.h"
#include "syntax/parser.h"

namespace weft::syntax {
namespace {

namespace x3 = boost::spirit::x3;
namespace fusion = boost::fusion;
using Iterator = const Token*;

// ---- The builder: what semantic actions write into ----

struct PendingNote {
  Span span;
  std::string what;     // "this `let`"
  bool opened = false;  // "is opened here" rather than "starts here"
};

struct TooDeep {
  Span at;
};

struct Builder {
  Ast& ast;
  Diagnostics& diagnostics;
  int depth = 0;
  std::optional<PendingNote> note = std::nullopt;
  const Token* start = nullptr;  // where the innermost `spanned[...]` began
};

struct BuilderTag;

template <typename Context>
Builder& B(const Context& context) {
  return x3::get<BuilderTag>(context).get();
}

// The span of what the enclosing `spanned[...]` has matched so far: from the token where it began
// to the last token consumed. (X3's own `_where` in Boost 1.74 gives the input after the match.)
template <typename Context>
Span SpanOf(const Context& context) {
  Iterator begin = B(context).start;
  Iterator end = x3::_where(context).begin();
  if (begin == end) return {begin->span.file, begin->span.begin, begin->span.begin};
  return begin->span.To((end - 1)->span);
}

// ---- Token parsers ----

// Matches one token of a kind; its attribute is the token (a pointer into the token vector).
struct TokenParser : x3::parser<TokenParser> {
  using attribute_type = Iterator;
  static bool const has_attribute = true;
  TokenKind kind;
  constexpr explicit TokenParser(TokenKind k) : kind(k) {}

  template <typename It, typename Context, typename RContext, typename Attribute>
  bool parse(It& first, const It& last, const Context&, RContext&, Attribute& attr) const {
    if (first == last || first->kind != kind) return false;
    x3::traits::move_to(first, attr);
    ++first;
    return true;
  }
};

// Matches one token of a kind, without an attribute.
struct KeywordParser : x3::parser<KeywordParser> {
  using attribute_type = x3::unused_type;
  static bool const has_attribute = false;
  TokenKind kind;
  constexpr explicit KeywordParser(TokenKind k) : kind(k) {}

  template <typename It, typename Context, typename RContext, typename Attribute>
  bool parse(It& first, const It& last, const Context&, RContext&, Attribute&) const {
    if (first == last || first->kind != kind) return false;
    ++first;
    return true;
  }
};

// Matches one token of any kind in a set (an operator level); its attribute is the token.
struct AnyOfParser : x3::parser<AnyOfParser> {
  using attribute_type = Iterator;
  static bool const has_attribute = true;
  std::uint64_t mask[2] = {0, 0};
  std::string_view description;

  constexpr AnyOfParser(std::initializer_list<TokenKind> kinds, std::string_view what) : description(what) {
    for (TokenKind kind : kinds) {
      auto bit = static_cast<unsigned>(kind);
      mask[bit / 64] |= std::uint64_t{1} << (bit % 64);
    }
  }
  constexpr bool Has(TokenKind kind) const {
    auto bit = static_cast<unsigned>(kind);
    return (mask[bit / 64] >> (bit % 64)) & 1;
  }

  template <typename It, typename Context, typename RContext, typename Attribute>
  bool parse(It& first, const It& last, const Context&, RContext&, Attribute& attr) const {
    if (first == last || !Has(first->kind)) return false;
    x3::traits::move_to(first, attr);
    ++first;
    return true;
  }
};

// Matches an identifier with a fixed text (contextual keywords: `swizzle`, `string`).
struct ContextualParser : x3::parser<ContextualParser> {
  using attribute_type = Iterator;
  static bool const has_attribute = true;
  std::string_view word;
  constexpr explicit ContextualParser(std::string_view w) : word(w) {}

  template <typename It, typename Context, typename RContext, typename Attribute>
  bool parse(It& first, const It& last, const Context&, RContext&, Attribute& attr) const {
    if (first == last || first->kind != TokenKind::Identifier || first->text != word) return false;
    x3::traits::move_to(first, attr);
    ++first;
    return true;
  }
};

// Matches an integer in a layout: a literal `4`, or CuTe's static integer `_4`, which the lexer reads
// as a name (CuTe prints `(_8,_64):(_64,_1)`, so that output can be pasted in); its attribute is the
// token.
struct LayoutIntTokenParser : x3::parser<LayoutIntTokenParser> {
  using attribute_type = Iterator;
  static bool const has_attribute = true;

  static bool IsStaticInt(std::string_view text) {
    return text.size() > 1 && text[0] == '_' && text.find_first_not_of("0123456789", 1) == std::string_view::npos;
  }

  template <typename It, typename Context, typename RContext, typename Attribute>
  bool parse(It& first, const It& last, const Context&, RContext&, Attribute& attr) const {
    if (first == last) return false;
    if (first->kind != TokenKind::IntLiteral && !(first->kind == TokenKind::Identifier && IsStaticInt(first->text)))
      return false;
    x3::traits::move_to(first, attr);
    ++first;
    return true;
  }
};

// Matches a dtype keyword; its attribute is the token.
struct DtypeParser : x3::parser<DtypeParser> {
  using attribute_type = Iterator;
  static bool const has_attribute = true;

  template <typename It, typename Context, typename RContext, typename Attribute>
  bool parse(It& first, const It& last, const Context&, RContext&, Attribute& attr) const {
    if (first == last || !IsDtype(first->kind)) return false;
    x3::traits::move_to(first, attr);
    ++first;
    return true;
  }
};

// `nested[p]`: p, one level deeper; refuses to go past kMaxNesting.
template <typename Subject>
struct NestedDirective : x3::unary_parser<Subject, NestedDirective<Subject>> {
  using base_type = x3::unary_parser<Subject, NestedDirective<Subject>>;
  static bool const is_pass_through_unary = true;
  static bool const handles_container = Subject::handles_container;
  constexpr explicit NestedDirective(const Subject& subject) : base_type(subject) {}

  template <typename It, typename Context, typename RContext, typename Attribute>
  bool parse(It& first, const It& last, const Context& context, RContext& rcontext, Attribute& attr) const {
    Builder& builder = B(context);
    if (builder.depth >= kMaxNesting) throw TooDeep{first->span};
    ++builder.depth;
    struct Leave {
      Builder& builder;
      ~Leave() { --builder.depth; }
    } leave{builder};
    return this->subject.parse(first, last, context, rcontext, attr);
  }
};

struct NestedGen {
  template <typename Subject>
  constexpr NestedDirective<typename x3::extension::as_parser<Subject>::value_type> operator[](
      const Subject& subject) const {
    return NestedDirective<typename x3::extension::as_parser<Subject>::value_type>(x3::as_parser(subject));
  }
};
constexpr NestedGen nested{};

// `spanned[p]`: p, with the position where it begins available to its actions (SpanOf). Every
// rule whose actions build nodes wraps its definition in it.
template <typename Subject>
struct SpannedDirective : x3::unary_parser<Subject, SpannedDirective<Subject>> {
  using base_type = x3::unary_parser<Subject, SpannedDirective<Subject>>;
  static bool const is_pass_through_unary = true;
  static bool const handles_container = Subject::handles_container;
  constexpr explicit SpannedDirective(const Subject& subject) : base_type(subject) {}

  template <typename It, typename Context, typename RContext, typename Attribute>
  bool parse(It& first, const It& last, const Context& context, RContext& rcontext, Attribute& attr) const {
    // The start lives in the Builder (a new context entry per level would make the context's type,
    // and so the instantiations of recursive rules, grow without bound); saved and restored so
    // that an enclosing rule's actions see their own start again.
    Builder& builder = B(context);
    struct Restore {
      Builder& builder;
      Iterator saved;
      ~Restore() { builder.start = saved; }
    } restore{builder, builder.start};
    builder.start = first;
    return this->subject.parse(first, last, context, rcontext, attr);
  }
};

struct SpannedGen {
  template <typename Subject>
  constexpr SpannedDirective<typename x3::extension::as_parser<Subject>::value_type> operator[](
      const Subject& subject) const {
    return SpannedDirective<typename x3::extension::as_parser<Subject>::value_type>(x3::as_parser(subject));
  }
};
constexpr SpannedGen spanned{};

constexpr TokenParser tk(TokenKind kind) {
  return TokenParser(kind);
}
constexpr KeywordParser kw(TokenKind kind) {
  return KeywordParser(kind);
}

using TK = TokenKind;

}  // namespace
}  // namespace weft::syntax

// What an expectation failure on a bare token parser reports.
namespace boost::spirit::x3 {
template <>
struct get_info<weft::syntax::TokenParser> {
  using result_type = std::string;
  std::string operator()(const weft::syntax::TokenParser& p) const {
    return std::string(weft::syntax::Describe(p.kind));
  }
};
template <>
struct get_info<weft::syntax::KeywordParser> {
  using result_type = std::string;
  std::string operator()(const weft::syntax::KeywordParser& p) const {
    return std::string(weft::syntax::Describe(p.kind));
  }
};
template <>
struct get_info<weft::syntax::AnyOfParser> {
  using result_type = std::string;
  std::string operator()(const weft::syntax::AnyOfParser& p) const { return std::string(p.description); }
};
}  // namespace boost::spirit::x3

namespace weft::syntax {
namespace {

// ---- Helpers for actions ----

BinaryOp BinaryOpOf(TokenKind kind) {
  switch (kind) {
    case TK::PipeRight:
      return BinaryOp::Pipe;
    case TK::OrOr:
      return BinaryOp::Or;
    case TK::AndAnd:
      return BinaryOp::And;
    case TK::EqualEqual:
      return BinaryOp::Eq;
    case TK::NotEqual:
      return BinaryOp::Ne;
    case TK::Less:
      return BinaryOp::Lt;
    case TK::LessEqual:
      return BinaryOp::Le;
    case TK::Greater:
      return BinaryOp::Gt;
    case TK::GreaterEqual:
      return BinaryOp::Ge;
    case TK::Plus:
      return BinaryOp::Add;
    case TK::Minus:
      return BinaryOp::Sub;
    case TK::Star:
      return BinaryOp::Mul;
    case TK::Slash:
      return BinaryOp::Div;
    case TK::Percent:
      return BinaryOp::Mod;
    case TK::At:
      return BinaryOp::MatMul;
    default:
      WEFT_INTERNAL_ERROR("not a binary operator token");
  }
}

Name NameOf(Iterator token) {
  return {std::string(token->text), token->span};
}

// An integer literal's value; an out-of-range literal is reported and reads as 0.
template <typename Context>
std::uint64_t IntValue(const Context& context, Iterator token, std::uint64_t max) {
  std::uint64_t value = 0;
  auto [end, error] = std::from_chars(token->text.data(), token->text.data() + token->text.size(), value);
  if (error != std::errc() || end != token->text.data() + token->text.size() || value > max) {
    B(context).diagnostics.Emit(DiagnosticKind::IntegerTooLarge, token->span, token->text);
    return 0;
  }
  return value;
}

std::string Unescape(std::string_view quoted) {
  std::string value;
  for (std::size_t i = 1; i + 1 < quoted.size(); ++i) {
    char c = quoted[i];
    if (c == '\\' && i + 2 < quoted.size()) {
      char e = quoted[++i];
      value += e == 'n' ? '\n' : e == 't' ? '\t' : e;
    } else {
      value += c;
    }
  }
  return value;
}

template <typename T>
std::vector<T> Flatten(const std::optional<std::vector<T>>& maybe) {
  return maybe ? *maybe : std::vector<T>{};
}
template <typename T>
std::vector<T> Flatten(const boost::optional<std::vector<T>>& maybe) {
  return maybe ? *maybe : std::vector<T>{};
}
template <typename T>
std::vector<T> Flatten(const std::vector<T>& list) {
  return list;
}

template <typename Context, typename Node>
ExprId AddExpr(const Context& context, Node node) {
  return B(context).ast.Add(Expr{SpanOf(context), ExprNode(std::move(node))});
}

const auto pass = [](auto& context) { x3::_val(context) = x3::_attr(context); };

// Records where an open construct began, for the note of an expectation failure that names it.
// `Skip` is where the opener is among the rule's tokens: 1 for a call's `(` after its name.
template <const char* What, bool Opened = false, int Skip = 0>
struct OpenerHook {
  template <typename It, typename Exception, typename Context>
  x3::error_handler_result on_error(It& first, const It&, const Exception& failure, const Context& context) {
    Builder& builder = B(context);
    if (!builder.note && failure.which().find(What) != std::string::npos) {
      builder.note = PendingNote{(first + Skip)->span, What, Opened};
    }
    return x3::error_handler_result::rethrow;
  }
};

constexpr char kThisLet[] = "this `let`";
constexpr char kThisIf[] = "this `if`";
constexpr char kThisFn[] = "this `fn`";
constexpr char kThisLoop[] = "this `loop`";
constexpr char kThisPipeline[] = "this `pipeline`";
constexpr char kThisParen[] = "this `(`";
constexpr char kThisBracket[] = "this `[`";
constexpr char kThisSwizzle[] = "this `swizzle`";
constexpr char kThisAngle[] = "this `<`";

struct let_id : OpenerHook<kThisLet> {};
struct if_id : OpenerHook<kThisIf> {};
struct fn_id : OpenerHook<kThisFn> {};
struct loop_id : OpenerHook<kThisLoop> {};
struct pipeline_id : OpenerHook<kThisPipeline> {};
struct paren_id : OpenerHook<kThisParen, true> {};
struct list_id : OpenerHook<kThisBracket, true> {};
struct index_suffix_id : OpenerHook<kThisBracket, true> {};
struct type_paren_id : OpenerHook<kThisParen, true> {};
struct shape_id : OpenerHook<kThisBracket, true> {};
struct dim_atom_id : OpenerHook<kThisParen, true> {};
struct pattern_id : OpenerHook<kThisParen, true> {};
struct param_id : OpenerHook<kThisParen, true> {};
struct int_tree_id : OpenerHook<kThisParen, true> {};
struct layout_call_id : OpenerHook<kThisParen, true, 1> {};
struct swizzle_id : OpenerHook<kThisSwizzle> {};
struct layout_primary_id : OpenerHook<kThisParen, true> {};
struct tiler_id : OpenerHook<kThisAngle, true> {};

// ---- Rules ----

struct ParenTail {
  TypeId type;               // `(e : t)`
  std::vector<ExprId> rest;  // `(e, f, ...)`
};
struct SliceTail {
  ExprId hi;  // invalid when omitted
};
struct ShapeList {
  std::vector<ShapeItem> items;
};
struct PatternTail {
  TypeId type;
  std::vector<PatternId> rest;
};

x3::rule<class expr_id, ExprId> const expr = "an expression";
x3::rule<class open_expr_id, ExprId> const open_expr = "an expression";
x3::rule<let_id, ExprId> const let_expr = "a `let`";
x3::rule<if_id, ExprId> const if_expr = "an `if`";
x3::rule<fn_id, ExprId> const fn_expr = "a function";
x3::rule<loop_id, ExprId> const loop_expr = "a `loop`";
x3::rule<pipeline_id, ExprId> const pipeline_expr = "a `pipeline`";
x3::rule<class pipe_level_id, ExprId> const pipe_level = "an expression";
x3::rule<class or_level_id, ExprId> const or_level = "an expression";
x3::rule<class and_level_id, ExprId> const and_level = "an expression";
x3::rule<class cmp_level_id, ExprId> const cmp_level = "an expression";
x3::rule<class add_level_id, ExprId> const add_level = "an expression";
x3::rule<class mul_level_id, ExprId> const mul_level = "an expression";
x3::rule<class matmul_level_id, ExprId> const matmul_level = "an expression";
x3::rule<class unary_id, ExprId> const unary = "an expression";
x3::rule<class app_id, ExprId> const app = "an expression";
x3::rule<class postfix_id, ExprId> const postfix = "an expression";
x3::rule<index_suffix_id, fusion::deque<std::vector<expr::IndexItem>, Iterator>> const index_suffix = "an index";
x3::rule<class close_bracket_tok_id, Iterator> const close_bracket_tok = "`]` to close this `[`";
x3::rule<class atom_id, ExprId> const atom = "an expression";
x3::rule<paren_id, ExprId> const paren = "an expression";
x3::rule<class paren_tail_id, ParenTail> const paren_tail = "`,`, `:` or `)`";
x3::rule<list_id, ExprId> const list = "a list";
x3::rule<class expr_list_id, std::vector<ExprId>> const expr_list = "an expression";
x3::rule<class index_item_id, expr::IndexItem> const index_item = "an index, a slice or `:`";
x3::rule<class slice_tail_id, SliceTail> const slice_tail = "`:`";
x3::rule<class index_items_id, std::vector<expr::IndexItem>> const index_items = "an index, a slice or `:`";
x3::rule<class fn_params_id, std::vector<PatternId>> const fn_params = "a parameter";

x3::rule<class type_id, TypeId> const type = "a type";
x3::rule<class type_atom_id, TypeId> const type_atom = "a type";
x3::rule<class tensor_type_id, TypeId> const tensor_type = "a type";
x3::rule<type_paren_id, TypeId> const type_paren = "a type";
x3::rule<shape_id, ShapeList> const shape = "a shape";
x3::rule<class shape_items_id, std::vector<ShapeItem>> const shape_items = "a dimension or a shape variable `..s`";
x3::rule<class elem_tok_id, Iterator> const elem_tok = "an element type";
x3::rule<class shape_item_id, ShapeItem> const shape_item = "a dimension or a shape variable `..s`";
x3::rule<class space_id, fusion::deque<Iterator, std::optional<LayoutId>>> const space_layout = "a memory space";
x3::rule<class dim_id, DimId> const dim = "a dimension";
x3::rule<class dim_add_id, DimId> const dim_add = "a dimension";
x3::rule<class dim_mul_id, DimId> const dim_mul = "a dimension";
x3::rule<dim_atom_id, DimId> const dim_atom = "a dimension";

x3::rule<pattern_id, PatternId> const pattern = "a pattern";
x3::rule<class pattern_tail_id, PatternTail> const pattern_tail = "`,`, `:` or `)`";
x3::rule<param_id, Param> const param = "a parameter";

x3::rule<class layout_id, LayoutId> const layout_expr = "a layout";
x3::rule<class layout_unit_id, LayoutId> const layout_unit = "a layout";
x3::rule<class compose_word_id> const compose_word = "`o`";
x3::rule<class layout_int_id, std::int64_t> const layout_int = "an integer";
x3::rule<swizzle_id, LayoutId> const swizzle = "a swizzle";
x3::rule<layout_call_id, LayoutId> const layout_call = "a layout";
x3::rule<class layout_term_id, LayoutId> const layout_term = "a layout";
x3::rule<layout_primary_id, LayoutId> const layout_primary = "a layout";
x3::rule<tiler_id, LayoutId> const tiler = "a tiler";
x3::rule<class swizzle_word_id, Iterator> const swizzle_word = "`swizzle`";
x3::rule<int_tree_id, IntTree> const int_tree = "an integer or a tuple of integers";

x3::rule<class where_item_id, WhereItem> const where_item = "a condition or a class constraint";
x3::rule<class where_items_id, std::vector<WhereItem>> const where_items = "a condition or a class constraint";
x3::rule<class def_id> const def_decl = "a definition";
x3::rule<class kernel_id> const kernel_decl = "a kernel";
x3::rule<class import_id> const import_decl = "an import";
x3::rule<class decl_id> const decl = "a declaration";

// Contextual expectations: their names are what "expected ..." says.
x3::rule<class in_let_id> const in_let = "`in` to end this `let`";
x3::rule<class eq_let_id> const eq_let = "`=` after the pattern of this `let`";
x3::rule<class then_if_id> const then_if = "`then` after the condition of this `if`";
x3::rule<class else_if_id> const else_if = "`else`: this `if` has no `else` branch";
x3::rule<class arrow_fn_id> const arrow_fn = "`->` after the parameters of this `fn`";
x3::rule<class eq_loop_id> const eq_loop = "`=` after the state pattern of this `loop`";
x3::rule<class for_loop_id> const for_loop = "`for` after the initial state of this `loop`";
x3::rule<class less_counter_id> const less_counter = "`<` and the trip count after the loop counter";
x3::rule<class do_loop_id> const do_loop = "`do` before the body of this `loop`";
x3::rule<class with_pipeline_id> const with_pipeline = "`with` after the trip count of this `pipeline`";
x3::rule<class eq_pipeline_id> const eq_pipeline = "`=` after the state pattern of this `pipeline`";
x3::rule<class do_pipeline_id> const do_pipeline = "`do` before the body of this `pipeline`";
x3::rule<class close_paren_id> const close_paren = "`)` to close this `(`";
x3::rule<class close_bracket_id> const close_bracket = "`]` to close this `[`";
x3::rule<class counter_id, Iterator> const counter = "a loop counter name";
x3::rule<class def_name_id, Iterator> const def_name = "a name for the definition";
x3::rule<class kernel_name_id, Iterator> const kernel_name = "a name for the kernel";
x3::rule<class def_eq_id> const def_eq = "a parameter, `:`, `where` or `=`";
x3::rule<class def_tail_id, std::vector<WhereItem>> const def_tail = "a parameter, `:`, `where` or `=`";
x3::rule<class where_eq_id> const where_eq =
    "`,` and another condition, or `=` (a class constrains an element type: `'t : num`)";
x3::rule<class kernel_grid_id> const kernel_grid = "a parameter, `where`, `tiles` or `grid`";
x3::rule<class tile_sizes_id, std::vector<TileSize>> const tile_sizes = "a tile size, as in `bm in [64, 128]`";
x3::rule<class tile_size_id, TileSize> const tile_size = "a tile size, as in `bm in [64, 128]`";
x3::rule<class tile_in_id> const tile_in = "`in` and the candidates after the tile size's name";
x3::rule<class tile_candidates_id, ExprId> const tile_candidates = "the candidates in `[...]`, as in `[64, 128]`";
x3::rule<class kernel_threads_id> const kernel_threads = "`threads` after the kernel's grid";
x3::rule<class kernel_eq_id> const kernel_eq = "`=` before the kernel's body";
x3::rule<class import_target_id, Iterator> const import_target = "a module name or a quoted path";
x3::rule<class cast_dtype_id, Iterator> const cast_dtype = "an element type after `cast`, such as `f32`";
x3::rule<class size_binders_id, std::vector<Iterator>> const size_binders = "a size name";
x3::rule<class size_binder_id, Iterator> const size_binder = "a size name";
x3::rule<class class_name_id, Iterator> const class_name = "a class name (`num` or `float`)";
x3::rule<class space_name_id, Iterator> const space_name = "a memory space (`global`, `shared` or `reg`)";
x3::rule<class spread_name_id, Iterator> const spread_name = "a shape variable name after `..`";
x3::rule<class swizzle_args_id, fusion::deque<std::int64_t, std::int64_t, std::int64_t>> const swizzle_args =
    "three integers `<B, M, S>`";
x3::rule<class layout_args_id, std::vector<LayoutId>> const layout_args = "a layout";
x3::rule<class int_tree_list_id, std::vector<IntTree>> const int_tree_list = "an integer or a tuple of integers";
x3::rule<class out_name_id, Iterator> const out_name = "a name for the `out` parameter";
x3::rule<class out_colon_id> const out_colon = "`:` and a type: an `out` parameter needs its type";

const auto binop =
    AnyOfParser{{TK::PipeRight, TK::OrOr, TK::AndAnd, TK::EqualEqual, TK::NotEqual, TK::Less, TK::LessEqual,
                 TK::Greater, TK::GreaterEqual, TK::Plus, TK::Minus, TK::Star, TK::Slash, TK::Percent, TK::At},
                "an operator"};
const auto lbracket = AnyOfParser{{TK::LBracket, TK::IndexBracket}, "`[`"};

// ---- Expressions ----

const auto make_let = [](auto& c) {
  auto& a = x3::_attr(c);
  x3::_val(c) = AddExpr(c, expr::Let{fusion::at_c<0>(a), fusion::at_c<1>(a), fusion::at_c<2>(a)});
};
const auto make_if = [](auto& c) {
  auto& a = x3::_attr(c);
  x3::_val(c) = AddExpr(c, expr::If{fusion::at_c<0>(a), fusion::at_c<1>(a), fusion::at_c<2>(a)});
};
const auto make_fn = [](auto& c) {
  auto& a = x3::_attr(c);
  x3::_val(c) = AddExpr(c, expr::Lambda{fusion::at_c<0>(a), fusion::at_c<1>(a)});
};
const auto make_loop = [](auto& c) {
  auto& a = x3::_attr(c);
  x3::_val(c) = AddExpr(c, expr::Loop{fusion::at_c<0>(a), fusion::at_c<1>(a), NameOf(fusion::at_c<2>(a)),
                                      fusion::at_c<3>(a), fusion::at_c<4>(a)});
};
const auto make_pipeline = [](auto& c) {
  auto& a = x3::_attr(c);
  x3::_val(c) = AddExpr(c, expr::Pipeline{NameOf(fusion::at_c<0>(a)), fusion::at_c<1>(a), fusion::at_c<2>(a),
                                          fusion::at_c<3>(a), fusion::at_c<4>(a)});
};
// Folds `a op b op c` to the left.
const auto fold_binary = [](auto& c) {
  auto& a = x3::_attr(c);
  Ast& ast = B(c).ast;
  ExprId lhs = fusion::at_c<0>(a);
  for (auto& step : fusion::at_c<1>(a)) {
    Iterator op = fusion::at_c<0>(step);
    ExprId rhs = fusion::at_c<1>(step);
    Span span = ast.Get(lhs).span.To(ast.Get(rhs).span);
    lhs = ast.Add(Expr{span, expr::Binary{BinaryOpOf(op->kind), lhs, rhs, op->span}});
  }
  x3::_val(c) = lhs;
};
const auto make_negate = [](auto& c) { x3::_val(c) = AddExpr(c, expr::Negate{fusion::at_c<1>(x3::_attr(c))}); };
const auto make_cast = [](auto& c) {
  auto& a = x3::_attr(c);
  x3::_val(c) = AddExpr(c, expr::Cast{DtypeOf(fusion::at_c<0>(a)->kind), fusion::at_c<1>(a)});
};
const auto make_apply = [](auto& c) {
  auto& a = x3::_attr(c);
  auto& args = fusion::at_c<1>(a);
  if (args.empty()) {
    x3::_val(c) = fusion::at_c<0>(a);
  } else {
    x3::_val(c) = AddExpr(c, expr::Apply{fusion::at_c<0>(a), args});
  }
};
const auto make_index = [](auto& c) {
  auto& a = x3::_attr(c);
  ExprId base = fusion::at_c<0>(a);
  Ast& ast = B(c).ast;
  for (auto& suffix : fusion::at_c<1>(a)) {
    Span span = ast.Get(base).span.To(fusion::at_c<1>(suffix)->span);
    base = ast.Add(Expr{span, expr::Index{base, fusion::at_c<0>(suffix)}});
  }
  x3::_val(c) = base;
};
const auto make_int = [](auto& c) {
  x3::_val(c) = AddExpr(c, expr::IntLit{IntValue(c, x3::_attr(c), ~std::uint64_t{0})});
};
const auto make_float = [](auto& c) { x3::_val(c) = AddExpr(c, expr::FloatLit{std::string(x3::_attr(c)->text)}); };
const auto make_string = [](auto& c) { x3::_val(c) = AddExpr(c, expr::StringLit{Unescape(x3::_attr(c)->text)}); };
const auto make_true = [](auto& c) { x3::_val(c) = AddExpr(c, expr::BoolLit{true}); };
const auto make_false = [](auto& c) { x3::_val(c) = AddExpr(c, expr::BoolLit{false}); };
const auto make_var = [](auto& c) { x3::_val(c) = AddExpr(c, expr::Var{std::string(x3::_attr(c)->text)}); };
const auto make_wildcard_var = [](auto& c) {
  B(c).diagnostics.Emit(DiagnosticKind::WildcardAsValue, x3::_attr(c)->span);
  x3::_val(c) = AddExpr(c, expr::Var{"_"});
};
const auto make_unit = [](auto& c) { x3::_val(c) = AddExpr(c, expr::Tuple{}); };
const auto make_opref = [](auto& c) { x3::_val(c) = AddExpr(c, expr::OperatorRef{BinaryOpOf(x3::_attr(c)->kind)}); };
const auto make_paren = [](auto& c) {
  auto& a = x3::_attr(c);
  ExprId inner = fusion::at_c<0>(a);
  ParenTail& tail = fusion::at_c<1>(a);
  if (tail.type.valid()) {
    x3::_val(c) = AddExpr(c, expr::Ascribe{inner, tail.type});
  } else if (!tail.rest.empty()) {
    std::vector<ExprId> elements{inner};
    elements.insert(elements.end(), tail.rest.begin(), tail.rest.end());
    x3::_val(c) = AddExpr(c, expr::Tuple{std::move(elements)});
  } else {
    x3::_val(c) = inner;  // redundant parentheses leave no trace
  }
};
const auto tail_type = [](auto& c) { x3::_val(c).type = x3::_attr(c); };
const auto tail_rest = [](auto& c) { x3::_val(c).rest = x3::_attr(c); };
const auto make_list = [](auto& c) { x3::_val(c) = AddExpr(c, expr::List{Flatten(fusion::at_c<1>(x3::_attr(c)))}); };
const auto index_colon_first = [](auto& c) {
  auto& hi = fusion::at_c<1>(x3::_attr(c));
  using Kind = expr::IndexItem::Kind;
  x3::_val(c) = hi ? expr::IndexItem{Kind::Slice, ExprId(), *hi, SpanOf(c)}
                   : expr::IndexItem{Kind::All, ExprId(), ExprId(), SpanOf(c)};
};
const auto index_expr_first = [](auto& c) {
  auto& a = x3::_attr(c);
  using Kind = expr::IndexItem::Kind;
  auto& slice = fusion::at_c<1>(a);
  if (!slice) {
    x3::_val(c) = expr::IndexItem{Kind::At, fusion::at_c<0>(a), ExprId(), SpanOf(c)};
  } else {
    x3::_val(c) = expr::IndexItem{Kind::Slice, fusion::at_c<0>(a), slice->hi, SpanOf(c)};
  }
};
const auto set_slice_hi = [](auto& c) {
  auto& hi = x3::_attr(c);
  x3::_val(c).hi = hi ? *hi : ExprId();
};

// Open constructs (`let`, `if`, `fn`, `loop`, `pipeline`) are atoms whose body extends as far right
// as it can, as in ML: `x |> fn y -> y + 1` and `1 + let a = 2 in a * 3` both mean what they say.
auto const expr_def = nested[pipe_level[pass]];
auto const open_expr_def = let_expr[pass] | if_expr[pass] | fn_expr[pass] | loop_expr[pass] | pipeline_expr[pass];
auto const let_expr_def = spanned[(kw(TK::Let) > pattern > eq_let > expr > in_let > expr)[make_let]];
auto const if_expr_def = spanned[(kw(TK::If) > expr > then_if > expr > else_if > expr)[make_if]];
auto const fn_expr_def = spanned[(kw(TK::Fn) > fn_params > arrow_fn > expr)[make_fn]];
auto const fn_params_def = +pattern;
auto const loop_expr_def = spanned[(kw(TK::Loop) > pattern > eq_loop > expr > for_loop > counter > less_counter > expr >
                                    do_loop > expr)[make_loop]];
auto const pipeline_expr_def = spanned[(kw(TK::Pipeline) > counter > less_counter > expr > with_pipeline > pattern >
                                        eq_pipeline > expr > do_pipeline > expr)[make_pipeline]];
auto const counter_def = tk(TK::Identifier);

// Binary levels, loosest first (language.md, Expressions); all left-associative.
auto const pipe_level_def = spanned[(or_level >> *(tk(TK::PipeRight) > or_level))[fold_binary]];
auto const or_level_def = spanned[(and_level >> *(tk(TK::OrOr) > and_level))[fold_binary]];
auto const and_level_def = spanned[(cmp_level >> *(tk(TK::AndAnd) > cmp_level))[fold_binary]];
auto const cmp_level_def = spanned[(
    add_level >> *(AnyOfParser{{TK::EqualEqual, TK::NotEqual, TK::Less, TK::LessEqual, TK::Greater, TK::GreaterEqual},
                               "a comparison"} > add_level))[fold_binary]];
auto const add_level_def =
    spanned[(mul_level >> *(AnyOfParser{{TK::Plus, TK::Minus}, "`+` or `-`"} > mul_level))[fold_binary]];
auto const mul_level_def = spanned[(
    matmul_level >> *(AnyOfParser{{TK::Star, TK::Slash, TK::Percent}, "`*`, `/` or `%`"} > matmul_level))[fold_binary]];
auto const matmul_level_def = spanned[(unary >> *(tk(TK::At) > unary))[fold_binary]];
auto const unary_def = spanned[(tk(TK::Minus) > nested[unary])[make_negate] | app[pass]];
auto const app_def = spanned[(kw(TK::Cast) > cast_dtype > postfix)[make_cast] | (postfix >> *postfix)[make_apply]];
auto const cast_dtype_def = DtypeParser{};
auto const postfix_def = spanned[(atom >> *index_suffix)[make_index]];
auto const index_suffix_def = kw(TK::IndexBracket) > index_items > close_bracket_tok;
auto const close_bracket_tok_def = tk(TK::RBracket);
auto const index_items_def = index_item >> *(kw(TK::Comma) > index_item);
auto const index_item_def =
    spanned[(tk(TK::Colon) >> -expr)[index_colon_first] | (expr >> -slice_tail)[index_expr_first]];
auto const slice_tail_def = (kw(TK::Colon) >> -expr)[set_slice_hi];
auto const atom_def =
    spanned[tk(TK::IntLiteral)[make_int] | tk(TK::FloatLiteral)[make_float] | tk(TK::StringLiteral)[make_string] |
            tk(TK::True)[make_true] | tk(TK::False)[make_false] | tk(TK::Identifier)[make_var] |
            tk(TK::Underscore)[make_wildcard_var] | paren[pass] | list[pass] | open_expr[pass]];
auto const paren_def =
    spanned[(kw(TK::LParen) >> kw(TK::RParen))[make_unit] | (kw(TK::LParen) >> binop >> kw(TK::RParen))[make_opref] |
            (kw(TK::LParen) > expr > paren_tail)[make_paren]];
auto const paren_tail_def =
    spanned[(kw(TK::Colon) > type > close_paren)[tail_type] | (*(kw(TK::Comma) > expr) > close_paren)[tail_rest]];
auto const list_def = spanned[(lbracket >> -expr_list > close_bracket)[make_list]];
auto const expr_list_def = expr >> *(kw(TK::Comma) > expr);

// ---- Types ----

const auto make_fn_type = [](auto& c) {
  auto& a = x3::_attr(c);
  auto& result = fusion::at_c<1>(a);
  if (!result) {
    x3::_val(c) = fusion::at_c<0>(a);
  } else {
    x3::_val(c) = B(c).ast.Add(Type{SpanOf(c), type::Function{fusion::at_c<0>(a), *result}});
  }
};
const auto make_tensor = [](auto& c) {
  auto& a = x3::_attr(c);
  Iterator elem = fusion::at_c<0>(a);
  auto& shape_list = fusion::at_c<1>(a);
  auto& space = fusion::at_c<2>(a);
  Ast& ast = B(c).ast;
  if (elem->kind == TK::TypeVariable && !shape_list && !space) {
    x3::_val(c) = ast.Add(Type{SpanOf(c), type::Variable{std::string(elem->text.substr(1))}});
    return;
  }
  type::Tensor tensor;
  if (elem->kind == TK::TypeVariable) {
    tensor.elem = ElemType{std::nullopt, std::string(elem->text.substr(1)), elem->span};
  } else {
    tensor.elem = ElemType{DtypeOf(elem->kind), "", elem->span};
  }
  if (shape_list) {
    tensor.has_shape = true;
    tensor.shape = shape_list->items;
  }
  if (space) {
    tensor.space = NameOf(fusion::at_c<0>(*space));
    if (auto& layout_id = fusion::at_c<1>(*space)) tensor.layout = *layout_id;
  }
  x3::_val(c) = ast.Add(Type{SpanOf(c), std::move(tensor)});
};
const auto make_string_type = [](auto& c) { x3::_val(c) = B(c).ast.Add(Type{SpanOf(c), type::String{}}); };
const auto make_unit_type = [](auto& c) { x3::_val(c) = B(c).ast.Add(Type{SpanOf(c), type::Tuple{}}); };
const auto make_tuple_type = [](auto& c) {
  auto& a = x3::_attr(c);
  auto& rest = fusion::at_c<1>(a);
  if (rest.empty()) {
    x3::_val(c) = fusion::at_c<0>(a);
    return;
  }
  std::vector<TypeId> elements{fusion::at_c<0>(a)};
  elements.insert(elements.end(), rest.begin(), rest.end());
  x3::_val(c) = B(c).ast.Add(Type{SpanOf(c), type::Tuple{std::move(elements)}});
};
// A shape has at most one shape variable (language.md, Types).
const auto make_shape = [](auto& c) {
  std::vector<ShapeItem> items = Flatten(fusion::at_c<1>(x3::_attr(c)));
  const ShapeItem* first_spread = nullptr;
  for (const ShapeItem& item : items) {
    if (!item.spread) continue;
    if (first_spread == nullptr) {
      first_spread = &item;
      continue;
    }
    Diagnostic& error = B(c).diagnostics.Emit(DiagnosticKind::TwoShapeVariables, item.span, first_spread->spread_name,
                                              item.spread_name);
    error.notes.push_back(
        MakeNote(DiagnosticKind::NoteFirstShapeVariable, first_spread->span, first_spread->spread_name));
  }
  x3::_val(c).items = std::move(items);
};
const auto make_spread = [](auto& c) {
  x3::_val(c) = ShapeItem{true, std::string(x3::_attr(c)->text), DimId(), SpanOf(c)};
};
const auto make_dim_item = [](auto& c) { x3::_val(c) = ShapeItem{false, "", x3::_attr(c), SpanOf(c)}; };

auto const type_def = nested[spanned[(type_atom >> -(kw(TK::Arrow) > type))[make_fn_type]]];
auto const type_atom_def = spanned[tensor_type[pass] | type_paren[pass] | ContextualParser{"string"}[make_string_type]];
auto const elem_tok_def = DtypeParser{} | tk(TK::TypeVariable);
auto const tensor_type_def = spanned[(elem_tok >> -shape >> -space_layout)[make_tensor]];
auto const type_paren_def = spanned[(kw(TK::LParen) >> kw(TK::RParen))[make_unit_type] |
                                    (kw(TK::LParen) > type > *(kw(TK::Comma) > type) > close_paren)[make_tuple_type]];
auto const shape_def = spanned[(lbracket > -shape_items > close_bracket)[make_shape]];
auto const shape_items_def = shape_item >> *(kw(TK::Comma) > shape_item);
auto const shape_item_def = spanned[(kw(TK::DotDot) > spread_name)[make_spread] | dim[make_dim_item]];
auto const spread_name_def = tk(TK::Identifier);
auto const space_layout_def = kw(TK::At) > space_name > -layout_expr;
auto const space_name_def = tk(TK::Identifier);

// ---- Dimensions ----

const auto fold_dim = [](auto& c) {
  auto& a = x3::_attr(c);
  Ast& ast = B(c).ast;
  DimId lhs = fusion::at_c<0>(a);
  for (auto& step : fusion::at_c<1>(a)) {
    DimId rhs = fusion::at_c<1>(step);
    Span span = ast.Get(lhs).span.To(ast.Get(rhs).span);
    lhs = ast.Add(Dim{span, dim::Binary{BinaryOpOf(fusion::at_c<0>(step)->kind), lhs, rhs}});
  }
  x3::_val(c) = lhs;
};
const auto make_dim_int = [](auto& c) {
  auto value = static_cast<std::int64_t>(IntValue(c, x3::_attr(c), std::numeric_limits<std::int64_t>::max()));
  x3::_val(c) = B(c).ast.Add(Dim{SpanOf(c), dim::Int{value}});
};
const auto make_dim_var = [](auto& c) {
  x3::_val(c) = B(c).ast.Add(Dim{SpanOf(c), dim::Var{std::string(x3::_attr(c)->text)}});
};

auto const dim_def = nested[dim_add[pass]];
auto const dim_add_def = spanned[(dim_mul >> *(AnyOfParser{{TK::Plus, TK::Minus}, "`+` or `-`"} > dim_mul))[fold_dim]];
auto const dim_mul_def =
    spanned[(dim_atom >> *(AnyOfParser{{TK::Star, TK::Slash, TK::Percent}, "`*`, `/` or `%`"} > dim_atom))[fold_dim]];
auto const dim_atom_def = spanned[tk(TK::IntLiteral)[make_dim_int] | tk(TK::Identifier)[make_dim_var] |
                                  (kw(TK::LParen) > dim > close_paren)[pass]];

// ---- Patterns and parameters ----

const auto make_pattern_name = [](auto& c) {
  x3::_val(c) = B(c).ast.Add(Pattern{SpanOf(c), pattern::Name{std::string(x3::_attr(c)->text)}});
};
const auto make_pattern_wildcard = [](auto& c) { x3::_val(c) = B(c).ast.Add(Pattern{SpanOf(c), pattern::Wildcard{}}); };
const auto make_pattern_unit = [](auto& c) { x3::_val(c) = B(c).ast.Add(Pattern{SpanOf(c), pattern::Tuple{}}); };
const auto make_pattern_paren = [](auto& c) {
  auto& a = x3::_attr(c);
  PatternId inner = fusion::at_c<0>(a);
  PatternTail& tail = fusion::at_c<1>(a);
  Ast& ast = B(c).ast;
  if (tail.type.valid()) {
    x3::_val(c) = ast.Add(Pattern{SpanOf(c), pattern::Typed{inner, tail.type}});
  } else if (!tail.rest.empty()) {
    std::vector<PatternId> elements{inner};
    elements.insert(elements.end(), tail.rest.begin(), tail.rest.end());
    x3::_val(c) = ast.Add(Pattern{SpanOf(c), pattern::Tuple{std::move(elements)}});
  } else {
    x3::_val(c) = inner;
  }
};
const auto make_out_param = [](auto& c) {
  auto& a = x3::_attr(c);
  Ast& ast = B(c).ast;
  Iterator name = fusion::at_c<0>(a);
  PatternId named = ast.Add(Pattern{name->span, pattern::Name{std::string(name->text)}});
  PatternId typed = ast.Add(Pattern{SpanOf(c), pattern::Typed{named, fusion::at_c<1>(a)}});
  x3::_val(c) = Param{typed, true, SpanOf(c)};
};
const auto make_param = [](auto& c) { x3::_val(c) = Param{x3::_attr(c), false, SpanOf(c)}; };

auto const pattern_def =
    nested[spanned[tk(TK::Identifier)[make_pattern_name] | tk(TK::Underscore)[make_pattern_wildcard] |
                   (kw(TK::LParen) >> kw(TK::RParen))[make_pattern_unit] |
                   (kw(TK::LParen) > pattern > pattern_tail)[make_pattern_paren]]];
auto const pattern_tail_def =
    spanned[(kw(TK::Colon) > type > close_paren)[tail_type] | (*(kw(TK::Comma) > pattern) > close_paren)[tail_rest]];
auto const param_def =
    spanned[(kw(TK::LParen) >> kw(TK::Out) > out_name > out_colon > type > close_paren)[make_out_param] |
            pattern[make_param]];
auto const out_name_def = tk(TK::Identifier);
auto const out_colon_def = kw(TK::Colon);

// ---- Layouts ----

std::string Format(const IntTree& tree) {
  if (tree.leaf) return std::to_string(tree.value);
  std::string out = "(";
  for (std::size_t i = 0; i < tree.children.size(); ++i) out += (i ? "," : "") + Format(tree.children[i]);
  return out + ")";
}

bool Congruent(const IntTree& a, const IntTree& b) {
  if (a.leaf || b.leaf) return a.leaf == b.leaf;
  if (a.children.size() != b.children.size()) return false;
  for (std::size_t i = 0; i < a.children.size(); ++i) {
    if (!Congruent(a.children[i], b.children[i])) return false;
  }
  return true;
}

const auto make_layout_var = [](auto& c) {
  x3::_val(c) = B(c).ast.Add(Layout{SpanOf(c), layout::Variable{std::string(x3::_attr(c)->text.substr(1))}});
};
const auto make_swizzle = [](auto& c) {
  auto& args = fusion::at_c<1>(x3::_attr(c));
  x3::_val(c) = B(c).ast.Add(
      Layout{SpanOf(c), layout::Swizzle{fusion::at_c<0>(args), fusion::at_c<1>(args), fusion::at_c<2>(args)}});
};
// `-`? then `4` or `_4`: an integer of a layout. Beyond 2^63 - 1 it is reported and reads as 0.
const auto make_layout_int_value = [](auto& c) {
  auto& a = x3::_attr(c);
  Iterator token = fusion::at_c<1>(a);
  std::string_view digits = token->text[0] == '_' ? token->text.substr(1) : token->text;
  std::uint64_t value = 0;
  auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (error != std::errc() || end != digits.data() + digits.size() ||
      value > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    B(c).diagnostics.Emit(DiagnosticKind::IntegerTooLarge, token->span, token->text);
    value = 0;
  }
  auto signed_value = static_cast<std::int64_t>(value);
  x3::_val(c) = fusion::at_c<0>(a) ? -signed_value : signed_value;
};
// `A o B o C`: CuTe's printed composition. One part alone is just that part.
const auto make_compose = [](auto& c) {
  auto& a = x3::_attr(c);
  auto& rest = fusion::at_c<1>(a);
  if (rest.empty()) {
    x3::_val(c) = fusion::at_c<0>(a);
    return;
  }
  std::vector<LayoutId> parts{fusion::at_c<0>(a)};
  parts.insert(parts.end(), rest.begin(), rest.end());
  x3::_val(c) = B(c).ast.Add(Layout{SpanOf(c), layout::Compose{std::move(parts)}});
};
const auto make_layout_call = [](auto& c) {
  auto& a = x3::_attr(c);
  x3::_val(c) = B(c).ast.Add(Layout{SpanOf(c), layout::Call{NameOf(fusion::at_c<0>(a)), fusion::at_c<1>(a)}});
};
// `(a, b, ...)` in a layout: a shape when every mode is a shape, else a tiler (one layout per mode).
const auto make_layout_paren = [](auto& c) {
  std::vector<LayoutId>& modes = x3::_attr(c);
  Ast& ast = B(c).ast;
  IntTree tuple;
  tuple.leaf = false;
  for (LayoutId mode : modes) {
    const auto* shape = std::get_if<layout::IntTuple>(&ast.Get(mode).node);
    if (shape == nullptr) {
      x3::_val(c) = ast.Add(Layout{SpanOf(c), layout::Tiler{modes}});
      return;
    }
    tuple.children.push_back(shape->tuple);
  }
  x3::_val(c) = ast.Add(Layout{SpanOf(c), layout::IntTuple{std::move(tuple)}});
};
const auto make_layout_int = [](auto& c) {
  IntTree leaf;
  leaf.value = x3::_attr(c);
  x3::_val(c) = B(c).ast.Add(Layout{SpanOf(c), layout::IntTuple{std::move(leaf)}});
};
const auto make_tiler = [](auto& c) { x3::_val(c) = B(c).ast.Add(Layout{SpanOf(c), layout::Tiler{x3::_attr(c)}}); };
// `shape : stride`: CuTe's notation for a layout; shape and stride must have the same structure.
const auto make_layout_term = [](auto& c) {
  auto& a = x3::_attr(c);
  LayoutId primary = fusion::at_c<0>(a);
  auto& stride = fusion::at_c<1>(a);
  if (!stride) {
    x3::_val(c) = primary;
    return;
  }
  Ast& ast = B(c).ast;
  const auto* shape = std::get_if<layout::IntTuple>(&ast.Get(primary).node);
  if (shape == nullptr) {
    B(c).diagnostics.Emit(DiagnosticKind::StrideWithoutShape, SpanOf(c));
    x3::_val(c) = primary;
    return;
  }
  if (!Congruent(shape->tuple, *stride)) {
    B(c).diagnostics.Emit(DiagnosticKind::LayoutStructureMismatch, SpanOf(c), Format(shape->tuple), Format(*stride));
  }
  IntTree shape_tree = shape->tuple;
  x3::_val(c) = ast.Add(Layout{SpanOf(c), layout::Literal{std::move(shape_tree), *stride}});
};
const auto make_int_leaf = [](auto& c) {
  IntTree leaf;
  leaf.value = x3::_attr(c);
  x3::_val(c) = std::move(leaf);
};
const auto make_int_node = [](auto& c) {
  IntTree node;
  node.leaf = false;
  node.children = x3::_attr(c);
  x3::_val(c) = std::move(node);
};

// A layout expression is one unit, or units joined by the contextual word `o` (CuTe prints a
// swizzled layout as `Sw<3,3,3> o 0 o (8,64):(64,1)`: swizzle, offset, layout).
auto const layout_expr_def = nested[spanned[(layout_unit >> *(compose_word > layout_unit))[make_compose]]];
auto const layout_unit_def = spanned[tk(TK::LayoutVariable)[make_layout_var] | swizzle[pass] | layout_call[pass] |
                                     tiler[pass] | layout_term[pass]];
auto const compose_word_def = x3::omit[ContextualParser{"o"}];
auto const layout_int_def = (-tk(TK::Minus) >> LayoutIntTokenParser{})[make_layout_int_value];
auto const swizzle_def = spanned[(swizzle_word >> kw(TK::Less) > swizzle_args > kw(TK::Greater))[make_swizzle]];
auto const swizzle_word_def = ContextualParser{"swizzle"} | ContextualParser{"Sw"};  // `Sw<3,4,3>` as CuTe prints it
auto const swizzle_args_def = layout_int > kw(TK::Comma) > layout_int > kw(TK::Comma) > layout_int;
auto const layout_call_def =
    spanned[(tk(TK::Identifier) >> kw(TK::LParen) > layout_args > close_paren)[make_layout_call]];
auto const layout_args_def = layout_expr >> *(kw(TK::Comma) > layout_expr);
auto const tiler_def = spanned[(kw(TK::Less) > layout_args > kw(TK::Greater))[make_tiler]];
auto const layout_term_def = spanned[(layout_primary >> -(kw(TK::Colon) > int_tree))[make_layout_term]];
auto const layout_primary_def =
    spanned[layout_int[make_layout_int] | (kw(TK::LParen) > layout_args > close_paren)[make_layout_paren]];
auto const int_tree_def =
    nested[spanned[layout_int[make_int_leaf] | (kw(TK::LParen) > int_tree_list > close_paren)[make_int_node]]];
auto const int_tree_list_def = int_tree >> *(kw(TK::Comma) > int_tree);

// ---- Declarations ----

const auto make_class = [](auto& c) {
  auto& a = x3::_attr(c);
  Iterator var = fusion::at_c<0>(a);
  Iterator name = fusion::at_c<1>(a);
  if (name->text != "num" && name->text != "float" && name->text != "int") {
    B(c).diagnostics.Emit(DiagnosticKind::UnknownClass, name->span, name->text);
  }
  WhereItem item;
  item.class_var = std::string(var->text.substr(1));
  item.class_name = NameOf(name);
  item.span = SpanOf(c);
  x3::_val(c) = std::move(item);
};
const auto make_condition = [](auto& c) {
  WhereItem item;
  item.condition = x3::_attr(c);
  item.span = SpanOf(c);
  x3::_val(c) = std::move(item);
};

template <typename Context>
void CheckParams(const Context& context, const std::vector<Param>& params, bool in_kernel) {
  if (in_kernel) return;
  Ast& ast = B(context).ast;
  for (const Param& param : params) {
    if (!param.out) continue;
    const auto& typed = std::get<pattern::Typed>(ast.Get(param.pattern).node);
    const auto& name = std::get<pattern::Name>(ast.Get(typed.pattern).node);
    B(context).diagnostics.Emit(DiagnosticKind::OutParamOutsideKernel, param.span, name.name);
  }
}

const auto make_def = [](auto& c) {
  auto& a = x3::_attr(c);
  Def def;
  def.name = NameOf(fusion::at_c<0>(a));
  for (Iterator binder : Flatten(fusion::at_c<1>(a))) {
    for (const Name& seen : def.size_binders) {
      if (seen.text == binder->text) {
        Diagnostic& error = B(c).diagnostics.Emit(DiagnosticKind::DuplicateSizeBinder, binder->span, binder->text);
        error.notes.push_back(MakeNote(DiagnosticKind::NoteFirstBinding, seen.span, seen.text));
      }
    }
    def.size_binders.push_back(NameOf(binder));
  }
  def.params = fusion::at_c<2>(a);
  CheckParams(c, def.params, false);
  if (auto& result = fusion::at_c<3>(a)) def.result = *result;
  def.where = Flatten(fusion::at_c<4>(a));
  def.body = fusion::at_c<5>(a);
  B(c).ast.decls().push_back(Decl{SpanOf(c), std::move(def)});
};
// `bm in [64, 128]`: the candidates are positive integer literals, at least one.
const auto make_tile_size = [](auto& c) {
  auto& a = x3::_attr(c);
  TileSize size;
  size.name = NameOf(fusion::at_c<0>(a));
  size.span = SpanOf(c);
  Ast& ast = B(c).ast;
  const Expr& list = ast.Get(fusion::at_c<1>(a));
  const auto& elements = std::get<expr::List>(list.node).elements;
  if (elements.empty())
    B(c).diagnostics.Emit(DiagnosticKind::BadTileSize, list.span, size.name.text, "has no candidates");
  for (ExprId element : elements) {
    const Expr& e = ast.Get(element);
    const auto* lit = std::get_if<expr::IntLit>(&e.node);
    if (!lit || lit->value == 0 || lit->value > (1u << 30)) {
      B(c).diagnostics.Emit(DiagnosticKind::BadTileSize, e.span, size.name.text,
                            "takes positive integer literals up to 2^30 as candidates");
      continue;
    }
    auto value = static_cast<std::int64_t>(lit->value);
    if (std::find(size.candidates.begin(), size.candidates.end(), value) != size.candidates.end()) {
      B(c).diagnostics.Emit(DiagnosticKind::BadTileSize, e.span, size.name.text,
                            "lists the candidate " + std::to_string(value) + " twice");
      continue;
    }
    size.candidates.push_back(value);
    size.candidate_spans.push_back(e.span);
  }
  x3::_val(c) = std::move(size);
};

// The sizes a kernel's parameters' types name, each with its first place.
void ParamSizes(const Ast& ast, TypeId type, std::vector<Name>& out) {
  const auto* tensor = std::get_if<type::Tensor>(&ast.Get(type).node);
  if (!tensor) return;
  std::function<void(DimId)> walk = [&](DimId id) {
    const Dim& d = ast.Get(id);
    if (const auto* var = std::get_if<dim::Var>(&d.node)) {
      out.push_back(Name{var->name, d.span});
    } else if (const auto* binary = std::get_if<dim::Binary>(&d.node)) {
      walk(binary->lhs);
      walk(binary->rhs);
    }
  };
  for (const ShapeItem& item : tensor->shape)
    if (item.dim.valid()) walk(item.dim);
}

// A tile size's name is bound once: not twice in the clause, nor as a size of the parameters (a
// caller's size: the compiler cannot choose it).
template <typename Context>
void CheckTileNames(const Context& context, const std::vector<Param>& params, const std::vector<TileSize>& tiles) {
  Ast& ast = B(context).ast;
  std::vector<Name> bound;
  for (const Param& param : params)
    if (const auto* typed = std::get_if<pattern::Typed>(&ast.Get(param.pattern).node))
      ParamSizes(ast, typed->type, bound);
  for (const TileSize& size : tiles) {
    auto first = std::find_if(bound.begin(), bound.end(), [&](const Name& n) { return n.text == size.name.text; });
    if (first != bound.end()) {
      Diagnostic& error =
          B(context).diagnostics.Emit(DiagnosticKind::DuplicateSizeBinder, size.name.span, size.name.text);
      error.notes.push_back(MakeNote(DiagnosticKind::NoteFirstBinding, first->span, first->text));
    }
    bound.push_back(size.name);
  }
}

const auto make_kernel = [](auto& c) {
  auto& a = x3::_attr(c);
  KernelDecl kernel;
  kernel.name = NameOf(fusion::at_c<0>(a));
  kernel.params = fusion::at_c<1>(a);
  kernel.where = Flatten(fusion::at_c<2>(a));
  kernel.tiles = Flatten(fusion::at_c<3>(a));
  CheckTileNames(c, kernel.params, kernel.tiles);
  kernel.grid = fusion::at_c<4>(a);
  kernel.threads = fusion::at_c<5>(a);
  kernel.body = fusion::at_c<6>(a);
  B(c).ast.decls().push_back(Decl{SpanOf(c), std::move(kernel)});
};
const auto make_import = [](auto& c) {
  Iterator target = x3::_attr(c);
  Import import;
  import.is_path = target->kind == TK::StringLiteral;
  import.target = import.is_path ? Unescape(target->text) : std::string(target->text);
  B(c).ast.decls().push_back(Decl{SpanOf(c), std::move(import)});
};

auto const where_item_def =
    spanned[(tk(TK::TypeVariable) >> kw(TK::Colon) > class_name)[make_class] | expr[make_condition]];
auto const where_items_def = where_item >> *(kw(TK::Comma) > where_item);
auto const class_name_def = tk(TK::Identifier);
auto const size_binders_def = x3::omit[lbracket] > size_binder > *(kw(TK::Comma) > size_binder) > close_bracket;
auto const size_binder_def = tk(TK::Identifier);
auto const def_decl_def =
    spanned[(kw(TK::Def) > def_name > -size_binders > *param > -(kw(TK::Colon) > type) > def_tail > expr)[make_def]];
auto const def_name_def = tk(TK::Identifier);
auto const def_eq_def = kw(TK::Equal);
auto const where_eq_def = kw(TK::Equal);
auto const def_tail_def = (kw(TK::Where) > where_items > where_eq) | def_eq;
auto const kernel_decl_def =
    spanned[(kw(TK::Kernel) > kernel_name > *param > -(kw(TK::Where) > where_items) > -(kw(TK::Tiles) > tile_sizes) >
             kernel_grid > expr > kernel_threads > expr > kernel_eq > expr)[make_kernel]];
auto const tile_sizes_def = tile_size > *(kw(TK::Comma) > tile_size);
auto const tile_size_def = spanned[(tk(TK::Identifier) > tile_in > tile_candidates)[make_tile_size]];
auto const tile_in_def = kw(TK::In);
auto const tile_candidates_def = list;
auto const kernel_name_def = tk(TK::Identifier);
auto const kernel_grid_def = kw(TK::Grid);
auto const kernel_threads_def = kw(TK::Threads);
auto const kernel_eq_def = kw(TK::Equal);
auto const import_decl_def = spanned[(kw(TK::Import) > import_target)[make_import]];
auto const import_target_def = tk(TK::Identifier) | tk(TK::StringLiteral);
auto const decl_def = def_decl | kernel_decl | import_decl;

// Contextual expectations.
auto const in_let_def = kw(TK::In);
auto const eq_let_def = kw(TK::Equal);
auto const then_if_def = kw(TK::Then);
auto const else_if_def = kw(TK::Else);
auto const arrow_fn_def = kw(TK::Arrow);
auto const eq_loop_def = kw(TK::Equal);
auto const for_loop_def = kw(TK::For);
auto const less_counter_def = kw(TK::Less);
auto const do_loop_def = kw(TK::Do);
auto const with_pipeline_def = kw(TK::With);
auto const eq_pipeline_def = kw(TK::Equal);
auto const do_pipeline_def = kw(TK::Do);
auto const close_paren_def = kw(TK::RParen);
auto const close_bracket_def = kw(TK::RBracket);

BOOST_SPIRIT_DEFINE(expr, open_expr, let_expr, if_expr, fn_expr, fn_params, loop_expr, pipeline_expr, counter,
                    pipe_level, or_level, and_level, cmp_level, add_level, mul_level, matmul_level, unary, app,
                    cast_dtype, postfix, index_suffix, close_bracket_tok, index_items, index_item, slice_tail, atom,
                    paren, paren_tail, list, expr_list)
BOOST_SPIRIT_DEFINE(type, type_atom, elem_tok, tensor_type, type_paren, shape, shape_items, shape_item, spread_name,
                    space_layout, space_name)
BOOST_SPIRIT_DEFINE(dim, dim_add, dim_mul, dim_atom)
BOOST_SPIRIT_DEFINE(pattern, pattern_tail, param, out_name, out_colon)
BOOST_SPIRIT_DEFINE(layout_expr, layout_unit, compose_word, layout_int, swizzle, swizzle_word, swizzle_args,
                    layout_call, layout_args, tiler, layout_term, layout_primary, int_tree, int_tree_list)
BOOST_SPIRIT_DEFINE(where_item, where_items, class_name, size_binders, size_binder, where_eq, def_tail, def_decl,
                    def_name, def_eq, kernel_decl, kernel_name, kernel_grid, kernel_threads, kernel_eq, import_decl,
                    import_target, decl, tile_sizes, tile_size, tile_in, tile_candidates)
BOOST_SPIRIT_DEFINE(in_let, eq_let, then_if, else_if, arrow_fn, eq_loop, for_loop, less_counter, do_loop, with_pipeline,
                    eq_pipeline, do_pipeline, close_paren, close_bracket)

// ---- Driving the grammar ----

bool IsDeclStart(TokenKind kind) {
  return kind == TK::Def || kind == TK::Kernel || kind == TK::Import;
}

// Reports a failure at `at` unless the lexer already reported that token.
void ReportExpected(Builder& builder, Iterator at, const std::string& what) {
  if (at->kind == TK::Error) return;
  Diagnostic& error = builder.diagnostics.Emit(DiagnosticKind::ExpectedFound, at->span, what, DescribeFound(*at));
  if (builder.note) {
    DiagnosticKind note = builder.note->opened ? DiagnosticKind::NoteOpenedHere : DiagnosticKind::NoteStartsHere;
    error.notes.push_back(MakeNote(note, builder.note->span, builder.note->what));
  }
}

// Parses `parser` at `first`; on failure reports it and returns false. `first` is left where
// parsing stopped (the failure position on an error).
template <typename Parser>
bool ParseOne(Builder& builder, const Parser& parser, Iterator& first, Iterator last) {
  builder.depth = 0;
  builder.note.reset();
  auto with_builder = x3::with<BuilderTag>(std::ref(builder))[parser];
  try {
    return x3::parse(first, last, with_builder);
  } catch (const x3::expectation_failure<Iterator>& failure) {
    first = failure.where();
    ReportExpected(builder, first, failure.which());
  } catch (const TooDeep& too_deep) {
    builder.diagnostics.Emit(DiagnosticKind::NestingTooDeep, too_deep.at, kMaxNesting);
  }
  return false;
}

void ParseTokens(const std::vector<Token>& tokens, Builder& builder) {
  Iterator first = tokens.data();
  Iterator last = tokens.data() + tokens.size() - 1;  // the EndOfFile token
  while (first != last) {
    Iterator start = first;
    if (!IsDeclStart(first->kind)) {
      if (first->kind != TK::Error)
        builder.diagnostics.Emit(DiagnosticKind::ExpectedDeclaration, first->span, DescribeFound(*first));
    } else if (ParseOne(builder, decl, first, last)) {
      continue;
    }
    // Recover: resume at the next declaration keyword after the start of the broken one.
    first = start + 1;
    while (first != last && !IsDeclStart(first->kind)) ++first;
  }
}

}  // namespace

Ast Parse(const SourceManager& sources, FileId file, Diagnostics& diagnostics) {
  Ast ast(file);
  RunWithDeepStack([&] {
    std::vector<Token> tokens = Lex(sources, file, diagnostics);
    Builder builder{ast, diagnostics};
    ParseTokens(tokens, builder);
  });
  return ast;
}

namespace {

const auto& type_rule = type;  // `type` and `expr` alone are also the AST's namespaces outside this one
const auto& expr_rule = expr;

// Parses a whole file as one `rule` (a layout, a type); `id` is set only if there were no errors.
template <typename Rule, typename Id>
void ParseWhole(const SourceManager& sources, FileId file, Diagnostics& diagnostics, const Rule& rule,
                std::string_view what, Ast& ast, Id& id) {
  RunWithDeepStack([&] {
    int errors_before = diagnostics.error_count();
    std::vector<Token> tokens = Lex(sources, file, diagnostics);
    Builder builder{ast, diagnostics};
    Iterator first = tokens.data();
    Iterator last = tokens.data() + tokens.size() - 1;
    Id parsed;
    auto with_builder = x3::with<BuilderTag>(std::ref(builder))[rule];
    try {
      if (!x3::parse(first, last, with_builder, parsed)) {
        ReportExpected(builder, first, std::string(what));
      } else if (first != last) {
        diagnostics.Emit(DiagnosticKind::TrailingInput, first->span, DescribeFound(*first));
      }
    } catch (const x3::expectation_failure<Iterator>& failure) {
      ReportExpected(builder, failure.where(), failure.which());
    } catch (const TooDeep& too_deep) {
      diagnostics.Emit(DiagnosticKind::NestingTooDeep, too_deep.at, kMaxNesting);
    }
    if (diagnostics.error_count() == errors_before) id = parsed;
  });
}

}  // namespace

LayoutParse ParseLayoutExpression(const SourceManager& sources, FileId file, Diagnostics& diagnostics) {
  LayoutParse result{Ast(file), LayoutId()};
  ParseWhole(sources, file, diagnostics, layout_expr, "a layout", result.ast, result.layout);
  return result;
}

TypeParse ParseTypeExpression(const SourceManager& sources, FileId file, Diagnostics& diagnostics) {
  TypeParse result{Ast(file), TypeId()};
  ParseWhole(sources, file, diagnostics, type_rule, "a type", result.ast, result.type);
  return result;
}

ExprParse ParseExpression(const SourceManager& sources, FileId file, Diagnostics& diagnostics) {
  ExprParse result{Ast(file), ExprId()};
  ParseWhole(sources, file, diagnostics, expr_rule, "an expression", result.ast, result.expr);
  return result;
}

}  // namespace weft::syntax
