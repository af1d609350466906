// `print` (language.md, host-only built-ins) shows a tensor as NumPy 1.24 prints an array with its
// default options, so that a weft program's output can be compared with a NumPy reference by eye
// or by diff: precision 8 in 'maxprec' mode, summarization with `...` above 1000 elements (3 edge
// items), lines wrapped at 75 columns, scientific notation when NumPy would choose it. Rank-0
// tensors print as NumPy scalars (`1.5`, `3`, `True`). bf16 and f8 print as NumPy prints float16,
// with the shortest digits that round-trip in their own dtype (docs/runtime.md).
#pragma once

#include <string>

#include "weft/tensor.h"

namespace weft::runtime {

// What `print(numpy_array)` prints for `tensor` (no trailing newline).
std::string FormatTensor(const HostTensor& tensor);

}  // namespace weft::runtime
