// The built-ins as the evaluator calls them: each takes its collected arguments (a shape argument
// arrives as an i64 vector) and computes with ops.h, or with the runtime for the host-only ones
// (`load`, `save`, `random`, `print`, `arg`, `time`). The dtype of a result that no argument
// carries (`zeros`, `random`, `map`) comes from the built-in's type where it is used.
#include <chrono>
#include <filesystem>
#include <iostream>
#include <map>

#include "core/type_printer.h"
#include "interp/eval.h"
#include "weft/npy.h"
#include "weft/numerics.h"
#include "weft/random.h"

namespace weft::interp {
namespace {

const std::map<std::string, std::size_t, std::less<>>& Arities() {
  static const std::map<std::string, std::size_t, std::less<>> arities = {
      {"+", 2},
      {"-", 2},
      {"*", 2},
      {"/", 2},
      {"%", 2},
      {"==", 2},
      {"!=", 2},
      {"<", 2},
      {"<=", 2},
      {">", 2},
      {">=", 2},
      {"&&", 2},
      {"||", 2},
      {"@", 2},
      {"|>", 2},
      {"negate", 1},
      {"map", 2},
      {"map2", 3},
      {"reduce", 3},
      {"scan", 3},
      {"sum", 1},
      {"max", 1},
      {"min", 1},
      {"mean", 1},
      {"argmax", 1},
      {"maximum", 2},
      {"minimum", 2},
      {"select", 3},
      {"exp", 1},
      {"log", 1},
      {"sqrt", 1},
      {"rsqrt", 1},
      {"tanh", 1},
      {"sigmoid", 1},
      {"sin", 1},
      {"cos", 1},
      {"abs", 1},
      {"matmul_f32", 2},
      {"transpose", 1},
      {"permute", 2},
      {"reshape", 2},
      {"concat", 2},
      {"expand", 1},
      {"iota", 1},
      {"zeros", 1},
      {"ones", 1},
      {"full", 2},
      {"gather", 2},
      {"dequant", 3},
      {"load", 1},
      {"save", 2},
      {"random", 2},
      {"arg", 1},
      {"print", 1},
      {"time", 1},
      // The kernel operations (docs/kernels.md), inside kernel runs.
      {"block_idx", 0},
      {"tile", 3},
      {"shared", 1},
      {"regs", 1},
      {"convert", 1},
      {"mma", 3},
      {"store", 2},
  };
  return arities;
}

const std::map<std::string, BinaryOp, std::less<>>& BinaryOps() {
  static const std::map<std::string, BinaryOp, std::less<>> ops = {
      {"+", BinaryOp::Add},           {"-", BinaryOp::Sub},
      {"*", BinaryOp::Mul},           {"/", BinaryOp::Div},
      {"%", BinaryOp::Mod},           {"==", BinaryOp::Eq},
      {"!=", BinaryOp::Ne},           {"<", BinaryOp::Lt},
      {"<=", BinaryOp::Le},           {">", BinaryOp::Gt},
      {">=", BinaryOp::Ge},           {"&&", BinaryOp::And},
      {"||", BinaryOp::Or},           {"maximum", BinaryOp::Maximum},
      {"minimum", BinaryOp::Minimum},
  };
  return ops;
}

const std::map<std::string, UnaryOp, std::less<>>& UnaryOps() {
  static const std::map<std::string, UnaryOp, std::less<>> ops = {
      {"negate", UnaryOp::Neg}, {"abs", UnaryOp::Abs},     {"exp", UnaryOp::Exp},   {"log", UnaryOp::Log},
      {"sqrt", UnaryOp::Sqrt},  {"rsqrt", UnaryOp::Rsqrt}, {"tanh", UnaryOp::Tanh}, {"sigmoid", UnaryOp::Sigmoid},
      {"sin", UnaryOp::Sin},    {"cos", UnaryOp::Cos},
  };
  return ops;
}

const HostTensor& TensorArg(const Function& fn, std::size_t i) {
  return std::get<HostTensor>(fn.args[i]->node);
}

std::vector<std::int64_t> ShapeArg(const HostTensor& t) {
  std::vector<std::int64_t> dims;
  for (std::int64_t i = 0; i < t.Count(); ++i) dims.push_back(runtime::LoadInt64(t, i));
  return dims;
}

std::string ResolvePath(const InterpreterOptions& options, const std::string& path) {
  if (options.base_dir.empty() || std::filesystem::path(path).is_absolute()) return path;
  return (std::filesystem::path(options.base_dir) / path).string();
}

}  // namespace

std::optional<std::size_t> BuiltinArity(std::string_view name) {
  auto it = Arities().find(name);
  if (it == Arities().end()) return std::nullopt;
  return it->second;
}

EvalResult<ValueRef> Evaluator::CallBuiltin(const Function& fn, Span span) {
  const std::string& name = fn.builtin;
  Frame frame{vars, fn.subst, nullptr, 0, {}, false};
  auto result_dtype = [&]() -> Dtype {
    TypeRef r = core::ResultAfter(vars, fn.type, fn.arity);
    const auto* t = std::get_if<TensorType>(&r->node);
    return t ? frame.ElemOf(t->elem) : Dtype::F32;
  };
  // A weft function value called on scalars by an op (map, reduce, scan).
  auto scalar_fn1 = [&](const ValueRef& f) {
    return [this, f, span](const HostTensor& a) -> OpResult {
      EvalResult<ValueRef> r = Call(f, MakeValue(HostTensor(a)), span);
      if (!r) {
        pending_error = r.error();
        return OpError{r.error().message};
      }
      return std::get<HostTensor>((*r)->node);
    };
  };
  auto scalar_fn2 = [&](const ValueRef& f) {
    return [this, f, span](const HostTensor& a, const HostTensor& b) -> OpResult {
      EvalResult<ValueRef> partial = Call(f, MakeValue(HostTensor(a)), span);
      if (!partial) {
        pending_error = partial.error();
        return OpError{partial.error().message};
      }
      EvalResult<ValueRef> r = Call(*partial, MakeValue(HostTensor(b)), span);
      if (!r) {
        pending_error = r.error();
        return OpError{r.error().message};
      }
      return std::get<HostTensor>((*r)->node);
    };
  };

  if (name == "block_idx" || name == "tile" || name == "shared" || name == "regs" || name == "convert" ||
      name == "mma" || name == "store") {
    return CallKernelOp(fn, span);
  }
  if (auto op = BinaryOps().find(name); op != BinaryOps().end()) {
    return Lift(Binary(op->second, TensorArg(fn, 0), TensorArg(fn, 1)), span);
  }
  if (auto op = UnaryOps().find(name); op != UnaryOps().end()) return Lift(Unary(op->second, TensorArg(fn, 0)), span);
  if (name == "@") return Lift(MatMul(TensorArg(fn, 0), TensorArg(fn, 1)), span);
  if (name == "|>") return Call(fn.args[1], fn.args[0], span);
  if (name == "sum") return Lift(Reduce(ReduceOp::Sum, TensorArg(fn, 0)), span);
  if (name == "max") return Lift(Reduce(ReduceOp::Max, TensorArg(fn, 0)), span);
  if (name == "min") return Lift(Reduce(ReduceOp::Min, TensorArg(fn, 0)), span);
  if (name == "mean") return Lift(Reduce(ReduceOp::Mean, TensorArg(fn, 0)), span);
  if (name == "argmax") return Lift(Argmax(TensorArg(fn, 0)), span);
  if (name == "select") return Lift(Select(TensorArg(fn, 0), TensorArg(fn, 1), TensorArg(fn, 2)), span);
  if (name == "map") return Lift(Map(scalar_fn1(fn.args[0]), TensorArg(fn, 1), result_dtype()), span);
  if (name == "map2") {
    return Lift(Map2(scalar_fn2(fn.args[0]), TensorArg(fn, 1), TensorArg(fn, 2), result_dtype()), span);
  }
  if (name == "reduce") return Lift(ReduceWith(scalar_fn2(fn.args[0]), TensorArg(fn, 1), TensorArg(fn, 2)), span);
  if (name == "scan") return Lift(ScanWith(scalar_fn2(fn.args[0]), TensorArg(fn, 1), TensorArg(fn, 2)), span);
  if (name == "matmul_f32") return Lift(MatMulF32(TensorArg(fn, 0), TensorArg(fn, 1)), span);
  if (name == "transpose") return Lift(Transpose(TensorArg(fn, 0)), span);
  if (name == "permute") {
    std::vector<int> order;
    for (std::int64_t p : ShapeArg(TensorArg(fn, 0))) order.push_back(static_cast<int>(p));
    return Lift(Permute(order, TensorArg(fn, 1)), span);
  }
  if (name == "reshape") return Lift(Reshape(ShapeArg(TensorArg(fn, 0)), TensorArg(fn, 1)), span);
  if (name == "concat") return Lift(Concat(TensorArg(fn, 0), TensorArg(fn, 1)), span);
  if (name == "expand") return Lift(Expand(TensorArg(fn, 0)), span);
  if (name == "iota") return Lift(Iota(ShapeArg(TensorArg(fn, 0)).at(0)), span);
  if (name == "zeros") return Lift(Zeros(result_dtype(), ShapeArg(TensorArg(fn, 0))), span);
  if (name == "ones") return Lift(Ones(result_dtype(), ShapeArg(TensorArg(fn, 0))), span);
  if (name == "full") return Lift(Full(ShapeArg(TensorArg(fn, 0)), TensorArg(fn, 1)), span);
  if (name == "gather") return Lift(Gather(TensorArg(fn, 0), TensorArg(fn, 1)), span);
  if (name == "dequant") {
    return Lift(Dequant(ShapeArg(TensorArg(fn, 0)).at(0), TensorArg(fn, 1), TensorArg(fn, 2)), span);
  }
  if (name == "random") {
    HostTensor t = HostTensor::Zeros(result_dtype(), ShapeArg(TensorArg(fn, 0)));
    runtime::FillRandom(t, static_cast<std::uint64_t>(runtime::LoadInt64(TensorArg(fn, 1), 0)));
    return MakeValue(std::move(t));
  }
  if (name == "arg") {
    std::int64_t i = runtime::LoadInt64(TensorArg(fn, 0), 0);
    if (i < 0 || static_cast<std::size_t>(i) >= options.args.size()) {
      std::size_t given = options.args.empty() ? 0 : options.args.size() - 1;
      return RuntimeError{span, "`arg " + std::to_string(i) + "`: the program was given " + std::to_string(given) +
                                    (given == 1 ? " argument" : " arguments") + " after its name"};
    }
    return MakeValue(std::string(options.args[static_cast<std::size_t>(i)]));
  }
  if (name == "print") {
    std::ostream& out = options.out ? *options.out : std::cout;
    out << ShowValue(*fn.args[0]) << "\n";
    out.flush();
    return MakeValue(Tuple{});
  }
  if (name == "save") {
    const std::string& path = std::get<std::string>(fn.args[0]->node);
    auto written = runtime::WriteNpy(ResolvePath(options, path), TensorArg(fn, 1));
    if (!written) return RuntimeError{span, written.error().message};
    return MakeValue(Tuple{});
  }
  if (name == "load") {
    const std::string& path = std::get<std::string>(fn.args[0]->node);
    auto tensor = runtime::ReadNpy(ResolvePath(options, path));
    if (!tensor) return RuntimeError{span, tensor.error().message};
    ValueRef value = MakeValue(std::move(*tensor));
    TypeRef expected = core::ResultAfter(vars, fn.type, fn.arity);
    if (auto mismatch = MatchValue(vars, expected, *value, frame)) {
      const HostTensor& t = std::get<HostTensor>(value->node);
      return RuntimeError{span, path + ": the program expects `" + core::TypePrinter(vars).Print(expected) +
                                    "` but the file holds " + std::string(Spelling(t.dtype)) +
                                    runtime::ShapeText(t.shape) + ": " + *mismatch};
    }
    return value;
  }
  if (name == "time") {
    auto start = std::chrono::steady_clock::now();
    EvalResult<ValueRef> r = Call(fn.args[0], MakeValue(Tuple{}), span);
    if (!r) return r;
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return MakeValue(Tuple{*r, MakeValue(ScalarFromDouble(Dtype::F64, ms))});
  }
  return RuntimeError{span, "internal: the built-in `" + name + "` has no implementation"};
}

EvalResult<ValueRef> Evaluator::CallKernelOp(const Function& fn, Span span) {
  // The kernel tier's meaning with spaces and layouts ignored (docs/kernels.md): `tile` of an input
  // is its elements (a copy: inputs never change), of an `out` parameter a reference `store` writes
  // through; `shared`, `regs` and `convert` are the identity on values; `mma` is matmul_f32 plus
  // the accumulator.
  const std::string& name = fn.builtin;
  if (kernels.empty()) return RuntimeError{span, "internal: `" + name + "` outside a kernel run"};
  KernelRun& run = kernels.back();
  if (name == "block_idx") {
    if (run.block.size() == 1) return MakeValue(ScalarFromInt(Dtype::I64, run.block[0]));
    Tuple coords;
    for (std::int64_t b : run.block) coords.push_back(MakeValue(ScalarFromInt(Dtype::I64, b)));
    return MakeValue(std::move(coords));
  }
  if (name == "shared" || name == "regs" || name == "convert") return fn.args[0];
  if (name == "mma") {
    OpResult product = MatMulF32(TensorArg(fn, 0), TensorArg(fn, 1));
    if (!product) return Lift(std::move(product), span);
    return Lift(Binary(BinaryOp::Add, TensorArg(fn, 2), *product), span);
  }
  if (name == "tile") {
    const auto* out = std::get_if<OutRef>(&fn.args[0]->node);
    const HostTensor* input = std::get_if<HostTensor>(&fn.args[0]->node);
    std::vector<std::int64_t> dims = out ? run.outs.at(out->index).shape : input->shape;
    std::vector<std::int64_t> extents = ShapeArg(TensorArg(fn, 1));
    std::vector<std::int64_t> coords;
    if (const auto* tuple = std::get_if<Tuple>(&fn.args[2]->node)) {
      for (const ValueRef& c : *tuple) coords.push_back(runtime::LoadInt64(std::get<HostTensor>(c->node), 0));
    } else {
      coords.push_back(runtime::LoadInt64(TensorArg(fn, 2), 0));
    }
    std::size_t q = dims.size(), r = extents.size();
    if (coords.size() != q || r > q) return RuntimeError{span, "internal: `tile` with coordinates unlike its tensor's"};
    std::vector<std::int64_t> origin(q), size(q, 1);
    for (std::size_t axis = 0; axis < q; ++axis) {
      std::int64_t c = coords[axis];
      bool tiled = axis >= q - r;
      std::int64_t t = tiled ? extents[axis - (q - r)] : 1;
      std::int64_t count = dims[axis] / t;
      if (c < 0 || c >= count) {
        std::string what = tiled ? "tiles of " + std::to_string(t) : "indices";
        return RuntimeError{span, "tile coordinate " + std::to_string(c) + " along axis " + std::to_string(axis) +
                                      " is out of range: an axis of " + std::to_string(dims[axis]) + " has " +
                                      std::to_string(count) + " " + what + " (0 to " + std::to_string(count - 1) + ")"};
      }
      origin[axis] = c * t;
      size[axis] = t;
    }
    if (out) return MakeValue(OutRef{out->index, true, origin, size});
    // Copy the elements of the tile, row-major.
    HostTensor t = HostTensor::Zeros(input->dtype, extents);
    std::vector<std::int64_t> strides(q, 1);
    for (std::size_t axis = q; axis-- > 1;) strides[axis - 1] = strides[axis] * dims[axis];
    std::vector<std::int64_t> at(q, 0);
    for (std::int64_t i = 0, n = t.Count(); i < n; ++i) {
      std::int64_t flat = 0;
      for (std::size_t axis = 0; axis < q; ++axis) flat += (origin[axis] + at[axis]) * strides[axis];
      runtime::StoreBits(t, i, runtime::LoadBits(*input, flat));
      for (std::size_t axis = q; axis-- > 0;) {
        if (++at[axis] < size[axis]) break;
        at[axis] = 0;
      }
    }
    return MakeValue(std::move(t));
  }
  // store dst v: v's elements into the out tensor's tile, row-major.
  const auto* dst = std::get_if<OutRef>(&fn.args[0]->node);
  if (!dst || !dst->tile) return RuntimeError{span, "internal: `store` into something other than an out tile"};
  const HostTensor& v = TensorArg(fn, 1);
  HostTensor& target = run.outs.at(dst->index);
  std::size_t q = target.shape.size();
  std::int64_t count = 1;
  for (std::int64_t e : dst->extents) count *= e;
  if (v.Count() != count || v.dtype != target.dtype) {
    return RuntimeError{span, "internal: `store` of " + std::string(Spelling(v.dtype)) + runtime::ShapeText(v.shape) +
                                  " into a tile of " + std::to_string(count) + " elements"};
  }
  std::vector<std::int64_t> strides(q, 1);
  for (std::size_t axis = q; axis-- > 1;) strides[axis - 1] = strides[axis] * target.shape[axis];
  std::vector<std::int64_t> at(q, 0);
  for (std::int64_t i = 0; i < count; ++i) {
    std::int64_t flat = 0;
    for (std::size_t axis = 0; axis < q; ++axis) flat += (dst->origin[axis] + at[axis]) * strides[axis];
    runtime::StoreBits(target, flat, runtime::LoadBits(v, i));
    for (std::size_t axis = q; axis-- > 0;) {
      if (++at[axis] < dst->extents[axis]) break;
      at[axis] = 0;
    }
  }
  return MakeValue(Tuple{});
}

}  // namespace weft::interp
