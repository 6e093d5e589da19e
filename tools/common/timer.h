// The one timer of the tools: a monotonic stopwatch (steady_clock never jumps with NTP or
// settimeofday, which would corrupt a benchmark sample).
#pragma once
#include <chrono>

namespace braid::tools {

class Stopwatch {
 public:
  Stopwatch() : start_(Clock::now()) {}
  void reset() { start_ = Clock::now(); }
  double seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

 private:
  using Clock = std::chrono::steady_clock;
  Clock::time_point start_;
};

}  // namespace braid::tools
