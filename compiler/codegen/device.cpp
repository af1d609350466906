// Device code generation; see device.h for the contract and docs/codegen.md for what each op becomes.
//
// The generated entry is the simulator's executor (compiler/sim/executor.cpp) specialized to one
// thread whose index is only known at run time:
//   - a TV layout (thread, value) -> element is evaluated with the thread index as an IR value and
//     the value index as a constant (CuTe's colexicographic decomposition, leaf by leaf), so a
//     thread's addresses are a few shifts and masks of its index;
//   - a Reg tile is one SSA value per value index; where an instruction needs an element, the value
//     index that holds it is found at compile time by evaluating the layouts for every thread of the
//     block, and must be the same in every thread (renaming registers is free on the GPU, moving
//     elements between threads is not); otherwise E0750 names the op.
#include "codegen/device.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/IR/DIBuilder.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/TargetParser/Triple.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <unordered_map>

#include "codegen/hopper.h"
#include "codegen/math.h"
#include "codegen/nvptx.h"
#include "layout/atoms.h"
#include "schedule/cost.h"
#include "schedule/schedule.h"

namespace weft::codegen {

namespace {

using layout::TvLayout;
using tile::OpId;
using tile::ValueId;
using RowCol = TvLayout::RowCol;

// A construct the emitter does not handle: becomes E0750 at the op.
struct Unsupported {
  Span span;
  std::string message;
};

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

int ElementBytes(Dtype d) {
  return std::max(1, Bits(d) / 8);
}

bool IsFloat(Dtype d) {
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
  llvm::Value* address = nullptr;     // i64
  std::vector<llvm::Value*> extents;  // the parameter's extents (i64), for strides
  std::vector<llvm::Value*> strides;  // row-major strides of the parameter (i64 elements)
  int view_rank = 0;                  // 0 for the parameter itself
  int param = -1;                     // index into Kernel::params of the tensor it views
  std::vector<llvm::Value*> first;    // a view's first element: its index along each axis (i64)
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
  llvm::Value* leader_ = nullptr;  // the thread IfThread0 runs on: tid == 0, or this one (the producer)
  bool turns_ = false;             // inside a ping-pong loop's body: products take turns
  bool consumers_only_ = false;    // Barrier() syncs the kernel's threads alone (bar.sync 1, threads)

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

llvm::DIFile* Emitter::DiFile(FileId file) {
  // An absolute directory where the file exists, so tools find it from wherever the kernel runs.
  std::filesystem::path path(std::string(sources_->Get(file).name()));
  std::error_code error;
  if (std::filesystem::exists(path, error)) path = std::filesystem::absolute(path, error);
  std::string dir = path.parent_path().string();
  return di_->createFile(path.filename().string(), dir.empty() ? "." : dir);
}

void Emitter::Locate(Span span) {
  if (!subprogram_ || !span.valid()) return;
  llvm::DIScope*& scope = scopes_[span.file.index];
  if (!scope) scope = di_->createLexicalBlockFile(subprogram_, DiFile(span.file));
  LineCol at = sources_->Get(span.file).Locate(span.begin);
  b_.SetCurrentDebugLocation(llvm::DILocation::get(ctx_, at.line, at.column, scope));
}

llvm::Type* Emitter::ElemType(Dtype d) {
  switch (d) {
    case Dtype::F32:
      return b_.getFloatTy();
    case Dtype::F64:
      return b_.getDoubleTy();
    case Dtype::F16:
      return b_.getHalfTy();
    case Dtype::BF16:
      return b_.getBFloatTy();
    case Dtype::Bool:
      return b_.getInt1Ty();
    default:
      break;
  }
  if (Bits(d) >= 8 && !IsFloat(d)) return b_.getIntNTy(static_cast<unsigned>(Bits(d)));
  Fail("elements of type `" + std::string(Spelling(d)) + "`");
}

bool IsSigned(Dtype d) {
  return d == Dtype::I8 || d == Dtype::I16 || d == Dtype::I32 || d == Dtype::I64;
}

const TvLayout& Emitter::Tv(ValueId v) {
  const auto& choice = plan_.values.at(v.index);
  if (!choice.regs) Fail("the plan gives register tile " + Name(v) + " no TV layout");
  return *choice.regs;
}

const FlatTv& Emitter::Flat(const TvLayout& tv) {
  auto it = flat_.find(&tv);
  if (it != flat_.end()) return it->second;
  FlatTv f{tv.threads(), tv.values(), tv.rows, {}, {}};
  f.index.resize(static_cast<std::size_t>(f.threads * f.values));
  for (std::int64_t i = 0; i < f.threads * f.values; ++i) f.index[static_cast<std::size_t>(i)] = tv.layout(i);
  f.held.resize(static_cast<std::size_t>(f.threads));
  for (std::int64_t t = 0; t < f.threads; ++t)
    for (std::int64_t v = f.values - 1; v >= 0; --v)  // the lowest value index wins
      f.held[static_cast<std::size_t>(t)][f.index[static_cast<std::size_t>(t + f.threads * v)]] = static_cast<int>(v);
  return flat_.emplace(&tv, std::move(f)).first->second;
}

const layout::Atom& Emitter::AtomNamed(const std::string& name) {
  auto it = atoms_.find(name);
  if (it != atoms_.end()) return it->second;
  auto atom = layout::FindAtom(name);
  if (!atom) Fail(atom.error());
  return atoms_.emplace(name, *atom).first->second;
}

RowCol Emitter::Extent(ValueId v) {
  const auto& shape = Val(v).shape;
  std::vector<std::int64_t> c;
  for (const auto& d : shape) {
    auto x = d.AsConstant();
    if (!x) Fail(Name(v) + " has a symbolic extent");
    c.push_back(*x);
  }
  if (c.size() == 1) return {c[0], 1};
  if (c.size() == 2) return {c[0], c[1]};
  Fail(Name(v) + " has rank " + std::to_string(c.size()) + ": tiles of rank 1 and 2 are generated");
}

int Emitter::UniformValue(ValueId v, const std::function<RowCol(std::int64_t)>& elem, std::string_view what) {
  const FlatTv& f = Flat(Tv(v));
  int found = -1;
  for (std::int64_t t = 0; t < plan_.threads; ++t) {
    RowCol e = elem(t);
    auto it = f.held[static_cast<std::size_t>(t)].find(e.row + f.rows * e.col);
    if (it == f.held[static_cast<std::size_t>(t)].end())
      Fail("thread " + std::to_string(t) + " does not hold element (" + std::to_string(e.row) + ", " +
           std::to_string(e.col) + ") of " + Name(v) + ", which " + std::string(what) + " needs");
    if (found >= 0 && it->second != found)
      Fail(std::string(what) + " needs elements of " + Name(v) + " that different threads keep in different registers");
    found = it->second;
  }
  return found;
}

// CuTe's evaluation of a (possibly hierarchical) mode at a 1-D index: leaf i contributes
// ((index / (s_0 * ... * s_{i-1})) % s_i) * d_i; the last leaf is not reduced modulo its extent.
llvm::Value* Emitter::EvalLeaves(const layout::Layout& mode, llvm::Value* index) {
  auto leaves = layout::FlatModes(mode);
  llvm::Value* out = I32(0);
  std::int64_t below = 1;
  for (std::size_t i = 0; i < leaves.size(); ++i) {
    auto [extent, stride] = leaves[i];
    llvm::Value* c = below == 1 ? index : b_.CreateUDiv(index, I32(below));
    if (i + 1 < leaves.size()) c = b_.CreateURem(c, I32(extent));
    if (extent > 1 && stride != 0) out = b_.CreateAdd(out, b_.CreateMul(c, I32(stride)));
    below *= extent;
  }
  return out;
}

std::pair<llvm::Value*, llvm::Value*> Emitter::TvElement(const TvLayout& tv, std::int64_t v) {
  llvm::Value* idx = b_.CreateAdd(EvalLeaves(tv.layout.Mode(0), tid_), I32(tv.layout.Mode(1)(v)));
  return {b_.CreateURem(idx, I32(tv.rows)), b_.CreateUDiv(idx, I32(tv.rows))};
}

llvm::Value* Emitter::SharedOffset(ValueId shared, llvm::Value* row, llvm::Value* col) {
  const auto& choice = plan_.values.at(shared.index);
  if (!choice.shared) Fail("the plan gives shared tile " + Name(shared) + " no layout");
  const layout::SwizzledLayout& l = *choice.shared;
  llvm::Value* linear;
  if (l.layout().rank() == 2) {
    linear = b_.CreateAdd(EvalLeaves(l.layout().Mode(0), row), EvalLeaves(l.layout().Mode(1), col));
  } else {
    linear = EvalLeaves(l.layout(), b_.CreateAdd(row, b_.CreateMul(col, I32(Extent(shared).row))));
  }
  linear = b_.CreateAdd(linear, I32(l.offset()));
  const layout::Swizzle& s = l.swizzle();
  if (s.bits() == 0) return linear;
  llvm::Value* y = b_.CreateAnd(linear, I32(s.yyy_mask()));
  y = s.shift() >= 0 ? b_.CreateLShr(y, I32(s.shift())) : b_.CreateShl(y, I32(-s.shift()));
  return b_.CreateXor(linear, y);
}

llvm::Value* Emitter::CopyAddress(ValueId smem, const TvLayout& copy, std::int64_t v, llvm::Value* base,
                                  int element_bytes) {
  auto direct = [&](std::int64_t value) {
    auto [row, col] = TvElement(copy, value);
    return b_.CreateAdd(base, b_.CreateMul(SharedOffset(smem, row, col), I32(element_bytes)));
  };
  const synth::ValueChoice& vc = plan_.values.at(smem.index);
  std::int64_t rows = Extent(smem).row;
  // SharedOffset's function, evaluated here: the layout of index row + rows * col, swizzled.
  if (v == 0 || !vc.shared || (vc.shared->layout().rank() == 2 && vc.shared->layout().Mode(0).size() != rows))
    return direct(v);
  const FlatTv& fc = Flat(copy);
  auto offset = [&](std::int64_t t, std::int64_t value) {
    RowCol e = fc.At(t, value);
    return (*vc.shared)(e.row + rows * e.col);
  };
  // The base's alignment: an xor below it commutes with adding the base.
  auto low_bit = [](std::int64_t x) { return x == 0 ? std::int64_t{1} << 40 : x & -x; };
  std::int64_t align = low_bit(vc.shared_offset);
  if (vc.stages > 1) align = std::min(align, low_bit(vc.stage_bytes));
  std::int64_t o0 = offset(0, 0), ov = offset(0, v);
  for (int k = 0; k < 24; ++k) {
    std::int64_t x = (ov ^ o0) & ((std::int64_t{1} << k) - 1), a = ov - (o0 ^ x);
    if (x && x * element_bytes >= align) break;
    bool holds = true;
    for (std::int64_t t = 0; t < fc.threads && holds; ++t) holds = offset(t, v) == ((offset(t, 0) ^ x) + a);
    if (!holds) continue;
    llvm::Value* at = direct(0);
    if (x) at = b_.CreateXor(at, I32(x * element_bytes));
    return a ? b_.CreateAdd(at, I32(a * element_bytes)) : at;
  }
  return direct(v);
}

llvm::Value* Emitter::DimValue(const core::Dim& d) {
  llvm::Value* out = I64(0);
  for (const core::Term& term : d.terms()) {
    llvm::Value* t = I64(term.coefficient);
    for (const core::Factor& f : term.monomial) {
      llvm::Value* a = nullptr;
      switch (f.atom.kind) {
        case core::AtomKind::kVar: {
          auto it = sizes_.find(f.atom.var);
          if (it == sizes_.end()) Fail("a size the kernel's parameters do not bind");
          a = it->second;
          break;
        }
        case core::AtomKind::kDiv:
          a = b_.CreateSDiv(DimValue(*f.atom.operand), I64(f.atom.divisor));  // operands are non-negative sizes
          break;
        case core::AtomKind::kMod:
          a = b_.CreateSRem(DimValue(*f.atom.operand), I64(f.atom.divisor));
          break;
      }
      for (int p = 0; p < f.power; ++p) t = b_.CreateMul(t, a);
    }
    out = b_.CreateAdd(out, t);
  }
  return out;
}

llvm::Value* Emitter::Scalar(ValueId v) {
  llvm::Value* s = slots_.at(v.index).scalar;
  if (!s) Fail("scalar " + Name(v) + " used before it is computed");
  return s;
}

llvm::Value* Emitter::Convert(llvm::Value* x, Dtype from, Dtype to) {
  llvm::Type* t = ElemType(to);
  if (from == to) return x;
  if (IsFloat(from) && IsFloat(to)) {
    if (Bits(to) == Bits(from)) return b_.CreateFPTrunc(b_.CreateFPExt(x, b_.getFloatTy()), t);  // bf16 <-> f16
    return Bits(to) < Bits(from) ? b_.CreateFPTrunc(x, t) : b_.CreateFPExt(x, t);
  }
  if (IsFloat(from)) return IsSigned(to) ? b_.CreateFPToSI(x, t) : b_.CreateFPToUI(x, t);
  if (IsFloat(to)) return IsSigned(from) ? b_.CreateSIToFP(x, t) : b_.CreateUIToFP(x, t);
  if (to == Dtype::Bool) return b_.CreateICmpNE(x, llvm::ConstantInt::get(x->getType(), 0));
  return b_.CreateIntCast(x, t, IsSigned(from));
}

llvm::Value* Emitter::Intrinsic(llvm::Intrinsic::ID id, llvm::ArrayRef<llvm::Value*> args,
                                llvm::ArrayRef<llvm::Type*> types) {
  // An overloaded intrinsic with no types given is overloaded on its first operand (ldmatrix's
  // shared-memory pointer).
  std::vector<llvm::Type*> overload(types.begin(), types.end());
  if (overload.empty() && llvm::Intrinsic::isOverloaded(id) && !args.empty()) overload.push_back(args[0]->getType());
  llvm::Function* f = llvm::Intrinsic::getDeclaration(&m_, id, overload);
  return b_.CreateCall(f, args);
}

void Emitter::Barrier() {
  if (consumers_only_)
    Intrinsic(llvm::Intrinsic::nvvm_barrier_sync_cnt, {I32(1), I32(plan_.threads)});
  else
    Intrinsic(llvm::Intrinsic::nvvm_barrier0, {});
}

llvm::Value* Emitter::ThreadTable(const std::vector<std::int64_t>& per_thread) {
  if (std::all_of(per_thread.begin(), per_thread.end(), [&](std::int64_t x) { return x == per_thread[0]; }))
    return I32(per_thread[0]);
  std::vector<llvm::Constant*> entries;
  for (std::int64_t x : per_thread) entries.push_back(b_.getInt32(static_cast<std::uint32_t>(x)));
  auto* type = llvm::ArrayType::get(b_.getInt32Ty(), entries.size());
  auto* table = new llvm::GlobalVariable(m_, type, true, llvm::GlobalValue::PrivateLinkage,
                                         llvm::ConstantArray::get(type, entries), "weft_thread_table", nullptr,
                                         llvm::GlobalValue::NotThreadLocal, 4);
  llvm::Value* at = b_.CreateGEP(type, table, {I32(0), tid_});
  return b_.CreateAlignedLoad(b_.getInt32Ty(), at, llvm::Align(4));
}

llvm::Value* Emitter::Scratch(std::int64_t bytes) {
  scratch_bytes_ = std::max(scratch_bytes_, bytes);
  return I32(MbarrierOffset() + (mbarriers_ * 8 + 15) / 16 * 16);  // past the mbarriers
}

void Emitter::StoreIf(llvm::Value* condition, llvm::Value* value, llvm::Value* shared_offset) {
  llvm::BasicBlock* then = llvm::BasicBlock::Create(ctx_, "store", fn_);
  llvm::BasicBlock* join = llvm::BasicBlock::Create(ctx_, "stored", fn_);
  b_.CreateCondBr(condition, then, join);
  b_.SetInsertPoint(then);
  b_.CreateAlignedStore(value, b_.CreateGEP(b_.getInt8Ty(), smem_, shared_offset),
                        llvm::Align(std::max<std::uint64_t>(1, value->getType()->getPrimitiveSizeInBits() / 8)));
  b_.CreateBr(join);
  b_.SetInsertPoint(join);
}

// `convert`: through scratch shared memory, as the simulator does it: each element's owner (the
// lowest thread holding it) stores it, every thread loads the elements its new layout gives it.
void Emitter::EmitConvert(ValueId src, ValueId result) {
  const TvLayout& s = Tv(src);
  const TvLayout& d = Tv(result);
  if (s.layout == d.layout && s.rows == d.rows && s.cols == d.cols) {
    slots_[result.index].regs = slots_.at(src.index).regs;
    return;
  }
  int e = ElementBytes(Val(src).dtype);
  llvm::Value* scratch = Scratch(s.rows * s.cols * e);
  const FlatTv& fs = Flat(s);
  auto owners = layout::Owners(s);
  const auto& regs = slots_.at(src.index).regs;
  Barrier();  // an earlier use of the scratch memory is done
  for (std::int64_t v = 0; v < fs.values; ++v) {
    std::vector<std::int64_t> owner(static_cast<std::size_t>(fs.threads));
    for (std::int64_t t = 0; t < fs.threads; ++t) {
      RowCol el = fs.At(t, v);
      auto o = owners[static_cast<std::size_t>(el.row + s.rows * el.col)];
      owner[static_cast<std::size_t>(t)] = o.first == t && o.second == v;
    }
    auto [row, col] = TvElement(s, v);
    llvm::Value* at = b_.CreateAdd(scratch, b_.CreateMul(b_.CreateAdd(row, b_.CreateMul(col, I32(s.rows))), I32(e)));
    StoreIf(b_.CreateICmpNE(ThreadTable(owner), I32(0)), regs.at(static_cast<std::size_t>(v)), at);
  }
  Barrier();
  std::vector<llvm::Value*> out;
  for (std::int64_t v = 0; v < Flat(d).values; ++v) {
    auto [row, col] = TvElement(d, v);
    llvm::Value* at = b_.CreateAdd(scratch, b_.CreateMul(b_.CreateAdd(row, b_.CreateMul(col, I32(d.rows))), I32(e)));
    out.push_back(b_.CreateAlignedLoad(ElemType(Val(result).dtype), b_.CreateGEP(b_.getInt8Ty(), smem_, at),
                                       llvm::Align(static_cast<std::uint64_t>(e))));
  }
  Barrier();
  slots_[result.index].regs = std::move(out);
}

// --- ops ---------------------------------------------------------------------------------------

void Emitter::EmitBlock(const std::vector<OpId>& ops) {
  for (OpId id : ops) EmitOp(id);
}

void Emitter::EmitOp(OpId id) {
  const tile::Op& op = k_.Get(id);
  span_ = op.span;
  Locate(op.span);
  auto result = [&]() { return op.results.at(0); };
  if (!op.results.empty() && folded_.count(result().index)) {  // a mask true in this copy of the body
    slots_[result().index].regs.assign(static_cast<std::size_t>(Flat(Tv(result())).values), b_.getTrue());
    return;
  }
  std::visit(
      [&](const auto& node) {
        using T = std::decay_t<decltype(node)>;
        if constexpr (std::is_same_v<T, tile::op::BlockIdx>) {
          static const llvm::Intrinsic::ID ids[] = {llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x,
                                                    llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_y,
                                                    llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_z};
          if (node.axis < 0 || node.axis > 2) Fail("block_idx of a grid of rank above 3");
          slots_[result().index].scalar = block_[static_cast<std::size_t>(node.axis)]
                                              ? block_[static_cast<std::size_t>(node.axis)]
                                              : b_.CreateZExt(Intrinsic(ids[node.axis], {}), b_.getInt64Ty());
        } else if constexpr (std::is_same_v<T, tile::op::Constant>) {
          Dtype d = Val(result()).dtype;
          llvm::Type* t = ElemType(d);
          llvm::Value* c = nullptr;
          if (auto* i = std::get_if<std::int64_t>(&node.value))
            c = IsFloat(d) ? llvm::ConstantFP::get(t, static_cast<double>(*i))
                           : llvm::ConstantInt::get(t, static_cast<std::uint64_t>(*i), true);
          if (auto* f = std::get_if<double>(&node.value))
            c = IsFloat(d) ? llvm::ConstantFP::get(t, *f)
                           : llvm::ConstantInt::get(t, static_cast<std::uint64_t>(static_cast<std::int64_t>(*f)), true);
          if (auto* bv = std::get_if<bool>(&node.value)) c = llvm::ConstantInt::get(t, *bv ? 1 : 0);
          slots_[result().index].scalar = c;
        } else if constexpr (std::is_same_v<T, tile::op::Size>) {
          slots_[result().index].scalar = DimValue(node.dim);
        } else if constexpr (std::is_same_v<T, tile::op::ScalarOp>) {
          EmitScalarOp(op, node);
        } else if constexpr (std::is_same_v<T, tile::op::View>) {
          EmitView(op, node);
        } else if constexpr (std::is_same_v<T, tile::op::ToShared>) {
          EmitToShared(id, op, node);
        } else if constexpr (std::is_same_v<T, tile::op::ToRegs>) {
          EmitToRegs(id, op, node);
        } else if constexpr (std::is_same_v<T, tile::op::Transpose>) {
          slots_[result().index].shared = slots_.at(node.src.index).shared;
          slots_[result().index].shared_view_of = node.src;
        } else if constexpr (std::is_same_v<T, tile::op::Store>) {
          EmitStore(id, node);
        } else if constexpr (std::is_same_v<T, tile::op::Mma>) {
          EmitMma(id, op, node);
        } else if constexpr (std::is_same_v<T, tile::op::Fill>) {
          ValueId r = result();
          llvm::Value* v = Convert(Scalar(node.value), Val(node.value).dtype, Val(r).dtype);
          slots_[r.index].regs.assign(static_cast<std::size_t>(Flat(Tv(r)).values), v);
        } else if constexpr (std::is_same_v<T, tile::op::Cast>) {
          ValueId r = result();
          if (Val(node.src).space == tile::Space::Scalar) {
            slots_[r.index].scalar = Convert(Scalar(node.src), Val(node.src).dtype, node.dtype);
            return;
          }
          auto in = SameLayoutRegs(node.src, r, "`cast`");
          for (auto*& x : in) x = Convert(x, Val(node.src).dtype, node.dtype);
          slots_[r.index].regs = std::move(in);
        } else if constexpr (std::is_same_v<T, tile::op::Expand>) {
          slots_[result().index].regs = SameLayoutRegs(node.src, result(), "`expand`");
        } else if constexpr (std::is_same_v<T, tile::op::Convert>) {
          EmitConvert(node.src, result());
        } else if constexpr (std::is_same_v<T, tile::op::Map>) {
          EmitMap(node, result());
        } else if constexpr (std::is_same_v<T, tile::op::Loop>) {
          EmitLoop(id, op, node);
        } else if constexpr (std::is_same_v<T, tile::op::Reduce>) {
          EmitReduce(node, result());
        } else if constexpr (std::is_same_v<T, tile::op::Iota>) {
          ValueId r = result();
          const TvLayout& tv = Tv(r);
          std::vector<llvm::Value*> regs;
          for (std::int64_t v = 0; v < Flat(tv).values; ++v)
            regs.push_back(b_.CreateZExt(TvElement(tv, v).first, ElemType(Val(r).dtype)));
          slots_[r.index].regs = std::move(regs);
        }
      },
      op.node);
}

void Emitter::EmitScalarOp(const tile::Op& op, const tile::op::ScalarOp& s) {
  std::vector<llvm::Value*> a;
  for (ValueId v : s.args) a.push_back(Scalar(v));
  Dtype d = Val(s.args.at(s.fn == "select" ? 1 : 0)).dtype;
  slots_[op.results.at(0).index].scalar = Elementwise(s.fn, d, a);
}

void Emitter::EmitView(const tile::Op& op, const tile::op::View& v) {
  const auto& parent = slots_.at(v.tensor.index).global;
  if (!parent) Fail("`tile` of " + Name(v.tensor) + ", which is not a global tensor");
  GlobalSlot g = *parent;
  std::size_t q = g.extents.size(), r = v.shape.size();
  if (v.coords.size() != q || r > q) Fail("`tile` with " + std::to_string(v.coords.size()) + " coordinates");
  llvm::Value* offset = I64(0);
  for (std::size_t i = 0; i < q; ++i) {
    std::int64_t extent = i >= q - r ? v.shape[i - (q - r)] : 1;
    llvm::Value* first = b_.CreateMul(Scalar(v.coords[i]), I64(extent));
    offset = b_.CreateAdd(offset, b_.CreateMul(first, g.strides[i]));
    if (i < g.first.size()) g.first[i] = b_.CreateAdd(g.first[i], first);
  }
  g.address = b_.CreateAdd(g.address, b_.CreateMul(offset, I64(ElementBytes(Val(v.tensor).dtype))));
  g.view_rank = static_cast<int>(r);
  slots_[op.results.at(0).index].global = g;
}

llvm::Value* Emitter::SharedBase(ValueId dst, llvm::Value* slot) {
  const synth::ValueChoice& vc = plan_.values.at(dst.index);
  return b_.CreateTrunc(b_.CreateAdd(I64(vc.shared_offset), b_.CreateMul(slot, I64(vc.stage_bytes))), b_.getInt32Ty());
}

void Emitter::EmitToShared(OpId id, const tile::Op& op, const tile::op::ToShared& s, const Prefetch* prefetch) {
  ValueId dst = op.results.at(0);
  const synth::ValueChoice& vc = plan_.values.at(dst.index);
  const synth::OpChoice& choice = plan_.ops.at(id.index);
  const auto& src = slots_.at(s.src.index).global;
  if (!src) Fail("`shared` of " + Name(s.src) + ", which is not a global tile");
  llvm::Value* stage = I64(0);
  if (prefetch) {
    stage = prefetch->slot;
  } else if (vc.stages > 1 && !iterations_.empty()) {
    stage = b_.CreateURem(iterations_.back(), I64(vc.stages));
  }
  llvm::Value* base = SharedBase(dst, stage);
  slots_[dst.index].shared = base;
  if (StartsWith(choice.instruction, "tma")) {
    if (prefetch) return EmitTma(id, s, dst, base, prefetch->bar, prefetch->live);
    // In place: a fresh mbarrier (the last one) for this copy alone.
    llvm::Value* bar = Mbarrier(I32(mbarriers_ - 1));
    Barrier();  // every thread's earlier reads of the buffer are done
    IfThread0(nullptr, [&] {
      Intrinsic(llvm::Intrinsic::nvvm_mbarrier_init_shared, {bar, I32(1)});
      hopper::FenceMbarrierInit(b_);
    });
    Barrier();
    IfThread0(nullptr, [&] { hopper::MbarrierArriveExpectTx(b_, SharedAddress(bar), I32(TmaBytes(id, dst))); });
    EmitTma(id, s, dst, base, bar, nullptr);
    WaitMbarrier(bar, I32(0));
    Barrier();  // every thread is past the wait
    IfThread0(nullptr, [&] { Intrinsic(llvm::Intrinsic::nvvm_mbarrier_inval_shared, {bar}); });
    return;
  }
  if (!StartsWith(choice.instruction, "cp.async")) Fail("`" + choice.instruction + "` copies into shared memory");
  if (!choice.copy || choice.vector_bytes != 16) Fail("a cp.async copy without 16-byte vectors");
  if (Val(dst).shape.size() != 2) Fail("cp.async into a shared tile of rank other than 2");
  int e = ElementBytes(Val(dst).dtype);
  const TvLayout& copy = *choice.copy;
  // Every thread's earlier reads of the buffer this copy overwrites are done (a ring of one stage).
  if (!iterations_.empty() && !prefetch) Barrier();
  llvm::Type* gptr = llvm::PointerType::get(ctx_, 1);
  // A tile smaller than the block's vectors (a [1, 256] bias) is held by several threads at once:
  // only the element's owner (the smallest such thread) copies it, so no two threads write one
  // shared address.
  const FlatTv& flat = Flat(copy);
  std::unordered_map<std::int64_t, std::int64_t> owner;  // element -> the smallest thread holding it
  for (std::int64_t t = 0; t < flat.threads; ++t)
    for (std::int64_t v = 0; v < flat.values; ++v)
      owner.emplace(flat.index[static_cast<std::size_t>(t + flat.threads * v)], t);
  for (std::int64_t v = 0; v < flat.values; ++v) {
    if (prefetch && v * prefetch->parts / flat.values != prefetch->part) continue;
    std::vector<std::int64_t> owns(static_cast<std::size_t>(flat.threads));
    bool replicated = false;
    for (std::int64_t t = 0; t < flat.threads; ++t) {
      owns[static_cast<std::size_t>(t)] = owner.at(flat.index[static_cast<std::size_t>(t + flat.threads * v)]) == t;
      replicated = replicated || owns[static_cast<std::size_t>(t)] == 0;
    }
    llvm::BasicBlock* join = nullptr;
    if (replicated) {
      llvm::BasicBlock* body = llvm::BasicBlock::Create(ctx_, "copy.owner", fn_);
      join = llvm::BasicBlock::Create(ctx_, "copy.all", fn_);
      b_.CreateCondBr(b_.CreateICmpNE(ThreadTable(owns), I32(0)), body, join);
      b_.SetInsertPoint(body);
    }
    auto [row, col] = TvElement(copy, v);
    llvm::Value* saddr = b_.CreateGEP(b_.getInt8Ty(), smem_, CopyAddress(dst, copy, v, base, e));
    llvm::Value* goff =
        b_.CreateAdd(b_.CreateMul(b_.CreateZExt(row, b_.getInt64Ty()), src->strides[src->extents.size() - 2]),
                     b_.CreateZExt(col, b_.getInt64Ty()));
    llvm::Value* gaddr = b_.CreateIntToPtr(b_.CreateAdd(src->address, b_.CreateMul(goff, I64(e))), gptr);
    // A prefetch past the loop's last iteration reads nothing and fills zeros (source size 0).
    hopper::CpAsync16(b_, SharedAddress(saddr), gaddr,
                      prefetch ? b_.CreateSelect(prefetch->live, I32(16), I32(0)) : nullptr);
    if (join) {
      b_.CreateBr(join);
      b_.SetInsertPoint(join);
    }
  }
  if (prefetch) return;  // the loop commits and waits per stage
  Intrinsic(llvm::Intrinsic::nvvm_cp_async_commit_group, {});
  Intrinsic(llvm::Intrinsic::nvvm_cp_async_wait_group, {I32(0)});
  Barrier();
}

RowCol Advance(RowCol e, std::int64_t n, int rank) {
  return rank == 1 ? RowCol{e.row + n, e.col} : RowCol{e.row, e.col + n};
}

void Emitter::EmitToRegs(OpId id, const tile::Op& op, const tile::op::ToRegs& r) {
  ValueId dst = op.results.at(0);
  const synth::OpChoice& choice = plan_.ops.at(id.index);
  if (StartsWith(choice.instruction, "none") || !plan_.values.at(dst.index).regs) {
    slots_[dst.index].shared_alias = r.src;  // wgmma reads it where it is
    return;
  }
  if (StartsWith(choice.instruction, "ld.shared")) return EmitLdShared(id, op, r);
  if (!StartsWith(choice.instruction, "ldmatrix")) Fail("`" + choice.instruction + "` loads into registers");
  if (!choice.copy) Fail("an ldmatrix without a copy layout");
  if (plan_.values.at(dst.index).streamed) {
    streamed_[dst.index] = Streamed{id, r.src};  // loaded slice by slice at the mma that reads it
    return;
  }
  std::vector<llvm::Value*> regs(static_cast<std::size_t>(Flat(Tv(dst)).values), nullptr);
  EmitLdmatrix(id, dst, r.src, 0, Flat(*choice.copy).values, regs);
  std::string what = "`" + choice.instruction + "`";
  for (std::size_t i = 0; i < regs.size(); ++i)
    if (!regs[i]) Fail(what + " never delivers value " + std::to_string(i) + " of " + Name(dst));
  slots_[dst.index].regs = std::move(regs);
}

void Emitter::EmitLdmatrix(OpId id, ValueId dst, ValueId src, std::int64_t first, std::int64_t last,
                           std::vector<llvm::Value*>& regs) {
  const synth::OpChoice& choice = plan_.ops.at(id.index);
  llvm::Value* base = slots_.at(src.index).shared;
  if (!base) Fail("`regs` of " + Name(src) + ", which is not in shared memory");
  ValueId smem = src;
  bool swapped = false;
  if (auto parent = slots_.at(src.index).shared_view_of) smem = *parent, swapped = true;
  const TvLayout& copy = *choice.copy;
  const FlatTv& fc = Flat(copy);
  int count = choice.instruction.find(".x4") != std::string::npos   ? 4
              : choice.instruction.find(".x2") != std::string::npos ? 2
                                                                    : 1;
  bool trans = choice.instruction.find(".trans") != std::string::npos;
  static const llvm::Intrinsic::ID ids[2][3] = {
      {llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x1_b16, llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x2_b16,
       llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x4_b16},
      {llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x1_trans_b16,
       llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x2_trans_b16,
       llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x4_trans_b16}};
  llvm::Intrinsic::ID iid = ids[trans ? 1 : 0][count == 4 ? 2 : count == 2 ? 1 : 0];
  int rank = static_cast<int>(Val(smem).shape.size());
  const FlatTv& ftv = Flat(Tv(dst));
  llvm::Type* elem = ElemType(Val(dst).dtype);
  std::string what = "`" + choice.instruction + "`";
  for (std::int64_t v = first; v < last; ++v) {
    llvm::Value* addr = b_.CreateGEP(b_.getInt8Ty(), smem_, CopyAddress(smem, copy, v, base, 2));
    llvm::Value* loaded = Intrinsic(iid, {addr});
    for (int j = 0; j < count; ++j) {
      llvm::Value* reg = count == 1 && !loaded->getType()->isStructTy()
                             ? loaded
                             : b_.CreateExtractValue(loaded, {static_cast<unsigned>(j)});
      for (int h = 0; h < 2; ++h) {
        auto elem_of = [&, j, h](std::int64_t t) {
          std::int64_t w = t / 32, l = t % 32, g = l / 4, t4 = l % 4;
          std::int64_t row_lane = trans ? 8 * j + 2 * t4 + h : 8 * j + g;
          std::int64_t within = trans ? g : 2 * t4 + h;
          RowCol e = Advance(fc.At(w * 32 + row_lane, v), within, rank);
          return swapped ? RowCol{e.col, e.row} : e;
        };
        int value = UniformValue(dst, elem_of, what);
        llvm::Value* half = b_.CreateTrunc(h == 0 ? reg : b_.CreateLShr(reg, I32(16)), b_.getInt16Ty());
        llvm::Value* x = b_.CreateBitCast(half, elem);
        // every value of the thread holding the same element (a broadcast holds it more than once)
        for (std::int64_t i = 0; i < ftv.values; ++i)
          if (ftv.index[static_cast<std::size_t>(ftv.threads * i)] ==
              ftv.index[static_cast<std::size_t>(ftv.threads * value)])
            regs[static_cast<std::size_t>(i)] = x;
        regs[static_cast<std::size_t>(value)] = x;
      }
    }
  }
}

// `regs` by vector loads (`ld.shared.v4.b32` and narrower), as the simulator does them: each
// thread reads the plan's copy vectors at the swizzled address of their first element and hands
// each element to the value of the destination layout that holds it.
void Emitter::EmitLdShared(OpId id, const tile::Op& op, const tile::op::ToRegs& r) {
  ValueId dst = op.results.at(0);
  const synth::OpChoice& choice = plan_.ops.at(id.index);
  llvm::Value* base = slots_.at(r.src.index).shared;
  if (!base) Fail("`regs` of " + Name(r.src) + ", which is not in shared memory");
  ValueId smem = r.src;
  bool swapped = false;
  if (auto parent = slots_.at(r.src.index).shared_view_of) smem = *parent, swapped = true;
  if (!choice.copy) Fail("a vector load without a copy layout");
  Dtype d = Val(dst).dtype;
  if (d == Dtype::Bool) Fail("vector loads of `bool` tiles");
  int e = ElementBytes(d), vb = choice.vector_bytes;
  if (vb <= 0 || vb % e) Fail("a vector load of " + std::to_string(vb) + " bytes");
  const TvLayout& copy = *choice.copy;
  const FlatTv& fc = Flat(copy);
  const FlatTv& ftv = Flat(Tv(dst));
  int rank = static_cast<int>(Val(smem).shape.size());
  auto* vector = llvm::FixedVectorType::get(ElemType(d), static_cast<unsigned>(vb / e));
  std::vector<llvm::Value*> regs(static_cast<std::size_t>(ftv.values), nullptr);
  std::string what = "`" + choice.instruction + "`";
  for (std::int64_t v = 0; v < fc.values; ++v) {
    auto [row, col] = TvElement(copy, v);
    llvm::Value* at = b_.CreateAdd(base, b_.CreateMul(SharedOffset(smem, row, col), I32(e)));
    llvm::Value* loaded = b_.CreateAlignedLoad(vector, b_.CreateGEP(b_.getInt8Ty(), smem_, at),
                                               llvm::Align(static_cast<std::uint64_t>(vb)));
    for (int i = 0; i < vb / e; ++i) {
      int value = UniformValue(
          dst,
          [&](std::int64_t t) {
            RowCol el = Advance(fc.At(t, v), i, rank);
            return swapped ? RowCol{el.col, el.row} : el;
          },
          what);
      llvm::Value* x = b_.CreateExtractElement(loaded, static_cast<std::uint64_t>(i));
      for (std::int64_t j = 0; j < ftv.values; ++j) {  // a broadcast holds the element more than once
        bool same = true;
        for (std::int64_t t = 0; t < ftv.threads && same; ++t)
          same = ftv.index[static_cast<std::size_t>(t + ftv.threads * j)] ==
                 ftv.index[static_cast<std::size_t>(t + ftv.threads * value)];
        if (same) regs[static_cast<std::size_t>(j)] = x;
      }
    }
  }
  for (std::size_t i = 0; i < regs.size(); ++i)
    if (!regs[i]) Fail(what + " never delivers value " + std::to_string(i) + " of " + Name(dst));
  slots_[dst.index].regs = std::move(regs);
}

void Emitter::LoadSlice(ValueId v, std::vector<llvm::Value*>& regs, std::int64_t s, std::int64_t slices) {
  auto it = streamed_.find(v.index);
  if (it == streamed_.end()) return;
  std::int64_t instructions = Flat(*plan_.ops.at(it->second.op.index).copy).values;
  if (instructions % slices) Fail("a streamed operand " + Name(v) + " whose loads are not whole k16 slices");
  std::int64_t per = instructions / slices;
  EmitLdmatrix(it->second.op, v, it->second.src, s * per, (s + 1) * per, regs);
}

// The top-left element of each warp's part of the accumulator.
std::vector<RowCol> WarpOrigins(const FlatTv& acc, std::int64_t cols, int warps) {
  std::vector<RowCol> out;
  for (int w = 0; w < warps; ++w) {
    RowCol o{acc.rows, cols};
    for (std::int64_t t = w * 32; t < (w + 1) * 32; ++t)
      for (std::int64_t v = 0; v < acc.values; ++v) {
        RowCol e = acc.At(t, v);
        o.row = std::min(o.row, e.row);
        o.col = std::min(o.col, e.col);
      }
    out.push_back(o);
  }
  return out;
}

void Emitter::EmitMma(OpId id, const tile::Op& op, const tile::op::Mma& m) {
  const synth::OpChoice& choice = plan_.ops.at(id.index);
  ValueId result = op.results.at(0);
  if (StartsWith(choice.instruction, "wgmma")) return EmitWgmma(id, op, m);
  if (!StartsWith(choice.instruction, "mma.m16n8k16")) Fail("`" + choice.instruction + "`");
  const layout::Atom* atom = &AtomNamed(choice.instruction);
  const TvLayout& ta = atom->Operand("A")->tv;
  const TvLayout& tb = atom->Operand("B")->tv;
  const TvLayout& tc = atom->Operand("C")->tv;
  const FlatTv &fa = Flat(ta), &fb = Flat(tb), &fc = Flat(tc);
  RowCol a_ext = Extent(m.a), c_ext = Extent(result);
  std::int64_t M = c_ext.row, N = c_ext.col, K = a_ext.col;
  int warps = choice.warps_m * choice.warps_n;
  std::int64_t wm = M / choice.warps_m, wn = N / choice.warps_n;
  if (warps * 32 > plan_.threads || wm % 16 || wn % 8 || K % 16) Fail("a warp tiling that is not whole atoms");
  std::vector<llvm::Value*> acc = SameLayoutRegs(m.acc, result, "`mma`");
  auto origins = WarpOrigins(Flat(Tv(result)), Tv(result).cols, warps);
  auto origin = [&](std::int64_t t) {
    return origins[static_cast<std::size_t>(std::min<std::int64_t>(t / 32, warps - 1))];
  };
  bool bf16 = Val(m.a).dtype == Dtype::BF16;
  if (!bf16 && Val(m.a).dtype != Dtype::F16) Fail("mma.sync of `" + std::string(Spelling(Val(m.a).dtype)) + "`");
  // A streamed operand (plan.h) is loaded here, slice s (k in [16 s, 16 s + 16)) right before the
  // k-steps that read it; the others are in registers already.
  auto operand = [&](ValueId v) {
    auto it = streamed_.find(v.index);
    if (it == streamed_.end()) return slots_.at(v.index).regs;
    return std::vector<llvm::Value*>(static_cast<std::size_t>(Flat(Tv(v)).values), nullptr);
  };
  std::vector<llvm::Value*> ra = operand(m.a), rb = operand(m.b);
  if (ra.empty() || rb.empty()) Fail("an mma operand that is not in registers");
  auto load_slice = [&](ValueId v, std::vector<llvm::Value*>& regs, std::int64_t s) { LoadSlice(v, regs, s, K / 16); };
  std::string what = "`" + choice.instruction + "`";
  auto reg = [&](const std::vector<llvm::Value*>& regs, ValueId v, int idx) {
    llvm::Value* x = regs[static_cast<std::size_t>(idx)];
    if (!x) Fail(what + " reads value " + std::to_string(idx) + " of " + Name(v) + ", which its slice does not load");
    return x;
  };
  auto pack = [&](llvm::Value* lo, llvm::Value* hi) {
    llvm::Value* p = Pack(lo, hi);
    if (bf16) return p;
    return b_.CreateBitCast(p, llvm::FixedVectorType::get(b_.getHalfTy(), 2));
  };
  // One m16n8k16 of atom (am, an) at depth k0, accumulating into acc.
  auto step = [&](std::int64_t am, std::int64_t an, std::int64_t k0) {
    int c_index[4];
    for (int i = 0; i < 4; ++i)
      c_index[i] = UniformValue(
          result,
          [&, i](std::int64_t t) {
            RowCol o = origin(t), e = fc.At(t % 32, i);
            return RowCol{o.row + 16 * am + e.row, o.col + 8 * an + e.col};
          },
          what);
    llvm::Value* a[8];
    llvm::Value* bv[4];
    for (int i = 0; i < 8; ++i) {
      int idx = UniformValue(
          m.a,
          [&, i](std::int64_t t) {
            RowCol o = origin(t), e = fa.At(t % 32, i);
            return RowCol{o.row + 16 * am + e.row, k0 + e.col};
          },
          what);
      a[i] = reg(ra, m.a, idx);
    }
    for (int i = 0; i < 4; ++i) {
      int idx = UniformValue(
          m.b,
          [&, i](std::int64_t t) {
            RowCol o = origin(t), e = fb.At(t % 32, i);
            return RowCol{k0 + e.row, o.col + 8 * an + e.col};
          },
          what);
      bv[i] = reg(rb, m.b, idx);
    }
    std::vector<llvm::Value*> args = {pack(a[0], a[1]),
                                      pack(a[2], a[3]),
                                      pack(a[4], a[5]),
                                      pack(a[6], a[7]),
                                      pack(bv[0], bv[1]),
                                      pack(bv[2], bv[3]),
                                      acc[static_cast<std::size_t>(c_index[0])],
                                      acc[static_cast<std::size_t>(c_index[1])],
                                      acc[static_cast<std::size_t>(c_index[2])],
                                      acc[static_cast<std::size_t>(c_index[3])]};
    llvm::Value* d = Intrinsic(
        bf16 ? llvm::Intrinsic::nvvm_mma_m16n8k16_row_col_bf16 : llvm::Intrinsic::nvvm_mma_m16n8k16_row_col_f32_f32,
        args);
    for (int i = 0; i < 4; ++i)
      acc[static_cast<std::size_t>(c_index[i])] = b_.CreateExtractValue(d, {static_cast<unsigned>(i)});
  };
  if (ring_mma_ && ring_mma_->mma == id) {
    // Software-pipelined (MmaRing): slice s's fragments were loaded before slice s - 1's products
    // (slice 0 in the previous iteration); the ring's barrier separates the last read of this
    // iteration's slot from the first read of the next one.
    std::int64_t slices = K / 16;
    MmaRing& ring = *ring_mma_;
    std::vector<llvm::Value*> ca = ring.a0, cb = ring.b0;
    for (std::int64_t s = 0; s < slices; ++s) {
      std::vector<llvm::Value*> na(ra.size(), nullptr), nb(rb.size(), nullptr);
      if (slices == 1) {
        ring.copies(0);
        ring.barrier();
      }
      if (s + 1 < slices) {
        load_slice(m.a, na, s + 1);
        load_slice(m.b, nb, s + 1);
      } else {
        ring.slot(true);
        load_slice(m.a, na, 0);
        load_slice(m.b, nb, 0);
        ring.slot(false);
        ring.next_a0 = na;
        ring.next_b0 = nb;
      }
      if (slices > 1) ring.copies(s);
      ra = ca;
      rb = cb;
      for (std::int64_t am = 0; am < wm / 16; ++am)
        for (std::int64_t an = 0; an < wn / 8; ++an) step(am, an, 16 * s);
      if (s + 2 == slices) ring.barrier();
      ca = std::move(na);
      cb = std::move(nb);
    }
  } else if (streamed_.count(m.a.index) || streamed_.count(m.b.index)) {
    for (std::int64_t k0 = 0; k0 < K; k0 += 16) {  // slice by slice: its loads, then its products
      load_slice(m.a, ra, k0 / 16);
      load_slice(m.b, rb, k0 / 16);
      for (std::int64_t am = 0; am < wm / 16; ++am)
        for (std::int64_t an = 0; an < wn / 8; ++an) step(am, an, k0);
    }
  } else {
    for (std::int64_t am = 0; am < wm / 16; ++am)
      for (std::int64_t an = 0; an < wn / 8; ++an)
        for (std::int64_t k0 = 0; k0 < K; k0 += 16) step(am, an, k0);
  }
  slots_[result.index].regs = std::move(acc);
}

// --- sm_90a: TMA, mbarriers, wgmma ---------------------------------------------------------------

void Emitter::FindTensorMaps() {
  int stages = 0;
  for (std::uint32_t i = 0; i < k_.ops.size(); ++i) {
    OpId id{i};
    const auto* copy = std::get_if<tile::op::ToShared>(&k_.Get(id).node);
    if (!copy || !StartsWith(plan_.ops.at(i).instruction, "tma")) continue;
    stages = std::max(stages, plan_.values.at(k_.Get(id).results.at(0).index).stages);
    TensorMapIndex(id, *copy);
  }
  mbarriers_ = map_specs_.empty() ? 0 : stages + 1;  // one per slot of a ring, and one for copies in place
  for (OpId id : k_.body)
    if (const auto* store = std::get_if<tile::op::Store>(&k_.Get(id).node))
      if (auto spec = TmaStoreSpec(id, *store)) store_maps_[id.index] = AddTensorMap(*spec);
}

int Emitter::TensorMapIndex(OpId id, const tile::op::ToShared& s) {
  const synth::OpChoice& choice = plan_.ops.at(id.index);
  span_ = k_.Get(id).span;
  if (!choice.tma || choice.tma->box_dims.size() != 2) Fail("a TMA copy without a 2-D box");
  int param = ParamOf(s.src);
  if (param < 0) Fail("a TMA copy of " + Name(s.src) + ", which is not a parameter or a view of one");
  return AddTensorMap({param, choice.tma->box_dims[0], choice.tma->box_dims[1], choice.tma->swizzle});
}

int Emitter::ParamOf(ValueId value) {
  if (const tile::Value& v = Val(value); v.def.valid()) {
    const auto* view = std::get_if<tile::op::View>(&k_.Get(v.def).node);
    if (!view) return -1;
    value = view->tensor;
  }
  for (std::size_t p = 0; p < k_.params.size(); ++p)
    if (k_.params[p].value == value) return static_cast<int>(p);
  return -1;
}

std::pair<llvm::Value*, llvm::Value*> Emitter::MapCoordinates(const GlobalSlot& g) {
  std::size_t q = g.first.size();
  llvm::Value* flat = g.first[0];
  for (std::size_t i = 1; i + 1 < q; ++i) flat = b_.CreateAdd(b_.CreateMul(flat, g.extents[i]), g.first[i]);
  return {b_.CreateTrunc(g.first[q - 1], b_.getInt32Ty()), b_.CreateTrunc(flat, b_.getInt32Ty())};
}

int Emitter::AddTensorMap(const TensorMapSpec& spec) {
  for (std::size_t i = 0; i < map_specs_.size(); ++i) {
    const TensorMapSpec& m = map_specs_[i];
    if (m.param == spec.param && m.box_cols == spec.box_cols && m.box_rows == spec.box_rows &&
        m.swizzle == spec.swizzle)
      return static_cast<int>(i);
  }
  map_specs_.push_back(spec);
  return static_cast<int>(map_specs_.size() - 1);
}

llvm::Value* Emitter::Mbarrier(llvm::Value* index) {
  llvm::Value* offset = b_.CreateAdd(I32(MbarrierOffset()), b_.CreateMul(index, I32(8)));
  return b_.CreateGEP(b_.getInt8Ty(), smem_, offset);
}

llvm::Value* Emitter::SharedAddress(llvm::Value* ptr) {
  return b_.CreateTrunc(b_.CreatePtrToInt(ptr, b_.getInt64Ty()), b_.getInt32Ty());
}

void Emitter::IfThread0(llvm::Value* also, const std::function<void()>& then) {
  llvm::Value* condition = leader_ ? leader_ : b_.CreateICmpEQ(tid_, I32(0));
  if (also) condition = b_.CreateAnd(condition, also);
  llvm::BasicBlock* body = llvm::BasicBlock::Create(ctx_, "thread0", fn_);
  llvm::BasicBlock* join = llvm::BasicBlock::Create(ctx_, "all", fn_);
  b_.CreateCondBr(condition, body, join);
  b_.SetInsertPoint(body);
  then();
  b_.CreateBr(join);
  b_.SetInsertPoint(join);
}

void Emitter::WaitMbarrier(llvm::Value* bar, llvm::Value* parity) {
  llvm::BasicBlock* wait = llvm::BasicBlock::Create(ctx_, "wait", fn_);
  llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx_, "landed", fn_);
  llvm::Value* address = SharedAddress(bar);
  b_.CreateBr(wait);
  b_.SetInsertPoint(wait);
  b_.CreateCondBr(hopper::MbarrierTryWait(b_, address, parity), done, wait);
  b_.SetInsertPoint(done);
}

std::int64_t Emitter::TmaBytes(OpId id, ValueId dst) {
  const layout::TmaBox& box = *plan_.ops.at(id.index).tma;
  RowCol ext = Extent(dst);
  std::int64_t boxes = (ext.row / box.box_dims[1]) * (ext.col / box.box_dims[0]);
  return boxes * box.box_dims[0] * box.box_dims[1] * ElementBytes(Val(dst).dtype);
}

std::int64_t Emitter::LinearOffset(ValueId shared, RowCol e) {
  const auto& choice = plan_.values.at(shared.index);
  if (!choice.shared) Fail("the plan gives shared tile " + Name(shared) + " no layout");
  const layout::SwizzledLayout& l = *choice.shared;
  if (l.layout().rank() == 2) {
    auto o = l.layout().Evaluate(layout::IntTuple::Tuple({e.row, e.col}));
    if (!o) Fail("the shared layout of " + Name(shared) + " cannot place an element: " + o.error());
    return l.offset() + *o;
  }
  return l.offset() + l.layout()(e.row + Extent(shared).row * e.col);
}

// The simulator's TMA copy (sim/executor.cpp): box (r0, c0) of the tile lands at the linear offset
// of its first element; its coordinates in the 2-D map (leading axes flattened into rows) are the
// view's first element's column and flattened row plus (c0, r0).
void Emitter::EmitTma(OpId id, const tile::op::ToShared& s, ValueId dst, llvm::Value* base, llvm::Value* bar,
                      llvm::Value* live) {
  const auto& src = slots_.at(s.src.index).global;
  if (!src || src->param < 0) Fail("`shared` of " + Name(s.src) + ", which is not a view of a parameter");
  if (Val(dst).shape.size() != 2) Fail("a TMA copy into a shared tile of rank other than 2");
  const layout::TmaBox& box = *plan_.ops.at(id.index).tma;
  int map = TensorMapIndex(id, s);
  int e = ElementBytes(Val(dst).dtype);
  RowCol ext = Extent(dst);
  if (src->first.size() < 2) Fail("a TMA copy of a tensor of rank " + std::to_string(src->first.size()));
  auto [col, row] = MapCoordinates(*src);
  llvm::Value* smem = SharedAddress(smem_);
  llvm::Value* bar_address = SharedAddress(bar);
  IfThread0(live, [&] {
    for (std::int64_t r0 = 0; r0 < ext.row; r0 += box.box_dims[1])
      for (std::int64_t c0 = 0; c0 < ext.col; c0 += box.box_dims[0]) {
        llvm::Value* at = b_.CreateAdd(smem, b_.CreateAdd(base, I32(LinearOffset(dst, {r0, c0}) * e)));
        hopper::TmaLoad2d(b_, at, maps_.at(static_cast<std::size_t>(map)), b_.CreateAdd(col, I32(c0)),
                          b_.CreateAdd(row, I32(r0)), bar_address);
      }
  });
}

// A wgmma descriptor for the shared tile `shared` (A: M x K; B: K x N, read as N x K) at (mn0, k0),
// as the simulator builds it: the first canonical mode and major-ness whose strides the tile's
// layout has, with the start address of the element's unswizzled offset.
llvm::Value* Emitter::Descriptor(ValueId shared, bool is_b, const std::vector<std::int64_t>& mn0, std::int64_t k0,
                                 bool& mn_major, bool dry) {
  const auto& choice = plan_.values.at(shared.index);
  if (!choice.shared) Fail("the plan gives shared tile " + Name(shared) + " no layout");
  const layout::SwizzledLayout& l = *choice.shared;
  if (l.layout().rank() != 2) Fail("the shared layout of " + Name(shared) + " is not rank 2");
  layout::Layout mnk = l.layout();
  if (is_b)
    mnk = layout::Layout(layout::IntTuple::Tuple({l.layout().shape()[1], l.layout().shape()[0]}),
                         layout::IntTuple::Tuple({l.layout().stride()[1], l.layout().stride()[0]}));
  llvm::Value* base = slots_.at(shared.index).shared;
  if (!base && !dry) Fail(Name(shared) + " is not in shared memory");
  for (auto mode :
       {layout::SwizzleMode::k128B, layout::SwizzleMode::k64B, layout::SwizzleMode::k32B, layout::SwizzleMode::kNone}) {
    layout::Swizzle sw = l.swizzle();
    if (sw.bits() == 0) sw = *layout::SwizzleFor(layout::SwizzleMode::kNone, 2);
    layout::SwizzledLayout view(sw, l.offset(), mnk);
    for (auto major : {layout::Major::kK, layout::Major::kMN}) {
      auto d = layout::GmmaDescriptorFor(view, mode, major, 2);
      if (!d) continue;
      mn_major = major == layout::Major::kMN;
      if (dry) return nullptr;
      llvm::Value* offset = nullptr;
      llvm::Value* group = b_.CreateUDiv(tid_, I32(128));
      for (std::size_t g = mn0.size(); g-- > 0;) {
        RowCol at = is_b ? RowCol{k0, mn0[g]} : RowCol{mn0[g], k0};
        llvm::Value* here = I32(LinearOffset(shared, at) * 2);
        offset =
            offset ? b_.CreateSelect(b_.CreateICmpEQ(group, I32(static_cast<std::int64_t>(g))), here, offset) : here;
      }
      llvm::Value* start = b_.CreateAdd(SharedAddress(smem_), b_.CreateAdd(base, offset));
      llvm::Value* field = b_.CreateZExt(b_.CreateAnd(b_.CreateLShr(start, I32(4)), I32(0x3FFF)), b_.getInt64Ty());
      return b_.CreateOr(b_.getInt64(d->Encode(0)), field);
    }
  }
  Fail("the shared layout `" + layout::ToString(l) + "` of " + Name(shared) +
       " is not a canonical wgmma layout: no matrix descriptor describes it");
}

// wgmma over the plan's warpgroup tiling: per warpgroup, its 64 x n atoms, each accumulating the
// K / 16 steps; A and B from shared memory through descriptors (A from registers in the atom's A
// fragment when the plan keeps it there); one fence before, one commit and a wait for all after.
// Two 16-bit values in one i32 register, `lo` in the low half. Where both were just rounded from f32
// (a `cast` before a product), one vector conversion rounds and packs them (cvt.rn.bf16x2.f32).
llvm::Value* Emitter::Pack(llvm::Value* lo, llvm::Value* hi) {
  auto* l = llvm::dyn_cast<llvm::FPTruncInst>(lo);
  auto* h = llvm::dyn_cast<llvm::FPTruncInst>(hi);
  if (l && h && l->getType() == h->getType() && l->getSrcTy()->isFloatTy() && h->getSrcTy()->isFloatTy())
    return hopper::PackRound(b_, l->getOperand(0), h->getOperand(0), l->getType()->isBFloatTy());
  llvm::Value* lw = b_.CreateZExt(b_.CreateBitCast(lo, b_.getInt16Ty()), b_.getInt32Ty());
  llvm::Value* hw = b_.CreateZExt(b_.CreateBitCast(hi, b_.getInt16Ty()), b_.getInt32Ty());
  return b_.CreateOr(lw, b_.CreateShl(hw, I32(16)));
}

Emitter::WgmmaSteps Emitter::PrepareWgmma(OpId id, const tile::Op& op, const tile::op::Mma& m, bool dry) {
  const synth::OpChoice& choice = plan_.ops.at(id.index);
  ValueId result = op.results.at(0);
  const layout::Atom* atom = &AtomNamed(choice.instruction);
  WgmmaSteps out;
  int n = out.n = atom->n;
  bool bf16 = out.bf16 = Val(m.b).dtype == Dtype::BF16;
  if (!bf16 && Val(m.b).dtype != Dtype::F16) Fail("wgmma of `" + std::string(Spelling(Val(m.b).dtype)) + "`");
  RowCol c_ext = Extent(result);
  std::int64_t M = c_ext.row, N = c_ext.col, K = Extent(m.a).col;
  int groups = choice.warps_m * choice.warps_n;
  std::int64_t gm = M / choice.warps_m, gn = N / choice.warps_n;
  if (groups * 128 > plan_.threads || gm % 64 || gn % n || K % 16) Fail("a warpgroup tiling that is not whole atoms");
  auto shared_of = [&](ValueId v) -> std::optional<ValueId> {
    if (Val(v).space == tile::Space::Shared) return v;
    if (dry) return WgmmaReadsShared(v);
    return slots_.at(v.index).shared_alias;
  };
  std::optional<ValueId> sa = shared_of(m.a), sb = shared_of(m.b);
  if (!sb) Fail("wgmma reads B from shared memory, but the plan loads " + Name(m.b) + " into registers");
  const std::vector<llvm::Value*>* ra = nullptr;
  if (!sa && !dry) {
    ra = &slots_.at(m.a.index).regs;
    if (ra->empty()) Fail("an mma operand that is neither in shared memory nor in registers");
  }
  out.a_shared = sa.has_value();
  // Shared operands written by threads (not TMA) become visible to wgmma's async proxy.
  for (auto s : {sa, sb}) {
    if (!s || dry) continue;
    ValueId tile = *s;
    if (const tile::Value& v = Val(tile); v.def.valid())
      if (const auto* t = std::get_if<tile::op::Transpose>(&k_.Get(v.def).node)) tile = t->src;
    const tile::Value& v = Val(tile);
    if (v.def.valid() && !StartsWith(plan_.ops.at(v.def.index).instruction, "tma")) {
      hopper::FenceProxyAsync(b_);
      break;
    }
  }
  if (!dry) out.acc = SameLayoutRegs(m.acc, result, "`mma`");
  // A product into `zeros`: the first k-step writes D = A * B (scale-d 0), no registers zeroed.
  if (const tile::Value& v = Val(m.acc); v.def.valid())
    if (const auto* fill = std::get_if<tile::op::Fill>(&k_.Get(v.def).node))
      if (const tile::Value& f = Val(fill->value); f.def.valid())
        if (const auto* c = std::get_if<tile::op::Constant>(&k_.Get(f.def).node))
          out.zero = std::visit([](auto x) { return x == decltype(x){}; }, c->value);
  // Each warpgroup's top-left element of the accumulator.
  const FlatTv& fr = Flat(Tv(result));
  std::vector<RowCol> origins;
  for (int g = 0; g < groups; ++g) {
    RowCol o{fr.rows, Tv(result).cols};
    for (std::int64_t t = g * 128; t < (g + 1) * 128; ++t)
      for (std::int64_t v = 0; v < fr.values; ++v) {
        RowCol e = fr.At(t, v);
        o.row = std::min(o.row, e.row);
        o.col = std::min(o.col, e.col);
      }
    origins.push_back(o);
  }
  auto origin = [&](std::int64_t t) {
    return origins[static_cast<std::size_t>(std::min<std::int64_t>(t / 128, groups - 1))];
  };
  const FlatTv& fa = Flat(atom->Operand("A")->tv);
  const FlatTv& fc = Flat(atom->Operand("C")->tv);
  std::string what = "`" + choice.instruction + "`";
  out.k_steps = K / 16;
  for (std::int64_t am = 0; am < gm / 64; ++am)
    for (std::int64_t an = 0; an < gn / n; ++an) {
      // Every warpgroup runs the same atoms at its own origin: the thread's registers are the same.
      std::vector<int>& c_index = out.c_index.emplace_back(static_cast<std::size_t>(n / 2));
      for (int i = 0; i < n / 2; ++i)
        c_index[static_cast<std::size_t>(i)] = UniformValue(
            result,
            [&, i](std::int64_t t) {
              RowCol o = origin(t), e = fc.At(t % 128, i);
              return RowCol{o.row + 64 * am + e.row, o.col + n * an + e.col};
            },
            what);
      // Each warpgroup's operand tiles start at its own origin.
      std::vector<std::int64_t> m0, n0;
      for (const RowCol& o : origins) {
        m0.push_back(o.row + 64 * am);
        n0.push_back(o.col + n * an);
      }
      for (std::int64_t k0 = 0; k0 < K; k0 += 16) {
        bool b_mn = false, a_mn = false;
        llvm::Value* bd = Descriptor(*sb, true, n0, k0, b_mn, dry);
        if (sa) {
          llvm::Value* ad = Descriptor(*sa, false, m0, k0, a_mn, dry);
          if (!dry) out.operands.push_back(ad);
        } else if (!dry) {
          llvm::Value* a[8];
          for (int i = 0; i < 8; ++i) {
            int idx = UniformValue(
                m.a,
                [&, i](std::int64_t t) {
                  RowCol e = fa.At(t % 128, i);
                  return RowCol{origin(t).row + 64 * am + e.row, k0 + e.col};
                },
                what);
            a[i] = (*ra)[static_cast<std::size_t>(idx)];
          }
          for (int i = 0; i < 8; i += 2) out.operands.push_back(Pack(a[i], a[i + 1]));
        }
        if (!dry) out.operands.push_back(bd);
        out.a_mn.push_back(a_mn);
        out.b_mn.push_back(b_mn);
      }
    }
  return out;
}

std::vector<llvm::Value*> Emitter::IssueWgmma(const WgmmaSteps& s, std::vector<llvm::Value*> acc,
                                              const std::vector<llvm::Value*>& operands) {
  std::size_t next = 0, step = 0;
  for (const std::vector<int>& c_index : s.c_index) {
    std::vector<llvm::Value*> c;
    for (int i : c_index) c.push_back(acc[static_cast<std::size_t>(i)]);
    for (std::int64_t k = 0; k < s.k_steps; ++k, ++step) {
      llvm::Value* ad = nullptr;
      std::vector<llvm::Value*> a_regs;
      if (s.a_shared)
        ad = operands[next++];
      else
        for (int i = 0; i < 4; ++i) a_regs.push_back(operands[next++]);
      llvm::Value* bd = operands[next++];
      c = hopper::Wgmma(b_, s.n, s.bf16, c, ad, a_regs, bd, s.a_mn[step], s.b_mn[step], !(s.zero && k == 0));
    }
    for (std::size_t i = 0; i < c_index.size(); ++i) acc[static_cast<std::size_t>(c_index[i])] = c[i];
  }
  return acc;
}

// wgmma over the plan's warpgroup tiling (PrepareWgmma, IssueWgmma): one fence before, one commit
// and a wait for all after. A staged product (Staged) is only prepared here, and issued in the next
// iteration right after that iteration's first waited product (StageFlush).
void Emitter::EmitWgmma(OpId id, const tile::Op& op, const tile::op::Mma& m) {
  ValueId result = op.results.at(0);
  WgmmaSteps s = PrepareWgmma(id, op, m);
  if (staged_ && staged_->mma == id) {  // issued in the next iteration (Staged)
    staged_->next_acc = s.acc;
    staged_->next_operands = s.operands;
    return;
  }
  if (s.zero)
    for (auto& x : s.acc) x = llvm::UndefValue::get(x->getType());
  // Ping-pong: wait for this warpgroup's turn at the tensor cores (named barrier 2 + its index).
  bool turn = turns_ && !deferred_wgmma_.count(id.index);
  llvm::Value* group = turn ? b_.CreateLShr(tid_, I32(7)) : nullptr;
  if (turn) Intrinsic(llvm::Intrinsic::nvvm_barrier_sync_cnt, {b_.CreateAdd(I32(2), group), I32(plan_.threads)});
  hopper::WgmmaFence(b_);
  std::vector<llvm::Value*> acc = IssueWgmma(s, s.acc, s.operands);
  hopper::WgmmaCommit(b_);
  // The previous iteration's staged product runs behind this one (and the vector work after it).
  bool flushed = staged_ && staged_->in_body && !staged_->issued;
  if (flushed) StageFlush();
  // The products are issued: the other warpgroup's turn. No branch between the products and their
  // wait (ptxas serializes wgmma around a divergent path); consumer 1's last hand-over is taken by
  // consumer 0 after the loop.
  if (turn) hopper::BarArrive(b_, b_.CreateSub(I32(3), group), I32(plan_.threads));
  if (deferred_wgmma_.count(id.index)) {
    hopper::WgmmaWait(b_, 1);  // the previous iteration's products are done, these may run on
    slots_[result.index].regs = std::move(acc);
    return;
  }
  hopper::WgmmaWait(b_, flushed ? 1 : 0);
  slots_[result.index].regs = hopper::FenceOperands(b_, acc);
}

llvm::Value* Emitter::Fresh(ValueId v, const std::set<std::uint32_t>& body, int depth) {
  const tile::Value& value = Val(v);
  if (depth > 32 || value.space != tile::Space::Scalar) return nullptr;
  if (!value.def.valid() || !body.count(value.def.index)) return slots_.at(v.index).scalar;
  const tile::Op& def = k_.Get(value.def);
  const auto* s = std::get_if<tile::op::ScalarOp>(&def.node);
  if (!s && !std::holds_alternative<tile::op::Constant>(def.node)) return nullptr;
  if (s)
    for (ValueId a : s->args)
      if (!Fresh(a, body, depth + 1)) return nullptr;
  EmitOp(value.def);
  return slots_.at(v.index).scalar;
}

std::optional<std::pair<llvm::Value*, llvm::Value*>> Emitter::IntBounds(ValueId v, const std::set<std::uint32_t>& body,
                                                                        int depth) {
  const tile::Value& value = Val(v);
  if (depth > 32 || IsFloat(value.dtype) || value.dtype == Dtype::Bool) return std::nullopt;
  auto wide = [&](llvm::Value* x) { return b_.CreateSExtOrTrunc(x, b_.getInt64Ty()); };
  if (value.space == tile::Space::Scalar) {
    llvm::Value* x = Fresh(v, body, depth + 1);
    if (!x) return std::nullopt;
    return std::pair{wide(x), wide(x)};
  }
  if (value.space != tile::Space::Reg || !value.def.valid()) return std::nullopt;
  const tile::Op& def = k_.Get(value.def);
  if (const auto* iota = std::get_if<tile::op::Iota>(&def.node)) return std::pair{I64(0), I64(iota->n - 1)};
  if (const auto* e = std::get_if<tile::op::Expand>(&def.node)) return IntBounds(e->src, body, depth + 1);
  if (const auto* f = std::get_if<tile::op::Fill>(&def.node)) return IntBounds(f->value, body, depth + 1);
  const auto* m = std::get_if<tile::op::Map>(&def.node);
  if (!m || m->args.size() != 2) return std::nullopt;
  auto a = IntBounds(m->args[0], body, depth + 1);
  auto b = a ? IntBounds(m->args[1], body, depth + 1) : std::nullopt;
  if (!b) return std::nullopt;
  if (m->fn == "+") return std::pair{b_.CreateAdd(a->first, b->first), b_.CreateAdd(a->second, b->second)};
  if (m->fn == "-") return std::pair{b_.CreateSub(a->first, b->second), b_.CreateSub(a->second, b->first)};
  if (m->fn == "*") {
    llvm::Value* p[4] = {b_.CreateMul(a->first, b->first), b_.CreateMul(a->first, b->second),
                         b_.CreateMul(a->second, b->first), b_.CreateMul(a->second, b->second)};
    llvm::Value *lo = p[0], *hi = p[0];
    for (int i = 1; i < 4; ++i) {
      lo = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, lo, p[i]);
      hi = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, hi, p[i]);
    }
    return std::pair{lo, hi};
  }
  return std::nullopt;
}

llvm::Value* Emitter::AllTrue(ValueId v, const std::set<std::uint32_t>& body, int depth) {
  const tile::Value& value = Val(v);
  if (depth > 32 || value.dtype != Dtype::Bool) return nullptr;
  if (value.space == tile::Space::Scalar) return Fresh(v, body, depth + 1);
  if (value.space != tile::Space::Reg || !value.def.valid()) return nullptr;
  const auto* m = std::get_if<tile::op::Map>(&k_.Get(value.def).node);
  if (!m || m->args.size() != 2) return nullptr;
  if (m->fn == "||" || m->fn == "&&") {
    llvm::Value* a = AllTrue(m->args[0], body, depth + 1);
    llvm::Value* b = AllTrue(m->args[1], body, depth + 1);
    if (m->fn == "&&") return a && b ? b_.CreateAnd(a, b) : nullptr;
    for (llvm::Value* x : {a, b})
      if (auto* k = llvm::dyn_cast_or_null<llvm::ConstantInt>(x); k && k->isOne()) return k;
    if (!a || !b) return a ? a : b;
    return b_.CreateOr(a, b);
  }
  static const std::map<std::string, llvm::CmpInst::Predicate> compares = {{"<=", llvm::CmpInst::ICMP_SLE},
                                                                           {"<", llvm::CmpInst::ICMP_SLT},
                                                                           {">=", llvm::CmpInst::ICMP_SGE},
                                                                           {">", llvm::CmpInst::ICMP_SGT}};
  auto c = compares.find(m->fn);
  if (c == compares.end()) return nullptr;
  auto a = IntBounds(m->args[0], body, depth + 1);
  auto b = a ? IntBounds(m->args[1], body, depth + 1) : std::nullopt;
  if (!b) return nullptr;
  bool less = c->second == llvm::CmpInst::ICMP_SLE || c->second == llvm::CmpInst::ICMP_SLT;
  // Every a <= b: the largest a against the smallest b (and the other way for >=).
  return less ? b_.CreateICmp(c->second, a->second, b->first) : b_.CreateICmp(c->second, a->first, b->second);
}

std::optional<ValueId> Emitter::WgmmaReadsShared(ValueId v) const {
  if (Val(v).space == tile::Space::Shared) return v;
  const tile::Value& value = Val(v);
  if (!value.def.valid()) return std::nullopt;
  const auto* r = std::get_if<tile::op::ToRegs>(&k_.Get(value.def).node);
  if (!r) return std::nullopt;
  if (StartsWith(plan_.ops.at(value.def.index).instruction, "none") || !plan_.values.at(v.index).regs) return r->src;
  return std::nullopt;
}

void Emitter::StageFlush() {
  Staged& s = *staged_;
  const tile::Op& op = k_.Get(s.mma);
  ValueId y = op.results.at(0), c = std::get<tile::op::Loop>(k_.Get(specialized_->loop).node).carried.at(s.carried);
  slots_[y.index].regs = IssueWgmma(s.shape, s.acc, s.operands);
  hopper::WgmmaCommit(b_);
  slots_[c.index].regs = SameLayoutRegs(y, c, "the staged product");
  s.issued = s.pending = true;
}

void Emitter::StageWait() {
  Staged& s = *staged_;
  ValueId c = std::get<tile::op::Loop>(k_.Get(specialized_->loop).node).carried.at(s.carried);
  hopper::WgmmaWait(b_, 0);
  // A's registers stay live up to the wait (the product reads them as it runs).
  std::vector<llvm::Value*> both = slots_[c.index].regs;
  std::size_t n = both.size();
  for (llvm::Value* x : s.operands)
    if (x->getType()->isIntegerTy(32)) both.push_back(x);
  both = hopper::FenceOperands(b_, both);
  slots_[c.index].regs.assign(both.begin(), both.begin() + static_cast<std::ptrdiff_t>(n));
  s.pending = false;
}

std::vector<llvm::Value*> Emitter::SameLayoutRegs(ValueId src, ValueId dst, std::string_view what) {
  const TvLayout& a = Tv(src);
  const TvLayout& b = Tv(dst);
  const auto& regs = slots_.at(src.index).regs;
  if (regs.empty()) Fail(Name(src) + " is not in registers");
  if (a.layout == b.layout && a.rows == b.rows && a.cols == b.cols) return regs;
  // Same elements per thread in another order: rename.
  const FlatTv& fb = Flat(b);
  std::vector<llvm::Value*> out(static_cast<std::size_t>(fb.values));
  for (std::int64_t v = 0; v < fb.values; ++v)
    out[static_cast<std::size_t>(v)] = regs[static_cast<std::size_t>(UniformValue(
        src, [&](std::int64_t t) { return fb.At(t, v); }, what))];
  return out;
}

// The element of operand `a` that element `e` of a rank-`result_rank` result reads: NumPy's
// broadcasting, axes aligned at the end (a rank-1 tile is n x 1).
RowCol BroadcastElement(RowCol e, int result_rank, RowCol a_ext, int a_rank) {
  std::vector<std::int64_t> idx =
      result_rank == 1 ? std::vector<std::int64_t>{e.row} : std::vector<std::int64_t>{e.row, e.col};
  std::vector<std::int64_t> shape =
      a_rank == 1 ? std::vector<std::int64_t>{a_ext.row} : std::vector<std::int64_t>{a_ext.row, a_ext.col};
  std::vector<std::int64_t> out(shape.size(), 0);
  for (std::size_t i = 0; i < shape.size(); ++i) out[i] = shape[i] == 1 ? 0 : idx[i + idx.size() - shape.size()];
  return a_rank == 1 ? RowCol{out[0], 0} : RowCol{out[0], out[1]};
}

llvm::Value* Emitter::Elementwise(const std::string& fn, Dtype d, const std::vector<llvm::Value*>& x) {
  bool f = IsFloat(d);
  bool s = IsSigned(d);
  auto binary_intrinsic = [&](llvm::Intrinsic::ID id) { return b_.CreateBinaryIntrinsic(id, x[0], x[1]); };
  if (x.size() == 2) {
    if (fn == "+") return f ? b_.CreateFAdd(x[0], x[1]) : b_.CreateAdd(x[0], x[1]);
    if (fn == "-") return f ? b_.CreateFSub(x[0], x[1]) : b_.CreateSub(x[0], x[1]);
    if (fn == "*") return f ? b_.CreateFMul(x[0], x[1]) : b_.CreateMul(x[0], x[1]);
    if (fn == "/") return f ? b_.CreateFDiv(x[0], x[1]) : (s ? b_.CreateSDiv(x[0], x[1]) : b_.CreateUDiv(x[0], x[1]));
    if (fn == "%") return f ? b_.CreateFRem(x[0], x[1]) : (s ? b_.CreateSRem(x[0], x[1]) : b_.CreateURem(x[0], x[1]));
    if (fn == "==") return f ? b_.CreateFCmpOEQ(x[0], x[1]) : b_.CreateICmpEQ(x[0], x[1]);
    if (fn == "!=") return f ? b_.CreateFCmpUNE(x[0], x[1]) : b_.CreateICmpNE(x[0], x[1]);
    if (fn == "<")
      return f ? b_.CreateFCmpOLT(x[0], x[1]) : (s ? b_.CreateICmpSLT(x[0], x[1]) : b_.CreateICmpULT(x[0], x[1]));
    if (fn == "<=")
      return f ? b_.CreateFCmpOLE(x[0], x[1]) : (s ? b_.CreateICmpSLE(x[0], x[1]) : b_.CreateICmpULE(x[0], x[1]));
    if (fn == ">")
      return f ? b_.CreateFCmpOGT(x[0], x[1]) : (s ? b_.CreateICmpSGT(x[0], x[1]) : b_.CreateICmpUGT(x[0], x[1]));
    if (fn == ">=")
      return f ? b_.CreateFCmpOGE(x[0], x[1]) : (s ? b_.CreateICmpSGE(x[0], x[1]) : b_.CreateICmpUGE(x[0], x[1]));
    if (fn == "&&") return b_.CreateAnd(x[0], x[1]);
    if (fn == "||") return b_.CreateOr(x[0], x[1]);
    // The interpreter's maximum and minimum: NaN propagates, -0 < +0 (max.NaN / min.NaN).
    if (fn == "maximum")
      return binary_intrinsic(f ? llvm::Intrinsic::maximum : s ? llvm::Intrinsic::smax : llvm::Intrinsic::umax);
    if (fn == "minimum")
      return binary_intrinsic(f ? llvm::Intrinsic::minimum : s ? llvm::Intrinsic::smin : llvm::Intrinsic::umin);
  }
  if (x.size() == 3 && fn == "select") return b_.CreateSelect(x[0], x[1], x[2]);
  if (x.size() == 1) {
    if (fn == "negate") return f ? b_.CreateFNeg(x[0]) : b_.CreateNeg(x[0]);
    if (fn == "abs" && f) return b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x[0]);
    if (fn == "sqrt" && f) return b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x[0]);
    if (fn == "exp" && d == Dtype::F32) {
      // 2^(x log2 e) on the special function unit, results below 2^-126 flushed to zero
      // (ex2.approx.ftz: one MUFU.EX2; without .ftz ptxas adds three instructions an exp to
      // keep subnormal results, a third of a softmax's instructions).
      llvm::Value* log2e = llvm::ConstantFP::get(b_.getFloatTy(), 1.4426950408889634);
      auto binary = [](llvm::Value* v, unsigned opcode) {
        auto* op = llvm::dyn_cast<llvm::BinaryOperator>(v);
        return op && op->getOpcode() == opcode ? op : nullptr;
      };
      // exp ((a - b) * c), softmax's shape with b a row's maximum and c the scale (c = 1 without
      // the product): fma (a, c log2 e, -(b c log2 e)), one instruction a value, b c log2 e shared
      // by the row (FlashAttention's exp2 of a fused scale).
      llvm::Value* arg = x[0];
      if (auto* mul = binary(arg, llvm::Instruction::FMul))
        for (unsigned i = 0; i < 2; ++i)
          if (binary(mul->getOperand(i), llvm::Instruction::FSub)) {
            log2e = b_.CreateFMul(mul->getOperand(1 - i), log2e);
            arg = mul->getOperand(i);
            break;
          }
      llvm::Value* scaled = nullptr;
      if (auto* sub = binary(arg, llvm::Instruction::FSub)) {
        llvm::Value* shift = b_.CreateFNeg(b_.CreateFMul(sub->getOperand(1), log2e));
        scaled = b_.CreateIntrinsic(llvm::Intrinsic::fma, {b_.getFloatTy()}, {sub->getOperand(0), log2e, shift});
      } else {
        scaled = b_.CreateFMul(x[0], llvm::ConstantFP::get(b_.getFloatTy(), 1.4426950408889634));
      }
      return Intrinsic(llvm::Intrinsic::nvvm_ex2_approx_ftz_f, {scaled});
    }
    // The others (and exp of bf16, f16) as the array kernels compute them: in f32 (math.h).
    if (f && d != Dtype::F64 && math::HasUnary(fn)) {
      llvm::Value* a = d == Dtype::F32 ? x[0] : b_.CreateFPExt(x[0], b_.getFloatTy());
      llvm::Value* r = math::Unary(b_, fn, a);
      return d == Dtype::F32 ? r : b_.CreateFPTrunc(r, x[0]->getType());
    }
  }
  Fail("the elementwise function `" + fn + "` on `" + std::string(Spelling(d)) + "`");
}

void Emitter::EmitMap(const tile::op::Map& m, ValueId result) {
  // The operands' dtype: select's comes from its second operand (the first is the condition).
  Dtype d = Val(m.args.at(m.fn == "select" ? 1 : 0)).dtype;
  const FlatTv& fr = Flat(Tv(result));
  RowCol ext = Extent(result);
  int rank = static_cast<int>(Val(result).shape.size());
  std::vector<std::vector<llvm::Value*>> args;
  for (ValueId a : m.args) {
    std::vector<llvm::Value*> per(static_cast<std::size_t>(fr.values));
    if (Val(a).space == tile::Space::Scalar) {
      std::fill(per.begin(), per.end(), Scalar(a));
    } else {
      RowCol ae = Extent(a);
      int a_rank = static_cast<int>(Val(a).shape.size());
      for (std::int64_t v = 0; v < fr.values; ++v) {
        int idx = UniformValue(
            a, [&](std::int64_t t) { return BroadcastElement(fr.At(t, v), rank, ae, a_rank); }, "`" + m.fn + "`");
        per[static_cast<std::size_t>(v)] = slots_.at(a.index).regs.at(static_cast<std::size_t>(idx));
      }
    }
    args.push_back(std::move(per));
  }
  (void)ext;
  std::vector<llvm::Value*> out;
  for (std::int64_t v = 0; v < fr.values; ++v) {
    std::vector<llvm::Value*> x;
    for (const auto& a : args) x.push_back(a[static_cast<std::size_t>(v)]);
    out.push_back(Elementwise(m.fn, d, x));
  }
  slots_[result.index].regs = std::move(out);
}

void Emitter::EmitReduce(const tile::op::Reduce& red, ValueId result) {
  ValueId src = red.src;
  Dtype d = Val(src).dtype;
  bool f = IsFloat(d);
  if ((f && d != Dtype::F32 && d != Dtype::F64) || d == Dtype::Bool || Bits(d) < 8)
    Fail("a reduction of `" + std::string(Spelling(d)) + "`");
  // Integers wrap as the interpreter's do; max and min compare signed or unsigned by the dtype.
  int bytes = std::max(4, ElementBytes(d));  // a slot of the scratch memory
  if (Val(src).shape.size() != 2) Fail("a reduction of a tile of rank other than 2");
  const FlatTv& fs = Flat(Tv(src));
  const FlatTv& fd = Flat(Tv(result));
  auto combine = [&](llvm::Value* a, llvm::Value* b) -> llvm::Value* {
    bool s = IsSigned(d);
    if (red.fn == "sum") return f ? b_.CreateFAdd(a, b) : b_.CreateAdd(a, b);
    if (red.fn == "max")
      return b_.CreateBinaryIntrinsic(f   ? llvm::Intrinsic::maximum
                                      : s ? llvm::Intrinsic::smax
                                          : llvm::Intrinsic::umax,
                                      a, b);
    if (red.fn == "min")
      return b_.CreateBinaryIntrinsic(f   ? llvm::Intrinsic::minimum
                                      : s ? llvm::Intrinsic::smin
                                          : llvm::Intrinsic::umin,
                                      a, b);
    Fail("the reduction `" + red.fn + "`");
  };
  // shfl.sync.bfly moves 32 bits: wider values in 32-bit halves, narrower ones widened.
  auto shuffle = [&](llvm::Value* x, int mask) -> llvm::Value* {
    auto bfly = [&](llvm::Value* w) {
      return Intrinsic(llvm::Intrinsic::nvvm_shfl_sync_bfly_i32, {I32(-1), w, I32(mask), I32(31)});
    };
    if (d == Dtype::F32) return Intrinsic(llvm::Intrinsic::nvvm_shfl_sync_bfly_f32, {I32(-1), x, I32(mask), I32(31)});
    if (Bits(d) == 64) {
      auto* halves = llvm::FixedVectorType::get(b_.getInt32Ty(), 2);
      llvm::Value* v = b_.CreateBitCast(x, halves);
      v = b_.CreateInsertElement(v, bfly(b_.CreateExtractElement(v, std::uint64_t{0})), std::uint64_t{0});
      v = b_.CreateInsertElement(v, bfly(b_.CreateExtractElement(v, std::uint64_t{1})), std::uint64_t{1});
      return b_.CreateBitCast(v, x->getType());
    }
    if (Bits(d) == 32) return bfly(x);
    return b_.CreateTrunc(bfly(b_.CreateZExt(x, b_.getInt32Ty())), x->getType());
  };
  // 1. Each thread combines its values row by row: slot k is the k-th row it meets. Which value
  // indices form each slot must be the same in every thread (the rows may differ).
  std::vector<std::vector<std::int64_t>> rows(static_cast<std::size_t>(fs.threads));
  std::vector<int> slot_of_value;  // thread 0's, checked against every thread's
  for (std::int64_t t = 0; t < fs.threads; ++t) {
    std::vector<int> slots;
    std::set<std::int64_t> seen;
    for (std::int64_t v = 0; v < fs.values; ++v) {
      RowCol e = fs.At(t, v);
      if (!seen.insert(e.row + fs.rows * e.col).second) {
        slots.push_back(-1);  // a broadcast copy
        continue;
      }
      auto& r = rows[static_cast<std::size_t>(t)];
      auto it = std::find(r.begin(), r.end(), e.row);
      if (it == r.end()) r.push_back(e.row), it = r.end() - 1;
      slots.push_back(static_cast<int>(it - r.begin()));
    }
    if (t == 0) slot_of_value = slots;
    if (slots != slot_of_value) Fail("`" + red.fn + "` of a tile whose threads hold their rows in different registers");
  }
  // Pairwise, a tree of depth log2 of the values a row: a softmax row's 32 maxima a thread take 5
  // dependent steps, not 31.
  const auto& src_regs = slots_.at(src.index).regs;
  std::vector<std::vector<llvm::Value*>> terms(rows[0].size());
  for (std::size_t v = 0; v < slot_of_value.size(); ++v)
    if (int k = slot_of_value[v]; k >= 0) terms[static_cast<std::size_t>(k)].push_back(src_regs[v]);
  std::vector<llvm::Value*> partial;
  for (std::vector<llvm::Value*>& level : terms) {
    while (level.size() > 1) {
      std::vector<llvm::Value*> next;
      for (std::size_t i = 0; i + 1 < level.size(); i += 2) next.push_back(combine(level[i], level[i + 1]));
      if (level.size() % 2) next.push_back(level.back());
      level = std::move(next);
    }
    partial.push_back(level.at(0));
  }
  // 2. Across the lanes of a warp that hold the same rows: butterfly shuffles.
  for (int mask = 1; mask < 32; mask <<= 1) {
    bool partner = true;
    for (std::int64_t t = 0; t < fs.threads && partner; ++t)
      partner = rows[static_cast<std::size_t>(t)] == rows[static_cast<std::size_t>((t & ~31) | ((t & 31) ^ mask))];
    if (!partner) continue;
    for (auto& p : partial) {
      p = combine(p, shuffle(p, mask));
    }
  }
  // 3. Across warps: the first lane of each warp holding a row writes its partial to scratch shared
  // memory at (row, warp); every thread then combines the partials of the warps holding its rows,
  // in warp order.
  std::map<std::int64_t, std::vector<std::int64_t>> warps_of_row;
  for (std::int64_t t = 0; t < fs.threads; ++t)
    for (std::int64_t r : rows[static_cast<std::size_t>(t)]) {
      auto& ws = warps_of_row[r];
      if (std::find(ws.begin(), ws.end(), t / 32) == ws.end()) ws.push_back(t / 32);
    }
  bool cross = false;
  for (const auto& [r, ws] : warps_of_row) cross |= ws.size() > 1;
  if (cross) {
    std::int64_t warps = fs.threads / 32;
    llvm::Value* scratch = Scratch(fs.rows * warps * bytes);
    llvm::Value* warp = b_.CreateUDiv(tid_, I32(32));
    for (std::size_t k = 0; k < partial.size(); ++k) {
      std::vector<std::int64_t> row(static_cast<std::size_t>(fs.threads)), first(row.size());
      for (std::int64_t t = 0; t < fs.threads; ++t) {
        std::int64_t r = rows[static_cast<std::size_t>(t)][k];
        row[static_cast<std::size_t>(t)] = r;
        bool is_first = true;
        for (std::int64_t u = t & ~31; u < t; ++u) {
          const auto& ru = rows[static_cast<std::size_t>(u)];
          if (std::find(ru.begin(), ru.end(), r) != ru.end()) is_first = false;
        }
        first[static_cast<std::size_t>(t)] = is_first;
      }
      llvm::Value* r = ThreadTable(row);
      llvm::Value* at =
          b_.CreateAdd(scratch, b_.CreateMul(b_.CreateAdd(b_.CreateMul(r, I32(warps)), warp), I32(bytes)));
      StoreIf(b_.CreateICmpNE(ThreadTable(first), I32(0)), partial[k], at);
    }
    Barrier();
    for (std::size_t k = 0; k < partial.size(); ++k) {
      std::size_t count = warps_of_row[rows[0][k]].size();
      std::vector<std::vector<std::int64_t>> warp_i(count,
                                                    std::vector<std::int64_t>(static_cast<std::size_t>(fs.threads)));
      std::vector<std::int64_t> row(static_cast<std::size_t>(fs.threads));
      for (std::int64_t t = 0; t < fs.threads; ++t) {
        std::int64_t rr = rows[static_cast<std::size_t>(t)][k];
        row[static_cast<std::size_t>(t)] = rr;
        const auto& ws = warps_of_row[rr];
        if (ws.size() != count) Fail("`" + red.fn + "` of rows held by different numbers of warps");
        for (std::size_t i = 0; i < count; ++i) warp_i[i][static_cast<std::size_t>(t)] = ws[i];
      }
      llvm::Value* r = ThreadTable(row);
      llvm::Value* acc = nullptr;
      for (std::size_t i = 0; i < count; ++i) {
        llvm::Value* at = b_.CreateAdd(
            scratch, b_.CreateMul(b_.CreateAdd(b_.CreateMul(r, I32(warps)), ThreadTable(warp_i[i])), I32(bytes)));
        llvm::Value* x = b_.CreateAlignedLoad(ElemType(d), b_.CreateGEP(b_.getInt8Ty(), smem_, at),
                                              llvm::Align(static_cast<std::uint64_t>(ElementBytes(d))));
        acc = acc ? combine(acc, x) : x;
      }
      partial[k] = acc;
    }
    Barrier();  // the scratch memory may be reused
  }
  // 4. The result: each value is the slot of the row its layout gives the thread.
  std::vector<llvm::Value*> out;
  for (std::int64_t v = 0; v < fd.values; ++v) {
    int k = -1;
    for (std::int64_t t = 0; t < fd.threads; ++t) {
      const auto& r = rows[static_cast<std::size_t>(t)];
      auto it = std::find(r.begin(), r.end(), fd.At(t, v).row);
      int slot = it == r.end() ? -2 : static_cast<int>(it - r.begin());
      if (slot < 0 || (k >= 0 && slot != k)) Fail("`" + red.fn + "` whose result layout does not match its rows");
      k = slot;
    }
    out.push_back(partial.at(static_cast<std::size_t>(k)));
  }
  slots_[result.index].regs = std::move(out);
}

void Emitter::EmitStore(OpId id, const tile::op::Store& s) {
  if (auto it = store_maps_.find(id.index); it != store_maps_.end()) return EmitTmaStore(id, s, it->second);
  const synth::OpChoice& choice = plan_.ops.at(id.index);
  const auto& dst = slots_.at(s.dst.index).global;
  if (!dst) Fail("`store` into " + Name(s.dst) + ", which is not a global tile");
  if (Val(s.src).space != tile::Space::Reg) Fail("`store` of a shared tile");
  Dtype d = Val(s.src).dtype;
  int e = ElementBytes(d);
  int rank = static_cast<int>(Val(s.src).shape.size());
  if (rank != 2) Fail("`store` of a tile of rank other than 2");
  llvm::Type* gptr = llvm::PointerType::get(ctx_, 1);
  llvm::Value* ld = dst->strides[dst->extents.size() - 2];
  const auto& regs = slots_.at(s.src.index).regs;
  auto address = [&](llvm::Value* row, llvm::Value* col) {
    llvm::Value* off =
        b_.CreateAdd(b_.CreateMul(b_.CreateZExt(row, b_.getInt64Ty()), ld), b_.CreateZExt(col, b_.getInt64Ty()));
    return b_.CreateIntToPtr(b_.CreateAdd(dst->address, b_.CreateMul(off, I64(e))), gptr);
  };
  if (choice.copy && choice.vector_bytes > 0) {
    const TvLayout& copy = *choice.copy;
    for (std::int64_t v = 0; v < Flat(copy).values; ++v) {
      auto [row, col] = TvElement(copy, v);
      b_.CreateAlignedStore(StoreVector(s.src, choice, v), address(row, col),
                            llvm::Align(static_cast<std::uint64_t>(choice.vector_bytes)));
    }
    return;
  }
  // Each element by the thread that holds it: the layout's own elements, one store each.
  const TvLayout& tv = Tv(s.src);
  for (std::int64_t v = 0; v < Flat(tv).values; ++v) {
    auto [row, col] = TvElement(tv, v);
    b_.CreateAlignedStore(regs.at(static_cast<std::size_t>(v)), address(row, col),
                          llvm::Align(static_cast<std::uint64_t>(e)));
  }
}

llvm::Value* Emitter::StoreVector(ValueId src, const synth::OpChoice& choice, std::int64_t v) {
  Dtype d = Val(src).dtype;
  int n = choice.vector_bytes / ElementBytes(d);
  int rank = static_cast<int>(Val(src).shape.size());
  const FlatTv& fc = Flat(*choice.copy);
  const auto& regs = slots_.at(src.index).regs;
  llvm::Value* vec = llvm::UndefValue::get(llvm::FixedVectorType::get(ElemType(d), static_cast<unsigned>(n)));
  for (int i = 0; i < n; ++i) {
    int idx = UniformValue(
        src, [&](std::int64_t t) { return Advance(fc.At(t, v), i, rank); }, "`store`");
    vec = b_.CreateInsertElement(vec, regs.at(static_cast<std::size_t>(idx)), static_cast<std::uint64_t>(i));
  }
  return vec;
}

// --- TMA-store epilogues ---

bool Emitter::ExtentMultiple(const core::Dim& d, std::int64_t multiple) const {
  if (auto c = d.AsConstant()) return *c % multiple == 0;
  for (const core::DimFact& f : k_.where) {
    if (f.relation != core::RelOp::kEq || !f.rhs.IsZero()) continue;
    for (std::int64_t m = multiple; m <= 4096; m += multiple)
      if (auto mod = core::Mod(d, m); mod && *mod == f.lhs) return true;
  }
  return false;
}

std::optional<TensorMapSpec> Emitter::TmaStoreSpec(OpId id, const tile::op::Store& s) {
  // Persistent kernels' producers run into the next block's copies over the same bytes.
  if (plan_.target != synth::Target::Sm90a || !lowering_.tma_store) return std::nullopt;
  const tile::Value& src = Val(s.src);
  if (src.space != tile::Space::Reg || src.shape.size() != 2) return std::nullopt;
  int e = ElementBytes(src.dtype);
  const synth::OpChoice& choice = plan_.ops.at(id.index);
  if ((e != 2 && e != 4) || !choice.copy || choice.vector_bytes <= 0 || 16 % choice.vector_bytes) return std::nullopt;
  // Only where each thread's stores write under 8 bytes, so a quad's fill less than a 32-byte
  // sector (bf16 and f16 accumulators): there the boxes' whole lines pay (gemm_bf16_bf16 2048^3
  // 1.22x faster on an H200); 8-byte stores fill sectors already, and the barrier and the wait for
  // the boxes to be read cost more (attention_d128 with f32 outputs, 1k tokens: 5% slower).
  if (choice.vector_bytes >= 8) return std::nullopt;
  // Boxes of 128 bytes a row (the widest the 128-byte swizzle takes) side by side, at most 256
  // rows, over the plan's tiles.
  RowCol ext = Extent(s.src);
  std::int64_t box_cols = 128 / e;
  if (ext.row % 8 || ext.row > 256 || ext.col % box_cols || ext.row * ext.col * e > plan_.shared_bytes)
    return std::nullopt;
  // The `out` tensor: a parameter or a `tile` of one, its rows whole multiples of 16 bytes (the
  // tensor map's stride) whatever sizes the kernel admits.
  int param = ParamOf(s.dst);
  if (param < 0) return std::nullopt;
  const auto& shape = Val(k_.params[static_cast<std::size_t>(param)].value).shape;
  if (shape.size() < 2 || !ExtentMultiple(shape.back(), 16 / e)) return std::nullopt;
  // No op after it touches shared memory.
  bool after = false;
  for (OpId op : k_.body) {
    if (op == id) after = true;
    if (!after || op == id) continue;
    const tile::Op& o = k_.Get(op);
    if (std::holds_alternative<tile::op::Loop>(o.node)) return std::nullopt;
    for (ValueId v : tile::Operands(o))
      if (Val(v).space == tile::Space::Shared) return std::nullopt;
    for (ValueId v : o.results)
      if (Val(v).space == tile::Space::Shared) return std::nullopt;
  }
  return TensorMapSpec{param, box_cols, ext.row, layout::SwizzleMode::k128B};
}

void Emitter::EmitTmaStore(OpId id, const tile::op::Store& s, int map) {
  const synth::OpChoice& choice = plan_.ops.at(id.index);
  const auto& dst = slots_.at(s.dst.index).global;
  if (!dst || dst->first.size() < 2) Fail("a TMA store into " + Name(s.dst) + ", which is not a view of a parameter");
  const TensorMapSpec& spec = map_specs_.at(static_cast<std::size_t>(map));
  int e = ElementBytes(Val(s.src).dtype);
  std::int64_t box_bytes = spec.box_rows * 128;
  // Every thread is done with shared memory, and an earlier TMA store has read its boxes.
  Barrier();
  // Element (row, col) lands in box col / box_cols, at byte (col % box_cols) * e of its 128-byte
  // row, whose 16-byte chunks are XORed with row % 8 (TMA's 128-byte swizzle; boxes 1024-aligned).
  const TvLayout& copy = *choice.copy;
  for (std::int64_t v = 0; v < Flat(copy).values; ++v) {
    auto [row, col] = TvElement(copy, v);
    llvm::Value* in_row = b_.CreateMul(b_.CreateURem(col, I32(spec.box_cols)), I32(e));
    llvm::Value* swizzled = b_.CreateXor(in_row, b_.CreateShl(b_.CreateAnd(row, I32(7)), I32(4)));
    llvm::Value* offset = b_.CreateAdd(
        b_.CreateAdd(b_.CreateMul(b_.CreateUDiv(col, I32(spec.box_cols)), I32(box_bytes)), b_.CreateMul(row, I32(128))),
        swizzled);
    b_.CreateAlignedStore(StoreVector(s.src, choice, v), b_.CreateGEP(b_.getInt8Ty(), smem_, offset),
                          llvm::Align(static_cast<std::uint64_t>(choice.vector_bytes)));
  }
  hopper::FenceProxyAsync(b_);  // the writes, seen by TMA
  Barrier();
  auto [col, row] = MapCoordinates(*dst);
  llvm::Value* smem = SharedAddress(smem_);
  IfThread0(nullptr, [&] {
    for (std::int64_t box = 0; box * spec.box_cols < Extent(s.src).col; ++box)
      hopper::TmaStore2d(b_, maps_.at(static_cast<std::size_t>(map)), b_.CreateAdd(col, I32(box * spec.box_cols)), row,
                         b_.CreateAdd(smem, I32(box * box_bytes)));
    hopper::BulkCommit(b_);
    hopper::BulkWaitRead(b_);  // the boxes stay until read: the block's shared memory ends with it
  });
}

void Emitter::EmitLoop(OpId loop_id, const tile::Op& op, const tile::op::Loop& loop) {
  llvm::Value* bound = Scalar(loop.bound);
  // A pipelined loop's ring (schedule::Ring): its copies, issued `stages - 1` iterations ahead
  // (cp.async groups: a prologue, then one group per iteration, waiting for the oldest). TMA copies
  // complete on one mbarrier per slot (0 .. stages - 1), which thread 0 arms with the iteration's
  // bytes; iteration `it` waits on slot it % stages for phase (it / stages) & 1.
  static const schedule::Ring kNoRing;
  const schedule::Ring* found = lowering_.RingOf(loop_id);
  const schedule::Ring& ring_of = found ? *found : kNoRing;
  const std::vector<OpId>& copies = ring_of.copies;
  int stages = ring_of.stages;
  bool tma = ring_of.tma;
  std::int64_t tma_bytes = ring_of.tma_bytes;
  std::set<std::uint32_t> copy_ops;
  for (OpId id : copies) copy_ops.insert(id.index);
  // The consumers of a warp-specialized loop: the producer (EmitProducer) issues every copy.
  bool consumer = specialized_ && &k_.Get(specialized_->loop) == &op;
  if (consumer) ring_used_ = b_.CreateSelect(b_.CreateICmpSGT(bound, I64(0)), bound, I64(0));
  if (tma && !consumer) {
    Barrier();  // the mbarriers' memory is no longer in use
    IfThread0(nullptr, [&] {
      for (int s = 0; s < stages; ++s)
        Intrinsic(llvm::Intrinsic::nvvm_mbarrier_init_shared, {Mbarrier(I32(s)), I32(1)});
      hopper::FenceMbarrierInit(b_);
    });
    Barrier();
  }
  auto issue = [&](llvm::Value* iteration, int part = 0, int parts = 1, bool commit = true) {
    slots_[loop.counter.index].scalar = iteration;
    llvm::Value* slot = b_.CreateURem(iteration, I64(stages));
    Prefetch p{slot, b_.CreateICmpSLT(iteration, bound)};
    p.part = part;
    p.parts = parts;
    if (tma) {
      p.bar = Mbarrier(b_.CreateTrunc(slot, b_.getInt32Ty()));
      IfThread0(p.live, [&] { hopper::MbarrierArriveExpectTx(b_, SharedAddress(p.bar), I32(tma_bytes)); });
    }
    for (OpId id : copies) {
      const tile::Op& c = k_.Get(id);
      span_ = c.span;
      if (const auto* copy = std::get_if<tile::op::ToShared>(&c.node))
        EmitToShared(id, c, *copy, &p);
      else
        EmitOp(id);
    }
    if (!tma && commit) Intrinsic(llvm::Intrinsic::nvvm_cp_async_commit_group, {});
  };
  if (!consumer)
    for (int s = 0; s + 1 < stages; ++s) issue(I64(s));
  // A gemm's ring (MmaRing): the mma's operands are loaded a slice ahead, slice 0 of iteration 0
  // before the loop, once it has landed.
  std::optional<OpId> ring_mma = ring_of.mma;
  MmaRing ring;
  std::set<std::uint32_t> ring_tiles;  // the ring's shared tiles
  for (OpId id : copies)
    if (std::holds_alternative<tile::op::ToShared>(k_.Get(id).node)) ring_tiles.insert(k_.Get(id).results.at(0).index);
  auto set_ring_slot = [&](llvm::Value* slot) {
    for (std::uint32_t t : ring_tiles) slots_[t].shared = SharedBase(ValueId{t}, slot);
    for (OpId id : loop.body)
      if (const auto* t = std::get_if<tile::op::Transpose>(&k_.Get(id).node))
        if (ring_tiles.count(t->src.index)) slots_[k_.Get(id).results.at(0).index].shared = slots_[t->src.index].shared;
  };
  std::int64_t ring_slices = 0;
  if (ring_mma) {
    const auto& m = std::get<tile::op::Mma>(k_.Get(*ring_mma).node);
    ring_slices = Extent(m.a).col / 16;
    Intrinsic(llvm::Intrinsic::nvvm_cp_async_wait_group, {I32(stages - 2)});
    Barrier();
    set_ring_slot(I64(0));
    for (OpId id : loop.body) {
      const tile::Op& body_op = k_.Get(id);
      if (std::holds_alternative<tile::op::Transpose>(body_op.node) ||
          std::holds_alternative<tile::op::ToRegs>(body_op.node))
        EmitOp(id);
    }
    ring.mma = *ring_mma;
    ring.a0.assign(static_cast<std::size_t>(Flat(Tv(m.a)).values), nullptr);
    ring.b0.assign(static_cast<std::size_t>(Flat(Tv(m.b)).values), nullptr);
    LoadSlice(m.a, ring.a0, 0, ring_slices);
    LoadSlice(m.b, ring.b0, 0, ring_slices);
  }
  if (consumer && specialized_->ping_pong) {
    // Consumer 0 goes first: consumer 1 hands it the first turn.
    llvm::BasicBlock* first = llvm::BasicBlock::Create(ctx_, "first.turn", fn_);
    llvm::BasicBlock* go = llvm::BasicBlock::Create(ctx_, "go", fn_);
    b_.CreateCondBr(b_.CreateICmpEQ(b_.CreateLShr(tid_, I32(7)), I32(1)), first, go);
    b_.SetInsertPoint(first);
    hopper::BarArrive(b_, I32(2), I32(plan_.threads));
    b_.CreateBr(go);
    b_.SetInsertPoint(go);
  }
  // A staged product (Staged): its shape, and the operands of a product that adds nothing for the
  // first iteration to issue.
  staged_.reset();
  if (consumer && specialized_->staged) {
    Staged st;
    st.mma = specialized_->staged->first;
    st.carried = specialized_->staged->second;
    const tile::Op& mop = k_.Get(st.mma);
    st.shape = PrepareWgmma(st.mma, mop, std::get<tile::op::Mma>(mop.node), true);
    ValueId c = loop.carried[st.carried], y = mop.results.at(0);
    slots_[c.index].regs = SameLayoutRegs(loop.init.at(st.carried), c, "the loop's carried value");
    st.acc = SameLayoutRegs(c, y, "the staged product's accumulator");
    llvm::Value* address = SharedAddress(smem_base_);
    llvm::Value* zero = b_.CreateZExt(b_.CreateAnd(b_.CreateLShr(address, I32(4)), I32(0x3FFF)), b_.getInt64Ty());
    for (std::size_t step = 0; step < st.shape.a_mn.size(); ++step) {
      if (st.shape.a_shared)
        st.operands.push_back(zero);
      else
        for (int r = 0; r < 4; ++r) st.operands.push_back(I32(0));
      st.operands.push_back(zero);
    }
    staged_ = std::move(st);
  }
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  llvm::BasicBlock* head = llvm::BasicBlock::Create(ctx_, "loop", fn_);
  llvm::BasicBlock* body = llvm::BasicBlock::Create(ctx_, "body", fn_);
  llvm::BasicBlock* exit = llvm::BasicBlock::Create(ctx_, "done", fn_);
  b_.CreateBr(head);
  b_.SetInsertPoint(head);
  llvm::PHINode* counter = b_.CreatePHI(b_.getInt64Ty(), 2, "it");
  counter->addIncoming(I64(0), pre);
  // One phi per scalar carried value and per register of a carried Reg tile.
  std::vector<std::vector<llvm::PHINode*>> phis;
  for (std::size_t i = 0; i < loop.carried.size(); ++i) {
    ValueId c = loop.carried[i], init = loop.init.at(i);
    std::vector<llvm::PHINode*> p;
    if (staged_ && i == staged_->carried) {  // set by the staged product in the body
      phis.emplace_back();
      continue;
    }
    if (Val(c).space == tile::Space::Scalar) {
      llvm::Value* x = Scalar(init);
      llvm::PHINode* phi = b_.CreatePHI(x->getType(), 2);
      phi->addIncoming(x, pre);
      slots_[c.index].scalar = phi;
      p.push_back(phi);
    } else if (Val(c).space == tile::Space::Reg) {
      auto regs = SameLayoutRegs(init, c, "the loop's carried value");
      slots_[c.index].regs.clear();
      for (llvm::Value* x : regs) {
        llvm::PHINode* phi = b_.CreatePHI(x->getType(), 2);
        phi->addIncoming(x, pre);
        slots_[c.index].regs.push_back(phi);
        p.push_back(phi);
      }
    } else {
      Fail("a loop carrying a shared or global tile");
    }
    phis.push_back(std::move(p));
  }
  std::vector<llvm::PHINode*> staged_phis;
  if (staged_)
    for (auto* values : {&staged_->acc, &staged_->operands})
      for (llvm::Value*& x : *values) {
        llvm::PHINode* phi = b_.CreatePHI(x->getType(), 2);
        phi->addIncoming(x, pre);
        x = phi;
        staged_phis.push_back(phi);
      }
  std::vector<std::pair<std::size_t, llvm::PHINode*>> ring_phis_a, ring_phis_b;
  for (auto [regs, out] : {std::pair{&ring.a0, &ring_phis_a}, std::pair{&ring.b0, &ring_phis_b}})
    for (std::size_t i = 0; i < regs->size(); ++i)
      if (llvm::Value* x = (*regs)[i]) {
        llvm::PHINode* phi = b_.CreatePHI(x->getType(), 2);
        phi->addIncoming(x, pre);
        (*regs)[i] = phi;
        out->emplace_back(i, phi);
      }
  b_.CreateCondBr(b_.CreateICmpSLT(counter, bound), body, exit);
  b_.SetInsertPoint(body);
  iterations_.push_back(counter);
  // TMA rings: wait for this iteration's slot, run the body, then (every thread done with the slot
  // of iteration it - 1, whose wgmma a deferred wait has completed) refill that slot with
  // iteration it + stages - 1.
  const std::vector<std::size_t>& deferred_carried = ring_of.deferred_carried;
  deferred_wgmma_.insert(ring_of.deferred.begin(), ring_of.deferred.end());
  // The ring's barrier protocol, for the deadlock check (schedule/protocol.h).
  if (ring_of.protocol) protocols_.push_back(*ring_of.protocol);
  turns_ = consumer && specialized_->ping_pong;
  // The ring's iteration: the counter, or in a persistent kernel's consumers the counter after the
  // ring iterations of the blocks before (EachTile).
  llvm::Value* ring_base = consumer ? ring_base_ : nullptr;
  llvm::Value* global = ring_base ? b_.CreateAdd(ring_base, counter) : counter;
  if (stages && tma) {
    llvm::Value* slot = b_.CreateTrunc(b_.CreateURem(global, I64(stages)), b_.getInt32Ty());
    llvm::Value* parity = b_.CreateTrunc(b_.CreateAnd(b_.CreateUDiv(global, I64(stages)), I64(1)), b_.getInt32Ty());
    WaitMbarrier(Mbarrier(slot), parity);  // this iteration's tiles have landed
    slots_[loop.counter.index].scalar = counter;
    auto emit_body = [&] {
      if (staged_) staged_->in_body = true, staged_->issued = false, staged_->pending = false;
      for (OpId id : loop.body) {
        const tile::Op& body_op = k_.Get(id);
        if (staged_ && staged_->pending) {
          const auto operands = tile::Operands(body_op);
          if (std::find(operands.begin(), operands.end(), loop.carried[staged_->carried]) != operands.end())
            StageWait();
        }
        if (copy_ops.count(id.index) && std::holds_alternative<tile::op::ToShared>(body_op.node)) {
          ValueId dst = body_op.results.at(0);
          slots_[dst.index].shared = SharedBase(dst, b_.CreateURem(global, I64(stages)));
        } else {
          EmitOp(id);
        }
      }
      if (staged_) {
        if (!staged_->issued) Fail("the staged product of the previous iteration was never issued");
        if (staged_->pending) StageWait();
        staged_->in_body = false;
      }
    };
    // Masks the whole iteration's tile satisfies (AllTrue): the body twice, behind a uniform branch.
    llvm::Value* unmasked = nullptr;
    std::vector<ValueId> masks;
    {  // in every TMA ring: without the fold, causal attention's plain ring ran 1.16-1.26x slower
      std::set<std::uint32_t> in_body;
      for (OpId id : loop.body) in_body.insert(id.index);
      for (OpId id : loop.body) {
        const auto* m = std::get_if<tile::op::Map>(&k_.Get(id).node);
        if (!m || m->fn != "select" || m->args.empty()) continue;
        ValueId mask = m->args[0];
        if (Val(mask).space != tile::Space::Reg || !Val(mask).def.valid() || !in_body.count(Val(mask).def.index))
          continue;
        llvm::Value* all = AllTrue(mask, in_body);
        if (!all || llvm::isa<llvm::Constant>(all)) continue;
        masks.push_back(mask);
        unmasked = unmasked ? b_.CreateAnd(unmasked, all) : all;
      }
    }
    if (!unmasked) {
      emit_body();
    } else {
      // What the rest of the iteration reads from the body: the yields and the staged operands.
      auto capture = [&] {
        std::vector<llvm::Value*> out;
        for (std::size_t i = 0; i < loop.carried.size(); ++i) {
          if (staged_ && i == staged_->carried) continue;
          ValueId y = loop.yields.at(i);
          if (Val(y).space == tile::Space::Scalar)
            out.push_back(Scalar(y));
          else
            for (llvm::Value* x : slots_.at(y.index).regs) out.push_back(x);
        }
        if (staged_) {
          out.insert(out.end(), staged_->next_acc.begin(), staged_->next_acc.end());
          out.insert(out.end(), staged_->next_operands.begin(), staged_->next_operands.end());
        }
        return out;
      };
      llvm::BasicBlock* fast = llvm::BasicBlock::Create(ctx_, "unmasked", fn_);
      llvm::BasicBlock* slow = llvm::BasicBlock::Create(ctx_, "masked", fn_);
      llvm::BasicBlock* merge = llvm::BasicBlock::Create(ctx_, "body.end", fn_);
      b_.CreateCondBr(unmasked, fast, slow);
      b_.SetInsertPoint(fast);
      for (ValueId m : masks) folded_.insert(m.index);
      emit_body();
      folded_.clear();
      std::vector<llvm::Value*> from_fast = capture();
      llvm::BasicBlock* fast_end = b_.GetInsertBlock();
      b_.CreateBr(merge);
      b_.SetInsertPoint(slow);
      emit_body();
      std::vector<llvm::Value*> from_slow = capture();
      llvm::BasicBlock* slow_end = b_.GetInsertBlock();
      b_.CreateBr(merge);
      b_.SetInsertPoint(merge);
      if (from_fast.size() != from_slow.size()) Fail("the two copies of a masked body differ");
      std::vector<llvm::Value*> merged;
      for (std::size_t i = 0; i < from_fast.size(); ++i) {
        llvm::PHINode* phi = b_.CreatePHI(from_fast[i]->getType(), 2);
        phi->addIncoming(from_fast[i], fast_end);
        phi->addIncoming(from_slow[i], slow_end);
        merged.push_back(phi);
      }
      std::size_t at = 0;
      for (std::size_t i = 0; i < loop.carried.size(); ++i) {
        if (staged_ && i == staged_->carried) continue;
        ValueId y = loop.yields.at(i);
        if (Val(y).space == tile::Space::Scalar)
          slots_[y.index].scalar = merged[at++];
        else
          for (llvm::Value*& x : slots_[y.index].regs) x = merged[at++];
      }
      if (staged_) {
        for (llvm::Value*& x : staged_->next_acc) x = merged[at++];
        for (llvm::Value*& x : staged_->next_operands) x = merged[at++];
      }
    }
    span_ = op.span;
    if (consumer) {
      // This warp is done with a slot: this iteration's, or with products still in flight
      // (deferred), the previous iteration's. Its lanes' reads come before lane 0's arrival.
      bool previous = !deferred_carried.empty() || staged_;
      Release(stages, previous ? b_.CreateSub(global, I64(1)) : global,
              previous ? b_.CreateICmpSGE(counter, I64(1)) : nullptr);
    } else {
      Barrier();
      issue(b_.CreateAdd(counter, I64(stages - 1)));
    }
    turns_ = false;
    slots_[loop.counter.index].scalar = counter;
  } else if (ring_mma) {
    // Slot it % stages is read by this iteration's slices 1 .. S - 1 (loaded before the barrier
    // after slice S - 2's products) and by its slice 0, loaded in the previous iteration after that
    // one's barrier. Iteration it + stages - 1 refills slot (it - 1) % stages, which every thread
    // is done with (past the previous iteration's barrier): its copies are spread over slices
    // 0 .. S - 2 (a part of each copy's vectors in each, as CUTLASS interleaves them with the
    // products), committed as one group before the barrier, which waits for iteration it + 1 (all
    // but the newest stages - 2 groups).
    slots_[loop.counter.index].scalar = counter;
    int parts = static_cast<int>(std::max<std::int64_t>(1, ring_slices - 1));
    ring.copies = [&](std::int64_t s) {
      if (s >= parts) return;
      issue(b_.CreateAdd(counter, I64(stages - 1)), static_cast<int>(s), parts, false);
      slots_[loop.counter.index].scalar = counter;
      set_ring_slot(b_.CreateURem(counter, I64(stages)));
    };
    ring.barrier = [&] {
      Intrinsic(llvm::Intrinsic::nvvm_cp_async_commit_group, {});
      Intrinsic(llvm::Intrinsic::nvvm_cp_async_wait_group, {I32(stages - 2)});
      Barrier();
    };
    ring.slot = [&](bool next) {
      set_ring_slot(b_.CreateURem(next ? b_.CreateAdd(counter, I64(1)) : counter, I64(stages)));
    };
    ring_mma_ = &ring;
    for (OpId id : loop.body) {
      const tile::Op& body_op = k_.Get(id);
      if (copy_ops.count(id.index) && std::holds_alternative<tile::op::ToShared>(body_op.node)) {
        ValueId dst = body_op.results.at(0);
        slots_[dst.index].shared = SharedBase(dst, b_.CreateURem(counter, I64(stages)));
      } else {
        EmitOp(id);
      }
    }
    ring_mma_ = nullptr;
  } else if (stages) {
    // One barrier per iteration (stages >= 2): once this thread's copies of iteration `it` have
    // landed (all but the newest stages - 2 groups), the barrier says every thread's have, and that
    // every thread is done with iteration it - 1, whose slot the copies of it + stages - 1 refill.
    Intrinsic(llvm::Intrinsic::nvvm_cp_async_wait_group, {I32(stages - 2)});
    Barrier();
    issue(b_.CreateAdd(counter, I64(stages - 1)));
    slots_[loop.counter.index].scalar = counter;
    for (OpId id : loop.body) {
      const tile::Op& body_op = k_.Get(id);
      if (copy_ops.count(id.index) && std::holds_alternative<tile::op::ToShared>(body_op.node)) {
        ValueId dst = body_op.results.at(0);
        slots_[dst.index].shared = SharedBase(dst, b_.CreateURem(counter, I64(stages)));
      } else {
        EmitOp(id);  // the rest of the body; scalar and view ops again for this iteration
      }
    }
  } else {
    slots_[loop.counter.index].scalar = counter;
    EmitBlock(loop.body);
  }
  iterations_.pop_back();
  span_ = op.span;
  llvm::BasicBlock* latch = b_.GetInsertBlock();
  for (std::size_t i = 0; i < loop.carried.size(); ++i) {
    ValueId c = loop.carried[i], y = loop.yields.at(i);
    if (staged_ && i == staged_->carried) continue;
    if (Val(c).space == tile::Space::Scalar) {
      phis[i][0]->addIncoming(Scalar(y), latch);
    } else {
      auto regs = SameLayoutRegs(y, c, "the loop's yielded value");
      for (std::size_t r = 0; r < regs.size(); ++r) phis[i][r]->addIncoming(regs[r], latch);
    }
  }
  for (auto [phis_of, next] : {std::pair{&ring_phis_a, &ring.next_a0}, std::pair{&ring_phis_b, &ring.next_b0}})
    for (auto [i, phi] : *phis_of) {
      llvm::Value* x = i < next->size() ? (*next)[i] : nullptr;
      if (!x) Fail("the next iteration's first slice of an mma operand was not loaded");
      phi->addIncoming(x, latch);
    }
  if (staged_) {
    std::vector<llvm::Value*> next = staged_->next_acc;
    next.insert(next.end(), staged_->next_operands.begin(), staged_->next_operands.end());
    if (next.size() != staged_phis.size()) Fail("the staged product's operands differ between iterations");
    for (std::size_t i = 0; i < next.size(); ++i) staged_phis[i]->addIncoming(next[i], latch);
  }
  counter->addIncoming(b_.CreateAdd(counter, I64(1)), latch);
  b_.CreateBr(head);
  b_.SetInsertPoint(exit);
  if (stages && !tma) Intrinsic(llvm::Intrinsic::nvvm_cp_async_wait_group, {I32(0)});
  if (consumer && specialized_->ping_pong) {
    // Consumer 1 handed consumer 0 a turn after its last products (and one before the first, when
    // the loop runs no iteration): consumer 0 takes it, so named barrier 2 ends empty.
    llvm::BasicBlock* last = llvm::BasicBlock::Create(ctx_, "last.turn", fn_);
    llvm::BasicBlock* after = llvm::BasicBlock::Create(ctx_, "after", fn_);
    b_.CreateCondBr(b_.CreateICmpEQ(b_.CreateLShr(tid_, I32(7)), I32(0)), last, after);
    b_.SetInsertPoint(last);
    Intrinsic(llvm::Intrinsic::nvvm_barrier_sync_cnt, {I32(2), I32(plan_.threads)});
    b_.CreateBr(after);
    b_.SetInsertPoint(after);
  }
  if (staged_) {  // the last iteration's staged product (none when the loop ran none: it adds 0)
    hopper::WgmmaFence(b_);
    StageFlush();
    StageWait();
  }
  if (!deferred_carried.empty()) {  // the last iteration's products
    hopper::WgmmaWait(b_, 0);
    for (std::size_t i : deferred_carried) {
      ValueId c = loop.carried[i];
      slots_[c.index].regs = hopper::FenceOperands(b_, slots_[c.index].regs);
    }
  }
  // A persistent kernel's ring goes on into the next block: the slot of the last iteration, which a
  // release one iteration late has not given back yet, is given back once its products are done.
  if (consumer && ring_base && stages && tma && (!deferred_carried.empty() || staged_))
    Release(stages, b_.CreateSub(b_.CreateAdd(ring_base, bound), I64(1)), b_.CreateICmpSGT(bound, I64(0)));
  if (tma && !consumer) {
    Barrier();  // every thread is past its last wait
    IfThread0(nullptr, [&] {
      for (int s = 0; s < stages; ++s) Intrinsic(llvm::Intrinsic::nvvm_mbarrier_inval_shared, {Mbarrier(I32(s))});
    });
  }
  for (std::size_t i = 0; i < op.results.size(); ++i) {
    ValueId c = loop.carried.at(i), r = op.results[i];
    slots_[r.index].scalar = slots_[c.index].scalar;
    slots_[r.index].regs =
        Val(c).space == tile::Space::Reg ? SameLayoutRegs(c, r, "the loop's result") : std::vector<llvm::Value*>{};
  }
  staged_.reset();
}

// --- the body, unswitched on a flag ------------------------------------------------------------

// A bool parameter that the body of a pipeline reads (attention's `causal`) is a branch taken once:
// the body is emitted for `true` and for `false`, so that LLVM folds what the flag decides inside
// the loop (the mask's compare and select per score when it is false). LLVM's own loop unswitching
// declines bodies this large. One flag at most (two copies of the code).
void Emitter::EmitBody() {
  std::optional<ValueId> flag;
  for (OpId id : k_.body)
    if (const auto* loop = std::get_if<tile::op::Loop>(&k_.Get(id).node); loop && loop->pipelined)
      for (OpId inner : loop->body)
        for (ValueId v : tile::Operands(k_.Get(inner)))
          for (const tile::Param& p : k_.params)
            if (!flag && p.value == v && Val(v).space == tile::Space::Scalar && Val(v).dtype == Dtype::Bool) flag = v;
  auto body = [&] { EachTile([&] { EmitBlock(k_.body); }); };
  if (!flag) return body();
  llvm::Value* runtime = slots_[flag->index].scalar;
  llvm::BasicBlock* on = llvm::BasicBlock::Create(ctx_, "flag.true", fn_);
  llvm::BasicBlock* off = llvm::BasicBlock::Create(ctx_, "flag.false", fn_);
  b_.CreateCondBr(runtime, on, off);
  b_.SetInsertPoint(on);
  slots_[flag->index].scalar = b_.getTrue();
  body();
  b_.CreateRetVoid();
  std::size_t once = protocols_.size();
  b_.SetInsertPoint(off);
  slots_[flag->index].scalar = b_.getFalse();
  body();
  protocols_.resize(once);  // the same rings twice: each protocol once
  slots_[flag->index].scalar = runtime;
}

// --- warp specialization ------------------------------------------------------------------------

void Emitter::EmitSpecialized() {
  const Specialized& s = *specialized_;
  span_ = k_.Get(s.loop).span;
  // The ring's mbarriers before the roles part: full[i] (the producer's arrive.expect_tx and the
  // copies' bytes) and empty[i] (one arrival per consumer warp).
  IfThread0(nullptr, [&] {
    for (int i = 0; i < s.stages; ++i) {
      Intrinsic(llvm::Intrinsic::nvvm_mbarrier_init_shared, {Mbarrier(I32(i)), I32(1)});
      Intrinsic(llvm::Intrinsic::nvvm_mbarrier_init_shared, {Mbarrier(I32(s.stages + i)), I32(plan_.threads / 32)});
    }
    hopper::FenceMbarrierInit(b_);
    if (s.staged) {  // the block a staged product's first issue reads (Staged), seen by wgmma
      auto* zeros = llvm::Constant::getNullValue(llvm::FixedVectorType::get(b_.getInt32Ty(), 4));
      for (std::int64_t at = 0; at < 128; at += 16)
        b_.CreateAlignedStore(zeros, b_.CreateGEP(b_.getInt8Ty(), smem_base_, I32(at)), llvm::Align(16));
      hopper::FenceProxyAsync(b_);
    }
  });
  Intrinsic(llvm::Intrinsic::nvvm_barrier0, {});  // every thread, the producer's too
  llvm::BasicBlock* producer = llvm::BasicBlock::Create(ctx_, "producer", fn_);
  llvm::BasicBlock* issuer = llvm::BasicBlock::Create(ctx_, "issuer", fn_);
  llvm::BasicBlock* idle = llvm::BasicBlock::Create(ctx_, "idle", fn_);
  llvm::BasicBlock* consumers = llvm::BasicBlock::Create(ctx_, "consumers", fn_);
  b_.CreateCondBr(b_.CreateICmpUGE(tid_, I32(plan_.threads)), producer, consumers);
  b_.SetInsertPoint(producer);
  if (s.producer_registers) hopper::SetMaxNreg(b_, false, s.producer_registers);
  b_.CreateCondBr(b_.CreateICmpEQ(tid_, I32(plan_.threads)), issuer, idle);
  b_.SetInsertPoint(idle);
  b_.CreateRetVoid();
  b_.SetInsertPoint(issuer);
  leader_ = b_.getTrue();
  EmitProducer(s);
  leader_ = nullptr;
  b_.CreateRetVoid();
  b_.SetInsertPoint(consumers);
  if (s.consumer_registers) hopper::SetMaxNreg(b_, true, s.consumer_registers);
  consumers_only_ = true;
  EmitBody();
  consumers_only_ = false;
}

// The producer's loop: for each iteration, wait until every consumer warp is done with its slot
// (the first round passes: parity 1 of a fresh barrier is the phase before it), arm full[slot] with
// the iteration's bytes and issue its copies.
void Emitter::EmitProducer(const Specialized& s) {
  EachTile([&] { EmitProducerLoop(s); });
}

void Emitter::EmitProducerLoop(const Specialized& s) {
  const tile::Op& op = k_.Get(s.loop);
  const auto& loop = std::get<tile::op::Loop>(op.node);
  for (OpId id : s.prelude) EmitOp(id);
  const schedule::Ring& ring = *lowering_.RingOf(s.loop);
  const std::vector<OpId>& copies = ring.copies;
  int stages = ring.stages;
  std::int64_t bytes = ring.tma_bytes;
  span_ = op.span;
  llvm::Value* bound = Scalar(loop.bound);
  ring_used_ = b_.CreateSelect(b_.CreateICmpSGT(bound, I64(0)), bound, I64(0));
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  llvm::BasicBlock* head = llvm::BasicBlock::Create(ctx_, "produce", fn_);
  llvm::BasicBlock* body = llvm::BasicBlock::Create(ctx_, "issue", fn_);
  llvm::BasicBlock* exit = llvm::BasicBlock::Create(ctx_, "produced", fn_);
  b_.CreateBr(head);
  b_.SetInsertPoint(head);
  llvm::PHINode* it = b_.CreatePHI(b_.getInt64Ty(), 2, "it");
  it->addIncoming(I64(0), pre);
  b_.CreateCondBr(b_.CreateICmpSLT(it, bound), body, exit);
  b_.SetInsertPoint(body);
  llvm::Value* g = ring_base_ ? b_.CreateAdd(ring_base_, it) : it;  // the ring's iteration
  llvm::Value* slot = b_.CreateURem(g, I64(stages));
  llvm::Value* slot32 = b_.CreateTrunc(slot, b_.getInt32Ty());
  llvm::Value* parity =
      b_.CreateXor(b_.CreateTrunc(b_.CreateAnd(b_.CreateUDiv(g, I64(stages)), I64(1)), b_.getInt32Ty()), I32(1));
  WaitMbarrier(Mbarrier(b_.CreateAdd(I32(stages), slot32)), parity);
  Prefetch p{slot, b_.getTrue()};
  p.bar = Mbarrier(slot32);
  hopper::MbarrierArriveExpectTx(b_, SharedAddress(p.bar), I32(bytes));
  slots_[loop.counter.index].scalar = it;
  for (OpId id : copies) {
    const tile::Op& c = k_.Get(id);
    span_ = c.span;
    if (const auto* copy = std::get_if<tile::op::ToShared>(&c.node))
      EmitToShared(id, c, *copy, &p);
    else
      EmitOp(id);
  }
  it->addIncoming(b_.CreateAdd(it, I64(1)), b_.GetInsertBlock());
  b_.CreateBr(head);
  b_.SetInsertPoint(exit);
}

void Emitter::Release(int stages, llvm::Value* done, llvm::Value* live) {
  // Its lanes' reads come before lane 0's arrival.
  llvm::Value* lane0 = b_.CreateICmpEQ(b_.CreateAnd(tid_, I32(31)), I32(0));
  Intrinsic(llvm::Intrinsic::nvvm_bar_warp_sync, {I32(-1)});
  llvm::BasicBlock* arrive = llvm::BasicBlock::Create(ctx_, "release", fn_);
  llvm::BasicBlock* next = llvm::BasicBlock::Create(ctx_, "released", fn_);
  b_.CreateCondBr(live ? b_.CreateAnd(lane0, live) : lane0, arrive, next);
  b_.SetInsertPoint(arrive);
  llvm::Value* empty = b_.CreateAdd(I32(stages), b_.CreateTrunc(b_.CreateURem(done, I64(stages)), b_.getInt32Ty()));
  Intrinsic(llvm::Intrinsic::nvvm_mbarrier_arrive_shared, {Mbarrier(empty)});
  b_.CreateBr(next);
  b_.SetInsertPoint(next);
}

void Emitter::EachTile(const std::function<void()>& body) {
  if (!specialized_ || !specialized_->persistent) return body();
  std::array<llvm::Value*, 3> grid = {I64(1), I64(1), I64(1)};
  for (std::size_t i = 0; i < k_.grid.size() && i < 3; ++i) grid[i] = DimValue(k_.grid[i]);
  llvm::Value* blocks = b_.CreateMul(b_.CreateMul(grid[0], grid[1]), grid[2]);
  auto sreg = [&](llvm::Intrinsic::ID id) { return b_.CreateZExt(Intrinsic(id, {}), b_.getInt64Ty()); };
  llvm::Value* nx = sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x);
  llvm::Value* ny = sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_y);
  llvm::Value* nz = sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_z);
  llvm::Value* first =
      b_.CreateAdd(sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x),
                   b_.CreateMul(nx, b_.CreateAdd(sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_y),
                                                 b_.CreateMul(ny, sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_z)))));
  llvm::Value* stride = b_.CreateMul(b_.CreateMul(nx, ny), nz);
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  llvm::BasicBlock* head = llvm::BasicBlock::Create(ctx_, "tile", fn_);
  llvm::BasicBlock* work = llvm::BasicBlock::Create(ctx_, "tile.body", fn_);
  llvm::BasicBlock* exit = llvm::BasicBlock::Create(ctx_, "tiles.done", fn_);
  b_.CreateBr(head);
  b_.SetInsertPoint(head);
  llvm::PHINode* tile = b_.CreatePHI(b_.getInt64Ty(), 2, "tile");
  llvm::PHINode* base = b_.CreatePHI(b_.getInt64Ty(), 2, "ring.base");
  tile->addIncoming(first, pre);
  base->addIncoming(I64(0), pre);
  b_.CreateCondBr(b_.CreateICmpULT(tile, blocks), work, exit);
  b_.SetInsertPoint(work);
  block_ = {b_.CreateURem(tile, grid[0]), b_.CreateURem(b_.CreateUDiv(tile, grid[0]), grid[1]),
            b_.CreateUDiv(tile, b_.CreateMul(grid[0], grid[1]))};
  ring_base_ = base;
  ring_used_ = nullptr;
  body();
  llvm::Value* used = ring_used_ ? ring_used_ : I64(0);
  block_ = {nullptr, nullptr, nullptr};
  ring_base_ = ring_used_ = nullptr;
  tile->addIncoming(b_.CreateAdd(tile, stride), b_.GetInsertBlock());
  base->addIncoming(b_.CreateAdd(base, used), b_.GetInsertBlock());
  b_.CreateBr(head);
  b_.SetInsertPoint(exit);
}

// --- the entry ---------------------------------------------------------------------------------

DeviceKernel Emitter::Emit() {
  DeviceKernel out;
  out.entry = k_.name;
  out.target = plan_.target;
  out.threads = plan_.threads;
  out.shared_bytes = plan_.shared_bytes;
  if (plan_.values.size() != k_.values.size() || plan_.ops.size() != k_.ops.size())
    throw Unsupported{k_.span, "the plan does not belong to kernel `" + k_.name + "`"};
  slots_.resize(k_.values.size());
  span_ = k_.span;
  FindTensorMaps();

  // Parameters: tensors, sizes, scalars (device.h).
  std::vector<llvm::Type*> params;
  for (const auto& p : k_.params)
    if (Val(p.value).space == tile::Space::Global) params.push_back(b_.getInt64Ty());
  for (const auto& [var, name] : k_.size_names) {
    out.sizes.push_back(var);
    params.push_back(b_.getInt64Ty());
  }
  for (const auto& p : k_.params)
    if (Val(p.value).space == tile::Space::Scalar) {
      Dtype d = Val(p.value).dtype;
      params.push_back(d == Dtype::Bool ? b_.getInt32Ty() : ElemType(d));
    }
  std::size_t first_map = params.size();
  for (std::size_t i = 0; i < map_specs_.size(); ++i) params.push_back(llvm::PointerType::get(ctx_, 0));
  auto* type = llvm::FunctionType::get(b_.getVoidTy(), params, false);
  fn_ = llvm::Function::Create(type, llvm::Function::ExternalLinkage, k_.name, m_);
  fn_->setCallingConv(llvm::CallingConv::PTX_Kernel);
  if (sources_ && k_.span.valid()) {
    // .file/.loc directives only (no DWARF sections), as `-gline-directives-only` makes them.
    di_ = std::make_unique<llvm::DIBuilder>(m_);
    llvm::DIFile* file = DiFile(k_.span.file);
    di_->createCompileUnit(llvm::dwarf::DW_LANG_C, file, "weft", true, "", 0, "",
                           llvm::DICompileUnit::DebugDirectivesOnly);
    LineCol at = sources_->Get(k_.span.file).Locate(k_.span.begin);
    subprogram_ = di_->createFunction(file, k_.name, k_.name, file, at.line,
                                      di_->createSubroutineType(di_->getOrCreateTypeArray({})), at.line,
                                      llvm::DINode::FlagZero, llvm::DISubprogram::SPFlagDefinition);
    fn_->setSubprogram(subprogram_);
    scopes_[k_.span.file.index] = subprogram_;
    m_.addModuleFlag(llvm::Module::Warning, "Debug Info Version", llvm::DEBUG_METADATA_VERSION);
    m_.addModuleFlag(llvm::Module::Warning, "Dwarf Version", 2);
    Locate(k_.span);
  }
  auto* entry = llvm::BasicBlock::Create(ctx_, "entry", fn_);
  b_.SetInsertPoint(entry);
  auto* smem_array =
      new llvm::GlobalVariable(m_, llvm::ArrayType::get(b_.getInt8Ty(), 0), false, llvm::GlobalValue::ExternalLinkage,
                               nullptr, "weft_smem", nullptr, llvm::GlobalValue::NotThreadLocal, 3);
  smem_array->setAlignment(llvm::Align(1024));
  smem_ = smem_base_ = smem_array;
  tid_ = Intrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x, {});

  auto arg = fn_->arg_begin();
  std::vector<llvm::Value*> tensor_args;
  for (const auto& p : k_.params)
    if (Val(p.value).space == tile::Space::Global) {
      arg->setName(p.name);
      tensor_args.push_back(&*arg++);
    }
  for (const auto& [var, name] : k_.size_names) {
    arg->setName(name);
    sizes_[var] = &*arg++;
  }
  for (const auto& p : k_.params)
    if (Val(p.value).space == tile::Space::Scalar) {
      arg->setName(p.name);
      llvm::Value* x = &*arg++;
      if (Val(p.value).dtype == Dtype::Bool) x = b_.CreateICmpNE(x, I32(0));
      slots_[p.value.index].scalar = x;
    }
  // Tensor maps: 128-byte CUtensorMaps by value in the parameter space (`.param .align 64 .b8
  // NAME[128]`), read in place through their generic address (grid_constant: not copied).
  auto* map_type = llvm::ArrayType::get(b_.getInt8Ty(), 128);
  for (std::size_t i = 0; i < map_specs_.size(); ++i) {
    llvm::Argument* a = fn_->getArg(static_cast<unsigned>(first_map + i));
    a->setName(k_.params.at(static_cast<std::size_t>(map_specs_[i].param)).name + "_map");
    a->addAttr(llvm::Attribute::getWithByValType(ctx_, map_type));
    a->addAttr(llvm::Attribute::getWithAlignment(ctx_, llvm::Align(64)));
    a->addAttr(llvm::Attribute::NoAlias);
    a->addAttr(llvm::Attribute::ReadOnly);
    maps_.push_back(b_.CreatePtrToInt(a, b_.getInt64Ty()));
  }
  std::size_t t = 0;
  for (const auto& p : k_.params) {
    const tile::Value& v = Val(p.value);
    if (v.space != tile::Space::Global) continue;
    GlobalSlot g;
    g.address = tensor_args[t++];
    g.param = static_cast<int>(&p - k_.params.data());
    for (const auto& d : v.shape) g.extents.push_back(DimValue(d));
    g.first.assign(g.extents.size(), I64(0));
    g.strides.assign(g.extents.size(), I64(1));
    for (std::size_t i = g.extents.size(); i-- > 1;) g.strides[i - 1] = b_.CreateMul(g.strides[i], g.extents[i]);
    slots_[p.value.index].global = g;
  }
  if (lowering_.roles) specialized_ = &*lowering_.roles;
  if (specialized_) {
    mbarriers_ = std::max(mbarriers_, 2 * specialized_->stages + 1);  // full, empty, and one in place
    if (specialized_->staged) {
      front_bytes_ = 1024;
      smem_ = llvm::ConstantExpr::getInBoundsGetElementPtr(b_.getInt8Ty(), smem_base_, b_.getInt32(1024));
    }
    out.threads = plan_.threads + 128;
    out.persistent = specialized_->persistent;
    EmitSpecialized();
  } else {
    EmitBody();
  }
  if (scratch_bytes_ || mbarriers_)
    out.shared_bytes = MbarrierOffset() + (mbarriers_ * 8 + 15) / 16 * 16 + scratch_bytes_;
  out.shared_bytes += front_bytes_;
  out.tensor_maps = map_specs_;
  out.protocols = protocols_;
  b_.CreateRetVoid();
  if (di_) di_->finalize();

  llvm::NamedMDNode* annotations = m_.getOrInsertNamedMetadata("nvvm.annotations");
  auto md = [&](const char* key, std::int64_t value) {
    annotations->addOperand(llvm::MDNode::get(ctx_, {llvm::ValueAsMetadata::get(fn_), llvm::MDString::get(ctx_, key),
                                                     llvm::ValueAsMetadata::get(llvm::ConstantInt::get(
                                                         b_.getInt32Ty(), static_cast<std::uint64_t>(value)))}));
  };
  md("kernel", 1);
  md("maxntidx", out.threads);
  if (lowering_.min_blocks > 0) md("minctasm", lowering_.min_blocks);
  if (!map_specs_.empty()) {
    // The map parameters are grid constants (1-based argument indices): used where they are.
    std::vector<llvm::Metadata*> indices;
    for (std::size_t i = 0; i < map_specs_.size(); ++i)
      indices.push_back(llvm::ValueAsMetadata::get(b_.getInt32(static_cast<std::uint32_t>(first_map + i + 1))));
    annotations->addOperand(
        llvm::MDNode::get(ctx_, {llvm::ValueAsMetadata::get(fn_), llvm::MDString::get(ctx_, "grid_constant"),
                                 llvm::MDNode::get(ctx_, indices)}));
  }
  return out;
}

}  // namespace

llvm::TargetMachine* NvptxMachine(synth::Target target) {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
    // 32-bit pointers to shared memory (clang's -fcuda-short-ptr): shared addresses are 32 bits
    // wide, so 64-bit ones only cost registers and 64-bit adds in every ldmatrix address.
    auto& options = llvm::cl::getRegisteredOptions();
    if (auto it = options.find("nvptx-short-ptr"); it != options.end())
      static_cast<llvm::cl::opt<bool>*>(it->second)->setValue(true);
  });
  static std::map<synth::Target, std::unique_ptr<llvm::TargetMachine>> machines;
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  auto& tm = machines[target];
  if (!tm) {
    std::string error;
    llvm::Triple triple("nvptx64-nvidia-cuda");
    const llvm::Target* t = llvm::TargetRegistry::lookupTarget(triple.str(), error);
    if (!t) return nullptr;
    tm.reset(t->createTargetMachine(triple.str(), target == synth::Target::Sm80 ? "sm_80" : "sm_90a", "+ptx80",
                                    llvm::TargetOptions(), std::nullopt, std::nullopt,
                                    llvm::CodeGenOptLevel::Aggressive));
  }
  return tm.get();
}

bool EmitPtx(llvm::Module& module, synth::Target target, std::string& ptx_text) {
  llvm::TargetMachine* tm = NvptxMachine(target);
  if (!tm) return false;
  // The O3 pipeline, then the NVPTX back end.
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(tm);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  mpm.run(module, mam);
  llvm::SmallString<0> ptx;
  llvm::raw_svector_ostream ptx_out(ptx);
  llvm::legacy::PassManager codegen;
  if (tm->addPassesToEmitFile(codegen, ptx_out, nullptr, llvm::CodeGenFileType::AssemblyFile)) return false;
  codegen.run(module);
  ptx_text = std::string(ptx.str());
  return true;
}

Result<DeviceKernel, std::vector<Diagnostic>> EmitKernel(const tile::Kernel& kernel, const synth::Plan& plan,
                                                         const schedule::Schedule& schedule,
                                                         const SourceManager& sources, const Options& options) {
  llvm::TargetMachine* tm = NvptxMachine(plan.target);
  if (!tm)
    return std::vector<Diagnostic>{
        MakeDiagnostic(DiagnosticKind::CodegenFailed, kernel.span, "no NVPTX target in this LLVM")};
  llvm::LLVMContext ctx;
  auto module = std::make_unique<llvm::Module>(kernel.name, ctx);
  module->setTargetTriple("nvptx64-nvidia-cuda");
  module->setDataLayout(tm->createDataLayout());
  DeviceKernel out;
  try {
    Emitter emitter(kernel, plan, schedule.lowering, ctx, *module);
    if (options.line_info) emitter.EnableLineInfo(sources);
    out = emitter.Emit();
  } catch (const Unsupported& u) {
    return std::vector<Diagnostic>{MakeDiagnostic(DiagnosticKind::CodegenUnsupported, u.span, u.message)};
  }
  // The barrier protocol of each ring cannot deadlock (docs/scheduling.md): checked on every kernel
  // emitted. A deadlock would be a compiler bug; the kernel is refused, never run.
  for (const schedule::Protocol& p : out.protocols) {
    schedule::ProtocolCheck check = schedule::CheckProtocol(p);
    if (!check.deadlock_free)
      return std::vector<Diagnostic>{MakeDiagnostic(DiagnosticKind::HostBuildFailed, kernel.span, kernel.name,
                                                    "the barrier protocol of a pipeline (" + p.name +
                                                        ") can deadlock: " + check.ToString() +
                                                        " (a compiler bug; please report it)")};
  }
  std::string text;
  llvm::raw_string_ostream verify_out(text);
  if (llvm::verifyModule(*module, &verify_out))
    return std::vector<Diagnostic>{MakeDiagnostic(DiagnosticKind::CodegenFailed, kernel.span, "invalid IR: " + text)};
  {
    llvm::raw_string_ostream ir(out.llvm_ir);
    module->print(ir, nullptr);
  }
  if (!EmitPtx(*module, plan.target, out.ptx))
    return std::vector<Diagnostic>{MakeDiagnostic(DiagnosticKind::CodegenFailed, kernel.span, "cannot emit PTX")};
  return out;
}

}  // namespace weft::codegen
