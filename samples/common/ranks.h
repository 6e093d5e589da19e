// --dist in the samples: this process as one rank of a job started by braid-run, mpirun or srun
// (docs/DISTRIBUTED.md), which reads its part of every epoch and steps a Trainer set to the group.
#pragma once
#include <braid.hpp>

#include <cstdint>
#include <cstdio>
#include <memory>

namespace samples {

struct Ranks {
  std::unique_ptr<braid::ProcessGroup> group;  // null without --dist
  int32_t rank = 0, size = 1;
};

// With `dist`, joins the job's process group (rank, size and rendezvous from the launcher). The global
// batch must split evenly over the ranks: otherwise says so as `tool` on stderr and returns false (a bad
// command line).
inline bool join_ranks(const braid::Context& ctx, bool dist, int64_t batch_size, const char* tool, Ranks& out) {
  if (!dist) return true;
  out.group = std::make_unique<braid::ProcessGroup>(ctx);
  out.rank = out.group->rank();
  out.size = out.group->world_size();
  if (batch_size % out.size == 0) return true;
  std::fprintf(stderr, "%s: --batch-size %lld is not a multiple of the %d ranks\n", tool,
               static_cast<long long>(batch_size), out.size);
  return false;
}

}  // namespace samples
