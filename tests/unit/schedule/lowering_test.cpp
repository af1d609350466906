// compiler/schedule/lowering.h: the decisions codegen lowers, made once by schedule::Build (the
// ring of each pipeline, the sm_80 operand ring, deferred products, warp roles from the solver's
// answer, the staged product, the barrier protocols), and a build's solver running only where a
// decision rests on it.
#include <catch2/catch.hpp>

#include "compiled.h"
#include "schedule/schedule.h"

namespace weft::schedule {
namespace {

using testing::Cached;
using testing::Find;

TEST_CASE("lowering: attention_d128 on sm_90a is warp-specialized, in ping-pong, its P V staged") {
  auto c = Cached("stdlib/attention.weft", synth::Target::Sm90a);
  std::size_t k = Find(*c, "attention_d128");
  Schedule s = Build(c->kernels[k], c->plans[k], BuildOptions());
  REQUIRE(s.loops.size() == 1);  // the producer question is the solver's
  CHECK(s.loops[0].producer);
  REQUIRE(s.lowering.roles);
  const WarpRoles& roles = *s.lowering.roles;
  CHECK(roles.producer_registers == 24);
  CHECK(roles.consumer_registers == 240);
  CHECK(roles.ping_pong);
  CHECK_FALSE(roles.persistent);
  REQUIRE(roles.staged);
  const tile::Op& staged = c->kernels[k].Get(roles.staged->first);
  CHECK(std::holds_alternative<tile::op::Mma>(staged.node));
  const Ring* ring = s.lowering.RingOf(roles.loop);
  REQUIRE(ring);
  CHECK(ring->tma);
  CHECK(ring->stages == roles.stages);
  CHECK(ring->tma_bytes > 0);
  CHECK_FALSE(ring->mma);
  REQUIRE(ring->protocol);
  CHECK(ring->protocol->name == "warp-specialized");
  CHECK(CheckProtocol(*ring->protocol).deadlock_free);

  LoweringOptions plain;
  plain.warp_specialize = false;
  Options options = BuildOptions();
  options.lowering = plain;
  Schedule ring_only = Build(c->kernels[k], c->plans[k], options);
  CHECK(ring_only.loops.empty());  // nothing asked the solver
  CHECK_FALSE(ring_only.lowering.roles);
  REQUIRE(ring_only.lowering.RingOf(roles.loop));
  REQUIRE(ring_only.lowering.RingOf(roles.loop)->protocol);
  CHECK(ring_only.lowering.RingOf(roles.loop)->protocol->name != "warp-specialized");

  LoweringOptions unstaged;
  unstaged.stage_products = false;
  unstaged.ping_pong = false;
  options.lowering = unstaged;
  Schedule turns_off = Build(c->kernels[k], c->plans[k], options);
  REQUIRE(turns_off.lowering.roles);
  CHECK_FALSE(turns_off.lowering.roles->staged);
  CHECK_FALSE(turns_off.lowering.roles->ping_pong);
}

TEST_CASE("lowering: the sm_90a gemm keeps the ring, its accumulator's product deferred, and a build asks no solver") {
  auto c = Cached("stdlib/gemm.weft", synth::Target::Sm90a);
  std::size_t k = Find(*c, "gemm_bf16");
  Schedule built = Build(c->kernels[k], c->plans[k], BuildOptions());
  Options every = BuildOptions();
  every.solve_every_loop = true;
  Schedule explained = Build(c->kernels[k], c->plans[k], every);
  REQUIRE(explained.loops.size() == 1);
  // A producer does not shorten the gemm's II: the ring, whether or not every loop was solved.
  CHECK_FALSE(explained.loops[0].producer);
  CHECK_FALSE(built.lowering.roles);
  CHECK_FALSE(explained.lowering.roles);
  REQUIRE(built.lowering.rings.size() == 1);
  const Ring& ring = built.lowering.rings.begin()->second;
  CHECK(ring.tma);
  CHECK(ring.stages >= 2);
  CHECK(ring.deferred.size() == 1);
  CHECK(ring.deferred_carried == std::vector<std::size_t>{0});
  REQUIRE(ring.protocol);
  CHECK(ring.protocol->name == explained.lowering.rings.begin()->second.protocol->name);
  CHECK(CheckProtocol(*ring.protocol).deadlock_free);
  CHECK(built.lowering.tma_store);
  Options persistent = BuildOptions();
  persistent.lowering.persistent = true;
  CHECK_FALSE(Build(c->kernels[k], c->plans[k], persistent).lowering.tma_store);
}

TEST_CASE("lowering: the sm_80 gemm streams its mma's operands from a cp.async ring") {
  auto c = Cached("stdlib/gemm.weft", synth::Target::Sm80);
  std::size_t k = Find(*c, "gemm_bf16");
  Schedule s = Build(c->kernels[k], c->plans[k], BuildOptions());
  CHECK(s.loops.empty());
  CHECK_FALSE(s.lowering.roles);
  REQUIRE(s.lowering.rings.size() == 1);
  const Ring& ring = s.lowering.rings.begin()->second;
  CHECK_FALSE(ring.tma);
  CHECK(ring.tma_bytes == 0);
  CHECK(ring.deferred.empty());
  REQUIRE(ring.mma);
  CHECK(std::holds_alternative<tile::op::Mma>(c->kernels[k].Get(*ring.mma).node));
  REQUIRE(ring.protocol);
  CHECK(CheckProtocol(*ring.protocol).deadlock_free);
  LoweringOptions two;
  two.min_blocks = 2;
  CHECK(MinBlocks(c->plans[k], two) == 2);
}

}  // namespace
}  // namespace weft::schedule
