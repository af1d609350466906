// Layout synthesis; see synthesize.h for the algorithm and docs/synthesis.md for the choices.
#include "synth/synthesize.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <numeric>
#include <set>
#include <sstream>

#include "base/source.h"
#include "layout/algebra.h"
#include "solver/optimize.h"
#include "synth/choose.h"
#include "synth/tiling.h"

namespace weft::synth {

std::string_view Spelling(Target target) {
  return target == Target::Sm80 ? "sm_80" : "sm_90a";
}

std::optional<Target> ParseTarget(std::string_view text) {
  if (text == "sm_80") return Target::Sm80;
  if (text == "sm_90a") return Target::Sm90a;
  return std::nullopt;
}

std::int64_t SharedBudget(Target target) {
  return target == Target::Sm80 ? 163 * 1024 : 227 * 1024;
}

int RegisterBudget(Target) {
  return 255;
}

namespace {

using layout::IntTuple;
using layout::Layout;
using layout::SwizzledLayout;
using layout::TvLayout;
using tile::OpId;
using tile::ValueId;
using Modes = std::vector<std::pair<std::int64_t, std::int64_t>>;

int ElementBytes(Dtype dtype) {
  return std::max(1, Bits(dtype) / 8);
}

std::int64_t Const(const core::Dim& dim) {
  auto c = dim.AsConstant();
  return c ? *c : -1;
}

// A tile's rows x cols (plan.h: a rank-1 tile of n is n x 1, a rank-0 one 1 x 1).
struct Extent {
  std::int64_t rows = 1, cols = 1;
};
Extent ExtentOf(const tile::Value& v) {
  if (v.shape.empty()) return {1, 1};
  if (v.shape.size() == 1) return {Const(v.shape[0]), 1};
  return {Const(v.shape[v.shape.size() - 2]), Const(v.shape.back())};
}

std::string ShapeText(const tile::Value& v) {
  std::string s = std::string(weft::Spelling(v.dtype)) + "[";
  for (std::size_t i = 0; i < v.shape.size(); ++i) {
    if (i) s += ", ";
    auto c = v.shape[i].AsConstant();
    s += c ? std::to_string(*c) : "?";
  }
  return s + "]";
}

int Log2(std::int64_t n) {
  int l = 0;
  while ((std::int64_t{1} << (l + 1)) <= n) ++l;
  return l;
}

Layout TvOf(const Modes& threads, const Modes& values) {
  auto clean = [](const Modes& modes) {
    Modes out;
    for (auto m : modes)
      if (m.first != 1) out.push_back(m);
    if (out.empty()) out.push_back({1, 0});
    return layout::FromFlatModes(out);
  };
  return Layout::Tuple({clean(threads), clean(values)});
}

// The parent of a transposed shared view (`transpose s`), or nothing for any other value.
std::optional<ValueId> TransposedParent(const tile::Kernel& kernel, ValueId v) {
  const tile::Value& val = kernel.Get(v);
  if (!val.def.valid()) return std::nullopt;
  if (const auto* t = std::get_if<tile::op::Transpose>(&kernel.Get(val.def).node)) return t->src;
  return std::nullopt;
}

std::vector<ValueId> Operands(const tile::OpNode& node) {
  return std::visit(
      [](const auto& o) -> std::vector<ValueId> {
        using T = std::decay_t<decltype(o)>;
        if constexpr (std::is_same_v<T, tile::op::ScalarOp> || std::is_same_v<T, tile::op::Map>)
          return o.args;
        else if constexpr (std::is_same_v<T, tile::op::View>) {
          std::vector<ValueId> out{o.tensor};
          out.insert(out.end(), o.coords.begin(), o.coords.end());
          return out;
        } else if constexpr (std::is_same_v<T, tile::op::ToShared> || std::is_same_v<T, tile::op::ToRegs> ||
                             std::is_same_v<T, tile::op::Transpose> || std::is_same_v<T, tile::op::Reduce> ||
                             std::is_same_v<T, tile::op::Expand> || std::is_same_v<T, tile::op::Cast> ||
                             std::is_same_v<T, tile::op::Convert>)
          return {o.src};
        else if constexpr (std::is_same_v<T, tile::op::Store>)
          return {o.dst, o.src};
        else if constexpr (std::is_same_v<T, tile::op::Mma>)
          return {o.a, o.b, o.acc};
        else if constexpr (std::is_same_v<T, tile::op::Fill>)
          return {o.value};
        else if constexpr (std::is_same_v<T, tile::op::Loop>) {
          std::vector<ValueId> out{o.bound};
          out.insert(out.end(), o.init.begin(), o.init.end());
          out.insert(out.end(), o.yields.begin(), o.yields.end());
          return out;
        } else
          return {};
      },
      node);
}

// Why a class has its layout: the requirement that set it.
struct Req {
  TvLayout tv;
  Span span;
  std::string who;
  bool pinned = false;
  std::string pin_text;
};
Req Anchor(TvLayout tv, Span span, std::string who) {
  return Req{std::move(tv), span, std::move(who), false, ""};
}

struct UnionEdge {
  ValueId a, b;
  Span span;
  std::string who;
};
struct SliceEdge {
  ValueId child, parent;
  SliceKeep keep;
  Span span;
  std::string who;
};

struct MmaInfo {
  OpId op;
  std::int64_t m = 0, n = 0, k = 0;
  Dtype dtype = Dtype::BF16;
  std::vector<std::pair<int, int>> tilings;  // (groups_m, groups_n)
  bool a_from_shared = false;                // sm_90a: A read through a descriptor
  bool b_from_shared = false;
};

struct SharedPin {
  SwizzledLayout layout;
};

// A candidate layout of a shared tile, with its TMA swizzle mode and box width on sm_90a.
struct SharedCandidate {
  SwizzledLayout layout;
  layout::SwizzleMode mode = layout::SwizzleMode::kNone;
  std::int64_t box_cols = 0;
};

// One shared-memory candidate costed against one class of readers' copies: its wavefronts (TMA
// instructions included) and the accesses explain prints.
struct Scored {
  std::int64_t wavefronts = 0;
  std::vector<std::pair<OpId, Access>> accesses;
};

// A shared tile's candidates and copies, the same for every combination of warp tilings, and its
// candidates costed per class of readers' copies (memoized: combinations whose readers copy alike
// cost alike).
struct SharedTile {
  ValueId value;
  OpId writer;
  std::vector<OpId> readers;
  std::vector<ValueId> views;  // transposed views of the tile: their `regs` read it
  bool tma = false;
  std::vector<SharedCandidate> candidates;
  std::optional<TvLayout> write_copy;  // sm_80: the writer's cp.async vectors
  int write_bytes = 0;
  std::map<std::string, int> classes;                      // readers' copies -> class
  std::vector<std::vector<std::optional<Scored>>> scored;  // [class][candidate]; nothing: misaligned
};

// One combination of warp tilings, evaluated: every layout and instruction but the shared tiles'.
struct Attempt {
  std::vector<std::optional<TvLayout>> regs;  // per value
  std::vector<ValueChoice> values;
  std::vector<OpChoice> ops;
  std::int64_t wavefronts = 0, instructions = 0, candidates = 0;
  std::vector<int> classes;  // per shared tile: the class of its readers' copies
  std::int64_t registers = 0, scratch = 0;
  std::int64_t cost() const { return wavefronts + instructions; }
};

class Synthesizer {
 public:
  Synthesizer(const tile::Kernel& kernel, Target target, const Options& options)
      : kernel_(kernel), target_(target), options_(options) {}

  // Steps 1 to 3, and step 4's space of candidates with their costs tabulated (attempts_, space_).
  bool Tabulate();
  Result<Plan, std::vector<Diagnostic>> Run();
  const Space& space() const { return space_; }
  const std::vector<Diagnostic>& errors() const { return errors_; }

 private:
  template <typename... Args>
  Diagnostic& Error(DiagnosticKind kind, Span span, Args&&... args) {
    errors_.push_back(MakeDiagnostic(kind, span, std::forward<Args>(args)...));
    return errors_.back();
  }
  const tile::Value& V(ValueId id) const { return kernel_.Get(id); }
  std::string Name(ValueId id) const;

  void Walk(const std::vector<OpId>& body, OpId loop, OpId enclosing);
  bool CheckMmas();
  void ReadConstraints();
  void EvaluatePins();
  std::optional<Attempt> Evaluate(const std::vector<int>& combo, std::optional<Diagnostic>& conflict);
  std::optional<Attempt> UnifyLayouts(const std::vector<int>& combo, std::optional<Diagnostic>& conflict);
  void ChooseInstructions(Attempt& attempt, const std::vector<int>& combo);
  bool PrepareShared(ValueId s, SharedTile& tile);
  bool TabulateShared(Attempt& attempt, SharedTile& tile);
  void ApplyShared(Attempt& attempt, std::size_t tile, int candidate);
  Space MakeSpace(const std::vector<std::optional<Attempt>>& attempts) const;
  std::vector<SharedCandidate> SharedCandidates(ValueId s, bool tma, bool wgmma_a, bool wgmma_b) const;
  void RecordTmaWrite(OpChoice& write, OpId writer, const SharedCandidate& c, Extent e, int eb) const;
  std::int64_t Scratch(const Attempt& attempt) const;
  std::vector<int> StageCounts() const;
  void Finish(Attempt& attempt, Plan& plan, int stages);
  // Whether a pipeline's body reads a product it computes in an op other than another product
  // (attention's scores go to the softmax; a gemm's accumulator only to the next product).
  bool ReadsProducts() const;
  void Stream(Attempt& attempt);
  struct Peak {
    std::int64_t registers = 0;
    OpId op;                    // where the most registers are live
    std::vector<ValueId> live;  // the Reg tiles live there
  };
  Peak EstimateRegisters(const Attempt& attempt) const;

  const tile::Kernel& kernel_;
  Target target_;
  Options options_;
  std::vector<Diagnostic> errors_;

  std::vector<OpId> order_;              // every op, loop bodies inline, in program order
  std::vector<OpId> loop_of_;            // per op: the enclosing pipelined loop, or invalid
  std::vector<OpId> enclosing_;          // per op: the innermost enclosing loop of either kind
  std::vector<std::vector<OpId>> uses_;  // per value
  std::vector<MmaInfo> mmas_;
  std::vector<UnionEdge> unions_;
  std::vector<SliceEdge> slices_;
  std::vector<std::optional<Req>> reg_pins_;
  std::vector<std::optional<SharedPin>> shared_pins_;
  std::vector<bool> wgmma_smem_operand_;          // per value: a `regs` result only wgmma reads
  std::vector<ValueId> shared_;                   // the shared tiles with memory of their own, in order
  std::vector<std::optional<SharedTile>> tiles_;  // per shared_ entry, prepared when first reached
  std::vector<std::optional<Attempt>> attempts_;  // per combination of tilings; nothing: a conflict
  std::int64_t candidates_ = 0;
  Space space_;
};

std::string Synthesizer::Name(ValueId id) const {
  const tile::Value& v = V(id);
  if (!v.name.empty()) return "`" + v.name + "`";
  return "%" + std::to_string(id.index);
}

void Synthesizer::Walk(const std::vector<OpId>& body, OpId loop, OpId enclosing) {
  for (OpId id : body) {
    order_.push_back(id);
    loop_of_[id.index] = loop;
    enclosing_[id.index] = enclosing;
    for (ValueId v : Operands(kernel_.Get(id).node)) uses_[v.index].push_back(id);
    if (auto* l = std::get_if<tile::op::Loop>(&kernel_.Get(id).node)) Walk(l->body, l->pipelined ? id : loop, id);
  }
}

// Step 1: each mma's atom and its warp (warpgroup) tilings, or the error that says why none.
bool Synthesizer::CheckMmas() {
  bool ok = true;
  std::int64_t threads = kernel_.threads;
  for (OpId id : order_) {
    const auto* mma = std::get_if<tile::op::Mma>(&kernel_.Get(id).node);
    if (!mma) continue;
    const tile::Op& op = kernel_.Get(id);
    MmaInfo info;
    info.op = id;
    const tile::Value &a = V(mma->a), &b = V(mma->b);
    Extent ea = ExtentOf(a), eb = ExtentOf(b);
    info.m = ea.rows, info.k = ea.cols, info.n = eb.cols;
    info.dtype = a.dtype;
    if ((a.dtype != Dtype::BF16 && a.dtype != Dtype::F16) || b.dtype != a.dtype) {
      Error(DiagnosticKind::SynthNoMmaAtom, op.span, Spelling(target_),
            std::string(weft::Spelling(a.dtype == Dtype::BF16 || a.dtype == Dtype::F16 ? b.dtype : a.dtype)));
      ok = false;
      continue;
    }
    std::string type(weft::Spelling(a.dtype));
    bool wgmma = target_ == Target::Sm90a;
    int group_threads = wgmma ? 128 : 32;
    std::string atom = wgmma ? "wgmma.m64nNk16." + type : "mma.m16n8k16." + type;
    if (threads % group_threads != 0) {
      Error(DiagnosticKind::SynthThreads, kernel_.span, threads,
            wgmma ? "warpgroups of 128 threads, which `wgmma` needs" : "warps of 32 threads");
      errors_.back().notes.push_back({op.span, "this `mma` runs on " + std::string(wgmma ? "warpgroups" : "warps")});
      ok = false;
      continue;
    }
    int atom_m = wgmma ? 64 : 16;
    std::string why;
    if (info.m % atom_m != 0)
      why = "M = " + std::to_string(info.m) + " is not a multiple of " + std::to_string(atom_m);
    else if (info.n % 8 != 0)
      why = "N = " + std::to_string(info.n) + " is not a multiple of 8";
    else if (info.k % 16 != 0)
      why = "K = " + std::to_string(info.k) + " is not a multiple of 16";
    if (!why.empty()) {
      Error(DiagnosticKind::SynthMmaShape, op.span, atom, why);
      errors_.back().notes.push_back({a.span, "A is `" + ShapeText(a) + "`"});
      errors_.back().notes.push_back({b.span, "B is `" + ShapeText(b) + "`"});
      ok = false;
      continue;
    }
    int groups = static_cast<int>(threads / group_threads);
    for (int gm = 1; gm <= groups; ++gm) {
      if (groups % gm != 0) continue;
      int gn = groups / gm;
      if (info.m % (atom_m * gm) != 0 || info.n % (8 * gn) != 0) continue;
      if (wgmma && (info.n / gn) % 8 != 0) continue;
      info.tilings.push_back({gm, gn});
    }
    if (info.tilings.empty()) {
      std::string what = std::to_string(groups) + (wgmma ? " warpgroups" : " warps");
      Error(DiagnosticKind::SynthNoWarpTiling, op.span, what, std::to_string(info.m) + " x " + std::to_string(info.n),
            atom);
      errors_.back().notes.push_back({kernel_.span, "the kernel asks for " + std::to_string(threads) + " threads"});
      ok = false;
      continue;
    }
    if (wgmma) {
      auto from_shared = [&](ValueId v) {
        const tile::Value& val = V(v);
        if (!val.def.valid()) return false;
        const auto* r = std::get_if<tile::op::ToRegs>(&kernel_.Get(val.def).node);
        return r && V(r->src).space == tile::Space::Shared;
      };
      info.a_from_shared = from_shared(mma->a);
      info.b_from_shared = from_shared(mma->b);
      if (!info.b_from_shared) {
        Error(DiagnosticKind::SynthWgmmaOperand, op.span, "B");
        errors_.back().notes.push_back({b.span, "B is computed here"});
        ok = false;
        continue;
      }
    }
    mmas_.push_back(std::move(info));
  }
  // A `regs` result that only wgmma reads (as A or B) needs no Reg layout.
  for (const MmaInfo& info : mmas_) {
    const auto& mma = std::get<tile::op::Mma>(kernel_.Get(info.op).node);
    for (auto [v, shared] : {std::pair{mma.a, info.a_from_shared}, std::pair{mma.b, info.b_from_shared}}) {
      if (!shared) continue;
      bool only = true;
      for (OpId use : uses_[v.index]) {
        const auto* m = std::get_if<tile::op::Mma>(&kernel_.Get(use).node);
        if (!m || m->acc == v) only = false;
      }
      if (only) wgmma_smem_operand_[v.index] = true;
    }
  }
  return ok;
}

// Step 2's structure, as the checker recorded it (core/tile_layout.h, check/tile_layouts.cpp):
// which tiles share a layout (Equal: unions) and which take a slice of another's (SliceOf).
void Synthesizer::ReadConstraints() {
  for (const core::TileConstraint& c : kernel_.layouts) {
    ValueId a(static_cast<std::uint32_t>(c.a)), b(static_cast<std::uint32_t>(c.b));
    if (c.relation == core::TileRelation::Equal) {
      unions_.push_back({a, b, c.span, c.who});
    } else if (c.relation == core::TileRelation::SliceOf) {
      slices_.push_back({a, b, c.keep, c.span, c.broadcast ? c.who + " (broadcasting " + Name(a) + ")" : c.who});
    }
  }
}

void Synthesizer::EvaluatePins() {
  for (std::size_t i = 0; i < kernel_.values.size(); ++i) {
    const tile::Value& v = kernel_.values[i];
    if (!v.pin) continue;
    auto fail = [&](const std::string& why) { Error(DiagnosticKind::SynthBadPin, v.pin->span, v.pin->text, why); };
    const auto& value = v.pin->value;  // evaluated by the checker (tile::Pin)
    if (!value.ok()) {
      fail(value.error());
      continue;
    }
    Extent e = ExtentOf(v);
    if (v.space == tile::Space::Reg) {
      const auto* l = std::get_if<Layout>(&*value);
      if (!l) {
        fail("a register tile takes a thread-value layout, not " + layout::KindName(*value));
        continue;
      }
      auto tv = layout::MakeTvLayout(*l, e.rows, e.cols);
      if (!tv.ok()) {
        fail(tv.error());
        continue;
      }
      if (tv->threads() != kernel_.threads || !IsWellFormed(*tv)) {
        fail("it has " + std::to_string(tv->threads()) + " threads and " + std::to_string(tv->values()) +
             " values, which do not hold the " + std::to_string(e.rows * e.cols) + " elements once each over " +
             std::to_string(kernel_.threads) + " threads");
        continue;
      }
      reg_pins_[i] = Req{*tv, v.pin->span, "the pin", true, v.pin->text};
    } else if (v.space == tile::Space::Shared) {
      std::optional<SwizzledLayout> s;
      if (const auto* l = std::get_if<Layout>(&*value)) s = SwizzledLayout(layout::Swizzle(), 0, *l);
      if (const auto* sl = std::get_if<SwizzledLayout>(&*value)) s = *sl;
      if (!s || s->size() != e.rows * e.cols) {
        fail("a shared tile of " + std::to_string(e.rows * e.cols) + " elements takes a layout of that size");
        continue;
      }
      shared_pins_[i] = SharedPin{*s};
    }
  }
}

// Step 2 for one combination of tilings: every register tile's layout, by unification from the
// anchors (pins, then each mma's tiled atom) along the union and slice edges; nothing when two
// layouts meet that differ (`conflict` says where).
std::optional<Attempt> Synthesizer::UnifyLayouts(const std::vector<int>& combo, std::optional<Diagnostic>& conflict) {
  std::size_t nv = kernel_.values.size();
  Attempt at;
  at.regs.assign(nv, std::nullopt);
  at.values.assign(nv, ValueChoice{});
  at.ops.assign(kernel_.ops.size(), OpChoice{});
  at.candidates = 1;
  std::vector<std::size_t> parent(nv);
  std::iota(parent.begin(), parent.end(), 0);
  std::function<std::size_t(std::size_t)> find = [&](std::size_t x) {
    return parent[x] == x ? x : parent[x] = find(parent[x]);
  };
  std::vector<std::optional<Req>> layout_of(nv);  // by root
  bool failed = false;
  auto conflict_at = [&](Span span, const std::string& who, const Req& x, const Req& y) {
    if (failed) return;
    failed = true;
    Diagnostic d;
    if (x.pinned || y.pinned) {
      const Req& pin = x.pinned ? x : y;
      const Req& other = x.pinned ? y : x;
      d = MakeDiagnostic(DiagnosticKind::SynthPinConflict, other.span, pin.pin_text, layout::ToString(other.tv.layout),
                         other.who);
      d.notes.push_back(MakeNote(DiagnosticKind::NoteSynthPinned, pin.span, pin.pin_text));
    } else {
      d = MakeDiagnostic(DiagnosticKind::SynthLayoutConflict, span, who, layout::ToString(y.tv.layout), x.who,
                         layout::ToString(x.tv.layout));
      d.notes.push_back(MakeNote(DiagnosticKind::NoteSynthGives, x.span, x.who, layout::ToString(x.tv.layout)));
      if (y.span.begin != span.begin || y.span.end != span.end)
        d.notes.push_back(MakeNote(DiagnosticKind::NoteSynthGives, y.span, y.who, layout::ToString(y.tv.layout)));
    }
    conflict = std::move(d);
  };
  auto assign = [&](ValueId v, const Req& req) {
    std::size_t r = find(v.index);
    if (!layout_of[r]) {
      layout_of[r] = req;
    } else if (!SameElements(layout_of[r]->tv, req.tv)) {
      conflict_at(req.span, req.who, *layout_of[r], req);
    }
  };

  // Anchors: pins, then each mma's tiled atom.
  for (std::size_t i = 0; i < nv; ++i)
    if (reg_pins_[i]) assign(ValueId(static_cast<std::uint32_t>(i)), *reg_pins_[i]);
  for (std::size_t i = 0; i < mmas_.size(); ++i) {
    const MmaInfo& info = mmas_[i];
    const tile::Op& op = kernel_.Get(info.op);
    const auto& mma = std::get<tile::op::Mma>(op.node);
    auto [gm, gn] = info.tilings[combo[i]];
    std::string type(weft::Spelling(info.dtype));
    if (target_ == Target::Sm80) {
      auto atom = layout::FindAtom("mma.m16n8k16." + type);
      WEFT_CHECK(atom.ok());
      TvLayout c = TileMma(atom->Operand("C")->tv, Operand::C, info.m, info.n, info.k, gm, gn);
      assign(mma.acc, Anchor(c, op.span, "`mma` (its accumulator)"));
      assign(mma.a, Anchor(TileMma(atom->Operand("A")->tv, Operand::A, info.m, info.n, info.k, gm, gn), op.span,
                           "`mma` (its A operand)"));
      assign(mma.b, Anchor(TileMma(atom->Operand("B")->tv, Operand::B, info.m, info.n, info.k, gm, gn), op.span,
                           "`mma` (its B operand)"));
    } else {
      std::int64_t ng = info.n / gn;
      int n_inst = static_cast<int>(ng);
      while (n_inst > 256 || ng % n_inst != 0 || n_inst % 8 != 0) n_inst -= 8;
      auto atom = layout::FindAtom("wgmma.m64n" + std::to_string(n_inst) + "k16." + type);
      WEFT_CHECK(atom.ok());
      // The C atom covers 64 x n_inst; repeats along n are the tiling's value modes.
      TvLayout c = TileMma(atom->Operand("C")->tv, Operand::C, info.m, info.n, info.k, gm, gn);
      assign(mma.acc, Anchor(c, op.span, "`wgmma` (its accumulator)"));
      if (!info.a_from_shared)
        assign(mma.a, Anchor(TileMma(atom->Operand("A")->tv, Operand::A, info.m, info.n, info.k, gm, gn), op.span,
                             "`wgmma` (its A operand, from registers)"));
      OpChoice& oc = at.ops[info.op.index];
      oc.mma_n = n_inst;
    }
  }
  // Unions in program order: a conflict is reported where two layouts meet.
  for (const UnionEdge& e : unions_) {
    std::size_t ra = find(e.a.index), rb = find(e.b.index);
    if (ra == rb) continue;
    if (layout_of[ra] && layout_of[rb] && !SameElements(layout_of[ra]->tv, layout_of[rb]->tv))
      conflict_at(e.span, e.who, *layout_of[ra], *layout_of[rb]);
    parent[rb] = ra;
    if (!layout_of[ra]) layout_of[ra] = layout_of[rb];
  }
  // Slices to a fixpoint; then a default layout for classes nothing anchors, and slices again.
  auto run_slices = [&] {
    for (bool changed = true; changed && !failed;) {
      changed = false;
      for (const SliceEdge& e : slices_) {
        std::size_t rp = find(e.parent.index), rc = find(e.child.index);
        if (!layout_of[rp]) continue;
        auto s = Slice(layout_of[rp]->tv, e.keep);
        if (!s.ok()) {
          if (!failed) {
            failed = true;
            const tile::Value& child = V(e.child);
            std::string what = child.name.empty() ? "the `" + ShapeText(child) + "` tile" : Name(e.child);
            conflict = MakeDiagnostic(DiagnosticKind::SynthSlice, e.span, what, s.error());
            // The other fact: where the parent's layout comes from (a pin, or an anchor's operation).
            const Req& from = *layout_of[rp];
            conflict->notes.push_back(from.pinned ? MakeNote(DiagnosticKind::NoteSynthPinned, from.span, from.pin_text)
                                                  : MakeNote(DiagnosticKind::NoteSynthGives, from.span, from.who,
                                                             layout::ToString(from.tv.layout)));
          }
          return;
        }
        Extent ce = ExtentOf(V(e.child));
        s->rows = ce.rows, s->cols = ce.cols;  // a rank-1 slice of columns is n x 1 too
        Req req{*s, e.span, e.who, false, ""};
        if (!layout_of[rc]) {
          layout_of[rc] = req;
          changed = true;
        } else if (!SameElements(layout_of[rc]->tv, s.value())) {
          conflict_at(e.span, e.who, *layout_of[rc], req);
          return;
        }
      }
    }
  };
  run_slices();
  for (OpId id : order_) {
    for (ValueId r : kernel_.Get(id).results) {
      const tile::Value& v = V(r);
      if (v.space != tile::Space::Reg || wgmma_smem_operand_[r.index] || layout_of[find(r.index)]) continue;
      Extent e = ExtentOf(v);
      std::int64_t t = kernel_.threads;
      // Vectors of 16 bytes along the last axis, the threads across the columns, then down the rows.
      std::int64_t vec = std::max<std::int64_t>(1, 16 / ElementBytes(v.dtype));
      while (vec > 1 && e.cols % vec != 0) vec /= 2;
      std::int64_t groups = e.cols / vec;
      std::int64_t tc = std::gcd(groups, t), tr = std::gcd(e.rows, t / tc), rest = t / (tc * tr);
      Layout l = TvOf({{tc, vec * e.rows}, {tr, 1}, {rest, 0}},
                      {{vec, e.rows}, {e.rows / tr, tr}, {groups / tc, tc * vec * e.rows}});
      layout_of[find(r.index)] = Anchor(TvLayout{l, e.rows, e.cols}, kernel_.Get(id).span, "the default row layout");
      run_slices();
    }
  }
  if (failed) return std::nullopt;
  for (std::size_t i = 0; i < nv; ++i) {
    if (kernel_.values[i].space != tile::Space::Reg || wgmma_smem_operand_[i]) continue;
    if (layout_of[find(i)]) {
      TvLayout tv = layout_of[find(i)]->tv;
      Extent e = ExtentOf(kernel_.values[i]);
      tv.rows = e.rows, tv.cols = e.cols;
      at.regs[i] = tv;
      at.values[i].regs = tv;
      at.values[i].pinned = reg_pins_[i].has_value();
      at.values[i].registers = static_cast<int>((tv.values() * ElementBytes(kernel_.values[i].dtype) + 3) / 4);
    }
  }
  return at;
}

// Step 3: each op's instruction and its count per thread, from the layouts of its operands
// (shared tiles' copies are ChooseShared's).
void Synthesizer::ChooseInstructions(Attempt& at, const std::vector<int>& combo) {
  std::int64_t warps = kernel_.threads / 32;
  for (OpId id : order_) {
    const tile::Op& op = kernel_.Get(id);
    OpChoice& oc = at.ops[id.index];
    std::visit(
        [&](const auto& o) {
          using T = std::decay_t<decltype(o)>;
          if constexpr (std::is_same_v<T, tile::op::ToRegs>) {
            ValueId r = op.results[0];
            if (wgmma_smem_operand_[r.index]) {
              oc.instruction = Instruction::None("wgmma reads it from shared memory");
              at.values[r.index].mma_operand = o.src.index;
              return;
            }
            if (!at.regs[r.index]) return;
            // Through a transposed view, the copy is fitted (and given) in the parent's coordinates,
            // whose last axis is the contiguous one.
            std::optional<TvLayout> transposed;
            if (TransposedParent(kernel_, o.src)) {
              transposed = TransposeTv(*at.regs[r.index]);
              if (!transposed) return;
            }
            const TvLayout& reg = transposed ? *transposed : *at.regs[r.index];
            int eb = ElementBytes(V(r).dtype);
            if (eb == 2) {
              for (int count : {4, 2, 1}) {
                for (bool trans : {false, true}) {
                  if (auto p = FitLdmatrix(reg, count, trans)) {
                    oc.instruction = Instruction::Ldmatrix(count, trans);
                    oc.copy = p->copy;
                    oc.vector_bytes = 16;
                    oc.instructions_per_thread = p->instructions;
                    oc.bytes = ExtentOf(V(r)).rows * ExtentOf(V(r)).cols * eb;
                    return;
                  }
                }
              }
            }
            VectorPlan p = FitVector(reg, eb);
            oc.instruction = Instruction::Vector(InstructionKind::kLdShared, p.bytes);
            oc.copy = p.copy;
            oc.vector_bytes = p.bytes;
            oc.instructions_per_thread = p.copy.values();
            oc.bytes = ExtentOf(V(r)).rows * ExtentOf(V(r)).cols * eb;
          } else if constexpr (std::is_same_v<T, tile::op::Store>) {
            const tile::Value& src = V(o.src);
            if (!at.regs[o.src.index]) return;
            int eb = ElementBytes(src.dtype);
            VectorPlan p = FitVector(*at.regs[o.src.index], eb);
            oc.instruction = Instruction::Vector(InstructionKind::kStGlobal, p.bytes);
            oc.copy = p.copy;
            oc.vector_bytes = p.bytes;
            oc.instructions_per_thread = p.copy.values();
            oc.bytes = ExtentOf(src).rows * ExtentOf(src).cols * eb;
          } else if constexpr (std::is_same_v<T, tile::op::Mma>) {
            for (std::size_t i = 0; i < mmas_.size(); ++i) {
              if (mmas_[i].op != id) continue;
              const MmaInfo& info = mmas_[i];
              auto [gm, gn] = info.tilings[combo[i]];
              oc.warps_m = gm, oc.warps_n = gn;
              if (target_ == Target::Sm80) {
                oc.instruction = Instruction::MmaSync(info.dtype);
                oc.instructions_per_thread = (info.m / gm / 16) * (info.n / gn / 8) * (info.k / 16);
              } else {
                oc.instruction = Instruction::Wgmma(oc.mma_n, info.dtype);
                oc.a_from_shared = info.a_from_shared;
                // B through a transposed view of an N x K tile is K-major.
                const auto* load =
                    V(o.b).def.valid() ? std::get_if<tile::op::ToRegs>(&kernel_.Get(V(o.b).def).node) : nullptr;
                oc.b_mn_major = !(load && TransposedParent(kernel_, load->src));
                oc.instructions_per_thread = (info.m / gm / 64) * (info.n / gn / oc.mma_n) * (info.k / 16);
              }
            }
          } else if constexpr (std::is_same_v<T, tile::op::Reduce>) {
            if (!at.regs[o.src.index] || !at.regs[op.results[0].index]) return;
            const TvLayout& src = *at.regs[o.src.index];
            const TvLayout& res = *at.regs[op.results[0].index];
            std::int64_t row = src.At(0, 0).row;
            auto holds = [&](std::int64_t t) {
              for (std::int64_t v = 0; v < src.values(); ++v)
                if (src.At(t, v).row == row) return true;
              return false;
            };
            int lanes = 0, holders = 0;
            for (std::int64_t t = 0; t < src.threads(); ++t) {
              if (!holds(t)) continue;
              if (t < 32) ++lanes;
              ++holders;
            }
            int warps_sharing = (holders + lanes - 1) / std::max(1, lanes);
            oc.shuffles = Log2(std::max(1, lanes));
            oc.shared_trip = warps_sharing > 1;
            oc.instruction = Instruction::ShflBfly(oc.shuffles);
            oc.instructions_per_thread = (src.values() - res.values()) + res.values() * oc.shuffles;
            if (oc.shared_trip) {
              oc.instructions_per_thread += 2 * res.values() + 1;
              oc.note = "a row spans " + std::to_string(warps_sharing) +
                        " warps: their partial results meet in shared memory (st.shared, bar.sync, ld.shared)";
            }
          } else if constexpr (std::is_same_v<T, tile::op::Map> || std::is_same_v<T, tile::op::Cast> ||
                               std::is_same_v<T, tile::op::Fill> || std::is_same_v<T, tile::op::Iota>) {
            if (!at.regs[op.results[0].index]) return;
            oc.instruction = Instruction::Of(std::is_same_v<T, tile::op::Cast>   ? InstructionKind::kCvt
                                             : std::is_same_v<T, tile::op::Fill> ? InstructionKind::kMov
                                             : std::is_same_v<T, tile::op::Iota> ? InstructionKind::kIota
                                                                                 : InstructionKind::kElementwise);
            oc.instructions_per_thread = at.regs[op.results[0].index]->values();
          } else if constexpr (std::is_same_v<T, tile::op::Expand>) {
            oc.instruction = Instruction::None("the same registers");
          } else if constexpr (std::is_same_v<T, tile::op::Convert>) {
            const auto& a = at.regs[o.src.index];
            const auto& b = at.regs[op.results[0].index];
            if (a && b && SameElements(*a, *b)) {
              oc.instruction = Instruction::None("the layouts agree");
            } else if (b) {
              oc.instruction = Instruction::Of(InstructionKind::kThroughShared);
              oc.instructions_per_thread = 2 * b->values() + 1;
            }
          } else if constexpr (std::is_same_v<T, tile::op::Loop>) {
            oc.instruction = Instruction::Of(o.pipelined ? InstructionKind::kPipeline : InstructionKind::kLoop);
          } else if constexpr (std::is_same_v<T, tile::op::View>) {
            oc.instruction = Instruction::None("a view");
          } else if constexpr (std::is_same_v<T, tile::op::Transpose>) {
            oc.instruction = Instruction::None("a view of " + Name(o.src) + " with the axes swapped");
          } else if constexpr (std::is_same_v<T, tile::op::ToShared>) {
            // chosen with the shared layout below
          } else {
            oc.instruction = Instruction::Of(InstructionKind::kScalar);
          }
        },
        op.node);
    at.instructions += oc.instructions_per_thread * warps;
  }
}

// Steps 2 and 3 for one combination of tilings: layouts by unification, then instructions, the
// registers they take, and each shared tile's candidates costed against the readers' copies.
std::optional<Attempt> Synthesizer::Evaluate(const std::vector<int>& combo, std::optional<Diagnostic>& conflict) {
  std::optional<Attempt> at = UnifyLayouts(combo, conflict);
  if (!at) return std::nullopt;
  ChooseInstructions(*at, combo);
  for (std::size_t i = 0; i < shared_.size(); ++i) {
    if (!tiles_[i]) {
      tiles_[i].emplace();
      if (!PrepareShared(shared_[i], *tiles_[i])) return std::nullopt;
    }
    if (!TabulateShared(*at, *tiles_[i])) return std::nullopt;
  }
  Stream(*at);
  at->registers = EstimateRegisters(*at).registers + 16;
  at->scratch = Scratch(*at);
  return at;
}

// Whether two shared layouts of an e.rows x e.cols tile put every element at the same offset.
bool SameOffsets(const SwizzledLayout& a, const SwizzledLayout& b, Extent e) {
  if (a.size() != b.size()) return false;
  for (std::int64_t r = 0; r < e.rows; ++r)
    for (std::int64_t c = 0; c < e.cols; ++c) {
      IntTuple at = IntTuple::Tuple({r, c});
      layout::Result<std::int64_t> x = a.Evaluate(at), y = b.Evaluate(at);
      if (!x.ok() || !y.ok() || *x != *y) return false;
    }
  return true;
}

// A shared tile's candidate layouts: its pin; else on sm_80 row-major with each swizzle that fits
// its 16-byte vectors; on sm_90a, boxes of each TMA swizzle mode that the tile's shape, its wgmma
// readers' descriptors (`wgmma_a`: read as A, `wgmma_b`: as B) and the TMA box rules allow.
std::vector<SharedCandidate> Synthesizer::SharedCandidates(ValueId s, bool tma, bool wgmma_a, bool wgmma_b) const {
  const tile::Value& sv = V(s);
  Extent e = ExtentOf(sv);
  int eb = ElementBytes(sv.dtype);
  std::vector<SharedCandidate> candidates;
  Layout row_major(IntTuple::Tuple({e.rows, e.cols}), IntTuple::Tuple({e.cols, std::int64_t{1}}));
  if (shared_pins_[s.index] && !tma) {
    candidates.push_back({shared_pins_[s.index]->layout});
  } else if (!tma) {
    int m = Log2(std::max(1, 16 / eb));
    int bits = Log2(e.rows * e.cols);
    candidates.push_back({SwizzledLayout(layout::Swizzle(0, m, 3), 0, row_major)});
    for (int b = 1; b <= 3; ++b)
      for (int sh = std::max(b, 3); sh <= 5; ++sh)
        if (m + sh + b <= bits) candidates.push_back({SwizzledLayout(layout::Swizzle(b, m, sh), 0, row_major)});
  } else {
    for (auto mode : {layout::SwizzleMode::k128B, layout::SwizzleMode::k64B, layout::SwizzleMode::k32B,
                      layout::SwizzleMode::kNone}) {
      std::int64_t span = mode == layout::SwizzleMode::k128B  ? 128
                          : mode == layout::SwizzleMode::k64B ? 64
                          : mode == layout::SwizzleMode::k32B ? 32
                                                              : 0;
      if ((wgmma_a || wgmma_b) && span == 0) continue;  // wgmma's no-swizzle layout is 8x8 core matrices
      std::int64_t wb = span ? span / eb : std::min<std::int64_t>(e.cols, 256);
      if (e.cols % wb != 0 || (span && e.rows % 8 != 0) || e.rows > 256) continue;
      auto sw = layout::SwizzleFor(mode, eb);
      if (!sw.ok()) continue;
      // Boxes of rows x wb, each row-major, one after another.
      Layout l(IntTuple::Tuple({e.rows, IntTuple::Tuple({wb, e.cols / wb})}),
               IntTuple::Tuple({wb, IntTuple::Tuple({std::int64_t{1}, e.rows * wb})}));
      SwizzledLayout tile(*sw, 0, l);
      if (wgmma_a && !layout::GmmaDescriptorFor(tile, mode, layout::Major::kK, eb).ok()) continue;
      if (wgmma_b) {
        Layout swapped(IntTuple::Tuple({l.shape()[1], l.shape()[0]}), IntTuple::Tuple({l.stride()[1], l.stride()[0]}));
        if (!layout::GmmaDescriptorFor(SwizzledLayout(*sw, 0, swapped), mode, layout::Major::kMN, eb).ok()) continue;
      }
      layout::TmaBox box;
      box.global_dims = {e.cols, e.rows};
      box.global_strides_bytes = {e.cols * eb};
      box.box_dims = {wb, e.rows};
      box.element_bytes = eb;
      box.swizzle = mode;
      if (!layout::CheckTmaBox(box).ok()) continue;
      candidates.push_back({tile, mode, wb});
    }
    // A pinned tile that TMA writes: the pin must be a layout its boxes write (PrepareShared says
    // why when it is none).
    if (shared_pins_[s.index])
      std::erase_if(candidates,
                    [&](const SharedCandidate& c) { return !SameOffsets(c.layout, shared_pins_[s.index]->layout, e); });
  }
  return candidates;
}

// The TMA copy that writes a shared tile on sm_90a: `c`'s boxes over the tensor the tile is a view of.
void Synthesizer::RecordTmaWrite(OpChoice& write, OpId writer, const SharedCandidate& c, Extent e, int eb) const {
  layout::TmaBox box;
  const tile::Value& view = V(std::get<tile::op::ToShared>(kernel_.Get(writer).node).src);
  ValueId tensor = view.def.valid() ? std::get<tile::op::View>(kernel_.Get(view.def).node).tensor : ValueId();
  const tile::Value& tv = tensor.valid() ? V(tensor) : view;
  // A 2-D map over the tensor with its leading axes flattened into rows (row-major tensors):
  // innermost first; symbolic extents and strides stay 0 (the runtime fills them in).
  std::int64_t inner = tv.shape.empty() ? 0 : Const(tv.shape.back());
  std::int64_t outer = 1;
  for (std::size_t i = 0; i + 1 < tv.shape.size(); ++i) {
    std::int64_t d = Const(tv.shape[i]);
    outer = (d > 0 && outer > 0) ? outer * d : 0;
  }
  box.global_dims = {std::max<std::int64_t>(inner, 0), outer};
  box.global_strides_bytes = {inner > 0 ? inner * eb : 0};
  box.box_dims = {c.box_cols, e.rows};
  box.element_bytes = eb;
  box.swizzle = c.mode;
  write.tma = box;
  write.tma_boxes = static_cast<int>(e.cols / c.box_cols);
  write.instruction = Instruction::Of(InstructionKind::kTma2d);
  write.instructions_per_thread = write.tma_boxes;  // issued by one thread
  write.note = std::to_string(write.tma_boxes) + " box" + (write.tma_boxes > 1 ? "es" : "") + " of " +
               std::to_string(c.box_cols) + " x " + std::to_string(e.rows) + ", issued by one thread";
}

// A shared tile's readers, candidates (swizzles on sm_80, TMA swizzle modes on sm_90a) and writer's
// copy: the same for every combination of warp tilings. False (and the error) when it has none.
bool Synthesizer::PrepareShared(ValueId s, SharedTile& tile) {
  const tile::Value& sv = V(s);
  Extent e = ExtentOf(sv);
  int eb = ElementBytes(sv.dtype);
  tile.value = s;
  tile.writer = sv.def;
  for (OpId use : uses_[s.index]) {
    if (std::holds_alternative<tile::op::ToRegs>(kernel_.Get(use).node)) tile.readers.push_back(use);
    if (std::holds_alternative<tile::op::Transpose>(kernel_.Get(use).node)) {
      tile.views.push_back(kernel_.Get(use).results[0]);
      for (OpId u : uses_[tile.views.back().index])
        if (std::holds_alternative<tile::op::ToRegs>(kernel_.Get(u).node)) tile.readers.push_back(u);
    }
  }
  bool wgmma_a = false, wgmma_b = false;  // read as wgmma's A (K-major) or B (MN-major, or K-major
                                          // through a transposed view)
  for (OpId r : tile.readers) {
    ValueId rv = kernel_.Get(r).results[0];
    bool through_view = std::get<tile::op::ToRegs>(kernel_.Get(r).node).src != s;
    for (OpId use : uses_[rv.index]) {
      if (const auto* m = std::get_if<tile::op::Mma>(&kernel_.Get(use).node); m && target_ == Target::Sm90a) {
        if (m->a == rv) (through_view ? wgmma_b : wgmma_a) = true;
        if (m->b == rv) (through_view ? wgmma_a : wgmma_b) = true;
      }
    }
  }
  tile.tma = target_ == Target::Sm90a && tile.writer.valid();
  tile.candidates = SharedCandidates(s, tile.tma, wgmma_a, wgmma_b);
  if (tile.candidates.empty() && tile.tma && shared_pins_[s.index]) {
    const tile::Pin& pin = *sv.pin;
    Error(DiagnosticKind::SynthBadPin, pin.span, pin.text,
          "on sm_90a a TMA copy writes this tile, in boxes of rows swizzled over 128, 64 or 32 bytes (or not "
          "swizzled), and the pin is none of those layouts");
    return false;
  }
  if (tile.candidates.empty()) {
    Error(DiagnosticKind::SynthCopy, tile.writer.valid() ? kernel_.Get(tile.writer).span : sv.span,
          "`" + ShapeText(sv) + "` fits no " + std::string(tile.tma ? "TMA box" : "shared layout"),
          tile.tma ? "a TMA box is at most 256 x 256 elements, with rows a multiple of 16 bytes; split the tile"
                   : "use a larger tile");
    if (!tile.readers.empty())
      errors_.back().notes.push_back({kernel_.Get(tile.readers.front()).span, "the tile is read here"});
    return false;
  }
  // The writer's copy (sm_80): 16-byte cp.async vectors, coalesced along the last axis.
  if (tile.writer.valid() && !tile.tma) {
    for (int bytes : {16, 8, 4}) {
      std::int64_t n = bytes / eb;
      if (n < 1 || e.cols % n != 0) continue;
      std::int64_t chunks = e.cols / n, t = kernel_.threads;
      std::int64_t tc = std::gcd(chunks, t), tr = std::gcd(e.rows, t / tc), rest = t / (tc * tr);
      Layout l = TvOf({{tc, n * e.rows}, {tr, 1}, {rest, 0}}, {{e.rows / tr, tr}, {chunks / tc, tc * n * e.rows}});
      tile.write_copy = TvLayout{l, e.rows, e.cols};
      tile.write_bytes = bytes;
      break;
    }
    if (!tile.write_copy) {
      Error(DiagnosticKind::SynthCopy, kernel_.Get(tile.writer).span,
            "a row of `" + ShapeText(sv) + "` is " + std::to_string(e.cols * eb) + " bytes",
            "cp.async moves 4, 8 or 16 bytes: make the last axis a multiple of 4 bytes");
      return false;
    }
  }
  return true;
}

// The class of this combination's readers' copies of a shared tile, with every candidate costed
// against it the first time the class is seen: the exact wavefronts of the writer's cp.async vectors
// and the readers' ldmatrix/ld.shared reads, plus the TMA instructions. False (and the error) when
// every candidate misaligns a vector.
bool Synthesizer::TabulateShared(Attempt& at, SharedTile& tile) {
  const tile::Value& sv = V(tile.value);
  Extent e = ExtentOf(sv);
  int eb = ElementBytes(sv.dtype);
  at.candidates += static_cast<std::int64_t>(tile.candidates.size());
  if (tile.write_copy) at.instructions += tile.write_copy->values() * (kernel_.threads / 32);
  std::string key;
  for (OpId r : tile.readers) {
    const OpChoice& rc = at.ops[r.index];
    key += std::to_string(r.index) + ":";
    if (rc.copy)
      key += std::string(Spelling(rc.instruction)) + " " + std::to_string(rc.vector_bytes) + " " +
             layout::ToString(rc.copy->layout) + ";";
  }
  auto [it, fresh] = tile.classes.try_emplace(key, static_cast<int>(tile.classes.size()));
  at.classes.push_back(it->second);
  if (!fresh) return true;
  std::vector<std::optional<Scored>>& row = tile.scored.emplace_back();
  for (const SharedCandidate& c : tile.candidates) {
    std::optional<Scored>& sc = row.emplace_back(Scored{});
    if (tile.write_copy) {
      auto w = CountCopyConflicts(*tile.write_copy, c.layout, eb, tile.write_bytes);
      if (!w.ok()) {
        sc.reset();
        continue;
      }
      sc->wavefronts += w->wavefronts;
      sc->accesses.push_back({tile.writer, Access{"cp.async writes of " + Name(tile.value), *w}});
    }
    for (OpId r : tile.readers) {
      const OpChoice& rc = at.ops[r.index];
      if (!rc.copy) continue;
      bool ldmatrix = rc.instruction.kind == InstructionKind::kLdmatrix;  // else ld.shared
      int active = ldmatrix ? 8 * rc.instruction.count : 32;
      auto rd = CountCopyConflicts(*rc.copy, c.layout, eb, rc.vector_bytes, active);
      if (!rd.ok()) {
        sc.reset();
        break;
      }
      sc->wavefronts += rd->wavefronts;
      sc->accesses.push_back(
          {r, Access{(ldmatrix ? "ldmatrix reads of " : "ld.shared reads of ") + Name(tile.value), *rd}});
    }
    if (sc && tile.tma) sc->wavefronts += e.cols / c.box_cols;  // TMA instructions
  }
  if (std::none_of(row.begin(), row.end(), [](const auto& sc) { return sc.has_value(); })) {
    Error(DiagnosticKind::SynthCopy, tile.writer.valid() ? kernel_.Get(tile.writer).span : sv.span,
          "every candidate layout of `" + ShapeText(sv) + "` misaligns a vector",
          "pin a layout that keeps rows of 16 bytes");
    return false;
  }
  return true;
}

// The chosen candidate of a shared tile: its layout (and its transposed views'), its costed accesses
// and the writer's copy.
void Synthesizer::ApplyShared(Attempt& at, std::size_t i, int candidate) {
  const SharedTile& tile = *tiles_[i];
  const tile::Value& sv = V(tile.value);
  Extent e = ExtentOf(sv);
  int eb = ElementBytes(sv.dtype);
  const SharedCandidate& c = tile.candidates[candidate];
  const Scored& scored = *tile.scored[at.classes[i]][candidate];
  ValueChoice& vc = at.values[tile.value.index];
  vc.shared = c.layout;
  vc.swizzle_mode = c.mode;
  vc.pinned = shared_pins_[tile.value.index].has_value();
  std::int64_t align = c.mode == layout::SwizzleMode::k128B ? 1024 : 128;
  vc.stage_bytes = (e.rows * e.cols * eb + align - 1) / align * align;
  at.wavefronts += scored.wavefronts;
  for (const auto& [op, access] : scored.accesses) at.ops[op.index].accesses.push_back(access);
  for (ValueId view : tile.views) {  // the parent's layout with the modes swapped: the same bytes
    const Layout& l = c.layout.layout();
    Layout swapped(IntTuple::Tuple({l.shape()[1], l.shape()[0]}), IntTuple::Tuple({l.stride()[1], l.stride()[0]}));
    ValueChoice& view_choice = at.values[view.index];
    view_choice.shared = SwizzledLayout(c.layout.swizzle(), 0, swapped);
    view_choice.swizzle_mode = c.mode;
    view_choice.pinned = vc.pinned;
  }
  if (!tile.writer.valid()) return;
  OpChoice& write = at.ops[tile.writer.index];
  write.bytes = e.rows * e.cols * eb;
  if (tile.tma) {
    RecordTmaWrite(write, tile.writer, c, e, eb);
  } else {
    write.copy = tile.write_copy;
    write.vector_bytes = tile.write_bytes;
    write.instruction = Instruction::Vector(
        tile.write_bytes == 16 ? InstructionKind::kCpAsyncCg : InstructionKind::kCpAsyncCa, tile.write_bytes);
    write.instructions_per_thread = tile.write_copy->values();
  }
}

// The shared bytes of the reductions whose rows span several warps (their partial results).
std::int64_t Synthesizer::Scratch(const Attempt& at) const {
  std::int64_t scratch = 0;
  for (OpId id : order_)
    if (at.ops[id.index].shared_trip) {
      const tile::Op& op = kernel_.Get(id);
      scratch += ExtentOf(V(op.results[0])).rows * (kernel_.threads / 32) * 4;
    }
  return scratch;
}

// The stage counts a pipeline may have, most first: the default (3 on sm_80, 4 on sm_90a, or the
// option's) down to 1.
std::vector<int> Synthesizer::StageCounts() const {
  std::vector<int> out;
  for (int s = options_.stages.value_or(target_ == Target::Sm80 ? 3 : 4); s >= 1; --s) out.push_back(s);
  return out;
}

// Step 4's space: every combination's instructions, registers and scratch, every shared tile's
// candidates with their bytes and their wavefronts per class of readers' copies.
Space Synthesizer::MakeSpace(const std::vector<std::optional<Attempt>>& attempts) const {
  Space space;
  space.shared_budget = SharedBudget(target_);
  space.register_budget = RegisterBudget(target_);
  space.stages = StageCounts();
  for (const std::optional<Attempt>& at : attempts) {
    SpaceCombo& combo = space.combos.emplace_back();
    if (!at) continue;
    combo.feasible = true;
    combo.instructions = at->instructions;
    combo.registers = at->registers;
    combo.scratch = at->scratch;
  }
  bool unaligned_before = false;  // whether an earlier tile may end off a 1024-byte boundary
  for (std::size_t i = 0; i < shared_.size(); ++i) {
    const SharedTile& tile = *tiles_[i];
    const tile::Value& sv = V(tile.value);
    SpaceTile& st = space.tiles.emplace_back();
    st.pipelined = loop_of_[sv.def.index].valid();
    for (const std::optional<Attempt>& at : attempts) st.class_of.push_back(at ? at->classes[i] : -1);
    for (const auto& row : tile.scored) {
      auto& out = st.wavefronts.emplace_back();
      for (const auto& sc : row) out.push_back(sc ? std::optional<std::int64_t>(sc->wavefronts) : std::nullopt);
    }
    Extent e = ExtentOf(sv);
    bool unaligned = false;
    for (const SharedCandidate& c : tile.candidates) {
      // As Finish lays them out: 128-byte aligned, 1024 for the 128-byte swizzle.
      std::int64_t align = c.mode == layout::SwizzleMode::k128B ? 1024 : 128;
      std::int64_t bytes = (e.rows * e.cols * ElementBytes(sv.dtype) + align - 1) / align * align;
      st.bytes.push_back(bytes);
      st.padding.push_back(align == 1024 && unaligned_before ? 1024 - 128 : 0);
      unaligned = unaligned || bytes % 1024 != 0;
    }
    unaligned_before = unaligned_before || unaligned;
  }
  return space;
}

bool Synthesizer::ReadsProducts() const {
  for (OpId id : kernel_.body) {
    const auto* loop = std::get_if<tile::op::Loop>(&kernel_.Get(id).node);
    if (!loop || !loop->pipelined) continue;
    std::set<std::uint32_t> in_body;
    for (OpId op : loop->body) in_body.insert(op.index);
    for (OpId op : loop->body) {
      if (!std::holds_alternative<tile::op::Mma>(kernel_.Get(op).node)) continue;
      for (OpId use : uses_[kernel_.Get(op).results.at(0).index])
        if (in_body.count(use.index) && !std::holds_alternative<tile::op::Mma>(kernel_.Get(use).node)) return true;
    }
  }
  return false;
}

// The chosen stages laid out (offsets), the budgets checked, descriptors, registers, and the plan's
// summary.
void Synthesizer::Finish(Attempt& at, Plan& plan, int stages) {
  int default_stages = StageCounts().front();
  const std::vector<ValueId>& shared = shared_;  // transposed views take no memory of their own
  std::int64_t scratch = Scratch(at);
  auto total = [&](int stages) {
    std::int64_t offset = 0;
    for (ValueId s : shared) {
      ValueChoice& vc = at.values[s.index];
      std::int64_t align = vc.swizzle_mode == layout::SwizzleMode::k128B ? 1024 : 128;
      offset = (offset + align - 1) / align * align;
      vc.shared_offset = offset;
      vc.stages = loop_of_[V(s).def.index].valid() ? stages : 1;
      offset += vc.stage_bytes * vc.stages;
    }
    return offset + scratch;
  };
  std::int64_t bytes = total(stages);
  bool pipelined = false;
  for (ValueId s : shared) pipelined |= at.values[s.index].stages > 1 || loop_of_[V(s).def.index].valid();
  // A block of one or two warpgroups on sm_90a whose pipeline waits for its products (attention,
  // not a gemm), and whose stages keep a second block off the multiprocessor, keeps three where two
  // blocks then fit: one block's warps wait on their products with the multiprocessor half idle.
  // A multiprocessor holds 228 KiB, 1 KiB of it a block's own; codegen adds its mbarriers past the
  // tiles, and to one warpgroup a producer warpgroup (FindSpecialization) and the zeroed 1 KiB a
  // staged product reads (two warpgroups that share a multiprocessor get no producer: their
  // registers would not fit). Attention at head dim 64, on an H200: 64 query rows a block of one
  // warpgroup, 1.03-1.10x faster causal than one block of 128 rows
  // (bench/results/2026-11-26-h200-tma-store.md); 128 rows a block of two warpgroups without a
  // producer, 1.02-1.21x faster than 64 rows (bench/results/2026-11-27-h100-d64-two-blocks.md).
  const std::int64_t reserve = (kernel_.threads == 128 ? 1024 + 16 + 2 * 8 * 8 : 8 * 8) + 1024;
  auto two_fit = [&](int s) { return 2 * (total(s) + reserve) <= 228 * 1024; };
  if (target_ == Target::Sm90a && (kernel_.threads == 128 || kernel_.threads == 256) && pipelined && !options_.stages &&
      stages > 3 && !two_fit(stages) && two_fit(3) && ReadsProducts()) {
    plan.notes.push_back("pipeline stages reduced from " + std::to_string(stages) +
                         " to 3 so that two blocks fit a multiprocessor (" + std::to_string(total(stages)) +
                         " bytes of shared memory a block with " + std::to_string(stages) + ")");
    stages = 3;
    plan.blocks_per_sm = 2;
  }
  if (stages != default_stages && pipelined && plan.blocks_per_sm == 1)
    plan.notes.push_back("pipeline stages reduced from " + std::to_string(default_stages) + " to " +
                         std::to_string(stages) + ": " + std::to_string(default_stages) + " would need " +
                         std::to_string(total(default_stages)) + " bytes of shared memory");
  bytes = total(stages);
  if (bytes > SharedBudget(target_)) {
    ValueId largest = shared.front();
    for (ValueId s : shared)
      if (at.values[s.index].stage_bytes > at.values[largest.index].stage_bytes) largest = s;
    Span where = V(largest).def.valid() ? kernel_.Get(V(largest).def).span : V(largest).span;
    Error(DiagnosticKind::SynthSharedBudget, where, bytes, stages == 1 ? "1 stage" : std::to_string(stages) + " stages",
          Spelling(target_), SharedBudget(target_));
    errors_.back().notes.push_back(
        {where, "this tile takes " + std::to_string(at.values[largest.index].stage_bytes) + " bytes a stage"});
    int shown = 0;
    for (ValueId s : shared) {
      if (s == largest || shown++ == 2) continue;
      Span other = V(s).def.valid() ? kernel_.Get(V(s).def).span : V(s).span;
      errors_.back().notes.push_back(
          {other, "with this one, " + std::to_string(at.values[s.index].stage_bytes) + " bytes a stage"});
    }
    return;
  }
  if (pipelined) plan.notes.push_back(std::to_string(stages) + " pipeline stages");
  plan.shared_bytes = bytes;

  // wgmma descriptors (start 0; see plan.h).
  for (const MmaInfo& info : mmas_) {
    if (target_ != Target::Sm90a) break;
    const auto& mma = std::get<tile::op::Mma>(kernel_.Get(info.op).node);
    OpChoice& oc = at.ops[info.op.index];
    int eb = ElementBytes(info.dtype);
    auto shared_of = [&](ValueId v) { return std::get<tile::op::ToRegs>(kernel_.Get(V(v).def).node).src; };
    if (info.a_from_shared) {
      // A through a transposed view of a K x M tile (M contiguous) is MN-major: the view's layout
      // is already M x K.
      ValueId sa = shared_of(mma.a);
      bool view = TransposedParent(kernel_, sa).has_value();
      const ValueChoice& vc = at.values[sa.index];
      auto d =
          layout::GmmaDescriptorFor(*vc.shared, vc.swizzle_mode, view ? layout::Major::kMN : layout::Major::kK, eb);
      if (d.ok()) oc.desc_a = *d;
      oc.a_mn_major = view;
    }
    if (std::optional<ValueId> parent = TransposedParent(kernel_, shared_of(mma.b))) {
      const ValueChoice& vp = at.values[parent->index];  // N x K, K contiguous: a K-major B
      auto d = layout::GmmaDescriptorFor(*vp.shared, vp.swizzle_mode, layout::Major::kK, eb);
      if (d.ok()) oc.desc_b = *d;
      continue;
    }
    const ValueChoice& vb = at.values[shared_of(mma.b).index];
    const Layout& l = vb.shared->layout();
    Layout swapped(IntTuple::Tuple({l.shape()[1], l.shape()[0]}), IntTuple::Tuple({l.stride()[1], l.stride()[0]}));
    auto d = layout::GmmaDescriptorFor(SwizzledLayout(vb.shared->swizzle(), 0, swapped), vb.swizzle_mode,
                                       layout::Major::kMN, eb);
    if (d.ok()) oc.desc_b = *d;
  }

  Peak peak = EstimateRegisters(at);
  plan.registers_per_thread = static_cast<int>(peak.registers + 16);
  if (plan.registers_per_thread > RegisterBudget(target_)) {
    Error(DiagnosticKind::SynthRegisterBudget, kernel_.span, plan.registers_per_thread, Spelling(target_),
          RegisterBudget(target_));
    auto regs_of = [&](ValueId v) { return at.values[v.index].registers; };
    ValueId largest;
    for (ValueId r : peak.live)
      if (!largest.valid() || regs_of(r) > regs_of(largest)) largest = r;
    if (peak.op.valid())
      errors_.back().notes.push_back(
          {kernel_.Get(peak.op).span, "the most are live here: " + std::to_string(peak.registers) + " registers for " +
                                          std::to_string(peak.live.size()) +
                                          (peak.live.size() == 1 ? " tile" : " tiles")});
    if (largest.valid() && V(largest).def.valid())
      errors_.back().notes.push_back(
          {kernel_.Get(V(largest).def).span, "the largest register tile, `" + ShapeText(V(largest)) + "`, takes " +
                                                 std::to_string(regs_of(largest)) + " registers a thread here"});
  }
}

// plan.h's streamed operands (sm_80): a `regs` of a shared tile (or of a transposed view) read only
// as mma.sync's A or B, whose values are k16-slice-major in every thread and whose copy instructions
// split into whole slices, is loaded one slice at a time right before the mma steps that use it.
void Synthesizer::Stream(Attempt& at) {
  if (target_ != Target::Sm80) return;
  for (OpId id : order_) {
    const tile::Op& op = kernel_.Get(id);
    const auto* load = std::get_if<tile::op::ToRegs>(&op.node);
    if (!load) continue;
    ValueId r = op.results[0];
    ValueChoice& vc = at.values[r.index];
    const OpChoice& oc = at.ops[id.index];
    if (!vc.regs || !oc.copy || uses_[r.index].empty()) continue;
    const tile::Value& src = V(load->src);
    if (src.space != tile::Space::Shared) continue;
    bool ok = true;
    for (OpId use : uses_[r.index]) {
      const auto* m = std::get_if<tile::op::Mma>(&kernel_.Get(use).node);
      if (!m || m->acc == r || (m->a == r) == (m->b == r)) {
        ok = false;
        break;
      }
      // k is the columns of A, the rows of B; slice s is k in [16 s, 16 s + 16).
      bool is_a = m->a == r;
      const layout::TvLayout& tv = *vc.regs;
      std::int64_t k = is_a ? tv.cols : tv.rows, slices = k / 16, values = tv.values();
      std::int64_t copies = oc.copy->values();
      if (k % 16 != 0 || values % slices != 0 || copies % slices != 0) {
        ok = false;
        break;
      }
      for (std::int64_t t = 0; t < tv.threads() && ok; ++t)
        for (std::int64_t v = 0; v < values && ok; ++v) {
          layout::TvLayout::RowCol e = tv.At(t, v);
          ok = (is_a ? e.col : e.row) / 16 == v / (values / slices);
        }
      if (!ok) break;
    }
    vc.streamed = ok;
  }
}

// The registers live at the busiest op: every Reg tile from its definition to its last use (a tile
// defined before a loop and read inside it, to the loop's end; a carried value from the loop's
// start to its last use in the body, its yield from its definition to the loop's end; `expand` is
// the same registers as its operand), plus the results of the op. An elementwise op, a cast and an
// mma's accumulator write their results into the registers of an operand that dies there and has
// the result's shape (element by element). Streamed operands count one k16 slice, at their mma
// only; wgmma's operands in shared memory count nothing.
Synthesizer::Peak Synthesizer::EstimateRegisters(const Attempt& at) const {
  std::size_t nv = kernel_.values.size();
  std::vector<std::int64_t> pos(kernel_.ops.size(), -1), end(kernel_.ops.size(), -1);
  for (std::size_t i = 0; i < order_.size(); ++i) pos[order_[i].index] = static_cast<std::int64_t>(i);
  std::function<std::int64_t(OpId)> last = [&](OpId id) -> std::int64_t {
    const auto* l = std::get_if<tile::op::Loop>(&kernel_.Get(id).node);
    if (!l) return pos[id.index];
    std::int64_t e = pos[id.index];
    for (OpId o : l->body) e = std::max(e, last(o));
    return end[id.index] = e;
  };
  for (OpId id : kernel_.body) last(id);
  // Aliases: `expand` is its operand's registers.
  std::vector<std::size_t> root(nv);
  std::iota(root.begin(), root.end(), 0);
  for (OpId id : order_)
    if (const auto* e = std::get_if<tile::op::Expand>(&kernel_.Get(id).node))
      root[kernel_.Get(id).results[0].index] = root[e->src.index];
  // Rematerializable tiles (fills, iotas, and elementwise ops, casts and expands of those and of
  // scalars) are functions of the thread's index and scalars: codegen computes each element where it
  // is used, so they hold no registers (attention's causal mask).
  std::vector<bool> remat(nv, false);
  for (OpId id : order_) {
    const tile::Op& op = kernel_.Get(id);
    bool r = std::holds_alternative<tile::op::Fill>(op.node) || std::holds_alternative<tile::op::Iota>(op.node);
    if (std::holds_alternative<tile::op::Map>(op.node) || std::holds_alternative<tile::op::Cast>(op.node) ||
        std::holds_alternative<tile::op::Expand>(op.node)) {
      r = true;
      for (ValueId v : Operands(op.node)) r = r && (V(v).space == tile::Space::Scalar || remat[v.index]);
    }
    if (r)
      for (ValueId v : op.results) remat[v.index] = true;
  }
  auto regs_of = [&](std::size_t v) -> std::int64_t {
    const tile::Value& val = kernel_.values[v];
    if (val.space != tile::Space::Reg || at.values[v].streamed || remat[v]) return 0;
    return at.values[v].registers;
  };
  std::vector<std::int64_t> def(nv, -1), use(nv, -1);
  for (std::size_t v = 0; v < nv; ++v)
    if (kernel_.values[v].def.valid()) def[v] = pos[kernel_.values[v].def.index];
  for (OpId id : order_) {
    const tile::Op& op = kernel_.Get(id);
    const auto* l = std::get_if<tile::op::Loop>(&op.node);
    if (!l) continue;
    for (ValueId c : l->carried) def[c.index] = pos[id.index];
    for (ValueId r : op.results) def[r.index] = end[id.index];
  }
  // A use at position p inside loops: extended to the end of each enclosing loop that the value is
  // defined before.
  auto note_use = [&](ValueId v, std::int64_t p, OpId loop) {
    std::size_t r = root[v.index];
    for (OpId l = loop; l.valid(); l = enclosing_[l.index])
      if (def[r] < pos[l.index]) p = std::max(p, end[l.index]);
    use[r] = std::max(use[r], p);
  };
  for (OpId id : order_) {
    const tile::Op& op = kernel_.Get(id);
    if (const auto* l = std::get_if<tile::op::Loop>(&op.node)) {
      for (ValueId v : l->init) note_use(v, pos[id.index], enclosing_[id.index]);
      for (ValueId v : l->yields) note_use(v, end[id.index], id);
      continue;
    }
    for (ValueId v : Operands(op.node)) note_use(v, pos[id.index], enclosing_[id.index]);
  }
  Peak peak;
  for (OpId id : order_) {
    const tile::Op& op = kernel_.Get(id);
    if (std::holds_alternative<tile::op::Loop>(op.node)) continue;
    std::int64_t p = pos[id.index];
    std::vector<bool> is_operand(nv, false);
    for (ValueId v : Operands(op.node)) is_operand[root[v.index]] = true;
    std::int64_t need = 0, dying_same = 0, results = 0;
    std::vector<ValueId> live;
    for (std::size_t v = 0; v < nv; ++v) {
      if (root[v] != v || regs_of(v) == 0 || def[v] >= p || use[v] < p) continue;
      need += regs_of(v);
      live.push_back(ValueId(static_cast<std::uint32_t>(v)));
    }
    bool in_place = std::holds_alternative<tile::op::Map>(op.node) || std::holds_alternative<tile::op::Cast>(op.node) ||
                    std::holds_alternative<tile::op::Mma>(op.node);
    for (ValueId r : op.results) {
      if (root[r.index] != r.index) continue;
      results += regs_of(r.index);
      if (regs_of(r.index) > 0) live.push_back(r);
      if (!in_place) continue;
      Extent er = ExtentOf(V(r));
      std::vector<ValueId> candidates;
      if (const auto* m = std::get_if<tile::op::Mma>(&op.node))
        candidates = {m->acc};
      else
        candidates = Operands(op.node);
      for (ValueId v : candidates) {
        std::size_t rv = root[v.index];
        Extent ev = ExtentOf(V(v));
        if (use[rv] == p && def[rv] < p && ev.rows == er.rows && ev.cols == er.cols &&
            V(v).shape.size() == V(r).shape.size())
          dying_same = std::max(dying_same, regs_of(rv));
      }
    }
    need += results - std::min(results, dying_same);
    if (const auto* m = std::get_if<tile::op::Mma>(&op.node))
      for (ValueId v : {m->a, m->b}) {
        if (!at.values[v.index].streamed) continue;
        std::int64_t k = ExtentOf(V(m->a)).cols;
        need += (at.values[v.index].registers + k / 16 - 1) / (k / 16);
      }
    if (need > peak.registers) peak = Peak{need, id, live};
  }
  return peak;
}

bool Synthesizer::Tabulate() {
  std::size_t nv = kernel_.values.size();
  loop_of_.assign(kernel_.ops.size(), OpId());
  uses_.assign(nv, {});
  reg_pins_.assign(nv, std::nullopt);
  shared_pins_.assign(nv, std::nullopt);
  wgmma_smem_operand_.assign(nv, false);
  if (kernel_.threads <= 0 || kernel_.threads % 32 != 0) {
    Error(DiagnosticKind::SynthThreads, kernel_.span, kernel_.threads, "warps of 32 threads");
    return false;
  }
  enclosing_.assign(kernel_.ops.size(), OpId());
  Walk(kernel_.body, OpId(), OpId());
  for (OpId id : order_) {
    const tile::Op& op = kernel_.Get(id);
    // A transposed view of a shared tile: its layout is its parent's with the modes swapped, and a
    // `regs` of it is fitted (ldmatrix or vectors) in the parent's coordinates; wgmma reads a view as
    // B through a K-major descriptor of the parent. Only `regs` reads it.
    if (std::holds_alternative<tile::op::Transpose>(op.node)) {
      bool only_regs = true;
      for (OpId use : uses_[op.results[0].index])
        only_regs = only_regs && std::holds_alternative<tile::op::ToRegs>(kernel_.Get(use).node);
      if (!only_regs)
        Error(DiagnosticKind::SynthUnsupported, op.span,
              "a transposed view of a shared tile that is not loaded with `regs`");
      else if (V(op.results[0]).pin)
        Error(DiagnosticKind::SynthUnsupported, V(op.results[0]).pin->span,
              "a pinned layout on a transposed view: pin the shared tile it views");
    }
    for (ValueId r : op.results) {
      const tile::Value& v = V(r);
      if ((v.space == tile::Space::Reg || v.space == tile::Space::Shared) &&
          (v.shape.size() > 2 || ExtentOf(v).rows < 1 || ExtentOf(v).cols < 1))
        Error(DiagnosticKind::SynthUnsupported, op.span,
              "tiles of rank " + std::to_string(v.shape.size()) + " or with symbolic extents (`" + ShapeText(v) + "`)");
    }
  }
  if (!errors_.empty()) return false;
  CheckMmas();
  EvaluatePins();
  if (!errors_.empty()) return false;
  ReadConstraints();

  for (OpId id : order_)
    for (ValueId r : kernel_.Get(id).results)
      if (V(r).space == tile::Space::Shared && !TransposedParent(kernel_, r)) shared_.push_back(r);
  tiles_.assign(shared_.size(), std::nullopt);

  // Step 4: every combination of tilings (a mixed-radix counter), in a fixed order, evaluated and
  // its shared tiles' candidates costed; then the choice (choose.h) over the tabulated space.
  std::vector<int> combo(mmas_.size(), 0);
  std::vector<std::optional<Attempt>>& attempts = attempts_;
  std::optional<Diagnostic> first_conflict;
  std::int64_t& candidates = candidates_;
  for (;;) {
    std::optional<Diagnostic> conflict;
    std::optional<Attempt> a = Evaluate(combo, conflict);
    if (!errors_.empty()) return false;
    if (a) {
      candidates += a->candidates;
    } else {
      ++candidates;
      if (!first_conflict) first_conflict = std::move(conflict);
    }
    attempts.push_back(std::move(a));
    std::size_t i = 0;
    while (i < combo.size() && ++combo[i] == static_cast<int>(mmas_[i].tilings.size())) combo[i++] = 0;
    if (i == combo.size()) break;
  }
  if (std::none_of(attempts.begin(), attempts.end(), [](const auto& a) { return a.has_value(); })) {
    errors_.push_back(first_conflict ? *first_conflict
                                     : MakeDiagnostic(DiagnosticKind::SynthUnsupported, kernel_.span,
                                                      "this kernel: no combination of layouts works"));
    return false;
  }
  space_ = MakeSpace(attempts);
  return true;
}

Result<Plan, std::vector<Diagnostic>> Synthesizer::Run() {
  auto start = std::chrono::steady_clock::now();
  if (!Tabulate()) return errors_;
  Space space = space_;
  auto choose = [&](const Space& sp) -> std::optional<Choice> {
    if (options_.chooser == Chooser::kSearch) return ChooseBySearch(sp);
    std::string unknown;
    std::optional<Choice> c;
    if (options_.session) {
      c = ChooseByZ3(sp, options_.session, unknown);
    } else {
      // One Z3 context for the process (creating one costs more than solving a kernel's choice),
      // never destroyed (Z3's own globals may be gone at exit). Its history cannot change a proved
      // answer: the objective has one optimum.
      static std::mutex mutex;
      static solver::Session* shared = new solver::Session;
      std::lock_guard lock(mutex);
      c = ChooseByZ3(sp, shared, unknown);
    }
    if (c || unknown.empty()) return c;
    c = ChooseBySearch(sp);  // Z3 gave no answer within its limits: the search gives the optimum
    if (c) c->status = unknown;
    return c;
  };
  std::optional<Choice> choice = choose(space);
  if (!choice) {  // nothing within the budgets: the best ignoring them, for Finish to say what exceeds
    space.budgets = false;
    choice = choose(space);
  }
  WEFT_CHECK(choice.has_value());
  Attempt& best = *attempts_[choice->combo];
  for (std::size_t i = 0; i < shared_.size(); ++i) ApplyShared(best, i, choice->candidates[i]);
  WEFT_CHECK(best.wavefronts == choice->wavefronts && best.instructions == choice->instructions);
  Plan plan;
  plan.kernel = kernel_.name;
  plan.target = target_;
  plan.threads = kernel_.threads;
  Finish(best, plan, choice->stages);
  if (!errors_.empty()) return errors_;
  plan.values = std::move(best.values);
  plan.ops = std::move(best.ops);
  plan.candidates = candidates_;
  plan.cost = best.cost();
  plan.objective = "shared-memory wavefronts + warp instructions per execution: " + std::to_string(best.wavefronts) +
                   " + " + std::to_string(best.instructions) + " = " + std::to_string(best.cost());
  plan.optimal = choice->optimal;
  plan.chooser = choice->chooser;
  plan.chooser_status = choice->status;
  plan.instructions = choice->instructions;
  plan.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return plan;
}

}  // namespace

Result<Plan, std::vector<Diagnostic>> Synthesize(const tile::Kernel& kernel, Target target, const Options& options) {
  return Synthesizer(kernel, target, options).Run();
}

Result<Space, std::vector<Diagnostic>> TabulateSpace(const tile::Kernel& kernel, Target target,
                                                     const Options& options) {
  Synthesizer synthesizer(kernel, target, options);
  if (!synthesizer.Tabulate()) return synthesizer.errors();
  return synthesizer.space();
}

}  // namespace weft::synth
