// dims.h: a dim as i64 arithmetic.
#include "codegen/dims.h"

namespace weft::codegen {

llvm::Value* EmitDim(llvm::IRBuilder<>& b, const core::Dim& dim,
                     const std::function<llvm::Value*(core::SizeVarId)>& var) {
  if (auto c = dim.AsConstant()) return b.getInt64(static_cast<std::uint64_t>(*c));
  llvm::Value* sum = b.getInt64(0);
  for (const core::Term& term : dim.terms()) {
    llvm::Value* product = b.getInt64(static_cast<std::uint64_t>(term.coefficient));
    for (const core::Factor& factor : term.monomial) {
      llvm::Value* atom = nullptr;
      if (factor.atom.kind == core::AtomKind::kVar) {
        atom = var(factor.atom.var);
      } else {
        llvm::Value* p = EmitDim(b, *factor.atom.operand, var);
        if (!p) return nullptr;
        llvm::Value* c = b.getInt64(static_cast<std::uint64_t>(factor.atom.divisor));
        llvm::Value* q = b.CreateSDiv(p, c);
        llvm::Value* r = b.CreateSRem(p, c);
        llvm::Value* negative = b.CreateICmpSLT(r, b.getInt64(0));
        atom = factor.atom.kind == core::AtomKind::kDiv ? b.CreateSelect(negative, b.CreateSub(q, b.getInt64(1)), q)
                                                        : b.CreateSelect(negative, b.CreateAdd(r, c), r);
      }
      if (!atom) return nullptr;
      for (std::int32_t i = 0; i < factor.power; ++i) product = b.CreateMul(product, atom);
    }
    sum = b.CreateAdd(sum, product);
  }
  return sum;
}

}  // namespace weft::codegen
