// The block-level machine; see machine.h. Every formula below is the PTX ISA's, restated in the
// comment above the code that applies it (g = groupID = lane / 4, t = threadID_in_group = lane % 4).
#include "sim/machine.h"

#include <bit>
#include <cstring>
#include <sstream>

#include "weft/numerics.h"

namespace weft::sim {

namespace {

std::string Hex(std::uint64_t value) {
  std::ostringstream out;
  out << "0x" << std::hex << value;
  return out.str();
}

bool ValidWidth(int bytes) {
  return bytes == 1 || bytes == 2 || bytes == 4 || bytes == 8 || bytes == 16;
}

int SwizzleBits(layout::SwizzleMode mode) {
  switch (mode) {
    case layout::SwizzleMode::kNone:
      return 0;
    case layout::SwizzleMode::k32B:
      return 1;
    case layout::SwizzleMode::k64B:
      return 2;
    case layout::SwizzleMode::k128B:
      return 3;
  }
  return 0;
}

}  // namespace

double DecodeMmaElement(MmaType type, std::uint16_t bits) {
  return type == MmaType::BF16 ? runtime::Bf16ToFloat(bits) : runtime::HalfToFloat(bits);
}

// The tensor map and descriptor swizzles act on the byte address: the 16-byte chunk index (bits 4..6)
// is XOR-ed with the 128-byte row index (bits 7..9), masked to 1, 2 or 3 bits for 32B, 64B, 128B.
std::uint32_t SwizzleAddress(layout::SwizzleMode mode, std::uint32_t address) {
  std::uint32_t mask = (1u << SwizzleBits(mode)) - 1;
  return address ^ (((address >> 7) & mask) << 4);
}

// Matrix Descriptor Format: bits 0-13 start address >> 4, 16-29 LBO >> 4, 32-45 SBO >> 4, 49-51 base
// offset, 62-63 swizzle mode (0 none, 1 128B, 2 64B, 3 32B).
DecodedDescriptor DecodeDescriptor(std::uint64_t d) {
  DecodedDescriptor out;
  out.start = static_cast<std::uint32_t>(d & 0x3FFF) << 4;
  out.leading_byte_offset = static_cast<std::int64_t>((d >> 16) & 0x3FFF) << 4;
  out.stride_byte_offset = static_cast<std::int64_t>((d >> 32) & 0x3FFF) << 4;
  out.base_offset = static_cast<int>((d >> 49) & 0x7);
  switch ((d >> 62) & 0x3) {
    case 0:
      out.swizzle = layout::SwizzleMode::kNone;
      break;
    case 1:
      out.swizzle = layout::SwizzleMode::k128B;
      break;
    case 2:
      out.swizzle = layout::SwizzleMode::k64B;
      break;
    default:
      out.swizzle = layout::SwizzleMode::k32B;
      break;
  }
  return out;
}

// Shared memory matrix layout, in bytes (T = 16 / element_bytes elements per 16-byte chunk, W = the
// swizzle width in bytes, 16 for none), for element (mn, k):
//   K-major,  no swizzle: (mn % 8) * 16 + (mn / 8) * SBO + (k % T) * e + (k / T) * LBO
//   K-major,  swizzled:   (mn % 8) * W  + (mn / 8) * SBO + k * e            (LBO unused)
//   MN-major, no swizzle: (mn % T) * e + (mn / T) * SBO + (k % 8) * 16 + (k / 8) * LBO
//   MN-major, swizzled:   (mn % (W/e)) * e + (mn / (W/e)) * LBO + (k % 8) * W + (k / 8) * SBO
// added to the start address; then the swizzle XORs the address bits (so the pattern follows the
// absolute address, which is why canonical tiles are aligned to the pattern's 8 * W bytes).
std::uint32_t DescriptorAddress(const SmemOperand& operand, int e, int mn, int k) {
  DecodedDescriptor d = DecodeDescriptor(operand.descriptor);
  std::int64_t t = 16 / e;
  std::int64_t w = d.swizzle == layout::SwizzleMode::kNone ? 16 : (16 << SwizzleBits(d.swizzle));
  std::int64_t offset = 0;
  if (!operand.mn_major) {
    if (d.swizzle == layout::SwizzleMode::kNone)
      offset = (mn % 8) * 16 + (mn / 8) * d.stride_byte_offset + (k % t) * e + (k / t) * d.leading_byte_offset;
    else
      offset = (mn % 8) * w + (mn / 8) * d.stride_byte_offset + std::int64_t{k} * e;
  } else {
    if (d.swizzle == layout::SwizzleMode::kNone) {
      offset = (mn % t) * e + (mn / t) * d.stride_byte_offset + (k % 8) * 16 + (k / 8) * d.leading_byte_offset;
    } else {
      std::int64_t per_row = w / e;
      offset =
          (mn % per_row) * e + (mn / per_row) * d.leading_byte_offset + (k % 8) * w + (k / 8) * d.stride_byte_offset;
    }
  }
  return SwizzleAddress(d.swizzle, static_cast<std::uint32_t>(d.start + offset));
}

Machine::Machine(int threads, std::int64_t shared_bytes)
    : threads_(threads), regs_(threads), shared_(static_cast<std::size_t>(shared_bytes), 0) {
  if (threads <= 0 || threads % 32 != 0)
    throw Fault("a block of " + std::to_string(threads) + " threads is not a whole number of warps");
}

int Machine::Allocate(int count) {
  int first = registers_;
  registers_ += count;
  for (auto& r : regs_) r.resize(static_cast<std::size_t>(registers_), 0);
  return first;
}

std::uint32_t Machine::Reg(int thread, int reg) const {
  return regs_.at(thread).at(reg);
}

void Machine::SetReg(int thread, int reg, std::uint32_t value) {
  regs_.at(thread).at(reg) = value;
}

float Machine::RegF32(int thread, int reg) const {
  return std::bit_cast<float>(Reg(thread, reg));
}

void Machine::SetRegF32(int thread, int reg, float value) {
  SetReg(thread, reg, std::bit_cast<std::uint32_t>(value));
}

std::uint64_t Machine::AddGlobal(runtime::HostTensor tensor) {
  globals_.push_back(std::move(tensor));
  return GlobalBase(static_cast<int>(globals_.size()) - 1);
}

void Machine::PoisonShared(std::uint8_t byte) {
  std::fill(shared_.begin(), shared_.end(), byte);
}

void Machine::ResetBlock(std::uint32_t reg_poison, std::uint8_t shared_poison) {
  for (auto& r : regs_) std::fill(r.begin(), r.end(), reg_poison);
  PoisonShared(shared_poison);
}

std::uint8_t* Machine::SharedAt(std::uint32_t address, int bytes, const char* what) {
  if (address % static_cast<std::uint32_t>(bytes) != 0)
    throw Fault(std::string(what) + ": shared address " + Hex(address) + " is not aligned to " + std::to_string(bytes) +
                " bytes");
  if (std::uint64_t{address} + static_cast<std::uint64_t>(bytes) > shared_.size())
    throw Fault(std::string(what) + ": shared address " + Hex(address) + " is outside the block's " +
                std::to_string(shared_.size()) + " bytes of shared memory");
  return shared_.data() + address;
}

std::uint8_t* Machine::GlobalAt(std::uint64_t address, int bytes, const char* what) {
  if (address % static_cast<std::uint64_t>(bytes) != 0)
    throw Fault(std::string(what) + ": global address " + Hex(address) + " is not aligned to " + std::to_string(bytes) +
                " bytes");
  std::uint64_t buffer = (address >> 40) - 1;
  if ((address >> 40) == 0 || buffer >= globals_.size())
    throw Fault(std::string(what) + ": global address " + Hex(address) + " is in no buffer");
  std::uint64_t offset = address - GlobalBase(static_cast<int>(buffer));
  auto& data = globals_[buffer].bytes;
  if (offset + static_cast<std::uint64_t>(bytes) > data.size())
    throw Fault(std::string(what) + ": global address " + Hex(address) + " is past the end of buffer " +
                std::to_string(buffer) + " (" + std::to_string(data.size()) + " bytes)");
  return data.data() + offset;
}

namespace {

// Registers reg.. as bytes, little-endian, as a vector access moves them.
void ToRegs(std::vector<std::uint32_t>& regs, int reg, const std::uint8_t* src, int bytes) {
  if (reg < 0 || reg + (bytes + 3) / 4 > static_cast<int>(regs.size())) throw Fault("register out of range");
  if (bytes < 4) {
    std::uint32_t v = 0;
    std::memcpy(&v, src, static_cast<std::size_t>(bytes));
    regs[reg] = v;
    return;
  }
  std::memcpy(&regs[reg], src, static_cast<std::size_t>(bytes));
}

void FromRegs(const std::vector<std::uint32_t>& regs, int reg, std::uint8_t* dst, int bytes) {
  if (reg < 0 || reg + (bytes + 3) / 4 > static_cast<int>(regs.size())) throw Fault("register out of range");
  std::memcpy(dst, &regs[reg], static_cast<std::size_t>(bytes));
}

}  // namespace

void Machine::LdShared(int thread, int reg, std::uint32_t address, int bytes) {
  if (!ValidWidth(bytes)) throw Fault("ld.shared of " + std::to_string(bytes) + " bytes");
  ToRegs(regs_.at(thread), reg, SharedAt(address, bytes, "ld.shared"), bytes);
  ++counts_["ld.shared"];
}

void Machine::StShared(int thread, std::uint32_t address, int reg, int bytes) {
  if (!ValidWidth(bytes)) throw Fault("st.shared of " + std::to_string(bytes) + " bytes");
  FromRegs(regs_.at(thread), reg, SharedAt(address, bytes, "st.shared"), bytes);
  ++counts_["st.shared"];
}

void Machine::LdGlobal(int thread, int reg, std::uint64_t address, int bytes) {
  if (!ValidWidth(bytes)) throw Fault("ld.global of " + std::to_string(bytes) + " bytes");
  ToRegs(regs_.at(thread), reg, GlobalAt(address, bytes, "ld.global"), bytes);
  ++counts_["ld.global"];
}

void Machine::StGlobal(int thread, std::uint64_t address, int reg, int bytes) {
  if (!ValidWidth(bytes)) throw Fault("st.global of " + std::to_string(bytes) + " bytes");
  FromRegs(regs_.at(thread), reg, GlobalAt(address, bytes, "st.global"), bytes);
  ++counts_["st.global"];
}

// cp.async: both addresses aligned to the copy size (4, 8 or 16 bytes).
void Machine::CpAsync(int thread, std::uint32_t shared_address, std::uint64_t global_address, int bytes) {
  if (thread < 0 || thread >= threads_) throw Fault("cp.async: no thread " + std::to_string(thread));
  if (bytes != 4 && bytes != 8 && bytes != 16) throw Fault("cp.async of " + std::to_string(bytes) + " bytes");
  const std::uint8_t* src = GlobalAt(global_address, bytes, "cp.async");
  std::memcpy(SharedAt(shared_address, bytes, "cp.async"), src, static_cast<std::size_t>(bytes));
  ++counts_["cp.async"];
}

void Machine::CpAsyncCommit(int) {
  ++counts_["cp.async.commit_group"];
}

void Machine::CpAsyncWait(int, int) {
  ++counts_["cp.async.wait_group"];
}

void Machine::CheckWarp(int warp) const {
  if (warp < 0 || (warp + 1) * 32 > threads_) throw Fault("no warp " + std::to_string(warp) + " in the block");
}

// mma.m16n8k16 fragments (".row.col", f16/bf16 inputs, f32 accumulators):
//   A, registers a0..a3 holding a_i (i = 0..7) two per register, low half first:
//     row = g + 8 * ((i / 2) % 2), col = 2t + i % 2 + 8 * (i >= 4)
//   B, registers b0, b1 holding b_i (i = 0..3): row (k) = 2t + i % 2 + 8 * (i >= 2), col (n) = g
//   C and D, c_i (i = 0..3) one f32 per register: row = g + 8 * (i >= 2), col = 2t + i % 2
void Machine::MmaSync(MmaType type, int warp, int d, int a, int b, int c) {
  CheckWarp(warp);
  double am[16][16], bm[16][8], cm[16][8];
  for (int lane = 0; lane < 32; ++lane) {
    const auto& r = regs_[warp * 32 + lane];
    if (a < 0 || b < 0 || c < 0 || d < 0 || a + 4 > registers_ || b + 2 > registers_ || c + 4 > registers_ ||
        d + 4 > registers_)
      throw Fault("mma.sync: register out of range");
    int g = lane / 4, t = lane % 4;
    for (int i = 0; i < 8; ++i) {
      std::uint16_t bits = static_cast<std::uint16_t>(r[a + i / 2] >> (16 * (i % 2)));
      am[g + 8 * ((i / 2) % 2)][2 * t + i % 2 + 8 * (i >= 4)] = DecodeMmaElement(type, bits);
    }
    for (int i = 0; i < 4; ++i) {
      std::uint16_t bits = static_cast<std::uint16_t>(r[b + i / 2] >> (16 * (i % 2)));
      bm[2 * t + i % 2 + 8 * (i >= 2)][g] = DecodeMmaElement(type, bits);
      cm[g + 8 * (i >= 2)][2 * t + i % 2] = std::bit_cast<float>(r[c + i]);
    }
  }
  for (int lane = 0; lane < 32; ++lane) {
    int g = lane / 4, t = lane % 4;
    for (int i = 0; i < 4; ++i) {
      int row = g + 8 * (i >= 2), col = 2 * t + i % 2;
      double sum = cm[row][col];
      for (int k = 0; k < 16; ++k) sum += am[row][k] * bm[k][col];
      regs_[warp * 32 + lane][d + i] = std::bit_cast<std::uint32_t>(runtime::DoubleToFloat(sum));
    }
  }
  ++counts_[type == MmaType::BF16 ? "mma.sync.m16n8k16.bf16" : "mma.sync.m16n8k16.f16"];
}

// ldmatrix: matrix j (0 <= j < count) is 8 rows of 8 b16 elements, row r at the address lane 8j + r
// supplies (16-byte aligned). Lane l receives, in register dst + j, elements (l / 4, 2 (l % 4)) and
// (l / 4, 2 (l % 4) + 1) of matrix j, the first in the low half; with .trans, elements
// (2 (l % 4), l / 4) and (2 (l % 4) + 1, l / 4).
void Machine::Ldmatrix(int warp, int count, bool trans, int dst, const std::array<std::uint32_t, 32>& row_addresses) {
  CheckWarp(warp);
  if (count != 1 && count != 2 && count != 4) throw Fault("ldmatrix.x" + std::to_string(count));
  if (dst < 0 || dst + count > registers_) throw Fault("ldmatrix: register out of range");
  std::uint16_t m[4][8][8];
  for (int j = 0; j < count; ++j) {
    for (int r = 0; r < 8; ++r) {
      const std::uint8_t* row = SharedAt(row_addresses[8 * j + r], 16, "ldmatrix");
      std::memcpy(m[j][r], row, 16);
    }
  }
  for (int lane = 0; lane < 32; ++lane) {
    int g = lane / 4, t = lane % 4;
    for (int j = 0; j < count; ++j) {
      std::uint16_t lo = trans ? m[j][2 * t][g] : m[j][g][2 * t];
      std::uint16_t hi = trans ? m[j][2 * t + 1][g] : m[j][g][2 * t + 1];
      regs_[warp * 32 + lane][dst + j] = std::uint32_t{lo} | (std::uint32_t{hi} << 16);
    }
  }
  ++counts_["ldmatrix.x" + std::to_string(count) + (trans ? ".trans" : "")];
}

void Machine::ShflBfly(int warp, int dst, int src, int lane_mask) {
  CheckWarp(warp);
  if (dst < 0 || src < 0 || dst >= registers_ || src >= registers_) throw Fault("shfl.sync: register out of range");
  std::uint32_t in[32];
  for (int lane = 0; lane < 32; ++lane) in[lane] = regs_[warp * 32 + lane][src];
  for (int lane = 0; lane < 32; ++lane) regs_[warp * 32 + lane][dst] = in[(lane ^ lane_mask) & 31];
  ++counts_["shfl.sync.bfly"];
}

void Machine::BarSync() {
  ++counts_["bar.sync"];
}

void Machine::Wgmma(MmaType type, int n, int group, int d, const SmemOperand& a, const SmemOperand& b, bool scale_d) {
  WgmmaImpl(type, n, group, d, &a, -1, b, scale_d);
}

void Machine::WgmmaRegA(MmaType type, int n, int group, int d, int a, const SmemOperand& b, bool scale_d) {
  WgmmaImpl(type, n, group, d, nullptr, a, b, scale_d);
}

// wgmma m64nNk16 by the warpgroup's 128 threads (warp w = 0..3 of the group, lane g, t as above):
//   D, registers d_i (i = 0 .. N/2 - 1) one f32 each: row = 16w + g + 8 * ((i / 2) % 2),
//     col = 8 * (i / 4) + 2t + i % 2
//   A in registers (a0..a3 holding a_i, i = 0..7, low half first): row = 16w + g + 8 * ((i / 2) % 2),
//     col = 2t + i % 2 + 8 * (i >= 4)
//   A (64 x 16) and B (N x 16, indexed (n, k)) in shared memory: DescriptorAddress.
void Machine::WgmmaImpl(MmaType type, int n, int group, int d, const SmemOperand* a_smem, int a_reg,
                        const SmemOperand& b, bool scale_d) {
  if (n < 8 || n > 256 || n % 8 != 0) throw Fault("wgmma: no m64n" + std::to_string(n) + "k16 shape");
  if (group < 0 || (group + 1) * 128 > threads_) throw Fault("wgmma: no warpgroup " + std::to_string(group));
  if (d < 0 || d + n / 2 > registers_ || (a_smem == nullptr && (a_reg < 0 || a_reg + 4 > registers_)))
    throw Fault("wgmma: register out of range");
  std::vector<double> am(64 * 16), bm(static_cast<std::size_t>(n) * 16);
  auto read = [&](std::uint32_t address) {
    std::uint16_t bits = 0;
    std::memcpy(&bits, SharedAt(address, 2, "wgmma"), 2);
    return DecodeMmaElement(type, bits);
  };
  for (int k = 0; k < 16; ++k) {
    if (a_smem != nullptr)
      for (int m = 0; m < 64; ++m) am[m * 16 + k] = read(DescriptorAddress(*a_smem, 2, m, k));
    for (int j = 0; j < n; ++j) bm[j * 16 + k] = read(DescriptorAddress(b, 2, j, k));
  }
  int base = group * 128;
  if (a_smem == nullptr) {
    for (int thread = 0; thread < 128; ++thread) {
      int w = thread / 32, g = (thread % 32) / 4, t = thread % 4;
      for (int i = 0; i < 8; ++i) {
        std::uint16_t bits = static_cast<std::uint16_t>(regs_[base + thread][a_reg + i / 2] >> (16 * (i % 2)));
        am[(16 * w + g + 8 * ((i / 2) % 2)) * 16 + 2 * t + i % 2 + 8 * (i >= 4)] = DecodeMmaElement(type, bits);
      }
    }
  }
  for (int thread = 0; thread < 128; ++thread) {
    int w = thread / 32, g = (thread % 32) / 4, t = thread % 4;
    auto& r = regs_[base + thread];
    for (int i = 0; i < n / 2; ++i) {
      int row = 16 * w + g + 8 * ((i / 2) % 2), col = 8 * (i / 4) + 2 * t + i % 2;
      double sum = scale_d ? double(std::bit_cast<float>(r[d + i])) : 0.0;
      for (int k = 0; k < 16; ++k) sum += am[row * 16 + k] * bm[col * 16 + k];
      r[d + i] = std::bit_cast<std::uint32_t>(runtime::DoubleToFloat(sum));
    }
  }
  ++counts_[std::string("wgmma.m64n") + std::to_string(n) + "k16" + (type == MmaType::BF16 ? ".bf16" : ".f16")];
}

// TMA tiled load of a 2-D box: element (x, y) of the box (x innermost, 0 <= x < box_dims[0]) comes
// from global element (c0 + x, c1 + y) (zero when outside global_dims) and goes to shared byte
// shared_address + y * row_bytes + x * e, row_bytes = box_dims[0] * e, through the swizzle of the
// map's mode applied to the address. The destination must be 128-byte aligned (1024 for 128B).
void Machine::TmaLoad2d(const layout::TmaBox& map, std::uint32_t shared_address, std::int64_t c0, std::int64_t c1) {
  layout::TmaBox check = map;
  check.smem_address = shared_address;
  if (map.box_dims.size() != 2) throw Fault("tma: a 2-D load needs a rank-2 tensor map");
  if (auto bytes = layout::CheckTmaBox(check); !bytes) throw Fault("tma: " + bytes.error());
  int e = map.element_bytes;
  std::int64_t row_bytes = map.box_dims[0] * e;
  std::vector<std::uint8_t> element(static_cast<std::size_t>(e));
  for (std::int64_t y = 0; y < map.box_dims[1]; ++y) {
    for (std::int64_t x = 0; x < map.box_dims[0]; ++x) {
      std::int64_t gx = c0 + x, gy = c1 + y;
      bool inside = gx >= 0 && gy >= 0 && gx < map.global_dims[0] && gy < map.global_dims[1];
      if (inside) {
        std::uint64_t address = static_cast<std::uint64_t>(map.global_address) +
                                static_cast<std::uint64_t>(gy * map.global_strides_bytes[0] + gx * e);
        std::memcpy(element.data(), GlobalAt(address, e, "tma"), static_cast<std::size_t>(e));
      } else {
        std::fill(element.begin(), element.end(), 0);
      }
      std::uint32_t linear = shared_address + static_cast<std::uint32_t>(y * row_bytes + x * e);
      std::memcpy(SharedAt(SwizzleAddress(map.swizzle, linear), e, "tma"), element.data(), static_cast<std::size_t>(e));
    }
  }
  ++counts_["cp.async.bulk.tensor.2d"];
}

}  // namespace weft::sim
