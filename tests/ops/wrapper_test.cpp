// braid.hpp itself: ownership (copy retains, move transfers), errors as braid::Error, dtype checks.
#include <type_traits>

#include "harness.h"

using harness::context;

static_assert(braid::dtype_v<float> == BRAID_FLOAT32 && braid::dtype_v<double> == BRAID_FLOAT64);
static_assert(braid::dtype_v<int32_t> == BRAID_INT32 && braid::dtype_v<int64_t> == BRAID_INT64);
static_assert(braid::dtype_v<uint8_t> == BRAID_UINT8);
static_assert(braid::Element<float> && !braid::Element<char> && !braid::Element<uint16_t>);
static_assert(std::is_nothrow_move_constructible_v<braid::Tensor> &&
              std::is_nothrow_move_constructible_v<braid::Context>);

TEST_CASE("braid.hpp: a failed call throws braid::Error with the status and braid_last_error") {
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      INFO("device ", dev.id);
      const auto x = braid::Tensor::zeros(context(), dev.index, BRAID_FLOAT32, {2, 3});
      try {
        (void)braid::reshape(x, {4, 2});
        FAIL("reshape to a different element count did not throw");
      } catch (const braid::Error& e) {
        CHECK(e.status() == BRAID_ERR_SHAPE);
        CHECK(std::string(e.what()).find("BRAID_ERR_SHAPE") != std::string::npos);
        CHECK(std::string(e.what()).find("reshape") != std::string::npos);
      }
      CHECK_THROWS_AS((void)braid::Tensor().shape(), braid::Error);  // a null tensor is an invalid argument
    });
  }
}

TEST_CASE("braid.hpp: to_vector and write check the element type") {
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      INFO("device ", dev.id);
      const auto x = braid::Tensor::from_vector(context(), dev.index, {3}, std::vector<int32_t>{1, 2, 3});
      CHECK(x.dtype() == BRAID_INT32);
      CHECK(x.to_vector<int32_t>() == std::vector<int32_t>{1, 2, 3});
      try {
        (void)x.to_vector<float>();
        FAIL("to_vector<float> of an int32 tensor did not throw");
      } catch (const braid::Error& e) {
        CHECK(e.status() == BRAID_ERR_DTYPE);
      }
      CHECK_THROWS_AS(x.write(std::vector<int64_t>{1, 2, 3}), braid::Error);
      x.write(std::array<int32_t, 3>{7, 8, 9});
      CHECK(x.to_vector<int32_t>() == std::vector<int32_t>{7, 8, 9});
    });
  }
}

TEST_CASE("braid.hpp: copying a Tensor retains the handle, moving transfers it") {
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      INFO("device ", dev.id);
      braid::Tensor a = braid::Tensor::full(context(), dev.index, BRAID_FLOAT64, {4}, 3.0);
      const braid_tensor h = a.get();
      braid::Tensor b = a;  // retain
      CHECK(b.get() == h);
      a = braid::Tensor();  // drop one reference; b keeps the tensor alive
      CHECK(b.to_vector<double>() == std::vector<double>(4, 3.0));
      braid::Tensor c = std::move(b);
      CHECK(c.get() == h);
      CHECK(!b);  // NOLINT(bugprone-use-after-move): moved-from is null by contract
      CHECK(c.to_vector<double>() == std::vector<double>(4, 3.0));

      braid::Context ctx2 = context();  // retain; the suite's context lives on after ctx2 goes away
      CHECK(ctx2.get() == context().get());
    });
  }
}

TEST_CASE("braid.hpp: version_string names the release and the ABI") {
  const std::string v = braid::version_string();
  CHECK(v == braid_version_string());
  CHECK(v.find("ABI " + std::to_string(BRAID_ABI_MAJOR) + "." + std::to_string(BRAID_ABI_MINOR)) != std::string::npos);
}
