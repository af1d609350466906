// The tile IR's printer (`weft check --emit=tile`). One op a line, SSA style:
//
//   kernel gemm (%a : bf16[m, k] @global) (%b : bf16[k, n] @global) (out %c : f32[m, n] @global)
//       where m % 128 == 0, n % 128 == 0, k % 64 == 0
//       grid (m / 128, n / 128) threads 128 {
//     %i : i64 = block_idx 0
//     %sa : bf16[128, 64] @shared = shared %4
//     %acc.1 = pipeline %kk < %3 with (%acc : f32[128, 128] @reg = %2) {
//       ...
//       yield %9
//     }
//     store %10 %acc.1
//   }
//
// A value prints as `%name` when a `let`, a pattern or a parameter named it (`%name.1`, `%name.2`
// for later values of the same name), else as `%<its ValueId>`. docs/tile-ir.md has the format.
#include <charconv>
#include <map>

#include "base/overloaded.h"
#include "tile/ir.h"

namespace weft::tile {
namespace {

class Printer {
 public:
  explicit Printer(const Kernel& kernel) : kernel_(kernel) {
    std::map<std::string, int> seen;
    for (std::size_t i = 0; i < kernel.values.size(); ++i) {
      const std::string& name = kernel.values[i].name;
      if (name.empty()) {
        names_.push_back("%" + std::to_string(i));
      } else {
        int n = seen[name]++;
        names_.push_back("%" + name + (n == 0 ? "" : "." + std::to_string(n)));
      }
    }
  }

  std::string Run() {
    out_ = "kernel " + kernel_.name;
    for (const Param& p : kernel_.params) {
      out_ += std::string(" (") + (p.out ? "out " : "") + Name(p.value) + " : " + Type(p.value) + ")";
    }
    out_ += "\n";
    if (!kernel_.where.empty()) {
      out_ += "    where ";
      for (std::size_t i = 0; i < kernel_.where.size(); ++i) {
        const core::DimFact& f = kernel_.where[i];
        out_ += (i ? ", " : "") + DimText(f.lhs) + " " + std::string(core::Spelling(f.relation)) + " " + DimText(f.rhs);
      }
      out_ += "\n";
    }
    out_ += "    grid ";
    if (kernel_.grid.size() != 1) out_ += "(";
    for (std::size_t i = 0; i < kernel_.grid.size(); ++i) out_ += (i ? ", " : "") + DimText(kernel_.grid[i]);
    if (kernel_.grid.size() != 1) out_ += ")";
    out_ += " threads " + std::to_string(kernel_.threads) + " {\n";
    Block(kernel_.body, 1);
    out_ += "}\n";
    return std::move(out_);
  }

 private:
  std::string Name(ValueId v) const { return v.index < names_.size() ? names_[v.index] : "%<invalid>"; }
  std::string Names(const std::vector<ValueId>& vs, const char* separator = " ") const {
    std::string s;
    for (std::size_t i = 0; i < vs.size(); ++i) s += (i ? separator : "") + Name(vs[i]);
    return s;
  }
  std::string DimText(const core::Dim& d) const {
    return core::ToString(d, [this](core::SizeVarId v) {
      auto it = kernel_.size_names.find(v);
      return it == kernel_.size_names.end() ? core::DefaultSizeVarName(v) : it->second;
    });
  }
  std::string Type(ValueId id) const {
    if (id.index >= kernel_.values.size()) return "<invalid>";
    const Value& v = kernel_.Get(id);
    std::string s(Spelling(v.dtype));
    if (v.space == Space::Scalar) return s;
    s += "[";
    for (std::size_t i = 0; i < v.shape.size(); ++i) s += (i ? ", " : "") + DimText(v.shape[i]);
    s += "] " + std::string(Spelling(v.space));
    if (v.pin) s += " " + v.pin->text;
    return s;
  }
  static std::string Extents(const std::vector<std::int64_t>& extents) {
    std::string s = "[";
    for (std::size_t i = 0; i < extents.size(); ++i) s += (i ? ", " : "") + std::to_string(extents[i]);
    return s + "]";
  }
  static std::string Number(double x) {
    char buffer[64];
    auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, x);
    return ec == std::errc() ? std::string(buffer, end) : std::to_string(x);
  }

  void Line(int depth, const std::string& text) { out_ += std::string(2 * depth, ' ') + text + "\n"; }

  void Block(const std::vector<OpId>& ops, int depth) {
    for (OpId id : ops) Operation(kernel_.Get(id), depth);
  }

  void Operation(const Op& op, int depth) {
    std::string lhs;
    if (op.results.size() == 1 && !std::holds_alternative<op::Loop>(op.node)) {
      lhs = Name(op.results[0]) + " : " + Type(op.results[0]) + " = ";
    }
    std::string text =
        std::visit(Overloaded{
                       [&](const op::BlockIdx& o) { return "block_idx " + std::to_string(o.axis); },
                       [&](const op::Constant& o) {
                         return "constant " + std::visit(Overloaded{
                                                             [](std::int64_t i) { return std::to_string(i); },
                                                             [](double d) { return Number(d); },
                                                             [](bool b) { return std::string(b ? "true" : "false"); },
                                                         },
                                                         o.value);
                       },
                       [&](const op::Size& o) { return "size " + DimText(o.dim); },
                       [&](const op::ScalarOp& o) { return "scalar " + o.fn + " " + Names(o.args); },
                       [&](const op::View& o) {
                         return "tile " + Name(o.tensor) + " " + Extents(o.shape) + " (" + Names(o.coords, ", ") + ")";
                       },
                       [&](const op::ToShared& o) { return "shared " + Name(o.src); },
                       [&](const op::ToRegs& o) { return "regs " + Name(o.src); },
                       [&](const op::Transpose& o) { return "transpose " + Name(o.src); },
                       [&](const op::Store& o) { return "store " + Name(o.dst) + " " + Name(o.src); },
                       [&](const op::Mma& o) { return "mma " + Name(o.a) + " " + Name(o.b) + " " + Name(o.acc); },
                       [&](const op::Fill& o) { return "fill " + Extents(o.shape) + " " + Name(o.value); },
                       [&](const op::Iota& o) { return "iota [" + std::to_string(o.n) + "]"; },
                       [&](const op::Map& o) { return "map " + o.fn + " " + Names(o.args); },
                       [&](const op::Reduce& o) { return "reduce " + o.fn + " " + Name(o.src); },
                       [&](const op::Expand& o) { return "expand " + Name(o.src); },
                       [&](const op::Cast& o) { return "cast " + std::string(Spelling(o.dtype)) + " " + Name(o.src); },
                       [&](const op::Convert& o) { return "convert " + Name(o.src); },
                       [&](const op::Loop& o) {
                         std::string s = (o.pipelined ? "pipeline " : "loop ") + Name(o.counter) + " < " +
                                         Name(o.bound) + " with (";
                         for (std::size_t i = 0; i < o.carried.size(); ++i) {
                           s += (i ? ", " : "") + Name(o.carried[i]) + " : " + Type(o.carried[i]) + " = " +
                                (i < o.init.size() ? Name(o.init[i]) : "%<missing>");
                         }
                         return s + ") {";
                       },
                   },
                   op.node);
    if (const auto* loop = std::get_if<op::Loop>(&op.node)) {
      if (!op.results.empty()) lhs = Names(op.results, ", ") + " = ";
      Line(depth, lhs + text);
      Block(loop->body, depth + 1);
      Line(depth + 1, "yield " + Names(loop->yields, ", "));
      Line(depth, "}");
      return;
    }
    Line(depth, lhs + text);
  }

  const Kernel& kernel_;
  std::vector<std::string> names_;
  std::string out_;
};

}  // namespace

std::string Print(const Kernel& kernel) {
  return Printer(kernel).Run();
}

}  // namespace weft::tile
