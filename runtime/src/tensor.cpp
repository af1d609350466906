#include "weft/tensor.h"

namespace weft::runtime {

std::int64_t HostTensor::Count() const {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

HostTensor HostTensor::Zeros(Dtype dtype, std::vector<std::int64_t> shape) {
  HostTensor t{dtype, std::move(shape), {}};
  t.bytes.assign(static_cast<std::size_t>(ByteSize(dtype, t.Count())), 0);
  return t;
}

std::int64_t ByteSize(Dtype dtype, std::int64_t count) {
  int bits = Bits(dtype);
  if (bits < 8) return (count * bits + 7) / 8;
  return count * (bits / 8);
}

std::string ShapeText(const std::vector<std::int64_t>& shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(shape[i]);
  }
  return out + "]";
}

}  // namespace weft::runtime
