// A float64 reference implementation of every op in braid.h, written as naive loops so that it is
// obviously right rather than fast. The conformance suite computes each case here and on every device
// and compares (tolerance.h says how closely). Nothing here calls braid; braid.h is included only for
// its enums, so the reference uses the same op numbering as the API.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "braid.h"

namespace ref {

using Shape = std::vector<int64_t>;

// A dense row-major array of doubles. A 0-d array (shape {}) holds one value.
struct Array {
  Shape shape;
  std::vector<double> data;

  Array() = default;
  Array(Shape s, std::vector<double> d);  // checks data.size() == numel(s)
  explicit Array(Shape s, double fill = 0.0);
  int64_t numel() const { return static_cast<int64_t>(data.size()); }
  int64_t ndim() const { return static_cast<int64_t>(shape.size()); }
  double& at(std::span<const int64_t> index);
  double at(std::span<const int64_t> index) const;
};

int64_t numel(const Shape& s);
std::vector<int64_t> strides_of(const Shape& s);  // row-major element strides
std::string to_string(const Shape& s);

// ---- rounding to storage types ----
// Rounds x to the nearest value representable in dtype (round to nearest even for floating types,
// truncation toward zero for integers, as C++ conversion does). Used to predict casts and to put test
// inputs on the grid of the dtype under test.
double round_to(braid_dtype dtype, double x);
Array round_to(braid_dtype dtype, Array a);

// ---- creation ----
Array full(const Shape& s, double value);
Array arange(double start, double stop, double step);  // ceil((stop-start)/step) elements

// Philox-4x32-10 (Salmon et al., SC'11; Random123) on one block.
std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> counter, std::array<uint32_t, 2> key);
// The braid RNG scheme of braid_backend.h: u(w) = (w + 0.5) * 2^-32 of word i%4 of block i/4.
double rng_uniform01(uint64_t seed, uint64_t draw, int64_t i);
Array random_uniform(uint64_t seed, uint64_t draw, const Shape& s, double low, double high);
Array random_normal(uint64_t seed, uint64_t draw, const Shape& s, double mean, double stddev);

// ---- elementwise ----
double unary(braid_unary_op op, double x);
double binary(braid_binary_op op, double a, double b);
Array unary(braid_unary_op op, const Array& x);
Shape broadcast_shapes(const Shape& a, const Shape& b);  // throws std::invalid_argument on mismatch
Array binary(braid_binary_op op, const Array& a, const Array& b);
Array binary_scalar(braid_binary_op op, const Array& x, double s, bool reverse);
Array where(const Array& cond, const Array& a, const Array& b);  // cond != 0 (NaN too) picks a

// ---- reductions ----
// axes empty = all; negative axes count from the end. Without keepdims reduced axes are dropped
// (all axes: a 0-d array), as in NumPy.
Array reduce(braid_reduce_op op, const Array& x, std::vector<int32_t> axes, bool keepdims);
Array argmax(const Array& x, int32_t axis, bool keepdims);  // first index of the maximum

// ---- linear algebra and layout ----
// a, b 2-D or 3-D; a 2-D side is shared by every batch. The result is 3-D if either input is.
Array matmul(const Array& a, const Array& b, bool transpose_a, bool transpose_b);
Array reshape(const Array& x, Shape s);  // one entry may be -1
Array slice(const Array& x, std::span<const int64_t> begin, std::span<const int64_t> end,
            std::span<const int64_t> step);
Array transpose(const Array& x, std::span<const int32_t> perm);
Array concat(std::span<const Array> xs, int32_t axis);

// ---- neural network ----
Array conv2d(const Array& x, const Array& w, const Array* bias, std::array<int, 2> stride, std::array<int, 2> padding);
// The gradients of conv2d's output with head dy, by x (of shape x_shape) and by w (of shape w_shape).
Array conv2d_backward_data(const Array& dy, const Array& w, const Shape& x_shape, std::array<int, 2> stride,
                           std::array<int, 2> padding);
Array conv2d_backward_weight(const Array& dy, const Array& x, const Shape& w_shape, std::array<int, 2> stride,
                             std::array<int, 2> padding);
Array pool2d(const Array& x, braid_pool_kind kind, std::array<int, 2> kernel, std::array<int, 2> stride,
             std::array<int, 2> padding, bool global);

struct BatchNormResult {
  Array y, save_mean, save_invstd;
  Array running_mean, running_var;  // after the update (unchanged in inference)
};
BatchNormResult batch_norm(const Array& x, const Array& gamma, const Array& beta, const Array& running_mean,
                           const Array& running_var, double eps, double momentum, bool training);

Array softmax(const Array& x, int32_t axis, bool log);
Array softmax_cross_entropy(const Array& logits, std::span<const int64_t> labels);

struct DropoutResult {
  Array y, mask;
};
DropoutResult dropout(const Array& x, double p, uint64_t seed, uint64_t draw);

// ---- optimizer updates (in place, formulas of braid.h) ----
void sgd_update(Array& w, const Array& g, double lr, double wd);
void sgd_momentum_update(Array& w, const Array& g, Array& mom, double lr, double momentum, double wd);
void adam_update(Array& w, const Array& g, Array& m, Array& v, double lr, double beta1, double beta2, double eps,
                 double wd, int64_t step);

}  // namespace ref
