// The built-ins of language.md, with their types written in weft's own type syntax and parsed
// once. Those whose typing needs more than a scheme (shape arguments, broadcasting) are also in
// handle_apply.cpp; their schemes here are what `weft check` prints for them.
#include "check/checker.h"
#include "syntax/parser.h"

namespace weft::check {
namespace {

struct BuiltinSpec {
  const char* name;
  const char* type;
  ElemClass cls;  // on the element-type variable 't, if any
};

constexpr BuiltinSpec kBuiltins[] = {
    {"map", "('a[] -> 'b[]) -> 'a[..s] -> 'b[..s]", ElemClass::None},
    {"map2", "('a[] -> 'b[] -> 'c[]) -> 'a[..s] -> 'b[..s] -> 'c[..s]", ElemClass::None},
    {"reduce", "('t[] -> 't[] -> 't[]) -> 't[] -> 't[..s, n] -> 't[..s]", ElemClass::None},
    {"scan", "('t[] -> 't[] -> 't[]) -> 't[] -> 't[..s, n] -> 't[..s, n]", ElemClass::None},
    {"sum", "'t[..s, n] -> 't[..s]", ElemClass::Num},
    {"max", "'t[..s, n] -> 't[..s]", ElemClass::Num},
    {"min", "'t[..s, n] -> 't[..s]", ElemClass::Num},
    {"mean", "'t[..s, n] -> 't[..s]", ElemClass::Float},
    {"argmax", "'t[..s, n] -> i64[..s]", ElemClass::None},
    {"maximum", "'t[..s] -> 't[..s] -> 't[..s]", ElemClass::Num},
    {"minimum", "'t[..s] -> 't[..s] -> 't[..s]", ElemClass::Num},
    {"select", "bool[..s] -> 't[..s] -> 't[..s] -> 't[..s]", ElemClass::None},
    {"exp", "'t[..s] -> 't[..s]", ElemClass::Float},
    {"log", "'t[..s] -> 't[..s]", ElemClass::Float},
    {"sqrt", "'t[..s] -> 't[..s]", ElemClass::Float},
    {"rsqrt", "'t[..s] -> 't[..s]", ElemClass::Float},
    {"tanh", "'t[..s] -> 't[..s]", ElemClass::Float},
    {"sigmoid", "'t[..s] -> 't[..s]", ElemClass::Float},
    {"sin", "'t[..s] -> 't[..s]", ElemClass::Float},
    {"cos", "'t[..s] -> 't[..s]", ElemClass::Float},
    {"abs", "'t[..s] -> 't[..s]", ElemClass::Num},
    {"matmul_f32", "'t[..b, m, k] -> 't[..b, k, n] -> f32[..b, m, n]", ElemClass::None},
    {"transpose", "'t[..b, m, n] -> 't[..b, n, m]", ElemClass::None},
    {"concat", "'t[..b, n] -> 't[..b, m] -> 't[..b, n + m]", ElemClass::None},
    {"expand", "'t[..s] -> 't[..s, 1]", ElemClass::None},
    {"gather", "'t[n, ..s] -> i64[m] -> 't[m, ..s]", ElemClass::None},
    // Built-ins with a shape argument: these schemes stand for `weft check`; handle_apply.cpp types
    // their applications from the shape written in the program.
    {"zeros", "i64[r] -> 't[..s]", ElemClass::Num},
    {"ones", "i64[r] -> 't[..s]", ElemClass::Num},
    {"full", "i64[r] -> 't[] -> 't[..s]", ElemClass::None},
    {"iota", "i64[1] -> i64[n]", ElemClass::None},
    {"reshape", "i64[r] -> 't[..s] -> 't[..u]", ElemClass::None},
    {"permute", "i64[r] -> 't[..s] -> 't[..u]", ElemClass::None},
    {"dequant", "i64[1] -> 'q[..s, k] -> 't[..s, g] -> 't[..s, k]", ElemClass::Float},
    {"random", "i64[r] -> i64 -> 't[..s]", ElemClass::None},
    // Host-only built-ins, for `main`.
    {"load", "string -> 't[..s]", ElemClass::None},
    {"save", "string -> 't[..s] -> ()", ElemClass::None},
    {"arg", "i64 -> string", ElemClass::None},
    {"print", "'t[..s] -> ()", ElemClass::None},
    {"time", "(() -> 'a) -> ('a, f64)", ElemClass::None},
};

}  // namespace

const std::vector<std::string>& BuiltinNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const BuiltinSpec& spec : kBuiltins) out.emplace_back(spec.name);
    return out;
  }();
  return names;
}

void Checker::LoadPrelude() {
  for (const BuiltinSpec& spec : kBuiltins) {
    Diagnostics errors;
    FileId file = sources_.Add("<prelude>", spec.type);
    syntax::TypeParse parsed = syntax::ParseTypeExpression(sources_, file, errors);
    if (!parsed.type.valid()) WEFT_INTERNAL_ERROR(std::string("bad prelude type for ") + spec.name);
    const syntax::Ast* saved = ast_;
    ast_ = &parsed.ast;
    std::size_t mark = env_.Mark();
    AnnotationScope scope;
    scope.new_sizes = VarKind::Flexible;
    vars_.Enter();
    TypeRef type = FromAnnotation(parsed.type, scope);
    if (auto t = scope.elem_vars.find("t"); t != scope.elem_vars.end()) vars_.info(t->second).cls = spec.cls;
    vars_.Leave();
    env_.Reset(mark);
    ast_ = saved;
    Binding binding;
    binding.scheme = Generalize(type);
    builtins_.emplace(spec.name, std::move(binding));
  }
  obligations_.clear();  // the prelude's own dims are non-negative by construction
}

}  // namespace weft::check
