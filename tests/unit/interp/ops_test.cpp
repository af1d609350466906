// ops.h on hand-derived cases: error messages, signed zeros, rounding once per operation, integer
// wrapping and floor division at the extremes, closures that fail. Derivations in comments.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>

#include "interp/ops.h"
#include "weft/numerics.h"

namespace weft::interp {
namespace {

HostTensor Vector(Dtype dtype, std::initializer_list<double> values) {
  HostTensor t = HostTensor::Zeros(dtype, {static_cast<std::int64_t>(values.size())});
  std::int64_t i = 0;
  for (double v : values) runtime::StoreDouble(t, i++, v);
  return t;
}

HostTensor Ints(Dtype dtype, std::initializer_list<std::int64_t> values) {
  HostTensor t = HostTensor::Zeros(dtype, {static_cast<std::int64_t>(values.size())});
  std::int64_t i = 0;
  for (std::int64_t v : values) runtime::StoreInt64(t, i++, v);
  return t;
}

HostTensor Bits16(Dtype dtype, std::uint16_t bits) {
  HostTensor t = HostTensor::Zeros(dtype, {});
  runtime::StoreBits(t, 0, bits);
  return t;
}

HostTensor Ok(OpResult r) {
  if (!r) FAIL("unexpected error: " << r.error().message);
  return std::move(*r);
}

std::string ErrorOf(const OpResult& r) {
  return r ? std::string("(no error)") : r.error().message;
}

TEST_CASE("run-time errors state the values", "[interp]") {
  HostTensor x = Ok(Iota(5));
  CHECK(ErrorOf(Index(x, {std::int64_t{7}})) == "index 7 is out of bounds for axis 0 of size 5");
  CHECK(ErrorOf(Index(x, {std::int64_t{-1}})) == "index -1 is out of bounds for axis 0 of size 5");
  CHECK(ErrorOf(Index(x, {Slice{2, 7}})) == "slice 2:7 is out of bounds for axis 0 of size 5");
  CHECK(ErrorOf(Index(x, {Slice{3, 2}})) == "slice 3:2 is out of bounds for axis 0 of size 5");
  CHECK(ErrorOf(Gather(x, Ints(Dtype::I64, {1, 5}))) == "gather: index 5 is out of bounds for axis 0 of size 5");
  HostTensor m = Ok(Zeros(Dtype::F32, {2, 3}));
  CHECK(ErrorOf(Binary(BinaryOp::Add, m, Ok(Zeros(Dtype::F32, {4})))) == "cannot broadcast shapes [2, 3] and [4]");
  CHECK(ErrorOf(Binary(BinaryOp::Add, m, Ok(Zeros(Dtype::BF16, {3})))) ==
        "`+`: operands have different element types f32 and bf16");
  CHECK(ErrorOf(Reshape({4}, m)) == "cannot reshape [2, 3] (6 elements) to [4] (4 elements)");
  CHECK(ErrorOf(MatMul(m, m)) == "`@`: cannot multiply [2, 3] by [2, 3]: inner dimensions 3 and 2 differ");
  CHECK(ErrorOf(Reduce(ReduceOp::Max, Ok(Zeros(Dtype::F32, {2, 0})))) == "max of an empty axis (shape [2, 0])");
  CHECK(ErrorOf(Argmax(Ok(Zeros(Dtype::I8, {0})))) == "argmax of an empty axis (shape [0])");
  CHECK(ErrorOf(Unary(UnaryOp::Exp, x)) == "exp needs floats, got i64");
  CHECK(ErrorOf(Iota(-1)) == "iota of a negative size -1");
  CHECK(ErrorOf(Dequant(3, Ok(Zeros(Dtype::I8, {4})), Ok(Zeros(Dtype::F32, {1})))) ==
        "dequant: group size 3 does not divide 4");
  CHECK(ErrorOf(Permute({0, 0}, m)) == "permute [0, 0] is not a permutation of the axes of [2, 3]");
}

TEST_CASE("empty reductions: sum 0, mean NaN", "[interp]") {
  HostTensor e = Ok(Zeros(Dtype::F32, {2, 0}));
  HostTensor s = Ok(Reduce(ReduceOp::Sum, e));
  REQUIRE(s.shape == Shape{2});
  CHECK(runtime::LoadDouble(s, 1) == 0.0);
  CHECK(std::isnan(runtime::LoadDouble(Ok(Reduce(ReduceOp::Mean, e)), 0)));
}

TEST_CASE("maximum and minimum order -0 below +0 and propagate NaN", "[interp]") {
  HostTensor a = Vector(Dtype::F32, {0.0, -0.0, 1.0, std::nan("")});
  HostTensor b = Vector(Dtype::F32, {-0.0, 0.0, std::nan(""), 1.0});
  HostTensor hi = Ok(Binary(BinaryOp::Maximum, a, b));
  HostTensor lo = Ok(Binary(BinaryOp::Minimum, a, b));
  CHECK(runtime::LoadBits(hi, 0) == 0x00000000);
  CHECK(runtime::LoadBits(hi, 1) == 0x00000000);
  CHECK(runtime::LoadBits(lo, 0) == 0x80000000);
  CHECK(runtime::LoadBits(lo, 1) == 0x80000000);
  CHECK(std::isnan(runtime::LoadDouble(hi, 2)));
  CHECK(std::isnan(runtime::LoadDouble(lo, 3)));
  HostTensor zeros = Vector(Dtype::F32, {-0.0, 0.0, -0.0});
  CHECK(runtime::LoadBits(Ok(Reduce(ReduceOp::Max, zeros)), 0) == 0x00000000);
  CHECK(runtime::LoadBits(Ok(Reduce(ReduceOp::Min, zeros)), 0) == 0x80000000);
}

TEST_CASE("float remainder takes the divisor's sign", "[interp]") {
  // fmod(-1, 3) = -1, signs differ: -1 + 3 = 2. fmod(1, -3) = 1: 1 - 3 = -2. A zero remainder takes
  // the divisor's sign: -3 % 3 = +0, 3 % -3 = -0.
  HostTensor r =
      Ok(Binary(BinaryOp::Mod, Vector(Dtype::F32, {-1, 1, -3, 3, 5.5}), Vector(Dtype::F32, {3, -3, 3, -3, 2})));
  CHECK(runtime::LoadDouble(r, 0) == 2.0);
  CHECK(runtime::LoadDouble(r, 1) == -2.0);
  CHECK(runtime::LoadBits(r, 2) == 0x00000000);
  CHECK(runtime::LoadBits(r, 3) == 0x80000000);
  CHECK(runtime::LoadDouble(r, 4) == 1.5);
}

TEST_CASE("integer division floors wraps and gives 0 for a zero divisor", "[interp]") {
  // -7 / 2 = -3.5 floors to -4, and -7 - 2 * -4 = 1; 7 / -2 floors to -4, 7 - (-2)(-4) = -1.
  HostTensor a = Ints(Dtype::I32, {-7, 7, -7, 7, 5, -5});
  HostTensor b = Ints(Dtype::I32, {2, -2, -2, 2, 0, 0});
  HostTensor q = Ok(Binary(BinaryOp::Div, a, b));
  HostTensor r = Ok(Binary(BinaryOp::Mod, a, b));
  std::int64_t quotients[] = {-4, -4, 3, 3, 0, 0}, remainders[] = {1, -1, -1, 1, 0, 0};
  for (int i = 0; i < 6; ++i) {
    CHECK(runtime::LoadInt64(q, i) == quotients[i]);
    CHECK(runtime::LoadInt64(r, i) == remainders[i]);
  }
  std::int64_t min = std::numeric_limits<std::int64_t>::min(), max = std::numeric_limits<std::int64_t>::max();
  HostTensor big = Ints(Dtype::I64, {min, max});
  HostTensor minus_one = Ints(Dtype::I64, {-1, -1});
  CHECK(runtime::LoadInt64(Ok(Binary(BinaryOp::Div, big, minus_one)), 0) == min);  // -min wraps to min
  CHECK(runtime::LoadInt64(Ok(Binary(BinaryOp::Mod, big, minus_one)), 0) == 0);
  CHECK(runtime::LoadInt64(Ok(Binary(BinaryOp::Add, big, Ints(Dtype::I64, {0, 1}))), 1) == min);
  CHECK(runtime::LoadInt64(Ok(Binary(BinaryOp::Add, Ints(Dtype::I8, {127}), Ints(Dtype::I8, {1}))), 0) == -128);
  CHECK(runtime::LoadUint64(Ok(Binary(BinaryOp::Sub, Ints(Dtype::U8, {0}), Ints(Dtype::U8, {1}))), 0) == 255);
  CHECK(runtime::LoadInt64(Ok(Unary(UnaryOp::Abs, Ints(Dtype::I8, {-128}))), 0) == -128);
  CHECK(runtime::LoadInt64(Ok(Binary(BinaryOp::Mul, Ints(Dtype::I4, {7, 0}), Ints(Dtype::I4, {3, 0}))), 0) ==
        5);  // 21 - 16
}

TEST_CASE("bf16 rounds once per operation", "[interp]") {
  // a = b = 1 + 2^-7 (0x3f81). a * b = 1 + 2^-6 + 2^-14 exactly in f32; bf16 keeps 7 mantissa bits,
  // so it rounds to 1 + 2^-6 (0x3f82). Adding c = 2^-8 (0x3b80) gives 1 + 2^-6 + 2^-8, halfway
  // between mantissas 2 and 3: even, 0x3f82. Without the rounding after `*` the sum would be above
  // the tie and give 0x3f83.
  HostTensor a = Bits16(Dtype::BF16, 0x3f81);
  HostTensor product = Ok(Binary(BinaryOp::Mul, a, a));
  CHECK(runtime::LoadBits(product, 0) == 0x3f82);
  HostTensor sum = Ok(Binary(BinaryOp::Add, product, Bits16(Dtype::BF16, 0x3b80)));
  CHECK(runtime::LoadBits(sum, 0) == 0x3f82);
  // f16 overflow inside an operation: 60000 + 10000 = 70000 > 65520: infinity. f8e4m3 saturates.
  CHECK(runtime::LoadBits(Ok(Binary(BinaryOp::Add, Vector(Dtype::F16, {60000}), Vector(Dtype::F16, {10000}))), 0) ==
        0x7c00);
  CHECK(runtime::LoadBits(Ok(Binary(BinaryOp::Add, Vector(Dtype::F8E4M3, {448}), Vector(Dtype::F8E4M3, {448}))), 0) ==
        0x7e);
}

TEST_CASE("sum of many bf16 accumulates in f32", "[interp]") {
  // 1024 ones: an accumulator in bf16 stops at 256 (256 + 1 is a tie, to even 256); in f32 the sum
  // is 1024 exactly, which bf16 holds (0x4480: exponent 10 + 127 = 0x89, 0 10001001 0000000).
  HostTensor ones = Ok(Ones(Dtype::BF16, {1024}));
  CHECK(runtime::LoadBits(Ok(Reduce(ReduceOp::Sum, ones)), 0) == 0x4480);
  CHECK(runtime::LoadDouble(Ok(Reduce(ReduceOp::Mean, ones)), 0) == 1.0);
  // reduce with (+) rounds to bf16 at every step instead: 256.
  auto add = [](const HostTensor& x, const HostTensor& y) { return Binary(BinaryOp::Add, x, y); };
  CHECK(runtime::LoadDouble(Ok(ReduceWith(add, ScalarFromDouble(Dtype::BF16, 0), ones)), 0) == 256.0);
}

TEST_CASE("matmul starts from +0 and broadcasts a rank-2 operand over batches", "[interp]") {
  // [[1, 2], [3, 4]] @ [[5], [6]] = [[17], [39]], for each of 3 batches of the left operand.
  HostTensor a = Ok(Reshape({3, 2, 2}, Vector(Dtype::F32, {1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4})));
  HostTensor b = Ok(Reshape({2, 1}, Vector(Dtype::F32, {5, 6})));
  HostTensor c = Ok(MatMul(a, b));
  REQUIRE(c.shape == Shape{3, 2, 1});
  CHECK(runtime::LoadDouble(c, 4) == 17.0);
  CHECK(runtime::LoadDouble(c, 5) == 39.0);
  // -0 * 1 added to the +0 accumulator is +0.
  HostTensor z =
      Ok(MatMul(Ok(Reshape({1, 1}, Vector(Dtype::F32, {-0.0}))), Ok(Reshape({1, 1}, Vector(Dtype::F32, {1})))));
  CHECK(runtime::LoadBits(z, 0) == 0x00000000);
}

TEST_CASE("closures: errors pass through and results are checked", "[interp]") {
  HostTensor x = Ok(Iota(3));
  ScalarFn1 fails = [](const HostTensor&) -> OpResult {
    return OpError{"index 9 is out of bounds for axis 0 of size 2"};
  };
  CHECK(ErrorOf(Map(fails, x, Dtype::I64)) == "index 9 is out of bounds for axis 0 of size 2");
  ScalarFn1 wrong = [](const HostTensor& e) -> OpResult { return Cast(Dtype::F32, e); };
  CHECK(ErrorOf(Map(wrong, x, Dtype::I64)) == "map: the function returned f32[], expected i64[]");
  ScalarFn1 twice = [](const HostTensor& e) { return Binary(BinaryOp::Add, e, e); };
  HostTensor doubled = Ok(Map(twice, Ok(Zeros(Dtype::I64, {0, 3})), Dtype::I64));
  CHECK(doubled.shape == Shape{0, 3});
}

TEST_CASE("rank-0 and size-1 broadcasting", "[interp]") {
  HostTensor s = ScalarFromDouble(Dtype::F32, 2);
  HostTensor v = Vector(Dtype::F32, {1, 2, 3});
  HostTensor r = Ok(Binary(BinaryOp::Mul, s, v));
  CHECK(r.shape == Shape{3});
  CHECK(runtime::LoadDouble(r, 2) == 6.0);
  HostTensor col = Ok(Reshape({3, 1}, v));
  HostTensor outer = Ok(Binary(BinaryOp::Sub, col, v));  // [3, 1] - [3] = [3, 3]: a[i] - b[j]
  CHECK(outer.shape == Shape{3, 3});
  CHECK(runtime::LoadDouble(outer, 2) == -2.0);  // 1 - 3
  CHECK(runtime::LoadDouble(outer, 6) == 2.0);   // 3 - 1
  HostTensor sel = Ok(Select(ScalarFromInt(Dtype::Bool, 1), v, s));
  CHECK(runtime::LoadDouble(sel, 1) == 2.0);
  CHECK(Ok(Binary(BinaryOp::Add, s, s)).shape.empty());
}

}  // namespace
}  // namespace weft::interp
