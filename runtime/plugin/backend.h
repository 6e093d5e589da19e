// A backend plugin as the host sees it: the dlopen'ed library, its negotiated function table, and
// what it said about itself. A plugin that fails any step stays listed with the reason.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "braid_backend.h"

namespace braid {

class SharedLibrary {
 public:
  SharedLibrary() = default;
  explicit SharedLibrary(void* handle) : handle_(handle) {}
  SharedLibrary(SharedLibrary&& o) noexcept : handle_(o.handle_) { o.handle_ = nullptr; }
  SharedLibrary& operator=(SharedLibrary&& o) noexcept {
    std::swap(handle_, o.handle_);
    return *this;
  }
  ~SharedLibrary();
  void* get() const noexcept { return handle_; }

 private:
  void* handle_ = nullptr;
};

struct Backend {
  std::string name;
  std::string path;
  std::string reason;          // why it did not load or has zero devices
  uint32_t abi_major = 0, abi_minor = 0;
  bool loaded = false;
  int32_t device_count = 0;
  const braid_backend_api* api = nullptr;
  SharedLibrary library;       // declared last: closed after shutdown below

  // Whether the plugin's table reaches the function at byte offset `offset` (fields of later minors
  // are read only where struct_size covers them) and sets it.
  template <typename Fn>
  Fn function_at(size_t offset) const noexcept {
    if (api == nullptr || api->struct_size < offset + sizeof(Fn)) return nullptr;
    Fn fn;
    std::memcpy(&fn, reinterpret_cast<const char*>(api) + offset, sizeof fn);
    return fn;
  }

  Backend() = default;
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;
  ~Backend();
};

struct PluginSearch {
  std::vector<std::string> only;  // backend names to load; empty = all
  std::string extra_path;         // colon-separated directories searched after libbraid's own
};

// Finds libbraid-backend-<name>.so next to libbraid, then in the extra directories (the first file
// of a name wins), and loads each one. Never throws for a bad plugin: it is listed with a reason.
std::vector<std::unique_ptr<Backend>> load_backends(const PluginSearch& search, const braid_host_api* host);

// Splits "a,b,c" (empty items dropped).
std::vector<std::string> split_list(const std::string& s);

// Loads one plugin file (used by load_backends; exposed for tests and tools).
std::unique_ptr<Backend> load_backend(const std::string& name, const std::string& path, const braid_host_api* host);

}  // namespace braid
