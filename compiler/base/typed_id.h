// Small typed indices into arenas (Carbon's ValueStore idea): an ExprId cannot be mixed up with a
// TypeId, and both are four bytes.
#pragma once

#include <compare>
#include <cstdint>
#include <limits>

namespace weft {

template <typename Tag>
struct TypedId {
  static constexpr std::uint32_t kInvalid = std::numeric_limits<std::uint32_t>::max();

  std::uint32_t index = kInvalid;

  constexpr TypedId() = default;
  constexpr explicit TypedId(std::uint32_t i) : index(i) {}

  constexpr bool valid() const { return index != kInvalid; }
  constexpr explicit operator bool() const { return valid(); }
  friend constexpr auto operator<=>(TypedId, TypedId) = default;
};

}  // namespace weft
