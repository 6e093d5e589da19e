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
  std::string reason;  // why it did not load or has zero devices
  uint32_t abi_major = 0, abi_minor = 0;
  bool loaded = false;
  // This load mapped the library into the process (it was not mapped already): its static objects, and
  // those of the libraries it pulled in, were constructed just now (see the context's exit handler).
  bool newly_mapped = false;
  int32_t device_count = 0;
  // The table the host calls through (&table once loaded, else NULL). Every entry with a host default
  // (docs/ABI.md, "Required and optional entries") is set: the plugin's own function where its table
  // has one, the host's default where it left the entry NULL or predates it. So `api->queue_flush(q)`
  // is always safe, and the defaults live in one place (backend.cpp). The entries without a
  // context-free default stay NULL here and are reached through wrappers: supports_call through
  // Device::supports_call, get_proc_address through proc().
  const braid_backend_api* api = nullptr;
  const braid_backend_api* plugin_api = nullptr;  // the plugin's own table, valid up to its struct_size
  braid_backend_api table{};
  SharedLibrary library;  // declared last: closed after shutdown below

  // The plugin's extension function `name` (plugin ABI 1.4 get_proc_address), or NULL when the plugin
  // has none of that name, offers no extensions, or did not load.
  void* proc(const char* name) const noexcept {
    if (!loaded || name == nullptr || table.get_proc_address == nullptr) return nullptr;
    return table.get_proc_address(name);
  }

  // The entry at byte offset `offset` of the table the host calls through (NULL if it is unset or the
  // backend did not load).
  template <typename Fn>
  Fn function_at(size_t offset) const noexcept {
    if (api == nullptr || api->struct_size < offset + sizeof(Fn)) return nullptr;
    Fn fn;
    std::memcpy(&fn, reinterpret_cast<const char*>(api) + offset, sizeof fn);
    return fn;
  }

  Backend() = default;
  // Not movable either: api points into this object.
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

// The folder libbraid.so was loaded from, where its plugins are looked for first ("" if unknown).
std::string directory_of_libbraid();

// Splits "a,b,c" (or a list with another separator; empty items dropped).
std::vector<std::string> split_list(const std::string& s, char sep = ',');

// Loads one plugin file (used by load_backends; exposed for tests and tools).
std::unique_ptr<Backend> load_backend(const std::string& name, const std::string& path, const braid_host_api* host);

}  // namespace braid
