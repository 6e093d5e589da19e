// Failures that are not about one argument: operands on two devices, allocations that cannot be
// served, and a kernel that fails after its op call returned (an asynchronous error).
#include <cmath>
#include <cstdlib>

#include "errors.h"

using errors::Out;
using errors::tensor;

TEST_CASE("errors: operands on different devices fail with BRAID_ERR_DEVICE [needs 2 devices]") {
  if (harness::context().device_count() < 2) {
    MESSAGE("skipped: ", harness::context().device_count(),
            " device(s); mixing devices needs 2 (the suite sets BRAID_CPU_DEVICES=2 unless it is already set)");
    return;
  }
  Out o, o2, o3;
  const auto a0 = tensor(0, BRAID_FLOAT32, {2, 3}), a1 = tensor(1, BRAID_FLOAT32, {2, 3});
  const auto sq0 = tensor(0, BRAID_FLOAT32, {3, 3}), sq1 = tensor(1, BRAID_FLOAT32, {3, 3});
  CHECK_FAILS(braid_binary(BRAID_BINARY_ADD, a0.get(), a1.get(), o.p()), BRAID_ERR_DEVICE, "braid_binary");
  CHECK_FAILS(braid_matmul(a0.get(), sq1.get(), 0, 0, o.p()), BRAID_ERR_DEVICE, "braid_matmul");
  const braid_tensor mixed[] = {a0.get(), a1.get()};
  CHECK_FAILS(braid_concat(2, mixed, 0, o.p()), BRAID_ERR_DEVICE, "braid_concat");

  const auto x0 = tensor(0, BRAID_FLOAT32, {1, 3, 4, 4}), w1 = tensor(1, BRAID_FLOAT32, {2, 3, 3, 3});
  const auto w0 = tensor(0, BRAID_FLOAT32, {2, 3, 3, 3}), b1 = tensor(1, BRAID_FLOAT32, {2});
  CHECK_FAILS(braid_conv2d(x0.get(), w1.get(), nullptr, nullptr, o.p()), BRAID_ERR_DEVICE, "braid_conv2d");
  CHECK_FAILS(braid_conv2d(x0.get(), w0.get(), b1.get(), nullptr, o.p()), BRAID_ERR_DEVICE, "braid_conv2d");

  const auto c0 = tensor(0, BRAID_FLOAT32, {3}), c1 = tensor(1, BRAID_FLOAT32, {3});
  const braid_batch_norm_params bp = BRAID_BATCH_NORM_PARAMS_INIT;
  CHECK_FAILS(braid_batch_norm(a0.get(), c0.get(), c0.get(), c1.get(), c0.get(), &bp, o.p(), o2.p(), o3.p()),
              BRAID_ERR_DEVICE, "braid_batch_norm");

  const auto labels1 = tensor(1, BRAID_INT64, {2});
  CHECK_FAILS(braid_softmax_cross_entropy(a0.get(), labels1.get(), o.p()), BRAID_ERR_DEVICE,
              "braid_softmax_cross_entropy");

  CHECK_FAILS(braid_sgd_update(a0.get(), a1.get(), 0.1, 0), BRAID_ERR_DEVICE, "braid_sgd_update");
  CHECK_FAILS(braid_sgd_momentum_update(a0.get(), a0.get(), a1.get(), 0.1, 0.9, 0), BRAID_ERR_DEVICE,
              "braid_sgd_momentum_update");
  const braid_adam_params ap = BRAID_ADAM_PARAMS_INIT;
  CHECK_FAILS(braid_adam_update(a0.get(), a0.get(), a0.get(), a1.get(), &ap), BRAID_ERR_DEVICE, "braid_adam_update");

  // copy_into and copy accept any devices: these are not errors.
  CHECK(braid_copy_into(a0.get(), a1.get()) == BRAID_OK);
  CHECK(braid_copy(a0.get(), 1, o.p()) == BRAID_OK);
}

TEST_CASE("errors: an allocation that cannot be served is BRAID_ERR_OUT_OF_MEMORY, not a crash") {
  Out o;
  const int64_t huge[] = {int64_t{1} << 40};                        // 4 TiB of float32
  const int64_t huge2[] = {int64_t{1} << 20, int64_t{1} << 20, 8};  // 64 TiB of float64
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      INFO("device ", dev.id);
      CHECK_FAILS(braid_tensor_empty(errors::ctx(), dev.index, BRAID_FLOAT32, 1, huge, o.p()), BRAID_ERR_OUT_OF_MEMORY,
                  "braid_tensor_empty");
      CHECK_FAILS(braid_tensor_empty(errors::ctx(), dev.index, BRAID_FLOAT64, 3, huge2, o.p()), BRAID_ERR_OUT_OF_MEMORY,
                  "braid_tensor_empty");
      CHECK_FAILS(braid_full(errors::ctx(), dev.index, BRAID_FLOAT32, 1, huge, 1.0, o.p()), BRAID_ERR_OUT_OF_MEMORY,
                  "braid_full");
      // A device without the kernel refuses first (UNSUPPORTED is checked before memory).
      if (dev.id.rfind("cpu:", 0) != 0 &&
          braid_random_uniform(errors::ctx(), dev.index, BRAID_FLOAT32, 1, huge, 0, 1, o.p()) == BRAID_ERR_UNSUPPORTED)
        MESSAGE("skipped on ", dev.id, ": no random_uniform kernel");
      else
        CHECK_FAILS(braid_random_uniform(errors::ctx(), dev.index, BRAID_FLOAT32, 1, huge, 0, 1, o.p()),
                    BRAID_ERR_OUT_OF_MEMORY, "braid_random_uniform");
      // An op whose output is too large: the outer product of two 2^20-vectors in float64 (8 TiB).
      const auto col = tensor(dev.index, BRAID_FLOAT64, {int64_t{1} << 20, 1});
      const auto row = tensor(dev.index, BRAID_FLOAT64, {1, int64_t{1} << 20});
      CHECK_FAILS(braid_binary(BRAID_BINARY_MUL, col.get(), row.get(), o.p()), BRAID_ERR_OUT_OF_MEMORY, "braid_binary");
      // The device still works afterwards.
      CHECK(braid::Tensor::ones(harness::context(), dev.index, BRAID_FLOAT32, {16}).to_vector<float>() ==
            std::vector<float>(16, 1.0f));
    });
  }
}

// braid.h: "A label outside [0, K) fails the op (an asynchronous error on the output)".
// docs/ENGINE.md#errors: the failed op poisons what it writes, readers inherit the error, wait_all
// returns it once.
TEST_CASE("errors: a kernel failure is asynchronous, poisons dependents and is reported once by wait_all") {
  // A context of its own, so that no other test's pending work or errors interfere.
  setenv("BRAID_CPU_DEVICES", "2", 0);
  braid::Context c;
  if (c.device_count() == 0) {
    MESSAGE("skipped: no device");
    return;
  }
  for (braid::Device d : c.devices()) {
    const std::string id = c.device_info(d).id;
    INFO("device ", id);
    const auto logits = braid::Tensor::from_vector(c, d, {3, 4}, std::vector<float>(12, 0.5f));
    const auto labels = braid::Tensor::from_vector(c, d, {3}, std::vector<int32_t>{0, 7, 1});  // 7 >= K = 4
    braid_tensor raw = nullptr;
    const braid_status st = braid_softmax_cross_entropy(logits.get(), labels.get(), &raw);
    if (st == BRAID_ERR_UNSUPPORTED && id.rfind("cpu:", 0) != 0) {
      MESSAGE("skipped on ", id, ": ", std::string(braid_last_error()));
      continue;
    }
    REQUIRE(st == BRAID_OK);  // fails later
    const auto loss = braid::Tensor::adopt(raw);
    const auto dependent = braid::exp(loss) + 1.0;  // pushed before the failure is known: accepted
    const auto independent = braid::exp(logits);    // reads nothing poisoned

    CHECK(braid_tensor_wait_to_read(loss.get()) == BRAID_ERR_KERNEL);
    const std::string msg = braid_last_error();
    CHECK_MESSAGE(msg.find("softmax_cross_entropy") != std::string::npos, "message: ", msg);
    CHECK_MESSAGE(msg.find(id) != std::string::npos, "message: ", msg);
    CHECK(braid_tensor_wait_to_read(loss.get()) == BRAID_ERR_KERNEL);  // stays failed, and waitable
    CHECK(braid_tensor_wait_to_read(dependent.get()) == BRAID_ERR_KERNEL);
    CHECK(std::string(braid_last_error()).find("softmax_cross_entropy") != std::string::npos);
    CHECK(braid_tensor_wait_to_read(independent.get()) == BRAID_OK);
    CHECK(independent.to_vector<float>() == std::vector<float>(12, std::exp(0.5f)));
    // The shape is still known without waiting.
    CHECK(loss.shape() == braid::Shape{3});

    CHECK(braid_wait_all(c.get()) == BRAID_ERR_KERNEL);
    CHECK(std::string(braid_last_error()).find("softmax_cross_entropy") != std::string::npos);
    CHECK(braid_wait_all(c.get()) == BRAID_OK);  // reported once

    // A negative int64 label fails the same way; the context keeps working afterwards.
    const auto neg = braid::Tensor::from_vector(c, d, {3}, std::vector<int64_t>{0, 1, -1});
    REQUIRE(braid_softmax_cross_entropy(logits.get(), neg.get(), &raw) == BRAID_OK);
    const auto loss2 = braid::Tensor::adopt(raw);
    CHECK(braid_tensor_wait_to_read(loss2.get()) == BRAID_ERR_KERNEL);
    CHECK(braid_wait_all(c.get()) == BRAID_ERR_KERNEL);
    CHECK(braid_wait_all(c.get()) == BRAID_OK);
    const auto ok =
        braid::softmax_cross_entropy(logits, braid::Tensor::from_vector(c, d, {3}, std::vector<int64_t>{0, 1, 3}));
    CHECK(ok.to_vector<float>()[0] == doctest::Approx(std::log(4.0)));
  }
}
