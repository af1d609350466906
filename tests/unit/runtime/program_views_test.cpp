// Kernel launches whose TMA maps read tensors in place through views (weft_program_launch_views,
// program.cpp), on the fake driver (fake_cuda.cpp) at sm_90, which records its
// cuTensorMapEncodeTiled calls (weft_fake_cuda_last_map): a dense map (rank 0) is the tensor's 2-D
// map {cols, rows}; a view's map (rank 2 to 5) has the view's dims and element strides in bytes, at
// the address of its first element; a map is encoded again only when its address, dims or strides
// change; and a view's map launched without a layout is the launch's error.
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "fake_driver.h"
#include "weft/library.h"
#include "weft/runtime.h"

namespace {

// The fake driver as a Hopper GPU (TMA maps need sm_90), started.
struct FakeHopper : weft::testing::FakeDriver {
  FakeHopper() : FakeDriver("90") {}
};

// The fake driver's count of cuTensorMapEncodeTiled calls, and its last call's arguments (the dims
// and box `rank` of them, the byte strides rank - 1).
struct EncodeCall {
  unsigned long long calls = 0, rank = 0, address = 0;
  std::vector<unsigned long long> dims, strides, box;
};

EncodeCall LastEncode() {
  unsigned long long c[17];
  weft::testing::ReadFake("weft_fake_cuda_last_map", c);
  const std::size_t rank = static_cast<std::size_t>(c[1]);  // 0 before the first call
  const std::size_t strides = rank > 0 ? rank - 1 : 0;
  return {c[0], c[1], c[2], {c + 3, c + 3 + rank}, {c + 8, c + 8 + strides}, {c + 12, c + 12 + rank}};
}

using Numbers = std::vector<unsigned long long>;

// A kernel `noop_views` (the fake runs nothing for a `noop_` entry) with two tensor parameters and
// two maps: map 0 dense over tensor 1, map 1 over tensor 0 through a 3-d view. Each test case keeps
// its own static copy: a descriptor's `loaded` is the runtime's for the life of the process.
const char kPtx[] = ".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry noop_views() { ret; }\n";
const weft_program_tensor_map kMaps[] = {
    {.tensor = 1, .box_cols = 64, .box_rows = 128, .swizzle = WEFT_TMA_SWIZZLE_128B, .rank = 0},
    {.tensor = 0, .box_cols = 64, .box_rows = 32, .swizzle = WEFT_TMA_SWIZZLE_128B, .rank = 3},
};

weft_program_kernel ViewsKernel() {
  weft_program_kernel kernel{};
  kernel.name = kernel.entry = "noop_views";
  kernel.ptx = kPtx;
  kernel.ptx_size = sizeof kPtx - 1;
  kernel.threads = 128;
  kernel.tensor_count = 2;
  kernel.map_count = 2;
  kernel.maps = kMaps;
  return kernel;
}

const std::int64_t kGrid[] = {1, 1, 1};
const std::int64_t kWeightsShape[] = {256, 512};
// [s, 4096] activations; the views below read [32, 256, 128] of them from element 1024 on, inside
// its 264 * 4096 elements (1024 + 31 * 32768 + 255 * 128 + 127 < 264 * 4096).
const std::int64_t kActivationsShape[] = {264, 4096};

weft_tensor* Bf16(const std::int64_t (&shape)[2]) {
  return weft_program_out(WEFT_DTYPE_BF16, 2, shape, nullptr);
}

// An export `views : () -> ()` whose body launches `noop_views` without the views' layouts.
void ViewWithoutLayoutBody() {
  static weft_program_kernel kernel = ViewsKernel();
  weft_tensor* tensors[] = {Bf16(kActivationsShape), Bf16(kWeightsShape)};
  weft_program_launch(&kernel, kGrid, tensors, nullptr, nullptr);
}

const weft_library_export kViewWithoutLayout = {
    "views", "views : () -> ()", "sm_90a", 1, 0, nullptr, nullptr, nullptr, nullptr, 0, nullptr, ViewWithoutLayoutBody};

}  // namespace

TEST_CASE("program views: a view's map is its dims and strides at its offset, encoded again only when they change",
          "[runtime][views]") {
  FakeHopper gpu;
  static char name[] = "program_views_test";
  static char* argv[] = {name, nullptr};
  weft_program_start(1, argv, "sm_90a", 1);
  static weft_program_kernel kernel = ViewsKernel();
  weft_tensor* tensors[] = {Bf16(kActivationsShape), Bf16(kWeightsShape)};
  weft_program_view views[2] = {};
  views[0] = {0, {128, 256, 32, 1, 1}, {1, 128, 32768, 0, 0}};
  const unsigned long long before = LastEncode().calls;

  // The first launch encodes both maps, the view's last: at offset 0, the tensor's own address.
  weft_program_launch_views(&kernel, kGrid, tensors, nullptr, nullptr, views);
  const EncodeCall first = LastEncode();
  CHECK(first.calls == before + 2);
  CHECK(first.rank == 3);
  CHECK(first.address != 0);
  CHECK(first.address % 16 == 0);
  CHECK(first.dims == Numbers{128, 256, 32});
  CHECK(first.strides == Numbers{256, 65536});  // bf16: 128 and 32768 elements
  CHECK(first.box == Numbers{64, 32, 1});

  // At offset 1024 the view's map moves 2048 bytes on, its dims and strides unchanged; the dense
  // map is not encoded again.
  views[0].offset = 1024;
  weft_program_launch_views(&kernel, kGrid, tensors, nullptr, nullptr, views);
  const EncodeCall moved = LastEncode();
  CHECK(moved.calls == before + 3);
  CHECK(moved.rank == 3);
  CHECK(moved.address == first.address + 1024 * 2);
  CHECK(moved.dims == Numbers{128, 256, 32});
  CHECK(moved.strides == Numbers{256, 65536});
  CHECK(moved.box == Numbers{64, 32, 1});

  // The same launch again takes both maps from the cache.
  weft_program_launch_views(&kernel, kGrid, tensors, nullptr, nullptr, views);
  CHECK(LastEncode().calls == before + 3);

  // Another tensor 1: only the dense map, {cols, rows} with a row's bytes as its stride.
  tensors[1] = Bf16(kWeightsShape);
  weft_program_launch_views(&kernel, kGrid, tensors, nullptr, nullptr, views);
  const EncodeCall dense = LastEncode();
  CHECK(dense.calls == before + 4);
  CHECK(dense.rank == 2);
  CHECK(dense.address % 16 == 0);
  CHECK(dense.dims == Numbers{512, 256});
  CHECK(dense.strides == Numbers{1024});
  CHECK(dense.box == Numbers{64, 128});

  // Other dims and strides at the same offset: the view's map again.
  views[0] = {1024, {128, 256, 16, 1, 1}, {1, 128, 65536, 0, 0}};
  weft_program_launch_views(&kernel, kGrid, tensors, nullptr, nullptr, views);
  const EncodeCall strided = LastEncode();
  CHECK(strided.calls == before + 5);
  CHECK(strided.rank == 3);
  CHECK(strided.address == first.address + 1024 * 2);
  CHECK(strided.dims == Numbers{128, 256, 16});
  CHECK(strided.strides == Numbers{256, 131072});
  weft_program_launch_views(&kernel, kGrid, tensors, nullptr, nullptr, views);
  CHECK(LastEncode().calls == before + 5);
  CHECK(weft_program_end() == 0);
}

TEST_CASE("program views: a view's map launched without its layout is the launch's error", "[runtime][views]") {
  FakeHopper gpu;
  CHECK(weft_library_call(&kViewWithoutLayout, nullptr, nullptr, WEFT_RESULTS_HOST, nullptr) == WEFT_ERROR_LAUNCH);
  CHECK(std::string(weft_last_error()) ==
        "`noop_views`: map 1 reads a view, and the launch gives no layout (a compiler bug)");
}
