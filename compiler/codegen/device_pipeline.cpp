// The device emitter's loops (device_emitter.h): the rings, the sm_80 operand ring, staged products,
// masks folded for whole iterations, the body unswitched on a flag, and warp specialization, each
// as the schedule's lowering (schedule/lowering.h) says; decided there, not here.
#include "codegen/device_emitter.h"

namespace weft::codegen::device_emit {

llvm::Value* Emitter::Fresh(ValueId v, const std::set<std::uint32_t>& body, int depth) {
  const tile::Value& value = Val(v);
  if (depth > 32 || value.space != tile::Space::Scalar) return nullptr;
  if (!value.def.valid() || !body.count(value.def.index)) return slots_.at(v.index).scalar;
  const tile::Op& def = k_.Get(value.def);
  const auto* s = std::get_if<tile::op::ScalarOp>(&def.node);
  if (!s && !std::holds_alternative<tile::op::Constant>(def.node)) return nullptr;
  if (s)
    for (ValueId a : s->args)
      if (!Fresh(a, body, depth + 1)) return nullptr;
  EmitOp(value.def);
  return slots_.at(v.index).scalar;
}

std::optional<std::pair<llvm::Value*, llvm::Value*>> Emitter::IntBounds(ValueId v, const std::set<std::uint32_t>& body,
                                                                        int depth) {
  const tile::Value& value = Val(v);
  if (depth > 32 || IsFloat(value.dtype) || value.dtype == Dtype::Bool) return std::nullopt;
  auto wide = [&](llvm::Value* x) { return b_.CreateSExtOrTrunc(x, b_.getInt64Ty()); };
  if (value.space == tile::Space::Scalar) {
    llvm::Value* x = Fresh(v, body, depth + 1);
    if (!x) return std::nullopt;
    return std::pair{wide(x), wide(x)};
  }
  if (value.space != tile::Space::Reg || !value.def.valid()) return std::nullopt;
  const tile::Op& def = k_.Get(value.def);
  if (const auto* iota = std::get_if<tile::op::Iota>(&def.node)) return std::pair{I64(0), I64(iota->n - 1)};
  if (const auto* e = std::get_if<tile::op::Expand>(&def.node)) return IntBounds(e->src, body, depth + 1);
  if (const auto* f = std::get_if<tile::op::Fill>(&def.node)) return IntBounds(f->value, body, depth + 1);
  const auto* m = std::get_if<tile::op::Map>(&def.node);
  if (!m || m->args.size() != 2) return std::nullopt;
  auto a = IntBounds(m->args[0], body, depth + 1);
  auto b = a ? IntBounds(m->args[1], body, depth + 1) : std::nullopt;
  if (!b) return std::nullopt;
  if (m->fn == "+") return std::pair{b_.CreateAdd(a->first, b->first), b_.CreateAdd(a->second, b->second)};
  if (m->fn == "-") return std::pair{b_.CreateSub(a->first, b->second), b_.CreateSub(a->second, b->first)};
  if (m->fn == "*") {
    llvm::Value* p[4] = {b_.CreateMul(a->first, b->first), b_.CreateMul(a->first, b->second),
                         b_.CreateMul(a->second, b->first), b_.CreateMul(a->second, b->second)};
    llvm::Value *lo = p[0], *hi = p[0];
    for (int i = 1; i < 4; ++i) {
      lo = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, lo, p[i]);
      hi = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, hi, p[i]);
    }
    return std::pair{lo, hi};
  }
  return std::nullopt;
}

llvm::Value* Emitter::AllTrue(ValueId v, const std::set<std::uint32_t>& body, int depth) {
  const tile::Value& value = Val(v);
  if (depth > 32 || value.dtype != Dtype::Bool) return nullptr;
  if (value.space == tile::Space::Scalar) return Fresh(v, body, depth + 1);
  if (value.space != tile::Space::Reg || !value.def.valid()) return nullptr;
  const auto* m = std::get_if<tile::op::Map>(&k_.Get(value.def).node);
  if (!m || m->args.size() != 2) return nullptr;
  if (m->fn == "||" || m->fn == "&&") {
    llvm::Value* a = AllTrue(m->args[0], body, depth + 1);
    llvm::Value* b = AllTrue(m->args[1], body, depth + 1);
    if (m->fn == "&&") return a && b ? b_.CreateAnd(a, b) : nullptr;
    for (llvm::Value* x : {a, b})
      if (auto* k = llvm::dyn_cast_or_null<llvm::ConstantInt>(x); k && k->isOne()) return k;
    if (!a || !b) return a ? a : b;
    return b_.CreateOr(a, b);
  }
  static const std::map<std::string, llvm::CmpInst::Predicate> compares = {{"<=", llvm::CmpInst::ICMP_SLE},
                                                                           {"<", llvm::CmpInst::ICMP_SLT},
                                                                           {">=", llvm::CmpInst::ICMP_SGE},
                                                                           {">", llvm::CmpInst::ICMP_SGT}};
  auto c = compares.find(m->fn);
  if (c == compares.end()) return nullptr;
  auto a = IntBounds(m->args[0], body, depth + 1);
  auto b = a ? IntBounds(m->args[1], body, depth + 1) : std::nullopt;
  if (!b) return nullptr;
  bool less = c->second == llvm::CmpInst::ICMP_SLE || c->second == llvm::CmpInst::ICMP_SLT;
  // Every a <= b: the largest a against the smallest b (and the other way for >=).
  return less ? b_.CreateICmp(c->second, a->second, b->first) : b_.CreateICmp(c->second, a->first, b->second);
}

void Emitter::StageFlush() {
  Staged& s = *staged_;
  const tile::Op& op = k_.Get(s.mma);
  ValueId y = op.results.at(0), c = std::get<tile::op::Loop>(k_.Get(specialized_->loop).node).carried.at(s.carried);
  slots_[y.index].regs = IssueWgmma(s.shape, s.acc, s.operands);
  hopper::WgmmaCommit(b_);
  slots_[c.index].regs = SameLayoutRegs(y, c, "the staged product");
  s.issued = s.pending = true;
}

void Emitter::StageWait() {
  Staged& s = *staged_;
  ValueId c = std::get<tile::op::Loop>(k_.Get(specialized_->loop).node).carried.at(s.carried);
  hopper::WgmmaWait(b_, 0);
  // A's registers stay live up to the wait (the product reads them as it runs).
  std::vector<llvm::Value*> both = slots_[c.index].regs;
  std::size_t n = both.size();
  for (llvm::Value* x : s.operands)
    if (x->getType()->isIntegerTy(32)) both.push_back(x);
  both = hopper::FenceOperands(b_, both);
  slots_[c.index].regs.assign(both.begin(), both.begin() + static_cast<std::ptrdiff_t>(n));
  s.pending = false;
}

void Emitter::EmitLoop(OpId loop_id, const tile::Op& op, const tile::op::Loop& loop) {
  // A pipelined loop's ring (schedule::Ring): its copies, issued `stages - 1` iterations ahead
  // (cp.async groups: a prologue, then one group per iteration, waiting for the oldest). TMA copies
  // complete on one mbarrier per slot (0 .. stages - 1), which thread 0 arms with the iteration's
  // bytes; iteration `it` waits on slot it % stages for phase (it / stages) & 1.
  static const schedule::Ring kNoRing;
  const schedule::Ring* found = lowering_.RingOf(loop_id);
  LoopEmission l(op, loop, found ? *found : kNoRing);
  l.bound = Scalar(loop.bound);
  for (OpId id : l.ring.copies) l.copy_ops.insert(id.index);
  StartLoop(l);
  OpenLoop(l);
  if (l.ring.stages && l.ring.tma) {
    EmitTmaIteration(l);
  } else if (l.ring.mma) {
    EmitMmaRingIteration(l);
  } else if (l.ring.stages) {
    EmitCpAsyncIteration(l);
  } else {
    slots_[loop.counter.index].scalar = l.counter;
    EmitBlock(loop.body);
  }
  CloseLoop(l);
}

// The ring's copies of `iteration` into its slot (where it < the bound); on sm_80 only part `part`
// of `parts` of each copy's vectors, and a commit of the cp.async group unless told not to.
void Emitter::IssueCopies(LoopEmission& l, llvm::Value* iteration, int part, int parts, bool commit) {
  const tile::op::Loop& loop = l.loop;
  const std::vector<OpId>& copies = l.ring.copies;
  int stages = l.ring.stages;
  bool tma = l.ring.tma;
  std::int64_t tma_bytes = l.ring.tma_bytes;
  llvm::Value* bound = l.bound;
  slots_[loop.counter.index].scalar = iteration;
  llvm::Value* slot = b_.CreateURem(iteration, I64(stages));
  Prefetch p{slot, b_.CreateICmpSLT(iteration, bound)};
  p.part = part;
  p.parts = parts;
  if (tma) {
    p.bar = Mbarrier(b_.CreateTrunc(slot, b_.getInt32Ty()));
    IfThread0(p.live, [&] { hopper::MbarrierArriveExpectTx(b_, SharedAddress(p.bar), I32(tma_bytes)); });
  }
  for (OpId id : copies) {
    const tile::Op& c = k_.Get(id);
    span_ = c.span;
    if (const auto* copy = std::get_if<tile::op::ToShared>(&c.node))
      EmitToShared(id, c, *copy, &p);
    else
      EmitOp(id);
  }
  if (!tma && commit) Intrinsic(llvm::Intrinsic::nvvm_cp_async_commit_group, {});
}

// The ring's shared tiles, and transposed views of them, at `slot`.
void Emitter::SetRingSlot(LoopEmission& l, llvm::Value* slot) {
  const tile::op::Loop& loop = l.loop;
  for (std::uint32_t t : l.ring_tiles) slots_[t].shared = SharedBase(ValueId{t}, slot);
  for (OpId id : loop.body)
    if (const auto* t = std::get_if<tile::op::Transpose>(&k_.Get(id).node))
      if (l.ring_tiles.count(t->src.index)) slots_[k_.Get(id).results.at(0).index].shared = slots_[t->src.index].shared;
}

// Before the loop: the mbarriers, the prologue's copies, the operand ring's first slice, the first
// turn of ping-pong, the staged product's first operands.
void Emitter::StartLoop(LoopEmission& l) {
  const tile::op::Loop& loop = l.loop;
  const std::vector<OpId>& copies = l.ring.copies;
  int stages = l.ring.stages;
  bool tma = l.ring.tma;
  llvm::Value* bound = l.bound;
  // The consumers of a warp-specialized loop: the producer (EmitProducer) issues every copy.
  bool consumer = l.consumer = specialized_ && &k_.Get(specialized_->loop) == &l.op;
  std::optional<OpId> ring_mma = l.ring.mma;
  MmaRing& ring = l.mma_ring;
  std::int64_t& ring_slices = l.ring_slices;
  if (consumer) ring_used_ = b_.CreateSelect(b_.CreateICmpSGT(bound, I64(0)), bound, I64(0));
  if (tma && !consumer) {
    Barrier();  // the mbarriers' memory is no longer in use
    IfThread0(nullptr, [&] {
      for (int s = 0; s < stages; ++s)
        Intrinsic(llvm::Intrinsic::nvvm_mbarrier_init_shared, {Mbarrier(I32(s)), I32(1)});
      hopper::FenceMbarrierInit(b_);
    });
    Barrier();
  }
  if (!consumer)
    for (int s = 0; s + 1 < stages; ++s) IssueCopies(l, I64(s));
  // A gemm's ring (MmaRing): the mma's operands are loaded a slice ahead, slice 0 of iteration 0
  // before the loop, once it has landed.
  for (OpId id : copies)
    if (std::holds_alternative<tile::op::ToShared>(k_.Get(id).node))
      l.ring_tiles.insert(k_.Get(id).results.at(0).index);
  if (ring_mma) {
    const auto& m = std::get<tile::op::Mma>(k_.Get(*ring_mma).node);
    ring_slices = Extent(m.a).col / 16;
    Intrinsic(llvm::Intrinsic::nvvm_cp_async_wait_group, {I32(stages - 2)});
    Barrier();
    SetRingSlot(l, I64(0));
    for (OpId id : loop.body) {
      const tile::Op& body_op = k_.Get(id);
      if (std::holds_alternative<tile::op::Transpose>(body_op.node) ||
          std::holds_alternative<tile::op::ToRegs>(body_op.node))
        EmitOp(id);
    }
    ring.mma = *ring_mma;
    ring.a0.assign(static_cast<std::size_t>(Flat(Tv(m.a)).values), nullptr);
    ring.b0.assign(static_cast<std::size_t>(Flat(Tv(m.b)).values), nullptr);
    LoadSlice(m.a, ring.a0, 0, ring_slices);
    LoadSlice(m.b, ring.b0, 0, ring_slices);
  }
  if (consumer && specialized_->ping_pong) {
    // Consumer 0 goes first: consumer 1 hands it the first turn.
    llvm::BasicBlock* first = llvm::BasicBlock::Create(ctx_, "first.turn", fn_);
    llvm::BasicBlock* go = llvm::BasicBlock::Create(ctx_, "go", fn_);
    b_.CreateCondBr(b_.CreateICmpEQ(b_.CreateLShr(tid_, I32(7)), I32(1)), first, go);
    b_.SetInsertPoint(first);
    hopper::BarArrive(b_, I32(2), I32(plan_.threads));
    b_.CreateBr(go);
    b_.SetInsertPoint(go);
  }
  // A staged product (Staged): its shape, and the operands of a product that adds nothing for the
  // first iteration to issue.
  staged_.reset();
  if (consumer && specialized_->staged) {
    Staged st;
    st.mma = specialized_->staged->first;
    st.carried = specialized_->staged->second;
    const tile::Op& mop = k_.Get(st.mma);
    st.shape = PrepareWgmma(st.mma, mop, std::get<tile::op::Mma>(mop.node), true);
    ValueId c = loop.carried[st.carried], y = mop.results.at(0);
    slots_[c.index].regs = SameLayoutRegs(loop.init.at(st.carried), c, "the loop's carried value");
    st.acc = SameLayoutRegs(c, y, "the staged product's accumulator");
    llvm::Value* address = SharedAddress(smem_base_);
    llvm::Value* zero = b_.CreateZExt(b_.CreateAnd(b_.CreateLShr(address, I32(4)), I32(0x3FFF)), b_.getInt64Ty());
    for (std::size_t step = 0; step < st.shape.a_mn.size(); ++step) {
      if (st.shape.a_shared)
        st.operands.push_back(zero);
      else
        for (int r = 0; r < 4; ++r) st.operands.push_back(I32(0));
      st.operands.push_back(zero);
    }
    staged_ = std::move(st);
  }
}

// The loop's header (the counter and a phi per carried scalar and register), its bound's test, and
// what the iterations share: the deferred products, the ring's protocol, its global iteration.
void Emitter::OpenLoop(LoopEmission& l) {
  const tile::op::Loop& loop = l.loop;
  llvm::Value* bound = l.bound;
  bool consumer = l.consumer;
  MmaRing& ring = l.mma_ring;
  llvm::BasicBlock* pre = l.pre = b_.GetInsertBlock();
  llvm::BasicBlock* head = l.head = llvm::BasicBlock::Create(ctx_, "loop", fn_);
  llvm::BasicBlock* body = llvm::BasicBlock::Create(ctx_, "body", fn_);
  llvm::BasicBlock* exit = l.exit = llvm::BasicBlock::Create(ctx_, "done", fn_);
  b_.CreateBr(head);
  b_.SetInsertPoint(head);
  llvm::PHINode* counter = l.counter = b_.CreatePHI(b_.getInt64Ty(), 2, "it");
  counter->addIncoming(I64(0), pre);
  // One phi per scalar carried value and per register of a carried Reg tile.
  std::vector<std::vector<llvm::PHINode*>>& phis = l.phis;
  for (std::size_t i = 0; i < loop.carried.size(); ++i) {
    ValueId c = loop.carried[i], init = loop.init.at(i);
    std::vector<llvm::PHINode*> p;
    if (staged_ && i == staged_->carried) {  // set by the staged product in the body
      phis.emplace_back();
      continue;
    }
    if (Val(c).space == tile::Space::Scalar) {
      llvm::Value* x = Scalar(init);
      llvm::PHINode* phi = b_.CreatePHI(x->getType(), 2);
      phi->addIncoming(x, pre);
      slots_[c.index].scalar = phi;
      p.push_back(phi);
    } else if (Val(c).space == tile::Space::Reg) {
      auto regs = SameLayoutRegs(init, c, "the loop's carried value");
      slots_[c.index].regs.clear();
      for (llvm::Value* x : regs) {
        llvm::PHINode* phi = b_.CreatePHI(x->getType(), 2);
        phi->addIncoming(x, pre);
        slots_[c.index].regs.push_back(phi);
        p.push_back(phi);
      }
    } else {
      Fail("a loop carrying a shared or global tile");
    }
    phis.push_back(std::move(p));
  }
  std::vector<llvm::PHINode*>& staged_phis = l.staged_phis;
  if (staged_)
    for (auto* values : {&staged_->acc, &staged_->operands})
      for (llvm::Value*& x : *values) {
        llvm::PHINode* phi = b_.CreatePHI(x->getType(), 2);
        phi->addIncoming(x, pre);
        x = phi;
        staged_phis.push_back(phi);
      }
  auto& ring_phis_a = l.ring_phis_a;
  auto& ring_phis_b = l.ring_phis_b;
  for (auto [regs, out] : {std::pair{&ring.a0, &ring_phis_a}, std::pair{&ring.b0, &ring_phis_b}})
    for (std::size_t i = 0; i < regs->size(); ++i)
      if (llvm::Value* x = (*regs)[i]) {
        llvm::PHINode* phi = b_.CreatePHI(x->getType(), 2);
        phi->addIncoming(x, pre);
        (*regs)[i] = phi;
        out->emplace_back(i, phi);
      }
  b_.CreateCondBr(b_.CreateICmpSLT(counter, bound), body, exit);
  b_.SetInsertPoint(body);
  iterations_.push_back(counter);
  // TMA rings: wait for this iteration's slot, run the body, then (every thread done with the slot
  // of iteration it - 1, whose wgmma a deferred wait has completed) refill that slot with
  // iteration it + stages - 1.
  deferred_wgmma_.insert(l.ring.deferred.begin(), l.ring.deferred.end());
  // The ring's barrier protocol, for the deadlock check (schedule/protocol.h).
  if (l.ring.protocol) protocols_.push_back(*l.ring.protocol);
  turns_ = consumer && specialized_->ping_pong;
  // The ring's iteration: the counter, or in a persistent kernel's consumers the counter after the
  // ring iterations of the blocks before (EachTile).
  l.ring_base = consumer ? ring_base_ : nullptr;
  l.global = l.ring_base ? b_.CreateAdd(l.ring_base, counter) : counter;
}

// One iteration of a TMA ring (warp-specialized consumers, or the whole block).
void Emitter::EmitTmaIteration(LoopEmission& l) {
  const tile::Op& op = l.op;
  const tile::op::Loop& loop = l.loop;
  int stages = l.ring.stages;
  const std::set<std::uint32_t>& copy_ops = l.copy_ops;
  bool consumer = l.consumer;
  llvm::PHINode* counter = l.counter;
  llvm::Value* global = l.global;
  const std::vector<std::size_t>& deferred_carried = l.ring.deferred_carried;
  llvm::Value* slot = b_.CreateTrunc(b_.CreateURem(global, I64(stages)), b_.getInt32Ty());
  llvm::Value* parity = b_.CreateTrunc(b_.CreateAnd(b_.CreateUDiv(global, I64(stages)), I64(1)), b_.getInt32Ty());
  WaitMbarrier(Mbarrier(slot), parity);  // this iteration's tiles have landed
  slots_[loop.counter.index].scalar = counter;
  auto emit_body = [&] {
    if (staged_) staged_->in_body = true, staged_->issued = false, staged_->pending = false;
    for (OpId id : loop.body) {
      const tile::Op& body_op = k_.Get(id);
      if (staged_ && staged_->pending) {
        const auto operands = tile::Operands(body_op);
        if (std::find(operands.begin(), operands.end(), loop.carried[staged_->carried]) != operands.end()) StageWait();
      }
      if (copy_ops.count(id.index) && std::holds_alternative<tile::op::ToShared>(body_op.node)) {
        ValueId dst = body_op.results.at(0);
        slots_[dst.index].shared = SharedBase(dst, b_.CreateURem(global, I64(stages)));
      } else {
        EmitOp(id);
      }
    }
    if (staged_) {
      if (!staged_->issued) Fail("the staged product of the previous iteration was never issued");
      if (staged_->pending) StageWait();
      staged_->in_body = false;
    }
  };
  // Masks the whole iteration's tile satisfies (AllTrue): the body twice, behind a uniform branch.
  llvm::Value* unmasked = nullptr;
  std::vector<ValueId> masks;
  {  // in every TMA ring: without the fold, causal attention's plain ring ran 1.16-1.26x slower
    std::set<std::uint32_t> in_body;
    for (OpId id : loop.body) in_body.insert(id.index);
    for (OpId id : loop.body) {
      const auto* m = std::get_if<tile::op::Map>(&k_.Get(id).node);
      if (!m || m->fn != "select" || m->args.empty()) continue;
      ValueId mask = m->args[0];
      if (Val(mask).space != tile::Space::Reg || !Val(mask).def.valid() || !in_body.count(Val(mask).def.index))
        continue;
      llvm::Value* all = AllTrue(mask, in_body);
      if (!all || llvm::isa<llvm::Constant>(all)) continue;
      masks.push_back(mask);
      unmasked = unmasked ? b_.CreateAnd(unmasked, all) : all;
    }
  }
  if (!unmasked) {
    emit_body();
  } else {
    // What the rest of the iteration reads from the body: the yields and the staged operands.
    auto capture = [&] {
      std::vector<llvm::Value*> out;
      for (std::size_t i = 0; i < loop.carried.size(); ++i) {
        if (staged_ && i == staged_->carried) continue;
        ValueId y = loop.yields.at(i);
        if (Val(y).space == tile::Space::Scalar)
          out.push_back(Scalar(y));
        else
          for (llvm::Value* x : slots_.at(y.index).regs) out.push_back(x);
      }
      if (staged_) {
        out.insert(out.end(), staged_->next_acc.begin(), staged_->next_acc.end());
        out.insert(out.end(), staged_->next_operands.begin(), staged_->next_operands.end());
      }
      return out;
    };
    llvm::BasicBlock* fast = llvm::BasicBlock::Create(ctx_, "unmasked", fn_);
    llvm::BasicBlock* slow = llvm::BasicBlock::Create(ctx_, "masked", fn_);
    llvm::BasicBlock* merge = llvm::BasicBlock::Create(ctx_, "body.end", fn_);
    b_.CreateCondBr(unmasked, fast, slow);
    b_.SetInsertPoint(fast);
    for (ValueId m : masks) folded_.insert(m.index);
    emit_body();
    folded_.clear();
    std::vector<llvm::Value*> from_fast = capture();
    llvm::BasicBlock* fast_end = b_.GetInsertBlock();
    b_.CreateBr(merge);
    b_.SetInsertPoint(slow);
    emit_body();
    std::vector<llvm::Value*> from_slow = capture();
    llvm::BasicBlock* slow_end = b_.GetInsertBlock();
    b_.CreateBr(merge);
    b_.SetInsertPoint(merge);
    if (from_fast.size() != from_slow.size()) Fail("the two copies of a masked body differ");
    std::vector<llvm::Value*> merged;
    for (std::size_t i = 0; i < from_fast.size(); ++i) {
      llvm::PHINode* phi = b_.CreatePHI(from_fast[i]->getType(), 2);
      phi->addIncoming(from_fast[i], fast_end);
      phi->addIncoming(from_slow[i], slow_end);
      merged.push_back(phi);
    }
    std::size_t at = 0;
    for (std::size_t i = 0; i < loop.carried.size(); ++i) {
      if (staged_ && i == staged_->carried) continue;
      ValueId y = loop.yields.at(i);
      if (Val(y).space == tile::Space::Scalar)
        slots_[y.index].scalar = merged[at++];
      else
        for (llvm::Value*& x : slots_[y.index].regs) x = merged[at++];
    }
    if (staged_) {
      for (llvm::Value*& x : staged_->next_acc) x = merged[at++];
      for (llvm::Value*& x : staged_->next_operands) x = merged[at++];
    }
  }
  span_ = op.span;
  if (consumer) {
    // This warp is done with a slot: this iteration's, or with products still in flight
    // (deferred), the previous iteration's. Its lanes' reads come before lane 0's arrival.
    bool previous = !deferred_carried.empty() || staged_;
    Release(stages, previous ? b_.CreateSub(global, I64(1)) : global,
            previous ? b_.CreateICmpSGE(counter, I64(1)) : nullptr);
  } else {
    Barrier();
    IssueCopies(l, b_.CreateAdd(counter, I64(stages - 1)));
  }
  turns_ = false;
  slots_[loop.counter.index].scalar = counter;
}

// One iteration of sm_80's operand ring (MmaRing).
void Emitter::EmitMmaRingIteration(LoopEmission& l) {
  const tile::op::Loop& loop = l.loop;
  int stages = l.ring.stages;
  const std::set<std::uint32_t>& copy_ops = l.copy_ops;
  MmaRing& ring = l.mma_ring;
  std::int64_t& ring_slices = l.ring_slices;
  llvm::PHINode* counter = l.counter;
  // Slot it % stages is read by this iteration's slices 1 .. S - 1 (loaded before the barrier
  // after slice S - 2's products) and by its slice 0, loaded in the previous iteration after that
  // one's barrier. Iteration it + stages - 1 refills slot (it - 1) % stages, which every thread
  // is done with (past the previous iteration's barrier): its copies are spread over slices
  // 0 .. S - 2 (a part of each copy's vectors in each, as CUTLASS interleaves them with the
  // products), committed as one group before the barrier, which waits for iteration it + 1 (all
  // but the newest stages - 2 groups).
  slots_[loop.counter.index].scalar = counter;
  int parts = static_cast<int>(std::max<std::int64_t>(1, ring_slices - 1));
  ring.copies = [&](std::int64_t s) {
    if (s >= parts) return;
    IssueCopies(l, b_.CreateAdd(counter, I64(stages - 1)), static_cast<int>(s), parts, false);
    slots_[loop.counter.index].scalar = counter;
    SetRingSlot(l, b_.CreateURem(counter, I64(stages)));
  };
  ring.barrier = [&] {
    Intrinsic(llvm::Intrinsic::nvvm_cp_async_commit_group, {});
    Intrinsic(llvm::Intrinsic::nvvm_cp_async_wait_group, {I32(stages - 2)});
    Barrier();
  };
  ring.slot = [&](bool next) {
    SetRingSlot(l, b_.CreateURem(next ? b_.CreateAdd(counter, I64(1)) : counter, I64(stages)));
  };
  ring_mma_ = &ring;
  for (OpId id : loop.body) {
    const tile::Op& body_op = k_.Get(id);
    if (copy_ops.count(id.index) && std::holds_alternative<tile::op::ToShared>(body_op.node)) {
      ValueId dst = body_op.results.at(0);
      slots_[dst.index].shared = SharedBase(dst, b_.CreateURem(counter, I64(stages)));
    } else {
      EmitOp(id);
    }
  }
  ring_mma_ = nullptr;
}

// One iteration of a cp.async ring.
void Emitter::EmitCpAsyncIteration(LoopEmission& l) {
  const tile::op::Loop& loop = l.loop;
  int stages = l.ring.stages;
  const std::set<std::uint32_t>& copy_ops = l.copy_ops;
  llvm::PHINode* counter = l.counter;
  // One barrier per iteration (stages >= 2): once this thread's copies of iteration `it` have
  // landed (all but the newest stages - 2 groups), the barrier says every thread's have, and that
  // every thread is done with iteration it - 1, whose slot the copies of it + stages - 1 refill.
  Intrinsic(llvm::Intrinsic::nvvm_cp_async_wait_group, {I32(stages - 2)});
  Barrier();
  IssueCopies(l, b_.CreateAdd(counter, I64(stages - 1)));
  slots_[loop.counter.index].scalar = counter;
  for (OpId id : loop.body) {
    const tile::Op& body_op = k_.Get(id);
    if (copy_ops.count(id.index) && std::holds_alternative<tile::op::ToShared>(body_op.node)) {
      ValueId dst = body_op.results.at(0);
      slots_[dst.index].shared = SharedBase(dst, b_.CreateURem(counter, I64(stages)));
    } else {
      EmitOp(id);  // the rest of the body; scalar and view ops again for this iteration
    }
  }
}

// The latch (the phis' incoming values) and after the loop: the last waits, turns, staged product,
// releases and the loop's results.
void Emitter::CloseLoop(LoopEmission& l) {
  const tile::Op& op = l.op;
  const tile::op::Loop& loop = l.loop;
  int stages = l.ring.stages;
  bool tma = l.ring.tma;
  llvm::Value* bound = l.bound;
  bool consumer = l.consumer;
  MmaRing& ring = l.mma_ring;
  llvm::PHINode* counter = l.counter;
  llvm::Value* ring_base = l.ring_base;
  const std::vector<std::size_t>& deferred_carried = l.ring.deferred_carried;
  std::vector<std::vector<llvm::PHINode*>>& phis = l.phis;
  std::vector<llvm::PHINode*>& staged_phis = l.staged_phis;
  auto& ring_phis_a = l.ring_phis_a;
  auto& ring_phis_b = l.ring_phis_b;
  llvm::BasicBlock* head = l.head;
  llvm::BasicBlock* exit = l.exit;
  iterations_.pop_back();
  span_ = op.span;
  llvm::BasicBlock* latch = b_.GetInsertBlock();
  for (std::size_t i = 0; i < loop.carried.size(); ++i) {
    ValueId c = loop.carried[i], y = loop.yields.at(i);
    if (staged_ && i == staged_->carried) continue;
    if (Val(c).space == tile::Space::Scalar) {
      phis[i][0]->addIncoming(Scalar(y), latch);
    } else {
      auto regs = SameLayoutRegs(y, c, "the loop's yielded value");
      for (std::size_t r = 0; r < regs.size(); ++r) phis[i][r]->addIncoming(regs[r], latch);
    }
  }
  for (auto [phis_of, next] : {std::pair{&ring_phis_a, &ring.next_a0}, std::pair{&ring_phis_b, &ring.next_b0}})
    for (auto [i, phi] : *phis_of) {
      llvm::Value* x = i < next->size() ? (*next)[i] : nullptr;
      if (!x) Fail("the next iteration's first slice of an mma operand was not loaded");
      phi->addIncoming(x, latch);
    }
  if (staged_) {
    std::vector<llvm::Value*> next = staged_->next_acc;
    next.insert(next.end(), staged_->next_operands.begin(), staged_->next_operands.end());
    if (next.size() != staged_phis.size()) Fail("the staged product's operands differ between iterations");
    for (std::size_t i = 0; i < next.size(); ++i) staged_phis[i]->addIncoming(next[i], latch);
  }
  counter->addIncoming(b_.CreateAdd(counter, I64(1)), latch);
  b_.CreateBr(head);
  b_.SetInsertPoint(exit);
  if (stages && !tma) Intrinsic(llvm::Intrinsic::nvvm_cp_async_wait_group, {I32(0)});
  if (consumer && specialized_->ping_pong) {
    // Consumer 1 handed consumer 0 a turn after its last products (and one before the first, when
    // the loop runs no iteration): consumer 0 takes it, so named barrier 2 ends empty.
    llvm::BasicBlock* last = llvm::BasicBlock::Create(ctx_, "last.turn", fn_);
    llvm::BasicBlock* after = llvm::BasicBlock::Create(ctx_, "after", fn_);
    b_.CreateCondBr(b_.CreateICmpEQ(b_.CreateLShr(tid_, I32(7)), I32(0)), last, after);
    b_.SetInsertPoint(last);
    Intrinsic(llvm::Intrinsic::nvvm_barrier_sync_cnt, {I32(2), I32(plan_.threads)});
    b_.CreateBr(after);
    b_.SetInsertPoint(after);
  }
  if (staged_) {  // the last iteration's staged product (none when the loop ran none: it adds 0)
    hopper::WgmmaFence(b_);
    StageFlush();
    StageWait();
  }
  if (!deferred_carried.empty()) {  // the last iteration's products
    hopper::WgmmaWait(b_, 0);
    for (std::size_t i : deferred_carried) {
      ValueId c = loop.carried[i];
      slots_[c.index].regs = hopper::FenceOperands(b_, slots_[c.index].regs);
    }
  }
  // A persistent kernel's ring goes on into the next block: the slot of the last iteration, which a
  // release one iteration late has not given back yet, is given back once its products are done.
  if (consumer && ring_base && stages && tma && (!deferred_carried.empty() || staged_))
    Release(stages, b_.CreateSub(b_.CreateAdd(ring_base, bound), I64(1)), b_.CreateICmpSGT(bound, I64(0)));
  if (tma && !consumer) {
    Barrier();  // every thread is past its last wait
    IfThread0(nullptr, [&] {
      for (int s = 0; s < stages; ++s) Intrinsic(llvm::Intrinsic::nvvm_mbarrier_inval_shared, {Mbarrier(I32(s))});
    });
  }
  for (std::size_t i = 0; i < op.results.size(); ++i) {
    ValueId c = loop.carried.at(i), r = op.results[i];
    slots_[r.index].scalar = slots_[c.index].scalar;
    slots_[r.index].regs =
        Val(c).space == tile::Space::Reg ? SameLayoutRegs(c, r, "the loop's result") : std::vector<llvm::Value*>{};
  }
  staged_.reset();
}

// A bool parameter that the body of a pipeline reads (attention's `causal`) is a branch taken once:
// the body is emitted for `true` and for `false`, so that LLVM folds what the flag decides inside
// the loop (the mask's compare and select per score when it is false). LLVM's own loop unswitching
// declines bodies this large. One flag at most (two copies of the code).
void Emitter::EmitBody() {
  std::optional<ValueId> flag;
  for (OpId id : k_.body)
    if (const auto* loop = std::get_if<tile::op::Loop>(&k_.Get(id).node); loop && loop->pipelined)
      for (OpId inner : loop->body)
        for (ValueId v : tile::Operands(k_.Get(inner)))
          for (const tile::Param& p : k_.params)
            if (!flag && p.value == v && Val(v).space == tile::Space::Scalar && Val(v).dtype == Dtype::Bool) flag = v;
  auto body = [&] { EachTile([&] { EmitBlock(k_.body); }); };
  if (!flag) return body();
  llvm::Value* runtime = slots_[flag->index].scalar;
  llvm::BasicBlock* on = llvm::BasicBlock::Create(ctx_, "flag.true", fn_);
  llvm::BasicBlock* off = llvm::BasicBlock::Create(ctx_, "flag.false", fn_);
  b_.CreateCondBr(runtime, on, off);
  b_.SetInsertPoint(on);
  slots_[flag->index].scalar = b_.getTrue();
  body();
  b_.CreateRetVoid();
  std::size_t once = protocols_.size();
  b_.SetInsertPoint(off);
  slots_[flag->index].scalar = b_.getFalse();
  body();
  protocols_.resize(once);  // the same rings twice: each protocol once
  slots_[flag->index].scalar = runtime;
}

void Emitter::EmitSpecialized() {
  const Specialized& s = *specialized_;
  span_ = k_.Get(s.loop).span;
  // The ring's mbarriers before the roles part: full[i] (the producer's arrive.expect_tx and the
  // copies' bytes) and empty[i] (one arrival per consumer warp).
  IfThread0(nullptr, [&] {
    for (int i = 0; i < s.stages; ++i) {
      Intrinsic(llvm::Intrinsic::nvvm_mbarrier_init_shared, {Mbarrier(I32(i)), I32(1)});
      Intrinsic(llvm::Intrinsic::nvvm_mbarrier_init_shared, {Mbarrier(I32(s.stages + i)), I32(plan_.threads / 32)});
    }
    hopper::FenceMbarrierInit(b_);
    if (s.staged) {  // the block a staged product's first issue reads (Staged), seen by wgmma
      auto* zeros = llvm::Constant::getNullValue(llvm::FixedVectorType::get(b_.getInt32Ty(), 4));
      for (std::int64_t at = 0; at < 128; at += 16)
        b_.CreateAlignedStore(zeros, b_.CreateGEP(b_.getInt8Ty(), smem_base_, I32(at)), llvm::Align(16));
      hopper::FenceProxyAsync(b_);
    }
  });
  Intrinsic(llvm::Intrinsic::nvvm_barrier0, {});  // every thread, the producer's too
  llvm::BasicBlock* producer = llvm::BasicBlock::Create(ctx_, "producer", fn_);
  llvm::BasicBlock* issuer = llvm::BasicBlock::Create(ctx_, "issuer", fn_);
  llvm::BasicBlock* idle = llvm::BasicBlock::Create(ctx_, "idle", fn_);
  llvm::BasicBlock* consumers = llvm::BasicBlock::Create(ctx_, "consumers", fn_);
  b_.CreateCondBr(b_.CreateICmpUGE(tid_, I32(plan_.threads)), producer, consumers);
  b_.SetInsertPoint(producer);
  if (s.producer_registers) hopper::SetMaxNreg(b_, false, s.producer_registers);
  b_.CreateCondBr(b_.CreateICmpEQ(tid_, I32(plan_.threads)), issuer, idle);
  b_.SetInsertPoint(idle);
  b_.CreateRetVoid();
  b_.SetInsertPoint(issuer);
  leader_ = b_.getTrue();
  EmitProducer(s);
  leader_ = nullptr;
  b_.CreateRetVoid();
  b_.SetInsertPoint(consumers);
  if (s.consumer_registers) hopper::SetMaxNreg(b_, true, s.consumer_registers);
  consumers_only_ = true;
  EmitBody();
  consumers_only_ = false;
}

// The producer's loop: for each iteration, wait until every consumer warp is done with its slot
// (the first round passes: parity 1 of a fresh barrier is the phase before it), arm full[slot] with
// the iteration's bytes and issue its copies.
void Emitter::EmitProducer(const Specialized& s) {
  EachTile([&] { EmitProducerLoop(s); });
}

void Emitter::EmitProducerLoop(const Specialized& s) {
  const tile::Op& op = k_.Get(s.loop);
  const auto& loop = std::get<tile::op::Loop>(op.node);
  for (OpId id : s.prelude) EmitOp(id);
  const schedule::Ring& ring = *lowering_.RingOf(s.loop);
  const std::vector<OpId>& copies = ring.copies;
  int stages = ring.stages;
  std::int64_t bytes = ring.tma_bytes;
  span_ = op.span;
  llvm::Value* bound = Scalar(loop.bound);
  ring_used_ = b_.CreateSelect(b_.CreateICmpSGT(bound, I64(0)), bound, I64(0));
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  llvm::BasicBlock* head = llvm::BasicBlock::Create(ctx_, "produce", fn_);
  llvm::BasicBlock* body = llvm::BasicBlock::Create(ctx_, "issue", fn_);
  llvm::BasicBlock* exit = llvm::BasicBlock::Create(ctx_, "produced", fn_);
  b_.CreateBr(head);
  b_.SetInsertPoint(head);
  llvm::PHINode* it = b_.CreatePHI(b_.getInt64Ty(), 2, "it");
  it->addIncoming(I64(0), pre);
  b_.CreateCondBr(b_.CreateICmpSLT(it, bound), body, exit);
  b_.SetInsertPoint(body);
  llvm::Value* g = ring_base_ ? b_.CreateAdd(ring_base_, it) : it;  // the ring's iteration
  llvm::Value* slot = b_.CreateURem(g, I64(stages));
  llvm::Value* slot32 = b_.CreateTrunc(slot, b_.getInt32Ty());
  llvm::Value* parity =
      b_.CreateXor(b_.CreateTrunc(b_.CreateAnd(b_.CreateUDiv(g, I64(stages)), I64(1)), b_.getInt32Ty()), I32(1));
  WaitMbarrier(Mbarrier(b_.CreateAdd(I32(stages), slot32)), parity);
  Prefetch p{slot, b_.getTrue()};
  p.bar = Mbarrier(slot32);
  hopper::MbarrierArriveExpectTx(b_, SharedAddress(p.bar), I32(bytes));
  slots_[loop.counter.index].scalar = it;
  for (OpId id : copies) {
    const tile::Op& c = k_.Get(id);
    span_ = c.span;
    if (const auto* copy = std::get_if<tile::op::ToShared>(&c.node))
      EmitToShared(id, c, *copy, &p);
    else
      EmitOp(id);
  }
  it->addIncoming(b_.CreateAdd(it, I64(1)), b_.GetInsertBlock());
  b_.CreateBr(head);
  b_.SetInsertPoint(exit);
}

void Emitter::Release(int stages, llvm::Value* done, llvm::Value* live) {
  // Its lanes' reads come before lane 0's arrival.
  llvm::Value* lane0 = b_.CreateICmpEQ(b_.CreateAnd(tid_, I32(31)), I32(0));
  Intrinsic(llvm::Intrinsic::nvvm_bar_warp_sync, {I32(-1)});
  llvm::BasicBlock* arrive = llvm::BasicBlock::Create(ctx_, "release", fn_);
  llvm::BasicBlock* next = llvm::BasicBlock::Create(ctx_, "released", fn_);
  b_.CreateCondBr(live ? b_.CreateAnd(lane0, live) : lane0, arrive, next);
  b_.SetInsertPoint(arrive);
  llvm::Value* empty = b_.CreateAdd(I32(stages), b_.CreateTrunc(b_.CreateURem(done, I64(stages)), b_.getInt32Ty()));
  Intrinsic(llvm::Intrinsic::nvvm_mbarrier_arrive_shared, {Mbarrier(empty)});
  b_.CreateBr(next);
  b_.SetInsertPoint(next);
}

void Emitter::EachTile(const std::function<void()>& body) {
  if (!specialized_ || !specialized_->persistent) return body();
  std::array<llvm::Value*, 3> grid = {I64(1), I64(1), I64(1)};
  for (std::size_t i = 0; i < k_.grid.size() && i < 3; ++i) grid[i] = DimValue(k_.grid[i]);
  llvm::Value* blocks = b_.CreateMul(b_.CreateMul(grid[0], grid[1]), grid[2]);
  auto sreg = [&](llvm::Intrinsic::ID id) { return b_.CreateZExt(Intrinsic(id, {}), b_.getInt64Ty()); };
  llvm::Value* nx = sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x);
  llvm::Value* ny = sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_y);
  llvm::Value* nz = sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_z);
  llvm::Value* first =
      b_.CreateAdd(sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x),
                   b_.CreateMul(nx, b_.CreateAdd(sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_y),
                                                 b_.CreateMul(ny, sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_z)))));
  llvm::Value* stride = b_.CreateMul(b_.CreateMul(nx, ny), nz);
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  llvm::BasicBlock* head = llvm::BasicBlock::Create(ctx_, "tile", fn_);
  llvm::BasicBlock* work = llvm::BasicBlock::Create(ctx_, "tile.body", fn_);
  llvm::BasicBlock* exit = llvm::BasicBlock::Create(ctx_, "tiles.done", fn_);
  b_.CreateBr(head);
  b_.SetInsertPoint(head);
  llvm::PHINode* tile = b_.CreatePHI(b_.getInt64Ty(), 2, "tile");
  llvm::PHINode* base = b_.CreatePHI(b_.getInt64Ty(), 2, "ring.base");
  tile->addIncoming(first, pre);
  base->addIncoming(I64(0), pre);
  b_.CreateCondBr(b_.CreateICmpULT(tile, blocks), work, exit);
  b_.SetInsertPoint(work);
  block_ = {b_.CreateURem(tile, grid[0]), b_.CreateURem(b_.CreateUDiv(tile, grid[0]), grid[1]),
            b_.CreateUDiv(tile, b_.CreateMul(grid[0], grid[1]))};
  ring_base_ = base;
  ring_used_ = nullptr;
  body();
  llvm::Value* used = ring_used_ ? ring_used_ : I64(0);
  block_ = {nullptr, nullptr, nullptr};
  ring_base_ = ring_used_ = nullptr;
  tile->addIncoming(b_.CreateAdd(tile, stride), b_.GetInsertBlock());
  base->addIncoming(b_.CreateAdd(base, used), b_.GetInsertBlock());
  b_.CreateBr(head);
  b_.SetInsertPoint(exit);
}

}  // namespace weft::codegen::device_emit
