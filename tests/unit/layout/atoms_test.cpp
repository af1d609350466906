// Every atom's TV layouts are bijections onto their tiles and agree with the PTX ISA's fragment
// formulas at every (thread, value); spot entries are written in from the PTX ISA figures
// ("Matrix Fragments for mma.m16n8k16 with floating point type", "... mma.m16n8k32", "WGMMA .m64nNk16
// register fragment layout for accumulator matrix D", "ldmatrix"). Plus wgmma's canonical
// shared-memory tiles and descriptors, and TMA box constraints.
#include <catch2/catch.hpp>

#include <deque>

#include "layout/atoms.h"

namespace weft::layout {
namespace {

using RC = TvLayout::RowCol;

const TvLayout& TvOf(const std::string& atom, const std::string& operand) {
  static std::deque<Atom> keep;  // references into a deque survive push_back
  auto a = FindAtom(atom);
  REQUIRE(a.ok());
  keep.push_back(*a);
  const AtomOperand* op = keep.back().Operand(operand);
  REQUIRE(op != nullptr);
  return op->tv;
}

RC At(const std::string& atom, const std::string& operand, int lane, int value) {
  return TvOf(atom, operand).At(lane, value);
}

TEST_CASE("every atom operand is a bijection onto its tile", "[layout][atoms]") {
  int count = 0;
  for (const Atom& a : Atoms()) {
    INFO(a.name);
    for (const AtomOperand& op : a.operands) {
      INFO(op.name << " " << ToString(op.tv.layout));
      CHECK(IsBijectionOntoTile(op.tv));
      ++count;
    }
    if (a.m) {
      CHECK(a.Operand("C")->tv.threads() == a.threads);
      CHECK(a.Operand("C")->tv.rows == a.m);
      CHECK(a.Operand("C")->tv.cols == a.n);
    }
  }
  CHECK(Atoms().size() >= 3 + 64 + 12 + 4 + 12);
  CHECK(count >= 2 * static_cast<int>(Atoms().size()));
}

TEST_CASE("mma.sync fragments match the PTX formulas at every lane and register", "[layout][atoms]") {
  for (const char* name : {"mma.m16n8k16.f16", "mma.m16n8k16.bf16"}) {
    for (int lane = 0; lane < 32; ++lane) {
      int g = lane / 4, t = lane % 4;
      for (int i = 0; i < 8; ++i) {
        RC a{g + 8 * ((i >> 1) & 1), 2 * t + (i & 1) + 8 * (i >= 4)};
        CHECK(At(name, "A", lane, i) == a);
      }
      for (int i = 0; i < 4; ++i) {
        CHECK(At(name, "B", lane, i) == RC{2 * t + (i & 1) + 8 * (i >= 2), g});
        CHECK(At(name, "C", lane, i) == RC{g + 8 * (i >= 2), 2 * t + (i & 1)});
      }
    }
  }
  for (int lane = 0; lane < 32; ++lane) {
    int g = lane / 4, t = lane % 4;
    for (int i = 0; i < 16; ++i)
      CHECK(At("mma.m16n8k32.s8", "A", lane, i) == RC{g + 8 * ((i >> 2) & 1), 4 * t + (i & 3) + 16 * (i >= 8)});
    for (int i = 0; i < 8; ++i) CHECK(At("mma.m16n8k32.s8", "B", lane, i) == RC{4 * t + (i & 3) + 16 * (i >= 4), g});
  }
}

TEST_CASE("mma.sync spot entries from the PTX ISA figures", "[layout][atoms]") {
  const char* f = "mma.m16n8k16.bf16";
  // A: T0 holds a0,a1 = (0,0),(0,1); a2 = (8,0); a4 = (0,8); a7 = (8,9)
  CHECK(At(f, "A", 0, 0) == RC{0, 0});
  CHECK(At(f, "A", 0, 1) == RC{0, 1});
  CHECK(At(f, "A", 0, 2) == RC{8, 0});
  CHECK(At(f, "A", 0, 4) == RC{0, 8});
  CHECK(At(f, "A", 0, 7) == RC{8, 9});
  CHECK(At(f, "A", 5, 0) == RC{1, 2});
  CHECK(At(f, "A", 31, 7) == RC{15, 15});
  // B (K x N): T0 b0,b1 = (0,0),(1,0); b2 = (8,0); T5 b0 = (2,1); T31 b3 = (15,7)
  CHECK(At(f, "B", 0, 0) == RC{0, 0});
  CHECK(At(f, "B", 0, 1) == RC{1, 0});
  CHECK(At(f, "B", 0, 2) == RC{8, 0});
  CHECK(At(f, "B", 5, 0) == RC{2, 1});
  CHECK(At(f, "B", 31, 3) == RC{15, 7});
  // C: T0 c0..c3 = (0,0),(0,1),(8,0),(8,1); T6 c0 = (1,4); T31 c3 = (15,7)
  CHECK(At(f, "C", 0, 0) == RC{0, 0});
  CHECK(At(f, "C", 0, 1) == RC{0, 1});
  CHECK(At(f, "C", 0, 2) == RC{8, 0});
  CHECK(At(f, "C", 0, 3) == RC{8, 1});
  CHECK(At(f, "C", 6, 0) == RC{1, 4});
  CHECK(At(f, "C", 31, 3) == RC{15, 7});
  const char* s = "mma.m16n8k32.s8";
  // A: T0 a0..a3 = (0,0..3); a4 = (8,0); a8 = (0,16); T31 a15 = (15,31)
  CHECK(At(s, "A", 0, 3) == RC{0, 3});
  CHECK(At(s, "A", 0, 4) == RC{8, 0});
  CHECK(At(s, "A", 0, 8) == RC{0, 16});
  CHECK(At(s, "A", 1, 0) == RC{0, 4});
  CHECK(At(s, "A", 31, 15) == RC{15, 31});
  // B: T0 b0..b3 = (0..3,0); b4 = (16,0); T1 b0 = (4,0); T31 b7 = (31,7)
  CHECK(At(s, "B", 0, 3) == RC{3, 0});
  CHECK(At(s, "B", 0, 4) == RC{16, 0});
  CHECK(At(s, "B", 1, 0) == RC{4, 0});
  CHECK(At(s, "B", 31, 7) == RC{31, 7});
  CHECK(At(s, "C", 4, 0) == RC{1, 0});
  CHECK(At(s, "C", 31, 3) == RC{15, 7});
}

TEST_CASE("wgmma accumulator and register-A fragments for every N", "[layout][atoms]") {
  int atoms = 0;
  for (const char* type : {"f16", "bf16"}) {
    for (int n = 8; n <= 256; n += 8) {
      std::string name = "wgmma.m64n" + std::to_string(n) + "k16." + type;
      auto a = FindAtom(name);
      REQUIRE(a.ok());
      ++atoms;
      CHECK(a->threads == 128);
      CHECK(a->Operand("C")->tv.values() == n / 2);
      for (int thread = 0; thread < 128; thread += 7) {
        int w = thread / 32, lane = thread % 32, g = lane / 4, t = lane % 4;
        for (int i = 0; i < n / 2; ++i)
          CHECK(At(name, "C", thread, i) == RC{16 * w + g + 8 * ((i >> 1) & 1), 8 * (i >> 2) + 2 * t + (i & 1)});
        for (int i = 0; i < 8; ++i)
          CHECK(At(name, "A", thread, i) == RC{16 * w + g + 8 * ((i >> 1) & 1), 2 * t + (i & 1) + 8 * (i >= 4)});
      }
      // spot entries from the D fragment figure: T0 d0..d4, T32 d0, T127's last register
      CHECK(At(name, "C", 0, 0) == RC{0, 0});
      CHECK(At(name, "C", 0, 1) == RC{0, 1});
      CHECK(At(name, "C", 0, 2) == RC{8, 0});
      CHECK(At(name, "C", 1, 0) == RC{0, 2});
      CHECK(At(name, "C", 4, 0) == RC{1, 0});
      CHECK(At(name, "C", 32, 0) == RC{16, 0});
      CHECK(At(name, "C", 127, n / 2 - 1) == RC{63, n - 1});
      if (n >= 16) CHECK(At(name, "C", 0, 4) == RC{0, 8});
      CHECK(At(name, "A", 0, 4) == RC{0, 8});
      CHECK(At(name, "A", 127, 7) == RC{63, 15});
    }
  }
  CHECK(atoms == 64);
}

TEST_CASE("ldmatrix and stmatrix fragments", "[layout][atoms]") {
  for (const char* op : {"ldmatrix", "stmatrix"}) {
    for (int count : {1, 2, 4}) {
      for (bool trans : {false, true}) {
        std::string name = std::string(op) + ".x" + std::to_string(count) + (trans ? ".trans" : "");
        const TvLayout& regs = TvOf(name, op == std::string("ldmatrix") ? "dst" : "src");
        const TvLayout& rows = TvOf(name, op == std::string("ldmatrix") ? "src" : "dst");
        CHECK(rows.threads() == 8 * count);
        for (int lane = 0; lane < 8 * count; ++lane)
          for (int v = 0; v < 8; ++v) CHECK(rows.At(lane, v) == RC{lane, v});
        for (int lane = 0; lane < 32; ++lane) {
          for (int j = 0; j < count; ++j) {
            for (int e = 0; e < 2; ++e) {
              RC expect = trans ? RC{8 * j + 2 * (lane % 4) + e, lane / 4} : RC{8 * j + lane / 4, 2 * (lane % 4) + e};
              CHECK(regs.At(lane, e + 2 * j) == expect);
            }
          }
        }
      }
    }
  }
  // spot entries (PTX ISA, ldmatrix figure: thread t holds row t/4, elements 2(t%4) and 2(t%4)+1)
  CHECK(At("ldmatrix.x4", "dst", 0, 0) == RC{0, 0});
  CHECK(At("ldmatrix.x4", "dst", 0, 1) == RC{0, 1});
  CHECK(At("ldmatrix.x4", "dst", 5, 1) == RC{1, 3});
  CHECK(At("ldmatrix.x4", "dst", 0, 2) == RC{8, 0});
  CHECK(At("ldmatrix.x4", "dst", 31, 7) == RC{31, 7});
  CHECK(At("ldmatrix.x1.trans", "dst", 5, 1) == RC{3, 1});
  CHECK(At("ldmatrix.x1.trans", "dst", 31, 0) == RC{6, 7});
  CHECK(At("ldmatrix.x2.trans", "dst", 0, 2) == RC{8, 0});
  CHECK(At("stmatrix.x4", "src", 9, 4) == RC{18, 2});
}

TEST_CASE("per-thread views and addresses", "[layout][atoms]") {
  const TvLayout& c = TvOf("mma.m16n8k16.bf16", "C");
  auto view = ThreadView(c, 6);
  REQUIRE(view.size() == 4);
  CHECK(view[0] == RC{1, 4});
  CHECK(view[3] == RC{9, 5});
  // addresses of ldmatrix.x4's rows in a row-major 16x8 bf16 tile: lane l reads row l (16 bytes)
  const TvLayout& rows = TvOf("ldmatrix.x4", "src");
  SwizzledLayout tile = Compose(Swizzle(0, 0, 0), Layout(IntTuple::Tuple({32, 8}), IntTuple::Tuple({8, 1})));
  auto addr = ThreadAddresses(rows, tile, 2, 3);
  REQUIRE(addr.size() == 8);
  CHECK(addr[0] == 48);
  CHECK(addr[7] == 62);
  auto owners = Owners(c);
  CHECK(owners[1 + 16 * 4] == std::pair<std::int64_t, std::int64_t>{6, 0});
  CHECK(FormatTvGrid(c).find("T0V0") != std::string::npos);
}

TEST_CASE("wgmma canonical shared-memory tiles and their descriptors", "[layout][atoms]") {
  struct Case {
    SwizzleMode mode;
    int layout_type;
    std::int64_t k_lbo, k_sbo;  // K-major, 64 rows x 64 bf16 (or 16 for no swizzle... see below)
  };
  // K-major 64 x 64 bf16: swizzled atoms are 8 rows x (swizzle width); SBO = 8 rows of the atom.
  Case cases[] = {{SwizzleMode::k128B, 1, 16, 1024},
                  {SwizzleMode::k64B, 2, 16, 512},
                  {SwizzleMode::k32B, 3, 16, 256},
                  {SwizzleMode::kNone, 0, 64 * 16, 128}};
  for (const Case& c : cases) {
    INFO(ToString(c.mode));
    auto tile = WgmmaSmemTile(c.mode, Major::kK, 2, 64, 64);
    REQUIRE(tile.ok());
    CHECK(tile->size() == 64 * 64);
    std::vector<bool> hit(64 * 64, false);
    for (std::int64_t i = 0; i < tile->size(); ++i) {
      std::int64_t o = (*tile)(i);
      REQUIRE(o >= 0);
      REQUIRE(o < 64 * 64);
      CHECK(!hit[o]);
      hit[o] = true;
    }
    auto d = GmmaDescriptorFor(*tile, c.mode, Major::kK, 2);
    REQUIRE(d.ok());
    CHECK(d->layout_type == c.layout_type);
    CHECK(d->stride_byte_offset == c.k_sbo);
    CHECK(d->leading_byte_offset == c.k_lbo);
    std::uint64_t enc = d->Encode(0x400);
    CHECK((enc & 0x3FFF) == 0x40);
    CHECK(((enc >> 32) & 0x3FFF) == static_cast<std::uint64_t>(c.k_sbo >> 4));
    CHECK((enc >> 62) == static_cast<std::uint64_t>(c.layout_type));
    // MN-major tiles are bijections too and give descriptors
    auto mn = WgmmaSmemTile(c.mode, Major::kMN, 2, 64, 16);
    REQUIRE(mn.ok());
    CHECK(GmmaDescriptorFor(*mn, c.mode, Major::kMN, 2).ok());
  }
  CHECK(ToString(*WgmmaSmemTile(SwizzleMode::k128B, Major::kK, 2, 8, 64)) ==
        "Sw<3,3,3> o 0 o ((8,1),(64,1)):((64,512),(1,512))");
  // not a whole number of atoms
  CHECK(!WgmmaSmemTile(SwizzleMode::k128B, Major::kK, 2, 64, 32).ok());
  // a row-major tile that is not canonical for the 128B mode
  auto wrong = WgmmaSmemTile(SwizzleMode::k64B, Major::kK, 2, 64, 64);
  CHECK(!GmmaDescriptorFor(SwizzledLayout(*SwizzleFor(SwizzleMode::k128B, 2), 0, wrong->layout()), SwizzleMode::k128B,
                           Major::kK, 2)
             .ok());
}

TEST_CASE("TMA box constraints", "[layout][atoms]") {
  TmaBox box;
  box.global_dims = {4096, 4096};
  box.global_strides_bytes = {8192};
  box.box_dims = {64, 128};
  box.element_bytes = 2;
  box.swizzle = SwizzleMode::k128B;
  box.smem_address = 2048;
  auto ok = CheckTmaBox(box);
  REQUIRE(ok.ok());
  CHECK(*ok == 64 * 128 * 2);
  TmaBox wide = box;
  wide.box_dims = {128, 64};  // 256-byte rows do not fit the 128-byte swizzle
  CHECK(CheckTmaBox(wide).error().find("wider than") != std::string::npos);
  TmaBox big = box;
  big.box_dims = {64, 512};
  CHECK(!CheckTmaBox(big).ok());
  TmaBox odd = box;
  odd.swizzle = SwizzleMode::kNone;
  odd.box_dims = {4, 8};  // 8 bytes
  CHECK(CheckTmaBox(odd).error().find("multiple of 16") != std::string::npos);
  TmaBox misaligned = box;
  misaligned.smem_address = 128;
  CHECK(!CheckTmaBox(misaligned).ok());
  TmaBox stride = box;
  stride.global_strides_bytes = {8200};
  CHECK(!CheckTmaBox(stride).ok());
}

TEST_CASE("atoms are found by name and unknown names are errors", "[layout][atoms]") {
  CHECK(FindAtom("cp.async.cg.16").ok());
  CHECK(FindAtom("ld.shared.v4.b32")->bytes_per_thread == 16);
  auto bad = FindAtom("ldmatrix.x3");
  REQUIRE(!bad.ok());
  CHECK(bad.error().find("ldmatrix.x1") != std::string::npos);
}

}  // namespace
}  // namespace weft::layout
