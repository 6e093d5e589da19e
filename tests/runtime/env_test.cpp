// Environment variables read by braid_context_create: a value braid would not take as written (a
// negative or overflowing number, text) is a BRAID_ERR_INVALID_ARGUMENT naming the variable and the
// value, never silently a different setting (BRAID_MAX_INFLIGHT_BYTES=-1 used to turn the bound off).
#include <cstdlib>
#include <optional>
#include <string>

#include "support.h"

namespace {

// Sets (or unsets) one variable for its lifetime.
class EnvVar {
 public:
  EnvVar(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~EnvVar() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }
  EnvVar(const EnvVar&) = delete;
  EnvVar& operator=(const EnvVar&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// braid_context_create's status with the given options (cpu only); the context is released.
braid_status create(braid_context_options o = BRAID_CONTEXT_OPTIONS_INIT) {
  o.backends = "cpu";
  braid_context ctx = nullptr;
  const braid_status st = braid_context_create(&o, &ctx);
  if (st == BRAID_OK) {
    CHECK(ctx != nullptr);
    braid_context_release(ctx);
  } else {
    CHECK(ctx == nullptr);
  }
  return st;
}

}  // namespace

TEST_CASE("env: BRAID_MAX_INFLIGHT_OPS / _BYTES and BRAID_SEED refuse what is not a number in range") {
  for (const char* name : {"BRAID_MAX_INFLIGHT_OPS", "BRAID_MAX_INFLIGHT_BYTES", "BRAID_SEED"}) {
    for (const char* bad :
         {"-1", "18446744073709551616", "99999999999999999999999", "128M", "abc", " 12", "12 ", "+5", "0x10", "1e6"}) {
      INFO(name, "=", bad);
      EnvVar v(name, bad);
      CHECK(create() == BRAID_ERR_INVALID_ARGUMENT);
      const std::string msg = braid_last_error();
      CHECK(msg.find("braid_context_create") != std::string::npos);
      CHECK(msg.find(name) != std::string::npos);
      CHECK(msg.find(bad) != std::string::npos);
    }
    for (const char* good : {"0", "4096", "18446744073709551615"}) {
      INFO(name, "=", good);
      EnvVar v(name, good);
      CHECK(create() == BRAID_OK);
    }
  }
  // The matching option wins over the variable, which is then not read at all.
  EnvVar ops("BRAID_MAX_INFLIGHT_OPS", "-1"), bytes("BRAID_MAX_INFLIGHT_BYTES", "lots"), seed("BRAID_SEED", "x");
  braid_context_options o = BRAID_CONTEXT_OPTIONS_INIT;
  o.max_inflight_ops = 16;
  o.max_inflight_bytes = 1 << 20;
  o.seed = 7;
  CHECK(create(o) == BRAID_OK);
}

TEST_CASE("env: BRAID_ENGINE is 'sync' or 'async'") {
  for (const char* good : {"sync", "async"}) {
    EnvVar v("BRAID_ENGINE", good);
    CHECK(create() == BRAID_OK);
  }
  EnvVar v("BRAID_ENGINE", "snyc");
  CHECK(create() == BRAID_ERR_INVALID_ARGUMENT);
  CHECK(std::string(braid_last_error()).find("BRAID_ENGINE='snyc'") != std::string::npos);
}

TEST_CASE("env: BRAID_CPU_DEVICES as a list of core counts gives each cpu device its cores") {
  EnvVar v("BRAID_CPU_DEVICES", "1,1");
  braid_context_options o = BRAID_CONTEXT_OPTIONS_INIT;
  o.backends = "cpu";
  braid_context ctx = nullptr;
  BRAID_CHECK_OK(braid_context_create(&o, &ctx));
  int32_t n = 0;
  BRAID_CHECK_OK(braid_context_device_count(ctx, &n));
  CHECK(n == 2);
  for (braid_device d = 0; d < n; ++d) {
    braid_device_info info{};
    info.struct_size = sizeof info;
    BRAID_CHECK_OK(braid_context_device_info(ctx, d, &info));
    CHECK(info.compute_units == 1);
  }
  BRAID_CHECK_OK(braid_context_release(ctx));
}
