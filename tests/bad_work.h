// Submissions every plugin must refuse at queue_submit with BRAID_ERR_INVALID_ARGUMENT, saying why in a
// debug log line "<plugin>: queue_submit: <reason>" (the checks are backends/common/work_checks.h),
// after which the queue still runs good work. The cpu, vulkan and cuda plugin suites run it on one of
// their queues; `take_log()` returns the lines the plugin logged since the previous call.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include "braid_backend.h"

namespace test {

inline void check_bad_work_is_refused(const braid_backend_api* api, braid_backend_device dev, braid_backend_queue queue,
                                      const std::function<std::vector<std::string>()>& take_log) {
  constexpr uint64_t kBytes = 64;
  braid_backend_buffer buffer = nullptr;
  REQUIRE(api->buffer_alloc(dev, kBytes, &buffer) == BRAID_OK);
  braid_backend_semaphore done = nullptr;
  REQUIRE(api->semaphore_create(dev, 0, &done) == BRAID_OK);
  unsigned char host[2 * kBytes] = {};  // room for a copy that wrongly got through

  // Each case starts from a good host-to-buffer copy and a good fill kernel, and spoils one thing.
  struct Submission {
    braid_work work{};
    braid_kernel_call call{};
    braid_copy_desc copy{};
    Submission(braid_backend_buffer buffer, void* host) {
      work.struct_size = sizeof work;
      work.kind = BRAID_WORK_COPY;
      work.copy = &copy;
      copy.struct_size = sizeof copy;
      copy.src_host = host;
      copy.dst_buffer = buffer;
      copy.bytes = kBytes;
      call.struct_size = sizeof call;
      call.op = BRAID_KOP_FILL;
      call.num_outputs = 1;
      call.outputs[0].buffer = buffer;
      call.outputs[0].dtype = BRAID_FLOAT32;
      call.outputs[0].ndim = 1;
      call.outputs[0].shape[0] = kBytes / 4;
      call.outputs[0].strides[0] = 1;
    }
    void as_kernel() {
      work.kind = BRAID_WORK_KERNEL;
      work.kernel = &call;
      work.copy = nullptr;
    }
    void as_kernels() {  // ABI 1.3: one call
      work.kind = BRAID_WORK_KERNELS;
      work.num_kernels = 1;
      work.kernels = &call;
      work.copy = nullptr;
    }
  };
  // Values outside an enum are written as bytes: a C caller can pass them, C++ cannot name them.
  auto set_int = [](auto& field, int32_t v) { std::memcpy(&field, &v, sizeof v); };
  struct Case {
    const char* reason;
    std::function<void(Submission&)> spoil;
  };
  const Case cases[] = {
      {"work: struct_size too small", [](Submission& s) { s.work.struct_size = 4; }},
      {"work: num_waits exceeds BRAID_MAX_WAITS", [](Submission& s) { s.work.num_waits = BRAID_MAX_WAITS + 1; }},
      {"work: NULL wait semaphore", [](Submission& s) { s.work.num_waits = 1; }},
      {"work: unknown kind", [&](Submission& s) { set_int(s.work.kind, 99); }},
      {"kernel work without a kernel call", [](Submission& s) { s.as_kernel(), s.work.kernel = nullptr; }},
      {"kernel: struct_size too small", [](Submission& s) { s.as_kernel(), s.call.struct_size = 8; }},
      {"kernel: unknown op", [&](Submission& s) { s.as_kernel(), set_int(s.call.op, 999); }},
      {"kernel: bad num_inputs", [](Submission& s) { s.as_kernel(), s.call.num_inputs = -1; }},
      {"kernel: bad num_outputs",
       [](Submission& s) { s.as_kernel(), s.call.num_outputs = BRAID_KERNEL_MAX_OUTPUTS + 1; }},
      {"kernel: output without a buffer", [](Submission& s) { s.as_kernel(), s.call.outputs[0].buffer = nullptr; }},
      {"kernel: an output has an unknown dtype",
       [&](Submission& s) { s.as_kernel(), set_int(s.call.outputs[0].dtype, 99); }},
      {"kernel: an input has an unknown dtype",
       [&](Submission& s) {
         s.as_kernel(), s.call.op = BRAID_KOP_COPY, s.call.num_inputs = 1, s.call.inputs[0] = s.call.outputs[0];
         set_int(s.call.inputs[0].dtype, -1);
       }},
      // ABI 1.3: KERNELS needs the whole braid_work, at least one call, and every call sound.
      {"work: struct_size too small",
       [](Submission& s) { s.work.struct_size = offsetof(braid_work, num_kernels) - 4; }},
      {"kernels work: struct_size too small for ABI 1.3",
       [](Submission& s) { s.as_kernels(), s.work.struct_size = offsetof(braid_work, num_kernels); }},
      {"kernels work without kernel calls", [](Submission& s) { s.as_kernels(), s.work.kernels = nullptr; }},
      {"kernels work with num_kernels 0", [](Submission& s) { s.as_kernels(), s.work.num_kernels = 0; }},
      {"kernels work: num_kernels exceeds 2^20",
       [](Submission& s) { s.as_kernels(), s.work.num_kernels = (1u << 20) + 1; }},
      {"kernels: a call's struct_size is too small", [](Submission& s) { s.as_kernels(), s.call.struct_size = 8; }},
      {"kernel: unknown op", [&](Submission& s) { s.as_kernels(), set_int(s.call.op, 999); }},
      {"kernel: output without a buffer", [](Submission& s) { s.as_kernels(), s.call.outputs[0].buffer = nullptr; }},
      {"copy work without a copy desc", [](Submission& s) { s.work.copy = nullptr; }},
      {"copy: struct_size too small", [](Submission& s) { s.copy.struct_size = 8; }},
      {"copy: exactly one of src_buffer and src_host must be set", [&](Submission& s) { s.copy.src_buffer = buffer; }},
      {"copy: exactly one of dst_buffer and dst_host must be set", [](Submission& s) { s.copy.dst_buffer = nullptr; }},
      {"copy: destination range exceeds its buffer", [](Submission& s) { s.copy.dst_offset = 8; }},
      // An offset near 2^64 must not wrap around into range.
      {"copy: destination range exceeds its buffer", [](Submission& s) { s.copy.dst_offset = UINT64_MAX - 8; }},
      {"copy: source range exceeds its buffer",
       [&](Submission& s) {
         s.copy.src_host = nullptr, s.copy.src_buffer = buffer, s.copy.dst_buffer = nullptr, s.copy.dst_host = host;
         s.copy.bytes = kBytes + 1;
       }},
  };
  take_log();
  for (const Case& c : cases) {
    const std::string reason = c.reason;
    CAPTURE(reason);
    Submission s(buffer, host);
    c.spoil(s);
    REQUIRE(api->queue_submit(queue, &s.work) == BRAID_ERR_INVALID_ARGUMENT);  // else it may run
    const std::vector<std::string> lines = take_log();
    const std::string want = std::string(api->name) + ": queue_submit: " + reason;
    CHECK(std::find(lines.begin(), lines.end(), want) != lines.end());
  }

  // A zero-byte copy may name neither side; then the queue still runs good work in order.
  Submission empty(buffer, host);
  empty.copy.src_host = nullptr;
  empty.copy.dst_buffer = nullptr;
  empty.copy.bytes = 0;
  CHECK(api->queue_submit(queue, &empty.work) == BRAID_OK);
  // A host of ABI 1.2 passes the braid_work without num_kernels and kernels: fine for the old kinds.
  Submission old_host(buffer, host);
  old_host.as_kernel();
  old_host.work.struct_size = offsetof(braid_work, num_kernels);
  CHECK(api->queue_submit(queue, &old_host.work) == BRAID_OK);
  Submission old_copy(buffer, host);
  old_copy.work.struct_size = offsetof(braid_work, num_kernels);
  CHECK(api->queue_submit(queue, &old_copy.work) == BRAID_OK);
  Submission good(buffer, host);
  good.work.signal = done;
  good.work.signal_value = 1;
  REQUIRE(api->queue_submit(queue, &good.work) == BRAID_OK);
  CHECK(api->semaphore_wait(done, 1, uint64_t{60} * 1000 * 1000 * 1000) == BRAID_OK);
  api->semaphore_destroy(done);
  api->buffer_free(dev, buffer);
}

}  // namespace test
