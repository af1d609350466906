// The dataflow graph of a program's `main` (docs/graph.md), and the plan that fusion makes of it.
//
// Build evaluates `main` the way the interpreter does, but at compile time: definitions are
// inlined with their element types fixed per call, sizes stay symbolic (dims over `main`'s own
// size variables, which `load` binds at run time), and every operation becomes a node. Scalar
// functions given to `map` and `map2` are inlined as elementwise nodes over the whole tensor (a
// scalar function applied to a tensor by broadcasting means the same); the combiner of `reduce`
// and `scan` stays a small body of nodes over two rank-0 parameters.
//
// Nodes are in program order (a node comes after its operands), and effects (load, random, save,
// print, a kernel call, the edges of a `time` interval) keep their order in `effects`: a valid
// launch order is the order of the nodes. Fuse groups the nodes into kernels (Plan) and says which
// values live in device buffers; the printer shows both (`weft build --emit=graph`).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "base/dtype.h"
#include "base/result.h"
#include "base/source.h"
#include "base/typed_id.h"
#include "core/dim.h"
#include "core/ir.h"
#include "core/strided.h"
#include "core/types.h"
#include "diagnostics/diagnostic.h"

namespace weft::graph {

using NodeId = TypedId<struct GraphNodeTag>;
using core::Dim;

enum class Kind : std::uint8_t {
  // Values the host makes or holds.
  Constant,  // a literal scalar: `bits` as the dtype holds it
  Size,      // a size used as an i64 value: `size`
  String,    // a string literal (`text`), or `arg i` (`args[0]` the index) when `text` is empty
  Load,      // `load path`: args[0] the path (a String node)
  Random,    // `random [..] seed`: args[0] the seed
  // Effects.
  Save,       // `save path x`: args = {path, x}
  Print,      // `print x`: args = {x}
  TimeBegin,  // the start of a `time` interval
  TimeEnd,    // its end: args are the values computed inside (the interval waits for them)
  Kernel,     // a call of a kernel (the file's or the stdlib's): `text` its name, args its inputs;
              // its results are KernelOut nodes
  KernelOut,  // output `index` of the Kernel node args[0]
  // The array tier.
  Map,      // an elementwise built-in (`fn`: + - * / % == != < <= > >= && || maximum minimum select
            // negate abs exp log sqrt rsqrt tanh sigmoid sin cos); operands broadcast to `shape`
  Cast,     // `cast dtype x`
  Fill,     // `zeros`, `ones` (fn), or `full` (args[0] the value)
  Iota,     // `iota [n]`
  Reduce,   // along the last axis: fn sum, max, min, mean, argmax, or `reduce` with a combiner
  Scan,     // `scan` with a combiner, along the last axis
  MatMul,   // `@` (fn "@") or `matmul_f32`
  View,     // transpose, permute (`permutation`), reshape, expand, or indexing (`index`): no data moves
  Concat,   // along the last axis
  Gather,   // rows of args[0] by the indices args[1]
  Dequant,  // `dequant [group] q scale`
  Param,    // parameter `index` of a combiner body (rank 0)
};
std::string_view Spelling(Kind kind);

// One item of an indexing view (core's IndexItem with the dims in `main`'s terms): At drops the
// axis at the index args[at] (an i64 node), Slice keeps [lo, hi), All keeps the axis.
struct IndexItem {
  enum class What : std::uint8_t { At, Slice, All };
  What what = What::All;
  std::size_t at = 0;  // the operand (position in args) that holds the index
  Dim lo, hi;
};

// A combiner of `reduce` and `scan`: its body is nodes of the same graph (marked `in_body`) over two
// Param nodes, the accumulator and the element.
struct Combiner {
  NodeId acc, element, result;
};

struct Node {
  Kind kind = Kind::Constant;
  std::string fn;  // the built-in's name (Map, Fill, Reduce, MatMul, View), a kernel's name (Kernel)
  Dtype dtype = Dtype::F32;
  std::vector<Dim> shape;  // empty for rank 0; unused for strings and effects
  std::vector<NodeId> args;
  Span span;             // the expression it comes from
  bool in_body = false;  // part of a combiner's body, not of the program's dataflow
  // Kind-specific.
  std::uint64_t bits = 0;            // Constant
  Dim size;                          // Size
  std::string text;                  // String, Kernel (the path of a literal / the kernel's name)
  std::vector<int> permutation;      // View permute
  std::vector<IndexItem> index;      // View index
  std::optional<Combiner> combiner;  // Reduce/Scan with a function
  std::size_t output = 0;            // KernelOut: which output; Param: which parameter
  std::int64_t group = 0;            // Dequant: the group size
  const core::Def* def = nullptr;    // Kernel: the kernel's definition
  // View: its layout over the data it views, as the checker's type of its expression has it
  // (core/array_layout.h) with the inlined calls' sizes and argument layouts substituted. Unset
  // (LayoutOf then applies the view's steps, by the checker's function) for a view the graph makes
  // itself (a broadcast's read), one whose type's layout a call does not make known (a function
  // passed as a value), and one the checker types not strided for all calls (`x[i]`, `i` a
  // parameter) that an inlined call may make strided (`pick x 2`).
  std::optional<core::ViewResult> layout;
};

// A run-time check the program needs (a checker obligation over sizes only known at run time), in
// `main`'s terms, at the place in the program where it must hold.
struct Check {
  core::DimFact fact;
  std::string what;
  std::size_t before = 0;  // checked before node `before` is computed
};

struct Graph {
  std::vector<Node> nodes;
  std::vector<NodeId> effects;  // effect nodes (Load, Random, Save, Print, Time*, Kernel) in order
  std::vector<Check> checks;
  std::optional<NodeId> result;  // what `main` returns, when it is a tensor
  const core::Def* main = nullptr;

  const Node& Get(NodeId id) const { return nodes[id.index]; }
  Node& Get(NodeId id) { return nodes[id.index]; }
  NodeId Add(Node node) {
    nodes.push_back(std::move(node));
    return NodeId(static_cast<std::uint32_t>(nodes.size() - 1));
  }
};

// `main`'s graph, or the diagnostics that say what in it is not compiled (E0800 for a construct
// the graph does not take yet, E0801). @pre the module checked, `main` among its definitions.
Result<Graph, std::vector<Diagnostic>> Build(const core::Module& module, const core::VarStore& vars,
                                             const core::Def& main);

// ---- Fusion ----

// What a group of nodes becomes.
enum class GroupKind : std::uint8_t {
  Host,         // made or consumed by the host: load, random, literals, sizes, save, print, time
  Elementwise,  // one kernel over the output's elements: maps, casts, fills, iota, broadcasts, views
  Rows,         // one kernel per row of [..s, n]: reductions along n with the elementwise work before
                // them and the broadcasts of their results after (softmax, layernorm, rmsnorm)
  Scan,         // `scan` along the last axis, with the elementwise work before it
  Gemm,         // the stdlib gemm kernel, with the elementwise work after the product as its epilogue
  Attention,    // the stdlib attention kernel: softmax of a scaled product, times V
  Gather,       // rows by index
  Concat,       // along the last axis
  Call,         // a kernel the program calls
};
std::string_view Spelling(GroupKind kind);

// A view a stdlib kernel reads in place, through a TMA map of its layout (graph/layout.h's
// ReadInPlace says when and how): the view, the node that owns its data, its layout over that data,
// and per axis the extents of its modes after the outermost (tile::InPlace).
// `when`: the alignments that only the run-time sizes decide (`(n * 2) % 16 == 0` for a pitch of
// n bf16 elements); when one fails there, the view is copied (by the copy group of the view, which
// the kernel's group launches then, before the stdlib kernel on the copy).
struct InPlaceRead {
  NodeId view;
  NodeId root;
  core::StridedView layout;
  std::vector<std::vector<std::int64_t>> inner;
  std::vector<core::DimFact> when;
};

// A product that stores its result `root` in the layout the view `view` of it wants (a QKV
// projection writing heads-major for attention): `layout` is root's layout over its buffer, such
// that `view` is row-major there (graph/layout.h's StoreLayout). Over the stdlib kernel's output
// [m, n] (root's leading axes flattened), per axis the extents of its modes after the outermost
// (`inner`, constants) and the modes in memory order (`order`: each mode numbered across the axes,
// outermost first within an axis; listed from the outermost in memory to the innermost).
struct StoredOut {
  NodeId view;
  NodeId root;
  core::StridedView layout;  // over root's shape
  core::StridedView flat;    // the same over [m, n]
  std::vector<std::vector<std::int64_t>> inner;
  std::vector<int> order;
};

// A view a called kernel (a `kernel` of the program) reads without a copy (graph/layout.h's
// ReadDense; docs/graph.md, "Views a called kernel reads"): the tensor that holds its data
// (`root`), seen from `offset` elements with the view's shape. Where `when` is not empty, only
// where those conditions on run-time sizes hold (the offset's alignment); elsewhere the call reads
// the view's copy, which it launches (Group::copy_for).
struct DenseRead {
  NodeId view;
  NodeId root;
  core::Dim offset;
  std::vector<core::DimFact> when;
};

struct Group {
  GroupKind kind = GroupKind::Host;
  std::vector<NodeId> nodes;    // in program order
  std::vector<NodeId> inputs;   // values computed elsewhere that the group reads
  std::vector<NodeId> outputs;  // values of the group read elsewhere: each is materialized
  std::vector<Dim> space;       // the iteration space: the output's shape (Rows: [..s, n])
  std::string kernel;           // Gemm, Attention: the stdlib kernel it calls, when one fits
  std::string why;              // why the kernel is this one, or why a stdlib kernel does not fit
  bool epilogue = false;        // Gemm: `kernel` is the generated kernel (graph/epilogue.h) of the
                                // stdlib tile with the group's elementwise work in its store
  bool causal = false;          // Attention, or `alternative`: the kernel's `causal` (nn's causal mask)
  // The first group of an attention pattern's parts whose sizes are known only at run time: the
  // stdlib attention kernel launched instead of groups this one .. alternative_last (host scalars
  // between them aside) when its `where` clause holds at run time.
  std::string alternative;
  std::size_t alternative_last = 0;
  // Gemm (a stdlib kernel or an epilogue's), Attention: operands that are views the kernel reads in
  // place through TMA maps of their layout instead of copies.
  std::vector<InPlaceRead> in_place;
  // Call: arguments that are views the kernel reads in place (decided once, here: the host reads
  // them from the plan).
  std::vector<DenseRead> dense_reads;
  // An elementwise copy of a view that group `copy_for` reads in place where the view's alignment
  // holds at run time (InPlaceRead::when, DenseRead::when): that group launches it, where the
  // alignment fails.
  std::optional<std::size_t> copy_for;
  // Gemm: the product stores its result in the layout its one reader wants (ViewChoice::stored),
  // so that the view `stored->view` over it is dense.
  std::optional<StoredOut> stored;
};

// A device buffer: the values it holds one after another, their lifetimes disjoint.
struct Buffer {
  Dtype dtype = Dtype::F32;
  std::vector<Dim> shape;
  std::vector<NodeId> holds;
};

// How the program reads a view that stdlib kernels read (docs/graph.md, "Choosing how views are
// read"): in place by every one of its readers, or through one copy that all of them read. Chosen
// for all such views at once, as one optimization (compiler/solver's IntegerProgram).
// A third way where the view's data is a product's result read by nothing else: the product stores
// it in the layout the view wants (`stored`), so that the view is dense and neither copied nor read
// through a strided map.
struct ViewChoice {
  NodeId view;
  std::vector<NodeId> readers;  // the nodes that read it as a stdlib kernel's operand
  bool copied = false;
  bool stored = false;             // its producer stores it so that it is row-major (StoredOut)
  std::string why;                 // why it cannot be read in place (then it is copied or stored), or empty
  std::string why_not_stored;      // why its producer cannot store it as it wants, or empty
  std::int64_t copy_bytes = 0;     // predicted bytes a copy moves (read and written once)
  std::int64_t map_bytes = 0;      // predicted cost of its readers' TMA maps of 3 or more dims
  std::int64_t store_bytes = 0;    // predicted extra bytes of the producer's store in that layout
  std::optional<StoredOut> store;  // the layout its producer would store (when why_not_stored is empty)
};

struct ViewChoices {
  std::vector<ViewChoice> views;
  std::string status;          // the solver's answer: "optimal", "feasible" (not proved), ...
  std::int64_t objective = 0;  // predicted bytes: copies' plus maps' plus stores'
  bool in_place = false;       // the target's kernels read views in place (sm_90a)
};

struct Plan {
  std::vector<Group> groups;           // in launch order
  std::vector<std::int64_t> group_of;  // per node: its group, -1 for a combiner's body
  std::vector<Buffer> buffers;
  std::vector<std::int64_t> buffer_of;  // per node: its buffer, -1 when it has none (a view, a
                                        // value inside a kernel, a host scalar)
  std::size_t Kernels() const;          // groups that are GPU kernels (not Host)
  // Attention patterns (their `@` node) left as products and a row kernel, and why.
  std::vector<std::pair<NodeId, std::string>> generic_attention;
  ViewChoices views;  // sm_90a: how views that stdlib kernels read are read
};

struct FuseOptions {
  // Route a product of bf16 or f16 matrices to the stdlib gemm tile: with the elementwise work
  // after it as the epilogue of a generated kernel (graph/epilogue.h) when the kernel tier spells
  // all of it, else to the stdlib kernel that computes the product alone (the work after it is a
  // kernel of its own). The host launches it when its `where` clause holds at run time and the
  // generic product kernel (with the same epilogue) otherwise.
  bool stdlib_gemm = true;
  // Route nn's attention pattern to the stdlib attention kernel (`attention_d64_bf16`,
  // `attention_d128_bf16`) when its sizes are constants its `where` clause holds for (it has no
  // fallback kernel); otherwise attention is its parts.
  bool stdlib_attention = true;
  // The stdlib kernels read operands that are views in place where their layout allows (the
  // target's kernels copy operands by TMA: sm_90a); otherwise such views are copied first.
  bool views_in_place = false;
  // Products (by node index) whose epilogue kernel the target cannot hold (the driver tried to
  // synthesize it), with the reason: they run alone on their stdlib kernel.
  std::map<std::uint32_t, std::string> plain_products;
};

// Groups the graph's nodes into kernels (docs/graph.md, "What fuses") and plans the buffers.
Plan Fuse(const Graph& graph, const FuseOptions& options = {});

// The slow paths the plan takes, each a warning at its source location (W0900: an f16, bf16 or f8
// product on the generic SIMT kernel; W0901: an attention pattern left as products and a row
// kernel), with the reason the fast kernel does not take it.
std::vector<Diagnostic> SlowPaths(const Graph& graph, const Plan& plan);

// The graph and its plan as text (`weft build --emit=graph`).
std::string Print(const Graph& graph, const Plan& plan, const core::VarStore& vars, const SourceManager& sources);
// Each value's layout, each view that stdlib kernels read and how (in place by which kernels, or a
// copy and why), and the choice's objective (`weft build --emit=layouts`, docs/graph.md).
std::string PrintLayouts(const Graph& graph, const Plan& plan, const core::VarStore& vars,
                         const SourceManager& sources);

// One line per kernel: its kind and the operations it fuses (`weft explain` of a program).
std::string Summary(const Graph& graph, const Plan& plan, const core::VarStore& vars, const SourceManager& sources);

}  // namespace weft::graph
