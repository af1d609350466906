// The layout constraints the checker records (core/tile_layout.h, check/tile_layouts.cpp) as they
// reach synthesis (tile::Kernel::layouts), on every kernel of the stdlib, the examples, the GPU test
// programs and the lit tests: each relates the values its relation says (Equal: register tiles of
// the same rows x cols; SliceOf: a register tile and one whose rows or columns it keeps; MmaOperand: an
// operand of an `mma` in its role; Copy and Transpose: the op that makes the tile reads the other),
// and every register and shared tile is in one.
#include <catch2/catch.hpp>

#include "kernel_files.h"

namespace weft::synth {
namespace {

using tile::Space;
using tile::ValueId;

std::int64_t Extent(const tile::Value& v, std::size_t from_end) {
  if (v.shape.size() <= from_end) return 1;
  return v.shape[v.shape.size() - 1 - from_end].AsConstant().value_or(-1);
}
// rows x cols as synthesis tiles them: a rank-1 tile of n is n x 1, a rank-0 one 1 x 1.
std::pair<std::int64_t, std::int64_t> RowsCols(const tile::Value& v) {
  if (v.shape.empty()) return {1, 1};
  if (v.shape.size() == 1) return {Extent(v, 0), 1};
  return {Extent(v, 1), Extent(v, 0)};
}

const tile::OpNode* DefOf(const tile::Kernel& k, ValueId v) {
  const tile::Value& value = k.Get(v);
  return value.def.valid() ? &k.Get(value.def).node : nullptr;
}

void CheckConstraint(const tile::Kernel& k, const core::TileConstraint& c) {
  using core::TileRelation;
  REQUIRE(c.a >= 0);
  REQUIRE(static_cast<std::size_t>(c.a) < k.values.size());
  ValueId a(static_cast<std::uint32_t>(c.a)), b(static_cast<std::uint32_t>(c.b));
  bool has_b = c.b != core::kNoTile;
  if (has_b) REQUIRE(static_cast<std::size_t>(c.b) < k.values.size());
  CHECK(!c.who.empty());
  CHECK(c.span.valid());
  switch (c.relation) {
    case TileRelation::Equal:
      REQUIRE(has_b);
      CHECK(k.Get(a).space == Space::Reg);
      CHECK(k.Get(b).space == Space::Reg);
      CHECK(RowsCols(k.Get(a)) == RowsCols(k.Get(b)));  // `expand` relates [n] and [n, 1]
      break;
    case TileRelation::SliceOf: {
      REQUIRE(has_b);
      CHECK(k.Get(a).space == Space::Reg);
      CHECK(k.Get(b).space == Space::Reg);
      auto [cr, cc] = RowsCols(k.Get(a));
      auto [pr, pc] = RowsCols(k.Get(b));
      if (c.keep == core::SliceKeep::Rows) CHECK((cr == pr && cc == 1));
      if (c.keep == core::SliceKeep::Cols) CHECK(((cc == pc && cr == 1) || (k.Get(a).shape.size() == 1 && cr == pc)));
      if (c.keep == core::SliceKeep::None) CHECK(cr * cc == 1);
      break;
    }
    case TileRelation::MmaOperand: {
      bool found = false;
      for (const tile::Op& op : k.ops) {
        const auto* mma = std::get_if<tile::op::Mma>(&op.node);
        if (!mma) continue;
        ValueId operand = c.role == core::MmaRole::A ? mma->a : c.role == core::MmaRole::B ? mma->b : mma->acc;
        found = found || (operand == a && k.Get(mma->a).dtype == c.dtype);
      }
      CHECK(found);
      break;
    }
    case TileRelation::Copy: {
      const tile::OpNode* def = DefOf(k, a);
      switch (c.copy) {
        case core::CopyKind::ToShared:
          CHECK((def && std::holds_alternative<tile::op::ToShared>(*def)));
          break;
        case core::CopyKind::ToRegs:
          REQUIRE((def && std::holds_alternative<tile::op::ToRegs>(*def)));
          CHECK(std::get<tile::op::ToRegs>(*def).src == b);
          break;
        case core::CopyKind::Convert:
          REQUIRE((def && std::holds_alternative<tile::op::Convert>(*def)));
          CHECK(std::get<tile::op::Convert>(*def).src == b);
          break;
        case core::CopyKind::Store: {
          bool found = false;
          for (const tile::Op& op : k.ops) {
            const auto* store = std::get_if<tile::op::Store>(&op.node);
            found = found || (store && store->src == a);
          }
          CHECK(found);
          break;
        }
      }
      break;
    }
    case TileRelation::Transpose: {
      const tile::OpNode* def = DefOf(k, a);
      REQUIRE((def && std::holds_alternative<tile::op::Transpose>(*def)));
      CHECK(std::get<tile::op::Transpose>(*def).src == b);
      break;
    }
    case TileRelation::Pinned:
      CHECK(k.Get(a).pin.has_value());
      break;
  }
}

TEST_CASE("The checker's layout constraints relate the tiles their relations say, on every kernel", "[synth]") {
  int kernels = 0, constraints = 0;
  for (const std::filesystem::path& path : KernelFiles()) {
    for (const tile::Kernel& kernel : Kernels(path)) {
      INFO(path.string() << ": " << kernel.name);
      ++kernels;
      std::vector<bool> related(kernel.values.size());
      for (const core::TileConstraint& c : kernel.layouts) {
        CheckConstraint(kernel, c);
        related[static_cast<std::size_t>(c.a)] = true;
        if (c.b != core::kNoTile) related[static_cast<std::size_t>(c.b)] = true;
        ++constraints;
      }
      for (std::size_t v = 0; v < kernel.values.size(); ++v) {
        Space space = kernel.values[v].space;
        INFO("value %" << v);
        if (space == Space::Reg || space == Space::Shared) CHECK(related[v]);
      }
    }
  }
  CHECK(kernels > 20);
  CHECK(constraints > 200);
}

}  // namespace
}  // namespace weft::synth
