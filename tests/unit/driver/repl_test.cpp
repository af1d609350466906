// The REPL's pieces that a transcript cannot reach: when an input is complete, tab completion, and
// the names it offers (driver/repl.h). Sessions themselves are tested by tests/repl/*.in.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "driver/repl.h"

namespace weft::driver {
namespace {

ReplConfig TestConfig() {
  ReplConfig config;
  config.stdlib_dir = WEFT_SOURCE_DIR "/stdlib";
  return config;
}

TEST_CASE("complete inputs end the input", "[repl]") {
  for (const char* text :
       {"1 + 2", "[1.0, 2.0] * 2.0", "def f x = x + 1", "let x = 1", "let x = 1 in x", ":type", ":help",
        ":load file.weft", "-- a comment", "", "   ", "f x[0]", "(1 +)", "1 + 2 )", "\"unterminated",
        "def f x = x + 1 def g = 2", "import nn", "x |> f", "if c then a else b"}) {
    INFO(text);
    CHECK(IsComplete(text));
  }
}

TEST_CASE("unfinished inputs continue on the next line", "[repl]") {
  for (const char* text : {"[1.0,",
                           "(1, 2",
                           "f (g x",
                           "x[0",
                           "1 +",
                           "x |>",
                           "def f x =",
                           "let x = 1 in",
                           "fn x ->",
                           "if c then",
                           "if c then a else",
                           "let x = if c",
                           "{- open comment",
                           "def f (x: f32[n])",
                           "loop s = 0 for i <",
                           ":type fn x ->",
                           ":t [1,",
                           "def f x =\n  let y = x in",
                           "a @",
                           "(x :"}) {
    INFO(text);
    CHECK_FALSE(IsComplete(text));
  }
}

TEST_CASE("tab completes commands at the start of a line", "[repl]") {
  Completion all = Complete(":", 1, {});
  CHECK(all.start == 0);
  CHECK(all.candidates.size() == 9);
  CHECK(Complete(":t", 2, {}).candidates == std::vector<std::string>{":type"});
  CHECK(Complete("  :re", 5, {}).candidates == std::vector<std::string>{":reload"});
  CHECK(Complete("  :re", 5, {}).start == 2);
  CHECK(Complete(":l", 2, {}).candidates == std::vector<std::string>{":layout", ":load"});
  CHECK(CommonPrefix(Complete(":l", 2, {}).candidates) == ":l");
  CHECK(Complete(":x", 2, {}).candidates.empty());
}

TEST_CASE("tab completes names before the cursor", "[repl]") {
  std::vector<std::string> names = {"softmax", "sum", "sqrt", "dot", "dot_product", "x'"};
  Completion completion = Complete("1 + so", 6, names);
  CHECK(completion.start == 4);
  CHECK(completion.candidates == std::vector<std::string>{"softmax"});
  CHECK(Complete("s", 1, names).candidates == std::vector<std::string>{"softmax", "sqrt", "sum"});
  CHECK(CommonPrefix(Complete("do", 2, names).candidates) == "dot");
  // Only the text before the cursor counts.
  CHECK(Complete("dot + zzz", 3, names).candidates == std::vector<std::string>{"dot", "dot_product"});
  CHECK(Complete("f x", 3, {"x'"}).candidates == std::vector<std::string>{"x'"});
  CHECK(Complete(":type su", 8, names).candidates == std::vector<std::string>{"sum"});
  CHECK(Complete("x[1", 3, names).candidates.empty());  // not after a digit
  CHECK(Complete("f ", 2, names).candidates.empty());   // nothing typed
  CHECK(Complete(":browse s", 9, names).candidates.empty());
}

TEST_CASE("tab completes file names after :load", "[repl]") {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / "weft_repl_test_completion";
  fs::remove_all(dir);
  fs::create_directories(dir / "models");
  std::ofstream(dir / "model.weft") << "def a = 1\n";
  std::ofstream(dir / "notes.txt") << "\n";
  std::string prefix = dir.string() + "/mo";
  std::string line = ":load " + prefix;
  Completion completion = Complete(line, line.size(), {});
  CHECK(completion.start == 6);
  CHECK(completion.candidates == std::vector<std::string>{dir.string() + "/model.weft", dir.string() + "/models/"});
  line = ":load " + dir.string() + "/n";
  CHECK(Complete(line, line.size(), {}).candidates.empty());  // only .weft files and folders
  fs::remove_all(dir);
}

TEST_CASE("the names in scope are the definitions, the built-ins and the keywords", "[repl]") {
  std::ostringstream out, err;
  Repl repl(out, err, TestConfig());
  CHECK(repl.Run("def my_function x = x + 1"));
  CHECK(repl.Run("let my_value = 2.0"));
  std::vector<std::string> names = repl.NamesInScope();
  for (const char* name : {"my_function", "my_value", "map", "softmax_missing", "let", "f32"}) {
    bool found = std::find(names.begin(), names.end(), name) != names.end();
    INFO(name);
    CHECK(found == (std::string(name) != "softmax_missing"));
  }
  for (const std::string& name : names) CHECK(name.find('<') == std::string::npos);  // no hidden names
  CHECK(err.str().empty());
}

TEST_CASE("every built-in completion offers is one the checker knows", "[repl]") {
  std::ostringstream out, err;
  Repl repl(out, err, TestConfig());
  std::vector<std::string> names = repl.NamesInScope();
  for (const std::string& name : names) {
    if (name == "it" || !std::islower(static_cast<unsigned char>(name[0]))) continue;
    err.str("");
    repl.Run(":type " + name);
    // A keyword does not parse as an expression; a built-in that needs its shape argument says
    // so; none is an unknown name.
    INFO(name);
    CHECK(err.str().find("unknown name") == std::string::npos);
  }
}

TEST_CASE("a failed expression leaves `it` as it was and :quit ends the session", "[repl]") {
  std::ostringstream out, err;
  Repl repl(out, err, TestConfig());
  CHECK(repl.Run("[1, 2]"));
  CHECK(repl.Run("it + true"));
  CHECK_FALSE(err.str().empty());
  out.str("");
  CHECK(repl.Run(":type it"));
  CHECK(out.str() == "it : i32[2]\n");
  CHECK_FALSE(repl.Run(":quit"));
  CHECK_FALSE(repl.Run(":q"));
}

}  // namespace
}  // namespace weft::driver
