// A fake CUDA driver for the runtime's unit tests: a shared library exporting a subset of
// libcuda's functions (the versioned symbols cuda_functions.def resolves), loaded through
// WEFT_CUDA_LIBRARY. "Device memory" is host memory, kernels do nothing, and the environment
// picks the failures to simulate:
//
//   WEFT_FAKE_CUDA_INIT     cuInit's result (e.g. 100, CUDA_ERROR_NO_DEVICE); default 0
//   WEFT_FAKE_CUDA_DEVICES  how many GPUs; default 1
//   WEFT_FAKE_CUDA_SM       compute capability as major*10+minor; default 80
//   WEFT_FAKE_CUDA_FREE     free bytes; allocations above it are CUDA_ERROR_OUT_OF_MEMORY; default 8 GiB
//   WEFT_FAKE_CUDA_CAPACITY set: an allocation that would take the live allocations above this many
//                           bytes is CUDA_ERROR_OUT_OF_MEMORY (the pool's retry, device_pool.h)
//   WEFT_FAKE_CUDA_TRACE_MEMORY  set: each allocation and free writes a line to stderr
//                           (`fake cuda: alloc N bytes`, `fake cuda: free N bytes`)
//   WEFT_FAKE_CUDA_TRACE    set: each launch writes a line to stderr (`fake cuda: launch NAME grid
//                           X x Y x Z, block X x Y x Z`, and for `random`'s kernels `, count N, seed S`)
//                           and each event recorded (`fake cuda: event record`), and each stream
//                           wait on a flag (`fake cuda: stream wait N`, runtime_internal.h's HoldStream)
//
// Modules: an image containing ".entry" loads; any other is CUDA_ERROR_INVALID_PTX with a ptxas-like
// log. Kernels: `add` (1024 threads), `fault`, whose launch makes the next synchronize fail with
// CUDA_ERROR_ILLEGAL_ADDRESS, `weft_random_<dtype>` (random.h's entries; they write nothing, and
// "device memory" starts zeroed, so their tensors read back as zeros), and any named `noop_...` (a
// lit test's own; they do nothing). A launch whose dynamic shared memory exceeds the kernel's
// MAX_DYNAMIC_SHARED_SIZE_BYTES (48 KiB until raised) fails as the real driver does.
// weft_fake_cuda_memory (not a driver function) gives the tests the allocations, frees and live bytes.
// weft_fake_cuda_last_map (not a driver function either) gives them how many times
// cuTensorMapEncodeTiled was called and the arguments of its last call, as 17 numbers: {calls, rank,
// global address, dims[5], byte strides[4], box[5]}, the dims and box `rank` of them and the
// strides rank - 1, innermost first, the rest 0.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

namespace {

using CUresult = int;

struct FakeFunction {
  std::string name;
  int max_dynamic_shared = 48 * 1024;
};

FakeFunction add_kernel{"add"};
FakeFunction fault_kernel{"fault"};
// random, array, stdlib gemm and attention, and noop_ kernels, by entry (a map keeps their addresses); they do nothing
std::map<std::string, FakeFunction> named_kernels;
bool faulted = false;
thread_local void* current_context = nullptr;  // cuCtxSetCurrent's, per thread as the driver's
char fake_context;
char fake_module;
int fake_event;
std::map<unsigned long long, std::size_t> live_blocks;  // address -> bytes
unsigned long long allocations = 0, frees = 0, live_bytes = 0;
// cuTensorMapEncodeTiled's calls, and its last call's arguments (weft_fake_cuda_last_map's layout).
unsigned long long map_calls = 0, map_rank = 0, map_address = 0, map_dims[5] = {}, map_strides[4] = {}, map_box[5] = {};

unsigned long long EnvNumber(const char* name, unsigned long long fallback) {
  const char* text = std::getenv(name);
  return text != nullptr && *text != '\0' ? std::strtoull(text, nullptr, 10) : fallback;
}

}  // namespace

extern "C" {

CUresult cuGetErrorName(CUresult error, const char** name) {
  switch (error) {
    case 1:
      *name = "CUDA_ERROR_INVALID_VALUE";
      return 0;
    case 2:
      *name = "CUDA_ERROR_OUT_OF_MEMORY";
      return 0;
    case 100:
      *name = "CUDA_ERROR_NO_DEVICE";
      return 0;
    case 218:
      *name = "CUDA_ERROR_INVALID_PTX";
      return 0;
    case 500:
      *name = "CUDA_ERROR_NOT_FOUND";
      return 0;
    case 700:
      *name = "CUDA_ERROR_ILLEGAL_ADDRESS";
      return 0;
    case 999:
      *name = "CUDA_ERROR_UNKNOWN";
      return 0;
    default:
      return 1;
  }
}

CUresult cuGetErrorString(CUresult error, const char** text) {
  switch (error) {
    case 1:
      *text = "invalid argument";
      return 0;
    case 2:
      *text = "out of memory";
      return 0;
    case 100:
      *text = "no CUDA-capable device is detected";
      return 0;
    case 218:
      *text = "a PTX JIT compilation failed";
      return 0;
    case 500:
      *text = "named symbol not found";
      return 0;
    case 700:
      *text = "an illegal memory access was encountered";
      return 0;
    case 999:
      *text = "unknown error";
      return 0;
    default:
      return 1;
  }
}

CUresult cuInit(unsigned) {
  faulted = false;
  add_kernel.max_dynamic_shared = fault_kernel.max_dynamic_shared = 48 * 1024;
  return static_cast<CUresult>(EnvNumber("WEFT_FAKE_CUDA_INIT", 0));
}
CUresult cuDriverGetVersion(int* version) {
  *version = 13000;
  return 0;
}
CUresult cuDeviceGetCount(int* count) {
  *count = static_cast<int>(EnvNumber("WEFT_FAKE_CUDA_DEVICES", 1));
  return 0;
}
CUresult cuDeviceGet(int* device, int ordinal) {
  *device = ordinal;
  return 0;
}
CUresult cuDeviceGetName(char* name, int length, int device) {
  std::snprintf(name, static_cast<std::size_t>(length), "Fake GPU %d", device);
  return 0;
}
CUresult cuDeviceGetAttribute(int* value, int attribute, int) {
  const int sm = static_cast<int>(EnvNumber("WEFT_FAKE_CUDA_SM", 80));
  switch (attribute) {
    case 1:
      *value = 1024;
      break;  // max threads per block
    case 2:
    case 3:
      *value = 1024;
      break;  // max block x, y
    case 4:
      *value = 64;
      break;  // max block z
    case 5:
      *value = 2147483647;
      break;  // max grid x
    case 6:
    case 7:
      *value = 65535;
      break;  // max grid y, z
    case 16:
      *value = 4;
      break;  // multiprocessors
    case 75:
      *value = sm / 10;
      break;
    case 76:
      *value = sm % 10;
      break;
    case 97:
      *value = 227 * 1024;
      break;  // opt-in shared memory per block
    default:
      return 1;
  }
  return 0;
}
CUresult cuDeviceTotalMem_v2(std::size_t* bytes, int) {
  *bytes = std::size_t{16} << 30;
  return 0;
}
CUresult cuDevicePrimaryCtxRetain(void** context, int) {
  *context = &fake_context;
  return 0;
}
CUresult cuDevicePrimaryCtxRelease_v2(int) {
  return 0;
}
CUresult cuCtxSetCurrent(void* context) {
  current_context = context;
  return 0;
}
CUresult cuCtxGetCurrent(void** context) {
  *context = current_context;
  return 0;
}
CUresult cuCtxSynchronize() {
  if (faulted) return 700;
  return 0;
}
CUresult cuMemGetInfo_v2(std::size_t* free, std::size_t* total) {
  *free = static_cast<std::size_t>(EnvNumber("WEFT_FAKE_CUDA_FREE", std::uint64_t{8} << 30));
  *total = std::size_t{16} << 30;
  return 0;
}
void weft_fake_cuda_memory(unsigned long long counts[3]) {
  counts[0] = allocations;
  counts[1] = frees;
  counts[2] = live_bytes;
}
CUresult cuMemAlloc_v2(unsigned long long* ptr, std::size_t bytes) {
  if (bytes == 0) return 1;
  if (bytes > EnvNumber("WEFT_FAKE_CUDA_FREE", std::uint64_t{8} << 30)) return 2;
  if (std::getenv("WEFT_FAKE_CUDA_CAPACITY") != nullptr && live_bytes + bytes > EnvNumber("WEFT_FAKE_CUDA_CAPACITY", 0))
    return 2;
  void* p = std::calloc(bytes, 1);
  if (p == nullptr) return 2;
  *ptr = reinterpret_cast<std::uintptr_t>(p);
  live_blocks[*ptr] = bytes;
  live_bytes += bytes;
  ++allocations;
  if (std::getenv("WEFT_FAKE_CUDA_TRACE_MEMORY") != nullptr)
    std::fprintf(stderr, "fake cuda: alloc %zu bytes\n", bytes);
  return 0;
}
CUresult cuMemFree_v2(unsigned long long ptr) {
  auto it = live_blocks.find(ptr);
  if (it != live_blocks.end()) {
    if (std::getenv("WEFT_FAKE_CUDA_TRACE_MEMORY") != nullptr)
      std::fprintf(stderr, "fake cuda: free %zu bytes\n", it->second);
    live_bytes -= it->second;
    live_blocks.erase(it);
    ++frees;
  }
  std::free(reinterpret_cast<void*>(static_cast<std::uintptr_t>(ptr)));
  return 0;
}
// Stream-ordered memory: as the plain calls (one "stream": everything is synchronous here).
CUresult cuMemAllocAsync(unsigned long long* ptr, std::size_t bytes, void*) {
  return cuMemAlloc_v2(ptr, bytes);
}
CUresult cuMemFreeAsync(unsigned long long ptr, void*) {
  return cuMemFree_v2(ptr);
}
CUresult cuMemsetD8Async(unsigned long long dst, unsigned char value, std::size_t count, void*) {
  std::memset(reinterpret_cast<void*>(static_cast<std::uintptr_t>(dst)), value, count);
  return 0;
}
CUresult cuMemcpyDtoDAsync_v2(unsigned long long dst, unsigned long long src, std::size_t bytes, void*) {
  std::memcpy(reinterpret_cast<void*>(static_cast<std::uintptr_t>(dst)),
              reinterpret_cast<const void*>(static_cast<std::uintptr_t>(src)), bytes);
  return 0;
}
CUresult cuDeviceGetDefaultMemPool(void** pool, int) {
  static char fake_pool;
  *pool = &fake_pool;
  return 0;
}
CUresult cuMemPoolSetAttribute(void*, int, void*) {
  return 0;
}
CUresult cuMemcpyHtoD_v2(unsigned long long dst, const void* src, std::size_t bytes) {
  if (faulted) return 700;
  std::memcpy(reinterpret_cast<void*>(static_cast<std::uintptr_t>(dst)), src, bytes);
  return 0;
}
CUresult cuMemcpyDtoH_v2(void* dst, unsigned long long src, std::size_t bytes) {
  if (faulted) return 700;
  std::memcpy(dst, reinterpret_cast<const void*>(static_cast<std::uintptr_t>(src)), bytes);
  return 0;
}
CUresult cuMemsetD8_v2(unsigned long long dst, unsigned char value, std::size_t count) {
  std::memset(reinterpret_cast<void*>(static_cast<std::uintptr_t>(dst)), value, count);
  return 0;
}
CUresult cuModuleLoadDataEx(void** module, const void* image, unsigned count, int* options, void** values) {
  if (std::strstr(static_cast<const char*>(image), ".entry") != nullptr) {
    *module = &fake_module;
    return 0;
  }
  for (unsigned i = 0; i < count; ++i) {
    if (options[i] == 5) {  // CU_JIT_ERROR_LOG_BUFFER
      std::strcpy(static_cast<char*>(values[i]),
                  "ptxas application ptx input, line 1; fatal   : Parsing error near 'garbage': syntax error\n");
    }
  }
  return 218;
}
CUresult cuModuleUnload(void*) {
  return 0;
}
CUresult cuModuleGetFunction(void** function, void*, const char* name) {
  if (std::strcmp(name, "add") == 0) {
    *function = &add_kernel;
  } else if (std::strcmp(name, "fault") == 0) {
    *function = &fault_kernel;
  } else if (std::strncmp(name, "weft_random_", 12) == 0 || std::strncmp(name, "weft_array_", 11) == 0 ||
             std::strncmp(name, "gemm_", 5) == 0 || std::strncmp(name, "attention_", 10) == 0 ||
             std::strncmp(name, "noop_", 5) == 0) {
    FakeFunction& f = named_kernels[name];
    f.name = name;
    *function = &f;
  } else {
    return 500;
  }
  return 0;
}
CUresult cuFuncGetAttribute(int* value, int attribute, void* function) {
  const FakeFunction* f = static_cast<const FakeFunction*>(function);
  switch (attribute) {
    case 0:
      *value = 1024;
      return 0;  // max threads per block
    case 1:
      *value = 0;
      return 0;  // static shared bytes
    case 8:
      *value = f->max_dynamic_shared;
      return 0;
    default:
      return 1;
  }
}
CUresult cuFuncSetAttribute(void* function, int attribute, int value) {
  if (attribute != 8) return 1;
  static_cast<FakeFunction*>(function)->max_dynamic_shared = value;
  return 0;
}
CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, void*, int, size_t) {
  *blocks = 1;
  return 0;
}
CUresult cuLaunchKernel(void* function, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shared_bytes, void*, void** params, void**) {
  FakeFunction* f = static_cast<FakeFunction*>(function);
  if (faulted) return 700;
  if (shared_bytes > static_cast<unsigned>(f->max_dynamic_shared)) return 1;
  if (std::getenv("WEFT_FAKE_CUDA_TRACE") != nullptr) {
    std::fprintf(stderr, "fake cuda: launch %s grid %u x %u x %u, block %u x %u x %u", f->name.c_str(), gx, gy, gz, bx,
                 by, bz);
    if (f->name.rfind("weft_random_", 0) == 0) {  // (out, count, seed)
      std::int64_t count = 0, seed = 0;
      std::memcpy(&count, params[1], sizeof count);
      std::memcpy(&seed, params[2], sizeof seed);
      std::fprintf(stderr, ", count %lld, seed %lld", static_cast<long long>(count), static_cast<long long>(seed));
    }
    std::fprintf(stderr, "\n");
  }
  if (f == &fault_kernel) faulted = true;
  return 0;
}
CUresult cuEventCreate(void** event, unsigned) {
  *event = &fake_event;
  return 0;
}
CUresult cuEventDestroy_v2(void*) {
  return 0;
}
// Page-locked memory is host memory, its device address the same; a stream wait waits for nothing
// (the fake runs no work), and says so with WEFT_FAKE_CUDA_TRACE.
CUresult cuMemHostAlloc(void** pointer, std::size_t bytes, unsigned) {
  *pointer = std::calloc(1, bytes);
  return *pointer != nullptr ? 0 : 2;
}
CUresult cuMemFreeHost(void* pointer) {
  std::free(pointer);
  return 0;
}
CUresult cuMemHostGetDevicePointer_v2(unsigned long long* device, void* pointer, unsigned) {
  *device = reinterpret_cast<std::uintptr_t>(pointer);
  return 0;
}
CUresult cuStreamWaitValue32_v2(void*, unsigned long long, std::uint32_t value, unsigned) {
  if (std::getenv("WEFT_FAKE_CUDA_TRACE") != nullptr) std::fprintf(stderr, "fake cuda: stream wait %u\n", value);
  return 0;
}
CUresult cuEventRecord(void*, void*) {
  if (std::getenv("WEFT_FAKE_CUDA_TRACE") != nullptr) std::fprintf(stderr, "fake cuda: event record\n");
  return 0;
}
CUresult cuEventSynchronize(void*) {
  return faulted ? 700 : 0;
}
CUresult cuEventElapsedTime(float* ms, void*, void*) {
  *ms = 1.5f;
  return 0;
}
CUresult cuTensorMapEncodeTiled(void* map, int, unsigned rank, void* address, const std::uint64_t* dims,
                                const std::uint64_t* strides, const unsigned* box, const unsigned*, int, int, int,
                                int) {
  ++map_calls;
  map_rank = rank;
  map_address = reinterpret_cast<std::uintptr_t>(address);
  for (unsigned i = 0; i < 5; ++i) {
    map_dims[i] = i < rank ? dims[i] : 0;
    map_box[i] = i < rank ? box[i] : 0;
    if (i < 4) map_strides[i] = i + 1 < rank ? strides[i] : 0;
  }
  std::memset(map, 0xAB, 128);
  return 0;
}
void weft_fake_cuda_last_map(unsigned long long out[17]) {
  out[0] = map_calls;
  out[1] = map_rank;
  out[2] = map_address;
  std::memcpy(out + 3, map_dims, sizeof map_dims);
  std::memcpy(out + 8, map_strides, sizeof map_strides);
  std::memcpy(out + 12, map_box, sizeof map_box);
}

}  // extern "C"
