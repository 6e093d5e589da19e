// A communication plugin (abi/braid_comm.h) as the host sees it: the dlopen'ed library and its
// negotiated function table. Loaded on demand by the process groups that name it.
#pragma once
#include <memory>
#include <string>

#include "braid_comm.h"
#include "plugin/backend.h"

namespace braid {

struct CommPlugin {
  std::string name;
  std::string path;
  const braid_comm_api* api = nullptr;
  SharedLibrary library;
};

// Finds libbraid-comm-<name>.so next to libbraid, then in extra_path (colon-separated), loads it and
// checks its table. Throws BRAID_ERR_NOT_FOUND (no such file: says where it looked and which package
// builds it), BRAID_ERR_ABI_MISMATCH, or BRAID_ERR_UNSUPPORTED when the plugin says it cannot work here.
std::shared_ptr<CommPlugin> load_comm_plugin(const std::string& name, const std::string& extra_path);

}  // namespace braid
