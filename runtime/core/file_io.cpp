#include "core/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>

#include "core/error.h"

namespace braid {
namespace {

std::string os_error(const std::string& what, const std::string& path) {
  return what + " " + path + ": " + std::strerror(errno);
}

// The process's umask, read without changing it (umask(2) can only set it, which would race with
// other threads creating files): Linux reports it in /proc/self/status since 4.7.
mode_t process_umask() {
  if (FILE* f = std::fopen("/proc/self/status", "re")) {
    char line[256];
    unsigned mask = 022;
    while (std::fgets(line, sizeof line, f))
      if (std::sscanf(line, "Umask: %o", &mask) == 1) break;
    std::fclose(f);
    return static_cast<mode_t>(mask);
  }
  return 022;
}

// A path's folder and last name: "d/e/a" -> ("d/e", "a"), "a" -> (".", "a"), "/a" -> ("/", "a").
std::pair<std::string, std::string> split_path(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return {".", path};
  return {slash == 0 ? "/" : path.substr(0, slash), path.substr(slash + 1)};
}

}  // namespace

AtomicFile::AtomicFile(const char* path) {
  if (!path) fail(BRAID_ERR_INVALID_ARGUMENT, "path is NULL");
  path_ = path;
  struct stat st {};
  if (::lstat(path, &st) == 0 && !S_ISREG(st.st_mode))
    fail(BRAID_ERR_INVALID_ARGUMENT, path_, " exists and is not a regular file; it is not replaced");
  const bool replacing = ::lstat(path, &st) == 0;
  // In the same folder (rename is atomic only within one file system) under a short name of its own:
  // path + suffix exceeded NAME_MAX (255 bytes) for a legal name of 245 bytes or more (issue 31).
  const std::string dir = split_path(path_).first;
  tmp_ = (dir == "/" ? dir : dir + "/") + ".braid-tmp-XXXXXX";
  fd_ = ::mkstemp(tmp_.data());
  if (fd_ < 0) fail(BRAID_ERR_IO, os_error("cannot create a file beside", path_));
  // mkstemp makes the file 0600; the result gets what a plain creat() would have given it (0666 less
  // the umask), or keeps the mode of the file it replaces, as np.save and the profiler's traces do.
  // Best effort: a file system without modes (vfat, some FUSE mounts) refuses, and the file is still
  // written; setuid/setgid bits of a replaced file are not carried over.
  const mode_t mode = replacing ? (st.st_mode & 0777) : (0666 & ~process_umask());
  (void)::fchmod(fd_, mode);
}

bool same_file_path(const char* a, const char* b) {
  if (!a || !b) return false;
  const auto [dir_a, name_a] = split_path(a);
  const auto [dir_b, name_b] = split_path(b);
  if (name_a != name_b || name_a.empty()) return false;
  struct stat sa {
  }, sb{};
  if (::stat(dir_a.c_str(), &sa) != 0 || ::stat(dir_b.c_str(), &sb) != 0) return std::strcmp(a, b) == 0;
  return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!tmp_.empty()) ::unlink(tmp_.c_str());
}

void AtomicFile::write(const void* data, size_t n) {
  const auto* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t put = ::write(fd_, p, n);
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) fail(BRAID_ERR_IO, os_error("cannot write", tmp_));
    p += put, n -= size_t(put);
  }
}

void AtomicFile::commit() {
  if (::fsync(fd_) != 0) fail(BRAID_ERR_IO, os_error("cannot sync", tmp_));
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail(BRAID_ERR_IO, os_error("cannot write", tmp_));
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) fail(BRAID_ERR_IO, os_error("cannot rename " + tmp_ + " to", path_));
  tmp_.clear();
}

std::string read_whole_file(const char* path, uint64_t max_bytes) {
  if (!path) fail(BRAID_ERR_INVALID_ARGUMENT, "path is NULL");
  // O_NONBLOCK: opening a FIFO for reading otherwise waits for a writer, forever if none comes; it is
  // refused below as not a regular file. Reads of a regular file ignore the flag.
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) fail(errno == ENOENT ? BRAID_ERR_NOT_FOUND : BRAID_ERR_IO, os_error("cannot open", path));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) fail(BRAID_ERR_IO, os_error("cannot stat", path));
  if (!S_ISREG(st.st_mode)) fail(BRAID_ERR_IO, path, " is not a regular file");
  if (static_cast<uint64_t>(st.st_size) > max_bytes)
    fail(BRAID_ERR_IO, path, " has ", st.st_size, " bytes, more than the ", max_bytes, " accepted");
  std::string data(static_cast<size_t>(st.st_size), '\0');
  size_t got_total = 0;
  while (got_total < data.size()) {
    const ssize_t got = ::read(fd, data.data() + got_total, data.size() - got_total);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) fail(BRAID_ERR_IO, os_error("cannot read", path));
    if (got == 0) break;
    got_total += size_t(got);
  }
  data.resize(got_total);
  return data;
}

}  // namespace braid
