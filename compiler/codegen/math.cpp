// f32 math for generated device code (math.h).
#include "codegen/math.h"

#include <llvm/IR/IntrinsicsNVPTX.h>

namespace weft::codegen::math {
namespace {

llvm::Value* F(llvm::Type* t, double v) {
  return llvm::ConstantFP::get(t, v);
}

llvm::Value* Fma(llvm::IRBuilder<>& b, llvm::Value* a, llvm::Value* c, llvm::Value* d) {
  return b.CreateIntrinsic(llvm::Intrinsic::fma, {a->getType()}, {a, c, d});
}

llvm::Value* Fabs(llvm::IRBuilder<>& b, llvm::Value* x) {
  return b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
}

}  // namespace

bool HasUnary(std::string_view fn) {
  return fn == "exp" || fn == "log" || fn == "sin" || fn == "cos" || fn == "tanh" || fn == "sigmoid" || fn == "rsqrt";
}

llvm::Value* Exp(llvm::IRBuilder<>& b, llvm::Value* x) {
  llvm::Type* t = x->getType();
  llvm::Value* hi = b.CreateFMul(x, F(t, 1.4426950408889634));
  llvm::Value* lo = Fma(b, x, F(t, 1.4426950408889634), b.CreateFNeg(hi));
  lo = Fma(b, x, F(t, 1.925963033500011e-08), lo);
  llvm::Value* e = b.CreateIntrinsic(t, llvm::Intrinsic::nvvm_ex2_approx_f, {hi});
  llvm::Value* fixed = Fma(b, e, b.CreateFMul(lo, F(t, 0.6931471805599453)), e);
  // Past 2^+-126 the result is 0, a subnormal or infinite, and the correction would be NaN at
  // infinities (inf - inf): 2^hi as it is.
  return b.CreateSelect(b.CreateFCmpOLT(Fabs(b, hi), F(t, 126.0)), fixed, e);
}

llvm::Value* Reciprocal(llvm::IRBuilder<>& b, llvm::Value* d) {
  llvm::Type* t = d->getType();
  llvm::Value* r = b.CreateIntrinsic(t, llvm::Intrinsic::nvvm_rcp_approx_ftz_f, {d});
  llvm::Value* err = Fma(b, b.CreateFNeg(d), r, F(t, 1.0));
  return Fma(b, r, err, r);
}

llvm::Value* Unary(llvm::IRBuilder<>& b, std::string_view fn, llvm::Value* x) {
  llvm::Type* t = x->getType();
  if (fn == "exp") return Exp(b, x);
  if (fn == "rsqrt") return b.CreateFDiv(F(t, 1.0), b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x));
  if (fn == "log")
    return b.CreateFMul(b.CreateIntrinsic(t, llvm::Intrinsic::nvvm_lg2_approx_f, {x}), F(t, 0.6931471805599453));
  if (fn == "sin") return b.CreateIntrinsic(t, llvm::Intrinsic::nvvm_sin_approx_f, {x});
  if (fn == "cos") return b.CreateIntrinsic(t, llvm::Intrinsic::nvvm_cos_approx_f, {x});
  if (fn == "sigmoid") {
    // 1 / (1 + e^-x) by rcp.approx and one Newton step (within an ulp): an IEEE division is a slow
    // path of dozens of instructions, a gemm epilogue's largest cost (silu: 46 of 319 us at
    // 2048 x 11008 x 4096 on an H200). Past 2^100 (x below -69) rcp.approx alone, where the step
    // would be inf * 0 at infinity; its results there are subnormal or tiny.
    llvm::Value* d = b.CreateFAdd(F(t, 1.0), Exp(b, b.CreateFNeg(x)));
    llvm::Value* r = Reciprocal(b, b.CreateBinaryIntrinsic(llvm::Intrinsic::minimum, d, F(t, 0x1p100)));
    return b.CreateSelect(b.CreateFCmpOLT(d, F(t, 0x1p100)), r,
                          b.CreateIntrinsic(t, llvm::Intrinsic::nvvm_rcp_approx_ftz_f, {d}));
  }
  // tanh: 1 - 2 / (e^(2|x|) + 1) with x's sign; near 0 (|x| < 0.25, where that cancels) the series
  // x - x^3/3 + 2x^5/15 - 17x^7/315 + 62x^9/2835 (Horner, fused). e^(2|x|) + 1 is capped at 2^100,
  // where 2 / it is below half an ulp of 1.
  llvm::Value* ax = Fabs(b, x);
  llvm::Value* d = b.CreateFAdd(Exp(b, b.CreateFMul(ax, F(t, 2.0))), F(t, 1.0));
  llvm::Value* r = Reciprocal(b, b.CreateBinaryIntrinsic(llvm::Intrinsic::minimum, d, F(t, 0x1p100)));
  llvm::Value* big = b.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, Fma(b, F(t, -2.0), r, F(t, 1.0)), x);
  llvm::Value* x2 = b.CreateFMul(x, x);
  llvm::Value* p = F(t, 62.0 / 2835.0);
  for (double coefficient : {-17.0 / 315.0, 2.0 / 15.0, -1.0 / 3.0, 1.0}) p = Fma(b, p, x2, F(t, coefficient));
  return b.CreateSelect(b.CreateFCmpOLT(ax, F(t, 0.25)), b.CreateFMul(x, p), big);
}

}  // namespace weft::codegen::math
