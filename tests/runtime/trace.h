// Reads back the Chrome-trace JSON the profiler writes (one event per line) for assertions on
// timestamps: which ops ran on which device queue, and when.
#pragma once
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include "braid.h"

namespace test {

struct TraceEvent {
  std::string name;
  int pid = -1, tid = -1;
  double ts = 0, dur = 0;
  double end() const { return ts + dur; }
};

inline std::vector<TraceEvent> read_trace(const std::string& path) {
  std::vector<TraceEvent> events;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find("\"ph\":\"X\"") == std::string::npos) continue;
    TraceEvent e;
    auto name_at = line.find("\"name\":\"") + 8;
    e.name = line.substr(name_at, line.find('"', name_at) - name_at);
    auto pid_at = line.find("\"pid\":");
    std::sscanf(line.c_str() + pid_at, "\"pid\":%d,\"tid\":%d,\"ts\":%lf,\"dur\":%lf", &e.pid, &e.tid, &e.ts, &e.dur);
    events.push_back(e);
  }
  return events;
}

// True if some event matching a overlaps in time with some event matching b.
template <class A, class B>
bool any_overlap(const std::vector<TraceEvent>& events, A a, B b) {
  for (const auto& x : events)
    if (a(x))
      for (const auto& y : events)
        if (&x != &y && b(y) && x.ts < y.end() && y.ts < x.end()) return true;
  return false;
}

// Stops the context's profiler into a fresh temporary file and returns its events; the file is
// removed unless KEEP_TRACE is set (then its path is printed).
inline std::vector<TraceEvent> stop_profiler_and_read(braid_context ctx) {
  char path[] = "/tmp/braid-trace-XXXXXX";
  const int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  close(fd);
  REQUIRE(braid_profiler_stop(ctx, path) == BRAID_OK);
  std::vector<TraceEvent> events = read_trace(path);
  if (std::getenv("KEEP_TRACE") == nullptr)
    std::remove(path);
  else
    MESSAGE(path);
  return events;
}

}  // namespace test
