// Suite `allreduce`: braid_allreduce over several devices, 4 KiB to 256 MiB per device, every
// algorithm, as nccl-tests reports it: algbw = bytes / time and busbw = algbw * 2(n-1)/n (the
// bandwidth each device's links carry, comparable across device counts). The anchor, measured in the
// same run, is one thread's memcpy of the same bytes between two host buffers: for CPU devices, which
// share the host's memory, that is what moving the data costs.
#include <cstring>
#include <string>
#include <vector>

#include "bench.h"
#include "stats.h"
#include "timer.h"

namespace braid::bench {
namespace {

constexpr int kAllreduceRepeat = 5;

std::vector<braid_device> devices_of(const Run& run) {
  std::vector<braid_device> devs;
  if (!run.options.devices.empty()) {
    for (const std::string& name : run.options.devices) {
      braid_device d = -1;
      check(braid_context_find_device(run.ctx, name.c_str(), &d), "braid_context_find_device");
      devs.push_back(d);
    }
    return devs;
  }
  int32_t n = 0;
  check(braid_context_device_count(run.ctx, &n), "braid_context_device_count");
  for (braid_device d = 0; d < n; ++d) {
    braid_device_info info{};
    info.struct_size = sizeof info;
    check(braid_context_device_info(run.ctx, d, &info), "braid_context_device_info");
    if (info.kind == BRAID_DEVICE_CPU && std::string(info.backend) == "cpu") devs.push_back(d);
  }
  return devs;
}

}  // namespace

void suite_allreduce(Run& run) {
  if (run.options.ranks > 0) {
    suite_allreduce_ranks(run);
    return;
  }
  const std::vector<braid_device> devs = devices_of(run);
  const int n = static_cast<int>(devs.size());
  if (n < 2) {
    run.out->note("allreduce",
                  "needs two or more devices: BRAID_CPU_DEVICES=2 braid-bench allreduce, or --devices "
                  "cpu:0,vulkan:0");
    return;
  }
  std::string names;
  for (braid_device d : devs) {
    braid_device_info info{};
    info.struct_size = sizeof info;
    check(braid_context_device_info(run.ctx, d, &info), "braid_context_device_info");
    if (!names.empty()) names += ',';
    names += info.id;
  }
  run.out->note("allreduce", "devices " + names +
                                 "; busbw = algbw * 2(n-1)/n; baseline: memcpy of the same bytes, "
                                 "one thread");
  const char* algorithms[] = {"auto", "naive", "tree", "ring", "biring", "direct"};
  static_assert(sizeof algorithms / sizeof algorithms[0] == BRAID_ALLREDUCE_ALGORITHM_COUNT);
  for (uint64_t bytes = 4u << 10; bytes <= (256u << 20); bytes *= 4) {
    const int64_t count = static_cast<int64_t>(bytes / sizeof(float));
    const int repeat = run.repeat_or(bytes >= (64u << 20) ? 3 : kAllreduceRepeat);
    std::vector<Tensor> ts;
    std::vector<braid_tensor> hs;
    for (braid_device d : devs) {
      braid_tensor t = nullptr;
      check(braid_full(run.ctx, d, BRAID_FLOAT32, 1, &count, 1.0, &t), "braid_full");
      ts.emplace_back(t);
      hs.push_back(t);
    }
    check(braid_wait_all(run.ctx), "braid_wait_all");
    std::vector<char> src(bytes, 1), dst(bytes, 0);
    auto memcpy_run = [&] {
      tools::Stopwatch sw;
      std::memcpy(dst.data(), src.data(), bytes);
      const double s = sw.seconds();
      if (dst[bytes / 2] != 1) throw Error("memcpy baseline copied nothing");
      return static_cast<double>(bytes) / s * 1e-9;
    };
    const double memcpy_gbs = tools::measure(1, repeat, memcpy_run).median;
    for (int a = 0; a < BRAID_ALLREDUCE_ALGORITHM_COUNT; ++a) {
      braid_collective_options o = BRAID_COLLECTIVE_OPTIONS_INIT;
      o.algorithm = static_cast<braid_allreduce_algorithm>(a);
      if (o.algorithm == BRAID_ALLREDUCE_DIRECT && braid_allreduce(n, hs.data(), &o) == BRAID_ERR_UNSUPPORTED)
        continue;  // devices that do not share memory
      auto once = [&] {
        tools::Stopwatch sw;
        check(braid_allreduce(n, hs.data(), &o), "braid_allreduce");
        check(braid_wait_all(run.ctx), "braid_wait_all");
        const double algbw = static_cast<double>(bytes) / sw.seconds() * 1e-9;
        return algbw * 2.0 * (n - 1) / n;
      };
      std::string name = size_name(bytes);
      name += '_';
      name += algorithms[a];
      name += "_busbw";
      Figure f{"allreduce", name, tools::measure(1, repeat, once).median, "GB/s", "memcpy, one thread", memcpy_gbs};
      run.out->figure(f);
    }
    // Every warm-up and timed run summed the tensors again: each element is now n^(runs) — check
    // one device's first element against the same arithmetic, so a wrong answer cannot pass as fast.
    std::vector<float> all(static_cast<size_t>(count));
    check(braid_tensor_to_host(hs[0], all.data(), all.size() * sizeof(float)), "braid_tensor_to_host");
    const float first = all[0];
    for (float v : all)
      if (v != first) throw Error("allreduce left different values in one tensor (" + size_name(bytes) + ")");
  }
}

}  // namespace braid::bench
