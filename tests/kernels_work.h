// KERNELS submissions (ABI 1.3) every plugin must run the same way: the calls in order as one
// submission, each seeing the writes of the calls before it; a failing call (a label out of range,
// found on the device by GPU backends) ends the submission with its status and a message naming its
// index and op, the calls after it skipped; calls that are not persistent are copied at queue_submit.
// The cpu, vulkan and cuda plugin suites run it on one of their queues. A suite supplies tokens and
// reads back what its host's work_end was told for them (KernelsProbe); the data moves by COPY work.
#pragma once
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include "braid_backend.h"

namespace test {

struct WorkEnd {
  int count = 0;  // work_end calls for the token
  braid_status status = BRAID_OK;
  std::string message;
};

struct KernelsProbe {
  std::function<void*()> token;          // a fresh token for the suite's work_end
  std::function<WorkEnd(void*)> end_of;  // what work_end was told for it so far
};

namespace kernels_detail {

constexpr uint64_t kMinute = uint64_t{60} * 1000 * 1000 * 1000;

struct Rig {
  const braid_backend_api* api;
  braid_backend_device dev;
  braid_backend_queue queue;
  braid_backend_semaphore sem = nullptr;
  uint64_t value = 0;
  std::vector<braid_backend_buffer> buffers;

  Rig(const braid_backend_api* a, braid_backend_device d, braid_backend_queue q) : api(a), dev(d), queue(q) {
    REQUIRE(api->semaphore_create(dev, 0, &sem) == BRAID_OK);
  }
  ~Rig() {
    for (auto b : buffers) api->buffer_free(dev, b);
    api->semaphore_destroy(sem);
  }
  braid_backend_buffer buffer(uint64_t bytes) {
    braid_backend_buffer b = nullptr;
    REQUIRE(api->buffer_alloc(dev, bytes, &b) == BRAID_OK);
    buffers.push_back(b);
    return b;
  }
  braid_work work(braid_work_kind kind) {
    braid_work w{};
    w.struct_size = sizeof w;
    w.kind = kind;
    w.signal = sem;
    w.signal_value = ++value;
    return w;
  }
  // Submits w (which signals the next value) and waits for it.
  void run(const braid_work& w) {
    REQUIRE(api->queue_submit(queue, &w) == BRAID_OK);
    REQUIRE(api->semaphore_wait(sem, w.signal_value, kMinute) == BRAID_OK);
  }
  void copy(const void* src_host, braid_backend_buffer src, void* dst_host, braid_backend_buffer dst, uint64_t bytes) {
    braid_copy_desc c{};
    c.struct_size = sizeof c;
    c.src_host = src_host;
    c.src_buffer = src;
    c.dst_host = dst_host;
    c.dst_buffer = dst;
    c.bytes = bytes;
    braid_work w = work(BRAID_WORK_COPY);
    w.copy = &c;
    run(w);
  }
  template <typename T>
  void upload(braid_backend_buffer b, const std::vector<T>& v) {
    copy(v.data(), nullptr, nullptr, b, v.size() * sizeof(T));
  }
  template <typename T>
  std::vector<T> download(braid_backend_buffer b, size_t n) {
    std::vector<T> v(n);
    copy(nullptr, b, v.data(), nullptr, n * sizeof(T));
    return v;
  }
};

inline braid_buffer_view view(braid_backend_buffer b, braid_dtype dtype, std::initializer_list<int64_t> shape) {
  braid_buffer_view v{};
  v.buffer = b;
  v.dtype = dtype;
  for (int64_t s : shape) v.shape[v.ndim++] = s;
  int64_t stride = 1;
  for (int k = v.ndim - 1; k >= 0; --k) {
    v.strides[k] = stride;
    stride *= v.shape[k];
  }
  return v;
}

inline braid_kernel_call fill(braid_backend_buffer out, int64_t n, double value) {
  braid_kernel_call k{};
  k.struct_size = sizeof k;
  k.op = BRAID_KOP_FILL;
  k.num_outputs = 1;
  k.outputs[0] = view(out, BRAID_FLOAT32, {n});
  k.f[0] = value;
  return k;
}

inline braid_kernel_call binary(braid_binary_op op, braid_backend_buffer a, braid_backend_buffer b,
                                braid_backend_buffer out, int64_t n) {
  braid_kernel_call k{};
  k.struct_size = sizeof k;
  k.op = BRAID_KOP_BINARY;
  k.num_inputs = 2;
  k.num_outputs = 1;
  k.inputs[0] = view(a, BRAID_FLOAT32, {n});
  k.inputs[1] = view(b, BRAID_FLOAT32, {n});
  k.outputs[0] = view(out, BRAID_FLOAT32, {n});
  k.i[0] = op;
  return k;
}

inline braid_kernel_call negate(braid_backend_buffer in, braid_backend_buffer out, int64_t n) {
  braid_kernel_call k{};
  k.struct_size = sizeof k;
  k.op = BRAID_KOP_UNARY;
  k.num_inputs = 1;
  k.num_outputs = 1;
  k.inputs[0] = view(in, BRAID_FLOAT32, {n});
  k.outputs[0] = view(out, BRAID_FLOAT32, {n});
  k.i[0] = BRAID_UNARY_NEG;
  return k;
}

// loss[N] = softmax cross entropy of logits [N, K] against int32 labels [N].
inline braid_kernel_call softmax_ce(braid_backend_buffer logits, braid_backend_buffer labels, braid_backend_buffer loss,
                                    int64_t n, int64_t k_classes) {
  braid_kernel_call k{};
  k.struct_size = sizeof k;
  k.op = BRAID_KOP_SOFTMAX_CE;
  k.num_inputs = 2;
  k.num_outputs = 1;
  k.inputs[0] = view(logits, BRAID_FLOAT32, {n, k_classes});
  k.inputs[1] = view(labels, BRAID_INT32, {n});
  k.outputs[0] = view(loss, BRAID_FLOAT32, {n});
  return k;
}

inline bool all_equal(const std::vector<float>& v, float want) {
  for (float x : v)
    if (x != want) return false;
  return true;
}

}  // namespace kernels_detail

// A chain of three calls, each reading the one before, gives exact results, persistent or copied.
inline void check_kernels_chain(const braid_backend_api* api, braid_backend_device dev, braid_backend_queue queue,
                                const KernelsProbe& probe) {
  using namespace kernels_detail;
  constexpr int64_t kN = int64_t{1} << 16;  // large enough that a missing barrier would show on a GPU
  Rig r(api, dev, queue);
  braid_backend_buffer a = r.buffer(kN * 4), b = r.buffer(kN * 4), c = r.buffer(kN * 4);

  SUBCASE("persistent calls") {
    // a = 1.5; b = a * a = 2.25; c = b + a = 3.75 (all exact in float32)
    const braid_kernel_call calls[3] = {fill(a, kN, 1.5), binary(BRAID_BINARY_MUL, a, a, b, kN),
                                        binary(BRAID_BINARY_ADD, b, a, c, kN)};
    braid_work w = r.work(BRAID_WORK_KERNELS);
    w.num_kernels = 3;
    w.kernels = calls;
    w.token = probe.token();
    w.flags = BRAID_WORK_PERSISTENT_DESCS;
    r.run(w);
    const WorkEnd end = probe.end_of(w.token);
    CHECK(end.count == 1);
    CHECK(end.status == BRAID_OK);
    CHECK(all_equal(r.download<float>(a, kN), 1.5f));
    CHECK(all_equal(r.download<float>(b, kN), 2.25f));
    CHECK(all_equal(r.download<float>(c, kN), 3.75f));
  }
  SUBCASE("copied calls: the caller's array is overwritten once queue_submit returns") {
    // The work waits for a semaphore only the host signals, so it cannot have run (nor, on a GPU, been
    // recorded) before its caller's array is spoiled.
    braid_backend_semaphore gate = nullptr;
    REQUIRE(api->semaphore_create(dev, 0, &gate) == BRAID_OK);
    std::vector<braid_kernel_call> calls = {fill(a, kN, 2.0), negate(a, b, kN), binary(BRAID_BINARY_SUB, a, b, c, kN)};
    uint64_t gate_value = 0;
    for (void* token : {probe.token(), static_cast<void*>(nullptr)}) {
      CAPTURE(token != nullptr);
      braid_work w = r.work(BRAID_WORK_KERNELS);
      w.num_kernels = 3;
      w.kernels = calls.data();
      w.token = token;  // no BRAID_WORK_PERSISTENT_DESCS: the plugin must copy the calls
      w.num_waits = 1;
      w.waits[0] = gate;
      w.wait_values[0] = ++gate_value;
      REQUIRE(api->queue_submit(queue, &w) == BRAID_OK);
      const std::vector<braid_kernel_call> original = calls;
      for (auto& k : calls) k = fill(c, kN, 99.0);  // a different, valid call in each slot...
      std::memset(static_cast<void*>(calls.data() + 1), 0xff, sizeof(braid_kernel_call));  // ...or garbage
      REQUIRE(api->semaphore_signal(gate, w.wait_values[0]) == BRAID_OK);
      REQUIRE(api->semaphore_wait(r.sem, w.signal_value, kMinute) == BRAID_OK);
      if (token != nullptr) {
        const WorkEnd end = probe.end_of(token);
        CHECK(end.count == 1);
        CHECK(end.status == BRAID_OK);
      }
      CHECK(all_equal(r.download<float>(a, kN), 2.0f));
      CHECK(all_equal(r.download<float>(b, kN), -2.0f));
      CHECK(all_equal(r.download<float>(c, kN), 4.0f));
      calls = original;
      r.upload(c, std::vector<float>(kN, 0.0f));
    }
    api->semaphore_destroy(gate);
  }
}

// A call that fails on bad data (a label outside [0, K), seen on the device by GPU backends) ends the
// submission: work_end gets BRAID_ERR_KERNEL naming the call, the calls after it do not run, and the
// queue goes on. With good labels the same submission runs to its end.
inline void check_kernels_failure(const braid_backend_api* api, braid_backend_device dev, braid_backend_queue queue,
                                  const KernelsProbe& probe) {
  using namespace kernels_detail;
  constexpr int64_t kRows = 2, kClasses = 3, kN = 256;
  Rig r(api, dev, queue);
  braid_backend_buffer logits = r.buffer(kRows * kClasses * 4), labels = r.buffer(kRows * 4),
                       loss = r.buffer(kRows * 4);
  braid_backend_buffer c = r.buffer(kN * 4), d = r.buffer(kN * 4);
  for (const bool persistent : {false, true})
    for (const bool bad : {true, false}) {
      CAPTURE(persistent);
      CAPTURE(bad);
      r.upload(labels, std::vector<int32_t>{1, bad ? 7 : 2});
      r.upload(c, std::vector<float>(kN, 42.0f));
      r.upload(d, std::vector<float>(kN, 42.0f));
      std::vector<braid_kernel_call> calls = {fill(logits, kRows * kClasses, 0.0),
                                              softmax_ce(logits, labels, loss, kRows, kClasses), fill(c, kN, 7.0),
                                              negate(c, d, kN)};
      braid_work w = r.work(BRAID_WORK_KERNELS);
      w.num_kernels = static_cast<uint32_t>(calls.size());
      w.kernels = calls.data();
      w.token = probe.token();
      w.flags = persistent ? BRAID_WORK_PERSISTENT_DESCS : 0u;
      REQUIRE(api->queue_submit(queue, &w) == BRAID_OK);
      if (!persistent) std::memset(static_cast<void*>(calls.data()), 0xff, calls.size() * sizeof(braid_kernel_call));
      // With a token a failure is reported through work_end; the semaphore is still signalled.
      REQUIRE(api->semaphore_wait(r.sem, w.signal_value, kMinute) == BRAID_OK);
      const WorkEnd end = probe.end_of(w.token);
      CHECK(end.count == 1);
      if (bad) {
        CHECK(end.status == BRAID_ERR_KERNEL);
        CAPTURE(end.message);
        CHECK(end.message.find("call 1 of 4") != std::string::npos);
        CHECK(end.message.find("softmax_cross_entropy") != std::string::npos);
        CHECK(all_equal(r.download<float>(c, kN), 42.0f));  // skipped
        CHECK(all_equal(r.download<float>(d, kN), 42.0f));
      } else {
        CHECK(end.status == BRAID_OK);
        CHECK(all_equal(r.download<float>(c, kN), 7.0f));
        CHECK(all_equal(r.download<float>(d, kN), -7.0f));
        const std::vector<float> l = r.download<float>(loss, kRows);
        CHECK(l[0] == doctest::Approx(1.0986123).epsilon(1e-5));  // log 3: uniform logits
        CHECK(l[1] == doctest::Approx(1.0986123).epsilon(1e-5));
      }
    }
  // The queue goes on, also after a failed submission.
  const braid_kernel_call one = fill(c, kN, 5.0);
  braid_work w = r.work(BRAID_WORK_KERNEL);
  w.kernel = &one;
  r.run(w);
  CHECK(all_equal(r.download<float>(c, kN), 5.0f));
}

}  // namespace test
