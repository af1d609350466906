// A product on the stdlib gemm tile with the elementwise work after it in the same kernel: the
// kernel written in weft's kernel tier (docs/graph.md, "Products"), so that it is checked,
// lowered, synthesized and generated like a hand-written one.
//
// The fusion (fuse.cpp) asks EpilogueKernel whether a product and the elementwise group of its
// users have such a kernel before it joins them; the driver checks every Plan's epilogue kernels
// beside the stdlib (EpilogueSources), and the host launches each with EpilogueKernel's inputs.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace weft::graph {

struct Epilogue {
  std::string name;            // the kernel's name
  std::string source;          // its definition, in the kernel tier
  std::string tile;            // the stdlib gemm whose tile and main loop it has (`gemm_bf16`)
  std::vector<NodeId> inputs;  // its tensor parameters after a and b, in order
};

// The kernel that computes `nodes` (one product, its operand views, the elementwise work after it;
// the last node in program order is the one value read elsewhere) on the stdlib gemm tile, or
// nullopt and `why` when one of them has no spelling in the kernel tier or the tile cannot hold
// what it reads (docs/graph.md lists what fits). `name` is the kernel's name.
std::optional<Epilogue> EpilogueKernel(const Graph& graph, std::vector<NodeId> nodes, const std::string& name,
                                       std::string* why = nullptr);

// The name of the epilogue kernel that is the plan's kernel number `kernel` (`k3` in --emit=graph).
std::string EpilogueName(std::size_t kernel);

// The definitions of every epilogue kernel of `plan` (Group::epilogue), one after another.
std::string EpilogueSources(const Graph& graph, const Plan& plan);

}  // namespace weft::graph
