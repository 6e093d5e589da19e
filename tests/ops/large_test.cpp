// Conformance on sizes large enough to take the kernels' multi-chunk paths (work split across threads,
// blocked and tiled loops, partial sums merged in order, RNG chunks that start mid-block): above ~64k
// elements, where the cases of the other files run as one chunk. On a device with one core these run
// in one chunk; run the suite with BRAID_CPU_DEVICES=1 on a multi-core machine to exercise the threaded
// paths too.
#include "harness.h"

using harness::context;
using tol::Kind;

TEST_CASE("large: elementwise, broadcasting and casts over 100k+ elements") {
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      for (braid_dtype dt : harness::kFloatTypes) {
        INFO("device ", dev.id, ", ", harness::dtype_name(dt));
        const ref::Array a = harness::random_array({400, 301}, 0.1, 2.0, dt, 201);
        const ref::Array row = harness::random_array({301}, -1.0, 1.0, dt, 202);
        const ref::Array col = harness::random_array({400, 1}, 0.5, 1.0, dt, 203);
        const auto ta = harness::upload(dev.index, dt, a);
        CHECK_CLOSE(harness::download(braid::exp(ta)), ref::unary(BRAID_UNARY_EXP, a), tol::of(Kind::transcend, dt));
        CHECK_CLOSE(harness::download(braid::tanh(ta)), ref::unary(BRAID_UNARY_TANH, a), tol::of(Kind::transcend, dt));
        CHECK_CLOSE(harness::download(ta - harness::upload(dev.index, dt, row)), ref::binary(BRAID_BINARY_SUB, a, row),
                    tol::of(Kind::rounded, dt));
        CHECK_CLOSE(harness::download(ta / harness::upload(dev.index, dt, col)), ref::binary(BRAID_BINARY_DIV, a, col),
                    tol::of(Kind::rounded, dt));
        CHECK_CLOSE(harness::download(braid::cast(ta, BRAID_FLOAT16)), ref::round_to(BRAID_FLOAT16, a), 0.0);
        CHECK_CLOSE(harness::download(braid::cast(ta, BRAID_BFLOAT16)), ref::round_to(BRAID_BFLOAT16, a), 0.0);
      }
    });
  }
}

TEST_CASE("large: reductions of tall, wide and long inputs") {
  struct Case {
    ref::Shape shape;
    std::vector<int32_t> axes;
  };
  const Case cases[] = {
      {{100000, 3}, {0}},  // tall: few columns, many rows (row chunks merged in order)
      {{3, 100000}, {1}},  // wide rows
      {{300, 700}, {0}},  {{300, 700}, {1}}, {{1 << 18}, {}}, {{64, 50, 40}, {0, 2}},
  };
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      for (braid_dtype dt : harness::kFloatTypes)
        for (const Case& c : cases)
          for (braid_reduce_op op : {BRAID_REDUCE_SUM, BRAID_REDUCE_MAX, BRAID_REDUCE_NORM}) {
            INFO("device ", dev.id, ", ", harness::dtype_name(dt), ", op ", static_cast<int>(op), " of ",
                 ref::to_string(c.shape));
            // Positive values keep the relative error of any summation order small (see tolerance.h).
            const ref::Array x = harness::random_array(c.shape, 0.0, 1.0, dt, 204);
            const auto y = braid::reduce(op, harness::upload(dev.index, dt, x), c.axes);
            CHECK_CLOSE(harness::download(y), ref::reduce(op, x, c.axes, false),
                        tol::of(op == BRAID_REDUCE_MAX ? Kind::exact : Kind::reduction, dt));
          }
    });
  }
}

TEST_CASE("large: argmax, softmax along inner and outer axes, transpose") {
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      for (braid_dtype dt : harness::kFloatTypes) {
        INFO("device ", dev.id, ", ", harness::dtype_name(dt));
        const ref::Array x = harness::random_array({300, 700}, -5.0, 5.0, dt, 205);
        const auto t = harness::upload(dev.index, dt, x);
        CHECK_CLOSE(harness::download(braid::argmax(t, 0)), ref::argmax(x, 0, false), 0.0);
        CHECK_CLOSE(harness::download(braid::argmax(t, 1)), ref::argmax(x, 1, false), 0.0);
        CHECK_CLOSE(harness::download(braid::softmax(t, 1)), ref::softmax(x, 1, false), tol::of(Kind::reduction, dt));
        CHECK_CLOSE(harness::download(braid::log_softmax(t, 0)), ref::softmax(x, 0, true),
                    tol::of(Kind::reduction, dt));
        const std::vector<int32_t> perm{1, 0};
        CHECK_CLOSE(harness::download(braid::transpose(t, perm)), ref::transpose(x, perm), 0.0);
        const ref::Array x3 = harness::random_array({40, 50, 60}, -1.0, 1.0, dt, 206);
        const std::vector<int32_t> perm3{2, 0, 1};
        CHECK_CLOSE(harness::download(braid::transpose(harness::upload(dev.index, dt, x3), perm3)),
                    ref::transpose(x3, perm3), 0.0);
      }
    });
  }
}

TEST_CASE("large: random_uniform, random_normal and dropout across chunk boundaries") {
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      for (braid_dtype dt : harness::kFloatTypes) {
        INFO("device ", dev.id, ", ", harness::dtype_name(dt));
        const ref::Shape s{100003};  // odd: the last block is partial
        context().set_seed(77);
        const auto u = braid::Tensor::random_uniform(context(), dev.index, dt, s, -1.0, 1.0);
        const auto n = braid::Tensor::random_normal(context(), dev.index, dt, s, 0.0, 2.0);
        const ref::Array x = harness::random_array(s, -1.0, 1.0, dt, 207);
        const auto d = braid::dropout(harness::upload(dev.index, dt, x), 0.4);
        CHECK_CLOSE(harness::download(u), ref::round_to(dt, ref::random_uniform(77, 0, s, -1.0, 1.0)),
                    tol::of(Kind::rng_uniform, dt));
        CHECK_CLOSE(harness::download(n), ref::round_to(dt, ref::random_normal(77, 1, s, 0.0, 2.0)),
                    tol::of(Kind::rng_normal, dt));
        const auto want = ref::dropout(x, 0.4, 77, 2);
        CHECK_CLOSE(harness::download(d.mask), want.mask, 0.0);
        CHECK_CLOSE(harness::download(d.y), want.y, tol::of(Kind::compound, dt));
      }
    });
  }
}

TEST_CASE("large: matmul, conv2d, pooling and batch norm on network-sized inputs") {
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      for (braid_dtype dt : harness::kFloatTypes) {
        INFO("device ", dev.id, ", ", harness::dtype_name(dt));
        const ref::Array a = harness::random_array({256, 300}, -1, 1, dt, 208),
                         b = harness::random_array({200, 300}, -1, 1, dt, 209);
        CHECK_CLOSE(harness::download(braid::matmul(harness::upload(dev.index, dt, a),
                                                    harness::upload(dev.index, dt, b), false, true)),
                    ref::matmul(a, b, false, true), tol::of(Kind::gemm, dt));
        const ref::Array ba = harness::random_array({8, 64, 128}, -1, 1, dt, 210),
                         bb = harness::random_array({128, 96}, -1, 1, dt, 211);
        CHECK_CLOSE(
            harness::download(braid::matmul(harness::upload(dev.index, dt, ba), harness::upload(dev.index, dt, bb))),
            ref::matmul(ba, bb, false, false), tol::of(Kind::gemm, dt));

        const ref::Array x = harness::random_array({2, 16, 32, 32}, -1, 1, dt, 212);
        const ref::Array w = harness::random_array({32, 16, 3, 3}, -1, 1, dt, 213),
                         bias = harness::random_array({32}, -1, 1, dt, 214);
        const auto tx = harness::upload(dev.index, dt, x);
        CHECK_CLOSE(
            harness::download(braid::conv2d(tx, harness::upload(dev.index, dt, w), harness::upload(dev.index, dt, bias),
                                            {.stride = {1, 1}, .padding = {1, 1}})),
            ref::conv2d(x, w, &bias, {1, 1}, {1, 1}), tol::of(Kind::gemm, dt));
        CHECK_CLOSE(harness::download(braid::pool2d(
                        tx, {.kind = BRAID_POOL_MAX, .kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}})),
                    ref::pool2d(x, BRAID_POOL_MAX, {3, 3}, {2, 2}, {1, 1}, false), 0.0);
        CHECK_CLOSE(harness::download(braid::pool2d(tx, {.kind = BRAID_POOL_AVG, .global = true})),
                    ref::pool2d(x, BRAID_POOL_AVG, {0, 0}, {0, 0}, {0, 0}, true), tol::of(Kind::reduction, dt));

        const ref::Array g = harness::random_array({16}, 0.5, 1.5, dt, 215),
                         be = harness::random_array({16}, -1, 1, dt, 216);
        const ref::Array rm({16}, 0.0), rv({16}, 1.0);
        const auto trm = harness::upload(dev.index, dt, rm), trv = harness::upload(dev.index, dt, rv);
        const auto r =
            braid::batch_norm(tx, harness::upload(dev.index, dt, g), harness::upload(dev.index, dt, be), trm, trv);
        const auto want = ref::batch_norm(x, g, be, rm, rv, 1e-5, 0.1, true);
        CHECK_CLOSE(harness::download(r.y), want.y, tol::of(Kind::reduction, dt));
        CHECK_CLOSE(harness::download(trv), want.running_var, tol::of(Kind::reduction, dt));
      }
    });
  }
}

// LeNet's second conv at batch 32: groups of 6 images (about one core's L2 of columns each), so the
// CPU backend runs several groups per core at once with per-core scratch and partial weight gradients.
TEST_CASE("large: conv2d forward, data and weight gradients over many groups of images") {
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      for (braid_dtype dt : harness::kFloatTypes) {
        INFO("device ", dev.id, ", ", harness::dtype_name(dt));
        const ref::Array x = harness::random_array({32, 20, 13, 13}, -1, 1, dt, 220);
        const ref::Array w = harness::random_array({50, 20, 5, 5}, -1, 1, dt, 221),
                         bias = harness::random_array({50}, -1, 1, dt, 222);
        const ref::Array dy = harness::random_array({32, 50, 9, 9}, -1, 1, dt, 223);
        const auto tx = harness::upload(dev.index, dt, x), tw = harness::upload(dev.index, dt, w);
        const auto tdy = harness::upload(dev.index, dt, dy);
        CHECK_CLOSE(harness::download(braid::conv2d(tx, tw, harness::upload(dev.index, dt, bias))),
                    ref::conv2d(x, w, &bias, {1, 1}, {0, 0}), tol::of(Kind::gemm, dt));
        braid_tensor dx = nullptr, dw = nullptr;
        REQUIRE(braid_conv2d_backward_data(tdy.get(), tw.get(), x.shape.data(), nullptr, &dx) == BRAID_OK);
        REQUIRE(braid_conv2d_backward_weight(tdy.get(), tx.get(), w.shape.data(), nullptr, &dw) == BRAID_OK);
        const auto gx = braid::Tensor::adopt(dx), gw = braid::Tensor::adopt(dw);
        CHECK_CLOSE(harness::download(gx), ref::conv2d_backward_data(dy, w, x.shape, {1, 1}, {0, 0}),
                    tol::of(Kind::gemm, dt));
        CHECK_CLOSE(harness::download(gw), ref::conv2d_backward_weight(dy, x, w.shape, {1, 1}, {0, 0}),
                    tol::of(Kind::gemm, dt));
      }
    });
  }
}

TEST_CASE("large: optimizer updates over 100k parameters") {
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      for (braid_dtype dt : harness::kFloatTypes) {
        INFO("device ", dev.id, ", ", harness::dtype_name(dt));
        ref::Array w = harness::random_array({100003}, -1, 1, dt, 217), m({100003}, 0.0), v({100003}, 0.0);
        const ref::Array g = harness::random_array({100003}, -1, 1, dt, 218);
        const auto tw = harness::upload(dev.index, dt, w), tm = harness::upload(dev.index, dt, m),
                   tv = harness::upload(dev.index, dt, v), tg = harness::upload(dev.index, dt, g);
        braid::adam_update(tw, tg, tm, tv, {.lr = 0.01, .weight_decay = 0.001, .step = 1});
        ref::adam_update(w, g, m, v, 0.01, 0.9, 0.999, 1e-8, 0.001, 1);
        CHECK_CLOSE(harness::download(tw), w, tol::of(Kind::compound, dt));
        CHECK_CLOSE(harness::download(tv), v, tol::of(Kind::compound, dt));
      }
    });
  }
}
