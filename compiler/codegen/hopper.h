// The sm_90a instructions that LLVM 19 has no NVVM intrinsic for, as inline PTX (InlineAsm) with
// register operands: mbarrier transactions (arrive.expect_tx, try_wait.parity), the async-proxy
// fences, TMA loads (cp.async.bulk.tensor.2d) and wgmma with its fence, commit and wait. Each is one
// instruction (the wait and the wgmma with a predicate set from an operand); loops stay in LLVM IR.
// Addresses of shared memory are 32-bit shared-window addresses (i32).
#pragma once

#include <llvm/IR/IRBuilder.h>

#include <vector>

namespace weft::codegen::hopper {

// mbarrier.arrive.expect_tx.shared::cta.b64: this thread arrives and the phase expects `bytes` more.
void MbarrierArriveExpectTx(llvm::IRBuilder<>& b, llvm::Value* bar, llvm::Value* bytes);
// One mbarrier.try_wait.parity.shared::cta.b64: i1, true once the phase of `parity` (i32) is done.
llvm::Value* MbarrierTryWait(llvm::IRBuilder<>& b, llvm::Value* bar, llvm::Value* parity);
// fence.mbarrier_init.release.cluster: initialized mbarriers visible to the async proxy (TMA).
void FenceMbarrierInit(llvm::IRBuilder<>& b);
// fence.proxy.async.shared::cta: generic-proxy writes to shared memory visible to wgmma and TMA.
void FenceProxyAsync(llvm::IRBuilder<>& b);
// cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes: the box of the
// tensor map at generic address `map` (i64) whose first element is (col, row) (i32) into shared
// memory at `dst`, completing its bytes on mbarrier `bar`.
void TmaLoad2d(llvm::IRBuilder<>& b, llvm::Value* dst, llvm::Value* map, llvm::Value* col, llvm::Value* row,
               llvm::Value* bar);
// The same for a map of coords.size() (2 to 5) dims, `coords` (i32) innermost first: the copy of a
// tensor read in place through a view (TensorMapSpec::rank).
void TmaLoad(llvm::IRBuilder<>& b, llvm::Value* dst, llvm::Value* map, const std::vector<llvm::Value*>& coords,
             llvm::Value* bar);
// cp.async.bulk.tensor.2d.global.shared::cta.bulk_group: shared memory at `src` into the box of
// the tensor map at `map` whose first element is (col, row); then cp.async.bulk.commit_group, and
// cp.async.bulk.wait_group.read 0: until every committed store has read its shared memory.
void TmaStore2d(llvm::IRBuilder<>& b, llvm::Value* map, llvm::Value* col, llvm::Value* row, llvm::Value* src);
// The same through a map of coords.size() (1 to 5) dims, innermost first.
void TmaStore(llvm::IRBuilder<>& b, llvm::Value* map, const std::vector<llvm::Value*>& coords, llvm::Value* src);
void BulkCommit(llvm::IRBuilder<>& b);
void BulkWaitRead(llvm::IRBuilder<>& b);

// cp.async.cg.shared.global (sm_80): 16 bytes from `src` (a global pointer) to the shared-window
// address `dst` (i32); with `src_bytes` (i32), only that many are read and the rest filled with
// zeros. LLVM 19 selects its NVVM intrinsics only with 64-bit shared pointers, and weft generates
// 32-bit ones (device.cpp).
void CpAsync16(llvm::IRBuilder<>& b, llvm::Value* dst, llvm::Value* src, llvm::Value* src_bytes = nullptr);

// setmaxnreg.{inc,dec}.sync.aligned.u32: this warpgroup's registers per thread become `registers`
// (a multiple of 8 in [24, 256]); every warp of the warpgroup executes it.
void SetMaxNreg(llvm::IRBuilder<>& b, bool increase, int registers);

// cvt.rn.{bf16x2,f16x2}.f32: two f32 values rounded and packed in one i32, `lo` in the low half
// (one instruction where LLVM 19 emits two conversions and a move; sm_80 and later). Pure.
llvm::Value* PackRound(llvm::IRBuilder<>& b, llvm::Value* lo, llvm::Value* hi, bool bf16);

// bar.arrive `id`, `threads` (i32 values): this warp arrives at named barrier `id` without waiting.
void BarArrive(llvm::IRBuilder<>& b, llvm::Value* id, llvm::Value* threads);

void WgmmaFence(llvm::IRBuilder<>& b);
// An empty asm statement that takes and returns `values` (CUTLASS's warpgroup_fence_operand): uses
// of the results stay after the statements before it (a wgmma wait), in LLVM's scheduling too.
std::vector<llvm::Value*> FenceOperands(llvm::IRBuilder<>& b, const std::vector<llvm::Value*>& values);
void WgmmaCommit(llvm::IRBuilder<>& b);
void WgmmaWait(llvm::IRBuilder<>& b, int pending);

// wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{bf16|f16}: acc (n / 2 f32 values of the thread, in
// the atom's C order) += A * B. A is a descriptor (i64) when `a_regs` is empty, else the thread's
// four packed registers (i32) of the atom's A fragment; B is a descriptor. `trans_a`/`trans_b`: the
// operand is MN-major. `accumulate` false: D = A * B, the accumulator's values unread (its
// registers may be undefined). Returns the new accumulator values, valid after WgmmaWait.
std::vector<llvm::Value*> Wgmma(llvm::IRBuilder<>& b, int n, bool bf16, const std::vector<llvm::Value*>& acc,
                                llvm::Value* a_desc, const std::vector<llvm::Value*>& a_regs, llvm::Value* b_desc,
                                bool trans_a, bool trans_b, bool accumulate = true);

}  // namespace weft::codegen::hopper
