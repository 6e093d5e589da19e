// The C++ wrappers of braid.hpp over the data API: the same batches, errors as braid::Error.
#include <doctest/doctest.h>

#include <string>

#include "braid.hpp"
#include "data/data_support.h"

TEST_SUITE("braid.hpp") {

TEST_CASE("Dataset and BatchIterator") {
  dtest::TempDir dir;
  dtest::write_split(dir, dtest::synth(50));
  braid_context_options co = BRAID_CONTEXT_OPTIONS_INIT;
  co.backends = "cpu";
  braid::Context ctx(co);
  braid::Dataset ds(ctx, BRAID_SPLIT_TRAIN, "fashion-mnist", dir.str());
  CHECK(ds.size() == 50);
  CHECK(ds.image_shape() == braid::Shape{1, 28, 28});
  braid::Dataset copy = ds;  // retains
  braid::BatchIterator it(copy, {.batch_size = 16, .seed = 3});
  CHECK(it.batches() == 4);
  int64_t seen = 0;
  int batches = 0;
  for (braid::Batch b; (b = it.next());) {
    CHECK(b.images.shape() == braid::Shape{b.labels.shape()[0], 1, 28, 28});
    seen += b.labels.numel();
    ++batches;
  }
  CHECK(batches == 4);
  CHECK(seen == 50);
  CHECK(static_cast<bool>(it.next()));  // the next epoch

  try {
    braid::Dataset missing(ctx, BRAID_SPLIT_TEST, "fashion-mnist", dir.str());
    FAIL("opening a missing split did not throw");
  } catch (const braid::Error& e) {
    CHECK(e.status() == BRAID_ERR_NOT_FOUND);
    CHECK(std::string(e.what()).find("t10k-images-idx3-ubyte.gz") != std::string::npos);
  }
  CHECK_THROWS_AS(braid::BatchIterator(ds, {.batch_size = 0}), braid::Error);
}

}  // TEST_SUITE("braid.hpp")
