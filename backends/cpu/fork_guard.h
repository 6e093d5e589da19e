// Keeps fork() away from running OpenBLAS calls.
//
// OpenBLAS has a thread pool and locks of its own. A fork() while a gemm runs leaves the child with
// one of those locks held forever (its first gemm hangs), and OpenBLAS's own fork hook tears the pool
// down under the gemm still running in the parent (OpenBLAS issue 3111). So kernels that call BLAS run
// inside a section that fork() waits for, and new sections wait for the fork. This is process state by
// nature (fork is a process event), the one such piece in the plugin besides the host table.
#pragma once

namespace braid::cpu {

// Registers the fork handlers once. Must run after OpenBLAS is loaded, so that ours (prepare handlers
// run in reverse order of registration) run before OpenBLAS's own.
void install_fork_guard();

// Held while a kernel that calls BLAS runs. Sections on different threads run concurrently.
class BlasSection {
 public:
  explicit BlasSection(bool active);
  ~BlasSection();
  BlasSection(const BlasSection&) = delete;
  BlasSection& operator=(const BlasSection&) = delete;

 private:
  bool active_;
};

}  // namespace braid::cpu
