// The graph and its plan as text: `weft build --emit=graph` (Print) and `weft explain` (Summary).
// docs/graph.md describes the format.
#include <set>
#include <sstream>

#include "base/overloaded.h"
#include "core/type_printer.h"
#include "graph/epilogue.h"
#include "graph/graph.h"
#include "graph/layout.h"
#include "weft/numerics.h"

namespace weft::graph {

std::string_view Spelling(Kind kind) {
  switch (kind) {
    case Kind::Constant:
      return "constant";
    case Kind::Size:
      return "size";
    case Kind::String:
      return "string";
    case Kind::Load:
      return "load";
    case Kind::Random:
      return "random";
    case Kind::Save:
      return "save";
    case Kind::Print:
      return "print";
    case Kind::TimeBegin:
      return "time.begin";
    case Kind::TimeEnd:
      return "time.end";
    case Kind::Kernel:
      return "call";
    case Kind::KernelOut:
      return "out";
    case Kind::Map:
      return "map";
    case Kind::Cast:
      return "cast";
    case Kind::Fill:
      return "fill";
    case Kind::Iota:
      return "iota";
    case Kind::Reduce:
      return "reduce";
    case Kind::Scan:
      return "scan";
    case Kind::MatMul:
      return "matmul";
    case Kind::View:
      return "view";
    case Kind::Concat:
      return "concat";
    case Kind::Gather:
      return "gather";
    case Kind::Dequant:
      return "dequant";
    case Kind::Param:
      return "param";
  }
  return "?";
}

std::string_view Spelling(GroupKind kind) {
  switch (kind) {
    case GroupKind::Host:
      return "host";
    case GroupKind::Elementwise:
      return "elementwise";
    case GroupKind::Rows:
      return "rows";
    case GroupKind::Scan:
      return "scan";
    case GroupKind::Gemm:
      return "gemm";
    case GroupKind::Attention:
      return "attention";
    case GroupKind::Gather:
      return "gather";
    case GroupKind::Concat:
      return "concat";
    case GroupKind::Call:
      return "call";
  }
  return "?";
}

namespace {

class Printer {
 public:
  Printer(const Graph& graph, const Plan& plan, const core::VarStore& vars, const SourceManager& sources)
      : g_(graph), plan_(plan), types_(vars), sources_(sources) {}

  std::string Dims(const std::vector<Dim>& dims) {
    std::string out = "[";
    for (std::size_t i = 0; i < dims.size(); ++i) out += (i ? ", " : "") + types_.Print(dims[i]);
    return out + "]";
  }
  std::string Type(const Node& n) { return std::string(weft::Spelling(n.dtype)) + Dims(n.shape); }
  static std::string Ref(NodeId id) { return "%" + std::to_string(id.index); }

  std::string Value(const Node& n) {
    if (runtime::IsFloatDtype(n.dtype)) {
      std::ostringstream out;
      out << runtime::DecodeFloat(n.dtype, n.bits);
      return out.str();
    }
    if (n.dtype == Dtype::Bool) return n.bits ? "true" : "false";
    if (runtime::IsSignedDtype(n.dtype)) return std::to_string(runtime::WrapSigned(n.bits, n.dtype));
    return std::to_string(n.bits);
  }

  // `fn %1 %2` for a node: what it computes.
  std::string Operation(const Node& n) {
    std::string args;
    for (NodeId a : n.args) args += " " + Ref(a);
    switch (n.kind) {
      case Kind::Constant:
        return Value(n);
      case Kind::Size:
        return "size " + types_.Print(n.size);
      case Kind::String:
        return n.args.empty() ? "\"" + n.text + "\"" : "arg" + args;
      case Kind::Load:
        return "load" + args;
      case Kind::Random:
        return "random " + Dims(n.shape) + args;
      case Kind::Save:
        return "save" + args;
      case Kind::Print:
        return "print" + args;
      case Kind::TimeBegin:
        return "time.begin";
      case Kind::TimeEnd:
        return "time.end" + args;
      case Kind::Kernel:
        return "call " + n.text + args;
      case Kind::KernelOut:
        return "out " + n.text + " of" + args;
      case Kind::Cast:
        return "cast " + std::string(weft::Spelling(n.dtype)) + args;
      case Kind::Fill:
        return n.fn + " " + Dims(n.shape) + args;
      case Kind::Iota:
        return "iota " + Dims(n.shape);
      case Kind::Reduce:
      case Kind::Scan:
        if (n.combiner) return std::string(n.kind == Kind::Reduce ? "reduce" : "scan") + " (" + Body(n) + ")" + args;
        return n.fn + args;
      case Kind::View: {
        if (n.fn == "permute") {
          std::string p;
          for (std::size_t i = 0; i < n.permutation.size(); ++i)
            p += (i ? ", " : "") + std::to_string(n.permutation[i]);
          return "permute [" + p + "]" + args;
        }
        if (n.fn == "reshape" || n.fn == "broadcast") return n.fn + " " + Dims(n.shape) + args;
        if (n.fn == "index") return "index" + Index(n);
        return n.fn + args;
      }
      case Kind::Dequant:
        return "dequant [" + std::to_string(n.group) + "]" + args;
      case Kind::Param:
        return "param " + std::to_string(n.output);
      default:
        return n.fn + args;
    }
  }

  std::string Index(const Node& n) {
    std::string out = " " + Ref(n.args[0]) + "[";
    for (std::size_t i = 0; i < n.index.size(); ++i) {
      const IndexItem& item = n.index[i];
      out += i ? ", " : "";
      if (item.what == IndexItem::What::At) out += Ref(n.args[item.at]);
      if (item.what == IndexItem::What::Slice) out += types_.Print(item.lo) + ":" + types_.Print(item.hi);
      if (item.what == IndexItem::What::All) out += ":";
    }
    return out + "]";
  }

  // A combiner's body as one expression over `acc` and `x`.
  std::string Body(const Node& n) { return "fn acc x -> " + Expression(n.combiner->result, *n.combiner); }
  std::string Expression(NodeId id, const Combiner& c) {
    const Node& n = g_.Get(id);
    if (id == c.acc) return "acc";
    if (id == c.element) return "x";
    if (!n.in_body) return Ref(id);
    if (n.kind == Kind::Constant) return Value(n);
    std::string out = n.kind == Kind::Cast ? "cast " + std::string(weft::Spelling(n.dtype)) : n.fn;
    for (NodeId a : n.args) out += " " + Expression(a, c);
    return "(" + out + ")";
  }

  std::string Where(Span span) {
    if (!span.valid()) return "";
    const SourceBuffer& buffer = sources_.Get(span.file);
    LineCol at = buffer.Locate(span.begin);
    std::string name(buffer.name());
    if (auto slash = name.rfind('/'); slash != std::string::npos) name = name.substr(slash + 1);
    return name + ":" + std::to_string(at.line) + ":" + std::to_string(at.column);
  }

  // The names of what a group fuses: `max, -, exp, sum, /`.
  std::string Fused(const Group& group) {
    std::string out;
    for (NodeId id : group.nodes) {
      const Node& n = g_.Get(id);
      std::string name;
      switch (n.kind) {
        case Kind::Cast:
          name = "cast " + std::string(weft::Spelling(n.dtype));
          break;
        case Kind::Reduce:
          name = n.combiner ? "reduce" : n.fn;
          break;
        case Kind::Scan:
          name = "scan";
          break;
        case Kind::Iota:
          name = "iota";
          break;
        case Kind::Dequant:
          name = "dequant";
          break;
        case Kind::Gather:
          name = "gather";
          break;
        case Kind::Concat:
          name = "concat";
          break;
        case Kind::Kernel:
          name = n.text;
          break;
        case Kind::KernelOut:
          continue;
        default:
          name = n.fn;
          break;
      }
      out += (out.empty() ? "" : ", ") + name;
    }
    return out;
  }

  std::string GroupLine(std::size_t index) {
    const Group& group = plan_.groups[index];
    std::string line = "k" + std::to_string(kernel_number_.at(index)) + " " + std::string(Spelling(group.kind));
    if (!group.kernel.empty()) line += " `" + group.kernel + "`";
    if (group.kind != GroupKind::Call) {
      const Node& root = g_.Get(group.nodes.back());
      line += " over " + Dims(group.space) + " -> " + Type(root);
    }
    line += ": " + Fused(group);
    return line;
  }

  void Number() {
    std::size_t k = 0;
    for (std::size_t i = 0; i < plan_.groups.size(); ++i)
      if (plan_.groups[i].kind != GroupKind::Host) kernel_number_[i] = k++;
  }

  std::string Where(NodeId id) {
    std::int64_t g = plan_.group_of[id.index];
    if (g < 0) return g == -1 ? "" : "view";
    const Group& group = plan_.groups[static_cast<std::size_t>(g)];
    if (group.kind == GroupKind::Host) return "host";
    return "k" + std::to_string(kernel_number_.at(static_cast<std::size_t>(g)));
  }

  // A view's strided layout (graph/layout.h), or why it has none: over data stored row-major, or
  // (`planned`) as the plan stores it (a product that stores its result as a view wants).
  std::string Layout(NodeId id, bool planned = false) {
    core::ViewResult layout = planned ? LayoutOf(g_, plan_, id) : LayoutOf(g_, id);
    if (!layout) return "(not strided: " + layout.error() + ")";
    return core::ToString(*layout, [&](core::SizeVarId v) { return types_.Print(Dim::Var(v)); });
  }

  std::string Buffer(NodeId id) {
    std::int64_t b = plan_.buffer_of[id.index];
    return b < 0 ? "" : " -> b" + std::to_string(b);
  }

  std::string PrintLayouts() {
    Number();
    std::ostringstream out;
    out << "layouts of `main`:\n";
    out << "values (row-major where stored, unless a product stores one as a view wants; views over them):\n";
    for (std::size_t i = 0; i < g_.nodes.size(); ++i) {
      const Node& n = g_.nodes[i];
      if (n.in_body || n.kind == Kind::String || n.kind == Kind::Save || n.kind == Kind::Print ||
          n.kind == Kind::TimeBegin || n.kind == Kind::TimeEnd || n.kind == Kind::Kernel)
        continue;
      NodeId id(static_cast<std::uint32_t>(i));
      const bool stored = plan_.buffer_of[i] >= 0;
      if (n.kind != Kind::View && !stored) continue;  // in registers, or a host scalar
      std::string line = "  " + Ref(id) + " : " + Type(n);
      line += std::string(line.size() < 40 ? 40 - line.size() : 1, ' ');
      const std::int64_t g = plan_.group_of[i];
      const Group* group = g >= 0 ? &plan_.groups[static_cast<std::size_t>(g)] : nullptr;
      if (n.kind == Kind::View) {
        line += Layout(id, true) + ", a view of " + Ref(n.args.at(0));
        if (stored) line += ", copied by " + Where(id) + Buffer(id);
      } else if (group && group->stored && group->stored->root == id) {
        line += Layout(id, true) + ", stored by " + Where(id) + Buffer(id) + " so that " + Ref(group->stored->view) +
                " is row-major";
      } else {
        line += "row-major, stored by " + Where(id) + Buffer(id);
      }
      out << line << "\n";
    }
    out << "views the stdlib kernels read (read in place on sm_90a, copied, or stored as they want by their producer):";
    if (plan_.views.views.empty()) out << " none chosen";
    out << "\n";
    for (const ViewChoice& c : plan_.views.views) {
      std::string readers;
      std::set<std::string> seen;
      for (NodeId r : c.readers) {
        std::string where = Where(r);
        if (seen.insert(where).second) readers += (readers.empty() ? "" : ", ") + where;
      }
      out << "  " << Ref(c.view) << " " << Layout(c.view) << ": ";
      if (c.stored) {
        out << Where(c.store->root) << " stores " << Ref(c.store->root) << " as " << Layout(c.store->root, true)
            << " for " << readers << ", which read " << Ref(c.view) << " row-major " << Type(g_.Get(c.view));
      } else if (c.copied) {
        out << "copied by " << Where(c.view) << ", read by " << readers << " ("
            << (c.why.empty() ? "a copy costs less than the maps" : c.why) << ")";
      } else {
        out << "read in place by " << readers;
      }
      out << "; copy " << c.copy_bytes << " bytes, maps " << c.map_bytes;
      if (c.store) out << ", store " << c.store_bytes;
      out << "\n";
      if (!c.stored && c.store) out << "    not stored as it wants by " << Where(c.store->root) << ": it costs more\n";
    }
    if (!plan_.views.views.empty())
      out << "objective: " << plan_.views.objective << " predicted bytes (sizes known at run time taken as 4096), "
          << plan_.views.status << "\n";
    out << CalledKernelViews();
    return out.str();
  }

  // `%7 in place through a 2-D TMA map (sm_90a): (256, 64):(192, 1) of %1`, with its run-time
  // conditions as DenseReadText's.
  std::string MapReadText(const InPlaceRead& read) {
    std::string text = Ref(read.view) + " in place through a " + std::to_string(MapDims(read)) +
                       "-D TMA map (sm_90a): " + Layout(read.view) + " of " + Ref(read.root);
    for (std::size_t f = 0; f < read.when.size(); ++f)
      text += (f == 0 ? " where " : " and ") + types_.Print(read.when[f].lhs) + " " +
              std::string(core::Spelling(read.when[f].relation)) + " " + types_.Print(read.when[f].rhs);
    if (!read.when.empty()) text += " at run time; else the copy " + Where(read.view);
    return text;
  }

  // `%7 in place: (256, 128):(128, 1) + 32768 of %1 where n % 8 == 0 at run time; else the copy k3`.
  std::string DenseReadText(const DenseRead& read) {
    std::string text = Ref(read.view) + " in place: " + Layout(read.view) + " of " + Ref(read.root);
    for (std::size_t f = 0; f < read.when.size(); ++f)
      text += (f == 0 ? " where " : " and ") + types_.Print(read.when[f].lhs) + " " +
              std::string(core::Spelling(read.when[f].relation)) + " " + types_.Print(read.when[f].rhs);
    if (!read.when.empty()) text += " at run time; else the copy " + Where(read.view);
    return text;
  }

  // The views the program's kernels read (Group::dense_reads; docs/graph.md, "Views a called kernel
  // reads"): in place, in place where a run-time condition holds, or copied and why. Nothing when
  // no called kernel reads a view.
  std::string CalledKernelViews() {
    std::ostringstream out;
    for (const Group& group : plan_.groups) {
      if (group.kind != GroupKind::Call) continue;
      for (NodeId call : group.nodes) {
        if (g_.Get(call).kind != Kind::Kernel) continue;
        for (NodeId a : g_.Get(call).args) {
          if (g_.Get(a).kind != Kind::View) continue;
          out << "  " << Where(call) << " `" << g_.Get(call).text << "` reads ";
          const DenseRead* read = nullptr;
          for (const DenseRead& r : group.dense_reads) read = r.view == a ? &r : read;
          const InPlaceRead* map = nullptr;
          for (const InPlaceRead& r : group.in_place) map = r.view == a ? &r : map;
          const std::int64_t copy = plan_.group_of[a.index];
          if (read) {
            out << DenseReadText(*read);
          } else if (map) {
            out << MapReadText(*map);
          } else if (copy >= 0) {
            out << Ref(a) << " " << Layout(a) << " copied by " << Where(a) << ": "
                << plan_.groups[static_cast<std::size_t>(copy)].why;
          } else {
            out << Ref(a) << " " << Layout(a) << " through another view";
          }
          out << "\n";
        }
      }
    }
    std::string lines = out.str();
    return lines.empty() ? lines : "views the program's kernels read (in place, or copied):\n" + lines;
  }

  std::string Print() {
    Number();
    std::ostringstream out;
    out << "graph of `main`: " << g_.nodes.size() << " nodes, " << plan_.Kernels() << " kernel"
        << (plan_.Kernels() == 1 ? "" : "s") << ", " << plan_.buffers.size() << " buffer"
        << (plan_.buffers.size() == 1 ? "" : "s") << "\n";
    out << "nodes:\n";
    for (std::size_t i = 0; i < g_.nodes.size(); ++i) {
      const Node& n = g_.nodes[i];
      if (n.in_body) continue;
      NodeId id(static_cast<std::uint32_t>(i));
      std::string line = "  " + Ref(id) + " = " + Operation(n);
      bool typed = n.kind != Kind::String && n.kind != Kind::Save && n.kind != Kind::Print &&
                   n.kind != Kind::TimeBegin && n.kind != Kind::Kernel;
      if (typed) line += " : " + Type(n);
      std::string where = Where(id);
      line += std::string(line.size() < 56 ? 56 - line.size() : 1, ' ') + where + Buffer(id);
      if (n.kind == Kind::View) line += " " + Layout(id, true);
      out << line << "  " << Where(n.span) << "\n";
    }
    out << "kernels:\n";
    for (std::size_t i = 0; i < plan_.groups.size(); ++i) {
      const Group& group = plan_.groups[i];
      if (group.kind == GroupKind::Host) continue;
      out << "  " << GroupLine(i) << "\n";
      std::string reads, writes;
      for (NodeId in : group.inputs) reads += " " + Ref(in);
      for (NodeId o : group.outputs) writes += " " + Ref(o) + Buffer(o);
      out << "    reads" << (reads.empty() ? " nothing" : reads) << "; writes" << (writes.empty() ? " nothing" : writes)
          << "\n";
      if (!group.why.empty()) out << "    " << group.why << "\n";
      if (group.stored)
        out << "    stores " << Ref(group.stored->root) << " as " << Layout(group.stored->root, true) << ", so that "
            << Ref(group.stored->view) << " is row-major " << Type(g_.Get(group.stored->view)) << "\n";
      for (const InPlaceRead& read : group.in_place) {
        out << "    reads " << Ref(read.view) << " in place (sm_90a): a " << MapDims(read) << "-D TMA map of "
            << Layout(read.view);
        for (std::size_t f = 0; f < read.when.size(); ++f)
          out << (f == 0 ? " where " : " and ") << types_.Print(read.when[f].lhs) << " "
              << core::Spelling(read.when[f].relation) << " " << types_.Print(read.when[f].rhs);
        if (!read.when.empty()) out << " at run time; else the copy " << Where(read.view);
        out << "\n";
      }
      for (const DenseRead& read : group.dense_reads)
        if (!read.when.empty()) out << "    reads " << DenseReadText(read) << "\n";
    }
    if (!g_.checks.empty()) {
      out << "checks:\n";
      for (const Check& c : g_.checks)
        out << "  before %" << c.before << ": " << types_.Print(c.fact.lhs) << " " << core::Spelling(c.fact.relation)
            << " " << types_.Print(c.fact.rhs) << " (" << c.what << ")\n";
    }
    out << "buffers:\n";
    for (std::size_t b = 0; b < plan_.buffers.size(); ++b) {
      const graph::Buffer& buffer = plan_.buffers[b];
      out << "  b" << b << " " << weft::Spelling(buffer.dtype) << Dims(buffer.shape) << ":";
      for (NodeId id : buffer.holds) out << " " << Ref(id);
      out << "\n";
    }
    std::string generated = EpilogueTexts(g_, plan_);
    if (!generated.empty()) out << "generated kernels:\n" << generated;
    return out.str();
  }

  std::string Summary() {
    Number();
    std::ostringstream out;
    out << "`main` runs as " << plan_.Kernels() << " kernel" << (plan_.Kernels() == 1 ? "" : "s") << ":\n";
    for (std::size_t i = 0; i < plan_.groups.size(); ++i) {
      if (plan_.groups[i].kind == GroupKind::Host) continue;
      out << "  " << GroupLine(i) << "  (" << Where(g_.Get(plan_.groups[i].nodes.back()).span) << ")\n";
    }
    return out.str();
  }

 private:
  const Graph& g_;
  const Plan& plan_;
  core::TypePrinter types_;
  const SourceManager& sources_;
  std::map<std::size_t, std::size_t> kernel_number_;
};

}  // namespace

std::string Print(const Graph& graph, const Plan& plan, const core::VarStore& vars, const SourceManager& sources) {
  return Printer(graph, plan, vars, sources).Print();
}

std::string PrintLayouts(const Graph& graph, const Plan& plan, const core::VarStore& vars,
                         const SourceManager& sources) {
  return Printer(graph, plan, vars, sources).PrintLayouts();
}

std::string Summary(const Graph& graph, const Plan& plan, const core::VarStore& vars, const SourceManager& sources) {
  return Printer(graph, plan, vars, sources).Summary();
}

}  // namespace weft::graph
