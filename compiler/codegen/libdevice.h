// NVIDIA's libdevice: the CUDA toolkit's math library as LLVM bitcode (`__nv_exp`, `__nv_log`...),
// which array kernels link for the f64 functions that have no PTX instruction. Internal to
// compiler/codegen.
//
// Where it is looked for, in order: the file `WEFT_LIBDEVICE` names (when set, only there), the
// toolkit of the ptxas CMake found (`<cuda>/nvvm/libdevice/libdevice.10.bc`), and Debian's
// `/usr/lib/nvidia-cuda-toolkit/libdevice/libdevice.10.bc` (docs/building.md).
#pragma once

#include <optional>
#include <string>

namespace llvm {
class Module;
}  // namespace llvm

namespace weft::codegen {

// libdevice's path, or nullopt with `looked` saying where it was looked for.
std::optional<std::string> FindLibdevice(std::string& looked);

// Links the libdevice functions `module` calls (declarations named `__nv_*`) into it, makes them
// internal (only the module's own definitions stay visible), and sets the `nvvm-reflect-ftz`
// module flag to 0 (no flush of subnormals: the interpreter's numerics), which NVVMReflect folds
// into libdevice's code during O3. nullopt on success, else why it failed.
// @pre `module`'s triple and data layout are NVPTX's
std::optional<std::string> LinkLibdevice(llvm::Module& module);

}  // namespace weft::codegen
