// ABI tests, fork(): the child refuses the parent's context and can create a fresh one, and the parent
// goes on, with the fake plugin and with the cpu backend while TBB kernels or an OpenBLAS GEMM run.
//
// Cases that need the real CPU backend are skipped when it is not part of the build
// (BRAID_TEST_HAVE_CPU=0).

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "abi_common.h"

using namespace abi_test;

// ================================================================================================
TEST_SUITE("fork") {

namespace {

// Exit codes of a forked child (0 = all good), so the parent can say which step failed.
enum ChildResult {
  kChildOk = 0,
  kOldContextUsable = 10,
  kOldContextMessage,
  kOldTensorUsable,
  kNewContextFailed,
  kNewContextNoDevice,
  kNewWorkFailed,
  kNewValuesWrong,
  kNewReleaseFailed,
  kOldReleaseFailed,
  // Only from the driver process of the GEMM case:
  kDriverSetupFailed = 40,
  kDriverForkFailed,
  kDriverChildHung,
  kDriverChildFailed,
  kDriverWaitFailed,
  kDriverValuesWrong,
};

const char* child_result_name(int code) {
  switch (code) {
    case kChildOk: return "ok";
    case kOldContextUsable: return "the parent's context did not fail with BRAID_ERR_INVALID_STATE";
    case kOldContextMessage: return "the error for the parent's context does not mention fork";
    case kOldTensorUsable: return "a tensor of the parent's context did not fail with BRAID_ERR_INVALID_STATE";
    case kNewContextFailed: return "a fresh context could not be created";
    case kNewContextNoDevice: return "the fresh context has no device";
    case kNewWorkFailed: return "work on the fresh context failed";
    case kNewValuesWrong: return "the fresh context computed wrong values";
    case kNewReleaseFailed: return "releasing the fresh context failed";
    case kOldReleaseFailed: return "releasing the parent's context failed";
    case kDriverSetupFailed: return "driver: setting up the context and work failed";
    case kDriverForkFailed: return "driver: fork failed";
    case kDriverChildHung: return "driver: the child hung (killed by SIGALRM)";
    case kDriverChildFailed: return "driver: the child's checks failed";
    case kDriverWaitFailed: return "driver: braid_wait_all after the fork failed";
    case kDriverValuesWrong: return "driver: the parent's results after the fork are wrong";
    default: return "unknown";
  }
}

// In a child: no doctest macros (the parent reports), only exit codes. `cpu` selects real kernels
// (a large fill split over TBB workers and an OpenBLAS GEMM); otherwise host copies on the fake device.
int child_checks(braid_context parent_ctx, braid_tensor parent_tensor, const char* backends, bool cpu) {
  int32_t n = 0;
  if (braid_context_device_count(parent_ctx, &n) != BRAID_ERR_INVALID_STATE) return kOldContextUsable;
  if (!std::strstr(braid_last_error(), "fork")) return kOldContextMessage;
  const int64_t shape1[1] = {4};
  braid_tensor t = nullptr;
  if (braid_tensor_empty(parent_ctx, 0, BRAID_FLOAT32, 1, shape1, &t) != BRAID_ERR_INVALID_STATE)
    return kOldContextUsable;
  if (braid_wait_all(parent_ctx) != BRAID_ERR_INVALID_STATE) return kOldContextUsable;
  int32_t ndim = 0;
  if (braid_tensor_ndim(parent_tensor, &ndim) != BRAID_ERR_INVALID_STATE) return kOldTensorUsable;

  braid_context_options o = BRAID_CONTEXT_OPTIONS_INIT;
  o.backends = backends;
  o.backend_path = kPluginDir.c_str();
  braid_context ctx = nullptr;
  if (braid_context_create(&o, &ctx) != BRAID_OK) return kNewContextFailed;
  if (braid_context_device_count(ctx, &n) != BRAID_OK || n < 1) return kNewContextNoDevice;
  if (cpu) {
    const int64_t big[2] = {1024, 1024};
    braid_tensor x = nullptr;
    if (braid_full(ctx, 0, BRAID_FLOAT32, 2, big, 4.25, &x) != BRAID_OK) return kNewWorkFailed;
    std::vector<float> got(1024 * 1024, 0.0f);
    if (braid_tensor_to_host(x, got.data(), got.size() * sizeof(float)) != BRAID_OK) return kNewWorkFailed;
    if (std::any_of(got.begin(), got.end(), [](float v) { return v != 4.25f; })) return kNewValuesWrong;
    const int64_t sq[2] = {128, 128};
    braid_tensor ones = nullptr, prod = nullptr;
    if (braid_full(ctx, 0, BRAID_FLOAT32, 2, sq, 1.0, &ones) != BRAID_OK) return kNewWorkFailed;
    if (braid_matmul(ones, ones, 0, 0, &prod) != BRAID_OK) return kNewWorkFailed;
    std::vector<float> p(128 * 128, 0.0f);
    if (braid_tensor_to_host(prod, p.data(), p.size() * sizeof(float)) != BRAID_OK) return kNewWorkFailed;
    if (std::any_of(p.begin(), p.end(), [](float v) { return v != 128.0f; })) return kNewValuesWrong;
    if (braid_tensor_release(x) != BRAID_OK || braid_tensor_release(ones) != BRAID_OK ||
        braid_tensor_release(prod) != BRAID_OK)
      return kNewWorkFailed;
  } else {
    const int64_t shape[2] = {5, 7};
    std::vector<float> got(35, 0.0f), want(35, 0.0f);
    for (size_t i = 0; i < want.size(); ++i) want[i] = static_cast<float>(i) * 0.5f;
    braid_tensor x = nullptr;
    if (braid_tensor_empty(ctx, 0, BRAID_FLOAT32, 2, shape, &x) != BRAID_OK) return kNewWorkFailed;
    if (braid_tensor_write_host(x, want.data(), want.size() * sizeof(float)) != BRAID_OK) return kNewWorkFailed;
    if (braid_tensor_to_host(x, got.data(), got.size() * sizeof(float)) != BRAID_OK) return kNewWorkFailed;
    if (got != want) return kNewValuesWrong;
    if (braid_tensor_release(x) != BRAID_OK) return kNewWorkFailed;
  }
  if (braid_wait_all(ctx) != BRAID_OK) return kNewWorkFailed;
  if (braid_context_release(ctx) != BRAID_OK) return kNewReleaseFailed;
  // Dropping the inherited context in the child is allowed (it is leaked, never joined).
  if (braid_context_release(parent_ctx) != BRAID_OK) return kOldReleaseFailed;
  return kChildOk;
}

// Queues `per_device` matmuls of a 400x400 tensor of ones by itself on cpu:0 and cpu:1 (the process
// sets BRAID_CPU_DEVICES=2 before the context) without waiting for them. Every tensor made goes to
// `keep`, or with no `keep` stays alive to the end of the process (live tensors hold the context past
// its release). False if a call failed.
bool queue_gemms_on_two_cpu_devices(braid_context ctx, int per_device, std::vector<braid_tensor>* keep) {
  const int64_t shape[2] = {400, 400};
  std::vector<float> ones(400 * 400, 1.0f);
  for (braid_device dev : {0, 1}) {
    braid_tensor a = nullptr;
    if (braid_tensor_from_host(ctx, dev, BRAID_FLOAT32, 2, shape, ones.data(), ones.size() * sizeof(float), &a) !=
        BRAID_OK)
      return false;
    if (keep) keep->push_back(a);
    for (int i = 0; i < per_device; ++i) {
      braid_tensor y = nullptr;
      if (braid_matmul(a, a, 0, 0, &y) != BRAID_OK) return false;
      if (keep) keep->push_back(y);
    }
  }
  return true;
}

// Runs body in a forked process bounded by alarm(seconds); returns its exit code, or -signal.
template <class F>
int run_forked(unsigned seconds, F&& body) {
  std::fflush(nullptr);  // nothing buffered is written twice
  pid_t pid = fork();
  if (pid < 0) return -1000;
  if (pid == 0) {
    alarm(seconds);  // a hang (a runtime or library lock held across fork) becomes SIGALRM
    _exit(body());
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1001;
  if (WIFSIGNALED(status)) return -WTERMSIG(status);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1002;
}

void check_child_result(int code, const char* who) {
  if (code < 0) {
    FAIL(str(who) << " was killed by signal " << -code << (-code == SIGALRM ? " (SIGALRM: it hung)" : ""));
  }
  CHECK_MESSAGE(code == kChildOk, str(who) << " exit code " << code << ": " << str(child_result_name(code)));
}

}  // namespace

TEST_CASE("fork: the child refuses the parent's context, a fresh one works, the parent goes on (fake plugin)") {
  CleanPluginEnv env;
  Context c("newer_minor");
  REQUIRE_CREATED(c);
  const int64_t shape[1] = {64};
  std::vector<double> v(64);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i) - 3.0;
  Tensor t;
  REQUIRE_OK(braid_tensor_empty(c.ctx, 0, BRAID_FLOAT64, 1, shape, t.out()));
  REQUIRE_OK(braid_tensor_write_host(t.t, v.data(), v.size() * sizeof(double)));  // work pushed before fork

  check_child_result(run_forked(30, [&] { return child_checks(c.ctx, t.t, "newer_minor", /*cpu=*/false); }),
                     "the child");

  // The parent's context and tensor keep working.
  CHECK(to_host<double>(t.t, 64) == v);
  std::vector<double> w(64, 9.0);
  REQUIRE_OK(braid_tensor_write_host(t.t, w.data(), w.size() * sizeof(double)));
  CHECK(to_host<double>(t.t, 64) == w);
  CHECK_OK(braid_wait_all(c.ctx));
  CHECK(c.devices() == 1);
}

TEST_CASE("fork: cpu backend with TBB kernels in flight" * doctest::skip(!kHaveCpu || kUnderTsan)) {
  CleanPluginEnv env;
  Context c("cpu");
  REQUIRE_CREATED(c);
  braid_device dev = -1;
  REQUIRE_OK(braid_context_find_device(c.ctx, "cpu:0", &dev));
  // Elementwise work (parallel_for over the device's TBB arena, no OpenBLAS) still queued or running
  // when fork() happens: x <- x * 1 + 0 ... keeps every value at 1.5.
  const int64_t shape[1] = {1 << 21};
  const size_t n = size_t{1} << 21;
  Tensor a;
  REQUIRE_OK(braid_full(c.ctx, dev, BRAID_FLOAT32, 1, shape, 1.5, a.out()));
  std::vector<Tensor> steps(32);
  braid_tensor prev = a.t;
  for (size_t i = 0; i < steps.size(); ++i) {
    REQUIRE_OK(
        braid_binary_scalar(i % 2 ? BRAID_BINARY_ADD : BRAID_BINARY_MUL, prev, i % 2 ? 0.0 : 1.0, 0, steps[i].out()));
    prev = steps[i].t;
  }

  check_child_result(run_forked(30, [&] { return child_checks(c.ctx, a.t, "cpu", /*cpu=*/true); }), "the child");

  // The parent finishes its work and keeps going.
  CHECK_OK(braid_wait_all(c.ctx));
  const auto last = to_host<float>(prev, n);
  CHECK(std::all_of(last.begin(), last.end(), [](float x) { return x == 1.5f; }));
  Tensor d;
  REQUIRE_OK(braid_full(c.ctx, dev, BRAID_INT32, 1, shape, 11, d.out()));
  const auto ints = to_host<int32_t>(d.t, n);
  CHECK(std::all_of(ints.begin(), ints.end(), [](int32_t x) { return x == 11; }));
}

// KNOWN BUG (cpu backend + OpenBLAS 0.3.21 pthreads): OpenBLAS registers a pthread_atfork prepare
// handler (blas_thread_shutdown_) that tears its thread pool down; if a queue thread is inside a
// threaded GEMM at that moment, that GEMM spins forever in exec_blas_async and the PARENT's context
// never drains (braid_wait_all hangs). The child is fine. The scenario therefore runs in a driver
// process bounded by alarm(), so the test reports the hang instead of hanging. may_fail until the cpu
// backend quiesces its GEMMs across fork (e.g. its own pthread_atfork handlers, registered after
// OpenBLAS's so that they run first, holding off fork while a GEMM runs); then drop may_fail.
TEST_CASE("fork: cpu backend with an OpenBLAS GEMM in flight" * doctest::skip(!kHaveCpu || kUnderTsan)) {
  CleanPluginEnv env;
  const int code = run_forked(30, [] {
    braid_context_options o = BRAID_CONTEXT_OPTIONS_INIT;
    o.backends = "cpu";
    braid_context ctx = nullptr;
    if (braid_context_create(&o, &ctx) != BRAID_OK) return int{kDriverSetupFailed};
    const int64_t shape[2] = {512, 512};
    braid_tensor a = nullptr, b = nullptr;
    if (braid_full(ctx, 0, BRAID_FLOAT32, 2, shape, 1.5, &a) != BRAID_OK ||
        braid_full(ctx, 0, BRAID_FLOAT32, 2, shape, 2.0, &b) != BRAID_OK)
      return int{kDriverSetupFailed};
    // x <- (x @ b) / 1024 keeps every value at 1.5; 16 GEMMs keep OpenBLAS busy across the fork.
    std::vector<braid_tensor> keep;
    braid_tensor prev = a;
    for (int i = 0; i < 16; ++i) {
      braid_tensor p = nullptr, s = nullptr;
      if (braid_matmul(prev, b, 0, 0, &p) != BRAID_OK ||
          braid_binary_scalar(BRAID_BINARY_MUL, p, 1.0 / 1024.0, 0, &s) != BRAID_OK)
        return int{kDriverSetupFailed};
      keep.push_back(p);
      keep.push_back(s);
      prev = s;
    }
    const int child = run_forked(10, [&] { return child_checks(ctx, a, "cpu", /*cpu=*/true); });
    if (child == -SIGALRM) return int{kDriverChildHung};
    if (child != kChildOk) return int{kDriverChildFailed};
    if (braid_wait_all(ctx) != BRAID_OK) return int{kDriverWaitFailed};  // hangs with the bug above
    std::vector<float> last(512 * 512);
    if (braid_tensor_to_host(prev, last.data(), last.size() * sizeof(float)) != BRAID_OK) return int{kDriverWaitFailed};
    if (std::any_of(last.begin(), last.end(), [](float x) { return x != 1.5f; })) return int{kDriverValuesWrong};
    for (braid_tensor t : keep) braid_tensor_release(t);
    braid_tensor_release(a);
    braid_tensor_release(b);
    return braid_context_release(ctx) == BRAID_OK ? int{kChildOk} : int{kDriverWaitFailed};
  });
  if (code == -SIGALRM) {
    FAIL(
        "the parent hung after fork() with an OpenBLAS GEMM in flight (OpenBLAS's atfork handler shut its "
        "thread pool down under a running GEMM); see the KNOWN BUG note above this test");
  }
  check_child_result(code, "the driver process");
}

// A child forked while GEMMs are queued on two CPU devices, exiting through exit() (its atexit
// handlers and static destructors run): the CPU plugin's fork guard, a condition variable the parent's
// waiting workers were counted on, hung the child's exit in 5 runs of 6 when it was destroyed there.
TEST_CASE("fork: a child forked with GEMMs queued on two CPU devices exits through exit()" *
          doctest::skip(!kHaveCpu || kUnderTsan)) {
  CleanPluginEnv env;
  for (int round = 0; round < 3; ++round) {
    CAPTURE(round);
    const int code = run_forked(60, [] {
      setenv("BRAID_CPU_DEVICES", "2", 1);
      Context c("cpu");
      std::vector<braid_tensor> keep;
      if (!c.ctx || !queue_gemms_on_two_cpu_devices(c.ctx, 30, &keep)) return int{kDriverSetupFailed};
      std::fflush(nullptr);
      const pid_t pid = fork();
      if (pid < 0) return int{kDriverForkFailed};
      if (pid == 0) {
        alarm(10);
        std::exit(kChildOk);  // not _exit: this is the path that hung
      }
      int status = 0;
      if (waitpid(pid, &status, 0) != pid) return int{kDriverForkFailed};
      if (WIFSIGNALED(status)) return WTERMSIG(status) == SIGALRM ? int{kDriverChildHung} : int{kDriverChildFailed};
      if (!WIFEXITED(status) || WEXITSTATUS(status) != kChildOk) return int{kDriverChildFailed};
      for (braid_tensor t : keep) braid_tensor_release(t);
      return braid_wait_all(c.ctx) == BRAID_OK ? int{kChildOk} : int{kDriverWaitFailed};
    });
    check_child_result(code, "the driver process");
  }
}

// exit() with matmuls still queued on the CPU devices: the libraries' destructors (OpenBLAS's frees
// its buffers) run after the atexit handlers, so braid finishes the queued work in one of those first.
// A CPU worker was still inside OpenBLAS's sgemm when its destructor ran: a crash at exit in about 4
// runs of 5 with two CPU devices. Each round is a process of its own that exits through exit().
TEST_CASE("exit: work still queued on two CPU devices when the process exits" *
          doctest::skip(!kHaveCpu || kUnderTsan)) {
  CleanPluginEnv env;
  for (int round = 0; round < 5; ++round) {
    CAPTURE(round);
    const int code = run_forked(60, [] {
      setenv("BRAID_CPU_DEVICES", "2", 1);
      Context c("cpu");
      if (!c.ctx) std::exit(kNewContextFailed);
      if (!queue_gemms_on_two_cpu_devices(c.ctx, 50, nullptr)) std::exit(kNewWorkFailed);
      if (braid_context_release(c.ctx) != BRAID_OK) std::exit(kNewReleaseFailed);
      c.ctx = nullptr;
      std::exit(kChildOk);  // not _exit: the atexit handlers and the libraries' destructors run
      return int{kChildOk};
    });
    check_child_result(code, "the exiting process");
  }
}

}  // TEST_SUITE("fork")
