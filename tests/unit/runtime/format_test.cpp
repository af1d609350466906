// `print` (runtime/include/weft/format.h) against NumPy's own output: numpy_print_cases.py writes
// arrays (1-D to 4-D, empty, summarized, wrapped, every dtype, nan/inf, mixed magnitudes) with the
// text NumPy prints for them, and scalars of every f16/bf16/f8 pattern and a sample of f32/f64
// ones; FormatTensor must print the same.
#include "weft/format.h"

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "test_python.h"
#include "weft/npy.h"
#include "weft/numerics.h"

namespace weft::runtime {
namespace {

using testing::MakeTempDir;
using testing::ReadFile;
using testing::RunNumpy;

// Runs the oracle for `what` (`arrays` or a dtype's scalars) and returns the directory of its files.
std::string CasesDir(const std::string& what) {
  std::string dir = MakeTempDir();
  std::string script = ReadFile(std::string(WEFT_SOURCE_DIR) + "/tests/unit/runtime/numpy_print_cases.py");
  RunNumpy(script, "'" + dir + "' " + what);
  return dir;
}

TEST_CASE("FormatTensor prints arrays as numpy prints them") {
  const std::string dir = CasesDir("arrays");
  std::istringstream names(ReadFile(dir + "/cases.txt"));
  std::string name;
  int cases = 0;
  while (std::getline(names, name)) {
    if (name.empty()) continue;
    ++cases;
    auto tensor = ReadNpy(dir + "/" + name + ".npy");
    REQUIRE(tensor.ok());
    std::string expected = ReadFile(dir + "/" + name + ".txt");
    INFO("case " << name << " (" << Spelling(tensor->dtype) << ShapeText(tensor->shape) << ")\nnumpy:\n" << expected);
    CHECK(FormatTensor(*tensor) == expected);
  }
  CHECK(cases >= 130);
  std::filesystem::remove_all(dir);
}

void CheckScalars(Dtype dtype, int min_lines) {
  std::string name(Spelling(dtype));
  std::string dir = CasesDir(name);
  std::istringstream lines(ReadFile(dir + "/scalars_" + name + ".txt"));
  std::filesystem::remove_all(dir);
  std::string hex, expected;
  int n = 0, failures = 0;
  while (lines >> hex >> expected) {
    ++n;
    HostTensor t = HostTensor::Zeros(dtype, {});
    StoreBits(t, 0, std::stoull(hex, nullptr, 16));
    std::string got = FormatTensor(t);
    if (got != expected && ++failures <= 20) {
      INFO("pattern 0x" << hex);
      CHECK(got == expected);
    }
  }
  CHECK(failures == 0);
  CHECK(n >= min_lines);
}

TEST_CASE("Every f16 scalar prints as numpy.float16 does") {
  CheckScalars(Dtype::F16, 65536);
}
TEST_CASE("bf16 scalars print their shortest round-tripping decimal") {
  CheckScalars(Dtype::BF16, 5000);
}
TEST_CASE("Every f8e4m3 and f8e5m2 scalar prints its shortest round-tripping decimal") {
  CheckScalars(Dtype::F8E4M3, 250);
  CheckScalars(Dtype::F8E5M2, 240);
}
TEST_CASE("f32 and f64 scalars print as numpy scalars do") {
  CheckScalars(Dtype::F32, 20000);
  CheckScalars(Dtype::F64, 22000);
}

// A few fixed expectations, readable without numpy at hand (each is what NumPy 1.24 prints).
TEST_CASE("FormatTensor basics") {
  HostTensor b = HostTensor::Zeros(Dtype::Bool, {2});
  b.bytes[0] = 1;
  CHECK(FormatTensor(b) == "[ True False]");
  HostTensor i = HostTensor::Zeros(Dtype::I32, {2, 2});
  StoreInt64(i, 0, -5);
  StoreInt64(i, 3, 10);
  CHECK(FormatTensor(i) == "[[-5  0]\n [ 0 10]]");
  HostTensor f = HostTensor::Zeros(Dtype::F32, {2});
  StoreDouble(f, 0, 1.0);
  StoreDouble(f, 1, 2.5);
  CHECK(FormatTensor(f) == "[1.  2.5]");
  HostTensor s = HostTensor::Zeros(Dtype::F64, {});
  StoreDouble(s, 0, 1.5);
  CHECK(FormatTensor(s) == "1.5");
  CHECK(FormatTensor(HostTensor::Zeros(Dtype::U8, {0})) == "[]");
}

// NumPy stops at 32 dims; weft does not, and the printer must not recurse once per axis.
TEST_CASE("FormatTensor prints a tensor of very high rank") {
  const std::size_t rank = 3000;
  HostTensor t = HostTensor::Zeros(Dtype::I8, std::vector<std::int64_t>(rank, 1));
  CHECK(FormatTensor(t) == std::string(rank, '[') + "0" + std::string(rank, ']'));
}

}  // namespace
}  // namespace weft::runtime
