// Conformance: the bool dtype (ABI 1.13) on every device: braid_compare and braid_compare_scalar against
// IEEE comparisons of the values themselves, casts both ways (nonzero is true, NaN too), PyTorch's
// promotion and logical ops between bools, reductions, layout ops that keep bool, and host bytes.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "harness.h"

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

bool compare_ref(braid_compare_op op, double a, double b) {
  switch (op) {
    case BRAID_COMPARE_EQUAL: return a == b;
    case BRAID_COMPARE_NOT_EQUAL: return a != b;
    case BRAID_COMPARE_LESS: return a < b;
    case BRAID_COMPARE_LESS_EQUAL: return a <= b;
    case BRAID_COMPARE_GREATER: return a > b;
    default: return a >= b;
  }
}

std::string op_name(braid_compare_op op) {  // a std::string: INFO prints a const char* as an address
  static const char* names[] = {"==", "!=", "<", "<=", ">", ">="};
  return names[op];
}

constexpr braid_compare_op kOps[] = {BRAID_COMPARE_EQUAL,      BRAID_COMPARE_NOT_EQUAL, BRAID_COMPARE_LESS,
                                     BRAID_COMPARE_LESS_EQUAL, BRAID_COMPARE_GREATER,   BRAID_COMPARE_GREATER_EQUAL};

bool device_holds(const harness::DeviceRef& dev, braid_dtype dt) {
  return (harness::context().device_info(dev.index).dtype_mask & (1u << dt)) != 0;
}

// Values every dtype of `dt` holds exactly, with the special floats where it has them.
ref::Array values_for(braid_dtype dt) {
  switch (dt) {
    case BRAID_BOOL: return ref::Array({8}, std::vector<double>{0, 1, 1, 0, 1, 0, 0, 1});
    case BRAID_UINT8: return ref::Array({8}, std::vector<double>{0, 1, 2, 255, 7, 7, 128, 3});
    case BRAID_INT32:
    case BRAID_INT64: return ref::Array({8}, std::vector<double>{0, -1, 2, -100, 7, 7, 100, 3});
    default: return ref::Array({8}, std::vector<double>{0.0, -0.0, 0.5, -2.0, kInf, -kInf, kNaN, 3.0});
  }
}

ref::Array expect_compare(braid_compare_op op, const ref::Array& a, const ref::Array& b) {
  ref::Array out(a.shape);
  for (size_t i = 0; i < a.data.size(); ++i) out.data[i] = compare_ref(op, a.data[i], b.data[i]) ? 1.0 : 0.0;
  return out;
}

}  // namespace

TEST_CASE("bool: compare gives bool in every dtype; NaN is false but for !=, -0 equals 0") {
  const braid_dtype dtypes[] = {BRAID_FLOAT32, BRAID_FLOAT64, BRAID_INT32,    BRAID_INT64,
                                BRAID_UINT8,   BRAID_FLOAT16, BRAID_BFLOAT16, BRAID_BOOL};
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      for (braid_dtype dt : dtypes) {
        if (!device_holds(dev, dt)) continue;
        const ref::Array a = values_for(dt);
        ref::Array b = a;  // every pair of a's values: b is a rotated by i for i in 0..7
        for (size_t shift = 0; shift < a.data.size(); ++shift) {
          for (size_t i = 0; i < a.data.size(); ++i) b.data[i] = a.data[(i + shift) % a.data.size()];
          const auto ta = harness::upload(dev.index, dt, a), tb = harness::upload(dev.index, dt, b);
          for (braid_compare_op op : kOps) {
            INFO("device ", dev.id, ", ", harness::dtype_name(dt), " a ", op_name(op), " b, b rotated by ", shift);
            const auto y = braid::compare(op, ta, tb);
            CHECK(y.dtype() == BRAID_BOOL);
            CHECK_CLOSE(harness::download(y), expect_compare(op, a, b), 0.0);
          }
        }
      }
    });
  }
}

TEST_CASE("bool: compare broadcasts and promotes as braid_binary; int32 16777217 equals float32 16777216") {
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      const auto col = harness::upload(dev.index, BRAID_INT32, ref::Array({3, 1}, std::vector<double>{1, 2, 3}));
      const auto row = harness::upload(dev.index, BRAID_FLOAT32, ref::Array({4}, std::vector<double>{0.5, 2, 2.5, 3}));
      const auto y = braid::compare(BRAID_COMPARE_GREATER_EQUAL, col, row);
      CHECK(y.dtype() == BRAID_BOOL);
      CHECK(y.shape() == std::vector<int64_t>{3, 4});
      CHECK_CLOSE(harness::download(y), ref::Array({3, 4}, std::vector<double>{1, 0, 0, 0, 1, 1, 0, 0, 1, 1, 1, 1}),
                  0.0);
      const auto big = harness::upload(dev.index, BRAID_INT32, ref::Array({1}, std::vector<double>{16777217}));
      const auto f = harness::upload(dev.index, BRAID_FLOAT32, ref::Array({1}, std::vector<double>{16777216}));
      CHECK(harness::download(braid::compare(BRAID_COMPARE_EQUAL, big, f)).data[0] == 1.0);  // as PyTorch
      CHECK_THROWS_AS(braid::compare(static_cast<braid_compare_op>(BRAID_COMPARE_COUNT), col, row), braid::Error);
    });
  }
}

TEST_CASE("bool: compare_scalar is exact for integers: fractions, numbers beyond the dtype, inf and NaN") {
  const double scalars[] = {2.0,   2.5,    -2.5, 16777217.5, 2147483647.0, 2147483648.0, -2147483649.0,
                            1e300, -1e300, kInf, -kInf,      kNaN,         0.0,          -0.0};
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      for (braid_dtype dt : {BRAID_INT32, BRAID_INT64, BRAID_UINT8, BRAID_BOOL, BRAID_FLOAT64}) {
        if (!device_holds(dev, dt)) continue;
        ref::Array x({6}, std::vector<double>{-3, 2, 16777217, 2147483647, -2147483648.0, 0});
        if (dt == BRAID_UINT8) x = ref::Array({6}, std::vector<double>{0, 2, 3, 255, 254, 1});
        if (dt == BRAID_BOOL) x = ref::Array({6}, std::vector<double>{0, 1, 1, 0, 1, 0});
        const auto tx = harness::upload(dev.index, dt, x);
        for (double s : scalars)
          for (braid_compare_op op : kOps) {
            INFO("device ", dev.id, ", ", harness::dtype_name(dt), " x ", op_name(op), " ", s);
            const auto y = braid::compare(op, tx, s);
            CHECK(y.dtype() == BRAID_BOOL);
            ref::Array want(x.shape);
            for (size_t i = 0; i < x.data.size(); ++i) want.data[i] = compare_ref(op, x.data[i], s) ? 1.0 : 0.0;
            CHECK_CLOSE(harness::download(y), want, 0.0);
          }
      }
    });
  }
}

TEST_CASE("bool: casts to bool take nonzero as true (NaN, 0.5, 256, 2^40 too); casts from bool give 0 and 1") {
  struct Case {
    braid_dtype dt;
    std::vector<double> values;
  };
  const Case cases[] = {{BRAID_FLOAT32, {0.0, -0.0, 0.5, -2.0, kInf, kNaN, 1e-30}},
                        {BRAID_FLOAT64, {0.0, -0.0, 0.5, -2.0, -kInf, kNaN, 1e-310}},
                        {BRAID_INT32, {0, 1, -1, 256, 2147483647, -2147483648.0, 0}},
                        {BRAID_INT64, {0, 1, -1, 256, 1099511627776.0, -1099511627776.0, 0}},
                        {BRAID_UINT8, {0, 1, 255, 128, 2, 0, 16}},
                        {BRAID_FLOAT16, {0.0, -0.0, 0.5, -2.0, 65504.0, kNaN, 0.00006103515625}},
                        {BRAID_BFLOAT16, {0.0, -0.0, 0.5, -2.0, 1.0, kNaN, 3.0}}};
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      for (const Case& c : cases) {
        if (!device_holds(dev, c.dt)) continue;
        INFO("device ", dev.id, ", ", harness::dtype_name(c.dt));
        const ref::Array x({7}, c.values);
        ref::Array want({7});
        for (size_t i = 0; i < 7; ++i) want.data[i] = x.data[i] != 0.0 || std::isnan(x.data[i]) ? 1.0 : 0.0;
        const auto b = braid::cast(harness::upload(dev.index, c.dt, x), BRAID_BOOL);
        CHECK(b.dtype() == BRAID_BOOL);
        CHECK_CLOSE(harness::download(b), want, 0.0);
        const auto back = braid::cast(b, c.dt);  // and back: exactly 0 or 1
        CHECK(back.dtype() == c.dt);
        CHECK_CLOSE(harness::download(back), want, 0.0);
      }
    });
  }
}

TEST_CASE("bool: beside another dtype bool takes it; two bools are logical (add is or, mul is and)") {
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      const ref::Array av({4}, std::vector<double>{0, 0, 1, 1}), bv({4}, std::vector<double>{0, 1, 0, 1});
      const auto a = harness::upload(dev.index, BRAID_BOOL, av), b = harness::upload(dev.index, BRAID_BOOL, bv);
      const auto check = [&](braid_binary_op op, braid_dtype want_dtype, std::vector<double> want) {
        INFO("device ", dev.id, ", bool op ", int(op), " bool");
        const auto y = braid::binary(op, a, b);
        CHECK(y.dtype() == want_dtype);
        CHECK_CLOSE(harness::download(y), ref::Array({4}, want), 0.0);
      };
      check(BRAID_BINARY_ADD, BRAID_BOOL, {0, 1, 1, 1});
      check(BRAID_BINARY_MAXIMUM, BRAID_BOOL, {0, 1, 1, 1});
      check(BRAID_BINARY_MUL, BRAID_BOOL, {0, 0, 0, 1});
      check(BRAID_BINARY_MINIMUM, BRAID_BOOL, {0, 0, 0, 1});
      check(BRAID_BINARY_EQUAL, BRAID_BOOL, {1, 0, 0, 1});
      check(BRAID_BINARY_LESS, BRAID_BOOL, {0, 1, 0, 0});
      check(BRAID_BINARY_GREATER, BRAID_BOOL, {0, 0, 1, 0});
      check(BRAID_BINARY_DIV, BRAID_FLOAT32, {kNaN, 0, kInf, 1});
      for (braid_binary_op op : {BRAID_BINARY_SUB, BRAID_BINARY_POW, BRAID_BINARY_FLOOR_DIVIDE, BRAID_BINARY_MOD}) {
        INFO("device ", dev.id, ", bool op ", int(op), " bool is refused");
        braid_tensor out = nullptr;
        CHECK(braid_binary(op, a.get(), b.get(), &out) == BRAID_ERR_DTYPE);
        CHECK(out == nullptr);
      }
      // Beside another dtype, bool takes it (torch.promote_types), in either order.
      for (braid_dtype other : {BRAID_INT32, BRAID_INT64, BRAID_FLOAT32, BRAID_FLOAT64}) {
        if (!device_holds(dev, other)) continue;
        INFO("device ", dev.id, ", bool and ", harness::dtype_name(other));
        const auto o = harness::upload(dev.index, other, ref::Array({4}, std::vector<double>{5, -3, 2, 0}));
        const auto y = braid::binary(BRAID_BINARY_ADD, a, o), z = braid::binary(BRAID_BINARY_MUL, o, b);
        CHECK(y.dtype() == other);
        CHECK(z.dtype() == other);
        CHECK_CLOSE(harness::download(y), ref::Array({4}, std::vector<double>{5, -3, 3, 1}), 0.0);
        CHECK_CLOSE(harness::download(z), ref::Array({4}, std::vector<double>{0, -3, 0, 0}), 0.0);
      }
      // 0-d: a bool 0-d operand never decides; a 0-d integer decides beside bool dimensions.
      const auto i64_0d = harness::upload(dev.index, BRAID_INT64, ref::Array({}, 2.0));
      const auto bool_0d = harness::upload(dev.index, BRAID_BOOL, ref::Array({}, 1.0));
      const auto f32 = harness::upload(dev.index, BRAID_FLOAT32, ref::Array({4}, std::vector<double>{1, 2, 3, 4}));
      CHECK(braid::binary(BRAID_BINARY_ADD, a, i64_0d).dtype() == BRAID_INT64);
      CHECK(braid::binary(BRAID_BINARY_ADD, f32, bool_0d).dtype() == BRAID_FLOAT32);
      // With a Python number: True + 1 is int64 2, True / 2 and True + 0.5 are float32.
      const auto s = braid::binary(BRAID_BINARY_ADD, a, 1.0);
      CHECK(s.dtype() == BRAID_INT64);
      CHECK_CLOSE(harness::download(s), ref::Array({4}, std::vector<double>{1, 1, 2, 2}), 0.0);
      CHECK(braid::binary(BRAID_BINARY_DIV, a, 2.0).dtype() == BRAID_FLOAT32);
      CHECK(braid::binary(BRAID_BINARY_ADD, a, 0.5).dtype() == BRAID_FLOAT32);
      // No unary op takes bool (NumPy refuses -mask; ~mask is mask == 0).
      braid_tensor out = nullptr;
      CHECK(braid_unary(BRAID_UNARY_NEG, a.get(), &out) == BRAID_ERR_DTYPE);
    });
  }
}

TEST_CASE("bool: sum counts the true elements in int64, max is any, min is all, argmax finds the first true") {
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      const ref::Array m({2, 3}, std::vector<double>{0, 1, 1, 0, 0, 0});
      const auto x = harness::upload(dev.index, BRAID_BOOL, m);
      const auto s = braid::sum(x);
      CHECK(s.dtype() == BRAID_INT64);
      CHECK(harness::download(s).data[0] == 2.0);
      const auto rows = braid::reduce(BRAID_REDUCE_SUM, x, {1});
      CHECK_CLOSE(harness::download(rows), ref::Array({2}, std::vector<double>{2, 0}), 0.0);
      const auto any = braid::reduce(BRAID_REDUCE_MAX, x, {1}), all = braid::reduce(BRAID_REDUCE_MIN, x, {0}, true);
      CHECK(any.dtype() == BRAID_BOOL);
      CHECK(all.dtype() == BRAID_BOOL);
      CHECK_CLOSE(harness::download(any), ref::Array({2}, std::vector<double>{1, 0}), 0.0);
      CHECK_CLOSE(harness::download(all), ref::Array({1, 3}, std::vector<double>{0, 0, 0}), 0.0);
      const auto first = braid::argmax(x, 1);
      CHECK(first.dtype() == BRAID_INT64);
      CHECK_CLOSE(harness::download(first), ref::Array({2}, std::vector<double>{1, 0}), 0.0);
      braid_tensor out = nullptr;
      CHECK(braid_reduce(BRAID_REDUCE_MEAN, x.get(), 0, nullptr, 0, &out) == BRAID_ERR_DTYPE);  // as torch.mean
    });
  }
}

TEST_CASE("bool: layout ops keep bool: reshape, slice, transpose, concat, take, where, copies between devices") {
  const auto devs = harness::each_device();
  for (const auto& dev : devs) {
    harness::on_device(dev, [&] {
      INFO("device ", dev.id);
      const ref::Array m({2, 3}, std::vector<double>{1, 0, 1, 0, 0, 1});
      const auto x = harness::upload(dev.index, BRAID_BOOL, m);
      const auto t = braid::transpose(x, {1, 0});
      CHECK(t.dtype() == BRAID_BOOL);
      CHECK_CLOSE(harness::download(t), ref::Array({3, 2}, std::vector<double>{1, 0, 0, 0, 1, 1}), 0.0);
      const auto s = braid::slice(x, {0, 1}, {2, 3});
      CHECK(s.dtype() == BRAID_BOOL);
      CHECK_CLOSE(harness::download(s), ref::Array({2, 2}, std::vector<double>{0, 1, 0, 1}), 0.0);
      const auto c = braid::concat({x, x}, 0);
      CHECK(c.dtype() == BRAID_BOOL);
      CHECK(c.shape() == std::vector<int64_t>{4, 3});
      const auto idx = harness::upload(dev.index, BRAID_INT64, ref::Array({2}, std::vector<double>{2, 0}));
      const auto k = braid::take(x, idx, 1);
      CHECK(k.dtype() == BRAID_BOOL);
      CHECK_CLOSE(harness::download(k), ref::Array({2, 2}, std::vector<double>{1, 1, 1, 0}), 0.0);
      // A bool condition picks without a comparison, and two bool values give bool.
      const auto a = harness::upload(dev.index, BRAID_FLOAT32, ref::Array({3}, std::vector<double>{1, 2, 3}));
      const auto w = braid::where(x, a, braid::Tensor::full(harness::context(), dev.index, BRAID_FLOAT32, {}, -1));
      CHECK(w.dtype() == BRAID_FLOAT32);
      CHECK_CLOSE(harness::download(w), ref::Array({2, 3}, std::vector<double>{1, -1, 3, -1, -1, 3}), 0.0);
      const auto wb = braid::where(x, x, braid::Tensor::full(harness::context(), dev.index, BRAID_BOOL, {}, 1));
      CHECK(wb.dtype() == BRAID_BOOL);
      CHECK_CLOSE(harness::download(wb), ref::Array({2, 3}, std::vector<double>{1, 1, 1, 1, 1, 1}), 0.0);
      for (const auto& other : devs) {
        const auto moved = x.copy_to(other.index);
        CHECK(moved.dtype() == BRAID_BOOL);
        CHECK_CLOSE(harness::download(moved), m, 0.0);
      }
    });
  }
}

TEST_CASE("bool: host bytes other than 0 and 1 are stored as 1; full takes nonzero as true") {
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      INFO("device ", dev.id);
      const std::vector<uint8_t> bytes = {0, 2, 255, 1, 0, 128};
      const auto x =
          braid::Tensor::from_host(harness::context(), dev.index, BRAID_BOOL, {6}, std::as_bytes(std::span(bytes)));
      CHECK_CLOSE(harness::download(x), ref::Array({6}, std::vector<double>{0, 1, 1, 1, 0, 1}), 0.0);
      CHECK(harness::download(braid::sum(x)).data[0] == 4.0);
      x.write_host(std::as_bytes(std::span(bytes)));
      CHECK_CLOSE(harness::download(braid::cast(x, BRAID_INT32)),
                  ref::Array({6}, std::vector<double>{0, 1, 1, 1, 0, 1}), 0.0);
      for (double v : {5.0, -0.5, kNaN, 1.0}) {
        const auto f = braid::Tensor::full(harness::context(), dev.index, BRAID_BOOL, {2}, v);
        CHECK_CLOSE(harness::download(f), ref::Array({2}, std::vector<double>{1, 1}), 0.0);
      }
      CHECK_CLOSE(harness::download(braid::Tensor::full(harness::context(), dev.index, BRAID_BOOL, {2}, 0.0)),
                  ref::Array({2}, std::vector<double>{0, 0}), 0.0);
    });
  }
}

namespace {
// (x > 0, x * 2) as a hybrid function.
braid_status positive_and_double(void*, int32_t, const braid_tensor* inputs, int32_t, braid_tensor* outputs) {
  braid_status st = braid_compare_scalar(BRAID_COMPARE_GREATER, inputs[0], 0.0, &outputs[0]);
  return st != BRAID_OK ? st : braid_binary_scalar(BRAID_BINARY_MUL, inputs[0], 2.0, 0, &outputs[1]);
}
}  // namespace

TEST_CASE("bool: a graph gives bool outputs run as one graph and run op by op while autograd records") {
  auto& ctx = harness::context();
  braid_hybrid h = nullptr;
  REQUIRE(braid_hybrid_create(ctx.get(), positive_and_double, nullptr, 1, 2, BRAID_GRAPH_PASS_ALL, &h) == BRAID_OK);
  const auto x = harness::upload(0, BRAID_FLOAT32, ref::Array({3}, std::vector<double>{-1, 2, 0}));
  braid::attach_grad(x);
  for (bool record : {false, true, false, true}) {  // traced, then the graph; recorded: interpreted
    INFO("recording ", record);
    const braid::AutogradScope scope(ctx, record);
    const braid_tensor in = x.get();
    braid_tensor out[2] = {nullptr, nullptr};
    REQUIRE(braid_hybrid_call(h, &in, out) == BRAID_OK);
    const auto mask = braid::Tensor::adopt(out[0]), twice = braid::Tensor::adopt(out[1]);
    CHECK(mask.dtype() == BRAID_BOOL);
    CHECK_CLOSE(harness::download(mask), ref::Array({3}, std::vector<double>{0, 1, 0}), 0.0);
    if (record) braid::backward(braid::sum(twice));
  }
  CHECK_CLOSE(harness::download(braid::grad(x)), ref::Array({3}, std::vector<double>{2, 2, 2}), 0.0);
  braid_hybrid_release(h);
}

TEST_CASE("bool: a 16-bit float compares with a number or float64 0-d tensor rounded to its own dtype") {
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      for (braid_dtype dt : {BRAID_FLOAT16, BRAID_BFLOAT16}) {
        INFO("device ", dev.id, ", ", harness::dtype_name(dt));
        const auto x =
            braid::cast(harness::upload(dev.index, BRAID_FLOAT32, ref::Array({2}, std::vector<double>{0.1, 1})), dt);
        CHECK_CLOSE(harness::download(braid::compare(BRAID_COMPARE_EQUAL, x, 0.1)),
                    ref::Array({2}, std::vector<double>{1, 0}), 0.0);  // float16(0.1) == 0.1, as NumPy and PyTorch
        CHECK_CLOSE(harness::download(braid::compare(BRAID_COMPARE_LESS, x, 1e6)),
                    ref::Array({2}, std::vector<double>{1, 1}), 0.0);
        if ((harness::context().device_info(dev.index).dtype_mask & (1u << BRAID_FLOAT64)) != 0) {
          const auto s = harness::upload(dev.index, BRAID_FLOAT64, ref::Array({}, 0.1));
          CHECK_CLOSE(harness::download(braid::compare(BRAID_COMPARE_EQUAL, x, s)),
                      ref::Array({2}, std::vector<double>{1, 0}), 0.0);
        }
      }
    });
  }
}
