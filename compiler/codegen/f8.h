// The f8 formats (f8e4m3, f8e5m2) in LLVM IR, which has no f8 types: values are held as their bits
// (an i8) and converted through f32 with the interpreter's rules exactly (docs/numerics.md,
// runtime/include/weft/numerics.h): decoding is exact, encoding rounds once to nearest even and
// saturates to the largest finite value, NaN becomes 0x7f. Plain integer and float arithmetic, so
// the same code runs on every NVPTX target (sm_80 has no f8 conversion instructions) and, JIT-compiled
// for the host, is tested bit for bit against the runtime (tests/unit/codegen/f8_test.cpp).
#pragma once

#include <llvm/IR/IRBuilder.h>

#include "base/dtype.h"

namespace weft::codegen {

// The f32 value of the f8 bits `bits` (an i8) of dtype `d`, NaN payloads as the runtime decodes them.
// @pre d is F8E4M3 or F8E5M2
llvm::Value* EmitF8Decode(llvm::IRBuilder<>& b, llvm::Value* bits, Dtype d);

// The f8 bits (an i8) of `x`, an f32 or f64, rounded once.
// @pre d is F8E4M3 or F8E5M2
llvm::Value* EmitF8Encode(llvm::IRBuilder<>& b, llvm::Value* x, Dtype d);

}  // namespace weft::codegen
