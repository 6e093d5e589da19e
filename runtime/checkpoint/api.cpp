// The checkpoint section of abi/braid.h: tensors to and from safetensors files (docs/CHECKPOINTS.md).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "braid.h"
#include "checkpoint/checkpoint.h"
#include "checkpoint/safetensors.h"
#include "context/context.h"
#include "core/error.h"
#include "core/file_io.h"
#include "tensor/host_copy.h"

namespace braid::checkpoint {
namespace {

// A file descriptor closed on every path out.
class File {
 public:
  explicit File(int fd) : fd_(fd) {}
  ~File() {
    if (fd_ >= 0) ::close(fd_);
  }
  File(File&& o) noexcept : fd_(o.release()) {}
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

std::string os_error(const std::string& what, const std::string& path) {
  return what + " " + path + ": " + std::strerror(errno);
}

// Reads exactly n bytes at offset, or fails with BRAID_ERR_IO.
void read_at(int fd, void* out, size_t n, uint64_t offset, const std::string& path) {
  auto* p = static_cast<char*>(out);
  while (n > 0) {
    const ssize_t got = ::pread(fd, p, n, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) fail(BRAID_ERR_IO, got < 0 ? os_error("cannot read", path) : path + ": the file ended early");
    p += got, n -= size_t(got), offset += uint64_t(got);
  }
}

struct Opened {
  File file;
  Header header;
};

// Opens a regular file and reads its header.
Opened open_file(const char* path) {
  if (!path) fail(BRAID_ERR_INVALID_ARGUMENT, "path is NULL");
  // O_NONBLOCK: a FIFO is refused below instead of waiting for a writer (core/file_io.cpp says why).
  File f(::open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (f.get() < 0) fail(errno == ENOENT ? BRAID_ERR_NOT_FOUND : BRAID_ERR_IO, os_error("cannot open", path));
  struct stat st {};
  if (::fstat(f.get(), &st) != 0) fail(BRAID_ERR_IO, os_error("cannot stat", path));
  if (!S_ISREG(st.st_mode)) fail(BRAID_ERR_IO, path, " is not a regular file");
  const auto file_bytes = static_cast<uint64_t>(st.st_size);
  if (file_bytes < 8) fail(BRAID_ERR_IO, path, ": not a valid safetensors file: shorter than its 8-byte header length");
  unsigned char len[8];
  read_at(f.get(), len, 8, 0, path);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | len[i];
  if (n > kMaxHeaderBytes)
    fail(BRAID_ERR_IO, path, ": not a valid safetensors file: a header of ", n, " bytes, more than the format's ",
         kMaxHeaderBytes);
  if (n > file_bytes - 8)
    fail(BRAID_ERR_IO, path, ": not a valid safetensors file: a header of ", n, " bytes in a file of ", file_bytes);
  std::vector<char> json(static_cast<size_t>(n));
  read_at(f.get(), json.data(), json.size(), 8, path);
  try {
    return {std::move(f), parse_header(json, file_bytes)};
  } catch (const Error& e) {
    fail(e.status(), path, ": ", e.what());
  }
}

}  // namespace
void save_tensors(const char* path, std::span<const std::string> names, std::span<Tensor* const> tensors) {
  if (!path) fail(BRAID_ERR_INVALID_ARGUMENT, "path is NULL");
  std::vector<Entry> entries(names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    Entry& e = entries[i];
    e.name = names[i];
    e.dtype = tensors[i]->dtype;
    e.shape.assign(tensors[i]->shape.span().begin(), tensors[i]->shape.span().end());
  }
  const std::string header = make_header(entries);
  AtomicFile f(path);
  f.write(header.data(), header.size());
  std::vector<std::byte> host;
  for (size_t i = 0; i < names.size(); ++i) {
    const Entry& e = entries[i];
    host.resize(static_cast<size_t>(e.end - e.begin));
    try {
      copy_to_host(*tensors[i], host.data(), host.size());
    } catch (const Error& err) {
      fail(err.status(), "tensors[", i, "] (\"", e.name, "\"): ", err.what());
    }
    f.write(host.data(), host.size());
  }
  f.commit();
}

std::vector<std::string> tensor_names(const char* path) {
  const Opened o = open_file(path);
  std::vector<std::string> names;
  for (const Entry& e : o.header.entries) names.push_back(e.name);
  return names;
}

std::vector<TensorRef> load_tensors(Context& ctx, Device& device, const char* path,
                                    std::span<const std::string> names) {
  const Opened o = open_file(path);
  std::vector<TensorRef> out;
  std::vector<std::byte> host;
  for (const std::string& name : names) {
    const Entry* e = nullptr;
    for (const Entry& x : o.header.entries)
      if (x.name == name) e = &x;
    if (!e) fail(BRAID_ERR_NOT_FOUND, path, " has no tensor named \"", name, "\"");
    host.resize(static_cast<size_t>(e->end - e->begin));
    read_at(o.file.get(), host.data(), host.size(), o.header.data_start + e->begin, path);
    try {
      out.push_back(tensor_from_host(ctx, device, e->dtype, Shape::of(e->shape), host.data()));
    } catch (const Error& err) {
      fail(err.status(), "tensor \"", name, "\": ", err.what());
    }
  }
  return out;
}

}  // namespace braid::checkpoint

using namespace braid;
using namespace braid::checkpoint;

extern "C" {

BRAID_API braid_status braid_save_safetensors(const char* path, int32_t count, const char* const* names,
                                              const braid_tensor* tensors) {
  return guard("braid_save_safetensors", [&] {
    if (!path) fail(BRAID_ERR_INVALID_ARGUMENT, "path is NULL");
    if (count < 0) fail(BRAID_ERR_INVALID_ARGUMENT, "count is negative");
    if (count > 0 && (!names || !tensors)) fail(BRAID_ERR_INVALID_ARGUMENT, "names or tensors is NULL");
    std::vector<std::string> ns;
    std::vector<Tensor*> ts;
    for (int32_t i = 0; i < count; ++i) {
      if (!names[i]) fail(BRAID_ERR_INVALID_ARGUMENT, "names[", i, "] is NULL");
      ns.emplace_back(names[i]);
      ts.push_back(&checked_tensor(tensors[i], cat("tensors[", i, "]").c_str()));
    }
    save_tensors(path, ns, ts);
  });
}

// The same function under the name of abi/braid.h's consistent names (since ABI 1.11).
BRAID_API braid_status braid_safetensors_save(const char*, int32_t, const char* const*, const braid_tensor*)
    __attribute__((alias("braid_save_safetensors")));

BRAID_API braid_status braid_safetensors_names(const char* path, char* buffer, size_t capacity, size_t* size) {
  return guard("braid_safetensors_names", [&] {
    if (!size) fail(BRAID_ERR_INVALID_ARGUMENT, "size is NULL");
    std::string all;
    for (const std::string& n : tensor_names(path)) all.append(n).push_back('\0');
    *size = all.size();
    if (!buffer) return;
    if (capacity < all.size())
      fail(BRAID_ERR_INVALID_ARGUMENT, "buffer has ", capacity, " bytes, the names need ", all.size());
    std::memcpy(buffer, all.data(), all.size());
  });
}

BRAID_API braid_status braid_load_safetensors(braid_context ctx, braid_device device, const char* path, int32_t count,
                                              const char* const* names, braid_tensor* outs) {
  return guard("braid_load_safetensors", [&] {
    if (count < 0) fail(BRAID_ERR_INVALID_ARGUMENT, "count is negative");
    if (count > 0 && (!names || !outs)) fail(BRAID_ERR_INVALID_ARGUMENT, "names or outs is NULL");
    for (int32_t i = 0; i < count; ++i) outs[i] = nullptr;
    // The file first: a missing or damaged one is reported before anything about the context, and a
    // call that loads nothing only checks the file.
    (void)tensor_names(path);
    if (count == 0) return;
    const ContextRef c = use_context(ctx, "ctx");
    Device& dev = c->device(device, "device");
    std::vector<std::string> ns;
    for (int32_t i = 0; i < count; ++i) {
      if (!names[i]) fail(BRAID_ERR_INVALID_ARGUMENT, "names[", i, "] is NULL");
      ns.emplace_back(names[i]);
    }
    // All or nothing: every out stays NULL unless every tensor loaded.
    std::vector<TensorRef> loaded = load_tensors(*c, dev, path, ns);
    for (int32_t i = 0; i < count; ++i) outs[i] = loaded[static_cast<size_t>(i)].release();
  });
}

// The same function under the name of abi/braid.h's consistent names (since ABI 1.11).
BRAID_API braid_status braid_safetensors_load(braid_context, braid_device, const char*, int32_t, const char* const*,
                                              braid_tensor*) __attribute__((alias("braid_load_safetensors")));

}  // extern "C"
