// Positions as the Language Server Protocol counts them, and offsets between two versions of a text.
//
// The compiler's spans are byte ranges of UTF-8 text (base/source.h). LSP positions are a 0-based
// line and a character offset counted in UTF-16 code units (the protocol's default encoding, the
// one every client supports): a character outside the Basic Multilingual Plane, such as an emoji
// in a comment, is two units, and one of `é` is one unit but two bytes. Lines end at "\n", "\r\n" or
// a lone "\r", as the protocol says.
//
// An OffsetMap relates an old version of a document to the current one: the parts of the old text
// that survive, each moved by some distance. One edit keeps the common prefix and suffix of the two
// texts; maps compose, so an analysis made several edits ago is still read wherever its text
// survives (document.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace weft::lsp {

struct Position {
  std::uint32_t line = 0;       // 0-based
  std::uint32_t character = 0;  // 0-based, in UTF-16 code units
  bool operator==(const Position&) const = default;
};

struct Range {
  Position start;
  Position end;
};

// Converts between byte offsets and LSP positions for one text.
class LineIndex {
 public:
  explicit LineIndex(std::string_view text);

  Position ToPosition(std::uint32_t offset) const;
  // The byte offset of a position. A character past the end of its line is the line's end (the
  // protocol's rule), a line past the last is the end of the text; a position inside a surrogate
  // pair or a multi-byte character is the start of that character.
  std::uint32_t ToOffset(Position position) const;
  Range ToRange(std::uint32_t begin, std::uint32_t end) const { return {ToPosition(begin), ToPosition(end)}; }

 private:
  std::string_view text_;
  std::vector<std::uint32_t> line_starts_;
  std::vector<std::uint32_t> line_ends_;  // before the line break
};

class OffsetMap {
 public:
  OffsetMap() = default;
  // The identity on a text of `size` bytes.
  static OffsetMap Identity(std::uint32_t size);
  // One edit: what `old_text` and `new_text` share as prefix and suffix.
  static OffsetMap Between(std::string_view old_text, std::string_view new_text);
  // This map, then `next` (from this map's new text to a newer one).
  OffsetMap Then(const OffsetMap& next) const;
  // Adds that old [begin, end) moved by `shift` (a piece of text known to survive, such as a
  // definition whose text is unchanged), where the map says nothing yet of either the old offsets
  // or the new ones (so that it stays one-to-one).
  void Add(std::uint32_t begin, std::uint32_t end, std::int64_t shift);
  void Add(const OffsetMap& other);

  // An offset of the old text in the new one: a position (the byte at it survives), or the end of
  // a range (the byte before it survives). Nothing when that byte did not survive.
  std::optional<std::uint32_t> ToNew(std::uint32_t old_offset) const;
  std::optional<std::uint32_t> EndToNew(std::uint32_t old_end) const;
  std::optional<std::uint32_t> ToOld(std::uint32_t new_offset) const;
  // The old offset of `new_offset`, or else of the nearest surviving position before it: where an
  // edit in progress began.
  std::uint32_t ToOldBefore(std::uint32_t new_offset) const;

 private:
  struct Piece {
    std::uint32_t begin, end;  // old offsets [begin, end)
    std::int64_t shift;        // new = old + shift
  };
  void Merge();  // joins neighbouring pieces that move alike

  std::vector<Piece> pieces_;  // in order of old offsets, disjoint in old and in new offsets
};

}  // namespace weft::lsp
