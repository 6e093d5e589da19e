// SGD_UPDATE, SGD_MOMENTUM, ADAM_UPDATE: in place, one fused pass each (formulas in braid.h), through
// map() so dense parameters take the vectorised path. Arithmetic is in the parameter dtype with the
// step-dependent constants (bias corrections) computed once in double.
#include "common.h"
// (common.h first: see the note at its top)
#include <cmath>

#include "vmath.h"

namespace braid::cpu::kern {

KernelResult k_sgd(const Call& c, Exec& ex) {
  const auto &w = c.inputs[0], &g = c.inputs[1];
  visit_dtype(FloatTypes{}, w.dtype, [&]<class T>(Tag<T>) {
    const T lr = T(c.f[0]), wd = T(c.f[1]);
    map(
        ex, layout_of(w, g), kGrain, [lr, wd](T& wv, T gv) { wv -= lr * (gv + wd * wv); }, data_of<T>(w),
        data_of<const T>(g));
  });
  return {};
}

KernelResult k_sgd_momentum(const Call& c, Exec& ex) {
  const auto &w = c.inputs[0], &g = c.inputs[1], &mom = c.inputs[2];
  visit_dtype(FloatTypes{}, w.dtype, [&]<class T>(Tag<T>) {
    const T lr = T(c.f[0]), mu = T(c.f[1]), wd = T(c.f[2]);
    map(
        ex, layout_of(w, g, mom), kGrain,
        [lr, mu, wd](T& wv, T gv, T& mv) {
          mv = mu * mv - lr * (gv + wd * wv);
          wv += mv;
        },
        data_of<T>(w), data_of<const T>(g), data_of<T>(mom));
  });
  return {};
}

KernelResult k_adam(const Call& c, Exec& ex) {
  const auto &w = c.inputs[0], &g = c.inputs[1], &m = c.inputs[2], &v = c.inputs[3];
  const double b1 = c.f[1], b2 = c.f[2];
  const double t = double(std::max<int64_t>(c.i[0], 1));
  visit_dtype(FloatTypes{}, w.dtype, [&]<class T>(Tag<T>) {
    const T lr = T(c.f[0]), eps = T(c.f[3]), wd = T(c.f[4]);
    const T beta1 = T(b1), beta2 = T(b2), one_b1 = T(1.0 - b1), one_b2 = T(1.0 - b2);
    const T corr1 = T(1.0 / (1.0 - std::pow(b1, t))), corr2 = T(1.0 / (1.0 - std::pow(b2, t)));
    map(
        ex, layout_of(w, g, m, v), kGrain,
        [=](T& wv, T gv, T& mv, T& vv) {
          const T gd = gv + wd * wv;
          mv = beta1 * mv + one_b1 * gd;
          vv = beta2 * vv + one_b2 * gd * gd;
          wv -= lr * (mv * corr1) / (v_sqrt(vv * corr2) + eps);
        },
        data_of<T>(w), data_of<const T>(g), data_of<T>(m), data_of<T>(v));
  });
  return {};
}

}  // namespace braid::cpu::kern
