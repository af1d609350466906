// Array kernels of the elementwise, gather and concat groups (array.cpp, step 3): a grid-stride
// loop over the output's elements, with a 16-byte vector path and a scalar path.
#include <algorithm>

#include "codegen/array_emitter.h"

namespace weft::codegen::array_emit {

// The scalar path of a kernel with a 4-bit output: a thread computes elements 2p and 2p + 1 (when
// there is one), so that it writes their byte whole; past an odd count the high nibble is 0.
void ArrayEmitter::ScalarPairs(llvm::Value* count, llvm::Value* first, llvm::Value* stride) {
  const std::vector<Dim>& space = group_.space;
  llvm::Type* byte = b_.getInt8Ty();
  llvm::Value* pairs = b_.CreateUDiv(b_.CreateAdd(count, I64(1)), I64(2));
  Loop(first, pairs, stride, [&](llvm::Value* p) {
    llvm::Value* e = b_.CreateMul(p, I64(2));
    std::vector<llvm::Value*> slots;  // per 4-bit output, its byte so far
    Coords c = Unravel(e, space);
    for (NodeId out : group_.outputs) {
      llvm::Value* v = EmitOne(out, c);
      if (IsPacked(Get(out).dtype))
        slots.push_back(Local(byte, b_.CreateZExt(v, byte)));
      else
        Store(out, e, v);
    }
    llvm::Value* next = b_.CreateAdd(e, I64(1));
    If(b_.CreateICmpULT(next, count), [&] {
      Coords c1 = Unravel(next, space);
      std::size_t k = 0;
      for (NodeId out : group_.outputs) {
        llvm::Value* v = EmitOne(out, c1);
        if (!IsPacked(Get(out).dtype)) {
          Store(out, next, v);
          continue;
        }
        llvm::Value* slot = slots[k++];
        b_.CreateStore(PackByte(b_.CreateTrunc(b_.CreateLoad(byte, slot), v->getType()), v), slot);
      }
    });
    std::size_t k = 0;
    for (NodeId out : group_.outputs) {
      if (!IsPacked(Get(out).dtype)) continue;
      b_.CreateAlignedStore(b_.CreateLoad(byte, slots[k++]), b_.CreateGEP(byte, pointers_.at(out.index), p),
                            llvm::Align(1));
    }
  });
}

// Elementwise, gather and concat: a grid-stride loop over the output's elements. When every
// tensor is read along its innermost axis in step with the output, W consecutive elements are a
// thread's unit: 16-byte vector loads and stores. Whether that holds (extents and slice starts
// multiples of W) is known only at run time, so the kernel branches between the vector path
// and a scalar path that does every element one at a time.
void ArrayEmitter::ElementwiseKernel() {
  out_.device.threads = kThreads;
  const std::vector<Dim>& space = group_.space;
  for (NodeId out : group_.outputs)
    if (!(Get(out).shape == space)) Refuse("an output of another shape than its kernel's");
  Dim total = Product(space, 0, space.size());
  int widest = 1;
  for (NodeId t : out_.tensors) widest = std::max(widest, Bytes(Get(t).dtype));
  std::size_t width = static_cast<std::size_t>(std::min(8, 16 / widest));
  bool vectorize = group_.kind == GroupKind::Elementwise && !space.empty() && width > 1;
  // A block per chunk of the vector path (the scalar path strides over the same grid).
  out_.grid = {CeilDiv(total, kThreads * (vectorize ? static_cast<std::int64_t>(width) * kUnroll : 4))};

  llvm::Value* count = EmitDim(total);
  llvm::Value* threads = I64(kThreads);
  llvm::Value* first = b_.CreateAdd(b_.CreateMul(Sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x), threads), Tid());
  llvm::Value* stride = b_.CreateMul(Sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x), threads);
  llvm::BasicBlock* decide = b_.GetInsertBlock();
  llvm::BasicBlock* scalar = Block("scalar");
  llvm::BasicBlock* done = Block("done");

  // Scalar path: element e at a time.
  b_.SetInsertPoint(scalar);
  width_ = 1;
  bool packed = false;
  for (NodeId out : group_.outputs) packed = packed || IsPacked(Get(out).dtype);
  if (packed) {
    ScalarPairs(count, first, stride);
  } else {
    Loop(first, count, stride, [&](llvm::Value* e) {
      Coords c = Unravel(e, space);
      for (NodeId out : group_.outputs) Store(out, e, EmitOne(out, c));
    });
  }
  b_.CreateBr(done);

  if (vectorize) {
    llvm::BasicBlock* vector = Block("vector");
    b_.SetInsertPoint(vector);
    width_ = width;
    aligned_ = {space.back()};
    auto w = static_cast<std::int64_t>(width);
    llvm::Value* units = b_.CreateUDiv(count, I64(w));
    // Chunks of kUnroll x T units, a thread's units T apart (coalesced): all their loads are
    // issued before any store, kUnroll 16-byte vectors in flight per tensor and thread; then
    // the units past the last whole chunk one at a time.
    auto body = [&](const std::vector<llvm::Value*>& us) {
      std::vector<llvm::Value*> es;
      std::vector<std::vector<Val>> values;
      for (llvm::Value* u : us) {
        llvm::Value* e = b_.CreateMul(u, I64(w));
        Coords c = Unravel(e, space);
        c.back().lanes = true;
        std::vector<Val> per;
        for (NodeId out : group_.outputs) per.push_back(Emit(out, c));
        es.push_back(e);
        values.push_back(std::move(per));
      }
      for (std::size_t k = 0; k < us.size(); ++k)
        for (std::size_t o = 0; o < group_.outputs.size(); ++o)
          StoreUnit(group_.outputs[o], es[k], values[k][o], width);
    };
    llvm::Value* chunk = I64(kThreads * kUnroll);
    llvm::Value* whole = b_.CreateMul(b_.CreateUDiv(units, chunk), chunk);
    llvm::Value* block = Sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x);
    llvm::Value* grid = Sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x);
    Loop(b_.CreateAdd(b_.CreateMul(block, chunk), Tid()), whole, b_.CreateMul(grid, chunk), [&](llvm::Value* u) {
      std::vector<llvm::Value*> us;
      for (std::int64_t k = 0; k < kUnroll; ++k) us.push_back(k == 0 ? u : b_.CreateAdd(u, I64(k * kThreads)));
      body(us);
    });
    Loop(b_.CreateAdd(whole, first), units, stride, [&](llvm::Value* u) { body({u}); });
    b_.CreateBr(done);
    // The vector path's condition: every extent and slice start it relied on is a multiple of W.
    b_.SetInsertPoint(decide);
    llvm::Value* ok = b_.getTrue();
    for (const Dim& d : aligned_) ok = b_.CreateAnd(ok, b_.CreateICmpEQ(b_.CreateSRem(EmitDim(d), I64(w)), I64(0)));
    b_.CreateCondBr(ok, vector, scalar);
  } else {
    b_.SetInsertPoint(decide);
    b_.CreateBr(scalar);
  }
  b_.SetInsertPoint(done);
  b_.CreateRetVoid();
}

}  // namespace weft::codegen::array_emit
