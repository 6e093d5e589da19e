// Conformance: reshape, slice, transpose, concat and cast. None of them computes, so every result
// must be bit-exact (casts to narrower floats round to nearest even).
#include "harness.h"

using harness::context;

namespace {

const braid_dtype kAllComputable[] = {BRAID_FLOAT32, BRAID_FLOAT64, BRAID_INT32, BRAID_INT64, BRAID_UINT8};

}  // namespace

TEST_CASE("layout: reshape keeps row-major order, infers -1 and shares storage") {
  struct Case {
    ref::Shape from, to;
  };
  const Case cases[] = {{{3, 4, 5}, {12, -1}},
                        {{3, 4, 5}, {-1, 5, 2, 2}},
                        {{3, 4, 5}, {60}},
                        {{7}, {7, 1}},
                        {{1}, {}},
                        {{2, 1, 3}, {3, -1}},
                        {{33}, {3, 11}}};
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      for (braid_dtype dt : kAllComputable)
        for (const Case& c : cases) {
          INFO("device ", dev.id, ", ", harness::dtype_name(dt), ", ", ref::to_string(c.from), " -> ",
               ref::to_string(c.to));
          const ref::Array x = harness::sample(c.from, dt, 91);
          const auto y = braid::reshape(harness::upload(dev.index, dt, x), c.to);
          CHECK_CLOSE(harness::download(y), ref::reshape(x, c.to), 0.0);
        }
    });
  }

  // "Same storage": an in-place update through the reshaped tensor shows in the original.
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      INFO("device ", dev.id);
      const auto w = braid::Tensor::ones(context(), dev.index, BRAID_FLOAT32, {2, 3});
      const auto flat = braid::reshape(w, {6});
      braid::sgd_update(flat, braid::Tensor::ones(context(), dev.index, BRAID_FLOAT32, {6}), 0.5);
      CHECK(w.to_vector<float>() == std::vector<float>(6, 0.5f));
    });
  }
}

TEST_CASE("layout: slice with begin, end and steps along every axis") {
  struct Case {
    ref::Shape shape;
    std::vector<int64_t> begin, end, step;  // empty step: NULL (all 1)
  };
  const Case cases[] = {
      {{33}, {0}, {33}, {}},                  // everything
      {{33}, {1}, {30}, {4}},                 // stepped 1-D
      {{33}, {32}, {33}, {}},                 // last element
      {{7, 33}, {1, 2}, {6, 33}, {2, 5}},     // steps on both axes
      {{7, 33}, {0, 0}, {7, 1}, {}},          // first column
      {{3, 4, 5}, {1, 0, 2}, {3, 4, 5}, {}},  // NULL step
      {{3, 4, 5}, {0, 1, 0}, {3, 4, 5}, {2, 2, 3}},
      {{2, 3, 1, 7}, {1, 0, 0, 3}, {2, 3, 1, 7}, {1, 3, 1, 2}},
      // Out-of-range bounds clamp like Python/NumPy: x[2:100], x[-100:5], both ends far out.
      {{7}, {2}, {100}, {}},
      {{7}, {-100}, {5}, {}},
      {{7, 5}, {-100, 3}, {100, 100}, {3, 1}},
      {{7}, {INT64_MIN}, {INT64_MAX}, {INT64_MAX}},  // one element; no overflow anywhere
      // begin >= end, or a range past the axis: an empty axis, not an error.
      {{7}, {5}, {2}, {}},
      {{7}, {7}, {100}, {}},
      {{7, 5}, {-2, 4}, {-5, 5}, {}},
      {{4, 5}, {1, 5}, {3, 100}, {1, 2}},
  };
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      for (braid_dtype dt : kAllComputable)
        for (const Case& c : cases) {
          INFO("device ", dev.id, ", ", harness::dtype_name(dt), ", slice of ", ref::to_string(c.shape), " from ",
               ref::to_string(c.begin), " to ", ref::to_string(c.end), " step ", ref::to_string(c.step));
          const ref::Array x = harness::sample(c.shape, dt, 92);
          const auto y = braid::slice(harness::upload(dev.index, dt, x), c.begin, c.end, c.step);
          CHECK_CLOSE(harness::download(y), ref::slice(x, c.begin, c.end, c.step), 0.0);
        }
    });
  }
}

TEST_CASE("layout: transpose with every permutation of 3 axes and others") {
  struct Case {
    ref::Shape shape;
    std::vector<int32_t> perm;
  };
  const Case cases[] = {{{3, 4, 5}, {0, 1, 2}},
                        {{3, 4, 5}, {0, 2, 1}},
                        {{3, 4, 5}, {1, 0, 2}},
                        {{3, 4, 5}, {1, 2, 0}},
                        {{3, 4, 5}, {2, 0, 1}},
                        {{3, 4, 5}, {2, 1, 0}},
                        {{7, 33}, {1, 0}},
                        {{1, 7}, {1, 0}},
                        {{2, 3, 1, 5}, {3, 1, 0, 2}},
                        {{5}, {0}}};
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      for (braid_dtype dt : kAllComputable)
        for (const Case& c : cases) {
          INFO("device ", dev.id, ", ", harness::dtype_name(dt), ", transpose ", ref::to_string(c.shape));
          const ref::Array x = harness::sample(c.shape, dt, 93);
          const auto y = braid::transpose(harness::upload(dev.index, dt, x), c.perm);
          CHECK_CLOSE(harness::download(y), ref::transpose(x, c.perm), 0.0);
        }
    });
  }
}

TEST_CASE("layout: concat along each axis") {
  struct Case {
    std::vector<ref::Shape> shapes;
    int32_t axis;
  };
  const Case cases[] = {
      {{{2, 3, 4}, {1, 3, 4}, {3, 3, 4}}, 0},
      {{{2, 3, 4}, {2, 1, 4}, {2, 2, 4}}, 1},
      {{{2, 3, 4}, {2, 3, 1}, {2, 3, 7}}, 2},
      {{{2, 3, 4}, {2, 3, 2}}, -1},
      {{{7}, {33}}, 0},
      {{{3, 5}}, 1},  // one input: a copy
  };
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      for (braid_dtype dt : kAllComputable)
        for (const Case& c : cases) {
          INFO("device ", dev.id, ", ", harness::dtype_name(dt), ", ", c.shapes.size(), " inputs on axis ", c.axis);
          std::vector<ref::Array> xs;
          std::vector<braid::Tensor> ts;
          for (size_t i = 0; i < c.shapes.size(); ++i) {
            xs.push_back(harness::sample(c.shapes[i], dt, 94 + static_cast<uint32_t>(i)));
            ts.push_back(harness::upload(dev.index, dt, xs.back()));
          }
          const auto y = braid::concat(ts, c.axis);
          CHECK_CLOSE(harness::download(y), ref::concat(xs, c.axis), 0.0);
        }
    });
  }
}

// torch.cat promotes its inputs (int32 with float32 is float32, uint8 with int64 int64): each part is
// cast into the result. It was refused with BRAID_ERR_DTYPE.
TEST_CASE("layout: concat of different dtypes promotes as torch.cat") {
  struct Case {
    braid_dtype a, b, want;
  };
  const Case cases[] = {{BRAID_INT32, BRAID_FLOAT32, BRAID_FLOAT32},
                        {BRAID_FLOAT32, BRAID_FLOAT64, BRAID_FLOAT64},
                        {BRAID_UINT8, BRAID_INT64, BRAID_INT64}};
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      for (const Case& c : cases) {
        INFO("device ", dev.id, ", ", harness::dtype_name(c.a), " with ", harness::dtype_name(c.b));
        const ref::Array xa({2, 2}, {1, 2, 3, 4}), xb({2, 1}, {5, 6});
        const auto y = braid::concat({harness::upload(dev.index, c.a, xa), harness::upload(dev.index, c.b, xb)}, 1);
        CHECK(y.dtype() == c.want);
        const std::vector<ref::Array> parts = {xa, xb};
        CHECK_CLOSE(harness::download(y), ref::concat(parts, 1), 0.0);
      }
    });
  }
}

TEST_CASE("layout: cast between floats rounds to nearest even, through float16 and bfloat16") {
  const braid_dtype targets[] = {BRAID_FLOAT32, BRAID_FLOAT64, BRAID_FLOAT16, BRAID_BFLOAT16};
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      for (braid_dtype from : harness::kFloatTypes)
        for (braid_dtype to : targets) {
          INFO("device ", dev.id, ", ", harness::dtype_name(from), " -> ", harness::dtype_name(to));
          ref::Array x = harness::random_array({7, 33}, -300.0, 300.0, from, 95);
          // Edge values: the float16 maximum, overflow to infinity, a float16 subnormal, a tie.
          const double edges[] = {65504.0, 70000.0, -1e-6, 1.0 + 0x1p-11, 0.1, -0.0, 3e-41};
          for (size_t i = 0; i < std::size(edges); ++i) x.data[i] = ref::round_to(from, edges[i]);
          const auto y = braid::cast(harness::upload(dev.index, from, x), to);
          CHECK(y.dtype() == to);
          const ref::Array want = ref::round_to(to, x);
          CHECK_CLOSE(harness::download(y), want, 0.0);
          // And back: the rounded values are exact in the source type, so the round trip is lossless.
          CHECK_CLOSE(harness::download(braid::cast(y, from)), want, 0.0);
        }
    });
  }
}

TEST_CASE("layout: cast between integer and float dtypes with integral values") {
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      for (braid_dtype from : kAllComputable)
        for (braid_dtype to : kAllComputable) {
          INFO("device ", dev.id, ", ", harness::dtype_name(from), " -> ", harness::dtype_name(to));
          // Values every dtype of the pair holds exactly (uint8 limits the range).
          const ref::Array x = harness::random_ints({3, 7}, 0, 256, 96);
          const auto y = braid::cast(harness::upload(dev.index, from, x), to);
          CHECK(y.dtype() == to);
          CHECK_CLOSE(harness::download(y), x, 0.0);
        }
    });
  }
}

TEST_CASE("layout: float to integer casts truncate toward zero") {
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      for (braid_dtype from : harness::kFloatTypes)
        for (braid_dtype to : harness::kIntTypes) {
          INFO("device ", dev.id, ", ", harness::dtype_name(from), " -> ", harness::dtype_name(to));
          const ref::Array x({6}, {-2.75, -1.5, -0.25, 0.5, 1.5, 99.99});
          const auto y = braid::cast(harness::upload(dev.index, from, x), to);
          CHECK_CLOSE(harness::download(y), ref::round_to(to, x), 0.0);
        }
    });
  }
}
