// Process groups over the NCCL plugin (backends/comm/nccl): without a CUDA device joining is refused
// with the plugin's reason; with one, a group of one on cuda:0 runs every collective on device memory.
// Each case runs in a forked child (dist_test::run_ranks), which initialises CUDA itself.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "braid.h"
#include "distributed/ranks.h"

#ifdef BRAID_HAVE_NCCL_PLUGIN
namespace {

using namespace dist_test;

constexpr int kNoGpu = 77;

// The context's first device whose id starts with "cuda:", or -1.
braid_device cuda_device(braid_context ctx) {
  int32_t n = 0;
  if (braid_context_device_count(ctx, &n) != BRAID_OK) return -1;
  for (braid_device d = 0; d < n; ++d) {
    braid_device_info info{};
    info.struct_size = sizeof info;
    if (braid_context_device_info(ctx, d, &info) == BRAID_OK && std::string(info.id).rfind("cuda:", 0) == 0) return d;
  }
  return -1;
}

bool cuda_device_here() {
  braid_context_options co = BRAID_CONTEXT_OPTIONS_INIT;
  co.backends = "cuda";
  braid_context ctx = nullptr;
  if (braid_context_create(&co, &ctx) != BRAID_OK) return false;
  const bool found = cuda_device(ctx) >= 0;
  braid_context_release(ctx);
  return found;
}

std::vector<float> read(braid_tensor t, size_t n) {
  std::vector<float> v(n, -1);
  if (braid_tensor_to_host(t, v.data(), n * sizeof(float)) != BRAID_OK) v.assign(n, -1);
  return v;
}

}  // namespace

TEST_CASE("nccl: without a CUDA device, joining is refused with the plugin's reason") {
  const int port = free_port();
  const auto codes = run_ranks(
      1,
      [port](int rank) {
        if (cuda_device_here()) return 0;  // the GPU cases below check this machine
        Rank r(0, 1, port, 5, "nccl", "cpu,cuda");
        RANK_EXPECT(r.joined == BRAID_ERR_UNSUPPORTED, "%s: %s", braid_status_name(r.joined), r.join_error.c_str());
        RANK_EXPECT(has(r.join_error, "'nccl' cannot run here") &&
                        (has(r.join_error, "no CUDA device") || has(r.join_error, "libnccl.so.2")),
                    "%s", r.join_error.c_str());
        return 0;
      },
      std::chrono::seconds(60));
  CHECK(codes == std::vector<int>{0});
}

TEST_CASE("nccl GPU cases: a group of one on cuda:0 runs every collective on device memory") {
  const int port = free_port();
  const auto codes = run_ranks(
      1,
      [port](int rank) {
        if (!cuda_device_here()) {
          std::fprintf(stderr, "skipped: the nccl GPU cases need a CUDA device\n");
          return kNoGpu;
        }
        Rank r(0, 1, port, 30, "nccl", "cpu,cuda");
        RANK_EXPECT(r.joined == BRAID_OK, "joining: %s", r.join_error.c_str());
        const braid_device gpu = cuda_device(r.ctx);
        const int64_t n = 1000;
        braid_tensor t = nullptr, ints = nullptr, host = nullptr, gathered = nullptr, part = nullptr;
        RANK_EXPECT(braid_arange(r.ctx, gpu, BRAID_FLOAT32, 0, n, 1, &t) == BRAID_OK, "%s", braid_last_error());
        // A group of one: each collective leaves the values as they were (AVG divides by one on the device).
        for (braid_collective_op op : {BRAID_COLLECTIVE_SUM, BRAID_COLLECTIVE_AVG, BRAID_COLLECTIVE_PROD}) {
          RANK_EXPECT(braid_process_group_allreduce(r.pg, t, op) == BRAID_OK, "allreduce %d: %s", op,
                      braid_last_error());
          const auto v = read(t, n);
          RANK_EXPECT(v[0] == 0 && v[1] == 1 && v[999] == 999, "allreduce %d: %g %g %g", op, v[0], v[1], v[999]);
        }
        RANK_EXPECT(braid_process_group_broadcast(r.pg, t, 0) == BRAID_OK, "broadcast: %s", braid_last_error());
        RANK_EXPECT(braid_process_group_reduce(r.pg, t, 0, BRAID_COLLECTIVE_SUM) == BRAID_OK, "reduce: %s",
                    braid_last_error());
        RANK_EXPECT(braid_full(r.ctx, gpu, BRAID_FLOAT32, 1, &n, 0, &gathered) == BRAID_OK, "%s", braid_last_error());
        RANK_EXPECT(braid_process_group_all_gather(r.pg, t, gathered) == BRAID_OK, "all_gather: %s",
                    braid_last_error());
        RANK_EXPECT(read(gathered, n)[999] == 999, "all_gather's copy");
        RANK_EXPECT(braid_full(r.ctx, gpu, BRAID_FLOAT32, 1, &n, 0, &part) == BRAID_OK, "%s", braid_last_error());
        RANK_EXPECT(braid_process_group_reduce_scatter(r.pg, t, part, BRAID_COLLECTIVE_SUM) == BRAID_OK,
                    "reduce_scatter: %s", braid_last_error());
        RANK_EXPECT(read(part, n)[500] == 500, "reduce_scatter's part");
        RANK_EXPECT(braid_process_group_barrier(r.pg) == BRAID_OK, "barrier: %s", braid_last_error());
        // Integers take MAX; floating MAX is refused (NCCL's drops NaN, braid's keeps it).
        RANK_EXPECT(braid_full(r.ctx, gpu, BRAID_INT32, 1, &n, 7, &ints) == BRAID_OK, "%s", braid_last_error());
        RANK_EXPECT(braid_process_group_allreduce(r.pg, ints, BRAID_COLLECTIVE_MAX) == BRAID_OK, "int32 max: %s",
                    braid_last_error());
        RANK_EXPECT(braid_process_group_allreduce(r.pg, t, BRAID_COLLECTIVE_MAX) == BRAID_ERR_DTYPE, "float32 max");
        // A tensor of another device is refused by name, and the group still works after it.
        RANK_EXPECT(braid_full(r.ctx, r.cpu, BRAID_FLOAT32, 1, &n, 1, &host) == BRAID_OK, "%s", braid_last_error());
        RANK_EXPECT(braid_process_group_allreduce(r.pg, host, BRAID_COLLECTIVE_SUM) == BRAID_ERR_DEVICE &&
                        has(braid_last_error(), "cuda:0"),
                    "a cpu tensor: %s", braid_last_error());
        RANK_EXPECT(braid_process_group_allreduce(r.pg, t, BRAID_COLLECTIVE_SUM) == BRAID_OK, "after: %s",
                    braid_last_error());
        RANK_EXPECT(read(t, n)[999] == 999, "after the refusal");
        for (braid_tensor x : {t, ints, host, gathered, part}) braid_tensor_release(x);
        return 0;
      },
      std::chrono::seconds(120));
  if (codes == std::vector<int>{kNoGpu}) {
    MESSAGE("skipped: the nccl GPU cases need a CUDA device");
    return;
  }
  CHECK(codes == std::vector<int>{0});
}
#endif
