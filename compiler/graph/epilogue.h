// A product on the stdlib gemm tile with the elementwise work after it in the same kernel
// (docs/graph.md, "Products"): the stdlib gemm's tile IR (stdlib/gemm.weft, lowered once) with
// the epilogue's ops inserted before its store, so that it is synthesized and generated like a
// hand-written kernel. No source text is generated, parsed or checked.
//
// The fusion (fuse.cpp) asks EpilogueKernel whether a product and the elementwise group of its
// users have such a kernel before it joins them. The driver builds each Plan's epilogue kernels
// (EpilogueTile) and keeps those that synthesize for its target; the host launches each with
// EpilogueKernel's inputs. `--emit=graph` prints them in the kernel tier's syntax (EpilogueText),
// which is also how groups of the same work find that they share one kernel.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "graph/graph.h"
#include "tile/ir.h"

namespace weft::graph {

// An operand of a step: the value of an earlier step, or a literal (written where it is read).
struct EpilogueOperand {
  std::optional<std::size_t> step;  // the step whose value it reads; unset for a literal
  Dtype dtype = Dtype::F32;         // a literal's: its node's
  double literal = 0;               // a literal's value (a bool's: 0 or 1)
  Span span;                        // a literal's node's
};

// One value the kernel computes after its main loop, in program order, on the node's own dtype:
// device code computes bf16 and f16 arithmetic in f32 and rounds once, as the interpreter and the
// array kernels do.
struct EpilogueStep {
  enum class Kind : std::uint8_t {
    Product,  // the accumulator, rounded once to `dtype` when that is not f32 (`@` of bf16)
    Load,     // the block's tile of tensor `input`: a row's [1, 256] slice, a matrix's [128, 256]
    Cast,     // args[0] converted to `dtype`
    Map,      // the elementwise built-in `fn` on `args`
  };
  Kind kind = Kind::Map;
  Dtype dtype = Dtype::F32;
  std::string fn;                     // Map
  std::vector<EpilogueOperand> args;  // Cast, Map
  std::size_t input = 0;              // Load: an index into Epilogue::inputs
  Span span;                          // its node (a Load: the node that first reads the tensor)
};

// A tensor the epilogue reads besides the product.
struct EpilogueInput {
  NodeId node;
  Dtype dtype = Dtype::F32;
  bool matrix = false;  // of the product's shape (a residual), else a row vector (a bias)
};

struct Epilogue {
  std::string name;                   // the kernel's name
  std::string tile;                   // the stdlib gemm whose tile and main loop it has (`gemm_bf16`)
  Dtype operands = Dtype::BF16;       // a's and b's dtype
  bool transposed_b = false;          // b stored as [n, k] (`gemm_bf16_nt`)
  bool transposed_a = false;          // a stored as [k, m] (`gemm_bf16_tn`)
  std::vector<EpilogueInput> inputs;  // its tensor parameters after a and b, in order
  std::vector<EpilogueStep> steps;    // steps[0] is the product; the last one is stored
  Dtype result = Dtype::F32;          // the stored value's dtype
};

// Whether the stdlib gemm reads `operand`, a product's operand, as the `_nt` tile's b stored as
// [n, k] or the `_tn` tile's a stored as [k, m]: a bf16 or f16 `transpose` of a value that is not
// itself a view, read by nothing else. Fusion, the epilogue analysis and the host agree on it
// through this one test and TransposedOperands; any other view operand is read in place or copied
// to a dense tensor first (docs/graph.md, "Copies").
bool TransposedOperand(const Graph& graph, NodeId operand);

// Which operands of product `mm` (a matrix a) the stdlib gemm reads as stored through a transposed
// tile: b (`_nt`), else a (`_tn`); never both (a transposed a beside a transposed b is read as any
// other view).
struct Transposed {
  bool a = false;
  bool b = false;
};
Transposed TransposedOperands(const Graph& graph, const Node& mm);

// Whether the epilogue reads view `id` (outside its group) as a tensor that fusion copies to a dense
// one first: a view that moves data (indexing, transpose, permute, reshape), not a broadcast.
bool CopiedInput(const Graph& graph, NodeId id);

// The epilogue that computes `nodes` (one product, its operand views, the elementwise work after
// it; the last node in program order is the one value read elsewhere) on the stdlib gemm tile, or
// nullopt and `why` when one of them has no form in the kernel tier or the tile cannot hold what it
// reads (docs/graph.md lists what fits). `name` is the kernel's name.
std::optional<Epilogue> EpilogueKernel(const Graph& graph, std::vector<NodeId> nodes, const std::string& name,
                                       std::string* why = nullptr);

// The name of the epilogue kernel that is the plan's kernel number `kernel` (`k3` in --emit=graph).
std::string EpilogueName(std::size_t kernel);

// The kernel in the kernel tier's syntax: the stdlib gemm up to its store, one `let` per step, the
// store of the last one. Two epilogues of the same work have the same text.
std::string EpilogueText(const Epilogue& epilogue);

// The texts of every epilogue kernel of `plan` (Group::epilogue), one after another: what
// `--emit=graph` prints under `generated kernels:`.
std::string EpilogueTexts(const Graph& graph, const Plan& plan);

// The epilogue kernel as tile IR: `gemm`, the stdlib kernel `epilogue.tile` lowered from
// stdlib/gemm.weft (parameters a, b and `out c`, ending in the store of its accumulator), with the
// epilogue's tensors as parameters before c, its steps' ops before the store, and the last step
// stored into c. The ops are those tile::Lower makes of EpilogueText's kernel; their spans are
// gemm.weft's and the user's nodes'. An error says how `gemm` is not of that form.
Result<tile::Kernel, std::string> EpilogueTile(const Epilogue& epilogue, const tile::Kernel& gemm);

}  // namespace weft::graph
