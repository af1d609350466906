// A tile kernel's meaning with spaces and layouts ignored (docs/kernels.md, "Meaning"): block after
// block, each op on whole tiles with the interpreter's ops (interp/ops.h): `shared`, `regs` and
// `convert` are the identity, `mma a b acc` is `acc + matmul_f32 a b`, `store` writes the tile into
// the `out` tensor. This is what `weft simulate` compares the simulator with: the same program, with
// every layout and instruction choice taken away.
#pragma once

#include <vector>

#include "base/result.h"
#include "sim/executor.h"
#include "tile/ir.h"
#include "weft/tensor.h"

namespace weft::sim {

// Inputs and outputs as for Run (executor.h).
Result<std::vector<runtime::HostTensor>, RunError> Reference(const tile::Kernel& kernel,
                                                             const std::vector<runtime::HostTensor>& inputs,
                                                             const RunOptions& options = {});

}  // namespace weft::sim
