// graph::EpilogueKernel: the product and the elementwise work after it as a kernel-tier kernel on
// the stdlib gemm tile. Each generated kernel must check and lower like a hand-written one; what
// the tile cannot hold (a column vector, two matrices, an integer result) is refused with a reason,
// and fusion then leaves the work after the product to a kernel of its own.
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

// The generated kernel checks and lowers to the tile IR as a hand-written one does.
void RequireLowers(const Epilogue& e) {
  SourceManager sources;
  Diagnostics diagnostics;
  FileId id = sources.Add("<generated>", e.source);
  syntax::Ast ast = syntax::Parse(sources, id, diagnostics);
  check::CheckResult result = check::Check(sources, ast, diagnostics, check::CheckOptions{});
  INFO(e.source);
  REQUIRE_FALSE(diagnostics.has_errors());
  const core::Def* def = result.module.Find(e.name);
  REQUIRE(def != nullptr);
  REQUIRE(def->kernel);
  auto lowered = tile::Lower(result.module, result.vars, *def);
  REQUIRE(lowered);
}

}  // namespace

TEST_CASE("bias and ReLU after a bf16 product are the epilogue of the stdlib tile", "[graph][epilogue]") {
  auto p = Build(R"(def main =
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
  CHECK(e->source.find("(x0: bf16[1, n]) (out c: bf16[m, n])") != std::string::npos);
  CHECK(e->source.find("regs (shared (tile x0 [1, 256] (0, j)))") != std::string::npos);
  CHECK(e->source.find(" = cast bf16 acc in") != std::string::npos);  // `@` of bf16 rounds once
  CHECK(e->source.find(" = maximum v") != std::string::npos);
  CHECK(EpilogueSources(p->graph, p->plan) == e->source + "\n");
  RequireLowers(*e);
}

TEST_CASE("an f32 product with a residual, a scale and tanh, and a transposed b, are epilogues too",
          "[graph][epilogue]") {
  auto p = Build(R"(def main =
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
  CHECK(e->source.find("(b: bf16[n, k])") != std::string::npos);
  CHECK(e->source.find("(x0: bf16[m, n])") != std::string::npos);
  CHECK(e->source.find(" = acc in") != std::string::npos);  // matmul_f32: the accumulator itself
  RequireLowers(*e);
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
