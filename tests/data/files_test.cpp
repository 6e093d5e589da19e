// Which files a dataset reads, and what a missing or damaged file gives: the right status and a
// message naming the file (and, when missing, the Debian package that installs it).
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "data/data_support.h"

namespace {

using dtest::TempDir;

// Opens dir and expects `status`, with each of `mentions` in the message.
void expect_failure(braid_context ctx, const TempDir& dir, braid_status status, std::vector<std::string> mentions,
                    braid_dataset_split split = BRAID_SPLIT_TRAIN) {
  dtest::Dataset ds;
  const braid_status st = dtest::open_dir(ctx, dir.str(), ds, split);
  const std::string msg = dtest::last_error();
  INFO(msg);
  CHECK(braid_status_name(st) == std::string(braid_status_name(status)));
  CHECK(ds.ds == nullptr);
  for (const std::string& m : mentions) CHECK_MESSAGE(msg.find(m) != std::string::npos, "message lacks '" << m << "'");
}

// Scoped environment variable.
struct Env {
  std::string name, old;
  bool had;
  Env(const char* n, const std::string& value) : name(n), had(std::getenv(n) != nullptr) {
    if (had) old = std::getenv(n);
    setenv(n, value.c_str(), 1);
  }
  ~Env() {
    if (had) setenv(name.c_str(), old.c_str(), 1);
    else unsetenv(name.c_str());
  }
};

int64_t size_of(const dtest::Dataset& ds) {
  int64_t n = -1;
  BRAID_CHECK_OK(braid_dataset_size(ds.ds, &n));
  return n;
}

}  // namespace

TEST_SUITE("files") {

TEST_CASE("gzip and plain files give the same dataset") {
  test::Ctx ctx;
  const dtest::Synth s = dtest::synth(37);
  TempDir gz, plain;
  dtest::write_split(gz, s, true);
  dtest::write_split(plain, s, false);
  dtest::Dataset a, b;
  REQUIRE(dtest::open_dir(ctx.ctx, gz.str(), a) == BRAID_OK);
  REQUIRE(dtest::open_dir(ctx.ctx, plain.str(), b) == BRAID_OK);
  CHECK(size_of(a) == 37);
  CHECK(size_of(b) == 37);
  for (dtest::Dataset* d : {&a, &b}) {
    dtest::Iterator it;
    braid_batch_iterator_options o = BRAID_BATCH_ITERATOR_OPTIONS_INIT;
    o.shuffle = 0;
    o.batch_size = 37;
    BRAID_CHECK_OK(braid_batch_iterator_create(d->ds, &o, it.out()));
    dtest::HostBatch hb = dtest::next_batch(it.it);
    REQUIRE(hb.images.size() == 37u * 784u);
    bool same = true;
    for (int64_t i = 0; i < 37; ++i) {
      for (int64_t p = 0; p < 784; ++p)
        same = same && hb.images[size_t(i * 784 + p)] == static_cast<float>(dtest::synth_pixel(i, p)) / 255.0f;
      same = same && hb.labels[size_t(i)] == dtest::synth_label(i);
    }
    CHECK(same);
  }
}

TEST_CASE("the test split reads the t10k files") {
  test::Ctx ctx;
  TempDir dir;
  dtest::write_split(dir, dtest::synth(5), true, "t10k");
  dtest::Dataset ds;
  REQUIRE(dtest::open_dir(ctx.ctx, dir.str(), ds, BRAID_SPLIT_TEST) == BRAID_OK);
  CHECK(size_of(ds) == 5);
  // Only t10k-* exists: the train split is missing.
  expect_failure(ctx.ctx, dir, BRAID_ERR_NOT_FOUND, {dir.file("train-images-idx3-ubyte.gz")});
}

TEST_CASE("directory precedence: options->dir, then BRAID_DATA_DIR, then the package's directory") {
  test::Ctx ctx;
  TempDir env_dir, opt_dir;
  dtest::write_split(env_dir, dtest::synth(3));
  dtest::write_split(opt_dir, dtest::synth(4));
  Env env("BRAID_DATA_DIR", env_dir.str());
  {
    dtest::Dataset ds;
    BRAID_CHECK_OK(braid_dataset_open(ctx.ctx, nullptr, ds.out()));  // NULL options: defaults + env
    CHECK(size_of(ds) == 3);
  }
  {
    dtest::Dataset ds;
    REQUIRE(dtest::open_dir(ctx.ctx, opt_dir.str(), ds) == BRAID_OK);
    CHECK(size_of(ds) == 4);
  }
  {
    // An empty BRAID_DATA_DIR counts as unset: the package's directory (missing, or the real files).
    Env empty("BRAID_DATA_DIR", "");
    dtest::Dataset ds;
    braid_dataset_options o = BRAID_DATASET_OPTIONS_INIT;
    const braid_status st = braid_dataset_open(ctx.ctx, &o, ds.out());
    if (st == BRAID_OK) CHECK(size_of(ds) == 60000);
    else CHECK(dtest::last_error().find("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz") !=
               std::string::npos);
  }
}

TEST_CASE("a missing file names the file and the Debian package") {
  test::Ctx ctx;
  TempDir dir;
  expect_failure(ctx.ctx, dir, BRAID_ERR_NOT_FOUND,
                 {dir.file("train-images-idx3-ubyte.gz"), "dataset-fashion-mnist", "BRAID_DATA_DIR"});
  // Images present, labels missing: the labels file is the one named.
  dtest::write_gz(dir.file("train-images-idx3-ubyte.gz"), dtest::synth(3).images);
  expect_failure(ctx.ctx, dir, BRAID_ERR_NOT_FOUND, {dir.file("train-labels-idx1-ubyte.gz"), "dataset-fashion-mnist"});
  // A directory that does not exist at all.
  TempDir parent;
  const std::string nowhere = parent.file("no/such/dir");
  dtest::Dataset ds;
  braid_dataset_options o = BRAID_DATASET_OPTIONS_INIT;
  o.dir = nowhere.c_str();
  CHECK(braid_dataset_open(ctx.ctx, &o, ds.out()) == BRAID_ERR_NOT_FOUND);
  CHECK(dtest::last_error().find(nowhere + "/train-images-idx3-ubyte.gz") != std::string::npos);
}

TEST_CASE("corrupt files: each names the file and gives BRAID_ERR_IO") {
  test::Ctx ctx;
  const dtest::Synth good = dtest::synth(10);
  const std::vector<uint8_t> px(10 * 784, 1);

  SUBCASE("wrong magic: a label file where images belong") {
    TempDir dir;
    dtest::write_split(dir, good);
    dtest::write_gz(dir.file("train-images-idx3-ubyte.gz"), good.labels);
    expect_failure(ctx.ctx, dir, BRAID_ERR_IO, {dir.file("train-images-idx3-ubyte.gz"), "magic 0x00000801"});
  }
  SUBCASE("wrong magic: a non-byte element type") {
    TempDir dir;
    dtest::write_split(dir, good);
    dtest::write_gz(dir.file("train-images-idx3-ubyte.gz"), dtest::idx_bytes({10, 28, 28}, px, 0x0d));
    expect_failure(ctx.ctx, dir, BRAID_ERR_IO, {dir.file("train-images-idx3-ubyte.gz"), "magic 0x00000d03"});
  }
  SUBCASE("wrong dimensions: 27x28 images") {
    TempDir dir;
    dtest::write_split(dir, dtest::synth(10, 27, 28));
    expect_failure(ctx.ctx, dir, BRAID_ERR_IO, {dir.file("train-images-idx3-ubyte.gz"), "dimension 1 is 27"});
  }
  SUBCASE("wrong dimensions: zero images") {
    TempDir dir;
    dtest::write_split(dir, good);
    dtest::write_plain(dir.file("train-labels-idx1-ubyte.gz"), dtest::idx_bytes({0}, {}));
    expect_failure(ctx.ctx, dir, BRAID_ERR_IO, {dir.file("train-labels-idx1-ubyte.gz"), "dimension 0 is 0"});
  }
  SUBCASE("truncated gzip stream") {
    TempDir dir;
    dtest::write_split(dir, good);
    std::vector<uint8_t> gz = dtest::read_file(dir.file("train-images-idx3-ubyte.gz"));
    REQUIRE(gz.size() > 40);
    gz.resize(gz.size() / 2);
    dtest::write_plain(dir.file("train-images-idx3-ubyte.gz"), gz);
    expect_failure(ctx.ctx, dir, BRAID_ERR_IO, {dir.file("train-images-idx3-ubyte.gz")});
  }
  SUBCASE("gzip trailer damaged (CRC mismatch)") {
    TempDir dir;
    dtest::write_split(dir, good);
    std::vector<uint8_t> gz = dtest::read_file(dir.file("train-labels-idx1-ubyte.gz"));
    gz[gz.size() - 8] ^= 0xff;  // first byte of the stored CRC-32
    dtest::write_plain(dir.file("train-labels-idx1-ubyte.gz"), gz);
    expect_failure(ctx.ctx, dir, BRAID_ERR_IO, {dir.file("train-labels-idx1-ubyte.gz"), "gzip"});
  }
  SUBCASE("truncated plain file: fewer images than the header says") {
    TempDir dir;
    std::vector<uint8_t> img = good.images;
    img.resize(img.size() - 100);
    dtest::write_plain(dir.file("train-images-idx3-ubyte"), img);
    dtest::write_plain(dir.file("train-labels-idx1-ubyte"), good.labels);
    expect_failure(ctx.ctx, dir, BRAID_ERR_IO, {dir.file("train-images-idx3-ubyte"), "truncated"});
  }
  SUBCASE("truncated inside the header") {
    TempDir dir;
    dtest::write_split(dir, good);
    dtest::write_gz(dir.file("train-labels-idx1-ubyte.gz"), {0, 0, 8});
    expect_failure(ctx.ctx, dir, BRAID_ERR_IO, {dir.file("train-labels-idx1-ubyte.gz"), "truncated"});
  }
  SUBCASE("trailing bytes after the data") {
    TempDir dir;
    dtest::write_split(dir, good);
    std::vector<uint8_t> lab = good.labels;
    lab.push_back(3);
    dtest::write_gz(dir.file("train-labels-idx1-ubyte.gz"), lab);
    expect_failure(ctx.ctx, dir, BRAID_ERR_IO, {dir.file("train-labels-idx1-ubyte.gz"), "trailing"});
  }
  SUBCASE("image and label counts differ") {
    TempDir dir;
    dtest::write_split(dir, dtest::synth(10, 28, 28, 9));
    expect_failure(ctx.ctx, dir, BRAID_ERR_IO,
                   {dir.file("train-images-idx3-ubyte.gz"), dir.file("train-labels-idx1-ubyte.gz"), "10 images",
                    "9 labels"});
  }
  SUBCASE("a label outside the 10 classes") {
    TempDir dir;
    std::vector<uint8_t> lb(10, 2);
    lb[7] = 10;
    dtest::write_split(dir, {good.images, dtest::idx_bytes({10}, lb)});
    expect_failure(ctx.ctx, dir, BRAID_ERR_IO, {dir.file("train-labels-idx1-ubyte.gz"), "label 7 is 10"});
  }
  SUBCASE("a header claiming gigabytes does not allocate them") {
    TempDir dir;
    dtest::write_split(dir, good);
    dtest::write_gz(dir.file("train-images-idx3-ubyte.gz"), dtest::idx_bytes({2000000, 28, 28}, px));
    expect_failure(ctx.ctx, dir, BRAID_ERR_IO, {dir.file("train-images-idx3-ubyte.gz"), "truncated"});
    dtest::write_gz(dir.file("train-images-idx3-ubyte.gz"), dtest::idx_bytes({0xffffffffu, 28, 28}, px));
    expect_failure(ctx.ctx, dir, BRAID_ERR_IO, {dir.file("train-images-idx3-ubyte.gz"), "claim more than"});
  }
  SUBCASE("a directory where a file belongs") {
    TempDir dir;
    dtest::write_split(dir, good);
    dtest::fs::remove(dir.file("train-labels-idx1-ubyte.gz"));
    dtest::fs::create_directory(dir.file("train-labels-idx1-ubyte.gz"));
    expect_failure(ctx.ctx, dir, BRAID_ERR_IO, {dir.file("train-labels-idx1-ubyte.gz"), "not a regular file"});
  }
}

}  // TEST_SUITE
