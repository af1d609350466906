// TMA-store epilogues (docs/codegen.md, "Epilogues through shared memory"): which stores go through
// shared memory and TMA, the tensor map each gets (DeviceKernel::tensor_maps, which the host
// encodes), and schedule::LoweringOptions::tma_store off.
#include <catch2/catch.hpp>

#include <algorithm>

#include "kernels.h"

namespace weft::codegen::testing {
namespace {

const Emitted& Find(const std::vector<Emitted>& all, const std::string& kernel) {
  auto it = std::find_if(all.begin(), all.end(), [&](const Emitted& e) { return e.kernel == kernel; });
  REQUIRE(it != all.end());
  REQUIRE(it->device.has_value());
  return *it;
}

bool Has(const std::string& ptx, const std::string& what) {
  return ptx.find(what) != std::string::npos;
}

// The tensor maps of parameter `param`.
std::vector<TensorMapSpec> MapsOf(const DeviceKernel& d, int param) {
  std::vector<TensorMapSpec> out;
  for (const TensorMapSpec& m : d.tensor_maps)
    if (m.param == param) out.push_back(m);
  return out;
}

TEST_CASE("codegen: a bf16 gemm stores its tile through shared memory and TMA") {
  auto gemm = EmitFile("stdlib/gemm.weft", synth::Target::Sm90a);
  const DeviceKernel& d = *Find(gemm, "gemm_bf16_bf16").device;
  // c (parameter 2): boxes of 64 columns (128 bytes) by the tile's 128 rows, swizzled 128B.
  auto maps = MapsOf(d, 2);
  REQUIRE(maps.size() == 1);
  CHECK(maps[0].box_cols == 64);
  CHECK(maps[0].box_rows == 128);
  CHECK(maps[0].swizzle == layout::SwizzleMode::k128B);
  CHECK(d.tensor_maps.size() == 3);  // a's, b's and c's
  CHECK(Has(d.ptx, "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group"));
  CHECK(Has(d.ptx, "cp.async.bulk.wait_group.read 0;"));
  CHECK_FALSE(Has(d.ptx, "st.global"));
  // f16 outputs alike; f32 outputs (8-byte stores, whole sectors) keep the threads' stores.
  CHECK(MapsOf(*Find(gemm, "gemm_f16_f16").device, 2).size() == 1);
  const DeviceKernel& f32 = *Find(gemm, "gemm_bf16").device;
  CHECK(MapsOf(f32, 2).empty());
  CHECK(Has(f32.ptx, "st.global.v2.f32"));
}

TEST_CASE("codegen: warp-specialized attention stores through TMA among its consumers") {
  auto all = EmitFile("stdlib/attention.weft", synth::Target::Sm90a);
  const DeviceKernel& d = *Find(all, "attention_d128_bf16").device;
  auto maps = MapsOf(d, 4);  // o
  REQUIRE(maps.size() == 1);
  CHECK(maps[0].box_cols == 64);
  CHECK(maps[0].box_rows == 128);
  CHECK(d.threads == 384);
  // The consumers' barrier, never the producer's (bar.sync 0 would wait for it forever).
  CHECK(Has(d.ptx, "barrier.sync \t1, 256;"));
  CHECK(Has(d.ptx, "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group"));
  CHECK_FALSE(Has(d.ptx, "st.global"));
}

TEST_CASE("codegen: with schedule::LoweringOptions::tma_store off, and on sm_80, each thread stores its own elements") {
  schedule::LoweringOptions off;
  off.tma_store = false;
  auto gemm = EmitFile("stdlib/gemm.weft", synth::Target::Sm90a, off);
  const DeviceKernel& d = *Find(gemm, "gemm_bf16_bf16").device;
  CHECK(MapsOf(d, 2).empty());
  CHECK(Has(d.ptx, "st.global.b32"));
  CHECK_FALSE(Has(d.ptx, "bulk_group"));
  auto sm80 = EmitFile("stdlib/gemm.weft", synth::Target::Sm80);
  CHECK_FALSE(Has(Find(sm80, "gemm_bf16_bf16").device->ptx, "cp.async.bulk"));
}

}  // namespace
}  // namespace weft::codegen::testing
