// Finite-difference gradient checks in float64 of every differentiable op, on every device.
#include "gradcheck.h"

using braid::Tensor;
using gradcheck::check;
using gradcheck::Input;
using gradcheck::spread;
using Xs = std::vector<Tensor>;

namespace {
ref::Array rnd(const ref::Shape& s, double lo, double hi, uint32_t seed) {
  return harness::random_array(s, lo, hi, BRAID_FLOAT64, seed);
}
}  // namespace

TEST_CASE("gradients: unary ops") {
  struct Case {
    braid_unary_op op;
    const char* name;
    double lo, hi;
  };
  const Case cases[] = {
      {BRAID_UNARY_NEG, "neg", -2, 2},         {BRAID_UNARY_ABS, "abs", -2, 2},
      {BRAID_UNARY_EXP, "exp", -2, 2},         {BRAID_UNARY_LOG, "log", 0.5, 3},
      {BRAID_UNARY_SQRT, "sqrt", 0.5, 3},      {BRAID_UNARY_RELU, "relu", -2, 2},
      {BRAID_UNARY_SIGMOID, "sigmoid", -3, 3}, {BRAID_UNARY_TANH, "tanh", -2, 2},
      {BRAID_UNARY_SQUARE, "square", -2, 2},   {BRAID_UNARY_SIGN, "sign", -2, 2},
  };
  for (const auto& dev : harness::each_device())
    for (const Case& c : cases) {
      INFO("device ", dev.id, ", ", c.name);
      check(dev.index, {{spread({3, 4}, c.lo, c.hi, 1)}}, [&](const Xs& x) { return braid::unary(c.op, x[0]); });
    }
}

TEST_CASE("gradients: binary ops with broadcasting") {
  struct Case {
    braid_binary_op op;
    const char* name;
    double lo, hi;
  };
  const Case cases[] = {
      {BRAID_BINARY_ADD, "add", -2, 2},         {BRAID_BINARY_SUB, "sub", -2, 2},
      {BRAID_BINARY_MUL, "mul", -2, 2},         {BRAID_BINARY_DIV, "div", 0.5, 2},
      {BRAID_BINARY_POW, "pow", 0.5, 2},        {BRAID_BINARY_MAXIMUM, "maximum", -2, 2},
      {BRAID_BINARY_MINIMUM, "minimum", -2, 2},
  };
  const std::pair<ref::Shape, ref::Shape> shapes[] = {{{2, 3}, {2, 3}}, {{2, 3}, {3}}, {{4, 1, 3}, {2, 1}}};
  for (const auto& dev : harness::each_device())
    for (const Case& c : cases)
      for (const auto& pair : shapes) {
        const auto& sa = pair.first;  // plain names: INFO captures them
        const auto& sb = pair.second;
        INFO("device ", dev.id, ", ", c.name, " ", ref::to_string(sa), " ", ref::to_string(sb));
        check(dev.index, {{spread(sa, c.lo, c.hi, 2)}, {spread(sb, c.lo * 1.01, c.hi * 0.97, 3)}},
              [&](const Xs& x) { return braid::binary(c.op, x[0], x[1]); });
      }
}

// a % b is a - b * floor(a / b): piecewise linear, with jumps where a / b is an integer. Away from
// them (a / b between 2.1 and 2.8 here) its gradients are 1 and -floor(a / b) = -2; floor division's
// result is recorded as a constant.
TEST_CASE("gradients: mod away from its jumps, with broadcasting and with a scalar; floor_divide is constant") {
  for (const auto& dev : harness::each_device()) {
    INFO("device ", dev.id);
    check(dev.index, {{spread({2, 3}, 5.2, 5.8, 7)}, {spread({3}, 2.1, 2.4, 8)}},
          [](const Xs& x) { return braid::binary(BRAID_BINARY_MOD, x[0], x[1]); });
    check(dev.index, {{spread({2, 5}, 5.2, 5.8, 9)}},
          [](const Xs& x) { return braid::binary(BRAID_BINARY_MOD, x[0], 2.3, false); });
    check(dev.index, {{spread({2, 5}, 5.2, 5.8, 10)}},
          [](const Xs& x) { return braid::binary(BRAID_BINARY_MOD, x[0], 12.5, true); });
    check(dev.index, {{spread({2, 3}, 5.2, 5.8, 11)}},
          [](const Xs& x) { return braid::binary(BRAID_BINARY_FLOOR_DIVIDE, x[0], 2.3, false) + x[0]; });
  }
}

// take's gradient adds up the rows an index picked: repeated and negative indices, each axis.
TEST_CASE("gradients: take along each axis, with repeated and negative indices") {
  for (const auto& dev : harness::each_device()) {
    const braid::Tensor indices =
        braid::Tensor::from_vector(harness::context(), dev.index, {2, 2}, std::vector<int64_t>{0, -1, 0, 1});
    for (int32_t axis : {0, 1, -1}) {
      INFO("device ", dev.id, ", axis ", axis);
      check(dev.index, {{spread({2, 3, 2}, -2, 2, 12)}}, [&](const Xs& x) { return braid::take(x[0], indices, axis); });
    }
  }
}

TEST_CASE("gradients: where, with broadcasting") {
  for (const auto& dev : harness::each_device()) {
    INFO("device ", dev.id);
    const braid::Tensor cond =
        braid::Tensor::from_vector(harness::context(), dev.index, {2, 3}, std::vector<double>{1, 0, 0, 1, 1, 0});
    check(dev.index, {{spread({2, 3}, -2, 2, 5)}, {spread({3}, -1.5, 1.5, 6)}},
          [&](const Xs& x) { return braid::where(cond, x[0], x[1]); });
  }
}

TEST_CASE("gradients: binary ops with a scalar, both orders") {
  const braid_binary_op ops[] = {BRAID_BINARY_ADD, BRAID_BINARY_SUB,     BRAID_BINARY_MUL,    BRAID_BINARY_DIV,
                                 BRAID_BINARY_POW, BRAID_BINARY_MAXIMUM, BRAID_BINARY_MINIMUM};
  for (const auto& dev : harness::each_device())
    for (braid_binary_op op : ops)
      for (bool rev : {false, true}) {
        INFO("device ", dev.id, ", op ", int(op), rev ? " reversed" : "");
        check(dev.index, {{spread({2, 5}, 0.5, 2.5, 4)}},
              [&](const Xs& x) { return braid::binary(op, x[0], 1.3, rev); });
      }
}

// float64 * float32 promotes the float32 operand to float64 by an implicit cast (PyTorch's promotion):
// the gradient passes back through it (float32 rounding: looser).
TEST_CASE("gradients: binary ops between float64 and float32 operands (promoted)") {
  for (const auto& dev : harness::each_device()) {
    INFO("device ", dev.id);
    check(
        dev.index, {{rnd({3, 4}, -1, 1, 4)}, {rnd({4}, -1, 1, 5)}},
        [](const Xs& x) { return braid::mul(x[0], braid::cast(x[1], BRAID_FLOAT32)); }, 1e-3, 1e-3);
  }
}

TEST_CASE("gradients: reductions over some and all axes") {
  const braid_reduce_op ops[] = {BRAID_REDUCE_SUM, BRAID_REDUCE_MEAN, BRAID_REDUCE_MAX, BRAID_REDUCE_MIN,
                                 BRAID_REDUCE_NORM};
  const std::vector<std::vector<int32_t>> axes = {{}, {1}, {0, 2}, {-1}};
  for (const auto& dev : harness::each_device())
    for (braid_reduce_op op : ops)
      for (const auto& ax : axes)
        for (bool keep : {false, true}) {
          INFO("device ", dev.id, ", reduce ", int(op), ", ", ax.size(), " axes", keep ? ", keepdims" : "");
          check(dev.index, {{spread({2, 3, 4}, -2, 2, 5)}},
                [&](const Xs& x) { return braid::reduce(op, x[0], ax, keep); });
        }
}

TEST_CASE("gradients: matmul, transposed and batched") {
  for (const auto& dev : harness::each_device())
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        INFO("device ", dev.id, ", ta ", ta, ", tb ", tb);
        const ref::Shape sa = ta ? ref::Shape{4, 3} : ref::Shape{3, 4}, sb = tb ? ref::Shape{5, 4} : ref::Shape{4, 5};
        check(dev.index, {{rnd(sa, -1, 1, 6)}, {rnd(sb, -1, 1, 7)}},
              [&](const Xs& x) { return braid::matmul(x[0], x[1], ta, tb); });
        ref::Shape ba = sa, bb = sb;
        ba.insert(ba.begin(), 2);
        bb.insert(bb.begin(), 2);
        check(dev.index, {{rnd(ba, -1, 1, 8)}, {rnd(bb, -1, 1, 9)}},
              [&](const Xs& x) { return braid::matmul(x[0], x[1], ta, tb); });
        check(dev.index, {{rnd(ba, -1, 1, 10)}, {rnd(sb, -1, 1, 11)}},  // 2-D b broadcast over the batch
              [&](const Xs& x) { return braid::matmul(x[0], x[1], ta, tb); });
        // A batch of 1 broadcast over the other's batch (torch.matmul): its gradient sums over the batch.
        ref::Shape one_a = sa, one_b = sb;
        one_a.insert(one_a.begin(), 1);
        one_b.insert(one_b.begin(), 1);
        check(dev.index, {{rnd(one_a, -1, 1, 14)}, {rnd(bb, -1, 1, 15)}},
              [&](const Xs& x) { return braid::matmul(x[0], x[1], ta, tb); });
        check(dev.index, {{rnd(ba, -1, 1, 16)}, {rnd(one_b, -1, 1, 17)}},
              [&](const Xs& x) { return braid::matmul(x[0], x[1], ta, tb); });
      }
}

TEST_CASE("gradients: reshape, slice, transpose, concat, cast, copy") {
  for (const auto& dev : harness::each_device()) {
    INFO("device ", dev.id);
    const ref::Array a = rnd({3, 4}, -1, 1, 12), b = rnd({3, 2}, -1, 1, 13);
    check(dev.index, {{a}}, [](const Xs& x) { return braid::reshape(x[0], {2, -1}); });
    check(dev.index, {{a}}, [](const Xs& x) { return braid::slice(x[0], {1, 0}, {3, 4}, {1, 2}); });
    // Clamped bounds (all of x, and a part), and an empty slice: its gradient is all zeros.
    check(dev.index, {{a}}, [](const Xs& x) { return braid::slice(x[0], {-100, -100}, {100, 100}, {}); });
    check(dev.index, {{a}}, [](const Xs& x) { return braid::slice(x[0], {-100, 2}, {2, 100}, {1, 3}); });
    check(dev.index, {{a}}, [](const Xs& x) { return braid::slice(x[0], {2, 0}, {1, 4}, {}); });
    check(dev.index, {{a}}, [](const Xs& x) { return braid::transpose(x[0], {1, 0}); });
    check(dev.index, {{a}, {b}}, [](const Xs& x) { return braid::concat({x[0], x[1], x[0]}, 1); });
    check(dev.index, {{a}}, [&](const Xs& x) { return x[0].copy_to(dev.index); });
    // float64 -> float32 -> float64: the gradient passes through both casts (float32 rounding: looser)
    check(
        dev.index, {{a}}, [](const Xs& x) { return braid::cast(braid::cast(x[0], BRAID_FLOAT32), BRAID_FLOAT64); },
        1e-3, 1e-3);
  }
}

TEST_CASE("gradients: conv2d with stride, padding and bias") {
  struct Case {
    int64_t n, c, h, w, k, r, s;
    std::array<int32_t, 2> stride, padding;
  };
  const Case cases[] = {{2, 2, 5, 5, 3, 3, 3, {1, 1}, {0, 0}},
                        {1, 3, 6, 5, 2, 3, 2, {2, 1}, {1, 0}},
                        {2, 1, 4, 4, 2, 1, 1, {1, 1}, {0, 0}}};
  for (const auto& dev : harness::each_device())
    for (const Case& c : cases) {
      INFO("device ", dev.id, ", x ", c.n, "x", c.c, "x", c.h, "x", c.w, ", w ", c.k, "x", c.r, "x", c.s);
      check(dev.index,
            {{rnd({c.n, c.c, c.h, c.w}, -1, 1, 14)}, {rnd({c.k, c.c, c.r, c.s}, -1, 1, 15)}, {rnd({c.k}, -1, 1, 16)}},
            [&](const Xs& x) { return braid::conv2d(x[0], x[1], x[2], {.stride = c.stride, .padding = c.padding}); });
    }
}

TEST_CASE("gradients: max and average pooling") {
  struct Case {
    braid_pool_kind kind;
    std::array<int32_t, 2> kernel, stride, padding;
  };
  const Case cases[] = {{BRAID_POOL_MAX, {2, 2}, {0, 0}, {0, 0}},
                        {BRAID_POOL_AVG, {2, 2}, {0, 0}, {0, 0}},
                        {BRAID_POOL_MAX, {3, 3}, {2, 2}, {1, 1}},
                        {BRAID_POOL_AVG, {3, 2}, {1, 2}, {1, 0}}};
  for (const auto& dev : harness::each_device())
    for (const Case& c : cases) {
      INFO("device ", dev.id, ", kind ", int(c.kind), ", kernel ", c.kernel[0], "x", c.kernel[1]);
      check(dev.index, {{spread({2, 2, 5, 6}, -2, 2, 17)}}, [&](const Xs& x) {
        return braid::pool2d(x[0], {.kind = c.kind, .kernel = c.kernel, .stride = c.stride, .padding = c.padding});
      });
    }
}

TEST_CASE("gradients: batch norm in training and inference") {
  for (const auto& dev : harness::each_device())
    for (bool training : {true, false})
      for (const ref::Shape& s : {ref::Shape{4, 3}, ref::Shape{2, 3, 2, 2}}) {
        INFO("device ", dev.id, training ? ", training " : ", inference ", ref::to_string(s));
        const ref::Array rm = rnd({3}, -0.5, 0.5, 18), rv = rnd({3}, 0.5, 1.5, 19);
        check(dev.index, {{rnd(s, -1, 1, 20)}, {rnd({3}, 0.5, 1.5, 21)}, {rnd({3}, -1, 1, 22)}}, [&](const Xs& x) {
          // Fresh running statistics per call: training updates them in place.
          auto m = harness::upload(dev.index, BRAID_FLOAT64, rm), v = harness::upload(dev.index, BRAID_FLOAT64, rv);
          return braid::batch_norm(x[0], x[1], x[2], m, v, {.training = training}).y;
        });
      }
}

TEST_CASE("gradients: softmax and log-softmax on each axis") {
  for (const auto& dev : harness::each_device())
    for (int axis : {0, 1, -1})
      for (bool log : {false, true}) {
        INFO("device ", dev.id, ", axis ", axis, log ? ", log" : "");
        check(dev.index, {{rnd({3, 4, 2}, -2, 2, 23)}},
              [&](const Xs& x) { return log ? braid::log_softmax(x[0], axis) : braid::softmax(x[0], axis); });
      }
}

TEST_CASE("gradients: softmax cross-entropy (labels are not differentiated)") {
  for (const auto& dev : harness::each_device())
    for (braid_dtype label_type : harness::kIntTypes) {
      INFO("device ", dev.id, ", labels ", harness::dtype_name(label_type));
      const ref::Array labels({4}, {2, 0, 4, 1});
      check(dev.index, {{rnd({4, 5}, -2, 2, 24)}, {labels, false, label_type}},
            [](const Xs& x) { return braid::softmax_cross_entropy(x[0], x[1]); });
    }
}

TEST_CASE("gradients: dropout scales the kept elements") {
  for (const auto& dev : harness::each_device()) {
    INFO("device ", dev.id);
    // The mask must be the same in every evaluation of f: reseed before each draw.
    check(dev.index, {{rnd({4, 6}, -1, 1, 25)}}, [&](const Xs& x) {
      harness::context().set_seed(77);
      return braid::dropout(x[0], 0.4).y;
    });
    // p = 1 keeps nothing: y is constant zero, so the gradient is zero (not dy * 0 / 0 = NaN).
    check(dev.index, {{rnd({4, 6}, -1, 1, 25)}}, [&](const Xs& x) { return braid::dropout(x[0], 1.0).y; });
  }
}

TEST_CASE("gradients: a composite (two-layer network with a shared weight)") {
  for (const auto& dev : harness::each_device()) {
    INFO("device ", dev.id);
    check(dev.index, {{rnd({3, 4}, -1, 1, 26)}, {rnd({4, 4}, -1, 1, 27)}, {rnd({4}, -1, 1, 28)}}, [](const Xs& x) {
      Tensor h = braid::tanh(braid::add(braid::matmul(x[0], x[1]), x[2]));
      Tensor o = braid::matmul(h, x[1], false, true);
      return braid::mean(braid::square(o), {1});
    });
  }
}
