// One call of a kernel on random inputs; see kernel_call.h. `weft simulate` and tests/gpu's case
// generator share it, so that a case's inputs and reference are made as the simulator's are.
#include "driver/kernel_call.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <ostream>

#include "base/stack.h"
#include "interp/ops.h"
#include "weft/numerics.h"
#include "weft/random.h"

namespace weft::driver {

namespace {

// NAME=VALUE, or nothing when there is no `=` or either side is empty.
std::optional<std::pair<std::string, std::string>> SplitAssignment(const std::string& text) {
  auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) return std::nullopt;
  return std::pair{text.substr(0, eq), text.substr(eq + 1)};
}

// A scalar parameter's value from its text: `true`/`false` for bool, an integer, a float.
std::optional<runtime::HostTensor> ParseScalar(Dtype dtype, const std::string& text) {
  if (dtype == Dtype::Bool) {
    if (text == "true") return interp::ScalarFromInt(dtype, 1);
    if (text == "false") return interp::ScalarFromInt(dtype, 0);
    return std::nullopt;
  }
  char* end = nullptr;
  errno = 0;
  if (runtime::IsFloatDtype(dtype)) {
    double value = std::strtod(text.c_str(), &end);
    if (*end != '\0' || errno != 0) return std::nullopt;
    return interp::ScalarFromDouble(dtype, value);
  }
  long long value = std::strtoll(text.c_str(), &end, 10);
  if (*end != '\0' || errno != 0) return std::nullopt;
  return interp::ScalarFromInt(dtype, value);
}

}  // namespace

bool Holds(std::int64_t lhs, core::RelOp relation, std::int64_t rhs) {
  switch (relation) {
    case core::RelOp::kEq:
      return lhs == rhs;
    case core::RelOp::kNe:
      return lhs != rhs;
    case core::RelOp::kLt:
      return lhs < rhs;
    case core::RelOp::kLe:
      return lhs <= rhs;
    case core::RelOp::kGt:
      return lhs > rhs;
    case core::RelOp::kGe:
      return lhs >= rhs;
  }
  return false;
}

std::string NameList(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "`" : ", `") + n + "`";
  return out;
}

std::optional<KernelCall> PrepareKernelCall(const tile::Kernel& kernel, const std::string& name,
                                            const std::vector<std::string>& sizes,
                                            const std::vector<std::string>& scalar_texts, std::uint64_t seed,
                                            bool make_tensors, std::ostream& err) {
  KernelCall call;
  std::vector<core::SizeVarId>& order = call.order;
  for (const tile::Param& p : kernel.params)
    for (const core::Dim& d : kernel.Get(p.value).shape)
      for (core::SizeVarId var : d.Vars())
        if (std::find(order.begin(), order.end(), var) == order.end()) order.push_back(var);
  for (const auto& [var, size_name] : kernel.size_names)
    if (std::find(order.begin(), order.end(), var) == order.end()) order.push_back(var);
  std::vector<std::string> size_names;
  for (core::SizeVarId var : order)
    if (auto it = kernel.size_names.find(var); it != kernel.size_names.end()) size_names.push_back(it->second);
  for (const std::string& size : sizes) {
    auto assignment = SplitAssignment(size);
    char* end = nullptr;
    std::int64_t value = assignment ? std::strtoll(assignment->second.c_str(), &end, 10) : 0;
    if (!assignment || *end != '\0' || value <= 0) {
      err << "weft: `--size " << size << "`: expected NAME=N with N a positive integer (`--size m=256`)\n";
      return std::nullopt;
    }
    bool found = false;
    for (const auto& [var, size_name] : kernel.size_names)
      if (size_name == assignment->first) {
        call.sizes[var] = value;
        found = true;
      }
    if (!found) {
      err << "weft: `--size " << size << "`: kernel `" << name << "` has no size `" << assignment->first
          << "`; its sizes are " << NameList(size_names) << "\n";
      return std::nullopt;
    }
  }
  std::vector<std::string> missing;
  for (core::SizeVarId var : order)
    if (!call.sizes.count(var) && kernel.size_names.count(var)) missing.push_back(kernel.size_names.at(var));
  if (!missing.empty()) {
    err << "weft: kernel `" << name << "` needs a value for each of its sizes: give " << NameList(missing)
        << " with --size (`--size " << missing.front() << "=128`)\n";
    return std::nullopt;
  }
  auto names = [&](core::SizeVarId var) {
    auto it = kernel.size_names.find(var);
    return it == kernel.size_names.end() ? "?" : it->second;
  };
  auto eval_dim = [&](const core::Dim& d) {
    return core::Evaluate(d, [&](core::SizeVarId var) -> std::int64_t { return call.sizes.at(var); });
  };
  for (const core::DimFact& fact : kernel.where) {
    auto lhs = eval_dim(fact.lhs), rhs = eval_dim(fact.rhs);
    if (lhs && rhs && !Holds(*lhs, fact.relation, *rhs)) {
      std::string values;
      for (core::SizeVarId var : order)
        if (kernel.size_names.count(var))
          values +=
              (values.empty() ? "" : ", ") + kernel.size_names.at(var) + " = " + std::to_string(call.sizes.at(var));
      err << "weft: the sizes break kernel `" << name << "`'s `where` clause: `" << core::ToString(fact.lhs, names)
          << " " << core::Spelling(fact.relation) << " " << core::ToString(fact.rhs, names) << "` is false with "
          << values << "\n";
      return std::nullopt;
    }
  }
  std::map<std::string, std::string> scalars;
  for (const std::string& text : scalar_texts) {
    auto assignment = SplitAssignment(text);
    if (!assignment) {
      err << "weft: `--scalar " << text << "`: expected NAME=VALUE (`--scalar causal=true`)\n";
      return std::nullopt;
    }
    scalars[assignment->first] = assignment->second;
  }
  for (std::size_t i = 0; i < kernel.params.size(); ++i) {
    const tile::Param& p = kernel.params[i];
    const tile::Value& v = kernel.Get(p.value);
    if (runtime::IsFloatDtype(v.dtype) && Bits(v.dtype) <= 16) call.narrow_float = true;
    std::vector<std::int64_t> shape;
    if (v.space == tile::Space::Global) {
      for (const core::Dim& d : v.shape) {
        auto value = eval_dim(d);
        if (!value || *value < 0) {
          err << "weft: the shape `" << core::ToString(d, names) << "` of `" << p.name << "` has no value\n";
          return std::nullopt;
        }
        shape.push_back(*value);
      }
    }
    call.shapes.push_back(shape);
    if (p.out) continue;
    if (auto given = scalars.find(p.name); given != scalars.end()) {
      std::optional<runtime::HostTensor> value;
      if (v.space != tile::Space::Global) value = ParseScalar(v.dtype, given->second);
      if (!value) {
        err << "weft: `--scalar " << p.name << "=" << given->second << "`: `" << p.name << "` is "
            << (v.space == tile::Space::Global ? "a tensor, not a scalar parameter"
                                               : std::string("a scalar of type ") + std::string(Spelling(v.dtype)) +
                                                     (v.dtype == Dtype::Bool ? ": expected `true` or `false`" : ""))
            << "\n";
        return std::nullopt;
      }
      call.scalars.emplace(i, *value);
      if (make_tensors) call.args.push_back(std::move(*value));
      scalars.erase(given);
      continue;
    }
    if (v.space != tile::Space::Global) {  // a scalar not given: a `random` one, as tensors are
      runtime::HostTensor t = runtime::HostTensor::Zeros(v.dtype, shape);
      runtime::FillRandom(t, seed + i);
      call.scalars.emplace(i, t);
      if (make_tensors) call.args.push_back(std::move(t));
      continue;
    }
    if (!make_tensors) continue;
    runtime::HostTensor t = runtime::HostTensor::Zeros(v.dtype, shape);
    runtime::FillRandom(t, seed + i);
    call.args.push_back(std::move(t));
  }
  if (!scalars.empty()) {
    std::vector<std::string> scalar_names;
    for (const tile::Param& p : kernel.params)
      if (!p.out && kernel.Get(p.value).space != tile::Space::Global) scalar_names.push_back(p.name);
    err << "weft: `--scalar " << scalars.begin()->first << "=" << scalars.begin()->second << "`: kernel `" << name
        << "` has no scalar parameter `" << scalars.begin()->first << "`"
        << (scalar_names.empty() ? std::string("; it has none")
                                 : "; its scalar parameters are " + NameList(scalar_names))
        << "\n";
    return std::nullopt;
  }
  return call;
}

interp::EvalResult<std::vector<runtime::HostTensor>> InterpretKernelCall(const core::Module& module,
                                                                         const core::VarStore& vars,
                                                                         const core::Def& def, const KernelCall& call) {
  interp::EvalResult<std::vector<runtime::HostTensor>> result = std::vector<runtime::HostTensor>{};
  RunWithDeepStack([&] {
    interp::Interpreter interpreter(module, vars, {});
    result = interpreter.Call(def, call.args, call.sizes);
  });
  return result;
}

}  // namespace weft::driver
