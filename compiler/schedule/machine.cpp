#include "schedule/machine.h"

namespace weft::schedule {

std::string_view Spelling(Unit unit) {
  switch (unit) {
    case Unit::kCopy:
      return "copy engine";
    case Unit::kTensorCore:
      return "tensor cores";
    case Unit::kSfu:
      return "SFU";
    case Unit::kAlu:
      return "ALU";
  }
  return "?";
}

const Machine& H100() {
  static const Machine machine{.name = "H100 SXM"};
  return machine;
}

const Machine& H200() {
  static const Machine machine{.name = "H200", .hbm_bytes_per_second = 4.8e12};
  return machine;
}

}  // namespace weft::schedule
