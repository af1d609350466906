// The array kernels' emitter (array.h), shared by the files that write it; nothing outside
// compiler/codegen/array*.cpp includes this header. ArrayEmitter writes one fused group's kernel;
// its methods live by section:
//
//   array.cpp              the entry (Emit), the kernel's parameters (Collect, DefineEntry)
//   array_ir.cpp           IR helpers (loops, branches, dims) and the dtype conversions
//   array_eval.cpp         the evaluator: any node of the group at a coordinate (Emit, Compute)
//   array_elementwise.cpp  elementwise, gather and concat kernels
//   array_rows.cpp         row kernels (reductions) and scans, one block per row
//   array_product.cpp      the generic product kernel
#pragma once

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/array.h"
#include "codegen/f8.h"

namespace weft::codegen::array_emit {

using core::Dim;
using graph::GroupKind;
using graph::Kind;
using graph::Node;
using graph::NodeId;

constexpr std::int64_t kLooseView = -2;  // fuse.cpp: a view in no group, read through by every reader
constexpr int kThreads = 256;            // elementwise, scan, gather, concat and product blocks
constexpr int kTile = 64;                // a product block's output tile is kTile x kTile
constexpr int kTileK = 16;               // ... and it steps over k by kTileK
constexpr int kUnroll = 4;               // an elementwise thread's vector units in flight
constexpr int kMaxDepth = 100000;        // Emit's recursion, on RunWithDeepStack's stack

// Why a group has no kernel: one line for the driver (E0800).
struct Unsupported {
  std::string what;
};

[[noreturn]] inline void Refuse(std::string what) {
  throw Unsupported{std::move(what)};
}

inline bool IsFloat(Dtype d) {
  return d == Dtype::F16 || d == Dtype::BF16 || d == Dtype::F32 || d == Dtype::F64 || d == Dtype::F8E4M3 ||
         d == Dtype::F8E5M2;
}
inline bool IsSigned(Dtype d) {
  return d == Dtype::I4 || d == Dtype::I8 || d == Dtype::I16 || d == Dtype::I32 || d == Dtype::I64;
}
inline int Bytes(Dtype d) {
  return (Bits(d) + 7) / 8;
}
inline bool IsF8(Dtype d) {
  return d == Dtype::F8E4M3 || d == Dtype::F8E5M2;
}
// i4 and u4 are packed two to a byte, element 2k in the low nibble of byte k (runtime/tensor.h).
inline bool IsPacked(Dtype d) {
  return d == Dtype::I4 || d == Dtype::U4;
}

inline std::string Quote(std::string_view s) {
  return "`" + std::string(s) + "`";
}

// One coordinate along an axis: `v`, or in an elementwise kernel's vector path the lanes v, v + 1,
// ..., v + W - 1 (only ever the innermost axis of the output, moved by views).
struct Coord {
  llvm::Value* v = nullptr;
  bool lanes = false;
};
using Coords = std::vector<Coord>;
// A value: one llvm value when it is the same in every lane, else one per lane.
using Val = std::vector<llvm::Value*>;

class ArrayEmitter {
 public:
  ArrayEmitter(const graph::Graph& graph, const graph::Plan& plan, std::size_t group, llvm::LLVMContext& ctx,
               llvm::Module& module)
      : g_(graph), plan_(plan), index_(group), group_(plan.groups[group]), ctx_(ctx), m_(module), b_(ctx) {}

  ArrayKernel Emit();

 private:
  using Key = std::pair<std::uint32_t, std::vector<std::pair<llvm::Value*, bool>>>;  // a node at coordinates
  using Pair = std::vector<llvm::Value*>;  // a reduction's partial: its value (and argmax's index)
  using Combiner2 = std::function<Pair(const Pair&, const Pair&)>;

  // How a row kernel holds its row in registers: `threads` threads, each `slots` units of `width`
  // consecutive elements (unit u = tid + k * threads of the row, k < slots).
  struct RowPlan {
    int threads = 0;
    std::size_t width = 1;
    std::int64_t slots = 0;
  };
  static constexpr std::int64_t kRowRegisters = 32;  // elements a thread holds per value, at most

  // A built-in reduction's identity and combination of partials.
  struct Reduction {
    Pair identity;
    Combiner2 combine;
  };

  const Node& Get(NodeId id) const { return g_.Get(id); }
  std::string Name(NodeId id) const;
  bool InGroup(NodeId id) const { return in_group_.count(id.index) != 0; }
  bool Loose(NodeId id) const { return plan_.group_of[id.index] == kLooseView; }
  bool IsTensor(NodeId id) const;
  // Whether `id` is a view that its producer stores dense (graph::Group::stored): read as a tensor
  // of its own shape, row-major, whatever group it is in.
  bool StoredView(NodeId id) const { return stored_views_.count(id.index) != 0; }
  // The element offset of coordinate `c` of `id`, a value its group stores through a layout
  // (graph::Group::stored); row-major otherwise.
  llvm::Value* OutputOffset(NodeId id, const Coords& c);

  // ---- 1. Parameters (array.cpp) ----

  void CollectDim(const Dim& d);
  void Collect(NodeId id);
  void DefineEntry();
  void Annotate();

  // ---- IR helpers (array_ir.cpp) ----

  llvm::Value* I64(std::int64_t v) { return b_.getInt64(static_cast<std::uint64_t>(v)); }
  llvm::Value* Sreg(llvm::Intrinsic::ID id);
  llvm::Value* Tid() { return Sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x); }
  void Barrier() { b_.CreateIntrinsic(b_.getVoidTy(), llvm::Intrinsic::nvvm_barrier0, {}); }
  llvm::BasicBlock* Block(const char* name) { return llvm::BasicBlock::Create(ctx_, name, f_); }
  llvm::Value* Local(llvm::Type* type, llvm::Value* init);
  llvm::Value* EmitDim(const Dim& dim);
  static Dim Product(const std::vector<Dim>& dims, std::size_t begin, std::size_t end);
  static Dim CeilDiv(const Dim& a, std::int64_t d);
  Coords Unravel(llvm::Value* e, const std::vector<Dim>& shape);
  llvm::Value* Linear(const Coords& c, const std::vector<Dim>& shape);
  void Loop(llvm::Value* start, llvm::Value* end, llvm::Value* step, const std::function<void(llvm::Value*)>& body);
  void ReturnUnless(llvm::Value* condition);
  void If(llvm::Value* condition, const std::function<void()>& then);

  // ---- Types and conversions (array_ir.cpp) ----

  llvm::Type* Storage(Dtype d);
  // How a dtype is held in memory: bool as one byte, i4/u4 as bytes of two (Load, Store).
  llvm::Type* Memory(Dtype d) { return d == Dtype::Bool || IsPacked(d) ? b_.getInt8Ty() : Storage(d); }
  llvm::Type* ComputeType(Dtype d);
  llvm::Value* ToCompute(llvm::Value* v, Dtype d);
  llvm::Value* FromCompute(llvm::Value* v, Dtype d);
  llvm::Value* Convert(llvm::Value* x, Dtype from, Dtype to);
  llvm::Value* F8Decode(llvm::Value* bits, Dtype d) { return EmitF8Decode(b_, bits, d); }
  llvm::Value* F8Encode(llvm::Value* x, Dtype d) { return EmitF8Encode(b_, x, d); }
  llvm::Value* Constant(const Node& n);

  // ---- 2. The evaluator (array_eval.cpp) ----

  Coords Broadcast(const Coords& c, const std::vector<Dim>& from, const std::vector<Dim>& to);
  std::size_t Width(const Coords& c) const;
  Coords LaneCoords(const Coords& c, std::size_t k);
  Val PerLane(const Coords& c, const std::function<llvm::Value*(const Coords&)>& one);
  static llvm::Value* LaneOf(const Val& v, std::size_t k) { return v.size() == 1 ? v[0] : v[k]; }
  Val Emit(NodeId id, const Coords& c);
  llvm::Value* EmitOne(NodeId id, const Coords& c);
  Val Compute(NodeId id, const Coords& c);
  llvm::Value* Current(NodeId id, const Coords& c, const Coords& at, const std::string& what);
  Val Load(NodeId id, const Coords& c);
  Val View(NodeId id, const Coords& c);
  Val Map(const Node& n, const Coords& c);
  llvm::Value* IntDivMod(bool mod, bool is_signed, llvm::Value* a, llvm::Value* b);
  llvm::Value* Intrinsic(llvm::Intrinsic::ID id, llvm::Value* x) { return b_.CreateUnaryIntrinsic(id, x); }
  llvm::Value* F(llvm::Type* t, double v) { return llvm::ConstantFP::get(t, v); }
  llvm::Value* Fma(llvm::Value* a, llvm::Value* c, llvm::Value* d);
  llvm::Value* Libdevice(const std::string& name, llvm::Value* x);
  llvm::Value* Apply(const std::string& fn, Dtype d, const std::vector<llvm::Value*>& x);
  llvm::Value* MaxMin(bool max, Dtype d, llvm::Value* a, llvm::Value* c);
  Val Dequant(const Node& n, const Coords& c);
  llvm::Value* Gather(const Node& n, const Coords& c);
  llvm::Value* Concat(const Node& n, const Coords& c);
  llvm::Value* Combine(const graph::Combiner& combiner, llvm::Value* acc, llvm::Value* element);
  void Store(NodeId id, llvm::Value* offset, llvm::Value* v);
  llvm::Value* PackByte(llvm::Value* low, llvm::Value* high);
  void StoreUnit(NodeId id, llvm::Value* offset, const Val& v, std::size_t width);

  // ---- 3. Kernels ----

  // array_elementwise.cpp
  void ScalarPairs(llvm::Value* count, llvm::Value* first, llvm::Value* stride);
  void ElementwiseKernel();

  // array_rows.cpp
  int RowThreads() const;
  void BeginRow();
  llvm::Value* SharedAt(llvm::Value* byte_offset);
  llvm::Value* Shuffle(llvm::Value* v, int offset);
  Pair BlockReduce(Pair mine, const Combiner2& combine, int threads);
  std::optional<RowPlan> RegisterRows() const;
  void RowKernel();
  void StoreRowValues(NodeId out);
  void RegisterRowBody(const RowPlan& p);
  void Hoist(llvm::BasicBlock* prologue, const std::set<llvm::BasicBlock*>& before);
  void GeneralRowBody(int threads);
  Reduction BuiltinOf(const Node& r, Dtype d);
  llvm::Value* FinishReduce(const Node& r, Dtype d, const Pair& all);
  llvm::Value* BuiltinReduce(const Node& r, Dtype d, int threads, llvm::Value* step,
                             const std::function<Coords(llvm::Value*)>& element);
  Pair ArgmaxCombine(Dtype d, const Pair& a, const Pair& c);
  llvm::Value* CombinerReduce(const Node& r, int threads, const std::function<Coords(llvm::Value*)>& element);
  void ScanKernel();

  // array_product.cpp
  void ProductKernel();

  const graph::Graph& g_;
  const graph::Plan& plan_;
  std::size_t index_;
  const graph::Group& group_;
  llvm::LLVMContext& ctx_;
  llvm::Module& m_;
  llvm::IRBuilder<> b_;
  ArrayKernel out_;

  std::set<std::uint32_t> in_group_, visited_;
  std::set<std::uint32_t> stored_views_;  // StoredView
  std::vector<NodeId> inputs_;
  std::set<core::SizeVarId> vars_;
  llvm::Function* f_ = nullptr;
  llvm::BasicBlock* entry_ = nullptr;
  llvm::GlobalVariable* shared_ = nullptr;
  std::map<std::uint32_t, llvm::Value*> pointers_;  // per tensor node: its buffer
  std::map<std::uint32_t, llvm::Value*> sizes_;     // per size variable: its parameter
  std::map<Key, Val> cache_;
  std::vector<llvm::Value*> params_;               // a combiner's (acc, element) while its body is emitted
  std::map<std::uint32_t, llvm::Value*> current_;  // per-row results, the scan / product element
  Coords current_coords_;                          // where the scan / product element is
  std::size_t width_ = 1;                          // lanes of the vector path (1: scalar)
  int depth_ = 0;                                  // Emit's recursion
  std::vector<Dim> aligned_;                       // dims the vector path needs multiples of width_
  llvm::Value* row_ = nullptr;
  llvm::Value* n_ = nullptr;
  llvm::Value* tid_ = nullptr;
  Coords row_coords_;
};

}  // namespace weft::codegen::array_emit
