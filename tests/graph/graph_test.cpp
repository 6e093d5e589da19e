// Graph mode (docs/GRAPH.md): a traced graph gives the imperative results under every pass, on every
// device, forward and backward; each pass does what it says; files round-trip; bad use is refused.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "graph/graph_support.h"

using gtest::Graph;
using test::T;

namespace {

// The chapter's MLP, imperative: relu(x W1 + b1) -> relu(. W2 + b2) -> . W3 + b3.
struct Mlp {
  std::vector<T> params;  // W1, b1, W2, b2, W3, b3
  Mlp(braid_context ctx, braid_device dev, int64_t in, int64_t h1, int64_t h2, int64_t out,
      braid_dtype dtype = BRAID_FLOAT32) {
    const int64_t dims[] = {in, h1, h2, out};
    for (int l = 0; l < 3; ++l) {
      params.push_back(gtest::random(ctx, dev, dtype, {dims[l], dims[l + 1]}, 0.5));
      params.push_back(gtest::random(ctx, dev, dtype, {dims[l + 1]}, 0.5));
    }
  }
  T forward(braid_tensor x) const {
    T h;
    BRAID_CHECK_OK(braid_tensor_retain(x));
    h.t = x;
    for (int l = 0; l < 3; ++l) {
      T y, z;
      BRAID_CHECK_OK(braid_matmul(h.t, params[size_t(2 * l)].t, 0, 0, y.out()));
      BRAID_CHECK_OK(braid_binary(BRAID_BINARY_ADD, y.t, params[size_t(2 * l + 1)].t, z.out()));
      if (l < 2) {
        T r;
        BRAID_CHECK_OK(braid_unary(BRAID_UNARY_RELU, z.t, r.out()));
        h = std::move(r);
      } else {
        h = std::move(z);
      }
    }
    return h;
  }
};

Graph trace_mlp(braid_context ctx, const Mlp& m, braid_tensor x, T* imperative) {
  BRAID_CHECK_OK(braid_graph_trace_begin(ctx, 1, &x));
  T y = m.forward(x);
  Graph g;
  BRAID_CHECK_OK(braid_graph_trace_end(ctx, 1, &y.t, &g.g));
  if (imperative) *imperative = std::move(y);
  return g;
}

const uint32_t kPassSets[] = {0,
                              BRAID_GRAPH_PASS_DEAD_CODE,
                              BRAID_GRAPH_PASS_COMMON_SUBEXPRESSIONS,
                              BRAID_GRAPH_PASS_FOLD_CONSTANTS,
                              BRAID_GRAPH_PASS_PLAN_MEMORY,
                              BRAID_GRAPH_PASS_ALL};

}  // namespace

TEST_CASE("graph: a traced MLP gives the imperative results under every pass, on every device") {
  for (const std::string& backend : gtest::backends()) {
    CAPTURE(backend);
    gtest::BackendCtx c(backend);
    if (!c.ctx) continue;
    Mlp m(c.ctx, 0, 20, 16, 8, 3);
    for (uint32_t passes : kPassSets) {
      CAPTURE(passes);
      T x0 = gtest::random(c.ctx, 0, BRAID_FLOAT32, {4, 20}, 1.0);
      T y0;
      Graph g = trace_mlp(c.ctx, m, x0.t, &y0);
      BRAID_CHECK_OK(braid_graph_optimize(g.g, passes));
      braid_graph_info info{};
      info.struct_size = sizeof info;
      BRAID_CHECK_OK(braid_graph_get_info(g.g, &info));
      CHECK(info.num_nodes == 8);  // 3 matmuls, 3 adds, 2 relus
      CHECK(info.num_inputs == 1);
      CHECK(info.num_params == 6);
      braid_graph_tensor_info in{}, out{};
      in.struct_size = out.struct_size = sizeof in;
      BRAID_CHECK_OK(braid_graph_get_input(g.g, 0, &in));
      BRAID_CHECK_OK(braid_graph_get_output(g.g, 0, &out));
      CHECK((in.dtype == BRAID_FLOAT32 && in.ndim == 2 && in.shape[0] == 4 && in.shape[1] == 20));
      CHECK((out.dtype == BRAID_FLOAT32 && out.ndim == 2 && out.shape[0] == 4 && out.shape[1] == 3));
      CHECK(braid_graph_get_input(g.g, 1, &in) == BRAID_ERR_INVALID_ARGUMENT);
      for (int rep = 0; rep < 3; ++rep) {
        T x = gtest::random(c.ctx, 0, BRAID_FLOAT32, {4, 20}, 1.0);
        T want = m.forward(x.t);
        T got;
        BRAID_CHECK_OK(braid_graph_run(g.g, 1, &x.t, 1, got.out()));
        gtest::check_close(gtest::host_f32(got), gtest::host_f32(want), 1e-5);
      }
      // The traced call's own output is the imperative result too.
      T again;
      BRAID_CHECK_OK(braid_graph_run(g.g, 1, &x0.t, 1, again.out()));
      gtest::check_close(gtest::host_f32(again), gtest::host_f32(y0), 1e-5);
      BRAID_CHECK_OK(braid_graph_get_info(g.g, &info));
      CHECK(info.pushes_per_run == 1);
      CHECK(info.workspace_bytes > 0);
      // Fused: each hidden layer's bias add and relu run as one kernel (both backends have it).
      CHECK(info.kernels_per_run == ((passes & BRAID_GRAPH_PASS_FUSE_ELEMENTWISE) ? 6 : 8));
      if (passes & BRAID_GRAPH_PASS_PLAN_MEMORY) CHECK(info.workspace_bytes < info.intermediate_bytes);
    }
  }
}

TEST_CASE("graph: dead code is removed, and effects on parameters are kept") {
  test::Ctx c;
  T x = gtest::random(c.ctx, 0, BRAID_FLOAT32, {8}, 1.0);
  T counter = test::full(c.ctx, 0, BRAID_FLOAT32, {8}, 0.0);
  BRAID_CHECK_OK(braid_graph_trace_begin(c.ctx, 1, &x.t));
  T unused, y;
  BRAID_CHECK_OK(braid_unary(BRAID_UNARY_EXP, x.t, unused.out()));  // never reaches an output
  BRAID_CHECK_OK(braid_unary(BRAID_UNARY_NEG, x.t, y.out()));
  BRAID_CHECK_OK(braid_copy_into(x.t, counter.t));  // an effect on a tensor outside the graph
  Graph g;
  BRAID_CHECK_OK(braid_graph_trace_end(c.ctx, 1, &y.t, &g.g));
  CHECK(gtest::nodes(g.g) == 3);
  BRAID_CHECK_OK(braid_graph_optimize(g.g, BRAID_GRAPH_PASS_DEAD_CODE));
  CHECK(gtest::nodes(g.g) == 2);
  CHECK(gtest::node_name(g.g, 0) == "neg");
  T x2 = gtest::random(c.ctx, 0, BRAID_FLOAT32, {8}, 1.0);
  T got;
  BRAID_CHECK_OK(braid_graph_run(g.g, 1, &x2.t, 1, got.out()));
  const std::vector<float> in = gtest::host_f32(x2);
  std::vector<float> neg(in.size());
  for (size_t i = 0; i < in.size(); ++i) neg[i] = -in[i];
  CHECK(gtest::host_f32(got) == neg);
  CHECK(gtest::host_f32(counter) == in);  // the copy into the outside tensor ran again
}

TEST_CASE("graph: common subexpressions are computed once") {
  test::Ctx c;
  T x = gtest::random(c.ctx, 0, BRAID_FLOAT32, {5, 7}, 1.0);
  BRAID_CHECK_OK(braid_graph_trace_begin(c.ctx, 1, &x.t));
  T a, b, s, y;
  BRAID_CHECK_OK(braid_unary(BRAID_UNARY_TANH, x.t, a.out()));
  BRAID_CHECK_OK(braid_unary(BRAID_UNARY_TANH, x.t, b.out()));  // the same as a
  BRAID_CHECK_OK(braid_binary(BRAID_BINARY_MUL, a.t, b.t, s.out()));
  BRAID_CHECK_OK(braid_binary_scalar(BRAID_BINARY_ADD, s.t, 1.0, 0, y.out()));
  Graph g;
  BRAID_CHECK_OK(braid_graph_trace_end(c.ctx, 1, &y.t, &g.g));
  CHECK(gtest::nodes(g.g) == 4);
  BRAID_CHECK_OK(braid_graph_optimize(g.g, BRAID_GRAPH_PASS_COMMON_SUBEXPRESSIONS | BRAID_GRAPH_PASS_DEAD_CODE));
  CHECK(gtest::nodes(g.g) == 3);
  T got;
  BRAID_CHECK_OK(braid_graph_run(g.g, 1, &x.t, 1, got.out()));
  gtest::check_close(gtest::host_f32(got), gtest::host_f32(y), 1e-6);
}

TEST_CASE("graph: random ops draw anew each run and are never merged") {
  test::Ctx c;
  T x = test::full(c.ctx, 0, BRAID_FLOAT32, {256}, 1.0);
  BRAID_CHECK_OK(braid_graph_trace_begin(c.ctx, 1, &x.t));
  T a, ma, b, mb, y;
  BRAID_CHECK_OK(braid_dropout(x.t, 0.5, a.out(), ma.out()));
  BRAID_CHECK_OK(braid_dropout(x.t, 0.5, b.out(), mb.out()));
  BRAID_CHECK_OK(braid_binary(BRAID_BINARY_SUB, a.t, b.t, y.out()));
  Graph g;
  BRAID_CHECK_OK(braid_graph_trace_end(c.ctx, 1, &y.t, &g.g));
  BRAID_CHECK_OK(braid_graph_optimize(g.g, BRAID_GRAPH_PASS_ALL));
  CHECK(gtest::nodes(g.g) == 3);
  T r1, r2;
  BRAID_CHECK_OK(braid_graph_run(g.g, 1, &x.t, 1, r1.out()));
  BRAID_CHECK_OK(braid_graph_run(g.g, 1, &x.t, 1, r2.out()));
  const std::vector<float> v1 = gtest::host_f32(r1), v2 = gtest::host_f32(r2);
  CHECK(v1 != v2);
  bool nonzero = false;
  for (float v : v1) nonzero = nonzero || v != 0.0f;
  CHECK(nonzero);  // the two dropouts differ within a run too
}

TEST_CASE("graph: constants are folded once; the graph then reads them") {
  test::Ctx c;
  T x = gtest::random(c.ctx, 0, BRAID_FLOAT32, {3, 4}, 1.0);
  BRAID_CHECK_OK(braid_graph_trace_begin(c.ctx, 1, &x.t));
  T k = test::full(c.ctx, 0, BRAID_FLOAT32, {3, 4}, 2.0);  // made during tracing: FILL
  T k2, y;
  BRAID_CHECK_OK(braid_binary_scalar(BRAID_BINARY_MUL, k.t, 3.0, 0, k2.out()));  // 6, constant too
  BRAID_CHECK_OK(braid_binary(BRAID_BINARY_ADD, x.t, k2.t, y.out()));
  Graph g;
  BRAID_CHECK_OK(braid_graph_trace_end(c.ctx, 1, &y.t, &g.g));
  CHECK(gtest::nodes(g.g) == 3);
  BRAID_CHECK_OK(braid_graph_optimize(g.g, BRAID_GRAPH_PASS_FOLD_CONSTANTS));
  CHECK(gtest::nodes(g.g) == 1);
  braid_graph_info info{};
  info.struct_size = sizeof info;
  BRAID_CHECK_OK(braid_graph_get_info(g.g, &info));
  CHECK(info.num_params == 1);
  T x2 = gtest::random(c.ctx, 0, BRAID_FLOAT32, {3, 4}, 1.0);
  T got;
  BRAID_CHECK_OK(braid_graph_run(g.g, 1, &x2.t, 1, got.out()));
  std::vector<float> want = gtest::host_f32(x2);
  for (float& v : want) v += 6.0f;
  CHECK(gtest::host_f32(got) == want);
}

TEST_CASE("graph: memory planning reuses intermediates' bytes and computes in place") {
  test::Ctx c;
  T x = gtest::random(c.ctx, 0, BRAID_FLOAT32, {1024}, 1.0);
  BRAID_CHECK_OK(braid_graph_trace_begin(c.ctx, 1, &x.t));
  T h;
  BRAID_CHECK_OK(braid_unary(BRAID_UNARY_TANH, x.t, h.out()));
  for (int i = 0; i < 10; ++i) {
    T n;
    BRAID_CHECK_OK(braid_binary_scalar(BRAID_BINARY_MUL, h.t, 0.5, 0, n.out()));
    h = std::move(n);
  }
  T y;
  BRAID_CHECK_OK(braid_unary(BRAID_UNARY_EXP, h.t, y.out()));
  Graph g;
  BRAID_CHECK_OK(braid_graph_trace_end(c.ctx, 1, &y.t, &g.g));
  Graph unplanned = gtest::clone_by_file(c.ctx, 0, g.g);
  BRAID_CHECK_OK(braid_graph_optimize(g.g, BRAID_GRAPH_PASS_PLAN_MEMORY));
  braid_graph_info info{};
  info.struct_size = sizeof info;
  BRAID_CHECK_OK(braid_graph_get_info(g.g, &info));
  CHECK(info.intermediate_bytes == 11 * 4096);
  CHECK(info.workspace_bytes == 4096);  // one buffer, every step in place
  T a, b;
  BRAID_CHECK_OK(braid_graph_run(g.g, 1, &x.t, 1, a.out()));
  BRAID_CHECK_OK(braid_graph_run(unplanned.g, 1, &x.t, 1, b.out()));
  CHECK(gtest::host_f32(a) == gtest::host_f32(y));
  CHECK(gtest::host_f32(b) == gtest::host_f32(y));
  BRAID_CHECK_OK(braid_graph_get_info(unplanned.g, &info));
  CHECK(info.workspace_bytes == 11 * 4096);  // without the pass: a place per intermediate
}

// Exact in both dtypes: each backend computes a fused chain's ops as its unfused kernels do (the CPU's
// tile loops are compiled like its elementwise loops; the shaders' float64 math is precise).
TEST_CASE("graph: elementwise chains fuse into one kernel with the imperative results, on every device") {
  for (const std::string& backend : gtest::backends())
    for (braid_dtype dtype : {BRAID_FLOAT32, BRAID_FLOAT64}) {
      CAPTURE(backend);
      CAPTURE(dtype);
      gtest::BackendCtx c(backend);
      if (!c.ctx) continue;
      T x = gtest::random(c.ctx, 0, dtype, {33, 70}, 2.0);
      T row = gtest::random(c.ctx, 0, dtype, {70}, 1.0);     // broadcast along axis 0
      T col = gtest::random(c.ctx, 0, dtype, {33, 1}, 1.0);  // broadcast along axis 1
      BRAID_CHECK_OK(braid_graph_trace_begin(c.ctx, 1, &x.t));
      T m, a, b, d, e, f, h, y;
      BRAID_CHECK_OK(braid_matmul(x.t, x.t, 0, 1, m.out()));  // not elementwise: ends no chain, starts none
      BRAID_CHECK_OK(braid_binary(BRAID_BINARY_MUL, x.t, row.t, a.out()));
      BRAID_CHECK_OK(braid_unary(BRAID_UNARY_TANH, a.t, b.out()));
      BRAID_CHECK_OK(braid_binary(BRAID_BINARY_ADD, b.t, col.t, d.out()));
      BRAID_CHECK_OK(braid_binary_scalar(BRAID_BINARY_SUB, d.t, 0.25, 1, e.out()));  // 0.25 - d
      BRAID_CHECK_OK(braid_binary_scalar(BRAID_BINARY_MAXIMUM, e.t, -0.5, 0, f.out()));
      BRAID_CHECK_OK(braid_binary(BRAID_BINARY_DIV, f.t, x.t, h.out()));  // x again: one input
      BRAID_CHECK_OK(braid_unary(BRAID_UNARY_EXP, h.t, y.out()));
      Graph g;
      T outs[] = {std::move(y), std::move(m)};
      braid_tensor ys[] = {outs[0].t, outs[1].t};
      BRAID_CHECK_OK(braid_graph_trace_end(c.ctx, 2, ys, &g.g));
      BRAID_CHECK_OK(braid_graph_optimize(g.g, BRAID_GRAPH_PASS_ALL));
      T r[2];
      braid_tensor rs[2] = {nullptr, nullptr};
      BRAID_CHECK_OK(braid_graph_run(g.g, 1, &x.t, 2, rs));
      r[0].t = rs[0], r[1].t = rs[1];
      braid_graph_info info{};
      info.struct_size = sizeof info;
      BRAID_CHECK_OK(braid_graph_get_info(g.g, &info));
      CHECK(info.num_nodes == 8);
      CHECK(info.kernels_per_run == 2);  // the matmul, and the seven elementwise kernels as one
      if (dtype == BRAID_FLOAT64) {
        CHECK(test::to_vector(r[0]) == test::to_vector(outs[0]));
      } else {
        gtest::check_close(gtest::host_f32(r[0]), gtest::host_f32(outs[0]), 0.0);
      }
    }
}

// Random kernels in graphs draw as the imperative ops do: dead-code elimination keeps an unread one
// (removing it shifted every later kernel's draw), and a hybrid function's first call, which records
// without running, takes no draw of its own (its result was the next imperative call's).
namespace {
braid_status uniform_fn(void* user, int32_t, const braid_tensor* in, int32_t, braid_tensor* out) {
  auto ctx = static_cast<braid_context>(user);
  const int64_t n = 4;
  braid_tensor u = nullptr;
  if (braid_status st = braid_random_uniform(ctx, 0, BRAID_FLOAT64, 1, &n, 0.0, 1.0, &u); st != BRAID_OK) return st;
  const braid_status st = braid_binary(BRAID_BINARY_ADD, u, in[0], &out[0]);
  braid_tensor_release(u);
  return st;
}
}  // namespace

TEST_CASE("graph: random kernels draw as imperative execution does, after every pass and in hybrids") {
  test::Ctx c;
  T x = test::full(c.ctx, 0, BRAID_FLOAT64, {4}, 0.0);
  const int64_t n = 4;
  auto two_draws = [&](T& unused, T& used) {
    BRAID_CHECK_OK(braid_random_uniform(c.ctx, 0, BRAID_FLOAT64, 1, &n, 0.0, 1.0, unused.out()));
    T u;
    BRAID_CHECK_OK(braid_random_uniform(c.ctx, 0, BRAID_FLOAT64, 1, &n, 0.0, 1.0, u.out()));
    BRAID_CHECK_OK(braid_binary(BRAID_BINARY_ADD, u.t, x.t, used.out()));
  };
  BRAID_CHECK_OK(braid_context_set_seed(c.ctx, 11));
  T a, want;
  two_draws(a, want);
  BRAID_CHECK_OK(braid_graph_trace_begin(c.ctx, 1, &x.t));
  T b, traced;
  two_draws(b, traced);
  Graph g;
  BRAID_CHECK_OK(braid_graph_trace_end(c.ctx, 1, &traced.t, &g.g));
  BRAID_CHECK_OK(braid_graph_optimize(g.g, BRAID_GRAPH_PASS_ALL));  // the first draw is read by nothing
  BRAID_CHECK_OK(braid_context_set_seed(c.ctx, 11));
  T got;
  BRAID_CHECK_OK(braid_graph_run(g.g, 1, &x.t, 1, got.out()));
  CHECK(test::to_vector(got) == test::to_vector(want));

  braid_hybrid h = nullptr;
  BRAID_CHECK_OK(braid_hybrid_create(c.ctx, uniform_fn, c.ctx, 1, 1, BRAID_GRAPH_PASS_ALL, &h));
  BRAID_CHECK_OK(braid_context_set_seed(c.ctx, 11));
  T imperative;
  BRAID_CHECK_OK(uniform_fn(c.ctx, 1, &x.t, 1, imperative.out()));
  for (int call = 0; call < 2; ++call) {  // the first call traces, the second runs the cached graph
    CAPTURE(call);
    BRAID_CHECK_OK(braid_context_set_seed(c.ctx, 11));
    T y;
    BRAID_CHECK_OK(braid_hybrid_call(h, &x.t, y.out()));
    CHECK(test::to_vector(y) == test::to_vector(imperative));
  }
  BRAID_CHECK_OK(braid_hybrid_release(h));
}

// An op whose empty result needed no kernel (a concat of empty parts, a copy of an empty tensor) still
// gives the graph an output (trace_end refused it: "not computed by the traced ops").
TEST_CASE("graph: an empty result that no kernel computed is an output") {
  test::Ctx c;
  T x = test::full(c.ctx, 0, BRAID_FLOAT32, {0, 5}, 0.0);
  BRAID_CHECK_OK(braid_graph_trace_begin(c.ctx, 1, &x.t));
  const braid_tensor parts[2] = {x.t, x.t};
  T cat, copy;
  BRAID_CHECK_OK(braid_concat(2, parts, 0, cat.out()));
  BRAID_CHECK_OK(braid_copy(x.t, 0, copy.out()));
  Graph g;
  braid_tensor outs[2] = {cat.t, copy.t};
  BRAID_CHECK_OK(braid_graph_trace_end(c.ctx, 2, outs, &g.g));
  BRAID_CHECK_OK(braid_graph_optimize(g.g, BRAID_GRAPH_PASS_ALL));
  braid_tensor got[2] = {nullptr, nullptr};
  BRAID_CHECK_OK(braid_graph_run(g.g, 1, &x.t, 2, got));
  T a, b;
  a.t = got[0], b.t = got[1];
  for (const T* t : {&a, &b}) {
    int64_t dims[BRAID_MAX_DIMS] = {};
    BRAID_CHECK_OK(braid_tensor_shape(t->t, dims));
    CHECK((dims[0] == 0 && dims[1] == 5));
  }
}

// Constant folding must not fold a value a later kernel updates in place besides its outputs: batch
// norm's running statistics, made by a fill inside the traced step, became a parameter that every run
// kept updating (the running mean drifted 0.2, 0.38, 0.542 over three runs).
TEST_CASE("graph: constant folding leaves alone what batch norm updates in place") {
  test::Ctx c;
  std::vector<double> xv = {1, 2, 3, 3, 6, 9};
  T x = test::from_vector(c.ctx, 0, xv, {2, 3});
  T gamma = test::full(c.ctx, 0, BRAID_FLOAT64, {3}, 1.0), beta = test::full(c.ctx, 0, BRAID_FLOAT64, {3}, 0.0);
  auto step = [&] {
    T rm = test::full(c.ctx, 0, BRAID_FLOAT64, {3}, 0.0), rv = test::full(c.ctx, 0, BRAID_FLOAT64, {3}, 1.0), y, m;
    braid_batch_norm_params p = BRAID_BATCH_NORM_PARAMS_INIT;
    p.training = 1;
    BRAID_CHECK_OK(braid_batch_norm(x.t, gamma.t, beta.t, rm.t, rv.t, &p, y.out(), nullptr, nullptr));
    BRAID_CHECK_OK(braid_binary_scalar(BRAID_BINARY_MUL, rm.t, 1.0, 0, m.out()));  // read after the update
    return m;
  };
  const std::vector<double> want = test::to_vector(step());
  for (uint32_t passes : {0u, uint32_t{BRAID_GRAPH_PASS_FOLD_CONSTANTS}, uint32_t{BRAID_GRAPH_PASS_ALL}}) {
    CAPTURE(passes);
    BRAID_CHECK_OK(braid_graph_trace_begin(c.ctx, 1, &x.t));
    T traced = step();
    Graph g;
    BRAID_CHECK_OK(braid_graph_trace_end(c.ctx, 1, &traced.t, &g.g));
    BRAID_CHECK_OK(braid_graph_optimize(g.g, passes));
    for (int run = 0; run < 3; ++run) {
      CAPTURE(run);
      T got;
      BRAID_CHECK_OK(braid_graph_run(g.g, 1, &x.t, 1, got.out()));
      CHECK(test::to_vector(got) == want);
    }
  }
}

// A fused chain must not be simplified as algebra: (x + y) - y is not x in floating point (1 + 1e8 - 1e8
// is 0 in float32), (x / y) * y is NaN at y = 0, and a - a is NaN at inf. The Vulkan shader compiler
// folded these across the inlined instructions until the element functions' results were `precise`.
TEST_CASE("graph: fused chains keep floating-point identities unsimplified, on every device") {
  for (const std::string& backend : gtest::backends())
    for (braid_dtype dtype : {BRAID_FLOAT32, BRAID_FLOAT64}) {
      CAPTURE(backend);
      CAPTURE(dtype);
      gtest::BackendCtx c(backend);
      if (!c.ctx) continue;
      const double big = dtype == BRAID_FLOAT32 ? 1e8 : 1e17;
      const double inf = std::numeric_limits<double>::infinity();
      auto make = [&](const std::vector<double>& v) {
        T d = test::from_vector(c.ctx, 0, v), t;
        BRAID_CHECK_OK(braid_cast(d.t, dtype, t.out()));
        return t;
      };
      auto values = [](const T& t) {
        T d;
        BRAID_CHECK_OK(braid_cast(t.t, BRAID_FLOAT64, d.out()));
        return test::to_vector(d);
      };
      T x = make({1.0, 5.0, 0.0, inf, 3.0});
      T y = make({big, 0.0, 0.0, 2.0, -big});
      // a - [0, 0.25, 0.5, 0.75, 1], the ramp made inside the chain: a constant the graph folds.
      auto minus_ramp = [&](const T& a) {
        T r, z, b;
        BRAID_CHECK_OK(braid_arange(c.ctx, 0, dtype, 0, 5, 1, r.out()));
        BRAID_CHECK_OK(braid_binary_scalar(BRAID_BINARY_MUL, r.t, 0.25, 0, z.out()));
        BRAID_CHECK_OK(braid_binary(BRAID_BINARY_SUB, a.t, z.t, b.out()));
        return b;
      };
      auto run = [&](const std::function<T()>& chain, bool traced) {
        if (!traced) return chain();
        braid_tensor ins[2] = {x.t, y.t};
        BRAID_CHECK_OK(braid_graph_trace_begin(c.ctx, 2, ins));
        T out = chain();
        Graph g;
        BRAID_CHECK_OK(braid_graph_trace_end(c.ctx, 1, &out.t, &g.g));
        BRAID_CHECK_OK(braid_graph_optimize(g.g, BRAID_GRAPH_PASS_ALL));
        T got;
        BRAID_CHECK_OK(braid_graph_run(g.g, 2, ins, 1, got.out()));
        return got;
      };
      const std::vector<std::pair<const char*, std::function<T()>>> chains = {
          {"(x + y) - y",
           [&] {
             T a, b;
             BRAID_CHECK_OK(braid_binary(BRAID_BINARY_ADD, x.t, y.t, a.out()));
             BRAID_CHECK_OK(braid_binary(BRAID_BINARY_SUB, a.t, y.t, b.out()));
             return b;
           }},
          {"(x / y) * y",
           [&] {
             T a, b;
             BRAID_CHECK_OK(braid_binary(BRAID_BINARY_DIV, x.t, y.t, a.out()));
             BRAID_CHECK_OK(braid_binary(BRAID_BINARY_MUL, a.t, y.t, b.out()));
             return b;
           }},
          {"(x + s) - s",
           [&] {
             T a, b;
             BRAID_CHECK_OK(braid_binary_scalar(BRAID_BINARY_ADD, x.t, big, 0, a.out()));
             BRAID_CHECK_OK(braid_binary_scalar(BRAID_BINARY_SUB, a.t, big, 0, b.out()));
             return b;
           }},
          {"abs(x) - abs(x)",
           [&] {
             T a, b;
             BRAID_CHECK_OK(braid_unary(BRAID_UNARY_ABS, x.t, a.out()));
             BRAID_CHECK_OK(braid_binary(BRAID_BINARY_SUB, a.t, a.t, b.out()));
             return b;
           }},
          // A comparison's, relu's or sign's 0 minus a folded constant's 0 is +0: lavapipe's compiler
          // knew x > x false, and turned 0.0 - c into -c (-0).
          {"(x > x) - ramp",
           [&] {
             T a;
             BRAID_CHECK_OK(braid_binary(BRAID_BINARY_GREATER, x.t, x.t, a.out()));
             return minus_ramp(a);
           }},
          {"relu(-x) - ramp",
           [&] {
             T m, a;
             BRAID_CHECK_OK(braid_unary(BRAID_UNARY_NEG, x.t, m.out()));
             BRAID_CHECK_OK(braid_unary(BRAID_UNARY_RELU, m.t, a.out()));
             return minus_ramp(a);
           }},
          {"sign(x - x) - ramp",
           [&] {
             T d, a;
             BRAID_CHECK_OK(braid_binary(BRAID_BINARY_SUB, x.t, x.t, d.out()));
             BRAID_CHECK_OK(braid_unary(BRAID_UNARY_SIGN, d.t, a.out()));
             return minus_ramp(a);
           }},
      };
      for (const auto& entry : chains) {
        const auto& what = entry.first;  // a plain name: CAPTURE captures it
        const auto& chain = entry.second;
        CAPTURE(what);
        const std::vector<double> want = values(run(chain, false)), got = values(run(chain, true));
        REQUIRE(want.size() == got.size());
        for (size_t i = 0; i < want.size(); ++i) {
          CAPTURE(i);
          if (std::isnan(want[i])) {
            CHECK(std::isnan(got[i]));
          } else {
            CHECK(got[i] == want[i]);
            CHECK(std::signbit(got[i]) == std::signbit(want[i]));  // -0 is not +0 here
          }
        }
      }
    }
}

// Each backend compiles or interprets a fused program its own way (the Vulkan backend generates a
// shader per program): every op, on both sides of a scalar, must give the unfused chain's result.
TEST_CASE("graph: every unary and binary op fuses with the imperative results, on every device") {
  for (const std::string& backend : gtest::backends())
    for (braid_dtype dtype : {BRAID_FLOAT32, BRAID_FLOAT64}) {
      CAPTURE(backend);
      CAPTURE(dtype);
      gtest::BackendCtx c(backend);
      if (!c.ctx) continue;
      T x = gtest::random(c.ctx, 0, dtype, {17, 9}, 2.0);
      T row = gtest::random(c.ctx, 0, dtype, {9}, 1.5);
      // Runs `chain` traced, fused and imperatively; the results must agree (NaN with NaN).
      auto check = [&](const std::string& what, const std::function<T(const T&)>& chain) {
        CAPTURE(what);
        T want = chain(x);
        BRAID_CHECK_OK(braid_graph_trace_begin(c.ctx, 1, &x.t));
        T traced = chain(x);
        Graph g;
        BRAID_CHECK_OK(braid_graph_trace_end(c.ctx, 1, &traced.t, &g.g));
        BRAID_CHECK_OK(braid_graph_optimize(g.g, BRAID_GRAPH_PASS_ALL));
        T got;
        BRAID_CHECK_OK(braid_graph_run(g.g, 1, &x.t, 1, got.out()));
        braid_graph_info info{};
        info.struct_size = sizeof info;
        BRAID_CHECK_OK(braid_graph_get_info(g.g, &info));
        CHECK(info.kernels_per_run == 1);  // the whole chain as one kernel
        if (dtype == BRAID_FLOAT32) {
          gtest::check_close(gtest::host_f32(got), gtest::host_f32(want), 0.0);
        } else {
          const std::vector<double> a = test::to_vector(got), b = test::to_vector(want);
          REQUIRE(a.size() == b.size());
          for (size_t i = 0; i < a.size(); ++i)
            if (!(std::isnan(a[i]) && std::isnan(b[i]))) CHECK(a[i] == b[i]);
        }
      };
      for (int op = 0; op < BRAID_UNARY_COUNT; ++op)
        check("unary " + std::to_string(op), [&](const T& in) {
          T a, b, y;
          BRAID_CHECK_OK(braid_binary_scalar(BRAID_BINARY_MUL, in.t, 1.5, 0, a.out()));
          BRAID_CHECK_OK(braid_unary(static_cast<braid_unary_op>(op), a.t, b.out()));
          BRAID_CHECK_OK(braid_binary(BRAID_BINARY_ADD, b.t, row.t, y.out()));
          return y;
        });
      for (int op = 0; op < BRAID_BINARY_COUNT; ++op)
        check("binary " + std::to_string(op), [&](const T& in) {
          T a, b, d, y;
          BRAID_CHECK_OK(braid_binary(static_cast<braid_binary_op>(op), in.t, row.t, a.out()));
          BRAID_CHECK_OK(braid_binary_scalar(static_cast<braid_binary_op>(op), a.t, 0.75, 0, b.out()));
          BRAID_CHECK_OK(braid_binary_scalar(static_cast<braid_binary_op>(op), b.t, -1.25, 1, d.out()));
          BRAID_CHECK_OK(braid_binary(static_cast<braid_binary_op>(op), d.t, in.t, y.out()));
          return y;
        });
    }
}

// Gradients of sum(forward()) with respect to wrt, recorded on ctx: how the graph tests compare a graph
// run's backward with the imperative ops' (each test passes both forwards).
template <class Forward>
std::vector<std::vector<float>> gradients_of_sum(braid_context ctx, Forward forward, std::vector<braid_tensor> wrt) {
  BRAID_CHECK_OK(braid_autograd_set_recording(ctx, 1, nullptr));
  T y = forward(), loss;
  BRAID_CHECK_OK(braid_reduce(BRAID_REDUCE_SUM, y.t, 0, nullptr, 0, loss.out()));
  BRAID_CHECK_OK(braid_autograd_set_recording(ctx, 0, nullptr));
  BRAID_CHECK_OK(braid_backward(1, &loss.t, nullptr, 0));
  std::vector<std::vector<float>> out;
  for (braid_tensor p : wrt) {
    T gr;
    BRAID_CHECK_OK(braid_tensor_grad(p, gr.out()));
    out.push_back(gtest::host_f32(gr));
  }
  return out;
}

TEST_CASE("graph: backward through a graph run equals backward through the imperative ops, every pass, every device") {
  for (const std::string& backend : gtest::backends()) {
    CAPTURE(backend);
    gtest::BackendCtx c(backend);
    if (!c.ctx) continue;
    Mlp m(c.ctx, 0, 6, 5, 4, 3);
    for (T& p : m.params) BRAID_CHECK_OK(braid_tensor_attach_grad(p.t, BRAID_GRAD_WRITE));
    T x = gtest::random(c.ctx, 0, BRAID_FLOAT32, {2, 6}, 1.0);
    BRAID_CHECK_OK(braid_tensor_attach_grad(x.t, BRAID_GRAD_WRITE));
    for (uint32_t passes : kPassSets) {
      CAPTURE(passes);
      Graph g = trace_mlp(c.ctx, m, x.t, nullptr);
      BRAID_CHECK_OK(braid_graph_optimize(g.g, passes));
      const std::vector<braid_tensor> wrt = {
          m.params[0].t, m.params[1].t, m.params[2].t, m.params[3].t, m.params[4].t, m.params[5].t, x.t};
      const auto want = gradients_of_sum(
          c.ctx, [&] { return m.forward(x.t); }, wrt);
      const auto got = gradients_of_sum(
          c.ctx,
          [&] {
            T y;
            BRAID_CHECK_OK(braid_graph_run(g.g, 1, &x.t, 1, y.out()));
            return y;
          },
          wrt);
      REQUIRE(got.size() == want.size());
      for (size_t k = 0; k < got.size(); ++k) gtest::check_close(got[k], want[k], 1e-5);
    }
  }
}

namespace {
// x + x W, then sum over axis 1 of its square without keepdims, then concat with 2x: an input's
// gradient through a matmul (written through a batched view), a reduction that drops an axis and a
// concat written slice by slice, each of which lost its path through a graph run.
T through_views(braid_tensor x, braid_tensor w) {
  T xw, s, sq, red, two, cat;
  BRAID_CHECK_OK(braid_matmul(x, w, 0, 0, xw.out()));
  BRAID_CHECK_OK(braid_binary(BRAID_BINARY_ADD, x, xw.t, s.out()));
  BRAID_CHECK_OK(braid_unary(BRAID_UNARY_SQUARE, s.t, sq.out()));
  const int32_t axis = 1;
  BRAID_CHECK_OK(braid_reduce(BRAID_REDUCE_SUM, sq.t, 1, &axis, 0, red.out()));
  BRAID_CHECK_OK(braid_binary_scalar(BRAID_BINARY_MUL, red.t, 2.0, 0, two.out()));
  const braid_tensor parts[2] = {red.t, two.t};
  BRAID_CHECK_OK(braid_concat(2, parts, 0, cat.out()));
  return cat;
}
}  // namespace

TEST_CASE("graph: an input's gradient through matmul, a reduction without keepdims and concat, every pass") {
  for (const std::string& backend : gtest::backends()) {
    CAPTURE(backend);
    gtest::BackendCtx c(backend);
    if (!c.ctx) continue;
    T x = gtest::random(c.ctx, 0, BRAID_FLOAT32, {2, 3}, 1.0);
    T w = gtest::random(c.ctx, 0, BRAID_FLOAT32, {3, 3}, 1.0);
    BRAID_CHECK_OK(braid_tensor_attach_grad(x.t, BRAID_GRAD_WRITE));
    BRAID_CHECK_OK(braid_tensor_attach_grad(w.t, BRAID_GRAD_WRITE));
    for (uint32_t passes : kPassSets) {
      CAPTURE(passes);
      BRAID_CHECK_OK(braid_graph_trace_begin(c.ctx, 1, &x.t));
      T traced = through_views(x.t, w.t);
      Graph g;
      BRAID_CHECK_OK(braid_graph_trace_end(c.ctx, 1, &traced.t, &g.g));
      BRAID_CHECK_OK(braid_graph_optimize(g.g, passes));
      const auto want = gradients_of_sum(c.ctx, [&] { return through_views(x.t, w.t); }, {x.t, w.t});
      const auto got = gradients_of_sum(c.ctx,
                                        [&] {
                                          T y;
                                          BRAID_CHECK_OK(braid_graph_run(g.g, 1, &x.t, 1, y.out()));
                                          return y;
                                        },
                                        {x.t, w.t});
      for (size_t k = 0; k < got.size(); ++k) {
        CAPTURE(k);
        gtest::check_close(got[k], want[k], 1e-5);
      }
    }
  }
}

namespace {
// Writes through a reshaped alias (braid_copy_into: the value written has no history). In the first,
// v is a of another shape, overwritten and then read through v: imperative backward accepts it (x's
// gradient is v's new value). In the second, the alias has a's own shape and a is read after the write
// through the alias: a's history is stale, and imperative backward refuses it.
T read_through_alias(braid_tensor x) {
  T a, v, twice, xr, y;
  BRAID_CHECK_OK(braid_unary(BRAID_UNARY_EXP, x, a.out()));
  const int64_t shape[] = {2, 4};
  BRAID_CHECK_OK(braid_reshape(a.t, 2, shape, v.out()));
  BRAID_CHECK_OK(braid_binary_scalar(BRAID_BINARY_MUL, v.t, 2.0, 0, twice.out()));
  BRAID_CHECK_OK(braid_copy_into(twice.t, v.t));
  BRAID_CHECK_OK(braid_reshape(x, 2, shape, xr.out()));
  BRAID_CHECK_OK(braid_binary(BRAID_BINARY_MUL, v.t, xr.t, y.out()));
  return y;
}

T read_past_alias(braid_tensor x) {
  T a, alias, shifted, r, y;
  BRAID_CHECK_OK(braid_unary(BRAID_UNARY_EXP, x, a.out()));
  const int64_t flat[] = {-1};
  BRAID_CHECK_OK(braid_reshape(a.t, 1, flat, alias.out()));
  BRAID_CHECK_OK(braid_binary_scalar(BRAID_BINARY_ADD, alias.t, 0.25, 0, shifted.out()));
  BRAID_CHECK_OK(braid_copy_into(shifted.t, alias.t));
  BRAID_CHECK_OK(braid_binary_scalar(BRAID_BINARY_MUL, a.t, 3.0, 0, r.out()));
  BRAID_CHECK_OK(braid_binary(BRAID_BINARY_MUL, r.t, x, y.out()));
  return y;
}

// backward(sum(forward())) under recording: its status, and x's gradient when it ran.
braid_status backward_of_sum(braid_context ctx, const std::function<T()>& forward, braid_tensor x,
                             std::vector<float>* grad) {
  BRAID_CHECK_OK(braid_autograd_set_recording(ctx, 1, nullptr));
  T y = forward(), loss;
  BRAID_CHECK_OK(braid_reduce(BRAID_REDUCE_SUM, y.t, 0, nullptr, 0, loss.out()));
  BRAID_CHECK_OK(braid_autograd_set_recording(ctx, 0, nullptr));
  const braid_status st = braid_backward(1, &loss.t, nullptr, 0);
  if (st == BRAID_OK) {
    T g;
    BRAID_CHECK_OK(braid_tensor_grad(x, g.out()));
    *grad = gtest::host_f32(g);
  }
  return st;
}
}  // namespace

TEST_CASE("graph: a write through a reshaped alias is seen through that handle alone, as imperative autograd sees it") {
  for (const std::string& backend : gtest::backends()) {
    CAPTURE(backend);
    gtest::BackendCtx c(backend);
    if (!c.ctx) continue;
    for (int accepted = 1; accepted >= 0; --accepted) {
      CAPTURE(accepted);
      const std::vector<int64_t> shape = accepted ? std::vector<int64_t>{4, 2} : std::vector<int64_t>{8};
      T x = gtest::random(c.ctx, 0, BRAID_FLOAT32, shape, 1.0);
      BRAID_CHECK_OK(braid_tensor_attach_grad(x.t, BRAID_GRAD_WRITE));
      auto program = [&](braid_tensor in) { return accepted ? read_through_alias(in) : read_past_alias(in); };
      std::vector<float> want, got;
      const braid_status imperative = backward_of_sum(
          c.ctx, [&] { return program(x.t); }, x.t, &want);
      CHECK(imperative == (accepted ? BRAID_OK : BRAID_ERR_INVALID_STATE));
      for (uint32_t passes : kPassSets) {
        CAPTURE(passes);
        BRAID_CHECK_OK(braid_graph_trace_begin(c.ctx, 1, &x.t));
        T traced = program(x.t);
        Graph g;
        BRAID_CHECK_OK(braid_graph_trace_end(c.ctx, 1, &traced.t, &g.g));
        BRAID_CHECK_OK(braid_graph_optimize(g.g, passes));
        T ran;
        BRAID_CHECK_OK(braid_graph_run(g.g, 1, &x.t, 1, ran.out()));
        gtest::check_close(gtest::host_f32(ran), gtest::host_f32(traced), 1e-6);
        const braid_status run = backward_of_sum(
            c.ctx,
            [&] {
              T y;
              BRAID_CHECK_OK(braid_graph_run(g.g, 1, &x.t, 1, y.out()));
              return y;
            },
            x.t, &got);
        CHECK(run == imperative);
        if (run == BRAID_OK && imperative == BRAID_OK) gtest::check_close(got, want, 1e-5);
      }
    }
  }
}

TEST_CASE("graph: a traced training step updates the parameters in place on every run") {
  test::Ctx c;
  T w = test::from_vector(c.ctx, 0, {1, 2, 3, 4});
  T gsrc = test::from_vector(c.ctx, 0, {1, 1, 1, 1});
  BRAID_CHECK_OK(braid_graph_trace_begin(c.ctx, 1, &gsrc.t));
  BRAID_CHECK_OK(braid_sgd_update(w.t, gsrc.t, 0.5, 0.0));
  T out;
  BRAID_CHECK_OK(braid_binary_scalar(BRAID_BINARY_MUL, w.t, 1.0, 0, out.out()));
  Graph g;
  BRAID_CHECK_OK(braid_graph_trace_end(c.ctx, 1, &out.t, &g.g));
  BRAID_CHECK_OK(braid_graph_optimize(g.g, BRAID_GRAPH_PASS_ALL));
  CHECK(test::to_vector(w) == std::vector<double>{0.5, 1.5, 2.5, 3.5});
  for (int i = 0; i < 2; ++i) {
    T r;
    BRAID_CHECK_OK(braid_graph_run(g.g, 1, &gsrc.t, 1, r.out()));
  }
  CHECK(test::to_vector(w) == std::vector<double>{-0.5, 0.5, 1.5, 2.5});
}

TEST_CASE("graph: save and load round-trip, on every device") {
  test::Ctx c;
  Mlp m(c.ctx, 0, 12, 10, 8, 4);
  T x = gtest::random(c.ctx, 0, BRAID_FLOAT32, {3, 12}, 1.0);
  T y;
  Graph g = trace_mlp(c.ctx, m, x.t, &y);
  BRAID_CHECK_OK(braid_graph_optimize(g.g, BRAID_GRAPH_PASS_ALL));
  gtest::TempDir dir;
  const std::string json = dir.file("mlp.json"), params = dir.file("mlp.safetensors");
  BRAID_CHECK_OK(braid_graph_save(g.g, json.c_str(), params.c_str()));
  const std::vector<float> xs = gtest::host_f32(x), want = gtest::host_f32(y);
  for (const std::string& backend : gtest::backends()) {
    CAPTURE(backend);
    gtest::BackendCtx other(backend);
    if (!other.ctx) continue;
    Graph loaded;
    BRAID_CHECK_OK(braid_graph_load(other.ctx, 0, json.c_str(), params.c_str(), &loaded.g));
    const int64_t shape[] = {3, 12};
    T xl;
    BRAID_CHECK_OK(braid_tensor_from_host(other.ctx, 0, BRAID_FLOAT32, 2, shape, xs.data(), xs.size() * 4, xl.out()));
    T got;
    BRAID_CHECK_OK(braid_graph_run(loaded.g, 1, &xl.t, 1, got.out()));
    gtest::check_close(gtest::host_f32(got), want, 1e-5);
    CHECK(gtest::nodes(loaded.g) == gtest::nodes(g.g));
  }
}

TEST_CASE("graph: bad use is refused with a clear error") {
  test::Ctx c(2);
  T x = gtest::random(c.ctx, 0, BRAID_FLOAT32, {2, 3}, 1.0);
  Graph g;
  SUBCASE("end without begin") { CHECK(braid_graph_trace_end(c.ctx, 1, &x.t, &g.g) == BRAID_ERR_INVALID_STATE); }
  SUBCASE("traces do not nest") {
    BRAID_CHECK_OK(braid_graph_trace_begin(c.ctx, 1, &x.t));
    CHECK(braid_graph_trace_begin(c.ctx, 1, &x.t) == BRAID_ERR_INVALID_STATE);
    BRAID_CHECK_OK(braid_graph_trace_abort());
  }
  SUBCASE("an op on another device") {
    T other = gtest::random(c.ctx, 1, BRAID_FLOAT32, {2, 3}, 1.0);
    BRAID_CHECK_OK(braid_graph_trace_begin(c.ctx, 1, &x.t));
    T a, b;
    BRAID_CHECK_OK(braid_unary(BRAID_UNARY_NEG, x.t, a.out()));
    BRAID_CHECK_OK(braid_unary(BRAID_UNARY_NEG, other.t, b.out()));
    CHECK(braid_graph_trace_end(c.ctx, 1, &a.t, &g.g) == BRAID_ERR_INVALID_STATE);
    CHECK(std::string(braid_last_error()).find("cpu:1") != std::string::npos);
    CHECK(g.g == nullptr);
  }
  SUBCASE("a computed value copied to another device") {
    BRAID_CHECK_OK(braid_graph_trace_begin(c.ctx, 1, &x.t));
    T a, b;
    BRAID_CHECK_OK(braid_unary(BRAID_UNARY_NEG, x.t, a.out()));
    BRAID_CHECK_OK(braid_copy(a.t, 1, b.out()));
    CHECK(braid_graph_trace_end(c.ctx, 1, &a.t, &g.g) == BRAID_ERR_INVALID_STATE);
  }
  SUBCASE("runs with the wrong inputs") {
    BRAID_CHECK_OK(braid_graph_trace_begin(c.ctx, 1, &x.t));
    T a;
    BRAID_CHECK_OK(braid_unary(BRAID_UNARY_NEG, x.t, a.out()));
    BRAID_CHECK_OK(braid_graph_trace_end(c.ctx, 1, &a.t, &g.g));
    T wrong_shape = gtest::random(c.ctx, 0, BRAID_FLOAT32, {3, 2}, 1.0);
    T wrong_device = gtest::random(c.ctx, 1, BRAID_FLOAT32, {2, 3}, 1.0);
    T out;
    CHECK(braid_graph_run(g.g, 1, &wrong_shape.t, 1, out.out()) == BRAID_ERR_SHAPE);
    CHECK(braid_graph_run(g.g, 1, &wrong_device.t, 1, out.out()) == BRAID_ERR_DEVICE);
    CHECK(braid_graph_run(g.g, 0, nullptr, 1, out.out()) == BRAID_ERR_INVALID_ARGUMENT);
    CHECK(braid_graph_run(g.g, 1, &x.t, 2, out.out()) == BRAID_ERR_INVALID_ARGUMENT);
    CHECK(braid_graph_optimize(g.g, 1u << 20) == BRAID_ERR_INVALID_ARGUMENT);
    braid_graph_node_info ni{};
    ni.struct_size = sizeof ni;
    CHECK(braid_graph_get_node(g.g, 5, &ni) == BRAID_ERR_INVALID_ARGUMENT);
  }
  SUBCASE("released handles") {
    BRAID_CHECK_OK(braid_graph_trace_begin(c.ctx, 1, &x.t));
    T a;
    BRAID_CHECK_OK(braid_unary(BRAID_UNARY_NEG, x.t, a.out()));
    braid_graph raw = nullptr;
    BRAID_CHECK_OK(braid_graph_trace_end(c.ctx, 1, &a.t, &raw));
    BRAID_CHECK_OK(braid_graph_release(raw));
    CHECK(braid_graph_release(raw) == BRAID_ERR_INVALID_ARGUMENT);
    T out;
    CHECK(braid_graph_run(raw, 1, &x.t, 1, out.out()) == BRAID_ERR_INVALID_ARGUMENT);
    CHECK(braid_graph_run(nullptr, 1, &x.t, 1, out.out()) == BRAID_ERR_INVALID_ARGUMENT);
  }
}

TEST_CASE("graph: malformed and newer files are refused, never crash") {
  test::Ctx c;
  T x = gtest::random(c.ctx, 0, BRAID_FLOAT32, {2, 3}, 1.0);
  BRAID_CHECK_OK(braid_graph_trace_begin(c.ctx, 1, &x.t));
  T a, b;
  BRAID_CHECK_OK(braid_unary(BRAID_UNARY_NEG, x.t, a.out()));
  BRAID_CHECK_OK(braid_matmul(a.t, x.t, 0, 1, b.out()));
  Graph g;
  BRAID_CHECK_OK(braid_graph_trace_end(c.ctx, 1, &b.t, &g.g));
  gtest::TempDir dir;
  const std::string json = dir.file("g.json"), params = dir.file("g.safetensors");
  BRAID_CHECK_OK(braid_graph_save(g.g, json.c_str(), params.c_str()));
  const std::string good = gtest::read_text(json);
  auto load = [&](const std::string& text) {
    gtest::write_text(json, text);
    Graph l;
    const braid_status s = braid_graph_load(c.ctx, 0, json.c_str(), params.c_str(), &l.g);
    CHECK((s == BRAID_OK) == (l.g != nullptr));
    return s;
  };
  CHECK(load(good) == BRAID_OK);
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string t = good;
    const size_t at = t.find(from);
    REQUIRE(at != std::string::npos);
    return t.substr(0, at) + to + t.substr(at + from.size());
  };
  {
    std::string t = good;
    const size_t at = t.find('1', t.find("\"version\""));
    REQUIRE(at != std::string::npos);
    CHECK(load(t.substr(0, at) + "2" + t.substr(at + 1)) == BRAID_ERR_UNSUPPORTED);
  }
  CHECK(load("") == BRAID_ERR_IO);
  CHECK(load("{}") == BRAID_ERR_IO);
  CHECK(load("[1, 2]") == BRAID_ERR_IO);
  CHECK(load(good.substr(0, good.size() / 2)) == BRAID_ERR_IO);
  CHECK(load(replaced("\"MATMUL\"", "\"NOPE\"")) == BRAID_ERR_IO);
  CHECK(load(replaced("\"UNARY\"", "\"MATMUL\"")) == BRAID_ERR_IO);  // wrong operands for the kernel
  CHECK(load(replaced("\"float32\"", "\"float33\"")) == BRAID_ERR_IO);
  {
    std::string t = good;  // a stride that reaches outside its value
    const size_t at = t.find('3', t.find("\"strides\""));
    REQUIRE(at != std::string::npos);
    CHECK(load(t.substr(0, at) + "300" + t.substr(at + 1)) == BRAID_ERR_IO);
  }
  CHECK(load(replaced("\"value\": 0", "\"value\": 99")) == BRAID_ERR_IO);
  std::filesystem::remove(params);
  CHECK(load(good) == BRAID_ERR_NOT_FOUND);
}

namespace {
struct Counter {
  int calls = 0;
};
// y = relu(x) * 2, counting how often the function itself runs.
braid_status relu2(void* user, int32_t, const braid_tensor* in, int32_t, braid_tensor* out) {
  ++static_cast<Counter*>(user)->calls;
  braid_tensor r = nullptr;
  if (braid_status s = braid_unary(BRAID_UNARY_RELU, in[0], &r); s != BRAID_OK) return s;
  const braid_status s = braid_binary_scalar(BRAID_BINARY_MUL, r, 2.0, 0, &out[0]);
  braid_tensor_release(r);
  return s;
}
braid_status failing(void*, int32_t, const braid_tensor* in, int32_t, braid_tensor* out) {
  return braid_unary(BRAID_UNARY_LOG, nullptr, &out[0]);
}
}  // namespace

namespace {
constexpr int kChain = 12;
constexpr int64_t kChainElems = int64_t{1} << 20;  // 4 MiB of float32 per intermediate
constexpr uint64_t kChainBytes = uint64_t(kChainElems) * sizeof(float);

// y = x + kChain, one kernel and one released intermediate per step.
braid_status chain(void*, int32_t, const braid_tensor* in, int32_t, braid_tensor* out) {
  braid_tensor y = nullptr;
  for (int i = 0; i < kChain; ++i) {
    braid_tensor next = nullptr;
    const braid_status s = braid_binary_scalar(BRAID_BINARY_ADD, y ? y : in[0], 1.0, 0, &next);
    if (y) braid_tensor_release(y);
    if (s != BRAID_OK) return s;
    y = next;
  }
  out[0] = y;
  return BRAID_OK;
}

// How far the device's allocated bytes rose above where they were when the peak was reset.
struct PeakRise {
  braid_context ctx;
  uint64_t base = 0;
  explicit PeakRise(braid_context c) : ctx(c) {
    BRAID_CHECK_OK(braid_wait_all(ctx));
    BRAID_CHECK_OK(braid_memory_reset_peak(ctx, 0));
    base = stats().allocated_bytes;
  }
  braid_memory_stats stats() const {
    braid_memory_stats m{};
    m.struct_size = sizeof m;
    BRAID_CHECK_OK(braid_memory_stats_get(ctx, 0, &m));
    return m;
  }
  uint64_t rise() const {
    BRAID_CHECK_OK(braid_wait_all(ctx));
    return stats().peak_allocated_bytes - base;
  }
};

void check_chain_result(const test::T& x, const test::T& y) {
  const std::vector<float> in = gtest::host_f32(x), out = gtest::host_f32(y);
  REQUIRE(out.size() == in.size());
  size_t wrong = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    float want = in[i];
    for (int k = 0; k < kChain; ++k) want += 1.0f;  // rounded after each step, as the kernels do
    wrong += out[i] != want;
  }
  CHECK(wrong == 0);
}

// Reads its input on the host: refused while the first call traces without running.
braid_status reads_on_host(void* user, int32_t, const braid_tensor* in, int32_t, braid_tensor* out) {
  float first[4];
  *static_cast<braid_status*>(user) = braid_tensor_to_host(in[0], first, sizeof first);
  return braid_unary(BRAID_UNARY_RELU, in[0], &out[0]);
}
}  // namespace

TEST_CASE("graph: a trace holds no storage the application released") {
  test::Ctx c;
  T x = gtest::random(c.ctx, 0, BRAID_FLOAT32, {kChainElems}, 1.0);
  PeakRise peak(c.ctx);
  BRAID_CHECK_OK(braid_graph_trace_begin(c.ctx, 1, &x.t));
  T y;
  REQUIRE(chain(nullptr, 1, &x.t, 1, y.out()) == BRAID_OK);
  Graph g;
  BRAID_CHECK_OK(braid_graph_trace_end(c.ctx, 1, &y.t, &g.g));
  // Each released intermediate went back (its bytes taken over by the next); a trace that kept
  // them rose by all twelve.
  INFO("peak rise " << peak.rise() << " bytes, " << kChainBytes << " per intermediate");
  CHECK(peak.rise() <= 4 * kChainBytes);
  CHECK(gtest::nodes(g.g) == kChain);
  check_chain_result(x, y);
  T again;
  BRAID_CHECK_OK(braid_graph_run(g.g, 1, &x.t, 1, again.out()));
  check_chain_result(x, again);
}

TEST_CASE("hybrid: the first call records fn without running it, then runs the planned graph") {
  test::Ctx c;
  T x = gtest::random(c.ctx, 0, BRAID_FLOAT32, {kChainElems}, 1.0);
  braid_hybrid h = nullptr;
  BRAID_CHECK_OK(braid_hybrid_create(c.ctx, chain, nullptr, 1, 1, BRAID_GRAPH_PASS_PLAN_MEMORY, &h));
  for (int call = 0; call < 2; ++call) {
    CAPTURE(call);
    PeakRise peak(c.ctx);
    T y;
    BRAID_CHECK_OK(braid_hybrid_call(h, &x.t, y.out()));
    // The first call too: the output and the planned workspace, not every step's intermediate.
    INFO("peak rise " << peak.rise() << " bytes, " << kChainBytes << " per intermediate");
    CHECK(peak.rise() <= 4 * kChainBytes);
    check_chain_result(x, y);
  }
  BRAID_CHECK_OK(braid_hybrid_release(h));

  // Reading a value on the host inside fn: its kernels have not run, so the read is refused.
  braid_status read = BRAID_OK;
  BRAID_CHECK_OK(braid_hybrid_create(c.ctx, reads_on_host, &read, 1, 1, BRAID_GRAPH_PASS_ALL, &h));
  T small = gtest::random(c.ctx, 0, BRAID_FLOAT32, {4}, 1.0);
  T y;
  BRAID_CHECK_OK(braid_hybrid_call(h, &small.t, y.out()));
  CHECK(read == BRAID_ERR_INVALID_STATE);
  const std::vector<float> in = gtest::host_f32(small), out = gtest::host_f32(y);
  for (size_t i = 0; i < in.size(); ++i) CHECK(out[i] == std::max(in[i], 0.0f));
  // Outside the trace the same read works.
  float host[4];
  BRAID_CHECK_OK(braid_tensor_to_host(small.t, host, sizeof host));
  BRAID_CHECK_OK(braid_hybrid_release(h));
}

TEST_CASE("hybrid: traced once per input signature, then run as a graph") {
  test::Ctx c;
  Counter n;
  braid_hybrid h = nullptr;
  BRAID_CHECK_OK(braid_hybrid_create(c.ctx, relu2, &n, 1, 1, BRAID_GRAPH_PASS_ALL, &h));
  for (int64_t len : {5, 5, 9, 5, 9}) {
    T x = gtest::random(c.ctx, 0, BRAID_FLOAT32, {len}, 1.0);
    T y;
    BRAID_CHECK_OK(braid_hybrid_call(h, &x.t, y.out()));
    const std::vector<float> in = gtest::host_f32(x), out = gtest::host_f32(y);
    REQUIRE(out.size() == in.size());
    for (size_t i = 0; i < in.size(); ++i) CHECK(out[i] == (in[i] > 0 ? 2 * in[i] : 0.0f));
  }
  CHECK(n.calls == 2);  // one trace per shape
  T x = gtest::random(c.ctx, 0, BRAID_FLOAT32, {9}, 1.0);
  Graph g;
  BRAID_CHECK_OK(braid_hybrid_graph(h, &x.t, &g.g));
  CHECK(gtest::nodes(g.g) == 2);
  T x7 = gtest::random(c.ctx, 0, BRAID_FLOAT32, {7}, 1.0);
  Graph none;
  CHECK(braid_hybrid_graph(h, &x7.t, &none.g) == BRAID_ERR_NOT_FOUND);
  BRAID_CHECK_OK(braid_hybrid_release(h));
  CHECK(braid_hybrid_release(h) == BRAID_ERR_INVALID_ARGUMENT);

  braid_hybrid bad = nullptr;
  BRAID_CHECK_OK(braid_hybrid_create(c.ctx, failing, nullptr, 1, 1, 0, &bad));
  T y;
  CHECK(braid_hybrid_call(bad, &x.t, y.out()) == BRAID_ERR_INVALID_ARGUMENT);
  CHECK(y.t == nullptr);
  // The failed trace ended: the thread can trace again.
  BRAID_CHECK_OK(braid_graph_trace_begin(c.ctx, 1, &x.t));
  BRAID_CHECK_OK(braid_graph_trace_abort());
  BRAID_CHECK_OK(braid_hybrid_release(bad));
}
