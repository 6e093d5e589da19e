// Files braid writes and reads whole (checkpoints, exported graphs): an atomic writer and a bounded
// reader, with errors as braid::Error (BRAID_ERR_IO naming the file and the system's reason).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace braid {

// A file written beside `path` (as ".braid-tmp-XXXXXX" in its folder, a name that fits NAME_MAX
// whatever the final name's length) and renamed over it by commit() once complete and on disk, so a crash
// leaves the old file or the new one, never a torn one. Only a regular file (or nothing) is replaced:
// a symlink, FIFO or device at `path` is refused (BRAID_ERR_INVALID_ARGUMENT) rather than swapped for
// a file. Destroyed without commit(), the partial file is removed.
class AtomicFile {
 public:
  explicit AtomicFile(const char* path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  void write(const void* data, size_t bytes);
  void commit();

 private:
  std::string path_, tmp_;
  int fd_ = -1;
};

// Whether two paths name one file: the same name in the same folder, however each path reaches the
// folder ("d/a", "d/./a", "link-to-d/a"). Where a folder does not exist, the two strings are compared.
bool same_file_path(const char* a, const char* b);

// The whole file, refused (BRAID_ERR_IO) when it is not a regular file or holds more than max_bytes;
// a missing file is BRAID_ERR_NOT_FOUND.
std::string read_whole_file(const char* path, uint64_t max_bytes);

}  // namespace braid
