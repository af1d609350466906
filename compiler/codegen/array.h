// Array kernels: the device code of a fused group of the array tier (graph.h's Plan) that no stdlib
// kernel computes: an elementwise kernel, a row kernel (reductions with their prologue and
// epilogue), a scan, a gather, a concat, and a generic product (f32, batched, or shapes the stdlib
// gemm's tiles do not divide). Written straight to LLVM IR for nvptx64 and through the same NVPTX
// path as every kernel (nvptx.h), because array programs have symbolic shapes, strided and
// broadcast operands and tails that the kernel tier's constant tiles do not express
// (docs/graph.md, "How a group becomes a kernel").
//
// The launch contract of an array kernel (the host side, codegen/host.cpp, follows it):
//   1. every tensor in ArrayKernel::tensors order: a 64-bit global address of the buffer that
//      holds the value (its first element; row-major, densely packed): the group's inputs as
//      the data they read (a view is read through: its base's buffer is passed), then its outputs;
//   2. every size variable in ArrayKernel::sizes order: an i64, the value `main` bound it to
//      (every dim of the group, of its views and of its buffers is a polynomial over them).
// Rank-0 values the host knows (literals, sizes, and arithmetic on them, like a softmax scale
// `rsqrt (cast f32 d)`) are computed inside the kernel from the sizes; they are not parameters.
// The block is `device.threads` x 1 x 1 with `device.shared_bytes` of dynamic shared memory; the
// grid is `grid` (one to three extents over the sizes, x first), each at least 1. Outputs need no
// zero fill: the kernel writes every element of each.
// Numerics are the interpreter's (docs/numerics.md): 16-bit floats computed in f32 and rounded
// once per operation, integer `/` and `%` floor (0 for a zero divisor), NaN-propagating max/min,
// reductions accumulated in f32 (f64 for f64); only the order of a reduction's sums differs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/source.h"
#include "codegen/device.h"
#include "core/dim.h"
#include "graph/graph.h"
#include "synth/plan.h"

namespace weft::codegen {

struct ArrayKernel {
  DeviceKernel device;                 // entry `weft_array_<group>`, its PTX, threads, shared bytes
  std::vector<graph::NodeId> tensors;  // the buffer-holding nodes passed, inputs then outputs
  std::size_t inputs = 0;              // how many of `tensors` are inputs
  std::vector<core::SizeVarId> sizes;  // the size variables passed, after the tensors
  std::vector<core::Dim> grid;         // 1 to 3 extents over `sizes`
};

// Whether EmitArrayKernel takes `plan.groups[group]` (its kind and every node in it).
bool HasArrayKernel(const graph::Graph& graph, const graph::Plan& plan, std::size_t group);

// The group's kernel for `target`, or one line saying why it cannot be generated (an operation
// not supported yet: the driver reports it as E0800 at the operation's span).
// @pre HasArrayKernel(graph, plan, group)
Result<ArrayKernel, std::string> EmitArrayKernel(const graph::Graph& graph, const graph::Plan& plan, std::size_t group,
                                                 synth::Target target, const SourceManager& sources);

}  // namespace weft::codegen
