// graph::Fuse on checked programs: products of bf16/f16 matrices go to the stdlib gemm kernel that
// computes them, with their epilogue in a generated kernel of the same tile (or say why none does); with
// FuseOptions::stdlib_attention nn's attention becomes one stdlib attention kernel, without it (what `weft build` does
// today) it is its parts. And the buffer plan never gives a group's output the buffer of a value the group reads, nor
// two live values one buffer.
#include <catch2/catch.hpp>

#include <memory>
#include <string>

#include "check/check.h"
#include "graph/graph.h"
#include "program.h"
#include "syntax/parser.h"

namespace weft::graph {
namespace {

using testing::Build;

std::size_t Count(const Plan& plan, GroupKind kind) {
  std::size_t n = 0;
  for (const Group& g : plan.groups) n += g.kind == kind ? 1 : 0;
  return n;
}

const Group* First(const Plan& plan, GroupKind kind) {
  for (const Group& g : plan.groups)
    if (g.kind == kind) return &g;
  return nullptr;
}

const char* kAttention = R"(import nn
def main =
  let q = (load "q.npy" : bf16[h, 256, 64]) in
  let k = (load "k.npy" : bf16[h, 512, 64]) in
  let v = (load "v.npy" : bf16[h, 512, 64]) in
  save "o.npy" (attention q k v)
)";

TEST_CASE("nn's attention at head dim 64 is one stdlib attention kernel", "[graph]") {
  auto p = Build(kAttention);
  Plan plan = Fuse(p->graph);
  REQUIRE(Count(plan, GroupKind::Attention) == 1);
  const Group* g = First(plan, GroupKind::Attention);
  CHECK(g->kernel == "attention_d64_bf16");
  CHECK(plan.Kernels() == 1);
  // It reads q, k and v (and the scale, a host scalar) and writes only its result.
  CHECK(g->outputs.size() == 1);
  CHECK(p->graph.Get(g->outputs[0]).dtype == Dtype::BF16);
}

TEST_CASE("without the stdlib kernels attention is its parts", "[graph]") {
  auto p = Build(kAttention);
  Plan plan = Fuse(p->graph, FuseOptions{.stdlib_gemm = true, .stdlib_attention = false, .plain_products = {}});
  CHECK(Count(plan, GroupKind::Attention) == 0);
  CHECK(Count(plan, GroupKind::Gemm) == 2);
  CHECK(Count(plan, GroupKind::Rows) == 1);
  // Batched products: no stdlib gemm.
  for (const Group& g : plan.groups) CHECK(g.kernel.empty());
}

TEST_CASE("attention at head dim 32 has no stdlib kernel", "[graph]") {
  std::string text = kAttention;
  for (std::size_t at = text.find(", 64]"); at != std::string::npos; at = text.find(", 64]"))
    text.replace(at, 5, ", 32]");
  auto p = Build(text);
  Plan plan = Fuse(p->graph);
  CHECK(Count(plan, GroupKind::Attention) == 0);
}

TEST_CASE("attention whose sizes the kernel's tiles do not divide or are known only at run time is its parts",
          "[graph]") {
  std::string divided = kAttention;
  divided.replace(divided.find("bf16[h, 256, 64]"), 16, "bf16[h, 100, 64]");
  std::string symbolic = kAttention;
  for (std::size_t at = symbolic.find("512"); at != std::string::npos; at = symbolic.find("512"))
    symbolic.replace(at, 3, "t");
  for (const std::string& text : {divided, symbolic}) {
    auto p = Build(text);
    Plan plan = Fuse(p->graph);
    CHECK(Count(plan, GroupKind::Attention) == 0);
    CHECK(Count(plan, GroupKind::Rows) == 1);
  }
}

TEST_CASE("attention at head dims 64 and 128 takes keys in blocks of 128", "[graph]") {
  // attention_d64_bf16's and attention_d128_bf16's `where` clause is s % 128 == 0, t % 128 == 0:
  // 512 keys are theirs, 192 (a multiple of 64) are the pattern's parts with the reason on the row
  // kernel.
  for (const char* dim : {"64", "128"}) {
    INFO("head dim " << dim);
    std::string text = kAttention;
    for (std::size_t at = text.find(", 64]"); at != std::string::npos; at = text.find(", 64]", at + 1))
      text.replace(at, 5, std::string(", ") + dim + "]");
    std::string kernel = std::string("attention_d") + dim + "_bf16";
    auto p = Build(text);
    Plan plan = Fuse(p->graph);
    REQUIRE(Count(plan, GroupKind::Attention) == 1);
    CHECK(First(plan, GroupKind::Attention)->kernel == kernel);
    CHECK(First(plan, GroupKind::Attention)->why.find("s % 128 == 0 and t % 128 == 0 hold") != std::string::npos);
    for (std::size_t at = text.find("512"); at != std::string::npos; at = text.find("512")) text.replace(at, 3, "192");
    auto q = Build(text);
    Plan parts = Fuse(q->graph);
    CHECK(Count(parts, GroupKind::Attention) == 0);
    REQUIRE(Count(parts, GroupKind::Rows) == 1);
    CHECK(First(parts, GroupKind::Rows)->why ==
          "not the stdlib " + kernel +
              ": its `where` clause, s % 128 == 0 and t % 128 == 0, cannot hold: here s = 256 and t = 192");
  }
}

TEST_CASE("products choose the stdlib gemm that computes them and the generic one fuses its epilogue", "[graph]") {
  auto p = Build(R"(def main =
  let x = (load "x.npy" : bf16[m, 1024]) in
  let w = (load "w.npy" : bf16[1024, 4096]) in
  let b = (load "b.npy" : bf16[4096]) in
  let h = maximum (x @ w + b) 0.0 in
  let wt = (load "wt.npy" : bf16[512, 4096]) in
  let o = matmul_f32 h (transpose wt) in
  let f = (load "f.npy" : f32[m, 512]) in
  save "o.npy" (f @ (transpose o) * 2.0)
)");
  Plan plan = Fuse(p->graph);
  REQUIRE(Count(plan, GroupKind::Gemm) == 3);
  std::vector<const Group*> gemms;
  for (const Group& g : plan.groups)
    if (g.kind == GroupKind::Gemm) gemms.push_back(&g);
  // `@` of bf16 with its bias and ReLU: the stdlib tile with a generated epilogue (epilogue.h)
  CHECK(gemms[0]->kernel.rfind("gemm_epilogue_", 0) == 0);
  CHECK(gemms[0]->epilogue);
  CHECK(gemms[0]->nodes.size() == 3);         // @, +, maximum
  CHECK(gemms[1]->kernel == "gemm_bf16_nt");  // b read through a transpose, nothing after it
  CHECK(gemms[1]->nodes.size() == 2);
  CHECK(gemms[2]->kernel.empty());  // f32: the generic product, with its epilogue
  CHECK(gemms[2]->nodes.size() == 3);
  CHECK(gemms[2]->why == "no stdlib gemm takes f32 operands");
  CHECK(Count(plan, GroupKind::Elementwise) == 0);
  // Without the stdlib kernels the first product takes its epilogue.
  Plan plain = Fuse(p->graph, FuseOptions{.stdlib_gemm = false, .stdlib_attention = false, .plain_products = {}});
  REQUIRE(Count(plain, GroupKind::Gemm) == 3);
  CHECK(Count(plain, GroupKind::Elementwise) == 0);
  for (const Group& g : plain.groups) CHECK(g.kernel.empty());
}

TEST_CASE("no buffer holds two live values and no group writes a buffer it reads", "[graph]") {
  auto p = Build(R"(import nn
def main =
  let x = (random [256, 300] 1 : f32[256, 300]) in
  let a = softmax x in
  let b = exp a + 1.0 in
  let _ = save "a.npy" a in
  let c = layernorm (b * 2.0) (random [300] 2) (random [300] 3) in
  let d = sum (c - a) in
  save "d.npy" (d + sum b)
)");
  Plan plan = Fuse(p->graph);
  REQUIRE(plan.Kernels() == 2);  // softmax (saved), then one row kernel for the rest
  // Each group's inputs and outputs, by buffer.
  for (std::size_t g = 0; g < plan.groups.size(); ++g) {
    for (NodeId out : plan.groups[g].outputs) {
      std::int64_t b = plan.buffer_of[out.index];
      if (b < 0) continue;
      for (NodeId in : plan.groups[g].inputs) CHECK(plan.buffer_of[in.index] != b);
    }
  }
  // A buffer's values in turn: each one's last reader comes before the next one's writer.
  for (const Buffer& buffer : plan.buffers) {
    for (std::size_t i = 1; i < buffer.holds.size(); ++i) {
      std::int64_t writer = plan.group_of[buffer.holds[i].index];
      for (std::size_t g = static_cast<std::size_t>(writer); g < plan.groups.size(); ++g) {
        for (NodeId in : plan.groups[g].inputs) CHECK(in != buffer.holds[i - 1]);
      }
    }
  }
}

}  // namespace
}  // namespace weft::graph
