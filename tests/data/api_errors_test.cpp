// Every data function's argument checks: NULL handles and out-pointers, bad option values, and
// struct_size (too small, absurd, or an older caller's shorter struct, which gets the defaults).
#include <doctest/doctest.h>

#include <cstddef>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "data/data_support.h"

namespace {

// The call fails with BRAID_ERR_INVALID_ARGUMENT and a message containing `mention`.
#define CHECK_INVALID(expr, mention)                                 \
  do {                                                               \
    const braid_status st_ = (expr);                                 \
    const std::string msg_ = braid_last_error();                     \
    INFO(#expr << " -> " << braid_status_name(st_) << ": " << msg_); \
    CHECK(st_ == BRAID_ERR_INVALID_ARGUMENT);                        \
    CHECK(msg_.find(mention) != std::string::npos);                  \
  } while (0)

struct Fixture {
  test::Ctx ctx;
  dtest::TempDir dir;
  dtest::Dataset ds;
  Fixture() {
    dtest::write_split(dir, dtest::synth(20));
    REQUIRE(dtest::open_dir(ctx.ctx, dir.str(), ds) == BRAID_OK);
  }
};

}  // namespace

TEST_SUITE("api errors") {

TEST_CASE("braid_dataset_open") {
  test::Ctx ctx;
  dtest::TempDir dir;
  dtest::write_split(dir, dtest::synth(5));
  braid_dataset_options o = BRAID_DATASET_OPTIONS_INIT;
  const std::string d = dir.str();
  o.dir = d.c_str();
  braid_dataset out = reinterpret_cast<braid_dataset>(&o);  // must be overwritten with NULL on failure

  CHECK_INVALID(braid_dataset_open(ctx.ctx, &o, nullptr), "out is NULL");
  CHECK_INVALID(braid_dataset_open(nullptr, &o, &out), "ctx is NULL");
  CHECK(out == nullptr);

  braid_dataset_options bad = o;
  bad.struct_size = 0;
  CHECK_INVALID(braid_dataset_open(ctx.ctx, &bad, &out), "struct_size");
  bad.struct_size = 100000;
  CHECK_INVALID(braid_dataset_open(ctx.ctx, &bad, &out), "struct_size");
  bad = o;
  bad.name = nullptr;
  CHECK_INVALID(braid_dataset_open(ctx.ctx, &bad, &out), "name is NULL");
  bad.name = "cifar-10";
  CHECK_INVALID(braid_dataset_open(ctx.ctx, &bad, &out), "cifar-10");
  bad = o;
  const int32_t seven = 7;  // stored as a C caller would; a C++ cast to the enum would itself be UB
  std::memcpy(&bad.split, &seven, sizeof seven);
  CHECK_INVALID(braid_dataset_open(ctx.ctx, &bad, &out), "split");
  bad = o;
  bad.dir = "";
  CHECK_INVALID(braid_dataset_open(ctx.ctx, &bad, &out), "dir is empty");
  CHECK(out == nullptr);

  // "mnist" is accepted and reads the same file names (here from the given directory).
  bad = o;
  bad.name = "mnist";
  dtest::Dataset m;
  BRAID_CHECK_OK(braid_dataset_open(ctx.ctx, &bad, m.out()));
  // Without a directory, mnist looks in its own directory, never in fashion-mnist's.
  const char* env = std::getenv("BRAID_DATA_DIR");
  if (!env || !*env) {
    bad.dir = nullptr;
    dtest::Dataset m2;
    if (braid_dataset_open(ctx.ctx, &bad, m2.out()) != BRAID_OK)
      CHECK(std::string(braid_last_error()).find("/usr/share/datasets/mnist/") != std::string::npos);
  }

  // An older caller whose struct ends before `split` gets BRAID_SPLIT_TRAIN.
  braid_dataset_options older = o;
  older.struct_size = static_cast<uint32_t>(offsetof(braid_dataset_options, split));
  const int32_t garbage = 12345;  // beyond its struct_size: ignored
  std::memcpy(&older.split, &garbage, sizeof garbage);
  dtest::Dataset ds;
  BRAID_CHECK_OK(braid_dataset_open(ctx.ctx, &older, ds.out()));
  int64_t n = 0;
  BRAID_CHECK_OK(braid_dataset_size(ds.ds, &n));
  CHECK(n == 5);
}

TEST_CASE("dataset queries, retain and release") {
  Fixture f;
  int64_t n = 0;
  int32_t nd = 0;
  int64_t shape[3] = {};
  CHECK_INVALID(braid_dataset_size(nullptr, &n), "ds is NULL");
  CHECK_INVALID(braid_dataset_size(f.ds.ds, nullptr), "count is NULL");
  CHECK_INVALID(braid_dataset_image_shape(nullptr, &nd, shape), "ds is NULL");
  CHECK_INVALID(braid_dataset_image_shape(f.ds.ds, nullptr, shape), "ndim is NULL");
  CHECK_INVALID(braid_dataset_image_shape(f.ds.ds, &nd, nullptr), "shape is NULL");
  CHECK_INVALID(braid_dataset_retain(nullptr), "ds is NULL");
  CHECK_INVALID(braid_dataset_release(nullptr), "ds is NULL");
  // A handle of another kind is refused, not misread.
  CHECK_INVALID(braid_dataset_size(reinterpret_cast<braid_dataset>(f.ctx.ctx), &n), "not a live dataset");

  BRAID_CHECK_OK(braid_dataset_retain(f.ds.ds));
  BRAID_CHECK_OK(braid_dataset_release(f.ds.ds));
  BRAID_CHECK_OK(braid_dataset_size(f.ds.ds, &n));
  CHECK(n == 20);
}

TEST_CASE("braid_batch_iterator_create") {
  Fixture f;
  braid_batch_iterator_options o = BRAID_BATCH_ITERATOR_OPTIONS_INIT;
  braid_batch_iterator out = reinterpret_cast<braid_batch_iterator>(&o);
  CHECK_INVALID(braid_batch_iterator_create(f.ds.ds, &o, nullptr), "out is NULL");
  CHECK_INVALID(braid_batch_iterator_create(nullptr, &o, &out), "ds is NULL");
  CHECK(out == nullptr);

  braid_batch_iterator_options bad = o;
  bad.struct_size = 2;
  CHECK_INVALID(braid_batch_iterator_create(f.ds.ds, &bad, &out), "struct_size");
  bad.struct_size = 5000;
  CHECK_INVALID(braid_batch_iterator_create(f.ds.ds, &bad, &out), "struct_size");
  for (int64_t bs : {int64_t{0}, int64_t{-1}, INT64_MIN}) {
    bad = o;
    bad.batch_size = bs;
    CHECK_INVALID(braid_batch_iterator_create(f.ds.ds, &bad, &out), "batch_size");
  }
  for (int32_t p : {-1, 65}) {
    bad = o;
    bad.prefetch = p;
    CHECK_INVALID(braid_batch_iterator_create(f.ds.ds, &bad, &out), "prefetch");
  }
  for (braid_device d : {-1, 99}) {
    bad = o;
    bad.device = d;
    CHECK_INVALID(braid_batch_iterator_create(f.ds.ds, &bad, &out), "device");
  }
  for (int32_t parts : {-1, INT32_MIN}) {
    bad = o;
    bad.num_parts = parts;
    CHECK_INVALID(braid_batch_iterator_create(f.ds.ds, &bad, &out), "num_parts -");
  }
  const std::pair<int32_t, int32_t> bad_parts[] = {{1, 1}, {0, 1}, {4, 4}, {4, -1}, {INT32_MAX, INT32_MAX}};
  for (const auto& [parts, index] : bad_parts) {
    bad = o;
    bad.num_parts = parts;
    bad.part_index = index;
    CHECK_INVALID(braid_batch_iterator_create(f.ds.ds, &bad, &out), "part_index");
  }
  CHECK(out == nullptr);

  // NULL options: the defaults (batch 256 > 20 examples: one batch).
  {
    dtest::Iterator it;
    BRAID_CHECK_OK(braid_batch_iterator_create(f.ds.ds, nullptr, it.out()));
    int64_t n = 0;
    BRAID_CHECK_OK(braid_batch_iterator_batches(it.it, &n));
    CHECK(n == 1);
  }
  // An older caller whose struct ends after batch_size gets the defaults for the rest.
  {
    braid_batch_iterator_options older = o;
    older.struct_size = static_cast<uint32_t>(offsetof(braid_batch_iterator_options, shuffle));
    older.batch_size = 6;
    older.drop_last = 1;   // beyond its struct_size: ignored (default 0)
    older.device = 12345;  // ignored as well (default 0)
    dtest::Iterator it;
    BRAID_CHECK_OK(braid_batch_iterator_create(f.ds.ds, &older, it.out()));
    int64_t n = 0;
    BRAID_CHECK_OK(braid_batch_iterator_batches(it.it, &n));
    CHECK(n == 4);  // ceil(20 / 6): drop_last stayed 0
  }
}

TEST_CASE("iterator next, batches, retain and release") {
  Fixture f;
  dtest::Iterator it;
  BRAID_CHECK_OK(braid_batch_iterator_create(f.ds.ds, nullptr, it.out()));
  braid_tensor img = nullptr, lab = nullptr;
  int64_t n = 0;
  CHECK_INVALID(braid_batch_iterator_next(nullptr, &img, &lab), "it is NULL");
  CHECK_INVALID(braid_batch_iterator_next(it.it, nullptr, &lab), "images is NULL");
  CHECK_INVALID(braid_batch_iterator_next(it.it, &img, nullptr), "labels is NULL");
  CHECK_INVALID(braid_batch_iterator_batches(nullptr, &n), "it is NULL");
  CHECK_INVALID(braid_batch_iterator_batches(it.it, nullptr), "count is NULL");
  CHECK_INVALID(braid_batch_iterator_retain(nullptr), "it is NULL");
  CHECK_INVALID(braid_batch_iterator_release(nullptr), "it is NULL");
  CHECK_INVALID(braid_batch_iterator_next(reinterpret_cast<braid_batch_iterator>(f.ds.ds), &img, &lab),
                "not a live batch iterator");
  // The failed calls above consumed nothing: the first batch is still the first.
  BRAID_CHECK_OK(braid_batch_iterator_retain(it.it));
  BRAID_CHECK_OK(braid_batch_iterator_release(it.it));
  dtest::HostBatch b = dtest::next_batch(it.it);
  CHECK(!b.end);
  CHECK(b.labels.size() == 20);
  CHECK(dtest::next_batch(it.it).end);
}

TEST_CASE("handles keep what they need alive") {
  // The iterator holds the dataset, the dataset holds the context: releasing in any order is safe.
  dtest::TempDir dir;
  dtest::write_split(dir, dtest::synth(9));
  braid_context ctx = nullptr;
  braid_context_options co = BRAID_CONTEXT_OPTIONS_INIT;
  co.backends = "cpu";
  BRAID_CHECK_OK(braid_context_create(&co, &ctx));
  braid_dataset ds = nullptr;
  braid_dataset_options o = BRAID_DATASET_OPTIONS_INIT;
  const std::string d = dir.str();
  o.dir = d.c_str();
  BRAID_CHECK_OK(braid_dataset_open(ctx, &o, &ds));
  braid_batch_iterator it = nullptr;
  braid_batch_iterator_options io = BRAID_BATCH_ITERATOR_OPTIONS_INIT;
  io.batch_size = 4;
  io.prefetch = 3;
  BRAID_CHECK_OK(braid_batch_iterator_create(ds, &io, &it));
  BRAID_CHECK_OK(braid_context_release(ctx));
  BRAID_CHECK_OK(braid_dataset_release(ds));
  dtest::HostBatch b = dtest::next_batch(it);
  CHECK(b.labels.size() == 4);
  BRAID_CHECK_OK(braid_batch_iterator_release(it));  // joins the prefetch thread, then frees all three
}

TEST_CASE("released dataset and iterator handles are refused, and their addresses are not reused soon") {
  // As tensor handles: a released handle is BRAID_ERR_INVALID_ARGUMENT (never a read of freed memory,
  // which ASan would report), and a new handle does not take a stale one's address, so a stale
  // release cannot free a newer, unrelated object.
  Fixture f;
  braid_dataset_options o = BRAID_DATASET_OPTIONS_INIT;
  const std::string d = f.dir.str();
  o.dir = d.c_str();
  std::vector<braid_dataset> stale_ds;
  std::vector<braid_batch_iterator> stale_it;
  for (int i = 0; i < 8; ++i) {
    braid_dataset ds = nullptr;
    BRAID_CHECK_OK(braid_dataset_open(f.ctx.ctx, &o, &ds));
    braid_batch_iterator it = nullptr;
    BRAID_CHECK_OK(braid_batch_iterator_create(ds, nullptr, &it));
    for (braid_dataset s : stale_ds) CHECK(s != ds);
    for (braid_batch_iterator s : stale_it) CHECK(s != it);
    BRAID_CHECK_OK(braid_batch_iterator_release(it));
    BRAID_CHECK_OK(braid_dataset_release(ds));
    stale_ds.push_back(ds);
    stale_it.push_back(it);
  }
  // A live dataset and iterator beside the stale ones: stale calls must not touch them.
  dtest::Iterator live_it;
  BRAID_CHECK_OK(braid_batch_iterator_create(f.ds.ds, nullptr, live_it.out()));
  int64_t n = 0;
  int32_t nd = 0;
  int64_t shape[3] = {};
  braid_tensor img = nullptr, lab = nullptr;
  for (size_t i = 0; i < stale_ds.size(); ++i) {
    CAPTURE(i);
    CHECK_INVALID(braid_dataset_size(stale_ds[i], &n), "not a live dataset handle");
    CHECK_INVALID(braid_dataset_image_shape(stale_ds[i], &nd, shape), "not a live dataset handle");
    CHECK_INVALID(braid_dataset_retain(stale_ds[i]), "not a live dataset handle");
    CHECK_INVALID(braid_dataset_release(stale_ds[i]), "not a live dataset handle");
    braid_batch_iterator none = nullptr;
    CHECK_INVALID(braid_batch_iterator_create(stale_ds[i], nullptr, &none), "not a live dataset handle");
    CHECK(none == nullptr);
    CHECK_INVALID(braid_batch_iterator_next(stale_it[i], &img, &lab), "not a live batch iterator handle");
    CHECK_INVALID(braid_batch_iterator_batches(stale_it[i], &n), "not a live batch iterator handle");
    CHECK_INVALID(braid_batch_iterator_retain(stale_it[i]), "not a live batch iterator handle");
    CHECK_INVALID(braid_batch_iterator_release(stale_it[i]), "not a live batch iterator handle");
  }
  BRAID_CHECK_OK(braid_dataset_size(f.ds.ds, &n));
  CHECK(n == 20);
  const dtest::HostBatch b = dtest::next_batch(live_it.it);
  CHECK(b.labels.size() == 20);
}

}  // TEST_SUITE("api errors")

// Issue 31: a second braid_dataset_release took the reference the iterator holds and freed the
// dataset under it; braid_batch_iterator_next then read freed memory. A release beyond the
// application's own references is refused and the iterator keeps reading its dataset.
TEST_CASE("a dataset released twice while an iterator reads it: the second release is refused") {
  test::Ctx ctx;
  dtest::TempDir dir;
  dtest::write_split(dir, dtest::synth(6));
  for (int32_t prefetch : {0, 2}) {  // read on the calling thread, and by the prefetch thread
    CAPTURE(prefetch);
    braid_dataset ds = nullptr;
    {
      dtest::Dataset owned;
      REQUIRE(dtest::open_dir(ctx.ctx, dir.str(), owned) == BRAID_OK);
      ds = std::exchange(owned.ds, nullptr);
    }
    braid_batch_iterator_options o = BRAID_BATCH_ITERATOR_OPTIONS_INIT;
    o.batch_size = 4;
    o.prefetch = prefetch;
    o.shuffle = 0;
    dtest::Iterator it;
    BRAID_CHECK_OK(braid_batch_iterator_create(ds, &o, it.out()));
    BRAID_CHECK_OK(braid_dataset_retain(ds));
    BRAID_CHECK_OK(braid_dataset_release(ds));
    BRAID_CHECK_OK(braid_dataset_release(ds));
    CHECK_INVALID(braid_dataset_release(ds), "already released");  // the iterator's reference stays
    CHECK_INVALID(braid_dataset_retain(ds), "released by the application");
    // The iterator still has its dataset: every batch, with what the files hold.
    const dtest::HostBatch b = dtest::next_batch(it.it);
    REQUIRE_FALSE(b.end);
    CHECK(b.image_shape == std::vector<int64_t>{4, 1, 28, 28});
    CHECK(b.images[0] == static_cast<float>(dtest::synth_pixel(0, 0)) / 255.0f);
    CHECK(b.labels == std::vector<int32_t>{0, 1, 2, 3});
    CHECK(dtest::next_batch(it.it).labels == std::vector<int32_t>{4, 5});
    BRAID_CHECK_OK(braid_batch_iterator_release(std::exchange(it.it, nullptr)));  // frees the dataset
    CHECK_INVALID(braid_dataset_release(ds), "not a live dataset handle");
  }
}
