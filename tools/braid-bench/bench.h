// Shared pieces of braid-bench: the figure a suite reports, the reporter that prints it (table or
// JSON lines), the run context handed to every suite, and the suites' entry points.
#pragma once
#include <braid.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace braid::bench {

// One measured figure. When it is compared with something measured in the same run (PyTorch, a
// direct OpenBLAS call), baseline names it, and ratio = value / baseline_value.
struct Figure {
  std::string suite;
  std::string name;
  double value = 0;
  std::string unit;
  std::optional<std::string> baseline;
  double baseline_value = 0;
};

class Reporter {
 public:
  explicit Reporter(bool json) : json_(json) {}
  // Prints at once (suites take seconds; a partial table is better than none if one fails).
  void figure(const Figure& f);
  // A remark for the reader (a skipped comparison, a sanity-check result). Goes to stderr with
  // --json so that stdout holds nothing but JSON lines.
  void note(std::string_view suite, std::string_view text);

 private:
  bool json_;
  bool header_printed_ = false;
};

struct Options {
  bool json = false;
  std::string device = "cpu:0";
  std::vector<std::string> devices;  // --devices (allreduce, scaling): default every CPU device / cpu:0,cpu:1
  int batches = 0;                   // --batches (scaling): LeNet batches per run; 0: the suite's default
  int repeat = 0;                    // 0: each suite's own default
  int ranks = 0;                     // --ranks (allreduce): across that many processes; 0: devices of one
};

// What a suite runs against. The context lives for the whole run so suites share its warm pools.
struct Run {
  braid_context ctx = nullptr;
  braid_device device = 0;
  braid_device_info info{};
  int host_cores = 1;  // cores this process may run on (its affinity mask)
  Options options;
  Reporter* out = nullptr;

  int repeat_or(int suite_default) const { return options.repeat > 0 ? options.repeat : suite_default; }
};

// A failed braid call ends the suite with the runtime's own message (op, device, cause).
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
void check(braid_status status, std::string_view what);

// Owns one tensor reference; release never fails for a valid handle, so the status is ignored.
struct TensorRelease {
  void operator()(braid_tensor t) const noexcept { braid_tensor_release(t); }
};
using Tensor = std::unique_ptr<braid_tensor_t, TensorRelease>;

// A float32 tensor of the given 2-D shape filled with value, on the run's device.
Tensor full_2d(const Run& run, int64_t rows, int64_t cols, double value);

// A file next to the braid-bench executable (the samples and scripts it runs are built there).
std::filesystem::path beside_bench(std::string_view name);
// Single-quotes s for /bin/sh (popen runs through the shell).
std::string shell_quote(std::string_view s);
// A size for figure names: "4KiB", "256MiB", "1GiB" (the largest unit that divides it; KiB below 1 MiB).
std::string size_name(uint64_t bytes);

// The measured float32 FMA peak of `threads` host cores (fma_peak.cpp); isa "" where the CPU has
// neither AVX-512 nor AVX2+FMA.
struct FmaPeak {
  std::string isa;
  double gflops = 0;
  double sink = 0;  // the chains' results, so the compiler keeps the work
};
FmaPeak measure_fma_peak(int threads);

// Cores in this process's affinity mask (what taskset/cgroups leave us), at least 1.
int affinity_cores();

// The suites. Each reports its figures through run.out and throws Error on a failed call.
void suite_engine(Run& run);
void suite_async(Run& run);
void suite_gemm(Run& run);
void suite_memory(Run& run);
void suite_allreduce(Run& run);
void suite_allreduce_ranks(Run& run);  // allreduce --ranks N (allreduce_ranks.cpp)
void suite_scaling(Run& run);
void suite_hw(Run& run);
void suite_fusion(Run& run);

}  // namespace braid::bench
