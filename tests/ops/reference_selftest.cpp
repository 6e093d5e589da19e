// Checks the float64 reference itself against hand-computed values and published test vectors, so
// that a conformance failure points at the device, not at the reference. Needs no braid runtime.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "reference.h"

using ref::Array;

TEST_CASE("reference: Philox-4x32-10 matches the Random123 known-answer vectors") {
  // Random123 tests/kat_vectors, the three "philox4x32 10" lines: counter, key, result.
  using W4 = std::array<uint32_t, 4>;
  CHECK(ref::philox4x32_10({0, 0, 0, 0}, {0, 0}) == W4{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8});
  CHECK(ref::philox4x32_10({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}) ==
        W4{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd});
  CHECK(ref::philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}) ==
        W4{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1});
}

TEST_CASE("reference: RNG element layout follows braid_backend.h") {
  // seed 0, draw 0, block 0 is the all-zero KAT vector above.
  CHECK(ref::rng_uniform01(0, 0, 0) == (0x6627e8d5 + 0.5) / 4294967296.0);
  CHECK(ref::rng_uniform01(0, 0, 3) == (0x9b00dbd8 + 0.5) / 4294967296.0);
  // Element 4 is word 0 of block 1, which must differ from block 0; a new draw changes the bits.
  CHECK(ref::rng_uniform01(0, 0, 4) != ref::rng_uniform01(0, 0, 0));
  CHECK(ref::rng_uniform01(0, 1, 0) != ref::rng_uniform01(0, 0, 0));
  // Seed high and low words both matter (key = (seed lo, seed hi)).
  CHECK(ref::rng_uniform01(1, 0, 0) != ref::rng_uniform01(uint64_t{1} << 32, 0, 0));

  const Array u = ref::random_uniform(0, 0, {2}, -1.0, 3.0);
  CHECK(u.data[0] == -1.0 + 4.0 * ((0x6627e8d5 + 0.5) / 4294967296.0));

  // Normal: elements 0 and 1 share block 0 (u1 = word 0, u2 = word 1): r*cos and r*sin.
  const double u1 = (0x6627e8d5 + 0.5) / 4294967296.0, u2 = (0xe169c58d + 0.5) / 4294967296.0;
  const double r = std::sqrt(-2.0 * std::log(u1));
  const Array n = ref::random_normal(0, 0, {3}, 1.0, 2.0);
  CHECK(n.data[0] == doctest::Approx(1.0 + 2.0 * r * std::cos(2 * M_PI * u2)).epsilon(1e-15));
  CHECK(n.data[1] == doctest::Approx(1.0 + 2.0 * r * std::sin(2 * M_PI * u2)).epsilon(1e-15));
  CHECK(n.data[2] != n.data[0]);  // block 1

  // Dropout keeps element i when its uniform u >= p and scales by 1/(1-p).
  const Array x({8}, 2.0);
  const auto d = ref::dropout(x, 0.25, 7, 3);
  for (int64_t i = 0; i < 8; ++i) {
    const bool keep = ref::rng_uniform01(7, 3, i) >= 0.25;
    CHECK(d.mask.data[size_t(i)] == (keep ? 1.0 : 0.0));
    CHECK(d.y.data[size_t(i)] == (keep ? 2.0 / 0.75 : 0.0));
  }
}

TEST_CASE("reference: rounding to float32, float16, bfloat16 and integers") {
  // float32 must agree with the hardware conversion, including subnormals and overflow.
  for (double v : {1.0, 0.1, -3.14159265358979, 1e-40, 1e-45, 3.5e38, 1e39, 1.0 + 0x1p-24, 1.0 + 0x1p-23 + 0x1p-24})
    CHECK(ref::round_to(BRAID_FLOAT32, v) == static_cast<double>(static_cast<float>(v)));

  CHECK(ref::round_to(BRAID_FLOAT16, 1.0) == 1.0);
  CHECK(ref::round_to(BRAID_FLOAT16, 1.0 + 0x1p-11) == 1.0);               // tie to even
  CHECK(ref::round_to(BRAID_FLOAT16, 1.0 + 3 * 0x1p-11) == 1.0 + 0x1p-9);  // tie to even (up)
  CHECK(ref::round_to(BRAID_FLOAT16, 0.1) == 0.0999755859375);             // 0x2E66
  CHECK(ref::round_to(BRAID_FLOAT16, 65504.0) == 65504.0);
  CHECK(ref::round_to(BRAID_FLOAT16, 65519.0) == 65504.0);
  CHECK(std::isinf(ref::round_to(BRAID_FLOAT16, 65520.0)));
  CHECK(ref::round_to(BRAID_FLOAT16, 0x1p-24) == 0x1p-24);  // smallest subnormal
  CHECK(ref::round_to(BRAID_FLOAT16, 0x1p-25) == 0.0);      // tie to even (zero)
  CHECK(ref::round_to(BRAID_FLOAT16, 3 * 0x1p-26) == 0x1p-24);
  CHECK(ref::round_to(BRAID_FLOAT16, -2.5e-5) == -0x1.a3p-16);  // subnormal: 419 * 2^-24 (419.43 rounds down)

  CHECK(ref::round_to(BRAID_BFLOAT16, 1.0 + 0x1p-8) == 1.0);     // tie to even
  CHECK(ref::round_to(BRAID_BFLOAT16, 3.14159265) == 3.140625);  // 0x4049
  CHECK(ref::round_to(BRAID_BFLOAT16, 1e38) == 0x1.2cp+126);
  CHECK(ref::round_to(BRAID_BFLOAT16, -1.0 - 3 * 0x1p-8) == -1.0 - 0x1p-6);

  CHECK(ref::round_to(BRAID_INT32, -2.7) == -2.0);
  CHECK(ref::round_to(BRAID_UINT8, 200.9) == 200.0);
  CHECK(ref::round_to(BRAID_FLOAT64, 0.1) == 0.1);
}

TEST_CASE("reference: creation") {
  CHECK(ref::arange(0, 5, 2).data == std::vector<double>{0, 2, 4});
  CHECK(ref::arange(1, 2, 0.25).data == std::vector<double>{1, 1.25, 1.5, 1.75});
  CHECK(ref::arange(3, 0, -1).data == std::vector<double>{3, 2, 1});
  CHECK(ref::arange(0, 0, 1).numel() == 0);
  CHECK(ref::full({2, 3}, 7).data == std::vector<double>(6, 7.0));
}

TEST_CASE("reference: elementwise and broadcasting") {
  CHECK(ref::unary(BRAID_UNARY_SIGMOID, 0.0) == 0.5);
  CHECK(ref::unary(BRAID_UNARY_SIGN, -3.0) == -1.0);
  CHECK(ref::unary(BRAID_UNARY_SIGN, 0.0) == 0.0);
  CHECK(ref::unary(BRAID_UNARY_RELU, -1.0) == 0.0);
  CHECK(ref::binary(BRAID_BINARY_POW, 2.0, 10.0) == 1024.0);
  CHECK(ref::binary(BRAID_BINARY_LESS, 1.0, 2.0) == 1.0);

  const Array col({3, 1}, {1, 2, 3});
  const Array row({4}, {10, 20, 30, 40});
  const Array s = ref::binary(BRAID_BINARY_ADD, col, row);
  CHECK(s.shape == ref::Shape{3, 4});
  CHECK(s.data == std::vector<double>{11, 21, 31, 41, 12, 22, 32, 42, 13, 23, 33, 43});
  CHECK(ref::broadcast_shapes({2, 1, 3}, {4, 1}) == ref::Shape{2, 4, 3});
  CHECK_THROWS(ref::broadcast_shapes({2, 3}, {4}));
  CHECK(ref::binary_scalar(BRAID_BINARY_SUB, row, 1.0, true).data == std::vector<double>{-9, -19, -29, -39});
  CHECK(ref::binary_scalar(BRAID_BINARY_DIV, row, 10.0, false).data == std::vector<double>{1, 2, 3, 4});
}

TEST_CASE("reference: reductions and argmax") {
  const Array x({2, 3}, {1, 2, 3, 4, 5, 6});
  const Array s0 = ref::reduce(BRAID_REDUCE_SUM, x, {0}, false);
  CHECK(s0.shape == ref::Shape{3});
  CHECK(s0.data == std::vector<double>{5, 7, 9});
  const Array s1 = ref::reduce(BRAID_REDUCE_SUM, x, {1}, true);
  CHECK(s1.shape == ref::Shape{2, 1});
  CHECK(s1.data == std::vector<double>{6, 15});
  const Array all = ref::reduce(BRAID_REDUCE_SUM, x, {}, false);
  CHECK(all.shape.empty());
  CHECK(all.data == std::vector<double>{21});
  CHECK(ref::reduce(BRAID_REDUCE_SUM, x, {0, 1}, true).shape == ref::Shape{1, 1});
  CHECK(ref::reduce(BRAID_REDUCE_MEAN, x, {}, false).data[0] == 3.5);
  CHECK(ref::reduce(BRAID_REDUCE_MAX, x, {-1}, false).data == std::vector<double>{3, 6});
  CHECK(ref::reduce(BRAID_REDUCE_MIN, x, {-1}, false).data == std::vector<double>{1, 4});
  CHECK(ref::reduce(BRAID_REDUCE_NORM, x, {}, false).data[0] == doctest::Approx(std::sqrt(91.0)));

  const Array a({2, 3}, {1, 5, 5, 7, 0, 2});
  CHECK(ref::argmax(a, 1, false).data == std::vector<double>{1, 0});  // first of tied maxima
  CHECK(ref::argmax(a, 0, true).shape == ref::Shape{1, 3});
  CHECK(ref::argmax(a, 0, true).data == std::vector<double>{1, 0, 0});
}

TEST_CASE("reference: matmul with transposes and batches") {
  const Array a({2, 2}, {1, 2, 3, 4}), b({2, 2}, {5, 6, 7, 8});
  CHECK(ref::matmul(a, b, false, false).data == std::vector<double>{19, 22, 43, 50});
  CHECK(ref::matmul(a, b, true, false).data == std::vector<double>{26, 30, 38, 44});
  CHECK(ref::matmul(a, b, false, true).data == std::vector<double>{17, 23, 39, 53});
  CHECK(ref::matmul(a, b, true, true).data == std::vector<double>{23, 31, 34, 46});
  const Array a3({2, 2, 2}, {1, 2, 3, 4, 1, 0, 0, 1});
  const Array c = ref::matmul(a3, b, false, false);
  CHECK(c.shape == ref::Shape{2, 2, 2});
  CHECK(c.data == std::vector<double>{19, 22, 43, 50, 5, 6, 7, 8});
  const Array r({1, 3}, {1, 2, 3}), col({3, 1}, {4, 5, 6});
  CHECK(ref::matmul(r, col, false, false).data == std::vector<double>{32});
  CHECK_THROWS(ref::matmul(r, r, false, false));
}

TEST_CASE("reference: layout") {
  const Array x = ref::reshape(ref::arange(0, 12, 1), {3, -1});
  CHECK(x.shape == ref::Shape{3, 4});
  CHECK_THROWS(ref::reshape(x, {5, 2}));

  const std::vector<int64_t> b{0, 1}, e{3, 4}, st{2, 2};
  const Array s = ref::slice(x, b, e, st);
  CHECK(s.shape == ref::Shape{2, 2});
  CHECK(s.data == std::vector<double>{1, 3, 9, 11});
  CHECK(ref::slice(ref::arange(0, 10, 1), std::vector<int64_t>{1}, std::vector<int64_t>{8}, std::vector<int64_t>{3})
            .data == std::vector<double>{1, 4, 7});

  const std::vector<int32_t> perm{1, 0};
  const Array t = ref::transpose(Array({2, 3}, {1, 2, 3, 4, 5, 6}), perm);
  CHECK(t.shape == ref::Shape{3, 2});
  CHECK(t.data == std::vector<double>{1, 4, 2, 5, 3, 6});

  const std::vector<Array> parts{Array({1, 2}, {1, 2}), Array({2, 2}, {3, 4, 5, 6})};
  CHECK(ref::concat(parts, 0).data == std::vector<double>{1, 2, 3, 4, 5, 6});
  const std::vector<Array> cols{Array({2, 1}, {1, 2}), Array({2, 2}, {3, 4, 5, 6})};
  const Array c = ref::concat(cols, -1);
  CHECK(c.shape == ref::Shape{2, 3});
  CHECK(c.data == std::vector<double>{1, 3, 4, 2, 5, 6});
}

TEST_CASE("reference: conv2d and pool2d") {
  const Array x({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  const Array w({1, 1, 2, 2}, 1.0);
  CHECK(ref::conv2d(x, w, nullptr, {1, 1}, {0, 0}).data == std::vector<double>{12, 16, 24, 28});
  const Array bias({1}, 1.0);
  const Array c = ref::conv2d(x, w, &bias, {2, 2}, {1, 1});
  CHECK(c.shape == ref::Shape{1, 1, 2, 2});
  CHECK(c.data == std::vector<double>{2, 6, 12, 29});

  CHECK(ref::pool2d(x, BRAID_POOL_MAX, {2, 2}, {2, 2}, {1, 1}, false).data == std::vector<double>{1, 3, 7, 9});
  CHECK(ref::pool2d(x, BRAID_POOL_AVG, {2, 2}, {2, 2}, {1, 1}, false).data == std::vector<double>{1, 2.5, 5.5, 7});
  CHECK(ref::pool2d(x, BRAID_POOL_AVG, {2, 2}, {0, 0}, {0, 0}, false).data == std::vector<double>{3});  // stride=kernel
  CHECK(ref::pool2d(x, BRAID_POOL_MAX, {2, 2}, {1, 1}, {0, 0}, false).data == std::vector<double>{5, 6, 8, 9});
  const Array g = ref::pool2d(x, BRAID_POOL_AVG, {0, 0}, {0, 0}, {0, 0}, true);
  CHECK(g.shape == ref::Shape{1, 1, 1, 1});
  CHECK(g.data == std::vector<double>{5});
}

TEST_CASE("reference: conv2d gradients") {
  const Array x({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  const Array w({1, 1, 2, 2}, 1.0);
  const Array first({1, 1, 2, 2}, {1, 0, 0, 0}), last({1, 1, 2, 2}, {0, 0, 0, 1});
  CHECK(ref::conv2d_backward_data(first, w, x.shape, {1, 1}, {0, 0}).data ==
        std::vector<double>{1, 1, 0, 1, 1, 0, 0, 0, 0});
  CHECK(ref::conv2d_backward_weight(first, x, w.shape, {1, 1}, {0, 0}).data == std::vector<double>{1, 2, 4, 5});
  CHECK(ref::conv2d_backward_weight(last, x, w.shape, {1, 1}, {0, 0}).data == std::vector<double>{5, 6, 8, 9});
  // Adjoints: <dy, conv(x, w)> = <dx, x> = <dw, w> with stride and padding.
  const Array xs({2, 2, 5, 4}, 0.0), ws({3, 2, 3, 2}, 0.0);
  Array a = xs, b = ws;
  for (size_t i = 0; i < a.data.size(); ++i) a.data[i] = double(i % 7) - 3.0;
  for (size_t i = 0; i < b.data.size(); ++i) b.data[i] = double(i % 5) - 2.0;
  const Array y = ref::conv2d(a, b, nullptr, {2, 1}, {1, 1});
  Array dy = y;
  for (size_t i = 0; i < dy.data.size(); ++i) dy.data[i] = double(i % 3) - 1.0;
  auto dot = [](const Array& u, const Array& v) {
    double s = 0;
    for (size_t i = 0; i < u.data.size(); ++i) s += u.data[i] * v.data[i];
    return s;
  };
  const double want = dot(dy, y);
  CHECK(dot(ref::conv2d_backward_data(dy, b, a.shape, {2, 1}, {1, 1}), a) == want);
  CHECK(dot(ref::conv2d_backward_weight(dy, a, b.shape, {2, 1}, {1, 1}), b) == want);
}

TEST_CASE("reference: batch norm training and inference") {
  const Array x({2, 1}, {1, 3});
  const Array one({1}, 1.0), zero({1}, 0.0), gamma({1}, 2.0), beta({1}, 0.5);
  const auto t = ref::batch_norm(x, gamma, beta, zero, one, 0.0, 0.1, true);
  CHECK(t.y.data == std::vector<double>{-1.5, 2.5});  // (x - 2) / 1 * 2 + 0.5
  CHECK(t.save_mean.data[0] == 2.0);
  CHECK(t.save_invstd.data[0] == 1.0);
  CHECK(t.running_mean.data[0] == doctest::Approx(0.2));
  CHECK(t.running_var.data[0] == doctest::Approx(0.9 + 0.1 * 2.0));  // unbiased variance 2

  const Array rm({1}, 1.0), rv({1}, 4.0);
  const auto inf = ref::batch_norm(x, gamma, beta, rm, rv, 0.0, 0.1, false);
  CHECK(inf.y.data == std::vector<double>{0.5, 2.5});  // (x - 1) / 2 * 2 + 0.5
  CHECK(inf.save_invstd.data[0] == 0.5);
  CHECK(inf.running_var.data[0] == 4.0);

  // N,C,H,W: statistics over N, H and W per channel.
  const Array x4({2, 2, 1, 2}, {1, 2, 10, 20, 3, 4, 30, 40});
  const auto t4 =
      ref::batch_norm(x4, Array({2}, 1.0), Array({2}, 0.0), Array({2}, 0.0), Array({2}, 1.0), 0.0, 1.0, true);
  CHECK(t4.save_mean.data == std::vector<double>{2.5, 25});
  CHECK(t4.running_var.data[0] == doctest::Approx(5.0 / 3.0));  // values 1,2,3,4: sum sq dev 5, n-1 = 3
}

TEST_CASE("reference: softmax, log-softmax and cross-entropy") {
  const Array x({1, 2}, {0.0, std::log(3.0)});
  const Array s = ref::softmax(x, -1, false);
  CHECK(s.data[0] == doctest::Approx(0.25));
  CHECK(s.data[1] == doctest::Approx(0.75));
  CHECK(ref::softmax(x, 1, true).data[0] == doctest::Approx(std::log(0.25)));
  const Array col = ref::softmax(Array({2, 1}, {0.0, std::log(3.0)}), 0, false);
  CHECK(col.data[1] == doctest::Approx(0.75));
  // Large logits must not overflow (the max is subtracted).
  CHECK(ref::softmax(Array({2}, {1000.0, 1000.0}), 0, false).data[0] == 0.5);

  const std::vector<int64_t> labels{1};
  CHECK(ref::softmax_cross_entropy(x, labels).data[0] == doctest::Approx(-std::log(0.75)));
  const std::vector<int64_t> bad{2};
  CHECK_THROWS(ref::softmax_cross_entropy(x, bad));
}

TEST_CASE("reference: optimizer updates") {
  Array w({1}, 1.0), g({1}, 0.5), mom({1}, 0.5);
  ref::sgd_update(w, g, 0.1, 0.2);
  CHECK(w.data[0] == doctest::Approx(0.93));

  w = Array({1}, 1.0);
  ref::sgd_momentum_update(w, g, mom, 0.1, 0.9, 0.2);
  CHECK(mom.data[0] == doctest::Approx(0.38));  // 0.9*0.5 - 0.1*(0.5 + 0.2)
  CHECK(w.data[0] == doctest::Approx(1.38));

  // Adam's first step moves every weight by about lr against the sign of its gradient.
  Array aw({2}, {1.0, 1.0}), ag({2}, {0.5, -2.0}), m({2}, 0.0), v({2}, 0.0);
  ref::adam_update(aw, ag, m, v, 0.01, 0.9, 0.999, 1e-8, 0.0, 1);
  CHECK(aw.data[0] == doctest::Approx(0.99).epsilon(1e-7));
  CHECK(aw.data[1] == doctest::Approx(1.01).epsilon(1e-7));
  CHECK(m.data[1] == doctest::Approx(-0.2));
  CHECK(v.data[1] == doctest::Approx(0.004));
}
