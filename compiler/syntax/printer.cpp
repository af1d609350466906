// Source printer. Each expression has a binding level (0 for the open constructs `let`, `if`, `fn`,
// `loop`, `pipeline`; 1 to 7 for binary operators; 8 prefix `-`; 9 application and `cast`;
// 10 postfix indexing; 11 atoms), and a sub-expression is parenthesized when its level is below
// what its position requires. Open constructs are parenthesized everywhere but in tail positions.
#include "syntax/printer.h"
#include "base/overloaded.h"

#include "diagnostics/diagnostic.h"

namespace weft::syntax {
namespace {

constexpr int kOpen = 0;
constexpr int kPrefix = 8;
constexpr int kApply = 9;
constexpr int kPostfix = 10;
constexpr int kAtom = 11;

}  // namespace

std::string QuoteString(std::string_view value) {
  std::string out = "\"";
  for (char c : value) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        out += c;
    }
  }
  return out + "\"";
}

namespace {

template <typename T, typename F>
std::string Join(const std::vector<T>& items, std::string_view separator, F&& each) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) out += separator;
    out += each(items[i]);
  }
  return out;
}

class Printer {
 public:
  explicit Printer(const Ast& ast) : ast_(ast) {}

  std::string File() {
    std::string out;
    for (const Decl& decl : ast_.decls()) {
      if (!out.empty()) out += "\n";
      out += DeclText(decl) + "\n";
    }
    return out;
  }

  std::string DeclText(const Decl& decl) {
    return std::visit(
        Overloaded{
            [&](const Def& def) {
              std::string out = "def " + def.name.text;
              if (!def.size_binders.empty()) {
                out += " [" + Join(def.size_binders, ", ", [](const Name& n) { return n.text; }) + "]";
              }
              out += Params(def.params);
              if (def.result) out += " : " + TypeText(def.result);
              out += Where(def.where);
              return out + " =\n  " + Indented(def.body);
            },
            [&](const KernelDecl& kernel) {
              std::string out = "kernel " + kernel.name.text + Params(kernel.params) + Where(kernel.where);
              if (!kernel.tiles.empty())
                out += "\n    tiles " + Join(kernel.tiles, ", ", [](const TileSize& t) {
                         return t.name.text + " in [" +
                                Join(t.candidates, ", ", [](std::int64_t c) { return std::to_string(c); }) + "]";
                       });
              out += "\n    grid " + ExprText(kernel.grid, 1) + " threads " + ExprText(kernel.threads, 1);
              return out + " =\n  " + Indented(kernel.body);
            },
            [&](const Import& import) {
              return "import " + (import.is_path ? QuoteString(import.target) : import.target);
            },
        },
        decl.node);
  }

  std::string Params(const std::vector<Param>& params) {
    std::string out;
    for (const Param& param : params) {
      out += " ";
      if (param.out) {
        const auto& typed = std::get<pattern::Typed>(ast_.Get(param.pattern).node);
        out += "(out " + PatternText(typed.pattern) + ": " + TypeText(typed.type) + ")";
      } else {
        out += PatternText(param.pattern);
      }
    }
    return out;
  }

  std::string Where(const std::vector<WhereItem>& items) {
    if (items.empty()) return "";
    return " where " + Join(items, ", ", [&](const WhereItem& item) {
             if (!item.class_var.empty()) return "'" + item.class_var + " : " + item.class_name.text;
             return ExprText(item.condition, 1);
           });
  }

  // A body on its own lines: `let` chains print one binding a line.
  std::string Indented(ExprId id) {
    const Expr& e = ast_.Get(id);
    if (const auto* let = std::get_if<expr::Let>(&e.node)) {
      return "let " + PatternText(let->pattern) + " = " + ExprText(let->value, kOpen) + " in\n  " + Indented(let->body);
    }
    return ExprText(id, kOpen);
  }

  std::string ExprText(ExprId id, int context) {
    const Expr& e = ast_.Get(id);
    int level = kAtom;
    std::string text = std::visit(
        Overloaded{
            [&](std::monostate) -> std::string { WEFT_INTERNAL_ERROR("empty expression node"); },
            [&](const expr::IntLit& lit) { return std::to_string(lit.value); },
            [&](const expr::FloatLit& lit) { return lit.text; },
            [&](const expr::StringLit& lit) { return QuoteString(lit.value); },
            [&](const expr::BoolLit& lit) { return std::string(lit.value ? "true" : "false"); },
            [&](const expr::Var& var) { return var.name; },
            [&](const expr::OperatorRef& ref) { return "(" + std::string(Spelling(ref.op)) + ")"; },
            [&](const expr::Apply& apply) {
              level = kApply;
              return ExprText(apply.callee, kPostfix) + " " +
                     Join(apply.args, " ", [&](ExprId arg) { return ExprText(arg, kPostfix); });
            },
            [&](const expr::Lambda& lambda) {
              level = kOpen;
              return "fn " + Join(lambda.params, " ", [&](PatternId p) { return PatternText(p); }) + " -> " +
                     ExprText(lambda.body, kOpen);
            },
            [&](const expr::Let& let) {
              level = kOpen;
              return "let " + PatternText(let.pattern) + " = " + ExprText(let.value, kOpen) + " in " +
                     ExprText(let.body, kOpen);
            },
            [&](const expr::If& branch) {
              level = kOpen;
              return "if " + ExprText(branch.condition, kOpen) + " then " + ExprText(branch.then_branch, kOpen) +
                     " else " + ExprText(branch.else_branch, kOpen);
            },
            [&](const expr::Binary& binary) {
              level = Precedence(binary.op);
              return ExprText(binary.lhs, level) + " " + std::string(Spelling(binary.op)) + " " +
                     ExprText(binary.rhs, level + 1);
            },
            [&](const expr::Negate& negate) {
              level = kPrefix;
              std::string operand = ExprText(negate.operand, kPrefix);
              return (operand.front() == '-' ? "- " : "-") + operand;  // `--` would open a comment
            },
            [&](const expr::Tuple& tuple) {
              return "(" + Join(tuple.elements, ", ", [&](ExprId x) { return ExprText(x, kOpen); }) + ")";
            },
            [&](const expr::List& list) {
              return "[" + Join(list.elements, ", ", [&](ExprId x) { return ExprText(x, kOpen); }) + "]";
            },
            [&](const expr::Ascribe& ascribe) {
              return "(" + ExprText(ascribe.expr, kOpen) + " : " + TypeText(ascribe.type) + ")";
            },
            [&](const expr::Index& index) {
              level = kPostfix;
              return ExprText(index.base, kPostfix) + "[" +
                     Join(index.items, ", ", [&](const expr::IndexItem& item) { return IndexText(item); }) + "]";
            },
            [&](const expr::Loop& loop) {
              level = kOpen;
              return "loop " + PatternText(loop.state) + " = " + ExprText(loop.init, kOpen) + " for " +
                     loop.counter.text + " < " + ExprText(loop.bound, kOpen) + " do " + ExprText(loop.body, kOpen);
            },
            [&](const expr::Pipeline& pipeline) {
              level = kOpen;
              return "pipeline " + pipeline.counter.text + " < " + ExprText(pipeline.bound, kOpen) + " with " +
                     PatternText(pipeline.state) + " = " + ExprText(pipeline.init, kOpen) + " do " +
                     ExprText(pipeline.body, kOpen);
            },
            [&](const expr::Cast& cast) {
              level = kApply;
              return "cast " + std::string(Spelling(cast.dtype)) + " " + ExprText(cast.operand, kPostfix);
            },
        },
        e.node);
    return level < context ? "(" + text + ")" : text;
  }

  std::string IndexText(const expr::IndexItem& item) {
    switch (item.kind) {
      case expr::IndexItem::Kind::At:
        return ExprText(item.lo, 1);
      case expr::IndexItem::Kind::All:
        return ":";
      case expr::IndexItem::Kind::Slice:
        return (item.lo ? ExprText(item.lo, 1) : "") + ":" + (item.hi ? ExprText(item.hi, 1) : "");
    }
    return "";
  }

  std::string PatternText(PatternId id) {
    return std::visit(Overloaded{
                          [&](std::monostate) -> std::string { WEFT_INTERNAL_ERROR("empty pattern node"); },
                          [&](const pattern::Name& name) { return name.name; },
                          [&](const pattern::Wildcard&) { return std::string("_"); },
                          [&](const pattern::Tuple& tuple) {
                            return "(" + Join(tuple.elements, ", ", [&](PatternId p) { return PatternText(p); }) + ")";
                          },
                          [&](const pattern::Typed& typed) {
                            return "(" + PatternText(typed.pattern) + ": " + TypeText(typed.type) + ")";
                          },
                      },
                      ast_.Get(id).node);
  }

  std::string TypeText(TypeId id) {
    return std::visit(Overloaded{
                          [&](std::monostate) -> std::string { WEFT_INTERNAL_ERROR("empty type node"); },
                          [&](const type::Tensor& tensor) {
                            std::string out =
                                tensor.elem.dtype ? std::string(Spelling(*tensor.elem.dtype)) : "'" + tensor.elem.var;
                            if (tensor.has_shape) {
                              out += "[" +
                                     Join(tensor.shape, ", ",
                                          [&](const ShapeItem& item) {
                                            return item.spread ? ".." + item.spread_name : DimText(item.dim, 0);
                                          }) +
                                     "]";
                            }
                            if (tensor.space) out += " @" + tensor.space->text;
                            if (tensor.layout) out += " " + LayoutText(tensor.layout);
                            return out;
                          },
                          [&](const type::Variable& var) { return "'" + var.name; },
                          [&](const type::Tuple& tuple) {
                            return "(" + Join(tuple.elements, ", ", [&](TypeId t) { return TypeText(t); }) + ")";
                          },
                          [&](const type::Function& function) {
                            std::string param = TypeText(function.param);
                            if (std::holds_alternative<type::Function>(ast_.Get(function.param).node))
                              param = "(" + param + ")";
                            return param + " -> " + TypeText(function.result);
                          },
                          [&](const type::String&) { return std::string("string"); },
                      },
                      ast_.Get(id).node);
  }

  std::string DimText(DimId id, int context) {
    const Dim& d = ast_.Get(id);
    int level = kAtom;
    std::string text = std::visit(Overloaded{
                                      [&](std::monostate) -> std::string { WEFT_INTERNAL_ERROR("empty dim node"); },
                                      [&](const dim::Int& i) { return std::to_string(i.value); },
                                      [&](const dim::Var& v) { return v.name; },
                                      [&](const dim::Binary& b) {
                                        level = Precedence(b.op);
                                        return DimText(b.lhs, level) + " " + std::string(Spelling(b.op)) + " " +
                                               DimText(b.rhs, level + 1);
                                      },
                                  },
                                  d.node);
    return level < context ? "(" + text + ")" : text;
  }

  std::string LayoutText(LayoutId id) {
    return std::visit(Overloaded{
                          [&](std::monostate) -> std::string { WEFT_INTERNAL_ERROR("empty layout node"); },
                          [&](const layout::Variable& var) { return "?" + var.name; },
                          [&](const layout::IntTuple& tuple) { return FormatIntTree(tuple.tuple); },
                          [&](const layout::Literal& literal) {
                            return FormatIntTree(literal.shape) + ":" + FormatIntTree(literal.stride);
                          },
                          [&](const layout::Swizzle& swizzle) {
                            return "swizzle<" + std::to_string(swizzle.bits) + "," + std::to_string(swizzle.base) +
                                   "," + std::to_string(swizzle.shift) + ">";
                          },
                          [&](const layout::Tiler& tiler) {
                            return "<" + Join(tiler.modes, ", ", [&](LayoutId a) { return LayoutText(a); }) + ">";
                          },
                          [&](const layout::Call& call) {
                            return call.function.text + "(" +
                                   Join(call.args, ", ", [&](LayoutId a) { return LayoutText(a); }) + ")";
                          },
                          [&](const layout::Compose& compose) {
                            return Join(compose.parts, " o ", [&](LayoutId a) { return LayoutText(a); });
                          },
                      },
                      ast_.Get(id).node);
  }

 private:
  const Ast& ast_;
};

}  // namespace

std::string_view Spelling(BinaryOp op) {
  switch (op) {
    case BinaryOp::Pipe:
      return "|>";
    case BinaryOp::Or:
      return "||";
    case BinaryOp::And:
      return "&&";
    case BinaryOp::Eq:
      return "==";
    case BinaryOp::Ne:
      return "!=";
    case BinaryOp::Lt:
      return "<";
    case BinaryOp::Le:
      return "<=";
    case BinaryOp::Gt:
      return ">";
    case BinaryOp::Ge:
      return ">=";
    case BinaryOp::Add:
      return "+";
    case BinaryOp::Sub:
      return "-";
    case BinaryOp::Mul:
      return "*";
    case BinaryOp::Div:
      return "/";
    case BinaryOp::Mod:
      return "%";
    case BinaryOp::MatMul:
      return "@";
  }
  return "?";
}

int Precedence(BinaryOp op) {
  switch (op) {
    case BinaryOp::Pipe:
      return 1;
    case BinaryOp::Or:
      return 2;
    case BinaryOp::And:
      return 3;
    case BinaryOp::Eq:
    case BinaryOp::Ne:
    case BinaryOp::Lt:
    case BinaryOp::Le:
    case BinaryOp::Gt:
    case BinaryOp::Ge:
      return 4;
    case BinaryOp::Add:
    case BinaryOp::Sub:
      return 5;
    case BinaryOp::Mul:
    case BinaryOp::Div:
    case BinaryOp::Mod:
      return 6;
    case BinaryOp::MatMul:
      return 7;
  }
  return 0;
}

std::string FormatIntTree(const IntTree& tree) {
  if (tree.leaf) return std::to_string(tree.value);
  return "(" + Join(tree.children, ",", [](const IntTree& child) { return FormatIntTree(child); }) + ")";
}

std::string Print(const Ast& ast) {
  return Printer(ast).File();
}

std::string PrintLayout(const Ast& ast, LayoutId layout) {
  return Printer(ast).LayoutText(layout);
}

}  // namespace weft::syntax
