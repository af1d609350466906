// Device memory of compiled programs and library calls (program.cpp over device_pool.h), on the fake
// driver (fake_cuda.cpp), which counts its allocations and frees (weft_fake_cuda_memory): a value
// the buffer plan says is dead hands its memory to the next one, so a loop's iterations allocate
// once; repeated library calls take their blocks from the pool; a program's end gives everything
// back; out of memory empties the pool and retries once, and a second failure is the call's error.
#include <dlfcn.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "fake_driver.h"
#include "weft/library.h"
#include "weft/runtime.h"

namespace {

using weft::testing::Env;
using weft::testing::FakeDriver;

struct Memory {
  unsigned long long allocations = 0, frees = 0, live_bytes = 0;
};

// The fake driver's counts since it was loaded (once a process: its std::map makes it unique, so
// dlclose keeps it), less those at `since`.
Memory DriverMemory(const Memory& since = {}) {
  unsigned long long c[3];
  weft::testing::ReadFake("weft_fake_cuda_memory", c);
  return {c[0] - since.allocations, c[1] - since.frees, c[2] - since.live_bytes};
}

void StartProgram() {
  static char name[] = "program_memory_test";
  static char* argv[] = {name, nullptr};
  weft_program_start(1, argv, "sm_80", 1);
}

// An export `fresh : f32[n] -> f32[n]` whose body makes its result as a kernel's zero-filled `out`
// (the generated code of a function that calls a kernel, without the launch).
void FreshBody() {
  weft_tensor* x = weft_program_load("x", WEFT_DTYPE_F32, 1, "f32[n]");
  std::int64_t n = weft_program_dim(x, 0);
  weft_program_save("0", weft_program_out(WEFT_DTYPE_F32, 1, &n, nullptr));
}

const char* const kParamNames[] = {"x"};
const std::int32_t kParamDtypes[] = {WEFT_DTYPE_F32};
const std::int32_t kParamRanks[] = {1};
const char* const kParamTypes[] = {"f32[n]"};
const std::int32_t kResultDtypes[] = {WEFT_DTYPE_F32};
const weft_library_export kFresh = {"fresh",
                                    "fresh : f32[n] -> f32[n]",
                                    "sm_80",
                                    1,
                                    1,
                                    kParamNames,
                                    kParamDtypes,
                                    kParamRanks,
                                    kParamTypes,
                                    1,
                                    kResultDtypes,
                                    FreshBody};

// Calls `fresh` on n host floats; its result's deleter runs before this returns.
weft_status CallFresh(std::int64_t n, weft_library_results where) {
  std::vector<float> x(static_cast<std::size_t>(n), 1.0f);
  const std::int64_t args[] = {static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(x.data())), 1, WEFT_DTYPE_F32,
                               1, n};
  weft_dl_managed_tensor* result = nullptr;
  weft_status status = weft_library_call(&kFresh, args, nullptr, where, &result);
  if (result != nullptr) result->deleter(result);
  return status;
}

}  // namespace

TEST_CASE("program memory: a loop's values reuse one buffer, and the program's end frees every block",
          "[runtime][pool]") {
  FakeDriver fake;
  const Memory base = DriverMemory();
  StartProgram();
  const std::int64_t shape[] = {256, 64};
  // Ten iterations, each value dead when the next is made (the plan's `reuse`): one allocation,
  // whether the kernel stores every element (weft_program_buffer) or not (weft_program_out).
  weft_tensor* value = nullptr;
  for (int i = 0; i < 10; ++i) value = weft_program_buffer(WEFT_DTYPE_F32, 2, shape, value);
  for (int i = 0; i < 10; ++i) value = weft_program_out(WEFT_DTYPE_F32, 2, shape, value);
  CHECK(DriverMemory(base).allocations == 1);
  // A value too large for the dead one's block: that block goes back to the pool, and the next
  // value of its size takes it from there.
  const std::int64_t larger[] = {512, 64};
  weft_program_buffer(WEFT_DTYPE_F32, 2, larger, value);
  CHECK(DriverMemory(base).allocations == 2);
  weft_program_buffer(WEFT_DTYPE_F32, 2, shape, nullptr);
  CHECK(DriverMemory(base).allocations == 2);
  // Values alive together get blocks of their own.
  weft_program_out(WEFT_DTYPE_F32, 2, shape, nullptr);
  CHECK(DriverMemory(base).allocations == 3);
  CHECK(weft_program_end() == 0);
  Memory after = DriverMemory(base);
  CHECK(after.frees == after.allocations);
  CHECK(after.live_bytes == 0);
}

TEST_CASE("program memory: repeated library calls take their blocks from the pool", "[runtime][pool]") {
  FakeDriver fake;
  const Memory base = DriverMemory();
  // Results on the GPU: each handed over, its deleter gives the block back for the next call.
  for (int i = 0; i < 5; ++i) REQUIRE(CallFresh(1000, WEFT_RESULTS_DEVICE) == WEFT_OK);
  CHECK(DriverMemory(base).allocations == 1);
  // Results copied to the host: the call's own tensors go back at its end.
  for (int i = 0; i < 5; ++i) REQUIRE(CallFresh(1000, WEFT_RESULTS_HOST) == WEFT_OK);
  CHECK(DriverMemory(base).allocations == 1);
  CHECK(DriverMemory(base).frees == 0);
  // weft_shutdown gives the kept block back (the fake driver held loaded to count it).
  void* held = dlopen(WEFT_FAKE_CUDA, RTLD_NOW | RTLD_NOLOAD);
  REQUIRE(held != nullptr);
  weft_shutdown();
  CHECK(DriverMemory(base).frees == 1);
  CHECK(DriverMemory(base).live_bytes == 0);
  dlclose(held);
}

TEST_CASE("program memory: out of memory empties the pool and retries once, then is the call's error",
          "[runtime][pool]") {
  FakeDriver fake;
  const Memory base = DriverMemory();
  // 6 MiB beside what earlier tests of this process left allocated.
  Env("WEFT_FAKE_CUDA_CAPACITY", std::to_string(base.live_bytes + 6291456).c_str());
  // 2 MiB, kept after the call.
  REQUIRE(CallFresh(512 * 1024, WEFT_RESULTS_DEVICE) == WEFT_OK);
  CHECK(DriverMemory(base).live_bytes == 2097152);
  // 4.4 MiB rounds to a 5 MiB class, which does not fit beside the kept 2 MiB: the pool frees them
  // and the driver gives the 4.4 MiB asked for.
  REQUIRE(CallFresh(1100000, WEFT_RESULTS_DEVICE) == WEFT_OK);
  Memory m = DriverMemory(base);
  CHECK(m.allocations == 2);
  CHECK(m.frees == 1);
  CHECK(m.live_bytes == 4400000);
  // 8 MiB never fits: the call fails with the driver's message, and nothing of it is left.
  CHECK(CallFresh(2 * 1024 * 1024, WEFT_RESULTS_DEVICE) == WEFT_ERROR_OUT_OF_MEMORY);
  CHECK(std::string(weft_last_error()) ==
        "out of GPU memory: cannot allocate 8 MiB (8388608 bytes): 8 GiB of 16 GiB free on GPU 0 (Fake GPU 0)");
  CHECK(DriverMemory(base).live_bytes == 0);
  // And the next call works.
  REQUIRE(CallFresh(1000, WEFT_RESULTS_HOST) == WEFT_OK);
}
