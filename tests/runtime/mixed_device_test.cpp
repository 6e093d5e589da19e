// One program across two backends: cpu:0 and vulkan:0 (lavapipe in CI). A dependency chain that
// crosses the devices both ways, independent work on both overlapping in the profiler's trace, and
// an error on one device leaving the other's unrelated work alone. Skipped (visibly) without a
// Vulkan device.
#include <unistd.h>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>

#include "support.h"
#include "trace.h"

namespace {

// The sanitizer runs of scripts/test.sh set BRAID_BACKENDS=cpu (lavapipe is not instrumented and leaks
// from inside Mesa); these tests name their backends explicitly, so they honour that restriction
// themselves and say they were skipped.
bool vulkan_excluded() {
  const char* only = std::getenv("BRAID_BACKENDS");
  if (only == nullptr || *only == '\0') return false;
  const std::string list = std::string(",") + only + ",";
  if (list.find(",vulkan,") != std::string::npos) return false;
  const std::string why = "skipped: BRAID_BACKENDS=" + std::string(only) + " excludes the vulkan plugin";
  MESSAGE(why);
  return true;
}

struct Mixed {
  braid_context ctx = nullptr;
  braid_device cpu = -1, vk = -1;
  Mixed() {
    if (vulkan_excluded()) return;
    braid_context_options o = BRAID_CONTEXT_OPTIONS_INIT;
    o.backends = "cpu,vulkan";
    o.engine_mode = BRAID_ENGINE_ASYNC;
    REQUIRE(braid_context_create(&o, &ctx) == BRAID_OK);
    int32_t n = 0;
    braid_context_device_count(ctx, &n);
    for (int32_t d = 0; d < n; ++d) {
      braid_device_info info{};
      info.struct_size = sizeof info;
      braid_context_device_info(ctx, d, &info);
      if (std::string(info.backend) == "cpu" && cpu < 0) cpu = d;
      if (std::string(info.backend) == "vulkan" && vk < 0) vk = d;
    }
  }
  ~Mixed() {
    if (ctx) braid_context_release(ctx);
  }
  bool ready() const {
    if (ctx == nullptr) return false;  // excluded (said so already)
    if (vk < 0) MESSAGE("skipped: no Vulkan device (libvulkan + a driver such as mesa-vulkan-drivers' lavapipe)");
    return cpu >= 0 && vk >= 0;
  }
};

std::vector<float> to_vector(braid_tensor t, size_t n) {
  std::vector<float> v(n);
  BRAID_CHECK_OK(braid_tensor_to_host(t, v.data(), n * sizeof(float)));
  return v;
}

}  // namespace

TEST_CASE("mixed devices: one dependency chain across cpu and vulkan, copies both ways") {
  Mixed m;
  if (!m.ready()) return;
  constexpr int64_t n = 100000;  // several staging chunks' worth of copies would be larger; this is 400 KB
  test::T x, xv, yv, y, z, zv, wv, w;
  BRAID_CHECK_OK(braid_arange(m.ctx, m.cpu, BRAID_FLOAT32, 0, n, 1, x.out()));    // cpu
  BRAID_CHECK_OK(braid_copy(x.t, m.vk, xv.out()));                                // cpu -> vulkan
  BRAID_CHECK_OK(braid_binary_scalar(BRAID_BINARY_MUL, xv.t, 2.0, 0, yv.out()));  // vulkan
  BRAID_CHECK_OK(braid_copy(yv.t, m.cpu, y.out()));                               // vulkan -> cpu
  BRAID_CHECK_OK(braid_binary_scalar(BRAID_BINARY_ADD, y.t, 1.0, 0, z.out()));    // cpu
  BRAID_CHECK_OK(braid_copy(z.t, m.vk, zv.out()));                                // cpu -> vulkan
  BRAID_CHECK_OK(braid_binary(BRAID_BINARY_SUB, zv.t, xv.t, wv.out()));           // vulkan: x + 1
  BRAID_CHECK_OK(braid_copy(wv.t, m.cpu, w.out()));                               // vulkan -> cpu
  const auto got = to_vector(w.t, n);
  int bad = 0;
  for (int64_t i = 0; i < n; ++i) bad += got[static_cast<size_t>(i)] != static_cast<float>(i + 1);
  CHECK(bad == 0);
  BRAID_CHECK_OK(braid_wait_all(m.ctx));
}

TEST_CASE("mixed devices: independent work on cpu and vulkan overlaps in the trace") {
  Mixed m;
  if (!m.ready()) return;
  std::string path = "/tmp/braid-test-" + std::to_string(getpid()) + "-mixed.json";
  // Warm-up: lavapipe compiles a kernel's pipeline on its first use (about 0.2 s, longer than the
  // whole CPU chain).
  for (braid_device d : {m.cpu, m.vk}) {
    const int64_t shape[] = {16};
    test::T a, b;
    BRAID_CHECK_OK(braid_full(m.ctx, d, BRAID_FLOAT32, 1, shape, 0.5, a.out()));
    BRAID_CHECK_OK(braid_unary(BRAID_UNARY_TANH, a.t, b.out()));
    BRAID_CHECK_OK(braid_tensor_wait_to_read(b.t));
  }
  BRAID_CHECK_OK(braid_profiler_start(m.ctx));
  // Each device gets a serial chain of ops long enough to span scheduler timeslices, pushed in turns
  // from this one thread: pushed one device after the other, the first chain's 16 MB outputs reach the
  // in-flight bound and the push of the second waits until the first is nearly done.
  const int64_t shape[] = {1 << 22};
  test::T a[2];
  const braid_device devices[2] = {m.cpu, m.vk};
  for (int d = 0; d < 2; ++d) BRAID_CHECK_OK(braid_full(m.ctx, devices[d], BRAID_FLOAT32, 1, shape, 0.5, a[d].out()));
  for (int i = 0; i < 8; ++i)
    for (auto& x : a) {
      test::T b;
      BRAID_CHECK_OK(braid_unary(BRAID_UNARY_TANH, x.t, b.out()));
      x = std::move(b);
    }
  BRAID_CHECK_OK(braid_wait_all(m.ctx));
  BRAID_CHECK_OK(braid_profiler_stop(m.ctx, path.c_str()));
  auto events = test::read_trace(path);
  std::remove(path.c_str());
  const int cpu = m.cpu, vk = m.vk;
  // Any of the chains' ops (the fill included: on lavapipe it alone takes about as long as the CPU's
  // whole chain).
  auto chain = [](const test::TraceEvent& e) { return e.name == "tanh" || e.name == "full"; };
  CHECK(test::any_overlap(
      events, [cpu, chain](const test::TraceEvent& e) { return chain(e) && e.pid == cpu; },
      [vk, chain](const test::TraceEvent& e) { return chain(e) && e.pid == vk; }));
}

// A backend that launches without asking work_begin (Vulkan, CUDA) gives the host no start time; an
// op's span then starts when the op before it on its queue ended, as the queue runs in order, not when
// it was pushed (which made every op of a long queue span the whole queue's time).
TEST_CASE("mixed devices: ops on one queue follow each other in the trace on every device") {
  Mixed m;
  if (!m.ready()) return;
  std::string path = "/tmp/braid-test-" + std::to_string(getpid()) + "-queue-spans.json";
  BRAID_CHECK_OK(braid_profiler_start(m.ctx));
  std::vector<test::T> keep;
  for (braid_device d : {m.cpu, m.vk}) {
    const int64_t shape[] = {1 << 20};
    test::T a;
    BRAID_CHECK_OK(braid_full(m.ctx, d, BRAID_FLOAT32, 1, shape, 0.5, a.out()));
    for (int i = 0; i < 8; ++i) {  // independent ops, pushed at once
      test::T b;
      BRAID_CHECK_OK(braid_unary(BRAID_UNARY_TANH, a.t, b.out()));
      keep.push_back(std::move(b));
    }
  }
  BRAID_CHECK_OK(braid_wait_all(m.ctx));
  BRAID_CHECK_OK(braid_profiler_stop(m.ctx, path.c_str()));
  auto events = test::read_trace(path);
  std::remove(path.c_str());
  for (braid_device d : {m.cpu, m.vk}) {
    int tanhs = 0;
    std::set<int> queues;
    for (const auto& e : events)
      if (e.name == "tanh" && e.pid == d) ++tanhs, queues.insert(e.tid);
    CHECK(tanhs == 8);
    // Ops on two queues of one device may overlap; on one queue they may not, beyond the last digit of
    // the trace's microseconds (ts + dur in double can exceed the next ts by an ulp).
    for (int q : queues)
      for (const auto& x : events)
        for (const auto& y : events)
          if (&x != &y && x.name == "tanh" && y.name == "tanh" && x.pid == d && y.pid == d && x.tid == q &&
              y.tid == q) {
            INFO("device ", d, ", queue track ", q, ": [", x.ts, ", ", x.end(), "] and [", y.ts, ", ", y.end(), "]");
            CHECK_FALSE((x.ts < y.end() - 0.002 && y.ts < x.end() - 0.002));
          }
  }
}

TEST_CASE("mixed devices: an error on the cpu does not poison the vulkan device's unrelated work") {
  Mixed m;
  if (!m.ready()) return;
  // A label outside [0, K) fails softmax cross-entropy asynchronously on the cpu.
  std::vector<float> logits(12, 0.5f);
  std::vector<int32_t> labels = {0, 7, 1};
  const int64_t ls[] = {3, 4}, lb[] = {3};
  test::T tl, tb, loss, dep, v, vout;
  BRAID_CHECK_OK(
      braid_tensor_from_host(m.ctx, m.cpu, BRAID_FLOAT32, 2, ls, logits.data(), logits.size() * 4, tl.out()));
  BRAID_CHECK_OK(braid_tensor_from_host(m.ctx, m.cpu, BRAID_INT32, 1, lb, labels.data(), labels.size() * 4, tb.out()));
  BRAID_CHECK_OK(braid_softmax_cross_entropy(tl.t, tb.t, loss.out()));
  BRAID_CHECK_OK(braid_copy(loss.t, m.vk, dep.out()));  // depends on the failure: inherits it on vulkan
  // Unrelated work on vulkan, pushed after the failing op.
  const int64_t vs[] = {1000};
  BRAID_CHECK_OK(braid_full(m.ctx, m.vk, BRAID_FLOAT32, 1, vs, 3.0, v.out()));
  BRAID_CHECK_OK(braid_binary_scalar(BRAID_BINARY_MUL, v.t, 2.0, 0, vout.out()));
  CHECK(braid_tensor_wait_to_read(vout.t) == BRAID_OK);
  const auto got = to_vector(vout.t, 1000);
  CHECK(got == std::vector<float>(1000, 6.0f));
  CHECK(braid_tensor_wait_to_read(loss.t) == BRAID_ERR_KERNEL);
  CHECK(braid_tensor_wait_to_read(dep.t) == BRAID_ERR_KERNEL);  // the copy to vulkan inherited it
  CHECK(braid_wait_all(m.ctx) == BRAID_ERR_KERNEL);
  // And the vulkan device keeps working.
  test::T again;
  BRAID_CHECK_OK(braid_binary_scalar(BRAID_BINARY_ADD, vout.t, 1.0, 0, again.out()));
  CHECK(to_vector(again.t, 1000) == std::vector<float>(1000, 7.0f));
}

// A plugin whose vendor library is missing loads, reports zero devices and says why
// (docs/ARCHITECTURE.md#plugin-abi).
TEST_CASE("vulkan plugin: without a Vulkan loader it loads with zero devices and a reason") {
  if (vulkan_excluded()) return;
  setenv("BRAID_VULKAN_LOADER", "/nonexistent/libvulkan.so.1", 1);  // read when the plugin first enumerates
  braid_context_options o = BRAID_CONTEXT_OPTIONS_INIT;
  o.backends = "vulkan";
  braid_context ctx = nullptr;
  const braid_status st = braid_context_create(&o, &ctx);
  unsetenv("BRAID_VULKAN_LOADER");
  if (st != BRAID_OK) {
    MESSAGE("skipped: no vulkan plugin built (", braid_last_error(), ")");
    return;
  }
  int32_t n = 0;
  braid_context_backend_count(ctx, &n);
  bool seen = false;
  for (int32_t b = 0; b < n; ++b) {
    braid_backend_info bi{};
    bi.struct_size = sizeof bi;
    REQUIRE(braid_context_backend_info(ctx, b, &bi) == BRAID_OK);
    if (std::string(bi.name) != "vulkan") continue;
    seen = true;
    CHECK(bi.loaded == 1);
    CHECK(bi.device_count == 0);
    CHECK(std::string(bi.reason).find("loader") != std::string::npos);
  }
  if (!seen) MESSAGE("skipped: no vulkan plugin built");
  int32_t devices = -1;
  braid_context_device_count(ctx, &devices);
  CHECK(devices == 0);
  braid_context_release(ctx);
}

TEST_CASE("mixed devices: a kernel error on vulkan does not poison the cpu's unrelated work") {
  Mixed m;
  if (!m.ready()) return;
  std::vector<float> logits(12, 0.5f);
  std::vector<int32_t> labels = {0, 1, 9};  // 9 >= K = 4: the Vulkan kernel reports it
  const int64_t ls[] = {3, 4}, lb[] = {3}, cs[] = {1000};
  test::T tl, tb, loss, c, cout;
  BRAID_CHECK_OK(braid_tensor_from_host(m.ctx, m.vk, BRAID_FLOAT32, 2, ls, logits.data(), logits.size() * 4, tl.out()));
  BRAID_CHECK_OK(braid_tensor_from_host(m.ctx, m.vk, BRAID_INT32, 1, lb, labels.data(), labels.size() * 4, tb.out()));
  BRAID_CHECK_OK(braid_softmax_cross_entropy(tl.t, tb.t, loss.out()));
  BRAID_CHECK_OK(braid_full(m.ctx, m.cpu, BRAID_FLOAT32, 1, cs, 2.0, c.out()));
  BRAID_CHECK_OK(braid_binary_scalar(BRAID_BINARY_MUL, c.t, 4.0, 0, cout.out()));
  CHECK(to_vector(cout.t, 1000) == std::vector<float>(1000, 8.0f));
  CHECK(braid_tensor_wait_to_read(loss.t) == BRAID_ERR_KERNEL);
  CHECK(std::string(braid_last_error()).find("label") != std::string::npos);
  CHECK(braid_wait_all(m.ctx) == BRAID_ERR_KERNEL);
}

// Vulkan's two queues: the kernel runs on the compute queue, the copy out of it on the transfer queue,
// waiting for the kernel on the device when the kernel's batch is already submitted. A kernel error must
// reach the copy (never a silently successful copy of bad data, never a hang), every time: the copy
// reports only after the kernel has (backends/vulkan/README.md, "Semaphores").
TEST_CASE("mixed devices: a kernel error on vulkan's compute queue fails the copy out on its transfer queue") {
  Mixed m;
  if (!m.ready()) return;
  std::vector<float> logits(12, 0.5f);
  const int64_t ls[] = {3, 4}, lb[] = {3};
  for (int round = 0; round < 20; ++round) {
    std::vector<int32_t> labels = {0, 1, round % 2 == 0 ? 9 : 2};  // even rounds: 9 >= K = 4 fails
    test::T tl, tb, loss, out;
    BRAID_CHECK_OK(
        braid_tensor_from_host(m.ctx, m.vk, BRAID_FLOAT32, 2, ls, logits.data(), logits.size() * 4, tl.out()));
    BRAID_CHECK_OK(braid_tensor_from_host(m.ctx, m.vk, BRAID_INT32, 1, lb, labels.data(), labels.size() * 4, tb.out()));
    BRAID_CHECK_OK(braid_softmax_cross_entropy(tl.t, tb.t, loss.out()));
    BRAID_CHECK_OK(braid_copy(loss.t, m.cpu, out.out()));
    if (round % 2 == 0) {
      CHECK(braid_tensor_wait_to_read(out.t) == BRAID_ERR_KERNEL);
      CHECK(braid_wait_all(m.ctx) == BRAID_ERR_KERNEL);
    } else {
      const auto got = to_vector(out.t, 3);
      for (float v : got) CHECK(std::fabs(v - std::log(4.0f)) < 1e-5f);  // uniform logits: log K
      BRAID_CHECK_OK(braid_wait_all(m.ctx));
    }
  }
}

// A failed submission (injected: BRAID_VULKAN_FAIL_SUBMIT=0 fails the device's first vkQueueSubmit as
// a lost device would) fails the tensors it was computing, marks the device failed so later work
// fails too, never hangs or aborts, and leaves the cpu device working.
TEST_CASE("mixed devices: a lost vulkan device fails its tensors and leaves the cpu alone") {
  setenv("BRAID_VULKAN_FAIL_SUBMIT", "0", 1);  // read when the device is opened
  Mixed m;
  unsetenv("BRAID_VULKAN_FAIL_SUBMIT");
  if (!m.ready()) return;
  const int64_t s[] = {1000};
  test::T a, b, c, d, later;
  BRAID_CHECK_OK(braid_full(m.ctx, m.vk, BRAID_FLOAT32, 1, s, 1.0, a.out()));
  BRAID_CHECK_OK(braid_binary_scalar(BRAID_BINARY_ADD, a.t, 1.0, 0, b.out()));
  CHECK(braid_tensor_wait_to_read(b.t) == BRAID_ERR_DEVICE);
  BRAID_CHECK_OK(braid_full(m.ctx, m.cpu, BRAID_FLOAT32, 1, s, 3.0, c.out()));
  BRAID_CHECK_OK(braid_binary_scalar(BRAID_BINARY_ADD, c.t, 1.0, 0, d.out()));
  CHECK(to_vector(d.t, 1000) == std::vector<float>(1000, 4.0f));
  BRAID_CHECK_OK(braid_full(m.ctx, m.vk, BRAID_FLOAT32, 1, s, 5.0, later.out()));
  CHECK(braid_tensor_wait_to_read(later.t) == BRAID_ERR_DEVICE);  // the device stays failed
  CHECK(braid_wait_all(m.ctx) == BRAID_ERR_DEVICE);
}

// 24 MB each way: more than the 16 MiB staging ring, so the copies go through it in chunks and wait
// for earlier chunks to drain.
TEST_CASE("mixed devices: copies larger than the staging ring arrive intact both ways") {
  Mixed m;
  if (!m.ready()) return;
  constexpr int64_t n = 6 << 20;
  test::T x, xv, yv, y;
  BRAID_CHECK_OK(braid_arange(m.ctx, m.cpu, BRAID_FLOAT32, 0, n, 1, x.out()));
  BRAID_CHECK_OK(braid_copy(x.t, m.vk, xv.out()));
  BRAID_CHECK_OK(braid_binary_scalar(BRAID_BINARY_SUB, xv.t, 1.0, 0, yv.out()));
  BRAID_CHECK_OK(braid_copy(yv.t, m.cpu, y.out()));
  const auto got = to_vector(y.t, n);
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) bad += got[static_cast<size_t>(i)] != static_cast<float>(i - 1);
  CHECK(bad == 0);
}

// The same physical device seen twice (here: lavapipe's ICD listed under two names, so the loader
// enumerates it twice) is listed once; the plugin logs the skipped duplicate's UUID
// (docs/ARCHITECTURE.md#plugin-abi).
TEST_CASE("vulkan plugin: a device reported twice (same UUID) is listed once") {
  if (vulkan_excluded()) return;
  const char* icd = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json";
  std::FILE* in = std::fopen(icd, "rb");
  if (!in) {
    MESSAGE("skipped: no lavapipe ICD at ", icd);
    return;
  }
  std::string json;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, in)) > 0;) json.append(buf, n);
  std::fclose(in);
  const std::string base = "/tmp/braid-test-" + std::to_string(getpid()) + "-icd";
  const std::string a = base + "-a.json", b = base + "-b.json";
  for (const std::string& p : {a, b}) {
    std::FILE* out = std::fopen(p.c_str(), "wb");
    REQUIRE(out);
    std::fwrite(json.data(), 1, json.size(), out);
    std::fclose(out);
  }
  setenv("VK_ICD_FILENAMES", (a + ":" + b).c_str(), 1);
  braid_context_options o = BRAID_CONTEXT_OPTIONS_INIT;
  o.backends = "vulkan";
  braid_context ctx = nullptr;
  const braid_status st = braid_context_create(&o, &ctx);
  unsetenv("VK_ICD_FILENAMES");
  std::remove(a.c_str());
  std::remove(b.c_str());
  if (st != BRAID_OK) {
    MESSAGE("skipped: no vulkan plugin built (", braid_last_error(), ")");
    return;
  }
  int32_t devices = -1;
  braid_context_device_count(ctx, &devices);
  CHECK(devices == 1);
  braid_context_release(ctx);
}

// A copy vulkan -> cpu and then, without a wait, cpu -> vulkan of the same CPU tensor: both run on the
// Vulkan transfer queue, which reads a CPU source when it records the copy and writes a CPU
// destination when its batch completes. The second copy read the CPU tensor's old contents (8 to 20
// times in 20); the engine now makes it wait on the host for the first to end.
TEST_CASE("mixed devices: vulkan -> cpu -> vulkan without a wait reads what the first copy wrote") {
  Mixed m;
  if (!m.ready()) return;
  for (int64_t n : {int64_t{8}, int64_t{1} << 18}) {
    std::vector<float> want(static_cast<size_t>(n)), old(static_cast<size_t>(n), -7.0f);
    for (int64_t i = 0; i < n; ++i) want[static_cast<size_t>(i)] = static_cast<float>(i % 1000 + 1);
    for (int round = 0; round < 10; ++round) {
      CAPTURE(n);
      CAPTURE(round);
      test::T src, b, back;
      BRAID_CHECK_OK(
          braid_tensor_from_host(m.ctx, m.vk, BRAID_FLOAT32, 1, &n, want.data(), want.size() * 4, src.out()));
      BRAID_CHECK_OK(braid_tensor_from_host(m.ctx, m.cpu, BRAID_FLOAT32, 1, &n, old.data(), old.size() * 4, b.out()));
      BRAID_CHECK_OK(braid_wait_all(m.ctx));
      BRAID_CHECK_OK(braid_copy_into(src.t, b.t));
      BRAID_CHECK_OK(braid_copy(b.t, m.vk, back.out()));
      CHECK(to_vector(back.t, want.size()) == want);
      CHECK(to_vector(b.t, want.size()) == want);
    }
  }
}
