// Conformance: braid_view (ABI 1.13), a window of a tensor's memory, on every device: ops read and write
// the window and nothing else, writes through either handle are seen through the other, host copies and
// copies between devices take the window's elements, and the places that cannot take a window (a
// graph's inputs, autograd and tracing) say so or copy it.
#include <cstdint>
#include <string>
#include <vector>

#include "harness.h"

namespace {

ref::Array rows(const ref::Array& x, int64_t first, int64_t count) {  // rows first .. first + count of a 2-D array
  const int64_t cols = x.shape[1];
  ref::Array out({count, cols});
  for (int64_t i = 0; i < count * cols; ++i) out.data[size_t(i)] = x.data[size_t(first * cols + i)];
  return out;
}

ref::Array filled(const ref::Shape& shape, double v) {
  ref::Array a(shape);
  for (double& e : a.data) e = v;
  return a;
}

}  // namespace

TEST_CASE("view: a window reads and writes the elements it covers, and ops on it see only those") {
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      for (braid_dtype dt : {BRAID_FLOAT32, BRAID_INT32}) {
        INFO("device ", dev.id, ", ", harness::dtype_name(dt));
        ref::Array xv = harness::sample({5, 3}, dt, 11);
        const auto x = harness::upload(dev.index, dt, xv);
        const auto v = braid::view(x, 3, {2, 3});  // rows 1 and 2
        CHECK(v.shape() == std::vector<int64_t>{2, 3});
        CHECK_CLOSE(harness::download(v), rows(xv, 1, 2), 0.0);
        // Ops read the window (an unaligned start: element 3 of the storage).
        const auto doubled = braid::add(v, v);
        ref::Array want = rows(xv, 1, 2);
        for (double& e : want.data) e *= 2;
        CHECK_CLOSE(harness::download(doubled), want, 0.0);
        double total = 0;
        for (double e : rows(xv, 1, 2).data) total += e;
        CHECK(harness::download(braid::sum(v)).data[0] == doctest::Approx(total).epsilon(1e-6));
        if (dt == BRAID_FLOAT32) {  // a library call (gemm) on a window
          const auto w = harness::upload(dev.index, dt, ref::Array({3, 1}, std::vector<double>{1, 10, 100}));
          ref::Array mm({2, 1});
          for (int r = 0; r < 2; ++r)
            mm.data[size_t(r)] =
                xv.data[size_t(3 + 3 * r)] + 10 * xv.data[size_t(4 + 3 * r)] + 100 * xv.data[size_t(5 + 3 * r)];
          CHECK_CLOSE(harness::download(braid::matmul(v, w)), mm, 1e-5);
        }
        // A write through the window changes those rows of x and nothing else, in program order.
        braid::copy_into(braid::Tensor::full(harness::context(), dev.index, dt, {2, 3}, 7), v);
        for (int64_t i = 3; i < 9; ++i) xv.data[size_t(i)] = 7;
        CHECK_CLOSE(harness::download(x), xv, 0.0);
        // A write to x is seen through the window.
        braid::copy_into(braid::Tensor::full(harness::context(), dev.index, dt, {5, 3}, -2), x);
        CHECK_CLOSE(harness::download(v), filled({2, 3}, -2), 0.0);
        // A window of a window, and a reshape of one, keep their place.
        const auto row2 = braid::view(v, 3, {3});
        const auto flat = braid::reshape(v, {6});
        braid::copy_into(braid::Tensor::full(harness::context(), dev.index, dt, {3}, 4), row2);
        CHECK_CLOSE(harness::download(flat), ref::Array({6}, std::vector<double>{-2, -2, -2, 4, 4, 4}), 0.0);
        CHECK_CLOSE(harness::download(braid::view(x, 6, {3})), filled({3}, 4), 0.0);
      }
    });
  }
}

TEST_CASE("view: host copies, host data and copies between devices take the window's elements") {
  const auto devs = harness::each_device();
  for (const auto& dev : devs) {
    harness::on_device(dev, [&] {
      INFO("device ", dev.id);
      const ref::Array xv = harness::sample({4, 4}, BRAID_FLOAT32, 12);
      const auto x = harness::upload(dev.index, BRAID_FLOAT32, xv);
      const auto v = braid::view(x, 8, {2, 4});
      std::vector<float> host(8);
      v.to_host(std::as_writable_bytes(std::span(host)));
      for (size_t i = 0; i < 8; ++i) CHECK(host[i] == static_cast<float>(xv.data[8 + i]));
      const std::vector<float> up = {1, 2, 3, 4, 5, 6, 7, 8};
      v.write_host(std::as_bytes(std::span(up)));
      ref::Array want = xv;
      for (size_t i = 0; i < 8; ++i) want.data[8 + i] = up[i];
      CHECK_CLOSE(harness::download(x), want, 0.0);
      void* data = nullptr;
      if (braid_tensor_host_data(v.get(), &data) == BRAID_OK) CHECK(static_cast<float*>(data)[0] == 1.0f);
      for (const auto& other : devs) {
        INFO("to ", other.id);
        const auto moved = v.copy_to(other.index);
        CHECK_CLOSE(harness::download(moved), rows(want, 2, 2), 0.0);
        const auto into = braid::view(harness::upload(other.index, BRAID_FLOAT32, xv), 0, {2, 4});
        braid::copy_into(v, into);  // between devices, into a window
        CHECK_CLOSE(harness::download(into), rows(want, 2, 2), 0.0);
      }
    });
  }
}

TEST_CASE("view: a window outside the tensor, or one made while autograd records or a trace runs, is refused") {
  auto& ctx = harness::context();
  const auto x = braid::Tensor::full(ctx, 0, BRAID_FLOAT32, {4, 3}, 1);
  braid_tensor out = nullptr;
  const int64_t two_rows[] = {2, 3}, all[] = {13};
  CHECK(braid_view(x.get(), 7, 2, two_rows, &out) == BRAID_ERR_SHAPE);  // 7 + 6 > 12
  CHECK(braid_view(x.get(), -1, 2, two_rows, &out) == BRAID_ERR_SHAPE);
  CHECK(braid_view(x.get(), 0, 1, all, &out) == BRAID_ERR_SHAPE);
  CHECK(braid_view(x.get(), 0, 2, nullptr, &out) == BRAID_ERR_INVALID_ARGUMENT);
  const int64_t huge[] = {INT64_MAX, 2}, negative[] = {-1, 3};
  CHECK(braid_view(x.get(), 0, 2, huge, &out) != BRAID_OK);
  CHECK(braid_view(x.get(), INT64_MAX, 2, two_rows, &out) == BRAID_ERR_SHAPE);
  CHECK(braid_view(x.get(), 0, 2, negative, &out) == BRAID_ERR_INVALID_ARGUMENT);
  CHECK(braid_view(x.get(), 0, BRAID_MAX_DIMS + 1, two_rows, &out) == BRAID_ERR_INVALID_ARGUMENT);
  CHECK(braid_view(nullptr, 0, 2, two_rows, &out) == BRAID_ERR_INVALID_ARGUMENT);
  CHECK(braid_view(x.get(), 0, 2, two_rows, nullptr) == BRAID_ERR_INVALID_ARGUMENT);
  CHECK(out == nullptr);
  const int64_t empty[] = {0};
  CHECK(braid_view(x.get(), 12, 1, empty, &out) == BRAID_OK);  // an empty window at the end
  braid_tensor_release(out);
  int32_t prev = 0;
  REQUIRE(braid_autograd_set_recording(ctx.get(), 1, &prev) == BRAID_OK);
  CHECK(braid_view(x.get(), 0, 2, two_rows, &out) == BRAID_ERR_INVALID_STATE);
  CHECK(std::string(braid_last_error()).find("braid_slice") != std::string::npos);
  REQUIRE(braid_autograd_set_recording(ctx.get(), 0, &prev) == BRAID_OK);
  const braid_tensor in = x.get();
  REQUIRE(braid_graph_trace_begin(ctx.get(), 1, &in) == BRAID_OK);
  CHECK(braid_view(x.get(), 0, 2, two_rows, &out) == BRAID_ERR_INVALID_STATE);
  CHECK(braid_graph_trace_abort() == BRAID_OK);
}

namespace {

// y = x * 2 + 1 as a hybrid function.
braid_status double_plus_one(void*, int32_t, const braid_tensor* inputs, int32_t, braid_tensor* outputs) {
  braid_tensor t = nullptr;
  braid_status st = braid_binary_scalar(BRAID_BINARY_MUL, inputs[0], 2.0, 0, &t);
  if (st != BRAID_OK) return st;
  st = braid_binary_scalar(BRAID_BINARY_ADD, t, 1.0, 0, &outputs[0]);
  braid_tensor_release(t);
  return st;
}

}  // namespace

TEST_CASE("view: a hybrid function runs on a copy of a window; a graph's run and trace refuse one") {
  auto& ctx = harness::context();
  const ref::Array xv = harness::sample({4, 3}, BRAID_FLOAT32, 13);
  const auto x = harness::upload(0, BRAID_FLOAT32, xv);
  braid_hybrid h = nullptr;
  REQUIRE(braid_hybrid_create(ctx.get(), double_plus_one, nullptr, 1, 1, BRAID_GRAPH_PASS_ALL, &h) == BRAID_OK);
  ref::Array want = rows(xv, 2, 2);
  for (double& e : want.data) e = e * 2 + 1;
  for (int call = 0; call < 2; ++call) {  // traced, then replayed from the cache
    INFO("call ", call);
    const auto v = braid::view(x, 6, {2, 3});
    braid_tensor in = v.get(), y = nullptr;
    REQUIRE(braid_hybrid_call(h, &in, &y) == BRAID_OK);
    CHECK_CLOSE(harness::download(braid::Tensor::adopt(y)), want, 1e-6);
  }
  braid_graph g = nullptr;
  const auto whole = braid::Tensor::full(ctx, 0, BRAID_FLOAT32, {2, 3}, 1);
  braid_tensor in = whole.get();
  REQUIRE(braid_hybrid_graph(h, &in, &g) == BRAID_OK);
  const auto v = braid::view(x, 3, {2, 3});
  braid_tensor vin = v.get(), y = nullptr;
  CHECK(braid_graph_run(g, 1, &vin, 1, &y) == BRAID_ERR_INVALID_ARGUMENT);
  CHECK(std::string(braid_last_error()).find("view") != std::string::npos);
  CHECK(braid_graph_trace_begin(ctx.get(), 1, &vin) == BRAID_ERR_INVALID_ARGUMENT);
  braid_graph_release(g);
  braid_hybrid_release(h);
}

TEST_CASE("view: copies between windows of one storage, apart or overlapping") {
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      INFO("device ", dev.id);
      const auto x = harness::upload(dev.index, BRAID_FLOAT32, ref::Array({6}, std::vector<double>{0, 1, 2, 3, 4, 5}));
      braid::copy_into(braid::view(x, 0, {2}), braid::view(x, 4, {2}));  // apart
      CHECK_CLOSE(harness::download(x), ref::Array({6}, std::vector<double>{0, 1, 2, 3, 0, 1}), 0.0);
      braid::copy_into(braid::view(x, 0, {4}), braid::view(x, 2, {4}));  // overlapping: as if through a copy
      CHECK_CLOSE(harness::download(x), ref::Array({6}, std::vector<double>{0, 1, 0, 1, 2, 3}), 0.0);
    });
  }
}

TEST_CASE("view: a window made before a trace and returned by it comes out as its own elements") {
  auto& ctx = harness::context();
  const auto x = harness::upload(0, BRAID_FLOAT32, ref::Array({4}, std::vector<double>{1, 2, 3, 4}));
  const auto p = harness::upload(0, BRAID_FLOAT32, ref::Array({4}, std::vector<double>{10, 20, 30, 40}));
  const auto w = braid::view(p, 2, {2});
  const braid_tensor in = x.get();
  REQUIRE(braid_graph_trace_begin(ctx.get(), 1, &in) == BRAID_OK);
  const auto y = braid::add(x, p);  // reads p whole: p is a parameter of the graph
  const braid_tensor outs[2] = {y.get(), w.get()};
  braid_graph g = nullptr;
  REQUIRE(braid_graph_trace_end(ctx.get(), 2, outs, &g) == BRAID_OK);
  braid_tensor got[2] = {nullptr, nullptr};
  REQUIRE(braid_graph_run(g, 1, &in, 2, got) == BRAID_OK);
  const auto sum = braid::Tensor::adopt(got[0]), part = braid::Tensor::adopt(got[1]);
  CHECK_CLOSE(harness::download(sum), ref::Array({4}, std::vector<double>{11, 22, 33, 44}), 0.0);
  CHECK(part.shape() == std::vector<int64_t>{2});
  CHECK_CLOSE(harness::download(part), ref::Array({2}, std::vector<double>{30, 40}), 0.0);
  braid_graph_release(g);
}
