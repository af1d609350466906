#include "test_python.h"

#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

namespace weft::runtime::testing {

std::string MakeTempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string pattern = std::string(base && *base ? base : "/tmp") + "/weft-runtime-test-XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (!mkdtemp(buffer.data())) FAIL("cannot create a temporary directory from " << pattern);
  return buffer.data();
}

std::string RunNumpy(const std::string& script, const std::string& args) {
  std::string python = WEFT_NUMPY_PYTHON;
  if (python.empty()) {
    FAIL(
        "this test needs a python3 with numpy (Debian's python3-numpy) and CMake found none: run `make deps`, "
        "then configure again");
  }
  std::string dir = MakeTempDir();
  std::string path = dir + "/script.py";
  WriteFile(path, script);
  std::string command = "'" + python + "' '" + path + "' " + args;
  std::FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) FAIL("cannot run " << command);
  std::string out;
  char buffer[4096];
  std::size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
  int status = pclose(pipe);
  std::remove(path.c_str());
  std::remove(dir.c_str());
  if (status != 0) {
    FAIL(command << " failed (status " << status << "); a missing numpy means: run `make deps`\n" << out);
  }
  return out;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) FAIL("cannot open " << path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
  if (!out) FAIL("cannot write " << path);
}

}  // namespace weft::runtime::testing
