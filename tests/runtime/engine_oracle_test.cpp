// Engine semantics against a sequential oracle: thousands of random DAGs of reads and writes over
// variables on two devices, pushed from several threads at once, must give exactly the results of
// running the same ops one by one on the host (and never deadlock).
#include <atomic>
#include <cmath>
#include <random>
#include <thread>

#include "support.h"

namespace {

constexpr int kVars = 6;
constexpr int kLen = 5;

struct Program {
  // One step: k = f(i, j) for the op kind.
  struct Step {
    int kind, i, j, k;
    bool wait_after;
  };
  std::vector<Step> steps;
};

Program random_program(std::mt19937& rng, int length) {
  Program p;
  std::uniform_int_distribution<int> var(0, kVars - 1), kind(0, 4), coin(0, 9);
  for (int s = 0; s < length; ++s) p.steps.push_back({kind(rng), var(rng), var(rng), var(rng), coin(rng) == 0});
  return p;
}

void oracle_step(std::vector<std::vector<double>>& x, const Program::Step& s) {
  auto& k = x[static_cast<size_t>(s.k)];
  const auto a = x[static_cast<size_t>(s.i)], b = x[static_cast<size_t>(s.j)];
  for (int e = 0; e < kLen; ++e) {
    size_t u = static_cast<size_t>(e);
    switch (s.kind) {
      case 0: k[u] = (a[u] + b[u]) * 0.5; break;
      case 1: k[u] = std::max(k[u], a[u]); break;
      case 2: k[u] = k[u] - 0.25 * (a[u] + 0.0 * k[u]); break;
      case 3: k[u] = -a[u]; break;
      case 4: k[u] = a[u] * b[u] * 0.5 - 1.0; break;
    }
  }
}

// x[i] on its own device, moved to `dev` if needed (a copy the engine orders across devices).
test::T on_device(braid_tensor x, braid_device dev) {
  braid_device d = 0;
  braid_tensor_device(x, &d);
  test::T r;
  if (d == dev) {
    braid_tensor_retain(x);
    r.t = x;
  } else {
    BRAID_CHECK_OK(braid_copy(x, dev, r.out()));
  }
  return r;
}

void run_step(std::vector<test::T>& x, const Program::Step& s) {
  braid_tensor k = x[static_cast<size_t>(s.k)].t;
  braid_device dev = 0;
  braid_tensor_device(k, &dev);
  test::T a = on_device(x[static_cast<size_t>(s.i)].t, dev);
  test::T b = on_device(x[static_cast<size_t>(s.j)].t, dev);
  test::T t1, t2;
  switch (s.kind) {
    case 0:
      BRAID_CHECK_OK(braid_binary(BRAID_BINARY_ADD, a.t, b.t, t1.out()));
      BRAID_CHECK_OK(braid_binary_scalar(BRAID_BINARY_MUL, t1.t, 0.5, 0, t2.out()));
      BRAID_CHECK_OK(braid_copy_into(t2.t, k));
      break;
    case 1:
      BRAID_CHECK_OK(braid_binary(BRAID_BINARY_MAXIMUM, k, a.t, t1.out()));
      BRAID_CHECK_OK(braid_copy_into(t1.t, k));
      break;
    case 2: BRAID_CHECK_OK(braid_sgd_update(k, a.t, 0.25, 0.0)); break;
    case 3:
      BRAID_CHECK_OK(braid_unary(BRAID_UNARY_NEG, a.t, t1.out()));
      BRAID_CHECK_OK(braid_copy_into(t1.t, k));
      break;
    case 4:
      BRAID_CHECK_OK(braid_binary(BRAID_BINARY_MUL, a.t, b.t, t1.out()));
      BRAID_CHECK_OK(braid_binary_scalar(BRAID_BINARY_MUL, t1.t, 0.5, 0, t2.out()));
      t1 = test::T();
      BRAID_CHECK_OK(braid_binary_scalar(BRAID_BINARY_SUB, t2.t, 1.0, 0, t1.out()));
      BRAID_CHECK_OK(braid_copy_into(t1.t, k));
      break;
  }
  if (s.wait_after) BRAID_CHECK_OK(braid_tensor_wait_to_read(k));
}

int dags_per_thread() {
  const char* v = std::getenv("BRAID_TEST_DAGS");
  return v ? std::atoi(v) : 500;
}

}  // namespace

TEST_CASE("engine: random DAGs from several threads match a sequential oracle") {
  test::Ctx c(2);
  const int ndev = c.devices();
  REQUIRE(ndev >= 1);
  constexpr int kThreads = 4;
  const int dags = dags_per_thread();
  std::vector<int> mismatches(kThreads, 0), checked(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(1234u + static_cast<unsigned>(t));
      std::uniform_real_distribution<double> init(-2.0, 2.0);
      for (int d = 0; d < dags; ++d) {
        std::vector<std::vector<double>> expect(kVars, std::vector<double>(kLen));
        std::vector<test::T> vars;
        for (int v = 0; v < kVars; ++v) {
          for (auto& e : expect[static_cast<size_t>(v)]) e = std::round(init(rng) * 8) / 8;
          vars.push_back(test::from_vector(c.ctx, v % ndev, expect[static_cast<size_t>(v)]));
        }
        Program p = random_program(rng, 24);
        for (const auto& s : p.steps) {
          run_step(vars, s);
          oracle_step(expect, s);
        }
        for (int v = 0; v < kVars; ++v) {
          auto got = test::to_vector(vars[static_cast<size_t>(v)]);
          for (int e = 0; e < kLen; ++e) {
            double want = expect[static_cast<size_t>(v)][static_cast<size_t>(e)];
            if (std::abs(got[static_cast<size_t>(e)] - want) > 1e-12 * std::max(1.0, std::abs(want)))
              ++mismatches[static_cast<size_t>(t)];
          }
        }
        ++checked[static_cast<size_t>(t)];
      }
    });
  }
  for (auto& th : threads) th.join();
  int total = 0;
  for (int t = 0; t < kThreads; ++t) {
    CHECK(mismatches[static_cast<size_t>(t)] == 0);
    total += checked[static_cast<size_t>(t)];
  }
  CHECK(total == kThreads * dags);
  BRAID_CHECK_OK(braid_wait_all(c.ctx));
}

TEST_CASE("engine: write-after-read waits for every earlier reader") {
  // Many readers of x on two devices, then one write to x: every reader must see the old value.
  test::Ctx c(2);
  const int ndev = c.devices();
  std::vector<double> ones(4096, 1.0);
  test::T x = test::from_vector(c.ctx, 0, ones);
  std::vector<test::T> copies;
  for (int i = 0; i < 64; ++i) {
    test::T y;
    BRAID_CHECK_OK(braid_copy(x.t, i % ndev, y.out()));
    copies.push_back(std::move(y));
  }
  test::T twos = test::full(c.ctx, 0, BRAID_FLOAT64, {4096}, 2.0);
  BRAID_CHECK_OK(braid_copy_into(twos.t, x.t));
  for (auto& y : copies) {
    auto v = test::to_vector(y);
    CHECK(v.front() == 1.0);
    CHECK(v.back() == 1.0);
  }
  CHECK(test::to_vector(x).front() == 2.0);
}

// braid_tensor_to_host and write_host copy host memory themselves (a CPU tensor): a write another
// thread pushes while such a copy runs must wait for it, as program order says, or the read is torn
// (values of four different writes in one read) and a copy of the tensor mixes old and new.
TEST_CASE("engine: host reads and writes of a CPU tensor are not torn by another thread's writes") {
  test::Ctx c(1);
  const int64_t n = int64_t{1} << 18;  // 2 MiB of float64: a copy long enough to be caught in
  test::T x = test::full(c.ctx, 0, BRAID_FLOAT64, {n}, 1.0);
  std::vector<test::T> values;
  for (int k = 1; k <= 4; ++k) values.push_back(test::full(c.ctx, 0, BRAID_FLOAT64, {n}, k));
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (int i = 0; !stop.load(); ++i) {
      if (i % 2) {
        BRAID_CHECK_OK(braid_copy_into(values[static_cast<size_t>(i % 4)].t, x.t));
      } else {
        const std::vector<double> host(static_cast<size_t>(n), static_cast<double>(i % 4 + 1));
        BRAID_CHECK_OK(braid_tensor_write_host(x.t, host.data(), host.size() * sizeof(double)));
      }
    }
  });
  int torn = 0;
  std::vector<double> v(static_cast<size_t>(n));
  for (int r = 0; r < 100; ++r) {
    BRAID_CHECK_OK(braid_tensor_to_host(x.t, v.data(), v.size() * sizeof(double)));
    for (size_t i = 1; i < v.size(); ++i)
      if (v[i] != v[0]) {
        ++torn;
        break;
      }
    test::T clone;
    BRAID_CHECK_OK(braid_copy(x.t, 0, clone.out()));
    const std::vector<double> w = test::to_vector(clone);
    for (size_t i = 1; i < w.size(); ++i)
      if (w[i] != w[0]) {
        ++torn;
        break;
      }
  }
  stop = true;
  writer.join();
  CHECK(torn == 0);
}
