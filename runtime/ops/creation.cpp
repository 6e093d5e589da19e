// Creation ops: full, arange and the counter-based random generators.
#include <cmath>
#include <limits>

#include "ops/call.h"
#include "ops/entry.h"
#include "ops/op_builder.h"

using namespace braid;

namespace {

braid_status random_op(const char* name, braid_kernel_op kop, braid_context ctx, braid_device device,
                       const braid_dtype& dtype, int32_t ndim, const int64_t* shape, double a, double b,
                       braid_tensor* out) {
  return guard(name, [&] {
    require(out, "out");
    *out = nullptr;
    OpBuilder op(name, kop);
    op.on_device(ctx, device);
    check_dtype(dtype, "dtype");
    if (!dtype_is_float(dtype)) fail(BRAID_ERR_DTYPE, "dtype must be float32 or float64, not ", dtype_name(dtype));
    const bool uniform = kop == BRAID_KOP_RANDOM_UNIFORM;
    const char* a_name = uniform ? "low" : "mean";
    const char* b_name = uniform ? "high" : "stddev";
    if (!std::isfinite(a)) fail(BRAID_ERR_INVALID_ARGUMENT, a_name, " must be finite, got ", a);
    if (!std::isfinite(b)) fail(BRAID_ERR_INVALID_ARGUMENT, b_name, " must be finite, got ", b);
    if (!uniform && b < 0) fail(BRAID_ERR_INVALID_ARGUMENT, "stddev must be non-negative, got ", b);
    // As torch.Tensor.uniform_: low > high is refused here rather than drawn from a reversed range
    // (the kernels compute low + u * (high - low)), and high - low must itself be finite.
    if (uniform && a > b) fail(BRAID_ERR_INVALID_ARGUMENT, "low (", a, ") must not exceed high (", b, ")");
    if (uniform && !std::isfinite(b - a))
      fail(BRAID_ERR_INVALID_ARGUMENT, "high - low overflows (low ", a, ", high ", b, ")");
    // In float32 the parameters must be float32 values too (torch's "from is out of bounds for
    // float"): -1e300 and 1e300 would draw nothing but infinities.
    if (dtype == BRAID_FLOAT32) {
      const double most = std::numeric_limits<float>::max();
      if (std::abs(a) > most) fail(BRAID_ERR_INVALID_ARGUMENT, a_name, " (", a, ") is out of float32's range");
      if (std::abs(b) > most) fail(BRAID_ERR_INVALID_ARGUMENT, b_name, " (", b, ") is out of float32's range");
      if (uniform && b - a > most)
        fail(BRAID_ERR_INVALID_ARGUMENT, "high - low overflows float32 (low ", a, ", high ", b, ")");
    }
    Shape s = Shape::from(ndim, shape, "shape");
    op.require_kernel(dtype);
    op.output(dtype, s);
    op.set_random_draw();
    op.call().f[0] = a;
    op.call().f[1] = b;
    op.push();
    *out = op.release_output(0);
  });
}

// A fill value the dtype cannot hold is refused, as torch.full refuses it ("cannot be converted
// without overflow") and as braid_binary_scalar refuses such a scalar, rather than stored as something
// else: NaN or an infinity in an integer dtype, an integer dtype's value outside its range (after the
// truncation toward zero that a fractional value gets, as in PyTorch), a finite value that would round
// to infinity in a float dtype.
void check_fill_value(braid_dtype dtype, double value) {
  const auto refuse = [&](const char* why) {
    fail(BRAID_ERR_INVALID_ARGUMENT, "full: value ", value, " ", why, " ", dtype_name(dtype));
  };
  if (dtype_is_integer(dtype)) {
    if (!std::isfinite(value)) refuse("is not a number of");
    const double t = std::trunc(value);
    const double lo = dtype == BRAID_UINT8 ? 0.0 : dtype == BRAID_INT32 ? -2147483648.0 : -9223372036854775808.0;
    const double hi_excl = dtype == BRAID_UINT8 ? 256.0 : dtype == BRAID_INT32 ? 2147483648.0 : 9223372036854775808.0;
    if (t < lo || t >= hi_excl) refuse("is outside the range of");
    return;
  }
  // The smallest magnitude that rounds to infinity: the largest finite value plus half its ulp.
  const double overflow = dtype == BRAID_FLOAT32    ? 3.4028235677973366e38
                          : dtype == BRAID_FLOAT16  ? 65520.0
                          : dtype == BRAID_BFLOAT16 ? 3.3961775292304957e38
                                                    : std::numeric_limits<double>::infinity();
  if (std::isfinite(value) && std::fabs(value) >= overflow) refuse("overflows");
}

}  // namespace

void entry::full(braid_context ctx, braid_device device, const braid_dtype& dtype, int32_t ndim, const int64_t* shape,
                 double value, braid_tensor* out) {
  require(out, "out");
  *out = nullptr;
  OpBuilder op("full", BRAID_KOP_FILL);
  op.on_device(ctx, device);
  Device& dev = op.device();
  check_dtype(dtype, "dtype");
  Shape s = Shape::from(ndim, shape, "shape");
  check_fill_value(dtype, value);
  if (dtype == BRAID_BOOL) value = value != 0.0 ? 1.0 : 0.0;  // NumPy's bool(x): nonzero (NaN too) is true
  // A 16-bit float dtype the device has no fill for (Vulkan's are copies and casts only): filled in
  // a wider float and cast, which rounds the value once, as a fill in it would. float32 (twice the
  // result's bytes) where it holds the value exactly, else float64 where the device has it (four
  // times: 0.1 would round to float32 first); float32 rounds twice there on a device without it.
  if ((dtype == BRAID_FLOAT16 || dtype == BRAID_BFLOAT16) && !dev.supports(BRAID_KOP_FILL, dtype)) {
    const bool exact32 = static_cast<double>(static_cast<float>(value)) == value || std::isnan(value);
    const braid_dtype wide =
        !exact32 && dev.supports(BRAID_KOP_FILL, BRAID_FLOAT64) && dev.supports(BRAID_KOP_COPY, BRAID_FLOAT64)
            ? BRAID_FLOAT64
            : BRAID_FLOAT32;
    const TensorRef filled = braid::op::run(entry::full, ctx, device, wide, ndim, shape, value);
    *out = braid::op::cast(filled.get(), dtype).release();
    return;
  }
  op.require_kernel(dtype);
  op.output(dtype, s);
  op.call().f[0] = value;
  op.push();
  *out = op.release_output(0);
}

BRAID_API braid_status braid_full(braid_context ctx, braid_device device, braid_dtype dtype, int32_t ndim,
                                  const int64_t* shape, double value, braid_tensor* out) {
  return guard("braid_full", [&] { entry::full(ctx, device, dtype, ndim, shape, value, out); });
}

BRAID_API braid_status braid_arange(braid_context ctx, braid_device device, braid_dtype dtype, double start,
                                    double stop, double step, braid_tensor* out) {
  return guard("braid_arange", [&] {
    require(out, "out");
    *out = nullptr;
    OpBuilder op("arange", BRAID_KOP_ARANGE);
    op.on_device(ctx, device);
    check_dtype(dtype, "dtype");
    // The storage types have no arange kernel: it runs in the computing dtype of their kind, then is
    // cast (torch.arange takes them too).
    const braid_dtype computed = dtype == BRAID_UINT8                                 ? BRAID_INT32
                                 : dtype_is_floating(dtype) && !dtype_is_float(dtype) ? BRAID_FLOAT32
                                                                                      : dtype;
    if (step == 0 || !std::isfinite(start) || !std::isfinite(stop) || !std::isfinite(step))
      fail(BRAID_ERR_INVALID_ARGUMENT, "start, stop and step must be finite and step non-zero");
    // A step that truncates to 0 in an integer dtype is refused first (the length it would give, from
    // the step as given, may be huge: that is not what is wrong).
    if (dtype_is_integer(dtype) && std::trunc(step) == 0)
      fail(BRAID_ERR_INVALID_ARGUMENT, "arange: step ", step, " is 0 in ", dtype_name(dtype), " (as torch.arange)");
    const auto fits_int64 = [](double v) { return v >= -0x1p63 && v < 0x1p63; };
    // As torch.arange in int64: start, stop and step are truncated first, then the length taken, so
    // every value lies in [start, stop) ((-0.9, 3, 1) is [0, 1, 2]). The narrower integer dtypes take
    // the length from the arguments as given, as torch does for them ((-0.9, 3, 1) is [0, 1, 2, 3]).
    if (dtype == BRAID_INT64) {
      start = std::trunc(start);
      stop = std::trunc(stop);
      step = std::trunc(step);
    }
    double count = std::ceil((stop - start) / step);
    if (dtype == BRAID_INT64 && fits_int64(start) && fits_int64(stop) && fits_int64(step)) {
      // In integers: (-1, 2^60, 2^40) has 2^20 + 1 values, 2^20 in doubles.
      const __int128 span = __int128{static_cast<int64_t>(stop)} - static_cast<int64_t>(start);
      const __int128 by = static_cast<int64_t>(step);
      __int128 q = span / by;
      if (span % by != 0 && (span > 0) == (by > 0)) ++q;  // the ceiling
      count = static_cast<double>(q);
    }
    if (count > 1e15) fail(BRAID_ERR_OUT_OF_MEMORY, "arange of ", count, " elements is too large");
    int64_t n = count > 0 ? static_cast<int64_t>(count) : 0;
    if (dtype_is_integer(dtype)) {
      // The values come from start and step converted to the integer dtype (arange(-3, 3, 2.5) is
      // [-3, -1, 1]); a value outside the dtype is refused (it would be clamped). The check is exact:
      // int64 values pass 2^53, where doubles skip integers.
      start = std::trunc(start);
      step = std::trunc(step);
      const __int128 limit = dtype == BRAID_INT32   ? __int128{INT32_MAX} + 1
                             : dtype == BRAID_UINT8 ? __int128{256}
                                                    : __int128{INT64_MAX} + 1;
      const __int128 low = dtype == BRAID_UINT8 ? 0 : -limit;
      const bool start_fits = fits_int64(start), step_fits = fits_int64(step);
      const __int128 first = start_fits ? __int128{static_cast<int64_t>(start)} : limit;
      const __int128 last = n > 0 && step_fits ? first + __int128{n - 1} * static_cast<int64_t>(step) : first;
      if (n > 0 && !(start_fits && step_fits && first >= low && first < limit && last >= low && last < limit))
        fail(BRAID_ERR_INVALID_ARGUMENT, "arange: values from ", start, " to ", start + double(n - 1) * step,
             " do not fit ", dtype_name(dtype));
    }
    op.require_kernel(computed);
    op.output(computed, Shape::of({&n, 1}));
    op.call().f[0] = start;
    op.call().f[1] = step;
    op.push();
    *out = op.release_output(0);
    if (computed != dtype) {
      const TensorRef values(*out);
      *out = nullptr;
      *out = braid::op::cast(values.get(), dtype).release();
    }
  });
}

BRAID_API braid_status braid_random_uniform(braid_context ctx, braid_device device, braid_dtype dtype, int32_t ndim,
                                            const int64_t* shape, double low, double high, braid_tensor* out) {
  return random_op("braid_random_uniform", BRAID_KOP_RANDOM_UNIFORM, ctx, device, dtype, ndim, shape, low, high, out);
}

BRAID_API braid_status braid_random_normal(braid_context ctx, braid_device device, braid_dtype dtype, int32_t ndim,
                                           const int64_t* shape, double mean, double stddev, braid_tensor* out) {
  return random_op("braid_random_normal", BRAID_KOP_RANDOM_NORMAL, ctx, device, dtype, ndim, shape, mean, stddev, out);
}
