// The calibration behind a weighted split (`--weights auto`). Each device runs the actual model alone
// on a small and a full batch, giving its step time as t(rows) = fixed + per_row * rows (a GPU's
// fixed cost per step, its launches, can dwarf its per-row cost on a small share). The split then
// equalises the predicted finish times: device i gets n_i = (T - fixed_i) / per_row_i rows, with T
// chosen so the rows add up to the batch, and no rows at all when its fixed cost alone exceeds T (a
// device that would only slow every step down is left out). The split is then timed as it stands, all
// devices at once (each pushed from its own thread, as training pushes them), and if that is slower
// than the fastest device on the whole batch alone, that device takes the whole batch: devices that
// share cores (the CPU and lavapipe here) each run slower beside the other than alone, which the
// per-device model cannot see. Shared by the data-parallel samples.
#pragma once
#include <braid.hpp>

#include "replicas.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

namespace samples {

struct StepModel {
  double fixed_s = 0, per_row_s = 0;
  double at(double rows) const { return fixed_s + per_row_s * rows; }
};

// Rows [0, n) of x (axis 0).
inline braid::Tensor head(const braid::Tensor& x, int64_t n) {
  const auto shape = x.shape();
  std::vector<int64_t> begin(shape.size(), 0), end(shape.begin(), shape.end());
  end[0] = n;
  return braid::slice(x, begin, end);
}

// Rows per device for `total` rows, equal predicted finish times (see the top of this file).
inline std::vector<double> balanced_rows(const std::vector<StepModel>& m, double total) {
  auto rows_at = [&](double t) {
    double sum = 0;
    for (const StepModel& d : m) sum += std::max(0.0, (t - d.fixed_s) / d.per_row_s);
    return sum;
  };
  double lo = 0, hi = 0;
  for (const StepModel& d : m) hi = std::max(hi, d.at(total));
  for (int i = 0; i < 100; ++i) {
    const double mid = 0.5 * (lo + hi);
    (rows_at(mid) < total ? lo : hi) = mid;
  }
  std::vector<double> rows;
  for (const StepModel& d : m) rows.push_back(std::max(0.0, (hi - d.fixed_s) / d.per_row_s));
  return rows;
}

// step(r, x, y): forward and backward of replica r on x, y (already on its device). Times `timed`
// steps after one warm-up on each device alone, at rows/8 and at all rows of images, and returns the
// split weights (rows per device). The gradients it leaves are overwritten by the next real step.
inline std::vector<double> calibrate(
    const braid::Context& ctx, const std::vector<braid::Device>& devices, const braid::Tensor& images,
    const braid::Tensor& labels, const std::function<void(size_t, const braid::Tensor&, const braid::Tensor&)>& step,
    int timed = 3) {
  const int64_t rows = images.shape()[0];
  const int64_t small = std::max<int64_t>(1, rows / 8);
  // Seconds per step of device r on the first n rows, alone (one warm-up, then `timed` steps).
  auto time_step = [&](size_t r, int64_t n) {
    const braid::Tensor x = braid::copy_to(head(images, n), devices[r]),
                        y = braid::copy_to(head(labels, n), devices[r]);
    step(r, x, y);
    ctx.wait_all();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < timed; ++i) step(r, x, y);
    ctx.wait_all();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / timed;
  };
  std::vector<StepModel> models;
  std::vector<double> full;  // each device's step on the whole batch
  for (size_t r = 0; r < devices.size(); ++r) {
    const double seconds[2] = {time_step(r, small), time_step(r, rows)};
    full.push_back(seconds[1]);
    StepModel m;
    m.per_row_s = std::max(1e-12, (seconds[1] - seconds[0]) / static_cast<double>(rows - small > 0 ? rows - small : 1));
    m.fixed_s = std::max(0.0, seconds[0] - m.per_row_s * static_cast<double>(small));
    models.push_back(m);
    std::fprintf(stderr, "calibration: %s step = %.2f ms + %.4f ms/row\n", ctx.device_info(devices[r]).id,
                 m.fixed_s * 1e3, m.per_row_s * 1e3);
  }
  std::vector<double> split = balanced_rows(models, static_cast<double>(rows));
  // The model is a straight line through each device's two points, measured alone; check the split
  // where it puts each device, all devices at once.
  std::vector<braid::Tensor> xs(devices.size()), ys(devices.size());
  for (size_t r = 0; r < devices.size(); ++r)
    if (const auto n = static_cast<int64_t>(split[r] + 0.5); n > 0)
      xs[r] = braid::copy_to(head(images, n), devices[r]), ys[r] = braid::copy_to(head(labels, n), devices[r]);
  auto together = [&] {
    for_each_replica(devices.size(), [&](size_t r) {
      if (xs[r]) step(r, xs[r], ys[r]);
    });
    ctx.wait_all();
  };
  together();  // warm-up at these sizes
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < timed; ++i) together();
  const double parallel = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / timed;
  const size_t fastest = static_cast<size_t>(std::min_element(full.begin(), full.end()) - full.begin());
  std::fprintf(stderr, "calibration: the split, all devices at once, %.2f ms per step; %s alone %.2f ms\n",
               parallel * 1e3, ctx.device_info(devices[fastest]).id, full[fastest] * 1e3);
  if (parallel >= full[fastest]) {
    split.assign(split.size(), 0.0);
    split[fastest] = static_cast<double>(rows);
  }
  return split;
}

// Leaves out the devices the split gives no rows (but the first, which holds the run's results), with
// their replicas, before the Trainer is made over the rest.
template <class Model>
void drop_idle(std::vector<braid::Device>& devices, std::vector<Model>& replicas, std::vector<double>& weights) {
  for (size_t i = weights.size(); i-- > 1;)
    if (weights[i] <= 0) {
      devices.erase(devices.begin() + static_cast<std::ptrdiff_t>(i));
      replicas.erase(replicas.begin() + static_cast<std::ptrdiff_t>(i));
      weights.erase(weights.begin() + static_cast<std::ptrdiff_t>(i));
    }
}

// A replica that gets no rows this step still takes part in the gradient allreduce: its gradients
// must be zero, not what an earlier step (or the calibration) left there.
inline void zero_grads(const braid::Context& ctx, const std::vector<braid::Tensor>& params) {
  for (const braid::Tensor& p : params) {
    const braid::Tensor g = braid::grad(p);
    braid::copy_into(braid::Tensor::zeros(ctx, g.device(), g.dtype(), g.shape()), g);
  }
}

}  // namespace samples
