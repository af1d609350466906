/* weft/runtime.h compiled as C (C11): the API stays usable from C. runtime_api_test.cpp calls this. */
#include "weft/runtime.h"

_Static_assert(sizeof(weft_tensor_map) == 128 && _Alignof(weft_tensor_map) == 128, "a CUtensorMap");

/* A 2 x 3 i32 tensor through the C API: its element count, or -1. */
long long weft_c_header_test(void) {
  const int64_t shape[2] = {2, 3};
  weft_host_tensor* t = 0;
  if (weft_host_tensor_create(&t, WEFT_DTYPE_I32, 2, shape) != WEFT_OK) return -1;
  long long count = (long long)weft_host_tensor_count(t);
  weft_host_tensor_free(t);
  return count;
}
