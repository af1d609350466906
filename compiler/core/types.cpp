#include "core/types.h"

#include <algorithm>
#include <map>

#include "core/array_layout.h"
#include "diagnostics/diagnostic.h"

namespace weft::core {

std::string_view Spelling(ElemClass cls) {
  switch (cls) {
    case ElemClass::None:
      return "";
    case ElemClass::Num:
      return "num";
    case ElemClass::Float:
      return "float";
    case ElemClass::Int:
      return "int";
  }
  return "";
}

std::optional<ElemClass> JoinClasses(ElemClass a, ElemClass b) {
  if (a == b || b == ElemClass::None) return a;
  if (a == ElemClass::None) return b;
  if (a == ElemClass::Num) return b;
  if (b == ElemClass::Num) return a;
  return std::nullopt;  // int and float
}

Dtype DefaultDtype(ElemClass cls) {
  return cls == ElemClass::Num || cls == ElemClass::Int ? Dtype::I32 : Dtype::F32;
}

bool InClass(Dtype dtype, ElemClass cls) {
  switch (cls) {
    case ElemClass::None:
      return true;
    case ElemClass::Num:
      return dtype != Dtype::Bool;
    case ElemClass::Float:
      return dtype == Dtype::F8E4M3 || dtype == Dtype::F8E5M2 || dtype == Dtype::F16 || dtype == Dtype::BF16 ||
             dtype == Dtype::F32 || dtype == Dtype::F64;
    case ElemClass::Int:
      return dtype != Dtype::Bool && !InClass(dtype, ElemClass::Float);
  }
  return false;
}

TypeRef MakeVar(TypeVarId var) {
  return std::make_shared<const Type>(Type{VarType{var}});
}
TypeRef MakeTensor(Elem elem, Shape shape, LayoutRef layout) {
  return std::make_shared<const Type>(Type{TensorType{std::move(elem), std::move(shape), std::move(layout)}});
}
TypeRef MakeScalar(Dtype dtype) {
  return MakeTensor(Elem{dtype}, Shape{});
}
TypeRef MakeFunction(TypeRef param, TypeRef result) {
  return std::make_shared<const Type>(Type{FunctionType{std::move(param), std::move(result)}});
}
TypeRef MakeFunction(const std::vector<TypeRef>& params, TypeRef result) {
  for (auto it = params.rbegin(); it != params.rend(); ++it) result = MakeFunction(*it, result);
  return result;
}
TypeRef MakeTuple(std::vector<TypeRef> elements) {
  return std::make_shared<const Type>(Type{TupleType{std::move(elements)}});
}
TypeRef MakeString() {
  return std::make_shared<const Type>(Type{StringType{}});
}
TypeRef MakeUnit() {
  return MakeTuple({});
}

TypeVarId VarStore::NewTypeVar(std::string name) {
  types_.push_back({nullptr, level_, std::move(name)});
  return TypeVarId(static_cast<std::uint32_t>(types_.size() - 1));
}
ElemVarId VarStore::NewElemVar(ElemClass cls, std::string name) {
  elems_.push_back({std::nullopt, cls, level_, std::move(name)});
  return ElemVarId(static_cast<std::uint32_t>(elems_.size() - 1));
}
ShapeVarId VarStore::NewShapeVar(VarKind kind, std::string name, Span origin) {
  shapes_.push_back({std::nullopt, kind, level_, std::move(name), origin});
  return ShapeVarId(static_cast<std::uint32_t>(shapes_.size() - 1));
}
SizeVarId VarStore::NewSizeVar(VarKind kind, std::string name, Span origin) {
  sizes_.push_back({std::nullopt, kind, level_, std::move(name), origin});
  return SizeVarId(static_cast<std::uint32_t>(sizes_.size() - 1));
}

LayoutVarId VarStore::NewLayoutVar(std::string name) {
  layouts_.push_back({std::move(name)});
  return LayoutVarId(static_cast<std::uint32_t>(layouts_.size() - 1));
}

namespace {

// Whether resolving would change DIM (some size variable it mentions is bound); allocates nothing,
// so that resolving what is already resolved, the common case, costs no copies.
bool HasBound(const VarStore& vars, const Dim& dim) {
  for (const Term& term : dim.terms())
    for (const Factor& factor : term.monomial) {
      bool bound = factor.atom.kind == AtomKind::kVar ? vars.info(factor.atom.var).binding.has_value()
                                                      : HasBound(vars, *factor.atom.operand);
      if (bound) return true;
    }
  return false;
}

bool HasBound(const VarStore& vars, const Shape& shape) {
  if (shape.spread && vars.info(*shape.spread).binding) return true;
  for (const Dim& d : shape.before)
    if (HasBound(vars, d)) return true;
  for (const Dim& d : shape.after)
    if (HasBound(vars, d)) return true;
  return false;
}

}  // namespace

LayoutRef VarStore::Resolve(const LayoutRef& layout) const {
  // Only dims have bindings to apply: most layouts (null, variables) have none.
  if (!layout || std::holds_alternative<Layout::NotStrided>(layout->node) ||
      std::holds_alternative<Layout::Var>(layout->node))
    return layout;
  if (const auto* view = std::get_if<StridedView>(&layout->node)) {
    bool any = HasBound(*this, view->offset);
    for (const StridedAxis& axis : view->axes)
      for (const StridedMode& mode : axis.modes)
        any = any || HasBound(*this, mode.extent) || HasBound(*this, mode.stride);
    if (!any) return layout;
  }
  LayoutMap map;
  map.dim = [this](const Dim& d) { return Resolve(d); };
  map.shape = [this](const Shape& s) { return Resolve(s); };
  return MapLayout(layout, map);
}

Elem VarStore::Resolve(const Elem& elem) const {
  Elem current = elem;
  while (current.is_var() && info(current.var()).binding) current = *info(current.var()).binding;
  return current;
}

Dim VarStore::Resolve(const Dim& dim) const {
  if (!HasBound(*this, dim)) return dim;
  std::map<SizeVarId, Dim> subst;
  for (SizeVarId var : dim.Vars()) {
    if (info(var).binding) subst.emplace(var, Resolve(*info(var).binding));
  }
  if (subst.empty()) return dim;
  core::Result<Dim> result = core::Substitute(dim, subst);
  if (!result) WEFT_INTERNAL_ERROR("substituting a bound size variable: " + result.error().message);
  return *result;
}

Shape VarStore::Resolve(const Shape& shape) const {
  if (!HasBound(*this, shape)) return shape;
  Shape out;
  for (const Dim& d : shape.before) out.before.push_back(Resolve(d));
  std::optional<ShapeVarId> spread = shape.spread;
  std::vector<Dim> tail;
  for (const Dim& d : shape.after) tail.push_back(Resolve(d));
  // Splice bound shape variables in, until an unbound one (or none) remains.
  while (spread && info(*spread).binding) {
    const Shape& bound = *info(*spread).binding;
    for (const Dim& d : bound.before) out.before.push_back(Resolve(d));
    std::vector<Dim> bound_after;
    for (const Dim& d : bound.after) bound_after.push_back(Resolve(d));
    tail.insert(tail.begin(), bound_after.begin(), bound_after.end());
    spread = bound.spread;
  }
  if (spread) {
    out.spread = spread;
    out.after = std::move(tail);
  } else {
    out.before.insert(out.before.end(), tail.begin(), tail.end());
  }
  return out;
}

TypeRef ResultAfter(const VarStore& vars, const TypeRef& type, std::size_t arity) {
  TypeRef t = vars.Resolve(type);
  for (std::size_t i = 0; i < arity; ++i) {
    const auto* f = std::get_if<FunctionType>(&t->node);
    if (!f) break;
    t = vars.Resolve(f->result);
  }
  return t;
}

TypeRef VarStore::Resolve(const TypeRef& type) const {
  return std::visit(
      [&](const auto& node) -> TypeRef {
        using T = std::decay_t<decltype(node)>;
        if constexpr (std::is_same_v<T, VarType>) {
          const TypeVarInfo& var = info(node.var);
          return var.binding ? Resolve(var.binding) : type;
        } else if constexpr (std::is_same_v<T, TensorType>) {
          // A type with nothing bound in it is its own resolution: no copy.
          bool elem_bound = node.elem.is_var() && info(node.elem.var()).binding;
          LayoutRef layout = Resolve(node.layout);
          if (!elem_bound && layout == node.layout && !HasBound(*this, node.shape)) return type;
          return MakeTensor(Resolve(node.elem), Resolve(node.shape), std::move(layout));
        } else if constexpr (std::is_same_v<T, FunctionType>) {
          TypeRef param = Resolve(node.param), result = Resolve(node.result);
          if (param == node.param && result == node.result) return type;
          return MakeFunction(std::move(param), std::move(result));
        } else if constexpr (std::is_same_v<T, TupleType>) {
          std::vector<TypeRef> elements;
          bool same = true;
          for (const TypeRef& e : node.elements) {
            elements.push_back(Resolve(e));
            same = same && elements.back() == e;
          }
          if (same) return type;
          return MakeTuple(std::move(elements));
        } else {
          return type;
        }
      },
      type->node);
}

namespace {
template <typename Id>
void AddOnce(std::vector<Id>& list, Id id) {
  if (std::find(list.begin(), list.end(), id) == list.end()) list.push_back(id);
}
}  // namespace

void CollectFreeVars(const VarStore& vars, const Dim& dim, FreeVars& out) {
  for (SizeVarId v : vars.Resolve(dim).Vars()) AddOnce(out.sizes, v);
}

void CollectFreeVars(const VarStore& vars, const Shape& shape, FreeVars& out) {
  Shape resolved = vars.Resolve(shape);
  for (const Dim& d : resolved.before) CollectFreeVars(vars, d, out);
  if (resolved.spread) AddOnce(out.shapes, *resolved.spread);
  for (const Dim& d : resolved.after) CollectFreeVars(vars, d, out);
}

void CollectFreeVars(const VarStore& vars, const TypeRef& type, FreeVars& out) {
  TypeRef resolved = vars.Resolve(type);
  std::visit(
      [&](const auto& node) {
        using T = std::decay_t<decltype(node)>;
        if constexpr (std::is_same_v<T, VarType>) {
          AddOnce(out.types, node.var);
        } else if constexpr (std::is_same_v<T, TensorType>) {
          if (node.elem.is_var()) AddOnce(out.elems, node.elem.var());
          CollectFreeVars(vars, node.shape, out);
          CollectLayoutVars(node.layout, out.layouts);
        } else if constexpr (std::is_same_v<T, FunctionType>) {
          CollectFreeVars(vars, node.param, out);
          CollectFreeVars(vars, node.result, out);
        } else if constexpr (std::is_same_v<T, TupleType>) {
          for (const TypeRef& e : node.elements) CollectFreeVars(vars, e, out);
        }
      },
      resolved->node);
}

}  // namespace weft::core
