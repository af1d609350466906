// Inline PTX for the sm_90a instructions without NVVM intrinsics in LLVM 19; see hopper.h.
#include "codegen/hopper.h"

#include <llvm/IR/InlineAsm.h>

#include <string>

namespace weft::codegen::hopper {

namespace {

// An asm statement with side effects that also orders memory (a compiler barrier).
llvm::Value* Asm(llvm::IRBuilder<>& b, llvm::Type* result, const std::string& text, std::string constraints,
                 llvm::ArrayRef<llvm::Value*> args) {
  std::vector<llvm::Type*> types;
  for (llvm::Value* a : args) types.push_back(a->getType());
  auto* type = llvm::FunctionType::get(result, types, false);
  constraints += constraints.empty() ? "~{memory}" : ",~{memory}";
  return b.CreateCall(llvm::InlineAsm::get(type, text, constraints, true), args);
}

}  // namespace

void MbarrierArriveExpectTx(llvm::IRBuilder<>& b, llvm::Value* bar, llvm::Value* bytes) {
  Asm(b, b.getVoidTy(), "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", "r,r", {bar, bytes});
}

llvm::Value* MbarrierTryWait(llvm::IRBuilder<>& b, llvm::Value* bar, llvm::Value* parity) {
  llvm::Value* done = Asm(b, b.getInt32Ty(),
                          "{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [$1], $2;\n\t"
                          "selp.u32 $0, 1, 0, p;\n\t}",
                          "=r,r,r", {bar, parity});
  return b.CreateICmpNE(done, b.getInt32(0));
}

void FenceMbarrierInit(llvm::IRBuilder<>& b) {
  Asm(b, b.getVoidTy(), "fence.mbarrier_init.release.cluster;", "", {});
}

void FenceProxyAsync(llvm::IRBuilder<>& b) {
  Asm(b, b.getVoidTy(), "fence.proxy.async.shared::cta;", "", {});
}

void CpAsync16(llvm::IRBuilder<>& b, llvm::Value* dst, llvm::Value* src, llvm::Value* src_bytes) {
  if (src_bytes)
    Asm(b, b.getVoidTy(), "cp.async.cg.shared.global [$0], [$1], 16, $2;", "r,l,r", {dst, src, src_bytes});
  else
    Asm(b, b.getVoidTy(), "cp.async.cg.shared.global [$0], [$1], 16;", "r,l", {dst, src});
}

namespace {

// The operands of a tensor copy's coordinates after those before them (`first` of them): text
// `{$first, ...}`, a 32-bit register constraint and the value each.
std::string Coordinates(const std::vector<llvm::Value*>& coords, std::size_t first, std::string& constraints,
                        std::vector<llvm::Value*>& args) {
  std::string text = "{";
  for (std::size_t i = 0; i < coords.size(); ++i) {
    text += (i ? ", $" : "$") + std::to_string(first + i);
    constraints += ",r";
    args.push_back(coords[i]);
  }
  return text + "}";
}

}  // namespace

void TmaLoad2d(llvm::IRBuilder<>& b, llvm::Value* dst, llvm::Value* map, llvm::Value* col, llvm::Value* row,
               llvm::Value* bar) {
  TmaLoad(b, dst, map, {col, row}, bar);
}

void TmaLoad(llvm::IRBuilder<>& b, llvm::Value* dst, llvm::Value* map, const std::vector<llvm::Value*>& coords,
             llvm::Value* bar) {
  std::string constraints = "r,l";
  std::vector<llvm::Value*> args = {dst, map};
  std::string text = "cp.async.bulk.tensor." + std::to_string(coords.size()) +
                     "d.shared::cluster.global.mbarrier::complete_tx::bytes [$0], [$1, " +
                     Coordinates(coords, 2, constraints, args) + "], [$" + std::to_string(coords.size() + 2) + "];";
  constraints += ",r";
  args.push_back(bar);
  Asm(b, b.getVoidTy(), text, constraints, args);
}

void TmaStore2d(llvm::IRBuilder<>& b, llvm::Value* map, llvm::Value* col, llvm::Value* row, llvm::Value* src) {
  TmaStore(b, map, {col, row}, src);
}

void TmaStore(llvm::IRBuilder<>& b, llvm::Value* map, const std::vector<llvm::Value*>& coords, llvm::Value* src) {
  std::string constraints = "l";
  std::vector<llvm::Value*> args = {map};
  std::string text = "cp.async.bulk.tensor." + std::to_string(coords.size()) + "d.global.shared::cta.bulk_group [$0, " +
                     Coordinates(coords, 1, constraints, args) + "], [$" + std::to_string(coords.size() + 1) + "];";
  constraints += ",r";
  args.push_back(src);
  Asm(b, b.getVoidTy(), text, constraints, args);
}

void BulkCommit(llvm::IRBuilder<>& b) {
  Asm(b, b.getVoidTy(), "cp.async.bulk.commit_group;", "", {});
}

void BulkWaitRead(llvm::IRBuilder<>& b) {
  Asm(b, b.getVoidTy(), "cp.async.bulk.wait_group.read 0;", "", {});
}

void SetMaxNreg(llvm::IRBuilder<>& b, bool increase, int registers) {
  Asm(b, b.getVoidTy(),
      std::string("setmaxnreg.") + (increase ? "inc" : "dec") + ".sync.aligned.u32 " + std::to_string(registers) + ";",
      "", {});
}

llvm::Value* PackRound(llvm::IRBuilder<>& b, llvm::Value* lo, llvm::Value* hi, bool bf16) {
  auto* type = llvm::FunctionType::get(b.getInt32Ty(), {b.getFloatTy(), b.getFloatTy()}, false);
  std::string text = std::string("cvt.rn.") + (bf16 ? "bf16x2" : "f16x2") + ".f32 $0, $1, $2;";
  return b.CreateCall(llvm::InlineAsm::get(type, text, "=r,f,f", false), {hi, lo});
}

void BarArrive(llvm::IRBuilder<>& b, llvm::Value* id, llvm::Value* threads) {
  Asm(b, b.getVoidTy(), "bar.arrive $0, $1;", "r,r", {id, threads});
}

void WgmmaFence(llvm::IRBuilder<>& b) {
  Asm(b, b.getVoidTy(), "wgmma.fence.sync.aligned;", "", {});
}

std::vector<llvm::Value*> FenceOperands(llvm::IRBuilder<>& b, const std::vector<llvm::Value*>& values) {
  if (values.empty()) return values;
  std::string constraints;
  std::vector<llvm::Type*> fields;
  for (std::size_t i = 0; i < values.size(); ++i) {
    llvm::Type* t = values[i]->getType();
    const char* c = t->isFloatTy() ? "=f" : t->isIntegerTy(64) ? "=l" : t->isIntegerTy(32) ? "=r" : "=h";
    constraints += std::string(i ? "," : "") + c;
    fields.push_back(t);
  }
  for (std::size_t i = 0; i < values.size(); ++i) constraints += "," + std::to_string(i);
  llvm::Value* r = Asm(b, llvm::StructType::get(b.getContext(), fields), "", constraints, values);
  std::vector<llvm::Value*> out;
  for (std::size_t i = 0; i < values.size(); ++i) out.push_back(b.CreateExtractValue(r, {static_cast<unsigned>(i)}));
  return out;
}

void WgmmaCommit(llvm::IRBuilder<>& b) {
  Asm(b, b.getVoidTy(), "wgmma.commit_group.sync.aligned;", "", {});
}

void WgmmaWait(llvm::IRBuilder<>& b, int pending) {
  Asm(b, b.getVoidTy(), "wgmma.wait_group.sync.aligned " + std::to_string(pending) + ";", "", {});
}

std::vector<llvm::Value*> Wgmma(llvm::IRBuilder<>& b, int n, bool bf16, const std::vector<llvm::Value*>& acc,
                                llvm::Value* a_desc, const std::vector<llvm::Value*>& a_regs, llvm::Value* b_desc,
                                bool trans_a, bool trans_b, bool accumulate) {
  std::size_t d = acc.size();  // n / 2
  std::string outs, constraints;
  for (std::size_t i = 0; i < d; ++i) {
    outs += (i ? ", $" : "$") + std::to_string(i);
    constraints += i ? ",=f" : "=f";
  }
  std::vector<llvm::Value*> args;
  std::size_t next = d;
  auto operand = [&](llvm::Value* v, const char* c) {
    args.push_back(v);
    constraints += std::string(",") + c;
    return "$" + std::to_string(next++);
  };
  std::string a;
  if (a_regs.empty()) {
    a = operand(a_desc, "l");
  } else {
    a = "{";
    for (std::size_t i = 0; i < a_regs.size(); ++i) a += (i ? ", " : "") + operand(a_regs[i], "r");
    a += "}";
  }
  std::string bd = operand(b_desc, "l");
  std::string scale_d = operand(b.getInt32(accumulate ? 1 : 0), "r");  // 1: D = A * B + D; 0: D = A * B
  for (std::size_t i = 0; i < d; ++i) {
    args.push_back(acc[i]);
    constraints += "," + std::to_string(i);
  }
  std::string type = bf16 ? "bf16" : "f16";
  std::string text = "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, " + scale_d + ", 0;\n\twgmma.mma_async.sync.aligned.m64n" +
                     std::to_string(n) + "k16.f32." + type + "." + type + " {" + outs + "}, " + a + ", " + bd +
                     ", p, 1, 1, " + (a_regs.empty() ? std::string(trans_a ? "1, " : "0, ") : std::string()) +
                     (trans_b ? "1" : "0") + ";\n\t}";
  std::vector<llvm::Type*> fields(d, b.getFloatTy());
  llvm::Value* r = Asm(b, llvm::StructType::get(b.getContext(), fields), text, constraints, args);
  std::vector<llvm::Value*> out;
  for (std::size_t i = 0; i < d; ++i) out.push_back(b.CreateExtractValue(r, {static_cast<unsigned>(i)}));
  return out;
}

}  // namespace weft::codegen::hopper
