// Conformance: the context's device list and the basic life of a tensor (upload, metadata, download,
// overwrite) in every dtype on every device.
#include "harness.h"

using harness::context;

TEST_CASE("context: finds devices and describes each consistently") {
  const auto devs = harness::devices();
  // The CPU backend is optional at build time; without any device the suite cannot check anything,
  // which must be visible rather than a silent pass.
  WARN_MESSAGE(!devs.empty(), "skipped: no device found; every conformance case below is skipped");
  for (const auto& dev : devs) {
    INFO("device ", dev.id);
    const braid_device_info info = context().device_info(dev.index);
    CHECK(std::string(info.id).find(':') != std::string::npos);
    CHECK(std::string(info.backend).size() > 0);
    CHECK(context().find_device(info.id) == dev.index);
    CHECK((info.dtype_mask & (1u << BRAID_FLOAT32)) != 0);
    // The CPU reference computes in float64 too; a GPU backend may not (its float64 cases then report
    // themselves skipped, see harness::on_device).
    if (dev.id.rfind("cpu:", 0) == 0)
      CHECK((info.dtype_mask & (1u << BRAID_FLOAT64)) != 0);
    else if ((info.dtype_mask & (1u << BRAID_FLOAT64)) == 0)
      MESSAGE("note: ", dev.id, " has no float64 kernels");
    CHECK(info.compute_queues >= 1);
    CHECK(info.transfer_queues >= 1);
  }
  int32_t loaded_devices = 0;
  for (int32_t b = 0; b < context().backend_count(); ++b) {
    const braid_backend_info bi = context().backend_info(b);
    // A plugin without its vendor library still loads (with zero devices); one that does not load at
    // all is broken (unresolved symbol, ABI mismatch) and must not pass as "no device, skipped".
    CHECK_MESSAGE(bi.loaded == 1, "backend ", std::string(bi.name), " at ", std::string(bi.path),
                  " did not load: ", std::string(bi.reason));
    if (bi.loaded) loaded_devices += bi.device_count;
  }
  CHECK(loaded_devices == static_cast<int32_t>(devs.size()));
}

TEST_CASE("context: memory statistics follow an allocation") {
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      INFO("device ", dev.id);
      const braid_memory_stats before = context().memory_stats(dev.index);
      constexpr int64_t kElems = 1 << 18;  // 1 MiB of float32
      auto t = braid::Tensor::zeros(context(), dev.index, BRAID_FLOAT32, {kElems});
      t.wait_to_read();
      const braid_memory_stats during = context().memory_stats(dev.index);
      CHECK(during.allocated_bytes >= before.allocated_bytes + 4 * kElems);
      CHECK(during.peak_allocated_bytes >= during.allocated_bytes);
      CHECK(during.reserved_bytes >= during.allocated_bytes);
      CHECK(during.alloc_count > before.alloc_count);
      t = braid::Tensor();
      context().wait_all();
      context().empty_cache(dev.index);
      context().reset_peak(dev.index);
      const braid_memory_stats after = context().memory_stats(dev.index);
      CHECK(after.reserved_bytes >= after.allocated_bytes);
      CHECK(after.peak_allocated_bytes == after.allocated_bytes);
    });
  }
}

TEST_CASE("tensor: upload, metadata, download and overwrite in every dtype") {
  const braid_dtype all[] = {BRAID_FLOAT32, BRAID_FLOAT64, BRAID_INT32,   BRAID_INT64,
                             BRAID_UINT8,   BRAID_FLOAT16, BRAID_BFLOAT16};
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      for (braid_dtype dt : all) {
        INFO("device ", dev.id, ", dtype ", harness::dtype_name(dt));
        for (const ref::Shape& shape : {ref::Shape{1}, ref::Shape{7}, ref::Shape{3, 33}, ref::Shape{2, 1, 3, 5}}) {
          INFO("shape ", ref::to_string(shape));
          const ref::Array a = harness::sample(shape, dt, 2);
          const braid::Tensor t = harness::upload(dev.index, dt, a);
          CHECK(t.shape() == shape);
          CHECK(t.ndim() == static_cast<int32_t>(shape.size()));
          CHECK(t.dtype() == dt);
          CHECK(t.device() == dev.index);
          CHECK(t.numel() == ref::numel(shape));
          CHECK_CLOSE(harness::download(t), a, 0.0);

          // write_host replaces the contents in program order (u's download gives c's bytes in dt's
          // encoding, including the 16-bit float formats).
          const ref::Array c = harness::sample(shape, dt, 3);
          const braid::Tensor u = harness::upload(dev.index, dt, c);
          std::vector<std::byte> bytes(static_cast<size_t>(t.numel()) * braid_dtype_size(dt));
          u.to_host(bytes);
          t.write_host(bytes);
          CHECK_CLOSE(harness::download(t), c, 0.0);
        }
      }
    });
  }
}

// Past 1 MiB an upload to device memory the host cannot write (vulkan, cuda) reads the caller's buffer
// from the transfer queue and the call waits for it; with an op still reading the tensor, write_host
// copies the data first and returns at once. Either way the caller may reuse its buffer on return.
TEST_CASE("tensor: large uploads are copied before the call returns, also while an op reads the tensor") {
  constexpr int64_t n = int64_t{1} << 19;  // 2 MiB of float32
  std::vector<float> data(static_cast<size_t>(n)), next(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    data[static_cast<size_t>(i)] = static_cast<float>(i % 1000) - 500.0f;
    next[static_cast<size_t>(i)] = static_cast<float>(i % 777);
  }
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      INFO("device ", dev.id);
      std::vector<float> buffer = data;
      braid::Tensor t = braid::Tensor::from_vector(context(), dev.index, {n}, buffer);
      std::fill(buffer.begin(), buffer.end(), -1.0f);  // the call returned: the buffer is the caller's
      CHECK(t.to_vector<float>() == data);
      // A queued reader of t: write_host must not change what it reads, nor wait to return for it.
      const braid::Tensor doubled = t * 2.0;
      buffer = next;
      t.write_host(std::as_bytes(std::span(buffer)));
      std::fill(buffer.begin(), buffer.end(), -2.0f);
      CHECK(t.to_vector<float>() == next);
      const std::vector<float> twice = doubled.to_vector<float>();
      bool all = true;
      for (int64_t i = 0; i < n; ++i) all = all && twice[static_cast<size_t>(i)] == 2.0f * data[static_cast<size_t>(i)];
      CHECK(all);
      // No op in flight on t: the direct path where the device has one.
      buffer = data;
      t.write_host(std::as_bytes(std::span(buffer)));
      std::fill(buffer.begin(), buffer.end(), -3.0f);
      CHECK(t.to_vector<float>() == data);
    });
  }
}

TEST_CASE("tensor: a 0-d tensor has shape {} and one element") {
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      INFO("device ", dev.id);
      const auto t = braid::Tensor::full(context(), dev.index, BRAID_FLOAT64, {}, 2.5);
      CHECK(t.ndim() == 0);
      CHECK(t.numel() == 1);
      CHECK(t.to_vector<double>() == std::vector<double>{2.5});
    });
  }
}

// braid_tensor_host_data: the memory itself on a device whose memory is host memory (after the
// tensor's writers), BRAID_ERR_UNSUPPORTED elsewhere; shared both ways.
TEST_CASE("tensor: host_data shares a CPU tensor's memory after its writers; other devices refuse it") {
  for (const auto& dev : harness::each_device()) {
    INFO("device ", dev.id);
    const auto x = braid::Tensor::from_vector(context(), dev.index, {2, 2}, std::vector<float>{1, 2, 3, 4});
    const auto y = x * 10.0;  // pushed: host_data waits for it
    void* data = nullptr;
    const braid_status st = braid_tensor_host_data(y.get(), &data);
    if (dev.id.rfind("cpu:", 0) != 0) {
      CHECK(st == BRAID_ERR_UNSUPPORTED);
      CHECK(data == nullptr);
      CHECK(std::string(braid_last_error()).find("braid_tensor_to_host") != std::string::npos);
      continue;
    }
    REQUIRE(st == BRAID_OK);
    REQUIRE(data != nullptr);
    auto* p = static_cast<float*>(data);
    CHECK(std::vector<float>(p, p + 4) == std::vector<float>{10, 20, 30, 40});
    p[3] = -1;  // shared: braid reads what was written there
    CHECK(y.to_vector<float>() == std::vector<float>{10, 20, 30, -1});
    const auto empty = braid::Tensor::from_vector(context(), dev.index, {0}, std::vector<float>{});
    CHECK(braid_tensor_host_data(empty.get(), &data) == BRAID_OK);
    CHECK(data == nullptr);
  }
  void* data = nullptr;
  CHECK(braid_tensor_host_data(nullptr, &data) == BRAID_ERR_INVALID_ARGUMENT);
}
