// The caching allocator of device memory (runtime/src/device_pool.h) over a counting backend: a GPU of
// a fixed capacity whose allocations and frees are counted, so each test states how many times the
// pool reached the driver. Laws: a size class holds its request and wastes at most a quarter; a
// released block serves the next request of its class without the driver; Trim frees exactly the
// kept blocks; out of memory empties the pool and retries once, and a second failure is an error.
#include "device_pool.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <set>
#include <thread>
#include <vector>

namespace weft::runtime {
namespace {

// A GPU of `capacity` bytes: addresses count up from 0x1000; live bytes are tracked.
struct FakeGpu {
  std::uint64_t capacity = std::uint64_t{1} << 40;
  std::uint64_t live = 0;
  std::uint64_t next = 0x1000;
  int allocations = 0, frees = 0;
  std::set<weft_device_ptr> blocks;
  std::vector<std::uint64_t> asked;  // the sizes asked for, in order

  DevicePool::Backend Backend() {
    return DevicePool::Backend{[this](std::uint64_t bytes, DeviceBlock& block) {
                                 asked.push_back(bytes);
                                 if (live + bytes > capacity) return WEFT_ERROR_OUT_OF_MEMORY;
                                 block.ptr = next;
                                 block.bytes = bytes;
                                 next += bytes;
                                 live += bytes;
                                 ++allocations;
                                 blocks.insert(block.ptr);
                                 return WEFT_OK;
                               },
                               [this](const DeviceBlock& block) {
                                 REQUIRE(blocks.erase(block.ptr) == 1);
                                 live -= block.bytes;
                                 ++frees;
                               }};
  }
};

TEST_CASE("device pool: a size class holds its request, wastes at most a quarter, and is its own class",
          "[runtime][pool]") {
  CHECK(DevicePool::SizeClass(1) == 512);
  CHECK(DevicePool::SizeClass(512) == 512);
  CHECK(DevicePool::SizeClass(513) == 640);
  CHECK(DevicePool::SizeClass(1000) == 1024);
  CHECK(DevicePool::SizeClass(std::uint64_t{64} << 20) == std::uint64_t{64} << 20);  // 64 MiB
  CHECK(DevicePool::SizeClass((std::uint64_t{64} << 20) + 1) == std::uint64_t{80} << 20);
  std::uint64_t previous = 0;
  for (std::uint64_t bytes = 1; bytes < (std::uint64_t{1} << 41); bytes += bytes / 7 + 1) {
    const std::uint64_t c = DevicePool::SizeClass(bytes);
    INFO(bytes);
    CHECK(c >= bytes);
    CHECK(c <= std::max<std::uint64_t>(512, bytes + bytes / 4));
    CHECK(DevicePool::SizeClass(c) == c);
    CHECK(c >= previous);  // monotone
    previous = c;
  }
}

TEST_CASE("device pool: a released block serves the next request of its class, without the driver", "[runtime][pool]") {
  FakeGpu gpu;
  DevicePool pool(gpu.Backend());
  DeviceBlock block;
  // The iterations of a loop: the same tensor made and released 100 times.
  for (int i = 0; i < 100; ++i) {
    REQUIRE(pool.Allocate(1000000, block) == WEFT_OK);
    CHECK(block.bytes >= 1000000);
    CHECK(pool.Release(block.ptr));
  }
  CHECK(gpu.allocations == 1);
  CHECK(pool.stats().reuses == 99);
  // A request of the same class (1000000 and 1040000 both round to 1048576) takes the block too; one
  // of a larger class does not, nor does a smaller one take a block of a larger class.
  REQUIRE(pool.Allocate(1040000, block) == WEFT_OK);
  CHECK(gpu.allocations == 1);
  DeviceBlock larger, smaller;
  REQUIRE(pool.Allocate(1100000, larger) == WEFT_OK);
  CHECK(gpu.allocations == 2);
  pool.Release(larger.ptr);
  REQUIRE(pool.Allocate(600000, smaller) == WEFT_OK);
  CHECK(gpu.allocations == 3);
  CHECK(smaller.ptr != larger.ptr);
  // 0 bytes: the null block, no driver call.
  DeviceBlock none;
  REQUIRE(pool.Allocate(0, none) == WEFT_OK);
  CHECK(none.ptr == 0);
  CHECK(gpu.allocations == 3);
}

TEST_CASE("device pool: two live blocks are distinct, and Trim frees only the kept ones", "[runtime][pool]") {
  FakeGpu gpu;
  DevicePool pool(gpu.Backend());
  DeviceBlock a, b, c;
  REQUIRE(pool.Allocate(4096, a) == WEFT_OK);
  REQUIRE(pool.Allocate(4096, b) == WEFT_OK);
  REQUIRE(pool.Allocate(100, c) == WEFT_OK);
  CHECK(a.ptr != b.ptr);
  CHECK(pool.stats().live_blocks == 3);
  pool.Release(a.ptr);
  pool.Release(c.ptr);
  CHECK(pool.stats().kept_blocks == 2);
  pool.Trim();
  CHECK(gpu.frees == 2);
  CHECK(gpu.live == b.bytes);
  CHECK(pool.stats().kept_blocks == 0);
  CHECK(pool.stats().live_blocks == 1);
  pool.Release(b.ptr);
  pool.Trim();
  CHECK(gpu.live == 0);
  CHECK(gpu.blocks.empty());
}

TEST_CASE("device pool: only its own blocks are taken back, and none after Forget", "[runtime][pool]") {
  FakeGpu gpu;
  DevicePool pool(gpu.Backend());
  DeviceBlock a;
  REQUIRE(pool.Allocate(4096, a) == WEFT_OK);
  CHECK_FALSE(pool.Release(a.ptr + 1));
  CHECK_FALSE(pool.Release(0x42));
  CHECK(pool.Release(a.ptr));
  CHECK_FALSE(pool.Release(a.ptr));  // twice
  DeviceBlock b;
  REQUIRE(pool.Allocate(4096, b) == WEFT_OK);
  pool.Forget();  // the driver shut down: b's context is gone
  CHECK_FALSE(pool.Release(b.ptr));
  CHECK(pool.stats().kept_blocks == 0);
  CHECK(gpu.frees == 0);  // Forget never calls the driver
}

TEST_CASE("device pool: out of memory empties the pool and asks once more, for the request exactly",
          "[runtime][pool]") {
  FakeGpu gpu;
  gpu.capacity = 12000;
  DevicePool pool(gpu.Backend());
  DeviceBlock a, b;
  REQUIRE(pool.Allocate(6000, a) == WEFT_OK);  // class 6144
  pool.Release(a.ptr);                         // kept: 6144 of the 12000 bytes
  REQUIRE(pool.Allocate(3900, b) == WEFT_OK);  // class 4096 fits beside it
  CHECK(gpu.allocations == 2);
  pool.Release(b.ptr);
  DeviceBlock c;
  // 8000 rounds to 8192: the driver refuses while 10240 bytes are kept; the pool frees them and the
  // driver gives 8000.
  REQUIRE(pool.Allocate(8000, c) == WEFT_OK);
  CHECK(c.bytes == 8000);
  CHECK(gpu.asked.back() == 8000);
  CHECK(gpu.frees == 2);
  CHECK(pool.stats().out_of_memory_retries == 1);
  CHECK(pool.stats().kept_blocks == 0);
  // Too large even for an empty pool: an error, the null block, and the pool still works.
  DeviceBlock d;
  CHECK(pool.Allocate(20000, d) == WEFT_ERROR_OUT_OF_MEMORY);
  CHECK(d.ptr == 0);
  CHECK(pool.stats().out_of_memory_retries == 2);
  CHECK(pool.Release(c.ptr));
  REQUIRE(pool.Allocate(8000, d) == WEFT_OK);
  CHECK(d.ptr == c.ptr);
}

TEST_CASE("device pool: above its limit a released block goes back to the driver", "[runtime][pool]") {
  FakeGpu gpu;
  DevicePool pool(gpu.Backend());
  pool.SetLimit(8192);
  DeviceBlock a, b, c;
  REQUIRE(pool.Allocate(4096, a) == WEFT_OK);
  REQUIRE(pool.Allocate(4096, b) == WEFT_OK);
  REQUIRE(pool.Allocate(4096, c) == WEFT_OK);
  pool.Release(a.ptr);
  pool.Release(b.ptr);
  pool.Release(c.ptr);
  CHECK(pool.stats().kept_bytes == 8192);
  CHECK(gpu.frees == 1);
}

TEST_CASE("device pool: blocks released on other threads are kept and handed out once each", "[runtime][pool]") {
  FakeGpu gpu;
  DevicePool pool(gpu.Backend());
  std::vector<DeviceBlock> blocks(64);
  for (DeviceBlock& b : blocks) REQUIRE(pool.Allocate(4096, b) == WEFT_OK);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (std::size_t i = static_cast<std::size_t>(t); i < blocks.size(); i += 4) pool.Release(blocks[i].ptr);
    });
  for (std::thread& t : threads) t.join();
  CHECK(pool.stats().kept_blocks == 64);
  std::set<weft_device_ptr> again;
  for (int i = 0; i < 64; ++i) {
    DeviceBlock b;
    REQUIRE(pool.Allocate(4096, b) == WEFT_OK);
    again.insert(b.ptr);
  }
  CHECK(again.size() == 64);
  CHECK(gpu.allocations == 64);
}

}  // namespace
}  // namespace weft::runtime
