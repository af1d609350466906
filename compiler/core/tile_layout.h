// A kernel's tile layout types (docs/layouts.md, "Kernel tiles"): each register or shared tile of a
// kernel has a layout variable ('L1, 'L2, ...), and the checker (check/tile_layouts.cpp) records
// how the variables are related. The relations are target-independent: which CuTe layout each
// variable takes depends on the target, and synthesis (compiler/synth) solves for it per target,
// unifying along Equal and SliceOf from the anchors MmaOperand and Pinned give.
//
// Each rule that says which relation an operation makes is stated once: those of elementwise ops,
// `cast` and reductions here (the functions at the end), which the checker applies to a kernel's
// body and graph/epilogue.cpp to the ops it adds to a stdlib gemm's tile IR; the others (`expand`,
// `mma`, loops, copies, views, pins) in check/tile_layouts.cpp, the one place that meets them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "base/source.h"
#include "base/typed_id.h"

namespace weft::core {

using ExprId = TypedId<struct CoreExprTag>;  // as core/ir.h, which includes this header

// Which axis of a rank-2 parent a slice keeps: a [rows, 1] or rank-1 [rows] tile keeps the rows, a
// [1, cols] one (or a rank-1 [cols] broadcast along the rows) the columns, a [1, 1] one neither.
enum class SliceKeep : std::uint8_t { Rows, Cols, None };

enum class TileRelation : std::uint8_t {
  Equal,       // a's layout is b's: elementwise ops of equal shape, `cast`, `expand`, mma's accumulator
               // and result, a loop's initial, carried, yielded and final values
  SliceOf,     // a's layout is the slice of b's keeping `keep`: a reduction, a broadcast operand
  MmaOperand,  // a is operand `role` of an `mma` of the `dtype` family (its atom's layouts anchor it)
  Copy,        // a is written from b by a copy of kind `copy` (b unset: the global tile at `other`)
  Transpose,   // a is a view of shared tile b with the axes swapped (no data moves)
  Pinned,      // a has the layout the program wrote, `text`
};

enum class MmaRole : std::uint8_t { A, B, Accumulator };

enum class CopyKind : std::uint8_t {
  ToShared,  // `shared`: a global tile to shared memory (a = the shared tile, b unset)
  ToRegs,    // `regs`: a shared tile to registers
  Store,     // `store`: a tile to a global tile (a = the stored tile, b unset)
  Convert,   // `convert`: registers to registers in a layout of their own
};

// The id of a kernel's tile layout variable: an index into TileLayouts::vars (in the tile IR, a
// tile::ValueId's index).
inline constexpr std::int32_t kNoTile = -1;

struct TileConstraint {
  TileRelation relation = TileRelation::Equal;
  std::int32_t a = kNoTile;
  std::int32_t b = kNoTile;  // Equal, SliceOf, Copy, Transpose
  SliceKeep keep = SliceKeep::None;
  MmaRole role = MmaRole::A;
  Dtype dtype = Dtype::F16;  // MmaOperand: the family's operand dtype (f16, bf16)
  CopyKind copy = CopyKind::ToRegs;
  // SliceOf from an elementwise op: a is an operand broadcast to the shape of the result b
  // (diagnostics add "(broadcasting `x`)" to `who`).
  bool broadcast = false;
  Span span;         // the operation that makes it
  std::string who;   // how diagnostics name that operation: "the elementwise `exp`", "`cast`"
  Span other;        // Copy with b unset: the global tile's expression
  std::string text;  // Pinned: the layout as written
};

// A kernel's layout variable: the tile it is the layout of.
struct TileLayoutVar {
  Span span;            // the expression that makes the tile (for a loop's carried value: the loop)
  std::string name;     // the name a `let` (or the loop's state) binds it to, if any
  bool shared = false;  // a shared tile; else a register tile
  Dtype dtype = Dtype::F32;
  std::vector<std::int64_t> shape;  // constant extents
  // Where tile::Lower finds the value: leaf `leaf` of what expression `expr` makes (a loop's
  // state may be a tuple), or, with `carried`, of the state its body reads.
  ExprId expr;
  std::uint32_t leaf = 0;
  bool carried = false;
  bool loop = false;  // a loop's carried value or result (its span is the loop's)
};

struct TileLayouts {
  std::vector<TileLayoutVar> vars;
  std::vector<TileConstraint> constraints;  // in program order, a loop's before its body's
};

// ---- The rules ----

// The relation of an elementwise op's operand tile to its result (each of constant extents): Equal
// (nullopt) for equal shapes, else the slice it is broadcast from.
std::optional<SliceKeep> ElementwiseOperand(const std::vector<std::int64_t>& operand,
                                            const std::vector<std::int64_t>& result);
// What the reductions (`sum`, `max`, `min` along the last axis) keep of a source of this rank.
SliceKeep ReductionKeep(std::size_t source_rank);

// A tile as the rules see it: its variable and its constant extents.
struct TileTerm {
  std::int32_t var = kNoTile;
  std::vector<std::int64_t> shape;
};
// An elementwise op `fn` on `operands` (its register-tile operands, in order) giving `result`.
void ElementwiseConstraints(std::vector<TileConstraint>& out, const std::string& fn, const TileTerm& result,
                            const std::vector<TileTerm>& operands, Span span);
TileConstraint CastConstraint(std::int32_t src, std::int32_t result, Span span);

// "keeping rows", for printing.
std::string_view Spelling(SliceKeep keep);
std::string_view Spelling(MmaRole role);  // "A", "B", "accumulator"

}  // namespace weft::core
