// Prints types in language.md's notation for `weft check` and for messages:
//   f32[n] -> f32[n] -> f32          'a[..s, n] -> 'a[..s] where 'a : num
// Type and element-type variables are named 'a, 'b, ... in order of appearance; size and shape
// variables keep the names the program gave them (fresh ones are n1, n2, ... and s1, s2, ...), with
// a number added when two different variables would print alike. One TypePrinter names the
// variables of everything it prints consistently, so a message can show two types side by side.
// Layouts (core/array_layout.h) are printed only when asked, after the shape: `f32[n, m] @ 'l1`,
// `f32[m, n] @ transpose 'l1`, `f32[4, 3] @ (4, 3):(1, 4)`; a scalar's only when it is not `row`.
#pragma once

#include <map>
#include <set>
#include <string>

#include "core/types.h"

namespace weft::core {

class TypePrinter {
 public:
  explicit TypePrinter(const VarStore& vars, bool layouts = false) : vars_(vars), layouts_(layouts) {}

  std::string Print(const TypeRef& type);
  // The type followed by the classes of its element-type variables: `... where 'a : num`.
  std::string PrintWithClasses(const TypeRef& type);
  std::string Print(const Shape& shape);
  std::string Print(const Dim& dim);
  std::string Print(const Elem& elem);
  std::string Print(const LayoutRef& layout);

 private:
  std::string TypeText(const TypeRef& type, bool parenthesize_function);
  std::string NextLetter();
  std::string Name(TypeVarId var);
  std::string Name(ElemVarId var);
  std::string Name(ShapeVarId var);
  std::string Name(SizeVarId var);
  std::string Name(LayoutVarId var);
  std::string Unique(const std::string& wanted, const std::string& fresh_prefix, int& fresh_counter);

  const VarStore& vars_;
  bool layouts_;
  std::map<std::uint32_t, std::string> type_names_, elem_names_, shape_names_, size_names_, layout_names_;
  std::set<std::string> taken_;
  int letters_ = 0;
  int fresh_sizes_ = 0;
  int fresh_shapes_ = 0;
  int fresh_layouts_ = 0;
};

}  // namespace weft::core
