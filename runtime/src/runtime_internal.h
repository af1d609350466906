// What runtime.cpp (the device) and runtime_host.cpp (errors, host tensors, .npy, random) share.
#pragma once

#include <cstdint>
#include <string>

#include "weft/runtime.h"

namespace weft::runtime {

// Records `message` as the calling thread's last error (newlines become "; ", so that weft_fail
// prints one line) and returns `status`.
weft_status SetError(weft_status status, std::string message);

// "0 bytes", "1 KiB", "78.8 GiB", "1 PiB": a size for messages, one decimal at most.
std::string BytesText(std::uint64_t bytes);

}  // namespace weft::runtime
