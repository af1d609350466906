#include "core/type_printer.h"

#include "core/array_layout.h"

namespace weft::core {

std::string TypePrinter::Unique(const std::string& wanted, const std::string& fresh_prefix, int& fresh_counter) {
  if (!wanted.empty() && taken_.insert(wanted).second) return wanted;
  std::string base = wanted.empty() ? fresh_prefix : wanted;
  while (true) {
    std::string candidate = base + std::to_string(++fresh_counter);
    if (taken_.insert(candidate).second) return candidate;
  }
}

// 'a .. 'z, then 'a1 ...; type and element-type variables share the sequence.
std::string TypePrinter::NextLetter() {
  while (true) {  // skipping a layout variable's name ('l1) already given
    int n = letters_++;
    std::string name = "'" + std::string(1, static_cast<char>('a' + n % 26)) + (n >= 26 ? std::to_string(n / 26) : "");
    if (taken_.insert(name).second) return name;
  }
}

std::string TypePrinter::Name(LayoutVarId var) {
  auto [it, inserted] = layout_names_.emplace(var.index, "");
  if (inserted) it->second = Unique("", "'l", fresh_layouts_);
  return it->second;
}

std::string TypePrinter::Print(const LayoutRef& layout) {
  return core::ToString(
      vars_.Resolve(layout), [this](SizeVarId var) { return Name(var); },
      [this](LayoutVarId var) { return Name(var); });
}

std::string TypePrinter::Name(TypeVarId var) {
  auto [it, inserted] = type_names_.emplace(var.index, "");
  if (inserted) it->second = NextLetter();
  return it->second;
}

std::string TypePrinter::Name(ElemVarId var) {
  auto [it, inserted] = elem_names_.emplace(var.index, "");
  if (inserted) it->second = NextLetter();
  return it->second;
}

std::string TypePrinter::Name(ShapeVarId var) {
  auto [it, inserted] = shape_names_.emplace(var.index, "");
  if (inserted) it->second = Unique(vars_.info(var).name, "s", fresh_shapes_);
  return it->second;
}

std::string TypePrinter::Name(SizeVarId var) {
  auto [it, inserted] = size_names_.emplace(var.index, "");
  if (inserted) it->second = Unique(vars_.info(var).name, "n", fresh_sizes_);
  return it->second;
}

std::string TypePrinter::Print(const Dim& dim) {
  Dim resolved = vars_.Resolve(dim);
  return core::ToString(resolved, [this](SizeVarId var) { return Name(var); });
}

std::string TypePrinter::Print(const Elem& elem) {
  Elem resolved = vars_.Resolve(elem);
  return resolved.is_var() ? Name(resolved.var()) : std::string(Spelling(resolved.dtype()));
}

std::string TypePrinter::Print(const Shape& shape) {
  Shape resolved = vars_.Resolve(shape);
  std::string out = "[";
  bool first = true;
  auto add = [&](const std::string& item) {
    out += (first ? "" : ", ") + item;
    first = false;
  };
  for (const Dim& d : resolved.before) add(Print(d));
  if (resolved.spread) add(".." + Name(*resolved.spread));
  for (const Dim& d : resolved.after) add(Print(d));
  return out + "]";
}

std::string TypePrinter::TypeText(const TypeRef& type, bool parenthesize_function) {
  TypeRef resolved = vars_.Resolve(type);
  return std::visit(
      [&](const auto& node) -> std::string {
        using T = std::decay_t<decltype(node)>;
        if constexpr (std::is_same_v<T, VarType>) {
          return Name(node.var);
        } else if constexpr (std::is_same_v<T, TensorType>) {
          std::string elem = Print(node.elem);
          bool scalar = node.shape.before.empty() && !node.shape.spread;
          std::string layout;
          if (layouts_) {  // null is `row`
            layout = Print(node.layout);
            if (scalar && layout == "row") layout.clear();
            if (!layout.empty()) layout = " @ " + layout;
          }
          // A scalar with a dtype prints as `f32`; with a variable as `'a[]`, since `'a` alone is a type variable.
          if (scalar && !node.elem.is_var()) return elem + layout;
          return elem + Print(node.shape) + layout;
        } else if constexpr (std::is_same_v<T, FunctionType>) {
          // Named in order of appearance: the parameter before the result (`+` would not say which first).
          std::string param = TypeText(node.param, true);
          std::string text = param + " -> " + TypeText(node.result, false);
          return parenthesize_function ? "(" + text + ")" : text;
        } else if constexpr (std::is_same_v<T, TupleType>) {
          std::string out = "(";
          for (std::size_t i = 0; i < node.elements.size(); ++i) {
            out += (i ? ", " : "") + TypeText(node.elements[i], false);
          }
          return out + ")";
        } else {
          return "string";
        }
      },
      resolved->node);
}

std::string TypePrinter::Print(const TypeRef& type) {
  return TypeText(type, false);
}

std::string TypePrinter::PrintWithClasses(const TypeRef& type) {
  std::string text = Print(type);
  FreeVars free;
  CollectFreeVars(vars_, type, free);
  std::string classes;
  for (ElemVarId var : free.elems) {
    ElemClass cls = vars_.info(var).cls;
    if (cls == ElemClass::None) continue;
    classes += (classes.empty() ? " where " : ", ") + Name(var) + " : " + std::string(Spelling(cls));
  }
  return text + classes;
}

}  // namespace weft::core
