// Host code generation; host.h has the steps, docs/building.md what is compiled and refused.
//
// The lowering mirrors the interpreter's evaluator (interp/interpreter.cpp) one node at a time, so
// that an executable means what `weft run --cpu` computes: left-to-right evaluation, the same
// substitutions for polymorphic definitions (element types fixed at compile time, sizes as i64
// values known at run time), the same run-time checks with the same wording. What the interpreter
// computes, the generated code asks the runtime to compute (runtime.h, "Compiled programs"), so
// `random`, `print`, `.npy` files and their messages are the interpreter's own code. The host code
// is straight-line: a failed check branches to a block that ends the program (weft_failf), so every
// value dominates every later use and compile-time environments can hold IR values.
#include "codegen/host.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/Triple.h>

#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <variant>

#include "base/overloaded.h"
#include "codegen/random.h"
#include "core/type_printer.h"
#include "tile/lower.h"
#include "weft/numerics.h"

namespace weft::codegen {

HostModule::HostModule() = default;
HostModule::HostModule(HostModule&&) noexcept = default;
HostModule& HostModule::operator=(HostModule&&) noexcept = default;
HostModule::~HostModule() = default;

namespace {

namespace ce = core::expr;
using core::Dim;
using core::Elem;
using core::SizeVarId;
using core::TensorType;
using core::TypeRef;
using core::VarStore;

// What the compile-time evaluator produces: a value of `main` whose parts are IR values.
struct HValue;
using HRef = std::shared_ptr<const HValue>;

struct HTensor {
  Dtype dtype = Dtype::F32;
  llvm::Value* handle = nullptr;   // weft_tensor*
  std::vector<llvm::Value*> dims;  // i64 each
};
struct HString {
  llvm::Value* pointer = nullptr;  // const char*
};
struct HShape {
  std::vector<llvm::Value*> dims;  // a built-in's shape argument
};
using HTuple = std::vector<HRef>;

// What the type variables of the code being lowered stand for (keyed by variable index): element
// types at compile time, sizes and shape variables as run-time i64 values.
struct HSubst {
  std::map<std::uint32_t, Dtype> elems;
  std::map<std::uint32_t, llvm::Value*> sizes;
  std::map<std::uint32_t, std::vector<llvm::Value*>> shapes;
};

struct HEnv;
struct HFunction {
  enum class Kind { Builtin, Lambda, Def };
  Kind kind = Kind::Builtin;
  std::string builtin;
  TypeRef type;
  const ce::Lambda* lambda = nullptr;
  std::shared_ptr<const HEnv> env;
  std::size_t def_index = 0;
  HSubst subst;
  std::size_t arity = 0;
  std::vector<HRef> args;
  Span span;
};

struct HValue {
  std::variant<HTensor, HString, HShape, HTuple, HFunction> node;
};

template <typename T>
HRef Make(T&& node) {
  return std::make_shared<const HValue>(HValue{std::forward<T>(node)});
}

struct HEnv {
  std::string name;
  HRef value;
  TypeRef generic;
  std::shared_ptr<const HEnv> next;
};

struct HFrame {
  HSubst subst;
  std::shared_ptr<const HEnv> env;
  std::size_t def_index = 0;
  std::vector<core::RuntimeCheck> pending;
  bool bound_new = false;
};

// A construct `weft build` does not compile: the lowering stops at the first.
struct Refusal {
  Diagnostic diagnostic;
};
struct Refusals {
  std::vector<Diagnostic> diagnostics;
};

const std::set<std::string, std::less<>>& HostBuiltins() {
  static const std::set<std::string, std::less<>> names = {"random", "print", "save", "load", "arg", "time"};
  return names;
}

std::size_t HostBuiltinArity(std::string_view name) {
  if (name == "save" || name == "random") return 2;
  return 1;
}

class Lowering {
 public:
  Lowering(const core::Module& module, const VarStore& vars, const SourceManager& sources, HostModule& out,
           const HostOptions& options)
      : module_(module),
        vars_(vars),
        sources_(sources),
        out_(out),
        options_(options),
        ctx_(*out.context),
        m_(*out.module),
        b_(ctx_) {}

  void LowerMainDef(const core::Def& main, std::size_t index);

 private:
  // ---- Types and sizes ----
  Dtype ElemOf(const Elem& elem, const HFrame& frame) const;
  llvm::Value* TryDim(const Dim& dim, const HSubst& subst);
  void MatchTypes(const TypeRef& pattern, const TypeRef& concrete, const HFrame& caller, HSubst& out);
  void BindValue(const TypeRef& type, const HValue& value, HFrame& frame, Span span);

  // ---- Expressions ----
  HRef Eval(core::ExprId id, HFrame& frame);
  HRef EvalNode(const core::Expr& e, HFrame& frame);
  HRef Bind(core::PatternId pattern, const HRef& value, HFrame& frame);
  HRef Call(const HRef& callee, const HRef& arg, Span span);
  HRef CallBuiltin(const HFunction& fn, Span span);
  // `-3`, `-0.5`: `negate` of a literal, folded to a literal (null for any other application).
  HRef NegativeLiteral(const core::Expr& e, const core::Expr& callee, const ce::Apply& apply, HFrame& frame);
  // A literal's bits as a `d` scalar holds them (IntLitBits is EvalNode's IntLit case).
  static std::uint64_t IntLitBits(const ce::IntLit& lit, Dtype d);
  static std::uint64_t FloatLitBits(const ce::FloatLit& lit, Dtype d);
  HRef EvaluateDef(std::size_t index, Span span);
  HRef RunKernel(const HFunction& fn, Span span);
  std::optional<std::size_t> FindDef(std::string_view name, std::size_t before) const;
  std::size_t Arity(const core::Def& def) const;
  void Check(const core::RuntimeCheck& check, HFrame& frame, bool defer);
  void RetryChecks(HFrame& frame);
  void Write(const HValue& value);

  // ---- IR helpers ----
  [[noreturn]] void Refuse(DiagnosticKind kind, Span span, const std::string& what);
  llvm::FunctionCallee Runtime(const char* name, llvm::Type* result, std::vector<llvm::Type*> params,
                               bool vararg = false);
  llvm::Value* I64(std::int64_t v) { return b_.getInt64(static_cast<std::uint64_t>(v)); }
  llvm::Value* I32(std::int64_t v) { return b_.getInt32(static_cast<std::uint32_t>(v)); }
  llvm::Type* Ptr() { return b_.getPtrTy(); }
  llvm::Value* Text(const std::string& text);
  llvm::Value* EmitDim(const Dim& dim, const std::function<llvm::Value*(SizeVarId)>& var);
  llvm::Value* Array(llvm::Type* element, const std::vector<llvm::Value*>& values);
  HRef Scalar(Dtype dtype, llvm::Value* bits);
  // Ends the program with `format` (weft_failf) unless `holds`.
  void Require(llvm::Value* holds, const std::string& format, const std::vector<llvm::Value*>& args);
  llvm::Value* Compare(core::RelOp op, llvm::Value* lhs, llvm::Value* rhs);
  std::string Where(Span span) const;                  // "file.weft:3:7: "
  static std::string Escape(const std::string& text);  // % -> %% for a printf format
  const HTensor& TensorOf(const HRef& value, Span span);

  const core::Module& module_;
  const VarStore& vars_;
  const SourceManager& sources_;
  HostModule& out_;
  HostOptions options_;
  llvm::LLVMContext& ctx_;
  llvm::Module& m_;
  llvm::IRBuilder<> b_;
  llvm::Function* main_ = nullptr;
  std::map<std::size_t, HRef> cache_;                          // values of parameterless definitions
  std::map<std::size_t, std::size_t> kernel_index_;            // def index -> out_.kernels index
  std::vector<llvm::GlobalVariable*> descriptors_;             // per out_.kernels entry
  std::map<Dtype, llvm::GlobalVariable*> random_descriptors_;  // per out_.randoms entry
  std::map<std::string, llvm::Constant*> texts_;
};

// ---- IR helpers ----

void Lowering::Refuse(DiagnosticKind kind, Span span, const std::string& what) {
  throw Refusal{MakeDiagnostic(kind, span, what)};
}

llvm::FunctionCallee Lowering::Runtime(const char* name, llvm::Type* result, std::vector<llvm::Type*> params,
                                       bool vararg) {
  return m_.getOrInsertFunction(name, llvm::FunctionType::get(result, params, vararg));
}

llvm::Value* Lowering::Text(const std::string& text) {
  auto [it, fresh] = texts_.emplace(text, nullptr);
  if (fresh) it->second = b_.CreateGlobalStringPtr(text, "weft.text", 0, &m_);
  return it->second;
}

llvm::Value* Lowering::Array(llvm::Type* element, const std::vector<llvm::Value*>& values) {
  // Allocas live in the entry block, so that a `time` around a call does not grow the stack.
  llvm::IRBuilder<> entry(&main_->getEntryBlock(), main_->getEntryBlock().begin());
  llvm::Value* array =
      entry.CreateAlloca(element, I64(static_cast<std::int64_t>(std::max<std::size_t>(values.size(), 1))));
  for (std::size_t i = 0; i < values.size(); ++i) b_.CreateStore(values[i], b_.CreateConstGEP1_64(element, array, i));
  return array;
}

HRef Lowering::Scalar(Dtype dtype, llvm::Value* bits) {
  auto fn = Runtime("weft_program_scalar", Ptr(), {b_.getInt32Ty(), b_.getInt64Ty()});
  HTensor t;
  t.dtype = dtype;
  t.handle = b_.CreateCall(fn, {I32(static_cast<int>(dtype)), bits});
  return Make(std::move(t));
}

std::string Lowering::Where(Span span) const {
  if (!span.valid()) return "";
  const SourceBuffer& buffer = sources_.Get(span.file);
  LineCol at = buffer.Locate(span.begin);
  return std::string(buffer.name()) + ":" + std::to_string(at.line) + ":" + std::to_string(at.column) + ": ";
}

std::string Lowering::Escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '%') out += '%';
    out += c;
  }
  return out;
}

void Lowering::Require(llvm::Value* holds, const std::string& format, const std::vector<llvm::Value*>& args) {
  if (auto* c = llvm::dyn_cast<llvm::ConstantInt>(holds); c && c->isOne()) return;
  llvm::BasicBlock* fail = llvm::BasicBlock::Create(ctx_, "check.failed", main_);
  llvm::BasicBlock* ok = llvm::BasicBlock::Create(ctx_, "check.ok", main_);
  b_.CreateCondBr(holds, ok, fail);
  b_.SetInsertPoint(fail);
  std::vector<llvm::Value*> call_args = {Text(format)};
  call_args.insert(call_args.end(), args.begin(), args.end());
  auto* call = b_.CreateCall(Runtime("weft_failf", b_.getVoidTy(), {Ptr()}, true), call_args);
  call->setDoesNotReturn();
  b_.CreateUnreachable();
  b_.SetInsertPoint(ok);
}

llvm::Value* Lowering::Compare(core::RelOp op, llvm::Value* lhs, llvm::Value* rhs) {
  switch (op) {
    case core::RelOp::kEq:
      return b_.CreateICmpEQ(lhs, rhs);
    case core::RelOp::kNe:
      return b_.CreateICmpNE(lhs, rhs);
    case core::RelOp::kLt:
      return b_.CreateICmpSLT(lhs, rhs);
    case core::RelOp::kLe:
      return b_.CreateICmpSLE(lhs, rhs);
    case core::RelOp::kGt:
      return b_.CreateICmpSGT(lhs, rhs);
    case core::RelOp::kGe:
      return b_.CreateICmpSGE(lhs, rhs);
  }
  return b_.getFalse();
}

// A dim as i64 arithmetic: terms of coefficient times powers of atoms; `p / c` and `p % c` are
// floor division and floor modulo (dim.h), also for negative `p`.
llvm::Value* Lowering::EmitDim(const Dim& dim, const std::function<llvm::Value*(SizeVarId)>& var) {
  llvm::Value* sum = I64(0);
  for (const core::Term& term : dim.terms()) {
    llvm::Value* product = I64(term.coefficient);
    for (const core::Factor& factor : term.monomial) {
      llvm::Value* atom = nullptr;
      if (factor.atom.kind == core::AtomKind::kVar) {
        atom = var(factor.atom.var);
      } else {
        llvm::Value* p = EmitDim(*factor.atom.operand, var);
        if (!p) return nullptr;
        llvm::Value* c = I64(factor.atom.divisor);
        llvm::Value* q = b_.CreateSDiv(p, c);
        llvm::Value* r = b_.CreateSRem(p, c);
        llvm::Value* negative = b_.CreateICmpSLT(r, I64(0));
        atom = factor.atom.kind == core::AtomKind::kDiv ? b_.CreateSelect(negative, b_.CreateSub(q, I64(1)), q)
                                                        : b_.CreateSelect(negative, b_.CreateAdd(r, c), r);
      }
      if (!atom) return nullptr;
      for (std::int32_t i = 0; i < factor.power; ++i) product = b_.CreateMul(product, atom);
    }
    sum = b_.CreateAdd(sum, product);
  }
  return sum;
}

const HTensor& Lowering::TensorOf(const HRef& value, Span span) {
  const auto* t = std::get_if<HTensor>(&value->node);
  if (!t) WEFT_INTERNAL_ERROR("host codegen: a tensor was expected at " + Where(span));
  return *t;
}

// ---- Types and sizes (interpreter.cpp's Frame and MatchTypes, at compile time) ----

Dtype Lowering::ElemOf(const Elem& elem, const HFrame& frame) const {
  Elem e = vars_.Resolve(elem);
  if (!e.is_var()) return e.dtype();
  if (auto it = frame.subst.elems.find(e.var().index); it != frame.subst.elems.end()) return it->second;
  return core::DefaultDtype(vars_.info(e.var()).cls);
}

llvm::Value* Lowering::TryDim(const Dim& dim, const HSubst& subst) {
  Dim d = vars_.Resolve(dim);
  for (SizeVarId v : d.Vars())
    if (!subst.sizes.count(v.index)) return nullptr;
  return EmitDim(d, [&](SizeVarId v) { return subst.sizes.at(v.index); });
}

void Lowering::MatchTypes(const TypeRef& pattern, const TypeRef& concrete, const HFrame& caller, HSubst& out) {
  TypeRef p = vars_.Resolve(pattern), c = vars_.Resolve(concrete);
  if (const auto* pt = std::get_if<TensorType>(&p->node)) {
    const auto* ct = std::get_if<TensorType>(&c->node);
    if (!ct) return;
    Elem pe = vars_.Resolve(pt->elem);
    if (pe.is_var() && !out.elems.count(pe.var().index)) {
      Elem ce = vars_.Resolve(ct->elem);
      if (!ce.is_var() || caller.subst.elems.count(ce.var().index)) out.elems[pe.var().index] = ElemOf(ce, caller);
    }
    core::Shape ps = vars_.Resolve(pt->shape), cs = vars_.Resolve(ct->shape);
    if (ps.Known() && cs.Known() && ps.before.size() == cs.before.size()) {
      for (std::size_t i = 0; i < ps.before.size(); ++i) {
        std::optional<SizeVarId> v = ps.before[i].AsVar();
        if (!v || out.sizes.count(v->index)) continue;
        if (llvm::Value* value = TryDim(cs.before[i], caller.subst)) out.sizes[v->index] = value;
      }
    }
  } else if (const auto* pf = std::get_if<core::FunctionType>(&p->node)) {
    if (const auto* cf = std::get_if<core::FunctionType>(&c->node)) {
      MatchTypes(pf->param, cf->param, caller, out);
      MatchTypes(pf->result, cf->result, caller, out);
    }
  } else if (const auto* ptu = std::get_if<core::TupleType>(&p->node)) {
    if (const auto* ctu = std::get_if<core::TupleType>(&c->node)) {
      for (std::size_t i = 0; i < ptu->elements.size() && i < ctu->elements.size(); ++i)
        MatchTypes(ptu->elements[i], ctu->elements[i], caller, out);
    }
  }
}

// interpreter.cpp's MatchValue: element types, sizes and shapes of `type` from a value of it. The
// checker proved the dtypes and ranks; a size already known is compared in generated code.
void Lowering::BindValue(const TypeRef& type, const HValue& value, HFrame& frame, Span span) {
  TypeRef t = vars_.Resolve(type);
  if (const auto* tensor_type = std::get_if<TensorType>(&t->node)) {
    const auto* tensor = std::get_if<HTensor>(&value.node);
    if (!tensor) return;
    Elem e = vars_.Resolve(tensor_type->elem);
    if (e.is_var()) frame.subst.elems.emplace(e.var().index, tensor->dtype);
    core::Shape s = vars_.Resolve(tensor_type->shape);
    const std::vector<llvm::Value*>& dims = tensor->dims;
    std::size_t fixed = s.FixedRank();
    if (s.Known() ? dims.size() != fixed : dims.size() < fixed) return;  // the checker's business
    auto bind = [&](const Dim& d, std::size_t axis) {
      Dim r = vars_.Resolve(d);
      if (std::optional<SizeVarId> v = r.AsVar(); v && !frame.subst.sizes.count(v->index)) {
        frame.subst.sizes[v->index] = dims[axis];
        frame.bound_new = true;
        return;
      }
      if (llvm::Value* expected = TryDim(r, frame.subst)) {
        Require(b_.CreateICmpEQ(dims[axis], expected),
                Escape(Where(span)) + "the value bound here does not have its type: axis " + std::to_string(axis) +
                    " is %lld, not %lld (`" + Escape(core::TypePrinter(vars_).Print(r)) + "`)",
                {dims[axis], expected});
      }
    };
    for (std::size_t i = 0; i < s.before.size(); ++i) bind(s.before[i], i);
    std::size_t tail = dims.size() - s.after.size();
    for (std::size_t i = 0; i < s.after.size(); ++i) bind(s.after[i], tail + i);
    if (s.spread && !frame.subst.shapes.count(s.spread->index)) {
      frame.subst.shapes[s.spread->index] =
          std::vector<llvm::Value*>(dims.begin() + static_cast<std::ptrdiff_t>(s.before.size()),
                                    dims.begin() + static_cast<std::ptrdiff_t>(tail));
    }
    return;
  }
  if (const auto* tuple_type = std::get_if<core::TupleType>(&t->node)) {
    const auto* tuple = std::get_if<HTuple>(&value.node);
    if (!tuple || tuple->size() != tuple_type->elements.size()) return;
    for (std::size_t i = 0; i < tuple->size(); ++i) BindValue(tuple_type->elements[i], *(*tuple)[i], frame, span);
  }
}

// ---- Run-time checks (interpreter.cpp's Check) ----

void Lowering::Check(const core::RuntimeCheck& check, HFrame& frame, bool defer) {
  llvm::Value* lhs = TryDim(check.fact.lhs, frame.subst);
  llvm::Value* rhs = TryDim(check.fact.rhs, frame.subst);
  if (!lhs || !rhs) {
    if (defer) frame.pending.push_back(check);
    return;
  }
  core::TypePrinter printer(vars_);
  std::string fact = printer.Print(check.fact.lhs) + " " + std::string(Spelling(check.fact.relation)) + " " +
                     printer.Print(check.fact.rhs);
  std::string values;
  std::vector<llvm::Value*> args;
  core::FreeVars free;
  CollectFreeVars(vars_, vars_.Resolve(check.fact.lhs), free);
  CollectFreeVars(vars_, vars_.Resolve(check.fact.rhs), free);
  for (SizeVarId v : free.sizes) {
    values += (values.empty() ? " with " : ", ") + Escape(printer.Print(Dim::Var(v))) + " = %lld";
    args.push_back(frame.subst.sizes.at(v.index));
  }
  Require(Compare(check.fact.relation, lhs, rhs),
          Escape(Where(check.fact.span)) + "run-time check failed: " + Escape(check.what) + ": `" + Escape(fact) +
              "` is false" + values,
          args);
}

void Lowering::RetryChecks(HFrame& frame) {
  if (!frame.bound_new || frame.pending.empty()) return;
  frame.bound_new = false;
  std::vector<core::RuntimeCheck> pending = std::exchange(frame.pending, {});
  for (const core::RuntimeCheck& c : pending) Check(c, frame, true);
}

// ---- Expressions ----

HRef Lowering::Eval(core::ExprId id, HFrame& frame) {
  const core::Expr& e = module_.Get(id);
  if (!std::holds_alternative<ce::Apply>(e.node)) {
    for (const core::RuntimeCheck& c : e.checks) Check(c, frame, true);
  }
  return EvalNode(e, frame);
}

HRef Lowering::Bind(core::PatternId id, const HRef& value, HFrame& frame) {
  const core::Pattern& p = module_.Get(id);
  BindValue(p.type, *value, frame, p.span);
  RetryChecks(frame);
  if (const auto* name = std::get_if<core::pattern::Name>(&p.node)) {
    bool generic = !(p.quantified.elems.empty() && p.quantified.sizes.empty() && p.quantified.shapes.empty());
    frame.env = std::make_shared<const HEnv>(HEnv{name->name, value, generic ? p.type : nullptr, frame.env});
  } else if (const auto* tuple = std::get_if<core::pattern::Tuple>(&p.node)) {
    const auto* values = std::get_if<HTuple>(&value->node);
    if (!values || values->size() != tuple->elements.size())
      WEFT_INTERNAL_ERROR("host codegen: a tuple pattern bound to a value that is not such a tuple");
    for (std::size_t i = 0; i < values->size(); ++i) Bind(tuple->elements[i], (*values)[i], frame);
  }
  return value;
}

HRef Lowering::EvalNode(const core::Expr& e, HFrame& frame) {
  auto refuse_array = [&](const std::string& what) -> HRef { Refuse(DiagnosticKind::HostArrayTier, e.span, what); };
  return std::visit(
      Overloaded{
          [&](const ce::IntLit& lit) -> HRef {
            Dtype d = ElemOf(std::get<TensorType>(vars_.Resolve(e.type)->node).elem, frame);
            std::uint64_t bits = runtime::IsFloatDtype(d) ? runtime::EncodeFloatFromU64(d, lit.value) : lit.value;
            if (!runtime::IsFloatDtype(d) && weft::Bits(d) < 64) bits &= (std::uint64_t{1} << weft::Bits(d)) - 1;
            return Scalar(d, I64(static_cast<std::int64_t>(bits)));
          },
          [&](const ce::FloatLit& lit) -> HRef {
            Dtype d = ElemOf(std::get<TensorType>(vars_.Resolve(e.type)->node).elem, frame);
            std::uint64_t bits = FloatLitBits(lit, d);
            return Scalar(d, I64(static_cast<std::int64_t>(bits)));
          },
          [&](const ce::BoolLit& lit) -> HRef { return Scalar(Dtype::Bool, I64(lit.value ? 1 : 0)); },
          [&](const ce::StringLit& lit) -> HRef { return Make(HString{Text(lit.value)}); },
          [&](const ce::Local& local) -> HRef {
            for (const HEnv* env = frame.env.get(); env; env = env->next.get()) {
              if (env->name != local.name) continue;
              if (!env->generic) return env->value;
              const auto* fn = std::get_if<HFunction>(&env->value->node);
              if (!fn) return env->value;
              HFunction copy = *fn;
              MatchTypes(env->generic, e.type, frame, copy.subst);
              return Make(std::move(copy));
            }
            WEFT_INTERNAL_ERROR("host codegen: `" + local.name + "` is not bound");
          },
          [&](const ce::Global& global) -> HRef {
            std::optional<std::size_t> index = FindDef(global.name, frame.def_index);
            if (!index) WEFT_INTERNAL_ERROR("host codegen: no definition `" + global.name + "`");
            const core::Def& def = module_.defs()[*index];
            if (def.params.empty()) return EvaluateDef(*index, e.span);
            if (!def.body) WEFT_INTERNAL_ERROR("host codegen: `" + global.name + "` has no body");
            HFunction fn;
            fn.kind = HFunction::Kind::Def;
            fn.def_index = *index;
            fn.arity = Arity(def);
            fn.span = e.span;
            MatchTypes(def.scheme.type, e.type, frame, fn.subst);
            if (fn.arity == 0) return RunKernel(fn, e.span);  // a kernel without inputs
            return Make(std::move(fn));
          },
          [&](const ce::Builtin& builtin) -> HRef {
            if (!HostBuiltins().count(builtin.name)) return refuse_array("`" + builtin.name + "`");
            HFunction fn;
            fn.kind = HFunction::Kind::Builtin;
            fn.builtin = builtin.name;
            fn.arity = HostBuiltinArity(builtin.name);
            fn.type = e.type;
            fn.subst = frame.subst;
            fn.span = e.span;
            return Make(std::move(fn));
          },
          [&](const ce::SizeValue& size) -> HRef {
            llvm::Value* v = TryDim(size.dim, frame.subst);
            if (!v)
              WEFT_INTERNAL_ERROR("host codegen: the size `" + core::TypePrinter(vars_).Print(size.dim) +
                                  "` is not known at " + Where(e.span));
            return Scalar(Dtype::I64, v);
          },
          [&](const ce::ShapeArg& shape) -> HRef {
            HShape s;
            for (const Dim& d : shape.dims) {
              llvm::Value* v = TryDim(d, frame.subst);
              if (!v)
                WEFT_INTERNAL_ERROR("host codegen: the size `" + core::TypePrinter(vars_).Print(d) +
                                    "` is not known at " + Where(e.span));
              s.dims.push_back(v);
            }
            return Make(std::move(s));
          },
          [&](const ce::Apply& apply) -> HRef {
            // A built-in callee is looked at after its arguments (it has no effects), so that a
            // refusal points at the operation that would run first: `sum` in `max (sum c)`.
            const core::Expr& callee = module_.Get(apply.callee);
            bool builtin = std::holds_alternative<ce::Builtin>(callee.node);
            if (HRef literal = NegativeLiteral(e, callee, apply, frame)) return literal;
            HRef f = builtin ? nullptr : EvalNode(callee, frame);
            std::vector<HRef> args;
            for (core::ExprId a : apply.args) args.push_back(Eval(a, frame));
            if (builtin) f = EvalNode(callee, frame);
            if (!callee.checks.empty() || !e.checks.empty()) {
              for (std::size_t i = 0; i < args.size(); ++i)
                BindValue(module_.Get(apply.args[i]).type, *args[i], frame, module_.Get(apply.args[i]).span);
              for (const std::vector<core::RuntimeCheck>* checks : {&callee.checks, &e.checks})
                for (const core::RuntimeCheck& c : *checks) Check(c, frame, true);
            }
            HRef fn = f;
            for (const HRef& arg : args) fn = Call(fn, arg, e.span);
            return fn;
          },
          [&](const ce::Lambda& lambda) -> HRef {
            HFunction fn;
            fn.kind = HFunction::Kind::Lambda;
            fn.lambda = &lambda;
            fn.env = frame.env;
            fn.subst = frame.subst;
            fn.def_index = frame.def_index;
            fn.arity = lambda.params.size();
            fn.span = e.span;
            return Make(std::move(fn));
          },
          [&](const ce::Let& let) -> HRef {
            HRef value = Eval(let.value, frame);
            std::shared_ptr<const HEnv> saved = frame.env;
            Bind(let.pattern, value, frame);
            HRef body = Eval(let.body, frame);
            frame.env = saved;
            return body;
          },
          [&](const ce::If&) -> HRef { return refuse_array("`if`"); },
          [&](const ce::Tuple& tuple) -> HRef {
            HTuple values;
            for (core::ExprId x : tuple.elements) values.push_back(Eval(x, frame));
            return Make(std::move(values));
          },
          [&](const ce::TensorLit&) -> HRef { return refuse_array("a tensor literal"); },
          [&](const ce::Index&) -> HRef { return refuse_array("indexing"); },
          [&](const ce::Loop&) -> HRef { return refuse_array("`loop`"); },
          [&](const ce::Cast&) -> HRef { return refuse_array("`cast`"); },
      },
      e.node);
}

HRef Lowering::Call(const HRef& callee, const HRef& arg, Span span) {
  const auto* fn = std::get_if<HFunction>(&callee->node);
  if (!fn) WEFT_INTERNAL_ERROR("host codegen: applying a value that is not a function");
  HFunction next = *fn;
  next.args.push_back(arg);
  if (next.args.size() < next.arity) return Make(std::move(next));
  switch (next.kind) {
    case HFunction::Kind::Builtin:
      return CallBuiltin(next, span);
    case HFunction::Kind::Lambda: {
      HFrame frame{next.subst, next.env, next.def_index, {}, false};
      for (std::size_t i = 0; i < next.arity; ++i) Bind(next.lambda->params[i], next.args[i], frame);
      return Eval(next.lambda->body, frame);
    }
    case HFunction::Kind::Def: {
      const core::Def& def = module_.defs()[next.def_index];
      if (def.kernel) return RunKernel(next, span);
      HFrame frame{next.subst, nullptr, next.def_index, {}, false};
      for (std::size_t i = 0; i < next.arity; ++i) Bind(def.params[i], next.args[i], frame);
      return Eval(def.body, frame);
    }
  }
  WEFT_INTERNAL_ERROR("host codegen: unknown function kind");
}

std::optional<std::size_t> Lowering::FindDef(std::string_view name, std::size_t before) const {
  const std::vector<core::Def>& defs = module_.defs();
  for (std::size_t i = std::min(before, defs.size()); i-- > 0;) {
    if (defs[i].name == name && defs[i].ok) return i;
  }
  return std::nullopt;
}

std::size_t Lowering::Arity(const core::Def& def) const {
  if (!def.kernel) return def.params.size();
  std::size_t n = 0;
  for (bool out : def.kernel->out) n += out ? 0 : 1;
  return n;
}

HRef Lowering::EvaluateDef(std::size_t index, Span span) {
  if (auto it = cache_.find(index); it != cache_.end()) return it->second;
  const core::Def& def = module_.defs()[index];
  if (!def.body) WEFT_INTERNAL_ERROR("host codegen: `" + def.name + "` has no body");
  HFrame frame{{}, nullptr, index, {}, false};
  HRef value = Eval(def.body, frame);
  cache_.emplace(index, value);
  return value;
}

// The type of a built-in's result after all of its arguments.
TypeRef ResultType(const VarStore& vars, const HFunction& fn) {
  TypeRef t = vars.Resolve(fn.type);
  for (std::size_t i = 0; i < fn.arity; ++i) {
    const auto* f = std::get_if<core::FunctionType>(&t->node);
    if (!f) break;
    t = vars.Resolve(f->result);
  }
  return t;
}

HRef Lowering::NegativeLiteral(const core::Expr& e, const core::Expr& callee, const ce::Apply& apply, HFrame& frame) {
  const auto* builtin = std::get_if<ce::Builtin>(&callee.node);
  if (!builtin || builtin->name != "negate" || apply.args.size() != 1) return nullptr;
  const core::Expr& operand = module_.Get(apply.args[0]);
  if (!std::holds_alternative<ce::IntLit>(operand.node) && !std::holds_alternative<ce::FloatLit>(operand.node))
    return nullptr;
  const auto resolved = vars_.Resolve(e.type);  // kept alive: `type` points into it
  const auto* type = std::get_if<TensorType>(&resolved->node);
  if (!type) return nullptr;
  Dtype d = ElemOf(type->elem, frame);
  if (d == Dtype::Bool) return nullptr;
  // The literal's bits, negated as the interpreter negates: the sign bit of a float, two's
  // complement (wrapping in the dtype's width) of an integer.
  const int width = weft::Bits(d);
  const std::uint64_t mask = width == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << width) - 1;
  std::uint64_t v = std::holds_alternative<ce::IntLit>(operand.node)
                        ? IntLitBits(std::get<ce::IntLit>(operand.node), d)
                        : FloatLitBits(std::get<ce::FloatLit>(operand.node), d);
  v = runtime::IsFloatDtype(d) ? v ^ (std::uint64_t{1} << (width - 1)) : (0 - v) & mask;
  return Scalar(d, I64(static_cast<std::int64_t>(v)));
}

std::uint64_t Lowering::IntLitBits(const ce::IntLit& lit, Dtype d) {
  std::uint64_t bits = runtime::IsFloatDtype(d) ? runtime::EncodeFloatFromU64(d, lit.value) : lit.value;
  if (!runtime::IsFloatDtype(d) && weft::Bits(d) < 64) bits &= (std::uint64_t{1} << weft::Bits(d)) - 1;
  return bits;
}

std::uint64_t Lowering::FloatLitBits(const ce::FloatLit& lit, Dtype d) {
  std::optional<std::uint64_t> bits = runtime::EncodeFloatLiteral(d, lit.text);
  return bits ? *bits : runtime::EncodeFloat(d, lit.value);
}

void Lowering::Write(const HValue& value) {
  auto text = [&](const std::string& s) {
    b_.CreateCall(Runtime("weft_program_write_text", b_.getVoidTy(), {Ptr()}), {Text(s)});
  };
  std::visit(Overloaded{
                 [&](const HTensor& t) {
                   b_.CreateCall(Runtime("weft_program_write_tensor", b_.getVoidTy(), {Ptr()}), {t.handle});
                 },
                 [&](const HString& s) {
                   b_.CreateCall(Runtime("weft_program_write_text", b_.getVoidTy(), {Ptr()}), {s.pointer});
                 },
                 [&](const HTuple& tuple) {
                   text("(");
                   for (std::size_t i = 0; i < tuple.size(); ++i) {
                     if (i) text(", ");
                     Write(*tuple[i]);
                   }
                   text(")");
                 },
                 [&](const HShape&) { text("<shape>"); },
                 [&](const HFunction&) { text("<function>"); },
             },
             value.node);
}

HRef Lowering::CallBuiltin(const HFunction& fn, Span span) {
  const std::string& name = fn.builtin;
  HFrame frame{fn.subst, nullptr, 0, {}, false};
  if (name == "random") {
    const auto& shape = std::get<HShape>(fn.args[0]->node);
    TypeRef result = ResultType(vars_, fn);
    Dtype d = ElemOf(std::get<TensorType>(result->node).elem, frame);
    HTensor t;
    t.dtype = d;
    t.dims = shape.dims;
    // The dtype's kernel (random.h), when it has one: the runtime launches it if the program uses the
    // GPU. LowerMainDef drops the descriptors again when `main` calls no kernel.
    llvm::Value* kernel = llvm::ConstantPointerNull::get(b_.getPtrTy());
    if (HasRandomKernel(d)) {
      auto [it, fresh] = random_descriptors_.emplace(d, nullptr);
      if (fresh) {
        it->second = new llvm::GlobalVariable(m_, llvm::StructType::getTypeByName(ctx_, "weft_program_kernel"), false,
                                              llvm::GlobalValue::InternalLinkage, nullptr,
                                              "weft.random." + std::string(Spelling(d)));
        out_.randoms.push_back(d);
      }
      kernel = it->second;
    }
    t.handle =
        b_.CreateCall(Runtime("weft_program_random", Ptr(), {Ptr(), b_.getInt32Ty(), b_.getInt32Ty(), Ptr(), Ptr()}),
                      {kernel, I32(static_cast<int>(d)), I32(static_cast<std::int64_t>(shape.dims.size())),
                       Array(b_.getInt64Ty(), shape.dims), TensorOf(fn.args[1], span).handle});
    return Make(std::move(t));
  }
  if (name == "print") {
    Write(*fn.args[0]);
    b_.CreateCall(Runtime("weft_program_write_text", b_.getVoidTy(), {Ptr()}), {Text("\n")});
    return Make(HTuple{});
  }
  if (name == "save") {
    b_.CreateCall(Runtime("weft_program_save", b_.getVoidTy(), {Ptr(), Ptr()}),
                  {std::get<HString>(fn.args[0]->node).pointer, TensorOf(fn.args[1], span).handle});
    return Make(HTuple{});
  }
  if (name == "arg") {
    return Make(
        HString{b_.CreateCall(Runtime("weft_program_arg", Ptr(), {Ptr()}), {TensorOf(fn.args[0], span).handle})});
  }
  if (name == "time") {
    llvm::Value* mark = b_.CreateCall(Runtime("weft_program_time_start", Ptr(), {}));
    HRef value = Call(fn.args[0], Make(HTuple{}), span);
    HTensor ms;
    ms.dtype = Dtype::F64;
    ms.handle = b_.CreateCall(Runtime("weft_program_time_stop", Ptr(), {Ptr()}), {mark});
    return Make(HTuple{value, Make(std::move(ms))});
  }
  if (name == "load") {
    TypeRef expected = ResultType(vars_, fn);
    const auto* type = std::get_if<TensorType>(&expected->node);
    core::TypePrinter printer(vars_);
    std::string type_text = printer.Print(expected);
    if (!type) Refuse(DiagnosticKind::HostUnsupported, span, "`load` of `" + type_text + "`, which is not a tensor");
    core::Shape shape = vars_.Resolve(type->shape);
    if (!shape.Known())
      Refuse(DiagnosticKind::HostUnsupported, span,
             "`load` of `" + type_text + "`, whose rank is not known: write the type out (`(load f : f32[n, m])`)");
    Elem elem = vars_.Resolve(type->elem);
    if (elem.is_var() && !frame.subst.elems.count(elem.var().index))
      Refuse(
          DiagnosticKind::HostUnsupported, span,
          "`load` of `" + type_text + "`, whose element type is not known: write the type out (`(load f : f32[n])`)");
    Dtype d = ElemOf(elem, frame);
    llvm::Value* path = std::get<HString>(fn.args[0]->node).pointer;
    HTensor t;
    t.dtype = d;
    t.handle = b_.CreateCall(
        Runtime("weft_program_load", Ptr(), {Ptr(), b_.getInt32Ty(), b_.getInt32Ty(), Ptr()}),
        {path, I32(static_cast<int>(d)), I32(static_cast<std::int64_t>(shape.before.size())), Text(type_text)});
    auto dim_fn = Runtime("weft_program_dim", b_.getInt64Ty(), {Ptr(), b_.getInt32Ty()});
    for (std::size_t i = 0; i < shape.before.size(); ++i)
      t.dims.push_back(b_.CreateCall(dim_fn, {t.handle, I32(static_cast<std::int64_t>(i))}));
    // The dims the program knows: constants, and sizes bound before (the checker's MatchValue).
    std::set<std::uint32_t> binding;
    for (std::size_t i = 0; i < shape.before.size(); ++i) {
      Dim r = vars_.Resolve(shape.before[i]);
      std::optional<SizeVarId> v = r.AsVar();
      if (v && !frame.subst.sizes.count(v->index) && !binding.count(v->index)) {
        binding.insert(v->index);
        continue;
      }
      // A size first bound by an earlier axis of this file: compare with that axis.
      HSubst known = frame.subst;
      for (std::size_t j = 0; j < i; ++j) {
        std::optional<SizeVarId> w = vars_.Resolve(shape.before[j]).AsVar();
        if (w && !known.sizes.count(w->index)) known.sizes[w->index] = t.dims[j];
      }
      llvm::Value* want = TryDim(r, known);
      if (!want) continue;
      llvm::BasicBlock* fail = llvm::BasicBlock::Create(ctx_, "load.mismatch", main_);
      llvm::BasicBlock* ok = llvm::BasicBlock::Create(ctx_, "load.ok", main_);
      b_.CreateCondBr(b_.CreateICmpEQ(t.dims[i], want), ok, fail);
      b_.SetInsertPoint(fail);
      llvm::Value* dim_text = r.AsConstant() ? llvm::cast<llvm::Value>(llvm::ConstantPointerNull::get(b_.getPtrTy()))
                                             : Text(printer.Print(r));
      auto* call = b_.CreateCall(Runtime("weft_program_load_mismatch", b_.getVoidTy(),
                                         {Ptr(), Ptr(), Ptr(), b_.getInt32Ty(), Ptr(), b_.getInt64Ty()}),
                                 {t.handle, path, Text(type_text), I32(static_cast<std::int64_t>(i)), dim_text, want});
      call->setDoesNotReturn();
      b_.CreateUnreachable();
      b_.SetInsertPoint(ok);
    }
    return Make(std::move(t));
  }
  WEFT_INTERNAL_ERROR("host codegen: the built-in `" + name + "` has no lowering");
}

// ---- Kernel calls ----

HRef Lowering::RunKernel(const HFunction& fn, Span span) {
  const core::Def& def = module_.defs()[fn.def_index];
  auto [it, fresh] = kernel_index_.emplace(fn.def_index, out_.kernels.size());
  if (fresh) {
    auto lowered = tile::Lower(module_, vars_, def);
    if (!lowered) throw Refusals{lowered.error()};
    out_.kernels.push_back(KernelUse{&def, std::move(*lowered)});
    auto* descriptor = new llvm::GlobalVariable(m_, llvm::StructType::getTypeByName(ctx_, "weft_program_kernel"), false,
                                                llvm::GlobalValue::InternalLinkage, nullptr, "weft.kernel." + def.name);
    descriptors_.push_back(descriptor);
  }
  const tile::Kernel& kernel = out_.kernels[it->second].kernel;
  llvm::GlobalVariable* descriptor = descriptors_[it->second];
  core::TypePrinter printer(vars_);
  const std::string where = Escape(Where(span));
  const std::string kname = "`" + Escape(kernel.name) + "`";

  // 1. The inputs, in parameter order; sizes bound by the first axis that names them alone.
  std::map<std::uint32_t, llvm::Value*> sizes;
  std::vector<std::pair<std::size_t, const HTensor*>> inputs;  // (param, tensor)
  std::vector<llvm::Value*> scalars;
  std::size_t next_arg = 0;
  for (std::size_t p = 0; p < kernel.params.size(); ++p) {
    const tile::Param& param = kernel.params[p];
    if (param.out) continue;
    const HTensor& arg = TensorOf(fn.args.at(next_arg++), span);
    const tile::Value& v = kernel.Get(param.value);
    if (v.space == tile::Space::Scalar) {
      scalars.push_back(arg.handle);
      continue;
    }
    if (arg.dims.size() != v.shape.size())
      WEFT_INTERNAL_ERROR("host codegen: `" + kernel.name + "`'s `" + param.name + "` has another rank");
    inputs.emplace_back(p, &arg);
    for (std::size_t a = 0; a < v.shape.size(); ++a) {
      if (std::optional<SizeVarId> var = v.shape[a].AsVar(); var && !sizes.count(var->index))
        sizes[var->index] = arg.dims[a];
    }
  }
  // Sizes no input names alone (an `out` parameter's own): the call site's type gives them.
  for (const auto& [var, name] : kernel.size_names) {
    if (sizes.count(var.index)) continue;
    if (auto s = fn.subst.sizes.find(var.index); s != fn.subst.sizes.end()) {
      sizes[var.index] = s->second;
      continue;
    }
    Refuse(DiagnosticKind::HostUnsupported, span,
           "a call of `" + kernel.name + "` whose size `" + name +
               "` no input's shape gives: write the result's type out (`(" + kernel.name + " ... : ...)`)");
  }
  auto size_of = [&](SizeVarId v) -> llvm::Value* { return sizes.at(v.index); };
  auto shapes_text = [&](std::string& format, std::vector<llvm::Value*>& args) {
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const auto& [p, arg] = inputs[i];
      format += std::string(i ? ", " : "") + "`" + Escape(kernel.params[p].name) + "` is " +
                std::string(Spelling(arg->dtype)) + "[";
      for (std::size_t a = 0; a < arg->dims.size(); ++a) {
        format += a ? ", %lld" : "%lld";
        args.push_back(arg->dims[a]);
      }
      format += "]";
    }
  };
  // 2. Each input's dims against its type over the bound sizes (two inputs that disagree on `k`).
  for (const auto& [p, arg] : inputs) {
    const tile::Value& v = kernel.Get(kernel.params[p].value);
    for (std::size_t a = 0; a < v.shape.size(); ++a) {
      llvm::Value* want = EmitDim(v.shape[a], size_of);
      if (want == arg->dims[a]) continue;
      std::string format = where + kname + " cannot take its inputs: axis " + std::to_string(a) + " of `" +
                           Escape(kernel.params[p].name) + "` must be `" +
                           Escape(core::ToString(v.shape[a], [&](SizeVarId s) { return kernel.size_names.at(s); })) +
                           "` = %lld, but ";
      std::vector<llvm::Value*> args = {want};
      shapes_text(format, args);
      Require(b_.CreateICmpEQ(arg->dims[a], want), format, args);
    }
  }
  // 3. The `where` facts, which the entry assumes.
  auto names = [&](SizeVarId s) { return kernel.size_names.at(s); };
  for (const core::DimFact& fact : kernel.where) {
    std::string text = core::ToString(fact.lhs, names) + " " + std::string(Spelling(fact.relation)) + " " +
                       core::ToString(fact.rhs, names);
    std::string format = where + kname + " needs `where " + Escape(text) + "`, which does not hold";
    std::vector<llvm::Value*> args;
    std::set<SizeVarId> mentioned;
    for (SizeVarId v : fact.lhs.Vars()) mentioned.insert(v);
    for (SizeVarId v : fact.rhs.Vars()) mentioned.insert(v);
    std::string values;
    for (SizeVarId v : mentioned) {
      values += (values.empty() ? ": " : ", ") + Escape(kernel.size_names.at(v)) + " = %lld";
      args.push_back(sizes.at(v.index));
    }
    format += values + " (";
    shapes_text(format, args);
    format += ")";
    Require(Compare(fact.relation, EmitDim(fact.lhs, size_of), EmitDim(fact.rhs, size_of)), format, args);
  }
  // 4. The `out` tensors, zero-filled on the GPU, and the arguments in the descriptor's order.
  std::vector<llvm::Value*> tensors;
  std::vector<HRef> outs;
  std::size_t input = 0;
  for (const tile::Param& param : kernel.params) {
    const tile::Value& v = kernel.Get(param.value);
    if (v.space != tile::Space::Global) continue;
    if (!param.out) {
      tensors.push_back(inputs[input++].second->handle);
      continue;
    }
    HTensor t;
    t.dtype = v.dtype;
    for (const Dim& d : v.shape) t.dims.push_back(EmitDim(d, size_of));
    t.handle = b_.CreateCall(Runtime("weft_program_out", Ptr(), {b_.getInt32Ty(), b_.getInt32Ty(), Ptr()}),
                             {I32(static_cast<int>(v.dtype)), I32(static_cast<std::int64_t>(t.dims.size())),
                              Array(b_.getInt64Ty(), t.dims)});
    tensors.push_back(t.handle);
    outs.push_back(Make(std::move(t)));
  }
  std::vector<llvm::Value*> size_values;  // in size_names order; the descriptor maps the entry's
  for (const auto& [var, name] : kernel.size_names) size_values.push_back(sizes.at(var.index));
  std::vector<llvm::Value*> grid;
  for (const Dim& d : kernel.grid) grid.push_back(EmitDim(d, size_of));
  while (grid.size() < 3) grid.push_back(I64(1));
  b_.CreateCall(Runtime("weft_program_launch", b_.getVoidTy(), {Ptr(), Ptr(), Ptr(), Ptr(), Ptr()}),
                {descriptor, Array(b_.getInt64Ty(), grid), Array(Ptr(), tensors), Array(b_.getInt64Ty(), size_values),
                 Array(Ptr(), scalars)});
  if (outs.size() == 1) return outs.front();
  return Make(HTuple(outs));
}

void Lowering::LowerMainDef(const core::Def& main, std::size_t index) {
  llvm::StructType::create(
      ctx_,
      {Ptr(), Ptr(), Ptr(), b_.getInt64Ty(), Ptr(), b_.getInt64Ty(), b_.getInt32Ty(), b_.getInt32Ty(), b_.getInt32Ty(),
       b_.getInt32Ty(), b_.getInt32Ty(), Ptr(), b_.getInt32Ty(), Ptr(), Ptr()},
      "weft_program_kernel");
  llvm::StructType::create(ctx_, {b_.getInt32Ty(), b_.getInt32Ty(), b_.getInt32Ty(), b_.getInt32Ty()},
                           "weft_program_tensor_map");
  auto* type = llvm::FunctionType::get(b_.getInt32Ty(), {b_.getInt32Ty(), Ptr()}, false);
  main_ = llvm::Function::Create(type, llvm::Function::ExternalLinkage, "main", m_);
  llvm::BasicBlock* entry = llvm::BasicBlock::Create(ctx_, "entry", main_);
  llvm::BasicBlock* body = llvm::BasicBlock::Create(ctx_, "main", main_);
  b_.SetInsertPoint(body);
  EvaluateDef(index, main.span);
  b_.CreateRet(b_.CreateCall(Runtime("weft_program_end", b_.getInt32Ty(), {})));
  // A program without kernels never opens the GPU: its `random` tensors are filled on the host, and
  // it carries no `random` kernels.
  if (out_.kernels.empty()) {
    for (auto& [dtype, descriptor] : random_descriptors_) {
      descriptor->replaceAllUsesWith(llvm::ConstantPointerNull::get(b_.getPtrTy()));
      descriptor->eraseFromParent();
    }
    random_descriptors_.clear();
    out_.randoms.clear();
  }
  // weft_program_start goes first, once it is known whether the program launches kernels.
  b_.SetInsertPoint(entry);
  std::string target(synth::Spelling(options_.target));
  b_.CreateCall(Runtime("weft_program_start", b_.getVoidTy(), {b_.getInt32Ty(), Ptr(), Ptr(), b_.getInt32Ty()}),
                {main_->getArg(0), main_->getArg(1), Text(target), I32(out_.kernels.empty() ? 0 : 1)});
  b_.CreateBr(body);
}

std::once_flag host_target_once;

}  // namespace

Result<HostModule, std::vector<Diagnostic>> LowerMain(const core::Module& module, const core::VarStore& vars,
                                                      const core::Def& main, const SourceManager& sources,
                                                      const HostOptions& options) {
  HostModule program;
  program.context = std::make_unique<llvm::LLVMContext>();
  program.module = std::make_unique<llvm::Module>("weft_host", *program.context);
  program.module->setTargetTriple(llvm::sys::getDefaultTargetTriple());
  std::size_t index = 0;
  for (; index < module.defs().size(); ++index)
    if (&module.defs()[index] == &main) break;
  if (!main.params.empty()) {
    return std::vector<Diagnostic>{MakeDiagnostic(DiagnosticKind::HostUnsupported, main.span,
                                                  "a `main` with parameters: `main` is a value (`def main = ...`)")};
  }
  try {
    Lowering lowering(module, vars, sources, program, options);
    lowering.LowerMainDef(main, index);
  } catch (const Refusal& refusal) {
    return std::vector<Diagnostic>{refusal.diagnostic};
  } catch (const Refusals& refusals) {
    return refusals.diagnostics;
  }
  return program;
}

namespace {

// A kernel descriptor's initializer (runtime.h's weft_program_kernel): `name` for messages, the
// device code, the launch's shape, and the constant arrays `order` (the entry's sizes) and `maps`.
void SetDescriptor(HostModule& program, llvm::GlobalVariable* descriptor, const std::string& name,
                   const std::string& prefix, const DeviceKernel& device, const std::string& cubin, int tensors,
                   int scalars, const std::vector<llvm::Constant*>& order, const std::vector<llvm::Constant*>& maps) {
  llvm::LLVMContext& ctx = *program.context;
  llvm::Module& m = *program.module;
  auto* i32 = llvm::Type::getInt32Ty(ctx);
  auto* i64 = llvm::Type::getInt64Ty(ctx);
  auto* ptr = llvm::PointerType::get(ctx, 0);
  auto global = [&](llvm::Constant* init, const std::string& global_name, unsigned align = 1) -> llvm::Constant* {
    auto* g = new llvm::GlobalVariable(m, init->getType(), true, llvm::GlobalValue::PrivateLinkage, init, global_name);
    g->setAlignment(llvm::Align(align));
    return g;
  };
  auto text = [&](const std::string& s, const std::string& global_name) {
    return global(llvm::ConstantDataArray::getString(ctx, s, true), global_name);
  };
  llvm::Constant* cubin_data = llvm::ConstantPointerNull::get(ptr);
  if (!cubin.empty()) {
    cubin_data = global(llvm::ConstantDataArray::getString(ctx, cubin, false), prefix + "cubin", 16);
  }
  auto* map_type = llvm::StructType::getTypeByName(ctx, "weft_program_tensor_map");
  llvm::Constant* order_array =
      order.empty()
          ? llvm::ConstantPointerNull::get(ptr)
          : global(llvm::ConstantArray::get(llvm::ArrayType::get(i32, order.size()), order), prefix + "sizes", 4);
  llvm::Constant* map_array =
      maps.empty()
          ? llvm::ConstantPointerNull::get(ptr)
          : global(llvm::ConstantArray::get(llvm::ArrayType::get(map_type, maps.size()), maps), prefix + "maps", 4);
  auto* type = llvm::cast<llvm::StructType>(descriptor->getValueType());
  descriptor->setInitializer(llvm::ConstantStruct::get(
      type,
      {text(name, prefix + "name"), text(device.entry, prefix + "entry"), cubin_data,
       llvm::ConstantInt::get(i64, cubin.size()), text(device.ptx, prefix + "ptx"),
       llvm::ConstantInt::get(i64, device.ptx.size()),
       llvm::ConstantInt::get(i32, static_cast<std::uint64_t>(device.threads)),
       llvm::ConstantInt::get(i32, static_cast<std::uint64_t>(device.shared_bytes)),
       llvm::ConstantInt::get(i32, static_cast<std::uint64_t>(tensors)),
       llvm::ConstantInt::get(i32, static_cast<std::uint64_t>(scalars)), llvm::ConstantInt::get(i32, order.size()),
       order_array, llvm::ConstantInt::get(i32, maps.size()), map_array, llvm::ConstantPointerNull::get(ptr)}));
  descriptor->setAlignment(llvm::Align(8));
}

}  // namespace

void AttachKernel(HostModule& program, std::size_t index, const DeviceKernel& device, const std::string& cubin) {
  llvm::LLVMContext& ctx = *program.context;
  llvm::Module& m = *program.module;
  const KernelUse& use = program.kernels.at(index);
  const tile::Kernel& kernel = use.kernel;
  llvm::GlobalVariable* descriptor = m.getGlobalVariable("weft.kernel." + use.def->name, true);
  if (!descriptor) WEFT_INTERNAL_ERROR("host codegen: no descriptor for `" + use.def->name + "`");
  auto* i32 = llvm::Type::getInt32Ty(ctx);
  // The entry's sizes, as indices into the launch's sizes (the kernel's size_names order).
  std::vector<llvm::Constant*> order;
  for (SizeVarId v : device.sizes) {
    auto it = kernel.size_names.find(v);
    if (it == kernel.size_names.end())
      WEFT_INTERNAL_ERROR("host codegen: a size of the entry the kernel does not name");
    order.push_back(
        llvm::ConstantInt::get(i32, static_cast<std::uint64_t>(std::distance(kernel.size_names.begin(), it))));
  }
  // Tensor maps name a parameter (an index into Kernel::params): the launch's index among tensors.
  auto* map_type = llvm::StructType::getTypeByName(ctx, "weft_program_tensor_map");
  std::vector<llvm::Constant*> maps;
  for (const TensorMapSpec& spec : device.tensor_maps) {
    int tensor = 0;
    for (int p = 0; p < spec.param; ++p)
      tensor += kernel.Get(kernel.params[static_cast<std::size_t>(p)].value).space == tile::Space::Global ? 1 : 0;
    maps.push_back(
        llvm::ConstantStruct::get(map_type, {llvm::ConstantInt::get(i32, static_cast<std::uint64_t>(tensor)),
                                             llvm::ConstantInt::get(i32, static_cast<std::uint64_t>(spec.box_cols)),
                                             llvm::ConstantInt::get(i32, static_cast<std::uint64_t>(spec.box_rows)),
                                             llvm::ConstantInt::get(i32, static_cast<std::uint64_t>(spec.swizzle))}));
  }
  int tensors = 0, scalars = 0;
  for (const tile::Param& p : kernel.params)
    (kernel.Get(p.value).space == tile::Space::Global ? tensors : scalars) += 1;
  SetDescriptor(program, descriptor, use.def->name, "weft." + use.def->name + ".", device, cubin, tensors, scalars,
                order, maps);
}

void AttachRandomKernel(HostModule& program, Dtype dtype, const DeviceKernel& device, const std::string& cubin) {
  const std::string name = "weft.random." + std::string(Spelling(dtype));
  llvm::GlobalVariable* descriptor = program.module->getGlobalVariable(name, true);
  if (!descriptor) WEFT_INTERNAL_ERROR("host codegen: no descriptor for `random` of " + std::string(Spelling(dtype)));
  // Named after its entry in messages (`kernel `weft_random_f32` failed: ...`); the runtime launches
  // it itself (weft_program_random): one tensor, no sizes or scalars in the descriptor's sense.
  SetDescriptor(program, descriptor, device.entry, name + ".", device, cubin, 1, 0, {}, {});
}

std::string PrintHost(const HostModule& program) {
  std::string text;
  llvm::raw_string_ostream os(text);
  program.module->print(os, nullptr);
  return text;
}

Result<std::monostate, std::string> EmitObject(HostModule& program, const std::string& path) {
  std::call_once(host_target_once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
  llvm::Module& m = *program.module;
  std::string verify;
  llvm::raw_string_ostream verify_os(verify);
  if (llvm::verifyModule(m, &verify_os))
    WEFT_INTERNAL_ERROR("host codegen: the generated host module does not verify: " + verify);
  std::string error;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(m.getTargetTriple(), error);
  if (!target) return "no LLVM target for `" + m.getTargetTriple() + "`: " + error;
  llvm::TargetOptions target_options;
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      m.getTargetTriple(), "x86-64", "", target_options, llvm::Reloc::PIC_, std::nullopt, llvm::CodeGenOptLevel::Less));
  m.setDataLayout(machine->createDataLayout());
  std::error_code ec;
  llvm::raw_fd_ostream out(path, ec, llvm::sys::fs::OF_None);
  if (ec) return "cannot write `" + path + "`: " + ec.message();
  llvm::legacy::PassManager passes;
  if (machine->addPassesToEmitFile(passes, out, nullptr, llvm::CodeGenFileType::ObjectFile))
    return "LLVM cannot write an object file for `" + m.getTargetTriple() + "`";
  passes.run(m);
  out.flush();
  return std::monostate{};
}

Result<std::monostate, std::string> Link(const std::string& cc, const std::string& object, const std::string& runtime,
                                         const std::string& output) {
  auto quote = [](const std::string& s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
  };
  // libstdc++ and libgcc statically (the runtime is C++), libc, libm and libdl dynamically: the
  // executable needs only libc and, to run kernels, the NVIDIA driver it loads with dlopen.
  std::string command = cc + " -o " + quote(output) + " " + quote(object) + " " + quote(runtime) +
                        " -static-libgcc -Wl,-Bstatic -lstdc++ -Wl,-Bdynamic -lm -ldl -lpthread 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return "cannot run `" + cc + "`";
  std::string messages;
  char buffer[512];
  while (std::fgets(buffer, sizeof buffer, pipe)) messages += buffer;
  int status = pclose(pipe);
  if (status != 0) {
    std::string line;
    for (char c : messages) line += c == '\n' ? ' ' : c;
    while (!line.empty() && line.back() == ' ') line.pop_back();
    return "`" + cc + "` failed to link `" + output + "`" + (line.empty() ? "" : ": " + line);
  }
  return std::monostate{};
}

}  // namespace weft::codegen
