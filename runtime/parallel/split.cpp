#include "parallel/split.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.h"

namespace braid::parallel {

std::vector<int64_t> split_sizes(int64_t total, int32_t count, const double* weights) {
  if (count <= 0) fail(BRAID_ERR_INVALID_ARGUMENT, "split: count must be positive, not ", count);
  if (total < 0) fail(BRAID_ERR_INVALID_ARGUMENT, "split: total must not be negative, not ", total);
  const auto n = static_cast<size_t>(count);
  std::vector<int64_t> sizes(n);
  if (weights == nullptr) {
    for (size_t i = 0; i < n; ++i) sizes[i] = total / count + (static_cast<int64_t>(i) < total % count ? 1 : 0);
    return sizes;
  }
  double top = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(weights[i]) || weights[i] < 0)
      fail(BRAID_ERR_INVALID_ARGUMENT, "split: weights[", i, "] = ", weights[i], " is not a finite value >= 0");
    top = std::max(top, weights[i]);
  }
  if (top == 0) fail(BRAID_ERR_INVALID_ARGUMENT, "split: every weight is 0");
  // Shares of the largest weight: finite weights near DBL_MAX add up to inf otherwise.
  double sum = 0;
  for (size_t i = 0; i < n; ++i) sum += weights[i] / top;
  // Largest remainder: floor every exact share, then give the rows left to the largest fractions.
  // A share of a total near INT64_MAX may round to 2^63, which no int64 holds: it is clamped to the
  // total before the conversion, and the shares are counted unsigned (their sum may pass the total by
  // the rounding, never by 2^63).
  std::vector<double> frac(n);
  uint64_t given = 0;
  for (size_t i = 0; i < n; ++i) {
    const double exact = static_cast<double>(total) * (weights[i] / top / sum);
    const double floored = std::floor(exact);
    sizes[i] = floored >= static_cast<double>(total) ? total : static_cast<int64_t>(floored);
    frac[i] = exact - static_cast<double>(sizes[i]);
    given += static_cast<uint64_t>(sizes[i]);
  }
  const auto want = static_cast<uint64_t>(total);
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return frac[a] > frac[b]; });
  for (size_t k = 0; given < want; k = (k + 1) % n) {
    if (weights[order[k]] == 0) continue;  // a device weighted 0 gets no rows
    ++sizes[order[k]];
    ++given;
  }
  while (given > want) {  // floating rounding gave rows too many somewhere
    auto it = std::max_element(sizes.begin(), sizes.end());
    --*it;
    --given;
  }
  return sizes;
}

}  // namespace braid::parallel
