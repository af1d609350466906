// Result<T>: a value or a user-facing error message. Layout operations have preconditions that users
// break by typing expressions at a command line (`weft layout`, the REPL), so a failed precondition
// is a returned value, never an assert. std::expected would do, but GCC 12 lacks it.
#pragma once

#include <string>
#include <utility>
#include <variant>

#include "base/result.h"

namespace weft::layout {

struct Error {
  std::string message;  // lowercase, no final period, code in backticks (style.md)
  explicit operator std::string() const { return message; }
};

// A value or the message of a failed precondition.
template <typename T>
using Result = weft::Result<T, std::string>;

inline Error MakeError(std::string message) {
  return Error{std::move(message)};
}

}  // namespace weft::layout

// Unwraps a Result into `var` or returns its error from the enclosing function.
#define WEFT_LAYOUT_TRY(var, expr)                                              \
  auto var##_result_ = (expr);                                                  \
  if (!var##_result_.ok()) return ::weft::layout::Error{var##_result_.error()}; \
  auto var = std::move(var##_result_).value()
