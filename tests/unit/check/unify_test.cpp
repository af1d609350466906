// The unifier and broadcasting (compiler/check/unify.h): dims, shapes with shape variables,
// types, and language.md's broadcasting rules, with a property test over generated shapes.
#include <catch2/catch.hpp>

#include <random>

#include "check/unify.h"
#include "core/type_printer.h"

namespace weft::check {
namespace {

struct Fixture {
  VarStore vars;
  Unifier unifier{vars};
  SizeVarId Size(const char* name, VarKind kind = VarKind::Flexible) { return vars.NewSizeVar(kind, name); }
  std::string Show(const Shape& s) { return TypePrinter(vars).Print(s); }
  std::string Show(const Dim& d) { return TypePrinter(vars).Print(d); }
};

Dim V(SizeVarId v) {
  return Dim::Var(v);
}
Dim C(std::int64_t c) {
  return Dim::Constant(c);
}

TEST_CASE("a flexible size is bound to the other side", "[unify]") {
  Fixture f;
  SizeVarId n = f.Size("n"), m = f.Size("m");
  CHECK_FALSE(f.unifier.UnifyDim(V(n), *(core::Result<Dim>(V(m)) * 2 + 1)));
  CHECK(f.Show(V(n)) == "2*m + 1");
  CHECK(f.unifier.TakeDeferred().empty());
}

TEST_CASE("an equation linear in one flexible size is solved for it", "[unify]") {
  Fixture f;
  SizeVarId n = f.Size("n", VarKind::Rigid), m = f.Size("m");
  CHECK_FALSE(f.unifier.UnifyDim(*(core::Result<Dim>(V(m)) + 1), *(core::Result<Dim>(V(n)) * 2)));
  CHECK(f.Show(V(m)) == "2*n - 1");
}

TEST_CASE("rigid sizes are never bound and undecided equations are deferred", "[unify]") {
  Fixture f;
  SizeVarId n = f.Size("n", VarKind::Rigid), m = f.Size("m", VarKind::Rigid);
  CHECK_FALSE(f.unifier.UnifyDim(V(n), V(m)));
  auto deferred = f.unifier.TakeDeferred();
  REQUIRE(deferred.size() == 1);
  CHECK(f.Show(deferred[0].lhs) == "n");
  CHECK(f.Show(deferred[0].rhs) == "m");
  CHECK(f.Show(V(n)) == "n");
  // Different constants are a mismatch at once.
  auto mismatch = f.unifier.UnifyDim(C(4), C(5));
  REQUIRE(mismatch);
  CHECK(mismatch->message == "`4` and `5` differ");
}

TEST_CASE("a shape variable takes the middle of a known shape", "[unify]") {
  Fixture f;
  ShapeVarId s = f.vars.NewShapeVar(VarKind::Flexible, "s");
  SizeVarId a = f.Size("a"), b = f.Size("b"), c = f.Size("c"), n = f.Size("n");
  CHECK_FALSE(f.unifier.UnifyShape(Shape{{}, s, {V(n)}}, Shape::Of({V(a), V(b), V(c)})));
  CHECK(f.Show(Shape::Spread(s)) == "[a, b]");
  CHECK(f.Show(V(n)) == "c");
  // Too few dims for the fixed part: a rank mismatch.
  ShapeVarId t = f.vars.NewShapeVar(VarKind::Flexible, "t");
  auto m = f.unifier.UnifyShape(Shape{{V(a)}, t, {V(b)}}, Shape::Of({V(c)}));
  REQUIRE(m);
  CHECK(m->kind == Mismatch::Kind::Rank);
}

TEST_CASE("two shape variables unify through a fresh one", "[unify]") {
  Fixture f;
  ShapeVarId s = f.vars.NewShapeVar(VarKind::Flexible, "s"), t = f.vars.NewShapeVar(VarKind::Flexible, "t");
  SizeVarId x = f.Size("x"), y = f.Size("y");
  // [x, ..s] ~ [..t, y]: both sides become [x, ..u, y].
  CHECK_FALSE(f.unifier.UnifyShape(Shape{{V(x)}, s, {}}, Shape{{}, t, {V(y)}}));
  Shape left = f.vars.Resolve(Shape{{V(x)}, s, {}});
  Shape right = f.vars.Resolve(Shape{{}, t, {V(y)}});
  CHECK(f.Show(left) == f.Show(right));
  CHECK(left.FixedRank() == 2);
  CHECK(left.spread.has_value());
}

TEST_CASE("a rigid shape variable is not bound", "[unify]") {
  Fixture f;
  ShapeVarId s = f.vars.NewShapeVar(VarKind::Rigid, "s");
  auto m = f.unifier.UnifyShape(Shape::Spread(s), Shape::Of({C(3)}));
  REQUIRE(m);
  CHECK(m->kind == Mismatch::Kind::Rigid);
}

TEST_CASE("types unify structurally and the occurs check holds", "[unify]") {
  Fixture f;
  TypeVarId a = f.vars.NewTypeVar();
  TypeRef fn = MakeFunction(MakeVar(a), MakeScalar(Dtype::F32));
  auto m = f.unifier.Unify(MakeVar(a), fn);
  REQUIRE(m);
  CHECK(m->kind == Mismatch::Kind::Occurs);
  ElemVarId t = f.vars.NewElemVar(ElemClass::Float);
  auto class_mismatch = f.unifier.UnifyElem(Elem{t}, Elem{Dtype::I32});
  REQUIRE(class_mismatch);
  CHECK(class_mismatch->message == "`i32` is not a `float` type");
  CHECK_FALSE(f.unifier.UnifyElem(Elem{t}, Elem{Dtype::BF16}));
  CHECK(TypePrinter(f.vars).Print(MakeTensor(Elem{t}, Shape{})) == "bf16");
}

TEST_CASE("broadcasting follows language.md", "[broadcast]") {
  Fixture f;
  ShapeVarId s = f.vars.NewShapeVar(VarKind::Rigid, "s");
  SizeVarId n = f.Size("n", VarKind::Rigid), b = f.Size("b", VarKind::Rigid);
  // x - expand (max x) with x : [..s, n]
  Broadcast r = BroadcastShapes(f.unifier, f.vars, Shape{{}, s, {V(n)}}, Shape{{}, s, {C(1)}});
  REQUIRE(r.status == Broadcast::Status::Ok);
  CHECK(f.Show(r.shape) == "[..s, n]");
  // [b, n] + [n]
  r = BroadcastShapes(f.unifier, f.vars, Shape::Of({V(b), V(n)}), Shape::Of({V(n)}));
  REQUIRE(r.status == Broadcast::Status::Ok);
  CHECK(f.Show(r.shape) == "[b, n]");
  // a scalar broadcasts to anything
  r = BroadcastShapes(f.unifier, f.vars, Shape{}, Shape{{}, s, {}});
  CHECK(f.Show(r.shape) == "[..s]");
  // [..s] against [n]: the alignment is undecided
  r = BroadcastShapes(f.unifier, f.vars, Shape{{}, s, {}}, Shape::Of({V(n)}));
  CHECK(r.status == Broadcast::Status::Ambiguous);
  // [4] against [5]: a mismatch
  r = BroadcastShapes(f.unifier, f.vars, Shape::Of({C(4)}), Shape::Of({C(5)}));
  CHECK(r.status == Broadcast::Status::Mismatch);
}

TEST_CASE("unifying a spread pattern with a known shape reproduces it", "[unify][property]") {
  std::mt19937 random(7);
  for (int trial = 0; trial < 300; ++trial) {
    Fixture f;
    int rank = static_cast<int>(random() % 6);
    std::vector<Dim> dims;
    for (int i = 0; i < rank; ++i) {
      dims.push_back(random() % 2 ? C(static_cast<std::int64_t>(random() % 9 + 1))
                                  : V(f.Size(("d" + std::to_string(i)).c_str(), VarKind::Rigid)));
    }
    // A pattern with k leading and j trailing flexible sizes around a shape variable.
    int k = rank ? static_cast<int>(random() % (rank + 1)) : 0;
    int j = rank - k ? static_cast<int>(random() % (rank - k + 1)) : 0;
    Shape pattern;
    for (int i = 0; i < k; ++i) pattern.before.push_back(V(f.Size("p")));
    pattern.spread = f.vars.NewShapeVar();
    for (int i = 0; i < j; ++i) pattern.after.push_back(V(f.Size("q")));
    INFO("trial " << trial);
    REQUIRE_FALSE(f.unifier.UnifyShape(pattern, Shape::Of(dims)));
    CHECK(f.Show(pattern) == f.Show(Shape::Of(dims)));
    CHECK(f.unifier.TakeDeferred().empty());
  }
}

}  // namespace
}  // namespace weft::check
