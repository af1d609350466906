// `weft explain`'s text; see explain.h.
#include "synth/explain.h"

#include <cstdio>
#include <sstream>

namespace weft::synth {

namespace {

using tile::OpId;
using tile::ValueId;

std::string OpName(const tile::OpNode& node) {
  return std::visit(
      [](const auto& o) -> std::string {
        using T = std::decay_t<decltype(o)>;
        if constexpr (std::is_same_v<T, tile::op::ToShared>)
          return "shared";
        else if constexpr (std::is_same_v<T, tile::op::ToRegs>)
          return "regs";
        else if constexpr (std::is_same_v<T, tile::op::Store>)
          return "store";
        else if constexpr (std::is_same_v<T, tile::op::Mma>)
          return "mma";
        else if constexpr (std::is_same_v<T, tile::op::Fill>)
          return "fill";
        else if constexpr (std::is_same_v<T, tile::op::Iota>)
          return "iota";
        else if constexpr (std::is_same_v<T, tile::op::Map>)
          return o.fn;
        else if constexpr (std::is_same_v<T, tile::op::Reduce>)
          return o.fn;
        else if constexpr (std::is_same_v<T, tile::op::Expand>)
          return "expand";
        else if constexpr (std::is_same_v<T, tile::op::Cast>)
          return "cast";
        else if constexpr (std::is_same_v<T, tile::op::Convert>)
          return "convert";
        else if constexpr (std::is_same_v<T, tile::op::Loop>)
          return o.pipelined ? "pipeline" : "loop";
        else if constexpr (std::is_same_v<T, tile::op::View>)
          return "tile";
        else if constexpr (std::is_same_v<T, tile::op::Transpose>)
          return "transpose";
        else
          return "";
      },
      node);
}

std::string ShapeOf(const tile::Value& v) {
  std::string s = std::string(weft::Spelling(v.dtype)) + "[";
  for (std::size_t i = 0; i < v.shape.size(); ++i) {
    if (i) s += ", ";
    auto c = v.shape[i].AsConstant();
    s += c ? std::to_string(*c) : "?";
  }
  return s + "]";
}

std::string_view SpaceText(tile::Space space) {
  switch (space) {
    case tile::Space::Scalar:
      return "scalar";
    case tile::Space::Global:
      return "@global";
    case tile::Space::Shared:
      return "@shared";
    case tile::Space::Reg:
      return "@reg";
  }
  return "";
}

std::string Conflicts(const layout::BankConflicts& c) {
  std::string s = std::to_string(c.wavefronts) + " wavefronts, ideal " + std::to_string(c.ideal);
  if (c.wavefronts == c.ideal) return s + " (conflict-free)";
  return s + " (" + std::to_string(c.wavefronts - c.ideal) + " extra)";
}

class Printer {
 public:
  Printer(const tile::Kernel& kernel, const Plan& plan, const ExplainOptions& options)
      : kernel_(kernel), plan_(plan), options_(options) {
    users_.resize(kernel.values.size());
    Walk(kernel.body);
  }

  std::string Print();

 private:
  void Walk(const std::vector<OpId>& body) {
    for (OpId id : body) {
      order_.push_back(id);
      const tile::OpNode& node = kernel_.Get(id).node;
      if (const auto* l = std::get_if<tile::op::Loop>(&node)) Walk(l->body);
      std::visit(
          [&](const auto& o) {
            using T = std::decay_t<decltype(o)>;
            if constexpr (std::is_same_v<T, tile::op::ToRegs>) users_[o.src.index].push_back(id);
            if constexpr (std::is_same_v<T, tile::op::Store>) users_[o.src.index].push_back(id);
          },
          node);
    }
  }
  // The k16 slices of a streamed mma operand: K / 16 of the mma that reads it.
  std::int64_t Slices(ValueId v) const {
    for (OpId id : order_)
      if (const auto* m = std::get_if<tile::op::Mma>(&kernel_.Get(id).node); m && (m->a == v || m->b == v)) {
        const tile::Value& a = kernel_.Get(m->a);
        auto k = a.shape.empty() ? std::nullopt : a.shape.back().AsConstant();
        if (k && *k >= 16) return *k / 16;
      }
    return 1;
  }
  std::string Name(ValueId id) const {
    const tile::Value& v = kernel_.Get(id);
    return v.name.empty() ? "%" + std::to_string(id.index) : v.name;
  }
  std::string Where(Span span) const {
    if (!options_.sources || !span.valid()) return "";
    LineCol lc = options_.sources->Get(span.file).Locate(span.begin);
    return std::to_string(lc.line) + ":" + std::to_string(lc.column);
  }
  std::string Source(Span span) const {
    if (!options_.sources || !span.valid()) return "";
    std::string text(options_.sources->Text(span));
    std::string flat;
    bool space = false;
    for (char c : text) {
      if (c == '\n' || c == ' ' || c == '\t') {
        space = true;
        continue;
      }
      if (space && !flat.empty()) flat += ' ';
      space = false;
      flat += c;
    }
    if (flat.size() > 48) flat = flat.substr(0, 45) + "...";
    return flat;
  }
  // "mma at 9:5 (`mma (regs sa) (regs sb) acc`)"
  std::string OpLabel(OpId id) const {
    const tile::Op& op = kernel_.Get(id);
    std::string s = "`" + OpName(op.node) + "`";
    std::string where = Where(op.span);
    if (!where.empty()) s += " at " + where;
    return s;
  }
  std::string Instruction(OpId id) const {
    const OpChoice& oc = plan_.ops[id.index];
    std::string s = Spelling(oc.instruction);
    if (oc.instructions_per_thread > 0) s += ", " + std::to_string(oc.instructions_per_thread) + " per thread";
    if (oc.bytes > 0) s += ", " + std::to_string(oc.bytes) + " bytes";
    return s;
  }
  void Accesses(std::ostringstream& out, OpId id) const {
    for (const Access& a : plan_.ops[id.index].accesses)
      out << "      " << a.what << ": " << Conflicts(a.conflicts) << "\n";
  }

  const tile::Kernel& kernel_;
  const Plan& plan_;
  const ExplainOptions& options_;
  std::vector<OpId> order_;
  std::vector<std::vector<OpId>> users_;
};

std::string Printer::Print() {
  std::ostringstream out;
  std::int64_t warps = plan_.threads / 32;
  out << "kernel " << kernel_.name << " on " << Spelling(plan_.target) << "\n";
  out << "  block: " << plan_.threads << " threads (" << warps << " warps";
  if (plan_.target == Target::Sm90a && plan_.threads % 128 == 0)
    out << ", " << plan_.threads / 128 << (plan_.threads == 128 ? " warpgroup" : " warpgroups");
  out << ")\n";
  out << "  shared memory: " << plan_.shared_bytes << " bytes\n";
  out << "  registers: about " << plan_.registers_per_thread << " per thread (estimate)\n";
  for (const std::string& n : plan_.notes) out << "  " << n << "\n";
  out << "  choice: " << Spelling(plan_.chooser) << " over " << plan_.candidates << " candidates, "
      << (plan_.optimal ? "proved optimal" : "not proved optimal");
  if (!plan_.chooser_status.empty() && plan_.chooser != Chooser::kZ3) out << " (Z3: " << plan_.chooser_status << ")";
  out << "\n";
  out << "  objective: " << plan_.objective << "\n";
  if (options_.timings) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3f ms", plan_.seconds * 1000);
    out << "  time: " << buf << "\n";
  }

  out << "tiles:\n";
  for (OpId id : order_) {
    const tile::Op& op = kernel_.Get(id);
    for (ValueId r : op.results) {
      const tile::Value& v = kernel_.Get(r);
      if (v.space != tile::Space::Shared && v.space != tile::Space::Reg) continue;
      if (std::holds_alternative<tile::op::Loop>(op.node)) continue;  // the carried value's layout
      const ValueChoice& vc = plan_.values[r.index];
      out << "  ";
      if (v.layout_var != core::kNoTile) out << "'L" << v.layout_var + 1 << " ";  // the checker's variable
      out << Name(r) << ": " << ShapeOf(v) << " " << SpaceText(v.space);
      std::string src = Source(op.span);
      if (!src.empty()) out << " = " << src;
      std::string where = Where(op.span);
      if (!where.empty()) out << "  (" << where << ")";
      out << "\n";
      if (v.space == tile::Space::Shared && vc.shared) {
        const layout::SwizzledLayout& s = *vc.shared;
        out << "    layout: " << layout::ToString(s.layout());
        if (s.swizzle().bits() > 0)
          out << ", swizzle " << layout::ToString(s.swizzle());
        else
          out << ", no swizzle";
        if (vc.swizzle_mode != layout::SwizzleMode::kNone) out << " (" << layout::ToString(vc.swizzle_mode) << ")";
        if (vc.pinned) out << ", pinned";
        out << "\n";
        if (const auto* t = std::get_if<tile::op::Transpose>(&op.node)) {
          out << "    stored: in `" << Name(t->src) << "`'s buffer (the view moves no data)\n";
        } else {
          out << "    stored: " << vc.stage_bytes << " bytes";
          if (vc.stages > 1) out << " x " << vc.stages << " stages";
          out << " at offset " << vc.shared_offset << "\n";
        }
      } else if (v.space == tile::Space::Reg) {
        if (vc.mma_operand) {
          out << "    layout: none: wgmma reads " << Name(ValueId(*vc.mma_operand))
              << " from shared memory through a descriptor\n";
        } else if (vc.regs) {
          out << "    layout: " << layout::ToString(vc.regs->layout) << (vc.pinned ? ", pinned" : "") << "\n";
          out << "    registers: " << vc.registers << " per thread";
          if (vc.streamed) {
            std::int64_t slices = Slices(r);
            out << " whole; streamed: one k16 slice of " << slices << " (" << (vc.registers + slices - 1) / slices
                << " registers) at a time, loaded before the mma steps "
                << "that read it";
          }
          out << "\n";
        }
      }
      // What makes it, and what moves it on.
      const OpChoice& oc = plan_.ops[id.index];
      out << "    made by " << OpLabel(id) << ": " << Instruction(id) << "\n";
      if (oc.warps_m * oc.warps_n > 1 || std::holds_alternative<tile::op::Mma>(op.node)) {
        out << "      " << (plan_.target == Target::Sm90a ? "warpgroups" : "warps") << " " << oc.warps_m << " x "
            << oc.warps_n << " over M x N";
        if (oc.desc_a)
          out << "; A descriptor LBO " << oc.desc_a->leading_byte_offset << " SBO " << oc.desc_a->stride_byte_offset
              << (oc.a_mn_major ? " (MN-major)" : "");
        if (oc.desc_b)
          out << "; B descriptor LBO " << oc.desc_b->leading_byte_offset << " SBO " << oc.desc_b->stride_byte_offset
              << (oc.b_mn_major ? " (MN-major)" : "");
        out << "\n";
      }
      if (!oc.note.empty()) out << "      " << oc.note << "\n";
      if (std::holds_alternative<tile::op::ToShared>(op.node)) Accesses(out, id);
      for (OpId u : users_[r.index]) {
        out << "    read by " << OpLabel(u) << ": " << Instruction(u) << "\n";
        if (!plan_.ops[u.index].note.empty()) out << "      " << plan_.ops[u.index].note << "\n";
        Accesses(out, u);
      }
    }
  }
  return out.str();
}

}  // namespace

std::string Explain(const tile::Kernel& kernel, const Plan& plan, const ExplainOptions& options) {
  return Printer(kernel, plan, options).Print();
}

}  // namespace weft::synth
