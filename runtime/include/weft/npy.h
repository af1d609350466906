// `.npy` files are how weft programs exchange tensors with the world (`load`, `save`): NumPy's
// format (versions 1.0, 2.0, 3.0), little-endian, C order. Weft's dtypes that NumPy lacks (bf16,
// f8e4m3, f8e5m2, i4, u4) are stored as one-field structured arrays named after the dtype;
// docs/npy.md states the convention and every error. A bad file is a user's mistake, so reading
// returns one error naming the file and never crashes, whatever the bytes.
#pragma once

#include <string>
#include <string_view>
#include <variant>

#include "base/result.h"
#include "weft/tensor.h"

namespace weft::runtime {

struct NpyError {
  std::string message;  // lowercase, starts with the file's name: `a.npy: ...`
};

// Reads the `.npy` file at `path`.
Result<HostTensor, NpyError> ReadNpy(const std::string& path);

// Reads a `.npy` file's contents; `name` stands for the file in messages.
Result<HostTensor, NpyError> ReadNpyBytes(std::string_view bytes, const std::string& name);

// The bytes of `tensor` as a `.npy` file: version 1.0, or 2.0 when the header needs more than 64 KiB.
// An inconsistent tensor (bytes not matching dtype and shape, a negative dim) is an error.
Result<std::string, NpyError> EncodeNpy(const HostTensor& tensor, const std::string& name);

// Writes `tensor` to `path` (EncodeNpy, then the file).
Result<std::monostate, NpyError> WriteNpy(const std::string& path, const HostTensor& tensor);

}  // namespace weft::runtime
