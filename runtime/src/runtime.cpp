// The device half of the C API (weft/runtime.h): the driver, the GPU, memory, modules, launches,
// events and TMA tensor maps. How it works:
//
// 1. weft_init loads the driver (cuda_driver.h), starts it, picks the GPU that WEFT_DEVICE names,
//    reads the limits that launches are checked against, and makes the primary context current.
// 2. Every entry point checks its arguments before it calls the driver, so a mistake is named in
//    weft's words (which argument, which limit) rather than as CUDA_ERROR_INVALID_VALUE.
// 3. Launches are asynchronous: a kernel that faults is reported by the next call that waits for the
//    GPU. The names of the kernels launched since the last wait are kept, so that report names the
//    kernel (or the few that could have failed); WEFT_SYNC_LAUNCHES=1 waits after each launch.
// 4. Each failure records one line (runtime_internal.h's SetError) and returns a weft_status.
// 5. Tensors' memory (runtime_internal.h's AllocateTensor, FreeOnStream) comes from a caching pool
//    (device_pool.h) on the legacy default stream, and from the driver's stream-ordered pool on a
//    library call's own stream; weft_device_alloc and weft_device_free go to the driver.
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "cuda_driver.h"
#include "device_pool.h"
#include "runtime_internal.h"
#include "weft/runtime.h"

using weft::runtime::BytesText;
using weft::runtime::DeviceBlock;
using weft::runtime::SetError;
namespace cuda = weft::runtime::cuda;

struct weft_kernel {
  cuda::CUfunction handle = nullptr;
  std::string name;
  const weft_module* module = nullptr;
  int max_threads = 0;            // CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK (registers can lower it)
  int static_shared = 0;          // bytes of static shared memory
  mutable int dynamic_limit = 0;  // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES as last set
};

struct weft_module {
  cuda::CUmodule handle = nullptr;
  std::string name;
  std::vector<std::unique_ptr<weft_kernel>> kernels;
};

struct weft_event {
  cuda::CUevent handle = nullptr;
  bool recorded = false;
};

namespace {

constexpr cuda::CUresult kMissingFunction = -1;  // a table entry the driver did not export
constexpr std::size_t kMaxPendingNames = 8;

struct State {
  bool initialized = false;
  cuda::Driver driver;
  cuda::CUdevice device = 0;
  cuda::CUcontext context = nullptr;
  weft_device_info info{};
  int max_block[3] = {0, 0, 0};
  int max_grid[3] = {0, 0, 0};
  bool sync_launches = false;
  std::vector<std::string> pending;   // distinct kernels launched since the GPU was last waited for
  std::string missing_symbol;         // set when a call hits kMissingFunction
  std::vector<weft_module*> modules;  // loaded and not unloaded; weft_shutdown frees them
  // HoldStream's flag: page-locked, and its address on the device; the value a release writes.
  std::uint32_t* hold_flag = nullptr;
  cuda::CUdeviceptr hold_device = 0;
  std::uint32_t hold_value = 0;
  bool hold_unsupported = false;
};

State& S() {
  static State state;
  return state;
}

// The calling thread's stream and whether its allocations are stream-ordered (runtime_internal.h).
thread_local cuda::CUstream current_stream = nullptr;
thread_local bool stream_ordered = false;
bool pool_kept = false;

// Calls a driver function through its table entry, or returns kMissingFunction if the driver lacks it.
template <typename... P, typename... A>
cuda::CUresult Call(cuda::CUresult (*const* entry)(P...), A&&... args) {
  if (*entry == nullptr) {
    S().missing_symbol = cuda::SymbolOf(S().driver, entry);
    return kMissingFunction;
  }
  return (*entry)(std::forward<A>(args)...);
}
#define CU(Name, ...) Call(&S().driver.Name __VA_OPT__(, ) __VA_ARGS__)

std::string Text(cuda::CUresult r) {
  if (r == kMissingFunction) {
    return "the CUDA driver `" + S().driver.library + "` has no `" + S().missing_symbol + "` (is it too old?)";
  }
  return cuda::ErrorText(S().driver, r);
}

std::string GpuText() {
  return "GPU " + std::to_string(S().info.index) + " (" + S().info.name + ")";
}

// A kernel fault found by a call that waited for the GPU: names the kernels launched since the last wait.
weft_status KernelFault(cuda::CUresult r) {
  std::vector<std::string>& pending = S().pending;
  std::string message;
  if (pending.size() == 1) {
    message = "kernel `" + pending[0] + "` failed: " + Text(r);
  } else if (pending.empty()) {
    message = "the GPU failed: " + Text(r);
  } else {
    message = "a kernel failed: " + Text(r) + "; kernels launched since the GPU was last waited for:";
    for (std::size_t i = 0; i < pending.size(); ++i) message += (i == 0 ? " `" : ", `") + pending[i] + "`";
    if (pending.size() == kMaxPendingNames) message += ", ...";
    message += " (WEFT_SYNC_LAUNCHES=1 finds which)";
  }
  pending.clear();
  return SetError(WEFT_ERROR_LAUNCH, message);
}

// A failed driver call: kernel faults name the kernel; `what` says what was being done.
weft_status DriverFailure(cuda::CUresult r, const std::string& what) {
  if (cuda::IsKernelFault(r)) return KernelFault(r);
  if (r == cuda::CUDA_ERROR_OUT_OF_MEMORY) return SetError(WEFT_ERROR_OUT_OF_MEMORY, what + ": " + Text(r));
  return SetError(WEFT_ERROR_DRIVER, what + ": " + Text(r));
}

weft_status NotInitialized() {
  return SetError(WEFT_ERROR_NOT_INITIALIZED, "the GPU is not initialized: call `weft_init` first");
}

weft_status NullArgument(const char* function, const char* argument) {
  return SetError(WEFT_ERROR_INVALID_ARGUMENT, std::string("`") + function + "`: `" + argument + "` is null");
}

std::string GpuCountText(int count) {
  return count == 1 ? "this machine has 1 GPU, index 0"
                    : "this machine has " + std::to_string(count) + " GPUs, 0 to " + std::to_string(count - 1);
}

// WEFT_DEVICE's index, or a message.
std::optional<int> PickDevice(int count, std::string& error) {
  const char* text = std::getenv("WEFT_DEVICE");
  if (text == nullptr || *text == '\0') return 0;
  std::string s = text;
  bool digits = s.size() <= 9 && s.find_first_not_of("0123456789") == std::string::npos;
  if (!digits) {
    error = "WEFT_DEVICE=`" + s + "` is not a GPU index: " + GpuCountText(count);
    return std::nullopt;
  }
  int index = std::atoi(s.c_str());
  if (index >= count) {
    error = "WEFT_DEVICE=" + s + " names no GPU: " + GpuCountText(count);
    return std::nullopt;
  }
  return index;
}

weft_status InitFailed(weft_status status, std::string message) {
  cuda::UnloadDriver(S().driver);
  return SetError(status, std::move(message));
}

std::string ConfigText(const weft_launch_config& c) {
  char buffer[160];
  std::snprintf(buffer, sizeof buffer, "grid %ux%ux%u, block %ux%ux%u, %u bytes of dynamic shared memory", c.grid[0],
                c.grid[1], c.grid[2], c.block[0], c.block[1], c.block[2], c.shared_bytes);
  return buffer;
}

void NoteLaunch(const std::string& name) {
  std::vector<std::string>& pending = S().pending;
  for (const std::string& p : pending) {
    if (p == name) return;
  }
  if (pending.size() < kMaxPendingNames) pending.push_back(name);
}

int TmaElementBytes(int dtype) {
  static constexpr int kBytes[] = {1, 2, 4, 4, 8, 8, 2, 4, 8, 2, 4, 4, 4};
  return kBytes[dtype];
}

const char* TmaDtypeName(int dtype) {
  static constexpr const char* kNames[] = {"u8",  "u16", "u32",  "i32",     "u64",  "i64",     "f16",
                                           "f32", "f64", "bf16", "f32_ftz", "tf32", "tf32_ftz"};
  return kNames[dtype];
}

// Checks a tiled tensor map's arguments against cuTensorMapEncodeTiled's documented rules.
std::optional<std::string> CheckTensorMap(const weft_tensor_map* map, int dtype, std::uint32_t rank,
                                          weft_device_ptr address, const std::uint64_t* dims,
                                          const std::uint64_t* strides, const std::uint32_t* box,
                                          const std::uint32_t* element_strides, int interleave, int swizzle,
                                          int l2_promotion, int oob_fill) {
  auto at = [](const char* array, std::uint32_t i) { return std::string(array) + "[" + std::to_string(i) + "]"; };
  if (map == nullptr) return "`map` is null";
  if (reinterpret_cast<std::uintptr_t>(map) % 64 != 0) return "`map` is not 64-byte aligned";
  if (dtype < 0 || dtype > WEFT_TMA_TF32_FTZ) return "dtype " + std::to_string(dtype) + " is not a weft_tma_dtype";
  if (interleave < 0 || interleave > WEFT_TMA_INTERLEAVE_32B) {
    return "interleave " + std::to_string(interleave) + " is not a weft_tma_interleave";
  }
  if (swizzle < 0 || swizzle > WEFT_TMA_SWIZZLE_128B)
    return "swizzle " + std::to_string(swizzle) + " is not a weft_tma_swizzle";
  if (l2_promotion < 0 || l2_promotion > WEFT_TMA_L2_256B) {
    return "l2_promotion " + std::to_string(l2_promotion) + " is not a weft_tma_l2_promotion";
  }
  if (oob_fill < 0 || oob_fill > WEFT_TMA_OOB_NAN_REQUEST_ZERO_FMA) {
    return "oob_fill " + std::to_string(oob_fill) + " is not a weft_tma_oob_fill";
  }
  if (rank < 1 || rank > 5) return "rank " + std::to_string(rank) + " is not 1 to 5";
  if (interleave != WEFT_TMA_INTERLEAVE_NONE && rank < 3) {
    return "rank " + std::to_string(rank) + ": an interleaved map needs rank 3 to 5";
  }
  if (dims == nullptr) return "`dims` is null";
  if (box == nullptr) return "`box` is null";
  if (rank > 1 && strides == nullptr) return "`strides_bytes` is null (a map of rank 2 or more needs rank - 1 strides)";
  const std::uint64_t address_align = interleave == WEFT_TMA_INTERLEAVE_32B ? 32 : 16;
  if (address % address_align != 0) {
    char hex[32];
    std::snprintf(hex, sizeof hex, "0x%" PRIx64, address);
    return "the address " + std::string(hex) + " is not " + std::to_string(address_align) + "-byte aligned";
  }
  const int element = TmaElementBytes(dtype);
  for (std::uint32_t i = 0; i < rank; ++i) {
    if (dims[i] == 0 || dims[i] > (std::uint64_t{1} << 32)) {
      return at("dims", i) + " = " + std::to_string(dims[i]) + " is not 1 to 2^32";
    }
  }
  const std::uint64_t stride_align = interleave == WEFT_TMA_INTERLEAVE_32B ? 32 : 16;
  for (std::uint32_t i = 0; i + 1 < rank; ++i) {
    if (strides[i] % stride_align != 0) {
      return at("strides_bytes", i) + " = " + std::to_string(strides[i]) + " is not a multiple of " +
             std::to_string(stride_align);
    }
    if (strides[i] >= (std::uint64_t{1} << 40)) {
      return at("strides_bytes", i) + " = " + std::to_string(strides[i]) + " is not below 2^40";
    }
  }
  for (std::uint32_t i = 0; i < rank; ++i) {
    if (box[i] == 0 || box[i] > 256) return at("box", i) + " = " + std::to_string(box[i]) + " is not 1 to 256";
    if (element_strides != nullptr && (element_strides[i] == 0 || element_strides[i] > 8)) {
      return at("element_strides", i) + " = " + std::to_string(element_strides[i]) + " is not 1 to 8";
    }
  }
  const std::uint64_t inner = std::uint64_t{box[0]} * static_cast<std::uint64_t>(element);
  const std::string inner_text =
      "box[0] of " + std::to_string(box[0]) + " " + TmaDtypeName(dtype) + " is " + std::to_string(inner) + " bytes";
  if (interleave == WEFT_TMA_INTERLEAVE_NONE && inner % 16 != 0) return inner_text + ", not a multiple of 16";
  if (interleave == WEFT_TMA_INTERLEAVE_NONE && swizzle != WEFT_TMA_SWIZZLE_NONE) {
    const std::uint64_t span = std::uint64_t{16} << swizzle;  // 32, 64, 128
    if (inner > span) return inner_text + ", more than the " + std::to_string(span) + "-byte swizzle's span";
  }
  if (interleave == WEFT_TMA_INTERLEAVE_32B && swizzle != WEFT_TMA_SWIZZLE_32B) {
    return "interleave 32B needs swizzle 32B";
  }
  const bool is_float = dtype >= WEFT_TMA_F16 && dtype <= WEFT_TMA_TF32_FTZ;
  if (oob_fill == WEFT_TMA_OOB_NAN_REQUEST_ZERO_FMA && !is_float) {
    return std::string("oob_fill NAN_REQUEST_ZERO_FMA needs a float dtype, not ") + TmaDtypeName(dtype);
  }
  return std::nullopt;
}

// `bytes` (> 0) from the driver: stream-ordered on `stream` (from the device's default pool), or
// not. Out of memory says what was asked and what is free.
weft_status DriverAllocate(std::uint64_t bytes, bool ordered, cuda::CUstream stream, weft_device_ptr* ptr) {
  cuda::CUdeviceptr p = 0;
  cuda::CUresult r = ordered ? CU(cuMemAllocAsync, &p, static_cast<std::size_t>(bytes), stream)
                             : CU(cuMemAlloc, &p, static_cast<std::size_t>(bytes));
  if (r == cuda::CUDA_ERROR_OUT_OF_MEMORY) {
    std::string message = "out of GPU memory: cannot allocate " + BytesText(bytes);
    if (bytes >= 1024) message += " (" + std::to_string(bytes) + " bytes)";
    std::size_t free = 0, total = 0;
    if (CU(cuMemGetInfo, &free, &total) == cuda::CUDA_SUCCESS) {
      message += ": " + BytesText(free) + " of " + BytesText(total) + " free on " + GpuText();
    } else {
      message += " on " + GpuText();
    }
    return SetError(WEFT_ERROR_OUT_OF_MEMORY, message);
  }
  if (r != cuda::CUDA_SUCCESS) return DriverFailure(r, "cannot allocate " + BytesText(bytes) + " on " + GpuText());
  *ptr = p;
  return WEFT_OK;
}

// The pool of tensors' memory on the legacy default stream (device_pool.h; runtime_internal.h's
// AllocateTensor). A library call's blocks are stream-ordered allocations on that stream, a
// program's plain ones; either kind serves the other, since both are used on that one stream.
weft::runtime::DevicePool& Pool() {
  static weft::runtime::DevicePool pool(
      weft::runtime::DevicePool::Backend{[](std::uint64_t bytes, weft::runtime::DeviceBlock& block) {
                                           block.stream_ordered = stream_ordered;
                                           block.bytes = bytes;
                                           return DriverAllocate(bytes, stream_ordered, nullptr, &block.ptr);
                                         },
                                         [](const weft::runtime::DeviceBlock& block) {
                                           if (block.stream_ordered) {
                                             CU(cuMemFreeAsync, block.ptr, static_cast<cuda::CUstream>(nullptr));
                                           } else {
                                             CU(cuMemFree, block.ptr);
                                           }
                                         }});
  return pool;
}

}  // namespace

extern "C" {

weft_status weft_init(void) {
  State& s = S();
  if (s.initialized) return WEFT_OK;
  std::string why;
  if (!cuda::LoadDriver(s.driver, why)) {
    std::string library = cuda::DriverLibraryName();
    return InitFailed(WEFT_ERROR_NO_DRIVER, "no CUDA driver: cannot load `" + library + "` (" + why +
                                                "); running a weft program needs an NVIDIA GPU and its driver");
  }
  if (s.driver.cuInit == nullptr) {
    return InitFailed(WEFT_ERROR_NO_DRIVER, "`" + s.driver.library + "` is not a CUDA driver: it has no `cuInit`");
  }
  cuda::CUresult r = CU(cuInit, 0u);
  if (r == cuda::CUDA_ERROR_NO_DEVICE) {
    return InitFailed(WEFT_ERROR_NO_DEVICE, "no GPU: the CUDA driver found none (" + Text(r) + ")");
  }
  if (r != cuda::CUDA_SUCCESS) return InitFailed(WEFT_ERROR_NO_DRIVER, "the CUDA driver failed to start: " + Text(r));
  int count = 0;
  r = CU(cuDeviceGetCount, &count);
  if (r != cuda::CUDA_SUCCESS) return InitFailed(WEFT_ERROR_NO_DEVICE, "cannot count the GPUs: " + Text(r));
  if (count == 0) return InitFailed(WEFT_ERROR_NO_DEVICE, "no GPU: the CUDA driver found none");
  std::string error;
  std::optional<int> index = PickDevice(count, error);
  if (!index) return InitFailed(WEFT_ERROR_NO_DEVICE, error);

  weft_device_info info{};
  info.index = *index;
  r = CU(cuDeviceGet, &s.device, *index);
  if (r != cuda::CUDA_SUCCESS) {
    return InitFailed(WEFT_ERROR_NO_DEVICE, "cannot open GPU " + std::to_string(*index) + ": " + Text(r));
  }
  if (CU(cuDeviceGetName, info.name, static_cast<int>(sizeof info.name), s.device) != cuda::CUDA_SUCCESS) {
    std::snprintf(info.name, sizeof info.name, "unnamed");
  }
  struct Attribute {
    int id;
    int* out;
  };
  const Attribute attributes[] = {
      {cuda::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &info.sm_major},
      {cuda::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &info.sm_minor},
      {cuda::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &info.multiprocessors},
      {cuda::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, &info.max_threads_per_block},
      {cuda::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, &info.max_shared_bytes_per_block},
      {cuda::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, &s.max_block[0]},
      {cuda::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, &s.max_block[1]},
      {cuda::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, &s.max_block[2]},
      {cuda::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, &s.max_grid[0]},
      {cuda::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, &s.max_grid[1]},
      {cuda::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, &s.max_grid[2]},
  };
  for (const Attribute& a : attributes) {
    r = CU(cuDeviceGetAttribute, a.out, a.id, s.device);
    if (r != cuda::CUDA_SUCCESS) {
      return InitFailed(WEFT_ERROR_DRIVER, "cannot read GPU " + std::to_string(*index) + "'s attribute " +
                                               std::to_string(a.id) + ": " + Text(r));
    }
  }
  std::size_t total = 0;
  if (CU(cuDeviceTotalMem, &total, s.device) == cuda::CUDA_SUCCESS) info.total_memory = total;
  if (CU(cuDriverGetVersion, &info.driver_version) != cuda::CUDA_SUCCESS) info.driver_version = 0;
  r = CU(cuDevicePrimaryCtxRetain, &s.context, s.device);
  if (r == cuda::CUDA_SUCCESS) r = CU(cuCtxSetCurrent, s.context);
  if (r != cuda::CUDA_SUCCESS) {
    std::string message = "cannot open a context on GPU " + std::to_string(*index) + " (" + info.name + "): " + Text(r);
    return InitFailed(r == cuda::CUDA_ERROR_OUT_OF_MEMORY ? WEFT_ERROR_OUT_OF_MEMORY : WEFT_ERROR_DRIVER, message);
  }
  const char* sync = std::getenv("WEFT_SYNC_LAUNCHES");
  s.sync_launches = sync != nullptr && *sync != '\0' && std::strcmp(sync, "0") != 0;
  s.info = info;
  s.pending.clear();
  s.initialized = true;
  // Kept memory is memory the caller's own allocator (PyTorch's, beside a library call) cannot have:
  // at most a quarter of the GPU. A call whose intermediates need more is slow enough that their
  // allocation does not matter.
  Pool().SetLimit(info.total_memory > 0 ? info.total_memory / 4 : std::uint64_t{1} << 30);
  return WEFT_OK;
}

void weft_shutdown(void) {
  State& s = S();
  if (!s.initialized) return;
  CU(cuCtxSynchronize);
  Pool().Trim();
  Pool().Forget();  // a block released after this is the old context's: not taken back
  std::vector<weft_module*> modules = s.modules;
  for (weft_module* m : modules) weft_module_unload(m);
  if (s.hold_flag != nullptr) CU(cuMemFreeHost, static_cast<void*>(s.hold_flag));
  CU(cuDevicePrimaryCtxRelease, s.device);
  cuda::UnloadDriver(s.driver);
  s = State{};
}

weft_status weft_device_get_info(weft_device_info* info) {
  if (info == nullptr) return NullArgument("weft_device_get_info", "info");
  if (!S().initialized) return NotInitialized();
  *info = S().info;
  return WEFT_OK;
}

weft_status weft_device_alloc(weft_device_ptr* ptr, std::uint64_t bytes) {
  if (ptr == nullptr) return NullArgument("weft_device_alloc", "ptr");
  *ptr = 0;
  if (!S().initialized) return NotInitialized();
  if (bytes == 0) return WEFT_OK;
  return DriverAllocate(bytes, stream_ordered, current_stream, ptr);
}

weft_status weft_device_free(weft_device_ptr ptr) {
  if (ptr == 0) return WEFT_OK;
  if (!S().initialized) return NotInitialized();
  cuda::CUresult r = stream_ordered ? CU(cuMemFreeAsync, ptr, current_stream) : CU(cuMemFree, ptr);
  if (r != cuda::CUDA_SUCCESS) return DriverFailure(r, "cannot free GPU memory");
  return WEFT_OK;
}

namespace {

weft_status CheckCopy(const char* function, bool null_pointer, const char* which) {
  if (null_pointer) return NullArgument(function, which);
  if (!S().initialized) return NotInitialized();
  return WEFT_OK;
}

}  // namespace

weft_status weft_copy_to_device(weft_device_ptr dst, const void* src, std::uint64_t bytes) {
  if (bytes == 0) return WEFT_OK;
  if (weft_status s = CheckCopy("weft_copy_to_device", dst == 0 || src == nullptr, dst == 0 ? "dst" : "src")) return s;
  cuda::CUresult r = CU(cuMemcpyHtoD, dst, src, static_cast<std::size_t>(bytes));
  if (r != cuda::CUDA_SUCCESS) return DriverFailure(r, "cannot copy " + BytesText(bytes) + " to the GPU");
  return WEFT_OK;
}

weft_status weft_copy_to_host(void* dst, weft_device_ptr src, std::uint64_t bytes) {
  if (bytes == 0) return WEFT_OK;
  if (weft_status s = CheckCopy("weft_copy_to_host", dst == nullptr || src == 0, dst == nullptr ? "dst" : "src")) {
    return s;
  }
  cuda::CUresult r = CU(cuMemcpyDtoH, dst, src, static_cast<std::size_t>(bytes));
  if (r != cuda::CUDA_SUCCESS) return DriverFailure(r, "cannot copy " + BytesText(bytes) + " from the GPU");
  return WEFT_OK;
}

weft_status weft_copy_device_to_device(weft_device_ptr dst, weft_device_ptr src, std::uint64_t bytes) {
  if (bytes == 0) return WEFT_OK;
  if (weft_status s = CheckCopy("weft_copy_device_to_device", dst == 0 || src == 0, dst == 0 ? "dst" : "src")) {
    return s;
  }
  cuda::CUresult r = CU(cuMemcpyDtoD, dst, src, static_cast<std::size_t>(bytes));
  if (r != cuda::CUDA_SUCCESS) return DriverFailure(r, "cannot copy " + BytesText(bytes) + " on the GPU");
  return WEFT_OK;
}

weft_status weft_device_memset(weft_device_ptr dst, std::uint8_t value, std::uint64_t bytes) {
  if (bytes == 0) return WEFT_OK;
  if (weft_status s = CheckCopy("weft_device_memset", dst == 0, "dst")) return s;
  cuda::CUresult r =
      current_stream != nullptr || stream_ordered
          ? CU(cuMemsetD8Async, dst, static_cast<unsigned char>(value), static_cast<std::size_t>(bytes), current_stream)
          : CU(cuMemsetD8, dst, static_cast<unsigned char>(value), static_cast<std::size_t>(bytes));
  if (r != cuda::CUDA_SUCCESS) return DriverFailure(r, "cannot set " + BytesText(bytes) + " of GPU memory");
  return WEFT_OK;
}

weft_status weft_module_load(weft_module** module, const void* image, std::size_t size, const char* name) {
  if (module == nullptr) return NullArgument("weft_module_load", "module");
  *module = nullptr;
  if (image == nullptr || size == 0) {
    return SetError(WEFT_ERROR_INVALID_ARGUMENT, "`weft_module_load`: the image is empty");
  }
  if (!S().initialized) return NotInitialized();
  std::string module_name = name != nullptr && *name != '\0' ? name : "module";
  // A cubin is an ELF image; anything else is PTX text, which the driver reads up to a NUL.
  const char* bytes = static_cast<const char*>(image);
  const bool is_elf = size >= 4 && std::memcmp(bytes,
                                               "\x7f"
                                               "ELF",
                                               4) == 0;
  std::string text;
  if (!is_elf) text.assign(bytes, strnlen(bytes, size));

  constexpr std::size_t kLogSize = 16384;
  std::vector<char> error_log(kLogSize, '\0');
  int options[] = {cuda::CU_JIT_ERROR_LOG_BUFFER, cuda::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* values[] = {error_log.data(), reinterpret_cast<void*>(static_cast<std::uintptr_t>(kLogSize))};
  cuda::CUmodule handle = nullptr;
  cuda::CUresult r =
      CU(cuModuleLoadDataEx, &handle, is_elf ? image : static_cast<const void*>(text.c_str()), 2u, options, values);
  if (r != cuda::CUDA_SUCCESS) {
    if (cuda::IsKernelFault(r)) return KernelFault(r);
    std::string message = "cannot load module `" + module_name + "` (" + (is_elf ? "cubin" : "PTX") + ") on " +
                          GpuText() + ": " + Text(r);
    std::string log(error_log.data(), strnlen(error_log.data(), kLogSize));
    while (!log.empty() && (log.back() == '\n' || log.back() == ' ')) log.pop_back();
    if (!log.empty()) message += ": " + log;
    return SetError(r == cuda::CUDA_ERROR_OUT_OF_MEMORY ? WEFT_ERROR_OUT_OF_MEMORY : WEFT_ERROR_MODULE, message);
  }
  auto loaded = std::make_unique<weft_module>();
  loaded->handle = handle;
  loaded->name = module_name;
  *module = loaded.release();
  S().modules.push_back(*module);
  return WEFT_OK;
}

void weft_module_unload(weft_module* module) {
  if (module == nullptr) return;
  std::vector<weft_module*>& modules = S().modules;
  for (std::size_t i = 0; i < modules.size(); ++i) {
    if (modules[i] == module) {
      modules.erase(modules.begin() + static_cast<std::ptrdiff_t>(i));
      break;
    }
  }
  if (S().initialized) CU(cuModuleUnload, module->handle);
  delete module;
}

weft_status weft_kernel_get(weft_kernel** kernel, weft_module* module, const char* name) {
  if (kernel == nullptr) return NullArgument("weft_kernel_get", "kernel");
  *kernel = nullptr;
  if (module == nullptr) return NullArgument("weft_kernel_get", "module");
  if (name == nullptr) return NullArgument("weft_kernel_get", "name");
  if (!S().initialized) return NotInitialized();
  for (const auto& k : module->kernels) {
    if (k->name == name) {
      *kernel = k.get();
      return WEFT_OK;
    }
  }
  auto k = std::make_unique<weft_kernel>();
  k->name = name;
  k->module = module;
  cuda::CUresult r = CU(cuModuleGetFunction, &k->handle, module->handle, name);
  if (r == cuda::CUDA_ERROR_NOT_FOUND) {
    return SetError(WEFT_ERROR_MODULE, "module `" + module->name + "` has no kernel `" + std::string(name) + "`");
  }
  if (r != cuda::CUDA_SUCCESS) {
    return DriverFailure(r, "cannot find kernel `" + std::string(name) + "` in module `" + module->name + "`");
  }
  r = CU(cuFuncGetAttribute, &k->max_threads, cuda::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, k->handle);
  if (r == cuda::CUDA_SUCCESS) {
    r = CU(cuFuncGetAttribute, &k->static_shared, cuda::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, k->handle);
  }
  if (r == cuda::CUDA_SUCCESS) {
    r = CU(cuFuncGetAttribute, &k->dynamic_limit, cuda::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, k->handle);
  }
  if (r != cuda::CUDA_SUCCESS) return DriverFailure(r, "cannot read kernel `" + std::string(name) + "`'s attributes");
  *kernel = k.get();
  module->kernels.push_back(std::move(k));
  return WEFT_OK;
}

weft_status weft_synchronize(void) {
  if (!S().initialized) return NotInitialized();
  cuda::CUresult r = CU(cuCtxSynchronize);
  if (r != cuda::CUDA_SUCCESS) return DriverFailure(r, "waiting for the GPU failed");
  S().pending.clear();
  return WEFT_OK;
}

namespace {

// Above the kernel's current dynamic shared memory limit (48 KiB at first), raises it to `bytes`.
weft_status RaiseDynamicShared(const weft_kernel* kernel, std::uint32_t bytes) {
  if (bytes <= static_cast<std::uint32_t>(kernel->dynamic_limit)) return WEFT_OK;
  cuda::CUresult r = CU(cuFuncSetAttribute, kernel->handle, cuda::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                        static_cast<int>(bytes));
  if (r != cuda::CUDA_SUCCESS) {
    return DriverFailure(
        r, "cannot raise kernel `" + kernel->name + "`'s dynamic shared memory to " + std::to_string(bytes) + " bytes");
  }
  kernel->dynamic_limit = static_cast<int>(bytes);
  return WEFT_OK;
}

}  // namespace

weft_status weft_launch(const weft_kernel* kernel, const weft_launch_config* config, void** args) {
  if (kernel == nullptr) return NullArgument("weft_launch", "kernel");
  if (config == nullptr) return NullArgument("weft_launch", "config");
  if (!S().initialized) return NotInitialized();
  State& s = S();
  const weft_launch_config& c = *config;
  // Made only for a message: a launch of a library call is on the caller's critical path.
  auto where = [&] { return "kernel `" + kernel->name + "` (" + ConfigText(c) + ")"; };
  static constexpr const char* kAxis[] = {"x", "y", "z"};
  for (int i = 0; i < 3; ++i) {
    if (c.grid[i] < 1 || c.grid[i] > static_cast<std::uint32_t>(s.max_grid[i])) {
      return SetError(WEFT_ERROR_INVALID_ARGUMENT, "cannot launch " + where() + ": the grid's " + kAxis[i] + " of " +
                                                       std::to_string(c.grid[i]) + " is not 1 to " +
                                                       std::to_string(s.max_grid[i]));
    }
    if (c.block[i] < 1 || c.block[i] > static_cast<std::uint32_t>(s.max_block[i])) {
      return SetError(WEFT_ERROR_INVALID_ARGUMENT, "cannot launch " + where() + ": the block's " + kAxis[i] + " of " +
                                                       std::to_string(c.block[i]) + " is not 1 to " +
                                                       std::to_string(s.max_block[i]));
    }
  }
  const std::uint64_t threads = std::uint64_t{c.block[0]} * c.block[1] * c.block[2];
  if (threads > static_cast<std::uint64_t>(kernel->max_threads)) {
    return SetError(WEFT_ERROR_INVALID_ARGUMENT, "cannot launch " + where() + ": " + std::to_string(threads) +
                                                     " threads a block, but the kernel allows at most " +
                                                     std::to_string(kernel->max_threads) + " on " + GpuText());
  }
  const std::uint64_t shared = std::uint64_t{c.shared_bytes} + static_cast<std::uint64_t>(kernel->static_shared);
  if (shared > static_cast<std::uint64_t>(s.info.max_shared_bytes_per_block)) {
    return SetError(WEFT_ERROR_INVALID_ARGUMENT, "cannot launch " + where() + ": " + std::to_string(shared) +
                                                     " bytes of shared memory a block (dynamic and " +
                                                     std::to_string(kernel->static_shared) + " static), but " +
                                                     GpuText() + " allows at most " +
                                                     std::to_string(s.info.max_shared_bytes_per_block));
  }
  if (weft_status raised = RaiseDynamicShared(kernel, c.shared_bytes); raised != WEFT_OK) return raised;
  cuda::CUresult r = CU(cuLaunchKernel, kernel->handle, c.grid[0], c.grid[1], c.grid[2], c.block[0], c.block[1],
                        c.block[2], c.shared_bytes, current_stream, args, static_cast<void**>(nullptr));
  if (r != cuda::CUDA_SUCCESS) {
    // A fault of an earlier kernel, which the driver reports at any later call.
    if (cuda::IsKernelFault(r) && !s.pending.empty()) return KernelFault(r);
    return SetError(WEFT_ERROR_LAUNCH, "cannot launch " + where() + ": " + Text(r));
  }
  NoteLaunch(kernel->name);
  if (s.sync_launches) return weft_synchronize();
  return WEFT_OK;
}

weft_status weft_persistent_grid(const weft_kernel* kernel, weft_launch_config* config) {
  if (kernel == nullptr) return NullArgument("weft_persistent_grid", "kernel");
  if (config == nullptr) return NullArgument("weft_persistent_grid", "config");
  if (!S().initialized) return NotInitialized();
  weft_launch_config& c = *config;
  if (c.shared_bytes <= static_cast<std::uint32_t>(S().info.max_shared_bytes_per_block))
    if (weft_status raised = RaiseDynamicShared(kernel, c.shared_bytes); raised != WEFT_OK) return raised;
  int per_sm = 0;
  cuda::CUresult r =
      CU(cuOccupancyMaxActiveBlocksPerMultiprocessor, &per_sm, kernel->handle,
         static_cast<int>(c.block[0] * c.block[1] * c.block[2]), static_cast<std::size_t>(c.shared_bytes));
  if (r != cuda::CUDA_SUCCESS)
    return DriverFailure(r, "cannot find how many blocks of kernel `" + kernel->name + "` a multiprocessor holds");
  const std::uint64_t blocks = std::uint64_t{c.grid[0]} * c.grid[1] * c.grid[2];
  const std::uint64_t resident = static_cast<std::uint64_t>(std::max(per_sm, 1)) *
                                 static_cast<std::uint64_t>(std::max(S().info.multiprocessors, 1));
  c.grid[0] = static_cast<std::uint32_t>(std::max<std::uint64_t>(1, std::min(blocks, resident)));
  c.grid[1] = c.grid[2] = 1;
  return WEFT_OK;
}

weft_status weft_event_create(weft_event** event) {
  if (event == nullptr) return NullArgument("weft_event_create", "event");
  *event = nullptr;
  if (!S().initialized) return NotInitialized();
  auto e = std::make_unique<weft_event>();
  cuda::CUresult r = CU(cuEventCreate, &e->handle, cuda::CU_EVENT_DEFAULT);
  if (r != cuda::CUDA_SUCCESS) return DriverFailure(r, "cannot create an event");
  *event = e.release();
  return WEFT_OK;
}

void weft_event_destroy(weft_event* event) {
  if (event == nullptr) return;
  if (S().initialized) CU(cuEventDestroy, event->handle);
  delete event;
}

weft_status weft_event_record(weft_event* event) {
  if (event == nullptr) return NullArgument("weft_event_record", "event");
  if (!S().initialized) return NotInitialized();
  cuda::CUresult r = CU(cuEventRecord, event->handle, current_stream);
  if (r != cuda::CUDA_SUCCESS) return DriverFailure(r, "cannot record an event");
  event->recorded = true;
  return WEFT_OK;
}

weft_status weft_event_elapsed_ms(const weft_event* start, const weft_event* end, float* ms) {
  if (start == nullptr) return NullArgument("weft_event_elapsed_ms", "start");
  if (end == nullptr) return NullArgument("weft_event_elapsed_ms", "end");
  if (ms == nullptr) return NullArgument("weft_event_elapsed_ms", "ms");
  *ms = 0;
  if (!S().initialized) return NotInitialized();
  if (!start->recorded || !end->recorded) {
    return SetError(WEFT_ERROR_INVALID_ARGUMENT, std::string("`weft_event_elapsed_ms`: the ") +
                                                     (start->recorded ? "end" : "start") + " event was never recorded");
  }
  cuda::CUresult r = CU(cuEventSynchronize, end->handle);
  if (r != cuda::CUDA_SUCCESS) return DriverFailure(r, "waiting for an event failed");
  S().pending.clear();
  r = CU(cuEventElapsedTime, ms, start->handle, end->handle);
  if (r != cuda::CUDA_SUCCESS) return DriverFailure(r, "cannot time the events");
  return WEFT_OK;
}

weft_status weft_time_launches(const weft_kernel* kernel, const weft_launch_config* config, void** args, int count,
                               float* total_ms) {
  if (total_ms == nullptr) return NullArgument("weft_time_launches", "total_ms");
  *total_ms = 0;
  if (count < 1) {
    return SetError(WEFT_ERROR_INVALID_ARGUMENT,
                    "`weft_time_launches`: the count " + std::to_string(count) + " is not at least 1");
  }
  if (kernel == nullptr) return NullArgument("weft_time_launches", "kernel");
  if (config == nullptr) return NullArgument("weft_time_launches", "config");
  if (!S().initialized) return NotInitialized();
  weft_event* start = nullptr;
  weft_event* end = nullptr;
  weft_status status = weft_event_create(&start);
  if (status == WEFT_OK) status = weft_event_create(&end);
  if (status == WEFT_OK) status = weft_event_record(start);
  for (int i = 0; i < count && status == WEFT_OK; ++i) status = weft_launch(kernel, config, args);
  if (status == WEFT_OK) status = weft_event_record(end);
  if (status == WEFT_OK) status = weft_event_elapsed_ms(start, end, total_ms);
  weft_event_destroy(start);
  weft_event_destroy(end);
  return status;
}

weft_status weft_tensor_map_encode_tiled(weft_tensor_map* map, weft_tma_dtype dtype, std::uint32_t rank,
                                         weft_device_ptr address, const std::uint64_t* dims,
                                         const std::uint64_t* strides_bytes, const std::uint32_t* box,
                                         const std::uint32_t* element_strides, weft_tma_interleave interleave,
                                         weft_tma_swizzle swizzle, weft_tma_l2_promotion l2_promotion,
                                         weft_tma_oob_fill oob_fill) {
  if (std::optional<std::string> bad = CheckTensorMap(map, dtype, rank, address, dims, strides_bytes, box,
                                                      element_strides, interleave, swizzle, l2_promotion, oob_fill)) {
    return SetError(WEFT_ERROR_INVALID_ARGUMENT, "cannot encode a TMA tensor map: " + *bad);
  }
  if (!S().initialized) return NotInitialized();
  const weft_device_info& info = S().info;
  if (info.sm_major < 9) {
    return SetError(WEFT_ERROR_INVALID_ARGUMENT,
                    "cannot encode a TMA tensor map: TMA needs compute capability 9.0 "
                    "or newer, and " +
                        GpuText() + " is sm_" + std::to_string(info.sm_major) + std::to_string(info.sm_minor));
  }
  std::uint32_t ones[5] = {1, 1, 1, 1, 1};
  static_assert(sizeof(weft_tensor_map) == sizeof(cuda::CUtensorMap));
  cuda::CUresult r = CU(cuTensorMapEncodeTiled, reinterpret_cast<cuda::CUtensorMap*>(map), static_cast<int>(dtype),
                        rank, reinterpret_cast<void*>(static_cast<std::uintptr_t>(address)), dims, strides_bytes, box,
                        element_strides != nullptr ? element_strides : ones, static_cast<int>(interleave),
                        static_cast<int>(swizzle), static_cast<int>(l2_promotion), static_cast<int>(oob_fill));
  if (r != cuda::CUDA_SUCCESS) {
    std::string shape;
    for (std::uint32_t i = 0; i < rank; ++i) shape += (i == 0 ? "" : ", ") + std::to_string(dims[i]);
    return DriverFailure(r, "the driver refused a TMA tensor map of " + std::string(TmaDtypeName(dtype)) + " [" +
                                shape + "] (innermost first)");
  }
  return WEFT_OK;
}

}  // extern "C"

// ---- Streams (runtime_internal.h) ----

void weft::runtime::SetStream(void* stream, bool ordered) {
  current_stream = static_cast<cuda::CUstream>(stream);
  stream_ordered = ordered;
  if (ordered && !pool_kept && S().initialized) {
    // Freed stream-ordered memory stays in the pool for the next call instead of going back to the
    // driver at each synchronization (cudaMallocAsync's advice for allocators that free often).
    pool_kept = true;
    cuda::CUmemoryPool pool = nullptr;
    std::uint64_t keep = ~std::uint64_t{0};
    if (CU(cuDeviceGetDefaultMemPool, &pool, S().device) == cuda::CUDA_SUCCESS)
      CU(cuMemPoolSetAttribute, pool, cuda::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, static_cast<void*>(&keep));
  }
}

void* weft::runtime::CurrentStream() {
  return current_stream;
}

weft_status weft::runtime::AllocateTensor(std::uint64_t bytes, weft_device_ptr* ptr, std::uint64_t* capacity) {
  *ptr = 0;
  *capacity = 0;
  if (!S().initialized) return NotInitialized();
  if (bytes == 0) return WEFT_OK;
  if (current_stream != nullptr) {  // a library call's own stream: the driver's stream-ordered pool
    if (weft_status s = DriverAllocate(bytes, true, current_stream, ptr)) return s;
    *capacity = bytes;
    return WEFT_OK;
  }
  DeviceBlock block;
  if (weft_status s = Pool().Allocate(bytes, block)) return s;
  *ptr = block.ptr;
  *capacity = block.bytes;
  return WEFT_OK;
}

weft_status weft::runtime::FreeOnStream(weft_device_ptr ptr, void* stream) {
  if (ptr == 0) return WEFT_OK;
  if (!S().initialized) return NotInitialized();
  if (weft_status s = MakeCurrent()) return s;  // a DLPack deleter runs on any thread
  // On the legacy default stream every block is the pool's; one it does not know was handed out
  // before weft_shutdown, and its context is gone.
  if (stream == nullptr) {
    Pool().Release(ptr);
    return WEFT_OK;
  }
  cuda::CUresult r = CU(cuMemFreeAsync, ptr, static_cast<cuda::CUstream>(stream));
  if (r != cuda::CUDA_SUCCESS) return DriverFailure(r, "cannot free GPU memory");
  return WEFT_OK;
}

void weft::runtime::TrimPool() {
  if (S().initialized && MakeCurrent() == WEFT_OK) Pool().Trim();
}

weft::runtime::DevicePool::Stats weft::runtime::PoolStats() {
  return Pool().stats();
}

bool weft::runtime::HoldStream() {
  State& s = S();
  if (!s.initialized || s.hold_unsupported) return false;
  if (s.hold_flag == nullptr) {
    void* flag = nullptr;
    // CU_MEMHOSTALLOC_DEVICEMAP (2): the GPU reads it where cuMemHostGetDevicePointer says.
    if (CU(cuMemHostAlloc, &flag, sizeof(std::uint32_t), 2u) != cuda::CUDA_SUCCESS) {
      s.hold_unsupported = true;
      return false;
    }
    if (CU(cuMemHostGetDevicePointer, &s.hold_device, flag, 0u) != cuda::CUDA_SUCCESS) {
      CU(cuMemFreeHost, flag);
      s.hold_unsupported = true;
      return false;
    }
    s.hold_flag = static_cast<std::uint32_t*>(flag);
    __atomic_store_n(s.hold_flag, s.hold_value, __ATOMIC_SEQ_CST);
  }
  // The stream waits until the flag reaches the next value (CU_STREAM_WAIT_VALUE_GEQ, 0).
  if (CU(cuStreamWaitValue32, current_stream, s.hold_device, s.hold_value + 1, 0u) != cuda::CUDA_SUCCESS) {
    s.hold_unsupported = true;
    return false;
  }
  ++s.hold_value;
  return true;
}

void weft::runtime::ReleaseStream() {
  State& s = S();
  if (s.hold_flag != nullptr) __atomic_store_n(s.hold_flag, s.hold_value, __ATOMIC_SEQ_CST);
}

weft_status weft::runtime::CopyOnStream(weft_device_ptr dst, weft_device_ptr src, std::uint64_t bytes) {
  if (bytes == 0) return WEFT_OK;
  if (weft_status s = CheckCopy("weft_copy_device_to_device", dst == 0 || src == 0, dst == 0 ? "dst" : "src")) {
    return s;
  }
  cuda::CUresult r = CU(cuMemcpyDtoDAsync, dst, src, static_cast<std::size_t>(bytes), current_stream);
  if (r != cuda::CUDA_SUCCESS) return DriverFailure(r, "cannot copy " + BytesText(bytes) + " on the GPU");
  return WEFT_OK;
}

weft_status weft::runtime::MakeCurrent() {
  if (!S().initialized) return NotInitialized();
  cuda::CUcontext current = nullptr;
  if (CU(cuCtxGetCurrent, &current) == cuda::CUDA_SUCCESS && current == S().context) return WEFT_OK;
  cuda::CUresult r = CU(cuCtxSetCurrent, S().context);
  if (r != cuda::CUDA_SUCCESS) return DriverFailure(r, "cannot make the GPU's context current");
  return WEFT_OK;
}
