// Reference: the counter-based RNG exactly as abi/braid_backend.h specifies it, so random_uniform,
// random_normal and dropout can be checked value by value (to the rounding of the output dtype).
#include <cmath>
#include <numbers>

#include "reference.h"

namespace ref {

std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> ctr, std::array<uint32_t, 2> key) {
  // Constants of Random123's philox4x32: the round multipliers and the Weyl key increments.
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    if (round > 0) key[0] += kW0, key[1] += kW1;
    const uint64_t p0 = uint64_t{kM0} * ctr[0];
    const uint64_t p1 = uint64_t{kM1} * ctr[2];
    const auto hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    const auto hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    ctr = {hi1 ^ ctr[1] ^ key[0], lo1, hi0 ^ ctr[3] ^ key[1], lo0};
  }
  return ctr;
}

// Block j of draw `draw` under `seed`: key (seed lo, seed hi), counter (j lo, j hi, draw lo, draw hi).
static std::array<uint32_t, 4> block(uint64_t seed, uint64_t draw, uint64_t j) {
  const auto lo = [](uint64_t v) { return static_cast<uint32_t>(v & 0xffffffffu); };
  const auto hi = [](uint64_t v) { return static_cast<uint32_t>(v >> 32); };
  return philox4x32_10({lo(j), hi(j), lo(draw), hi(draw)}, {lo(seed), hi(seed)});
}

static double to_unit(uint32_t w) { return (static_cast<double>(w) + 0.5) * 0x1p-32; }

double rng_uniform01(uint64_t seed, uint64_t draw, int64_t i) {
  const auto ui = static_cast<uint64_t>(i);
  return to_unit(block(seed, draw, ui / 4)[ui % 4]);
}

Array random_uniform(uint64_t seed, uint64_t draw, const Shape& s, double low, double high) {
  Array out(s);
  for (int64_t i = 0; i < out.numel(); ++i)
    out.data[static_cast<size_t>(i)] = low + (high - low) * rng_uniform01(seed, draw, i);
  return out;
}

Array random_normal(uint64_t seed, uint64_t draw, const Shape& s, double mean, double stddev) {
  Array out(s);
  for (int64_t i = 0; i < out.numel(); ++i) {
    // Box-Muller on words 0 and 1 of block i/2; even elements take the cosine, odd the sine.
    const auto w = block(seed, draw, static_cast<uint64_t>(i) / 2);
    const double r = std::sqrt(-2.0 * std::log(to_unit(w[0])));
    const double theta = 2.0 * std::numbers::pi * to_unit(w[1]);
    out.data[static_cast<size_t>(i)] = mean + stddev * (i % 2 == 0 ? r * std::cos(theta) : r * std::sin(theta));
  }
  return out;
}

DropoutResult dropout(const Array& x, double p, uint64_t seed, uint64_t draw) {
  DropoutResult r{Array(x.shape), Array(x.shape)};
  for (int64_t i = 0; i < x.numel(); ++i) {
    const auto ui = static_cast<size_t>(i);
    const double keep = rng_uniform01(seed, draw, i) >= p ? 1.0 : 0.0;
    r.mask.data[ui] = keep;
    // A dropped element is x * 0 (NaN at inf or NaN, as PyTorch); p = 1 keeps nothing, never 0/0.
    r.y.data[ui] = keep != 0.0 ? x.data[ui] / (1.0 - p) : x.data[ui] * 0.0;
  }
  return r;
}

}  // namespace ref
