// Implementation of the shared pieces declared in bench.h.
#include "bench.h"

#include <sched.h>

#include <cstdio>

#include "json.h"

namespace braid::bench {

void Reporter::figure(const Figure& f) {
  const double ratio = f.baseline && f.baseline_value != 0 ? f.value / f.baseline_value : 0;
  if (json_) {
    tools::JsonObject o;
    o.add("suite", f.suite).add("name", f.name).add("value", f.value).add("unit", f.unit);
    if (f.baseline) o.add("baseline", *f.baseline).add("baseline_value", f.baseline_value).add("ratio", ratio);
    std::printf("%s\n", o.str().c_str());
  } else {
    if (!header_printed_) {
      std::printf("%-7s %-24s %11s %-8s  %-30s %11s %7s\n", "suite", "figure", "value", "unit", "baseline", "baseline",
                  "ratio");
      header_printed_ = true;
    }
    std::printf("%-7s %-24s %11.4g ", f.suite.c_str(), f.name.c_str(), f.value);
    if (f.baseline)
      std::printf("%-8s  %-30s %11.4g %7.3f\n", f.unit.c_str(), f.baseline->c_str(), f.baseline_value, ratio);
    else
      std::printf("%s\n", f.unit.c_str());
  }
  std::fflush(stdout);
}

void Reporter::note(std::string_view suite, std::string_view text) {
  std::fprintf(json_ ? stderr : stdout, "  [%.*s] %.*s\n", static_cast<int>(suite.size()), suite.data(),
               static_cast<int>(text.size()), text.data());
  std::fflush(json_ ? stderr : stdout);
}

void check(braid_status status, std::string_view what) {
  if (status == BRAID_OK) return;
  throw Error(std::string(what) + ": " + braid_status_name(status) + ": " + braid_last_error());
}

Tensor full_2d(const Run& run, int64_t rows, int64_t cols, double value) {
  const int64_t shape[2] = {rows, cols};
  braid_tensor t = nullptr;
  check(braid_full(run.ctx, run.device, BRAID_FLOAT32, 2, shape, value, &t), "braid_full");
  return Tensor(t);
}

std::filesystem::path beside_bench(std::string_view name) {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return (ec ? std::filesystem::path(".") : exe.parent_path()) / name;
}

std::string shell_quote(std::string_view s) {
  std::string out = "'";
  for (const char c : s) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  out += '\'';
  return out;
}

// Built by appending: GCC 12 warns (-Wrestrict, a false positive) on `"literal" + std::string`.
std::string size_name(uint64_t bytes) {
  std::string s;
  if (bytes >= (uint64_t{1} << 30) && bytes % (uint64_t{1} << 30) == 0) {
    s = std::to_string(bytes >> 30);
    s += "GiB";
  } else if (bytes >= (uint64_t{1} << 20) && bytes % (uint64_t{1} << 20) == 0) {
    s = std::to_string(bytes >> 20);
    s += "MiB";
  } else {
    s = std::to_string(bytes >> 10);
    s += "KiB";
  }
  return s;
}

int affinity_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  const int n = CPU_COUNT(&set);
  return n > 0 ? n : 1;
}

}  // namespace braid::bench
