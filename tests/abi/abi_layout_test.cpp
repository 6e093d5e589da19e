// ABI tests: the pinned layout of the public structs (abi_layout.h, checked at compile time, spot-checked
// at run time) and struct growth in both directions (older, shorter and newer, longer structs).

#include "abi_layout.h"  // static_asserts pinning sizes, offsets and enumerator values
#include "abi_common.h"

using namespace abi_test;

// ================================================================================================
TEST_SUITE("layout") {

TEST_CASE("every option/params/info struct starts with struct_size and its INIT macro sets it") {
  // (abi_layout.h pins the full layout at compile time; these are the runtime views of the rules.)
  static_assert(offsetof(braid_context_options, struct_size) == 0);
  static_assert(offsetof(braid_backend_info, struct_size) == 0);
  static_assert(offsetof(braid_device_info, struct_size) == 0);
  static_assert(offsetof(braid_memory_stats, struct_size) == 0);
  static_assert(offsetof(braid_conv2d_params, struct_size) == 0);
  static_assert(offsetof(braid_pool2d_params, struct_size) == 0);
  static_assert(offsetof(braid_batch_norm_params, struct_size) == 0);
  static_assert(offsetof(braid_adam_params, struct_size) == 0);

  braid_context_options o = BRAID_CONTEXT_OPTIONS_INIT;
  CHECK(o.struct_size == sizeof(braid_context_options));
  CHECK(o.backends == nullptr);
  CHECK(o.backend_path == nullptr);
  CHECK(o.engine_mode == BRAID_ENGINE_DEFAULT);
  CHECK(o.max_inflight_ops == 0);
  CHECK(o.max_inflight_bytes == 0);
  CHECK(o.profile_path == nullptr);
  CHECK(o.seed == 0);

  braid_conv2d_params c = BRAID_CONV2D_PARAMS_INIT;
  CHECK(c.struct_size == sizeof(braid_conv2d_params));
  CHECK((c.stride[0] == 1 && c.stride[1] == 1 && c.padding[0] == 0 && c.padding[1] == 0));

  braid_pool2d_params p = BRAID_POOL2D_PARAMS_INIT;
  CHECK(p.struct_size == sizeof(braid_pool2d_params));
  CHECK(p.kind == BRAID_POOL_MAX);
  CHECK((p.kernel[0] == 2 && p.kernel[1] == 2 && p.stride[0] == 0 && p.padding[1] == 0 && p.global == 0));

  braid_batch_norm_params b = BRAID_BATCH_NORM_PARAMS_INIT;
  CHECK(b.struct_size == sizeof(braid_batch_norm_params));
  CHECK((b.eps == 1e-5 && b.momentum == 0.1 && b.training == 1));

  braid_adam_params a = BRAID_ADAM_PARAMS_INIT;
  CHECK(a.struct_size == sizeof(braid_adam_params));
  CHECK((a.lr == 1e-3 && a.beta1 == 0.9 && a.beta2 == 0.999 && a.epsilon == 1e-8 && a.weight_decay == 0.0 &&
         a.step == 1));

  // ABI 1.2
  braid_context_options ctx_opts = BRAID_CONTEXT_OPTIONS_INIT;
  CHECK(ctx_opts.compute_queues == 0);
  braid_collective_options co = BRAID_COLLECTIVE_OPTIONS_INIT;
  CHECK(co.struct_size == sizeof(braid_collective_options));
  CHECK((co.op == BRAID_COLLECTIVE_SUM && co.algorithm == BRAID_ALLREDUCE_AUTO));
  braid_optimizer_params op = BRAID_OPTIMIZER_PARAMS_INIT;
  CHECK(op.struct_size == sizeof(braid_optimizer_params));
  CHECK((op.kind == BRAID_OPTIMIZER_SGD && op.learning_rate == 0.01 && op.momentum == 0.0 && op.weight_decay == 0.0 &&
         op.beta1 == 0.9 && op.beta2 == 0.999 && op.epsilon == 1e-8 && op.rescale_grad == 1.0));
  braid_trainer_options t = BRAID_TRAINER_OPTIONS_INIT;
  CHECK(t.struct_size == sizeof(braid_trainer_options));
  CHECK((t.optimizer.struct_size == sizeof(braid_optimizer_params) && t.bucket_bytes == 0 &&
         t.algorithm == BRAID_ALLREDUCE_AUTO));
}

TEST_CASE("the pinned layout matches this target") {
#if defined(__x86_64__) && defined(__LP64__)
  // Compile-time pins are active (abi_layout.h); spot-check a few at run time too so the report shows them.
  CHECK(sizeof(braid_context_options) == 72);  // 1.2: compute_queues
  CHECK(sizeof(braid_backend_info) == 48);
  CHECK(sizeof(braid_device_info) == 120);
  CHECK(sizeof(braid_memory_stats) == 56);
  CHECK(sizeof(braid_backend_api) == 216);  // plugin ABI 1.7: buffer_import_host
  CHECK(sizeof(braid_kernel_call) == 1664);
  CHECK(offsetof(braid_context_options, engine_mode) == 24);
#else
  MESSAGE("layout pins are only checked on x86-64");
#endif
}

}  // TEST_SUITE("layout")

// ================================================================================================
TEST_SUITE("growth") {

TEST_CASE("an older, shorter braid_context_options gets defaults for the fields it lacks") {
  CleanPluginEnv env;
  // A 1.0-era caller that only knew struct_size, backends and backend_path. The bytes after its
  // struct are garbage that must not be read: engine_mode 77 would be refused if it were.
  alignas(braid_context_options) unsigned char raw[sizeof(braid_context_options)];
  std::memset(raw, 0xA5, sizeof raw);
  auto* o = reinterpret_cast<braid_context_options*>(raw);
  o->struct_size = static_cast<uint32_t>(offsetof(braid_context_options, engine_mode));
  o->backends = "newer_minor";
  o->backend_path = kPluginDir.c_str();
  o->engine_mode = static_cast<braid_engine_mode>(77);
  o->profile_path = "/nonexistent-dir/should-not-be-written.json";
  Context c(o);
  REQUIRE_CREATED(c);
  auto all = backends_of(c.ctx);
  REQUIRE(all.size() == 1);  // `backends` (inside the prefix) was honoured
  CHECK(all[0].name == "newer_minor");
  CHECK(all[0].loaded == 1);
  CHECK(c.devices() == 1);
}

TEST_CASE("a newer, longer braid_context_options is accepted (the unknown tail is ignored)") {
  CleanPluginEnv env;
  struct Newer {
    braid_context_options v1_0;
    uint64_t future_field_a;
    const char* future_field_b;
  } n{};
  n.v1_0 = BRAID_CONTEXT_OPTIONS_INIT;
  n.v1_0.struct_size = sizeof n;
  n.v1_0.backends = "newer_minor";
  n.v1_0.backend_path = kPluginDir.c_str();
  n.future_field_a = 12345;
  n.future_field_b = "future";
  Context c(&n.v1_0);
  REQUIRE_CREATED(c);
  CHECK(c.devices() == 1);
}

TEST_CASE("struct_size 0..3 (and absurdly large) is refused with BRAID_ERR_INVALID_ARGUMENT") {
  for (uint32_t size : {0u, 1u, 2u, 3u, 1u << 20}) {
    CAPTURE(size);
    braid_context_options o = BRAID_CONTEXT_OPTIONS_INIT;
    o.struct_size = size;
    braid_context ctx = reinterpret_cast<braid_context>(uintptr_t{0x1});  // must be overwritten with NULL
    CHECK_FAILS(braid_context_create(&o, &ctx), BRAID_ERR_INVALID_ARGUMENT, "braid_context_create", "struct_size");
    CHECK(ctx == nullptr);
  }
}

TEST_CASE("out-structs with a smaller struct_size only get that prefix written") {
  CleanPluginEnv env;
  Context c("newer_minor");
  REQUIRE_CREATED(c);
  REQUIRE(c.devices() == 1);
  constexpr unsigned char kSentinel = 0xCD;

  SUBCASE("braid_device_info") {
    braid_device_info full{};
    full.struct_size = sizeof full;
    REQUIRE_OK(braid_context_device_info(c.ctx, 0, &full));
    CHECK(full.struct_size == sizeof full);

    for (size_t prefix : {offsetof(braid_device_info, kind), offsetof(braid_device_info, uuid),
                          offsetof(braid_device_info, l1_cache_bytes), sizeof(uint32_t) + 4}) {
      CAPTURE(prefix);
      alignas(braid_device_info) unsigned char raw[sizeof(braid_device_info)];
      std::memset(raw, kSentinel, sizeof raw);
      auto* info = reinterpret_cast<braid_device_info*>(raw);
      info->struct_size = static_cast<uint32_t>(prefix);
      REQUIRE_OK(braid_context_device_info(c.ctx, 0, info));
      CHECK(info->struct_size == prefix);
      // The prefix holds the same bytes as a full query (pointers owned by the context are stable).
      CHECK(std::memcmp(raw + sizeof(uint32_t), reinterpret_cast<unsigned char*>(&full) + sizeof(uint32_t),
                        prefix - sizeof(uint32_t)) == 0);
      bool untouched = std::all_of(raw + prefix, raw + sizeof raw, [](unsigned char b) { return b == kSentinel; });
      CHECK_MESSAGE(untouched, "bytes beyond struct_size " << prefix << " were written");
    }
  }

  SUBCASE("braid_backend_info") {
    const size_t prefix = offsetof(braid_backend_info, loaded);
    alignas(braid_backend_info) unsigned char raw[sizeof(braid_backend_info)];
    std::memset(raw, kSentinel, sizeof raw);
    auto* info = reinterpret_cast<braid_backend_info*>(raw);
    info->struct_size = static_cast<uint32_t>(prefix);
    REQUIRE_OK(braid_context_backend_info(c.ctx, 0, info));
    CHECK(info->struct_size == prefix);
    CHECK(std::string(info->name) == "newer_minor");
    CHECK(info->abi_major == BRAID_BACKEND_ABI_MAJOR);
    CHECK(std::all_of(raw + prefix, raw + sizeof raw, [](unsigned char b) { return b == kSentinel; }));
  }

  SUBCASE("braid_memory_stats") {
    const size_t prefix = offsetof(braid_memory_stats, peak_allocated_bytes);
    alignas(braid_memory_stats) unsigned char raw[sizeof(braid_memory_stats)];
    std::memset(raw, kSentinel, sizeof raw);
    auto* stats = reinterpret_cast<braid_memory_stats*>(raw);
    stats->struct_size = static_cast<uint32_t>(prefix);
    REQUIRE_OK(braid_memory_stats_get(c.ctx, 0, stats));
    CHECK(stats->struct_size == prefix);
    CHECK(stats->allocated_bytes == 0);
    CHECK(std::all_of(raw + prefix, raw + sizeof raw, [](unsigned char b) { return b == kSentinel; }));
  }

  SUBCASE("a larger struct_size from a newer caller gets the whole current struct and its size") {
    struct Newer {
      braid_device_info v1_0;
      uint64_t future[4];
    } n;
    std::memset(&n, kSentinel, sizeof n);
    n.v1_0.struct_size = sizeof n;
    REQUIRE_OK(braid_context_device_info(c.ctx, 0, &n.v1_0));
    CHECK(n.v1_0.struct_size == sizeof(braid_device_info));  // tells the caller how much is valid
    CHECK(std::string(n.v1_0.id) == "newer_minor:0");
    const auto* tail = reinterpret_cast<const unsigned char*>(&n.future);
    CHECK(std::all_of(tail, tail + sizeof n.future, [](unsigned char b) { return b == kSentinel; }));
  }
}

}  // TEST_SUITE("growth")
