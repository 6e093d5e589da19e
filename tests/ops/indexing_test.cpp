// Conformance: braid_take (numpy.take / torch.index_select) on every device, every dtype the device
// holds, every axis and index shape, against a reference written from numpy.take's definition.
#include <string>
#include <vector>

#include "harness.h"

using harness::context;

namespace {

// numpy.take(x, indices, axis): result[a..., j..., b...] = x[a..., indices[j...] (wrapped), b...].
ref::Array take_ref(const ref::Array& x, const ref::Array& indices, int axis) {
  const int nd = static_cast<int>(x.shape.size());
  if (axis < 0) axis += nd;
  int64_t outer = 1, inner = 1;
  for (int k = 0; k < axis; ++k) outer *= x.shape[size_t(k)];
  for (int k = axis + 1; k < nd; ++k) inner *= x.shape[size_t(k)];
  const int64_t n = x.shape[size_t(axis)], m = static_cast<int64_t>(indices.data.size());
  ref::Shape s(x.shape.begin(), x.shape.begin() + axis);
  s.insert(s.end(), indices.shape.begin(), indices.shape.end());
  s.insert(s.end(), x.shape.begin() + axis + 1, x.shape.end());
  ref::Array out(s);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < m; ++j) {
      int64_t r = static_cast<int64_t>(indices.data[size_t(j)]);
      if (r < 0) r += n;
      for (int64_t k = 0; k < inner; ++k)
        out.data[size_t((o * m + j) * inner + k)] = x.data[size_t((o * n + r) * inner + k)];
    }
  return out;
}

bool holds(const harness::DeviceRef& dev, braid_dtype dt) {
  return (context().device_info(dev.index).dtype_mask & (1u << dt)) != 0;
}

}  // namespace

TEST_CASE("take: every axis, index shapes with negative and repeated indices, every dtype, as numpy.take") {
  const ref::Array x_values = harness::random_ints({3, 4, 5}, -50, 50, 71);
  const ref::Array index_sets[] = {
      ref::Array({}, std::vector<double>{-1.0}), ref::Array({4}, std::vector<double>{0, -1, 2, 0}),
      ref::Array({2, 3}, std::vector<double>{1, 1, -2, 0, 2, -3}), ref::Array({0}, std::vector<double>{})};
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      for (braid_dtype dt : {BRAID_FLOAT32, BRAID_FLOAT64, BRAID_INT32, BRAID_INT64, BRAID_UINT8})
        for (braid_dtype it : {BRAID_INT32, BRAID_INT64}) {
          // Every element width with int64 indices, and int32 indices with one of each width.
          if (!holds(dev, dt) || !holds(dev, it)) continue;
          if (it == BRAID_INT32 && dt != BRAID_FLOAT32 && dt != BRAID_INT64 && dt != BRAID_UINT8) continue;
          ref::Array xv = x_values;
          if (dt == BRAID_UINT8)
            for (double& v : xv.data) v += 50;
          const auto x = harness::upload(dev.index, dt, xv);
          for (int axis = -3; axis < 3; ++axis)
            for (const ref::Array& idx : index_sets) {
              const int64_t n = xv.shape[size_t(axis < 0 ? axis + 3 : axis)];
              ref::Array wrapped = idx;  // every index set stays inside [-n, n) for the smallest axis (3)
              INFO("device ", dev.id, ", ", harness::dtype_name(dt), " x, ", harness::dtype_name(it), " indices ",
                   ref::to_string(idx.shape), ", axis ", axis, ", n ", n);
              braid_tensor out = nullptr;
              const braid_status st = braid_take(x.get(), harness::upload(dev.index, it, wrapped).get(), axis, &out);
              if (st == BRAID_ERR_UNSUPPORTED) {
                MESSAGE("skipped: ", dev.id, " has no take for ", harness::dtype_name(dt), " (",
                        std::string(braid_last_error()), ")");
                break;
              }
              REQUIRE(st == BRAID_OK);
              const auto y = braid::Tensor::adopt(out);
              CHECK(y.dtype() == dt);
              CHECK_CLOSE(harness::download(y), take_ref(xv, wrapped, axis), 0.0);
            }
        }
    });
  }
}

TEST_CASE("take: an index out of range fails the op at the wait; bad axes, float indices and 0-d x at the call") {
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      INFO("device ", dev.id);
      const auto x = harness::upload(dev.index, BRAID_FLOAT32, harness::random_array({3, 4}, -1, 1, BRAID_FLOAT32, 72));
      for (double bad : {3.0, -4.0, 1e9}) {
        const auto idx = harness::upload(dev.index, BRAID_INT64, ref::Array({2}, std::vector<double>{0, bad}));
        braid_tensor out = nullptr;
        REQUIRE(braid_take(x.get(), idx.get(), 0, &out) == BRAID_OK);
        const auto y = braid::Tensor::adopt(out);
        CHECK(braid_tensor_wait_to_read(y.get()) == BRAID_ERR_KERNEL);
        const std::string message = braid_last_error();
        CHECK_MESSAGE(message.find("out of range") != std::string::npos, "message: ", message);
        CHECK(braid_wait_all(context().get()) == BRAID_ERR_KERNEL);
        CHECK(braid_wait_all(context().get()) == BRAID_OK);
      }
      const auto idx = harness::upload(dev.index, BRAID_INT32, ref::Array({1}, std::vector<double>{0}));
      braid_tensor out = nullptr;
      CHECK(braid_take(x.get(), idx.get(), 2, &out) == BRAID_ERR_INVALID_ARGUMENT);
      CHECK(braid_take(x.get(), idx.get(), -3, &out) == BRAID_ERR_INVALID_ARGUMENT);
      CHECK(braid_take(x.get(), x.get(), 0, &out) == BRAID_ERR_DTYPE);
      CHECK(braid_take(nullptr, idx.get(), 0, &out) == BRAID_ERR_INVALID_ARGUMENT);
      CHECK(braid_take(x.get(), idx.get(), 0, nullptr) == BRAID_ERR_INVALID_ARGUMENT);
      const auto scalar = harness::upload(dev.index, BRAID_FLOAT32, ref::Array({}, std::vector<double>{1.0}));
      CHECK(braid_take(scalar.get(), idx.get(), 0, &out) == BRAID_ERR_SHAPE);
      CHECK(out == nullptr);
    });
  }
}

TEST_CASE("take: uint8 indices are read as integers") {
  for (const auto& dev : harness::each_device()) {
    if (!holds(dev, BRAID_UINT8)) continue;
    harness::on_device(dev, [&] {
      INFO("device ", dev.id);
      const ref::Array xv = harness::random_array({5, 2}, -1, 1, BRAID_FLOAT32, 73);
      const ref::Array iv({3}, {4, 0, 4});
      const auto y =
          braid::take(harness::upload(dev.index, BRAID_FLOAT32, xv), harness::upload(dev.index, BRAID_UINT8, iv), 0);
      CHECK_CLOSE(harness::download(y), take_ref(xv, iv, 0), 0.0);
    });
  }
}
