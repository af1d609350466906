/* The C ABI of a shared library that `weft build --shared FILE -o libNAME.so` makes (docs/python.md):
 * each exported `def` of FILE is an entry of the table `weft_library_exports`, called through
 * `weft_library_call` with tensors in host or GPU memory, its results returned as DLPack tensors
 * that the caller owns. The weft Python package (python/weft) is written over this header with
 * ctypes; C programs can `dlopen` the library and use it the same way.
 *
 * - The library holds the runtime (statically, its symbols hidden) and the program's kernels, as
 *   executables do (docs/building.md). Only `weft_library_*` and `weft_last_error` are exported.
 * - A call binds the export's sizes from its arguments' shapes, checks their dtypes and dims
 *   against the parameters' types and the `where` facts it needs, then runs the function's graph
 *   (docs/graph.md) on `stream`: launches, allocations (stream-ordered, from the device's default
 *   pool) and frees all go there, so the call does not wait for the GPU. A failed check is
 *   WEFT_ERROR_SHAPE with one line that names the parameter or the fact; nothing of the call is
 *   left behind after a failure.
 * - One call at a time (a mutex); the GPU's primary context, made current on the calling thread.
 */
#ifndef WEFT_LIBRARY_H
#define WEFT_LIBRARY_H

#include <stdint.h>

#include "weft/runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* DLPack's ABI (dlpack.h, v0.8 and 1.x alike for these structs), declared under weft's names so
 * that this header needs nothing else and cannot clash with a dlpack.h included beside it. */
typedef struct weft_dl_device {
  int32_t device_type; /* 1: CPU (kDLCPU), 2: CUDA (kDLCUDA) */
  int32_t device_id;
} weft_dl_device;
typedef struct weft_dl_dtype {
  uint8_t code; /* 0 int, 1 uint, 2 float, 4 bfloat, 6 bool, 10 float8_e4m3fn, 12 float8_e5m2 */
  uint8_t bits;
  uint16_t lanes;
} weft_dl_dtype;
typedef struct weft_dl_tensor {
  void* data;
  weft_dl_device device;
  int32_t ndim;
  weft_dl_dtype dtype;
  int64_t* shape;
  int64_t* strides; /* in elements; results give C order's */
  uint64_t byte_offset;
} weft_dl_tensor;
typedef struct weft_dl_managed_tensor {
  weft_dl_tensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(struct weft_dl_managed_tensor* self);
} weft_dl_managed_tensor;

/* One exported function: a `def` of the file, or an instance of a polymorphic one
 * (`--instance 'softmax f32[_, _]'`), with its dtypes and ranks fixed. */
typedef struct weft_library_export {
  const char* name;      /* the def's name: several instances share it */
  const char* signature; /* "rmsnorm : f32[n, d] -> f32[d] -> f32[n, d]", as instantiated */
  const char* target;    /* the kernels' target: "sm_90a" or "sm_80" */
  int32_t uses_gpu;      /* 0: the function launches no kernel */
  int32_t param_count;
  const char* const* param_names;
  const int32_t* param_dtypes; /* weft_dtype */
  const int32_t* param_ranks;
  const char* const* param_types; /* "f32[n, d]": the dims its argument's shape must have */
  int32_t result_count;
  const int32_t* result_dtypes; /* weft_dtype */
  void (*body)(void);           /* generated; called by weft_library_call only */
} weft_library_export;

/* Generated in each library (codegen/host.h's table): the exports, and FILE's path and text (for
 * the interpreter path of the Python package, which runs them with `weft call`). */
extern const int32_t weft_library_export_count;
extern const weft_library_export weft_library_exports[];
extern const char* const weft_library_source_path;
extern const char* const weft_library_source;

/* Where a call's results go. */
typedef enum weft_library_results {
  WEFT_RESULTS_DEVICE = 0, /* GPU memory, allocated on the call's stream: the data the kernels wrote */
  WEFT_RESULTS_HOST = 1,   /* host memory (copied after the call's work is done) */
  WEFT_RESULTS_SHAPES = 2  /* nothing runs: checks only, results without data (a fake tensor's shape) */
} weft_library_results;

/* Whether the calling process can run `export`'s kernels: 0 with the reason in weft_last_error()
 * (no driver, no GPU, a GPU the target does not run on). Starts the driver on first use. */
int32_t weft_library_gpu_usable(const weft_library_export* export_);

/* Calls `export_`. `args` holds, for each parameter in order, 4 + rank int64 values: the data's
 * address, where it is (1 host, 2 GPU), its weft_dtype, its rank, then its dims; the elements
 * dense in C order. `stream` is a CUstream (0: the default stream). `results` receives
 * result_count tensors; each is the caller's, to release with its deleter (DLPack's rule), which
 * frees GPU memory in the order of `stream`. Returns WEFT_OK, or the failure's status with
 * weft_last_error()'s message. */
weft_status weft_library_call(const weft_library_export* export_, const int64_t* args, void* stream,
                              weft_library_results where, weft_dl_managed_tensor** results);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_LIBRARY_H */
