// The printer's contract: parsing printed source gives the same tree, for every program in the
// repository that is meant to parse (tests/lit that are not fail_ tests, examples/, stdlib/).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "syntax/parse_helpers.h"

namespace weft::syntax {
namespace {

using testing::ParseText;

std::vector<std::filesystem::path> ProgramsMeantToParse() {
  std::vector<std::filesystem::path> files;
  for (const char* folder : {"tests/lit", "examples", "stdlib"}) {
    std::filesystem::path root = std::filesystem::path(WEFT_SOURCE_DIR) / folder;
    if (!std::filesystem::exists(root)) continue;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
      std::string name = entry.path().filename().string();
      if (entry.path().extension() == ".weft" && name.rfind("fail_", 0) != 0) files.push_back(entry.path());
    }
  }
  return files;
}

void CheckRoundTrip(const std::string& name, const std::string& text) {
  INFO(name);
  auto first = ParseText(text);
  REQUIRE(first.Errors().empty());
  std::string printed = Print(first.ast);
  auto second = ParseText(printed);
  INFO(printed);
  REQUIRE(second.Errors().empty());
  CHECK(second.dump == first.dump);
  CHECK(Print(second.ast) == printed);
}

TEST_CASE("every program in the repository round-trips through the printer", "[round-trip]") {
  auto files = ProgramsMeantToParse();
  CHECK(files.size() >= 3);
  for (const auto& path : files) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    CheckRoundTrip(path.string(), text.str());
  }
}

TEST_CASE("tricky printing cases round-trip", "[round-trip]") {
  for (const char* text : {
           "def f = - -x",
           "def f = a - -1",
           "def f = (let x = 1 in x) + 2",
           "def f = f (fn x -> x) (if a then b else c)",
           "def f = (f x) y",
           "def f = (a + b)[0]",
           "def f = -(a @ b)",
           "def f = a - (b - c)",
           "def f = a |> (b |> c)",
           "def f = (x : f32[n] -> f32[n])",
           "def f (g: (f32 -> f32) -> f32) = g",
           "def f = \"quote \\\" backslash \\\\ newline \\n tab \\t\"",
           "def f = let x = let y = 1 in y in x",
           "def f = x[let a = 1 in a:(if c then 2 else 3)]",
           "def f = cast f32 (g x)",
           "def f = [fn x -> x, (a, b), ()]",
           "def f (x: f32[(n + 1) * 2 - m % 4, ..s]) = x",
           "kernel k (out c: f32[4] @shared composition(swizzle<3,4,3>, (8,64):(64,1))) grid (let a = 1 in a) threads "
           "32 = c",
           "def f (x: f32[8, 64] @shared Sw<3,3,3> o 0 o (_8,_64):(_64,_1)) = x",
           "def f (x: f32[4, 2] @reg composition((4,2):(-1,4) o <2:1, 2:-1>, swizzle<1,4,-3> o ?L)) = x",
       }) {
    CheckRoundTrip(text, text);
  }
}

}  // namespace
}  // namespace weft::syntax
