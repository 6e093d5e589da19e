// ABI tests, plugin loading by ABI version: the fake plugins of tests/abi/plugins (built into
// BRAID_TEST_PLUGIN_DIR, never next to libbraid) that announce another major or minor version.

#include "abi_common.h"

using namespace abi_test;

// ================================================================================================
TEST_SUITE("plugins") {

TEST_CASE("abi_major2: a plugin that refuses host major 1 is listed, not loaded") {
  CleanPluginEnv env;
  Context c("abi_major2");
  REQUIRE_CREATED(c);
  auto b = backend_named(c.ctx, "abi_major2");
  CHECK(b.loaded == 0);
  CHECK(b.device_count == 0);
  CHECK(b.abi_major == 0);  // it reported no table
  CHECK(ends_with(b.path, "/libbraid-backend-abi_major2.so"));
  CHECK_CONTAINS(b.reason, "major version mismatch");
  CHECK_CONTAINS(b.reason, std::to_string(BRAID_BACKEND_ABI_MAJOR) + "." + std::to_string(BRAID_BACKEND_ABI_MINOR));
  CHECK(c.devices() == 0);
}

TEST_CASE("abi_table_major2: a table of major 2 is refused and never called") {
  CleanPluginEnv env;
  PluginProbe probe("abi_table_major2");
  const auto before = probe.counters();
  {
    Context c("abi_table_major2");
    REQUIRE_CREATED(c);
    auto b = backend_named(c.ctx, "abi_table_major2");
    CHECK(b.loaded == 0);
    CHECK(b.device_count == 0);
    CHECK(b.abi_major == 2);
    CHECK(b.abi_minor == 3);
    CHECK_CONTAINS(b.reason, "major version mismatch");
    CHECK_CONTAINS(b.reason, "2.3");
    CHECK(c.devices() == 0);
  }
  const auto after = probe.counters();
  CHECK(after[FAKE_QUERIES] - before[FAKE_QUERIES] == 1);
  CHECK(after[FAKE_DEVICE_COUNT_CALLS] == before[FAKE_DEVICE_COUNT_CALLS]);  // nothing in the table was called
  CHECK(after[FAKE_LIVE_DEVICES] == 0);
}

TEST_CASE("older_minor: a plugin of ABI 1.0 (shorter table) is accepted; 1.1 fields are not read") {
  CleanPluginEnv env;
  PluginProbe probe("older_minor");
  const auto before = probe.counters();
  {
    Context c("older_minor");
    REQUIRE_CREATED(c);
    auto b = backend_named(c.ctx, "older_minor");
    CHECK(b.loaded == 1);
    CHECK(b.abi_minor == 0);
    CHECK(b.reason.empty());
    REQUIRE(c.devices() == 1);
    braid_device_info info{};
    info.struct_size = sizeof info;
    REQUIRE_OK(braid_context_device_info(c.ctx, 0, &info));
    CHECK(std::string(info.id) == "older_minor:0");
    CHECK(std::string(info.properties_json) == "{}");
    const int64_t shape[1] = {3};
    const float src[3] = {1, 2, 3};
    Tensor x;
    REQUIRE_OK(braid_tensor_from_host(c.ctx, 0, BRAID_FLOAT32, 1, shape, src, sizeof src, x.out()));
    CHECK(to_host<float>(x.t, 3) == std::vector<float>(src, src + 3));
  }
  CHECK(probe.counters()[FAKE_UNEXPECTED_CALLS] == before[FAKE_UNEXPECTED_CALLS]);
}

TEST_CASE("newer_minor: a plugin of a newer minor with a larger table is accepted and usable") {
  CleanPluginEnv env;
  PluginProbe probe("newer_minor");
  const auto before = probe.counters();
  {
    Context c("newer_minor");
    REQUIRE_CREATED(c);
    auto b = backend_named(c.ctx, "newer_minor");
    CHECK(b.loaded == 1);
    CHECK(b.abi_major == BRAID_BACKEND_ABI_MAJOR);
    CHECK(b.abi_minor == BRAID_BACKEND_ABI_MINOR + 1);
    CHECK(b.device_count == 1);
    CHECK(b.reason.empty());
    CHECK(ends_with(b.path, "/libbraid-backend-newer_minor.so"));
    REQUIRE(c.devices() == 1);

    // The host opened the device: 3 queues and 3 timeline semaphores (compute, transfer, and the
    // comm compute queue of the collectives).
    auto open = probe.counters();
    CHECK(open[FAKE_LIVE_DEVICES] == 1);
    CHECK(open[FAKE_LIVE_QUEUES] == 3);
    CHECK(open[FAKE_LIVE_SEMAPHORES] == 3);

    braid_device dev = -1;
    REQUIRE_OK(braid_context_find_device(c.ctx, "newer_minor:0", &dev));
    CHECK(dev == 0);
    braid_device_info info{};
    info.struct_size = sizeof info;
    REQUIRE_OK(braid_context_device_info(c.ctx, dev, &info));
    CHECK(std::string(info.id) == "newer_minor:0");
    CHECK(std::string(info.backend) == "newer_minor");
    CHECK(std::string(info.name) == "braid fake device 0 (newer_minor)");
    CHECK(info.kind == BRAID_DEVICE_OTHER);
    CHECK(info.backend_index == 0);
    CHECK(info.uuid[0] == 0xB0);
    CHECK(info.uuid[15] == 0xBF);
    CHECK(info.memory_bytes == (1ull << 30));
    CHECK(info.compute_units == 3);
    CHECK(info.compute_queues == 1);
    CHECK(info.transfer_queues == 1);
    CHECK(info.l1_cache_bytes == 32 * 1024);
    CHECK(info.l2_cache_bytes == 1024 * 1024);
    CHECK(info.l3_cache_bytes == 0);
    CHECK(info.dtype_mask == 0);
    CHECK(std::string(info.properties_json) == R"({"fake_heaps":[{"bytes":1073741824}],"fake_subgroup":7})");

    // No kernels: every creation op fails synchronously with a message naming op, backend and device.
    const int64_t shape[2] = {2, 3};
    braid_tensor t = reinterpret_cast<braid_tensor>(uintptr_t{0x1});
    CHECK_FAILS(braid_full(c.ctx, dev, BRAID_FLOAT32, 2, shape, 1.0, &t), BRAID_ERR_UNSUPPORTED, "braid_full",
                "the newer_minor backend has no float32 kernel");
    CHECK_CONTAINS(braid_last_error(), "newer_minor:0");
    CHECK(t == nullptr);
    CHECK_FAILS(braid_full(c.ctx, dev, BRAID_INT64, 2, shape, 1.0, &t), BRAID_ERR_UNSUPPORTED, "braid_full", "int64");
    CHECK_FAILS(braid_arange(c.ctx, dev, BRAID_FLOAT64, 0, 4, 1, &t), BRAID_ERR_UNSUPPORTED, "braid_arange",
                "newer_minor");
    CHECK_FAILS(braid_random_uniform(c.ctx, dev, BRAID_FLOAT32, 2, shape, 0, 1, &t), BRAID_ERR_UNSUPPORTED,
                "braid_random_uniform", "newer_minor");

    // Memory and copies work: from_host, write_host (an upload through the transfer queue), to_host.
    {
      const float src[6] = {1, 2, 3, 4, 5, 6};
      Tensor x;
      REQUIRE_OK(braid_tensor_from_host(c.ctx, dev, BRAID_FLOAT32, 2, shape, src, sizeof src, x.out()));
      CHECK(to_host<float>(x.t, 6) == std::vector<float>(src, src + 6));
      const float next[6] = {-1, -2, -3, -4, -5, -6};
      REQUIRE_OK(braid_tensor_write_host(x.t, next, sizeof next));
      CHECK(to_host<float>(x.t, 6) == std::vector<float>(next, next + 6));
      CHECK_OK(braid_tensor_wait_to_read(x.t));
      // An op that needs a kernel on an existing tensor is refused up front, too.
      Tensor y;
      CHECK(braid_unary(BRAID_UNARY_NEG, x.t, y.out()) == BRAID_ERR_UNSUPPORTED);
      CHECK(y.t == nullptr);
      braid_memory_stats ms{};
      ms.struct_size = sizeof ms;
      REQUIRE_OK(braid_memory_stats_get(c.ctx, dev, &ms));
      CHECK(ms.allocated_bytes >= sizeof src);
      CHECK(probe[FAKE_LIVE_BUFFERS] >= 1);
    }
    CHECK_OK(braid_wait_all(c.ctx));
    CHECK_OK(braid_memory_empty_cache(c.ctx, dev));
    CHECK(probe[FAKE_SUBMISSIONS] > before[FAKE_SUBMISSIONS]);
  }
  // Release is clean: everything the host created is destroyed and the query is balanced.
  const auto after = probe.counters();
  CHECK(after[FAKE_LIVE_DEVICES] == 0);
  CHECK(after[FAKE_LIVE_QUEUES] == 0);
  CHECK(after[FAKE_LIVE_SEMAPHORES] == 0);
  CHECK(after[FAKE_LIVE_BUFFERS] == 0);
  CHECK(after[FAKE_QUERIES] - before[FAKE_QUERIES] == 1);
  CHECK(after[FAKE_SHUTDOWNS] - before[FAKE_SHUTDOWNS] == 1);
  CHECK(after[FAKE_UNEXPECTED_CALLS] == before[FAKE_UNEXPECTED_CALLS]);  // no kernel, no 1.1 function
}

}  // TEST_SUITE("plugins")
