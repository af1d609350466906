// Layouts: construction, evaluation, coalesce, flatten, filter; see layout.h.
//
// Coalesce is a left-to-right fold over the flat modes (CuTe folds right-to-left; the rules are
// symmetric and give the same result):
//   1. skip size-1 modes;
//   2. if the accumulated last mode has size 1, replace it;
//   3. if last = s0:d0 and next = s1:d1 with s0*d0 == d1, merge into (s0*s1):d0;
//   4. otherwise append; a single remaining mode is returned as a leaf, none as `1:0`.
#include "layout/layout.h"

#include <cstdlib>

namespace weft::layout {

namespace {

bool AllPositive(const IntTuple& shape) {
  if (shape.is_leaf()) return shape.value() >= 1;
  for (const IntTuple& e : shape.elems())
    if (!AllPositive(e)) return false;
  return true;
}

// A stride tuple congruent with `shape`, compact in the given leaf order.
IntTuple CompactStrides(const IntTuple& shape, std::int64_t& next, bool column_major) {
  if (shape.is_leaf()) {
    std::int64_t d = next;
    next *= shape.value();
    return IntTuple(d);
  }
  std::vector<IntTuple> elems(shape.elems().size());
  if (column_major) {
    for (std::size_t i = 0; i < elems.size(); ++i) elems[i] = CompactStrides(shape.elems()[i], next, true);
  } else {
    for (std::size_t i = elems.size(); i-- > 0;) elems[i] = CompactStrides(shape.elems()[i], next, false);
  }
  return IntTuple::Tuple(std::move(elems));
}

// crd2idx for an integer coordinate.
std::int64_t EvalIndex(std::int64_t c, const IntTuple& shape, const IntTuple& stride) {
  if (shape.is_leaf()) return c * stride.value();
  const auto& s = shape.elems();
  const auto& d = stride.elems();
  std::int64_t result = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i + 1 == s.size()) {
      result += EvalIndex(c, s[i], d[i]);
    } else {
      std::int64_t n = Product(s[i]);
      result += EvalIndex(c % n, s[i], d[i]);
      c /= n;
    }
  }
  return result;
}

Result<std::int64_t> EvalCoord(const IntTuple& c, const IntTuple& shape, const IntTuple& stride) {
  if (c.is_leaf()) {
    if (c.value() < 0) return MakeError("coordinate `" + ToString(c) + "` is negative");
    return EvalIndex(c.value(), shape, stride);
  }
  if (shape.is_leaf() || shape.elems().size() != c.elems().size())
    return MakeError("coordinate `" + ToString(c) + "` does not match shape `" + ToString(shape) + "`");
  std::int64_t result = 0;
  for (std::size_t i = 0; i < c.elems().size(); ++i) {
    auto r = EvalCoord(c.elems()[i], shape.elems()[i], stride.elems()[i]);
    if (!r) return r;
    result += *r;
  }
  return result;
}

IntTuple IndexToCoordImpl(std::int64_t& c, const IntTuple& shape, bool last) {
  if (shape.is_leaf()) {
    std::int64_t v = last ? c : c % shape.value();
    c = last ? 0 : c / shape.value();
    return IntTuple(v);
  }
  std::vector<IntTuple> elems;
  for (std::size_t i = 0; i < shape.elems().size(); ++i)
    elems.push_back(IndexToCoordImpl(c, shape.elems()[i], last && i + 1 == shape.elems().size()));
  return IntTuple::Tuple(std::move(elems));
}

}  // namespace

Result<Layout> Layout::Make(IntTuple shape, IntTuple stride) {
  if (!Congruent(shape, stride))
    return MakeError("shape `" + ToString(shape) + "` and stride `" + ToString(stride) + "` are not congruent");
  if (!AllPositive(shape)) return MakeError("shape `" + ToString(shape) + "` has an extent below 1");
  return Layout(std::move(shape), std::move(stride));
}

Layout Layout::Compact(const IntTuple& shape) {
  std::int64_t next = 1;
  return Layout(shape, CompactStrides(shape, next, true));
}

Layout Layout::CompactRowMajor(const IntTuple& shape) {
  std::int64_t next = 1;
  return Layout(shape, CompactStrides(shape, next, false));
}

Layout Layout::Tuple(const std::vector<Layout>& modes) {
  std::vector<IntTuple> shapes, strides;
  for (const Layout& m : modes) {
    shapes.push_back(m.shape());
    strides.push_back(m.stride());
  }
  return Layout(IntTuple::Tuple(std::move(shapes)), IntTuple::Tuple(std::move(strides)));
}

std::int64_t Layout::cosize() const {
  std::int64_t hi = 0;
  for (auto [s, d] : FlatModes(*this)) hi += (s - 1) * std::llabs(d);
  return hi + 1;
}

std::int64_t Layout::operator()(std::int64_t index) const {
  return EvalIndex(index, shape_, stride_);
}

Result<std::int64_t> Layout::Evaluate(const IntTuple& coord) const {
  return EvalCoord(coord, shape_, stride_);
}

IntTuple Layout::IndexToCoord(std::int64_t index) const {
  return IndexToCoordImpl(index, shape_, true);
}

std::string ToString(const Layout& layout) {
  return ToString(layout.shape()) + ":" + ToString(layout.stride());
}

std::vector<std::pair<std::int64_t, std::int64_t>> FlatModes(const Layout& layout) {
  std::vector<std::int64_t> s = FlattenLeaves(layout.shape());
  std::vector<std::int64_t> d = FlattenLeaves(layout.stride());
  std::vector<std::pair<std::int64_t, std::int64_t>> modes;
  for (std::size_t i = 0; i < s.size(); ++i) modes.emplace_back(s[i], d[i]);
  return modes;
}

Layout FromFlatModes(const std::vector<std::pair<std::int64_t, std::int64_t>>& modes) {
  if (modes.empty()) return Layout(1, 0);
  if (modes.size() == 1) return Layout(modes[0].first, modes[0].second);
  std::vector<IntTuple> s, d;
  for (auto [shape, stride] : modes) {
    s.emplace_back(shape);
    d.emplace_back(stride);
  }
  return Layout(IntTuple::Tuple(std::move(s)), IntTuple::Tuple(std::move(d)));
}

Layout Flatten(const Layout& layout) {
  return Layout(Flatten(layout.shape()), Flatten(layout.stride()));
}

Layout Coalesce(const Layout& layout) {
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  for (auto [s, d] : FlatModes(layout)) {
    if (s == 1) continue;
    if (!out.empty() && out.back().first == 1) {
      out.back() = {s, d};
    } else if (!out.empty() && out.back().first * out.back().second == d) {
      out.back().first *= s;
    } else {
      out.emplace_back(s, d);
    }
  }
  return FromFlatModes(out);
}

Result<Layout> Coalesce(const Layout& layout, const IntTuple& profile) {
  if (profile.is_leaf()) return Coalesce(layout);
  if (layout.shape().is_leaf() || profile.rank() > layout.rank())
    return MakeError("profile `" + ToString(profile) + "` has more modes than `" + ToString(layout) + "`");
  std::vector<Layout> modes;
  for (int i = 0; i < layout.rank(); ++i) {
    if (i < profile.rank()) {
      auto m = Coalesce(layout.Mode(i), profile[i]);
      if (!m) return m;
      modes.push_back(*m);
    } else {
      modes.push_back(layout.Mode(i));
    }
  }
  return Layout::Tuple(modes);
}

Layout CoalesceExtended(const Layout& layout) {
  auto flat = FlatModes(layout);
  // Right-to-left as CuTe's bw_coalesce, seeded with the last mode; a trailing size-1 mode is seeded
  // as size 2 so that its stride survives as the extension of the function past size().
  std::vector<std::pair<std::int64_t, std::int64_t>> rev;  // front of the result is rev.back()
  auto last = flat.back();
  rev.emplace_back(last.first == 1 ? 2 : last.first, last.second);
  for (std::size_t k = flat.size() - 1; k-- > 0;) {
    auto [s, d] = flat[k];
    auto& front = rev.back();
    if (s == 1) continue;
    if (front.first == 1) {
      front = {s, d};
    } else if (s * d == front.second) {
      front = {s * front.first, d};
    } else {
      rev.emplace_back(s, d);
    }
  }
  if (rev.size() == 1 && rev[0].first == 1) return Layout(1, 0);
  return FromFlatModes({rev.rbegin(), rev.rend()});
}

Layout Filter(const Layout& layout) {
  auto flat = FlatModes(layout);
  for (auto& [s, d] : flat)
    if (d == 0) s = 1;
  return Coalesce(FromFlatModes(flat));
}

}  // namespace weft::layout
