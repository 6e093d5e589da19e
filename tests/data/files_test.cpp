// Which files a dataset reads, and what a missing or damaged file gives: the right status and a
// message naming the file (and, when missing, the Debian package that installs it).
#include <doctest/doctest.h>

#include <sys/resource.h>
#include <zlib.h>

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
    if (had)
      setenv(name.c_str(), old.c_str(), 1);
    else
      unsetenv(name.c_str());
  }
};

// A gzip file holding `prefix` then `zeros` zero bytes, built without compressing gigabytes: one
// MiB of zeros is deflated once between two full flushes (so it references nothing before it) and
// that block is repeated; the trailer gets the real CRC-32 and length. zlib inflates it like any other.
std::vector<uint8_t> gzip_with_zeros(const std::vector<uint8_t>& prefix, uint64_t zeros) {
  constexpr uint64_t kMiB = 1 << 20;
  REQUIRE(zeros % kMiB == 0);
  z_stream z{};
  REQUIRE(deflateInit2(&z, 9, Z_DEFLATED, 16 + MAX_WBITS, 9, Z_DEFAULT_STRATEGY) == Z_OK);
  std::vector<uint8_t> out(1 << 20), block;
  auto run = [&](const uint8_t* in, size_t n, int flush) {
    std::vector<uint8_t> got;
    z.next_in = const_cast<Bytef*>(in);
    z.avail_in = static_cast<uInt>(n);
    do {
      z.next_out = out.data();
      z.avail_out = static_cast<uInt>(out.size());
      REQUIRE(deflate(&z, flush) != Z_STREAM_ERROR);
      got.insert(got.end(), out.data(), out.data() + (out.size() - z.avail_out));
    } while (z.avail_out == 0);
    return got;
  };
  std::vector<uint8_t> file = run(prefix.data(), prefix.size(), Z_FULL_FLUSH);
  const std::vector<uint8_t> mib(kMiB, 0);
  block = run(mib.data(), mib.size(), Z_FULL_FLUSH);
  for (uint64_t i = 0; i < zeros / kMiB; ++i) file.insert(file.end(), block.begin(), block.end());
  std::vector<uint8_t> end = run(nullptr, 0, Z_FINISH);  // final block + a trailer for prefix + 1 MiB
  deflateEnd(&z);
  REQUIRE(end.size() >= 8);
  end.resize(end.size() - 8);
  file.insert(file.end(), end.begin(), end.end());
  uLong crc = crc32(0, prefix.data(), static_cast<uInt>(prefix.size()));
  const uLong crc_mib = crc32(0, mib.data(), static_cast<uInt>(mib.size()));
  for (uint64_t i = 0; i < zeros / kMiB; ++i) crc = crc32_combine(crc, crc_mib, static_cast<z_off_t>(kMiB));
  const uint64_t isize = prefix.size() + zeros;
  for (int k = 0; k < 4; ++k) file.push_back(static_cast<uint8_t>(crc >> (8 * k)));
  for (int k = 0; k < 4; ++k) file.push_back(static_cast<uint8_t>(isize >> (8 * k)));
  return file;
}

// The process's peak resident memory so far, in bytes.
uint64_t peak_rss() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<uint64_t>(u.ru_maxrss) * 1024;
}

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
    if (st == BRAID_OK)
      CHECK(size_of(ds) == 60000);
    else
      CHECK(dtest::last_error().find("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz") !=
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
    expect_failure(
        ctx.ctx, dir, BRAID_ERR_IO,
        {dir.file("train-images-idx3-ubyte.gz"), dir.file("train-labels-idx1-ubyte.gz"), "10 images", "9 labels"});
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
  SUBCASE("trailing garbage after the gzip stream") {
    // Bytes after a valid gzip member used to be ignored (zlib's gzread skips them). Refused whether
    // or not the garbage happens to end like a valid trailer (the length check before inflating
    // passes then, and the end of the stream catches it).
    TempDir dir;
    dtest::write_split(dir, good);
    const std::string path = dir.file("train-labels-idx1-ubyte.gz");
    const std::vector<uint8_t> gz = dtest::read_file(path);
    std::vector<uint8_t> junk = gz;
    for (char c : std::string("garbage!")) junk.push_back(static_cast<uint8_t>(c));
    dtest::write_plain(path, junk);
    expect_failure(ctx.ctx, dir, BRAID_ERR_IO, {path});
    std::vector<uint8_t> sly = gz;
    for (char c : std::string("junk")) sly.push_back(static_cast<uint8_t>(c));
    sly.insert(sly.end(), gz.end() - 4, gz.end());  // ends with the real ISIZE
    dtest::write_plain(path, sly);
    expect_failure(ctx.ctx, dir, BRAID_ERR_IO, {path, "8 bytes of trailing data after the gzip stream"});
    std::vector<uint8_t> two = gz;  // a second gzip member: trailing data too
    two.insert(two.end(), gz.begin(), gz.end());
    dtest::write_plain(path, two);
    expect_failure(ctx.ctx, dir, BRAID_ERR_IO, {path});
  }
  SUBCASE("gzip bombs are refused from their headers, without inflating or allocating them") {
    TempDir dir;
    dtest::write_split(dir, good);
    const std::string path = dir.file("train-images-idx3-ubyte.gz");
    // A header claiming 2.7 million images (2.1 GB, under the 2 GiB limit) over a 1.5 GiB stream of
    // zeros (1.5 MB compressed): the gzip trailer's length gives the lie away before inflating.
    dtest::write_plain(path, gzip_with_zeros(dtest::idx_bytes({2700000, 28, 28}, {}), uint64_t{1536} << 20));
    uint64_t before = peak_rss();
    expect_failure(ctx.ctx, dir, BRAID_ERR_IO, {path, "truncated or damaged", "the gzip trailer's length field"});
    CHECK(peak_rss() - before < (uint64_t{256} << 20));
    // An honest 2.1 GB of images (each zero) against 10 labels: the counts disagree before either
    // file is inflated. n * 784 must be whole MiB for gzip_with_zeros: n a multiple of 2^16.
    const uint32_t n = 41 * 65536;  // 2686976 images, 2009 MiB
    dtest::write_plain(path, gzip_with_zeros(dtest::idx_bytes({n, 28, 28}, {}), uint64_t{n} * 784));
    before = peak_rss();
    expect_failure(ctx.ctx, dir, BRAID_ERR_IO, {path, "2686976 images", "10 labels"});
    CHECK(peak_rss() - before < (uint64_t{256} << 20));
  }
  SUBCASE("a directory where a file belongs") {
    TempDir dir;
    dtest::write_split(dir, good);
    dtest::fs::remove(dir.file("train-labels-idx1-ubyte.gz"));
    dtest::fs::create_directory(dir.file("train-labels-idx1-ubyte.gz"));
    expect_failure(ctx.ctx, dir, BRAID_ERR_IO, {dir.file("train-labels-idx1-ubyte.gz"), "not a regular file"});
  }
}

}  // TEST_SUITE("files")
