#include "torch_anchor.h"

#include "bench.h"

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <sstream>

namespace braid::bench {
namespace {

namespace fs = std::filesystem;

// The script is copied next to braid-bench at build time; running from the source tree (no copy)
// falls back to the source folder.
fs::path script_path() {
  const fs::path beside = beside_bench("torch_anchor.py");
  std::error_code ec;
  if (fs::exists(beside, ec)) return beside;
  return fs::path(BRAID_BENCH_SOURCE_DIR) / "torch_anchor.py";
}

}  // namespace

double TorchAnchor::sample() {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  if (failed()) return kNaN;
  // Debian's interpreter by default, as the benchmark definition says; overridable for other systems.
  const char* env_python = std::getenv("BRAID_BENCH_PYTHON");
  const std::string python = env_python && *env_python ? env_python : "/usr/bin/python3";
  if (::access(python.c_str(), X_OK) != 0) {
    why_ = python + " not found";
    return kNaN;
  }
  const std::string command =
      shell_quote(python) + " " + shell_quote(script_path().string()) + " " + args_ + " --repeat 1 2>&1";
  std::fflush(nullptr);  // the child must not inherit (and later flush) our buffered output
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) {
    why_ = "could not start " + python;
    return kNaN;
  }
  double value = kNaN;
  std::string skip, tail;
  std::array<char, 4096> line{};
  while (std::fgets(line.data(), static_cast<int>(line.size()), pipe)) {
    std::istringstream in(line.data());
    std::string tag, key;
    in >> tag;
    if (tag == "RESULT") {
      double v = 0;
      if (in >> key >> v && key == key_) value = v;
    } else if (tag == "VERSION") {
      in >> version_;
    } else if (tag == "SKIP") {
      std::getline(in >> std::ws, skip);
    } else {
      tail = line.data();  // keep the last stray line (a traceback's message) for the report
    }
  }
  const int status = ::pclose(pipe);
  if (!skip.empty()) {
    why_ = skip;
    return kNaN;
  }
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0 || !std::isfinite(value)) {
    while (!tail.empty() && (tail.back() == '\n' || tail.back() == '\r')) tail.pop_back();
    why_ = "torch_anchor.py failed" + (tail.empty() ? std::string() : ": " + tail);
    return kNaN;
  }
  return value;
}

}  // namespace braid::bench
