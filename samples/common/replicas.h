// Pushing each replica's work from its own thread. braid's calls are thread-safe and autograd records
// per thread, so replica r's forward and backward can be pushed from thread r. One pushing thread
// would serialise the devices: when device 0's in-flight bound (backpressure, docs/ENGINE.md) is
// reached, the thread waits for device 0 and cannot feed device 1 meanwhile.
#pragma once
#include <cstddef>
#include <exception>
#include <functional>
#include <thread>
#include <vector>

namespace samples {

// Calls fn(r) for r in [0, n): r = 0 on the calling thread, the others on their own threads; returns
// when all have returned and rethrows the first exception.
inline void for_each_replica(size_t n, const std::function<void(size_t)>& fn) {
  std::vector<std::exception_ptr> errors(n);
  std::vector<std::thread> threads;
  for (size_t r = 1; r < n; ++r)
    threads.emplace_back([&, r] {
      try {
        fn(r);
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  try {
    if (n > 0) fn(0);
  } catch (...) {
    errors[0] = std::current_exception();
  }
  for (std::thread& t : threads) t.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace samples
