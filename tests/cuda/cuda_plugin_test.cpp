// The CUDA plugin on any machine: it loads (through the context and directly through its query),
// reports zero devices with a reason when there is no GPU or driver, and answers the ABI without a
// device. The GPU cases (device round trip, matmul through cuBLAS, a device-side error becoming a
// tensor error; through the plugin's table: overlapping copies, a matmul stride past int, set-up
// failures, a queue destroyed with a wait nothing signals, more checked kernels in flight than one
// chunk of error flags) report skipped, with the reason, where the plugin found no device; where one
// exists they run, and tests/ops runs the whole conformance suite on it.
#include <dlfcn.h>

#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <fstream>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <doctest/doctest.h>
#include "braid.h"
#include "braid_backend.h"

#include "bad_work.h"
#include "kernels_work.h"
#include "plugin_loader.h"

namespace {

// The plugin opened directly, as the host's loader would, with a minimal host table.
std::mutex g_log_mu;
std::vector<std::string> g_log;

void host_log(braid_log_level, const char* message) {
  // Never throws into the plugin (its log is noexcept): a case runs with little address space.
  try {
    std::lock_guard lock(g_log_mu);
    g_log.emplace_back(message);
  } catch (...) {}
}
std::vector<std::string> take_log() {
  std::lock_guard lock(g_log_mu);
  return std::exchange(g_log, {});
}

// Each submission's end as the plugin reported it, by token (the direct GPU cases below).
struct End {
  braid_status status = BRAID_OK;
  std::string message;
  int count = 0;
};
std::mutex g_end_mu;
std::map<const void*, End> g_ends;

int32_t host_begin(void*) { return 1; }
void host_end(void* token, braid_status status, const char* message) {
  std::lock_guard lock(g_end_mu);
  End& e = g_ends[token];
  e.status = status;
  e.message = message != nullptr ? message : "";
  ++e.count;
}
const braid_host_api kHost = {
    sizeof(braid_host_api), BRAID_BACKEND_ABI_MAJOR, BRAID_BACKEND_ABI_MINOR, host_log, host_begin, host_end};

struct Plugin : test::PluginLib {
  Plugin() : PluginLib(BRAID_CUDA_PLUGIN, &kHost) {}
};

struct Devices {
  int32_t count = 0;
  std::string reason;
};

Devices probe_devices() {
  Plugin p;
  Devices d;
  const char* reason = nullptr;
  if (p.api() != nullptr && p.api()->device_count(&d.count, &reason) == BRAID_OK && reason != nullptr)
    d.reason = reason;
  return d;
}

const Devices& devices() {
  static const Devices d = probe_devices();
  return d;
}

bool have_gpu() { return devices().count > 0; }

bool driver_present() {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h != nullptr) dlclose(h);
  return h != nullptr;
}

}  // namespace

TEST_CASE("cuda plugin: query answers and the table is ABI 1.1") {
  Plugin p;
  REQUIRE_MESSAGE(p.lib() != nullptr, "cannot open the plugin: ", p.error());
  REQUIRE(p.api() != nullptr);
  CHECK(std::string(p.api()->name) == "cuda");
  CHECK(p.api()->abi_major == BRAID_BACKEND_ABI_MAJOR);
  CHECK(p.api()->abi_minor == BRAID_BACKEND_ABI_MINOR);
  CHECK(p.api()->struct_size == sizeof(braid_backend_api));
  CHECK((p.api()->device_props_json != nullptr));
  // Another major is refused.
  auto query = reinterpret_cast<braid_backend_query_fn>(dlsym(p.lib(), BRAID_BACKEND_QUERY_SYMBOL));
  const braid_backend_api* other = nullptr;
  CHECK(query(BRAID_BACKEND_ABI_MAJOR + 1, 0, &kHost, &other) == BRAID_ERR_ABI_MISMATCH);
  CHECK(other == nullptr);
}

TEST_CASE("cuda plugin: offers the device-pointer extension, and nothing under other names") {
  Plugin p;
  REQUIRE(p.api() != nullptr);
  REQUIRE((p.api()->get_proc_address != nullptr));
  using DevicePointer = void* (*)(braid_backend_buffer);
  auto pointer = reinterpret_cast<DevicePointer>(p.api()->get_proc_address("braid_ext_cuda_buffer_device_pointer"));
  REQUIRE((pointer != nullptr));
  CHECK(pointer(nullptr) == nullptr);
  CHECK((p.api()->get_proc_address("braid_ext_cuda_no_such_extension") == nullptr));
  CHECK((p.api()->get_proc_address(nullptr) == nullptr));
}

TEST_CASE("cuda plugin: kernel coverage matches the CPU backend's dtypes") {
  Plugin p;
  REQUIRE(p.api() != nullptr);
  auto s = p.api()->supports;
  CHECK(s(BRAID_KOP_MATMUL, BRAID_FLOAT32) == 1);
  CHECK(s(BRAID_KOP_MATMUL, BRAID_FLOAT64) == 1);
  CHECK(s(BRAID_KOP_MATMUL, BRAID_INT32) == 0);
  CHECK(s(BRAID_KOP_MATMUL, BRAID_BFLOAT16) == 1);  // autocast's 16-bit products (float32 result)
  CHECK(s(BRAID_KOP_MATMUL, BRAID_FLOAT16) == 1);
  CHECK(s(BRAID_KOP_FILL, BRAID_FLOAT16) == 1);
  CHECK(s(BRAID_KOP_COPY, BRAID_BFLOAT16) == 1);
  CHECK(s(BRAID_KOP_BINARY, BRAID_INT64) == 1);
  CHECK(s(BRAID_KOP_BINARY, BRAID_UINT8) == 0);
  CHECK(s(BRAID_KOP_RANDOM_NORMAL, BRAID_INT32) == 0);
  CHECK(s(BRAID_KOP_SOFTMAX_CE_BWD, BRAID_FLOAT64) == 1);
  CHECK(s(BRAID_KOP_COUNT, BRAID_FLOAT32) == 0);
  CHECK(s(static_cast<braid_kernel_op>(-1), BRAID_FLOAT32) == 0);
  CHECK(s(BRAID_KOP_FILL, BRAID_DTYPE_COUNT) == 0);
}

TEST_CASE("cuda plugin: device count and reason; no device means no handles") {
  Plugin p;
  REQUIRE(p.api() != nullptr);
  int32_t n = -1;
  const char* reason = nullptr;
  REQUIRE(p.api()->device_count(&n, &reason) == BRAID_OK);
  REQUIRE(reason != nullptr);
  CHECK(n >= 0);
  CHECK(p.api()->device_count(nullptr, &reason) == BRAID_ERR_INVALID_ARGUMENT);
  if (!driver_present()) {
    CHECK(n == 0);
    CHECK(std::string(reason).find("libcuda.so.1") != std::string::npos);
  }
  if (n == 0) {
    CHECK(std::strlen(reason) > 0);
    braid_backend_device dev = nullptr;
    CHECK(p.api()->device_open(0, &dev) == BRAID_ERR_NOT_FOUND);
    CHECK(dev == nullptr);
    braid_backend_device_props props{};
    props.struct_size = sizeof(props);
    CHECK(p.api()->device_props(0, &props) == BRAID_ERR_NOT_FOUND);
    CHECK(p.api()->device_props_json(0) == nullptr);
  } else {
    CHECK(std::strlen(reason) == 0);
    CHECK(p.api()->device_props_json(0) != nullptr);
  }
  CHECK(p.api()->device_open(-1, nullptr) == BRAID_ERR_INVALID_ARGUMENT);
  CHECK(p.api()->queue_submit(nullptr, nullptr) == BRAID_ERR_INVALID_ARGUMENT);
}

TEST_CASE("cuda plugin: loads through the context and reports its devices or why there are none") {
  braid_context_options opt = BRAID_CONTEXT_OPTIONS_INIT;
  opt.backends = "cuda";
  braid_context ctx = nullptr;
  REQUIRE(braid_context_create(&opt, &ctx) == BRAID_OK);
  int32_t nb = 0;
  REQUIRE(braid_context_backend_count(ctx, &nb) == BRAID_OK);
  bool found = false;
  for (int32_t i = 0; i < nb; ++i) {
    braid_backend_info info{};
    info.struct_size = sizeof(info);
    REQUIRE(braid_context_backend_info(ctx, i, &info) == BRAID_OK);
    if (std::string(info.name) != "cuda") continue;
    found = true;
    CHECK(info.loaded == 1);
    CHECK(info.abi_major == BRAID_BACKEND_ABI_MAJOR);
    CHECK(info.abi_minor == BRAID_BACKEND_ABI_MINOR);
    CHECK(info.device_count == devices().count);
    if (info.device_count == 0) {
      REQUIRE(info.reason != nullptr);
      CHECK(std::string(info.reason) == devices().reason);
      CHECK(std::strlen(info.reason) > 0);
      MESSAGE("cuda backend has no device here: ", std::string(info.reason));
    }
  }
  CHECK(found);
  int32_t nd = -1;
  REQUIRE(braid_context_device_count(ctx, &nd) == BRAID_OK);
  CHECK(nd == devices().count);
  CHECK(braid_context_release(ctx) == BRAID_OK);
}

// ---- GPU cases: skipped, with the reason, where the plugin found no device ----

TEST_CASE("cuda GPU cases are skipped without a device" * doctest::skip(have_gpu())) {
  MESSAGE("skipped: the cuda GPU cases need a CUDA device; the plugin says: ", devices().reason);
}

namespace {
struct Ctx {
  braid_context ctx = nullptr;
  braid_device dev = -1;
  Ctx() {
    braid_context_options opt = BRAID_CONTEXT_OPTIONS_INIT;
    opt.backends = "cuda";
    REQUIRE(braid_context_create(&opt, &ctx) == BRAID_OK);
    REQUIRE(braid_context_find_device(ctx, "cuda:0", &dev) == BRAID_OK);
  }
  ~Ctx() { braid_context_release(ctx); }
};
}  // namespace

TEST_CASE("cuda: host -> device -> host round trip, large enough for chunked staging" * doctest::skip(!have_gpu())) {
  Ctx c;
  const int64_t n = (int64_t(9) << 20) / 4;  // 9 MiB of float32: three 4 MiB staging chunks
  std::vector<float> src(static_cast<size_t>(n)), back(static_cast<size_t>(n), -1.0f);
  for (int64_t i = 0; i < n; ++i) src[size_t(i)] = float(i % 1000) * 0.5f;
  braid_tensor t = nullptr;
  REQUIRE(braid_tensor_from_host(c.ctx, c.dev, BRAID_FLOAT32, 1, &n, src.data(), src.size() * 4, &t) == BRAID_OK);
  REQUIRE(braid_tensor_to_host(t, back.data(), back.size() * 4) == BRAID_OK);
  CHECK(back == src);
  braid_tensor_release(t);
}

TEST_CASE("cuda: matmul through cuBLAS agrees with a host reference" * doctest::skip(!have_gpu())) {
  Ctx c;
  const int64_t M = 33, K = 17, N = 9;
  std::vector<double> a(size_t(M * K)), b(size_t(K * N)), out(size_t(M * N));
  for (size_t i = 0; i < a.size(); ++i) a[i] = double(int(i % 7) - 3) * 0.25;
  for (size_t i = 0; i < b.size(); ++i) b[i] = double(int(i % 5) - 2) * 0.5;
  const int64_t sa[2] = {M, K}, sb[2] = {K, N};
  braid_tensor ta = nullptr, tb = nullptr, to = nullptr;
  REQUIRE(braid_tensor_from_host(c.ctx, c.dev, BRAID_FLOAT64, 2, sa, a.data(), a.size() * 8, &ta) == BRAID_OK);
  REQUIRE(braid_tensor_from_host(c.ctx, c.dev, BRAID_FLOAT64, 2, sb, b.data(), b.size() * 8, &tb) == BRAID_OK);
  REQUIRE(braid_matmul(ta, tb, 0, 0, &to) == BRAID_OK);
  REQUIRE(braid_tensor_to_host(to, out.data(), out.size() * 8) == BRAID_OK);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double r = 0;
      for (int64_t k = 0; k < K; ++k) r += a[size_t(i * K + k)] * b[size_t(k * N + j)];
      CHECK(out[size_t(i * N + j)] == doctest::Approx(r).epsilon(1e-12));
    }
  braid_tensor_release(ta);
  braid_tensor_release(tb);
  braid_tensor_release(to);
}

TEST_CASE("cuda: a label out of range becomes an error on the loss, not an abort" * doctest::skip(!have_gpu())) {
  Ctx c;
  const int64_t sl[2] = {2, 3}, sn[1] = {2};
  const float logits[6] = {0, 1, 2, 3, 4, 5};
  const int64_t labels[2] = {1, 7};
  braid_tensor tl = nullptr, ty = nullptr, loss = nullptr;
  REQUIRE(braid_tensor_from_host(c.ctx, c.dev, BRAID_FLOAT32, 2, sl, logits, sizeof(logits), &tl) == BRAID_OK);
  REQUIRE(braid_tensor_from_host(c.ctx, c.dev, BRAID_INT64, 1, sn, labels, sizeof(labels), &ty) == BRAID_OK);
  REQUIRE(braid_softmax_cross_entropy(tl, ty, &loss) == BRAID_OK);
  CHECK(braid_tensor_wait_to_read(loss) == BRAID_ERR_KERNEL);
  braid_wait_all(c.ctx);
  braid_tensor_release(tl);
  braid_tensor_release(ty);
  braid_tensor_release(loss);
}

TEST_CASE("cuda: bad work is refused with the reason, and the queue goes on" * doctest::skip(!have_gpu())) {
  Plugin p;
  REQUIRE(p.api() != nullptr);
  const braid_backend_api* api = p.api();
  braid_backend_device dev = nullptr;
  braid_backend_queue queue = nullptr;
  REQUIRE(api->device_open(0, &dev) == BRAID_OK);
  REQUIRE(api->queue_create(dev, BRAID_QUEUE_COMPUTE, &queue) == BRAID_OK);
  test::check_bad_work_is_refused(api, dev, queue, take_log);
  api->queue_destroy(queue);
  api->device_close(dev);
}

// ---- GPU cases on the plugin driven directly (no context): exact control of queues and waits ----

namespace {

constexpr uint64_t kMinute = uint64_t{60} * 1000 * 1000 * 1000;

// A dense view of `shape` at byte_offset.
braid_buffer_view dense_view(braid_backend_buffer b, braid_dtype dtype, std::initializer_list<int64_t> shape,
                             uint64_t byte_offset = 0) {
  braid_buffer_view v{};
  v.buffer = b;
  v.byte_offset = byte_offset;
  v.dtype = dtype;
  for (int64_t s : shape) v.shape[v.ndim++] = s;
  int64_t stride = 1;
  for (int k = v.ndim - 1; k >= 0; --k) {
    v.strides[k] = stride;
    stride *= v.shape[k];
  }
  return v;
}

// Device 0 opened through the plugin's table, with a compute queue and a semaphore that every
// submission signals to the next value. A submission's token is its value, so the status and
// message the plugin reported at its end are found by that value once it is reached.
struct Direct {
  Plugin plugin;
  const braid_backend_api* api = nullptr;
  braid_backend_device dev = nullptr;
  braid_backend_queue queue = nullptr;
  braid_backend_semaphore sem = nullptr;
  uint64_t last = 0;
  std::vector<braid_backend_buffer> buffers;

  Direct() {
    api = plugin.api();
    REQUIRE(api != nullptr);
    {
      std::lock_guard lock(g_end_mu);
      g_ends.clear();
    }
    REQUIRE(api->device_open(0, &dev) == BRAID_OK);
    REQUIRE(api->queue_create(dev, BRAID_QUEUE_COMPUTE, &queue) == BRAID_OK);
    REQUIRE(api->semaphore_create(dev, 0, &sem) == BRAID_OK);
  }
  ~Direct() {
    if (queue != nullptr) api->queue_destroy(queue);  // drains
    for (braid_backend_buffer b : buffers) api->buffer_free(dev, b);
    if (sem != nullptr) api->semaphore_destroy(sem);
    if (dev != nullptr) api->device_close(dev);
  }
  Direct(const Direct&) = delete;
  Direct& operator=(const Direct&) = delete;

  static void* token(uint64_t value) { return reinterpret_cast<void*>(static_cast<uintptr_t>(value)); }

  braid_backend_buffer alloc(uint64_t bytes) {
    braid_backend_buffer b = nullptr;
    REQUIRE(api->buffer_alloc(dev, bytes, &b) == BRAID_OK);
    buffers.push_back(b);
    return b;
  }
  // Submits w to q (the case's queue by default); returns the value it signals when it ends.
  uint64_t submit(braid_work w, braid_backend_queue q = nullptr) {
    w.struct_size = sizeof w;
    w.signal = sem;
    w.signal_value = ++last;
    w.token = token(last);
    REQUIRE(api->queue_submit(q != nullptr ? q : queue, &w) == BRAID_OK);
    return last;
  }
  uint64_t copy(braid_copy_desc c) {
    c.struct_size = sizeof c;
    braid_work w{};
    w.kind = BRAID_WORK_COPY;
    w.copy = &c;  // read during queue_submit only
    return submit(w);
  }
  uint64_t upload(braid_backend_buffer b, uint64_t offset, const void* src, uint64_t bytes) {
    braid_copy_desc c{};
    c.src_host = src;
    c.dst_buffer = b;
    c.dst_offset = offset;
    c.bytes = bytes;
    return copy(c);
  }
  uint64_t download(braid_backend_buffer b, uint64_t offset, void* dst, uint64_t bytes) {
    braid_copy_desc c{};
    c.src_buffer = b;
    c.src_offset = offset;
    c.dst_host = dst;
    c.bytes = bytes;
    return copy(c);
  }
  uint64_t move(braid_backend_buffer b, uint64_t src_offset, uint64_t dst_offset, uint64_t bytes) {
    braid_copy_desc c{};
    c.src_buffer = b;
    c.src_offset = src_offset;
    c.dst_buffer = b;
    c.dst_offset = dst_offset;
    c.bytes = bytes;
    return copy(c);
  }
  uint64_t kernel(braid_kernel_call k) {
    k.struct_size = sizeof k;
    braid_work w{};
    w.kind = BRAID_WORK_KERNEL;
    w.kernel = &k;
    return submit(w);
  }
  uint64_t fill(braid_buffer_view v, double value) {
    braid_kernel_call k{};
    k.op = BRAID_KOP_FILL;
    k.num_outputs = 1;
    k.outputs[0] = v;
    k.f[0] = value;
    return kernel(k);
  }
  void wait(uint64_t value) { REQUIRE(api->semaphore_wait(sem, value, kMinute) == BRAID_OK); }
  // How the submission that signals `value` ended (after wait(value) or a later one).
  End end(uint64_t value) {
    std::lock_guard lock(g_end_mu);
    auto it = g_ends.find(token(value));
    return it != g_ends.end() ? it->second : End{BRAID_ERR_INTERNAL, "no work_end reported"};
  }
};

}  // namespace

TEST_CASE("cuda: an overlapping copy inside one buffer moves the bytes as memmove does" * doctest::skip(!have_gpu())) {
  // A plain cudaMemcpyAsync is undefined for overlapping ranges: the copy engines move many pieces at
  // once, so with a shift much smaller than the copy, pieces read bytes that others already wrote.
  Direct d;
  constexpr size_t kBytes = size_t(48) << 20;
  std::vector<uint32_t> words(kBytes / 4);
  std::iota(words.begin(), words.end(), 0u);
  std::vector<unsigned char> expect(kBytes), back(kBytes);
  std::memcpy(expect.data(), words.data(), kBytes);
  braid_backend_buffer buf = d.alloc(kBytes);
  d.upload(buf, 0, words.data(), kBytes);
  struct Move {
    uint64_t src, dst, bytes;
  };
  constexpr uint64_t kMiB = uint64_t(1) << 20;
  const Move moves[] = {
      {0, 4, kBytes - 4},                        // up by one word: the destination runs ahead
      {4096 + 4, 4, kBytes - 4096 - 4},          // down by a page
      {3, 1, kBytes / 2},                        // down by two bytes, unaligned
      {64 * 1024 + 1, 64 * 1024 + 1, 1000},      // onto itself
      {100, 20 * kMiB + 100, 24 * kMiB},         // up by 20 MiB, more than one bounce piece
      {30 * kMiB + 8, 2 * kMiB + 8, 16 * kMiB},  // down by 28 MiB, ranges touching
  };
  std::vector<uint64_t> moved;
  for (const Move& m : moves) {
    moved.push_back(d.move(buf, m.src, m.dst, m.bytes));
    std::memmove(expect.data() + m.dst, expect.data() + m.src, m.bytes);
  }
  const uint64_t got = d.download(buf, 0, back.data(), kBytes);
  d.wait(got);
  for (uint64_t v : moved) CHECK_MESSAGE(d.end(v).status == BRAID_OK, d.end(v).message);
  CHECK(d.end(got).status == BRAID_OK);
  const auto diff = std::mismatch(expect.begin(), expect.end(), back.begin());
  CHECK_MESSAGE(diff.first == expect.end(), "first wrong byte at offset ", diff.first - expect.begin());
}

TEST_CASE("cuda: matmul of a view whose row stride exceeds int goes through scratch" * doctest::skip(!have_gpu())) {
  // cuBLAS takes leading dimensions as int. A row stride of 2^31 elements passed as it is wraps to
  // INT_MIN (cuBLAS refuses it); past 2^32 it would wrap to a small stride and read the wrong rows.
  Direct d;
  constexpr int64_t kRowStride = int64_t(1) << 31;
  braid_backend_buffer big = nullptr;
  const braid_status st = d.api->buffer_alloc(d.dev, uint64_t(kRowStride + 2) * 4, &big);
  if (st == BRAID_ERR_OUT_OF_MEMORY) {
    MESSAGE("not run: the case needs an 8 GiB buffer on the device");
    return;
  }
  REQUIRE(st == BRAID_OK);
  d.buffers.push_back(big);
  const float a0[2] = {1, 2}, a1[2] = {3, 4}, b[4] = {5, 6, 7, 8};
  float out[4] = {};
  d.upload(big, 0, a0, sizeof a0);
  d.upload(big, uint64_t(kRowStride) * 4, a1, sizeof a1);
  braid_backend_buffer tb = d.alloc(sizeof b), to = d.alloc(sizeof out);
  d.upload(tb, 0, b, sizeof b);
  braid_kernel_call k{};
  k.op = BRAID_KOP_MATMUL;
  k.num_inputs = 2;
  k.num_outputs = 1;
  k.inputs[0] = dense_view(big, BRAID_FLOAT32, {1, 2, 2});
  k.inputs[0].strides[0] = 0;
  k.inputs[0].strides[1] = kRowStride;
  k.inputs[1] = dense_view(tb, BRAID_FLOAT32, {1, 2, 2});
  k.outputs[0] = dense_view(to, BRAID_FLOAT32, {1, 2, 2});
  const uint64_t product = d.kernel(k);
  const uint64_t got = d.download(to, 0, out, sizeof out);
  d.wait(got);
  const End e = d.end(product);
  CHECK_MESSAGE(e.status == BRAID_OK, e.message);
  CHECK(out[0] == 19.0f);
  CHECK(out[1] == 22.0f);
  CHECK(out[2] == 43.0f);
  CHECK(out[3] == 50.0f);
}

namespace {

// Threads that sleep until the object goes. glibc gives a new thread a cached stack of one that
// exited when it has one; while these hold the cached stacks, a new thread needs fresh memory.
class ParkedThreads {
 public:
  explicit ParkedThreads(int n) {
    for (int i = 0; i < n; ++i)
      threads_.emplace_back([this] {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return go_; });
      });
  }
  ~ParkedThreads() {
    {
      std::lock_guard lock(mu_);
      go_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : threads_) t.join();
  }
  ParkedThreads(const ParkedThreads&) = delete;
  ParkedThreads& operator=(const ParkedThreads&) = delete;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool go_ = false;
  std::vector<std::thread> threads_;
};

uint64_t mapped_bytes() {
  std::ifstream statm("/proc/self/statm");
  uint64_t pages = 0;
  statm >> pages;
  return pages * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

// f() with the address space limited to what is mapped now plus `headroom` bytes; lifted after.
template <typename F>
braid_status with_headroom(uint64_t headroom, F&& f) {
  rlimit old{};
  REQUIRE(getrlimit(RLIMIT_AS, &old) == 0);
  rlimit limited = old;
  limited.rlim_cur = mapped_bytes() + headroom;
  if (old.rlim_cur != RLIM_INFINITY && limited.rlim_cur > old.rlim_cur) limited.rlim_cur = old.rlim_cur;
  REQUIRE(setrlimit(RLIMIT_AS, &limited) == 0);
  const braid_status st = f();
  setrlimit(RLIMIT_AS, &old);
  return st;
}

// Headroom steps: a MiB at a time while set-up is still failing at its small allocations, then a quarter
// more each step. On an H100 the driver reserves far more than 256 MiB of address space when a device
// opens (its memory pool and mappings), so a fixed ceiling there never lets device_open succeed.
constexpr uint64_t kMaxHeadroomMiB = uint64_t(1) << 24;  // 16 TiB
uint64_t next_headroom(uint64_t mib) { return mib < 64 ? mib + 1 : mib + mib / 4; }

}  // namespace

TEST_CASE("cuda: a queue or device that cannot be set up is an error with the reason, never an abort" *
          doctest::skip(!have_gpu())) {
  // With the address space limited to a little more than is mapped, a queue's stream or threads, or a
  // device's pool, stream or pinned flags, cannot all be made. Raising the limit a MiB at a time makes
  // set-up fail at later and later steps - among them the second of a queue's two threads, whose
  // failure used to leave the first one joinable (std::terminate) - until it succeeds. Each failure
  // must be a status with a logged reason; afterwards the device must still work.
  Direct d;  // CUDA, the device and cuBLAS are set up before any limit
  {
    ParkedThreads parked(16);
    int failures = 0;
    bool created = false;
    for (uint64_t mib = 1; mib <= kMaxHeadroomMiB && !created; mib = next_headroom(mib)) {
      take_log();
      braid_backend_queue q = nullptr;
      const braid_status st =
          with_headroom(mib << 20, [&] { return d.api->queue_create(d.dev, BRAID_QUEUE_COMPUTE, &q); });
      if (st == BRAID_OK) {
        created = true;
        d.api->queue_destroy(q);
        continue;
      }
      ++failures;
      CHECK(q == nullptr);
      CHECK_MESSAGE(!take_log().empty(), "queue_create failed (status ", int(st), ") with no reason logged");
    }
    CHECK(created);
    WARN_MESSAGE(failures > 0, "queue_create never failed under the limit: the queue part checked nothing");
    bool opened = false;
    for (uint64_t mib = 1; mib <= kMaxHeadroomMiB && !opened; mib = next_headroom(mib)) {
      take_log();
      braid_backend_device dev = nullptr;
      const braid_status st = with_headroom(mib << 20, [&] { return d.api->device_open(0, &dev); });
      if (st == BRAID_OK) {
        opened = true;
        d.api->device_close(dev);
        continue;
      }
      CHECK(dev == nullptr);
      CHECK_MESSAGE(!take_log().empty(), "device_open failed (status ", int(st), ") with no reason logged");
    }
    CHECK(opened);
  }
  // Nothing was left half-made: the device still runs work.
  const uint32_t in[4] = {1, 2, 3, 4};
  uint32_t out[4] = {};
  braid_backend_buffer b = d.alloc(sizeof in);
  d.upload(b, 0, in, sizeof in);
  d.wait(d.download(b, 0, out, sizeof out));
  CHECK(std::memcmp(in, out, sizeof in) == 0);
}

TEST_CASE("cuda: destroying a queue whose work waits for a value nothing signals ends, failing that work" *
          doctest::skip(!have_gpu())) {
  Direct d;
  braid_backend_semaphore never = nullptr;
  REQUIRE(d.api->semaphore_create(d.dev, 0, &never) == BRAID_OK);
  braid_backend_queue q = nullptr;
  REQUIRE(d.api->queue_create(d.dev, BRAID_QUEUE_COMPUTE, &q) == BRAID_OK);
  braid_work w{};
  w.kind = BRAID_WORK_MARKER;
  w.num_waits = 1;
  w.waits[0] = never;
  w.wait_values[0] = 1;
  const uint64_t v = d.submit(w, q);
  // Time for the queue's submit thread to take the work and sleep in its wait before the destructor
  // starts (the case that hung: a wait begun before the queue was closing).
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> destroyed = done->get_future();
  std::thread destroyer([api = d.api, q, done] {
    api->queue_destroy(q);
    done->set_value();
  });
  if (destroyed.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
    destroyer.detach();  // blocked for good: leave it behind
    FAIL("queue_destroy still blocks after 30 s on a wait that nothing will signal");
  }
  destroyer.join();
  d.wait(v);  // the work ended and signalled
  const End e = d.end(v);
  CHECK(e.status != BRAID_OK);
  MESSAGE("the abandoned work ended with: ", e.message);
  d.api->semaphore_destroy(never);
}

TEST_CASE("cuda: more than 256 checked kernels in flight are all checked" * doctest::skip(!have_gpu())) {
  // A checked kernel (here an int32 division) holds an error flag from launch to completion; there
  // used to be 256 per device and a kernel past them ran unchecked, losing its division by zero. Slow
  // direct convolutions at the head of the stream keep the divisions behind them in flight (launched,
  // each holding its flag) until they finish; the last of 320 divisions divides by zero.
  Direct d;
  constexpr int64_t C = 256, H = 128, W = 128, N = 256;
  braid_backend_buffer x = d.alloc(C * H * W * 8), w = d.alloc(C * C * 9 * 8), y = d.alloc(C * H * W * 8);
  braid_backend_buffer num = d.alloc(N * 4), one = d.alloc(N * 4), zero = d.alloc(N * 4), quo = d.alloc(N * 4);
  d.fill(dense_view(x, BRAID_FLOAT64, {1, C, H, W}), 1.0);
  d.fill(dense_view(w, BRAID_FLOAT64, {C, C, 3, 3}), 1.0);
  d.fill(dense_view(num, BRAID_INT32, {N}), 7);
  d.fill(dense_view(one, BRAID_INT32, {N}), 1);
  d.wait(d.fill(dense_view(zero, BRAID_INT32, {N}), 0));
  braid_kernel_call conv{};
  conv.op = BRAID_KOP_CONV2D;
  conv.num_inputs = 2;
  conv.num_outputs = 1;
  conv.inputs[0] = dense_view(x, BRAID_FLOAT64, {1, C, H, W});
  conv.inputs[1] = dense_view(w, BRAID_FLOAT64, {C, C, 3, 3});
  conv.outputs[0] = dense_view(y, BRAID_FLOAT64, {1, C, H, W});
  conv.i[0] = conv.i[1] = 1;  // stride
  conv.i[2] = conv.i[3] = 1;  // padding: same size out
  std::vector<uint64_t> convs;
  for (int r = 0; r < 8; ++r) convs.push_back(d.kernel(conv));
  constexpr int kDivisions = 320;
  std::vector<uint64_t> divisions;
  for (int i = 0; i < kDivisions; ++i) {
    braid_kernel_call div{};
    div.op = BRAID_KOP_BINARY;
    div.i[0] = BRAID_BINARY_DIV;
    div.num_inputs = 2;
    div.num_outputs = 1;
    div.inputs[0] = dense_view(num, BRAID_INT32, {N});
    div.inputs[1] = dense_view(i + 1 == kDivisions ? zero : one, BRAID_INT32, {N});
    div.outputs[0] = dense_view(quo, BRAID_INT32, {N});
    divisions.push_back(d.kernel(div));
  }
  uint64_t reached = 0;
  d.api->semaphore_query(d.sem, &reached);
  WARN_MESSAGE(reached < convs.back(),
               "the convolutions ended before the divisions were all submitted: "
               "fewer than 257 may have been in flight");
  d.wait(divisions.back());
  for (uint64_t v : convs) CHECK_MESSAGE(d.end(v).status == BRAID_OK, d.end(v).message);
  int failed = 0;
  for (int i = 0; i + 1 < kDivisions; ++i) failed += d.end(divisions[size_t(i)]).status != BRAID_OK;
  CHECK(failed == 0);
  const End bad = d.end(divisions.back());
  CHECK(bad.status == BRAID_ERR_KERNEL);
  CHECK_MESSAGE(bad.message.find("division by zero") != std::string::npos, bad.message);
}

namespace {
// Runs `check` on a compute queue of device 0, with tokens whose ends g_ends records.
void with_kernels_queue(void (*check)(const braid_backend_api*, braid_backend_device, braid_backend_queue,
                                      const test::KernelsProbe&)) {
  Plugin p;
  REQUIRE(p.api() != nullptr);
  const braid_backend_api* api = p.api();
  braid_backend_device dev = nullptr;
  braid_backend_queue queue = nullptr;
  REQUIRE(api->device_open(0, &dev) == BRAID_OK);
  REQUIRE(api->queue_create(dev, BRAID_QUEUE_COMPUTE, &queue) == BRAID_OK);
  std::deque<char> tokens;
  const test::KernelsProbe probe{[&tokens] {
                                   void* token = &tokens.emplace_back();
                                   std::lock_guard lock(g_end_mu);
                                   g_ends.erase(token);  // an earlier case's token at the same address
                                   return token;
                                 },
                                 [](void* token) {
                                   std::lock_guard lock(g_end_mu);
                                   const End& e = g_ends[token];
                                   return test::WorkEnd{e.count, e.status, e.message};
                                 }};
  check(api, dev, queue, probe);
  api->queue_destroy(queue);
  api->device_close(dev);
}
}  // namespace

TEST_CASE("cuda: a KERNELS submission runs its calls in order on the stream, persistent or copied" *
          doctest::skip(!have_gpu())) {
  with_kernels_queue(test::check_kernels_chain);
}

TEST_CASE("cuda: a call failing on the device ends a KERNELS submission, naming the call, and skips the rest" *
          doctest::skip(!have_gpu())) {
  with_kernels_queue(test::check_kernels_failure);
}
