#include "base/source.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace weft {

SourceBuffer::SourceBuffer(std::string name, std::string text) : name_(std::move(name)), text_(std::move(text)) {
  line_starts_.push_back(0);
  for (std::uint32_t i = 0; i < text_.size(); ++i) {
    if (text_[i] == '\n') line_starts_.push_back(i + 1);
  }
}

LineCol SourceBuffer::Locate(std::uint32_t offset) const {
  offset = std::min<std::uint32_t>(offset, static_cast<std::uint32_t>(text_.size()));
  auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
  auto line = static_cast<std::uint32_t>(it - line_starts_.begin());
  std::uint32_t start = line_starts_[line - 1];
  return {line, CountCodePoints(std::string_view(text_).substr(start, offset - start)) + 1};
}

std::string_view SourceBuffer::Line(std::uint32_t line) const {
  if (line == 0 || line > line_starts_.size()) return {};
  std::uint32_t start = line_starts_[line - 1];
  std::uint32_t end = line < line_starts_.size() ? line_starts_[line] - 1 : static_cast<std::uint32_t>(text_.size());
  std::string_view result = std::string_view(text_).substr(start, end - start);
  if (!result.empty() && result.back() == '\r') result.remove_suffix(1);
  return result;
}

FileId SourceManager::Add(std::string name, std::string text) {
  buffers_.emplace_back(std::move(name), std::move(text));
  return FileId(static_cast<std::uint32_t>(buffers_.size() - 1));
}

std::optional<FileId> SourceManager::Load(const std::string& path, std::string& error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = std::strerror(errno);
    return std::nullopt;
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    error = "read error";
    return std::nullopt;
  }
  return Add(path, std::move(text).str());
}

std::string_view SourceManager::Text(Span span) const {
  if (!span.valid()) return {};
  return Get(span.file).text().substr(span.begin, span.end - span.begin);
}

std::uint32_t CountCodePoints(std::string_view utf8) {
  std::uint32_t count = 0;
  for (unsigned char c : utf8) {
    if ((c & 0xC0) != 0x80) ++count;  // every byte but a continuation byte starts a code point
  }
  return count;
}

}  // namespace weft
