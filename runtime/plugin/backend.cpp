#include "plugin/backend.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <filesystem>

#include "core/error.h"

namespace braid {
namespace {

constexpr std::string_view kPrefix = "libbraid-backend-";
constexpr std::string_view kSuffix = ".so";

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(sep, start);
    if (end == std::string::npos) end = s.size();
    if (end > start) parts.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

// ABI 1.0's table ended with shutdown; later minors append.
constexpr uint32_t kBackendAbi10TableSize = offsetof(braid_backend_api, shutdown) + sizeof(braid_backend_api::shutdown);
// The bytes a table must have for its version fields to be its own: anything shorter is refused
// before they are read, since they would come from past its end (issue 31).
constexpr uint32_t kVersionedTableSize = offsetof(braid_backend_api, abi_minor) + sizeof(braid_backend_api::abi_minor);

// The host's defaults for the optional entries (braid_backend.h says which entries are optional and
// why the others have no correct default). C linkage: they sit in a C table.
extern "C" {
static void* default_buffer_host_pointer(braid_backend_buffer) { return nullptr; }  // nothing host visible
static braid_status default_queue_flush(braid_backend_queue) { return BRAID_OK; }   // nothing is held back
static void default_shutdown(void) {}                                               // nothing to release
static const char* default_device_props_json(int32_t) { return nullptr; }           // reported as "{}"
}

// An entry of ABI 1.0's table, and the minor from which a NULL there is allowed (0: never).
struct Entry {
  const char* name;
  size_t offset;
  uint32_t optional_since;
};
#define BRAID_ENTRY(fn, since) \
  Entry { #fn, offsetof(braid_backend_api, fn), since }
constexpr Entry kAbi10Entries[] = {
    BRAID_ENTRY(device_count, 0),
    BRAID_ENTRY(device_props, 0),
    BRAID_ENTRY(device_open, 0),
    BRAID_ENTRY(device_close, 0),
    BRAID_ENTRY(buffer_alloc, 0),
    BRAID_ENTRY(buffer_free, 0),
    BRAID_ENTRY(buffer_host_pointer, 4),
    BRAID_ENTRY(queue_create, 0),
    BRAID_ENTRY(queue_destroy, 0),
    BRAID_ENTRY(queue_submit, 0),
    BRAID_ENTRY(queue_flush, 4),
    BRAID_ENTRY(semaphore_create, 0),
    BRAID_ENTRY(semaphore_destroy, 0),
    BRAID_ENTRY(semaphore_query, 0),
    BRAID_ENTRY(semaphore_signal, 0),
    BRAID_ENTRY(semaphore_wait, 0),
    BRAID_ENTRY(semaphore_notify, 0),
    BRAID_ENTRY(semaphore_fail, 0),
    BRAID_ENTRY(supports, 0),
    BRAID_ENTRY(shutdown, 4),
};
#undef BRAID_ENTRY

bool entry_is_null(const braid_backend_api* api, size_t offset) {
  void (*fn)(void);  // every entry is a function pointer of the same size
  std::memcpy(&fn, reinterpret_cast<const char*>(api) + offset, sizeof fn);
  return fn == nullptr;
}

// The first required entry the table lacks, or NULL. A table with a hole there is refused up front
// rather than crashing later. Optionality is a 1.4 rule: a table declaring an older minor is held to
// its own minor's rule (all of ABI 1.0 present), as the host of that minor held it.
const char* missing_function(const braid_backend_api* api) {
  for (const Entry& e : kAbi10Entries) {
    const bool optional = e.optional_since != 0 && api->abi_minor >= e.optional_since;
    if (!optional && entry_is_null(api, e.offset)) return e.name;
  }
  return nullptr;
}

// The table the host calls through: the plugin's entries up to its struct_size (a 1.3 plugin's table
// ends before the 1.4 entries, which are then never read), the host's defaults for the optional
// entries it lacks.
void resolve_table(Backend& b, const braid_backend_api* plugin) {
  braid_backend_api& t = b.table;
  t = braid_backend_api{};
  std::memcpy(&t, plugin, std::min<size_t>(plugin->struct_size, sizeof t));
  t.struct_size = sizeof t;
  if (t.buffer_host_pointer == nullptr) t.buffer_host_pointer = default_buffer_host_pointer;
  if (t.queue_flush == nullptr) t.queue_flush = default_queue_flush;
  if (t.shutdown == nullptr) t.shutdown = default_shutdown;
  if (t.device_props_json == nullptr) t.device_props_json = default_device_props_json;
  b.plugin_api = plugin;
  b.api = &t;
}

}  // namespace

SharedLibrary::~SharedLibrary() {
  // Sanitizer builds keep plugins mapped so leak and race reports can still symbolise their frames.
#if !defined(BRAID_SANITIZER_ADDRESS) && !defined(BRAID_SANITIZER_THREAD)
  if (handle_) dlclose(handle_);
#endif
}

Backend::~Backend() {
  if (loaded && api) api->shutdown();
}

std::unique_ptr<Backend> load_backend(const std::string& name, const std::string& path, const braid_host_api* host) {
  auto b = std::make_unique<Backend>();
  b->name = name;
  b->path = path;
  if (void* mapped = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD)) {
    dlclose(mapped);  // only asked whether it was mapped
  } else {
    b->newly_mapped = true;
  }
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* err = dlerror();
    b->reason = cat("cannot load plugin: ", err ? err : "unknown dlopen error");
    return b;
  }
  b->library = SharedLibrary(handle);
  auto query = reinterpret_cast<braid_backend_query_fn>(dlsym(handle, BRAID_BACKEND_QUERY_SYMBOL));
  if (!query) {
    b->reason = cat("not a braid plugin: it does not export ", BRAID_BACKEND_QUERY_SYMBOL);
    return b;
  }
  const braid_backend_api* api = nullptr;
  braid_status st = query(BRAID_BACKEND_ABI_MAJOR, BRAID_BACKEND_ABI_MINOR, host, &api);
  if (st == BRAID_ERR_ABI_MISMATCH) {
    b->reason = cat("plugin refused host plugin ABI ", BRAID_BACKEND_ABI_MAJOR, ".", BRAID_BACKEND_ABI_MINOR,
                    " (major version mismatch)");
    if (api && api->struct_size >= kVersionedTableSize) b->abi_major = api->abi_major, b->abi_minor = api->abi_minor;
    return b;
  }
  if (st != BRAID_OK) {
    b->reason = cat("braid_backend_query failed with ", status_name(st));
    return b;
  }
  if (api == nullptr) {
    b->reason = "braid_backend_query returned BRAID_OK but no function table";
    return b;
  }
  if (api->struct_size < kVersionedTableSize) {
    b->reason = cat("plugin function table is ", api->struct_size, " bytes, too short to hold its ABI version (",
                    kVersionedTableSize, " bytes at least)");
    return b;
  }
  b->abi_major = api->abi_major;
  b->abi_minor = api->abi_minor;
  if (api->abi_major != BRAID_BACKEND_ABI_MAJOR) {
    b->reason = cat("plugin ABI ", api->abi_major, ".", api->abi_minor, " is incompatible with host plugin ABI ",
                    BRAID_BACKEND_ABI_MAJOR, ".", BRAID_BACKEND_ABI_MINOR, " (major version mismatch)");
    return b;
  }
  // Within a major version the table only grows; ABI 1.0's part must be there entirely (its optional
  // entries may be NULL, not missing). Later fields are read only where struct_size covers them
  // (resolve_table).
  if (api->struct_size < kBackendAbi10TableSize) {
    b->reason =
        cat("plugin function table is ", api->struct_size, " bytes, smaller than ABI 1.0's ", kBackendAbi10TableSize);
    return b;
  }
  if (const char* fn = missing_function(api)) {
    b->reason = cat("plugin function table lacks ", fn, " (a required entry of plugin ABI ", api->abi_major, ".",
                    api->abi_minor, ")");
    if (api->shutdown) api->shutdown();  // the table's layout is ours: balance the query
    return b;
  }
  // The backend keeps the name of its file (what BRAID_BACKENDS selects by), so device ids stay unique
  // even if two files carry plugins that call themselves the same.
  resolve_table(*b, api);
  b->loaded = true;  // from here on the destructor balances the query with shutdown()
  const char* reason = nullptr;
  int32_t count = 0;
  st = b->api->device_count(&count, &reason);
  if (st != BRAID_OK) {
    b->reason = cat("device enumeration failed: ", status_name(st), reason ? cat(": ", reason) : "");
    count = 0;
  } else if (count == 0) {
    b->reason = reason && *reason ? reason : "no devices";
  }
  b->device_count = std::max(count, 0);
  return b;
}

std::vector<std::unique_ptr<Backend>> load_backends(const PluginSearch& search, const braid_host_api* host) {
  namespace fs = std::filesystem;
  std::vector<std::string> dirs;
  if (auto own = directory_of_libbraid(); !own.empty()) dirs.push_back(own);
  for (auto& d : split(search.extra_path, ':')) dirs.push_back(d);

  std::vector<std::pair<std::string, std::string>> found;  // (name, path), first of a name wins
  for (const auto& dir : dirs) {
    std::error_code ec;
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(dir, ec)) files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    for (const auto& file : files) {
      std::string fname = file.filename().string();
      if (!fname.starts_with(kPrefix) || !fname.ends_with(kSuffix)) continue;
      std::string name = fname.substr(kPrefix.size(), fname.size() - kPrefix.size() - kSuffix.size());
      if (!search.only.empty() && std::find(search.only.begin(), search.only.end(), name) == search.only.end())
        continue;
      if (std::any_of(found.begin(), found.end(), [&](auto& f) { return f.first == name; })) continue;
      found.emplace_back(name, file.string());
    }
  }
  std::vector<std::unique_ptr<Backend>> backends;
  for (auto& [name, path] : found) backends.push_back(load_backend(name, path, host));
  // A backend asked for by name that was not found is listed, so the user learns why.
  for (const auto& want : search.only) {
    if (std::none_of(found.begin(), found.end(), [&](auto& f) { return f.first == want; })) {
      auto b = std::make_unique<Backend>();
      b->name = want;
      b->reason = cat("no plugin file ", kPrefix, want, kSuffix, " in the search path");
      backends.push_back(std::move(b));
    }
  }
  return backends;
}

std::vector<std::string> split_list(const std::string& s, char sep) { return split(s, sep); }

std::string directory_of_libbraid() {
  Dl_info info{};
  // Any address inside libbraid names its file: this function's own.
  if (dladdr(reinterpret_cast<void*>(&directory_of_libbraid), &info) == 0 || info.dli_fname == nullptr) return {};
  return std::filesystem::path(info.dli_fname).parent_path().string();
}

}  // namespace braid
