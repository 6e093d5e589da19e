// The log (abi/braid.h, "log"): what plugins and the library report besides status codes. Nothing is
// printed unless BRAID_LOG asks, and an application's callback takes precedence over printing.
#pragma once
#include <string>

#include "braid.h"

namespace braid {

// Delivers message at level: to the application's callback if one is set and the level reaches its
// minimum, else to stderr if BRAID_LOG's level lets it through. Any thread; never throws.
void log_message(braid_log_level level, const char* message) noexcept;
// What braid_log_level_name returns.
const char* log_level_name(braid_log_level level) noexcept;

// Why BRAID_LOG's value is not one braid reads ("" when it is, or is unset): context creation fails
// with it, as for every other variable.
std::string log_env_error();

}  // namespace braid
