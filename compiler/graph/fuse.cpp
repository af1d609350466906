// Fuse: the graph's nodes grouped into kernels, and device buffers planned (docs/graph.md).
//
// Grouping walks the nodes from the last to the first, so that every node is placed after all of
// its users: a node joins the one group that all of its users are in when that group can compute it
// (producer fusion), and starts a group of its own otherwise. A group's first node so placed (its
// root, the last in program order) is its one output; everything else in it lives in registers.
// A product joins the elementwise group of its users as that group's gemm (epilogue fusion), and a
// reduction the group of the broadcasts of its result (row fusion). Launch order is the order of
// the roots, a topological order since every input of a group comes before its root.
#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "graph/epilogue.h"
#include "graph/graph.h"
#include "graph/layout.h"
#include "solver/optimize.h"
#include "weft/numerics.h"

namespace weft::graph {
namespace {

bool IsHostKind(Kind k) {
  switch (k) {
    case Kind::Constant:
    case Kind::Size:
    case Kind::String:
    case Kind::Load:
    case Kind::Random:
    case Kind::Save:
    case Kind::Print:
    case Kind::TimeBegin:
    case Kind::TimeEnd:
    case Kind::Param:
      return true;
    default:
      return false;
  }
}

const std::string kAttentionCopy = "a copy: the stdlib attention kernel reads q, k and v as stored, row-major";

const std::string kStdlibWhere = "where m % 128 == 0, n % 256 == 0, k % 64 == 0 at run time; else the generic product";

bool IsElementwiseKind(Kind k) {
  return k == Kind::Map || k == Kind::Cast || k == Kind::Fill || k == Kind::Iota || k == Kind::Dequant;
}

class Fuser {
 public:
  Fuser(const Graph& graph, const FuseOptions& options) : g_(graph), options_(options) {
    const std::size_t n = g_.nodes.size();
    users_.resize(n);
    plan_.group_of.assign(n, -1);
    plan_.buffer_of.assign(n, -1);
    for (std::size_t i = 0; i < n; ++i) {
      const Node& node = g_.nodes[i];
      if (node.in_body) continue;
      for (NodeId a : node.args) users_[a.index].push_back(NodeId(static_cast<std::uint32_t>(i)));
      if (HostScalar(node)) host_scalar_.insert(static_cast<std::uint32_t>(i));
    }
  }

  Plan Run() {
    ChooseViews();
    if (options_.stdlib_attention) MatchAttention();
    Group();
    // An attention pattern whose sizes the kernel does not take: its row kernel says why.
    for (const auto& [node, why] : why_not_attention_) {
      std::int64_t g = plan_.group_of[node];
      if (g >= 0 && plan_.groups[static_cast<std::size_t>(g)].why.empty())
        plan_.groups[static_cast<std::size_t>(g)].why = why;
    }
    Order();
    MarkStored();
    // Epilogue kernels are named after the first kernel number that runs them (`k3` runs
    // gemm_epilogue_3); groups of the same work (the same kernel text) share one.
    std::size_t kernel = 0;
    std::map<std::string, std::string> by_text;
    for (graph::Group& group : plan_.groups) {
      if (group.epilogue) {
        auto e = EpilogueKernel(g_, group.nodes, "");
        group.kernel = by_text.emplace(e ? EpilogueText(*e) : "", EpilogueName(kernel)).first->second;
      }
      kernel += group.kind == GroupKind::Host ? 0 : 1;
    }
    Connect();
    Alternatives();
    RunTimeReads();
    PlanBuffers();
    return std::move(plan_);
  }

 private:
  const Node& Get(NodeId id) const { return g_.Get(id); }
  std::int64_t& GroupOf(NodeId id) { return plan_.group_of[id.index]; }

  std::int64_t NewGroup(GroupKind kind, NodeId root, std::vector<Dim> space) {
    plan_.groups.push_back(graph::Group{kind, {root}, {}, {}, std::move(space), {}, {}, false});
    std::int64_t index = static_cast<std::int64_t>(plan_.groups.size() - 1);
    GroupOf(root) = index;
    return index;
  }
  void Join(std::int64_t group, NodeId id) {
    plan_.groups[static_cast<std::size_t>(group)].nodes.push_back(id);
    GroupOf(id) = group;
  }

  // The groups of a node's users; views outside every group are looked through.
  std::set<std::int64_t> UserGroups(NodeId id) {
    std::set<std::int64_t> out;
    for (NodeId u : users_[id.index]) {
      std::int64_t g = GroupOf(u);
      if (g == kLooseView) {
        for (std::int64_t h : UserGroups(u)) out.insert(h);
      } else {
        out.insert(g);
      }
    }
    return out;
  }

  // A value of rank 0 the host has or computes from such values (a literal, a size, a softmax
  // scale `rsqrt (cast f32 d)`, a time): passed to kernels by value.
  bool HostScalar(const Node& n) const {
    if (!n.shape.empty()) return false;
    if (n.kind == Kind::Constant || n.kind == Kind::Size || n.kind == Kind::TimeEnd) return true;
    if (n.kind != Kind::Map && n.kind != Kind::Cast) return false;
    for (NodeId a : n.args)
      if (!host_scalar_.count(a.index)) return false;
    return true;
  }

  // Whether group `g` reads the per-row value `id` (a reduction's result, shape [..rows]) only per
  // row: through `expand` (back over the row), or through work at the same shape whose readers do
  // so. A reader that broadcasts it as it is (`x - max x` with x: f32[8, 8]: aligned on the right,
  // it varies along the row) reads another row's value; the reduction is then a kernel of its own.
  bool ReadPerRow(NodeId id, std::int64_t g) const {
    for (NodeId u : users_[id.index]) {
      std::int64_t h = plan_.group_of[u.index];
      if (h != g && h != kLooseView) continue;
      const Node& un = Get(u);
      if (un.kind == Kind::View && un.fn == "expand") continue;
      bool same_shape = un.shape == Get(id).shape && (IsElementwiseKind(un.kind) || un.kind == Kind::View);
      if (!same_shape || !ReadPerRow(u, g)) return false;
    }
    return true;
  }

  // Whether a shape broadcasts to `space`: aligned on the right, each dim equal or a literal 1.
  static bool BroadcastsTo(const std::vector<Dim>& shape, const std::vector<Dim>& space) {
    if (shape.size() > space.size()) return false;
    for (std::size_t i = 0; i < shape.size(); ++i) {
      const Dim& d = shape[shape.size() - 1 - i];
      if (!(d == space[space.size() - 1 - i]) && !(d == Dim::Constant(1))) return false;
    }
    return true;
  }

  // Whether kernel call `call` reads its argument `view` through a parameter that admits a TMA map
  // on sm_90a (core::LayoutPredicate::tma: the kernel reads it only through `shared` copies).
  bool AdmitsMap(NodeId call, NodeId view) const {
    const Node& c = Get(call);
    if (!c.def) return false;
    for (std::size_t k = 0; k < c.args.size(); ++k) {
      if (c.args[k] != view) continue;
      for (const core::LayoutPredicate& p : c.def->scheme.admits)
        if (p.arg == k) return p.tma;
    }
    return false;
  }

  // Whether `id` (elementwise work) may be computed inside `group`: at a shape that broadcasts to
  // the group's (so at most once per element the group computes; in a row kernel a row's shape is
  // computed once per row), never upstream of a group's product.
  bool Fits(std::int64_t index, NodeId id) const {
    const graph::Group& group = plan_.groups[static_cast<std::size_t>(index)];
    const Node& n = Get(id);
    switch (group.kind) {
      case GroupKind::Elementwise:
      case GroupKind::Rows:
        return BroadcastsTo(n.shape, group.space);
      case GroupKind::Scan:
        return n.shape == group.space;
      case GroupKind::Gemm:
        return BroadcastsTo(n.shape, group.space) && !closed_.count(index);
      default:
        return false;
    }
  }

  void Group() {
    for (std::size_t i = g_.nodes.size(); i-- > 0;) {
      NodeId id(static_cast<std::uint32_t>(i));
      const Node& n = Get(id);
      if (n.in_body || GroupOf(id) != -1) continue;
      if (IsHostKind(n.kind) || host_scalar_.count(id.index)) {
        NewGroup(GroupKind::Host, id, n.shape);
        continue;
      }
      if (n.kind == Kind::KernelOut) {
        // A kernel call and its outputs are one group, placed with its last output.
        NodeId call = n.args[0];
        std::int64_t g = GroupOf(call);
        if (g == -1) {
          g = NewGroup(GroupKind::Call, id, n.shape);
          plan_.groups[static_cast<std::size_t>(g)].kernel = Get(call).text;
          Join(g, call);
        } else {
          Join(g, id);
        }
        continue;
      }
      if (n.kind == Kind::Kernel) {  // a kernel without outputs
        std::int64_t g = NewGroup(GroupKind::Call, id, {});
        plan_.groups[static_cast<std::size_t>(g)].kernel = n.text;
        continue;
      }
      std::set<std::int64_t> users = UserGroups(id);
      std::int64_t only = users.size() == 1 ? *users.begin() : -1;
      graph::Group* group = only >= 0 ? &plan_.groups[static_cast<std::size_t>(only)] : nullptr;
      if (n.kind == Kind::View) {
        // Views move no data: one kernel reads through it, several each do. The host reads dense
        // tensors, and a called kernel a dense one at an aligned offset (ReadDense): a view they
        // read otherwise is copied by an elementwise kernel.
        bool dense = g_.result && *g_.result == id;
        std::string copy;
        const bool read_in_place = in_place_.count(id.index) > 0;
        for (std::int64_t u : users) {
          GroupKind k = plan_.groups[static_cast<std::size_t>(u)].kind;
          const bool attention = k == GroupKind::Attention && !read_in_place;
          dense = dense || k == GroupKind::Host || attention;
          if (attention) copy = kAttentionCopy;
        }
        // A view that another view reads is read as that one is. A called kernel's read is decided
        // here once (Group::dense_reads); one whose alignment only run-time sizes decide is also
        // copied, and the call launches the copy where the alignment fails (Group::copy_for), when
        // the call is the view's one reader.
        // A call whose parameter admits a TMA map on sm_90a (core::LayoutPredicate::tma) reads a
        // view that is not row-major through one (ReadInPlace, the checker's rule), where the
        // target's kernels copy by TMA: the call's group reads it in place (Group::in_place).
        std::optional<weft::Result<DenseRead, std::string>> read;
        std::optional<weft::Result<InPlaceRead, std::string>> map;
        std::vector<NodeId> readers;  // the calls that read it in place
        bool run_time = false;
        for (NodeId u : users_[id.index]) {
          if (Get(u).kind != Kind::Kernel) continue;
          if (!read) read = ReadDense(g_, id);
          const std::string reads = "a copy: `" + Get(u).text + "` reads a row-major tensor, and ";
          if (*read && (*read)->when.empty()) {
            readers.push_back(u);
            continue;
          }
          if (!map && !*read && options_.views_in_place && AdmitsMap(u, id))
            map = ReadInPlace(g_, id, TmaBoxColumns(n.dtype));
          const bool mapped = map && *map;
          if (mapped && (*map)->when.empty()) {
            readers.push_back(u);
            continue;
          }
          dense = true;
          const std::string no_map =
              map && !*map && map->error() != read->error() ? "; and no TMA map on sm_90a: " + map->error() : "";
          if (mapped && users_[id.index].size() == 1) {
            readers.push_back(u);
            run_time = true;
            copy = reads + read->error() +
                   "; a TMA map's alignment is known only at run time: read through it instead where it holds";
          } else if (!*read) {
            copy = reads + read->error() + no_map;
          } else if (users_[id.index].size() == 1) {
            readers.push_back(u);
            run_time = true;
            copy = reads + "its offset's alignment is known only at run time: read in place instead where it holds";
          } else {
            copy = reads + "its offset's alignment is known only at run time, and it has other readers";
          }
          break;
        }
        if (auto c = copies_.find(id.index); c != copies_.end()) dense = true, copy = c->second, run_time = false;
        // A view copied for another reader is read from the copy by the calls too (the data under
        // it need not live until them).
        if (!dense || run_time)
          for (NodeId u : readers) {
            graph::Group& reader = plan_.groups[static_cast<std::size_t>(GroupOf(u))];
            if (*read)
              reader.dense_reads.push_back(**read);
            else
              reader.in_place.push_back(**map);
          }
        if (dense) {
          std::int64_t g = NewGroup(GroupKind::Elementwise, id, n.shape);
          plan_.groups[static_cast<std::size_t>(g)].why = copy;
        } else if (group) {
          Join(only, id);
        } else {
          GroupOf(id) = kLooseView;
        }
        continue;
      }
      if (IsElementwiseKind(n.kind)) {
        if (group && Fits(only, id)) {
          Join(only, id);
        } else {
          NewGroup(GroupKind::Elementwise, id, n.shape);
        }
        continue;
      }
      if (n.kind == Kind::Reduce) {
        // A reduction joins the group that broadcasts its result back over its rows (or computes
        // on the per-row results): that group becomes a row kernel over the reduced rows.
        const std::vector<Dim>& rows = Get(n.args[0]).shape;
        bool over_rows = group && group->space == rows && ReadPerRow(id, only);
        bool fits = group && ((group->kind == GroupKind::Rows && over_rows) ||
                              (group->kind == GroupKind::Elementwise && (over_rows || group->space == n.shape)));
        if (fits) {
          group->kind = GroupKind::Rows;
          group->space = rows;
          Join(only, id);
        } else {
          NewGroup(GroupKind::Rows, id, rows);
        }
        continue;
      }
      if (n.kind == Kind::Scan) {
        if (group && group->kind == GroupKind::Elementwise && group->space == n.shape) {
          group->kind = GroupKind::Scan;
          Join(only, id);
        } else {
          NewGroup(GroupKind::Scan, id, n.shape);
        }
        continue;
      }
      if (n.kind == Kind::MatMul) {
        std::string why_generic;
        if (options_.stdlib_gemm && RouteGemm(id, group, only, why_generic)) continue;
        std::int64_t g = -1;
        if (group && group->kind == GroupKind::Elementwise && group->space == n.shape) {
          group->kind = GroupKind::Gemm;
          Join(only, id);
          g = only;
        } else {
          g = NewGroup(GroupKind::Gemm, id, n.shape);
        }
        closed_.insert(g);  // what comes before the product is not its epilogue
        plan_.groups[static_cast<std::size_t>(g)].why = why_generic;
        continue;
      }
      if (n.kind == Kind::Gather) {
        NewGroup(GroupKind::Gather, id, n.shape);
        continue;
      }
      if (n.kind == Kind::Concat) {
        NewGroup(GroupKind::Concat, id, n.shape);
        continue;
      }
      WEFT_INTERNAL_ERROR("graph: fusion has no rule for a `" + std::string(Spelling(n.kind)) + "` node");
    }
  }

  // How the stdlib gemm computes product `id` as the graph means it (its operands as they are
  // stored, its result in the product's dtype), or why it does not.
  struct GemmRoute {
    std::string kernel;  // the stdlib kernel of the product alone; empty when only an epilogue
                         // kernel does: the `_nt` or `_tn` tile, whose store casts its f32 to the
                         // result's dtype
    std::map<std::uint32_t, std::string> copies;  // operand views made dense first, and why
    std::vector<InPlaceRead> in_place;            // operand views read in place
  };
  struct NoGemm {
    std::string why;
  };
  // Why no stdlib gemm computes product `mm`, whatever its operands' layouts; nothing when one may.
  std::optional<std::string> NoStdlibGemm(const Node& mm) const {
    const Node& a = Get(mm.args[0]);
    const Node& b = Get(mm.args[1]);
    if (a.dtype != b.dtype || (a.dtype != Dtype::BF16 && a.dtype != Dtype::F16))
      return std::string("no stdlib gemm takes ") + std::string(Spelling(a.dtype)) +
             (a.dtype == b.dtype ? "" : " and " + std::string(Spelling(b.dtype))) + " operands";
    // a: [..rows, k] with b: [k, n] is the product of a's rows flattened (one matrix of b for all):
    // the kernel reads a dense a as [rows, k] and writes the result as [rows, n].
    if (a.shape.size() < 2 || b.shape.size() != 2)
      return std::string("batched: the stdlib gemm takes a matrix b (rank 2)");
    if (!TileMayDivide(mm))
      return std::string("the stdlib tile (128 x 256 outputs, 64 deep) does not divide its sizes");
    return std::nullopt;
  }

  weft::Result<GemmRoute, NoGemm> StdlibGemm(NodeId id) const {
    const Node& mm = Get(id);
    const Node& a = Get(mm.args[0]);
    const Node& b = Get(mm.args[1]);
    if (std::optional<std::string> no = NoStdlibGemm(mm)) return NoGemm{*no};
    GemmRoute route;
    std::string in(Spelling(a.dtype));
    // A transposed b read by the product alone is the `_nt` tile's operand, stored as [n, k], and
    // else a transposed a the `_tn` tile's, stored as [k, m]; any other view operand is read in
    // place or copied to a dense row-major tensor, visibly.
    const Transposed transposed = TransposedOperands(g_, mm);
    auto operand = [&](const char* which, NodeId x) {
      std::string why;
      if (stored_.count(x.index)) return;  // its producer stores it dense (ChooseViews)
      if (Get(x).shape.size() > 2) {
        route.copies[x.index] = "a copy: the stdlib gemm reads a's rows flattened, as stored";
      } else if (std::optional<InPlaceRead> read = InPlace(x, id, why)) {
        // Aligned only at some run-time sizes: read in place there, else copied first.
        if (!read->when.empty())
          route.copies[x.index] = CopyWhy(which, x) + "; read in place instead where its alignment holds at run time";
        route.in_place.push_back(std::move(*read));
      } else {
        route.copies[x.index] = CopyWhy(which, x) + why;
      }
    };
    if (a.kind == Kind::View && !transposed.a) operand("a", mm.args[0]);
    if (b.kind == Kind::View && !transposed.b) operand("b", mm.args[1]);
    if (mm.dtype == Dtype::F32) {
      route.kernel = "gemm_" + in + (transposed.b ? "_nt" : transposed.a ? "_tn" : "");
    } else if (!transposed.a && !transposed.b) {
      route.kernel = "gemm_" + in + "_" + std::string(Spelling(mm.dtype));
    }
    return route;
  }

  // How a stdlib kernel reads view `x`, an operand of `user` (a product, or an attention's), in
  // place: when the target's kernels copy by TMA, its layout allows a map (ReadInPlace), and each
  // view down to the data is read by the next alone, so that the views join the kernel's group and
  // the data lives until it runs. Otherwise nothing, and `why` says why not (after a `;`) when there
  // is a reason beyond the target.
  std::optional<InPlaceRead> InPlace(NodeId x, NodeId user, std::string& why) const {
    auto known = read_of_.find(x.index);  // ChooseViews asked already
    auto read = known != read_of_.end() ? known->second : ReadInPlace(g_, x, TmaBoxColumns(Get(x).dtype));
    if (!options_.views_in_place) {
      if (read) why = "; read in place on sm_90a, whose kernels copy by TMA";
      return std::nullopt;
    }
    // ChooseViews' choice: read in place by each of its readers, or copied, saying why.
    if (auto choice = choice_of_.find(x.index); choice != choice_of_.end()) {
      const ViewChoice& c = *choice->second;
      if (!c.copied) return std::move(*read);
      why = "; not read in place: " +
            (c.why.empty() ? "one copy costs less than " + std::to_string(c.readers.size()) +
                                 " kernels reading it through TMA maps of " + std::to_string(MapDims(*read)) + " dims"
                           : c.why);
      return std::nullopt;
    }
    for (NodeId v = x, u = user; Get(v).kind == Kind::View; u = v, v = Get(v).args.at(0)) {
      if (users_[v.index].size() != 1 || users_[v.index][0] != u) {
        why = "; not read in place: another value reads it too";
        return std::nullopt;
      }
    }
    if (!read) {
      why = "; not read in place: " + read.error();
      return std::nullopt;
    }
    return std::move(*read);
  }

  // The predicted bytes of a value of `n`'s type, its sizes known only at run time taken as 4096
  // (the cost model's guess; only the comparison between choices matters).
  static std::int64_t PredictedBytes(const Node& n) {
    auto bytes = core::Evaluate(Bytes(n), [](core::SizeVarId) { return std::int64_t{4096}; });
    return bytes ? *bytes : std::int64_t{1} << 40;
  }

  // How each view that stdlib kernels read (a product's a or b, an attention's q, k or v; the top
  // of its chain of views) is read, for all of them at once: a 0/1 variable per view, copied or
  // read in place by every reader, in one integer program (compiler/solver) whose objective is the
  // predicted bytes: a copy reads and writes the view once; a reader's TMA map of 3 or more dims
  // costs about one more read of it (measured: the output projection of examples/llama_block.weft
  // through a 3-D map takes 92.6 us where a dense one takes 87, a copy of its operand 8). A view
  // that cannot be read in place (no map describes it, a value that needs it stored reads it, a
  // view below it has another reader) is a copy. Views of one reader keep the rule that InPlace
  // applies alone (in place where it can); several readers of one view may now share it in place.
  // Only sm_90a's kernels read in place.
  void ChooseViews() {
    std::map<std::uint32_t, std::vector<NodeId>> readers;  // view -> the stdlib operands' users
    std::set<std::uint32_t> run_time;  // views an attention at run-time sizes reads (its parts' groups hold them)
    if (options_.stdlib_attention) {
      for (std::size_t i = 0; i < g_.nodes.size(); ++i) {
        std::string why;
        auto match = Attention(NodeId(static_cast<std::uint32_t>(i)), why);
        if (!match) continue;
        (match->at_run_time ? alternative_outs_ : attention_outs_).insert(static_cast<std::uint32_t>(i));
        for (NodeId x : {match->q, match->k, match->v}) {
          if (Get(x).kind != Kind::View) continue;
          if (match->at_run_time) run_time.insert(x.index);
          for (NodeId m : match->members)
            if (std::count(Get(m).args.begin(), Get(m).args.end(), x) > 0) readers[x.index].push_back(m);
        }
      }
    }
    if (options_.stdlib_gemm) {
      for (std::size_t i = 0; i < g_.nodes.size(); ++i) {
        const Node& mm = g_.nodes[i];
        if (mm.in_body || mm.kind != Kind::MatMul || NoStdlibGemm(mm)) continue;
        const Transposed transposed = TransposedOperands(g_, mm);
        if (Get(mm.args[0]).kind == Kind::View && Get(mm.args[0]).shape.size() == 2 && !transposed.a)
          readers[mm.args[0].index].push_back(NodeId(static_cast<std::uint32_t>(i)));
        if (Get(mm.args[1]).kind == Kind::View && !transposed.b)
          readers[mm.args[1].index].push_back(NodeId(static_cast<std::uint32_t>(i)));
      }
    }
    plan_.views.in_place = options_.views_in_place;
    solver::IntegerProgram program;
    std::vector<solver::LinearTerm> bytes, copies, stores;
    std::vector<std::pair<int, int>> vars;  // per view: its copy variable and its store variable (or -1)
    for (auto& [index, rs] : readers) {
      const NodeId x(index);
      std::sort(rs.begin(), rs.end());
      rs.erase(std::unique(rs.begin(), rs.end()), rs.end());
      ViewChoice choice{x, rs};
      // Every reader of the view is one of those.
      bool others = false;
      for (NodeId u : users_[x.index])
        if (!std::binary_search(rs.begin(), rs.end(), u)) others = true;
      if (others) choice.why = "another value reads it too";
      if (g_.result && *g_.result == x) choice.why = "`main` returns it";
      for (NodeId v = Get(x).args.at(0); Get(v).kind == Kind::View; v = Get(v).args.at(0))
        if (users_[v.index].size() != 1) choice.why = "a view below it has another reader";
      const auto& read = read_of_.emplace(index, ReadInPlace(g_, x, TmaBoxColumns(Get(x).dtype))).first->second;
      if (!read) choice.why = read.error();
      if (read && rs.size() > 1 && !read->when.empty()) choice.why = "its alignment is known only at run time";
      if (rs.size() > 1 && run_time.count(index)) choice.why = "an attention at run-time sizes reads it";
      if (!options_.views_in_place && choice.why.empty())
        choice.why = "sm_80's kernels copy operands by cp.async and read no view in place";
      choice.copy_bytes = 2 * PredictedBytes(Get(x));
      if (read && MapDims(*read) > 2) choice.map_bytes = static_cast<std::int64_t>(rs.size()) * PredictedBytes(Get(x));
      choice.why_not_stored = others ? "another value reads it too" : WhyNotStored(x);
      if (choice.why_not_stored.empty()) {
        NodeId root = x;
        while (Get(root).kind == Kind::View) root = Get(root).args.at(0);
        // An attention's output is stored over its own [bh, s, d]; a product's over [m, n].
        const bool attention = attention_outs_.count(root.index) || alternative_outs_.count(root.index);
        auto layout = StoreLayout(g_, x, !attention);
        if (layout) {
          choice.store = std::move(*layout);
          // A contiguous run of less than 128 bytes (a line) fills its sectors partly: about one
          // more write of the value.
          const std::int64_t e = (weft::Bits(Get(x).dtype) + 7) / 8;
          if (choice.store->flat.axes.back().modes.back().extent.AsConstant().value_or(0) * e < 128)
            choice.store_bytes = PredictedBytes(Get(x));
        } else {
          choice.why_not_stored = layout.error();
        }
      }
      // copied: copy_bytes; stored: store_bytes; in place (neither): map_bytes. The objective is
      // their sum over views: map_bytes, plus each variable's difference from it.
      const int copy = program.Var("copy_%" + std::to_string(index), 0, 1);
      const int store = choice.store ? program.Var("store_%" + std::to_string(index), 0, 1) : -1;
      std::vector<solver::LinearTerm> either = {{1, copy}};
      if (store >= 0) either.push_back({1, store});
      program.Add({either, core::RelOp::kLe, 1});
      // Where it cannot be read in place: copied or stored.
      if (!choice.why.empty()) program.Add({either, core::RelOp::kGe, 1});
      bytes.push_back({choice.copy_bytes - choice.map_bytes, copy});
      copies.push_back({1, copy});
      if (store >= 0) {
        bytes.push_back({choice.store_bytes - choice.map_bytes, store});
        stores.push_back({1, store});
      }
      vars.emplace_back(copy, store);
      plan_.views.views.push_back(std::move(choice));
    }
    if (plan_.views.views.empty()) return;
    program.Minimize(bytes);
    program.Minimize(copies);  // on a tie, fewer copies
    program.Minimize(stores);  // then fewer stores in another layout
    solver::OptimizeResult result = program.Solve();
    plan_.views.status = std::string(solver::ToString(result.status));
    const bool model =
        result.status == solver::OptimizeStatus::kOptimal || result.status == solver::OptimizeStatus::kFeasible;
    plan_.views.objective = 0;
    for (std::size_t i = 0; i < plan_.views.views.size(); ++i) {
      ViewChoice& choice = plan_.views.views[i];
      const auto [copy, store] = vars[i];
      // Without an answer (the solver's limits), the rule for one view alone: a copy where it must.
      choice.copied = model ? result.values.at(static_cast<std::size_t>(copy)) != 0 : !choice.why.empty();
      choice.stored = model && store >= 0 && result.values.at(static_cast<std::size_t>(store)) != 0;
      plan_.views.objective += choice.copied   ? choice.copy_bytes
                               : choice.stored ? choice.store_bytes
                                               : choice.map_bytes;
      choice_of_[choice.view.index] = &choice;
      if (choice.stored)
        for (NodeId v = choice.view; Get(v).kind == Kind::View; v = Get(v).args.at(0)) stored_.insert(v.index);
    }
  }

  // The product groups that store their result in the layout a view wants (ChooseViews'
  // choice): each is a stdlib gemm (or its epilogue kernel) whose one output is that result, the
  // stdlib attention kernel, or the last part of an attention at run-time sizes (its generic
  // product, which the kernel replaces where its clause holds: both store so).
  void MarkStored() {
    for (const ViewChoice& choice : plan_.views.views) {
      if (!choice.stored) continue;
      const NodeId root = choice.store->root;
      const std::int64_t g = plan_.group_of[root.index];
      graph::Group* group = g >= 0 ? &plan_.groups[static_cast<std::size_t>(g)] : nullptr;
      const bool attention = group && group->kind == GroupKind::Attention && !group->kernel.empty();
      const bool parts = alternative_outs_.count(root.index) > 0;
      if (!group || (group->kind != GroupKind::Gemm && !attention) || group->nodes.back() != root ||
          (group->kernel.empty() && !group->epilogue && !parts))
        WEFT_INTERNAL_ERROR("graph: a product chosen to store its result as a view wants is not a stdlib gemm's");
      group->stored = *choice.store;
    }
  }

  // Why the product under view `x` cannot store its result in the layout `x` wants, or nothing:
  // the data is a product on a stdlib gemm kernel (alone: it is read by the views alone) or an
  // attention's output, each view down to it read by the next alone. Sizes known only at run time
  // are no obstacle: where the kernel's `where` clause fails then, the generic product (or the
  // attention's parts) stores through the same layout (codegen/array_product.cpp), so the readers
  // find the view dense either way; constant sizes the clause fails for never reach the kernel.
  std::string WhyNotStored(NodeId x) const {
    if (g_.result && *g_.result == x) return "`main` returns it";
    NodeId root = x;
    for (NodeId u = NodeId(~0u); Get(root).kind == Kind::View; u = root, root = Get(root).args.at(0))
      if (root != x && (users_[root.index].size() != 1 || users_[root.index][0] != u))
        return "a view below it has another reader";
    const Node& mm = Get(root);
    if (mm.kind != Kind::MatMul || mm.in_body) return "its data is not a product's result";
    if (users_[root.index].size() != 1 || (g_.result && *g_.result == root))
      return "the product's result has another reader";
    // The stdlib attention kernel's output (constant sizes its clause holds for: no fallback), or
    // at run-time sizes the kernel's or its parts'.
    if (attention_outs_.count(root.index) || alternative_outs_.count(root.index)) return {};
    if (options_.plain_products.count(root.index) || !options_.stdlib_gemm || NoStdlibGemm(mm))
      return "the product is not on a stdlib gemm kernel";
    auto route = StdlibGemm(root);
    if (!route || (route->kernel.empty() && !EpilogueKernel(g_, {root}, "")))
      return "the product is not on a stdlib gemm kernel";
    return {};
  }

  // Why view `id`, operand `which` of a product, is copied for the stdlib gemm.
  std::string CopyWhy(const char* which, NodeId id) const {
    core::ViewResult layout = LayoutOf(g_, id);
    const std::string& fn = Get(id).fn;
    std::string what = std::string(fn.find_first_of("aeiou") == 0 ? "an `" : "a `") + fn + "` view";
    if (!layout)
      return "a copy: " + std::string(which) + " is " + what + " with no strided layout (" + layout.error() + ")";
    return "a copy: the stdlib gemm reads " + std::string(which) + " as stored, row-major, and it is " + what +
           (core::IsRowMajor(*layout) ? " (row-major)" : " (not row-major)");
  }

  // Routes product `id` to a stdlib gemm kernel: the tile with the work after it (the elementwise
  // group of its users, `group`, number `only`) as its epilogue when the kernel tier spells all of
  // it, else the stdlib kernel of the product alone (the work after it a kernel of its own). False,
  // with `why_generic`, when the product runs on the generic kernel.
  bool RouteGemm(NodeId id, graph::Group* group, std::int64_t only, std::string& why_generic) {
    auto route = StdlibGemm(id);
    if (!route) {
      why_generic = route.error().why;
      return false;
    }
    const Node& n = Get(id);
    auto copy = [&](std::int64_t g) {
      for (const auto& [view, why] : route->copies) copies_.emplace(view, why);
      plan_.groups[static_cast<std::size_t>(g)].in_place = route->in_place;
    };
    std::string not_epilogue;
    auto plain = options_.plain_products.find(id.index);
    if (plain != options_.plain_products.end()) {
      not_epilogue = plain->second;
    } else if (group && group->kind == GroupKind::Elementwise && group->space == n.shape) {
      std::vector<NodeId> nodes = group->nodes;
      nodes.push_back(id);
      std::string why;
      if (auto epilogue = EpilogueKernel(g_, nodes, "", &why)) {
        group->kind = GroupKind::Gemm;
        group->epilogue = true;
        group->why = "the tile of " + epilogue->tile + " with this epilogue in its store, " + kStdlibWhere;
        Join(only, id);
        closed_.insert(only);
        copy(only);
        for (const EpilogueInput& x : epilogue->inputs)
          if (Get(x.node).kind == Kind::View)
            copies_.emplace(x.node.index, "a copy: the gemm's epilogue reads its tensors as stored, row-major");
        return true;
      }
      not_epilogue = why;
    }
    if (route->kernel.empty()) {
      // Only the `_nt` or `_tn` tile computes it, with a store that casts: an epilogue kernel of the
      // product alone.
      std::string why = not_epilogue;
      if (plain == options_.plain_products.end()) {
        if (auto epilogue = EpilogueKernel(g_, {id}, "", &why)) {
          std::int64_t g = NewGroup(GroupKind::Gemm, id, n.shape);
          closed_.insert(g);
          plan_.groups[static_cast<std::size_t>(g)].epilogue = true;
          plan_.groups[static_cast<std::size_t>(g)].why = "the tile of " + epilogue->tile + ", its store casting to " +
                                                          std::string(Spelling(n.dtype)) + ", " + kStdlibWhere;
          copy(g);
          return true;
        }
      }
      const bool b = TransposedOperands(g_, n).b;
      why_generic = std::string("its ") + (b ? "b" : "a") + " operand is transposed, and the `" + (b ? "_nt" : "_tn") +
                    "` tile's kernel with a store that casts to " + std::string(Spelling(n.dtype)) +
                    " does not fit: " + why;
      return false;
    }
    std::int64_t g = NewGroup(GroupKind::Gemm, id, n.shape);
    closed_.insert(g);
    plan_.groups[static_cast<std::size_t>(g)].kernel = route->kernel;
    plan_.groups[static_cast<std::size_t>(g)].why =
        kStdlibWhere + (not_epilogue.empty() ? "" : "; the work after it is a kernel of its own: " + not_epilogue);
    copy(g);
    return true;
  }

  // Whether the stdlib tile may divide the product's sizes: not when a constant one it does not
  // divide (then the kernel's `where` clause could never hold at run time).
  bool TileMayDivide(const Node& mm) const {
    const Node& a = Get(mm.args[0]);
    auto divides = [](const Dim& d, std::int64_t tile) {
      std::optional<std::int64_t> c = d.AsConstant();
      return !c || *c % tile == 0;
    };
    Dim rows = Dim::Constant(1);
    for (std::size_t i = 0; i + 1 < mm.shape.size(); ++i)
      if (auto product = core::Mul(rows, mm.shape[i])) rows = *product;
    return divides(rows, 128) && divides(mm.shape.back(), 256) && divides(a.shape.back(), 64);
  }

  // `expand (iota [s]) >= iota [s]` (or `iota [s] <= expand (iota [s])`): query i (a row) sees key
  // j (a column) when i >= j. `nodes` gets the mask's nodes, the comparison first.
  bool CausalMask(NodeId visible, std::vector<NodeId>& nodes) const {
    const Node& c = Get(visible);
    if (c.in_body || c.kind != Kind::Map || (c.fn != ">=" && c.fn != "<=") || c.args.size() != 2) return false;
    NodeId rows = c.args[c.fn == ">=" ? 0 : 1], cols = c.args[c.fn == ">=" ? 1 : 0];
    const Node& expand = Get(rows);
    if (expand.kind != Kind::View || expand.fn != "expand") return false;
    const Node &i = Get(expand.args[0]), &j = Get(cols);
    if (i.kind != Kind::Iota || j.kind != Kind::Iota || i.shape.size() != 1 || !(i.shape == j.shape)) return false;
    nodes = {visible, rows, expand.args[0], cols};
    return true;
  }

  // Whether `id` is a literal that hides a score from the softmax as the kernel does (its weight 0):
  // -1.0e30 or less, or minus infinity.
  bool Hidden(NodeId id) const {
    const Node& n = Get(id);
    return n.kind == Kind::Constant && runtime::IsFloatDtype(n.dtype) &&
           runtime::DecodeFloat(n.dtype, n.bits) <= -1.0e30;
  }

  // softmax(matmul_f32 q (transpose k) * rsqrt (cast f32 d)) cast to bf16, times v: the stdlib
  // attention kernel of head dim d, when every value in between has no other use.
  void MatchAttention() {
    for (std::size_t i = 0; i < g_.nodes.size(); ++i) {
      NodeId id(static_cast<std::uint32_t>(i));
      std::string why;
      if (auto match = Attention(id, why)) {
        if (match->at_run_time) {
          // Its parts are grouped as they would be without it (Group), the kernel their
          // alternative (Alternatives); q, k and v read in place by both where their layouts
          // allow (the parts' kernels read views by index arithmetic), else dense.
          std::vector<InPlaceRead> in_place = ReadsInPlace(*match);
          alternatives_.push_back(Alternative{std::move(*match), why, std::move(in_place)});
          continue;
        }
        std::vector<InPlaceRead> in_place = ReadsInPlace(*match);
        std::int64_t g = NewGroup(GroupKind::Attention, id, Get(id).shape);
        for (NodeId m : match->members)
          if (m != id) Join(g, m);
        plan_.groups[static_cast<std::size_t>(g)].kernel = match->kernel;
        plan_.groups[static_cast<std::size_t>(g)].why = why;
        plan_.groups[static_cast<std::size_t>(g)].causal = match->causal;
        plan_.groups[static_cast<std::size_t>(g)].in_place = std::move(in_place);
      } else if (!why.empty()) {
        why_not_attention_.emplace(Get(id).args[0].index, why);  // the softmax's `cast bf16`
        plan_.generic_attention.emplace_back(id, why);
      }
    }
  }

  // The stdlib attention kernel of the pattern whose `@` is `out`, with the group's `why`; or none,
  // with `why` saying so when only the sizes keep the pattern from the kernel. Both head dims take
  // 128 queries a block and keys in blocks of 128 (stdlib/attention.weft).
  struct AttentionMatch {
    std::string kernel;
    std::vector<NodeId> members;  // the pattern's nodes, `out` first
    NodeId q, k, v;               // what the kernel reads
    bool causal = false;
    bool at_run_time = false;  // sizes known only at run time: the clause is decided then
  };
  std::optional<AttentionMatch> Attention(NodeId out, std::string& why) const {
    auto is = [&](NodeId id, Kind kind, std::string_view fn) {
      const Node& n = Get(id);
      return !n.in_body && n.kind == kind && (fn.empty() || n.fn == fn);
    };
    if (!is(out, Kind::MatMul, "@")) return std::nullopt;
    NodeId cast = Get(out).args[0], v = Get(out).args[1];
    if (!is(cast, Kind::Cast, "") || Get(cast).dtype != Dtype::BF16) return std::nullopt;
    NodeId p = Get(cast).args[0];
    if (!is(p, Kind::Map, "/")) return std::nullopt;
    NodeId e = Get(p).args[0], x1 = Get(p).args[1];
    if (!is(e, Kind::Map, "exp") || !is(x1, Kind::View, "expand")) return std::nullopt;
    NodeId sum = Get(x1).args[0];
    if (!is(sum, Kind::Reduce, "sum") || Get(sum).args[0] != e) return std::nullopt;
    NodeId d = Get(e).args[0];
    if (!is(d, Kind::Map, "-")) return std::nullopt;
    NodeId s = Get(d).args[0], x2 = Get(d).args[1];
    if (!is(x2, Kind::View, "expand")) return std::nullopt;
    NodeId max = Get(x2).args[0];
    if (!is(max, Kind::Reduce, "max") || Get(max).args[0] != s) return std::nullopt;
    // Causal: `select visible (scores * scale) (-1.0e30)` (nn's causal_attention).
    std::vector<NodeId> mask;
    NodeId scaled = s;
    if (is(s, Kind::Map, "select")) {
      scaled = Get(s).args[1];
      if (!CausalMask(Get(s).args[0], mask) || !Hidden(Get(s).args[2])) return std::nullopt;
      mask.push_back(s);
    }
    if (!is(scaled, Kind::Map, "*")) return std::nullopt;
    NodeId scores = Get(scaled).args[0], scale = Get(scaled).args[1];
    if (!is(scores, Kind::MatMul, "matmul_f32")) return std::nullopt;
    NodeId q = Get(scores).args[0], kt = Get(scores).args[1];
    if (!is(kt, Kind::View, "transpose")) return std::nullopt;
    NodeId k = Get(kt).args[0];
    // The scale must be the kernel's: rsqrt (cast f32 d) of the head dim d.
    if (!is(scale, Kind::Map, "rsqrt") || !is(Get(scale).args[0], Kind::Cast, "")) return std::nullopt;
    NodeId size = Get(Get(scale).args[0]).args[0];
    if (Get(size).kind != Kind::Size) return std::nullopt;
    const Node &qn = Get(q), &kn = Get(k), &vn = Get(v);
    if (qn.dtype != Dtype::BF16 || kn.dtype != Dtype::BF16 || vn.dtype != Dtype::BF16) return std::nullopt;
    if (qn.shape.size() != 3 || kn.shape.size() != 3 || vn.shape.size() != 3) return std::nullopt;
    std::optional<std::int64_t> dim = qn.shape.back().AsConstant();
    if (!dim || (*dim != 64 && *dim != 128) || !(Get(size).size == qn.shape.back())) return std::nullopt;
    if (!(vn.shape.back() == qn.shape.back())) return std::nullopt;
    // q, k and v may be views (heads permuted out of a projection): each is copied to a dense
    // tensor first, since the kernel reads them as stored (see Group's views).
    // A causal mask's rows are the queries and its columns the keys, one sequence (s == t).
    const bool causal = !mask.empty();
    if (causal && !(Get(mask.front()).shape.front() == qn.shape[qn.shape.size() - 2] &&
                    kn.shape[kn.shape.size() - 2] == qn.shape[qn.shape.size() - 2]))
      return std::nullopt;
    std::vector<NodeId> members = {out, cast, p, x1, sum, e, d, x2, max, scaled, scores, kt};
    members.insert(members.end(), mask.begin(), mask.end());
    // Every value in between is used only inside the pattern.
    std::set<std::uint32_t> inside;
    for (NodeId m : members) inside.insert(m.index);
    for (NodeId m : members) {
      if (m == out) continue;
      for (NodeId u : users_[m.index])
        if (!inside.count(u.index)) return std::nullopt;
    }
    // The kernel's `where` clause must hold for the shapes as the program states them (sizes a
    // file gives are known only at run time, and the pattern has no fallback kernel: then it is
    // its parts).
    std::string kernel = "attention_d" + std::to_string(*dim) + "_bf16";
    const std::string clause = "s % 128 == 0 and t % 128 == 0";
    std::optional<std::int64_t> s_len = qn.shape[1].AsConstant(), t_len = kn.shape[1].AsConstant();
    AttentionMatch match{kernel, std::move(members), q, k, v, causal, false};
    if (s_len && t_len && *s_len % 128 == 0 && *t_len % 128 == 0) {
      why = std::string("softmax(q k^T / sqrt(d)) v, ") + (causal ? "causal" : "not causal") + "; " + clause +
            " hold for its constant sizes";
      return match;
    }
    if ((!s_len || *s_len % 128 == 0) && (!t_len || *t_len % 128 == 0)) {
      // Sizes known only at run time: the kernel when its clause holds then, else the parts.
      match.at_run_time = true;
      why = std::string("softmax(q k^T / sqrt(d)) v, ") + (causal ? "causal" : "not causal") + ": the stdlib " +
            kernel + " when " + clause + " at run time, else these parts";
      return match;
    }
    auto stated = [](const char* name, std::optional<std::int64_t> c) {
      return std::string(name) + (c ? " = " + std::to_string(*c) : " is known only at run time");
    };
    std::string here =
        !s_len && !t_len ? "s and t are known only at run time" : stated("s", s_len) + " and " + stated("t", t_len);
    why = "not the stdlib " + kernel + ": its `where` clause, " + clause + ", cannot hold: here " + here;
    return std::nullopt;
  }

  // Groups in launch order: by their root's position (the largest node index in the group).
  void Order() {
    std::vector<std::size_t> order(plan_.groups.size());
    std::vector<std::uint32_t> last(plan_.groups.size(), 0);
    for (std::size_t g = 0; g < plan_.groups.size(); ++g) {
      auto& nodes = plan_.groups[g].nodes;
      std::sort(nodes.begin(), nodes.end(), [](NodeId a, NodeId b) { return a.index < b.index; });
      last[g] = nodes.back().index;
      order[g] = g;
    }
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return last[a] < last[b]; });
    std::vector<graph::Group> groups;
    std::vector<std::int64_t> renumber(plan_.groups.size());
    for (std::size_t i = 0; i < order.size(); ++i) {
      renumber[order[i]] = static_cast<std::int64_t>(i);
      groups.push_back(std::move(plan_.groups[order[i]]));
    }
    plan_.groups = std::move(groups);
    for (std::int64_t& g : plan_.group_of)
      if (g >= 0) g = renumber[static_cast<std::size_t>(g)];
  }

  // Each group's inputs (values it reads from elsewhere, looking through loose views to the value
  // that holds the data) and outputs (its values read elsewhere).
  void Connect() {
    for (std::size_t g = 0; g < plan_.groups.size(); ++g) {
      graph::Group& group = plan_.groups[g];
      std::set<std::uint32_t> seen;
      for (NodeId id : group.nodes) {
        for (NodeId a : Get(id).args) {
          if (plan_.group_of[a.index] == static_cast<std::int64_t>(g)) continue;
          if (seen.insert(a.index).second) group.inputs.push_back(a);
        }
        if (ReadOutside(id, static_cast<std::int64_t>(g)) && Get(id).kind != Kind::Kernel) group.outputs.push_back(id);
      }
    }
  }

  // Whether a value of group `g` is read elsewhere: by another group, the host, or `main`'s result,
  // looking through loose views (a view nothing reads, such as an unused `expand x`, reads nothing).
  bool ReadOutside(NodeId id, std::int64_t g) {
    if (g_.result && *g_.result == id) return true;
    for (NodeId u : users_[id.index]) {
      std::int64_t h = plan_.group_of[u.index];
      if (h == kLooseView ? ReadOutside(u, g) : h != g) return true;
    }
    return false;
  }

  // The node that holds the data a value reads: itself, or the base of a loose view.
  NodeId Base(NodeId id) const {
    while (plan_.group_of[id.index] == kLooseView) id = Get(id).args[0];
    return id;
  }

  static Dim Bytes(const Node& n) {
    Dim bytes = Dim::Constant((weft::Bits(n.dtype) + 7) / 8);
    for (const Dim& d : n.shape) bytes = *core::Mul(bytes, d);
    return bytes;
  }

  // Linear scan over the launch order: a value lives from the group that makes it to the last
  // group that reads it (through views too); a buffer whose value is dead is reused by a later
  // value of the same byte size.
  void PlanBuffers() {
    struct Life {
      NodeId value;
      std::size_t begin = 0, end = 0;
    };
    std::map<std::uint32_t, Life> lives;
    for (std::size_t g = 0; g < plan_.groups.size(); ++g) {
      const graph::Group& group = plan_.groups[g];
      for (NodeId out : group.outputs) {
        const Node& n = Get(out);
        if (n.kind == Kind::String || n.kind == Kind::TimeEnd || host_scalar_.count(out.index)) continue;
        if (group.kind == GroupKind::Host && n.kind != Kind::Load && n.kind != Kind::Random) continue;
        lives.emplace(out.index, Life{out, g, g});
      }
    }
    for (std::size_t g = 0; g < plan_.groups.size(); ++g) {
      for (NodeId in : plan_.groups[g].inputs) {
        auto it = lives.find(Base(in).index);
        if (it != lives.end()) it->second.end = std::max(it->second.end, g);
      }
    }
    for (const auto& [value, g] : read_until_) {
      auto it = lives.find(value);
      if (it != lives.end()) it->second.end = std::max(it->second.end, g);
    }
    if (g_.result) {
      auto it = lives.find(Base(*g_.result).index);
      if (it != lives.end()) it->second.end = plan_.groups.size();
    }
    std::vector<Life> order;
    for (auto& [index, life] : lives) order.push_back(life);
    std::sort(order.begin(), order.end(), [](const Life& a, const Life& b) {
      return a.begin != b.begin ? a.begin < b.begin : a.value.index < b.value.index;
    });
    std::vector<std::size_t> free_after;  // per buffer: the last group that reads its current value
    for (const Life& life : order) {
      const Node& n = Get(life.value);
      std::int64_t chosen = -1;
      const bool own = own_buffer_.count(life.value.index) > 0;
      for (std::size_t b = 0; b < plan_.buffers.size() && !own; ++b) {
        const Node& held = Get(plan_.buffers[b].holds.back());
        if (free_after[b] < life.begin && Bytes(held) == Bytes(n)) {
          chosen = static_cast<std::int64_t>(b);
          break;
        }
      }
      if (chosen < 0) {
        plan_.buffers.push_back(Buffer{n.dtype, n.shape, {}});
        free_after.push_back(0);
        chosen = static_cast<std::int64_t>(plan_.buffers.size() - 1);
      }
      plan_.buffers[static_cast<std::size_t>(chosen)].holds.push_back(life.value);
      free_after[static_cast<std::size_t>(chosen)] = own ? plan_.groups.size() + 1 : life.end;
      plan_.buffer_of[life.value.index] = chosen;
    }
  }

  // Which of an attention's q, k and v (views) the kernel reads in place (InPlace; the views down to
  // the data marked in in_place_); the other views are copied, saying why.
  std::vector<InPlaceRead> ReadsInPlace(const AttentionMatch& match) {
    std::vector<InPlaceRead> out;
    for (NodeId x : {match.q, match.k, match.v}) {
      if (Get(x).kind != Kind::View) continue;
      if (stored_.count(x.index)) {
        // Its producer stores it dense (ChooseViews): the views join the kernel's group, which
        // reads the product's buffer as the view's dense tensor.
        for (NodeId v = x; Get(v).kind == Kind::View; v = Get(v).args.at(0)) in_place_.insert(v.index);
        continue;
      }
      NodeId user = x;
      for (NodeId m : match.members)
        for (NodeId a : Get(m).args)
          if (a == x) user = m;
      std::string not_in_place;
      std::optional<InPlaceRead> read = InPlace(x, user, not_in_place);
      if (read && !read->when.empty()) {
        read.reset();
        not_in_place = "; not read in place: its alignment is known only at run time";
      }
      if (!read) {
        copies_.emplace(x.index, kAttentionCopy + not_in_place);
        continue;
      }
      out.push_back(std::move(*read));
      for (NodeId v = x; Get(v).kind == Kind::View; v = Get(v).args.at(0)) in_place_.insert(v.index);
    }
    return out;
  }

  // An attention pattern whose sizes are known only at run time: its parts are planned as they
  // would be without it, and when they are consecutive groups (host scalars between them aside) the
  // first of them carries the kernel as their alternative (Group::alternative): the host launches
  // it when its `where` clause holds, else the parts. Their intermediate values (the scores, the
  // probabilities) live only in that branch, so each gets a buffer of its own.
  struct Alternative {
    AttentionMatch match;
    std::string why;
    std::vector<InPlaceRead> in_place;  // q, k, v read in place (ReadsInPlace)
  };
  void Alternatives() {
    for (const auto& [alt, why, in_place] : alternatives_) {
      std::set<std::uint32_t> members;
      for (NodeId m : alt.members) members.insert(m.index);
      // The views read in place are in the parts' groups, down to the data; so are those their
      // producer stores as they want (ChooseViews), which the parts read dense.
      for (const InPlaceRead& read : in_place)
        for (NodeId v = read.view; v != read.root; v = Get(v).args.at(0)) members.insert(v.index);
      for (NodeId x : {alt.q, alt.k, alt.v})
        if (stored_.count(x.index))
          for (NodeId v = x; Get(v).kind == Kind::View; v = Get(v).args.at(0)) members.insert(v.index);
      const NodeId out = alt.members.front();
      std::int64_t last = plan_.group_of[out.index];
      std::vector<std::size_t> parts;
      std::set<std::uint32_t> nodes;
      for (std::int64_t g = last; g >= 0 && nodes.size() < members.size(); --g) {
        const graph::Group& group = plan_.groups[static_cast<std::size_t>(g)];
        if (group.kind == GroupKind::Host && host_scalar_.count(group.nodes.back().index)) continue;
        parts.insert(parts.begin(), static_cast<std::size_t>(g));
        for (NodeId n : group.nodes) nodes.insert(n.index);
      }
      graph::Group* first = parts.empty() ? nullptr : &plan_.groups[parts.front()];
      if (nodes != members || !first || first->kind != GroupKind::Gemm || !first->alternative.empty()) {
        plan_.generic_attention.emplace_back(
            out, "not the stdlib " + alt.kernel + ": its parts are not consecutive kernels (a compiler limit)");
        continue;
      }
      first->alternative = alt.kernel;
      first->causal = alt.causal;
      first->alternative_last = static_cast<std::size_t>(last);
      first->why = why;
      first->in_place = in_place;
      for (std::size_t g : parts)
        if (static_cast<std::int64_t>(g) != last)
          for (NodeId o : plan_.groups[g].outputs) own_buffer_.insert(o.index);
      // The kernel reads q, k and v (or the data of those it reads in place) where the last part
      // runs: they live until then.
      for (NodeId x : {alt.q, alt.k, alt.v}) {
        NodeId data = Base(x);
        for (const InPlaceRead& read : in_place)
          if (read.view == x) data = read.root;
        if (stored_.count(x.index))
          for (data = x; Get(data).kind == Kind::View;) data = Get(data).args.at(0);
        read_until_[data.index] = static_cast<std::size_t>(last);
      }
    }
  }

  // A view read in place only where its alignment holds at run time (InPlaceRead::when) is also
  // copied by a group of its own, which the reading group launches where the alignment fails
  // (Group::copy_for): the view's data lives until the reader, and the copy, made in that branch
  // only, shares no buffer.
  void RunTimeReads() {
    for (std::size_t g = 0; g < plan_.groups.size(); ++g) {
      std::vector<std::pair<NodeId, NodeId>> reads;  // (view, root) read in place where `when` holds
      for (const InPlaceRead& read : plan_.groups[g].in_place)
        if (!read.when.empty()) reads.emplace_back(read.view, read.root);
      for (const DenseRead& read : plan_.groups[g].dense_reads)
        if (!read.when.empty()) reads.emplace_back(read.view, read.root);
      for (const auto& [view, root] : reads) {
        std::int64_t copy = plan_.group_of[view.index];
        if (copy < 0 || static_cast<std::size_t>(copy) >= g)
          WEFT_INTERNAL_ERROR("graph: a view read in place at run time without its copy before the reader");
        plan_.groups[static_cast<std::size_t>(copy)].copy_for = g;
        read_until_[root.index] = g;
        own_buffer_.insert(view.index);
      }
    }
  }

  static constexpr std::int64_t kLooseView = -2;  // a view read by several groups: in none

  const Graph& g_;
  FuseOptions options_;
  Plan plan_;
  std::vector<std::vector<NodeId>> users_;
  std::set<std::uint32_t> host_scalar_;
  std::set<std::int64_t> closed_;                           // gemm groups whose product has joined: no more epilogue
  std::map<std::uint32_t, std::string> why_not_attention_;  // an attention pattern's softmax: why no kernel
  std::set<std::uint32_t> in_place_;             // views a stdlib kernel reads in place (the chain down to the data)
  std::map<std::uint32_t, std::string> copies_;  // views a stdlib kernel reads dense: why
  std::vector<Alternative> alternatives_;        // attention kernels decided at run time
  std::set<std::uint32_t> own_buffer_;           // values that share no buffer
  std::map<std::uint32_t, const ViewChoice*> choice_of_;  // ChooseViews' choice per view (in plan_.views)
  std::set<std::uint32_t> attention_outs_;                // the `@` of attention patterns the stdlib kernel computes
  std::set<std::uint32_t> alternative_outs_;  // ... and of those at run-time sizes (the kernel or its parts)
  std::set<std::uint32_t> stored_;  // views over products that store in their layout (the chain down to the data)
  std::map<std::uint32_t, weft::Result<InPlaceRead, std::string>> read_of_;  // ChooseViews' ReadInPlace per view
  std::map<std::uint32_t, std::size_t> read_until_;  // values read by a group its inputs do not say
};

}  // namespace

std::size_t Plan::Kernels() const {
  std::size_t n = 0;
  for (const Group& g : groups) n += g.kind == GroupKind::Host ? 0 : 1;
  return n;
}

std::vector<Diagnostic> SlowPaths(const Graph& graph, const Plan& plan) {
  // One warning a place: a function inlined at several calls has its products at the same spans,
  // and an attention left as its parts is one warning (W0901), not one a product.
  std::vector<Diagnostic> out;
  std::set<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>> seen;  // spans already warned
  auto add = [&](Diagnostic d) {
    if (seen.insert({d.span.file.index, d.span.begin, d.span.end}).second) out.push_back(std::move(d));
  };
  for (const auto& [id, why] : plan.generic_attention)
    add(MakeDiagnostic(DiagnosticKind::GenericAttention, graph.Get(id).span, why));
  std::set<std::uint32_t> attention_products;  // the `@` of each such pattern and its Q K^T
  for (const auto& [id, why] : plan.generic_attention) {
    attention_products.insert(id.index);
    for (NodeId n = graph.Get(id).args[0]; graph.Get(n).kind != Kind::MatMul && !graph.Get(n).args.empty();)
      n = graph.Get(n).args[0], attention_products.insert(n.index);
  }
  // An attention's parts with the stdlib kernel as their run-time alternative: not warned about.
  std::size_t parts_end = 0;  // one past the last part of the latest such attention
  for (std::size_t g = 0; g < plan.groups.size(); ++g) {
    const Group& group = plan.groups[g];
    if (!group.alternative.empty()) parts_end = group.alternative_last + 1;
    if (g < parts_end || group.kind != GroupKind::Gemm || !group.kernel.empty()) continue;
    for (NodeId id : group.nodes) {
      const Node& n = graph.Get(id);
      if (n.kind != Kind::MatMul || attention_products.count(id.index)) continue;
      Dtype d = graph.Get(n.args[0]).dtype;
      if (d == Dtype::BF16 || d == Dtype::F16 || d == Dtype::F8E4M3 || d == Dtype::F8E5M2)
        add(MakeDiagnostic(DiagnosticKind::GenericProduct, n.span, std::string(Spelling(d)),
                           group.why.empty() ? "no stdlib gemm was tried" : group.why));
    }
  }
  return out;
}

Plan Fuse(const Graph& graph, const FuseOptions& options) {
  return Fuser(graph, options).Run();
}

}  // namespace weft::graph
