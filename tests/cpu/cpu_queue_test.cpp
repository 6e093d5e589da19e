// The CPU plugin's queues, opened directly as the host's loader would: submissions run in FIFO order
// per submitting thread, also when more are queued than the lock-free ring holds (the overflow path),
// and from several threads at once. Tokens recorded by work_begin on the queue thread give the order.
#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <doctest/doctest.h>
#include "braid_backend.h"

#include "bad_work.h"
#include "kernels_work.h"
#include "plugin_loader.h"

namespace {

std::mutex g_mu;
std::vector<uintptr_t> g_order;  // tokens in the order the queue thread began them

std::vector<std::string> g_log;  // guarded by g_mu

void host_log(braid_log_level, const char* message) {
  std::lock_guard lock(g_mu);
  g_log.emplace_back(message);
}
int32_t host_begin(void* token) {
  std::lock_guard lock(g_mu);
  g_order.push_back(reinterpret_cast<uintptr_t>(token));
  return 1;
}
std::map<const void*, test::WorkEnd> g_ends;  // what work_end was told, by token; guarded by g_mu

void host_end(void* token, braid_status status, const char* message) {
  std::lock_guard lock(g_mu);
  test::WorkEnd& e = g_ends[token];
  ++e.count;
  e.status = status;
  e.message = message != nullptr ? message : "";
}
const braid_host_api kHost = {
    sizeof(braid_host_api), BRAID_BACKEND_ABI_MAJOR, BRAID_BACKEND_ABI_MINOR, host_log, host_begin, host_end};

struct Plugin {
  test::PluginLib plugin{BRAID_CPU_PLUGIN, &kHost};
  const braid_backend_api* api = nullptr;
  braid_backend_device device = nullptr;
  braid_backend_queue queue = nullptr;
  Plugin() {
    REQUIRE_MESSAGE(plugin.api() != nullptr, "cannot open the plugin: ", plugin.error());
    api = plugin.api();
    REQUIRE(api->device_open(0, &device) == BRAID_OK);
    REQUIRE(api->queue_create(device, BRAID_QUEUE_COMPUTE, &queue) == BRAID_OK);
    std::lock_guard lock(g_mu);
    g_order.clear();
  }
  ~Plugin() {
    api->queue_destroy(queue);
    api->device_close(device);
  }

  // A marker with a token, optionally waiting on `wait` and signalling `signal`.
  braid_status submit(uintptr_t token, braid_backend_semaphore wait, uint64_t wait_value,
                      braid_backend_semaphore signal, uint64_t signal_value) const {
    braid_work w{};
    w.struct_size = sizeof w;
    w.kind = BRAID_WORK_MARKER;
    if (wait != nullptr) {
      w.num_waits = 1;
      w.waits[0] = wait;
      w.wait_values[0] = wait_value;
    }
    w.signal = signal;
    w.signal_value = signal_value;
    w.token = reinterpret_cast<void*>(token);
    return api->queue_submit(queue, &w);
  }
};

}  // namespace

TEST_CASE("cpu queue: FIFO order holds through the ring's overflow") {
  Plugin p;
  braid_backend_semaphore gate = nullptr, done = nullptr;
  REQUIRE(p.api->semaphore_create(p.device, 0, &gate) == BRAID_OK);
  REQUIRE(p.api->semaphore_create(p.device, 0, &done) == BRAID_OK);
  // The first item blocks the queue thread until the gate opens, so the next ones pile up: far more
  // than the ring's slots, so most of them take the overflow path, and some go to the ring again
  // after the queue thread has taken the overflow.
  constexpr uintptr_t kItems = 5000;
  REQUIRE(p.submit(1, gate, 1, done, 1) == BRAID_OK);
  for (uintptr_t t = 2; t <= kItems; ++t) {
    REQUIRE(p.submit(t, nullptr, 0, done, t) == BRAID_OK);
    if (t == kItems / 2) REQUIRE(p.api->semaphore_signal(gate, 1) == BRAID_OK);
  }
  REQUIRE(p.api->semaphore_wait(done, kItems, UINT64_MAX) == BRAID_OK);
  std::lock_guard lock(g_mu);
  REQUIRE(g_order.size() == kItems);
  for (uintptr_t i = 0; i < kItems; ++i) REQUIRE(g_order[i] == i + 1);
  p.api->semaphore_destroy(gate);
  p.api->semaphore_destroy(done);
}

namespace {

// kThreads threads submit kPerThread markers each while the queue thread is held at a gate for the
// first part of it, so they race into a full ring and its overflow; then checks that each thread's
// markers ran in the order it submitted them.
void check_per_thread_order(Plugin& p, int threads_n, uintptr_t per_thread) {
  {
    std::lock_guard lock(g_mu);
    g_order.clear();
  }
  braid_backend_semaphore gate = nullptr;
  REQUIRE(p.api->semaphore_create(p.device, 0, &gate) == BRAID_OK);
  const uintptr_t first = uintptr_t(threads_n + 1) << 32;  // a token is never 0 (NULL: no callbacks)
  REQUIRE(p.submit(first, gate, 1, nullptr, 0) == BRAID_OK);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < threads_n; ++t)
    threads.emplace_back([&, t] {
      for (uintptr_t i = 1; i <= per_thread; ++i) {
        // token = thread in the top bits, its sequence number below
        if (p.submit((uintptr_t(t + 1) << 32) | i, nullptr, 0, nullptr, 0) != BRAID_OK) failures.fetch_add(1);
        if (t == 0 && i == per_thread / 3) p.api->semaphore_signal(gate, 1);
      }
    });
  for (auto& th : threads) th.join();
  CHECK(failures.load() == 0);
  braid_backend_semaphore done = nullptr;
  REQUIRE(p.api->semaphore_create(p.device, 0, &done) == BRAID_OK);
  REQUIRE(p.submit(UINTPTR_MAX, nullptr, 0, done, 1) == BRAID_OK);
  REQUIRE(p.api->semaphore_wait(done, 1, UINT64_MAX) == BRAID_OK);
  p.api->semaphore_destroy(gate);
  p.api->semaphore_destroy(done);
  std::lock_guard lock(g_mu);
  REQUIRE(g_order.size() == size_t(threads_n) * per_thread + 2);
  CHECK(g_order.front() == first);
  CHECK(g_order.back() == UINTPTR_MAX);
  std::vector<uintptr_t> last(size_t(threads_n), 0);
  for (size_t i = 1; i + 1 < g_order.size(); ++i) {
    const auto thread = static_cast<size_t>((g_order[i] >> 32) - 1);
    const uintptr_t seq = g_order[i] & 0xffffffffu;
    REQUIRE(thread < size_t(threads_n));
    REQUIRE(seq == last[thread] + 1);
    last[thread] = seq;
  }
}

}  // namespace

TEST_CASE("cpu queue: submissions from several threads keep each thread's order") {
  Plugin p;
  check_per_thread_order(p, 4, 3000);
}

// More threads than cores, many rounds: a producer is often preempted between claiming a ring slot
// and publishing it, with later slots published and the ring spilling. The queue thread must not run
// the overflow before that slot (it did once: a thread's items 1346-1600 ran after its 1601).
TEST_CASE("cpu queue: per-thread order holds when a producer stalls inside its ring slot") {
  Plugin p;
  for (int round = 0; round < 40; ++round) {
    CAPTURE(round);
    check_per_thread_order(p, 8, 1000);
  }
}

TEST_CASE("cpu queue: bad work is refused with the reason, and the queue goes on") {
  Plugin p;
  test::check_bad_work_is_refused(p.api, p.device, p.queue, [] {
    std::lock_guard lock(g_mu);
    return std::exchange(g_log, {});
  });
}

namespace {
// Tokens for the KERNELS checks: addresses of the deque's elements, stable while it grows (an earlier
// case's token may have had the same address: its record goes).
test::KernelsProbe kernels_probe(std::deque<char>& tokens) {
  return {[&tokens] {
            void* token = &tokens.emplace_back();
            std::lock_guard lock(g_mu);
            g_ends.erase(token);
            return token;
          },
          [](void* token) {
            std::lock_guard lock(g_mu);
            return g_ends[token];
          }};
}
}  // namespace

TEST_CASE("cpu queue: a KERNELS submission runs its calls in order, exactly, persistent or copied") {
  Plugin p;
  std::deque<char> tokens;
  test::check_kernels_chain(p.api, p.device, p.queue, kernels_probe(tokens));
}

TEST_CASE("cpu queue: a failing call ends a KERNELS submission, naming the call, and skips the rest") {
  Plugin p;
  std::deque<char> tokens;
  test::check_kernels_failure(p.api, p.device, p.queue, kernels_probe(tokens));
}
