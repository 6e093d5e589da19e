// The host's callbacks: the plugin-side helper every backend shares (backends/common/host_callbacks.h).
#pragma once
#include "host_callbacks.h"

namespace braid::cuda {
namespace host = ::braid::plugin::host;
}  // namespace braid::cuda
