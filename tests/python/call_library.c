/* The C-level test of `weft build --shared` (tests/python/CMakeLists.txt): dlopens a library built
 * from model.weft, prints its export table, and calls `scale_add` and `blocks` through
 * weft/library.h's ABI on host arrays, with the runtime's fake driver (whose kernels write nothing:
 * this checks the ABI, shapes and messages; tests/gpu checks values on a GPU). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft/library.h"

typedef weft_status (*call_fn)(const weft_library_export*, const int64_t*, void*, weft_library_results,
                               weft_dl_managed_tensor**);
typedef const char* (*error_fn)(void);

static const weft_library_export* find(const weft_library_export* table, int count, const char* name) {
  for (int i = 0; i < count; ++i)
    if (strcmp(table[i].name, name) == 0) return &table[i];
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  void* library = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    printf("dlopen: %s\n", dlerror());
    return 1;
  }
  const int32_t* count = (const int32_t*)dlsym(library, "weft_library_export_count");
  const weft_library_export* table = (const weft_library_export*)dlsym(library, "weft_library_exports");
  call_fn call = (call_fn)dlsym(library, "weft_library_call");
  error_fn last_error = (error_fn)dlsym(library, "weft_last_error");
  if (!count || !table || !call || !last_error || dlsym(library, "weft_program_launch") != NULL) {
    printf("missing or leaked symbols\n");
    return 1;
  }
  for (int i = 0; i < *count; ++i) {
    printf("export %s: %s (target %s, %s, %d result%s)\n", table[i].name, table[i].signature, table[i].target,
           table[i].uses_gpu ? "GPU" : "host", table[i].result_count, table[i].result_count == 1 ? "" : "s");
    for (int p = 0; p < table[i].param_count; ++p)
      printf("  param %s: %s (dtype %d, rank %d)\n", table[i].param_names[p], table[i].param_types[p],
             table[i].param_dtypes[p], table[i].param_ranks[p]);
  }
  /* scale_add x: f32[3, 4], b: f32[4]. */
  float x[12], b[4];
  for (int i = 0; i < 12; ++i) x[i] = (float)i;
  for (int i = 0; i < 4; ++i) b[i] = 1.0f;
  const weft_library_export* scale_add = find(table, *count, "scale_add");
  int64_t args[] = {(int64_t)(intptr_t)x, 1, WEFT_DTYPE_F32, 2, 3, 4, (int64_t)(intptr_t)b, 1, WEFT_DTYPE_F32, 1, 4};
  weft_dl_managed_tensor* result = NULL;
  weft_status s = call(scale_add, args, NULL, WEFT_RESULTS_HOST, &result);
  printf("scale_add: status %d, %s\n", (int)s, s ? last_error() : "ok");
  if (result) {
    printf("  result: ndim %d, shape [%lld, %lld], dtype code %d bits %d, device %d\n", result->dl_tensor.ndim,
           (long long)result->dl_tensor.shape[0], (long long)result->dl_tensor.shape[1], result->dl_tensor.dtype.code,
           result->dl_tensor.dtype.bits, result->dl_tensor.device.device_type);
    result->deleter(result);
  }
  /* A dim that breaks the type: b is f32[5]. */
  int64_t bad[] = {(int64_t)(intptr_t)x, 1, WEFT_DTYPE_F32, 2, 3, 4, (int64_t)(intptr_t)b, 1, WEFT_DTYPE_F32, 1, 5};
  s = call(scale_add, bad, NULL, WEFT_RESULTS_HOST, &result);
  printf("scale_add, b of 5: status %d, %s\n", (int)s, last_error());
  /* A dtype that breaks it. */
  int64_t wrong[] = {(int64_t)(intptr_t)x, 1, WEFT_DTYPE_I32, 2, 3, 4, (int64_t)(intptr_t)b, 1, WEFT_DTYPE_F32, 1, 4};
  s = call(scale_add, wrong, NULL, WEFT_RESULTS_HOST, &result);
  printf("scale_add, x of i32: status %d, %s\n", (int)s, last_error());
  /* A `where` fact that does not hold: n = 6. */
  const weft_library_export* blocks = find(table, *count, "blocks");
  int64_t six[] = {(int64_t)(intptr_t)x, 1, WEFT_DTYPE_F32, 1, 6};
  s = call(blocks, six, NULL, WEFT_RESULTS_HOST, &result);
  printf("blocks, n = 6: status %d, %s\n", (int)s, last_error());
  /* Shapes only (a fake tensor's): nothing runs. */
  int64_t eight[] = {0, 2, WEFT_DTYPE_F32, 1, 8};
  s = call(blocks, eight, NULL, WEFT_RESULTS_SHAPES, &result);
  printf("blocks, shapes of n = 8: status %d, shape [%lld]\n", (int)s, s ? -1LL : (long long)result->dl_tensor.shape[0]);
  if (!s) result->deleter(result);
  return 0;
}
