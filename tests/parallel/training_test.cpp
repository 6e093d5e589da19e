// Splits, KVStore semantics, the Trainer (k devices with batch b/k each against one device with
// batch b from the same start), gradients through cross-device copies, mixed cpu+vulkan device
// lists, and the overlap of bucketed allreduce with backward (from the profiler's timestamps).
#include <unistd.h>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "runtime/support.h"
#include "runtime/trace.h"

using test::Ctx;
using test::T;

namespace {

std::vector<float> floats(const T& t) {
  int64_t n = 0;
  braid_tensor_numel(t.t, &n);
  std::vector<float> v(static_cast<size_t>(n));
  BRAID_CHECK_OK(braid_tensor_to_host(t.t, v.data(), v.size() * sizeof(float)));
  return v;
}

T tensor(braid_context ctx, braid_device d, std::vector<float> v, std::vector<int64_t> shape = {}) {
  if (shape.empty()) shape = {static_cast<int64_t>(v.size())};
  T t;
  BRAID_CHECK_OK(braid_tensor_from_host(ctx, d, BRAID_FLOAT32, static_cast<int32_t>(shape.size()), shape.data(),
                                        v.data(), v.size() * sizeof(float), t.out()));
  return t;
}

T binary(braid_binary_op op, const T& a, const T& b) {
  T y;
  BRAID_CHECK_OK(braid_binary(op, a.t, b.t, y.out()));
  return y;
}

}  // namespace

TEST_CASE("split sizes add up to the batch and follow the weights") {
  int64_t s[4];
  BRAID_CHECK_OK(braid_split_sizes(10, 4, nullptr, s));
  CHECK((s[0] == 3 && s[1] == 3 && s[2] == 2 && s[3] == 2));
  const double w[3] = {3, 1, 0};
  BRAID_CHECK_OK(braid_split_sizes(256, 3, w, s));
  CHECK((s[0] == 192 && s[1] == 64 && s[2] == 0));
  const double w2[3] = {1, 1, 1};
  BRAID_CHECK_OK(braid_split_sizes(256, 3, w2, s));
  CHECK(s[0] + s[1] + s[2] == 256);
  CHECK((s[0] == 86 && s[1] == 85 && s[2] == 85));
  for (int64_t total : {0, 1, 7, 255, 1000}) {
    const double uneven[3] = {0.7, 0.2, 0.1};
    BRAID_CHECK_OK(braid_split_sizes(total, 3, uneven, s));
    CHECK(s[0] + s[1] + s[2] == total);
    for (int i = 0; i < 3; ++i) CHECK(std::abs(static_cast<double>(s[i]) - total * uneven[i]) < 1.0);
  }
  // Finite weights near DBL_MAX: shares of the largest (their plain sum is inf).
  const double huge[3] = {1e308, 1e308, 1e308};
  BRAID_CHECK_OK(braid_split_sizes(10, 3, huge, s));
  CHECK((s[0] == 4 && s[1] == 3 && s[2] == 3));
  const double bad[2] = {1, -1}, zero[2] = {0, 0}, nan[2] = {NAN, 1};
  CHECK(braid_split_sizes(10, 2, bad, s) == BRAID_ERR_INVALID_ARGUMENT);
  CHECK(braid_split_sizes(10, 2, zero, s) == BRAID_ERR_INVALID_ARGUMENT);
  CHECK(braid_split_sizes(10, 2, nan, s) == BRAID_ERR_INVALID_ARGUMENT);
  CHECK(braid_split_sizes(10, 0, nullptr, s) == BRAID_ERR_INVALID_ARGUMENT);
  // An empty list (count 0, its arrays NULL, as an empty std::vector's data()) is named by its count.
  CHECK(braid_split_sizes(10, 0, nullptr, nullptr) == BRAID_ERR_INVALID_ARGUMENT);
  CHECK(std::string(braid_last_error()).find("count must be positive") != std::string::npos);
  CHECK(braid_split_and_load(nullptr, 0, nullptr, nullptr, nullptr) == BRAID_ERR_INVALID_ARGUMENT);
  CHECK(std::string(braid_last_error()).find("count must be positive") != std::string::npos);
  CHECK(braid_replicate(nullptr, 0, nullptr, nullptr) == BRAID_ERR_INVALID_ARGUMENT);
  CHECK(std::string(braid_last_error()).find("count must be positive") != std::string::npos);
  CHECK(braid_all_gather(0, nullptr, nullptr) == BRAID_ERR_INVALID_ARGUMENT);
  CHECK(std::string(braid_last_error()).find("count must be positive") != std::string::npos);
  CHECK(braid_split_sizes(-1, 2, nullptr, s) == BRAID_ERR_INVALID_ARGUMENT);
  // A total near INT64_MAX: a share rounds to 2^63, which no int64 holds (the loop that hands out the
  // rest then ran about 2^64 times).
  const double one[1] = {1}, two[2] = {1, 1};
  BRAID_CHECK_OK(braid_split_sizes(INT64_MAX, 1, one, s));
  CHECK(s[0] == INT64_MAX);
  BRAID_CHECK_OK(braid_split_sizes(INT64_MAX, 2, two, s));
  CHECK(static_cast<uint64_t>(s[0]) + static_cast<uint64_t>(s[1]) == static_cast<uint64_t>(INT64_MAX));
  CHECK(std::abs(s[0] - s[1]) <= 1);
}

TEST_CASE("split_and_load puts consecutive rows on each device") {
  Ctx c(3);
  std::vector<float> v(7 * 2);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  T x = tensor(c.ctx, 0, v, {7, 2});
  const braid_device devs[3] = {0, 1, 2};
  braid_tensor parts[3];
  BRAID_CHECK_OK(braid_split_and_load(x.t, 3, devs, nullptr, parts));
  float next = 0;
  for (int i = 0; i < 3; ++i) {
    T p(parts[i]);
    braid_device d = -1;
    braid_tensor_device(p.t, &d);
    CHECK(d == i);
    int64_t shape[BRAID_MAX_DIMS];
    braid_tensor_shape(p.t, shape);
    CHECK(shape[0] == (i == 0 ? 3 : 2));
    CHECK(shape[1] == 2);
    for (float f : floats(p)) CHECK(f == next++);
  }
  T one = tensor(c.ctx, 0, {5.f});
  T zero_d;
  BRAID_CHECK_OK(braid_reshape(one.t, 0, nullptr, zero_d.out()));
  CHECK(braid_split_and_load(zero_d.t, 3, devs, nullptr, parts) == BRAID_ERR_SHAPE);
  const braid_device bad[3] = {0, 1, 9};
  CHECK(braid_split_and_load(x.t, 3, bad, nullptr, parts) != BRAID_OK);
}

// Recorded like slices and device copies, so the gradient of every part reaches x (only the parts on
// x's own device did).
TEST_CASE("split_and_load and replicate pass gradients back from every device") {
  Ctx c(2);
  T x = tensor(c.ctx, 0, {0, 1, 2, 3, 4, 5}, {3, 2});
  BRAID_CHECK_OK(braid_tensor_attach_grad(x.t, BRAID_GRAD_WRITE));
  const braid_device devs[2] = {0, 1};
  for (bool replicate : {false, true}) {
    const std::string what = replicate ? "replicate" : "split_and_load";
    INFO(what);
    braid_tensor parts[2];
    BRAID_CHECK_OK(braid_autograd_set_recording(c.ctx, 1, nullptr));
    if (replicate)
      BRAID_CHECK_OK(braid_replicate(x.t, 2, devs, parts));
    else
      BRAID_CHECK_OK(braid_split_and_load(x.t, 2, devs, nullptr, parts));
    T p0(parts[0]), p1(parts[1]);
    std::vector<T> losses;  // sum(part^2) on each part's device, brought to cpu:0 and added
    for (T* p : {&p0, &p1}) {
      T sq = binary(BRAID_BINARY_MUL, *p, *p), s, here;
      BRAID_CHECK_OK(braid_reduce(BRAID_REDUCE_SUM, sq.t, 0, nullptr, 0, s.out()));
      BRAID_CHECK_OK(braid_copy(s.t, 0, here.out()));
      losses.push_back(std::move(here));
    }
    T loss = binary(BRAID_BINARY_ADD, losses[0], losses[1]);
    BRAID_CHECK_OK(braid_autograd_set_recording(c.ctx, 0, nullptr));
    BRAID_CHECK_OK(braid_backward(1, &loss.t, nullptr, 0));
    T g;
    BRAID_CHECK_OK(braid_tensor_grad(x.t, g.out()));
    const float k = replicate ? 4.f : 2.f;  // d/dx of sum(x^2), once per part that holds x's row
    CHECK(floats(g) == std::vector<float>{0, k, 2 * k, 3 * k, 4 * k, 5 * k});
  }
  // A part with no rows (weights {1, 0}) still passes its (empty) gradient on: its copy is recorded,
  // as PyTorch records x[3:3].to(device), so a backward over every part's loss goes through.
  const double weights[2] = {1, 0};
  braid_tensor parts[2];
  BRAID_CHECK_OK(braid_autograd_set_recording(c.ctx, 1, nullptr));
  BRAID_CHECK_OK(braid_split_and_load(x.t, 2, devs, weights, parts));
  T p0(parts[0]), p1(parts[1]);
  std::vector<T> losses;
  for (T* p : {&p0, &p1}) {
    T sq = binary(BRAID_BINARY_MUL, *p, *p), s;
    BRAID_CHECK_OK(braid_reduce(BRAID_REDUCE_SUM, sq.t, 0, nullptr, 0, s.out()));
    losses.push_back(std::move(s));
  }
  BRAID_CHECK_OK(braid_autograd_set_recording(c.ctx, 0, nullptr));
  braid_tensor heads[2] = {losses[0].t, losses[1].t};
  BRAID_CHECK_OK(braid_backward(2, heads, nullptr, 0));
  T g;
  BRAID_CHECK_OK(braid_tensor_grad(x.t, g.out()));
  CHECK(floats(g) == std::vector<float>{0, 2, 4, 6, 8, 10});
}

TEST_CASE("KVStore: push sums a list, pull copies, an updater runs on the store") {
  for (const char* type : {"local", "device"}) {
    CAPTURE(type);
    Ctx c(4);
    braid_kvstore kv = nullptr;
    BRAID_CHECK_OK(braid_kvstore_create(c.ctx, type, &kv));
    const char* got_type = nullptr;
    BRAID_CHECK_OK(braid_kvstore_type(kv, &got_type));
    CHECK(std::string(got_type) == type);
    T init = tensor(c.ctx, 0, {1, 1, 1});
    BRAID_CHECK_OK(braid_kvstore_init(kv, 3, init.t));
    CHECK(braid_kvstore_init(kv, 3, init.t) == BRAID_ERR_INVALID_ARGUMENT);  // twice
    std::vector<T> vals;
    for (int d = 0; d < 4; ++d) vals.push_back(tensor(c.ctx, d, {float(d + 1), 2.f * (d + 1), -1.f}));
    braid_tensor h[4] = {vals[0].t, vals[1].t, vals[2].t, vals[3].t};
    BRAID_CHECK_OK(braid_kvstore_push(kv, 3, 4, h));
    std::vector<T> outs;
    for (int d = 0; d < 4; ++d) outs.push_back(tensor(c.ctx, d, {0, 0, 0}));
    braid_tensor ho[4] = {outs[0].t, outs[1].t, outs[2].t, outs[3].t};
    BRAID_CHECK_OK(braid_kvstore_pull(kv, 3, 4, ho));
    for (auto& o : outs) CHECK(floats(o) == std::vector<float>{10, 20, -4});
    // The pushed values themselves are untouched.
    CHECK(floats(vals[1]) == std::vector<float>{2, 4, -1});
    // With an updater: stored -= lr * rescale * sum.
    braid_optimizer_params sgd = BRAID_OPTIMIZER_PARAMS_INIT;
    sgd.learning_rate = 0.5;
    BRAID_CHECK_OK(braid_kvstore_set_optimizer(kv, &sgd));
    BRAID_CHECK_OK(braid_kvstore_pushpull(kv, 3, 4, h, ho));
    for (auto& o : outs) CHECK(floats(o) == std::vector<float>{10 - 5, 20 - 10, -4 + 2});
    BRAID_CHECK_OK(braid_kvstore_set_optimizer(kv, nullptr));
    BRAID_CHECK_OK(braid_kvstore_push(kv, 3, 1, h));
    BRAID_CHECK_OK(braid_kvstore_pull(kv, 3, 1, ho));
    CHECK(floats(outs[0]) == std::vector<float>{1, 2, -1});
    // Errors: unknown key, wrong shape, bad type, released handle.
    CHECK(braid_kvstore_push(kv, 4, 1, h) == BRAID_ERR_INVALID_ARGUMENT);
    T wrong = tensor(c.ctx, 0, {1, 2});
    CHECK(braid_kvstore_push(kv, 3, 1, &wrong.t) == BRAID_ERR_SHAPE);
    T wider;  // the right shape in another dtype: a dtype error, as the collectives report it
    const double three[3] = {1, 2, 3};
    const int64_t n3 = 3;
    BRAID_CHECK_OK(braid_tensor_from_host(c.ctx, 0, BRAID_FLOAT64, 1, &n3, three, sizeof three, wider.out()));
    CHECK(braid_kvstore_push(kv, 3, 1, &wider.t) == BRAID_ERR_DTYPE);
    CHECK(braid_kvstore_pull(kv, 3, 1, &wider.t) == BRAID_ERR_DTYPE);
    CHECK(braid_kvstore_pull(kv, 3, 0, ho) == BRAID_ERR_INVALID_ARGUMENT);
    braid_optimizer_params bad = BRAID_OPTIMIZER_PARAMS_INIT;
    bad.learning_rate = NAN;
    CHECK(braid_kvstore_set_optimizer(kv, &bad) == BRAID_ERR_INVALID_ARGUMENT);
    BRAID_CHECK_OK(braid_kvstore_release(kv));
    CHECK(braid_kvstore_push(kv, 3, 1, h) == BRAID_ERR_INVALID_ARGUMENT);
    CHECK(braid_kvstore_release(kv) == BRAID_ERR_INVALID_ARGUMENT);
  }
  Ctx c(1);
  braid_kvstore kv = nullptr;
  // MXNet's, across processes: a job without server processes (no braid-run --servers) is told so.
  CHECK(braid_kvstore_create(c.ctx, "dist_sync", &kv) == BRAID_ERR_INVALID_STATE);
  CHECK(std::string(braid_last_error()).find("--servers") != std::string::npos);
  CHECK(braid_kvstore_create(c.ctx, "lokal", &kv) == BRAID_ERR_INVALID_ARGUMENT);
  CHECK(kv == nullptr);
}

// pushpull is one unit (MXNet's is one engine op): four threads pushing their own value to one key
// each get their own back, never another thread's push that landed between push and pull. Outs are
// checked before the push, and an optimizer refuses an integer key by name.
TEST_CASE("KVStore: pushpull is one unit across threads; bad outs push nothing") {
  Ctx c(1);
  braid_kvstore kv = nullptr;
  BRAID_CHECK_OK(braid_kvstore_create(c.ctx, "local", &kv));
  T init = tensor(c.ctx, 0, {0, 0});
  BRAID_CHECK_OK(braid_kvstore_init(kv, 7, init.t));
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      T mine = tensor(c.ctx, 0, {float(t), float(t)}), out = tensor(c.ctx, 0, {-1, -1});
      for (int i = 0; i < 300; ++i) {
        if (braid_kvstore_pushpull(kv, 7, 1, &mine.t, &out.t) != BRAID_OK) ++wrong;
        if (floats(out) != std::vector<float>{float(t), float(t)}) ++wrong;
      }
    });
  for (auto& th : threads) th.join();
  CHECK(wrong.load() == 0);
  T value = tensor(c.ctx, 0, {5, 5}), bad_out = tensor(c.ctx, 0, {1, 2, 3}), now = tensor(c.ctx, 0, {0, 0});
  CHECK(braid_kvstore_pushpull(kv, 7, 1, &value.t, &bad_out.t) == BRAID_ERR_SHAPE);
  BRAID_CHECK_OK(braid_kvstore_pull(kv, 7, 1, &now.t));
  CHECK(floats(now) != std::vector<float>{5, 5});  // the refused call pushed nothing
  T ints;
  const int32_t two[2] = {1, 2};
  const int64_t n2 = 2;
  BRAID_CHECK_OK(braid_tensor_from_host(c.ctx, 0, BRAID_INT32, 1, &n2, two, sizeof two, ints.out()));
  BRAID_CHECK_OK(braid_kvstore_init(kv, 8, ints.t));
  braid_optimizer_params sgd = BRAID_OPTIMIZER_PARAMS_INIT;
  BRAID_CHECK_OK(braid_kvstore_set_optimizer(kv, &sgd));
  CHECK(braid_kvstore_push(kv, 8, 1, &ints.t) == BRAID_ERR_DTYPE);
  CHECK(std::string(braid_last_error()).find("key 8 holds int32") != std::string::npos);
  BRAID_CHECK_OK(braid_kvstore_release(kv));
}

TEST_CASE("gradients flow back through copies between devices") {
  Ctx c(2);
  T x = tensor(c.ctx, 0, {1, 2, 3});
  BRAID_CHECK_OK(braid_tensor_attach_grad(x.t, BRAID_GRAD_WRITE));
  BRAID_CHECK_OK(braid_autograd_set_recording(c.ctx, 1, nullptr));
  T y;
  BRAID_CHECK_OK(braid_copy(x.t, 1, y.out()));
  T sq = binary(BRAID_BINARY_MUL, y, y);  // on cpu:1
  T back;
  BRAID_CHECK_OK(braid_copy(sq.t, 0, back.out()));
  T loss;
  BRAID_CHECK_OK(braid_reduce(BRAID_REDUCE_SUM, back.t, 0, nullptr, 0, loss.out()));
  BRAID_CHECK_OK(braid_autograd_set_recording(c.ctx, 0, nullptr));
  BRAID_CHECK_OK(braid_backward(1, &loss.t, nullptr, 0));
  T g;
  BRAID_CHECK_OK(braid_tensor_grad(x.t, g.out()));
  braid_device d = -1;
  braid_tensor_device(g.t, &d);
  CHECK(d == 0);
  CHECK(floats(g) == std::vector<float>{2, 4, 6});
}

namespace {

// A small regression model: y = relu(x W1 + b1) W2, loss = sum of squared errors (so the gradient
// of a shard is a sum, and Trainer.step(global batch) averages over the whole batch).
struct Mlp {
  std::vector<T> params;  // W1 [4,8], b1 [8], W2 [8,1]
};

Mlp mlp_on(braid_context ctx, braid_device d, const std::vector<std::vector<float>>& init) {
  Mlp m;
  const std::vector<std::vector<int64_t>> shapes = {{4, 8}, {8}, {8, 1}};
  for (size_t i = 0; i < 3; ++i) {
    m.params.push_back(tensor(ctx, d, init[i], shapes[i]));
    BRAID_CHECK_OK(braid_tensor_attach_grad(m.params.back().t, BRAID_GRAD_WRITE));
  }
  return m;
}

void forward_backward(braid_context ctx, const Mlp& m, const T& x, const T& y) {
  BRAID_CHECK_OK(braid_autograd_set_recording(ctx, 1, nullptr));
  T h, h2, r, o, e, e2, loss;
  BRAID_CHECK_OK(braid_matmul(x.t, m.params[0].t, 0, 0, h.out()));
  BRAID_CHECK_OK(braid_binary(BRAID_BINARY_ADD, h.t, m.params[1].t, h2.out()));
  BRAID_CHECK_OK(braid_unary(BRAID_UNARY_RELU, h2.t, r.out()));
  BRAID_CHECK_OK(braid_matmul(r.t, m.params[2].t, 0, 0, o.out()));
  BRAID_CHECK_OK(braid_binary(BRAID_BINARY_SUB, o.t, y.t, e.out()));
  BRAID_CHECK_OK(braid_unary(BRAID_UNARY_SQUARE, e.t, e2.out()));
  BRAID_CHECK_OK(braid_reduce(BRAID_REDUCE_SUM, e2.t, 0, nullptr, 0, loss.out()));
  BRAID_CHECK_OK(braid_autograd_set_recording(ctx, 0, nullptr));
  BRAID_CHECK_OK(braid_backward(1, &loss.t, nullptr, 0));
}

std::vector<float> uniform(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  uint32_t s = seed;
  for (float& f : v) {
    s = s * 1664525u + 1013904223u;
    f = static_cast<float>((s >> 8) * (1.0 / 16777216.0) - 0.5);
  }
  return v;
}

// The optimizers the training tests use: SGD with momentum, or Adam, with weight decay.
braid_optimizer_params optimizer_of(braid_optimizer_kind kind) {
  braid_optimizer_params opt = BRAID_OPTIMIZER_PARAMS_INIT;
  opt.kind = kind;
  opt.learning_rate = kind == BRAID_OPTIMIZER_SGD ? 0.1 : 0.01;
  opt.momentum = kind == BRAID_OPTIMIZER_SGD ? 0.9 : 0.0;
  opt.weight_decay = 1e-3;
  return opt;
}

// Steps [from, to) of a training on k replicas (devices 0..k-1 of ctx), from the parameters `init`
// and, when `states` is set, the optimizer states saved there; with `save` set, the parameters and
// states are saved to save + ".params" / ".states" after the last step. Returns replica 0's
// parameters, checking that every replica holds the same values.
struct Run {
  int from = 0, to = 5;
  uint64_t bucket_bytes = 0;
  braid_allreduce_algorithm algorithm = BRAID_ALLREDUCE_AUTO;
  std::string states, save;
};
Run span_of(int from, int to, std::string states = {}, std::string save = {}) {
  Run r;
  r.from = from;
  r.to = to;
  r.states = std::move(states);
  r.save = std::move(save);
  return r;
}
std::vector<std::vector<float>> train_span(braid_context ctx, int k, braid_optimizer_params opt,
                                           const std::vector<std::vector<float>>& init, const Run& run) {
  std::vector<Mlp> reps;
  std::vector<braid_tensor> handles;
  for (int r = 0; r < k; ++r) {
    reps.push_back(mlp_on(ctx, r, init));
    for (T& p : reps.back().params) handles.push_back(p.t);
  }
  braid_trainer_options o = BRAID_TRAINER_OPTIONS_INIT;
  o.optimizer = opt;
  o.bucket_bytes = run.bucket_bytes;
  o.algorithm = run.algorithm;
  braid_trainer tr = nullptr;
  BRAID_CHECK_OK(braid_trainer_create(k, 3, handles.data(), &o, &tr));
  if (!run.states.empty()) BRAID_CHECK_OK(braid_trainer_load_states(tr, run.states.c_str()));
  const int64_t batch = 12;
  std::vector<braid_device> devs;
  for (int r = 0; r < k; ++r) devs.push_back(r);
  for (int s = run.from; s < run.to; ++s) {
    T x = tensor(ctx, 0, uniform(batch * 4, 100 + s), {batch, 4});
    T y = tensor(ctx, 0, uniform(batch, 200 + s), {batch, 1});
    std::vector<braid_tensor> xs(static_cast<size_t>(k)), ys(static_cast<size_t>(k));
    BRAID_CHECK_OK(braid_split_and_load(x.t, k, devs.data(), nullptr, xs.data()));
    BRAID_CHECK_OK(braid_split_and_load(y.t, k, devs.data(), nullptr, ys.data()));
    for (int r = 0; r < k; ++r) {
      T xr(xs[static_cast<size_t>(r)]), yr(ys[static_cast<size_t>(r)]);
      forward_backward(ctx, reps[static_cast<size_t>(r)], xr, yr);
    }
    BRAID_CHECK_OK(braid_trainer_step(tr, static_cast<double>(batch)));
  }
  if (!run.save.empty()) {
    const char* names[] = {"w1", "b1", "w2"};
    BRAID_CHECK_OK(braid_save_safetensors((run.save + ".params").c_str(), 3, names, handles.data()));
    BRAID_CHECK_OK(braid_trainer_save_states(tr, (run.save + ".states").c_str()));
  }
  BRAID_CHECK_OK(braid_trainer_release(tr));
  std::vector<std::vector<float>> out;
  for (T& p : reps[0].params) out.push_back(floats(p));
  for (int r = 1; r < k; ++r)
    for (size_t i = 0; i < 3; ++i) CHECK(floats(reps[static_cast<size_t>(r)].params[i]) == out[i]);
  return out;
}

// `steps` steps from the usual start (train_span).
std::vector<std::vector<float>> train(braid_context ctx, int k, braid_optimizer_params opt, uint64_t bucket_bytes,
                                      braid_allreduce_algorithm algorithm, int steps) {
  const std::vector<std::vector<float>> init = {uniform(32, 1), uniform(8, 2), uniform(8, 3)};
  return train_span(ctx, k, opt, init, {0, steps, bucket_bytes, algorithm, "", ""});
}

}  // namespace

TEST_CASE("Trainer: a run resumed from saved parameters and states ends bit for bit as an uninterrupted one") {
  char dir[] = "/tmp/braid-states-XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  const std::string base = std::string(dir) + "/ckpt";
  const std::vector<std::vector<float>> init = {uniform(32, 1), uniform(8, 2), uniform(8, 3)};
  for (braid_optimizer_kind kind : {BRAID_OPTIMIZER_SGD, BRAID_OPTIMIZER_ADAM}) {
    CAPTURE(kind);
    const braid_optimizer_params opt = optimizer_of(kind);
    Ctx c(2);
    const auto whole = train_span(c.ctx, 2, opt, init, span_of(0, 6));
    (void)train_span(c.ctx, 2, opt, init, span_of(0, 3, "", base));
    // The second half starts from the files alone: parameters loaded, a new trainer, its states loaded.
    const char* names[] = {"w1", "b1", "w2"};
    braid_tensor loaded[3] = {};
    BRAID_CHECK_OK(braid_load_safetensors(c.ctx, 0, (base + ".params").c_str(), 3, names, loaded));
    std::vector<std::vector<float>> mid;
    for (braid_tensor t : loaded) mid.push_back(floats(T(t)));
    const auto resumed = train_span(c.ctx, 2, opt, mid, span_of(3, 6, base + ".states"));
    for (size_t i = 0; i < 3; ++i) CHECK(resumed[i] == whole[i]);  // bit for bit
    // Without the states, momentum and Adam's moments start again: the end differs.
    const auto without = train_span(c.ctx, 2, opt, mid, span_of(3, 6));
    CHECK(without[0] != whole[0]);
  }
  // A states file of another optimizer, or none, is refused and leaves the trainer as it was.
  Ctx c(1);
  Mlp m = mlp_on(c.ctx, 0, init);
  std::vector<braid_tensor> hs;
  for (T& p : m.params) hs.push_back(p.t);
  braid_trainer_options o = BRAID_TRAINER_OPTIONS_INIT;  // SGD; the file holds Adam's
  braid_trainer tr = nullptr;
  BRAID_CHECK_OK(braid_trainer_create(1, 3, hs.data(), &o, &tr));
  CHECK(braid_trainer_load_states(tr, (base + ".states").c_str()) == BRAID_ERR_INVALID_ARGUMENT);
  CHECK(std::string(braid_last_error()).find("optimizer kind") != std::string::npos);
  CHECK(braid_trainer_load_states(tr, (base + ".none").c_str()) == BRAID_ERR_NOT_FOUND);
  CHECK(braid_trainer_load_states(tr, (base + ".params").c_str()) == BRAID_ERR_INVALID_ARGUMENT);
  CHECK(braid_trainer_load_states(tr, nullptr) == BRAID_ERR_INVALID_ARGUMENT);
  // An SGD trainer with momentum refuses the states of one without (no momentum after its steps).
  {
    braid_optimizer_params plain = BRAID_OPTIMIZER_PARAMS_INIT;
    Ctx c1(1);
    (void)train_span(c1.ctx, 1, plain, init, span_of(0, 2, "", base + ".plain"));
  }
  BRAID_CHECK_OK(braid_trainer_release(tr));
  o.optimizer.momentum = 0.9;
  BRAID_CHECK_OK(braid_trainer_create(1, 3, hs.data(), &o, &tr));
  CHECK(braid_trainer_load_states(tr, (base + ".plain.states").c_str()) == BRAID_ERR_INVALID_ARGUMENT);
  CHECK(std::string(braid_last_error()).find("lacks \"momentum.0\"") != std::string::npos);
  double lr = 0;
  BRAID_CHECK_OK(braid_trainer_learning_rate(tr, &lr));
  CHECK(lr == o.optimizer.learning_rate);
  BRAID_CHECK_OK(braid_trainer_release(tr));
  for (const char* ext : {".params", ".states", ".plain.params", ".plain.states"}) std::remove((base + ext).c_str());
  ::rmdir(dir);
}

TEST_CASE("Trainer on k devices with batch b/k matches one device with batch b") {
  for (braid_optimizer_kind kind : {BRAID_OPTIMIZER_SGD, BRAID_OPTIMIZER_ADAM}) {
    const braid_optimizer_params opt = optimizer_of(kind);
    Ctx one(1);
    const auto want = train(one.ctx, 1, opt, 0, BRAID_ALLREDUCE_AUTO, 5);
    for (int k : {2, 3, 4}) {
      for (uint64_t bucket : {uint64_t{0}, uint64_t{4}}) {  // one bucket; one parameter per bucket
        for (auto alg : {BRAID_ALLREDUCE_AUTO, BRAID_ALLREDUCE_RING, BRAID_ALLREDUCE_NAIVE}) {
          CAPTURE(kind);
          CAPTURE(k);
          CAPTURE(bucket);
          CAPTURE(alg);
          Ctx c(k);
          const auto got = train(c.ctx, k, opt, bucket, alg, 5);
          for (size_t i = 0; i < 3; ++i)
            for (size_t j = 0; j < got[i].size(); ++j) REQUIRE(got[i][j] == doctest::Approx(want[i][j]).epsilon(1e-4));
        }
      }
    }
  }
}

TEST_CASE("KVStore: another kind of optimizer starts from fresh state") {
  Ctx c(1);
  braid_kvstore kv = nullptr;
  BRAID_CHECK_OK(braid_kvstore_create(c.ctx, nullptr, &kv));  // NULL: "local"
  const char* type = nullptr;
  BRAID_CHECK_OK(braid_kvstore_type(kv, &type));
  CHECK(std::string(type) == "local");
  T w = tensor(c.ctx, 0, {0}), g = tensor(c.ctx, 0, {1});
  BRAID_CHECK_OK(braid_kvstore_init(kv, 1, w.t));
  braid_optimizer_params sgd = BRAID_OPTIMIZER_PARAMS_INIT;
  sgd.learning_rate = 0.0;
  sgd.momentum = 0.9;
  BRAID_CHECK_OK(braid_kvstore_set_optimizer(kv, &sgd));
  for (int i = 0; i < 3; ++i) BRAID_CHECK_OK(braid_kvstore_push(kv, 1, 1, &g.t));
  braid_optimizer_params adam = BRAID_OPTIMIZER_PARAMS_INIT;
  adam.kind = BRAID_OPTIMIZER_ADAM;
  adam.learning_rate = 0.01;
  BRAID_CHECK_OK(braid_kvstore_set_optimizer(kv, &adam));
  BRAID_CHECK_OK(braid_kvstore_push(kv, 1, 1, &g.t));
  T out = tensor(c.ctx, 0, {0});
  BRAID_CHECK_OK(braid_kvstore_pull(kv, 1, 1, &out.t));
  // Adam's first step moves by the learning rate (m / sqrt(v) = 1 after bias correction); with the
  // step count SGD's pushes had left, it moved by 0.0058.
  CHECK(std::fabs(floats(out)[0] + 0.01f) < 1e-6f);
  BRAID_CHECK_OK(braid_kvstore_release(kv));
}

TEST_CASE("Trainer: replicas on one device are refused; replica 0's values are broadcast to the others") {
  Ctx c(2);
  T a = tensor(c.ctx, 0, {1, 2}), b = tensor(c.ctx, 1, {5, 7}), same = tensor(c.ctx, 0, {1, 2});
  for (T* t : {&a, &b, &same}) BRAID_CHECK_OK(braid_tensor_attach_grad(t->t, BRAID_GRAD_WRITE));
  braid_trainer tr = nullptr;
  braid_tensor one_device[2] = {a.t, same.t};
  CHECK(braid_trainer_create(2, 1, one_device, nullptr, &tr) == BRAID_ERR_INVALID_ARGUMENT);
  CHECK(tr == nullptr);
  braid_tensor apart[2] = {a.t, b.t};
  BRAID_CHECK_OK(braid_trainer_create(2, 1, apart, nullptr, &tr));
  CHECK(floats(b) == std::vector<float>{1, 2});
  BRAID_CHECK_OK(braid_trainer_release(tr));
}

namespace {
// Records sum(k * a) (+ sum(k * u) when u is given) and back-propagates it: a's gradient is k.
void backward_through(braid_context ctx, const T& a, const T& k, const T* u = nullptr) {
  BRAID_CHECK_OK(braid_autograd_set_recording(ctx, 1, nullptr));
  T ka = binary(BRAID_BINARY_MUL, a, k), total = std::move(ka);
  if (u) {
    T ku = binary(BRAID_BINARY_MUL, *u, k);
    total = binary(BRAID_BINARY_ADD, total, ku);
  }
  T loss;
  BRAID_CHECK_OK(braid_reduce(BRAID_REDUCE_SUM, total.t, 0, nullptr, 0, loss.out()));
  BRAID_CHECK_OK(braid_autograd_set_recording(ctx, 0, nullptr));
  BRAID_CHECK_OK(braid_backward(1, &loss.t, nullptr, 0));
}
}  // namespace

// Gluon's Trainer.step refuses a gradient that no backward wrote since the last step. Before, the
// step used whatever the buffer held: a replica that skipped backward gave the last step's summed
// gradient again (w = -16 where the replicas' gradients say -13).
TEST_CASE("Trainer: a gradient no backward wrote since the last update is refused, or skipped when asked") {
  Ctx c(2);
  T a0 = tensor(c.ctx, 0, {0, 0}), u0 = tensor(c.ctx, 0, {0, 0});
  T a1 = tensor(c.ctx, 1, {0, 0}), u1 = tensor(c.ctx, 1, {0, 0});
  T k0 = tensor(c.ctx, 0, {1, 1}), k1 = tensor(c.ctx, 1, {2, 2});
  for (T* t : {&a0, &u0, &a1, &u1}) BRAID_CHECK_OK(braid_tensor_attach_grad(t->t, BRAID_GRAD_WRITE));
  braid_tensor params[4] = {a0.t, u0.t, a1.t, u1.t};
  braid_trainer_options o = BRAID_TRAINER_OPTIONS_INIT;
  o.optimizer.learning_rate = 1;
  braid_trainer tr = nullptr;
  BRAID_CHECK_OK(braid_trainer_create(2, 2, params, &o, &tr));
  // No backward yet.
  CHECK(braid_trainer_step(tr, 1) == BRAID_ERR_INVALID_STATE);
  CHECK(std::string(braid_last_error()).find("has not been written by backward") != std::string::npos);
  CHECK(floats(a0) == std::vector<float>{0, 0});
  // Both replicas, both parameters: gradients 1 and 2, summed to 3.
  backward_through(c.ctx, a0, k0, &u0);
  backward_through(c.ctx, a1, k1, &u1);
  BRAID_CHECK_OK(braid_trainer_step(tr, 1));
  for (T* t : {&a0, &u0, &a1, &u1}) CHECK(floats(*t) == std::vector<float>{-3, -3});
  // Only replica 0 runs backward: replica 1's buffer still holds the summed 3. Refused, nothing changes.
  backward_through(c.ctx, a0, k0, &u0);
  CHECK(braid_trainer_step(tr, 1) == BRAID_ERR_INVALID_STATE);
  CHECK(std::string(braid_last_error()).find("replica 1") != std::string::npos);
  CHECK(floats(a0) == std::vector<float>{-3, -3});
  // The step after both ran backward goes through; update alone, with nothing new, does not.
  backward_through(c.ctx, a1, k1, &u1);
  BRAID_CHECK_OK(braid_trainer_step(tr, 1));
  for (T* t : {&a0, &u0, &a1, &u1}) CHECK(floats(*t) == std::vector<float>{-6, -6});
  CHECK(braid_trainer_update(tr, 1) == BRAID_ERR_INVALID_STATE);
  // allreduce_grads then update, Gluon's split step: the allreduce's own write makes nothing fresh.
  backward_through(c.ctx, a0, k0, &u0);
  backward_through(c.ctx, a1, k1, &u1);
  BRAID_CHECK_OK(braid_trainer_allreduce_grads(tr));
  BRAID_CHECK_OK(braid_trainer_update(tr, 1));
  for (T* t : {&a0, &u0, &a1, &u1}) CHECK(floats(*t) == std::vector<float>{-9, -9});
  // u unused by both replicas: refused by default.
  backward_through(c.ctx, a0, k0);
  backward_through(c.ctx, a1, k1);
  CHECK(braid_trainer_step(tr, 1) == BRAID_ERR_INVALID_STATE);
  CHECK(std::string(braid_last_error()).find("parameter 1") != std::string::npos);
  BRAID_CHECK_OK(braid_trainer_release(tr));
  // With the flag, a parameter no replica used is skipped; one some replicas used is still refused.
  // (u's last gradients were used by the update at -9, whichever trainer comes next.)
  o.flags = BRAID_TRAINER_IGNORE_STALE_GRAD;
  BRAID_CHECK_OK(braid_trainer_create(2, 2, params, &o, &tr));
  backward_through(c.ctx, a0, k0);
  backward_through(c.ctx, a1, k1);
  BRAID_CHECK_OK(braid_trainer_step(tr, 1));
  for (T* t : {&a0, &a1}) CHECK(floats(*t) == std::vector<float>{-12, -12});
  for (T* t : {&u0, &u1}) CHECK(floats(*t) == std::vector<float>{-9, -9});
  backward_through(c.ctx, a0, k0, &u0);
  backward_through(c.ctx, a1, k1);
  CHECK(braid_trainer_step(tr, 1) == BRAID_ERR_INVALID_STATE);
  CHECK(floats(u0) == std::vector<float>{-9, -9});
  BRAID_CHECK_OK(braid_trainer_release(tr));
  // Gluon's split step with the flag: what allreduce_grads skipped stays skipped in update, even if
  // every gradient is written in between (clipping), or u would take its last gradient again.
  BRAID_CHECK_OK(braid_trainer_create(2, 2, params, &o, &tr));
  backward_through(c.ctx, a0, k0, &u0);  // a step that uses every gradient first: u at -12
  backward_through(c.ctx, a1, k1, &u1);
  BRAID_CHECK_OK(braid_trainer_step(tr, 1));
  backward_through(c.ctx, a0, k0);
  backward_through(c.ctx, a1, k1);
  BRAID_CHECK_OK(braid_trainer_allreduce_grads(tr));
  for (T* t : {&a0, &u0, &a1, &u1}) {
    T g;
    BRAID_CHECK_OK(braid_tensor_grad(t->t, g.out()));
    T same = binary(BRAID_BINARY_MUL, g, g);  // any write into the buffer
    BRAID_CHECK_OK(braid_copy_into(same.t, g.t));
  }
  BRAID_CHECK_OK(braid_trainer_update(tr, 1));
  for (T* t : {&u0, &u1}) CHECK(floats(*t) == std::vector<float>{-12, -12});
  BRAID_CHECK_OK(braid_trainer_release(tr));
}

// A step refused for its hyper-parameters (lr * rescale / batch overflows) is refused before the
// allreduce, so the gradients are not summed twice by the retry; a step (or another allreduce_grads)
// after allreduce_grads with nothing written since reduces nothing again.
TEST_CASE("Trainer: a refused step leaves the gradients alone; after allreduce_grads a step reduces once") {
  Ctx c(2);
  T a0 = tensor(c.ctx, 0, {0, 0}), a1 = tensor(c.ctx, 1, {0, 0});
  T k0 = tensor(c.ctx, 0, {1, 1}), k1 = tensor(c.ctx, 1, {2, 2});
  for (T* t : {&a0, &a1}) BRAID_CHECK_OK(braid_tensor_attach_grad(t->t, BRAID_GRAD_WRITE));
  braid_tensor params[2] = {a0.t, a1.t};
  braid_trainer_options o = BRAID_TRAINER_OPTIONS_INIT;
  o.optimizer.learning_rate = 1e308;
  braid_trainer tr = nullptr;
  BRAID_CHECK_OK(braid_trainer_create(2, 1, params, &o, &tr));
  auto both_backward = [&] {  // each replica's own gradient: 1 on replica 0, 2 on replica 1
    backward_through(c.ctx, a0, k0);
    backward_through(c.ctx, a1, k1);
  };
  auto grad0 = [&] {
    T g;
    BRAID_CHECK_OK(braid_tensor_grad(a0.t, g.out()));
    return floats(g);
  };
  both_backward();
  CHECK(braid_trainer_step(tr, 0.5) == BRAID_ERR_INVALID_ARGUMENT);
  CHECK(std::string(braid_last_error()).find("not finite") != std::string::npos);
  CHECK(grad0() == std::vector<float>{1, 1});  // not yet summed
  BRAID_CHECK_OK(braid_trainer_set_learning_rate(tr, 1));
  BRAID_CHECK_OK(braid_trainer_step(tr, 1));
  CHECK(floats(a0) == std::vector<float>{-3, -3});
  // allreduce_grads, then step: the step is the update.
  both_backward();
  BRAID_CHECK_OK(braid_trainer_allreduce_grads(tr));
  BRAID_CHECK_OK(braid_trainer_step(tr, 1));
  for (T* t : {&a0, &a1}) CHECK(floats(*t) == std::vector<float>{-6, -6});
  // allreduce_grads twice: summed once.
  both_backward();
  BRAID_CHECK_OK(braid_trainer_allreduce_grads(tr));
  BRAID_CHECK_OK(braid_trainer_allreduce_grads(tr));
  CHECK(grad0() == std::vector<float>{3, 3});
  BRAID_CHECK_OK(braid_trainer_update(tr, 1));
  for (T* t : {&a0, &a1}) CHECK(floats(*t) == std::vector<float>{-9, -9});
  // A backward after allreduce_grads writes new gradients: the step reduces those.
  both_backward();
  BRAID_CHECK_OK(braid_trainer_allreduce_grads(tr));
  both_backward();
  BRAID_CHECK_OK(braid_trainer_step(tr, 1));
  for (T* t : {&a0, &a1}) CHECK(floats(*t) == std::vector<float>{-12, -12});
  // A backward on one replica only after allreduce_grads: the other still holds the sum, which is
  // no new gradient; refused as mixed, not summed again.
  both_backward();
  BRAID_CHECK_OK(braid_trainer_allreduce_grads(tr));
  backward_through(c.ctx, a0, k0);
  CHECK(braid_trainer_step(tr, 1) == BRAID_ERR_INVALID_STATE);
  CHECK(floats(a0) == std::vector<float>{-12, -12});
  BRAID_CHECK_OK(braid_trainer_release(tr));
  // An Adam step while tracing is refused before the allreduce: the gradients are still each
  // replica's own.
  braid_trainer_options adam = BRAID_TRAINER_OPTIONS_INIT;
  adam.optimizer.kind = BRAID_OPTIMIZER_ADAM;
  BRAID_CHECK_OK(braid_trainer_create(2, 1, params, &adam, &tr));
  both_backward();
  BRAID_CHECK_OK(braid_graph_trace_begin(c.ctx, 0, nullptr));
  CHECK(braid_trainer_step(tr, 1) == BRAID_ERR_INVALID_STATE);
  braid_graph none = nullptr;
  (void)braid_graph_trace_end(c.ctx, 0, nullptr, &none);
  if (none) braid_graph_release(none);
  CHECK(grad0() == std::vector<float>{1, 1});
  BRAID_CHECK_OK(braid_trainer_release(tr));
}

// Freshness belongs to the gradient, as Gluon's flag: a backward before the trainer is made counts, a
// gradient another trainer's update used does not, and a buffer attached anew (zeros) does not.
TEST_CASE("Trainer: a backward before the trainer is made counts; a new gradient buffer is stale") {
  Ctx c(1);
  T w = tensor(c.ctx, 0, {0, 0}), k = tensor(c.ctx, 0, {1, 1});
  BRAID_CHECK_OK(braid_tensor_attach_grad(w.t, BRAID_GRAD_WRITE));
  backward_through(c.ctx, w, k);
  braid_trainer_options o = BRAID_TRAINER_OPTIONS_INIT;
  o.optimizer.learning_rate = 1;
  braid_trainer tr = nullptr, other = nullptr;
  BRAID_CHECK_OK(braid_trainer_create(1, 1, &w.t, &o, &tr));
  BRAID_CHECK_OK(braid_trainer_step(tr, 1));
  CHECK(floats(w) == std::vector<float>{-1, -1});
  BRAID_CHECK_OK(braid_trainer_create(1, 1, &w.t, &o, &other));
  CHECK(braid_trainer_step(other, 1) == BRAID_ERR_INVALID_STATE);  // tr used that gradient
  BRAID_CHECK_OK(braid_tensor_attach_grad(w.t, BRAID_GRAD_NULL));
  BRAID_CHECK_OK(braid_tensor_attach_grad(w.t, BRAID_GRAD_WRITE));
  CHECK(braid_trainer_step(tr, 1) == BRAID_ERR_INVALID_STATE);  // zeros no backward wrote
  backward_through(c.ctx, w, k);
  BRAID_CHECK_OK(braid_trainer_step(tr, 1));
  CHECK(floats(w) == std::vector<float>{-2, -2});
  // A trainer that has looked at the buffer before (a refused step) still sees that another trainer's
  // update used the gradient since: it was taken for fresh and applied twice.
  CHECK(braid_trainer_step(other, 1) == BRAID_ERR_INVALID_STATE);
  backward_through(c.ctx, w, k);
  BRAID_CHECK_OK(braid_trainer_step(tr, 1));
  CHECK(floats(w) == std::vector<float>{-3, -3});
  CHECK(braid_trainer_step(other, 1) == BRAID_ERR_INVALID_STATE);
  CHECK(floats(w) == std::vector<float>{-3, -3});
  BRAID_CHECK_OK(braid_trainer_release(other));
  BRAID_CHECK_OK(braid_trainer_release(tr));
  // Unknown flag bits are refused; a caller built before ABI 1.6 (no flags field) skips what no
  // backward reached instead of failing.
  o.flags = 2;
  CHECK(braid_trainer_create(1, 1, &w.t, &o, &tr) == BRAID_ERR_INVALID_ARGUMENT);
  o.flags = 0;
  o.struct_size = offsetof(braid_trainer_options, flags);
  BRAID_CHECK_OK(braid_trainer_create(1, 1, &w.t, &o, &tr));
  BRAID_CHECK_OK(braid_trainer_step(tr, 1));
  CHECK(floats(w) == std::vector<float>{-3, -3});
  BRAID_CHECK_OK(braid_trainer_release(tr));
}

TEST_CASE("Trainer refuses bad parameters") {
  Ctx c(2);
  T a = tensor(c.ctx, 0, {1, 2}), b = tensor(c.ctx, 1, {1, 2}), s = tensor(c.ctx, 1, {1});
  braid_trainer tr = nullptr;
  braid_tensor no_grad[2] = {a.t, b.t};
  CHECK(braid_trainer_create(2, 1, no_grad, nullptr, &tr) == BRAID_ERR_INVALID_STATE);
  BRAID_CHECK_OK(braid_tensor_attach_grad(a.t, BRAID_GRAD_WRITE));
  BRAID_CHECK_OK(braid_tensor_attach_grad(b.t, BRAID_GRAD_WRITE));
  BRAID_CHECK_OK(braid_tensor_attach_grad(s.t, BRAID_GRAD_WRITE));
  braid_tensor shapes[2] = {a.t, s.t};
  CHECK(braid_trainer_create(2, 1, shapes, nullptr, &tr) == BRAID_ERR_SHAPE);
  CHECK(braid_trainer_create(0, 1, no_grad, nullptr, &tr) == BRAID_ERR_INVALID_ARGUMENT);
  braid_trainer_options o = BRAID_TRAINER_OPTIONS_INIT;
  o.optimizer.momentum = 1.5;
  CHECK(braid_trainer_create(2, 1, no_grad, &o, &tr) == BRAID_ERR_INVALID_ARGUMENT);
  BRAID_CHECK_OK(braid_trainer_create(2, 1, no_grad, nullptr, &tr));
  CHECK(braid_trainer_step(tr, 0) == BRAID_ERR_INVALID_ARGUMENT);
  CHECK(braid_trainer_step(tr, NAN) == BRAID_ERR_INVALID_ARGUMENT);
  BRAID_CHECK_OK(braid_trainer_set_learning_rate(tr, 0.5));
  double lr = 0;
  BRAID_CHECK_OK(braid_trainer_learning_rate(tr, &lr));
  CHECK(lr == 0.5);
  BRAID_CHECK_OK(braid_trainer_release(tr));
  CHECK(braid_trainer_step(tr, 1) == BRAID_ERR_INVALID_ARGUMENT);
  // One tensor (or views over the same memory) as two parameters of a replica: updated twice a step.
  T a2 = tensor(c.ctx, 0, {1, 2}), b2 = tensor(c.ctx, 1, {1, 2});
  BRAID_CHECK_OK(braid_tensor_attach_grad(a2.t, BRAID_GRAD_WRITE));
  BRAID_CHECK_OK(braid_tensor_attach_grad(b2.t, BRAID_GRAD_WRITE));
  braid_tensor twice[4] = {a.t, a.t, b.t, b2.t};
  CHECK(braid_trainer_create(2, 2, twice, nullptr, &tr) == BRAID_ERR_INVALID_ARGUMENT);
  CHECK(std::string(braid_last_error()).find("share memory") != std::string::npos);
  braid_tensor distinct[4] = {a.t, a2.t, b.t, b2.t};
  BRAID_CHECK_OK(braid_trainer_create(2, 2, distinct, nullptr, &tr));
  BRAID_CHECK_OK(braid_trainer_release(tr));
  // Adam's epsilon may not be negative (torch.optim.Adam refuses it too); a KVStore optimizer whose
  // learning rate overflows once scaled by rescale_grad is refused when set, not at every push.
  braid_trainer_options adam = BRAID_TRAINER_OPTIONS_INIT;
  adam.optimizer.kind = BRAID_OPTIMIZER_ADAM;
  adam.optimizer.epsilon = -1;
  CHECK(braid_trainer_create(2, 2, distinct, &adam, &tr) == BRAID_ERR_INVALID_ARGUMENT);
  CHECK(std::string(braid_last_error()).find("epsilon") != std::string::npos);
  braid_kvstore kv = nullptr;
  BRAID_CHECK_OK(braid_kvstore_create(c.ctx, "local", &kv));
  braid_optimizer_params big = BRAID_OPTIMIZER_PARAMS_INIT;
  big.learning_rate = 1e308;
  big.rescale_grad = 10;
  CHECK(braid_kvstore_set_optimizer(kv, &big) == BRAID_ERR_INVALID_ARGUMENT);
  BRAID_CHECK_OK(braid_kvstore_release(kv));
}

TEST_CASE("bucketed allreduce overlaps backward (profiler timestamps)") {
  // Asynchronous whatever BRAID_ENGINE says: with every op run at its push nothing can overlap.
  braid_context_options async = BRAID_CONTEXT_OPTIONS_INIT;
  async.engine_mode = BRAID_ENGINE_ASYNC;
  Ctx c(2, async);
  // A model whose last layer's gradient is ready long before backward reaches the first layer:
  // a deep chain of large matmuls (deep enough that backward outlasts a time slice or two of other
  // processes holding the cores).
  const int layers = 10;
  const int64_t width = 384, batch = 512;
  std::vector<T> w0, w1;
  std::vector<braid_tensor> handles;
  for (int r = 0; r < 2; ++r)
    for (int l = 0; l < layers; ++l) {
      T w = tensor(c.ctx, r, uniform(static_cast<size_t>(width * width), 10 + l), {width, width});
      BRAID_CHECK_OK(braid_tensor_attach_grad(w.t, BRAID_GRAD_WRITE));
      (r == 0 ? w0 : w1).push_back(std::move(w));
    }
  for (auto* v : {&w0, &w1})
    for (T& w : *v) handles.push_back(w.t);
  braid_trainer_options o = BRAID_TRAINER_OPTIONS_INIT;
  o.bucket_bytes = width * width * sizeof(float);  // one layer per bucket
  braid_trainer tr = nullptr;
  BRAID_CHECK_OK(braid_trainer_create(2, layers, handles.data(), &o, &tr));
  // The engine must let the last layer's allreduce start while backward still runs on the first
  // layers (no false dependency on the whole backward): when it does not, no attempt shows it. On a
  // loaded machine one attempt may still not (the frontend preempted until backward has ended), so up
  // to three steps, and one overlap suffices.
  bool overlapped = false;
  for (int attempt = 0; attempt < 3 && !overlapped; ++attempt) {
    BRAID_CHECK_OK(braid_wait_all(c.ctx));
    BRAID_CHECK_OK(braid_profiler_start(c.ctx));
    for (int r = 0; r < 2; ++r) {
      T h = tensor(c.ctx, r, uniform(static_cast<size_t>(batch * width), 99), {batch, width});
      BRAID_CHECK_OK(braid_autograd_set_recording(c.ctx, 1, nullptr));
      for (T& w : (r == 0 ? w0 : w1)) {
        T next;
        BRAID_CHECK_OK(braid_matmul(h.t, w.t, 0, 0, next.out()));
        h = std::move(next);
      }
      T loss;
      BRAID_CHECK_OK(braid_reduce(BRAID_REDUCE_SUM, h.t, 0, nullptr, 0, loss.out()));
      BRAID_CHECK_OK(braid_autograd_set_recording(c.ctx, 0, nullptr));
      BRAID_CHECK_OK(braid_backward(1, &loss.t, nullptr, 0));
    }
    BRAID_CHECK_OK(braid_trainer_step(tr, 1.0));
    const auto events = test::stop_profiler_and_read(c.ctx);
    // On cpu:1, whose backward was pushed last (the allreduce of a bucket needs both replicas'
    // gradients): the first collective op starts before its last backward matmul ends.
    double first_collective = 1e300, last_backward_end = 0;
    for (const auto& e : events) {
      if (e.pid != 1) continue;
      if (e.name.rfind("allreduce", 0) == 0 || e.name.rfind("collective", 0) == 0)
        first_collective = std::min(first_collective, e.ts);
      if (e.name == "matmul" && e.tid == 0) last_backward_end = std::max(last_backward_end, e.end());
    }
    INFO("first collective op at " << first_collective << " us, last matmul ends at " << last_backward_end << " us");
    REQUIRE(last_backward_end > 0);
    overlapped = first_collective < last_backward_end;
  }
  CHECK(overlapped);
  BRAID_CHECK_OK(braid_trainer_release(tr));
}
