// Issue 31: after a context was released while eight threads worked on it ("rel3"), a thread named
// "braid-cpu0-c0" stayed alive once everything was released. It is one of TBB's workers, which TBB
// keeps process-wide for the next context (backends/cpu/README.md, "Threads"), and which Linux had
// named after the queue thread that started it. Every braid queue thread is joined when its context
// goes; a worker is named for what it is, so no thread with a queue's name outlives its context.
#include <dirent.h>

#include <atomic>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "support.h"

namespace {

std::vector<std::string> thread_names() {
  std::vector<std::string> names;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      std::ifstream f(std::string("/proc/self/task/") + e->d_name + "/comm");
      std::string name;
      if (std::getline(f, name)) names.push_back(name);
    }
    closedir(d);
  }
  return names;
}

}  // namespace

TEST_CASE("threads: no queue thread outlives its context, released while other threads work on it") {
  for (int rep = 0; rep < 2; ++rep) {
    braid_context_options o = BRAID_CONTEXT_OPTIONS_INIT;
    o.backends = "cpu";
    braid_context ctx = nullptr;
    BRAID_CHECK_OK(braid_context_create(&o, &ctx));
    std::atomic<int> ops{0};
    // Set once the application's reference is gone: the threads then stop. Waiting for braid_full to
    // fail instead never ended under BRAID_ENGINE=sync, where some thread always held a tensor, and so
    // the context, alive.
    std::atomic<bool> released{false};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t)
      threads.emplace_back([&] {
        const int64_t n = int64_t{1} << 16;  // large enough for a kernel to fan out over TBB's workers
        while (!released.load()) {
          braid_tensor x = nullptr, y = nullptr;
          if (braid_full(ctx, 0, BRAID_FLOAT32, 1, &n, 1.0, &x) != BRAID_OK) return;  // ctx released
          if (braid_binary(BRAID_BINARY_ADD, x, x, &y) == BRAID_OK) braid_tensor_release(y);
          braid_tensor_release(x);
          ++ops;
        }
      });
    while (ops.load() < 64) std::this_thread::yield();
    BRAID_CHECK_OK(braid_context_release(ctx));  // while they work: the last tensor destroys it
    released.store(true);
    for (auto& t : threads) t.join();
  }
  for (const std::string& name : thread_names()) {
    INFO(name);
    CHECK(name.rfind("braid-cpu", 0) == std::string::npos);
  }
}
