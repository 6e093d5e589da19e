// RANDOM_UNIFORM, RANDOM_NORMAL, DROPOUT from the counter-based Philox-4x32-10 stream specified in
// braid_backend.h. Element i's value depends only on (seed, draw, i), so any chunking gives the same
// bits; each chunk starts its stream at the block holding its first element.
#include "common.h"
// (common.h first: see the note at its top)
#include <cmath>
#include <numbers>

#include "convert.h"

namespace braid::cpu::kern {
namespace {

constexpr int kBatch = 16;  // blocks per refill: the round loop runs across them (vectorisable SoA)

// Consecutive Philox-4x32-10 output words: block j gives words 4j..4j+3.
class PhiloxStream {
 public:
  PhiloxStream(uint64_t seed, uint64_t draw, uint64_t first_block)
      : k0_(uint32_t(seed)), k1_(uint32_t(seed >> 32)), d0_(uint32_t(draw)), d1_(uint32_t(draw >> 32)),
        block_(first_block) {}

  uint32_t next() {
    if (pos_ == 4 * kBatch) refill();
    return buf_[pos_++];
  }
  void skip(int n) {
    for (int i = 0; i < n; ++i) next();
  }

 private:
  void refill() {
    uint32_t c0[kBatch], c1[kBatch], c2[kBatch], c3[kBatch];
    for (int b = 0; b < kBatch; ++b) {
      const uint64_t j = block_ + uint64_t(b);
      c0[b] = uint32_t(j);
      c1[b] = uint32_t(j >> 32);
      c2[b] = d0_;
      c3[b] = d1_;
    }
    uint32_t k0 = k0_, k1 = k1_;
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
      buf_[4 * b + 0] = c0[b];
      buf_[4 * b + 1] = c1[b];
      buf_[4 * b + 2] = c2[b];
      buf_[4 * b + 3] = c3[b];
    }
    block_ += kBatch;
    pos_ = 0;
  }

  uint32_t k0_, k1_, d0_, d1_;
  uint64_t block_;
  uint32_t buf_[4 * kBatch];
  int pos_ = 4 * kBatch;
};

inline double unit(uint32_t w) { return (double(w) + 0.5) * 0x1p-32; }  // in (0, 1)

// Writes gen.value(state, i) to out's element i (logical order) in parallel chunks; each chunk gets
// its own state from gen.start(first element of the chunk).
template <class T, class Gen>
void generate(Exec& ex, const braid_buffer_view& out, Gen gen) {
  const Layout<1> L = layout_of(out);
  T* o = data_of<T>(out);
  parallel(ex, L.numel, kGrainHeavy, [&](int64_t begin, int64_t end) {
    int64_t pos = begin;
    auto state = gen.start(begin);
    const int64_t s = L.inner_stride(0);
    for_each_row(L, begin, end, [&](const int64_t* off, int64_t count) {
      T* p = o + off[0];
      for (int64_t k = 0; k < count; ++k, ++pos) p[k * s] = convert<T>(gen.value(state, pos));
    });
  });
}

struct Uniform {
  uint64_t seed, draw;
  double low, span;
  PhiloxStream start(int64_t begin) const {
    PhiloxStream st(seed, draw, uint64_t(begin) / 4);
    st.skip(int(begin % 4));
    return st;
  }
  double value(PhiloxStream& st, int64_t) const { return low + span * unit(st.next()); }
};

struct Normal {
  uint64_t seed, draw;
  double mean, stddev;
  struct State {
    PhiloxStream st;
    bool loaded = false;
    double r = 0, theta = 0;
  };
  State start(int64_t begin) const { return State{PhiloxStream(seed, draw, uint64_t(begin) / 2)}; }
  double value(State& s, int64_t i) const {
    // Block i/2 serves elements i (even: cos) and i+1 (odd: sin); a chunk may start at an odd one.
    if (i % 2 == 0 || !s.loaded) {
      s.loaded = true;
      const double u1 = unit(s.st.next()), u2 = unit(s.st.next());
      s.st.skip(2);
      s.r = std::sqrt(-2.0 * std::log(u1));
      s.theta = 2.0 * std::numbers::pi * u2;
    }
    return mean + stddev * (i % 2 == 0 ? s.r * std::cos(s.theta) : s.r * std::sin(s.theta));
  }
};

}  // namespace

KernelResult k_random(const Call& c, Exec& ex) {
  const auto& out = c.outputs[0];
  const uint64_t seed = uint64_t(c.i[0]), draw = uint64_t(c.i[1]);
  visit_dtype(FloatTypes{}, out.dtype, [&]<class T>(Tag<T>) {
    if (c.op == BRAID_KOP_RANDOM_UNIFORM)
      generate<T>(ex, out, Uniform{seed, draw, c.f[0], c.f[1] - c.f[0]});
    else
      generate<T>(ex, out, Normal{seed, draw, c.f[0], c.f[1]});
  });
  return {};
}

// y = x * keep / (1 - p), mask = keep, keep = u_i >= p with u_i element i's uniform.
KernelResult k_dropout(const Call& c, Exec& ex) {
  const auto& x = c.inputs[0];
  const auto& y = c.outputs[0];
  const bool has_mask = c.num_outputs >= 2;
  const braid_buffer_view& mask = has_mask ? c.outputs[1] : c.outputs[0];
  const double p = c.f[0];
  const double scale = p < 1.0 ? 1.0 / (1.0 - p) : 0.0;
  const uint64_t seed = uint64_t(c.i[0]), draw = uint64_t(c.i[1]);
  visit_dtype(FloatTypes{}, x.dtype, [&]<class T>(Tag<T>) {
    const Layout<3> L = layout_of(y, mask, x);
    T* yp = data_of<T>(y);
    T* mp = data_of<T>(mask);
    const T* xp = data_of<const T>(x);
    const int64_t sy = L.inner_stride(0), sm = L.inner_stride(1), sx = L.inner_stride(2);
    parallel(ex, L.numel, kGrain, [&](int64_t begin, int64_t end) {
      PhiloxStream st(seed, draw, uint64_t(begin) / 4);
      st.skip(int(begin % 4));
      for_each_row(L, begin, end, [&](const int64_t* off, int64_t count) {
        T* yr = yp + off[0];
        T* mr = mp + off[1];
        const T* xr = xp + off[2];
        for (int64_t k = 0; k < count; ++k) {
          const bool keep = unit(st.next()) >= p;
          const T xv = xr[k * sx];  // read before writing: y may alias x (in-place dropout)
          if (has_mask) mr[k * sm] = keep ? T(1) : T(0);
          yr[k * sy] = keep ? T(double(xv) * scale) : T(0);
        }
      });
    });
  });
  return {};
}

}  // namespace braid::cpu::kern
