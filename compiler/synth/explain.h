// `weft explain`: a synthesized Plan as text, per kernel then per tile and per op. The format is
// pinned by lit tests (tests/lit/explain/) and shown in docs/synthesis.md.
//
// For each tile (Shared and Reg values): its shape and space, its layout in CuTe notation (a Shared
// tile's with its swizzle; a Reg tile's thread-value layout), where it lives (shared offset and
// stages, or registers per thread), the instruction that makes it or moves it, the bank conflicts
// of each shared-memory access (wavefronts against the ideal) and the bytes moved. Per kernel: the
// block size, shared memory, estimated registers, and how the choice was made. Then, for a kernel
// with a `pipeline`, its schedule (schedule::Print).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "base/source.h"
#include "synth/plan.h"
#include "tile/ir.h"

namespace weft::synth {

struct ExplainOptions {
  // The solver's time (off for golden tests; then the schedule's solver is bounded by Z3's resource
  // limit, so the output does not depend on the machine's speed, with 60 s as a safety net).
  bool timings = true;
  const SourceManager* sources = nullptr;  // for line:col and each op's source text
  // Each `pipeline`'s schedule after the tiles (compiler/schedule: roles, stages, II, the barrier
  // protocol's check, the predicted time; docs/scheduling.md).
  bool schedule = true;
  // The cost model's inputs (schedule/cost.h): sizes and scalar parameters by name (a bool is 1 or
  // 0), and the GPU ("h100" or "h200").
  std::map<std::string, std::int64_t> sizes;
  std::map<std::string, double> scalars;
  std::string machine = "h100";
};

std::string Explain(const tile::Kernel& kernel, const Plan& plan, const ExplainOptions& options = {});

}  // namespace weft::synth
