// braid_tensor_from_dlpack (ABI 1.13): another library's host memory as a tensor without a copy. The
// producer here is the test: a DLManagedTensor over a std::vector whose deleter counts its calls.
#include <dlpack/dlpack.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"

namespace {

struct Producer {
  std::vector<float> data;
  std::vector<int64_t> shape, strides;
  DLManagedTensor managed{};
  std::atomic<int> deleted{0};

  Producer(std::vector<float> values, std::vector<int64_t> dims) : data(std::move(values)), shape(std::move(dims)) {
    managed.dl_tensor.data = data.data();
    managed.dl_tensor.device = {kDLCPU, 0};
    managed.dl_tensor.ndim = static_cast<int32_t>(shape.size());
    managed.dl_tensor.dtype = {kDLFloat, 32, 1};
    managed.dl_tensor.shape = shape.data();
    managed.dl_tensor.strides = nullptr;
    managed.dl_tensor.byte_offset = 0;
    managed.manager_ctx = this;
    managed.deleter = [](DLManagedTensor* m) { static_cast<Producer*>(m->manager_ctx)->deleted.fetch_add(1); };
  }
};

braid::Device cpu_device() {
  for (const auto& dev : harness::devices())
    if (dev.id.rfind("cpu:", 0) == 0) return dev.index;
  FAIL("no CPU device");
  return 0;
}

// After the last handle and op: the storage goes when the engine lets go of the last op, which may be
// just after a wait returns, so the deleter is waited for (a few seconds at most).
int deleted_after_wait(const Producer& p) {
  harness::context().wait_all();
  for (int i = 0; i < 5000 && p.deleted.load() == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return p.deleted.load();
}

braid_status import(Producer& p, braid::Device d, braid_tensor* out) {
  return braid_tensor_from_dlpack(harness::context().get(), d, &p.managed, out);
}

}  // namespace

TEST_CASE("dlpack import: the tensor is the producer's memory, and its deleter runs once, after the last use") {
  Producer p({1, 2, 3, 4, 5, 6}, {2, 3});
  braid_tensor h = nullptr;
  REQUIRE(import(p, cpu_device(), &h) == BRAID_OK);
  {
    const auto x = braid::Tensor::adopt(h);
    CHECK(x.dtype() == BRAID_FLOAT32);
    CHECK(x.shape() == std::vector<int64_t>{2, 3});
    CHECK_CLOSE(harness::download(x), ref::Array({2, 3}, std::vector<double>{1, 2, 3, 4, 5, 6}), 0.0);
    // braid's writes land in the producer's memory, and the producer's in braid's reads.
    braid::copy_into(braid::Tensor::full(harness::context(), cpu_device(), BRAID_FLOAT32, {2, 3}, 7), x);
    x.wait_to_read();
    CHECK(p.data[0] == 7.0f);
    CHECK(p.data[5] == 7.0f);
    p.data[1] = -1;
    CHECK(harness::download(braid::sum(x)).data[0] == 34.0);
    const auto y = braid::add(x, x);  // an op still reading when the handle goes
    CHECK(p.deleted.load() == 0);
    CHECK_CLOSE(harness::download(y), ref::Array({2, 3}, std::vector<double>{14, -2, 14, 14, 14, 14}), 0.0);
  }
  CHECK(deleted_after_wait(p) == 1);
}

TEST_CASE("dlpack import: byte_offset, bool, size-1 strides; refusals leave the tensor with the caller") {
  const braid::Device cpu = cpu_device();
  {
    Producer p({0, 0, 1, 2, 3, 4}, {1, 4});
    p.managed.dl_tensor.byte_offset = 2 * sizeof(float);
    std::vector<int64_t> strides = {99, 1};  // a dimension of 1 may have any stride
    p.managed.dl_tensor.strides = strides.data();
    braid_tensor h = nullptr;
    REQUIRE(import(p, cpu, &h) == BRAID_OK);
    CHECK_CLOSE(harness::download(braid::Tensor::adopt(h)), ref::Array({1, 4}, std::vector<double>{1, 2, 3, 4}), 0.0);
    CHECK(deleted_after_wait(p) == 1);
  }
  {
    Producer p({}, {3});
    std::vector<uint8_t> bits = {1, 0, 1};
    p.managed.dl_tensor.data = bits.data();
    p.managed.dl_tensor.dtype = {6, 8, 1};  // kDLBool
    braid_tensor h = nullptr;
    REQUIRE(import(p, cpu, &h) == BRAID_OK);
    const auto b = braid::Tensor::adopt(h);
    CHECK(b.dtype() == BRAID_BOOL);
    CHECK(harness::download(braid::sum(b)).data[0] == 2.0);
  }
  struct Bad {
    const char* what;
    braid_status want;
    void (*spoil)(DLManagedTensor&, std::vector<int64_t>&);
  };
  const Bad bad[] = {
      {"memory on a GPU", BRAID_ERR_UNSUPPORTED,
       [](DLManagedTensor& m, std::vector<int64_t>&) {
         m.dl_tensor.device = {kDLCUDA, 0};
       }},
      {"complex dtype", BRAID_ERR_DTYPE,
       [](DLManagedTensor& m, std::vector<int64_t>&) {
         m.dl_tensor.dtype = {5, 64, 1};
       }},
      {"two lanes", BRAID_ERR_DTYPE,
       [](DLManagedTensor& m, std::vector<int64_t>&) {
         m.dl_tensor.dtype = {kDLFloat, 32, 2};
       }},
      {"not C-contiguous", BRAID_ERR_INVALID_ARGUMENT,
       [](DLManagedTensor& m, std::vector<int64_t>& s) {
         s = {1, 2};  // column-major [2, 3]
         m.dl_tensor.strides = s.data();
       }},
      {"unaligned floats", BRAID_ERR_INVALID_ARGUMENT,
       [](DLManagedTensor& m, std::vector<int64_t>&) { m.dl_tensor.byte_offset = 2; }},
      {"a bool byte of 2", BRAID_ERR_INVALID_ARGUMENT,
       [](DLManagedTensor& m, std::vector<int64_t>&) {
         m.dl_tensor.dtype = {6, 8, 1};  // the floats' bytes: 0x3f80... is no bool
         m.dl_tensor.shape[1] = 3;
       }},
      {"negative dimension", BRAID_ERR_INVALID_ARGUMENT,
       [](DLManagedTensor& m, std::vector<int64_t>&) { m.dl_tensor.shape[0] = -2; }},
  };
  for (const Bad& b : bad) {
    INFO(std::string(b.what));
    Producer p({1, 2, 3, 4, 5, 6}, {2, 3});
    std::vector<int64_t> strides;
    b.spoil(p.managed, strides);
    braid_tensor h = nullptr;
    CHECK(import(p, cpu, &h) == b.want);
    CHECK(h == nullptr);
    CHECK(p.deleted.load() == 0);  // still the caller's
  }
  braid_tensor h = nullptr;
  CHECK(braid_tensor_from_dlpack(harness::context().get(), cpu, nullptr, &h) == BRAID_ERR_INVALID_ARGUMENT);
  for (const auto& dev : harness::devices()) {
    if (dev.id.rfind("cpu:", 0) == 0) continue;
    INFO("device ", dev.id);
    Producer p({1, 2}, {2});
    CHECK(import(p, dev.index, &h) == BRAID_ERR_UNSUPPORTED);  // device memory: copy from a CPU import
    CHECK(p.deleted.load() == 0);
  }
}

TEST_CASE("dlpack import: a released import is never reused for another op's output") {
  const braid::Device cpu = cpu_device();
  const int64_t n = 128 * 1024;  // 512 KiB: a size released storages are offered for reuse at
  Producer p(std::vector<float>(size_t(n), 3.0f), {n});
  braid_tensor h = nullptr;
  REQUIRE(import(p, cpu, &h) == BRAID_OK);
  braid::Tensor y;
  {
    const auto x = braid::Tensor::adopt(h);
    y = braid::add(x, x);  // in flight while x's handle goes
  }
  for (int i = 0; i < 4; ++i) y = braid::add(y, y);  // new outputs of the same size
  CHECK(harness::download(y).data[0] == 3.0 * 32);
  CHECK(deleted_after_wait(p) == 1);
  CHECK(std::all_of(p.data.begin(), p.data.end(), [](float v) { return v == 3.0f; }));  // it held no output
}
