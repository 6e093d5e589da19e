/* braid.h — the application API of braid (C, stable ABI).
 *
 * Rules that hold for every function here (see docs/ABI.md):
 *  - Every function returns braid_status (BRAID_OK = 0) unless stated; details of the last failure on
 *    the calling thread come from braid_last_error().
 *  - Handles are opaque and reference counted (_retain/_release). Out-parameters come last. A released
 *    handle is refused with BRAID_ERR_INVALID_ARGUMENT, never read (docs/ABI.md, "Handles").
 *  - Option/parameter structs begin with uint32_t struct_size; set it to sizeof(struct) (the
 *    BRAID_*_INIT macros do). Older callers passing a smaller struct_size get defaults for the rest.
 *  - All functions are thread-safe unless documented otherwise.
 *  - Op functions validate and infer shapes synchronously (errors surface at the call), then enqueue
 *    the work and return; the kernel runs later. Wait with braid_tensor_wait_to_read, a copy to host,
 *    or braid_wait_all.
 *  - The API only grows at the end; BRAID_ABI_MINOR increments with each addition.
 */
#ifndef BRAID_H_
#define BRAID_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define BRAID_API __declspec(dllexport)
#else
#define BRAID_API __attribute__((visibility("default")))
#endif

#define BRAID_ABI_MAJOR 1
#define BRAID_ABI_MINOR 13
/* The library (release) version, independent of the ABI version above: it changes with every release,
 * the ABI only when the API grows (minor) or breaks (major). See docs/ABI.md, "Versioning". This is
 * the one place it is written: the top-level CMakeLists.txt reads it from here. */
#define BRAID_VERSION_MAJOR 0
#define BRAID_VERSION_MINOR 1
#define BRAID_VERSION_PATCH 0
#define BRAID_MAX_DIMS 8

/* ---- status codes --------------------------------------------------------------------------- */
typedef enum braid_status {
  BRAID_OK = 0,
  BRAID_ERR_INVALID_ARGUMENT = 1, /* NULL pointer, bad value, bad handle */
  BRAID_ERR_SHAPE = 2,            /* shapes do not agree */
  BRAID_ERR_DTYPE = 3,            /* dtype not accepted by the op */
  BRAID_ERR_DEVICE = 4,           /* wrong or mixed devices, device failed */
  BRAID_ERR_OUT_OF_MEMORY = 5,
  BRAID_ERR_UNSUPPORTED = 6,   /* the backend does not implement this op/dtype */
  BRAID_ERR_NOT_FOUND = 7,     /* file, plugin, device or symbol not found */
  BRAID_ERR_ABI_MISMATCH = 8,  /* a plugin of another major version */
  BRAID_ERR_INVALID_STATE = 9, /* e.g. wait from an engine thread, context used after fork */
  BRAID_ERR_KERNEL = 10,       /* a kernel failed while running */
  BRAID_ERR_IO = 11,           /* file read/write failed, corrupt file */
  BRAID_ERR_TIMEOUT = 12,
  BRAID_ERR_INTERNAL = 13
} braid_status;

/* ---- element types ---------------------------------------------------------------------------- */
typedef enum braid_dtype {
  BRAID_FLOAT32 = 0,
  BRAID_FLOAT64 = 1,
  BRAID_INT32 = 2,
  BRAID_INT64 = 3,
  BRAID_UINT8 = 4,
  BRAID_FLOAT16 = 5,  /* storage type: copy/cast only */
  BRAID_BFLOAT16 = 6, /* storage type: copy/cast only */
  /* Since 1.13. NumPy's and PyTorch's bool: one byte per element, 0 (false) or 1 (true). What
   * braid_compare returns and a mask is; casts to it take nonzero (NaN included) as true, casts
   * from it give 0 or 1. Beside another dtype it promotes to that one (bool + int32 is int32); two
   * bools compute as logical operations (docs/OPS.md, "Booleans"). */
  BRAID_BOOL = 7,
  BRAID_DTYPE_COUNT = 8
} braid_dtype;

/* ---- handles ---------------------------------------------------------------------------------- */
typedef struct braid_context_t* braid_context;
typedef struct braid_tensor_t* braid_tensor;
/* A device is named by its index in the context (0 .. braid_context_device_count-1). */
typedef int32_t braid_device;

/* ---- version and errors ----------------------------------------------------------------------- */
/* (BRAID_ABI_MAJOR << 16) | BRAID_ABI_MINOR of the loaded library. Thread-safe, never fails. */
BRAID_API uint32_t braid_version(void);
/* Message of the last failed call on this thread ("" if none). Valid until the next failing call on
 * the same thread. Thread-safe (thread-local). */
BRAID_API const char* braid_last_error(void);
/* Static name of a status code, e.g. "BRAID_ERR_SHAPE". Never NULL. */
BRAID_API const char* braid_status_name(braid_status status);
/* Static name of a dtype ("float32", ...); "invalid" for an unknown value. */
BRAID_API const char* braid_dtype_name(braid_dtype dtype);
/* Size in bytes of one element; 0 for an unknown dtype. */
BRAID_API size_t braid_dtype_size(braid_dtype dtype);

/* ---- context ---------------------------------------------------------------------------------- */
typedef enum braid_engine_mode {
  BRAID_ENGINE_DEFAULT = 0, /* BRAID_ENGINE env var, else async */
  BRAID_ENGINE_ASYNC = 1,
  BRAID_ENGINE_SYNC = 2 /* every op runs to completion at push time */
} braid_engine_mode;

typedef struct braid_context_options {
  uint32_t struct_size;
  /* Comma-separated backend names to load ("cpu,vulkan"); NULL = BRAID_BACKENDS env, else all. */
  const char* backends;
  /* Extra plugin directory searched after the one next to libbraid; NULL = BRAID_BACKEND_PATH. */
  const char* backend_path;
  braid_engine_mode engine_mode;
  /* Backpressure bounds per device: pushing waits while a device has this many ops, or this many
   * bytes of op outputs, in flight. 0: default (BRAID_MAX_INFLIGHT_OPS / _BYTES env, else 1024 ops, and
   * 128 MiB on a device whose memory is the host's (CPU, integrated or virtual GPU), 1 GiB on others).
   * UINT64_MAX disables the bound. The variables take a plain decimal number; anything else (-1, 128M,
   * an overflowing number) makes braid_context_create fail with BRAID_ERR_INVALID_ARGUMENT naming the
   * variable, as does a BRAID_SEED that is not one or a BRAID_ENGINE other than sync/async. */
  uint64_t max_inflight_ops;
  uint64_t max_inflight_bytes;
  /* Chrome-trace output written when the context is released; NULL = BRAID_PROFILE env. Written as
   * braid_profiler_stop writes it; if it cannot be, the release that destroys the context returns
   * BRAID_ERR_IO. */
  const char* profile_path;
  /* Seed of the counter-based RNG (random_*, dropout). 0: BRAID_SEED env, else 0. */
  uint64_t seed;
  /* Since 1.2: compute queues per device (1 to 16). Independent ops then run side by side on one device:
   * an op goes to the queue of its first input's producer (chains stay on one queue), otherwise to
   * the next queue in turn. 0: BRAID_COMPUTE_QUEUES env, else 1. Collectives have a queue of their
   * own besides these (docs/PARALLEL.md). */
  int32_t compute_queues;
} braid_context_options;
#define BRAID_CONTEXT_OPTIONS_INIT \
  { sizeof(braid_context_options), NULL, NULL, BRAID_ENGINE_DEFAULT, 0, 0, NULL, 0, 0 }

/* Creates a context: discovers and loads backend plugins and opens their devices. options may be NULL.
 * A plugin that fails to load is reported by braid_context_backend_info, never fatal. */
BRAID_API braid_status braid_context_create(const braid_context_options* options, braid_context* out);
BRAID_API braid_status braid_context_retain(braid_context ctx);
/* Dropping the last reference waits for all work, writes the profile if one is configured, and
 * shuts the backends down. Everything is released even when the profile cannot be written; the call
 * then returns BRAID_ERR_IO with the reason. When live tensors still hold the context, the last
 * braid_tensor_release is the call that destroys it and returns that error. A process that exits with
 * work still queued (exit(), or returning from main) has that work finished first, by an atexit
 * handler, before the libraries' destructors run; contexts are not destroyed then. */
BRAID_API braid_status braid_context_release(braid_context ctx);

typedef struct braid_backend_info {
  uint32_t struct_size;
  const char* name;   /* owned by the context */
  const char* path;   /* file the plugin was loaded from; owned by the context */
  uint32_t abi_major; /* plugin ABI version the plugin reported (0 if it did not load) */
  uint32_t abi_minor;
  int32_t loaded; /* 1 if the plugin is in use */
  int32_t device_count;
  const char* reason; /* why it has zero devices or did not load; "" otherwise; owned by ctx */
} braid_backend_info;

BRAID_API braid_status braid_context_backend_count(braid_context ctx, int32_t* out);
BRAID_API braid_status braid_context_backend_info(braid_context ctx, int32_t index, braid_backend_info* out);
BRAID_API braid_status braid_context_device_count(braid_context ctx, int32_t* out);
/* Finds a device by name: "cpu:0", "vulkan:1", "cuda:0". */
BRAID_API braid_status braid_context_find_device(braid_context ctx, const char* name, braid_device* out);

typedef enum braid_device_kind {
  BRAID_DEVICE_CPU = 0,
  BRAID_DEVICE_GPU_DISCRETE = 1,
  BRAID_DEVICE_GPU_INTEGRATED = 2,
  BRAID_DEVICE_GPU_VIRTUAL = 3,
  BRAID_DEVICE_OTHER = 4
} braid_device_kind;

typedef struct braid_device_info {
  uint32_t struct_size;
  const char* id;      /* "cpu:0"; owned by the context */
  const char* backend; /* "cpu" */
  const char* name;    /* model name */
  braid_device_kind kind;
  int32_t backend_index; /* index of the device within its backend */
  uint8_t uuid[16];      /* all zero if unknown */
  uint64_t memory_bytes; /* memory the device can allocate */
  int32_t compute_units; /* cores / SMs / CUs; 0 if the device does not say (Vulkan has no such query) */
  int32_t compute_queues;
  int32_t transfer_queues;
  uint64_t l1_cache_bytes, l2_cache_bytes, l3_cache_bytes; /* 0 if unknown */
  uint32_t dtype_mask; /* bit (1<<dtype) set for each dtype with compute kernels (bool where it computes) */
  /* Since 1.1: backend-specific properties as one JSON object text ("{}" when none); owned by the context */
  const char* properties_json;
} braid_device_info;

BRAID_API braid_status braid_context_device_info(braid_context ctx, braid_device device, braid_device_info* out);

/* Waits for every op pushed so far to finish. Returns the first error of an op since the last
 * braid_wait_all (and clears it). Must not be called from an engine/backend thread. */
BRAID_API braid_status braid_wait_all(braid_context ctx);

/* Sets the RNG seed; later random ops draw from counter 0 of the new seed. */
BRAID_API braid_status braid_context_set_seed(braid_context ctx, uint64_t seed);

/* ---- memory ----------------------------------------------------------------------------------- */
typedef struct braid_memory_stats {
  uint32_t struct_size;
  uint64_t allocated_bytes; /* in live blocks handed to tensors */
  uint64_t reserved_bytes;  /* obtained from the backend (allocated + cached) */
  uint64_t peak_allocated_bytes;
  uint64_t peak_reserved_bytes;
  uint64_t alloc_count;         /* allocations served */
  uint64_t backend_alloc_count; /* allocations that reached the backend (cache misses) */
} braid_memory_stats;

BRAID_API braid_status braid_memory_stats_get(braid_context ctx, braid_device device, braid_memory_stats* out);
/* Returns cached, unused blocks to the backend. */
BRAID_API braid_status braid_memory_empty_cache(braid_context ctx, braid_device device);
/* Resets peak_* to the current values. */
BRAID_API braid_status braid_memory_reset_peak(braid_context ctx, braid_device device);

/* ---- profiler --------------------------------------------------------------------------------- */
/* Starts recording every op, copy and wait (one track per device queue). */
BRAID_API braid_status braid_profiler_start(braid_context ctx);
/* Stops recording, waits for recorded work to finish, and writes Chrome-trace JSON to path. A regular
 * file (or a new path) is replaced atomically through a temporary in the same folder, removed if the
 * write fails. A path that exists and is not a regular file is never replaced: a symlink is written
 * through to its target, a FIFO or character device (/dev/stdout) is written to (a FIFO without a
 * reader is BRAID_ERR_IO, not a hang); a directory, socket or block device is BRAID_ERR_IO. */
BRAID_API braid_status braid_profiler_stop(braid_context ctx, const char* path);

/* ---- tensors ---------------------------------------------------------------------------------- */
/* An uninitialised tensor. */
BRAID_API braid_status braid_tensor_empty(braid_context ctx, braid_device device, braid_dtype dtype, int32_t ndim,
                                          const int64_t* shape, braid_tensor* out);
/* A tensor holding a copy of host data (row-major, bytes must equal numel*dtype size). The data is
 * copied before the call returns; the caller may reuse it at once. */
BRAID_API braid_status braid_tensor_from_host(braid_context ctx, braid_device device, braid_dtype dtype, int32_t ndim,
                                              const int64_t* shape, const void* data, size_t bytes, braid_tensor* out);
BRAID_API braid_status braid_tensor_retain(braid_tensor t);
/* Drops a reference; storage is freed once the ops that use it have finished. */
BRAID_API braid_status braid_tensor_release(braid_tensor t);

/* Shape queries need no wait. shape must have room for BRAID_MAX_DIMS values. */
BRAID_API braid_status braid_tensor_ndim(braid_tensor t, int32_t* out);
BRAID_API braid_status braid_tensor_shape(braid_tensor t, int64_t* shape);
BRAID_API braid_status braid_tensor_dtype(braid_tensor t, braid_dtype* out);
BRAID_API braid_status braid_tensor_device(braid_tensor t, braid_device* out);
BRAID_API braid_status braid_tensor_numel(braid_tensor t, int64_t* out);

/* Waits until the tensor's last writer has finished. Returns that op's error, if it failed (message
 * names the op and device); the tensor stays readable. Not callable from an engine thread. */
BRAID_API braid_status braid_tensor_wait_to_read(braid_tensor t);
/* Waits, then copies the contents (row-major) to host memory; bytes must equal numel*dtype size. */
BRAID_API braid_status braid_tensor_to_host(braid_tensor t, void* data, size_t bytes);
/* Overwrites the tensor's contents from host memory (copied before return; ordered after earlier ops;
 * a write of 1 MiB or more into device memory the host cannot map, with no op in flight on the tensor,
 * waits for its copy and returns the copy's error, if any).
 * It does not read the old contents, so it clears an asynchronous error (poison) the tensor carried:
 * once it has run, waits on the tensor return BRAID_OK and read the new data. */
BRAID_API braid_status braid_tensor_write_host(braid_tensor t, const void* data, size_t bytes);
/* Since 1.13. A tensor over another library's host memory, without a copy (DLPack's consumer side:
 * numpy.from_dlpack's and torch.from_dlpack's counterpart). `managed` is a DLManagedTensor* (DLPack's
 * unversioned struct, 0.5 and later) whose memory is host memory (kDLCPU), C-contiguous (strides NULL
 * or row-major; a dimension of 1 may have any stride), aligned to its elements (a bool's bytes 0 or 1;
 * else BRAID_ERR_INVALID_ARGUMENT) and of one of braid's dtypes (float32/64/16,
 * bfloat16, int32/64, uint8, bool); `device` is a device whose memory is host memory and whose backend
 * imports it (the CPU backend's), else BRAID_ERR_UNSUPPORTED. On success braid owns `managed` and calls
 * its deleter once, from any thread, after the last handle and the last op using the memory (the
 * producer must keep the memory valid until then, as DLPack requires); on failure the caller still owns
 * it. Writes through the tensor change the producer's array and the other way round. Thread-safe. */
BRAID_API braid_status braid_tensor_from_dlpack(braid_context ctx, braid_device device, void* managed,
                                                braid_tensor* out);
/* Since 1.12. The address of the tensor's first element (row-major, contiguous) where its device's
 * memory is host memory (CPU devices); BRAID_ERR_UNSUPPORTED elsewhere (copy with
 * braid_tensor_to_host). Waits first for the ops that write the tensor, as braid_tensor_wait_to_read
 * (returning a failed writer's error). The memory stays valid while a handle to the tensor (or to a
 * reshape of it) lives. It is shared, not copied: ops pushed on the tensor afterwards write it while
 * the caller may be reading (wait for them first), and writes through the pointer are not ordered with
 * braid's ops. *data is NULL for a tensor without elements. For zero-copy exchange (DLPack). */
BRAID_API braid_status braid_tensor_host_data(braid_tensor t, void** data);

/* ---- ops: creation ---------------------------------------------------------------------------- */
/* A tensor with every element value, converted to dtype as torch.full converts it: a fractional value
 * truncates toward zero in an integer dtype; a value the dtype cannot hold is BRAID_ERR_INVALID_ARGUMENT
 * (NaN or an infinity in an integer dtype, a value outside an integer dtype's range: 3e9 in int32, -1 in
 * uint8; a finite value that would round to infinity in a float dtype: 1e39 in float32, 70000 in
 * float16). Infinities and NaN are kept in float dtypes. */
BRAID_API braid_status braid_full(braid_context ctx, braid_device device, braid_dtype dtype, int32_t ndim,
                                  const int64_t* shape, double value, braid_tensor* out);
/* 1-D [start, stop) with step (ceil((stop-start)/step) elements). In an integer dtype the values are
 * start + i * step with start and step truncated to integers first, as torch.arange: (-3, 3, 2.5)
 * gives [-3, -1, 1]; int64 truncates stop too before the length is taken, as torch.arange does for
 * int64 ((-0.9, 3, 1) gives [0, 1, 2] in int64, [0, 1, 2, 3] in int32); int64 values are exact past
 * 2^53. A step that truncates to 0, or values outside the dtype, are BRAID_ERR_INVALID_ARGUMENT. Every
 * dtype: uint8 is computed in int32, float16 and bfloat16 in float32, then cast. */
BRAID_API braid_status braid_arange(braid_context ctx, braid_device device, braid_dtype dtype, double start,
                                    double stop, double step, braid_tensor* out);
/* Counter-based (Philox-4x32-10) RNG: element i of the n-th draw depends only on (seed, n, i), so
 * results do not depend on the device or thread count. float32/float64 only. As PyTorch's uniform_ and
 * normal_, the parameters are checked at the call (BRAID_ERR_INVALID_ARGUMENT, naming the argument):
 * low, high, mean and stddev must be finite (in float32: within float32's range), low <= high (low ==
 * high gives a constant), high - low must be finite (in the dtype), and stddev >= 0. */
BRAID_API braid_status braid_random_uniform(braid_context ctx, braid_device device, braid_dtype dtype, int32_t ndim,
                                            const int64_t* shape, double low, double high, braid_tensor* out);
BRAID_API braid_status braid_random_normal(braid_context ctx, braid_device device, braid_dtype dtype, int32_t ndim,
                                           const int64_t* shape, double mean, double stddev, braid_tensor* out);

/* ---- ops: elementwise ------------------------------------------------------------------------- */
typedef enum braid_unary_op {
  BRAID_UNARY_NEG = 0,
  BRAID_UNARY_ABS,
  BRAID_UNARY_EXP,
  BRAID_UNARY_LOG,
  BRAID_UNARY_SQRT,
  BRAID_UNARY_RELU,
  BRAID_UNARY_SIGMOID,
  BRAID_UNARY_TANH,
  BRAID_UNARY_SQUARE,
  BRAID_UNARY_SIGN,
  BRAID_UNARY_COUNT
} braid_unary_op;

typedef enum braid_binary_op {
  BRAID_BINARY_ADD = 0,
  BRAID_BINARY_SUB,
  BRAID_BINARY_MUL,
  BRAID_BINARY_DIV,
  BRAID_BINARY_POW,
  BRAID_BINARY_MAXIMUM,
  BRAID_BINARY_MINIMUM,
  /* comparisons produce 1 or 0 in the dtype they compare in (the promoted one, below) */
  BRAID_BINARY_EQUAL,
  BRAID_BINARY_LESS,
  BRAID_BINARY_GREATER,
  /* Since 1.12. Python's // and % (NumPy's floor_divide and remainder, PyTorch's floor_divide and
   * remainder): the quotient rounded toward -inf, and a - b * floor(a / b), which takes b's sign. On
   * floats, x // 0 is x / 0 (inf or NaN) and x % 0 is NaN; on integers (int32, int64) a zero
   * divisor fails the op (BRAID_ERR_KERNEL, as PyTorch raises), and INT_MIN // -1 wraps to INT_MIN. */
  BRAID_BINARY_FLOOR_DIVIDE,
  BRAID_BINARY_MOD,
  BRAID_BINARY_COUNT
} braid_binary_op;

/* Unary ops on float32/float64 (NEG, ABS, RELU, SQUARE, SIGN also on int32/int64). */
BRAID_API braid_status braid_unary(braid_unary_op op, braid_tensor x, braid_tensor* out);
/* Binary op with NumPy broadcasting; both inputs on one device. Inputs of different dtypes are
 * promoted as PyTorch promotes tensors (torch.promote_types): a float dtype wins over an integer one,
 * else the wider one wins (int32 + float32 -> float32, int64 + float32 -> float32, float32 + float64
 * -> float64, uint8 + int32 -> int32, int32 + int64 -> int64, float16 + bfloat16 -> float32), except
 * that a 0-d operand beside one with dimensions decides only when it is floating and the other is not,
 * as torch.result_type has it (float32 [3] + float64 [] -> float32, int32 [3] + int64 [] -> int32,
 * int32 [3] + float64 [] -> float64); an integer divided by an integer is float32 (true division, as
 * braid_binary_scalar divides). Each operand is cast to that dtype first (as braid_cast would; autograd records the
 * cast), so comparisons compare in it: int32 16777217 == float32 16777216 holds, as in PyTorch. A promoted dtype
 * without a version of the op (uint8, float16, bfloat16; integer POW) is BRAID_ERR_DTYPE. See docs/OPS.md. */
BRAID_API braid_status braid_binary(braid_binary_op op, braid_tensor a, braid_tensor b, braid_tensor* out);
/* x op scalar (reverse = 0) or scalar op x (reverse != 0). An integer x with a scalar that is not an
 * integer (2.5, inf, NaN), or with DIV, is promoted to float32 first, as NumPy and PyTorch do: x + 2.5
 * and x / 2 are float32, and x < 2.5 compares exactly (1 or 0 in float32). A whole number outside an
 * integer x's dtype (2^31 for int32) is BRAID_ERR_INVALID_ARGUMENT (NumPy 2 raises; PyTorch wraps). */
BRAID_API braid_status braid_binary_scalar(braid_binary_op op, braid_tensor x, double scalar, int32_t reverse,
                                           braid_tensor* out);

/* Since 1.13. Comparisons with bool results (BRAID_BOOL), as NumPy's and PyTorch's operators give them:
 * a and b broadcast and promote as braid_binary does and compare in that dtype; NaN compares false
 * except with NOT_EQUAL, where it is true; -0 equals +0. Not differentiable. braid_binary's EQUAL,
 * LESS and GREATER, which give 1 or 0 in the compared dtype (MXNet 1.x's rule), stay as they were. */
typedef enum braid_compare_op {
  BRAID_COMPARE_EQUAL = 0,
  BRAID_COMPARE_NOT_EQUAL,
  BRAID_COMPARE_LESS,
  BRAID_COMPARE_LESS_EQUAL,
  BRAID_COMPARE_GREATER,
  BRAID_COMPARE_GREATER_EQUAL,
  BRAID_COMPARE_COUNT
} braid_compare_op;
BRAID_API braid_status braid_compare(braid_compare_op op, braid_tensor a, braid_tensor b, braid_tensor* out);
/* x op scalar, with the scalar compared exactly: an integer x beside a scalar that is not a whole
 * number compares in float32 (x < 2.5 holds at 2), and a whole number beyond x's dtype gives the
 * answer every element has (int32 x < 2^31 is all true), as NumPy 2 compares Python ints. (To compare
 * scalar op x, swap the op: 2 < x is x > 2.) */
BRAID_API braid_status braid_compare_scalar(braid_compare_op op, braid_tensor x, double scalar, braid_tensor* out);
/* numpy.take(x, indices, axis) and torch.index_select (Since 1.12): the slices of x along `axis` that
 * `indices` (int32, int64 or uint8, any shape, read when the op runs) pick, so the result's shape is
 * x.shape[:axis] + indices.shape + x.shape[axis+1:]. A negative index counts from the end, as in
 * Python; one outside [-n, n) fails the op (BRAID_ERR_KERNEL at the wait: the values are not known at
 * the call). Any dtype x has; differentiable in x (the gradient adds up the rows an index picked more
 * than once). Python's x[[0, 2]], x[rows, cols] and x[mask] are built on it (docs/PYTHON.md). */
BRAID_API braid_status braid_take(braid_tensor x, braid_tensor indices, int32_t axis, braid_tensor* out);
/* out = cond ? a : b, element by element, with NumPy broadcasting of all three (torch.where,
 * numpy.where); all on one device. a and b are promoted as braid_binary promotes them (0-d rule included); cond may
 * have any dtype, and an element is true where it is nonzero (NaN is true, as bool(nan) in NumPy). An element of a or b
 * that is not chosen never affects out, even if it is inf or NaN. Autograd passes the gradient to a where cond holds
 * and to b elsewhere (cond gets none). Since 1.7. */
BRAID_API braid_status braid_where(braid_tensor cond, braid_tensor a, braid_tensor b, braid_tensor* out);

/* ---- ops: reductions -------------------------------------------------------------------------- */
typedef enum braid_reduce_op {
  BRAID_REDUCE_SUM = 0,
  BRAID_REDUCE_MEAN,
  BRAID_REDUCE_MAX,
  BRAID_REDUCE_MIN,
  BRAID_REDUCE_NORM, /* L2 norm */
  BRAID_REDUCE_COUNT
} braid_reduce_op;

/* Reduces over the given axes (naxes = 0: all axes). Negative axes count from the end. Float inputs
 * keep their dtype. Integer inputs (int32, int64): SUM returns int64 and accumulates in int64, as
 * NumPy's and PyTorch's sums do (4 x 2^30 in int32 sums to 2^32, not 0); MAX and MIN keep the input
 * dtype; MEAN and NORM are refused with BRAID_ERR_DTYPE, as torch.mean is (cast to a float dtype
 * first). See docs/OPS.md. */
BRAID_API braid_status braid_reduce(braid_reduce_op op, braid_tensor x, int32_t naxes, const int32_t* axes,
                                    int32_t keepdims, braid_tensor* out);
/* Index of the maximum along one axis; int64 result. */
BRAID_API braid_status braid_argmax(braid_tensor x, int32_t axis, int32_t keepdims, braid_tensor* out);

/* ---- ops: linear algebra and layout ----------------------------------------------------------- */
/* op(a) @ op(b) for 2-D a, b, or batched 3-D. The batch broadcasts as in torch.matmul: a 2-D side, or
 * a batch of 1, is shared by every batch of the other ([1,2,3] @ [3,3,4] is [3,2,4]); other batch
 * sizes must match. Both float32 or both float64 (no promotion, as torch.matmul). */
BRAID_API braid_status braid_matmul(braid_tensor a, braid_tensor b, int32_t transpose_a, int32_t transpose_b,
                                    braid_tensor* out);
/* Same storage, new shape (one dimension may be -1). */
BRAID_API braid_status braid_reshape(braid_tensor x, int32_t ndim, const int64_t* shape, braid_tensor* out);
/* Since 1.13. A view of a contiguous part of x (NumPy's view of x[i], x[a:b], x[i, a:b]): the elements
 * offset .. offset + numel(shape) - 1 of x in row-major order, as a tensor of `shape` that shares x's
 * storage, so a write through either one is seen through the other. The part must lie inside x
 * (BRAID_ERR_SHAPE). Not recorded by autograd, so refused while the calling thread records or traces
 * (BRAID_ERR_INVALID_STATE: braid_slice is the differentiable copy). A graph binds whole tensors:
 * braid_hybrid_call runs on a copy of a view, braid_graph_run and braid_graph_trace_begin refuse one. */
BRAID_API braid_status braid_view(braid_tensor x, int64_t offset, int32_t ndim, const int64_t* shape,
                                  braid_tensor* out);
/* x[begin:end:step] along each axis (ndim values each; step may be NULL for 1). Copies. Bounds follow
   Python/NumPy: a negative bound counts from the end, bounds past either end clamp (x[2:100],
   x[-100:5]), and end <= begin gives an empty axis, not an error. Steps must be positive. */
BRAID_API braid_status braid_slice(braid_tensor x, const int64_t* begin, const int64_t* end, const int64_t* step,
                                   braid_tensor* out);
/* Permutes axes (perm has ndim entries). Copies. */
BRAID_API braid_status braid_transpose(braid_tensor x, const int32_t* perm, braid_tensor* out);
/* Joins xs along axis (their other axes equal, all on one device). Inputs of different dtypes are
 * promoted as braid_binary promotes them (torch.cat): each is cast into the result. */
BRAID_API braid_status braid_concat(int32_t count, const braid_tensor* xs, int32_t axis, braid_tensor* out);
/* Copies x to device (the same device makes a clone). Copies between devices run on transfer queues. */
BRAID_API braid_status braid_copy(braid_tensor x, braid_device device, braid_tensor* out);
BRAID_API braid_status braid_cast(braid_tensor x, braid_dtype dtype, braid_tensor* out);
/* Copies src into dst (same shape and dtype, any devices); dst is written in program order. Autograd
 * does not record it: dst's new value has no history (ops recorded before keep the old one;
 * docs/AUTOGRAD.md, "Overwritten values"). */
BRAID_API braid_status braid_copy_into(braid_tensor src, braid_tensor dst);

/* ---- ops: neural network ---------------------------------------------------------------------- */
typedef struct braid_conv2d_params {
  uint32_t struct_size;
  int32_t stride[2];  /* h, w; 0: 1 */
  int32_t padding[2]; /* h, w */
} braid_conv2d_params;
#define BRAID_CONV2D_PARAMS_INIT                  \
  {                                               \
    sizeof(braid_conv2d_params), {1, 1}, { 0, 0 } \
  }

/* x: N,C,H,W; w: K,C,R,S; bias: K or NULL. Output N,K,P,Q. params may be NULL (stride 1, no padding). */
BRAID_API braid_status braid_conv2d(braid_tensor x, braid_tensor w, braid_tensor bias,
                                    const braid_conv2d_params* params, braid_tensor* out);

typedef enum braid_pool_kind { BRAID_POOL_MAX = 0, BRAID_POOL_AVG = 1 } braid_pool_kind;
typedef struct braid_pool2d_params {
  uint32_t struct_size;
  braid_pool_kind kind;
  int32_t kernel[2];
  int32_t stride[2];  /* 0: equal to kernel */
  int32_t padding[2]; /* padded cells are ignored by max and excluded from the average */
  int32_t global;     /* non-zero: pool the whole H,W (kernel/stride/padding ignored) */
} braid_pool2d_params;
#define BRAID_POOL2D_PARAMS_INIT \
  { sizeof(braid_pool2d_params), BRAID_POOL_MAX, {2, 2}, {0, 0}, {0, 0}, 0 }

/* params may be NULL: BRAID_POOL2D_PARAMS_INIT's defaults (2x2 max pooling, stride 2). */
BRAID_API braid_status braid_pool2d(braid_tensor x, const braid_pool2d_params* params, braid_tensor* out);

typedef struct braid_batch_norm_params {
  uint32_t struct_size;
  double eps;       /* 0: 1e-5 */
  double momentum;  /* running = (1-momentum)*running + momentum*batch; 0: 0.1 */
  int32_t training; /* use batch statistics and update the running ones */
} braid_batch_norm_params;
#define BRAID_BATCH_NORM_PARAMS_INIT \
  { sizeof(braid_batch_norm_params), 1e-5, 0.1, 1 }

/* Normalises over all axes but 1 (N,C or N,C,H,W). gamma, beta, running_mean, running_var: shape C.
 * In training, running_mean/var are updated in place (unbiased variance) and save_mean/save_invstd
 * (shape C, may be NULL) receive the batch statistics used. */
BRAID_API braid_status braid_batch_norm(braid_tensor x, braid_tensor gamma, braid_tensor beta,
                                        braid_tensor running_mean, braid_tensor running_var,
                                        const braid_batch_norm_params* params, braid_tensor* out,
                                        braid_tensor* save_mean, braid_tensor* save_invstd);

/* Softmax (log != 0: log-softmax) along axis. */
BRAID_API braid_status braid_softmax(braid_tensor x, int32_t axis, int32_t log, braid_tensor* out);
/* Per-sample loss -log softmax(logits)[label] for logits N,K and int32/int64 labels N. A label outside
 * [0, K) fails the op (an asynchronous error on the output). */
BRAID_API braid_status braid_softmax_cross_entropy(braid_tensor logits, braid_tensor labels, braid_tensor* out);
/* Inverted dropout: y = x * mask / (1 - p), mask ~ Bernoulli(1 - p) from the context RNG. mask may be
 * NULL; it has x's dtype and holds 0 or 1. A dropped element is x * 0, as PyTorch multiplies: NaN where
 * x is inf or NaN, -0 where x is negative. p in [0, 1]: p = 1 drops every element (mask all zero) and
 * gives a zero gradient; p outside [0, 1] or NaN is BRAID_ERR_INVALID_ARGUMENT. */
BRAID_API braid_status braid_dropout(braid_tensor x, double p, braid_tensor* out, braid_tensor* mask);

/* ---- ops: optimizer updates (in place) -------------------------------------------------------- */
/* w -= lr * (g + wd * w) */
BRAID_API braid_status braid_sgd_update(braid_tensor w, braid_tensor g, double lr, double weight_decay);
/* mom = momentum * mom - lr * (g + wd * w); w += mom */
BRAID_API braid_status braid_sgd_momentum_update(braid_tensor w, braid_tensor g, braid_tensor mom, double lr,
                                                 double momentum, double weight_decay);
typedef struct braid_adam_params {
  uint32_t struct_size;
  double lr, beta1, beta2, epsilon, weight_decay;
  int64_t step; /* 1-based step for bias correction */
} braid_adam_params;
#define BRAID_ADAM_PARAMS_INIT \
  { sizeof(braid_adam_params), 1e-3, 0.9, 0.999, 1e-8, 0.0, 1 }
/* g' = g + wd*w; m = b1*m + (1-b1)*g'; v = b2*v + (1-b2)*g'^2;
 * w -= lr * (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps) */
BRAID_API braid_status braid_adam_update(braid_tensor w, braid_tensor g, braid_tensor m, braid_tensor v,
                                         const braid_adam_params* params);

/* ---- data: datasets and mini-batch iterators -------------------------------------------------- */
/* (Since 1.1) Labelled image datasets read from IDX files (MNIST layout) into host memory, and a
 * shuffling mini-batch iterator whose background thread prepares the next batches while the caller
 * computes. See docs/DATA.md. */
typedef struct braid_dataset_t* braid_dataset;               /* ref-counted; thread-safe */
typedef struct braid_batch_iterator_t* braid_batch_iterator; /* ref-counted; not thread-safe */

typedef enum braid_dataset_split { BRAID_SPLIT_TRAIN = 0, BRAID_SPLIT_TEST = 1 } braid_dataset_split;

typedef struct braid_dataset_options {
  uint32_t struct_size;
  const char* name; /* "fashion-mnist" or "mnist" (IDX files, gzip or plain) */
  const char* dir;  /* NULL: $BRAID_DATA_DIR, else /usr/share/datasets/fashion-mnist */
  braid_dataset_split split;
} braid_dataset_options;
#define BRAID_DATASET_OPTIONS_INIT \
  { sizeof(braid_dataset_options), "fashion-mnist", NULL, BRAID_SPLIT_TRAIN }

/* Reads and validates the split's image and label files into host memory. A missing file fails with
 * BRAID_ERR_NOT_FOUND, a corrupt one (bad magic or dimensions, truncated, damaged gzip or bytes after
 * the gzip stream, a header that disagrees with the file's stated length, image/label
 * counts differ, label out of range) with BRAID_ERR_IO, each with a message naming the file and the
 * Debian package (dataset-fashion-mnist); bad options give BRAID_ERR_INVALID_ARGUMENT. Files are
 * NAME.gz, else plain NAME (train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-...). options may
 * be NULL (defaults). The dataset keeps ctx alive. Thread-safe. See docs/DATA.md. */
BRAID_API braid_status braid_dataset_open(braid_context ctx, const braid_dataset_options* options, braid_dataset* out);
BRAID_API braid_status braid_dataset_retain(braid_dataset ds);
BRAID_API braid_status braid_dataset_release(braid_dataset ds);
/* Number of examples, and the shape of one image (ndim 3: 1, 28, 28). Thread-safe (a dataset is
 * immutable once open). */
BRAID_API braid_status braid_dataset_size(braid_dataset ds, int64_t* count);
BRAID_API braid_status braid_dataset_image_shape(braid_dataset ds, int32_t* ndim, int64_t* shape /* >= 3 */);

typedef struct braid_batch_iterator_options {
  uint32_t struct_size;
  int64_t batch_size; /* > 0; >= the dataset's size (even INT64_MAX): one batch of all */
  int32_t shuffle;    /* reshuffle every epoch (counter-based, from seed + epoch) */
  uint64_t seed;
  int32_t drop_last;   /* 0: the last batch may be smaller */
  braid_device device; /* where the batches are placed */
  int32_t prefetch;    /* batches prepared ahead by the background thread; default 2 */
  /* Since 1.10: this iterator reads part part_index (0 <= part_index < num_parts) of each epoch, for
   * data parallelism across processes (MXNet's num_parts and part_index; PyTorch's
   * DistributedSampler). Every part has the same number of examples, so every rank takes the same
   * number of steps: the epoch's order is cut to floor(count / num_parts) * num_parts examples
   * (drop_last) or padded to ceil(count / num_parts) * num_parts by repeating it from its start;
   * part p takes positions p, p + num_parts, p + 2 num_parts, ... of that order. So batch b of the
   * parts together holds the examples of batch b of one iterator with num_parts times the batch size
   * (the same seed and shuffle). num_parts 0 or 1: the whole dataset. docs/DATA.md, "Parts". */
  int32_t num_parts;
  int32_t part_index;
} braid_batch_iterator_options;
#define BRAID_BATCH_ITERATOR_OPTIONS_INIT \
  { sizeof(braid_batch_iterator_options), 256, 1, 0, 0, 0, 2, 1, 0 }

/* Creates an iterator over ds (which it retains) and starts its prefetch thread. options may be NULL
 * (defaults). Thread-safe. The iterator itself is NOT thread-safe: call _next and _batches on one
 * iterator from one thread at a time (retain/release are thread-safe). The last release joins the
 * prefetch thread. */
BRAID_API braid_status braid_batch_iterator_create(braid_dataset ds, const braid_batch_iterator_options* options,
                                                   braid_batch_iterator* out);
BRAID_API braid_status braid_batch_iterator_retain(braid_batch_iterator it);
BRAID_API braid_status braid_batch_iterator_release(braid_batch_iterator it);
/* The next mini-batch: images float32 [B, 1, 28, 28] scaled to [0, 1], labels int32 [B], on the
 * iterator's device (new tensors the caller releases). At the end of the epoch returns BRAID_OK with
 * *images = *labels = NULL; the next call starts the next epoch (reshuffled). The order of epoch e is
 * a Fisher-Yates shuffle keyed by splitmix64's mixer of (seed, e): the same for the same seed whatever the
 * prefetch depth, batch size or timing (docs/DATA.md gives the exact function). */
BRAID_API braid_status braid_batch_iterator_next(braid_batch_iterator it, braid_tensor* images, braid_tensor* labels);
/* Number of batches per epoch. */
BRAID_API braid_status braid_batch_iterator_batches(braid_batch_iterator it, int64_t* count);
/* ---- autograd --------------------------------------------------------------------------------- *
 * While recording is on (per thread and per context: each thread of each context has its own switch,
 * off by default), every differentiable op whose inputs require a gradient is recorded on a tape held by
 * its outputs. A tensor requires a gradient when one is attached to it (a leaf) or when it is the output
 * of a recorded op. braid_backward pushes the gradient ops to the engine like any op (asynchronous,
 * parallel where independent) and frees the tape unless asked to retain it. See docs/AUTOGRAD.md.
 * Not recorded: in-place ops (optimizer updates, copy_into onto a leaf), argmax, comparisons, creation
 * and random ops. braid_copy to another device is recorded (Since 1.2): its gradient is copied back.
 * Recording and backward on separate graphs may run on separate threads; attach_grad or backward must
 * not race with ops using the same tensors. */
typedef enum braid_grad_req {
  BRAID_GRAD_NULL = 0,  /* no gradient: detaches a previously attached one */
  BRAID_GRAD_WRITE = 1, /* backward overwrites the gradient buffer */
  BRAID_GRAD_ADD = 2    /* backward adds to the gradient buffer (accumulation over several backwards) */
} braid_grad_req;

/* Turns recording on (on != 0) or off for the calling thread in ctx; *prev (may be NULL) receives the
 * previous setting, to restore it after a no-grad section. Thread-safe. */
BRAID_API braid_status braid_autograd_set_recording(braid_context ctx, int32_t on, int32_t* prev);
BRAID_API braid_status braid_autograd_is_recording(braid_context ctx, int32_t* out);
/* Since 1.13. Automatic mixed precision (PyTorch's autocast, MXNet's AMP) for the calling thread in ctx:
 * dtype BRAID_BFLOAT16 or BRAID_FLOAT16 turns it on, BRAID_FLOAT32 turns it off (the default; any
 * other dtype is BRAID_ERR_INVALID_ARGUMENT); *prev (may be NULL) receives the previous setting. While
 * it is on, braid_matmul and braid_conv2d given float32 operands (x and w; a bias stays float32) round
 * them to dtype and multiply with float32 accumulation, returning float32; autograd rounds the
 * gradients reaching them the same way. Every other op, and float64 operands, are unchanged, and the
 * weights stay float32 (the master copy an optimizer updates). A hybrid function keeps a graph per
 * setting. float16 training needs loss scaling (docs/AMP.md). Thread-safe. */
BRAID_API braid_status braid_autocast_set(braid_context ctx, braid_dtype dtype, braid_dtype* prev);
BRAID_API braid_status braid_autocast_get(braid_context ctx, braid_dtype* out);
/* Attaches a zero-filled gradient buffer of t's shape and dtype (float32/float64) and makes t a leaf
 * for the ops recorded after: they see no history. Ops recorded before keep theirs, so gradients
 * through them still reach t's inputs, and t's buffer gets only the later ops' gradients. Attaching
 * again keeps the buffer and changes req; BRAID_GRAD_NULL detaches it. */
BRAID_API braid_status braid_tensor_attach_grad(braid_tensor t, braid_grad_req req);
/* A new reference to t's gradient buffer; fails with BRAID_ERR_INVALID_STATE if none is attached. */
BRAID_API braid_status braid_tensor_grad(braid_tensor t, braid_tensor* out);
/* Back-propagates from count heads. head_grads may be NULL (or hold NULLs): a head without one must
 * have one element and gets 1. Gradients reach the buffers of the leaves (written or added by their
 * req). The tape is freed unless retain_graph != 0; a second backward over a freed tape fails with
 * BRAID_ERR_INVALID_STATE. Errors of the pushed ops surface as usual (wait on a gradient). */
BRAID_API braid_status braid_backward(int32_t count, const braid_tensor* heads, const braid_tensor* head_grads,
                                      int32_t retain_graph);

/* Backward ops (the gradients that are not compositions of other ops; autograd uses them, and so may
 * an application). Shapes and params as in the forward op; each returns a new tensor. */
/* dx (shape x_shape, 4 values) of conv2d from dy and w. */
BRAID_API braid_status braid_conv2d_backward_data(braid_tensor dy, braid_tensor w, const int64_t* x_shape,
                                                  const braid_conv2d_params* params, braid_tensor* dx);
/* dw (shape w_shape, 4 values) of conv2d from dy and x. */
BRAID_API braid_status braid_conv2d_backward_weight(braid_tensor dy, braid_tensor x, const int64_t* w_shape,
                                                    const braid_conv2d_params* params, braid_tensor* dw);
BRAID_API braid_status braid_pool2d_backward(braid_tensor dy, braid_tensor x, const braid_pool2d_params* params,
                                             braid_tensor* dx);
/* training != 0: the gradient flows through the batch statistics save_mean/save_invstd; otherwise they
 * are constants. dgamma and dbeta may be NULL. */
BRAID_API braid_status braid_batch_norm_backward(braid_tensor dy, braid_tensor x, braid_tensor gamma,
                                                 braid_tensor save_mean, braid_tensor save_invstd, int32_t training,
                                                 braid_tensor* dx, braid_tensor* dgamma, braid_tensor* dbeta);
/* dlogits = (softmax(logits) - onehot(labels)) * dloss[:, None]. */
BRAID_API braid_status braid_softmax_cross_entropy_backward(braid_tensor logits, braid_tensor labels,
                                                            braid_tensor dloss, braid_tensor* dlogits);

/* ---- parallel: several devices (Since 1.2) ------------------------------------------------------ *
 * Data parallelism over a list of devices, any mix of backends (see docs/PARALLEL.md). Everything
 * here is asynchronous like any op: copies run on the devices' transfer queues and reductions on
 * each device's comm queue (a second compute queue), ordered by the engine after the ops that wrote
 * their inputs, so a collective overlaps with compute and needs no barrier. Errors of the pushed work
 * surface at the next wait, like any op's. All functions are thread-safe unless stated. */

/* Sizes of the parts of `total` rows split over count devices: weights NULL splits evenly (sizes
 * differ by at most one, the first parts larger, like numpy.array_split); otherwise part i is
 * proportional to weights[i] (finite, >= 0, not all 0), rounded by largest remainder so the sizes
 * add up to total. sizes has count entries. Pure function: no context needed. */
BRAID_API braid_status braid_split_sizes(int64_t total, int32_t count, const double* weights, int64_t* sizes);
/* Splits x along axis 0 into count parts (sizes as braid_split_sizes) and copies part i to
 * devices[i]: MXNet's gluon.utils.split_and_load. outs (count entries) receive new tensors; a part
 * may have 0 rows. x must have at least one dimension. */
BRAID_API braid_status braid_split_and_load(braid_tensor x, int32_t count, const braid_device* devices,
                                            const double* weights, braid_tensor* outs);
/* Copies x to each of devices (count entries); outs receive new tensors (a copy, also on x's device).
 * Both this and braid_split_and_load are recorded by autograd when x requires a gradient (as a slice
 * and a braid_copy per part), so every part's gradient reaches x. */
BRAID_API braid_status braid_replicate(braid_tensor x, int32_t count, const braid_device* devices, braid_tensor* outs);

typedef enum braid_collective_op {
  BRAID_COLLECTIVE_SUM = 0,
  BRAID_COLLECTIVE_PROD = 1,
  BRAID_COLLECTIVE_MAX = 2,
  BRAID_COLLECTIVE_MIN = 3,
  BRAID_COLLECTIVE_AVG = 4, /* sum / count; float32/float64 only */
  BRAID_COLLECTIVE_OP_COUNT
} braid_collective_op;

typedef enum braid_allreduce_algorithm {
  BRAID_ALLREDUCE_AUTO = 0,   /* by size, device count and devices (docs/PARALLEL.md); BRAID_ALLREDUCE env overrides */
  BRAID_ALLREDUCE_NAIVE = 1,  /* reduce everything onto the first tensor's device, then broadcast */
  BRAID_ALLREDUCE_TREE = 2,   /* binomial tree reduce to the first, binomial tree broadcast */
  BRAID_ALLREDUCE_RING = 3,   /* reduce-scatter then all-gather around a ring, in count chunks */
  BRAID_ALLREDUCE_BIRING = 4, /* two rings in opposite directions, each over half the elements */
  /* Since 1.3 */
  BRAID_ALLREDUCE_DIRECT = 5, /* devices that share memory (the CPU backend's): each reduces its slice of
                                 every tensor in place and writes it to all, in one pass, all at once */
  BRAID_ALLREDUCE_ALGORITHM_COUNT
} braid_allreduce_algorithm;

typedef struct braid_collective_options {
  uint32_t struct_size;
  braid_collective_op op;
  braid_allreduce_algorithm algorithm; /* allreduce only */
} braid_collective_options;
#define BRAID_COLLECTIVE_OPTIONS_INIT \
  { sizeof(braid_collective_options), BRAID_COLLECTIVE_SUM, BRAID_ALLREDUCE_AUTO }

/* Collectives over count tensors of one context, one dtype and one shape, on any devices (usually one
 * each), with distinct storages. options may be NULL (SUM, AUTO). Integer sums wrap like the
 * elementwise add; every algorithm gives every device the same bits for integers, and floats within
 * the rounding of a different summation order.
 * Each collective is one unit against every other op on its tensors, whichever thread pushes them:
 * collectives called from several threads at once over the same tensors (or overlapping lists) give
 * the result of some serial order of the calls, ordered by the engine like any other op; an op another
 * thread pushes meanwhile lands before or after the whole collective, never inside it.
 * allreduce: in place, every tensor becomes the reduction of all of them (every algorithm gives
 * every device identical results). */
BRAID_API braid_status braid_allreduce(int32_t count, const braid_tensor* tensors,
                                       const braid_collective_options* options);
/* In place: tensors[root] becomes the reduction; the others are unchanged. */
BRAID_API braid_status braid_reduce_to(int32_t count, const braid_tensor* tensors, int32_t root,
                                       const braid_collective_options* options);
/* Every tensor becomes a copy of tensors[root]. */
BRAID_API braid_status braid_broadcast(int32_t count, const braid_tensor* tensors, int32_t root);
/* outs[i] (new, on inputs[i]'s device) = the inputs concatenated along axis 0, in order. */
BRAID_API braid_status braid_all_gather(int32_t count, const braid_tensor* inputs, braid_tensor* outs);
/* outs[i] (new, on inputs[i]'s device) = part i (along axis 0, which count must divide) of the
 * reduction of the inputs. */
BRAID_API braid_status braid_reduce_scatter(int32_t count, const braid_tensor* inputs,
                                            const braid_collective_options* options, braid_tensor* outs);

/* ---- optimizers (Since 1.2): the updaters of KVStore and Trainer -------------------------------- */
typedef enum braid_optimizer_kind {
  BRAID_OPTIMIZER_SGD = 0,  /* momentum 0: braid_sgd_update, else braid_sgd_momentum_update */
  BRAID_OPTIMIZER_ADAM = 1, /* braid_adam_update */
  BRAID_OPTIMIZER_KIND_COUNT
} braid_optimizer_kind;

/* braid_trainer_options embeds this struct by value, so it keeps this layout for ABI major 1 (growing
 * it would move the trainer options' later fields); docs/ABI.md, "How the ABI is checked". */
typedef struct braid_optimizer_params {
  uint32_t struct_size;
  braid_optimizer_kind kind;
  double learning_rate;
  double momentum; /* SGD */
  double weight_decay;
  double beta1, beta2, epsilon; /* Adam */
  double rescale_grad;          /* gradients are multiplied by this before the update (Gluon's rescale_grad) */
} braid_optimizer_params;
/* Refused with BRAID_ERR_INVALID_ARGUMENT (as torch.optim refuses them) wherever these are taken
 * (braid_kvstore_set_optimizer, braid_trainer_create): a field that is NaN or infinite, a negative
 * learning_rate or weight_decay, momentum outside [0, 1), and for Adam betas outside [0, 1) or a
 * negative epsilon; rescale_grad must be positive. */
#define BRAID_OPTIMIZER_PARAMS_INIT \
  { sizeof(braid_optimizer_params), BRAID_OPTIMIZER_SGD, 0.01, 0.0, 0.0, 0.9, 0.999, 1e-8, 1.0 }

/* ---- KVStore (Since 1.2): MXNet's key-value store for data parallelism -------------------------- *
 * type "local": values are summed, and the updater runs, on the device of the value given to init
 * (put it on cpu:0 for MXNet's "local"). "device": pushed values are summed on their own devices
 * (a tree reduce onto the first value's device), then moved to the stored value's device.
 * A push of a list of values for one key sums them; then the updater (if set) updates the stored value
 * with the sum as gradient, else the sum replaces it. pull copies the stored value into each out
 * (in place; any devices). Keys are int64. A KVStore handle is thread-safe; its calls are ordered like
 * the ops they push. */
typedef struct braid_kvstore_t* braid_kvstore;
/* type: "local" or "device"; NULL means "local". Since 1.9 also MXNet's "dist_sync",
 * "dist_device_sync" (or "dist_sync_device") and "dist_async": the keys live in server processes
 * (braid_kvstore_run_server) and this process is one of the job's workers (see "dist" below); other
 * names are BRAID_ERR_INVALID_ARGUMENT. */
BRAID_API braid_status braid_kvstore_create(braid_context ctx, const char* type, braid_kvstore* out);
BRAID_API braid_status braid_kvstore_retain(braid_kvstore kv);
/* The last release of a "dist" store tells its servers this worker is done. */
BRAID_API braid_status braid_kvstore_release(braid_kvstore kv);
/* Static string: the type as created ("local", "device", "dist_sync", "dist_device_sync", "dist_async"). */
BRAID_API braid_status braid_kvstore_type(braid_kvstore kv, const char** out);
/* Stores a copy of value under key (BRAID_ERR_INVALID_ARGUMENT if the key exists). */
BRAID_API braid_status braid_kvstore_init(braid_kvstore kv, int64_t key, braid_tensor value);
BRAID_API braid_status braid_kvstore_push(braid_kvstore kv, int64_t key, int32_t count, const braid_tensor* values);
BRAID_API braid_status braid_kvstore_pull(braid_kvstore kv, int64_t key, int32_t count, const braid_tensor* outs);
/* push then pull as one unit (outs may be the values themselves): no other thread's push to the key
 * lands between them, as MXNet's pushpull; outs are checked before anything is pushed. */
BRAID_API braid_status braid_kvstore_pushpull(braid_kvstore kv, int64_t key, int32_t count, const braid_tensor* values,
                                              const braid_tensor* outs);
/* Sets the updater run on every later push (float keys only); optimizer state is per key. NULL
 * removes it (pushes assign again). Another kind of optimizer starts every key's state afresh (Adam's
 * step count, momentum); new parameters of the same kind (a learning rate schedule) keep it. A value
 * of another dtype than the key's is BRAID_ERR_DTYPE, of another shape BRAID_ERR_SHAPE. */
BRAID_API braid_status braid_kvstore_set_optimizer(braid_kvstore kv, const braid_optimizer_params* params);

/* ---- KVStore across processes (Since 1.9): MXNet's dist_sync, dist_device_sync, dist_async ------- *
 * A job has W workers (the application's processes, ranks 0..W-1 from the launcher's variables) and S
 * server processes, which hold the keys (a key on server key mod S; one of at least
 * BRAID_KVSTORE_BIGARRAY_BOUND elements, 1000000 by default, split evenly over every server) and run the
 * optimizer set with braid_kvstore_set_optimizer. `braid-run -n W --servers S` starts both; the
 * variables are in docs/DISTRIBUTED.md (MXNet's DMLC_* ones too). On a worker:
 *  - init: rank 0's value is stored (every worker must call init for the key; the others' values are
 *    not sent), then every worker waits for the others (a barrier), as MXNet does.
 *  - push: the values are summed in this process (on the stored value's device, or on their own for
 *    dist_device_sync), then sent to the servers. "dist_sync": a server applies one update per key per
 *    round, once every worker has pushed it, with the sum over workers (added in rank order, so a run
 *    is reproducible) as gradient; a worker's second push of a key waits for the round to end.
 *    "dist_async": each push updates the key as it arrives.
 *  - pull: the servers' value; under dist_sync, after this worker's last push of the key is applied.
 *  - set_optimizer: rank 0's is sent to every server (every worker must call it), then a barrier.
 * These calls block until the servers have answered, and each has the job's timeout (BRAID_DIST_TIMEOUT,
 * 300 s by default): a server or worker that died or stalls makes them fail (BRAID_ERR_IO or
 * BRAID_ERR_TIMEOUT) naming it, never hang. A store of another type answers rank 0 of 1 worker and 0
 * servers. */
typedef struct braid_kvstore_info {
  uint32_t struct_size;
  int32_t rank;        /* this worker's rank */
  int32_t num_workers; /* W */
  int32_t num_servers; /* S */
} braid_kvstore_info;
BRAID_API braid_status braid_kvstore_get_info(braid_kvstore kv, braid_kvstore_info* out);
/* Returns once every worker has called it (a no-op for a store of one process). */
BRAID_API braid_status braid_kvstore_barrier(braid_kvstore kv);
/* In a server process of a job (BRAID_ROLE=server, or MXNet's DMLC_ROLE=server; `braid-run
 * --servers` runs braid-kvstore-server, which calls this): serves the job's keys until every worker has
 * released its store, then returns BRAID_OK; an error when a worker died or broke the protocol
 * (the others' calls fail with it). With DMLC_ROLE=scheduler it serves the job's rendezvous store
 * instead. BRAID_ERR_INVALID_STATE in a process of no server or scheduler role. */
BRAID_API braid_status braid_kvstore_run_server(braid_context ctx);

/* ---- Trainer (Since 1.2): data-parallel training over replicas ---------------------------------- *
 * Parameters replicated on several devices (replica r of parameter p at params[r * num_params + p];
 * the replicas of one parameter have one shape and dtype, sit on distinct devices (else
 * BRAID_ERR_INVALID_ARGUMENT), and each has a gradient attached; create broadcasts replica 0's values to
 * the others, as PyTorch's DDP does, so they start equal). step() all-reduces every parameter's
 * gradients over the replicas in buckets of about bucket_bytes, pushed from the last parameter to the
 * first (the order backward produces them), so each bucket's allreduce starts as soon as its gradients
 * are written and overlaps the rest of backward; then it updates every replica with the optimizer and
 * rescale_grad / batch_size, like Gluon's Trainer.step(batch_size). A trainer handle is not
 * thread-safe (retain/release are). */
typedef struct braid_trainer_t* braid_trainer;
typedef struct braid_trainer_options {
  uint32_t struct_size;
  braid_optimizer_params optimizer;
  uint64_t bucket_bytes;               /* 0: 1 MiB */
  braid_allreduce_algorithm algorithm; /* for every bucket */
  uint64_t flags;                      /* BRAID_TRAINER_* bits; Since 1.6 */
} braid_trainer_options;
#define BRAID_TRAINER_OPTIONS_INIT \
  { sizeof(braid_trainer_options), BRAID_OPTIMIZER_PARAMS_INIT, 0, BRAID_ALLREDUCE_AUTO, 0 }
/* A step normally refuses (BRAID_ERR_INVALID_STATE) a gradient that no backward wrote since the last
 * update (Gluon's stale gradient). With this flag a parameter stale on every replica is skipped (not
 * reduced, not updated: a layer this step did not use); stale on some replicas only is still refused. */
#define BRAID_TRAINER_IGNORE_STALE_GRAD 1u

BRAID_API braid_status braid_trainer_create(int32_t num_replicas, int32_t num_params, const braid_tensor* params,
                                            const braid_trainer_options* options, braid_trainer* out);
BRAID_API braid_status braid_trainer_retain(braid_trainer tr);
BRAID_API braid_status braid_trainer_release(braid_trainer tr);
/* allreduce_grads, then update(batch_size). batch_size > 0 is the global batch (all replicas). Every
 * replica's gradient of every parameter must have been written since an update last used it (by
 * backward, or any write into the buffer: a graph run, zeros on purpose), else BRAID_ERR_INVALID_STATE
 * before anything changes (see BRAID_TRAINER_IGNORE_STALE_GRAD; a caller built before 1.6 gets that
 * flag). Unknown flag bits are BRAID_ERR_INVALID_ARGUMENT at create. */
BRAID_API braid_status braid_trainer_step(braid_trainer tr, double batch_size);
/* Sums every parameter's gradients over the replicas (in place), bucket by bucket. Gradients it
 * summed, with nothing written into them since, are not summed again: a step after it only updates,
 * and a second call does nothing. */
BRAID_API braid_status braid_trainer_allreduce_grads(braid_trainer tr);
/* Updates every replica from its gradient scaled by rescale_grad / batch_size. */
BRAID_API braid_status braid_trainer_update(braid_trainer tr, double batch_size);
/* learning_rate: finite and not negative, else BRAID_ERR_INVALID_ARGUMENT (the trainer keeps its rate). */
BRAID_API braid_status braid_trainer_set_learning_rate(braid_trainer tr, double learning_rate);
BRAID_API braid_status braid_trainer_learning_rate(braid_trainer tr, double* out);

/* ---- Trainer checkpoints (Since 1.9): Gluon's Trainer.save_states and load_states ---------------- *
 * save_states writes the optimizer's state, atomically (a temporary beside path, then a rename), as a
 * safetensors file: the optimizer kind, the learning rate, each parameter's step count and its
 * momentum (SGD) or moments (Adam) where they exist yet. With the parameters (braid_save_safetensors)
 * and the application's own step and data position, a run resumed from it continues bit for bit as if
 * it had not stopped (docs/CHECKPOINTS.md, "Resuming training"). load_states gives every replica that
 * state and the learning rate; a file of another optimizer kind, another number of parameters, a
 * state whose shape or dtype is not its parameter's, or one without a state the optimizer has after
 * the steps it counts (momentum, Adam's moments) is BRAID_ERR_INVALID_ARGUMENT, a missing file
 * BRAID_ERR_NOT_FOUND, a damaged one BRAID_ERR_IO; the trainer is unchanged then. */
BRAID_API braid_status braid_trainer_save_states(braid_trainer tr, const char* path);
BRAID_API braid_status braid_trainer_load_states(braid_trainer tr, const char* path);

/* ---- library version (Since 1.3) --------------------------------------------------------------- */
/* The loaded library's release and ABI versions as text, "MAJOR.MINOR.PATCH (ABI MAJOR.MINOR)", e.g.
 * "0.1.0 (ABI 1.11)": the BRAID_VERSION_* and BRAID_ABI_* macros it was built with. Static storage,
 * never NULL; thread-safe, never fails. For display: compare versions with braid_version(). */
BRAID_API const char* braid_version_string(void);

/* ---- what a device reaches (Since 1.4) ------------------------------------------------------- */
/* Figures measured with braid's own ops on the device (docs/HARDWARE.md, "What a device reaches"):
 * the practical peak of its compute and memory, as the chapter's hardware section asks a program to
 * know. 0 where the device has no kernel for the op. */
typedef struct braid_device_perf {
  uint32_t struct_size;
  double matmul_flops_f32;           /* FLOP/s (2n^3 / s) of the fastest square float32 matmul, n <= 2048 */
  double matmul_flops_f64;           /* the same in float64 */
  double copy_bytes_per_s;           /* bytes read + written per second by a copy within the device */
  double host_to_device_bytes_per_s; /* braid_tensor_write_host of up to 64 MiB, pageable host memory */
  double device_to_host_bytes_per_s; /* braid_tensor_to_host of the same */
  double seconds;                    /* how long the measurement took */
} braid_device_perf;

/* Measures the device the first time it is asked (a fraction of a second: matmuls from 256 to at most
 * 2048, until one takes 20 ms; copies of up to 64 MiB, each the best of three), then returns the same
 * figures for the context's lifetime. Measure an idle device: the timings include whatever is queued
 * on it. Thread-safe (concurrent first calls measure once). Since 1.4. */
BRAID_API braid_status braid_device_measure(braid_context ctx, braid_device device, braid_device_perf* out);

/* ---- checkpoints: safetensors files (Since 1.4) -------------------------------------------------- */
/* Tensors to and from files in the safetensors format (docs/CHECKPOINTS.md): an 8-byte little-endian
 * header length, a JSON header naming each tensor's dtype (F32, F64, I32, I64, U8, F16, BF16), shape
 * and byte range, then the raw little-endian data; files from other libraries that use these dtypes
 * load, and files written here load there. */

/* Writes tensors[i] under names[i] (unique, non-empty UTF-8, not "__metadata__"). Waits for each tensor
 * (an asynchronous error of one is returned, and nothing is written). Atomic: the file is written
 * beside `path`, synced, and renamed over it, so `path` holds the old file or the new one; an existing
 * `path` that is not a regular file (symlink, FIFO, device) is refused. A new file gets mode 0666 less
 * the umask, a replaced one keeps its mode. Since 1.4. */
BRAID_API braid_status braid_save_safetensors(const char* path, int32_t count, const char* const* names,
                                              const braid_tensor* tensors);
/* The names of a file's tensors, each NUL-terminated, back to back, in data order. *size gets the
 * bytes they need; with buffer NULL only that is done, and a capacity below it is
 * BRAID_ERR_INVALID_ARGUMENT. A corrupt file is BRAID_ERR_IO, naming what is wrong. Since 1.4. */
BRAID_API braid_status braid_safetensors_names(const char* path, char* buffer, size_t capacity, size_t* size);
/* Loads the named tensors onto `device` (outs[i] for names[i]). All or nothing: on an error every
 * outs[i] is NULL. A missing name is BRAID_ERR_NOT_FOUND; a corrupt file BRAID_ERR_IO, naming what is
 * wrong; memory never grows with what a damaged header claims (a range must lie inside the file).
 * Since 1.4. */
BRAID_API braid_status braid_load_safetensors(braid_context ctx, braid_device device, const char* path, int32_t count,
                                              const char* const* names, braid_tensor* outs);

/* ---- log (Since 1.5) ---------------------------------------------------------------------------- */
/* What backends and the library report besides status codes (a device they skipped, a setting they
 * corrected, a queue's counts). Nothing is printed unless asked: BRAID_LOG=debug|info|warning|error
 * prints messages of that level and above on stderr ("off" or unset: nothing); a callback receives
 * them instead. */
typedef enum braid_log_level {
  BRAID_LOG_DEBUG = 0,
  BRAID_LOG_INFO,
  BRAID_LOG_WARNING,
  BRAID_LOG_ERROR
} braid_log_level;
/* Called on whatever thread logs (an application thread, a backend's queue thread), possibly several
 * at once; message is valid during the call only. Must not call into braid. */
typedef void (*braid_log_fn)(void* user, braid_log_level level, const char* message);
/* Sends messages of min_level and above to fn (process-wide; replaces BRAID_LOG's printing), or back
 * to BRAID_LOG's handling when fn is NULL (min_level is then ignored). A call returns after any
 * callback already running with the previous fn has ended, so user may be freed after setting another
 * one. A min_level outside braid_log_level with a non-NULL fn is BRAID_ERR_INVALID_ARGUMENT; a call from
 * inside the callback is BRAID_ERR_INVALID_STATE (it would wait for itself). Since 1.5. */
BRAID_API braid_status braid_set_log_callback(braid_log_fn fn, void* user, braid_log_level min_level);
/* The static name of a level: "debug", "info", "warning", "error"; "invalid" otherwise. Since 1.5. */
BRAID_API const char* braid_log_level_name(braid_log_level level);

/* ---- graph mode (Since 1.5) --------------------------------------------------------------------- */
/* Hybrid programming (docs/GRAPH.md): trace what a function runs into a graph, optimise it, run it
 * with one engine op per run instead of one per kernel, export it, and load it in another program.
 * A graph holds the kernels the traced code ran (every op, however composite, is kernels), on one
 * device. Tensors that existed before tracing and were read (parameters, constants) are read where
 * they are at each run, so an optimizer's in-place updates are seen; a loaded graph owns them. */
typedef struct braid_graph_t* braid_graph;

/* Passes for braid_graph_optimize (a bit mask). Each keeps results equal to imperative execution. */
typedef enum braid_graph_pass {
  BRAID_GRAPH_PASS_DEAD_CODE = 1,             /* drop kernels whose results reach no output */
  BRAID_GRAPH_PASS_COMMON_SUBEXPRESSIONS = 2, /* compute a repeated kernel once (never random ones) */
  BRAID_GRAPH_PASS_FOLD_CONSTANTS = 4,        /* compute what depends on no input or parameter once, now */
  BRAID_GRAPH_PASS_PLAN_MEMORY = 8,           /* intermediates share the workspace's slots, and in place */
  BRAID_GRAPH_PASS_FUSE_ELEMENTWISE = 16,     /* a chain of elementwise kernels runs as one (where the backend can) */
  BRAID_GRAPH_PASS_ALL = 31
} braid_graph_pass;

/* Starts tracing on the calling thread: the ops it runs on ctx until braid_graph_trace_end still run
 * as usual and are also recorded. inputs are the graph's inputs, in order (distinct tensors on one
 * device). Another thread's ops are never recorded. Fails with BRAID_ERR_INVALID_STATE if the thread
 * already traces (nothing begins on any failure). An open trace holds a reference to ctx until it
 * ends (trace_end, trace_abort, or the thread's exit). Since 1.5. */
BRAID_API braid_status braid_graph_trace_begin(braid_context ctx, int32_t num_inputs, const braid_tensor* inputs);
/* Ends the calling thread's trace: *out is a new graph computing outputs (in order) from the inputs.
 * If something could not be captured (an op on another device or context, a copy of a computed value
 * to another device, an upload into a computed value) the trace still ends and this fails with
 * BRAID_ERR_INVALID_STATE naming it. Bad arguments (out or outputs NULL, a negative count, a released
 * or foreign output, ctx other than the trace's) are BRAID_ERR_INVALID_ARGUMENT and end the trace too.
 * Without a trace on the calling thread: BRAID_ERR_INVALID_STATE. Since 1.5. */
BRAID_API braid_status braid_graph_trace_end(braid_context ctx, int32_t num_outputs, const braid_tensor* outputs,
                                             braid_graph* out);
/* Ends the calling thread's trace, if any, without making a graph (an error path). BRAID_OK without
 * one. Since 1.5. */
BRAID_API braid_status braid_graph_trace_abort(void);
BRAID_API braid_status braid_graph_retain(braid_graph g);
BRAID_API braid_status braid_graph_release(braid_graph g);
/* Applies passes (braid_graph_pass bits), in the order of the enum. Not concurrently with a run of the
 * same graph. Since 1.5. */
BRAID_API braid_status braid_graph_optimize(braid_graph g, uint32_t passes);
/* Runs the graph: inputs must match the traced ones' dtypes and shapes and be on the graph's device;
 * outputs[i] get new tensors. num_inputs and num_outputs must be the graph's counts (checked before
 * either array is read); otherwise, or for a NULL, released or foreign input or one storage passed
 * twice: BRAID_ERR_INVALID_ARGUMENT; a wrong dtype: BRAID_ERR_DTYPE; a wrong shape: BRAID_ERR_SHAPE;
 * another device: BRAID_ERR_DEVICE. outputs may be the inputs array (the inputs are read first).
 * Releasing the graph while runs are in flight is safe: they hold what they use. Asynchronous like
 * any op; errors of kernels surface at the next wait.
 * While the calling thread records autograd and an input or parameter requires a gradient, the run
 * is recorded kernel by kernel, so braid_backward goes through the graph. Thread-safe; runs of one
 * graph are serialised. Since 1.5. */
BRAID_API braid_status braid_graph_run(braid_graph g, int32_t num_inputs, const braid_tensor* inputs,
                                       int32_t num_outputs, braid_tensor* outputs);

typedef struct braid_graph_info {
  uint32_t struct_size;
  int32_t num_inputs, num_outputs;
  int32_t num_nodes;  /* kernels */
  int32_t num_params; /* parameters and constants it reads */
  braid_device device;
  int32_t pushes_per_run;      /* engine ops per run: 1 where the device's backend runs segments */
  uint64_t workspace_bytes;    /* bytes of intermediates per run once planned (at the first run or PLAN_MEMORY) */
  uint64_t intermediate_bytes; /* the sum of the intermediates' sizes: what runs without a plan would hold */
  uint32_t passes;             /* braid_graph_pass bits applied */
  int32_t kernels_per_run;     /* kernels a run submits (fused chains count once; known after the first run) */
} braid_graph_info;
BRAID_API braid_status braid_graph_get_info(braid_graph g, braid_graph_info* out);

/* One kernel of the graph, in execution order. name is owned by the graph and valid until it is
 * optimised or released. dtype, ndim and shape describe output 0 (ndim 0 when it has none). */
typedef struct braid_graph_node_info {
  uint32_t struct_size;
  const char* name;   /* the op that ran it ("matmul", "relu", ...) */
  const char* kernel; /* the kernel op ("MATMUL", "UNARY", ...); static */
  int32_t num_inputs, num_outputs;
  braid_dtype dtype;
  int32_t ndim;
  int64_t shape[BRAID_MAX_DIMS];
} braid_graph_node_info;
BRAID_API braid_status braid_graph_get_node(braid_graph g, int32_t index, braid_graph_node_info* out);

/* The dtype and shape of input or output `index`: what a run takes and gives. */
typedef struct braid_graph_tensor_info {
  uint32_t struct_size;
  braid_dtype dtype;
  int32_t ndim;
  int64_t shape[BRAID_MAX_DIMS];
} braid_graph_tensor_info;
BRAID_API braid_status braid_graph_get_input(braid_graph g, int32_t index, braid_graph_tensor_info* out);
BRAID_API braid_status braid_graph_get_output(braid_graph g, int32_t index, braid_graph_tensor_info* out);

/* Writes the graph as JSON (format "braid.graph", version 1.0: values, kernels with typed attributes,
 * inputs, outputs) to json_path and its parameters to params_path as safetensors, both atomically.
 * Waits for the parameters. NULL or empty paths, one file for both (however spelled), or a path that
 * exists and is not a regular file (a directory): BRAID_ERR_INVALID_ARGUMENT; a folder that does not
 * exist: BRAID_ERR_IO. New files get mode 0666 less the umask; a replaced file keeps its mode.
 * json_path is checked first, so nothing is written when it cannot be. Since 1.5. */
BRAID_API braid_status braid_graph_save(braid_graph g, const char* json_path, const char* params_path);
/* Loads a saved graph onto `device` of ctx with its parameters. A file of a newer major format version
 * is BRAID_ERR_UNSUPPORTED; a malformed file BRAID_ERR_IO naming what is wrong (an empty file, the
 * other file of the pair, a directory); a missing file BRAID_ERR_NOT_FOUND; NULL or empty paths or a
 * device out of range BRAID_ERR_INVALID_ARGUMENT; a kernel the device's backend lacks
 * BRAID_ERR_UNSUPPORTED. Since 1.5. */
BRAID_API braid_status braid_graph_load(braid_context ctx, braid_device device, const char* json_path,
                                        const char* params_path, braid_graph* out);

/* A hybrid function, MXNet's hybridize: fn is traced the first time it is called with an input
 * signature (device, dtypes, shapes) and its graph is run for that call and later ones with that
 * signature. fn receives the inputs and must set every outputs[i] to a new tensor handle (an input
 * returned as it is, without braid_tensor_retain on the thread that runs fn, is retained on fn's
 * behalf); returning
 * non-zero aborts the call with that status. It must compute only with braid ops (what it does on the
 * host runs only when it is traced). It is traced without running its kernels, so inside it reading a
 * value on the host is BRAID_ERR_INVALID_STATE, and a tensor it made and kept has no value after the
 * call (using one is BRAID_ERR_INVALID_STATE); the caller receives the graph's outputs. Called inside another
 * trace, fn runs directly and its ops join that trace. The inputs stay the caller's: fn must not
 * release them (the call then fails with BRAID_ERR_INVALID_ARGUMENT), nor call braid_hybrid_call on its
 * own hybrid (BRAID_ERR_INVALID_STATE: recursion would never end). An output fn left NULL is
 * BRAID_ERR_INVALID_ARGUMENT; on any failure the outputs fn set are released. Since 1.5. */
typedef braid_status (*braid_hybrid_fn)(void* user, int32_t num_inputs, const braid_tensor* inputs, int32_t num_outputs,
                                        braid_tensor* outputs);
typedef struct braid_hybrid_t* braid_hybrid;
/* passes: applied to each new graph (BRAID_GRAPH_PASS_ALL is the usual choice). Since 1.5. */
BRAID_API braid_status braid_hybrid_create(braid_context ctx, braid_hybrid_fn fn, void* user, int32_t num_inputs,
                                           int32_t num_outputs, uint32_t passes, braid_hybrid* out);
BRAID_API braid_status braid_hybrid_retain(braid_hybrid h);
BRAID_API braid_status braid_hybrid_release(braid_hybrid h);
/* Runs fn's graph for these inputs (tracing it first for a new signature). outputs may be the inputs
 * array. Thread-safe (two threads tracing one new signature at once both get their results; the
 * first graph is kept). Since 1.5. */
BRAID_API braid_status braid_hybrid_call(braid_hybrid h, const braid_tensor* inputs, braid_tensor* outputs);
/* The graph cached for the signature of these inputs (a new reference), or BRAID_ERR_NOT_FOUND before
 * a call with it: to inspect or export what was hybridized. Since 1.5. */
BRAID_API braid_status braid_hybrid_graph(braid_hybrid h, const braid_tensor* inputs, braid_graph* out);

/* ---- processes and hosts (Since 1.8) ---------------------------------------------------------- */
/* A process group joins the processes of a job (its ranks, on one host or several) so that they
 * reduce tensors together, through a communication plugin (libbraid-comm-gloo.so: Gloo over TCP, for
 * tensors in host memory; tensors on other devices are staged through a host-memory device). See
 * docs/DISTRIBUTED.md: launching with braid-run, mpirun, srun or torchrun-style launchers, every
 * variable, and what each kind of failure does.
 *
 * Each collective below is an engine op on the group's own queue, like the in-process collectives:
 * it returns at once, runs when the ops that write its tensors have ended, and later ops on those
 * tensors wait for it; its errors surface at braid_tensor_wait_to_read / braid_wait_all. Every rank
 * must make the same collectives in the same order with the same dtypes and element counts; ranks
 * that disagree fail with BRAID_ERR_INVALID_STATE naming both calls (a fingerprint of each call keys
 * it, so calls that differ never meet and are named when they time out; where the plugin cannot key
 * calls, or with BRAID_DIST_CHECK=2, the ranks exchange it before each call and are named at once;
 * BRAID_PROCESS_GROUP_NO_CHECK turns both off). Every call has the group's timeout: a rank
 * that died or stalls makes the others' calls fail within it (BRAID_ERR_IO or BRAID_ERR_TIMEOUT, the
 * message naming the rank, the call and its number), never hang. The first failure fails the group:
 * later calls fail at once with the same message, and the other ranks' calls fail too.
 * Thread-safe: calls from several threads are numbered in the order they reach the group, so the
 * application must order them alike on every rank (one thread per group is the usual way). */
typedef struct braid_process_group_t* braid_process_group;

typedef struct braid_process_group_options {
  uint32_t struct_size;
  int32_t rank; /* -1: from the launcher's variables (BRAID_RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID, RANK), else 0 */
  int32_t world_size; /* 0: from the launcher's variables, else 1 */
  const char*
      master_addr;     /* where rank 0 serves the rendezvous store; NULL: BRAID_MASTER_ADDR, MASTER_ADDR, 127.0.0.1 */
  int32_t master_port; /* 0: BRAID_MASTER_PORT, MASTER_PORT, 29500 */
  const char* backend; /* communication plugin; NULL: BRAID_DIST_BACKEND, else "gloo" */
  double timeout_seconds; /* of joining and of every call; 0: BRAID_DIST_TIMEOUT, else 300 */
  uint32_t flags;         /* BRAID_PROCESS_GROUP_* bits */
} braid_process_group_options;
#define BRAID_PROCESS_GROUP_OPTIONS_INIT \
  { sizeof(braid_process_group_options), -1, 0, NULL, 0, NULL, 0.0, 0 }
/* No check of the ranks' calls against each other (neither the key nor the exchange): a mismatch then
 * gives a timeout or wrong data instead of an error naming both sides. BRAID_DIST_CHECK=0 does the same. */
#define BRAID_PROCESS_GROUP_NO_CHECK 1u

/* Joins the group: blocks until every rank has joined, or fails after the timeout (BRAID_ERR_TIMEOUT,
 * saying what it waited for). Rank 0 serves the rendezvous store on master_port (BRAID_ERR_IO if the
 * port is taken). A missing plugin is BRAID_ERR_NOT_FOUND, bad options or variables
 * BRAID_ERR_INVALID_ARGUMENT naming them. options may be NULL (all from the environment). */
BRAID_API braid_status braid_process_group_create(braid_context ctx, const braid_process_group_options* options,
                                                  braid_process_group* out);
BRAID_API braid_status braid_process_group_retain(braid_process_group pg);
/* The last release waits for the group's calls, then leaves the group (rank 0 waits, at most 10 s,
 * for the other ranks to leave before it stops serving the store). */
BRAID_API braid_status braid_process_group_release(braid_process_group pg);

typedef struct braid_process_group_info {
  uint32_t struct_size;
  int32_t rank;
  int32_t world_size;
  int32_t local_rank; /* the rank among this host's processes (from the launcher; else rank) */
  int32_t local_size; /* the processes on this host (from the launcher; else world_size) */
  double timeout_seconds;
  char backend[32];
} braid_process_group_info;
BRAID_API braid_status braid_process_group_get_info(braid_process_group pg, braid_process_group_info* out);

/* t becomes the reduction over the ranks of every rank's t (in place). AVG (float32/float64) divides
 * the sum by the world size. */
BRAID_API braid_status braid_process_group_allreduce(braid_process_group pg, braid_tensor t, braid_collective_op op);
/* Every rank's t becomes root's t. */
BRAID_API braid_status braid_process_group_broadcast(braid_process_group pg, braid_tensor t, int32_t root);
/* root's t becomes the reduction; the other ranks' t are left as they were. */
BRAID_API braid_status braid_process_group_reduce(braid_process_group pg, braid_tensor t, int32_t root,
                                                  braid_collective_op op);
/* out (world_size times in's elements, any shape, in's dtype) = every rank's in, in rank order. */
BRAID_API braid_status braid_process_group_all_gather(braid_process_group pg, braid_tensor in, braid_tensor out);
/* out (in's elements / world_size) = part `rank` of the reduction over the ranks of in. */
BRAID_API braid_status braid_process_group_reduce_scatter(braid_process_group pg, braid_tensor in, braid_tensor out,
                                                          braid_collective_op op);
/* Blocks until every rank has reached the barrier and this rank's earlier calls of the group have
 * ended; returns the first error among them. */
BRAID_API braid_status braid_process_group_barrier(braid_process_group pg);
/* Point to point: t's elements to rank peer, or from it into t, paired by tag. Not checked by
 * fingerprint; a send and its recv must be made in matching orders on the two ranks (a send waits
 * for the peer's recv, within the timeout). */
BRAID_API braid_status braid_process_group_send(braid_process_group pg, braid_tensor t, int32_t peer, int32_t tag);
BRAID_API braid_status braid_process_group_recv(braid_process_group pg, braid_tensor t, int32_t peer, int32_t tag);
/* Data parallelism across processes, hierarchically: each step's gradients are summed over the
 * trainer's replicas in this process, then across the processes of pg (on replica 0's device, through
 * the group's plugin), then handed back to every replica, bucket by bucket, each bucket as soon as
 * backward has written it. batch_size in braid_trainer_step and braid_trainer_update is then the global
 * batch: every replica's rows in every process. Setting a group broadcasts the parameters from rank 0
 * (and each process's replica 0 to its other replicas), so every process starts from rank 0's values;
 * every rank must set it, with its trainer's parameters in the same order. pg NULL: back to this
 * process's replicas alone. A parameter must be stale (or fresh) on every rank alike: ranks that
 * differ make different collectives, which fail as mismatched (docs/DISTRIBUTED.md, "Trainer"). */
BRAID_API braid_status braid_trainer_set_process_group(braid_trainer tr, braid_process_group pg);
/* Since 1.10: elastic jobs taking lost ranks back (braid-run --min-ranks M --rejoin S). *pending becomes
 * 1 on every rank alike when braid-run has ranks lost earlier ready to come back: the application then
 * finishes its checkpoint, releases its group and exits with BRAID_EXIT_REJOIN, and braid-run starts
 * every rank again with the larger world size, to resume from that checkpoint. 0 otherwise, and always
 * outside braid-run --rejoin. Call it on every rank at the same point (after a checkpoint is complete);
 * rank 0 looks and the others receive its answer through the rendezvous store (BRAID_ERR_TIMEOUT after
 * the group's timeout when rank 0 does not answer). docs/DISTRIBUTED.md, "Elastic". */
#define BRAID_EXIT_REJOIN 75
BRAID_API braid_status braid_process_group_rejoin_pending(braid_process_group pg, int32_t* pending);

/* ---- consistent names (Since 1.11) -------------------------------------------------------------- *
 * The same functions under names of one pattern: noun first (braid_<object>_<verb>), and getters that
 * fill an info struct spelled braid_<object>_get_<what>; creation of a tensor from nothing spelled as
 * NumPy's (braid_empty beside braid_full and braid_arange). Each is the same exported code as the name
 * it stands beside, which stays: the ABI keeps every name it ever had (error messages name the older
 * spelling). docs/ABI.md, "Names". */
BRAID_API braid_status braid_context_get_backend_info(braid_context ctx, int32_t index, braid_backend_info* out);
BRAID_API braid_status braid_context_get_device_info(braid_context ctx, braid_device device, braid_device_info* out);
BRAID_API braid_status braid_memory_get_stats(braid_context ctx, braid_device device, braid_memory_stats* out);
BRAID_API braid_status braid_empty(braid_context ctx, braid_device device, braid_dtype dtype, int32_t ndim,
                                   const int64_t* shape, braid_tensor* out);
BRAID_API braid_status braid_safetensors_save(const char* path, int32_t count, const char* const* names,
                                              const braid_tensor* tensors);
BRAID_API braid_status braid_safetensors_load(braid_context ctx, braid_device device, const char* path, int32_t count,
                                              const char* const* names, braid_tensor* outs);

#ifdef __cplusplus
} /* extern "C" */
#endif
#endif /* BRAID_H_ */
