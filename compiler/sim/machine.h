// A thread-level model of one thread block of an NVIDIA GPU, for validating synthesized layouts and
// instruction choices on a machine without a GPU (CI). It holds what the hardware holds: per-thread
// files of 32-bit registers, one block's byte-addressed shared memory and global memory buffers; and
// it executes the instructions weft emits with their PTX ISA semantics, written from the ISA's text
// ("Matrix fragments for mma.m16n8k16", "ldmatrix", "Matrix Descriptor Format", "Shared memory
// matrix layout", the tensor map's swizzle modes) and not from weft's own layout tables, so that a
// unit test comparing the two checks one against the other.
//
// How it models the machine:
//   1. Registers are 32-bit words, numbered per thread; a value narrower than 32 bits sits in the
//      low bits, and packed pairs (bf16x2, f16x2) hold element 0 in the low half, as PTX does.
//   2. Memory is bytes. An address is just a number: a swizzled layout exists only as the addresses
//      that instructions compute (ldmatrix's row addresses, wgmma's descriptor bit arithmetic, TMA's
//      address-bit XOR), so a wrong layout reads wrong data, exactly as it would on the GPU.
//   3. Global buffers live at fake 64-bit addresses (buffer i at (i + 1) << 40); an access outside
//      every buffer, outside shared memory, or misaligned for its width is a Fault, which the
//      hardware would report as a misaligned or illegal address.
//   4. Instructions complete when issued: cp.async and TMA copy at once, so commit/wait groups and
//      mbarriers are no-ops in program order; bar.sync only counts. The executor (executor.h) issues
//      each instruction for every thread before the next, which is one legal interleaving of a
//      correctly synchronized program.
//   5. Tensor-core arithmetic: products of f16/bf16 are exact in f32; D = A * B + C sums the exact
//      products and C in double and rounds once to f32 (the hardware's internal order and rounding
//      are unspecified; gpu.md's tolerance covers the difference).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "layout/atoms.h"
#include "weft/tensor.h"

namespace weft::sim {

// An access the hardware would trap on or whose result is undefined (out of bounds, misaligned, a
// malformed descriptor). The message names the instruction, the thread and the address.
class Fault : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class MmaType : std::uint8_t { F16, BF16 };

// A wgmma operand in shared memory: the instruction's 64-bit matrix descriptor and its transpose
// flag (imm-trans-a/b: 0 = K-major, 1 = MN-major).
struct SmemOperand {
  std::uint64_t descriptor = 0;
  bool mn_major = false;
};

// The decoded fields of a descriptor (PTX "Matrix Descriptor Format").
struct DecodedDescriptor {
  std::uint32_t start = 0;  // bytes
  std::int64_t leading_byte_offset = 0;
  std::int64_t stride_byte_offset = 0;
  int base_offset = 0;  // bits 49-51
  layout::SwizzleMode swizzle = layout::SwizzleMode::kNone;
};
DecodedDescriptor DecodeDescriptor(std::uint64_t descriptor);

// The shared-memory byte address of element (mn, k) of a wgmma operand read through a descriptor:
// the canonical layout of the PTX ISA ("Shared memory matrix layout") for the descriptor's swizzle
// mode and the operand's major-ness, then the swizzle XOR on the address bits.
// @pre 0 <= k < 16 (one k16 instruction), element_bytes == 2
std::uint32_t DescriptorAddress(const SmemOperand& operand, int element_bytes, int mn, int k);

// The swizzle a TMA tensor map or a wgmma descriptor applies to a shared-memory byte address:
// the 16-byte chunk bits [4, 4+b) XOR-ed with the bits [7, 7+b), b = 1, 2, 3 for 32B, 64B, 128B.
std::uint32_t SwizzleAddress(layout::SwizzleMode mode, std::uint32_t address);

// How many of each instruction a run issued (per thread for per-thread instructions, per warp or
// warpgroup for collective ones), for `weft simulate`'s summary and for tests.
using InstructionCounts = std::map<std::string, std::int64_t>;

class Machine {
 public:
  // @pre threads is a positive multiple of 32
  Machine(int threads, std::int64_t shared_bytes);

  int threads() const { return threads_; }
  std::int64_t shared_bytes() const { return static_cast<std::int64_t>(shared_.size()); }

  // --- registers -----------------------------------------------------------------------------
  // Reserves `count` more registers in every thread (zeroed); returns the first one's number.
  int Allocate(int count);
  int registers() const { return registers_; }
  std::uint32_t Reg(int thread, int reg) const;
  void SetReg(int thread, int reg, std::uint32_t value);
  float RegF32(int thread, int reg) const;
  void SetRegF32(int thread, int reg, float value);

  // --- memory --------------------------------------------------------------------------------
  // Adds a global buffer holding `tensor`'s bytes; returns its base address.
  std::uint64_t AddGlobal(runtime::HostTensor tensor);
  const runtime::HostTensor& Global(int buffer) const { return globals_[buffer]; }
  runtime::HostTensor& Global(int buffer) { return globals_[buffer]; }
  static std::uint64_t GlobalBase(int buffer) { return std::uint64_t(buffer + 1) << 40; }
  std::vector<std::uint8_t>& shared() { return shared_; }
  const std::vector<std::uint8_t>& shared() const { return shared_; }
  // Fills shared memory with a pattern (the GPU does not zero it): reading what was never written
  // gives garbage, not zeros that could hide a bug.
  void PoisonShared(std::uint8_t byte);
  // A fresh block: every register holds `reg_poison`, every shared byte `shared_poison`.
  void ResetBlock(std::uint32_t reg_poison, std::uint8_t shared_poison);

  // --- per-thread instructions ---------------------------------------------------------------
  // ld/st.{shared,global}.{b8,b16,b32,v2.b32,v4.b32}: `bytes` in {1, 2, 4, 8, 16}, the address
  // aligned to it; registers reg, reg+1, .. (a sub-word access uses the low bytes of `reg`).
  void LdShared(int thread, int reg, std::uint32_t address, int bytes);
  void StShared(int thread, std::uint32_t address, int reg, int bytes);
  void LdGlobal(int thread, int reg, std::uint64_t address, int bytes);
  void StGlobal(int thread, std::uint64_t address, int reg, int bytes);
  // cp.async.{ca,cg}.shared.global [dst], [src], bytes (4, 8, 16; .cg only 16): done at once.
  void CpAsync(int thread, std::uint32_t shared_address, std::uint64_t global_address, int bytes);
  void CpAsyncCommit(int thread);
  void CpAsyncWait(int thread, int pending);

  // --- warp and block instructions -----------------------------------------------------------
  // mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32 {d0..d3}, {a0..a3}, {b0,b1},
  // {c0..c3} by warp `warp`: registers d..d+3, a..a+3, b..b+1, c..c+3 of each lane.
  void MmaSync(MmaType type, int warp, int d, int a, int b, int c);
  // ldmatrix.sync.aligned.m8n8.{x1,x2,x4}[.trans].shared.b16: lane 8j + r gives the address of row r
  // of matrix j (`row_addresses[lane]`; lanes past 8 * count are ignored); each lane receives matrix
  // j in register dst + j.
  void Ldmatrix(int warp, int count, bool trans, int dst, const std::array<std::uint32_t, 32>& row_addresses);
  // shfl.sync.bfly.b32 d, a, lane_mask, 0x1f, 0xffffffff: each lane reads lane ^ lane_mask.
  void ShflBfly(int warp, int dst, int src, int lane_mask);
  void BarSync();
  // wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{f16,bf16}.{f16,bf16} by warpgroup `group` (warps
  // 4g..4g+3): D (registers d..d+n/2-1 of each thread) = A * B + (scale_d ? D : 0); A from shared
  // memory through its descriptor, or from registers a..a+3 (`a_in_registers`), B from shared memory.
  // fence/commit_group/wait_group are no-ops: the product is done when this returns.
  void Wgmma(MmaType type, int n, int group, int d, const SmemOperand& a, const SmemOperand& b, bool scale_d);
  void WgmmaRegA(MmaType type, int n, int group, int d, int a, const SmemOperand& b, bool scale_d);
  // cp.async.bulk.tensor.2d.shared::cluster.global.tile of a box at element coordinates (c0, c1)
  // (c0 innermost) of the tensor map `map` (its global_address, dims, strides, box and swizzle) into
  // shared memory at `shared_address`: the box is written row after row, box_dims[0] * element_bytes
  // per row, each 16-byte chunk at the swizzled address; elements outside the tensor are zero.
  void TmaLoad2d(const layout::TmaBox& map, std::uint32_t shared_address, std::int64_t c0, std::int64_t c1);

  const InstructionCounts& counts() const { return counts_; }

 private:
  std::uint8_t* SharedAt(std::uint32_t address, int bytes, const char* what);
  std::uint8_t* GlobalAt(std::uint64_t address, int bytes, const char* what);
  void CheckWarp(int warp) const;
  void WgmmaImpl(MmaType type, int n, int group, int d, const SmemOperand* a_smem, int a_reg, const SmemOperand& b,
                 bool scale_d);

  int threads_;
  int registers_ = 0;
  std::vector<std::vector<std::uint32_t>> regs_;  // [thread][register]
  std::vector<std::uint8_t> shared_;
  std::vector<runtime::HostTensor> globals_;
  InstructionCounts counts_;
};

// Element decoding for the tensor-core types.
double DecodeMmaElement(MmaType type, std::uint16_t bits);

}  // namespace weft::sim
