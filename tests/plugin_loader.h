// Opens a backend plugin directly, as the host's loader does (dlopen, the query symbol, this ABI's
// version), for the suites that drive a plugin through braid_backend.h without libbraid's context
// (tests/cpu, tests/vulkan, tests/cuda). The plugin is shut down at scope exit but stays mapped: the
// libraries it links (OpenBLAS and oneTBB, the Vulkan loader and driver, cudart) register process-wide
// state and exit handlers in it.
#pragma once
#include <dlfcn.h>

#include "braid_backend.h"

namespace test {

class PluginLib {
 public:
  PluginLib(const char* path, const braid_host_api* host) {
    lib_ = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (lib_ == nullptr) {
      const char* e = dlerror();
      error_ = e ? e : "dlopen failed";
      return;
    }
    auto query = reinterpret_cast<braid_backend_query_fn>(dlsym(lib_, BRAID_BACKEND_QUERY_SYMBOL));
    if (query == nullptr) {
      error_ = "no " BRAID_BACKEND_QUERY_SYMBOL " symbol";
    } else if (query(BRAID_BACKEND_ABI_MAJOR, BRAID_BACKEND_ABI_MINOR, host, &api_) != BRAID_OK) {
      api_ = nullptr;
      error_ = "the query refused this host";
    }
  }
  ~PluginLib() {
    if (api_ != nullptr) api_->shutdown();
  }
  PluginLib(const PluginLib&) = delete;
  PluginLib& operator=(const PluginLib&) = delete;

  void* lib() const { return lib_; }
  const braid_backend_api* api() const { return api_; }
  const char* error() const { return error_; }  // why lib() or api() is null

 private:
  void* lib_ = nullptr;
  const braid_backend_api* api_ = nullptr;
  const char* error_ = "";
};

}  // namespace test
