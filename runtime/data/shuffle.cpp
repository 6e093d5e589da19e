#include "data/shuffle.h"

#include <cstddef>
#include <numeric>
#include <utility>

namespace braid::data {

std::vector<int64_t> epoch_permutation(int64_t n, uint64_t seed, uint64_t epoch) {
  std::vector<int64_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), int64_t{0});
  const uint64_t key = mix64(seed ^ mix64(epoch + 1));
  for (int64_t i = n - 1; i > 0; --i) {
    const uint64_t u = mix64(key + static_cast<uint64_t>(i) * 0x9e3779b97f4a7c15ull);
    const auto j = static_cast<int64_t>((static_cast<unsigned __int128>(u) * static_cast<uint64_t>(i + 1)) >> 64);
    std::swap(order[static_cast<std::size_t>(i)], order[static_cast<std::size_t>(j)]);
  }
  return order;
}

}  // namespace braid::data
