// vulkan:0's memory limits are refused at the call: allocations beyond the heap the device reports
// (lavapipe granted 6.4 GiB from a 2 GiB heap and left the system to run out), and tensors that no
// kernel could bind (over maxStorageBufferRange, which used to fail only when a kernel ran).
//
// Skipped (visibly) without a Vulkan device.
#include <cstdint>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include "braid.h"

namespace {

struct MemoryContext {
  braid_context ctx = nullptr;
  braid_device vk = -1;
  MemoryContext() {
    braid_context_options o = BRAID_CONTEXT_OPTIONS_INIT;
    o.backends = "cpu,vulkan";
    REQUIRE(braid_context_create(&o, &ctx) == BRAID_OK);
    if (braid_context_find_device(ctx, "vulkan:0", &vk) != BRAID_OK) vk = -1;
  }
  ~MemoryContext() { braid_context_release(ctx); }
};

// The device's memory_bytes and its properties' max_storage_buffer_range.
struct Limits {
  uint64_t memory = 0, max_range = 0;
};
Limits limits(const MemoryContext& c) {
  braid_device_info info{};
  info.struct_size = sizeof info;
  REQUIRE(braid_context_device_info(c.ctx, c.vk, &info) == BRAID_OK);
  Limits l;
  l.memory = info.memory_bytes;
  const std::string json = info.properties_json ? info.properties_json : "";
  const size_t at = json.find("\"max_storage_buffer_range\":");
  REQUIRE(at != std::string::npos);
  l.max_range = std::stoull(json.substr(at + 27));
  return l;
}

}  // namespace

TEST_CASE("vulkan memory: a tensor beyond maxStorageBufferRange is refused at the call") {
  MemoryContext c;
  if (c.vk < 0) {
    MESSAGE("skipped: no Vulkan device");
    return;
  }
  const Limits l = limits(c);
  const int64_t too_big = static_cast<int64_t>(l.max_range / sizeof(float)) + 1024;
  braid_tensor t = nullptr;
  CHECK(braid_full(c.ctx, c.vk, BRAID_FLOAT32, 1, &too_big, 1.0, &t) == BRAID_ERR_OUT_OF_MEMORY);
  CHECK(t == nullptr);
  // The largest tensor a kernel can bind still works end to end.
  const int64_t fits = static_cast<int64_t>(l.max_range / sizeof(float));
  REQUIRE(braid_full(c.ctx, c.vk, BRAID_FLOAT32, 1, &fits, 2.0, &t) == BRAID_OK);
  braid_tensor plus = nullptr;
  REQUIRE(braid_binary_scalar(BRAID_BINARY_ADD, t, 1.0, 0, &plus) == BRAID_OK);
  std::vector<float> host(static_cast<size_t>(fits));
  REQUIRE(braid_tensor_to_host(plus, host.data(), host.size() * sizeof(float)) == BRAID_OK);
  int64_t wrong = 0;
  for (float v : host) wrong += v != 3.0f;
  CHECK(wrong == 0);
  braid_tensor_release(plus);
  braid_tensor_release(t);
}

TEST_CASE("vulkan memory: allocations stop at the heap's size with OUT_OF_MEMORY, and freeing gives it back") {
  MemoryContext c;
  if (c.vk < 0) {
    MESSAGE("skipped: no Vulkan device");
    return;
  }
  const Limits l = limits(c);
  // Tensors of a quarter of the binding limit (32 MiB on lavapipe), never written: allocation only.
  const int64_t count = static_cast<int64_t>(l.max_range / 4 / sizeof(float));
  const uint64_t bytes = static_cast<uint64_t>(count) * sizeof(float);
  const uint64_t most = l.memory / bytes + 2;  // more can never fit
  REQUIRE(most < 1000);
  std::vector<braid_tensor> held;
  braid_status st = BRAID_OK;
  while (held.size() < most + 8) {
    braid_tensor t = nullptr;
    st = braid_tensor_empty(c.ctx, c.vk, BRAID_FLOAT32, 1, &count, &t);
    if (st != BRAID_OK) break;
    held.push_back(t);
  }
  INFO("heap " << l.memory << " bytes; " << held.size() << " tensors of " << bytes << " bytes allocated");
  CHECK(st == BRAID_ERR_OUT_OF_MEMORY);
  CHECK(held.size() <= most);
  CHECK(static_cast<uint64_t>(held.size()) * bytes <= l.memory);
  for (braid_tensor t : held) braid_tensor_release(t);
  REQUIRE(braid_wait_all(c.ctx) == BRAID_OK);
  REQUIRE(braid_memory_empty_cache(c.ctx, c.vk) == BRAID_OK);
  // The memory came back: as many tensors fit again.
  std::vector<braid_tensor> again;
  for (size_t i = 0; i < held.size() / 2; ++i) {
    braid_tensor t = nullptr;
    REQUIRE(braid_tensor_empty(c.ctx, c.vk, BRAID_FLOAT32, 1, &count, &t) == BRAID_OK);
    again.push_back(t);
  }
  for (braid_tensor t : again) braid_tensor_release(t);
}

TEST_CASE("vulkan reductions: exact up to the per-output limit, refused beyond it (never a wrong sum)") {
  MemoryContext c;
  if (c.vk < 0) {
    MESSAGE("skipped: no Vulkan device");
    return;
  }
  const int64_t limit = int64_t{1} << 22;
  for (int64_t n : {limit, limit + 1}) {
    CAPTURE(n);
    braid_tensor t = nullptr, sum = nullptr;
    REQUIRE(braid_full(c.ctx, c.vk, BRAID_FLOAT32, 1, &n, 1.0, &t) == BRAID_OK);
    REQUIRE(braid_reduce(BRAID_REDUCE_SUM, t, 0, nullptr, 0, &sum) == BRAID_OK);
    float got = 0;
    const braid_status st = braid_tensor_to_host(sum, &got, sizeof got);
    if (n == limit) {
      CHECK(st == BRAID_OK);
      CHECK(got == static_cast<float>(n));
    } else {
      CHECK(st == BRAID_ERR_UNSUPPORTED);
      CHECK(std::string(braid_last_error()).find("reduction over more than") != std::string::npos);
    }
    braid_tensor_release(sum);
    braid_tensor_release(t);
    (void)braid_wait_all(c.ctx);
  }
}
