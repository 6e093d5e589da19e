#include "plugin/comm.h"

#include <dlfcn.h>

#include <cstddef>
#include <filesystem>
#include <vector>

#include "core/error.h"
#include "core/log.h"

namespace braid {
namespace {

const braid_comm_host_api* comm_host_api() {
  static const braid_comm_host_api api = {sizeof(braid_comm_host_api), BRAID_COMM_ABI_MAJOR, BRAID_COMM_ABI_MINOR,
                                          [](braid_log_level level, const char* m) { log_message(level, m); }};
  return &api;
}

// ABI 1.0's table ends with last_error; later minors append, and the host reads only what
// struct_size covers.
constexpr size_t kCommAbi10TableSize = offsetof(braid_comm_api, last_error) + sizeof(braid_comm_api::last_error);

}  // namespace

std::shared_ptr<CommPlugin> load_comm_plugin(const std::string& name, const std::string& extra_path) {
  namespace fs = std::filesystem;
  const std::string file = "libbraid-comm-" + name + ".so";
  std::vector<std::string> dirs;
  if (auto own = directory_of_libbraid(); !own.empty()) dirs.push_back(own);
  for (auto& d : split_list(extra_path, ':')) dirs.push_back(d);
  std::string path;
  for (const auto& d : dirs) {
    std::error_code ec;
    if (fs::is_regular_file(fs::path(d) / file, ec)) {
      path = (fs::path(d) / file).string();
      break;
    }
  }
  if (path.empty()) {
    std::string where;
    for (const auto& d : dirs) where += (where.empty() ? "" : ", ") + d;
    fail(BRAID_ERR_NOT_FOUND, "no communication plugin '", name, "' (", file, " in ",
         where.empty() ? "no folder" : where, ")",
         name == "gloo" ? ": it is built where Debian's libgloo-dev is installed (scripts/install-deps.sh)"
         : name == "nccl"
             ? ": it is built where the CUDA toolkit with nccl.h is installed (docs/DISTRIBUTED.md, \"NCCL\")"
             : "");
  }
  auto p = std::make_shared<CommPlugin>();
  p->name = name;
  p->path = path;
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* err = dlerror();
    fail(BRAID_ERR_NOT_FOUND, "cannot load ", path, ": ", err ? err : "unknown dlopen error");
  }
  p->library = SharedLibrary(handle);
  auto query = reinterpret_cast<braid_comm_query_fn>(dlsym(handle, BRAID_COMM_QUERY_SYMBOL));
  if (!query)
    fail(BRAID_ERR_NOT_FOUND, path, " is not a braid communication plugin (no ", BRAID_COMM_QUERY_SYMBOL, ")");
  const braid_comm_api* api = nullptr;
  const braid_status st = query(BRAID_COMM_ABI_MAJOR, BRAID_COMM_ABI_MINOR, comm_host_api(), &api);
  if (st == BRAID_ERR_ABI_MISMATCH || (api && api->abi_major != BRAID_COMM_ABI_MAJOR))
    fail(BRAID_ERR_ABI_MISMATCH, path, " speaks communication ABI ", api ? api->abi_major : 0, ", not ",
         BRAID_COMM_ABI_MAJOR, ".", BRAID_COMM_ABI_MINOR);
  if (st != BRAID_OK || !api) fail(BRAID_ERR_NOT_FOUND, path, ": ", BRAID_COMM_QUERY_SYMBOL, " failed");
  // struct_size first, before any other field is trusted.
  if (api->struct_size < kCommAbi10TableSize)
    fail(BRAID_ERR_ABI_MISMATCH, path, ": its function table is ", api->struct_size, " bytes, smaller than ABI 1.0's ",
         kCommAbi10TableSize);
  if (!api->available || !api->group_create || !api->group_destroy || !api->supports || !api->run || !api->last_error)
    fail(BRAID_ERR_ABI_MISMATCH, path, ": its function table lacks a required entry");
  const char* reason = nullptr;
  if (!api->available(&reason))
    fail(BRAID_ERR_UNSUPPORTED, "communication plugin '", name,
         "' cannot run here: ", reason ? reason : "no reason given");
  p->api = api;
  return p;
}

}  // namespace braid
