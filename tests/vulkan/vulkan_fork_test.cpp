// fork() with a live vulkan:0 context: the child inherits the plugin's process-wide Vulkan instance but
// not the driver's threads, and creating a context there used to hang forever (lavapipe's
// vkCreateDevice waits for them). The child must instead see zero Vulkan devices with the reason,
// and still work on the CPU; the parent's context goes on. A hang is bounded by alarm() in the child
// and reported as a failure, never a hung CI job.
//
// Skipped (visibly) without a Vulkan device.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include <doctest/doctest.h>
#include "braid.h"

namespace {

// Exit codes of the child (0 = all good), so the parent can say which step failed.
enum ChildResult {
  kChildOk = 0,
  kCreateFailed = 10,
  kNoVulkanBackend,
  kVulkanDevicesSeen,
  kNoReason,
  kVulkanDeviceFound,
  kCpuWorkFailed,
  kReleaseFailed,
};

const char* child_result_name(int code) {
  switch (code) {
    case kChildOk: return "ok";
    case kCreateFailed: return "braid_context_create failed";
    case kNoVulkanBackend: return "the vulkan backend is not listed";
    case kVulkanDevicesSeen: return "the vulkan backend reports devices in the forked child";
    case kNoReason: return "the vulkan backend's reason does not mention fork";
    case kVulkanDeviceFound: return "vulkan:0 was found in the forked child";
    case kCpuWorkFailed: return "work on cpu:0 failed";
    case kReleaseFailed: return "releasing the child's context failed";
    default: return "unknown";
  }
}

// In the child: no doctest macros (the parent reports), only exit codes.
int child_checks() {
  braid_context_options o = BRAID_CONTEXT_OPTIONS_INIT;
  o.backends = "cpu,vulkan";
  braid_context ctx = nullptr;
  if (braid_context_create(&o, &ctx) != BRAID_OK) return kCreateFailed;
  int32_t backends = 0;
  braid_context_backend_count(ctx, &backends);
  int result = kNoVulkanBackend;
  for (int32_t i = 0; i < backends; ++i) {
    braid_backend_info info{};
    info.struct_size = sizeof info;
    if (braid_context_backend_info(ctx, i, &info) != BRAID_OK || std::strcmp(info.name, "vulkan") != 0) continue;
    if (info.device_count != 0)
      result = kVulkanDevicesSeen;
    else if (!std::strstr(info.reason, "fork"))
      result = kNoReason;
    else
      result = kChildOk;
  }
  braid_device dev = 0;
  if (result == kChildOk && braid_context_find_device(ctx, "vulkan:0", &dev) != BRAID_ERR_NOT_FOUND)
    result = kVulkanDeviceFound;
  if (result == kChildOk) {
    const int64_t shape[1] = {3};
    braid_tensor x = nullptr;
    float got[3] = {};
    if (braid_context_find_device(ctx, "cpu:0", &dev) != BRAID_OK ||
        braid_full(ctx, dev, BRAID_FLOAT32, 1, shape, 2.5, &x) != BRAID_OK ||
        braid_tensor_to_host(x, got, sizeof got) != BRAID_OK || got[2] != 2.5f || braid_tensor_release(x) != BRAID_OK)
      result = kCpuWorkFailed;
  }
  if (braid_context_release(ctx) != BRAID_OK && result == kChildOk) result = kReleaseFailed;
  return result;
}

}  // namespace

TEST_CASE("vulkan fork: a child forked while a vulkan:0 context is alive sees no Vulkan device and does not hang") {
  braid_context_options o = BRAID_CONTEXT_OPTIONS_INIT;
  o.backends = "cpu,vulkan";
  braid_context ctx = nullptr;
  REQUIRE(braid_context_create(&o, &ctx) == BRAID_OK);
  braid_device vk = 0;
  if (braid_context_find_device(ctx, "vulkan:0", &vk) != BRAID_OK) {
    MESSAGE("skipped: no Vulkan device");
    braid_context_release(ctx);
    return;
  }
  // Work on vulkan:0 first, so the instance, a device and its threads are live across the fork.
  const int64_t shape[1] = {4};
  braid_tensor x = nullptr;
  REQUIRE(braid_full(ctx, vk, BRAID_FLOAT32, 1, shape, 1.5, &x) == BRAID_OK);
  REQUIRE(braid_tensor_wait_to_read(x) == BRAID_OK);

  std::fflush(nullptr);  // nothing buffered is written twice
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    alarm(60);  // a hang becomes SIGALRM, which the parent reports
    _exit(child_checks());
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  if (WIFSIGNALED(status)) {
    FAIL_CHECK("the child was killed by signal " << WTERMSIG(status)
                                                 << (WTERMSIG(status) == SIGALRM ? " (SIGALRM: it hung)" : ""));
  } else {
    REQUIRE(WIFEXITED(status));
    const int code = WEXITSTATUS(status);
    CHECK_MESSAGE(code == kChildOk, "child exit code " << code << ": " << std::string(child_result_name(code)));
  }

  // The parent's device goes on.
  braid_tensor y = nullptr;
  float got[4] = {};
  REQUIRE(braid_binary_scalar(BRAID_BINARY_MUL, x, 2.0, 0, &y) == BRAID_OK);
  CHECK(braid_tensor_to_host(y, got, sizeof got) == BRAID_OK);
  CHECK(got[3] == 3.0f);
  braid_tensor_release(y);
  braid_tensor_release(x);
  CHECK(braid_context_release(ctx) == BRAID_OK);
}
