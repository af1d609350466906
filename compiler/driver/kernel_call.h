// One call of a kernel on random inputs, as `weft simulate` and tests/gpu's case generator
// (tests/gpu/gpu_cases.cpp) make it: sizes from NAME=N texts checked against the kernel's `where`
// clause, scalar parameters from NAME=VALUE texts (a scalar not given is `random` too), tensor
// inputs from `random`'s generator (seed + the parameter's position, so each input differs), and
// the interpreter's result of the call (the kernel's meaning, from the core IR).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/dim.h"
#include "core/ir.h"
#include "interp/interpreter.h"
#include "tile/ir.h"
#include "weft/tensor.h"

namespace weft::driver {

struct KernelCall {
  // The sizes in the order the parameters' types name them (`m`, `k`, `n` for gemm's a and b), then
  // the others the kernel names; those the kernel names have a value in `sizes`.
  std::vector<core::SizeVarId> order;
  std::map<core::SizeVarId, std::int64_t> sizes;
  std::vector<std::vector<std::int64_t>> shapes;       // per parameter (`out` ones too); empty for scalars
  std::map<std::size_t, runtime::HostTensor> scalars;  // by parameter index: rank-0 tensors
  // The interpreter's arguments: every parameter but the `out` ones, in order, scalars as rank-0
  // tensors, tensors filled by `random` with seed + the parameter's index. Empty when the call was
  // prepared without tensors.
  std::vector<runtime::HostTensor> args;
  bool narrow_float = false;  // a float parameter of 16 bits or fewer: gpu.md's 1e-2 tolerance, else 1e-5
};

// Whether `lhs relation rhs` holds: a `where` fact with its sizes evaluated.
bool Holds(std::int64_t lhs, core::RelOp relation, std::int64_t rhs);

// `a`, `b`, `c`
std::string NameList(const std::vector<std::string>& names);

// The call of `kernel` (called `name` in messages) with `sizes` (NAME=N) and `scalars` (NAME=VALUE):
// `random` tensors from `seed` when `make_tensors` (without, only their shapes). A problem (a missing
// or unknown size, sizes that break the `where` clause, a bad scalar) is one line to `err` starting
// "weft: ", and nullopt.
std::optional<KernelCall> PrepareKernelCall(const tile::Kernel& kernel, const std::string& name,
                                            const std::vector<std::string>& sizes,
                                            const std::vector<std::string>& scalars, std::uint64_t seed,
                                            bool make_tensors, std::ostream& err);

// The interpreter's call of the kernel `def` on `call.args` (its outputs, in the order of its `out`
// parameters), on a thread with a deep stack.
interp::EvalResult<std::vector<runtime::HostTensor>> InterpretKernelCall(const core::Module& module,
                                                                         const core::VarStore& vars,
                                                                         const core::Def& def, const KernelCall& call);

}  // namespace weft::driver
