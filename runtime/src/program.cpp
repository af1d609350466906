// The part of the C API (weft/runtime.h, "Compiled programs") that `weft build`'s generated host code
// calls: the values of `def main` and the host built-ins, with the interpreter's meaning and
// messages, and kernel launches from the descriptors the compiler emits. How it works:
//
// 1. A weft_tensor is a HostTensor (dtype, shape and, when `on_host`, its bytes) and a device
//    buffer (when `on_device`). Copies are lazy: a launch uploads an input that is not on the GPU
//    yet; `print` and `save` download a kernel's output. `out` tensors start on the GPU, zeroed
//    unless the compiler proved that the kernel stores every element (weft_program_buffer then).
// 2. Every failure ends the program with weft_fail's one line (exit status 1): generated code has
//    nothing better to do with an error, and this way it carries no error paths.
// 3. A kernel's module is loaded by weft_program_preload when the program starts (or, for a caller
//    that does not preload, at its first launch): the cubin when the build had ptxas and the GPU
//    takes it, else the PTX (the driver compiles it for the GPU).
// 4. Tensors live until weft_program_end, which waits for the GPU first, so that a kernel that
//    failed is reported even when nothing reads its output, then gives their memory back. Lifetimes
//    are the compiler's (docs/runtime.md, "Device memory"): a value the buffer plan says is dead
//    hands its device memory to the next value of its buffer (the `reuse` of weft_program_buffer and
//    weft_program_out), the rest is held to the end. A library call's tensors go at its end. Device
//    memory comes from the runtime's pool (device_pool.h), so none of this calls the driver in a
//    steady state.
#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime_internal.h"
#include "weft/format.h"
#include "weft/library.h"
#include "weft/npy.h"
#include "weft/numerics.h"
#include "weft/random.h"
#include "weft/runtime.h"
#include "weft/tensor.h"

struct weft_tensor {
  weft::runtime::HostTensor host;  // dtype and shape always; bytes only when on_host
  bool on_host = false;
  weft_device_ptr device = 0;
  bool on_device = false;
  std::uint64_t capacity = 0;  // bytes of `device`'s allocation
  bool moved = false;          // its device memory went to a later value (weft_program_buffer)
  bool borrowed = false;       // a library call's argument: `device` is the caller's, never freed
};

namespace {

using weft::Dtype;
using weft::runtime::HostTensor;

// A library call in progress (weft_library_call): `load` of a parameter's name takes its argument,
// `save` of a result's index gives that result.
struct Call {
  const weft_library_export* e = nullptr;
  std::vector<weft_tensor*> inputs;   // per parameter
  std::vector<weft_tensor*> results;  // per result; null until saved
  bool shapes_only = false;           // WEFT_RESULTS_SHAPES: nothing is allocated, copied or launched
};

// `time`'s mark: the clock, and an event recorded on the GPU's stream when the program uses it (at
// the interval's first GPU operation: StartIntervals).
struct Mark {
  std::chrono::steady_clock::time_point start;
  weft_event* event = nullptr;
};

struct Program {
  std::vector<std::string> args;
  bool gpu = false;  // weft_init succeeded
  std::vector<std::unique_ptr<weft_tensor>> tensors;
  std::vector<weft_module*> modules;
  Call* call = nullptr;
  std::vector<Mark*> starts;  // `time` intervals whose start event waits for their first GPU operation
};

Program& P() {
  static Program program;
  return program;
}

// The start events of the `time` intervals begun since the last GPU operation, recorded just before
// the next one (docs/runtime.md, "time"): the interval's GPU time runs from its first launch or copy,
// not from the host's work before it (preparing a launch, which would leave the GPU idle inside it).
void StartIntervals() {
  for (Mark* mark : P().starts) weft_check(weft_event_record(mark->event));
  P().starts.clear();
}

weft_tensor* Keep(std::unique_ptr<weft_tensor> t) {
  P().tensors.push_back(std::move(t));
  return P().tensors.back().get();
}

std::uint64_t Bytes(const weft_tensor& t) {
  return static_cast<std::uint64_t>(weft::runtime::ByteSize(t.host.dtype, t.host.Count()));
}

std::vector<std::int64_t> Shape(std::int32_t rank, const std::int64_t* shape) {
  std::vector<std::int64_t> dims(shape, shape + rank);
  for (std::int64_t d : dims) {
    if (d < 0) weft_failf("the dimension %lld is negative", static_cast<long long>(d));
  }
  return dims;
}

void EnsureGpu() {
  if (!P().gpu) {
    weft_check(weft_init());
    P().gpu = true;
  }
}

// The host copy of `t`, downloaded from the GPU if it is only there.
HostTensor& OnHost(weft_tensor& t) {
  if (t.moved && !t.on_host)
    weft_failf("internal error: a value read after its buffer went to a later one (a bug in weft's buffer plan)");
  if (!t.on_host) {
    t.host.bytes.assign(static_cast<std::size_t>(Bytes(t)), 0);
    if (t.on_device && !t.host.bytes.empty()) {
      StartIntervals();
      weft_check(weft_copy_to_host(t.host.bytes.data(), t.device, t.host.bytes.size()));
    }
    t.on_host = true;
  }
  return t.host;
}

// The device copy of `t`, uploaded if it is only on the host.
weft_device_ptr OnDevice(weft_tensor& t) {
  if (t.moved)
    weft_failf("internal error: a value read after its buffer went to a later one (a bug in weft's buffer plan)");
  if (!t.on_device) {
    EnsureGpu();
    std::uint64_t bytes = Bytes(t);
    weft_check(weft::runtime::AllocateTensor(bytes, &t.device, &t.capacity));
    if (bytes > 0) {
      HostTensor& host = OnHost(t);
      StartIntervals();
      weft_check(weft_copy_to_device(t.device, host.bytes.data(), bytes));
    }
    t.on_device = true;
  }
  return t.device;
}

// Device memory for `t`: that of `reuse` (the value the buffer plan held in the same buffer before,
// now dead) when its block holds `t`, else the pool's, `reuse`'s block going back to it first.
void Acquire(weft_tensor& t, weft_tensor* reuse) {
  const std::uint64_t bytes = Bytes(t);
  if (reuse != nullptr && reuse->on_device && !reuse->moved && !reuse->borrowed && reuse->device != 0) {
    if (reuse->capacity >= bytes) {
      t.device = reuse->device;
      t.capacity = reuse->capacity;
    } else {
      weft_check(weft::runtime::FreeOnStream(reuse->device, weft::runtime::CurrentStream()));
    }
    reuse->device = 0;
    reuse->capacity = 0;
    reuse->on_device = false;
    reuse->moved = true;
  }
  if (t.device == 0) weft_check(weft::runtime::AllocateTensor(bytes, &t.device, &t.capacity));
  t.on_device = true;
}

std::int64_t ScalarInt(const weft_tensor* t) {
  return weft::runtime::LoadInt64(OnHost(const_cast<weft_tensor&>(*t)), 0);
}

weft_tma_dtype TmaDtype(Dtype d) {
  switch (d) {
    case Dtype::BF16:
      return WEFT_TMA_BF16;
    case Dtype::F16:
      return WEFT_TMA_F16;
    case Dtype::F32:
      return WEFT_TMA_F32;
    case Dtype::F64:
      return WEFT_TMA_F64;
    case Dtype::I32:
      return WEFT_TMA_I32;
    case Dtype::I64:
      return WEFT_TMA_I64;
    case Dtype::U16:
    case Dtype::I16:
      return WEFT_TMA_U16;
    case Dtype::U32:
      return WEFT_TMA_U32;
    case Dtype::U64:
      return WEFT_TMA_U64;
    default:
      return WEFT_TMA_U8;
  }
}

// The tensor map last encoded for one of an entry's maps, and the address and extents it was encoded
// for: a launch on the same buffers (a loop's, whose values the buffer plan keeps in one buffer)
// takes it instead of asking the driver again, inside a `time`.
struct EncodedMap {
  bool valid = false;
  weft_device_ptr address = 0;
  std::uint64_t dims[5] = {}, strides[4] = {};
  weft_tensor_map map{};
};

struct Loaded {
  weft_module* module = nullptr;
  weft_kernel* kernel = nullptr;
  std::vector<EncodedMap> maps;  // per weft_program_kernel::maps entry
};

Loaded& Load(weft_program_kernel& k) {
  if (k.loaded != nullptr) return *static_cast<Loaded*>(k.loaded);
  EnsureGpu();
  auto loaded = std::make_unique<Loaded>();
  std::string name = std::string(k.name) + ".ptx";
  bool from_cubin = false;
  if (k.cubin != nullptr && k.cubin_size > 0) {
    from_cubin =
        weft_module_load(&loaded->module, k.cubin, k.cubin_size, (std::string(k.name) + ".cubin").c_str()) == WEFT_OK;
  }
  if (!from_cubin) weft_check(weft_module_load(&loaded->module, k.ptx, k.ptx_size + 1, name.c_str()));
  P().modules.push_back(loaded->module);
  weft_check(weft_kernel_get(&loaded->kernel, loaded->module, k.entry));
  k.loaded = loaded.release();
  return *static_cast<Loaded*>(k.loaded);
}

// `load NAME` in a library call: the argument of parameter NAME, its dtype and rank checked.
weft_tensor* CallArgument(Call& call, const char* name, Dtype dtype, std::int32_t rank, const char* type) {
  const weft_library_export& e = *call.e;
  for (std::int32_t i = 0; i < e.param_count; ++i) {
    if (std::strcmp(e.param_names[i], name) != 0) continue;
    weft_tensor* t = call.inputs.at(static_cast<std::size_t>(i));
    const HostTensor& h = t->host;
    std::string why;
    if (h.dtype != dtype) {
      why = "its dtype is " + std::string(weft::Spelling(h.dtype)) + ", not " + std::string(weft::Spelling(dtype));
    } else if (h.Rank() != rank) {
      why = "its rank is " + std::to_string(h.Rank()) + ", not " + std::to_string(rank);
    }
    if (!why.empty()) {
      weft::runtime::SetFailingStatus(WEFT_ERROR_SHAPE);
      weft_failf("`%s`: parameter `%s` expects `%s` but is given %s%s: %s", e.name, name, type,
                 std::string(weft::Spelling(h.dtype)).c_str(), weft::runtime::ShapeText(h.shape).c_str(), why.c_str());
    }
    return t;
  }
  weft_failf("internal error: `%s` has no parameter `%s`", e.name, name);
}

// Why the GPU weft_init picked does not run code built for `target`, or "".
std::string TargetMismatch(const char* target) {
  weft_device_info info{};
  weft_check(weft_device_get_info(&info));
  std::string t = target != nullptr ? target : "sm_80";
  bool ok = t == "sm_90a" ? info.sm_major == 9 && info.sm_minor == 0 : info.sm_major >= 8;
  if (ok) return "";
  char buffer[512];
  std::snprintf(buffer, sizeof buffer,
                "this program was built for %s (`weft build --target %s`), which %s; GPU %d (%s) is sm_%d%d%s",
                t.c_str(), t.c_str(), t == "sm_90a" ? "runs only on Hopper GPUs (sm_90)" : "needs sm_80 or newer",
                info.index, info.name, info.sm_major, info.sm_minor,
                t == "sm_90a" && info.sm_major >= 8 ? ": build it with `--target sm_80`" : "");
  return buffer;
}

bool ShapesOnly() {
  return P().call != nullptr && P().call->shapes_only;
}

}  // namespace

extern "C" {

void weft_program_check_failed(const char* format, ...) {
  char buffer[4096];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buffer, sizeof buffer, format != nullptr ? format : "a run-time check failed", args);
  va_end(args);
  weft::runtime::SetFailingStatus(WEFT_ERROR_SHAPE);
  weft_fail(buffer);
}

void weft_program_start(int argc, char** argv, const char* target, int uses_gpu) {
  Program& p = P();
  p.args.assign(argv, argv + argc);
  if (!uses_gpu) return;
  EnsureGpu();
  std::string why = TargetMismatch(target);
  if (!why.empty()) weft_fail(why.c_str());
}

void weft_program_preload(weft_program_kernel* const* kernels, int32_t count) {
  for (int32_t i = 0; i < count; ++i) Load(*kernels[i]);
}

int weft_program_end(void) {
  Program& p = P();
  std::fflush(stdout);
  if (p.gpu) {
    weft_check(weft_synchronize());
    for (auto& t : p.tensors)
      if (t->device != 0 && !t->borrowed) weft::runtime::FreeOnStream(t->device, nullptr);
    weft::runtime::TrimPool();
    if (const char* stats = std::getenv("WEFT_POOL_STATS"); stats != nullptr && *stats != '\0') {
      weft::runtime::DevicePool::Stats s = weft::runtime::PoolStats();
      std::fprintf(stderr,
                   "weft: device memory: %llu driver allocations, %llu reuses of kept blocks, %llu out-of-memory "
                   "retries, %llu blocks freed\n",
                   static_cast<unsigned long long>(s.driver_allocations), static_cast<unsigned long long>(s.reuses),
                   static_cast<unsigned long long>(s.out_of_memory_retries),
                   static_cast<unsigned long long>(s.driver_frees));
    }
  }
  p.tensors.clear();
  return 0;
}

weft_tensor* weft_program_scalar(weft_dtype dtype, uint64_t bits) {
  auto t = std::make_unique<weft_tensor>();
  t->host = HostTensor::Zeros(static_cast<Dtype>(dtype), {});
  weft::runtime::StoreBits(t->host, 0, bits);
  t->on_host = true;
  return Keep(std::move(t));
}

int64_t weft_program_dim(const weft_tensor* tensor, int32_t axis) {
  return tensor->host.shape.at(static_cast<std::size_t>(axis));
}

weft_tensor* weft_program_random(weft_program_kernel* kernel, weft_dtype dtype, int32_t rank, const int64_t* shape,
                                 const weft_tensor* seed) {
  auto t = std::make_unique<weft_tensor>();
  t->host.dtype = static_cast<Dtype>(dtype);
  t->host.shape = Shape(rank, shape);
  std::uint64_t seed_bits = static_cast<std::uint64_t>(ScalarInt(seed));
  if (ShapesOnly()) return Keep(std::move(t));
  if (kernel == nullptr || !P().gpu) {
    weft::runtime::FillRandom(t->host, seed_bits);
    t->on_host = true;
    return Keep(std::move(t));
  }
  // On the GPU (docs/runtime.md, "On the GPU"): the kernel's grid-stride loop covers its units
  // (elements; bytes of a 4-bit dtype) whatever the grid, so the grid is only a matter of speed: one
  // thread a unit, up to kRandomBlocks blocks.
  constexpr std::uint64_t kRandomBlocks = 1024;
  std::uint64_t bytes = Bytes(*t);
  weft_check(weft::runtime::AllocateTensor(bytes, &t->device, &t->capacity));
  t->on_device = true;
  std::int64_t count = t->host.Count();
  std::uint64_t units = weft::Bits(t->host.dtype) < 8 ? bytes : static_cast<std::uint64_t>(count);
  if (units > 0) {
    Loaded& loaded = Load(*kernel);
    std::uint64_t blocks = std::min<std::uint64_t>((units + kernel->threads - 1) / kernel->threads, kRandomBlocks);
    weft_device_ptr out = t->device;
    void* args[] = {&out, &count, &seed_bits};
    weft_launch_config config = {{static_cast<std::uint32_t>(blocks), 1, 1}, {kernel->threads, 1, 1}, 0};
    StartIntervals();
    weft_check(weft_launch(loaded.kernel, &config, args));
  }
  return Keep(std::move(t));
}

weft_tensor* weft_program_load(const char* path, weft_dtype dtype, int32_t rank, const char* type) {
  if (Call* call = P().call) return CallArgument(*call, path, static_cast<Dtype>(dtype), rank, type);
  auto read = weft::runtime::ReadNpy(path);
  if (!read) weft_fail(read.error().message.c_str());
  auto t = std::make_unique<weft_tensor>();
  t->host = std::move(*read);
  t->on_host = true;
  const HostTensor& h = t->host;
  std::string why;
  Dtype expected = static_cast<Dtype>(dtype);
  if (h.dtype != expected) {
    why = "its dtype is " + std::string(weft::Spelling(h.dtype)) + ", not " + std::string(weft::Spelling(expected));
  } else if (h.Rank() != rank) {
    why = "its rank is " + std::to_string(h.Rank()) + ", not " + std::to_string(rank);
  }
  if (!why.empty()) {
    weft_failf("%s: the program expects `%s` but the file holds %s%s: %s", path, type,
               std::string(weft::Spelling(h.dtype)).c_str(), weft::runtime::ShapeText(h.shape).c_str(), why.c_str());
  }
  return Keep(std::move(t));
}

void weft_program_load_mismatch(const weft_tensor* tensor, const char* path, const char* type, int32_t axis,
                                const char* expected_text, int64_t expected) {
  const HostTensor& h = tensor->host;
  std::string want = expected_text == nullptr ? std::to_string(expected)
                                              : "`" + std::string(expected_text) + "` = " + std::to_string(expected);
  if (const Call* call = P().call) {
    weft::runtime::SetFailingStatus(WEFT_ERROR_SHAPE);
    weft_failf("`%s`: parameter `%s` expects `%s` but is given %s%s: axis %d is %lld, not %s", call->e->name, path,
               type, std::string(weft::Spelling(h.dtype)).c_str(), weft::runtime::ShapeText(h.shape).c_str(), axis,
               static_cast<long long>(h.shape.at(static_cast<std::size_t>(axis))), want.c_str());
  }
  weft_failf("%s: the program expects `%s` but the file holds %s%s: axis %d is %lld, not %s", path, type,
             std::string(weft::Spelling(h.dtype)).c_str(), weft::runtime::ShapeText(h.shape).c_str(), axis,
             static_cast<long long>(h.shape.at(static_cast<std::size_t>(axis))), want.c_str());
}

void weft_program_save(const char* path, weft_tensor* tensor) {
  if (Call* call = P().call) {
    call->results.at(static_cast<std::size_t>(std::stoi(path))) = tensor;
    return;
  }
  auto written = weft::runtime::WriteNpy(path, OnHost(*tensor));
  if (!written) weft_fail(written.error().message.c_str());
}

const char* weft_program_arg(const weft_tensor* index) {
  const Program& p = P();
  std::int64_t i = ScalarInt(index);
  if (i < 0 || static_cast<std::size_t>(i) >= p.args.size()) {
    std::size_t given = p.args.empty() ? 0 : p.args.size() - 1;
    weft_failf("`arg %lld`: the program was given %zu %s after its name", static_cast<long long>(i), given,
               given == 1 ? "argument" : "arguments");
  }
  return p.args[static_cast<std::size_t>(i)].c_str();
}

void weft_program_write_tensor(weft_tensor* tensor) {
  std::string text = weft::runtime::FormatTensor(OnHost(*tensor));
  std::fwrite(text.data(), 1, text.size(), stdout);
}

void weft_program_write_text(const char* text) {
  std::fputs(text, stdout);
  if (std::strchr(text, '\n') != nullptr) std::fflush(stdout);
}

weft_tensor* weft_program_out(weft_dtype dtype, int32_t rank, const int64_t* shape, weft_tensor* reuse) {
  auto t = std::make_unique<weft_tensor>();
  t->host.dtype = static_cast<Dtype>(dtype);
  t->host.shape = Shape(rank, shape);
  if (ShapesOnly()) return Keep(std::move(t));
  EnsureGpu();
  Acquire(*t, reuse);
  if (std::uint64_t bytes = Bytes(*t); bytes > 0) {
    StartIntervals();
    weft_check(weft_device_memset(t->device, 0, bytes));
  }
  return Keep(std::move(t));
}

weft_tensor* weft_program_buffer(weft_dtype dtype, int32_t rank, const int64_t* shape, weft_tensor* reuse) {
  auto t = std::make_unique<weft_tensor>();
  t->host.dtype = static_cast<Dtype>(dtype);
  t->host.shape = Shape(rank, shape);
  if (ShapesOnly()) return Keep(std::move(t));
  EnsureGpu();
  Acquire(*t, reuse);
  return Keep(std::move(t));
}

weft_tensor* weft_program_view_of(weft_tensor* base, int64_t offset, int32_t rank, const int64_t* shape) {
  auto t = std::make_unique<weft_tensor>();
  t->host.dtype = base->host.dtype;
  t->host.shape = Shape(rank, shape);
  if (ShapesOnly()) return Keep(std::move(t));
  if (offset < 0 || offset + t->host.Count() > base->host.Count())
    weft_failf("internal error: a view of %lld elements at %lld is outside its tensor of %lld (a bug in weft's graph)",
               static_cast<long long>(t->host.Count()), static_cast<long long>(offset),
               static_cast<long long>(base->host.Count()));
  t->device = OnDevice(*base) + static_cast<weft_device_ptr>(weft::runtime::ByteSize(t->host.dtype, offset));
  t->on_device = true;
  t->borrowed = true;  // the base's memory: never freed or handed on through the view
  return Keep(std::move(t));
}

void weft_program_launch(weft_program_kernel* kernel, const int64_t* grid, weft_tensor* const* tensors,
                         const int64_t* sizes, weft_tensor* const* scalars) {
  weft_program_launch_views(kernel, grid, tensors, sizes, scalars, nullptr);
}

void weft_program_launch_views(weft_program_kernel* kernel, const int64_t* grid, weft_tensor* const* tensors,
                               const int64_t* sizes, weft_tensor* const* scalars, const weft_program_view* views) {
  if (ShapesOnly()) return;
  for (int i = 0; i < 3; ++i) {
    if (grid[i] == 0) return;  // no blocks: a zero-filled `out` stays zero; one stored whole is empty
    if (grid[i] < 0 || grid[i] > 0x7fffffff) {
      weft_failf("`%s`: the grid's extent %d is %lld, outside 1 to 2147483647", kernel->name, i,
                 static_cast<long long>(grid[i]));
    }
  }
  Loaded& loaded = Load(*kernel);
  // The entry's parameters (device.h): tensors, sizes, scalars, tensor maps.
  const std::size_t tensor_count = static_cast<std::size_t>(kernel->tensor_count);
  const std::size_t scalar_count = static_cast<std::size_t>(kernel->scalar_count);
  std::vector<weft_device_ptr> pointers;
  std::vector<void*> args;
  pointers.reserve(tensor_count);
  for (std::size_t i = 0; i < tensor_count; ++i) pointers.push_back(OnDevice(*tensors[i]));
  std::vector<std::int64_t> size_values;
  size_values.reserve(static_cast<std::size_t>(kernel->size_count));
  for (std::int32_t i = 0; i < kernel->size_count; ++i) size_values.push_back(sizes[kernel->size_order[i]]);
  // A scalar parameter has its dtype's width (bool: an i32 0 or 1): its bits in the low bytes.
  std::vector<std::uint64_t> scalar_bits;
  scalar_bits.reserve(scalar_count);
  for (std::size_t i = 0; i < scalar_count; ++i) scalar_bits.push_back(weft::runtime::LoadBits(OnHost(*scalars[i]), 0));
  std::vector<weft_tensor_map> maps(static_cast<std::size_t>(kernel->map_count));
  loaded.maps.resize(maps.size());
  for (std::int32_t i = 0; i < kernel->map_count; ++i) {
    const weft_program_tensor_map& m = kernel->maps[i];
    const weft_tensor& t = *tensors[m.tensor];
    const std::vector<std::int64_t>& shape = t.host.shape;
    const std::uint64_t element = static_cast<std::uint64_t>(weft::runtime::ByteSize(t.host.dtype, 1));
    // The map's dims and byte strides, innermost first: a dense tensor's columns and flattened rows,
    // or the dims of the view it is read through, at its first element.
    std::uint32_t rank = 2;
    std::uint64_t dims[5] = {}, strides[4] = {};
    weft_device_ptr address = pointers[static_cast<std::size_t>(m.tensor)];
    if (m.rank == 0) {
      dims[0] = shape.empty() ? 1 : static_cast<std::uint64_t>(shape.back());
      dims[1] = 1;
      for (std::size_t a = 0; a + 1 < shape.size(); ++a) dims[1] *= static_cast<std::uint64_t>(shape[a]);
      strides[0] = dims[0] * element;
    } else {
      if (views == nullptr || m.rank < 2 || m.rank > 5)
        weft_failf("`%s`: map %d reads a view, and the launch gives no layout (a compiler bug)", kernel->name, i);
      const weft_program_view& v = views[m.tensor];
      rank = static_cast<std::uint32_t>(m.rank);
      for (std::uint32_t d = 0; d < rank; ++d) dims[d] = static_cast<std::uint64_t>(v.dims[d]);
      for (std::uint32_t d = 1; d < rank; ++d) strides[d - 1] = static_cast<std::uint64_t>(v.strides[d]) * element;
      address += static_cast<std::uint64_t>(v.offset) * element;
    }
    EncodedMap& encoded = loaded.maps[static_cast<std::size_t>(i)];
    if (!encoded.valid || encoded.address != address || std::memcmp(encoded.dims, dims, sizeof dims) != 0 ||
        std::memcmp(encoded.strides, strides, sizeof strides) != 0) {
      const std::uint32_t box[5] = {m.box_cols, m.box_rows, 1, 1, 1};
      encoded.valid = false;
      if (weft_tensor_map_encode_tiled(&encoded.map, TmaDtype(t.host.dtype), rank, address, dims, strides, box, nullptr,
                                       WEFT_TMA_INTERLEAVE_NONE, static_cast<weft_tma_swizzle>(m.swizzle),
                                       WEFT_TMA_L2_256B, WEFT_TMA_OOB_ZERO) != WEFT_OK) {
        weft_failf("`%s`: cannot make the TMA tensor map of %s%s: %s", kernel->name,
                   std::string(weft::Spelling(t.host.dtype)).c_str(), weft::runtime::ShapeText(shape).c_str(),
                   weft_last_error());
      }
      encoded.valid = true;
      encoded.address = address;
      std::memcpy(encoded.dims, dims, sizeof dims);
      std::memcpy(encoded.strides, strides, sizeof strides);
    }
    maps[static_cast<std::size_t>(i)] = encoded.map;
  }
  for (weft_device_ptr& p : pointers) args.push_back(&p);
  for (std::int64_t& s : size_values) args.push_back(&s);
  for (std::uint64_t& s : scalar_bits) args.push_back(&s);
  for (weft_tensor_map& m : maps) args.push_back(&m);
  weft_launch_config config = {
      {static_cast<std::uint32_t>(grid[0]), static_cast<std::uint32_t>(grid[1]), static_cast<std::uint32_t>(grid[2])},
      {kernel->threads, 1, 1},
      kernel->shared_bytes};
  if (kernel->persistent) weft_check(weft_persistent_grid(loaded.kernel, &config));
  // A `time` interval's start event and its first launch reach the GPU together: the stream is held
  // until the launch is queued, so the interval has the kernel's time, not the launch's latency.
  const bool held = !P().starts.empty() && weft::runtime::HoldStream();
  StartIntervals();
  const weft_status launched = weft_launch(loaded.kernel, &config, args.data());
  if (held) weft::runtime::ReleaseStream();
  weft_check(launched);
}

void* weft_program_time_start(void) {
  auto* mark = new Mark{std::chrono::steady_clock::now(), nullptr};
  if (P().gpu) {
    weft_check(weft_event_create(&mark->event));
    P().starts.push_back(mark);  // recorded at the interval's first GPU operation
  }
  return mark;
}

weft_tensor* weft_program_time_stop(void* mark_pointer) {
  std::unique_ptr<Mark> mark(static_cast<Mark*>(mark_pointer));
  double ms = 0;
  std::vector<Mark*>& starts = P().starts;
  if (auto it = std::find(starts.begin(), starts.end(), mark.get()); it != starts.end()) {
    // No GPU operation in the interval: the host's time.
    starts.erase(it);
    weft_event_destroy(mark->event);
    mark->event = nullptr;
  }
  if (mark->event != nullptr) {
    weft_event* end = nullptr;
    weft_check(weft_event_create(&end));
    weft_check(weft_event_record(end));
    float elapsed = 0;
    weft_check(weft_event_elapsed_ms(mark->event, end, &elapsed));
    ms = elapsed;
    weft_event_destroy(end);
    weft_event_destroy(mark->event);
  } else {
    ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - mark->start).count();
  }
  return weft_program_scalar(WEFT_DTYPE_F64, weft::runtime::EncodeFloat(Dtype::F64, ms));
}

}  // extern "C"

// ---- Shared libraries (weft/library.h, docs/python.md) ----

namespace {

std::mutex& CallMutex() {
  static std::mutex mutex;
  return mutex;
}

weft_dl_dtype DlDtype(Dtype d) {
  auto bits = static_cast<std::uint8_t>(weft::Bits(d));
  switch (d) {
    case Dtype::Bool:
      return {6, 8, 1};
    case Dtype::BF16:
      return {4, 16, 1};
    case Dtype::F16:
    case Dtype::F32:
    case Dtype::F64:
      return {2, bits, 1};
    case Dtype::F8E4M3:
      return {10, 8, 1};
    case Dtype::F8E5M2:
      return {12, 8, 1};
    case Dtype::U4:
    case Dtype::U8:
    case Dtype::U16:
    case Dtype::U32:
    case Dtype::U64:
      return {1, bits, 1};
    default:
      return {0, bits, 1};
  }
}

// A result handed to the caller: its shape, and the memory it owns (host bytes, or a stream-ordered
// device allocation freed on the call's stream).
struct Managed {
  weft_dl_managed_tensor dl{};
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> strides;  // C order, in elements (DLPack allows null; not every consumer does)
  std::vector<std::uint8_t> host;
  weft_device_ptr device = 0;
  void* stream = nullptr;
};

void DeleteManaged(weft_dl_managed_tensor* self) {
  if (self == nullptr) return;
  auto* m = static_cast<Managed*>(self->manager_ctx);
  if (m->device != 0) weft::runtime::FreeOnStream(m->device, m->stream);  // a deleter cannot report
  delete m;
}

// Result `t` of a call as a DLPack tensor. On the GPU the result's own buffer is handed over (the
// data the kernel wrote: no copy), unless the caller owns it (an argument returned as it is) or an
// earlier result took it; then it is copied on the stream.
weft_dl_managed_tensor* MakeResult(weft_tensor& t, weft_library_results where, void* stream,
                                   std::vector<std::pair<weft_tensor*, weft_device_ptr>>& taken) {
  auto m = std::make_unique<Managed>();
  m->shape = t.host.shape;
  m->stream = stream;
  weft_dl_tensor& dl = m->dl.dl_tensor;
  dl.device = {1, 0};
  if (where == WEFT_RESULTS_HOST) {
    m->host = OnHost(t).bytes;
    dl.data = m->host.data();
  } else if (where == WEFT_RESULTS_DEVICE) {
    const std::uint64_t bytes = Bytes(t);
    weft_device_ptr source = 0;
    for (const auto& [tensor, device] : taken)
      if (tensor == &t) source = device;
    if (source == 0) source = OnDevice(t);
    if (t.borrowed || t.device != source || t.capacity == 0) {
      std::uint64_t capacity = 0;
      weft_check(weft::runtime::AllocateTensor(bytes, &m->device, &capacity));
      weft_check(weft::runtime::CopyOnStream(m->device, source, bytes));
    } else {
      m->device = t.device;  // handed over: the call's clean-up does not free it
      t.device = 0;
      t.on_device = false;
      t.moved = true;
      taken.emplace_back(&t, m->device);
    }
    static const int device = [] {
      weft_device_info info{};
      weft_check(weft_device_get_info(&info));
      return info.index;
    }();
    dl.device = {2, device};
    dl.data = reinterpret_cast<void*>(static_cast<std::uintptr_t>(m->device));
  }
  dl.ndim = static_cast<std::int32_t>(m->shape.size());
  dl.dtype = DlDtype(t.host.dtype);
  dl.shape = m->shape.data();
  m->strides.assign(m->shape.size(), 1);
  for (std::size_t a = m->shape.size(); a-- > 1;)
    m->strides[a - 1] = m->strides[a] * std::max<std::int64_t>(m->shape[a], 1);
  dl.strides = m->strides.empty() ? nullptr : m->strides.data();
  dl.byte_offset = 0;
  m->dl.manager_ctx = m.get();
  m->dl.deleter = DeleteManaged;
  return &m.release()->dl;
}

}  // namespace

extern "C" {

int32_t weft_library_gpu_usable(const weft_library_export* export_) {
  std::lock_guard<std::mutex> lock(CallMutex());
  if (weft_init() != WEFT_OK) return 0;
  P().gpu = true;
  std::string why = TargetMismatch(export_ != nullptr ? export_->target : "sm_80");
  if (!why.empty()) {
    weft::runtime::SetError(WEFT_ERROR_NO_DEVICE, why);
    return 0;
  }
  return 1;
}

weft_status weft_library_call(const weft_library_export* export_, const int64_t* args, void* stream,
                              weft_library_results where, weft_dl_managed_tensor** results) {
  using weft::runtime::SetError;
  if (export_ == nullptr) return SetError(WEFT_ERROR_INVALID_ARGUMENT, "`weft_library_call`: `export_` is null");
  const weft_library_export& e = *export_;
  if (args == nullptr && e.param_count > 0)
    return SetError(WEFT_ERROR_INVALID_ARGUMENT, "`weft_library_call`: `args` is null");
  if (results == nullptr && e.result_count > 0)
    return SetError(WEFT_ERROR_INVALID_ARGUMENT, "`weft_library_call`: `results` is null");
  std::lock_guard<std::mutex> lock(CallMutex());
  Program& p = P();
  const std::size_t first = p.tensors.size();
  Call call;
  call.e = &e;
  call.shapes_only = where == WEFT_RESULTS_SHAPES;
  call.results.assign(static_cast<std::size_t>(e.result_count), nullptr);
  for (std::int32_t r = 0; r < e.result_count; ++r) results[r] = nullptr;
  weft_status status = WEFT_OK;
  weft::runtime::SetInCall(true);
  try {
    // 1. The arguments: the caller's GPU memory is borrowed; host memory is copied into the tensor.
    const std::int64_t* a = args;
    bool gpu_arguments = false;
    for (std::int32_t i = 0; i < e.param_count; ++i) {
      const std::int64_t dtype = a[2], rank = a[3];
      if (dtype < 0 || dtype > WEFT_DTYPE_F64 || rank < 0 || rank > 64 || (a[1] != 1 && a[1] != 2)) {
        weft::runtime::SetFailingStatus(WEFT_ERROR_INVALID_ARGUMENT);
        weft_failf("`%s`: the argument of `%s` is not a tensor weft takes (dtype %lld, rank %lld, device %lld)", e.name,
                   e.param_names[i], static_cast<long long>(dtype), static_cast<long long>(rank),
                   static_cast<long long>(a[1]));
      }
      auto t = std::make_unique<weft_tensor>();
      t->host.dtype = static_cast<Dtype>(dtype);
      t->host.shape = Shape(static_cast<std::int32_t>(rank), a + 4);
      const std::uint64_t bytes = Bytes(*t);
      auto* data = reinterpret_cast<const std::uint8_t*>(static_cast<std::uintptr_t>(a[0]));
      if (call.shapes_only) {
        // No data: a fake tensor's shape.
      } else if (a[1] == 2) {
        t->device = static_cast<weft_device_ptr>(a[0]);
        t->on_device = true;
        t->borrowed = true;
        t->capacity = bytes;
        gpu_arguments = true;
      } else {
        t->host.bytes.assign(data, data + bytes);
        t->on_host = true;
      }
      call.inputs.push_back(Keep(std::move(t)));
      a += 4 + rank;
    }
    // 2. The GPU, when the call uses it: its context current here, the work on the caller's stream.
    if (!call.shapes_only && (e.uses_gpu || gpu_arguments || where == WEFT_RESULTS_DEVICE)) {
      EnsureGpu();
      // The target is checked once per export (a call's host time is the caller's launch latency).
      static std::vector<const weft_library_export*> checked;
      if (std::find(checked.begin(), checked.end(), &e) == checked.end()) {
        std::string why = TargetMismatch(e.target);
        if (!why.empty()) {
          weft::runtime::SetFailingStatus(WEFT_ERROR_NO_DEVICE);
          weft_fail(why.c_str());
        }
        checked.push_back(&e);
      }
      weft_check(weft::runtime::MakeCurrent());
      weft::runtime::SetStream(stream, true);
    }
    // 3. The function's graph; its `save`s are the results.
    p.call = &call;
    e.body();
    p.call = nullptr;
    std::vector<std::pair<weft_tensor*, weft_device_ptr>> taken;
    for (std::int32_t r = 0; r < e.result_count; ++r) {
      weft_tensor* t = call.results[static_cast<std::size_t>(r)];
      if (t == nullptr) weft_failf("internal error: `%s` did not make its result %d", e.name, r);
      results[r] = MakeResult(*t, where, stream, taken);
    }
  } catch (const weft::runtime::CallFailure& failure) {
    status = SetError(failure.status, failure.message);
  } catch (const std::exception& x) {
    status = SetError(WEFT_ERROR_INVALID_ARGUMENT, std::string("`") + e.name + "`: " + x.what());
  }
  p.call = nullptr;
  weft::runtime::SetInCall(false);
  if (status != WEFT_OK) {
    for (std::int32_t r = 0; r < e.result_count; ++r) {
      DeleteManaged(results[r]);
      results[r] = nullptr;
    }
  }
  // 4. The call's own tensors go (in stream order); the results' memory was handed over.
  for (std::size_t i = first; i < p.tensors.size(); ++i) {
    weft_tensor& t = *p.tensors[i];
    if (!t.borrowed && t.device != 0) weft::runtime::FreeOnStream(t.device, stream);
  }
  p.tensors.resize(first);
  weft::runtime::SetStream(nullptr, false);
  return status;
}

}  // extern "C"
