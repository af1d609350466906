// `weft explain`: a synthesized Plan as text, per kernel then per tile and per op. The format is
// pinned by lit tests (tests/lit/explain/) and shown in docs/synthesis.md.
//
// For each tile (Shared and Reg values): its shape and space, its layout in CuTe notation (a Shared
// tile's with its swizzle; a Reg tile's thread-value layout), where it lives (shared offset and
// stages, or registers per thread), the instruction that makes it or moves it, the bank conflicts
// of each shared-memory access (wavefronts against the ideal) and the bytes moved. Per kernel: the
// block size, shared memory, estimated registers, and how the choice was made. `weft explain` then
// prints the kernel's schedule (driver/explain_command.h, ExplainKernel: schedule::Print).
#pragma once

#include <cstdint>
#include <string>

#include "base/source.h"
#include "synth/plan.h"
#include "tile/ir.h"

namespace weft::synth {

struct ExplainOptions {
  bool timings = true;                     // synthesis's time (off for golden tests)
  const SourceManager* sources = nullptr;  // for line:col and each op's source text
};

std::string Explain(const tile::Kernel& kernel, const Plan& plan, const ExplainOptions& options = {});

}  // namespace weft::synth
