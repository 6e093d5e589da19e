/* fake_backend.c — see fake_backend.h. Plain C11 + POSIX threads. */
#define _POSIX_C_SOURCE 200809L

#include "fake_backend.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const braid_host_api* fake_host = NULL;

static _Atomic int64_t g_counters[FAKE_COUNTER_COUNT];
static const char* g_name = "fake";
static int32_t g_device_count = 1;

void fake_count(enum fake_counter counter, int64_t delta) { atomic_fetch_add(&g_counters[counter], delta); }

FAKE_EXPORT void braid_fake_counters(int64_t* out, int32_t count) {
  for (int32_t i = 0; i < count && i < FAKE_COUNTER_COUNT; ++i) out[i] = atomic_load(&g_counters[i]);
}

void fake_set_device_count(int32_t count) { g_device_count = count; }

static void host_log(braid_log_level level, const char* message) {
  if (fake_host && fake_host->struct_size >= offsetof(braid_host_api, log) + sizeof(fake_host->log) && fake_host->log)
    fake_host->log(level, message);
}

/* ---- objects ------------------------------------------------------------------------------------ */
struct braid_backend_device_t {
  int32_t index;
};

struct braid_backend_buffer_t {
  void* data;
  uint64_t bytes;
};

struct braid_backend_queue_t {
  struct braid_backend_device_t* device;
  braid_queue_kind kind;
  pthread_mutex_t mu; /* submissions of one queue run one at a time, in order */
};

typedef struct fake_notify {
  uint64_t value;
  void (*fn)(void* user, braid_status status);
  void* user;
  struct fake_notify* next;
} fake_notify;

struct braid_backend_semaphore_t {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  uint64_t value;
  braid_status failed;
  fake_notify* pending;
};

/* ---- devices ------------------------------------------------------------------------------------ */
braid_status fake_device_count(int32_t* out, const char** reason) {
  fake_count(FAKE_DEVICE_COUNT_CALLS, 1);
  if (!out) return BRAID_ERR_INVALID_ARGUMENT;
  *out = g_device_count;
  if (reason) *reason = g_device_count > 0 ? "" : "the fake backend was configured with no devices";
  return BRAID_OK;
}

static braid_status fake_device_props(int32_t index, braid_backend_device_props* out) {
  if (!out || index < 0 || index >= g_device_count) return BRAID_ERR_INVALID_ARGUMENT;
  braid_backend_device_props p;
  memset(&p, 0, sizeof p);
  snprintf(p.name, sizeof p.name, "braid fake device %d (%s)", (int)index, g_name);
  p.kind = BRAID_DEVICE_OTHER;
  for (int i = 0; i < 16; ++i) p.uuid[i] = (uint8_t)(0xB0 + i);
  p.memory_bytes = 1ull << 30;
  p.compute_units = 3;
  p.compute_queues = 1;
  p.transfer_queues = 1;
  p.l1_cache_bytes = 32 * 1024;
  p.l2_cache_bytes = 1024 * 1024;
  p.l3_cache_bytes = 0;
  p.dtype_mask = 0; /* no kernels */
  p.host_visible = 1;
  /* Write only what the host's struct covers (it may be older and smaller than ours). */
  uint32_t size = out->struct_size;
  if (size < sizeof(uint32_t) || size > sizeof p) size = sizeof p;
  p.struct_size = size;
  memcpy(out, &p, size);
  return BRAID_OK;
}

static braid_status fake_device_open(int32_t index, braid_backend_device* out) {
  if (!out || index < 0 || index >= g_device_count) return BRAID_ERR_INVALID_ARGUMENT;
  struct braid_backend_device_t* d = calloc(1, sizeof *d);
  if (!d) return BRAID_ERR_OUT_OF_MEMORY;
  d->index = index;
  *out = d;
  fake_count(FAKE_LIVE_DEVICES, 1);
  return BRAID_OK;
}

static void fake_device_close(braid_backend_device device) {
  if (!device) return;
  free(device);
  fake_count(FAKE_LIVE_DEVICES, -1);
}

/* ---- memory ------------------------------------------------------------------------------------- */
static braid_status fake_buffer_alloc(braid_backend_device device, uint64_t bytes, braid_backend_buffer* out) {
  if (!device || !out) return BRAID_ERR_INVALID_ARGUMENT;
  struct braid_backend_buffer_t* b = calloc(1, sizeof *b);
  if (!b) return BRAID_ERR_OUT_OF_MEMORY;
  uint64_t rounded = (bytes + 63) / 64 * 64;
  b->data = aligned_alloc(64, rounded ? rounded : 64);
  if (!b->data) {
    free(b);
    return BRAID_ERR_OUT_OF_MEMORY;
  }
  b->bytes = bytes;
  *out = b;
  fake_count(FAKE_LIVE_BUFFERS, 1);
  return BRAID_OK;
}

static void fake_buffer_free(braid_backend_device device, braid_backend_buffer buffer) {
  (void)device;
  if (!buffer) return;
  free(buffer->data);
  free(buffer);
  fake_count(FAKE_LIVE_BUFFERS, -1);
}

static void* fake_buffer_host_pointer(braid_backend_buffer buffer) { return buffer ? buffer->data : NULL; }

/* ---- semaphores --------------------------------------------------------------------------------- */
static braid_status fake_semaphore_create(braid_backend_device device, uint64_t initial, braid_backend_semaphore* out) {
  if (!device || !out) return BRAID_ERR_INVALID_ARGUMENT;
  struct braid_backend_semaphore_t* s = calloc(1, sizeof *s);
  if (!s) return BRAID_ERR_OUT_OF_MEMORY;
  pthread_condattr_t attr;
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->cv, &attr);
  pthread_condattr_destroy(&attr);
  s->value = initial;
  s->failed = BRAID_OK;
  *out = s;
  fake_count(FAKE_LIVE_SEMAPHORES, 1);
  return BRAID_OK;
}

static void fake_semaphore_destroy(braid_backend_semaphore sem) {
  if (!sem) return;
  fake_notify* n = sem->pending;
  while (n) { /* never fired: the host destroys timelines only once their work has ended */
    fake_notify* next = n->next;
    free(n);
    n = next;
  }
  pthread_cond_destroy(&sem->cv);
  pthread_mutex_destroy(&sem->mu);
  free(sem);
  fake_count(FAKE_LIVE_SEMAPHORES, -1);
}

static braid_status fake_semaphore_query(braid_backend_semaphore sem, uint64_t* value) {
  if (!sem || !value) return BRAID_ERR_INVALID_ARGUMENT;
  pthread_mutex_lock(&sem->mu);
  *value = sem->value;
  braid_status st = sem->failed;
  pthread_mutex_unlock(&sem->mu);
  return st;
}

/* Detaches the notifications that are due (all of them once failed); the caller fires them unlocked. */
static fake_notify* take_due_locked(braid_backend_semaphore sem) {
  fake_notify* due = NULL;
  fake_notify** link = &sem->pending;
  while (*link) {
    fake_notify* n = *link;
    if (sem->failed != BRAID_OK || n->value <= sem->value) {
      *link = n->next;
      n->next = due;
      due = n;
    } else {
      link = &n->next;
    }
  }
  return due;
}

static void fire(fake_notify* due, braid_status status) {
  while (due) {
    fake_notify* next = due->next;
    due->fn(due->user, status);
    free(due);
    due = next;
  }
}

static braid_status fake_semaphore_signal(braid_backend_semaphore sem, uint64_t value) {
  if (!sem) return BRAID_ERR_INVALID_ARGUMENT;
  pthread_mutex_lock(&sem->mu);
  if (value > sem->value) sem->value = value;
  braid_status status = sem->failed;
  fake_notify* due = take_due_locked(sem);
  pthread_cond_broadcast(&sem->cv);
  pthread_mutex_unlock(&sem->mu);
  fire(due, status);
  return BRAID_OK;
}

static braid_status fake_semaphore_wait(braid_backend_semaphore sem, uint64_t value, uint64_t timeout_ns) {
  if (!sem) return BRAID_ERR_INVALID_ARGUMENT;
  struct timespec deadline;
  clock_gettime(CLOCK_MONOTONIC, &deadline);
  if (timeout_ns != UINT64_MAX) {
    uint64_t ns = (uint64_t)deadline.tv_nsec + timeout_ns % 1000000000ull;
    deadline.tv_sec += (time_t)(timeout_ns / 1000000000ull + ns / 1000000000ull);
    deadline.tv_nsec = (long)(ns % 1000000000ull);
  }
  braid_status st = BRAID_OK;
  pthread_mutex_lock(&sem->mu);
  while (sem->failed == BRAID_OK && sem->value < value) {
    if (timeout_ns == UINT64_MAX) {
      pthread_cond_wait(&sem->cv, &sem->mu);
    } else if (pthread_cond_timedwait(&sem->cv, &sem->mu, &deadline) == ETIMEDOUT) {
      if (sem->failed == BRAID_OK && sem->value < value) st = BRAID_ERR_TIMEOUT;
      break;
    }
  }
  if (sem->failed != BRAID_OK) st = sem->failed;
  pthread_mutex_unlock(&sem->mu);
  return st;
}

static braid_status fake_semaphore_notify(braid_backend_semaphore sem, uint64_t value,
                                          void (*fn)(void* user, braid_status status), void* user) {
  if (!sem || !fn) return BRAID_ERR_INVALID_ARGUMENT;
  fake_notify* n = calloc(1, sizeof *n);
  if (!n) return BRAID_ERR_OUT_OF_MEMORY;
  n->value = value;
  n->fn = fn;
  n->user = user;
  pthread_mutex_lock(&sem->mu);
  n->next = sem->pending;
  sem->pending = n;
  braid_status status = sem->failed;
  fake_notify* due = take_due_locked(sem);
  pthread_mutex_unlock(&sem->mu);
  fire(due, status);
  return BRAID_OK;
}

static void fake_semaphore_fail(braid_backend_semaphore sem, braid_status status) {
  if (!sem) return;
  pthread_mutex_lock(&sem->mu);
  sem->failed = status == BRAID_OK ? BRAID_ERR_DEVICE : status;
  fake_notify* due = take_due_locked(sem);
  pthread_cond_broadcast(&sem->cv);
  pthread_mutex_unlock(&sem->mu);
  fire(due, status);
}

/* ---- queues ------------------------------------------------------------------------------------- */
static braid_status fake_queue_create(braid_backend_device device, braid_queue_kind kind, braid_backend_queue* out) {
  if (!device || !out) return BRAID_ERR_INVALID_ARGUMENT;
  struct braid_backend_queue_t* q = calloc(1, sizeof *q);
  if (!q) return BRAID_ERR_OUT_OF_MEMORY;
  q->device = device;
  q->kind = kind;
  pthread_mutex_init(&q->mu, NULL);
  *out = q;
  fake_count(FAKE_LIVE_QUEUES, 1);
  return BRAID_OK;
}

static void fake_queue_destroy(braid_backend_queue queue) {
  if (!queue) return;
  pthread_mutex_destroy(&queue->mu); /* nothing can be in flight: submissions run inline */
  free(queue);
  fake_count(FAKE_LIVE_QUEUES, -1);
}

static braid_status run_copy(const braid_copy_desc* c) {
  if (!c) return BRAID_ERR_INVALID_ARGUMENT;
  const char* src = c->src_buffer ? (const char*)c->src_buffer->data + c->src_offset : (const char*)c->src_host;
  char* dst = c->dst_buffer ? (char*)c->dst_buffer->data + c->dst_offset : (char*)c->dst_host;
  if (c->bytes == 0) return BRAID_OK;
  if (!src || !dst) return BRAID_ERR_INVALID_ARGUMENT;
  if (c->src_buffer && c->src_offset + c->bytes > c->src_buffer->bytes) return BRAID_ERR_INVALID_ARGUMENT;
  if (c->dst_buffer && c->dst_offset + c->bytes > c->dst_buffer->bytes) return BRAID_ERR_INVALID_ARGUMENT;
  memmove(dst, src, c->bytes);
  return BRAID_OK;
}

static braid_status fake_queue_submit(braid_backend_queue queue, const braid_work* work) {
  if (!queue || !work || work->num_waits > BRAID_MAX_WAITS) return BRAID_ERR_INVALID_ARGUMENT;
  if (work->kind != BRAID_WORK_KERNEL && work->kind != BRAID_WORK_COPY && work->kind != BRAID_WORK_MARKER &&
      work->kind != BRAID_WORK_KERNELS)
    return BRAID_ERR_INVALID_ARGUMENT;
  /* Everything the work struct says is read now: the host may reuse it once the work has ended. */
  braid_backend_semaphore signal = work->signal;
  uint64_t signal_value = work->signal_value;
  void* token = work->token;
  fake_count(FAKE_SUBMISSIONS, 1);

  pthread_mutex_lock(&queue->mu);
  braid_status st = BRAID_OK;
  for (uint32_t i = 0; i < work->num_waits && st == BRAID_OK; ++i)
    st = fake_semaphore_wait(work->waits[i], work->wait_values[i], UINT64_MAX);
  const char* message = NULL;
  int run = 1;
  if (token && fake_host) run = fake_host->work_begin(token) != 0;
  if (run && st == BRAID_OK) {
    switch (work->kind) {
      case BRAID_WORK_KERNEL:
      case BRAID_WORK_KERNELS:
        /* supports() said no to everything: the host must never send a kernel. */
        fake_count(FAKE_UNEXPECTED_CALLS, 1);
        st = BRAID_ERR_UNSUPPORTED;
        message = "the fake backend has no kernels";
        break;
      case BRAID_WORK_COPY: st = run_copy(work->copy); break;
      case BRAID_WORK_MARKER: break;
    }
  }
  if (token && fake_host) fake_host->work_end(token, st, message);
  pthread_mutex_unlock(&queue->mu);
  /* A failure is reported through work_end; the timeline still advances (queue order is kept). */
  if (signal) fake_semaphore_signal(signal, signal_value);
  return BRAID_OK;
}

static braid_status fake_queue_flush(braid_backend_queue queue) {
  return queue ? BRAID_OK : BRAID_ERR_INVALID_ARGUMENT;
}

/* ---- the rest ----------------------------------------------------------------------------------- */
static int32_t fake_supports(braid_kernel_op op, braid_dtype dtype) {
  (void)op;
  (void)dtype;
  return 0;
}

void fake_shutdown(void) {
  fake_count(FAKE_SHUTDOWNS, 1);
  host_log(BRAID_LOG_DEBUG, "fake backend: shutdown");
}

braid_status fake_query_common(uint32_t host_major, const braid_host_api* host, const braid_backend_api** out) {
  if (!out) return BRAID_ERR_INVALID_ARGUMENT;
  *out = NULL;
  if (host_major != BRAID_BACKEND_ABI_MAJOR) return BRAID_ERR_ABI_MISMATCH;
  /* work_end is the last field this plugin uses: an older host without it cannot drive us. */
  if (!host || host->struct_size < offsetof(braid_host_api, work_end) + sizeof(host->work_end) || !host->work_begin ||
      !host->work_end)
    return BRAID_ERR_INVALID_ARGUMENT;
  fake_host = host;
  fake_count(FAKE_QUERIES, 1);
  return BRAID_OK;
}

static const char* fake_device_props_json(int32_t index) {
  return index == 0 ? "{\"fake_heaps\":[{\"bytes\":1073741824}],\"fake_subgroup\":7}" : NULL;
}

void fake_backend_fill(braid_backend_api* api, const char* name) {
  g_name = name;
  /* Designated: an entry left out would be visible here. The 1.4 entries (supports_call,
   * get_proc_address) are left NULL: the plugins that test them set them. */
  const braid_backend_api table = {
      .struct_size = sizeof *api,
      .abi_major = BRAID_BACKEND_ABI_MAJOR,
      .abi_minor = BRAID_BACKEND_ABI_MINOR,
      .name = name,
      .device_count = fake_device_count,
      .device_props = fake_device_props,
      .device_open = fake_device_open,
      .device_close = fake_device_close,
      .buffer_alloc = fake_buffer_alloc,
      .buffer_free = fake_buffer_free,
      .buffer_host_pointer = fake_buffer_host_pointer,
      .queue_create = fake_queue_create,
      .queue_destroy = fake_queue_destroy,
      .queue_submit = fake_queue_submit,
      .queue_flush = fake_queue_flush,
      .semaphore_create = fake_semaphore_create,
      .semaphore_destroy = fake_semaphore_destroy,
      .semaphore_query = fake_semaphore_query,
      .semaphore_signal = fake_semaphore_signal,
      .semaphore_wait = fake_semaphore_wait,
      .semaphore_notify = fake_semaphore_notify,
      .semaphore_fail = fake_semaphore_fail,
      .supports = fake_supports,
      .shutdown = fake_shutdown,
      .device_props_json = fake_device_props_json, /* ABI 1.1 */
      .supports_call = NULL,                       /* ABI 1.4 */
      .get_proc_address = NULL,                    /* ABI 1.4 */
  };
  *api = table;
}
