// Array kernels of row and scan groups (array.cpp, step 3): one block per row. Row kernels compute
// the reductions in program order (from registers when the row fits, else a loop each), then the
// outputs; scans fold a row chunk by chunk in index order.
#include <algorithm>
#include <cmath>

#include "codegen/array_emitter.h"

namespace weft::codegen::array_emit {

// The threads of a row or scan block: the row's length rounded up to a power of two when it is
// a constant, between one warp and 256.
int ArrayEmitter::RowThreads() const {
  auto n = group_.space.empty() ? std::optional<std::int64_t>(1) : group_.space.back().AsConstant();
  if (!n) return kThreads;
  int t = 32;
  while (t < kThreads && t < *n) t *= 2;
  return t;
}

// This block's row: its coordinates over space[:-1] (one block per row); false past the last.
void ArrayEmitter::BeginRow() {
  const std::vector<Dim>& space = group_.space;
  if (space.empty()) Refuse("a row kernel over a rank-0 space");
  std::vector<Dim> rows(space.begin(), space.end() - 1);
  out_.grid = {Product(rows, 0, rows.size())};
  row_ = Sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x);
  ReturnUnless(b_.CreateICmpULT(row_, EmitDim(out_.grid[0])));  // no rows: the one block launched
  row_coords_ = Unravel(row_, rows);
  n_ = EmitDim(space.back());
  tid_ = Tid();
}

llvm::Value* ArrayEmitter::SharedAt(llvm::Value* byte_offset) {
  return b_.CreateGEP(b_.getInt8Ty(), shared_, b_.CreateTrunc(byte_offset, b_.getInt32Ty()));
}

// A butterfly shuffle of a compute-type value across the warp (32-bit pieces).
llvm::Value* ArrayEmitter::Shuffle(llvm::Value* v, int offset) {
  llvm::Type* t = v->getType();
  auto shfl = [&](llvm::Value* x) {
    return b_.CreateIntrinsic(
        b_.getInt32Ty(), llvm::Intrinsic::nvvm_shfl_sync_bfly_i32,
        {b_.getInt32(0xffffffffu), x, b_.getInt32(static_cast<std::uint32_t>(offset)), b_.getInt32(0x1f)});
  };
  if (t->isIntegerTy(1)) return b_.CreateTrunc(shfl(b_.CreateZExt(v, b_.getInt32Ty())), t);
  unsigned bits = t->getPrimitiveSizeInBits();
  llvm::Value* i = b_.CreateBitCast(v, b_.getIntNTy(bits));
  if (bits == 32) return b_.CreateBitCast(shfl(i), t);
  llvm::Value* lo = shfl(b_.CreateTrunc(i, b_.getInt32Ty()));
  llvm::Value* hi = shfl(b_.CreateTrunc(b_.CreateLShr(i, 32), b_.getInt32Ty()));
  llvm::Value* whole =
      b_.CreateOr(b_.CreateZExt(lo, b_.getInt64Ty()), b_.CreateShl(b_.CreateZExt(hi, b_.getInt64Ty()), 32));
  return b_.CreateBitCast(whole, t);
}

// Every thread's partial combined, the result in every thread: a butterfly within each warp,
// then the warps' results through shared memory, combined in warp order by every thread.
ArrayEmitter::Pair ArrayEmitter::BlockReduce(Pair mine, const Combiner2& combine, int threads) {
  for (int offset = 16; offset >= 1; offset /= 2) {
    Pair other;
    for (llvm::Value* v : mine) other.push_back(Shuffle(v, offset));
    mine = combine(mine, other);
  }
  int warps = threads / 32;
  if (warps == 1) return mine;
  Barrier();  // the previous reduction's readers are done with the slots
  llvm::Value* warp = b_.CreateUDiv(tid_, I64(32));
  If(b_.CreateICmpEQ(b_.CreateURem(tid_, I64(32)), I64(0)), [&] {
    for (std::size_t p = 0; p < mine.size(); ++p)
      b_.CreateStore(mine[p],
                     SharedAt(b_.CreateAdd(b_.CreateMul(warp, I64(16)), I64(8 * static_cast<std::int64_t>(p)))));
  });
  Barrier();
  auto read = [&](int w) {
    Pair out;
    for (std::size_t p = 0; p < mine.size(); ++p)
      out.push_back(b_.CreateLoad(mine[p]->getType(), SharedAt(I64(16 * w + 8 * static_cast<std::int64_t>(p)))));
    return out;
  };
  Pair all = read(0);
  for (int w = 1; w < warps; ++w) all = combine(all, read(w));
  return all;
}

// The register plan of a row kernel, when it has one: a constant row length n of at most
// kRowRegisters elements a thread, and no combiner reduction (thread 0 folds those alone).
// Units are 16-byte vectors of the widest tensor when n is a multiple of their width, else single
// elements; threads: a power of two from one warp to 256, about two units each.
std::optional<ArrayEmitter::RowPlan> ArrayEmitter::RegisterRows() const {
  if (group_.space.empty()) return std::nullopt;
  auto n = group_.space.back().AsConstant();
  if (!n || *n <= 0) return std::nullopt;
  for (NodeId id : group_.nodes)
    if (Get(id).kind == Kind::Reduce && Get(id).combiner) return std::nullopt;
  int widest = 1;
  for (NodeId t : out_.tensors) widest = std::max(widest, Bytes(Get(t).dtype));
  RowPlan p;
  p.width = static_cast<std::size_t>(std::max(1, std::min(8, 16 / widest)));
  if (*n % static_cast<std::int64_t>(p.width) != 0) p.width = 1;
  std::int64_t units = *n / static_cast<std::int64_t>(p.width);
  p.threads = 32;
  while (p.threads < kThreads && 2 * p.threads < units) p.threads *= 2;
  p.slots = (units + p.threads - 1) / p.threads;
  if (p.slots * static_cast<std::int64_t>(p.width) > kRowRegisters) return std::nullopt;
  return p;
}

// Row kernels: one block per row of space = [..rows, n]. With a register plan (RegisterRows),
// each thread loads its units of the row once, and every pass (the reductions in program order,
// then the outputs) reads those values: the evaluator's cache carries them, as the passes are
// straight-line code over the same coordinates. The vector loads and stores need the extents and
// slice starts they rely on to be multiples of the width, checked at run time (like the
// elementwise kernel's); when they are not, or without a plan, the general path: each reduction
// is a loop over the row (its operand recomputed from the inputs), then a loop writes the outputs.
void ArrayEmitter::RowKernel() {
  std::optional<RowPlan> plan = RegisterRows();
  int threads = plan ? plan->threads : RowThreads();
  out_.device.threads = threads;
  out_.device.shared_bytes = threads * 9;  // combiner partials: 8 bytes and a flag per thread
  BeginRow();
  if (plan) {
    llvm::BasicBlock* decide = b_.GetInsertBlock();
    llvm::BasicBlock* registers = Block("row_registers");
    llvm::BasicBlock* general = Block("row_general");
    auto saved = cache_;
    b_.SetInsertPoint(registers);
    aligned_.clear();
    RegisterRowBody(*plan);
    width_ = 1;
    cache_ = saved;
    current_.clear();
    b_.SetInsertPoint(decide);
    llvm::Value* ok = b_.getTrue();
    auto w = static_cast<std::int64_t>(plan->width);
    for (const Dim& d : aligned_) ok = b_.CreateAnd(ok, b_.CreateICmpEQ(b_.CreateSRem(EmitDim(d), I64(w)), I64(0)));
    b_.CreateCondBr(ok, registers, general);
    b_.SetInsertPoint(general);
  }
  GeneralRowBody(threads);
}

// The per-row outputs (of shape rows or [..rows, 1]): thread 0 stores them.
void ArrayEmitter::StoreRowValues(NodeId out) {
  const std::vector<Dim>& space = group_.space;
  std::vector<Dim> rows(space.begin(), space.end() - 1);
  const std::vector<Dim>& shape = Get(out).shape;
  std::vector<Dim> expanded = rows;
  expanded.push_back(Dim::Constant(1));
  if (!(shape == rows) && !(shape == expanded)) Refuse("an output of another shape than its rows");
  If(b_.CreateICmpEQ(tid_, I64(0)), [&] {
    Coords c = row_coords_;
    if (shape.size() > rows.size()) c.push_back(Coord{I64(0), false});
    Store(out, row_, EmitOne(out, c));
  });
}

void ArrayEmitter::RegisterRowBody(const RowPlan& p) {
  const std::vector<Dim>& space = group_.space;
  width_ = p.width;
  auto w = static_cast<std::int64_t>(p.width);
  std::int64_t units = *space.back().AsConstant() / w;
  // Each slot's coordinates; a slot past the row's end (the last, when the threads do not divide
  // the units) reads the last unit instead and is masked out of reductions and stores.
  std::vector<Coords> at;
  std::vector<llvm::Value*> valid, first;
  for (std::int64_t k = 0; k < p.slots; ++k) {
    llvm::Value* u = b_.CreateAdd(tid_, I64(k * p.threads));
    llvm::Value* live = nullptr;
    if ((k + 1) * p.threads > units) {
      live = b_.CreateICmpULT(u, I64(units));
      u = b_.CreateSelect(live, u, I64(units - 1));
    }
    llvm::Value* j = w > 1 ? b_.CreateMul(u, I64(w)) : u;
    Coords c = row_coords_;
    c.push_back(Coord{j, w > 1});
    at.push_back(c);
    valid.push_back(live);
    first.push_back(j);
  }
  // The loads of every pass are issued here, before the first reduction's barriers (Hoist).
  llvm::BasicBlock* prologue = b_.GetInsertBlock();
  llvm::BasicBlock* body = Block("row_body");
  b_.CreateBr(body);
  b_.SetInsertPoint(body);
  std::set<llvm::BasicBlock*> before;
  for (llvm::BasicBlock& block : *f_)
    if (&block != prologue && &block != body) before.insert(&block);
  for (NodeId id : group_.nodes) {
    const Node& r = Get(id);
    if (r.kind != Kind::Reduce) continue;
    NodeId arg = r.args[0];
    Dtype d = Get(arg).dtype;
    if (!(Get(arg).shape == space)) Refuse("a reduction over another row than its kernel's");
    Reduction red = BuiltinOf(r, d);
    Pair acc = red.identity;
    for (std::int64_t k = 0; k < p.slots; ++k) {
      auto s = static_cast<std::size_t>(k);
      Val x = Emit(arg, at[s]);
      for (std::size_t l = 0; l < p.width; ++l) {
        Pair e = {ToCompute(LaneOf(x, l), d)};
        if (r.fn == "argmax")
          e.push_back(l == 0 ? first[s] : b_.CreateAdd(first[s], I64(static_cast<std::int64_t>(l))));
        if (valid[s])
          for (std::size_t q = 0; q < e.size(); ++q) e[q] = b_.CreateSelect(valid[s], e[q], red.identity[q]);
        acc = red.combine(acc, e);
      }
    }
    current_[id.index] = FinishReduce(r, d, BlockReduce(acc, red.combine, p.threads));
  }
  for (NodeId out : group_.outputs) {
    if (!(Get(out).shape == space)) {
      StoreRowValues(out);
      continue;
    }
    // Every slot's value first, then the stores: the loads stay ahead of every store.
    std::vector<Val> values;
    for (std::int64_t k = 0; k < p.slots; ++k) values.push_back(Emit(out, at[static_cast<std::size_t>(k)]));
    for (std::int64_t k = 0; k < p.slots; ++k) {
      auto s = static_cast<std::size_t>(k);
      llvm::Value* offset = b_.CreateAdd(b_.CreateMul(row_, n_), first[s]);
      auto store = [&] { StoreUnit(out, offset, values[s], p.width); };
      if (valid[s]) {
        If(valid[s], store);
      } else {
        store();
      }
    }
  }
  b_.CreateRetVoid();
  Hoist(prologue, before);
}

// Moves every read of a tensor in the blocks after `prologue` (none of `before`), with the
// address arithmetic it needs, to the end of `prologue`, when none of it depends on anything
// there but pure arithmetic (not on a reduction's result): a later pass's loads are then in
// flight during the reductions instead of after their barriers.
void ArrayEmitter::Hoist(llvm::BasicBlock* prologue, const std::set<llvm::BasicBlock*>& before) {
  auto is_read = [](llvm::Instruction& i) {
    if (auto* call = llvm::dyn_cast<llvm::CallInst>(&i))
      return call->getIntrinsicID() == llvm::Intrinsic::nvvm_ldg_global_i;
    return llvm::isa<llvm::LoadInst>(i) && i.hasMetadata(llvm::LLVMContext::MD_invariant_load);
  };
  std::map<llvm::Instruction*, bool> movable;
  std::function<bool(llvm::Instruction*)> can = [&](llvm::Instruction* i) -> bool {
    if (auto it = movable.find(i); it != movable.end()) return it->second;
    movable[i] = false;  // (no cycles outside phis, which are never moved)
    llvm::BasicBlock* at = i->getParent();
    if (at == prologue || before.count(at)) return movable[i] = true;  // dominates the prologue's end
    bool pure = !llvm::isa<llvm::PHINode>(i) && !i->isTerminator() && !llvm::isa<llvm::AllocaInst>(i) &&
                (is_read(*i) || (!i->mayReadOrWriteMemory() && !i->mayHaveSideEffects()));
    if (auto* call = llvm::dyn_cast<llvm::CallBase>(i); call && call->isConvergent()) pure = false;
    if (!pure) return false;
    for (llvm::Value* op : i->operands())
      if (auto* d = llvm::dyn_cast<llvm::Instruction>(op); d && !can(d)) return false;
    return movable[i] = true;
  };
  std::vector<llvm::Instruction*> reads;
  for (llvm::BasicBlock& block : *f_) {
    if (&block == prologue || before.count(&block)) continue;
    for (llvm::Instruction& i : block)
      if (is_read(i) && can(&i)) reads.push_back(&i);
  }
  std::function<void(llvm::Instruction*)> move = [&](llvm::Instruction* i) {
    if (i->getParent() == prologue || before.count(i->getParent())) return;
    for (llvm::Value* op : i->operands())
      if (auto* d = llvm::dyn_cast<llvm::Instruction>(op)) move(d);
    i->moveBefore(prologue->getTerminator());
  };
  for (llvm::Instruction* i : reads) move(i);
}

// The general row kernel: a loop over the row per reduction, then one for the outputs.
void ArrayEmitter::GeneralRowBody(int threads) {
  const std::vector<Dim>& space = group_.space;
  llvm::Value* step = I64(threads);
  auto element = [&](llvm::Value* j) {
    Coords c = row_coords_;
    c.push_back(Coord{j, false});
    return c;
  };
  for (NodeId id : group_.nodes) {
    const Node& r = Get(id);
    if (r.kind != Kind::Reduce) continue;
    NodeId arg = r.args[0];
    Dtype d = Get(arg).dtype;
    if (!(Get(arg).shape == space)) Refuse("a reduction over another row than its kernel's");
    llvm::Value* value = nullptr;
    if (r.combiner) {
      value = CombinerReduce(r, threads, element);
    } else {
      value = BuiltinReduce(r, d, threads, step, element);
    }
    current_[id.index] = value;
  }
  // The outputs: whole rows by the block's threads; per-row values by thread 0.
  for (NodeId out : group_.outputs) {
    if (Get(out).shape == space) {
      Loop(tid_, n_, step,
           [&](llvm::Value* j) { Store(out, b_.CreateAdd(b_.CreateMul(row_, n_), j), EmitOne(out, element(j))); });
    } else {
      StoreRowValues(out);
    }
  }
  b_.CreateRetVoid();
}

ArrayEmitter::Reduction ArrayEmitter::BuiltinOf(const Node& r, Dtype d) {
  llvm::Type* ct = ComputeType(d);
  bool f = IsFloat(d);
  const std::string& fn = r.fn;
  if (d == Dtype::Bool) Refuse(Quote(fn) + " of bool");
  Reduction out;
  if (fn == "sum" || fn == "mean") {
    out.identity = {llvm::Constant::getNullValue(ct)};
    out.combine = [this, f](const Pair& a, const Pair& c) {
      return Pair{f ? b_.CreateFAdd(a[0], c[0]) : b_.CreateAdd(a[0], c[0])};
    };
  } else if (fn == "max" || fn == "min") {
    bool max = fn == "max";
    llvm::Value* id = nullptr;
    if (f) {
      id = F(ct, max ? -HUGE_VAL : HUGE_VAL);
    } else if (IsSigned(d)) {
      id = I64(max ? INT64_MIN : INT64_MAX);
    } else {
      id = I64(max ? 0 : -1);
    }
    out.identity = {id};
    out.combine = [this, max, d](const Pair& a, const Pair& c) { return Pair{MaxMin(max, d, a[0], c[0])}; };
  } else if (fn == "argmax") {
    llvm::Value* id = f ? F(ct, -HUGE_VAL) : IsSigned(d) ? I64(INT64_MIN) : I64(0);
    out.identity = {id, I64(INT64_MAX)};
    out.combine = [this, d](const Pair& a, const Pair& c) { return ArgmaxCombine(d, a, c); };
  } else {
    Refuse("the reduction " + Quote(fn));
  }
  return out;
}

// The row's value from the block's combined partials: argmax's index, mean's quotient.
llvm::Value* ArrayEmitter::FinishReduce(const Node& r, Dtype d, const Pair& all) {
  if (r.fn == "argmax") return Convert(all[1], Dtype::I64, r.dtype);
  llvm::Value* v = all[0];
  if (r.fn == "mean") {
    if (!IsFloat(d)) Refuse("`mean` of " + std::string(Spelling(d)));
    v = b_.CreateFDiv(v, b_.CreateSIToFP(n_, ComputeType(d)));
  }
  return FromCompute(v, r.dtype);
}

// sum, mean, max, min, argmax: each thread folds the elements j = tid, tid + T, ... (coalesced),
// then the block combines the partials (a tree: another order of additions than the
// interpreter's, docs/numerics.md).
llvm::Value* ArrayEmitter::BuiltinReduce(const Node& r, Dtype d, int threads, llvm::Value* step,
                                         const std::function<Coords(llvm::Value*)>& element) {
  Reduction red = BuiltinOf(r, d);
  const Pair& identity = red.identity;
  std::vector<llvm::Value*> slots;
  for (llvm::Value* v : identity) slots.push_back(Local(v->getType(), v));
  Loop(tid_, n_, step, [&](llvm::Value* j) {
    Pair acc;
    for (std::size_t p = 0; p < slots.size(); ++p) acc.push_back(b_.CreateLoad(identity[p]->getType(), slots[p]));
    Pair x = {ToCompute(EmitOne(r.args[0], element(j)), d)};
    if (r.fn == "argmax") x.push_back(j);
    Pair next = red.combine(acc, x);
    for (std::size_t p = 0; p < slots.size(); ++p) b_.CreateStore(next[p], slots[p]);
  });
  Pair mine;
  for (std::size_t p = 0; p < slots.size(); ++p) mine.push_back(b_.CreateLoad(identity[p]->getType(), slots[p]));
  return FinishReduce(r, d, BlockReduce(mine, red.combine, threads));
}

// argmax's partials (value, index): a NaN beats every number (the first NaN wins), a larger
// value a smaller one (-0 < +0), and of equals the smaller index.
ArrayEmitter::Pair ArrayEmitter::ArgmaxCombine(Dtype d, const Pair& a, const Pair& c) {
  llvm::Value* take = nullptr;
  llvm::Value* earlier = b_.CreateICmpSLT(c[1], a[1]);
  if (IsFloat(d)) {
    auto greater = [&](llvm::Value* x, llvm::Value* y) {
      llvm::Type* it = b_.getIntNTy(x->getType()->getPrimitiveSizeInBits());
      llvm::Value* zero = llvm::ConstantInt::get(it, 0);
      llvm::Value* x_negative = b_.CreateICmpSLT(b_.CreateBitCast(x, it), zero);
      llvm::Value* y_negative = b_.CreateICmpSLT(b_.CreateBitCast(y, it), zero);
      llvm::Value* zeros = b_.CreateAnd(b_.CreateFCmpOEQ(x, y), b_.CreateFCmpOEQ(x, F(x->getType(), 0.0)));
      return b_.CreateOr(b_.CreateFCmpOGT(x, y),
                         b_.CreateAnd(zeros, b_.CreateAnd(y_negative, b_.CreateNot(x_negative))));
    };
    llvm::Value* a_nan = b_.CreateFCmpUNO(a[0], a[0]);
    llvm::Value* c_nan = b_.CreateFCmpUNO(c[0], c[0]);
    llvm::Value* numbers = b_.CreateOr(greater(c[0], a[0]), b_.CreateAnd(b_.CreateNot(greater(a[0], c[0])), earlier));
    take =
        b_.CreateSelect(c_nan, b_.CreateOr(b_.CreateNot(a_nan), earlier), b_.CreateAnd(b_.CreateNot(a_nan), numbers));
  } else {
    llvm::Value* gt = IsSigned(d) ? b_.CreateICmpSGT(c[0], a[0]) : b_.CreateICmpUGT(c[0], a[0]);
    llvm::Value* eq = b_.CreateICmpEQ(c[0], a[0]);
    take = b_.CreateOr(gt, b_.CreateAnd(eq, earlier));
  }
  return {b_.CreateSelect(take, c[0], a[0]), b_.CreateSelect(take, c[1], a[1])};
}

// reduce f z x: the interpreter's left fold, exactly: thread 0 folds the row in index order from
// z (a combiner need not be associative, nor z its identity: `maximum acc (abs x)` is neither),
// and shares the result through shared memory. Rows run in parallel, one block each.
llvm::Value* ArrayEmitter::CombinerReduce(const Node& r, int threads,
                                          const std::function<Coords(llvm::Value*)>& element) {
  (void)threads;
  Dtype d = r.dtype;
  llvm::Type* t = Storage(d);
  if (Bytes(d) > 8) Refuse("a combiner over " + std::string(Spelling(d)));
  const Node& z = Get(r.args[1]);
  Barrier();
  If(b_.CreateICmpEQ(tid_, I64(0)), [&] {
    llvm::Value* init =
        Convert(EmitOne(r.args[1], Broadcast(row_coords_,
                                             group_.space.size() > 1
                                                 ? std::vector<Dim>(group_.space.begin(), group_.space.end() - 1)
                                                 : std::vector<Dim>{},
                                             z.shape)),
                z.dtype, d);
    llvm::Value* acc = Local(t, init);
    Loop(I64(0), n_, I64(1), [&](llvm::Value* j) {
      llvm::Value* x = EmitOne(r.args[0], element(j));
      b_.CreateStore(Combine(*r.combiner, b_.CreateLoad(t, acc), x), acc);
    });
    b_.CreateStore(b_.CreateLoad(t, acc), SharedAt(I64(0)));
  });
  Barrier();
  llvm::Value* result = b_.CreateLoad(t, SharedAt(I64(0)));
  Barrier();
  return result;
}

// scan f z x: one block per row, the row in chunks of T elements: the block loads a chunk's
// elements (their prologue computed in parallel) into shared memory, thread 0 folds them in
// index order from the carry (the interpreter's left fold, exactly, for any combiner), and the
// block computes the epilogue and stores in parallel.
void ArrayEmitter::ScanKernel() {
  int threads = RowThreads();
  out_.device.threads = threads;
  out_.device.shared_bytes = threads * 8;
  BeginRow();
  const std::vector<Dim>& space = group_.space;
  NodeId scan;
  int scans = 0;
  for (NodeId id : group_.nodes)
    if (Get(id).kind == Kind::Scan) scan = id, ++scans;
  if (scans != 1) Refuse("a scan kernel with " + std::to_string(scans) + " scans");
  const Node& s = Get(scan);
  Dtype d = s.dtype;
  llvm::Type* t = Storage(d);
  if (Bytes(d) > 8) Refuse("a scan over " + std::string(Spelling(d)));
  for (NodeId out : group_.outputs)
    if (!(Get(out).shape == space)) Refuse("a scan output of another shape than its rows");
  const Node& z = Get(s.args[1]);
  std::vector<Dim> rows(space.begin(), space.end() - 1);
  llvm::Value* carry = Local(t, Convert(EmitOne(s.args[1], Broadcast(row_coords_, rows, z.shape)), z.dtype, d));
  Loop(I64(0), n_, I64(threads), [&](llvm::Value* base) {
    llvm::Value* j = b_.CreateAdd(base, tid_);
    llvm::Value* valid = b_.CreateICmpSLT(j, n_);
    Coords c = row_coords_;
    c.push_back(Coord{j, false});
    llvm::Value* x = Local(t, llvm::Constant::getNullValue(t));
    If(valid, [&] { b_.CreateStore(EmitOne(s.args[0], c), x); });
    // The chunk's inclusive scan, exactly the interpreter's left fold: thread 0 folds the chunk's
    // elements in index order from the carry (z, then the previous chunk's last result), in
    // shared memory; every thread then reads its own.
    llvm::Value* mine = SharedAt(b_.CreateMul(tid_, I64(8)));
    b_.CreateStore(b_.CreateLoad(t, x), mine);
    Barrier();
    If(b_.CreateICmpEQ(tid_, I64(0)), [&] {
      llvm::Value* count = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, I64(threads), b_.CreateSub(n_, base));
      Loop(I64(0), count, I64(1), [&](llvm::Value* i) {
        llvm::Value* at = SharedAt(b_.CreateMul(i, I64(8)));
        llvm::Value* folded = Combine(*s.combiner, b_.CreateLoad(t, carry), b_.CreateLoad(t, at));
        b_.CreateStore(folded, at);
        b_.CreateStore(folded, carry);
      });
    });
    Barrier();
    llvm::Value* v = b_.CreateLoad(t, mine);
    Barrier();
    current_[scan.index] = v;
    current_coords_ = c;
    If(valid, [&] {
      llvm::Value* offset = b_.CreateAdd(b_.CreateMul(row_, n_), j);
      for (NodeId out : group_.outputs) Store(out, offset, EmitOne(out, c));
    });
    current_.erase(scan.index);
  });
  b_.CreateRetVoid();
}

}  // namespace weft::codegen::array_emit
