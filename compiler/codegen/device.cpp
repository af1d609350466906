// Device code generation; see device.h for the contract and docs/codegen.md for what each op becomes.
//
// The generated entry is the simulator's executor (compiler/sim/executor.cpp) specialized to one
// thread whose index is only known at run time:
//   - a TV layout (thread, value) -> element is evaluated with the thread index as an IR value and
//     the value index as a constant (CuTe's colexicographic decomposition, leaf by leaf), so a
//     thread's addresses are a few shifts and masks of its index;
//   - a Reg tile is one SSA value per value index; where an instruction needs an element, the value
//     index that holds it is found at compile time by evaluating the layouts for every thread of the
//     block, and must be the same in every thread (renaming registers is free on the GPU, moving
//     elements between threads is not); otherwise E0750 names the op.
#include "codegen/device.h"

#include "codegen/device_emitter.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/IR/DIBuilder.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/TargetParser/Triple.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <unordered_map>

#include "codegen/hopper.h"
#include "codegen/math.h"
#include "codegen/nvptx.h"
#include "layout/atoms.h"
#include "schedule/cost.h"
#include "schedule/schedule.h"

namespace weft::codegen {

namespace device_emit {

llvm::DIFile* Emitter::DiFile(FileId file) {
  // An absolute directory where the file exists, so tools find it from wherever the kernel runs.
  std::filesystem::path path(std::string(sources_->Get(file).name()));
  std::error_code error;
  if (std::filesystem::exists(path, error)) path = std::filesystem::absolute(path, error);
  std::string dir = path.parent_path().string();
  return di_->createFile(path.filename().string(), dir.empty() ? "." : dir);
}

void Emitter::Locate(Span span) {
  if (!subprogram_ || !span.valid()) return;
  llvm::DIScope*& scope = scopes_[span.file.index];
  if (!scope) scope = di_->createLexicalBlockFile(subprogram_, DiFile(span.file));
  LineCol at = sources_->Get(span.file).Locate(span.begin);
  b_.SetCurrentDebugLocation(llvm::DILocation::get(ctx_, at.line, at.column, scope));
}

llvm::Type* Emitter::ElemType(Dtype d) {
  switch (d) {
    case Dtype::F32:
      return b_.getFloatTy();
    case Dtype::F64:
      return b_.getDoubleTy();
    case Dtype::F16:
      return b_.getHalfTy();
    case Dtype::BF16:
      return b_.getBFloatTy();
    case Dtype::Bool:
      return b_.getInt1Ty();
    default:
      break;
  }
  if (Bits(d) >= 8 && !IsFloat(d)) return b_.getIntNTy(static_cast<unsigned>(Bits(d)));
  Fail("elements of type `" + std::string(Spelling(d)) + "`");
}

const TvLayout& Emitter::Tv(ValueId v) {
  const auto& choice = plan_.values.at(v.index);
  if (!choice.regs) Fail("the plan gives register tile " + Name(v) + " no TV layout");
  return *choice.regs;
}

const FlatTv& Emitter::Flat(const TvLayout& tv) {
  auto it = flat_.find(&tv);
  if (it != flat_.end()) return it->second;
  FlatTv f{tv.threads(), tv.values(), tv.rows, {}, {}};
  f.index.resize(static_cast<std::size_t>(f.threads * f.values));
  for (std::int64_t i = 0; i < f.threads * f.values; ++i) f.index[static_cast<std::size_t>(i)] = tv.layout(i);
  f.held.resize(static_cast<std::size_t>(f.threads));
  for (std::int64_t t = 0; t < f.threads; ++t)
    for (std::int64_t v = f.values - 1; v >= 0; --v)  // the lowest value index wins
      f.held[static_cast<std::size_t>(t)][f.index[static_cast<std::size_t>(t + f.threads * v)]] = static_cast<int>(v);
  return flat_.emplace(&tv, std::move(f)).first->second;
}

const layout::Atom& Emitter::AtomNamed(const std::string& name) {
  auto it = atoms_.find(name);
  if (it != atoms_.end()) return it->second;
  auto atom = layout::FindAtom(name);
  if (!atom) Fail(atom.error());
  return atoms_.emplace(name, *atom).first->second;
}

RowCol Emitter::Extent(ValueId v) {
  const auto& shape = Val(v).shape;
  std::vector<std::int64_t> c;
  for (const auto& d : shape) {
    auto x = d.AsConstant();
    if (!x) Fail(Name(v) + " has a symbolic extent");
    c.push_back(*x);
  }
  if (c.size() == 1) return {c[0], 1};
  if (c.size() == 2) return {c[0], c[1]};
  Fail(Name(v) + " has rank " + std::to_string(c.size()) + ": tiles of rank 1 and 2 are generated");
}

int Emitter::UniformValue(ValueId v, const std::function<RowCol(std::int64_t)>& elem, std::string_view what) {
  const FlatTv& f = Flat(Tv(v));
  int found = -1;
  for (std::int64_t t = 0; t < plan_.threads; ++t) {
    RowCol e = elem(t);
    auto it = f.held[static_cast<std::size_t>(t)].find(e.row + f.rows * e.col);
    if (it == f.held[static_cast<std::size_t>(t)].end())
      Fail("thread " + std::to_string(t) + " does not hold element (" + std::to_string(e.row) + ", " +
           std::to_string(e.col) + ") of " + Name(v) + ", which " + std::string(what) + " needs");
    if (found >= 0 && it->second != found)
      Fail(std::string(what) + " needs elements of " + Name(v) + " that different threads keep in different registers");
    found = it->second;
  }
  return found;
}

// CuTe's evaluation of a (possibly hierarchical) mode at a 1-D index: leaf i contributes
// ((index / (s_0 * ... * s_{i-1})) % s_i) * d_i; the last leaf is not reduced modulo its extent.
llvm::Value* Emitter::EvalLeaves(const layout::Layout& mode, llvm::Value* index) {
  auto leaves = layout::FlatModes(mode);
  llvm::Value* out = I32(0);
  std::int64_t below = 1;
  for (std::size_t i = 0; i < leaves.size(); ++i) {
    auto [extent, stride] = leaves[i];
    llvm::Value* c = below == 1 ? index : b_.CreateUDiv(index, I32(below));
    if (i + 1 < leaves.size()) c = b_.CreateURem(c, I32(extent));
    if (extent > 1 && stride != 0) out = b_.CreateAdd(out, b_.CreateMul(c, I32(stride)));
    below *= extent;
  }
  return out;
}

std::pair<llvm::Value*, llvm::Value*> Emitter::TvElement(const TvLayout& tv, std::int64_t v) {
  llvm::Value* idx = b_.CreateAdd(EvalLeaves(tv.layout.Mode(0), tid_), I32(tv.layout.Mode(1)(v)));
  return {b_.CreateURem(idx, I32(tv.rows)), b_.CreateUDiv(idx, I32(tv.rows))};
}

llvm::Value* Emitter::SharedOffset(ValueId shared, llvm::Value* row, llvm::Value* col) {
  const auto& choice = plan_.values.at(shared.index);
  if (!choice.shared) Fail("the plan gives shared tile " + Name(shared) + " no layout");
  const layout::SwizzledLayout& l = *choice.shared;
  llvm::Value* linear;
  if (l.layout().rank() == 2) {
    linear = b_.CreateAdd(EvalLeaves(l.layout().Mode(0), row), EvalLeaves(l.layout().Mode(1), col));
  } else {
    linear = EvalLeaves(l.layout(), b_.CreateAdd(row, b_.CreateMul(col, I32(Extent(shared).row))));
  }
  linear = b_.CreateAdd(linear, I32(l.offset()));
  const layout::Swizzle& s = l.swizzle();
  if (s.bits() == 0) return linear;
  llvm::Value* y = b_.CreateAnd(linear, I32(s.yyy_mask()));
  y = s.shift() >= 0 ? b_.CreateLShr(y, I32(s.shift())) : b_.CreateShl(y, I32(-s.shift()));
  return b_.CreateXor(linear, y);
}

llvm::Value* Emitter::CopyAddress(ValueId smem, const TvLayout& copy, std::int64_t v, llvm::Value* base,
                                  int element_bytes) {
  auto direct = [&](std::int64_t value) {
    auto [row, col] = TvElement(copy, value);
    return b_.CreateAdd(base, b_.CreateMul(SharedOffset(smem, row, col), I32(element_bytes)));
  };
  const synth::ValueChoice& vc = plan_.values.at(smem.index);
  std::int64_t rows = Extent(smem).row;
  // SharedOffset's function, evaluated here: the layout of index row + rows * col, swizzled.
  if (v == 0 || !vc.shared || (vc.shared->layout().rank() == 2 && vc.shared->layout().Mode(0).size() != rows))
    return direct(v);
  const FlatTv& fc = Flat(copy);
  auto offset = [&](std::int64_t t, std::int64_t value) {
    RowCol e = fc.At(t, value);
    return (*vc.shared)(e.row + rows * e.col);
  };
  // The base's alignment: an xor below it commutes with adding the base.
  auto low_bit = [](std::int64_t x) { return x == 0 ? std::int64_t{1} << 40 : x & -x; };
  std::int64_t align = low_bit(vc.shared_offset);
  if (vc.stages > 1) align = std::min(align, low_bit(vc.stage_bytes));
  std::int64_t o0 = offset(0, 0), ov = offset(0, v);
  for (int k = 0; k < 24; ++k) {
    std::int64_t x = (ov ^ o0) & ((std::int64_t{1} << k) - 1), a = ov - (o0 ^ x);
    if (x && x * element_bytes >= align) break;
    bool holds = true;
    for (std::int64_t t = 0; t < fc.threads && holds; ++t) holds = offset(t, v) == ((offset(t, 0) ^ x) + a);
    if (!holds) continue;
    llvm::Value* at = direct(0);
    if (x) at = b_.CreateXor(at, I32(x * element_bytes));
    return a ? b_.CreateAdd(at, I32(a * element_bytes)) : at;
  }
  return direct(v);
}

llvm::Value* Emitter::DimValue(const core::Dim& d) {
  llvm::Value* out = I64(0);
  for (const core::Term& term : d.terms()) {
    llvm::Value* t = I64(term.coefficient);
    for (const core::Factor& f : term.monomial) {
      llvm::Value* a = nullptr;
      switch (f.atom.kind) {
        case core::AtomKind::kVar: {
          auto it = sizes_.find(f.atom.var);
          if (it == sizes_.end()) Fail("a size the kernel's parameters do not bind");
          a = it->second;
          break;
        }
        case core::AtomKind::kDiv:
          a = b_.CreateSDiv(DimValue(*f.atom.operand), I64(f.atom.divisor));  // operands are non-negative sizes
          break;
        case core::AtomKind::kMod:
          a = b_.CreateSRem(DimValue(*f.atom.operand), I64(f.atom.divisor));
          break;
      }
      for (int p = 0; p < f.power; ++p) t = b_.CreateMul(t, a);
    }
    out = b_.CreateAdd(out, t);
  }
  return out;
}

llvm::Value* Emitter::Scalar(ValueId v) {
  llvm::Value* s = slots_.at(v.index).scalar;
  if (!s) Fail("scalar " + Name(v) + " used before it is computed");
  return s;
}

llvm::Value* Emitter::Convert(llvm::Value* x, Dtype from, Dtype to) {
  llvm::Type* t = ElemType(to);
  if (from == to) return x;
  if (IsFloat(from) && IsFloat(to)) {
    if (Bits(to) == Bits(from)) return b_.CreateFPTrunc(b_.CreateFPExt(x, b_.getFloatTy()), t);  // bf16 <-> f16
    return Bits(to) < Bits(from) ? b_.CreateFPTrunc(x, t) : b_.CreateFPExt(x, t);
  }
  if (IsFloat(from)) return IsSigned(to) ? b_.CreateFPToSI(x, t) : b_.CreateFPToUI(x, t);
  if (IsFloat(to)) return IsSigned(from) ? b_.CreateSIToFP(x, t) : b_.CreateUIToFP(x, t);
  if (to == Dtype::Bool) return b_.CreateICmpNE(x, llvm::ConstantInt::get(x->getType(), 0));
  return b_.CreateIntCast(x, t, IsSigned(from));
}

llvm::Value* Emitter::Intrinsic(llvm::Intrinsic::ID id, llvm::ArrayRef<llvm::Value*> args,
                                llvm::ArrayRef<llvm::Type*> types) {
  // An overloaded intrinsic with no types given is overloaded on its first operand (ldmatrix's
  // shared-memory pointer).
  std::vector<llvm::Type*> overload(types.begin(), types.end());
  if (overload.empty() && llvm::Intrinsic::isOverloaded(id) && !args.empty()) overload.push_back(args[0]->getType());
  llvm::Function* f = llvm::Intrinsic::getDeclaration(&m_, id, overload);
  return b_.CreateCall(f, args);
}

void Emitter::Barrier() {
  if (consumers_only_)
    Intrinsic(llvm::Intrinsic::nvvm_barrier_sync_cnt, {I32(1), I32(plan_.threads)});
  else
    Intrinsic(llvm::Intrinsic::nvvm_barrier0, {});
}

llvm::Value* Emitter::ThreadTable(const std::vector<std::int64_t>& per_thread) {
  if (std::all_of(per_thread.begin(), per_thread.end(), [&](std::int64_t x) { return x == per_thread[0]; }))
    return I32(per_thread[0]);
  std::vector<llvm::Constant*> entries;
  for (std::int64_t x : per_thread) entries.push_back(b_.getInt32(static_cast<std::uint32_t>(x)));
  auto* type = llvm::ArrayType::get(b_.getInt32Ty(), entries.size());
  auto* table = new llvm::GlobalVariable(m_, type, true, llvm::GlobalValue::PrivateLinkage,
                                         llvm::ConstantArray::get(type, entries), "weft_thread_table", nullptr,
                                         llvm::GlobalValue::NotThreadLocal, 4);
  llvm::Value* at = b_.CreateGEP(type, table, {I32(0), tid_});
  return b_.CreateAlignedLoad(b_.getInt32Ty(), at, llvm::Align(4));
}

llvm::Value* Emitter::Scratch(std::int64_t bytes) {
  scratch_bytes_ = std::max(scratch_bytes_, bytes);
  return I32(MbarrierOffset() + (mbarriers_ * 8 + 15) / 16 * 16);  // past the mbarriers
}

void Emitter::StoreIf(llvm::Value* condition, llvm::Value* value, llvm::Value* shared_offset) {
  llvm::BasicBlock* then = llvm::BasicBlock::Create(ctx_, "store", fn_);
  llvm::BasicBlock* join = llvm::BasicBlock::Create(ctx_, "stored", fn_);
  b_.CreateCondBr(condition, then, join);
  b_.SetInsertPoint(then);
  b_.CreateAlignedStore(value, b_.CreateGEP(b_.getInt8Ty(), smem_, shared_offset),
                        llvm::Align(std::max<std::uint64_t>(1, value->getType()->getPrimitiveSizeInBits() / 8)));
  b_.CreateBr(join);
  b_.SetInsertPoint(join);
}

// `convert`: through scratch shared memory, as the simulator does it: each element's owner (the
// lowest thread holding it) stores it, every thread loads the elements its new layout gives it.
void Emitter::EmitConvert(ValueId src, ValueId result) {
  const TvLayout& s = Tv(src);
  const TvLayout& d = Tv(result);
  if (s.layout == d.layout && s.rows == d.rows && s.cols == d.cols) {
    slots_[result.index].regs = slots_.at(src.index).regs;
    return;
  }
  int e = ElementBytes(Val(src).dtype);
  llvm::Value* scratch = Scratch(s.rows * s.cols * e);
  const FlatTv& fs = Flat(s);
  auto owners = layout::Owners(s);
  const auto& regs = slots_.at(src.index).regs;
  Barrier();  // an earlier use of the scratch memory is done
  for (std::int64_t v = 0; v < fs.values; ++v) {
    std::vector<std::int64_t> owner(static_cast<std::size_t>(fs.threads));
    for (std::int64_t t = 0; t < fs.threads; ++t) {
      RowCol el = fs.At(t, v);
      auto o = owners[static_cast<std::size_t>(el.row + s.rows * el.col)];
      owner[static_cast<std::size_t>(t)] = o.first == t && o.second == v;
    }
    auto [row, col] = TvElement(s, v);
    llvm::Value* at = b_.CreateAdd(scratch, b_.CreateMul(b_.CreateAdd(row, b_.CreateMul(col, I32(s.rows))), I32(e)));
    StoreIf(b_.CreateICmpNE(ThreadTable(owner), I32(0)), regs.at(static_cast<std::size_t>(v)), at);
  }
  Barrier();
  std::vector<llvm::Value*> out;
  for (std::int64_t v = 0; v < Flat(d).values; ++v) {
    auto [row, col] = TvElement(d, v);
    llvm::Value* at = b_.CreateAdd(scratch, b_.CreateMul(b_.CreateAdd(row, b_.CreateMul(col, I32(d.rows))), I32(e)));
    out.push_back(b_.CreateAlignedLoad(ElemType(Val(result).dtype), b_.CreateGEP(b_.getInt8Ty(), smem_, at),
                                       llvm::Align(static_cast<std::uint64_t>(e))));
  }
  Barrier();
  slots_[result.index].regs = std::move(out);
}

DeviceKernel Emitter::Emit() {
  DeviceKernel out;
  out.entry = k_.name;
  out.target = plan_.target;
  out.threads = plan_.threads;
  out.shared_bytes = plan_.shared_bytes;
  if (plan_.values.size() != k_.values.size() || plan_.ops.size() != k_.ops.size())
    throw Unsupported{k_.span, "the plan does not belong to kernel `" + k_.name + "`"};
  slots_.resize(k_.values.size());
  span_ = k_.span;
  FindTensorMaps();

  // Parameters: tensors, sizes, scalars (device.h).
  std::vector<llvm::Type*> params;
  for (const auto& p : k_.params)
    if (Val(p.value).space == tile::Space::Global) params.push_back(b_.getInt64Ty());
  for (const auto& [var, name] : k_.size_names) {
    out.sizes.push_back(var);
    params.push_back(b_.getInt64Ty());
  }
  for (const auto& p : k_.params)
    if (Val(p.value).space == tile::Space::Scalar) {
      Dtype d = Val(p.value).dtype;
      params.push_back(d == Dtype::Bool ? b_.getInt32Ty() : ElemType(d));
    }
  std::size_t first_map = params.size();
  for (std::size_t i = 0; i < map_specs_.size(); ++i) params.push_back(llvm::PointerType::get(ctx_, 0));
  auto* type = llvm::FunctionType::get(b_.getVoidTy(), params, false);
  fn_ = llvm::Function::Create(type, llvm::Function::ExternalLinkage, k_.name, m_);
  fn_->setCallingConv(llvm::CallingConv::PTX_Kernel);
  if (sources_ && k_.span.valid()) {
    // .file/.loc directives only (no DWARF sections), as `-gline-directives-only` makes them.
    di_ = std::make_unique<llvm::DIBuilder>(m_);
    llvm::DIFile* file = DiFile(k_.span.file);
    di_->createCompileUnit(llvm::dwarf::DW_LANG_C, file, "weft", true, "", 0, "",
                           llvm::DICompileUnit::DebugDirectivesOnly);
    LineCol at = sources_->Get(k_.span.file).Locate(k_.span.begin);
    subprogram_ = di_->createFunction(file, k_.name, k_.name, file, at.line,
                                      di_->createSubroutineType(di_->getOrCreateTypeArray({})), at.line,
                                      llvm::DINode::FlagZero, llvm::DISubprogram::SPFlagDefinition);
    fn_->setSubprogram(subprogram_);
    scopes_[k_.span.file.index] = subprogram_;
    m_.addModuleFlag(llvm::Module::Warning, "Debug Info Version", llvm::DEBUG_METADATA_VERSION);
    m_.addModuleFlag(llvm::Module::Warning, "Dwarf Version", 2);
    Locate(k_.span);
  }
  auto* entry = llvm::BasicBlock::Create(ctx_, "entry", fn_);
  b_.SetInsertPoint(entry);
  auto* smem_array =
      new llvm::GlobalVariable(m_, llvm::ArrayType::get(b_.getInt8Ty(), 0), false, llvm::GlobalValue::ExternalLinkage,
                               nullptr, "weft_smem", nullptr, llvm::GlobalValue::NotThreadLocal, 3);
  smem_array->setAlignment(llvm::Align(1024));
  smem_ = smem_base_ = smem_array;
  tid_ = Intrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x, {});

  auto arg = fn_->arg_begin();
  std::vector<llvm::Value*> tensor_args;
  for (const auto& p : k_.params)
    if (Val(p.value).space == tile::Space::Global) {
      arg->setName(p.name);
      tensor_args.push_back(&*arg++);
    }
  for (const auto& [var, name] : k_.size_names) {
    arg->setName(name);
    sizes_[var] = &*arg++;
  }
  for (const auto& p : k_.params)
    if (Val(p.value).space == tile::Space::Scalar) {
      arg->setName(p.name);
      llvm::Value* x = &*arg++;
      if (Val(p.value).dtype == Dtype::Bool) x = b_.CreateICmpNE(x, I32(0));
      slots_[p.value.index].scalar = x;
    }
  // Tensor maps: 128-byte CUtensorMaps by value in the parameter space (`.param .align 64 .b8
  // NAME[128]`), read in place through their generic address (grid_constant: not copied).
  auto* map_type = llvm::ArrayType::get(b_.getInt8Ty(), 128);
  for (std::size_t i = 0; i < map_specs_.size(); ++i) {
    llvm::Argument* a = fn_->getArg(static_cast<unsigned>(first_map + i));
    a->setName(k_.params.at(static_cast<std::size_t>(map_specs_[i].param)).name + "_map");
    a->addAttr(llvm::Attribute::getWithByValType(ctx_, map_type));
    a->addAttr(llvm::Attribute::getWithAlignment(ctx_, llvm::Align(64)));
    a->addAttr(llvm::Attribute::NoAlias);
    a->addAttr(llvm::Attribute::ReadOnly);
    maps_.push_back(b_.CreatePtrToInt(a, b_.getInt64Ty()));
  }
  std::size_t t = 0;
  for (const auto& p : k_.params) {
    const tile::Value& v = Val(p.value);
    if (v.space != tile::Space::Global) continue;
    GlobalSlot g;
    g.address = tensor_args[t++];
    g.param = static_cast<int>(&p - k_.params.data());
    if (p.in_place) g.in_place = &*p.in_place;
    for (const auto& d : v.shape) g.extents.push_back(DimValue(d));
    g.first.assign(g.extents.size(), I64(0));
    g.strides.assign(g.extents.size(), I64(1));
    for (std::size_t i = g.extents.size(); i-- > 1;) g.strides[i - 1] = b_.CreateMul(g.strides[i], g.extents[i]);
    slots_[p.value.index].global = g;
  }
  if (lowering_.roles) specialized_ = &*lowering_.roles;
  if (specialized_) {
    mbarriers_ = std::max(mbarriers_, 2 * specialized_->stages + 1);  // full, empty, and one in place
    if (specialized_->staged) {
      front_bytes_ = 1024;
      smem_ = llvm::ConstantExpr::getInBoundsGetElementPtr(b_.getInt8Ty(), smem_base_, b_.getInt32(1024));
    }
    out.threads = plan_.threads + 128;
    out.persistent = specialized_->persistent;
    EmitSpecialized();
  } else {
    EmitBody();
  }
  if (scratch_bytes_ || mbarriers_)
    out.shared_bytes = MbarrierOffset() + (mbarriers_ * 8 + 15) / 16 * 16 + scratch_bytes_;
  out.shared_bytes += front_bytes_;
  out.tensor_maps = map_specs_;
  out.protocols = protocols_;
  b_.CreateRetVoid();
  if (di_) di_->finalize();

  llvm::NamedMDNode* annotations = m_.getOrInsertNamedMetadata("nvvm.annotations");
  auto md = [&](const char* key, std::int64_t value) {
    annotations->addOperand(llvm::MDNode::get(ctx_, {llvm::ValueAsMetadata::get(fn_), llvm::MDString::get(ctx_, key),
                                                     llvm::ValueAsMetadata::get(llvm::ConstantInt::get(
                                                         b_.getInt32Ty(), static_cast<std::uint64_t>(value)))}));
  };
  md("kernel", 1);
  md("maxntidx", out.threads);
  if (lowering_.min_blocks > 0) md("minctasm", lowering_.min_blocks);
  if (!map_specs_.empty()) {
    // The map parameters are grid constants (1-based argument indices): used where they are.
    std::vector<llvm::Metadata*> indices;
    for (std::size_t i = 0; i < map_specs_.size(); ++i)
      indices.push_back(llvm::ValueAsMetadata::get(b_.getInt32(static_cast<std::uint32_t>(first_map + i + 1))));
    annotations->addOperand(
        llvm::MDNode::get(ctx_, {llvm::ValueAsMetadata::get(fn_), llvm::MDString::get(ctx_, "grid_constant"),
                                 llvm::MDNode::get(ctx_, indices)}));
  }
  return out;
}

}  // namespace device_emit

using device_emit::Emitter;
using device_emit::Unsupported;

llvm::TargetMachine* NvptxMachine(synth::Target target) {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
    // 32-bit pointers to shared memory (clang's -fcuda-short-ptr): shared addresses are 32 bits
    // wide, so 64-bit ones only cost registers and 64-bit adds in every ldmatrix address.
    auto& options = llvm::cl::getRegisteredOptions();
    if (auto it = options.find("nvptx-short-ptr"); it != options.end())
      static_cast<llvm::cl::opt<bool>*>(it->second)->setValue(true);
  });
  static std::map<synth::Target, std::unique_ptr<llvm::TargetMachine>> machines;
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  auto& tm = machines[target];
  if (!tm) {
    std::string error;
    llvm::Triple triple("nvptx64-nvidia-cuda");
    const llvm::Target* t = llvm::TargetRegistry::lookupTarget(triple.str(), error);
    if (!t) return nullptr;
    tm.reset(t->createTargetMachine(triple.str(), target == synth::Target::Sm80 ? "sm_80" : "sm_90a", "+ptx80",
                                    llvm::TargetOptions(), std::nullopt, std::nullopt,
                                    llvm::CodeGenOptLevel::Aggressive));
  }
  return tm.get();
}

bool EmitPtx(llvm::Module& module, synth::Target target, std::string& ptx_text) {
  llvm::TargetMachine* tm = NvptxMachine(target);
  if (!tm) return false;
  // The O3 pipeline, then the NVPTX back end.
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(tm);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  mpm.run(module, mam);
  llvm::SmallString<0> ptx;
  llvm::raw_svector_ostream ptx_out(ptx);
  llvm::legacy::PassManager codegen;
  if (tm->addPassesToEmitFile(codegen, ptx_out, nullptr, llvm::CodeGenFileType::AssemblyFile)) return false;
  codegen.run(module);
  ptx_text = std::string(ptx.str());
  return true;
}

Result<DeviceKernel, std::vector<Diagnostic>> EmitKernel(const tile::Kernel& kernel, const synth::Plan& plan,
                                                         const schedule::Schedule& schedule,
                                                         const SourceManager& sources, const Options& options) {
  llvm::TargetMachine* tm = NvptxMachine(plan.target);
  if (!tm)
    return std::vector<Diagnostic>{
        MakeDiagnostic(DiagnosticKind::CodegenFailed, kernel.span, "no NVPTX target in this LLVM")};
  llvm::LLVMContext ctx;
  auto module = std::make_unique<llvm::Module>(kernel.name, ctx);
  module->setTargetTriple("nvptx64-nvidia-cuda");
  module->setDataLayout(tm->createDataLayout());
  DeviceKernel out;
  try {
    Emitter emitter(kernel, plan, schedule.lowering, ctx, *module);
    if (options.line_info) emitter.EnableLineInfo(sources);
    out = emitter.Emit();
  } catch (const Unsupported& u) {
    return std::vector<Diagnostic>{MakeDiagnostic(DiagnosticKind::CodegenUnsupported, u.span, u.message)};
  }
  // The barrier protocol of each ring cannot deadlock (docs/scheduling.md): checked on every kernel
  // emitted. A deadlock would be a compiler bug; the kernel is refused, never run.
  for (const schedule::Protocol& p : out.protocols) {
    schedule::ProtocolCheck check = schedule::CheckProtocol(p);
    if (!check.deadlock_free)
      return std::vector<Diagnostic>{MakeDiagnostic(DiagnosticKind::HostBuildFailed, kernel.span, kernel.name,
                                                    "the barrier protocol of a pipeline (" + p.name +
                                                        ") can deadlock: " + check.ToString() +
                                                        " (a compiler bug; please report it)")};
  }
  std::string text;
  llvm::raw_string_ostream verify_out(text);
  if (llvm::verifyModule(*module, &verify_out))
    return std::vector<Diagnostic>{MakeDiagnostic(DiagnosticKind::CodegenFailed, kernel.span, "invalid IR: " + text)};
  {
    llvm::raw_string_ostream ir(out.llvm_ir);
    module->print(ir, nullptr);
  }
  if (!EmitPtx(*module, plan.target, out.ptx))
    return std::vector<Diagnostic>{MakeDiagnostic(DiagnosticKind::CodegenFailed, kernel.span, "cannot emit PTX")};
  return out;
}

}  // namespace weft::codegen
