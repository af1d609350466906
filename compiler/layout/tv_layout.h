// Thread-value (TV) layouts: (thread, value) -> element of a tile. One TV layout says which element
// each thread holds in which register (an MMA fragment), or which element each thread moves (a copy),
// so per-thread registers, a copy's addresses and a tiled MMA's fragments are all derived from it.
//
// Convention (CuTe's): the layout's top-level modes are (thread, value) and its offsets are
// column-major indices into the tile, row + rows * col. The tile's orientation follows the PTX ISA's
// figures: A is M x K, B is K x N, C/D is M x N; copies use the tile as it is stored (rows of 16 bytes
// for ldmatrix).
//
// Derived views: 1. evaluate the layout at (t, v) for every value v of thread t to list its registers;
// 2. compose with the tile's memory layout (possibly swizzled) to get byte addresses; 3. invert (by
// enumeration: tiles are small) to find the owner of each element, which the grid printer draws.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "layout/layout.h"
#include "layout/result.h"
#include "layout/swizzle.h"

namespace weft::layout {

struct TvLayout {
  Layout layout;  // rank 2: (thread, value) -> row + rows * col
  std::int64_t rows = 0;
  std::int64_t cols = 0;

  std::int64_t threads() const { return Product(layout.shape()[0]); }
  std::int64_t values() const { return Product(layout.shape()[1]); }
  struct RowCol {
    std::int64_t row, col;
    bool operator==(const RowCol& o) const { return row == o.row && col == o.col; }
  };
  // @pre 0 <= thread < threads(), 0 <= value < values()
  RowCol At(std::int64_t thread, std::int64_t value) const;
};

// Checks rank 2 and that every (thread, value) lands inside rows x cols.
Result<TvLayout> MakeTvLayout(Layout layout, std::int64_t rows, std::int64_t cols);

// @post true iff threads() * values() == rows * cols and every element is held exactly once
bool IsBijectionOntoTile(const TvLayout& tv);

// Which elements thread t holds, register by register (value index v is register v).
std::vector<TvLayout::RowCol> ThreadView(const TvLayout& tv, std::int64_t thread);

// For each element (row + rows * col), the (thread, value) that holds it; {-1, -1} where none does.
// When several hold it (a broadcast), the smallest thread wins.
std::vector<std::pair<std::int64_t, std::int64_t>> Owners(const TvLayout& tv);

// The byte addresses thread t touches when the tile lives in memory at `tile` (element offsets of
// (row, col), e.g. `(64,64):(64,1)` row-major, possibly swizzled) with elements of `element_bytes`.
std::vector<std::int64_t> ThreadAddresses(const TvLayout& tv, const SwizzledLayout& tile, int element_bytes,
                                          std::int64_t thread);

// The tile as a grid with `T<thread>V<value>` in each cell, the way fragments are drawn on paper.
std::string FormatTvGrid(const TvLayout& tv);
// The offsets of a rank-2 layout as a rows x cols grid (CuTe's print_layout), or of a rank-1 layout as
// one row.
std::string FormatLayoutGrid(const Layout& layout);
std::string FormatLayoutGrid(const SwizzledLayout& layout);
// Every coordinate with its 1-D index and offset, one line each: `5  (1,(1,0))  ->  3`.
std::string FormatLayoutTable(const Layout& layout);
// The same for a swizzled layout: the coordinates are its layout's, the offsets are swizzled.
std::string FormatLayoutTable(const SwizzledLayout& layout);

}  // namespace weft::layout
