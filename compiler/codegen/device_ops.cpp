// The device emitter's ops (device_emitter.h): scalar and view ops, copies into shared memory
// (cp.async and vectors), loads into registers (ldmatrix, ld.shared), mma.sync, elementwise maps
// and reductions.
#include "codegen/device_emitter.h"

namespace weft::codegen::device_emit {

void Emitter::EmitBlock(const std::vector<OpId>& ops) {
  for (OpId id : ops) EmitOp(id);
}

void Emitter::EmitOp(OpId id) {
  const tile::Op& op = k_.Get(id);
  span_ = op.span;
  Locate(op.span);
  auto result = [&]() { return op.results.at(0); };
  if (!op.results.empty() && folded_.count(result().index)) {  // a mask true in this copy of the body
    slots_[result().index].regs.assign(static_cast<std::size_t>(Flat(Tv(result())).values), b_.getTrue());
    return;
  }
  std::visit(
      [&](const auto& node) {
        using T = std::decay_t<decltype(node)>;
        if constexpr (std::is_same_v<T, tile::op::BlockIdx>) {
          static const llvm::Intrinsic::ID ids[] = {llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x,
                                                    llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_y,
                                                    llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_z};
          if (node.axis < 0 || node.axis > 2) Fail("block_idx of a grid of rank above 3");
          slots_[result().index].scalar = block_[static_cast<std::size_t>(node.axis)]
                                              ? block_[static_cast<std::size_t>(node.axis)]
                                              : b_.CreateZExt(Intrinsic(ids[node.axis], {}), b_.getInt64Ty());
        } else if constexpr (std::is_same_v<T, tile::op::Constant>) {
          Dtype d = Val(result()).dtype;
          llvm::Type* t = ElemType(d);
          llvm::Value* c = nullptr;
          if (auto* i = std::get_if<std::int64_t>(&node.value))
            c = IsFloat(d) ? llvm::ConstantFP::get(t, static_cast<double>(*i))
                           : llvm::ConstantInt::get(t, static_cast<std::uint64_t>(*i), true);
          if (auto* f = std::get_if<double>(&node.value))
            c = IsFloat(d) ? llvm::ConstantFP::get(t, *f)
                           : llvm::ConstantInt::get(t, static_cast<std::uint64_t>(static_cast<std::int64_t>(*f)), true);
          if (auto* bv = std::get_if<bool>(&node.value)) c = llvm::ConstantInt::get(t, *bv ? 1 : 0);
          slots_[result().index].scalar = c;
        } else if constexpr (std::is_same_v<T, tile::op::Size>) {
          slots_[result().index].scalar = DimValue(node.dim);
        } else if constexpr (std::is_same_v<T, tile::op::ScalarOp>) {
          EmitScalarOp(op, node);
        } else if constexpr (std::is_same_v<T, tile::op::View>) {
          EmitView(op, node);
        } else if constexpr (std::is_same_v<T, tile::op::ToShared>) {
          EmitToShared(id, op, node);
        } else if constexpr (std::is_same_v<T, tile::op::ToRegs>) {
          EmitToRegs(id, op, node);
        } else if constexpr (std::is_same_v<T, tile::op::Transpose>) {
          slots_[result().index].shared = slots_.at(node.src.index).shared;
          slots_[result().index].shared_view_of = node.src;
        } else if constexpr (std::is_same_v<T, tile::op::Store>) {
          EmitStore(id, node);
        } else if constexpr (std::is_same_v<T, tile::op::Mma>) {
          EmitMma(id, op, node);
        } else if constexpr (std::is_same_v<T, tile::op::Fill>) {
          ValueId r = result();
          llvm::Value* v = Convert(Scalar(node.value), Val(node.value).dtype, Val(r).dtype);
          slots_[r.index].regs.assign(static_cast<std::size_t>(Flat(Tv(r)).values), v);
        } else if constexpr (std::is_same_v<T, tile::op::Cast>) {
          ValueId r = result();
          if (Val(node.src).space == tile::Space::Scalar) {
            slots_[r.index].scalar = Convert(Scalar(node.src), Val(node.src).dtype, node.dtype);
            return;
          }
          auto in = SameLayoutRegs(node.src, r, "`cast`");
          for (auto*& x : in) x = Convert(x, Val(node.src).dtype, node.dtype);
          slots_[r.index].regs = std::move(in);
        } else if constexpr (std::is_same_v<T, tile::op::Expand>) {
          slots_[result().index].regs = SameLayoutRegs(node.src, result(), "`expand`");
        } else if constexpr (std::is_same_v<T, tile::op::Convert>) {
          EmitConvert(node.src, result());
        } else if constexpr (std::is_same_v<T, tile::op::Map>) {
          EmitMap(node, result());
        } else if constexpr (std::is_same_v<T, tile::op::Loop>) {
          EmitLoop(id, op, node);
        } else if constexpr (std::is_same_v<T, tile::op::Reduce>) {
          EmitReduce(node, result());
        } else if constexpr (std::is_same_v<T, tile::op::Iota>) {
          ValueId r = result();
          const TvLayout& tv = Tv(r);
          std::vector<llvm::Value*> regs;
          for (std::int64_t v = 0; v < Flat(tv).values; ++v)
            regs.push_back(b_.CreateZExt(TvElement(tv, v).first, ElemType(Val(r).dtype)));
          slots_[r.index].regs = std::move(regs);
        }
      },
      op.node);
}

void Emitter::EmitScalarOp(const tile::Op& op, const tile::op::ScalarOp& s) {
  std::vector<llvm::Value*> a;
  for (ValueId v : s.args) a.push_back(Scalar(v));
  Dtype d = Val(s.args.at(s.fn == "select" ? 1 : 0)).dtype;
  slots_[op.results.at(0).index].scalar = Elementwise(s.fn, d, a);
}

void Emitter::EmitView(const tile::Op& op, const tile::op::View& v) {
  const auto& parent = slots_.at(v.tensor.index).global;
  if (!parent) Fail("`tile` of " + Name(v.tensor) + ", which is not a global tensor");
  GlobalSlot g = *parent;
  std::size_t q = g.extents.size(), r = v.shape.size();
  if (v.coords.size() != q || r > q) Fail("`tile` with " + std::to_string(v.coords.size()) + " coordinates");
  llvm::Value* offset = I64(0);
  for (std::size_t i = 0; i < q; ++i) {
    std::int64_t extent = i >= q - r ? v.shape[i - (q - r)] : 1;
    llvm::Value* first = b_.CreateMul(Scalar(v.coords[i]), I64(extent));
    offset = b_.CreateAdd(offset, b_.CreateMul(first, g.strides[i]));
    if (i < g.first.size()) g.first[i] = b_.CreateAdd(g.first[i], first);
  }
  g.address = b_.CreateAdd(g.address, b_.CreateMul(offset, I64(ElementBytes(Val(v.tensor).dtype))));
  g.view_rank = static_cast<int>(r);
  slots_[op.results.at(0).index].global = g;
}

llvm::Value* Emitter::SharedBase(ValueId dst, llvm::Value* slot) {
  const synth::ValueChoice& vc = plan_.values.at(dst.index);
  return b_.CreateTrunc(b_.CreateAdd(I64(vc.shared_offset), b_.CreateMul(slot, I64(vc.stage_bytes))), b_.getInt32Ty());
}

void Emitter::EmitToShared(OpId id, const tile::Op& op, const tile::op::ToShared& s, const Prefetch* prefetch) {
  ValueId dst = op.results.at(0);
  const synth::ValueChoice& vc = plan_.values.at(dst.index);
  const synth::OpChoice& choice = plan_.ops.at(id.index);
  const auto& src = slots_.at(s.src.index).global;
  if (!src) Fail("`shared` of " + Name(s.src) + ", which is not a global tile");
  llvm::Value* stage = I64(0);
  if (prefetch) {
    stage = prefetch->slot;
  } else if (vc.stages > 1 && !iterations_.empty()) {
    stage = b_.CreateURem(iterations_.back(), I64(vc.stages));
  }
  llvm::Value* base = SharedBase(dst, stage);
  slots_[dst.index].shared = base;
  if (!synth::CopiesIntoShared(choice.instruction.kind))
    Fail("`" + synth::Spelling(choice.instruction) + "` copies into shared memory");
  if (choice.instruction.kind == InstructionKind::kTma2d) {
    if (prefetch) return EmitTma(id, s, dst, base, prefetch->bar, prefetch->live);
    // In place: a fresh mbarrier (the last one) for this copy alone.
    llvm::Value* bar = Mbarrier(I32(mbarriers_ - 1));
    Barrier();  // every thread's earlier reads of the buffer are done
    IfThread0(nullptr, [&] {
      Intrinsic(llvm::Intrinsic::nvvm_mbarrier_init_shared, {bar, I32(1)});
      hopper::FenceMbarrierInit(b_);
    });
    Barrier();
    IfThread0(nullptr, [&] { hopper::MbarrierArriveExpectTx(b_, SharedAddress(bar), I32(TmaBytes(id, dst))); });
    EmitTma(id, s, dst, base, bar, nullptr);
    WaitMbarrier(bar, I32(0));
    Barrier();  // every thread is past the wait
    IfThread0(nullptr, [&] { Intrinsic(llvm::Intrinsic::nvvm_mbarrier_inval_shared, {bar}); });
    return;
  }
  if (!choice.copy || choice.vector_bytes != 16) Fail("a cp.async copy without 16-byte vectors");
  if (Val(dst).shape.size() != 2) Fail("cp.async into a shared tile of rank other than 2");
  int e = ElementBytes(Val(dst).dtype);
  const TvLayout& copy = *choice.copy;
  // Every thread's earlier reads of the buffer this copy overwrites are done (a ring of one stage).
  if (!iterations_.empty() && !prefetch) Barrier();
  llvm::Type* gptr = llvm::PointerType::get(ctx_, 1);
  // A tile smaller than the block's vectors (a [1, 256] bias) is held by several threads at once:
  // only the element's owner (the smallest such thread) copies it, so no two threads write one
  // shared address.
  const FlatTv& flat = Flat(copy);
  std::unordered_map<std::int64_t, std::int64_t> owner;  // element -> the smallest thread holding it
  for (std::int64_t t = 0; t < flat.threads; ++t)
    for (std::int64_t v = 0; v < flat.values; ++v)
      owner.emplace(flat.index[static_cast<std::size_t>(t + flat.threads * v)], t);
  for (std::int64_t v = 0; v < flat.values; ++v) {
    if (prefetch && v * prefetch->parts / flat.values != prefetch->part) continue;
    std::vector<std::int64_t> owns(static_cast<std::size_t>(flat.threads));
    bool replicated = false;
    for (std::int64_t t = 0; t < flat.threads; ++t) {
      owns[static_cast<std::size_t>(t)] = owner.at(flat.index[static_cast<std::size_t>(t + flat.threads * v)]) == t;
      replicated = replicated || owns[static_cast<std::size_t>(t)] == 0;
    }
    llvm::BasicBlock* join = nullptr;
    if (replicated) {
      llvm::BasicBlock* body = llvm::BasicBlock::Create(ctx_, "copy.owner", fn_);
      join = llvm::BasicBlock::Create(ctx_, "copy.all", fn_);
      b_.CreateCondBr(b_.CreateICmpNE(ThreadTable(owns), I32(0)), body, join);
      b_.SetInsertPoint(body);
    }
    if (src->in_place) Fail("cp.async of " + Name(s.src) + ", which is read in place through a view (TMA only)");
    auto [row, col] = TvElement(copy, v);
    llvm::Value* saddr = b_.CreateGEP(b_.getInt8Ty(), smem_, CopyAddress(dst, copy, v, base, e));
    llvm::Value* goff =
        b_.CreateAdd(b_.CreateMul(b_.CreateZExt(row, b_.getInt64Ty()), src->strides[src->extents.size() - 2]),
                     b_.CreateZExt(col, b_.getInt64Ty()));
    llvm::Value* gaddr = b_.CreateIntToPtr(b_.CreateAdd(src->address, b_.CreateMul(goff, I64(e))), gptr);
    // A prefetch past the loop's last iteration reads nothing and fills zeros (source size 0).
    hopper::CpAsync16(b_, SharedAddress(saddr), gaddr,
                      prefetch ? b_.CreateSelect(prefetch->live, I32(16), I32(0)) : nullptr);
    if (join) {
      b_.CreateBr(join);
      b_.SetInsertPoint(join);
    }
  }
  if (prefetch) return;  // the loop commits and waits per stage
  Intrinsic(llvm::Intrinsic::nvvm_cp_async_commit_group, {});
  Intrinsic(llvm::Intrinsic::nvvm_cp_async_wait_group, {I32(0)});
  Barrier();
}

void Emitter::EmitToRegs(OpId id, const tile::Op& op, const tile::op::ToRegs& r) {
  ValueId dst = op.results.at(0);
  const synth::OpChoice& choice = plan_.ops.at(id.index);
  if (choice.instruction.kind == InstructionKind::kNone || !plan_.values.at(dst.index).regs) {
    slots_[dst.index].shared_alias = r.src;  // wgmma reads it where it is
    return;
  }
  if (!synth::LoadsIntoRegisters(choice.instruction.kind))
    Fail("`" + synth::Spelling(choice.instruction) + "` loads into registers");
  if (choice.instruction.kind == InstructionKind::kLdShared) return EmitLdShared(id, op, r);
  if (!choice.copy) Fail("an ldmatrix without a copy layout");
  if (plan_.values.at(dst.index).streamed) {
    streamed_[dst.index] = Streamed{id, r.src};  // loaded slice by slice at the mma that reads it
    return;
  }
  std::vector<llvm::Value*> regs(static_cast<std::size_t>(Flat(Tv(dst)).values), nullptr);
  EmitLdmatrix(id, dst, r.src, 0, Flat(*choice.copy).values, regs);
  std::string what = "`" + synth::Spelling(choice.instruction) + "`";
  for (std::size_t i = 0; i < regs.size(); ++i)
    if (!regs[i]) Fail(what + " never delivers value " + std::to_string(i) + " of " + Name(dst));
  slots_[dst.index].regs = std::move(regs);
}

void Emitter::EmitLdmatrix(OpId id, ValueId dst, ValueId src, std::int64_t first, std::int64_t last,
                           std::vector<llvm::Value*>& regs) {
  const synth::OpChoice& choice = plan_.ops.at(id.index);
  llvm::Value* base = slots_.at(src.index).shared;
  if (!base) Fail("`regs` of " + Name(src) + ", which is not in shared memory");
  ValueId smem = src;
  bool swapped = false;
  if (auto parent = slots_.at(src.index).shared_view_of) smem = *parent, swapped = true;
  const TvLayout& copy = *choice.copy;
  const FlatTv& fc = Flat(copy);
  int count = choice.instruction.count;
  bool trans = choice.instruction.trans;
  static const llvm::Intrinsic::ID ids[2][3] = {
      {llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x1_b16, llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x2_b16,
       llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x4_b16},
      {llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x1_trans_b16,
       llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x2_trans_b16,
       llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x4_trans_b16}};
  llvm::Intrinsic::ID iid = ids[trans ? 1 : 0][count == 4 ? 2 : count == 2 ? 1 : 0];
  int rank = static_cast<int>(Val(smem).shape.size());
  const FlatTv& ftv = Flat(Tv(dst));
  llvm::Type* elem = ElemType(Val(dst).dtype);
  std::string what = "`" + synth::Spelling(choice.instruction) + "`";
  for (std::int64_t v = first; v < last; ++v) {
    llvm::Value* addr = b_.CreateGEP(b_.getInt8Ty(), smem_, CopyAddress(smem, copy, v, base, 2));
    llvm::Value* loaded = Intrinsic(iid, {addr});
    for (int j = 0; j < count; ++j) {
      llvm::Value* reg = count == 1 && !loaded->getType()->isStructTy()
                             ? loaded
                             : b_.CreateExtractValue(loaded, {static_cast<unsigned>(j)});
      for (int h = 0; h < 2; ++h) {
        auto elem_of = [&, j, h](std::int64_t t) {
          std::int64_t w = t / 32, l = t % 32, g = l / 4, t4 = l % 4;
          std::int64_t row_lane = trans ? 8 * j + 2 * t4 + h : 8 * j + g;
          std::int64_t within = trans ? g : 2 * t4 + h;
          RowCol e = Advance(fc.At(w * 32 + row_lane, v), within, rank);
          return swapped ? RowCol{e.col, e.row} : e;
        };
        int value = UniformValue(dst, elem_of, what);
        llvm::Value* half = b_.CreateTrunc(h == 0 ? reg : b_.CreateLShr(reg, I32(16)), b_.getInt16Ty());
        llvm::Value* x = b_.CreateBitCast(half, elem);
        // every value of the thread holding the same element (a broadcast holds it more than once)
        for (std::int64_t i = 0; i < ftv.values; ++i)
          if (ftv.index[static_cast<std::size_t>(ftv.threads * i)] ==
              ftv.index[static_cast<std::size_t>(ftv.threads * value)])
            regs[static_cast<std::size_t>(i)] = x;
        regs[static_cast<std::size_t>(value)] = x;
      }
    }
  }
}

// `regs` by vector loads (`ld.shared.v4.b32` and narrower), as the simulator does them: each
// thread reads the plan's copy vectors at the swizzled address of their first element and hands
// each element to the value of the destination layout that holds it.
void Emitter::EmitLdShared(OpId id, const tile::Op& op, const tile::op::ToRegs& r) {
  ValueId dst = op.results.at(0);
  const synth::OpChoice& choice = plan_.ops.at(id.index);
  llvm::Value* base = slots_.at(r.src.index).shared;
  if (!base) Fail("`regs` of " + Name(r.src) + ", which is not in shared memory");
  ValueId smem = r.src;
  bool swapped = false;
  if (auto parent = slots_.at(r.src.index).shared_view_of) smem = *parent, swapped = true;
  if (!choice.copy) Fail("a vector load without a copy layout");
  Dtype d = Val(dst).dtype;
  if (d == Dtype::Bool) Fail("vector loads of `bool` tiles");
  int e = ElementBytes(d), vb = choice.vector_bytes;
  if (vb <= 0 || vb % e) Fail("a vector load of " + std::to_string(vb) + " bytes");
  const TvLayout& copy = *choice.copy;
  const FlatTv& fc = Flat(copy);
  const FlatTv& ftv = Flat(Tv(dst));
  int rank = static_cast<int>(Val(smem).shape.size());
  auto* vector = llvm::FixedVectorType::get(ElemType(d), static_cast<unsigned>(vb / e));
  std::vector<llvm::Value*> regs(static_cast<std::size_t>(ftv.values), nullptr);
  std::string what = "`" + synth::Spelling(choice.instruction) + "`";
  for (std::int64_t v = 0; v < fc.values; ++v) {
    auto [row, col] = TvElement(copy, v);
    llvm::Value* at = b_.CreateAdd(base, b_.CreateMul(SharedOffset(smem, row, col), I32(e)));
    llvm::Value* loaded = b_.CreateAlignedLoad(vector, b_.CreateGEP(b_.getInt8Ty(), smem_, at),
                                               llvm::Align(static_cast<std::uint64_t>(vb)));
    for (int i = 0; i < vb / e; ++i) {
      int value = UniformValue(
          dst,
          [&](std::int64_t t) {
            RowCol el = Advance(fc.At(t, v), i, rank);
            return swapped ? RowCol{el.col, el.row} : el;
          },
          what);
      llvm::Value* x = b_.CreateExtractElement(loaded, static_cast<std::uint64_t>(i));
      for (std::int64_t j = 0; j < ftv.values; ++j) {  // a broadcast holds the element more than once
        bool same = true;
        for (std::int64_t t = 0; t < ftv.threads && same; ++t)
          same = ftv.index[static_cast<std::size_t>(t + ftv.threads * j)] ==
                 ftv.index[static_cast<std::size_t>(t + ftv.threads * value)];
        if (same) regs[static_cast<std::size_t>(j)] = x;
      }
    }
  }
  for (std::size_t i = 0; i < regs.size(); ++i)
    if (!regs[i]) Fail(what + " never delivers value " + std::to_string(i) + " of " + Name(dst));
  slots_[dst.index].regs = std::move(regs);
}

void Emitter::LoadSlice(ValueId v, std::vector<llvm::Value*>& regs, std::int64_t s, std::int64_t slices) {
  auto it = streamed_.find(v.index);
  if (it == streamed_.end()) return;
  std::int64_t instructions = Flat(*plan_.ops.at(it->second.op.index).copy).values;
  if (instructions % slices) Fail("a streamed operand " + Name(v) + " whose loads are not whole k16 slices");
  std::int64_t per = instructions / slices;
  EmitLdmatrix(it->second.op, v, it->second.src, s * per, (s + 1) * per, regs);
}

// The top-left element of each warp's part of the accumulator.
std::vector<RowCol> WarpOrigins(const FlatTv& acc, std::int64_t cols, int warps) {
  std::vector<RowCol> out;
  for (int w = 0; w < warps; ++w) {
    RowCol o{acc.rows, cols};
    for (std::int64_t t = w * 32; t < (w + 1) * 32; ++t)
      for (std::int64_t v = 0; v < acc.values; ++v) {
        RowCol e = acc.At(t, v);
        o.row = std::min(o.row, e.row);
        o.col = std::min(o.col, e.col);
      }
    out.push_back(o);
  }
  return out;
}

void Emitter::EmitMma(OpId id, const tile::Op& op, const tile::op::Mma& m) {
  const synth::OpChoice& choice = plan_.ops.at(id.index);
  ValueId result = op.results.at(0);
  switch (choice.instruction.kind) {
    case InstructionKind::kWgmma:
      return EmitWgmma(id, op, m);
    case InstructionKind::kMmaSync:
      break;
    case InstructionKind::kUnchosen:
    case InstructionKind::kNone:
    case InstructionKind::kCpAsyncCa:
    case InstructionKind::kCpAsyncCg:
    case InstructionKind::kTma2d:
    case InstructionKind::kLdmatrix:
    case InstructionKind::kLdShared:
    case InstructionKind::kStGlobal:
    case InstructionKind::kShflBfly:
    case InstructionKind::kThroughShared:
    case InstructionKind::kCvt:
    case InstructionKind::kMov:
    case InstructionKind::kIota:
    case InstructionKind::kElementwise:
    case InstructionKind::kPipeline:
    case InstructionKind::kLoop:
    case InstructionKind::kScalar:
      Fail("`" + synth::Spelling(choice.instruction) + "`");
  }
  const layout::Atom* atom = &AtomNamed(synth::Spelling(choice.instruction));
  const TvLayout& ta = atom->Operand("A")->tv;
  const TvLayout& tb = atom->Operand("B")->tv;
  const TvLayout& tc = atom->Operand("C")->tv;
  const FlatTv &fa = Flat(ta), &fb = Flat(tb), &fc = Flat(tc);
  RowCol a_ext = Extent(m.a), c_ext = Extent(result);
  std::int64_t M = c_ext.row, N = c_ext.col, K = a_ext.col;
  int warps = choice.warps_m * choice.warps_n;
  std::int64_t wm = M / choice.warps_m, wn = N / choice.warps_n;
  if (warps * 32 > plan_.threads || wm % 16 || wn % 8 || K % 16) Fail("a warp tiling that is not whole atoms");
  std::vector<llvm::Value*> acc = SameLayoutRegs(m.acc, result, "`mma`");
  auto origins = WarpOrigins(Flat(Tv(result)), Tv(result).cols, warps);
  auto origin = [&](std::int64_t t) {
    return origins[static_cast<std::size_t>(std::min<std::int64_t>(t / 32, warps - 1))];
  };
  bool bf16 = Val(m.a).dtype == Dtype::BF16;
  if (!bf16 && Val(m.a).dtype != Dtype::F16) Fail("mma.sync of `" + std::string(Spelling(Val(m.a).dtype)) + "`");
  // A streamed operand (plan.h) is loaded here, slice s (k in [16 s, 16 s + 16)) right before the
  // k-steps that read it; the others are in registers already.
  auto operand = [&](ValueId v) {
    auto it = streamed_.find(v.index);
    if (it == streamed_.end()) return slots_.at(v.index).regs;
    return std::vector<llvm::Value*>(static_cast<std::size_t>(Flat(Tv(v)).values), nullptr);
  };
  std::vector<llvm::Value*> ra = operand(m.a), rb = operand(m.b);
  if (ra.empty() || rb.empty()) Fail("an mma operand that is not in registers");
  auto load_slice = [&](ValueId v, std::vector<llvm::Value*>& regs, std::int64_t s) { LoadSlice(v, regs, s, K / 16); };
  std::string what = "`" + synth::Spelling(choice.instruction) + "`";
  auto reg = [&](const std::vector<llvm::Value*>& regs, ValueId v, int idx) {
    llvm::Value* x = regs[static_cast<std::size_t>(idx)];
    if (!x) Fail(what + " reads value " + std::to_string(idx) + " of " + Name(v) + ", which its slice does not load");
    return x;
  };
  auto pack = [&](llvm::Value* lo, llvm::Value* hi) {
    llvm::Value* p = Pack(lo, hi);
    if (bf16) return p;
    return b_.CreateBitCast(p, llvm::FixedVectorType::get(b_.getHalfTy(), 2));
  };
  // One m16n8k16 of atom (am, an) at depth k0, accumulating into acc.
  auto step = [&](std::int64_t am, std::int64_t an, std::int64_t k0) {
    int c_index[4];
    for (int i = 0; i < 4; ++i)
      c_index[i] = UniformValue(
          result,
          [&, i](std::int64_t t) {
            RowCol o = origin(t), e = fc.At(t % 32, i);
            return RowCol{o.row + 16 * am + e.row, o.col + 8 * an + e.col};
          },
          what);
    llvm::Value* a[8];
    llvm::Value* bv[4];
    for (int i = 0; i < 8; ++i) {
      int idx = UniformValue(
          m.a,
          [&, i](std::int64_t t) {
            RowCol o = origin(t), e = fa.At(t % 32, i);
            return RowCol{o.row + 16 * am + e.row, k0 + e.col};
          },
          what);
      a[i] = reg(ra, m.a, idx);
    }
    for (int i = 0; i < 4; ++i) {
      int idx = UniformValue(
          m.b,
          [&, i](std::int64_t t) {
            RowCol o = origin(t), e = fb.At(t % 32, i);
            return RowCol{k0 + e.row, o.col + 8 * an + e.col};
          },
          what);
      bv[i] = reg(rb, m.b, idx);
    }
    std::vector<llvm::Value*> args = {pack(a[0], a[1]),
                                      pack(a[2], a[3]),
                                      pack(a[4], a[5]),
                                      pack(a[6], a[7]),
                                      pack(bv[0], bv[1]),
                                      pack(bv[2], bv[3]),
                                      acc[static_cast<std::size_t>(c_index[0])],
                                      acc[static_cast<std::size_t>(c_index[1])],
                                      acc[static_cast<std::size_t>(c_index[2])],
                                      acc[static_cast<std::size_t>(c_index[3])]};
    llvm::Value* d = Intrinsic(
        bf16 ? llvm::Intrinsic::nvvm_mma_m16n8k16_row_col_bf16 : llvm::Intrinsic::nvvm_mma_m16n8k16_row_col_f32_f32,
        args);
    for (int i = 0; i < 4; ++i)
      acc[static_cast<std::size_t>(c_index[i])] = b_.CreateExtractValue(d, {static_cast<unsigned>(i)});
  };
  if (ring_mma_ && ring_mma_->mma == id) {
    // Software-pipelined (MmaRing): slice s's fragments were loaded before slice s - 1's products
    // (slice 0 in the previous iteration); the ring's barrier separates the last read of this
    // iteration's slot from the first read of the next one.
    std::int64_t slices = K / 16;
    MmaRing& ring = *ring_mma_;
    std::vector<llvm::Value*> ca = ring.a0, cb = ring.b0;
    for (std::int64_t s = 0; s < slices; ++s) {
      std::vector<llvm::Value*> na(ra.size(), nullptr), nb(rb.size(), nullptr);
      if (slices == 1) {
        ring.copies(0);
        ring.barrier();
      }
      if (s + 1 < slices) {
        load_slice(m.a, na, s + 1);
        load_slice(m.b, nb, s + 1);
      } else {
        ring.slot(true);
        load_slice(m.a, na, 0);
        load_slice(m.b, nb, 0);
        ring.slot(false);
        ring.next_a0 = na;
        ring.next_b0 = nb;
      }
      if (slices > 1) ring.copies(s);
      ra = ca;
      rb = cb;
      for (std::int64_t am = 0; am < wm / 16; ++am)
        for (std::int64_t an = 0; an < wn / 8; ++an) step(am, an, 16 * s);
      if (s + 2 == slices) ring.barrier();
      ca = std::move(na);
      cb = std::move(nb);
    }
  } else if (streamed_.count(m.a.index) || streamed_.count(m.b.index)) {
    for (std::int64_t k0 = 0; k0 < K; k0 += 16) {  // slice by slice: its loads, then its products
      load_slice(m.a, ra, k0 / 16);
      load_slice(m.b, rb, k0 / 16);
      for (std::int64_t am = 0; am < wm / 16; ++am)
        for (std::int64_t an = 0; an < wn / 8; ++an) step(am, an, k0);
    }
  } else {
    for (std::int64_t am = 0; am < wm / 16; ++am)
      for (std::int64_t an = 0; an < wn / 8; ++an)
        for (std::int64_t k0 = 0; k0 < K; k0 += 16) step(am, an, k0);
  }
  slots_[result.index].regs = std::move(acc);
}

std::vector<llvm::Value*> Emitter::SameLayoutRegs(ValueId src, ValueId dst, std::string_view what) {
  const TvLayout& a = Tv(src);
  const TvLayout& b = Tv(dst);
  const auto& regs = slots_.at(src.index).regs;
  if (regs.empty()) Fail(Name(src) + " is not in registers");
  if (a.layout == b.layout && a.rows == b.rows && a.cols == b.cols) return regs;
  // Same elements per thread in another order: rename.
  const FlatTv& fb = Flat(b);
  std::vector<llvm::Value*> out(static_cast<std::size_t>(fb.values));
  for (std::int64_t v = 0; v < fb.values; ++v)
    out[static_cast<std::size_t>(v)] = regs[static_cast<std::size_t>(UniformValue(
        src, [&](std::int64_t t) { return fb.At(t, v); }, what))];
  return out;
}

// The element of operand `a` that element `e` of a rank-`result_rank` result reads: NumPy's
// broadcasting, axes aligned at the end (a rank-1 tile is n x 1).
RowCol BroadcastElement(RowCol e, int result_rank, RowCol a_ext, int a_rank) {
  std::vector<std::int64_t> idx =
      result_rank == 1 ? std::vector<std::int64_t>{e.row} : std::vector<std::int64_t>{e.row, e.col};
  std::vector<std::int64_t> shape =
      a_rank == 1 ? std::vector<std::int64_t>{a_ext.row} : std::vector<std::int64_t>{a_ext.row, a_ext.col};
  std::vector<std::int64_t> out(shape.size(), 0);
  for (std::size_t i = 0; i < shape.size(); ++i) out[i] = shape[i] == 1 ? 0 : idx[i + idx.size() - shape.size()];
  return a_rank == 1 ? RowCol{out[0], 0} : RowCol{out[0], out[1]};
}

llvm::Value* Emitter::Elementwise(const std::string& fn, Dtype d, const std::vector<llvm::Value*>& x) {
  bool f = IsFloat(d);
  bool s = IsSigned(d);
  auto binary_intrinsic = [&](llvm::Intrinsic::ID id) { return b_.CreateBinaryIntrinsic(id, x[0], x[1]); };
  if (x.size() == 2) {
    if (fn == "+") return f ? b_.CreateFAdd(x[0], x[1]) : b_.CreateAdd(x[0], x[1]);
    if (fn == "-") return f ? b_.CreateFSub(x[0], x[1]) : b_.CreateSub(x[0], x[1]);
    if (fn == "*") return f ? b_.CreateFMul(x[0], x[1]) : b_.CreateMul(x[0], x[1]);
    if (fn == "/") return f ? b_.CreateFDiv(x[0], x[1]) : (s ? b_.CreateSDiv(x[0], x[1]) : b_.CreateUDiv(x[0], x[1]));
    if (fn == "%") return f ? b_.CreateFRem(x[0], x[1]) : (s ? b_.CreateSRem(x[0], x[1]) : b_.CreateURem(x[0], x[1]));
    if (fn == "==") return f ? b_.CreateFCmpOEQ(x[0], x[1]) : b_.CreateICmpEQ(x[0], x[1]);
    if (fn == "!=") return f ? b_.CreateFCmpUNE(x[0], x[1]) : b_.CreateICmpNE(x[0], x[1]);
    if (fn == "<")
      return f ? b_.CreateFCmpOLT(x[0], x[1]) : (s ? b_.CreateICmpSLT(x[0], x[1]) : b_.CreateICmpULT(x[0], x[1]));
    if (fn == "<=")
      return f ? b_.CreateFCmpOLE(x[0], x[1]) : (s ? b_.CreateICmpSLE(x[0], x[1]) : b_.CreateICmpULE(x[0], x[1]));
    if (fn == ">")
      return f ? b_.CreateFCmpOGT(x[0], x[1]) : (s ? b_.CreateICmpSGT(x[0], x[1]) : b_.CreateICmpUGT(x[0], x[1]));
    if (fn == ">=")
      return f ? b_.CreateFCmpOGE(x[0], x[1]) : (s ? b_.CreateICmpSGE(x[0], x[1]) : b_.CreateICmpUGE(x[0], x[1]));
    if (fn == "&&") return b_.CreateAnd(x[0], x[1]);
    if (fn == "||") return b_.CreateOr(x[0], x[1]);
    // The interpreter's maximum and minimum: NaN propagates, -0 < +0 (max.NaN / min.NaN).
    if (fn == "maximum")
      return binary_intrinsic(f ? llvm::Intrinsic::maximum : s ? llvm::Intrinsic::smax : llvm::Intrinsic::umax);
    if (fn == "minimum")
      return binary_intrinsic(f ? llvm::Intrinsic::minimum : s ? llvm::Intrinsic::smin : llvm::Intrinsic::umin);
  }
  if (x.size() == 3 && fn == "select") return b_.CreateSelect(x[0], x[1], x[2]);
  if (x.size() == 1) {
    if (fn == "negate") return f ? b_.CreateFNeg(x[0]) : b_.CreateNeg(x[0]);
    if (fn == "abs" && f) return b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x[0]);
    if (fn == "sqrt" && f) return b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x[0]);
    if (fn == "exp" && d == Dtype::F32) {
      // 2^(x log2 e) on the special function unit, results below 2^-126 flushed to zero
      // (ex2.approx.ftz: one MUFU.EX2; without .ftz ptxas adds three instructions an exp to
      // keep subnormal results, a third of a softmax's instructions).
      llvm::Value* log2e = llvm::ConstantFP::get(b_.getFloatTy(), 1.4426950408889634);
      auto binary = [](llvm::Value* v, unsigned opcode) {
        auto* op = llvm::dyn_cast<llvm::BinaryOperator>(v);
        return op && op->getOpcode() == opcode ? op : nullptr;
      };
      // exp ((a - b) * c), softmax's shape with b a row's maximum and c the scale (c = 1 without
      // the product): fma (a, c log2 e, -(b c log2 e)), one instruction a value, b c log2 e shared
      // by the row (FlashAttention's exp2 of a fused scale).
      llvm::Value* arg = x[0];
      if (auto* mul = binary(arg, llvm::Instruction::FMul))
        for (unsigned i = 0; i < 2; ++i)
          if (binary(mul->getOperand(i), llvm::Instruction::FSub)) {
            log2e = b_.CreateFMul(mul->getOperand(1 - i), log2e);
            arg = mul->getOperand(i);
            break;
          }
      llvm::Value* scaled = nullptr;
      if (auto* sub = binary(arg, llvm::Instruction::FSub)) {
        llvm::Value* shift = b_.CreateFNeg(b_.CreateFMul(sub->getOperand(1), log2e));
        scaled = b_.CreateIntrinsic(llvm::Intrinsic::fma, {b_.getFloatTy()}, {sub->getOperand(0), log2e, shift});
      } else {
        scaled = b_.CreateFMul(x[0], llvm::ConstantFP::get(b_.getFloatTy(), 1.4426950408889634));
      }
      return Intrinsic(llvm::Intrinsic::nvvm_ex2_approx_ftz_f, {scaled});
    }
    // The others (and exp of bf16, f16) as the array kernels compute them: in f32 (math.h).
    if (f && d != Dtype::F64 && math::HasUnary(fn)) {
      llvm::Value* a = d == Dtype::F32 ? x[0] : b_.CreateFPExt(x[0], b_.getFloatTy());
      llvm::Value* r = math::Unary(b_, fn, a);
      return d == Dtype::F32 ? r : b_.CreateFPTrunc(r, x[0]->getType());
    }
  }
  Fail("the elementwise function `" + fn + "` on `" + std::string(Spelling(d)) + "`");
}

void Emitter::EmitMap(const tile::op::Map& m, ValueId result) {
  // The operands' dtype: select's comes from its second operand (the first is the condition).
  Dtype d = Val(m.args.at(m.fn == "select" ? 1 : 0)).dtype;
  const FlatTv& fr = Flat(Tv(result));
  RowCol ext = Extent(result);
  int rank = static_cast<int>(Val(result).shape.size());
  std::vector<std::vector<llvm::Value*>> args;
  for (ValueId a : m.args) {
    std::vector<llvm::Value*> per(static_cast<std::size_t>(fr.values));
    if (Val(a).space == tile::Space::Scalar) {
      std::fill(per.begin(), per.end(), Scalar(a));
    } else {
      RowCol ae = Extent(a);
      int a_rank = static_cast<int>(Val(a).shape.size());
      for (std::int64_t v = 0; v < fr.values; ++v) {
        int idx = UniformValue(
            a, [&](std::int64_t t) { return BroadcastElement(fr.At(t, v), rank, ae, a_rank); }, "`" + m.fn + "`");
        per[static_cast<std::size_t>(v)] = slots_.at(a.index).regs.at(static_cast<std::size_t>(idx));
      }
    }
    args.push_back(std::move(per));
  }
  (void)ext;
  std::vector<llvm::Value*> out;
  for (std::int64_t v = 0; v < fr.values; ++v) {
    std::vector<llvm::Value*> x;
    for (const auto& a : args) x.push_back(a[static_cast<std::size_t>(v)]);
    out.push_back(Elementwise(m.fn, d, x));
  }
  slots_[result.index].regs = std::move(out);
}

void Emitter::EmitReduce(const tile::op::Reduce& red, ValueId result) {
  ValueId src = red.src;
  Dtype d = Val(src).dtype;
  bool f = IsFloat(d);
  if ((f && d != Dtype::F32 && d != Dtype::F64) || d == Dtype::Bool || Bits(d) < 8)
    Fail("a reduction of `" + std::string(Spelling(d)) + "`");
  // Integers wrap as the interpreter's do; max and min compare signed or unsigned by the dtype.
  int bytes = std::max(4, ElementBytes(d));  // a slot of the scratch memory
  if (Val(src).shape.size() != 2) Fail("a reduction of a tile of rank other than 2");
  const FlatTv& fs = Flat(Tv(src));
  const FlatTv& fd = Flat(Tv(result));
  auto combine = [&](llvm::Value* a, llvm::Value* b) -> llvm::Value* {
    bool s = IsSigned(d);
    if (red.fn == "sum") return f ? b_.CreateFAdd(a, b) : b_.CreateAdd(a, b);
    if (red.fn == "max")
      return b_.CreateBinaryIntrinsic(f   ? llvm::Intrinsic::maximum
                                      : s ? llvm::Intrinsic::smax
                                          : llvm::Intrinsic::umax,
                                      a, b);
    if (red.fn == "min")
      return b_.CreateBinaryIntrinsic(f   ? llvm::Intrinsic::minimum
                                      : s ? llvm::Intrinsic::smin
                                          : llvm::Intrinsic::umin,
                                      a, b);
    Fail("the reduction `" + red.fn + "`");
  };
  // shfl.sync.bfly moves 32 bits: wider values in 32-bit halves, narrower ones widened.
  auto shuffle = [&](llvm::Value* x, int mask) -> llvm::Value* {
    auto bfly = [&](llvm::Value* w) {
      return Intrinsic(llvm::Intrinsic::nvvm_shfl_sync_bfly_i32, {I32(-1), w, I32(mask), I32(31)});
    };
    if (d == Dtype::F32) return Intrinsic(llvm::Intrinsic::nvvm_shfl_sync_bfly_f32, {I32(-1), x, I32(mask), I32(31)});
    if (Bits(d) == 64) {
      auto* halves = llvm::FixedVectorType::get(b_.getInt32Ty(), 2);
      llvm::Value* v = b_.CreateBitCast(x, halves);
      v = b_.CreateInsertElement(v, bfly(b_.CreateExtractElement(v, std::uint64_t{0})), std::uint64_t{0});
      v = b_.CreateInsertElement(v, bfly(b_.CreateExtractElement(v, std::uint64_t{1})), std::uint64_t{1});
      return b_.CreateBitCast(v, x->getType());
    }
    if (Bits(d) == 32) return bfly(x);
    return b_.CreateTrunc(bfly(b_.CreateZExt(x, b_.getInt32Ty())), x->getType());
  };
  // 1. Each thread combines its values row by row: slot k is the k-th row it meets. Which value
  // indices form each slot must be the same in every thread (the rows may differ).
  std::vector<std::vector<std::int64_t>> rows(static_cast<std::size_t>(fs.threads));
  std::vector<int> slot_of_value;  // thread 0's, checked against every thread's
  for (std::int64_t t = 0; t < fs.threads; ++t) {
    std::vector<int> slots;
    std::set<std::int64_t> seen;
    for (std::int64_t v = 0; v < fs.values; ++v) {
      RowCol e = fs.At(t, v);
      if (!seen.insert(e.row + fs.rows * e.col).second) {
        slots.push_back(-1);  // a broadcast copy
        continue;
      }
      auto& r = rows[static_cast<std::size_t>(t)];
      auto it = std::find(r.begin(), r.end(), e.row);
      if (it == r.end()) r.push_back(e.row), it = r.end() - 1;
      slots.push_back(static_cast<int>(it - r.begin()));
    }
    if (t == 0) slot_of_value = slots;
    if (slots != slot_of_value) Fail("`" + red.fn + "` of a tile whose threads hold their rows in different registers");
  }
  // Pairwise, a tree of depth log2 of the values a row: a softmax row's 32 maxima a thread take 5
  // dependent steps, not 31.
  const auto& src_regs = slots_.at(src.index).regs;
  std::vector<std::vector<llvm::Value*>> terms(rows[0].size());
  for (std::size_t v = 0; v < slot_of_value.size(); ++v)
    if (int k = slot_of_value[v]; k >= 0) terms[static_cast<std::size_t>(k)].push_back(src_regs[v]);
  std::vector<llvm::Value*> partial;
  for (std::vector<llvm::Value*>& level : terms) {
    while (level.size() > 1) {
      std::vector<llvm::Value*> next;
      for (std::size_t i = 0; i + 1 < level.size(); i += 2) next.push_back(combine(level[i], level[i + 1]));
      if (level.size() % 2) next.push_back(level.back());
      level = std::move(next);
    }
    partial.push_back(level.at(0));
  }
  // 2. Across the lanes of a warp that hold the same rows: butterfly shuffles.
  for (int mask = 1; mask < 32; mask <<= 1) {
    bool partner = true;
    for (std::int64_t t = 0; t < fs.threads && partner; ++t)
      partner = rows[static_cast<std::size_t>(t)] == rows[static_cast<std::size_t>((t & ~31) | ((t & 31) ^ mask))];
    if (!partner) continue;
    for (auto& p : partial) {
      p = combine(p, shuffle(p, mask));
    }
  }
  // 3. Across warps: the first lane of each warp holding a row writes its partial to scratch shared
  // memory at (row, warp); every thread then combines the partials of the warps holding its rows,
  // in warp order.
  std::map<std::int64_t, std::vector<std::int64_t>> warps_of_row;
  for (std::int64_t t = 0; t < fs.threads; ++t)
    for (std::int64_t r : rows[static_cast<std::size_t>(t)]) {
      auto& ws = warps_of_row[r];
      if (std::find(ws.begin(), ws.end(), t / 32) == ws.end()) ws.push_back(t / 32);
    }
  bool cross = false;
  for (const auto& [r, ws] : warps_of_row) cross |= ws.size() > 1;
  if (cross) {
    std::int64_t warps = fs.threads / 32;
    llvm::Value* scratch = Scratch(fs.rows * warps * bytes);
    llvm::Value* warp = b_.CreateUDiv(tid_, I32(32));
    for (std::size_t k = 0; k < partial.size(); ++k) {
      std::vector<std::int64_t> row(static_cast<std::size_t>(fs.threads)), first(row.size());
      for (std::int64_t t = 0; t < fs.threads; ++t) {
        std::int64_t r = rows[static_cast<std::size_t>(t)][k];
        row[static_cast<std::size_t>(t)] = r;
        bool is_first = true;
        for (std::int64_t u = t & ~31; u < t; ++u) {
          const auto& ru = rows[static_cast<std::size_t>(u)];
          if (std::find(ru.begin(), ru.end(), r) != ru.end()) is_first = false;
        }
        first[static_cast<std::size_t>(t)] = is_first;
      }
      llvm::Value* r = ThreadTable(row);
      llvm::Value* at =
          b_.CreateAdd(scratch, b_.CreateMul(b_.CreateAdd(b_.CreateMul(r, I32(warps)), warp), I32(bytes)));
      StoreIf(b_.CreateICmpNE(ThreadTable(first), I32(0)), partial[k], at);
    }
    Barrier();
    for (std::size_t k = 0; k < partial.size(); ++k) {
      std::size_t count = warps_of_row[rows[0][k]].size();
      std::vector<std::vector<std::int64_t>> warp_i(count,
                                                    std::vector<std::int64_t>(static_cast<std::size_t>(fs.threads)));
      std::vector<std::int64_t> row(static_cast<std::size_t>(fs.threads));
      for (std::int64_t t = 0; t < fs.threads; ++t) {
        std::int64_t rr = rows[static_cast<std::size_t>(t)][k];
        row[static_cast<std::size_t>(t)] = rr;
        const auto& ws = warps_of_row[rr];
        if (ws.size() != count) Fail("`" + red.fn + "` of rows held by different numbers of warps");
        for (std::size_t i = 0; i < count; ++i) warp_i[i][static_cast<std::size_t>(t)] = ws[i];
      }
      llvm::Value* r = ThreadTable(row);
      llvm::Value* acc = nullptr;
      for (std::size_t i = 0; i < count; ++i) {
        llvm::Value* at = b_.CreateAdd(
            scratch, b_.CreateMul(b_.CreateAdd(b_.CreateMul(r, I32(warps)), ThreadTable(warp_i[i])), I32(bytes)));
        llvm::Value* x = b_.CreateAlignedLoad(ElemType(d), b_.CreateGEP(b_.getInt8Ty(), smem_, at),
                                              llvm::Align(static_cast<std::uint64_t>(ElementBytes(d))));
        acc = acc ? combine(acc, x) : x;
      }
      partial[k] = acc;
    }
    Barrier();  // the scratch memory may be reused
  }
  // 4. The result: each value is the slot of the row its layout gives the thread.
  std::vector<llvm::Value*> out;
  for (std::int64_t v = 0; v < fd.values; ++v) {
    int k = -1;
    for (std::int64_t t = 0; t < fd.threads; ++t) {
      const auto& r = rows[static_cast<std::size_t>(t)];
      auto it = std::find(r.begin(), r.end(), fd.At(t, v).row);
      int slot = it == r.end() ? -2 : static_cast<int>(it - r.begin());
      if (slot < 0 || (k >= 0 && slot != k)) Fail("`" + red.fn + "` whose result layout does not match its rows");
      k = slot;
    }
    out.push_back(partial.at(static_cast<std::size_t>(k)));
  }
  slots_[result.index].regs = std::move(out);
}

}  // namespace weft::codegen::device_emit
