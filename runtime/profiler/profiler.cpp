#include "profiler/profiler.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "core/error.h"

namespace braid {

namespace {

// A number for the calling thread, unique for the process's lifetime: std::thread::id values are
// reused once a thread has exited, and a new thread must not land on an old thread's track.
std::atomic<uint64_t> g_next_thread_serial{1};
thread_local const uint64_t t_thread_serial = g_next_thread_serial.fetch_add(1, std::memory_order_relaxed);

// The calling thread's name if the application gave it one. A thread that was never named carries its
// creator's name, usually the program's (as the main thread does): that is no name of its own.
std::string own_thread_name() {
  char name[16] = {};  // the kernel's limit: 15 bytes and the NUL
  if (::pthread_getname_np(::pthread_self(), name, sizeof name) != 0 || name[0] == '\0') return {};
  const std::string_view program(program_invocation_short_name);
  if (std::string_view(name) == program.substr(0, sizeof name - 1)) return {};
  return name;
}

}  // namespace

void Profiler::start() {
  std::lock_guard lock(mu_);
  events_.clear();
  host_threads_.clear();
  queue_ends_.clear();
  enabled_.store(true);
}

void Profiler::record_op(const ProfileEvent& op) {
  std::lock_guard lock(mu_);
  // A queue runs its work in order, so an op starts no earlier than the one before it on its queue
  // ended. Backends that launch without asking work_begin (GPU queues) give no start of their own, and
  // begin_ns is then the op's push; without this, each op of a deep queue would span the whole queue.
  int64_t& queue_end = queue_ends_[op.queue];
  const int64_t begin = std::max(op.begin_ns, queue_end);
  queue_end = std::max(queue_end, op.end_ns);
  ProfileEvent& e = events_.emplace_back(op);
  e.begin_ns = std::min(begin, op.end_ns);
}

void Profiler::record_wait(const char* what, int64_t begin_ns, int64_t end_ns) {
  if (!enabled()) return;
  std::lock_guard lock(mu_);
  auto [it, added] = host_threads_.try_emplace(t_thread_serial);
  if (added) {
    it->second.number = static_cast<int32_t>(host_threads_.size());
    it->second.name = own_thread_name();
    if (it->second.name.empty()) it->second.name = cat("host thread ", it->second.number);
  }
  events_.push_back({what, nullptr, it->second.number, begin_ns, end_ns, BRAID_OK});
}

std::string json_string(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = byte(i);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
      ++i;
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
      ++i;
    } else if (c < 0x80) {
      out += static_cast<char>(c);
      ++i;
    } else {
      // A UTF-8 sequence is copied whole if it is well formed (no overlong form, no surrogate, at most
      // U+10FFFF); anything else (a name cut inside a character, Latin-1) becomes U+FFFD.
      const size_t len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 0;
      bool ok = len != 0 && c <= 0xf4 && c >= 0xc2 && i + len <= s.size();
      uint32_t cp = ok ? c & (0x7fu >> len) : 0;
      for (size_t k = 1; ok && k < len; ++k) {
        ok = (byte(i + k) & 0xc0) == 0x80;
        cp = (cp << 6) | (byte(i + k) & 0x3fu);
      }
      ok = ok && !(len == 3 && cp < 0x800) && !(len == 4 && (cp < 0x10000 || cp > 0x10ffff)) &&
           !(cp >= 0xd800 && cp <= 0xdfff);
      if (ok) {
        out.append(s.substr(i, len));
        i += len;
      } else {
        out += "\\ufffd";
        ++i;
      }
    }
  }
  out += '"';
  return out;
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
         S_ISBLK(st.st_mode)   ? "block device"
         : S_ISDIR(st.st_mode) ? "directory"
                               : "socket",
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

std::string Profiler::json(std::span<const ProfileDevice> devices) const {
  // One event per line, the fields of an "X" event in this order: tests/runtime/trace.h and
  // tools/trace_summary.py read it line by line. Every string goes through json_string.
  std::string out = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
  bool first = true;
  auto sep = [&] {
    if (!first) out += ",\n";
    first = false;
  };
  auto metadata = [&](const char* what, int pid, const int* tid, std::string_view name) {
    sep();
    out += cat(R"({"ph":"M","name":")", what, R"(","pid":)", pid);
    if (tid) out += cat(",\"tid\":", *tid);
    out += cat(R"(,"args":{"name":)", json_string(name), "}}");
  };
  // Where a device's op goes: its process (the device's position) and its queue's track.
  std::unordered_map<const Queue*, int> pid_of;
  for (size_t d = 0; d < devices.size(); ++d) {
    const int pid = static_cast<int>(d);
    metadata("process_name", pid, nullptr, devices[d].name);
    for (const ProfileDevice::Track& t : devices[d].queues) {
      pid_of[t.queue] = pid;
      const int tid = t.track;
      metadata("thread_name", pid, &tid, t.name);
    }
  }
  const int host_pid = static_cast<int>(devices.size());
  metadata("process_name", host_pid, nullptr, "host");
  std::lock_guard lock(mu_);
  std::vector<const HostThread*> threads;
  for (const auto& [serial, thread] : host_threads_) threads.push_back(&thread);
  std::sort(threads.begin(), threads.end(), [](auto* a, auto* b) { return a->number < b->number; });
  for (const HostThread* t : threads) metadata("thread_name", host_pid, &t->number, t->name);
  char ts[32], dur[32];
  for (const ProfileEvent& e : events_) {
    int pid = host_pid;
    if (e.queue) {
      auto it = pid_of.find(e.queue);
      if (it == pid_of.end()) continue;  // a queue the caller did not describe has no track to go on
      pid = it->second;
    }
    // Microseconds with ns precision, as the format expects.
    std::snprintf(ts, sizeof ts, "%.3f", static_cast<double>(e.begin_ns) / 1000.0);
    std::snprintf(dur, sizeof dur, "%.3f", static_cast<double>(e.end_ns - e.begin_ns) / 1000.0);
    sep();
    out += cat(R"({"ph":"X","name":)", json_string(e.name), R"(,"cat":")", e.queue ? "op" : "wait", R"(","pid":)", pid,
               ",\"tid\":", e.track, ",\"ts\":", ts, ",\"dur\":", dur, R"(,"args":{"status":)",
               json_string(status_name(e.status)), "}}");
  }
  out += "\n]}\n";
  return out;
}

void Profiler::write(const std::string& path, std::span<const ProfileDevice> devices) const {
  if (path.empty()) fail(BRAID_ERR_IO, "profile path is empty");
  const std::string data = json(devices);
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (S_ISREG(st.st_mode))
      write_replacing(path, data, &st);
    else
      write_in_place(path, data);
  } else if (errno == ENOENT) {
    write_replacing(path, data, nullptr);
  } else {
    fail(BRAID_ERR_IO, "cannot write profile file '", path, "': ", errno_text(errno));
  }
}

}  // namespace braid
