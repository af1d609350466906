// Loading the CUDA driver (cuda_driver.h): dlopen, then one dlsym per entry of cuda_functions.def.
// Missing symbols stay null; runtime.cpp checks an entry before it calls it.
#include "cuda_driver.h"

#include <dlfcn.h>

#include <cstdlib>

namespace weft::runtime::cuda {

std::string DriverLibraryName() {
  const char* name = std::getenv("WEFT_CUDA_LIBRARY");
  return name != nullptr && *name != '\0' ? name : "libcuda.so.1";
}

bool LoadDriver(Driver& driver, std::string& error) {
  driver = Driver{};
  driver.library = DriverLibraryName();
  driver.handle = dlopen(driver.library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (driver.handle == nullptr) {
    const char* why = dlerror();
    error = why != nullptr ? why : "dlopen failed";
    return false;
  }
#define WEFT_CUDA_FUNCTION(Name, Symbol, Params) \
  driver.Name = reinterpret_cast<decltype(driver.Name)>(dlsym(driver.handle, Symbol));
#include "cuda_functions.def"
  return true;
}

void UnloadDriver(Driver& driver) {
  if (driver.handle != nullptr) dlclose(driver.handle);
  driver = Driver{};
}

const char* SymbolOf(const Driver& driver, const void* entry) {
#define WEFT_CUDA_FUNCTION(Name, Symbol, Params) \
  if (entry == static_cast<const void*>(&driver.Name)) return Symbol;
#include "cuda_functions.def"
  return "?";
}

std::string ErrorText(const Driver& driver, CUresult result) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (driver.cuGetErrorName == nullptr || driver.cuGetErrorName(result, &name) != CUDA_SUCCESS || name == nullptr) {
    return "CUDA error " + std::to_string(result);
  }
  std::string out = name;
  if (driver.cuGetErrorString != nullptr && driver.cuGetErrorString(result, &text) == CUDA_SUCCESS && text != nullptr) {
    out += ": ";
    out += text;
  }
  return out;
}

}  // namespace weft::runtime::cuda
