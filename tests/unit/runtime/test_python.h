// The runtime tests' oracle is NumPy, run in a Python found at configure time (WEFT_NUMPY_PYTHON):
// scripts write .npy files for the reader, read the writer's files, and print arrays. Without numpy
// the calling test fails and says to run `make deps`.
#pragma once

#include <string>

namespace weft::runtime::testing {

// A fresh directory under $TMPDIR (or /tmp) for one test's files.
std::string MakeTempDir();

// Runs `script` with the numpy Python, with `args` appended to its command line (already quoted as
// the shell needs), and returns its stdout. A failure to start or a non-zero exit fails the test.
std::string RunNumpy(const std::string& script, const std::string& args = "");

// The file's bytes; `WriteFile` replaces them.
std::string ReadFile(const std::string& path);
void WriteFile(const std::string& path, const std::string& bytes);

}  // namespace weft::runtime::testing
