// The simulator's instructions against direct computations: mma.sync and wgmma fragments gathered
// with layout::Atoms()' TV layouts (which atoms_test checks against the PTX formulas) must give a
// plain matmul; ldmatrix from swizzled shared memory must build those fragments; wgmma must read the
// canonical swizzled tiles of layout::WgmmaSmemTile through layout::GmmaDescriptorFor's
// descriptors; a TMA box must land where those tiles expect it. A deliberately wrong swizzle must
// give a wrong product, so that each of these tests can fail.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <deque>
#include <random>

#include "layout/atoms.h"
#include "sim/machine.h"
#include "weft/numerics.h"

namespace weft::sim {
namespace {

using layout::IntTuple;
using layout::Layout;
using layout::SwizzledLayout;
using layout::SwizzleMode;

// A rows x cols matrix of bf16 bit patterns with small random values (exact products, and sums
// that f32 holds exactly, so results compare equal).
struct Matrix {
  int rows = 0, cols = 0;
  std::vector<std::uint16_t> bits;  // row-major
  std::uint16_t at(int r, int c) const { return bits[static_cast<std::size_t>(r * cols + c)]; }
  double value(int r, int c) const { return runtime::Bf16ToFloat(at(r, c)); }
};

Matrix RandomMatrix(int rows, int cols, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> dist(-8, 8);
  Matrix m{rows, cols, {}};
  for (int i = 0; i < rows * cols; ++i) m.bits.push_back(runtime::FloatToBf16(static_cast<float>(dist(gen)) / 4.0f));
  return m;
}

// (a @ b)[r][c] with a: M x K, b: K x N.
double Dot(const Matrix& a, const Matrix& b, int r, int c) {
  double sum = 0;
  for (int k = 0; k < a.cols; ++k) sum += a.value(r, k) * b.value(k, c);
  return sum;
}

const layout::Atom& AtomNamed(const std::string& name) {
  static std::deque<layout::Atom> keep;  // references into a deque survive push_back
  auto a = layout::FindAtom(name);
  REQUIRE(a.ok());
  keep.push_back(*a);
  return keep.back();
}

// Writes a 16-bit element into a packed register: value v sits in register first + v / 2, half v % 2.
void SetHalf(Machine& m, int thread, int first, int v, std::uint16_t bits) {
  std::uint32_t r = m.Reg(thread, first + v / 2);
  int shift = 16 * (v % 2);
  r = (r & ~(0xFFFFu << shift)) | (std::uint32_t{bits} << shift);
  m.SetReg(thread, first + v / 2, r);
}

// Writes matrix `x` into shared memory at `base` through a (row, col) -> element offset layout.
void StoreTile(Machine& m, std::uint32_t base, const SwizzledLayout& tile, const Matrix& x) {
  for (int r = 0; r < x.rows; ++r) {
    for (int c = 0; c < x.cols; ++c) {
      auto offset = tile.Evaluate(IntTuple::Tuple({r, c}));
      REQUIRE(offset.ok());
      std::uint16_t bits = x.at(r, c);
      std::memcpy(&m.shared()[base + static_cast<std::uint32_t>(*offset) * 2], &bits, 2);
    }
  }
}

std::uint32_t TileAddress(std::uint32_t base, const SwizzledLayout& tile, int r, int c) {
  return base + static_cast<std::uint32_t>(*tile.Evaluate(IntTuple::Tuple({r, c}))) * 2;
}

// A row-major rows x cols bf16 tile, swizzled by Sw<bits,3,3> on element offsets.
SwizzledLayout RowMajor(int rows, int cols, int bits) {
  return SwizzledLayout(layout::Swizzle(bits, 3, 3), 0,
                        Layout(IntTuple::Tuple({rows, cols}), IntTuple::Tuple({cols, 1})));
}

TEST_CASE("mma.sync with fragments placed by the atom's TV layouts is a matmul", "[sim]") {
  for (MmaType type : {MmaType::BF16, MmaType::F16}) {
    const layout::Atom& atom = AtomNamed(type == MmaType::BF16 ? "mma.m16n8k16.bf16" : "mma.m16n8k16.f16");
    Matrix a = RandomMatrix(16, 16, 1), b = RandomMatrix(16, 8, 2), c = RandomMatrix(16, 8, 3);
    if (type == MmaType::F16) {  // the same small values as f16 bit patterns
      for (Matrix* x : {&a, &b})
        for (auto& bits : x->bits) bits = runtime::FloatToHalf(runtime::Bf16ToFloat(bits));
    }
    auto value = [&](const Matrix& x, int r, int col) {
      return type == MmaType::BF16 ? x.value(r, col) : double(runtime::HalfToFloat(x.at(r, col)));
    };
    Machine m(32, 0);
    int ra = m.Allocate(4), rb = m.Allocate(2), rc = m.Allocate(4), rd = m.Allocate(4);
    for (int lane = 0; lane < 32; ++lane) {
      for (int v = 0; v < 8; ++v) {
        auto [r, col] = atom.Operand("A")->tv.At(lane, v);
        SetHalf(m, lane, ra, v, a.at(static_cast<int>(r), static_cast<int>(col)));
      }
      for (int v = 0; v < 4; ++v) {
        auto [r, col] = atom.Operand("B")->tv.At(lane, v);
        SetHalf(m, lane, rb, v, b.at(static_cast<int>(r), static_cast<int>(col)));
        auto [cr, cc] = atom.Operand("C")->tv.At(lane, v);
        m.SetRegF32(lane, rc + v, static_cast<float>(c.value(static_cast<int>(cr), static_cast<int>(cc))));
      }
    }
    m.MmaSync(type, 0, rd, ra, rb, rc);
    for (int lane = 0; lane < 32; ++lane) {
      for (int v = 0; v < 4; ++v) {
        auto [r, col] = atom.Operand("C")->tv.At(lane, v);
        double want = c.value(static_cast<int>(r), static_cast<int>(col));
        for (int k = 0; k < 16; ++k) want += value(a, static_cast<int>(r), k) * value(b, k, static_cast<int>(col));
        CHECK(m.RegF32(lane, rd + v) == static_cast<float>(want));
      }
    }
    CHECK(m.counts().at(type == MmaType::BF16 ? "mma.sync.m16n8k16.bf16" : "mma.sync.m16n8k16.f16") == 1);
  }
}

// ldmatrix.x4 of a 16x16 row-major A (matrix j = rows 8 (j % 2).., cols 8 (j / 2)..) and ldmatrix of
// B (16 x 8, K x N): .x2.trans from a row-major (k, n) tile, or .x2 from an n-major one.
struct LoadedProduct {
  std::vector<float> d;  // lane * 4 + v
};

LoadedProduct LdmatrixMma(int a_swizzle_written, int a_swizzle_read, bool b_n_major) {
  Matrix a = RandomMatrix(16, 16, 11), b = RandomMatrix(16, 8, 12);
  Machine m(32, 2048);
  m.PoisonShared(0xA5);
  SwizzledLayout a_tile_w = RowMajor(16, 16, a_swizzle_written), a_tile_r = RowMajor(16, 16, a_swizzle_read);
  StoreTile(m, 0, a_tile_w, a);
  // B at byte 1024: (k, n) row-major, or n-major ((k, n) -> n * 16 + k).
  SwizzledLayout b_tile = b_n_major ? SwizzledLayout(layout::Swizzle(0, 3, 3), 0,
                                                     Layout(IntTuple::Tuple({16, 8}), IntTuple::Tuple({1, 16})))
                                    : RowMajor(16, 8, 0);
  StoreTile(m, 1024, b_tile, b);
  int ra = m.Allocate(4), rb = m.Allocate(2), rc = m.Allocate(4), rd = m.Allocate(4);
  std::array<std::uint32_t, 32> rows{};
  for (int lane = 0; lane < 32; ++lane) {
    int j = lane / 8, r = lane % 8;
    rows[lane] = TileAddress(0, a_tile_r, r + 8 * (j % 2), 8 * (j / 2));
  }
  m.Ldmatrix(0, 4, false, ra, rows);
  for (int lane = 0; lane < 16; ++lane) {
    int j = lane / 8, r = lane % 8;
    // row-major (k, n): matrix j is k rows 8j..8j+7, transposed into the fragment; n-major: matrix j
    // is the 8 n rows of k columns 8j..8j+7.
    rows[lane] = b_n_major ? TileAddress(1024, b_tile, 8 * j, r) : TileAddress(1024, b_tile, 8 * j + r, 0);
  }
  m.Ldmatrix(0, 2, !b_n_major, rb, rows);
  m.MmaSync(MmaType::BF16, 0, rd, ra, rb, rc);  // C registers are zero
  LoadedProduct out;
  const layout::Atom& atom = AtomNamed("mma.m16n8k16.bf16");
  for (int lane = 0; lane < 32; ++lane) {
    for (int v = 0; v < 4; ++v) {
      auto [r, col] = atom.Operand("C")->tv.At(lane, v);
      out.d.push_back(m.RegF32(lane, rd + v));
      out.d.push_back(static_cast<float>(Dot(a, b, static_cast<int>(r), static_cast<int>(col))));
    }
  }
  return out;
}

bool AllPairsEqual(const std::vector<float>& pairs) {
  for (std::size_t i = 0; i < pairs.size(); i += 2)
    if (pairs[i] != pairs[i + 1]) return false;
  return true;
}

TEST_CASE("ldmatrix from swizzled shared memory feeds mma.sync: a 16x16x8 matmul", "[sim]") {
  for (int swizzle : {0, 1}) {
    INFO("A swizzled by Sw<" << swizzle << ",3,3>");
    CHECK(AllPairsEqual(LdmatrixMma(swizzle, swizzle, false).d));
    CHECK(AllPairsEqual(LdmatrixMma(swizzle, swizzle, true).d));
  }
}

TEST_CASE("ldmatrix with row addresses of the wrong swizzle gives a wrong product", "[sim]") {
  CHECK_FALSE(AllPairsEqual(LdmatrixMma(1, 0, false).d));
  CHECK_FALSE(AllPairsEqual(LdmatrixMma(0, 1, true).d));
}

TEST_CASE("ldmatrix fragments match the atom TV layouts", "[sim]") {
  // Shared memory holds each element's own (row, col) tag; each lane's registers must hold the tags
  // the ldmatrix atom's register TV layout names.
  for (int count : {1, 2, 4}) {
    for (bool trans : {false, true}) {
      const layout::Atom& atom = AtomNamed("ldmatrix.x" + std::to_string(count) + (trans ? ".trans" : ""));
      int rows = 8 * count;
      Machine m(32, 1024);
      for (int r = 0; r < rows; ++r)
        for (int c = 0; c < 8; ++c) {
          std::uint16_t tag = static_cast<std::uint16_t>(r * 8 + c);
          std::memcpy(&m.shared()[static_cast<std::size_t>(r * 16 + c * 2)], &tag, 2);
        }
      std::array<std::uint32_t, 32> addresses{};
      for (int lane = 0; lane < rows; ++lane) addresses[lane] = static_cast<std::uint32_t>(lane * 16);
      for (int lane = rows; lane < 32; ++lane) addresses[lane] = 0xFFFFFFF0u;  // ignored
      int dst = m.Allocate(count);
      m.Ldmatrix(0, count, trans, dst, addresses);
      const layout::TvLayout& tv = atom.Operand("dst")->tv;
      for (int lane = 0; lane < 32; ++lane)
        for (int v = 0; v < 2 * count; ++v) {
          auto [r, c] = tv.At(lane, v);
          std::uint16_t got = static_cast<std::uint16_t>(m.Reg(lane, dst + v / 2) >> (16 * (v % 2)));
          INFO(atom.name << " lane " << lane << " value " << v);
          CHECK(got == r * 8 + c);
        }
    }
  }
}

// wgmma m64nNk16 x 4 (K = 64) from canonical tiles: A 64 x 64 K-major, B N x 64 K-major or MN-major,
// both in `mode`; the descriptors advance through K as CuTe's do (start + the unswizzled offset of
// (0, 16 s)). `written` is the swizzle that actually laid B out in memory.
std::vector<float> WgmmaProduct(int n, SwizzleMode mode, layout::Major b_major, SwizzleMode written_b, bool reg_a) {
  Matrix a = RandomMatrix(64, 64, 21), bt = RandomMatrix(n, 64, 22);  // bt(n, k) = B(k, n)
  Machine m(128, 64 * 1024);
  m.PoisonShared(0x5A);
  auto a_tile = layout::WgmmaSmemTile(mode, layout::Major::kK, 2, 64, 64);
  auto b_tile = layout::WgmmaSmemTile(mode, b_major, 2, n, 64);
  auto b_written = layout::WgmmaSmemTile(written_b, b_major, 2, n, 64);
  REQUIRE(a_tile.ok());
  REQUIRE(b_tile.ok());
  REQUIRE(b_written.ok());
  const std::uint32_t a_base = 0, b_base = 16 * 1024;
  StoreTile(m, a_base, *a_tile, a);
  StoreTile(m, b_base, *b_written, bt);
  auto a_desc = layout::GmmaDescriptorFor(*a_tile, mode, layout::Major::kK, 2);
  auto b_desc = layout::GmmaDescriptorFor(*b_tile, mode, b_major, 2);
  REQUIRE(a_desc.ok());
  REQUIRE(b_desc.ok());
  int d = m.Allocate(n / 2), ra = m.Allocate(4);
  const layout::Atom& atom = AtomNamed("wgmma.m64n" + std::to_string(n) + "k16.bf16");
  for (int s = 0; s < 4; ++s) {
    auto linear = [](const SwizzledLayout& t, int r, int c) {
      return static_cast<std::uint32_t>(*t.layout().Evaluate(IntTuple::Tuple({r, c})) * 2);
    };
    SmemOperand sa{a_desc->Encode(a_base + linear(*a_tile, 0, 16 * s)), false};
    SmemOperand sb{b_desc->Encode(b_base + linear(*b_tile, 0, 16 * s)), b_major == layout::Major::kMN};
    if (reg_a) {
      for (int thread = 0; thread < 128; ++thread)
        for (int v = 0; v < 8; ++v) {
          auto [r, c] = atom.Operand("A")->tv.At(thread, v);
          SetHalf(m, thread, ra, v, a.at(static_cast<int>(r), static_cast<int>(c) + 16 * s));
        }
      m.WgmmaRegA(MmaType::BF16, n, 0, d, ra, sb, s > 0);
    } else {
      m.Wgmma(MmaType::BF16, n, 0, d, sa, sb, s > 0);
    }
  }
  std::vector<float> pairs;
  for (int thread = 0; thread < 128; ++thread)
    for (int v = 0; v < n / 2; ++v) {
      auto [r, c] = atom.Operand("C")->tv.At(thread, v);
      double want = 0;
      for (int k = 0; k < 64; ++k) want += a.value(static_cast<int>(r), k) * bt.value(static_cast<int>(c), k);
      pairs.push_back(m.RegF32(thread, d + v));
      pairs.push_back(static_cast<float>(want));
    }
  return pairs;
}

TEST_CASE("wgmma from canonical swizzled tiles through descriptors is a matmul", "[sim]") {
  for (SwizzleMode mode : {SwizzleMode::k128B, SwizzleMode::k64B, SwizzleMode::k32B, SwizzleMode::kNone}) {
    for (layout::Major major : {layout::Major::kK, layout::Major::kMN}) {
      for (int n : mode == SwizzleMode::k128B ? std::vector<int>{64, 128} : std::vector<int>{64}) {
        INFO(layout::ToString(mode) << (major == layout::Major::kK ? " K-major" : " MN-major") << " n " << n);
        CHECK(AllPairsEqual(WgmmaProduct(n, mode, major, mode, false)));
      }
    }
  }
  CHECK(AllPairsEqual(WgmmaProduct(64, SwizzleMode::k128B, layout::Major::kMN, SwizzleMode::k128B, true)));
  CHECK(AllPairsEqual(WgmmaProduct(256, SwizzleMode::k128B, layout::Major::kK, SwizzleMode::k128B, true)));
}

TEST_CASE("wgmma reading a tile laid out with another swizzle gives a wrong product", "[sim]") {
  CHECK_FALSE(AllPairsEqual(WgmmaProduct(64, SwizzleMode::k128B, layout::Major::kK, SwizzleMode::k64B, false)));
  CHECK_FALSE(AllPairsEqual(WgmmaProduct(64, SwizzleMode::k64B, layout::Major::kMN, SwizzleMode::k32B, false)));
}

TEST_CASE("a descriptor decodes to the fields it was encoded from", "[sim]") {
  layout::GmmaDescriptor g{1, 16, 1024};
  DecodedDescriptor d = DecodeDescriptor(g.Encode(0x2400));
  CHECK(d.start == 0x2400);
  CHECK(d.leading_byte_offset == 16);
  CHECK(d.stride_byte_offset == 1024);
  CHECK(d.swizzle == SwizzleMode::k128B);
  CHECK(DecodeDescriptor(layout::GmmaDescriptor{3, 0, 0}.Encode(0)).swizzle == SwizzleMode::k32B);
  CHECK(DecodeDescriptor(layout::GmmaDescriptor{2, 0, 0}.Encode(0)).swizzle == SwizzleMode::k64B);
}

TEST_CASE("a TMA box lands in the canonical K-major tile of its swizzle", "[sim]") {
  // A 256 x 100 row-major bf16 tensor (x = column innermost); a box of 64 rows at (c0, c1) =
  // (32, 192) (for 128B, columns 100.. of the box fall outside and read zero).
  for (SwizzleMode mode : {SwizzleMode::k128B, SwizzleMode::k64B, SwizzleMode::k32B, SwizzleMode::kNone}) {
    // the box row is the swizzle's width (16 bytes without one: the interleaved core matrices)
    int width = mode == SwizzleMode::k128B ? 64 : mode == SwizzleMode::k64B ? 32 : mode == SwizzleMode::k32B ? 16 : 8;
    Matrix g = RandomMatrix(256, 100, 31);
    Machine m(32, 32 * 1024);
    layout::TmaBox map;
    map.global_dims = {100, 256};
    map.global_strides_bytes = {208};  // 100 * 2 rounded up to 16: a padded pitch
    map.box_dims = {width, 64};
    map.swizzle = mode;
    // TMA strides are multiples of 16 bytes: the rows of 200 bytes live in a 208-byte pitch.
    runtime::HostTensor padded = runtime::HostTensor::Zeros(Dtype::BF16, {256, 104});
    for (int r = 0; r < 256; ++r)
      std::memcpy(&padded.bytes[static_cast<std::size_t>(r * 208)], &g.bits[static_cast<std::size_t>(r * 100)], 200);
    map.global_address = static_cast<std::int64_t>(m.AddGlobal(padded));
    m.TmaLoad2d(map, 2048, 32, 192);
    auto tile = layout::WgmmaSmemTile(mode, layout::Major::kK, 2, 64, width);
    REQUIRE(tile.ok());
    for (int r = 0; r < 64; ++r)
      for (int c = 0; c < width; ++c) {
        std::uint16_t got = 0;
        std::memcpy(&got, &m.shared()[TileAddress(2048, *tile, r, c)], 2);
        std::uint16_t want = 32 + c < 100 ? g.at(192 + r, 32 + c) : 0;
        INFO(layout::ToString(mode) << " (" << r << ", " << c << ")");
        REQUIRE(got == want);
      }
  }
}

TEST_CASE("cp.async, vector loads and stores, and shuffles", "[sim]") {
  Machine m(64, 256);
  runtime::HostTensor t = runtime::HostTensor::Zeros(Dtype::I32, {64});
  for (int i = 0; i < 64; ++i) std::memcpy(&t.bytes[static_cast<std::size_t>(4 * i)], &i, 4);
  std::uint64_t g = m.AddGlobal(t);
  for (int thread = 0; thread < 16; ++thread)
    m.CpAsync(thread, static_cast<std::uint32_t>(16 * thread), g + static_cast<std::uint64_t>(16 * thread), 16);
  m.CpAsyncCommit(0);
  m.CpAsyncWait(0, 0);
  int r = m.Allocate(4);
  m.LdShared(5, r, 32, 16);
  CHECK(m.Reg(5, r) == 8);
  CHECK(m.Reg(5, r + 3) == 11);
  m.LdShared(6, r, 40, 2);
  CHECK(m.Reg(6, r) == 10);
  for (int lane = 0; lane < 64; ++lane) m.SetReg(lane, r, static_cast<std::uint32_t>(lane));
  m.ShflBfly(1, r + 1, r, 5);
  CHECK(m.Reg(32 + 3, r + 1) == 32 + (3 ^ 5));
  CHECK(m.Reg(3, r + 1) == 0);  // warp 0 untouched
  m.SetReg(0, r, 0xDEADBEEF);
  m.StGlobal(0, g + 60, r, 4);
  m.LdGlobal(1, r + 2, g + 56, 8);
  CHECK(m.Reg(1, r + 3) == 0xDEADBEEF);
  CHECK(m.counts().at("cp.async") == 16);
}

TEST_CASE("misaligned and out-of-bounds accesses fault", "[sim]") {
  Machine m(32, 256);
  std::uint64_t g = m.AddGlobal(runtime::HostTensor::Zeros(Dtype::F32, {16}));
  int r = m.Allocate(4);
  CHECK_THROWS_AS(m.LdShared(0, r, 8, 16), Fault);
  CHECK_THROWS_AS(m.LdShared(0, r, 256, 4), Fault);
  CHECK_THROWS_AS(m.CpAsync(0, 0, g + 8, 16), Fault);
  CHECK_THROWS_AS(m.StGlobal(0, g + 64, r, 4), Fault);
  CHECK_THROWS_AS(m.LdGlobal(0, r, 16, 4), Fault);
  std::array<std::uint32_t, 32> rows{};
  rows[3] = 8;
  CHECK_THROWS_AS(m.Ldmatrix(0, 1, false, r, rows), Fault);
  CHECK_THROWS_AS(Machine(48, 0), Fault);
  CHECK_THROWS_WITH(m.LdShared(0, r, 2, 4), Catch::Contains("not aligned to 4 bytes"));
}

}  // namespace
}  // namespace weft::sim
