// Definitions, imports, instantiation and generalization: the outer loop of
// the checker (check.h has the algorithm).
#include <algorithm>
#include <cctype>
#include <filesystem>

#include "base/stack.h"
#include "check/checker.h"
#include "core/array_layout.h"
#include "syntax/parser.h"

namespace weft::check {

const Binding* Env::Find(std::string_view name) const {
  for (auto it = entries_.rbegin(); it != entries_.rend(); ++it) {
    if (it->first == name) return &it->second;
  }
  return nullptr;
}

void Env::Names(std::vector<std::string>& out) const {
  for (const auto& [name, binding] : entries_) out.push_back(name);
}

namespace {

struct VarMap {
  std::map<TypeVarId, TypeRef> types;
  std::map<ElemVarId, ElemVarId> elems;
  std::map<ShapeVarId, ShapeVarId> shapes;
  std::map<SizeVarId, Dim> sizes;
  std::map<LayoutVarId, LayoutRef> layouts;
};

Dim SubstDim(const VarStore& vars, const Dim& dim, const VarMap& map) {
  Dim resolved = vars.Resolve(dim);
  if (map.sizes.empty()) return resolved;
  core::Result<Dim> out = core::Substitute(resolved, map.sizes);
  if (!out) WEFT_INTERNAL_ERROR("instantiating a dim: " + out.error().message);
  return *out;
}

Shape SubstShape(const VarStore& vars, const Shape& shape, const VarMap& map) {
  Shape s = vars.Resolve(shape);
  Shape out;
  for (const Dim& d : s.before) out.before.push_back(SubstDim(vars, d, map));
  for (const Dim& d : s.after) out.after.push_back(SubstDim(vars, d, map));
  if (s.spread) {
    auto it = map.shapes.find(*s.spread);
    out.spread = it == map.shapes.end() ? *s.spread : it->second;
  }
  return out;
}

LayoutRef SubstLayout(const VarStore& vars, const LayoutRef& layout, const VarMap& map) {
  if (!layout) return layout;
  if (const auto* var = std::get_if<Layout::Var>(&layout->node)) {  // the common case: a parameter's
    auto it = map.layouts.find(var->var);
    return it == map.layouts.end() ? layout : it->second;
  }
  LayoutMap m;
  m.dim = [&](const Dim& d) { return SubstDim(vars, d, map); };
  m.shape = [&](const Shape& s) { return SubstShape(vars, s, map); };
  m.var = [&](LayoutVarId v) -> LayoutRef {
    auto it = map.layouts.find(v);
    return it == map.layouts.end() ? nullptr : it->second;
  };
  return MapLayout(layout, m);
}

TypeRef SubstType(const VarStore& vars, const TypeRef& type, const VarMap& map) {
  TypeRef t = vars.Resolve(type);
  return std::visit(
      [&](const auto& node) -> TypeRef {
        using T = std::decay_t<decltype(node)>;
        if constexpr (std::is_same_v<T, VarType>) {
          auto it = map.types.find(node.var);
          return it == map.types.end() ? t : it->second;
        } else if constexpr (std::is_same_v<T, TensorType>) {
          Elem elem = node.elem;
          if (elem.is_var()) {
            auto it = map.elems.find(elem.var());
            if (it != map.elems.end()) elem = Elem{it->second};
          }
          return MakeTensor(elem, SubstShape(vars, node.shape, map), SubstLayout(vars, node.layout, map));
        } else if constexpr (std::is_same_v<T, FunctionType>) {
          return MakeFunction(SubstType(vars, node.param, map), SubstType(vars, node.result, map));
        } else if constexpr (std::is_same_v<T, TupleType>) {
          std::vector<TypeRef> elements;
          for (const TypeRef& e : node.elements) elements.push_back(SubstType(vars, e, map));
          return MakeTuple(std::move(elements));
        } else {
          return t;
        }
      },
      t->node);
}

}  // namespace

Checker::Checker(SourceManager& sources, Diagnostics& diagnostics, const CheckOptions& options)
    : sources_(sources), diagnostics_(diagnostics), options_(options) {
  LoadPrelude();
}

TypeRef Checker::Instantiate(const Scheme& scheme, Span call, const std::string& name) {
  VarMap map;
  for (TypeVarId v : scheme.quantified.types) map.types[v] = MakeVar(vars_.NewTypeVar());
  for (ElemVarId v : scheme.quantified.elems) map.elems[v] = vars_.NewElemVar(vars_.info(v).cls);
  for (ShapeVarId v : scheme.quantified.shapes)
    map.shapes[v] = vars_.NewShapeVar(VarKind::Flexible, vars_.info(v).name);
  for (SizeVarId v : scheme.quantified.sizes) {
    // Flexible even in `main`: a call's sizes unify with its arguments'; what stays undecided there
    // becomes a run-time check when the obligations are discharged.
    map.sizes[v] = Dim::Var(vars_.NewSizeVar(VarKind::Flexible, vars_.info(v).name));
  }
  for (LayoutVarId v : scheme.quantified.layouts) map.layouts[v] = VarLayout(vars_.NewLayoutVar(vars_.info(v).name));
  // The scheme's views over its parameters' layouts, as this call makes them (check/layouts.cpp
  // substitutes the arguments' layouts when it meets the application).
  if (!scheme.layouts.empty()) {
    std::vector<LayoutFact>& facts = layout_instances_[SpanKey(call)];
    facts.clear();
    for (const LayoutFact& fact : scheme.layouts)
      facts.push_back({SubstLayout(vars_, fact.layout, map), fact.span, fact.call, fact.read});
  }
  // The callee's size names, for showing a clause as this call reads it.
  std::map<std::string, Dim> by_name;
  for (SizeVarId v : scheme.quantified.sizes) {
    if (!vars_.info(v).name.empty()) by_name.emplace(vars_.info(v).name, map.sizes.at(v));
  }
  for (const DimFact& fact : scheme.where) {
    DimFact goal{SubstDim(vars_, fact.lhs, map), fact.relation, SubstDim(vars_, fact.rhs, map), call};
    std::string clause(sources_.Text(fact.span));
    Span where_span = fact.span;
    Oblige(
        goal,
        [this, name, clause, by_name, where_span, span = goal.span](bool refuted) {
          // Unproved, it is a fact the caller can state, as E0211 suggests for a division.
          std::string reads = InstantiateClause(clause, by_name);
          std::string detail = ": here it reads `" + reads + "`" +
                               (refuted ? ", which is false" : ", which is not provable: add `where " + reads + "`");
          Diagnostic& error = diagnostics_.Emit(DiagnosticKind::WhereBroken, span, name, clause, detail);
          error.notes.push_back(MakeNote(DiagnosticKind::NoteWhereClause, where_span, name));
        },
        "the `where` clause of `" + name + "`");
  }
  return SubstType(vars_, scheme.type, map);
}

std::string Checker::InstantiateClause(std::string_view clause, const std::map<std::string, Dim>& sizes) {
  // The clause as written, each size name replaced by what this call made it (parenthesized unless
  // it is one name or number): `n % 4 == 0` at a call with `f32[6]` reads `6 % 4 == 0`.
  TypePrinter printer(vars_);
  std::string out;
  std::size_t i = 0;
  auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '\''; };
  while (i < clause.size()) {
    if (!word(clause[i])) {
      out += clause[i++];
      continue;
    }
    std::size_t end = i;
    while (end < clause.size() && word(clause[end])) ++end;
    std::string name(clause.substr(i, end - i));
    auto it = sizes.find(name);
    if (it == sizes.end()) {
      out += name;
    } else {
      std::string text = printer.Print(vars_.Resolve(it->second));
      bool atomic = std::all_of(text.begin(), text.end(), word);
      out += atomic ? text : "(" + text + ")";
    }
    i = end;
  }
  return out;
}

Scheme Checker::Generalize(const TypeRef& type) {
  Scheme scheme;
  scheme.type = vars_.Resolve(type);
  FreeVars free;
  CollectFreeVars(vars_, scheme.type, free);
  int level = vars_.level();
  for (TypeVarId v : free.types) {
    if (vars_.info(v).level > level) scheme.quantified.types.push_back(v);
  }
  for (ElemVarId v : free.elems) {
    if (vars_.info(v).level > level) scheme.quantified.elems.push_back(v);
  }
  for (ShapeVarId v : free.shapes) {
    if (vars_.info(v).level > level) scheme.quantified.shapes.push_back(v);
  }
  for (SizeVarId v : free.sizes) {
    if (vars_.info(v).level > level) scheme.quantified.sizes.push_back(v);
  }
  return scheme;
}

void Checker::DefaultElems(const TypeRef& type) {
  FreeVars free;
  CollectFreeVars(vars_, type, free);
  for (ElemVarId v : free.elems) {
    if (vars_.info(v).level <= vars_.level()) continue;
    ElemClass cls = vars_.info(v).cls;
    vars_.info(v).binding = Elem{DefaultDtype(cls)};
  }
}

void Checker::Define(const std::string& name, Span span, Binding binding) {
  binding.span = span;
  globals_[name] = std::move(binding);
}

TypeRef Checker::BindPattern(syntax::PatternId id, const TypeRef& type, Env& env, bool generalize, Span site) {
  const syntax::Pattern& p = ast_->Get(id);
  using namespace syntax::pattern;
  elaboration_.pattern_types[id.index] = type;
  if (const auto* name = std::get_if<Name>(&p.node)) {
    Binding binding;
    binding.scheme = generalize ? Generalize(type) : Scheme{type, {}, {}, {}, {}};
    if (generalize) elaboration_.pattern_quantified[id.index] = binding.scheme.quantified;
    binding.span = site.valid() ? site : p.span;
    env.Push(name->name, std::move(binding));
    return type;
  }
  if (std::holds_alternative<Wildcard>(p.node)) return type;
  if (const auto* tuple = std::get_if<Tuple>(&p.node)) {
    std::vector<TypeRef> elements;
    for (std::size_t i = 0; i < tuple->elements.size(); ++i) elements.push_back(MakeVar(vars_.NewTypeVar()));
    TypeRef expected = MakeTuple(elements);
    Expect(expected, type, p.span, "the tuple pattern");
    for (std::size_t i = 0; i < tuple->elements.size(); ++i)
      BindPattern(tuple->elements[i], elements[i], env, generalize);
    return type;
  }
  const auto& typed = std::get<Typed>(p.node);
  TypeRef annotated = FromAnnotation(typed.type, *scope_);
  Expect(annotated, type, p.span, "the annotation");
  BindPattern(typed.pattern, annotated, env, generalize, p.span);
  elaboration_.pattern_types[id.index] = annotated;
  return annotated;
}

void Checker::CheckDef(const syntax::Decl& decl, const syntax::Def& def, std::vector<CheckedDef>* own) {
  current_ = def.name.text;
  in_main_ = def.name.text == "main";
  facts_.clear();
  obligations_.clear();
  pending_.clear();
  late_.clear();
  runtime_checks_.clear();
  layout_instances_.clear();
  elaboration_.Clear();
  int errors_before = diagnostics_.error_count();
  errors_at_start_ = errors_before;
  if (IsBuiltin(def.name.text) || IsKernelOp(def.name.text))
    diagnostics_.Emit(DiagnosticKind::ShadowsBuiltin, def.name.span, def.name.text);

  AnnotationScope scope;
  scope.new_sizes = VarKind::Rigid;
  scope_ = &scope;
  vars_.Enter();
  std::size_t mark = env_.Mark();
  for (const syntax::Name& binder : def.size_binders) {
    SizeVarId v = vars_.NewSizeVar(VarKind::Rigid, binder.text, binder.span);
    env_.Push(binder.text, Binding{Binding::Kind::Size, {}, v, binder.span});
  }
  std::vector<TypeRef> params;
  for (const syntax::Param& param : def.params) {
    params.push_back(BindPattern(param.pattern, MakeVar(vars_.NewTypeVar()), env_, false));
  }
  TypeRef result = def.result ? FromAnnotation(def.result, scope) : nullptr;
  for (const syntax::WhereItem& item : def.where) {
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
  scope.new_sizes = in_main_ ? VarKind::Runtime : VarKind::Flexible;
  TypeRef body = Infer(def.body);
  if (result) Expect(result, body, ast_->Get(def.body).span, "the body of `" + def.name.text + "`");
  // An ambiguous broadcast after another error in this definition is usually its echo (an unknown
  // name has an unknown rank): report it only when it is the first problem.
  RetryBroadcasts(/*report=*/diagnostics_.error_count() == errors_before);
  for (auto& check : std::exchange(late_, {})) check();
  TypeRef type = MakeFunction(params, result ? result : body);

  CheckedDef checked;
  checked.name = def.name.text;
  checked.span = decl.span;
  Discharge(checked, !def.params.empty());
  vars_.Leave();
  env_.Reset(mark);
  scope_ = nullptr;

  if (def.params.empty()) DefaultElems(type);
  checked.scheme = def.params.empty() ? Scheme{vars_.Resolve(type), {}, {}, {}, {}} : Generalize(type);
  checked.scheme.where = facts_;
  if (!def.where.empty()) checked.scheme.where_span = def.where.front().span.To(def.where.back().span);
  checked.runtime_checks = std::move(runtime_checks_);
  checked.ok = checked.ok && diagnostics_.error_count() == errors_before;
  Elaborate(&def, checked);
  if (!CheckSizesKnown(module_.defs().back())) {
    checked.ok = false;
    module_.defs().back().ok = false;
    module_.defs().back().body = core::ExprId();
  }
  InferLayouts(checked);
  Binding binding;
  binding.scheme = checked.scheme;
  Define(def.name.text, def.name.span, std::move(binding));
  if (own) own->push_back(std::move(checked));
}

TypeRef Checker::FromAnnotationInKernel(syntax::TypeId id, AnnotationScope& scope) {
  // Memory spaces and layouts are the kernel tier's; the array-tier type ignores them.
  bool saved = in_kernel_;
  in_kernel_ = true;
  TypeRef type = FromAnnotation(id, scope);
  in_kernel_ = saved;
  return type;
}

void Checker::Import(const syntax::Decl& decl, const syntax::Import& import) {
  std::filesystem::path path;
  if (import.is_path) {
    path = std::filesystem::path(std::string(sources_.Get(decl.span.file).name())).parent_path() / import.target;
  } else {
    path = std::filesystem::path(options_.stdlib_dir) / (import.target + ".weft");
  }
  std::string key = path.lexically_normal().string();
  if (imported_.count(key)) return;
  if (importing_.count(key)) {
    diagnostics_.Emit(DiagnosticKind::CannotImport, decl.span, import.target, "it imports this file back (a cycle)");
    return;
  }
  std::string reason;
  std::optional<FileId> file = sources_.Load(key, reason);
  if (!file) {
    diagnostics_.Emit(DiagnosticKind::CannotImport, decl.span, import.target,
                      import.is_path ? "`" + key + "`: " + reason : "there is no module `" + import.target + "`");
    return;
  }
  importing_.insert(key);
  syntax::Ast ast = syntax::Parse(sources_, *file, diagnostics_);
  // The importer's state is saved around the imported file.
  const syntax::Ast* saved_ast = ast_;
  auto saved_below = std::move(defined_below_);
  CheckFile(ast, nullptr);
  ast_ = saved_ast;
  defined_below_ = std::move(saved_below);
  importing_.erase(key);
  imported_.insert(key);
}

void Checker::CheckFile(const syntax::Ast& ast, std::vector<CheckedDef>* own) {
  ast_ = &ast;
  defined_below_.clear();
  std::map<std::string, Span> seen;
  for (const syntax::Decl& decl : ast.decls()) {
    const syntax::Name* name = std::holds_alternative<syntax::Def>(decl.node) ? &std::get<syntax::Def>(decl.node).name
                               : std::holds_alternative<syntax::KernelDecl>(decl.node)
                                   ? &std::get<syntax::KernelDecl>(decl.node).name
                                   : nullptr;
    if (name) defined_below_.emplace(name->text, name->span);
  }
  for (const syntax::Decl& decl : ast.decls()) {
    if (const auto* import = std::get_if<syntax::Import>(&decl.node)) {
      Import(decl, *import);
      ast_ = &ast;
      continue;
    }
    const syntax::Name& name = std::holds_alternative<syntax::Def>(decl.node)
                                   ? std::get<syntax::Def>(decl.node).name
                                   : std::get<syntax::KernelDecl>(decl.node).name;
    bool duplicate = false;
    if (auto it = seen.find(name.text); it != seen.end()) {
      Diagnostic& error = diagnostics_.Emit(DiagnosticKind::DuplicateDefinition, name.span, name.text);
      error.notes.push_back(MakeNote(DiagnosticKind::NoteFirstDefined, it->second, name.text));
      duplicate = true;
    }
    seen.emplace(name.text, name.span);
    defined_below_.erase(name.text);
    std::size_t before = own ? own->size() : 0;
    if (const auto* def = std::get_if<syntax::Def>(&decl.node)) {
      CheckDef(decl, *def, own);
    } else {
      CheckKernel(decl, std::get<syntax::KernelDecl>(decl.node), own);
    }
    if (duplicate && own && own->size() > before) own->back().ok = false;
  }
}

namespace {
void VerifyInDebugBuilds([[maybe_unused]] const core::Module& module, [[maybe_unused]] const VarStore& vars) {
#ifndef NDEBUG
  // Debug builds verify the elaborated IR (core/ir.h, Verify): a violation is a compiler bug.
  std::vector<std::string> violations = core::Verify(module, vars);
  if (!violations.empty()) WEFT_INTERNAL_ERROR("the core IR does not verify: " + violations.front());
#endif
}
}  // namespace

CheckResult Check(SourceManager& sources, const syntax::Ast& ast, Diagnostics& diagnostics,
                  const CheckOptions& options) {
  // Inference recurses as deep as the program nests (up to the parser's limit): run it on the
  // deep stack, as the parser does.
  CheckResult result;
  RunWithDeepStack([&] {
    Checker checker(sources, diagnostics, options);
    std::vector<CheckedDef> defs;
    checker.CheckFile(ast, &defs);
    result = CheckResult{std::move(checker.vars()), std::move(defs), std::move(checker.module_)};
    VerifyInDebugBuilds(result.module, result.vars);
  });
  return result;
}

Session::Session(SourceManager& sources, Diagnostics& diagnostics, const CheckOptions& options) {
  RunWithDeepStack([&] { checker_ = std::make_unique<Checker>(sources, diagnostics, options); });
}

Session::~Session() = default;

std::vector<CheckedDef> Session::Add(const syntax::Ast& ast) {
  std::vector<CheckedDef> defs;
  RunWithDeepStack([&] {
    // A definition with errors leaves the scope as it was: it does not hide an earlier good one.
    std::map<std::string, Binding> before = checker_->globals_;
    checker_->CheckFile(ast, &defs);
    for (const CheckedDef& def : defs) {
      if (def.ok) continue;
      if (auto it = before.find(def.name); it != before.end()) {
        checker_->globals_[def.name] = it->second;
      } else {
        checker_->globals_.erase(def.name);
      }
    }
    VerifyInDebugBuilds(checker_->module_, checker_->vars());
  });
  return defs;
}

const core::Module& Session::module() const {
  return checker_->module_;
}
const VarStore& Session::vars() const {
  return checker_->vars_;
}

std::string Session::Signature(const CheckedDef& def, bool layouts) const {
  return check::Signature(checker_->vars_, def, layouts);
}

std::string Signature(const CheckResult& result, const CheckedDef& def) {
  return Signature(result.vars, def);
}

std::string Signature(const VarStore& vars, const CheckedDef& def, bool layouts) {
  // The classes, then the `where` conditions, after one `where` (docs/types.md, Reading `weft check`).
  TypePrinter printer(vars, layouts);
  std::string text = def.name + " : " + printer.PrintWithClasses(def.scheme.type);
  bool where = text.find(" where ") != std::string::npos;
  for (const DimFact& fact : def.scheme.where) {
    text += std::string(where ? ", " : " where ") + printer.Print(vars.Resolve(fact.lhs)) + " " +
            std::string(Spelling(fact.relation)) + " " + printer.Print(vars.Resolve(fact.rhs));
    where = true;
  }
  // A kernel's layout predicates (Scheme::admits), with the layouts: `'l1 row-major at 16 bytes`.
  if (layouts)
    for (const LayoutPredicate& p : def.scheme.admits) {
      text += std::string(where ? ", " : " where ") + printer.Print(VarLayout(p.var)) + " row-major at " +
              std::to_string(p.offset_bytes) + " bytes" + (p.tma ? " or a TMA map on sm_90a" : "");
      where = true;
    }
  return text;
}

}  // namespace weft::check

namespace weft::check {

std::string LayoutLines(const SourceManager& sources, const VarStore& vars, const CheckedDef& def) {
  // Named as in the signature: the printer sees the type first.
  TypePrinter printer(vars, true);
  printer.Print(def.scheme.type);
  auto where = [&](Span span) {
    const SourceBuffer& buffer = sources.Get(span.file);
    LineCol at = buffer.Locate(span.begin);
    // A view in another file (a callee imported from it) is named with its file's name.
    std::string file;
    if (span.file != def.span.file) file = std::filesystem::path(std::string(buffer.name())).filename().string() + ":";
    std::string text(sources.Text(span));
    if (auto newline = text.find('\n'); newline != std::string::npos) text = text.substr(0, newline) + " ...";
    return file + std::to_string(at.line) + ":" + std::to_string(at.column) + " `" + text + "`";
  };
  // How a kernel call reads the argument (core::KernelRead): the verdict, and why.
  auto read_text = [&](const KernelRead& read) {
    const std::string kernel = "`" + read.kernel + "`";
    auto fact_text = [&](const DimFact& f) {
      return printer.Print(vars.Resolve(f.lhs)) + " " + std::string(Spelling(f.relation)) + " " +
             printer.Print(vars.Resolve(f.rhs));
    };
    switch (read.verdict) {
      case KernelRead::Verdict::kInPlace:
        return kernel + " reads it in place";
      case KernelRead::Verdict::kCopy: {
        // On sm_90a, a TMA map of its layout (KernelRead::tma).
        std::string map =
            kernel + " reads it in place through a " + std::to_string(read.tma_dims) + "-D TMA map on sm_90a";
        if (read.tma == KernelRead::Verdict::kInPlace) return map + ", elsewhere a copy: " + read.why;
        if (read.tma == KernelRead::Verdict::kRunTime) {
          for (std::size_t i = 0; i < read.tma_when.size(); ++i)
            map += (i ? " and `" : " where `") + fact_text(read.tma_when[i]) + "`";
          return map + " at run time, elsewhere a copy: " + read.why;
        }
        std::string text = kernel + " reads a copy: " + read.why;
        if (read.tma == KernelRead::Verdict::kCopy && read.tma_why != read.why)
          text += "; and no TMA map on sm_90a: " + read.tma_why;
        for (std::size_t i = 0; i < read.core.size(); ++i)
          text += (i == 0 ? " under `where` " : " and ") + where(read.core[i]);
        return text;
      }
      case KernelRead::Verdict::kRunTime: {
        std::string text = kernel + " reads it in place where ";
        for (std::size_t i = 0; i < read.when.size(); ++i) text += (i ? " and `" : "`") + fact_text(read.when[i]) + "`";
        return text + " at run time, else a copy";
      }
      case KernelRead::Verdict::kDeferred:
        break;
    }
    return kernel + "'s `" + read.predicate.param + "` reads it in place where it is row-major at " +
           std::to_string(read.predicate.offset_bytes) + " bytes" +
           (read.predicate.tma ? " or a TMA map on sm_90a covers it" : "") + " (each call decides)";
  };
  std::string out;
  auto line = [&](const LayoutFact& fact) {
    out += "  view " + (fact.call.valid() ? where(fact.call) + " -> " : "") + where(fact.span) + " @ " +
           printer.Print(fact.layout) + (fact.read ? ": " + read_text(*fact.read) : "") + "\n";
  };
  for (const LayoutFact& fact : def.scheme.layouts) line(fact);
  for (const LayoutFact& fact : def.views) line(fact);
  return out + TileLayoutLines(sources, def.tiles);
}

}  // namespace weft::check
