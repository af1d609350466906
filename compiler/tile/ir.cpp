// The tile IR's small helpers: spellings and the operands of each op.
#include "tile/ir.h"
#include "base/overloaded.h"

namespace weft::tile {

std::string_view Spelling(Space space) {
  switch (space) {
    case Space::Scalar:
      return "scalar";
    case Space::Global:
      return "@global";
    case Space::Shared:
      return "@shared";
    case Space::Reg:
      return "@reg";
  }
  return "?";
}

std::vector<ValueId> Operands(const Op& op) {
  return std::visit(Overloaded{
                        [](const op::BlockIdx&) { return std::vector<ValueId>{}; },
                        [](const op::Constant&) { return std::vector<ValueId>{}; },
                        [](const op::Size&) { return std::vector<ValueId>{}; },
                        [](const op::ScalarOp& o) { return o.args; },
                        [](const op::View& o) {
                          std::vector<ValueId> out{o.tensor};
                          out.insert(out.end(), o.coords.begin(), o.coords.end());
                          return out;
                        },
                        [](const op::ToShared& o) { return std::vector<ValueId>{o.src}; },
                        [](const op::ToRegs& o) { return std::vector<ValueId>{o.src}; },
                        [](const op::Transpose& o) { return std::vector<ValueId>{o.src}; },
                        [](const op::Store& o) {
                          return std::vector<ValueId>{o.dst, o.src};
                        },
                        [](const op::Mma& o) {
                          return std::vector<ValueId>{o.a, o.b, o.acc};
                        },
                        [](const op::Fill& o) { return std::vector<ValueId>{o.value}; },
                        [](const op::Iota&) { return std::vector<ValueId>{}; },
                        [](const op::Map& o) { return o.args; },
                        [](const op::Reduce& o) { return std::vector<ValueId>{o.src}; },
                        [](const op::Expand& o) { return std::vector<ValueId>{o.src}; },
                        [](const op::Cast& o) { return std::vector<ValueId>{o.src}; },
                        [](const op::Convert& o) { return std::vector<ValueId>{o.src}; },
                        [](const op::Loop& o) {
                          std::vector<ValueId> out{o.bound};
                          out.insert(out.end(), o.init.begin(), o.init.end());
                          out.insert(out.end(), o.yields.begin(), o.yields.end());
                          return out;
                        },
                    },
                    op.node);
}

}  // namespace weft::tile
