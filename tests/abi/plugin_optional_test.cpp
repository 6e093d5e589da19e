// Plugin ABI 1.4: optional entries with host defaults, the required ones refused by name, a 1.3 table
// read only up to its struct_size, supports_call and get_proc_address. Through the C API (a context
// over the fake plugins) and through the host's loader itself (runtime/plugin/backend.cpp is compiled
// into this file's executable: libbraid exports only the C API), which is where Backend::proc and the
// table the host calls through live.
#include <cstring>

#include "abi_common.h"
#include "plugin/backend.h"

using namespace abi_test;

namespace {

// The host callbacks a direct load_backend passes; the plugins only need them present.
int32_t begin_work(void*) { return 1; }
void end_work(void*, braid_status, const char*) {}
const braid_host_api kHost = {
    sizeof(braid_host_api), BRAID_BACKEND_ABI_MAJOR, BRAID_BACKEND_ABI_MINOR, nullptr, begin_work, end_work};

std::unique_ptr<braid::Backend> load(const std::string& name) {
  auto b = braid::load_backend(name, plugin_file(name), &kHost);
  REQUIRE(b != nullptr);
  return b;
}

// From tests/abi/plugins/extension.c.
constexpr const char* kLastCall = "braid_ext_braidtest_last_call";
using LastCallFn = int64_t (*)(braid_kernel_call* out);

}  // namespace

TEST_SUITE("plugin ABI 1.4") {

TEST_CASE("optional entries left NULL get the host's defaults, and the plugin works") {
  CleanPluginEnv env;
  PluginProbe probe("optional_entries");
  const auto before = probe.counters();
  {
    Context c("optional_entries");
    REQUIRE_CREATED(c);
    auto b = backend_named(c.ctx, "optional_entries");
    CHECK(b.loaded == 1);
    CHECK(b.abi_minor == BRAID_BACKEND_ABI_MINOR);
    REQUIRE(b.device_count == 1);
    braid_device dev = -1;
    REQUIRE_OK(braid_context_find_device(c.ctx, "optional_entries:0", &dev));
    braid_device_info info{};
    info.struct_size = sizeof info;
    REQUIRE_OK(braid_context_device_info(c.ctx, dev, &info));
    CHECK(std::string(info.properties_json) == "{}");  // device_props_json NULL: none
    // Not host visible (buffer_host_pointer NULL): data goes both ways through queue_submit copies.
    const float data[6] = {1, 2, 3, 4, 5, 6};
    const int64_t shape[2] = {2, 3};
    Tensor t;
    REQUIRE_OK(braid_tensor_from_host(c.ctx, dev, BRAID_FLOAT32, 2, shape, data, sizeof data, t.out()));
    CHECK(to_host<float>(t.t, 6) == std::vector<float>(data, data + 6));
    CHECK(probe[FAKE_SUBMISSIONS] > before[FAKE_SUBMISSIONS]);
  }
  CHECK(probe[FAKE_UNEXPECTED_CALLS] == before[FAKE_UNEXPECTED_CALLS]);
  CHECK(probe[FAKE_LIVE_DEVICES] == 0);
  CHECK(probe[FAKE_LIVE_BUFFERS] == 0);
  CHECK(probe[FAKE_SHUTDOWNS] == before[FAKE_SHUTDOWNS]);  // shutdown NULL: nothing was called

  // The table the host calls through has every defaulted entry set; the plugin's own stays NULL.
  auto b = load("optional_entries");
  REQUIRE(b->loaded);
  REQUIRE(b->api != nullptr);
  CHECK(b->api != b->plugin_api);
  CHECK((b->plugin_api->queue_flush == nullptr));
  REQUIRE((b->api->queue_flush != nullptr));
  CHECK(b->api->queue_flush(nullptr) == BRAID_OK);  // nothing to flush
  REQUIRE((b->api->buffer_host_pointer != nullptr));
  CHECK(b->api->buffer_host_pointer(nullptr) == nullptr);  // nothing host visible
  REQUIRE((b->api->device_props_json != nullptr));
  CHECK(b->api->device_props_json(0) == nullptr);
  CHECK((b->api->shutdown != nullptr));
  // No supports_call (the host answers by supports alone) and no extensions.
  CHECK((b->api->supports_call == nullptr));
  CHECK(b->proc(kLastCall) == nullptr);
  CHECK(b->proc("braid_ext_anything") == nullptr);
  CHECK(b->proc(nullptr) == nullptr);
}

TEST_CASE("a NULL required entry is refused, naming it") {
  CleanPluginEnv env;
  PluginProbe probe("required_hole");
  const auto before = probe.counters();
  {
    Context c("required_hole");
    REQUIRE_CREATED(c);
    auto b = backend_named(c.ctx, "required_hole");
    CHECK(b.loaded == 0);
    CHECK(b.device_count == 0);
    CHECK_CONTAINS(b.reason, "lacks semaphore_fail");
    CHECK(b.reason.find("queue_flush") == std::string::npos);  // optional in a 1.4 table
    CHECK(c.devices() == 0);
  }
  CHECK(probe[FAKE_DEVICE_COUNT_CALLS] == before[FAKE_DEVICE_COUNT_CALLS]);
  CHECK(probe[FAKE_SHUTDOWNS] - before[FAKE_SHUTDOWNS] == probe[FAKE_QUERIES] - before[FAKE_QUERIES]);
}

TEST_CASE("a 1.3 table loads and its 1.4 entries, past struct_size, are never read") {
  CleanPluginEnv env;
  PluginProbe probe("minor3");
  const auto before = probe.counters();
  {
    Context c("minor3");
    REQUIRE_CREATED(c);
    auto b = backend_named(c.ctx, "minor3");
    CHECK(b.loaded == 1);
    CHECK(b.abi_minor == 3);
    CHECK(b.device_count == 1);
    braid_device dev = -1;
    REQUIRE_OK(braid_context_find_device(c.ctx, "minor3:0", &dev));
    const int32_t data[3] = {7, 8, 9};
    const int64_t shape[1] = {3};
    Tensor t;
    REQUIRE_OK(braid_tensor_from_host(c.ctx, dev, BRAID_INT32, 1, shape, data, sizeof data, t.out()));
    CHECK(to_host<int32_t>(t.t, 3) == std::vector<int32_t>(data, data + 3));
  }
  auto b = load("minor3");
  REQUIRE(b->loaded);
  CHECK((b->api->supports_call == nullptr));
  CHECK(b->proc(kLastCall) == nullptr);
  CHECK(probe[FAKE_UNEXPECTED_CALLS] == before[FAKE_UNEXPECTED_CALLS]);
}

TEST_CASE("supports_call sees the whole call, and its refusal fails the op with BRAID_ERR_UNSUPPORTED") {
  CleanPluginEnv env;
  PluginProbe probe("extension");
  const auto before = probe.counters();
  {
    Context c("extension");
    REQUIRE_CREATED(c);
    braid_device dev = -1;
    REQUIRE_OK(braid_context_find_device(c.ctx, "extension:0", &dev));
    const int64_t shape[2] = {2, 3};
    Tensor t;
    // supports(FILL, float32) says yes, supports_call says no: refused before anything is submitted,
    // in the message style of a missing kernel (op, dtype, device).
    const auto submissions = probe[FAKE_SUBMISSIONS];
    CHECK_FAILS(braid_full(c.ctx, dev, BRAID_FLOAT32, 2, shape, 7.5, t.out()), BRAID_ERR_UNSUPPORTED, "braid_full",
                "the extension backend has no float32 kernel for this op on extension:0");
    CHECK(t.t == nullptr);
    CHECK(probe[FAKE_SUBMISSIONS] == submissions);
    // supports() says no to float64: supports_call is not asked.
    CHECK_FAILS(braid_full(c.ctx, dev, BRAID_FLOAT64, 2, shape, 1.0, t.out()), BRAID_ERR_UNSUPPORTED, "braid_full",
                "float64");
  }
  CHECK(probe[FAKE_UNEXPECTED_CALLS] == before[FAKE_UNEXPECTED_CALLS]);

  // The extension hook, through the host's lookup: what supports_call saw was the whole call.
  auto b = load("extension");
  REQUIRE(b->loaded);
  auto last_call = reinterpret_cast<LastCallFn>(b->proc(kLastCall));
  REQUIRE((last_call != nullptr));
  braid_kernel_call seen{};
  CHECK(last_call(&seen) == 1);  // once: the float64 fill never reached it
  CHECK(seen.op == BRAID_KOP_FILL);
  CHECK(seen.struct_size == sizeof(braid_kernel_call));
  REQUIRE(seen.num_outputs == 1);
  CHECK(seen.outputs[0].dtype == BRAID_FLOAT32);
  CHECK(seen.outputs[0].ndim == 2);
  CHECK((seen.outputs[0].shape[0] == 2 && seen.outputs[0].shape[1] == 3));
  CHECK(seen.f[0] == 7.5);
  // Absent names: NULL, from a plugin that has get_proc_address and from one that does not.
  CHECK(b->proc("braid_ext_braidtest_missing") == nullptr);
  CHECK(b->proc("") == nullptr);
  CHECK(load("optional_entries")->proc(kLastCall) == nullptr);
  // A backend that did not load has no extensions either.
  CHECK(load("required_hole")->proc(kLastCall) == nullptr);
}

}  // TEST_SUITE("plugin ABI 1.4")
