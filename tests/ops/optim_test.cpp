// Conformance: the in-place optimizer updates (SGD, SGD with momentum, Adam) over several steps, with
// the formulas of braid.h; each step reads the state the previous one wrote.
#include "harness.h"

using harness::context;
using tol::Kind;

TEST_CASE("optim: sgd_update with and without weight decay") {
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      for (braid_dtype dt : harness::kFloatTypes)
        for (double wd : {0.0, 0.01}) {
          INFO("device ", dev.id, ", ", harness::dtype_name(dt), ", weight decay ", wd);
          ref::Array w = harness::random_array({7, 33}, -1, 1, dt, 141);
          const auto tw = harness::upload(dev.index, dt, w);
          for (int step = 0; step < 3; ++step) {
            const ref::Array g = harness::random_array({7, 33}, -1, 1, dt, 142 + static_cast<uint32_t>(step));
            braid::sgd_update(tw, harness::upload(dev.index, dt, g), 0.1, wd);
            ref::sgd_update(w, g, 0.1, wd);
          }
          CHECK_CLOSE(harness::download(tw), w, tol::of(Kind::compound, dt));
        }
    });
  }
}

TEST_CASE("optim: sgd_momentum_update keeps its velocity") {
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      for (braid_dtype dt : harness::kFloatTypes)
        for (double wd : {0.0, 0.01}) {
          INFO("device ", dev.id, ", ", harness::dtype_name(dt), ", weight decay ", wd);
          ref::Array w = harness::random_array({3, 33}, -1, 1, dt, 151), mom({3, 33}, 0.0);
          const auto tw = harness::upload(dev.index, dt, w), tm = harness::upload(dev.index, dt, mom);
          for (int step = 0; step < 4; ++step) {
            const ref::Array g = harness::random_array({3, 33}, -1, 1, dt, 152 + static_cast<uint32_t>(step));
            braid::sgd_momentum_update(tw, harness::upload(dev.index, dt, g), tm, 0.05, 0.9, wd);
            ref::sgd_momentum_update(w, g, mom, 0.05, 0.9, wd);
          }
          CHECK_CLOSE(harness::download(tw), w, tol::of(Kind::compound, dt));
          CHECK_CLOSE(harness::download(tm), mom, tol::of(Kind::compound, dt));
        }
    });
  }
}

TEST_CASE("optim: adam_update with bias correction over several steps") {
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      for (braid_dtype dt : harness::kFloatTypes)
        for (double wd : {0.0, 0.01}) {
          INFO("device ", dev.id, ", ", harness::dtype_name(dt), ", weight decay ", wd);
          ref::Array w = harness::random_array({7, 5}, -1, 1, dt, 161), m({7, 5}, 0.0), v({7, 5}, 0.0);
          const auto tw = harness::upload(dev.index, dt, w), tm = harness::upload(dev.index, dt, m),
                     tv = harness::upload(dev.index, dt, v);
          const braid::AdamOptions base{.lr = 0.01, .beta1 = 0.8, .beta2 = 0.99, .epsilon = 1e-6, .weight_decay = wd};
          for (int64_t step = 1; step <= 5; ++step) {
            const ref::Array g = harness::random_array({7, 5}, -1, 1, dt, 162 + static_cast<uint32_t>(step));
            braid::AdamOptions o = base;
            o.step = step;
            braid::adam_update(tw, harness::upload(dev.index, dt, g), tm, tv, o);
            ref::adam_update(w, g, m, v, o.lr, o.beta1, o.beta2, o.epsilon, o.weight_decay, step);
          }
          CHECK_CLOSE(harness::download(tw), w, tol::of(Kind::compound, dt));
          CHECK_CLOSE(harness::download(tm), m, tol::of(Kind::compound, dt));
          CHECK_CLOSE(harness::download(tv), v, tol::of(Kind::compound, dt));
        }
    });
  }
}
