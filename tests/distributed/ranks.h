// Forked ranks for the process-group suites: each case forks its ranks from the test process (each child
// makes its own context and group on a free port), checks inside each child what that rank must see,
// and asserts on every child's exit code: 0 when the rank saw what it should, 1 (with the reason on
// stderr) otherwise. Children never share the parent's contexts, and a child that uses CUDA initialises
// it itself (the parent never does).
#pragma once
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "braid.h"

namespace doctest {
template <>
struct StringMaker<std::vector<int>> {
  static String convert(const std::vector<int>& v) {
    std::string s = "{";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
    return (s + "}").c_str();
  }
};
}  // namespace doctest

namespace dist_test {

using Clock = std::chrono::steady_clock;

inline int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

constexpr int kKilledForTime = -1000;

// Runs body(rank) in `world` child processes and returns their exit codes (-signal when a signal
// ended one; kKilledForTime when it was still running after `limit`, which is a hang).
inline std::vector<int> run_ranks(int world, const std::function<int(int)>& body, std::chrono::seconds limit) {
  std::fflush(nullptr);
  std::vector<pid_t> pids;
  for (int r = 0; r < world; ++r) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      int code = 1;
      try {
        code = body(r);
      } catch (...) {
        std::fprintf(stderr, "rank %d: exception\n", r);
      }
      std::fflush(nullptr);
      ::_exit(code);  // not exit(): the parent's doctest state and static destructors stay the parent's
    }
    pids.push_back(pid);
  }
  std::vector<int> codes(pids.size(), kKilledForTime);
  const auto deadline = Clock::now() + limit;
  size_t left = pids.size();
  while (left > 0) {
    for (size_t i = 0; i < pids.size(); ++i) {
      if (pids[i] < 0) continue;
      int status = 0;
      if (::waitpid(pids[i], &status, WNOHANG) != pids[i]) continue;
      codes[i] = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
      pids[i] = -1;
      --left;
    }
    if (left == 0) break;
    if (Clock::now() > deadline) {
      for (pid_t p : pids)
        if (p > 0) {
          ::kill(p, SIGKILL);
          ::waitpid(p, nullptr, 0);
        }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return codes;
}

// One rank's context and group, made in the child.
struct Rank {
  braid_context ctx = nullptr;
  braid_process_group pg = nullptr;
  braid_device cpu = 0;
  braid_status joined = BRAID_OK;
  std::string join_error;
  Rank(int rank, int world, int port, double timeout_seconds, const char* backend = nullptr,
       const char* backends = "cpu") {
    braid_context_options co = BRAID_CONTEXT_OPTIONS_INIT;
    co.backends = backends;
    if (braid_context_create(&co, &ctx) != BRAID_OK) {
      joined = BRAID_ERR_INTERNAL;
      join_error = braid_last_error();
      return;
    }
    braid_process_group_options o = BRAID_PROCESS_GROUP_OPTIONS_INIT;
    o.rank = rank;
    o.world_size = world;
    o.master_port = port;
    o.timeout_seconds = timeout_seconds;
    o.backend = backend;
    joined = braid_process_group_create(ctx, &o, &pg);
    if (joined != BRAID_OK) join_error = braid_last_error();
  }
  ~Rank() {
    if (pg) braid_process_group_release(pg);
    if (ctx) braid_context_release(ctx);
  }
  braid_tensor full(int64_t n, double v) const {
    braid_tensor t = nullptr;
    braid_full(ctx, cpu, BRAID_FLOAT32, 1, &n, v, &t);
    return t;
  }
};

// In a child: prints why and returns 1 when cond is false.
#define RANK_EXPECT(cond, ...)                                     \
  do {                                                             \
    if (!(cond)) {                                                 \
      std::fprintf(stderr, "rank %d: expected %s: ", rank, #cond); \
      std::fprintf(stderr, __VA_ARGS__);                           \
      std::fprintf(stderr, "\n");                                  \
      return 1;                                                    \
    }                                                              \
  } while (0)

inline bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace dist_test
