// The GPU test case format; see gpu_case.h.
#include "gpu_case.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "weft/numerics.h"

namespace weft::gpu {

namespace {

using nlohmann::json;

const char* KindName(Arg::Kind kind) {
  switch (kind) {
    case Arg::Kind::Tensor:
      return "tensor";
    case Arg::Kind::Size:
      return "size";
    case Arg::Kind::Scalar:
      return "scalar";
    case Arg::Kind::TensorMap:
      return "tensor_map";
  }
  return "?";
}

std::string Format(const char* format, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, value);
  return buffer;
}

}  // namespace

std::optional<Dtype> ParseDtype(const std::string& text) {
#define WEFT_DTYPE(Name, Spelling, Bits) \
  if (text == Spelling) return Dtype::Name;
#include "base/dtypes.def"
  return std::nullopt;
}

std::string ToJson(const Case& c) {
  json j;
  j["name"] = c.name;
  j["source"] = c.source;
  j["kernel"] = c.kernel;
  j["target"] = c.target;
  j["generated"] = c.generated;
  if (!c.generated) j["reason"] = c.reason;
  j["ptx"] = c.ptx;
  j["cubin"] = c.cubin;
  j["entry"] = c.entry;
  j["grid"] = {c.grid[0], c.grid[1], c.grid[2]};
  j["threads"] = c.threads;
  j["shared_bytes"] = c.shared_bytes;
  j["persistent"] = c.persistent;
  j["persistent_blocks"] = c.persistent_blocks;
  j["seed"] = c.seed;
  j["tolerance"] = c.tolerance;
  j["flops"] = c.flops;
  json args = json::array();
  for (const Arg& a : c.args) {
    json x;
    x["kind"] = KindName(a.kind);
    x["name"] = a.name;
    switch (a.kind) {
      case Arg::Kind::Tensor:
        x["dtype"] = std::string(Spelling(a.dtype));
        x["shape"] = a.shape;
        x["out"] = a.out;
        if (!a.input.empty()) x["input"] = a.input;
        if (a.random_seed) x["random_seed"] = *a.random_seed;
        if (!a.reference.empty()) x["reference"] = a.reference;
        break;
      case Arg::Kind::Size:
      case Arg::Kind::Scalar:
        x["abi"] = a.abi;
        if (a.abi == "f32" || a.abi == "f64")
          x["value"] = a.float_value;
        else
          x["value"] = a.int_value;
        break;
      case Arg::Kind::TensorMap:
        x["tensor"] = a.tensor;
        x["dims"] = a.dims;
        x["strides_bytes"] = a.strides_bytes;
        x["box"] = a.box;
        x["swizzle"] = a.swizzle;
        break;
    }
    args.push_back(x);
  }
  j["args"] = args;
  return j.dump(1) + "\n";
}

std::optional<Case> FromJson(const std::string& text, std::string& error) {
  try {
    json j = json::parse(text);
    Case c;
    c.name = j.at("name").get<std::string>();
    c.source = j.value("source", "");
    c.kernel = j.value("kernel", "");
    c.target = j.value("target", "");
    c.generated = j.at("generated").get<bool>();
    c.reason = j.value("reason", "");
    if (!c.generated) return c;
    c.ptx = j.at("ptx").get<std::string>();
    c.cubin = j.value("cubin", "");
    c.entry = j.at("entry").get<std::string>();
    const json& grid = j.at("grid");
    if (!grid.is_array() || grid.size() != 3) throw std::runtime_error("`grid` is not 3 numbers");
    for (int d = 0; d < 3; ++d) c.grid[d] = grid[d].get<std::uint32_t>();
    c.threads = j.at("threads").get<std::uint32_t>();
    c.shared_bytes = j.at("shared_bytes").get<std::uint32_t>();
    c.persistent = j.value("persistent", false);
    c.persistent_blocks = j.value("persistent_blocks", std::uint32_t{0});
    c.seed = j.value("seed", std::uint64_t{0});
    c.tolerance = j.at("tolerance").get<double>();
    c.flops = j.value("flops", 0.0);
    for (const json& x : j.at("args")) {
      Arg a;
      std::string kind = x.at("kind").get<std::string>();
      a.name = x.value("name", "");
      if (kind == "tensor") {
        a.kind = Arg::Kind::Tensor;
        std::string dtype = x.at("dtype").get<std::string>();
        auto parsed = ParseDtype(dtype);
        if (!parsed) throw std::runtime_error("argument `" + a.name + "`: unknown dtype `" + dtype + "`");
        a.dtype = *parsed;
        a.shape = x.at("shape").get<std::vector<std::int64_t>>();
        a.out = x.value("out", false);
        a.input = x.value("input", "");
        if (x.contains("random_seed")) a.random_seed = x.at("random_seed").get<std::uint64_t>();
        a.reference = x.value("reference", "");
        if (!a.out && a.input.empty() && !a.random_seed)
          throw std::runtime_error("input tensor `" + a.name + "` has neither `input` nor `random_seed`");
      } else if (kind == "size" || kind == "scalar") {
        a.kind = kind == "size" ? Arg::Kind::Size : Arg::Kind::Scalar;
        a.abi = x.at("abi").get<std::string>();
        if (a.abi == "f32" || a.abi == "f64")
          a.float_value = x.at("value").get<double>();
        else if (a.abi == "i64" || a.abi == "i32")
          a.int_value = x.at("value").get<std::int64_t>();
        else
          throw std::runtime_error("argument `" + a.name + "`: unknown abi `" + a.abi + "`");
      } else if (kind == "tensor_map") {
        a.kind = Arg::Kind::TensorMap;
        a.tensor = x.at("tensor").get<int>();
        a.dims = x.at("dims").get<std::vector<std::uint64_t>>();
        a.strides_bytes = x.at("strides_bytes").get<std::vector<std::uint64_t>>();
        a.box = x.at("box").get<std::vector<std::uint32_t>>();
        a.swizzle = x.at("swizzle").get<int>();
        if (a.tensor < 0 || a.tensor >= static_cast<int>(c.args.size()) ||
            c.args[static_cast<std::size_t>(a.tensor)].kind != Arg::Kind::Tensor)
          throw std::runtime_error("tensor map `" + a.name + "`: `tensor` is not the index of a tensor before it");
        if (a.dims.empty() || a.dims.size() != a.box.size() || a.strides_bytes.size() + 1 != a.dims.size())
          throw std::runtime_error("tensor map `" + a.name + "`: dims, strides_bytes and box do not agree in rank");
      } else {
        throw std::runtime_error("unknown argument kind `" + kind + "`");
      }
      c.args.push_back(std::move(a));
    }
    return c;
  } catch (const std::exception& e) {
    error = e.what();
    return std::nullopt;
  }
}

std::optional<Case> ReadCase(const std::string& dir, std::string& error) {
  std::string path = dir + "/manifest.json";
  std::ifstream in(path);
  if (!in) {
    error = path + ": cannot open";
    return std::nullopt;
  }
  std::stringstream text;
  text << in.rdbuf();
  auto c = FromJson(text.str(), error);
  if (!c) error = path + ": " + error;
  return c;
}

Comparison Compare(const runtime::HostTensor& out, const runtime::HostTensor& ref, double tolerance) {
  Comparison r;
  if (out.dtype != ref.dtype || out.shape != ref.shape) {
    r.text = "the output is " + std::string(Spelling(out.dtype)) + runtime::ShapeText(out.shape) + ", the reference " +
             std::string(Spelling(ref.dtype)) + runtime::ShapeText(ref.shape);
    return r;
  }
  std::int64_t n = out.Count();
  if (!runtime::IsFloatDtype(out.dtype)) {
    for (std::int64_t i = 0; i < n; ++i) {
      std::uint64_t got = runtime::LoadBits(out, i), want = runtime::LoadBits(ref, i);
      r.differ += got != want;
      r.unwritten += got == 0 && want != 0;
    }
    r.pass = r.differ == 0;
    r.text = std::to_string(r.differ) + " of " + std::to_string(n) + " elements differ (bitwise comparison)";
  } else {
    double diff2 = 0, ref2 = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      double g = runtime::LoadDouble(out, i), w = runtime::LoadDouble(ref, i);
      if (std::isnan(g)) {
        ++r.nans;
        continue;
      }
      r.unwritten += g == 0 && w != 0;
      r.max_abs = std::max(r.max_abs, std::abs(g - w));
      diff2 += (g - w) * (g - w);
      ref2 += w * w;
    }
    r.relative = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
    r.pass = r.nans == 0 && r.relative < tolerance && std::isfinite(r.relative);
    r.text = "relative error " + Format("%.2e", r.relative) + ", max abs error " + Format("%.3g", r.max_abs) +
             " (tolerance " + Format("%.0e", tolerance) + ")";
    if (r.nans) r.text += ", " + std::to_string(r.nans) + " NaN";
  }
  // A few zeros where the reference has values can be rounding (a bf16 product of 0); many are
  // elements the kernel never wrote. Worth saying either way when the comparison fails.
  if (!r.pass && r.unwritten) r.text += ", " + std::to_string(r.unwritten) + " zeros where the reference is not";
  return r;
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  std::size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

}  // namespace weft::gpu
