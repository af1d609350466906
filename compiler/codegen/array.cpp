// Array kernels (array.h): a fused group of the array tier written straight to LLVM IR for
// nvptx64, then PTX through nvptx.h. docs/graph.md ("How a group becomes a kernel") describes the
// kernels; in short:
//
// 1. Parameters: the group's tensors (inputs read through their views, then outputs), then the
//    size variables every dim of the group mentions (Collect).
// 2. One evaluator (Emit) computes any node of the group at a coordinate: a tensor input is a
//    load, a view maps the coordinate back to its source, a map broadcasts it to its operands,
//    rank-0 host values are recomputed from the sizes. Each value is computed at most once per
//    coordinate (a cache scoped to the control flow that dominates its uses).
// 3. The kernel of each group kind drives the evaluator: elementwise kernels at every output
//    element (a 16-byte vector path and a scalar path), row kernels once per reduction pass and
//    once for the outputs, scans per chunk of a row, products per output element of a tile.
//
// Values are kept in their dtype's LLVM type (f16 `half`, bf16 `bfloat`, bool `i1`, integers
// `iN`, i4/u4 `i4`; f8 as its bits, an `i8`: f8.h) and every operation converts to its compute type
// (f32, f64, i64 or i1), computes, and rounds back once: the interpreter's numerics
// (docs/numerics.md). i4 and u4 are packed two to a byte in memory, so only a kernel whose threads
// write whole bytes (elementwise: elements in pairs, or vectors of an even width) stores them.
#include "codegen/array.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "base/stack.h"
#include "codegen/dims.h"
#include "codegen/f8.h"
#include "codegen/libdevice.h"
#include "codegen/math.h"
#include "codegen/nvptx.h"

namespace weft::codegen {
namespace {

using core::Dim;
using graph::GroupKind;
using graph::Kind;
using graph::Node;
using graph::NodeId;

constexpr std::int64_t kLooseView = -2;  // fuse.cpp: a view in no group, read through by every reader
constexpr int kThreads = 256;            // elementwise, scan, gather, concat and product blocks
constexpr int kTile = 64;                // a product block's output tile is kTile x kTile
constexpr int kTileK = 16;               // ... and it steps over k by kTileK
constexpr int kUnroll = 4;               // an elementwise thread's vector units in flight
constexpr int kMaxDepth = 100000;        // Emit's recursion, on RunWithDeepStack's stack

// Why a group has no kernel: one line for the driver (E0800).
struct Unsupported {
  std::string what;
};

[[noreturn]] void Refuse(std::string what) {
  throw Unsupported{std::move(what)};
}

bool IsFloat(Dtype d) {
  return d == Dtype::F16 || d == Dtype::BF16 || d == Dtype::F32 || d == Dtype::F64 || d == Dtype::F8E4M3 ||
         d == Dtype::F8E5M2;
}
bool IsSigned(Dtype d) {
  return d == Dtype::I4 || d == Dtype::I8 || d == Dtype::I16 || d == Dtype::I32 || d == Dtype::I64;
}
int Bytes(Dtype d) {
  return (Bits(d) + 7) / 8;
}
bool IsF8(Dtype d) {
  return d == Dtype::F8E4M3 || d == Dtype::F8E5M2;
}
// i4 and u4 are packed two to a byte, element 2k in the low nibble of byte k (runtime/tensor.h).
bool IsPacked(Dtype d) {
  return d == Dtype::I4 || d == Dtype::U4;
}

std::string Quote(std::string_view s) {
  return "`" + std::string(s) + "`";
}

// One coordinate along an axis: `v`, or in an elementwise kernel's vector path the lanes v, v + 1,
// ..., v + W - 1 (only ever the innermost axis of the output, moved by views).
struct Coord {
  llvm::Value* v = nullptr;
  bool lanes = false;
};
using Coords = std::vector<Coord>;
// A value: one llvm value when it is the same in every lane, else one per lane.
using Val = std::vector<llvm::Value*>;

class ArrayEmitter {
 public:
  ArrayEmitter(const graph::Graph& graph, const graph::Plan& plan, std::size_t group, llvm::LLVMContext& ctx,
               llvm::Module& module)
      : g_(graph), plan_(plan), index_(group), group_(plan.groups[group]), ctx_(ctx), m_(module), b_(ctx) {}

  ArrayKernel Emit() {
    for (NodeId id : group_.nodes) in_group_.insert(id.index);
    for (NodeId id : group_.nodes) Collect(id);
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

 private:
  const Node& Get(NodeId id) const { return g_.Get(id); }
  std::string Name(NodeId id) const {
    const Node& n = Get(id);
    std::string what = n.fn.empty() ? std::string(graph::Spelling(n.kind)) : n.fn;
    return Quote(what) + " (%" + std::to_string(id.index) + ")";
  }
  bool InGroup(NodeId id) const { return in_group_.count(id.index) != 0; }
  bool Loose(NodeId id) const { return plan_.group_of[id.index] == kLooseView; }
  // A value the kernel reads from a buffer: computed elsewhere and held in device memory.
  bool IsTensor(NodeId id) const {
    return !InGroup(id) && !Loose(id) && !Get(id).in_body && plan_.buffer_of[id.index] >= 0;
  }

  // ---- 1. Parameters ----

  void CollectDim(const Dim& d) {
    for (core::SizeVarId v : d.Vars()) vars_.insert(v);
  }

  // The tensors and sizes `id` needs: its dims, and through its operands what it reads.
  void Collect(NodeId id) {
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
      bool computable = n.shape.empty() && (n.kind == Kind::Constant || n.kind == Kind::Size || n.kind == Kind::Map ||
                                            n.kind == Kind::Cast);
      if (!computable) Refuse("the host value " + Name(id) + ", which a kernel cannot compute");
    }
    for (NodeId a : n.args) Collect(a);
    if (n.combiner) Collect(n.combiner->result);
  }

  void DefineEntry() {
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

  void Annotate() {
    llvm::NamedMDNode* annotations = m_.getOrInsertNamedMetadata("nvvm.annotations");
    auto md = [&](const char* key, std::int64_t value) {
      annotations->addOperand(llvm::MDNode::get(ctx_, {llvm::ValueAsMetadata::get(f_), llvm::MDString::get(ctx_, key),
                                                       llvm::ValueAsMetadata::get(llvm::ConstantInt::get(
                                                           b_.getInt32Ty(), static_cast<std::uint64_t>(value)))}));
    };
    md("kernel", 1);
    md("maxntidx", out_.device.threads);
  }

  // ---- IR helpers ----

  llvm::Value* I64(std::int64_t v) { return b_.getInt64(static_cast<std::uint64_t>(v)); }
  llvm::Value* Sreg(llvm::Intrinsic::ID id) {
    return b_.CreateZExt(b_.CreateIntrinsic(b_.getInt32Ty(), id, {}), b_.getInt64Ty());
  }
  llvm::Value* Tid() { return Sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x); }
  void Barrier() { b_.CreateIntrinsic(b_.getVoidTy(), llvm::Intrinsic::nvvm_barrier0, {}); }
  llvm::BasicBlock* Block(const char* name) { return llvm::BasicBlock::Create(ctx_, name, f_); }

  // A local variable (promoted to a register by O3's SROA): allocas stay in the entry block.
  llvm::Value* Local(llvm::Type* type, llvm::Value* init) {
    llvm::IRBuilder<> at(entry_, entry_->begin());
    llvm::Value* slot = at.CreateAlloca(type);
    b_.CreateStore(init, slot);
    return slot;
  }

  // i64 arithmetic over the size parameters (dims.h).
  llvm::Value* EmitDim(const Dim& dim) {
    return codegen::EmitDim(b_, dim, [&](core::SizeVarId v) -> llvm::Value* {
      auto it = sizes_.find(v.index);
      if (it == sizes_.end()) Refuse("a dim over a size the kernel was not given");
      return it->second;
    });
  }

  static Dim Product(const std::vector<Dim>& dims, std::size_t begin, std::size_t end) {
    Dim p = Dim::Constant(1);
    for (std::size_t i = begin; i < end; ++i) {
      auto r = core::Mul(p, dims[i]);
      if (!r) Refuse("a shape whose size overflows");
      p = *r;
    }
    return p;
  }
  static Dim CeilDiv(const Dim& a, std::int64_t d) {
    auto r = (a + (d - 1)) / d;
    if (!r) Refuse("a grid whose size overflows");
    return *r;
  }

  // The coordinates of linear index `e` in the row-major `shape`.
  Coords Unravel(llvm::Value* e, const std::vector<Dim>& shape) {
    Coords c(shape.size());
    for (std::size_t i = shape.size(); i-- > 0;) {
      if (i == 0) {
        c[i].v = e;
      } else if (shape[i] == Dim::Constant(1)) {
        c[i].v = I64(0);
      } else {
        llvm::Value* d = EmitDim(shape[i]);
        c[i].v = b_.CreateURem(e, d);
        e = b_.CreateUDiv(e, d);
      }
    }
    return c;
  }
  // The row-major offset of uniform coordinates in `shape`.
  llvm::Value* Linear(const Coords& c, const std::vector<Dim>& shape) {
    llvm::Value* e = I64(0);
    for (std::size_t i = 0; i < shape.size(); ++i) e = b_.CreateAdd(b_.CreateMul(e, EmitDim(shape[i])), c[i].v);
    return e;
  }

  // for (i = start; i < end; i += step) body(i); values made in the body stay in it.
  void Loop(llvm::Value* start, llvm::Value* end, llvm::Value* step, const std::function<void(llvm::Value*)>& body) {
    llvm::BasicBlock* before = b_.GetInsertBlock();
    llvm::BasicBlock* head = Block("loop");
    llvm::BasicBlock* inside = Block("body");
    llvm::BasicBlock* exit = Block("exit");
    b_.CreateBr(head);
    b_.SetInsertPoint(head);
    llvm::PHINode* i = b_.CreatePHI(b_.getInt64Ty(), 2, "i");
    i->addIncoming(start, before);
    b_.CreateCondBr(b_.CreateICmpSLT(i, end), inside, exit);
    b_.SetInsertPoint(inside);
    auto saved = cache_;
    body(i);
    cache_ = saved;
    i->addIncoming(b_.CreateAdd(i, step), b_.GetInsertBlock());
    b_.CreateBr(head);
    b_.SetInsertPoint(exit);
  }
  // The kernel ends here for the threads where `condition` is false (a block past an empty extent).
  void ReturnUnless(llvm::Value* condition) {
    llvm::BasicBlock* live = Block("live");
    llvm::BasicBlock* dead = Block("dead");
    b_.CreateCondBr(condition, live, dead);
    b_.SetInsertPoint(dead);
    b_.CreateRetVoid();
    b_.SetInsertPoint(live);
  }
  // if (condition) then(); values made inside stay inside.
  void If(llvm::Value* condition, const std::function<void()>& then) {
    llvm::BasicBlock* yes = Block("then");
    llvm::BasicBlock* join = Block("join");
    b_.CreateCondBr(condition, yes, join);
    b_.SetInsertPoint(yes);
    auto saved = cache_;
    then();
    cache_ = saved;
    b_.CreateBr(join);
    b_.SetInsertPoint(join);
  }

  // ---- Types and conversions ----

  llvm::Type* Storage(Dtype d) {
    switch (d) {
      case Dtype::Bool:
        return b_.getInt1Ty();
      case Dtype::I4:
      case Dtype::U4:
        return b_.getIntNTy(4);
      case Dtype::F8E4M3:
      case Dtype::F8E5M2:
        return b_.getInt8Ty();  // the bits: LLVM has no f8 types (F8Decode, F8Encode)
      case Dtype::I8:
      case Dtype::U8:
        return b_.getInt8Ty();
      case Dtype::I16:
      case Dtype::U16:
        return b_.getInt16Ty();
      case Dtype::I32:
      case Dtype::U32:
        return b_.getInt32Ty();
      case Dtype::I64:
      case Dtype::U64:
        return b_.getInt64Ty();
      case Dtype::F16:
        return b_.getHalfTy();
      case Dtype::BF16:
        return b_.getBFloatTy();
      case Dtype::F32:
        return b_.getFloatTy();
      case Dtype::F64:
        return b_.getDoubleTy();
      default:
        Refuse(std::string(Spelling(d)) + " tensors in an array kernel");
    }
  }
  // How a dtype is held in memory: bool as one byte, i4/u4 as bytes of two (Load, Store).
  llvm::Type* Memory(Dtype d) { return d == Dtype::Bool || IsPacked(d) ? b_.getInt8Ty() : Storage(d); }
  // What operations on `d` compute in: f32 for floats up to 32 bits, f64, i64 for integers, i1.
  llvm::Type* ComputeType(Dtype d) {
    if (d == Dtype::Bool) return b_.getInt1Ty();
    if (d == Dtype::F64) return b_.getDoubleTy();
    if (IsFloat(d)) return b_.getFloatTy();
    return b_.getInt64Ty();
  }
  llvm::Value* ToCompute(llvm::Value* v, Dtype d) {
    llvm::Type* t = ComputeType(d);
    if (IsF8(d)) return F8Decode(v, d);
    if (v->getType() == t) return v;
    if (IsFloat(d)) return b_.CreateFPExt(v, t);
    return IsSigned(d) ? b_.CreateSExt(v, t) : b_.CreateZExt(v, t);
  }
  // Rounds (floats, to nearest even) or wraps (integers) a compute-type value once to `d`.
  llvm::Value* FromCompute(llvm::Value* v, Dtype d) {
    llvm::Type* t = Storage(d);
    if (IsF8(d)) {
      if (v->getType()->isIntegerTy(1)) v = b_.CreateUIToFP(v, b_.getFloatTy());
      return F8Encode(v, d);
    }
    if (v->getType() == t) return v;
    if (v->getType()->isIntegerTy(1)) return IsFloat(d) ? b_.CreateUIToFP(v, t) : b_.CreateZExt(v, t);
    if (IsFloat(d)) return b_.CreateFPTrunc(v, t);
    return b_.CreateTrunc(v, t);
  }

  // `cast to x` (docs/numerics.md, Casts).
  llvm::Value* Convert(llvm::Value* x, Dtype from, Dtype to) {
    llvm::Type* t = Storage(to);
    if (from == to) return x;
    // f8 through f32, which holds every f8 value exactly; to f8 from f32 or f64, rounding once
    // (an integer goes through f64: exact below 2^53, and anything larger saturates either way).
    if (IsF8(from)) return Convert(F8Decode(x, from), Dtype::F32, to);
    if (IsF8(to)) {
      if (from == Dtype::Bool || !IsFloat(from)) {
        bool is_signed = IsSigned(from);
        x = is_signed ? b_.CreateSIToFP(x, b_.getDoubleTy()) : b_.CreateUIToFP(x, b_.getDoubleTy());
      } else if (from != Dtype::F64 && from != Dtype::F32) {
        x = b_.CreateFPExt(x, b_.getFloatTy());
      }
      return F8Encode(x, to);
    }
    if (from == Dtype::Bool) return IsFloat(to) ? b_.CreateUIToFP(x, t) : b_.CreateZExt(x, t);
    if (to == Dtype::Bool) {
      return IsFloat(from) ? b_.CreateFCmpUNE(x, llvm::ConstantFP::get(x->getType(), 0.0))
                           : b_.CreateICmpNE(x, llvm::ConstantInt::get(x->getType(), 0));
    }
    if (IsFloat(from) && IsFloat(to)) {
      unsigned a = x->getType()->getPrimitiveSizeInBits(), c = t->getPrimitiveSizeInBits();
      if (a == c) return b_.CreateFPTrunc(b_.CreateFPExt(x, b_.getFloatTy()), t);  // f16 <-> bf16
      return a < c ? b_.CreateFPExt(x, t) : b_.CreateFPTrunc(x, t);
    }
    if (IsFloat(from)) {
      // Toward zero, saturating, NaN to 0: cvt.rzi's meaning (the .sat intrinsics).
      if (Bits(from) < 32) x = b_.CreateFPExt(x, b_.getFloatTy());
      auto id = IsSigned(to) ? llvm::Intrinsic::fptosi_sat : llvm::Intrinsic::fptoui_sat;
      return b_.CreateIntrinsic(id, {t, x->getType()}, {x});
    }
    if (IsFloat(to)) return IsSigned(from) ? b_.CreateSIToFP(x, t) : b_.CreateUIToFP(x, t);
    return IsSigned(from) ? b_.CreateSExtOrTrunc(x, t) : b_.CreateZExtOrTrunc(x, t);
  }

  llvm::Value* F8Decode(llvm::Value* bits, Dtype d) { return EmitF8Decode(b_, bits, d); }
  llvm::Value* F8Encode(llvm::Value* x, Dtype d) { return EmitF8Encode(b_, x, d); }

  llvm::Value* Constant(const Node& n) {
    llvm::Type* t = Storage(n.dtype);
    if (n.dtype == Dtype::Bool) return b_.getInt1(n.bits & 1);
    if (IsF8(n.dtype) || IsPacked(n.dtype)) return llvm::ConstantInt::get(t, n.bits);
    if (IsFloat(n.dtype)) {
      const llvm::fltSemantics& sem = t->getFltSemantics();
      return llvm::ConstantFP::get(ctx_, llvm::APFloat(sem, llvm::APInt(static_cast<unsigned>(Bits(n.dtype)), n.bits)));
    }
    return llvm::ConstantInt::get(t, n.bits);
  }

  // ---- 2. The evaluator ----

  // The coordinates of an operand of shape `to` read at `c` in shape `from`: NumPy's broadcasting,
  // aligned on the right, a dim of 1 read at 0.
  Coords Broadcast(const Coords& c, const std::vector<Dim>& from, const std::vector<Dim>& to) {
    if (to.size() > from.size()) Refuse("an operand of higher rank than its result");
    Coords out(to.size());
    for (std::size_t i = 0; i < to.size(); ++i) {
      std::size_t j = i + from.size() - to.size();
      out[i] = to[i] == Dim::Constant(1) ? Coord{I64(0), false} : c[j];
    }
    return out;
  }

  std::size_t Width(const Coords& c) const {
    for (const Coord& x : c)
      if (x.lanes) return width_;
    return 1;
  }
  // Lane k's uniform coordinates.
  Coords LaneCoords(const Coords& c, std::size_t k) {
    Coords out = c;
    for (Coord& x : out) {
      if (x.lanes) x = Coord{k == 0 ? x.v : b_.CreateAdd(x.v, I64(static_cast<std::int64_t>(k))), false};
    }
    return out;
  }
  // A value evaluated lane by lane (where lanes cannot be carried through).
  Val PerLane(const Coords& c, const std::function<llvm::Value*(const Coords&)>& one) {
    std::size_t w = Width(c);
    Val out;
    for (std::size_t k = 0; k < w; ++k) out.push_back(one(LaneCoords(c, k)));
    return out;
  }
  static llvm::Value* LaneOf(const Val& v, std::size_t k) { return v.size() == 1 ? v[0] : v[k]; }

  using Key = std::pair<std::uint32_t, std::vector<std::pair<llvm::Value*, bool>>>;

  // Node `id` at coordinates `c` (one per axis of its shape).
  Val Emit(NodeId id, const Coords& c) {
    Key key{id.index, {}};
    for (const Coord& x : c) key.second.emplace_back(x.v, x.lanes);
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
    // The evaluator recurses once per operand (EmitArrayKernel gives it a large stack): a chain
    // longer than kMaxDepth (an unrolled loop of many iterations fused whole) is refused.
    if (++depth_ > kMaxDepth) Refuse("a chain of more than " + std::to_string(kMaxDepth) + " operations in one kernel");
    Val v = Compute(id, c);
    --depth_;
    cache_[key] = v;
    return v;
  }
  llvm::Value* EmitOne(NodeId id, const Coords& c) {
    Val v = Emit(id, c);
    if (v.size() != 1) Refuse("internal: a lane value where one was expected");
    return v[0];
  }

  Val Compute(NodeId id, const Coords& c) {
    const Node& n = Get(id);
    if (IsTensor(id)) return Load(id, c);
    switch (n.kind) {
      case Kind::Constant:
        return {Constant(n)};
      case Kind::Size:
        return {Convert(EmitDim(n.size), Dtype::I64, n.dtype)};
      case Kind::Param:
        if (n.output >= params_.size() || !params_[n.output]) Refuse("a combiner parameter outside its body");
        return {params_[n.output]};
      case Kind::Map:
        return Map(n, c);
      case Kind::Cast: {
        const Node& x = Get(n.args[0]);
        Val v = Emit(n.args[0], c);
        for (llvm::Value*& lane : v) lane = Convert(lane, x.dtype, n.dtype);
        return v;
      }
      case Kind::Fill: {
        if (n.fn == "zeros") return {FromCompute(llvm::Constant::getNullValue(ComputeType(n.dtype)), n.dtype)};
        if (n.fn == "ones") {
          llvm::Type* t = ComputeType(n.dtype);
          llvm::Value* one = t->isFloatingPointTy() ? llvm::ConstantFP::get(t, 1.0) : llvm::ConstantInt::get(t, 1);
          return {FromCompute(one, n.dtype)};
        }
        const Node& x = Get(n.args[0]);
        Val v = Emit(n.args[0], Broadcast(c, n.shape, x.shape));
        for (llvm::Value*& lane : v) lane = Convert(lane, x.dtype, n.dtype);
        return v;
      }
      case Kind::Iota:
        return PerLane(c, [&](const Coords& at) { return Convert(at[0].v, Dtype::I64, n.dtype); });
      case Kind::Dequant:
        return Dequant(n, c);
      case Kind::View:
        return View(id, c);
      case Kind::Reduce:
        return {Current(id, c, row_coords_, "a reduction's result read at another row")};
      case Kind::Scan:
      case Kind::MatMul:
        return {Current(id, c, current_coords_, "a " + Name(id) + " result read at another element")};
      case Kind::Gather:
        return PerLane(c, [&](const Coords& at) { return Gather(n, at); });
      case Kind::Concat:
        return PerLane(c, [&](const Coords& at) { return Concat(n, at); });
      default:
        Refuse(Name(id) + " in an array kernel");
    }
  }

  // The value a kernel holds for `id` (a reduction's per-row result, the scan or product element
  // being computed): read only at the coordinates it was computed for. An axis of extent 1 has one
  // coordinate, so a reader that broadcasts it (reading at 0, as `x @ w + b` with one row reads
  // the product) reads the element being computed.
  llvm::Value* Current(NodeId id, const Coords& c, const Coords& at, const std::string& what) {
    auto it = current_.find(id.index);
    if (it == current_.end()) Refuse(Name(id) + " read before it is computed");
    if (c.size() != at.size()) Refuse(what);
    const std::vector<Dim>& shape = Get(id).shape;
    for (std::size_t i = 0; i < c.size(); ++i) {
      bool unit = c.size() == shape.size() && shape[i] == Dim::Constant(1);
      if (c[i].lanes || (c[i].v != at[i].v && !unit)) Refuse(what);
    }
    return it->second;
  }

  // A tensor element: one load per lane, or one vector load when the lanes run along its
  // innermost axis (the vector path's condition makes that aligned).
  Val Load(NodeId id, const Coords& c) {
    const Node& n = Get(id);
    llvm::Value* base = pointers_.at(id.index);
    llvm::Type* t = Memory(n.dtype);
    auto finish = [&](llvm::Value* v) {
      return n.dtype == Dtype::Bool ? b_.CreateICmpNE(v, llvm::ConstantInt::get(t, 0)) : v;
    };
    auto invariant = [&](llvm::LoadInst* load) {
      load->setMetadata(llvm::LLVMContext::MD_invariant_load, llvm::MDNode::get(ctx_, {}));
      return load;
    };
    bool vector = !c.empty() && c.back().lanes && !IsPacked(n.dtype);
    for (std::size_t i = 0; i + 1 < c.size(); ++i) vector = vector && !c[i].lanes;
    if (IsPacked(n.dtype)) {
      // Element e is the low (even e) or high nibble of byte e / 2.
      return PerLane(c, [&](const Coords& at) {
        llvm::Value* e = Linear(at, n.shape);
        llvm::Value* byte =
            invariant(b_.CreateAlignedLoad(t, b_.CreateGEP(t, base, b_.CreateLShr(e, 1)), llvm::Align(1)));
        llvm::Value* shift = b_.CreateTrunc(b_.CreateShl(b_.CreateAnd(e, I64(1)), 2), b_.getInt8Ty());
        return b_.CreateTrunc(b_.CreateLShr(byte, shift), Storage(n.dtype));
      });
    }
    if (vector) {
      aligned_.push_back(n.shape.back());
      llvm::Value* offset = Linear(LaneCoords(c, 0), n.shape);
      auto* vt = llvm::FixedVectorType::get(t, static_cast<unsigned>(width_));
      llvm::Value* p = b_.CreateGEP(t, base, offset);
      auto align =
          static_cast<std::uint64_t>(std::min<std::int64_t>(16, static_cast<std::int64_t>(width_) * Bytes(n.dtype)));
      // Through ld.global.nc of 32-bit words: O3 scalarizes a plain vector load read lane by lane
      // and drops its !invariant.load, and the backend's re-vectorized load is then ordered after
      // every store before it.
      auto bytes = static_cast<unsigned>(width_) * static_cast<unsigned>(Bytes(n.dtype));
      llvm::Type* words = bytes >= 8 ? static_cast<llvm::Type*>(llvm::FixedVectorType::get(b_.getInt32Ty(), bytes / 4))
                                     : static_cast<llvm::Type*>(b_.getIntNTy(bytes * 8));
      llvm::Value* raw = b_.CreateIntrinsic(llvm::Intrinsic::nvvm_ldg_global_i, {words, p->getType()},
                                            {p, b_.getInt32(static_cast<std::uint32_t>(align))});
      llvm::Value* whole = b_.CreateBitCast(raw, vt);
      Val out;
      for (std::size_t k = 0; k < width_; ++k) out.push_back(finish(b_.CreateExtractElement(whole, k)));
      return out;
    }
    return PerLane(c, [&](const Coords& at) {
      llvm::Value* p = b_.CreateGEP(t, base, Linear(at, n.shape));
      return finish(invariant(b_.CreateAlignedLoad(t, p, llvm::Align(static_cast<std::uint64_t>(Bytes(n.dtype))))));
    });
  }

  // A view read at `c`: the source's coordinates.
  Val View(NodeId id, const Coords& c) {
    const Node& n = Get(id);
    const Node& src = Get(n.args[0]);
    Coords s;
    if (n.fn == "transpose") {
      s = c;
      std::swap(s[s.size() - 1], s[s.size() - 2]);
    } else if (n.fn == "permute") {
      s.resize(c.size());
      for (std::size_t i = 0; i < c.size(); ++i) s[static_cast<std::size_t>(n.permutation[i])] = c[i];
    } else if (n.fn == "expand") {
      s.assign(c.begin(), c.end() - 1);
    } else if (n.fn == "broadcast") {
      s = Broadcast(c, n.shape, src.shape);
    } else if (n.fn == "reshape") {
      // Linearize in the view's shape, unravel in the source's; an innermost axis the two share
      // keeps its lanes.
      bool keep = !c.empty() && !src.shape.empty() && n.shape.back() == src.shape.back();
      for (std::size_t i = 0; i + 1 < c.size(); ++i) keep = keep && !c[i].lanes;
      if (!keep && Width(c) > 1) return PerLane(c, [&](const Coords& at) { return EmitOne(id, at); });
      if (keep) {
        std::vector<Dim> vs(n.shape.begin(), n.shape.end() - 1), ss(src.shape.begin(), src.shape.end() - 1);
        Coords prefix(c.begin(), c.end() - 1);
        s = Unravel(Linear(prefix, vs), ss);
        s.push_back(c.back());
      } else {
        s = Unravel(Linear(c, n.shape), src.shape);
      }
    } else if (n.fn == "index") {
      std::size_t p = 0;
      for (const graph::IndexItem& item : n.index) {
        switch (item.what) {
          case graph::IndexItem::What::At: {
            NodeId at = n.args[item.at];
            s.push_back(Coord{Convert(EmitOne(at, {}), Get(at).dtype, Dtype::I64), false});
            break;
          }
          case graph::IndexItem::What::Slice: {
            Coord x = c[p++];
            if (item.lo.IsZero()) {
              s.push_back(x);
              break;
            }
            if (x.lanes) {
              auto lo = item.lo.AsConstant();
              if (!lo || *lo % static_cast<std::int64_t>(width_) != 0) aligned_.push_back(item.lo);
            }
            s.push_back(Coord{b_.CreateAdd(x.v, EmitDim(item.lo)), x.lanes});
            break;
          }
          case graph::IndexItem::What::All:
            s.push_back(c[p++]);
            break;
        }
      }
      while (p < c.size()) s.push_back(c[p++]);
    } else {
      Refuse("the view " + Name(id));
    }
    return Emit(n.args[0], s);
  }

  Val Map(const Node& n, const Coords& c) {
    std::vector<Val> x;
    for (NodeId a : n.args) x.push_back(Emit(a, Broadcast(c, n.shape, Get(a).shape)));
    std::size_t w = 1;
    for (const Val& v : x) w = std::max(w, v.size());
    // The operands' dtype: select's is its second operand's (the first is the condition).
    Dtype d = Get(n.args.at(n.fn == "select" ? 1 : 0)).dtype;
    Val out;
    for (std::size_t k = 0; k < w; ++k) {
      std::vector<llvm::Value*> lane;
      for (std::size_t i = 0; i < x.size(); ++i) {
        Dtype di = n.fn == "select" && i == 0 ? Dtype::Bool : d;
        lane.push_back(ToCompute(LaneOf(x[i], k), di));
      }
      out.push_back(FromCompute(Apply(n.fn, d, lane), n.dtype));
    }
    return out;
  }

  // Floor division and modulo of i64 values (unsigned: plain); 0 for a zero divisor.
  llvm::Value* IntDivMod(bool mod, bool is_signed, llvm::Value* a, llvm::Value* b) {
    llvm::Value* zero = I64(0);
    llvm::Value* bz = b_.CreateICmpEQ(b, zero);
    llvm::Value* safe = b_.CreateSelect(bz, I64(1), b);
    if (!is_signed) return b_.CreateSelect(bz, zero, mod ? b_.CreateURem(a, safe) : b_.CreateUDiv(a, safe));
    // min / -1 overflows sdiv: for -1 the quotient is -a (wrapping) and the remainder 0.
    llvm::Value* minus1 = b_.CreateICmpEQ(b, I64(-1));
    safe = b_.CreateSelect(minus1, I64(1), safe);
    llvm::Value* q = b_.CreateSDiv(a, safe);
    llvm::Value* r = b_.CreateSRem(a, safe);
    llvm::Value* adjust = b_.CreateAnd(b_.CreateICmpNE(r, zero),
                                       b_.CreateICmpNE(b_.CreateICmpSLT(r, zero), b_.CreateICmpSLT(safe, zero)));
    q = b_.CreateSelect(adjust, b_.CreateSub(q, I64(1)), q);
    r = b_.CreateSelect(adjust, b_.CreateAdd(r, safe), r);
    llvm::Value* v = mod ? b_.CreateSelect(minus1, zero, r) : b_.CreateSelect(minus1, b_.CreateNeg(a), q);
    return b_.CreateSelect(bz, zero, v);
  }

  llvm::Value* Intrinsic(llvm::Intrinsic::ID id, llvm::Value* x) { return b_.CreateUnaryIntrinsic(id, x); }
  llvm::Value* F(llvm::Type* t, double v) { return llvm::ConstantFP::get(t, v); }

  llvm::Value* Fma(llvm::Value* a, llvm::Value* c, llvm::Value* d) {
    return b_.CreateIntrinsic(llvm::Intrinsic::fma, {a->getType()}, {a, c, d});
  }

  // A call of libdevice's `name` on an f64 (libdevice.h; linked after the kernel is written).
  llvm::Value* Libdevice(const std::string& name, llvm::Value* x) {
    std::string looked;
    if (!FindLibdevice(looked))
      Refuse("f64 `" + name.substr(5) + "` (NVIDIA's libdevice was not found: looked at " + looked +
             "; set WEFT_LIBDEVICE to its path)");
    llvm::FunctionCallee callee =
        m_.getOrInsertFunction(name, llvm::FunctionType::get(b_.getDoubleTy(), {b_.getDoubleTy()}, false));
    return b_.CreateCall(callee, {x});
  }

  // One operation on compute-type operands (ToCompute), in that type.
  llvm::Value* Apply(const std::string& fn, Dtype d, const std::vector<llvm::Value*>& x) {
    bool f = IsFloat(d);
    bool s = IsSigned(d);
    if (x.size() == 2) {
      llvm::Value *a = x[0], *c = x[1];
      if (fn == "+") return f ? b_.CreateFAdd(a, c) : b_.CreateAdd(a, c);
      if (fn == "-") return f ? b_.CreateFSub(a, c) : b_.CreateSub(a, c);
      if (fn == "*") return f ? b_.CreateFMul(a, c) : b_.CreateMul(a, c);
      if (fn == "/") return f ? b_.CreateFDiv(a, c) : IntDivMod(false, s, a, c);
      if (fn == "%") {
        if (!f) return IntDivMod(true, s, a, c);
        // NumPy's remainder: fmod moved into the divisor's sign; a zero takes the divisor's sign.
        llvm::Value* r = b_.CreateFRem(a, c);
        llvm::Value* zero = F(r->getType(), 0.0);
        llvm::Value* move =
            b_.CreateAnd(b_.CreateFCmpONE(r, zero), b_.CreateXor(b_.CreateFCmpOLT(r, zero), b_.CreateFCmpOLT(c, zero)));
        r = b_.CreateSelect(move, b_.CreateFAdd(r, c), r);
        llvm::Value* signed_zero = b_.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, zero, c);
        return b_.CreateSelect(b_.CreateFCmpOEQ(r, zero), signed_zero, r);
      }
      if (fn == "==") return f ? b_.CreateFCmpOEQ(a, c) : b_.CreateICmpEQ(a, c);
      if (fn == "!=") return f ? b_.CreateFCmpUNE(a, c) : b_.CreateICmpNE(a, c);
      if (fn == "<") return f ? b_.CreateFCmpOLT(a, c) : (s ? b_.CreateICmpSLT(a, c) : b_.CreateICmpULT(a, c));
      if (fn == "<=") return f ? b_.CreateFCmpOLE(a, c) : (s ? b_.CreateICmpSLE(a, c) : b_.CreateICmpULE(a, c));
      if (fn == ">") return f ? b_.CreateFCmpOGT(a, c) : (s ? b_.CreateICmpSGT(a, c) : b_.CreateICmpUGT(a, c));
      if (fn == ">=") return f ? b_.CreateFCmpOGE(a, c) : (s ? b_.CreateICmpSGE(a, c) : b_.CreateICmpUGE(a, c));
      if (fn == "&&") return b_.CreateAnd(a, c);
      if (fn == "||") return b_.CreateOr(a, c);
      if (fn == "maximum" || fn == "minimum") return MaxMin(fn == "maximum", d, a, c);
    }
    if (x.size() == 3 && fn == "select") return b_.CreateSelect(x[0], x[1], x[2]);
    if (x.size() == 1) {
      llvm::Value* a = x[0];
      llvm::Type* t = a->getType();
      if (fn == "negate") return f ? b_.CreateFNeg(a) : b_.CreateNeg(a);
      if (fn == "abs")
        return f ? Intrinsic(llvm::Intrinsic::fabs, a)
                 : (s ? b_.CreateBinaryIntrinsic(llvm::Intrinsic::abs, a, b_.getFalse()) : a);
      if (f && fn == "sqrt") return Intrinsic(llvm::Intrinsic::sqrt, a);
      if (f && fn == "rsqrt") return b_.CreateFDiv(F(t, 1.0), Intrinsic(llvm::Intrinsic::sqrt, a));
      if (d == Dtype::F64) {
        // libdevice's functions (within 2 ulps of the C library's, which the interpreter calls).
        if (fn == "exp" || fn == "log" || fn == "sin" || fn == "cos" || fn == "tanh") return Libdevice("__nv_" + fn, a);
        if (fn == "sigmoid")
          return b_.CreateFDiv(F(t, 1.0), b_.CreateFAdd(F(t, 1.0), Libdevice("__nv_exp", b_.CreateFNeg(a))));
      }
      // f32 (and bf16/f16, computed in f32): codegen/math.h, shared with the tile kernels.
      if (f && d != Dtype::F64 && math::HasUnary(fn)) return math::Unary(b_, fn, a);
    }
    Refuse(Quote(fn) + " on " + std::string(Spelling(d)) + " in an array kernel");
  }

  // maximum / minimum: NaN propagates, -0 < +0 (max.NaN); integers by their signedness.
  llvm::Value* MaxMin(bool max, Dtype d, llvm::Value* a, llvm::Value* c) {
    if (IsFloat(d)) return b_.CreateBinaryIntrinsic(max ? llvm::Intrinsic::maximum : llvm::Intrinsic::minimum, a, c);
    if (d == Dtype::Bool) return max ? b_.CreateOr(a, c) : b_.CreateAnd(a, c);
    bool s = IsSigned(d);
    auto id =
        max ? (s ? llvm::Intrinsic::smax : llvm::Intrinsic::umax) : (s ? llvm::Intrinsic::smin : llvm::Intrinsic::umin);
    return b_.CreateBinaryIntrinsic(id, a, c);
  }

  // dequant [g] q s: f32(q[..., k]) * f32(s[..., k / g]) (f64 for an f64 s), rounded once to s's type.
  Val Dequant(const Node& n, const Coords& c) {
    const Node& q = Get(n.args[0]);
    const Node& s = Get(n.args[1]);
    Dtype wide = s.dtype == Dtype::F64 ? Dtype::F64 : Dtype::F32;
    return PerLane(c, [&](const Coords& at) {
      Coords sc = at;
      sc.back().v = b_.CreateSDiv(at.back().v, I64(n.group));
      llvm::Value* qv = Convert(EmitOne(n.args[0], at), q.dtype, wide);
      llvm::Value* sv = Convert(EmitOne(n.args[1], sc), s.dtype, wide);
      return Convert(b_.CreateFMul(qv, sv), wide, n.dtype);
    });
  }

  // gather x i: out[r, ..] = x[i[r], ..]. An index out of [0, rows) is clamped into it (the
  // interpreter reports it as an error; a kernel cannot, and must not read outside x).
  llvm::Value* Gather(const Node& n, const Coords& c) {
    NodeId x = n.args[0], idx = n.args[1];
    llvm::Value* i = Convert(EmitOne(idx, {c[0]}), Get(idx).dtype, Dtype::I64);
    llvm::Value* last = b_.CreateSub(EmitDim(Get(x).shape[0]), I64(1));
    i = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, i, last);
    i = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, i, I64(0));
    Coords xc = c;
    xc[0] = Coord{i, false};
    return EmitOne(x, xc);
  }

  // concat a b along the last axis: a's element below a's extent, else b's.
  llvm::Value* Concat(const Node& n, const Coords& c) {
    NodeId a = n.args[0], bn = n.args[1];
    llvm::Value* extent = EmitDim(Get(a).shape.back());
    llvm::Value* slot = Local(Storage(n.dtype), llvm::UndefValue::get(Storage(n.dtype)));
    llvm::BasicBlock* first = Block("concat_a");
    llvm::BasicBlock* second = Block("concat_b");
    llvm::BasicBlock* join = Block("concat_join");
    b_.CreateCondBr(b_.CreateICmpSLT(c.back().v, extent), first, second);
    auto saved = cache_;
    b_.SetInsertPoint(first);
    b_.CreateStore(EmitOne(a, c), slot);
    b_.CreateBr(join);
    cache_ = saved;
    b_.SetInsertPoint(second);
    Coords bc = c;
    bc.back().v = b_.CreateSub(c.back().v, extent);
    b_.CreateStore(EmitOne(bn, bc), slot);
    b_.CreateBr(join);
    cache_ = saved;
    b_.SetInsertPoint(join);
    return b_.CreateLoad(Storage(n.dtype), slot);
  }

  // A combiner's body at (acc, element), both of the combined dtype.
  llvm::Value* Combine(const graph::Combiner& combiner, llvm::Value* acc, llvm::Value* element) {
    auto saved = cache_;
    auto saved_params = params_;
    params_.assign(2, nullptr);
    params_[Get(combiner.acc).output] = acc;
    params_[Get(combiner.element).output] = element;
    llvm::Value* v = EmitOne(combiner.result, {});
    params_ = saved_params;
    cache_ = saved;
    return v;
  }

  // Stores `v` (of `d`) at element `offset` of buffer `id`.
  void Store(NodeId id, llvm::Value* offset, llvm::Value* v) {
    Dtype d = Get(id).dtype;
    if (IsPacked(d)) Refuse("internal: a 4-bit element stored alone");
    if (d == Dtype::Bool) v = b_.CreateZExt(v, b_.getInt8Ty());
    llvm::Type* t = Memory(d);
    b_.CreateAlignedStore(v, b_.CreateGEP(t, pointers_.at(id.index), offset),
                          llvm::Align(static_cast<std::uint64_t>(Bytes(d))));
  }

  // The byte of two 4-bit elements: `low` in the low nibble.
  llvm::Value* PackByte(llvm::Value* low, llvm::Value* high) {
    return b_.CreateOr(b_.CreateZExt(low, b_.getInt8Ty()), b_.CreateShl(b_.CreateZExt(high, b_.getInt8Ty()), 4));
  }

  // Stores the `width` lanes of `v` (of `id`'s dtype) at element `offset` of buffer `id`: one
  // vector store (the offset a multiple of the width), or a plain store for one lane.
  void StoreUnit(NodeId id, llvm::Value* offset, const Val& v, std::size_t width) {
    if (width == 1) {
      Store(id, offset, v[0]);
      return;
    }
    Dtype d = Get(id).dtype;
    llvm::Type* t = Memory(d);
    auto w = static_cast<std::int64_t>(width);
    if (IsPacked(d)) {
      // W / 2 whole bytes (W is even, and the offset a multiple of W).
      llvm::Value* bytes = llvm::UndefValue::get(llvm::FixedVectorType::get(t, static_cast<unsigned>(w / 2)));
      for (std::size_t k = 0; k < width / 2; ++k)
        bytes = b_.CreateInsertElement(bytes, PackByte(LaneOf(v, 2 * k), LaneOf(v, 2 * k + 1)), k);
      b_.CreateAlignedStore(bytes, b_.CreateGEP(t, pointers_.at(id.index), b_.CreateLShr(offset, 1)),
                            llvm::Align(static_cast<std::uint64_t>(std::min<std::int64_t>(16, w / 2))));
      return;
    }
    llvm::Value* packed = llvm::UndefValue::get(llvm::FixedVectorType::get(t, static_cast<unsigned>(w)));
    for (std::size_t k = 0; k < width; ++k) {
      llvm::Value* lane = LaneOf(v, k);
      if (d == Dtype::Bool) lane = b_.CreateZExt(lane, t);
      packed = b_.CreateInsertElement(packed, lane, k);
    }
    auto align = static_cast<std::uint64_t>(std::min<std::int64_t>(16, w * Bytes(d)));
    b_.CreateAlignedStore(packed, b_.CreateGEP(t, pointers_.at(id.index), offset), llvm::Align(align));
  }

  // ---- 3. Kernels ----

  // The scalar path of a kernel with a 4-bit output: a thread computes elements 2p and 2p + 1 (when
  // there is one), so that it writes their byte whole; past an odd count the high nibble is 0.
  void ScalarPairs(llvm::Value* count, llvm::Value* first, llvm::Value* stride) {
    const std::vector<Dim>& space = group_.space;
    llvm::Type* byte = b_.getInt8Ty();
    llvm::Value* pairs = b_.CreateUDiv(b_.CreateAdd(count, I64(1)), I64(2));
    Loop(first, pairs, stride, [&](llvm::Value* p) {
      llvm::Value* e = b_.CreateMul(p, I64(2));
      std::vector<llvm::Value*> slots;  // per 4-bit output, its byte so far
      Coords c = Unravel(e, space);
      for (NodeId out : group_.outputs) {
        llvm::Value* v = EmitOne(out, c);
        if (IsPacked(Get(out).dtype))
          slots.push_back(Local(byte, b_.CreateZExt(v, byte)));
        else
          Store(out, e, v);
      }
      llvm::Value* next = b_.CreateAdd(e, I64(1));
      If(b_.CreateICmpULT(next, count), [&] {
        Coords c1 = Unravel(next, space);
        std::size_t k = 0;
        for (NodeId out : group_.outputs) {
          llvm::Value* v = EmitOne(out, c1);
          if (!IsPacked(Get(out).dtype)) {
            Store(out, next, v);
            continue;
          }
          llvm::Value* slot = slots[k++];
          b_.CreateStore(PackByte(b_.CreateTrunc(b_.CreateLoad(byte, slot), v->getType()), v), slot);
        }
      });
      std::size_t k = 0;
      for (NodeId out : group_.outputs) {
        if (!IsPacked(Get(out).dtype)) continue;
        b_.CreateAlignedStore(b_.CreateLoad(byte, slots[k++]), b_.CreateGEP(byte, pointers_.at(out.index), p),
                              llvm::Align(1));
      }
    });
  }

  // Elementwise, gather and concat: a grid-stride loop over the output's elements. When every
  // tensor is read along its innermost axis in step with the output, W consecutive elements are a
  // thread's unit: 16-byte vector loads and stores. Whether that holds (extents and slice starts
  // multiples of W) is known only at run time, so the kernel branches between the vector path
  // and a scalar path that does every element one at a time.
  void ElementwiseKernel() {
    out_.device.threads = kThreads;
    const std::vector<Dim>& space = group_.space;
    for (NodeId out : group_.outputs)
      if (!(Get(out).shape == space)) Refuse("an output of another shape than its kernel's");
    Dim total = Product(space, 0, space.size());
    int widest = 1;
    for (NodeId t : out_.tensors) widest = std::max(widest, Bytes(Get(t).dtype));
    std::size_t width = static_cast<std::size_t>(std::min(8, 16 / widest));
    bool vectorize = group_.kind == GroupKind::Elementwise && !space.empty() && width > 1;
    // A block per chunk of the vector path (the scalar path strides over the same grid).
    out_.grid = {CeilDiv(total, kThreads * (vectorize ? static_cast<std::int64_t>(width) * kUnroll : 4))};

    llvm::Value* count = EmitDim(total);
    llvm::Value* threads = I64(kThreads);
    llvm::Value* first = b_.CreateAdd(b_.CreateMul(Sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x), threads), Tid());
    llvm::Value* stride = b_.CreateMul(Sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x), threads);
    llvm::BasicBlock* decide = b_.GetInsertBlock();
    llvm::BasicBlock* scalar = Block("scalar");
    llvm::BasicBlock* done = Block("done");

    // Scalar path: element e at a time.
    b_.SetInsertPoint(scalar);
    width_ = 1;
    bool packed = false;
    for (NodeId out : group_.outputs) packed = packed || IsPacked(Get(out).dtype);
    if (packed) {
      ScalarPairs(count, first, stride);
    } else {
      Loop(first, count, stride, [&](llvm::Value* e) {
        Coords c = Unravel(e, space);
        for (NodeId out : group_.outputs) Store(out, e, EmitOne(out, c));
      });
    }
    b_.CreateBr(done);

    if (vectorize) {
      llvm::BasicBlock* vector = Block("vector");
      b_.SetInsertPoint(vector);
      width_ = width;
      aligned_ = {space.back()};
      auto w = static_cast<std::int64_t>(width);
      llvm::Value* units = b_.CreateUDiv(count, I64(w));
      // Chunks of kUnroll x T units, a thread's units T apart (coalesced): all their loads are
      // issued before any store, kUnroll 16-byte vectors in flight per tensor and thread; then
      // the units past the last whole chunk one at a time.
      auto body = [&](const std::vector<llvm::Value*>& us) {
        std::vector<llvm::Value*> es;
        std::vector<std::vector<Val>> values;
        for (llvm::Value* u : us) {
          llvm::Value* e = b_.CreateMul(u, I64(w));
          Coords c = Unravel(e, space);
          c.back().lanes = true;
          std::vector<Val> per;
          for (NodeId out : group_.outputs) per.push_back(Emit(out, c));
          es.push_back(e);
          values.push_back(std::move(per));
        }
        for (std::size_t k = 0; k < us.size(); ++k)
          for (std::size_t o = 0; o < group_.outputs.size(); ++o)
            StoreUnit(group_.outputs[o], es[k], values[k][o], width);
      };
      llvm::Value* chunk = I64(kThreads * kUnroll);
      llvm::Value* whole = b_.CreateMul(b_.CreateUDiv(units, chunk), chunk);
      llvm::Value* block = Sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x);
      llvm::Value* grid = Sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x);
      Loop(b_.CreateAdd(b_.CreateMul(block, chunk), Tid()), whole, b_.CreateMul(grid, chunk), [&](llvm::Value* u) {
        std::vector<llvm::Value*> us;
        for (std::int64_t k = 0; k < kUnroll; ++k) us.push_back(k == 0 ? u : b_.CreateAdd(u, I64(k * kThreads)));
        body(us);
      });
      Loop(b_.CreateAdd(whole, first), units, stride, [&](llvm::Value* u) { body({u}); });
      b_.CreateBr(done);
      // The vector path's condition: every extent and slice start it relied on is a multiple of W.
      b_.SetInsertPoint(decide);
      llvm::Value* ok = b_.getTrue();
      for (const Dim& d : aligned_) ok = b_.CreateAnd(ok, b_.CreateICmpEQ(b_.CreateSRem(EmitDim(d), I64(w)), I64(0)));
      b_.CreateCondBr(ok, vector, scalar);
    } else {
      b_.SetInsertPoint(decide);
      b_.CreateBr(scalar);
    }
    b_.SetInsertPoint(done);
    b_.CreateRetVoid();
  }

  // The threads of a row or scan block: the row's length rounded up to a power of two when it is
  // a constant, between one warp and 256.
  int RowThreads() const {
    auto n = group_.space.empty() ? std::optional<std::int64_t>(1) : group_.space.back().AsConstant();
    if (!n) return kThreads;
    int t = 32;
    while (t < kThreads && t < *n) t *= 2;
    return t;
  }

  // This block's row: its coordinates over space[:-1] (one block per row); false past the last.
  void BeginRow() {
    const std::vector<Dim>& space = group_.space;
    if (space.empty()) Refuse("a row kernel over a rank-0 space");
    std::vector<Dim> rows(space.begin(), space.end() - 1);
    out_.grid = {Product(rows, 0, rows.size())};
    row_ = Sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x);
    ReturnUnless(b_.CreateICmpULT(row_, EmitDim(out_.grid[0])));  // no rows: the one block launched
    row_coords_ = Unravel(row_, rows);
    n_ = EmitDim(space.back());
    tid_ = Tid();
  }

  llvm::Value* SharedAt(llvm::Value* byte_offset) {
    return b_.CreateGEP(b_.getInt8Ty(), shared_, b_.CreateTrunc(byte_offset, b_.getInt32Ty()));
  }

  // A butterfly shuffle of a compute-type value across the warp (32-bit pieces).
  llvm::Value* Shuffle(llvm::Value* v, int offset) {
    llvm::Type* t = v->getType();
    auto shfl = [&](llvm::Value* x) {
      return b_.CreateIntrinsic(
          b_.getInt32Ty(), llvm::Intrinsic::nvvm_shfl_sync_bfly_i32,
          {b_.getInt32(0xffffffffu), x, b_.getInt32(static_cast<std::uint32_t>(offset)), b_.getInt32(0x1f)});
    };
    if (t->isIntegerTy(1)) return b_.CreateTrunc(shfl(b_.CreateZExt(v, b_.getInt32Ty())), t);
    unsigned bits = t->getPrimitiveSizeInBits();
    llvm::Value* i = b_.CreateBitCast(v, b_.getIntNTy(bits));
    if (bits == 32) return b_.CreateBitCast(shfl(i), t);
    llvm::Value* lo = shfl(b_.CreateTrunc(i, b_.getInt32Ty()));
    llvm::Value* hi = shfl(b_.CreateTrunc(b_.CreateLShr(i, 32), b_.getInt32Ty()));
    llvm::Value* whole =
        b_.CreateOr(b_.CreateZExt(lo, b_.getInt64Ty()), b_.CreateShl(b_.CreateZExt(hi, b_.getInt64Ty()), 32));
    return b_.CreateBitCast(whole, t);
  }

  using Pair = std::vector<llvm::Value*>;  // a reduction's partial: its value (and argmax's index)
  using Combiner2 = std::function<Pair(const Pair&, const Pair&)>;

  // Every thread's partial combined, the result in every thread: a butterfly within each warp,
  // then the warps' results through shared memory, combined in warp order by every thread.
  Pair BlockReduce(Pair mine, const Combiner2& combine, int threads) {
    for (int offset = 16; offset >= 1; offset /= 2) {
      Pair other;
      for (llvm::Value* v : mine) other.push_back(Shuffle(v, offset));
      mine = combine(mine, other);
    }
    int warps = threads / 32;
    if (warps == 1) return mine;
    Barrier();  // the previous reduction's readers are done with the slots
    llvm::Value* warp = b_.CreateUDiv(tid_, I64(32));
    If(b_.CreateICmpEQ(b_.CreateURem(tid_, I64(32)), I64(0)), [&] {
      for (std::size_t p = 0; p < mine.size(); ++p)
        b_.CreateStore(mine[p],
                       SharedAt(b_.CreateAdd(b_.CreateMul(warp, I64(16)), I64(8 * static_cast<std::int64_t>(p)))));
    });
    Barrier();
    auto read = [&](int w) {
      Pair out;
      for (std::size_t p = 0; p < mine.size(); ++p)
        out.push_back(b_.CreateLoad(mine[p]->getType(), SharedAt(I64(16 * w + 8 * static_cast<std::int64_t>(p)))));
      return out;
    };
    Pair all = read(0);
    for (int w = 1; w < warps; ++w) all = combine(all, read(w));
    return all;
  }

  // How a row kernel holds its row in registers: `threads` threads, each `slots` units of `width`
  // consecutive elements (unit u = tid + k * threads of the row, k < slots).
  struct RowPlan {
    int threads = 0;
    std::size_t width = 1;
    std::int64_t slots = 0;
  };
  static constexpr std::int64_t kRowRegisters = 32;  // elements a thread holds per value, at most

  // The register plan of a row kernel, when it has one: a constant row length n of at most
  // kRowRegisters elements a thread, and no combiner reduction (thread 0 folds those alone).
  // Units are 16-byte vectors of the widest tensor when n is a multiple of their width, else single
  // elements; threads: a power of two from one warp to 256, about two units each.
  std::optional<RowPlan> RegisterRows() const {
    if (group_.space.empty()) return std::nullopt;
    auto n = group_.space.back().AsConstant();
    if (!n || *n <= 0) return std::nullopt;
    for (NodeId id : group_.nodes)
      if (Get(id).kind == Kind::Reduce && Get(id).combiner) return std::nullopt;
    int widest = 1;
    for (NodeId t : out_.tensors) widest = std::max(widest, Bytes(Get(t).dtype));
    RowPlan p;
    p.width = static_cast<std::size_t>(std::max(1, std::min(8, 16 / widest)));
    if (*n % static_cast<std::int64_t>(p.width) != 0) p.width = 1;
    std::int64_t units = *n / static_cast<std::int64_t>(p.width);
    p.threads = 32;
    while (p.threads < kThreads && 2 * p.threads < units) p.threads *= 2;
    p.slots = (units + p.threads - 1) / p.threads;
    if (p.slots * static_cast<std::int64_t>(p.width) > kRowRegisters) return std::nullopt;
    return p;
  }

  // Row kernels: one block per row of space = [..rows, n]. With a register plan (RegisterRows),
  // each thread loads its units of the row once, and every pass (the reductions in program order,
  // then the outputs) reads those values: the evaluator's cache carries them, as the passes are
  // straight-line code over the same coordinates. The vector loads and stores need the extents and
  // slice starts they rely on to be multiples of the width, checked at run time (like the
  // elementwise kernel's); when they are not, or without a plan, the general path: each reduction
  // is a loop over the row (its operand recomputed from the inputs), then a loop writes the outputs.
  void RowKernel() {
    std::optional<RowPlan> plan = RegisterRows();
    int threads = plan ? plan->threads : RowThreads();
    out_.device.threads = threads;
    out_.device.shared_bytes = threads * 9;  // combiner partials: 8 bytes and a flag per thread
    BeginRow();
    if (plan) {
      llvm::BasicBlock* decide = b_.GetInsertBlock();
      llvm::BasicBlock* registers = Block("row_registers");
      llvm::BasicBlock* general = Block("row_general");
      auto saved = cache_;
      b_.SetInsertPoint(registers);
      aligned_.clear();
      RegisterRowBody(*plan);
      width_ = 1;
      cache_ = saved;
      current_.clear();
      b_.SetInsertPoint(decide);
      llvm::Value* ok = b_.getTrue();
      auto w = static_cast<std::int64_t>(plan->width);
      for (const Dim& d : aligned_) ok = b_.CreateAnd(ok, b_.CreateICmpEQ(b_.CreateSRem(EmitDim(d), I64(w)), I64(0)));
      b_.CreateCondBr(ok, registers, general);
      b_.SetInsertPoint(general);
    }
    GeneralRowBody(threads);
  }

  // The per-row outputs (of shape rows or [..rows, 1]): thread 0 stores them.
  void StoreRowValues(NodeId out) {
    const std::vector<Dim>& space = group_.space;
    std::vector<Dim> rows(space.begin(), space.end() - 1);
    const std::vector<Dim>& shape = Get(out).shape;
    std::vector<Dim> expanded = rows;
    expanded.push_back(Dim::Constant(1));
    if (!(shape == rows) && !(shape == expanded)) Refuse("an output of another shape than its rows");
    If(b_.CreateICmpEQ(tid_, I64(0)), [&] {
      Coords c = row_coords_;
      if (shape.size() > rows.size()) c.push_back(Coord{I64(0), false});
      Store(out, row_, EmitOne(out, c));
    });
  }

  void RegisterRowBody(const RowPlan& p) {
    const std::vector<Dim>& space = group_.space;
    width_ = p.width;
    auto w = static_cast<std::int64_t>(p.width);
    std::int64_t units = *space.back().AsConstant() / w;
    // Each slot's coordinates; a slot past the row's end (the last, when the threads do not divide
    // the units) reads the last unit instead and is masked out of reductions and stores.
    std::vector<Coords> at;
    std::vector<llvm::Value*> valid, first;
    for (std::int64_t k = 0; k < p.slots; ++k) {
      llvm::Value* u = b_.CreateAdd(tid_, I64(k * p.threads));
      llvm::Value* live = nullptr;
      if ((k + 1) * p.threads > units) {
        live = b_.CreateICmpULT(u, I64(units));
        u = b_.CreateSelect(live, u, I64(units - 1));
      }
      llvm::Value* j = w > 1 ? b_.CreateMul(u, I64(w)) : u;
      Coords c = row_coords_;
      c.push_back(Coord{j, w > 1});
      at.push_back(c);
      valid.push_back(live);
      first.push_back(j);
    }
    // The loads of every pass are issued here, before the first reduction's barriers (Hoist).
    llvm::BasicBlock* prologue = b_.GetInsertBlock();
    llvm::BasicBlock* body = Block("row_body");
    b_.CreateBr(body);
    b_.SetInsertPoint(body);
    std::set<llvm::BasicBlock*> before;
    for (llvm::BasicBlock& block : *f_)
      if (&block != prologue && &block != body) before.insert(&block);
    for (NodeId id : group_.nodes) {
      const Node& r = Get(id);
      if (r.kind != Kind::Reduce) continue;
      NodeId arg = r.args[0];
      Dtype d = Get(arg).dtype;
      if (!(Get(arg).shape == space)) Refuse("a reduction over another row than its kernel's");
      Reduction red = BuiltinOf(r, d);
      Pair acc = red.identity;
      for (std::int64_t k = 0; k < p.slots; ++k) {
        auto s = static_cast<std::size_t>(k);
        Val x = Emit(arg, at[s]);
        for (std::size_t l = 0; l < p.width; ++l) {
          Pair e = {ToCompute(LaneOf(x, l), d)};
          if (r.fn == "argmax")
            e.push_back(l == 0 ? first[s] : b_.CreateAdd(first[s], I64(static_cast<std::int64_t>(l))));
          if (valid[s])
            for (std::size_t q = 0; q < e.size(); ++q) e[q] = b_.CreateSelect(valid[s], e[q], red.identity[q]);
          acc = red.combine(acc, e);
        }
      }
      current_[id.index] = FinishReduce(r, d, BlockReduce(acc, red.combine, p.threads));
    }
    for (NodeId out : group_.outputs) {
      if (!(Get(out).shape == space)) {
        StoreRowValues(out);
        continue;
      }
      // Every slot's value first, then the stores: the loads stay ahead of every store.
      std::vector<Val> values;
      for (std::int64_t k = 0; k < p.slots; ++k) values.push_back(Emit(out, at[static_cast<std::size_t>(k)]));
      for (std::int64_t k = 0; k < p.slots; ++k) {
        auto s = static_cast<std::size_t>(k);
        llvm::Value* offset = b_.CreateAdd(b_.CreateMul(row_, n_), first[s]);
        auto store = [&] { StoreUnit(out, offset, values[s], p.width); };
        if (valid[s]) {
          If(valid[s], store);
        } else {
          store();
        }
      }
    }
    b_.CreateRetVoid();
    Hoist(prologue, before);
  }

  // Moves every read of a tensor in the blocks after `prologue` (none of `before`), with the
  // address arithmetic it needs, to the end of `prologue`, when none of it depends on anything
  // there but pure arithmetic (not on a reduction's result): a later pass's loads are then in
  // flight during the reductions instead of after their barriers.
  void Hoist(llvm::BasicBlock* prologue, const std::set<llvm::BasicBlock*>& before) {
    auto is_read = [](llvm::Instruction& i) {
      if (auto* call = llvm::dyn_cast<llvm::CallInst>(&i))
        return call->getIntrinsicID() == llvm::Intrinsic::nvvm_ldg_global_i;
      return llvm::isa<llvm::LoadInst>(i) && i.hasMetadata(llvm::LLVMContext::MD_invariant_load);
    };
    std::map<llvm::Instruction*, bool> movable;
    std::function<bool(llvm::Instruction*)> can = [&](llvm::Instruction* i) -> bool {
      if (auto it = movable.find(i); it != movable.end()) return it->second;
      movable[i] = false;  // (no cycles outside phis, which are never moved)
      llvm::BasicBlock* at = i->getParent();
      if (at == prologue || before.count(at)) return movable[i] = true;  // dominates the prologue's end
      bool pure = !llvm::isa<llvm::PHINode>(i) && !i->isTerminator() && !llvm::isa<llvm::AllocaInst>(i) &&
                  (is_read(*i) || (!i->mayReadOrWriteMemory() && !i->mayHaveSideEffects()));
      if (auto* call = llvm::dyn_cast<llvm::CallBase>(i); call && call->isConvergent()) pure = false;
      if (!pure) return false;
      for (llvm::Value* op : i->operands())
        if (auto* d = llvm::dyn_cast<llvm::Instruction>(op); d && !can(d)) return false;
      return movable[i] = true;
    };
    std::vector<llvm::Instruction*> reads;
    for (llvm::BasicBlock& block : *f_) {
      if (&block == prologue || before.count(&block)) continue;
      for (llvm::Instruction& i : block)
        if (is_read(i) && can(&i)) reads.push_back(&i);
    }
    std::function<void(llvm::Instruction*)> move = [&](llvm::Instruction* i) {
      if (i->getParent() == prologue || before.count(i->getParent())) return;
      for (llvm::Value* op : i->operands())
        if (auto* d = llvm::dyn_cast<llvm::Instruction>(op)) move(d);
      i->moveBefore(prologue->getTerminator());
    };
    for (llvm::Instruction* i : reads) move(i);
  }

  // The general row kernel: a loop over the row per reduction, then one for the outputs.
  void GeneralRowBody(int threads) {
    const std::vector<Dim>& space = group_.space;
    llvm::Value* step = I64(threads);
    auto element = [&](llvm::Value* j) {
      Coords c = row_coords_;
      c.push_back(Coord{j, false});
      return c;
    };
    for (NodeId id : group_.nodes) {
      const Node& r = Get(id);
      if (r.kind != Kind::Reduce) continue;
      NodeId arg = r.args[0];
      Dtype d = Get(arg).dtype;
      if (!(Get(arg).shape == space)) Refuse("a reduction over another row than its kernel's");
      llvm::Value* value = nullptr;
      if (r.combiner) {
        value = CombinerReduce(r, threads, element);
      } else {
        value = BuiltinReduce(r, d, threads, step, element);
      }
      current_[id.index] = value;
    }
    // The outputs: whole rows by the block's threads; per-row values by thread 0.
    for (NodeId out : group_.outputs) {
      if (Get(out).shape == space) {
        Loop(tid_, n_, step,
             [&](llvm::Value* j) { Store(out, b_.CreateAdd(b_.CreateMul(row_, n_), j), EmitOne(out, element(j))); });
      } else {
        StoreRowValues(out);
      }
    }
    b_.CreateRetVoid();
  }

  // A built-in reduction's identity and combination of partials.
  struct Reduction {
    Pair identity;
    Combiner2 combine;
  };
  Reduction BuiltinOf(const Node& r, Dtype d) {
    llvm::Type* ct = ComputeType(d);
    bool f = IsFloat(d);
    const std::string& fn = r.fn;
    if (d == Dtype::Bool) Refuse(Quote(fn) + " of bool");
    Reduction out;
    if (fn == "sum" || fn == "mean") {
      out.identity = {llvm::Constant::getNullValue(ct)};
      out.combine = [this, f](const Pair& a, const Pair& c) {
        return Pair{f ? b_.CreateFAdd(a[0], c[0]) : b_.CreateAdd(a[0], c[0])};
      };
    } else if (fn == "max" || fn == "min") {
      bool max = fn == "max";
      llvm::Value* id = nullptr;
      if (f) {
        id = F(ct, max ? -HUGE_VAL : HUGE_VAL);
      } else if (IsSigned(d)) {
        id = I64(max ? INT64_MIN : INT64_MAX);
      } else {
        id = I64(max ? 0 : -1);
      }
      out.identity = {id};
      out.combine = [this, max, d](const Pair& a, const Pair& c) { return Pair{MaxMin(max, d, a[0], c[0])}; };
    } else if (fn == "argmax") {
      llvm::Value* id = f ? F(ct, -HUGE_VAL) : IsSigned(d) ? I64(INT64_MIN) : I64(0);
      out.identity = {id, I64(INT64_MAX)};
      out.combine = [this, d](const Pair& a, const Pair& c) { return ArgmaxCombine(d, a, c); };
    } else {
      Refuse("the reduction " + Quote(fn));
    }
    return out;
  }
  // The row's value from the block's combined partials: argmax's index, mean's quotient.
  llvm::Value* FinishReduce(const Node& r, Dtype d, const Pair& all) {
    if (r.fn == "argmax") return Convert(all[1], Dtype::I64, r.dtype);
    llvm::Value* v = all[0];
    if (r.fn == "mean") {
      if (!IsFloat(d)) Refuse("`mean` of " + std::string(Spelling(d)));
      v = b_.CreateFDiv(v, b_.CreateSIToFP(n_, ComputeType(d)));
    }
    return FromCompute(v, r.dtype);
  }

  // sum, mean, max, min, argmax: each thread folds the elements j = tid, tid + T, ... (coalesced),
  // then the block combines the partials (a tree: another order of additions than the
  // interpreter's, docs/numerics.md).
  llvm::Value* BuiltinReduce(const Node& r, Dtype d, int threads, llvm::Value* step,
                             const std::function<Coords(llvm::Value*)>& element) {
    Reduction red = BuiltinOf(r, d);
    const Pair& identity = red.identity;
    std::vector<llvm::Value*> slots;
    for (llvm::Value* v : identity) slots.push_back(Local(v->getType(), v));
    Loop(tid_, n_, step, [&](llvm::Value* j) {
      Pair acc;
      for (std::size_t p = 0; p < slots.size(); ++p) acc.push_back(b_.CreateLoad(identity[p]->getType(), slots[p]));
      Pair x = {ToCompute(EmitOne(r.args[0], element(j)), d)};
      if (r.fn == "argmax") x.push_back(j);
      Pair next = red.combine(acc, x);
      for (std::size_t p = 0; p < slots.size(); ++p) b_.CreateStore(next[p], slots[p]);
    });
    Pair mine;
    for (std::size_t p = 0; p < slots.size(); ++p) mine.push_back(b_.CreateLoad(identity[p]->getType(), slots[p]));
    return FinishReduce(r, d, BlockReduce(mine, red.combine, threads));
  }

  // argmax's partials (value, index): a NaN beats every number (the first NaN wins), a larger
  // value a smaller one (-0 < +0), and of equals the smaller index.
  Pair ArgmaxCombine(Dtype d, const Pair& a, const Pair& c) {
    llvm::Value* take = nullptr;
    llvm::Value* earlier = b_.CreateICmpSLT(c[1], a[1]);
    if (IsFloat(d)) {
      auto greater = [&](llvm::Value* x, llvm::Value* y) {
        llvm::Type* it = b_.getIntNTy(x->getType()->getPrimitiveSizeInBits());
        llvm::Value* zero = llvm::ConstantInt::get(it, 0);
        llvm::Value* x_negative = b_.CreateICmpSLT(b_.CreateBitCast(x, it), zero);
        llvm::Value* y_negative = b_.CreateICmpSLT(b_.CreateBitCast(y, it), zero);
        llvm::Value* zeros = b_.CreateAnd(b_.CreateFCmpOEQ(x, y), b_.CreateFCmpOEQ(x, F(x->getType(), 0.0)));
        return b_.CreateOr(b_.CreateFCmpOGT(x, y),
                           b_.CreateAnd(zeros, b_.CreateAnd(y_negative, b_.CreateNot(x_negative))));
      };
      llvm::Value* a_nan = b_.CreateFCmpUNO(a[0], a[0]);
      llvm::Value* c_nan = b_.CreateFCmpUNO(c[0], c[0]);
      llvm::Value* numbers = b_.CreateOr(greater(c[0], a[0]), b_.CreateAnd(b_.CreateNot(greater(a[0], c[0])), earlier));
      take =
          b_.CreateSelect(c_nan, b_.CreateOr(b_.CreateNot(a_nan), earlier), b_.CreateAnd(b_.CreateNot(a_nan), numbers));
    } else {
      llvm::Value* gt = IsSigned(d) ? b_.CreateICmpSGT(c[0], a[0]) : b_.CreateICmpUGT(c[0], a[0]);
      llvm::Value* eq = b_.CreateICmpEQ(c[0], a[0]);
      take = b_.CreateOr(gt, b_.CreateAnd(eq, earlier));
    }
    return {b_.CreateSelect(take, c[0], a[0]), b_.CreateSelect(take, c[1], a[1])};
  }

  // reduce f z x: the interpreter's left fold, exactly: thread 0 folds the row in index order from
  // z (a combiner need not be associative, nor z its identity: `maximum acc (abs x)` is neither),
  // and shares the result through shared memory. Rows run in parallel, one block each.
  llvm::Value* CombinerReduce(const Node& r, int threads, const std::function<Coords(llvm::Value*)>& element) {
    (void)threads;
    Dtype d = r.dtype;
    llvm::Type* t = Storage(d);
    if (Bytes(d) > 8) Refuse("a combiner over " + std::string(Spelling(d)));
    const Node& z = Get(r.args[1]);
    Barrier();
    If(b_.CreateICmpEQ(tid_, I64(0)), [&] {
      llvm::Value* init =
          Convert(EmitOne(r.args[1], Broadcast(row_coords_,
                                               group_.space.size() > 1
                                                   ? std::vector<Dim>(group_.space.begin(), group_.space.end() - 1)
                                                   : std::vector<Dim>{},
                                               z.shape)),
                  z.dtype, d);
      llvm::Value* acc = Local(t, init);
      Loop(I64(0), n_, I64(1), [&](llvm::Value* j) {
        llvm::Value* x = EmitOne(r.args[0], element(j));
        b_.CreateStore(Combine(*r.combiner, b_.CreateLoad(t, acc), x), acc);
      });
      b_.CreateStore(b_.CreateLoad(t, acc), SharedAt(I64(0)));
    });
    Barrier();
    llvm::Value* result = b_.CreateLoad(t, SharedAt(I64(0)));
    Barrier();
    return result;
  }

  // scan f z x: one block per row, the row in chunks of T elements: the block loads a chunk's
  // elements (their prologue computed in parallel) into shared memory, thread 0 folds them in
  // index order from the carry (the interpreter's left fold, exactly, for any combiner), and the
  // block computes the epilogue and stores in parallel.
  void ScanKernel() {
    int threads = RowThreads();
    out_.device.threads = threads;
    out_.device.shared_bytes = threads * 8;
    BeginRow();
    const std::vector<Dim>& space = group_.space;
    NodeId scan;
    int scans = 0;
    for (NodeId id : group_.nodes)
      if (Get(id).kind == Kind::Scan) scan = id, ++scans;
    if (scans != 1) Refuse("a scan kernel with " + std::to_string(scans) + " scans");
    const Node& s = Get(scan);
    Dtype d = s.dtype;
    llvm::Type* t = Storage(d);
    if (Bytes(d) > 8) Refuse("a scan over " + std::string(Spelling(d)));
    for (NodeId out : group_.outputs)
      if (!(Get(out).shape == space)) Refuse("a scan output of another shape than its rows");
    const Node& z = Get(s.args[1]);
    std::vector<Dim> rows(space.begin(), space.end() - 1);
    llvm::Value* carry = Local(t, Convert(EmitOne(s.args[1], Broadcast(row_coords_, rows, z.shape)), z.dtype, d));
    Loop(I64(0), n_, I64(threads), [&](llvm::Value* base) {
      llvm::Value* j = b_.CreateAdd(base, tid_);
      llvm::Value* valid = b_.CreateICmpSLT(j, n_);
      Coords c = row_coords_;
      c.push_back(Coord{j, false});
      llvm::Value* x = Local(t, llvm::Constant::getNullValue(t));
      If(valid, [&] { b_.CreateStore(EmitOne(s.args[0], c), x); });
      // The chunk's inclusive scan, exactly the interpreter's left fold: thread 0 folds the chunk's
      // elements in index order from the carry (z, then the previous chunk's last result), in
      // shared memory; every thread then reads its own.
      llvm::Value* mine = SharedAt(b_.CreateMul(tid_, I64(8)));
      b_.CreateStore(b_.CreateLoad(t, x), mine);
      Barrier();
      If(b_.CreateICmpEQ(tid_, I64(0)), [&] {
        llvm::Value* count = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, I64(threads), b_.CreateSub(n_, base));
        Loop(I64(0), count, I64(1), [&](llvm::Value* i) {
          llvm::Value* at = SharedAt(b_.CreateMul(i, I64(8)));
          llvm::Value* folded = Combine(*s.combiner, b_.CreateLoad(t, carry), b_.CreateLoad(t, at));
          b_.CreateStore(folded, at);
          b_.CreateStore(folded, carry);
        });
      });
      Barrier();
      llvm::Value* v = b_.CreateLoad(t, mine);
      Barrier();
      current_[scan.index] = v;
      current_coords_ = c;
      If(valid, [&] {
        llvm::Value* offset = b_.CreateAdd(b_.CreateMul(row_, n_), j);
        for (NodeId out : group_.outputs) Store(out, offset, EmitOne(out, c));
      });
      current_.erase(scan.index);
    });
    b_.CreateRetVoid();
  }

  // A product without a stdlib kernel: C[.., m, n] = A[.., m, k] B[.., k, n], batch axes
  // broadcast. A block computes a kTile x kTile tile of one batch element, each of its 256
  // threads 4 x 4 outputs (rows ty + 16 i, columns tx + 16 j); A and B go through shared memory
  // kTileK columns / rows at a time (zero past the edges). Each output accumulates its products
  // in k order, rounded to the accumulator (f32; f64 for f64; i64 wrapping for integers) and
  // added without fusing: the interpreter's sums exactly. The epilogue is then computed per
  // output element.
  void ProductKernel() {
    out_.device.threads = kThreads;
    NodeId mm;
    for (NodeId id : group_.nodes)
      if (Get(id).kind == Kind::MatMul) mm = id;
    const Node& p = Get(mm);
    const Node& a = Get(p.args[0]);
    const std::vector<Dim>& space = group_.space;
    if (!(p.shape == space)) Refuse("a product whose epilogue has another shape");
    for (NodeId out : group_.outputs)
      if (!(Get(out).shape == space)) Refuse("a product's output of another shape than the product");
    bool to_f32 = p.fn == "matmul_f32";
    Dtype operand = to_f32 ? Dtype::F32 : a.dtype;
    llvm::Type* ct = ComputeType(operand);
    if (operand == Dtype::Bool) Refuse("a product of bool");
    auto elem = static_cast<std::int64_t>(ct->getPrimitiveSizeInBits() / 8);
    out_.device.shared_bytes = 2 * kTileK * kTile * elem;

    std::size_t rank = space.size();
    std::vector<Dim> batch(space.begin(), space.end() - 2);
    Dim m = space[rank - 2], n = space[rank - 1], k = a.shape.back();
    out_.grid = {CeilDiv(n, kTile), CeilDiv(m, kTile), Product(batch, 0, batch.size())};
    llvm::Value* mv = EmitDim(m);
    llvm::Value* nv = EmitDim(n);
    llvm::Value* kv = EmitDim(k);
    llvm::Value* tid = Tid();
    llvm::Value* tx = b_.CreateURem(tid, I64(16));
    llvm::Value* ty = b_.CreateUDiv(tid, I64(16));
    llvm::Value* col0 = b_.CreateMul(Sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x), I64(kTile));
    llvm::Value* row0 = b_.CreateMul(Sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_y), I64(kTile));
    ReturnUnless(b_.CreateICmpULT(Sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_z), EmitDim(out_.grid[2])));
    Coords batch_coords = Unravel(Sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_z), batch);

    // Operand x of shape [.., r, c] at (r, c) of this block's batch element; 0 outside.
    auto operand_at = [&](NodeId x, llvm::Value* r, llvm::Value* c, llvm::Value* rows, llvm::Value* cols) {
      const Node& xn = Get(x);
      llvm::Value* slot = Local(ct, llvm::Constant::getNullValue(ct));
      If(b_.CreateAnd(b_.CreateICmpSLT(r, rows), b_.CreateICmpSLT(c, cols)), [&] {
        std::vector<Dim> from = batch;
        from.push_back(xn.shape[xn.shape.size() - 2]);
        from.push_back(xn.shape.back());
        Coords at = batch_coords;
        at.push_back(Coord{r, false});
        at.push_back(Coord{c, false});
        llvm::Value* v = EmitOne(x, Broadcast(at, from, xn.shape));
        if (to_f32) v = Convert(v, xn.dtype, Dtype::F32);
        b_.CreateStore(ToCompute(v, operand), slot);
      });
      return b_.CreateLoad(ct, slot);
    };
    llvm::Value* a_tile = I64(0);
    llvm::Value* b_tile = I64(kTileK * kTile * elem);
    auto tile_at = [&](llvm::Value* tile, llvm::Value* kk, llvm::Value* x) {
      return SharedAt(b_.CreateAdd(tile, b_.CreateMul(b_.CreateAdd(b_.CreateMul(kk, I64(kTile)), x), I64(elem))));
    };
    std::vector<llvm::Value*> acc;
    for (int i = 0; i < 16; ++i) acc.push_back(Local(ct, llvm::Constant::getNullValue(ct)));
    Loop(I64(0), kv, I64(kTileK), [&](llvm::Value* k0) {
      // Each thread loads 4 elements of each tile: A[row0 + e / 16, k0 + e % 16] into a_tile[e % 16][e / 16],
      // B[k0 + e / 64, col0 + e % 64] into b_tile[e / 64][e % 64], for e = tid + 256 q.
      for (int q = 0; q < kTile * kTileK / kThreads; ++q) {
        llvm::Value* e = b_.CreateAdd(tid, I64(kThreads * q));
        llvm::Value* ar = b_.CreateUDiv(e, I64(kTileK));
        llvm::Value* ak = b_.CreateURem(e, I64(kTileK));
        b_.CreateStore(operand_at(p.args[0], b_.CreateAdd(row0, ar), b_.CreateAdd(k0, ak), mv, kv),
                       tile_at(a_tile, ak, ar));
        llvm::Value* bk = b_.CreateUDiv(e, I64(kTile));
        llvm::Value* bc = b_.CreateURem(e, I64(kTile));
        b_.CreateStore(operand_at(p.args[1], b_.CreateAdd(k0, bk), b_.CreateAdd(col0, bc), kv, nv),
                       tile_at(b_tile, bk, bc));
      }
      Barrier();
      // The tiles hold zeros past k's end; the loop stops at k (they would add nothing).
      llvm::Value* steps = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, I64(kTileK), b_.CreateSub(kv, k0));
      Loop(I64(0), steps, I64(1), [&](llvm::Value* kk) {
        std::vector<llvm::Value*> av, bv;
        for (int i = 0; i < 4; ++i) av.push_back(b_.CreateLoad(ct, tile_at(a_tile, kk, b_.CreateAdd(ty, I64(16 * i)))));
        for (int j = 0; j < 4; ++j) bv.push_back(b_.CreateLoad(ct, tile_at(b_tile, kk, b_.CreateAdd(tx, I64(16 * j)))));
        bool f = ct->isFloatingPointTy();
        for (int i = 0; i < 4; ++i) {
          for (int j = 0; j < 4; ++j) {
            llvm::Value* slot = acc[static_cast<std::size_t>(4 * i + j)];
            llvm::Value* prod = f ? b_.CreateFMul(av[i], bv[j]) : b_.CreateMul(av[i], bv[j]);
            llvm::Value* old = b_.CreateLoad(ct, slot);
            b_.CreateStore(f ? b_.CreateFAdd(old, prod) : b_.CreateAdd(old, prod), slot);
          }
        }
      });
      Barrier();
    });
    // The epilogue and the stores, per output element in range.
    llvm::Value* batch_index = Sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_z);
    for (int i = 0; i < 4; ++i) {
      for (int j = 0; j < 4; ++j) {
        llvm::Value* r = b_.CreateAdd(row0, b_.CreateAdd(ty, I64(16 * i)));
        llvm::Value* c = b_.CreateAdd(col0, b_.CreateAdd(tx, I64(16 * j)));
        If(b_.CreateAnd(b_.CreateICmpSLT(r, mv), b_.CreateICmpSLT(c, nv)), [&] {
          Coords at = batch_coords;
          at.push_back(Coord{r, false});
          at.push_back(Coord{c, false});
          current_[mm.index] = FromCompute(b_.CreateLoad(ct, acc[static_cast<std::size_t>(4 * i + j)]), p.dtype);
          current_coords_ = at;
          llvm::Value* offset = b_.CreateAdd(b_.CreateMul(b_.CreateAdd(b_.CreateMul(batch_index, mv), r), nv), c);
          for (NodeId out : group_.outputs) Store(out, offset, EmitOne(out, at));
          current_.erase(mm.index);
        });
      }
    }
    b_.CreateRetVoid();
  }

  const graph::Graph& g_;
  const graph::Plan& plan_;
  std::size_t index_;
  const graph::Group& group_;
  llvm::LLVMContext& ctx_;
  llvm::Module& m_;
  llvm::IRBuilder<> b_;
  ArrayKernel out_;

  std::set<std::uint32_t> in_group_, visited_;
  std::vector<NodeId> inputs_;
  std::set<core::SizeVarId> vars_;
  llvm::Function* f_ = nullptr;
  llvm::BasicBlock* entry_ = nullptr;
  llvm::GlobalVariable* shared_ = nullptr;
  std::map<std::uint32_t, llvm::Value*> pointers_;  // per tensor node: its buffer
  std::map<std::uint32_t, llvm::Value*> sizes_;     // per size variable: its parameter
  std::map<Key, Val> cache_;
  std::vector<llvm::Value*> params_;               // a combiner's (acc, element) while its body is emitted
  std::map<std::uint32_t, llvm::Value*> current_;  // per-row results, the scan / product element
  Coords current_coords_;                          // where the scan / product element is
  std::size_t width_ = 1;                          // lanes of the vector path (1: scalar)
  int depth_ = 0;                                  // Emit's recursion
  std::vector<Dim> aligned_;                       // dims the vector path needs multiples of width_
  llvm::Value* row_ = nullptr;
  llvm::Value* n_ = nullptr;
  llvm::Value* tid_ = nullptr;
  Coords row_coords_;
};

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
