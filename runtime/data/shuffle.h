// The epoch permutation of the batch iterator: a Fisher–Yates shuffle whose random numbers are a
// counter-based function of (seed, epoch, step), so the order of epoch e is the same whatever
// happened before (other epochs, threads, prefetch depth) and can be recomputed from the two numbers.
#pragma once
#include <cstdint>
#include <vector>

namespace braid::data {

// splitmix64's output function (Steele, Lea, Flood 2014): a bijective 64-bit mixer.
constexpr uint64_t mix64(uint64_t z) noexcept {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// A permutation of 0..n-1 for (seed, epoch): for i = n-1 down to 1, swap element i with element
// j = floor(u * (i + 1) / 2^64), u = mix64(key + i * golden), key = mix64(seed ^ mix64(epoch + 1)).
// (The multiply-shift maps u onto [0, i] with a bias below (i + 1) / 2^64: immaterial here.)
std::vector<int64_t> epoch_permutation(int64_t n, uint64_t seed, uint64_t epoch);

}  // namespace braid::data
