// Element types (declared in dtypes.def).
#pragma once

#include <cstdint>
#include <string_view>

namespace weft {

enum class Dtype : std::uint8_t {
#define WEFT_DTYPE(Name, Spelling, Bits) Name,
#include "base/dtypes.def"
};

constexpr std::string_view Spelling(Dtype dtype) {
  switch (dtype) {
#define WEFT_DTYPE(Name, Text, Bits) \
  case Dtype::Name:                  \
    return Text;
#include "base/dtypes.def"
  }
  return "?";
}

constexpr int Bits(Dtype dtype) {
  switch (dtype) {
#define WEFT_DTYPE(Name, Text, Width) \
  case Dtype::Name:                   \
    return Width;
#include "base/dtypes.def"
  }
  return 0;
}

}  // namespace weft
