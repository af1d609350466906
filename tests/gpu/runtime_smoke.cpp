// The runtime's C API (weft/runtime.h) on a real GPU, with hand-written PTX kernels: a vector add
// on random inputs (checked exactly), a kernel that uses 200 KiB of dynamic shared memory, event
// timing, a TMA tile load through a tensor map (sm_90 and newer), and the failures: too much shared
// memory, out of memory (1 PiB), a PTX syntax error, and a kernel that faults (last: a fault leaves
// the context unusable). Uses nothing but the runtime, so it runs where neither LLVM nor Z3 is.
//
// Exit status: 0 all passed, 1 a check failed, 77 skipped (no CUDA driver or no GPU: ctest's
// SKIP_RETURN_CODE), with the reason on stdout.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "weft/runtime.h"

namespace {

int failures = 0;

void Check(bool ok, const std::string& what) {
  std::printf("%s: %s\n", ok ? "ok" : "FAIL", what.c_str());
  if (!ok) ++failures;
}

// Requires success: a failure here makes the rest meaningless.
void Must(weft_status status, const char* what) {
  if (status != WEFT_OK) {
    std::printf("FAIL: %s: %s\n", what, weft_last_error());
    std::exit(1);
  }
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// sm_80 kernels: c[i] = a[i] + b[i]; a shared-memory reversal through `n` words of dynamic shared
// memory (out[i] = 3 * (n - 1 - i) + 1); a store to a bad address.
const char kPtx[] = R"(.version 7.0
.target sm_80
.address_size 64

.visible .entry vec_add(.param .u64 a, .param .u64 b, .param .u64 c, .param .u32 n)
{
  .reg .pred %p<2>;
  .reg .b32 %r<6>;
  .reg .f32 %f<4>;
  .reg .b64 %rd<11>;
  ld.param.u64 %rd1, [a];
  ld.param.u64 %rd2, [b];
  ld.param.u64 %rd3, [c];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r5, %r2, %r3, %r4;
  setp.ge.u32 %p1, %r5, %r1;
  @%p1 bra DONE;
  cvta.to.global.u64 %rd4, %rd1;
  cvta.to.global.u64 %rd5, %rd2;
  cvta.to.global.u64 %rd6, %rd3;
  mul.wide.u32 %rd7, %r5, 4;
  add.s64 %rd8, %rd4, %rd7;
  add.s64 %rd9, %rd5, %rd7;
  add.s64 %rd10, %rd6, %rd7;
  ld.global.f32 %f1, [%rd8];
  ld.global.f32 %f2, [%rd9];
  add.rn.f32 %f3, %f1, %f2;
  st.global.f32 [%rd10], %f3;
DONE:
  ret;
}

.extern .shared .align 16 .b8 dsmem[];

.visible .entry smem_reverse(.param .u64 out, .param .u32 n)
{
  .reg .pred %p<3>;
  .reg .b32 %r<12>;
  .reg .b64 %rd<5>;
  ld.param.u64 %rd1, [out];
  cvta.to.global.u64 %rd1, %rd1;
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %tid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, dsmem;
  mov.u32 %r5, %r2;
FILL:
  setp.ge.u32 %p1, %r5, %r1;
  @%p1 bra FILLED;
  mad.lo.u32 %r6, %r5, 3, 1;
  shl.b32 %r7, %r5, 2;
  add.u32 %r7, %r4, %r7;
  st.shared.u32 [%r7], %r6;
  add.u32 %r5, %r5, %r3;
  bra FILL;
FILLED:
  bar.sync 0;
  mov.u32 %r5, %r2;
READ:
  setp.ge.u32 %p2, %r5, %r1;
  @%p2 bra DONE;
  sub.u32 %r8, %r1, 1;
  sub.u32 %r8, %r8, %r5;
  shl.b32 %r9, %r8, 2;
  add.u32 %r9, %r4, %r9;
  ld.shared.u32 %r10, [%r9];
  mul.wide.u32 %rd2, %r5, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r10;
  add.u32 %r5, %r5, %r3;
  bra READ;
DONE:
  ret;
}

.visible .entry fault(.param .u64 p)
{
  .reg .b32 %r<2>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [p];
  mov.u32 %r1, 1;
  st.global.u32 [%rd1], %r1;
  ret;
}
)";

// sm_90: one TMA tile load. Thread 0 arms an mbarrier for `bytes` and issues
// cp.async.bulk.tensor.2d at (x0, y0); all threads wait on phase 0 and copy the tile to `out`.
const char kTmaPtx[] = R"(.version 8.0
.target sm_90
.address_size 64

.visible .entry tma_tile(.param .align 128 .b8 map[128], .param .u64 out, .param .u32 x0, .param .u32 y0,
                         .param .u32 bytes)
{
  .reg .pred %p<4>;
  .reg .b32 %r<16>;
  .reg .b64 %rd<8>;
  .shared .align 128 .b8 tile[4096];
  .shared .align 8 .b64 bar;
  mov.b64 %rd1, map;
  ld.param.u64 %rd2, [out];
  cvta.to.global.u64 %rd2, %rd2;
  ld.param.u32 %r1, [x0];
  ld.param.u32 %r2, [y0];
  ld.param.u32 %r3, [bytes];
  mov.u32 %r4, %tid.x;
  mov.u32 %r5, bar;
  mov.u32 %r6, tile;
  setp.ne.u32 %p1, %r4, 0;
  @%p1 bra ISSUED;
  mbarrier.init.shared::cta.b64 [%r5], 1;
  fence.proxy.async.shared::cta;
  mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r5], %r3;
  cvta.param.u64 %rd3, %rd1;
  cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r6], [%rd3, {%r1, %r2}], [%r5];
ISSUED:
  bar.sync 0;
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r5], 0;
  @!%p2 bra WAIT;
  shr.u32 %r7, %r3, 2;
  mov.u32 %r8, %r4;
  mov.u32 %r9, %ntid.x;
COPY:
  setp.ge.u32 %p3, %r8, %r7;
  @%p3 bra DONE;
  shl.b32 %r10, %r8, 2;
  add.u32 %r11, %r6, %r10;
  ld.shared.u32 %r12, [%r11];
  mul.wide.u32 %rd4, %r8, 4;
  add.s64 %rd5, %rd2, %rd4;
  st.global.u32 [%rd5], %r12;
  add.u32 %r8, %r8, %r9;
  bra COPY;
DONE:
  ret;
}
)";

void TestVectorAdd(weft_kernel* add, float* ms_out) {
  const std::int64_t n = (1 << 22) + 3;  // not a multiple of the block
  weft_host_tensor* a = nullptr;
  weft_host_tensor* b = nullptr;
  Must(weft_host_tensor_create(&a, WEFT_DTYPE_F32, 1, &n), "host tensor a");
  Must(weft_host_tensor_create(&b, WEFT_DTYPE_F32, 1, &n), "host tensor b");
  Must(weft_random_fill(a, 0x5eed0001), "random a");
  Must(weft_random_fill(b, 0x5eed0002), "random b");
  const std::uint64_t bytes = weft_host_tensor_bytes(a);
  weft_device_ptr da = 0, db = 0, dc = 0;
  Must(weft_device_alloc(&da, bytes), "alloc a");
  Must(weft_device_alloc(&db, bytes), "alloc b");
  Must(weft_device_alloc(&dc, bytes), "alloc c");
  Must(weft_copy_to_device(da, weft_host_tensor_data(a), bytes), "copy a");
  Must(weft_copy_to_device(db, weft_host_tensor_data(b), bytes), "copy b");
  Must(weft_device_memset(dc, 0xFF, bytes), "poison c");  // NaN everywhere: an unwritten element shows
  std::uint32_t count = static_cast<std::uint32_t>(n);
  void* args[] = {&da, &db, &dc, &count};
  weft_launch_config config = {{static_cast<std::uint32_t>((n + 255) / 256), 1, 1}, {256, 1, 1}, 0};
  Must(weft_launch(add, &config, args), "launch vec_add");
  Must(weft_synchronize(), "synchronize");
  std::vector<float> c(static_cast<std::size_t>(n));
  Must(weft_copy_to_host(c.data(), dc, bytes), "copy c back");
  const float* ha = static_cast<const float*>(weft_host_tensor_data(a));
  const float* hb = static_cast<const float*>(weft_host_tensor_data(b));
  std::int64_t wrong = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const float expected = ha[i] + hb[i];
    if (std::memcmp(&c[static_cast<std::size_t>(i)], &expected, 4) != 0) ++wrong;
  }
  Check(wrong == 0, "vec_add of " + std::to_string(n) + " random f32 pairs matches the host bit for bit (" +
                        std::to_string(wrong) + " wrong)");

  // Timing: 100 launches between two events, after the warm-up above.
  float total = 0;
  Must(weft_time_launches(add, &config, args, 100, &total), "time vec_add");
  const double per_launch = total / 100.0;
  const double gbps = 3.0 * static_cast<double>(bytes) / (per_launch * 1e-3) / 1e9;
  char line[200];
  std::snprintf(line, sizeof line, "events timed 100 launches of vec_add: %.4f ms each, %.0f GB/s (read + write)",
                per_launch, gbps);
  Check(total > 0 && std::isfinite(total), line);
  *ms_out = static_cast<float>(per_launch);
  Must(weft_device_free(da), "free a");
  Must(weft_device_free(db), "free b");
  Must(weft_device_free(dc), "free c");
  weft_host_tensor_free(a);
  weft_host_tensor_free(b);
}

void TestLargeSharedMemory(weft_kernel* reverse, const weft_device_info& info) {
  const std::uint32_t shared = 200 * 1024;  // above the default 48 KiB: needs the attribute raised
  const std::uint32_t words = shared / 4;
  weft_device_ptr out = 0;
  Must(weft_device_alloc(&out, shared), "alloc out");
  Must(weft_device_memset(out, 0xFF, shared), "poison out");
  std::uint32_t n = words;
  void* args[] = {&out, &n};
  weft_launch_config config = {{1, 1, 1}, {1024, 1, 1}, shared};
  Must(weft_launch(reverse, &config, args), "launch smem_reverse with 200 KiB");
  Must(weft_synchronize(), "synchronize");
  std::vector<std::uint32_t> host(words);
  Must(weft_copy_to_host(host.data(), out, shared), "copy back");
  std::uint32_t wrong = 0;
  for (std::uint32_t i = 0; i < words; ++i) {
    if (host[i] != 3 * (words - 1 - i) + 1) ++wrong;
  }
  Check(wrong == 0, "a kernel with 200 KiB of dynamic shared memory wrote and read back all of it (" +
                        std::to_string(wrong) + " wrong)");

  config.shared_bytes = static_cast<std::uint32_t>(info.max_shared_bytes_per_block) + 16;
  weft_status status = weft_launch(reverse, &config, args);
  Check(status == WEFT_ERROR_INVALID_ARGUMENT && Contains(weft_last_error(), "allows at most"),
        std::string("more shared memory than the GPU allows is refused: ") + weft_last_error());
  Must(weft_device_free(out), "free out");
}

void TestTma(const weft_device_info& info) {
  if (info.sm_major < 9) {
    std::printf("skipped: TMA needs sm_90, this GPU is sm_%d%d\n", info.sm_major, info.sm_minor);
    return;
  }
  // A 128B-swizzled f16 map of the shape a GEMM uses: [512, 256] (rows, cols), box 64 x 64.
  weft_device_ptr big = 0;
  Must(weft_device_alloc(&big, 512 * 256 * 2), "alloc f16 tensor");
  weft_tensor_map swizzled;
  const std::uint64_t dims16[2] = {256, 512};
  const std::uint64_t strides16[1] = {256 * 2};
  const std::uint32_t box16[2] = {64, 64};
  weft_status encoded = weft_tensor_map_encode_tiled(&swizzled, WEFT_TMA_F16, 2, big, dims16, strides16, box16, nullptr,
                                                     WEFT_TMA_INTERLEAVE_NONE, WEFT_TMA_SWIZZLE_128B, WEFT_TMA_L2_128B,
                                                     WEFT_TMA_OOB_ZERO);
  Check(encoded == WEFT_OK, std::string("encoded a 128B-swizzled f16 tensor map, box 64x64") +
                                (encoded == WEFT_OK ? "" : std::string(": ") + weft_last_error()));

  // A TMA load that a kernel performs: an f32 [32, 64] tensor, the 8 x 16 tile at column 16, row 8.
  const std::uint32_t rows = 32, cols = 64;
  std::vector<float> in(rows * cols);
  for (std::uint32_t i = 0; i < rows * cols; ++i) in[i] = static_cast<float>(i) + 0.5f;
  weft_device_ptr din = 0, dout = 0;
  Must(weft_device_alloc(&din, in.size() * 4), "alloc TMA input");
  Must(weft_copy_to_device(din, in.data(), in.size() * 4), "copy TMA input");
  const std::uint32_t box_rows = 8, box_cols = 16, bytes = box_rows * box_cols * 4;
  Must(weft_device_alloc(&dout, bytes), "alloc TMA output");
  Must(weft_device_memset(dout, 0xFF, bytes), "poison TMA output");
  weft_tensor_map map;
  const std::uint64_t dims[2] = {cols, rows};
  const std::uint64_t strides[1] = {cols * 4};
  const std::uint32_t box[2] = {box_cols, box_rows};
  Must(weft_tensor_map_encode_tiled(&map, WEFT_TMA_F32, 2, din, dims, strides, box, nullptr, WEFT_TMA_INTERLEAVE_NONE,
                                    WEFT_TMA_SWIZZLE_NONE, WEFT_TMA_L2_NONE, WEFT_TMA_OOB_ZERO),
       "encode the f32 map");
  weft_module* module = nullptr;
  Must(weft_module_load(&module, kTmaPtx, sizeof kTmaPtx, "tma_tile.ptx"), "load the TMA module");
  weft_kernel* kernel = nullptr;
  Must(weft_kernel_get(&kernel, module, "tma_tile"), "get tma_tile");
  std::uint32_t x0 = 16, y0 = 8, nbytes = bytes;
  void* args[] = {&map, &dout, &x0, &y0, &nbytes};
  weft_launch_config config = {{1, 1, 1}, {128, 1, 1}, 0};
  Must(weft_launch(kernel, &config, args), "launch tma_tile");
  Must(weft_synchronize(), "synchronize tma_tile");
  std::vector<float> out(box_rows * box_cols);
  Must(weft_copy_to_host(out.data(), dout, bytes), "copy the tile back");
  int wrong = 0;
  for (std::uint32_t r = 0; r < box_rows; ++r) {
    for (std::uint32_t c = 0; c < box_cols; ++c) {
      if (out[r * box_cols + c] != in[(y0 + r) * cols + x0 + c]) ++wrong;
    }
  }
  Check(wrong == 0,
        "a kernel loaded an 8x16 f32 tile through the TMA tensor map (" + std::to_string(wrong) + " wrong)");
  weft_module_unload(module);
  Must(weft_device_free(din), "free");
  Must(weft_device_free(dout), "free");
  Must(weft_device_free(big), "free");
}

}  // namespace

int main() {
  weft_status status = weft_init();
  // No driver or no GPU: skipped. A WEFT_DEVICE that names no GPU is a mistake, so it fails.
  const bool bad_index = std::strncmp(weft_last_error(), "WEFT_DEVICE", 11) == 0;
  if ((status == WEFT_ERROR_NO_DRIVER || status == WEFT_ERROR_NO_DEVICE) && !bad_index) {
    std::printf("SKIPPED: %s\n", weft_last_error());
    return 77;
  }
  Must(status, "weft_init");
  weft_device_info info;
  Must(weft_device_get_info(&info), "device info");
  std::printf("device: GPU %d, %s, sm_%d%d, %d SMs, %.1f GiB, %d bytes of shared memory a block, driver %d.%d\n",
              info.index, info.name, info.sm_major, info.sm_minor, info.multiprocessors,
              static_cast<double>(info.total_memory) / (1 << 30), info.max_shared_bytes_per_block,
              info.driver_version / 1000, info.driver_version % 1000 / 10);

  weft_module* module = nullptr;
  Must(weft_module_load(&module, kPtx, sizeof kPtx - 1, "smoke.ptx"), "load the PTX module");
  weft_kernel* add = nullptr;
  weft_kernel* reverse = nullptr;
  weft_kernel* fault = nullptr;
  Must(weft_kernel_get(&add, module, "vec_add"), "get vec_add");
  Must(weft_kernel_get(&reverse, module, "smem_reverse"), "get smem_reverse");
  Must(weft_kernel_get(&fault, module, "fault"), "get fault");

  float ms = 0;
  TestVectorAdd(add, &ms);
  TestLargeSharedMemory(reverse, info);
  TestTma(info);

  weft_device_ptr huge = 0;
  status = weft_device_alloc(&huge, std::uint64_t{1} << 50);
  Check(status == WEFT_ERROR_OUT_OF_MEMORY && Contains(weft_last_error(), "1 PiB") &&
            Contains(weft_last_error(), "free on GPU"),
        std::string("1 PiB is out of memory: ") + weft_last_error());

  weft_module* bad = nullptr;
  const char bad_ptx[] = ".version 7.0\n.target sm_80\n.address_size 64\n.visible .entry broken() { frobnicate; }\n";
  status = weft_module_load(&bad, bad_ptx, sizeof bad_ptx, "broken.ptx");
  Check(status == WEFT_ERROR_MODULE && Contains(weft_last_error(), "broken.ptx"),
        std::string("a PTX error is reported with the JIT log: ") + weft_last_error());

  weft_kernel* missing = nullptr;
  status = weft_kernel_get(&missing, module, "nope");
  Check(status == WEFT_ERROR_MODULE, std::string("a missing kernel is named: ") + weft_last_error());

  // Last: a fault leaves the context unusable.
  weft_device_ptr bad_address = 8;
  void* args[] = {&bad_address};
  weft_launch_config one = {{1, 1, 1}, {1, 1, 1}, 0};
  Must(weft_launch(fault, &one, args), "launch fault");
  status = weft_synchronize();
  Check(status == WEFT_ERROR_LAUNCH && Contains(weft_last_error(), "kernel `fault` failed"),
        std::string("a faulting kernel is named: ") + weft_last_error());

  std::printf("%s: %d failed\n", failures == 0 ? "PASSED" : "FAILED", failures);
  return failures == 0 ? 0 : 1;
}
