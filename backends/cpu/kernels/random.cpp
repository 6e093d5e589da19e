// RANDOM_UNIFORM, RANDOM_NORMAL, DROPOUT from the counter-based Philox-4x32-10 stream specified in
// braid_backend.h. Element i's value depends only on (seed, draw, i), so any chunking gives the same
// bits; each chunk starts at the window holding its first element. Words come a window (kBatch blocks)
// at a time so that generation and conversion are plain array loops.
#include "common.h"
// (common.h first: see the note at its top)
#include <cmath>
#include <numbers>

#include "vmath.h"

namespace braid::cpu::kern {
namespace {

constexpr int kBatch = 32;              // Philox blocks per window
constexpr int64_t kWords = 4 * kBatch;  // words per window

struct Key {
  uint32_t k0, k1, d0, d1;  // seed halves, draw halves
  Key(uint64_t seed, uint64_t draw)
      : k0(uint32_t(seed)), k1(uint32_t(seed >> 32)), d0(uint32_t(draw)), d1(uint32_t(draw >> 32)) {}
};

// Words of Philox-4x32-10 blocks [j0, j0 + kBatch) into w[4 b + k]. The rounds run across the blocks
// (structure of arrays), which vectorises: 32x32->64-bit multiplies are pmuludq.
BRAID_HOT void philox_window(const Key& key, uint64_t j0, uint32_t* __restrict w) {
  uint32_t c0[kBatch], c1[kBatch], c2[kBatch], c3[kBatch];
  for (int b = 0; b < kBatch; ++b) {
    const uint64_t j = j0 + uint64_t(b);
    c0[b] = uint32_t(j);
    c1[b] = uint32_t(j >> 32);
    c2[b] = key.d0;
    c3[b] = key.d1;
  }
  uint32_t k0 = key.k0, k1 = key.k1;
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    for (int b = 0; b < kBatch; ++b) {
      const uint64_t p0 = uint64_t(0xD2511F53u) * c0[b];
      const uint64_t p1 = uint64_t(0xCD9E8D57u) * c2[b];
      const uint32_t n0 = uint32_t(p1 >> 32) ^ c1[b] ^ k0;
      const uint32_t n2 = uint32_t(p0 >> 32) ^ c3[b] ^ k1;
      c1[b] = uint32_t(p1);
      c3[b] = uint32_t(p0);
      c0[b] = n0;
      c2[b] = n2;
    }
  }
  for (int b = 0; b < kBatch; ++b) {
    w[4 * b + 0] = c0[b];
    w[4 * b + 1] = c1[b];
    w[4 * b + 2] = c2[b];
    w[4 * b + 3] = c3[b];
  }
}

inline double unit(uint32_t w) { return (double(w) + 0.5) * 0x1p-32; }  // in (0, 1)

// Walks out's elements [begin, end) in logical order, handing fill(dst, stride, first, n) runs of at
// most `per` elements that never cross a multiple of `per` (one window of the generator).
template <class T, class Fill>
void for_each_piece(const Layout<1>& L, T* o, int64_t begin, int64_t end, int64_t per, Fill&& fill) {
  int64_t pos = begin;
  const int64_t s = L.inner_stride(0);
  for_each_row(L, begin, end, [&](const int64_t* off, int64_t count) {
    for (int64_t k = 0; k < count;) {
      const int64_t n = std::min(count - k, per - pos % per);
      fill(o + off[0] + k * s, s, pos, n);
      k += n;
      pos += n;
    }
  });
}

// Uniform: element i is word i of the stream.
template <class T>
BRAID_HOT void uniform_run(T* __restrict y, int64_t s, const uint32_t* __restrict w, int64_t n, double low,
                           double span) {
  if (s == 1)
    for (int64_t i = 0; i < n; ++i) y[i] = T(low + span * unit(w[i]));
  else
    for (int64_t i = 0; i < n; ++i) y[i * s] = T(low + span * unit(w[i]));
}

// cos and sin of 2 pi u, u in (0, 1). The quadrant comes exactly from u (a multiple of 2^-33), leaving
// |a| <= pi/4 for fdlibm's kernel polynomials (__kernel_sin/__kernel_cos); < 1 ulp, vectorises.
inline void sincos_2pi(double u, double& c, double& s) {
  const double qd = std::nearbyint(4.0 * u);  // 0..4; 4 wraps to 0
  const int q = int(qd) & 3;
  const double a = (u - 0.25 * qd) * (2.0 * std::numbers::pi);
  const double z = a * a;
  const double sr =
      z * (8.33333333332248946124e-03 +
           z * (-1.98412698298579493134e-04 +
                z * (2.75573137070700676789e-06 + z * (-2.50507602534068634195e-08 + z * 1.58969099521155010221e-10))));
  const double sn = a + a * z * (-1.66666666666666324348e-01 + sr);
  const double cr = z * (4.16666666666666019037e-02 +
                         z * (-1.38888888888741095749e-03 +
                              z * (2.48015872894767294178e-05 +
                                   z * (-2.75573143513906633035e-07 +
                                        z * (2.08757232129817482790e-09 + z * -1.13596475577881948265e-11)))));
  const double hz = 0.5 * z, w = 1.0 - hz;
  const double cs = w + (((1.0 - w) - hz) + z * cr);
  // cos(q pi/2 + a), sin(q pi/2 + a)
  c = q == 0 ? cs : q == 1 ? -sn : q == 2 ? -cs : sn;
  s = q == 0 ? sn : q == 1 ? cs : q == 2 ? -sn : -cs;
}

// Normal: block j gives elements 2j (cos) and 2j+1 (sin) by Box-Muller on its words 0 and 1. libm's
// log/sin/cos cost ~50 ns a pair; these polynomials vectorise. The square roots stay a loop of their
// own: std::sqrt only vectorises under -fno-math-errno (see v_sqrt), and must not block the rest.
BRAID_HOT void normal_window(const uint32_t* __restrict w, double mean, double stddev, double* __restrict z) {
  double r[kBatch], c[kBatch], s[kBatch];
  for (int b = 0; b < kBatch; ++b) r[b] = -2.0 * log_f64_normal(unit(w[4 * b]));
  for (int b = 0; b < kBatch; ++b) r[b] = v_sqrt(r[b]);
  for (int b = 0; b < kBatch; ++b) sincos_2pi(unit(w[4 * b + 1]), c[b], s[b]);
  for (int b = 0; b < kBatch; ++b) {
    z[2 * b] = mean + stddev * (r[b] * c[b]);
    z[2 * b + 1] = mean + stddev * (r[b] * s[b]);
  }
}

template <class T>
void random_typed(Exec& ex, const Call& c) {
  const auto& out = c.outputs[0];
  const Key key(uint64_t(c.i[0]), uint64_t(c.i[1]));
  const Layout<1> L = layout_of(out);
  T* o = data_of<T>(out);
  const bool normal = c.op == BRAID_KOP_RANDOM_NORMAL;
  const double a = c.f[0], b = normal ? c.f[1] : c.f[1] - c.f[0];
  parallel(ex, L.numel, kGrainHeavy, [&](int64_t begin, int64_t end) {
    alignas(64) uint32_t w[kWords];
    alignas(64) double z[2 * kBatch];
    if (!normal) {
      for_each_piece(L, o, begin, end, kWords, [&](T* dst, int64_t s, int64_t first, int64_t n) {
        const int64_t base = first - first % kWords;  // windows start at multiples of kWords
        if (first == begin || first % kWords == 0) philox_window(key, uint64_t(base / 4), w);
        uniform_run(dst, s, w + (first - base), n, a, b);
      });
    } else {
      const int64_t per = 2 * kBatch;  // elements per window
      for_each_piece(L, o, begin, end, per, [&](T* dst, int64_t s, int64_t first, int64_t n) {
        const int64_t base = first - first % per;
        if (first == begin || first % per == 0) {
          philox_window(key, uint64_t(base / 2), w);
          normal_window(w, a, b, z);
        }
        for (int64_t i = 0; i < n; ++i) dst[i * s] = T(z[first - base + i]);
      });
    }
  });
}

// Dropout keeps element i when u_i >= p, i.e. (w + 0.5) 2^-32 >= p, i.e. w >= ceil(p 2^32 - 0.5):
// an exact integer threshold (p 2^32 - 0.5 is exact in double for p <= 1).
template <class T>
// y may be x (in place: a planned graph reuses the input's bytes), so neither is __restrict.
BRAID_HOT void dropout_run(T* y, T* __restrict m, const T* x, int64_t sy, int64_t sm, int64_t sx,
                           const uint32_t* __restrict w, int64_t n, uint64_t thr, double scale) {
  if (sy == 1 && sm == 1 && sx == 1) {
    for (int64_t i = 0; i < n; ++i) {
      const bool keep = uint64_t(w[i]) >= thr;
      const T xv = x[i];  // read before writing: y may alias x (in-place dropout)
      if (m) m[i] = keep ? T(1) : T(0);
      y[i] = keep ? T(double(xv) * scale) : xv * T(0);  // x * 0, as PyTorch: NaN where x is inf or NaN
    }
  } else {
    for (int64_t i = 0; i < n; ++i) {
      const bool keep = uint64_t(w[i]) >= thr;
      const T xv = x[i * sx];
      if (m) m[i * sm] = keep ? T(1) : T(0);
      y[i * sy] = keep ? T(double(xv) * scale) : xv * T(0);
    }
  }
}

template <class T>
void dropout_typed(Exec& ex, const Call& c) {
  const auto& x = c.inputs[0];
  const auto& y = c.outputs[0];
  const bool has_mask = c.num_outputs >= 2;
  const braid_buffer_view& mask = has_mask ? c.outputs[1] : c.outputs[0];
  const double p = c.f[0];
  const double scale = p < 1.0 ? 1.0 / (1.0 - p) : 0.0;
  const uint64_t thr = p <= 0.0 ? 0 : p >= 1.0 ? (uint64_t{1} << 32) : uint64_t(std::ceil(std::ldexp(p, 32) - 0.5));
  const Key key(uint64_t(c.i[0]), uint64_t(c.i[1]));
  const Layout<3> L = layout_of(y, mask, x);
  T* yp = data_of<T>(y);
  T* mp = data_of<T>(mask);
  const T* xp = data_of<const T>(x);
  const int64_t sy = L.inner_stride(0), sm = L.inner_stride(1), sx = L.inner_stride(2);
  parallel(ex, L.numel, kGrain, [&](int64_t begin, int64_t end) {
    alignas(64) uint32_t w[kWords];
    int64_t pos = begin;
    for_each_row(L, begin, end, [&](const int64_t* off, int64_t count) {
      for (int64_t k = 0; k < count;) {
        const int64_t base = pos - pos % kWords, n = std::min(count - k, base + kWords - pos);
        if (pos == begin || pos % kWords == 0) philox_window(key, uint64_t(base / 4), w);
        dropout_run(yp + off[0] + k * sy, has_mask ? mp + off[1] + k * sm : nullptr, xp + off[2] + k * sx, sy, sm, sx,
                    w + (pos - base), n, thr, scale);
        k += n;
        pos += n;
      }
    });
  });
}

}  // namespace

KernelResult k_random(const Call& c, Exec& ex) {
  visit_dtype(FloatTypes{}, c.outputs[0].dtype, [&]<class T>(Tag<T>) { random_typed<T>(ex, c); });
  return {};
}

// y = x * keep / (1 - p), mask = keep.
KernelResult k_dropout(const Call& c, Exec& ex) {
  visit_dtype(FloatTypes{}, c.inputs[0].dtype, [&]<class T>(Tag<T>) { dropout_typed<T>(ex, c); });
  return {};
}

}  // namespace braid::cpu::kern
