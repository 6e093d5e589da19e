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

// The several-device helpers take braced lists like the rest of the wrapper, and the KVStore one
// value as MXNet's kv.push(3, a) / kv.pull(3, out=a).
TEST_CASE("braid.hpp: collectives, split_and_load and KVStore take braced lists and single tensors") {
  auto& ctx = context();
  const auto dev = harness::each_device().at(0).index;
  const auto a = braid::Tensor::from_vector(ctx, dev, {2}, std::vector<float>{1, 2});
  const auto b = braid::Tensor::from_vector(ctx, dev, {2}, std::vector<float>{10, 20});
  braid::allreduce({a, b});
  CHECK(a.to_vector<float>() == std::vector<float>{11, 22});
  CHECK(b.to_vector<float>() == std::vector<float>{11, 22});
  const auto parts = braid::split_and_load(braid::Tensor::from_vector(ctx, dev, {4}, std::vector<float>{1, 2, 3, 4}),
                                           {dev, dev}, {1.0, 3.0});
  REQUIRE(parts.size() == 2);
  CHECK(parts[1].to_vector<float>() == std::vector<float>{2, 3, 4});
  // A weight list of another length than the devices (or parts) is refused, not read past its end.
  auto status_of = [](auto&& call) {
    try {
      call();
    } catch (const braid::Error& e) {
      return e.status();
    }
    return BRAID_OK;
  };
  CHECK(status_of([&] { braid::split_and_load(a, {dev, dev, dev}, {1.0, 1.0}); }) == BRAID_ERR_INVALID_ARGUMENT);
  CHECK(status_of([&] { braid::split_sizes(8, 3, {1.0, 2.0}); }) == BRAID_ERR_INVALID_ARGUMENT);
  CHECK(status_of([&] { braid::split_sizes(8, -1); }) == BRAID_ERR_INVALID_ARGUMENT);  // not std::length_error
  CHECK(braid::split_sizes(8, 2, {1.0, 3.0}) == std::vector<int64_t>{2, 6});
  CHECK(braid::replicate(a, {dev}).size() == 1);
  braid::KVStore kv(ctx);
  kv.init(3, a);
  kv.push(3, {a, b});
  const auto out = braid::Tensor::zeros(ctx, dev, BRAID_FLOAT32, {2});
  kv.pull(3, out);
  CHECK(out.to_vector<float>() == std::vector<float>{22, 44});
  kv.pushpull(3, b, out);
  CHECK(out.to_vector<float>() == std::vector<float>{11, 22});
  // An empty list compiles, and is refused at the call as the C API refuses a count of 0.
  CHECK_THROWS_AS(kv.push(3, {}), braid::Error);
  CHECK_THROWS_AS(kv.pull(3, {}), braid::Error);
}
