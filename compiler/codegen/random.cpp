// `random` kernels; random.h has the two steps, docs/runtime.md ("On the GPU") the definition each
// instruction below follows, and runtime/src/random.cpp the host code it must match bit for bit.
#include "codegen/random.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include "codegen/nvptx.h"

namespace weft::codegen {

bool HasRandomKernel(Dtype dtype) {
  return dtype != Dtype::F8E4M3 && dtype != Dtype::F8E5M2;
}

std::vector<Dtype> RandomKernelDtypes() {
  std::vector<Dtype> out;
#define WEFT_DTYPE(Name, Spelling, Bits) \
  if (HasRandomKernel(Dtype::Name)) out.push_back(Dtype::Name);
#include "base/dtypes.def"
  return out;
}

std::string RandomEntry(Dtype dtype) {
  return "weft_random_" + std::string(Spelling(dtype));
}

llvm::Function* DefineRandomElement(llvm::Module& module, Dtype dtype) {
  const std::string name = "weft_random_element_" + std::string(Spelling(dtype));
  if (llvm::Function* f = module.getFunction(name)) return f;
  llvm::LLVMContext& ctx = module.getContext();
  llvm::IRBuilder<> b(ctx);
  const int bits = Bits(dtype);
  auto* result = llvm::IntegerType::get(ctx, static_cast<unsigned>(bits));
  auto* type = llvm::FunctionType::get(result, {b.getInt64Ty(), b.getInt64Ty()}, false);
  auto* f = llvm::Function::Create(type, llvm::Function::InternalLinkage, name, module);
  f->addFnAttr(llvm::Attribute::AlwaysInline);
  f->addFnAttr(llvm::Attribute::NoUnwind);
  f->setDoesNotAccessMemory();
  llvm::Value* seed = f->getArg(0);
  llvm::Value* index = f->getArg(1);
  seed->setName("seed");
  index->setName("index");
  b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", f));

  // 1. Key (seed lo, seed hi), counter (index lo, index hi, 0, 0).
  auto lo = [&](llvm::Value* x) { return b.CreateTrunc(x, b.getInt32Ty()); };
  auto hi = [&](llvm::Value* x) { return b.CreateTrunc(b.CreateLShr(x, 32), b.getInt32Ty()); };
  llvm::Value* k0 = lo(seed);
  llvm::Value* k1 = hi(seed);
  llvm::Value* c[4] = {lo(index), hi(index), b.getInt32(0), b.getInt32(0)};
  // 2. Ten rounds, the key bumped by the Weyl constants before each but the first. Each product is
  //    two halves: the high one of a 32 x 32 -> 64-bit product (mul.hi.u32), the low one a 32-bit
  //    multiply (mul.lo.s32). The freeze (a no-op: nothing here is poison) keeps InstCombine from
  //    widening the xors before it to i64, which made the products 64-bit multiplies (mul.lo.s64,
  //    several instructions each on the GPU).
  auto wide = [&](llvm::Value* x, std::uint32_t constant) {
    return b.CreateMul(b.CreateZExt(b.CreateFreeze(x), b.getInt64Ty()), b.getInt64(constant));
  };
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 = b.CreateAdd(k0, b.getInt32(0x9E3779B9));
      k1 = b.CreateAdd(k1, b.getInt32(0xBB67AE85));
    }
    llvm::Value* hi0 = hi(wide(c[0], 0xD2511F53));
    llvm::Value* hi1 = hi(wide(c[2], 0xCD9E8D57));
    llvm::Value* lo0 = b.CreateMul(c[0], b.getInt32(0xD2511F53));
    llvm::Value* lo1 = b.CreateMul(c[2], b.getInt32(0xCD9E8D57));
    llvm::Value* next[4] = {b.CreateXor(b.CreateXor(hi1, c[1]), k0), lo1, b.CreateXor(b.CreateXor(hi0, c[3]), k1), lo0};
    std::copy(std::begin(next), std::end(next), std::begin(c));
  }
  llvm::Value* w0 = c[0];
  llvm::Value* w1 = c[1];
  // 3. The dtype's value from w0 (and w1).
  llvm::Value* value = nullptr;
  switch (dtype) {
    case Dtype::Bool:
      value = b.CreateTrunc(b.CreateLShr(w0, 31), result);
      break;
    case Dtype::F16:
    case Dtype::BF16:
    case Dtype::F32:
    case Dtype::F64: {
      // (w0 >> 8) * 2^-24: below 2^24, so exact in f32 (cvt.rn.f32.u32, a multiply by a power of
      // two); f16 and bf16 round it once, to nearest even (cvt.rn.f16.f32 / cvt.rn.bf16.f32).
      llvm::Value* x = b.CreateFMul(b.CreateUIToFP(b.CreateLShr(w0, 8), b.getFloatTy()),
                                    llvm::ConstantFP::get(b.getFloatTy(), 0x1p-24));
      if (dtype == Dtype::F16) x = b.CreateFPTrunc(x, b.getHalfTy());
      if (dtype == Dtype::BF16) x = b.CreateFPTrunc(x, b.getBFloatTy());
      if (dtype == Dtype::F64) x = b.CreateFPExt(x, b.getDoubleTy());
      value = b.CreateBitCast(x, result);
      break;
    }
    default:
      if (bits == 64) {
        value = b.CreateOr(b.CreateZExt(w0, result), b.CreateShl(b.CreateZExt(w1, result), 32));
      } else {
        value = bits == 32 ? w0 : b.CreateTrunc(w0, result);
      }
      break;
  }
  b.CreateRet(value);
  return f;
}

namespace {

// The entry: a grid-stride loop over units (elements; bytes for the 4-bit dtypes).
llvm::Function* DefineKernel(llvm::Module& module, Dtype dtype) {
  llvm::LLVMContext& ctx = module.getContext();
  llvm::IRBuilder<> b(ctx);
  llvm::Function* element = DefineRandomElement(module, dtype);
  auto* type = llvm::FunctionType::get(b.getVoidTy(), {b.getInt64Ty(), b.getInt64Ty(), b.getInt64Ty()}, false);
  auto* f = llvm::Function::Create(type, llvm::Function::ExternalLinkage, RandomEntry(dtype), module);
  f->setCallingConv(llvm::CallingConv::PTX_Kernel);
  llvm::Value* out = f->getArg(0);
  llvm::Value* count = f->getArg(1);
  llvm::Value* seed = f->getArg(2);
  out->setName("out");
  count->setName("count");
  seed->setName("seed");
  auto* entry = llvm::BasicBlock::Create(ctx, "entry", f);
  auto* loop = llvm::BasicBlock::Create(ctx, "loop", f);
  auto* done = llvm::BasicBlock::Create(ctx, "done", f);
  b.SetInsertPoint(entry);
  auto sreg = [&](llvm::Intrinsic::ID id) {
    return b.CreateZExt(b.CreateIntrinsic(b.getInt32Ty(), id, {}), b.getInt64Ty());
  };
  llvm::Value* threads = sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_x);
  llvm::Value* first = b.CreateAdd(b.CreateMul(sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x), threads),
                                   sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x), "first");
  llvm::Value* stride = b.CreateMul(sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x), threads, "stride");
  const bool nibbles = Bits(dtype) == 4;
  llvm::Value* units = nibbles ? b.CreateLShr(b.CreateAdd(count, b.getInt64(1)), 1) : count;
  llvm::Value* base = b.CreateIntToPtr(out, b.getPtrTy(1));
  b.CreateCondBr(b.CreateICmpULT(first, units), loop, done);

  b.SetInsertPoint(loop);
  llvm::PHINode* unit = b.CreatePHI(b.getInt64Ty(), 2, "unit");
  unit->addIncoming(first, entry);
  if (nibbles) {
    // Byte u holds elements 2u (low nibble) and 2u + 1 (high nibble, 0 past the end), as the
    // runtime's StoreBits packs them.
    llvm::Value* even = b.CreateShl(unit, 1);
    llvm::Value* odd = b.CreateOr(even, b.getInt64(1));
    llvm::Value* low = b.CreateZExt(b.CreateCall(element, {seed, even}), b.getInt8Ty());
    llvm::Value* high = b.CreateZExt(b.CreateCall(element, {seed, odd}), b.getInt8Ty());
    high = b.CreateSelect(b.CreateICmpULT(odd, count), high, b.getInt8(0));
    llvm::Value* byte = b.CreateOr(low, b.CreateShl(high, 4));
    b.CreateStore(byte, b.CreateGEP(b.getInt8Ty(), base, unit));
  } else {
    llvm::Value* value = b.CreateCall(element, {seed, unit});
    llvm::Type* stored = value->getType();
    b.CreateStore(value, b.CreateGEP(stored, base, unit));
  }
  llvm::Value* next = b.CreateAdd(unit, stride, "next");
  unit->addIncoming(next, loop);
  b.CreateCondBr(b.CreateICmpULT(next, units), loop, done);

  b.SetInsertPoint(done);
  b.CreateRetVoid();

  llvm::NamedMDNode* annotations = module.getOrInsertNamedMetadata("nvvm.annotations");
  auto md = [&](const char* key, std::int64_t value) {
    annotations->addOperand(llvm::MDNode::get(
        ctx, {llvm::ValueAsMetadata::get(f), llvm::MDString::get(ctx, key),
              llvm::ValueAsMetadata::get(llvm::ConstantInt::get(b.getInt32Ty(), static_cast<std::uint64_t>(value)))}));
  };
  md("kernel", 1);
  md("maxntidx", kRandomThreads);
  return f;
}

}  // namespace

Result<DeviceKernel, std::string> EmitRandomKernel(Dtype dtype, synth::Target target) {
  llvm::TargetMachine* tm = NvptxMachine(target);
  if (!tm) return std::string("no NVPTX target in this LLVM");
  llvm::LLVMContext ctx;
  llvm::Module module(RandomEntry(dtype), ctx);
  module.setTargetTriple("nvptx64-nvidia-cuda");
  module.setDataLayout(tm->createDataLayout());
  DefineKernel(module, dtype);
  std::string text;
  llvm::raw_string_ostream verify_out(text);
  if (llvm::verifyModule(module, &verify_out))
    return "the `random` kernel of " + std::string(Spelling(dtype)) + " is invalid IR: " + text;
  DeviceKernel out;
  out.entry = RandomEntry(dtype);
  out.target = target;
  out.threads = kRandomThreads;
  {
    llvm::raw_string_ostream ir(out.llvm_ir);
    module.print(ir, nullptr);
  }
  if (!EmitPtx(module, target, out.ptx)) return std::string("cannot emit PTX");
  return out;
}

}  // namespace weft::codegen
