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

struct Value {
  std::variant<HostTensor, Tuple, std::string, Function> node;
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

struct Evaluator {
  const core::Module& module;
  const VarStore& vars;
  InterpreterOptions options;
  std::map<std::size_t, ValueRef> cache;      // values of parameterless definitions
  std::optional<RuntimeError> pending_error;  // raised inside a closure called by an op

  EvalResult<ValueRef> EvaluateDef(std::size_t index);
  EvalResult<ValueRef> Eval(core::ExprId id, Frame& frame);
  EvalResult<ValueRef> EvalNode(const core::Expr& e, Frame& frame);
  EvalResult<ValueRef> Literal(const core::Expr& e, const Frame& frame, std::uint64_t bits);
  EvalResult<ValueRef> Bind(core::PatternId pattern, const ValueRef& value, Frame& frame);
  EvalResult<ValueRef> Call(const ValueRef& callee, const ValueRef& arg, Span span);
  std::optional<RuntimeError> Check(const RuntimeCheck& check, Frame& frame, bool defer);
  std::optional<RuntimeError> RetryChecks(Frame& frame);
  std::optional<std::size_t> FindDef(std::string_view name, std::size_t before) const;
  // A kernel that the definition would call (the interpreter cannot run kernels).
  std::optional<RuntimeError> Unrunnable(std::size_t index);
  // An op's result as a value; an error of a closure it called wins over the op's own.
  EvalResult<ValueRef> Lift(OpResult result, Span span);

  // ---- builtins.cpp ----
  EvalResult<ValueRef> CallBuiltin(const Function& fn, Span span);
};

// How many arguments a built-in takes (the shape argument counts), or none for an unknown name.
std::optional<std::size_t> BuiltinArity(std::string_view name);

}  // namespace weft::interp
