#include "profiler/profiler.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <sstream>
#include <thread>
#include <utility>

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

namespace {

std::string errno_text(int e) { return std::strerror(e); }

// Closes the descriptor on every path; a close error after a full write is still a failed write
// (NFS reports errors at close).
struct Fd {
  int fd = -1;
  Fd() = default;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  int release() noexcept { return std::exchange(fd, -1); }
};

void write_all(int fd, const std::string& data, const std::string& name) {
  const char* p = data.data();
  size_t left = data.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail(BRAID_ERR_IO, "cannot write profile file '", name, "': ", errno_text(n < 0 ? errno : EIO));
    p += n;
    left -= static_cast<size_t>(n);
  }
}

void close_checked(Fd& f, const std::string& name) {
  if (::close(f.release()) != 0) fail(BRAID_ERR_IO, "cannot write profile file '", name, "': ", errno_text(errno));
}

// A path that exists and is not a regular file (a symlink, FIFO or character device such as
// /dev/null or /dev/stdout) is written through in place: renaming a temporary over it would replace
// the link or the device node with a regular file (as root, BRAID_PROFILE=/dev/null would have
// replaced /dev/null). Directories, sockets and block devices are refused: none is a place for a
// trace, and writing a disk because of a typo is worse than an error. A FIFO is opened without
// blocking, so one without a reader is an error (ENXIO) rather than a hang at context release.
void write_in_place(const std::string& path, const std::string& data) {
  Fd f;
  do f.fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  while (f.fd < 0 && errno == EINTR);
  if (f.fd < 0) fail(BRAID_ERR_IO, "cannot open profile file '", path, "' for writing: ", errno_text(errno));
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) fail(BRAID_ERR_IO, "cannot stat profile file '", path, "': ", errno_text(errno));
  if (S_ISBLK(st.st_mode) || S_ISDIR(st.st_mode) || S_ISSOCK(st.st_mode))
    fail(BRAID_ERR_IO, "profile path '", path, "' is a ",
         S_ISBLK(st.st_mode) ? "block device" : S_ISDIR(st.st_mode) ? "directory" : "socket",
         "; give the path of a file, a FIFO or a character device");
  // Blocking writes from here: a FIFO's reader may be slower than the trace is long.
  const int flags = ::fcntl(f.fd, F_GETFL);
  if (flags >= 0) (void)::fcntl(f.fd, F_SETFL, flags & ~O_NONBLOCK);
  // A symlink to a regular file: it is that file now, so drop what it held before.
  if (S_ISREG(st.st_mode) && ::ftruncate(f.fd, 0) != 0)
    fail(BRAID_ERR_IO, "cannot truncate profile file '", path, "': ", errno_text(errno));
  write_all(f.fd, data, path);
  close_checked(f, path);
}

// A regular file (or a new one) is replaced atomically: a reader never sees half a trace. The
// temporary is created with O_EXCL | O_NOFOLLOW under a name no one else uses, so an existing
// path.tmp (even a symlink planted there) is never written through, and it is removed on failure.
void write_replacing(const std::string& path, const std::string& data, const struct stat* existing) {
  static std::atomic<uint64_t> counter{0};
  std::string tmp;
  Fd f;
  for (int attempt = 0; f.fd < 0; ++attempt) {
    tmp = cat(path, ".tmp.", ::getpid(), ".", counter.fetch_add(1));
    f.fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (f.fd < 0 && !(errno == EEXIST && attempt < 100) && errno != EINTR)
      fail(BRAID_ERR_IO, "cannot create profile file '", tmp, "' for writing: ", errno_text(errno));
  }
  try {
    // Replacing a file keeps its permission bits (a new one gets 0666 less the umask, as open gives).
    if (existing) (void)::fchmod(f.fd, existing->st_mode & 07777);
    write_all(f.fd, data, tmp);
    close_checked(f, tmp);
    if (std::rename(tmp.c_str(), path.c_str()) != 0)
      fail(BRAID_ERR_IO, "cannot rename '", tmp, "' to '", path, "': ", errno_text(errno));
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
}

}  // namespace

std::string Profiler::json(std::span<Device* const> devices) const {
  std::ostringstream out;
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
    const int tracks = 3 + static_cast<int>(d->more_compute.size());
    for (int q = 0; q < tracks; ++q) {
      sep();
      out << R"({"ph":"M","name":"thread_name","pid":)" << d->index << ",\"tid\":" << q << R"(,"args":{"name":")"
          << Device::queue_name(q) << "\"}}";
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
  return std::move(out).str();
}

void Profiler::write(const std::string& path, std::span<Device* const> devices) const {
  if (path.empty()) fail(BRAID_ERR_IO, "profile path is empty");
  const std::string data = json(devices);
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (S_ISREG(st.st_mode)) write_replacing(path, data, &st);
    else write_in_place(path, data);
  } else if (errno == ENOENT) {
    write_replacing(path, data, nullptr);
  } else {
    fail(BRAID_ERR_IO, "cannot write profile file '", path, "': ", errno_text(errno));
  }
}

}  // namespace braid
