// The core IR printer (`weft check --emit=core`): weft-like syntax in which every binding shows its
// type, weak literals show the type they took, shape arguments show their dims in normal form, and
// run-time checks appear as `check FACT in` where the evaluation makes them. It is a debugging and
// golden-test view, not meant to be parsed back.
#include <charconv>
#include <sstream>

#include "base/overloaded.h"
#include "core/ir.h"
#include "core/type_printer.h"

namespace weft::core {

const Def* Module::Find(std::string_view name) const {
  for (auto it = defs_.rbegin(); it != defs_.rend(); ++it) {
    if (it->name == name) return &*it;
  }
  return nullptr;
}

namespace {

bool IsInfix(std::string_view name) {
  static constexpr std::string_view kInfix[] = {"+",  "-", "*",  "/", "%",  "==", "!=", "<",
                                                "<=", ">", ">=", "@", "&&", "||", "|>"};
  for (std::string_view op : kInfix) {
    if (op == name) return true;
  }
  return false;
}

class IrPrinter {
 public:
  IrPrinter(const Module& module, const VarStore& vars) : module_(module), types_(vars) {}

  std::string PrintDef(const Def& def) {
    out_.str("");
    if (def.kernel && def.body) return PrintKernel(def);
    out_ << (def.body ? "def " : "decl ") << def.name;
    for (PatternId p : def.params) out_ << " " << Binder(p);
    if (def.body) {
      const TypeRef& result = ResultType(def);
      out_ << " : " << types_.Print(result);
    } else {
      out_ << " : " << types_.Print(def.scheme.type);
    }
    if (!def.scheme.where.empty()) {
      out_ << " where ";
      for (std::size_t i = 0; i < def.scheme.where.size(); ++i) out_ << (i ? ", " : "") << Fact(def.scheme.where[i]);
    }
    if (!def.body) {
      out_ << "  -- not elaborated: it has errors\n";
      return out_.str();
    }
    out_ << " =\n  ";
    Print(def.body, 2);
    out_ << "\n";
    return out_.str();
  }

 private:
  // `kernel name (a : T) (out c : U) : R where .. grid (..) threads N =` and the body.
  std::string PrintKernel(const Def& def) {
    const KernelInfo& kernel = *def.kernel;
    out_ << "kernel " << def.name;
    for (std::size_t i = 0; i < def.params.size(); ++i) {
      std::string binder = Binder(def.params[i]);
      if (i < kernel.out.size() && kernel.out[i]) binder = "(out " + binder.substr(1);
      out_ << " " << binder;
    }
    TypeRef t = def.scheme.type;
    for (std::size_t i = 0; i < def.params.size(); ++i) {
      if (i < kernel.out.size() && kernel.out[i]) continue;
      const auto* f = std::get_if<FunctionType>(&t->node);
      if (!f) break;
      t = f->result;
    }
    out_ << " : " << types_.Print(t);
    if (!def.scheme.where.empty()) {
      out_ << " where ";
      for (std::size_t i = 0; i < def.scheme.where.size(); ++i) out_ << (i ? ", " : "") << Fact(def.scheme.where[i]);
    }
    out_ << " grid (";
    for (std::size_t i = 0; i < kernel.grid.size(); ++i) {
      if (i) out_ << ", ";
      Print(kernel.grid[i], 0);
    }
    out_ << ") threads ";
    if (kernel.threads) {
      const auto* lit = std::get_if<expr::IntLit>(&module_.Get(kernel.threads).node);
      if (lit) out_ << lit->value;
    }
    out_ << " =\n  ";
    Print(def.body, 2);
    out_ << "\n";
    return out_.str();
  }

  TypeRef ResultType(const Def& def) const {
    TypeRef t = def.scheme.type;
    for (std::size_t i = 0; i < def.params.size(); ++i) {
      const auto* f = std::get_if<FunctionType>(&t->node);
      if (!f) break;
      t = f->result;
    }
    return t;
  }

  std::string Fact(const DimFact& f) {
    return types_.Print(f.lhs) + " " + std::string(Spelling(f.relation)) + " " + types_.Print(f.rhs);
  }

  std::string Binder(PatternId id) {
    const Pattern& p = module_.Get(id);
    return std::visit(Overloaded{
                          [&](const pattern::Name& n) { return "(" + n.name + " : " + types_.Print(p.type) + ")"; },
                          [&](const pattern::Wildcard&) { return "(_ : " + types_.Print(p.type) + ")"; },
                          [&](const pattern::Tuple& t) {
                            std::string s = "(";
                            for (std::size_t i = 0; i < t.elements.size(); ++i)
                              s += (i ? ", " : "") + Binder(t.elements[i]);
                            return s + ")";
                          },
                      },
                      p.node);
  }

  void Newline(int indent) { out_ << "\n" << std::string(static_cast<std::size_t>(indent), ' '); }

  bool Atomic(ExprId id) const {
    const Expr& e = module_.Get(id);
    if (e.placement) return true;  // printed in parentheses
    if (!e.checks.empty()) return false;
    return std::holds_alternative<expr::IntLit>(e.node) || std::holds_alternative<expr::FloatLit>(e.node) ||
           std::holds_alternative<expr::BoolLit>(e.node) || std::holds_alternative<expr::StringLit>(e.node) ||
           std::holds_alternative<expr::Local>(e.node) || std::holds_alternative<expr::Global>(e.node) ||
           std::holds_alternative<expr::Builtin>(e.node) || std::holds_alternative<expr::SizeValue>(e.node) ||
           std::holds_alternative<expr::ShapeArg>(e.node) || std::holds_alternative<expr::Tuple>(e.node) ||
           std::holds_alternative<expr::TensorLit>(e.node) || std::holds_alternative<expr::Index>(e.node);
  }

  void Operand(ExprId id, int indent) {
    if (Atomic(id)) return Print(id, indent);
    out_ << "(";
    Print(id, indent + 1);
    out_ << ")";
  }

  void Print(ExprId id, int indent) {
    const Expr& e = module_.Get(id);
    if (e.placement) {
      // A kernel-tier ascription: `(e : f32[128, 128] @reg L)`.
      out_ << "(";
      PrintNode(id, indent + 1);
      out_ << " : " << types_.Print(e.type) << " " << e.placement->space;
      if (e.placement->layout) out_ << " " << e.placement->layout->text;
      out_ << ")";
      return;
    }
    PrintNode(id, indent);
  }

  void PrintNode(ExprId id, int indent) {
    const Expr& e = module_.Get(id);
    for (const RuntimeCheck& c : e.checks) {
      out_ << "check " << Fact(c.fact) << " in  -- " << c.what;
      Newline(indent);
    }
    std::visit(Overloaded{
                   [&](const expr::IntLit& lit) { out_ << "(" << lit.value << " : " << types_.Print(e.type) << ")"; },
                   [&](const expr::FloatLit& lit) {
                     char text[64];
                     auto end = std::to_chars(text, text + sizeof text, lit.value).ptr;  // the shortest that reads back
                     std::string s(text, end);
                     if (s.find_first_of(".ein") == std::string::npos) s += ".0";
                     out_ << "(" << s << " : " << types_.Print(e.type) << ")";
                   },
                   [&](const expr::BoolLit& lit) { out_ << (lit.value ? "true" : "false"); },
                   [&](const expr::StringLit& lit) { out_ << '"' << lit.value << '"'; },
                   [&](const expr::Local& v) { out_ << v.name; },
                   [&](const expr::Global& v) { out_ << v.name; },
                   [&](const expr::Builtin& v) {
                     if (IsInfix(v.name)) {
                       out_ << "(" << v.name << ")";
                     } else {
                       out_ << v.name;
                     }
                   },
                   [&](const expr::SizeValue& s) { out_ << types_.Print(s.dim); },
                   [&](const expr::ShapeArg& s) {
                     out_ << "[";
                     for (std::size_t i = 0; i < s.dims.size(); ++i) out_ << (i ? ", " : "") << types_.Print(s.dims[i]);
                     out_ << "]";
                   },
                   [&](const expr::Apply& apply) {
                     const Expr& callee = module_.Get(apply.callee);
                     const auto* builtin = std::get_if<expr::Builtin>(&callee.node);
                     if (builtin && IsInfix(builtin->name) && apply.args.size() == 2) {
                       Operand(apply.args[0], indent);
                       out_ << " " << builtin->name << " ";
                       Operand(apply.args[1], indent);
                       return;
                     }
                     Operand(apply.callee, indent);
                     for (ExprId a : apply.args) {
                       out_ << " ";
                       Operand(a, indent);
                     }
                   },
                   [&](const expr::Lambda& lambda) {
                     out_ << "fn";
                     for (PatternId p : lambda.params) out_ << " " << Binder(p);
                     out_ << " ->";
                     Newline(indent + 2);
                     Print(lambda.body, indent + 2);
                   },
                   [&](const expr::Let& let) {
                     out_ << "let " << Binder(let.pattern) << " =";
                     Newline(indent + 2);
                     Print(let.value, indent + 2);
                     out_ << " in";
                     Newline(indent);
                     Print(let.body, indent);
                   },
                   [&](const expr::If& branch) {
                     out_ << "if ";
                     Print(branch.condition, indent + 3);
                     Newline(indent);
                     out_ << "then ";
                     Print(branch.then_branch, indent + 5);
                     Newline(indent);
                     out_ << "else ";
                     Print(branch.else_branch, indent + 5);
                   },
                   [&](const expr::Tuple& tuple) {
                     out_ << "(";
                     for (std::size_t i = 0; i < tuple.elements.size(); ++i) {
                       if (i) out_ << ", ";
                       Print(tuple.elements[i], indent + 1);
                     }
                     out_ << ")";
                   },
                   [&](const expr::TensorLit& list) {
                     out_ << "[";
                     for (std::size_t i = 0; i < list.elements.size(); ++i) {
                       if (i) out_ << ", ";
                       Print(list.elements[i], indent + 1);
                     }
                     out_ << "]";
                   },
                   [&](const expr::Index& index) {
                     Operand(index.base, indent);
                     out_ << "[";
                     for (std::size_t i = 0; i < index.items.size(); ++i) {
                       if (i) out_ << ", ";
                       const expr::IndexItem& item = index.items[i];
                       switch (item.kind) {
                         case expr::IndexItem::Kind::At:
                           Print(item.at, indent);
                           break;
                         case expr::IndexItem::Kind::All:
                           out_ << ":";
                           break;
                         case expr::IndexItem::Kind::Slice:
                           out_ << types_.Print(item.lo) << ":" << (item.hi ? types_.Print(*item.hi) : "");
                           break;
                       }
                     }
                     out_ << "]";
                   },
                   [&](const expr::Loop& loop) {
                     if (loop.pipelined) {
                       out_ << "pipeline " << loop.counter << " < ";
                       Print(loop.bound, indent + 2);
                       out_ << " with " << Binder(loop.state) << " = ";
                       Print(loop.init, indent + 2);
                     } else {
                       out_ << "loop " << Binder(loop.state) << " = ";
                       Print(loop.init, indent + 2);
                       out_ << " for " << loop.counter << " < ";
                       Print(loop.bound, indent + 2);
                     }
                     out_ << " do";
                     Newline(indent + 2);
                     Print(loop.body, indent + 2);
                   },
                   [&](const expr::Cast& cast) {
                     out_ << "cast " << Spelling(cast.dtype) << " ";
                     Operand(cast.operand, indent);
                   },
               },
               e.node);
  }

  const Module& module_;
  TypePrinter types_;
  std::ostringstream out_;
};

}  // namespace

std::string Print(const Module& module, const VarStore& vars, const Def& def) {
  return IrPrinter(module, vars).PrintDef(def);
}

std::string Print(const Module& module, const VarStore& vars) {
  std::string out;
  for (const Def& def : module.defs()) {
    if (!out.empty()) out += "\n";
    out += Print(module, vars, def);
  }
  return out;
}

}  // namespace weft::core
