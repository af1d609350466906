// Device code generation on every kernel the simulator runs (kernels.h's files), on sm_80 and sm_90a:
// each synthesized plan generates, and its PTX has the instructions the plan chose (mma.sync,
// ldmatrix and 16-byte cp.async on sm_80; wgmma, TMA and mbarrier waits on sm_90a); the launch
// contract's parts (tensor maps, shared memory); what codegen cannot emit is a diagnostic.
// codegen_ptxas (ptxas_check.cpp) assembles every one of these PTX files.
#include <catch2/catch.hpp>

#include "check/check.h"
#include "kernels.h"
#include "syntax/parser.h"
#include "synth/synthesize.h"
#include "tile/lower.h"

namespace weft::codegen::testing {
namespace {

bool Has(const std::string& ptx, const std::string& what) {
  return ptx.find(what) != std::string::npos;
}

TEST_CASE("codegen: every synthesized kernel generates with the plan's instructions") {
  int generated = 0;
  for (synth::Target target : {synth::Target::Sm80, synth::Target::Sm90a}) {
    for (const std::string& file : KernelFiles()) {
      for (const Emitted& e : EmitFile(file, target)) {
        if (!e.synthesized) continue;
        INFO(e.file << ": " << e.kernel << " on " << synth::Spelling(target) << "\n" << e.diagnostics);
        REQUIRE(e.device.has_value());
        ++generated;
        const std::string& ptx = e.device->ptx;
        CHECK(Has(ptx, ".entry " + e.kernel + "("));
        CHECK(Has(ptx, ".maxntid " + std::to_string(e.device->threads) + ", 1, 1"));
        CHECK(Has(ptx, target == synth::Target::Sm80 ? ".target sm_80" : ".target sm_90a"));
        if (e.has_mma && target == synth::Target::Sm80) {
          CHECK(Has(ptx, "mma.sync.aligned.m16n8k16.row.col.f32"));
          CHECK(Has(ptx, "ldmatrix.sync.aligned.m8n8.x4"));
          CHECK(Has(ptx, "cp.async.cg.shared.global"));
          CHECK(Has(ptx, "cp.async.wait_group"));
          CHECK(e.device->tensor_maps.empty());
        }
        if (e.has_mma && target == synth::Target::Sm90a) {
          CHECK(Has(ptx, "wgmma.mma_async.sync.aligned.m64n"));
          CHECK(Has(ptx, "wgmma.fence.sync.aligned"));
          CHECK(Has(ptx, "wgmma.commit_group.sync.aligned"));
          CHECK(Has(ptx, "wgmma.wait_group.sync.aligned 0"));
        }
        if (e.tma_copies > 0) {
          CHECK(Has(ptx, "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"));
          CHECK(Has(ptx, "mbarrier.arrive.expect_tx.shared::cta.b64"));
          CHECK(Has(ptx, "mbarrier.try_wait.parity.shared::cta.b64"));
          CHECK(Has(ptx, "mbarrier.init.shared"));
          // Each map a 128-byte parameter aligned to 64, read in place (a grid constant).
          CHECK(Has(ptx, ".param .align 64 .b8 " + e.kernel + "_param_"));
          CHECK(Has(ptx, "cvta.param.u64"));
          CHECK_FALSE(e.device->tensor_maps.empty());
        }
        if (e.has_reduce) CHECK(Has(ptx, "shfl.sync.bfly.b32"));
      }
    }
  }
  CHECK(generated >= 20);
}

TEST_CASE("codegen: sm_90a gemm takes one tensor map per operand with 128-byte swizzled boxes") {
  auto kernels = EmitFile("stdlib/gemm.weft", synth::Target::Sm90a);
  const Emitted* gemm = nullptr;
  for (const Emitted& e : kernels)
    if (e.kernel == "gemm_bf16") gemm = &e;
  REQUIRE(gemm);
  REQUIRE(gemm->device.has_value());
  const DeviceKernel& d = *gemm->device;
  REQUIRE(d.tensor_maps.size() == 2);
  CHECK(d.tensor_maps[0].param == 0);  // a: 128 rows x 64 columns in one box
  CHECK(d.tensor_maps[0].box_cols == 64);
  CHECK(d.tensor_maps[0].box_rows == 128);
  CHECK(d.tensor_maps[1].param == 1);  // b: 64 x 256 in four boxes of 64 columns
  CHECK(d.tensor_maps[1].box_cols == 64);
  CHECK(d.tensor_maps[1].box_rows == 64);
  for (const TensorMapSpec& m : d.tensor_maps) CHECK(m.swizzle == layout::SwizzleMode::k128B);
  // The plan's tiles, then one mbarrier per stage and one for copies in place.
  CHECK(d.shared_bytes >= 196608 + 5 * 8);
  CHECK(d.sizes.size() == 3);
  // Parameters: a, b, c, m, k, n, then the two maps.
  CHECK(Has(d.ptx, ".param .align 64 .b8 gemm_bf16_param_6[128]"));
  CHECK(Has(d.ptx, ".param .align 64 .b8 gemm_bf16_param_7[128]"));
  CHECK(Has(d.ptx, "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16"));
  // The plan's descriptors (explain: A LBO 16 SBO 1024, B LBO 8192 SBO 1024, both 128B) with the
  // start address or-ed in, and each stage's 16384 + 32768 bytes armed on its mbarrier.
  layout::GmmaDescriptor a{1, 16, 1024}, b{1, 8192, 1024};
  CHECK(Has(d.llvm_ir, "i64 " + std::to_string(static_cast<std::int64_t>(a.Encode(0)))));
  CHECK(Has(d.llvm_ir, "i64 " + std::to_string(static_cast<std::int64_t>(b.Encode(0)))));
  CHECK(Has(d.llvm_ir, "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;\", \"r,r,~{memory}\"(i32 %"));
  CHECK(Has(d.llvm_ir, ", i32 49152)"));
}

TEST_CASE("codegen: an instruction that cannot do its op's work is E0750 at the op and not a crash") {
  SourceManager sources;
  Diagnostics diagnostics;
  FileId id = sources.Add("bad.weft", R"(kernel scale (x: f32[m, 64]) (out y: f32[m, 64])
    where m % 64 == 0
    grid (m / 64) threads 128 =
  let i = block_idx in
  store (tile y [64, 64] (i, 0)) (regs (shared (tile x [64, 64] (i, 0))) * 2.0)
)");
  syntax::Ast ast = syntax::Parse(sources, id, diagnostics);
  check::CheckOptions options;
  options.stdlib_dir = WEFT_SOURCE_DIR "/stdlib";
  check::CheckResult result = check::Check(sources, ast, diagnostics, options);
  REQUIRE_FALSE(diagnostics.has_errors());
  auto kernel = tile::Lower(result.module, result.vars, result.module.defs().back());
  REQUIRE(kernel.ok());
  auto plan = synth::Synthesize(*kernel, synth::Target::Sm80);
  REQUIRE(plan.ok());
  for (synth::OpChoice& op : plan->ops)  // the copy and the load: a shuffle cannot move their data
    if (synth::IsCpAsync(op.instruction.kind) || op.instruction.kind == synth::InstructionKind::kLdShared)
      op.instruction = synth::Instruction::ShflBfly(5);
  auto device = EmitKernel(*kernel, *plan, schedule::Build(*kernel, *plan, schedule::BuildOptions()), sources);
  REQUIRE_FALSE(device.ok());
  REQUIRE(device.error().size() == 1);
  CHECK(device.error()[0].kind == DiagnosticKind::CodegenUnsupported);
  CHECK(device.error()[0].message.find("`shfl.bfly x5` copies into shared memory") != std::string::npos);
}

TEST_CASE("codegen: a plan of another kernel is refused") {
  SourceManager sources;
  tile::Kernel empty;
  empty.name = "empty";
  synth::Plan plan;
  plan.values.resize(3);
  auto device = EmitKernel(empty, plan, schedule::Build(empty, plan, schedule::BuildOptions()), sources);
  REQUIRE_FALSE(device.ok());
  CHECK(device.error()[0].kind == DiagnosticKind::CodegenUnsupported);
}

}  // namespace
}  // namespace weft::codegen::testing
