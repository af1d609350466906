#include <catch2/catch.hpp>

#include "base/source.h"

namespace weft {
namespace {

TEST_CASE("lines and columns are 1-based and columns count code points", "[source]") {
  SourceManager sources;
  FileId file = sources.Add("t.weft", "ab\n\xC3\xA9x y\n\nlast");
  const SourceBuffer& buffer = sources.Get(file);
  CHECK(buffer.LineCount() == 4);
  CHECK(buffer.Locate(0).line == 1);
  CHECK(buffer.Locate(0).column == 1);
  CHECK(buffer.Locate(1).column == 2);
  // "é" is two bytes but one column: `x` is at byte 5, column 2 of line 2.
  LineCol x = buffer.Locate(5);
  CHECK(x.line == 2);
  CHECK(x.column == 2);
  CHECK(buffer.Locate(9).line == 3);
  CHECK(buffer.Line(2) == "\xC3\xA9x y");
  CHECK(buffer.Line(3).empty());
  CHECK(buffer.Line(4) == "last");
  CHECK(buffer.Line(5).empty());
  // Offsets past the end clamp to the end.
  CHECK(buffer.Locate(1000).line == 4);
}

TEST_CASE("a span's text and joining spans", "[source]") {
  SourceManager sources;
  FileId file = sources.Add("t.weft", "let x = 1 in x");
  Span let{file, 0, 3};
  Span body{file, 13, 14};
  CHECK(sources.Text(let) == "let");
  CHECK(sources.Text(let.To(body)) == "let x = 1 in x");
  CHECK(sources.Text(Span{}).empty());
}

TEST_CASE("loading a missing file says why", "[source]") {
  SourceManager sources;
  std::string error;
  CHECK_FALSE(sources.Load("/nonexistent/dir/file.weft", error).has_value());
  CHECK(error == "No such file or directory");
}

TEST_CASE("CRLF line endings do not leak into rendered lines", "[source]") {
  SourceManager sources;
  FileId file = sources.Add("t.weft", "a\r\nb\r\n");
  CHECK(sources.Get(file).Line(1) == "a");
  CHECK(sources.Get(file).Line(2) == "b");
}

}  // namespace
}  // namespace weft
