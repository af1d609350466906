// The choosers (synth/choose.h) agree: on every kernel of the stdlib, the examples, the GPU test
// programs and the lit tests, on sm_80 and sm_90a, Z3's optimizer proves an answer whose objective
// values (cost, then warp instructions, then stages) equal the exhaustive search's optimum, with the
// budgets and without. Costs are compared, not candidates. Also small spaces built by hand, where
// the optimum is known: pair costs, misaligned pairs, the shared budget against stages, and the
// register budget.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "check/check.h"
#include "codegen/instance.h"
#include "kernel_files.h"
#include "solver/optimize.h"
#include "syntax/parser.h"
#include "synth/choose.h"
#include "synth/synthesize.h"
#include "tile/lower.h"

namespace weft::synth {
namespace {

// Z3 and the search on one space: both find an answer or neither does; Z3's is proved optimal and
// its objective values are the search's.
void CheckAgree(const Space& space, solver::Session& session, const std::string& what) {
  INFO(what << (space.budgets ? "" : " (budgets off)"));
  std::optional<Choice> search = ChooseBySearch(space);
  std::string unknown;
  std::optional<Choice> z3 = ChooseByZ3(space, &session, unknown);
  CHECK(unknown.empty());
  REQUIRE(search.has_value() == z3.has_value());
  if (!search) return;
  CHECK(z3->optimal);
  CHECK(Feasible(space, *z3));
  CHECK(z3->cost == search->cost);
  CHECK(z3->instructions == search->instructions);
  CHECK(z3->stages == search->stages);
}

TEST_CASE("Z3's optimum costs what the exhaustive search's does, on every kernel and both targets", "[synth][choose]") {
  int spaces = 0, files = 0;
  for (const std::filesystem::path& path : KernelFiles()) {
    std::vector<tile::Kernel> kernels = Kernels(path);
    files += !kernels.empty();
    for (const tile::Kernel& kernel : kernels) {
      for (Target target : {Target::Sm80, Target::Sm90a}) {
        auto space = TabulateSpace(kernel, target);
        if (!space) continue;  // an error test, or a kernel for the other target
        std::string what = path.string() + ": " + kernel.name + " on " + std::string(Spelling(target));
        solver::Session session;  // one a kernel: the answer is the kernel's alone
        CheckAgree(*space, session, what);
        space->budgets = false;
        CheckAgree(*space, session, what);
        ++spaces;
      }
    }
  }
  // The stdlib's gemms and attentions, the examples' and the lit tests' kernels: well over a hundred.
  CHECK(files >= 40);
  CHECK(spaces >= 100);
}

TEST_CASE("Synthesize with either chooser gives plans of the same cost, and says which chose", "[synth][choose]") {
  for (const char* file : {"stdlib/gemm.weft", "stdlib/attention.weft"}) {
    for (const tile::Kernel& kernel : Kernels(std::filesystem::path(WEFT_SOURCE_DIR) / file)) {
      for (Target target : {Target::Sm80, Target::Sm90a}) {
        INFO(file << ": " << kernel.name << " on " << Spelling(target));
        Options z3_options, search_options;
        search_options.chooser = Chooser::kSearch;
        auto z3 = Synthesize(kernel, target, z3_options);
        auto search = Synthesize(kernel, target, search_options);
        REQUIRE(z3.ok() == search.ok());
        if (!z3) continue;
        CHECK(z3->chooser == Chooser::kZ3);
        CHECK(z3->optimal);
        CHECK(search->chooser == Chooser::kSearch);
        CHECK(z3->cost == search->cost);
        CHECK(z3->instructions == search->instructions);
        CHECK(z3->shared_bytes == search->shared_bytes);
      }
    }
  }
}

// A space of two combinations and one tile of three candidates, the tile's wavefronts depending on
// the combination's class.
Space Small() {
  Space space;
  space.shared_budget = 1000;
  space.register_budget = 255;
  space.stages = {3, 2, 1};
  space.combos = {SpaceCombo{true, 100, 64, 0}, SpaceCombo{true, 90, 64, 0}};
  SpaceTile tile;
  tile.class_of = {0, 1};
  tile.wavefronts = {{50, 20, 20}, {50, 40, std::nullopt}};
  tile.bytes = {100, 100, 200};
  tile.padding = {0, 0, 0};
  tile.pipelined = true;
  space.tiles = {tile};
  return space;
}

TEST_CASE("hand-built spaces: pair costs, misaligned pairs, budgets and the index order", "[synth][choose]") {
  solver::Session session;
  auto both = [&](const Space& space) {
    std::optional<Choice> search = ChooseBySearch(space);
    std::string unknown;
    std::optional<Choice> z3 = ChooseByZ3(space, &session, unknown);
    REQUIRE(search.has_value() == z3.has_value());
    if (search) {
      // The objective has one optimum: the same candidates, not only the same cost.
      CHECK(z3->combo == search->combo);
      CHECK(z3->candidates == search->candidates);
      CHECK(z3->stages == search->stages);
      CHECK(z3->optimal);
    }
    return z3;
  };
  SECTION("the cheapest pair: combination 0 with candidate 1 (120) beats combination 1 with 1 (130)") {
    auto c = both(Small());
    REQUIRE(c);
    CHECK(c->combo == 0);
    CHECK(c->candidates == std::vector<int>{1});  // candidate 2 ties at 120 but comes later
    CHECK(c->cost == 120);
    CHECK(c->stages == 3);  // 300 bytes of 1000
  }
  SECTION("a misaligned pair is excluded, and a cheaper combination's pair wins") {
    Space space = Small();
    space.tiles[0].wavefronts = {{50, 45, 45}, {50, 20, std::nullopt}};
    auto c = both(space);
    REQUIRE(c);
    CHECK(c->combo == 1);
    CHECK(c->candidates == std::vector<int>{1});
    CHECK(c->cost == 110);
  }
  SECTION("the shared budget lowers the stages before it raises the cost") {
    Space space = Small();
    space.shared_budget = 250;
    auto c = both(space);
    REQUIRE(c);
    CHECK(c->cost == 120);
    CHECK(c->stages == 2);
    space.shared_budget = 150;  // one stage of 100 bytes, not of 200
    c = both(space);
    REQUIRE(c);
    CHECK(c->stages == 1);
    CHECK(c->candidates == std::vector<int>{1});
    space.shared_budget = 50;
    CHECK_FALSE(both(space));
    space.budgets = false;
    c = both(space);
    REQUIRE(c);
    CHECK(c->stages == 1);  // the fewest, to report what exceeds the budget
  }
  SECTION("the register budget rules a combination out") {
    Space space = Small();
    space.combos[0].registers = 300;
    auto c = both(space);
    REQUIRE(c);
    CHECK(c->combo == 1);
    CHECK(c->cost == 130);
  }
  SECTION("ties in cost go to fewer instructions, then the earlier combination") {
    Space space = Small();
    space.tiles[0].wavefronts = {{10, 10, 10}, {20, 20, 20}};  // 110 either way
    auto c = both(space);
    REQUIRE(c);
    CHECK(c->combo == 1);  // 90 instructions against 100
    CHECK(c->candidates == std::vector<int>{0});
  }
}

}  // namespace

// A kernel's instances (its `tiles` clause): Z3 and the search choose the same one, the least cost
// then the least index; an instance that does not build is never chosen.
TEST_CASE("the instance choice: Z3 and the search agree, ties to the first", "[synth][choose][tiles]") {
  solver::Session session;
  auto both = [&](const std::vector<std::optional<std::int64_t>>& costs) {
    std::optional<InstanceChoice> search = ChooseInstanceBySearch(costs);
    std::string unknown;
    std::optional<InstanceChoice> z3 = ChooseInstanceByZ3(costs, &session, unknown);
    CHECK(unknown.empty());
    REQUIRE(search.has_value() == z3.has_value());
    if (search) {
      CHECK(z3->index == search->index);
      CHECK(z3->cost == search->cost);
      CHECK(z3->optimal);
      CHECK(z3->chooser == Chooser::kZ3);
    }
    return z3;
  };
  CHECK(both({std::nullopt, 50, 30, 30})->index == 2);
  CHECK(both({7})->index == 0);
  CHECK(both({0, 0})->index == 0);
  CHECK(both({std::nullopt, 9, std::nullopt})->index == 1);
  CHECK(!both({std::nullopt, std::nullopt}));
  CHECK(!both({}));
}

// Every kernel with a `tiles` clause in the repository, on both targets: the costs codegen's choice
// minimized (each instance synthesized and its time predicted), chosen again by the search.
TEST_CASE("the instance choice of every kernel with a `tiles` clause agrees with the search",
          "[synth][choose][tiles]") {
  int kernels = 0;
  for (const std::filesystem::path& path : KernelFiles()) {
    if (ReadFile(path).find("tiles ") == std::string::npos) continue;
    SourceManager sources;
    Diagnostics diagnostics;
    FileId file = sources.Add(path.string(), ReadFile(path));
    syntax::Ast ast = syntax::Parse(sources, file, diagnostics);
    if (diagnostics.has_errors()) continue;
    check::CheckOptions options;
    options.stdlib_dir = WEFT_SOURCE_DIR "/stdlib";
    check::CheckResult result = check::Check(sources, ast, diagnostics, options);
    if (diagnostics.has_errors()) continue;
    for (const core::Def& def : result.module.defs()) {
      if (!tile::IsKernel(def) || def.kernel->instances.empty()) continue;
      for (Target target : {Target::Sm80, Target::Sm90a}) {
        INFO(path.string() << ": " << def.name << " on " << Spelling(target));
        auto choice = codegen::ChooseTiles(result.module, result.vars, def, target, {});
        if (!choice) continue;
        REQUIRE(choice->costs.size() == def.kernel->instances.size());
        std::optional<InstanceChoice> search = ChooseInstanceBySearch(choice->costs);
        REQUIRE(search);
        CHECK(choice->chosen.chooser == Chooser::kZ3);
        CHECK(choice->chosen.optimal);
        CHECK(static_cast<int>(choice->index) == search->index);
        CHECK(choice->chosen.cost == search->cost);
        ++kernels;
      }
    }
  }
  CHECK(kernels >= 2);
}

}  // namespace weft::synth
