// The fake CUDA driver (fake_cuda.cpp) for the runtime's tests that run compiled programs' calls:
// loaded through WEFT_CUDA_LIBRARY with the environment that picks its failures cleared, and
// started; shut down (and unloaded) when the test ends.
#pragma once

#include <dlfcn.h>

#include <catch2/catch.hpp>
#include <cstdlib>

#include "weft/runtime.h"

namespace weft::testing {

inline void Env(const char* name, const char* value) {
  if (value == nullptr) {
    unsetenv(name);
  } else {
    setenv(name, value, 1);
  }
}

struct FakeDriver {
  // `sm`: the GPU's compute capability as major*10+minor ("90": a Hopper, whose TMA maps encode);
  // null: the fake's default, sm_80.
  explicit FakeDriver(const char* sm = nullptr) {
    weft_shutdown();
    Env("WEFT_CUDA_LIBRARY", WEFT_FAKE_CUDA);
    for (const char* name : {"WEFT_FAKE_CUDA_INIT", "WEFT_FAKE_CUDA_DEVICES", "WEFT_FAKE_CUDA_SM",
                             "WEFT_FAKE_CUDA_FREE", "WEFT_FAKE_CUDA_CAPACITY", "WEFT_DEVICE", "WEFT_SYNC_LAUNCHES"})
      Env(name, nullptr);
    Env("WEFT_FAKE_CUDA_SM", sm);
    REQUIRE(weft_init() == WEFT_OK);
  }
  ~FakeDriver() {
    weft_shutdown();
    for (const char* name : {"WEFT_CUDA_LIBRARY", "WEFT_FAKE_CUDA_CAPACITY", "WEFT_FAKE_CUDA_SM"}) Env(name, nullptr);
  }
  FakeDriver(const FakeDriver&) = delete;
  FakeDriver& operator=(const FakeDriver&) = delete;
};

// Fills `out` by `name`, a function the loaded fake driver exports for tests (not a driver
// function: weft_fake_cuda_memory, weft_fake_cuda_last_map; fake_cuda.cpp says what each gives).
inline void ReadFake(const char* name, unsigned long long* out) {
  void* library = dlopen(WEFT_FAKE_CUDA, RTLD_NOW | RTLD_NOLOAD);
  REQUIRE(library != nullptr);
  auto* read = reinterpret_cast<void (*)(unsigned long long*)>(dlsym(library, name));
  REQUIRE(read != nullptr);
  read(out);
  dlclose(library);
}

}  // namespace weft::testing
