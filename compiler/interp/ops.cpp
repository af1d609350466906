// The built-in operations on host tensors (ops.h states the contract, docs/numerics.md the rules).
//
// Each operation dispatches on dtype once, then runs a plain loop over values of a C++ compute type:
//
// 1. Compute types: float for every float type up to 32 bits (so f16/bf16/f8 are computed in f32),
//    double for f64, int64_t for signed integers, uint64_t for unsigned integers and bool.
// 2. Unpack<C> decodes a tensor's elements into a std::vector<C>; Pack<C> encodes one back into a
//    dtype, which is where the single rounding (floats) or wrapping (integers) happens.
// 3. Broadcasting, transposes, slices and gathers are all "element i of the result is element
//    source[i] of the operand", with the source indices computed from shape and strides.
#include "interp/ops.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <type_traits>

#include "weft/numerics.h"

namespace weft::interp {
namespace {

using runtime::IsFloatDtype;
using runtime::IsIntegerDtype;
using runtime::IsSignedDtype;
using runtime::IsUnsignedDtype;

// ---- Dispatch ----------------------------------------------------------------------------------

template <Dtype D>
using Value =
    std::conditional_t<D == Dtype::F64, double,
                       std::conditional_t<runtime::IsFloatDtype(D), float,
                                          std::conditional_t<runtime::IsSignedDtype(D), std::int64_t, std::uint64_t>>>;

template <Dtype D>
using DtypeTag = std::integral_constant<Dtype, D>;

// Calls f(DtypeTag<dtype>{}): one instantiation per dtype.
template <typename F>
decltype(auto) VisitDtype(Dtype dtype, F&& f) {
  switch (dtype) {
#define WEFT_DTYPE(Name, Spelling, Bits) \
  case Dtype::Name:                      \
    return f(DtypeTag<Dtype::Name>{});
#include "base/dtypes.def"
  }
  return f(DtypeTag<Dtype::F32>{});
}

// Calls f(C{}) with the compute type of `dtype`: one instantiation per compute type.
template <typename F>
decltype(auto) VisitCompute(Dtype dtype, F&& f) {
  if (dtype == Dtype::F64) return f(double{});
  if (IsFloatDtype(dtype)) return f(float{});
  if (IsSignedDtype(dtype)) return f(std::int64_t{});
  return f(std::uint64_t{});
}

template <typename Raw>
Raw ReadRaw(const std::uint8_t* p, std::int64_t i) {
  Raw r;
  std::memcpy(&r, p + i * static_cast<std::int64_t>(sizeof(Raw)), sizeof(Raw));
  return r;
}

template <typename Raw>
void WriteRaw(std::uint8_t* p, std::int64_t i, Raw r) {
  std::memcpy(p + i * static_cast<std::int64_t>(sizeof(Raw)), &r, sizeof(Raw));
}

template <int Bits, bool Signed>
using IntRaw = std::conditional_t<
    Bits == 8, std::conditional_t<Signed, std::int8_t, std::uint8_t>,
    std::conditional_t<Bits == 16, std::conditional_t<Signed, std::int16_t, std::uint16_t>,
                       std::conditional_t<Bits == 32, std::conditional_t<Signed, std::int32_t, std::uint32_t>,
                                          std::conditional_t<Signed, std::int64_t, std::uint64_t>>>>;

// Element i of a dtype-D buffer, as its compute value.
template <Dtype D>
Value<D> Get(const std::uint8_t* p, std::int64_t i) {
  if constexpr (D == Dtype::F32) {
    return ReadRaw<float>(p, i);
  } else if constexpr (D == Dtype::F64) {
    return ReadRaw<double>(p, i);
  } else if constexpr (D == Dtype::BF16) {
    return runtime::Bf16ToFloat(ReadRaw<std::uint16_t>(p, i));
  } else if constexpr (D == Dtype::F16) {
    return runtime::HalfToFloat(ReadRaw<std::uint16_t>(p, i));
  } else if constexpr (D == Dtype::F8E4M3) {
    return runtime::F8e4m3ToFloat(p[i]);
  } else if constexpr (D == Dtype::F8E5M2) {
    return runtime::F8e5m2ToFloat(p[i]);
  } else if constexpr (D == Dtype::Bool) {
    return p[i] != 0;
  } else if constexpr (Bits(D) == 4) {
    std::uint8_t nibble = (i & 1) ? p[i / 2] >> 4 : p[i / 2] & 0xf;
    if constexpr (D == Dtype::I4)
      return (nibble ^ 8) - 8;
    else
      return nibble;
  } else {
    return static_cast<Value<D>>(ReadRaw<IntRaw<Bits(D), IsSignedDtype(D)>>(p, i));
  }
}

// Store a compute value into element i of a dtype-D buffer: floats round once, integers wrap.
template <Dtype D>
void Put(std::uint8_t* p, std::int64_t i, Value<D> v) {
  if constexpr (D == Dtype::F32 || D == Dtype::F64) {
    WriteRaw(p, i, v);
  } else if constexpr (D == Dtype::BF16) {
    WriteRaw(p, i, runtime::FloatToBf16(v));
  } else if constexpr (D == Dtype::F16) {
    WriteRaw(p, i, runtime::FloatToHalf(v));
  } else if constexpr (D == Dtype::F8E4M3) {
    p[i] = runtime::FloatToF8e4m3(v);
  } else if constexpr (D == Dtype::F8E5M2) {
    p[i] = runtime::FloatToF8e5m2(v);
  } else if constexpr (D == Dtype::Bool) {
    p[i] = v != 0;
  } else if constexpr (Bits(D) == 4) {
    auto nibble = static_cast<std::uint8_t>(static_cast<std::uint64_t>(v) & 0xf);
    std::uint8_t& byte = p[i / 2];
    byte = (i & 1) ? static_cast<std::uint8_t>((byte & 0x0f) | (nibble << 4))
                   : static_cast<std::uint8_t>((byte & 0xf0) | nibble);
  } else {
    using Raw = IntRaw<Bits(D), false>;  // truncation in unsigned arithmetic: wrapping
    WriteRaw(p, i, static_cast<Raw>(static_cast<std::uint64_t>(v)));
  }
}

// The elements of t as its compute type C. @pre C is t.dtype's compute type
template <typename C>
std::vector<C> Unpack(const HostTensor& t) {
  std::vector<C> out(static_cast<std::size_t>(t.Count()));
  VisitDtype(t.dtype, [&]<Dtype D>(DtypeTag<D>) {
    if constexpr (std::is_same_v<Value<D>, C>) {
      const std::uint8_t* p = t.bytes.data();
      for (std::size_t i = 0; i < out.size(); ++i) out[i] = Get<D>(p, static_cast<std::int64_t>(i));
    }
  });
  return out;
}

// A tensor of `dtype` holding `values`. @pre C is dtype's compute type
template <typename C>
HostTensor Pack(Dtype dtype, Shape shape, const std::vector<C>& values) {
  HostTensor out = HostTensor::Zeros(dtype, std::move(shape));
  VisitDtype(dtype, [&]<Dtype D>(DtypeTag<D>) {
    if constexpr (std::is_same_v<Value<D>, C>) {
      std::uint8_t* p = out.bytes.data();
      for (std::size_t i = 0; i < values.size(); ++i) Put<D>(p, static_cast<std::int64_t>(i), values[i]);
    }
  });
  return out;
}

// ---- Errors and checks -------------------------------------------------------------------------

std::string Name(Dtype dtype) {
  return std::string(Spelling(dtype));
}
std::string ShapeText(const Shape& shape) {
  return runtime::ShapeText(shape);
}

OpError Error(std::string message) {
  return OpError{std::move(message)};
}

std::optional<OpError> SameDtype(std::string_view op, const HostTensor& a, const HostTensor& b) {
  if (a.dtype == b.dtype) return std::nullopt;
  return Error(std::string(op) + ": operands have different element types " + Name(a.dtype) + " and " + Name(b.dtype));
}

std::optional<OpError> NeedNumber(std::string_view op, Dtype dtype) {
  if (dtype != Dtype::Bool) return std::nullopt;
  return Error(std::string(op) + " needs numbers, got bool");
}

std::optional<OpError> NeedFloat(std::string_view op, Dtype dtype) {
  if (IsFloatDtype(dtype)) return std::nullopt;
  return Error(std::string(op) + " needs floats, got " + Name(dtype));
}

std::optional<OpError> NeedRank(std::string_view op, const HostTensor& x, int rank) {
  if (x.Rank() >= rank) return std::nullopt;
  return Error(std::string(op) + " needs rank " + std::to_string(rank) + " or more, got shape " + ShapeText(x.shape));
}

std::optional<OpError> CheckShape(const Shape& shape) {
  for (std::int64_t d : shape) {
    if (d < 0) return Error("negative dimension in shape " + ShapeText(shape));
  }
  return std::nullopt;
}

std::int64_t Product(const Shape& shape, std::size_t begin = 0, std::size_t end = std::string::npos) {
  std::int64_t n = 1;
  for (std::size_t i = begin; i < std::min(end, shape.size()); ++i) n *= shape[i];
  return n;
}

// ---- Element movement --------------------------------------------------------------------------

Shape ContiguousStrides(const Shape& shape) {
  Shape strides(shape.size());
  std::int64_t s = 1;
  for (std::size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= shape[i];
  }
  return strides;
}

// The flat source index of each element of `shape`, walking a source with `strides` from `offset`.
std::vector<std::int64_t> StridedIndex(const Shape& shape, const Shape& strides, std::int64_t offset) {
  std::vector<std::int64_t> out(static_cast<std::size_t>(Product(shape)));
  if (out.empty()) return out;
  Shape coord(shape.size(), 0);
  std::int64_t at = offset;
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i] = at;
    for (std::size_t axis = shape.size(); axis-- > 0;) {  // odometer
      at += strides[axis];
      if (++coord[axis] < shape[axis]) break;
      at -= strides[axis] * shape[axis];
      coord[axis] = 0;
    }
  }
  return out;
}

// A tensor of x's dtype and `shape` whose element i is x's element source[i].
HostTensor CopyElements(const HostTensor& x, Shape shape, const std::vector<std::int64_t>& source) {
  HostTensor out = HostTensor::Zeros(x.dtype, std::move(shape));
  int bits = Bits(x.dtype);
  if (bits == 4) {
    for (std::size_t i = 0; i < source.size(); ++i)
      runtime::StoreBits(out, static_cast<std::int64_t>(i), runtime::LoadBits(x, source[i]));
    return out;
  }
  std::size_t size = static_cast<std::size_t>(bits / 8);
  for (std::size_t i = 0; i < source.size(); ++i)
    std::memcpy(out.bytes.data() + i * size, x.bytes.data() + static_cast<std::size_t>(source[i]) * size, size);
  return out;
}

Result<Shape, OpError> BroadcastShapes(const Shape& a, const Shape& b) {
  Shape out(std::max(a.size(), b.size()));
  for (std::size_t i = 0; i < out.size(); ++i) {  // i counts from the right
    std::int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    std::int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (da != db && da != 1 && db != 1)
      return Error("cannot broadcast shapes " + ShapeText(a) + " and " + ShapeText(b));
    out[out.size() - 1 - i] = da == 1 ? db : da;
  }
  return out;
}

// Source indices that broadcast a tensor of `from` to `to`. @pre `from` broadcasts to `to`
std::vector<std::int64_t> BroadcastIndex(const Shape& from, const Shape& to) {
  Shape strides(to.size(), 0);
  Shape contiguous = ContiguousStrides(from);
  std::size_t lead = to.size() - from.size();
  for (std::size_t i = 0; i < from.size(); ++i) strides[lead + i] = from[i] == 1 ? 0 : contiguous[i];
  return StridedIndex(to, strides, 0);
}

// ---- Scalar arithmetic -------------------------------------------------------------------------

template <typename C>
constexpr bool kIsFloat = std::is_floating_point_v<C>;

// Wrapping arithmetic for the integer compute types, done in uint64_t so overflow is defined.
template <typename C>
C Wrap(std::uint64_t v) {
  return static_cast<C>(v);  // modular since C++20
}

template <typename C>
C Add(C a, C b) {
  if constexpr (kIsFloat<C>)
    return a + b;
  else
    return Wrap<C>(static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(b));
}
template <typename C>
C Sub(C a, C b) {
  if constexpr (kIsFloat<C>)
    return a - b;
  else
    return Wrap<C>(static_cast<std::uint64_t>(a) - static_cast<std::uint64_t>(b));
}
template <typename C>
C Mul(C a, C b) {
  if constexpr (kIsFloat<C>)
    return a * b;
  else
    return Wrap<C>(static_cast<std::uint64_t>(a) * static_cast<std::uint64_t>(b));
}

// Floor division; 0 for a zero divisor (language.md).
template <typename C>
C Div(C a, C b) {
  if constexpr (kIsFloat<C>) {
    return a / b;
  } else {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<C>) {
      if (b == -1) return Sub<C>(0, a);  // min / -1 wraps to min
      C q = a / b;
      if (a % b != 0 && ((a < 0) != (b < 0))) --q;
      return q;
    } else {
      return a / b;
    }
  }
}

// Floor modulo (the divisor's sign), 0 for a zero divisor; for floats NumPy's remainder: fmod,
// moved into the divisor's sign, a zero result carrying the divisor's sign.
template <typename C>
C Mod(C a, C b) {
  if constexpr (kIsFloat<C>) {
    C r = std::fmod(a, b);
    if (b == 0) return r;  // NaN
    if (r != 0) {
      if ((b < 0) != (r < 0)) r += b;
    } else {
      r = std::copysign(C(0), b);
    }
    return r;
  } else {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<C>) {
      if (b == -1) return 0;
      C r = a % b;
      if (r != 0 && ((r < 0) != (b < 0))) r += b;
      return r;
    } else {
      return a % b;
    }
  }
}

// NaN-propagating maximum and minimum with -0 < +0 (IEEE 754-2019 maximum/minimum): both
// commutative, so a GPU tree reduction finds the same value.
template <typename C>
C Maximum(C a, C b) {
  if constexpr (kIsFloat<C>) {
    if (std::isnan(a)) return a;
    if (std::isnan(b)) return b;
    if (a == b) return std::signbit(a) ? b : a;
  }
  return a < b ? b : a;
}
template <typename C>
C Minimum(C a, C b) {
  if constexpr (kIsFloat<C>) {
    if (std::isnan(a)) return a;
    if (std::isnan(b)) return b;
    if (a == b) return std::signbit(a) ? a : b;
  }
  return b < a ? b : a;
}

// A float function computed in f64 and rounded to C (for f32: nearly always the correctly rounded
// result; the narrow types then round once more, in Pack).
template <typename C, typename F>
C ViaDouble(C x, F f) {
  return static_cast<C>(f(static_cast<double>(x)));
}

// ---- Elementwise -------------------------------------------------------------------------------

// out[i] = f(a[ia[i]], b[ib[i]]) over the broadcast shape; R is the result's compute type.
template <typename R, typename C, typename F>
std::vector<R> ZipBroadcast(const std::vector<C>& a, const std::vector<std::int64_t>* ia, const std::vector<C>& b,
                            const std::vector<std::int64_t>* ib, std::size_t n, F f) {
  std::vector<R> out(n);
  if (ia == nullptr && ib == nullptr) {
    for (std::size_t i = 0; i < n; ++i) out[i] = f(a[i], b[i]);
  } else {
    for (std::size_t i = 0; i < n; ++i)
      out[i] = f(a[ia ? static_cast<std::size_t>((*ia)[i]) : i], b[ib ? static_cast<std::size_t>((*ib)[i]) : i]);
  }
  return out;
}

const char* BinaryName(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add:
      return "`+`";
    case BinaryOp::Sub:
      return "`-`";
    case BinaryOp::Mul:
      return "`*`";
    case BinaryOp::Div:
      return "`/`";
    case BinaryOp::Mod:
      return "`%`";
    case BinaryOp::Eq:
      return "`==`";
    case BinaryOp::Ne:
      return "`!=`";
    case BinaryOp::Lt:
      return "`<`";
    case BinaryOp::Le:
      return "`<=`";
    case BinaryOp::Gt:
      return "`>`";
    case BinaryOp::Ge:
      return "`>=`";
    case BinaryOp::And:
      return "`&&`";
    case BinaryOp::Or:
      return "`||`";
    case BinaryOp::Maximum:
      return "maximum";
    case BinaryOp::Minimum:
      return "minimum";
  }
  return "?";
}

bool IsComparison(BinaryOp op) {
  return op == BinaryOp::Eq || op == BinaryOp::Ne || op == BinaryOp::Lt || op == BinaryOp::Le || op == BinaryOp::Gt ||
         op == BinaryOp::Ge;
}

}  // namespace

HostTensor ScalarFromDouble(Dtype dtype, double value) {
  HostTensor t = HostTensor::Zeros(dtype, {});
  runtime::StoreDouble(t, 0, value);
  return t;
}

HostTensor ScalarFromInt(Dtype dtype, std::int64_t value) {
  HostTensor t = HostTensor::Zeros(dtype, {});
  runtime::StoreInt64(t, 0, value);
  return t;
}

OpResult Binary(BinaryOp op, const HostTensor& a, const HostTensor& b) {
  const char* name = BinaryName(op);
  if (auto e = SameDtype(name, a, b)) return *e;
  bool logical = op == BinaryOp::And || op == BinaryOp::Or;
  if (logical && a.dtype != Dtype::Bool) return Error(std::string(name) + " needs bool, got " + Name(a.dtype));
  if (!logical && !IsComparison(op)) {
    if (auto e = NeedNumber(name, a.dtype)) return *e;
  }
  auto shape = BroadcastShapes(a.shape, b.shape);
  if (!shape) return shape.error();
  std::vector<std::int64_t> ia, ib;
  bool same = a.shape == b.shape;
  if (!same) {
    ia = BroadcastIndex(a.shape, *shape);
    ib = BroadcastIndex(b.shape, *shape);
  }
  std::size_t n = static_cast<std::size_t>(Product(*shape));
  return VisitCompute(a.dtype, [&]<typename C>(C) -> HostTensor {
    std::vector<C> x = Unpack<C>(a), y = Unpack<C>(b);
    const std::vector<std::int64_t>* px = same ? nullptr : &ia;
    const std::vector<std::int64_t>* py = same ? nullptr : &ib;
    auto arith = [&](auto f) { return Pack(a.dtype, *shape, ZipBroadcast<C>(x, px, y, py, n, f)); };
    auto compare = [&](auto f) {
      return Pack(Dtype::Bool, *shape,
                  ZipBroadcast<std::uint64_t>(x, px, y, py, n, [&](C u, C v) -> std::uint64_t { return f(u, v); }));
    };
    switch (op) {
      case BinaryOp::Add:
        return arith([](C u, C v) { return Add(u, v); });
      case BinaryOp::Sub:
        return arith([](C u, C v) { return Sub(u, v); });
      case BinaryOp::Mul:
        return arith([](C u, C v) { return Mul(u, v); });
      case BinaryOp::Div:
        return arith([](C u, C v) { return Div(u, v); });
      case BinaryOp::Mod:
        return arith([](C u, C v) { return Mod(u, v); });
      case BinaryOp::Maximum:
        return arith([](C u, C v) { return Maximum(u, v); });
      case BinaryOp::Minimum:
        return arith([](C u, C v) { return Minimum(u, v); });
      case BinaryOp::Eq:
        return compare([](C u, C v) { return u == v; });
      case BinaryOp::Ne:
        return compare([](C u, C v) { return u != v; });
      case BinaryOp::Lt:
        return compare([](C u, C v) { return u < v; });
      case BinaryOp::Le:
        return compare([](C u, C v) { return u <= v; });
      case BinaryOp::Gt:
        return compare([](C u, C v) { return u > v; });
      case BinaryOp::Ge:
        return compare([](C u, C v) { return u >= v; });
      case BinaryOp::And:
        return compare([](C u, C v) { return u != 0 && v != 0; });
      case BinaryOp::Or:
        return compare([](C u, C v) { return u != 0 || v != 0; });
    }
    return HostTensor{};
  });
}

OpResult Unary(UnaryOp op, const HostTensor& x) {
  static constexpr const char* kNames[] = {"unary `-`", "abs",  "exp",     "log", "sqrt",
                                           "rsqrt",     "tanh", "sigmoid", "sin", "cos"};
  const char* name = kNames[static_cast<int>(op)];
  if (op == UnaryOp::Neg || op == UnaryOp::Abs) {
    if (auto e = NeedNumber(name, x.dtype)) return *e;
  } else if (auto e = NeedFloat(name, x.dtype)) {
    return *e;
  }
  return VisitCompute(x.dtype, [&]<typename C>(C) -> HostTensor {
    std::vector<C> v = Unpack<C>(x);
    auto apply = [&](auto f) {
      for (C& e : v) e = f(e);
      return Pack(x.dtype, x.shape, v);
    };
    if (op == UnaryOp::Neg) {
      if constexpr (kIsFloat<C>)
        return apply([](C a) { return -a; });  // -(+0) is -0
      else
        return apply([](C a) { return Sub<C>(0, a); });
    }
    if (op == UnaryOp::Abs) {
      if constexpr (kIsFloat<C>)
        return apply([](C a) { return std::fabs(a); });
      else if constexpr (std::is_signed_v<C>)
        return apply([](C a) { return a < 0 ? Sub<C>(0, a) : a; });
      else
        return apply([](C a) { return a; });
    }
    if constexpr (kIsFloat<C>) {
      switch (op) {
        case UnaryOp::Exp:
          return apply([](C a) { return ViaDouble(a, [](double d) { return std::exp(d); }); });
        case UnaryOp::Log:
          return apply([](C a) { return ViaDouble(a, [](double d) { return std::log(d); }); });
        case UnaryOp::Sqrt:
          return apply([](C a) { return ViaDouble(a, [](double d) { return std::sqrt(d); }); });
        case UnaryOp::Rsqrt:
          return apply([](C a) { return ViaDouble(a, [](double d) { return 1.0 / std::sqrt(d); }); });
        case UnaryOp::Tanh:
          return apply([](C a) { return ViaDouble(a, [](double d) { return std::tanh(d); }); });
        case UnaryOp::Sigmoid:
          return apply([](C a) { return ViaDouble(a, [](double d) { return 1.0 / (1.0 + std::exp(-d)); }); });
        case UnaryOp::Sin:
          return apply([](C a) { return ViaDouble(a, [](double d) { return std::sin(d); }); });
        case UnaryOp::Cos:
          return apply([](C a) { return ViaDouble(a, [](double d) { return std::cos(d); }); });
        default:
          break;
      }
    }
    return HostTensor{};
  });
}

OpResult Select(const HostTensor& condition, const HostTensor& a, const HostTensor& b) {
  if (condition.dtype != Dtype::Bool) return Error("select needs a bool condition, got " + Name(condition.dtype));
  if (auto e = SameDtype("select", a, b)) return *e;
  auto ab = BroadcastShapes(a.shape, b.shape);
  if (!ab) return ab.error();
  auto shape = BroadcastShapes(condition.shape, *ab);
  if (!shape) return shape.error();
  std::vector<std::int64_t> ic = BroadcastIndex(condition.shape, *shape);
  std::vector<std::int64_t> ia = BroadcastIndex(a.shape, *shape);
  std::vector<std::int64_t> ib = BroadcastIndex(b.shape, *shape);
  HostTensor out = HostTensor::Zeros(a.dtype, *shape);
  for (std::size_t i = 0; i < ic.size(); ++i) {
    bool take_a = condition.bytes[static_cast<std::size_t>(ic[i])] != 0;
    runtime::StoreBits(out, static_cast<std::int64_t>(i),
                       take_a ? runtime::LoadBits(a, ia[i]) : runtime::LoadBits(b, ib[i]));
  }
  return out;
}

OpResult Reduce(ReduceOp op, const HostTensor& x) {
  static constexpr const char* kNames[] = {"sum", "max", "min", "mean"};
  const char* name = kNames[static_cast<int>(op)];
  if (auto e = NeedRank(name, x, 1)) return *e;
  if (auto e = op == ReduceOp::Mean ? NeedFloat(name, x.dtype) : NeedNumber(name, x.dtype)) return *e;
  std::int64_t n = x.shape.back();
  Shape out_shape(x.shape.begin(), x.shape.end() - 1);
  std::int64_t rows = Product(out_shape);
  if (n == 0 && rows > 0 && (op == ReduceOp::Max || op == ReduceOp::Min))
    return Error(std::string(name) + " of an empty axis (shape " + ShapeText(x.shape) + ")");
  return VisitCompute(x.dtype, [&]<typename C>(C) -> HostTensor {
    std::vector<C> v = Unpack<C>(x);
    std::vector<C> out(static_cast<std::size_t>(rows));
    for (std::int64_t r = 0; r < rows; ++r) {
      const C* row = v.data() + r * n;
      C acc = op == ReduceOp::Max || op == ReduceOp::Min ? row[0] : C(0);
      for (std::int64_t i = (op == ReduceOp::Max || op == ReduceOp::Min) ? 1 : 0; i < n; ++i) {
        acc = op == ReduceOp::Max   ? Maximum(acc, row[i])
              : op == ReduceOp::Min ? Minimum(acc, row[i])
                                    : Add(acc, row[i]);
      }
      if constexpr (kIsFloat<C>) {
        if (op == ReduceOp::Mean) acc = acc / static_cast<C>(n);
      }
      out[static_cast<std::size_t>(r)] = acc;
    }
    return Pack(x.dtype, out_shape, out);
  });
}

OpResult Argmax(const HostTensor& x) {
  if (auto e = NeedRank("argmax", x, 1)) return *e;
  std::int64_t n = x.shape.back();
  Shape out_shape(x.shape.begin(), x.shape.end() - 1);
  std::int64_t rows = Product(out_shape);
  if (n == 0 && rows > 0) return Error("argmax of an empty axis (shape " + ShapeText(x.shape) + ")");
  return VisitCompute(x.dtype, [&]<typename C>(C) -> HostTensor {
    std::vector<C> v = Unpack<C>(x);
    std::vector<std::int64_t> out(static_cast<std::size_t>(rows));
    for (std::int64_t r = 0; r < rows; ++r) {
      const C* row = v.data() + r * n;
      std::int64_t best = 0;
      for (std::int64_t i = 1; i < n; ++i) {
        if constexpr (kIsFloat<C>) {
          if (std::isnan(row[best])) break;
          if (std::isnan(row[i]) || row[i] > row[best]) best = i;
        } else {
          if (row[i] > row[best]) best = i;
        }
      }
      out[static_cast<std::size_t>(r)] = best;
    }
    return Pack(Dtype::I64, out_shape, out);
  });
}

namespace {

// Element i of x as a rank-0 tensor.
HostTensor ElementOf(const HostTensor& x, std::int64_t i) {
  HostTensor e = HostTensor::Zeros(x.dtype, {});
  runtime::StoreBits(e, 0, runtime::LoadBits(x, i));
  return e;
}

// The closure's result, checked to be a scalar of `dtype`.
std::optional<OpError> CheckScalarResult(std::string_view op, const OpResult& r, Dtype dtype) {
  if (!r) return r.error();
  if (r->Rank() != 0 || r->dtype != dtype)
    return Error(std::string(op) + ": the function returned " + Name(r->dtype) + ShapeText(r->shape) + ", expected " +
                 Name(dtype) + "[]");
  return std::nullopt;
}

}  // namespace

OpResult Map(const ScalarFn1& f, const HostTensor& x, Dtype result) {
  HostTensor out = HostTensor::Zeros(result, x.shape);
  for (std::int64_t i = 0; i < x.Count(); ++i) {
    OpResult r = f(ElementOf(x, i));
    if (auto e = CheckScalarResult("map", r, result)) return *e;
    runtime::StoreBits(out, i, runtime::LoadBits(*r, 0));
  }
  return out;
}

OpResult Map2(const ScalarFn2& f, const HostTensor& x, const HostTensor& y, Dtype result) {
  if (x.shape != y.shape) return Error("map2: shapes " + ShapeText(x.shape) + " and " + ShapeText(y.shape) + " differ");
  HostTensor out = HostTensor::Zeros(result, x.shape);
  for (std::int64_t i = 0; i < x.Count(); ++i) {
    OpResult r = f(ElementOf(x, i), ElementOf(y, i));
    if (auto e = CheckScalarResult("map2", r, result)) return *e;
    runtime::StoreBits(out, i, runtime::LoadBits(*r, 0));
  }
  return out;
}

namespace {

// The fold behind reduce (keep_prefixes false) and scan (true).
OpResult Fold(std::string_view op, const ScalarFn2& f, const HostTensor& init, const HostTensor& x,
              bool keep_prefixes) {
  if (auto e = NeedRank(op, x, 1)) return *e;
  if (init.Rank() != 0 || init.dtype != x.dtype)
    return Error(std::string(op) + ": the initial value is " + Name(init.dtype) + ShapeText(init.shape) +
                 ", expected " + Name(x.dtype) + "[]");
  std::int64_t n = x.shape.back();
  Shape out_shape = keep_prefixes ? x.shape : Shape(x.shape.begin(), x.shape.end() - 1);
  std::int64_t rows = Product(x.shape, 0, x.shape.size() - 1);
  HostTensor out = HostTensor::Zeros(x.dtype, out_shape);
  for (std::int64_t r = 0; r < rows; ++r) {
    HostTensor acc = init;
    for (std::int64_t i = 0; i < n; ++i) {
      OpResult next = f(acc, ElementOf(x, r * n + i));
      if (auto e = CheckScalarResult(op, next, x.dtype)) return *e;
      acc = std::move(*next);
      if (keep_prefixes) runtime::StoreBits(out, r * n + i, runtime::LoadBits(acc, 0));
    }
    if (!keep_prefixes) runtime::StoreBits(out, r, runtime::LoadBits(acc, 0));
  }
  return out;
}

}  // namespace

OpResult ReduceWith(const ScalarFn2& f, const HostTensor& init, const HostTensor& x) {
  return Fold("reduce", f, init, x, false);
}

OpResult ScanWith(const ScalarFn2& f, const HostTensor& init, const HostTensor& x) {
  return Fold("scan", f, init, x, true);
}

namespace {

// c = a * b for row-major a (m x k), b (k x n), c (m x n): each c[i, j] is accumulated from +0 over
// p = 0, 1, ..., k - 1 as acc = acc + a[i, p] * b[p, j], in type Acc (uint64_t for integers: wraps).
// The loops run i, p, j with j innermost over contiguous rows of b and c, so the compiler
// vectorizes across j while every element still sums in p order; j is blocked so a panel of b stays
// in cache.
template <typename C>
void Gemm(const C* a, const C* b, C* c, std::int64_t m, std::int64_t k, std::int64_t n) {
  using Acc = std::conditional_t<std::is_integral_v<C>, std::uint64_t, C>;
  constexpr std::int64_t kBlock = 256;
  std::vector<Acc> row(static_cast<std::size_t>(std::min(n, kBlock)));
  for (std::int64_t j0 = 0; j0 < n; j0 += kBlock) {
    std::int64_t width = std::min(kBlock, n - j0);
    for (std::int64_t i = 0; i < m; ++i) {
      Acc* __restrict acc = row.data();
      std::fill(acc, acc + width, Acc(0));
      for (std::int64_t p = 0; p < k; ++p) {
        Acc aip = static_cast<Acc>(a[i * k + p]);
        const C* __restrict brow = b + p * n + j0;
        for (std::int64_t j = 0; j < width; ++j) acc[j] += aip * static_cast<Acc>(brow[j]);
      }
      for (std::int64_t j = 0; j < width; ++j) c[i * n + j0 + j] = static_cast<C>(acc[j]);
    }
  }
}

// The batched product of tensors already in compute type C; returns the result's shape.
template <typename C>
Result<Shape, OpError> BatchedGemm(std::string_view op, const HostTensor& a, const std::vector<C>& av,
                                   const HostTensor& b, const std::vector<C>& bv, std::vector<C>& out) {
  std::int64_t m = a.shape[a.Rank() - 2], k = a.shape[a.Rank() - 1];
  std::int64_t k2 = b.shape[b.Rank() - 2], n = b.shape[b.Rank() - 1];
  if (k != k2)
    return Error(std::string(op) + ": cannot multiply " + ShapeText(a.shape) + " by " + ShapeText(b.shape) +
                 ": inner dimensions " + std::to_string(k) + " and " + std::to_string(k2) + " differ");
  Shape batch_a(a.shape.begin(), a.shape.end() - 2), batch_b(b.shape.begin(), b.shape.end() - 2);
  auto batch = BroadcastShapes(batch_a, batch_b);
  if (!batch) return Error(std::string(op) + ": batch dimensions: " + batch.error().message);
  std::vector<std::int64_t> ia = BroadcastIndex(batch_a, *batch), ib = BroadcastIndex(batch_b, *batch);
  out.assign(static_cast<std::size_t>(Product(*batch) * m * n), C(0));
  for (std::size_t t = 0; t < ia.size(); ++t) {
    Gemm(av.data() + ia[t] * m * k, bv.data() + ib[t] * k * n, out.data() + static_cast<std::int64_t>(t) * m * n, m, k,
         n);
  }
  Shape shape = *batch;
  shape.push_back(m);
  shape.push_back(n);
  return shape;
}

}  // namespace

OpResult MatMul(const HostTensor& a, const HostTensor& b) {
  if (auto e = SameDtype("`@`", a, b)) return *e;
  if (auto e = NeedNumber("`@`", a.dtype)) return *e;
  if (auto e = NeedRank("`@`", a, 2)) return *e;
  if (auto e = NeedRank("`@`", b, 2)) return *e;
  return VisitCompute(a.dtype, [&]<typename C>(C) -> OpResult {
    std::vector<C> out;
    auto shape = BatchedGemm<C>("`@`", a, Unpack<C>(a), b, Unpack<C>(b), out);
    if (!shape) return shape.error();
    return Pack(a.dtype, *shape, out);
  });
}

OpResult MatMulF32(const HostTensor& a, const HostTensor& b) {
  if (auto e = NeedRank("matmul_f32", a, 2)) return *e;
  if (auto e = NeedRank("matmul_f32", b, 2)) return *e;
  if (auto e = SameDtype("matmul_f32", a, b)) return *e;
  OpResult a32 = Cast(Dtype::F32, a), b32 = Cast(Dtype::F32, b);
  std::vector<float> out;
  auto shape = BatchedGemm<float>("matmul_f32", *a32, Unpack<float>(*a32), *b32, Unpack<float>(*b32), out);
  if (!shape) return shape.error();
  return Pack(Dtype::F32, *shape, out);
}

OpResult Permute(const std::vector<int>& permutation, const HostTensor& x) {
  std::string text = "[";
  for (std::size_t i = 0; i < permutation.size(); ++i) text += (i ? ", " : "") + std::to_string(permutation[i]);
  text += "]";
  if (permutation.size() != x.shape.size())
    return Error("permute " + text + " does not fit shape " + ShapeText(x.shape));
  std::vector<bool> seen(permutation.size(), false);
  for (int p : permutation) {
    if (p < 0 || p >= x.Rank() || seen[static_cast<std::size_t>(p)])
      return Error("permute " + text + " is not a permutation of the axes of " + ShapeText(x.shape));
    seen[static_cast<std::size_t>(p)] = true;
  }
  Shape contiguous = ContiguousStrides(x.shape), shape, strides;
  for (int p : permutation) {
    shape.push_back(x.shape[static_cast<std::size_t>(p)]);
    strides.push_back(contiguous[static_cast<std::size_t>(p)]);
  }
  return CopyElements(x, shape, StridedIndex(shape, strides, 0));
}

OpResult Transpose(const HostTensor& x) {
  if (auto e = NeedRank("transpose", x, 2)) return *e;
  std::vector<int> permutation(x.shape.size());
  for (std::size_t i = 0; i < permutation.size(); ++i) permutation[i] = static_cast<int>(i);
  std::swap(permutation[permutation.size() - 1], permutation[permutation.size() - 2]);
  return Permute(permutation, x);
}

OpResult Reshape(const Shape& shape, const HostTensor& x) {
  if (auto e = CheckShape(shape)) return *e;
  if (Product(shape) != x.Count())
    return Error("cannot reshape " + ShapeText(x.shape) + " (" + std::to_string(x.Count()) + " elements) to " +
                 ShapeText(shape) + " (" + std::to_string(Product(shape)) + " elements)");
  HostTensor out = x;
  out.shape = shape;
  return out;
}

OpResult Concat(const HostTensor& a, const HostTensor& b) {
  if (auto e = SameDtype("concat", a, b)) return *e;
  if (auto e = NeedRank("concat", a, 1)) return *e;
  if (a.Rank() != b.Rank() || !std::equal(a.shape.begin(), a.shape.end() - 1, b.shape.begin()))
    return Error("concat: shapes " + ShapeText(a.shape) + " and " + ShapeText(b.shape) +
                 " differ before the last axis");
  std::int64_t n = a.shape.back(), m = b.shape.back();
  Shape shape = a.shape;
  shape.back() = n + m;
  std::int64_t rows = Product(shape, 0, shape.size() - 1);
  HostTensor out = HostTensor::Zeros(a.dtype, shape);
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t i = 0; i < n; ++i) runtime::StoreBits(out, r * (n + m) + i, runtime::LoadBits(a, r * n + i));
    for (std::int64_t i = 0; i < m; ++i) runtime::StoreBits(out, r * (n + m) + n + i, runtime::LoadBits(b, r * m + i));
  }
  return out;
}

OpResult Expand(const HostTensor& x) {
  HostTensor out = x;
  out.shape.push_back(1);
  return out;
}

OpResult BroadcastTo(const Shape& shape, const HostTensor& x) {
  if (auto e = CheckShape(shape)) return *e;
  auto joint = BroadcastShapes(x.shape, shape);
  if (!joint || *joint != shape) return Error("cannot broadcast " + ShapeText(x.shape) + " to " + ShapeText(shape));
  return CopyElements(x, shape, BroadcastIndex(x.shape, shape));
}

OpResult Iota(std::int64_t n) {
  if (n < 0) return Error("iota of a negative size " + std::to_string(n));
  std::vector<std::int64_t> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = i;
  return Pack(Dtype::I64, {n}, v);
}

OpResult Zeros(Dtype dtype, const Shape& shape) {
  if (auto e = CheckShape(shape)) return *e;
  return HostTensor::Zeros(dtype, shape);
}

OpResult Ones(Dtype dtype, const Shape& shape) {
  return Full(shape, ScalarFromInt(dtype, 1));
}

OpResult Full(const Shape& shape, const HostTensor& value) {
  if (value.Rank() != 0) return Error("full needs a scalar value, got shape " + ShapeText(value.shape));
  return BroadcastTo(shape, value);
}

OpResult Stack(Dtype dtype, const Shape& element_shape, const std::vector<HostTensor>& elements) {
  if (auto e = CheckShape(element_shape)) return *e;
  Shape shape = element_shape;
  shape.insert(shape.begin(), static_cast<std::int64_t>(elements.size()));
  HostTensor out = HostTensor::Zeros(dtype, shape);
  std::int64_t size = Product(element_shape);
  for (std::size_t k = 0; k < elements.size(); ++k) {
    const HostTensor& e = elements[k];
    if (e.dtype != dtype || e.shape != element_shape)
      return Error("tensor literal: element " + std::to_string(k) + " is " + Name(e.dtype) + ShapeText(e.shape) +
                   ", expected " + Name(dtype) + ShapeText(element_shape));
    for (std::int64_t i = 0; i < size; ++i)
      runtime::StoreBits(out, static_cast<std::int64_t>(k) * size + i, runtime::LoadBits(e, i));
  }
  return out;
}

OpResult Cast(Dtype dtype, const HostTensor& x) {
  HostTensor out = HostTensor::Zeros(dtype, x.shape);
  std::int64_t n = x.Count();
  VisitCompute(x.dtype, [&]<typename C>(C) {
    std::vector<C> v = Unpack<C>(x);
    VisitDtype(dtype, [&]<Dtype D>(DtypeTag<D>) {
      std::uint8_t* p = out.bytes.data();
      for (std::int64_t i = 0; i < n; ++i) {
        C e = v[static_cast<std::size_t>(i)];
        if constexpr (D == Dtype::Bool) {
          Put<D>(p, i, e != 0);
        } else if constexpr (IsFloatDtype(D)) {
          // One rounding from the exact value: float sources are exact in double, integers go
          // through numerics' exact integer encoders.
          if constexpr (kIsFloat<C>) {
            if constexpr (D == Dtype::F32 || D == Dtype::F64)
              Put<D>(p, i, static_cast<Value<D>>(e));
            else
              runtime::StoreBits(out, i, runtime::EncodeFloat(D, e));
          } else if constexpr (std::is_signed_v<C>) {
            runtime::StoreBits(out, i, runtime::EncodeFloatFromI64(D, e));
          } else {
            runtime::StoreBits(out, i, runtime::EncodeFloatFromU64(D, e));
          }
        } else if constexpr (kIsFloat<C>) {  // float -> integer: truncate, saturate, NaN -> 0
          if constexpr (IsSignedDtype(D))
            Put<D>(p, i, runtime::CastToSigned(e, D));
          else
            Put<D>(p, i, runtime::CastToUnsigned(e, D));
        } else {  // integer -> integer: wrap
          Put<D>(p, i, static_cast<Value<D>>(e));
        }
      }
    });
  });
  return out;
}

OpResult Gather(const HostTensor& x, const HostTensor& indices) {
  if (auto e = NeedRank("gather", x, 1)) return *e;
  if (indices.dtype != Dtype::I64 || indices.Rank() != 1)
    return Error("gather needs i64[m] indices, got " + Name(indices.dtype) + ShapeText(indices.shape));
  std::int64_t n = x.shape[0];
  std::int64_t row = Product(x.shape, 1);
  Shape shape = x.shape;
  shape[0] = indices.shape[0];
  std::vector<std::int64_t> source;
  source.reserve(static_cast<std::size_t>(Product(shape)));
  for (std::int64_t k = 0; k < indices.shape[0]; ++k) {
    std::int64_t i = runtime::LoadInt64(indices, k);
    if (i < 0 || i >= n)
      return Error("gather: index " + std::to_string(i) + " is out of bounds for axis 0 of size " + std::to_string(n));
    for (std::int64_t j = 0; j < row; ++j) source.push_back(i * row + j);
  }
  return CopyElements(x, shape, source);
}

OpResult Dequant(std::int64_t group, const HostTensor& q, const HostTensor& scale) {
  if (!IsIntegerDtype(q.dtype)) return Error("dequant needs integer values, got " + Name(q.dtype));
  if (auto e = NeedFloat("dequant", scale.dtype)) return *e;
  if (auto e = NeedRank("dequant", q, 1)) return *e;
  std::int64_t k = q.shape.back();
  Shape expected = q.shape;
  if (group <= 0 || k % group != 0)
    return Error("dequant: group size " + std::to_string(group) + " does not divide " + std::to_string(k));
  expected.back() = k / group;
  if (scale.shape != expected)
    return Error("dequant: scales have shape " + ShapeText(scale.shape) + ", expected " + ShapeText(expected));
  return VisitCompute(scale.dtype, [&]<typename C>(C) -> HostTensor {
    std::vector<C> s = Unpack<C>(scale);
    std::vector<C> out(static_cast<std::size_t>(q.Count()));
    VisitCompute(q.dtype, [&]<typename Q>(Q) {
      if constexpr (std::is_integral_v<Q>) {
        std::vector<Q> v = Unpack<Q>(q);
        for (std::size_t i = 0; i < out.size(); ++i) {
          std::size_t row = i / static_cast<std::size_t>(k), col = i % static_cast<std::size_t>(k);
          out[i] = static_cast<C>(v[i]) *
                   s[row * static_cast<std::size_t>(k / group) + col / static_cast<std::size_t>(group)];
        }
      }
    });
    return Pack(scale.dtype, q.shape, out);
  });
}

OpResult Index(const HostTensor& x, const std::vector<IndexItem>& items) {
  if (items.size() > x.shape.size())
    return Error(std::to_string(items.size()) + " indices for shape " + ShapeText(x.shape));
  Shape contiguous = ContiguousStrides(x.shape), shape, strides;
  std::int64_t offset = 0;
  for (std::size_t axis = 0; axis < x.shape.size(); ++axis) {
    std::int64_t size = x.shape[axis];
    std::string where = " for axis " + std::to_string(axis) + " of size " + std::to_string(size);
    if (axis >= items.size() || std::holds_alternative<All>(items[axis])) {
      shape.push_back(size);
      strides.push_back(contiguous[axis]);
    } else if (const auto* i = std::get_if<std::int64_t>(&items[axis])) {
      if (*i < 0 || *i >= size) return Error("index " + std::to_string(*i) + " is out of bounds" + where);
      offset += *i * contiguous[axis];
    } else {
      const Slice& s = std::get<Slice>(items[axis]);
      if (s.begin < 0 || s.begin > s.end || s.end > size)
        return Error("slice " + std::to_string(s.begin) + ":" + std::to_string(s.end) + " is out of bounds" + where);
      offset += s.begin * contiguous[axis];
      shape.push_back(s.end - s.begin);
      strides.push_back(contiguous[axis]);
    }
  }
  return CopyElements(x, shape, StridedIndex(shape, strides, offset));
}

}  // namespace weft::interp
