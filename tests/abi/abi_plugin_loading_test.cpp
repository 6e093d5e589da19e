// ABI tests, plugin loading: broken fake plugins are listed with a reason and never break the host;
// BRAID_BACKENDS / BRAID_BACKEND_PATH discovery; device ids; the real cpu backend next to broken plugins.
//
// Cases that need the real CPU backend are skipped when it is not part of the build
// (BRAID_TEST_HAVE_CPU=0).

#include <filesystem>
#include <set>

#include "abi_common.h"

using namespace abi_test;

// ================================================================================================
TEST_SUITE("plugins") {

TEST_CASE("missing_vendor: loads with zero devices and the vendor library as the reason") {
  CleanPluginEnv env;
  PluginProbe probe("missing_vendor");
  const auto before = probe.counters();
  {
    Context c("missing_vendor,newer_minor");
    REQUIRE_CREATED(c);
    auto b = backend_named(c.ctx, "missing_vendor");
    CHECK(b.loaded == 1);
    CHECK(b.device_count == 0);
    CHECK(b.abi_major == BRAID_BACKEND_ABI_MAJOR);
    CHECK(b.reason == "vendor library libbraid-nonexistent-vendor.so.1 not found");
    // The other backend of the context is unaffected.
    auto n = backend_named(c.ctx, "newer_minor");
    CHECK(n.loaded == 1);
    CHECK(n.device_count == 1);
    REQUIRE(c.devices() == 1);
    braid_device dev = -1;
    CHECK_OK(braid_context_find_device(c.ctx, "newer_minor:0", &dev));
    CHECK_FAILS(braid_context_find_device(c.ctx, "missing_vendor:0", &dev), BRAID_ERR_NOT_FOUND,
                "braid_context_find_device", "missing_vendor:0");
    // The vendor library was looked for once, lazily (device_count, not query).
    CHECK(probe[FAKE_VENDOR_DLOPENS] - before[FAKE_VENDOR_DLOPENS] == 1);
  }
  const auto after = probe.counters();
  CHECK(after[FAKE_SHUTDOWNS] - before[FAKE_SHUTDOWNS] == 1);  // a loaded plugin is shut down even with 0 devices
}

TEST_CASE("no_query: a library without braid_backend_query is not a braid plugin") {
  CleanPluginEnv env;
  Context c("no_query");
  REQUIRE_CREATED(c);
  auto b = backend_named(c.ctx, "no_query");
  CHECK(b.loaded == 0);
  CHECK(b.abi_major == 0);
  CHECK_CONTAINS(b.reason, "not a braid plugin");
  CHECK_CONTAINS(b.reason, "braid_backend_query");
}

TEST_CASE("holes: a table with a NULL function is refused, naming the function") {
  CleanPluginEnv env;
  PluginProbe probe("holes");
  const auto before = probe.counters();
  {
    Context c("holes");
    REQUIRE_CREATED(c);
    auto b = backend_named(c.ctx, "holes");
    CHECK(b.loaded == 0);
    CHECK(b.device_count == 0);
    CHECK_CONTAINS(b.reason, "queue_flush");
    CHECK_CONTAINS(b.reason, "lacks");
    CHECK(c.devices() == 0);
  }
  CHECK(probe[FAKE_DEVICE_COUNT_CALLS] == before[FAKE_DEVICE_COUNT_CALLS]);
}

TEST_CASE("other broken plugins are listed with a reason") {
  CleanPluginEnv env;
  SUBCASE("short_table: struct_size smaller than ABI 1.0's table") {
    Context c("short_table");
    REQUIRE_CREATED(c);
    auto b = backend_named(c.ctx, "short_table");
    CHECK(b.loaded == 0);
    CHECK_CONTAINS(b.reason, std::to_string(offsetof(braid_backend_api, supports)) + " bytes");
    CHECK_CONTAINS(b.reason, "smaller than ABI 1.0's " +
                                 std::to_string(offsetof(braid_backend_api, shutdown) + sizeof(void (*)(void))));
  }
  SUBCASE("tiny_table: struct_size does not cover the version fields, which are not read") {
    Context c("tiny_table");
    REQUIRE_CREATED(c);
    auto b = backend_named(c.ctx, "tiny_table");
    CHECK(b.loaded == 0);
    CHECK(b.abi_major == 0);  // not the bytes past the table's end
    CHECK(b.abi_minor == 0);
    CHECK_CONTAINS(b.reason, "4 bytes, too short to hold its ABI version");
    CHECK(b.reason.find("1698965536") == std::string::npos);
  }
  SUBCASE("query_fails: the query's own error is reported") {
    Context c("query_fails");
    REQUIRE_CREATED(c);
    auto b = backend_named(c.ctx, "query_fails");
    CHECK(b.loaded == 0);
    CHECK_CONTAINS(b.reason, "braid_backend_query");
    CHECK_CONTAINS(b.reason, "BRAID_ERR_INTERNAL");
  }
  SUBCASE("null_table: BRAID_OK without a table") {
    Context c("null_table");
    REQUIRE_CREATED(c);
    auto b = backend_named(c.ctx, "null_table");
    CHECK(b.loaded == 0);
    CHECK_CONTAINS(b.reason, "braid_backend_query");
  }
  SUBCASE("unresolved: dlopen fails and its message is kept") {
    Context c("unresolved");
    REQUIRE_CREATED(c);
    auto b = backend_named(c.ctx, "unresolved");
    CHECK(b.loaded == 0);
    CHECK_CONTAINS(b.reason, "cannot load plugin");
    CHECK_CONTAINS(b.reason, "braid_fake_symbol_nobody_defines");
  }
  SUBCASE("a name with no plugin file") {
    Context c("doesnotexist");
    REQUIRE_CREATED(c);
    auto b = backend_named(c.ctx, "doesnotexist");
    CHECK(b.loaded == 0);
    CHECK(b.path.empty());
    CHECK_CONTAINS(b.reason, "libbraid-backend-doesnotexist.so");
    CHECK(c.devices() == 0);
  }
}

TEST_CASE("every test plugin at once: the broken ones never break the host") {
  CleanPluginEnv env;
  braid_context_options o = BRAID_CONTEXT_OPTIONS_INIT;
  o.backend_path = kPluginDir.c_str();  // backends NULL and BRAID_BACKENDS unset: load everything found
  Context c(&o);
  REQUIRE_CREATED(c);
  auto all = backends_of(c.ctx);
  std::set<std::string> names;
  for (auto& b : all) {
    CAPTURE(b.name);
    CHECK(names.insert(b.name).second);  // each name once
    if (b.loaded == 0) CHECK_FALSE(b.reason.empty());
  }
  for (const char* want : {"abi_major2", "abi_table_major2", "newer_minor", "missing_vendor", "no_query", "holes",
                           "short_table", "query_fails", "null_table", "unresolved"})
    CHECK_MESSAGE(names.count(want) == 1, str(want) << " was not listed");
  CHECK(backend_named(c.ctx, "newer_minor").loaded == 1);
  if (kHaveCpu) CHECK(backend_named(c.ctx, "cpu").loaded == 1);  // found next to libbraid
  braid_device dev = -1;
  CHECK_OK(braid_context_find_device(c.ctx, "newer_minor:0", &dev));
}

TEST_CASE("BRAID_BACKENDS naming a backend that does not exist: listed with a reason, context created") {
  CleanPluginEnv clean;
  EnvVar backends("BRAID_BACKENDS", "nosuchbackend");
  Context c(static_cast<const braid_context_options*>(nullptr));
  REQUIRE_CREATED(c);
  auto all = backends_of(c.ctx);
  REQUIRE(all.size() == 1);
  CHECK(all[0].name == "nosuchbackend");
  CHECK(all[0].loaded == 0);
  CHECK_CONTAINS(all[0].reason, "libbraid-backend-nosuchbackend.so");
  CHECK(c.devices() == 0);
}

TEST_CASE("BRAID_BACKENDS and BRAID_BACKEND_PATH are used when the options leave them NULL") {
  CleanPluginEnv clean;
  EnvVar backends("BRAID_BACKENDS", "newer_minor,missing_vendor");
  EnvVar path("BRAID_BACKEND_PATH", kPluginDir.c_str());
  SUBCASE("from the environment") {
    Context c(static_cast<const braid_context_options*>(nullptr));
    REQUIRE_CREATED(c);
    CHECK(backends_of(c.ctx).size() == 2);
    CHECK(backend_named(c.ctx, "newer_minor").loaded == 1);
    CHECK(c.devices() == 1);
  }
  SUBCASE("options override the environment") {
    Context c("holes");
    REQUIRE_CREATED(c);
    auto all = backends_of(c.ctx);
    REQUIRE(all.size() == 1);
    CHECK(all[0].name == "holes");
  }
}

TEST_CASE("backend_path: colon-separated, empty items and missing directories are skipped, first file wins") {
  CleanPluginEnv env;
  SUBCASE("several directories") {
    const std::string path = "/nonexistent-braid-dir::" + kPluginDir + ":";
    Context c("newer_minor", path.c_str());
    REQUIRE_CREATED(c);
    CHECK(backend_named(c.ctx, "newer_minor").loaded == 1);
  }
  SUBCASE("the first directory holding a name wins") {
    // A directory with a broken plugin under the good plugin's name.
    char tmpl[] = "/tmp/braid-abi-test-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    const std::string shadow = tmpl;
    const std::string shadow_file = shadow + "/libbraid-backend-newer_minor.so";
    std::filesystem::copy_file(plugin_file("holes"), shadow_file);
    {
      const std::string first_shadow = shadow + ":" + kPluginDir;
      Context c("newer_minor", first_shadow.c_str());
      REQUIRE_CREATED(c);
      auto b = backend_named(c.ctx, "newer_minor");
      CHECK(b.path == shadow_file);
      CHECK(b.loaded == 0);
      CHECK_CONTAINS(b.reason, "queue_flush");
    }
    {
      const std::string first_good = kPluginDir + ":" + shadow;
      Context c("newer_minor", first_good.c_str());
      REQUIRE_CREATED(c);
      auto b = backend_named(c.ctx, "newer_minor");
      CHECK(b.path == plugin_file("newer_minor"));
      CHECK(b.loaded == 1);
    }
    std::filesystem::remove_all(shadow);
  }
}

// KNOWN BUG (runtime/plugin/backend.cpp, `b->name = api->name`): the listed name and the device ids
// come from the table's `name`, not from the file name that BRAID_BACKENDS selected. A plugin file
// whose table reports another backend's name (a renamed or copied plugin) yields two backends of one
// name and two devices with the same id ("newer_minor:0" twice), and "other:0" cannot be found.
// may_fail until device ids are unique (either name source is fine for this test).
TEST_CASE("device ids stay unique when a plugin file reports another backend's name") {
  CleanPluginEnv env;
  char tmpl[] = "/tmp/braid-abi-test-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  const std::string dir = tmpl;
  std::filesystem::copy_file(plugin_file("newer_minor"), dir + "/libbraid-backend-other.so");
  {
    const std::string path = dir + ":" + kPluginDir;
    Context c("other,newer_minor", path.c_str());
    REQUIRE_CREATED(c);
    CHECK(backends_of(c.ctx).size() == 2);
    const int32_t n = c.devices();
    CHECK(n == 2);
    std::set<std::string> ids;
    for (int32_t i = 0; i < n; ++i) {
      braid_device_info info{};
      info.struct_size = sizeof info;
      REQUIRE_OK(braid_context_device_info(c.ctx, i, &info));
      CHECK_MESSAGE(ids.insert(info.id).second, "device id " << str(info.id) << " is not unique");
      braid_device found = -1;
      CHECK_OK(braid_context_find_device(c.ctx, info.id, &found));
      CHECK(found == i);
    }
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("cpu next to broken plugins: cpu,abi_major2,missing_vendor" * doctest::skip(!kHaveCpu)) {
  CleanPluginEnv env;
  Context c("cpu,abi_major2,missing_vendor");
  REQUIRE_CREATED(c);
  CHECK(backends_of(c.ctx).size() == 3);
  auto cpu = backend_named(c.ctx, "cpu");
  CHECK(cpu.loaded == 1);
  CHECK(cpu.device_count >= 1);
  CHECK(cpu.reason.empty());
  CHECK(cpu.path.find(kPluginDir) == std::string::npos);  // the real plugin, next to libbraid
  auto major2 = backend_named(c.ctx, "abi_major2");
  CHECK(major2.loaded == 0);
  CHECK_CONTAINS(major2.reason, "major version mismatch");
  auto vendor = backend_named(c.ctx, "missing_vendor");
  CHECK(vendor.loaded == 1);
  CHECK(vendor.device_count == 0);
  CHECK(vendor.reason == "vendor library libbraid-nonexistent-vendor.so.1 not found");
  CHECK(c.devices() == cpu.device_count);

  braid_device dev = -1;
  REQUIRE_OK(braid_context_find_device(c.ctx, "cpu:0", &dev));
  braid_device_info info{};
  info.struct_size = sizeof info;
  REQUIRE_OK(braid_context_device_info(c.ctx, dev, &info));
  CHECK(info.kind == BRAID_DEVICE_CPU);
  CHECK((info.dtype_mask & (1u << BRAID_FLOAT32)) != 0);
  const int64_t shape[2] = {3, 4};
  Tensor t;
  REQUIRE_OK(braid_full(c.ctx, dev, BRAID_FLOAT32, 2, shape, 2.5, t.out()));
  CHECK(to_host<float>(t.t, 12) == std::vector<float>(12, 2.5f));
  Tensor u;
  REQUIRE_OK(braid_full(c.ctx, dev, BRAID_INT64, 2, shape, -7, u.out()));
  CHECK(to_host<int64_t>(u.t, 12) == std::vector<int64_t>(12, -7));
  CHECK_OK(braid_wait_all(c.ctx));
}

}  // TEST_SUITE("plugins")
