// Result<T>: a value or a user-facing error message. Layout operations have preconditions that users
// break by typing expressions at a command line (`weft layout`, the REPL), so a failed precondition
// is a returned value, never an assert. std::expected would do, but GCC 12 lacks it.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace weft::layout {

struct Error {
  std::string message;  // lowercase, no final period, code in backticks (style.md)
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}
  Result(Error error) : state_(std::move(error)) {}

  bool ok() const { return state_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(state_); }
  const T& value() const& { return std::get<0>(state_); }
  T&& value() && { return std::get<0>(std::move(state_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const std::string& error() const { return std::get<1>(state_).message; }

 private:
  std::variant<T, Error> state_;
};

inline Error MakeError(std::string message) {
  return Error{std::move(message)};
}

}  // namespace weft::layout

// Unwraps a Result into `var` or returns its error from the enclosing function.
#define WEFT_LAYOUT_TRY(var, expr)                                              \
  auto var##_result_ = (expr);                                                  \
  if (!var##_result_.ok()) return ::weft::layout::Error{var##_result_.error()}; \
  auto var = std::move(var##_result_).value()
