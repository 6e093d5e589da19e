// Conformance: full/zeros/ones, arange, and the counter-based RNG (random_uniform, random_normal),
// whose values must match the Philox reference on every device.
#include <algorithm>
#include <cmath>

#include "harness.h"

using harness::context;
using tol::Kind;

TEST_CASE("creation: full, zeros and ones in every computable dtype") {
  const braid_dtype dtypes[] = {BRAID_FLOAT32, BRAID_FLOAT64, BRAID_INT32, BRAID_INT64, BRAID_UINT8};
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      for (braid_dtype dt : dtypes) {
        INFO("device ", dev.id, ", dtype ", harness::dtype_name(dt));
        for (const ref::Shape& shape : {ref::Shape{1}, ref::Shape{3, 7}, ref::Shape{2, 3, 33}}) {
          INFO("shape ", ref::to_string(shape));
          CHECK_CLOSE(harness::download(braid::Tensor::zeros(context(), dev.index, dt, shape)), ref::full(shape, 0),
                      0.0);
          CHECK_CLOSE(harness::download(braid::Tensor::ones(context(), dev.index, dt, shape)), ref::full(shape, 1),
                      0.0);
          CHECK_CLOSE(harness::download(braid::Tensor::full(context(), dev.index, dt, shape, 42)), ref::full(shape, 42),
                      0.0);
          // A value off the dtype's grid is rounded like a conversion (truncation for integers).
          CHECK_CLOSE(harness::download(braid::Tensor::full(context(), dev.index, dt, shape, 0.1)),
                      ref::full(shape, ref::round_to(dt, 0.1)), 0.0);
        }
      }
    });
  }
}

TEST_CASE("creation: arange has ceil((stop-start)/step) elements start + k*step") {
  struct Case {
    double start, stop, step;
  };
  const Case float_cases[] = {{0, 7, 1}, {1, 2, 0.25}, {5, -1, -2}, {-3, 30, 0.7}, {0, 1, 1}};
  const Case int_cases[] = {{0, 7, 1}, {-3, 30, 3}, {10, 0, -3}, {0, 1, 1}};
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      for (braid_dtype dt : harness::kFloatTypes) {
        for (const Case& c : float_cases) {
          INFO("device ", dev.id, ", dtype ", harness::dtype_name(dt), ", arange(", c.start, ", ", c.stop, ", ", c.step,
               ")");
          const auto t = braid::Tensor::arange(context(), dev.index, dt, c.start, c.stop, c.step);
          CHECK_CLOSE(harness::download(t), ref::arange(c.start, c.stop, c.step), tol::of(Kind::compound, dt));
        }
      }
      for (braid_dtype dt : harness::kIntTypes) {
        for (const Case& c : int_cases) {
          INFO("device ", dev.id, ", dtype ", harness::dtype_name(dt), ", arange(", c.start, ", ", c.stop, ", ", c.step,
               ")");
          const auto t = braid::Tensor::arange(context(), dev.index, dt, c.start, c.stop, c.step);
          CHECK_CLOSE(harness::download(t), ref::arange(c.start, c.stop, c.step), 0.0);
        }
      }
    });
  }
}

// torch.arange's two integer rules (1.13): int64 truncates start, stop and step and then takes the
// length, so every value lies in [start, stop); int32 (and braid's uint8, computed in int32) takes the
// length from the arguments as given and the values from start and step truncated.
TEST_CASE("creation: arange in an integer dtype truncates as torch.arange does") {
  struct Case {
    double start, stop, step;
    std::vector<int64_t> int32, int64;
  };
  const Case cases[] = {
      {-3, 3, 2.5, {-3, -1, 1}, {-3, -1, 1}},
      {0.5, 4, 1.5, {0, 1, 2}, {0, 1, 2, 3}},
      {2.9, -3, -1.7, {2, 1, 0, -1}, {2, 1, 0, -1, -2}},
      {-0.9, 3, 1, {0, 1, 2, 3}, {0, 1, 2}},
  };
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      for (braid_dtype dt : harness::kIntTypes) {
        for (const Case& c : cases) {
          INFO("device ", dev.id, ", dtype ", harness::dtype_name(dt), ", arange(", c.start, ", ", c.stop, ", ", c.step,
               ")");
          const auto t = braid::Tensor::arange(context(), dev.index, dt, c.start, c.stop, c.step);
          const auto got = braid::cast(t, BRAID_INT64).to_vector<int64_t>();
          CHECK(got == (dt == BRAID_INT64 ? c.int64 : c.int32));
        }
        braid_tensor out = nullptr;
        CHECK(braid_arange(context().get(), dev.index, dt, 0.5, 3.2, 0.7, &out) == BRAID_ERR_INVALID_ARGUMENT);
        CHECK(out == nullptr);
      }
      braid_tensor out = nullptr;  // values past int32
      CHECK(braid_arange(context().get(), dev.index, BRAID_INT32, 2147483640.0, 2147483650.0, 1, &out) ==
            BRAID_ERR_INVALID_ARGUMENT);
      CHECK(braid_arange(context().get(), dev.index, BRAID_INT64, 9223372036854771712.0, 9223372036854779904.0, 1024,
                         &out) == BRAID_ERR_INVALID_ARGUMENT);  // 2^63 - 4096 to 2^63 + 3072
      CHECK(out == nullptr);
    });
  }
}

// int64 values past 2^53, where doubles hold only every other integer, are exact.
TEST_CASE("creation: int64 arange is exact past 2^53") {
  const int64_t two53 = int64_t{1} << 53;
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      INFO("device ", dev.id);
      const auto t = braid::Tensor::arange(context(), dev.index, BRAID_INT64, double(two53), double(two53) + 8, 1);
      std::vector<int64_t> want;
      for (int64_t k = 0; k < 8; ++k) want.push_back(two53 + k);
      CHECK(t.to_vector<int64_t>() == want);
      const auto down = braid::Tensor::arange(context(), dev.index, BRAID_INT64, 9223372036854771712.0,
                                              9223372036854771712.0 - 2048, -3);  // 683 values
      const auto v = down.to_vector<int64_t>();
      REQUIRE(v.size() == 683);
      CHECK(v[1] == 9223372036854771709);
      CHECK(v[682] == 9223372036854771712 - 682 * 3);
      // The length in integers too: (2^60 + 1) / 2^40 rounds to 2^20 in doubles, one value short.
      const auto wide = braid::Tensor::arange(context(), dev.index, BRAID_INT64, -1, 0x1p60, 0x1p40);
      CHECK(wide.shape() == std::vector<int64_t>{(int64_t{1} << 20) + 1});
      // A step that truncates to 0 is that, not a length too large to allocate.
      braid_tensor out = nullptr;
      CHECK(braid_arange(context().get(), dev.index, BRAID_INT32, 0, 10, 1e-300, &out) == BRAID_ERR_INVALID_ARGUMENT);
    });
  }
}

// torch.arange takes uint8, float16 and bfloat16 too: braid computes in int32 or float32 and casts (it
// refused them). uint8 values outside [0, 256) are refused like int32's outside int32.
TEST_CASE("creation: arange in the storage types uint8, float16 and bfloat16") {
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      INFO("device ", dev.id);
      const auto u = braid::Tensor::arange(context(), dev.index, BRAID_UINT8, 250, 256, 2);
      CHECK(u.dtype() == BRAID_UINT8);
      CHECK(braid::cast(u, BRAID_INT64).to_vector<int64_t>() == std::vector<int64_t>{250, 252, 254});
      for (braid_dtype dt : {BRAID_FLOAT16, BRAID_BFLOAT16}) {
        const auto h = braid::Tensor::arange(context(), dev.index, dt, 0, 2, 0.5);
        CHECK(h.dtype() == dt);
        CHECK(braid::cast(h, BRAID_FLOAT32).to_vector<float>() == std::vector<float>{0, 0.5f, 1, 1.5f});
      }
      braid_tensor out = nullptr;
      CHECK(braid_arange(context().get(), dev.index, BRAID_UINT8, -1, 3, 1, &out) == BRAID_ERR_INVALID_ARGUMENT);
      CHECK(braid_arange(context().get(), dev.index, BRAID_UINT8, 250, 260, 1, &out) == BRAID_ERR_INVALID_ARGUMENT);
      CHECK(out == nullptr);
    });
  }
}

// torch.full takes float16 and bfloat16: every device gives the value rounded once to the dtype (the
// Vulkan backend, which has no 16-bit fill, refused it); a value that would round to infinity is
// refused, as torch.full refuses it (kOverflow marks those).
TEST_CASE("creation: full in float16 and bfloat16 on every device") {
  struct Case {
    double value;
    uint16_t f16, bf16;
  };
  constexpr uint16_t kOverflow = 0x7c00;  // float16's infinity: what the value would have rounded to
  const Case cases[] = {{1.5, 0x3e00, 0x3fc0},  {65519.0, 0x7bff, 0x4780}, {65520.0, kOverflow, 0x4780},
                        {-0.0, 0x8000, 0x8000}, {1e5, kOverflow, 0x47c3},  {1.0 + 0x1p-10 + 0x1p-12, 0x3c01, 0x3f80}};
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      for (const Case& c : cases)
        for (braid_dtype dt : {BRAID_FLOAT16, BRAID_BFLOAT16}) {
          INFO("device ", dev.id, ", ", harness::dtype_name(dt), ", value ", c.value);
          braid_tensor out = nullptr;
          const int64_t n = 3;
          if (dt == BRAID_FLOAT16 && c.f16 == kOverflow) {
            CHECK(braid_full(context().get(), dev.index, dt, 1, &n, c.value, &out) == BRAID_ERR_INVALID_ARGUMENT);
            continue;
          }
          REQUIRE(braid_full(context().get(), dev.index, dt, 1, &n, c.value, &out) == BRAID_OK);
          const auto t = braid::Tensor::adopt(out);
          CHECK(t.dtype() == dt);
          uint16_t bits[3] = {};
          REQUIRE(braid_tensor_to_host(t.get(), bits, sizeof bits) == BRAID_OK);
          for (uint16_t b : bits) CHECK(b == (dt == BRAID_FLOAT16 ? c.f16 : c.bf16));
        }
    });
  }
}

// The n-th random op after set_seed uses draw n (braid.h: "later random ops draw from counter 0 of the
// new seed"); each random_uniform, random_normal and dropout call is one draw.
TEST_CASE("creation: random_uniform and random_normal follow the Philox scheme bit for bit") {
  const uint64_t seeds[] = {0, 1234, 0x0123456789abcdefULL};
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      for (uint64_t seed : seeds) {
        for (braid_dtype dt : harness::kFloatTypes) {
          INFO("device ", dev.id, ", dtype ", harness::dtype_name(dt), ", seed ", seed);
          context().wait_all();
          context().set_seed(seed);
          // Sizes that are not multiples of the 4-word (uniform) or 2-element (normal) block.
          const auto u1 = braid::Tensor::random_uniform(context(), dev.index, dt, {1});
          const auto u2 = braid::Tensor::random_uniform(context(), dev.index, dt, {7, 33}, -2.0, 3.0);
          const auto n1 = braid::Tensor::random_normal(context(), dev.index, dt, {3, 7});
          const auto n2 = braid::Tensor::random_normal(context(), dev.index, dt, {33}, 1.5, 0.25);
          // Values are computed in double and rounded once to the dtype (braid_backend.h).
          const auto want = [dt](const ref::Array& a) { return ref::round_to(dt, a); };
          CHECK_CLOSE(harness::download(u1), want(ref::random_uniform(seed, 0, {1}, 0.0, 1.0)),
                      tol::of(Kind::rng_uniform, dt));
          CHECK_CLOSE(harness::download(u2), want(ref::random_uniform(seed, 1, {7, 33}, -2.0, 3.0)),
                      tol::of(Kind::rng_uniform, dt));
          CHECK_CLOSE(harness::download(n1), want(ref::random_normal(seed, 2, {3, 7}, 0.0, 1.0)),
                      tol::of(Kind::rng_normal, dt));
          CHECK_CLOSE(harness::download(n2), want(ref::random_normal(seed, 3, {33}, 1.5, 0.25)),
                      tol::of(Kind::rng_normal, dt));

          // Resetting the seed repeats the sequence.
          context().set_seed(seed);
          const auto again = braid::Tensor::random_uniform(context(), dev.index, dt, {1});
          CHECK_CLOSE(harness::download(again), harness::download(u1), 0.0);
        }
      }
    });
  }
}

TEST_CASE("creation: uniform values lie in (low, high) and normal moments are plausible") {
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      INFO("device ", dev.id);
      context().set_seed(99);
      const auto u =
          braid::Tensor::random_uniform(context(), dev.index, BRAID_FLOAT64, {4096}, 2.0, 4.0).to_vector<double>();
      CHECK(*std::min_element(u.begin(), u.end()) > 2.0);
      CHECK(*std::max_element(u.begin(), u.end()) < 4.0);
      const auto n =
          braid::Tensor::random_normal(context(), dev.index, BRAID_FLOAT64, {4096}, 0.0, 1.0).to_vector<double>();
      double mean = 0, sq = 0;
      for (double v : n) mean += v, sq += v * v;
      mean /= 4096.0;
      // Standard error of the mean is 1/64; of the variance about 0.022.
      CHECK(std::abs(mean) < 0.08);
      CHECK(std::abs(sq / 4096.0 - mean * mean - 1.0) < 0.12);
    });
  }
}

// docs/VULKAN.md: random numbers are bit-identical to the CPU backend. The Philox words are integers,
// so any difference comes from the Box-Muller arithmetic (log, sqrt, cos, sin in double): every device
// must do it the CPU backend's way (backends/cpu/kernels/random.cpp), not merely within a tolerance.
TEST_CASE("creation: random_uniform and random_normal draws are bit-identical to cpu:0's on every device") {
  const auto devices = harness::each_device();
  const auto cpu = std::find_if(devices.begin(), devices.end(), [](const auto& d) { return d.id == "cpu:0"; });
  if (cpu == devices.end()) {
    MESSAGE("skipped: no cpu:0 to compare with");
    return;
  }
  const auto draw = [](braid::Device d, braid_dtype dt) {
    context().wait_all();
    context().set_seed(0x5eed);
    ref::Array a = harness::download(braid::Tensor::random_normal(context(), d, dt, {4099}, 0.25, 3.0));
    const ref::Array u = harness::download(braid::Tensor::random_uniform(context(), d, dt, {4099}, -0.3, 7.1));
    a.data.insert(a.data.end(), u.data.begin(), u.data.end());
    a.shape = {static_cast<int64_t>(a.data.size())};
    return a;
  };
  for (braid_dtype dt : harness::kFloatTypes) {
    const ref::Array want = draw(cpu->index, dt);
    for (const auto& dev : devices) {
      harness::on_device(dev, [&] {
        INFO("device ", dev.id, ", dtype ", harness::dtype_name(dt), " against cpu:0");
        CHECK_CLOSE(draw(dev.index, dt), want, 0.0);
      });
    }
  }
}
