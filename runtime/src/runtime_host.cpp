// The host half of the C API (weft/runtime.h), which needs no GPU: errors and weft_fail, host
// tensors over HostTensor, `.npy` files over npy.h, and `random` over random.h.
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>

#include "runtime_internal.h"
#include "weft/npy.h"
#include "weft/random.h"
#include "weft/runtime.h"
#include "weft/tensor.h"

struct weft_host_tensor {
  weft::runtime::HostTensor tensor;
};

namespace weft::runtime {
namespace {

thread_local std::string last_error;

// weft_dtype is Dtype's order (dtypes.def), so a cast converts.
static_assert(static_cast<int>(Dtype::Bool) == WEFT_DTYPE_BOOL && static_cast<int>(Dtype::I4) == WEFT_DTYPE_I4 &&
              static_cast<int>(Dtype::I8) == WEFT_DTYPE_I8 && static_cast<int>(Dtype::I16) == WEFT_DTYPE_I16 &&
              static_cast<int>(Dtype::I32) == WEFT_DTYPE_I32 && static_cast<int>(Dtype::I64) == WEFT_DTYPE_I64 &&
              static_cast<int>(Dtype::U4) == WEFT_DTYPE_U4 && static_cast<int>(Dtype::U8) == WEFT_DTYPE_U8 &&
              static_cast<int>(Dtype::U16) == WEFT_DTYPE_U16 && static_cast<int>(Dtype::U32) == WEFT_DTYPE_U32 &&
              static_cast<int>(Dtype::U64) == WEFT_DTYPE_U64 && static_cast<int>(Dtype::F8E4M3) == WEFT_DTYPE_F8E4M3 &&
              static_cast<int>(Dtype::F8E5M2) == WEFT_DTYPE_F8E5M2 && static_cast<int>(Dtype::F16) == WEFT_DTYPE_F16 &&
              static_cast<int>(Dtype::BF16) == WEFT_DTYPE_BF16 && static_cast<int>(Dtype::F32) == WEFT_DTYPE_F32 &&
              static_cast<int>(Dtype::F64) == WEFT_DTYPE_F64);
constexpr int kDtypeCount = 17;
constexpr int kMaxRank = 64;

bool ValidDtype(weft_dtype dtype) {
  return static_cast<int>(dtype) >= 0 && static_cast<int>(dtype) < kDtypeCount;
}

std::string DimsText(int rank) {
  if (rank == 0) return "0 dims (a scalar)";
  return std::to_string(rank) + (rank == 1 ? " dim" : " dims");
}

}  // namespace

weft_status SetError(weft_status status, std::string message) {
  std::string line;
  for (std::size_t i = 0; i < message.size(); ++i) {
    if (message[i] != '\n') {
      line += message[i];
    } else if (i + 1 < message.size()) {
      line += "; ";
    }
  }
  last_error = std::move(line);
  return status;
}

std::string BytesText(std::uint64_t bytes) {
  static constexpr const char* kUnits[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return std::to_string(bytes) + (bytes == 1 ? " byte" : " bytes");
  int unit = 0;
  double value = static_cast<double>(bytes);
  while (value >= 1024 && unit < 6) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", value);
  std::string s = text;
  if (s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0) s.resize(s.size() - 2);
  return s + " " + kUnits[unit];
}

namespace {
thread_local bool in_call = false;
thread_local weft_status failing_status = WEFT_ERROR_LAUNCH;
}  // namespace

void SetInCall(bool call) {
  in_call = call;
  failing_status = WEFT_ERROR_LAUNCH;
}

void SetFailingStatus(weft_status status) {
  failing_status = status;
}

}  // namespace weft::runtime

using weft::Dtype;
using weft::Spelling;
using weft::runtime::HostTensor;
using weft::runtime::SetError;

extern "C" {

const char* weft_last_error(void) {
  return weft::runtime::last_error.c_str();
}

void weft_fail(const char* message) {
  if (weft::runtime::in_call) {
    std::string text = message != nullptr && *message != '\0' ? message : "unknown error";
    throw weft::runtime::CallFailure{weft::runtime::failing_status, std::move(text)};
  }
  std::fflush(stdout);
  std::fprintf(stderr, "weft: error: %s\n", message != nullptr && *message != '\0' ? message : "unknown error");
  std::fflush(stderr);
  std::exit(1);
}

void weft_failf(const char* format, ...) {
  char buffer[4096];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buffer, sizeof buffer, format != nullptr ? format : "unknown error", args);
  va_end(args);
  weft_fail(buffer);
}

void weft_check(weft_status status) {
  if (status == WEFT_OK) return;
  weft::runtime::SetFailingStatus(status);
  weft_fail(weft_last_error());
}

weft_status weft_host_tensor_create(weft_host_tensor** tensor, weft_dtype dtype, int rank, const int64_t* shape) {
  if (tensor == nullptr) return SetError(WEFT_ERROR_INVALID_ARGUMENT, "`weft_host_tensor_create`: `tensor` is null");
  *tensor = nullptr;
  if (!weft::runtime::ValidDtype(dtype)) {
    return SetError(WEFT_ERROR_INVALID_ARGUMENT,
                    "`weft_host_tensor_create`: " + std::to_string(static_cast<int>(dtype)) + " is not a weft_dtype");
  }
  if (rank < 0 || rank > weft::runtime::kMaxRank) {
    return SetError(WEFT_ERROR_INVALID_ARGUMENT,
                    "`weft_host_tensor_create`: the rank " + std::to_string(rank) + " is not 0 to 64");
  }
  if (rank > 0 && shape == nullptr) {
    return SetError(WEFT_ERROR_INVALID_ARGUMENT, "`weft_host_tensor_create`: `shape` is null");
  }
  std::vector<std::int64_t> dims(shape, shape + rank);
  std::int64_t count = 1;
  for (int i = 0; i < rank; ++i) {
    if (dims[i] < 0) {
      return SetError(WEFT_ERROR_INVALID_ARGUMENT, "`weft_host_tensor_create`: dim " + std::to_string(i) + " is " +
                                                       std::to_string(dims[i]) + ", below 0");
    }
    if (dims[i] != 0 && count > (std::int64_t{1} << 62) / dims[i]) {
      return SetError(WEFT_ERROR_INVALID_ARGUMENT, "`weft_host_tensor_create`: the shape " +
                                                       weft::runtime::ShapeText(dims) + " has too many elements");
    }
    count *= dims[i];
  }
  const Dtype d = static_cast<Dtype>(dtype);
  try {
    auto t = new weft_host_tensor{HostTensor::Zeros(d, dims)};
    *tensor = t;
  } catch (const std::bad_alloc&) {
    return SetError(WEFT_ERROR_OUT_OF_MEMORY,
                    "out of host memory: cannot allocate a " + std::string(Spelling(d)) +
                        weft::runtime::ShapeText(dims) + " tensor (" +
                        weft::runtime::BytesText(static_cast<std::uint64_t>(weft::runtime::ByteSize(d, count))) + ")");
  }
  return WEFT_OK;
}

void weft_host_tensor_free(weft_host_tensor* tensor) {
  delete tensor;
}

weft_dtype weft_host_tensor_dtype(const weft_host_tensor* tensor) {
  return tensor != nullptr ? static_cast<weft_dtype>(tensor->tensor.dtype) : WEFT_DTYPE_F32;
}

int weft_host_tensor_rank(const weft_host_tensor* tensor) {
  return tensor != nullptr ? tensor->tensor.Rank() : 0;
}

const int64_t* weft_host_tensor_shape(const weft_host_tensor* tensor) {
  return tensor != nullptr ? tensor->tensor.shape.data() : nullptr;
}

int64_t weft_host_tensor_count(const weft_host_tensor* tensor) {
  return tensor != nullptr ? tensor->tensor.Count() : 0;
}

void* weft_host_tensor_data(weft_host_tensor* tensor) {
  return tensor != nullptr ? tensor->tensor.bytes.data() : nullptr;
}

uint64_t weft_host_tensor_bytes(const weft_host_tensor* tensor) {
  return tensor != nullptr ? tensor->tensor.bytes.size() : 0;
}

weft_status weft_npy_load(weft_host_tensor** tensor, const char* path) {
  if (tensor == nullptr) return SetError(WEFT_ERROR_INVALID_ARGUMENT, "`weft_npy_load`: `tensor` is null");
  *tensor = nullptr;
  if (path == nullptr) return SetError(WEFT_ERROR_INVALID_ARGUMENT, "`weft_npy_load`: `path` is null");
  auto read = weft::runtime::ReadNpy(path);
  if (!read) return SetError(WEFT_ERROR_IO, read.error().message);
  *tensor = new weft_host_tensor{std::move(*read)};
  return WEFT_OK;
}

weft_status weft_npy_load_expecting(weft_host_tensor** tensor, const char* path, weft_dtype dtype, int rank) {
  if (weft_status s = weft_npy_load(tensor, path)) return s;
  const HostTensor& t = (*tensor)->tensor;
  if (static_cast<int>(t.dtype) != static_cast<int>(dtype) || t.Rank() != rank) {
    std::string expected = weft::runtime::ValidDtype(dtype) ? std::string(Spelling(static_cast<Dtype>(dtype))) : "?";
    std::string message = std::string(path) + ": the program expects `" + expected + "` with " +
                          weft::runtime::DimsText(rank) + " but the file holds " + std::string(Spelling(t.dtype)) +
                          weft::runtime::ShapeText(t.shape);
    weft_host_tensor_free(*tensor);
    *tensor = nullptr;
    return SetError(WEFT_ERROR_IO, message);
  }
  return WEFT_OK;
}

weft_status weft_npy_save(const char* path, const weft_host_tensor* tensor) {
  if (path == nullptr) return SetError(WEFT_ERROR_INVALID_ARGUMENT, "`weft_npy_save`: `path` is null");
  if (tensor == nullptr) return SetError(WEFT_ERROR_INVALID_ARGUMENT, "`weft_npy_save`: `tensor` is null");
  auto written = weft::runtime::WriteNpy(path, tensor->tensor);
  if (!written) return SetError(WEFT_ERROR_IO, written.error().message);
  return WEFT_OK;
}

void weft_philox4x32_10(const uint32_t counter[4], const uint32_t key[2], uint32_t out[4]) {
  std::array<std::uint32_t, 4> block =
      weft::runtime::Philox4x32x10({counter[0], counter[1], counter[2], counter[3]}, {key[0], key[1]});
  for (int i = 0; i < 4; ++i) out[i] = block[i];
}

void weft_random_block(uint64_t seed, uint64_t index, uint32_t out[4]) {
  const uint32_t counter[4] = {static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32), 0, 0};
  const uint32_t key[2] = {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
  weft_philox4x32_10(counter, key, out);
}

weft_status weft_random_fill(weft_host_tensor* tensor, uint64_t seed) {
  if (tensor == nullptr) return SetError(WEFT_ERROR_INVALID_ARGUMENT, "`weft_random_fill`: `tensor` is null");
  weft::runtime::FillRandom(tensor->tensor, seed);
  return WEFT_OK;
}

}  // extern "C"
