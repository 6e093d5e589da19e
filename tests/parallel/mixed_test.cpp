// Collectives and a Trainer over a heterogeneous list: cpu:0 and vulkan:0 (lavapipe in CI). Skipped,
// visibly, without a Vulkan device or when BRAID_BACKENDS excludes the plugin.
#include <cstdlib>
#include <string>
#include <vector>

#include "runtime/support.h"

namespace {

struct Mixed {
  braid_context ctx = nullptr;
  braid_device cpu = -1, vk = -1;
  Mixed() {
    if (const char* only = std::getenv("BRAID_BACKENDS"); only && *only) {
      if ((std::string(",") + only + ",").find(",vulkan,") == std::string::npos) {
        MESSAGE("skipped: BRAID_BACKENDS=", std::string(only), " excludes the vulkan plugin");
        return;
      }
    }
    braid_context_options o = BRAID_CONTEXT_OPTIONS_INIT;
    o.backends = "cpu,vulkan";
    REQUIRE(braid_context_create(&o, &ctx) == BRAID_OK);
    braid_context_find_device(ctx, "cpu:0", &cpu);
    if (braid_context_find_device(ctx, "vulkan:0", &vk) != BRAID_OK) vk = -1;
  }
  ~Mixed() {
    if (ctx) braid_context_release(ctx);
  }
  bool ready() const {
    if (ctx == nullptr) return false;
    if (vk < 0) MESSAGE("skipped: no Vulkan device (libvulkan + a driver such as mesa-vulkan-drivers' lavapipe)");
    return vk >= 0;
  }
};

test::T filled(braid_context ctx, braid_device d, int64_t n, float scale) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) v[static_cast<size_t>(k)] = scale * static_cast<float>(k % 17);
  test::T t;
  BRAID_CHECK_OK(braid_tensor_from_host(ctx, d, BRAID_FLOAT32, 1, &n, v.data(), v.size() * sizeof(float), t.out()));
  return t;
}

}  // namespace

TEST_CASE("allreduce, broadcast and all_gather over cpu:0 + vulkan:0") {
  Mixed m;
  if (!m.ready()) return;
  for (int64_t n : {int64_t{3}, int64_t{4097}, int64_t{300001}}) {
    for (int a = BRAID_ALLREDUCE_AUTO; a < BRAID_ALLREDUCE_ALGORITHM_COUNT; ++a) {
      CAPTURE(n);
      CAPTURE(a);
      test::T x = filled(m.ctx, m.cpu, n, 1.f), y = filled(m.ctx, m.vk, n, 2.f);
      braid_tensor h[2] = {x.t, y.t};
      braid_collective_options o = BRAID_COLLECTIVE_OPTIONS_INIT;
      o.algorithm = static_cast<braid_allreduce_algorithm>(a);
      if (o.algorithm == BRAID_ALLREDUCE_DIRECT) {  // needs devices that share memory: refused at the call
        CHECK(braid_allreduce(2, h, &o) == BRAID_ERR_UNSUPPORTED);
        CHECK(std::string(braid_last_error()).find("DIRECT") != std::string::npos);
        continue;
      }
      BRAID_CHECK_OK(braid_allreduce(2, h, &o));
      for (braid_tensor t : h) {
        std::vector<float> v(static_cast<size_t>(n));
        BRAID_CHECK_OK(braid_tensor_to_host(t, v.data(), v.size() * sizeof(float)));
        for (int64_t k = 0; k < n; ++k) REQUIRE(v[static_cast<size_t>(k)] == 3.f * static_cast<float>(k % 17));
      }
    }
  }
  test::T x = filled(m.ctx, m.cpu, 5, 1.f), y = filled(m.ctx, m.vk, 5, 0.f);
  braid_tensor h[2] = {x.t, y.t};
  BRAID_CHECK_OK(braid_broadcast(2, h, 0));
  std::vector<float> v(5);
  BRAID_CHECK_OK(braid_tensor_to_host(y.t, v.data(), sizeof(float) * 5));
  CHECK(v == std::vector<float>{0, 1, 2, 3, 4});
  braid_tensor outs[2];
  BRAID_CHECK_OK(braid_all_gather(2, h, outs));
  for (braid_tensor o : outs) {
    std::vector<float> g(10);
    BRAID_CHECK_OK(braid_tensor_to_host(o, g.data(), sizeof(float) * 10));
    CHECK(g == std::vector<float>{0, 1, 2, 3, 4, 0, 1, 2, 3, 4});
    braid_tensor_release(o);
  }
}

// DIRECT over devices that cannot run it is refused when the Trainer is made, and a step that finds it
// (BRAID_ALLREDUCE=direct with AUTO) fails before any bucket is summed: a refused step changed the
// gradients, and each retry summed them again.
TEST_CASE("Trainer: DIRECT over cpu:0 + vulkan:0 is refused before any gradient changes") {
  Mixed m;
  if (!m.ready()) return;
  test::T w0 = filled(m.ctx, m.cpu, 4, 1), w1 = filled(m.ctx, m.vk, 4, 1);
  BRAID_CHECK_OK(braid_tensor_attach_grad(w0.t, BRAID_GRAD_WRITE));
  BRAID_CHECK_OK(braid_tensor_attach_grad(w1.t, BRAID_GRAD_WRITE));
  braid_tensor params[2] = {w0.t, w1.t};
  braid_trainer_options o = BRAID_TRAINER_OPTIONS_INIT;
  o.algorithm = BRAID_ALLREDUCE_DIRECT;
  braid_trainer tr = nullptr;
  CHECK(braid_trainer_create(2, 1, params, &o, &tr) == BRAID_ERR_UNSUPPORTED);
  CHECK(tr == nullptr);
  // BRAID_ALLREDUCE is read when a context is made: a context made under "direct" runs DIRECT where
  // a call asks for AUTO, and a step over these devices is refused.
  setenv("BRAID_ALLREDUCE", "direct", 1);
  Mixed under_direct;
  unsetenv("BRAID_ALLREDUCE");
  REQUIRE(under_direct.ready());
  test::T v0 = filled(under_direct.ctx, under_direct.cpu, 4, 1), v1 = filled(under_direct.ctx, under_direct.vk, 4, 1);
  BRAID_CHECK_OK(braid_tensor_attach_grad(v0.t, BRAID_GRAD_WRITE));
  BRAID_CHECK_OK(braid_tensor_attach_grad(v1.t, BRAID_GRAD_WRITE));
  braid_tensor direct_params[2] = {v0.t, v1.t};
  o.algorithm = BRAID_ALLREDUCE_AUTO;
  BRAID_CHECK_OK(braid_trainer_create(2, 1, direct_params, &o, &tr));
  CHECK(braid_trainer_step(tr, 1) == BRAID_ERR_UNSUPPORTED);
  CHECK(braid_trainer_allreduce_grads(tr) == BRAID_ERR_UNSUPPORTED);
  BRAID_CHECK_OK(braid_trainer_release(tr));
  // A bad value is an error of braid_context_create, as for every variable.
  setenv("BRAID_ALLREDUCE", "bogus", 1);
  braid_context bad = nullptr;
  CHECK(braid_context_create(nullptr, &bad) == BRAID_ERR_INVALID_ARGUMENT);
  CHECK(std::string(braid_last_error()).find("BRAID_ALLREDUCE='bogus'") != std::string::npos);
  unsetenv("BRAID_ALLREDUCE");
}
