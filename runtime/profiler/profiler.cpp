#include "profiler/profiler.h"

#include <cstdio>
#include <fstream>
#include <functional>
#include <thread>

#include "core/error.h"
#include "device/device.h"
#include "engine/node.h"

namespace braid {

void Profiler::start() {
  std::lock_guard lock(mu_);
  events_.clear();
  enabled_.store(true);
}

void Profiler::record_op(const OpNode& n) {
  std::lock_guard lock(mu_);
  events_.push_back({n.name, n.device->index, n.queue->track, n.t_begin, n.t_end, n.status});
}

void Profiler::record_wait(const char* what, int64_t begin_ns, int64_t end_ns) {
  if (!enabled()) return;
  auto thread = static_cast<int32_t>(std::hash<std::thread::id>{}(std::this_thread::get_id()) % 1000);
  std::lock_guard lock(mu_);
  events_.push_back({what, -1, thread, begin_ns, end_ns, BRAID_OK});
}

void Profiler::write(const std::string& path, std::span<Device* const> devices) const {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) fail(BRAID_ERR_IO, "cannot open profile file '", tmp, "' for writing");
    const int host_pid = static_cast<int>(devices.size());
    out << "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
    bool first = true;
    auto sep = [&] {
      if (!first) out << ",\n";
      first = false;
    };
    for (const Device* d : devices) {
      sep();
      out << R"({"ph":"M","name":"process_name","pid":)" << d->index << R"(,"args":{"name":")" << d->id << " ("
          << d->props.name << ")\"}}";
      for (int q = 0; q < 3; ++q) {
        sep();
        out << R"({"ph":"M","name":"thread_name","pid":)" << d->index << ",\"tid\":" << q << R"(,"args":{"name":")"
            << Device::kQueueNames[q] << "\"}}";
      }
    }
    sep();
    out << R"({"ph":"M","name":"process_name","pid":)" << host_pid << R"(,"args":{"name":"host"}})";
    std::lock_guard lock(mu_);
    char buf[64];
    for (const Event& e : events_) {
      sep();
      int pid = e.device < 0 ? host_pid : e.device;
      // Microseconds with ns precision, as the format expects.
      std::snprintf(buf, sizeof buf, "%.3f", static_cast<double>(e.begin_ns) / 1000.0);
      out << R"({"ph":"X","name":")" << e.name << R"(","cat":")" << (e.device < 0 ? "wait" : "op") << R"(","pid":)"
          << pid << ",\"tid\":" << e.queue << ",\"ts\":" << buf;
      std::snprintf(buf, sizeof buf, "%.3f", static_cast<double>(e.end_ns - e.begin_ns) / 1000.0);
      out << ",\"dur\":" << buf << R"(,"args":{"status":")" << braid_status_name(e.status) << "\"}}";
    }
    out << "\n]}\n";
    if (!out.flush()) fail(BRAID_ERR_IO, "cannot write profile file '", tmp, "'");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) fail(BRAID_ERR_IO, "cannot rename '", tmp, "' to '", path, "'");
}

}  // namespace braid
