/* braid_comm.h — the communication plugin ABI: collectives across processes (and hosts).
 *
 * A communication plugin wraps an existing library (Gloo over TCP for host memory; NCCL for CUDA
 * memory; MPI) so that libbraid can reduce tensors across the processes of a job. It is a shared
 * library named libbraid-comm-<name>.so, found next to libbraid and then in BRAID_BACKEND_PATH, that
 * exports one symbol:
 *
 *   braid_status braid_comm_query(uint32_t host_major, uint32_t host_minor,
 *                                 const braid_comm_host_api* host, const braid_comm_api** out);
 *
 * It grows like braid_backend.h: every table and struct starts with struct_size, fields are only
 * appended, the majors must match and a newer minor on either side still works (each side reads only
 * what the other's struct_size covers). Query has no side effects; a plugin whose library is missing
 * still loads and says why through `available`.
 *
 * Model. A group is a set of `size` processes, each with its rank, joined once through a key-value
 * store the host provides (braid's rendezvous store: addresses, unique ids). Tensor traffic never goes
 * through that store: only through the plugin's library. The host runs one call of a group at a time,
 * in the same order on every rank (it checks that the ranks agree before each call), from a thread of
 * its own; a plugin for device memory may enqueue on `stream` and return before the transfer ends.
 *
 * Failure. Every call and the group's creation end within the timeout they are given: a peer that
 * died or stalls makes the call fail with BRAID_ERR_TIMEOUT or BRAID_ERR_IO, never hang. After a
 * failed call the group is unusable (the plugin may leave its connections in any state); the host
 * destroys it, which must close the connections so that the peers' calls fail at once too.
 *
 * Growth: 1.1 appended braid_comm_group_desc.device, braid_comm_call.flags and braid_comm_api.features
 * (each side reads them only where the other's struct_size covers them, and takes the 1.0 sizes).
 *
 * Plugins include this header and braid.h (for the shared enums), nothing else of braid.
 */
#ifndef BRAID_COMM_H_
#define BRAID_COMM_H_

#include "braid.h"

#ifdef __cplusplus
extern "C" {
#endif

#define BRAID_COMM_ABI_MAJOR 1
#define BRAID_COMM_ABI_MINOR 1
#define BRAID_COMM_QUERY_SYMBOL "braid_comm_query"

typedef struct braid_comm_group_t* braid_comm_group;

/* ---- what the host gives the plugin ----------------------------------------------------------- */
typedef struct braid_comm_host_api {
  uint32_t struct_size;
  uint32_t abi_major, abi_minor;
  void (*log)(braid_log_level level, const char* message);
} braid_comm_host_api;

/* The job's rendezvous store, shared by every rank: set a key, or wait for one. Thread-safe. The
 * plugin uses it only inside group_create. */
typedef struct braid_comm_store {
  uint32_t struct_size;
  void* user;
  braid_status (*set)(void* user, const char* key, const void* value, uint64_t size);
  /* Waits until `key` is set (BRAID_ERR_TIMEOUT after timeout_ms), then copies at most `capacity`
   * bytes of its value into `value` and sets *size to the value's whole size. */
  braid_status (*get)(void* user, const char* key, void* value, uint64_t capacity, uint64_t* size, uint64_t timeout_ms);
} braid_comm_store;

typedef struct braid_comm_group_desc {
  uint32_t struct_size;
  int32_t rank; /* 0 <= rank < size */
  int32_t size;
  const braid_comm_store* store;
  const char* prefix;  /* this group's key prefix in the store (distinct per group and per restart) */
  uint64_t timeout_ms; /* connecting, and the default of every call */
  const char* address; /* host name or address this rank's transport listens on; "" = the plugin's choice */
  /* ---- ABI 1.1 ---- */
  int32_t device; /* plugins for device memory: the device the group runs on (CUDA: its ordinal); -1 for host */
} braid_comm_group_desc;

/* ---- one call ---------------------------------------------------------------------------------- */
typedef enum braid_comm_op {
  BRAID_COMM_ALLREDUCE = 0,      /* recv[i] = reduce over ranks of send[i] (send may be recv), count elements */
  BRAID_COMM_BROADCAST = 1,      /* recv (count elements) = root's recv */
  BRAID_COMM_REDUCE = 2,         /* root's recv = reduce over ranks of send; others' recv untouched */
  BRAID_COMM_ALL_GATHER = 3,     /* recv (size * count) = every rank's send (count), in rank order */
  BRAID_COMM_REDUCE_SCATTER = 4, /* recv (count) = part `rank` of the reduction of send (size * count) */
  BRAID_COMM_BARRIER = 5,        /* returns once every rank has entered it */
  BRAID_COMM_SEND = 6,           /* send (count elements) to rank `peer`, matched by `tag` */
  BRAID_COMM_RECV = 7,           /* recv (count elements) from rank `peer`, matched by `tag` */
  BRAID_COMM_OP_COUNT
} braid_comm_op;

typedef struct braid_comm_call {
  uint32_t struct_size;
  braid_comm_op op;
  const void* send; /* input (NULL for BROADCAST, BARRIER, RECV; may equal recv for ALLREDUCE) */
  void* recv;       /* output (NULL for BARRIER, SEND) */
  uint64_t count;   /* elements, as each op above says */
  braid_dtype dtype;
  braid_collective_op reduce; /* ALLREDUCE, REDUCE, REDUCE_SCATTER; AVG is not asked for (the host divides) */
  int32_t peer;               /* BROADCAST, REDUCE: the root; SEND, RECV: the other rank */
  uint64_t tag;               /* SEND, RECV */
  uint64_t timeout_ms;        /* this call's; 0 = the group's */
  void* stream;               /* plugins for device memory: the queue to enqueue on (NCCL: a cudaStream_t);
                                 NULL: the plugin's own, and run returns when the call has ended */
  /* ---- ABI 1.1 ---- */
  uint32_t flags; /* BRAID_COMM_CALL_* bits */
} braid_comm_call;

/* Since 1.1. send and recv are host memory even where the plugin's `memory` lacks BRAID_COMM_MEMORY_HOST:
 * a small control exchange (the host's check that the ranks make the same call) that a plugin for
 * device memory stages through its own device buffer. run returns when it has ended (stream unused). */
#define BRAID_COMM_CALL_HOST_MEMORY 1u
/* Since 1.1, for plugins with BRAID_COMM_FEATURE_KEYED_CALLS. A collective whose `tag` keys it: the
 * ranks' calls exchange data only when their tags are equal, and calls whose tags differ never meet
 * (each fails at its timeout). The host puts a hash of what the ranks must agree on there (call
 * number, op, dtype, count, root, reduction), so that ranks making different calls can never mix
 * their data, without an exchange before each call. */
#define BRAID_COMM_CALL_KEYED 2u

/* What a plugin can do beyond the 1.0 table (braid_comm_api.features; Since 1.1). */
#define BRAID_COMM_FEATURE_KEYED_CALLS 1u /* run honours BRAID_COMM_CALL_KEYED */

/* Where a plugin's buffers live. */
#define BRAID_COMM_MEMORY_HOST 1u /* plain host memory (Gloo, MPI) */
#define BRAID_COMM_MEMORY_CUDA 2u /* CUDA device memory (NCCL) */

/* ---- what the plugin gives the host ----------------------------------------------------------- */
typedef struct braid_comm_api {
  uint32_t struct_size;
  uint32_t abi_major, abi_minor;
  const char* name; /* "gloo", "nccl", "mpi" */
  uint32_t memory;  /* BRAID_COMM_MEMORY_* bits: the memory `send` and `recv` may point to */

  /* Whether the plugin can make groups here; if not, *reason (static) says why. Required. */
  int32_t (*available)(const char** reason);
  /* Joins the group: blocks until every rank has joined (or the timeout: BRAID_ERR_TIMEOUT). Required. */
  braid_status (*group_create)(const braid_comm_group_desc* desc, braid_comm_group* out);
  /* Closes the group's connections (peers' calls in progress fail) and frees it. No call of the group
   * may be running. Required. */
  void (*group_destroy)(braid_comm_group group);
  /* Non-zero if `run` takes this op with this dtype and reduction. Required. */
  int32_t (*supports)(braid_comm_op op, braid_dtype dtype, braid_collective_op reduce);
  /* Runs one call; for host memory it returns when the call has ended on this rank. Not thread-safe
   * per group (the host runs a group's calls one at a time); different groups may run at once.
   * Required. */
  braid_status (*run)(braid_comm_group group, const braid_comm_call* call);
  /* The message of this thread's last failed group_create or run (static or thread-local storage,
   * valid until the thread's next call). Required. */
  const char* (*last_error)(void);
  /* ---- ABI 1.1 ---- */
  uint32_t features; /* BRAID_COMM_FEATURE_* bits */
} braid_comm_api;

typedef braid_status (*braid_comm_query_fn)(uint32_t host_major, uint32_t host_minor, const braid_comm_host_api* host,
                                            const braid_comm_api** out);

#ifdef __cplusplus
} /* extern "C" */
#endif
#endif /* BRAID_COMM_H_ */
