// Runs oracle.py with the Python that CMake found to have numpy and parses its records.
#include "oracle.h"

#include <cmath>
#include <cstdio>
#include <memory>
#include <sstream>

#include "weft/numerics.h"

namespace weft::interp::test {
namespace {

Dtype ParseDtype(const std::string& text) {
#define WEFT_DTYPE(Name, Spelling, Bits) \
  if (text == Spelling) return Dtype::Name;
#include "base/dtypes.def"
  throw std::runtime_error("unknown dtype " + text);
}

// `f32[2,3]=3f800000,0,...`
runtime::HostTensor ParseTensor(const std::string& text) {
  std::size_t open = text.find('['), close = text.find(']'), eq = text.find('=');
  if (open == std::string::npos || close == std::string::npos || eq == std::string::npos)
    throw std::runtime_error("bad tensor " + text.substr(0, 80));
  std::vector<std::int64_t> shape;
  std::stringstream dims(text.substr(open + 1, close - open - 1));
  for (std::string d; std::getline(dims, d, ',');) shape.push_back(std::stoll(d));
  runtime::HostTensor t = runtime::HostTensor::Zeros(ParseDtype(text.substr(0, open)), shape);
  std::stringstream bits(text.substr(eq + 1));
  std::int64_t i = 0;
  for (std::string b; std::getline(bits, b, ',');) {
    if (i >= t.Count()) throw std::runtime_error("too many elements in " + text.substr(0, 80));
    runtime::StoreBits(t, i++, std::stoull(b, nullptr, 16));
  }
  if (i != t.Count()) throw std::runtime_error("too few elements in " + text.substr(0, 80));
  return t;
}

Record ParseRecord(const std::string& line) {
  std::stringstream in(line);
  Record r;
  r.line = line.size() > 300 ? line.substr(0, 300) + "..." : line;
  in >> r.op;
  bool arrow = false;
  for (std::string word; in >> word;) {
    if (word == "->") {
      arrow = true;
    } else if (arrow) {
      r.expected = ParseTensor(word);
    } else {
      r.inputs.push_back(ParseTensor(word));
    }
  }
  return r;
}

Oracle Run() {
  Oracle oracle;
  std::string python = WEFT_NUMPY_PYTHON;
  if (python.empty()) {
    oracle.error =
        "no python3 with numpy was found when configuring: run `make deps` (python3-numpy), then cmake again";
    return oracle;
  }
  std::string command = python + " " + WEFT_SOURCE_DIR "/tests/unit/interp/oracle.py";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  if (!pipe) {
    oracle.error = "cannot run " + command;
    return oracle;
  }
  std::string line;
  char buffer[1 << 16];
  while (std::fgets(buffer, sizeof buffer, pipe.get())) {
    line += buffer;
    if (line.back() != '\n') continue;
    line.pop_back();
    try {
      oracle.records.push_back(ParseRecord(line));
    } catch (const std::exception& e) {
      oracle.error = std::string("cannot parse oracle.py's output: ") + e.what();
      return oracle;
    }
    line.clear();
  }
  int status = pclose(pipe.release());
  if (status != 0) {
    oracle.error = command + " failed (status " + std::to_string(status) +
                   "); if it says numpy is missing, run `make deps` (python3-numpy)";
  }
  return oracle;
}

bool IsNan(const runtime::HostTensor& t, std::int64_t i) {
  return runtime::IsFloatDtype(t.dtype) && std::isnan(runtime::LoadDouble(t, i));
}

}  // namespace

const Oracle& LoadOracle() {
  static const Oracle oracle = Run();
  return oracle;
}

std::vector<const Record*> RecordsFor(const std::string& op) {
  std::vector<const Record*> out;
  for (const Record& r : LoadOracle().records) {
    if (r.op == op || r.op.rfind(op + ":", 0) == 0) out.push_back(&r);
  }
  return out;
}

bool SameTensor(const runtime::HostTensor& got, const runtime::HostTensor& expected, std::string* why, int ulps) {
  if (got.dtype != expected.dtype || got.shape != expected.shape) {
    *why = "got " + std::string(Spelling(got.dtype)) + runtime::ShapeText(got.shape) + ", expected " +
           std::string(Spelling(expected.dtype)) + runtime::ShapeText(expected.shape);
    return false;
  }
  for (std::int64_t i = 0; i < got.Count(); ++i) {
    std::uint64_t a = runtime::LoadBits(got, i), b = runtime::LoadBits(expected, i);
    if (a == b || (IsNan(got, i) && IsNan(expected, i))) continue;
    if (ulps > 0 && got.dtype == Dtype::F64) {
      std::int64_t d = static_cast<std::int64_t>(a) - static_cast<std::int64_t>(b);
      if ((a >> 63) == (b >> 63) && d >= -ulps && d <= ulps) continue;
    }
    char text[160];
    std::snprintf(text, sizeof text, "element %lld: got bits %llx (%.9g), expected %llx (%.9g)",
                  static_cast<long long>(i), static_cast<unsigned long long>(a), runtime::LoadDouble(got, i),
                  static_cast<unsigned long long>(b), runtime::LoadDouble(expected, i));
    *why = text;
    return false;
  }
  return true;
}

std::string Describe(const runtime::HostTensor& t, int limit) {
  std::string out = std::string(Spelling(t.dtype)) + runtime::ShapeText(t.shape) + ":";
  for (std::int64_t i = 0; i < t.Count() && i < limit; ++i) {
    char text[40];
    std::snprintf(text, sizeof text, " %.9g", runtime::LoadDouble(t, i));
    out += text;
  }
  if (t.Count() > limit) out += " ...";
  return out;
}

}  // namespace weft::interp::test
