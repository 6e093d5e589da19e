// The one table of tolerances of the conformance suite. A device result `got` matches the float64
// reference `want` when |got - want| <= tol * max(1, |want|): relative for large values, absolute
// near zero (inputs are O(1), so an absolute floor of tol is the same order as one relative error).
// tol = 0 demands bit equality.
//
// Why each bound (u = unit roundoff: 2^-24 ~ 6e-8 for float32, 2^-53 ~ 1.1e-16 for float64):
//  exact       no arithmetic (fill, copy, cast to a wider or integer type of an integral value,
//              layout ops, comparisons, max/min, relu/neg/abs/sign, argmax, integer ops): any
//              difference is a bug.
//  rounded     one correctly rounded operation (+ - * / square, casts to a narrower float): the only
//              error is the output rounding, <= u relative. We allow 2u for FMA contraction.
//  transcend   exp/log/sqrt/sigmoid/tanh/pow: vectorised math libraries are accurate to a few ulp,
//              not correctly rounded; float32 SIMD versions (SLEEF-class) to ~4 ulp = 2.4e-7.
//  reduction   sum/mean/norm, softmax, batch norm: summation order differs per device (tree,
//              pairwise, per-thread partial sums), error grows like log2(n) * u * sum|x|; n <= ~4k.
//  gemm        matmul and conv2d: dot products of length K <= ~300 accumulated in blocks and with
//              FMA by BLAS; error ~ K * u in the worst case, far less in practice.
//  rng         compared with the reference rounded to the output dtype, since braid_backend.h says
//              values are computed in double, then rounded. Uniform is one multiply-add: float32
//              must be bit-exact; float64 may differ by an ulp where the device contracts it to an
//              FMA. Normal adds log/sqrt/cos/sin, whose libm results may differ by an ulp between
//              devices: one float32 ulp, or ~1000 float64 ulps.
//  compound    a handful of dependent roundings per element: optimizer updates (Adam has sqrt and
//              divide, and m, v are stored in the dtype between steps), dropout's x*mask/(1-p),
//              arange computed in the output dtype (k*step then +start, with step itself rounded).
#pragma once

#include "braid.h"

namespace tol {

enum class Kind { exact, rounded, transcend, reduction, gemm, rng_uniform, rng_normal, compound };

// Returns the bound for results of this dtype. Integer dtypes are always exact.
constexpr double of(Kind kind, braid_dtype dtype) {
  const bool f32 = dtype == BRAID_FLOAT32;
  if (dtype != BRAID_FLOAT32 && dtype != BRAID_FLOAT64) return 0.0;
  switch (kind) {
    case Kind::exact: return 0.0;
    case Kind::rounded: return f32 ? 1.2e-7 : 2.3e-16;
    case Kind::transcend: return f32 ? 1e-6 : 1e-12;
    case Kind::reduction: return f32 ? 1e-5 : 1e-12;
    case Kind::gemm: return f32 ? 1e-4 : 1e-12;
    case Kind::rng_uniform: return f32 ? 0.0 : 2.3e-16;
    case Kind::rng_normal: return f32 ? 1.2e-7 : 1e-13;
    case Kind::compound: return f32 ? 1e-6 : 1e-13;
  }
  return 0.0;
}

}  // namespace tol
