// libFuzzer over the IDX reader, through braid_dataset_open as an application reaches it: the input
// becomes one of the two files of a split (images or labels, plain or gzip-named), the other file is
// a small valid one. A corrupt file must give BRAID_ERR_IO or BRAID_ERR_NOT_FOUND with a message,
// never a crash, a hang, or memory that grows with what a damaged header claims (-rss_limit_mb).
#include <braid.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

braid_context g_ctx = nullptr;
std::string g_dir;

void write_file(const std::string& path, const uint8_t* data, size_t size) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) std::abort();
  if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
}

// A valid plain IDX file: two 28x28 images, or two labels.
std::vector<uint8_t> valid(bool images) {
  std::vector<uint8_t> v = {0, 0, 8, static_cast<uint8_t>(images ? 3 : 1), 0, 0, 0, 2};
  if (images) v.insert(v.end(), {0, 0, 0, 28, 0, 0, 0, 28});
  v.resize(v.size() + (images ? 2 * 28 * 28 : 2), 3);
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  char tmpl[] = "/tmp/braid-fuzz-idx-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) std::abort();
  g_dir = tmpl;
  braid_context_options o = BRAID_CONTEXT_OPTIONS_INIT;
  o.backends = "cpu";
  if (braid_context_create(&o, &g_ctx) != BRAID_OK) std::abort();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool fuzz_images = (data[0] & 1) != 0, gzip_name = (data[0] & 2) != 0;
  const std::string images = g_dir + "/train-images-idx3-ubyte", labels = g_dir + "/train-labels-idx1-ubyte";
  for (const std::string& base : {images, labels}) {
    std::remove(base.c_str());
    std::remove((base + ".gz").c_str());
  }
  const std::string fuzzed = (fuzz_images ? images : labels) + (gzip_name ? ".gz" : "");
  write_file(fuzzed, data + 1, size - 1);
  const std::vector<uint8_t> other = valid(!fuzz_images);
  write_file(fuzz_images ? labels : images, other.data(), other.size());
  braid_dataset_options o = BRAID_DATASET_OPTIONS_INIT;
  o.name = "fashion-mnist";
  o.dir = g_dir.c_str();
  braid_dataset ds = nullptr;
  const braid_status st = braid_dataset_open(g_ctx, &o, &ds);
  if (st == BRAID_OK) {
    int64_t count = 0;
    if (braid_dataset_size(ds, &count) != BRAID_OK || count < 0) std::abort();
    braid_dataset_release(ds);
  } else if (st != BRAID_ERR_IO && st != BRAID_ERR_NOT_FOUND) {
    std::abort();  // a damaged file is an I/O error, nothing else
  }
  return 0;
}
