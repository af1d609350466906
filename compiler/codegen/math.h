// f32 math for the device code weft generates (tile kernels, device.cpp, and array kernels,
// array.cpp alike): the interpreter's functions within a few ulps (docs/numerics.md), built from
// the special function unit's approximations (ex2, lg2, sin, cos, rcp) and correction steps.
#pragma once

#include <llvm/IR/IRBuilder.h>

#include <string_view>

namespace weft::codegen::math {

// Whether Unary computes `fn`.
bool HasUnary(std::string_view fn);

// `fn` (exp log sin cos tanh sigmoid rsqrt) of an f32 value. @pre HasUnary(fn), x is f32
llvm::Value* Unary(llvm::IRBuilder<>& b, std::string_view fn, llvm::Value* x);

// e^x in f32: 2^(x log2 e) on ex2.approx, with the rounding error of x log2 e put back.
llvm::Value* Exp(llvm::IRBuilder<>& b, llvm::Value* x);

// 1 / d in f32 for d in [1, 2^100] (or NaN): rcp.approx and one Newton step.
llvm::Value* Reciprocal(llvm::IRBuilder<>& b, llvm::Value* d);

}  // namespace weft::codegen::math
