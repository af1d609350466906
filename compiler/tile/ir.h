// The tile IR: a kernel's body after checking, in the form layout synthesis works on. Where the core
// IR is an expression tree with array types, the tile IR is a list of operations in SSA form over
// values that each have a memory space, an element type and a shape:
//   - Scalar values are the same in every thread: block indices, the pipeline counter, sizes, and
//     i64/bool/float arithmetic on them (`kk * 64`, a scalar parameter such as a softmax scale);
//   - Global values are a kernel's tensor parameters (symbolic extents) and tile views of them
//     (`tile a [128, 64] (i, kk)`: constant extents, a position given by scalars);
//   - Shared and Reg values are tiles with constant extents; each has a layout variable (its
//     ValueId) that synthesis (compiler/synth) solves, unless the program pinned a layout. The
//     checker's constraints between them (core/tile_layout.h) come with the kernel (`layouts`).
// Control flow is structured: a kernel is one block; a `pipeline` (or `loop`) op owns a nested
// block and carries values around it. `if` in kernels is only on scalars and lowers to `Map`
// (`select`) on tiles; the lowering refuses the rest with a diagnostic.
//
// Produced from a checked kernel's core IR by tile/lower.cpp; printed by `weft check --emit=tile`
// (tile/printer.cpp); checked by tile/verify.cpp. Synthesis (synth/) reads it and returns a Plan
// indexed by the ids below; the simulator and codegen read both.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "base/dtype.h"
#include "base/source.h"
#include "base/typed_id.h"
#include "core/dim.h"
#include "core/tile_layout.h"
#include "core/types.h"
#include "layout/expr.h"

namespace weft::tile {

using ValueId = TypedId<struct TileValueTag>;
using OpId = TypedId<struct TileOpTag>;

enum class Space : std::uint8_t { Scalar, Global, Shared, Reg };
std::string_view Spelling(Space space);  // "scalar", "@global", "@shared", "@reg"

// A layout the program wrote on a tile (`f32[128, 128] @reg <layout>` in an ascription or a
// parameter's type): its value, which the checker evaluated (core::WrittenLayout) and synthesis must
// honour, or why it has none (synthesis reports that as E0602, SynthBadPin).
struct Pin {
  std::string text;  // as written, for the printer and for messages
  Span span;         // the ascribed type
  layout::Result<layout::Value> value;
};

struct Value {
  std::string name;  // the source name when a `let` or a parameter binds it; empty otherwise
  Span span;         // the expression (or parameter) that produced it
  Dtype dtype = Dtype::F32;
  Space space = Space::Scalar;
  // Global: the tensor's extents (symbolic for a parameter, constant for a view); Shared and Reg:
  // constants; Scalar: empty.
  std::vector<core::Dim> shape;
  std::optional<Pin> pin;
  OpId def;  // the op that defines it; invalid for parameters and a pipeline's counter/carried values
  // The checker's layout variable of this tile (an index into core::TileLayouts::vars, printed
  // 'L1 for 0), if the checker gave it one: `weft explain` names each solved tile by it.
  std::int32_t layout_var = core::kNoTile;
};

namespace op {
struct BlockIdx {
  int axis = 0;
};  // -> Scalar i64: `block_idx` of a grid of rank 1..3 (a tuple pattern takes it apart)
struct Constant {
  std::variant<std::int64_t, double, bool> value;
};  // -> Scalar of the result's dtype
struct Size {
  core::Dim dim;
};  // -> Scalar i64: a size used as a value
struct ScalarOp {
  std::string fn;  // a core built-in name: + - * / % == != < <= > >= && || negate, exp, sqrt, ...
  std::vector<ValueId> args;
};  // Scalar -> Scalar
// `tile x [t0, .., tr-1] (c0, .., cq-1)` with q = rank(x) >= r: the first q - r coordinates pick one
// index of each leading axis of x (those axes are dropped); the last r are tile coordinates, so the
// view starts at element c * t along each tiled axis. -> Global with constant extents `shape`.
struct View {
  ValueId tensor;  // a Global parameter
  std::vector<std::int64_t> shape;
  std::vector<ValueId> coords;  // Scalars, q of them
};
struct ToShared {
  ValueId src;
};  // `shared v`: Global view -> Shared (cp.async or TMA, chosen)
struct ToRegs {
  ValueId src;
};  // `regs v`: Shared -> Reg (ldmatrix or vector loads; for a wgmma operand, read in place)
// `transpose s`: a view of a rank-2 shared tile with its axes swapped; the same shared buffer, no
// data moves (its layout is the parent's with the two modes swapped). Register tiles are refused.
struct Transpose {
  ValueId src;
};  // Shared [m, n] -> Shared [n, m]
struct Store {
  ValueId dst;  // a Global view of an `out` parameter
  ValueId src;  // Reg (or Shared)
};              // no result
struct Mma {
  ValueId a;    // Reg (or Shared, for wgmma): M x K
  ValueId b;    // K x N
  ValueId acc;  // Reg f32: M x N
};              // -> Reg f32 M x N
struct Fill {
  ValueId value;  // a Scalar
  std::vector<std::int64_t> shape;
};  // `zeros [..]`, `ones [..]`, `full [..] v` -> Reg
struct Iota {
  std::int64_t n = 0;
};  // `iota [n]` -> Reg i64[n]
struct Map {
  std::string fn;             // a core built-in: + - * / maximum minimum select exp log == < ... negate abs
  std::vector<ValueId> args;  // Reg tiles and Scalars, broadcast by language.md's rule
};                            // -> Reg
struct Reduce {
  std::string fn;  // sum, max, min: along the last axis
  ValueId src;
};  // Reg [.., n] -> Reg [..]
struct Expand {
  ValueId src;
};  // Reg [..] -> Reg [.., 1]
struct Cast {
  Dtype dtype;
  ValueId src;
};  // Reg -> Reg, or Scalar -> Scalar (`cast f32 kk`)
struct Convert {
  ValueId src;
};  // Reg -> Reg with its own layout: the only place a layout may change
// `pipeline i < n with acc = init do body` (pipelined = true) or `loop` (false). The body block
// reads `counter` and `carried`, and ends by yielding one value per carried value; the op's
// results are the carried values after the last iteration.
struct Loop {
  ValueId counter;  // Scalar i64
  ValueId bound;    // Scalar i64
  std::vector<ValueId> carried;
  std::vector<ValueId> init;
  std::vector<OpId> body;
  std::vector<ValueId> yields;
  bool pipelined = true;
};
}  // namespace op

using OpNode = std::variant<op::BlockIdx, op::Constant, op::Size, op::ScalarOp, op::View, op::ToShared, op::ToRegs,
                            op::Transpose, op::Store, op::Mma, op::Fill, op::Iota, op::Map, op::Reduce, op::Expand,
                            op::Cast, op::Convert, op::Loop>;

struct Op {
  Span span;
  OpNode node;
  std::vector<ValueId> results;  // none for Store; one per carried value for Loop; else one
};

// A tensor parameter read in place through a strided view of a larger tensor (core/strided.h)
// instead of as a dense, row-major one: the kernel reads it only through TMA maps of one dim per
// mode of each axis. `inner[a]` holds the extents of axis a's modes after its outermost (constants,
// outermost first; empty: one mode). The launch gives the view's extents, strides and offset
// (runtime.h's weft_program_view; codegen/device.h's InPlaceMapDims orders them).
struct InPlace {
  std::vector<std::vector<std::int64_t>> inner;  // one entry per axis
  // An `out` parameter stored through the layout (graph::StoredOut): its modes, numbered across the
  // axes (outermost first within each), from the outermost in memory to the innermost; the layout
  // is dense in that order, so its strides follow from the extents. Empty for a tensor read.
  std::vector<int> order;
  friend bool operator==(const InPlace&, const InPlace&) = default;
};

struct Param {
  std::string name;
  ValueId value;  // Global for tensors, Scalar for scalar parameters
  bool out = false;
  std::optional<InPlace>
      in_place;  // a tensor read (or, `out`, stored) through a view (the caller decides; graph/layout.h)
};

struct Kernel {
  std::string name;
  Span span;
  std::vector<Param> params;         // in source order, `out` ones included
  std::vector<core::DimFact> where;  // the kernel's `where` facts
  std::vector<core::Dim> grid;       // one to three extents, over the parameters' sizes
  std::int64_t threads = 0;          // the block size the program asked for (a constant)
  std::vector<OpId> body;
  // The names of the size variables the shapes, grid and facts mention (`m`, `k`), for printing.
  std::map<core::SizeVarId, std::string> size_names;

  std::vector<Value> values;
  std::vector<Op> ops;
  // The constraints between the tiles' layouts, as the checker recorded them between their layout
  // variables (check/tile_layouts.cpp), here over values: a and b are ValueId indices. In the
  // op order: a loop's before its body's.
  std::vector<core::TileConstraint> layouts;

  ValueId Add(Value v) {
    values.push_back(std::move(v));
    return ValueId(static_cast<std::uint32_t>(values.size() - 1));
  }
  OpId Add(Op o) {
    ops.push_back(std::move(o));
    return OpId(static_cast<std::uint32_t>(ops.size() - 1));
  }
  const Value& Get(ValueId id) const { return values[id.index]; }
  Value& Get(ValueId id) { return values[id.index]; }
  const Op& Get(OpId id) const { return ops[id.index]; }
};

// The values an op reads, in order: a Loop's bound, its inits and its yields (not its body's ops').
std::vector<ValueId> Operands(const Op& op);

// The kernel in SSA form (`weft check --emit=tile`; docs/tile-ir.md describes the format).
std::string Print(const Kernel& kernel);

// Checks the IR's invariants: every value defined before it is used (a loop's counter and carried
// values inside its body only), each op's operands in the spaces it takes, shapes consistent (mma's
// M, K, N; Map's broadcasting; Reduce drops the last axis; a Loop's yields match its carried
// values; View's rank rules). Returns the violations, empty when it holds. Lowering runs it in debug
// builds; a violation is a compiler bug.
std::vector<std::string> Verify(const Kernel& kernel);

}  // namespace weft::tile
