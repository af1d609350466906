// The built-in operations of weft (language.md, Built-ins and operators) on host tensors: what the
// interpreter's evaluator calls for every primitive, and so the reference that GPU code must match
// bit for bit. docs/numerics.md states the rules; in short:
//
// - 16- and 8-bit floats are computed in f32 and rounded once (RNE) per operation to the result
//   type; f32 in f32, f64 in f64. Integers wrap; `/` and `%` on integers are floor division and floor
//   modulo, 0 for a zero divisor. Float `%` has the divisor's sign (NumPy's remainder).
// - Reductions (sum, mean, `@`) accumulate in index order, in f32 for every float type up to 32 bits
//   (f64 for f64), starting from +0, and round once at the end; `@` multiplies and then adds (no
//   fused multiply-add).
// - max, min, maximum, minimum propagate NaN; -0 counts as less than +0. argmax: the first index
//   of the maximum; the first NaN if there is one.
// - Operands broadcast NumPy-style, computed from their actual shapes.
//
// Every operation checks what the type checker should already have guaranteed (dtypes, ranks,
// matching dims) as well as what only run time knows (indices, slice bounds), and returns an
// OpError that states the values involved instead of asserting.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <variant>
#include <vector>

#include "base/dtype.h"
#include "base/result.h"
#include "weft/tensor.h"

namespace weft::interp {

using runtime::HostTensor;
using Shape = std::vector<std::int64_t>;

struct OpError {
  std::string message;  // lowercase, values included: "index 7 is out of bounds for axis 0 of size 5"
};

using OpResult = Result<HostTensor, OpError>;

// Rank-0 tensors, the interpreter's scalars. The value is converted with `cast`'s rules.
HostTensor ScalarFromDouble(Dtype dtype, double value);
HostTensor ScalarFromInt(Dtype dtype, std::int64_t value);

// Elementwise operators and functions of two tensors of one dtype, broadcasting.
// Comparisons give bool; `&&` and `||` take bool.
enum class BinaryOp { Add, Sub, Mul, Div, Mod, Eq, Ne, Lt, Le, Gt, Ge, And, Or, Maximum, Minimum };
OpResult Binary(BinaryOp op, const HostTensor& a, const HostTensor& b);

// Unary minus and the elementwise functions. Neg and Abs take any number (they wrap on integers);
// the others floats, computed in f64 and rounded to the type (docs/numerics.md).
enum class UnaryOp { Neg, Abs, Exp, Log, Sqrt, Rsqrt, Tanh, Sigmoid, Sin, Cos };
OpResult Unary(UnaryOp op, const HostTensor& x);

// select c a b: a where c, else b; the three broadcast together.
OpResult Select(const HostTensor& condition, const HostTensor& a, const HostTensor& b);

// Reductions over the last axis: 't[..s, n] -> 't[..s]. Max and Min of an empty axis are errors;
// the sum of one is 0, the mean NaN.
enum class ReduceOp { Sum, Max, Min, Mean };
OpResult Reduce(ReduceOp op, const HostTensor& x);
OpResult Argmax(const HostTensor& x);  // -> i64[..s]

// Higher-order built-ins. The functions take and return rank-0 tensors (the interpreter's
// closures); map and map2 are told their result dtype (for empty inputs), and every result is
// checked against it.
using ScalarFn1 = std::function<OpResult(const HostTensor&)>;
using ScalarFn2 = std::function<OpResult(const HostTensor&, const HostTensor&)>;
OpResult Map(const ScalarFn1& f, const HostTensor& x, Dtype result);
OpResult Map2(const ScalarFn2& f, const HostTensor& x, const HostTensor& y, Dtype result);  // equal shapes
// reduce f init x: over the last axis, acc = f(acc, x_i) from acc = init, in index order.
OpResult ReduceWith(const ScalarFn2& f, const HostTensor& init, const HostTensor& x);
// scan f init x: the inclusive prefixes of the same fold.
OpResult ScanWith(const ScalarFn2& f, const HostTensor& init, const HostTensor& x);

// a @ b: 't[..b, m, k] -> 't[..b, k, n] -> 't[..b, m, n], batch dims broadcast.
OpResult MatMul(const HostTensor& a, const HostTensor& b);
// matmul_f32: the same with the operands converted to f32 (`cast`) and an f32 result.
OpResult MatMulF32(const HostTensor& a, const HostTensor& b);

// Shape operations (copies; the GPU's views are an implementation matter).
OpResult Transpose(const HostTensor& x);                                     // swaps the last two axes
OpResult Permute(const std::vector<int>& permutation, const HostTensor& x);  // result axis i = x's axis p[i]
OpResult Reshape(const Shape& shape, const HostTensor& x);
OpResult Concat(const HostTensor& a, const HostTensor& b);  // last axis
OpResult Expand(const HostTensor& x);                       // 't[..s] -> 't[..s, 1]
OpResult BroadcastTo(const Shape& shape, const HostTensor& x);

// Constructors.
OpResult Iota(std::int64_t n);  // i64[n]: 0, 1, ..., n - 1
OpResult Zeros(Dtype dtype, const Shape& shape);
OpResult Ones(Dtype dtype, const Shape& shape);
OpResult Full(const Shape& shape, const HostTensor& value);  // value: rank 0
// A tensor literal [e0, e1, ...]: the elements, all of `dtype` and `element_shape`, stacked on a new
// leading axis (dtype and element_shape make `[]` well defined).
OpResult Stack(Dtype dtype, const Shape& element_shape, const std::vector<HostTensor>& elements);

// cast T x, with the rules of docs/numerics.md.
OpResult Cast(Dtype dtype, const HostTensor& x);

// gather x indices: 't[n, ..s] -> i64[m] -> 't[m, ..s], rows by index, each checked against n.
OpResult Gather(const HostTensor& x, const HostTensor& indices);

// dequant [g] q scale: out[..., k] = f32(q[..., k]) * f32(scale[..., k / g]), rounded once to scale's
// dtype (computed in f64 when that is f64).
OpResult Dequant(std::int64_t group, const HostTensor& q, const HostTensor& scale);

// x[ix, ...]: each item addresses one leading axis. An index drops the axis, a slice [begin, end)
// keeps it with end - begin elements, All keeps it whole.
struct Slice {
  std::int64_t begin;
  std::int64_t end;
};
struct All {};
using IndexItem = std::variant<std::int64_t, Slice, All>;
OpResult Index(const HostTensor& x, const std::vector<IndexItem>& items);

}  // namespace weft::interp
