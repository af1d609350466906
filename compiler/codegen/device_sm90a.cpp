// The device emitter's sm_90a half (device_emitter.h): TMA copies and their tensor maps,
// mbarriers, wgmma and its shared-memory descriptors.
#include "codegen/device_emitter.h"

namespace weft::codegen {

std::vector<MapDim> InPlaceMapDims(const std::vector<std::vector<std::int64_t>>& inner) {
  const int rank = static_cast<int>(inner.size());
  auto modes = [&](int axis) { return static_cast<int>(inner[static_cast<std::size_t>(axis)].size()) + 1; };
  std::vector<MapDim> dims = {{rank - 1, modes(rank - 1) - 1}, {rank - 2, 0}};
  for (int mode = modes(rank - 1) - 2; mode >= 0; --mode) dims.push_back({rank - 1, mode});
  for (int axis = rank - 3; axis >= 0; --axis)
    for (int mode = modes(axis) - 1; mode >= 0; --mode) dims.push_back({axis, mode});
  return dims;
}

namespace device_emit {

void Emitter::FindTensorMaps() {
  int stages = 0;
  for (std::uint32_t i = 0; i < k_.ops.size(); ++i) {
    OpId id{i};
    const auto* copy = std::get_if<tile::op::ToShared>(&k_.Get(id).node);
    if (!copy || !synth::IsTma(plan_.ops.at(i).instruction.kind)) continue;
    stages = std::max(stages, plan_.values.at(k_.Get(id).results.at(0).index).stages);
    TensorMapIndex(id, *copy);
  }
  mbarriers_ = map_specs_.empty() ? 0 : stages + 1;  // one per slot of a ring, and one for copies in place
  for (OpId id : k_.body)
    if (const auto* store = std::get_if<tile::op::Store>(&k_.Get(id).node))
      if (auto spec = TmaStoreSpec(id, *store)) store_maps_[id.index] = AddTensorMap(*spec);
}

int Emitter::TensorMapIndex(OpId id, const tile::op::ToShared& s) {
  const synth::OpChoice& choice = plan_.ops.at(id.index);
  span_ = k_.Get(id).span;
  if (!choice.tma || choice.tma->box_dims.size() != 2) Fail("a TMA copy without a 2-D box");
  int param = ParamOf(s.src);
  if (param < 0) Fail("a TMA copy of " + Name(s.src) + ", which is not a parameter or a view of one");
  TensorMapSpec spec{param, choice.tma->box_dims[0], choice.tma->box_dims[1], choice.tma->swizzle};
  const tile::Param& p = k_.params[static_cast<std::size_t>(param)];
  if (p.in_place) {
    const std::size_t rank = Val(p.value).shape.size();
    if (rank < 2 || p.in_place->inner.size() != rank || !p.in_place->inner[rank - 2].empty())
      Fail("a TMA copy of " + Name(s.src) + ", read in place through a view whose modes do not fit its rank " +
           std::to_string(rank));
    spec.rank = static_cast<int>(InPlaceMapDims(p.in_place->inner).size());
    if (spec.rank > 5)
      Fail("a TMA copy of " + Name(s.src) + ", read in place through a view of " + std::to_string(spec.rank) +
           " dims (at most 5)");
    const std::vector<std::int64_t>& last = p.in_place->inner.back();
    if (!last.empty() && last.back() % spec.box_cols != 0)
      Fail("a TMA copy of " + Name(s.src) + ": its box of " + std::to_string(spec.box_cols) +
           " columns straddles the view's modes of " + std::to_string(last.back()));
  }
  return AddTensorMap(spec);
}

int Emitter::ParamOf(ValueId value) {
  if (const tile::Value& v = Val(value); v.def.valid()) {
    const auto* view = std::get_if<tile::op::View>(&k_.Get(v.def).node);
    if (!view) return -1;
    value = view->tensor;
  }
  for (std::size_t p = 0; p < k_.params.size(); ++p)
    if (k_.params[p].value == value) return static_cast<int>(p);
  return -1;
}

std::pair<llvm::Value*, llvm::Value*> Emitter::MapCoordinates(const GlobalSlot& g) {
  std::size_t q = g.first.size();
  llvm::Value* flat = g.first[0];
  for (std::size_t i = 1; i + 1 < q; ++i) flat = b_.CreateAdd(b_.CreateMul(flat, g.extents[i]), g.first[i]);
  return {b_.CreateTrunc(g.first[q - 1], b_.getInt32Ty()), b_.CreateTrunc(flat, b_.getInt32Ty())};
}

int Emitter::AddTensorMap(const TensorMapSpec& spec) {
  for (std::size_t i = 0; i < map_specs_.size(); ++i) {
    if (map_specs_[i] == spec) return static_cast<int>(i);
  }
  map_specs_.push_back(spec);
  return static_cast<int>(map_specs_.size() - 1);
}

llvm::Value* Emitter::Mbarrier(llvm::Value* index) {
  llvm::Value* offset = b_.CreateAdd(I32(MbarrierOffset()), b_.CreateMul(index, I32(8)));
  return b_.CreateGEP(b_.getInt8Ty(), smem_, offset);
}

llvm::Value* Emitter::SharedAddress(llvm::Value* ptr) {
  return b_.CreateTrunc(b_.CreatePtrToInt(ptr, b_.getInt64Ty()), b_.getInt32Ty());
}

void Emitter::IfThread0(llvm::Value* also, const std::function<void()>& then) {
  llvm::Value* condition = leader_ ? leader_ : b_.CreateICmpEQ(tid_, I32(0));
  if (also) condition = b_.CreateAnd(condition, also);
  llvm::BasicBlock* body = llvm::BasicBlock::Create(ctx_, "thread0", fn_);
  llvm::BasicBlock* join = llvm::BasicBlock::Create(ctx_, "all", fn_);
  b_.CreateCondBr(condition, body, join);
  b_.SetInsertPoint(body);
  then();
  b_.CreateBr(join);
  b_.SetInsertPoint(join);
}

void Emitter::WaitMbarrier(llvm::Value* bar, llvm::Value* parity) {
  llvm::BasicBlock* wait = llvm::BasicBlock::Create(ctx_, "wait", fn_);
  llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx_, "landed", fn_);
  llvm::Value* address = SharedAddress(bar);
  b_.CreateBr(wait);
  b_.SetInsertPoint(wait);
  b_.CreateCondBr(hopper::MbarrierTryWait(b_, address, parity), done, wait);
  b_.SetInsertPoint(done);
}

std::int64_t Emitter::TmaBytes(OpId id, ValueId dst) {
  const layout::TmaBox& box = *plan_.ops.at(id.index).tma;
  RowCol ext = Extent(dst);
  std::int64_t boxes = (ext.row / box.box_dims[1]) * (ext.col / box.box_dims[0]);
  return boxes * box.box_dims[0] * box.box_dims[1] * ElementBytes(Val(dst).dtype);
}

std::int64_t Emitter::LinearOffset(ValueId shared, RowCol e) {
  const auto& choice = plan_.values.at(shared.index);
  if (!choice.shared) Fail("the plan gives shared tile " + Name(shared) + " no layout");
  const layout::SwizzledLayout& l = *choice.shared;
  if (l.layout().rank() == 2) {
    auto o = l.layout().Evaluate(layout::IntTuple::Tuple({e.row, e.col}));
    if (!o) Fail("the shared layout of " + Name(shared) + " cannot place an element: " + o.error());
    return l.offset() + *o;
  }
  return l.offset() + l.layout()(e.row + Extent(shared).row * e.col);
}

// The simulator's TMA copy (sim/executor.cpp): box (r0, c0) of the tile lands at the linear offset
// of its first element; its coordinates in the 2-D map (leading axes flattened into rows) are the
// view's first element's column and flattened row plus (c0, r0).
void Emitter::EmitTma(OpId id, const tile::op::ToShared& s, ValueId dst, llvm::Value* base, llvm::Value* bar,
                      llvm::Value* live) {
  const auto& src = slots_.at(s.src.index).global;
  if (!src || src->param < 0) Fail("`shared` of " + Name(s.src) + ", which is not a view of a parameter");
  if (Val(dst).shape.size() != 2) Fail("a TMA copy into a shared tile of rank other than 2");
  const layout::TmaBox& box = *plan_.ops.at(id.index).tma;
  int map = TensorMapIndex(id, s);
  int e = ElementBytes(Val(dst).dtype);
  RowCol ext = Extent(dst);
  if (src->first.size() < 2) Fail("a TMA copy of a tensor of rank " + std::to_string(src->first.size()));
  llvm::Value* smem = SharedAddress(smem_);
  llvm::Value* bar_address = SharedAddress(bar);
  if (src->in_place) {
    // Read in place: one coordinate per dim of the view's map, an axis's index split over its
    // modes (a box never straddles one: TensorMapIndex).
    const int q = static_cast<int>(src->first.size());
    const std::vector<MapDim> dims = InPlaceMapDims(src->in_place->inner);
    IfThread0(live, [&] {
      for (std::int64_t r0 = 0; r0 < ext.row; r0 += box.box_dims[1])
        for (std::int64_t c0 = 0; c0 < ext.col; c0 += box.box_dims[0]) {
          llvm::Value* at = b_.CreateAdd(smem, b_.CreateAdd(base, I32(LinearOffset(dst, {r0, c0}) * e)));
          std::vector<llvm::Value*> coords;
          for (const MapDim& d : dims) {
            llvm::Value* x = src->first[static_cast<std::size_t>(d.axis)];
            if (d.axis == q - 1) x = b_.CreateAdd(x, I64(c0));
            if (d.axis == q - 2) x = b_.CreateAdd(x, I64(r0));
            coords.push_back(MapCoordinate(x, d, src->in_place->inner[static_cast<std::size_t>(d.axis)]));
          }
          hopper::TmaLoad(b_, at, maps_.at(static_cast<std::size_t>(map)), coords, bar_address);
        }
    });
    return;
  }
  auto [col, row] = MapCoordinates(*src);
  IfThread0(live, [&] {
    for (std::int64_t r0 = 0; r0 < ext.row; r0 += box.box_dims[1])
      for (std::int64_t c0 = 0; c0 < ext.col; c0 += box.box_dims[0]) {
        llvm::Value* at = b_.CreateAdd(smem, b_.CreateAdd(base, I32(LinearOffset(dst, {r0, c0}) * e)));
        hopper::TmaLoad2d(b_, at, maps_.at(static_cast<std::size_t>(map)), b_.CreateAdd(col, I32(c0)),
                          b_.CreateAdd(row, I32(r0)), bar_address);
      }
  });
}

// A wgmma descriptor for the shared tile `shared` (A: M x K; B: K x N, read as N x K) at (mn0, k0),
// as the simulator builds it: the first canonical mode and major-ness whose strides the tile's
// layout has, with the start address of the element's unswizzled offset.
llvm::Value* Emitter::Descriptor(ValueId shared, bool is_b, const std::vector<std::int64_t>& mn0, std::int64_t k0,
                                 bool& mn_major, bool dry) {
  const auto& choice = plan_.values.at(shared.index);
  if (!choice.shared) Fail("the plan gives shared tile " + Name(shared) + " no layout");
  const layout::SwizzledLayout& l = *choice.shared;
  if (l.layout().rank() != 2) Fail("the shared layout of " + Name(shared) + " is not rank 2");
  layout::Layout mnk = l.layout();
  if (is_b)
    mnk = layout::Layout(layout::IntTuple::Tuple({l.layout().shape()[1], l.layout().shape()[0]}),
                         layout::IntTuple::Tuple({l.layout().stride()[1], l.layout().stride()[0]}));
  llvm::Value* base = slots_.at(shared.index).shared;
  if (!base && !dry) Fail(Name(shared) + " is not in shared memory");
  for (auto mode :
       {layout::SwizzleMode::k128B, layout::SwizzleMode::k64B, layout::SwizzleMode::k32B, layout::SwizzleMode::kNone}) {
    layout::Swizzle sw = l.swizzle();
    if (sw.bits() == 0) sw = *layout::SwizzleFor(layout::SwizzleMode::kNone, 2);
    layout::SwizzledLayout view(sw, l.offset(), mnk);
    for (auto major : {layout::Major::kK, layout::Major::kMN}) {
      auto d = layout::GmmaDescriptorFor(view, mode, major, 2);
      if (!d) continue;
      mn_major = major == layout::Major::kMN;
      if (dry) return nullptr;
      llvm::Value* offset = nullptr;
      llvm::Value* group = b_.CreateUDiv(tid_, I32(128));
      for (std::size_t g = mn0.size(); g-- > 0;) {
        RowCol at = is_b ? RowCol{k0, mn0[g]} : RowCol{mn0[g], k0};
        llvm::Value* here = I32(LinearOffset(shared, at) * 2);
        offset =
            offset ? b_.CreateSelect(b_.CreateICmpEQ(group, I32(static_cast<std::int64_t>(g))), here, offset) : here;
      }
      llvm::Value* start = b_.CreateAdd(SharedAddress(smem_), b_.CreateAdd(base, offset));
      llvm::Value* field = b_.CreateZExt(b_.CreateAnd(b_.CreateLShr(start, I32(4)), I32(0x3FFF)), b_.getInt64Ty());
      return b_.CreateOr(b_.getInt64(d->Encode(0)), field);
    }
  }
  Fail("the shared layout `" + layout::ToString(l) + "` of " + Name(shared) +
       " is not a canonical wgmma layout: no matrix descriptor describes it");
}

// wgmma over the plan's warpgroup tiling: per warpgroup, its 64 x n atoms, each accumulating the
// K / 16 steps; A and B from shared memory through descriptors (A from registers in the atom's A
// fragment when the plan keeps it there); one fence before, one commit and a wait for all after.
// Two 16-bit values in one i32 register, `lo` in the low half. Where both were just rounded from f32
// (a `cast` before a product), one vector conversion rounds and packs them (cvt.rn.bf16x2.f32).
llvm::Value* Emitter::Pack(llvm::Value* lo, llvm::Value* hi) {
  auto* l = llvm::dyn_cast<llvm::FPTruncInst>(lo);
  auto* h = llvm::dyn_cast<llvm::FPTruncInst>(hi);
  if (l && h && l->getType() == h->getType() && l->getSrcTy()->isFloatTy() && h->getSrcTy()->isFloatTy())
    return hopper::PackRound(b_, l->getOperand(0), h->getOperand(0), l->getType()->isBFloatTy());
  llvm::Value* lw = b_.CreateZExt(b_.CreateBitCast(lo, b_.getInt16Ty()), b_.getInt32Ty());
  llvm::Value* hw = b_.CreateZExt(b_.CreateBitCast(hi, b_.getInt16Ty()), b_.getInt32Ty());
  return b_.CreateOr(lw, b_.CreateShl(hw, I32(16)));
}

Emitter::WgmmaSteps Emitter::PrepareWgmma(OpId id, const tile::Op& op, const tile::op::Mma& m, bool dry) {
  const synth::OpChoice& choice = plan_.ops.at(id.index);
  ValueId result = op.results.at(0);
  const layout::Atom* atom = &AtomNamed(synth::Spelling(choice.instruction));
  WgmmaSteps out;
  int n = out.n = atom->n;
  bool bf16 = out.bf16 = Val(m.b).dtype == Dtype::BF16;
  if (!bf16 && Val(m.b).dtype != Dtype::F16) Fail("wgmma of `" + std::string(Spelling(Val(m.b).dtype)) + "`");
  RowCol c_ext = Extent(result);
  std::int64_t M = c_ext.row, N = c_ext.col, K = Extent(m.a).col;
  int groups = choice.warps_m * choice.warps_n;
  std::int64_t gm = M / choice.warps_m, gn = N / choice.warps_n;
  if (groups * 128 > plan_.threads || gm % 64 || gn % n || K % 16) Fail("a warpgroup tiling that is not whole atoms");
  auto shared_of = [&](ValueId v) -> std::optional<ValueId> {
    if (Val(v).space == tile::Space::Shared) return v;
    if (dry) return WgmmaReadsShared(v);
    return slots_.at(v.index).shared_alias;
  };
  std::optional<ValueId> sa = shared_of(m.a), sb = shared_of(m.b);
  if (!sb) Fail("wgmma reads B from shared memory, but the plan loads " + Name(m.b) + " into registers");
  const std::vector<llvm::Value*>* ra = nullptr;
  if (!sa && !dry) {
    ra = &slots_.at(m.a.index).regs;
    if (ra->empty()) Fail("an mma operand that is neither in shared memory nor in registers");
  }
  out.a_shared = sa.has_value();
  // Shared operands written by threads (not TMA) become visible to wgmma's async proxy.
  for (auto s : {sa, sb}) {
    if (!s || dry) continue;
    ValueId tile = *s;
    if (const tile::Value& v = Val(tile); v.def.valid())
      if (const auto* t = std::get_if<tile::op::Transpose>(&k_.Get(v.def).node)) tile = t->src;
    const tile::Value& v = Val(tile);
    if (v.def.valid() && !synth::IsTma(plan_.ops.at(v.def.index).instruction.kind)) {
      hopper::FenceProxyAsync(b_);
      break;
    }
  }
  if (!dry) out.acc = SameLayoutRegs(m.acc, result, "`mma`");
  // A product into `zeros`: the first k-step writes D = A * B (scale-d 0), no registers zeroed.
  if (const tile::Value& v = Val(m.acc); v.def.valid())
    if (const auto* fill = std::get_if<tile::op::Fill>(&k_.Get(v.def).node))
      if (const tile::Value& f = Val(fill->value); f.def.valid())
        if (const auto* c = std::get_if<tile::op::Constant>(&k_.Get(f.def).node))
          out.zero = std::visit([](auto x) { return x == decltype(x){}; }, c->value);
  // Each warpgroup's top-left element of the accumulator.
  const FlatTv& fr = Flat(Tv(result));
  std::vector<RowCol> origins;
  for (int g = 0; g < groups; ++g) {
    RowCol o{fr.rows, Tv(result).cols};
    for (std::int64_t t = g * 128; t < (g + 1) * 128; ++t)
      for (std::int64_t v = 0; v < fr.values; ++v) {
        RowCol e = fr.At(t, v);
        o.row = std::min(o.row, e.row);
        o.col = std::min(o.col, e.col);
      }
    origins.push_back(o);
  }
  auto origin = [&](std::int64_t t) {
    return origins[static_cast<std::size_t>(std::min<std::int64_t>(t / 128, groups - 1))];
  };
  const FlatTv& fa = Flat(atom->Operand("A")->tv);
  const FlatTv& fc = Flat(atom->Operand("C")->tv);
  std::string what = "`" + synth::Spelling(choice.instruction) + "`";
  out.k_steps = K / 16;
  for (std::int64_t am = 0; am < gm / 64; ++am)
    for (std::int64_t an = 0; an < gn / n; ++an) {
      // Every warpgroup runs the same atoms at its own origin: the thread's registers are the same.
      std::vector<int>& c_index = out.c_index.emplace_back(static_cast<std::size_t>(n / 2));
      for (int i = 0; i < n / 2; ++i)
        c_index[static_cast<std::size_t>(i)] = UniformValue(
            result,
            [&, i](std::int64_t t) {
              RowCol o = origin(t), e = fc.At(t % 128, i);
              return RowCol{o.row + 64 * am + e.row, o.col + n * an + e.col};
            },
            what);
      // Each warpgroup's operand tiles start at its own origin.
      std::vector<std::int64_t> m0, n0;
      for (const RowCol& o : origins) {
        m0.push_back(o.row + 64 * am);
        n0.push_back(o.col + n * an);
      }
      for (std::int64_t k0 = 0; k0 < K; k0 += 16) {
        bool b_mn = false, a_mn = false;
        llvm::Value* bd = Descriptor(*sb, true, n0, k0, b_mn, dry);
        if (sa) {
          llvm::Value* ad = Descriptor(*sa, false, m0, k0, a_mn, dry);
          if (!dry) out.operands.push_back(ad);
        } else if (!dry) {
          llvm::Value* a[8];
          for (int i = 0; i < 8; ++i) {
            int idx = UniformValue(
                m.a,
                [&, i](std::int64_t t) {
                  RowCol e = fa.At(t % 128, i);
                  return RowCol{origin(t).row + 64 * am + e.row, k0 + e.col};
                },
                what);
            a[i] = (*ra)[static_cast<std::size_t>(idx)];
          }
          for (int i = 0; i < 8; i += 2) out.operands.push_back(Pack(a[i], a[i + 1]));
        }
        if (!dry) out.operands.push_back(bd);
        out.a_mn.push_back(a_mn);
        out.b_mn.push_back(b_mn);
      }
    }
  return out;
}

std::vector<llvm::Value*> Emitter::IssueWgmma(const WgmmaSteps& s, std::vector<llvm::Value*> acc,
                                              const std::vector<llvm::Value*>& operands) {
  std::size_t next = 0, step = 0;
  for (const std::vector<int>& c_index : s.c_index) {
    std::vector<llvm::Value*> c;
    for (int i : c_index) c.push_back(acc[static_cast<std::size_t>(i)]);
    for (std::int64_t k = 0; k < s.k_steps; ++k, ++step) {
      llvm::Value* ad = nullptr;
      std::vector<llvm::Value*> a_regs;
      if (s.a_shared)
        ad = operands[next++];
      else
        for (int i = 0; i < 4; ++i) a_regs.push_back(operands[next++]);
      llvm::Value* bd = operands[next++];
      c = hopper::Wgmma(b_, s.n, s.bf16, c, ad, a_regs, bd, s.a_mn[step], s.b_mn[step], !(s.zero && k == 0));
    }
    for (std::size_t i = 0; i < c_index.size(); ++i) acc[static_cast<std::size_t>(c_index[i])] = c[i];
  }
  return acc;
}

// wgmma over the plan's warpgroup tiling (PrepareWgmma, IssueWgmma): one fence before, one commit
// and a wait for all after. A staged product (Staged) is only prepared here, and issued in the next
// iteration right after that iteration's first waited product (StageFlush).
void Emitter::EmitWgmma(OpId id, const tile::Op& op, const tile::op::Mma& m) {
  ValueId result = op.results.at(0);
  WgmmaSteps s = PrepareWgmma(id, op, m);
  if (staged_ && staged_->mma == id) {  // issued in the next iteration (Staged)
    staged_->next_acc = s.acc;
    staged_->next_operands = s.operands;
    return;
  }
  if (s.zero)
    for (auto& x : s.acc) x = llvm::UndefValue::get(x->getType());
  // Ping-pong: wait for this warpgroup's turn at the tensor cores (named barrier 2 + its index).
  bool turn = turns_ && !deferred_wgmma_.count(id.index);
  llvm::Value* group = turn ? b_.CreateLShr(tid_, I32(7)) : nullptr;
  if (turn) Intrinsic(llvm::Intrinsic::nvvm_barrier_sync_cnt, {b_.CreateAdd(I32(2), group), I32(plan_.threads)});
  hopper::WgmmaFence(b_);
  std::vector<llvm::Value*> acc = IssueWgmma(s, s.acc, s.operands);
  hopper::WgmmaCommit(b_);
  // The previous iteration's staged product runs behind this one (and the vector work after it).
  bool flushed = staged_ && staged_->in_body && !staged_->issued;
  if (flushed) StageFlush();
  // The products are issued: the other warpgroup's turn. No branch between the products and their
  // wait (ptxas serializes wgmma around a divergent path); consumer 1's last hand-over is taken by
  // consumer 0 after the loop.
  if (turn) hopper::BarArrive(b_, b_.CreateSub(I32(3), group), I32(plan_.threads));
  if (deferred_wgmma_.count(id.index)) {
    hopper::WgmmaWait(b_, 1);  // the previous iteration's products are done, these may run on
    slots_[result.index].regs = std::move(acc);
    return;
  }
  hopper::WgmmaWait(b_, flushed ? 1 : 0);
  slots_[result.index].regs = hopper::FenceOperands(b_, acc);
}

std::optional<ValueId> Emitter::WgmmaReadsShared(ValueId v) const {
  if (Val(v).space == tile::Space::Shared) return v;
  const tile::Value& value = Val(v);
  if (!value.def.valid()) return std::nullopt;
  const auto* r = std::get_if<tile::op::ToRegs>(&k_.Get(value.def).node);
  if (!r) return std::nullopt;
  if (plan_.ops.at(value.def.index).instruction.kind == InstructionKind::kNone || !plan_.values.at(v.index).regs)
    return r->src;
  return std::nullopt;
}

}  // namespace device_emit
}  // namespace weft::codegen
