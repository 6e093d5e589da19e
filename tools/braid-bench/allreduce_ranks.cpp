// `braid-bench allreduce --ranks N`: braid_process_group_allreduce across N processes on this host
// (loopback TCP through the Gloo plugin), float32 sum, 4 KiB to 256 MiB, algbw and busbw as nccl-tests
// computes them (busbw = algbw * 2(N-1)/N). The anchors, in the same run: Gloo's allreduce called
// directly from the same ranks, alternating with braid's calls (dist-anchors/gloo_direct.h), and Open
// MPI's MPI_Allreduce (braid-mpi-allreduce under mpirun, where Debian's libopenmpi-dev was there at
// build time). Every side times one allreduce after a barrier, REPEAT times after a warm-up, and rank 0
// reports the median.
//
// braid-bench starts the ranks itself: it runs braid-run -n N on its own executable with
// BRAID_BENCH_RANK set, and those ranks print {"bytes", "seconds", "direct_seconds"} lines that this
// side reads.
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench.h"
#include "timer.h"
#if BRAID_BENCH_HAVE_GLOO
#include "gloo_direct.h"
#endif

namespace braid::bench {
namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// One rank: what `braid-run -n N braid-bench allreduce --ranks N` runs in each rank. For each size,
// braid's call and Gloo's direct call alternate (where braid-bench was built with Gloo, and the folder
// of the direct calls' store is in BRAID_BENCH_GLOO_STORE).
void rank_side(Run& run, int repeat) {
  braid_process_group pg = nullptr;
  check(braid_process_group_create(run.ctx, nullptr, &pg), "braid_process_group_create");
  braid_process_group_info info{};
  info.struct_size = sizeof info;
  check(braid_process_group_get_info(pg, &info), "braid_process_group_get_info");
#if BRAID_BENCH_HAVE_GLOO
  std::unique_ptr<GlooDirect> direct;
  if (const char* store = std::getenv("BRAID_BENCH_GLOO_STORE"))
    direct = std::make_unique<GlooDirect>(store, info.rank, info.world_size);
#endif
  for (uint64_t bytes = 4u << 10; bytes <= (256u << 20); bytes *= 4) {
    const int64_t count = static_cast<int64_t>(bytes / sizeof(float));
    braid_tensor t = nullptr;
    check(braid_full(run.ctx, run.device, BRAID_FLOAT32, 1, &count, 1.0, &t), "braid_full");
    Tensor owned(t);
    check(braid_tensor_wait_to_read(t), "braid_full");
    std::vector<float> plain(static_cast<size_t>(count), 1.0f);
    std::vector<double> times, direct_times;
    for (int i = 0; i < repeat + 1; ++i) {  // the first round is a warm-up
      check(braid_process_group_barrier(pg), "braid_process_group_barrier");
      tools::Stopwatch sw;
      check(braid_process_group_allreduce(pg, t, BRAID_COLLECTIVE_SUM), "braid_process_group_allreduce");
      check(braid_tensor_wait_to_read(t), "braid_process_group_allreduce");
      if (i > 0) times.push_back(sw.seconds());
#if BRAID_BENCH_HAVE_GLOO
      if (direct) {
        direct->barrier();
        tools::Stopwatch dw;
        direct->allreduce_sum(plain.data(), plain.size());
        if (i > 0) direct_times.push_back(dw.seconds());
      }
#endif
    }
    // Each run multiplied every element by N: all still equal, or the sum was wrong.
    std::vector<float> v(static_cast<size_t>(count));
    check(braid_tensor_to_host(t, v.data(), v.size() * sizeof(float)), "braid_tensor_to_host");
    for (float x : v)
      if (x != v[0]) throw Error("allreduce --ranks left different values in one tensor (" + size_name(bytes) + ")");
    if (info.rank == 0) {
      std::printf("{\"bytes\": %llu, \"seconds\": %.9g", static_cast<unsigned long long>(bytes), median(times));
      if (!direct_times.empty()) {
        // Each round's braid call and direct call ran back to back: the median of the rounds' ratios
        // is steadier than the ratio of the medians where the machine's speed drifts between rounds.
        std::vector<double> ratios;
        for (size_t k = 0; k < times.size(); ++k) ratios.push_back(direct_times[k] / times[k]);
        std::printf(", \"direct_seconds\": %.9g, \"paired_ratio\": %.9g", median(direct_times), median(ratios));
      }
      std::printf("}\n");
    }
    std::fflush(stdout);
  }
  braid_process_group_release(pg);
}

// Runs command through the shell and reads its {"bytes", "seconds", ...} lines: seconds per size (and of
// "direct_seconds" into *direct where the lines have it).
std::map<uint64_t, double> times_of(const std::string& command, const char* what,
                                    std::map<uint64_t, double>* direct = nullptr,
                                    std::map<uint64_t, double>* paired = nullptr) {
  std::fflush(nullptr);
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (!pipe) throw Error(std::string("allreduce --ranks: could not start ") + what);
  std::map<uint64_t, double> times;
  std::string tail;
  std::array<char, 4096> line{};
  while (std::fgets(line.data(), static_cast<int>(line.size()), pipe)) {
    const nlohmann::json j = nlohmann::json::parse(line.data(), nullptr, false);
    if (!j.is_discarded() && j.is_object() && j.contains("bytes") && j.contains("seconds")) {
      times[j["bytes"].get<uint64_t>()] = j["seconds"].get<double>();
      if (direct && j.contains("direct_seconds"))
        (*direct)[j["bytes"].get<uint64_t>()] = j["direct_seconds"].get<double>();
      if (paired && j.contains("paired_ratio")) (*paired)[j["bytes"].get<uint64_t>()] = j["paired_ratio"].get<double>();
    } else
      tail += line.data();
  }
  if (::pclose(pipe) != 0 || times.empty()) throw Error(std::string("allreduce --ranks: ") + what + " failed: " + tail);
  return times;
}

double busbw(uint64_t bytes, double seconds, int n) {
  return static_cast<double>(bytes) / seconds * 1e-9 * 2.0 * (n - 1) / n;
}

}  // namespace

void suite_allreduce_ranks(Run& run) {
  const int n = run.options.ranks;
  const int repeat = run.repeat_or(5);
  if (std::getenv("BRAID_BENCH_RANK")) {
    rank_side(run, repeat);
    return;
  }
  if (n < 2) {
    run.out->note("allreduce", "--ranks needs 2 or more ranks");
    return;
  }
  const std::string ranks = std::to_string(n), reps = std::to_string(repeat);
  const std::string launcher = shell_quote(beside_bench("braid-run").string()) + " -n " + ranks + " --no-tag ";
  std::array<char, 4096> self{};
  const ssize_t len = ::readlink("/proc/self/exe", self.data(), self.size() - 1);
  if (len <= 0) throw Error("allreduce --ranks: cannot find braid-bench's own executable");
  const std::filesystem::path store =
      std::filesystem::temp_directory_path() / ("braid-gloo-" + std::to_string(::getpid()));
  std::filesystem::create_directories(store);
  std::map<uint64_t, double> ours, gloo, paired;
  try {
    ours = times_of("BRAID_BENCH_RANK=1 BRAID_BENCH_GLOO_STORE=" + shell_quote(store.string()) + " " + launcher +
                        shell_quote(std::string(self.data(), static_cast<size_t>(len))) + " allreduce --json --ranks " +
                        ranks + " --repeat " + reps + " --device " + shell_quote(run.options.device),
                    "braid's ranks", &gloo, &paired);
  } catch (...) {
    std::filesystem::remove_all(store);
    throw;
  }
  std::filesystem::remove_all(store);
  if (gloo.empty())
    run.out->note("allreduce", "braid-bench was built without Gloo: the direct Gloo anchor is left out");
  std::map<uint64_t, double> mpi;
  const auto mpi_exe = beside_bench("braid-mpi-allreduce");
  if (std::filesystem::exists(mpi_exe) && std::system("command -v mpirun >/dev/null 2>&1") == 0)
    mpi = times_of(
        "mpirun --allow-run-as-root --oversubscribe -np " + ranks + " " + shell_quote(mpi_exe.string()) + " " + reps,
        "mpirun braid-mpi-allreduce");
  else
    run.out->note("allreduce",
                  "no braid-mpi-allreduce or mpirun: the Open MPI anchor is left out "
                  "(scripts/install-bench-deps.sh installs Open MPI; then rebuild)");
  run.out->note("allreduce", std::to_string(n) +
                                 " processes on this host, loopback TCP; busbw = algbw * 2(n-1)/n; "
                                 "baselines: Gloo's allreduce called directly from the same ranks, alternating "
                                 "with braid's calls; Open MPI's MPI_Allreduce");
  for (const auto& [bytes, seconds] : ours) {
    const std::string name = size_name(bytes) + "_ranks" + ranks + "_busbw";
    if (auto g = gloo.find(bytes); g != gloo.end())
      run.out->figure(
          {"allreduce", name, busbw(bytes, seconds, n), "GB/s", "Gloo allreduce, direct", busbw(bytes, g->second, n)});
    if (auto p = paired.find(bytes); p != paired.end())
      run.out->figure({"allreduce", size_name(bytes) + "_ranks" + ranks + "_paired_ratio", p->second,
                       "x (median over rounds of Gloo's time / braid's)", std::nullopt, 0});
    if (auto m = mpi.find(bytes); m != mpi.end())
      run.out->figure({"allreduce", name, busbw(bytes, seconds, n), "GB/s", "MPI_Allreduce (Open MPI)",
                       busbw(bytes, m->second, n)});
  }
}

}  // namespace braid::bench
