// The records of oracle.py (expected results computed by NumPy and a reference rounding, never by
// weft's own code), run once per test binary and parsed into tensors.
#pragma once

#include <string>
#include <vector>

#include "weft/tensor.h"

namespace weft::interp::test {

struct Record {
  std::string line;  // as printed, for failure messages (inputs and expected shortened)
  std::string op;    // "add", "cast:f16", "index:1|0:2", ...
  std::vector<runtime::HostTensor> inputs;
  runtime::HostTensor expected;
};

// Every record, or an error message (numpy missing: "... run `make deps`").
struct Oracle {
  std::vector<Record> records;
  std::string error;
};
const Oracle& LoadOracle();

// Records whose op is `op` or starts with `op` followed by ':'.
std::vector<const Record*> RecordsFor(const std::string& op);

// Whether two tensors agree: same dtype, shape and bits, except that any NaN equals any NaN.
// `ulps` allows that much difference in f64 results (for the platform's libm).
bool SameTensor(const runtime::HostTensor& got, const runtime::HostTensor& expected, std::string* why, int ulps = 0);

// `f32[2, 3]: 1, 2.5, nan ...`, for messages.
std::string Describe(const runtime::HostTensor& t, int limit = 16);

}  // namespace weft::interp::test
