// The evaluator's internal state, shared by interpreter.cpp (expressions, calls, checks) and
// builtins.cpp (the built-ins). interpreter.h has the design.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/ir.h"
#include "interp/interpreter.h"
#include "interp/ops.h"

namespace weft::interp {

using core::Dim;
using core::Elem;
using core::ElemClass;
using core::FreeVars;
using core::FunctionType;
using core::RuntimeCheck;
using core::SizeVarId;
using core::TensorType;
using core::TupleType;
using core::TypeRef;
using core::VarStore;
using runtime::HostTensor;

// What the type variables of the code being evaluated stand for (keyed by variable index).
struct Subst {
  std::map<std::uint32_t, Dtype> elems;
  std::map<std::uint32_t, std::int64_t> sizes;
  std::map<std::uint32_t, std::vector<std::int64_t>> shapes;
};

// Names in scope: a persistent list, shared by the closures that capture it.
struct Env {
  std::string name;
  ValueRef value;
  TypeRef generic;  // a generalized `let` of a function: its type, which each use instantiates
  std::shared_ptr<const Env> next;
};

struct Function {
  enum class Kind { Builtin, Lambda, Def };
  Kind kind = Kind::Builtin;
  std::string builtin;                         // Builtin
  TypeRef type;                                // Builtin: its type where it is used
  const core::expr::Lambda* lambda = nullptr;  // Lambda
  std::shared_ptr<const Env> env;              // Lambda: what it captured
  std::size_t def_index = 0;                   // Def: which; Lambda: the definition it is in
  Subst subst;                                 // the type variables of its body, as far as known
  std::size_t arity = 0;
  std::vector<ValueRef> args;  // collected so far
  Span span;
};

using Tuple = std::vector<ValueRef>;

// Inside a kernel run: an `out` parameter (`tile` = false) or a tile of one, which `store` writes.
// `origin` and `extents` have one entry per axis of the out tensor; an axis that `tile` indexed
// (and dropped) has extent 1. The checker lets these reach only `tile` and `store`.
struct OutRef {
  std::size_t index = 0;  // into the running kernel's outs
  bool tile = false;
  std::vector<std::int64_t> origin;
  std::vector<std::int64_t> extents;
};

struct Value {
  std::variant<HostTensor, Tuple, std::string, Function, OutRef> node;
};

template <typename T>
ValueRef MakeValue(T&& node) {
  return std::make_shared<const Value>(Value{std::forward<T>(node)});
}

// One evaluation context: the substitution, the environment, the definition being evaluated (for
// name lookup), and run-time checks waiting for their sizes.
struct Frame {
  const VarStore& vars;
  Subst subst;
  std::shared_ptr<const Env> env;
  std::size_t def_index = 0;
  std::vector<RuntimeCheck> pending;
  bool bound_new = false;  // a size was bound since the pending checks were last tried

  Dtype ElemOf(const Elem& elem) const;
  std::optional<std::int64_t> SizeOf(SizeVarId v) const;
  std::optional<std::int64_t> TryDim(const Dim& dim) const;
  EvalResult<std::int64_t> DimOf(const Dim& dim, Span span) const;
  EvalResult<std::vector<std::int64_t>> ShapeOf(const core::Shape& shape, Span span) const;
};

void MatchTypes(const VarStore& vars, const TypeRef& pattern, const TypeRef& concrete, const Frame& caller, Subst& out);
// An error message when the value does not fit the type.
std::optional<std::string> MatchValue(const VarStore& vars, const TypeRef& type, const Value& value, Frame& frame);
std::string ShowValue(const Value& value);

// A kernel being run (docs/kernels.md, Meaning): its out tensors and the block being computed.
struct KernelRun {
  std::vector<HostTensor> outs;
  std::vector<std::int64_t> block;  // block_idx, one entry per grid extent
};

struct Evaluator {
  const core::Module& module;
  const VarStore& vars;
  InterpreterOptions options;
  std::map<std::size_t, ValueRef> cache;      // values of parameterless definitions
  std::optional<RuntimeError> pending_error;  // raised inside a closure called by an op
  std::vector<KernelRun> kernels;             // the kernels running, innermost last

  // A call of a kernel with its inputs (fn.args): allocates its outs, runs the body once per
  // block in row-major order, returns the outs (a tuple unless there is one).
  EvalResult<ValueRef> RunKernel(const Function& fn, Span span);
  // How many arguments a definition takes: its parameters, less a kernel's `out` ones.
  std::size_t Arity(const core::Def& def) const;

  EvalResult<ValueRef> EvaluateDef(std::size_t index);
  EvalResult<ValueRef> Eval(core::ExprId id, Frame& frame);
  EvalResult<ValueRef> EvalNode(const core::Expr& e, Frame& frame);
  // EvalNode's longer cases: a definition named, an application, a tensor literal, indexing, `loop`.
  EvalResult<ValueRef> EvalGlobal(const core::expr::Global& global, const core::Expr& e, Frame& frame);
  EvalResult<ValueRef> EvalApply(const core::expr::Apply& apply, const core::Expr& e, Frame& frame);
  EvalResult<ValueRef> EvalTensorLit(const core::expr::TensorLit& list, const core::Expr& e, Frame& frame);
  EvalResult<ValueRef> EvalIndex(const core::expr::Index& index, const core::Expr& e, Frame& frame);
  EvalResult<ValueRef> EvalLoop(const core::expr::Loop& loop, const core::Expr& e, Frame& frame);
  EvalResult<ValueRef> Literal(const core::Expr& e, const Frame& frame, std::uint64_t bits);
  EvalResult<ValueRef> Bind(core::PatternId pattern, const ValueRef& value, Frame& frame);
  EvalResult<ValueRef> Call(const ValueRef& callee, const ValueRef& arg, Span span);
  std::optional<RuntimeError> Check(const RuntimeCheck& check, Frame& frame, bool defer);
  std::optional<RuntimeError> RetryChecks(Frame& frame);
  std::optional<std::size_t> FindDef(std::string_view name, std::size_t before) const;
  // An op's result as a value; an error of a closure it called wins over the op's own.
  EvalResult<ValueRef> Lift(OpResult result, Span span);

  // ---- builtins.cpp ----
  EvalResult<ValueRef> CallBuiltin(const Function& fn, Span span);
  // The kernel operations: block_idx, tile, shared, regs, convert, mma, store.
  EvalResult<ValueRef> CallKernelOp(const Function& fn, Span span);
};

// How many arguments a built-in takes (the shape argument counts), or none for an unknown name.
std::optional<std::size_t> BuiltinArity(std::string_view name);

}  // namespace weft::interp
