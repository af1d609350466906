// Array kernels (codegen/array.h): every group that HasArrayKernel takes in every program of
// tests/lit/graph and examples generates on sm_80 and sm_90a, and ptxas assembles its PTX (skipped,
// with a warning, without the CUDA toolkit). Plus checks of the code's shape: the elementwise
// kernel of chain.weft has a 16-byte vector path with four vectors in flight, softmax's row kernel
// reduces by warp shuffles, layernorm's row kernel loads its row once (registers across passes).
// WEFT_DUMP_PTX=DIR writes each kernel's PTX and LLVM IR there.
// Whether the kernels compute the interpreter's values is checked on a GPU, end to end.
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "check/check.h"
#include "codegen/array.h"
#include "graph/graph.h"
#include "kernels.h"
#include "syntax/parser.h"

namespace weft::codegen {
namespace {

// The program's graph and plan, or nothing when it does not check or has no graph (a program
// written to fail, or one the graph refuses).
struct Program {
  SourceManager sources;
  std::optional<check::CheckResult> result;
  std::optional<graph::Graph> graph;
  graph::Plan plan;
};

std::unique_ptr<Program> Load(const std::string& file) {
  auto p = std::make_unique<Program>();
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  Diagnostics diagnostics;
  FileId id = p->sources.Add(file, text.str());
  syntax::Ast ast = syntax::Parse(p->sources, id, diagnostics);
  if (diagnostics.has_errors()) return nullptr;
  check::CheckOptions options;
  options.stdlib_dir = WEFT_SOURCE_DIR "/stdlib";
  p->result = check::Check(p->sources, ast, diagnostics, options);
  if (diagnostics.has_errors()) return nullptr;
  const core::Def* main = p->result->module.Find("main");
  if (!main || main->span.file != id) return nullptr;
  auto graph = graph::Build(p->result->module, p->result->vars, *main);
  if (!graph) return nullptr;
  p->graph = std::move(*graph);
  p->plan = graph::Fuse(*p->graph);
  return p;
}

std::vector<std::string> Programs() {
  std::vector<std::string> files;
  for (const char* dir : {"tests/lit/graph", "examples"})
    for (const auto& entry : std::filesystem::directory_iterator(std::string(WEFT_SOURCE_DIR) + "/" + dir))
      if (entry.path().extension() == ".weft") files.push_back(entry.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

// The kernel of the first group of `kind` in `file` (relative to the source tree).
std::optional<ArrayKernel> KernelOf(const std::string& file, graph::GroupKind kind) {
  auto p = Load(std::string(WEFT_SOURCE_DIR) + "/" + file);
  if (!p) return std::nullopt;
  for (std::size_t g = 0; g < p->plan.groups.size(); ++g) {
    if (p->plan.groups[g].kind != kind || !HasArrayKernel(*p->graph, p->plan, g)) continue;
    auto k = EmitArrayKernel(*p->graph, p->plan, g, synth::Target::Sm80, p->sources);
    if (!k) return std::nullopt;
    return *k;
  }
  return std::nullopt;
}

TEST_CASE("array: every group of the graph tests and examples generates and assembles", "[array]") {
  std::string ptxas = testing::FindPtxas();
  if (ptxas.empty()) WARN("SKIPPED the ptxas half: no ptxas (CUDA toolkit) on PATH or in /usr/local/cuda/bin");
  int kernels = 0;
  for (const std::string& file : Programs()) {
    auto p = Load(file);
    if (!p) continue;
    for (std::size_t g = 0; g < p->plan.groups.size(); ++g) {
      if (!HasArrayKernel(*p->graph, p->plan, g)) continue;
      for (synth::Target target : {synth::Target::Sm80, synth::Target::Sm90a}) {
        const char* arch = target == synth::Target::Sm80 ? "sm_80" : "sm_90a";
        INFO(file << " group k" << g << " (" << graph::Spelling(p->plan.groups[g].kind) << ") on " << arch);
        auto k = EmitArrayKernel(*p->graph, p->plan, g, target, p->sources);
        if (!k) FAIL(k.error());
        ++kernels;
        CHECK(k->device.entry == "weft_array_" + std::to_string(g));
        CHECK(k->tensors.size() >= k->inputs + p->plan.groups[g].outputs.size());
        CHECK(!k->grid.empty());
        CHECK(k->grid.size() <= 3);
        CHECK(k->device.threads > 0);
        if (const char* dump = std::getenv("WEFT_DUMP_PTX")) {
          std::string name = std::filesystem::path(file).stem().string() + "_k" + std::to_string(g) + "_" + arch;
          std::filesystem::create_directories(dump);
          std::ofstream(std::string(dump) + "/" + name + ".ptx") << k->device.ptx;
          std::ofstream(std::string(dump) + "/" + name + ".ll") << k->device.llvm_ir;
        }
        if (ptxas.empty()) continue;
        std::string report;
        bool ok = testing::Assemble(ptxas, k->device.ptx, arch, report);
        INFO(report);
        CHECK(ok);
      }
    }
  }
  CHECK(kernels > 20);
}

TEST_CASE("array: the elementwise kernel of chain.weft has a 16-byte vector path", "[array]") {
  auto k = KernelOf("tests/lit/graph/chain.weft", graph::GroupKind::Elementwise);
  REQUIRE(k);
  const std::string& ptx = k->device.ptx;
  CHECK((ptx.find("ld.global.v4") != std::string::npos || ptx.find("ld.global.nc.v4") != std::string::npos));
  CHECK(ptx.find("st.global.v") != std::string::npos);
}

// The number of times `what` occurs in `text`.
int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

TEST_CASE("array: the elementwise kernel keeps four 16-byte loads in flight", "[array]") {
  auto k = KernelOf("tests/lit/graph/chain.weft", graph::GroupKind::Elementwise);
  REQUIRE(k);
  CHECK(Count(k->device.ptx, "ld.global.nc.v4") >= 4);
}

TEST_CASE("array: layernorm's row kernel reads its row once in 16-byte vectors", "[array]") {
  // f32[b, t, 768]: 192 units of 4 at 128 threads, two slots a thread; x, gamma and beta are each
  // loaded once per slot (the general path, needed only for misaligned views, folds away).
  auto k = KernelOf("tests/lit/graph/layernorm.weft", graph::GroupKind::Rows);
  REQUIRE(k);
  const std::string& ptx = k->device.ptx;
  CHECK(k->device.threads == 128);
  CHECK(Count(ptx, "ld.global.nc.v4") == 6);
  CHECK(Count(ptx, "ld.global") == 6);
  CHECK(Count(ptx, "st.global.v4") == 2);
}

TEST_CASE("array: softmax's row kernel reduces by warp shuffles", "[array]") {
  auto k = KernelOf("tests/lit/graph/softmax.weft", graph::GroupKind::Rows);
  REQUIRE(k);
  CHECK(k->device.ptx.find("shfl.sync.bfly") != std::string::npos);
  CHECK(k->grid.size() == 1);
}

// Every array kernel of `file` on both targets, each assembled by ptxas when there is one.
std::vector<ArrayKernel> AssembleAll(const std::string& file) {
  auto p = Load(std::string(WEFT_SOURCE_DIR) + "/" + file);
  REQUIRE(p);
  std::string ptxas = testing::FindPtxas();
  if (ptxas.empty()) WARN("SKIPPED the ptxas half: no ptxas (CUDA toolkit) on PATH or in /usr/local/cuda/bin");
  std::vector<ArrayKernel> out;
  for (std::size_t g = 0; g < p->plan.groups.size(); ++g) {
    if (!HasArrayKernel(*p->graph, p->plan, g)) continue;
    for (synth::Target target : {synth::Target::Sm80, synth::Target::Sm90a}) {
      const char* arch = target == synth::Target::Sm80 ? "sm_80" : "sm_90a";
      INFO(file << " group k" << g << " on " << arch);
      auto k = EmitArrayKernel(*p->graph, p->plan, g, target, p->sources);
      if (!k) FAIL(k.error());
      if (!ptxas.empty()) {
        std::string report;
        bool ok = testing::Assemble(ptxas, k->device.ptx, arch, report);
        INFO(report);
        CHECK(ok);
      }
      out.push_back(*k);
    }
  }
  return out;
}

TEST_CASE("array: f64 transcendental functions link libdevice into the kernel, which assembles", "[array]") {
  std::vector<ArrayKernel> kernels = AssembleAll("tests/lit/graph/f64_math.weft");
  REQUIRE(kernels.size() == 2);
  for (const ArrayKernel& k : kernels) {
    // Linked and internal (inlined by O3 or kept as a .func), reflected: no call of an external
    // libdevice function, no __nvvm_reflect left.
    CHECK(k.device.llvm_ir.find("define internal double @__nv_exp(") != std::string::npos);
    CHECK(k.device.llvm_ir.find("!\"nvvm-reflect-ftz\", i32 0}") != std::string::npos);
    CHECK(k.device.ptx.find(".extern .func") == std::string::npos);
    CHECK(k.device.ptx.find("__nvvm_reflect") == std::string::npos);
    CHECK(k.device.ptx.find(".visible .func") == std::string::npos);
  }
}

TEST_CASE("array: without libdevice an f64 exp is refused, saying where libdevice was looked for", "[array]") {
  auto p = Load(std::string(WEFT_SOURCE_DIR) + "/tests/lit/graph/f64_math.weft");
  REQUIRE(p);
  const char* old = std::getenv("WEFT_LIBDEVICE");
  std::string saved = old ? old : "";
  setenv("WEFT_LIBDEVICE", "/nonexistent/libdevice.10.bc", 1);
  std::optional<std::string> error;
  for (std::size_t g = 0; g < p->plan.groups.size(); ++g) {
    if (!HasArrayKernel(*p->graph, p->plan, g)) continue;
    auto k = EmitArrayKernel(*p->graph, p->plan, g, synth::Target::Sm80, p->sources);
    if (!k) error = k.error();
  }
  if (old)
    setenv("WEFT_LIBDEVICE", saved.c_str(), 1);
  else
    unsetenv("WEFT_LIBDEVICE");
  REQUIRE(error);
  CHECK(*error ==
        "f64 `exp` (NVIDIA's libdevice was not found: looked at WEFT_LIBDEVICE=/nonexistent/libdevice.10.bc; set "
        "WEFT_LIBDEVICE to its path)");
}

TEST_CASE("array: f8 and 4-bit kernels assemble, and 4-bit results are stored as whole bytes", "[array]") {
  std::vector<ArrayKernel> kernels = AssembleAll("tests/lit/graph/f8_i4.weft");
  CHECK(kernels.size() == 14);
  // k3 writes i4[37, 101]: 3737 elements, so the scalar path (pairs of elements, a byte each) and
  // no vector path (101 is no multiple of 4); no read-modify-write of a byte another thread writes.
  const std::string& ptx = kernels.at(6).device.ptx;
  CHECK(ptx.find("st.global.u8") != std::string::npos);
  CHECK(ptx.find("atom.") == std::string::npos);
  CHECK(ptx.find("ld.global.u8") == std::string::npos);
  // The f8 casts are integer and float arithmetic (sm_80 has no f8 conversions): cvt.rni rounds.
  CHECK(kernels.at(2).device.ptx.find("cvt.rni.f32.f32") != std::string::npos);
}

}  // namespace
}  // namespace weft::codegen
