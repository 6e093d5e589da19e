// libFuzzer over the C API: each input is a program for a small interpreter that calls braid's
// functions with arguments taken from the input — handles from a pool that also holds NULL, released
// ones and handles of another kind, dtypes and enum values in and out of range, shapes with zero, negative and
// huge sizes, device indices that do not exist. Every call must return a status (never crash, hang,
// leak or trip a sanitizer); results are not checked here, the conformance suites do that.
//
// One context for the whole run (two CPU devices), so the fuzzer exercises ops, not plugin loading.
// Arrays handed to braid are always as long as the API may read (BRAID_MAX_DIMS entries): a short
// array would be the harness's bug, not braid's.
#include <braid.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

constexpr int kMaxDims = 8;  // BRAID_MAX_DIMS
constexpr int kPool = 8;

braid_context g_ctx = nullptr;

class Input {
 public:
  Input(const uint8_t* data, size_t size) : p_(data), end_(data + size) {}
  bool empty() const { return p_ >= end_; }
  uint8_t byte() { return p_ < end_ ? *p_++ : 0; }
  int32_t small(int32_t lo, int32_t hi) {
    return lo + static_cast<int32_t>(byte() % static_cast<uint8_t>(hi - lo + 1));
  }
  // Mostly small sizes, sometimes the edges: 0, -1, a huge one.
  int64_t extent() {
    const uint8_t b = byte();
    switch (b % 16) {
      case 0: return 0;
      case 1: return -1;
      case 2: return INT64_MAX;
      case 3: return int64_t{1} << 40;
      default: return 1 + b % 7;
    }
  }
  double scalar() {
    switch (byte() % 8) {
      case 0: return 0.0;
      case 1: return -0.0;
      case 2: return 1e300;
      case 3: return -2.5;
      case 4: return __builtin_nan("");
      case 5: return __builtin_inf();
      default: return static_cast<double>(byte()) - 64.0;
    }
  }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
};

struct Pool {
  std::array<braid_tensor, kPool> live{};
  // A handle released earlier (stale) or never handed out: braid must refuse it, not touch it.
  braid_tensor stale = nullptr;

  braid_tensor pick(Input& in) {
    const uint8_t b = in.byte();
    if (b % 11 == 0) return nullptr;
    if (b % 11 == 1 && stale != nullptr) return stale;
    // Another kind of handle where a tensor is expected (a C caller's cast): readable memory that is not
    // a tensor. (Arbitrary pointers are outside the contract: a handle must come from braid.)
    if (b % 11 == 2) return reinterpret_cast<braid_tensor>(g_ctx);
    return live[b % kPool];
  }
  void put(Input& in, braid_tensor t) {
    if (t == nullptr) return;
    braid_tensor& slot = live[in.byte() % kPool];
    if (slot != nullptr) {
      braid_tensor_release(slot);
      stale = slot;
    }
    slot = t;
  }
  void clear() {
    for (braid_tensor& t : live) {
      if (t != nullptr) braid_tensor_release(t);
      t = nullptr;
    }
    stale = nullptr;
  }
};

void shape(Input& in, int32_t& ndim, std::array<int64_t, kMaxDims>& dims) {
  ndim = in.small(-1, 4);
  for (int64_t& d : dims) d = in.extent();
}

void run_one(Input& in, Pool& pool) {
  braid_tensor out = nullptr;
  braid_tensor a = pool.pick(in), b = pool.pick(in);
  const braid_device dev = in.small(-1, 2);  // 2 does not exist
  const auto dtype = static_cast<braid_dtype>(in.small(-1, 7));
  int32_t ndim = 0;
  std::array<int64_t, kMaxDims> dims{}, begin{}, end{}, step{};
  std::array<int32_t, kMaxDims> axes{};
  switch (in.byte() % 22) {
    case 0:
      shape(in, ndim, dims);
      braid_full(g_ctx, dev, dtype, ndim, dims.data(), in.scalar(), &out);
      break;
    case 1:
      shape(in, ndim, dims);
      braid_tensor_empty(g_ctx, dev, dtype, ndim, dims.data(), &out);
      break;
    case 2: {
      shape(in, ndim, dims);
      std::vector<uint8_t> host(static_cast<size_t>(in.small(0, 64)), in.byte());
      braid_tensor_from_host(g_ctx, dev, dtype, ndim, dims.data(), host.data(), host.size(), &out);
      break;
    }
    case 3:
      shape(in, ndim, dims);
      braid_random_uniform(g_ctx, dev, dtype, ndim, dims.data(), in.scalar(), in.scalar(), &out);
      break;
    case 4: braid_unary(static_cast<braid_unary_op>(in.small(-1, 20)), a, &out); break;
    case 5: braid_binary(static_cast<braid_binary_op>(in.small(-1, 12)), a, b, &out); break;
    case 6:
      braid_binary_scalar(static_cast<braid_binary_op>(in.small(-1, 12)), a, in.scalar(), in.small(0, 1), &out);
      break;
    case 7: {
      const int32_t naxes = in.small(-1, kMaxDims);
      for (int32_t& x : axes) x = in.small(-5, 5);
      braid_reduce(static_cast<braid_reduce_op>(in.small(-1, 6)), a, naxes, in.byte() % 4 ? axes.data() : nullptr,
                   in.small(0, 1), &out);
      break;
    }
    case 8: braid_matmul(a, b, in.small(0, 1), in.small(0, 1), &out); break;
    case 9:
      shape(in, ndim, dims);
      braid_reshape(a, ndim, dims.data(), &out);
      break;
    case 10:
      for (int i = 0; i < kMaxDims; ++i) {
        begin[size_t(i)] = in.extent() - 3;
        end[size_t(i)] = in.extent();
        step[size_t(i)] = in.small(-2, 3);
      }
      braid_slice(a, begin.data(), end.data(), in.byte() % 2 ? step.data() : nullptr, &out);
      break;
    case 11:
      for (int32_t& x : axes) x = in.small(-1, 4);
      braid_transpose(a, axes.data(), &out);
      break;
    case 12: {
      braid_tensor xs[3] = {a, b, pool.pick(in)};
      braid_concat(in.small(-1, 3), xs, in.small(-2, 3), &out);
      break;
    }
    case 13: braid_copy(a, dev, &out); break;
    case 14: braid_cast(a, dtype, &out); break;
    case 15: braid_copy_into(a, b); break;
    case 16: braid_softmax(a, in.small(-3, 3), in.small(0, 1), &out); break;
    case 17: braid_argmax(a, in.small(-3, 3), in.small(0, 1), &out); break;
    case 18: {
      std::vector<uint8_t> host(static_cast<size_t>(in.small(0, 256)));
      if (in.byte() % 2)
        braid_tensor_to_host(a, host.data(), host.size());
      else
        braid_tensor_write_host(a, host.data(), host.size());
      break;
    }
    case 19: {
      braid_tensor group[2] = {a, b};
      braid_collective_options o = BRAID_COLLECTIVE_OPTIONS_INIT;
      o.op = static_cast<braid_collective_op>(in.small(-1, 5));
      o.algorithm = static_cast<braid_allreduce_algorithm>(in.small(-1, 6));
      braid_allreduce(in.small(-1, 2), group, &o);
      break;
    }
    case 20: braid_tensor_wait_to_read(a); break;
    case 21:
      if (in.byte() % 4 == 0 && a != nullptr) {  // a retain and a release more: the counts stay balanced
        if (braid_tensor_retain(a) == BRAID_OK) braid_tensor_release(a);
      } else {
        braid_wait_all(g_ctx);
      }
      break;
  }
  pool.put(in, out);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  setenv("BRAID_CPU_DEVICES", "2", 1);
  braid_context_options o = BRAID_CONTEXT_OPTIONS_INIT;
  o.backends = "cpu";
  if (braid_context_create(&o, &g_ctx) != BRAID_OK) std::abort();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in(data, size);
  Pool pool;
  for (int steps = 0; steps < 64 && !in.empty(); ++steps) run_one(in, pool);
  pool.clear();
  braid_wait_all(g_ctx);  // failures of this input are reported here and cleared for the next
  return 0;
}
