// Warp specialization (docs/codegen.md, "Warp specialization"): which sm_90a kernels get a producer
// warpgroup, what their PTX holds (setmaxnreg, the empty barriers' arrivals, named barriers among the
// consumers only), and the barrier protocol of every ring as emitted (DeviceKernel::protocols), which
// EmitKernel checks for deadlock on every kernel: here every kernel of kernels.h's files, both
// targets.
#include <catch2/catch.hpp>

#include <algorithm>

#include "kernels.h"
#include "schedule/protocol.h"

namespace weft::codegen::testing {
namespace {

bool Has(const std::string& ptx, const std::string& what) {
  return ptx.find(what) != std::string::npos;
}

const Emitted& Find(const std::vector<Emitted>& all, const std::string& kernel) {
  auto it = std::find_if(all.begin(), all.end(), [&](const Emitted& e) { return e.kernel == kernel; });
  REQUIRE(it != all.end());
  REQUIRE(it->device.has_value());
  return *it;
}

TEST_CASE("codegen: stdlib attention_d128 on sm_90a has a producer warpgroup") {
  auto all = EmitFile("stdlib/attention.weft", synth::Target::Sm90a);
  const Emitted& e = Find(all, "attention_d128");
  const DeviceKernel& d = *e.device;
  const std::string& ptx = d.ptx;
  CHECK(d.threads == 256 + 128);  // two consumer warpgroups and the producer's
  CHECK(Has(ptx, ".maxntid 384, 1, 1"));
  CHECK(Has(ptx, "setmaxnreg.dec.sync.aligned.u32 24;"));
  CHECK(Has(ptx, "setmaxnreg.inc.sync.aligned.u32 240;"));
  CHECK(Has(ptx, "mbarrier.arrive.shared.b64"));  // a consumer warp releases its slot
  CHECK(Has(ptx, "bar.warp.sync"));
  CHECK(Has(ptx, "barrier.sync \t1, 256;"));  // the consumers' barrier, not the producer's
  CHECK(Has(ptx, "cvt.rn.bf16x2.f32"));       // P packed for P V in one conversion a pair
  CHECK(Has(ptx, "bar.arrive"));              // ping-pong by default
  REQUIRE(d.protocols.size() == 1);
  const schedule::Protocol& p = d.protocols[0];
  CHECK(p.name == "warp-specialized");
  REQUIRE(p.roles.size() == 3);  // producer, two consumer warpgroups
  CHECK(p.roles[0].name == "producer warp");
  // empty[s] counts one arrival per consumer warp.
  auto empty = std::find_if(p.barriers.begin(), p.barriers.end(),
                            [](const schedule::Barrier& b) { return b.name == "empty[0]"; });
  REQUIRE(empty != p.barriers.end());
  CHECK(empty->count == 8);
  CHECK(schedule::CheckProtocol(p).deadlock_free);
}

TEST_CASE("codegen: ping-pong hands the tensor cores over with named barriers and no deadlock") {
  schedule::LoweringOptions off;
  off.ping_pong = false;
  auto all = EmitFile("stdlib/attention.weft", synth::Target::Sm90a, off);
  const Emitted& plain = Find(all, "attention_d128");
  auto turns = EmitFile("stdlib/attention.weft", synth::Target::Sm90a);
  const Emitted& e = Find(turns, "attention_d128");
  CHECK(Has(e.device->ptx, "bar.arrive"));
  CHECK_FALSE(Has(plain.device->ptx, "bar.arrive"));
  REQUIRE(e.device->protocols.size() == 1);
  const schedule::Protocol& p = e.device->protocols[0];
  CHECK(std::count_if(p.barriers.begin(), p.barriers.end(), [](const schedule::Barrier& b) { return b.named; }) == 2);
  CHECK(schedule::CheckProtocol(p).deadlock_free);
  // Without consumer 1's first hand-over, both wait for the other's turn at their first product.
  schedule::Protocol broken = p;
  auto& c1 = broken.roles[2].program;
  REQUIRE(c1.front().kind == schedule::Action::kBarArrive);
  c1.erase(c1.begin());
  schedule::ProtocolCheck r = schedule::CheckProtocol(broken);
  CHECK_FALSE(r.deadlock_free);
}

std::size_t Count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST_CASE("codegen: a pipeline reading a bool parameter is emitted once for each value") {
  // attention_d128's body reads `causal`: two copies of the loop (16 wgmma each, 128 x 128 x 128
  // twice over 8 k-steps a warpgroup, and the staged P V's 8 again after each loop), the mask's 64
  // selects a thread only in the causal one. That one's body is emitted twice again: with the mask
  // folded where the iteration's keys all precede its queries (`AllTrue` of `iota [128] + j * 128
  // <= rows`), so 16 more wgmma and still 64 selects.
  auto all = EmitFile("stdlib/attention.weft", synth::Target::Sm90a);
  const std::string& ptx = Find(all, "attention_d128").device->ptx;
  CHECK(Count(ptx, "wgmma.mma_async") == 64);
  CHECK(Count(ptx, "selp.f32") == 64);
  // The gemm has no bool parameter: one copy.
  auto gemm = EmitFile("stdlib/gemm.weft", synth::Target::Sm90a);
  CHECK(Count(Find(gemm, "gemm_bf16").device->ptx, "wgmma.mma_async") == 4);  // m64n256, 4 k-steps
}

TEST_CASE("codegen: attention's P V is staged behind the next iteration's Q K^T") {
  // Each loop copy (three: non-causal, and causal with and without the mask): Q K^T committed, the
  // previous iteration's P V committed behind it, a wait that leaves P V running (wait_group 1) over the softmax, a
  // wait for all before the accumulator is rescaled; after the loop the last P V. The zeroed block the first issue
  // reads is stored by thread 0 at the start of shared memory, and the tiles start 1024 bytes in.
  auto staged = EmitFile("stdlib/attention.weft", synth::Target::Sm90a);
  const Emitted& a = Find(staged, "attention_d128");
  CHECK(Count(a.device->ptx, "wgmma.wait_group.sync.aligned 1;") == 3);
  CHECK(Count(a.device->ptx, "wgmma.commit_group") == 8);
  CHECK(Has(a.device->ptx, "[weft_smem+112]"));
  schedule::LoweringOptions off;
  off.stage_products = false;
  auto plain = EmitFile("stdlib/attention.weft", synth::Target::Sm90a, off);
  const Emitted& b = Find(plain, "attention_d128");
  CHECK(Count(b.device->ptx, "wgmma.wait_group.sync.aligned 1;") == 0);
  CHECK(Count(b.device->ptx, "wgmma.mma_async") == 48);
  CHECK(a.device->shared_bytes == b.device->shared_bytes + 1024);
  // The gemm's product is a deferred accumulator, not staged.
  auto gemm = EmitFile("stdlib/gemm.weft", synth::Target::Sm90a);
  CHECK_FALSE(Has(Find(gemm, "gemm_bf16").device->ptx, "[weft_smem+112]"));
}

TEST_CASE("codegen: a persistent attention kernel loops over the grid's blocks") {
  auto blocks = EmitFile("stdlib/attention.weft", synth::Target::Sm90a);
  const Emitted& plain = Find(blocks, "attention_d128");
  CHECK_FALSE(plain.device->persistent);  // off by default
  CHECK_FALSE(Has(plain.device->ptx, "%nctaid.x"));
  schedule::LoweringOptions on;
  on.persistent = true;
  auto tiles = EmitFile("stdlib/attention.weft", synth::Target::Sm90a, on);
  const Emitted& e = Find(tiles, "attention_d128");
  const DeviceKernel& d = *e.device;
  CHECK(d.persistent);
  // The launched grid's stride, in every role (the producer's loop and each flag's copy of the
  // consumers').
  CHECK(Has(d.ptx, "%nctaid.x"));
  CHECK(Has(d.ptx, "%nctaid.z"));
  // The ring's slots as before, and one more release a block (the last iteration's slot).
  auto count = [](const std::string& ptx, const std::string& what) {
    std::size_t n = 0;
    for (std::size_t at = ptx.find(what); at != std::string::npos; at = ptx.find(what, at + 1)) ++n;
    return n;
  };
  CHECK(count(d.ptx, "mbarrier.arrive.shared.b64") > count(plain.device->ptx, "mbarrier.arrive.shared.b64"));
  CHECK(d.threads == plain.device->threads);
  CHECK(d.shared_bytes == plain.device->shared_bytes);
  // Kernels that are not warp-specialized stay one block a block of the grid.
  auto gemm = EmitFile("stdlib/gemm.weft", synth::Target::Sm90a, on);
  CHECK_FALSE(Find(gemm, "gemm_bf16").device->persistent);
}

TEST_CASE("codegen: two blocks a multiprocessor") {
  // A block of one warpgroup whose pipeline waits for its products, its stages budgeted for two
  // blocks a multiprocessor (synth: Plan::blocks_per_sm), gets a producer warpgroup with the
  // registers budgeted for two blocks (ptxas: .minnctapersm 2, 128 a thread at launch; the
  // consumers take the producer's 104 back: 232), as attention at head dim 64 with 64 query rows a
  // block (tests/lit/codegen/two_blocks_sm90a.weft).
  auto one = EmitFile("tests/lit/codegen/two_blocks_sm90a.weft", synth::Target::Sm90a);
  const Emitted& a = Find(one, "rows64");
  CHECK(a.device->threads == 256);
  CHECK(Has(a.device->ptx, ".minnctapersm 2"));
  CHECK(Has(a.device->ptx, "setmaxnreg.dec.sync.aligned.u32 24;"));
  CHECK(Has(a.device->ptx, "setmaxnreg.inc.sync.aligned.u32 232;"));
  REQUIRE(a.device->protocols.size() == 1);
  CHECK(a.device->protocols[0].name != "the sm_90a TMA ring");
  // Two warpgroups (the stdlib's head dim 64, 128 rows a block) budgeted for two blocks would keep
  // (256 - 24) / 2 = 112 registers a consumer thread: no producer; the TMA ring, two blocks.
  auto stdlib = EmitFile("stdlib/attention.weft", synth::Target::Sm90a);
  const Emitted& b = Find(stdlib, "attention_d64");
  CHECK(b.device->threads == 256);
  CHECK(Has(b.device->ptx, ".minnctapersm 2"));
  CHECK_FALSE(Has(b.device->ptx, "setmaxnreg"));
  REQUIRE(b.device->protocols.size() == 1);
  CHECK(b.device->protocols[0].name == "the sm_90a TMA ring");
  CHECK_FALSE(Has(Find(stdlib, "attention_d128").device->ptx, ".minnctapersm"));
  // Where four stages leave room for a second block already, nothing changes (the simulator's
  // attention64 takes keys in blocks of 64).
  auto sim = EmitFile("tests/lit/sim/attention_d64.weft", synth::Target::Sm90a);
  CHECK(Find(sim, "attention64").device->threads == 128);
  // schedule::LoweringOptions::min_blocks asks for two blocks of any kernel: attention_d128's two consumer
  // warpgroups then get no producer either.
  schedule::LoweringOptions two;
  two.min_blocks = 2;
  auto both = EmitFile("stdlib/attention.weft", synth::Target::Sm90a, two);
  CHECK(Has(Find(both, "attention_d128").device->ptx, ".minnctapersm 2"));
  CHECK_FALSE(Has(Find(both, "attention_d128").device->ptx, "setmaxnreg"));
  // The gemm's ring (a deferred accumulator: no producer) is left at one block.
  auto gemm = EmitFile("tests/lit/sim/gemm.weft", synth::Target::Sm90a);
  for (const Emitted& g : gemm)
    if (g.device) CHECK_FALSE(Has(g.device->ptx, ".minnctapersm"));
}

TEST_CASE("codegen: a TMA ring folds the masks a whole iteration satisfies") {
  // The causal mask of the stdlib's head-dim-64 attention (a TMA ring, not warp-specialized): the
  // body twice behind a uniform branch, as in the warp-specialized consumers' loop.
  auto ring = EmitFile("stdlib/attention.weft", synth::Target::Sm90a);
  auto count = [](const std::string& ptx, const std::string& what) {
    std::size_t n = 0;
    for (std::size_t at = ptx.find(what); at != std::string::npos; at = ptx.find(what, at + 1)) ++n;
    return n;
  };
  // P V's 8 k-steps (m64n64k16, each warpgroup its 64 rows) in three copies of the body: `causal`
  // false (the mask constant), and true, masked and folded (LLVM hoists Q K^T above the branch).
  CHECK(count(Find(ring, "attention_d64").device->ptx, "m64n64k16") == 3 * 8);
}

TEST_CASE("codegen: which kernels are warp-specialized") {
  // The gemm (its only product a deferred accumulator) keeps the TMA ring; one consumer warpgroup
  // (128 threads) keeps it too; sm_80 has the cp.async ring.
  auto gemm = EmitFile("stdlib/gemm.weft", synth::Target::Sm90a);
  const Emitted& g = Find(gemm, "gemm_bf16");
  CHECK(g.device->threads == 256);
  REQUIRE(g.device->protocols.size() == 1);
  CHECK(g.device->protocols[0].name == "the sm_90a TMA ring");
  schedule::LoweringOptions off;
  off.warp_specialize = false;
  auto plain = EmitFile("stdlib/attention.weft", synth::Target::Sm90a, off);
  const Emitted& a = Find(plain, "attention_d128");
  CHECK(a.device->threads == 256);
  CHECK_FALSE(Has(a.device->ptx, "setmaxnreg"));
  REQUIRE(a.device->protocols.size() == 1);
  CHECK(a.device->protocols[0].name == "the sm_90a TMA ring");
  auto sm80 = EmitFile("stdlib/attention.weft", synth::Target::Sm80);
  const Emitted& b = Find(sm80, "attention_d128");
  CHECK(b.device->threads == 256);
  REQUIRE(b.device->protocols.size() == 1);
  CHECK(b.device->protocols[0].name == "the sm_80 cp.async ring");
}

TEST_CASE("codegen: the protocol of every ring as emitted is deadlock-free on both targets") {
  int rings = 0, specialized = 0;
  for (synth::Target target : {synth::Target::Sm80, synth::Target::Sm90a})
    for (const std::string& file : KernelFiles())
      for (const Emitted& e : EmitFile(file, target)) {
        if (!e.synthesized) continue;
        INFO(e.file << ": " << e.kernel << " on " << synth::Spelling(target) << "\n" << e.diagnostics);
        REQUIRE(e.device.has_value());  // EmitKernel refuses a kernel whose protocol deadlocks
        for (const schedule::Protocol& p : e.device->protocols) {
          CHECK(schedule::CheckProtocol(p).deadlock_free);
          CHECK(p.slots >= 2);
          ++rings;
          specialized += p.name == "warp-specialized";
        }
        // A warp-specialized kernel launches a producer warpgroup past the kernel's threads.
        bool ws = std::any_of(e.device->protocols.begin(), e.device->protocols.end(),
                              [](const schedule::Protocol& p) { return p.name == "warp-specialized"; });
        CHECK(Has(e.device->ptx, "setmaxnreg") == ws);
      }
  CHECK(rings >= 20);
  CHECK(specialized >= 2);  // attention_d128 and attention_d128_bf16
}

}  // namespace
}  // namespace weft::codegen::testing
