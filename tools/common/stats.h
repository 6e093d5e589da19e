// The one statistics helper of the tools. Benchmarks report the median of several runs: it ignores
// the odd run disturbed by another process (2-core CI machines are noisy) better than the mean.
#pragma once
#include <algorithm>
#include <cstddef>
#include <vector>

namespace braid::tools {

struct Summary {
  double median = 0, min = 0, max = 0;
  size_t runs = 0;
};

inline Summary summarize(std::vector<double> samples) {
  Summary s;
  s.runs = samples.size();
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  const size_t n = samples.size();
  s.median = n % 2 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
  s.min = samples.front();
  s.max = samples.back();
  return s;
}

// Calls run() `warmup` times and discards the results (caches, allocator pools, thread pools and
// page faults settle), then `repeat` times and summarizes what it returns (one sample per call,
// in whatever unit run() measures).
template <typename Run>
Summary measure(int warmup, int repeat, Run&& run) {
  for (int i = 0; i < warmup; ++i) run();
  std::vector<double> samples;
  samples.reserve(static_cast<size_t>(repeat));
  for (int i = 0; i < repeat; ++i) samples.push_back(run());
  return summarize(std::move(samples));
}

}  // namespace braid::tools
