// The rules of the kernel tier's layout types; see tile_layout.h.
#include "core/tile_layout.h"

#include <algorithm>

namespace weft::core {
namespace {

// A tile's rows x cols, as synthesis tiles them (synth/plan.h): a rank-1 tile of n is n x 1, a
// rank-0 one 1 x 1.
struct Extent {
  std::int64_t rows = 1, cols = 1;
};
Extent ExtentOf(const std::vector<std::int64_t>& shape) {
  if (shape.empty()) return {1, 1};
  if (shape.size() == 1) return {shape[0], 1};
  return {shape[shape.size() - 2], shape.back()};
}

}  // namespace

std::optional<SliceKeep> ElementwiseOperand(const std::vector<std::int64_t>& operand,
                                            const std::vector<std::int64_t>& result) {
  Extent ea = ExtentOf(operand), er = ExtentOf(result);
  if (operand.size() == result.size() && ea.rows == er.rows && ea.cols == er.cols) return std::nullopt;
  // A rank-1 operand of a rank-2 result is a row broadcast down the columns' axis (language.md's
  // broadcasting aligns the last axes).
  if (operand.size() == 1 && result.size() == 2)
    return ea.rows == er.cols && ea.rows > 1 ? SliceKeep::Cols : SliceKeep::None;
  if (ea.rows == er.rows && ea.cols == 1) return SliceKeep::Rows;
  if (ea.cols == er.cols && ea.rows == 1) return SliceKeep::Cols;
  return SliceKeep::None;
}

SliceKeep ReductionKeep(std::size_t source_rank) {
  return source_rank >= 2 ? SliceKeep::Rows : SliceKeep::None;
}

void ElementwiseConstraints(std::vector<TileConstraint>& out, const std::string& fn, const TileTerm& result,
                            const std::vector<TileTerm>& operands, Span span) {
  std::string who = "the elementwise `" + fn + "`";
  for (std::size_t i = 0; i < operands.size(); ++i) {
    const TileTerm& operand = operands[i];
    // One constraint per tile: `r + r` relates `r` to the result once.
    auto same = [&](const TileTerm& t) { return t.var == operand.var; };
    if (std::any_of(operands.begin(), operands.begin() + static_cast<std::ptrdiff_t>(i), same)) continue;
    TileConstraint c;
    c.span = span;
    c.who = who;
    c.a = operand.var;
    c.b = result.var;
    if (std::optional<SliceKeep> keep = ElementwiseOperand(operand.shape, result.shape)) {
      c.relation = TileRelation::SliceOf;
      c.keep = *keep;
      c.broadcast = true;
    }
    out.push_back(std::move(c));
  }
}

TileConstraint CastConstraint(std::int32_t src, std::int32_t result, Span span) {
  TileConstraint c;
  c.a = src;
  c.b = result;
  c.span = span;
  c.who = "`cast`";
  return c;
}

std::string_view Spelling(SliceKeep keep) {
  switch (keep) {
    case SliceKeep::Rows:
      return "keeping rows";
    case SliceKeep::Cols:
      return "keeping columns";
    case SliceKeep::None:
      return "keeping one element";
  }
  return "?";
}

std::string_view Spelling(MmaRole role) {
  switch (role) {
    case MmaRole::A:
      return "A";
    case MmaRole::B:
      return "B";
    case MmaRole::Accumulator:
      return "accumulator";
  }
  return "?";
}

}  // namespace weft::core
