#include "torch_anchor.h"

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>

namespace braid::bench {
namespace {

namespace fs = std::filesystem;

// The script is copied next to braid-bench at build time; running from the source tree (no copy)
// falls back to the source folder.
fs::path script_path() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path beside = exe.parent_path() / "torch_anchor.py";
    if (fs::exists(beside, ec)) return beside;
  }
  return fs::path(BRAID_BENCH_SOURCE_DIR) / "torch_anchor.py";
}

// Single-quotes s for /bin/sh (popen runs through the shell).
std::string shell_quote(std::string_view s) {
  std::string out = "'";
  for (const char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

std::optional<TorchResult> run_torch_anchor(std::string_view args, std::string* why) {
  // Debian's interpreter by default, as the benchmark definition says; overridable for other systems.
  const char* env_python = std::getenv("BRAID_BENCH_PYTHON");
  const std::string python = env_python && *env_python ? env_python : "/usr/bin/python3";
  if (::access(python.c_str(), X_OK) != 0) {
    *why = python + " not found";
    return std::nullopt;
  }
  const std::string command =
      shell_quote(python) + " " + shell_quote(script_path().string()) + " " + std::string(args) + " 2>&1";
  std::fflush(nullptr);  // the child must not inherit (and later flush) our buffered output
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) {
    *why = "could not start " + python;
    return std::nullopt;
  }
  TorchResult result;
  std::string skip, tail;
  std::array<char, 4096> line{};
  while (std::fgets(line.data(), static_cast<int>(line.size()), pipe)) {
    std::istringstream in(line.data());
    std::string tag;
    in >> tag;
    if (tag == "RESULT") {
      std::string key;
      double value = 0;
      if (in >> key >> value) result.values[key] = value;
    } else if (tag == "VERSION") {
      in >> result.version;
    } else if (tag == "SKIP") {
      std::getline(in >> std::ws, skip);
    } else {
      tail = line.data();  // keep the last stray line (a traceback's message) for the report
    }
  }
  const int status = ::pclose(pipe);
  if (!skip.empty()) {
    *why = skip;
    return std::nullopt;
  }
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0 || result.values.empty()) {
    while (!tail.empty() && (tail.back() == '\n' || tail.back() == '\r')) tail.pop_back();
    *why = "torch_anchor.py failed" + (tail.empty() ? std::string() : ": " + tail);
    return std::nullopt;
  }
  return result;
}

}  // namespace braid::bench
