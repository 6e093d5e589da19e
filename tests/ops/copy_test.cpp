// Conformance: copy (clone on one device, transfer between devices) and copy_into, in every dtype.
// The cross-device cases need two devices (the harness asks for BRAID_CPU_DEVICES=2).
#include "harness.h"

using harness::context;

namespace {

const braid_dtype kAll[] = {BRAID_FLOAT32, BRAID_FLOAT64, BRAID_INT32,   BRAID_INT64,
                            BRAID_UINT8,   BRAID_FLOAT16, BRAID_BFLOAT16};

}  // namespace

TEST_CASE("copy: a copy on the same device is an independent clone") {
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      for (braid_dtype dt : kAll) {
        INFO("device ", dev.id, ", ", harness::dtype_name(dt));
        const ref::Array x = harness::sample({3, 33}, dt, 101);
        const auto t = harness::upload(dev.index, dt, x);
        const auto c = t.copy_to(dev.index);
        CHECK(c.get() != t.get());
        CHECK(c.device() == dev.index);
        CHECK(c.dtype() == dt);
        CHECK_CLOSE(harness::download(c), x, 0.0);
        // Overwriting the clone leaves the original alone.
        braid::copy_into(harness::upload(dev.index, dt, harness::sample({3, 33}, dt, 102)), c);
        CHECK_CLOSE(harness::download(t), x, 0.0);
        CHECK_CLOSE(harness::download(c), harness::sample({3, 33}, dt, 102), 0.0);
      }
    });
  }
}

TEST_CASE("copy: copy_into is ordered after earlier writers and before later readers") {
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      INFO("device ", dev.id);
      const auto dst = braid::Tensor::zeros(context(), dev.index, BRAID_FLOAT64, {4096});
      const auto src = braid::Tensor::arange(context(), dev.index, BRAID_FLOAT64, 0, 4096);
      braid::copy_into(src, dst);
      const auto doubled = dst * 2.0;  // reads dst after the copy
      braid::copy_into(braid::Tensor::ones(context(), dev.index, BRAID_FLOAT64, {4096}), dst);
      CHECK_CLOSE(harness::download(doubled), ref::binary_scalar(BRAID_BINARY_MUL, ref::arange(0, 4096, 1), 2.0, false),
                  0.0);
      CHECK_CLOSE(harness::download(dst), ref::full({4096}, 1.0), 0.0);
    });
  }
}

TEST_CASE("copy: between devices [needs 2 devices]") {
  const auto devs = harness::devices();
  if (devs.size() < 2) {
    MESSAGE("skipped: ", devs.size(), " device(s); copies between devices need 2 (BRAID_CPU_DEVICES=2)");
    return;
  }
  for (const auto& from : devs)
    for (const auto& to : devs) {
      if (from.index == to.index) continue;
      for (braid_dtype dt : kAll) {
        INFO(from.id, " -> ", to.id, ", ", harness::dtype_name(dt));
        const ref::Array x = harness::sample({7, 33}, dt, 103);
        const auto t = harness::upload(from.index, dt, x);
        const auto c = braid::copy_to(t, to.index);
        CHECK(c.device() == to.index);
        CHECK(c.dtype() == dt);
        CHECK(c.shape() == ref::Shape{7, 33});
        CHECK_CLOSE(harness::download(c), x, 0.0);

        // copy_into across devices, into a tensor that is then read on its own device.
        const auto dst = braid::Tensor::empty(context(), to.index, dt, {7, 33});
        braid::copy_into(t, dst);
        CHECK_CLOSE(harness::download(dst), x, 0.0);
      }
      // A chain that crosses devices twice sees every earlier write.
      INFO(from.id, " -> ", to.id, " -> ", from.id, " chain");
      const ref::Array x = harness::random_array({5, 9}, -1, 1, BRAID_FLOAT32, 104);
      const auto a = harness::upload(from.index, BRAID_FLOAT32, x) + 1.0;
      const auto b = braid::copy_to(a, to.index) * 3.0;
      const auto c = braid::copy_to(b, from.index) - 2.0;
      CHECK(c.device() == from.index);
      const ref::Array want = ref::round_to(
          BRAID_FLOAT32,
          ref::binary_scalar(
              BRAID_BINARY_SUB,
              ref::round_to(
                  BRAID_FLOAT32,
                  ref::binary_scalar(BRAID_BINARY_MUL,
                                     ref::round_to(BRAID_FLOAT32, ref::binary_scalar(BRAID_BINARY_ADD, x, 1.0, false)),
                                     3.0, false)),
              2.0, false));
      CHECK_CLOSE(harness::download(c), want, 0.0);  // each step rounded to float32 as the device does
    }
}
