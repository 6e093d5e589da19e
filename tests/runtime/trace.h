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
#include <nlohmann/json.hpp>
#include "braid.h"

namespace test {

struct TraceEvent {
  std::string name;
  int pid = -1, tid = -1;
  double ts = 0, dur = 0;
  double end() const { return ts + dur; }
};

// The complete ("X") events of a trace file, parsed as JSON (the profiler's output is checked as JSON
// by profile_test.cpp; here only the fields the assertions read).
inline std::vector<TraceEvent> read_trace(const std::string& path) {
  std::ifstream in(path);
  const auto trace = nlohmann::json::parse(in);
  std::vector<TraceEvent> events;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.value("ph", "") != "X") continue;
    events.push_back(TraceEvent{e.at("name").get<std::string>(), e.at("pid").get<int>(), e.at("tid").get<int>(),
                                e.at("ts").get<double>(), e.at("dur").get<double>()});
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
