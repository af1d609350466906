#include "lsp/positions.h"

#include <algorithm>

namespace weft::lsp {
namespace {

// The length of a UTF-8 sequence from its first byte; invalid bytes count as one byte each, as
// base/source.h's CountCodePoints does.
std::uint32_t SequenceLength(unsigned char first) {
  if (first < 0x80) return 1;
  if ((first & 0xE0) == 0xC0) return 2;
  if ((first & 0xF0) == 0xE0) return 3;
  if ((first & 0xF8) == 0xF0) return 4;
  return 1;
}

}  // namespace

LineIndex::LineIndex(std::string_view text) : text_(text) {
  line_starts_.push_back(0);
  for (std::uint32_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\n' && text[i] != '\r') continue;
    line_ends_.push_back(i);
    if (text[i] == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
    line_starts_.push_back(i + 1);
  }
  line_ends_.push_back(static_cast<std::uint32_t>(text.size()));
}

Position LineIndex::ToPosition(std::uint32_t offset) const {
  offset = std::min<std::uint32_t>(offset, static_cast<std::uint32_t>(text_.size()));
  auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
  auto line = static_cast<std::uint32_t>(it - line_starts_.begin()) - 1;
  std::uint32_t end = std::min(offset, line_ends_[line]);  // an offset inside "\r\n" is the line's end
  std::uint32_t units = 0;
  for (std::uint32_t i = line_starts_[line]; i < end;) {
    std::uint32_t length = SequenceLength(static_cast<unsigned char>(text_[i]));
    units += length == 4 ? 2 : 1;
    i += length;
  }
  return {line, units};
}

std::uint32_t LineIndex::ToOffset(Position position) const {
  if (position.line >= line_starts_.size()) return static_cast<std::uint32_t>(text_.size());
  std::uint32_t i = line_starts_[position.line];
  std::uint32_t end = line_ends_[position.line];
  std::uint32_t units = 0;
  while (i < end) {
    std::uint32_t length = SequenceLength(static_cast<unsigned char>(text_[i]));
    std::uint32_t width = length == 4 ? 2 : 1;
    if (units + width > position.character) break;
    units += width;
    i = std::min(i + length, end);
  }
  return i;
}

OffsetMap OffsetMap::Identity(std::uint32_t size) {
  OffsetMap map;
  if (size > 0) map.pieces_.push_back({0, size, 0});
  return map;
}

OffsetMap OffsetMap::Between(std::string_view old_text, std::string_view new_text) {
  auto old_size = static_cast<std::uint32_t>(old_text.size());
  auto new_size = static_cast<std::uint32_t>(new_text.size());
  std::uint32_t limit = std::min(old_size, new_size);
  std::uint32_t prefix = 0, suffix = 0;
  while (prefix < limit && old_text[prefix] == new_text[prefix]) ++prefix;
  while (suffix < limit - prefix && old_text[old_size - 1 - suffix] == new_text[new_size - 1 - suffix]) ++suffix;
  OffsetMap map;
  if (prefix > 0) map.pieces_.push_back({0, prefix, 0});
  if (suffix > 0) {
    map.pieces_.push_back({old_size - suffix, old_size, static_cast<std::int64_t>(new_size) - old_size});
  }
  return map;
}

OffsetMap OffsetMap::Then(const OffsetMap& next) const {
  OffsetMap out;
  for (const Piece& a : pieces_) {
    // a's image in the middle text, cut by the pieces of `next`.
    std::int64_t lo = a.begin + a.shift, hi = a.end + a.shift;
    for (const Piece& b : next.pieces_) {
      std::int64_t from = std::max<std::int64_t>(lo, b.begin), to = std::min<std::int64_t>(hi, b.end);
      if (from >= to) continue;
      out.pieces_.push_back(
          {static_cast<std::uint32_t>(from - a.shift), static_cast<std::uint32_t>(to - a.shift), a.shift + b.shift});
    }
  }
  out.Merge();
  return out;
}

void OffsetMap::Add(std::uint32_t begin, std::uint32_t end, std::int64_t shift) {
  // The parts of [begin, end) whose old offsets and whose new ones are both free.
  std::vector<std::pair<std::int64_t, std::int64_t>> parts{{begin, end}};
  auto cut = [&](std::int64_t lo, std::int64_t hi) {
    std::vector<std::pair<std::int64_t, std::int64_t>> out;
    for (auto [from, to] : parts) {
      if (hi <= from || to <= lo) {
        out.emplace_back(from, to);
        continue;
      }
      if (from < lo) out.emplace_back(from, lo);
      if (hi < to) out.emplace_back(hi, to);
    }
    parts = std::move(out);
  };
  for (const Piece& piece : pieces_) {
    cut(piece.begin, piece.end);
    cut(piece.begin + piece.shift - shift, piece.end + piece.shift - shift);
  }
  for (auto [from, to] : parts) {
    pieces_.push_back({static_cast<std::uint32_t>(from), static_cast<std::uint32_t>(to), shift});
  }
  std::sort(pieces_.begin(), pieces_.end(), [](const Piece& a, const Piece& b) { return a.begin < b.begin; });
}

void OffsetMap::Add(const OffsetMap& other) {
  for (const Piece& piece : other.pieces_) Add(piece.begin, piece.end, piece.shift);
  Merge();
}

void OffsetMap::Merge() {
  std::vector<Piece> out;
  for (const Piece& piece : pieces_) {
    if (!out.empty() && out.back().end == piece.begin && out.back().shift == piece.shift) {
      out.back().end = piece.end;
    } else {
      out.push_back(piece);
    }
  }
  pieces_ = std::move(out);
}

std::optional<std::uint32_t> OffsetMap::ToNew(std::uint32_t old_offset) const {
  for (const Piece& piece : pieces_) {
    if (piece.begin <= old_offset && old_offset < piece.end)
      return static_cast<std::uint32_t>(old_offset + piece.shift);
  }
  return std::nullopt;
}

std::optional<std::uint32_t> OffsetMap::EndToNew(std::uint32_t old_end) const {
  if (old_end == 0) return 0;
  std::optional<std::uint32_t> last = ToNew(old_end - 1);
  if (!last) return std::nullopt;
  return *last + 1;
}

std::optional<std::uint32_t> OffsetMap::ToOld(std::uint32_t new_offset) const {
  for (const Piece& piece : pieces_) {
    std::int64_t begin = piece.begin + piece.shift, end = piece.end + piece.shift;
    if (begin <= new_offset && new_offset < end) return static_cast<std::uint32_t>(new_offset - piece.shift);
  }
  return std::nullopt;
}

std::uint32_t OffsetMap::ToOldBefore(std::uint32_t new_offset) const {
  // The surviving position nearest before `new_offset` (pieces may be out of order in the new
  // text when a definition moved).
  std::int64_t best_new = -1;
  std::uint32_t best = 0;
  for (const Piece& piece : pieces_) {
    std::int64_t begin = piece.begin + piece.shift, end = piece.end + piece.shift;
    if (begin > new_offset) continue;
    std::int64_t at = std::min<std::int64_t>(new_offset, end);
    if (at > best_new) {
      best_new = at;
      best = static_cast<std::uint32_t>(at - piece.shift);
    }
  }
  return best;
}

}  // namespace weft::lsp
