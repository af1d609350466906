// `weft build` and `weft run`'s GPU half: check -> codegen::LowerMain (host) -> per kernel
// synth::Synthesize -> codegen::EmitKernel (device) -> ptxas (a cubin, when the toolkit is here) ->
// codegen::AttachKernel, and per dtype `main` draws `random` of, codegen::EmitRandomKernel -> ptxas
// -> codegen::AttachRandomKernel -> codegen::EmitObject -> codegen::Link (`cc`). docs/building.md.
#include "driver/build_command.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "base/overloaded.h"
#include "base/stack.h"
#include "check/check.h"
#include "codegen/device.h"
#include "codegen/random.h"
#include "core/type_printer.h"
#include "diagnostics/render.h"
#include "driver/explain_command.h"
#include "driver/frontend.h"
#include "driver/kernel_path.h"
#include "graph/epilogue.h"
#include "graph/graph.h"
#include "interp/interpreter.h"
#include "syntax/parser.h"
#include "synth/synthesize.h"
#include "tile/lower.h"
#include "weft/npy.h"
#include "weft/runtime.h"

namespace weft::driver {
namespace {

// Where the runtime archive that executables link is (WEFT_RUNTIME_LIB overrides the build tree's).
std::string RuntimeLibrary() {
  if (const char* path = std::getenv("WEFT_RUNTIME_LIB"); path != nullptr && *path != '\0') return path;
  return WEFT_RUNTIME_LIB_PATH;
}

// ptxas, to embed cubins (WEFT_PTXAS overrides the one CMake found; empty: PTX only).
std::string Ptxas() {
  if (const char* path = std::getenv("WEFT_PTXAS")) return path;
  return WEFT_PTXAS_PATH;
}

std::string Compiler() {
  if (const char* cc = std::getenv("WEFT_CC"); cc != nullptr && *cc != '\0') return cc;
  return "cc";
}

// A fresh directory for the build's intermediate files, removed when it goes.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "weft-build-XXXXXX").string();
    if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Runs a command; its output (stdout and stderr) into `output`. Returns the exit status.
int RunCommand(const std::string& command, std::string& output) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return -1;
  char buffer[512];
  while (std::fgets(buffer, sizeof buffer, pipe)) output += buffer;
  int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string OneLine(const std::string& text) {
  std::string line;
  for (char c : text) line += c == '\n' ? ' ' : c;
  while (!line.empty() && line.back() == ' ') line.pop_back();
  return line;
}

// The launch comment and code of one kernel (the --emit output; device.h's contract).
void PrintDevice(const Options& options, const tile::Kernel& kernel, const codegen::DeviceKernel& device,
                 std::ostream& out) {
  const char* comment = options.emit == Emit::Llvm ? "; " : "// ";
  out << comment << "weft: entry " << device.entry << ", " << device.threads << " threads, " << device.shared_bytes
      << " bytes of dynamic shared memory, sizes (";
  for (std::size_t i = 0; i < device.sizes.size(); ++i) out << (i ? ", " : "") << kernel.size_names.at(device.sizes[i]);
  out << ")\n";
  // Each TMA tensor map the entry takes after its other parameters, in order (sm_90a).
  for (const codegen::TensorMapSpec& map : device.tensor_maps) {
    static const char* swizzles[] = {"none", "32B", "64B", "128B"};
    out << comment << "weft: tensor map of parameter " << map.param << " (" << kernel.params.at(map.param).name
        << "): box " << map.box_cols << " x " << map.box_rows << " (columns x rows), swizzle "
        << swizzles[static_cast<int>(map.swizzle)];
    if (map.rank > 0) out << ", read in place through a view: " << map.rank << " dims";
    out << "\n";
  }
  out << (options.emit == Emit::Llvm ? device.llvm_ir : device.ptx);
}

// The launch comment and code of `random`'s kernel of one dtype (random.h's contract).
void PrintRandom(const Options& options, Dtype dtype, const codegen::DeviceKernel& device, std::ostream& out) {
  const char* comment = options.emit == Emit::Llvm ? "; " : "// ";
  out << comment << "weft: entry " << device.entry << ", " << device.threads << " threads, `random` of "
      << Spelling(dtype) << " (out, count, seed), any grid\n";
  out << (options.emit == Emit::Llvm ? device.llvm_ir : device.ptx);
}

// The launch comment and code of one array kernel (array.h's contract).
void PrintArray(const Options& options, const codegen::ArrayUse& use, const core::VarStore& vars, std::ostream& out) {
  const char* comment = options.emit == Emit::Llvm ? "; " : "// ";
  const codegen::DeviceKernel& device = use.kernel.device;
  auto name = [&](core::SizeVarId v) { return vars.info(v).name; };
  out << comment << "weft: entry " << device.entry << " (" << use.name << " of `main`), " << device.threads
      << " threads, " << device.shared_bytes << " bytes of dynamic shared memory, " << use.kernel.tensors.size()
      << " tensors (" << use.kernel.inputs << " read), sizes (";
  for (std::size_t i = 0; i < use.kernel.sizes.size(); ++i) out << (i ? ", " : "") << name(use.kernel.sizes[i]);
  out << "), grid (";
  for (std::size_t i = 0; i < use.kernel.grid.size(); ++i)
    out << (i ? ", " : "") << core::ToString(use.kernel.grid[i], name);
  out << ")\n";
  out << (options.emit == Emit::Llvm ? device.llvm_ir : device.ptx);
}

// FILE parsed and checked; `file` is set when it could be read.
struct Checked {
  SourceManager sources;
  Diagnostics diagnostics;
  std::optional<FileId> file;
  std::optional<check::CheckResult> result;
  std::optional<check::CheckResult> stdlib;  // `import gemm` alone, for the products routed to it
};

// The stdlib kernels the graph routes products and attention to (graph::FuseOptions), checked into
// the same sources as the program so that their spans (line information) resolve. Without them (a
// stdlib that does not check) every product runs on the generic kernel.
std::optional<check::CheckResult> CheckStdlibKernels(SourceManager& sources) {
  Diagnostics quiet;
  FileId id = sources.Add("<stdlib kernels>", "import gemm\nimport attention\n");
  Front front = Parse(sources, quiet, id);
  Check(front, sources, quiet);
  if (quiet.has_errors()) return std::nullopt;
  return std::move(front.result);
}

// `main`'s dataflow graph, built once a build, and its plan: the products with their epilogue in
// an epilogue kernel (graph/epilogue.h), built on the stdlib gemm's tile IR. An epilogue kernel
// that does not synthesize for `target` (too many registers for the tile, say) is given up: the
// graph is fused again with its product alone, and the reason shows in `--emit=graph`. Without a
// stdlib (`stdlib` null) no epilogue kernel is built, and the host runs those groups on the
// generic product.
struct MainGraph {
  graph::Graph graph;
  graph::Plan plan;
  std::map<std::string, tile::Kernel> epilogues;  // by name: the plan's epilogue kernels
  std::vector<Diagnostic> warnings;               // the slow paths the plan takes (graph::SlowPaths)
};

Result<MainGraph, std::vector<Diagnostic>> PlanMain(const core::Module& module, const core::VarStore& vars,
                                                    const core::Def& main, synth::Target target,
                                                    const check::CheckResult* stdlib) {
  if (std::optional<Diagnostic> refused = codegen::MainRefused(main)) return std::vector<Diagnostic>{*refused};
  auto graph = graph::Build(module, vars, main);
  if (!graph) return graph.error();
  // The stdlib gemms the epilogues are built on, each lowered once.
  std::map<std::string, std::optional<tile::Kernel>> gemms;
  auto gemm = [&](const std::string& name) -> const tile::Kernel* {
    auto [it, fresh] = gemms.try_emplace(name);
    const core::Def* def = fresh && stdlib ? stdlib->module.Find(name) : nullptr;
    if (def && def->kernel)
      if (auto lowered = tile::Lower(stdlib->module, stdlib->vars, *def)) it->second = std::move(*lowered);
    return it->second ? &*it->second : nullptr;
  };
  graph::FuseOptions fuse;
  fuse.views_in_place = target == synth::Target::Sm90a;  // its stdlib kernels copy operands by TMA
  std::map<std::string, std::string> tried;              // per kernel text: why it failed, or empty
  std::map<std::string, tile::Kernel> built;             // per kernel text: the kernel, when it synthesizes
  for (;;) {
    graph::Plan plan = graph::Fuse(*graph, fuse);
    bool again = false;
    for (const graph::Group& group : plan.groups) {
      if (!group.epilogue) continue;
      auto epilogue = graph::EpilogueKernel(*graph, group.nodes, group.kernel);
      std::string why = epilogue ? std::string() : "no kernel";
      std::string text = epilogue ? graph::EpilogueText(*epilogue) : std::string();
      if (auto seen = epilogue ? tried.find(text) : tried.end(); seen != tried.end()) {
        why = seen->second;
      } else if (const tile::Kernel* base = epilogue ? gemm(epilogue->tile) : nullptr) {
        auto kernel = graph::EpilogueTile(*epilogue, *base);
        if (!kernel) {
          why = kernel.error();
        } else if (auto synthesized = synth::Synthesize(*kernel, target); !synthesized) {
          why = "its epilogue kernel does not fit the tile on " + std::string(synth::Spelling(target)) + ": " +
                synthesized.error().front().message;
        } else {
          built.emplace(text, std::move(*kernel));
        }
        tried[text] = why;
      }
      if (why.empty()) continue;
      for (graph::NodeId id : group.nodes)
        if (graph->Get(id).kind == graph::Kind::MatMul) fuse.plain_products[id.index] = why;
      again = true;
    }
    if (again) continue;
    MainGraph out{std::move(*graph), std::move(plan), {}, {}};
    out.warnings = graph::SlowPaths(out.graph, out.plan);
    for (const graph::Group& group : out.plan.groups) {
      auto epilogue = group.epilogue ? graph::EpilogueKernel(out.graph, group.nodes, group.kernel) : std::nullopt;
      if (auto it = epilogue ? built.find(graph::EpilogueText(*epilogue)) : built.end(); it != built.end())
        out.epilogues.emplace(group.kernel, it->second);
    }
    return out;
  }
}

// `main` lowered to its host module (codegen::LowerMain) through its graph, planned once, with
// the stdlib's kernels checked into `stdlib` (unless it holds them already) for the products
// routed to them, and the plan's epilogue kernels. `stdlib` outlives the module, which refers to it.
Result<codegen::HostModule, std::vector<Diagnostic>> LowerMainOf(const core::Module& module, const core::VarStore& vars,
                                                                 const core::Def& main, SourceManager& sources,
                                                                 std::optional<check::CheckResult>& stdlib,
                                                                 codegen::HostOptions host, Diagnostics& warnings) {
  if (!stdlib) stdlib = CheckStdlibKernels(sources);
  auto planned = PlanMain(module, vars, main, host.target, stdlib ? &*stdlib : nullptr);
  if (!planned) return planned.error();
  for (const Diagnostic& d : planned->warnings) warnings.Add(d);
  if (stdlib) {
    host.stdlib = &stdlib->module;
    host.stdlib_vars = &stdlib->vars;
  }
  host.epilogues = &planned->epilogues;
  return codegen::LowerMain(module, vars, main, std::move(planned->graph), std::move(planned->plan), sources, host);
}

Result<codegen::HostModule, std::vector<Diagnostic>> LowerMainOf(Checked& c, const codegen::HostOptions& host,
                                                                 const core::Def& main) {
  return LowerMainOf(c.result->module, c.result->vars, main, c.sources, c.stdlib, host, c.diagnostics);
}

void CheckFile(const std::string& path, Checked& c) {
  Front front = LoadParseCheck(c.sources, c.diagnostics, path);
  c.file = front.file;
  c.result = std::move(front.result);
}

const core::Def* MainOf(const Checked& c) {
  if (!c.result) return nullptr;
  const core::Def* main = c.result->module.Find("main");
  return main != nullptr && main->span.file == *c.file ? main : nullptr;
}

// The kernels of a lowered `main`, synthesized and generated for `target`.
bool GenerateKernels(codegen::HostModule& program, synth::Target target, const SourceManager& sources,
                     Diagnostics& diagnostics,
                     const std::function<void(std::size_t, const codegen::DeviceKernel&)>& each) {
  bool ok = true;
  for (std::size_t i = 0; i < program.kernels.size(); ++i) {
    // codegen checks the barrier protocol of every pipeline it emits (a deadlock refuses the kernel).
    KernelPath path = CompileKernel(program.kernels[i].kernel, target, sources, KernelPhase::Device, diagnostics);
    if (!path.device) {
      ok = false;
      continue;
    }
    each(i, *path.device);
  }
  return ok;
}

void Walk(const core::Module& module, core::ExprId id, std::set<std::string>& seen, bool& found);

void WalkDef(const core::Module& module, const core::Def& def, std::set<std::string>& seen, bool& found) {
  if (def.kernel) {
    found = true;
    return;
  }
  if (def.body) Walk(module, def.body, seen, found);
}

void Walk(const core::Module& module, core::ExprId id, std::set<std::string>& seen, bool& found) {
  if (found || !id) return;
  namespace ce = core::expr;
  const core::Expr& e = module.Get(id);
  auto walk = [&](core::ExprId x) { Walk(module, x, seen, found); };
  std::visit(Overloaded{
                 [&](const ce::Global& g) {
                   if (!seen.insert(g.name).second) return;
                   for (const core::Def& def : module.defs())
                     if (def.name == g.name && def.ok) WalkDef(module, def, seen, found);
                 },
                 [&](const ce::Apply& a) {
                   walk(a.callee);
                   for (core::ExprId x : a.args) walk(x);
                 },
                 [&](const ce::Lambda& l) { walk(l.body); },
                 [&](const ce::Let& l) {
                   walk(l.value);
                   walk(l.body);
                 },
                 [&](const ce::If& i) {
                   walk(i.condition);
                   walk(i.then_branch);
                   walk(i.else_branch);
                 },
                 [&](const ce::Tuple& t) {
                   for (core::ExprId x : t.elements) walk(x);
                 },
                 [&](const ce::TensorLit& t) {
                   for (core::ExprId x : t.elements) walk(x);
                 },
                 [&](const ce::Index& i) {
                   walk(i.base);
                   for (const ce::IndexItem& item : i.items)
                     if (item.kind == ce::IndexItem::Kind::At) walk(item.at);
                 },
                 [&](const ce::Loop& l) {
                   walk(l.init);
                   walk(l.bound);
                   walk(l.body);
                 },
                 [&](const ce::Cast& c) { walk(c.operand); },
                 [&](const auto&) {},
             },
             e.node);
}

bool Warned(const Diagnostics& diagnostics) {
  for (const Diagnostic& d : diagnostics.all())
    if (Info(d.kind).severity == Severity::Warning) return true;
  return false;
}

// The diagnostics to `err` (warnings not with -w); 1 on an error, or a warning under --Werror.
int Report(const Options& options, const SourceManager& sources, const Diagnostics& diagnostics, std::ostream& err) {
  bool color = UseColor(options.color, STDERR_FILENO);
  for (const Diagnostic& d : diagnostics.all())
    if (!options.no_warnings || Info(d.kind).severity != Severity::Warning) err << Render(sources, d, color);
  if (options.warnings_as_errors && !options.no_warnings && Warned(diagnostics)) {
    err << "weft: error: warnings are errors (--Werror)\n";
    return 1;
  }
  return diagnostics.has_errors() ? 1 : 0;
}

// One line for a note: "file.weft:3:7: message".
std::string Located(const SourceManager& sources, const Diagnostic& d) {
  std::string where;
  if (d.span.valid()) {
    const SourceBuffer& buffer = sources.Get(d.span.file);
    LineCol at = buffer.Locate(d.span.begin);
    where = std::string(buffer.name()) + ":" + std::to_string(at.line) + ":" + std::to_string(at.column) + ": ";
  }
  return where + d.message;
}

}  // namespace

bool CallsKernels(const core::Module& module, const core::Def& main) {
  std::set<std::string> seen;
  bool found = false;
  WalkDef(module, main, seen, found);
  return found;
}

namespace {

// How many ptxas runs a build keeps going at once: WEFT_JOBS, or the machine's cores.
unsigned AssemblerJobs() {
  if (const char* jobs = std::getenv("WEFT_JOBS"); jobs != nullptr && *jobs != '\0') {
    int n = std::atoi(jobs);
    if (n > 0) return static_cast<unsigned>(n);
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

// ptxas runs of one build, concurrently with each other and with the build's own work (ptxas is
// about half of a build's time, and the kernels' LLVM code generation most of the rest): Submit
// starts assembling a kernel's PTX on one of AssemblerJobs() worker threads (each runs one ptxas
// at a time) and returns at once; Take waits for that run. Results are taken in the build's own
// order, so the object file and the diagnostics do not depend on which run finishes first. The
// files are `NAME`.ptx and `NAME`.cubin in a temporary directory of its own. docs/building.md.
class Assembler {
 public:
  struct Run {
    bool ok = true;
    std::string log;    // ptxas's output, when it failed
    std::string cubin;  // empty without ptxas
  };

  explicit Assembler(synth::Target target) : ptxas_(Ptxas()), arch_(synth::Spelling(target)) {
    if (ptxas_.empty() || temp_.path().empty()) return;
    for (unsigned i = 0, jobs = AssemblerJobs(); i < jobs; ++i) workers_.emplace_back([this] { Work(); });
  }
  // Runs not started are dropped; those under way finish (before the directory goes).
  ~Assembler() {
    {
      std::lock_guard lock(mutex_);
      closing_ = true;
      queue_.clear();
    }
    wake_.notify_all();
    for (std::thread& t : workers_) t.join();
  }

  // Whether its temporary directory exists.
  bool ok() const { return !temp_.path().empty(); }

  // Starts assembling `ptx`, the kernel `name` (unique in a build), unless it was submitted
  // already; Take(the index returned).
  std::size_t Submit(std::string ptx, const std::string& name) {
    std::lock_guard lock(mutex_);
    auto [it, fresh] = by_name_.try_emplace(name, runs_.size());
    if (!fresh) return it->second;
    runs_.push_back(std::make_unique<Slot>());
    if (workers_.empty()) {
      runs_.back()->done = true;
    } else {
      queue_.push_back({it->second, std::move(ptx), temp_.path() + "/" + name});
      wake_.notify_one();
    }
    return it->second;
  }

  // Waits for run `index` and returns it.
  Run Take(std::size_t index) {
    std::unique_lock lock(mutex_);
    Slot& slot = *runs_.at(index);
    done_.wait(lock, [&] { return slot.done; });
    return std::move(slot.run);
  }

 private:
  struct Job {
    std::size_t index;
    std::string ptx, base;
  };
  struct Slot {
    bool done = false;
    Run run;
  };

  void Work() {
    for (;;) {
      Job job;
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [&] { return closing_ || !queue_.empty(); });
        if (queue_.empty()) return;
        job = std::move(queue_.front());
        queue_.pop_front();
      }
      Run run;
      std::ofstream(job.base + ".ptx") << job.ptx;
      if (RunCommand(
              Quote(ptxas_) + " -arch=" + arch_ + " -o " + Quote(job.base + ".cubin") + " " + Quote(job.base + ".ptx"),
              run.log) != 0) {
        run.ok = false;
      } else {
        run.log.clear();
        std::ifstream in(job.base + ".cubin", std::ios::binary);
        run.cubin.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
      }
      {
        std::lock_guard lock(mutex_);
        Slot& slot = *runs_[job.index];
        slot.run = std::move(run);
        slot.done = true;
      }
      done_.notify_all();
    }
  }

  const std::string ptxas_, arch_;
  TempDir temp_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::deque<Job> queue_;
  std::vector<std::unique_ptr<Slot>> runs_;
  std::map<std::string, std::size_t> by_name_;
  bool closing_ = false;
  std::vector<std::thread> workers_;
};

// Steps 2 and 3 of host.h: each kernel synthesized, generated, assembled (when ptxas is found) and
// attached, then the object file `object` written. Failures are reported against `output`. The
// array kernels' PTX exists already (LowerMain generated it), so their ptxas runs start first and
// go on while the kernels `main` calls are synthesized and generated; every cubin is attached
// after, in the order the sequential build attached them (the object file does not change).
bool BuildObject(codegen::HostModule& program, synth::Target target, const SourceManager& sources,
                 const std::string& output, const std::string& object, Diagnostics& diagnostics, Assembler& assembler) {
  auto fail = [&](const std::string& why) {
    diagnostics.Emit(DiagnosticKind::HostBuildFailed, Span{}, output, why);
    return false;
  };
  if (!assembler.ok()) return fail("cannot make a temporary directory");
  // The cubin of run `index` (empty without ptxas); false, with the failure reported, when ptxas refused it.
  auto assembled = [&](std::size_t index, const std::string& what, std::string& cubin) {
    Assembler::Run run = assembler.Take(index);
    if (!run.ok) {
      fail("ptxas rejected the PTX of " + what + ": " + OneLine(run.log));
      return false;
    }
    cubin = std::move(run.cubin);
    return true;
  };
  std::vector<std::size_t> arrays;
  for (const codegen::ArrayUse& use : program.arrays)
    arrays.push_back(assembler.Submit(use.kernel.device.ptx, use.kernel.device.entry));
  std::vector<std::optional<std::pair<codegen::DeviceKernel, std::size_t>>> kernels(program.kernels.size());
  bool ok = GenerateKernels(program, target, sources, diagnostics, [&](std::size_t i, const codegen::DeviceKernel& d) {
    kernels[i].emplace(d, assembler.Submit(d.ptx, d.entry + "." + std::to_string(i)));
  });
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    if (!kernels[i]) continue;
    std::string cubin;
    if (!assembled(kernels[i]->second, "`" + program.kernels[i].kernel.name + "`", cubin)) continue;
    codegen::AttachKernel(program, i, kernels[i]->first, cubin);
  }
  if (!ok || diagnostics.has_errors()) return false;
  // `random`'s kernels, generated (and their runs started) before the array kernels' cubins are taken.
  std::vector<std::pair<Result<codegen::DeviceKernel, std::string>, std::size_t>> randoms;
  for (Dtype dtype : program.randoms) {
    auto device = codegen::EmitRandomKernel(dtype, target);
    std::size_t run = device ? assembler.Submit(device->ptx, device->entry) : 0;
    randoms.emplace_back(std::move(device), run);
  }
  for (std::size_t i = 0; i < program.arrays.size(); ++i) {
    std::string cubin;
    if (!assembled(arrays[i], "array kernel " + program.arrays[i].name + " of `main`", cubin)) return false;
    codegen::AttachArrayKernel(program, i, cubin);
  }
  for (std::size_t i = 0; i < program.randoms.size(); ++i) {
    Dtype dtype = program.randoms[i];
    auto& [device, run] = randoms[i];
    if (!device)
      return fail("cannot generate `random`'s kernel for " + std::string(Spelling(dtype)) + ": " + device.error());
    std::string cubin;
    if (!assembled(run, "`random`'s kernel for " + std::string(Spelling(dtype)), cubin)) return false;
    codegen::AttachRandomKernel(program, dtype, *device, cubin);
  }
  if (!ok || diagnostics.has_errors()) return false;
  auto emitted = codegen::EmitObject(program, object);
  if (!emitted) return fail(emitted.error());
  return true;
}

// The runtime archive, or a failure reported against `output`.
std::optional<std::string> RuntimeArchive(const std::string& output, Diagnostics& diagnostics) {
  const std::string runtime = RuntimeLibrary();
  if (std::filesystem::exists(runtime)) return runtime;
  diagnostics.Emit(DiagnosticKind::HostBuildFailed, Span{}, output,
                   "the runtime archive `" + runtime +
                       "` does not exist: build the `weft_runtime_exe` target, or name one with WEFT_RUNTIME_LIB");
  return std::nullopt;
}

// Has LowerMain start each array kernel's ptxas run as it generates the kernel (HostOptions::
// array_kernel), while it goes on to the next: BuildObject then takes these runs.
void AssembleArraysEarly(codegen::HostOptions& host, Assembler& assembler) {
  host.array_kernel = [&assembler](const codegen::ArrayUse& use) {
    assembler.Submit(use.kernel.device.ptx, use.kernel.device.entry);
  };
}

bool BuildExecutable(codegen::HostModule& program, synth::Target target, const SourceManager& sources,
                     const std::string& output, Diagnostics& diagnostics, Assembler& assembler) {
  auto fail = [&](const std::string& why) {
    diagnostics.Emit(DiagnosticKind::HostBuildFailed, Span{}, output, why);
    return false;
  };
  TempDir temp;
  if (temp.path().empty()) return fail("cannot make a temporary directory");
  std::optional<std::string> runtime = RuntimeArchive(output, diagnostics);
  if (!runtime) return false;
  const std::string object = temp.path() + "/main.o";
  if (!BuildObject(program, target, sources, output, object, diagnostics, assembler)) return false;
  auto linked = codegen::Link(Compiler(), object, *runtime, output);
  if (!linked) return fail(linked.error());
  return true;
}

}  // namespace

bool BuildExecutable(codegen::HostModule& program, synth::Target target, const SourceManager& sources,
                     const std::string& output, Diagnostics& diagnostics) {
  Assembler assembler(target);
  return BuildExecutable(program, target, sources, output, diagnostics, assembler);
}

GpuProbe ProbeGpu() {
  GpuProbe probe;
  if (weft_init() != WEFT_OK) {
    // The runtime's message without its advice ("...; running a weft program needs ...").
    std::string reason = weft_last_error();
    if (std::size_t cut = reason.find("; "); cut != std::string::npos) reason.resize(cut);
    probe.reason = reason;
    return probe;
  }
  weft_device_info info{};
  if (weft_device_get_info(&info) != WEFT_OK) {
    probe.reason = weft_last_error();
  } else if (info.sm_major < 8) {
    probe.reason = "GPU " + std::to_string(info.index) + " (" + info.name + ") is sm_" + std::to_string(info.sm_major) +
                   std::to_string(info.sm_minor) + "; weft's kernels need sm_80 or newer";
  } else {
    probe.target = info.sm_major == 9 && info.sm_minor == 0 ? synth::Target::Sm90a : synth::Target::Sm80;
  }
  weft_shutdown();  // the program opens its own context
  return probe;
}

std::optional<int> RunOnGpu(const Options& options, const core::Module& module, const core::VarStore& vars,
                            const core::Def& main, SourceManager& sources, std::ostream& err) {
  const std::string fallback = "; running on the CPU interpreter\n";
  bool kernels = CallsKernels(module, main);
  if (!kernels && !options.gpu) return std::nullopt;  // nothing for a GPU to do
  GpuProbe probe = ProbeGpu();
  Diagnostics diagnostics;
  auto give_up = [&](const std::string& why) -> std::optional<int> {
    if (options.gpu) {
      Report(options, sources, diagnostics, err);
      err << "weft: error: " << why << ", and --gpu forbids the CPU interpreter\n";
      return 1;
    }
    err << "weft: note: " << why << fallback;
    return std::nullopt;
  };
  // 1. Does `main` compile for the GPU? (Cheap: no synthesis yet.)
  codegen::HostOptions host;
  host.target = probe.target.value_or(synth::Target::Sm90a);
  std::optional<check::CheckResult> stdlib;
  Diagnostics warnings;
  std::optional<Assembler> assembler;
  if (probe.target) AssembleArraysEarly(host, assembler.emplace(*probe.target));
  auto program = LowerMainOf(module, vars, main, sources, stdlib, host, warnings);
  if (!program) {
    for (const Diagnostic& d : program.error()) diagnostics.Add(d);
    return give_up("`main` does not compile for the GPU (" + Located(sources, program.error().front()) + ")");
  }
  // 2. Is there a GPU?
  if (!probe.target) return give_up("no GPU (" + probe.reason + ")");
  if (Report(options, sources, warnings, err) != 0) return 1;  // --Werror
  // 3. Build, then run with FILE as `arg 0` and ARGS after it.
  TempDir temp;
  std::string exe = temp.path() + "/program";
  if (temp.path().empty() || !BuildExecutable(*program, *probe.target, sources, exe, diagnostics, *assembler)) {
    std::string why =
        diagnostics.all().empty() ? "cannot make a temporary directory" : Located(sources, diagnostics.all().front());
    return give_up("`main` does not build for " + std::string(synth::Spelling(*probe.target)) + " (" + why + ")");
  }
  std::vector<std::string> args = {options.inputs.front()};
  args.insert(args.end(), options.program_args.begin(), options.program_args.end());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::cout.flush();
  err.flush();
  pid_t child = fork();
  if (child == 0) {
    execv(exe.c_str(), argv.data());
    std::perror("weft: cannot start the built program");
    _exit(127);
  }
  int status = 0;
  if (child < 0 || waitpid(child, &status, 0) < 0) {
    err << "weft: error: cannot start the built program\n";
    return 1;
  }
  if (WIFSIGNALED(status)) {
    err << "weft: error: the program was killed by signal " << WTERMSIG(status) << "\n";
    return 1;
  }
  return WEXITSTATUS(status);
}

int RunBuild(const Options& options, std::ostream& out, std::ostream& err) {
  auto target = synth::ParseTarget(options.target);
  if (!target) {
    err << "weft: unknown target `" << options.target << "`; expected `sm_90a` or `sm_80`\n";
    return 2;
  }
  const bool emit = options.emit == Emit::Ptx || options.emit == Emit::Llvm;
  Checked c;
  if (options.emit == Emit::Graph || options.emit == Emit::Layouts) {
    // `main` as a dataflow graph and the kernels it fuses into, or its values' layouts (docs/graph.md).
    CheckFile(options.inputs.front(), c);
    if (c.diagnostics.has_errors()) return Report(options, c.sources, c.diagnostics, err);
    const core::Def* main = MainOf(c);
    if (!main) {
      c.diagnostics.Emit(DiagnosticKind::NoMain, Span{}, options.inputs.front());
      return Report(options, c.sources, c.diagnostics, err);
    }
    c.stdlib = CheckStdlibKernels(c.sources);
    auto planned = PlanMain(c.result->module, c.result->vars, *main, *target, c.stdlib ? &*c.stdlib : nullptr);
    if (!planned) {
      for (const Diagnostic& d : planned.error()) c.diagnostics.Add(d);
      return Report(options, c.sources, c.diagnostics, err);
    }
    for (const Diagnostic& d : planned->warnings) c.diagnostics.Add(d);
    out << (options.emit == Emit::Layouts ? graph::PrintLayouts : graph::Print)(planned->graph, planned->plan,
                                                                                c.result->vars, c.sources);
    out.flush();
    return Report(options, c.sources, c.diagnostics, err);
  }
  if (emit && (!options.kernel.empty() || options.inputs.front() == "-")) {
    // One kernel of FILE, or standard input's kernels: as `weft explain` finds them.
  } else {
    CheckFile(options.inputs.front(), c);
    if (c.diagnostics.has_errors()) return Report(options, c.sources, c.diagnostics, err);
    const core::Def* main = MainOf(c);
    if (!emit && !main) {
      c.diagnostics.Emit(DiagnosticKind::NoMain, Span{}, options.inputs.front());
      return Report(options, c.sources, c.diagnostics, err);
    }
    if (main) {
      codegen::HostOptions host;
      host.target = *target;
      std::optional<Assembler> assembler;
      if (!emit) AssembleArraysEarly(host, assembler.emplace(*target));
      auto program = LowerMainOf(c, host, *main);
      if (program && emit) {
        // The kernels `main` calls, then (LLVM IR) its host module.
        GenerateKernels(*program, *target, c.sources, c.diagnostics,
                        [&](std::size_t i, const codegen::DeviceKernel& device) {
                          PrintDevice(options, program->kernels[i].kernel, device, out);
                        });
        for (const codegen::ArrayUse& use : program->arrays) PrintArray(options, use, c.result->vars, out);
        for (Dtype dtype : program->randoms) {
          auto device = codegen::EmitRandomKernel(dtype, *target);
          if (!device) {
            c.diagnostics.Emit(DiagnosticKind::HostBuildFailed, Span{}, options.inputs.front(), device.error());
            continue;
          }
          PrintRandom(options, dtype, *device, out);
        }
        if (options.emit == Emit::Llvm) out << "; weft: the host module of `main`\n" << codegen::PrintHost(*program);
        out.flush();
        return Report(options, c.sources, c.diagnostics, err);
      }
      if (!emit) {
        if (!program) {
          for (const Diagnostic& d : program.error()) c.diagnostics.Add(d);
        } else if (!options.warnings_as_errors || options.no_warnings || !Warned(c.diagnostics)) {
          BuildExecutable(*program, *target, c.sources, options.output, c.diagnostics, *assembler);
        }
        return Report(options, c.sources, c.diagnostics, err);
      }
      // A `main` that does not compile for the GPU: --emit prints every kernel of FILE.
    }
  }
  int status = ForEachKernel(options, err, KernelPhase::Device,
                             [&](const KernelPath& path, const SourceManager&, Diagnostics&, int) {
                               PrintDevice(options, *path.kernel, *path.device, out);
                             });
  out.flush();
  return status;
}

// ---- Shared libraries and `weft call` (docs/python.md) ----
//
// An exported function is compiled as a program of its own: a *wrapper* definition without
// parameters, appended to FILE's text, that `load`s each argument with the parameter's type written
// out (so sizes are bound from the arguments' shapes, and dims and dtypes checked, as `load` does),
// calls the function, and `save`s each result. Every phase then treats it as it treats `main`: the
// checker instantiates a polymorphic function at the wrapper's dtypes, the graph inlines the call
// and makes its `where` facts run-time checks, host codegen lowers it. In a library the wrapper's
// `load "x"` takes parameter x's argument and `save "0"` gives result 0 (weft_library_call); under
// `weft call` they are real files and the interpreter runs the wrapper. Writing the wrapper as
// source keeps both paths one piece of code whose errors are the checker's own.

namespace {

std::optional<Dtype> DtypeNamed(const std::string& text) {
  for (int i = 0; i <= static_cast<int>(Dtype::F64); ++i)
    if (Spelling(static_cast<Dtype>(i)) == text) return static_cast<Dtype>(i);
  return std::nullopt;
}

// A parameter of an export: its name and its type as the wrapper writes it.
struct WrappedParam {
  std::string name;
  Dtype dtype = Dtype::F32;
  int rank = 0;
  std::string type;  // "f32[n, d]"
};

struct Wrapper {
  std::string def;        // the function's name
  std::string name;       // the wrapper definition's name
  std::string source;     // its text
  std::string signature;  // "rmsnorm : f32[n, d] -> f32[d] -> f32[n, d]"
  std::vector<WrappedParam> params;
  int results = 0;
};

// An instance's parameter: a dtype and a rank (`f32[_, _]`).
struct InstanceParam {
  Dtype dtype = Dtype::F32;
  int rank = 0;
};
struct Instance {
  std::string text;  // as --instance gave it
  std::string name;
  std::vector<InstanceParam> params;
};

// --instance's `NAME TYPE...`, or why it does not parse.
std::optional<Instance> ParseInstance(const std::string& text, std::string& error) {
  std::istringstream in(text);
  Instance instance;
  instance.text = text;
  in >> instance.name;
  std::string compact;
  for (char c : std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()))
    if (!std::isspace(static_cast<unsigned char>(c))) compact += c;
  for (std::size_t i = 0; i < compact.size();) {
    std::size_t open = compact.find('[', i), close = compact.find(']', i);
    if (open == std::string::npos || close == std::string::npos || close < open) {
      error = "--instance `" + text + "`: a parameter's type is a dtype and `_` dims in brackets, as in `f32[_, _]`";
      return std::nullopt;
    }
    std::string dtype = compact.substr(i, open - i);
    std::optional<Dtype> d = DtypeNamed(dtype);
    if (!d) {
      error = "--instance `" + text + "`: `" + dtype + "` is not a dtype";
      return std::nullopt;
    }
    InstanceParam p{*d, 0};
    for (char c : compact.substr(open + 1, close - open - 1)) {
      if (c == '_') {
        p.rank += 1;
      } else if (c != ',') {
        error = "--instance `" + text + "`: dims are written `_`";
        return std::nullopt;
      }
    }
    instance.params.push_back(p);
    i = close + 1;
  }
  if (instance.name.empty()) {
    error = "--instance needs a function's name and its parameters' types, as in 'softmax f32[_, _]'";
    return std::nullopt;
  }
  return instance;
}

// The wrapper `wrapper_name` of `def` (at `instance`'s dtypes and ranks where its type has
// variables), loading argument i from `input(i)` and saving result r to `output(r)`; or why `def`
// cannot be exported ("polymorphic" when it needs an instance).
std::variant<Wrapper, std::string> MakeWrapper(const core::Module& module, const core::VarStore& vars,
                                               const core::Def& def, const Instance* instance,
                                               const std::string& wrapper_name,
                                               const std::function<std::string(std::size_t)>& input,
                                               const std::function<std::string(std::size_t)>& output) {
  namespace c = core;
  Wrapper w;
  w.def = def.name;
  w.name = wrapper_name;
  c::TypePrinter printer(vars);
  c::TypeRef type = vars.Resolve(def.scheme.type);
  if (instance && instance->params.size() != def.params.size())
    return "the instance gives " + std::to_string(instance->params.size()) + " parameter types, but `" + def.name +
           "` takes " + std::to_string(def.params.size());
  std::set<std::uint32_t> bound;  // size variables that an axis of their own gives
  for (std::size_t i = 0; i < def.params.size(); ++i) {
    const auto* fn = std::get_if<c::FunctionType>(&type->node);
    if (!fn) return "its type does not take " + std::to_string(def.params.size()) + " parameters";
    WrappedParam p;
    const auto* named = std::get_if<c::pattern::Name>(&module.Get(def.params[i]).node);
    if (!named) return "parameter " + std::to_string(i + 1) + " is a pattern, not a name";
    p.name = named->name;
    c::TypeRef param = vars.Resolve(fn->param);
    const auto* tensor = std::get_if<c::TensorType>(&param->node);
    if (!tensor) return "parameter `" + p.name + "` is not a tensor (`" + printer.Print(param) + "`)";
    if (tensor->elem.is_var() && !instance) return "polymorphic";
    p.dtype = tensor->elem.is_var() ? instance->params[i].dtype : tensor->elem.dtype();
    std::vector<std::string> dims;
    std::string unbound;
    auto add = [&](const c::Dim& d) {
      if (std::optional<c::SizeVarId> v = d.AsVar()) bound.insert(v->index);
      for (c::SizeVarId v : d.Vars())
        if (!bound.count(v.index) && unbound.empty()) unbound = printer.Print(d);
      dims.push_back(printer.Print(d));
    };
    for (const c::Dim& d : tensor->shape.before) add(d);
    if (tensor->shape.spread) {
      if (!instance) return "polymorphic";
      int extra = instance->params[i].rank - static_cast<int>(tensor->shape.FixedRank());
      if (extra < 0)
        return "parameter `" + p.name + "` has at least " + std::to_string(tensor->shape.FixedRank()) + " axes, not " +
               std::to_string(instance->params[i].rank);
      std::string spread = vars.info(*tensor->shape.spread).name;
      if (spread.empty()) spread = "s";
      for (int k = 0; k < extra; ++k) dims.push_back(spread + "_" + std::to_string(k));
    }
    for (const c::Dim& d : tensor->shape.after) add(d);
    if (!unbound.empty())
      return "the size `" + unbound + "` of parameter `" + p.name +
             "` is not given by an axis of its own (of it or of a parameter before it)";
    p.rank = static_cast<int>(dims.size());
    p.type = std::string(Spelling(p.dtype));
    if (!dims.empty()) {
      p.type += "[";
      for (std::size_t k = 0; k < dims.size(); ++k) p.type += (k ? ", " : "") + dims[k];
      p.type += "]";
    }
    w.params.push_back(std::move(p));
    type = vars.Resolve(fn->result);
  }
  if (std::get_if<c::TensorType>(&type->node)) {
    w.results = 1;
  } else if (const auto* tuple = std::get_if<c::TupleType>(&type->node); tuple && !tuple->elements.empty()) {
    for (const c::TypeRef& element : tuple->elements)
      if (!std::get_if<c::TensorType>(&vars.Resolve(element)->node))
        return "its result is not a tensor or a tuple of tensors (`" + printer.Print(type) + "`)";
    w.results = static_cast<int>(tuple->elements.size());
  } else {
    return "its result is not a tensor or a tuple of tensors (`" + printer.Print(type) + "`)";
  }
  w.signature = def.name + " : ";
  for (const WrappedParam& p : w.params) w.signature += p.type + " -> ";
  w.signature += printer.Print(type);
  // The wrapper's text.
  std::string& src = w.source;
  src = "def " + w.name + " =\n";
  std::string call = def.name;
  for (std::size_t i = 0; i < w.params.size(); ++i) {
    src += "  let weft_a" + std::to_string(i) + " = (load \"" + input(i) + "\" : " + w.params[i].type + ") in\n";
    call += " weft_a" + std::to_string(i);
  }
  if (w.results == 1) {
    src += "  save \"" + output(0) + "\" (" + call + ")\n";
  } else {
    src += "  let (";
    for (int r = 0; r < w.results; ++r) src += (r ? ", weft_r" : "weft_r") + std::to_string(r);
    src += ") = " + call + " in\n";
    for (int r = 0; r < w.results; ++r) {
      std::string save = "save \"" + output(static_cast<std::size_t>(r)) + "\" weft_r" + std::to_string(r);
      src += r + 1 < w.results ? "  let _ = " + save + " in\n" : "  " + save + "\n";
    }
  }
  return w;
}

// FILE's text with `wrapper` after it as its `def main`, checked: `load` and `save` are `main`'s
// alone (E0231), and only `main`'s sizes may be bound at run time. FILE's own `main`, if it has one,
// is renamed in place to a name of the same length, so that every other place keeps its line and
// column.
std::uint32_t CheckWithWrapper(const std::string& path, std::string text, const core::Module& module, FileId file,
                               const SourceManager& sources, const Wrapper& wrapper, Checked& c) {
  if (const core::Def* main = module.Find("main"); main && main->span.file == file) {
    // The definition's span starts at `def`; its name is the first `main` after it.
    std::size_t at = std::string_view(sources.Get(file).text()).find("main", main->span.begin);
    for (const char* name : {"m_in", "ma_n", "mai_", "m__n"}) {
      if (at == std::string_view::npos || at >= text.size() || module.Find(name)) continue;
      text.replace(at, 4, name);
      break;
    }
  }
  if (!text.empty() && text.back() != '\n') text += "\n";
  text += "\n-- the exported function's wrapper (docs/python.md)\n";
  const auto begin = static_cast<std::uint32_t>(text.size());
  text += wrapper.source;
  c.file = c.sources.Add(path, text);
  Front front = Parse(c.sources, c.diagnostics, *c.file);
  Check(front, c.sources, c.diagnostics);
  c.result = std::move(front.result);
  return begin;
}

std::optional<std::string> ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

bool Simple(const std::string& text) {
  return text.find_first_of("\"\\\n") == std::string::npos;
}

}  // namespace

int RunBuildShared(const Options& options, std::ostream& err) {
  auto target = synth::ParseTarget(options.target);
  if (!target) {
    err << "weft: unknown target `" << options.target << "`; expected `sm_90a` or `sm_80`\n";
    return 2;
  }
  std::vector<Instance> instances;
  for (const std::string& text : options.instances) {
    std::string error;
    std::optional<Instance> instance = ParseInstance(text, error);
    if (!instance) {
      err << "weft: " << error << "\n";
      return 2;
    }
    instances.push_back(std::move(*instance));
  }
  // 1. FILE alone: its functions and their types.
  const std::string& path = options.inputs.front();
  Checked first;
  CheckFile(path, first);
  if (first.diagnostics.has_errors()) return Report(options, first.sources, first.diagnostics, err);
  std::optional<std::string> text = ReadText(path);
  if (!text) {
    first.diagnostics.Emit(DiagnosticKind::CannotReadFile, Span{}, path, "cannot read it");
    return Report(options, first.sources, first.diagnostics, err);
  }
  // 2. A wrapper per export: every function whose types fix its dtypes and ranks, and each instance.
  std::vector<Wrapper> wrappers;
  std::vector<bool> requested;  // an --instance: its failure is an error, not a note
  auto add = [&](const core::Def& def, const Instance* instance) -> std::optional<std::string> {
    auto made = MakeWrapper(
        first.result->module, first.result->vars, def, instance, "main",
        [&](std::size_t p) {
          return first.result->module.Get(def.params[p]).node.index() == 0
                     ? std::get<core::pattern::Name>(first.result->module.Get(def.params[p]).node).name
                     : std::string();
        },
        [](std::size_t r) { return std::to_string(r); });
    if (auto* why = std::get_if<std::string>(&made)) return *why;
    wrappers.push_back(std::move(std::get<Wrapper>(made)));
    requested.push_back(instance != nullptr);
    return std::nullopt;
  };
  for (const core::Def& def : first.result->module.defs()) {
    if (def.span.file != *first.file || !def.ok || def.kernel || def.params.empty()) continue;
    bool has_instance = false;
    for (const Instance& instance : instances) {
      if (instance.name != def.name) continue;
      has_instance = true;
      if (std::optional<std::string> why = add(def, &instance)) {
        err << "weft: error: --instance '" << instance.text << "': " << *why << "\n";
        return 1;
      }
    }
    if (has_instance || options.only_instances) continue;
    if (std::optional<std::string> why = add(def, nullptr)) {
      if (*why == "polymorphic") {
        err << "weft: note: `" << def.name << "` is not exported: its type leaves dtypes or ranks open; "
            << "export an instance with --instance '" << def.name << " f32[_, _]' (weft.compile does so per call)\n";
      } else {
        err << "weft: note: `" << def.name << "` is not exported: " << *why << "\n";
      }
    }
  }
  for (const Instance& instance : instances) {
    const core::Def* def = first.result->module.Find(instance.name);
    if (!def || def->span.file != *first.file || def->kernel) {
      err << "weft: error: --instance: `" << path << "` has no function `" << instance.name << "`\n";
      return 1;
    }
  }
  // 3. Per export: FILE with its wrapper as `main`, checked, lowered, generated and emitted.
  TempDir temp;
  if (temp.path().empty()) {
    err << "weft: error: cannot make a temporary directory\n";
    return 1;
  }
  std::optional<std::string> runtime = RuntimeArchive(options.output, first.diagnostics);
  if (!runtime) return Report(options, first.sources, first.diagnostics, err);
  std::vector<std::string> objects;
  std::vector<codegen::LibraryExport> exports;
  for (std::size_t i = 0; i < wrappers.size(); ++i) {
    const Wrapper& w = wrappers[i];
    Checked c;
    std::uint32_t begin = CheckWithWrapper(path, *text, first.result->module, *first.file, first.sources, w, c);
    if (c.diagnostics.has_errors()) return Report(options, c.sources, c.diagnostics, err);
    const core::Def* def = MainOf(c);
    if (!def) continue;
    codegen::HostOptions host;
    host.target = *target;
    host.export_symbol = "weft_export_body_" + std::to_string(i);
    host.export_name = w.def;
    host.export_wrapper_begin = begin;
    auto program = LowerMainOf(c, host, *def);
    if (!program) {
      if (requested[i]) {
        for (const Diagnostic& d : program.error()) c.diagnostics.Add(d);
        return Report(options, c.sources, c.diagnostics, err);
      }
      err << "weft: note: `" << w.def << "` is not exported: " << Located(c.sources, program.error().front()) << "\n";
      continue;
    }
    codegen::LibraryExport e;
    e.name = w.def;
    e.signature = w.signature;
    e.symbol = host.export_symbol;
    e.uses_gpu = program->uses_gpu;
    for (const WrappedParam& p : w.params) {
      e.param_names.push_back(p.name);
      e.param_types.push_back(p.type);
      e.param_dtypes.push_back(p.dtype);
      e.param_ranks.push_back(p.rank);
    }
    // The results' dtypes and types, from the wrapper's `save`s (`save "0"` is result 0): an
    // instance's signature shows its own (`soft : bf16[s_0, n] -> bf16[s_0, n]`).
    e.result_dtypes.assign(static_cast<std::size_t>(w.results), Dtype::F32);
    std::vector<std::string> result_types(static_cast<std::size_t>(w.results));
    core::TypePrinter printer(c.result->vars);
    for (const graph::Node& n : program->graph->nodes) {
      if (n.kind != graph::Kind::Save) continue;
      std::size_t r = std::stoul(program->graph->Get(n.args[0]).text);
      if (r >= e.result_dtypes.size()) continue;
      const graph::Node& value = program->graph->Get(n.args[1]);
      e.result_dtypes[r] = value.dtype;
      std::string type(Spelling(value.dtype));
      for (std::size_t a = 0; a < value.shape.size(); ++a)
        type += (a ? ", " : "[") + printer.Print(value.shape[a]) + (a + 1 == value.shape.size() ? "]" : "");
      result_types[r] = type;
    }
    if (requested[i]) {
      e.signature = w.def + " : ";
      for (const WrappedParam& p : w.params) e.signature += p.type + " -> ";
      std::string results;
      for (const std::string& t : result_types) results += (results.empty() ? "" : ", ") + t;
      e.signature += result_types.size() == 1 ? results : "(" + results + ")";
    }
    const std::string object = temp.path() + "/export" + std::to_string(i) + ".o";
    Assembler assembler(*target);
    if (!BuildObject(*program, *target, c.sources, options.output, object, c.diagnostics, assembler))
      return Report(options, c.sources, c.diagnostics, err);
    objects.push_back(object);
    exports.push_back(std::move(e));
  }
  Diagnostics& diagnostics = first.diagnostics;
  // 4. The table, and the link.
  codegen::HostModule table = codegen::LowerLibraryTable(exports, *target, path, *text);
  const std::string table_object = temp.path() + "/table.o";
  if (auto emitted = codegen::EmitObject(table, table_object); !emitted) {
    diagnostics.Emit(DiagnosticKind::HostBuildFailed, Span{}, options.output, emitted.error());
    return Report(options, first.sources, diagnostics, err);
  }
  objects.push_back(table_object);
  const std::string script = temp.path() + "/exports.map";
  std::ofstream(script) << "{\n  global: weft_library_*; weft_last_error;\n  local: *;\n};\n";
  auto linked = codegen::LinkShared(Compiler(), objects, *runtime, options.output, script);
  if (!linked) diagnostics.Emit(DiagnosticKind::HostBuildFailed, Span{}, options.output, linked.error());
  return Report(options, first.sources, diagnostics, err);
}

int RunCall(const Options& options, std::ostream& err) {
  const std::string& path = options.inputs[0];
  const std::string& name = options.inputs[1];
  const std::vector<std::string> files(options.inputs.begin() + 2, options.inputs.end());
  Checked first;
  CheckFile(path, first);
  if (first.diagnostics.has_errors()) return Report(options, first.sources, first.diagnostics, err);
  const core::Def* def = first.result->module.Find(name);
  if (!def || def->span.file != *first.file || def->kernel || def->params.empty()) {
    err << "weft: error: `" << path << "` has no function `" << name << "`\n";
    return 1;
  }
  if (files.size() != def->params.size()) {
    err << "weft: error: `" << name << "` takes " << def->params.size() << " arguments, not " << files.size() << "\n";
    return 1;
  }
  // The instance the files give: their dtypes and ranks.
  Instance instance{"", name, {}};
  for (const std::string& file : files) {
    auto read = runtime::ReadNpy(file);
    if (!read) {
      err << "weft: error: " << read.error().message << "\n";
      return 1;
    }
    instance.params.push_back({read->dtype, read->Rank()});
  }
  const std::string out_dir = options.out_dir;
  for (const std::string& p : files) {
    if (!Simple(p) || !Simple(out_dir)) {
      err << "weft: error: `weft call` takes paths without quotes, backslashes or newlines\n";
      return 1;
    }
  }
  auto made = MakeWrapper(
      first.result->module, first.result->vars, *def, &instance, "main", [&](std::size_t i) { return files[i]; },
      [&](std::size_t r) { return out_dir + "/" + std::to_string(r) + ".npy"; });
  if (auto* why = std::get_if<std::string>(&made)) {
    err << "weft: error: `" << name << "` cannot be called: " << *why << "\n";
    return 1;
  }
  const Wrapper& w = std::get<Wrapper>(made);
  std::optional<std::string> text = ReadText(path);
  if (!text) {
    err << "weft: error: cannot read `" << path << "`\n";
    return 1;
  }
  Checked c;
  std::uint32_t begin = CheckWithWrapper(path, *text, first.result->module, *first.file, first.sources, w, c);
  if (c.diagnostics.has_errors()) return Report(options, c.sources, c.diagnostics, err);
  const core::Def* wrapper = MainOf(c);
  interp::InterpreterOptions run_options;
  run_options.args.push_back(path);
  interp::Interpreter interpreter(c.result->module, c.result->vars, run_options);
  std::optional<interp::RuntimeError> failure;
  RunWithDeepStack([&] {
    interp::EvalResult<interp::ValueRef> value = interpreter.Evaluate(*wrapper);
    if (!value) failure = value.error();
  });
  std::cout.flush();
  if (!failure) return 0;
  // An argument's file refused by its `load`: the library's words (program.cpp's CallArgument).
  for (std::size_t i = 0; i < files.size(); ++i) {
    const std::string prefix = files[i] + ": the program expects ";
    if (failure->message.rfind(prefix, 0) != 0) continue;
    std::string rest = failure->message.substr(prefix.size());
    if (std::size_t at = rest.find(" but the file holds "); at != std::string::npos)
      rest.replace(at, std::string(" but the file holds ").size(), " but is given ");
    err << "weft: error: `" << name << "`: parameter `" << w.params[i].name << "` expects " << rest << "\n";
    return 1;
  }
  // A check whose place is the wrapper (a `where` fact of the call): one line, as a library says it.
  if (failure->span.valid() && failure->span.begin >= begin) {
    err << "weft: error: `" << name << "`: " << failure->message << "\n";
    return 1;
  }
  c.diagnostics.Emit(DiagnosticKind::RuntimeFailure, failure->span, failure->message);
  return Report(options, c.sources, c.diagnostics, err);
}

}  // namespace weft::driver
