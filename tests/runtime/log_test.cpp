// The log (abi/braid.h): a callback receives what the plugins report, at the levels asked for, and
// setting it back to NULL restores BRAID_LOG's handling.
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/support.h"

namespace {

struct Received {
  std::mutex mu;
  std::vector<std::pair<braid_log_level, std::string>> messages;
  bool has(braid_log_level level, const std::string& part) {
    std::lock_guard lock(mu);
    for (auto& [l, m] : messages)
      if (l == level && m.find(part) != std::string::npos) return true;
    return false;
  }
};

void receive(void* user, braid_log_level level, const char* message) {
  auto* r = static_cast<Received*>(user);
  std::lock_guard lock(r->mu);
  r->messages.emplace_back(level, message);
}

}  // namespace

TEST_CASE("log: a callback receives the plugins' warnings, filtered by level") {
  Received got;
  BRAID_CHECK_OK(braid_set_log_callback(receive, &got, BRAID_LOG_WARNING));
  {
    // The CPU plugin corrects an out-of-range device count and says so as a warning.
    test::Ctx c(1000);
    CHECK(c.devices() == 64);
  }
  CHECK(got.has(BRAID_LOG_WARNING, "exceeds the maximum of 64 devices"));
  {
    std::lock_guard lock(got.mu);
    for (auto& [level, m] : got.messages) CHECK(level >= BRAID_LOG_WARNING);
  }
  BRAID_CHECK_OK(braid_set_log_callback(nullptr, nullptr, BRAID_LOG_DEBUG));
  const size_t before = got.messages.size();
  { test::Ctx c(1000); }
  CHECK(got.messages.size() == before);  // the callback no longer receives anything

  Received errors_only;
  BRAID_CHECK_OK(braid_set_log_callback(receive, &errors_only, BRAID_LOG_ERROR));
  { test::Ctx c(1000); }
  CHECK(errors_only.messages.empty());  // the warning is below the level asked for
  BRAID_CHECK_OK(braid_set_log_callback(nullptr, nullptr, BRAID_LOG_DEBUG));
}

TEST_CASE("log: bad arguments and level names") {
  CHECK(braid_set_log_callback(receive, nullptr, static_cast<braid_log_level>(7)) == BRAID_ERR_INVALID_ARGUMENT);
  CHECK(std::string(braid_last_error()).find("min_level") != std::string::npos);
  CHECK(std::string(braid_log_level_name(BRAID_LOG_DEBUG)) == "debug");
  CHECK(std::string(braid_log_level_name(BRAID_LOG_WARNING)) == "warning");
  CHECK(std::string(braid_log_level_name(static_cast<braid_log_level>(-1))) == "invalid");
}
