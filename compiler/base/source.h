// Source buffers and spans. Every AST node, type and diagnostic points into a SourceManager through
// a Span: a file and a half-open byte range. Lines and columns are computed only when rendering.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/typed_id.h"

namespace weft {

using FileId = TypedId<struct FileTag>;

struct Span {
  FileId file;
  std::uint32_t begin = 0;  // byte offset of the first byte
  std::uint32_t end = 0;    // byte offset one past the last byte

  bool valid() const { return file.valid(); }
  // The smallest span that covers both (same file).
  Span To(Span last) const { return {file, begin, last.end > end ? last.end : end}; }
};

struct LineCol {
  std::uint32_t line = 1;    // 1-based
  std::uint32_t column = 1;  // 1-based, counted in Unicode code points
};

class SourceBuffer {
 public:
  SourceBuffer(std::string name, std::string text);

  std::string_view name() const { return name_; }
  std::string_view text() const { return text_; }
  LineCol Locate(std::uint32_t offset) const;
  // The text of a 1-based line, without its newline.
  std::string_view Line(std::uint32_t line) const;
  std::uint32_t LineCount() const { return static_cast<std::uint32_t>(line_starts_.size()); }

 private:
  std::string name_;
  std::string text_;
  std::vector<std::uint32_t> line_starts_;
};

class SourceManager {
 public:
  FileId Add(std::string name, std::string text);
  // Reads a file; on failure returns nothing and sets `error` to the system's reason.
  std::optional<FileId> Load(const std::string& path, std::string& error);

  const SourceBuffer& Get(FileId id) const { return buffers_[id.index]; }
  std::string_view Text(Span span) const;

 private:
  std::vector<SourceBuffer> buffers_;
};

// Counts the code points of UTF-8 text (invalid bytes count as one each).
std::uint32_t CountCodePoints(std::string_view utf8);

}  // namespace weft
