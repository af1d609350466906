// gpu_cases: the first half of tests/gpu (README.md), run where the compiler is. For each case of
// the case files it checks the `.weft` file, lowers the kernel, synthesizes its plan for the target
// and generates its PTX (codegen::EmitKernel), assembles it with ptxas when there is one, makes the
// inputs with `random` and the reference outputs with the interpreter (as `weft simulate` does:
// driver/kernel_call.h), and writes a case folder for gpu_check:
//
//   OUT/NAME/manifest.json   how to launch the entry and judge the outputs (gpu_case.h)
//   OUT/NAME/kernel.ptx      and kernel.cubin when ptxas was found
//   OUT/NAME/PARAM.npy       each input tensor (not for --no-reference cases: gpu_check makes those):
//                            `random` with the case's seed, floats mapped from [0, 1) to [-1, 1)
//   OUT/NAME/PARAM.ref.npy   each output as the interpreter computes it
//
//   gpu_cases [--out DIR] [--root DIR] [--seed N] [--ptxas PATH] [--only TEXT] [--ptx-only-without-gpu]
//             CASE_FILE...
//
// --ptx-only-without-gpu (ctest's gpu.gen): where no GPU is found, each case's PTX and cubin only,
// no inputs, references or manifest, and a case the compiler refuses fails gpu_cases itself (no
// gpu_check will run); with a GPU, whole cases as without it.
//
// A case file has one case per line (`#` starts a comment):
//
//   FILE KERNEL TARGETS NAME=VALUE... [--flops=EXPR] [--no-reference] [--no-warp-specialization]
//        [--no-ping-pong] [--no-staging] [--persistent] [--no-tma-store] [--stages=N] [--blocks-per-sm=N]
//        [--expect-error=TEXT...]
//   stdlib/gemm.weft gemm_bf16 sm_80,sm_90a m=512 n=384 k=1024 --flops=2*m*n*k
//
// FILE is relative to --root (default: the current folder); TARGETS is one or more of sm_80 and
// sm_90a, one case each; NAME=VALUE gives a size (by the name the kernel's types use) or a scalar
// parameter (a scalar not given is `random`, as in `weft simulate`). --flops gives the work of one
// launch as a product of numbers, sizes and scalars, for gpu_check --time. --no-reference: a timing
// case at a size the interpreter is too slow for; no inputs are written, gpu_check makes them with
// `random` on the GPU machine. --expect-error=TEXT (the rest of the line): the sizes or scalars must
// be refused (a broken `where` clause, say) with TEXT in the message; no folder is written.
// --no-warp-specialization: the kernel generated without a producer warpgroup (codegen::Options),
// to compare; --no-ping-pong: with schedule::LoweringOptions::ping_pong off; --no-staging: with
// schedule::LoweringOptions::stage_products off; --persistent: with schedule::LoweringOptions::persistent on (each
// block loops over the grid's blocks; gpu_check launches weft_persistent_grid's grid), and
// --persistent=N launched on N blocks (a few: each block takes several of the grid's);
// --no-tma-store: with schedule::LoweringOptions::tma_store off (each thread stores its own elements);
// --stages=N: synth::Options::stages (the rings' depth, N copies of each tile); --blocks-per-sm=N:
// schedule::LoweringOptions::min_blocks (registers budgeted for N blocks a multiprocessor). A case is named
// KERNEL-TARGET[-plain][-noturns][-unstaged][-persistent[N]][-threadstores][-stagesN][-blocksN]-SIZES
// [-SCALAR_VALUE...].
//
// Inputs are fresh: the seed is random unless --seed gives it (it is printed, and each manifest
// records its own, so a failure can be made again).
//
// A kernel that the compiler refuses (a diagnostic of lowering, synthesis or codegen) gets a folder
// whose manifest says it was not generated and why; gpu_check counts it as failed. gpu_cases prints
// one line per case and exits 1 when a case has an error of another kind (a bad line, a file that
// does not check, the interpreter failing, ptxas rejecting the PTX, an entry whose parameters break
// the launch contract, the compiler crashing: each case is generated in its own process), else 0.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "check/check.h"
#include "codegen/device.h"
#include "diagnostics/render.h"
#include "driver/kernel_call.h"
#include "gpu_case.h"
#include "syntax/parser.h"
#include "synth/synthesize.h"
#include "tile/lower.h"
#include "weft/npy.h"
#include "weft/numerics.h"
#include "weft/runtime.h"

namespace fs = std::filesystem;

namespace weft::gpu {
namespace {

struct Options {
  std::string out = "gpu-cases";
  std::string root = ".";
  std::optional<std::uint64_t> seed;
  std::string ptxas;
  std::string only;
  std::vector<std::string> files;
  // --ptx-only-without-gpu, where weft_init finds no GPU: no gpu_check runs here, so each case's
  // PTX is generated and assembled, but no inputs, reference outputs or manifest are written (the
  // interpreter's references are most of the time), and a case the compiler refuses is an error.
  bool ptx_only = false;
};

struct Line {
  std::string where;  // FILE:LINE of the case file
  std::string source, kernel;
  std::vector<std::string> targets, assignments;
  std::string flops;
  bool reference = true;
  bool warp_specialize = true;          // --no-warp-specialization: schedule::LoweringOptions::warp_specialize off
  bool ping_pong = true;                // --no-ping-pong: schedule::LoweringOptions::ping_pong off
  bool stage = true;                    // --no-staging: schedule::LoweringOptions::stage_products off
  bool persistent = false;              // --persistent[=N]: schedule::LoweringOptions::persistent on
  std::uint32_t persistent_blocks = 0;  // ... launched on N blocks
  bool tma_store = true;                // --no-tma-store: schedule::LoweringOptions::tma_store off
  int stages = 0;                       // --stages=N: synth::Options::stages
  int min_blocks = 0;                   // --blocks-per-sm=N: schedule::LoweringOptions::min_blocks
  std::string expect_error;             // --expect-error=TEXT: the sizes must be refused with TEXT in the message
};

// A checked `.weft` file, kept for every case that uses it.
struct Checked {
  SourceManager sources;
  Diagnostics diagnostics;
  check::CheckResult result;
  std::string errors;  // rendered diagnostics when the file does not check
};

std::vector<std::string> Words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

std::string FirstLine(const std::string& text) {
  return text.substr(0, text.find('\n'));
}

std::string RenderAll(const SourceManager& sources, const std::vector<Diagnostic>& diagnostics) {
  std::string out;
  for (const Diagnostic& d : diagnostics) out += Render(sources, d, false);
  return out;
}

// `2*m*n*k`: a product and quotient of numbers and names.
std::optional<double> EvalFlops(const std::string& expr, const std::map<std::string, double>& values,
                                std::string& error) {
  double result = 1;
  char op = '*';
  std::size_t at = 0;
  while (at <= expr.size()) {
    std::size_t next = expr.find_first_of("*/", at);
    std::string term = expr.substr(at, next == std::string::npos ? std::string::npos : next - at);
    double value;
    if (auto it = values.find(term); it != values.end()) {
      value = it->second;
    } else {
      char* end = nullptr;
      value = std::strtod(term.c_str(), &end);
      if (term.empty() || *end != '\0') {
        error = "--flops=" + expr + ": `" + term + "` is neither a number nor a size or scalar of the kernel";
        return std::nullopt;
      }
    }
    result = op == '*' ? result * value : result / value;
    if (next == std::string::npos) break;
    op = expr[next];
    at = next + 1;
  }
  return result;
}

// The byte size of each parameter of PTX entry `entry`, in order (`.param .u64 x` is 8,
// `.param .align 64 .b8 m[128]` 128), or nullopt when the entry is not found.
std::optional<std::vector<int>> EntryParams(const std::string& ptx, const std::string& entry) {
  std::size_t at = ptx.find(".entry " + entry + "(");
  if (at == std::string::npos) return std::nullopt;
  std::size_t end = ptx.find(')', at);
  std::istringstream in(ptx.substr(at, end - at));
  std::vector<int> sizes;
  for (std::string line; std::getline(in, line);) {
    std::size_t p = line.find(".param");
    if (p == std::string::npos) continue;
    std::vector<std::string> w = Words(line.substr(p + 6));
    std::string type;
    for (const std::string& x : w)
      if (x.size() > 2 && x[0] == '.' && x != ".ptr" && x != ".align" && x.rfind(".global", 0) != 0) {
        type = x;
        break;
      }
    int bits = type.size() > 2 ? std::atoi(type.c_str() + 2) : 0;
    int count = 1;
    if (std::size_t b = line.find('['); b != std::string::npos) count = std::atoi(line.c_str() + b + 1);
    sizes.push_back(bits / 8 * count);
  }
  return sizes;
}

int AbiBytes(const Arg& a) {
  switch (a.kind) {
    case Arg::Kind::Tensor:
      return 8;
    case Arg::Kind::TensorMap:
      return 128;
    default:
      return a.abi == "i32" || a.abi == "f32" ? 4 : 8;
  }
}

// Runs `command` (through the shell); its output in `log`. Returns its exit status.
int RunCommand(const std::string& command, std::string& log) {
  std::string full = command + " 2>&1";
  FILE* pipe = popen(full.c_str(), "r");
  if (!pipe) {
    log = "cannot run `" + command + "`";
    return -1;
  }
  char buffer[4096];
  std::size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) log.append(buffer, n);
  int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

class Generator {
 public:
  explicit Generator(const Options& options) : options_(options) {}

  // Generates every case of `line`; returns false when one had an error (not a codegen refusal).
  // Each case is generated in a child process: a compiler crash (an assertion, a sanitizer report)
  // fails that case, with its own folder saying so, and the others are still generated.
  bool Generate(const Line& line, std::uint64_t seed) {
    bool ok = true;
    Check(line.source);  // once, before the children: they inherit it
    for (const std::string& target : line.targets) {
      ok &= GenerateIsolated(line, target, seed);
      seed += 16;
    }
    return ok;
  }

  int generated = 0, refused = 0, errors = 0, expected = 0;

 private:
  Checked& Check(const std::string& source) {
    auto& slot = checked_[source];
    if (slot) return *slot;
    slot = std::make_unique<Checked>();
    Checked& c = *slot;
    std::string path = (fs::path(options_.root) / source).string();
    std::string reason;
    std::optional<FileId> file = c.sources.Load(path, reason);
    if (!file) {
      c.errors = path + ": " + reason;
      return c;
    }
    syntax::Ast ast = syntax::Parse(c.sources, *file, c.diagnostics);
    if (!c.diagnostics.has_errors()) {
      check::CheckOptions check_options;
      const char* stdlib = std::getenv("WEFT_STDLIB");
      check_options.stdlib_dir = stdlib ? stdlib : WEFT_STDLIB_DIR;
      c.result = check::Check(c.sources, ast, c.diagnostics, check_options);
    }
    if (c.diagnostics.has_errors()) c.errors = RenderAll(c.sources, c.diagnostics.all());
    return c;
  }

  bool Error(const std::string& name, const std::string& why) {
    std::printf("ERROR %s: %s\n", name.c_str(), why.c_str());
    std::fflush(stdout);
    ++errors;
    return false;
  }

  bool GenerateOne(const Line& line, const std::string& target_name, std::uint64_t seed) {
    // The case's name: KERNEL-TARGET-SIZES[-SCALAR_VALUE...].
    Checked& checked = Check(line.source);
    std::string name =
        line.kernel + "-" + target_name + (line.warp_specialize ? "" : "-plain") + (line.ping_pong ? "" : "-noturns") +
        (line.stage ? "" : "-unstaged") + (line.persistent ? "-persistent" : "") +
        (line.persistent_blocks ? std::to_string(line.persistent_blocks) : "") +
        (line.tma_store ? "" : "-threadstores") + (line.stages ? "-stages" + std::to_string(line.stages) : "") +
        (line.min_blocks ? "-blocks" + std::to_string(line.min_blocks) : "");
    if (!checked.errors.empty())
      return Error(name, line.where + ": " + line.source + " does not check:\n" + checked.errors);
    const core::Def* def = checked.result.module.Find(line.kernel);
    if (!def || !tile::IsKernel(*def))
      return Error(name, line.where + ": " + line.source + " has no kernel `" + line.kernel + "`");
    auto target = synth::ParseTarget(target_name);
    if (!target) return Error(name, line.where + ": unknown target `" + target_name + "` (sm_80 or sm_90a)");
    auto kernel = tile::Lower(checked.result.module, checked.result.vars, *def);

    // The sizes are told from the scalars by the names the kernel's core type gives them.
    std::set<std::string> size_names;
    if (kernel)
      for (const auto& [var, size_name] : kernel->size_names) size_names.insert(size_name);
    std::vector<std::string> sizes, scalars;
    std::string size_part, scalar_part;
    for (const std::string& a : line.assignments) {
      std::string key = a.substr(0, a.find('='));
      // Without a lowered kernel (its lowering is refused) every NAME=VALUE is named as a scalar is.
      bool is_size = kernel && size_names.count(key) > 0;
      (is_size ? sizes : scalars).push_back(a);
      if (is_size)
        size_part += (size_part.empty() ? "" : "x") + a.substr(a.find('=') + 1);
      else
        scalar_part += "-" + key + "_" + a.substr(a.find('=') + 1);
    }
    name += "-" + size_part + scalar_part;
    if (name_fd_ >= 0 && write(name_fd_, name.data(), name.size()) < 0)
      return Error(name, "cannot write to the parent");
    if (!options_.only.empty() && name.find(options_.only) == std::string::npos) return true;

    fs::path dir = fs::path(options_.out) / name;
    std::error_code ec;
    fs::remove_all(dir, ec);
    fs::create_directories(dir, ec);
    if (ec) return Error(name, "cannot make " + dir.string() + ": " + ec.message());

    Case c;
    c.name = name;
    c.source = line.source;
    c.kernel = line.kernel;
    c.target = target_name;
    c.seed = seed;
    // A case that cannot be generated still gets its folder, so that gpu_check fails it.
    auto not_generated = [&](const std::string& why, bool is_error) {
      c.generated = false;
      c.reason = why;
      std::ofstream(dir / "manifest.json") << ToJson(c);
      if (is_error) return Error(name, why);
      std::printf("NOT GENERATED %s: %s\n", name.c_str(), FirstLine(why).c_str());
      std::fflush(stdout);
      ++refused;
      return true;
    };

    // The compiler's refusals (lowering, synthesis, codegen: a diagnostic, not a crash) are cases
    // not generated; gpu_check fails them.
    if (!kernel) return not_generated(RenderAll(checked.sources, kernel.error()), false);
    std::ostringstream call_err;
    bool with_reference = line.reference && !options_.ptx_only;
    auto call = driver::PrepareKernelCall(*kernel, line.kernel, sizes, scalars, seed, with_reference, call_err);
    if (!call) {
      std::string message = FirstLine(call_err.str());
      if (!line.expect_error.empty() && message.find(line.expect_error) != std::string::npos) {
        fs::remove_all(dir, ec);
        std::printf("REFUSED AS EXPECTED %s: %s\n", name.c_str(), message.c_str());
        std::fflush(stdout);
        ++expected;
        return true;
      }
      return not_generated(line.where + ": " + message, true);
    }
    if (!line.expect_error.empty()) {
      fs::remove_all(dir, ec);
      return Error(name, line.where + ": expected the error `" + line.expect_error + "`, but the call was accepted");
    }
    // Float tensors centred: `random`'s [0, 1) mapped to 2x - 1 (rounded to the dtype), so that
    // products cancel. With inputs all positive a gemm's output is dominated by its mean (about k/4
    // everywhere), and a kernel that reads the wrong tiles can stay within 1e-2 at large k.
    for (runtime::HostTensor& t : call->args)  // scalars are rank 0: left as given
      if (!t.shape.empty() && runtime::IsFloatDtype(t.dtype))
        for (std::int64_t e = 0; e < t.Count(); ++e) runtime::StoreDouble(t, e, 2 * runtime::LoadDouble(t, e) - 1);

    synth::Options synth_options;
    if (line.stages) synth_options.stages = line.stages;
    auto plan = synth::Synthesize(*kernel, *target, synth_options);
    if (!plan) return not_generated(RenderAll(checked.sources, plan.error()), false);
    schedule::Options schedule_options = schedule::BuildOptions();
    schedule::LoweringOptions& lowering = schedule_options.lowering;
    lowering.warp_specialize = line.warp_specialize;
    lowering.ping_pong = line.ping_pong;
    lowering.stage_products = line.stage;
    lowering.persistent = line.persistent;
    lowering.tma_store = line.tma_store;
    lowering.min_blocks = line.min_blocks;
    auto device =
        codegen::EmitKernel(*kernel, *plan, schedule::Build(*kernel, *plan, schedule_options), checked.sources);
    if (!device) return not_generated(RenderAll(checked.sources, device.error()), false);

    // The launch: tensors, sizes, scalars, tensor maps (device.h).
    c.entry = device->entry;
    c.threads = static_cast<std::uint32_t>(device->threads);
    c.shared_bytes = static_cast<std::uint32_t>(device->shared_bytes);
    c.persistent = device->persistent;
    c.persistent_blocks = line.persistent_blocks;
    c.tolerance = call->narrow_float ? 1e-2 : 1e-5;
    auto size_of = [&](core::SizeVarId var) -> std::int64_t { return call->sizes.at(var); };
    for (std::size_t d = 0; d < kernel->grid.size() && d < 3; ++d) {
      auto extent = core::Evaluate(kernel->grid[d], size_of);
      if (!extent || *extent < 1 || *extent > 0x7fffffff)
        return not_generated("the grid's extent " + std::to_string(d) + " has no positive value", true);
      c.grid[d] = static_cast<std::uint32_t>(*extent);
    }
    std::map<std::string, double> values;  // for --flops
    for (const auto& [var, size_name] : kernel->size_names)
      values[size_name] = static_cast<double>(call->sizes.at(var));
    std::vector<int> tensor_arg(kernel->params.size(), -1);
    std::size_t output = 0;
    std::vector<runtime::HostTensor> reference;
    if (with_reference) {
      auto expected = driver::InterpretKernelCall(checked.result.module, checked.result.vars, *def, *call);
      if (!expected) return not_generated("the interpreter's run failed: " + expected.error().message, true);
      reference = std::move(*expected);
    }
    for (std::size_t i = 0; i < kernel->params.size(); ++i) {
      const tile::Param& p = kernel->params[i];
      const tile::Value& v = kernel->Get(p.value);
      if (v.space != tile::Space::Global) continue;
      Arg a;
      a.kind = Arg::Kind::Tensor;
      a.name = p.name;
      a.dtype = v.dtype;
      a.shape = call->shapes[i];
      a.out = p.out;
      if (p.out) {
        if (with_reference) {
          if (output >= reference.size())
            return not_generated("the interpreter gave no value for `" + p.name + "`", true);
          a.reference = p.name + ".ref.npy";
          auto written = runtime::WriteNpy((dir / a.reference).string(), reference[output]);
          if (!written) return not_generated(written.error().message, true);
        }
        ++output;
      } else {
        if (with_reference) {
          // call->args holds every parameter but the `out` ones, scalars too.
          std::size_t arg = 0;
          for (std::size_t j = 0; j < i; ++j) arg += !kernel->params[j].out;
          a.input = p.name + ".npy";
          auto written = runtime::WriteNpy((dir / a.input).string(), call->args.at(arg));
          if (!written) return not_generated(written.error().message, true);
        } else {
          a.random_seed = seed + i;
        }
      }
      tensor_arg[i] = static_cast<int>(c.args.size());
      c.args.push_back(std::move(a));
    }
    for (core::SizeVarId var : device->sizes) {
      Arg a;
      a.kind = Arg::Kind::Size;
      a.name = kernel->size_names.at(var);
      a.abi = "i64";
      a.int_value = call->sizes.at(var);
      c.args.push_back(std::move(a));
    }
    for (std::size_t i = 0; i < kernel->params.size(); ++i) {
      const tile::Param& p = kernel->params[i];
      const tile::Value& v = kernel->Get(p.value);
      if (v.space == tile::Space::Global) continue;
      const runtime::HostTensor& t = call->scalars.at(i);
      Arg a;
      a.kind = Arg::Kind::Scalar;
      a.name = p.name;
      if (v.dtype == Dtype::Bool) {
        a.abi = "i32";
        a.int_value = runtime::LoadInt64(t, 0) != 0;
      } else if (runtime::IsFloatDtype(v.dtype)) {
        a.abi = v.dtype == Dtype::F64 ? "f64" : "f32";
        a.float_value = runtime::LoadDouble(t, 0);
      } else {
        a.abi = "i64";
        a.int_value = runtime::LoadInt64(t, 0);
      }
      values[p.name] = runtime::LoadDouble(t, 0);
      c.args.push_back(std::move(a));
    }
    for (const codegen::TensorMapSpec& spec : device->tensor_maps) {
      const Arg& t = c.args.at(static_cast<std::size_t>(tensor_arg.at(static_cast<std::size_t>(spec.param))));
      Arg a;
      a.kind = Arg::Kind::TensorMap;
      a.name = t.name + " map";
      a.tensor = tensor_arg[static_cast<std::size_t>(spec.param)];
      std::uint64_t cols = t.shape.empty() ? 1 : static_cast<std::uint64_t>(t.shape.back()), rows = 1;
      for (std::size_t d = 0; d + 1 < t.shape.size(); ++d) rows *= static_cast<std::uint64_t>(t.shape[d]);
      a.dims = {cols, rows};
      a.strides_bytes = {cols * static_cast<std::uint64_t>(Bits(t.dtype) / 8)};
      a.box = {static_cast<std::uint32_t>(spec.box_cols), static_cast<std::uint32_t>(spec.box_rows)};
      a.swizzle = static_cast<int>(spec.swizzle);
      c.args.push_back(std::move(a));
    }
    if (!line.flops.empty()) {
      std::string error;
      auto flops = EvalFlops(line.flops, values, error);
      if (!flops) return not_generated(line.where + ": " + error, true);
      c.flops = *flops;
    }

    // The PTX, checked against the contract, and the cubin.
    c.ptx = "kernel.ptx";
    std::ofstream(dir / c.ptx) << device->ptx;
    auto params = EntryParams(device->ptx, device->entry);
    if (!params) return not_generated("the PTX has no entry `" + device->entry + "`", true);
    std::string mismatch;
    if (params->size() != c.args.size()) {
      mismatch = "the PTX entry has " + std::to_string(params->size()) + " parameters, the launch contract " +
                 std::to_string(c.args.size());
    } else {
      for (std::size_t i = 0; i < c.args.size() && mismatch.empty(); ++i)
        if ((*params)[i] != AbiBytes(c.args[i]))
          mismatch = "parameter " + std::to_string(i) + " (`" + c.args[i].name + "`) is " +
                     std::to_string((*params)[i]) + " bytes in the PTX, " + std::to_string(AbiBytes(c.args[i])) +
                     " by the launch contract" + (c.args[i].abi.empty() ? "" : " (" + c.args[i].abi + ")");
    }
    if (!mismatch.empty()) return not_generated("the entry breaks the launch contract (device.h): " + mismatch, true);
    if (!options_.ptxas.empty()) {
      std::string log;
      std::string arch = target_name;
      int status = RunCommand(Quote(options_.ptxas) + " -arch=" + arch + " " + Quote((dir / c.ptx).string()) + " -o " +
                                  Quote((dir / "kernel.cubin").string()),
                              log);
      if (status != 0) return not_generated("ptxas -arch=" + arch + " rejected the PTX:\n" + log, true);
      c.cubin = "kernel.cubin";
    }
    if (!options_.ptx_only) std::ofstream(dir / "manifest.json") << ToJson(c);
    std::printf("GENERATED %s: grid %u,%u,%u, %u threads, %u bytes of shared memory%s\n", name.c_str(), c.grid[0],
                c.grid[1], c.grid[2], c.threads, c.shared_bytes,
                options_.ptx_only ? ", the PTX only (no GPU here)"
                : line.reference  ? ""
                                  : ", inputs made on the GPU, no reference");
    std::fflush(stdout);
    ++generated;
    return true;
  }

  enum Exit { kGenerated = 10, kRefused = 11, kError = 12, kFiltered = 13, kExpected = 14 };

  bool GenerateIsolated(const Line& line, const std::string& target, std::uint64_t seed) {
    int fds[2];
    if (pipe(fds) != 0) return Error(line.kernel + "-" + target, "cannot make a pipe");
    std::fflush(stdout);
    std::fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) return Error(line.kernel + "-" + target, "cannot fork");
    if (pid == 0) {
      close(fds[0]);
      name_fd_ = fds[1];
      generated = refused = errors = expected = 0;  // the child's own, not the counts inherited
      GenerateOne(line, target, seed);
      std::fflush(stdout);
      _exit(errors ? kError : refused ? kRefused : generated ? kGenerated : expected ? kExpected : kFiltered);
    }
    close(fds[1]);
    std::string name;
    char buffer[256];
    for (ssize_t n; (n = read(fds[0], buffer, sizeof buffer)) > 0;) name.append(buffer, static_cast<std::size_t>(n));
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    switch (code) {
      case kGenerated:
        ++generated;
        return true;
      case kRefused:
        ++refused;
        return true;
      case kError:
        ++errors;
        return false;
      case kExpected:
        ++expected;
        return true;
      case kFiltered:
        return true;
      default:
        break;
    }
    std::string why =
        "the generator crashed on it (" +
        (WIFSIGNALED(status) ? "signal " + std::to_string(WTERMSIG(status)) : "exit status " + std::to_string(code)) +
        "; its report is above): a compiler bug; `gpu_cases --only NAME` runs it alone";
    if (name.empty()) return Error(line.kernel + "-" + target + " (" + line.where + ")", why);
    Case c;
    c.name = name;
    c.source = line.source;
    c.kernel = line.kernel;
    c.target = target;
    c.seed = seed;
    c.generated = false;
    c.reason = why;
    fs::path dir = fs::path(options_.out) / name;
    std::error_code ec;
    fs::remove_all(dir, ec);
    fs::create_directories(dir, ec);
    std::ofstream(dir / "manifest.json") << ToJson(c);
    return Error(name, why);
  }

  const Options& options_;
  std::map<std::string, std::unique_ptr<Checked>> checked_;
  int name_fd_ = -1;  // in a child: where the case's name goes once it is known
};

[[noreturn]] void Usage(const std::string& why) {
  std::fprintf(stderr,
               "gpu_cases: %s\nusage: gpu_cases [--out DIR] [--root DIR] [--seed N] [--ptxas PATH] [--only TEXT] "
               "[--ptx-only-without-gpu] "
               "CASE_FILE...\n",
               why.c_str());
  std::exit(2);
}

int Main(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) Usage(a + " needs a value");
      return argv[++i];
    };
    if (a == "--out") {
      options.out = value();
    } else if (a == "--root") {
      options.root = value();
    } else if (a == "--seed") {
      std::string v = value();
      char* end = nullptr;
      options.seed = std::strtoull(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0') Usage("--seed needs a number, not `" + v + "`");
    } else if (a == "--ptxas") {
      options.ptxas = value();
    } else if (a == "--only") {
      options.only = value();
    } else if (a == "--ptx-only-without-gpu") {
      if (weft_init() == WEFT_OK) {
        weft_shutdown();
      } else {
        std::printf(
            "gpu_cases: no GPU here (%s): each case's PTX is generated and assembled, without inputs, "
            "references or manifest (`ninja gpu-cases` makes whole cases for gpu_check)\n",
            weft_last_error());
        options.ptx_only = true;
      }
    } else if (!a.empty() && a[0] == '-') {
      Usage("unknown option `" + a + "`");
    } else {
      options.files.push_back(a);
    }
  }
  if (options.files.empty()) Usage("no case file given");

  std::vector<Line> lines;
  for (const std::string& file : options.files) {
    std::ifstream in(file);
    if (!in) Usage("cannot read `" + file + "`");
    int number = 0;
    for (std::string text; std::getline(in, text);) {
      ++number;
      text = text.substr(0, text.find('#'));
      std::vector<std::string> w = Words(text);
      if (w.empty()) continue;
      Line line;
      line.where = file + ":" + std::to_string(number);
      if (w.size() < 3) Usage(line.where + ": expected FILE KERNEL TARGETS NAME=VALUE...");
      line.source = w[0];
      line.kernel = w[1];
      std::string targets = w[2];
      for (std::size_t at = 0; at <= targets.size();) {
        std::size_t comma = targets.find(',', at);
        line.targets.push_back(targets.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
        if (comma == std::string::npos) break;
        at = comma + 1;
      }
      for (std::size_t k = 3; k < w.size(); ++k) {
        if (w[k].rfind("--flops=", 0) == 0)
          line.flops = w[k].substr(8);
        else if (w[k] == "--no-reference")
          line.reference = false;
        else if (w[k] == "--no-warp-specialization")
          line.warp_specialize = false;
        else if (w[k] == "--no-ping-pong")
          line.ping_pong = false;
        else if (w[k] == "--no-staging")
          line.stage = false;
        else if (w[k] == "--persistent")
          line.persistent = true;
        else if (w[k] == "--no-tma-store")
          line.tma_store = false;
        else if (w[k].rfind("--stages=", 0) == 0) {
          line.stages = std::atoi(w[k].c_str() + 9);
          if (line.stages < 1) Usage(line.where + ": --stages=N needs a number of stages above 0");
        } else if (w[k].rfind("--blocks-per-sm=", 0) == 0) {
          line.min_blocks = std::atoi(w[k].c_str() + 16);
          if (line.min_blocks < 1) Usage(line.where + ": --blocks-per-sm=N needs a number of blocks above 0");
        } else if (w[k].rfind("--persistent=", 0) == 0) {
          line.persistent = true;
          try {
            line.persistent_blocks = static_cast<std::uint32_t>(std::stoul(w[k].substr(13)));
          } catch (const std::exception&) {
          }
          if (line.persistent_blocks == 0) Usage(line.where + ": --persistent=N needs a number of blocks above 0");
        } else if (w[k].rfind("--expect-error=", 0) == 0) {
          for (line.expect_error = w[k].substr(15); ++k < w.size();) line.expect_error += " " + w[k];
          if (line.expect_error.empty()) Usage(line.where + ": --expect-error= needs the text of the error");
        } else if (w[k].find('=') != std::string::npos && w[k][0] != '-')
          line.assignments.push_back(w[k]);
        else
          Usage(line.where + ": `" + w[k] +
                "` is neither NAME=VALUE nor --flops=EXPR, --no-reference, --no-warp-specialization, "
                "--no-ping-pong, --no-staging, --persistent[=N] or --expect-error=TEXT");
      }
      lines.push_back(std::move(line));
    }
  }

  std::uint64_t seed = options.seed ? *options.seed : (std::uint64_t{std::random_device{}()} << 16);
  std::printf("gpu_cases: %zu lines, seed %llu, ptxas %s, into %s\n", lines.size(),
              static_cast<unsigned long long>(seed), options.ptxas.empty() ? "not found" : options.ptxas.c_str(),
              options.out.c_str());
  std::error_code ec;
  fs::create_directories(options.out, ec);
  Generator generator(options);
  bool ok = true;
  for (std::size_t i = 0; i < lines.size(); ++i) ok &= generator.Generate(lines[i], seed + i * 64);
  std::printf(
      "gpu_cases: %d generated, %d not generated (the compiler refused them: gpu_check fails them), %d refused as "
      "expected, %d errors\n",
      generator.generated, generator.refused, generator.expected, generator.errors);
  // Without gpu_check to fail the cases the compiler refused, they fail here.
  return ok && !(options.ptx_only && generator.refused > 0) ? 0 : 1;
}

}  // namespace
}  // namespace weft::gpu

int main(int argc, char** argv) {
  return weft::gpu::Main(argc, argv);
}
