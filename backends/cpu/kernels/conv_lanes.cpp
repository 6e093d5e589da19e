// Direct float32 convolution with output channels across the vector lanes (see conv_lanes.h).
//
// For one image and a pair of 16-channel blocks, a tile of T
// output pixels of one row lives in 2*T vector registers while every tap (c, r, s) adds
// w[block][c][r][s] (one vector load per block) times x[c][row + r][q + s] (one broadcast per pixel,
// shared by both blocks). The image and the blocks' weights stay in L1/L2; nothing is copied R*S
// times, which is what im2col costs (for LeNet's second layer, as long as the gemm itself). The price
// is the lanes past K in the last block (K = 50: 64 lanes computed), so the kernel is chosen only where
// the gemm's own M dimension is small (forward_fits). The taps are summed in a fixed order, so a run
// repeats bit for bit, whatever the core count.
//
// The kernel is compiled for AVX-512 (a GCC/Clang target attribute) and runs where cpu_features()
// finds it, so the baseline x86-64-v2 build still uses the CPU's full width.
#include "common.h"
// (common.h first: see the note at its top)
#include "conv_lanes.h"

#include <cstring>
#include <utility>
#include <vector>

#include "cpu_features.h"

namespace braid::cpu::kern::lanes {
namespace {

// Up to this many output channels: above it gemm's M dimension is wide enough for its micro-kernel
// and im2col's copy is spread over more products (measured: backends/cpu/README.md, "Convolutions").
constexpr int64_t kMaxK = 64;
// Padded image elements that stay in a 48 KiB L1 beside a block pair's weights.
constexpr int64_t kL1Image = int64_t{1} << 13;
// Padded image elements at most (copied per worker; 256 KiB, within L2).
constexpr int64_t kMaxPadded = int64_t{1} << 16;
constexpr int64_t kLanes = 16;
// Taps per kernel row the weight gradient holds in registers (two blocks each).
constexpr int kMaxTapsPerRow = 12;

struct Pass {
  const float* x;
  float* y;
  const float* w;  // packed [Kb][C][R][S][L], zero past K
  const float* b;  // packed [Kb][L], or null
  int64_t N, C, H, W, K, R, S, P, Q, sh, ph, pw, Hp, Wp, Kb;
};

// acc[kt][i] += v[kt] * x[i] for i < N: each x element broadcast once, shared by the KT blocks (the
// inner step of both passes: N output pixels of a tile, or N taps of a kernel row).
template <class V, int KT, int N>
[[gnu::always_inline]] inline void broadcast_fma(V (&acc)[KT][N], const V (&v)[KT], const float* __restrict x) {
#if defined(__clang__)
#pragma unroll
#else
#pragma GCC unroll 16
#endif
  for (int i = 0; i < N; ++i) {
    const float xv = x[i];
    for (int kt = 0; kt < KT; ++kt) acc[kt][i] += v[kt] * xv;
  }
}

// A tile: KT blocks of L channels x T consecutive output pixels of one row. xs: the padded image at
// the tile's first input column of row p*sh; out: [KT][T][L].
template <int L, int KT, int T>
[[gnu::always_inline]] inline void tile(const Pass& p, const float* __restrict xs, const float* __restrict wk,
                                        const float* __restrict bias, float* __restrict out) {
  typedef float V __attribute__((vector_size(4 * L)));
  const int64_t cs = p.Hp * p.Wp, rs = p.Wp, blk = p.C * p.R * p.S * L;
  V acc[KT][T];
  for (int kt = 0; kt < KT; ++kt) {
    V b0{};
    if (bias != nullptr) std::memcpy(&b0, bias + kt * L, sizeof(V));
    for (int t = 0; t < T; ++t) acc[kt][t] = b0;
  }
  for (int64_t c = 0; c < p.C; ++c)
    for (int64_t r = 0; r < p.R; ++r) {
      const float* xr = xs + c * cs + r * rs;
      const float* wr = wk + (c * p.R + r) * p.S * L;
      for (int64_t s = 0; s < p.S; ++s) {
        V wv[KT];
        for (int kt = 0; kt < KT; ++kt) std::memcpy(&wv[kt], wr + kt * blk + s * L, sizeof(V));
        broadcast_fma(acc, wv, xr + s);
      }
    }
  std::memcpy(out, acc, sizeof(acc));
}

template <int L, int KT, int... Ts>
[[gnu::always_inline]] inline void tile_of(int T, std::integer_sequence<int, Ts...>, const Pass& p, const float* xs,
                                           const float* wk, const float* bias, float* out) {
  (void)((T == Ts + 1 ? (tile<L, KT, Ts + 1>(p, xs, wk, bias, out), true) : false) || ...);
}

// Blocks kb0 .. kb0+KT-1 of image n (img: its padded copy), row by row, tiles of at most TMAX pixels.
template <int L, int KT, int TMAX>
[[gnu::always_inline]] inline void image_blocks(const Pass& p, int64_t n, int64_t kb0, const float* img) {
  alignas(64) float buf[KT * TMAX * L];
  const int64_t tiles = (p.Q + TMAX - 1) / TMAX;
  const float* wk = p.w + kb0 * p.C * p.R * p.S * L;
  const float* bk = p.b != nullptr ? p.b + kb0 * L : nullptr;
  for (int64_t row = 0; row < p.P; ++row) {
    int64_t q0 = 0;
    for (int64_t i = 0; i < tiles; ++i) {
      const int64_t q1 = (i + 1) * p.Q / tiles;  // tiles of equal size, within one
      const int T = static_cast<int>(q1 - q0);
      tile_of<L, KT>(T, std::make_integer_sequence<int, TMAX>{}, p, img + row * p.sh * p.Wp + q0, wk, bk, buf);
      for (int kt = 0; kt < KT; ++kt) {
        const int64_t k0 = (kb0 + kt) * L, lanes = std::min<int64_t>(L, p.K - k0);
        for (int64_t l = 0; l < lanes; ++l) {
          float* yo = p.y + ((n * p.K + k0 + l) * p.P + row) * p.Q + q0;
          const float* src = buf + kt * T * L + l;
          for (int t = 0; t < T; ++t) yo[t] = src[t * L];
        }
      }
      q0 = q1;
    }
  }
}

// Image n of x [N][C][H][W], zero-padded into pad [C][Hp][Wp]; x's own image when there is no padding.
inline const float* padded_image(const float* x, int64_t n, int64_t C, int64_t H, int64_t W, int64_t ph, int64_t pw,
                                 float* pad) {
  const float* img = x + n * C * H * W;
  if (pad == nullptr) return img;
  const int64_t Hp = H + 2 * ph, Wp = W + 2 * pw;
  std::fill_n(pad, C * Hp * Wp, 0.0f);
  for (int64_t c = 0; c < C; ++c)
    for (int64_t h = 0; h < H; ++h)
      std::memcpy(pad + (c * Hp + h + ph) * Wp + pw, img + (c * H + h) * W, sizeof(float) * W);
  return pad;
}

// Work items [b, e): item = n * pairs + j covers image n, blocks 2j and 2j+1.
template <int L, int TMAX>
[[gnu::always_inline]] inline void run_items(const Pass& p, int64_t b, int64_t e, float* pad) {
  const int64_t pairs = (p.Kb + 1) / 2;
  int64_t padded_n = -1;
  for (int64_t item = b; item < e; ++item) {
    const int64_t n = item / pairs, kb0 = 2 * (item % pairs);
    const float* img = pad != nullptr && padded_n == n ? pad : padded_image(p.x, n, p.C, p.H, p.W, p.ph, p.pw, pad);
    padded_n = n;
    if (kb0 + 1 < p.Kb)
      image_blocks<L, 2, TMAX>(p, n, kb0, img);
    else
      image_blocks<L, 1, TMAX>(p, n, kb0, img);
  }
}

// Register budget: 2*12 accumulators, two weight vectors and a broadcast within the 32 vector
// registers. (An AVX2 build of the same kernel, 8 lanes, measured no faster than im2col with an AVX2
// gemm, so AVX2 CPUs keep the im2col path; backends/cpu/README.md, "Convolutions".)
__attribute__((target("avx512f,avx2,fma"))) void run_avx512(const Pass& p, int64_t b, int64_t e, float* pad) {
  run_items<16, 12>(p, b, e, pad);
}

// ---- weight gradient ----------------------------------------------------------------------------
//
// dw[k][c][r][s] = sum over images and output pixels of dy[n][k][p][q] * x[n][c][p*sh + r][q + s], with
// k across the lanes: for one input channel c and tap row r, the S taps of two channel blocks stay in
// 2*S registers while the image's pixels stream by (dy of 16 channels at a pixel: one vector load per
// block, from a copy of the image's dy transposed to [block][P][Q][16]; each x element: one broadcast,
// shared by both blocks).

struct WeightPass {
  const float* x;
  const float* dy;
  int64_t N, C, H, W, K, R, S, P, Q, sh, ph, pw, Hp, Wp, Kb;
};

template <int L, int KT, int S>
[[gnu::always_inline]] inline void weight_row(const WeightPass& p, const float* __restrict img,
                                              const float* __restrict dyT, int64_t kb0, int64_t c, int64_t r,
                                              float* __restrict dwp) {
  typedef float V __attribute__((vector_size(4 * L)));
  const int64_t blk = p.C * p.R * S * L, pql = p.P * p.Q * L;
  float* at = dwp + ((kb0 * p.C + c) * p.R + r) * S * L;
  V acc[KT][S];
  for (int kt = 0; kt < KT; ++kt)
    for (int s = 0; s < S; ++s) std::memcpy(&acc[kt][s], at + kt * blk + s * L, sizeof(V));
  for (int64_t row = 0; row < p.P; ++row) {
    const float* xr = img + (c * p.Hp + row * p.sh + r) * p.Wp;
    const float* dr = dyT + (kb0 * p.P + row) * p.Q * L;
    for (int64_t q = 0; q < p.Q; ++q) {
      V dv[KT];
      for (int kt = 0; kt < KT; ++kt) std::memcpy(&dv[kt], dr + kt * pql + q * L, sizeof(V));
      broadcast_fma(acc, dv, xr + q);
    }
  }
  for (int kt = 0; kt < KT; ++kt)
    for (int s = 0; s < S; ++s) std::memcpy(at + kt * blk + s * L, &acc[kt][s], sizeof(V));
}

template <int L, int KT, int S>
[[gnu::always_inline]] inline void weight_image(const WeightPass& p, const float* img, const float* dyT, int64_t kb0,
                                                float* dwp) {
  for (int64_t c = 0; c < p.C; ++c)
    for (int64_t r = 0; r < p.R; ++r) weight_row<L, KT, S>(p, img, dyT, kb0, c, r, dwp);
}

template <int L, int KT, int... Ss>
[[gnu::always_inline]] inline void weight_image_of(std::integer_sequence<int, Ss...>, const WeightPass& p,
                                                   const float* img, const float* dyT, int64_t kb0, float* dwp) {
  (void)((p.S == Ss + 1 ? (weight_image<L, KT, Ss + 1>(p, img, dyT, kb0, dwp), true) : false) || ...);
}

// Images n0 .. n1-1 summed into dwp [Kb][C][R][S][L]. dyT [Kb][P][Q][L] has its lanes past K zeroed.
template <int L, int SMAX>
[[gnu::always_inline]] inline void weight_images(const WeightPass& p, int64_t n0, int64_t n1, float* pad, float* dyT,
                                                 float* dwp) {
  const int64_t PQ = p.P * p.Q;
  for (int64_t n = n0; n < n1; ++n) {
    const float* img = padded_image(p.x, n, p.C, p.H, p.W, p.ph, p.pw, pad);
    for (int64_t k = 0; k < p.K; ++k) {
      const float* src = p.dy + (n * p.K + k) * PQ;
      float* dst = dyT + (k / L) * PQ * L + k % L;
      for (int64_t i = 0; i < PQ; ++i) dst[i * L] = src[i];
    }
    for (int64_t kb0 = 0; kb0 < p.Kb; kb0 += 2) {
      if (kb0 + 1 < p.Kb)
        weight_image_of<L, 2>(std::make_integer_sequence<int, SMAX>{}, p, img, dyT, kb0, dwp);
      else
        weight_image_of<L, 1>(std::make_integer_sequence<int, SMAX>{}, p, img, dyT, kb0, dwp);
    }
  }
}

// Register budget: 2*12 accumulators, two dy vectors and a broadcast.
__attribute__((target("avx512f,avx2,fma"))) void weight_avx512(const WeightPass& p, int64_t n0, int64_t n1, float* pad,
                                                               float* dyT, float* dwp) {
  weight_images<16, kMaxTapsPerRow>(p, n0, n1, pad, dyT, dwp);
}

}  // namespace

bool available() {
  static const bool yes = [] {
    const CpuFeatures& f = cpu_features();
    return f.avx512f && f.avx2 && f.fma;
  }();
  return yes;
}

bool forward_fits(const ConvGeom& G, int cores) {
  if (!available() || G.sw != 1 || G.K > kMaxK || G.K <= 0) return false;
  const int64_t Kb = (G.K + kLanes - 1) / kLanes;
  const int64_t padded = G.C * (G.H + 2 * G.ph) * (G.W + 2 * G.pw);
  // Above 16 channels gemm's micro-kernel is busy enough that the kernel wins only while the image
  // stays in L1 (LeNet's second layer, 13x13x20: 0.81x im2col's time; CIFAR's 32x32x32: 1.03x).
  if (padded > kMaxPadded || (G.K > 16 && padded > kL1Image)) return false;
  // Enough work items (image x block pair) for every core, twice over.
  return G.N * ((Kb + 1) / 2) >= 2 * int64_t{cores};
}

void conv_forward(Exec& ex, const ConvGeom& G, const float* x, const float* w, const float* bias, float* y) {
  constexpr int64_t L = kLanes;
  const int64_t Kb = (G.K + L - 1) / L, CRS = G.crs();
  Scratch<float> packed(0, size_t(Kb * CRS * L + (bias != nullptr ? Kb * L : 0)));
  float* wp = packed.get();
  // [K][CRS] -> [Kb][CRS][L], zero past K.
  std::fill_n(wp, Kb * CRS * L, 0.0f);
  for (int64_t k = 0; k < G.K; ++k)
    for (int64_t i = 0; i < CRS; ++i) wp[((k / L) * CRS + i) * L + k % L] = w[k * CRS + i];
  float* bp = nullptr;
  if (bias != nullptr) {
    bp = wp + Kb * CRS * L;
    std::fill_n(bp, Kb * L, 0.0f);
    std::copy_n(bias, G.K, bp);
  }
  const bool pads = G.ph != 0 || G.pw != 0;
  const Pass p{
      x, y, wp, bp, G.N, G.C, G.H, G.W, G.K, G.R, G.S, G.P, G.Q, G.sh, G.ph, G.pw, G.H + 2 * G.ph, G.W + 2 * G.pw, Kb};
  const int64_t items = G.N * ((Kb + 1) / 2);
  parallel(ex, items, 1, [&](int64_t b, int64_t e) {
    std::vector<float> pad(pads ? size_t(p.C * p.Hp * p.Wp) : 0);
    run_avx512(p, b, e, pads ? pad.data() : nullptr);
  });
}

bool backward_weight_fits(const ConvGeom& G, int cores) {
  if (!available() || G.sw != 1 || G.K > kMaxK || G.K <= 0 || G.S > kMaxTapsPerRow) return false;
  const int64_t padded = G.C * (G.H + 2 * G.ph) * (G.W + 2 * G.pw);
  if (padded > kMaxPadded || (G.K > 16 && padded > kL1Image)) return false;
  return G.N >= 2 * int64_t{cores};
}

void conv_backward_weight(Exec& ex, const ConvGeom& G, const float* dy, const float* x, float* dw) {
  constexpr int64_t L = kLanes;
  const int64_t Kb = (G.K + L - 1) / L, CRS = G.crs(), PQ = G.pq();
  // Fixed runs of images, each summed into its own partial, then the partials added in run order: the
  // result depends on the core count only, never on which worker ran what.
  const int64_t parts = std::min<int64_t>(G.N, 2 * int64_t{ex.concurrency()});
  const int64_t part_size = Kb * CRS * L;
  Scratch<float> partials(0, size_t(parts * part_size));
  float* dwp = partials.get();
  std::fill_n(dwp, parts * part_size, 0.0f);
  const bool pads = G.ph != 0 || G.pw != 0;
  const WeightPass p{
      x, dy, G.N, G.C, G.H, G.W, G.K, G.R, G.S, G.P, G.Q, G.sh, G.ph, G.pw, G.H + 2 * G.ph, G.W + 2 * G.pw, Kb};
  parallel(ex, parts, 1, [&](int64_t b, int64_t e) {
    std::vector<float> pad(pads ? size_t(p.C * p.Hp * p.Wp) : 0), dyT(size_t(Kb * PQ * L), 0.0f);
    for (int64_t part = b; part < e; ++part)
      weight_avx512(p, part * G.N / parts, (part + 1) * G.N / parts, pads ? pad.data() : nullptr, dyT.data(),
                    dwp + part * part_size);
  });
  // [Kb][CRS][L] partials -> dw [K][CRS].
  parallel(ex, G.K, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, CRS * parts)), [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k)
      for (int64_t i = 0; i < CRS; ++i) {
        const float* src = dwp + ((k / L) * CRS + i) * L + k % L;
        float sum = src[0];
        for (int64_t part = 1; part < parts; ++part) sum += src[part * part_size];
        dw[k * CRS + i] = sum;
      }
  });
}

}  // namespace braid::cpu::kern::lanes
