// What every communication plugin does the same way (abi/braid_comm.h): element widths, which ops
// reduce, the thread's last error and the query's answer. Header-only and plugin-side, like
// backends/common for the device plugins: it sees abi/ only.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "braid_comm.h"

namespace braid::comm_plugin {

// Bytes per element of the dtypes a plugin moves; 0 for the others.
inline size_t dtype_bytes(braid_dtype d) {
  switch (d) {
    case BRAID_FLOAT64:
    case BRAID_INT64: return 8;
    case BRAID_FLOAT32:
    case BRAID_INT32: return 4;
    case BRAID_FLOAT16:
    case BRAID_BFLOAT16: return 2;
    case BRAID_UINT8:
    case BRAID_BOOL: return 1;
    default: return 0;
  }
}

inline bool reduces(braid_comm_op op) {
  return op == BRAID_COMM_ALLREDUCE || op == BRAID_COMM_REDUCE || op == BRAID_COMM_REDUCE_SCATTER;
}

// The message last_error returns: this thread's last failure.
inline std::string& thread_error() {
  thread_local std::string message;
  return message;
}
inline braid_status failed(braid_status status, std::string message) {
  thread_error() = std::move(message);
  return status;
}
inline const char* last_error() { return thread_error().c_str(); }

// braid_comm_query's answer: the table, and whether the host's major is this header's.
inline braid_status answer_query(uint32_t host_major, const braid_comm_api* api, const braid_comm_api** out) {
  if (out == nullptr) return BRAID_ERR_INVALID_ARGUMENT;
  *out = api;
  return host_major == BRAID_COMM_ABI_MAJOR ? BRAID_OK : BRAID_ERR_ABI_MISMATCH;
}

}  // namespace braid::comm_plugin

// Defines the plugin's one exported symbol, braid_comm_query, answering with `table` (errors reach the
// host through last_error, so the host's table is not kept).
#define BRAID_COMM_PLUGIN_QUERY(table)                                                         \
  extern "C" __attribute__((visibility("default"))) braid_status braid_comm_query(             \
      uint32_t host_major, uint32_t, const braid_comm_host_api*, const braid_comm_api** out) { \
    return braid::comm_plugin::answer_query(host_major, &(table), out);                        \
  }
