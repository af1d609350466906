// What runtime.cpp (the device) and runtime_host.cpp (errors, host tensors, .npy, random) share.
#pragma once

#include <cstdint>
#include <string>

#include "device_pool.h"
#include "weft/runtime.h"

namespace weft::runtime {

// Records `message` as the calling thread's last error (newlines become "; ", so that weft_fail
// prints one line) and returns `status`.
weft_status SetError(weft_status status, std::string message);

// "0 bytes", "1 KiB", "78.8 GiB", "1 PiB": a size for messages, one decimal at most.
std::string BytesText(std::uint64_t bytes);

// ---- Calls of a shared library's exports (program.cpp's weft_library_call, docs/python.md) ----

// While a library call runs on this thread, weft_fail throws this instead of ending the process,
// and weft_library_call returns it as its status and message. The generated host code between the
// two has unwind tables (codegen/host.cpp) and holds nothing to clean up: tensors are the runtime's.
struct CallFailure {
  weft_status status;
  std::string message;
};
void SetInCall(bool in_call);
// The status the next weft_fail of a library call reports (weft_check sets the failed call's;
// weft_program_check_failed WEFT_ERROR_SHAPE); WEFT_ERROR_LAUNCH when nothing set one.
void SetFailingStatus(weft_status status);

// The CUDA stream (a CUstream; null: the default stream) that the calling thread's launches, memsets
// and event records go to, and with `stream_ordered` its allocations and frees too
// (cuMemAllocAsync/cuMemFreeAsync from the device's default pool, which SetStream tells to keep freed
// memory for reuse). A library call sets the caller's stream for its duration.
void SetStream(void* stream, bool stream_ordered);
void* CurrentStream();

// ---- Tensors' device memory (docs/runtime.md, "Device memory") ----

// At least `bytes` of device memory for a tensor of a program or a library call, on the calling
// thread's stream: on the legacy default stream from the pool (device_pool.h: no driver call in a
// steady state), on a library call's own stream stream-ordered from the device's default pool.
// `capacity` receives the block's size (what a later value of the buffer plan may take over).
// Out of memory empties the pool and tries once more before it fails.
weft_status AllocateTensor(std::uint64_t bytes, weft_device_ptr* ptr, std::uint64_t* capacity);
// Gives back a block AllocateTensor made, in the order of `stream` (the one it was made on): to the
// pool on the legacy default stream (a later allocation takes it, the stream ordering its writes
// after every use queued before), else cuMemFreeAsync. A DLPack deleter's free, a library call's for
// its intermediates, weft_program_end's.
weft_status FreeOnStream(weft_device_ptr ptr, void* stream);
// Frees every block the pool keeps (weft_program_end; weft_shutdown does it too).
void TrimPool();
DevicePool::Stats PoolStats();

// Holds the calling thread's stream (cuStreamWaitValue32 on a flag in page-locked memory) until
// ReleaseStream: what is queued meanwhile then runs back to back. A `time` interval's start event
// and its first launch (program.cpp): the launch's latency, the host's call and the driver's
// submission, is then not inside the interval. False, holding nothing, where the driver cannot.
bool HoldStream();
void ReleaseStream();

// A device-to-device copy on the current stream.
weft_status CopyOnStream(weft_device_ptr dst, weft_device_ptr src, std::uint64_t bytes);
// Makes the GPU's context current on the calling thread (a library may be called from any thread).
weft_status MakeCurrent();

}  // namespace weft::runtime
