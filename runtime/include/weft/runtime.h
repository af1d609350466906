/* The weft runtime's C API: what compiled weft programs (LLVM-generated host code) and C or C++
 * users call to run kernels on an NVIDIA GPU and to exchange tensors through `.npy` files.
 *
 * The CUDA driver is not linked: `weft_init` loads `libcuda.so.1` with dlopen (the variable
 * WEFT_CUDA_LIBRARY names another file, for tests), so a program that uses this library needs only
 * libc and, to run kernels, an NVIDIA driver. docs/runtime.md describes the API with an example.
 *
 * Conventions:
 * - Every function that can fail returns a `weft_status`; WEFT_OK is 0. On failure,
 *   `weft_last_error()` gives one line saying what failed and why (lowercase, no final period, as
 *   weft's diagnostics are), e.g. "out of GPU memory: cannot allocate 1 PiB (1125899906842624
 *   bytes): 78.8 GiB of 79.2 GiB free on GPU 0 (NVIDIA H100 80GB HBM3)".
 * - `weft_check(status)` turns a failure into `weft_fail(weft_last_error())`: the program prints
 *   "weft: error: MESSAGE" on stderr and exits with status 1. Generated code calls the API this way.
 * - Handles (`weft_module`, `weft_kernel`, `weft_event`, `weft_host_tensor`) are opaque. A null
 *   handle or output pointer is WEFT_ERROR_INVALID_ARGUMENT, never a crash.
 * - One GPU, its primary context, the default stream, one host thread: device calls are meant to
 *   be made from the thread that called `weft_init`. The last error is kept per thread.
 */
#ifndef WEFT_RUNTIME_H
#define WEFT_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define WEFT_PRINTF_FORMAT(f, a) __attribute__((format(printf, f, a)))
#else
#define WEFT_PRINTF_FORMAT(f, a)
#endif

#ifdef __cplusplus
extern "C" {
#define WEFT_NORETURN [[noreturn]]
#define WEFT_ALIGNAS(n) alignas(n)
#else
#define WEFT_NORETURN _Noreturn
#define WEFT_ALIGNAS(n) _Alignas(n)
#endif

/* ---- Status and errors ------------------------------------------------------------------------- */

typedef enum weft_status {
  WEFT_OK = 0,
  WEFT_ERROR_INVALID_ARGUMENT = 1, /* a null pointer, a size or launch shape out of range, a bad TMA argument */
  WEFT_ERROR_NOT_INITIALIZED = 2,  /* a device call before a successful weft_init */
  WEFT_ERROR_NO_DRIVER = 3,        /* libcuda.so.1 cannot be loaded, or the driver does not start */
  WEFT_ERROR_NO_DEVICE = 4,        /* no GPU, or WEFT_DEVICE names none */
  WEFT_ERROR_OUT_OF_MEMORY = 5,    /* a device allocation the GPU cannot hold */
  WEFT_ERROR_MODULE = 6,           /* a PTX or cubin image the driver rejects, or a kernel not in it */
  WEFT_ERROR_LAUNCH = 7,           /* a launch the driver refuses, or a kernel that failed while running */
  WEFT_ERROR_DRIVER = 8,           /* any other error the driver reports */
  WEFT_ERROR_IO = 9,               /* a `.npy` file that cannot be read or written */
  WEFT_ERROR_SHAPE = 10            /* a library call's tensor that its parameter's type, or a `where` fact, refuses */
} weft_status;

/* The message of the calling thread's last failure ("" if none). Valid until its next failure. */
const char* weft_last_error(void);

/* Prints "weft: error: MESSAGE" (one line) on stderr and exits with status 1. */
WEFT_NORETURN void weft_fail(const char* message);

/* weft_fail with a printf-style message, e.g. for a `where` clause that a loaded tensor breaks:
 * weft_failf("x.npy: `where n %% 4 == 0` does not hold: n = %lld", (long long)n). */
WEFT_NORETURN void weft_failf(const char* format, ...) WEFT_PRINTF_FORMAT(1, 2);

/* Does nothing if `status` is WEFT_OK, else weft_fail(weft_last_error()). */
void weft_check(weft_status status);

/* ---- The device ---------------------------------------------------------------------------------- */

/* Loads the driver, picks the GPU (the variable WEFT_DEVICE, an index from 0; 0 when unset), and
 * makes its primary context current. Calling it again after success does nothing. Failures:
 * WEFT_ERROR_NO_DRIVER (no libcuda.so.1, or cuInit fails), WEFT_ERROR_NO_DEVICE (no GPU, or
 * WEFT_DEVICE is not the index of one: the message says how many there are). */
weft_status weft_init(void);

/* Releases the context and the driver. Handles made before are invalid afterwards. */
void weft_shutdown(void);

typedef struct weft_device_info {
  int index;                      /* the GPU's index, as WEFT_DEVICE picks it */
  char name[256];                 /* e.g. "NVIDIA H100 80GB HBM3" */
  int sm_major, sm_minor;         /* compute capability: 9, 0 for sm_90 */
  int multiprocessors;            /* streaming multiprocessors */
  int max_threads_per_block;      /* 1024 */
  int max_shared_bytes_per_block; /* dynamic + static shared memory a block may opt into */
  uint64_t total_memory;          /* bytes */
  int driver_version;             /* 13000 for CUDA 13.0 */
} weft_device_info;

/* The GPU weft_init picked. */
weft_status weft_device_get_info(weft_device_info* info);

/* ---- Device memory ----------------------------------------------------------------------------- */

typedef uint64_t weft_device_ptr; /* a device address; 0 is none */

/* Allocates `bytes` (0 gives the address 0). Out of memory is WEFT_ERROR_OUT_OF_MEMORY, and the
 * message says how much was asked for and how much the GPU has free. */
weft_status weft_device_alloc(weft_device_ptr* ptr, uint64_t bytes);
/* Frees an allocation; 0 does nothing. */
weft_status weft_device_free(weft_device_ptr ptr);
weft_status weft_copy_to_device(weft_device_ptr dst, const void* src, uint64_t bytes);
weft_status weft_copy_to_host(void* dst, weft_device_ptr src, uint64_t bytes);
weft_status weft_copy_device_to_device(weft_device_ptr dst, weft_device_ptr src, uint64_t bytes);
/* Sets `bytes` bytes to `value` (e.g. 0xFF to poison an output before a test). */
weft_status weft_device_memset(weft_device_ptr dst, uint8_t value, uint64_t bytes);

/* ---- Modules and kernels ----------------------------------------------------------------------- */

typedef struct weft_module weft_module;
typedef struct weft_kernel weft_kernel;

/* Loads a module from an image in memory: PTX text (its `size` bytes, NUL-terminated or not; the
 * driver compiles it for the GPU) or a cubin (an ELF image, starting "\x7f" "ELF"). `name` stands
 * for the module in messages. A rejected image is WEFT_ERROR_MODULE with the driver's compilation
 * log in the message. */
weft_status weft_module_load(weft_module** module, const void* image, size_t size, const char* name);
/* Unloads the module; its kernels become invalid. Null does nothing. */
void weft_module_unload(weft_module* module);

/* The kernel (an `.entry`) called `name`; owned by the module. */
weft_status weft_kernel_get(weft_kernel** kernel, weft_module* module, const char* name);

typedef struct weft_launch_config {
  uint32_t grid[3];      /* blocks in x, y, z: each at least 1 */
  uint32_t block[3];     /* threads in x, y, z: each at least 1, their product at most the kernel's limit */
  uint32_t shared_bytes; /* dynamic shared memory per block */
} weft_launch_config;

/* Launches `kernel` on the default stream. `args[i]` points at the value of parameter i (as
 * cuLaunchKernel takes them; a TMA map parameter points at a weft_tensor_map). The launch shape is
 * checked against the GPU's limits first. More than 48 KiB of dynamic shared memory raises the
 * kernel's CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES first. A kernel that fails while running
 * is reported by the next call that waits for the GPU (weft_synchronize, a copy, an event), which
 * names it. WEFT_SYNC_LAUNCHES=1 in the environment waits after every launch, to pin a failure to
 * its launch. */
weft_status weft_launch(const weft_kernel* kernel, const weft_launch_config* config, void** args);

/* A persistent entry's grid (codegen's DeviceKernel::persistent: it loops over its grid's blocks
 * with the launched grid's stride): `config->grid` holds the kernel's grid and becomes
 * min(its blocks, multiprocessors x blocks of this shape one multiprocessor holds at once) x 1 x 1.
 * Raises the dynamic shared memory limit as weft_launch does. */
weft_status weft_persistent_grid(const weft_kernel* kernel, weft_launch_config* config);

/* Waits for the GPU; a kernel that failed is WEFT_ERROR_LAUNCH, and the message names it. */
weft_status weft_synchronize(void);

/* ---- Timing ------------------------------------------------------------------------------------ */

typedef struct weft_event weft_event;

weft_status weft_event_create(weft_event** event);
void weft_event_destroy(weft_event* event);
/* Records the event on the default stream. */
weft_status weft_event_record(weft_event* event);
/* Waits for `end`, then gives the milliseconds between the two recorded events. */
weft_status weft_event_elapsed_ms(const weft_event* start, const weft_event* end, float* ms);

/* Launches `kernel` `count` times (count >= 1) between two events and gives the elapsed
 * milliseconds of all of them (divide by count for one). Warm up with a launch first. */
weft_status weft_time_launches(const weft_kernel* kernel, const weft_launch_config* config, void** args, int count,
                               float* total_ms);

/* ---- TMA tensor maps (Hopper, sm_90 and newer) --------------------------------------------------- */

/* A CUtensorMap: 128 opaque bytes, 128-byte aligned, passed to a kernel by value. */
typedef struct weft_tensor_map {
  WEFT_ALIGNAS(128) uint64_t opaque[16];
} weft_tensor_map;

/* The values are CUDA's (CUtensorMapDataType and friends). */
typedef enum weft_tma_dtype {
  WEFT_TMA_U8 = 0,
  WEFT_TMA_U16 = 1,
  WEFT_TMA_U32 = 2,
  WEFT_TMA_I32 = 3,
  WEFT_TMA_U64 = 4,
  WEFT_TMA_I64 = 5,
  WEFT_TMA_F16 = 6,
  WEFT_TMA_F32 = 7,
  WEFT_TMA_F64 = 8,
  WEFT_TMA_BF16 = 9,
  WEFT_TMA_F32_FTZ = 10,
  WEFT_TMA_TF32 = 11,
  WEFT_TMA_TF32_FTZ = 12
} weft_tma_dtype;
typedef enum weft_tma_interleave {
  WEFT_TMA_INTERLEAVE_NONE = 0,
  WEFT_TMA_INTERLEAVE_16B = 1,
  WEFT_TMA_INTERLEAVE_32B = 2
} weft_tma_interleave;
typedef enum weft_tma_swizzle {
  WEFT_TMA_SWIZZLE_NONE = 0,
  WEFT_TMA_SWIZZLE_32B = 1,
  WEFT_TMA_SWIZZLE_64B = 2,
  WEFT_TMA_SWIZZLE_128B = 3
} weft_tma_swizzle;
typedef enum weft_tma_l2_promotion {
  WEFT_TMA_L2_NONE = 0,
  WEFT_TMA_L2_64B = 1,
  WEFT_TMA_L2_128B = 2,
  WEFT_TMA_L2_256B = 3
} weft_tma_l2_promotion;
typedef enum weft_tma_oob_fill {
  WEFT_TMA_OOB_ZERO = 0,                /* out-of-bounds elements read as zero */
  WEFT_TMA_OOB_NAN_REQUEST_ZERO_FMA = 1 /* float types only */
} weft_tma_oob_fill;

/* A tiled tensor map (cuTensorMapEncodeTiled) of a tensor of `rank` (1 to 5) dims at `address`.
 * Dims are innermost first, as CUDA orders them: `dims[0]` is the contiguous one. `strides_bytes`
 * holds the rank - 1 byte strides of dims 1.. (multiples of 16, below 2^40); `box` the tile's
 * extent in each dim (1 to 256; box[0] times the element size a multiple of 16 bytes, and at most
 * the swizzle's span when swizzled); `element_strides` the step in each dim (1 to 8; null: all 1).
 * Every argument is checked first, each failure saying which argument and which rule
 * (WEFT_ERROR_INVALID_ARGUMENT); the driver's own refusal is WEFT_ERROR_DRIVER. Needs weft_init and
 * a GPU of compute capability 9.0 or newer. */
weft_status weft_tensor_map_encode_tiled(weft_tensor_map* map, weft_tma_dtype dtype, uint32_t rank,
                                         weft_device_ptr address, const uint64_t* dims, const uint64_t* strides_bytes,
                                         const uint32_t* box, const uint32_t* element_strides,
                                         weft_tma_interleave interleave, weft_tma_swizzle swizzle,
                                         weft_tma_l2_promotion l2_promotion, weft_tma_oob_fill oob_fill);

/* ---- Host tensors and .npy files (no GPU needed) ------------------------------------------------- */

/* weft's element types, in the order of compiler/base/dtypes.def. */
typedef enum weft_dtype {
  WEFT_DTYPE_BOOL = 0,
  WEFT_DTYPE_I4 = 1,
  WEFT_DTYPE_I8 = 2,
  WEFT_DTYPE_I16 = 3,
  WEFT_DTYPE_I32 = 4,
  WEFT_DTYPE_I64 = 5,
  WEFT_DTYPE_U4 = 6,
  WEFT_DTYPE_U8 = 7,
  WEFT_DTYPE_U16 = 8,
  WEFT_DTYPE_U32 = 9,
  WEFT_DTYPE_U64 = 10,
  WEFT_DTYPE_F8E4M3 = 11,
  WEFT_DTYPE_F8E5M2 = 12,
  WEFT_DTYPE_F16 = 13,
  WEFT_DTYPE_BF16 = 14,
  WEFT_DTYPE_F32 = 15,
  WEFT_DTYPE_F64 = 16
} weft_dtype;

/* A dense C-order tensor in host memory (runtime/include/weft/tensor.h's HostTensor): elements as
 * their dtype's bit patterns, i4/u4 packed two to a byte. */
typedef struct weft_host_tensor weft_host_tensor;

/* A tensor of `rank` dims (0 to 64) of the given sizes (each >= 0), every byte zero. */
weft_status weft_host_tensor_create(weft_host_tensor** tensor, weft_dtype dtype, int rank, const int64_t* shape);
void weft_host_tensor_free(weft_host_tensor* tensor);
weft_dtype weft_host_tensor_dtype(const weft_host_tensor* tensor);
int weft_host_tensor_rank(const weft_host_tensor* tensor);
const int64_t* weft_host_tensor_shape(const weft_host_tensor* tensor); /* rank sizes */
int64_t weft_host_tensor_count(const weft_host_tensor* tensor);        /* elements (1 for rank 0) */
void* weft_host_tensor_data(weft_host_tensor* tensor);
uint64_t weft_host_tensor_bytes(const weft_host_tensor* tensor);

/* Reads a `.npy` file (docs/npy.md). A bad file is WEFT_ERROR_IO, the message starting with its path. */
weft_status weft_npy_load(weft_host_tensor** tensor, const char* path);
/* weft_npy_load, then checks the dtype and the rank: "x.npy: the program expects f32 with 2 dims
 * but the file holds f64[3, 4]" (WEFT_ERROR_IO). The dims' sizes are the program's to check. */
weft_status weft_npy_load_expecting(weft_host_tensor** tensor, const char* path, weft_dtype dtype, int rank);
/* Writes a `.npy` file (version 1.0, or 2.0 for a header over 64 KiB). */
weft_status weft_npy_save(const char* path, const weft_host_tensor* tensor);

/* ---- `random` (bit-identical to the interpreter's; docs/runtime.md) ------------------------------ */

/* One Philox-4x32-10 block of `counter` under `key`. */
void weft_philox4x32_10(const uint32_t counter[4], const uint32_t key[2], uint32_t out[4]);
/* The block of element `index` (flat, C order) of `random shape seed`: counter (index low 32,
 * index high 32, 0, 0), key (seed low 32, seed high 32). */
void weft_random_block(uint64_t seed, uint64_t index, uint32_t out[4]);
/* Fills every element as `random shape seed` does for the tensor's dtype. */
weft_status weft_random_fill(weft_host_tensor* tensor, uint64_t seed);

/* ---- Compiled programs (docs/building.md) -------------------------------------------------------
 * What the host code that `weft build` generates calls: values of `def main` as tensors that live on
 * the host, the GPU or both (copied lazily: to the GPU when a kernel reads them, back when `print`
 * or `save` does), the host built-ins with the interpreter's meaning and messages, and kernel
 * launches from a static descriptor. None of these return a status: a failure ends the program
 * with weft_fail's one line and exit status 1, as the generated code would anyway. Tensors live
 * until weft_program_end, but the device memory of one the buffer plan says is dead goes to the
 * next value of its buffer (`reuse`). Not meant to be called by hand, but plain C: tests do. */

/* A value of a compiled program: a tensor (a scalar is a rank-0 one). */
typedef struct weft_tensor weft_tensor;

/* One TMA tensor map an entry takes (device.h's TensorMapSpec). With `rank` 0: the 2-D view of
 * tensor parameter `tensor` (an index into the launch's `tensors`), dense and row-major, with its
 * leading axes flattened into rows. With `rank` 2 to 5: the tensor is read in place (or, an `out`
 * one, stored) through a strided view whose dims, strides and offset the launch gives
 * (weft_program_launch_views); the
 * box is box_cols x box_rows x 1 ... */
typedef struct weft_program_tensor_map {
  int32_t tensor;
  uint32_t box_cols; /* the box's extent along the tensor's last axis */
  uint32_t box_rows; /* ... and along the flattened rows (rank 0), or dim 1 */
  int32_t swizzle;   /* a weft_tma_swizzle */
  int32_t rank;      /* 0: dense; else the dims of the view's map */
} weft_program_tensor_map;

/* The layout of a tensor parameter read in place through a view, as its map takes it: the offset of
 * its first element and, innermost first, each dim's extent and stride (elements; strides[0] is 1). */
typedef struct weft_program_view {
  int64_t offset;
  int64_t dims[5];
  int64_t strides[5];
} weft_program_view;

/* A kernel of the program, as generated code declares it (one static, writable descriptor each).
 * The entry takes device.h's launch contract: every tensor parameter's address, the sizes in
 * `size_order`, the scalars, the tensor maps. */
typedef struct weft_program_kernel {
  const char* name;  /* the kernel's name in the .weft source, for messages */
  const char* entry; /* the PTX entry */
  const void* cubin; /* assembled by ptxas for the build's target; null when ptxas was not found */
  uint64_t cubin_size;
  const char* ptx; /* NUL-terminated; loaded (JIT-compiled by the driver) when there is no cubin or
                      the GPU refuses it */
  uint64_t ptx_size;
  uint32_t threads;      /* the block: threads x 1 x 1 */
  uint32_t shared_bytes; /* dynamic shared memory per block */
  int32_t tensor_count;  /* tensor parameters, `out` ones included */
  int32_t scalar_count;  /* scalar parameters */
  int32_t size_count;
  const int32_t* size_order; /* the entry's size parameters: indices into the launch's `sizes` */
  int32_t map_count;
  const weft_program_tensor_map* maps;
  void* loaded;       /* the runtime's: null until the first launch loads the module */
  int32_t persistent; /* 1: the entry loops over its grid's blocks; launched on weft_persistent_grid's grid */
} weft_program_kernel;

/* First call of `main`: keeps argc/argv for `arg`. With `uses_gpu`, weft_init (its failure is
 * the program's one message) and a check that the GPU runs code built for `target` ("sm_80":
 * compute capability 8.0 or newer; "sm_90a": exactly 9.0). */
void weft_program_start(int argc, char** argv, const char* target, int uses_gpu);
/* After weft_program_start in a program that uses the GPU: loads the module of each of the
 * program's `count` kernels now, so that a bad module fails the program before it does anything and
 * `time` intervals do not include loading (module loading is otherwise lazy, at the first launch). */
void weft_program_preload(weft_program_kernel* const* kernels, int32_t count);
/* Last call of `main`: waits for the GPU (a kernel that failed is reported here), frees every
 * tensor and gives the pool's device memory back to the driver (WEFT_POOL_STATS=1 prints on stderr
 * how many blocks the driver allocated). Returns 0, the program's exit status. */
int weft_program_end(void);

/* A scalar of `dtype` holding the bit pattern `bits` (a literal, rounded by the compiler). */
weft_tensor* weft_program_scalar(weft_dtype dtype, uint64_t bits);
/* The extent of axis `axis`. */
int64_t weft_program_dim(const weft_tensor* tensor, int32_t axis);
/* A run-time check of the generated code failed (a `where` fact, a kernel's inputs): weft_failf,
 * and in a library call (weft/library.h) a WEFT_ERROR_SHAPE failure. */
WEFT_NORETURN void weft_program_check_failed(const char* format, ...) WEFT_PRINTF_FORMAT(1, 2);
/* `random shape seed` (`seed` an integer scalar). `kernel` is the dtype's `weft_random_<dtype>`
 * kernel (docs/runtime.md, "On the GPU"), or null: when the program uses the GPU and `kernel` is not
 * null, the tensor is made on the GPU by the kernel (entry parameters: the address, the element
 * count, the seed; any grid) and stays there until something reads it on the host; otherwise it is
 * filled on the host (weft_random_fill). The bits are the same either way. */
weft_tensor* weft_program_random(weft_program_kernel* kernel, weft_dtype dtype, int32_t rank, const int64_t* shape,
                                 const weft_tensor* seed);
/* `load path`: the file's dtype and rank against `type` (the program's, as text, for the message:
 * "x.npy: the program expects `f32[n, 4]` but the file holds f64[3, 4]: its dtype is f64, not f32").
 * The caller checks the dims it knows with weft_program_load_mismatch. */
weft_tensor* weft_program_load(const char* path, weft_dtype dtype, int32_t rank, const char* type);
/* Ends the program: the loaded file's axis `axis` is not `expected` (`expected_text`, the dim as
 * the program writes it, or null for a constant), as the interpreter says it. */
WEFT_NORETURN void weft_program_load_mismatch(const weft_tensor* tensor, const char* path, const char* type,
                                              int32_t axis, const char* expected_text, int64_t expected);
/* `save path x` (.npy; copies x from the GPU first if it is only there). */
void weft_program_save(const char* path, weft_tensor* tensor);
/* `arg i` (`index` an integer scalar): argv[i]; out of range ends the program as the interpreter does. */
const char* weft_program_arg(const weft_tensor* index);
/* `print`'s pieces: a tensor as NumPy prints it, and text (print ends with weft_program_write_text("\n")). */
void weft_program_write_tensor(weft_tensor* tensor);
void weft_program_write_text(const char* text);
/* A kernel's output (docs/graph.md, docs/runtime.md "Device memory"): a tensor on the GPU, not
 * zero-filled (the kernel writes every element: an array kernel, a stdlib kernel, a called kernel
 * whose stores the compiler proved cover its `out` parameter). `reuse`, when not null, is the value
 * the buffer plan held in the same buffer before, now dead: its device memory is taken over when it
 * is large enough, else given back to the runtime's pool; either way it must not be read again.
 * New memory comes from the pool. */
weft_tensor* weft_program_buffer(weft_dtype dtype, int32_t rank, const int64_t* shape, weft_tensor* reuse);
/* An `out` parameter of a kernel call that may not store every element: weft_program_buffer, then
 * zero-filled (on the GPU, in stream order). */
weft_tensor* weft_program_out(weft_dtype dtype, int32_t rank, const int64_t* shape, weft_tensor* reuse);
/* A kernel call's argument that is a view of `base` read in place (graph::ReadDense): its elements
 * are `base`'s from `offset` on, row-major with `shape`. It shares `base`'s device memory (copied
 * there first if `base` is only on the host) and is only read. */
weft_tensor* weft_program_view_of(weft_tensor* base, int64_t offset, int32_t rank, const int64_t* shape);
/* Launches `kernel` on `grid` (x, y, z; no launch when one of them is 0) with its tensor parameters
 * (source order, `out` ones included), its sizes (as `size_order` indexes them) and its scalar
 * parameters (source order). Inputs are copied to the GPU if they are not there yet. */
void weft_program_launch(weft_program_kernel* kernel, const int64_t* grid, weft_tensor* const* tensors,
                         const int64_t* sizes, weft_tensor* const* scalars);
/* The same, with `views[i]` the layout of tensor parameter i when one of the kernel's maps reads it
 * in place (rank > 0; `views` has one entry per tensor parameter, the others unused). */
void weft_program_launch_views(weft_program_kernel* kernel, const int64_t* grid, weft_tensor* const* tensors,
                               const int64_t* sizes, weft_tensor* const* scalars, const weft_program_view* views);
/* `time f`: a mark before the call of f, and the milliseconds since it as an f64 scalar after it
 * (GPU events when the program uses the GPU, so launches are timed to their end; else the clock). */
void* weft_program_time_start(void);
weft_tensor* weft_program_time_stop(void* mark);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_RUNTIME_H */
