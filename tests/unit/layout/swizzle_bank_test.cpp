// Swizzles are bijections, and bank-conflict counts for the canonical cases: a row-major 64x64 bf16
// tile read with 16-byte vectors along rows and down columns, with no swizzle and with each of the
// 32-, 64- and 128-byte swizzles; ldmatrix on a 128-byte-swizzled tile is conflict-free.
#include <catch2/catch.hpp>

#include <set>

#include "layout/bank_conflicts.h"
#include "layout/swizzle.h"

namespace weft::layout {
namespace {

TEST_CASE("swizzles are bijections and involutions", "[layout][swizzle]") {
  int checked = 0;
  for (int b = 0; b <= 3; ++b) {
    for (int m = 0; m <= 4; ++m) {
      for (int s = -6; s <= 6; ++s) {
        auto sw = Swizzle::Make(b, m, s);
        if (std::abs(s) < b) {
          CHECK(!sw.ok());
          continue;
        }
        if (m + std::min(0, s) < 0) continue;  // ZZZ would sit below bit 0
        REQUIRE(sw.ok());
        ++checked;
        std::int64_t span = std::int64_t{1} << (b + m + std::abs(s) + 1);
        std::set<std::int64_t> image;
        for (std::int64_t o = 0; o < span; ++o) {
          std::int64_t x = (*sw)(o);
          CHECK(x >= 0);
          CHECK(x < span);  // bits above YYY are untouched
          CHECK((*sw)(x) == o);
          image.insert(x);
        }
        CHECK(static_cast<std::int64_t>(image.size()) == span);
      }
    }
  }
  CHECK(checked >= 80);
}

TEST_CASE("swizzle masks follow CuTe's definition", "[layout][swizzle]") {
  // Sw<3,4,3>: YYY = bits 7..9, ZZZ = bits 4..6 (the 128-byte swizzle on byte addresses)
  Swizzle s(3, 4, 3);
  CHECK(s.yyy_mask() == 0b1110000000);
  CHECK(s.zzz_mask() == 0b0001110000);
  CHECK(s(0b0010000000) == 0b0010010000);
  CHECK(s(0b1110000000 | 0b0001110000) == 0b1110000000);
  // negative shift: YYY below ZZZ
  Swizzle n(2, 0, -3);
  CHECK(n.yyy_mask() == 0b000011);
  CHECK(n.zzz_mask() == 0b011000);
  CHECK(n(0b000001) == 0b001001);
  CHECK(ToString(s) == "Sw<3,4,3>");
}

TEST_CASE("swizzled layouts of the canonical atoms are bijections", "[layout][swizzle]") {
  for (SwizzleMode mode : {SwizzleMode::kNone, SwizzleMode::k32B, SwizzleMode::k64B, SwizzleMode::k128B}) {
    for (int bytes : {1, 2, 4}) {
      auto sw = SwizzleFor(mode, bytes);
      REQUIRE(sw.ok());
      // 8 rows of 128 bytes
      std::int64_t w = 128 / bytes;
      SwizzledLayout l = Compose(*sw, Layout(IntTuple::Tuple({8, w}), IntTuple::Tuple({w, 1})));
      std::set<std::int64_t> image;
      for (std::int64_t i = 0; i < l.size(); ++i) image.insert(l(i));
      CHECK(static_cast<std::int64_t>(image.size()) == l.size());
      CHECK(*image.rbegin() == l.size() - 1);
    }
  }
  CHECK(ToString(*SwizzleFor(SwizzleMode::k128B, 2)) == "Sw<3,3,3>");
  CHECK(ToString(*SwizzleFor(SwizzleMode::k64B, 2)) == "Sw<2,3,3>");
  CHECK(ToString(*SwizzleFor(SwizzleMode::k32B, 1)) == "Sw<1,4,3>");
}

// A row-major 64x64 bf16 tile, swizzled in element units.
SwizzledLayout Tile64(SwizzleMode mode) {
  return Compose(*SwizzleFor(mode, 2), Layout(IntTuple::Tuple({64, 64}), IntTuple::Tuple({64, 1})));
}

std::int64_t ByteAddress(const SwizzledLayout& tile, std::int64_t row, std::int64_t col) {
  return *tile.Evaluate(IntTuple::Tuple({row, col})) * 2;
}

int Wavefronts(const std::vector<LaneAccess>& lanes) {
  auto r = CountBankConflicts(lanes);
  REQUIRE(r.ok());
  return r->wavefronts;
}

TEST_CASE("bank conflicts of 16-byte vectors on a 64x64 bf16 tile", "[layout][bank]") {
  struct Expect {
    SwizzleMode mode;
    int along_rows, down_columns;
  };
  // Along rows: 8 lanes cover one 128-byte row, every phase is conflict-free: 4 wavefronts.
  // Down columns: a phase is 8 rows of the same 16-byte column; 128-byte rows put them all in the
  // same 4 banks (8 ways) unless the swizzle moves them: 32B separates 2, 64B 4, 128B all 8.
  Expect cases[] = {
      {SwizzleMode::kNone, 4, 32}, {SwizzleMode::k32B, 4, 16}, {SwizzleMode::k64B, 4, 8}, {SwizzleMode::k128B, 4, 4}};
  for (const Expect& e : cases) {
    INFO("swizzle " << ToString(e.mode));
    SwizzledLayout tile = Tile64(e.mode);
    for (int row0 = 0; row0 < 64; row0 += 4) {
      std::vector<LaneAccess> rows(32);
      for (int lane = 0; lane < 32; ++lane) rows[lane] = {ByteAddress(tile, row0 + lane / 8, 8 * (lane % 8)), 16};
      CHECK(Wavefronts(rows) == e.along_rows);
    }
    for (int col = 0; col < 64; col += 8) {
      for (int row0 : {0, 32}) {
        std::vector<LaneAccess> cols(32);
        for (int lane = 0; lane < 32; ++lane) cols[lane] = {ByteAddress(tile, row0 + lane, col), 16};
        CHECK(Wavefronts(cols) == e.down_columns);
      }
    }
  }
}

TEST_CASE("ldmatrix on 128-byte-swizzled tiles is conflict-free", "[layout][bank]") {
  // ldmatrix.x4 of a 16x16 A block at (m0, k0): lanes 0-15 give rows m0.. at column k0, lanes 16-31
  // the same rows at k0 + 8; one phase per 8x8 matrix.
  for (SwizzleMode mode : {SwizzleMode::k128B, SwizzleMode::kNone}) {
    SwizzledLayout tile = Tile64(mode);
    for (int m0 = 0; m0 < 64; m0 += 16) {
      for (int k0 = 0; k0 < 64; k0 += 16) {
        std::vector<LaneAccess> lanes(32);
        for (int lane = 0; lane < 32; ++lane)
          lanes[lane] = {ByteAddress(tile, m0 + lane % 16, k0 + 8 * (lane / 16)), 16};
        auto r = CountBankConflicts(lanes);
        REQUIRE(r.ok());
        CHECK(r->ideal == 4);
        CHECK(r->wavefronts == (mode == SwizzleMode::k128B ? 4 : 32));
      }
    }
  }
  // K-major B (.trans not needed) and the x2/x1 forms: fewer phases, still one wavefront each
  SwizzledLayout tile = Tile64(SwizzleMode::k128B);
  for (int count : {1, 2}) {
    std::vector<LaneAccess> lanes(32);
    for (int lane = 0; lane < 32; ++lane)
      lanes[lane] = {ByteAddress(tile, lane % 8, 8 * (lane / 8)), 16, lane < 8 * count};
    auto r = CountBankConflicts(lanes);
    REQUIRE(r.ok());
    CHECK(r->wavefronts == count);
    CHECK(r->ways() == 1);
  }
}

TEST_CASE("bank conflict model: broadcast and widths", "[layout][bank]") {
  // 32 lanes reading the same word: a broadcast, one wavefront
  CHECK(Wavefronts(std::vector<LaneAccess>(32, LaneAccess{128, 4})) == 1);
  // 4-byte accesses with a stride of 32 words: 32 ways
  std::vector<LaneAccess> strided(32);
  for (int l = 0; l < 32; ++l) strided[l] = {128 * l, 4};
  CHECK(Wavefronts(strided) == 32);
  // stride 2 words: 2 ways
  for (int l = 0; l < 32; ++l) strided[l] = {8 * l, 4};
  CHECK(Wavefronts(strided) == 2);
  // 8-byte accesses, contiguous: two half-warp phases
  for (int l = 0; l < 32; ++l) strided[l] = {8 * l, 8};
  CHECK(Wavefronts(strided) == 2);
  // 2-byte accesses, contiguous: 64 bytes in one phase
  for (int l = 0; l < 32; ++l) strided[l] = {2 * l, 2};
  CHECK(Wavefronts(strided) == 1);
  // errors, not crashes
  CHECK(!CountBankConflicts({LaneAccess{2, 4}}).ok());
  CHECK(!CountBankConflicts({LaneAccess{0, 4}, LaneAccess{16, 16}}).ok());
  CHECK(!CountBankConflicts(std::vector<LaneAccess>(33)).ok());
  CHECK(!CountBankConflicts({LaneAccess{0, 12}}).ok());
}

}  // namespace
}  // namespace weft::layout
