#include "plugin/backend.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstddef>
#include <filesystem>

#include "core/error.h"

namespace braid {
namespace {

constexpr std::string_view kPrefix = "libbraid-backend-";
constexpr std::string_view kSuffix = ".so";

std::string directory_of_libbraid() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&braid_version), &info) == 0 || info.dli_fname == nullptr) return {};
  return std::filesystem::path(info.dli_fname).parent_path().string();
}

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
constexpr uint32_t kAbi10TableSize = offsetof(braid_backend_api, shutdown) + sizeof(braid_backend_api::shutdown);

// Every function of ABI 1.0 must be present; a table with holes is refused rather than crashing later.
const char* missing_function(const braid_backend_api* api) {
#define BRAID_REQUIRE(fn) \
  if (api->fn == nullptr) return #fn;
  BRAID_REQUIRE(device_count) BRAID_REQUIRE(device_props) BRAID_REQUIRE(device_open) BRAID_REQUIRE(device_close)
  BRAID_REQUIRE(buffer_alloc) BRAID_REQUIRE(buffer_free) BRAID_REQUIRE(buffer_host_pointer)
  BRAID_REQUIRE(queue_create) BRAID_REQUIRE(queue_destroy) BRAID_REQUIRE(queue_submit) BRAID_REQUIRE(queue_flush)
  BRAID_REQUIRE(semaphore_create) BRAID_REQUIRE(semaphore_destroy) BRAID_REQUIRE(semaphore_query)
  BRAID_REQUIRE(semaphore_signal) BRAID_REQUIRE(semaphore_wait) BRAID_REQUIRE(semaphore_notify)
  BRAID_REQUIRE(semaphore_fail) BRAID_REQUIRE(supports) BRAID_REQUIRE(shutdown)
#undef BRAID_REQUIRE
  return nullptr;
}

}  // namespace

SharedLibrary::~SharedLibrary() {
  // Sanitizer builds keep plugins mapped so leak and race reports can still symbolise their frames.
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
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
    if (api) b->abi_major = api->abi_major, b->abi_minor = api->abi_minor;
    return b;
  }
  if (st != BRAID_OK) {
    b->reason = cat("braid_backend_query failed with ", braid_status_name(st));
    return b;
  }
  if (api == nullptr) {
    b->reason = "braid_backend_query returned BRAID_OK but no function table";
    return b;
  }
  b->abi_major = api->abi_major;
  b->abi_minor = api->abi_minor;
  if (api->abi_major != BRAID_BACKEND_ABI_MAJOR) {
    b->reason = cat("plugin ABI ", api->abi_major, ".", api->abi_minor, " is incompatible with host plugin ABI ",
                    BRAID_BACKEND_ABI_MAJOR, ".", BRAID_BACKEND_ABI_MINOR, " (major version mismatch)");
    return b;
  }
  // Within a major version the table only grows; ABI 1.0's part must be there entirely. Later fields
  // are read only where struct_size covers them (has_function).
  if (api->struct_size < kAbi10TableSize) {
    b->reason = cat("plugin function table is ", api->struct_size, " bytes, smaller than ABI 1.0's ",
                    kAbi10TableSize);
    return b;
  }
  if (const char* fn = missing_function(api)) {
    b->reason = cat("plugin function table lacks ", fn);
    if (api->shutdown) api->shutdown();  // the table's layout is ours: balance the query
    return b;
  }
  // The backend keeps the name of its file (what BRAID_BACKENDS selects by), so device ids stay unique
  // even if two files carry plugins that call themselves the same.
  b->api = api;
  b->loaded = true;  // from here on the destructor balances the query with shutdown()
  const char* reason = nullptr;
  int32_t count = 0;
  st = api->device_count(&count, &reason);
  if (st != BRAID_OK) {
    b->reason = cat("device enumeration failed: ", braid_status_name(st), reason ? cat(": ", reason) : "");
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

std::vector<std::string> split_list(const std::string& s) { return split(s, ','); }

}  // namespace braid
