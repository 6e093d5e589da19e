#include "fork_guard.h"

#include <pthread.h>

#include <condition_variable>
#include <mutex>

namespace braid::cpu {
namespace {

// A counter of running sections under a plain mutex, not a rwlock: the child must release what the
// parent's prepare handler took, and a glibc rwlock remembers its writer's thread id, which differs
// in the child. A plain mutex does not check its owner.
struct Guard {
  std::mutex mu;
  std::condition_variable idle;
  int running = 0;
  bool forking = false;
};

// Never destroyed, and replaced in the child: a child inherits the parent's threads that were waiting
// on `idle` (a BLAS section waiting out the fork) as waiters that will never wake, and glibc's
// pthread_cond_destroy waits for its waiters, so destroying it at exit hung the child (a fork with
// GEMMs queued on two CPU devices, then exit() in the child: 5 runs in 6).
Guard*& guard_slot() {
  static Guard* g = new Guard();
  return g;
}

Guard& guard() { return *guard_slot(); }

void prepare() {
  Guard& g = guard();
  g.mu.lock();
  g.forking = true;
  while (g.running > 0) {
    std::unique_lock lock(g.mu, std::adopt_lock);
    g.idle.wait(lock);
    (void)lock.release();  // stays locked across fork()
  }
}

void after_fork_parent() {
  Guard& g = guard();
  g.forking = false;
  g.mu.unlock();
  g.idle.notify_all();
}

// The child has one thread and no section running: a fresh guard (the parent's copy is left as is).
void after_fork_child() { guard_slot() = new Guard(); }

}  // namespace

void install_fork_guard() {
  static std::once_flag once;
  std::call_once(once, [] { pthread_atfork(prepare, after_fork_parent, after_fork_child); });
}

BlasSection::BlasSection(bool active) : active_(active) {
  if (!active_) return;
  Guard& g = guard();
  std::unique_lock lock(g.mu);
  g.idle.wait(lock, [&] { return !g.forking; });
  ++g.running;
}

BlasSection::~BlasSection() {
  if (!active_) return;
  Guard& g = guard();
  std::lock_guard lock(g.mu);
  if (--g.running == 0) g.idle.notify_all();
}

}  // namespace braid::cpu
