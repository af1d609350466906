// Positions as the Language Server Protocol counts them, and offsets between two versions of a text.
//
// The compiler's spans are byte ranges of UTF-8 text (base/source.h). LSP positions are a 0-based
// line and a character offset counted in UTF-16 code units (the protocol's default encoding, the
// one every client supports): a character outside the Basic Multilingual Plane, such as an emoji
// in a comment, is two units, and one of `é` is one unit but two bytes. Lines end at "\n", "\r\n" or
// a lone "\r", as the protocol says.
//
// A TextMap relates an old version of a document to the new one by their common prefix and suffix
// (an edit touches one region between them): offsets outside the changed region map exactly, and
// those inside it have no counterpart. The server uses it to read an analysis of an earlier text
// (document.h) at positions of the current one.
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

class TextMap {
 public:
  TextMap() = default;  // the identity on one text
  TextMap(std::string_view old_text, std::string_view new_text);

  bool identity() const { return identity_; }
  // An offset of the old text in the new one: a position (the byte at it is unchanged), or the end
  // of a range (the byte before it is unchanged). Nothing when it is inside the changed region.
  std::optional<std::uint32_t> ToNew(std::uint32_t old_offset) const;
  std::optional<std::uint32_t> EndToNew(std::uint32_t old_end) const;
  std::optional<std::uint32_t> ToOld(std::uint32_t new_offset) const;
  std::optional<std::uint32_t> EndToOld(std::uint32_t new_end) const;
  // The changed region, [prefix, old_size - suffix) of the old text, [prefix, new_size - suffix)
  // of the new one.
  std::uint32_t prefix() const { return prefix_; }
  std::uint32_t old_changed_end() const { return old_size_ - suffix_; }
  std::uint32_t new_changed_end() const { return new_size_ - suffix_; }

 private:
  bool identity_ = true;
  std::uint32_t prefix_ = 0, suffix_ = 0, old_size_ = 0, new_size_ = 0;
};

}  // namespace weft::lsp
