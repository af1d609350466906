// Command-line parsing for `weft`. (LLVM's cl:: library would clash with options libLLVM itself
// registers, such as --color, so the driver parses its few options itself.)
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "diagnostics/render.h"

namespace weft::driver {

enum class Command { None, Help, Version, Check, Layout, Run, Repl, Lsp, Simulate, Explain, Build, Call };

enum class Emit { Types, Core, Tile, Ast, AstSexp, Llvm, Ptx, Graph, Layouts };

struct Options {
  Command command = Command::None;
  std::vector<std::string> inputs;
  Emit emit = Emit::Types;
  ColorMode color = ColorMode::Auto;
  bool help = false;     // `weft COMMAND --help`
  bool layouts = false;  // `weft check --layouts`: types with their layouts (docs/layouts.md)
  // `weft layout`: the EXPR is inputs[0].
  bool table = false;             // --table: every coordinate -> offset
  bool grid = false;              // --grid: the offsets as a grid
  std::optional<std::string> tv;  // --tv ATOM or --tv list (then there is no EXPR)
  // `weft run`: the program's own arguments (after `--`); --cpu picks the interpreter, --gpu
  // refuses to fall back to it (docs/building.md).
  std::vector<std::string> program_args;
  bool cpu = false;
  bool gpu = false;
  // `weft build -o EXE`: the executable to write (with --shared: the shared library).
  std::string output;
  // `weft build --shared`: a shared library of FILE's functions (docs/python.md); `--instance
  // 'NAME TYPE...'` also exports an instance of a polymorphic one (`softmax f32[_, _]`).
  bool shared = false;
  std::vector<std::string> instances;
  bool only_instances = false;  // --only-instances: export the instances alone (weft.compile's per call)
  // `weft call FILE NAME IN.npy... --out DIR`: inputs[1] is NAME, inputs[2..] the arguments' files;
  // the results go to DIR/0.npy, DIR/1.npy, ...
  std::string out_dir;
  // `weft explain`, `weft simulate` and `weft build`: the kernel (explain: all when empty) and the target;
  // simulate: `name=value` sizes and the inputs' seed.
  std::string kernel;
  std::string target = "sm_80";  // `weft build`: sm_90a unless --target says otherwise
  std::vector<std::string> sizes;
  std::vector<std::string> scalars;  // simulate, explain: `name=value` of scalar parameters
  std::uint64_t seed = 1;
  // `weft explain` (with --kernel and --target above): print the solver's time; the GPU the cost
  // model predicts for (`h100`, `h200`); `sizes` and `scalars` above are its inputs.
  bool timings = true;
  std::string machine = "h100";
  // `weft build` and `weft run`: warnings (W0900-: a path predicted much slower than the best one)
  // silenced (-w), or errors that stop the build (--Werror).
  bool no_warnings = false;
  bool warnings_as_errors = false;
};

// Parses argv; on bad usage returns nothing and sets `error` to a one-line explanation.
std::optional<Options> ParseOptions(const std::vector<std::string>& args, std::string& error);

// The text of `weft --help`, or of `weft COMMAND --help`.
std::string HelpText(Command command);

}  // namespace weft::driver
