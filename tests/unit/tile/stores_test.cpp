// tile::StoresEveryElement (tile/stores.h): which `out` parameters a kernel stores whole, so that the
// host skips their zero fill. The law: when it says so, running the grid stores every element, for
// any sizes the kernel's `where` facts allow. Checked by enumerating every block of the grid at
// concrete sizes and marking the elements its top-level stores reach (the kernel tier's meaning of
// `block_idx`, `tile` and `store`, docs/kernels.md), for the stdlib's kernels, the simulator's, and
// the cases below. Then the cases the proof must refuse, each with its reason.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <functional>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "check/check.h"
#include "diagnostics/render.h"
#include "syntax/parser.h"
#include "tile/lower.h"
#include "tile/stores.h"

namespace weft::tile {
namespace {

using core::Dim;
using core::SizeVarId;

std::vector<Kernel> Kernels(const std::string& name, const std::string& text) {
  SourceManager sources;
  Diagnostics diagnostics;
  FileId id = sources.Add(name, text);
  syntax::Ast ast = syntax::Parse(sources, id, diagnostics);
  check::CheckOptions options;
  options.stdlib_dir = WEFT_SOURCE_DIR "/stdlib";
  check::CheckResult result = check::Check(sources, ast, diagnostics, options);
  std::string rendered;
  for (const Diagnostic& d : diagnostics.all()) rendered += Render(sources, d, false);
  INFO(rendered);
  REQUIRE_FALSE(diagnostics.has_errors());
  std::vector<Kernel> out;
  for (const core::Def& def : result.module.defs()) {
    if (!IsKernel(def)) continue;
    auto kernel = Lower(result.module, result.vars, def);
    if (kernel) out.push_back(std::move(*kernel));
  }
  return out;
}

std::vector<Kernel> KernelsOf(const std::string& file) {
  std::ifstream in(std::string(WEFT_SOURCE_DIR) + "/" + file);
  std::stringstream text;
  text << in.rdbuf();
  return Kernels(file, text.str());
}

const Kernel& Named(const std::vector<Kernel>& kernels, const std::string& name) {
  for (const Kernel& k : kernels)
    if (k.name == name) return k;
  FAIL("no kernel " << name);
  return kernels.front();
}

ValueId OutParam(const Kernel& k, std::size_t which = 0) {
  for (const Param& p : k.params)
    if (p.out && which-- == 0) return p.value;
  FAIL("no out parameter");
  return ValueId();
}

std::int64_t FloorDiv(std::int64_t a, std::int64_t b) {
  std::int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

// The oracle: a scalar of the kernel's top level at one block, with the interpreter's integer
// arithmetic (floor division, docs/numerics.md). Nothing for what a top-level store cannot use.
std::optional<std::int64_t> Scalar(const Kernel& k, ValueId id, const std::vector<std::int64_t>& block,
                                   const std::function<std::int64_t(SizeVarId)>& size) {
  const Value& v = k.Get(id);
  if (!v.def.valid()) return std::nullopt;
  const Op& op = k.Get(v.def);
  if (const auto* b = std::get_if<op::BlockIdx>(&op.node)) return block.at(static_cast<std::size_t>(b->axis));
  if (const auto* c = std::get_if<op::Constant>(&op.node)) {
    if (const auto* i = std::get_if<std::int64_t>(&c->value)) return *i;
    return std::nullopt;
  }
  if (const auto* s = std::get_if<op::Size>(&op.node)) {
    auto value = core::Evaluate(s->dim, size);
    return value ? std::optional<std::int64_t>(*value) : std::nullopt;
  }
  const auto* s = std::get_if<op::ScalarOp>(&op.node);
  if (!s) return std::nullopt;
  std::vector<std::int64_t> a;
  for (ValueId arg : s->args) {
    auto x = Scalar(k, arg, block, size);
    if (!x) return std::nullopt;
    a.push_back(*x);
  }
  if (s->fn == "negate") return -a[0];
  if (s->fn == "+") return a[0] + a[1];
  if (s->fn == "-") return a[0] - a[1];
  if (s->fn == "*") return a[0] * a[1];
  if (s->fn == "/") return a[1] == 0 ? 0 : FloorDiv(a[0], a[1]);
  if (s->fn == "%") return a[1] == 0 ? 0 : a[0] - FloorDiv(a[0], a[1]) * a[1];
  if (s->fn == "minimum") return std::min(a[0], a[1]);
  if (s->fn == "maximum") return std::max(a[0], a[1]);
  return std::nullopt;
}

// Sizes for the law: each size a multiple of every divisor its `where` facts name, at two scales;
// nothing when the facts do not hold there.
std::vector<std::map<SizeVarId, std::int64_t>> SizePoints(const Kernel& k) {
  std::map<SizeVarId, std::int64_t> unit;
  for (const auto& [var, name] : k.size_names) unit[var] = 1;
  for (const core::DimFact& fact : k.where)
    for (const Dim* side : {&fact.lhs, &fact.rhs})
      for (const core::Term& t : side->terms())
        for (const core::Factor& f : t.monomial)
          if (f.atom.kind == core::AtomKind::kMod)
            if (auto v = f.atom.operand->AsVar()) unit[*v] = std::lcm(unit[*v], f.atom.divisor);
  std::map<SizeVarId, std::int64_t> pinned;  // `n == c`
  for (const core::DimFact& fact : k.where)
    if (auto var = fact.lhs.AsVar(); var && fact.relation == core::RelOp::kEq && fact.rhs.AsConstant())
      pinned[*var] = *fact.rhs.AsConstant();
  std::vector<std::map<SizeVarId, std::int64_t>> points;
  for (std::int64_t scale : {1, 2, 3}) {
    std::map<SizeVarId, std::int64_t> point;
    for (const auto& [var, u] : unit) point[var] = pinned.count(var) ? pinned.at(var) : u * scale;
    auto size = [&](SizeVarId v) { return point.at(v); };
    bool holds = true;
    for (const core::DimFact& fact : k.where) {
      auto l = core::Evaluate(fact.lhs, size), r = core::Evaluate(fact.rhs, size);
      holds &= l && r &&
               (fact.relation == core::RelOp::kEq   ? *l == *r
                : fact.relation == core::RelOp::kNe ? *l != *r
                : fact.relation == core::RelOp::kLt ? *l < *r
                : fact.relation == core::RelOp::kLe ? *l <= *r
                : fact.relation == core::RelOp::kGt ? *l > *r
                                                    : *l >= *r);
    }
    if (holds) points.push_back(point);
  }
  return points;
}

// Every element of `out` that the grid's top-level stores reach at `point`, against its count.
std::pair<std::int64_t, std::int64_t> Stored(const Kernel& k, ValueId out,
                                             const std::map<SizeVarId, std::int64_t>& point) {
  auto size = [&](SizeVarId v) { return point.at(v); };
  std::vector<std::int64_t> extents, grid;
  for (const Dim& d : k.Get(out).shape) extents.push_back(*core::Evaluate(d, size));
  for (const Dim& d : k.grid) grid.push_back(*core::Evaluate(d, size));
  while (grid.size() < 3) grid.push_back(1);
  std::int64_t count = 1;
  for (std::int64_t e : extents) count *= e;
  std::set<std::vector<std::int64_t>> marked;
  for (std::int64_t x = 0; x < grid[0]; ++x)
    for (std::int64_t y = 0; y < grid[1]; ++y)
      for (std::int64_t z = 0; z < grid[2]; ++z)
        for (OpId id : k.body) {
          const auto* store = std::get_if<op::Store>(&k.Get(id).node);
          if (!store) continue;
          const auto* view = std::get_if<op::View>(&k.Get(k.Get(store->dst).def).node);
          if (!view || view->tensor != out) continue;
          const std::size_t indexed = view->coords.size() - view->shape.size();
          std::vector<std::int64_t> first, tile;
          bool known = true;
          for (std::size_t a = 0; a < view->coords.size(); ++a) {
            auto c = Scalar(k, view->coords[a], {x, y, z}, size);
            known &= c.has_value();
            std::int64_t t = a < indexed ? 1 : view->shape[a - indexed];
            first.push_back(c ? *c * t : 0);
            tile.push_back(t);
          }
          if (!known) continue;
          std::vector<std::int64_t> at(first);
          std::function<void(std::size_t)> mark = [&](std::size_t a) {
            if (a == at.size()) {
              marked.insert(at);
              return;
            }
            for (std::int64_t i = std::max<std::int64_t>(first[a], 0); i < std::min(first[a] + tile[a], extents[a]);
                 ++i) {
              at[a] = i;
              mark(a + 1);
            }
          };
          mark(0);
        }
  return {static_cast<std::int64_t>(marked.size()), count};
}

// The law over every `out` parameter of `kernels` that StoresEveryElement accepts; returns how many.
int CheckLaw(const std::vector<Kernel>& kernels) {
  int accepted = 0;
  for (const Kernel& k : kernels) {
    for (const Param& p : k.params) {
      if (!p.out || !StoresEveryElement(k, p.value)) continue;
      ++accepted;
      std::vector<std::map<SizeVarId, std::int64_t>> points = SizePoints(k);
      CHECK_FALSE(points.empty());
      for (const auto& point : points) {
        auto [stored, count] = Stored(k, p.value, point);
        INFO(k.name << " `" << p.name << "`");
        CHECK(stored == count);
      }
    }
  }
  return accepted;
}

}  // namespace

TEST_CASE("tile stores: the stdlib's gemm and attention kernels store their output whole", "[tile][stores]") {
  for (const char* file : {"stdlib/gemm.weft", "stdlib/attention.weft"}) {
    std::vector<Kernel> kernels = KernelsOf(file);
    REQUIRE_FALSE(kernels.empty());
    for (const Kernel& k : kernels) {
      std::string why;
      INFO(k.name);
      CHECK(StoresEveryElement(k, OutParam(k), &why));
      CHECK(why.empty());
    }
    CHECK(CheckLaw(kernels) == static_cast<int>(kernels.size()));
  }
}

TEST_CASE("tile stores: what the proof accepts, the grid stores, for the simulator's kernels", "[tile][stores]") {
  for (const char* file :
       {"tests/lit/sim/gemm.weft", "tests/lit/sim/gemm_tiles.weft", "tests/lit/sim/gemm_col_major_b.weft",
        "tests/lit/sim/attention_d64.weft", "tests/lit/sim/attention_d128.weft", "tests/lit/sim/integers.weft",
        "examples/gemm_kernel.weft"}) {
    INFO(file);
    CheckLaw(KernelsOf(file));
  }
}

TEST_CASE("tile stores: block indices reversed, offset by a size, or indexing a leading axis cover it",
          "[tile][stores]") {
  std::vector<Kernel> kernels = Kernels("<cases>", R"(
kernel reversed (a: f32[m, 64]) (out c: f32[m, 64]) where m % 64 == 0 grid (m / 64) threads 128 =
  let i = block_idx in
  store (tile c [64, 64] (m / 64 - 1 - i, 0)) (regs (shared (tile a [64, 64] (i, 0))))
kernel heads (a: f32[h, m, 64]) (out c: f32[h, m, 64]) where m % 64 == 0 grid (m / 64, h) threads 128 =
  let (i, z) = block_idx in
  store (tile c [64, 64] (z, i, 0)) (regs (shared (tile a [64, 64] (z, i, 0))))
kernel exact (a: f32[128, 64]) (out c: f32[128, 64]) grid (2) threads 128 =
  let i = block_idx in
  store (tile c [64, 64] (i, 0)) (regs (shared (tile a [64, 64] (i, 0))))
kernel pinned (a: f32[m, 64]) (out c: f32[m, 64]) where m == 128 grid (2) threads 128 =
  let i = block_idx in
  store (tile c [64, 64] (i, 0)) (regs (shared (tile a [64, 64] (i, 0))))
)");
  for (const char* name : {"reversed", "heads", "exact", "pinned"}) {
    const Kernel& k = Named(kernels, name);
    std::string why;
    INFO(name);
    CHECK(StoresEveryElement(k, OutParam(k), &why));
    CHECK(why == "");
  }
  CHECK(CheckLaw(kernels) == 4);
}

TEST_CASE("tile stores: what the proof cannot show keeps the fill, with the reason", "[tile][stores]") {
  std::vector<Kernel> kernels = Kernels("<cases>", R"(
kernel first (a: f32[m, 64]) (out c: f32[m, 64]) where m % 64 == 0 grid (m / 64) threads 128 =
  store (tile c [64, 64] (0, 0)) (regs (shared (tile a [64, 64] (0, 0))))
kernel short (a: f32[m, 64]) (out c: f32[m, 64]) where m % 128 == 0 grid (m / 128) threads 128 =
  let i = block_idx in
  store (tile c [64, 64] (i, 0)) (regs (shared (tile a [64, 64] (i, 0))))
kernel diagonal (a: f32[m, m]) (out c: f32[m, m]) where m % 64 == 0 grid (m / 64, m / 64) threads 128 =
  let (i, j) = block_idx in
  store (tile c [64, 64] (i, i)) (regs (shared (tile a [64, 64] (i, j))))
kernel spare (a: f32[m, 64]) (b: f32[n]) (out c: f32[m, 64]) where m % 64 == 0 grid (m / 64, n) threads 128 =
  let (i, j) = block_idx in
  store (tile c [64, 64] (i, 0)) (regs (shared (tile a [64, 64] (i, 0))))
kernel strided (a: f32[m, 64]) (out c: f32[m, 64]) where m % 128 == 0 grid (m / 128) threads 128 =
  let i = block_idx in
  store (tile c [64, 64] (2 * i, 0)) (regs (shared (tile a [64, 64] (i, 0))))
kernel looped (a: f32[m, 64]) (out c: f32[m, 64]) where m % 64 == 0 grid (1) threads 128 =
  loop u = () for i < m / 64 do store (tile c [64, 64] (i, 0)) (regs (shared (tile a [64, 64] (i, 0))))
)");
  const std::map<std::string, std::string> why = {
      {"first", "the grid's blocks are not shown to reach every index of axis 0"},
      {"short", "the grid's blocks are not shown to reach every index of axis 0"},
      {"diagonal", "two coordinates of the store use block index 0"},
      {"spare", "the grid's axis 1 may have no block"},
      {"strided", "coordinate 0 of the store is not a size plus or minus one block index"},
      {"looped", "no store at the kernel's top level writes `c`"},
  };
  for (const auto& [name, reason] : why) {
    const Kernel& k = Named(kernels, name);
    std::string got;
    INFO(name);
    CHECK_FALSE(StoresEveryElement(k, OutParam(k), &got));
    CHECK(got == reason);
  }
}

}  // namespace weft::tile
