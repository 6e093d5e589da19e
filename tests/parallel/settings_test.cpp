// What the KVStore and the Trainer are given (issue 31): optimizer settings torch.optim refuses
// (a negative learning rate or weight decay, NaN, infinities) are refused with
// BRAID_ERR_INVALID_ARGUMENT at every entry point and change nothing; and a caller's large counts
// are indexed in 64 bits, never in int32 (r * num_params overflowed).
#include <sys/mman.h>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "runtime/support.h"

namespace {

void check_refused(braid_status st, const char* mentions) {
  const std::string msg = braid_last_error();
  INFO(braid_status_name(st), ": ", msg);
  CHECK(st == BRAID_ERR_INVALID_ARGUMENT);
  CHECK(msg.find(mentions) != std::string::npos);
}

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace

TEST_CASE("optimizer settings: negative, NaN and infinite rates and decays are refused everywhere") {
  test::Ctx c(1);
  test::T w = test::full(c.ctx, 0, BRAID_FLOAT32, {4}, 1.0);
  BRAID_CHECK_OK(braid_tensor_attach_grad(w.t, BRAID_GRAD_WRITE));
  braid_kvstore kv = nullptr;
  BRAID_CHECK_OK(braid_kvstore_create(c.ctx, "local", &kv));
  BRAID_CHECK_OK(braid_kvstore_init(kv, 0, w.t));

  struct Bad {
    double braid_optimizer_params::*field;
    double value;
    const char* mentions;
  };
  const Bad bad[] = {
      {&braid_optimizer_params::learning_rate, -1, "learning_rate"},
      {&braid_optimizer_params::learning_rate, -1e-300, "learning_rate"},
      {&braid_optimizer_params::learning_rate, kNaN, "finite"},
      {&braid_optimizer_params::learning_rate, kInf, "finite"},
      {&braid_optimizer_params::weight_decay, -5, "weight_decay"},
      {&braid_optimizer_params::weight_decay, kNaN, "finite"},
      {&braid_optimizer_params::weight_decay, -kInf, "finite"},
      {&braid_optimizer_params::momentum, -0.1, "momentum"},
      {&braid_optimizer_params::momentum, kNaN, "finite"},
      {&braid_optimizer_params::rescale_grad, 0, "rescale_grad"},
  };
  for (braid_optimizer_kind kind : {BRAID_OPTIMIZER_SGD, BRAID_OPTIMIZER_ADAM})
    for (const Bad& b : bad) {
      CAPTURE(kind);
      CAPTURE(b.mentions);
      CAPTURE(b.value);
      braid_optimizer_params p = BRAID_OPTIMIZER_PARAMS_INIT;
      p.kind = kind;
      p.*b.field = b.value;
      check_refused(braid_kvstore_set_optimizer(kv, &p), b.mentions);
      braid_trainer_options o = BRAID_TRAINER_OPTIONS_INIT;
      o.optimizer = p;
      braid_trainer tr = nullptr;
      check_refused(braid_trainer_create(1, 1, &w.t, &o, &tr), b.mentions);
      CHECK(tr == nullptr);
    }
  // Adam's own: betas in [0, 1), epsilon not negative.
  braid_optimizer_params adam = BRAID_OPTIMIZER_PARAMS_INIT;
  adam.kind = BRAID_OPTIMIZER_ADAM;
  adam.epsilon = -1e-8;
  check_refused(braid_kvstore_set_optimizer(kv, &adam), "epsilon");
  adam.epsilon = 1e-8;
  adam.beta2 = 1.0;
  check_refused(braid_kvstore_set_optimizer(kv, &adam), "betas");
  // Zero is a valid rate and decay (a frozen layer, no regularisation), as in PyTorch.
  braid_optimizer_params zero = BRAID_OPTIMIZER_PARAMS_INIT;
  zero.learning_rate = 0;
  zero.weight_decay = 0;
  BRAID_CHECK_OK(braid_kvstore_set_optimizer(kv, &zero));
  BRAID_CHECK_OK(braid_kvstore_release(kv));

  braid_trainer_options o = BRAID_TRAINER_OPTIONS_INIT;
  o.optimizer.learning_rate = 0.25;
  braid_trainer tr = nullptr;
  BRAID_CHECK_OK(braid_trainer_create(1, 1, &w.t, &o, &tr));
  for (double lr : {-1.0, -0.0001, kNaN, kInf, -kInf}) {
    CAPTURE(lr);
    check_refused(braid_trainer_set_learning_rate(tr, lr), "learning_rate");
    double now = 0;
    BRAID_CHECK_OK(braid_trainer_learning_rate(tr, &now));
    CHECK(now == 0.25);  // unchanged
  }
  BRAID_CHECK_OK(braid_trainer_set_learning_rate(tr, 0.0));
  BRAID_CHECK_OK(braid_trainer_release(tr));
}

// braid_trainer_create read replica r of parameter p at params[r * num_params + p] computed in int32:
// with 3 replicas of 2^30 parameters, replica 2 of parameter 0 is at 2^31, and the product wrapped to
// a negative index (a read 16 GB before the array; UBSan: signed overflow). The array is reserved, not
// committed: only the pages touched take memory. Parameter 1 is left NULL, so the call ends there with
// BRAID_ERR_INVALID_ARGUMENT after reading parameter 0's replicas where they are.
TEST_CASE("Trainer: replica indices past int32 are computed in 64 bits") {
  test::Ctx c(3);
  REQUIRE(c.devices() == 3);
  constexpr size_t kParams = size_t{1} << 30, kReplicas = 3;
  const size_t bytes = kParams * kReplicas * sizeof(braid_tensor);
  void* mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (mem == MAP_FAILED) {
    MESSAGE("skipped: cannot reserve ", bytes, " bytes of address space");
    return;
  }
  auto* params = static_cast<braid_tensor*>(mem);
  std::vector<test::T> replicas;
  for (size_t r = 0; r < kReplicas; ++r) {
    replicas.push_back(test::full(c.ctx, static_cast<braid_device>(r), BRAID_FLOAT32, {2}, 1.0));
    BRAID_CHECK_OK(braid_tensor_attach_grad(replicas.back().t, BRAID_GRAD_WRITE));
    params[r * kParams] = replicas.back().t;  // parameter 0
  }
  braid_trainer tr = nullptr;
  const braid_status st =
      braid_trainer_create(static_cast<int32_t>(kReplicas), static_cast<int32_t>(kParams), params, nullptr, &tr);
  const std::string msg = braid_last_error();
  munmap(mem, bytes);
  INFO(msg);
  CHECK(st == BRAID_ERR_INVALID_ARGUMENT);
  CHECK(msg.find("params[1] is NULL") != std::string::npos);  // parameter 1's first replica, not a crash
  CHECK(tr == nullptr);
}

// Issue 31: a released handle in a list was reported as "tensors[i]", with a literal i.
TEST_CASE("a bad handle in a list is named by its index") {
  test::Ctx c(2);
  test::T a = test::full(c.ctx, 0, BRAID_FLOAT32, {2}, 1.0), b = test::full(c.ctx, 1, BRAID_FLOAT32, {2}, 1.0);
  for (test::T* t : {&a, &b}) BRAID_CHECK_OK(braid_tensor_attach_grad(t->t, BRAID_GRAD_WRITE));
  test::T gone = test::full(c.ctx, 1, BRAID_FLOAT32, {2}, 1.0);
  const braid_tensor stale = gone.t;
  gone = test::T();
  const braid_tensor params[4] = {a.t, a.t, b.t, stale};  // 2 replicas x 2 parameters
  braid_trainer tr = nullptr;
  check_refused(braid_trainer_create(2, 2, params, nullptr, &tr), "params[3] is a released tensor handle");
  const braid_tensor group[2] = {a.t, stale};
  check_refused(braid_allreduce(2, group, nullptr), "tensors[1] is a released tensor handle");
  const braid_device devices[2] = {0, 7};
  braid_tensor outs[2] = {nullptr, nullptr};
  CHECK(braid_split_and_load(a.t, 2, devices, nullptr, outs) != BRAID_OK);
  CHECK(std::string(braid_last_error()).find("devices[1]") != std::string::npos);
}

// braid_trainer_options embeds braid_optimizer_params by value. A program built against a later braid.h
// whose braid_optimizer_params has grown (here by two doubles) has its bucket_bytes, algorithm and flags
// 16 bytes further on: the Trainer finds them after the caller's optimizer (its struct_size), so the
// optimizer's struct can grow without moving the fields after it. Laid out here as that compiler would.
TEST_CASE("Trainer options: the fields after the optimizer start where the caller's optimizer ends") {
  struct LaterOptimizer {
    braid_optimizer_params today;
    double added[2];
  };
  struct LaterOptions {
    uint32_t struct_size;
    LaterOptimizer optimizer;
    uint64_t bucket_bytes;
    braid_allreduce_algorithm algorithm;
    uint64_t flags;
  };
  test::Ctx c(1);
  test::T w = test::full(c.ctx, 0, BRAID_FLOAT32, {4}, 1.0);
  BRAID_CHECK_OK(braid_tensor_attach_grad(w.t, BRAID_GRAD_WRITE));
  LaterOptions later{};
  later.struct_size = sizeof later;
  later.optimizer.today = BRAID_OPTIMIZER_PARAMS_INIT;
  later.optimizer.today.struct_size = sizeof(LaterOptimizer);
  later.optimizer.today.learning_rate = 0.5;
  // Where today's layout has bucket_bytes and algorithm: an invalid algorithm (99), which a reader of
  // today's layout would refuse; and today's flags would be read from later.bucket_bytes (0).
  later.optimizer.added[0] = 1.0;
  const int32_t bad_algorithm = 99;
  std::memcpy(&later.optimizer.added[1], &bad_algorithm, sizeof bad_algorithm);
  later.bucket_bytes = 0;
  later.algorithm = BRAID_ALLREDUCE_AUTO;
  later.flags = BRAID_TRAINER_IGNORE_STALE_GRAD;
  const auto* options = reinterpret_cast<const braid_trainer_options*>(&later);

  braid_trainer tr = nullptr;
  BRAID_CHECK_OK(braid_trainer_create(1, 1, &w.t, options, &tr));
  double lr = 0;
  BRAID_CHECK_OK(braid_trainer_learning_rate(tr, &lr));
  CHECK(lr == 0.5);
  // The flags came from the caller's place: a gradient no backward wrote is skipped, not refused.
  BRAID_CHECK_OK(braid_trainer_step(tr, 1.0));
  BRAID_CHECK_OK(braid_trainer_release(tr));

  // So did the algorithm: an invalid one there is refused.
  later.algorithm = static_cast<braid_allreduce_algorithm>(99);
  check_refused(braid_trainer_create(1, 1, &w.t, options, &tr), "braid_allreduce_algorithm");
  // An optimizer that does not fit the options holding it is no layout at all.
  later.algorithm = BRAID_ALLREDUCE_AUTO;
  later.optimizer.today.struct_size = sizeof later;
  check_refused(braid_trainer_create(1, 1, &w.t, options, &tr), "optimizer.struct_size");
  // A struct_size that ends inside the caller's flags.
  later.optimizer.today.struct_size = sizeof(LaterOptimizer);
  later.struct_size = offsetof(LaterOptions, flags) + 4;
  check_refused(braid_trainer_create(1, 1, &w.t, options, &tr), "ends inside a field");
  CHECK(tr == nullptr);
}
