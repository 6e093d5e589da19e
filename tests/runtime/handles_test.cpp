// Released context handles, as tensor handles: every function refuses them with
// BRAID_ERR_INVALID_ARGUMENT without reading freed memory (ASan would report it), and a new context
// never takes a stale handle's address soon, so a double release cannot destroy an unrelated context.
#include <string>
#include <vector>

#include "support.h"

namespace {

braid_context create_cpu() {
  braid_context_options o = BRAID_CONTEXT_OPTIONS_INIT;
  o.backends = "cpu";
  braid_context ctx = nullptr;
  BRAID_CHECK_OK(braid_context_create(&o, &ctx));
  return ctx;
}

void check_refused(braid_status st) {
  const std::string msg = braid_last_error();
  INFO(braid_status_name(st), ": ", msg);
  CHECK(st == BRAID_ERR_INVALID_ARGUMENT);
  CHECK(msg.find("not a live context handle") != std::string::npos);
}

}  // namespace

TEST_CASE("handles: a released context is refused everywhere, and a double release spares newer contexts") {
  std::vector<braid_context> stale;
  for (int i = 0; i < 6; ++i) {
    braid_context ctx = create_cpu();
    for (braid_context s : stale) CHECK(s != ctx);  // no address of a released context handed out again
    // Work on it, so the release has something to tear down.
    test::T x = test::full(ctx, 0, BRAID_FLOAT32, {16}, 1.0);
    x = test::T();
    BRAID_CHECK_OK(braid_context_release(ctx));
    stale.push_back(ctx);
  }

  braid_context live = create_cpu();
  test::T y = test::full(live, 0, BRAID_FLOAT64, {3}, 2.0);
  for (braid_context s : stale) {
    int32_t n = 0;
    braid_device dev = 0;
    braid_tensor t = nullptr;
    braid_dataset ds = nullptr;
    const int64_t shape[1] = {4};
    check_refused(braid_context_release(s));  // a double release
    check_refused(braid_context_retain(s));
    check_refused(braid_context_device_count(s, &n));
    check_refused(braid_context_find_device(s, "cpu:0", &dev));
    check_refused(braid_wait_all(s));
    check_refused(braid_context_set_seed(s, 1));
    check_refused(braid_profiler_start(s));
    check_refused(braid_full(s, 0, BRAID_FLOAT32, 1, shape, 1.0, &t));
    CHECK(t == nullptr);
    check_refused(braid_tensor_empty(s, 0, BRAID_FLOAT32, 1, shape, &t));
    check_refused(braid_dataset_open(s, nullptr, &ds));
    CHECK(ds == nullptr);
  }
  // The live context was not touched by any of it.
  int32_t n = 0;
  BRAID_CHECK_OK(braid_context_device_count(live, &n));
  CHECK(n >= 1);
  CHECK(test::to_vector(y) == std::vector<double>{2, 2, 2});
  y = test::T();
  BRAID_CHECK_OK(braid_context_release(live));
  check_refused(braid_context_release(live));
}

TEST_CASE("handles: a context lives until its last tensor is released, then its handle is refused") {
  braid_context ctx = create_cpu();
  test::T x = test::full(ctx, 0, BRAID_FLOAT64, {2}, 3.0);
  BRAID_CHECK_OK(braid_context_release(ctx));
  // The tensor's reference keeps the context (and so its handle) alive.
  int32_t n = 0;
  BRAID_CHECK_OK(braid_context_device_count(ctx, &n));
  test::T y;
  BRAID_CHECK_OK(braid_binary_scalar(BRAID_BINARY_ADD, x.t, 1.0, 0, y.out()));
  CHECK(test::to_vector(y).size() == 2);
  // A second release of the same handle is refused: it would take the tensors' reference and tear the
  // context down under them (a crash in the allocator). So is a retain after the application let go.
  CHECK(braid_context_release(ctx) == BRAID_ERR_INVALID_ARGUMENT);
  CHECK(std::string(braid_last_error()).find("already released") != std::string::npos);
  CHECK(braid_context_retain(ctx) == BRAID_ERR_INVALID_ARGUMENT);
  CHECK(test::to_vector(y) == std::vector<double>{4, 4});
  y = test::T();
  x = test::T();
  check_refused(braid_context_device_count(ctx, &n));
  check_refused(braid_context_release(ctx));
  // A KVStore holds its context as a tensor does, not as the application: a second release of the
  // application's handle is refused while the store keeps the context alive, and the store still works.
  braid_context kv_ctx = create_cpu();
  braid_kvstore kv = nullptr;
  BRAID_CHECK_OK(braid_kvstore_create(kv_ctx, "local", &kv));
  BRAID_CHECK_OK(braid_context_release(kv_ctx));
  CHECK(braid_context_release(kv_ctx) == BRAID_ERR_INVALID_ARGUMENT);
  braid_kvstore kv2 = nullptr;  // the handle still names a live context
  BRAID_CHECK_OK(braid_kvstore_create(kv_ctx, "local", &kv2));
  BRAID_CHECK_OK(braid_kvstore_release(kv2));
  BRAID_CHECK_OK(braid_kvstore_release(kv));
  check_refused(braid_context_device_count(kv_ctx, &n));
  // Retained references count: create + one retain is two releases.
  braid_context twice = create_cpu();
  BRAID_CHECK_OK(braid_context_retain(twice));
  BRAID_CHECK_OK(braid_context_release(twice));
  BRAID_CHECK_OK(braid_context_device_count(twice, &n));
  BRAID_CHECK_OK(braid_context_release(twice));
  check_refused(braid_context_device_count(twice, &n));
}
