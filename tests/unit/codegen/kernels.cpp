#include "kernels.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "check/check.h"
#include "diagnostics/render.h"
#include "syntax/parser.h"
#include "synth/synthesize.h"
#include "tile/lower.h"

namespace weft::codegen::testing {

const std::vector<std::string>& KernelFiles() {
  static const std::vector<std::string> files = {"stdlib/gemm.weft",
                                                 "stdlib/attention.weft",
                                                 "examples/gemm_kernel.weft",
                                                 "tests/lit/sim/gemm.weft",
                                                 "tests/lit/sim/gemm_tiles.weft",
                                                 "tests/lit/sim/gemm_col_major_b.weft",
                                                 "tests/lit/sim/attention_d64.weft",
                                                 "tests/lit/sim/attention_d128.weft",
                                                 "tests/lit/sim/integers.weft",
                                                 "tests/lit/sim/usage.weft"};
  return files;
}

std::vector<Emitted> EmitFile(const std::string& file, synth::Target target,
                              const schedule::LoweringOptions& lowering) {
  std::ifstream in(std::string(WEFT_SOURCE_DIR) + "/" + file);
  std::stringstream text;
  text << in.rdbuf();
  SourceManager sources;
  Diagnostics diagnostics;
  FileId id = sources.Add(file, text.str());
  syntax::Ast ast = syntax::Parse(sources, id, diagnostics);
  check::CheckOptions options;
  options.stdlib_dir = WEFT_SOURCE_DIR "/stdlib";
  check::CheckResult result = check::Check(sources, ast, diagnostics, options);
  std::vector<Emitted> out;
  if (diagnostics.has_errors()) return out;
  for (const core::Def& def : result.module.defs()) {
    if (!tile::IsKernel(def)) continue;
    auto kernel = tile::Lower(result.module, result.vars, def);
    if (!kernel) continue;
    Emitted e;
    e.file = file;
    e.kernel = kernel->name;
    e.target = target;
    for (const tile::Op& op : kernel->ops) {
      e.has_mma |= std::holds_alternative<tile::op::Mma>(op.node);
      e.has_reduce |= std::holds_alternative<tile::op::Reduce>(op.node);
    }
    auto plan = synth::Synthesize(*kernel, target);
    if (plan) {
      e.synthesized = true;
      for (const synth::OpChoice& op : plan->ops) e.tma_copies += synth::IsTma(op.instruction.kind);
      schedule::Options schedule_options = schedule::BuildOptions();
      schedule_options.lowering = lowering;
      auto device = EmitKernel(*kernel, *plan, schedule::Build(*kernel, *plan, schedule_options), sources);
      if (device) {
        e.device = std::move(*device);
      } else {
        for (const Diagnostic& d : device.error()) e.diagnostics += Render(sources, d, false);
      }
    }
    out.push_back(std::move(e));
  }
  return out;
}

std::string FindPtxas() {
  std::string configured = WEFT_PTXAS;
  if (!configured.empty() && std::filesystem::exists(configured)) return configured;
  if (const char* path = std::getenv("PATH")) {
    std::stringstream dirs(path);
    std::string dir;
    while (std::getline(dirs, dir, ':'))
      if (!dir.empty() && std::filesystem::exists(dir + "/ptxas")) return dir + "/ptxas";
  }
  if (std::filesystem::exists("/usr/local/cuda/bin/ptxas")) return "/usr/local/cuda/bin/ptxas";
  return "";
}

bool Assemble(const std::string& ptxas, const std::string& ptx, const std::string& arch, std::string& report) {
  auto dir = std::filesystem::temp_directory_path() / ("weft-ptxas-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string in = (dir / "kernel.ptx").string(), out = (dir / "kernel.cubin").string();
  std::ofstream(in) << ptx;
  std::string command = "'" + ptxas + "' -arch=" + arch + " -v '" + in + "' -o '" + out + "' 2>&1";
  report.clear();
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return false;
  char buffer[4096];
  while (std::size_t n = fread(buffer, 1, sizeof buffer, pipe)) report.append(buffer, n);
  int status = pclose(pipe);
  std::filesystem::remove_all(dir);
  return status == 0;
}

}  // namespace weft::codegen::testing
