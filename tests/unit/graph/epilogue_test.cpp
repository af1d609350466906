// graph::EpilogueKernel: the product and the elementwise work after it on the stdlib gemm tile.
// Its kernel (EpilogueTile: the stdlib gemm's tile IR with the epilogue's ops before the store) is
// op for op what tile::Lower makes of the text `--emit=graph` prints (EpilogueText); what the tile
// cannot hold (a column vector, two matrices, an integer result) is refused with a reason, and
// fusion then leaves the work after the product to a kernel of its own.
#include <catch2/catch.hpp>

#include <memory>
#include <string>

#include "check/check.h"
#include "graph/epilogue.h"
#include "graph/graph.h"
#include "program.h"
#include "syntax/parser.h"
#include "tile/lower.h"

namespace weft::graph {
namespace {

using testing::Build;

const Group* Gemm(const Plan& plan) {
  for (const Group& g : plan.groups)
    if (g.kind == GroupKind::Gemm) return &g;
  return nullptr;
}

// The kernel built on the stdlib gemm's tile IR (the program imports `gemm`) is the one tile::Lower
// makes of the printed text, checked as a hand-written kernel: the same values, ops and names.
void RequireSameAsText(const Epilogue& e, const testing::Program& p) {
  std::string text = EpilogueText(e);
  INFO(text);
  SourceManager sources;
  Diagnostics diagnostics;
  FileId id = sources.Add("<generated>", text);
  syntax::Ast ast = syntax::Parse(sources, id, diagnostics);
  check::CheckResult result = check::Check(sources, ast, diagnostics, check::CheckOptions{});
  REQUIRE_FALSE(diagnostics.has_errors());
  const core::Def* def = result.module.Find(e.name);
  REQUIRE(def != nullptr);
  REQUIRE(def->kernel);
  auto lowered = tile::Lower(result.module, result.vars, *def);
  REQUIRE(lowered);

  const core::Def* gemm = p.result.module.Find(e.tile);
  REQUIRE(gemm != nullptr);
  auto base = tile::Lower(p.result.module, p.result.vars, *gemm);
  REQUIRE(base);
  auto built = EpilogueTile(e, *base);
  REQUIRE(built);
  CHECK(tile::Verify(*built).empty());
  CHECK(tile::Print(*built) == tile::Print(*lowered));
}

}  // namespace

TEST_CASE("bias and ReLU after a bf16 product are the epilogue of the stdlib tile", "[graph][epilogue]") {
  auto p = Build(R"(import gemm
def main =
  let x = (load "x.npy" : bf16[m, 1024]) in
  let w = (load "w.npy" : bf16[1024, 4096]) in
  let b = (load "b.npy" : bf16[4096]) in
  save "h.npy" (maximum (x @ w + b) 0.0)
)");
  const Group* g = Gemm(p->plan);
  REQUIRE(g != nullptr);
  REQUIRE(g->epilogue);
  auto e = EpilogueKernel(p->graph, g->nodes, g->kernel);
  REQUIRE(e);
  CHECK(e->tile == "gemm_bf16");
  CHECK(e->inputs.size() == 1);  // the bias
  const std::string text = EpilogueText(*e);
  CHECK(text.find("(x0: bf16[1, n]) (out c: bf16[m, n])") != std::string::npos);
  CHECK(text.find("regs (shared (tile x0 [1, 256] (0, j)))") != std::string::npos);
  CHECK(text.find(" = cast bf16 acc in") != std::string::npos);  // `@` of bf16 rounds once
  CHECK(text.find(" = maximum v") != std::string::npos);
  CHECK(EpilogueTexts(p->graph, p->plan) == text + "\n");
  RequireSameAsText(*e, *p);
}

TEST_CASE("an f32 product with a residual, a scale and tanh, and a transposed b, are epilogues too",
          "[graph][epilogue]") {
  auto p = Build(R"(import gemm
def main =
  let x = (load "x.npy" : bf16[m, 512]) in
  let wt = (load "wt.npy" : bf16[768, 512]) in
  let r = (load "r.npy" : bf16[m, 768]) in
  let y = matmul_f32 x (transpose wt) in
  save "y.npy" (cast bf16 (tanh (y * 0.5) + cast f32 r))
)");
  const Group* g = Gemm(p->plan);
  REQUIRE(g != nullptr);
  REQUIRE(g->epilogue);
  auto e = EpilogueKernel(p->graph, g->nodes, g->kernel);
  REQUIRE(e);
  CHECK(e->tile == "gemm_bf16_nt");
  const std::string text = EpilogueText(*e);
  CHECK(text.find("(b: bf16[n, k])") != std::string::npos);
  CHECK(text.find("(x0: bf16[m, n])") != std::string::npos);
  CHECK(text.find(" = acc in") != std::string::npos);  // matmul_f32: the accumulator itself
  RequireSameAsText(*e, *p);
}

TEST_CASE("every kind of step is built as tile::Lower lowers its text", "[graph][epilogue]") {
  const char* cases[] = {
      // negative and exponent literals, comparisons, `&&`, select, a row computed before its use
      "select (y > (-0.25) && y < 1.0e30) (y * 0.5) (0.0 - y + cast bf16 (cast f32 b * 2.0))",
      // a bf16 residual read at f32, prefix functions, casts of the product
      "cast bf16 (sigmoid (cast f32 y) * cast f32 r + exp (cast f32 b) - (-0.0))",
      // several rows, maximum and minimum, a bool literal
      "select (true || y != b) (minimum (maximum y b) b2) (abs (y / b2))",
  };
  for (const char* result : cases) {
    INFO(result);
    auto p = Build(std::string(R"(import gemm
def main =
  let x = (load "x.npy" : bf16[m, 512]) in
  let w = (load "w.npy" : bf16[512, 768]) in
  let b = (load "b.npy" : bf16[768]) in
  let b2 = (load "b2.npy" : bf16[1, 768]) in
  let r = (load "r.npy" : bf16[m, 768]) in
  let y = x @ w in
  save "y.npy" ()") +
                   result + ")\n");
    const Group* g = Gemm(p->plan);
    REQUIRE(g != nullptr);
    INFO(g->why);
    REQUIRE(g->epilogue);
    auto e = EpilogueKernel(p->graph, g->nodes, g->kernel);
    REQUIRE(e);
    RequireSameAsText(*e, *p);
  }
  // f16 operands, the gemm_f16 tile.
  auto p = Build(R"(import gemm
def main =
  let x = (load "x.npy" : f16[m, 512]) in
  let w = (load "w.npy" : f16[512, 768]) in
  let b = (load "b.npy" : f16[768]) in
  save "y.npy" (tanh (x @ w + b))
)");
  const Group* g = Gemm(p->plan);
  REQUIRE(g != nullptr);
  REQUIRE(g->epilogue);
  auto e = EpilogueKernel(p->graph, g->nodes, g->kernel);
  REQUIRE(e);
  CHECK(e->tile == "gemm_f16");
  RequireSameAsText(*e, *p);
}

TEST_CASE("what the stdlib tile cannot hold leaves the epilogue to a kernel of its own", "[graph][epilogue]") {
  struct Case {
    const char* what;
    const char* result;
    const char* reason;
  };
  const Case cases[] = {
      {"a column vector", "x @ w + c", "neither [n] nor the product's shape"},
      {"two matrices", "x @ w + r + r2", "one 16-bit matrix"},
      {"an integer result", "cast i32 (x @ w)", "its result is i32"},
      {"a view", "x @ w + transpose r", "a `view` node"},
      {"unary minus", "-(x @ w) + r", "unary minus"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    auto p = Build(std::string(R"(def main =
  let x = (load "x.npy" : bf16[256, 128]) in
  let w = (load "w.npy" : bf16[128, 256]) in
  let c = (load "c.npy" : bf16[256, 1]) in
  let r = (load "r.npy" : bf16[256, 256]) in
  let r2 = (load "r2.npy" : bf16[256, 256]) in
  save "y.npy" ()") +
                   c.result + ")\n");
    const Group* g = Gemm(p->plan);
    REQUIRE(g != nullptr);
    CHECK_FALSE(g->epilogue);
    CHECK(g->kernel == "gemm_bf16_bf16");
    CHECK(g->nodes.size() == 1);
    CHECK(g->why.find(c.reason) != std::string::npos);
  }
}

}  // namespace weft::graph
