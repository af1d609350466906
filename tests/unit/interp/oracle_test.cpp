// Every operation of ops.h against oracle.py's independently computed records: conversions at every
// f16/bf16/f8 bit pattern and tie, elementwise operators over broadcasting corners, integer floor
// division, reductions, `@`, shape operations, dequant and the closure built-ins.
#include <catch2/catch.hpp>

#include <sstream>

#include "interp/ops.h"
#include "oracle.h"
#include "weft/numerics.h"

namespace weft::interp {
namespace {

using runtime::HostTensor;
using test::Record;

Dtype DtypeNamed(const std::string& text) {
#define WEFT_DTYPE(Name, Spelling, Bits) \
  if (text == Spelling) return Dtype::Name;
#include "base/dtypes.def"
  FAIL("unknown dtype " << text);
  return Dtype::F32;
}

std::vector<std::string> Split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, separator);) parts.push_back(part);
  return parts;
}

Shape ShapeOf(const std::string& text) {
  Shape shape;
  for (const std::string& d : Split(text, ',')) shape.push_back(std::stoll(d));
  return shape;
}

// "name:param" -> param
std::string Param(const std::string& op) {
  return op.substr(op.find(':') + 1);
}

OpResult Apply(const Record& r) {
  const std::string name = r.op.substr(0, r.op.find(':'));
  const std::vector<HostTensor>& in = r.inputs;
  static const std::pair<const char*, BinaryOp> kBinary[] = {
      {"add", BinaryOp::Add}, {"sub", BinaryOp::Sub},         {"mul", BinaryOp::Mul},        {"div", BinaryOp::Div},
      {"mod", BinaryOp::Mod}, {"eq", BinaryOp::Eq},           {"ne", BinaryOp::Ne},          {"lt", BinaryOp::Lt},
      {"le", BinaryOp::Le},   {"gt", BinaryOp::Gt},           {"ge", BinaryOp::Ge},          {"and", BinaryOp::And},
      {"or", BinaryOp::Or},   {"maximum", BinaryOp::Maximum}, {"minimum", BinaryOp::Minimum}};
  for (const auto& [text, op] : kBinary) {
    if (name == text) return Binary(op, in[0], in[1]);
  }
  static const std::pair<const char*, UnaryOp> kUnary[] = {
      {"neg", UnaryOp::Neg},   {"abs", UnaryOp::Abs},     {"exp", UnaryOp::Exp},   {"log", UnaryOp::Log},
      {"sqrt", UnaryOp::Sqrt}, {"rsqrt", UnaryOp::Rsqrt}, {"tanh", UnaryOp::Tanh}, {"sigmoid", UnaryOp::Sigmoid},
      {"sin", UnaryOp::Sin},   {"cos", UnaryOp::Cos}};
  for (const auto& [text, op] : kUnary) {
    if (name == text) return Unary(op, in[0]);
  }
  static const std::pair<const char*, ReduceOp> kReduce[] = {
      {"sum", ReduceOp::Sum}, {"max", ReduceOp::Max}, {"min", ReduceOp::Min}, {"mean", ReduceOp::Mean}};
  for (const auto& [text, op] : kReduce) {
    if (name == text) return Reduce(op, in[0]);
  }
  auto add = [](const HostTensor& a, const HostTensor& b) { return Binary(BinaryOp::Add, a, b); };
  if (name == "select") return Select(in[0], in[1], in[2]);
  if (name == "argmax") return Argmax(in[0]);
  if (name == "matmul") return MatMul(in[0], in[1]);
  if (name == "matmul_f32") return MatMulF32(in[0], in[1]);
  if (name == "transpose") return Transpose(in[0]);
  if (name == "permute") {
    std::vector<int> p;
    for (std::int64_t a : ShapeOf(Param(r.op))) p.push_back(static_cast<int>(a));
    return Permute(p, in[0]);
  }
  if (name == "reshape") return Reshape(ShapeOf(Param(r.op)), in[0]);
  if (name == "concat") return Concat(in[0], in[1]);
  if (name == "expand") return Expand(in[0]);
  if (name == "gather") return Gather(in[0], in[1]);
  if (name == "full") return Full(ShapeOf(Param(r.op)), in[0]);
  if (name == "iota") return Iota(std::stoll(Param(r.op)));
  if (name == "cast") return Cast(DtypeNamed(Param(r.op)), in[0]);
  if (name == "dequant") return Dequant(std::stoll(Param(r.op)), in[0], in[1]);
  if (name == "stack" || name == "ones" || name == "zeros") {
    std::vector<std::string> parts = Split(Param(r.op), ':');
    Dtype dtype = DtypeNamed(parts[0]);
    Shape shape = parts.size() > 1 ? ShapeOf(parts[1]) : Shape{};
    if (name == "ones") return Ones(dtype, shape);
    if (name == "zeros") return Zeros(dtype, shape);
    return Stack(dtype, shape, in);
  }
  if (name == "index") {
    std::vector<IndexItem> items;
    for (const std::string& item : Split(Param(r.op), '|')) {
      if (item == "_") {
        items.push_back(All{});
      } else if (auto colon = item.find(':'); colon != std::string::npos) {
        items.push_back(Slice{std::stoll(item.substr(0, colon)), std::stoll(item.substr(colon + 1))});
      } else {
        items.push_back(std::stoll(item));
      }
    }
    return Index(in[0], items);
  }
  if (name == "literal") {
    std::string param = Param(r.op);
    std::size_t colon = param.find(':');
    Dtype dtype = DtypeNamed(param.substr(0, colon));
    auto bits = runtime::EncodeFloatLiteral(dtype, param.substr(colon + 1));
    if (!bits) return OpError{"not a number: " + param};
    HostTensor t = HostTensor::Zeros(dtype, {});
    runtime::StoreBits(t, 0, *bits);
    return t;
  }
  if (name == "reduce_add") return ReduceWith(add, in[0], in[1]);
  if (name == "scan_add") return ScanWith(add, in[0], in[1]);
  if (name == "map_square") {
    return Map([](const HostTensor& x) { return Binary(BinaryOp::Mul, x, x); }, in[0], in[0].dtype);
  }
  if (name == "map2_sub") {
    return Map2([](const HostTensor& x, const HostTensor& y) { return Binary(BinaryOp::Sub, x, y); }, in[0], in[1],
                in[0].dtype);
  }
  return OpError{"the test does not know op " + r.op};
}

// Runs every record of the given ops; returns how many ran.
int CheckRecords(std::initializer_list<const char*> ops, int ulps = 0) {
  const test::Oracle& oracle = test::LoadOracle();
  if (!oracle.error.empty()) FAIL(oracle.error);
  int count = 0;
  for (const char* op : ops) {
    for (const Record* r : test::RecordsFor(op)) {
      ++count;
      INFO(r->line);
      OpResult got = Apply(*r);
      if (!got) FAIL("error: " << got.error().message);
      std::string why;
      bool same = test::SameTensor(*got, r->expected, &why, ulps);
      if (!same) {
        INFO("got      " << test::Describe(*got));
        INFO("expected " << test::Describe(r->expected));
        FAIL(why);
      }
    }
  }
  return count;
}

TEST_CASE("casts between every dtype match the reference rounding", "[interp][oracle]") {
  CHECK(CheckRecords({"cast"}) > 100);
}

TEST_CASE("per-element stores round like cast", "[interp][oracle]") {
  // The runtime's element access (numerics.h) against the same records as Cast.
  const test::Oracle& oracle = test::LoadOracle();
  if (!oracle.error.empty()) FAIL(oracle.error);
  for (const Record* r : test::RecordsFor("cast")) {
    INFO(r->line);
    const HostTensor& x = r->inputs[0];
    HostTensor got = HostTensor::Zeros(r->expected.dtype, x.shape);
    for (std::int64_t i = 0; i < x.Count(); ++i) {
      if (runtime::IsFloatDtype(x.dtype)) {
        runtime::StoreDouble(got, i, runtime::LoadDouble(x, i));
      } else if (runtime::IsSignedDtype(x.dtype)) {
        runtime::StoreInt64(got, i, runtime::LoadInt64(x, i));
      } else {
        runtime::StoreUint64(got, i, runtime::LoadUint64(x, i));
      }
    }
    std::string why;
    if (!test::SameTensor(got, r->expected, &why)) FAIL(why);
  }
}

TEST_CASE("elementwise arithmetic matches numpy over broadcasting corners", "[interp][oracle]") {
  CHECK(CheckRecords({"add", "sub", "mul", "div", "mod", "maximum", "minimum"}) > 500);
}

TEST_CASE("comparisons and logic match numpy", "[interp][oracle]") {
  CHECK(CheckRecords({"eq", "ne", "lt", "le", "gt", "ge", "and", "or"}) > 500);
}

TEST_CASE("unary functions match f64 results rounded to the type", "[interp][oracle]") {
  CHECK(CheckRecords({"neg", "abs"}) > 10);
  CHECK(CheckRecords({"exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "sin", "cos"}, /*ulps=*/1) > 40);
}

TEST_CASE("select broadcasts its three operands", "[interp][oracle]") {
  CHECK(CheckRecords({"select"}) == 4);
}

TEST_CASE("reductions accumulate in f32 in index order", "[interp][oracle]") {
  CHECK(CheckRecords({"sum", "mean", "max", "min", "argmax"}) > 100);
}

TEST_CASE("matmul accumulates in f32 and broadcasts batch dims", "[interp][oracle]") {
  CHECK(CheckRecords({"matmul", "matmul_f32"}) > 80);
}

TEST_CASE("shape operations move bits like numpy", "[interp][oracle]") {
  CHECK(CheckRecords({"transpose", "permute", "reshape", "concat", "expand", "index", "gather", "full", "stack", "iota",
                      "ones", "zeros"}) > 80);
}

TEST_CASE("decimal literals round once from their exact value", "[interp][oracle]") {
  CHECK(CheckRecords({"literal"}) > 400);
}

TEST_CASE("dequant scales groups and rounds once", "[interp][oracle]") {
  CHECK(CheckRecords({"dequant"}) == 5);
}

TEST_CASE("map map2 reduce and scan call the closure per element", "[interp][oracle]") {
  CHECK(CheckRecords({"reduce_add", "scan_add", "map_square", "map2_sub"}) == 16);
}

}  // namespace
}  // namespace weft::interp
