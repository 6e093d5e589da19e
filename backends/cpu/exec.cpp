#include "exec.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>

namespace braid::cpu {

void ArenaExec::parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  // We cut the chunks ourselves: blocked_range splits a range down to half its grain, and kernels rely
  // on chunks of at least `grain` items (vector tails, per-chunk scratch). A few chunks per core let
  // work stealing even out uneven chunks; n / grain bounds the count so every chunk holds >= grain.
  const int64_t chunks = std::min<int64_t>(n / grain, int64_t{concurrency_} * 4);
  if (chunks <= 1 || concurrency_ == 1) {
    fn(0, n);
    return;
  }
  const int64_t base = n / chunks;
  const int64_t extra = n % chunks;  // the first `extra` chunks take one more item
  auto begin_of = [&](int64_t c) { return c * base + std::min(c, extra); };
  // execute() is a direct call when the thread is already inside this arena (the queue thread running
  // a kernel); it also keeps a stray call from another thread off TBB's default arena.
  arena_.execute([&] {
    tbb::parallel_for(
        tbb::blocked_range<int64_t>(0, chunks, 1),
        [&](const tbb::blocked_range<int64_t>& r) {
          for (int64_t c = r.begin(); c != r.end(); ++c) fn(begin_of(c), begin_of(c + 1));
        },
        tbb::simple_partitioner());
  });
}

}  // namespace braid::cpu
