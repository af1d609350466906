// The array kernels' IR helpers (array_emitter.h): loops, branches and dims over the size
// parameters, and how each dtype is held and computed in (array.cpp's numerics).
#include "codegen/array_emitter.h"

#include "codegen/dims.h"

namespace weft::codegen::array_emit {

// ---- IR helpers ----

llvm::Value* ArrayEmitter::Sreg(llvm::Intrinsic::ID id) {
  return b_.CreateZExt(b_.CreateIntrinsic(b_.getInt32Ty(), id, {}), b_.getInt64Ty());
}

// A local variable (promoted to a register by O3's SROA): allocas stay in the entry block.
llvm::Value* ArrayEmitter::Local(llvm::Type* type, llvm::Value* init) {
  llvm::IRBuilder<> at(entry_, entry_->begin());
  llvm::Value* slot = at.CreateAlloca(type);
  b_.CreateStore(init, slot);
  return slot;
}

// i64 arithmetic over the size parameters (dims.h).
llvm::Value* ArrayEmitter::EmitDim(const Dim& dim) {
  return codegen::EmitDim(b_, dim, [&](core::SizeVarId v) -> llvm::Value* {
    auto it = sizes_.find(v.index);
    if (it == sizes_.end()) Refuse("a dim over a size the kernel was not given");
    return it->second;
  });
}

Dim ArrayEmitter::Product(const std::vector<Dim>& dims, std::size_t begin, std::size_t end) {
  Dim p = Dim::Constant(1);
  for (std::size_t i = begin; i < end; ++i) {
    auto r = core::Mul(p, dims[i]);
    if (!r) Refuse("a shape whose size overflows");
    p = *r;
  }
  return p;
}

Dim ArrayEmitter::CeilDiv(const Dim& a, std::int64_t d) {
  auto r = (a + (d - 1)) / d;
  if (!r) Refuse("a grid whose size overflows");
  return *r;
}

// The coordinates of linear index `e` in the row-major `shape`.
Coords ArrayEmitter::Unravel(llvm::Value* e, const std::vector<Dim>& shape) {
  Coords c(shape.size());
  for (std::size_t i = shape.size(); i-- > 0;) {
    if (i == 0) {
      c[i].v = e;
    } else if (shape[i] == Dim::Constant(1)) {
      c[i].v = I64(0);
    } else {
      llvm::Value* d = EmitDim(shape[i]);
      c[i].v = b_.CreateURem(e, d);
      e = b_.CreateUDiv(e, d);
    }
  }
  return c;
}

// The row-major offset of uniform coordinates in `shape`.
llvm::Value* ArrayEmitter::Linear(const Coords& c, const std::vector<Dim>& shape) {
  llvm::Value* e = I64(0);
  for (std::size_t i = 0; i < shape.size(); ++i) e = b_.CreateAdd(b_.CreateMul(e, EmitDim(shape[i])), c[i].v);
  return e;
}

// for (i = start; i < end; i += step) body(i); values made in the body stay in it.
void ArrayEmitter::Loop(llvm::Value* start, llvm::Value* end, llvm::Value* step,
                        const std::function<void(llvm::Value*)>& body) {
  llvm::BasicBlock* before = b_.GetInsertBlock();
  llvm::BasicBlock* head = Block("loop");
  llvm::BasicBlock* inside = Block("body");
  llvm::BasicBlock* exit = Block("exit");
  b_.CreateBr(head);
  b_.SetInsertPoint(head);
  llvm::PHINode* i = b_.CreatePHI(b_.getInt64Ty(), 2, "i");
  i->addIncoming(start, before);
  b_.CreateCondBr(b_.CreateICmpSLT(i, end), inside, exit);
  b_.SetInsertPoint(inside);
  auto saved = cache_;
  body(i);
  cache_ = saved;
  i->addIncoming(b_.CreateAdd(i, step), b_.GetInsertBlock());
  b_.CreateBr(head);
  b_.SetInsertPoint(exit);
}

// The kernel ends here for the threads where `condition` is false (a block past an empty extent).
void ArrayEmitter::ReturnUnless(llvm::Value* condition) {
  llvm::BasicBlock* live = Block("live");
  llvm::BasicBlock* dead = Block("dead");
  b_.CreateCondBr(condition, live, dead);
  b_.SetInsertPoint(dead);
  b_.CreateRetVoid();
  b_.SetInsertPoint(live);
}

// if (condition) then(); values made inside stay inside.
void ArrayEmitter::If(llvm::Value* condition, const std::function<void()>& then) {
  llvm::BasicBlock* yes = Block("then");
  llvm::BasicBlock* join = Block("join");
  b_.CreateCondBr(condition, yes, join);
  b_.SetInsertPoint(yes);
  auto saved = cache_;
  then();
  cache_ = saved;
  b_.CreateBr(join);
  b_.SetInsertPoint(join);
}

// ---- Types and conversions ----

llvm::Type* ArrayEmitter::Storage(Dtype d) {
  switch (d) {
    case Dtype::Bool:
      return b_.getInt1Ty();
    case Dtype::I4:
    case Dtype::U4:
      return b_.getIntNTy(4);
    case Dtype::F8E4M3:
    case Dtype::F8E5M2:
      return b_.getInt8Ty();  // the bits: LLVM has no f8 types (F8Decode, F8Encode)
    case Dtype::I8:
    case Dtype::U8:
      return b_.getInt8Ty();
    case Dtype::I16:
    case Dtype::U16:
      return b_.getInt16Ty();
    case Dtype::I32:
    case Dtype::U32:
      return b_.getInt32Ty();
    case Dtype::I64:
    case Dtype::U64:
      return b_.getInt64Ty();
    case Dtype::F16:
      return b_.getHalfTy();
    case Dtype::BF16:
      return b_.getBFloatTy();
    case Dtype::F32:
      return b_.getFloatTy();
    case Dtype::F64:
      return b_.getDoubleTy();
    default:
      Refuse(std::string(Spelling(d)) + " tensors in an array kernel");
  }
}

// What operations on `d` compute in: f32 for floats up to 32 bits, f64, i64 for integers, i1.
llvm::Type* ArrayEmitter::ComputeType(Dtype d) {
  if (d == Dtype::Bool) return b_.getInt1Ty();
  if (d == Dtype::F64) return b_.getDoubleTy();
  if (IsFloat(d)) return b_.getFloatTy();
  return b_.getInt64Ty();
}

llvm::Value* ArrayEmitter::ToCompute(llvm::Value* v, Dtype d) {
  llvm::Type* t = ComputeType(d);
  if (IsF8(d)) return F8Decode(v, d);
  if (v->getType() == t) return v;
  if (IsFloat(d)) return b_.CreateFPExt(v, t);
  return IsSigned(d) ? b_.CreateSExt(v, t) : b_.CreateZExt(v, t);
}

// Rounds (floats, to nearest even) or wraps (integers) a compute-type value once to `d`.
llvm::Value* ArrayEmitter::FromCompute(llvm::Value* v, Dtype d) {
  llvm::Type* t = Storage(d);
  if (IsF8(d)) {
    if (v->getType()->isIntegerTy(1)) v = b_.CreateUIToFP(v, b_.getFloatTy());
    return F8Encode(v, d);
  }
  if (v->getType() == t) return v;
  if (v->getType()->isIntegerTy(1)) return IsFloat(d) ? b_.CreateUIToFP(v, t) : b_.CreateZExt(v, t);
  if (IsFloat(d)) return b_.CreateFPTrunc(v, t);
  return b_.CreateTrunc(v, t);
}

// `cast to x` (docs/numerics.md, Casts).
llvm::Value* ArrayEmitter::Convert(llvm::Value* x, Dtype from, Dtype to) {
  llvm::Type* t = Storage(to);
  if (from == to) return x;
  // f8 through f32, which holds every f8 value exactly; to f8 from f32 or f64, rounding once
  // (an integer goes through f64: exact below 2^53, and anything larger saturates either way).
  if (IsF8(from)) return Convert(F8Decode(x, from), Dtype::F32, to);
  if (IsF8(to)) {
    if (from == Dtype::Bool || !IsFloat(from)) {
      bool is_signed = IsSigned(from);
      x = is_signed ? b_.CreateSIToFP(x, b_.getDoubleTy()) : b_.CreateUIToFP(x, b_.getDoubleTy());
    } else if (from != Dtype::F64 && from != Dtype::F32) {
      x = b_.CreateFPExt(x, b_.getFloatTy());
    }
    return F8Encode(x, to);
  }
  if (from == Dtype::Bool) return IsFloat(to) ? b_.CreateUIToFP(x, t) : b_.CreateZExt(x, t);
  if (to == Dtype::Bool) {
    return IsFloat(from) ? b_.CreateFCmpUNE(x, llvm::ConstantFP::get(x->getType(), 0.0))
                         : b_.CreateICmpNE(x, llvm::ConstantInt::get(x->getType(), 0));
  }
  if (IsFloat(from) && IsFloat(to)) {
    unsigned a = x->getType()->getPrimitiveSizeInBits(), c = t->getPrimitiveSizeInBits();
    if (a == c) return b_.CreateFPTrunc(b_.CreateFPExt(x, b_.getFloatTy()), t);  // f16 <-> bf16
    return a < c ? b_.CreateFPExt(x, t) : b_.CreateFPTrunc(x, t);
  }
  if (IsFloat(from)) {
    // Toward zero, saturating, NaN to 0: cvt.rzi's meaning (the .sat intrinsics).
    if (Bits(from) < 32) x = b_.CreateFPExt(x, b_.getFloatTy());
    auto id = IsSigned(to) ? llvm::Intrinsic::fptosi_sat : llvm::Intrinsic::fptoui_sat;
    return b_.CreateIntrinsic(id, {t, x->getType()}, {x});
  }
  if (IsFloat(to)) return IsSigned(from) ? b_.CreateSIToFP(x, t) : b_.CreateUIToFP(x, t);
  return IsSigned(from) ? b_.CreateSExtOrTrunc(x, t) : b_.CreateZExtOrTrunc(x, t);
}

llvm::Value* ArrayEmitter::Constant(const Node& n) {
  llvm::Type* t = Storage(n.dtype);
  if (n.dtype == Dtype::Bool) return b_.getInt1(n.bits & 1);
  if (IsF8(n.dtype) || IsPacked(n.dtype)) return llvm::ConstantInt::get(t, n.bits);
  if (IsFloat(n.dtype)) {
    const llvm::fltSemantics& sem = t->getFltSemantics();
    return llvm::ConstantFP::get(ctx_, llvm::APFloat(sem, llvm::APInt(static_cast<unsigned>(Bits(n.dtype)), n.bits)));
  }
  return llvm::ConstantInt::get(t, n.bits);
}

}  // namespace weft::codegen::array_emit
