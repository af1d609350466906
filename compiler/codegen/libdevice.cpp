// libdevice (libdevice.h): find the bitcode, link the functions a module calls, internalize them.
// The steps are LLVM's NVPTX usage guide's ("Linking with libdevice"): link, internalize, set the
// reflect flags, then the usual O3 pipeline, whose NVVMReflect pass (registered by the NVPTX
// target machine) resolves `__nvvm_reflect("__CUDA_FTZ")` from the module flag.
#include "codegen/libdevice.h"

#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/IR/Module.h>
#include <llvm/Linker/Linker.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Transforms/IPO/Internalize.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <vector>

namespace weft::codegen {
namespace {

constexpr const char* kDebianLibdevice = "/usr/lib/nvidia-cuda-toolkit/libdevice/libdevice.10.bc";

// The places to look, in order.
std::vector<std::string> Candidates() {
  if (const char* env = std::getenv("WEFT_LIBDEVICE"); env && *env) return {env};
  std::vector<std::string> out;
  std::string near_ptxas = WEFT_LIBDEVICE_NEAR_PTXAS;
  if (!near_ptxas.empty()) out.push_back(near_ptxas);
  out.push_back(kDebianLibdevice);
  return out;
}

}  // namespace

std::optional<std::string> FindLibdevice(std::string& looked) {
  std::vector<std::string> candidates = Candidates();
  looked.clear();
  for (const std::string& path : candidates) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(path, ec)) return path;
    looked += (looked.empty() ? "" : ", ") + path;
  }
  if (const char* env = std::getenv("WEFT_LIBDEVICE"); env && *env) looked = "WEFT_LIBDEVICE=" + looked;
  return std::nullopt;
}

std::optional<std::string> LinkLibdevice(llvm::Module& module) {
  std::string looked;
  std::optional<std::string> path = FindLibdevice(looked);
  if (!path) return "libdevice was not found (looked at " + looked + ")";
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer = llvm::MemoryBuffer::getFile(*path);
  if (!buffer) return *path + ": cannot read: " + buffer.getError().message();
  llvm::Expected<std::unique_ptr<llvm::Module>> library =
      llvm::parseBitcodeFile((*buffer)->getMemBufferRef(), module.getContext());
  if (!library) return *path + ": not LLVM bitcode: " + llvm::toString(library.takeError());
  // libdevice's own triple and layout are generic NVPTX ones; take the kernel's, so that the
  // linker does not warn about the difference.
  (*library)->setTargetTriple(module.getTargetTriple());
  (*library)->setDataLayout(module.getDataLayout());
  std::set<std::string> own;
  for (const llvm::GlobalValue& gv : module.global_values())
    if (!gv.isDeclaration()) own.insert(gv.getName().str());
  if (llvm::Linker::linkModules(module, std::move(*library), llvm::Linker::Flags::LinkOnlyNeeded))
    return *path + ": linking it failed";
  llvm::internalizeModule(module, [&](const llvm::GlobalValue& gv) { return own.count(gv.getName().str()) != 0; });
  module.addModuleFlag(llvm::Module::Override, "nvvm-reflect-ftz", std::uint32_t{0});
  return std::nullopt;
}

}  // namespace weft::codegen
