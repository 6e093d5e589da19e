// The anchor of `braid-bench allreduce --ranks N` (tools/braid-bench/allreduce_ranks.cpp): Gloo's
// allreduce called directly, from the same processes as braid's calls and alternating with them, so
// that both sides meet the same machine at the same moments (on a 2-core machine, scheduling noise
// is larger than the difference being measured). The ranks meet through a Gloo FileStore in a folder
// (Debian's Gloo has no TCP store); transport: TCP on 127.0.0.1, as braid's groups on one host.
#pragma once
#include <cstddef>
#include <memory>
#include <string>

namespace braid::bench {

class GlooDirect {
 public:
  GlooDirect(const std::string& store_dir, int rank, int size);
  ~GlooDirect();
  GlooDirect(const GlooDirect&) = delete;
  GlooDirect& operator=(const GlooDirect&) = delete;

  void barrier();
  // In place, float32 sum, with the same element loop as braid's Gloo plugin.
  void allreduce_sum(float* data, size_t count);

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace braid::bench
