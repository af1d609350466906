// The tile IR verifier: checks, independently of the lowering, the invariants ir.h states. It walks
// the blocks in order with the set of values defined so far (the parameters; then each op's results;
// inside a loop's body also its counter and carried values, which are not visible after it), and
// checks each op's operand spaces and shapes against its rule. A violation is a compiler bug.
#include <set>

#include "base/overloaded.h"
#include "tile/ir.h"

namespace weft::tile {
namespace {

class Verifier {
 public:
  explicit Verifier(const Kernel& kernel) : k_(kernel) {}

  std::vector<std::string> Run() {
    std::set<std::uint32_t> defined;
    for (const Param& p : k_.params) {
      if (!Valid(p.value, "a parameter")) continue;
      const Value& v = k_.Get(p.value);
      if (v.space != Space::Global && v.space != Space::Scalar)
        Fail("parameter `" + p.name + "` is " + std::string(Spelling(v.space)) + ", not @global or scalar");
      if (v.space == Space::Scalar && !v.shape.empty()) Fail("scalar parameter `" + p.name + "` has a shape");
      defined.insert(p.value.index);
    }
    if (k_.grid.empty() || k_.grid.size() > 3) Fail("the grid has " + std::to_string(k_.grid.size()) + " extents");
    Block(k_.body, defined);
    return std::move(violations_);
  }

 private:
  void Fail(std::string message) { violations_.push_back(std::move(message)); }
  std::string At(const Op& op) const { return " (op at offset " + std::to_string(op.span.begin) + ")"; }

  bool Valid(ValueId v, const std::string& what) {
    if (v.valid() && v.index < k_.values.size()) return true;
    Fail(what + " refers to a value that does not exist");
    return false;
  }
  bool IsParam(ValueId v) const {
    for (const Param& p : k_.params) {
      if (p.value == v) return true;
    }
    return false;
  }
  // The View op that made a Global value, or null (a parameter).
  const op::View* ViewOf(ValueId v) const {
    const Value& value = k_.Get(v);
    if (!value.def.valid() || value.def.index >= k_.ops.size()) return nullptr;
    return std::get_if<op::View>(&k_.Get(value.def).node);
  }

  void Block(const std::vector<OpId>& ops, std::set<std::uint32_t>& defined) {
    for (OpId id : ops) {
      if (!id.valid() || id.index >= k_.ops.size()) {
        Fail("a block names an op that does not exist");
        continue;
      }
      if (!placed_.insert(id.index).second) Fail("op " + std::to_string(id.index) + " is in two places");
      const Op& op = k_.Get(id);
      // Operands first (a loop's yields belong to its body, checked there).
      std::vector<ValueId> operands = Operands(op);
      if (const auto* loop = std::get_if<op::Loop>(&op.node)) operands.resize(1 + loop->init.size());
      bool ok = true;
      for (ValueId v : operands) {
        if (!Valid(v, "an operand" + At(op))) {
          ok = false;
        } else if (!defined.count(v.index)) {
          Fail("value " + std::to_string(v.index) + " is used before it is defined" + At(op));
          ok = false;
        }
      }
      for (ValueId r : op.results) {
        if (!Valid(r, "a result" + At(op))) {
          ok = false;
          continue;
        }
        if (k_.Get(r).def != id) Fail("value " + std::to_string(r.index) + " does not name its defining op" + At(op));
        if (defined.count(r.index)) Fail("value " + std::to_string(r.index) + " is defined twice" + At(op));
      }
      if (ok) Check(id, op, defined);
      for (ValueId r : op.results) {
        if (r.valid()) defined.insert(r.index);
      }
    }
  }

  std::string Name(ValueId v) const {
    const Value& value = k_.Get(v);
    return "value " + std::to_string(v.index) + (value.name.empty() ? "" : " (`" + value.name + "`)");
  }
  void Space(const Op& op, ValueId v, std::initializer_list<tile::Space> allowed, const char* role) {
    for (tile::Space s : allowed) {
      if (k_.Get(v).space == s) return;
    }
    Fail(std::string(role) + " " + Name(v) + " is " + std::string(Spelling(k_.Get(v).space)) + At(op));
  }
  void Results(const Op& op, std::size_t n) {
    if (op.results.size() != n)
      Fail("the op has " + std::to_string(op.results.size()) + " results, not " + std::to_string(n) + At(op));
  }
  static std::vector<core::Dim> Dims(const std::vector<std::int64_t>& extents) {
    std::vector<core::Dim> out;
    for (std::int64_t e : extents) out.push_back(core::Dim::Constant(e));
    return out;
  }
  void ConstantShape(const Op& op, ValueId v) {
    for (const core::Dim& d : k_.Get(v).shape) {
      if (!d.AsConstant() || *d.AsConstant() <= 0) Fail(Name(v) + " has a non-constant or empty extent" + At(op));
    }
  }
  // The single result, with its space, dtype and shape as the rule says.
  void Result(const Op& op, tile::Space space, std::optional<Dtype> dtype, const std::vector<core::Dim>* shape) {
    Results(op, 1);
    if (op.results.size() != 1) return;
    const Value& r = k_.Get(op.results[0]);
    if (r.space != space)
      Fail("the result is " + std::string(Spelling(r.space)) + ", not " + std::string(Spelling(space)) + At(op));
    if (dtype && r.dtype != *dtype)
      Fail("the result is " + std::string(weft::Spelling(r.dtype)) + ", not " + std::string(weft::Spelling(*dtype)) +
           At(op));
    if (shape && r.shape != *shape) Fail("the result's shape is not the one its operands give" + At(op));
    if (space == tile::Space::Scalar && !r.shape.empty()) Fail("a scalar result has a shape" + At(op));
    if (space == tile::Space::Reg || space == tile::Space::Shared) ConstantShape(op, op.results[0]);
  }

  void Check(OpId id, const Op& op, std::set<std::uint32_t>& defined) {
    const auto get = [&](ValueId v) -> const Value& { return k_.Get(v); };
    std::visit(
        Overloaded{
            [&](const op::BlockIdx& o) {
              if (o.axis < 0 || o.axis >= static_cast<int>(k_.grid.size()))
                Fail("block_idx " + std::to_string(o.axis) + " of a grid of rank " + std::to_string(k_.grid.size()) +
                     At(op));
              Result(op, tile::Space::Scalar, Dtype::I64, nullptr);
            },
            [&](const op::Constant&) { Result(op, tile::Space::Scalar, std::nullopt, nullptr); },
            [&](const op::Size&) { Result(op, tile::Space::Scalar, Dtype::I64, nullptr); },
            [&](const op::ScalarOp& o) {
              for (ValueId a : o.args) Space(op, a, {tile::Space::Scalar}, "the scalar op's operand");
              Result(op, tile::Space::Scalar, std::nullopt, nullptr);
            },
            [&](const op::View& o) {
              if (!IsParam(o.tensor) || get(o.tensor).space != tile::Space::Global)
                Fail("a tile view of " + Name(o.tensor) + ", which is not a tensor parameter" + At(op));
              for (ValueId c : o.coords) Space(op, c, {tile::Space::Scalar}, "the coordinate");
              std::size_t rank = get(o.tensor).shape.size();
              if (o.coords.size() != rank)
                Fail("a tile of a rank-" + std::to_string(rank) + " tensor has " + std::to_string(o.coords.size()) +
                     " coordinates" + At(op));
              if (o.shape.size() > o.coords.size()) Fail("a tile has more extents than coordinates" + At(op));
              for (std::int64_t e : o.shape) {
                if (e <= 0) Fail("a tile extent is " + std::to_string(e) + At(op));
              }
              std::vector<core::Dim> shape = Dims(o.shape);
              Result(op, tile::Space::Global, get(o.tensor).dtype, &shape);
            },
            [&](const op::ToShared& o) {
              if (get(o.src).space != tile::Space::Global || !ViewOf(o.src))
                Fail("shared of " + Name(o.src) + ", which is not a tile view in global memory" + At(op));
              Result(op, tile::Space::Shared, get(o.src).dtype, &get(o.src).shape);
            },
            [&](const op::ToRegs& o) {
              Space(op, o.src, {tile::Space::Shared}, "regs' operand");
              Result(op, tile::Space::Reg, get(o.src).dtype, &get(o.src).shape);
            },
            [&](const op::Transpose& o) {
              Space(op, o.src, {tile::Space::Shared}, "transpose's operand");
              if (get(o.src).shape.size() != 2) {
                Fail("transpose of a tile of rank " + std::to_string(get(o.src).shape.size()) + At(op));
                return;
              }
              std::vector<core::Dim> shape = {get(o.src).shape[1], get(o.src).shape[0]};
              Result(op, tile::Space::Shared, get(o.src).dtype, &shape);
            },
            [&](const op::Store& o) {
              Results(op, 0);
              const op::View* view = get(o.dst).space == tile::Space::Global ? ViewOf(o.dst) : nullptr;
              bool out = false;
              for (const Param& p : k_.params) out = out || (view && p.value == view->tensor && p.out);
              if (!out) Fail("store into " + Name(o.dst) + ", which is not a tile of an `out` parameter" + At(op));
              Space(op, o.src, {tile::Space::Reg, tile::Space::Shared}, "the stored value");
              if (get(o.src).shape != get(o.dst).shape) Fail("store of a tile of another shape" + At(op));
            },
            [&](const op::Mma& o) {
              Space(op, o.a, {tile::Space::Reg, tile::Space::Shared}, "mma's A");
              Space(op, o.b, {tile::Space::Reg, tile::Space::Shared}, "mma's B");
              Space(op, o.acc, {tile::Space::Reg}, "mma's accumulator");
              const auto& a = get(o.a).shape;
              const auto& b = get(o.b).shape;
              const auto& c = get(o.acc).shape;
              if (a.size() != 2 || b.size() != 2 || c.size() != 2) {
                Fail("mma of tiles that are not all rank 2" + At(op));
                return;
              }
              if (!(a[1] == b[0]) || !(a[0] == c[0]) || !(b[1] == c[1])) Fail("mma's M, K, N disagree" + At(op));
              if (get(o.acc).dtype != Dtype::F32) Fail("mma's accumulator is not f32" + At(op));
              if (get(o.a).dtype != get(o.b).dtype || (get(o.a).dtype != Dtype::F16 && get(o.a).dtype != Dtype::BF16))
                Fail("mma's A and B are not both f16 or both bf16" + At(op));
              Result(op, tile::Space::Reg, Dtype::F32, &c);
            },
            [&](const op::Fill& o) {
              Space(op, o.value, {tile::Space::Scalar}, "fill's value");
              std::vector<core::Dim> shape = Dims(o.shape);
              Result(op, tile::Space::Reg, get(o.value).dtype, &shape);
            },
            [&](const op::Iota& o) {
              std::vector<core::Dim> shape{core::Dim::Constant(o.n)};
              Result(op, tile::Space::Reg, Dtype::I64, &shape);
            },
            [&](const op::Map& o) {
              bool any_tile = false;
              for (ValueId a : o.args) {
                Space(op, a, {tile::Space::Reg, tile::Space::Scalar}, "map's operand");
                any_tile = any_tile || get(a).space == tile::Space::Reg;
              }
              if (!any_tile) Fail("map of scalars only (a ScalarOp)" + At(op));
              Result(op, tile::Space::Reg, std::nullopt, nullptr);
              if (op.results.size() != 1) return;
              // Broadcasting (language.md): shapes align on the right; each extent equals the
              // result's or is 1; the result has the largest rank.
              const auto& r = get(op.results[0]).shape;
              std::size_t max_rank = 0;
              for (ValueId a : o.args) {
                const auto& s = get(a).shape;
                max_rank = std::max(max_rank, s.size());
                if (s.size() > r.size()) {
                  Fail("map's operand " + Name(a) + " has a larger rank than its result" + At(op));
                  continue;
                }
                for (std::size_t i = 0; i < s.size(); ++i) {
                  const core::Dim& x = s[s.size() - 1 - i];
                  const core::Dim& y = r[r.size() - 1 - i];
                  if (!(x == y) && !(x == core::Dim::Constant(1)))
                    Fail("map's operand " + Name(a) + " does not broadcast to the result" + At(op));
                }
              }
              if (max_rank != r.size()) Fail("map's result has a larger rank than its operands" + At(op));
            },
            [&](const op::Reduce& o) {
              if (o.fn != "sum" && o.fn != "max" && o.fn != "min") Fail("reduce " + o.fn + At(op));
              Space(op, o.src, {tile::Space::Reg}, "reduce's operand");
              std::vector<core::Dim> shape = get(o.src).shape;
              if (shape.empty()) {
                Fail("reduce of a rank-0 tile" + At(op));
                return;
              }
              shape.pop_back();
              Result(op, tile::Space::Reg, get(o.src).dtype, &shape);
            },
            [&](const op::Expand& o) {
              Space(op, o.src, {tile::Space::Reg}, "expand's operand");
              std::vector<core::Dim> shape = get(o.src).shape;
              shape.push_back(core::Dim::Constant(1));
              Result(op, tile::Space::Reg, get(o.src).dtype, &shape);
            },
            [&](const op::Cast& o) {
              Space(op, o.src, {tile::Space::Reg, tile::Space::Scalar}, "cast's operand");
              Result(op, get(o.src).space, o.dtype, &get(o.src).shape);
            },
            [&](const op::Convert& o) {
              Space(op, o.src, {tile::Space::Reg}, "convert's operand");
              Result(op, tile::Space::Reg, get(o.src).dtype, &get(o.src).shape);
            },
            [&](const op::Loop& o) { Loop(id, op, o, defined); },
        },
        op.node);
  }

  static bool SameType(const Value& a, const Value& b) {
    return a.space == b.space && a.dtype == b.dtype && a.shape == b.shape;
  }

  void Loop(OpId, const Op& op, const op::Loop& o, const std::set<std::uint32_t>& outer) {
    Space(op, o.bound, {tile::Space::Scalar}, "the loop's bound");
    std::size_t n = o.carried.size();
    if (o.init.size() != n || o.yields.size() != n || op.results.size() != n) {
      Fail("a loop with " + std::to_string(n) + " carried values, " + std::to_string(o.init.size()) + " inits, " +
           std::to_string(o.yields.size()) + " yields and " + std::to_string(op.results.size()) + " results" + At(op));
      return;
    }
    std::set<std::uint32_t> inner = outer;
    if (Valid(o.counter, "the loop's counter" + At(op))) {
      const Value& c = k_.Get(o.counter);
      if (c.space != tile::Space::Scalar || c.dtype != Dtype::I64)
        Fail("the loop's counter is not a scalar i64" + At(op));
      if (c.def.valid()) Fail("the loop's counter names a defining op" + At(op));
      inner.insert(o.counter.index);
    }
    for (std::size_t i = 0; i < n; ++i) {
      if (!Valid(o.carried[i], "a carried value" + At(op))) return;
      const Value& c = k_.Get(o.carried[i]);
      if (c.def.valid()) Fail("carried " + Name(o.carried[i]) + " names a defining op" + At(op));
      if (c.space != tile::Space::Reg && c.space != tile::Space::Scalar)
        Fail("carried " + Name(o.carried[i]) + " is " + std::string(Spelling(c.space)) + At(op));
      if (!SameType(c, k_.Get(o.init[i]))) Fail("carried " + Name(o.carried[i]) + " and its init differ" + At(op));
      if (!SameType(c, k_.Get(op.results[i])))
        Fail("carried " + Name(o.carried[i]) + " and its result differ" + At(op));
      inner.insert(o.carried[i].index);
    }
    Block(o.body, inner);
    for (std::size_t i = 0; i < n; ++i) {
      if (!Valid(o.yields[i], "a yield" + At(op))) continue;
      if (!inner.count(o.yields[i].index))
        Fail("the loop yields " + Name(o.yields[i]) + ", not defined in it or before" + At(op));
      if (!SameType(k_.Get(o.carried[i]), k_.Get(o.yields[i])))
        Fail("the loop yields " + Name(o.yields[i]) + " for carried " + Name(o.carried[i]) + ", of another type" +
             At(op));
    }
  }

  const Kernel& k_;
  std::set<std::uint32_t> placed_;
  std::vector<std::string> violations_;
};

}  // namespace

std::vector<std::string> Verify(const Kernel& kernel) {
  return Verifier(kernel).Run();
}

}  // namespace weft::tile
