// A kernel with a `tiles` clause means the same whatever the compiler chooses: the interpreter gives
// every instance's result bit for bit the first instance's, which is what `weft run --cpu` runs
// (docs/kernels.md, "Tile sizes the compiler chooses"). On tests/gpu/array/tiles.weft's kernel, at a
// shape every instance divides, with inputs that are not round.
#include <catch2/catch.hpp>

#include <cstring>
#include <fstream>
#include <sstream>

#include "check/check.h"
#include "interp/interpreter.h"
#include "syntax/parser.h"

namespace weft::interp {
namespace {

// bf16 values in [-1, 1) from a linear congruential generator: the upper half of an f32's bits.
runtime::HostTensor Bf16(std::vector<std::int64_t> shape, std::uint32_t seed) {
  runtime::HostTensor t = runtime::HostTensor::Zeros(Dtype::BF16, std::move(shape));
  for (std::int64_t i = 0; i < t.Count(); ++i) {
    seed = seed * 1664525u + 1013904223u;
    float value = static_cast<float>(seed >> 8) / static_cast<float>(1u << 23) - 1.0f;
    std::uint32_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    auto half = static_cast<std::uint16_t>(bits >> 16);
    std::memcpy(t.bytes.data() + 2 * i, &half, sizeof half);
  }
  return t;
}

TEST_CASE("every instance of a `tiles` kernel computes the first instance's values", "[interp][tiles]") {
  std::ifstream in(WEFT_SOURCE_DIR "/tests/gpu/array/tiles.weft");
  std::stringstream text;
  text << in.rdbuf();
  SourceManager sources;
  Diagnostics diagnostics;
  FileId file = sources.Add("tiles.weft", text.str());
  syntax::Ast ast = syntax::Parse(sources, file, diagnostics);
  check::CheckOptions options;
  options.stdlib_dir = WEFT_SOURCE_DIR "/stdlib";
  check::CheckResult result = check::Check(sources, ast, diagnostics, options);
  REQUIRE_FALSE(diagnostics.has_errors());
  const core::Def* gemm = result.module.Find("gemm");
  REQUIRE(gemm);
  REQUIRE(gemm->kernel);
  const std::vector<core::Def>& instances = gemm->kernel->instances;
  REQUIRE(instances.size() == 4);
  std::vector<runtime::HostTensor> args = {Bf16({256, 192}, 1), Bf16({192, 512}, 2)};
  Interpreter interpreter(result.module, result.vars, InterpreterOptions{});
  auto first = interpreter.Call(*gemm, args);
  REQUIRE(first.ok());
  REQUIRE(first->size() == 1);
  for (const core::Def& instance : instances) {
    INFO(instance.name);
    // The interpreter runs a module's definitions: the module with the instance in the kernel's place.
    core::Module module = result.module;
    core::Def* def = nullptr;
    for (core::Def& d : module.defs())
      if (d.name == "gemm") def = &d;
    REQUIRE(def);
    *def = instance;
    auto out = Interpreter(module, result.vars, InterpreterOptions{}).Call(*def, args);
    REQUIRE(out.ok());
    REQUIRE(out->size() == 1);
    CHECK((*out)[0].shape == (*first)[0].shape);
    CHECK((*out)[0].bytes == (*first)[0].bytes);
  }
}

}  // namespace
}  // namespace weft::interp
