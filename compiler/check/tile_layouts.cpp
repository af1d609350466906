// The tile layout stage: a kernel's layout types (docs/layouts.md, "Kernel tiles";
// core/tile_layout.h). A kernel's register and shared tiles have CuTe layouts that depend on the
// target, so the checker does not choose them; it states how they are related, and synthesis
// solves the relations per target. Run on a kernel's core IR once it is elaborated.
//
//  1. The body is walked as tile::Lower walks it (evaluation order, `f a b` flattened), with where
//     each value lives (docs/tile-ir.md's table): a scalar, a global tile (`tile`), a shared tile
//     (`shared`, `transpose`) or a register tile (`regs`, `convert`, `zeros`, `iota`, `mma`, a
//     reduction, `expand`, an elementwise op or `cast` on a register tile).
//  2. Each shared and register tile gets a layout variable ('L1, 'L2, ...), with the place
//     tile::Lower finds its value at (the expression, or a leaf of a loop's state).
//  3. Each operation records its constraints (elementwise ops', `cast`'s and reductions' by
//     core/tile_layout.h's rules, which graph/epilogue.cpp applies too): Equal for
//     elementwise ops of equal shape, `cast`, `expand`, mma's accumulator and result, and a loop's
//     initial, carried, yielded and final values; SliceOf for reductions and broadcast operands;
//     MmaOperand for mma's A, B and accumulator; Copy for `shared`, `regs`, `store` and `convert`;
//     Transpose for a shared view; Pinned where the program wrote a layout.
//  4. The constraints are kept in the tile IR's op order (a loop's before its body's: synthesis
//     unifies in that order and reports a conflict where two layouts meet).
// Operations the kernel tier refuses are passed over: tile::Lower reports them, and a kernel it
// refuses has no tile IR for the constraints to apply to.
#include <functional>
#include <map>

#include "base/overloaded.h"
#include "check/checker.h"

namespace weft::check {
namespace {

namespace ce = core::expr;

enum class Place : std::uint8_t { Scalar, Global, Shared, Reg };

// What an expression makes: one value (a place, and a variable for a tile), a tuple of them, or
// unit (`store`, `()`), as tile::Lower's Lowered.
struct Val {
  std::optional<Place> place;
  std::int32_t var = kNoTile;
  std::vector<std::int64_t> shape;  // a tile's constant extents (-1 where one is not constant)
  Span global;                      // a global tile: its `tile` expression
  std::vector<Val> elements;
  std::int32_t param = -1;  // a tensor parameter: its place in the definition's parameters

  static Val Of(Place place) { return Val{place, kNoTile, {}, {}, {}, -1}; }
  bool tile() const { return place == Place::Shared || place == Place::Reg; }
  bool reg() const { return place == Place::Reg; }
  void Leaves(std::vector<const Val*>& out) const {
    if (place) out.push_back(this);
    for (const Val& e : elements) e.Leaves(out);
  }
};

class TileLayoutStage {
 public:
  TileLayoutStage(const core::Module& module, const VarStore& vars, const core::Def& def)
      : module_(module), vars_(vars) {
    // `where n == 64` makes n a constant, as tile::Lower reads it.
    for (const DimFact& fact : def.scheme.where) {
      if (fact.relation != RelOp::kEq) continue;
      Dim lhs = vars_.Resolve(fact.lhs), rhs = vars_.Resolve(fact.rhs);
      std::optional<SizeVarId> lv = lhs.AsVar(), rv = rhs.AsVar();
      std::optional<std::int64_t> lc = lhs.AsConstant(), rc = rhs.AsConstant();
      if (lv && rc) known_.emplace(*lv, Dim::Constant(*rc));
      if (rv && lc) known_.emplace(*rv, Dim::Constant(*lc));
    }
    for (core::PatternId p : def.params) {
      const auto* name = std::get_if<core::pattern::Name>(&module_.Get(p).node);
      if (!name) continue;
      TypeRef type = vars_.Resolve(module_.Get(p).type);
      const auto* tensor = std::get_if<TensorType>(&type->node);
      bool scalar = tensor && tensor->shape.Known() && tensor->shape.before.empty();
      Val param = Val::Of(scalar ? Place::Scalar : Place::Global);
      if (!scalar) {
        param.param = static_cast<std::int32_t>(params_.size());
        params_.push_back({name->name, tensor ? tensor->shape.before.size() : 0, 0, 0});
      }
      scope_.emplace_back(name->name, param);
    }
  }

  // Whether the kernel reads tensor parameter `name`, of rank 2 or more, only through `shared`
  // copies of its tiles (`shared (tile a [128, 64] (i, kk))`), which sm_90a makes by TMA: then a
  // TMA map of any layout it covers serves it (core::LayoutPredicate::tma).
  bool ReadOnlyByShared(const std::string& name) const {
    for (const ParamUses& p : params_)
      if (p.name == name) return p.rank >= 2 && p.uses > 0 && p.uses == p.shared;
    return false;
  }

  TileLayouts Run(core::ExprId body) {
    Expr(body);
    return std::move(out_);
  }

 private:
  Val Expr(core::ExprId id);
  Val Apply(core::ExprId id, const ce::Apply& apply);
  Val Builtin(core::ExprId id, const std::string& name, const std::vector<core::ExprId>& args);
  Val Loop(core::ExprId id, const ce::Loop& loop);
  Val BlockIdx(const core::Expr& e) const {
    TypeRef type = vars_.Resolve(e.type);
    const auto* tuple = std::get_if<TupleType>(&type->node);
    if (!tuple) return Val::Of(Place::Scalar);
    Val out;
    for (std::size_t i = 0; i < tuple->elements.size(); ++i) out.elements.push_back(Val::Of(Place::Scalar));
    return out;
  }

  // The constant extents of a tensor type (-1 for one that is not constant).
  std::vector<std::int64_t> ShapeOf(const TypeRef& type) const {
    std::vector<std::int64_t> shape;
    TypeRef resolved = vars_.Resolve(type);
    const auto* tensor = std::get_if<TensorType>(&resolved->node);
    if (!tensor) return shape;
    for (const Dim& d : tensor->shape.before) {
      Dim dim = vars_.Resolve(d);
      if (!known_.empty())
        if (core::Result<Dim> r = core::Substitute(dim, known_)) dim = *r;
      shape.push_back(dim.AsConstant().value_or(-1));
    }
    return shape;
  }
  Dtype DtypeOf(const TypeRef& type) const {
    TypeRef resolved = vars_.Resolve(type);
    const auto* tensor = std::get_if<TensorType>(&resolved->node);
    if (!tensor) return Dtype::F32;
    Elem elem = vars_.Resolve(tensor->elem);
    return elem.is_var() ? DefaultDtype(vars_.info(elem.var()).cls) : elem.dtype();
  }

  // A new tile made by expression `id` (leaf `leaf` of it, or of the state a loop carries).
  Val NewTile(core::ExprId id, Place place, Dtype dtype, std::vector<std::int64_t> shape, std::uint32_t leaf = 0,
              bool carried = false) {
    TileLayoutVar var;
    var.span = module_.Get(id).span;
    var.shared = place == Place::Shared;
    var.dtype = dtype;
    var.shape = shape;
    var.expr = id;
    var.leaf = leaf;
    var.carried = carried;
    var.loop = std::holds_alternative<ce::Loop>(module_.Get(id).node);
    out_.vars.push_back(std::move(var));
    return Val{place, static_cast<std::int32_t>(out_.vars.size() - 1), std::move(shape), {}, {}, -1};
  }
  Val NewTile(core::ExprId id, Place place) {
    const core::Expr& e = module_.Get(id);
    return NewTile(id, place, DtypeOf(e.type), ShapeOf(e.type));
  }
  void Add(TileRelation relation, std::int32_t a, std::int32_t b, Span span, std::string who) {
    TileConstraint c;
    c.relation = relation;
    c.a = a;
    c.b = b;
    c.span = span;
    c.who = std::move(who);
    out_.constraints.push_back(std::move(c));
  }
  void AddCopy(CopyKind kind, std::int32_t a, std::int32_t b, Span span, Span other, std::string who) {
    Add(TileRelation::Copy, a, b, span, std::move(who));
    out_.constraints.back().copy = kind;
    out_.constraints.back().other = other;
  }

  // Binds a pattern's names to the parts of `value`; a tile takes the first name it is bound to.
  void Bind(core::PatternId id, const Val& value) {
    const core::Pattern& p = module_.Get(id);
    if (const auto* name = std::get_if<core::pattern::Name>(&p.node)) {
      if (value.var != kNoTile && out_.vars[value.var].name.empty()) out_.vars[value.var].name = name->name;
      scope_.emplace_back(name->name, value);
    } else if (const auto* tuple = std::get_if<core::pattern::Tuple>(&p.node)) {
      for (std::size_t i = 0; i < tuple->elements.size() && i < value.elements.size(); ++i)
        Bind(tuple->elements[i], value.elements[i]);
    }
  }
  Val Lookup(const std::string& name) const {
    for (auto it = scope_.rbegin(); it != scope_.rend(); ++it)
      if (it->first == name) return it->second;
    return Val{};
  }

  // A tensor parameter's uses: every reference to it, and those that are the tensor of a `tile`
  // which `shared` copies directly.
  struct ParamUses {
    std::string name;
    std::size_t rank = 0;
    int uses = 0, shared = 0;
  };

  const core::Module& module_;
  const VarStore& vars_;
  std::vector<ParamUses> params_;
  core::ExprId shared_arg_;  // the operand of the `shared` being walked
  std::map<SizeVarId, Dim> known_;
  std::vector<std::pair<std::string, Val>> scope_;
  TileLayouts out_;
};

Val TileLayoutStage::Expr(core::ExprId id) {
  const core::Expr& e = module_.Get(id);
  Val value =
      std::visit(Overloaded{
                     [&](const ce::IntLit&) { return Val::Of(Place::Scalar); },
                     [&](const ce::FloatLit&) { return Val::Of(Place::Scalar); },
                     [&](const ce::BoolLit&) { return Val::Of(Place::Scalar); },
                     [&](const ce::SizeValue&) { return Val::Of(Place::Scalar); },
                     [&](const ce::Local& local) {
                       Val v = Lookup(local.name);
                       if (v.param >= 0) ++params_[static_cast<std::size_t>(v.param)].uses;
                       return v;
                     },
                     [&](const ce::Builtin& builtin) { return builtin.name == "block_idx" ? BlockIdx(e) : Val{}; },
                     [&](const ce::Apply& apply) { return Apply(id, apply); },
                     [&](const ce::Let& let) {
                       Val bound = Expr(let.value);
                       std::size_t mark = scope_.size();
                       Bind(let.pattern, bound);
                       Val body = Expr(let.body);
                       scope_.resize(mark);
                       return body;
                     },
                     [&](const ce::If& branch) {
                       // Only scalars: a `select` of each leaf (tile::Lower refuses tiles in branches).
                       Expr(branch.condition);
                       Val then_value = Expr(branch.then_branch);
                       Expr(branch.else_branch);
                       std::function<Val(const Val&)> scalars = [&](const Val& v) {
                         if (v.place) return Val::Of(Place::Scalar);
                         Val out;
                         for (const Val& x : v.elements) out.elements.push_back(scalars(x));
                         return out;
                       };
                       return scalars(then_value);
                     },
                     [&](const ce::Tuple& tuple) {
                       Val out;
                       for (core::ExprId x : tuple.elements) out.elements.push_back(Expr(x));
                       return out;
                     },
                     [&](const ce::Loop& loop) { return Loop(id, loop); },
                     [&](const ce::Cast& cast) {
                       Val src = Expr(cast.operand);
                       if (!src.reg()) return Val::Of(src.place.value_or(Place::Scalar));
                       Val result = NewTile(id, Place::Reg, cast.dtype, src.shape);
                       out_.constraints.push_back(core::CastConstraint(src.var, result.var, e.span));
                       return result;
                     },
                     [&](const auto&) { return Val{}; },  // what the kernel tier refuses (strings, functions, indexing)
                 },
                 e.node);
  // A layout written on the value (`(x : f32[128, 64] @reg L)`) pins its variable.
  if (e.placement && e.placement->layout && value.tile()) {
    Add(TileRelation::Pinned, value.var, kNoTile, e.placement->span, "the pin");
    out_.constraints.back().text = e.placement->layout->text;
  }
  return value;
}

Val TileLayoutStage::Apply(core::ExprId id, const ce::Apply& apply) {
  // `f a b` may nest as `(f a) b` (`acc |> mma a b`): the arguments in order.
  std::vector<core::ExprId> args = apply.args;
  core::ExprId callee = apply.callee;
  while (const auto* inner = std::get_if<ce::Apply>(&module_.Get(callee).node)) {
    args.insert(args.begin(), inner->args.begin(), inner->args.end());
    callee = inner->callee;
  }
  const auto* builtin = std::get_if<ce::Builtin>(&module_.Get(callee).node);
  if (!builtin) return Val{};
  return Builtin(id, builtin->name, args);
}

Val TileLayoutStage::Builtin(core::ExprId id, const std::string& name, const std::vector<core::ExprId>& args) {
  const core::Expr& e = module_.Get(id);
  auto one = [&](std::size_t n) { return args.size() == n; };
  if (name == "block_idx") return BlockIdx(e);
  if (name == "tile" && one(3)) {
    Val tensor = Expr(args[0]);
    if (tensor.param >= 0 && id == shared_arg_ && std::holds_alternative<ce::Local>(module_.Get(args[0]).node))
      ++params_[static_cast<std::size_t>(tensor.param)].shared;
    if (const auto* tuple = std::get_if<ce::Tuple>(&module_.Get(args[2]).node)) {
      for (core::ExprId c : tuple->elements) Expr(c);
    } else {
      Expr(args[2]);
    }
    Val view = Val::Of(Place::Global);
    view.global = e.span;
    return view;
  }
  if (name == "transpose" && one(1)) {
    Val src = Expr(args[0]);
    if (src.place != Place::Shared) return Val{};
    std::vector<std::int64_t> shape = src.shape;
    if (shape.size() == 2) std::swap(shape[0], shape[1]);
    Val view = NewTile(id, Place::Shared, out_.vars[src.var].dtype, shape);
    Add(TileRelation::Transpose, view.var, src.var, e.span, "`transpose`");
    return view;
  }
  if (name == "shared" && one(1)) {
    const core::ExprId outer = shared_arg_;
    shared_arg_ = args[0];
    Val src = Expr(args[0]);
    shared_arg_ = outer;
    if (src.place != Place::Global) return Val{};
    Val tile = NewTile(id, Place::Shared);
    AddCopy(CopyKind::ToShared, tile.var, kNoTile, e.span, src.global, "`shared`");
    return tile;
  }
  if ((name == "regs" || name == "convert" || name == "expand" || name == "sum" || name == "max" || name == "min") &&
      one(1)) {
    Val src = Expr(args[0]);
    if (name == "regs" ? src.place != Place::Shared : !src.reg()) return Val{};
    Val tile = NewTile(id, Place::Reg);
    if (name == "regs") {
      AddCopy(CopyKind::ToRegs, tile.var, src.var, e.span, {}, "`regs`");
    } else if (name == "convert") {
      AddCopy(CopyKind::Convert, tile.var, src.var, e.span, {}, "`convert`");
    } else if (name == "expand") {
      Add(TileRelation::Equal, src.var, tile.var, e.span, "`expand`");
    } else {
      Add(TileRelation::SliceOf, tile.var, src.var, e.span, "the reduction `" + name + "`");
      out_.constraints.back().keep = core::ReductionKeep(src.shape.size());
    }
    return tile;
  }
  if (name == "mma" && one(3)) {
    Val a = Expr(args[0]), b = Expr(args[1]), acc = Expr(args[2]);
    if (!a.reg() || !b.reg() || !acc.reg()) return Val{};
    Val result = NewTile(id, Place::Reg, Dtype::F32, acc.shape);
    Dtype family = out_.vars[a.var].dtype;
    for (auto [operand, role] :
         {std::pair{a.var, MmaRole::A}, std::pair{b.var, MmaRole::B}, std::pair{acc.var, MmaRole::Accumulator}}) {
      Add(TileRelation::MmaOperand, operand, kNoTile, e.span, "`mma`");
      out_.constraints.back().role = role;
      out_.constraints.back().dtype = family;
    }
    Add(TileRelation::Equal, acc.var, result.var, e.span, "`mma`");
    return result;
  }
  if (name == "store" && one(2)) {
    Val dst = Expr(args[0]), src = Expr(args[1]);
    if (dst.place == Place::Global && src.tile())
      AddCopy(CopyKind::Store, src.var, kNoTile, e.span, dst.global, "`store`");
    return Val{};
  }
  if ((name == "zeros" || name == "ones") && one(1)) return NewTile(id, Place::Reg);
  if (name == "full" && one(2)) {
    Expr(args[1]);
    return NewTile(id, Place::Reg);
  }
  if (name == "iota" && one(1)) return NewTile(id, Place::Reg);
  // The elementwise built-ins (and what the tier refuses, which tile::Lower reports): on register
  // tiles, with scalars broadcast; on scalars only, a scalar.
  std::vector<Val> values;
  bool all_scalar = true;
  for (core::ExprId a : args) {
    values.push_back(Expr(a));
    all_scalar = all_scalar && values.back().place == Place::Scalar;
  }
  if (all_scalar) return Val::Of(Place::Scalar);
  Val result = NewTile(id, Place::Reg);
  std::vector<TileTerm> operands;
  for (const Val& v : values)
    if (v.reg()) operands.push_back(TileTerm{v.var, v.shape});
  core::ElementwiseConstraints(out_.constraints, name, TileTerm{result.var, result.shape}, operands, e.span);
  return result;
}

Val TileLayoutStage::Loop(core::ExprId id, const ce::Loop& loop) {
  const core::Expr& e = module_.Get(id);
  Val init = Expr(loop.init);
  Expr(loop.bound);
  // Each leaf of the state is a carried value with its initial value's type; leaves are counted
  // as tile::Lower counts them (depth first, scalars included).
  std::uint32_t leaf = 0;
  std::function<Val(const Val&, bool)> carry = [&](const Val& from, bool carried) {
    if (from.place) {
      std::uint32_t at = leaf++;
      if (!from.reg()) return Val::Of(*from.place);
      const TileLayoutVar& v = out_.vars[from.var];
      return NewTile(id, Place::Reg, v.dtype, from.shape, at, carried);
    }
    Val out;
    for (const Val& element : from.elements) out.elements.push_back(carry(element, carried));
    return out;
  };
  Val carried = carry(init, true);
  // The loop's constraints go before its body's, where its op is in the tile IR.
  std::size_t position = out_.constraints.size();
  std::size_t mark = scope_.size();
  scope_.emplace_back(loop.counter, Val::Of(Place::Scalar));
  Bind(loop.state, carried);
  Val body = Expr(loop.body);
  scope_.resize(mark);
  leaf = 0;
  Val result = carry(carried, false);
  std::vector<const Val*> inits, states, yields, results;
  init.Leaves(inits);
  carried.Leaves(states);
  body.Leaves(yields);
  result.Leaves(results);
  if (yields.size() != states.size()) return result;  // tile::Lower refuses it
  std::vector<TileConstraint> own;
  std::string who = loop.pipelined ? "the `pipeline`" : "the `loop`";
  for (std::size_t i = 0; i < states.size(); ++i) {
    if (!states[i]->reg()) continue;
    for (auto [from, what] : {std::pair{inits[i], " (its carried value)"}, std::pair{yields[i], " (its carried value)"},
                              std::pair{results[i], " (its result)"}}) {
      if (from->var == kNoTile) continue;  // tile::Lower refuses it
      TileConstraint c;
      c.a = from->var;
      c.b = states[i]->var;
      c.span = e.span;
      c.who = who + what;
      own.push_back(std::move(c));
    }
  }
  out_.constraints.insert(out_.constraints.begin() + static_cast<std::ptrdiff_t>(position), own.begin(), own.end());
  return result;
}

}  // namespace

void Checker::InferTileLayouts(CheckedDef& checked) {
  core::Def& def = module_.defs().back();
  if (!def.ok || !def.body.valid() || !def.kernel) return;
  TileLayoutStage stage(module_, vars_, def);
  def.kernel->tiles = stage.Run(def.body);
  checked.tiles = def.kernel->tiles;
  // What each tensor input admits on sm_90a (core::LayoutPredicate::tma), in both copies of the scheme.
  for (Scheme* scheme : {&def.scheme, &checked.scheme})
    for (LayoutPredicate& p : scheme->admits) p.tma = stage.ReadOnlyByShared(p.param);
}

}  // namespace weft::check

namespace weft::check {

namespace {

std::string At(const SourceManager& sources, Span span) {
  LineCol where = sources.Get(span.file).Locate(span.begin);
  return std::to_string(where.line) + ":" + std::to_string(where.column);
}

std::string Quoted(const SourceManager& sources, Span span) {
  std::string s(sources.Text(span));
  if (auto newline = s.find('\n'); newline != std::string::npos) s = s.substr(0, newline) + " ...";
  return "`" + s + "`";
}

std::string VarName(std::int32_t v) {
  return "'L" + std::to_string(v + 1);
}

}  // namespace

std::string TileVarLine(const SourceManager& sources, const TileLayouts& tiles, std::int32_t var) {
  const TileLayoutVar& v = tiles.vars[static_cast<std::size_t>(var)];
  std::string type = std::string(Spelling(v.dtype)) + "[";
  for (std::size_t k = 0; k < v.shape.size(); ++k)
    type += (k ? ", " : "") + (v.shape[k] < 0 ? std::string("?") : std::to_string(v.shape[k]));
  type += std::string("] ") + (v.shared ? "@shared" : "@reg");
  // A loop's carried value or result: its span is the loop's.
  std::string name = !v.name.empty() ? "`" + v.name + "`"
                     : v.loop        ? std::string("the loop's result")
                                     : Quoted(sources, v.span);
  std::string origin = At(sources, v.span);
  if (v.loop) origin = (v.carried ? "carried by the loop at " : "the loop's result at ") + origin;
  return "tile " + VarName(var) + " " + name + " : " + type + "  (" + origin + ")";
}

std::string TileConstraintLine(const SourceManager& sources, const TileLayouts& tiles, const TileConstraint& c) {
  std::string line = VarName(c.a);
  switch (c.relation) {
    case TileRelation::Equal:
      line += " = " + VarName(c.b);
      break;
    case TileRelation::SliceOf:
      line += " slice of " + VarName(c.b) + " " + std::string(Spelling(c.keep));
      break;
    case TileRelation::MmaOperand:
      line += " mma " + std::string(Spelling(c.role)) + " of the " + std::string(Spelling(c.dtype)) + " family";
      break;
    case TileRelation::Copy:
      switch (c.copy) {
        case CopyKind::ToShared:
          line += " copy of " + Quoted(sources, c.other) + " (global to shared)";
          break;
        case CopyKind::ToRegs:
          line += " copy of " + VarName(c.b) + " (shared to registers)";
          break;
        case CopyKind::Store:
          line += " stored to " + Quoted(sources, c.other) + " (" +
                  (tiles.vars[static_cast<std::size_t>(c.a)].shared ? "shared" : "registers") + " to global)";
          break;
        case CopyKind::Convert:
          line += " copy of " + VarName(c.b) + " (registers, converted)";
          break;
      }
      break;
    case TileRelation::Transpose:
      line += " transpose of " + VarName(c.b);
      break;
    case TileRelation::Pinned:
      line += " pinned to " + c.text;
      break;
  }
  return line + "  (" + c.who + " at " + At(sources, c.span) + ")";
}

std::string TileLayoutLines(const SourceManager& sources, const TileLayouts& tiles) {
  std::string out;
  for (std::size_t i = 0; i < tiles.vars.size(); ++i)
    out += "  " + TileVarLine(sources, tiles, static_cast<std::int32_t>(i)) + "\n";
  for (const TileConstraint& c : tiles.constraints) out += "  " + TileConstraintLine(sources, tiles, c) + "\n";
  return out;
}

}  // namespace weft::check
