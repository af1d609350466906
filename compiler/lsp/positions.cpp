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

TextMap::TextMap(std::string_view old_text, std::string_view new_text)
    : old_size_(static_cast<std::uint32_t>(old_text.size())), new_size_(static_cast<std::uint32_t>(new_text.size())) {
  identity_ = old_text == new_text;
  std::uint32_t limit = std::min(old_size_, new_size_);
  while (prefix_ < limit && old_text[prefix_] == new_text[prefix_]) ++prefix_;
  while (suffix_ < limit - prefix_ && old_text[old_size_ - 1 - suffix_] == new_text[new_size_ - 1 - suffix_]) ++suffix_;
}

std::optional<std::uint32_t> TextMap::ToNew(std::uint32_t old_offset) const {
  if (identity_ || old_offset < prefix_) return old_offset;
  if (old_offset >= old_size_ - suffix_) return old_offset - old_size_ + new_size_;
  return std::nullopt;
}

std::optional<std::uint32_t> TextMap::EndToNew(std::uint32_t old_end) const {
  if (identity_ || old_end <= prefix_) return old_end;
  if (old_end > old_size_ - suffix_) return old_end - old_size_ + new_size_;
  return std::nullopt;
}

std::optional<std::uint32_t> TextMap::ToOld(std::uint32_t new_offset) const {
  if (identity_ || new_offset < prefix_) return new_offset;
  if (new_offset >= new_size_ - suffix_) return new_offset - new_size_ + old_size_;
  return std::nullopt;
}

std::optional<std::uint32_t> TextMap::EndToOld(std::uint32_t new_end) const {
  if (identity_ || new_end <= prefix_) return new_end;
  if (new_end > new_size_ - suffix_) return new_end - new_size_ + old_size_;
  return std::nullopt;
}

}  // namespace weft::lsp
