// The layout algebra; contracts in algebra.h, pictures in docs/layouts.md.
//
// composition(A, B), for each leaf mode s:d of B (B's tuple modes are composed one by one):
//   1. flatten A, keeping its extension past size(A) (CoalesceExtended);
//   2. walk A's modes but the last: divide d out of each mode (a mode whose size divides d is
//      skipped entirely); the first mode that d does not exhaust contributes min(its remaining size,
//      s) elements at stride d * mode stride; continue with the rest of s at stride 1;
//   3. whatever is left of s lands on A's last mode, which is unbounded.
//   Each step checks CuTe's divisibility conditions; finally the result is checked against
//   A(B(c)) at every c (layouts here are tile-sized), which catches what the static conditions
//   cannot see (e.g. two modes of B landing on the same part of A).
// complement(A, M): filter A, sort its modes by stride, fill each gap below a mode's stride with a
//   mode of the complement, then one mode from the end of A's footprint up to M.
// right_inverse / left_inverse: coalesce, sort modes by stride, and follow the chain of strides
//   d_{k+1} == s_k * d_k, mapping each offset back to its position (prefix product of the shape).
#include "layout/algebra.h"

#include <algorithm>
#include <numeric>
#include <unordered_set>

namespace weft::layout {

namespace {

using Modes = std::vector<std::pair<std::int64_t, std::int64_t>>;

std::int64_t CeilDiv(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}

// Layouts are tile-sized; past this many coordinates the brute-force checks are skipped.
constexpr std::int64_t kCheckLimit = std::int64_t{1} << 22;

Result<Layout> ComposeLeaf(const Modes& lhs, const Layout& a, const Layout& b, std::int64_t s, std::int64_t d) {
  if (d == 0) return Layout(s, 0);
  if (d < 0) return MakeError("cannot compose with `" + ToString(b) + "`: negative strides are not supported");
  if (lhs.size() == 1) return Layout(s, d * lhs[0].second);
  Modes result;
  std::int64_t rest_shape = s;
  std::int64_t rest_stride = d;
  for (std::size_t i = 0; i + 1 < lhs.size(); ++i) {
    auto [cs, cd] = lhs[i];
    if (rest_shape == 1 || rest_stride % cs == 0) {
      rest_stride = CeilDiv(rest_stride, cs);
      continue;
    }
    if (rest_stride > cs) {
      return MakeError("cannot compose `" + ToString(a) + "` with `" + ToString(b) + "`: stride " +
                       std::to_string(rest_stride) + " neither divides nor is a multiple of mode size " +
                       std::to_string(cs) + " (stride divisibility)");
    }
    std::int64_t next_shape = CeilDiv(cs, rest_stride);
    if (cs % rest_stride != 0 && rest_shape > next_shape) {
      return MakeError("cannot compose `" + ToString(a) + "` with `" + ToString(b) + "`: stride " +
                       std::to_string(rest_stride) + " does not divide mode size " + std::to_string(cs) +
                       " (stride divisibility)");
    }
    std::int64_t new_shape = std::min(next_shape, rest_shape);
    if (rest_shape % new_shape != 0) {
      return MakeError("cannot compose `" + ToString(a) + "` with `" + ToString(b) + "`: " + std::to_string(new_shape) +
                       " elements fit in a mode of size " + std::to_string(cs) + " but " + std::to_string(rest_shape) +
                       " is not a multiple of " + std::to_string(new_shape) + " (shape divisibility)");
    }
    result.emplace_back(new_shape, rest_stride * cd);
    rest_shape /= new_shape;
    rest_stride = CeilDiv(rest_stride, cs);
  }
  std::int64_t last_stride = lhs.back().second;
  if (result.empty()) return Layout(rest_shape, rest_stride * last_stride);
  if (rest_shape != 1) result.emplace_back(rest_shape, rest_stride * last_stride);
  return FromFlatModes(result);
}

Result<Layout> ComposeImpl(const Modes& lhs, const Layout& a, const Layout& b, const IntTuple& rs, const IntTuple& rd) {
  if (rs.is_leaf()) return ComposeLeaf(lhs, a, b, rs.value(), rd.value());
  std::vector<Layout> modes;
  for (int i = 0; i < rs.rank(); ++i) {
    auto m = ComposeImpl(lhs, a, b, rs[i], rd[i]);
    if (!m) return m;
    modes.push_back(*m);
  }
  return Layout::Tuple(modes);
}

// CuTe's ceil_div(IntTuple, int): divide mode by mode, carrying what is left of the divisor.
std::int64_t CeilDivShapeSize(const IntTuple& shape, std::int64_t& divisor) {
  if (shape.is_leaf()) {
    std::int64_t q = CeilDiv(shape.value(), divisor);
    divisor = CeilDiv(divisor, shape.value());
    return q;
  }
  std::int64_t product = 1;
  for (const IntTuple& e : shape.elems()) product *= CeilDivShapeSize(e, divisor);
  return product;
}

Result<Layout> ComplementImpl(const Layout& a, const IntTuple& cotarget) {
  if (Product(cotarget) < 1) return MakeError("complement needs a cotarget of at least 1");
  Layout f = Filter(a);
  Modes modes = FlatModes(f);
  if (modes.size() == 1 && modes[0].second == 0) return Coalesce(Layout(Product(cotarget), 1));
  for (auto [s, d] : modes)
    if (d < 0) return MakeError("complement of `" + ToString(a) + "` does not exist: negative stride");
  std::stable_sort(modes.begin(), modes.end(), [](auto x, auto y) { return x.second < y.second; });
  Modes result;
  std::int64_t curr = 1;
  for (auto [s, d] : modes) {
    if (d < curr) {
      return MakeError("complement of `" + ToString(a) + "` does not exist: stride " + std::to_string(d) +
                       " falls inside the span " + std::to_string(curr) + " of the smaller strides");
    }
    if (d % curr != 0) {
      return MakeError("complement of `" + ToString(a) + "` does not exist: stride " + std::to_string(d) +
                       " is not a multiple of " + std::to_string(curr) + ", the span of the smaller strides");
    }
    result.emplace_back(d / curr, curr);
    curr = s * d;
  }
  std::int64_t divisor = curr;
  result.emplace_back(CeilDivShapeSize(cotarget, divisor), curr);
  return Coalesce(FromFlatModes(result));
}

std::vector<std::size_t> SortedByStride(const Modes& modes) {
  std::vector<std::size_t> order(modes.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](auto x, auto y) { return modes[x].second < modes[y].second; });
  return order;
}

std::vector<std::int64_t> Shapes(const Modes& modes) {
  std::vector<std::int64_t> s;
  for (auto [shape, stride] : modes) s.push_back(shape);
  return s;
}

Layout PadToRank(const Layout& l, int rank) {
  if (l.rank() >= rank) return l;
  std::vector<Layout> modes;
  if (l.shape().is_leaf()) {
    modes.push_back(l);
  } else {
    for (int i = 0; i < l.rank(); ++i) modes.push_back(l.Mode(i));
  }
  while (static_cast<int>(modes.size()) < rank) modes.emplace_back(1, 0);
  return Layout::Tuple(modes);
}

std::vector<Layout> TopModes(const Layout& l) {
  std::vector<Layout> modes;
  if (l.shape().is_leaf()) {
    modes.push_back(l);
  } else {
    for (int i = 0; i < l.rank(); ++i) modes.push_back(l.Mode(i));
  }
  return modes;
}

// Mode by mode over a tiler tuple; `op` is the single-layout operation.
template <typename Op>
Result<Layout> ByMode(const Layout& a, const std::vector<Layout>& tiles, const char* name, Op op) {
  if (static_cast<int>(tiles.size()) > a.rank()) {
    return MakeError(std::string(name) + ": the tiler has " + std::to_string(tiles.size()) + " modes but `" +
                     ToString(a) + "` has only " + std::to_string(a.rank()));
  }
  if (tiles.empty()) return a;
  std::vector<Layout> modes;
  if (a.shape().is_leaf()) {  // a rank-1 layout divided by a rank-1 tiler stays rank 1
    auto m = op(a, tiles[0]);
    if (!m) return m;
    return Layout::Tuple({*m});
  }
  for (int i = 0; i < a.rank(); ++i) {
    if (i < static_cast<int>(tiles.size())) {
      auto m = op(a.Mode(i), tiles[i]);
      if (!m) return m;
      modes.push_back(*m);
    } else {
      modes.push_back(a.Mode(i));
    }
  }
  return Layout::Tuple(modes);
}

int TilerRank(const Tiler& tiler) {
  if (auto* v = std::get_if<std::vector<Layout>>(&tiler)) return static_cast<int>(v->size());
  return 0;  // a single layout
}

// CuTe's tile_unzip: ((tile_0, tile_1, ...), (rest_0, rest_1, ..., untouched modes...)).
Layout Unzip(const Layout& divided, const Tiler& tiler) {
  int r = TilerRank(tiler);
  if (r == 0) return divided;
  std::vector<Layout> tiles, rests;
  std::vector<Layout> modes = TopModes(divided);
  for (int i = 0; i < static_cast<int>(modes.size()); ++i) {
    if (i < r) {
      tiles.push_back(modes[i].Mode(0));
      rests.push_back(modes[i].Mode(1));
    } else {
      rests.push_back(modes[i]);
    }
  }
  return Layout::Tuple({Layout::Tuple(tiles), Layout::Tuple(rests)});
}

}  // namespace

std::string ToString(const Tiler& tiler) {
  if (auto* l = std::get_if<Layout>(&tiler)) return ToString(*l);
  std::string s = "<";
  const auto& v = std::get<std::vector<Layout>>(tiler);
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + ToString(v[i]);
  return s + ">";
}

Result<Layout> Composition(const Layout& a, const Layout& b) {
  Modes lhs = FlatModes(CoalesceExtended(a));
  auto r = ComposeImpl(lhs, a, b, b.shape(), b.stride());
  if (!r) return r;
  if (b.size() <= kCheckLimit) {
    for (std::int64_t c = 0; c < b.size(); ++c) {
      if ((*r)(c) != a(b(c))) {
        return MakeError("cannot compose `" + ToString(a) + "` with `" + ToString(b) +
                         "`: the result is not a layout (at index " + std::to_string(c) + ", `" + ToString(b) +
                         "` reaches " + std::to_string(b(c)) + " but its modes do not map to independent modes of `" +
                         ToString(a) + "`)");
      }
    }
  }
  return r;
}

Result<Layout> Composition(const Layout& a, const Tiler& tiler) {
  if (auto* l = std::get_if<Layout>(&tiler)) return Composition(a, *l);
  const auto& tiles = std::get<std::vector<Layout>>(tiler);
  return ByMode(a, tiles, "composition", [](const Layout& x, const Layout& y) { return Composition(x, y); });
}

Result<Layout> Complement(const Layout& a, std::int64_t cotarget) {
  return ComplementImpl(a, IntTuple(cotarget));
}

Result<Layout> Complement(const Layout& a, const IntTuple& cotarget) {
  return ComplementImpl(a, cotarget);
}

Result<Layout> Complement(const Layout& a) {
  return ComplementImpl(a, IntTuple(Filter(a).cosize()));
}

Layout RightInverse(const Layout& a) {
  Modes modes = FlatModes(Coalesce(a));
  std::vector<std::int64_t> pre = PrefixProducts(Shapes(modes));
  Modes result = {{1, 0}};
  std::int64_t curr = 1;
  for (std::size_t i : SortedByStride(modes)) {
    auto [s, d] = modes[i];
    if (d == curr) {
      result.emplace_back(s, pre[i]);
      curr = s * d;
    }
  }
  return Coalesce(FromFlatModes(result));
}

Result<Layout> LeftInverse(const Layout& a) {
  Modes modes = FlatModes(Coalesce(a));
  std::vector<std::int64_t> pre = PrefixProducts(Shapes(modes));
  std::vector<std::size_t> order = SortedByStride(modes);
  std::vector<std::int64_t> shapes;
  std::vector<std::int64_t> strides = {0};
  std::int64_t span = 1;
  for (std::size_t i : order) {
    auto [s, d] = modes[i];
    if (d == 0) continue;
    if (d < 0 || d % span != 0) {
      return MakeError("left inverse of `" + ToString(a) + "` does not exist: stride " + std::to_string(d) +
                       " is not a multiple of " + std::to_string(span));
    }
    shapes.push_back(d / span);
    strides.push_back(pre[i]);
    span = d;
  }
  shapes.push_back(modes[order.back()].first);
  Modes result;
  for (std::size_t k = 0; k < shapes.size(); ++k) result.emplace_back(shapes[k], strides[k]);
  Layout l = Coalesce(FromFlatModes(result));
  if (a.size() <= kCheckLimit) {
    for (std::int64_t i = 0; i < a.size(); ++i) {
      if (a(l(a(i))) != a(i)) {
        return MakeError("left inverse of `" + ToString(a) + "` does not exist: offset " + std::to_string(a(i)) +
                         " is not reached back");
      }
    }
  }
  return l;
}

Result<Layout> LogicalDivide(const Layout& a, const Tiler& tiler) {
  if (auto* b = std::get_if<Layout>(&tiler)) {
    auto c = ComplementImpl(*b, Coalesce(a).shape());
    if (!c) return MakeError("cannot divide `" + ToString(a) + "` by `" + ToString(*b) + "`: " + c.error());
    return Composition(a, Layout::Tuple({*b, *c}));
  }
  return ByMode(a, std::get<std::vector<Layout>>(tiler), "logical_divide",
                [](const Layout& x, const Layout& y) { return LogicalDivide(x, Tiler(y)); });
}

Result<Layout> ZippedDivide(const Layout& a, const Tiler& tiler) {
  auto d = LogicalDivide(a, tiler);
  if (!d) return d;
  return Unzip(*d, tiler);
}

Result<Layout> TiledDivide(const Layout& a, const Tiler& tiler) {
  auto z = ZippedDivide(a, tiler);
  if (!z) return z;
  std::vector<Layout> modes = {z->Mode(0)};
  for (const Layout& m : TopModes(z->Mode(1))) modes.push_back(m);
  return Layout::Tuple(modes);
}

Result<Layout> LogicalProduct(const Layout& a, const Tiler& tiler) {
  if (auto* b = std::get_if<Layout>(&tiler)) {
    auto c = Complement(a, a.size() * b->cosize());
    if (!c) return MakeError("cannot multiply `" + ToString(a) + "` by `" + ToString(*b) + "`: " + c.error());
    auto r = Composition(*c, *b);
    if (!r) return MakeError("cannot multiply `" + ToString(a) + "` by `" + ToString(*b) + "`: " + r.error());
    return Layout::Tuple({a, *r});
  }
  return ByMode(a, std::get<std::vector<Layout>>(tiler), "logical_product",
                [](const Layout& x, const Layout& y) { return LogicalProduct(x, Tiler(y)); });
}

namespace {

Result<Layout> ZippedProduct(const Layout& a, const Layout& b, bool raked) {
  int rank = std::max(a.rank(), b.rank());
  Layout pa = PadToRank(a, rank);
  Layout pb = PadToRank(b, rank);
  auto p = LogicalProduct(pa, Tiler(pb));
  if (!p) return p;
  std::vector<Layout> block = TopModes(p->Mode(0));
  std::vector<Layout> copies = TopModes(p->Mode(1));
  std::vector<Layout> modes;
  for (int i = 0; i < rank; ++i) {
    modes.push_back(raked ? Layout::Tuple({copies[i], block[i]}) : Layout::Tuple({block[i], copies[i]}));
  }
  return Layout::Tuple(modes);
}

}  // namespace

Result<Layout> BlockedProduct(const Layout& a, const Layout& b) {
  return ZippedProduct(a, b, false);
}

Result<Layout> RakedProduct(const Layout& a, const Layout& b) {
  return ZippedProduct(a, b, true);
}

bool IsInjective(const Layout& a) {
  std::unordered_set<std::int64_t> seen;
  for (std::int64_t i = 0; i < a.size(); ++i)
    if (!seen.insert(a(i)).second) return false;
  return true;
}

bool IsBijective(const Layout& a) {
  std::vector<bool> hit(a.size(), false);
  for (std::int64_t i = 0; i < a.size(); ++i) {
    std::int64_t o = a(i);
    if (o < 0 || o >= a.size() || hit[o]) return false;
    hit[o] = true;
  }
  return true;
}

}  // namespace weft::layout
