// Reads back the Chrome-trace JSON the profiler writes (one event per line) for assertions on
// timestamps: which ops ran on which device queue, and when.
#pragma once
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

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

}  // namespace test
