// Over-releasing a handle while braid itself still holds it (issue 31): the application's release
// beyond its own references is refused with BRAID_ERR_INVALID_ARGUMENT and changes nothing, and what
// holds the object keeps working. Before, such a release took the internal holder's reference and
// freed the object under it (a dataset under its iterator: valgrind saw 3,140 invalid reads). Every
// handle kind: the ones braid holds internally (context, tensor, graph here; dataset in
// tests/data/api_errors_test.cpp) and the ones nothing else holds (KVStore, Trainer, hybrid, refused
// as released handles).
#include <string>
#include <vector>

#include "support.h"

namespace {

void check_invalid_argument(braid_status st) {
  INFO(braid_status_name(st), ": ", braid_last_error());
  CHECK(st == BRAID_ERR_INVALID_ARGUMENT);
}

// y = 2 * x, for the hybrid function.
braid_status twice(void*, int32_t, const braid_tensor* in, int32_t, braid_tensor* out) {
  return braid_binary_scalar(BRAID_BINARY_MUL, in[0], 2.0, 0, &out[0]);
}

}  // namespace

TEST_CASE("over-release: a tensor a Trainer holds is refused, and the Trainer still updates it") {
  test::Ctx c(1);
  braid_tensor w = nullptr;
  {
    test::T t = test::full(c.ctx, 0, BRAID_FLOAT64, {4}, 1.0);
    w = t.t;
    t.t = nullptr;
  }
  BRAID_CHECK_OK(braid_tensor_attach_grad(w, BRAID_GRAD_WRITE));
  braid_trainer_options o = BRAID_TRAINER_OPTIONS_INIT;
  o.optimizer.learning_rate = 0.5;
  braid_trainer tr = nullptr;
  BRAID_CHECK_OK(braid_trainer_create(1, 1, &w, &o, &tr));
  braid_tensor g = nullptr;
  BRAID_CHECK_OK(braid_tensor_grad(w, &g));
  BRAID_CHECK_OK(braid_tensor_release(g));
  check_invalid_argument(braid_tensor_release(g));  // the gradient buffer's own reference is braid's
  BRAID_CHECK_OK(braid_tensor_release(w));
  check_invalid_argument(braid_tensor_release(w));  // the Trainer's reference is not the application's
  check_invalid_argument(braid_tensor_release(w));
  // The Trainer still has its parameter: reading its settings and stepping (refused: no backward
  // wrote the gradient) go through the parameter and its gradient, and touch no freed memory.
  double lr = 0;
  BRAID_CHECK_OK(braid_trainer_learning_rate(tr, &lr));
  CHECK(lr == 0.5);
  const braid_status st = braid_trainer_step(tr, 1.0);  // stale gradient: refused, not a crash
  CHECK(st == BRAID_ERR_INVALID_STATE);
  BRAID_CHECK_OK(braid_trainer_release(tr));  // its reference was the last: the tensor goes now
  check_invalid_argument(braid_tensor_release(w));
  check_invalid_argument(braid_trainer_release(tr));  // nothing else holds a Trainer: a released handle
}

TEST_CASE("over-release: an operand autograd recorded is refused, and backward still reads it") {
  test::Ctx c(1);
  test::T x = test::full(c.ctx, 0, BRAID_FLOAT64, {3}, 2.0);
  BRAID_CHECK_OK(braid_tensor_attach_grad(x.t, BRAID_GRAD_WRITE));
  test::T a = test::full(c.ctx, 0, BRAID_FLOAT64, {3}, 3.0);
  int32_t prev = 0;
  BRAID_CHECK_OK(braid_autograd_set_recording(c.ctx, 1, &prev));
  test::T y;
  BRAID_CHECK_OK(braid_binary(BRAID_BINARY_MUL, x.t, a.t, y.out()));
  BRAID_CHECK_OK(braid_autograd_set_recording(c.ctx, prev, nullptr));
  braid_tensor a_handle = a.t;
  a.t = nullptr;
  BRAID_CHECK_OK(braid_tensor_release(a_handle));
  check_invalid_argument(braid_tensor_release(a_handle));  // the tape holds a for the gradient of x
  test::T ones = test::full(c.ctx, 0, BRAID_FLOAT64, {3}, 1.0);
  BRAID_CHECK_OK(braid_backward(1, &y.t, &ones.t, 0));
  test::T g;
  BRAID_CHECK_OK(braid_tensor_grad(x.t, g.out()));
  CHECK(test::to_vector(g) == std::vector<double>{3, 3, 3});
}

TEST_CASE("over-release: a graph a hybrid function caches is refused, and the function still runs it") {
  test::Ctx c(1);
  braid_hybrid h = nullptr;
  BRAID_CHECK_OK(braid_hybrid_create(c.ctx, twice, nullptr, 1, 1, 0, &h));
  test::T x = test::full(c.ctx, 0, BRAID_FLOAT64, {2}, 1.5);
  test::T y;
  BRAID_CHECK_OK(braid_hybrid_call(h, &x.t, y.out()));
  braid_graph g = nullptr;
  BRAID_CHECK_OK(braid_hybrid_graph(h, &x.t, &g));
  BRAID_CHECK_OK(braid_graph_retain(g));
  BRAID_CHECK_OK(braid_graph_release(g));
  BRAID_CHECK_OK(braid_graph_release(g));
  check_invalid_argument(braid_graph_release(g));  // the cache's reference is not the application's
  check_invalid_argument(braid_graph_retain(g));   // nor can the application take the handle back
  BRAID_CHECK_OK(braid_hybrid_call(h, &x.t, y.out()));
  CHECK(test::to_vector(y) == std::vector<double>{3, 3});
  BRAID_CHECK_OK(braid_hybrid_release(h));
  check_invalid_argument(braid_hybrid_release(h));
  check_invalid_argument(braid_graph_release(g));  // gone with the hybrid function
}

TEST_CASE("over-release: a context its tensors hold, and a KVStore nothing holds") {
  braid_context_options opts = BRAID_CONTEXT_OPTIONS_INIT;
  opts.backends = "cpu";
  braid_context ctx = nullptr;
  BRAID_CHECK_OK(braid_context_create(&opts, &ctx));
  test::T x = test::full(ctx, 0, BRAID_FLOAT64, {2}, 1.0);
  braid_kvstore kv = nullptr;
  BRAID_CHECK_OK(braid_kvstore_create(ctx, "local", &kv));
  BRAID_CHECK_OK(braid_kvstore_init(kv, 7, x.t));
  BRAID_CHECK_OK(braid_context_release(ctx));
  check_invalid_argument(braid_context_release(ctx));
  BRAID_CHECK_OK(braid_kvstore_push(kv, 7, 1, &x.t));
  BRAID_CHECK_OK(braid_kvstore_pull(kv, 7, 1, &x.t));
  CHECK(test::to_vector(x) == std::vector<double>{1, 1});
  BRAID_CHECK_OK(braid_kvstore_release(kv));
  check_invalid_argument(braid_kvstore_release(kv));
}
