// The CUDA driver, loaded at run time: dlopen of libcuda.so.1 (or the file WEFT_CUDA_LIBRARY
// names), then dlsym of each function of cuda_functions.def into a table. Nothing links libcuda, so
// a program that links the runtime starts on a machine without a GPU and can say so clearly.
#pragma once

#include <string>

#include "cuda_types.h"

namespace weft::runtime::cuda {

struct Driver {
#define WEFT_CUDA_FUNCTION(Name, Symbol, Params) CUresult(*Name) Params = nullptr;
#include "cuda_functions.def"
  void* handle = nullptr;
  std::string library;  // the file that was loaded
};

// The library LoadDriver opens: $WEFT_CUDA_LIBRARY if set and not empty, else "libcuda.so.1".
std::string DriverLibraryName();

// Loads the driver into `driver`. False: `error` says why (the dlopen message included).
bool LoadDriver(Driver& driver, std::string& error);
void UnloadDriver(Driver& driver);

// The symbol behind a table entry, for "the CUDA driver has no `cuTensorMapEncodeTiled`".
const char* SymbolOf(const Driver& driver, const void* entry);

// "CUDA_ERROR_OUT_OF_MEMORY: out of memory", or "CUDA error 2" when the driver cannot name it.
std::string ErrorText(const Driver& driver, CUresult result);

}  // namespace weft::runtime::cuda
