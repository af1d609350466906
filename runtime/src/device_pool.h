// A caching allocator of device memory (docs/runtime.md, "Device memory"): blocks that a program or
// a library call no longer needs are kept by size class and handed out again, so that work repeated
// in a steady state (the calls of a library, a program's values whose memory its buffer plan does
// not pass on) allocates nothing from the driver. How it works:
//
// 1. A request of `bytes` is rounded up to its size class: 512 bytes at least, then four classes per
//    power of two (640, 768, 896, 1024, 1280, ...), so a block is at most a quarter larger than asked.
// 2. Allocate hands out a kept block of at least `bytes` and at most the class; otherwise it asks the
//    driver (the Backend) for a block of the class.
// 3. When the driver is out of memory, the pool is emptied (every kept block freed) and the driver
//    asked once more, for `bytes` exactly; a second failure is the caller's error, with the driver's
//    message (which says what was asked and what is free).
// 4. Release takes a block back: kept, unless the kept blocks would exceed the limit, then freed.
//    Only blocks the pool handed out are taken back; Forget (the driver shut down) makes it ignore
//    every block handed out before.
// 5. Trim frees every kept block (a program's end, weft_shutdown, step 3).
//
// The pool knows no streams: its caller keeps it to one, whose order puts a block's next use after
// every use queued before its release (runtime.cpp: the legacy default stream). Thread-safe: DLPack
// deleters release blocks on any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <unordered_map>

#include "weft/runtime.h"

namespace weft::runtime {

struct DeviceBlock {
  weft_device_ptr ptr = 0;
  std::uint64_t bytes = 0;      // the block's size: its class, or the request after an out-of-memory
  bool stream_ordered = false;  // the backend's: how it was allocated, so how to free it
};

class DevicePool {
 public:
  struct Backend {
    // A new block of `bytes` (> 0) into `block`; WEFT_ERROR_OUT_OF_MEMORY when the GPU has no room.
    std::function<weft_status(std::uint64_t bytes, DeviceBlock& block)> allocate;
    std::function<void(const DeviceBlock& block)> free;
  };

  struct Stats {
    std::uint64_t driver_allocations = 0;  // blocks the backend gave
    std::uint64_t driver_frees = 0;        // blocks given back to it
    std::uint64_t reuses = 0;              // requests served by a kept block
    std::uint64_t out_of_memory_retries = 0;
    std::uint64_t kept_blocks = 0, kept_bytes = 0;
    std::uint64_t live_blocks = 0, live_bytes = 0;  // handed out and not released
  };

  explicit DevicePool(Backend backend) : backend_(std::move(backend)) {}
  DevicePool(const DevicePool&) = delete;
  DevicePool& operator=(const DevicePool&) = delete;

  // The size class of a request (step 1).
  // @post bytes <= SizeClass(bytes) <= max(512, bytes + bytes / 4); SizeClass(SizeClass(b)) == SizeClass(b)
  static std::uint64_t SizeClass(std::uint64_t bytes);

  // A block of at least `bytes` (steps 2 and 3); 0 bytes: the null block, no driver call.
  // @post on success block.bytes >= bytes; on failure block is the null block.
  weft_status Allocate(std::uint64_t bytes, DeviceBlock& block);
  // Takes back a block Allocate gave (step 4). False, and nothing done, for any other address.
  bool Release(weft_device_ptr ptr);
  // Frees every kept block (step 5).
  void Trim();
  // Forgets every block, kept or live, without calling the driver (which is gone): a block released
  // afterwards is not taken back.
  void Forget();
  // The most bytes kept at once (step 4); no limit until set.
  void SetLimit(std::uint64_t kept_bytes);
  Stats stats() const;

 private:
  void TrimLocked();

  Backend backend_;
  mutable std::mutex mutex_;
  std::multimap<std::uint64_t, DeviceBlock> kept_;         // by size
  std::unordered_map<weft_device_ptr, DeviceBlock> live_;  // handed out, by address
  std::uint64_t limit_ = ~std::uint64_t{0};
  Stats stats_;
};

}  // namespace weft::runtime
