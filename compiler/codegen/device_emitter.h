// The device emitter (device.h's EmitKernel): the class that turns a synthesized tile kernel and
// its schedule's lowering into LLVM IR, one thread's view. Internal to compiler/codegen; its
// methods are defined along device.cpp's sections: device.cpp (values, layouts, the entry),
// device_ops.cpp (the ops: copies, loads, mma.sync, elementwise, reductions), device_sm90a.cpp
// (TMA, mbarriers, wgmma), device_epilogue.cpp (stores, TMA-store epilogues), device_pipeline.cpp
// (loops, rings, staged products, warp specialization). device.cpp's header comment says how the
// generated code relates to the simulator.
#pragma once

#include <llvm/IR/DIBuilder.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <algorithm>
#include <array>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "codegen/device.h"
#include "codegen/hopper.h"
#include "codegen/math.h"
#include "codegen/nvptx.h"
#include "layout/atoms.h"
#include "schedule/lowering.h"
#include "schedule/schedule.h"

namespace weft::codegen::device_emit {

using layout::TvLayout;
using synth::InstructionKind;
using tile::OpId;
using tile::ValueId;
using RowCol = TvLayout::RowCol;

// A construct the emitter does not handle: becomes E0750 at the op.
struct Unsupported {
  Span span;
  std::string message;
};

inline int ElementBytes(Dtype d) {
  return std::max(1, Bits(d) / 8);
}

inline bool IsFloat(Dtype d) {
  return d == Dtype::F16 || d == Dtype::BF16 || d == Dtype::F32 || d == Dtype::F64;
}

// A TV layout evaluated for every (thread, value), with the inverse per thread: which value index
// holds an element.
struct FlatTv {
  std::int64_t threads = 0, values = 0, rows = 0;
  std::vector<std::int64_t> index;  // thread + threads * value -> row + rows * col
  std::vector<std::unordered_map<std::int64_t, int>> held;
  RowCol At(std::int64_t t, std::int64_t v) const {
    std::int64_t i = index[static_cast<std::size_t>(t + threads * v)];
    return {i % rows, i / rows};
  }
};

// A global tensor or a view of it: the byte address of its element (0, ..., 0) and the strides (in
// elements) of its last two axes.
struct GlobalSlot {
  llvm::Value* address = nullptr;           // i64
  std::vector<llvm::Value*> extents;        // the parameter's extents (i64), for strides
  std::vector<llvm::Value*> strides;        // row-major strides of the parameter (i64 elements)
  int view_rank = 0;                        // 0 for the parameter itself
  int param = -1;                           // index into Kernel::params of the tensor it views
  std::vector<llvm::Value*> first;          // a view's first element: its index along each axis (i64)
  const tile::InPlace* in_place = nullptr;  // the parameter is read through a view: TMA only
};

struct Slot {
  llvm::Value* scalar = nullptr;
  std::optional<GlobalSlot> global;
  llvm::Value* shared = nullptr;          // i32 byte offset of a Shared tile's buffer (this stage's)
  std::optional<ValueId> shared_view_of;  // a transposed view: the parent tile
  std::vector<llvm::Value*> regs;         // a Reg tile: one per value index
  std::optional<ValueId> shared_alias;    // a `regs` that wgmma reads from this Shared tile
};

class Emitter {
 public:
  Emitter(const tile::Kernel& kernel, const synth::Plan& plan, const schedule::Lowering& lowering,
          llvm::LLVMContext& ctx, llvm::Module& module)
      : k_(kernel), plan_(plan), lowering_(lowering), ctx_(ctx), m_(module), b_(ctx) {}

  DeviceKernel Emit();

 private:
  // --- types and helpers ---
  llvm::Type* ElemType(Dtype d);
  llvm::Value* I64(std::int64_t v) { return b_.getInt64(static_cast<std::uint64_t>(v)); }
  llvm::Value* I32(std::int64_t v) { return b_.getInt32(static_cast<std::uint32_t>(v)); }
  const tile::Value& Val(ValueId v) const { return k_.Get(v); }
  std::string Name(ValueId v) const {
    return Val(v).name.empty() ? "%" + std::to_string(v.index) : "`" + Val(v).name + "`";
  }
  [[noreturn]] void Fail(std::string message) { throw Unsupported{span_, std::move(message)}; }
  const TvLayout& Tv(ValueId v);
  const FlatTv& Flat(const TvLayout& tv);
  // The atom named `name`, kept for the whole kernel: Flat caches by address, so an atom's layouts
  // must not live in a local copy whose address a later call reuses.
  const layout::Atom& AtomNamed(const std::string& name);
  RowCol Extent(ValueId v);
  // The value index of `v` that holds, in every thread t, the element elem(t); E0750 if none or if
  // it differs between threads.
  int UniformValue(ValueId v, const std::function<RowCol(std::int64_t)>& elem, std::string_view what);
  llvm::Value* EvalLeaves(const layout::Layout& mode, llvm::Value* index);  // i32
  // The element (row, col) of TV layout `tv` for this thread and value v: i32 values.
  std::pair<llvm::Value*, llvm::Value*> TvElement(const TvLayout& tv, std::int64_t v);
  llvm::Value* SharedOffset(ValueId shared, llvm::Value* row, llvm::Value* col);  // i32 element offset
  // The byte offset in @weft_smem (i32) of value v of copy layout `copy` in shared tile `smem` at
  // `base`. Where, in every thread, value v's swizzled offset is value 0's xor X plus A (constants:
  // a k16 slice or a row further on, the swizzle's xor), it is computed from value 0's: one
  // register for all of them, an xor and an immediate offset each, instead of a register each.
  llvm::Value* CopyAddress(ValueId smem, const TvLayout& copy, std::int64_t v, llvm::Value* base, int element_bytes);
  llvm::Value* DimValue(const core::Dim& d);
  llvm::Value* Scalar(ValueId v);
  llvm::Value* Convert(llvm::Value* x, Dtype from, Dtype to);
  llvm::Value* Intrinsic(llvm::Intrinsic::ID id, llvm::ArrayRef<llvm::Value*> args,
                         llvm::ArrayRef<llvm::Type*> types = {});
  void Barrier();
  // A per-thread constant: a table in constant memory indexed by the thread, or the constant itself
  // when every thread has the same (i32).
  llvm::Value* ThreadTable(const std::vector<std::int64_t>& per_thread);
  // Byte offset (i32) in @weft_smem of `bytes` of scratch memory past the plan's tiles, for
  // reductions across warps and `convert`; the kernel's dynamic shared memory grows to hold it.
  llvm::Value* Scratch(std::int64_t bytes);
  void StoreIf(llvm::Value* condition, llvm::Value* value, llvm::Value* shared_offset);
  void EmitConvert(ValueId src, ValueId result);
  // An `out` parameter stored through a layout (tile::InPlace::order): its modes' extents and
  // strides (i64, numbered across the axes) and the parameter's address; the byte address of
  // element (row, col) of a view of it.
  struct StoredStrides {
    std::vector<llvm::Value*> extents, strides;
    llvm::Value* base = nullptr;
  };
  StoredStrides StoredLayout(const GlobalSlot& dst);
  llvm::Value* StoredAddress(const GlobalSlot& dst, const StoredStrides& layout, llvm::Value* row, llvm::Value* col,
                             int element_bytes);
  std::int64_t scratch_bytes_ = 0;

  // --- ops ---
  void EmitBlock(const std::vector<OpId>& ops);
  void EmitOp(OpId id);
  void EmitScalarOp(const tile::Op& op, const tile::op::ScalarOp& s);
  void EmitView(const tile::Op& op, const tile::op::View& v);
  // A copy issued ahead of its iteration by a pipelined loop: into ring slot `slot` (i64), and only
  // where `live` (i1) holds (otherwise the copy reads nothing and fills zeros); no wait, no barrier.
  struct Prefetch {
    llvm::Value* slot;
    llvm::Value* live;
    llvm::Value* bar = nullptr;  // TMA: the slot's mbarrier
    int part = 0, parts = 1;     // cp.async: only vectors v with v * parts / vectors == part
  };
  void EmitToShared(OpId id, const tile::Op& op, const tile::op::ToShared& s, const Prefetch* prefetch = nullptr);
  llvm::Value* SharedBase(ValueId dst, llvm::Value* slot);
  void EmitToRegs(OpId id, const tile::Op& op, const tile::op::ToRegs& r);
  void EmitLdShared(OpId id, const tile::Op& op, const tile::op::ToRegs& r);
  // ldmatrix instructions [first, last) of the `regs` op `id` (dst = regs src) into `regs`.
  void EmitLdmatrix(OpId id, ValueId dst, ValueId src, std::int64_t first, std::int64_t last,
                    std::vector<llvm::Value*>& regs);
  // Streamed mma operands (plan.h): the `regs` op and its source, loaded at the mma slice by slice.
  struct Streamed {
    OpId op;
    ValueId src;
  };
  std::map<std::uint32_t, Streamed> streamed_;
  void EmitMma(OpId id, const tile::Op& op, const tile::op::Mma& m);
  // A cp.async ring whose body is `acc = mma (regs a) (regs b) acc` with both operands streamed
  // from the ring's tiles (the gemm), software-pipelined as CUTLASS's multistage mainloop: slice
  // s + 1's fragments are loaded before slice s's products, the ring's wait and barrier come after
  // the products of slice S - 2, and slice 0 of the next iteration is loaded (from the next slot)
  // before the products of slice S - 1 and carried around the loop.
  struct MmaRing {
    OpId mma;
    std::vector<llvm::Value*> a0, b0;            // slice 0 of this iteration (phis)
    std::vector<llvm::Value*> next_a0, next_b0;  // out: slice 0 of the next iteration
    std::function<void()> barrier;               // the refill's commit, the ring's wait and bar.sync
    std::function<void(std::int64_t)> copies;    // the refill's part issued in slice s
    std::function<void(bool)> slot;              // the ring's tiles at this (false) or the next (true) slot
  };
  MmaRing* ring_mma_ = nullptr;
  void LoadSlice(ValueId v, std::vector<llvm::Value*>& regs, std::int64_t s, std::int64_t slices);

  // --- sm_90a: TMA, mbarriers, wgmma ---
  // The TMA copies' tensor maps (one per parameter, box and swizzle), found before the entry's
  // parameters are made; the entry's map parameters' generic addresses (i64).
  void FindTensorMaps();
  int TensorMapIndex(OpId id, const tile::op::ToShared& s);
  int AddTensorMap(const TensorMapSpec& spec);  // the index of an equal map, or a new one
  // The parameter `value` is or is a `tile` view of (its index in Kernel::params), or -1.
  int ParamOf(ValueId value);
  // A view's first element in its tensor's 2-D map (i32): its column, and its row with the leading
  // axes flattened.
  std::pair<llvm::Value*, llvm::Value*> MapCoordinates(const GlobalSlot& g);
  // --- TMA-store epilogues (Options::tma_store; docs/codegen.md, "Epilogues through shared memory") ---
  // A top-level `store` of a register tile after the kernel's last use of shared memory, whose
  // threads would each store under 8 bytes at a time: the threads write the tile into shared
  // memory (over the plan's tiles, dead by then) in boxes of 128 bytes a row with the 128-byte
  // swizzle, and one thread stores the boxes with TMA, whole lines where the threads' own stores
  // write half sectors. The map of the `out` tensor, or none where the store does not qualify.
  std::optional<TensorMapSpec> TmaStoreSpec(OpId id, const tile::op::Store& s);
  // Whether a tensor's last extent is a multiple of `multiple` elements for every size the kernel
  // admits: a constant, or a size variable with a `where` fact `v % m == 0`, m a multiple of it.
  bool ExtentMultiple(const core::Dim& d, std::int64_t multiple) const;
  void EmitTmaStore(OpId id, const tile::op::Store& s, int map);
  // Map dim `d`'s coordinate (i32) of an axis index `x` of a view read or stored in place: the
  // index split over the axis's modes, `(x / (extents of the modes inside d)) % (d's extent)`, the
  // outermost unbounded (`inner`: the axis's modes after its outermost, InPlaceRead::inner).
  llvm::Value* MapCoordinate(llvm::Value* x, const MapDim& d, const std::vector<std::int64_t>& inner);
  // A `store`'s vector `v` of its copy layout (plan.h): the source's registers it gathers.
  llvm::Value* StoreVector(ValueId src, const synth::OpChoice& choice, std::int64_t v);
  std::map<std::uint32_t, int> store_maps_;  // a TMA store's op -> its map
  std::vector<TensorMapSpec> map_specs_;
  std::vector<llvm::Value*> maps_;
  // mbarrier i (8 bytes each, past the plan's tiles); `Mbarrier(slot)` for a runtime index.
  int mbarriers_ = 0;
  std::int64_t MbarrierOffset() const { return (plan_.shared_bytes + 15) / 16 * 16; }
  llvm::Value* Mbarrier(llvm::Value* index);     // ptr addrspace(3)
  llvm::Value* SharedAddress(llvm::Value* ptr);  // i32 shared-window address
  void IfThread0(llvm::Value* also, const std::function<void()>& then);
  void WaitMbarrier(llvm::Value* bar, llvm::Value* parity);
  std::int64_t TmaBytes(OpId id, ValueId dst);
  // The TMA boxes of one copy into `base`, completing on `bar`, issued by thread 0 when `live`.
  void EmitTma(OpId id, const tile::op::ToShared& s, ValueId dst, llvm::Value* base, llvm::Value* bar,
               llvm::Value* live);
  std::int64_t LinearOffset(ValueId shared, RowCol e);  // elements, before the swizzle
  // `mn0` per warpgroup: the descriptor of this thread's warpgroup.
  // `dry`: only `mn_major`, no code (a staged product's shape before its loop).
  llvm::Value* Descriptor(ValueId shared, bool is_b, const std::vector<std::int64_t>& mn0, std::int64_t k0,
                          bool& mn_major, bool dry = false);
  // One wgmma op's products: per atom (64 x n of a warpgroup) the accumulator registers it
  // updates (in the result's layout) and per k-step its operands: A's descriptor or its four
  // registers, then B's descriptor.
  struct WgmmaSteps {
    int n = 0;
    bool bf16 = true, zero = false, a_shared = false;
    std::int64_t k_steps = 0;
    std::vector<std::vector<int>> c_index;  // per atom
    std::vector<bool> a_mn, b_mn;           // per step (atom-major)
    std::vector<llvm::Value*> acc;          // the accumulator's registers going in
    std::vector<llvm::Value*> operands;
  };
  // `dry`: the shape alone (no code, no registers), for a staged product before its loop.
  WgmmaSteps PrepareWgmma(OpId id, const tile::Op& op, const tile::op::Mma& m, bool dry = false);
  std::vector<llvm::Value*> IssueWgmma(const WgmmaSteps& s, std::vector<llvm::Value*> acc,
                                       const std::vector<llvm::Value*>& operands);
  // The shared tile wgmma reads for `v` where the plan keeps it in shared memory (a `regs` the
  // plan does not load), from the plan alone.
  std::optional<ValueId> WgmmaReadsShared(ValueId v) const;
  void EmitWgmma(OpId id, const tile::Op& op, const tile::op::Mma& m);
  llvm::Value* Pack(llvm::Value* lo, llvm::Value* hi);
  // A staged product (FlashAttention-3's intra-warpgroup overlap; docs/codegen.md, "Staged
  // products"): a loop's last product `acc' = mma a b (f acc)`, whose result only goes around the
  // loop, is issued in the next iteration right after that iteration's first waited product, and
  // waited for just before the body first reads `acc`: the vector work between (the softmax) runs
  // while the tensor cores do the product. Its operands go around the loop in phis; before the
  // first iteration they describe a product that adds nothing (A's registers 0, B a zeroed
  // 128-byte block read with strides 0), so every iteration issues one; the last is issued after
  // the loop.
  struct Staged {
    OpId mma;
    std::size_t carried = 0;                            // its index in the loop's carried values
    WgmmaSteps shape;                                   // dry
    std::vector<llvm::Value*> acc, operands;            // the previous iteration's (phis)
    std::vector<llvm::Value*> next_acc, next_operands;  // this iteration's, for the latch
    bool in_body = false, issued = false, pending = false;
  };
  std::optional<Staged> staged_;
  void StageFlush();  // issue the previous iteration's product
  void StageWait();   // and wait for it: the carried accumulator's registers are valid
  // A mask whose compare holds for a whole iteration's tile (attention's causal mask below the
  // diagonal): `AllTrue` builds a uniform i1 that implies every element of a bool tile is true,
  // from the bounds of the integer tiles and scalars it compares (`IntBounds`); the body of such a
  // TMA ring (warp-specialized or not) is emitted twice behind a branch at the top of each
  // iteration (nothing in flight there), once with the mask folded to true (`folded_`). Body values
  // are computed afresh (`Fresh`).
  std::optional<std::pair<llvm::Value*, llvm::Value*>> IntBounds(ValueId v, const std::set<std::uint32_t>& body,
                                                                 int depth = 0);
  llvm::Value* AllTrue(ValueId v, const std::set<std::uint32_t>& body, int depth = 0);
  llvm::Value* Fresh(ValueId v, const std::set<std::uint32_t>& body, int depth = 0);
  std::set<std::uint32_t> folded_;  // bool tiles known all true in this copy of the body
  // A staged product's first issue reads a zeroed 128-byte block at the start of shared memory; the
  // kernel's tiles, mbarriers and scratch follow `front_bytes_` (1024: the tiles' alignment) after
  // it, so a wgmma that reads the block (nominally a whole k-step of B) stays inside the allocation.
  std::int64_t front_bytes_ = 0;
  llvm::Constant* smem_base_ = nullptr;  // @weft_smem itself
  // The wgmma ops of a loop whose accumulator only goes around the loop (`acc = mma a b acc`,
  // yielded and read by nothing else: schedule::DeferredProducts) wait for the previous
  // iteration's products only (wait_group 1), and the loop waits for all after it.
  std::set<std::uint32_t> deferred_wgmma_;
  std::vector<schedule::Protocol> protocols_;  // DeviceKernel::protocols
  void EmitStore(OpId id, const tile::op::Store& s);
  void EmitLoop(OpId id, const tile::Op& op, const tile::op::Loop& loop);
  // What EmitLoop's steps share about one loop (device_pipeline.cpp).
  struct LoopEmission {
    LoopEmission(const tile::Op& o, const tile::op::Loop& l, const schedule::Ring& r) : op(o), loop(l), ring(r) {}
    const tile::Op& op;
    const tile::op::Loop& loop;
    const schedule::Ring& ring;  // the schedule's (empty: the loop runs plainly)
    llvm::Value* bound = nullptr;
    std::set<std::uint32_t> copy_ops;    // the ring's copy slice
    bool consumer = false;               // the consumers of a warp-specialized loop
    MmaRing mma_ring;                    // sm_80's operand ring, where ring.mma
    std::set<std::uint32_t> ring_tiles;  // the ring's shared tiles
    std::int64_t ring_slices = 0;
    llvm::BasicBlock* pre = nullptr;
    llvm::BasicBlock* head = nullptr;
    llvm::BasicBlock* exit = nullptr;
    llvm::PHINode* counter = nullptr;
    std::vector<std::vector<llvm::PHINode*>> phis;  // per carried value
    std::vector<llvm::PHINode*> staged_phis;
    std::vector<std::pair<std::size_t, llvm::PHINode*>> ring_phis_a, ring_phis_b;
    llvm::Value* ring_base = nullptr;  // a persistent kernel's ring iterations before this block's
    llvm::Value* global = nullptr;     // the ring's iteration
  };
  void IssueCopies(LoopEmission& l, llvm::Value* iteration, int part = 0, int parts = 1, bool commit = true);
  void SetRingSlot(LoopEmission& l, llvm::Value* slot);
  void StartLoop(LoopEmission& l);
  void OpenLoop(LoopEmission& l);
  void EmitTmaIteration(LoopEmission& l);
  void EmitMmaRingIteration(LoopEmission& l);
  void EmitCpAsyncIteration(LoopEmission& l);
  void CloseLoop(LoopEmission& l);

  // --- warp specialization (sm_90a; docs/codegen.md, "Warp specialization") ---
  // A kernel whose body has one pipelined loop of TMA copies, at the top level and with no loop in
  // it, gets a producer warpgroup past its threads: one of its threads computes what the copies
  // read and issues them, waiting on empty[slot] (one arrival per consumer warp) and arming
  // full[slot]; the kernel's threads (the consumers) wait on full[slot], run the body and arrive on
  // empty[slot], syncing among themselves with bar.sync 1 (never the whole block). With two or more
  // consumer warpgroups, setmaxnreg moves registers from the producer to them.
  // The roles (schedule::WarpRoles: the loop, the prelude, the ring's depth, registers, ping-pong,
  // the staged product, persistence) come from the schedule.
  using Specialized = schedule::WarpRoles;
  // A persistent kernel's loop over the grid's blocks, linearized (x fastest), from the launched
  // block's index with the launched grid's stride: `body` once a block of the kernel's grid, with
  // block_idx that block's and the ring's iterations counted on from the previous blocks'.
  void EachTile(const std::function<void()>& body);
  // A consumer warp is done with the ring's slot of iteration `done` (i64): lane 0 arrives on its
  // empty mbarrier, where `live` (or always).
  void Release(int stages, llvm::Value* done, llvm::Value* live);
  // The kernel's body; twice when a pipeline's body reads a bool parameter (EmitBody).
  void EmitBody();
  void EmitSpecialized();
  void EmitProducer(const Specialized& s);
  void EmitProducerLoop(const Specialized& s);
  const Specialized* specialized_ = nullptr;  // lowering_.roles
  llvm::Value* leader_ = nullptr;             // the thread IfThread0 runs on: tid == 0, or this one (the producer)
  bool turns_ = false;                        // inside a ping-pong loop's body: products take turns
  bool consumers_only_ = false;               // Barrier() syncs the kernel's threads alone (bar.sync 1, threads)

  void EmitMap(const tile::op::Map& m, ValueId result);
  void EmitReduce(const tile::op::Reduce& r, ValueId result);
  llvm::Value* Elementwise(const std::string& fn, Dtype d, const std::vector<llvm::Value*>& x);
  std::vector<llvm::Value*> SameLayoutRegs(ValueId src, ValueId dst, std::string_view what);

  const tile::Kernel& k_;
  const synth::Plan& plan_;
  const schedule::Lowering& lowering_;  // every decision about the loops (schedule/lowering.h)
  llvm::LLVMContext& ctx_;
  llvm::Module& m_;
  llvm::IRBuilder<> b_;
  llvm::Function* fn_ = nullptr;
  llvm::Value* tid_ = nullptr;   // i32
  llvm::Value* smem_ = nullptr;  // ptr addrspace(3)
  std::vector<Slot> slots_;
  std::map<core::SizeVarId, llvm::Value*> sizes_;
  std::unordered_map<const TvLayout*, FlatTv> flat_;
  std::map<std::string, layout::Atom> atoms_;
  std::vector<llvm::Value*> iterations_;  // enclosing loops' counters (i64), innermost last
  // Inside EachTile: the block of the kernel's grid (i64 x, y, z), the ring iterations of the
  // blocks before it (i64), and the pipeline's iterations in this one (set by the loop).
  std::array<llvm::Value*, 3> block_ = {nullptr, nullptr, nullptr};
  llvm::Value* ring_base_ = nullptr;
  llvm::Value* ring_used_ = nullptr;
  Span span_;

  // Line information (Options::line_info): the entry's DISubprogram, each op's instructions at the
  // line and column of its span (`.loc` directives that point at the .weft source).
 public:
  void EnableLineInfo(const SourceManager& sources) { sources_ = &sources; }

 private:
  void Locate(Span span);
  llvm::DIFile* DiFile(FileId file);
  const SourceManager* sources_ = nullptr;
  std::unique_ptr<llvm::DIBuilder> di_;
  llvm::DISubprogram* subprogram_ = nullptr;
  std::map<std::uint32_t, llvm::DIScope*> scopes_;  // per file: the subprogram or a block in that file
};

inline bool IsSigned(Dtype d) {
  return d == Dtype::I8 || d == Dtype::I16 || d == Dtype::I32 || d == Dtype::I64;
}

inline RowCol Advance(RowCol e, std::int64_t n, int rank) {
  return rank == 1 ? RowCol{e.row + n, e.col} : RowCol{e.row, e.col + n};
}

}  // namespace weft::codegen::device_emit
