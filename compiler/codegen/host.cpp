// Host code generation; host.h has the steps, docs/building.md what is compiled and refused.
//
// The lowering walks `main`'s dataflow graph (compiler/graph: `main` evaluated at compile time as
// the interpreter evaluates it, then fused) group by group in launch order, so that an executable
// means what `weft run --cpu` computes: the host built-ins ask the runtime (runtime.h, "Compiled
// programs"), whose `random`, `print`, `.npy` files and messages are the interpreter's own code; a
// kernel call checks its inputs and `where` facts with the interpreter's wording; every other group
// is an array kernel (codegen/array.h) launched over its outputs; the run-time checks the checker
// left are made before the group that needs them. Sizes are i64 values that `load` binds. The host
// code is straight-line: a failed check branches to a block that ends the program (weft_failf), so
// every value dominates every later use.
#include "codegen/host.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/Triple.h>

#include <algorithm>
#include <cstdio>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <variant>

#include "codegen/array.h"
#include "codegen/dims.h"
#include "codegen/instance.h"
#include "codegen/random.h"
#include "core/type_printer.h"
#include "graph/epilogue.h"
#include "graph/layout.h"
#include "tile/lower.h"
#include "tile/stores.h"
#include "weft/numerics.h"

namespace weft::codegen {

HostModule::HostModule() = default;
HostModule::HostModule(HostModule&&) noexcept = default;
HostModule& HostModule::operator=(HostModule&&) noexcept = default;
HostModule::~HostModule() = default;

namespace {

using core::Dim;
using core::SizeVarId;

// A value of `main` at run time: a runtime tensor handle and its dims.
struct HTensor {
  Dtype dtype = Dtype::F32;
  llvm::Value* handle = nullptr;   // weft_tensor*
  std::vector<llvm::Value*> dims;  // i64 each
};

// A construct `weft build` does not compile: the lowering stops at the first.
struct Refusal {
  Diagnostic diagnostic;
};
struct Refusals {
  std::vector<Diagnostic> diagnostics;
};

class Lowering {
 public:
  Lowering(const core::Module& module, const core::VarStore& vars, const SourceManager& sources,
           const graph::Graph& graph, const graph::Plan& plan, HostModule& out, const HostOptions& options)
      : module_(module),
        vars_(vars),
        sources_(sources),
        g_(graph),
        plan_(plan),
        out_(out),
        options_(options),
        ctx_(*out.context),
        m_(*out.module),
        b_(ctx_),
        values_(graph.nodes.size()),
        strings_(graph.nodes.size(), nullptr),
        marks_(graph.nodes.size(), nullptr) {}

  void LowerMain();

 private:
  // ---- The graph, group by group ----
  void LowerHost(graph::NodeId id);
  void LowerCall(const graph::Group& group);
  void LowerArray(std::size_t index);
  const HTensor& Buffer(graph::NodeId id);
  // The buffer of a product's result stored as view `stored.view` wants (graph::Group::stored): a
  // tensor of the view's shape, the view's value; the result's value is the same memory.
  const HTensor& StoredBuffer(const graph::StoredOut& stored);
  // The value the buffer plan held in `id`'s buffer before it, now dead (a null pointer if none).
  llvm::Value* Reuse(graph::NodeId id);
  void LowerStdlibGemm(std::size_t index);
  // The copy groups of the views `group` reads in place only where their alignment holds at run
  // time (graph::Group::copy_for), for a path that reads them as stored.
  void LowerRunTimeCopies(const graph::Group& group);
  void LowerStdlibAttention(std::size_t index);
  // Whether a stdlib kernel's `where` facts hold for `sizes` (KernelSizes'), at run time.
  llvm::Value* WhereHolds(const tile::Kernel& kernel, const std::map<std::uint32_t, llvm::Value*>& sizes);
  // Groups index .. alternative_last, an attention pattern's parts, or the stdlib kernel instead
  // (graph::Group::alternative); returns alternative_last.
  std::size_t LowerAttentionChoice(std::size_t index);
  // q, k and v of the attention pattern whose `@` is `out`, found through the scores' product among
  // `nodes` (docs/graph.md): q and the transposed k of `matmul_f32`, v of `out`.
  // `reads` gets InputOf's layouts of the three.
  std::vector<const HTensor*> AttentionInputs(const graph::Group& group, const graph::Node& out,
                                              std::vector<const graph::InPlaceRead*>& reads);
  // Operand `id` of a stdlib kernel's group: its value, or, when the group reads it in place
  // (graph::Group::in_place), the tensor that holds its data seen with the view's dims; `read`
  // gets the view's layout then (else null).
  const HTensor& InputOf(const graph::Group& group, graph::NodeId id, const graph::InPlaceRead*& read);
  // The epilogue kernel `built` or else the stdlib kernel `def`, with the tensor inputs that `reads`
  // says are views (non-null entries, in the order of its tensor parameters) read in place
  // (tile::Param::in_place): then a kernel of its own.
  // `stored`, when not null: the `out` parameter is stored through that layout (graph::Group::stored).
  std::size_t InPlaceUse(const tile::Kernel* built, const core::Def* def,
                         const std::vector<const graph::InPlaceRead*>& reads, const graph::StoredOut* stored = nullptr);
  // The sizes of a stdlib kernel from its tensor inputs' dims (each axis that names a size alone).
  std::map<std::uint32_t, llvm::Value*> KernelSizes(const tile::Kernel& kernel,
                                                    const std::vector<const HTensor*>& inputs);
  // Launches stdlib kernel `use` on its tensor inputs, its scalars and its output; `reads` (empty,
  // or one entry per input) gives the layouts of those read in place (InPlaceUse's kernel).
  void LaunchKernel(std::size_t use, const std::vector<const HTensor*>& inputs,
                    const std::vector<llvm::Value*>& scalars, const HTensor& out,
                    const std::map<std::uint32_t, llvm::Value*>& sizes,
                    const std::vector<const graph::InPlaceRead*>& reads = {}, const graph::StoredOut* stored = nullptr);
  // Tensor `i`'s entry of runtime.h's weft_program_view array `views` (offset, dims[5],
  // strides[5]): `layout` (over the data at `root`) in the map's dims that `inner` makes
  // (InPlaceMapDims's order).
  void MapView(std::vector<llvm::Value*>& views, std::size_t i, const core::StridedView& layout,
               const std::vector<std::vector<std::int64_t>>& inner, graph::NodeId root);
  // The instance of program kernel `def` that reads the call arguments `maps` gives (non-null
  // entries, one per argument) through TMA maps of their views (tile::Param::in_place), keyed by
  // its layout class (which parameters, their map's modes); `def`'s own kernel where none.
  std::size_t CallInstance(const core::Def& def, const std::vector<const graph::InPlaceRead*>& maps);
  // A kernel's descriptor and tile IR (lowered once per kernel the program launches).
  std::size_t UseKernel(const core::Module& module, const core::VarStore& vars, const core::Def& def);
  // The instance of a kernel with a `tiles` clause that `call` launches (codegen/instance.h), chosen
  // at the call's constant sizes; `def` itself without one.
  const core::Def& InstanceOf(const core::Def& def, const graph::Node& call);
  std::map<std::pair<const core::Def*, std::map<std::string, std::int64_t>>, std::size_t> instances_;
  // An epilogue kernel's descriptor (the driver built its tile IR: HostOptions::epilogues).
  std::size_t UseEpilogue(const tile::Kernel& kernel);
  std::size_t AddKernel(tile::Kernel kernel);
  void LowerLoad(graph::NodeId id);
  void EmitChecks(std::size_t upto);
  // The run-time value of a node the host reads: made when first needed for a literal or a size.
  const HTensor& TensorOf(graph::NodeId id);
  // A kernel call's argument: TensorOf, or for a view the call reads in place (the plan's
  // graph::Group::dense_reads) the tensor that holds its data seen from the view's offset with its
  // shape (made at each call: a call in one branch of a run-time choice must not use a value of
  // another).
  const HTensor& ArgumentOf(const graph::Group& group, graph::NodeId id);
  llvm::Value* StringOf(graph::NodeId id);
  llvm::Value* Size(SizeVarId var, Span span);
  llvm::Value* DimValue(const Dim& dim, Span span) {
    return EmitDim(dim, [&](SizeVarId v) { return Size(v, span); });
  }

  // ---- IR helpers ----
  [[noreturn]] void Refuse(DiagnosticKind kind, Span span, const std::string& what);
  llvm::FunctionCallee Runtime(const char* name, llvm::Type* result, std::vector<llvm::Type*> params,
                               bool vararg = false);
  llvm::Value* I64(std::int64_t v) { return b_.getInt64(static_cast<std::uint64_t>(v)); }
  llvm::Value* I32(std::int64_t v) { return b_.getInt32(static_cast<std::uint32_t>(v)); }
  llvm::Type* Ptr() { return b_.getPtrTy(); }
  llvm::Value* Text(const std::string& text);
  llvm::Value* EmitDim(const Dim& dim, const std::function<llvm::Value*(SizeVarId)>& var);
  llvm::Value* Array(llvm::Type* element, const std::vector<llvm::Value*>& values);
  llvm::Value* Scalar(Dtype dtype, llvm::Value* bits);
  // A kernel's output in the plan's buffer (`reuse`: Reuse's), zero-filled unless the kernel stores
  // every element (weft_program_out, weft_program_buffer).
  llvm::Value* Out(Dtype dtype, const std::vector<llvm::Value*>& dims, llvm::Value* reuse, bool zero_fill);
  llvm::GlobalVariable* Descriptor(const std::string& name);
  // Ends the program with `format` (weft_program_check_failed) unless `holds`.
  void Require(llvm::Value* holds, const std::string& format, const std::vector<llvm::Value*>& args);
  llvm::Value* Compare(core::RelOp op, llvm::Value* lhs, llvm::Value* rhs);
  std::string Where(Span span) const;                  // "file.weft:3:7: "
  static std::string Escape(const std::string& text);  // % -> %% for a printf format

  const core::Module& module_;
  const core::VarStore& vars_;
  const SourceManager& sources_;
  const graph::Graph& g_;
  const graph::Plan& plan_;
  HostModule& out_;
  HostOptions options_;
  llvm::LLVMContext& ctx_;
  llvm::Module& m_;
  llvm::IRBuilder<> b_;
  llvm::Function* main_ = nullptr;
  std::vector<std::optional<HTensor>> values_;   // per node
  std::deque<HTensor> views_;                    // ArgumentOf's views (stable addresses)
  std::vector<llvm::Value*> strings_;            // per String node: its const char*
  std::vector<llvm::Value*> marks_;              // per TimeBegin node: its mark
  std::map<std::uint32_t, llvm::Value*> sizes_;  // `main`'s size variables, once a `load` binds them
  std::size_t checks_done_ = 0;
  std::map<const core::Def*, std::size_t> kernel_index_;       // a called kernel -> out_.kernels index
  std::map<std::string, std::size_t> epilogue_index_;          // an epilogue kernel's name -> its index
  std::vector<llvm::GlobalVariable*> descriptors_;             // per out_.kernels entry
  std::vector<llvm::GlobalVariable*> array_descriptors_;       // per out_.arrays entry
  std::map<Dtype, llvm::GlobalVariable*> random_descriptors_;  // per out_.randoms entry
  std::map<std::string, llvm::Constant*> texts_;
  std::deque<HTensor> in_place_tensors_;  // InputOf's views read in place; flattened operands
};

// ---- IR helpers ----

void Lowering::Refuse(DiagnosticKind kind, Span span, const std::string& what) {
  throw Refusal{MakeDiagnostic(kind, span, what)};
}

llvm::FunctionCallee Lowering::Runtime(const char* name, llvm::Type* result, std::vector<llvm::Type*> params,
                                       bool vararg) {
  return m_.getOrInsertFunction(name, llvm::FunctionType::get(result, params, vararg));
}

llvm::Value* Lowering::Text(const std::string& text) {
  auto [it, fresh] = texts_.emplace(text, nullptr);
  if (fresh) it->second = b_.CreateGlobalStringPtr(text, "weft.text", 0, &m_);
  return it->second;
}

llvm::Value* Lowering::Array(llvm::Type* element, const std::vector<llvm::Value*>& values) {
  // Allocas live in the entry block, so that a `time` around a call does not grow the stack.
  llvm::IRBuilder<> entry(&main_->getEntryBlock(), main_->getEntryBlock().begin());
  llvm::Value* array =
      entry.CreateAlloca(element, I64(static_cast<std::int64_t>(std::max<std::size_t>(values.size(), 1))));
  for (std::size_t i = 0; i < values.size(); ++i) b_.CreateStore(values[i], b_.CreateConstGEP1_64(element, array, i));
  return array;
}

llvm::Value* Lowering::Scalar(Dtype dtype, llvm::Value* bits) {
  return b_.CreateCall(Runtime("weft_program_scalar", Ptr(), {b_.getInt32Ty(), b_.getInt64Ty()}),
                       {I32(static_cast<int>(dtype)), bits});
}

llvm::Value* Lowering::Out(Dtype dtype, const std::vector<llvm::Value*>& dims, llvm::Value* reuse, bool zero_fill) {
  return b_.CreateCall(
      Runtime(zero_fill ? "weft_program_out" : "weft_program_buffer", Ptr(),
              {b_.getInt32Ty(), b_.getInt32Ty(), Ptr(), Ptr()}),
      {I32(static_cast<int>(dtype)), I32(static_cast<std::int64_t>(dims.size())), Array(b_.getInt64Ty(), dims), reuse});
}

llvm::GlobalVariable* Lowering::Descriptor(const std::string& name) {
  return new llvm::GlobalVariable(m_, llvm::StructType::getTypeByName(ctx_, "weft_program_kernel"), false,
                                  llvm::GlobalValue::InternalLinkage, nullptr, name);
}

std::string Lowering::Where(Span span) const {
  if (!span.valid()) return "";
  if (!options_.export_symbol.empty() && span.begin >= options_.export_wrapper_begin)
    return "`" + options_.export_name + "`: ";
  const SourceBuffer& buffer = sources_.Get(span.file);
  LineCol at = buffer.Locate(span.begin);
  return std::string(buffer.name()) + ":" + std::to_string(at.line) + ":" + std::to_string(at.column) + ": ";
}

std::string Lowering::Escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '%') out += '%';
    out += c;
  }
  return out;
}

void Lowering::Require(llvm::Value* holds, const std::string& format, const std::vector<llvm::Value*>& args) {
  if (auto* c = llvm::dyn_cast<llvm::ConstantInt>(holds); c && c->isOne()) return;
  llvm::BasicBlock* fail = llvm::BasicBlock::Create(ctx_, "check.failed", main_);
  llvm::BasicBlock* ok = llvm::BasicBlock::Create(ctx_, "check.ok", main_);
  b_.CreateCondBr(holds, ok, fail);
  b_.SetInsertPoint(fail);
  std::vector<llvm::Value*> call_args = {Text(format)};
  call_args.insert(call_args.end(), args.begin(), args.end());
  // weft_failf in an executable; a WEFT_ERROR_SHAPE failure in a library call (weft/library.h).
  auto* call = b_.CreateCall(Runtime("weft_program_check_failed", b_.getVoidTy(), {Ptr()}, true), call_args);
  call->setDoesNotReturn();
  b_.CreateUnreachable();
  b_.SetInsertPoint(ok);
}

llvm::Value* Lowering::Compare(core::RelOp op, llvm::Value* lhs, llvm::Value* rhs) {
  switch (op) {
    case core::RelOp::kEq:
      return b_.CreateICmpEQ(lhs, rhs);
    case core::RelOp::kNe:
      return b_.CreateICmpNE(lhs, rhs);
    case core::RelOp::kLt:
      return b_.CreateICmpSLT(lhs, rhs);
    case core::RelOp::kLe:
      return b_.CreateICmpSLE(lhs, rhs);
    case core::RelOp::kGt:
      return b_.CreateICmpSGT(lhs, rhs);
    case core::RelOp::kGe:
      return b_.CreateICmpSGE(lhs, rhs);
  }
  return b_.getFalse();
}

llvm::Value* Lowering::EmitDim(const Dim& dim, const std::function<llvm::Value*(SizeVarId)>& var) {
  return codegen::EmitDim(b_, dim, var);
}

// ---- Values ----

llvm::Value* Lowering::Size(SizeVarId var, Span span) {
  auto it = sizes_.find(var.index);
  if (it == sizes_.end())
    WEFT_INTERNAL_ERROR("host codegen: the size `" + vars_.info(var).name + "` is not bound at " + Where(span));
  return it->second;
}

const HTensor& Lowering::TensorOf(graph::NodeId id) {
  std::optional<HTensor>& value = values_[id.index];
  if (value) return *value;
  const graph::Node& n = g_.Get(id);
  HTensor t;
  t.dtype = n.dtype;
  if (n.kind == graph::Kind::Constant) {
    t.handle = Scalar(n.dtype, I64(static_cast<std::int64_t>(n.bits)));
  } else if (n.kind == graph::Kind::Size) {
    t.handle = Scalar(Dtype::I64, DimValue(n.size, n.span));
  } else if (n.shape.empty() && (n.kind == graph::Kind::Map || n.kind == graph::Kind::Cast)) {
    Refuse(DiagnosticKind::HostUnsupported, n.span,
           "arithmetic on literals and sizes that the host reads (`print`, `save`, a kernel's scalar): compute it "
           "in a tensor, or pass the size itself");
  } else {
    WEFT_INTERNAL_ERROR("host codegen: node %" + std::to_string(id.index) + " (" +
                        std::string(graph::Spelling(n.kind)) + ") has no value at " + Where(n.span));
  }
  value = std::move(t);
  return *value;
}

const HTensor& Lowering::ArgumentOf(const graph::Group& group, graph::NodeId id) {
  const graph::DenseRead* read = nullptr;
  for (const graph::DenseRead& r : group.dense_reads)
    if (r.view == id) read = &r;
  const graph::InPlaceRead* map = nullptr;
  if (!read) return InputOf(group, id, map);  // a view read through a TMA map, or the value
  const graph::Node& n = g_.Get(id);
  const HTensor& base = TensorOf(read->root);
  HTensor& view = views_.emplace_back();
  view.dtype = n.dtype;
  for (const Dim& d : n.shape) view.dims.push_back(DimValue(d, n.span));
  view.handle = b_.CreateCall(Runtime("weft_program_view_of", Ptr(), {Ptr(), b_.getInt64Ty(), b_.getInt32Ty(), Ptr()}),
                              {base.handle, DimValue(read->offset, n.span),
                               I32(static_cast<std::int64_t>(view.dims.size())), Array(b_.getInt64Ty(), view.dims)});
  return view;
}

llvm::Value* Lowering::StringOf(graph::NodeId id) {
  if (strings_[id.index]) return strings_[id.index];
  const graph::Node& n = g_.Get(id);
  if (n.kind != graph::Kind::String) WEFT_INTERNAL_ERROR("host codegen: a string was expected at " + Where(n.span));
  strings_[id.index] = n.args.empty()
                           ? Text(n.text)
                           : b_.CreateCall(Runtime("weft_program_arg", Ptr(), {Ptr()}), {TensorOf(n.args[0]).handle});
  return strings_[id.index];
}

// ---- Run-time checks (the interpreter's Check, with its wording) ----

void Lowering::EmitChecks(std::size_t upto) {
  core::TypePrinter printer(vars_);
  for (; checks_done_ < g_.checks.size() && g_.checks[checks_done_].before <= upto; ++checks_done_) {
    const graph::Check& check = g_.checks[checks_done_];
    llvm::Value* lhs = DimValue(check.fact.lhs, check.fact.span);
    llvm::Value* rhs = DimValue(check.fact.rhs, check.fact.span);
    std::string fact = printer.Print(check.fact.lhs) + " " + std::string(Spelling(check.fact.relation)) + " " +
                       printer.Print(check.fact.rhs);
    std::string values;
    std::vector<llvm::Value*> args;
    std::set<SizeVarId> free;
    for (SizeVarId v : check.fact.lhs.Vars()) free.insert(v);
    for (SizeVarId v : check.fact.rhs.Vars()) free.insert(v);
    for (SizeVarId v : free) {
      values += (values.empty() ? " with " : ", ") + Escape(printer.Print(Dim::Var(v))) + " = %lld";
      args.push_back(Size(v, check.fact.span));
    }
    Require(Compare(check.fact.relation, lhs, rhs),
            Escape(Where(check.fact.span)) + "run-time check failed: " + Escape(check.what) + ": `" + Escape(fact) +
                "` is false" + values,
            args);
  }
}

// ---- Host nodes ----

void Lowering::LowerHost(graph::NodeId id) {
  const graph::Node& n = g_.Get(id);
  using graph::Kind;
  switch (n.kind) {
    case Kind::Constant:
    case Kind::Size:
    case Kind::Param:
      return;  // made when something reads it (TensorOf)
    case Kind::String:
      StringOf(id);
      return;
    case Kind::Load:
      LowerLoad(id);
      return;
    case Kind::Random: {
      HTensor t;
      t.dtype = n.dtype;
      for (const Dim& d : n.shape) t.dims.push_back(DimValue(d, n.span));
      // The dtype's kernel (random.h), when it has one: the runtime launches it if the program uses
      // the GPU. LowerMain drops the descriptors again when `main` launches nothing.
      llvm::Value* kernel = llvm::ConstantPointerNull::get(b_.getPtrTy());
      if (HasRandomKernel(n.dtype)) {
        auto [it, fresh] = random_descriptors_.emplace(n.dtype, nullptr);
        if (fresh) {
          it->second = Descriptor("weft.random." + std::string(Spelling(n.dtype)));
          out_.randoms.push_back(n.dtype);
        }
        kernel = it->second;
      }
      t.handle =
          b_.CreateCall(Runtime("weft_program_random", Ptr(), {Ptr(), b_.getInt32Ty(), b_.getInt32Ty(), Ptr(), Ptr()}),
                        {kernel, I32(static_cast<int>(n.dtype)), I32(static_cast<std::int64_t>(t.dims.size())),
                         Array(b_.getInt64Ty(), t.dims), TensorOf(n.args[0]).handle});
      values_[id.index] = std::move(t);
      return;
    }
    case Kind::Save:
      b_.CreateCall(Runtime("weft_program_save", b_.getVoidTy(), {Ptr(), Ptr()}),
                    {StringOf(n.args[0]), TensorOf(n.args[1]).handle});
      return;
    case Kind::Print: {
      // `text` is the printed value's shape, `%` for each leaf in `args`.
      auto write_text = [&](const std::string& s) {
        if (!s.empty()) b_.CreateCall(Runtime("weft_program_write_text", b_.getVoidTy(), {Ptr()}), {Text(s)});
      };
      std::string pending;
      std::size_t leaf = 0;
      for (char c : n.text) {
        if (c != '%') {
          pending += c;
          continue;
        }
        write_text(pending);
        pending.clear();
        graph::NodeId arg = n.args.at(leaf++);
        if (g_.Get(arg).kind == Kind::String) {
          b_.CreateCall(Runtime("weft_program_write_text", b_.getVoidTy(), {Ptr()}), {StringOf(arg)});
        } else {
          b_.CreateCall(Runtime("weft_program_write_tensor", b_.getVoidTy(), {Ptr()}), {TensorOf(arg).handle});
        }
      }
      write_text(pending + "\n");
      return;
    }
    case Kind::TimeBegin:
      marks_[id.index] = b_.CreateCall(Runtime("weft_program_time_start", Ptr(), {}));
      return;
    case Kind::TimeEnd: {
      HTensor ms;
      ms.dtype = Dtype::F64;
      ms.handle = b_.CreateCall(Runtime("weft_program_time_stop", Ptr(), {Ptr()}), {marks_.at(n.args.front().index)});
      values_[id.index] = std::move(ms);
      return;
    }
    case Kind::Map:
    case Kind::Cast:
      return;  // a host scalar: computed by the kernels that read it (or refused by TensorOf)
    default:
      WEFT_INTERNAL_ERROR("host codegen: a `" + std::string(graph::Spelling(n.kind)) + "` node in a host group");
  }
}

void Lowering::LowerLoad(graph::NodeId id) {
  const graph::Node& n = g_.Get(id);
  const std::string& type_text = n.text;
  llvm::Value* path = StringOf(n.args[0]);
  HTensor t;
  t.dtype = n.dtype;
  t.handle = b_.CreateCall(
      Runtime("weft_program_load", Ptr(), {Ptr(), b_.getInt32Ty(), b_.getInt32Ty(), Ptr()}),
      {path, I32(static_cast<int>(n.dtype)), I32(static_cast<std::int64_t>(n.shape.size())), Text(type_text)});
  auto dim_fn = Runtime("weft_program_dim", b_.getInt64Ty(), {Ptr(), b_.getInt32Ty()});
  for (std::size_t i = 0; i < n.shape.size(); ++i)
    t.dims.push_back(b_.CreateCall(dim_fn, {t.handle, I32(static_cast<std::int64_t>(i))}));
  // The first axis that names a size alone binds it; every other dim the program knows is checked.
  core::TypePrinter printer(vars_);
  for (std::size_t i = 0; i < n.shape.size(); ++i) {
    const Dim& d = n.shape[i];
    if (std::optional<SizeVarId> v = d.AsVar(); v && !sizes_.count(v->index)) {
      sizes_[v->index] = t.dims[i];
      continue;
    }
    bool known = true;
    for (SizeVarId v : d.Vars()) known = known && sizes_.count(v.index);
    if (!known) continue;
    llvm::Value* want = DimValue(d, n.span);
    llvm::BasicBlock* fail = llvm::BasicBlock::Create(ctx_, "load.mismatch", main_);
    llvm::BasicBlock* ok = llvm::BasicBlock::Create(ctx_, "load.ok", main_);
    b_.CreateCondBr(b_.CreateICmpEQ(t.dims[i], want), ok, fail);
    b_.SetInsertPoint(fail);
    llvm::Value* dim_text = d.AsConstant() ? llvm::cast<llvm::Value>(llvm::ConstantPointerNull::get(b_.getPtrTy()))
                                           : Text(printer.Print(d));
    auto* call = b_.CreateCall(Runtime("weft_program_load_mismatch", b_.getVoidTy(),
                                       {Ptr(), Ptr(), Ptr(), b_.getInt32Ty(), Ptr(), b_.getInt64Ty()}),
                               {t.handle, path, Text(type_text), I32(static_cast<std::int64_t>(i)), dim_text, want});
    call->setDoesNotReturn();
    b_.CreateUnreachable();
    b_.SetInsertPoint(ok);
  }
  values_[id.index] = std::move(t);
}

// ---- Kernel calls ----

// Whether no input of a launch is read in place (InputOf's `read` null for each).
bool NoneInPlace(const std::vector<const graph::InPlaceRead*>& reads) {
  return std::all_of(reads.begin(), reads.end(), [](const graph::InPlaceRead* r) { return r == nullptr; });
}

void Lowering::LowerCall(const graph::Group& group) {
  graph::NodeId call_id;
  std::vector<graph::NodeId> outs;
  for (graph::NodeId id : group.nodes) {
    if (g_.Get(id).kind == graph::Kind::Kernel) call_id = id;
    if (g_.Get(id).kind == graph::Kind::KernelOut) outs.push_back(id);
  }
  const graph::Node& call = g_.Get(call_id);
  const core::Def& def = InstanceOf(*call.def, call);
  const Span span = call.span;
  // Views the kernel reads through TMA maps (graph::Group::in_place, sm_90a): per input, its read
  // or null, and the kernel's instance that takes those maps; `dense_maps`, those of the branch
  // where run-time conditions fail (the views they are of read from their copies).
  std::vector<const graph::InPlaceRead*> maps, dense_maps;
  for (graph::NodeId a : call.args) {
    const graph::InPlaceRead* read = nullptr;
    for (const graph::InPlaceRead& r : group.in_place)
      if (r.view == a) read = &r;
    maps.push_back(read);
    dense_maps.push_back(read && read->when.empty() ? read : nullptr);
  }
  const std::size_t use = CallInstance(def, maps);
  const tile::Kernel& kernel = out_.kernels[use].kernel;
  const std::string where = Escape(Where(span));
  const std::string kname = "`" + Escape(kernel.name) + "`";

  // 1. The inputs, in parameter order; sizes bound by the first axis that names them alone.
  std::map<std::uint32_t, llvm::Value*> sizes;
  std::vector<std::pair<std::size_t, const HTensor*>> inputs;  // (param, tensor)
  std::vector<graph::NodeId> input_nodes;
  std::vector<llvm::Value*> scalars;
  std::size_t next_arg = 0;
  for (std::size_t p = 0; p < kernel.params.size(); ++p) {
    const tile::Param& param = kernel.params[p];
    if (param.out) continue;
    const graph::NodeId arg_id = call.args.at(next_arg++);
    const HTensor& arg = ArgumentOf(group, arg_id);
    const tile::Value& v = kernel.Get(param.value);
    if (v.space == tile::Space::Scalar) {
      scalars.push_back(arg.handle);
      continue;
    }
    if (arg.dims.size() != v.shape.size())
      WEFT_INTERNAL_ERROR("host codegen: `" + kernel.name + "`'s `" + param.name + "` has another rank");
    inputs.emplace_back(p, &arg);
    input_nodes.push_back(arg_id);
    for (std::size_t a = 0; a < v.shape.size(); ++a) {
      if (std::optional<SizeVarId> var = v.shape[a].AsVar(); var && !sizes.count(var->index))
        sizes[var->index] = arg.dims[a];
    }
  }
  // Sizes no input names alone (an `out` parameter's own): the call's result types give them.
  std::size_t out_index = 0;
  for (const tile::Param& param : kernel.params) {
    if (!param.out) continue;
    const tile::Value& v = kernel.Get(param.value);
    const graph::Node& out = g_.Get(outs.at(out_index++));
    for (std::size_t a = 0; a < v.shape.size() && a < out.shape.size(); ++a) {
      if (std::optional<SizeVarId> var = v.shape[a].AsVar(); var && !sizes.count(var->index))
        sizes[var->index] = DimValue(out.shape[a], span);
    }
  }
  for (const auto& [var, name] : kernel.size_names) {
    if (!sizes.count(var.index))
      Refuse(DiagnosticKind::HostUnsupported, span,
             "a call of `" + kernel.name + "` whose size `" + name +
                 "` no input's shape gives: write the result's type out (`(" + kernel.name + " ... : ...)`)");
  }
  auto size_of = [&](SizeVarId v) -> llvm::Value* { return sizes.at(v.index); };
  auto shapes_text = [&](std::string& format, std::vector<llvm::Value*>& args) {
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const auto& [p, arg] = inputs[i];
      format += std::string(i ? ", " : "") + "`" + Escape(kernel.params[p].name) + "` is " +
                std::string(Spelling(arg->dtype)) + "[";
      for (std::size_t a = 0; a < arg->dims.size(); ++a) {
        format += a ? ", %lld" : "%lld";
        args.push_back(arg->dims[a]);
      }
      format += "]";
    }
  };
  // 2. Each input's dims against its type over the bound sizes (two inputs that disagree on `k`).
  for (const auto& [p, arg] : inputs) {
    const tile::Value& v = kernel.Get(kernel.params[p].value);
    for (std::size_t a = 0; a < v.shape.size(); ++a) {
      llvm::Value* want = EmitDim(v.shape[a], size_of);
      if (want == arg->dims[a]) continue;
      std::string format = where + kname + " cannot take its inputs: axis " + std::to_string(a) + " of `" +
                           Escape(kernel.params[p].name) + "` must be `" +
                           Escape(core::ToString(v.shape[a], [&](SizeVarId s) { return kernel.size_names.at(s); })) +
                           "` = %lld, but ";
      std::vector<llvm::Value*> args = {want};
      shapes_text(format, args);
      Require(b_.CreateICmpEQ(arg->dims[a], want), format, args);
    }
  }
  // 3. The `where` facts, which the entry assumes.
  auto names = [&](SizeVarId s) { return kernel.size_names.at(s); };
  for (const core::DimFact& fact : kernel.where) {
    std::string text = core::ToString(fact.lhs, names) + " " + std::string(Spelling(fact.relation)) + " " +
                       core::ToString(fact.rhs, names);
    std::string format = where + kname + " needs `where " + Escape(text) + "`, which does not hold";
    std::vector<llvm::Value*> args;
    std::set<SizeVarId> mentioned;
    for (SizeVarId v : fact.lhs.Vars()) mentioned.insert(v);
    for (SizeVarId v : fact.rhs.Vars()) mentioned.insert(v);
    std::string values;
    for (SizeVarId v : mentioned) {
      values += (values.empty() ? ": " : ", ") + Escape(kernel.size_names.at(v)) + " = %lld";
      args.push_back(sizes.at(v.index));
    }
    format += values + " (";
    shapes_text(format, args);
    format += ")";
    Require(Compare(fact.relation, EmitDim(fact.lhs, size_of), EmitDim(fact.rhs, size_of)), format, args);
  }
  // 4. The `out` tensors on the GPU, in the plan's buffers: zero-filled, as the kernel tier's meaning
  // has them, unless the kernel provably stores every element (tile/stores.h); then the arguments
  // in the descriptor's order.
  std::vector<llvm::Value*> tensors;
  std::size_t input = 0;
  out_index = 0;
  for (const tile::Param& param : kernel.params) {
    const tile::Value& v = kernel.Get(param.value);
    if (v.space != tile::Space::Global) continue;
    if (!param.out) {
      tensors.push_back(inputs[input++].second->handle);
      continue;
    }
    HTensor t;
    t.dtype = v.dtype;
    for (const Dim& d : v.shape) t.dims.push_back(EmitDim(d, size_of));
    graph::NodeId node = outs.at(out_index);
    t.handle = Out(v.dtype, t.dims, Reuse(node), !tile::StoresEveryElement(kernel, param.value));
    tensors.push_back(t.handle);
    values_[node.index] = std::move(t);
    ++out_index;
  }
  std::vector<llvm::Value*> size_values;  // in size_names order; the descriptor maps the entry's
  for (const auto& [var, name] : kernel.size_names) size_values.push_back(sizes.at(var.index));
  std::vector<llvm::Value*> grid;
  for (const Dim& d : kernel.grid) grid.push_back(EmitDim(d, size_of));
  while (grid.size() < 3) grid.push_back(I64(1));
  // Launches instance `instance`, which reads the inputs `reads` gives (per call argument) through
  // TMA maps: their views (runtime.h's weft_program_view) in the descriptor's tensor order.
  auto launch = [&](const std::vector<llvm::Value*>& handles, std::size_t instance,
                    const std::vector<const graph::InPlaceRead*>& reads) {
    llvm::Value* at = descriptors_[instance];
    if (NoneInPlace(reads)) {
      b_.CreateCall(Runtime("weft_program_launch", b_.getVoidTy(), {Ptr(), Ptr(), Ptr(), Ptr(), Ptr()}),
                    {at, Array(b_.getInt64Ty(), grid), Array(Ptr(), handles), Array(b_.getInt64Ty(), size_values),
                     Array(Ptr(), scalars)});
      return;
    }
    std::vector<llvm::Value*> views(11 * handles.size(), I64(0));
    std::size_t slot = 0, arg = 0;
    for (const tile::Param& param : kernel.params) {
      const bool global = kernel.Get(param.value).space == tile::Space::Global;
      if (!param.out && arg < reads.size() && reads[arg] && global)
        MapView(views, slot, reads[arg]->layout, reads[arg]->inner, reads[arg]->root);
      if (!param.out) ++arg;
      if (global) ++slot;
    }
    b_.CreateCall(Runtime("weft_program_launch_views", b_.getVoidTy(), {Ptr(), Ptr(), Ptr(), Ptr(), Ptr(), Ptr()}),
                  {at, Array(b_.getInt64Ty(), grid), Array(Ptr(), handles), Array(b_.getInt64Ty(), size_values),
                   Array(Ptr(), scalars), Array(b_.getInt64Ty(), views)});
  };
  // 5. Views read in place only where their offset's alignment holds at run time
  // (graph::DenseRead::when): there the call reads them in place; elsewhere their copies run first
  // (their groups' copy_for is this one) and the call reads the copies.
  // The same for views read through TMA maps (graph::InPlaceRead::when): elsewhere the instance
  // without those maps reads their copies.
  llvm::Value* aligned = b_.getTrue();
  std::vector<graph::NodeId> run_time;
  auto holds = [&](graph::NodeId view, const std::vector<core::DimFact>& when) {
    const Span at = g_.Get(view).span;
    for (const core::DimFact& fact : when)
      aligned = b_.CreateAnd(aligned, Compare(fact.relation, DimValue(fact.lhs, at), DimValue(fact.rhs, at)));
    run_time.push_back(view);
  };
  for (const graph::DenseRead& read : group.dense_reads)
    if (!read.when.empty()) holds(read.view, read.when);
  for (const graph::InPlaceRead& read : group.in_place)
    if (!read.when.empty()) holds(read.view, read.when);
  if (run_time.empty()) {
    launch(tensors, use, maps);
    return;
  }
  llvm::BasicBlock* in_place = llvm::BasicBlock::Create(ctx_, "call.in_place", main_);
  llvm::BasicBlock* copies = llvm::BasicBlock::Create(ctx_, "call.copies", main_);
  llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx_, "call.done", main_);
  b_.CreateCondBr(aligned, in_place, copies);
  b_.SetInsertPoint(in_place);
  launch(tensors, use, maps);
  b_.CreateBr(done);
  b_.SetInsertPoint(copies);
  std::vector<llvm::Value*> copied = tensors;
  for (graph::NodeId view : run_time) {
    LowerArray(static_cast<std::size_t>(plan_.group_of[view.index]));
    // The input's place among the descriptor's tensors: inputs and outputs in parameter order.
    std::size_t slot = 0, input_slot = 0;
    for (const tile::Param& param : kernel.params) {
      if (kernel.Get(param.value).space != tile::Space::Global) continue;
      if (!param.out && input_slot < input_nodes.size() && input_nodes[input_slot++] == view)
        copied[slot] = TensorOf(view).handle;
      ++slot;
    }
  }
  launch(copied, CallInstance(def, dense_maps), dense_maps);
  b_.CreateBr(done);
  b_.SetInsertPoint(done);
}

void Lowering::MapView(std::vector<llvm::Value*>& views, std::size_t i, const core::StridedView& layout,
                       const std::vector<std::vector<std::int64_t>>& inner, graph::NodeId root) {
  const Span span = g_.Get(root).span;
  views[11 * i] = DimValue(layout.offset, span);
  std::vector<MapDim> dims = InPlaceMapDims(inner);
  for (std::size_t d = 0; d < dims.size() && d < 5; ++d) {
    const core::StridedMode& mode =
        layout.axes[static_cast<std::size_t>(dims[d].axis)].modes[static_cast<std::size_t>(dims[d].mode)];
    views[11 * i + 1 + d] = DimValue(mode.extent, span);
    views[11 * i + 6 + d] = DimValue(mode.stride, span);
  }
}

std::size_t Lowering::CallInstance(const core::Def& def, const std::vector<const graph::InPlaceRead*>& maps) {
  if (NoneInPlace(maps)) return UseKernel(module_, vars_, def);
  auto lowered = tile::Lower(module_, vars_, def);
  if (!lowered) throw Refusals{lowered.error()};
  tile::Kernel kernel = std::move(*lowered);
  // Named by its layout class: the parameters read through maps and their modes' inner extents.
  std::string name = kernel.name + "_in_place";
  std::size_t arg = 0;
  for (tile::Param& param : kernel.params) {
    if (param.out) continue;
    const graph::InPlaceRead* read = arg < maps.size() ? maps[arg] : nullptr;
    ++arg;
    if (!read) continue;
    param.in_place = tile::InPlace{read->inner, {}};
    name += "_" + param.name + "_d" + std::to_string(read->inner.size());
    for (const std::vector<std::int64_t>& axis : read->inner)
      for (std::int64_t e : axis) name += "_" + std::to_string(e);
  }
  kernel.name = name;
  return UseEpilogue(kernel);
}

std::size_t Lowering::UseKernel(const core::Module& module, const core::VarStore& vars, const core::Def& def) {
  auto [it, fresh] = kernel_index_.emplace(&def, out_.kernels.size());
  if (fresh) {
    auto lowered = tile::Lower(module, vars, def);
    if (!lowered) throw Refusals{lowered.error()};
    AddKernel(std::move(*lowered));
  }
  return it->second;
}

const core::Def& Lowering::InstanceOf(const core::Def& def, const graph::Node& call) {
  if (!def.kernel || def.kernel->instances.empty()) return def;
  // The sizes the inputs' constant extents give, by name; the others are the cost model's default.
  std::map<std::string, std::int64_t> sizes;
  std::size_t next = 0;
  for (std::size_t p = 0; p < def.params.size() && p < def.kernel->out.size(); ++p) {
    if (def.kernel->out[p]) continue;
    if (next >= call.args.size()) break;
    const graph::Node& arg = g_.Get(call.args[next++]);
    core::TypeRef type = vars_.Resolve(module_.Get(def.params[p]).type);
    const auto* tensor = std::get_if<core::TensorType>(&type->node);
    if (!tensor) continue;
    core::Shape shape = vars_.Resolve(tensor->shape);
    for (std::size_t a = 0; a < shape.before.size() && a < arg.shape.size(); ++a) {
      std::optional<SizeVarId> var = shape.before[a].AsVar();
      std::optional<std::int64_t> value = arg.shape[a].AsConstant();
      if (var && value) sizes[vars_.info(*var).name] = *value;
    }
  }
  auto [it, fresh] = instances_.try_emplace({&def, sizes}, 0);
  if (fresh) {
    std::optional<TileChoice> choice = ChooseTiles(module_, vars_, def, options_.target, sizes);
    it->second = choice ? choice->index : 0;  // none builds: the first one's errors say why
  }
  return def.kernel->instances[it->second];
}

std::size_t Lowering::UseEpilogue(const tile::Kernel& kernel) {
  auto [it, fresh] = epilogue_index_.emplace(kernel.name, out_.kernels.size());
  if (fresh) AddKernel(kernel);
  return it->second;
}

std::size_t Lowering::AddKernel(tile::Kernel kernel) {
  descriptors_.push_back(Descriptor("weft.kernel." + kernel.name));
  out_.kernels.push_back(KernelUse{std::move(kernel)});
  return out_.kernels.size() - 1;
}

// A product the graph routed to a stdlib gemm kernel (graph::FuseOptions::stdlib_gemm): launched
// when the kernel's `where` facts hold for the run-time sizes, else the group's generic product
// kernel computes it; both write the same output.
void Lowering::LowerRunTimeCopies(const graph::Group& group) {
  for (const graph::InPlaceRead& read : group.in_place)
    if (!read.when.empty()) LowerArray(static_cast<std::size_t>(plan_.group_of[read.view.index]));
}

void Lowering::LowerStdlibGemm(std::size_t index) {
  const graph::Group& group = plan_.groups[index];
  const graph::Node& root = g_.Get(group.nodes.back());
  const graph::Node* product = &root;
  for (graph::NodeId id : group.nodes)
    if (g_.Get(id).kind == graph::Kind::MatMul) product = &g_.Get(id);
  const graph::Node& mm = *product;
  // An epilogue's kernel is built by the driver (graph::EpilogueTile), which gives those that
  // synthesize for the target; without it, the generic product computes the group.
  std::optional<graph::Epilogue> epilogue;
  const tile::Kernel* built = nullptr;
  const core::Def* def = nullptr;
  if (group.epilogue) {
    epilogue = graph::EpilogueKernel(g_, group.nodes, group.kernel);
    if (options_.epilogues) {
      auto it = options_.epilogues->find(group.kernel);
      if (it != options_.epilogues->end()) built = &it->second;
    }
  } else if (options_.stdlib) {
    def = options_.stdlib->Find(group.kernel);
  }
  if (group.epilogue ? !epilogue || !built : !def || !def->kernel) {
    LowerRunTimeCopies(group);
    LowerArray(index);
    return;
  }
  // The operands as stored (or views read in place): a or (for `_tn`) the tensor a is a transpose
  // of, and b or (for `_nt`) the tensor b is a transpose of; then the tensors the epilogue reads.
  const graph::Transposed transposed = graph::TransposedOperands(g_, mm);
  graph::NodeId a_id = transposed.a ? g_.Get(mm.args[0]).args[0] : mm.args[0];
  graph::NodeId b_id = transposed.b ? g_.Get(mm.args[1]).args[0] : mm.args[1];
  std::vector<const graph::InPlaceRead*> reads(2, nullptr);
  std::vector<const HTensor*> inputs = {&InputOf(group, a_id, reads[0]), &InputOf(group, b_id, reads[1])};
  if (inputs[0]->dims.size() > 2) {
    // a: [..rows, k], dense: the kernel's [m, k], its leading axes flattened (graph::Fuse's routing).
    HTensor rows = *inputs[0];
    llvm::Value* m = rows.dims[0];
    for (std::size_t i = 1; i + 1 < rows.dims.size(); ++i) m = b_.CreateMul(m, rows.dims[i]);
    rows.dims = {m, rows.dims.back()};
    inputs[0] = &in_place_tensors_.emplace_back(std::move(rows));
  }
  if (epilogue)
    for (const graph::EpilogueInput& x : epilogue->inputs) {
      inputs.push_back(&TensorOf(x.node));
      reads.push_back(nullptr);
    }
  const graph::StoredOut* stored = group.stored ? &*group.stored : nullptr;
  const std::size_t use = InPlaceUse(built, def, reads, stored);
  // Both kernels write every element of the output: the plan's buffer, not a zero-filled tensor.
  // Stored as a view of it wants (graph::Group::stored): a tensor of the view's shape, which the
  // view's readers read as it is; where the stdlib kernel's `where` clause fails at run time the
  // generic product below stores through the same layout (array_product.cpp's OutputOffset).
  HTensor out = stored ? StoredBuffer(*stored) : Buffer(group.nodes.back());
  // The kernel's sizes from its inputs' dims (a: [m, k], or [k, m]; b: [k, n], or [n, k]).
  std::map<std::uint32_t, llvm::Value*> sizes = KernelSizes(out_.kernels[use].kernel, inputs);
  llvm::Value* holds = WhereHolds(out_.kernels[use].kernel, sizes);
  llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx_, "gemm.done", main_);
  // Views read in place only where their alignment holds at run time (graph::InPlaceRead::when):
  // there the kernel reads them in place; elsewhere their copy groups run first and the kernel
  // reads the copies, as stored.
  llvm::Value* aligned = b_.getTrue();
  std::vector<const graph::InPlaceRead*> dense_reads = reads;
  std::vector<const HTensor*> dense_inputs = inputs;
  for (std::size_t i = 0; i < reads.size(); ++i) {
    if (!reads[i] || reads[i]->when.empty()) continue;
    const Span span = g_.Get(reads[i]->view).span;
    for (const core::DimFact& fact : reads[i]->when)
      aligned = b_.CreateAnd(aligned, Compare(fact.relation, DimValue(fact.lhs, span), DimValue(fact.rhs, span)));
    dense_reads[i] = nullptr;
  }
  if (dense_reads != reads) {
    llvm::BasicBlock* view = llvm::BasicBlock::Create(ctx_, "gemm.in_place", main_);
    llvm::BasicBlock* copied = llvm::BasicBlock::Create(ctx_, "gemm.copies", main_);
    b_.CreateCondBr(b_.CreateAnd(holds, aligned), view, copied);
    b_.SetInsertPoint(view);
    LaunchKernel(use, inputs, {}, out, sizes, reads, stored);
    b_.CreateBr(done);
    b_.SetInsertPoint(copied);
    LowerRunTimeCopies(group);
    for (std::size_t i = 0; i < reads.size(); ++i)
      if (reads[i] != dense_reads[i]) dense_inputs[i] = &TensorOf(reads[i]->view);
  }
  const std::size_t dense = dense_reads == reads ? use : InPlaceUse(built, def, dense_reads, stored);
  llvm::BasicBlock* fast = llvm::BasicBlock::Create(ctx_, "gemm.stdlib", main_);
  llvm::BasicBlock* generic = llvm::BasicBlock::Create(ctx_, "gemm.generic", main_);
  b_.CreateCondBr(holds, fast, generic);
  b_.SetInsertPoint(fast);
  LaunchKernel(dense, dense_inputs, {}, out, sizes, dense_reads, stored);
  b_.CreateBr(done);
  b_.SetInsertPoint(generic);
  LowerArray(index);  // writes into `out`, already allocated
  b_.CreateBr(done);
  b_.SetInsertPoint(done);
}

llvm::Value* Lowering::WhereHolds(const tile::Kernel& kernel, const std::map<std::uint32_t, llvm::Value*>& sizes) {
  auto size_of = [&](SizeVarId v) -> llvm::Value* { return sizes.at(v.index); };
  llvm::Value* holds = b_.getTrue();
  for (const core::DimFact& fact : kernel.where)
    holds = b_.CreateAnd(holds, Compare(fact.relation, EmitDim(fact.lhs, size_of), EmitDim(fact.rhs, size_of)));
  return holds;
}

std::map<std::uint32_t, llvm::Value*> Lowering::KernelSizes(const tile::Kernel& kernel,
                                                            const std::vector<const HTensor*>& inputs) {
  std::map<std::uint32_t, llvm::Value*> sizes;
  std::size_t input = 0;
  for (const tile::Param& param : kernel.params) {
    const tile::Value& v = kernel.Get(param.value);
    if (param.out || v.space != tile::Space::Global) continue;
    const HTensor& t = *inputs.at(input++);
    for (std::size_t a = 0; a < v.shape.size() && a < t.dims.size(); ++a)
      if (std::optional<SizeVarId> var = v.shape[a].AsVar(); var && !sizes.count(var->index))
        sizes[var->index] = t.dims[a];
  }
  return sizes;
}

const HTensor& Lowering::InputOf(const graph::Group& group, graph::NodeId id, const graph::InPlaceRead*& read) {
  read = nullptr;
  for (const graph::InPlaceRead& r : group.in_place)
    if (r.view == id) read = &r;
  if (!read) return TensorOf(id);
  const graph::Node& n = g_.Get(id);
  HTensor t;
  t.dtype = n.dtype;
  t.handle = TensorOf(read->root).handle;
  for (const Dim& d : n.shape) t.dims.push_back(DimValue(d, n.span));
  return in_place_tensors_.emplace_back(std::move(t));
}

std::size_t Lowering::InPlaceUse(const tile::Kernel* built, const core::Def* def,
                                 const std::vector<const graph::InPlaceRead*>& reads, const graph::StoredOut* stored) {
  if (NoneInPlace(reads) && !stored)
    return built ? UseEpilogue(*built) : UseKernel(*options_.stdlib, *options_.stdlib_vars, *def);
  tile::Kernel kernel;
  if (built) {
    kernel = *built;
  } else {
    auto lowered = tile::Lower(*options_.stdlib, *options_.stdlib_vars, *def);
    if (!lowered) throw Refusals{lowered.error()};
    kernel = std::move(*lowered);
  }
  std::string name = kernel.name + (NoneInPlace(reads) ? "" : "_in_place");
  std::size_t input = 0;
  for (tile::Param& param : kernel.params) {
    if (param.out && stored && kernel.Get(param.value).space == tile::Space::Global) {
      param.in_place = tile::InPlace{stored->inner, stored->order};
      name += "_stored";
      for (const std::vector<std::int64_t>& axis : stored->inner)
        for (std::int64_t e : axis) name += "_" + std::to_string(e);
      name += "_o";
      for (int m : stored->order) name += std::to_string(m);
      continue;
    }
    if (param.out || kernel.Get(param.value).space != tile::Space::Global) continue;
    const graph::InPlaceRead* read = input < reads.size() ? reads[input] : nullptr;
    ++input;
    if (!read) continue;
    param.in_place = tile::InPlace{read->inner};
    name += "_" + param.name;
    for (const std::vector<std::int64_t>& axis : read->inner)
      for (std::int64_t e : axis) name += "_" + std::to_string(e);
  }
  kernel.name = name;
  return UseEpilogue(kernel);
}

void Lowering::LaunchKernel(std::size_t use, const std::vector<const HTensor*>& inputs,
                            const std::vector<llvm::Value*>& scalars, const HTensor& out,
                            const std::map<std::uint32_t, llvm::Value*>& sizes,
                            const std::vector<const graph::InPlaceRead*>& reads, const graph::StoredOut* stored) {
  const tile::Kernel& kernel = out_.kernels[use].kernel;
  // The kernel reads in place exactly the inputs whose layouts `reads` gives.
  std::size_t input = 0;
  for (const tile::Param& param : kernel.params) {
    if (param.out || kernel.Get(param.value).space != tile::Space::Global) continue;
    const bool read = input < reads.size() && reads[input] != nullptr;
    if (param.in_place.has_value() != read)
      WEFT_INTERNAL_ERROR(
          "host codegen: `" + kernel.name + "`'s parameter `" + param.name + "` is " +
          (read ? "a view read in place, and the kernel reads it dense" : "dense, and the kernel reads a view"));
    ++input;
  }
  auto size_of = [&](SizeVarId v) -> llvm::Value* { return sizes.at(v.index); };
  std::vector<llvm::Value*> tensors;
  for (const HTensor* t : inputs) tensors.push_back(t->handle);
  tensors.push_back(out.handle);
  std::vector<llvm::Value*> size_values;
  for (const auto& [var, name] : kernel.size_names) size_values.push_back(sizes.at(var.index));
  std::vector<llvm::Value*> grid;
  for (const Dim& d : kernel.grid) grid.push_back(EmitDim(d, size_of));
  while (grid.size() < 3) grid.push_back(I64(1));
  if (NoneInPlace(reads) && !stored) {
    b_.CreateCall(Runtime("weft_program_launch", b_.getVoidTy(), {Ptr(), Ptr(), Ptr(), Ptr(), Ptr()}),
                  {descriptors_[use], Array(b_.getInt64Ty(), grid), Array(Ptr(), tensors),
                   Array(b_.getInt64Ty(), size_values), Array(Ptr(), scalars)});
    return;
  }
  // runtime.h's weft_program_view per tensor parameter (offset, dims[5], strides[5]; zeros for those
  // read as stored), each read in place in its map's dim order (InPlaceMapDims).
  std::vector<llvm::Value*> views(11 * tensors.size(), I64(0));
  for (std::size_t i = 0; i < reads.size(); ++i)
    if (reads[i]) MapView(views, i, reads[i]->layout, reads[i]->inner, reads[i]->root);
  // The output, stored through its layout over [m, n]: a TMA store's map (sm_90a) takes it.
  if (stored) MapView(views, inputs.size(), stored->flat, stored->inner, stored->root);
  b_.CreateCall(Runtime("weft_program_launch_views", b_.getVoidTy(), {Ptr(), Ptr(), Ptr(), Ptr(), Ptr(), Ptr()}),
                {descriptors_[use], Array(b_.getInt64Ty(), grid), Array(Ptr(), tensors),
                 Array(b_.getInt64Ty(), size_values), Array(Ptr(), scalars), Array(b_.getInt64Ty(), views)});
}

// nn's attention pattern routed to a stdlib attention kernel (graph::FuseOptions::stdlib_attention):
// the fusion matched it only for constant sizes its `where` clause holds for, so it is launched
// as it is, causal when the pattern had nn's causal mask.
void Lowering::LowerStdlibAttention(std::size_t index) {
  const graph::Group& group = plan_.groups[index];
  const graph::Node& root = g_.Get(group.nodes.back());
  const core::Def* def = options_.stdlib ? options_.stdlib->Find(group.kernel) : nullptr;
  if (!def || !def->kernel)
    Refuse(DiagnosticKind::HostUnsupported, root.span,
           "attention through the stdlib kernel `" + group.kernel + "`, which this build's stdlib does not have");
  std::vector<const graph::InPlaceRead*> reads;
  std::vector<const HTensor*> inputs = AttentionInputs(group, root, reads);
  // Stored as a view of it wants (graph::Group::stored; heads back to rows): StoredBuffer.
  const graph::StoredOut* stored = group.stored ? &*group.stored : nullptr;
  const std::size_t use = InPlaceUse(nullptr, def, reads, stored);
  HTensor out = stored ? StoredBuffer(*stored) : Buffer(group.nodes.back());  // the kernel writes every element
  LaunchKernel(use, inputs, {Scalar(Dtype::Bool, I64(group.causal ? 1 : 0))}, out,
               KernelSizes(out_.kernels[use].kernel, inputs), reads, stored);
}

std::vector<const HTensor*> Lowering::AttentionInputs(const graph::Group& group, const graph::Node& out,
                                                      std::vector<const graph::InPlaceRead*>& reads) {
  const graph::Node* scores = nullptr;
  for (graph::NodeId id : group.nodes)
    if (g_.Get(id).kind == graph::Kind::MatMul && g_.Get(id).fn == "matmul_f32") scores = &g_.Get(id);
  if (!scores) WEFT_INTERNAL_ERROR("host codegen: an attention's nodes without the scores' product");
  graph::NodeId q = scores->args[0], k = g_.Get(scores->args[1]).args[0], v = out.args[1];
  reads.assign(3, nullptr);
  return {&InputOf(group, q, reads[0]), &InputOf(group, k, reads[1]), &InputOf(group, v, reads[2])};
}

// An attention pattern whose sizes are known only at run time (graph::Group::alternative): the host
// scalars among its parts first, then the stdlib kernel when its `where` clause holds, else the
// parts (two products and a row kernel) into the same output.
std::size_t Lowering::LowerAttentionChoice(std::size_t index) {
  const graph::Group& first = plan_.groups[index];
  const std::size_t last = first.alternative_last;
  const graph::Node& root = g_.Get(plan_.groups[last].nodes.back());  // the pattern's `@`
  auto is_host = [&](std::size_t g) { return plan_.groups[g].kind == graph::GroupKind::Host; };
  for (std::size_t g = index + 1; g < last; ++g)
    if (is_host(g)) {
      EmitChecks(plan_.groups[g].nodes.back().index);
      LowerHost(plan_.groups[g].nodes.back());
    }
  EmitChecks(plan_.groups[last].nodes.back().index);
  const core::Def* def = options_.stdlib ? options_.stdlib->Find(first.alternative) : nullptr;
  if (!def || !def->kernel) {
    for (std::size_t g = index; g <= last; ++g)
      if (!is_host(g)) LowerArray(g);
    return last;
  }
  std::vector<const graph::InPlaceRead*> reads;
  std::vector<const HTensor*> inputs = AttentionInputs(first, root, reads);
  // Stored as a view of it wants (graph::Group::stored on the last part, heads back to rows): the
  // kernel stores so, and the parts' last product through the same layout.
  const graph::StoredOut* stored = plan_.groups[last].stored ? &*plan_.groups[last].stored : nullptr;
  const std::size_t use = InPlaceUse(nullptr, def, reads, stored);
  const tile::Kernel& kernel = out_.kernels[use].kernel;
  // Both paths write every element.
  HTensor out = stored ? StoredBuffer(*stored) : Buffer(plan_.groups[last].nodes.back());
  std::map<std::uint32_t, llvm::Value*> sizes = KernelSizes(kernel, inputs);
  llvm::Value* holds = WhereHolds(kernel, sizes);
  llvm::BasicBlock* fast = llvm::BasicBlock::Create(ctx_, "attention.stdlib", main_);
  llvm::BasicBlock* parts = llvm::BasicBlock::Create(ctx_, "attention.parts", main_);
  llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx_, "attention.done", main_);
  b_.CreateCondBr(holds, fast, parts);
  b_.SetInsertPoint(fast);
  LaunchKernel(use, inputs, {Scalar(Dtype::Bool, I64(first.causal ? 1 : 0))}, out, sizes, reads, stored);
  b_.CreateBr(done);
  b_.SetInsertPoint(parts);
  for (std::size_t g = index; g <= last; ++g)
    if (!is_host(g)) LowerArray(g);  // the last writes into `out`, already allocated
  b_.CreateBr(done);
  b_.SetInsertPoint(done);
  return last;
}

// ---- Array kernels (codegen/array.h) ----

// The plan's buffer for value `id`, which a kernel writes whole (docs/graph.md, "Buffers"): the
// memory of the value it held before, which is dead by now, and no zero fill.
const HTensor& Lowering::Buffer(graph::NodeId id) {
  const graph::Node& n = g_.Get(id);
  HTensor t;
  t.dtype = n.dtype;
  for (const Dim& d : n.shape) t.dims.push_back(DimValue(d, n.span));
  t.handle = Out(n.dtype, t.dims, Reuse(id), false);
  values_[id.index] = std::move(t);
  return *values_[id.index];
}

const HTensor& Lowering::StoredBuffer(const graph::StoredOut& stored) {
  const graph::Node& view = g_.Get(stored.view);
  const graph::Node& root = g_.Get(stored.root);
  HTensor t;
  t.dtype = view.dtype;
  for (const Dim& d : view.shape) t.dims.push_back(DimValue(d, view.span));
  t.handle = Out(view.dtype, t.dims, Reuse(stored.root), false);
  values_[stored.view.index] = t;
  HTensor r = t;
  r.dims.clear();
  for (const Dim& d : root.shape) r.dims.push_back(DimValue(d, root.span));
  values_[stored.root.index] = std::move(r);
  return *values_[stored.root.index];
}

llvm::Value* Lowering::Reuse(graph::NodeId id) {
  llvm::Value* reuse = llvm::ConstantPointerNull::get(b_.getPtrTy());
  if (std::int64_t b = plan_.buffer_of[id.index]; b >= 0) {
    const std::vector<graph::NodeId>& holds = plan_.buffers[static_cast<std::size_t>(b)].holds;
    for (std::size_t h = 1; h < holds.size(); ++h)
      if (holds[h] == id && values_[holds[h - 1].index]) reuse = values_[holds[h - 1].index]->handle;
  }
  return reuse;
}

void Lowering::LowerArray(std::size_t index) {
  const graph::Group& group = plan_.groups[index];
  const graph::Node& root = g_.Get(group.nodes.back());
  if (!HasArrayKernel(g_, plan_, index))
    Refuse(DiagnosticKind::HostArrayTier, root.span,
           "a " + std::string(graph::Spelling(group.kind)) + " kernel (`" + std::string(graph::Spelling(root.kind)) +
               "`)");
  auto array = EmitArrayKernel(g_, plan_, index, options_.target, sources_);
  if (!array) Refuse(DiagnosticKind::HostArrayTier, root.span, array.error());
  std::vector<llvm::Value*> tensors;
  for (std::size_t i = 0; i < array->tensors.size(); ++i) {
    graph::NodeId id = array->tensors[i];
    if (i < array->inputs) {
      tensors.push_back(TensorOf(id).handle);
      continue;
    }
    if (values_[id.index]) {  // allocated by the caller (LowerStdlibGemm's fallback)
      tensors.push_back(values_[id.index]->handle);
      continue;
    }
    if (group.stored && group.stored->root == id) {  // stored through a layout: the view's tensor
      tensors.push_back(StoredBuffer(*group.stored).handle);
      continue;
    }
    tensors.push_back(Buffer(id).handle);
  }
  std::vector<llvm::Value*> sizes;
  for (SizeVarId v : array->sizes) sizes.push_back(Size(v, root.span));
  std::vector<llvm::Value*> grid;
  for (const Dim& d : array->grid) grid.push_back(DimValue(d, root.span));
  while (grid.size() < 3) grid.push_back(I64(1));
  llvm::GlobalVariable* descriptor = Descriptor("weft.array." + std::to_string(out_.arrays.size()));
  array_descriptors_.push_back(descriptor);
  out_.arrays.push_back(ArrayUse{"k" + std::to_string(index), std::move(*array)});
  if (options_.array_kernel) options_.array_kernel(out_.arrays.back());
  b_.CreateCall(Runtime("weft_program_launch", b_.getVoidTy(), {Ptr(), Ptr(), Ptr(), Ptr(), Ptr()}),
                {descriptor, Array(b_.getInt64Ty(), grid), Array(Ptr(), tensors), Array(b_.getInt64Ty(), sizes),
                 Array(Ptr(), {})});
}

void Lowering::LowerMain() {
  llvm::StructType::create(
      ctx_,
      {Ptr(), Ptr(), Ptr(), b_.getInt64Ty(), Ptr(), b_.getInt64Ty(), b_.getInt32Ty(), b_.getInt32Ty(), b_.getInt32Ty(),
       b_.getInt32Ty(), b_.getInt32Ty(), Ptr(), b_.getInt32Ty(), Ptr(), Ptr(), b_.getInt32Ty()},
      "weft_program_kernel");
  llvm::StructType::create(ctx_, {b_.getInt32Ty(), b_.getInt32Ty(), b_.getInt32Ty(), b_.getInt32Ty(), b_.getInt32Ty()},
                           "weft_program_tensor_map");
  // An export of a shared library is `void SYMBOL(void)`: weft_library_call sets up its arguments
  // and takes its results (`load` and `save` of its wrapper, driver/build_command.cpp, docs/python.md), and a failed
  // check unwinds to it as a C++ exception, so the function has unwind tables.
  const bool exported = !options_.export_symbol.empty();
  auto* type = exported ? llvm::FunctionType::get(b_.getVoidTy(), {}, false)
                        : llvm::FunctionType::get(b_.getInt32Ty(), {b_.getInt32Ty(), Ptr()}, false);
  main_ = llvm::Function::Create(type, llvm::Function::ExternalLinkage, exported ? options_.export_symbol : "main", m_);
  if (exported) main_->setUWTableKind(llvm::UWTableKind::Async);
  llvm::BasicBlock* entry = llvm::BasicBlock::Create(ctx_, "entry", main_);
  llvm::BasicBlock* body = llvm::BasicBlock::Create(ctx_, "main", main_);
  b_.SetInsertPoint(body);
  for (std::size_t i = 0; i < plan_.groups.size(); ++i) {
    const graph::Group& group = plan_.groups[i];
    EmitChecks(group.nodes.back().index);
    if (group.copy_for) continue;  // launched by the group that reads the view, where it must
    switch (group.kind) {
      case graph::GroupKind::Host:
        LowerHost(group.nodes.back());
        break;
      case graph::GroupKind::Call:
        LowerCall(group);
        break;
      case graph::GroupKind::Gemm:
        if (!group.alternative.empty()) {
          i = LowerAttentionChoice(i);
        } else if (group.kernel.empty()) {
          LowerRunTimeCopies(group);
          LowerArray(i);
        } else {
          LowerStdlibGemm(i);
        }
        break;
      case graph::GroupKind::Attention:
        LowerStdlibAttention(i);
        break;
      default:
        LowerArray(i);
        break;
    }
  }
  EmitChecks(g_.nodes.size());
  if (exported) {
    b_.CreateRetVoid();
  } else {
    b_.CreateRet(b_.CreateCall(Runtime("weft_program_end", b_.getInt32Ty(), {})));
  }
  const bool uses_gpu = !out_.kernels.empty() || !out_.arrays.empty();
  out_.uses_gpu = uses_gpu;
  // A program without kernels never opens the GPU: its `random` tensors are filled on the host, and
  // it carries no `random` kernels.
  if (!uses_gpu) {
    for (auto& [dtype, descriptor] : random_descriptors_) {
      descriptor->replaceAllUsesWith(llvm::ConstantPointerNull::get(b_.getPtrTy()));
      descriptor->eraseFromParent();
    }
    random_descriptors_.clear();
    out_.randoms.clear();
  }
  // weft_program_start goes first, once it is known whether the program launches kernels. (A
  // library loads its kernels' modules at their first launch.)
  b_.SetInsertPoint(entry);
  if (exported) {
    b_.CreateBr(body);
    return;
  }
  std::string target(synth::Spelling(options_.target));
  b_.CreateCall(Runtime("weft_program_start", b_.getVoidTy(), {b_.getInt32Ty(), Ptr(), Ptr(), b_.getInt32Ty()}),
                {main_->getArg(0), main_->getArg(1), Text(target), I32(uses_gpu ? 1 : 0)});
  if (uses_gpu) {
    // Every module loaded before the program does anything (runtime.h, weft_program_preload).
    std::vector<llvm::Constant*> all(descriptors_.begin(), descriptors_.end());
    all.insert(all.end(), array_descriptors_.begin(), array_descriptors_.end());
    for (auto& [dtype, descriptor] : random_descriptors_) all.push_back(descriptor);
    auto* type = llvm::ArrayType::get(Ptr(), all.size());
    auto* table = new llvm::GlobalVariable(m_, type, true, llvm::GlobalValue::PrivateLinkage,
                                           llvm::ConstantArray::get(type, all), "weft.kernels");
    b_.CreateCall(Runtime("weft_program_preload", b_.getVoidTy(), {Ptr(), b_.getInt32Ty()}),
                  {table, I32(static_cast<std::int64_t>(all.size()))});
  }
  b_.CreateBr(body);
}

std::once_flag host_target_once;

}  // namespace

std::optional<Diagnostic> MainRefused(const core::Def& main) {
  if (main.params.empty()) return std::nullopt;
  return MakeDiagnostic(DiagnosticKind::HostUnsupported, main.span,
                        "a `main` with parameters: `main` is a value (`def main = ...`)");
}

Result<HostModule, std::vector<Diagnostic>> LowerMain(const core::Module& module, const core::VarStore& vars,
                                                      const core::Def& main, graph::Graph graph, graph::Plan plan,
                                                      const SourceManager& sources, const HostOptions& options) {
  HostModule program;
  program.context = std::make_unique<llvm::LLVMContext>();
  program.module = std::make_unique<llvm::Module>("weft_host", *program.context);
  program.module->setTargetTriple(llvm::sys::getDefaultTargetTriple());
  if (std::optional<Diagnostic> refused = MainRefused(main)) return std::vector<Diagnostic>{*refused};
  program.graph = std::make_unique<graph::Graph>(std::move(graph));
  program.plan = std::make_unique<graph::Plan>(std::move(plan));
  try {
    Lowering lowering(module, vars, sources, *program.graph, *program.plan, program, options);
    lowering.LowerMain();
  } catch (const Refusal& refusal) {
    return std::vector<Diagnostic>{refusal.diagnostic};
  } catch (const Refusals& refusals) {
    return refusals.diagnostics;
  }
  return program;
}

namespace {

// A kernel descriptor's initializer (runtime.h's weft_program_kernel): `name` for messages, the
// device code, the launch's shape, and the constant arrays `order` (the entry's sizes) and `maps`.
void SetDescriptor(HostModule& program, llvm::GlobalVariable* descriptor, const std::string& name,
                   const std::string& prefix, const DeviceKernel& device, const std::string& cubin, int tensors,
                   int scalars, const std::vector<llvm::Constant*>& order, const std::vector<llvm::Constant*>& maps) {
  llvm::LLVMContext& ctx = *program.context;
  llvm::Module& m = *program.module;
  auto* i32 = llvm::Type::getInt32Ty(ctx);
  auto* i64 = llvm::Type::getInt64Ty(ctx);
  auto* ptr = llvm::PointerType::get(ctx, 0);
  auto global = [&](llvm::Constant* init, const std::string& global_name, unsigned align = 1) -> llvm::Constant* {
    auto* g = new llvm::GlobalVariable(m, init->getType(), true, llvm::GlobalValue::PrivateLinkage, init, global_name);
    g->setAlignment(llvm::Align(align));
    return g;
  };
  auto text = [&](const std::string& s, const std::string& global_name) {
    return global(llvm::ConstantDataArray::getString(ctx, s, true), global_name);
  };
  llvm::Constant* cubin_data = llvm::ConstantPointerNull::get(ptr);
  if (!cubin.empty()) {
    cubin_data = global(llvm::ConstantDataArray::getString(ctx, cubin, false), prefix + "cubin", 16);
  }
  auto* map_type = llvm::StructType::getTypeByName(ctx, "weft_program_tensor_map");
  llvm::Constant* order_array =
      order.empty()
          ? llvm::ConstantPointerNull::get(ptr)
          : global(llvm::ConstantArray::get(llvm::ArrayType::get(i32, order.size()), order), prefix + "sizes", 4);
  llvm::Constant* map_array =
      maps.empty()
          ? llvm::ConstantPointerNull::get(ptr)
          : global(llvm::ConstantArray::get(llvm::ArrayType::get(map_type, maps.size()), maps), prefix + "maps", 4);
  auto* type = llvm::cast<llvm::StructType>(descriptor->getValueType());
  descriptor->setInitializer(llvm::ConstantStruct::get(
      type, {text(name, prefix + "name"), text(device.entry, prefix + "entry"), cubin_data,
             llvm::ConstantInt::get(i64, cubin.size()), text(device.ptx, prefix + "ptx"),
             llvm::ConstantInt::get(i64, device.ptx.size()),
             llvm::ConstantInt::get(i32, static_cast<std::uint64_t>(device.threads)),
             llvm::ConstantInt::get(i32, static_cast<std::uint64_t>(device.shared_bytes)),
             llvm::ConstantInt::get(i32, static_cast<std::uint64_t>(tensors)),
             llvm::ConstantInt::get(i32, static_cast<std::uint64_t>(scalars)),
             llvm::ConstantInt::get(i32, order.size()), order_array, llvm::ConstantInt::get(i32, maps.size()),
             map_array, llvm::ConstantPointerNull::get(ptr), llvm::ConstantInt::get(i32, device.persistent ? 1 : 0)}));
  descriptor->setAlignment(llvm::Align(8));
}

}  // namespace

void AttachKernel(HostModule& program, std::size_t index, const DeviceKernel& device, const std::string& cubin) {
  llvm::LLVMContext& ctx = *program.context;
  llvm::Module& m = *program.module;
  const KernelUse& use = program.kernels.at(index);
  const tile::Kernel& kernel = use.kernel;
  llvm::GlobalVariable* descriptor = m.getGlobalVariable("weft.kernel." + kernel.name, true);
  if (!descriptor) WEFT_INTERNAL_ERROR("host codegen: no descriptor for `" + kernel.name + "`");
  auto* i32 = llvm::Type::getInt32Ty(ctx);
  // The entry's sizes, as indices into the launch's sizes (the kernel's size_names order).
  std::vector<llvm::Constant*> order;
  for (SizeVarId v : device.sizes) {
    auto it = kernel.size_names.find(v);
    if (it == kernel.size_names.end())
      WEFT_INTERNAL_ERROR("host codegen: a size of the entry the kernel does not name");
    order.push_back(
        llvm::ConstantInt::get(i32, static_cast<std::uint64_t>(std::distance(kernel.size_names.begin(), it))));
  }
  // Tensor maps name a parameter (an index into Kernel::params): the launch's index among tensors.
  auto* map_type = llvm::StructType::getTypeByName(ctx, "weft_program_tensor_map");
  std::vector<llvm::Constant*> maps;
  for (const TensorMapSpec& spec : device.tensor_maps) {
    int tensor = 0;
    for (int p = 0; p < spec.param; ++p)
      tensor += kernel.Get(kernel.params[static_cast<std::size_t>(p)].value).space == tile::Space::Global ? 1 : 0;
    maps.push_back(
        llvm::ConstantStruct::get(map_type, {llvm::ConstantInt::get(i32, static_cast<std::uint64_t>(tensor)),
                                             llvm::ConstantInt::get(i32, static_cast<std::uint64_t>(spec.box_cols)),
                                             llvm::ConstantInt::get(i32, static_cast<std::uint64_t>(spec.box_rows)),
                                             llvm::ConstantInt::get(i32, static_cast<std::uint64_t>(spec.swizzle)),
                                             llvm::ConstantInt::get(i32, static_cast<std::uint64_t>(spec.rank))}));
  }
  int tensors = 0, scalars = 0;
  for (const tile::Param& p : kernel.params)
    (kernel.Get(p.value).space == tile::Space::Global ? tensors : scalars) += 1;
  SetDescriptor(program, descriptor, kernel.name, "weft." + kernel.name + ".", device, cubin, tensors, scalars, order,
                maps);
}

void AttachArrayKernel(HostModule& program, std::size_t index, const std::string& cubin) {
  const ArrayUse& use = program.arrays.at(index);
  const std::string name = "weft.array." + std::to_string(index);
  llvm::GlobalVariable* descriptor = program.module->getGlobalVariable(name, true);
  if (!descriptor) WEFT_INTERNAL_ERROR("host codegen: no descriptor for array kernel " + use.name);
  // Tensors then sizes in the launch's order (array.h's contract): the size order is the identity.
  auto* i32 = llvm::Type::getInt32Ty(*program.context);
  std::vector<llvm::Constant*> order;
  for (std::size_t i = 0; i < use.kernel.sizes.size(); ++i)
    order.push_back(llvm::ConstantInt::get(i32, static_cast<std::uint64_t>(i)));
  SetDescriptor(program, descriptor, use.name, name + ".", use.kernel.device, cubin,
                static_cast<int>(use.kernel.tensors.size()), 0, order, {});
}

void AttachRandomKernel(HostModule& program, Dtype dtype, const DeviceKernel& device, const std::string& cubin) {
  const std::string name = "weft.random." + std::string(Spelling(dtype));
  llvm::GlobalVariable* descriptor = program.module->getGlobalVariable(name, true);
  if (!descriptor) WEFT_INTERNAL_ERROR("host codegen: no descriptor for `random` of " + std::string(Spelling(dtype)));
  // Named after its entry in messages (`kernel `weft_random_f32` failed: ...`); the runtime launches
  // it itself (weft_program_random): one tensor, no sizes or scalars in the descriptor's sense.
  SetDescriptor(program, descriptor, device.entry, name + ".", device, cubin, 1, 0, {}, {});
}

std::string PrintHost(const HostModule& program) {
  std::string text;
  llvm::raw_string_ostream os(text);
  program.module->print(os, nullptr);
  return text;
}

Result<std::monostate, std::string> EmitObject(HostModule& program, const std::string& path) {
  std::call_once(host_target_once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
  llvm::Module& m = *program.module;
  std::string verify;
  llvm::raw_string_ostream verify_os(verify);
  if (llvm::verifyModule(m, &verify_os))
    WEFT_INTERNAL_ERROR("host codegen: the generated host module does not verify: " + verify);
  std::string error;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(m.getTargetTriple(), error);
  if (!target) return "no LLVM target for `" + m.getTargetTriple() + "`: " + error;
  llvm::TargetOptions target_options;
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      m.getTargetTriple(), "x86-64", "", target_options, llvm::Reloc::PIC_, std::nullopt, llvm::CodeGenOptLevel::Less));
  m.setDataLayout(machine->createDataLayout());
  std::error_code ec;
  llvm::raw_fd_ostream out(path, ec, llvm::sys::fs::OF_None);
  if (ec) return "cannot write `" + path + "`: " + ec.message();
  llvm::legacy::PassManager passes;
  if (machine->addPassesToEmitFile(passes, out, nullptr, llvm::CodeGenFileType::ObjectFile))
    return "LLVM cannot write an object file for `" + m.getTargetTriple() + "`";
  passes.run(m);
  out.flush();
  return std::monostate{};
}

HostModule LowerLibraryTable(const std::vector<LibraryExport>& exports, synth::Target target,
                             const std::string& source_path, const std::string& source) {
  HostModule table;
  table.context = std::make_unique<llvm::LLVMContext>();
  table.module = std::make_unique<llvm::Module>("weft_library", *table.context);
  table.module->setTargetTriple(llvm::sys::getDefaultTargetTriple());
  llvm::LLVMContext& ctx = *table.context;
  llvm::Module& m = *table.module;
  auto* i32 = llvm::Type::getInt32Ty(ctx);
  auto* ptr = llvm::PointerType::get(ctx, 0);
  auto constant = [&](llvm::Constant* init, const std::string& name, llvm::GlobalValue::LinkageTypes linkage) {
    return new llvm::GlobalVariable(m, init->getType(), true, linkage, init, name);
  };
  auto text = [&](const std::string& s) -> llvm::Constant* {
    return constant(llvm::ConstantDataArray::getString(ctx, s, true), "weft.text", llvm::GlobalValue::PrivateLinkage);
  };
  auto texts = [&](const std::vector<std::string>& list) -> llvm::Constant* {
    std::vector<llvm::Constant*> items;
    for (const std::string& s : list) items.push_back(text(s));
    if (items.empty()) return llvm::ConstantPointerNull::get(ptr);
    return constant(llvm::ConstantArray::get(llvm::ArrayType::get(ptr, items.size()), items), "weft.texts",
                    llvm::GlobalValue::PrivateLinkage);
  };
  auto ints = [&](const std::vector<int>& list) -> llvm::Constant* {
    std::vector<llvm::Constant*> items;
    for (int v : list) items.push_back(llvm::ConstantInt::get(i32, static_cast<std::uint64_t>(v)));
    if (items.empty()) return llvm::ConstantPointerNull::get(ptr);
    return constant(llvm::ConstantArray::get(llvm::ArrayType::get(i32, items.size()), items), "weft.ints",
                    llvm::GlobalValue::PrivateLinkage);
  };
  auto dtypes = [&](const std::vector<Dtype>& list) {
    std::vector<int> values;
    for (Dtype d : list) values.push_back(static_cast<int>(d));
    return ints(values);
  };
  // weft/library.h's weft_library_export, field by field.
  auto* entry_type = llvm::StructType::create(ctx, {ptr, ptr, ptr, i32, i32, ptr, ptr, ptr, ptr, i32, ptr, ptr},
                                              "weft_library_export");
  auto* body_type = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {}, false);
  const std::string target_name(synth::Spelling(target));
  std::vector<llvm::Constant*> entries;
  for (const LibraryExport& e : exports) {
    llvm::Function* body = llvm::Function::Create(body_type, llvm::Function::ExternalLinkage, e.symbol, m);
    entries.push_back(llvm::ConstantStruct::get(
        entry_type, {text(e.name), text(e.signature), text(target_name),
                     llvm::ConstantInt::get(i32, e.uses_gpu ? 1 : 0), llvm::ConstantInt::get(i32, e.param_names.size()),
                     texts(e.param_names), dtypes(e.param_dtypes), ints(e.param_ranks), texts(e.param_types),
                     llvm::ConstantInt::get(i32, e.result_dtypes.size()), dtypes(e.result_dtypes), body}));
  }
  auto* array_type = llvm::ArrayType::get(entry_type, entries.size());
  constant(llvm::ConstantArray::get(array_type, entries), "weft_library_exports", llvm::GlobalValue::ExternalLinkage);
  constant(llvm::ConstantInt::get(i32, entries.size()), "weft_library_export_count",
           llvm::GlobalValue::ExternalLinkage);
  constant(text(source_path), "weft_library_source_path", llvm::GlobalValue::ExternalLinkage);
  constant(text(source), "weft_library_source", llvm::GlobalValue::ExternalLinkage);
  return table;
}

namespace {

std::string ShellQuote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs `command`; on failure one line: "`cc` failed to link `output`: its messages".
Result<std::monostate, std::string> RunLinker(const std::string& cc, const std::string& command,
                                              const std::string& output) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return "cannot run `" + cc + "`";
  std::string messages;
  char buffer[512];
  while (std::fgets(buffer, sizeof buffer, pipe)) messages += buffer;
  int status = pclose(pipe);
  if (status != 0) {
    std::string line;
    for (char c : messages) line += c == '\n' ? ' ' : c;
    while (!line.empty() && line.back() == ' ') line.pop_back();
    return "`" + cc + "` failed to link `" + output + "`" + (line.empty() ? "" : ": " + line);
  }
  return std::monostate{};
}

}  // namespace

Result<std::monostate, std::string> LinkShared(const std::string& cc, const std::vector<std::string>& objects,
                                               const std::string& runtime, const std::string& output,
                                               const std::string& version_script) {
  std::string command = cc + " -shared -o " + ShellQuote(output);
  for (const std::string& object : objects) command += " " + ShellQuote(object);
  command += " " + ShellQuote(runtime) + " -Wl,--version-script=" + ShellQuote(version_script) +
             " -static-libgcc -Wl,-Bstatic -lstdc++ -Wl,-Bdynamic -lm -ldl -lpthread";
  return RunLinker(cc, command, output);
}

Result<std::monostate, std::string> Link(const std::string& cc, const std::string& object, const std::string& runtime,
                                         const std::string& output) {
  // libstdc++ and libgcc statically (the runtime is C++), libc, libm and libdl dynamically: the
  // executable needs only libc and, to run kernels, the NVIDIA driver it loads with dlopen.
  std::string command = cc + " -o " + ShellQuote(output) + " " + ShellQuote(object) + " " + ShellQuote(runtime) +
                        " -static-libgcc -Wl,-Bstatic -lstdc++ -Wl,-Bdynamic -lm -ldl -lpthread";
  return RunLinker(cc, command, output);
}

}  // namespace weft::codegen
