// Layout-algebra operations by name, and printing values; see expr.h.
#include "layout/expr.h"

namespace weft::layout {

std::string KindName(const Value& v) {
  switch (v.index()) {
    case 0:
      return "a shape";
    case 1:
      return "a layout";
    case 2:
      return "a tiler";
    case 3:
      return "a swizzle";
    default:
      return "a swizzled layout";
  }
}

namespace {

Result<Layout> AsLayout(const Value& v, std::string_view op, int i) {
  if (auto* l = std::get_if<Layout>(&v)) return *l;
  if (auto* t = std::get_if<IntTuple>(&v)) return Layout::Compact(*t);
  return MakeError("`" + std::string(op) + "` expects a layout as argument " + std::to_string(i + 1) + ", not " +
                   KindName(v) + " `" + ToString(v) + "`");
}

Result<Tiler> AsTiler(const Value& v, std::string_view op, int i) {
  if (auto* l = std::get_if<Layout>(&v)) return Tiler(*l);
  if (auto* t = std::get_if<std::vector<Layout>>(&v)) return Tiler(*t);
  if (auto* s = std::get_if<IntTuple>(&v)) {
    if (s->is_leaf()) return Tiler(Layout(*s, 1));
    std::vector<Layout> modes;
    for (const IntTuple& e : s->elems()) modes.push_back(Layout::Compact(e));
    return Tiler(modes);
  }
  return MakeError("`" + std::string(op) + "` expects a layout or tiler as argument " + std::to_string(i + 1) +
                   ", not " + KindName(v) + " `" + ToString(v) + "`");
}

Result<std::int64_t> AsInt(const Value& v, std::string_view op, int i) {
  if (auto* t = std::get_if<IntTuple>(&v); t && t->is_leaf()) return t->value();
  return MakeError("`" + std::string(op) + "` expects an integer as argument " + std::to_string(i + 1) + ", not " +
                   KindName(v) + " `" + ToString(v) + "`");
}

Result<Value> Lift(Result<Layout> r) {
  if (!r) return Error{r.error()};
  return Value(*r);
}

}  // namespace

std::string ToString(const Value& value) {
  switch (value.index()) {
    case 0:
      return ToString(std::get<0>(value));
    case 1:
      return ToString(std::get<1>(value));
    case 2:
      return ToString(Tiler(std::get<2>(value)));
    case 3:
      return ToString(std::get<3>(value));
    default:
      return ToString(std::get<4>(value));
  }
}

const std::vector<std::pair<std::string, std::string>>& Operations() {
  static const std::vector<std::pair<std::string, std::string>> ops = {
      {"size", "size(L): the number of coordinates"},
      {"cosize", "cosize(L): one past the largest offset"},
      {"rank", "rank(L): the number of top-level modes"},
      {"depth", "depth(L): the nesting depth of the shape"},
      {"shape", "shape(L)"},
      {"stride", "stride(L)"},
      {"coalesce", "coalesce(L[, profile]): the same function with the fewest modes"},
      {"flatten", "flatten(L): the same function with depth <= 1"},
      {"filter", "filter(L): drop stride-0 and size-1 modes"},
      {"composition", "composition(A, B, ...): A o B o ...; A may be a swizzle or swizzled layout"},
      {"complement", "complement(A[, cotarget]): the layout filling out [0, cotarget) after A"},
      {"right_inverse", "right_inverse(L): R with L(R(i)) == i"},
      {"left_inverse", "left_inverse(L): R with R(L(i)) == i for injective L"},
      {"logical_divide", "logical_divide(A, tiler): ((tile), (rest))"},
      {"zipped_divide", "zipped_divide(A, tiler): ((tile modes), (rest modes))"},
      {"tiled_divide", "tiled_divide(A, tiler): ((tile modes), rest0, rest1, ...)"},
      {"logical_product", "logical_product(A, tiler): (A, complement(A, size(A)*cosize(B)) o B)"},
      {"blocked_product", "blocked_product(A, B): A's block repeated over B, mode by mode"},
      {"raked_product", "raked_product(A, B): A's elements interleaved across B's copies"},
      {"make_layout", "make_layout(shape[, stride]) or make_layout(L0, L1, ...): build or concatenate"},
      {"swizzle", "swizzle(B, M, S): Sw<B,M,S>"},
      {"eval", "eval(L, coord): the offset of a coordinate (an index or a natural coordinate)"},
  };
  return ops;
}

Result<Value> Apply(std::string_view name, const std::vector<Value>& args) {
  std::string op(name);
  auto arity = [&](std::size_t lo, std::size_t hi) -> Result<bool> {
    if (args.size() < lo || args.size() > hi) {
      std::string expect = lo == hi ? std::to_string(lo) : std::to_string(lo) + " to " + std::to_string(hi);
      return MakeError("`" + op + "` takes " + expect + " arguments, got " + std::to_string(args.size()));
    }
    return true;
  };
#define WEFT_ARITY(lo, hi)                            \
  if (auto a = arity(lo, hi); !a.ok()) return Error { \
      a.error()                                       \
    }
#define WEFT_LAYOUT_ARG(var, i) WEFT_LAYOUT_TRY(var, AsLayout(args[i], op, i))

  if (op == "size" || op == "cosize" || op == "rank" || op == "depth" || op == "shape" || op == "stride") {
    WEFT_ARITY(1, 1);
    if (auto* s = std::get_if<SwizzledLayout>(&args[0]); s && op == "size") return Value(IntTuple(s->size()));
    WEFT_LAYOUT_ARG(l, 0);
    if (op == "size") return Value(IntTuple(l.size()));
    if (op == "cosize") return Value(IntTuple(l.cosize()));
    if (op == "rank") return Value(IntTuple(l.rank()));
    if (op == "depth") return Value(IntTuple(l.depth()));
    if (op == "shape") return Value(l.shape());
    return Value(l.stride());
  }
  if (op == "coalesce") {
    WEFT_ARITY(1, 2);
    WEFT_LAYOUT_ARG(l, 0);
    if (args.size() == 2) {
      auto* profile = std::get_if<IntTuple>(&args[1]);
      if (!profile) return MakeError("`coalesce` expects a profile such as `(1,1)` as argument 2");
      return Lift(Coalesce(l, *profile));
    }
    return Value(Coalesce(l));
  }
  if (op == "flatten" || op == "filter" || op == "right_inverse" || op == "left_inverse") {
    WEFT_ARITY(1, 1);
    WEFT_LAYOUT_ARG(l, 0);
    if (op == "flatten") return Value(Flatten(l));
    if (op == "filter") return Value(Filter(l));
    if (op == "right_inverse") return Value(RightInverse(l));
    return Lift(LeftInverse(l));
  }
  if (op == "composition") {
    if (args.size() < 2)
      return MakeError("`composition` takes at least 2 arguments, got " + std::to_string(args.size()));
    Value acc = args[0];
    for (std::size_t i = 1; i < args.size(); ++i) {
      if (auto* sw = std::get_if<Swizzle>(&acc)) {
        WEFT_LAYOUT_TRY(b, AsLayout(args[i], op, static_cast<int>(i)));
        acc = Compose(*sw, b);
      } else if (auto* sl = std::get_if<SwizzledLayout>(&acc)) {
        WEFT_LAYOUT_TRY(b, AsLayout(args[i], op, static_cast<int>(i)));
        WEFT_LAYOUT_TRY(r, Compose(*sl, b));
        acc = r;
      } else {
        WEFT_LAYOUT_TRY(a, AsLayout(acc, op, 0));
        WEFT_LAYOUT_TRY(t, AsTiler(args[i], op, static_cast<int>(i)));
        WEFT_LAYOUT_TRY(r, Composition(a, t));
        acc = r;
      }
    }
    return acc;
  }
  if (op == "complement") {
    WEFT_ARITY(1, 2);
    WEFT_LAYOUT_ARG(l, 0);
    if (args.size() == 1) return Lift(Complement(l));
    if (auto* t = std::get_if<IntTuple>(&args[1])) return Lift(Complement(l, *t));
    return MakeError("`complement` expects an integer or a shape as its cotarget, not " + KindName(args[1]));
  }
  if (op == "logical_divide" || op == "zipped_divide" || op == "tiled_divide" || op == "logical_product") {
    WEFT_ARITY(2, 2);
    WEFT_LAYOUT_ARG(a, 0);
    WEFT_LAYOUT_TRY(t, AsTiler(args[1], op, 1));
    if (op == "logical_divide") return Lift(LogicalDivide(a, t));
    if (op == "zipped_divide") return Lift(ZippedDivide(a, t));
    if (op == "tiled_divide") return Lift(TiledDivide(a, t));
    return Lift(LogicalProduct(a, t));
  }
  if (op == "blocked_product" || op == "raked_product") {
    WEFT_ARITY(2, 2);
    WEFT_LAYOUT_ARG(a, 0);
    WEFT_LAYOUT_ARG(b, 1);
    return Lift(op == "blocked_product" ? BlockedProduct(a, b) : RakedProduct(a, b));
  }
  if (op == "make_layout") {
    if (args.empty()) return MakeError("`make_layout` takes at least 1 argument");
    auto* shape = std::get_if<IntTuple>(&args[0]);
    if (shape && args.size() <= 2) {
      if (args.size() == 1) return Value(Layout::Compact(*shape));
      auto* stride = std::get_if<IntTuple>(&args[1]);
      if (!stride) return MakeError("`make_layout(shape, stride)` expects an integer tuple as the stride");
      return Lift(Layout::Make(*shape, *stride));
    }
    std::vector<Layout> modes;
    for (std::size_t i = 0; i < args.size(); ++i) {
      WEFT_LAYOUT_TRY(m, AsLayout(args[i], op, static_cast<int>(i)));
      modes.push_back(m);
    }
    return Value(Layout::Tuple(modes));
  }
  if (op == "swizzle") {
    WEFT_ARITY(3, 3);
    WEFT_LAYOUT_TRY(b, AsInt(args[0], op, 0));
    WEFT_LAYOUT_TRY(m, AsInt(args[1], op, 1));
    WEFT_LAYOUT_TRY(s, AsInt(args[2], op, 2));
    auto sw = Swizzle::Make(static_cast<int>(b), static_cast<int>(m), static_cast<int>(s));
    if (!sw) return Error{sw.error()};
    return Value(*sw);
  }
  if (op == "eval") {
    WEFT_ARITY(2, 2);
    auto* coord = std::get_if<IntTuple>(&args[1]);
    if (!coord) return MakeError("`eval` expects a coordinate as argument 2");
    if (auto* sl = std::get_if<SwizzledLayout>(&args[0])) {
      WEFT_LAYOUT_TRY(o, sl->Evaluate(*coord));
      return Value(IntTuple(o));
    }
    if (auto* sw = std::get_if<Swizzle>(&args[0]); sw && coord->is_leaf())
      return Value(IntTuple((*sw)(coord->value())));
    WEFT_LAYOUT_ARG(l, 0);
    WEFT_LAYOUT_TRY(o, l.Evaluate(*coord));
    return Value(IntTuple(o));
  }
#undef WEFT_ARITY
#undef WEFT_LAYOUT_ARG
  std::string known;
  for (const auto& [n, _] : Operations()) known += (known.empty() ? "" : ", ") + n;
  return MakeError("unknown layout operation `" + op + "` (known: " + known + ")");
}

}  // namespace weft::layout
