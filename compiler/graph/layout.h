// The strided layout of each value of `main`'s graph (core/strided.h): a node that owns its data
// (a kernel's output, a load, a literal) is row-major; a view's layout is computed from its
// operand's, moving no data. `weft build --emit=graph` prints each view's; the gemm and attention
// routing reads them (issue "Views reach the fast kernels"; docs/graph.md, "Layouts of views").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"
#include "core/strided.h"
#include "graph/graph.h"

namespace weft::graph {

// Node `id`'s layout, or why its view is not strided (a reshape that cannot regroup its operand's
// modes, an element chosen at run time): such a view is read by index arithmetic in the kernel that
// reads it, and a kernel that needs a strided operand takes a copy.
// With `plan`, a product's result that its kernel stores in the layout a view of it wants
// (Group::stored) has that layout, and the view is row-major over it.
core::ViewResult LayoutOf(const Graph& graph, NodeId id);
core::ViewResult LayoutOf(const Graph& graph, const Plan& plan, NodeId id);

// The layout in which the data under view `id` (the first node down its chain of views that is not
// a view) would be stored so that the view is row-major over it: the chain's steps inverted, from
// the view's row-major layout down (a permute's inverse, a reshape back to its operand's shape).
// Over the kernel's output (`flatten`: the stdlib gemm's [m, n], the root's leading axes
// flattened; else the root's shape, as the attention kernel's) the modes after each axis's
// outermost must be constants and the last axis's innermost mode contiguous, a multiple of 16
// bytes; or why not (a slice, a broadcast, an element chosen at run time in the chain).
weft::Result<StoredOut, std::string> StoreLayout(const Graph& graph, NodeId id, bool flatten = true);

// How a stdlib kernel that copies its operands into shared memory by TMA (sm_90a) reads view `id`
// in place, without a copy: the node that owns the data (the first operand down the chain of views
// that is not a view) and the view's layout over it; or why it cannot. The map has a dim per mode,
// at most 5; the next-to-last axis (the box's rows) has one mode; every other axis's modes after its
// outermost have constant extents (the kernel splits an index over them); the last axis's innermost
// mode is contiguous and `box_cols` (the kernel's box along the last axis, elements) divides its
// extent when the axis has several, so that a box never straddles them;
// the offset and every other stride are multiples of 16 bytes, proved on the dims' normal forms or,
// failing that, by the solver (compiler/solver) under the run-time checks the program makes before
// the view (graph::Check: the `where` facts of the definitions it calls); an alignment of a dim
// over sizes that neither proves nor refutes is the read's `when`, checked at run time.
// A unit axis's stride is immaterial: it is given one that is aligned.
weft::Result<InPlaceRead, std::string> ReadInPlace(const Graph& graph, NodeId id, std::int64_t box_cols);

// How a called kernel (a `kernel` of the program) reads view `id` without a copy. A kernel's tensor
// parameter admits a row-major layout at an offset whose address is 16 bytes aligned (its TMA boxes
// and 16-byte vectors need no more; docs/graph.md, "Views a called kernel reads"): the view is then
// read through the tensor that holds its data (`root`), at `offset` elements. Such views are a
// reshape, a slice or constant index of leading axes, a permutation undone. The offset's alignment
// is proved by the normal form or by the solver under the program's checks before the view; one
// that only run-time sizes decide is the read's `when`. Otherwise why not: a layout that is not
// row-major, an offset never aligned. The same predicate as the checker's (core::AdmitsRow), which
// decides with the `where` facts the graph has as checks: what the checker reads in place, this
// proves too; it may decide what the checker left to run time.
weft::Result<DenseRead, std::string> ReadDense(const Graph& graph, NodeId id);

// The dims of `read`'s TMA map: one per mode of each axis.
std::size_t MapDims(const InPlaceRead& read);

// The box along the last axis of the stdlib kernels' TMA copies of `dtype`: 128 bytes (the 128-byte
// swizzle's span), so 64 elements of bf16 or f16.
std::int64_t TmaBoxColumns(Dtype dtype);

}  // namespace weft::graph
