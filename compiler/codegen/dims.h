// Dims (core/dim.h's polynomials over size variables) as i64 arithmetic in LLVM IR: the host code's
// sizes and the array kernels' extents and strides are both evaluated this way.
#pragma once

#include <functional>

#include <llvm/IR/IRBuilder.h>

#include "core/dim.h"

namespace weft::codegen {

// `dim` as i64 values: terms of coefficient times powers of atoms, `p / c` and `p % c` as floor
// division and floor modulo (dim.h), also for negative `p`. `var` gives each size variable's value;
// when it returns null, so does EmitDim.
llvm::Value* EmitDim(llvm::IRBuilder<>& b, const core::Dim& dim,
                     const std::function<llvm::Value*(core::SizeVarId)>& var);

}  // namespace weft::codegen
