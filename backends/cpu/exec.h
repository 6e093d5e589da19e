// braid::cpu::Exec over a device's oneTBB arena: how kernels and large copies fan out over its cores.
#pragma once
#include <tbb/task_arena.h>

#include "kernels/kernels.h"

namespace braid::cpu {

class ArenaExec final : public Exec {
 public:
  explicit ArenaExec(tbb::task_arena& arena) : arena_(arena), concurrency_(arena.max_concurrency()) {}

  void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) override;
  int concurrency() const override { return concurrency_; }

 private:
  tbb::task_arena& arena_;
  int concurrency_;
};

}  // namespace braid::cpu
