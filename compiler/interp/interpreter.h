// The evaluator of the typed core IR (core/ir.h): the CPU reference that `weft run` and the REPL
// use, and that GPU results are compared with. Built-ins are ops.h's; this file adds values,
// environments, closures, calls and run-time checks.
//
// How it works:
//  1. Values are tensors (runtime::HostTensor), tuples, strings, closures, and built-ins applied to
//     fewer arguments than they take (curried).
//  2. Types are passed at run time. An evaluation happens under a substitution from the type
//     variables of the definitions being evaluated to what they stand for here: element types to
//     dtypes, sizes to integers, shape variables to lists of integers. A call of a polymorphic
//     definition (or a generalized `let`) matches the callee's type against the type it is used at
//     (from the core IR, under the caller's substitution), and the parameters' types against the
//     argument values; that is how `zeros` or a weak literal inside a polymorphic function learns
//     its dtype, and how a size named in a signature gets its value.
//  3. `load` checks the file's dtype and shape against the program's type and binds its sizes;
//     run-time checks (the checker's obligations over those sizes) are made on the expression that
//     carries them, once its operands are evaluated, or as soon as their sizes are known.
//  4. Errors (a failed check, an index out of bounds, a bad `.npy`) are RuntimeError values with the
//     source location; evaluation stops at the first.
#pragma once

#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/source.h"
#include "core/ir.h"
#include "weft/tensor.h"

namespace weft::interp {

struct Value;
using ValueRef = std::shared_ptr<const Value>;

struct RuntimeError {
  Span span;            // where in the program (may be invalid for a top-level failure)
  std::string message;  // lowercase, with the values involved
};

template <typename T>
using EvalResult = Result<T, RuntimeError>;

struct InterpreterOptions {
  std::vector<std::string> args;  // `arg i`: args[i]; args[0] is the program's name
  std::ostream* out = nullptr;    // where `print` writes (std::cout when null)
  std::string base_dir;           // relative `load`/`save` paths are resolved against it ("" = cwd)
};

class Interpreter {
 public:
  Interpreter(const core::Module& module, const core::VarStore& vars, InterpreterOptions options);
  ~Interpreter();

  // The value of a top-level definition without parameters (a value, or `main`), computed once
  // per definition and remembered. A definition with parameters gives its closure.
  EvalResult<ValueRef> Evaluate(const core::Def& def);
  // Calls a definition with parameters on tensors, as a call in the program would: a kernel takes
  // its inputs (a scalar parameter as a rank-0 tensor), not its `out` parameters. `sizes` gives
  // sizes of its type that the arguments do not fix (an `out` parameter's own, say). Returns the
  // result's tensors: the tensor, or a tuple's elements. `weft simulate` compares with this.
  EvalResult<std::vector<runtime::HostTensor>> Call(const core::Def& def, const std::vector<runtime::HostTensor>& args,
                                                    const std::map<core::SizeVarId, std::int64_t>& sizes = {});
  // Forgets remembered values (the REPL's `:reload`).
  void Reset();

  // A value as `print` writes it (NumPy's format for tensors), and as the REPL shows it.
  static std::string Show(const Value& value);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace weft::interp
