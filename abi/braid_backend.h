/* braid_backend.h — the plugin ABI between libbraid (the host) and a backend plugin (C, stable ABI).
 *
 * A plugin is a shared library named libbraid-backend-<name>.so that exports one symbol:
 *
 *   braid_status braid_backend_query(uint32_t host_major, uint32_t host_minor,
 *                                    const braid_host_api* host, const braid_backend_api** out);
 *
 * Query has no side effects beyond remembering `host`; devices are opened later. The major versions
 * must match (the plugin returns BRAID_ERR_ABI_MISMATCH otherwise, and the host refuses a table whose
 * abi_major differs). Minor versions may differ either way: tables only grow at the end and each side
 * reads only the fields that the other's struct_size covers.
 *
 * Required and optional entries (Since 1.4): each entry of braid_backend_api below says which it is. An
 * optional entry may be NULL; the host then uses the default written next to it (implemented once, in
 * the host's loader), and never calls a NULL entry. A plugin that leaves an optional entry NULL must
 * declare abi_minor 4 or later: a table declaring an older minor is held to that minor's rule (every
 * 1.0 entry present), so an old plugin is read exactly as the host of its minor read it. A NULL
 * required entry makes the host refuse the plugin, naming the entry.
 *
 * Extensions (Since 1.4): get_proc_address offers named functions beyond this table without an ABI bump.
 * Names are "braid_ext_<vendor>_<name>" (lower case, e.g. "braid_ext_acme_peer_copy"); the function's
 * type and meaning are the extension's own documentation's, and they never change under one name (a
 * new behaviour takes a new name, e.g. "..._v2").
 *
 * A plugin whose vendor library (libcuda, the Vulkan loader) is missing still loads: it reports zero
 * devices and a reason. Vendor libraries are loaded lazily.
 *
 * Execution model: a queue runs submitted work in submission order. Each submission may wait on
 * timeline semaphores of the same backend before it starts and signals one timeline semaphore when it
 * ends. The host learns about every submission's start and end through the host API callbacks.
 *
 * Plugins include this header and nothing else of braid (braid.h provides the shared enums).
 */
#ifndef BRAID_BACKEND_H_
#define BRAID_BACKEND_H_

#include "braid.h"

#ifdef __cplusplus
extern "C" {
#endif

#define BRAID_BACKEND_ABI_MAJOR 1
#define BRAID_BACKEND_ABI_MINOR 7
#define BRAID_BACKEND_QUERY_SYMBOL "braid_backend_query"

typedef struct braid_backend_device_t* braid_backend_device;
typedef struct braid_backend_buffer_t* braid_backend_buffer;
typedef struct braid_backend_queue_t* braid_backend_queue;
typedef struct braid_backend_semaphore_t* braid_backend_semaphore;

/* ---- kernel ops ------------------------------------------------------------------------------- *
 * Semantics, shapes and dtypes are validated by the host before a kernel is submitted; a kernel may
 * trust its call. Attribute slots (ints = i[], floats = f[]) per op:
 *
 *  FILL            out[0]            f0 = value
 *  ARANGE          out[0] (1-D)      f0 = start, f1 = step            out[k] = start + k*step (in an
 *                                                                     integer dtype start and step are
 *                                                                     integers and every value fits:
 *                                                                     exact, not rounded through double)
 *  RANDOM_UNIFORM  out[0]            i0 = seed, i1 = draw, f0 = low, f1 = high
 *  RANDOM_NORMAL   out[0]            i0 = seed, i1 = draw, f0 = mean, f1 = stddev
 *  COPY            in[0] -> out[0]   same shape, any strides, dtype conversion allowed (cast)
 *  UNARY           in[0] -> out[0]   i0 = braid_unary_op; same shape
 *  BINARY          in[0], in[1]      i0 = braid_binary_op; inputs carry the output shape with
 *                  -> out[0]         stride 0 on broadcast axes
 *  BINARY_SCALAR   in[0] -> out[0]   i0 = braid_binary_op, i1 = reverse, f0 = scalar
 *  REDUCE          in[0] -> out[0]   i0 = braid_reduce_op, i1 = bitmask of reduced axes; out has
 *                                    in's ndim with size 1 on reduced axes
 *  ARGMAX          in[0] -> out[0]   i0 = axis; out int64, in's ndim with size 1 on axis
 *  MATMUL          in[0] a [B,M,K] or [B,K,M] (trans), in[1] b [B,K,N] or [B,N,K] (trans)
 *                  -> out[0] [B,M,N] i0 = trans_a, i1 = trans_b; batch stride 0 = broadcast. a, b
 *                  and out of one float dtype, or (Since 1.7) a and b both bfloat16 or both float16
 *                  with out float32, accumulated in float32 (autocast); the op's dtype is a's
 *  CONV2D          in[0] x NCHW, in[1] w KCRS, in[2] bias K (optional: num_inputs 2 or 3)
 *                  -> out[0] NKPQ    i0,i1 = stride h,w; i2,i3 = padding h,w
 *  POOL2D          in[0] NCHW -> out[0]  i0 = braid_pool_kind, i1,i2 = kernel, i3,i4 = stride,
 *                                    i5,i6 = padding (max ignores padded cells, avg excludes them)
 *  BATCH_NORM      in: x, gamma, beta, running_mean, running_var; out: y, save_mean, save_invstd
 *                  f0 = eps, f1 = momentum, i0 = training. Channel axis 1. In training the kernel
 *                  also updates in[3], in[4] in place (unbiased variance); otherwise it uses them and
 *                  writes them to save_mean and 1/sqrt(var+eps) to save_invstd.
 *  SOFTMAX         in[0] -> out[0]   i0 = axis (non-negative), i1 = log
 *  SOFTMAX_CE      in[0] logits [N,K], in[1] labels [N] int32/int64 -> out[0] loss [N]
 *                                    a label outside [0,K) fails with BRAID_ERR_KERNEL
 *  DROPOUT         in[0] -> out[0] y, out[1] mask   f0 = p, i0 = seed, i1 = draw
 *  SGD_UPDATE      in: w, g; out: w (the same view as in[0])            f0 = lr, f1 = wd
 *  SGD_MOMENTUM    in: w, g, mom; out: w, mom (same views as in[0], in[2])  f0 = lr, f1 = momentum, f2 = wd
 *  ADAM_UPDATE     in: w, g, m, v; out: w, m, v (same views)   f0..f4 = lr, beta1, beta2, eps, wd; i0 = step
 *
 * Backward kernels (Since 1.1), for the gradients that are not compositions of other ops. Each writes
 * (never accumulates into) its outputs; float32 and float64.
 *  CONV2D_BWD_DATA   in[0] dy NKPQ, in[1] w KCRS -> out[0] dx NCHW      i0..i3 as CONV2D
 *  CONV2D_BWD_WEIGHT in[0] dy NKPQ, in[1] x NCHW -> out[0] dw KCRS      i0..i3 as CONV2D
 *                    (the bias gradient is a REDUCE sum of dy over N, P, Q)
 *  POOL2D_BWD        in[0] dy NCPQ, in[1] x NCHW -> out[0] dx NCHW      attributes as POOL2D. Max sends
 *                    each window's gradient to the window's first maximum (row-major within the
 *                    window, padded cells ignored); avg spreads it evenly over the window's
 *                    non-padded cells. Overlapping windows add up.
 *  BATCH_NORM_BWD    in: dy, x, gamma, save_mean, save_invstd; out: dx, dgamma, dbeta (channel axis 1)
 *                    i0 = training: with 1 the gradient flows through the batch statistics
 *                    (save_* are the batch's); with 0 they are constants (dx = dy * gamma * invstd).
 *  SOFTMAX_CE_BWD    in[0] logits [N,K], in[1] labels [N], in[2] dloss [N] -> out[0] dlogits [N,K]
 *                    = (softmax(logits) - onehot(label)) * dloss[n]; a bad label fails as SOFTMAX_CE
 *
 * Collective kernel (Since 1.2); optional: the host uses it only where supports() says so.
 *  COMBINE           in[0..k) -> out[0..m), all the same shape, dtype and element count, contiguous.
 *                    i0 = braid_binary_op (ADD, MUL, MAXIMUM, MINIMUM), i1 = average: with 1 the
 *                    result is divided by f0 (floats only). Every output receives
 *                    in[0] op in[1] op ... in[k-1], combined left to right. An output may be exactly
 *                    one of the inputs (in place): an element's inputs are all read before any output
 *                    is written. A collective reduces and broadcasts a slice in one pass with it.
 *
 * Fused elementwise kernel (Since 1.3); optional: the host uses it only where supports() says so
 * (graph mode fuses chains of elementwise kernels into one).
 *  FUSED_ELEMENTWISE in[0..k) -> out[0], all float32 or all float64; inputs carry out's shape (stride 0
 *                    on broadcast axes). i0 = n, the number of instructions (1..BRAID_FUSED_MAX_INSTRS);
 *                    instruction j is bits [21*(j%3), 21*(j%3)+21) of i[1 + j/3]: kind (bits 0-1:
 *                    0 = unary op(a), 1 = binary a op b, 2 = a op f[b], 3 = f[b] op a), op (bits 2-5: a
 *                    braid_unary_op or braid_binary_op), a (bits 6-11), b (bits 12-17). Registers 0..k-1
 *                    hold the inputs' elements, register k+j instruction j's result; an instruction reads
 *                    only registers below k+j. out = the last instruction's result. Every instruction
 *                    computes as UNARY, BINARY or BINARY_SCALAR would in the dtype (transcendental ops
 *                    to the last bit), so the result is the chain's without its intermediates in memory.
 *
 * Select kernel (Since 1.5); optional: the host uses it only where supports() says so.
 *  WHERE             in[0] cond, in[1] a, in[2] b -> out[0], all of one dtype (the one supports() is
 *                    asked for), each carrying out's shape (stride 0 on broadcast axes):
 *                    out = cond != 0 ? a : b, element by element; a NaN cond is nonzero. a and b are
 *                    copied, never computed with, so an infinite or NaN element that is not selected
 *                    never reaches out (autograd's masked gradients rely on it).
 *
 * Indexing kernels (Since 1.6); optional: the host uses them only where supports() says so (asked for
 * x's dtype, or dy's). x, dy and out are contiguous, viewed as 3-D [outer, n or m, inner]; index is
 * 1-D [m], int32 or int64; an index value i < 0 means i + n (Python's), and one outside [-n, n) fails
 * the op (BRAID_ERR_KERNEL, "an index is out of range") instead of reading outside x.
 *  TAKE              in[0] x [outer, n, inner], in[1] index [m] -> out[0] [outer, m, inner]:
 *                    out[o, j, k] = x[o, index[j], k] (the bits copied: any dtype the plugin lists).
 *  TAKE_BWD          in[0] dy [outer, m, inner], in[1] index [m] -> out[0] dx [outer, n, inner], floats:
 *                    dx[o, r, k] = the sum over j in increasing order of dy[o, j, k] where index[j] is r
 *                    (0 where none is): every element of dx is written, and the result is the same on
 *                    every run (no atomics).
 *
 * Counter-based RNG (every backend must produce the same bits): Philox-4x32-10 with key
 * (seed & 0xffffffff, seed >> 32) and counter (j & 0xffffffff, j >> 32, draw & 0xffffffff, draw >> 32)
 * gives four 32-bit words per block j. u(w) = (w + 0.5) * 2^-32 lies in (0, 1).
 *  - uniform element i: block j = i / 4, word i % 4; value = low + (high - low) * u.
 *  - normal element i: block j = i / 2, words 0 and 1 (u1, u2); r = sqrt(-2 ln u1);
 *    value = mean + stddev * (i even ? r cos(2 pi u2) : r sin(2 pi u2)).
 *  - dropout element i: uniform u of element i (as above); keep when u >= p.
 * Computed in double, then rounded to the output dtype.
 */
typedef enum braid_kernel_op {
  BRAID_KOP_FILL = 0,
  BRAID_KOP_ARANGE,
  BRAID_KOP_RANDOM_UNIFORM,
  BRAID_KOP_RANDOM_NORMAL,
  BRAID_KOP_COPY,
  BRAID_KOP_UNARY,
  BRAID_KOP_BINARY,
  BRAID_KOP_BINARY_SCALAR,
  BRAID_KOP_REDUCE,
  BRAID_KOP_ARGMAX,
  BRAID_KOP_MATMUL,
  BRAID_KOP_CONV2D,
  BRAID_KOP_POOL2D,
  BRAID_KOP_BATCH_NORM,
  BRAID_KOP_SOFTMAX,
  BRAID_KOP_SOFTMAX_CE,
  BRAID_KOP_DROPOUT,
  BRAID_KOP_SGD_UPDATE,
  BRAID_KOP_SGD_MOMENTUM,
  BRAID_KOP_ADAM_UPDATE,
  /* ABI 1.1 */
  BRAID_KOP_CONV2D_BWD_DATA,
  BRAID_KOP_CONV2D_BWD_WEIGHT,
  BRAID_KOP_POOL2D_BWD,
  BRAID_KOP_BATCH_NORM_BWD,
  BRAID_KOP_SOFTMAX_CE_BWD,
  /* ABI 1.2 */
  BRAID_KOP_COMBINE,
  /* ABI 1.3 */
  BRAID_KOP_FUSED_ELEMENTWISE,
  /* ABI 1.5 */
  BRAID_KOP_WHERE,
  /* ABI 1.6 */
  BRAID_KOP_TAKE,
  BRAID_KOP_TAKE_BWD,
  BRAID_KOP_COUNT
} braid_kernel_op;

/* A typed view of a buffer: element strides (may be 0 for broadcast), byte offset of element 0. */
typedef struct braid_buffer_view {
  braid_backend_buffer buffer;
  uint64_t byte_offset;
  braid_dtype dtype;
  int32_t ndim;
  int64_t shape[BRAID_MAX_DIMS];
  int64_t strides[BRAID_MAX_DIMS];
} braid_buffer_view;

#define BRAID_KERNEL_MAX_INPUTS 6
#define BRAID_KERNEL_MAX_OUTPUTS 4
#define BRAID_FUSED_MAX_INSTRS 21 /* FUSED_ELEMENTWISE: 3 instructions in each of i[1..7] */

typedef struct braid_kernel_call {
  uint32_t struct_size;
  braid_kernel_op op;
  int32_t num_inputs;
  int32_t num_outputs;
  braid_buffer_view inputs[BRAID_KERNEL_MAX_INPUTS];
  braid_buffer_view outputs[BRAID_KERNEL_MAX_OUTPUTS];
  int64_t i[8];
  double f[8];
} braid_kernel_call;

/* A contiguous copy of bytes. Exactly one of (src_buffer, src_host) and one of (dst_buffer, dst_host)
 * is set. Host pointers stay valid until the submission ends. src and dst buffers may belong to two
 * devices of the same backend. */
typedef struct braid_copy_desc {
  uint32_t struct_size;
  braid_backend_buffer src_buffer;
  uint64_t src_offset;
  const void* src_host;
  braid_backend_buffer dst_buffer;
  uint64_t dst_offset;
  void* dst_host;
  uint64_t bytes;
} braid_copy_desc;

/* KERNELS (Since 1.3): a sequence of kernel calls run in order as one submission (a graph's segment).
 * Each call sees the writes of the calls before it (GPU backends put a barrier between calls that
 * need one). The submission waits, asks work_begin and signals once; if a call fails, the calls after
 * it are skipped and work_end reports that call's status, its message naming the call's index and op.
 * The host submits it only to a plugin whose abi_minor is at least 3. */
typedef enum braid_work_kind {
  BRAID_WORK_KERNEL = 0,
  BRAID_WORK_COPY = 1,
  BRAID_WORK_MARKER = 2,
  BRAID_WORK_KERNELS = 3
} braid_work_kind;

#define BRAID_MAX_WAITS 16

/* One submission to a queue. MARKER does nothing but wait and signal. */
/* One submission. kernel and copy are read during queue_submit only, unless flags has
 * BRAID_WORK_PERSISTENT_DESCS. */
typedef struct braid_work {
  uint32_t struct_size;
  braid_work_kind kind;
  const braid_kernel_call* kernel; /* KERNEL */
  const braid_copy_desc* copy;     /* COPY */
  uint32_t num_waits;              /* semaphores of this backend to wait for before starting */
  braid_backend_semaphore waits[BRAID_MAX_WAITS];
  uint64_t wait_values[BRAID_MAX_WAITS];
  braid_backend_semaphore signal; /* signalled to signal_value when the work ends; may be NULL */
  uint64_t signal_value;
  void* token;    /* passed to host->work_begin/work_end; NULL = no callbacks */
  uint32_t flags; /* BRAID_WORK_* flags below */
  /* ---- ABI 1.3 ---- */
  uint32_t num_kernels;             /* KERNELS: the number of calls (at least 1) */
  const braid_kernel_call* kernels; /* KERNELS: the calls, in order (persistent like kernel) */
} braid_work;

/* The kernel call(s) and copy desc stay valid and unchanged until work_end returns (set by the host
 * only with a token). A backend may then keep the pointers instead of copying the descs. */
#define BRAID_WORK_PERSISTENT_DESCS 1u

typedef enum braid_queue_kind { BRAID_QUEUE_COMPUTE = 0, BRAID_QUEUE_TRANSFER = 1 } braid_queue_kind;
/* braid_log_level is in braid.h (Since 1.5, the application can receive the log too). */

/* ---- what the host gives the plugin ----------------------------------------------------------- */
typedef struct braid_host_api {
  uint32_t struct_size;
  uint32_t abi_major, abi_minor;
  void (*log)(braid_log_level level, const char* message);
  /* Called on the backend's thread right before a submission with a token starts (after its waits).
   * Returns non-zero to run it, 0 to skip it (an input failed earlier); a skipped submission still
   * calls work_end (with the status the host gave) and signals. Backends that cannot ask before
   * starting (GPU launches) may not call it; the host then resolves failures in work_end. */
  int32_t (*work_begin)(void* token);
  /* Called once per submission with a token when it has ended, before its semaphore is signalled.
   * message may be NULL when status is BRAID_OK; the host copies it. */
  void (*work_end)(void* token, braid_status status, const char* message);
} braid_host_api;

/* ---- what the plugin gives the host ----------------------------------------------------------- */
typedef struct braid_backend_device_props {
  uint32_t struct_size;
  char name[128];
  braid_device_kind kind;
  uint8_t uuid[16];
  uint64_t memory_bytes;
  int32_t compute_units;
  int32_t compute_queues;
  int32_t transfer_queues;
  uint64_t l1_cache_bytes, l2_cache_bytes, l3_cache_bytes;
  uint32_t dtype_mask;
  uint32_t host_visible; /* buffers are plain host memory (buffer_host_pointer works) */
} braid_backend_device_props;

typedef struct braid_backend_api {
  uint32_t struct_size;
  uint32_t abi_major, abi_minor;
  const char* name; /* "cpu", "vulkan", "cuda" */

  /* Devices. device_count sets *reason (static string, may be "") when it reports zero. Required. */
  braid_status (*device_count)(int32_t* out, const char** reason);
  braid_status (*device_props)(int32_t index, braid_backend_device_props* out); /* required */
  braid_status (*device_open)(int32_t index, braid_backend_device* out);        /* required */
  /* Waits for the device's queues to drain, joins its threads, frees everything it owns. Required. */
  void (*device_close)(braid_backend_device device);

  /* Memory. */
  /* Required. */
  braid_status (*buffer_alloc)(braid_backend_device device, uint64_t bytes, braid_backend_buffer* out);
  void (*buffer_free)(braid_backend_device device, braid_backend_buffer buffer); /* required */
  /* Host address of a host-visible buffer, NULL otherwise. Optional (Since 1.4): NULL = no buffer is
   * host visible (the host copies through queue_submit); props.host_visible must then be 0. */
  void* (*buffer_host_pointer)(braid_backend_buffer buffer);

  /* Queues. */
  /* Required. */
  braid_status (*queue_create)(braid_backend_device device, braid_queue_kind kind, braid_backend_queue* out);
  void (*queue_destroy)(braid_backend_queue queue); /* required */
  /* Enqueues work; returns at once (errors here are synchronous: the work was not enqueued). Required. */
  braid_status (*queue_submit)(braid_backend_queue queue, const braid_work* work);
  /* Hint: start recorded work now (backends that batch submissions). Optional (Since 1.4): NULL = the
   * backend starts work as it is submitted, so there is nothing to flush (the host's default returns
   * BRAID_OK). */
  braid_status (*queue_flush)(braid_backend_queue queue);

  /* Timeline semaphores. All required: the host orders every submission with them. */
  braid_status (*semaphore_create)(braid_backend_device device, uint64_t initial, braid_backend_semaphore* out);
  void (*semaphore_destroy)(braid_backend_semaphore sem);
  /* Current value; returns the failure status if the semaphore was failed. */
  braid_status (*semaphore_query)(braid_backend_semaphore sem, uint64_t* value);
  braid_status (*semaphore_signal)(braid_backend_semaphore sem, uint64_t value);
  /* Blocks (without spinning) until value is reached, the semaphore fails, or timeout_ns passes. */
  braid_status (*semaphore_wait)(braid_backend_semaphore sem, uint64_t value, uint64_t timeout_ns);
  /* Calls fn once, from any thread (possibly inside this call), when value is reached or the
   * semaphore fails. This is how the host orders work across backends without a busy loop. Required:
   * a host default would be a thread blocked in semaphore_wait, which nothing could wake when the
   * semaphore is destroyed first. */
  braid_status (*semaphore_notify)(braid_backend_semaphore sem, uint64_t value,
                                   void (*fn)(void* user, braid_status status), void* user);
  /* Puts the semaphore into a failed state: waits and notifies return status. Required: only the
   * backend can fail its own waiters (signalling instead would lose the status). */
  void (*semaphore_fail)(braid_backend_semaphore sem, braid_status status);

  /* Non-zero if the backend has a kernel for op with this (first input or output) dtype. The answer
   * must not change while the backend is loaded: the host asks once per pair and remembers it.
   * Required. */
  int32_t (*supports)(braid_kernel_op op, braid_dtype dtype);
  /* Balances one query: the last one releases vendor libraries. All devices must be closed.
   * Optional (Since 1.4): NULL = the plugin holds nothing between queries. */
  void (*shutdown)(void);

  /* ---- ABI 1.1 ---- */
  /* Backend-specific properties of device index as one JSON object (for a GPU: memory heaps, subgroup
   * size, queue families, limits...), or NULL when there are none. The string is owned by the plugin
   * and stays valid until shutdown. Optional: NULL = no such properties (the host reports "{}"). */
  const char* (*device_props_json)(int32_t index);

  /* ---- ABI 1.4 ---- */
  /* Since 1.4. Non-zero if the backend runs this whole call on device (op, every operand's dtype,
   * shape and strides, the i[]/f[] attributes: e.g. which UNARY/BINARY ops take integers). The host
   * asks it for every kernel call it is about to push, after supports(op, dtype) said yes and after
   * validating the call; it must not touch the memory of the call's buffers. A refusal fails the op
   * at once with BRAID_ERR_UNSUPPORTED. The answer may depend on anything in the call, so the host
   * does not remember it: keep it cheap (no allocation, no lock). Thread-safe.
   * Optional: NULL = every call whose (op, dtype) supports() accepts. */
  int32_t (*supports_call)(braid_backend_device device, const braid_kernel_call* call);
  /* Since 1.4. The extension function named `name` ("braid_ext_<vendor>_<name>", see the top of this
   * file), or NULL when the plugin has none of that name. Thread-safe; the pointer stays valid until
   * shutdown. Optional: NULL = no extensions. */
  void* (*get_proc_address)(const char* name);

  /* ---- ABI 1.7 ---- */
  /* Since 1.7. A buffer over `bytes` of host memory at `data` that the backend does not own (a tensor
   * another library made, imported through DLPack): kernels and copies use it as any buffer of the
   * device; buffer_free releases the handle, never the memory. Only for host-visible devices; data may
   * have any alignment. Optional: NULL = the backend cannot use memory it did not allocate (the host
   * then refuses such an import with BRAID_ERR_UNSUPPORTED). */
  braid_status (*buffer_import_host)(braid_backend_device device, void* data, uint64_t bytes,
                                     braid_backend_buffer* out);
} braid_backend_api;

typedef braid_status (*braid_backend_query_fn)(uint32_t host_major, uint32_t host_minor, const braid_host_api* host,
                                               const braid_backend_api** out);

#ifdef __cplusplus
} /* extern "C" */
#endif
#endif /* BRAID_BACKEND_H_ */
