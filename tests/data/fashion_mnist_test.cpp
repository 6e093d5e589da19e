// The real Fashion-MNIST as the Debian package dataset-fashion-mnist installs it (a dependency in
// scripts/install-deps.sh). The contents are checked against the gzip trailer of each file: gzip
// stores the CRC-32 and length of the uncompressed data in the last 8 bytes, so rebuilding the IDX
// bytes from what the API returns and hashing them with zlib's crc32 must give the stored value.
#include <doctest/doctest.h>
#include <zlib.h>

#include <array>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "data/data_support.h"

namespace {

const std::string kDir = "/usr/share/datasets/fashion-mnist";

uint32_t le32(const uint8_t* p) {
  return uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
}

// (CRC-32, length mod 2^32) of the uncompressed data, from a gzip file's trailer (RFC 1952 §2.3).
std::pair<uint32_t, uint32_t> gzip_trailer(const std::string& path) {
  const std::vector<uint8_t> raw = dtest::read_file(path);
  REQUIRE(raw.size() > 18);
  REQUIRE(raw[0] == 0x1f);  // gzip magic
  REQUIRE(raw[1] == 0x8b);
  return {le32(&raw[raw.size() - 8]), le32(&raw[raw.size() - 4])};
}

void require_installed() {
  for (const char* f : {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz",
                        "t10k-labels-idx1-ubyte.gz"})
    REQUIRE_MESSAGE(std::filesystem::exists(kDir + "/" + f),
                    kDir << "/" << f << " is missing: install the Debian package dataset-fashion-mnist "
                         << "(scripts/install-deps.sh does)");
}

struct SplitCase {
  braid_dataset_split split;
  const char* prefix;
  int64_t count;
};

}  // namespace

TEST_SUITE("fashion-mnist") {

TEST_CASE("both splits read, with the sizes, labels and bytes of the installed files") {
  require_installed();
  test::Ctx ctx;
  for (const SplitCase& sc :
       {SplitCase{BRAID_SPLIT_TRAIN, "train", 60000}, SplitCase{BRAID_SPLIT_TEST, "t10k", 10000}}) {
    CAPTURE(sc.prefix);
    dtest::Dataset ds;
    braid_dataset_options o = BRAID_DATASET_OPTIONS_INIT;  // dir NULL: the package's directory
    o.split = sc.split;
    const char* env = std::getenv("BRAID_DATA_DIR");
    if (env) o.dir = kDir.c_str();  // the test reads the installed files whatever the environment says
    BRAID_CHECK_OK(braid_dataset_open(ctx.ctx, &o, ds.out()));

    int64_t count = 0;
    BRAID_CHECK_OK(braid_dataset_size(ds.ds, &count));
    CHECK(count == sc.count);
    int32_t nd = 0;
    int64_t shape[BRAID_MAX_DIMS] = {};
    BRAID_CHECK_OK(braid_dataset_image_shape(ds.ds, &nd, shape));
    REQUIRE(nd == 3);
    CHECK(shape[0] == 1);
    CHECK(shape[1] == 28);
    CHECK(shape[2] == 28);

    // One epoch in file order, rebuilt into the IDX bytes it came from.
    dtest::Iterator it;
    braid_batch_iterator_options io = BRAID_BATCH_ITERATOR_OPTIONS_INIT;
    io.shuffle = 0;
    io.batch_size = 4096;
    BRAID_CHECK_OK(braid_batch_iterator_create(ds.ds, &io, it.out()));
    std::vector<uint8_t> images = dtest::idx_bytes({uint32_t(sc.count), 28, 28}, {});
    std::vector<uint8_t> labels = dtest::idx_bytes({uint32_t(sc.count)}, {});
    std::array<int64_t, 10> per_class{};
    bool in_range = true, exact = true;
    for (;;) {
      dtest::HostBatch b = dtest::next_batch(it.it);
      if (b.end) break;
      for (float v : b.images) {
        const float scaled = std::round(v * 255.0f);
        in_range = in_range && v >= 0.0f && v <= 1.0f;
        const auto byte = static_cast<uint8_t>(scaled);
        exact = exact && v == static_cast<float>(byte) / 255.0f;
        images.push_back(byte);
      }
      for (int32_t l : b.labels) {
        in_range = in_range && l >= 0 && l < 10;
        if (l >= 0 && l < 10) ++per_class[static_cast<size_t>(l)];
        labels.push_back(static_cast<uint8_t>(l));
      }
    }
    CHECK(in_range);
    CHECK(exact);  // every value is some byte / 255
    // Fashion-MNIST is balanced: 6000 (train) or 1000 (test) examples of each of the 10 classes.
    for (int64_t c : per_class) CHECK(c == sc.count / 10);

    const std::string prefix = kDir + "/" + sc.prefix;
    const auto [img_crc, img_len] = gzip_trailer(prefix + "-images-idx3-ubyte.gz");
    const auto [lab_crc, lab_len] = gzip_trailer(prefix + "-labels-idx1-ubyte.gz");
    CHECK(images.size() == img_len);
    CHECK(labels.size() == lab_len);
    CHECK(crc32(0, images.data(), static_cast<uInt>(images.size())) == img_crc);
    CHECK(crc32(0, labels.data(), static_cast<uInt>(labels.size())) == lab_crc);
  }
}

TEST_CASE("batches of the real training set: 60000 examples per epoch, a smaller last batch") {
  require_installed();
  test::Ctx ctx;
  dtest::Dataset ds;
  REQUIRE(dtest::open_dir(ctx.ctx, kDir, ds) == BRAID_OK);
  dtest::Iterator it;
  braid_batch_iterator_options io = BRAID_BATCH_ITERATOR_OPTIONS_INIT;
  io.batch_size = 256;
  io.seed = 42;
  BRAID_CHECK_OK(braid_batch_iterator_create(ds.ds, &io, it.out()));
  int64_t batches = 0;
  BRAID_CHECK_OK(braid_batch_iterator_batches(it.it, &batches));
  CHECK(batches == 235);  // ceil(60000 / 256)
  std::array<int64_t, 10> per_class{};
  int64_t seen = 0, n_batches = 0, last = 0;
  for (dtest::HostBatch b = dtest::next_batch(it.it); !b.end; b = dtest::next_batch(it.it)) {
    REQUIRE(b.image_shape.size() == 4);
    CHECK(b.image_shape[1] == 1);
    last = b.image_shape[0];
    seen += last;
    ++n_batches;
    for (int32_t l : b.labels) ++per_class[static_cast<size_t>(l)];
  }
  CHECK(n_batches == 235);
  CHECK(last == 60000 - 234 * 256);
  CHECK(seen == 60000);
  for (int64_t c : per_class) CHECK(c == 6000);  // a permutation keeps the class counts
}

}  // TEST_SUITE("fashion-mnist")
