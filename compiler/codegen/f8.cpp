// f8 in LLVM IR (f8.h).
#include "codegen/f8.h"

#include <cmath>
#include <cstdint>

namespace weft::codegen {

// The f32 value of f8 bits (exact): runtime/numerics.cpp's Decode, NaN's payload included.
llvm::Value* EmitF8Decode(llvm::IRBuilder<>& b, llvm::Value* bits, Dtype d) {
  const int man = d == Dtype::F8E4M3 ? 3 : 2, exp_bits = 7 - man, bias = (1 << (exp_bits - 1)) - 1;
  auto i32 = [&](std::int64_t v) { return b.getInt32(static_cast<std::uint32_t>(v)); };
  llvm::Value* u = b.CreateZExt(bits, b.getInt32Ty());
  llvm::Value* sign = b.CreateShl(b.CreateAnd(u, i32(0x80)), 24);
  llvm::Value* e = b.CreateAnd(b.CreateLShr(u, man), i32((1 << exp_bits) - 1));
  llvm::Value* m = b.CreateAnd(u, i32((1 << man) - 1));
  llvm::Value* normal = b.CreateOr(b.CreateShl(b.CreateAdd(e, i32(127 - bias)), 23), b.CreateShl(m, 23 - man));
  // Zero and subnormals: m 2^(emin - man), exact in f32.
  llvm::Value* tiny = b.CreateFMul(b.CreateUIToFP(m, b.getFloatTy()),
                                   llvm::ConstantFP::get(b.getFloatTy(), std::ldexp(1.0, 1 - bias - man)));
  llvm::Value* magnitude = b.CreateSelect(b.CreateICmpEQ(e, i32(0)), b.CreateBitCast(tiny, b.getInt32Ty()), normal);
  llvm::Value* nan = b.CreateOr(i32(0x7fc00000), b.CreateShl(m, 23 - man));
  llvm::Value* all_ones = b.CreateICmpEQ(e, i32((1 << exp_bits) - 1));
  if (d == Dtype::F8E4M3) {
    // No infinities: only S.1111.111 is NaN.
    magnitude = b.CreateSelect(b.CreateAnd(all_ones, b.CreateICmpEQ(m, i32(7))), nan, magnitude);
  } else {
    llvm::Value* special = b.CreateSelect(b.CreateICmpEQ(m, i32(0)), i32(0x7f800000), nan);
    magnitude = b.CreateSelect(all_ones, special, magnitude);
  }
  return b.CreateBitCast(b.CreateOr(sign, magnitude), b.getFloatTy());
}

// f8 bits of `x` (f32 or f64) rounded once to nearest even, saturating to the largest finite
// value, NaN to 0x7f: runtime/numerics.cpp's EncodeExact. The binade's quantum is
// 2^(max(exponent, emin) - man); x / quantum rounded to an integer n (exact scaling, then
// cvt.rni) is the bit pattern added to the binade's exponent field, a carry bumping it.
llvm::Value* EmitF8Encode(llvm::IRBuilder<>& b, llvm::Value* x, Dtype d) {
  const int man = d == Dtype::F8E4M3 ? 3 : 2, exp_bits = 7 - man, bias = (1 << (exp_bits - 1)) - 1;
  const int emin = 1 - bias;
  const std::uint32_t max_finite = d == Dtype::F8E4M3 ? 0x7e : 0x7b;
  llvm::Type* t = x->getType();
  bool wide = t->isDoubleTy();
  const int mantissa = wide ? 52 : 23, float_bias = wide ? 1023 : 127;
  llvm::Type* it = b.getIntNTy(wide ? 64 : 32);
  auto ic = [&](std::int64_t v) { return llvm::ConstantInt::get(it, static_cast<std::uint64_t>(v)); };
  llvm::Value* raw = b.CreateBitCast(x, it);
  llvm::Value* negative = b.CreateICmpSLT(raw, ic(0));
  llvm::Value* a = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  llvm::Value* exponent = b.CreateSub(b.CreateLShr(b.CreateBitCast(a, it), mantissa), ic(float_bias));
  // Clamped to [emin, 20]: a larger value saturates anyway (and infinity's exponent is huge).
  exponent = b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, exponent, ic(emin));
  exponent = b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, exponent, ic(20));
  llvm::Value* scale =
      b.CreateBitCast(b.CreateShl(b.CreateSub(ic(man + float_bias), exponent), mantissa), t);  // 2^(man - exp)
  llvm::Value* n = b.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven, b.CreateFMul(a, scale));
  n = b.CreateIntrinsic(llvm::Intrinsic::fptoui_sat, {b.getInt32Ty(), t}, {n});
  n = b.CreateBinaryIntrinsic(llvm::Intrinsic::umin, n, b.getInt32(1 << 12));
  llvm::Value* field = b.CreateShl(b.CreateTrunc(b.CreateSub(exponent, ic(emin)), b.getInt32Ty()), man);
  llvm::Value* bits = b.CreateBinaryIntrinsic(llvm::Intrinsic::umin, b.CreateAdd(field, n), b.getInt32(max_finite));
  bits = b.CreateOr(bits, b.CreateSelect(negative, b.getInt32(0x80), b.getInt32(0)));
  bits = b.CreateSelect(b.CreateFCmpUNO(x, x), b.getInt32(0x7f), bits);
  return b.CreateTrunc(bits, b.getInt8Ty());
}

}  // namespace weft::codegen
