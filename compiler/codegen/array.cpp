// Array kernels (array.h): a fused group of the array tier written straight to LLVM IR for
// nvptx64, then PTX through nvptx.h. docs/graph.md ("How a group becomes a kernel") describes the
// kernels; in short:
//
// 1. Parameters: the group's tensors (inputs read through their views, then outputs), then the
//    size variables every dim of the group mentions (Collect, here).
// 2. One evaluator (Emit, array_eval.cpp) computes any node of the group at a coordinate: a tensor input is a
//    load, a view maps the coordinate back to its source, a map broadcasts it to its operands,
//    rank-0 host values are recomputed from the sizes. Each value is computed at most once per
//    coordinate (a cache scoped to the control flow that dominates its uses).
// 3. The kernel of each group kind drives the evaluator: elementwise kernels at every output
//    element (a 16-byte vector path and a scalar path; array_elementwise.cpp), row kernels once
//    per reduction pass and once for the outputs, scans per chunk of a row (array_rows.cpp),
//    products per output element of a tile (array_product.cpp).
//
// Values are kept in their dtype's LLVM type (f16 `half`, bf16 `bfloat`, bool `i1`, integers
// `iN`, i4/u4 `i4`; f8 as its bits, an `i8`: f8.h) and every operation converts to its compute type
// (f32, f64, i64 or i1), computes, and rounds back once: the interpreter's numerics
// (docs/numerics.md). i4 and u4 are packed two to a byte in memory, so only a kernel whose threads
// write whole bytes (elementwise: elements in pairs, or vectors of an even width) stores them.
// The conversions are in array_ir.cpp; the emitter's class, shared by these files, in
// array_emitter.h.
#include "codegen/array.h"

#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include "base/stack.h"
#include "codegen/array_emitter.h"
#include "codegen/libdevice.h"
#include "codegen/nvptx.h"

namespace weft::codegen::array_emit {

ArrayKernel ArrayEmitter::Emit() {
  for (NodeId id : group_.nodes) in_group_.insert(id.index);
  for (const graph::Group& group : plan_.groups)
    if (group.stored) stored_views_.insert(group.stored->view.index);
  for (NodeId id : group_.nodes) Collect(id);
  // A group that stores its output through a layout: its dims are the kernel's sizes too.
  if (group_.stored) {
    CollectDim(group_.stored->layout.offset);
    for (const core::StridedAxis& axis : group_.stored->layout.axes)
      for (const core::StridedMode& mode : axis.modes) {
        CollectDim(mode.extent);
        CollectDim(mode.stride);
      }
  }
  for (const Dim& d : group_.space) CollectDim(d);
  for (NodeId out : group_.outputs) {
    if (plan_.buffer_of[out.index] < 0) Refuse("the output " + Name(out) + " has no device buffer");
    out_.tensors.push_back(out);
  }
  bool elementwise =
      group_.kind == GroupKind::Elementwise || group_.kind == GroupKind::Gather || group_.kind == GroupKind::Concat;
  for (NodeId out : group_.outputs) {
    if (IsPacked(Get(out).dtype) && !elementwise)
      Refuse("the " + std::string(Spelling(Get(out).dtype)) + " result of a " +
             std::string(graph::Spelling(group_.kind)) +
             " kernel (4-bit values are stored two to a byte, which only elementwise kernels do yet; `cast` it " +
             "to i8 in `main`)");
  }
  out_.inputs = inputs_.size();
  out_.tensors.insert(out_.tensors.begin(), inputs_.begin(), inputs_.end());
  out_.sizes.assign(vars_.begin(), vars_.end());
  DefineEntry();
  switch (group_.kind) {
    case GroupKind::Elementwise:
    case GroupKind::Gather:
    case GroupKind::Concat:
      ElementwiseKernel();
      break;
    case GroupKind::Rows:
      RowKernel();
      break;
    case GroupKind::Scan:
      ScanKernel();
      break;
    case GroupKind::Gemm:
      ProductKernel();
      break;
    default:
      Refuse("a " + std::string(graph::Spelling(group_.kind)) + " group");
  }
  Annotate();
  out_.device.entry = f_->getName().str();
  return out_;
}

std::string ArrayEmitter::Name(NodeId id) const {
  const Node& n = Get(id);
  std::string what = n.fn.empty() ? std::string(graph::Spelling(n.kind)) : n.fn;
  return Quote(what) + " (%" + std::to_string(id.index) + ")";
}

// A value the kernel reads from a buffer: computed elsewhere and held in device memory.
bool ArrayEmitter::IsTensor(NodeId id) const {
  if (StoredView(id)) return true;  // the host holds it as a tensor of the view's shape
  return !InGroup(id) && !Loose(id) && !Get(id).in_body && plan_.buffer_of[id.index] >= 0;
}

// ---- 1. Parameters ----

void ArrayEmitter::CollectDim(const Dim& d) {
  for (core::SizeVarId v : d.Vars()) vars_.insert(v);
}

// The tensors and sizes `id` needs: its dims, and through its operands what it reads.
void ArrayEmitter::Collect(NodeId id) {
  if (!visited_.insert(id.index).second) return;
  const Node& n = Get(id);
  for (const Dim& d : n.shape) CollectDim(d);
  for (const graph::IndexItem& item : n.index) {
    CollectDim(item.lo);
    CollectDim(item.hi);
  }
  if (n.kind == Kind::Size) CollectDim(n.size);
  if (IsTensor(id)) {
    inputs_.push_back(id);
    return;
  }
  if (!InGroup(id) && !Loose(id) && !n.in_body) {
    // A host value with no buffer: a rank-0 literal, size or arithmetic on them.
    bool computable = n.shape.empty() &&
                      (n.kind == Kind::Constant || n.kind == Kind::Size || n.kind == Kind::Map || n.kind == Kind::Cast);
    if (!computable) Refuse("the host value " + Name(id) + ", which a kernel cannot compute");
  }
  for (NodeId a : n.args) Collect(a);
  if (n.combiner) Collect(n.combiner->result);
}

void ArrayEmitter::DefineEntry() {
  std::vector<llvm::Type*> params(out_.tensors.size() + out_.sizes.size(), b_.getInt64Ty());
  auto* type = llvm::FunctionType::get(b_.getVoidTy(), params, false);
  f_ = llvm::Function::Create(type, llvm::Function::ExternalLinkage, "weft_array_" + std::to_string(index_), m_);
  f_->setCallingConv(llvm::CallingConv::PTX_Kernel);
  f_->addFnAttr(llvm::Attribute::NoUnwind);
  entry_ = llvm::BasicBlock::Create(ctx_, "entry", f_);
  b_.SetInsertPoint(entry_);
  for (std::size_t i = 0; i < out_.tensors.size(); ++i) {
    llvm::Argument* arg = f_->getArg(static_cast<unsigned>(i));
    arg->setName("t" + std::to_string(out_.tensors[i].index));
    std::uint32_t node = out_.tensors[i].index;
    if (!pointers_.count(node)) pointers_[node] = b_.CreateIntToPtr(arg, b_.getPtrTy(1));
  }
  for (std::size_t i = 0; i < out_.sizes.size(); ++i) {
    llvm::Argument* arg = f_->getArg(static_cast<unsigned>(out_.tensors.size() + i));
    arg->setName("size" + std::to_string(out_.sizes[i].index));
    sizes_[out_.sizes[i].index] = arg;
  }
  shared_ =
      new llvm::GlobalVariable(m_, llvm::ArrayType::get(b_.getInt8Ty(), 0), false, llvm::GlobalValue::ExternalLinkage,
                               nullptr, "weft_array_shared", nullptr, llvm::GlobalValue::NotThreadLocal, 3);
  shared_->setAlignment(llvm::Align(16));
}

void ArrayEmitter::Annotate() {
  llvm::NamedMDNode* annotations = m_.getOrInsertNamedMetadata("nvvm.annotations");
  auto md = [&](const char* key, std::int64_t value) {
    annotations->addOperand(llvm::MDNode::get(ctx_, {llvm::ValueAsMetadata::get(f_), llvm::MDString::get(ctx_, key),
                                                     llvm::ValueAsMetadata::get(llvm::ConstantInt::get(
                                                         b_.getInt32Ty(), static_cast<std::uint64_t>(value)))}));
  };
  md("kernel", 1);
  md("maxntidx", out_.device.threads);
}

}  // namespace weft::codegen::array_emit

namespace weft::codegen {

using namespace array_emit;

namespace {

bool ArrayNodeKind(Kind k) {
  switch (k) {
    case Kind::Map:
    case Kind::Cast:
    case Kind::Fill:
    case Kind::Iota:
    case Kind::Dequant:
    case Kind::View:
    case Kind::Reduce:
    case Kind::Scan:
    case Kind::MatMul:
    case Kind::Gather:
    case Kind::Concat:
      return true;
    default:
      return false;
  }
}

}  // namespace

bool HasArrayKernel(const graph::Graph& graph, const graph::Plan& plan, std::size_t group) {
  const graph::Group& g = plan.groups[group];
  switch (g.kind) {
    case GroupKind::Elementwise:
    case GroupKind::Rows:
    case GroupKind::Scan:
    case GroupKind::Gather:
    case GroupKind::Concat:
      break;
    case GroupKind::Gemm:  // with a stdlib kernel too: the fallback when its `where` fails at run time
      break;
    default:
      return false;
  }
  for (NodeId id : g.nodes)
    if (!ArrayNodeKind(graph.Get(id).kind)) return false;
  return true;
}

namespace {

Result<ArrayKernel, std::string> EmitOnThisStack(const graph::Graph& graph, const graph::Plan& plan, std::size_t group,
                                                 synth::Target target) {
  llvm::TargetMachine* tm = NvptxMachine(target);
  if (!tm) return std::string("no NVPTX target in this LLVM");
  llvm::LLVMContext ctx;
  llvm::Module module("weft_array_" + std::to_string(group), ctx);
  module.setTargetTriple("nvptx64-nvidia-cuda");
  module.setDataLayout(tm->createDataLayout());
  ArrayKernel out;
  try {
    out = ArrayEmitter(graph, plan, group, ctx, module).Emit();
  } catch (const Unsupported& u) {
    return u.what;
  }
  bool libdevice = false;
  for (const llvm::Function& f : module)
    libdevice = libdevice || (f.isDeclaration() && f.getName().starts_with("__nv_"));
  if (libdevice) {
    if (std::optional<std::string> failed = LinkLibdevice(module)) return *failed;
  }
  out.device.target = target;
  out.device.sizes = out.sizes;
  std::string text;
  llvm::raw_string_ostream verify_out(text);
  if (llvm::verifyModule(module, &verify_out))
    return "the kernel of group " + std::to_string(group) + " is invalid IR: " + text;
  {
    llvm::raw_string_ostream ir(out.device.llvm_ir);
    module.print(ir, nullptr);
  }
  if (!EmitPtx(module, target, out.device.ptx)) return std::string("cannot emit PTX");
  return out;
}

}  // namespace

Result<ArrayKernel, std::string> EmitArrayKernel(const graph::Graph& graph, const graph::Plan& plan, std::size_t group,
                                                 synth::Target target, const SourceManager& sources) {
  (void)sources;
  // The evaluator recurses along chains of operations, which an unrolled `loop` makes long.
  std::optional<Result<ArrayKernel, std::string>> out;
  RunWithDeepStack([&] { out.emplace(EmitOnThisStack(graph, plan, group, target)); });
  return std::move(*out);
}

}  // namespace weft::codegen
