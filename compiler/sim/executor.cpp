// The executor of synthesized tile kernels; see executor.h for the algorithm.
#include "sim/executor.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <optional>
#include <set>
#include <sstream>
#include <unordered_map>

#include "interp/ops.h"
#include "weft/numerics.h"

namespace weft::sim {

namespace {

using layout::IntTuple;
using layout::SwizzledLayout;
using layout::TvLayout;
using tile::OpId;
using tile::ValueId;
using RowCol = TvLayout::RowCol;
using runtime::HostTensor;
using synth::InstructionKind;

constexpr std::uint32_t kRegPoison = 0xDEADBEEF;
constexpr int kScratchRegisters = 160;  // fragments, wgmma accumulators (<= 128), vectors, partials

int RegBits(Dtype d) {
  return std::max(8, Bits(d));
}

int ElementBytes(Dtype d) {
  return std::max(1, Bits(d) / 8);
}

// A global tensor or a view of one: the parameter's buffer, the view's first element (a
// multi-index into the parameter), the view's extents (its last r axes) and the parameter's strides.
struct GlobalView {
  int buffer = -1;
  std::uint64_t param_base = 0;             // byte address of the parameter's element 0
  std::vector<std::int64_t> param_shape;    // the parameter's extents
  std::vector<std::int64_t> param_strides;  // elements, row-major
  std::vector<std::int64_t> start;          // per parameter axis
  std::vector<std::int64_t> shape;          // the view's extents (the last r axes)
  Dtype dtype = Dtype::F32;

  std::int64_t Rank() const { return static_cast<std::int64_t>(shape.size()); }
  // The byte address of the view's element (row, col) (rank 1: (i, 0)).
  std::uint64_t Address(RowCol e) const {
    std::size_t q = param_shape.size(), r = shape.size();
    std::int64_t offset = 0;
    for (std::size_t i = 0; i < q; ++i) offset += start[i] * param_strides[i];
    if (r == 1) offset += e.row * param_strides[q - 1];
    if (r == 2) offset += e.row * param_strides[q - 2] + e.col * param_strides[q - 1];
    return param_base + static_cast<std::uint64_t>(offset * ElementBytes(dtype));
  }
};

struct Slot {
  std::optional<HostTensor> scalar;
  std::optional<GlobalView> global;
  std::optional<std::uint32_t> shared_base;  // Shared tiles
  int reg = -1;                              // Reg tiles: first register
  std::optional<ValueId> shared_alias;       // a Reg value that wgmma reads from this Shared tile
};

// A TV layout evaluated once: CuTe's hierarchical evaluation is too slow to repeat per element.
struct FlatTv {
  std::int64_t threads = 0, values = 0, rows = 0;
  std::vector<std::int64_t> index;  // thread + threads * value -> row + rows * col
  RowCol At(std::int64_t t, std::int64_t v) const {
    std::int64_t i = index[static_cast<std::size_t>(t + threads * v)];
    return {i % rows, i / rows};
  }
};

// thread -> element index (row + rows * col) -> value index, for one register tile's TV layout.
using Holdings = std::vector<std::unordered_map<std::int64_t, int>>;

std::string Describe(RowCol e) {
  return "(" + std::to_string(e.row) + ", " + std::to_string(e.col) + ")";
}

class Executor {
 public:
  Executor(const tile::Kernel& kernel, const synth::Plan& plan, const RunOptions& options)
      : kernel_(kernel), plan_(plan), options_(options) {}

  Result<RunOutput, RunError> Run(const std::vector<HostTensor>& inputs);

 private:
  // --- values ---------------------------------------------------------------------------------
  const tile::Value& Val(ValueId v) const { return kernel_.Get(v); }
  std::string Name(ValueId v) const {
    const std::string& n = Val(v).name;
    return n.empty() ? "%" + std::to_string(v.index) : n;
  }
  RowCol Extent(ValueId v) const;
  const TvLayout& Tv(ValueId v) const;
  const SwizzledLayout& SmemLayout(ValueId v) const;
  const Holdings& Held(ValueId v);
  const FlatTv& Flat(const TvLayout& tv);
  const layout::Atom& AtomNamed(const std::string& name);
  int HeldValue(ValueId v, int thread, RowCol e, std::string_view what);
  std::uint64_t GetElem(ValueId v, int thread, int value) const;
  void SetElem(ValueId v, int thread, int value, std::uint64_t bits);
  const HostTensor& Scalar(ValueId v) const;
  std::int64_t ScalarInt(ValueId v) const { return runtime::LoadInt64(Scalar(v), 0); }
  std::int64_t SmemOffset(ValueId v, RowCol e) const;    // swizzled, elements
  std::int64_t LinearOffset(ValueId v, RowCol e) const;  // before the swizzle, elements
  std::int64_t EvalDim(const core::Dim& d) const;

  // --- ops ------------------------------------------------------------------------------------
  void ExecBlock(const std::vector<OpId>& ops);
  void Exec(OpId id);
  void ExecScalarOp(const tile::Op& op, const tile::op::ScalarOp& s);
  void ExecView(const tile::Op& op, const tile::op::View& v);
  void ExecToShared(OpId id, const tile::Op& op, const tile::op::ToShared& s);
  void ExecToRegs(OpId id, const tile::Op& op, const tile::op::ToRegs& r);
  // The plan's load of `regs` result `dst` from shared memory: whole (slices 1), or, for a streamed
  // mma operand, slice by slice (plan.h): slice s's instructions must deliver exactly the values
  // whose k (columns of A, rows of B: `k_is_col`) lies in [16 s, 16 s + 16).
  void LoadRegs(OpId id, ValueId dst, const tile::op::ToRegs& r, std::int64_t slices, bool k_is_col);
  void LoadStreamed(ValueId operand, bool is_a, std::int64_t k);
  void ExecMma(OpId id, const tile::Op& op, const tile::op::Mma& m);
  void ExecMmaSync(const synth::OpChoice& choice, const tile::op::Mma& m, ValueId result);
  void ExecWgmma(const synth::OpChoice& choice, const tile::op::Mma& m, ValueId result);
  void ExecStore(OpId id, const tile::op::Store& s);
  void ExecMap(const tile::op::Map& m, ValueId result);
  void ExecReduce(const tile::op::Reduce& r, ValueId result);
  void ExecConvert(ValueId src, ValueId result);
  void ExecLoop(const tile::Op& op, const tile::op::Loop& loop);
  // Copies a register tile into another: each thread, each element its destination layout gives it,
  // from where the source layout keeps that element in the same thread.
  void CopyRegs(ValueId dst, ValueId src, std::string_view what);
  // The elements a thread holds of a Reg tile as a rank-1 tensor, in the order of `order`
  // (elements of the result tile; broadcast onto v's shape).
  HostTensor ThreadOperand(ValueId v, int thread, const std::vector<RowCol>& order, RowCol result_extent,
                           int result_rank, std::string_view what);
  SmemOperand Descriptor(ValueId shared, bool is_b, std::int64_t mn0, std::int64_t k0);

  const tile::Kernel& kernel_;
  const synth::Plan& plan_;
  const RunOptions& options_;
  std::optional<Machine> machine_;
  std::vector<Slot> slots_;
  std::vector<std::optional<Holdings>> holdings_;
  std::unordered_map<const TvLayout*, FlatTv> flat_;
  std::map<std::string, layout::Atom> atoms_;
  std::map<core::SizeVarId, std::int64_t> sizes_;
  std::vector<std::int64_t> block_;
  std::vector<std::int64_t> iterations_;  // the enclosing loops' iteration numbers, innermost last
  int scratch_reg_ = 0;
  std::uint32_t scratch_shared_ = 0;  // shared bytes past the plan's, for reductions and converts
  Span span_;                         // the op being run, for errors
};

// --- values ------------------------------------------------------------------------------------

RowCol Executor::Extent(ValueId v) const {
  const auto& shape = Val(v).shape;
  auto dim = [&](std::size_t i) {
    auto c = shape[i].AsConstant();
    if (!c) throw Fault("`" + Name(v) + "` has a symbolic extent: tiles have constant extents");
    return *c;
  };
  if (shape.size() == 1) return {dim(0), 1};
  if (shape.size() == 2) return {dim(0), dim(1)};
  throw Fault("`" + Name(v) + "` has rank " + std::to_string(shape.size()) +
              ": the simulator runs tiles of rank 1 and 2");
}

const TvLayout& Executor::Tv(ValueId v) const {
  const auto& choice = plan_.values.at(v.index);
  if (!choice.regs) throw Fault("the plan gives register tile `" + Name(v) + "` no TV layout");
  return *choice.regs;
}

const SwizzledLayout& Executor::SmemLayout(ValueId v) const {
  const auto& choice = plan_.values.at(v.index);
  if (!choice.shared) throw Fault("the plan gives shared tile `" + Name(v) + "` no layout");
  return *choice.shared;
}

const Holdings& Executor::Held(ValueId v) {
  auto& h = holdings_.at(v.index);
  if (h) return *h;
  const TvLayout& tv = Tv(v);
  RowCol ext = Extent(v);
  if (tv.rows != ext.row || tv.cols != ext.col)
    throw Fault("the TV layout of `" + Name(v) + "` covers a " + std::to_string(tv.rows) + "x" +
                std::to_string(tv.cols) + " tile, but the tile is " + std::to_string(ext.row) + "x" +
                std::to_string(ext.col));
  if (Flat(tv).threads != plan_.threads)
    throw Fault("the TV layout of `" + Name(v) + "` has " + std::to_string(Flat(tv).threads) + " threads, the block " +
                std::to_string(plan_.threads));
  Holdings out(static_cast<std::size_t>(Flat(tv).threads));
  for (std::int64_t t = 0; t < Flat(tv).threads; ++t)
    for (std::int64_t i = 0; i < Flat(tv).values; ++i) {
      RowCol e = Flat(tv).At(t, i);
      out[t].emplace(e.row + tv.rows * e.col, static_cast<int>(i));  // the first value holding it wins
    }
  h = std::move(out);
  return *h;
}

const FlatTv& Executor::Flat(const TvLayout& tv) {
  auto it = flat_.find(&tv);
  if (it != flat_.end()) return it->second;
  FlatTv f{tv.threads(), tv.values(), tv.rows, {}};
  f.index.resize(static_cast<std::size_t>(f.threads * f.values));
  for (std::int64_t i = 0; i < f.threads * f.values; ++i) f.index[static_cast<std::size_t>(i)] = tv.layout(i);
  return flat_.emplace(&tv, std::move(f)).first->second;
}

const layout::Atom& Executor::AtomNamed(const std::string& name) {
  auto it = atoms_.find(name);
  if (it != atoms_.end()) return it->second;
  auto atom = layout::FindAtom(name);
  if (!atom) throw Fault(atom.error());
  return atoms_.emplace(name, *atom).first->second;
}

int Executor::HeldValue(ValueId v, int thread, RowCol e, std::string_view what) {
  const auto& held = Held(v)[thread];
  auto it = held.find(e.row + Tv(v).rows * e.col);
  if (it == held.end())
    throw Fault("thread " + std::to_string(thread) + " does not hold element " + Describe(e) + " of `" + Name(v) +
                "` in the plan's layout, but " + std::string(what) + " needs it there");
  return it->second;
}

std::uint64_t Executor::GetElem(ValueId v, int thread, int value) const {
  int bits = RegBits(Val(v).dtype);
  std::int64_t pos = static_cast<std::int64_t>(value) * bits;
  int reg = slots_[v.index].reg + static_cast<int>(pos / 32);
  if (bits == 64) return machine_->Reg(thread, reg) | (std::uint64_t{machine_->Reg(thread, reg + 1)} << 32);
  std::uint64_t mask = (std::uint64_t{1} << bits) - 1;
  return (machine_->Reg(thread, reg) >> (pos % 32)) & mask;
}

void Executor::SetElem(ValueId v, int thread, int value, std::uint64_t bits_value) {
  int bits = RegBits(Val(v).dtype);
  std::int64_t pos = static_cast<std::int64_t>(value) * bits;
  int reg = slots_[v.index].reg + static_cast<int>(pos / 32);
  if (bits == 64) {
    machine_->SetReg(thread, reg, static_cast<std::uint32_t>(bits_value));
    machine_->SetReg(thread, reg + 1, static_cast<std::uint32_t>(bits_value >> 32));
    return;
  }
  std::uint32_t mask = static_cast<std::uint32_t>(((std::uint64_t{1} << bits) - 1) << (pos % 32));
  std::uint32_t r = machine_->Reg(thread, reg);
  r = (r & ~mask) | (static_cast<std::uint32_t>(bits_value << (pos % 32)) & mask);
  machine_->SetReg(thread, reg, r);
}

const HostTensor& Executor::Scalar(ValueId v) const {
  const auto& s = slots_.at(v.index).scalar;
  if (!s) throw Fault("scalar `" + Name(v) + "` is used before it is computed");
  return *s;
}

std::int64_t Executor::SmemOffset(ValueId v, RowCol e) const {
  const SwizzledLayout& l = SmemLayout(v);
  if (l.layout().rank() == 2) {
    auto o = l.Evaluate(IntTuple::Tuple({e.row, e.col}));
    if (!o) throw Fault("the shared layout of `" + Name(v) + "` cannot place " + Describe(e) + ": " + o.error());
    return *o;
  }
  return l(e.row + Extent(v).row * e.col);
}

std::int64_t Executor::LinearOffset(ValueId v, RowCol e) const {
  const SwizzledLayout& l = SmemLayout(v);
  if (l.layout().rank() == 2) {
    auto o = l.layout().Evaluate(IntTuple::Tuple({e.row, e.col}));
    if (!o) throw Fault("the shared layout of `" + Name(v) + "` cannot place " + Describe(e) + ": " + o.error());
    return l.offset() + *o;
  }
  return l.offset() + l.layout()(e.row + Extent(v).row * e.col);
}

std::int64_t Executor::EvalDim(const core::Dim& d) const {
  auto r = core::Evaluate(d, [&](core::SizeVarId var) -> std::int64_t {
    auto it = sizes_.find(var);
    if (it == sizes_.end()) throw Fault("size `" + core::ToString(d) + "` is not known: give it with a --size");
    return it->second;
  });
  if (!r) throw Fault(r.error().message);
  return *r;
}

// --- running -----------------------------------------------------------------------------------

Result<RunOutput, RunError> Executor::Run(const std::vector<HostTensor>& inputs) {
  try {
    if (plan_.values.size() != kernel_.values.size() || plan_.ops.size() != kernel_.ops.size())
      return RunError{kernel_.span, "the plan does not belong to kernel `" + kernel_.name + "`"};
    if (plan_.threads != kernel_.threads && plan_.threads < 32)
      return RunError{kernel_.span,
                      "the plan's block of " + std::to_string(plan_.threads) + " threads is not runnable"};
    slots_.assign(kernel_.values.size(), Slot{});
    holdings_.assign(kernel_.values.size(), std::nullopt);
    sizes_ = options_.sizes;

    // 1. Sizes from the inputs' shapes, then the out tensors.
    std::size_t input = 0;
    for (const tile::Param& p : kernel_.params) {
      if (p.out) continue;
      if (input >= inputs.size())
        return RunError{kernel_.span, "kernel `" + kernel_.name + "` takes more inputs than the " +
                                          std::to_string(inputs.size()) + " given"};
      const HostTensor& t = inputs[input++];
      const tile::Value& v = Val(p.value);
      if (t.dtype != v.dtype)
        return RunError{v.span, "input `" + p.name + "` is " + std::string(Spelling(t.dtype)) + ", the kernel takes " +
                                    std::string(Spelling(v.dtype))};
      if (v.space != tile::Space::Global) continue;
      if (t.shape.size() != v.shape.size())
        return RunError{v.span, "input `" + p.name + "` has rank " + std::to_string(t.shape.size()) +
                                    ", the kernel takes rank " + std::to_string(v.shape.size())};
      for (std::size_t i = 0; i < t.shape.size(); ++i)
        if (auto var = v.shape[i].AsVar()) sizes_.emplace(*var, t.shape[i]);
    }
    if (input != inputs.size())
      return RunError{kernel_.span, "kernel `" + kernel_.name + "` takes " + std::to_string(input) + " inputs, given " +
                                        std::to_string(inputs.size())};

    std::int64_t scratch = 0;  // shared bytes for cross-warp reductions and converts: 8 per element per warp
    for (const tile::Op& op : kernel_.ops) {
      std::optional<ValueId> src;
      if (auto* r = std::get_if<tile::op::Reduce>(&op.node)) src = r->src;
      if (auto* c = std::get_if<tile::op::Convert>(&op.node)) src = c->src;
      if (!src) continue;
      std::int64_t n = 1;
      for (const core::Dim& d : Val(*src).shape) n *= d.AsConstant().value_or(1);
      scratch = std::max(scratch, n * 8 * std::max<std::int64_t>(1, plan_.threads / 32));
    }
    scratch_shared_ = static_cast<std::uint32_t>((plan_.shared_bytes + 1023) / 1024 * 1024);
    machine_.emplace(static_cast<int>(plan_.threads), scratch_shared_ + scratch);

    RunOutput out;
    std::vector<int> out_buffers;
    input = 0;
    for (const tile::Param& p : kernel_.params) {
      const tile::Value& v = Val(p.value);
      if (v.space != tile::Space::Global) {
        slots_[p.value.index].scalar = inputs[input++];
        continue;
      }
      HostTensor t;
      if (p.out) {
        std::vector<std::int64_t> shape;
        for (const core::Dim& d : v.shape) shape.push_back(EvalDim(d));
        t = HostTensor::Zeros(v.dtype, shape);
      } else {
        t = inputs[input++];
      }
      GlobalView g;
      g.buffer = static_cast<int>((machine_->AddGlobal(t) >> 40) - 1);
      g.param_base = Machine::GlobalBase(g.buffer);
      g.param_shape = t.shape;
      g.param_strides.assign(t.shape.size(), 1);
      for (int i = static_cast<int>(t.shape.size()) - 2; i >= 0; --i)
        g.param_strides[i] = g.param_strides[i + 1] * t.shape[i + 1];
      g.start.assign(t.shape.size(), 0);
      g.shape = t.shape;
      g.dtype = v.dtype;
      if (p.out) out_buffers.push_back(g.buffer);
      slots_[p.value.index].global = g;
    }

    // 2. Registers: one range per register tile, the same in every thread (as in SASS).
    for (std::size_t i = 0; i < kernel_.values.size(); ++i) {
      const tile::Value& v = kernel_.values[i];
      if (v.space != tile::Space::Reg || !plan_.values[i].regs) continue;
      std::int64_t bits = plan_.values[i].regs->values() * RegBits(v.dtype);
      slots_[i].reg = machine_->Allocate(static_cast<int>((bits + 31) / 32));
    }
    scratch_reg_ = machine_->Allocate(kScratchRegisters);

    // 3. The grid, block after block.
    std::vector<std::int64_t> grid;
    for (const core::Dim& d : kernel_.grid) grid.push_back(EvalDim(d));
    std::int64_t blocks = 1;
    for (std::int64_t g : grid) blocks *= g;
    for (std::int64_t b = 0; b < blocks; ++b) {
      block_.clear();
      std::int64_t rest = b;
      for (std::size_t i = grid.size(); i-- > 0;) {  // the last axis fastest
        block_.insert(block_.begin(), rest % grid[i]);
        rest /= grid[i];
      }
      machine_->ResetBlock(kRegPoison, options_.shared_poison);
      span_ = kernel_.span;
      ExecBlock(kernel_.body);
    }
    for (int buffer : out_buffers) out.outputs.push_back(machine_->Global(buffer));
    out.counts = machine_->counts();
    out.blocks = blocks;
    return out;
  } catch (const Fault& fault) {
    std::string where;
    if (!block_.empty()) {
      where = " in block (";
      for (std::size_t i = 0; i < block_.size(); ++i) where += (i ? ", " : "") + std::to_string(block_[i]);
      where += ")";
    }
    return RunError{span_, std::string(fault.what()) + where};
  }
}

void Executor::ExecBlock(const std::vector<OpId>& ops) {
  for (OpId id : ops) Exec(id);
}

void Executor::Exec(OpId id) {
  const tile::Op& op = kernel_.Get(id);
  span_ = op.span;
  auto result = [&]() -> ValueId {
    if (op.results.empty()) throw Fault("an op without a result");
    return op.results[0];
  };
  std::visit(
      [&](const auto& node) {
        using T = std::decay_t<decltype(node)>;
        if constexpr (std::is_same_v<T, tile::op::BlockIdx>) {
          if (node.axis < 0 || node.axis >= static_cast<int>(block_.size())) throw Fault("no block_idx axis");
          slots_[result().index].scalar = interp::ScalarFromInt(Dtype::I64, block_[node.axis]);
        } else if constexpr (std::is_same_v<T, tile::op::Constant>) {
          Dtype d = Val(result()).dtype;
          HostTensor s;
          if (auto* i = std::get_if<std::int64_t>(&node.value)) s = interp::ScalarFromInt(d, *i);
          if (auto* f = std::get_if<double>(&node.value)) s = interp::ScalarFromDouble(d, *f);
          if (auto* b = std::get_if<bool>(&node.value)) s = interp::ScalarFromInt(d, *b ? 1 : 0);
          slots_[result().index].scalar = s;
        } else if constexpr (std::is_same_v<T, tile::op::Size>) {
          slots_[result().index].scalar = interp::ScalarFromInt(Dtype::I64, EvalDim(node.dim));
        } else if constexpr (std::is_same_v<T, tile::op::ScalarOp>) {
          ExecScalarOp(op, node);
        } else if constexpr (std::is_same_v<T, tile::op::View>) {
          ExecView(op, node);
        } else if constexpr (std::is_same_v<T, tile::op::ToShared>) {
          ExecToShared(id, op, node);
        } else if constexpr (std::is_same_v<T, tile::op::ToRegs>) {
          ExecToRegs(id, op, node);
        } else if constexpr (std::is_same_v<T, tile::op::Store>) {
          ExecStore(id, node);
        } else if constexpr (std::is_same_v<T, tile::op::Mma>) {
          ExecMma(id, op, node);
        } else if constexpr (std::is_same_v<T, tile::op::Fill>) {
          ValueId r = result();
          HostTensor value = *interp::Cast(Val(r).dtype, Scalar(node.value));
          std::uint64_t bits = runtime::LoadBits(value, 0);
          const TvLayout& tv = Tv(r);
          for (int t = 0; t < Flat(tv).threads; ++t)
            for (int v = 0; v < Flat(tv).values; ++v) SetElem(r, t, v, bits);
        } else if constexpr (std::is_same_v<T, tile::op::Iota>) {
          ValueId r = result();
          const TvLayout& tv = Tv(r);
          HostTensor one = HostTensor::Zeros(Val(r).dtype, {});
          for (int t = 0; t < Flat(tv).threads; ++t)
            for (int v = 0; v < Flat(tv).values; ++v) {
              runtime::StoreInt64(one, 0, Flat(tv).At(t, v).row);
              SetElem(r, t, v, runtime::LoadBits(one, 0));
            }
        } else if constexpr (std::is_same_v<T, tile::op::Map>) {
          ExecMap(node, result());
        } else if constexpr (std::is_same_v<T, tile::op::Reduce>) {
          ExecReduce(node, result());
        } else if constexpr (std::is_same_v<T, tile::op::Expand>) {
          CopyRegs(result(), node.src, "`expand`");
        } else if constexpr (std::is_same_v<T, tile::op::Cast>) {
          ValueId r = result();
          if (Val(node.src).space == tile::Space::Scalar) {  // `cast f32 kk`
            auto c = interp::Cast(node.dtype, Scalar(node.src));
            if (!c) throw Fault(c.error().message);
            slots_[r.index].scalar = *c;
            return;
          }
          const TvLayout& tv = Tv(r);
          RowCol ext = Extent(r);
          for (int t = 0; t < Flat(tv).threads; ++t) {
            std::vector<RowCol> order;
            for (int v = 0; v < Flat(tv).values; ++v) order.push_back(Flat(tv).At(t, v));
            HostTensor in = ThreadOperand(node.src, t, order, ext, static_cast<int>(Val(r).shape.size()), "`cast`");
            auto c = interp::Cast(node.dtype, in);
            if (!c) throw Fault(c.error().message);
            for (int v = 0; v < Flat(tv).values; ++v) SetElem(r, t, v, runtime::LoadBits(*c, v));
          }
        } else if constexpr (std::is_same_v<T, tile::op::Convert>) {
          ExecConvert(node.src, result());
        } else if constexpr (std::is_same_v<T, tile::op::Transpose>) {
          // A view: the parent's buffer, read through the parent's coordinates (ExecToRegs).
          slots_[result().index].shared_base = slots_.at(node.src.index).shared_base;
        } else if constexpr (std::is_same_v<T, tile::op::Loop>) {
          ExecLoop(op, node);
        }
      },
      op.node);
}

void Executor::ExecScalarOp(const tile::Op& op, const tile::op::ScalarOp& s) {
  static const std::map<std::string, interp::BinaryOp, std::less<>> binary = {
      {"+", interp::BinaryOp::Add},          {"-", interp::BinaryOp::Sub},
      {"*", interp::BinaryOp::Mul},          {"/", interp::BinaryOp::Div},
      {"%", interp::BinaryOp::Mod},          {"==", interp::BinaryOp::Eq},
      {"!=", interp::BinaryOp::Ne},          {"<", interp::BinaryOp::Lt},
      {"<=", interp::BinaryOp::Le},          {">", interp::BinaryOp::Gt},
      {">=", interp::BinaryOp::Ge},          {"&&", interp::BinaryOp::And},
      {"||", interp::BinaryOp::Or},          {"maximum", interp::BinaryOp::Maximum},
      {"minimum", interp::BinaryOp::Minimum}};
  static const std::map<std::string, interp::UnaryOp, std::less<>> unary = {
      {"negate", interp::UnaryOp::Neg}, {"abs", interp::UnaryOp::Abs},         {"exp", interp::UnaryOp::Exp},
      {"log", interp::UnaryOp::Log},    {"sqrt", interp::UnaryOp::Sqrt},       {"rsqrt", interp::UnaryOp::Rsqrt},
      {"tanh", interp::UnaryOp::Tanh},  {"sigmoid", interp::UnaryOp::Sigmoid}, {"sin", interp::UnaryOp::Sin},
      {"cos", interp::UnaryOp::Cos}};
  std::vector<HostTensor> args;
  for (ValueId a : s.args) args.push_back(Scalar(a));
  interp::OpResult r = interp::OpError{"scalar op `" + s.fn + "` is not simulated"};
  if (auto b = binary.find(s.fn); b != binary.end() && args.size() == 2)
    r = interp::Binary(b->second, args[0], args[1]);
  if (auto u = unary.find(s.fn); u != unary.end() && args.size() == 1) r = interp::Unary(u->second, args[0]);
  if (s.fn == "select" && args.size() == 3) r = interp::Select(args[0], args[1], args[2]);
  if (!r) throw Fault(r.error().message);
  slots_[op.results.at(0).index].scalar = *r;
}

void Executor::ExecView(const tile::Op& op, const tile::op::View& v) {
  const auto& parent = slots_.at(v.tensor.index).global;
  if (!parent) throw Fault("`tile` of `" + Name(v.tensor) + "`, which is not a global tensor");
  GlobalView g = *parent;
  std::size_t q = g.param_shape.size(), r = v.shape.size();
  if (v.coords.size() != q || r > q) throw Fault("`tile` has " + std::to_string(v.coords.size()) + " coordinates");
  for (std::size_t i = 0; i < q; ++i) {
    std::int64_t c = ScalarInt(v.coords[i]);
    bool tiled = i >= q - r;
    std::int64_t extent = tiled ? v.shape[i - (q - r)] : 1;
    std::int64_t first = c * extent;
    if (c < 0 || first + extent > g.param_shape[i])
      throw Fault("tile coordinate " + std::to_string(c) + " of axis " + std::to_string(i) + " of `" + Name(v.tensor) +
                  "` is out of range (extent " + std::to_string(g.param_shape[i]) + ", tile " + std::to_string(extent) +
                  ")");
    g.start[i] = first;
  }
  g.shape = v.shape;
  slots_[op.results.at(0).index].global = g;
}

// The element `e` advanced by `n` along the tile's last axis (rows for a rank-1 tile).
RowCol Advance(RowCol e, std::int64_t n, int rank) {
  return rank == 1 ? RowCol{e.row + n, e.col} : RowCol{e.row, e.col + n};
}

void Executor::ExecToShared(OpId id, const tile::Op& op, const tile::op::ToShared& s) {
  ValueId dst = op.results.at(0);
  const synth::ValueChoice& vc = plan_.values.at(dst.index);
  const synth::OpChoice& choice = plan_.ops.at(id.index);
  const auto& src = slots_.at(s.src.index).global;
  if (!src) throw Fault("`shared` of `" + Name(s.src) + "`, which is not a global tile");
  std::int64_t stage = vc.stages > 1 && !iterations_.empty() ? iterations_.back() % vc.stages : 0;
  std::uint32_t base = static_cast<std::uint32_t>(vc.shared_offset + stage * vc.stage_bytes);
  slots_[dst.index].shared_base = base;
  int e = ElementBytes(Val(dst).dtype);
  int rank = static_cast<int>(Val(dst).shape.size());
  RowCol ext = Extent(dst);
  (void)SmemLayout(dst);

  if (!CopiesIntoShared(choice.instruction.kind))
    throw Fault("the plan's `" + Spelling(choice.instruction) + "` does not copy into shared memory");
  if (choice.instruction.kind == InstructionKind::kTma2d) {
    if (!choice.tma) throw Fault("the plan chose TMA for `" + Name(dst) + "` but gives no box");
    if (rank != 2 || src->param_shape.size() < 2) throw Fault("the simulator's TMA loads are 2-D");
    layout::TmaBox map = *choice.tma;
    std::size_t q = src->param_shape.size();
    // The tensor map covers the parameter's last two axes at the view's leading indices.
    std::vector<std::int64_t> lead = src->start;
    lead[q - 1] = lead[q - 2] = 0;
    GlobalView base_view = *src;
    base_view.start = lead;
    base_view.shape = {1, 1};
    map.global_address = static_cast<std::int64_t>(base_view.Address({0, 0}));
    map.global_dims = {src->param_shape[q - 1], src->param_shape[q - 2]};
    map.global_strides_bytes = {src->param_strides[q - 2] * e};
    map.element_bytes = e;
    if (map.box_dims.size() != 2) throw Fault("the plan's TMA box for `" + Name(dst) + "` is not 2-D");
    for (std::int64_t r0 = 0; r0 < ext.row; r0 += map.box_dims[1])
      for (std::int64_t c0 = 0; c0 < ext.col; c0 += map.box_dims[0]) {
        std::uint32_t at = base + static_cast<std::uint32_t>(LinearOffset(dst, {r0, c0}) * e);
        machine_->TmaLoad2d(map, at, src->start[q - 1] + c0, src->start[q - 2] + r0);
      }
    machine_->BarSync();  // the mbarrier wait
    return;
  }
  if (!choice.copy) throw Fault("the plan gives the copy into `" + Name(dst) + "` no TV layout");
  int vb = choice.vector_bytes;
  if (vb <= 0 || vb % e != 0)
    throw Fault("the plan's copy into `" + Name(dst) + "` has vectors of " + std::to_string(vb) + " bytes");
  const TvLayout& copy = *choice.copy;
  for (int t = 0; t < Flat(copy).threads; ++t) {  // cp.async
    for (int v = 0; v < Flat(copy).values; ++v) {
      RowCol first = Flat(copy).At(t, v);
      std::uint32_t saddr = base + static_cast<std::uint32_t>(SmemOffset(dst, first) * e);
      machine_->CpAsync(t, saddr, src->Address(first), vb);
    }
    machine_->CpAsyncCommit(t);
    machine_->CpAsyncWait(t, 0);
  }
  (void)rank;
  machine_->BarSync();
}

void Executor::ExecToRegs(OpId id, const tile::Op& op, const tile::op::ToRegs& r) {
  ValueId dst = op.results.at(0);
  const synth::OpChoice& choice = plan_.ops.at(id.index);
  if (choice.instruction.kind == InstructionKind::kNone || !plan_.values.at(dst.index).regs) {
    slots_[dst.index].shared_alias = r.src;  // wgmma reads it where it is
    return;
  }
  if (plan_.values.at(dst.index).streamed) {  // loaded at each mma that reads it (LoadStreamed)
    if (!slots_.at(r.src.index).shared_base)
      throw Fault("`regs` of `" + Name(r.src) + "`, which is not in shared memory");
    return;
  }
  LoadRegs(id, dst, r, 1, true);
}

void Executor::LoadStreamed(ValueId operand, bool is_a, std::int64_t k) {
  if (!plan_.values.at(operand.index).streamed) return;
  const tile::Value& v = Val(operand);
  const auto* load = v.def.valid() ? std::get_if<tile::op::ToRegs>(&kernel_.Get(v.def).node) : nullptr;
  if (!load) throw Fault("the plan streams `" + Name(operand) + "`, which no `regs` of shared memory makes");
  // Poison first: only what this mma's slices deliver may reach the atoms.
  const FlatTv& f = Flat(Tv(operand));
  for (int t = 0; t < f.threads; ++t)
    for (int i = 0; i < f.values; ++i) SetElem(operand, t, i, kRegPoison);
  Span outer = span_;
  span_ = kernel_.Get(v.def).span;
  LoadRegs(v.def, operand, *load, k / 16, is_a);
  span_ = outer;
}

void Executor::LoadRegs(OpId id, ValueId dst, const tile::op::ToRegs& r, std::int64_t slices, bool k_is_col) {
  const synth::OpChoice& choice = plan_.ops.at(id.index);
  auto base_opt = slots_.at(r.src.index).shared_base;
  if (!base_opt) throw Fault("`regs` of `" + Name(r.src) + "`, which is not in shared memory");
  // Through a transposed view (`regs (transpose s)`), the plan's copy is in s's coordinates: read s
  // and hand each element to the destination at its swapped position.
  ValueId smem = r.src;
  bool swapped = false;
  if (const tile::Value& sv = Val(r.src); sv.def.valid()) {
    if (const auto* t = std::get_if<tile::op::Transpose>(&kernel_.Get(sv.def).node)) smem = t->src, swapped = true;
  }
  std::uint32_t base = *base_opt;
  int e = ElementBytes(Val(dst).dtype);
  int rank = static_cast<int>(Val(dst).shape.size());
  if (!choice.copy) throw Fault("the plan gives the load of `" + Name(dst) + "` no copy TV layout");
  const TvLayout& copy = *choice.copy;
  const TvLayout& tv = Tv(dst);
  // Which (thread, value) of the destination got written: each exactly once.
  std::vector<std::vector<char>> written(static_cast<std::size_t>(Flat(tv).threads),
                                         std::vector<char>(static_cast<std::size_t>(Flat(tv).values), 0));
  const FlatTv& ftv = Flat(tv);
  std::int64_t slice = 0, per_slice = 0;  // the slice being loaded, instructions per slice
  if (slices < 1 || Flat(copy).values % slices != 0)
    throw Fault("the plan streams `" + Name(dst) + "` in " + std::to_string(slices) + " k16 slices, but its load has " +
                std::to_string(Flat(copy).values) + " instructions a thread");
  per_slice = Flat(copy).values / slices;
  auto deliver = [&](int thread, RowCol elem, std::uint64_t bits, std::string_view what) {
    if (swapped) elem = RowCol{elem.col, elem.row};
    if (slices > 1 && (k_is_col ? elem.col : elem.row) / 16 != slice)
      throw Fault(std::string(what) + " of k16 slice " + std::to_string(slice) + " of streamed `" + Name(dst) +
                  "` delivers element " + Describe(elem) + " to thread " + std::to_string(thread) +
                  ", which is in slice " + std::to_string((k_is_col ? elem.col : elem.row) / 16));
    int v = HeldValue(dst, thread, elem, what);
    SetElem(dst, thread, v, bits);
    // every value of the thread that holds this element (a broadcast may hold it twice)
    for (int i = 0; i < ftv.values; ++i)
      if (ftv.At(thread, i) == elem) {
        SetElem(dst, thread, i, bits);
        written[thread][i] = 1;
      }
  };
  std::string what = "`" + Spelling(choice.instruction) + "`";
  if (!LoadsIntoRegisters(choice.instruction.kind)) throw Fault("the plan's " + what + " does not load into registers");
  if (choice.instruction.kind == InstructionKind::kLdmatrix) {
    if (e != 2) throw Fault("ldmatrix moves 16-bit elements, `" + Name(dst) + "` has " + std::to_string(8 * e));
    int count = choice.instruction.count;
    bool trans = choice.instruction.trans;
    for (int v = 0; v < Flat(copy).values; ++v) {  // in slice order: instructions of slice v / per_slice
      slice = v / per_slice;
      for (int w = 0; w < Flat(copy).threads / 32; ++w) {
        std::array<std::uint32_t, 32> rows{};
        std::array<RowCol, 32> starts{};
        for (int l = 0; l < 8 * count; ++l) {
          starts[l] = Flat(copy).At(w * 32 + l, v);
          rows[l] = base + static_cast<std::uint32_t>(SmemOffset(smem, starts[l]) * e);
        }
        machine_->Ldmatrix(w, count, trans, scratch_reg_, rows);
        for (int l = 0; l < 32; ++l) {
          int g = l / 4, t = l % 4;
          for (int j = 0; j < count; ++j)
            for (int h = 0; h < 2; ++h) {
              // the stored row (a lane's address) and the element within it
              int row_lane = trans ? 8 * j + 2 * t + h : 8 * j + g;
              int within = trans ? g : 2 * t + h;
              RowCol elem = Advance(starts[row_lane], within, rank);
              std::uint64_t bits = (machine_->Reg(w * 32 + l, scratch_reg_ + j) >> (16 * h)) & 0xFFFF;
              deliver(w * 32 + l, elem, bits, what);
            }
        }
      }
    }
  } else {
    int vb = choice.vector_bytes;
    if (vb <= 0 || vb % e != 0)
      throw Fault("the plan's load of `" + Name(dst) + "` has vectors of " + std::to_string(vb) + " bytes");
    for (int v = 0; v < Flat(copy).values; ++v)
      for (int t = 0; t < Flat(copy).threads; ++t) {
        slice = v / per_slice;
        RowCol first = Flat(copy).At(t, v);
        machine_->LdShared(t, scratch_reg_, base + static_cast<std::uint32_t>(SmemOffset(smem, first) * e), vb);
        for (int i = 0; i < vb / e; ++i) {
          std::uint64_t bits = 0;
          for (int b = 0; b < e; ++b) {
            int byte = i * e + b;
            bits |= std::uint64_t((machine_->Reg(t, scratch_reg_ + byte / 4) >> (8 * (byte % 4))) & 0xFF) << (8 * b);
          }
          deliver(t, Advance(first, i, rank), bits, what);
        }
      }
  }
  for (int t = 0; t < Flat(tv).threads; ++t)
    for (int v = 0; v < Flat(tv).values; ++v)
      if (!written[t][v])
        throw Fault(what + " never delivers element " + Describe(Flat(tv).At(t, v)) + " of `" + Name(dst) +
                    "` to thread " + std::to_string(t) + ", which the plan's layout gives it");
}

void Executor::CopyRegs(ValueId dst, ValueId src, std::string_view what) {
  const TvLayout& d = Tv(dst);
  const TvLayout& s = Tv(src);
  if (d.layout == s.layout && d.rows == s.rows && d.cols == s.cols && Val(dst).dtype == Val(src).dtype) {
    int regs = static_cast<int>((Flat(d).values * RegBits(Val(dst).dtype) + 31) / 32);
    for (int t = 0; t < Flat(d).threads; ++t)
      for (int i = 0; i < regs; ++i)
        machine_->SetReg(t, slots_[dst.index].reg + i, machine_->Reg(t, slots_[src.index].reg + i));
    return;
  }
  RowCol ext = Extent(dst);
  for (int t = 0; t < Flat(d).threads; ++t)
    for (int v = 0; v < Flat(d).values; ++v) {
      RowCol e = Flat(d).At(t, v);
      if (Val(src).shape.size() + 1 == Val(dst).shape.size() && ext.col == 1) e = {e.row, 0};  // expand: [n] -> [n, 1]
      SetElem(dst, t, v, GetElem(src, t, HeldValue(src, t, e, what)));
    }
}

HostTensor Executor::ThreadOperand(ValueId v, int thread, const std::vector<RowCol>& order, RowCol result_extent,
                                   int result_rank, std::string_view what) {
  RowCol ext = Extent(v);
  int rank = static_cast<int>(Val(v).shape.size());
  HostTensor out = HostTensor::Zeros(Val(v).dtype, {static_cast<std::int64_t>(order.size())});
  for (std::size_t i = 0; i < order.size(); ++i) {
    // The result's index, broadcast NumPy-style onto v's shape (axes aligned at the end).
    std::vector<std::int64_t> idx = result_rank == 1 ? std::vector<std::int64_t>{order[i].row}
                                                     : std::vector<std::int64_t>{order[i].row, order[i].col};
    std::vector<std::int64_t> vshape =
        rank == 1 ? std::vector<std::int64_t>{ext.row} : std::vector<std::int64_t>{ext.row, ext.col};
    std::vector<std::int64_t> vidx(vshape.size(), 0);
    for (std::size_t a = 0; a < vshape.size(); ++a) {
      std::size_t ra = a + idx.size() - vshape.size();
      vidx[a] = vshape[a] == 1 ? 0 : idx[ra];
    }
    RowCol e = rank == 1 ? RowCol{vidx[0], 0} : RowCol{vidx[0], vidx[1]};
    (void)result_extent;
    runtime::StoreBits(out, static_cast<std::int64_t>(i), GetElem(v, thread, HeldValue(v, thread, e, what)));
  }
  return out;
}

void Executor::ExecMap(const tile::op::Map& m, ValueId result) {
  static const std::map<std::string, interp::BinaryOp, std::less<>> binary = {
      {"+", interp::BinaryOp::Add},          {"-", interp::BinaryOp::Sub},
      {"*", interp::BinaryOp::Mul},          {"/", interp::BinaryOp::Div},
      {"%", interp::BinaryOp::Mod},          {"==", interp::BinaryOp::Eq},
      {"!=", interp::BinaryOp::Ne},          {"<", interp::BinaryOp::Lt},
      {"<=", interp::BinaryOp::Le},          {">", interp::BinaryOp::Gt},
      {">=", interp::BinaryOp::Ge},          {"&&", interp::BinaryOp::And},
      {"||", interp::BinaryOp::Or},          {"maximum", interp::BinaryOp::Maximum},
      {"minimum", interp::BinaryOp::Minimum}};
  static const std::map<std::string, interp::UnaryOp, std::less<>> unary = {
      {"negate", interp::UnaryOp::Neg}, {"abs", interp::UnaryOp::Abs},         {"exp", interp::UnaryOp::Exp},
      {"log", interp::UnaryOp::Log},    {"sqrt", interp::UnaryOp::Sqrt},       {"rsqrt", interp::UnaryOp::Rsqrt},
      {"tanh", interp::UnaryOp::Tanh},  {"sigmoid", interp::UnaryOp::Sigmoid}, {"sin", interp::UnaryOp::Sin},
      {"cos", interp::UnaryOp::Cos}};
  const TvLayout& tv = Tv(result);
  RowCol ext = Extent(result);
  int rank = static_cast<int>(Val(result).shape.size());
  std::string what = "`" + m.fn + "`";
  for (int t = 0; t < Flat(tv).threads; ++t) {
    std::vector<RowCol> order;
    for (int v = 0; v < Flat(tv).values; ++v) order.push_back(Flat(tv).At(t, v));
    std::vector<HostTensor> args;
    for (ValueId a : m.args) {
      if (Val(a).space == tile::Space::Scalar)
        args.push_back(Scalar(a));
      else
        args.push_back(ThreadOperand(a, t, order, ext, rank, what));
    }
    interp::OpResult r = interp::OpError{"`" + m.fn + "` is not simulated on tiles"};
    if (auto b = binary.find(m.fn); b != binary.end() && args.size() == 2)
      r = interp::Binary(b->second, args[0], args[1]);
    if (auto u = unary.find(m.fn); u != unary.end() && args.size() == 1) r = interp::Unary(u->second, args[0]);
    if (m.fn == "select" && args.size() == 3) r = interp::Select(args[0], args[1], args[2]);
    if (!r) throw Fault(r.error().message);
    if (r->dtype != Val(result).dtype)
      throw Fault("`" + m.fn + "` gives " + std::string(Spelling(r->dtype)) + ", the tile IR says " +
                  std::string(Spelling(Val(result).dtype)));
    bool scalar_result = r->Count() == 1 && Flat(tv).values != 1;
    for (int v = 0; v < Flat(tv).values; ++v) SetElem(result, t, v, runtime::LoadBits(*r, scalar_result ? 0 : v));
  }
}

// Reduce's partial values: f32 for floats up to 32 bits (the interpreter accumulates in f32), f64
// for f64, i64 (wrapping at the end) for integers; kept as 64-bit patterns in two registers.
struct Combiner {
  std::string fn;
  Dtype dtype;
  bool is_float() const { return runtime::IsFloatDtype(dtype); }
  std::uint64_t From(std::uint64_t element_bits) const {
    HostTensor one = HostTensor::Zeros(dtype, {});
    runtime::StoreBits(one, 0, element_bits);
    if (dtype == Dtype::F64) return element_bits;
    if (is_float()) return std::bit_cast<std::uint32_t>(static_cast<float>(runtime::LoadDouble(one, 0)));
    return static_cast<std::uint64_t>(runtime::LoadInt64(one, 0));
  }
  double F(std::uint64_t p) const {
    return dtype == Dtype::F64 ? std::bit_cast<double>(p) : double(std::bit_cast<float>(static_cast<std::uint32_t>(p)));
  }
  std::uint64_t Pack(double x) const {
    return dtype == Dtype::F64 ? std::bit_cast<std::uint64_t>(x) : std::bit_cast<std::uint32_t>(static_cast<float>(x));
  }
  // NaN propagates; -0 is less than +0 (the interpreter's max and min).
  std::uint64_t Combine(std::uint64_t a, std::uint64_t b) const {
    if (!is_float()) {
      auto x = static_cast<std::int64_t>(a), y = static_cast<std::int64_t>(b);
      if (fn == "sum") return static_cast<std::uint64_t>(x) + static_cast<std::uint64_t>(y);
      bool unsigned_type = runtime::IsUnsignedDtype(dtype);
      bool less = unsigned_type ? a < b : x < y;
      return fn == "max" ? (less ? b : a) : (less ? a : b);
    }
    double x = F(a), y = F(b);
    if (fn == "sum") {
      if (dtype == Dtype::F64) return Pack(x + y);
      return std::bit_cast<std::uint32_t>(static_cast<float>(x) + static_cast<float>(y));
    }
    if (std::isnan(x)) return a;
    if (std::isnan(y)) return b;
    if (x == y) {  // equal, or zeros of either sign
      bool a_neg = std::signbit(x);
      if (fn == "max") return a_neg ? b : a;
      return a_neg ? a : b;
    }
    return fn == "max" ? (x > y ? a : b) : (x < y ? a : b);
  }
  std::uint64_t Finish(std::uint64_t p) const {
    HostTensor one = HostTensor::Zeros(dtype, {});
    if (is_float())
      runtime::StoreDouble(one, 0, F(p));
    else
      runtime::StoreInt64(one, 0, static_cast<std::int64_t>(p));
    return runtime::LoadBits(one, 0);
  }
};

void Executor::ExecReduce(const tile::op::Reduce& red, ValueId result) {
  if (red.fn != "sum" && red.fn != "max" && red.fn != "min") throw Fault("`" + red.fn + "` is not simulated");
  ValueId src = red.src;
  if (Val(src).shape.size() != 2) throw Fault("the simulator reduces rank-2 tiles along their last axis");
  const TvLayout& s = Tv(src);
  const TvLayout& d = Tv(result);
  Combiner c{red.fn, Val(src).dtype};
  int threads = static_cast<int>(Flat(s).threads);
  // 1. Each thread combines its values row by row; slot k of a thread is the k-th row it meets.
  std::vector<std::vector<std::int64_t>> rows(static_cast<std::size_t>(threads));
  std::vector<std::vector<std::uint64_t>> partial(static_cast<std::size_t>(threads));
  for (int t = 0; t < threads; ++t) {
    std::set<std::int64_t> seen_elements;
    for (int v = 0; v < Flat(s).values; ++v) {
      RowCol e = Flat(s).At(t, v);
      if (!seen_elements.insert(e.row + s.rows * e.col).second) continue;  // a broadcast copy
      std::uint64_t x = c.From(GetElem(src, t, v));
      auto it = std::find(rows[t].begin(), rows[t].end(), e.row);
      if (it == rows[t].end()) {
        rows[t].push_back(e.row);
        partial[t].push_back(x);
      } else {
        auto k = it - rows[t].begin();
        partial[t][k] = c.Combine(partial[t][k], x);
      }
    }
  }
  // 2. Within a warp: the lanes holding a row must be a butterfly group (lane ^ some masks) with the
  // same rows in the same slots; shfl.bfly over each mask.
  std::size_t slots = rows[0].size();
  for (int t = 0; t < threads; ++t)
    if (rows[t].size() != slots)
      throw Fault("threads 0 and " + std::to_string(t) + " hold different numbers of rows of `" + Name(src) + "`: `" +
                  red.fn + "` needs every thread to hold the same number");
  int r0 = scratch_reg_;
  for (int mask = 1; mask < 32; mask <<= 1) {
    bool partner = true, any_shared = false;
    for (int t = 0; t < threads && partner; ++t) {
      int u = (t & ~31) | ((t & 31) ^ mask);
      partner = rows[t] == rows[u];
    }
    if (!partner) continue;
    (void)any_shared;
    for (std::size_t k = 0; k < slots; ++k) {
      for (int t = 0; t < threads; ++t) {
        machine_->SetReg(t, r0, static_cast<std::uint32_t>(partial[t][k]));
        machine_->SetReg(t, r0 + 1, static_cast<std::uint32_t>(partial[t][k] >> 32));
      }
      for (int w = 0; w < threads / 32; ++w) {
        machine_->ShflBfly(w, r0 + 2, r0, mask);
        machine_->ShflBfly(w, r0 + 3, r0 + 1, mask);
      }
      for (int t = 0; t < threads; ++t) {
        std::uint64_t other = machine_->Reg(t, r0 + 2) | (std::uint64_t{machine_->Reg(t, r0 + 3)} << 32);
        // Combine in lane order so both partners compute the same bits.
        bool low = (t & mask) == 0;
        partial[t][k] = low ? c.Combine(partial[t][k], other) : c.Combine(other, partial[t][k]);
      }
    }
  }
  // Every lane of a warp holding a row must now have all of that warp's values for the row: check
  // that no lane outside the butterfly group holds it.
  std::map<std::int64_t, std::vector<int>> warps_of_row;
  for (int t = 0; t < threads; ++t)
    for (std::int64_t r : rows[t]) {
      auto& ws = warps_of_row[r];
      if (std::find(ws.begin(), ws.end(), t / 32) == ws.end()) ws.push_back(t / 32);
    }
  // 3. Across warps: the first lane of each warp holding the row writes its partial to shared memory,
  // then every thread combines the warps' partials in warp order.
  bool cross = false;
  for (auto& [r, ws] : warps_of_row) cross |= ws.size() > 1;
  std::int64_t warps = threads / 32;
  if (cross) {
    for (int t = 0; t < threads; ++t)
      for (std::size_t k = 0; k < slots; ++k) {
        std::int64_t r = rows[t][k];
        bool first_in_warp = true;
        for (int u = t & ~31; u < t; ++u)
          if (std::find(rows[u].begin(), rows[u].end(), r) != rows[u].end()) first_in_warp = false;
        if (!first_in_warp) continue;
        machine_->SetReg(t, r0, static_cast<std::uint32_t>(partial[t][k]));
        machine_->SetReg(t, r0 + 1, static_cast<std::uint32_t>(partial[t][k] >> 32));
        machine_->StShared(t, scratch_shared_ + static_cast<std::uint32_t>((r * warps + t / 32) * 8), r0, 8);
      }
    machine_->BarSync();
    for (int t = 0; t < threads; ++t)
      for (std::size_t k = 0; k < slots; ++k) {
        std::int64_t r = rows[t][k];
        std::optional<std::uint64_t> acc;
        for (int w : warps_of_row[r]) {
          machine_->LdShared(t, r0, scratch_shared_ + static_cast<std::uint32_t>((r * warps + w) * 8), 8);
          std::uint64_t x = machine_->Reg(t, r0) | (std::uint64_t{machine_->Reg(t, r0 + 1)} << 32);
          acc = acc ? c.Combine(*acc, x) : x;
        }
        partial[t][k] = *acc;
      }
    machine_->BarSync();
  }
  // 4. The result: each thread takes the rows its result layout gives it from its own partials.
  for (int t = 0; t < Flat(d).threads; ++t)
    for (int v = 0; v < Flat(d).values; ++v) {
      std::int64_t r = Flat(d).At(t, v).row;
      auto it = std::find(rows[t].begin(), rows[t].end(), r);
      if (it == rows[t].end())
        throw Fault("the plan's layout of `" + Name(result) + "` gives thread " + std::to_string(t) + " row " +
                    std::to_string(r) + ", which it holds none of in `" + Name(src) + "`");
      SetElem(result, t, v, c.Finish(partial[t][it - rows[t].begin()]));
    }
  (void)slots;
}

// convert: through shared memory, as the GPU does it: every element's owner stores it, every
// thread loads the elements its new layout gives it.
void Executor::ExecConvert(ValueId src, ValueId result) {
  const TvLayout& s = Tv(src);
  const TvLayout& d = Tv(result);
  int e = ElementBytes(Val(src).dtype);
  auto owners = layout::Owners(s);
  for (std::size_t i = 0; i < owners.size(); ++i) {
    auto [t, v] = owners[i];
    if (t < 0) throw Fault("no thread holds element " + std::to_string(i) + " of `" + Name(src) + "`");
    std::uint64_t bits = GetElem(src, static_cast<int>(t), static_cast<int>(v));
    machine_->SetReg(static_cast<int>(t), scratch_reg_, static_cast<std::uint32_t>(bits));
    machine_->SetReg(static_cast<int>(t), scratch_reg_ + 1, static_cast<std::uint32_t>(bits >> 32));
    machine_->StShared(static_cast<int>(t), scratch_shared_ + static_cast<std::uint32_t>(i * e), scratch_reg_, e);
  }
  machine_->BarSync();
  for (int t = 0; t < Flat(d).threads; ++t)
    for (int v = 0; v < Flat(d).values; ++v) {
      RowCol el = Flat(d).At(t, v);
      machine_->LdShared(t, scratch_reg_, scratch_shared_ + static_cast<std::uint32_t>((el.row + d.rows * el.col) * e),
                         e);
      std::uint64_t bits = machine_->Reg(t, scratch_reg_) | (std::uint64_t{machine_->Reg(t, scratch_reg_ + 1)} << 32);
      if (e < 8) bits &= (std::uint64_t{1} << (8 * e)) - 1;
      SetElem(result, t, v, bits);
    }
  machine_->BarSync();
}

void Executor::ExecMma(OpId id, const tile::Op& op, const tile::op::Mma& m) {
  const synth::OpChoice& choice = plan_.ops.at(id.index);
  ValueId result = op.results.at(0);
  CopyRegs(result, m.acc, "`mma`");  // D starts as C; the atoms then accumulate into it
  std::int64_t k = Extent(m.a).col;
  LoadStreamed(m.a, true, k);  // streamed operands: their slices, loaded here
  LoadStreamed(m.b, false, k);
  switch (choice.instruction.kind) {
    case InstructionKind::kWgmma:
      return ExecWgmma(choice, m, result);
    case InstructionKind::kMmaSync:
      return ExecMmaSync(choice, m, result);
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
      throw Fault("the plan's `" + Spelling(choice.instruction) + "` is not an mma instruction");
  }
}

// The top-left element of each warp's (or warpgroup's) part of the accumulator, read off its layout.
std::vector<RowCol> TileOrigins(const FlatTv& acc, std::int64_t cols, int group_threads, int groups) {
  std::vector<RowCol> out;
  for (int g = 0; g < groups; ++g) {
    RowCol o{acc.rows, cols};
    for (int t = g * group_threads; t < (g + 1) * group_threads; ++t)
      for (int v = 0; v < acc.values; ++v) {
        RowCol e = acc.At(t, v);
        o.row = std::min(o.row, e.row);
        o.col = std::min(o.col, e.col);
      }
    out.push_back(o);
  }
  return out;
}

void Executor::ExecMmaSync(const synth::OpChoice& choice, const tile::op::Mma& m, ValueId result) {
  std::string what = "`" + Spelling(choice.instruction) + "`";
  const layout::Atom& atom = AtomNamed(Spelling(choice.instruction));
  if (atom.m != 16 || atom.n != 8 || atom.k != 16) throw Fault("the simulator runs mma.sync m16n8k16 only");
  MmaType type = Val(m.a).dtype == Dtype::BF16 ? MmaType::BF16 : MmaType::F16;
  RowCol a_ext = Extent(m.a), c_ext = Extent(result);
  std::int64_t M = c_ext.row, N = c_ext.col, K = a_ext.col;
  int warps = choice.warps_m * choice.warps_n;
  if (warps * 32 > plan_.threads) throw Fault("the plan tiles `mma` over more warps than the block has");
  std::int64_t wm = M / choice.warps_m, wn = N / choice.warps_n;
  if (wm % 16 || wn % 8 || K % 16)
    throw Fault("the warp tile " + std::to_string(wm) + "x" + std::to_string(wn) + "x" + std::to_string(K) +
                " is not a whole number of m16n8k16 atoms");
  auto origins = TileOrigins(Flat(Tv(result)), Tv(result).cols, 32, warps);
  const TvLayout& ta = atom.Operand("A")->tv;
  const TvLayout& tb = atom.Operand("B")->tv;
  const TvLayout& tc = atom.Operand("C")->tv;
  int ra = scratch_reg_, rb = ra + 4, rc = rb + 2;
  auto put_half = [&](int thread, int reg, int half, std::uint64_t bits) {
    std::uint32_t r = machine_->Reg(thread, reg);
    r = (r & ~(0xFFFFu << (16 * half))) | (static_cast<std::uint32_t>(bits & 0xFFFF) << (16 * half));
    machine_->SetReg(thread, reg, r);
  };
  for (int w = 0; w < warps; ++w) {
    RowCol o = origins[w];
    for (std::int64_t am = 0; am < wm / 16; ++am)
      for (std::int64_t an = 0; an < wn / 8; ++an) {
        std::int64_t m0 = o.row + 16 * am, n0 = o.col + 8 * an;
        for (int l = 0; l < 32; ++l)
          for (int i = 0; i < 4; ++i) {
            RowCol e = Flat(tc).At(l, i);
            e = {m0 + e.row, n0 + e.col};
            int t = w * 32 + l;
            machine_->SetReg(t, rc + i, static_cast<std::uint32_t>(GetElem(result, t, HeldValue(result, t, e, what))));
          }
        for (std::int64_t k0 = 0; k0 < K; k0 += 16) {
          for (int l = 0; l < 32; ++l) {
            int t = w * 32 + l;
            for (int i = 0; i < 8; ++i) {
              RowCol e = Flat(ta).At(l, i);
              e = {m0 + e.row, k0 + e.col};
              put_half(t, ra + i / 2, i % 2, GetElem(m.a, t, HeldValue(m.a, t, e, what)));
            }
            for (int i = 0; i < 4; ++i) {
              RowCol e = Flat(tb).At(l, i);
              e = {k0 + e.row, n0 + e.col};
              put_half(t, rb + i / 2, i % 2, GetElem(m.b, t, HeldValue(m.b, t, e, what)));
            }
          }
          machine_->MmaSync(type, w, rc, ra, rb, rc);
        }
        for (int l = 0; l < 32; ++l)
          for (int i = 0; i < 4; ++i) {
            RowCol e = Flat(tc).At(l, i);
            e = {m0 + e.row, n0 + e.col};
            int t = w * 32 + l;
            SetElem(result, t, HeldValue(result, t, e, what), machine_->Reg(t, rc + i));
          }
      }
  }
}

// A wgmma descriptor for the shared tile `shared` (A: M x K; B: K x N, read as N x K) at (mn0, k0):
// the first canonical mode and major-ness whose strides the tile's layout has, as codegen would
// build it, with the start address of the element's unswizzled offset.
SmemOperand Executor::Descriptor(ValueId shared, bool is_b, std::int64_t mn0, std::int64_t k0) {
  const SwizzledLayout& l = SmemLayout(shared);
  if (l.layout().rank() != 2) throw Fault("the shared layout of `" + Name(shared) + "` is not rank 2");
  layout::Layout mnk = l.layout();
  if (is_b)
    mnk = layout::Layout(IntTuple::Tuple({l.layout().shape()[1], l.layout().shape()[0]}),
                         IntTuple::Tuple({l.layout().stride()[1], l.layout().stride()[0]}));
  auto base = slots_.at(shared.index).shared_base;
  if (!base) throw Fault("`" + Name(shared) + "` is not in shared memory");
  for (auto mode :
       {layout::SwizzleMode::k128B, layout::SwizzleMode::k64B, layout::SwizzleMode::k32B, layout::SwizzleMode::kNone}) {
    layout::Swizzle sw = l.swizzle();
    if (sw.bits() == 0) sw = *layout::SwizzleFor(layout::SwizzleMode::kNone, 2);
    SwizzledLayout view(sw, l.offset(), mnk);
    for (auto major : {layout::Major::kK, layout::Major::kMN}) {
      auto d = layout::GmmaDescriptorFor(view, mode, major, 2);
      if (!d) continue;
      RowCol at = is_b ? RowCol{k0, mn0} : RowCol{mn0, k0};
      std::uint32_t start = *base + static_cast<std::uint32_t>(LinearOffset(shared, at) * 2);
      return SmemOperand{d->Encode(start), major == layout::Major::kMN};
    }
  }
  throw Fault("the shared layout `" + layout::ToString(l) + "` of `" + Name(shared) +
              "` is not a canonical wgmma layout: no matrix descriptor describes it");
}

void Executor::ExecWgmma(const synth::OpChoice& choice, const tile::op::Mma& m, ValueId result) {
  std::string what = "`" + Spelling(choice.instruction) + "`";
  const layout::Atom& atom = AtomNamed(Spelling(choice.instruction));
  int n = atom.n;
  MmaType type = choice.instruction.type == Dtype::BF16 ? MmaType::BF16 : MmaType::F16;
  RowCol c_ext = Extent(result);
  std::int64_t M = c_ext.row, N = c_ext.col, K = Extent(m.a).col;
  int groups = choice.warps_m * choice.warps_n;
  if (groups * 128 > plan_.threads) throw Fault("the plan tiles `mma` over more warpgroups than the block has");
  std::int64_t gm = M / choice.warps_m, gn = N / choice.warps_n;
  if (gm % 64 || gn % n || K % 16)
    throw Fault("the warpgroup tile " + std::to_string(gm) + "x" + std::to_string(gn) + "x" + std::to_string(K) +
                " is not a whole number of " + Spelling(choice.instruction) + " atoms");
  auto shared_of = [&](ValueId v) -> std::optional<ValueId> {
    if (Val(v).space == tile::Space::Shared) return v;
    return slots_.at(v.index).shared_alias;
  };
  std::optional<ValueId> sa = shared_of(m.a), sb = shared_of(m.b);
  if (!sb) throw Fault("wgmma reads B from shared memory, but the plan loads `" + Name(m.b) + "` into registers");
  auto origins = TileOrigins(Flat(Tv(result)), Tv(result).cols, 128, groups);
  const TvLayout& ta = atom.Operand("A")->tv;
  const TvLayout& tc = atom.Operand("C")->tv;
  int rd = scratch_reg_, ra = rd + n / 2;
  for (int g = 0; g < groups; ++g) {
    RowCol o = origins[g];
    for (std::int64_t am = 0; am < gm / 64; ++am)
      for (std::int64_t an = 0; an < gn / n; ++an) {
        std::int64_t m0 = o.row + 64 * am, n0 = o.col + n * an;
        for (int l = 0; l < 128; ++l)
          for (int i = 0; i < n / 2; ++i) {
            RowCol e = Flat(tc).At(l, i);
            e = {m0 + e.row, n0 + e.col};
            int t = g * 128 + l;
            machine_->SetReg(t, rd + i, static_cast<std::uint32_t>(GetElem(result, t, HeldValue(result, t, e, what))));
          }
        for (std::int64_t k0 = 0; k0 < K; k0 += 16) {
          SmemOperand b = Descriptor(*sb, true, n0, k0);
          if (sa) {
            machine_->Wgmma(type, n, g, rd, Descriptor(*sa, false, m0, k0), b, true);
          } else {
            for (int l = 0; l < 128; ++l) {
              int t = g * 128 + l;
              for (int i = 0; i < 8; ++i) {
                RowCol e = Flat(ta).At(l, i);
                e = {m0 + e.row, k0 + e.col};
                std::uint64_t bits = GetElem(m.a, t, HeldValue(m.a, t, e, what));
                std::uint32_t r = machine_->Reg(t, ra + i / 2);
                r = (r & ~(0xFFFFu << (16 * (i % 2)))) | (static_cast<std::uint32_t>(bits) << (16 * (i % 2)));
                machine_->SetReg(t, ra + i / 2, r);
              }
            }
            machine_->WgmmaRegA(type, n, g, rd, ra, b, true);
          }
        }
        for (int l = 0; l < 128; ++l)
          for (int i = 0; i < n / 2; ++i) {
            RowCol e = Flat(tc).At(l, i);
            e = {m0 + e.row, n0 + e.col};
            int t = g * 128 + l;
            SetElem(result, t, HeldValue(result, t, e, what), machine_->Reg(t, rd + i));
          }
      }
  }
}

void Executor::ExecStore(OpId id, const tile::op::Store& s) {
  const synth::OpChoice& choice = plan_.ops.at(id.index);
  const auto& dst = slots_.at(s.dst.index).global;
  if (!dst) throw Fault("`store` into `" + Name(s.dst) + "`, which is not a global tile");
  int e = ElementBytes(Val(s.src).dtype);
  int rank = static_cast<int>(Val(s.src).shape.size());
  if (Val(s.src).space == tile::Space::Shared) {
    RowCol ext = Extent(s.src);
    std::uint32_t base = slots_.at(s.src.index).shared_base.value_or(0);
    for (std::int64_t r = 0; r < ext.row; ++r)
      for (std::int64_t c = 0; c < ext.col; ++c) {
        int t = static_cast<int>((r * ext.col + c) % plan_.threads);
        machine_->LdShared(t, scratch_reg_, base + static_cast<std::uint32_t>(SmemOffset(s.src, {r, c}) * e), e);
        machine_->StGlobal(t, dst->Address({r, c}), scratch_reg_, e);
      }
    return;
  }
  std::string what = "`store`";
  if (choice.copy && choice.vector_bytes > 0) {
    const TvLayout& copy = *choice.copy;
    int vb = choice.vector_bytes;
    for (int t = 0; t < Flat(copy).threads; ++t)
      for (int v = 0; v < Flat(copy).values; ++v) {
        RowCol first = Flat(copy).At(t, v);
        for (int r = 0; r < (vb + 3) / 4; ++r) machine_->SetReg(t, scratch_reg_ + r, 0);
        for (int i = 0; i < vb / e; ++i) {
          std::uint64_t bits = GetElem(s.src, t, HeldValue(s.src, t, Advance(first, i, rank), what));
          for (int b = 0; b < e; ++b) {
            int byte = i * e + b;
            std::uint32_t r = machine_->Reg(t, scratch_reg_ + byte / 4);
            r |= static_cast<std::uint32_t>((bits >> (8 * b)) & 0xFF) << (8 * (byte % 4));
            machine_->SetReg(t, scratch_reg_ + byte / 4, r);
          }
        }
        machine_->StGlobal(t, dst->Address(first), scratch_reg_, vb);
      }
    return;
  }
  // No vector layout: each element's owner stores it.
  const TvLayout& tv = Tv(s.src);
  auto owners = layout::Owners(tv);
  for (std::size_t i = 0; i < owners.size(); ++i) {
    auto [t, v] = owners[i];
    if (t < 0) throw Fault("no thread holds element " + std::to_string(i) + " of `" + Name(s.src) + "`");
    std::uint64_t bits = GetElem(s.src, static_cast<int>(t), static_cast<int>(v));
    machine_->SetReg(static_cast<int>(t), scratch_reg_, static_cast<std::uint32_t>(bits));
    machine_->SetReg(static_cast<int>(t), scratch_reg_ + 1, static_cast<std::uint32_t>(bits >> 32));
    RowCol el{static_cast<std::int64_t>(i) % tv.rows, static_cast<std::int64_t>(i) / tv.rows};
    machine_->StGlobal(static_cast<int>(t), dst->Address(el), scratch_reg_, e);
  }
}

void Executor::ExecLoop(const tile::Op& op, const tile::op::Loop& loop) {
  std::int64_t bound = ScalarInt(loop.bound);
  auto assign = [&](ValueId dst, ValueId src) {
    if (Val(dst).space == tile::Space::Scalar) {
      slots_[dst.index].scalar = Scalar(src);
    } else if (Val(dst).space == tile::Space::Reg) {
      CopyRegs(dst, src, "the loop's carried value");
    } else {
      slots_[dst.index] = slots_[src.index];
    }
  };
  for (std::size_t i = 0; i < loop.carried.size(); ++i) assign(loop.carried[i], loop.init.at(i));
  iterations_.push_back(0);
  for (std::int64_t it = 0; it < bound; ++it) {
    iterations_.back() = it;
    slots_[loop.counter.index].scalar = interp::ScalarFromInt(Val(loop.counter).dtype, it);
    ExecBlock(loop.body);
    span_ = op.span;
    for (std::size_t i = 0; i < loop.carried.size(); ++i) assign(loop.carried[i], loop.yields.at(i));
  }
  iterations_.pop_back();
  for (std::size_t i = 0; i < op.results.size(); ++i) assign(op.results[i], loop.carried.at(i));
}

}  // namespace

Result<RunOutput, RunError> Run(const tile::Kernel& kernel, const synth::Plan& plan,
                                const std::vector<runtime::HostTensor>& inputs, const RunOptions& options) {
  Executor executor(kernel, plan, options);
  return executor.Run(inputs);
}

}  // namespace weft::sim
