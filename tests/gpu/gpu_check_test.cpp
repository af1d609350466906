// gpu_check without a GPU: the manifest's format and the comparison (gpu_case.h), and whole runs of
// the gpu_check binary through the runtime's fake driver (tests/unit/runtime/fake_cuda.cpp: device
// memory is host memory, the kernel `add` writes nothing), so outputs stay as zero-filled.
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

#include "gpu_case.h"
#include "weft/npy.h"
#include "weft/numerics.h"

namespace {

namespace fs = std::filesystem;
using weft::Dtype;
using weft::gpu::Arg;
using weft::gpu::Case;
using weft::runtime::HostTensor;

HostTensor F32(std::vector<double> values) {
  HostTensor t = HostTensor::Zeros(Dtype::F32, {static_cast<std::int64_t>(values.size())});
  for (std::size_t i = 0; i < values.size(); ++i)
    weft::runtime::StoreDouble(t, static_cast<std::int64_t>(i), values[i]);
  return t;
}

Case GemmLike() {
  Case c;
  c.name = "add-sm_80-4";
  c.kernel = "add";
  c.target = "sm_80";
  c.ptx = "kernel.ptx";
  c.entry = "add";
  c.grid[0] = 2;
  c.threads = 128;
  c.shared_bytes = 64 * 1024;
  c.persistent = true;
  c.persistent_blocks = 3;
  c.seed = 99;
  c.tolerance = 1e-2;
  c.flops = 2e12;
  Arg a;
  a.name = "a";
  a.dtype = Dtype::BF16;
  a.shape = {2, 8};
  a.input = "a.npy";
  Arg b = a;
  b.name = "b";
  b.shape = {4};
  b.input.clear();
  b.random_seed = 100;
  Arg out;
  out.name = "c";
  out.dtype = Dtype::F32;
  out.shape = {4};
  out.out = true;
  out.reference = "c.ref.npy";
  Arg n;
  n.kind = Arg::Kind::Size;
  n.name = "n";
  n.abi = "i64";
  n.int_value = 4;
  Arg scale;
  scale.kind = Arg::Kind::Scalar;
  scale.name = "scale";
  scale.abi = "f32";
  scale.float_value = 0.125;
  Arg map;
  map.kind = Arg::Kind::TensorMap;
  map.name = "a map";
  map.tensor = 0;
  map.dims = {8, 2};
  map.strides_bytes = {16};
  map.box = {8, 2};
  map.swizzle = 3;
  c.args = {a, b, out, n, scale, map};
  return c;
}

TEST_CASE("a manifest reads back as it was written", "[gpu_check]") {
  Case c = GemmLike();
  std::string error;
  auto back = weft::gpu::FromJson(weft::gpu::ToJson(c), error);
  REQUIRE(back);
  CHECK(error.empty());
  CHECK(back->name == c.name);
  CHECK(back->grid[0] == 2);
  CHECK(back->shared_bytes == 64 * 1024);
  CHECK(back->persistent);
  CHECK(back->persistent_blocks == 3);
  CHECK(back->tolerance == 1e-2);
  CHECK(back->flops == 2e12);
  REQUIRE(back->args.size() == 6);
  CHECK(back->args[0].dtype == Dtype::BF16);
  CHECK(back->args[0].input == "a.npy");
  CHECK(back->args[1].random_seed == std::optional<std::uint64_t>(100));
  CHECK(back->args[2].out);
  CHECK(back->args[2].reference == "c.ref.npy");
  CHECK(back->args[3].kind == Arg::Kind::Size);
  CHECK(back->args[3].int_value == 4);
  CHECK(back->args[4].float_value == 0.125);
  CHECK(back->args[5].kind == Arg::Kind::TensorMap);
  CHECK(back->args[5].swizzle == 3);
  CHECK(back->args[5].dims == std::vector<std::uint64_t>{8, 2});
}

TEST_CASE("a case that was not generated keeps its reason", "[gpu_check]") {
  Case c;
  c.name = "x";
  c.generated = false;
  c.reason = "error[E0750]: sm_90a kernels";
  std::string error;
  auto back = weft::gpu::FromJson(weft::gpu::ToJson(c), error);
  REQUIRE(back);
  CHECK_FALSE(back->generated);
  CHECK(back->reason == c.reason);
}

TEST_CASE("malformed manifests are refused with the reason", "[gpu_check]") {
  std::string error;
  CHECK_FALSE(weft::gpu::FromJson("{", error));
  CHECK_FALSE(error.empty());
  std::string text = weft::gpu::ToJson(GemmLike());
  std::string bad = text;
  bad.replace(bad.find("\"bf16\""), 6, "\"bf17\"");
  CHECK_FALSE(weft::gpu::FromJson(bad, error));
  CHECK(error.find("unknown dtype `bf17`") != std::string::npos);
  bad = text;
  bad.replace(bad.find("\"a.npy\""), 7, "\"\"");
  CHECK_FALSE(weft::gpu::FromJson(bad, error));
  CHECK(error.find("neither `input` nor `random_seed`") != std::string::npos);
  bad = text;
  bad.replace(bad.find("\"tensor\": 0"), 11, "\"tensor\": 3");
  CHECK_FALSE(weft::gpu::FromJson(bad, error));
  CHECK(error.find("not the index of a tensor") != std::string::npos);
  CHECK(weft::gpu::ParseDtype("f16") == Dtype::F16);
  CHECK_FALSE(weft::gpu::ParseDtype("half"));
}

TEST_CASE("outputs are judged by relative error and NaN and unwritten elements", "[gpu_check]") {
  HostTensor ref = F32({1, 2, 3, 4});
  auto close = weft::gpu::Compare(F32({1.001, 2, 3, 4}), ref, 1e-2);
  CHECK(close.pass);
  CHECK(close.relative == Approx(0.001 / std::sqrt(30.0)).epsilon(1e-3));
  CHECK(close.max_abs == Approx(0.001).epsilon(1e-3));
  CHECK(close.text.find("relative error 1.83e-04") != std::string::npos);
  CHECK_FALSE(weft::gpu::Compare(F32({1.001, 2, 3, 4}), ref, 1e-5).pass);  // f32's tolerance
  auto nan = weft::gpu::Compare(F32({1, 2, 3, std::numeric_limits<double>::quiet_NaN()}), ref, 1e-2);
  CHECK_FALSE(nan.pass);
  CHECK(nan.nans == 1);
  CHECK(nan.text.find("1 NaN") != std::string::npos);
  auto missing = weft::gpu::Compare(F32({1, 2, 0, 0}), ref, 1e-2);
  CHECK_FALSE(missing.pass);
  CHECK(missing.unwritten == 2);
  CHECK(missing.text.find("2 zeros where the reference is not") != std::string::npos);
  auto shape = weft::gpu::Compare(F32({1, 2, 3}), ref, 1e-2);
  CHECK_FALSE(shape.pass);
  CHECK(shape.text == "the output is f32[3], the reference f32[4]");
  HostTensor ints = HostTensor::Zeros(Dtype::I32, {3});
  HostTensor ints_ref = ints;
  weft::runtime::StoreInt64(ints_ref, 1, 7);
  auto bitwise = weft::gpu::Compare(ints, ints_ref, 1e-2);
  CHECK_FALSE(bitwise.pass);
  CHECK(bitwise.differ == 1);
  CHECK(weft::gpu::Compare(ints_ref, ints_ref, 1e-2).pass);
  CHECK(weft::gpu::Median({3, 1, 2}) == 2);
  CHECK(weft::gpu::Median({4, 1, 2, 3}) == 2.5);
}

// A case folder for the fake driver's `add` kernel: a bf16 input, a random one, an f32 output.
struct Folder {
  fs::path root;
  explicit Folder(const std::string& name) {
    root = fs::temp_directory_path() / ("weft_gpu_check_test_" + name + "_" + std::to_string(getpid()));
    fs::remove_all(root);
    fs::create_directories(root / "case");
  }
  ~Folder() { fs::remove_all(root); }
  void Write(const Case& c, const HostTensor& reference) {
    std::ofstream(root / "case" / "manifest.json") << weft::gpu::ToJson(c);
    std::ofstream(root / "case" / "kernel.ptx") << ".version 8.0\n.target sm_80\n.visible .entry add()\n{\n ret;\n}\n";
    HostTensor a = HostTensor::Zeros(Dtype::BF16, {2, 8});
    REQUIRE(weft::runtime::WriteNpy((root / "case" / "a.npy").string(), a));
    REQUIRE(weft::runtime::WriteNpy((root / "case" / "c.ref.npy").string(), reference));
  }
};

struct Ran {
  int status = -1;
  std::string output;
};

Ran RunGpuCheck(const std::string& env, const std::string& args) {
  std::string command = "WEFT_CUDA_LIBRARY='" WEFT_FAKE_CUDA "' " + env + " '" WEFT_GPU_CHECK "' " + args + " 2>&1";
  Ran r;
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe);
  char buffer[4096];
  std::size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) r.output.append(buffer, n);
  int status = pclose(pipe);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

Case FakeCase() {
  Case c = GemmLike();
  c.args.pop_back();  // the fake driver's GPU is sm_80: no tensor map
  return c;
}

TEST_CASE("gpu_check passes a case whose reference matches the zero-filled output", "[gpu_check]") {
  Folder f("pass");
  f.Write(FakeCase(), F32({0, 0, 0, 0}));
  Ran r = RunGpuCheck("", (f.root / "case").string() + " --time 3");
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK(r.output.find("PASS add-sm_80-4: c f32[4]: relative error 0.00e+00") != std::string::npos);
  CHECK(r.output.find("TIME add-sm_80-4: median") != std::string::npos);
  CHECK(r.output.find("TFLOP/s") != std::string::npos);
  CHECK(r.output.find("1 passed, 0 failed, 0 skipped") != std::string::npos);
}

TEST_CASE("gpu_check fails a case whose kernel did not write its output", "[gpu_check]") {
  Folder f("unwritten");
  f.Write(FakeCase(), F32({1, 2, 3, 4}));
  Ran r = RunGpuCheck("", f.root.string());  // the folder of cases
  INFO(r.output);
  CHECK(r.status == 1);
  CHECK(r.output.find("FAIL add-sm_80-4: c f32[4]: relative error 1.00e+00") != std::string::npos);
  CHECK(r.output.find("4 zeros where the reference is not") != std::string::npos);
  CHECK(r.output.find("0 passed, 1 failed") != std::string::npos);
}

TEST_CASE("gpu_check fails a case that was not generated and one whose entry is missing", "[gpu_check]") {
  Folder f("refused");
  Case c;
  c.name = "attention_d64-sm_90a-1x128x128";
  c.generated = false;
  c.reason = "error[E0750]: codegen cannot emit sm_90a kernels yet\n  --> stdlib/attention.weft:9:1";
  f.Write(FakeCase(), F32({0, 0, 0, 0}));
  std::ofstream(f.root / "case" / "manifest.json") << weft::gpu::ToJson(c);
  Ran r = RunGpuCheck("", (f.root / "case").string());
  INFO(r.output);
  CHECK(r.status == 1);
  CHECK(r.output.find("FAIL attention_d64-sm_90a-1x128x128: not generated: error[E0750]: codegen cannot emit sm_90a "
                      "kernels yet") != std::string::npos);
  Case missing = FakeCase();
  missing.entry = "nope";
  f.Write(missing, F32({0, 0, 0, 0}));
  r = RunGpuCheck("", (f.root / "case").string());
  INFO(r.output);
  CHECK(r.status == 1);
  CHECK(r.output.find("FAIL add-sm_80-4: entry: ") != std::string::npos);
}

TEST_CASE("gpu_check skips an sm_90a case on an sm_80 GPU", "[gpu_check]") {
  Folder f("sm90");
  Case c = FakeCase();
  c.target = "sm_90a";
  f.Write(c, F32({0, 0, 0, 0}));
  Ran r = RunGpuCheck("", (f.root / "case").string());
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK(r.output.find("SKIP add-sm_80-4: an sm_90a kernel; this GPU is sm_80") != std::string::npos);
}

TEST_CASE("gpu_check encodes the tensor maps of an sm_90a case on an sm_90 GPU", "[gpu_check]") {
  Folder f("tma");
  Case c = GemmLike();
  c.target = "sm_90a";
  f.Write(c, F32({0, 0, 0, 0}));
  Ran r = RunGpuCheck("WEFT_FAKE_CUDA_SM=90", (f.root / "case").string());
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK(r.output.find("PASS add-sm_80-4") != std::string::npos);
  // The runtime checks the map's arguments before the driver sees them: a box wider than the
  // 128-byte swizzle is refused, and the case fails naming the map.
  c.args.back().box = {128, 2};
  c.args.back().dims = {128, 2};
  c.args.back().strides_bytes = {256};
  f.Write(c, F32({0, 0, 0, 0}));
  r = RunGpuCheck("WEFT_FAKE_CUDA_SM=90", (f.root / "case").string());
  INFO(r.output);
  CHECK(r.status == 1);
  CHECK(r.output.find("FAIL add-sm_80-4: tensor map `a map`: ") != std::string::npos);
}

TEST_CASE("gpu_check without a GPU exits 77 which ctest reports as skipped", "[gpu_check]") {
  Folder f("nogpu");
  f.Write(FakeCase(), F32({0, 0, 0, 0}));
  Ran r = RunGpuCheck("WEFT_FAKE_CUDA_INIT=100", (f.root / "case").string());
  INFO(r.output);
  CHECK(r.status == 77);
  CHECK(r.output.find("skipped: ") != std::string::npos);
}

TEST_CASE("gpu_check's usage errors exit 2", "[gpu_check]") {
  CHECK(RunGpuCheck("", "").status == 2);
  CHECK(RunGpuCheck("", "--time 0 /tmp").status == 2);
  Ran r = RunGpuCheck("", "/nonexistent-folder");
  CHECK(r.status == 2);
  CHECK(r.output.find("`/nonexistent-folder` is not a folder") != std::string::npos);
}

}  // namespace

// ---- gpu_cases, the half here ----------------------------------------------------------------------

namespace {

struct Generated {
  fs::path out;
  Ran ran;
};

// gpu_cases on a case file of `lines` (files relative to tests/gpu/testdata), into a fresh folder.
Generated RunGpuCases(const std::string& name, const std::string& lines, const std::string& options = "") {
  Generated g;
  g.out = fs::temp_directory_path() / ("weft_gpu_cases_test_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(g.out);
  fs::create_directories(g.out);
  std::ofstream(g.out / "cases.txt") << lines;
  std::string command = std::string("'" WEFT_GPU_CASES "' --root '" WEFT_TESTDATA "' --out '") +
                        (g.out / "cases").string() + "' " + options + " '" + (g.out / "cases.txt").string() + "' 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe);
  char buffer[4096];
  std::size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) g.ran.output.append(buffer, n);
  int status = pclose(pipe);
  g.ran.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return g;
}

HostTensor Load(const fs::path& path) {
  auto t = weft::runtime::ReadNpy(path.string());
  REQUIRE(t);
  return std::move(*t);
}

}  // namespace

TEST_CASE("gpu_cases writes a case folder gpu_check can run and marks a refused kernel", "[gpu_cases]") {
  std::string ptxas = WEFT_PTXAS;
  Generated g = RunGpuCases("ok",
                            "# a comment\n"
                            "gen.weft copy sm_80 m=128 twice=true --flops=2*m*64   # trailing comment\n"
                            "gen.weft huge sm_80 m=256\n",
                            "--seed 5" + (ptxas.empty() ? std::string() : " --ptxas '" + ptxas + "'"));
  INFO(g.ran.output);
  CHECK(g.ran.status == 0);
  CHECK(g.ran.output.find("seed 5") != std::string::npos);
  CHECK(g.ran.output.find("GENERATED copy-sm_80-128-twice_true: grid 2,1,1, 128 threads") != std::string::npos);
  CHECK(g.ran.output.find("NOT GENERATED huge-sm_80-256: ") != std::string::npos);
  CHECK(g.ran.output.find("error[E0603]") != std::string::npos);
  CHECK(g.ran.output.find("1 generated, 1 not generated") != std::string::npos);

  fs::path copy = g.out / "cases" / "copy-sm_80-128-twice_true";
  std::string error;
  auto c = weft::gpu::ReadCase(copy.string(), error);
  REQUIRE(c);
  CHECK(c->generated);
  CHECK(c->entry == "copy");
  CHECK(c->threads == 128);
  CHECK(c->tolerance == 1e-5);  // f32 only
  CHECK(c->flops == 2 * 128 * 64);
  CHECK(c->seed == 5);
  CHECK(fs::exists(copy / c->ptx));
  CHECK(c->cubin.empty() == ptxas.empty());
  // The launch contract's order: tensors (the `out` one too), sizes, scalars (bool as i32).
  REQUIRE(c->args.size() == 4);
  CHECK((c->args[0].name == "x" && c->args[0].input == "x.npy" && !c->args[0].out));
  CHECK((c->args[1].name == "y" && c->args[1].out && c->args[1].reference == "y.ref.npy"));
  CHECK((c->args[2].kind == Arg::Kind::Size && c->args[2].name == "m" && c->args[2].abi == "i64" &&
         c->args[2].int_value == 128));
  CHECK((c->args[3].kind == Arg::Kind::Scalar && c->args[3].abi == "i32" && c->args[3].int_value == 1));
  // The inputs are centred (`random`'s [0, 1) mapped to [-1, 1)) and the reference is the
  // interpreter's: twice the input.
  HostTensor x = Load(copy / "x.npy"), y = Load(copy / "y.ref.npy");
  REQUIRE(x.shape == std::vector<std::int64_t>{128, 64});
  REQUIRE(y.shape == x.shape);
  double lowest = 0;
  std::int64_t wrong = 0;
  for (std::int64_t i = 0; i < x.Count(); ++i) {
    lowest = std::min(lowest, weft::runtime::LoadDouble(x, i));
    wrong += weft::runtime::LoadDouble(y, i) != 2 * weft::runtime::LoadDouble(x, i);
  }
  CHECK(lowest < -0.9);
  CHECK(wrong == 0);

  // The refused kernel's folder makes gpu_check fail, with the compiler's reason.
  auto huge = weft::gpu::ReadCase((g.out / "cases" / "huge-sm_80-256").string(), error);
  REQUIRE(huge);
  CHECK_FALSE(huge->generated);
  CHECK(huge->reason.find("error[E0603]") != std::string::npos);
  Ran r = RunGpuCheck("", (g.out / "cases" / "huge-sm_80-256").string());
  CHECK(r.status == 1);
  CHECK(r.output.find("FAIL huge-sm_80-256: not generated: ") != std::string::npos);

  // The same seed gives the same inputs; another gives others.
  Generated again = RunGpuCases("again", "gen.weft copy sm_80 m=128 twice=true\n", "--seed 5");
  Generated other = RunGpuCases("other", "gen.weft copy sm_80 m=128 twice=true\n", "--seed 6");
  CHECK(Load(again.out / "cases" / "copy-sm_80-128-twice_true" / "x.npy").bytes == x.bytes);
  CHECK(Load(other.out / "cases" / "copy-sm_80-128-twice_true" / "x.npy").bytes != x.bytes);
  for (const fs::path& p : {g.out, again.out, other.out}) fs::remove_all(p);
}

TEST_CASE("gpu_cases writes a timing case without inputs or reference but with seeds for the GPU's random",
          "[gpu_cases]") {
  Generated g = RunGpuCases("bench", "gen.weft copy sm_80 m=128 twice=false --no-reference\n", "--seed 9");
  INFO(g.ran.output);
  CHECK(g.ran.status == 0);
  CHECK(g.ran.output.find("inputs made on the GPU, no reference") != std::string::npos);
  fs::path dir = g.out / "cases" / "copy-sm_80-128-twice_false";
  std::string error;
  auto c = weft::gpu::ReadCase(dir.string(), error);
  REQUIRE(c);
  REQUIRE(c->generated);
  REQUIRE(c->args.size() == 4);
  CHECK(c->args[0].random_seed == std::optional<std::uint64_t>(9));  // seed + the parameter's index
  CHECK(c->args[1].reference.empty());
  CHECK(c->args[3].int_value == 0);
  CHECK_FALSE(fs::exists(dir / "x.npy"));
  CHECK_FALSE(fs::exists(dir / "y.ref.npy"));
  fs::remove_all(g.out);
}

TEST_CASE("gpu_cases reports each case's error and exits 1 and a malformed line is a usage error", "[gpu_cases]") {
  Generated g = RunGpuCases("errors",
                            "gen.weft copy sm_80 m=96 twice=true\n"
                            "gen.weft nope sm_80 m=64\n"
                            "gen.weft copy sm_70 m=64\n"
                            "gen.weft copy sm_80 m=64 twice=true --flops=2*q\n"
                            "missing.weft copy sm_80 m=64\n"
                            "gen.weft copy sm_80 m=128 twice=true --expect-error=is false\n");
  INFO(g.ran.output);
  CHECK(g.ran.status == 1);
  CHECK(g.ran.output.find("ERROR copy-sm_80-96-twice_true: ") != std::string::npos);
  CHECK(g.ran.output.find("`m % 64 == 0` is false with m = 96") != std::string::npos);
  CHECK(g.ran.output.find("gen.weft has no kernel `nope`") != std::string::npos);
  CHECK(g.ran.output.find("unknown target `sm_70`") != std::string::npos);
  CHECK(g.ran.output.find("`q` is neither a number nor a size or scalar of the kernel") != std::string::npos);
  CHECK(g.ran.output.find("missing.weft") != std::string::npos);
  CHECK(g.ran.output.find("expected the error `is false`, but the call was accepted") != std::string::npos);
  CHECK(g.ran.output.find("0 generated, 0 not generated") != std::string::npos);
  CHECK(g.ran.output.find("6 errors") != std::string::npos);
  // A case that must be refused leaves no folder for gpu_check; one that was refused by surprise
  // leaves a manifest saying why, which gpu_check fails.
  CHECK_FALSE(fs::exists(g.out / "cases" / "copy-sm_80-128-twice_true"));
  CHECK(fs::exists(g.out / "cases" / "copy-sm_80-96-twice_true" / "manifest.json"));
  fs::remove_all(g.out);

  Generated expected =
      RunGpuCases("expected", "gen.weft copy sm_80,sm_90a m=96 --expect-error=`m % 64 == 0` is false\n");
  CHECK(expected.ran.status == 0);
  CHECK(expected.ran.output.find("REFUSED AS EXPECTED copy-sm_90a-96: weft: the sizes break kernel `copy`'s `where` "
                                 "clause: `m % 64 == 0` is false with m = 96") != std::string::npos);
  CHECK(expected.ran.output.find("0 generated, 0 not generated (the compiler refused them: gpu_check fails them), 2 "
                                 "refused as expected, 0 errors") != std::string::npos);
  CHECK_FALSE(fs::exists(expected.out / "cases" / "copy-sm_80-96"));
  fs::remove_all(expected.out);

  Generated bad = RunGpuCases("usage", "gen.weft copy\n");
  CHECK(bad.ran.status == 2);
  CHECK(bad.ran.output.find("cases.txt:1: expected FILE KERNEL TARGETS NAME=VALUE...") != std::string::npos);
  fs::remove_all(bad.out);
  Generated option = RunGpuCases("option", "gen.weft copy sm_80 m=64 --fast\n");
  CHECK(option.ran.status == 2);
  CHECK(option.ran.output.find(
            "`--fast` is neither NAME=VALUE nor --flops=EXPR, --no-reference, --no-warp-specialization, "
            "--no-ping-pong, --no-staging, --persistent[=N] or --expect-error") != std::string::npos);
  fs::remove_all(option.out);
}
