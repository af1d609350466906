// The S-expression dump of an Ast (printer.h): one form per node, children in order, no spans.
#include "base/overloaded.h"
#include "diagnostics/diagnostic.h"
#include "syntax/printer.h"

namespace weft::syntax {
namespace {

class Dumper {
 public:
  explicit Dumper(const Ast& ast) : ast_(ast) {}

  std::string File() {
    std::string out;
    for (const Decl& decl : ast_.decls()) out += DeclForm(decl) + "\n";
    return out;
  }

 private:
  template <typename Id>
  std::string List(const std::vector<Id>& ids) {
    std::string out;
    for (Id id : ids) out += " " + Form(id);
    return out;
  }

  std::string Params(const std::vector<Param>& params) {
    std::string out = "(params";
    for (const Param& p : params) out += p.out ? " (out " + Form(p.pattern) + ")" : " " + Form(p.pattern);
    return out + ")";
  }

  std::string Where(const std::vector<WhereItem>& items) {
    std::string out = "(where";
    for (const WhereItem& item : items) {
      out += item.class_var.empty() ? " " + Form(item.condition)
                                    : " (class '" + item.class_var + " " + item.class_name.text + ")";
    }
    return out + ")";
  }

  std::string DeclForm(const Decl& decl) {
    return std::visit(
        Overloaded{
            [&](const Def& def) {
              std::string binders = "(sizes";
              for (const Name& n : def.size_binders) binders += " " + n.text;
              return "(def " + def.name.text + " " + binders + ") " + Params(def.params) + " " +
                     (def.result ? Form(def.result) : "(no-type)") + " " + Where(def.where) + " " + Form(def.body) +
                     ")";
            },
            [&](const KernelDecl& k) {
              std::string tiles;
              for (const TileSize& t : k.tiles) {
                tiles += " (tiles " + t.name.text;
                for (std::int64_t c : t.candidates) tiles += " " + std::to_string(c);
                tiles += ")";
              }
              return "(kernel " + k.name.text + " " + Params(k.params) + " " + Where(k.where) + tiles + " (grid " +
                     Form(k.grid) + ") (threads " + Form(k.threads) + ") " + Form(k.body) + ")";
            },
            [&](const Import& i) { return "(import " + std::string(i.is_path ? "path " : "module ") + i.target + ")"; },
        },
        decl.node);
  }

  std::string Form(ExprId id) {
    return std::visit(
        Overloaded{
            [&](std::monostate) -> std::string { WEFT_INTERNAL_ERROR("empty expression node"); },
            [&](const expr::IntLit& x) { return "(int " + std::to_string(x.value) + ")"; },
            [&](const expr::FloatLit& x) { return "(float " + x.text + ")"; },
            [&](const expr::StringLit& x) { return "(string " + QuoteString(x.value) + ")"; },
            [&](const expr::BoolLit& x) { return std::string(x.value ? "(bool true)" : "(bool false)"); },
            [&](const expr::Var& x) { return "(var " + x.name + ")"; },
            [&](const expr::OperatorRef& x) { return "(operator " + std::string(Spelling(x.op)) + ")"; },
            [&](const expr::Apply& x) { return "(apply " + Form(x.callee) + List(x.args) + ")"; },
            [&](const expr::Lambda& x) { return "(fn" + List(x.params) + " " + Form(x.body) + ")"; },
            [&](const expr::Let& x) {
              return "(let " + Form(x.pattern) + " " + Form(x.value) + " " + Form(x.body) + ")";
            },
            [&](const expr::If& x) {
              return "(if " + Form(x.condition) + " " + Form(x.then_branch) + " " + Form(x.else_branch) + ")";
            },
            [&](const expr::Binary& x) {
              return "(" + std::string(Spelling(x.op)) + " " + Form(x.lhs) + " " + Form(x.rhs) + ")";
            },
            [&](const expr::Negate& x) { return "(negate " + Form(x.operand) + ")"; },
            [&](const expr::Tuple& x) { return "(tuple" + List(x.elements) + ")"; },
            [&](const expr::List& x) { return "(list" + List(x.elements) + ")"; },
            [&](const expr::Ascribe& x) { return "(ascribe " + Form(x.expr) + " " + Form(x.type) + ")"; },
            [&](const expr::Index& x) {
              std::string out = "(index " + Form(x.base);
              for (const expr::IndexItem& item : x.items) {
                switch (item.kind) {
                  case expr::IndexItem::Kind::At:
                    out += " (at " + Form(item.lo) + ")";
                    break;
                  case expr::IndexItem::Kind::All:
                    out += " (all)";
                    break;
                  case expr::IndexItem::Kind::Slice:
                    out += " (slice " + (item.lo ? Form(item.lo) : "_") + " " + (item.hi ? Form(item.hi) : "_") + ")";
                    break;
                }
              }
              return out + ")";
            },
            [&](const expr::Loop& x) {
              return "(loop " + Form(x.state) + " " + Form(x.init) + " " + x.counter.text + " " + Form(x.bound) + " " +
                     Form(x.body) + ")";
            },
            [&](const expr::Pipeline& x) {
              return "(pipeline " + x.counter.text + " " + Form(x.bound) + " " + Form(x.state) + " " + Form(x.init) +
                     " " + Form(x.body) + ")";
            },
            [&](const expr::Cast& x) {
              return "(cast " + std::string(Spelling(x.dtype)) + " " + Form(x.operand) + ")";
            },
        },
        ast_.Get(id).node);
  }

  std::string Form(PatternId id) {
    return std::visit(
        Overloaded{
            [&](std::monostate) -> std::string { WEFT_INTERNAL_ERROR("empty pattern node"); },
            [&](const pattern::Name& x) { return "(pname " + x.name + ")"; },
            [&](const pattern::Wildcard&) { return std::string("(pwild)"); },
            [&](const pattern::Tuple& x) { return "(ptuple" + List(x.elements) + ")"; },
            [&](const pattern::Typed& x) { return "(ptyped " + Form(x.pattern) + " " + Form(x.type) + ")"; },
        },
        ast_.Get(id).node);
  }

  std::string Form(TypeId id) {
    return std::visit(Overloaded{
                          [&](std::monostate) -> std::string { WEFT_INTERNAL_ERROR("empty type node"); },
                          [&](const type::Tensor& x) {
                            std::string out =
                                "(tensor " + (x.elem.dtype ? std::string(Spelling(*x.elem.dtype)) : "'" + x.elem.var);
                            if (x.has_shape) {
                              out += " (shape";
                              for (const ShapeItem& item : x.shape)
                                out += item.spread ? " (spread " + item.spread_name + ")" : " " + Form(item.dim);
                              out += ")";
                            }
                            if (x.space) out += " (space " + x.space->text + ")";
                            if (x.layout) out += " " + PrintLayout(ast_, x.layout);
                            return out + ")";
                          },
                          [&](const type::Variable& x) { return "(tvar '" + x.name + ")"; },
                          [&](const type::Tuple& x) { return "(ttuple" + List(x.elements) + ")"; },
                          [&](const type::Function& x) { return "(-> " + Form(x.param) + " " + Form(x.result) + ")"; },
                          [&](const type::String&) { return std::string("(string-type)"); },
                      },
                      ast_.Get(id).node);
  }

  std::string Form(DimId id) {
    return std::visit(Overloaded{
                          [&](std::monostate) -> std::string { WEFT_INTERNAL_ERROR("empty dim node"); },
                          [&](const dim::Int& x) { return std::to_string(x.value); },
                          [&](const dim::Var& x) { return x.name; },
                          [&](const dim::Binary& x) {
                            return "(" + std::string(Spelling(x.op)) + " " + Form(x.lhs) + " " + Form(x.rhs) + ")";
                          },
                      },
                      ast_.Get(id).node);
  }

  const Ast& ast_;
};

}  // namespace

std::string Dump(const Ast& ast) {
  return Dumper(ast).File();
}

}  // namespace weft::syntax
