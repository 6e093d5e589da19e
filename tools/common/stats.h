// The one statistics helper of the tools. Benchmarks report the median of several runs: it ignores
// the odd run disturbed by another process (2-core CI machines are noisy) better than the mean.
#pragma once
#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <functional>
#include <limits>
#include <vector>

namespace braid::tools {

struct Summary {
  double median = 0, min = 0, max = 0;
  size_t runs = 0;
};

// Summary of the finite samples (a contender that could not run contributes NaN and is left out);
// the median is NaN when none is left.
inline Summary summarize(std::vector<double> samples) {
  std::erase_if(samples, [](double v) { return !std::isfinite(v); });
  Summary s;
  s.runs = samples.size();
  if (samples.empty()) {
    s.median = s.min = s.max = std::numeric_limits<double>::quiet_NaN();
    return s;
  }
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

// Runs each contender once per round, `repeat` rounds, and summarizes each one's samples. Comparing
// contenders measured one after the other compares two different machines on a shared host, where
// the load changes by the minute; alternating them exposes all to the same drift. Warm-ups are the
// caller's (a contender such as a child process warms itself up).
template <size_t N>
std::array<Summary, N> measure_interleaved(int repeat, const std::array<std::function<double()>, N>& contenders) {
  std::array<std::vector<double>, N> samples;
  for (int r = 0; r < repeat; ++r)
    for (size_t i = 0; i < N; ++i) samples[i].push_back(contenders[i]());
  std::array<Summary, N> out;
  for (size_t i = 0; i < N; ++i) out[i] = summarize(std::move(samples[i]));
  return out;
}

}  // namespace braid::tools
