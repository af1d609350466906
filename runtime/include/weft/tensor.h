// A tensor in host memory, as the interpreter computes with it and as `.npy` files and compiled
// programs exchange it: dense, C order, elements stored as their dtype's bit pattern
// (f16/bf16 as 16-bit words, f8 as bytes, bool as one byte 0 or 1). `i4`/`u4` are packed two to a
// byte (language.md), element 2k in the low nibble of byte k and element 2k+1 in the high nibble.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/dtype.h"

namespace weft::runtime {

struct HostTensor {
  Dtype dtype = Dtype::F32;
  std::vector<std::int64_t> shape;  // empty: a scalar
  std::vector<std::uint8_t> bytes;  // ByteSize(dtype, Count()) of them

  std::int64_t Count() const;  // number of elements (1 for a scalar)
  int Rank() const { return static_cast<int>(shape.size()); }

  // A tensor of the given dtype and shape with every bit zero (0, 0.0 or false).
  static HostTensor Zeros(Dtype dtype, std::vector<std::int64_t> shape);
};

// Bytes that `count` elements of `dtype` occupy (packed types round up to whole bytes).
std::int64_t ByteSize(Dtype dtype, std::int64_t count);

// `[2, 3]`, as messages print a shape.
std::string ShapeText(const std::vector<std::int64_t>& shape);

}  // namespace weft::runtime
