// The Vulkan plugin's queues and semaphores, driven directly through its ABI (as the host's loader
// would): a dependency between its two queues is waited for on the device when the producer's batch is
// already submitted, a semaphore only the host signals holds the submission back on the host, and a
// failed producer fails its device-side dependants (never hangs, never reports success).
//
// The observable for "waited on the device" is the queue's own count, which it logs (DEBUG) when it is
// destroyed: "N batches, D device-side waits, H submissions held on the host". The producer's work_end
// is held closed by the test (a gate), so the producer's semaphore cannot be reached on the host while
// the dependant is submitted: the dependant can only run early by a device-side wait, and must not
// report before its producer has. No timings: every check is an order of events.
//
// Skipped (visibly) without a Vulkan device.

#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <doctest/doctest.h>
#include "braid.h"
#include "braid_backend.h"

#include "bad_work.h"
#include "kernels_work.h"
#include "plugin_loader.h"

namespace {

std::mutex g_log_mu;
std::vector<std::string> g_log;
int g_log_errors = 0;  // BRAID_LOG_ERROR lines: validation-layer errors under BRAID_VULKAN_VALIDATION=1

void host_log(braid_log_level level, const char* message) {
  std::lock_guard lock(g_log_mu);
  g_log.emplace_back(message);
  if (level == BRAID_LOG_ERROR) ++g_log_errors;
}

// A submission's token: work_end records the status and then blocks until the test opens the gate.
struct Token {
  std::mutex mu;
  std::condition_variable cv;
  bool open = true;
  bool ended = false;
  int ends = 0;
  braid_status status = BRAID_OK;
  std::string message;
  void release() {
    std::lock_guard lock(mu);
    open = true;
    cv.notify_all();
  }
};

int32_t host_begin(void*) { return 1; }
void host_end(void* token, braid_status status, const char* message) {
  auto* t = static_cast<Token*>(token);
  std::unique_lock lock(t->mu);
  t->status = status;
  t->message = message != nullptr ? message : "";
  ++t->ends;
  t->ended = true;
  t->cv.wait(lock, [&] { return t->open; });
}
const braid_host_api kHost = {
    sizeof(braid_host_api), BRAID_BACKEND_ABI_MAJOR, BRAID_BACKEND_ABI_MINOR, host_log, host_begin, host_end};

struct Plugin : test::PluginLib {
  Plugin() : PluginLib(BRAID_VULKAN_PLUGIN, &kHost) {}
};

// Device 0 with a transfer and a compute queue, a semaphore for each, and helpers to submit work.
struct Rig {
  Plugin p;
  const braid_backend_api* api = nullptr;
  braid_backend_device dev = nullptr;
  braid_backend_queue transfer = nullptr, compute = nullptr;
  braid_backend_semaphore s_transfer = nullptr, s_compute = nullptr;
  std::vector<braid_backend_buffer> buffers;

  bool open() {
    REQUIRE_MESSAGE(p.lib() != nullptr, "cannot open the plugin: ", p.error());
    REQUIRE(p.api() != nullptr);
    api = p.api();
    int32_t n = 0;
    const char* reason = nullptr;
    REQUIRE(api->device_count(&n, &reason) == BRAID_OK);
    if (n == 0) {
      MESSAGE("skipped: no Vulkan device (" << (reason ? reason : "") << ")");
      return false;
    }
    REQUIRE(api->device_open(0, &dev) == BRAID_OK);
    REQUIRE(api->queue_create(dev, BRAID_QUEUE_TRANSFER, &transfer) == BRAID_OK);
    REQUIRE(api->queue_create(dev, BRAID_QUEUE_COMPUTE, &compute) == BRAID_OK);
    REQUIRE(api->semaphore_create(dev, 0, &s_transfer) == BRAID_OK);
    REQUIRE(api->semaphore_create(dev, 0, &s_compute) == BRAID_OK);
    return true;
  }
  ~Rig() {
    if (api == nullptr || dev == nullptr) return;
    destroy(compute);
    destroy(transfer);
    for (auto b : buffers) api->buffer_free(dev, b);
    if (s_transfer) api->semaphore_destroy(s_transfer);
    if (s_compute) api->semaphore_destroy(s_compute);
    api->device_close(dev);
    std::lock_guard lock(g_log_mu);
    CHECK_MESSAGE(g_log_errors == 0, "the plugin logged errors (validation?): ", g_log.empty() ? "" : g_log.back());
  }
  // Destroys a queue (it drains first) and returns the counts line it logged.
  std::string destroy(braid_backend_queue& q) {
    if (q == nullptr) return "";
    api->queue_destroy(q);
    q = nullptr;
    std::lock_guard lock(g_log_mu);
    for (auto it = g_log.rbegin(); it != g_log.rend(); ++it)
      if (it->find("queue done:") != std::string::npos) return *it;
    return "";
  }
  braid_backend_buffer buffer(uint64_t bytes) {
    braid_backend_buffer b = nullptr;
    REQUIRE(api->buffer_alloc(dev, bytes, &b) == BRAID_OK);
    buffers.push_back(b);
    return b;
  }
  uint64_t value(braid_backend_semaphore s) {
    uint64_t v = 0;
    api->semaphore_query(s, &v);
    return v;
  }
};

braid_work work_of(braid_work_kind kind, braid_backend_semaphore signal, uint64_t value, Token* token) {
  braid_work w{};
  w.struct_size = sizeof w;
  w.kind = kind;
  w.signal = signal;
  w.signal_value = value;
  w.token = token;
  return w;
}

void add_wait(braid_work& w, braid_backend_semaphore s, uint64_t value) {
  w.waits[w.num_waits] = s;
  w.wait_values[w.num_waits] = value;
  ++w.num_waits;
}

braid_copy_desc upload(const void* host, braid_backend_buffer dst, uint64_t bytes) {
  braid_copy_desc c{};
  c.struct_size = sizeof c;
  c.src_host = host;
  c.dst_buffer = dst;
  c.bytes = bytes;
  return c;
}

braid_copy_desc download(braid_backend_buffer src, void* host, uint64_t bytes) {
  braid_copy_desc c{};
  c.struct_size = sizeof c;
  c.src_buffer = src;
  c.dst_host = host;
  c.bytes = bytes;
  return c;
}

braid_buffer_view view(braid_backend_buffer b, int64_t n) {
  braid_buffer_view v{};
  v.buffer = b;
  v.dtype = BRAID_FLOAT32;
  v.ndim = 1;
  v.shape[0] = n;
  v.strides[0] = 1;
  return v;
}

// out = -in (UNARY NEG), n float32 elements.
braid_kernel_call negate(braid_backend_buffer in, braid_backend_buffer out, int64_t n) {
  braid_kernel_call k{};
  k.struct_size = sizeof k;
  k.op = BRAID_KOP_UNARY;
  k.num_inputs = 1;
  k.num_outputs = 1;
  k.inputs[0] = view(in, n);
  k.outputs[0] = view(out, n);
  k.i[0] = BRAID_UNARY_NEG;
  return k;
}

constexpr int64_t kN = 1 << 18;  // 1 MiB of float32
constexpr uint64_t kBytes = kN * sizeof(float);

}  // namespace

TEST_CASE("vulkan queues: transfer -> compute -> transfer waits on the device and gives the right data") {
  Rig r;
  if (!r.open()) return;
  std::vector<float> in(kN), out(kN, 0.0f);
  for (int64_t i = 0; i < kN; ++i) in[static_cast<size_t>(i)] = static_cast<float>(i % 1000) - 500.0f;
  braid_backend_buffer x = r.buffer(kBytes), y = r.buffer(kBytes);

  Token up;
  up.open = false;  // the upload's work_end blocks: its semaphore is not reached on the host meanwhile
  const braid_copy_desc c_up = upload(in.data(), x, kBytes);
  braid_work w1 = work_of(BRAID_WORK_COPY, r.s_transfer, 1, &up);
  w1.copy = &c_up;
  REQUIRE(r.api->queue_submit(r.transfer, &w1) == BRAID_OK);

  const braid_kernel_call k = negate(x, y, kN);
  braid_work w2 = work_of(BRAID_WORK_KERNEL, r.s_compute, 1, nullptr);
  w2.kernel = &k;
  add_wait(w2, r.s_transfer, 1);
  REQUIRE(r.api->queue_submit(r.compute, &w2) == BRAID_OK);

  const braid_copy_desc c_down = download(y, out.data(), kBytes);
  braid_work w3 = work_of(BRAID_WORK_COPY, r.s_transfer, 2, nullptr);
  w3.copy = &c_down;
  add_wait(w3, r.s_compute, 1);
  REQUIRE(r.api->queue_submit(r.transfer, &w3) == BRAID_OK);

  // The kernel may have run on the device already, but it reports only after its producer has.
  CHECK(r.value(r.s_compute) == 0);
  up.release();
  REQUIRE(r.api->semaphore_wait(r.s_transfer, 2, UINT64_MAX) == BRAID_OK);
  CHECK(r.value(r.s_compute) == 1);
  CHECK(up.status == BRAID_OK);
  int bad = 0;
  for (int64_t i = 0; i < kN; ++i) bad += out[static_cast<size_t>(i)] != -in[static_cast<size_t>(i)] ? 1 : 0;
  CHECK(bad == 0);

  // Both dependencies were waited for on the device; nothing was held back on the host.
  const std::string compute_line = r.destroy(r.compute);
  const std::string transfer_line = r.destroy(r.transfer);
  CHECK_MESSAGE(compute_line.find(" 1 device-side waits, 0 submissions held") != std::string::npos, compute_line);
  CHECK_MESSAGE(transfer_line.find(" 1 device-side waits, 0 submissions held") != std::string::npos, transfer_line);
}

TEST_CASE("vulkan queues: a semaphore the host signals holds the submission on the host") {
  Rig r;
  if (!r.open()) return;
  braid_backend_semaphore host_sem = nullptr;
  REQUIRE(r.api->semaphore_create(r.dev, 0, &host_sem) == BRAID_OK);
  braid_work w = work_of(BRAID_WORK_MARKER, r.s_compute, 1, nullptr);
  add_wait(w, host_sem, 1);
  REQUIRE(r.api->queue_submit(r.compute, &w) == BRAID_OK);
  CHECK(r.value(r.s_compute) == 0);
  REQUIRE(r.api->semaphore_signal(host_sem, 1) == BRAID_OK);
  CHECK(r.api->semaphore_wait(r.s_compute, 1, UINT64_MAX) == BRAID_OK);
  const std::string line = r.destroy(r.compute);
  CHECK_MESSAGE(line.find(" 0 device-side waits, 1 submissions held") != std::string::npos, line);
  r.api->semaphore_destroy(host_sem);
}

TEST_CASE("vulkan queues: a producer failing after its dependant was submitted with a device-side wait") {
  Rig r;
  if (!r.open()) return;
  std::vector<float> in(kN, 1.0f), out(kN, 0.0f);
  braid_backend_buffer x = r.buffer(kBytes), y = r.buffer(kBytes);

  Token up;
  up.open = false;
  const braid_copy_desc c_up = upload(in.data(), x, kBytes);
  braid_work w1 = work_of(BRAID_WORK_COPY, r.s_transfer, 1, &up);
  w1.copy = &c_up;
  REQUIRE(r.api->queue_submit(r.transfer, &w1) == BRAID_OK);

  // A tokenless dependant: the semaphore it signals is the only way it can report a failure.
  const braid_kernel_call k = negate(x, y, kN);
  braid_work w2 = work_of(BRAID_WORK_KERNEL, r.s_compute, 1, nullptr);
  w2.kernel = &k;
  add_wait(w2, r.s_transfer, 1);
  REQUIRE(r.api->queue_submit(r.compute, &w2) == BRAID_OK);
  // And one with a token, behind it on the same queue, waiting for the dependant.
  Token after;
  braid_work w3 = work_of(BRAID_WORK_MARKER, nullptr, 0, &after);
  add_wait(w3, r.s_compute, 1);
  REQUIRE(r.api->queue_submit(r.transfer, &w3) == BRAID_OK);

  // The host fails the producer's semaphore while the producer is still running (what the engine does
  // when a submission cannot be made), then lets the producer end.
  r.api->semaphore_fail(r.s_transfer, BRAID_ERR_KERNEL);
  up.release();
  CHECK(r.api->semaphore_wait(r.s_compute, 1, UINT64_MAX) == BRAID_ERR_KERNEL);
  const std::string compute_line = r.destroy(r.compute);
  r.destroy(r.transfer);  // drains: `after` has ended
  CHECK(after.ended);
  CHECK(after.status == BRAID_ERR_KERNEL);
  CHECK_MESSAGE(compute_line.find(" 1 device-side waits, 0 submissions held") != std::string::npos, compute_line);
}

TEST_CASE("vulkan queues: a wait held on the host becomes device-side once its signal is submitted") {
  Rig r;
  if (!r.open()) return;
  std::vector<float> in(kN), out(kN, 0.0f);
  for (int64_t i = 0; i < kN; ++i) in[static_cast<size_t>(i)] = static_cast<float>(i % 77);
  braid_backend_buffer x = r.buffer(kBytes), x2 = r.buffer(kBytes), y = r.buffer(kBytes);

  // The transfer queue is busy (its first batch cannot finish reporting: gated), so the second upload
  // stays in its open batch, unsubmitted, and the kernel waiting for it must be held on the host.
  Token first;
  first.open = false;
  const braid_copy_desc c1 = upload(in.data(), x, kBytes), c2 = upload(in.data(), x2, kBytes);
  braid_work w1 = work_of(BRAID_WORK_COPY, r.s_transfer, 1, &first);
  w1.copy = &c1;
  REQUIRE(r.api->queue_submit(r.transfer, &w1) == BRAID_OK);
  braid_work w2 = work_of(BRAID_WORK_COPY, r.s_transfer, 2, nullptr);
  w2.copy = &c2;
  REQUIRE(r.api->queue_submit(r.transfer, &w2) == BRAID_OK);

  const braid_kernel_call k = negate(x2, y, kN);
  braid_work w3 = work_of(BRAID_WORK_KERNEL, r.s_compute, 1, nullptr);
  w3.kernel = &k;
  add_wait(w3, r.s_transfer, 2);
  REQUIRE(r.api->queue_submit(r.compute, &w3) == BRAID_OK);
  CHECK(r.value(r.s_compute) == 0);

  // The download behind the kernel on the same queue (queue order, no wait).
  const braid_copy_desc c_down = download(y, out.data(), kBytes);
  braid_work w4 = work_of(BRAID_WORK_COPY, r.s_compute, 2, nullptr);
  w4.copy = &c_down;
  REQUIRE(r.api->queue_submit(r.compute, &w4) == BRAID_OK);

  // Released, the transfer queue's completion thread submits the second batch and, before it waits for
  // that batch, hands the held kernel a device-side wait on it (nothing else submits to the transfer
  // queue from here on, so no other thread can be the one to hand it over).
  first.release();
  REQUIRE(r.api->semaphore_wait(r.s_compute, 2, UINT64_MAX) == BRAID_OK);
  REQUIRE(r.api->semaphore_wait(r.s_transfer, 2, UINT64_MAX) == BRAID_OK);
  int bad = 0;
  for (int64_t i = 0; i < kN; ++i) bad += out[static_cast<size_t>(i)] != -in[static_cast<size_t>(i)] ? 1 : 0;
  CHECK(bad == 0);
  const std::string line = r.destroy(r.compute);
  CHECK_MESSAGE(line.find(" 1 device-side waits, 1 submissions held on the host, 1 held waits made device-side") !=
                    std::string::npos,
                line);
}

TEST_CASE("vulkan queues: bad work is refused with the reason, and the queue goes on") {
  Rig r;
  if (!r.open()) return;
  test::check_bad_work_is_refused(r.api, r.dev, r.compute, [] {
    std::lock_guard lock(g_log_mu);
    return std::exchange(g_log, {});
  });
}

namespace {
test::KernelsProbe kernels_probe(std::deque<Token>& tokens) {
  return {[&tokens] { return static_cast<void*>(&tokens.emplace_back()); },
          [](void* token) {
            auto* t = static_cast<Token*>(token);
            std::lock_guard lock(t->mu);
            return test::WorkEnd{t->ends, t->status, t->message};
          }};
}
}  // namespace

TEST_CASE("vulkan queues: a KERNELS submission runs its calls in order with barriers, exactly, persistent or copied") {
  Rig r;
  if (!r.open()) return;
  std::deque<Token> tokens;
  test::check_kernels_chain(r.api, r.dev, r.compute, kernels_probe(tokens));
}

// The label is checked on the device, so the submission is split after the checked call: the rest runs
// only once its error word has been read (and here, with a bad label, never).
TEST_CASE(
    "vulkan queues: a call failing on the device ends a KERNELS submission, naming the call, and skips the rest") {
  Rig r;
  if (!r.open()) return;
  std::deque<Token> tokens;
  test::check_kernels_failure(r.api, r.dev, r.compute, kernels_probe(tokens));
}
