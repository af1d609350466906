// The fake CUDA driver (fake_cuda.cpp) for the runtime's tests that run compiled programs' calls:
// loaded through WEFT_CUDA_LIBRARY with the environment that picks its failures cleared, and
// started; shut down (and unloaded) when the test ends.
#pragma once

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

}  // namespace weft::testing
