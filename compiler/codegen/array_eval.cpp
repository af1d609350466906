// The array kernels' evaluator (array.cpp, step 2): any node of a group at a coordinate. A tensor
// input is a load, a view maps the coordinate back to its source, a map broadcasts it to its
// operands, rank-0 host values are recomputed from the sizes; each value is computed at most once
// per coordinate (a cache scoped to the control flow that dominates its uses).
#include <algorithm>
#include <cmath>

#include "codegen/array_emitter.h"
#include "codegen/libdevice.h"
#include "codegen/math.h"

namespace weft::codegen::array_emit {

// The coordinates of an operand of shape `to` read at `c` in shape `from`: NumPy's broadcasting,
// aligned on the right, a dim of 1 read at 0.
Coords ArrayEmitter::Broadcast(const Coords& c, const std::vector<Dim>& from, const std::vector<Dim>& to) {
  if (to.size() > from.size()) Refuse("an operand of higher rank than its result");
  Coords out(to.size());
  for (std::size_t i = 0; i < to.size(); ++i) {
    std::size_t j = i + from.size() - to.size();
    out[i] = to[i] == Dim::Constant(1) ? Coord{I64(0), false} : c[j];
  }
  return out;
}

std::size_t ArrayEmitter::Width(const Coords& c) const {
  for (const Coord& x : c)
    if (x.lanes) return width_;
  return 1;
}

// Lane k's uniform coordinates.
Coords ArrayEmitter::LaneCoords(const Coords& c, std::size_t k) {
  Coords out = c;
  for (Coord& x : out) {
    if (x.lanes) x = Coord{k == 0 ? x.v : b_.CreateAdd(x.v, I64(static_cast<std::int64_t>(k))), false};
  }
  return out;
}

// A value evaluated lane by lane (where lanes cannot be carried through).
Val ArrayEmitter::PerLane(const Coords& c, const std::function<llvm::Value*(const Coords&)>& one) {
  std::size_t w = Width(c);
  Val out;
  for (std::size_t k = 0; k < w; ++k) out.push_back(one(LaneCoords(c, k)));
  return out;
}

// Node `id` at coordinates `c` (one per axis of its shape).
Val ArrayEmitter::Emit(NodeId id, const Coords& c) {
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

llvm::Value* ArrayEmitter::EmitOne(NodeId id, const Coords& c) {
  Val v = Emit(id, c);
  if (v.size() != 1) Refuse("internal: a lane value where one was expected");
  return v[0];
}

Val ArrayEmitter::Compute(NodeId id, const Coords& c) {
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
llvm::Value* ArrayEmitter::Current(NodeId id, const Coords& c, const Coords& at, const std::string& what) {
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
Val ArrayEmitter::Load(NodeId id, const Coords& c) {
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
Val ArrayEmitter::View(NodeId id, const Coords& c) {
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

Val ArrayEmitter::Map(const Node& n, const Coords& c) {
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
llvm::Value* ArrayEmitter::IntDivMod(bool mod, bool is_signed, llvm::Value* a, llvm::Value* b) {
  llvm::Value* zero = I64(0);
  llvm::Value* bz = b_.CreateICmpEQ(b, zero);
  llvm::Value* safe = b_.CreateSelect(bz, I64(1), b);
  if (!is_signed) return b_.CreateSelect(bz, zero, mod ? b_.CreateURem(a, safe) : b_.CreateUDiv(a, safe));
  // min / -1 overflows sdiv: for -1 the quotient is -a (wrapping) and the remainder 0.
  llvm::Value* minus1 = b_.CreateICmpEQ(b, I64(-1));
  safe = b_.CreateSelect(minus1, I64(1), safe);
  llvm::Value* q = b_.CreateSDiv(a, safe);
  llvm::Value* r = b_.CreateSRem(a, safe);
  llvm::Value* adjust =
      b_.CreateAnd(b_.CreateICmpNE(r, zero), b_.CreateICmpNE(b_.CreateICmpSLT(r, zero), b_.CreateICmpSLT(safe, zero)));
  q = b_.CreateSelect(adjust, b_.CreateSub(q, I64(1)), q);
  r = b_.CreateSelect(adjust, b_.CreateAdd(r, safe), r);
  llvm::Value* v = mod ? b_.CreateSelect(minus1, zero, r) : b_.CreateSelect(minus1, b_.CreateNeg(a), q);
  return b_.CreateSelect(bz, zero, v);
}

llvm::Value* ArrayEmitter::Fma(llvm::Value* a, llvm::Value* c, llvm::Value* d) {
  return b_.CreateIntrinsic(llvm::Intrinsic::fma, {a->getType()}, {a, c, d});
}

// A call of libdevice's `name` on an f64 (libdevice.h; linked after the kernel is written).
llvm::Value* ArrayEmitter::Libdevice(const std::string& name, llvm::Value* x) {
  std::string looked;
  if (!FindLibdevice(looked))
    Refuse("f64 `" + name.substr(5) + "` (NVIDIA's libdevice was not found: looked at " + looked +
           "; set WEFT_LIBDEVICE to its path)");
  llvm::FunctionCallee callee =
      m_.getOrInsertFunction(name, llvm::FunctionType::get(b_.getDoubleTy(), {b_.getDoubleTy()}, false));
  return b_.CreateCall(callee, {x});
}

// One operation on compute-type operands (ToCompute), in that type.
llvm::Value* ArrayEmitter::Apply(const std::string& fn, Dtype d, const std::vector<llvm::Value*>& x) {
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
llvm::Value* ArrayEmitter::MaxMin(bool max, Dtype d, llvm::Value* a, llvm::Value* c) {
  if (IsFloat(d)) return b_.CreateBinaryIntrinsic(max ? llvm::Intrinsic::maximum : llvm::Intrinsic::minimum, a, c);
  if (d == Dtype::Bool) return max ? b_.CreateOr(a, c) : b_.CreateAnd(a, c);
  bool s = IsSigned(d);
  auto id =
      max ? (s ? llvm::Intrinsic::smax : llvm::Intrinsic::umax) : (s ? llvm::Intrinsic::smin : llvm::Intrinsic::umin);
  return b_.CreateBinaryIntrinsic(id, a, c);
}

// dequant [g] q s: f32(q[..., k]) * f32(s[..., k / g]) (f64 for an f64 s), rounded once to s's type.
Val ArrayEmitter::Dequant(const Node& n, const Coords& c) {
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
llvm::Value* ArrayEmitter::Gather(const Node& n, const Coords& c) {
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
llvm::Value* ArrayEmitter::Concat(const Node& n, const Coords& c) {
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
llvm::Value* ArrayEmitter::Combine(const graph::Combiner& combiner, llvm::Value* acc, llvm::Value* element) {
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
void ArrayEmitter::Store(NodeId id, llvm::Value* offset, llvm::Value* v) {
  Dtype d = Get(id).dtype;
  if (IsPacked(d)) Refuse("internal: a 4-bit element stored alone");
  if (d == Dtype::Bool) v = b_.CreateZExt(v, b_.getInt8Ty());
  llvm::Type* t = Memory(d);
  b_.CreateAlignedStore(v, b_.CreateGEP(t, pointers_.at(id.index), offset),
                        llvm::Align(static_cast<std::uint64_t>(Bytes(d))));
}

// The byte of two 4-bit elements: `low` in the low nibble.
llvm::Value* ArrayEmitter::PackByte(llvm::Value* low, llvm::Value* high) {
  return b_.CreateOr(b_.CreateZExt(low, b_.getInt8Ty()), b_.CreateShl(b_.CreateZExt(high, b_.getInt8Ty()), 4));
}

// Stores the `width` lanes of `v` (of `id`'s dtype) at element `offset` of buffer `id`: one
// vector store (the offset a multiple of the width), or a plain store for one lane.
void ArrayEmitter::StoreUnit(NodeId id, llvm::Value* offset, const Val& v, std::size_t width) {
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

}  // namespace weft::codegen::array_emit
