// The lowering decisions of lowering.h, from the tile IR and the plan (the solver's part is in
// schedule.cpp's Build, which asks WarpRolesCandidate's question and then calls Rings).
#include "schedule/lowering.h"

#include <algorithm>
#include <functional>
#include <map>

#include "schedule/cost.h"

namespace weft::schedule {

namespace {

using synth::InstructionKind;
using tile::OpId;
using tile::ValueId;

InstructionKind KindOf(const synth::Plan& plan, OpId id) {
  return plan.ops.at(id.index).instruction.kind;
}

// The element bytes of a dtype in memory (sub-byte types round up to one).
int ElementBytes(Dtype d) {
  return std::max(1, Bits(d) / 8);
}

// The bytes one TMA copy into `dst` brings: its boxes over the tile (rows, cols of a rank-1 or -2
// tile; 0 for another rank or a symbolic extent, which codegen refuses).
std::int64_t TmaBytes(const tile::Kernel& kernel, const synth::Plan& plan, OpId id, ValueId dst) {
  const layout::TmaBox& box = *plan.ops.at(id.index).tma;
  const tile::Value& v = kernel.Get(dst);
  std::vector<std::int64_t> c;
  for (const core::Dim& d : v.shape) {
    std::optional<std::int64_t> x = d.AsConstant();
    if (!x) return 0;
    c.push_back(*x);
  }
  if (c.size() != 1 && c.size() != 2) return 0;
  std::int64_t rows = c[0], cols = c.size() == 2 ? c[1] : 1;
  std::int64_t boxes = (rows / box.box_dims[1]) * (cols / box.box_dims[0]);
  return boxes * box.box_dims[0] * box.box_dims[1] * ElementBytes(v.dtype);
}

bool Pure(const tile::Op& op) {
  return std::holds_alternative<tile::op::View>(op.node) || std::holds_alternative<tile::op::ScalarOp>(op.node) ||
         std::holds_alternative<tile::op::Constant>(op.node) || std::holds_alternative<tile::op::Size>(op.node);
}

// The copies of a pipelined loop that can be issued ahead, with the pure ops (views, scalar
// arithmetic, constants, sizes) they read from the body: every copy of the body is a TMA or
// cp.async copy into a staged tile of the same depth (>= 2), all of one kind, reading only the
// counter, values from outside the loop and such pure ops. Empty otherwise.
std::vector<OpId> CopySlice(const tile::Kernel& kernel, const synth::Plan& plan, const tile::op::Loop& loop,
                            int& stages) {
  std::set<std::uint32_t> in_body;
  for (OpId id : loop.body) in_body.insert(id.index);
  std::set<std::uint32_t> slice;
  stages = 0;
  OpId out_first = loop.body.empty() ? OpId{} : loop.body[0];
  std::function<bool(ValueId)> need = [&](ValueId v) {
    for (ValueId c : loop.carried)
      if (c == v) return false;
    const tile::Value& value = kernel.Get(v);
    if (!value.def.valid() || !in_body.count(value.def.index)) return true;  // the counter, or outside the loop
    const tile::Op& def = kernel.Get(value.def);
    if (!Pure(def)) return false;
    if (!slice.insert(value.def.index).second) return true;
    for (ValueId operand : tile::Operands(def))
      if (!need(operand)) return false;
    return true;
  };
  for (OpId id : loop.body) {
    const tile::Op& op = kernel.Get(id);
    const auto* copy = std::get_if<tile::op::ToShared>(&op.node);
    if (!copy) continue;
    int s = plan.values.at(op.results.at(0).index).stages;
    InstructionKind kind = KindOf(plan, id);
    bool tma = synth::IsTma(kind);
    if (s < 2 || (stages && s != stages) || (!tma && !synth::IsCpAsync(kind))) return {};
    if (stages && tma != synth::IsTma(KindOf(plan, out_first))) return {};  // one kind
    if (!stages) out_first = id;
    stages = s;
    slice.insert(id.index);
    if (!need(copy->src)) return {};
  }
  std::vector<OpId> out;
  for (OpId id : loop.body)
    if (slice.count(id.index)) out.push_back(id);
  return out;
}

// sm_80's gemm ring (codegen's MmaRing): a loop carrying one register tile, whose body is the
// ring's copies, pure ops, transposes, streamed ldmatrix loads of ring tiles and one m16n8k16
// mma.sync accumulating into the carried value, whose operands nothing else reads.
std::optional<OpId> RingMma(const tile::Kernel& kernel, const synth::Plan& plan, const tile::op::Loop& loop,
                            const std::set<std::uint32_t>& copy_ops) {
  if (loop.carried.size() != 1 || kernel.Get(loop.carried[0]).space != tile::Space::Reg) return std::nullopt;
  std::optional<OpId> mma;
  std::map<std::uint32_t, const tile::Op*> defs;  // the body's ops by result
  for (OpId id : loop.body) {
    const tile::Op& op = kernel.Get(id);
    for (ValueId r : op.results) defs[r.index] = &op;
    if (copy_ops.count(id.index)) continue;
    if (Pure(op) || std::holds_alternative<tile::op::Transpose>(op.node)) continue;
    if (std::holds_alternative<tile::op::ToRegs>(op.node)) {
      if (!plan.values.at(op.results.at(0).index).streamed || KindOf(plan, id) != InstructionKind::kLdmatrix)
        return std::nullopt;
      continue;
    }
    if (!std::holds_alternative<tile::op::Mma>(op.node) || mma) return std::nullopt;
    mma = id;
  }
  if (!mma) return std::nullopt;
  const tile::Op& op = kernel.Get(*mma);
  const auto& m = std::get<tile::op::Mma>(op.node);
  if (KindOf(plan, *mma) != InstructionKind::kMmaSync) return std::nullopt;
  if (m.acc != loop.carried[0] || loop.yields.at(0) != op.results.at(0)) return std::nullopt;
  // Each operand: a streamed `regs` of a tile of the ring, or of a transposed view of one.
  for (ValueId v : {m.a, m.b}) {
    auto def = defs.find(v.index);
    if (def == defs.end() || !std::holds_alternative<tile::op::ToRegs>(def->second->node)) return std::nullopt;
    ValueId src = std::get<tile::op::ToRegs>(def->second->node).src;
    auto sdef = defs.find(src.index);
    if (sdef != defs.end())
      if (const auto* t = std::get_if<tile::op::Transpose>(&sdef->second->node)) sdef = defs.find(t->src.index);
    if (sdef == defs.end() || !std::holds_alternative<tile::op::ToShared>(sdef->second->node)) return std::nullopt;
    bool in_ring = false;
    for (std::uint32_t c : copy_ops)
      in_ring |=
          kernel.Get(OpId{c}).results.size() == 1 && kernel.Get(OpId{c}).results[0] == sdef->second->results.at(0);
    if (!in_ring) return std::nullopt;
  }
  // Every other use of the `regs` results or the product would see a slice at a time.
  for (OpId id : loop.body)
    if (id.index != mma->index)
      for (ValueId operand : tile::Operands(kernel.Get(id)))
        if (operand == m.a || operand == m.b || operand == op.results.at(0)) return std::nullopt;
  return mma;
}

// The shared tile a wgmma reads for operand `v`: a shared value, or a `regs` of one that the plan
// does not load.
std::optional<ValueId> WgmmaReadsShared(const tile::Kernel& kernel, const synth::Plan& plan, ValueId v) {
  const tile::Value& value = kernel.Get(v);
  if (value.space == tile::Space::Shared) return v;
  if (!value.def.valid()) return std::nullopt;
  const auto* r = std::get_if<tile::op::ToRegs>(&kernel.Get(value.def).node);
  if (!r) return std::nullopt;
  if (KindOf(plan, value.def) == InstructionKind::kNone || !plan.values.at(v.index).regs) return r->src;
  return std::nullopt;
}

}  // namespace

std::optional<std::pair<OpId, std::size_t>> StagedProduct(const tile::Kernel& kernel, const synth::Plan& plan,
                                                          const tile::op::Loop& loop) {
  std::vector<std::size_t> deferred_carried;
  if (!DeferredProducts(kernel, plan, loop, &deferred_carried).empty()) return std::nullopt;
  std::map<std::uint32_t, int> uses;
  for (const tile::Op& op : kernel.ops)
    for (ValueId v : tile::Operands(op)) ++uses[v.index];
  auto position = [&](OpId id) { return std::find(loop.body.begin(), loop.body.end(), id) - loop.body.begin(); };
  auto is_wgmma = [&](OpId id) {
    return std::holds_alternative<tile::op::Mma>(kernel.Get(id).node) && KindOf(plan, id) == InstructionKind::kWgmma;
  };
  for (std::size_t i = 0; i < loop.carried.size(); ++i) {
    ValueId c = loop.carried[i], y = loop.yields.at(i);
    const tile::Value& yv = kernel.Get(y);
    if (!yv.def.valid() || position(yv.def) == static_cast<std::ptrdiff_t>(loop.body.size())) continue;
    if (!is_wgmma(yv.def) || uses[y.index] != 1 || uses[c.index] == 0) continue;
    const auto& m = std::get<tile::op::Mma>(kernel.Get(yv.def).node);
    if (m.acc == c || kernel.Get(m.a).space != tile::Space::Reg || WgmmaReadsShared(kernel, plan, m.a)) continue;
    if (const tile::Value& a = kernel.Get(m.a);
        !a.def.valid() || std::holds_alternative<tile::op::ToRegs>(kernel.Get(a.def).node))
      continue;  // A computed in registers in the body (attention's probabilities)
    std::optional<ValueId> b = WgmmaReadsShared(kernel, plan, m.b);
    if (!b) continue;
    ValueId tile = *b;
    if (const tile::Value& v = kernel.Get(tile); v.def.valid())
      if (const auto* t = std::get_if<tile::op::Transpose>(&kernel.Get(v.def).node)) tile = t->src;
    if (const tile::Value& v = kernel.Get(tile);
        v.def.valid() && position(v.def) < static_cast<std::ptrdiff_t>(loop.body.size()))
      if (!std::holds_alternative<tile::op::ToShared>(kernel.Get(v.def).node) || !synth::IsTma(KindOf(plan, v.def)))
        continue;
    // Issued behind the body's first waited product, which comes before the body reads `acc`.
    std::ptrdiff_t first_product = -1, first_read = -1;
    for (std::size_t at = 0; at < loop.body.size(); ++at) {
      OpId id = loop.body[at];
      if (first_product < 0 && id != yv.def && is_wgmma(id)) first_product = static_cast<std::ptrdiff_t>(at);
      const auto operands = tile::Operands(kernel.Get(id));
      if (first_read < 0 && std::find(operands.begin(), operands.end(), c) != operands.end())
        first_read = static_cast<std::ptrdiff_t>(at);
    }
    if (first_product < 0 || first_read < first_product) continue;
    return std::pair{yv.def, i};
  }
  return std::nullopt;
}

bool StagedBlockFits(const synth::Plan& plan, int stages) {
  std::int64_t mbarrier_offset = (plan.shared_bytes + 15) / 16 * 16;
  return mbarrier_offset + (2 * stages + 1) * 8 + 16 + 1024 <= 227 * 1024;
}

const Ring* Lowering::RingOf(tile::OpId loop) const {
  auto it = rings.find(loop.index);
  return it == rings.end() ? nullptr : &it->second;
}

int MinBlocks(const synth::Plan& plan, const LoweringOptions& options) {
  return std::max(options.min_blocks, plan.blocks_per_sm > 1 ? plan.blocks_per_sm : 0);
}

std::optional<WarpRoles> WarpRolesCandidate(const tile::Kernel& kernel, const synth::Plan& plan,
                                            const LoweringOptions& options) {
  if (!options.warp_specialize) return std::nullopt;
  // What codegen can lower (WarpSpecializable: the block's warpgroups, one pipeline, products in
  // it; then TMA copies that a producer can issue alone).
  std::optional<OpId> found;
  for (OpId id : kernel.body)
    if (const auto* loop = std::get_if<tile::op::Loop>(&kernel.Get(id).node); loop && loop->pipelined) found = id;
  if (!found) return std::nullopt;
  const auto& loop = std::get<tile::op::Loop>(kernel.Get(*found).node);
  int min_blocks = MinBlocks(plan, options);
  if (!WarpSpecializable(kernel, plan, loop, min_blocks)) return std::nullopt;
  WarpRoles s;
  s.loop = *found;
  std::vector<OpId> copies = CopySlice(kernel, plan, loop, s.stages);
  if (copies.empty()) return std::nullopt;
  for (OpId id : copies)
    if (std::holds_alternative<tile::op::ToShared>(kernel.Get(id).node) && !synth::IsTma(KindOf(plan, id)))
      return std::nullopt;
  // What the producer computes before its loop: the top-level scalar and view ops that the copies
  // and the bound read (block indices, sizes, the causal bound), and nothing else.
  std::set<std::uint32_t> in_body, prelude;
  for (OpId id : loop.body) in_body.insert(id.index);
  std::function<bool(ValueId)> need = [&](ValueId v) {
    const tile::Value& value = kernel.Get(v);
    if (!value.def.valid() || in_body.count(value.def.index)) return true;  // a parameter, the counter, the body
    const tile::Op& def = kernel.Get(value.def);
    if (!Pure(def) && !std::holds_alternative<tile::op::BlockIdx>(def.node)) return false;
    if (!prelude.insert(value.def.index).second) return true;
    for (ValueId operand : tile::Operands(def))
      if (!need(operand)) return false;
    return true;
  };
  if (!need(loop.bound)) return std::nullopt;
  for (OpId id : copies)
    for (ValueId operand : tile::Operands(kernel.Get(id)))
      if (!need(operand)) return std::nullopt;
  for (OpId id : kernel.body) {
    if (id == *found) break;
    if (prelude.count(id.index)) s.prelude.push_back(id);
  }
  if (s.prelude.size() != prelude.size()) return std::nullopt;  // defined after the loop or nested
  // Registers: the producer keeps 24 (FlashAttention-3's split); the consumer warpgroups share the
  // rest of the file (64K registers: 512 a thread over the warpgroups), up to 256 a thread.
  int consumers = static_cast<int>(plan.threads / 128);
  s.producer_registers = 24;
  s.consumer_registers = ConsumerRegisters(plan.threads, min_blocks);
  s.ping_pong = consumers == 2 && options.ping_pong;
  s.persistent = options.persistent;
  if (options.stage_products && StagedBlockFits(plan, s.stages)) s.staged = StagedProduct(kernel, plan, loop);
  return s;
}

std::map<std::uint32_t, Ring> Rings(const tile::Kernel& kernel, const synth::Plan& plan,
                                    const std::optional<WarpRoles>& roles) {
  std::map<std::uint32_t, Ring> out;
  for (std::size_t i = 0; i < kernel.ops.size(); ++i) {
    const auto* loop = std::get_if<tile::op::Loop>(&kernel.ops[i].node);
    if (!loop || !loop->pipelined) continue;
    OpId id{static_cast<std::uint32_t>(i)};
    Ring r;
    r.copies = CopySlice(kernel, plan, *loop, r.stages);
    if (r.copies.empty()) r.stages = 0;
    std::set<std::uint32_t> copy_ops;
    for (OpId c : r.copies) copy_ops.insert(c.index);
    for (OpId c : r.copies)
      r.tma |= std::holds_alternative<tile::op::ToShared>(kernel.Get(c).node) && synth::IsTma(KindOf(plan, c));
    for (OpId c : r.copies)
      if (r.tma && std::holds_alternative<tile::op::ToShared>(kernel.Get(c).node))
        r.tma_bytes += TmaBytes(kernel, plan, c, kernel.Get(c).results.at(0));
    if (r.stages && !r.tma) r.mma = RingMma(kernel, plan, *loop, copy_ops);
    if (r.tma) r.deferred = DeferredProducts(kernel, plan, *loop, &r.deferred_carried);
    // The barrier protocol, over enough iterations that every slot is reused at both parities.
    bool consumer = roles && roles->loop == id;
    bool staged = consumer && roles->staged;
    if (r.stages && consumer) {
      WarpSpecializedDetail detail;
      detail.arrivals = 4;  // one per consumer warp
      detail.release_previous = !r.deferred_carried.empty() || staged;
      detail.turns = 0;
      for (OpId b : loop->body)
        detail.turns += KindOf(plan, b) == InstructionKind::kWgmma && !r.deferred.count(b.index) &&
                        !(staged && roles->staged->first == b);
      r.protocol = WarpSpecializedProtocol(r.stages, 2 * r.stages + 1, static_cast<int>(plan.threads / 128),
                                           roles->ping_pong, r.tma_bytes, detail);
    } else if (r.stages && r.tma) {
      r.protocol = TmaRingProtocol(r.stages, 2 * r.stages + 1, r.tma_bytes);
    } else if (r.stages) {
      r.protocol = CpAsyncRingProtocol(r.stages, 2 * r.stages + 1);
    }
    out.emplace(id.index, std::move(r));
  }
  return out;
}

}  // namespace weft::schedule
