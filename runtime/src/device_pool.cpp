// The caching allocator of device memory; device_pool.h says how it works.
#include "device_pool.h"

#include <bit>

namespace weft::runtime {

namespace {

constexpr std::uint64_t kSmallestBlock = 512;
constexpr std::uint64_t kLargestRounded = std::uint64_t{1} << 62;  // above it, a request is its own class

}  // namespace

std::uint64_t DevicePool::SizeClass(std::uint64_t bytes) {
  if (bytes <= kSmallestBlock) return kSmallestBlock;
  if (bytes > kLargestRounded) return bytes;
  const std::uint64_t step = std::bit_floor(bytes) / 4;
  return (bytes + step - 1) / step * step;
}

weft_status DevicePool::Allocate(std::uint64_t bytes, DeviceBlock& block) {
  block = DeviceBlock{};
  if (bytes == 0) return WEFT_OK;
  const std::uint64_t size_class = SizeClass(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  // 2. The smallest kept block that holds `bytes`, if it is not of a larger class.
  auto kept = kept_.lower_bound(bytes);
  if (kept != kept_.end() && kept->first <= size_class) {
    block = kept->second;
    kept_.erase(kept);
    stats_.kept_blocks -= 1;
    stats_.kept_bytes -= block.bytes;
    stats_.reuses += 1;
  } else {
    DeviceBlock fresh;
    weft_status status = backend_.allocate(size_class, fresh);
    if (status == WEFT_ERROR_OUT_OF_MEMORY) {
      // 3. What the pool keeps may be what the GPU lacks: empty it, and ask for no more than needed.
      stats_.out_of_memory_retries += 1;
      TrimLocked();
      fresh = DeviceBlock{};
      status = backend_.allocate(bytes, fresh);
    }
    if (status != WEFT_OK) return status;
    stats_.driver_allocations += 1;
    block = fresh;
  }
  live_[block.ptr] = block;
  stats_.live_blocks += 1;
  stats_.live_bytes += block.bytes;
  return WEFT_OK;
}

bool DevicePool::Release(weft_device_ptr ptr) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = live_.find(ptr);
  if (it == live_.end()) return false;
  DeviceBlock block = it->second;
  live_.erase(it);
  stats_.live_blocks -= 1;
  stats_.live_bytes -= block.bytes;
  if (stats_.kept_bytes + block.bytes > limit_) {
    backend_.free(block);
    stats_.driver_frees += 1;
    return true;
  }
  kept_.emplace(block.bytes, block);
  stats_.kept_blocks += 1;
  stats_.kept_bytes += block.bytes;
  return true;
}

void DevicePool::Trim() {
  std::lock_guard<std::mutex> lock(mutex_);
  TrimLocked();
}

void DevicePool::TrimLocked() {
  for (const auto& [bytes, block] : kept_) backend_.free(block);
  stats_.driver_frees += kept_.size();
  kept_.clear();
  stats_.kept_blocks = stats_.kept_bytes = 0;
}

void DevicePool::Forget() {
  std::lock_guard<std::mutex> lock(mutex_);
  kept_.clear();
  live_.clear();
  stats_.kept_blocks = stats_.kept_bytes = stats_.live_blocks = stats_.live_bytes = 0;
}

void DevicePool::SetLimit(std::uint64_t kept_bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  limit_ = kept_bytes;
}

DevicePool::Stats DevicePool::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace weft::runtime
