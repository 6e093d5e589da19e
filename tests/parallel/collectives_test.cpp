// Every collective against its definition, computed here on the host: 1 to 8 CPU devices (they share
// the cores: BRAID_CPU_DEVICES=8 on 2 cores is still 8 devices with their own queues), every
// algorithm, odd sizes, integer (exact) and float dtypes, and the error paths.
#include <unistd.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "runtime/support.h"
#include "runtime/trace.h"

using test::Ctx;
using test::T;

namespace {

// Host values of tensor i element k, integral so every dtype holds them exactly, small so that
// products of 8 stay exact in float32 (|v| <= 3: 3^8 = 6561).
double value(int i, int64_t k) { return static_cast<double>(((i * 7 + k * 13) % 7) - 3); }

template <class E>
T make(braid_context ctx, braid_device dev, braid_dtype dtype, int i, int64_t n) {
  std::vector<E> v(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) v[static_cast<size_t>(k)] = static_cast<E>(value(i, k));
  T t;
  BRAID_CHECK_OK(braid_tensor_from_host(ctx, dev, dtype, 1, &n, v.data(), v.size() * sizeof(E), t.out()));
  return t;
}

T make_any(braid_context ctx, braid_device dev, braid_dtype dtype, int i, int64_t n) {
  switch (dtype) {
    case BRAID_FLOAT32: return make<float>(ctx, dev, dtype, i, n);
    case BRAID_FLOAT64: return make<double>(ctx, dev, dtype, i, n);
    case BRAID_INT32: return make<int32_t>(ctx, dev, dtype, i, n);
    default: return make<int64_t>(ctx, dev, dtype, i, n);
  }
}

std::vector<double> read(const T& t, braid_dtype dtype) {
  int64_t n = 0;
  braid_tensor_numel(t.t, &n);
  std::vector<double> out(static_cast<size_t>(n));
  auto get = [&](auto tag) {
    using E = decltype(tag);
    std::vector<E> v(static_cast<size_t>(n));
    BRAID_CHECK_OK(braid_tensor_to_host(t.t, v.data(), v.size() * sizeof(E)));
    std::transform(v.begin(), v.end(), out.begin(), [](E e) { return static_cast<double>(e); });
  };
  switch (dtype) {
    case BRAID_FLOAT32: get(float{}); break;
    case BRAID_FLOAT64: get(double{}); break;
    case BRAID_INT32: get(int32_t{}); break;
    default: get(int64_t{}); break;
  }
  return out;
}

double reduce_def(braid_collective_op op, int n, int64_t k) {
  double acc = value(0, k);
  for (int i = 1; i < n; ++i) {
    const double v = value(i, k);
    switch (op) {
      case BRAID_COLLECTIVE_PROD: acc *= v; break;
      case BRAID_COLLECTIVE_MAX: acc = std::max(acc, v); break;
      case BRAID_COLLECTIVE_MIN: acc = std::min(acc, v); break;
      default: acc += v; break;
    }
  }
  return op == BRAID_COLLECTIVE_AVG ? acc / n : acc;
}

std::vector<braid_tensor> handles(const std::vector<T>& ts) {
  std::vector<braid_tensor> h;
  for (const T& t : ts) h.push_back(t.t);
  return h;
}

const char* algorithm_name(braid_allreduce_algorithm a) {
  const char* names[] = {"auto", "naive", "tree", "ring", "biring", "direct"};
  static_assert(sizeof names / sizeof names[0] == BRAID_ALLREDUCE_ALGORITHM_COUNT);
  return names[a];
}

}  // namespace

TEST_CASE("allreduce equals its definition: 1-8 devices, every algorithm, op and dtype, odd sizes") {
  for (int n = 1; n <= 8; ++n) {
    Ctx c(n);
    REQUIRE(c.devices() == n);
    for (int64_t size : {int64_t{1}, int64_t{5}, int64_t{1031}}) {
      for (int a = BRAID_ALLREDUCE_AUTO; a < BRAID_ALLREDUCE_ALGORITHM_COUNT; ++a) {
        for (braid_dtype dtype : {BRAID_FLOAT32, BRAID_FLOAT64, BRAID_INT32, BRAID_INT64}) {
          for (int o = 0; o < BRAID_COLLECTIVE_OP_COUNT; ++o) {
            const auto op = static_cast<braid_collective_op>(o);
            const bool is_float = dtype == BRAID_FLOAT32 || dtype == BRAID_FLOAT64;
            if (op == BRAID_COLLECTIVE_AVG && !is_float) continue;
            CAPTURE(n);
            CAPTURE(size);
            CAPTURE(algorithm_name(static_cast<braid_allreduce_algorithm>(a)));
            CAPTURE(braid_dtype_name(dtype));
            CAPTURE(o);
            std::vector<T> ts;
            for (int i = 0; i < n; ++i) ts.push_back(make_any(c.ctx, i, dtype, i, size));
            braid_collective_options opt = BRAID_COLLECTIVE_OPTIONS_INIT;
            opt.op = op;
            opt.algorithm = static_cast<braid_allreduce_algorithm>(a);
            const std::vector<braid_tensor> h = handles(ts);
            BRAID_CHECK_OK(braid_allreduce(n, h.data(), &opt));
            std::vector<double> first = read(ts[0], dtype);
            for (int i = 0; i < n; ++i) {
              std::vector<double> got = read(ts[static_cast<size_t>(i)], dtype);
              CHECK(got == first);  // every device holds the same bits
              for (int64_t k = 0; k < size; ++k) {
                const double want = reduce_def(op, n, k);
                if (is_float)
                  REQUIRE(got[static_cast<size_t>(k)] == doctest::Approx(want).epsilon(1e-6));
                else
                  REQUIRE(got[static_cast<size_t>(k)] == want);
              }
            }
          }
        }
      }
    }
  }
}

TEST_CASE("DIRECT allreduce over large tensors: every device's slice, chained steps beyond 4 and 6 devices") {
  // Large enough for one slice per device (float32: 280 KiB, int64: 560 KiB), odd so the slices differ
  // in length; 5 to 8 devices take the kernel's chained steps (more tensors than inputs or outputs).
  const int64_t size = 70001;
  for (int n = 2; n <= 8; ++n) {
    Ctx c(n);
    for (braid_dtype dtype : {BRAID_FLOAT32, BRAID_INT64}) {
      for (int o = 0; o < BRAID_COLLECTIVE_OP_COUNT; ++o) {
        const auto op = static_cast<braid_collective_op>(o);
        if (op == BRAID_COLLECTIVE_AVG && dtype != BRAID_FLOAT32) continue;
        CAPTURE(n);
        CAPTURE(braid_dtype_name(dtype));
        CAPTURE(o);
        std::vector<T> ts;
        for (int i = 0; i < n; ++i) ts.push_back(make_any(c.ctx, i, dtype, i, size));
        braid_collective_options opt = BRAID_COLLECTIVE_OPTIONS_INIT;
        opt.op = op;
        opt.algorithm = BRAID_ALLREDUCE_DIRECT;
        const std::vector<braid_tensor> h = handles(ts);
        BRAID_CHECK_OK(braid_allreduce(n, h.data(), &opt));
        const std::vector<double> first = read(ts[0], dtype);
        int64_t wrong = 0, differ = 0;
        for (int64_t k = 0; k < size; ++k) {
          const double want = reduce_def(op, n, k), got = first[static_cast<size_t>(k)];
          if (std::abs(got - want) > 1e-6 * std::max(1.0, std::abs(want))) ++wrong;
        }
        for (int i = 1; i < n; ++i) differ += read(ts[static_cast<size_t>(i)], dtype) != first;
        CHECK(wrong == 0);
        CHECK(differ == 0);  // every device holds the same bits
      }
    }
  }
}

TEST_CASE("DIRECT allreduce waits for earlier readers and passes poison on to every tensor") {
  Ctx c(2);
  const int64_t size = 1 << 20;
  T x = make_any(c.ctx, 0, BRAID_FLOAT32, 0, size), y = make_any(c.ctx, 1, BRAID_FLOAT32, 1, size);
  const std::vector<double> x_before = read(x, BRAID_FLOAT32);
  // A reader of x pushed before the allreduce (on the compute queue; the allreduce runs on the comm
  // queues) must see x as it was, however the two are scheduled.
  T copy;
  BRAID_CHECK_OK(braid_unary(BRAID_UNARY_NEG, x.t, copy.out()));
  braid_tensor h[2] = {x.t, y.t};
  braid_collective_options opt = BRAID_COLLECTIVE_OPTIONS_INIT;
  opt.algorithm = BRAID_ALLREDUCE_DIRECT;
  BRAID_CHECK_OK(braid_allreduce(2, h, &opt));
  const std::vector<double> negated = read(copy, BRAID_FLOAT32);
  int64_t wrong = 0;
  for (int64_t k = 0; k < size; ++k) wrong += negated[static_cast<size_t>(k)] != -x_before[static_cast<size_t>(k)];
  CHECK(wrong == 0);
  const std::vector<double> summed = read(y, BRAID_FLOAT32);
  for (int64_t k = 0; k < size; ++k) wrong += summed[static_cast<size_t>(k)] != reduce_def(BRAID_COLLECTIVE_SUM, 2, k);
  CHECK(wrong == 0);

  // An input whose producer failed poisons both tensors: every part reads it, and the join that
  // becomes the tensors' last writer inherits the failure.
  // softmax_cross_entropy with a label out of range is accepted and fails in the kernel.
  T logits = test::full(c.ctx, 0, BRAID_FLOAT32, {2, 3}, 0.5);
  std::vector<int32_t> labels = {1, 7};
  const int64_t two = 2;
  T label, loss;
  BRAID_CHECK_OK(braid_tensor_from_host(c.ctx, 0, BRAID_INT32, 1, &two, labels.data(), 8, label.out()));
  BRAID_CHECK_OK(braid_softmax_cross_entropy(logits.t, label.t, loss.out()));
  T other = test::full(c.ctx, 1, BRAID_FLOAT32, {2}, 1.0);
  braid_tensor g[2] = {loss.t, other.t};
  BRAID_CHECK_OK(braid_allreduce(2, g, &opt));
  float v[2];
  CHECK(braid_tensor_to_host(other.t, v, sizeof v) == BRAID_ERR_KERNEL);
  CHECK(braid_wait_all(c.ctx) == BRAID_ERR_KERNEL);
}

TEST_CASE("DIRECT allreduce: a device's slice does not wait for another's (profiler timestamps)") {
  // Asynchronous whatever BRAID_ENGINE says: with every op run at its push nothing can overlap.
  braid_context_options async = BRAID_CONTEXT_OPTIONS_INIT;
  async.engine_mode = BRAID_ENGINE_ASYNC;
  Ctx c(2, async);
  // cpu:0's comm queue is kept busy by unrelated reductions onto cpu:0 of large tensors (six of 64 MiB:
  // tens of milliseconds); cpu:1's stays free, so the allreduce's slice on cpu:1 runs and ends before
  // the slice on cpu:0 can begin. Had the engine ordered the slices like two writers of one tensor,
  // cpu:1's would start only after cpu:0's ended. Timestamps, not durations: this holds on a loaded
  // machine, and on one core as well as two (the scheduler lets cpu:1's thread run long before the
  // reductions end); two slices merely running at the same time would hold only with two free cores.
  const int64_t big = 16 << 20, size = 1 << 20;
  T a = make_any(c.ctx, 0, BRAID_FLOAT32, 0, big), b = make_any(c.ctx, 1, BRAID_FLOAT32, 1, big);
  T x = make_any(c.ctx, 0, BRAID_FLOAT32, 0, size), y = make_any(c.ctx, 1, BRAID_FLOAT32, 1, size);
  BRAID_CHECK_OK(braid_wait_all(c.ctx));
  BRAID_CHECK_OK(braid_profiler_start(c.ctx));
  braid_tensor ab[2] = {a.t, b.t};
  braid_collective_options sum = BRAID_COLLECTIVE_OPTIONS_INIT;
  for (int i = 0; i < 6; ++i) BRAID_CHECK_OK(braid_reduce_to(2, ab, 0, &sum));
  braid_tensor h[2] = {x.t, y.t};
  braid_collective_options opt = BRAID_COLLECTIVE_OPTIONS_INIT;
  opt.algorithm = BRAID_ALLREDUCE_DIRECT;
  BRAID_CHECK_OK(braid_allreduce(2, h, &opt));
  const auto events = test::stop_profiler_and_read(c.ctx);
  std::vector<std::pair<double, double>> spans(2, {-1, -1});
  for (const auto& e : events)
    if (e.name == "allreduce_direct" && e.pid >= 0 && e.pid < 2) spans[static_cast<size_t>(e.pid)] = {e.ts, e.end()};
  INFO("cpu:0 slice " << spans[0].first << ".." << spans[0].second << " us, cpu:1 slice " << spans[1].first << ".."
                      << spans[1].second << " us");
  REQUIRE(spans[0].first >= 0);
  REQUIRE(spans[1].first >= 0);
  CHECK(spans[1].second <= spans[0].first);
  const std::vector<double> got = read(y, BRAID_FLOAT32);
  int64_t wrong = 0;
  for (int64_t k = 0; k < size; ++k) wrong += got[static_cast<size_t>(k)] != reduce_def(BRAID_COLLECTIVE_SUM, 2, k);
  CHECK(wrong == 0);
}

TEST_CASE("allreduce of float32 random data matches a float64 sum within rounding") {
  Ctx c(4);
  const int n = 4;
  const int64_t size = 100003;  // odd, larger than AUTO's tree threshold: the ring
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.f, 1.f);
  std::vector<std::vector<float>> host(n, std::vector<float>(size));
  std::vector<T> ts;
  for (int i = 0; i < n; ++i) {
    for (float& v : host[static_cast<size_t>(i)]) v = dist(rng);
    T t;
    BRAID_CHECK_OK(braid_tensor_from_host(c.ctx, i, BRAID_FLOAT32, 1, &size, host[static_cast<size_t>(i)].data(),
                                          size * sizeof(float), t.out()));
    ts.push_back(std::move(t));
  }
  const std::vector<braid_tensor> h = handles(ts);
  BRAID_CHECK_OK(braid_allreduce(n, h.data(), nullptr));
  for (int i = 0; i < n; ++i) {
    std::vector<double> got = read(ts[static_cast<size_t>(i)], BRAID_FLOAT32);
    for (int64_t k = 0; k < size; ++k) {
      double want = 0;
      for (int j = 0; j < n; ++j) want += host[static_cast<size_t>(j)][static_cast<size_t>(k)];
      REQUIRE(std::abs(got[static_cast<size_t>(k)] - want) <= 1e-5 * (1 + std::abs(want)));
    }
  }
}

TEST_CASE("reduce_to and broadcast: every root, others left alone") {
  for (int n : {1, 2, 3, 5, 8}) {
    Ctx c(n);
    for (int root = 0; root < n; ++root) {
      CAPTURE(n);
      CAPTURE(root);
      std::vector<T> ts;
      for (int i = 0; i < n; ++i) ts.push_back(make_any(c.ctx, i, BRAID_INT64, i, 9));
      const std::vector<braid_tensor> h = handles(ts);
      BRAID_CHECK_OK(braid_reduce_to(n, h.data(), root, nullptr));
      for (int i = 0; i < n; ++i) {
        std::vector<double> got = read(ts[static_cast<size_t>(i)], BRAID_INT64);
        for (int64_t k = 0; k < 9; ++k)
          REQUIRE(got[static_cast<size_t>(k)] == (i == root ? reduce_def(BRAID_COLLECTIVE_SUM, n, k) : value(i, k)));
      }
      std::vector<T> bs;
      for (int i = 0; i < n; ++i) bs.push_back(make_any(c.ctx, i, BRAID_FLOAT32, i, 9));
      const std::vector<braid_tensor> hb = handles(bs);
      BRAID_CHECK_OK(braid_broadcast(n, hb.data(), root));
      for (int i = 0; i < n; ++i) {
        std::vector<double> got = read(bs[static_cast<size_t>(i)], BRAID_FLOAT32);
        for (int64_t k = 0; k < 9; ++k) REQUIRE(got[static_cast<size_t>(k)] == value(root, k));
      }
    }
  }
}

TEST_CASE("all_gather and reduce_scatter equal their definitions") {
  for (int n : {1, 2, 3, 4, 7}) {
    Ctx c(n);
    CAPTURE(n);
    const int64_t rows = 3 * n, cols = 5;
    std::vector<T> ins;
    for (int i = 0; i < n; ++i) {
      T t = make_any(c.ctx, i, BRAID_INT32, i, rows * cols);
      const int64_t shape[2] = {rows, cols};
      T r;
      BRAID_CHECK_OK(braid_reshape(t.t, 2, shape, r.out()));
      ins.push_back(std::move(r));
    }
    const std::vector<braid_tensor> h = handles(ins);
    std::vector<braid_tensor> outs(static_cast<size_t>(n));
    BRAID_CHECK_OK(braid_all_gather(n, h.data(), outs.data()));
    for (int d = 0; d < n; ++d) {
      T out(outs[static_cast<size_t>(d)]);
      int64_t shape[BRAID_MAX_DIMS];
      braid_tensor_shape(out.t, shape);
      CHECK(shape[0] == rows * n);
      braid_device dev = -1;
      braid_tensor_device(out.t, &dev);
      CHECK(dev == d);
      std::vector<double> got = read(out, BRAID_INT32);
      for (int i = 0; i < n; ++i)
        for (int64_t k = 0; k < rows * cols; ++k) REQUIRE(got[static_cast<size_t>(i * rows * cols + k)] == value(i, k));
    }
    BRAID_CHECK_OK(braid_reduce_scatter(n, h.data(), nullptr, outs.data()));
    for (int d = 0; d < n; ++d) {
      T out(outs[static_cast<size_t>(d)]);
      std::vector<double> got = read(out, BRAID_INT32);
      REQUIRE(got.size() == static_cast<size_t>(rows / n * cols));
      for (size_t k = 0; k < got.size(); ++k)
        REQUIRE(got[k] == reduce_def(BRAID_COLLECTIVE_SUM, n, d * (rows / n) * cols + static_cast<int64_t>(k)));
    }
  }
}

TEST_CASE("collectives refuse bad input at the call") {
  Ctx c(2);
  T a = make_any(c.ctx, 0, BRAID_FLOAT32, 0, 4);
  T b = make_any(c.ctx, 1, BRAID_FLOAT32, 1, 4);
  T short_b = make_any(c.ctx, 1, BRAID_FLOAT32, 1, 3);
  T int_b = make_any(c.ctx, 1, BRAID_INT32, 1, 4);
  braid_tensor good[2] = {a.t, b.t};
  braid_tensor shapes[2] = {a.t, short_b.t};
  braid_tensor dtypes[2] = {a.t, int_b.t};
  braid_tensor twice[2] = {a.t, a.t};
  CHECK(braid_allreduce(0, good, nullptr) == BRAID_ERR_INVALID_ARGUMENT);
  CHECK(braid_allreduce(2, nullptr, nullptr) == BRAID_ERR_INVALID_ARGUMENT);
  CHECK(braid_allreduce(2, shapes, nullptr) == BRAID_ERR_SHAPE);
  CHECK(braid_allreduce(2, dtypes, nullptr) == BRAID_ERR_DTYPE);
  CHECK(braid_allreduce(2, twice, nullptr) == BRAID_ERR_INVALID_ARGUMENT);
  CHECK(std::string(braid_last_error()).find("shares its storage") != std::string::npos);
  braid_collective_options bad = BRAID_COLLECTIVE_OPTIONS_INIT;
  bad.algorithm = static_cast<braid_allreduce_algorithm>(99);
  CHECK(braid_allreduce(2, good, &bad) == BRAID_ERR_INVALID_ARGUMENT);
  bad = BRAID_COLLECTIVE_OPTIONS_INIT;
  bad.op = static_cast<braid_collective_op>(-1);
  CHECK(braid_allreduce(2, good, &bad) == BRAID_ERR_INVALID_ARGUMENT);
  T i0 = make_any(c.ctx, 0, BRAID_INT32, 0, 4);
  braid_tensor ints[2] = {i0.t, int_b.t};
  braid_collective_options avg = BRAID_COLLECTIVE_OPTIONS_INIT;
  avg.op = BRAID_COLLECTIVE_AVG;
  CHECK(braid_allreduce(2, ints, &avg) == BRAID_ERR_DTYPE);
  // uint8 is a storage type (no arithmetic): refused, and the message no longer lists it as reducible.
  T u0, u1;
  const int64_t four = 4;
  BRAID_CHECK_OK(braid_tensor_empty(c.ctx, 0, BRAID_UINT8, 1, &four, u0.out()));
  BRAID_CHECK_OK(braid_tensor_empty(c.ctx, 1, BRAID_UINT8, 1, &four, u1.out()));
  braid_tensor bytes[2] = {u0.t, u1.t};
  CHECK(braid_allreduce(2, bytes, nullptr) == BRAID_ERR_DTYPE);
  CHECK(std::string(braid_last_error()).find("uint8)") == std::string::npos);
  CHECK(braid_broadcast(2, good, 2) == BRAID_ERR_INVALID_ARGUMENT);
  CHECK(braid_reduce_to(2, good, -1, nullptr) == BRAID_ERR_INVALID_ARGUMENT);
  braid_tensor outs[2] = {nullptr, nullptr};
  T odd0 = make_any(c.ctx, 0, BRAID_FLOAT32, 0, 3), odd1 = make_any(c.ctx, 1, BRAID_FLOAT32, 1, 3);
  braid_tensor odd[2] = {odd0.t, odd1.t};
  CHECK(braid_reduce_scatter(2, odd, nullptr, outs) == BRAID_ERR_SHAPE);
  CHECK(outs[0] == nullptr);
  // More rows than int64 once gathered: refused (the shape wrapped to a negative size).
  T e0, e1;
  const int64_t huge[2] = {INT64_MAX, 0};
  BRAID_CHECK_OK(braid_tensor_empty(c.ctx, 0, BRAID_FLOAT32, 2, huge, e0.out()));
  BRAID_CHECK_OK(braid_tensor_empty(c.ctx, 1, BRAID_FLOAT32, 2, huge, e1.out()));
  braid_tensor empties[2] = {e0.t, e1.t};
  CHECK(braid_all_gather(2, empties, outs) == BRAID_ERR_SHAPE);
  CHECK(outs[0] == nullptr);
  // The tensors are untouched by the refused calls.
  CHECK(read(a, BRAID_FLOAT32) == std::vector<double>{value(0, 0), value(0, 1), value(0, 2), value(0, 3)});
}

// Collectives are not recorded: all_gather's and reduce_scatter's outputs are constants, on one device
// as on several (same-device copies inside once recorded a partial history, which backward then
// refused with messages about ops the caller never made).
// allreduce, reduce_to and broadcast overwrite their tensors without a record: a backward through an
// overwritten value is refused, as after any overwrite (it named a copy_backward across devices the
// caller never made, or passed a gradient through the broadcast on one device).
TEST_CASE("allreduce, reduce_to and broadcast while recording are not recorded") {
  for (int n : {1, 2}) {
    CAPTURE(n);
    Ctx c(n);
    for (int which = 0; which < 3; ++which) {
      CAPTURE(which);
      T x0 = make_any(c.ctx, 0, BRAID_FLOAT32, 0, 4), x1 = make_any(c.ctx, (n - 1), BRAID_FLOAT32, 1, 4);
      for (T* x : {&x0, &x1}) BRAID_CHECK_OK(braid_tensor_attach_grad(x->t, BRAID_GRAD_WRITE));
      BRAID_CHECK_OK(braid_autograd_set_recording(c.ctx, 1, nullptr));
      T y0, y1;
      BRAID_CHECK_OK(braid_binary_scalar(BRAID_BINARY_MUL, x0.t, 2.0, 0, y0.out()));
      BRAID_CHECK_OK(braid_binary_scalar(BRAID_BINARY_MUL, x1.t, 5.0, 0, y1.out()));
      braid_tensor ys[2] = {y0.t, y1.t};
      if (which == 0) BRAID_CHECK_OK(braid_allreduce(2, ys, nullptr));
      if (which == 1) BRAID_CHECK_OK(braid_reduce_to(2, ys, 1, nullptr));
      if (which == 2) BRAID_CHECK_OK(braid_broadcast(2, ys, 0));
      T loss;
      BRAID_CHECK_OK(braid_reduce(BRAID_REDUCE_SUM, y1.t, 0, nullptr, 0, loss.out()));
      BRAID_CHECK_OK(braid_autograd_set_recording(c.ctx, 0, nullptr));
      CHECK(braid_backward(1, &loss.t, nullptr, 0) == BRAID_ERR_INVALID_STATE);
      const std::string why = braid_last_error();
      INFO(why);
      // Overwritten in place (allreduce, reduce_to: its history no longer made it) or by a copy
      // (broadcast to cpu: a constant from then on, as after braid_copy_into).
      CHECK((why.find("overwritten") != std::string::npos ||
             why.find("does not require a gradient") != std::string::npos));
    }
  }
}

TEST_CASE("all_gather and reduce_scatter while recording give constants") {
  for (int n : {1, 2}) {
    CAPTURE(n);
    Ctx c(n);
    std::vector<T> ins;
    for (int i = 0; i < 2; ++i) {
      ins.push_back(make_any(c.ctx, i % n, BRAID_FLOAT32, i, 4));
      BRAID_CHECK_OK(braid_tensor_attach_grad(ins.back().t, BRAID_GRAD_WRITE));
    }
    std::vector<braid_tensor> h = handles(ins);
    std::vector<braid_tensor> gathered(2), scattered(2);
    BRAID_CHECK_OK(braid_autograd_set_recording(c.ctx, 1, nullptr));
    const braid_status g = braid_all_gather(2, h.data(), gathered.data());
    const braid_status r = braid_reduce_scatter(2, h.data(), nullptr, scattered.data());
    BRAID_CHECK_OK(braid_autograd_set_recording(c.ctx, 0, nullptr));
    REQUIRE(g == BRAID_OK);
    REQUIRE(r == BRAID_OK);
    for (braid_tensor out : {gathered[0], gathered[1], scattered[0], scattered[1]}) {
      T head(out);
      T loss;
      BRAID_CHECK_OK(braid_autograd_set_recording(c.ctx, 1, nullptr));
      BRAID_CHECK_OK(braid_reduce(BRAID_REDUCE_SUM, head.t, 0, nullptr, 0, loss.out()));
      BRAID_CHECK_OK(braid_autograd_set_recording(c.ctx, 0, nullptr));
      CHECK(braid_backward(1, &loss.t, nullptr, 0) == BRAID_ERR_INVALID_STATE);
      CHECK(std::string(braid_last_error()).find("does not require a gradient") != std::string::npos);
    }
  }
}
