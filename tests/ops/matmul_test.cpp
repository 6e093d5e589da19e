// Conformance: matmul in 2-D and batched 3-D form (including a 2-D side shared by every batch), with
// every combination of transposes, on odd and non-square shapes.
#include "harness.h"

using harness::context;
using tol::Kind;

namespace {

// Shape of an operand holding `rows x cols` of op(X), stored transposed when `t`.
ref::Shape operand(int64_t batch, int64_t rows, int64_t cols, bool t) {
  ref::Shape s = t ? ref::Shape{cols, rows} : ref::Shape{rows, cols};
  if (batch > 0) s.insert(s.begin(), batch);
  return s;
}

struct Dims {
  int64_t m, k, n;
};
const Dims kDims[] = {{1, 1, 1}, {3, 7, 5}, {7, 1, 3}, {1, 33, 1}, {33, 17, 9}, {64, 65, 63}};

void check_matmul(const harness::DeviceRef& dev, braid_dtype dt, int64_t batch_a, int64_t batch_b, const Dims& d,
                  bool ta, bool tb) {
  INFO("device ", dev.id, ", ", harness::dtype_name(dt), ", m,k,n = ", d.m, ",", d.k, ",", d.n, ", batches ", batch_a,
       "/", batch_b, ", transpose ", int{ta}, int{tb});
  const ref::Array a = harness::random_array(operand(batch_a, d.m, d.k, ta), -1.0, 1.0, dt, 81);
  const ref::Array b = harness::random_array(operand(batch_b, d.k, d.n, tb), -1.0, 1.0, dt, 82);
  const auto y = braid::matmul(harness::upload(dev.index, dt, a), harness::upload(dev.index, dt, b), ta, tb);
  CHECK(y.dtype() == dt);
  CHECK_CLOSE(harness::download(y), ref::matmul(a, b, ta, tb), tol::of(Kind::gemm, dt));
}

}  // namespace

TEST_CASE("matmul: 2-D with every transpose combination") {
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      for (braid_dtype dt : harness::kFloatTypes)
        for (const Dims& d : kDims)
          for (bool ta : {false, true})
            for (bool tb : {false, true}) check_matmul(dev, dt, 0, 0, d, ta, tb);
    });
  }
}

TEST_CASE("matmul: batched 3-D with every transpose combination") {
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      for (braid_dtype dt : harness::kFloatTypes)
        for (const Dims& d : {Dims{1, 1, 1}, Dims{3, 7, 5}, Dims{9, 4, 11}})
          for (int64_t batch : {1, 3})
            for (bool ta : {false, true})
              for (bool tb : {false, true}) check_matmul(dev, dt, batch, batch, d, ta, tb);
    });
  }
}

TEST_CASE("matmul: batched with one side 2-D (shared by every batch)") {
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      for (braid_dtype dt : harness::kFloatTypes)
        for (const Dims& d : {Dims{3, 7, 5}, Dims{1, 4, 6}})
          for (bool ta : {false, true})
            for (bool tb : {false, true}) {
              check_matmul(dev, dt, 4, 0, d, ta, tb);
              check_matmul(dev, dt, 0, 4, d, ta, tb);
            }
    });
  }
}

// torch.matmul broadcasts the batch: [1,2,3] @ [3,3,4] is [3,2,4], the batch of 1 shared by every batch.
TEST_CASE("matmul: a batch of 1 broadcasts against the other side's batch") {
  for (const auto& dev : harness::each_device()) {
    harness::on_device(dev, [&] {
      for (braid_dtype dt : harness::kFloatTypes)
        for (const Dims& d : {Dims{2, 3, 4}, Dims{7, 5, 1}})
          for (bool ta : {false, true})
            for (bool tb : {false, true}) {
              check_matmul(dev, dt, 1, 3, d, ta, tb);
              check_matmul(dev, dt, 3, 1, d, ta, tb);
            }
      INFO("device ", dev.id);
      const auto y = braid::matmul(harness::upload(dev.index, BRAID_FLOAT32, ref::Array({1, 2, 3}, 1.0)),
                                   harness::upload(dev.index, BRAID_FLOAT32, ref::Array({3, 3, 4}, 1.0)));
      CHECK(y.shape() == braid::Shape{3, 2, 4});
    });
  }
}
