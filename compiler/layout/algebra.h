// The layout algebra: composition, complement, inverses, divides and products (CuTe's semantics).
// These are how tiles are cut out of tensors and how thread-value layouts are built, so every
// operation states its contract and the unit tests check each @post over every coordinate.
// A failed precondition is an Error naming the layouts involved; see docs/layouts.md.
//
// A tiler is a layout, or a tuple of layouts applied mode by mode (CuTe's Tile<...>).
#pragma once

#include <cstdint>
#include <variant>
#include <vector>

#include "layout/layout.h"
#include "layout/result.h"

namespace weft::layout {

// A layout, or one layout per mode of the layout being divided or multiplied.
using Tiler = std::variant<Layout, std::vector<Layout>>;
std::string ToString(const Tiler& tiler);

// R = A o B.
// @pre for each leaf mode s:d of B, A's flat modes are admissible for it: walking A's modes, d either
//      divides out of a mode's size or the mode's size divides d, and the remaining shape divides
//      (CuTe's stride and shape divisibility conditions); additionally B's modes must land on
//      independent parts of A so that the sum of the per-mode results is A(B(c)).
// @post compatible(B, R): shape(R) refines the mode structure of shape(B)
// @post for all c in [0, size(B)): R(c) == A(B(c)), with A extended past size(A) along its last mode
Result<Layout> Composition(const Layout& a, const Layout& b);
// Mode-by-mode composition with a tiler tuple (modes of A beyond the tiler are kept).
// @pre rank(tiler) <= rank(A)
Result<Layout> Composition(const Layout& a, const Tiler& tiler);

// C = complement(A, cotarget): the layout that, placed after A, fills out [0, cotarget).
// @pre A's filtered modes, sorted by stride, are such that each stride is a multiple of the previous
//      mode's size times stride ("the complement exists"); cotarget >= 1
// @post for all i in [1, size(C)): C(i) > C(i-1)                  (ordered; CuTe's comment has `<`)
// @post for all i in [1, size(C)), j in [0, size(A)): C(i) != A(j)  (disjoint images)
// @post size(C) >= cotarget / size(filter(A))
// @post (filter(A), C) is a bijection onto [0, size(filter(A)) * size(C))
Result<Layout> Complement(const Layout& a, std::int64_t cotarget);
// The cotarget as a shape, as logical_divide passes shape(coalesce(A)): the last mode's size is CuTe's
// ceil_div(cotarget, span), taken mode by mode, which can exceed ceil(size(cotarget) / span) when the
// span does not divide the shape.
Result<Layout> Complement(const Layout& a, const IntTuple& cotarget);
// complement(A, cosize(filter(A))).
Result<Layout> Complement(const Layout& a);

// R = right_inverse(A).
// @post for all i in [0, size(R)): A(R(i)) == i
// @post R is the largest such layout built from A's contiguous stride chain starting at stride 1
Layout RightInverse(const Layout& a);
// L = left_inverse(A), CuTe's quasi-inverse.
// @pre A's sorted non-zero strides chain by divisibility
// @post for all i in [0, size(A)): A(L(A(i))) == A(i)
// @post if A is injective: for all i in [0, size(A)): L(A(i)) == i
Result<Layout> LeftInverse(const Layout& a);

// logical_divide(A, B) = A o (B, complement(B, size(A))): mode 0 is the tile, mode 1 the tiles.
// @pre complement(B, size(A)) exists and the composition is admissible
// @post result(c) == A((B, complement(B, size(A)))(c)) for all c
Result<Layout> LogicalDivide(const Layout& a, const Tiler& tiler);
// zipped_divide: ((tile modes...), (rest modes...)).
Result<Layout> ZippedDivide(const Layout& a, const Tiler& tiler);
// tiled_divide: ((tile modes...), rest0, rest1, ...).
Result<Layout> TiledDivide(const Layout& a, const Tiler& tiler);

// logical_product(A, B) = (A, complement(A, size(A) * cosize(B)) o B).
// @post mode 0 of the result is A; mode 1 repeats A's footprint as B says
Result<Layout> LogicalProduct(const Layout& a, const Tiler& tiler);
// blocked_product: mode i is (A_i, B'_i) where (A, B') = logical_product of A and B padded to equal rank.
// @post rank(result) == max(rank(A), rank(B))
Result<Layout> BlockedProduct(const Layout& a, const Layout& b);
// raked_product: mode i is (B'_i, A_i): A's elements are interleaved (raked) across the copies.
// @post rank(result) == max(rank(A), rank(B))
Result<Layout> RakedProduct(const Layout& a, const Layout& b);

// True when the layout is injective on [0, size()).
bool IsInjective(const Layout& a);
// True when the layout maps [0, size()) onto [0, size()) (a permutation).
bool IsBijective(const Layout& a);

}  // namespace weft::layout
