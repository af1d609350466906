// A GPU test case on disk (tests/gpu/README.md): a folder with the kernel's PTX (and cubin), its
// inputs and the interpreter's reference outputs as .npy, and `manifest.json`, which says how to
// launch the entry (device.h's launch contract, argument by argument) and how to judge the outputs.
// gpu_cases writes it on the machine with the compiler; gpu_check reads it on the GPU machine. This
// library needs only the runtime (and nlohmann-json's header), so gpu_check links neither LLVM nor Z3.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "weft/tensor.h"

namespace weft::gpu {

// One kernel argument, in the entry's parameter order.
struct Arg {
  enum class Kind { Tensor, Size, Scalar, TensorMap };
  Kind kind = Kind::Tensor;
  std::string name;  // the parameter's or the size's name
  // Tensor: a device buffer of `dtype[shape]`, from `input` (a .npy file in the case folder), or
  // made on the GPU machine by `random` with `random_seed` (bench cases, too large to carry), or
  // zero-filled for an `out` tensor, whose result is compared with `reference` when there is one.
  Dtype dtype = Dtype::F32;
  std::vector<std::int64_t> shape;
  bool out = false;
  std::string input;
  std::optional<std::uint64_t> random_seed;
  std::string reference;
  // Size and Scalar: the value as the entry's parameter type `abi` takes it ("i64", "i32", "f32",
  // "f64"): integers in `int_value`, floats in `float_value`.
  std::string abi;
  std::int64_t int_value = 0;
  double float_value = 0;
  // TensorMap (sm_90a TMA): the 2-D map over the tensor argument `tensor` (an index into the case's
  // args) with its leading axes flattened into rows; dims, strides and box innermost first, as
  // weft_tensor_map_encode_tiled takes them; swizzle 0 none, 1 32B, 2 64B, 3 128B.
  int tensor = -1;
  std::vector<std::uint64_t> dims, strides_bytes;
  std::vector<std::uint32_t> box;
  int swizzle = 0;
};

struct Case {
  std::string name;
  std::string source, kernel, target;  // where it came from, for messages
  // False when the compiler could not generate the kernel; `reason` says why. gpu_check counts such a
  // case as failed, never as skipped.
  bool generated = true;
  std::string reason;
  std::string ptx, cubin;  // file names in the case folder; cubin empty when ptxas was not found
  std::string entry;
  std::uint32_t grid[3] = {1, 1, 1};
  std::uint32_t threads = 1;
  std::uint32_t shared_bytes = 0;
  // The entry loops over `grid`'s blocks (codegen's DeviceKernel::persistent): launched on
  // weft_persistent_grid's grid, as many blocks as the GPU holds at once.
  bool persistent = false;
  std::uint32_t persistent_blocks = 0;  // ... or on this many blocks (gpu_cases' --persistent=N)
  std::uint64_t seed = 0;               // the inputs' `random` seed (input i used seed + its parameter index)
  // ‖out − ref‖ / ‖ref‖ must be below it for float outputs (gpu.md: 1e-2 with 16-bit float inputs,
  // 1e-5 otherwise); integer and bool outputs are compared bit for bit.
  double tolerance = 1e-5;
  double flops = 0;  // per launch, for --time's TFLOP/s; 0 when unknown
  std::vector<Arg> args;
};

// manifest.json's text, and a Case from it (nullopt with `error` set when it is not a manifest).
std::string ToJson(const Case& c);
std::optional<Case> FromJson(const std::string& text, std::string& error);
// Reads DIR/manifest.json.
std::optional<Case> ReadCase(const std::string& dir, std::string& error);

// The dtype spelled `text` ("bf16"), or nullopt.
std::optional<Dtype> ParseDtype(const std::string& text);

// One output against its reference.
struct Comparison {
  bool pass = false;
  double relative = 0;      // ‖out − ref‖ / ‖ref‖ (‖out − ref‖ when ref is all zeros)
  double max_abs = 0;       // max |out − ref|
  std::int64_t nans = 0;    // NaN in out
  std::int64_t differ = 0;  // integer outputs: elements whose bits differ
  // Elements left at zero where the reference is not: what a kernel that misses part of its output
  // (a tile it never stores) leaves behind, since outputs start zero-filled.
  std::int64_t unwritten = 0;
  std::string text;  // "relative error 1.2e-03, max abs error 0.031 (tolerance 1e-02)", with the rest
};
Comparison Compare(const runtime::HostTensor& out, const runtime::HostTensor& ref, double tolerance);

// The median of `values` (non-empty).
double Median(std::vector<double> values);

}  // namespace weft::gpu
