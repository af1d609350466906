// The strided layout of each value of `main`'s graph (core/strided.h): a node that owns its data
// (a kernel's output, a load, a literal) is row-major; a view's layout is computed from its
// operand's, moving no data. `weft build --emit=graph` prints each view's; the gemm and attention
// routing reads them (issue "Views reach the fast kernels"; docs/graph.md, "Layouts of views").
#pragma once

#include "core/strided.h"
#include "graph/graph.h"

namespace weft::graph {

// Node `id`'s layout, or why its view is not strided (a reshape that cannot regroup its operand's
// modes, an element chosen at run time): such a view is read by index arithmetic in the kernel that
// reads it, and a kernel that needs a strided operand takes a copy.
core::ViewResult LayoutOf(const Graph& graph, NodeId id);

}  // namespace weft::graph
