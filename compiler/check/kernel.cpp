// Kernels (docs/kernels.md): their signatures, grids and thread counts, and their bodies, where the
// kernel-only operations exist. A kernel is checked as a definition is (check.h), with:
//  1. Its parameters read in the kernel tier (a space may be written; it must be `@global`), `out`
//     ones set aside: the kernel's type takes the others and returns the `out` ones.
//  2. Its grid (1 to 3 dims over its sizes, each obliging what a `def`'s dims oblige) and its thread
//     count (a constant multiple of 32).
//  3. Its body, inferred with the kernel operations in scope: `block_idx` (its type from the grid),
//     `tile` (a view of a parameter with constant extents, obliging each tiled extent to be
//     divisible, to be proved from the `where` clause), `shared`/`regs`/`convert` (identities on
//     types), `mma` (f16/bf16 matrices into an f32 accumulator) and `store` (into a tile of an `out`
//     parameter, which nothing else may read). The body's type is `()`.
//  4. Obligations discharged, generalization and elaboration (elaborate.cpp) as for a `def`.
//  5. Its tiles' layout types: a layout variable per register and shared tile, and the
//     constraints between them (tile_layouts.cpp).
// A layout written on a parameter's or an ascription's type (`@reg (128,64):(64,1)`) is evaluated
// where it is read (PlacementOf) into a layout value, or why it has none, which core::Placement
// carries to the tile IR and synthesis.
#include <algorithm>

#include "base/overloaded.h"
#include "check/checker.h"
#include "layout/from_syntax.h"

namespace weft::check {
namespace {

bool SameSpan(Span a, Span b) {
  return a.file == b.file && a.begin == b.begin && a.end == b.end;
}

// The most instances a `tiles` clause may make (docs/kernels.md, "Tile sizes the compiler chooses").
constexpr std::size_t kMaxTileInstances = 64;

std::string Plural(std::size_t n, std::string_view word) {
  return std::to_string(n) + " " + std::string(word) + (n == 1 ? "" : "s");
}

}  // namespace

const std::vector<std::string>& KernelOpNames() {
  static const std::vector<std::string> names = {"block_idx", "tile", "shared", "regs", "convert", "mma", "store"};
  return names;
}

bool Checker::IsKernelOp(std::string_view name) {
  const std::vector<std::string>& ops = KernelOpNames();
  return std::find(ops.begin(), ops.end(), name) != ops.end();
}

const KernelContext::Param* Checker::KernelParamOf(const std::string& name) const {
  if (!kernel_) return nullptr;
  auto it = kernel_->params.find(name);
  const Binding* binding = env_.Find(name);
  if (it == kernel_->params.end() || !binding || !SameSpan(binding->span, it->second.span)) return nullptr;
  return &it->second;
}

std::optional<Placement> Checker::PlacementOf(syntax::TypeId id) {
  const auto* tensor = std::get_if<syntax::type::Tensor>(&ast_->Get(id).node);
  if (!tensor || !tensor->space) return std::nullopt;
  Placement placement;
  placement.space = "@" + tensor->space->text;
  // A written layout is evaluated here, once: synthesis reads its value (or why it has none).
  if (tensor->layout)
    placement.layout = core::WrittenLayout{std::string(sources_.Text(ast_->Get(tensor->layout).span)),
                                           layout::Evaluate(*ast_, tensor->layout)};
  placement.span = ast_->Get(id).span;
  return placement;
}

void Checker::CheckKernel(const syntax::Decl& decl, const syntax::KernelDecl& kernel, std::vector<CheckedDef>* own) {
  CheckedDef checked = kernel.tiles.empty() ? CheckKernelInstance(decl, kernel) : CheckTiledKernel(decl, kernel);
  Binding binding;
  binding.scheme = checked.scheme;
  Define(kernel.name.text, kernel.name.span, std::move(binding));
  if (own) own->push_back(std::move(checked));
}

// A kernel with a `tiles` clause (docs/kernels.md, "Tile sizes the compiler chooses"):
//  1. the instances are every combination of the candidates, the first size varying slowest;
//  2. each is checked as a kernel of its own, in a copy of the file's nodes where each use of a
//     tile size's name in the grid, the thread count and the body is its candidate (an integer
//     literal, or a dim in a type), so that everything after the checker sees constant tiles; the
//     `where` clause is not substituted: callers' obligations never depend on the tile chosen;
//  3. an instance with errors stops the checking, its errors noting the instance;
//  4. the kernel's definition is instance 0, holding every instance (core::KernelInfo::instances).
CheckedDef Checker::CheckTiledKernel(const syntax::Decl& decl, const syntax::KernelDecl& kernel) {
  bool ok = true;
  std::vector<std::vector<std::int64_t>> combos = {{}};
  for (const syntax::TileSize& size : kernel.tiles) {
    std::vector<std::vector<std::int64_t>> next;
    for (const auto& combo : combos) {
      for (std::int64_t c : size.candidates) {
        next.push_back(combo);
        next.back().push_back(c);
      }
    }
    if (next.size() > kMaxTileInstances) {
      // Each instance is checked, synthesized and scheduled: a clause is a short list, not a search.
      diagnostics_.Emit(DiagnosticKind::BadTileSize, size.span, size.name.text,
                        "makes " + std::to_string(next.size()) + " instances of `" + kernel.name.text +
                            "`, more than " + std::to_string(kMaxTileInstances));
      next.resize(1);
      ok = false;
    }
    combos = std::move(next);
  }
  if (combos.empty()) return CheckKernelInstance(decl, kernel);  // a size without candidates (E0111)
  auto size_of = [&](std::string_view name) -> std::optional<std::size_t> {
    for (std::size_t k = 0; k < kernel.tiles.size(); ++k)
      if (kernel.tiles[k].name.text == name) return k;
    return std::nullopt;
  };
  const Span grid = ast_->Get(kernel.grid).span, body = ast_->Get(kernel.body).span;
  auto inside = [&](Span span) { return span.file == grid.file && span.begin >= grid.begin && span.end <= body.end; };
  syntax::Ast copy = *ast_;
  std::vector<std::pair<syntax::ExprId, std::size_t>> expr_uses;
  std::vector<std::pair<syntax::DimId, std::size_t>> dim_uses;
  for (std::uint32_t i = 0; i < copy.expr_count(); ++i) {
    const syntax::Expr& e = copy.Get(syntax::ExprId(i));
    if (const auto* var = std::get_if<syntax::expr::Var>(&e.node); var && inside(e.span))
      if (auto k = size_of(var->name)) expr_uses.emplace_back(syntax::ExprId(i), *k);
  }
  for (std::uint32_t i = 0; i < copy.dims().size(); ++i) {
    const syntax::Dim& d = copy.dims()[i];
    if (const auto* var = std::get_if<syntax::dim::Var>(&d.node); var && inside(d.span))
      if (auto k = size_of(var->name)) dim_uses.emplace_back(syntax::DimId(i), *k);
  }
  // A tile size is a constant of the body: a binding of its name there is refused, not shadowed.
  for (std::uint32_t i = 0; i < copy.pattern_count(); ++i) {
    const syntax::Pattern& p = copy.Get(syntax::PatternId(i));
    if (const auto* name = std::get_if<syntax::pattern::Name>(&p.node); name && inside(p.span)) {
      if (auto k = size_of(name->name)) {
        Diagnostic& error = diagnostics_.Emit(DiagnosticKind::DuplicateSizeBinder, p.span, name->name);
        error.notes.push_back(MakeNote(DiagnosticKind::NoteFirstBinding, kernel.tiles[*k].name.span, name->name));
      }
    }
  }
  std::vector<core::TileSize> sizes;
  for (const syntax::TileSize& size : kernel.tiles) sizes.push_back(core::TileSize{size.name.text, size.candidates});
  const syntax::Ast* file = std::exchange(ast_, &copy);
  std::vector<core::Def> instances;
  std::optional<CheckedDef> first;
  for (const std::vector<std::int64_t>& combo : combos) {
    for (auto [id, k] : expr_uses) copy.Mutable(id).node = syntax::expr::IntLit{static_cast<std::uint64_t>(combo[k])};
    for (auto [id, k] : dim_uses) copy.Mutable(id).node = syntax::dim::Int{combo[k]};
    std::size_t before = diagnostics_.all().size();
    CheckedDef checked = CheckKernelInstance(decl, kernel);
    core::Def def = std::move(module_.defs().back());
    module_.defs().pop_back();
    std::string text, suffix;
    for (std::size_t k = 0; k < combo.size(); ++k) {
      text += (k ? ", " : "") + kernel.tiles[k].name.text + " = " + std::to_string(combo[k]);
      suffix += "_" + kernel.tiles[k].name.text + std::to_string(combo[k]);
    }
    if (diagnostics_.all().size() > before) {
      // The instance's errors name it: at its candidate when there is one size, else at the clause.
      Span at = kernel.tiles.front().span.To(kernel.tiles.back().span);
      if (kernel.tiles.size() == 1) {
        const syntax::TileSize& size = kernel.tiles.front();
        auto c = std::find(size.candidates.begin(), size.candidates.end(), combo.front()) - size.candidates.begin();
        at = size.candidate_spans[static_cast<std::size_t>(c)];
      }
      for (std::size_t i = before; i < diagnostics_.all().size(); ++i)
        if (Info(diagnostics_.all()[i].kind).severity == Severity::Error)
          diagnostics_.at(i).notes.push_back(MakeNote(DiagnosticKind::NoteTileInstance, at, text, kernel.name.text));
    }
    ok = ok && checked.ok;
    def.name += suffix;
    def.kernel->tile_sizes = sizes;
    def.kernel->tile_values = combo;
    instances.push_back(std::move(def));
    if (!first) first = std::move(checked);
    if (!ok) break;
  }
  ast_ = file;
  core::Def def = instances.front();
  def.name = kernel.name.text;
  def.ok = ok;
  if (!ok) def.body = core::ExprId();
  def.kernel->instances = std::move(instances);
  module_.defs().push_back(std::move(def));
  first->ok = ok;
  return std::move(*first);
}

CheckedDef Checker::CheckKernelInstance(const syntax::Decl& decl, const syntax::KernelDecl& kernel) {
  current_ = kernel.name.text;
  in_main_ = false;
  facts_.clear();
  obligations_.clear();
  pending_.clear();
  late_.clear();
  runtime_checks_.clear();
  elaboration_.Clear();
  int errors_before = diagnostics_.error_count();
  errors_at_start_ = errors_before;
  if (IsBuiltin(kernel.name.text) || IsKernelOp(kernel.name.text))
    diagnostics_.Emit(DiagnosticKind::ShadowsBuiltin, kernel.name.span, kernel.name.text);
  AnnotationScope scope;
  scope.new_sizes = VarKind::Rigid;
  scope_ = &scope;
  vars_.Enter();
  std::size_t mark = env_.Mark();
  bool saved_in_kernel = std::exchange(in_kernel_, true);
  KernelContext context;
  context.name = kernel.name.text;

  // 1. Parameters.
  std::vector<TypeRef> inputs, outputs;
  for (const syntax::Param& param : kernel.params) {
    const syntax::Pattern& p = ast_->Get(param.pattern);
    const auto* typed = std::get_if<syntax::pattern::Typed>(&p.node);
    TypeRef type = typed ? FromAnnotation(typed->type, scope) : MakeVar(vars_.NewTypeVar());
    std::optional<Placement> placement = typed ? PlacementOf(typed->type) : std::nullopt;
    const auto* name = typed ? std::get_if<syntax::pattern::Name>(&ast_->Get(typed->pattern).node) : nullptr;
    if (placement && placement->space != "@global" && name) {
      const auto& tensor = std::get<syntax::type::Tensor>(ast_->Get(typed->type).node);
      if (tensor.space->text == "shared" || tensor.space->text == "reg")
        diagnostics_.Emit(DiagnosticKind::ParamSpace, tensor.space->span, name->name, tensor.space->text);
    }
    if (!std::holds_alternative<TensorType>(vars_.Resolve(type)->node)) {
      // A kernel's arguments live in device memory or in every thread's registers: tensors and
      // scalars, whose types are written.
      Span at = typed ? ast_->Get(typed->type).span : p.span;
      std::string text = typed ? "has type `" + TypePrinter(vars_).Print(type) + "`" : "has no type written";
      Span name_span = typed ? ast_->Get(typed->pattern).span : p.span;
      diagnostics_.Emit(DiagnosticKind::KernelParamType, at, std::string(sources_.Text(name_span)), text);
      type = MakeTensor(Elem{vars_.NewElemVar()}, Shape::Spread(vars_.NewShapeVar()));
    }
    context.param_spaces.push_back(placement);
    (param.out ? outputs : inputs).push_back(type);
    if (typed) {
      BindPattern(typed->pattern, type, env_, false);
    } else {
      BindPattern(param.pattern, type, env_, false);
    }
    if (name) {
      TypeRef resolved = vars_.Resolve(type);
      const auto* tensor = std::get_if<TensorType>(&resolved->node);
      bool is_tensor =
          tensor && !(vars_.Resolve(tensor->shape).Known() && vars_.Resolve(tensor->shape).FixedRank() == 0);
      context.params[name->name] = KernelContext::Param{ast_->Get(typed->pattern).span, param.out, is_tensor};
    }
  }
  for (const syntax::WhereItem& item : kernel.where) {
    if (!item.class_var.empty()) {
      auto it = scope.elem_vars.find(item.class_var);
      if (it == scope.elem_vars.end()) {
        diagnostics_.Emit(DiagnosticKind::UnknownName, item.span, "'" + item.class_var,
                          ": a class constrains an element type of the signature");
        continue;
      }
      ElemClass cls = item.class_name.text == "float" ? ElemClass::Float
                      : item.class_name.text == "int" ? ElemClass::Int
                                                      : ElemClass::Num;
      if (auto m = unifier_.RequireClass(Elem{it->second}, cls)) {
        diagnostics_.Emit(DiagnosticKind::ClassMismatch, item.span, "the `where` clause", m->message);
      }
    } else if (std::optional<DimFact> fact = WhereFact(item.condition)) {
      facts_.push_back(*fact);
    }
  }
  if (!kernel.where.empty()) context.where_span = kernel.where.front().span.To(kernel.where.back().span);

  // 2. The grid and the thread count.
  const syntax::Expr& grid = ast_->Get(kernel.grid);
  context.grid_span = grid.span;
  std::vector<syntax::ExprId> extents;
  if (const auto* tuple = std::get_if<syntax::expr::Tuple>(&grid.node)) {
    extents = tuple->elements;
  } else {
    extents.push_back(kernel.grid);
  }
  if (extents.empty() || extents.size() > 3) {
    diagnostics_.Emit(DiagnosticKind::BadGrid, grid.span, Plural(extents.size(), "extent"));
  } else {
    for (syntax::ExprId extent : extents) {
      std::optional<Dim> d = ExprToDim(extent);
      context.grid.push_back(d ? *d : Dim::Constant(1));
      context.grid_spans.push_back(ast_->Get(extent).span);
    }
  }
  {
    std::size_t before = static_cast<std::size_t>(diagnostics_.error_count());
    std::optional<Dim> threads = ExprToDim(kernel.threads);
    std::optional<std::int64_t> value = threads ? threads->AsConstant() : std::nullopt;
    if (static_cast<std::size_t>(diagnostics_.error_count()) == before && (!value || *value <= 0 || *value % 32 != 0)) {
      diagnostics_.Emit(DiagnosticKind::BadThreads, ast_->Get(kernel.threads).span,
                        "threads " + std::string(sources_.Text(ast_->Get(kernel.threads).span)));
    }
    if (value && *value > 0 && *value % 32 == 0) context.threads = *value;
  }

  // 3. The body.
  scope.new_sizes = VarKind::Flexible;
  kernel_ = &context;
  TypeRef body = Infer(kernel.body);
  if (unifier_.Unify(MakeTuple({}), body)) {
    unifier_.TakeDeferred();
    diagnostics_.Emit(DiagnosticKind::KernelBodyNotUnit, ast_->Get(kernel.body).span, kernel.name.text,
                      TypePrinter(vars_).Print(body));
  }
  RetryBroadcasts(/*report=*/diagnostics_.error_count() == errors_before);
  for (auto& check : std::exchange(late_, {})) check();
  kernel_ = nullptr;
  in_kernel_ = saved_in_kernel;

  // 4. Obligations, generalization, elaboration.
  TypeRef result = outputs.size() == 1 ? outputs.front() : MakeTuple(outputs);
  TypeRef type = MakeFunction(inputs, result);
  CheckedDef checked;
  checked.name = kernel.name.text;
  checked.span = decl.span;
  Discharge(checked, true);
  vars_.Leave();
  env_.Reset(mark);
  scope_ = nullptr;
  checked.scheme = Generalize(type);
  checked.scheme.where = facts_;
  if (!kernel.where.empty()) checked.scheme.where_span = context.where_span;
  AdmitLayouts(kernel, checked);
  checked.runtime_checks = std::move(runtime_checks_);
  checked.ok = checked.ok && diagnostics_.error_count() == errors_before;
  ElaborateKernel(kernel, checked, context);
  InferTileLayouts(checked);
  return checked;
}

TypeRef Checker::InferKernelOpValue(const std::string& name, const syntax::Expr& e) {
  if (!kernel_) {
    diagnostics_.Emit(DiagnosticKind::KernelOnlyOutside, e.span, name, current_);
    return MakeVar(vars_.NewTypeVar());
  }
  if (name == "block_idx") {
    std::size_t rank = kernel_->grid.empty() ? 1 : kernel_->grid.size();
    if (rank == 1) return MakeScalar(Dtype::I64);
    return MakeTuple(std::vector<TypeRef>(rank, MakeScalar(Dtype::I64)));
  }
  if (name == "shared" || name == "regs" || name == "convert") {
    TypeRef t = MakeTensor(Elem{vars_.NewElemVar()}, Shape::Spread(vars_.NewShapeVar()));
    return MakeFunction(t, t);
  }
  std::string form = name == "tile"  ? "three arguments, as in `tile a [128, 64] (i, kk)`"
                     : name == "mma" ? "three arguments, as in `mma a b acc`"
                                     : "two arguments, as in `store (tile c [128, 128] (i, j)) v`";
  diagnostics_.Emit(DiagnosticKind::KernelOpForm, e.span, name, form, "it without them");
  return MakeVar(vars_.NewTypeVar());
}

TypeRef Checker::InferKernelOp(const std::string& name, const syntax::Expr& e, const syntax::expr::Apply& apply) {
  auto give_up = [&] {
    bool saved = std::exchange(store_destination_, true);  // no second error about an `out` parameter
    for (syntax::ExprId arg : apply.args) Infer(arg);
    store_destination_ = saved;
    return MakeVar(vars_.NewTypeVar());
  };
  if (!kernel_) {
    diagnostics_.Emit(DiagnosticKind::KernelOnlyOutside, ast_->Get(apply.callee).span, name, current_);
    return give_up();
  }
  std::size_t arity = name == "store" ? 2 : 3;
  if (apply.args.size() != arity) {
    std::string form = name == "tile"  ? "three arguments, as in `tile a [128, 64] (i, kk)`"
                       : name == "mma" ? "three arguments, as in `mma a b acc`"
                                       : "two arguments, as in `store (tile c [128, 128] (i, j)) v`";
    diagnostics_.Emit(DiagnosticKind::KernelOpForm, e.span, name, form, Plural(apply.args.size(), "argument"));
    return give_up();
  }
  if (name == "tile") return InferTile(e, apply);
  if (name == "mma") return InferMma(e, apply);
  return InferStore(e, apply);
}

TypeRef Checker::InferTile(const syntax::Expr& e, const syntax::expr::Apply& apply) {
  // tile x [t0, .., tr-1] (c0, .., cq-1): x a tensor parameter of rank q >= r; the first q - r
  // coordinates index (and drop) leading axes, the last r are tile coordinates.
  const syntax::Expr& x = ast_->Get(apply.args[0]);
  const auto* var = std::get_if<syntax::expr::Var>(&x.node);
  const KernelContext::Param* param = var ? KernelParamOf(var->name) : nullptr;
  auto fail = [&](Span span, const std::string& takes, const std::string& found) {
    diagnostics_.Emit(DiagnosticKind::KernelOpForm, span, "tile", takes, found);
    for (std::size_t i = 1; i < apply.args.size(); ++i) {
      if (i != 1) Infer(apply.args[i]);
    }
    return MakeVar(vars_.NewTypeVar());
  };
  if (!param || !param->tensor) {
    bool saved = std::exchange(store_destination_, true);
    Infer(apply.args[0]);
    store_destination_ = saved;
    return fail(x.span, "a tensor parameter of the kernel", "`" + std::string(sources_.Text(x.span)) + "`");
  }
  TypeRef xt = Infer(apply.args[0]);
  LazyText xtext{&vars_, xt};
  TypeRef resolved = vars_.Resolve(xt);
  const auto* tensor = std::get_if<TensorType>(&resolved->node);
  Shape shape = tensor ? vars_.Resolve(tensor->shape) : Shape{};
  if (!tensor || !shape.Known()) {
    return fail(x.span, "a tensor of known rank", "`" + var->name + ": " + xtext.str() + "`");
  }
  Span shape_span = ast_->Get(apply.args[1]).span;
  std::optional<std::vector<Dim>> dims = ShapeArgument(apply.args[1]);
  if (!dims) return fail(shape_span, "a list of constant extents", "`" + std::string(sources_.Text(shape_span)) + "`");
  std::vector<std::int64_t> extents;
  for (std::size_t i = 0; i < dims->size(); ++i) {
    std::optional<std::int64_t> c = (*dims)[i].AsConstant();
    const auto& list = std::get<syntax::expr::List>(ast_->Get(apply.args[1]).node);
    if (!c || *c <= 0) {
      Span at = ast_->Get(list.elements[i]).span;
      return fail(at, "positive constant extents", "`" + std::string(sources_.Text(at)) + "`");
    }
    extents.push_back(*c);
  }
  std::size_t q = shape.before.size(), r = extents.size();
  if (r == 0 || r > q) {
    return fail(shape_span, "1 to " + std::to_string(q) + " extents for `" + var->name + ": " + xtext.str() + "`",
                Plural(r, "extent"));
  }
  // The coordinates: a tuple written in place, or one i64.
  const syntax::Expr& coords = ast_->Get(apply.args[2]);
  std::vector<syntax::ExprId> items;
  if (const auto* tuple = std::get_if<syntax::expr::Tuple>(&coords.node)) {
    items = tuple->elements;
    std::vector<TypeRef> types;
    for (syntax::ExprId item : items) {
      TypeRef t = Infer(item);
      Expect(MakeScalar(Dtype::I64), t, ast_->Get(item).span, "a tile coordinate");
      types.push_back(t);
    }
    elaboration_.expr_types[apply.args[2].index] = MakeTuple(types);
  } else {
    items.push_back(apply.args[2]);
    Expect(MakeScalar(Dtype::I64), Infer(apply.args[2]), coords.span, "a tile coordinate");
  }
  if (items.size() != q) {
    diagnostics_.Emit(DiagnosticKind::KernelOpForm, coords.span, "tile",
                      Plural(q, "coordinate") + " for `" + var->name + ": " + xtext.str() + "`",
                      std::to_string(items.size()));
  }
  // Each tiled extent is divisible by the tile's.
  std::string shape_text(sources_.Text(shape_span));
  for (std::size_t i = 0; i < r; ++i) {
    Dim axis = shape.before[q - r + i];
    std::int64_t t = extents[i];
    Oblige(
        DimFact{*core::Mod(axis, t), Relation::kEq, Dim(), e.span},
        [this, axis, t, shape_text, name = var->name, xtext, span = e.span, where = kernel_->where_span,
         kernel = kernel_->name](bool refuted) {
          std::string a = TypePrinter(vars_).Print(axis);
          std::string operand = vars_.Resolve(axis).terms().size() > 1 ? "(" + a + ")" : a;
          std::string fact = operand + " % " + std::to_string(t) + " == 0";
          Diagnostic& error =
              diagnostics_.Emit(DiagnosticKind::TileNotDivisible, span, shape_text, name + ": " + xtext.str(), fact,
                                refuted ? ", which is false" : ": add `where " + fact + "` to the kernel");
          if (where.valid()) error.notes.push_back(MakeNote(DiagnosticKind::NoteWhereClause, where, kernel));
        },
        "a tile's divisibility");
  }
  Elem elem = std::get<TensorType>(vars_.Resolve(xt)->node).elem;
  std::vector<Dim> out;
  for (std::int64_t t : extents) out.push_back(Dim::Constant(t));
  return MakeTensor(elem, Shape::Of(out));
}

TypeRef Checker::InferMma(const syntax::Expr& e, const syntax::expr::Apply& apply) {
  // mma a b acc : 't[m, k] -> 't[k, n] -> f32[m, n] -> f32[m, n], 't f16 or bf16.
  TypeRef at = Infer(apply.args[0]), bt = Infer(apply.args[1]), acc = Infer(apply.args[2]);
  Span aspan = ast_->Get(apply.args[0]).span, bspan = ast_->Get(apply.args[1]).span;
  LazyText atext{&vars_, at}, btext{&vars_, bt};
  auto report = [this, atext, btext, aspan, bspan](const std::string& why) {
    Diagnostic& error = diagnostics_.Emit(DiagnosticKind::MmaOperands, aspan, atext.str(), btext.str(), why);
    error.notes.push_back(MakeNote(DiagnosticKind::NoteHasType, bspan, "the right operand", btext.str()));
  };
  ElemVarId ta = vars_.NewElemVar(), tb = vars_.NewElemVar();
  SizeVarId m = vars_.NewSizeVar(), k = vars_.NewSizeVar(), k2 = vars_.NewSizeVar(), n = vars_.NewSizeVar();
  TypeRef result = MakeTensor(Elem{Dtype::F32}, Shape::Of({Dim::Var(m), Dim::Var(n)}));
  if (unifier_.Unify(MakeTensor(Elem{ta}, Shape::Of({Dim::Var(m), Dim::Var(k)})), at)) {
    unifier_.TakeDeferred();
    report("`" + atext.str() + "` is not a matrix");
    return result;
  }
  if (unifier_.Unify(MakeTensor(Elem{tb}, Shape::Of({Dim::Var(k2), Dim::Var(n)})), bt)) {
    unifier_.TakeDeferred();
    report("`" + btext.str() + "` is not a matrix");
    return result;
  }
  unifier_.TakeDeferred();
  Elem ea = vars_.Resolve(Elem{ta}), eb = vars_.Resolve(Elem{tb});
  if (unifier_.UnifyElem(ea, eb)) {
    TypePrinter p(vars_);
    report("element types `" + p.Print(ea) + "` and `" + p.Print(eb) + "` differ");
    return result;
  }
  // f16 or bf16: decided once the body is inferred (a parameter's `'t` may be fixed later).
  late_.push_back([this, ta, report] {
    Elem elem = vars_.Resolve(Elem{ta});
    if (!elem.is_var() && (elem.dtype() == Dtype::F16 || elem.dtype() == Dtype::BF16)) return;
    report("tensor cores multiply `f16` or `bf16` tiles, found `" + TypePrinter(vars_).Print(elem) + "`");
  });
  Dim dk = Dim::Var(k), dk2 = Dim::Var(k2);
  Oblige(
      DimFact{dk, Relation::kEq, dk2, aspan},
      [this, report, dk, dk2](bool refuted) {
        TypePrinter p(vars_);
        report("inner dimensions `" + p.Print(dk) + "` and `" + p.Print(dk2) + "` " +
               (refuted ? "differ" : "may differ"));
      },
      "the inner dimensions of `mma`");
  Expect(result, acc, ast_->Get(apply.args[2]).span, "the accumulator of `mma`");
  return result;
}

TypeRef Checker::InferStore(const syntax::Expr& e, const syntax::expr::Apply& apply) {
  // store (tile c [..] (..)) v: c an `out` parameter; v of the tile's type.
  const syntax::Expr& dst = ast_->Get(apply.args[0]);
  std::string problem;
  const auto* call = std::get_if<syntax::expr::Apply>(&dst.node);
  const auto* callee = call ? std::get_if<syntax::expr::Var>(&ast_->Get(call->callee).node) : nullptr;
  bool is_tile = callee && callee->name == "tile" && !env_.Find("tile") && !globals_.count("tile");
  std::optional<Note> note;
  if (!is_tile || call->args.empty()) {
    problem = "`" + std::string(sources_.Text(dst.span)) + "`, which is not a `tile` of a parameter";
  } else {
    const syntax::Expr& x = ast_->Get(call->args[0]);
    const auto* var = std::get_if<syntax::expr::Var>(&x.node);
    const KernelContext::Param* param = var ? KernelParamOf(var->name) : nullptr;
    if (param && !param->out) {
      problem = "a tile of `" + var->name + "`, which is an input parameter";
      note = MakeNote(DiagnosticKind::NoteBoundHere, param->span, var->name);
    } else if (!param) {
      problem = "a tile of `" + std::string(sources_.Text(x.span)) + "`, which is not a parameter";
    }
  }
  if (!problem.empty()) {
    Diagnostic& error = diagnostics_.Emit(DiagnosticKind::StoreNotOutTile, dst.span, problem);
    if (note) error.notes.push_back(*note);
  }
  bool saved = std::exchange(store_destination_, true);
  TypeRef dt = Infer(apply.args[0]);
  store_destination_ = saved;
  TypeRef vt = Infer(apply.args[1]);
  if (problem.empty()) {
    LazyText dtext{&vars_, dt}, vtext{&vars_, vt};
    if (unifier_.Unify(dt, vt)) {
      unifier_.TakeDeferred();
      TypeRef d = vars_.Resolve(dt), v = vars_.Resolve(vt);
      const auto* dtensor = std::get_if<TensorType>(&d->node);
      const auto* vtensor = std::get_if<TensorType>(&v->node);
      std::string hint;
      if (dtensor && vtensor) {
        Elem de = vars_.Resolve(dtensor->elem), ve = vars_.Resolve(vtensor->elem);
        if (!de.is_var() && !ve.is_var() && de.dtype() != ve.dtype())
          hint = ": the element types differ; convert the value with `cast " + std::string(Spelling(de.dtype())) + "`";
      }
      diagnostics_.Emit(DiagnosticKind::StoreType, ast_->Get(apply.args[1]).span, vtext.str(), dtext.str(), hint);
    } else {
      RecordDeferred(ast_->Get(apply.args[1]).span, "the value `store` writes");
    }
  }
  return MakeTuple({});
}

bool Checker::CheckBlockIdxPattern(syntax::PatternId pattern, syntax::ExprId value) {
  if (!kernel_) return false;
  const auto* var = std::get_if<syntax::expr::Var>(&ast_->Get(value).node);
  if (!var || var->name != "block_idx" || env_.Find("block_idx") || globals_.count("block_idx")) return false;
  syntax::PatternId p = pattern;
  while (const auto* typed = std::get_if<syntax::pattern::Typed>(&ast_->Get(p).node)) p = typed->pattern;
  const auto* tuple = std::get_if<syntax::pattern::Tuple>(&ast_->Get(p).node);
  if (!tuple) return false;
  std::size_t rank = kernel_->grid.empty() ? 1 : kernel_->grid.size();
  if (tuple->elements.size() == rank && rank > 1) return false;
  std::string type = rank == 1 ? "i64" : "(" + std::string(rank == 2 ? "i64, i64" : "i64, i64, i64") + ")";
  Diagnostic& error = diagnostics_.Emit(DiagnosticKind::BlockIdxArity, ast_->Get(p).span, Plural(rank, "extent"), type,
                                        tuple->elements.size());
  error.notes.push_back(MakeNote(DiagnosticKind::NoteKernelGrid, kernel_->grid_span, kernel_->name));
  return true;
}

}  // namespace weft::check
