// docs/layouts.md's pictures are printed by the code: each must appear in the document verbatim.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "pictures.h"

namespace weft::layout {
namespace {

TEST_CASE("docs/layouts.md shows the pictures the code prints", "[layout][docs]") {
  std::ifstream in(std::string(WEFT_SOURCE_DIR) + "/docs/layouts.md");
  REQUIRE(in.good());
  std::stringstream doc;
  doc << in.rdbuf();
  for (const auto& [title, text] : testing::Pictures()) {
    INFO(title << "\n" << text);
    CHECK(doc.str().find(text) != std::string::npos);
  }
}

}  // namespace
}  // namespace weft::layout
