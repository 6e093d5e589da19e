// The calibration behind a weighted split (`--weights auto`): each device's throughput on the actual
// model, measured alone on the same batch, becomes its weight, so a device twice as fast gets twice the
// rows. Shared by the data-parallel samples (LeNet, ResNet-18).
#pragma once
#include <braid.hpp>

#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

namespace samples {

// step(r, x, y): forward and backward of replica r on x, y (already on its device). Runs `warmup`
// untimed and `timed` timed steps per device, each device alone (the others idle), and returns each
// device's samples per second. The gradients it leaves are overwritten by the next real step.
inline std::vector<double> calibrate(const braid::Context& ctx, const std::vector<braid::Device>& devices,
                                     const braid::Tensor& images, const braid::Tensor& labels,
                                     const std::function<void(size_t, const braid::Tensor&, const braid::Tensor&)>& step,
                                     int warmup = 1, int timed = 3) {
  std::vector<double> rate;
  for (size_t r = 0; r < devices.size(); ++r) {
    const braid::Tensor x = braid::copy_to(images, devices[r]), y = braid::copy_to(labels, devices[r]);
    for (int i = 0; i < warmup; ++i) step(r, x, y);
    ctx.wait_all();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < timed; ++i) step(r, x, y);
    ctx.wait_all();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    rate.push_back(static_cast<double>(timed * images.shape()[0]) / s);
    std::fprintf(stderr, "calibration: %s %.1f samples/s\n", ctx.device_info(devices[r]).id, rate.back());
  }
  return rate;
}

}  // namespace samples
