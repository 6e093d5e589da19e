// braid-test-dist-worker SCENARIO: one rank of a multi-process test, started by braid-run (or by the
// network-namespace test, one rank per namespace). It joins the process group from the launcher's
// variables, runs the scenario, checks every result itself and exits 0 only if all were right; a
// wrong value prints "rank R: FAIL ..." and exits 1.
//
//   collectives  every collective (sum, avg, max, min; float32, float64, int64), broadcast, reduce,
//                all-gather, reduce-scatter, send/recv, barrier; results used by later ops without a
//                wait; tensors on vulkan:0 and cuda:0 staged through host memory (where those devices exist)
//   train        data-parallel linear regression: each rank takes its shard of a global batch and
//                averages gradients with allreduce; after the steps, every rank's parameters are
//                bit-identical and equal (within float tolerance) one process training on the whole batch
//   trainer      the same through braid_trainer over every CPU device of the process and
//                braid_trainer_set_process_group (hierarchical: replicas, then processes), with
//                momentum, against a trainer of this process alone on the whole batch
//   kv_sync      a dist_sync KVStore (braid-run --servers S; "kv_device_sync" for dist_device_sync):
//                only rank 0's init is stored; a push from every worker (from two devices where the
//                process has two) is summed over workers; a second push waits for the round; int64 keys;
//                SGD on the servers equals the update computed here; a key split over the servers
//                (BRAID_KVSTORE_BIGARRAY_BOUND); errors for an unknown key and a float16 key
//   kv_async     a dist_async KVStore: rank 0's pushes are applied while rank 1 has pushed nothing (rank 1
//                waits on the process group until rank 0 has pulled), then every push is in the value
#include <braid.hpp>

#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

int g_rank = -1;
int g_failures = 0;

#define EXPECT(cond, ...)                                        \
  do {                                                           \
    if (!(cond)) {                                               \
      std::fprintf(stderr, "rank %d: FAIL %s: ", g_rank, #cond); \
      std::fprintf(stderr, __VA_ARGS__);                         \
      std::fprintf(stderr, "\n");                                \
      ++g_failures;                                              \
    }                                                            \
  } while (0)

template <class T>
std::vector<T> filled(size_t n, T (*f)(int rank, size_t i), int rank) {
  std::vector<T> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = f(rank, i);
  return v;
}

void collectives(braid::Context& ctx, braid::ProcessGroup& pg) {
  const int rank = pg.rank(), world = pg.world_size();
  const braid::Device cpu = ctx.find_device("cpu:0");
  const size_t n = 1000;  // not a multiple of the rank count: uneven segments inside the plugin

  // Sum of rank-dependent values, exact in float32 (small integers).
  auto value = [](int r, size_t i) { return static_cast<float>((r + 1) * (static_cast<int>(i % 7) + 1)); };
  std::vector<float> mine(n), sum(n, 0), mx(n), mn(n);
  for (size_t i = 0; i < n; ++i) {
    mine[i] = value(rank, i);
    for (int r = 0; r < world; ++r) sum[i] += value(r, i);
    mx[i] = value(world - 1, i);
    mn[i] = value(0, i);
  }
  {
    // The input comes from an op pushed just before, and the result feeds one pushed just after,
    // with no wait in between: the engine orders the collective between them.
    auto base = braid::Tensor::from_vector(ctx, cpu, {static_cast<int64_t>(n)}, mine);
    auto t = braid::binary(BRAID_BINARY_ADD, base, 0.0);
    pg.allreduce(t, BRAID_COLLECTIVE_SUM);
    auto doubled = braid::binary(BRAID_BINARY_MUL, t, 2.0);
    const auto got = t.to_vector<float>();
    const auto got2 = doubled.to_vector<float>();
    for (size_t i = 0; i < n; ++i) {
      EXPECT(got[i] == sum[i], "allreduce sum [%zu] = %g, expected %g", i, got[i], sum[i]);
      EXPECT(got2[i] == 2 * sum[i], "the op after allreduce [%zu] = %g, expected %g", i, got2[i], 2 * sum[i]);
      if (got[i] != sum[i] || got2[i] != 2 * sum[i]) break;
    }
  }
  {
    auto t = braid::Tensor::from_vector(ctx, cpu, {static_cast<int64_t>(n)}, mine);
    pg.allreduce(t, BRAID_COLLECTIVE_AVG);
    const auto got = t.to_vector<float>();
    for (size_t i = 0; i < n; ++i)
      if (std::fabs(got[i] - sum[i] / world) > 1e-6f * sum[i]) {
        EXPECT(false, "allreduce avg [%zu] = %g, expected %g", i, got[i], sum[i] / world);
        break;
      }
  }
  for (auto [op, expected, name] :
       {std::tuple{BRAID_COLLECTIVE_MAX, &mx, "max"}, std::tuple{BRAID_COLLECTIVE_MIN, &mn, "min"}}) {
    auto t = braid::Tensor::from_vector(ctx, cpu, {static_cast<int64_t>(n)}, mine);
    pg.allreduce(t, op);
    EXPECT(t.to_vector<float>() == *expected, "allreduce %s differs", name);
  }
  {
    // float64 and int64 (large values: an int64 sum must not pass through a double).
    std::vector<int64_t> big(16);
    for (size_t i = 0; i < big.size(); ++i) big[i] = (int64_t{1} << 53) + rank * 3 + static_cast<int64_t>(i);
    auto t = braid::Tensor::from_vector(ctx, cpu, {16}, big);
    pg.allreduce(t);
    const auto got = t.to_vector<int64_t>();
    for (size_t i = 0; i < big.size(); ++i) {
      int64_t want = 0;
      for (int r = 0; r < world; ++r) want += (int64_t{1} << 53) + r * 3 + static_cast<int64_t>(i);
      EXPECT(got[i] == want, "int64 sum [%zu] = %lld, expected %lld", i, static_cast<long long>(got[i]),
             static_cast<long long>(want));
    }
    std::vector<double> d(5, 0.1 * (rank + 1));
    auto td = braid::Tensor::from_vector(ctx, cpu, {5}, d);
    pg.allreduce(td);
    double want = 0;
    for (int r = 0; r < world; ++r) want += 0.1 * (r + 1);
    for (double x : td.to_vector<double>()) EXPECT(std::fabs(x - want) < 1e-12, "float64 sum %g, expected %g", x, want);
  }
  {
    // Broadcast from the last rank; reduce onto rank 0 leaves the others' tensors as they were.
    auto t = braid::Tensor::full(ctx, cpu, BRAID_FLOAT32, {33}, rank * 10.0 + 1);
    pg.broadcast(t, world - 1);
    for (float x : t.to_vector<float>()) EXPECT(x == (world - 1) * 10.0f + 1, "broadcast got %g", x);
    auto r = braid::Tensor::full(ctx, cpu, BRAID_FLOAT32, {9}, rank + 1.0);
    pg.reduce(r, 0, BRAID_COLLECTIVE_SUM);
    const float expect = rank == 0 ? world * (world + 1) / 2.0f : rank + 1.0f;
    for (float x : r.to_vector<float>()) EXPECT(x == expect, "reduce on rank %d got %g, expected %g", rank, x, expect);
  }
  {
    // All-gather: rank order; reduce-scatter: this rank's part of the sum.
    auto in = braid::Tensor::full(ctx, cpu, BRAID_INT32, {3}, rank);
    auto out = braid::Tensor::empty(ctx, cpu, BRAID_INT32, {world, 3});
    pg.all_gather(in, out);
    const auto g = out.to_vector<int32_t>();
    for (int r = 0; r < world; ++r)
      for (int j = 0; j < 3; ++j)
        EXPECT(g[static_cast<size_t>(r * 3 + j)] == r, "all_gather [%d][%d] = %d", r, j,
               g[static_cast<size_t>(r * 3 + j)]);
    std::vector<float> parts(static_cast<size_t>(world) * 4);
    for (size_t i = 0; i < parts.size(); ++i) parts[i] = static_cast<float>(i + rank);
    auto rin = braid::Tensor::from_vector(ctx, cpu, {static_cast<int64_t>(parts.size())}, parts);
    auto rout = braid::Tensor::empty(ctx, cpu, BRAID_FLOAT32, {4});
    pg.reduce_scatter(rin, rout, BRAID_COLLECTIVE_SUM);
    const auto rs = rout.to_vector<float>();
    for (size_t j = 0; j < 4; ++j) {
      float want = 0;
      for (int r = 0; r < world; ++r)
        want += static_cast<float>(static_cast<size_t>(rank) * 4 + j + static_cast<size_t>(r));
      EXPECT(rs[j] == want, "reduce_scatter [%zu] = %g, expected %g", j, rs[j], want);
    }
  }
  {
    // Point to point around a ring: even ranks send first, odd ranks receive first.
    const int next = (rank + 1) % world, prev = (rank + world - 1) % world;
    if (world > 1) {
      auto out = braid::Tensor::full(ctx, cpu, BRAID_FLOAT32, {100}, rank);
      auto in = braid::Tensor::empty(ctx, cpu, BRAID_FLOAT32, {100});
      if (rank % 2 == 0) {
        pg.send(out, next, 7);
        pg.recv(in, prev, 7);
      } else {
        pg.recv(in, prev, 7);
        pg.send(out, next, 7);
      }
      for (float x : in.to_vector<float>()) EXPECT(x == prev, "recv from %d got %g", prev, x);
    }
  }
  pg.barrier();
  // A tensor on a device without host memory goes through a staging copy. Every rank makes the call,
  // on the device where its context has one and on cpu:0 where not: ranks may differ (one process
  // driving cuda:0 beside CPU-only ones, docs/DISTRIBUTED.md).
  braid_device vk = -1;
  if (braid_context_find_device(ctx.get(), "vulkan:0", &vk) != BRAID_OK) vk = -1;
  for (const char* name : {"vulkan:0", "cuda:0"}) {
    braid_device d = -1;
    const bool there = braid_context_find_device(ctx.get(), name, &d) == BRAID_OK;
    auto t = braid::Tensor::full(ctx, there ? d : cpu, BRAID_FLOAT32, {257}, rank + 1.0);
    pg.allreduce(t);
    for (float x : t.to_vector<float>()) EXPECT(x == world * (world + 1) / 2.0f, "%s allreduce got %g", name, x);
    if (there) std::printf("rank %d: %s staged allreduce checked\n", rank, name);
  }
  // Several threads calling allreduce on the same tensors at once (issue 31's defect, across
  // processes): each call is one unit with its staging copies, so the result is a serial order's,
  // world^calls, on a host-memory device and on one staged through host memory alike.
  std::vector<braid::Tensor> shared{braid::Tensor::full(ctx, cpu, BRAID_FLOAT32, {4096}, 1.0)};
  if (vk >= 0) shared.push_back(braid::Tensor::full(ctx, vk, BRAID_FLOAT32, {4096}, 1.0));
  for (const braid::Tensor& t : shared) {
    std::vector<std::thread> threads;
    for (int k = 0; k < 3; ++k)
      threads.emplace_back([&] {
        for (int c = 0; c < 3; ++c) braid_process_group_allreduce(pg.get(), t.get(), BRAID_COLLECTIVE_SUM);
      });
    for (auto& th : threads) th.join();
    const float want = std::pow(static_cast<float>(world), 9.0f);
    for (float x : t.to_vector<float>())
      if (x != want) {
        EXPECT(false, "9 concurrent allreduces left %g, expected %g", x, want);
        break;
      }
  }
  ctx.wait_all();
}

// Every rank's values, gathered, must have the same bits as this rank's.
void expect_same_on_every_rank(braid::Context& ctx, braid::ProcessGroup& pg, braid::Device on,
                               const std::vector<float>& params) {
  const int rank = pg.rank(), world = pg.world_size();
  auto mine = braid::Tensor::from_vector(ctx, on, {static_cast<int64_t>(params.size())}, params);
  auto all = braid::Tensor::empty(ctx, on, BRAID_FLOAT32, {world, static_cast<int64_t>(params.size())});
  pg.all_gather(mine, all);
  const auto every = all.to_vector<float>();
  for (int r = 0; r < world; ++r)
    EXPECT(std::memcmp(every.data() + static_cast<size_t>(r) * params.size(), params.data(),
                       params.size() * sizeof(float)) == 0,
           "rank %d's parameters differ from rank %d's in their bits", r, rank);
}

// y = X w + b with squared loss, plain SGD. The global batch is 48 rows; rank r takes rows
// [r*48/world, (r+1)*48/world). A rank's gradient of its shard's mean loss, averaged over the ranks,
// is the gradient of the global batch's mean loss (equal shards).
void train(braid::Context& ctx, braid::ProcessGroup& pg) {
  const int rank = pg.rank(), world = pg.world_size();
  const braid::Device cpu = ctx.find_device("cpu:0");
  const int64_t batch = 48, features = 5;
  std::vector<float> x(static_cast<size_t>(batch * features)), y(static_cast<size_t>(batch));
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(static_cast<float>(i) * 0.37f);
  for (size_t i = 0; i < y.size(); ++i) y[i] = std::cos(static_cast<float>(i) * 0.11f);
  auto make_params = [&] {
    std::vector<float> w0(static_cast<size_t>(features));
    for (size_t i = 0; i < w0.size(); ++i) w0[i] = 0.1f * static_cast<float>(i);
    return std::pair{braid::Tensor::from_vector(ctx, cpu, {features, 1}, w0),
                     braid::Tensor::full(ctx, cpu, BRAID_FLOAT32, {1}, 0.5)};
  };
  auto step = [&](braid::Tensor& w, braid::Tensor& b, int64_t begin, int64_t end, braid::ProcessGroup* group) {
    const size_t rows = static_cast<size_t>(end - begin);
    std::vector<float> xs(x.begin() + begin * features, x.begin() + end * features);
    std::vector<float> ys(y.begin() + begin, y.begin() + end);
    auto X = braid::Tensor::from_vector(ctx, cpu, {static_cast<int64_t>(rows), features}, xs);
    auto Y = braid::Tensor::from_vector(ctx, cpu, {static_cast<int64_t>(rows), 1}, ys);
    braid::attach_grad(w);
    braid::attach_grad(b);
    braid::Tensor loss;
    {
      braid::AutogradScope rec(ctx);
      auto pred = braid::add(braid::matmul(X, w), b);
      auto err = braid::sub(pred, Y);
      loss = braid::binary(BRAID_BINARY_DIV, braid::sum(braid::mul(err, err)), static_cast<double>(rows));
    }
    braid::backward(loss);
    auto gw = braid::grad(w), gb = braid::grad(b);
    if (group) {
      group->allreduce(gw, BRAID_COLLECTIVE_AVG);
      group->allreduce(gb, BRAID_COLLECTIVE_AVG);
    }
    braid::check(braid_sgd_update(w.get(), gw.get(), 0.05, 0.0));
    braid::check(braid_sgd_update(b.get(), gb.get(), 0.05, 0.0));
  };
  auto [w, b] = make_params();
  auto [w1, b1] = make_params();  // one process on the whole batch: the reference
  const int64_t shard = batch / world;
  for (int s = 0; s < 20; ++s) {
    step(w, b, rank * shard, (rank + 1) * shard, &pg);
    step(w1, b1, 0, batch, nullptr);
  }
  const auto wd = w.to_vector<float>(), wr = w1.to_vector<float>();
  for (size_t i = 0; i < wd.size(); ++i)
    EXPECT(std::fabs(wd[i] - wr[i]) <= 1e-5f + 1e-4f * std::fabs(wr[i]),
           "w[%zu] = %.8g, one process on the whole batch has %.8g", i, wd[i], wr[i]);
  // Bit-identical on every rank: gather every rank's parameters and compare the bits.
  std::vector<float> params = wd;
  params.push_back(b.to_vector<float>()[0]);
  expect_same_on_every_rank(ctx, pg, cpu, params);
  std::printf("rank %d: w[0] %.6f (one process: %.6f)\n", rank, wd[0], wr[0]);
}

void trainer(braid::Context& ctx, braid::ProcessGroup& pg) {
  const int rank = pg.rank(), world = pg.world_size();
  std::vector<braid::Device> devices;
  for (braid::Device d : ctx.devices())
    if (std::string(ctx.device_info(d).backend) == "cpu") devices.push_back(d);
  const int replicas = static_cast<int>(devices.size());
  const int64_t batch = 48, features = 5;
  std::vector<float> x(static_cast<size_t>(batch * features)), y(static_cast<size_t>(batch));
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(static_cast<float>(i) * 0.37f);
  for (size_t i = 0; i < y.size(); ++i) y[i] = std::cos(static_cast<float>(i) * 0.11f);
  // Rank r's parameters start elsewhere than rank 0's: setting the group must broadcast rank 0's.
  auto make = [&](float start, std::vector<std::vector<braid::Tensor>>& params) {
    for (braid::Device d : devices) {
      std::vector<float> w0(static_cast<size_t>(features));
      for (size_t i = 0; i < w0.size(); ++i) w0[i] = start + 0.1f * static_cast<float>(i);
      auto w = braid::Tensor::from_vector(ctx, d, {features, 1}, w0);
      auto b = braid::Tensor::full(ctx, d, BRAID_FLOAT32, {1}, 0.5);
      braid::attach_grad(w);
      braid::attach_grad(b);
      params.push_back({w, b});
    }
    braid_trainer_options o = BRAID_TRAINER_OPTIONS_INIT;
    o.optimizer.learning_rate = 0.05;
    o.optimizer.momentum = 0.9;
    o.bucket_bytes = 16;  // several buckets: the two parameters are reduced apart
    return std::make_unique<braid::Trainer>(params, o);
  };
  // Rows [begin, end) split over the replicas; backward on each.
  auto backward = [&](std::vector<std::vector<braid::Tensor>>& params, int64_t begin, int64_t end) {
    const int64_t rows = end - begin, per = rows / replicas;
    for (int r = 0; r < replicas; ++r) {
      const int64_t b0 = begin + r * per, b1 = r == replicas - 1 ? end : b0 + per;
      std::vector<float> xs(x.begin() + b0 * features, x.begin() + b1 * features);
      std::vector<float> ys(y.begin() + b0, y.begin() + b1);
      auto X = braid::Tensor::from_vector(ctx, devices[static_cast<size_t>(r)], {b1 - b0, features}, xs);
      auto Y = braid::Tensor::from_vector(ctx, devices[static_cast<size_t>(r)], {b1 - b0, 1}, ys);
      braid::Tensor loss;
      {
        braid::AutogradScope rec(ctx);
        auto err = braid::sub(
            braid::add(braid::matmul(X, params[static_cast<size_t>(r)][0]), params[static_cast<size_t>(r)][1]), Y);
        loss = braid::sum(braid::mul(err, err));  // summed: the trainer divides by the global batch
      }
      braid::backward(loss);
    }
  };
  std::vector<std::vector<braid::Tensor>> dist_params, ref_params;
  auto dist = make(1.0f + static_cast<float>(rank), dist_params);
  braid::set_process_group(*dist, pg);
  auto ref = make(1.0f, ref_params);  // rank 0's start: what the group broadcast
  const int64_t shard = batch / world;
  for (int s = 0; s < 15; ++s) {
    backward(dist_params, rank * shard, (rank + 1) * shard);
    dist->step(static_cast<double>(batch));
    backward(ref_params, 0, batch);
    ref->step(static_cast<double>(batch));
  }
  const auto wd = dist_params[0][0].to_vector<float>(), wr = ref_params[0][0].to_vector<float>();
  for (size_t i = 0; i < wd.size(); ++i)
    EXPECT(std::fabs(wd[i] - wr[i]) <= 1e-5f + 1e-4f * std::fabs(wr[i]),
           "w[%zu] = %.8g, this process alone on the whole batch has %.8g", i, wd[i], wr[i]);
  for (int r = 1; r < replicas; ++r)
    EXPECT(dist_params[static_cast<size_t>(r)][0].to_vector<float>() == wd, "replica %d differs from replica 0", r);
  std::vector<float> params = wd;
  params.push_back(dist_params[0][1].to_vector<float>()[0]);
  const braid::Device cpu = devices[0];
  expect_same_on_every_rank(ctx, pg, cpu, params);
  std::printf("rank %d: %d replicas, w[0] %.6f (this process alone: %.6f)\n", rank, replicas, wd[0], wr[0]);
}

// Training that checkpoints after every step into `dir` (rank 0 writes; the parameters file, named by
// the step, is written last and so marks a complete checkpoint) and, started again by braid-run
// --max-restarts, resumes from the newest complete one. On the first attempt rank 1 dies (SIGKILL) at
// the start of step `kill_at` (-1: never). Each step's global batch is the same whatever the number of
// ranks, each rank taking its share (an elastic restart with fewer ranks re-splits it). Rank 0 writes each step's
// global loss to dir/loss.STEP as a hexadecimal float, so that an interrupted run's losses can be compared bit for bit
// with an uninterrupted one's (tests/distributed/resume_test.sh).
// Returns false when it stopped at a checkpoint for lost ranks to rejoin (braid-run --rejoin).
bool resume(braid::Context& ctx, braid::ProcessGroup& pg, const std::string& dir, int kill_at) {
  const int rank = pg.rank(), world = pg.world_size();
  const braid::Device cpu = ctx.find_device("cpu:0");
  const int64_t batch = 12, features = 4, steps = 8;  // 12 rows split over 2, 3 or 4 ranks
  const int64_t shard = batch / world;
  int first = 0;
  std::vector<float> w0(static_cast<size_t>(features), 0.25f), b0{0.5f};
  std::string states;
  for (int s = static_cast<int>(steps) - 1; s >= 0; --s) {
    const std::string params = dir + "/ckpt-" + std::to_string(s) + ".params";
    if (FILE* f = std::fopen(params.c_str(), "rb")) {
      std::fclose(f);
      const auto loaded = braid::load_safetensors(ctx, cpu, params, {"w", "b"});
      w0 = loaded[0].to_vector<float>();
      b0 = loaded[1].to_vector<float>();
      states = dir + "/ckpt-" + std::to_string(s) + ".states";
      first = s + 1;
      break;
    }
  }
  auto w = braid::Tensor::from_vector(ctx, cpu, {features, 1}, w0);
  auto b = braid::Tensor::from_vector(ctx, cpu, {1}, b0);
  braid::attach_grad(w);
  braid::attach_grad(b);
  braid_trainer_options o = BRAID_TRAINER_OPTIONS_INIT;
  o.optimizer.learning_rate = 0.02;
  o.optimizer.momentum = 0.9;
  braid::Trainer trainer({{w, b}}, o);
  braid::set_process_group(trainer, pg);
  if (!states.empty()) trainer.load_states(states);
  if (first > 0) std::printf("rank %d of %d: resumed at step %d\n", rank, world, first);
  for (int s = first; s < steps; ++s) {
    if (s == kill_at && rank == 1 && std::getenv("BRAID_RESTART") && std::string(std::getenv("BRAID_RESTART")) == "0")
      ::raise(SIGKILL);  // as a crash would, between two steps
    std::vector<float> x(static_cast<size_t>(shard * features)), y(static_cast<size_t>(shard));
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = std::sin(static_cast<float>(static_cast<int64_t>(i) + (s * batch + rank * shard) * features) * 0.37f);
    for (size_t i = 0; i < y.size(); ++i)
      y[i] = std::cos(static_cast<float>(static_cast<int64_t>(i) + s * batch + rank * shard) * 0.11f);
    auto X = braid::Tensor::from_vector(ctx, cpu, {shard, features}, x);
    auto Y = braid::Tensor::from_vector(ctx, cpu, {shard, 1}, y);
    braid::Tensor loss;
    {
      braid::AutogradScope rec(ctx);
      auto err = braid::sub(braid::add(braid::matmul(X, w), b), Y);
      loss = braid::sum(braid::mul(err, err));
    }
    braid::backward(loss);
    trainer.step(static_cast<double>(batch));
    auto total = braid::Tensor::from_vector(ctx, cpu, {1}, loss.to_vector<float>());
    pg.allreduce(total);
    const float l = total.to_vector<float>()[0];
    if (rank == 0) {
      const std::string base = dir + "/ckpt-" + std::to_string(s);
      trainer.save_states(base + ".states");
      const std::pair<std::string, braid::Tensor> named[] = {{"w", w}, {"b", b}};
      braid::save_safetensors(base + ".params", named);  // last: the checkpoint is complete
      if (FILE* f = std::fopen((dir + "/loss." + std::to_string(s)).c_str(), "w")) {
        std::fprintf(f, "%a\n", static_cast<double>(l));
        std::fclose(f);
      }
    }
    pg.barrier();                                // every rank past this step's checkpoint
    if (s + 1 < steps && pg.rejoin_pending()) {  // the checkpoint is complete: stop for the lost ranks
      std::printf("rank %d of %d: stopping after step %d for lost ranks to rejoin\n", rank, world, s);
      return false;
    }
  }
  std::printf("rank %d: trained to step %d\n", rank, static_cast<int>(steps));
  return true;
}

// Expects `f` to throw a braid::Error with `status` whose message contains `text`.
template <class F>
void expect_error(F f, braid_status status, const char* text, const char* what) {
  try {
    f();
    EXPECT(false, "%s succeeded", what);
  } catch (const braid::Error& e) {
    EXPECT(e.status() == status && std::strstr(e.what(), text), "%s: status %d, message '%s' (expected '%s')", what,
           static_cast<int>(e.status()), e.what(), text);
  }
}

void kv_sync(braid::Context& ctx, braid::ProcessGroup& pg, const char* type) {
  const int rank = pg.rank(), size = pg.world_size();
  const braid::Device cpu = ctx.find_device("cpu:0");
  braid::KVStore kv(ctx, type);
  const braid_kvstore_info info = kv.info();
  EXPECT(kv.type() == type, "type %s", kv.type().c_str());
  EXPECT(info.rank == rank && info.num_workers == size && info.num_servers >= 1, "info %d %d %d", info.rank,
         info.num_workers, info.num_servers);
  // Only rank 0's init value is kept.
  const size_t n = 5, big = 1000;  // `big` is split over the servers when the bound is below it
  auto junk = [&](size_t m) { return std::vector<float>(m, rank == 0 ? 0.f : -7.f); };
  std::vector<float> init_small = junk(n), init_big = junk(big);
  for (size_t i = 0; i < n; ++i) init_small[i] += rank == 0 ? static_cast<float>(i) : 0.f;
  for (size_t i = 0; i < big; ++i) init_big[i] += rank == 0 ? static_cast<float>(i) * 0.5f : 0.f;
  kv.init(3, braid::Tensor::from_vector(ctx, cpu, {static_cast<int64_t>(n)}, init_small));
  kv.init(7, braid::Tensor::from_vector(ctx, cpu, {static_cast<int64_t>(big)}, init_big));
  braid::Tensor out = braid::Tensor::zeros(ctx, cpu, BRAID_FLOAT32, {static_cast<int64_t>(n)});
  kv.pull(3, out);
  std::vector<float> got = out.to_vector<float>();
  for (size_t i = 0; i < n; ++i) EXPECT(got[i] == static_cast<float>(i), "init: [%zu] = %g", i, got[i]);
  braid::Tensor out_big = braid::Tensor::zeros(ctx, cpu, BRAID_FLOAT32, {static_cast<int64_t>(big)});
  kv.pull(7, out_big);
  got = out_big.to_vector<float>();
  for (size_t i = 0; i < big; ++i)
    if (got[i] != static_cast<float>(i) * 0.5f) {
      EXPECT(false, "init big: [%zu] = %g", i, got[i]);
      break;
    }

  // A push from every worker: the sum over workers replaces the value (no optimizer). From two devices
  // where there are two: they are summed here first.
  std::vector<braid::Device> devices{cpu};
  braid_device second = 0;
  if (braid_context_find_device(ctx.get(), "cpu:1", &second) == BRAID_OK) devices.push_back(second);
  const float per_worker = static_cast<float>(devices.size());
  for (int round = 1; round <= 2; ++round) {  // two pushes in a row: the second waits for the first round
    std::vector<braid::Tensor> values;
    for (braid::Device d : devices) {
      std::vector<float> v(big);
      for (size_t i = 0; i < big; ++i) v[i] = static_cast<float>((rank + 1) * round) * static_cast<float>(i % 7);
      values.push_back(braid::Tensor::from_vector(ctx, d, {static_cast<int64_t>(big)}, v));
    }
    kv.push(7, braid::List<braid::Tensor>(values.data(), values.size()));
  }
  kv.pull(7, out_big);
  got = out_big.to_vector<float>();
  const float ranks_sum = static_cast<float>(size * (size + 1) / 2);
  for (size_t i = 0; i < big; ++i) {
    const float want = 2.f * ranks_sum * per_worker * static_cast<float>(i % 7);
    if (got[i] != want) {
      EXPECT(false, "push: [%zu] = %g, expected %g", i, got[i], want);
      break;
    }
  }

  // int64 values, summed exactly.
  std::vector<int64_t> ints{1, -2, 3, int64_t{1} << 40};
  for (auto& x : ints) x *= rank + 1;
  braid::Tensor ti = braid::Tensor::from_vector(ctx, cpu, {4}, ints);
  kv.init(9, ti);
  kv.push(9, ti);
  kv.pull(9, ti);
  const std::vector<int64_t> sum_i = ti.to_vector<int64_t>();
  const int64_t k = size * (size + 1) / 2;
  EXPECT(sum_i[0] == k && sum_i[1] == -2 * k && sum_i[2] == 3 * k && sum_i[3] == (int64_t{1} << 40) * k,
         "int64 sum %lld %lld", static_cast<long long>(sum_i[0]), static_cast<long long>(sum_i[3]));

  // SGD on the servers: w -= lr * (sum of the workers' gradients), three rounds.
  braid_optimizer_params sgd = BRAID_OPTIMIZER_PARAMS_INIT;
  sgd.learning_rate = 0.25;
  kv.set_optimizer(sgd);
  std::vector<double> w0{1.0, -2.0, 0.5};
  kv.init(11, braid::Tensor::from_vector(ctx, cpu, {3}, w0));
  braid::Tensor w = braid::Tensor::zeros(ctx, cpu, BRAID_FLOAT64, {3});
  std::vector<double> expect = w0;
  for (int step = 0; step < 3; ++step) {
    std::vector<double> g{static_cast<double>(rank + 1), 1.0, -0.5 * (rank + 1)};
    kv.push(11, braid::Tensor::from_vector(ctx, cpu, {3}, g));
    kv.pull(11, w);
    const double ks = static_cast<double>(k);
    const double sums[3] = {ks, static_cast<double>(size), -0.5 * ks};
    for (int i = 0; i < 3; ++i) expect[i] -= 0.25 * sums[i];
    const std::vector<double> wv = w.to_vector<double>();
    for (int i = 0; i < 3; ++i)
      EXPECT(std::fabs(wv[i] - expect[i]) < 1e-12, "sgd step %d: w[%d] = %.17g, expected %.17g", step, i, wv[i],
             expect[i]);
  }

  // Refusals name the problem and leave the store usable.
  expect_error([&] { kv.pull(42, out); }, BRAID_ERR_INVALID_ARGUMENT, "not initialised", "pull of an unknown key");
  if (rank == 0) {
    expect_error([&] { kv.init(43, braid::Tensor::zeros(ctx, cpu, BRAID_FLOAT16, {2})); }, BRAID_ERR_DTYPE, "float16",
                 "init of a float16 key");
  } else {
    kv.init(43, braid::Tensor::zeros(ctx, cpu, BRAID_FLOAT16, {2}));  // only rank 0's is sent
  }
  kv.barrier();
  kv.pull(3, out);
  got = out.to_vector<float>();
  EXPECT(got[4] == 4.f, "after the refusals: [4] = %g", got[4]);
  std::printf("rank %d: %s over %d servers: w[0] %.4f\n", rank, type, info.num_servers, expect[0]);
}

void kv_async(braid::Context& ctx, braid::ProcessGroup& pg) {
  const int rank = pg.rank(), size = pg.world_size();
  const braid::Device cpu = ctx.find_device("cpu:0");
  braid::KVStore kv(ctx, "dist_async");
  braid_optimizer_params sgd = BRAID_OPTIMIZER_PARAMS_INIT;
  sgd.learning_rate = 1.0;
  kv.set_optimizer(sgd);
  kv.init(5, braid::Tensor::zeros(ctx, cpu, BRAID_FLOAT64, {2}));
  braid::Tensor g = braid::Tensor::from_vector(ctx, cpu, {2}, std::vector<double>{double(rank + 1), 1.0});
  braid::Tensor w = braid::Tensor::zeros(ctx, cpu, BRAID_FLOAT64, {2});
  if (rank == 0) {
    // Applied as they arrive: no other worker has pushed yet (they wait for the barrier below), and
    // under dist_sync this pull would wait for them.
    for (int i = 0; i < 3; ++i) kv.push(5, g);
    kv.pull(5, w);
    const std::vector<double> v = w.to_vector<double>();
    EXPECT(v[0] == -3.0 && v[1] == -3.0, "async: rank 0 alone: %g %g", v[0], v[1]);
  }
  pg.barrier();
  if (rank != 0)
    for (int i = 0; i < 3; ++i) kv.push(5, g);
  kv.barrier();
  kv.pull(5, w);
  const std::vector<double> v = w.to_vector<double>();
  const double all = -3.0 * size * (size + 1) / 2;
  EXPECT(v[0] == all && v[1] == -3.0 * size, "async: every push: %g %g (expected %g %g)", v[0], v[1], all, -3.0 * size);
  std::printf("rank %d: dist_async w %g\n", rank, v[0]);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::string(argv[1]) == "resume") {  // resume DIR KILL_AT
    try {
      braid::Context ctx;
      braid::ProcessGroup pg(ctx);
      g_rank = pg.rank();
      if (!resume(ctx, pg, argv[2], std::atoi(argv[3]))) return BRAID_EXIT_REJOIN;  // after leaving the group
    } catch (const braid::Error& e) {
      std::fprintf(stderr, "rank %d: FAIL: %s\n", g_rank, e.what());
      return 1;
    }
    return g_failures ? 1 : 0;
  }
  if (argc != 2) {
    std::fprintf(stderr,
                 "usage: braid-test-dist-worker collectives|train|trainer|kv_sync|kv_device_sync|kv_async   (started "
                 "by braid-run)\n");
    return 2;
  }
  const std::string scenario = argv[1];
  try {
    braid::Context ctx;
    braid::ProcessGroup pg(ctx);
    g_rank = pg.rank();
    if (scenario == "collectives") {
      collectives(ctx, pg);
    } else if (scenario == "train") {
      train(ctx, pg);
    } else if (scenario == "trainer") {
      trainer(ctx, pg);
    } else if (scenario == "kv_sync") {
      kv_sync(ctx, pg, "dist_sync");
    } else if (scenario == "kv_device_sync") {
      kv_sync(ctx, pg, "dist_device_sync");
    } else if (scenario == "kv_async") {
      kv_async(ctx, pg);
    } else {
      std::fprintf(stderr, "unknown scenario '%s'\n", scenario.c_str());
      return 2;
    }
  } catch (const braid::Error& e) {
    std::fprintf(stderr, "rank %d: FAIL: %s\n", g_rank, e.what());
    return 1;
  }
  if (g_failures) return 1;
  std::printf("rank %d: %s passed\n", g_rank, scenario.c_str());
  return 0;
}
