// Lowering: a checked kernel's body, a core expression, to the tile IR's SSA ops. The checker has
// typed every expression; what is left is where each value lives and whether the kernel tier can run
// the operation on it.
//
//   1. Parameters become values: tensors Global (their symbolic extents), rank-0 ones Scalar.
//   2. The body is walked once, in evaluation order, with a scope from names to lowered values (one
//      value, a tuple of them, or unit). Each operation appends an op to the current block and
//      infers its result's space from its operands' (docs/tile-ir.md has the table): `tile` gives a
//      Global view, `shared` Shared, `regs` Reg, arithmetic on scalars ScalarOp, on tiles Map.
//   3. `loop` and `pipeline` open a nested block: each leaf of the state is a carried value, the body
//      yields one value per leaf, the op's results are the state after the last iteration.
//   4. A tile no operation reads is an error.
//   5. The checker's layout constraints (core/tile_layout.h) are carried over: each of its layout
//      variables names the expression (or loop state leaf) that makes its tile, whose value steps
//      2 and 3 noted. Then, in debug builds, the result is verified.
// The first operation the tier does not take stops the lowering with one diagnostic (E0500-E0549)
// that points at it and, when two operations disagree, at the other one too.
#include "tile/lower.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <tuple>

#include "base/overloaded.h"
#include "core/type_printer.h"
#include "diagnostics/diagnostic.h"

namespace weft::tile {
namespace {

using core::Dim;
using core::ExprId;
using core::PatternId;
namespace ce = core::expr;

// The checker's kernel-tier fields, gathered in one place.
struct KernelFields {
  bool present = false;
  const core::TileLayouts* tiles = nullptr;
  std::vector<bool> out;
  std::vector<std::optional<Pin>> param_layouts;
  std::vector<ExprId> grid;
  ExprId threads;
};
KernelFields FieldsOf(const core::Def& def) {
  KernelFields fields;
  if (!def.kernel) return fields;
  fields.present = true;
  fields.tiles = &def.kernel->tiles;
  fields.out = def.kernel->out;
  fields.grid = def.kernel->grid;
  fields.threads = def.kernel->threads;
  for (const auto& space : def.kernel->param_spaces) {
    if (space && space->layout) {
      fields.param_layouts.emplace_back(Pin{space->layout->text, space->span, space->layout->value});
    } else {
      fields.param_layouts.emplace_back();
    }
  }
  return fields;
}
bool PipelinedOf(const ce::Loop& loop) {
  return loop.pipelined;
}
std::optional<core::Placement> PlacementOf(const core::Expr& e) {
  return e.placement;
}

// What an expression lowers to: one value, a tuple of them (`block_idx`, a loop's tuple state), or
// unit (`store`, `()`).
struct Lowered {
  std::optional<ValueId> value;
  std::vector<Lowered> elements;

  static Lowered Of(ValueId v) { return Lowered{v, {}}; }
  bool single() const { return value.has_value(); }
  void Leaves(std::vector<ValueId>& out) const {
    if (value) out.push_back(*value);
    for (const Lowered& e : elements) e.Leaves(out);
  }
};

// Thrown after the diagnostic is recorded: the lowering stops at the first refusal.
struct Refused {};

// Built-ins that apply elementwise (with broadcasting) to register tiles and scalars.
const std::set<std::string, std::less<>>& ElementwiseBuiltins() {
  static const std::set<std::string, std::less<>> names = {
      "+",       "-",   "*",   "/",   "%",      "maximum", "minimum", "select", "exp", "log", "sqrt", "rsqrt", "tanh",
      "sigmoid", "sin", "cos", "abs", "negate", "==",      "!=",      "<",      "<=",  ">",   ">=",   "&&",    "||"};
  return names;
}

// Why a built-in has no kernel-tier form: the second half of E0500's message.
std::string WhyNotInKernel(std::string_view name) {
  if (name == "@" || name == "matmul_f32") return "multiply register tiles with `mma`";
  if (name == "map" || name == "map2" || name == "reduce" || name == "scan")
    return "kernels take no functions: write the elementwise operations, or `sum`, `max`, `min`, directly";
  if (name == "reshape" || name == "permute" || name == "concat" || name == "gather" || name == "dequant")
    return "a tile keeps the shape it is made with; take a different `tile` of the tensor instead";
  if (name == "mean" || name == "argmax") return "the reductions in kernels are `sum`, `max` and `min`";
  if (name == "load" || name == "save" || name == "print" || name == "arg" || name == "time" || name == "random")
    return "it is a host built-in";
  return "it has no kernel-tier form";
}

class Lowering {
 public:
  Lowering(const core::Module& module, const core::VarStore& vars, const core::Def& def)
      : module_(module), vars_(vars), def_(def), fields_(FieldsOf(def)) {
    if (fields_.tiles) {
      for (std::size_t i = 0; i < fields_.tiles->vars.size(); ++i) {
        const core::TileLayoutVar& var = fields_.tiles->vars[i];
        sites_.emplace(std::tuple{var.expr.index, var.leaf, var.carried}, i);
      }
      layout_values_.assign(fields_.tiles->vars.size(), ValueId());
    }
  }

  Result<Kernel, std::vector<Diagnostic>> Run();

 private:
  // ---- Types and dims ----
  std::string DimText(const Dim& dim) const { return core::ToString(dim, names_); }
  std::string TypeText(const core::TypeRef& type) const { return core::TypePrinter(vars_).Print(type); }
  // The dtype and dims of a tensor type. @pre the checker typed it as a tensor of known rank
  core::TensorType TensorOf(const core::TypeRef& type, Span span) const;
  Dtype DtypeOf(const core::TensorType& t) const;
  // A dim with the `where` clause's equalities applied; an error if it is not a constant.
  std::int64_t Constant(const Dim& dim, Span span, const std::string& what);
  std::vector<core::Dim> ConstantShape(const core::TypeRef& type, Span span, const std::string& what);
  void RecordNames(const Dim& dim);

  // ---- Values and ops ----
  ValueId NewValue(Span span, Dtype dtype, Space space, std::vector<Dim> shape = {}) {
    Value v;
    v.span = span;
    v.dtype = dtype;
    v.space = space;
    v.shape = std::move(shape);
    return kernel_.Add(std::move(v));
  }
  // Appends an op with one result to the current block.
  ValueId Emit(Span span, OpNode node, Dtype dtype, Space space, std::vector<Dim> shape = {}) {
    ValueId result = NewValue(span, dtype, space, std::move(shape));
    OpId op = kernel_.Add(Op{span, std::move(node), {result}});
    kernel_.Get(result).def = op;
    block_->push_back(op);
    return result;
  }
  ValueId ScalarConstant(Span span, Dtype dtype, std::variant<std::int64_t, double, bool> value) {
    return Emit(span, op::Constant{value}, dtype, Space::Scalar);
  }
  bool IsParam(ValueId v) const { return !kernel_.Get(v).def.valid() && kernel_.Get(v).space == Space::Global; }
  const Param* ParamOf(ValueId tensor) const {
    for (const Param& p : kernel_.params) {
      if (p.value == tensor) return &p;
    }
    return nullptr;
  }

  // ---- Diagnostics ----
  [[noreturn]] void Stop() { throw Refused{}; }
  template <typename... Args>
  Diagnostic& Error(DiagnosticKind kind, Span span, Args&&... args) {
    errors_.push_back(MakeDiagnostic(kind, span, std::forward<Args>(args)...));
    return errors_.back();
  }
  // "`sa`" for a named value, else `fallback`.
  std::string Describe(ValueId v, const std::string& fallback = "the operand") const {
    const Value& value = kernel_.Get(v);
    return value.name.empty() ? fallback : Quoted(value.name);
  }
  // "in registers", "a scalar", ...: where a value is, to follow "`x` is".
  std::string Where(ValueId v) const;
  // A note at the place the value was made (its parameter, or the op), unless that is `use` itself.
  void NoteOrigin(Diagnostic& d, ValueId v, Span use) const;
  // Requires `v` (the value of `operand`, an argument of `builtin`) to be in one of `spaces`.
  void RequireSpace(ValueId v, ExprId operand, std::string_view builtin, std::initializer_list<Space> spaces,
                    const std::string& takes);

  // ---- The walk ----
  Lowered Expr(ExprId id);
  ValueId One(ExprId id);
  Lowered Apply(ExprId id, const ce::Apply& apply);
  Lowered Builtin(ExprId id, const std::string& name, const std::vector<ExprId>& args, Span callee_span);
  Lowered BlockIdx(ExprId id);
  Lowered Tile(ExprId id, const std::vector<ExprId>& args);
  Lowered Elementwise(ExprId id, const std::string& name, const std::vector<ExprId>& args);
  std::optional<Dim> SizeDim(ExprId x) const;
  Lowered If(ExprId id, const ce::If& branch);
  Lowered Loop(ExprId id, const ce::Loop& loop);
  void Bind(PatternId id, const Lowered& value);
  void Place(const core::Expr& e, const Lowered& value);
  const Lowered& Lookup(const std::string& name, Span span) const;
  void CheckUses();
  // Notes that `v` is leaf `leaf` of what `id` makes (with `carried`, of the state loop `id`
  // carries), when the checker gave that tile a layout variable.
  void Attach(ValueId v, ExprId id, std::uint32_t leaf = 0, bool carried = false);
  void CarryLayouts();

  const core::Module& module_;
  const core::VarStore& vars_;
  const core::Def& def_;
  KernelFields fields_;
  core::SizeVarNames names_ = [this](core::SizeVarId v) {
    const std::string& name = vars_.info(v).name;
    return name.empty() ? core::DefaultSizeVarName(v) : name;
  };
  std::map<core::SizeVarId, std::int64_t> known_;  // `where n == 64`
  Kernel kernel_;
  std::vector<OpId>* block_ = &kernel_.body;
  std::vector<std::pair<std::string, Lowered>> scope_;
  std::vector<Diagnostic> errors_;
  std::map<std::tuple<std::uint32_t, std::uint32_t, bool>, std::size_t> sites_;  // -> the checker's variable
  std::vector<ValueId> layout_values_;                                           // per variable
};

core::TensorType Lowering::TensorOf(const core::TypeRef& type, Span span) const {
  core::TypeRef resolved = vars_.Resolve(type);
  const auto* tensor = std::get_if<core::TensorType>(&resolved->node);
  if (!tensor || !tensor->shape.Known()) {
    WEFT_INTERNAL_ERROR("a kernel value of type `" + TypeText(type) + "` at offset " + std::to_string(span.begin) +
                        " is not a tensor of known rank");
  }
  return *tensor;
}

Dtype Lowering::DtypeOf(const core::TensorType& t) const {
  core::Elem elem = vars_.Resolve(t.elem);
  return elem.is_var() ? core::DefaultDtype(vars_.info(elem.var()).cls) : elem.dtype();
}

void Lowering::RecordNames(const Dim& dim) {
  for (core::SizeVarId v : dim.Vars()) kernel_.size_names.emplace(v, names_(v));
}

std::int64_t Lowering::Constant(const Dim& dim, Span span, const std::string& what) {
  Dim d = vars_.Resolve(dim);
  if (!known_.empty()) {
    std::map<core::SizeVarId, Dim> subst;
    for (const auto& [v, c] : known_) subst.emplace(v, Dim::Constant(c));
    if (core::Result<Dim> r = core::Substitute(d, subst)) d = *r;
  }
  if (std::optional<std::int64_t> c = d.AsConstant()) return *c;
  Error(DiagnosticKind::TileShapeNotConstant, span, DimText(vars_.Resolve(dim)), what);
  Stop();
}

std::vector<Dim> Lowering::ConstantShape(const core::TypeRef& type, Span span, const std::string& what) {
  core::TensorType t = TensorOf(type, span);
  std::vector<Dim> shape;
  for (const Dim& d : t.shape.before) shape.push_back(Dim::Constant(Constant(d, span, what)));
  return shape;
}

std::string Lowering::Where(ValueId v) const {
  const Value& value = kernel_.Get(v);
  switch (value.space) {
    case Space::Scalar:
      return "a scalar";
    case Space::Global:
      return IsParam(v) ? "a whole tensor in global memory" : "a tile in global memory";
    case Space::Shared:
      return "in shared memory";
    case Space::Reg:
      return "in registers";
  }
  return "?";
}

void Lowering::NoteOrigin(Diagnostic& d, ValueId v, Span use) const {
  const Value& value = kernel_.Get(v);
  if (!value.span.valid() || (value.span.begin == use.begin && value.span.end == use.end)) return;
  if (IsParam(v) || !value.def.valid()) {
    if (!value.name.empty()) d.notes.push_back(MakeNote(DiagnosticKind::NoteBoundHere, value.span, value.name));
    return;
  }
  d.notes.push_back(MakeNote(DiagnosticKind::NoteMadeHere, value.span, Describe(v, "the value")));
}

void Lowering::RequireSpace(ValueId v, ExprId operand, std::string_view builtin, std::initializer_list<Space> spaces,
                            const std::string& takes) {
  Space space = kernel_.Get(v).space;
  bool ok = std::find(spaces.begin(), spaces.end(), space) != spaces.end();
  // A Global operand must be a view unless a parameter is what is asked for (`tile`).
  if (ok && space == Space::Global && builtin != "tile" && IsParam(v)) ok = false;
  if (ok) return;
  Span span = module_.Get(operand).span;
  Diagnostic& d = Error(DiagnosticKind::TileSpace, span, builtin, takes, Describe(v) + " is " + Where(v));
  NoteOrigin(d, v, span);
  Stop();
}

const Lowered& Lowering::Lookup(const std::string& name, Span span) const {
  for (auto it = scope_.rbegin(); it != scope_.rend(); ++it) {
    if (it->first == name) return it->second;
  }
  WEFT_INTERNAL_ERROR("kernel lowering: `" + name + "` at offset " + std::to_string(span.begin) + " is not bound");
}

void Lowering::Bind(PatternId id, const Lowered& value) {
  const core::Pattern& p = module_.Get(id);
  std::visit(Overloaded{
                 [&](const core::pattern::Name& name) {
                   if (value.value && kernel_.Get(*value.value).name.empty())
                     kernel_.Get(*value.value).name = name.name;
                   scope_.emplace_back(name.name, value);
                 },
                 [&](const core::pattern::Wildcard&) {},
                 [&](const core::pattern::Tuple& tuple) {
                   WEFT_CHECK(!value.value && value.elements.size() == tuple.elements.size());
                   for (std::size_t i = 0; i < tuple.elements.size(); ++i) Bind(tuple.elements[i], value.elements[i]);
                 },
             },
             p.node);
}

// A kernel-tier ascription, `(x : f32[128, 128] @reg L)`: the space must be the one inferred; a
// layout pins the value's.
void Lowering::Place(const core::Expr& e, const Lowered& lowered) {
  std::optional<core::Placement> placement = PlacementOf(e);
  if (!placement || !lowered.value) return;
  ValueId v = *lowered.value;
  std::string space = placement->space;
  if (!space.empty() && space.front() == '@') space.erase(0, 1);
  Space want = space == "shared" ? Space::Shared : space == "reg" ? Space::Reg : Space::Global;
  if (!space.empty() && want != kernel_.Get(v).space) {
    Diagnostic& d = Error(DiagnosticKind::PlacementSpace, placement->span, "@" + space,
                          Describe(v, "the value") + " is " + Where(v));
    d.notes.push_back(MakeNote(DiagnosticKind::NoteMadeHere, e.span, Describe(v, "the value")));
    Stop();
  }
  if (placement->layout) kernel_.Get(v).pin = Pin{placement->layout->text, placement->span, placement->layout->value};
}

ValueId Lowering::One(ExprId id) {
  Lowered lowered = Expr(id);
  if (!lowered.value) {
    WEFT_INTERNAL_ERROR("kernel lowering: a tuple or unit where one value was expected at offset " +
                        std::to_string(module_.Get(id).span.begin));
  }
  return *lowered.value;
}

Lowered Lowering::Expr(ExprId id) {
  const core::Expr& e = module_.Get(id);
  auto refuse = [&](const std::string& what, const std::string& why) -> Lowered {
    Error(DiagnosticKind::KernelUnsupported, e.span, what, why);
    Stop();
  };
  Lowered lowered = std::visit(
      Overloaded{
          [&](const ce::IntLit& lit) {
            Dtype dtype = DtypeOf(TensorOf(e.type, e.span));
            if (dtype == Dtype::Bool) return Lowered::Of(ScalarConstant(e.span, dtype, lit.value != 0));
            if (dtype == Dtype::F16 || dtype == Dtype::BF16 || dtype == Dtype::F32 || dtype == Dtype::F64)
              return Lowered::Of(ScalarConstant(e.span, dtype, static_cast<double>(lit.value)));
            return Lowered::Of(ScalarConstant(e.span, dtype, static_cast<std::int64_t>(lit.value)));
          },
          [&](const ce::FloatLit& lit) {
            return Lowered::Of(ScalarConstant(e.span, DtypeOf(TensorOf(e.type, e.span)), lit.value));
          },
          [&](const ce::BoolLit& lit) { return Lowered::Of(ScalarConstant(e.span, Dtype::Bool, lit.value)); },
          [&](const ce::StringLit&) { return refuse("a string", "kernels compute on numbers"); },
          [&](const ce::Local& local) { return Lookup(local.name, e.span); },
          [&](const ce::Global& global) {
            return refuse(Quoted(global.name),
                          "a kernel cannot use another definition; write what it computes in the kernel");
          },
          [&](const ce::Builtin& builtin) {
            if (builtin.name == "block_idx") return BlockIdx(id);
            return refuse(Quoted(builtin.name) + " as a value",
                          "kernels take no functions: apply it to its arguments where it is used");
          },
          [&](const ce::SizeValue& size) {
            RecordNames(size.dim);
            return Lowered::Of(Emit(e.span, op::Size{size.dim}, Dtype::I64, Space::Scalar));
          },
          [&](const ce::ShapeArg&) -> Lowered { WEFT_INTERNAL_ERROR("a shape argument outside its built-in"); },
          [&](const ce::Apply& apply) { return Apply(id, apply); },
          [&](const ce::Lambda&) {
            return refuse("`fn`", "kernels take no functions; write the computation where it is used");
          },
          [&](const ce::Let& let) {
            Lowered value = Expr(let.value);
            std::size_t mark = scope_.size();
            Bind(let.pattern, value);
            Lowered body = Expr(let.body);
            scope_.resize(mark);
            return body;
          },
          [&](const ce::If& branch) { return If(id, branch); },
          [&](const ce::Tuple& tuple) {
            Lowered out;
            for (ExprId element : tuple.elements) out.elements.push_back(Expr(element));
            return out;
          },
          [&](const ce::TensorLit&) {
            return refuse("a tensor literal", "make register tiles with `zeros`, `full` or `iota`");
          },
          [&](const ce::Index&) {
            return refuse("indexing", "take a tile of a tensor parameter with `tile`, or choose with `select`");
          },
          [&](const ce::Loop& loop) { return Loop(id, loop); },
          [&](const ce::Cast& cast) {
            ValueId src = One(cast.operand);
            RequireSpace(src, cast.operand, "cast", {Space::Reg, Space::Scalar}, "a register tile or a scalar");
            const Value& s = kernel_.Get(src);
            return Lowered::Of(Emit(e.span, op::Cast{cast.dtype, src}, cast.dtype, s.space, s.shape));
          },
      },
      e.node);
  if (lowered.value) Attach(*lowered.value, id);
  Place(e, lowered);
  return lowered;
}

Lowered Lowering::BlockIdx(ExprId id) {
  const core::Expr& e = module_.Get(id);
  core::TypeRef type = vars_.Resolve(e.type);
  if (const auto* tuple = std::get_if<core::TupleType>(&type->node)) {
    Lowered out;
    for (std::size_t axis = 0; axis < tuple->elements.size(); ++axis) {
      out.elements.push_back(
          Lowered::Of(Emit(e.span, op::BlockIdx{static_cast<int>(axis)}, Dtype::I64, Space::Scalar)));
    }
    return out;
  }
  return Lowered::Of(Emit(e.span, op::BlockIdx{0}, Dtype::I64, Space::Scalar));
}

Lowered Lowering::Apply(ExprId id, const ce::Apply& apply) {
  // `f a b` may nest as `(f a) b` (`acc |> mma a b`): collect the arguments in order.
  std::vector<ExprId> args = apply.args;
  ExprId callee = apply.callee;
  while (const auto* inner = std::get_if<ce::Apply>(&module_.Get(callee).node)) {
    args.insert(args.begin(), inner->args.begin(), inner->args.end());
    callee = inner->callee;
  }
  const core::Expr& c = module_.Get(callee);
  if (const auto* builtin = std::get_if<ce::Builtin>(&c.node)) return Builtin(id, builtin->name, args, c.span);
  if (const auto* global = std::get_if<ce::Global>(&c.node)) {
    Error(DiagnosticKind::KernelUnsupported, c.span, "calling " + Quoted(global->name),
          "a kernel cannot call another definition; write what it computes in the kernel");
    Stop();
  }
  Error(DiagnosticKind::KernelUnsupported, c.span, "calling a function",
        "kernels take no functions; write the computation where it is used");
  Stop();
}

Lowered Lowering::Builtin(ExprId id, const std::string& name, const std::vector<ExprId>& args, Span callee_span) {
  const core::Expr& e = module_.Get(id);
  // A built-in applied to fewer arguments than it takes is a function: refused like `fn`.
  static const std::map<std::string, std::size_t, std::less<>> arity = {
      {"tile", 3},    {"transpose", 1}, {"shared", 1}, {"regs", 1},  {"convert", 1}, {"expand", 1}, {"sum", 1},
      {"max", 1},     {"min", 1},       {"mma", 3},    {"store", 2}, {"zeros", 1},   {"ones", 1},   {"full", 2},
      {"iota", 1},    {"select", 3},    {"exp", 1},    {"log", 1},   {"sqrt", 1},    {"rsqrt", 1},  {"tanh", 1},
      {"sigmoid", 1}, {"sin", 1},       {"cos", 1},    {"abs", 1},   {"negate", 1}};
  std::size_t wanted = 2;  // the binary operators and `maximum`, `minimum`
  if (auto it = arity.find(name); it != arity.end()) wanted = it->second;
  if ((ElementwiseBuiltins().count(name) || arity.count(name)) && args.size() < wanted) {
    Error(DiagnosticKind::KernelUnsupported, e.span,
          Quoted(name) + " applied to " + std::to_string(args.size()) + " of its " + std::to_string(wanted) +
              " arguments",
          "kernels take no functions; apply it to all of them");
    Stop();
  }
  if (ElementwiseBuiltins().count(name)) return Elementwise(id, name, args);
  if (name == "tile") return Tile(id, args);
  if (name == "transpose") {
    // A view of a rank-2 shared tile with the axes swapped: the same buffer, no data moves. Register
    // tiles are refused (their layout belongs to the op that made them; transpose the shared tile
    // they are loaded from); so are global views (take a `tile` of the tensor and transpose it in
    // shared memory).
    WEFT_CHECK(args.size() == 1);
    ValueId src = One(args[0]);
    const Value& s = kernel_.Get(src);
    std::string why;
    if (s.space != Space::Shared) {
      why = Describe(src) + " is " + Where(src);
      if (s.space == Space::Reg) why += ": transpose the shared tile it is loaded from, then `regs` the view";
      if (s.space == Space::Global) why += ": copy it with `shared` first";
    } else if (s.shape.size() != 2) {
      why = Describe(src) + " has rank " + std::to_string(s.shape.size());
    } else if (s.def.valid() && std::holds_alternative<op::Transpose>(kernel_.Get(s.def).node)) {
      why = Describe(src) + " is already a transposed view: use the tile it views";
    }
    if (!why.empty()) {
      Span span = module_.Get(args[0]).span;
      Diagnostic& d = Error(DiagnosticKind::TransposeOperand, span, why);
      NoteOrigin(d, src, span);
      Stop();
    }
    std::vector<Dim> shape = {s.shape[1], s.shape[0]};
    Dtype dtype = s.dtype;
    return Lowered::Of(Emit(e.span, op::Transpose{src}, dtype, Space::Shared, shape));
  }
  if (name == "shared" || name == "regs" || name == "convert" || name == "expand" || name == "sum" || name == "max" ||
      name == "min") {
    WEFT_CHECK(args.size() == 1);
    ValueId src = One(args[0]);
    core::TensorType t = TensorOf(e.type, e.span);
    Dtype dtype = DtypeOf(t);
    if (name == "shared") {
      RequireSpace(src, args[0], name, {Space::Global}, "a tile of a global tensor");
      return Lowered::Of(Emit(e.span, op::ToShared{src}, dtype, Space::Shared, kernel_.Get(src).shape));
    }
    if (name == "regs") {
      RequireSpace(src, args[0], name, {Space::Shared}, "a tile in shared memory");
      return Lowered::Of(Emit(e.span, op::ToRegs{src}, dtype, Space::Reg, kernel_.Get(src).shape));
    }
    RequireSpace(src, args[0], name, {Space::Reg}, "a register tile");
    std::vector<Dim> shape = ConstantShape(e.type, e.span, Quoted(name));
    if (name == "convert") return Lowered::Of(Emit(e.span, op::Convert{src}, dtype, Space::Reg, shape));
    if (name == "expand") return Lowered::Of(Emit(e.span, op::Expand{src}, dtype, Space::Reg, shape));
    if (kernel_.Get(src).shape.empty()) {
      Diagnostic& d = Error(DiagnosticKind::TileSpace, module_.Get(args[0]).span, name,
                            "a register tile of rank 1 or more", Describe(src) + " has rank 0");
      NoteOrigin(d, src, module_.Get(args[0]).span);
      Stop();
    }
    return Lowered::Of(Emit(e.span, op::Reduce{name, src}, dtype, Space::Reg, shape));
  }
  if (name == "mma") {
    WEFT_CHECK(args.size() == 3);
    ValueId a = One(args[0]), b = One(args[1]), acc = One(args[2]);
    const char* roles[] = {"its A operand", "its B operand", "its accumulator"};
    ValueId operands[] = {a, b, acc};
    for (int i = 0; i < 3; ++i) {
      RequireSpace(operands[i], args[i], "mma", {Space::Reg},
                   i < 2 ? "register tiles (load a shared tile with `regs`)" : "a register tile as its accumulator");
      const Value& v = kernel_.Get(operands[i]);
      Span span = module_.Get(args[i]).span;
      if (v.shape.size() != 2) {
        Diagnostic& d = Error(DiagnosticKind::MmaRank, span, Describe(operands[i], roles[i]), v.shape.size());
        NoteOrigin(d, operands[i], span);
        Stop();
      }
      bool dtype_ok = i < 2 ? (v.dtype == Dtype::F16 || v.dtype == Dtype::BF16) : v.dtype == Dtype::F32;
      if (!dtype_ok) {
        Diagnostic& d = Error(DiagnosticKind::MmaDtype, span, Describe(operands[i], roles[i]), Spelling(v.dtype));
        NoteOrigin(d, operands[i], span);
        Stop();
      }
    }
    return Lowered::Of(Emit(e.span, op::Mma{a, b, acc}, Dtype::F32, Space::Reg, kernel_.Get(acc).shape));
  }
  if (name == "store") {
    WEFT_CHECK(args.size() == 2);
    ValueId dst = One(args[0]), src = One(args[1]);
    RequireSpace(dst, args[0], name, {Space::Global}, "a tile of an `out` parameter as its destination");
    const auto* view = std::get_if<op::View>(&kernel_.Get(kernel_.Get(dst).def).node);
    const Param* param = view ? ParamOf(view->tensor) : nullptr;
    if (param && !param->out) {
      Diagnostic& d = Error(DiagnosticKind::StoreToInput, module_.Get(args[0]).span, param->name);
      d.notes.push_back(MakeNote(DiagnosticKind::NoteBoundHere, kernel_.Get(param->value).span, param->name));
      Stop();
    }
    RequireSpace(src, args[1], name, {Space::Reg, Space::Shared}, "a tile in registers or shared memory to write");
    OpId op = kernel_.Add(Op{e.span, op::Store{dst, src}, {}});
    block_->push_back(op);
    return Lowered{};
  }
  if (name == "zeros" || name == "ones" || name == "full") {
    const auto& shape_arg = std::get<ce::ShapeArg>(module_.Get(args[0]).node);
    std::vector<Dim> shape;
    std::vector<std::int64_t> extents;
    for (const Dim& d : shape_arg.dims) {
      extents.push_back(Constant(d, module_.Get(args[0]).span, Quoted(name)));
      shape.push_back(Dim::Constant(extents.back()));
    }
    Dtype dtype = DtypeOf(TensorOf(e.type, e.span));
    ValueId value;
    if (name == "full") {
      value = One(args[1]);
      RequireSpace(value, args[1], name, {Space::Scalar}, "a scalar to fill the tile with");
    } else {
      bool one = name == "ones";
      if (dtype == Dtype::Bool) {
        value = ScalarConstant(callee_span, dtype, one);
      } else if (dtype == Dtype::F16 || dtype == Dtype::BF16 || dtype == Dtype::F32 || dtype == Dtype::F64) {
        value = ScalarConstant(callee_span, dtype, one ? 1.0 : 0.0);
      } else {
        value = ScalarConstant(callee_span, dtype, std::int64_t{one ? 1 : 0});
      }
    }
    return Lowered::Of(Emit(e.span, op::Fill{value, extents}, dtype, Space::Reg, shape));
  }
  if (name == "iota") {
    const auto& shape_arg = std::get<ce::ShapeArg>(module_.Get(args[0]).node);
    WEFT_CHECK(shape_arg.dims.size() == 1);
    std::int64_t n = Constant(shape_arg.dims[0], module_.Get(args[0]).span, "`iota`");
    return Lowered::Of(Emit(e.span, op::Iota{n}, Dtype::I64, Space::Reg, {Dim::Constant(n)}));
  }
  if (name == "block_idx") return BlockIdx(id);  // not applied, but kept general
  Error(DiagnosticKind::KernelUnsupported, callee_span, Quoted(name), WhyNotInKernel(name));
  Stop();
}

Lowered Lowering::Tile(ExprId id, const std::vector<ExprId>& args) {
  const core::Expr& e = module_.Get(id);
  WEFT_CHECK(args.size() == 3);
  ValueId tensor = One(args[0]);
  if (!IsParam(tensor)) {
    Span span = module_.Get(args[0]).span;
    Diagnostic& d = Error(DiagnosticKind::TileSpace, span, "tile", "a tensor parameter of the kernel",
                          Describe(tensor) + " is " + Where(tensor));
    NoteOrigin(d, tensor, span);
    Stop();
  }
  const auto& shape_arg = std::get<ce::ShapeArg>(module_.Get(args[1]).node);
  std::vector<std::int64_t> extents;
  std::vector<Dim> shape;
  for (const Dim& d : shape_arg.dims) {
    extents.push_back(Constant(d, module_.Get(args[1]).span, "`tile`"));
    shape.push_back(Dim::Constant(extents.back()));
  }
  std::vector<ExprId> coord_exprs;
  if (const auto* tuple = std::get_if<ce::Tuple>(&module_.Get(args[2]).node)) {
    coord_exprs = tuple->elements;
  } else {
    coord_exprs = {args[2]};
  }
  std::vector<ValueId> coords;
  for (ExprId c : coord_exprs) {
    ValueId v = One(c);
    RequireSpace(v, c, "tile", {Space::Scalar}, "scalar coordinates");
    coords.push_back(v);
  }
  Dtype dtype = kernel_.Get(tensor).dtype;
  return Lowered::Of(Emit(e.span, op::View{tensor, extents, coords}, dtype, Space::Global, shape));
}

Lowered Lowering::Elementwise(ExprId id, const std::string& name, const std::vector<ExprId>& args) {
  const core::Expr& e = module_.Get(id);
  // Arithmetic on sizes (`k / 64`) is one Size op: synthesis and code generation read the dim.
  if (std::optional<Dim> dim = SizeDim(id)) {
    RecordNames(*dim);
    if (std::optional<std::int64_t> c = dim->AsConstant()) return Lowered::Of(ScalarConstant(e.span, Dtype::I64, *c));
    return Lowered::Of(Emit(e.span, op::Size{*dim}, Dtype::I64, Space::Scalar));
  }
  std::vector<ValueId> values;
  bool all_scalar = true;
  for (ExprId a : args) {
    ValueId v = One(a);
    RequireSpace(v, a, name, {Space::Reg, Space::Scalar},
                 "register tiles and scalars (load a shared tile with `regs`)");
    all_scalar = all_scalar && kernel_.Get(v).space == Space::Scalar;
    values.push_back(v);
  }
  Dtype dtype = DtypeOf(TensorOf(e.type, e.span));
  if (all_scalar) return Lowered::Of(Emit(e.span, op::ScalarOp{name, values}, dtype, Space::Scalar));
  std::vector<Dim> shape = ConstantShape(e.type, e.span, Quoted(name));
  return Lowered::Of(Emit(e.span, op::Map{name, values}, dtype, Space::Reg, shape));
}

Lowered Lowering::If(ExprId id, const ce::If& branch) {
  const core::Expr& e = module_.Get(id);
  auto refuse = [&](Span span, const std::string& what) {
    Error(DiagnosticKind::IfOnTiles, span, what);
    Stop();
  };
  ValueId condition = One(branch.condition);
  if (kernel_.Get(condition).space != Space::Scalar)
    refuse(module_.Get(branch.condition).span, "its condition is " + Where(condition));
  // Both branches are computed and a ScalarOp `select` picks: right only when they make scalars and
  // nothing else (no store, no tile).
  Lowered sides[2];
  ExprId exprs[2] = {branch.then_branch, branch.else_branch};
  const char* names[2] = {"`then`", "`else`"};
  for (int i = 0; i < 2; ++i) {
    std::size_t before = block_->size();
    sides[i] = Expr(exprs[i]);
    for (std::size_t k = before; k < block_->size(); ++k) {
      const Op& op = kernel_.Get((*block_)[k]);
      bool scalar = !op.results.empty();
      for (ValueId r : op.results) scalar = scalar && kernel_.Get(r).space == Space::Scalar;
      if (!scalar)
        refuse(op.span, std::string("its ") + names[i] + " branch " + (op.results.empty() ? "stores" : "makes a tile"));
    }
    std::vector<ValueId> leaves;
    sides[i].Leaves(leaves);
    for (ValueId v : leaves) {
      if (kernel_.Get(v).space != Space::Scalar)
        refuse(module_.Get(exprs[i]).span, std::string("its ") + names[i] + " branch gives a value " + Where(v));
    }
  }
  // Pair the leaves of the two sides (the checker made their types equal).
  std::function<Lowered(const Lowered&, const Lowered&)> pick = [&](const Lowered& t, const Lowered& f) {
    if (t.value) {
      const Value& v = kernel_.Get(*t.value);
      return Lowered::Of(Emit(e.span, op::ScalarOp{"select", {condition, *t.value, *f.value}}, v.dtype, Space::Scalar));
    }
    Lowered out;
    for (std::size_t i = 0; i < t.elements.size(); ++i) out.elements.push_back(pick(t.elements[i], f.elements[i]));
    return out;
  };
  return pick(sides[0], sides[1]);
}

Lowered Lowering::Loop(ExprId id, const ce::Loop& loop) {
  const core::Expr& e = module_.Get(id);
  Lowered init = Expr(loop.init);
  ValueId bound = One(loop.bound);
  RequireSpace(bound, loop.bound, PipelinedOf(loop) ? "pipeline" : "loop", {Space::Scalar}, "a scalar bound");
  // Each leaf of the state is a carried value with its initial value's type.
  op::Loop node;
  node.bound = bound;
  node.pipelined = PipelinedOf(loop);
  std::vector<ValueId> inits;
  init.Leaves(inits);
  std::function<Lowered(const Lowered&)> carry = [&](const Lowered& from) {
    if (from.value) {
      const Value& v = kernel_.Get(*from.value);
      if (v.space != Space::Reg && v.space != Space::Scalar) {
        Span span = module_.Get(loop.init).span;
        Diagnostic& d =
            Error(DiagnosticKind::LoopCarries, span, Describe(*from.value, "its state") + " is " + Where(*from.value));
        NoteOrigin(d, *from.value, span);
        Stop();
      }
      Value copy = v;  // NewValue may move the values
      ValueId c = NewValue(copy.span, copy.dtype, copy.space, copy.shape);
      kernel_.Get(c).pin = copy.pin;
      Attach(c, id, static_cast<std::uint32_t>(node.carried.size()), true);
      node.carried.push_back(c);
      return Lowered::Of(c);
    }
    Lowered out;
    for (const Lowered& element : from.elements) out.elements.push_back(carry(element));
    return out;
  };
  Lowered carried = carry(init);
  node.init = inits;
  node.counter = NewValue(e.span, Dtype::I64, Space::Scalar);
  kernel_.Get(node.counter).name = loop.counter;

  std::vector<OpId>* outer = block_;
  block_ = &node.body;
  std::size_t mark = scope_.size();
  scope_.emplace_back(loop.counter, Lowered::Of(node.counter));
  Bind(loop.state, carried);
  Lowered result = Expr(loop.body);
  scope_.resize(mark);
  block_ = outer;
  result.Leaves(node.yields);
  WEFT_CHECK(node.yields.size() == node.carried.size());
  for (std::size_t i = 0; i < node.yields.size(); ++i) {
    const Value& c = kernel_.Get(node.carried[i]);
    const Value& y = kernel_.Get(node.yields[i]);
    if (c.space != y.space) {
      Span span = module_.Get(loop.body).span;
      Diagnostic& d = Error(DiagnosticKind::LoopYieldSpace, span, Describe(node.carried[i], "its state"),
                            c.space == Space::Scalar ? "a scalar" : "in registers", Where(node.yields[i]));
      Span made = kernel_.Get(node.yields[i]).span;
      if (made.begin != span.begin || made.end != span.end)
        d.notes.push_back(MakeNote(DiagnosticKind::NoteMadeHere, made, "the new value"));
      d.notes.push_back(MakeNote(DiagnosticKind::NoteMadeHere, module_.Get(loop.init).span, "the initial value"));
      Stop();
    }
  }
  OpId op = kernel_.Add(Op{e.span, node, {}});
  std::vector<ValueId> results;
  std::function<Lowered(const Lowered&)> result_of = [&](const Lowered& from) {
    if (from.value) {
      const Value& v = kernel_.Get(*from.value);
      Value copy = v;  // NewValue may move the values
      ValueId r = NewValue(e.span, copy.dtype, copy.space, copy.shape);
      kernel_.Get(r).pin = copy.pin;
      kernel_.Get(r).def = op;
      Attach(r, id, static_cast<std::uint32_t>(results.size()));
      results.push_back(r);
      return Lowered::Of(r);
    }
    Lowered out;
    for (const Lowered& element : from.elements) out.elements.push_back(result_of(element));
    return out;
  };
  Lowered out = result_of(carried);
  kernel_.ops[op.index].results = results;
  block_->push_back(op);
  return out;
}

void Lowering::Attach(ValueId v, ExprId id, std::uint32_t leaf, bool carried) {
  auto it = sites_.find({id.index, leaf, carried});
  if (it == sites_.end() || layout_values_[it->second].valid()) return;
  layout_values_[it->second] = v;
}

void Lowering::CarryLayouts() {
  if (!fields_.tiles) return;
  auto value = [&](std::int32_t var) -> std::int32_t {
    if (var == core::kNoTile) return core::kNoTile;
    ValueId v = layout_values_[static_cast<std::size_t>(var)];
    if (!v.valid())
      WEFT_INTERNAL_ERROR("kernel lowering: the tile of layout variable " + std::to_string(var + 1) + " of `" +
                          kernel_.name + "` was not lowered");
    return static_cast<std::int32_t>(v.index);
  };
  for (std::size_t var = 0; var < layout_values_.size(); ++var)
    if (layout_values_[var].valid() && kernel_.Get(layout_values_[var]).layout_var == core::kNoTile)
      kernel_.Get(layout_values_[var]).layout_var = static_cast<std::int32_t>(var);
  for (core::TileConstraint c : fields_.tiles->constraints) {
    c.a = value(c.a);
    c.b = value(c.b);
    kernel_.layouts.push_back(std::move(c));
  }
}

void Lowering::CheckUses() {
  std::vector<int> uses(kernel_.values.size());
  for (const Op& op : kernel_.ops) {
    for (ValueId v : Operands(op)) ++uses[v.index];
  }
  for (const Op& op : kernel_.ops) {
    if (std::holds_alternative<op::Loop>(op.node) || op.results.empty()) continue;
    ValueId v = op.results.front();
    const Value& value = kernel_.Get(v);
    if (value.space == Space::Scalar || uses[v.index] > 0) continue;
    Error(DiagnosticKind::TileNeverUsed, value.span,
          value.name.empty() ? std::string("this tile") : "the tile " + Quoted(value.name));
    Stop();
  }
}

// The dim an i64 expression over sizes and integer literals computes (`k / 64`, `2 * n + 1`), or
// nullopt when it reads anything else.
std::optional<Dim> Lowering::SizeDim(ExprId x) const {
  const core::Expr& xe = module_.Get(x);
  if (const auto* s = std::get_if<ce::SizeValue>(&xe.node)) return vars_.Resolve(s->dim);
  if (const auto* lit = std::get_if<ce::IntLit>(&xe.node)) {
    if (DtypeOf(TensorOf(xe.type, xe.span)) != Dtype::I64) return std::nullopt;
    return Dim::Constant(static_cast<std::int64_t>(lit->value));
  }
  const auto* apply = std::get_if<ce::Apply>(&xe.node);
  if (!apply || apply->args.size() != 2) return std::nullopt;
  const auto* op = std::get_if<ce::Builtin>(&module_.Get(apply->callee).node);
  if (!op) return std::nullopt;
  std::optional<Dim> a = SizeDim(apply->args[0]), b = SizeDim(apply->args[1]);
  if (!a || !b) return std::nullopt;
  core::Result<Dim> r = Dim();
  std::optional<std::int64_t> divisor = b->AsConstant();
  if (op->name == "+") {
    r = core::Add(*a, *b);
  } else if (op->name == "-") {
    r = core::Sub(*a, *b);
  } else if (op->name == "*") {
    r = core::Mul(*a, *b);
  } else if (op->name == "/" && divisor && *divisor > 0) {
    r = core::Div(*a, *divisor);
  } else if (op->name == "%" && divisor && *divisor > 0) {
    r = core::Mod(*a, *divisor);
  } else {
    return std::nullopt;
  }
  if (!r) return std::nullopt;
  return *r;
}

Result<Kernel, std::vector<Diagnostic>> Lowering::Run() {
  if (!fields_.present || !def_.body.valid())
    WEFT_INTERNAL_ERROR("lowering `" + def_.name + "`, which is not a checked kernel");
  kernel_.name = def_.name;
  kernel_.span = def_.span;
  for (const core::DimFact& fact : def_.scheme.where) {
    kernel_.where.push_back(fact);
    RecordNames(fact.lhs);
    RecordNames(fact.rhs);
    Dim lhs = vars_.Resolve(fact.lhs), rhs = vars_.Resolve(fact.rhs);
    if (fact.relation != core::RelOp::kEq) continue;
    std::optional<core::SizeVarId> lv = lhs.AsVar(), rv = rhs.AsVar();
    std::optional<std::int64_t> lc = lhs.AsConstant(), rc = rhs.AsConstant();
    if (lv && rc) known_.emplace(*lv, *rc);
    if (rv && lc) known_.emplace(*rv, *lc);
  }
  try {
    for (std::size_t i = 0; i < def_.params.size(); ++i) {
      const core::Pattern& p = module_.Get(def_.params[i]);
      core::TensorType t = TensorOf(p.type, p.span);
      std::vector<Dim> shape;
      for (const Dim& d : t.shape.before) {
        shape.push_back(vars_.Resolve(d));
        RecordNames(shape.back());
      }
      Space space = shape.empty() ? Space::Scalar : Space::Global;
      ValueId v = NewValue(p.span, DtypeOf(t), space, shape);
      Param param;
      param.value = v;
      param.out = i < fields_.out.size() && fields_.out[i];
      if (i < fields_.param_layouts.size() && fields_.param_layouts[i]) kernel_.Get(v).pin = fields_.param_layouts[i];
      if (const auto* name = std::get_if<core::pattern::Name>(&p.node)) {
        param.name = name->name;
        kernel_.Get(v).name = name->name;
        scope_.emplace_back(name->name, Lowered::Of(v));
      }
      kernel_.params.push_back(param);
    }
    for (ExprId g : fields_.grid) {
      const core::Expr& ge = module_.Get(g);
      std::optional<Dim> dim = SizeDim(g);
      if (!dim) {
        Error(DiagnosticKind::KernelUnsupported, ge.span, "this grid extent",
              "a grid extent is arithmetic on the parameters' sizes and constants");
        Stop();
      }
      RecordNames(*dim);
      kernel_.grid.push_back(*dim);
    }
    if (fields_.threads.valid()) {
      const core::Expr& te = module_.Get(fields_.threads);
      const auto* lit = std::get_if<ce::IntLit>(&te.node);
      if (!lit) {
        Error(DiagnosticKind::KernelUnsupported, te.span, "this thread count", "`threads` is a constant, such as 128");
        Stop();
      }
      kernel_.threads = static_cast<std::int64_t>(lit->value);
    }
    Expr(def_.body);
    CheckUses();
    CarryLayouts();
  } catch (const Refused&) {
    return errors_;
  }
#ifndef NDEBUG
  if (std::vector<std::string> violations = Verify(kernel_); !violations.empty())
    WEFT_INTERNAL_ERROR("the tile IR of `" + kernel_.name + "` does not verify: " + violations.front());
#endif
  return std::move(kernel_);
}

}  // namespace

bool IsKernel(const core::Def& def) {
  return FieldsOf(def).present;
}

Result<Kernel, std::vector<Diagnostic>> Lower(const core::Module& module, const core::VarStore& vars,
                                              const core::Def& kernel) {
  return Lowering(module, vars, kernel).Run();
}

FileKernels LowerKernels(const core::Module& module, const core::VarStore& vars, FileId file,
                         Diagnostics& diagnostics) {
  FileKernels out;
  for (const core::Def& def : module.defs()) {
    if (!IsKernel(def) || !def.ok || !def.body.valid() || def.span.file != file) continue;
    auto kernel = Lower(module, vars, def);
    if (!kernel) {
      for (const Diagnostic& d : kernel.error()) diagnostics.Add(d);
      out.refused.push_back(def.name);
      continue;
    }
    out.lowered.push_back(std::move(*kernel));
  }
  return out;
}

}  // namespace weft::tile
