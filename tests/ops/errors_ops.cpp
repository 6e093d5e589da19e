// Error paths of every op function of braid.h: NULL handles and outputs, bad enum values and axes,
// shapes that do not agree, and dtypes the op does not accept. All of them are synchronous.
#include <cmath>
#include <cstddef>
#include <limits>

#include "errors.h"

using errors::bad_device;
using errors::Out;
using errors::tensor;

namespace {

// A float16 tensor (storage only): made by a cast, since creation ops need not support it.
braid::Tensor half_tensor(braid::List<int64_t> shape) {
  return braid::cast(tensor(0, BRAID_FLOAT32, shape), BRAID_FLOAT16);
}

}  // namespace

TEST_CASE("errors: unary") {
  Out o;
  const auto f = tensor(0, BRAID_FLOAT32, {3}), i = tensor(0, BRAID_INT32, {3});
  CHECK_FAILS(braid_unary(BRAID_UNARY_EXP, nullptr, o.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_unary");
  CHECK_FAILS(braid_unary(BRAID_UNARY_EXP, f.get(), nullptr), BRAID_ERR_INVALID_ARGUMENT, "braid_unary");
  CHECK_FAILS(braid_unary(BRAID_UNARY_COUNT, f.get(), o.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_unary");
  CHECK_FAILS(braid_unary(static_cast<braid_unary_op>(-1), f.get(), o.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_unary");
  for (braid_unary_op op :
       {BRAID_UNARY_EXP, BRAID_UNARY_LOG, BRAID_UNARY_SQRT, BRAID_UNARY_SIGMOID, BRAID_UNARY_TANH}) {
    INFO("float-only unary op ", static_cast<int>(op), " on int32");
    CHECK_FAILS(braid_unary(op, i.get(), o.p()), BRAID_ERR_DTYPE, "braid_unary");
  }
  CHECK_FAILS(braid_unary(BRAID_UNARY_NEG, half_tensor({3}).get(), o.p()), BRAID_ERR_DTYPE, "braid_unary");
}

TEST_CASE("errors: binary and binary_scalar") {
  Out o;
  const auto a = tensor(0, BRAID_FLOAT32, {3, 4}), b = tensor(0, BRAID_FLOAT32, {5});
  const auto t = tensor(0, BRAID_FLOAT32, {4, 3});
  CHECK_FAILS(braid_binary(BRAID_BINARY_ADD, nullptr, a.get(), o.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_binary");
  CHECK_FAILS(braid_binary(BRAID_BINARY_ADD, a.get(), nullptr, o.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_binary");
  CHECK_FAILS(braid_binary(BRAID_BINARY_ADD, a.get(), a.get(), nullptr), BRAID_ERR_INVALID_ARGUMENT, "braid_binary");
  CHECK_FAILS(braid_binary(BRAID_BINARY_COUNT, a.get(), a.get(), o.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_binary");
  CHECK_FAILS(braid_binary(BRAID_BINARY_ADD, a.get(), b.get(), o.p()), BRAID_ERR_SHAPE, "braid_binary");
  CHECK_FAILS(braid_binary(BRAID_BINARY_MUL, a.get(), t.get(), o.p()), BRAID_ERR_SHAPE, "braid_binary");
  // Mixed dtypes promote (elementwise_test.cpp); a promoted dtype the op has no version of is refused.
  const auto u8 = tensor(0, BRAID_UINT8, {3, 4});
  CHECK_FAILS(braid_binary(BRAID_BINARY_ADD, u8.get(), u8.get(), o.p()), BRAID_ERR_DTYPE, "braid_binary");
  CHECK_FAILS(
      braid_binary(BRAID_BINARY_POW, tensor(0, BRAID_INT32, {3, 4}).get(), tensor(0, BRAID_INT64, {4}).get(), o.p()),
      BRAID_ERR_DTYPE, "braid_binary");
  CHECK_FAILS(braid_binary(BRAID_BINARY_ADD, a.get(), tensor(0, BRAID_FLOAT64, {5}).get(), o.p()), BRAID_ERR_SHAPE,
              "braid_binary");
  const auto h = half_tensor({3, 4});
  CHECK_FAILS(braid_binary(BRAID_BINARY_ADD, h.get(), h.get(), o.p()), BRAID_ERR_DTYPE, "braid_binary");

  CHECK_FAILS(braid_binary_scalar(BRAID_BINARY_ADD, nullptr, 1.0, 0, o.p()), BRAID_ERR_INVALID_ARGUMENT,
              "braid_binary_scalar");
  CHECK_FAILS(braid_binary_scalar(BRAID_BINARY_ADD, a.get(), 1.0, 0, nullptr), BRAID_ERR_INVALID_ARGUMENT,
              "braid_binary_scalar");
  CHECK_FAILS(braid_binary_scalar(static_cast<braid_binary_op>(99), a.get(), 1.0, 0, o.p()), BRAID_ERR_INVALID_ARGUMENT,
              "braid_binary_scalar");
  CHECK_FAILS(braid_binary_scalar(BRAID_BINARY_ADD, h.get(), 1.0, 0, o.p()), BRAID_ERR_DTYPE, "braid_binary_scalar");
}

TEST_CASE("errors: compare and compare_scalar") {
  Out o;
  const auto a = tensor(0, BRAID_FLOAT32, {3, 4}), b = tensor(0, BRAID_FLOAT32, {5});
  CHECK_FAILS(braid_compare(BRAID_COMPARE_LESS, nullptr, a.get(), o.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_compare");
  CHECK_FAILS(braid_compare(BRAID_COMPARE_LESS, a.get(), nullptr, o.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_compare");
  CHECK_FAILS(braid_compare(BRAID_COMPARE_LESS, a.get(), a.get(), nullptr), BRAID_ERR_INVALID_ARGUMENT,
              "braid_compare");
  CHECK_FAILS(braid_compare(BRAID_COMPARE_COUNT, a.get(), a.get(), o.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_compare");
  CHECK_FAILS(braid_compare(static_cast<braid_compare_op>(-1), a.get(), a.get(), o.p()), BRAID_ERR_INVALID_ARGUMENT,
              "braid_compare");
  CHECK_FAILS(braid_compare(BRAID_COMPARE_LESS_EQUAL, a.get(), b.get(), o.p()), BRAID_ERR_SHAPE, "braid_compare");
  CHECK_FAILS(braid_compare_scalar(BRAID_COMPARE_EQUAL, nullptr, 1.0, o.p()), BRAID_ERR_INVALID_ARGUMENT,
              "braid_compare_scalar");
  CHECK_FAILS(braid_compare_scalar(BRAID_COMPARE_EQUAL, a.get(), 1.0, nullptr), BRAID_ERR_INVALID_ARGUMENT,
              "braid_compare_scalar");
  CHECK_FAILS(braid_compare_scalar(static_cast<braid_compare_op>(6), a.get(), 1.0, o.p()), BRAID_ERR_INVALID_ARGUMENT,
              "braid_compare_scalar");
  braid::Context other;
  const auto c = braid::Tensor::from_vector(other, 0, {5}, std::vector<float>{1, 2, 3, 4, 5});
  CHECK_FAILS(braid_compare(BRAID_COMPARE_EQUAL, b.get(), c.get(), o.p()), BRAID_ERR_INVALID_ARGUMENT,
              "different contexts");
}

// Tensors of two contexts: refused as every op refuses them (concat said "different devices").
TEST_CASE("errors: operands of two contexts") {
  Out o;
  braid::Context other;
  const auto a = tensor(0, BRAID_FLOAT32, {2});
  const auto b = braid::Tensor::from_vector(other, 0, {2}, std::vector<float>{1, 2});
  const braid_tensor both[2] = {a.get(), b.get()};
  CHECK_FAILS(braid_concat(2, both, 0, o.p()), BRAID_ERR_INVALID_ARGUMENT, "different contexts");
  CHECK_FAILS(braid_binary(BRAID_BINARY_ADD, a.get(), b.get(), o.p()), BRAID_ERR_INVALID_ARGUMENT,
              "different contexts");
  CHECK_FAILS(braid_where(a.get(), a.get(), b.get(), o.p()), BRAID_ERR_INVALID_ARGUMENT, "different contexts");
}

TEST_CASE("errors: reduce and argmax") {
  Out o;
  const auto x = tensor(0, BRAID_FLOAT32, {3, 4});
  const int32_t ax2[] = {2}, axm3[] = {-3}, dup[] = {0, -2}, nine[9] = {};
  CHECK_FAILS(braid_reduce(BRAID_REDUCE_SUM, nullptr, 0, nullptr, 0, o.p()), BRAID_ERR_INVALID_ARGUMENT,
              "braid_reduce");
  CHECK_FAILS(braid_reduce(BRAID_REDUCE_SUM, x.get(), 0, nullptr, 0, nullptr), BRAID_ERR_INVALID_ARGUMENT,
              "braid_reduce");
  CHECK_FAILS(braid_reduce(BRAID_REDUCE_COUNT, x.get(), 0, nullptr, 0, o.p()), BRAID_ERR_INVALID_ARGUMENT,
              "braid_reduce");
  CHECK_FAILS(braid_reduce(BRAID_REDUCE_SUM, x.get(), 1, ax2, 0, o.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_reduce");
  CHECK_FAILS(braid_reduce(BRAID_REDUCE_SUM, x.get(), 1, axm3, 0, o.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_reduce");
  CHECK_FAILS(braid_reduce(BRAID_REDUCE_SUM, x.get(), 2, dup, 0, o.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_reduce");
  CHECK_FAILS(braid_reduce(BRAID_REDUCE_SUM, x.get(), 1, nullptr, 0, o.p()), BRAID_ERR_INVALID_ARGUMENT,
              "braid_reduce");
  CHECK_FAILS(braid_reduce(BRAID_REDUCE_SUM, x.get(), -1, nullptr, 0, o.p()), BRAID_ERR_INVALID_ARGUMENT,
              "braid_reduce");
  CHECK_FAILS(braid_reduce(BRAID_REDUCE_SUM, x.get(), 9, nine, 0, o.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_reduce");
  CHECK_FAILS(braid_reduce(BRAID_REDUCE_SUM, half_tensor({3}).get(), 0, nullptr, 0, o.p()), BRAID_ERR_DTYPE,
              "braid_reduce");
  // As torch.mean and torch.linalg.norm: no integer mean or norm (an integer sum is int64, reduce_test.cpp).
  for (braid_reduce_op op : {BRAID_REDUCE_MEAN, BRAID_REDUCE_NORM}) {
    INFO("integer reduce op ", static_cast<int>(op));
    CHECK_FAILS(braid_reduce(op, tensor(0, BRAID_INT32, {3}).get(), 0, nullptr, 0, o.p()), BRAID_ERR_DTYPE,
                "braid_reduce");
  }

  CHECK_FAILS(braid_argmax(nullptr, 0, 0, o.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_argmax");
  CHECK_FAILS(braid_argmax(x.get(), 0, 0, nullptr), BRAID_ERR_INVALID_ARGUMENT, "braid_argmax");
  CHECK_FAILS(braid_argmax(x.get(), 2, 0, o.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_argmax");
  CHECK_FAILS(braid_argmax(x.get(), -3, 0, o.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_argmax");
  CHECK_FAILS(braid_argmax(half_tensor({3}).get(), 0, 0, o.p()), BRAID_ERR_DTYPE, "braid_argmax");
}

TEST_CASE("errors: matmul") {
  Out o;
  const auto a = tensor(0, BRAID_FLOAT32, {2, 3}), b = tensor(0, BRAID_FLOAT32, {4, 5});
  const auto b34 = tensor(0, BRAID_FLOAT32, {3, 4});
  CHECK_FAILS(braid_matmul(nullptr, b.get(), 0, 0, o.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_matmul");
  CHECK_FAILS(braid_matmul(a.get(), nullptr, 0, 0, o.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_matmul");
  CHECK_FAILS(braid_matmul(a.get(), b34.get(), 0, 0, nullptr), BRAID_ERR_INVALID_ARGUMENT, "braid_matmul");
  CHECK_FAILS(braid_matmul(a.get(), b.get(), 0, 0, o.p()), BRAID_ERR_SHAPE, "braid_matmul");    // 3 vs 4
  CHECK_FAILS(braid_matmul(a.get(), b34.get(), 1, 0, o.p()), BRAID_ERR_SHAPE, "braid_matmul");  // aᵀ: 2 vs 3
  CHECK_FAILS(braid_matmul(a.get(), b34.get(), 0, 1, o.p()), BRAID_ERR_SHAPE, "braid_matmul");  // bᵀ: 3 vs 4
  CHECK_FAILS(braid_matmul(tensor(0, BRAID_FLOAT32, {3}).get(), b34.get(), 0, 0, o.p()), BRAID_ERR_SHAPE,
              "braid_matmul");
  CHECK_FAILS(braid_matmul(tensor(0, BRAID_FLOAT32, {1, 2, 2, 3}).get(), b34.get(), 0, 0, o.p()), BRAID_ERR_SHAPE,
              "braid_matmul");
  CHECK_FAILS(
      braid_matmul(tensor(0, BRAID_FLOAT32, {2, 2, 3}).get(), tensor(0, BRAID_FLOAT32, {3, 3, 4}).get(), 0, 0, o.p()),
      BRAID_ERR_SHAPE, "braid_matmul");  // batch 2 vs 3
  CHECK_FAILS(braid_matmul(a.get(), tensor(0, BRAID_FLOAT64, {3, 4}).get(), 0, 0, o.p()), BRAID_ERR_DTYPE,
              "braid_matmul");
  CHECK_FAILS(braid_matmul(tensor(0, BRAID_INT32, {2, 3}).get(), tensor(0, BRAID_INT32, {3, 4}).get(), 0, 0, o.p()),
              BRAID_ERR_DTYPE, "braid_matmul");
}

TEST_CASE("errors: reshape, slice and transpose") {
  Out o;
  const auto x = tensor(0, BRAID_FLOAT32, {3, 4});
  const int64_t s5x2[] = {5, 2}, two_infer[] = {-1, -1}, neg2[] = {-2, -6}, s5infer[] = {5, -1},
                nine[9] = {12, 1, 1, 1, 1, 1, 1, 1, 1};
  CHECK_FAILS(braid_reshape(nullptr, 2, s5x2, o.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_reshape");
  CHECK_FAILS(braid_reshape(x.get(), 2, nullptr, o.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_reshape");
  CHECK_FAILS(braid_reshape(x.get(), 2, s5x2, nullptr), BRAID_ERR_INVALID_ARGUMENT, "braid_reshape");
  CHECK_FAILS(braid_reshape(x.get(), 2, s5x2, o.p()), BRAID_ERR_SHAPE, "braid_reshape");     // 10 != 12
  CHECK_FAILS(braid_reshape(x.get(), 2, s5infer, o.p()), BRAID_ERR_SHAPE, "braid_reshape");  // 12 % 5 != 0
  CHECK_FAILS(braid_reshape(x.get(), 2, two_infer, o.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_reshape");
  CHECK_FAILS(braid_reshape(x.get(), 2, neg2, o.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_reshape");
  CHECK_FAILS(braid_reshape(x.get(), 9, nine, o.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_reshape");
  CHECK_FAILS(braid_reshape(x.get(), -1, s5x2, o.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_reshape");
  // Found by tests/fuzz: the product of the new dimensions overflowed int64 before it was compared.
  const int64_t huge[] = {5, INT64_MAX, 3};
  CHECK_FAILS(braid_reshape(x.get(), 3, huge, o.p()), BRAID_ERR_SHAPE, "braid_reshape");

  const int64_t b0[] = {0, 0}, e_ok[] = {3, 4}, st0[] = {1, 0}, st_neg[] = {-1, 1};
  CHECK_FAILS(braid_slice(nullptr, b0, e_ok, nullptr, o.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_slice");
  CHECK_FAILS(braid_slice(x.get(), nullptr, e_ok, nullptr, o.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_slice");
  CHECK_FAILS(braid_slice(x.get(), b0, nullptr, nullptr, o.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_slice");
  CHECK_FAILS(braid_slice(x.get(), b0, e_ok, nullptr, nullptr), BRAID_ERR_INVALID_ARGUMENT, "braid_slice");
  CHECK_FAILS(braid_slice(x.get(), b0, e_ok, st0, o.p()), BRAID_ERR_INVALID_ARGUMENT, "step[1]");     // step 0
  CHECK_FAILS(braid_slice(x.get(), b0, e_ok, st_neg, o.p()), BRAID_ERR_INVALID_ARGUMENT, "step[0]");  // negative
  // Bounds past the axis clamp and begin > end is empty (Python/NumPy), so neither is an error.
  const int64_t e_far[] = {3, 5}, b_late[] = {2, 0}, e_early[] = {1, 4};
  {
    Out y;
    CHECK(braid_slice(x.get(), b0, e_far, nullptr, y.p()) == BRAID_OK);
    Out z;
    CHECK(braid_slice(x.get(), b_late, e_early, nullptr, z.p()) == BRAID_OK);
  }

  const int32_t rep[] = {0, 0}, far[] = {0, 2}, ok[] = {1, 0};
  CHECK_FAILS(braid_transpose(nullptr, ok, o.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_transpose");
  CHECK_FAILS(braid_transpose(x.get(), nullptr, o.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_transpose");
  CHECK_FAILS(braid_transpose(x.get(), ok, nullptr), BRAID_ERR_INVALID_ARGUMENT, "braid_transpose");
  CHECK_FAILS(braid_transpose(x.get(), rep, o.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_transpose");
  CHECK_FAILS(braid_transpose(x.get(), far, o.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_transpose");
}

TEST_CASE("errors: concat, copy, cast and copy_into") {
  Out o;
  const auto a = tensor(0, BRAID_FLOAT32, {2, 3}), b = tensor(0, BRAID_FLOAT32, {2, 4}),
             c = tensor(0, BRAID_FLOAT32, {2, 3, 1});
  const auto d = tensor(0, BRAID_FLOAT64, {2, 3});
  const braid_tensor ab[] = {a.get(), b.get()}, ac[] = {a.get(), c.get()}, ad[] = {a.get(), d.get()},
                     an[] = {a.get(), nullptr};
  CHECK_FAILS(braid_concat(0, ab, 0, o.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_concat");
  CHECK_FAILS(braid_concat(-1, ab, 0, o.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_concat");
  CHECK_FAILS(braid_concat(2, nullptr, 0, o.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_concat");
  CHECK_FAILS(braid_concat(2, an, 0, o.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_concat");
  CHECK_FAILS(braid_concat(2, ab, 1, nullptr), BRAID_ERR_INVALID_ARGUMENT, "braid_concat");
  CHECK_FAILS(braid_concat(2, ab, 0, o.p()), BRAID_ERR_SHAPE, "braid_concat");  // 3 vs 4 off the axis
  CHECK_FAILS(braid_concat(2, ac, 0, o.p()), BRAID_ERR_SHAPE, "braid_concat");  // ranks differ
  CHECK_FAILS(braid_concat(2, ab, 2, o.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_concat");
  // Different dtypes promote (as torch.cat): float32 with float64 on axis 1 is a float64 [2, 6].
  CHECK(braid_concat(2, ad, 1, o.p()) == BRAID_OK);
  braid_dtype promoted{};
  CHECK(braid_tensor_dtype(o.get(), &promoted) == BRAID_OK);
  CHECK(promoted == BRAID_FLOAT64);

  CHECK_FAILS(braid_copy(nullptr, 0, o.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_copy");
  CHECK_FAILS(braid_copy(a.get(), bad_device(), o.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_copy");
  CHECK_FAILS(braid_copy(a.get(), -1, o.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_copy");
  CHECK_FAILS(braid_copy(a.get(), 0, nullptr), BRAID_ERR_INVALID_ARGUMENT, "braid_copy");

  CHECK_FAILS(braid_cast(nullptr, BRAID_FLOAT64, o.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_cast");
  CHECK_FAILS(braid_cast(a.get(), static_cast<braid_dtype>(17), o.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_cast");
  CHECK_FAILS(braid_cast(a.get(), BRAID_DTYPE_COUNT, o.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_cast");
  CHECK_FAILS(braid_cast(a.get(), BRAID_FLOAT64, nullptr), BRAID_ERR_INVALID_ARGUMENT, "braid_cast");

  CHECK_FAILS(braid_copy_into(nullptr, a.get()), BRAID_ERR_INVALID_ARGUMENT, "braid_copy_into");
  CHECK_FAILS(braid_copy_into(a.get(), nullptr), BRAID_ERR_INVALID_ARGUMENT, "braid_copy_into");
  CHECK_FAILS(braid_copy_into(a.get(), b.get()), BRAID_ERR_SHAPE, "braid_copy_into");
  CHECK_FAILS(braid_copy_into(a.get(), d.get()), BRAID_ERR_DTYPE, "braid_copy_into");
}

TEST_CASE("errors: conv2d") {
  Out o;
  const auto x = tensor(0, BRAID_FLOAT32, {1, 3, 5, 5}), w = tensor(0, BRAID_FLOAT32, {4, 3, 3, 3});
  const auto bias = tensor(0, BRAID_FLOAT32, {4});
  braid_conv2d_params neg = BRAID_CONV2D_PARAMS_INIT;
  neg.padding[0] = -1;
  braid_conv2d_params negstride = BRAID_CONV2D_PARAMS_INIT;
  negstride.stride[1] = -2;
  CHECK_FAILS(braid_conv2d(nullptr, w.get(), nullptr, nullptr, o.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_conv2d");
  CHECK_FAILS(braid_conv2d(x.get(), nullptr, nullptr, nullptr, o.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_conv2d");
  CHECK_FAILS(braid_conv2d(x.get(), w.get(), nullptr, nullptr, nullptr), BRAID_ERR_INVALID_ARGUMENT, "braid_conv2d");
  CHECK_FAILS(braid_conv2d(x.get(), tensor(0, BRAID_FLOAT32, {4, 2, 3, 3}).get(), nullptr, nullptr, o.p()),
              BRAID_ERR_SHAPE,
              "braid_conv2d");  // 3 channels vs 2
  CHECK_FAILS(braid_conv2d(tensor(0, BRAID_FLOAT32, {3, 5, 5}).get(), w.get(), nullptr, nullptr, o.p()),
              BRAID_ERR_SHAPE, "braid_conv2d");
  CHECK_FAILS(braid_conv2d(x.get(), tensor(0, BRAID_FLOAT32, {4, 3, 3}).get(), nullptr, nullptr, o.p()),
              BRAID_ERR_SHAPE, "braid_conv2d");
  CHECK_FAILS(braid_conv2d(x.get(), w.get(), tensor(0, BRAID_FLOAT32, {3}).get(), nullptr, o.p()), BRAID_ERR_SHAPE,
              "braid_conv2d");  // bias K=4
  CHECK_FAILS(braid_conv2d(x.get(), tensor(0, BRAID_FLOAT32, {4, 3, 6, 6}).get(), nullptr, nullptr, o.p()),
              BRAID_ERR_SHAPE,
              "braid_conv2d");  // kernel larger than the input
  CHECK_FAILS(braid_conv2d(x.get(), w.get(), nullptr, &neg, o.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_conv2d");
  CHECK_FAILS(braid_conv2d(x.get(), w.get(), nullptr, &negstride, o.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_conv2d");
  CHECK_FAILS(braid_conv2d(x.get(), tensor(0, BRAID_FLOAT64, {4, 3, 3, 3}).get(), nullptr, nullptr, o.p()),
              BRAID_ERR_DTYPE, "braid_conv2d");
  CHECK_FAILS(braid_conv2d(x.get(), w.get(), tensor(0, BRAID_FLOAT64, {4}).get(), nullptr, o.p()), BRAID_ERR_DTYPE,
              "braid_conv2d");
  CHECK_FAILS(braid_conv2d(tensor(0, BRAID_INT32, {1, 3, 5, 5}).get(), tensor(0, BRAID_INT32, {4, 3, 3, 3}).get(),
                           nullptr, nullptr, o.p()),
              BRAID_ERR_DTYPE, "braid_conv2d");
  CHECK(braid_conv2d(x.get(), w.get(), bias.get(), nullptr, o.p()) == BRAID_OK);  // the valid call works
}

TEST_CASE("errors: pool2d") {
  Out o;
  const auto x = tensor(0, BRAID_FLOAT32, {1, 2, 5, 5});
  braid_pool2d_params p = BRAID_POOL2D_PARAMS_INIT;
  CHECK_FAILS(braid_pool2d(nullptr, &p, o.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_pool2d");
  CHECK_FAILS(braid_pool2d(x.get(), &p, nullptr), BRAID_ERR_INVALID_ARGUMENT, "braid_pool2d");
  CHECK_FAILS(braid_pool2d(tensor(0, BRAID_FLOAT32, {2, 5, 5}).get(), &p, o.p()), BRAID_ERR_SHAPE, "braid_pool2d");
  CHECK_FAILS(braid_pool2d(tensor(0, BRAID_INT32, {1, 2, 5, 5}).get(), &p, o.p()), BRAID_ERR_DTYPE, "braid_pool2d");
  braid_pool2d_params q = p;
  q.kind = static_cast<braid_pool_kind>(7);
  CHECK_FAILS(braid_pool2d(x.get(), &q, o.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_pool2d");
  q = p, q.kernel[0] = 0;
  CHECK_FAILS(braid_pool2d(x.get(), &q, o.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_pool2d");
  q = p, q.stride[1] = -1;
  CHECK_FAILS(braid_pool2d(x.get(), &q, o.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_pool2d");
  q = p, q.padding[0] = -1;
  CHECK_FAILS(braid_pool2d(x.get(), &q, o.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_pool2d");
  q = p, q.kernel[0] = q.kernel[1] = 6;
  CHECK_FAILS(braid_pool2d(x.get(), &q, o.p()), BRAID_ERR_SHAPE, "braid_pool2d");  // window larger than 5x5
  CHECK(braid_pool2d(x.get(), &p, o.p()) == BRAID_OK);
}

TEST_CASE("errors: batch_norm") {
  Out y, m, s;
  const auto x = tensor(0, BRAID_FLOAT32, {4, 3, 2, 2}), c = tensor(0, BRAID_FLOAT32, {3});
  const auto c4 = tensor(0, BRAID_FLOAT32, {4}), cd = tensor(0, BRAID_FLOAT64, {3});
  const braid_batch_norm_params p = BRAID_BATCH_NORM_PARAMS_INIT;
  const auto bn = [&](braid_tensor xx, braid_tensor g, braid_tensor b, braid_tensor rm, braid_tensor rv,
                      braid_tensor* out) { return braid_batch_norm(xx, g, b, rm, rv, &p, out, m.p(), s.p()); };
  CHECK_FAILS(bn(nullptr, c.get(), c.get(), c.get(), c.get(), y.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_batch_norm");
  CHECK_FAILS(bn(x.get(), nullptr, c.get(), c.get(), c.get(), y.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_batch_norm");
  CHECK_FAILS(bn(x.get(), c.get(), nullptr, c.get(), c.get(), y.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_batch_norm");
  CHECK_FAILS(bn(x.get(), c.get(), c.get(), nullptr, c.get(), y.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_batch_norm");
  CHECK_FAILS(bn(x.get(), c.get(), c.get(), c.get(), nullptr, y.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_batch_norm");
  CHECK_FAILS(bn(x.get(), c.get(), c.get(), c.get(), c.get(), nullptr), BRAID_ERR_INVALID_ARGUMENT, "braid_batch_norm");
  CHECK_FAILS(bn(x.get(), c4.get(), c.get(), c.get(), c.get(), y.p()), BRAID_ERR_SHAPE, "braid_batch_norm");
  CHECK_FAILS(bn(x.get(), c.get(), c.get(), c.get(), c4.get(), y.p()), BRAID_ERR_SHAPE, "braid_batch_norm");
  CHECK_FAILS(bn(tensor(0, BRAID_FLOAT32, {4, 3, 2}).get(), c.get(), c.get(), c.get(), c.get(), y.p()), BRAID_ERR_SHAPE,
              "braid_batch_norm");
  CHECK_FAILS(bn(x.get(), cd.get(), c.get(), c.get(), c.get(), y.p()), BRAID_ERR_DTYPE, "braid_batch_norm");
  CHECK_FAILS(
      bn(tensor(0, BRAID_INT32, {4, 3}).get(), tensor(0, BRAID_INT32, {3}).get(), tensor(0, BRAID_INT32, {3}).get(),
         tensor(0, BRAID_INT32, {3}).get(), tensor(0, BRAID_INT32, {3}).get(), y.p()),
      BRAID_ERR_DTYPE, "braid_batch_norm");
  // eps negative, NaN or infinite, momentum outside [0, 1] or NaN (NaN slipped past comparisons before)
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  for (const auto& bad_pair : {std::pair{-1.0, 0.1}, {nan, 0.1}, {inf, 0.1}, {1e-5, nan}, {1e-5, 1.5}, {1e-5, -0.5}}) {
    const double eps = bad_pair.first, momentum = bad_pair.second;  // plain names: INFO captures them
    INFO("eps ", eps, ", momentum ", momentum);
    braid_batch_norm_params bad = p;
    bad.eps = eps, bad.momentum = momentum;
    CHECK_FAILS(braid_batch_norm(x.get(), c.get(), c.get(), c.get(), c.get(), &bad, y.p(), nullptr, nullptr),
                BRAID_ERR_INVALID_ARGUMENT, "braid_batch_norm");
  }
  CHECK(bn(x.get(), c.get(), c.get(), c.get(), c.get(), y.p()) == BRAID_OK);
}

TEST_CASE("errors: softmax and softmax_cross_entropy") {
  Out o;
  const auto x = tensor(0, BRAID_FLOAT32, {3, 4});
  CHECK_FAILS(braid_softmax(nullptr, 0, 0, o.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_softmax");
  CHECK_FAILS(braid_softmax(x.get(), 0, 0, nullptr), BRAID_ERR_INVALID_ARGUMENT, "braid_softmax");
  CHECK_FAILS(braid_softmax(x.get(), 2, 0, o.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_softmax");
  CHECK_FAILS(braid_softmax(x.get(), -3, 1, o.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_softmax");
  CHECK_FAILS(braid_softmax(tensor(0, BRAID_INT32, {3, 4}).get(), 0, 0, o.p()), BRAID_ERR_DTYPE, "braid_softmax");

  const auto labels = tensor(0, BRAID_INT32, {3});
  CHECK_FAILS(braid_softmax_cross_entropy(nullptr, labels.get(), o.p()), BRAID_ERR_INVALID_ARGUMENT,
              "braid_softmax_cross_entropy");
  CHECK_FAILS(braid_softmax_cross_entropy(x.get(), nullptr, o.p()), BRAID_ERR_INVALID_ARGUMENT,
              "braid_softmax_cross_entropy");
  CHECK_FAILS(braid_softmax_cross_entropy(x.get(), labels.get(), nullptr), BRAID_ERR_INVALID_ARGUMENT,
              "braid_softmax_cross_entropy");
  CHECK_FAILS(braid_softmax_cross_entropy(x.get(), tensor(0, BRAID_FLOAT32, {3}).get(), o.p()), BRAID_ERR_DTYPE,
              "braid_softmax_cross_entropy");
  CHECK_FAILS(braid_softmax_cross_entropy(x.get(), tensor(0, BRAID_UINT8, {3}).get(), o.p()), BRAID_ERR_DTYPE,
              "braid_softmax_cross_entropy");
  CHECK_FAILS(braid_softmax_cross_entropy(tensor(0, BRAID_INT32, {3, 4}).get(), labels.get(), o.p()), BRAID_ERR_DTYPE,
              "braid_softmax_cross_entropy");
  CHECK_FAILS(braid_softmax_cross_entropy(x.get(), tensor(0, BRAID_INT32, {4}).get(), o.p()), BRAID_ERR_SHAPE,
              "braid_softmax_cross_entropy");
  CHECK_FAILS(braid_softmax_cross_entropy(tensor(0, BRAID_FLOAT32, {3}).get(), labels.get(), o.p()), BRAID_ERR_SHAPE,
              "braid_softmax_cross_entropy");
  CHECK_FAILS(braid_softmax_cross_entropy(x.get(), tensor(0, BRAID_INT32, {3, 1}).get(), o.p()), BRAID_ERR_SHAPE,
              "braid_softmax_cross_entropy");
}

TEST_CASE("errors: dropout") {
  Out y, mask;
  const auto x = tensor(0, BRAID_FLOAT32, {3, 4});
  CHECK_FAILS(braid_dropout(nullptr, 0.5, y.p(), mask.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_dropout");
  CHECK_FAILS(braid_dropout(x.get(), 0.5, nullptr, mask.p()), BRAID_ERR_INVALID_ARGUMENT, "braid_dropout");
  // p = 1 is valid (all zeros, as PyTorch); only p outside [0, 1] is refused, and the message names p.
  CHECK(braid_dropout(x.get(), 1.0, y.p(), mask.p()) == BRAID_OK);
  CHECK_FAILS(braid_dropout(x.get(), 1.0000001, y.p(), mask.p()), BRAID_ERR_INVALID_ARGUMENT, "dropout: p must be");
  CHECK_FAILS(braid_dropout(x.get(), -0.1, y.p(), mask.p()), BRAID_ERR_INVALID_ARGUMENT, "dropout: p must be");
  CHECK_FAILS(braid_dropout(x.get(), NAN, y.p(), mask.p()), BRAID_ERR_INVALID_ARGUMENT, "dropout: p must be");
  CHECK_FAILS(braid_dropout(x.get(), INFINITY, y.p(), mask.p()), BRAID_ERR_INVALID_ARGUMENT, "dropout: p must be");
  CHECK_FAILS(braid_dropout(tensor(0, BRAID_INT32, {3}).get(), 0.5, y.p(), mask.p()), BRAID_ERR_DTYPE, "braid_dropout");
}

TEST_CASE("errors: sgd_update, sgd_momentum_update and adam_update") {
  const auto w = tensor(0, BRAID_FLOAT32, {3, 4}), g = tensor(0, BRAID_FLOAT32, {3, 4}),
             m = tensor(0, BRAID_FLOAT32, {3, 4});
  const auto v = tensor(0, BRAID_FLOAT32, {3, 4});
  const auto g5 = tensor(0, BRAID_FLOAT32, {5}), gd = tensor(0, BRAID_FLOAT64, {3, 4});
  const auto wi = tensor(0, BRAID_INT32, {3, 4});
  CHECK_FAILS(braid_sgd_update(nullptr, g.get(), 0.1, 0), BRAID_ERR_INVALID_ARGUMENT, "braid_sgd_update");
  CHECK_FAILS(braid_sgd_update(w.get(), nullptr, 0.1, 0), BRAID_ERR_INVALID_ARGUMENT, "braid_sgd_update");
  CHECK_FAILS(braid_sgd_update(w.get(), g5.get(), 0.1, 0), BRAID_ERR_SHAPE, "braid_sgd_update");
  CHECK_FAILS(braid_sgd_update(w.get(), gd.get(), 0.1, 0), BRAID_ERR_DTYPE, "braid_sgd_update");
  CHECK_FAILS(braid_sgd_update(wi.get(), tensor(0, BRAID_INT32, {3, 4}).get(), 0.1, 0), BRAID_ERR_DTYPE,
              "braid_sgd_update");

  CHECK_FAILS(braid_sgd_momentum_update(nullptr, g.get(), m.get(), 0.1, 0.9, 0), BRAID_ERR_INVALID_ARGUMENT,
              "braid_sgd_momentum_update");
  CHECK_FAILS(braid_sgd_momentum_update(w.get(), g.get(), nullptr, 0.1, 0.9, 0), BRAID_ERR_INVALID_ARGUMENT,
              "braid_sgd_momentum_update");
  CHECK_FAILS(braid_sgd_momentum_update(w.get(), g.get(), g5.get(), 0.1, 0.9, 0), BRAID_ERR_SHAPE,
              "braid_sgd_momentum_update");
  CHECK_FAILS(braid_sgd_momentum_update(w.get(), g5.get(), m.get(), 0.1, 0.9, 0), BRAID_ERR_SHAPE,
              "braid_sgd_momentum_update");
  CHECK_FAILS(braid_sgd_momentum_update(w.get(), g.get(), gd.get(), 0.1, 0.9, 0), BRAID_ERR_DTYPE,
              "braid_sgd_momentum_update");

  braid_adam_params p = BRAID_ADAM_PARAMS_INIT;
  CHECK_FAILS(braid_adam_update(nullptr, g.get(), m.get(), v.get(), &p), BRAID_ERR_INVALID_ARGUMENT,
              "braid_adam_update");
  CHECK_FAILS(braid_adam_update(w.get(), g.get(), m.get(), nullptr, &p), BRAID_ERR_INVALID_ARGUMENT,
              "braid_adam_update");
  CHECK_FAILS(braid_adam_update(w.get(), g.get(), g5.get(), v.get(), &p), BRAID_ERR_SHAPE, "braid_adam_update");
  CHECK_FAILS(braid_adam_update(w.get(), g.get(), m.get(), gd.get(), &p), BRAID_ERR_DTYPE, "braid_adam_update");
  braid_adam_params step0 = p;
  step0.step = 0;  // bias correction is 1-based
  CHECK_FAILS(braid_adam_update(w.get(), g.get(), m.get(), v.get(), &step0), BRAID_ERR_INVALID_ARGUMENT,
              "braid_adam_update");
  CHECK(braid_adam_update(w.get(), g.get(), m.get(), v.get(), &p) == BRAID_OK);
}

// Found by tests/fuzz (libFuzzer over the C API), each once a crash, an overflow or a load of an
// invalid enum under ASan+UBSan.
TEST_CASE("errors: shapes, sizes and enums the fuzzer found") {
  Out o;
  // An empty tensor whose other dimensions multiply past int64: refused, as NumPy refuses it, since
  // ops form products of those dimensions (strides, rows * cols).
  const int64_t empty_huge[] = {0, int64_t{1} << 40, int64_t{1} << 40};
  CHECK_FAILS(braid_full(errors::ctx(), 0, BRAID_FLOAT32, 3, empty_huge, 1.0, o.p()), BRAID_ERR_OUT_OF_MEMORY,
              "braid_full");
  // An empty tensor with ordinary dimensions still works, through ops that divide by its sizes.
  const int64_t empty[] = {2, 3, 0};
  braid_tensor e = nullptr;
  REQUIRE(braid_full(errors::ctx(), 0, BRAID_FLOAT32, 3, empty, 1.0, &e) == BRAID_OK);
  braid_tensor sm = nullptr;
  CHECK(braid_softmax(e, 1, 0, &sm) == BRAID_OK);  // softmax over axis 1 of [2, 3, 0]: inner size 0
  CHECK(braid_tensor_wait_to_read(sm) == BRAID_OK);
  braid_tensor_release(sm);
  braid_tensor_release(e);
  // An empty tensor whose other dimensions reach int64's limit: the kernel must not form their
  // products (the CPU backend's softmax overflowed computing its column blocks).
  const int64_t empty_long[] = {0, 1, INT64_MAX};
  REQUIRE(braid_tensor_empty(errors::ctx(), 0, BRAID_FLOAT32, 3, empty_long, &e) == BRAID_OK);
  CHECK(braid_softmax(e, 1, 0, &sm) == BRAID_OK);
  CHECK(braid_tensor_wait_to_read(sm) == BRAID_OK);
  braid_tensor_release(sm);
  braid_tensor_release(e);
  // Concatenating empty tensors whose axis sizes add up past int64.
  const int64_t wide[] = {0, INT64_MAX / 2 + 1};
  braid_tensor w = nullptr;
  REQUIRE(braid_full(errors::ctx(), 0, BRAID_FLOAT32, 2, wide, 0.0, &w) == BRAID_OK);
  braid_tensor pair[2] = {w, w};
  CHECK_FAILS(braid_concat(2, pair, 1, o.p()), BRAID_ERR_SHAPE, "braid_concat");
  braid_tensor_release(w);
  // matmul of two empty operands whose outer sizes multiply past int64 ([huge, 0] @ [0, huge]).
  const int64_t left[] = {INT64_MAX / 2, 0}, right[] = {0, INT64_MAX / 2};
  braid_tensor l = nullptr, r = nullptr;
  REQUIRE(braid_tensor_empty(errors::ctx(), 0, BRAID_FLOAT32, 2, left, &l) == BRAID_OK);
  REQUIRE(braid_tensor_empty(errors::ctx(), 0, BRAID_FLOAT32, 2, right, &r) == BRAID_OK);
  CHECK_FAILS(braid_matmul(l, r, 0, 0, o.p()), BRAID_ERR_OUT_OF_MEMORY, "braid_matmul");
  braid_tensor_release(l);
  braid_tensor_release(r);
  // More bytes than the device has: refused at the call, before the backend is asked.
  const int64_t beyond[] = {int64_t{1} << 20, int64_t{1} << 20, int64_t{1} << 10};  // 4 PiB of float32
  CHECK_FAILS(braid_tensor_empty(errors::ctx(), 0, BRAID_FLOAT32, 3, beyond, o.p()), BRAID_ERR_OUT_OF_MEMORY,
              "braid_tensor_empty");
  // An out-of-range dtype from a C caller: a status, read as an integer (no invalid enum load).
  const int64_t two[] = {2};
  CHECK_FAILS(braid_random_uniform(errors::ctx(), 0, static_cast<braid_dtype>(-1), 1, two, 0.0, 1.0, o.p()),
              BRAID_ERR_INVALID_ARGUMENT, "braid_random_uniform");
}

// A struct_size that ends inside a field is no version of the struct: refused, not read as the
// caller's first bytes of that field spliced into its default. One that ends after a whole field is
// an older caller's: the fields after it keep their defaults.
TEST_CASE("errors: a struct_size that ends inside a field") {
  Out o;
  const auto x = tensor(0, BRAID_FLOAT32, {1, 1, 4, 4}), w = tensor(0, BRAID_FLOAT32, {1, 1, 3, 3});
  braid_conv2d_params p = BRAID_CONV2D_PARAMS_INIT;
  p.stride[0] = p.stride[1] = 258;
  p.struct_size = 5;  // one byte of stride[0]
  CHECK_FAILS(braid_conv2d(x.get(), w.get(), nullptr, &p, o.p()), BRAID_ERR_INVALID_ARGUMENT, "inside a field");
  p.stride[0] = p.stride[1] = 1, p.padding[0] = p.padding[1] = 7;
  p.struct_size = offsetof(braid_conv2d_params, padding);  // padding keeps its default, 0
  REQUIRE(braid_conv2d(x.get(), w.get(), nullptr, &p, o.p()) == BRAID_OK);
  int64_t dims[BRAID_MAX_DIMS] = {};
  REQUIRE(braid_tensor_shape(o.get(), dims) == BRAID_OK);
  CHECK((dims[2] == 2 && dims[3] == 2));  // 4x4 by 3x3 without padding
  const auto m = tensor(0, BRAID_FLOAT32, {4}), v = tensor(0, BRAID_FLOAT32, {4});
  braid_adam_params a = BRAID_ADAM_PARAMS_INIT;
  a.struct_size = offsetof(braid_adam_params, lr) + 4;
  CHECK_FAILS(braid_adam_update(m.get(), m.get(), v.get(), v.get(), &a), BRAID_ERR_INVALID_ARGUMENT, "inside a field");
  // Adam's beta1 and beta2 in the optimizer parameters (the field list once lacked them).
  braid_kvstore kv = nullptr;
  REQUIRE(braid_kvstore_create(errors::ctx(), "local", &kv) == BRAID_OK);
  for (const size_t inside :
       {offsetof(braid_optimizer_params, beta1) + 4, offsetof(braid_optimizer_params, beta2) + 2}) {
    braid_optimizer_params op = BRAID_OPTIMIZER_PARAMS_INIT;
    op.struct_size = static_cast<uint32_t>(inside);
    CHECK_FAILS(braid_kvstore_set_optimizer(kv, &op), BRAID_ERR_INVALID_ARGUMENT, "inside a field");
  }
  braid_optimizer_params op = BRAID_OPTIMIZER_PARAMS_INIT;
  op.struct_size = offsetof(braid_optimizer_params, beta2);  // an older caller's: beta2 onwards keep defaults
  CHECK(braid_kvstore_set_optimizer(kv, &op) == BRAID_OK);
  REQUIRE(braid_kvstore_release(kv) == BRAID_OK);
}
