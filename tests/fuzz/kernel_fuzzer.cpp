// Fuzzes the kernel tier past the tile IR: every kernel of an input that checks goes through
// lowering, layout synthesis and code generation for sm_80 and sm_90a, and, at small sizes, the
// thread-level simulator against the interpreter. Each step either refuses the kernel with
// diagnostics (which must render) or succeeds, and what succeeds must be right:
//   - the tile IR verifies;
//   - the generated PTX assembles with ptxas (when CMake found the CUDA toolkit's ptxas);
//   - the simulation of the plan equals the interpreter's run of the kernel's core IR on the same
//     random inputs, within gpu.md's tolerances (docs/simulator.md).
// A violation prints what failed to stderr and traps, so libFuzzer saves the input. Seeds: one
// kernel a file (tests/fuzz/corpus/kernel), mutated from the stdlib's and the tests'.
#include <unistd.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "check/check.h"
#include "codegen/device.h"
#include "diagnostics/render.h"
#include "driver/kernel_call.h"
#include "sim/executor.h"
#include "syntax/parser.h"
#include "synth/synthesize.h"
#include "tile/lower.h"
#include "weft/numerics.h"

namespace {

using namespace weft;

[[noreturn]] void Fail(const std::string& kernel, const std::string& what) {
  std::cerr << "kernel_fuzzer: `" << kernel << "`: " << what << "\n";
  __builtin_trap();
}

// A refusal must say why, and what it says must render.
void Refused(const SourceManager& sources, const std::string& kernel, const std::string& phase,
             const std::vector<Diagnostic>& diagnostics) {
  if (diagnostics.empty()) Fail(kernel, phase + " refused the kernel without a diagnostic");
  for (const Diagnostic& d : diagnostics) {
    if (Render(sources, d, /*color=*/false).empty()) Fail(kernel, phase + "'s diagnostic renders empty");
  }
}

// Assembles `ptx` for `arch` with the toolkit's ptxas; an empty string when it accepts it, else its
// log. Without ptxas (WEFT_PTXAS_PATH empty) every module is accepted.
std::string Ptxas(const std::string& ptx, const std::string& arch) {
  const std::string ptxas = WEFT_PTXAS_PATH;
  if (ptxas.empty()) return "";
  static const std::filesystem::path dir = [] {
    std::string pattern = (std::filesystem::temp_directory_path() / "weft-kernel-fuzz-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) std::abort();
    return std::filesystem::path(pattern);
  }();
  std::ofstream(dir / "k.ptx") << ptx;
  std::string command = ptxas + " -arch=" + arch + " -o " + (dir / "k.cubin").string() + " " +
                        (dir / "k.ptx").string() + " > " + (dir / "log").string() + " 2>&1";
  if (std::system(command.c_str()) == 0) return "";
  std::ifstream in(dir / "log");
  std::stringstream log;
  log << in.rdbuf();
  return log.str().empty() ? "ptxas failed" : log.str();
}

// Whether every `where` fact that mentions only sizes in `sizes` holds for them.
bool FactsHold(const tile::Kernel& kernel, const std::map<core::SizeVarId, std::int64_t>& sizes) {
  for (const core::DimFact& fact : kernel.where) {
    bool known = true;
    for (const core::Dim* d : {&fact.lhs, &fact.rhs})
      for (core::SizeVarId var : d->Vars()) known &= sizes.count(var) > 0;
    if (!known) continue;
    auto value = [&](core::SizeVarId var) { return sizes.at(var); };
    auto lhs = core::Evaluate(fact.lhs, value), rhs = core::Evaluate(fact.rhs, value);
    if (lhs && rhs && !driver::Holds(*lhs, fact.relation, *rhs)) return false;
  }
  return true;
}

// Sizes for a small simulation: each size the smallest power of two up to 256 that the `where`
// facts about it alone accept (1 for a batch, 128 for `s % 128 == 0`), then checked against every
// fact; the call must have at most 8 blocks of at most 128 threads and 2^16 elements in all. None
// when no such sizes are found (the simulation is then skipped, not failed).
std::optional<driver::KernelCall> SmallCall(const tile::Kernel& kernel, std::uint64_t seed) {
  std::vector<std::string> sizes;
  for (const auto& [var, name] : kernel.size_names) {
    std::int64_t chosen = 0;
    for (std::int64_t value = 1; value <= 256 && chosen == 0; value *= 2) {
      if (FactsHold(kernel, {{var, value}})) chosen = value;
    }
    if (chosen == 0) return std::nullopt;
    sizes.push_back(name + "=" + std::to_string(chosen));
  }
  std::ostringstream ignored;
  auto shapes = driver::PrepareKernelCall(kernel, kernel.name, sizes, {}, seed, /*make_tensors=*/false, ignored);
  if (!shapes) return std::nullopt;
  std::int64_t blocks = 1;
  for (const core::Dim& d : kernel.grid) {
    auto extent = core::Evaluate(d, [&](core::SizeVarId var) { return shapes->sizes.at(var); });
    if (!extent || *extent < 1) return std::nullopt;
    blocks *= *extent;
  }
  // The simulator runs every thread of every block under the sanitizers: attention's 256-thread
  // blocks at 128 x 128 took over a minute an input, so only small kernels are simulated.
  if (blocks > 8 || kernel.threads > 128) return std::nullopt;
  std::int64_t elements = 0;
  for (const std::vector<std::int64_t>& shape : shapes->shapes) {
    std::int64_t count = 1;
    for (std::int64_t extent : shape) count *= extent;
    elements += count;
  }
  if (elements > (1 << 16)) return std::nullopt;
  return driver::PrepareKernelCall(kernel, kernel.name, sizes, {}, seed, /*make_tensors=*/true, ignored);
}

// The simulator's outputs against the interpreter's: floats by relative error (1e-2 with 16-bit
// floats, else 1e-5) and no NaN the reference lacks; integers bit for bit. An output whose reference
// has a NaN or an infinity is not compared (the kernel's own arithmetic overflowed).
void Compare(const std::string& kernel, const std::string& target, const std::vector<runtime::HostTensor>& got,
             const std::vector<runtime::HostTensor>& want, bool narrow_float) {
  if (got.size() != want.size()) Fail(kernel, target + ": the simulator and the interpreter return different counts");
  for (std::size_t o = 0; o < got.size(); ++o) {
    const runtime::HostTensor &g = got[o], &w = want[o];
    std::string what = target + ": output " + std::to_string(o);
    if (g.dtype != w.dtype || g.shape != w.shape)
      Fail(kernel, what + ": dtype or shape differs from the interpreter's");
    if (!runtime::IsFloatDtype(g.dtype)) {
      for (std::int64_t i = 0; i < g.Count(); ++i) {
        if (runtime::LoadBits(g, i) != runtime::LoadBits(w, i)) {
          Fail(kernel, what + ": element " + std::to_string(i) + " differs from the interpreter's");
        }
      }
      continue;
    }
    double diff2 = 0, ref2 = 0;
    bool finite = true;
    for (std::int64_t i = 0; i < g.Count(); ++i) {
      double a = runtime::LoadDouble(g, i), b = runtime::LoadDouble(w, i);
      if (!std::isfinite(b)) {
        finite = false;
        break;
      }
      if (std::isnan(a))
        Fail(kernel, what + ": NaN at element " + std::to_string(i) + " where the interpreter has none");
      diff2 += (a - b) * (a - b);
      ref2 += b * b;
    }
    if (!finite) continue;
    double rel = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
    double tolerance = narrow_float ? 1e-2 : 1e-5;
    if (!(rel < tolerance)) {
      Fail(kernel, what + ": relative error " + std::to_string(rel) + " against the interpreter (tolerance " +
                       std::to_string(tolerance) + ")");
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 16 * 1024) return 0;
  SourceManager sources;
  Diagnostics diagnostics;
  FileId file = sources.Add("fuzz.weft", std::string(reinterpret_cast<const char*>(data), size));
  syntax::Ast ast = syntax::Parse(sources, file, diagnostics);
  if (diagnostics.has_errors()) return 0;  // the parser and check fuzzers cover these
  check::CheckOptions options;
  options.stdlib_dir = WEFT_STDLIB_DIR;
  check::CheckResult checked = check::Check(sources, ast, diagnostics, options);
  if (diagnostics.has_errors()) return 0;
  for (const core::Def& def : checked.module.defs()) {
    if (!def.ok || !tile::IsKernel(def)) continue;
    auto kernel = tile::Lower(checked.module, checked.vars, def);
    if (!kernel) {
      Refused(sources, def.name, "lowering", kernel.error());
      continue;
    }
    if (auto problems = tile::Verify(*kernel); !problems.empty()) Fail(def.name, "tile IR: " + problems.front());
    std::optional<driver::KernelCall> call = SmallCall(*kernel, /*seed=*/size);
    std::optional<std::vector<runtime::HostTensor>> expected;
    if (call) {
      auto run = driver::InterpretKernelCall(checked.module, checked.vars, def, *call);
      if (run) expected = std::move(*run);  // a run-time failure of the kernel's meaning: nothing to compare
    }
    for (synth::Target target : {synth::Target::Sm80, synth::Target::Sm90a}) {
      std::string arch(synth::Spelling(target));
      auto plan = synth::Synthesize(*kernel, target);
      if (!plan) {
        Refused(sources, def.name, "synthesis for " + arch, plan.error());
        continue;
      }
      auto device =
          codegen::EmitKernel(*kernel, *plan, schedule::Build(*kernel, *plan, schedule::BuildOptions()), sources);
      if (!device) {
        Refused(sources, def.name, "codegen for " + arch, device.error());
        continue;
      }
      if (std::string log = Ptxas(device->ptx, arch); !log.empty()) Fail(def.name, "ptxas -arch=" + arch + ": " + log);
      if (!expected) continue;
      sim::RunOptions run_options;
      run_options.sizes = call->sizes;
      auto simulated = sim::Run(*kernel, *plan, call->args, run_options);
      if (!simulated) Fail(def.name, arch + ": the simulator faulted: " + simulated.error().message);
      Compare(def.name, arch, simulated->outputs, *expected, call->narrow_float);
    }
  }
  return 0;
}
