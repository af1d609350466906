#include "driver/options.h"

#include <cstdlib>

#include "layout/expr.h"

namespace weft::driver {
namespace {

struct CommandInfo {
  const char* name;
  Command command;
  const char* summary;
  const char* help;
};

constexpr CommandInfo kCommands[] = {
    {"check", Command::Check, "check FILE's types and shapes, print each definition's type",
     "usage: weft check FILE [--emit=types|core|tile|ast|ast-sexp] [--layouts] [--color=auto|always|never]\n"
     "\n"
     "Checks FILE (- for standard input), lowers its kernels to the tile IR, and reports every error\n"
     "in it (layout synthesis, which depends on the target, is `weft explain`'s).\n"
     "  --emit=types      print `name : type` for each definition that checked (the default)\n"
     "  --emit=core       print the typed core IR: every binding with its type, run-time checks\n"
     "  --emit=tile       print each kernel's tile IR: its ops with the space and shape of each value\n"
     "  --emit=ast        print the syntax tree as weft source (it parses back to the same tree)\n"
     "  --emit=ast-sexp   print the syntax tree as an S-expression, one form per node\n"
     "  --layouts         with --emit=types: each tensor's layout after its shape, and a line per view\n"
     "                    its body reads, with its layout (docs/layouts.md)\n"
     "  --color=WHEN      colour diagnostics: auto (default: when stderr is a terminal), always, never\n"},
    {"run", Command::Run, "run FILE's `def main`: on the GPU when there is one, else on the CPU interpreter",
     "usage: weft run FILE [--cpu | --gpu] [--color=auto|always|never] [-- ARGS...]\n"
     "\n"
     "Checks FILE and runs its `def main`. When `main` calls kernels, compiles for the GPU and\n"
     "the GPU is usable, it is built as `weft build` builds it (for sm_90a on a Hopper GPU, else sm_80)\n"
     "and run there; otherwise it runs on the CPU reference interpreter, after a note on stderr that\n"
     "says why when `main` calls kernels (docs/building.md). `load`, `save` and `print` read and write\n"
     ".npy files and standard output; `arg i` is the i-th of ARGS (`arg 0` is FILE).\n"
     "  --cpu             run on the interpreter, without looking for a GPU\n"
     "  --gpu             run on the GPU or fail (exit status 1) with the reason it cannot\n"
     "  -w, --Werror      no warnings; warnings are errors (as `weft build`)\n"
     "  --color=WHEN      colour diagnostics: auto (default: when stderr is a terminal), always, never\n"
     "A failed run-time check, a bad .npy file or an index out of bounds stops the program with an\n"
     "error that names the place in FILE, and exit status 1.\n"},
    {"layout", Command::Layout, "evaluate a layout-algebra expression in CuTe notation, or draw an atom",
     "usage: weft layout EXPR [--table] [--grid] [--color=auto|always|never]\n"
     "       weft layout --tv ATOM|list\n"
     "\n"
     "Evaluates EXPR, a layout-algebra expression in CuTe's notation, and prints the result the same way\n"
     "(it can be pasted back), e.g. weft layout 'composition((4,2):(2,1), (2,2):(1,2))' prints (2,2):(2,4).\n"
     "  --table           also print every coordinate: index, natural coordinate -> offset\n"
     "  --grid            also print the offsets as a grid: mode 0 down, mode 1 across\n"
     "  --tv ATOM         draw an instruction atom's thread-value layouts, one T<thread>V<value> per element\n"
     "  --tv list         name every atom\n"
     "  --color=WHEN      colour diagnostics: auto (default: when stderr is a terminal), always, never\n"
     "\n"
     "EXPR is a layout `(4,2):(2,1)`, a shape `(4,2)`, a tiler `<4:1, 2:1>`, a swizzle `Sw<3,4,3>`, a\n"
     "swizzled layout `Sw<3,4,3> o 0 o (8,64):(64,1)`, or an operation on them (docs/layouts.md):\n"},
    {"repl", Command::Repl, "an interactive session: evaluate expressions, see their types",
     "usage: weft repl [FILE...] [--color=auto|always|never]\n"
     "\n"
     "Starts an interactive session (docs/repl.md) after loading each FILE as `:load FILE` does. Type an\n"
     "expression to evaluate it and see its type, `def` or `let x = e` to define a name, or a command:\n"
     "`:type EXPR`, `:load FILE`, `:reload`, `:browse`, `:layout EXPR`, `:explain NAME`, `:help`, `:quit`.\n"
     "Line editing and history (in ~/.weft_history, or $WEFT_HISTORY) when standard input is a terminal;\n"
     "otherwise no prompts are written, only results and errors, so a script's output reads as a transcript.\n"
     "  --color=WHEN      colour diagnostics: auto (default: when stderr is a terminal), always, never\n"},
    {"simulate", Command::Simulate, "run a kernel on the thread-level simulator and compare it with its meaning",
     "usage: weft simulate FILE --kernel NAME [--target sm_80|sm_90a] --size NAME=VALUE... [--scalar NAME=VALUE...]\n"
     "                     [--seed N]\n"
     "\n"
     "Checks FILE, synthesizes the layouts and instructions of kernel NAME for the target, runs them\n"
     "thread by thread on a simulated GPU block (docs/simulator.md) on random inputs, and compares each\n"
     "output with the interpreter's call of the kernel on the same inputs: relative error under 1e-2\n"
     "with f16/bf16 tensors, 1e-5 with f32, bitwise for integers, NaN never. Prints PASS or FAIL; exit\n"
     "status 1 on FAIL.\n"
     "  --kernel NAME     the kernel to run\n"
     "  --target T        sm_80 (mma.sync, ldmatrix, cp.async; the default) or sm_90a (wgmma, TMA)\n"
     "  --size NAME=N     a size the kernel's types name (`--size m=256`), once per size (all of them)\n"
     "  --scalar NAME=V   a scalar parameter's value (`--scalar causal=true`, `--scalar scale=0.125`);\n"
     "                    random like the tensors when not given\n"
     "  --seed N          the inputs' seed (`random`'s generator; input i uses N + i), 1 by default\n"
     "  --color=WHEN      colour diagnostics: auto (default: when stderr is a terminal), always, never\n"},
    {"explain", Command::Explain, "show the layouts and instructions synthesized for each kernel of FILE",
     "usage: weft explain FILE [--kernel NAME] [--target sm_80|sm_90a] [--no-timings]\n"
     "                    [--size NAME=N... [--scalar NAME=VALUE...]] [--machine h100|h200]\n"
     "\n"
     "Checks FILE, lowers each kernel to the tile IR and synthesizes its layouts and instructions for\n"
     "the target (docs/synthesis.md). Prints, per kernel, the block size, shared memory, estimated\n"
     "registers and how the choice was made; per tile, its shape, space, layout in CuTe notation,\n"
     "swizzle, the instructions that make and move it, bank conflicts per access and bytes moved.\n"
     "A kernel with a `pipeline` gets its schedule and predicted time (docs/scheduling.md).\n"
     "  --kernel NAME     only this kernel\n"
     "  --target T        sm_80 (mma.sync, ldmatrix, cp.async; the default) or sm_90a (wgmma, TMA);\n"
     "                    `weft build` defaults to sm_90a: pass --target sm_90a to see what it compiles\n"
     "  --no-timings      leave out the solver's time (for golden tests)\n"
     "  --size NAME=N     predict the time at this size (`--size m=2048`), once per size (all of them;\n"
     "                    with --kernel); without: 4096, or 16 for a size of leading axes only\n"
     "  --scalar NAME=V   a scalar parameter's value for the prediction (`--scalar causal=true`; with\n"
     "                    --kernel); without: 0 or false\n"
     "  --machine M       the GPU the time is predicted for: h100 (the default) or h200\n"
     "  --color=WHEN      colour diagnostics: auto (default: when stderr is a terminal), always, never\n"},
    {"build", Command::Build, "compile FILE's `def main` and its kernels to an executable, or print device code",
     "usage: weft build FILE -o EXE [--target sm_90a|sm_80]\n"
     "       weft build --shared FILE -o libNAME.so [--target sm_90a|sm_80] [--instance 'NAME TYPE...']...\n"
     "       weft build FILE --emit=ptx|llvm [--kernel NAME] [--target sm_90a|sm_80]\n"
     "       weft build FILE --emit=graph|layouts [--target sm_90a|sm_80]\n"
     "\n"
     "Checks FILE, synthesizes the layouts and instructions of each kernel `main` calls for the target,\n"
     "generates their device code through LLVM's NVPTX back end (docs/codegen.md) and `main`'s host\n"
     "code for x86-64, and links them with the runtime into EXE, which needs only libc and an NVIDIA\n"
     "driver (docs/building.md). `main` may call kernels and the host built-ins (`random`, `load`,\n"
     "`save`, `print`, `arg`, `time`); its array-tier operations fuse into generated kernels (docs/graph.md;\n"
     "what the graph does not take yet, a `loop` in `main` for one, is refused with E0800).\n"
     "  -o EXE            the executable to write\n"
     "  --shared          a shared library instead: each function of FILE whose types fix its\n"
     "                    parameters' dtypes and ranks, callable through weft/library.h's C ABI and the\n"
     "                    Python package (docs/python.md)\n"
     "  --instance 'NAME TYPE...'  with --shared: also export polymorphic NAME at these parameter\n"
     "                    types, dims written `_` (`--instance 'softmax bf16[_, _]'`)\n"
     "  --only-instances  with --instance: export the instances and nothing else\n"
     "  --target T        sm_90a (wgmma, TMA: H100/H200; the default) or sm_80 (mma.sync, ldmatrix,\n"
     "                    cp.async: Ampere and newer)\n"
     "  --emit=ptx        print the PTX (after LLVM's O3 pipeline) of each kernel `main` calls, of\n"
     "                    every kernel of FILE when it has no `main`, or of --kernel NAME\n"
     "  --emit=llvm       the same as LLVM IR (before optimization), and `main`'s host module\n"
     "  --emit=graph      print `main` as a dataflow graph, the kernels its operations fuse into and\n"
     "                    its device buffers (docs/graph.md)\n"
     "  --emit=layouts    print each value's layout (row-major where stored, views strided over\n"
     "                    them) and how each view a stdlib kernel reads is read: in place by which\n"
     "                    kernels, or a copy and why, with the choice's predicted bytes\n"
     "  --kernel NAME     only this kernel of FILE (with --emit)\n"
     "  -w                no warnings (a product or attention left on a slow path is W0900, W0901)\n"
     "  --Werror          warnings are errors: nothing is built\n"
     "  --color=WHEN      colour diagnostics: auto (default: when stderr is a terminal), always, never\n"
     "Environment: WEFT_CC (the C compiler driver that links, `cc` by default), WEFT_RUNTIME_LIB (the\n"
     "runtime archive to link), WEFT_PTXAS (ptxas, to embed cubins; empty: PTX only).\n"},
    {"call", Command::Call, "call one function of FILE on .npy files, on the CPU interpreter",
     "usage: weft call FILE NAME ARG.npy... --out DIR [--color=auto|always|never]\n"
     "\n"
     "Checks FILE and calls its function NAME on the tensors in the ARG.npy files, one a parameter, on\n"
     "the CPU interpreter; writes its results to DIR/0.npy, DIR/1.npy, ... (one for a tensor, one per\n"
     "element of a tuple). Sizes are bound from the arguments' shapes; a polymorphic function is\n"
     "instantiated at the files' dtypes and ranks. The Python package's interpreter path (docs/python.md).\n"
     "  --out DIR         where the results go\n"
     "  --color=WHEN      colour diagnostics: auto (default: when stderr is a terminal), always, never\n"
     "An argument that its parameter's type or a `where` fact refuses is one line, `weft: error:\n"
     "`NAME`: parameter `x` expects ...`, and exit status 1.\n"},
    {"lsp", Command::Lsp, "a language server for editors (the Language Server Protocol, on stdin and stdout)",
     "usage: weft lsp\n"
     "\n"
     "Serves the Language Server Protocol on standard input and output, for an editor to start\n"
     "(docs/lsp.md; editor set-up in docs/editors.md): diagnostics as you type, the type of the name or\n"
     "expression under the cursor with its symbolic shape, go to definition, the file's definitions\n"
     "with their types, and completion of the names in scope. Messages about the server itself go\n"
     "to standard error. `--stdio`, which some clients add, is accepted and changes nothing.\n"},
};

bool EmitGiven(const Options& options) {
  return options.emit == Emit::Ptx || options.emit == Emit::Llvm || options.emit == Emit::Graph ||
         options.emit == Emit::Layouts;
}

// Splits `--name=value` or takes the value from the next argument.
bool TakeValue(const std::vector<std::string>& args, std::size_t& i, const std::string& name, std::string& value) {
  const std::string& arg = args[i];
  std::string prefix = "--" + name;
  if (arg.rfind(prefix + "=", 0) == 0) {
    value = arg.substr(prefix.size() + 1);
    return true;
  }
  if (arg == prefix && i + 1 < args.size()) {
    value = args[++i];
    return true;
  }
  return false;
}

// `--emit=VALUE` of `weft check` (what to print of the front end) or `weft build` (device code).
bool ParseEmit(Options& options, const std::string& value, std::string& error) {
  if (options.command == Command::Check) {
    if (value == "types") {
      options.emit = Emit::Types;
    } else if (value == "core") {
      options.emit = Emit::Core;
    } else if (value == "tile") {
      options.emit = Emit::Tile;
    } else if (value == "ast") {
      options.emit = Emit::Ast;
    } else if (value == "ast-sexp") {
      options.emit = Emit::AstSexp;
    } else {
      error = "unknown value `" + value + "` for --emit; expected `types`, `core`, `tile`, `ast` or `ast-sexp`";
      return false;
    }
    return true;
  }
  if (value == "ptx") {
    options.emit = Emit::Ptx;
  } else if (value == "llvm") {
    options.emit = Emit::Llvm;
  } else if (value == "graph") {
    options.emit = Emit::Graph;
  } else if (value == "layouts") {
    options.emit = Emit::Layouts;
  } else {
    error = "unknown value `" + value + "` for --emit; expected `ptx`, `llvm`, `graph` or `layouts`";
    return false;
  }
  return true;
}

// Reads args[i], an option of `options.command` or an input (i moves past a value it takes);
// false with `error` set when the command has no such option or its value is wrong.
bool ParseArgument(const std::vector<std::string>& args, std::size_t& i, Options& options, bool& target_given,
                   std::string& error) {
  const std::string& arg = args[i];
  std::string value;
  if (arg == "--help" || arg == "-h") {
    options.help = true;
  } else if (options.command == Command::Lsp && arg == "--stdio") {
    return true;  // the only transport
  } else if (options.command == Command::Run && arg == "--cpu") {
    options.cpu = true;
  } else if (options.command == Command::Run && arg == "--gpu") {
    options.gpu = true;
  } else if (options.command == Command::Build && arg == "--shared") {
    options.shared = true;
  } else if (options.command == Command::Build && arg == "--only-instances") {
    options.only_instances = true;
  } else if (options.command == Command::Build && TakeValue(args, i, "instance", value)) {
    options.instances.push_back(value);
  } else if (options.command == Command::Call && TakeValue(args, i, "out", value)) {
    options.out_dir = value;
  } else if (options.command == Command::Build && arg == "-o") {
    if (i + 1 == args.size()) {
      error = "-o needs the path of the executable to write";
      return false;
    }
    options.output = args[++i];
  } else if (options.command == Command::Layout && (arg == "--table" || arg == "--grid")) {
    (arg == "--table" ? options.table : options.grid) = true;
  } else if (options.command == Command::Layout && arg == "--tv" && i + 1 == args.size()) {
    error = "--tv needs an atom name, or `list`";
    return false;
  } else if (options.command == Command::Layout && TakeValue(args, i, "tv", value)) {
    options.tv = value;
  } else if ((options.command == Command::Check || options.command == Command::Build) &&
             TakeValue(args, i, "emit", value)) {
    return ParseEmit(options, value, error);
  } else if ((options.command == Command::Simulate || options.command == Command::Explain ||
              options.command == Command::Build) &&
             TakeValue(args, i, "kernel", value)) {
    options.kernel = value;
  } else if ((options.command == Command::Simulate || options.command == Command::Explain ||
              options.command == Command::Build) &&
             TakeValue(args, i, "target", value)) {
    options.target = value;
    target_given = true;
  } else if ((options.command == Command::Build || options.command == Command::Run) && arg == "-w") {
    options.no_warnings = true;
  } else if ((options.command == Command::Build || options.command == Command::Run) && arg == "--Werror") {
    options.warnings_as_errors = true;
  } else if (options.command == Command::Check && args[i] == "--layouts") {
    options.layouts = true;
  } else if (options.command == Command::Explain && args[i] == "--no-timings") {
    options.timings = false;
  } else if ((options.command == Command::Simulate || options.command == Command::Explain) &&
             TakeValue(args, i, "size", value)) {
    options.sizes.push_back(value);
  } else if ((options.command == Command::Simulate || options.command == Command::Explain) &&
             TakeValue(args, i, "scalar", value)) {
    options.scalars.push_back(value);
  } else if (options.command == Command::Explain && TakeValue(args, i, "machine", value)) {
    if (value != "h100" && value != "h200") {
      error = "unknown value `" + value + "` for --machine; expected `h100` or `h200`";
      return false;
    }
    options.machine = value;
  } else if (options.command == Command::Simulate && TakeValue(args, i, "seed", value)) {
    options.seed = std::strtoull(value.c_str(), nullptr, 10);
  } else if (TakeValue(args, i, "color", value)) {
    if (value == "auto") {
      options.color = ColorMode::Auto;
    } else if (value == "always") {
      options.color = ColorMode::Always;
    } else if (value == "never") {
      options.color = ColorMode::Never;
    } else {
      error = "unknown value `" + value + "` for --color; expected `auto`, `always` or `never`";
      return false;
    }
  } else if (arg.size() > 1 && arg[0] == '-') {
    const std::string& first = args[0];
    error = "unknown option `" + arg + "` for `weft " + first + "`; run `weft " + first + " --help`";
    return false;
  } else {
    options.inputs.push_back(arg);
  }
  return true;
}

// Whether the options read make one command line: what each command needs, and what goes only
// with what; false with `error` saying what is wrong.
bool CheckCombination(const Options& options, const std::string& first, std::string& error) {
  if (options.command == Command::Layout) {
    // EXPR, or --tv alone. An EXPR with spaces must be quoted, hence the hint.
    if (options.tv && (!options.inputs.empty() || options.table || options.grid)) {
      error = "`weft layout --tv` takes an atom name and nothing else; run `weft layout --help`";
    } else if (!options.tv && options.inputs.empty()) {
      error = "`weft layout` needs an EXPR or --tv; run `weft layout --help`";
    } else if (options.inputs.size() > 1) {
      error = "`weft layout` takes one EXPR, not " + std::to_string(options.inputs.size()) +
              "; quote the expression: weft layout '(4,2):(2,1)'";
    } else {
      return true;
    }
    return false;
  }
  if (options.command == Command::Build) {
    bool emit = options.emit == Emit::Ptx || options.emit == Emit::Llvm || options.emit == Emit::Graph ||
                options.emit == Emit::Layouts;
    if (!emit && options.output.empty()) {
      error =
          "`weft build` needs -o EXE (an executable) or --emit=ptx|llvm|graph|layouts (device code, the dataflow "
          "graph, the layouts); run "
          "`weft build --help`";
      return false;
    }
    if (emit && !options.output.empty()) {
      error = "`weft build` takes -o EXE or --emit, not both: --emit prints to standard output";
      return false;
    }
    if (!emit && !options.kernel.empty()) {
      error = "--kernel picks the kernel whose code --emit prints; an executable has every kernel `main` calls";
      return false;
    }
  }
  if (options.command == Command::Build && options.shared && (EmitGiven(options) || options.output.empty())) {
    error = "`weft build --shared` needs -o libNAME.so, and no --emit";
    return false;
  }
  if (options.command == Command::Build && !options.shared && (!options.instances.empty() || options.only_instances)) {
    error = "--instance is for `weft build --shared`";
    return false;
  }
  if (options.command == Command::Call) {
    if (options.inputs.size() < 2 || options.out_dir.empty()) {
      error = "`weft call` needs FILE, NAME, the arguments' .npy files and --out DIR; run `weft call --help`";
      return false;
    }
    return true;
  }
  if (options.command == Command::Run && options.cpu && options.gpu) {
    error = "`weft run` takes --cpu or --gpu, not both";
    return false;
  }
  if (options.command == Command::Explain && options.kernel.empty() &&
      (!options.sizes.empty() || !options.scalars.empty())) {
    error = "`weft explain --size/--scalar` needs --kernel NAME: the sizes are one kernel's";
    return false;
  }
  if (options.command == Command::Simulate && options.kernel.empty()) {
    error = "`weft simulate` needs --kernel NAME";
    return false;
  }
  if (options.command == Command::Repl) return true;  // any number of files to load
  if (options.command == Command::Lsp) {
    if (options.inputs.empty()) return true;
    error = "`weft lsp` takes no FILE: an editor opens documents through the protocol";
    return false;
  }
  if (options.inputs.size() != 1) {
    error = options.inputs.empty()
                ? "`weft " + first + "` needs a FILE; run `weft " + first + " --help`"
                : "`weft " + first + "` takes one FILE, not " + std::to_string(options.inputs.size());
    return false;
  }
  return true;
}

}  // namespace

std::string HelpText(Command command) {
  for (const CommandInfo& info : kCommands) {
    if (info.command != command) continue;
    std::string text = info.help;
    if (command == Command::Layout) {
      for (const auto& [name, description] : layout::Operations()) text += "  " + description + "\n";
    }
    return text;
  }
  std::string text =
      "weft: a functional tensor language and its compiler\n"
      "\n"
      "usage: weft COMMAND [OPTIONS] FILE\n"
      "\n"
      "commands:\n";
  for (const CommandInfo& info : kCommands) {
    std::string name = info.name;
    text += "  " + name + std::string(10 - name.size(), ' ') + info.summary + "\n";
  }
  text +=
      "\n"
      "  --help       this text; `weft COMMAND --help` describes one command\n"
      "  --version    the version of weft and of the LLVM it uses\n"
      "\n"
      "Exit status: 0 success, 1 errors in the input, 2 bad usage, 3 internal compiler error.\n";
  return text;
}

std::optional<Options> ParseOptions(const std::vector<std::string>& args, std::string& error) {
  Options options;
  if (args.empty()) {
    error = "no command given; run `weft --help` to see the commands";
    return std::nullopt;
  }
  const std::string& first = args[0];
  if (first == "--help" || first == "-h") {
    options.command = Command::Help;
    return options;
  }
  if (first == "--version") {
    options.command = Command::Version;
    return options;
  }
  for (const CommandInfo& info : kCommands) {
    if (first == info.name) options.command = info.command;
  }
  if (options.command == Command::None) {
    error = first[0] == '-' ? "unknown option `" + first + "`; run `weft --help` to see the options"
                            : "unknown command `" + first + "`; run `weft --help` to see the commands";
    return std::nullopt;
  }
  bool target_given = false;
  for (std::size_t i = 1; i < args.size(); ++i) {
    if (options.command == Command::Run && args[i] == "--") {
      options.program_args.assign(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
      break;
    }
    if (!ParseArgument(args, i, options, target_given, error)) return std::nullopt;
  }
  if (options.help) return options;
  if (options.command == Command::Build && !target_given) options.target = "sm_90a";
  if (!CheckCombination(options, first, error)) return std::nullopt;
  return options;
}

}  // namespace weft::driver
