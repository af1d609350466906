// Result<T, E>: a value or an error, for operations whose failures are users' mistakes (a dim that
// overflows, a layout precondition typed at the command line), so a failure is returned, never
// asserted. std::expected would do, but GCC 12 lacks it.
#pragma once

#include <type_traits>
#include <utility>
#include <variant>

namespace weft {

template <typename T, typename E>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::in_place_index<0>, std::move(value)) {}
  Result(E error) : state_(std::in_place_index<1>, std::move(error)) {}
  // Anything that converts to the error type, but not to the value type (a module's own error struct).
  template <typename U>
  requires(!std::is_convertible_v<U, T> && !std::is_same_v<std::decay_t<U>, E> && std::is_constructible_v<E, U>)
      Result(U&& error)
      : state_(std::in_place_index<1>, E(std::forward<U>(error))) {}

  bool ok() const { return state_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(state_); }
  const T& value() const& { return std::get<0>(state_); }
  T&& value() && { return std::get<0>(std::move(state_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  // @pre !ok()
  const E& error() const { return std::get<1>(state_); }

 private:
  std::variant<T, E> state_;
};

}  // namespace weft
