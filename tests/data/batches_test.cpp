// The batch iterator on a synthetic dataset whose images encode their own index: shapes, the last
// batch, every example exactly once per epoch, reshuffling, determinism, and the values themselves.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "data/data_support.h"

namespace {

constexpr int64_t kSamples = 1000;

struct BatchFixture {
  test::Ctx ctx;
  dtest::TempDir dir;
  dtest::Dataset ds;
  explicit BatchFixture(int cpu_devices = 1, uint32_t count = kSamples) : ctx(cpu_devices) {
    dtest::write_split(dir, dtest::synth(count));
    REQUIRE(dtest::open_dir(ctx.ctx, dir.str(), ds) == BRAID_OK);
  }
};

braid_batch_iterator_options opts(int64_t batch, bool shuffle, uint64_t seed = 0, bool drop_last = false,
                                  int32_t prefetch = 2, braid_device device = 0) {
  braid_batch_iterator_options o = BRAID_BATCH_ITERATOR_OPTIONS_INIT;
  o.batch_size = batch;
  o.shuffle = shuffle ? 1 : 0;
  o.seed = seed;
  o.drop_last = drop_last ? 1 : 0;
  o.prefetch = prefetch;
  o.device = device;
  return o;
}

// One epoch: the example indices in order, checking every batch's shape, dtypes and values.
struct Epoch {
  std::vector<int64_t> order;
  std::vector<int64_t> sizes;
};

Epoch run_epoch(braid_batch_iterator it) {
  Epoch e;
  bool values_ok = true;
  for (;;) {
    dtest::HostBatch b = dtest::next_batch(it);
    if (b.end) break;
    REQUIRE(b.image_shape.size() == 4);
    const int64_t n = b.image_shape[0];
    CHECK(b.image_shape == std::vector<int64_t>{n, 1, 28, 28});
    CHECK(b.label_shape == std::vector<int64_t>{n});
    CHECK(b.image_dtype == BRAID_FLOAT32);
    CHECK(b.label_dtype == BRAID_INT32);
    REQUIRE(b.images.size() == size_t(n * 784));
    for (int64_t k = 0; k < n; ++k) {
      const float* img = &b.images[size_t(k * 784)];
      const int64_t idx = std::lround(img[0] * 255.0f) + 256 * std::lround(img[1] * 255.0f);
      e.order.push_back(idx);
      // Every pixel is exactly the raw byte / 255, and the label travelled with its image.
      for (int64_t p = 0; p < 784; ++p)
        values_ok = values_ok && img[p] == static_cast<float>(dtest::synth_pixel(idx, p)) / 255.0f;
      values_ok = values_ok && b.labels[size_t(k)] == dtest::synth_label(idx);
    }
    e.sizes.push_back(n);
  }
  CHECK(values_ok);
  return e;
}

bool is_permutation_of_all(std::vector<int64_t> order, int64_t count) {
  std::sort(order.begin(), order.end());
  std::vector<int64_t> all(static_cast<size_t>(count));
  std::iota(all.begin(), all.end(), int64_t{0});
  return order == all;
}

}  // namespace

TEST_SUITE("batches") {

TEST_CASE("batch count and the last batch, with and without drop_last") {
  BatchFixture f;
  struct Case {
    int64_t batch;
    bool drop_last;
    std::vector<int64_t> sizes;
  };
  const Case cases[] = {
      {256, false, {256, 256, 256, 232}},
      {256, true, {256, 256, 256}},
      {250, false, {250, 250, 250, 250}},
      {250, true, {250, 250, 250, 250}},
      {1000, true, {1000}},
      {3000, false, {1000}},
      {3000, true, {}},
      // The whole dataset in one batch, however large the batch size (INT64_MAX gave zero batches).
      {INT64_MAX, false, {1000}},
      {INT64_MAX, true, {}},
      {INT64_MAX - 1, false, {1000}},
      {int64_t{1} << 62, false, {1000}},
  };
  for (const Case& c : cases) {
    CAPTURE(c.batch);
    CAPTURE(c.drop_last);
    for (int32_t prefetch : {0, 1, 4}) {
      CAPTURE(prefetch);
      dtest::Iterator it;
      const auto o = opts(c.batch, true, 7, c.drop_last, prefetch);
      BRAID_CHECK_OK(braid_batch_iterator_create(f.ds.ds, &o, it.out()));
      int64_t batches = -1;
      BRAID_CHECK_OK(braid_batch_iterator_batches(it.it, &batches));
      CHECK(batches == int64_t(c.sizes.size()));
      for (int epoch = 0; epoch < 2; ++epoch) {
        const Epoch e = run_epoch(it.it);
        CHECK(e.sizes == c.sizes);
        if (!c.drop_last) CHECK(is_permutation_of_all(e.order, kSamples));
      }
    }
  }
}

TEST_CASE("every example exactly once per epoch, reshuffled between epochs") {
  BatchFixture f;
  dtest::Iterator it;
  const auto o = opts(64, true, 1234);
  BRAID_CHECK_OK(braid_batch_iterator_create(f.ds.ds, &o, it.out()));
  std::vector<std::vector<int64_t>> epochs;
  for (int e = 0; e < 3; ++e) epochs.push_back(run_epoch(it.it).order);
  for (const auto& order : epochs) CHECK(is_permutation_of_all(order, kSamples));
  CHECK(epochs[0] != epochs[1]);
  CHECK(epochs[1] != epochs[2]);
  std::vector<int64_t> identity(kSamples);
  std::iota(identity.begin(), identity.end(), int64_t{0});
  CHECK(epochs[0] != identity);
  // drop_last with shuffling: each epoch drops different examples, never one twice.
  dtest::Iterator dl;
  const auto od = opts(300, true, 1234, true);
  BRAID_CHECK_OK(braid_batch_iterator_create(f.ds.ds, &od, dl.out()));
  const Epoch e0 = run_epoch(dl.it), e1 = run_epoch(dl.it);
  for (const Epoch* e : {&e0, &e1}) {
    std::vector<int64_t> s = e->order;
    std::sort(s.begin(), s.end());
    CHECK(s.size() == 900);
    CHECK(std::adjacent_find(s.begin(), s.end()) == s.end());
  }
  CHECK(e0.order != e1.order);
}

TEST_CASE("without shuffle the order is the file's, every epoch") {
  BatchFixture f;
  dtest::Iterator it;
  const auto o = opts(300, false);
  BRAID_CHECK_OK(braid_batch_iterator_create(f.ds.ds, &o, it.out()));
  std::vector<int64_t> identity(kSamples);
  std::iota(identity.begin(), identity.end(), int64_t{0});
  CHECK(run_epoch(it.it).order == identity);
  CHECK(run_epoch(it.it).order == identity);
}

TEST_CASE("the order is a function of (seed, epoch) only") {
  BatchFixture f;
  auto epochs_of = [&](uint64_t seed, int32_t prefetch, int64_t batch, int n_epochs) {
    dtest::Iterator it;
    const auto o = opts(batch, true, seed, false, prefetch);
    BRAID_CHECK_OK(braid_batch_iterator_create(f.ds.ds, &o, it.out()));
    std::vector<std::vector<int64_t>> out;
    for (int e = 0; e < n_epochs; ++e) out.push_back(run_epoch(it.it).order);
    return out;
  };
  const auto a = epochs_of(99, 2, 128, 3);
  CHECK(epochs_of(99, 2, 128, 3) == a);   // the same seed again
  CHECK(epochs_of(99, 0, 128, 3) == a);   // no prefetch thread
  CHECK(epochs_of(99, 7, 128, 3) == a);   // a deeper prefetch
  CHECK(epochs_of(99, 1, 1000, 3) == a);  // another batch size cuts the same order differently
  const auto b = epochs_of(100, 2, 128, 3);
  CHECK(b[0] != a[0]);
  CHECK(b[1] != a[1]);
}

TEST_CASE("stopping mid-epoch, and releasing with batches prepared, is clean") {
  BatchFixture f;
  for (int32_t prefetch : {1, 2, 8}) {
    dtest::Iterator it;
    const auto o = opts(10, true, 5, false, prefetch);
    BRAID_CHECK_OK(braid_batch_iterator_create(f.ds.ds, &o, it.out()));
    for (int i = 0; i < 3; ++i) CHECK(!dtest::next_batch(it.it).end);
  }  // released here with the thread blocked on a full queue: it must join
  dtest::Iterator unused;
  const auto o = opts(10, true);
  BRAID_CHECK_OK(braid_batch_iterator_create(f.ds.ds, &o, unused.out()));
}

TEST_CASE("batches are placed on the requested device") {
  BatchFixture f(2);
  if (f.ctx.devices() < 2) {
    MESSAGE("SKIPPED: needs two CPU devices (BRAID_CPU_DEVICES=2)");
    return;
  }
  dtest::Iterator it;
  const auto o = opts(100, true, 3, false, 2, 1);
  BRAID_CHECK_OK(braid_batch_iterator_create(f.ds.ds, &o, it.out()));
  braid_tensor img = nullptr, lab = nullptr;
  BRAID_CHECK_OK(braid_batch_iterator_next(it.it, &img, &lab));
  test::T ti(img), tl(lab);
  braid_device d0 = -1, d1 = -1;
  BRAID_CHECK_OK(braid_tensor_device(img, &d0));
  BRAID_CHECK_OK(braid_tensor_device(lab, &d1));
  CHECK(d0 == 1);
  CHECK(d1 == 1);
}

TEST_CASE("batches feed ops like any tensor") {
  // The chapter's use: a batch goes straight into a model. softmax cross-entropy over a [B, 10]
  // slice of the images checks that labels are valid class indices for the op, asynchronously.
  BatchFixture f;
  dtest::Iterator it;
  const auto o = opts(50, true, 11);
  BRAID_CHECK_OK(braid_batch_iterator_create(f.ds.ds, &o, it.out()));
  braid_tensor img = nullptr, lab = nullptr;
  BRAID_CHECK_OK(braid_batch_iterator_next(it.it, &img, &lab));
  test::T ti(img), tl(lab);
  test::T flat, logits, loss;
  const int64_t shape2[] = {50, 784};
  BRAID_CHECK_OK(braid_reshape(img, 2, shape2, flat.out()));
  const int64_t b0[] = {0, 0}, e0[] = {50, 10};
  BRAID_CHECK_OK(braid_slice(flat.t, b0, e0, nullptr, logits.out()));
  BRAID_CHECK_OK(braid_softmax_cross_entropy(logits.t, lab, loss.out()));
  std::vector<float> l(50);
  BRAID_CHECK_OK(braid_tensor_to_host(loss.t, l.data(), l.size() * sizeof(float)));
  for (float v : l) CHECK(v > 0.0f);  // -log p of one of 10 classes: positive, finite
}

// Parts (num_parts, part_index): what every rank of a data-parallel job reads.
TEST_CASE("parts: the same number of batches on every part, together the whole epoch") {
  BatchFixture f;
  struct Case {
    int32_t parts;
    int64_t batch;
    bool drop_last;
  };
  // 1000 examples: 4 parts divide it, 3 and 7 do not (padded by wrapping, or cut with drop_last), and
  // more parts than examples per batch.
  const Case cases[] = {{4, 64, false}, {3, 64, false}, {3, 64, true}, {7, 50, false},
                        {7, 50, true},  {1, 64, false}, {0, 64, false}};
  for (const Case& c : cases) {
    CAPTURE(c.parts);
    CAPTURE(c.drop_last);
    const int32_t parts = std::max(c.parts, 1);
    const int64_t part_size = c.drop_last ? kSamples / parts : (kSamples + parts - 1) / parts;
    // The one-iterator epoch with the parts' batches side by side: parts times the batch size.
    dtest::Iterator whole;
    auto wo = opts(c.batch * parts, true, 11, false);
    BRAID_CHECK_OK(braid_batch_iterator_create(f.ds.ds, &wo, whole.out()));
    const Epoch one = run_epoch(whole.it);
    std::vector<Epoch> part_epochs;
    for (int32_t p = 0; p < parts; ++p) {
      CAPTURE(p);
      dtest::Iterator it;
      auto o = opts(c.batch, true, 11, c.drop_last, p % 2 == 0 ? 2 : 0);
      o.num_parts = c.parts;
      o.part_index = p;
      BRAID_CHECK_OK(braid_batch_iterator_create(f.ds.ds, &o, it.out()));
      int64_t batches = -1;
      BRAID_CHECK_OK(braid_batch_iterator_batches(it.it, &batches));
      CHECK(batches == part_size / c.batch + (!c.drop_last && part_size % c.batch != 0 ? 1 : 0));
      part_epochs.push_back(run_epoch(it.it));
      CHECK(int64_t(part_epochs.back().order.size()) == (c.drop_last ? part_size / c.batch * c.batch : part_size));
      CHECK(int64_t(part_epochs.back().sizes.size()) == batches);
    }
    // Position k of part p is position k * parts + p of the epoch's order (wrapping past its end).
    for (int32_t p = 0; p < parts; ++p)
      for (size_t k = 0; k < part_epochs[size_t(p)].order.size(); ++k)
        CHECK(part_epochs[size_t(p)].order[k] == one.order[(k * size_t(parts) + size_t(p)) % size_t(kSamples)]);
    // Together: the whole epoch (each example once where the parts divide it or drop_last cuts it; the
    // padding repeats the epoch's first examples).
    std::vector<int64_t> all;
    for (const Epoch& e : part_epochs) all.insert(all.end(), e.order.begin(), e.order.end());
    if (!c.drop_last) {
      std::vector<int64_t> distinct = all;
      std::sort(distinct.begin(), distinct.end());
      distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
      CHECK(int64_t(distinct.size()) == kSamples);
      CHECK(int64_t(all.size()) == part_size * parts);
    } else {
      std::sort(all.begin(), all.end());
      CHECK(std::adjacent_find(all.begin(), all.end()) == all.end());
    }
  }
}

TEST_CASE("parts: batch b of every part together is batch b of one iterator with parts times the batch") {
  BatchFixture f;
  constexpr int32_t kParts = 4;
  constexpr int64_t kBatch = 32;
  dtest::Iterator whole;
  auto wo = opts(kBatch * kParts, true, 5);
  BRAID_CHECK_OK(braid_batch_iterator_create(f.ds.ds, &wo, whole.out()));
  std::vector<dtest::Iterator> parts(kParts);
  for (int32_t p = 0; p < kParts; ++p) {
    auto o = opts(kBatch, true, 5);
    o.num_parts = kParts;
    o.part_index = p;
    BRAID_CHECK_OK(braid_batch_iterator_create(f.ds.ds, &o, parts[size_t(p)].out()));
  }
  for (int epoch = 0; epoch < 2; ++epoch) {  // the second epoch is reshuffled alike
    CAPTURE(epoch);
    const Epoch one = run_epoch(whole.it);
    std::vector<Epoch> each;
    for (auto& it : parts) each.push_back(run_epoch(it.it));
    size_t at = 0;
    for (size_t b = 0; b < one.sizes.size(); ++b) {
      std::vector<int64_t> expected(one.order.begin() + long(at), one.order.begin() + long(at + size_t(one.sizes[b])));
      at += size_t(one.sizes[b]);
      std::vector<int64_t> got;
      for (const Epoch& e : each) {
        REQUIRE(b < e.sizes.size());
        const size_t first = b * size_t(kBatch);
        got.insert(got.end(), e.order.begin() + long(first), e.order.begin() + long(first + size_t(e.sizes[b])));
      }
      std::sort(expected.begin(), expected.end());
      std::sort(got.begin(), got.end());
      CHECK(got == expected);
    }
  }
}

TEST_CASE("parts: a caller of ABI 1.9 (no num_parts) reads the whole dataset") {
  BatchFixture f;
  dtest::Iterator it;
  auto o = opts(kSamples, false);
  o.num_parts = 3;  // beyond the struct_size below: never read
  o.part_index = 2;
  o.struct_size = static_cast<uint32_t>(offsetof(braid_batch_iterator_options, num_parts));
  BRAID_CHECK_OK(braid_batch_iterator_create(f.ds.ds, &o, it.out()));
  CHECK(is_permutation_of_all(run_epoch(it.it).order, kSamples));
}

}  // TEST_SUITE("batches")
