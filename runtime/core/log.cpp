#include "core/log.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <shared_mutex>
#include <utility>

#include "core/dtype.h"
#include "core/error.h"

namespace braid {
namespace {

constexpr int kOff = BRAID_LOG_ERROR + 1;

// BRAID_LOG's threshold; -1 for a value braid does not read (then nothing is printed, and contexts
// refuse to be created, naming it).
int env_threshold() {
  static const int level = [] {
    const char* v = std::getenv("BRAID_LOG");
    if (v == nullptr || *v == '\0' || !std::strcmp(v, "off")) return kOff;
    if (!std::strcmp(v, "debug")) return int(BRAID_LOG_DEBUG);
    if (!std::strcmp(v, "info")) return int(BRAID_LOG_INFO);
    if (!std::strcmp(v, "warning") || !std::strcmp(v, "warn")) return int(BRAID_LOG_WARNING);
    if (!std::strcmp(v, "error")) return int(BRAID_LOG_ERROR);
    return -1;
  }();
  return level;
}

struct Sink {
  std::shared_mutex mu;  // shared while a callback runs, exclusive to replace it
  braid_log_fn fn = nullptr;
  void* user = nullptr;
  int min_level = kOff;
};

Sink& sink() {
  static Sink* s = new Sink();  // never destroyed: plugins may log while statics are torn down
  return *s;
}

// Whether the calling thread is inside the callback: setting the callback from there would wait for
// the shared lock the thread itself holds (a deadlock), so that call is refused instead.
thread_local bool t_in_callback = false;

}  // namespace

const char* log_level_name(braid_log_level level) noexcept {
  switch (enum_int(level)) {
    case BRAID_LOG_DEBUG: return "debug";
    case BRAID_LOG_INFO: return "info";
    case BRAID_LOG_WARNING: return "warning";
    case BRAID_LOG_ERROR: return "error";
    default: return "invalid";
  }
}

void log_message(braid_log_level level, const char* message) noexcept {
  if (message == nullptr) return;
  Sink& s = sink();
  {
    std::shared_lock lock(s.mu);
    if (s.fn != nullptr) {
      if (int(level) >= s.min_level) {
        const bool outer = std::exchange(t_in_callback, true);
        s.fn(s.user, level, message);
        t_in_callback = outer;
      }
      return;
    }
  }
  const int threshold = env_threshold();
  if (threshold >= 0 && int(level) >= threshold) std::fprintf(stderr, "braid %s: %s\n", log_level_name(level), message);
}

std::string log_env_error() {
  if (env_threshold() >= 0) return "";
  return std::string("BRAID_LOG='") + std::getenv("BRAID_LOG") + "' is not one of debug, info, warning, error, off";
}

}  // namespace braid

extern "C" {

BRAID_API braid_status braid_set_log_callback(braid_log_fn fn, void* user, braid_log_level min_level) {
  return braid::guard("braid_set_log_callback", [&] {
    const int level = braid::enum_int(min_level);
    if (fn != nullptr && (level < BRAID_LOG_DEBUG || level > BRAID_LOG_ERROR))
      braid::fail(BRAID_ERR_INVALID_ARGUMENT, "min_level ", level, " is not a braid_log_level");
    if (braid::t_in_callback) braid::fail(BRAID_ERR_INVALID_STATE, "called from the log callback");
    braid::Sink& s = braid::sink();
    std::unique_lock lock(s.mu);
    s.fn = fn;
    s.user = user;
    s.min_level = fn != nullptr ? level : braid::kOff;
  });
}

BRAID_API const char* braid_log_level_name(braid_log_level level) { return braid::log_level_name(level); }

}  // extern "C"
