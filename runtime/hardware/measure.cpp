// braid_device_measure: a device's practical peaks, measured with braid's own ops (README.md here),
// through the ops' C++ entry points: the work a program's calls do, without the boundary's checks.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <vector>

#include "braid.h"
#include "context/context.h"
#include "core/error.h"
#include "core/out_struct.h"
#include "ops/call.h"
#include "ops/entry.h"
#include "tensor/host_copy.h"
#include "tensor/tensor.h"

namespace braid {
namespace {

void wait(const TensorRef& t) { wait_readable(*t->ctx, *t->storage, "device_measure"); }

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Seconds of the fastest of `runs` calls of f (each waits for its own result).
template <class F>
double best_of(int runs, F&& f) {
  double best = 1e300;
  for (int i = 0; i < runs; ++i) {
    const auto t0 = Clock::now();
    f();
    best = std::min(best, since(t0));
  }
  return best;
}

// FLOP/s of the fastest square matmul: n doubles from 256 until one call takes 20 ms (timing noise
// below that) or n reaches 2048; best of three at that size. 0 without a kernel for the dtype.
double matmul_flops(braid_context ctx, braid_device dev, const Device& d, braid_dtype dtype) {
  if ((d.props.dtype_mask & (1u << dtype)) == 0) return 0;
  for (int64_t n = 256;; n *= 2) {
    const uint64_t bytes = uint64_t(n) * uint64_t(n) * (dtype == BRAID_FLOAT64 ? 8 : 4);
    if (d.props.memory_bytes != 0 && 3 * bytes > d.props.memory_bytes / 2) return 0;  // too small a device
    const int64_t shape[2] = {n, n};
    const TensorRef a = op::run(entry::full, ctx, dev, dtype, 2, shape, 0.5);
    auto once = [&] { wait(op::matmul(a.get(), a.get(), false, false)); };
    once();  // warm-up: first-touch pages, kernel pipelines
    const double one = best_of(1, once);
    if (one >= 0.02 || n >= 2048) return 2.0 * double(n) * double(n) * double(n) / std::min(one, best_of(2, once));
  }
}

struct Transfers {
  double copy = 0, h2d = 0, d2h = 0;
};

// A copy within the device (read + written bytes), and uploads and downloads of the same tensor.
Transfers transfers(braid_context ctx, braid_device dev, const Device& d) {
  uint64_t bytes = uint64_t{64} << 20;
  if (d.props.memory_bytes != 0) bytes = std::min<uint64_t>(bytes, d.props.memory_bytes / 8);
  const int64_t n = static_cast<int64_t>(bytes / 4);
  if (n == 0) return {};
  bytes = uint64_t(n) * 4;
  const TensorRef x = op::run(entry::full, ctx, dev, BRAID_FLOAT32, 1, &n, 1.0);
  wait(x);
  Transfers t;
  auto copy = [&] { wait(op::run(entry::copy, x.get(), dev)); };
  copy();
  t.copy = 2.0 * double(bytes) / best_of(3, copy);
  std::vector<float> host(static_cast<size_t>(n), 2.0f);
  auto up = [&] {
    push_upload(*x, host.data(), bytes);
    wait(x);
  };
  auto down = [&] { copy_to_host(*x, host.data(), bytes); };
  up();
  down();
  t.h2d = double(bytes) / best_of(3, up);
  t.d2h = double(bytes) / best_of(3, down);
  return t;
}

}  // namespace
}  // namespace braid

BRAID_API braid_status braid_device_measure(braid_context ctx, braid_device device, braid_device_perf* out) {
  using namespace braid;
  return guard("braid_device_measure", [&] {
    const ContextRef c_use = use_context(ctx, "ctx");
    Context& c = *c_use;
    Device& d = c.device(device, "device");
    check_out(out, "out");  // before the second-long measurement
    // One measurement per device and context; a second caller waits for the first one's figures.
    std::lock_guard lock(d.measured_mu);
    if (!d.measured) {
      const auto t0 = Clock::now();
      std::array<double, 6> p{};
      p[0] = matmul_flops(ctx, device, d, BRAID_FLOAT32);
      p[1] = matmul_flops(ctx, device, d, BRAID_FLOAT64);
      const Transfers t = transfers(ctx, device, d);
      p[2] = t.copy, p[3] = t.h2d, p[4] = t.d2h;
      p[5] = since(t0);
      d.measured_perf = p;
      d.measured = true;
    }
    braid_device_perf r{};
    r.struct_size = sizeof r;
    r.matmul_flops_f32 = d.measured_perf[0];
    r.matmul_flops_f64 = d.measured_perf[1];
    r.copy_bytes_per_s = d.measured_perf[2];
    r.host_to_device_bytes_per_s = d.measured_perf[3];
    r.device_to_host_bytes_per_s = d.measured_perf[4];
    r.seconds = d.measured_perf[5];
    copy_out(out, r, "out");
  });
}
