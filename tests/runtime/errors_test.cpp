// Error poisoning (docs/ENGINE.md#errors): a failing op poisons what it writes, dependants are skipped and
// inherit the error, wait reports op and device, unrelated work goes on, nothing aborts.
#include <cstdlib>
#include <cstring>

#include "support.h"

namespace {
// softmax_cross_entropy with a label out of range fails asynchronously in the kernel.
test::T failing_loss(braid_context ctx, braid_device dev) {
  test::T logits = test::full(ctx, dev, BRAID_FLOAT32, {2, 3}, 0.5);
  std::vector<int32_t> labels = {1, 7};
  int64_t n = 2;
  test::T y;
  BRAID_CHECK_OK(braid_tensor_from_host(ctx, dev, BRAID_INT32, 1, &n, labels.data(), 8, y.out()));
  test::T loss;
  BRAID_CHECK_OK(braid_softmax_cross_entropy(logits.t, y.t, loss.out()));  // accepted: fails later
  return loss;
}
}  // namespace

TEST_CASE("errors: a failed op poisons its outputs and dependants; unrelated work continues") {
  test::Ctx c(2);
  test::T loss = failing_loss(c.ctx, 0);
  test::T dependant, dependant2;
  BRAID_CHECK_OK(braid_binary_scalar(BRAID_BINARY_ADD, loss.t, 1.0, 0, dependant.out()));
  BRAID_CHECK_OK(braid_unary(BRAID_UNARY_EXP, dependant.t, dependant2.out()));
  test::T unrelated = test::full(c.ctx, 0, BRAID_FLOAT64, {3}, 2.0);
  test::T unrelated2;
  BRAID_CHECK_OK(braid_binary_scalar(BRAID_BINARY_MUL, unrelated.t, 3.0, 0, unrelated2.out()));

  braid_status st = braid_tensor_wait_to_read(dependant2.t);
  CHECK(st == BRAID_ERR_KERNEL);
  std::string msg = braid_last_error();
  CHECK(msg.find("softmax_cross_entropy") != std::string::npos);
  CHECK(msg.find("cpu:0") != std::string::npos);
  CHECK(braid_tensor_wait_to_read(loss.t) == BRAID_ERR_KERNEL);
  // The poisoned tensor stays usable as a handle.
  int32_t ndim = 0;
  BRAID_CHECK_OK(braid_tensor_ndim(dependant2.t, &ndim));
  CHECK(ndim == 1);
  // Unrelated work went on.
  CHECK(test::to_vector(unrelated2) == std::vector<double>{6.0, 6.0, 6.0});
  // wait_all reports the first error once, then the slate is clean.
  CHECK(braid_wait_all(c.ctx) == BRAID_ERR_KERNEL);
  CHECK(std::string(braid_last_error()).find("softmax_cross_entropy") != std::string::npos);
  BRAID_CHECK_OK(braid_wait_all(c.ctx));
}

TEST_CASE("errors: a poisoned input known at push time skips the op without running it") {
  test::Ctx c(1);
  test::T loss = failing_loss(c.ctx, 0);
  CHECK(braid_tensor_wait_to_read(loss.t) == BRAID_ERR_KERNEL);
  test::T later;
  BRAID_CHECK_OK(braid_unary(BRAID_UNARY_NEG, loss.t, later.out()));
  CHECK(braid_tensor_wait_to_read(later.t) == BRAID_ERR_KERNEL);
  // Overwriting a poisoned tensor with valid data makes it readable again.
  test::T fresh = test::full(c.ctx, 0, BRAID_FLOAT32, {2}, 4.0);
  BRAID_CHECK_OK(braid_copy_into(fresh.t, loss.t));
  BRAID_CHECK_OK(braid_tensor_wait_to_read(loss.t));
  std::vector<float> v(2);
  BRAID_CHECK_OK(braid_tensor_to_host(loss.t, v.data(), 8));
  CHECK(v[0] == 4.0f);
  CHECK(braid_wait_all(c.ctx) == BRAID_ERR_KERNEL);
}

TEST_CASE("errors: write_host over a poisoned tensor makes it readable again") {
  // The upload only writes the tensor: listing it as an input as well would make it inherit the
  // poison it is meant to clear. Both orders: the failure already known at push time, and the upload
  // pushed while the failing op may still be in flight (then the upload still runs after it).
  for (bool known : {true, false}) {
    INFO(std::string(known ? "failure known before the upload" : "upload pushed right behind the failing op"));
    test::Ctx c(1);
    test::T loss = failing_loss(c.ctx, 0);
    if (known) CHECK(braid_tensor_wait_to_read(loss.t) == BRAID_ERR_KERNEL);
    const float data[2] = {3.0f, -5.0f};
    BRAID_CHECK_OK(braid_tensor_write_host(loss.t, data, sizeof data));
    BRAID_CHECK_OK(braid_tensor_wait_to_read(loss.t));
    float v[2] = {};
    BRAID_CHECK_OK(braid_tensor_to_host(loss.t, v, sizeof v));
    CHECK(v[0] == 3.0f);
    CHECK(v[1] == -5.0f);
    // Readers of the new value are not poisoned either; the original failure is still reported once.
    test::T neg;
    BRAID_CHECK_OK(braid_unary(BRAID_UNARY_NEG, loss.t, neg.out()));
    BRAID_CHECK_OK(braid_tensor_wait_to_read(neg.t));
    CHECK(braid_wait_all(c.ctx) == BRAID_ERR_KERNEL);
    BRAID_CHECK_OK(braid_wait_all(c.ctx));
  }
}

TEST_CASE("errors: a failure on one device does not poison the other's unrelated work") {
  test::Ctx c(2);
  REQUIRE(c.devices() == 2);  // asked for above: the CPU backend always provides them
  test::T loss = failing_loss(c.ctx, 0);
  test::T x = test::full(c.ctx, 1, BRAID_FLOAT64, {4}, 1.0);
  test::T y;
  BRAID_CHECK_OK(braid_binary(BRAID_BINARY_ADD, x.t, x.t, y.out()));
  CHECK(test::to_vector(y) == std::vector<double>{2, 2, 2, 2});
  // But a copy of the poisoned tensor to the other device carries the error along.
  test::T moved;
  BRAID_CHECK_OK(braid_copy(loss.t, 1, moved.out()));
  CHECK(braid_tensor_wait_to_read(moved.t) == BRAID_ERR_KERNEL);
  CHECK(braid_wait_all(c.ctx) == BRAID_ERR_KERNEL);
}

TEST_CASE("errors: on every device, a failure reaches a copy made on another queue, every time") {
  // The copy waits for the failing op on another queue (a device-side wait within one backend, a host
  // notification across backends). Whatever the timing, the copy must end after the failing op is
  // known to have failed and inherit its error; a backend that reports the copy's end first loses it.
  braid_context_options o = BRAID_CONTEXT_OPTIONS_INIT;
  // Every backend where present (one without devices adds none), unless the run restricts them
  // (the sanitizer runs load only what their tools can check).
  const char* only = std::getenv("BRAID_BACKENDS");
  o.backends = only != nullptr && *only != '\0' ? only : "cpu,vulkan,cuda";
  o.engine_mode = BRAID_ENGINE_ASYNC;
  test::Ctx c(2, o);
  const int n = c.devices();
  for (braid_device from = 0; from < n; ++from) {
    for (braid_device to = 0; to < n; ++to) {
      CAPTURE(from);
      CAPTURE(to);
      int lost = 0;
      for (int i = 0; i < 50; ++i) {
        test::T loss = failing_loss(c.ctx, from);
        test::T moved;
        BRAID_CHECK_OK(braid_copy(loss.t, to, moved.out()));
        lost += braid_tensor_wait_to_read(moved.t) != BRAID_ERR_KERNEL;
      }
      CHECK(lost == 0);
      CHECK(braid_wait_all(c.ctx) == BRAID_ERR_KERNEL);
    }
  }
}
