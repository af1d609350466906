// Thread-value layouts and their views; see tv_layout.h.
#include "layout/tv_layout.h"

#include <algorithm>
#include <sstream>

namespace weft::layout {

TvLayout::RowCol TvLayout::At(std::int64_t thread, std::int64_t value) const {
  std::int64_t idx = layout(thread + threads() * value);
  return {idx % rows, idx / rows};
}

Result<TvLayout> MakeTvLayout(Layout layout, std::int64_t rows, std::int64_t cols) {
  if (layout.shape().is_leaf() || layout.rank() != 2)
    return MakeError("a thread-value layout has two modes (thread, value), got `" + ToString(layout) + "`");
  if (rows < 1 || cols < 1) return MakeError("a tile has at least one row and one column");
  TvLayout tv{std::move(layout), rows, cols};
  const std::int64_t size = tv.layout.size();  // Product walks the shape: once, not per element
  for (std::int64_t i = 0; i < size; ++i) {
    std::int64_t idx = tv.layout(i);
    if (idx < 0 || idx >= rows * cols)
      return MakeError("thread-value layout `" + ToString(tv.layout) + "` reaches element " + std::to_string(idx) +
                       " outside the " + std::to_string(rows) + "x" + std::to_string(cols) + " tile");
  }
  return tv;
}

bool IsBijectionOntoTile(const TvLayout& tv) {
  if (tv.layout.size() != tv.rows * tv.cols) return false;
  std::vector<bool> hit(tv.rows * tv.cols, false);
  for (std::int64_t i = 0; i < tv.layout.size(); ++i) {
    std::int64_t idx = tv.layout(i);
    if (idx < 0 || idx >= tv.rows * tv.cols || hit[idx]) return false;
    hit[idx] = true;
  }
  return true;
}

std::vector<TvLayout::RowCol> ThreadView(const TvLayout& tv, std::int64_t thread) {
  std::vector<TvLayout::RowCol> out;
  for (std::int64_t v = 0; v < tv.values(); ++v) out.push_back(tv.At(thread, v));
  return out;
}

std::vector<std::pair<std::int64_t, std::int64_t>> Owners(const TvLayout& tv) {
  std::vector<std::pair<std::int64_t, std::int64_t>> owner(tv.rows * tv.cols, {-1, -1});
  for (std::int64_t v = 0; v < tv.values(); ++v) {
    for (std::int64_t t = 0; t < tv.threads(); ++t) {
      auto [r, c] = tv.At(t, v);
      auto& o = owner[r + tv.rows * c];
      if (o.first < 0 || t < o.first) o = {t, v};
    }
  }
  return owner;
}

std::vector<std::int64_t> ThreadAddresses(const TvLayout& tv, const SwizzledLayout& tile, int element_bytes,
                                          std::int64_t thread) {
  std::vector<std::int64_t> out;
  for (std::int64_t v = 0; v < tv.values(); ++v) {
    auto [r, c] = tv.At(thread, v);
    auto o = tile.Evaluate(IntTuple::Tuple({r, c}));
    out.push_back(o.ok() ? *o * element_bytes : -1);
  }
  return out;
}

namespace {

std::string Grid(std::int64_t rows, std::int64_t cols,
                 const std::function<std::string(std::int64_t, std::int64_t)>& cell) {
  std::size_t width = 1;
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) width = std::max(width, cell(r, c).size());
  std::size_t label = std::to_string(rows - 1).size();
  std::ostringstream out;
  auto pad = [](const std::string& s, std::size_t w) { return std::string(w - s.size(), ' ') + s; };
  out << std::string(label, ' ') << "  ";
  for (std::int64_t c = 0; c < cols; ++c) out << ' ' << pad(std::to_string(c), width);
  out << '\n';
  for (std::int64_t r = 0; r < rows; ++r) {
    out << pad(std::to_string(r), label) << " |";
    for (std::int64_t c = 0; c < cols; ++c) out << ' ' << pad(cell(r, c), width);
    out << '\n';
  }
  return out.str();
}

}  // namespace

std::string FormatTvGrid(const TvLayout& tv) {
  auto owner = Owners(tv);
  return Grid(tv.rows, tv.cols, [&](std::int64_t r, std::int64_t c) {
    auto [t, v] = owner[r + tv.rows * c];
    return t < 0 ? std::string(".") : "T" + std::to_string(t) + "V" + std::to_string(v);
  });
}

std::string FormatLayoutGrid(const Layout& layout) {
  if (layout.rank() == 2 && !layout.shape().is_leaf()) {
    Layout m0 = layout.Mode(0), m1 = layout.Mode(1);
    return Grid(m0.size(), m1.size(), [&](std::int64_t r, std::int64_t c) { return std::to_string(m0(r) + m1(c)); });
  }
  return Grid(1, layout.size(), [&](std::int64_t, std::int64_t c) { return std::to_string(layout(c)); });
}

std::string FormatLayoutGrid(const SwizzledLayout& layout) {
  const Layout& l = layout.layout();
  if (l.rank() == 2 && !l.shape().is_leaf()) {
    Layout m0 = l.Mode(0), m1 = l.Mode(1);
    return Grid(m0.size(), m1.size(), [&](std::int64_t r, std::int64_t c) {
      return std::to_string(layout.swizzle()(layout.offset() + m0(r) + m1(c)));
    });
  }
  return Grid(1, l.size(), [&](std::int64_t, std::int64_t c) { return std::to_string(layout(c)); });
}

std::string FormatLayoutTable(const Layout& layout) {
  std::ostringstream out;
  for (std::int64_t i = 0; i < layout.size(); ++i)
    out << i << "  " << ToString(layout.IndexToCoord(i)) << "  ->  " << layout(i) << '\n';
  return out.str();
}

std::string FormatLayoutTable(const SwizzledLayout& layout) {
  std::ostringstream out;
  for (std::int64_t i = 0; i < layout.size(); ++i)
    out << i << "  " << ToString(layout.layout().IndexToCoord(i)) << "  ->  " << layout(i) << '\n';
  return out.str();
}

}  // namespace weft::layout
