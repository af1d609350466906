// The `weft` command. Subcommands run the phases in order and stop where --emit asks; results go to
// stdout, diagnostics to stderr. Exit codes: 0 success, 1 errors in the input, 2 bad usage,
// 3 internal compiler error.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <iterator>
#include <new>
#include <string>

#include <llvm/Config/llvm-config.h>

#include "base/stack.h"
#include "check/check.h"
#include "diagnostics/render.h"
#include "driver/build_command.h"
#include "driver/explain_command.h"
#include "driver/frontend.h"
#include "driver/layout_command.h"
#include "driver/options.h"
#include "driver/repl.h"
#include "driver/simulate_command.h"
#include "interp/interpreter.h"
#include "lsp/server.h"
#include "syntax/parser.h"
#include "syntax/printer.h"
#include "tile/lower.h"

namespace weft {
namespace {

using driver::Emit;
using driver::Options;

enum class ExitCode { Success = 0, InputError = 1, Usage = 2, Internal = 3 };

// Prints every diagnostic; returns whether there were errors.
bool Report(const Options& options, const SourceManager& sources, const Diagnostics& diagnostics) {
  bool use_color = UseColor(options.color, STDERR_FILENO);
  for (const Diagnostic& diagnostic : diagnostics.all()) std::cerr << Render(sources, diagnostic, use_color);
  return diagnostics.has_errors();
}

// What RunCheck keeps until the process ends (`used`: the store to it is not optimized away, and
// the leak checker sees it as reachable).
[[gnu::used]] driver::Front* kept_front = nullptr;

ExitCode RunCheck(const Options& options) {
  SourceManager sources;
  Diagnostics diagnostics;
  driver::Front front = driver::LoadParse(sources, diagnostics, options.inputs.front());
  if (!front.file) {
    Report(options, sources, diagnostics);
    return ExitCode::InputError;
  }
  const syntax::Ast& ast = *front.ast;
  switch (options.emit) {
    case Emit::Ast:
      std::cout << syntax::Print(ast);
      break;
    case Emit::AstSexp:
      std::cout << syntax::Dump(ast);
      break;
    case Emit::Types:
    case Emit::Core:
    case Emit::Tile: {
      // One line per definition that checked (and kernel that lowered), in source order; errors on
      // stderr. A file that does not parse is not checked: its broken declarations would only cause
      // more errors.
      driver::Check(front, sources, diagnostics);
      if (!front.result) break;
      const check::CheckResult& result = *front.result;
      if (options.emit == Emit::Core) {
        std::cout << core::Print(result.module, result.vars);
        break;
      }
      // Each kernel of FILE that checked is lowered to the tile IR: what the tier refuses is an
      // error of the file (docs/kernels.md). Synthesis is not run: it depends on the target.
      tile::FileKernels kernels = tile::LowerKernels(result.module, result.vars, *front.file, diagnostics);
      if (options.emit == Emit::Tile) {
        for (const tile::Kernel& kernel : kernels.lowered) std::cout << tile::Print(kernel);
        break;
      }
      for (const check::CheckedDef& def : result.defs) {
        if (!def.ok || std::ranges::count(kernels.refused, def.name) > 0) continue;
        if (!options.layouts) {
          std::cout << check::Signature(result, def) << "\n";
          continue;
        }
        std::cout << check::Signature(result.vars, def, true) << "\n" << check::LayoutLines(sources, result.vars, def);
      }
      break;
    }
  }
  std::cout.flush();
  bool errors = Report(options, sources, diagnostics);
  // The process ends after this: freeing the checked program would cost a tenth of the time of
  // checking a large file, for nothing. It stays reachable, so it is not a leak.
  kept_front = new driver::Front(std::move(front));
  return errors ? ExitCode::InputError : ExitCode::Success;
}

// `weft run FILE`: check, then run `def main` on the GPU (driver::RunOnGpu) or evaluate it on the
// interpreter. The interpreter's run-time failures are diagnostics at the place in FILE that failed.
ExitCode RunRun(const Options& options) {
  SourceManager sources;
  Diagnostics diagnostics;
  const std::string& path = options.inputs.front();
  driver::Front front = driver::LoadParseCheck(sources, diagnostics, path);
  if (!front.result) {
    Report(options, sources, diagnostics);
    return ExitCode::InputError;
  }
  const check::CheckResult& result = *front.result;
  const core::Def* main = result.module.Find("main");
  if (!diagnostics.has_errors() && (!main || main->span.file != *front.file)) {
    diagnostics.Emit(DiagnosticKind::NoMain, Span{}, path);
  }
  if (diagnostics.has_errors()) {
    Report(options, sources, diagnostics);
    return ExitCode::InputError;
  }
  // On the GPU when `main` calls kernels, compiles for it and there is one (docs/building.md).
  if (!options.cpu) {
    if (std::optional<int> status = driver::RunOnGpu(options, result.module, result.vars, *main, sources, std::cerr))
      return static_cast<ExitCode>(*status);
  }
  interp::InterpreterOptions run_options;
  run_options.args.push_back(path);
  run_options.args.insert(run_options.args.end(), options.program_args.begin(), options.program_args.end());
  interp::Interpreter interpreter(result.module, result.vars, run_options);
  std::optional<interp::RuntimeError> failure;
  RunWithDeepStack([&] {
    interp::EvalResult<interp::ValueRef> value = interpreter.Evaluate(*main);
    if (!value) failure = value.error();
  });
  std::cout.flush();
  if (failure) {
    diagnostics.Emit(DiagnosticKind::RuntimeFailure, failure->span, failure->message);
    Report(options, sources, diagnostics);
    return ExitCode::InputError;
  }
  return ExitCode::Success;
}

ExitCode Main(int argc, char** argv) {
  std::string error;
  std::optional<Options> options = driver::ParseOptions(std::vector<std::string>(argv + 1, argv + argc), error);
  if (!options) {
    std::cerr << "weft: " << error << "\n";
    return ExitCode::Usage;
  }
  if (options->help || options->command == driver::Command::Help) {
    std::cout << driver::HelpText(options->command);
    return ExitCode::Success;
  }
  switch (options->command) {
    case driver::Command::Version:
      std::cout << "weft " WEFT_VERSION " (LLVM " LLVM_VERSION_STRING ")\n";
      return ExitCode::Success;
    case driver::Command::Check:
      return RunCheck(*options);
    case driver::Command::Run:
      return RunRun(*options);
    case driver::Command::Layout:
      return static_cast<ExitCode>(driver::RunLayout(*options, std::cout, std::cerr));
    case driver::Command::Repl:
      return static_cast<ExitCode>(driver::RunRepl(*options));
    case driver::Command::Simulate:
      return static_cast<ExitCode>(driver::RunSimulate(*options, std::cout, std::cerr));
    case driver::Command::Explain:
      return static_cast<ExitCode>(driver::RunExplain(*options, std::cout, std::cerr));
    case driver::Command::Build:
      if (options->shared) return static_cast<ExitCode>(driver::RunBuildShared(*options, std::cerr));
      return static_cast<ExitCode>(driver::RunBuild(*options, std::cout, std::cerr));
    case driver::Command::Call:
      return static_cast<ExitCode>(driver::RunCall(*options, std::cerr));
    case driver::Command::Lsp:
      return static_cast<ExitCode>(lsp::RunServer(STDIN_FILENO, STDOUT_FILENO, driver::DefaultCheckOptions()));
    case driver::Command::Help:
    case driver::Command::None:
      break;
  }
  return ExitCode::Usage;
}

}  // namespace
}  // namespace weft

int main(int argc, char** argv) {
  try {
    return static_cast<int>(weft::Main(argc, argv));
  } catch (const weft::InternalError& error) {
    std::cerr << "weft: internal compiler error: " << error.what() << "\n";
  } catch (const std::bad_alloc&) {
    std::cerr << "weft: out of memory\n";
    return 1;
  } catch (const std::exception& error) {
    std::cerr << "weft: internal compiler error: " << error.what() << "\n";
  }
  return static_cast<int>(weft::ExitCode::Internal);
}
