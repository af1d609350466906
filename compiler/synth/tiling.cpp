// The layout pieces of synthesis; see tiling.h.
#include "synth/tiling.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <string>

#include "layout/algebra.h"

namespace weft::synth {

using layout::IntTuple;
using layout::Layout;
using layout::TvLayout;
using Modes = std::vector<std::pair<std::int64_t, std::int64_t>>;

namespace {

// The atom's (thread, value) -> r + rows_a * c re-expressed as -> r + rows * c in the block's tile:
// composition with the embedding (rows_a, cols_a):(1, rows). Every atom mode moves along one axis
// only, so the composition is admissible; the mode-by-mode remap below is the fallback that says
// the same thing without the algebra's bookkeeping, should a future atom's modes need it.
Layout Embed(const TvLayout& atom, std::int64_t rows) {
  Layout embedding(IntTuple::Tuple({atom.rows, atom.cols}), IntTuple::Tuple({std::int64_t{1}, rows}));
  auto composed = layout::Composition(embedding, atom.layout);
  if (composed.ok() && composed->rank() == 2) return *composed;
  auto remap = [&](const Layout& mode) {
    Modes out;
    for (auto [n, s] : layout::FlatModes(mode)) out.push_back({n, s % atom.rows + rows * (s / atom.rows)});
    return layout::FromFlatModes(out);
  };
  return Layout::Tuple({remap(atom.layout.Mode(0)), remap(atom.layout.Mode(1))});
}

Layout Modes2(const Modes& threads, const Modes& values) {
  auto clean = [](const Modes& modes) {
    Modes out;
    for (auto m : modes)
      if (m.first != 1) out.push_back(m);
    if (out.empty()) out.push_back({1, 0});
    return layout::FromFlatModes(out);
  };
  return Layout::Tuple({clean(threads), clean(values)});
}

}  // namespace

TvLayout TileMma(const TvLayout& atom, Operand operand, std::int64_t m, std::int64_t n, std::int64_t k, int groups_m,
                 int groups_n) {
  std::int64_t rows = operand == Operand::B ? k : m;
  std::int64_t cols = operand == Operand::A ? k : n;
  Layout inner = Embed(atom, rows);
  Modes threads = layout::FlatModes(inner.Mode(0));
  Modes values = layout::FlatModes(inner.Mode(1));
  std::int64_t mg = m / groups_m, ng = n / groups_n;
  switch (operand) {
    case Operand::A:
      threads.push_back({groups_m, mg});
      threads.push_back({groups_n, 0});
      values.push_back({mg / atom.rows, atom.rows});
      values.push_back({k / atom.cols, atom.cols * rows});
      break;
    case Operand::B:
      threads.push_back({groups_m, 0});
      threads.push_back({groups_n, ng * rows});
      values.push_back({ng / atom.cols, atom.cols * rows});
      values.push_back({k / atom.rows, atom.rows});
      break;
    case Operand::C:
      threads.push_back({groups_m, mg});
      threads.push_back({groups_n, ng * rows});
      values.push_back({mg / atom.rows, atom.rows});
      values.push_back({ng / atom.cols, atom.cols * rows});
      break;
  }
  return TvLayout{Modes2(threads, values), rows, cols};
}

std::optional<TvLayout> TransposeTv(const TvLayout& tv) {
  std::int64_t rows = tv.rows, cols = tv.cols;
  std::optional<TvLayout> out;
  auto remap = [&](const Layout& mode, bool& ok) {
    Modes modes;
    for (auto [n, s] : layout::FlatModes(mode)) {
      std::int64_t t = 0;
      if (n == 1 || s == 0) {
        t = 0;
      } else if (s % rows == 0) {
        t = s / rows;  // along the columns
      } else if (s * (n - 1) < rows) {
        t = s * cols;  // along the rows
      } else {
        ok = false;
      }
      modes.push_back({n, n == 1 ? 0 : t});
    }
    return layout::FromFlatModes(modes);
  };
  bool ok = true;
  Layout l = Layout::Tuple({remap(tv.layout.Mode(0), ok), remap(tv.layout.Mode(1), ok)});
  if (!ok) return std::nullopt;
  return TvLayout{l, cols, rows};
}

layout::Result<TvLayout> Slice(const TvLayout& parent, SliceKeep keep) {
  std::int64_t rows = parent.rows;
  auto axis = [&](std::int64_t n, std::int64_t s) -> int {  // 0 row, 1 col, 2 broadcast, -1 both
    if (s == 0 || n == 1) return 2;
    if (s % rows == 0) return 1;
    if (s * (n - 1) < rows) return 0;
    return -1;
  };
  auto slice = [&](const Layout& mode, bool is_thread) -> layout::Result<Modes> {
    Modes out;
    for (auto [n, s] : layout::FlatModes(mode)) {
      int a = axis(n, s);
      if (a < 0)
        return layout::MakeError("the mode " + std::to_string(n) + ":" + std::to_string(s) + " of `" +
                                 layout::ToString(parent.layout) + "` moves along both axes");
      bool kept = a == 2 ? false : (keep == SliceKeep::Rows ? a == 0 : keep == SliceKeep::Cols ? a == 1 : false);
      std::int64_t stride = !kept ? 0 : a == 0 ? s : s / rows;
      if (kept || is_thread) out.push_back({n, stride});
    }
    return out;
  };
  auto threads = slice(parent.layout.Mode(0), true);
  if (!threads.ok()) return layout::Error{threads.error()};
  auto values = slice(parent.layout.Mode(1), false);
  if (!values.ok()) return layout::Error{values.error()};
  std::int64_t out_rows = keep == SliceKeep::Rows ? rows : 1;
  std::int64_t out_cols = keep == SliceKeep::Cols ? parent.cols : 1;
  Modes t = *threads;
  if (t.empty()) t.push_back({1, 0});
  Modes v;
  for (auto m : *values)
    if (m.first != 1) v.push_back(m);
  if (v.empty()) v.push_back({1, 0});
  return layout::MakeTvLayout(Layout::Tuple({layout::FromFlatModes(t), layout::FromFlatModes(v)}), out_rows, out_cols);
}

bool SameElements(const TvLayout& a, const TvLayout& b) {
  if (a.threads() != b.threads() || a.values() != b.values() || a.rows != b.rows || a.cols != b.cols) return false;
  std::vector<std::int64_t> x(a.values()), y(b.values());
  for (std::int64_t t = 0; t < a.threads(); ++t) {
    for (std::int64_t v = 0; v < a.values(); ++v) {
      x[v] = a.layout(t + a.threads() * v);
      y[v] = b.layout(t + b.threads() * v);
    }
    std::sort(x.begin(), x.end());
    std::sort(y.begin(), y.end());
    if (x != y) return false;
  }
  return true;
}

bool IsWellFormed(const TvLayout& tv) {
  std::vector<std::int64_t> count(tv.rows * tv.cols, 0);
  for (std::int64_t i = 0; i < tv.layout.size(); ++i) {
    std::int64_t idx = tv.layout(i);
    if (idx < 0 || idx >= tv.rows * tv.cols) return false;
    ++count[idx];
  }
  for (std::int64_t c : count)
    if (c == 0 || c != count[0]) return false;
  return true;
}

std::optional<TvLayout> FitTv(const std::vector<std::int64_t>& table, std::int64_t threads, std::int64_t values,
                              std::int64_t rows, std::int64_t cols) {
  if (static_cast<std::int64_t>(table.size()) != threads * values || table.empty() || table[0] != 0)
    return std::nullopt;
  auto digits = [](std::int64_t n) {
    std::vector<std::int64_t> out;
    for (std::int64_t p = 2; n > 1; ++p)
      while (n % p == 0) out.push_back(p), n /= p;
    return out;
  };
  auto modes = [&](std::int64_t n, std::int64_t unit) {
    Modes out;
    std::int64_t place = 1;
    for (std::int64_t d : digits(n)) {
      out.push_back({d, table[place * unit] - table[0]});
      place *= d;
    }
    if (out.empty()) out.push_back({1, 0});
    return layout::FromFlatModes(out);
  };
  Layout fitted = Layout::Tuple({modes(threads, 1), modes(values, threads)});
  auto coalesced = layout::Coalesce(fitted, IntTuple::Tuple({1, 1}));
  if (coalesced.ok() && coalesced->rank() == 2 && !coalesced->shape().is_leaf()) fitted = *coalesced;
  for (std::int64_t i = 0; i < threads * values; ++i)
    if (fitted(i) != table[i]) return std::nullopt;
  auto tv = layout::MakeTvLayout(fitted, rows, cols);
  if (!tv.ok()) return std::nullopt;
  return *tv;
}

std::optional<LdmatrixPlan> FitLdmatrix(const TvLayout& reg, int count, bool trans) {
  std::int64_t threads = reg.threads(), values = reg.values();
  int per = 2 * count;
  if (threads % 32 != 0 || values % per != 0 || reg.cols % 8 != 0) return std::nullopt;
  std::int64_t instructions = values / per;
  // origin[(warp, i, j)]: the first element of matrix j of instruction i for the warp.
  std::vector<TvLayout::RowCol> origin(static_cast<std::size_t>(threads / 32 * instructions * count));
  auto at = [&](std::int64_t w, std::int64_t i, int j) -> TvLayout::RowCol& {
    return origin[static_cast<std::size_t>((w * instructions + i) * count + j)];
  };
  for (std::int64_t w = 0; w < threads / 32; ++w) {
    for (std::int64_t i = 0; i < instructions; ++i) {
      for (int j = 0; j < count; ++j) {
        std::int64_t v = 2 * (count * i + j);
        TvLayout::RowCol o = reg.At(32 * w, v);
        if (o.col % 8 != 0 || o.row + 8 > reg.rows) return std::nullopt;
        at(w, i, j) = o;
        for (int l = 0; l < 32; ++l) {
          for (int e = 0; e < 2; ++e) {
            TvLayout::RowCol want = trans ? TvLayout::RowCol{o.row + 2 * (l % 4) + e, o.col + l / 4}
                                          : TvLayout::RowCol{o.row + l / 4, o.col + 2 * (l % 4) + e};
            if (!(reg.At(32 * w + l, v + e) == want)) return std::nullopt;
          }
        }
      }
    }
  }
  std::vector<std::int64_t> table(static_cast<std::size_t>(threads * instructions));
  for (std::int64_t t = 0; t < threads; ++t) {
    for (std::int64_t i = 0; i < instructions; ++i) {
      int l8 = static_cast<int>(t % 32) % (8 * count);
      TvLayout::RowCol o = at(t / 32, i, l8 / 8);
      table[static_cast<std::size_t>(t + threads * i)] = (o.row + l8 % 8) + reg.rows * o.col;
    }
  }
  auto copy = FitTv(table, threads, instructions, reg.rows, reg.cols);
  if (!copy) return std::nullopt;
  return LdmatrixPlan{count, trans, *copy, instructions};
}

VectorPlan FitVector(const TvLayout& reg, int element_bytes, int max_bytes) {
  std::int64_t threads = reg.threads(), values = reg.values();
  for (int bytes : {16, 8, 4}) {
    if (bytes > max_bytes || bytes <= element_bytes || bytes % element_bytes != 0) continue;
    int n = bytes / element_bytes;
    if (values % n != 0) continue;
    bool ok = true;
    for (std::int64_t t = 0; t < threads && ok; ++t) {
      for (std::int64_t v = 0; v < values && ok; v += n) {
        TvLayout::RowCol first = reg.At(t, v);
        if (first.col % n != 0) ok = false;
        for (int i = 1; i < n && ok; ++i)
          if (!(reg.At(t, v + i) == TvLayout::RowCol{first.row, first.col + i})) ok = false;
      }
    }
    if (!ok) continue;
    std::vector<std::int64_t> table(static_cast<std::size_t>(threads * (values / n)));
    for (std::int64_t t = 0; t < threads; ++t)
      for (std::int64_t v = 0; v < values / n; ++v) table[t + threads * v] = reg.layout(t + threads * v * n);
    if (auto copy = FitTv(table, threads, values / n, reg.rows, reg.cols)) return VectorPlan{bytes, n, *copy};
  }
  return VectorPlan{element_bytes, 1, reg};
}

namespace {

layout::Result<layout::BankConflicts> CountUncached(const TvLayout& copy, const layout::SwizzledLayout& smem,
                                                    int element_bytes, int vector_bytes, int active_lanes) {
  layout::BankConflicts total;
  std::int64_t threads = copy.threads();
  std::vector<layout::LaneAccess> lanes(32);
  for (std::int64_t w = 0; w * 32 < threads; ++w) {
    for (std::int64_t v = 0; v < copy.values(); ++v) {
      for (int l = 0; l < 32; ++l) {
        std::int64_t t = 32 * w + l;
        if (t >= threads || l >= active_lanes) {
          lanes[l] = layout::LaneAccess{0, vector_bytes, false};
          continue;
        }
        std::int64_t index = copy.layout(t + threads * v);
        lanes[l] = layout::LaneAccess{smem(index) * element_bytes, vector_bytes, true};
      }
      auto c = layout::CountBankConflicts(lanes);
      if (!c.ok()) return layout::Error{c.error()};  // a misaligned vector
      total.wavefronts += c->wavefronts;
      total.ideal += c->ideal;
      total.phases += c->phases;
    }
  }
  return total;
}

}  // namespace

// Memoized for the process: the same tiles recur across a program's kernels (and an agreement
// test's), and counting replays every warp's accesses lane by lane. Keyed by the copy (its
// layout: the atom and warp tiling's), the shared layout (shape and swizzle) and the access's
// widths.
layout::Result<layout::BankConflicts> CountCopyConflicts(const TvLayout& copy, const layout::SwizzledLayout& smem,
                                                         int element_bytes, int vector_bytes, int active_lanes) {
  static std::mutex mutex;
  static std::map<std::string, layout::Result<layout::BankConflicts>> cache;
  std::string key = layout::ToString(copy.layout) + " " + std::to_string(copy.rows) + "x" + std::to_string(copy.cols) +
                    " " + layout::ToString(smem) + " " + std::to_string(element_bytes) + " " +
                    std::to_string(vector_bytes) + " " + std::to_string(active_lanes);
  {
    std::lock_guard lock(mutex);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
  }
  layout::Result<layout::BankConflicts> counted = CountUncached(copy, smem, element_bytes, vector_bytes, active_lanes);
  std::lock_guard lock(mutex);
  if (cache.size() >= 1 << 16) cache.clear();  // a bound on the memory, far above any program's tiles
  cache.emplace(std::move(key), counted);
  return counted;
}

}  // namespace weft::synth
