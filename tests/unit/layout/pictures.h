// The pictures in docs/layouts.md, printed by the code they describe. pictures_test.cpp checks that
// each appears verbatim in the document; `weft_layout_pictures` prints them to paste in.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "evaluate_text.h"
#include "layout/algebra.h"
#include "layout/atoms.h"
#include "layout/tv_layout.h"

namespace weft::layout::testing {

inline std::vector<std::pair<std::string, std::string>> Pictures() {
  std::vector<std::pair<std::string, std::string>> out;
  auto layout = [](const char* text) { return *ParseLayoutText(text); };
  out.emplace_back("layout (4,(2,2)):(2,(1,8))", FormatLayoutGrid(layout("(4,(2,2)):(2,(1,8))")));
  out.emplace_back("layout (4,2):(2,1) as a table", FormatLayoutTable(layout("(4,2):(2,1)")));
  out.emplace_back("logical_divide((4,2,3):(2,1,8), 4:2)",
                   FormatLayoutGrid(*LogicalDivide(layout("(4,2,3):(2,1,8)"), Tiler(layout("4:2")))));
  out.emplace_back("blocked_product((2,5):(5,1), (3,4):(1,3))",
                   FormatLayoutGrid(*BlockedProduct(layout("(2,5):(5,1)"), layout("(3,4):(1,3)"))));
  out.emplace_back("raked_product((2,5):(5,1), (3,4):(1,3))",
                   FormatLayoutGrid(*RakedProduct(layout("(2,5):(5,1)"), layout("(3,4):(1,3)"))));
  for (const char* operand : {"A", "B", "C"}) {
    const Atom atom = *FindAtom("mma.m16n8k16.bf16");
    out.emplace_back(std::string("mma.m16n8k16.bf16 ") + operand, FormatTvGrid(atom.Operand(operand)->tv));
  }
  out.emplace_back("mma.m16n8k32.s8 B", FormatTvGrid(FindAtom("mma.m16n8k32.s8")->Operand("B")->tv));
  out.emplace_back("ldmatrix.x4 dst", FormatTvGrid(FindAtom("ldmatrix.x4")->Operand("dst")->tv));
  out.emplace_back("ldmatrix.x1.trans dst", FormatTvGrid(FindAtom("ldmatrix.x1.trans")->Operand("dst")->tv));
  out.emplace_back("wgmma.m64n8k16.bf16 C", FormatTvGrid(FindAtom("wgmma.m64n8k16.bf16")->Operand("C")->tv));
  // Swizzles on 16-byte chunks: 8 rows of 128 bytes, each cell the chunk a logical chunk lands in.
  for (int b : {1, 2, 3}) {
    Swizzle sw(b, 0, 3);
    out.emplace_back("Sw<" + std::to_string(b) + ",0,3> on (8,8):(8,1) chunks",
                     FormatLayoutGrid(Compose(sw, layout("(8,8):(8,1)"))));
  }
  return out;
}

}  // namespace weft::layout::testing
