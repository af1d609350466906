// compiler/lsp/positions.h: byte offsets <-> LSP positions in UTF-16 units, and the laws of
// OffsetMap (what it maps survives unchanged; composition is applying one map, then the next).
#include "lsp/positions.h"

#include <random>
#include <string>

#include <catch2/catch.hpp>

namespace weft::lsp {
namespace {

TEST_CASE("positions count UTF-16 units", "[lsp]") {
  // `é` is 2 bytes and 1 unit, `😀` 4 bytes and 2 units.
  std::string text = "-- é😀 x\nlet y";
  LineIndex lines(text);
  std::uint32_t x = static_cast<std::uint32_t>(text.find('x'));
  CHECK(lines.ToPosition(x) == Position{0, 7});
  CHECK(lines.ToOffset({0, 7}) == x);
  CHECK(lines.ToPosition(static_cast<std::uint32_t>(text.find('y'))) == Position{1, 4});
  // Inside the surrogate pair: the start of the character.
  CHECK(lines.ToOffset({0, 5}) == text.find("😀"));
  // Past the end of a line: the line's end; past the last line: the end of the text.
  CHECK(lines.ToOffset({0, 99}) == text.find('\n'));
  CHECK(lines.ToOffset({7, 0}) == text.size());
}

TEST_CASE("lines end at LF, CRLF and a lone CR", "[lsp]") {
  std::string text = "a\r\nb\rc\nd";
  LineIndex lines(text);
  CHECK(lines.ToPosition(3) == Position{1, 0});
  CHECK(lines.ToPosition(5) == Position{2, 0});
  CHECK(lines.ToPosition(7) == Position{3, 0});
  CHECK(lines.ToPosition(1) == Position{0, 1});
  CHECK(lines.ToPosition(2) == Position{0, 1});  // between \r and \n: the line's end
  CHECK(lines.ToOffset({3, 0}) == 7);
}

TEST_CASE("position round trip at every character boundary", "[lsp]") {
  std::string text = "def f (x: f32[n]) = {- é😀ü -} x\r\n\n  -- 中文 😀😀\nx";
  LineIndex lines(text);
  for (std::uint32_t i = 0; i <= text.size(); ++i) {
    auto byte = static_cast<unsigned char>(i < text.size() ? text[i] : 0);
    if ((byte & 0xC0) == 0x80 || (i > 0 && text[i - 1] == '\r' && byte == '\n')) continue;
    INFO("offset " << i);
    CHECK(lines.ToOffset(lines.ToPosition(i)) == i);
  }
}

// The law of OffsetMap: an offset it maps holds the same byte in the new text.
void CheckSurvives(const OffsetMap& map, const std::string& before, const std::string& after) {
  for (std::uint32_t i = 0; i < before.size(); ++i) {
    if (std::optional<std::uint32_t> to = map.ToNew(i)) {
      REQUIRE(*to < after.size());
      REQUIRE(before[i] == after[*to]);
      REQUIRE(map.ToOld(*to) == i);
    }
  }
}

TEST_CASE("an edit keeps its prefix and suffix", "[lsp]") {
  std::string before = "let a = 1 in a", after = "let a = 22 in a";
  OffsetMap map = OffsetMap::Between(before, after);
  CHECK(map.ToNew(4) == 4u);
  CHECK(!map.ToNew(8));                    // the `1`
  CHECK(map.ToNew(13) == 14u);             // the last `a`
  CHECK(map.EndToNew(9) == std::nullopt);  // a range ending after the `1`
  CHECK(map.EndToNew(8) == 8u);
  CHECK(map.ToOldBefore(9) == 8u);  // inside the edit: where it began
  CheckSurvives(map, before, after);
}

TEST_CASE("maps compose over random edits, and what they map survives", "[lsp]") {
  std::mt19937 rng(42);
  for (int trial = 0; trial < 50; ++trial) {
    std::string original = "def a = 1\ndef b = a + 2\ndef c = b * b\n-- comment\ndef d = c\n";
    std::string text = original;
    OffsetMap map = OffsetMap::Identity(static_cast<std::uint32_t>(text.size()));
    for (int edit = 0; edit < 8; ++edit) {
      std::string next = text;
      std::size_t at = rng() % (next.size() + 1);
      std::size_t erase = std::min<std::size_t>(rng() % 4, next.size() - at);
      next.replace(at, erase, std::string(rng() % 3, "xyz"[rng() % 3]));
      OffsetMap step = OffsetMap::Between(text, next);
      CheckSurvives(step, text, next);
      map = map.Then(step);
      CheckSurvives(map, original, next);
      text = next;
    }
  }
}

TEST_CASE("a moved definition survives where it went, and the map stays one-to-one", "[lsp]") {
  std::string before = "def a = 1\ndef b = 2\n", after = "def b = 2\ndef a = 1\n";
  OffsetMap map;
  map.Add(0, 10, 10);                          // `def a = 1\n` moved down
  map.Add(10, 20, -10);                        // `def b = 2\n` moved up
  map.Add(OffsetMap::Between(before, after));  // its prefix `def ` would contradict both
  CheckSurvives(map, before, after);
  CHECK(map.ToNew(4) == 14u);
  CHECK(map.ToNew(14) == 4u);
  CHECK(map.ToOldBefore(15) == 5u);
}

}  // namespace
}  // namespace weft::lsp
