// The C API of runtime/include/weft/runtime.h without a GPU: argument checks, the no-driver path,
// and, through a fake driver (fake_cuda.cpp, loaded with WEFT_CUDA_LIBRARY), WEFT_DEVICE, out of
// memory, JIT logs, launches above 48 KiB of shared memory, and kernel faults, each by its message.
// The real driver is exercised by tests/gpu/runtime_smoke.cpp.
#include "weft/runtime.h"

#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

namespace {

std::string LastError() {
  return weft_last_error();
}

// Sets or unsets environment variables for one test, restoring nothing: each test sets what it reads.
void Env(const char* name, const char* value) {
  if (value == nullptr) {
    unsetenv(name);
  } else {
    setenv(name, value, 1);
  }
}

// Points the runtime at the fake driver with the given settings, and shuts it down at the end.
struct FakeDriver {
  explicit FakeDriver(const char* devices = "1", const char* sm = "80") {
    weft_shutdown();
    Env("WEFT_CUDA_LIBRARY", WEFT_FAKE_CUDA);
    Env("WEFT_FAKE_CUDA_INIT", nullptr);
    Env("WEFT_FAKE_CUDA_DEVICES", devices);
    Env("WEFT_FAKE_CUDA_SM", sm);
    Env("WEFT_FAKE_CUDA_FREE", nullptr);
    Env("WEFT_DEVICE", nullptr);
    Env("WEFT_SYNC_LAUNCHES", nullptr);
  }
  ~FakeDriver() {
    weft_shutdown();
    Env("WEFT_CUDA_LIBRARY", nullptr);
  }
};

// Runs `body` in a child process and returns (exit status, what it wrote on stderr).
template <typename F>
std::pair<int, std::string> RunChild(F body) {
  std::fflush(stdout);  // else the child's exit writes what the parent buffered
  std::fflush(stderr);
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    close(fds[0]);
    dup2(fds[1], 2);
    body();
    _exit(0);
  }
  close(fds[1]);
  std::string err;
  char buffer[512];
  ssize_t n;
  while ((n = read(fds[0], buffer, sizeof buffer)) > 0) err.append(buffer, static_cast<std::size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, err};
}

extern "C" long long weft_c_header_test(void);  // c_header_test.c

const char* kPtx = ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry add() { ret; }\n";

}  // namespace

TEST_CASE("runtime: the header compiles as C11 and works from C") {
  CHECK(weft_c_header_test() == 6);
}

TEST_CASE("runtime: without weft_init, device calls say to call it") {
  weft_shutdown();
  weft_device_ptr p = 1;
  CHECK(weft_device_alloc(&p, 16) == WEFT_ERROR_NOT_INITIALIZED);
  CHECK(p == 0);
  CHECK(LastError() == "the GPU is not initialized: call `weft_init` first");
  weft_module* m = nullptr;
  CHECK(weft_module_load(&m, kPtx, std::strlen(kPtx), "m") == WEFT_ERROR_NOT_INITIALIZED);
  CHECK(weft_synchronize() == WEFT_ERROR_NOT_INITIALIZED);
  weft_device_info info;
  CHECK(weft_device_get_info(&info) == WEFT_ERROR_NOT_INITIALIZED);
}

TEST_CASE("runtime: null handles and pointers are invalid arguments, never crashes") {
  CHECK(weft_device_alloc(nullptr, 16) == WEFT_ERROR_INVALID_ARGUMENT);
  CHECK(LastError() == "`weft_device_alloc`: `ptr` is null");
  CHECK(weft_launch(nullptr, nullptr, nullptr) == WEFT_ERROR_INVALID_ARGUMENT);
  CHECK(LastError() == "`weft_launch`: `kernel` is null");
  CHECK(weft_kernel_get(nullptr, nullptr, "k") == WEFT_ERROR_INVALID_ARGUMENT);
  CHECK(weft_module_load(nullptr, kPtx, 1, "m") == WEFT_ERROR_INVALID_ARGUMENT);
  weft_module* m = nullptr;
  CHECK(weft_module_load(&m, nullptr, 0, "m") == WEFT_ERROR_INVALID_ARGUMENT);
  CHECK(LastError() == "`weft_module_load`: the image is empty");
  CHECK(weft_copy_to_device(0, "x", 1) == WEFT_ERROR_INVALID_ARGUMENT);
  CHECK(LastError() == "`weft_copy_to_device`: `dst` is null");
  CHECK(weft_copy_to_host(nullptr, 0, 0) == WEFT_OK);  // nothing to copy
  CHECK(weft_device_free(0) == WEFT_OK);
  float ms = 0;
  CHECK(weft_time_launches(nullptr, nullptr, nullptr, 0, &ms) == WEFT_ERROR_INVALID_ARGUMENT);
  CHECK(LastError() == "`weft_time_launches`: the count 0 is not at least 1");
  weft_module_unload(nullptr);
  weft_event_destroy(nullptr);
  weft_host_tensor_free(nullptr);
}

TEST_CASE("runtime: no driver is one clear message") {
  weft_shutdown();
  Env("WEFT_CUDA_LIBRARY", "/nonexistent/libcuda.so.1");
  CHECK(weft_init() == WEFT_ERROR_NO_DRIVER);
  Env("WEFT_CUDA_LIBRARY", nullptr);
  const std::string message = LastError();
  CHECK(message.rfind("no CUDA driver: cannot load `/nonexistent/libcuda.so.1` (", 0) == 0);
  CHECK(message.find("No such file or directory") != std::string::npos);
  CHECK(message.find("running a weft program needs an NVIDIA GPU and its driver") != std::string::npos);
  CHECK(message.find('\n') == std::string::npos);
}

TEST_CASE("runtime: a library that is not a CUDA driver is named") {
  weft_shutdown();
  Env("WEFT_CUDA_LIBRARY", "libm.so.6");
  CHECK(weft_init() == WEFT_ERROR_NO_DRIVER);
  Env("WEFT_CUDA_LIBRARY", nullptr);
  CHECK(LastError() == "`libm.so.6` is not a CUDA driver: it has no `cuInit`");
}

TEST_CASE("runtime: weft_check and weft_fail print one line and exit 1") {
  auto [status, err] = RunChild([] { weft_fail("out of GPU memory: cannot allocate 1 PiB"); });
  CHECK(status == 1);
  CHECK(err == "weft: error: out of GPU memory: cannot allocate 1 PiB\n");
  auto [status2, err2] = RunChild([] { weft_failf("x.npy: `where n %% 4 == 0` does not hold: n = %d", 6); });
  CHECK(status2 == 1);
  CHECK(err2 == "weft: error: x.npy: `where n % 4 == 0` does not hold: n = 6\n");
  auto [status3, err3] = RunChild([] {
    Env("WEFT_CUDA_LIBRARY", "/nonexistent/libcuda.so.1");
    weft_check(weft_init());
  });
  CHECK(status3 == 1);
  CHECK(err3.rfind("weft: error: no CUDA driver: cannot load `/nonexistent/libcuda.so.1`", 0) == 0);
  auto [status4, err4] = RunChild([] { weft_check(WEFT_OK); });
  CHECK(status4 == 0);
  CHECK(err4.empty());
}

TEST_CASE("runtime: fake driver: init picks WEFT_DEVICE and reads the GPU") {
  FakeDriver fake("3");
  Env("WEFT_DEVICE", "2");
  REQUIRE(weft_init() == WEFT_OK);
  CHECK(weft_init() == WEFT_OK);  // again: nothing happens
  weft_device_info info;
  REQUIRE(weft_device_get_info(&info) == WEFT_OK);
  CHECK(info.index == 2);
  CHECK(std::string(info.name) == "Fake GPU 2");
  CHECK(info.sm_major == 8);
  CHECK(info.sm_minor == 0);
  CHECK(info.max_shared_bytes_per_block == 227 * 1024);
  CHECK(info.total_memory == (std::uint64_t{16} << 30));
  CHECK(info.driver_version == 13000);
}

TEST_CASE("runtime: fake driver: a bad WEFT_DEVICE says how many GPUs there are") {
  FakeDriver fake("2");
  Env("WEFT_DEVICE", "2");
  CHECK(weft_init() == WEFT_ERROR_NO_DEVICE);
  CHECK(LastError() == "WEFT_DEVICE=2 names no GPU: this machine has 2 GPUs, 0 to 1");
  Env("WEFT_DEVICE", "gpu1");
  CHECK(weft_init() == WEFT_ERROR_NO_DEVICE);
  CHECK(LastError() == "WEFT_DEVICE=`gpu1` is not a GPU index: this machine has 2 GPUs, 0 to 1");
  Env("WEFT_DEVICE", "-1");
  CHECK(weft_init() == WEFT_ERROR_NO_DEVICE);
  Env("WEFT_FAKE_CUDA_DEVICES", "1");
  Env("WEFT_DEVICE", "1");
  CHECK(weft_init() == WEFT_ERROR_NO_DEVICE);
  CHECK(LastError() == "WEFT_DEVICE=1 names no GPU: this machine has 1 GPU, index 0");
  Env("WEFT_DEVICE", nullptr);
  CHECK(weft_init() == WEFT_OK);
}

TEST_CASE("runtime: fake driver: no GPU") {
  FakeDriver fake("0");
  CHECK(weft_init() == WEFT_ERROR_NO_DEVICE);
  CHECK(LastError() == "no GPU: the CUDA driver found none");
  Env("WEFT_FAKE_CUDA_INIT", "100");
  CHECK(weft_init() == WEFT_ERROR_NO_DEVICE);
  CHECK(LastError() == "no GPU: the CUDA driver found none (CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected)");
  Env("WEFT_FAKE_CUDA_INIT", "999");
  CHECK(weft_init() == WEFT_ERROR_NO_DRIVER);
  CHECK(LastError() == "the CUDA driver failed to start: CUDA_ERROR_UNKNOWN: unknown error");
}

TEST_CASE("runtime: fake driver: out of memory says what was asked and what is free") {
  FakeDriver fake;
  Env("WEFT_FAKE_CUDA_FREE", "5368709120");  // 5 GiB
  REQUIRE(weft_init() == WEFT_OK);
  weft_device_ptr p = 0;
  CHECK(weft_device_alloc(&p, std::uint64_t{1} << 50) == WEFT_ERROR_OUT_OF_MEMORY);
  CHECK(p == 0);
  CHECK(
      LastError() ==
      "out of GPU memory: cannot allocate 1 PiB (1125899906842624 bytes): 5 GiB of 16 GiB free on GPU 0 (Fake GPU 0)");
  CHECK(weft_device_alloc(&p, 6000000000) == WEFT_ERROR_OUT_OF_MEMORY);
  CHECK(LastError() ==
        "out of GPU memory: cannot allocate 5.6 GiB (6000000000 bytes): 5 GiB of 16 GiB free on GPU 0 (Fake GPU 0)");
  CHECK(weft_device_alloc(&p, 0) == WEFT_OK);
  CHECK(p == 0);
}

TEST_CASE("runtime: fake driver: memory round trip, and a function the driver lacks is named") {
  FakeDriver fake;
  REQUIRE(weft_init() == WEFT_OK);
  weft_device_ptr p = 0;
  REQUIRE(weft_device_alloc(&p, 64) == WEFT_OK);
  CHECK(weft_device_memset(p, 0xFF, 64) == WEFT_OK);
  int in[4] = {1, 2, 3, 4};
  int out[8];
  CHECK(weft_copy_to_device(p, in, sizeof in) == WEFT_OK);
  CHECK(weft_copy_to_host(out, p, sizeof out) == WEFT_OK);
  CHECK(out[3] == 4);
  CHECK(out[4] == -1);
  CHECK(weft_copy_device_to_device(p + 32, p, 16) == WEFT_ERROR_DRIVER);
  CHECK(LastError() == "cannot copy 16 bytes on the GPU: the CUDA driver `" WEFT_FAKE_CUDA
                       "` has no `cuMemcpyDtoD_v2` (is it too old?)");
  CHECK(weft_device_free(p) == WEFT_OK);
}

TEST_CASE("runtime: fake driver: a rejected module's message has the JIT log") {
  FakeDriver fake;
  REQUIRE(weft_init() == WEFT_OK);
  weft_module* m = nullptr;
  const char* bad = "garbage";
  CHECK(weft_module_load(&m, bad, std::strlen(bad), "bad.ptx") == WEFT_ERROR_MODULE);
  CHECK(m == nullptr);
  CHECK(LastError() ==
        "cannot load module `bad.ptx` (PTX) on GPU 0 (Fake GPU 0): CUDA_ERROR_INVALID_PTX: a PTX JIT compilation "
        "failed: ptxas application ptx input, line 1; fatal   : Parsing error near 'garbage': syntax error");
  REQUIRE(weft_module_load(&m, kPtx, std::strlen(kPtx), "add.ptx") == WEFT_OK);
  weft_kernel* k = nullptr;
  CHECK(weft_kernel_get(&k, m, "sub") == WEFT_ERROR_MODULE);
  CHECK(LastError() == "module `add.ptx` has no kernel `sub`");
  REQUIRE(weft_kernel_get(&k, m, "add") == WEFT_OK);
  weft_kernel* again = nullptr;
  REQUIRE(weft_kernel_get(&again, m, "add") == WEFT_OK);
  CHECK(again == k);
  weft_module_unload(m);
}

TEST_CASE("runtime: fake driver: launches are checked, and above 48 KiB of shared memory the limit is raised") {
  FakeDriver fake;
  REQUIRE(weft_init() == WEFT_OK);
  weft_module* m = nullptr;
  REQUIRE(weft_module_load(&m, kPtx, std::strlen(kPtx), "add.ptx") == WEFT_OK);
  weft_kernel* k = nullptr;
  REQUIRE(weft_kernel_get(&k, m, "add") == WEFT_OK);
  weft_launch_config c = {{4, 1, 1}, {256, 1, 1}, 0};
  CHECK(weft_launch(k, &c, nullptr) == WEFT_OK);
  c.shared_bytes = 200 * 1024;  // the fake, like the driver, refuses this unless the attribute was raised
  CHECK(weft_launch(k, &c, nullptr) == WEFT_OK);
  c.shared_bytes = 228 * 1024;
  CHECK(weft_launch(k, &c, nullptr) == WEFT_ERROR_INVALID_ARGUMENT);
  CHECK(LastError() ==
        "cannot launch kernel `add` (grid 4x1x1, block 256x1x1, 233472 bytes of dynamic shared memory): 233472 bytes "
        "of shared memory a block (dynamic and 0 static), but GPU 0 (Fake GPU 0) allows at most 232448");
  c = {{4, 1, 1}, {64, 32, 1}, 0};
  CHECK(weft_launch(k, &c, nullptr) == WEFT_ERROR_INVALID_ARGUMENT);
  CHECK(LastError() ==
        "cannot launch kernel `add` (grid 4x1x1, block 64x32x1, 0 bytes of dynamic shared memory): 2048 threads a "
        "block, but the kernel allows at most 1024 on GPU 0 (Fake GPU 0)");
  c = {{1, 0, 1}, {1, 1, 1}, 0};
  CHECK(weft_launch(k, &c, nullptr) == WEFT_ERROR_INVALID_ARGUMENT);
  CHECK(LastError() ==
        "cannot launch kernel `add` (grid 1x0x1, block 1x1x1, 0 bytes of dynamic shared memory): the grid's y of 0 is "
        "not 1 to 65535");
  c = {{1, 1, 1}, {1, 1, 65}, 0};
  CHECK(weft_launch(k, &c, nullptr) == WEFT_ERROR_INVALID_ARGUMENT);
  CHECK(LastError().find("the block's z of 65 is not 1 to 64") != std::string::npos);
  c = {{1, 1, 1}, {32, 1, 1}, 0};
  float ms = 0;
  CHECK(weft_time_launches(k, &c, nullptr, 10, &ms) == WEFT_OK);
  CHECK(ms == 1.5f);
  CHECK(weft_synchronize() == WEFT_OK);
  weft_module_unload(m);
}

TEST_CASE("runtime: fake driver: a persistent entry's grid is the blocks the GPU holds at once") {
  FakeDriver fake;
  REQUIRE(weft_init() == WEFT_OK);
  weft_module* m = nullptr;
  REQUIRE(weft_module_load(&m, kPtx, std::strlen(kPtx), "add.ptx") == WEFT_OK);
  weft_kernel* k = nullptr;
  REQUIRE(weft_kernel_get(&k, m, "add") == WEFT_OK);
  // The fake GPU has 4 multiprocessors, each holding one block: 16 blocks become 4, 3 stay 3.
  weft_launch_config c = {{8, 2, 1}, {384, 1, 1}, 200 * 1024};
  REQUIRE(weft_persistent_grid(k, &c) == WEFT_OK);
  CHECK(c.grid[0] == 4);
  CHECK(c.grid[1] == 1);
  CHECK(c.grid[2] == 1);
  CHECK(weft_launch(k, &c, nullptr) == WEFT_OK);  // the shared memory limit was raised for it
  c = {{3, 1, 1}, {384, 1, 1}, 0};
  REQUIRE(weft_persistent_grid(k, &c) == WEFT_OK);
  CHECK(c.grid[0] == 3);
  CHECK(weft_persistent_grid(k, nullptr) == WEFT_ERROR_INVALID_ARGUMENT);
  CHECK(weft_synchronize() == WEFT_OK);
  weft_module_unload(m);
}

TEST_CASE("runtime: fake driver: a kernel that faults is named by the next wait") {
  FakeDriver fake;
  REQUIRE(weft_init() == WEFT_OK);
  weft_module* m = nullptr;
  REQUIRE(weft_module_load(&m, kPtx, std::strlen(kPtx), "m.ptx") == WEFT_OK);
  weft_kernel* add = nullptr;
  weft_kernel* fault = nullptr;
  REQUIRE(weft_kernel_get(&add, m, "add") == WEFT_OK);
  REQUIRE(weft_kernel_get(&fault, m, "fault") == WEFT_OK);
  weft_launch_config c = {{1, 1, 1}, {32, 1, 1}, 0};
  REQUIRE(weft_launch(fault, &c, nullptr) == WEFT_OK);
  CHECK(weft_synchronize() == WEFT_ERROR_LAUNCH);
  CHECK(LastError() == "kernel `fault` failed: CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered");

  weft_shutdown();
  REQUIRE(weft_init() == WEFT_OK);
  REQUIRE(weft_module_load(&m, kPtx, std::strlen(kPtx), "m.ptx") == WEFT_OK);
  REQUIRE(weft_kernel_get(&add, m, "add") == WEFT_OK);
  REQUIRE(weft_kernel_get(&fault, m, "fault") == WEFT_OK);
  REQUIRE(weft_launch(add, &c, nullptr) == WEFT_OK);
  REQUIRE(weft_launch(fault, &c, nullptr) == WEFT_OK);
  REQUIRE(weft_launch(add, &c, nullptr) == WEFT_ERROR_LAUNCH);  // the fault shows at the next call
  CHECK(LastError() ==
        "a kernel failed: CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered; kernels launched "
        "since the GPU was last waited for: `add`, `fault` (WEFT_SYNC_LAUNCHES=1 finds which)");

  weft_shutdown();
  Env("WEFT_SYNC_LAUNCHES", "1");
  REQUIRE(weft_init() == WEFT_OK);
  REQUIRE(weft_module_load(&m, kPtx, std::strlen(kPtx), "m.ptx") == WEFT_OK);
  REQUIRE(weft_kernel_get(&add, m, "add") == WEFT_OK);
  REQUIRE(weft_kernel_get(&fault, m, "fault") == WEFT_OK);
  REQUIRE(weft_launch(add, &c, nullptr) == WEFT_OK);
  CHECK(weft_launch(fault, &c, nullptr) == WEFT_ERROR_LAUNCH);
  CHECK(LastError() == "kernel `fault` failed: CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered");
  int x = 0;
  weft_device_ptr p = 0;
  REQUIRE(weft_device_alloc(&p, 4) == WEFT_OK);
  CHECK(weft_copy_to_host(&x, p, 4) == WEFT_ERROR_LAUNCH);
  CHECK(LastError() == "the GPU failed: CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered");
  CHECK(weft_device_free(p) == WEFT_OK);
}

namespace {

// A valid 2-D f16 map's arguments; each TMA test breaks one.
struct TmaArgs {
  weft_tensor_map map;
  weft_tma_dtype dtype = WEFT_TMA_F16;
  std::uint32_t rank = 2;
  weft_device_ptr address = 0x10000;
  std::uint64_t dims[5] = {128, 64, 1, 1, 1};
  std::uint64_t strides[4] = {256, 256 * 64, 0, 0};
  std::uint32_t box[5] = {64, 64, 1, 1, 1};
  std::uint32_t element_strides[5] = {1, 1, 1, 1, 1};
  weft_tma_interleave interleave = WEFT_TMA_INTERLEAVE_NONE;
  weft_tma_swizzle swizzle = WEFT_TMA_SWIZZLE_128B;
  weft_tma_l2_promotion l2 = WEFT_TMA_L2_128B;
  weft_tma_oob_fill oob = WEFT_TMA_OOB_ZERO;

  weft_status Encode() {
    return weft_tensor_map_encode_tiled(&map, dtype, rank, address, dims, strides, box, element_strides, interleave,
                                        swizzle, l2, oob);
  }
  std::string Error() {
    CHECK(Encode() == WEFT_ERROR_INVALID_ARGUMENT);
    std::string e = LastError();
    const std::string prefix = "cannot encode a TMA tensor map: ";
    REQUIRE(e.rfind(prefix, 0) == 0);
    return e.substr(prefix.size());
  }
};

}  // namespace

TEST_CASE("runtime: TMA tensor map arguments are checked before the driver, each rule by name") {
  weft_shutdown();
  {
    TmaArgs a;
    CHECK(a.Encode() == WEFT_ERROR_NOT_INITIALIZED);  // valid: only the GPU is missing
  }
  auto error = [](auto change) {
    TmaArgs a;
    change(a);
    return a.Error();
  };
  CHECK(error([](TmaArgs& a) { a.rank = 6; }) == "rank 6 is not 1 to 5");
  CHECK(error([](TmaArgs& a) { a.rank = 0; }) == "rank 0 is not 1 to 5");
  CHECK(error([](TmaArgs& a) { a.dtype = static_cast<weft_tma_dtype>(13); }) == "dtype 13 is not a weft_tma_dtype");
  CHECK(error([](TmaArgs& a) { a.address = 0x10008; }) == "the address 0x10008 is not 16-byte aligned");
  CHECK(error([](TmaArgs& a) { a.dims[1] = 0; }) == "dims[1] = 0 is not 1 to 2^32");
  CHECK(error([](TmaArgs& a) { a.strides[0] = 200; }) == "strides_bytes[0] = 200 is not a multiple of 16");
  CHECK(error([](TmaArgs& a) { a.strides[0] = std::uint64_t{1} << 40; }) ==
        "strides_bytes[0] = 1099511627776 is not below 2^40");
  CHECK(error([](TmaArgs& a) { a.box[1] = 257; }) == "box[1] = 257 is not 1 to 256");
  CHECK(error([](TmaArgs& a) { a.box[0] = 12; }) == "box[0] of 12 f16 is 24 bytes, not a multiple of 16");
  CHECK(error([](TmaArgs& a) { a.box[0] = 128; }) ==
        "box[0] of 128 f16 is 256 bytes, more than the 128-byte swizzle's span");
  CHECK(error([](TmaArgs& a) {
          a.box[0] = 64;
          a.swizzle = WEFT_TMA_SWIZZLE_64B;
        }) == "box[0] of 64 f16 is 128 bytes, more than the 64-byte swizzle's span");
  CHECK(error([](TmaArgs& a) { a.element_strides[1] = 9; }) == "element_strides[1] = 9 is not 1 to 8");
  CHECK(error([](TmaArgs& a) { a.interleave = WEFT_TMA_INTERLEAVE_16B; }) ==
        "rank 2: an interleaved map needs rank 3 to 5");
  CHECK(error([](TmaArgs& a) {
          a.dtype = WEFT_TMA_I32;
          a.box[0] = 32;
          a.oob = WEFT_TMA_OOB_NAN_REQUEST_ZERO_FMA;
        }) == "oob_fill NAN_REQUEST_ZERO_FMA needs a float dtype, not i32");
  CHECK(weft_tensor_map_encode_tiled(nullptr, WEFT_TMA_F16, 1, 0, nullptr, nullptr, nullptr, nullptr,
                                     WEFT_TMA_INTERLEAVE_NONE, WEFT_TMA_SWIZZLE_NONE, WEFT_TMA_L2_NONE,
                                     WEFT_TMA_OOB_ZERO) == WEFT_ERROR_INVALID_ARGUMENT);
  CHECK(LastError() == "cannot encode a TMA tensor map: `map` is null");
}

TEST_CASE("runtime: fake driver: TMA needs sm_90, and then reaches the driver") {
  {
    FakeDriver fake("1", "80");
    REQUIRE(weft_init() == WEFT_OK);
    TmaArgs a;
    CHECK(a.Error() == "TMA needs compute capability 9.0 or newer, and GPU 0 (Fake GPU 0) is sm_80");
  }
  {
    FakeDriver fake("1", "90");
    REQUIRE(weft_init() == WEFT_OK);
    TmaArgs a;
    CHECK(a.Encode() == WEFT_OK);
    CHECK(a.map.opaque[0] == 0xABABABABABABABABULL);
  }
}

TEST_CASE("runtime: host tensors, .npy through the C API, and random's blocks") {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("weft-rt-test-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "x.npy").string();
  const std::int64_t shape[2] = {3, 4};
  weft_host_tensor* t = nullptr;
  REQUIRE(weft_host_tensor_create(&t, WEFT_DTYPE_F32, 2, shape) == WEFT_OK);
  CHECK(weft_host_tensor_count(t) == 12);
  CHECK(weft_host_tensor_bytes(t) == 48);
  REQUIRE(weft_random_fill(t, 42) == WEFT_OK);
  // Element 5 is (word0 >> 8) * 2^-24 of block 5 under key 42.
  std::uint32_t block[4];
  weft_random_block(42, 5, block);
  const float* data = static_cast<const float*>(weft_host_tensor_data(t));
  CHECK(data[5] == static_cast<float>(block[0] >> 8) * 0x1p-24f);
  const std::uint32_t counter[4] = {0, 0, 0, 0};
  const std::uint32_t key[2] = {0, 0};
  weft_philox4x32_10(counter, key, block);
  CHECK(block[0] == 0x6627e8d5);  // Random123's known answer
  CHECK(block[3] == 0x9b00dbd8);

  REQUIRE(weft_npy_save(path.c_str(), t) == WEFT_OK);
  weft_host_tensor* back = nullptr;
  REQUIRE(weft_npy_load_expecting(&back, path.c_str(), WEFT_DTYPE_F32, 2) == WEFT_OK);
  CHECK(weft_host_tensor_dtype(back) == WEFT_DTYPE_F32);
  CHECK(weft_host_tensor_rank(back) == 2);
  CHECK(weft_host_tensor_shape(back)[1] == 4);
  CHECK(std::memcmp(weft_host_tensor_data(back), data, 48) == 0);
  weft_host_tensor_free(back);
  back = nullptr;
  CHECK(weft_npy_load_expecting(&back, path.c_str(), WEFT_DTYPE_F64, 1) == WEFT_ERROR_IO);
  CHECK(back == nullptr);
  CHECK(LastError() == path + ": the program expects `f64` with 1 dim but the file holds f32[3, 4]");
  CHECK(weft_npy_load(&back, (dir / "missing.npy").string().c_str()) == WEFT_ERROR_IO);
  CHECK(LastError().rfind((dir / "missing.npy").string() + ": ", 0) == 0);
  const std::int64_t negative[1] = {-1};
  CHECK(weft_host_tensor_create(&back, WEFT_DTYPE_I4, 1, negative) == WEFT_ERROR_INVALID_ARGUMENT);
  CHECK(LastError() == "`weft_host_tensor_create`: dim 0 is -1, below 0");
  weft_host_tensor_free(t);
  std::filesystem::remove_all(dir);
}
