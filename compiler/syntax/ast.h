// The abstract syntax tree: syntax/'s output. Nodes live in per-family arenas inside `Ast` and refer
// to each other by typed ids (ExprId, TypeId, ...); every node has the Span of the source it came
// from. Node kinds are declared in ast_kinds.def. The tree keeps everything the source says except
// comments, redundant parentheses and layout, so print(parse(print(ast))) == print(ast) (printer.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "base/dtype.h"
#include "base/source.h"
#include "base/typed_id.h"

namespace weft::syntax {

using ExprId = TypedId<struct ExprTag>;
using TypeId = TypedId<struct TypeTag>;
using DimId = TypedId<struct DimTag>;
using PatternId = TypedId<struct PatternTag>;
using LayoutId = TypedId<struct LayoutTag>;

struct Name {
  std::string text;
  Span span;
};

// Binary operators, loosest first within the table of language.md (Expressions).
enum class BinaryOp : std::uint8_t { Pipe, Or, And, Eq, Ne, Lt, Le, Gt, Ge, Add, Sub, Mul, Div, Mod, MatMul };
std::string_view Spelling(BinaryOp op);
// Binding strength: 1 for `|>` up to 7 for `@`. Prefix `-` is 8, application 9, postfix indexing 10.
int Precedence(BinaryOp op);

// ---- Expressions ----
namespace expr {
struct IntLit {
  std::uint64_t value;
};
struct FloatLit {
  std::string text;
};  // as written; the checker rounds it to its type
struct StringLit {
  std::string value;
};  // escapes resolved
struct BoolLit {
  bool value;
};
struct Var {
  std::string name;
};
struct OperatorRef {
  BinaryOp op;
};  // `(+)`
struct Apply {
  ExprId callee;
  std::vector<ExprId> args;
};  // `f a b`: one node, curried meaning
struct Lambda {
  std::vector<PatternId> params;
  ExprId body;
};
struct Let {
  PatternId pattern;
  ExprId value;
  ExprId body;
};
struct If {
  ExprId condition;
  ExprId then_branch;
  ExprId else_branch;
};
struct Binary {
  BinaryOp op;
  ExprId lhs;
  ExprId rhs;
  Span op_span;
};
struct Negate {
  ExprId operand;
};
struct Tuple {
  std::vector<ExprId> elements;
};  // `()` when empty
struct List {
  std::vector<ExprId> elements;
};  // `[a, b]`: a tensor literal or a shape argument
struct Ascribe {
  ExprId expr;
  TypeId type;
};  // `(e : t)`
struct IndexItem {
  enum class Kind : std::uint8_t { At, Slice, All };  // `i`, `a:b` (either bound may be omitted), `:`
  Kind kind;
  ExprId lo;  // At: the index; Slice: the lower bound (invalid when omitted)
  ExprId hi;  // Slice: the upper bound (invalid when omitted)
  Span span;
};
struct Index {
  ExprId base;
  std::vector<IndexItem> items;
};  // `x[i, a:b, :]`
struct Loop {
  PatternId state;
  ExprId init;
  Name counter;
  ExprId bound;
  ExprId body;
};  // loop p = e for i < n do e
struct Pipeline {
  Name counter;
  ExprId bound;
  PatternId state;
  ExprId init;
  ExprId body;
};  // pipeline i < n with p = e do e
struct Cast {
  Dtype dtype;
  ExprId operand;
};  // cast T e
}  // namespace expr

using ExprNode = std::variant<std::monostate
#define WEFT_EXPR(Name) , expr::Name
#include "syntax/ast_kinds.def"
                              >;
struct Expr {
  Span span;
  ExprNode node;
};

// ---- Dimensions (inside shapes) ----
namespace dim {
struct Int {
  std::int64_t value;
};
struct Var {
  std::string name;
};
struct Binary {
  BinaryOp op;
  DimId lhs;
  DimId rhs;
};  // + - * / %
}  // namespace dim

using DimNode = std::variant<std::monostate
#define WEFT_DIM(Name) , dim::Name
#include "syntax/ast_kinds.def"
                             >;
struct Dim {
  Span span;
  DimNode node;
};

// ---- Layouts (kernel tier, and `weft layout`) ----
// A hierarchical integer tuple: `8` or `(4,(2,2))`.
struct IntTree {
  std::int64_t value = 0;         // a leaf's value
  std::vector<IntTree> children;  // a tuple's modes; empty for a leaf
  bool leaf = true;
};

namespace layout {
struct Variable {
  std::string name;
};  // `?L`
struct IntTuple {
  IntTree tuple;
};  // `(4,2)`: a shape, used as a tiler or an argument
struct Literal {
  IntTree shape;
  IntTree stride;
};  // `(4,2):(2,1)`
struct Swizzle {
  std::int64_t bits;
  std::int64_t base;
  std::int64_t shift;
};  // `swizzle<3,4,3>`
struct Call {
  Name function;
  std::vector<LayoutId> args;
};  // `composition(A, B)`
struct Tiler {
  std::vector<LayoutId> modes;
};  // `<4:1, 2:1>` or `(4:1, 2:1)`: one layout per mode
struct Compose {
  std::vector<LayoutId> parts;
};  // `Sw<3,3,3> o 0 o (8,64):(64,1)`: CuTe's printed composition, outermost function first (2+ parts)
}  // namespace layout

using LayoutNode = std::variant<std::monostate
#define WEFT_LAYOUT(Name) , layout::Name
#include "syntax/ast_kinds.def"
                                >;
struct Layout {
  Span span;
  LayoutNode node;
};

// ---- Types ----
struct ShapeItem {
  bool spread = false;  // `..s`
  std::string spread_name;
  DimId dim;  // when not spread
  Span span;
};

struct ElemType {
  std::optional<Dtype> dtype;  // a dtype, or else the element-type variable `var`
  std::string var;             // without the quote
  Span span;
};

namespace type {
// `f32`, `f32[n, 4]`, `'t[..s]`, `bf16[128, 64] @shared ?L`.
struct Tensor {
  ElemType elem;
  bool has_shape = false;  // `f32` and `f32[]` mean one type but print as written
  std::vector<ShapeItem> shape;
  std::optional<Name> space;  // `@global`, `@shared`, `@reg`
  LayoutId layout;            // optional
};
struct Variable {
  std::string name;
};  // `'a` standing alone: any type
struct Tuple {
  std::vector<TypeId> elements;
};  // `()` when empty
struct Function {
  TypeId param;
  TypeId result;
};
struct String {};
}  // namespace type

using TypeNode = std::variant<std::monostate
#define WEFT_TYPE(Name) , type::Name
#include "syntax/ast_kinds.def"
                              >;
struct Type {
  Span span;
  TypeNode node;
};

// ---- Patterns ----
namespace pattern {
struct Name {
  std::string name;
};
struct Wildcard {};
struct Tuple {
  std::vector<PatternId> elements;
};
struct Typed {
  PatternId pattern;
  TypeId type;
};  // `(x: f32[n])`
}  // namespace pattern

using PatternNode = std::variant<std::monostate
#define WEFT_PATTERN(Name) , pattern::Name
#include "syntax/ast_kinds.def"
                                 >;
struct Pattern {
  Span span;
  PatternNode node;
};

// ---- Declarations ----
struct WhereItem {
  // Either a condition over sizes (`k % 64 == 0`) or a class on an element type (`'t : num`).
  ExprId condition;
  std::string class_var;  // without the quote; set for a class constraint
  Name class_name;
  Span span;
};

struct Param {
  PatternId pattern;
  bool out = false;  // kernels only: `(out c: bf16[m, n])`
  Span span;
};

struct Def {
  Name name;
  std::vector<Name> size_binders;  // `def f [n, m] ...`
  std::vector<Param> params;
  TypeId result;  // optional
  std::vector<WhereItem> where;
  ExprId body;
};

// `tiles bm in [64, 128]`: a size of a kernel's body the compiler chooses, per instance and target,
// from its candidates (docs/kernels.md, "Tile sizes the compiler chooses").
struct TileSize {
  Name name;
  std::vector<std::int64_t> candidates;
  std::vector<Span> candidate_spans;
  Span span;
};

struct KernelDecl {
  Name name;
  std::vector<Param> params;
  std::vector<WhereItem> where;
  std::vector<TileSize> tiles;  // the `tiles` clause, empty without one
  ExprId grid;
  ExprId threads;
  ExprId body;
};

struct Import {
  std::string target;    // a module name (`nn`) or a path
  bool is_path = false;  // `import "file.weft"`
};

struct Decl {
  Span span;
  std::variant<Def, KernelDecl, Import> node;
};

// A parsed file: its declarations in source order and the arenas their nodes live in.
class Ast {
 public:
  explicit Ast(FileId file = FileId()) : file_(file) {}

  FileId file() const { return file_; }
  std::vector<Decl>& decls() { return decls_; }
  const std::vector<Decl>& decls() const { return decls_; }

  ExprId Add(Expr node) { return Push<ExprId>(exprs_, std::move(node)); }
  TypeId Add(Type node) { return Push<TypeId>(types_, std::move(node)); }
  DimId Add(Dim node) { return Push<DimId>(dims_, std::move(node)); }
  PatternId Add(Pattern node) { return Push<PatternId>(patterns_, std::move(node)); }
  LayoutId Add(Layout node) { return Push<LayoutId>(layouts_, std::move(node)); }

  const Expr& Get(ExprId id) const { return exprs_[id.index]; }
  const Type& Get(TypeId id) const { return types_[id.index]; }
  const Dim& Get(DimId id) const { return dims_[id.index]; }
  const Pattern& Get(PatternId id) const { return patterns_[id.index]; }
  const Layout& Get(LayoutId id) const { return layouts_[id.index]; }
  // For the checker's instances of a kernel with a `tiles` clause, which substitute each tile size's
  // candidate for its name in a copy of the file's nodes (check/kernel.cpp).
  Expr& Mutable(ExprId id) { return exprs_[id.index]; }
  Dim& Mutable(DimId id) { return dims_[id.index]; }
  std::size_t expr_count() const { return exprs_.size(); }
  std::size_t pattern_count() const { return patterns_.size(); }

  // Every dim and type of the file, nested ones too, in the order they were parsed (the language
  // server finds size names in them by span).
  const std::vector<Dim>& dims() const { return dims_; }
  const std::vector<Type>& types() const { return types_; }

 private:
  template <typename Id, typename Node>
  static Id Push(std::vector<Node>& arena, Node node) {
    arena.push_back(std::move(node));
    return Id(static_cast<std::uint32_t>(arena.size() - 1));
  }

  FileId file_;
  std::vector<Decl> decls_;
  std::vector<Expr> exprs_;
  std::vector<Type> types_;
  std::vector<Dim> dims_;
  std::vector<Pattern> patterns_;
  std::vector<Layout> layouts_;
};

}  // namespace weft::syntax
