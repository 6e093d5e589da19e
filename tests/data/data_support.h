// Helpers for the data tests: a temporary directory, IDX files written by hand (plain or gzip), a
// synthetic dataset whose images encode their own index, and RAII owners for the data handles.
#pragma once
#include <doctest/doctest.h>
#include <zlib.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "braid.h"
#include "runtime/support.h"

namespace dtest {

namespace fs = std::filesystem;

// A fresh directory under the system temp dir, removed with everything in it.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "braid-data-test-XXXXXX").string();
    REQUIRE(mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string str() const { return path.string(); }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

inline void put_be32(std::vector<uint8_t>& out, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(v >> s));
}

// The bytes of an unsigned-byte IDX file: magic (0, 0, 8, ndims), dims, payload.
inline std::vector<uint8_t> idx_bytes(const std::vector<uint32_t>& dims, const std::vector<uint8_t>& payload,
                                      uint8_t type = 0x08) {
  std::vector<uint8_t> out = {0, 0, type, static_cast<uint8_t>(dims.size())};
  for (uint32_t d : dims) put_be32(out, d);
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

inline void write_plain(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(f.good());
}

// gzip-compressed bytes (zlib's gz* writer, as gzip(1) would write them).
inline void write_gz(const std::string& path, const std::vector<uint8_t>& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  if (!bytes.empty()) REQUIRE(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) == int(bytes.size()));
  REQUIRE(gzclose(f) == Z_OK);
}

inline std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

// Example i of a synthetic dataset: pixel 0 and 1 hold i (little-endian), pixel p >= 2 holds
// (i * 7 + p) % 256, the label is i % 10. So a batch tells which examples it holds.
inline uint8_t synth_pixel(int64_t i, int64_t p) {
  if (p == 0) return static_cast<uint8_t>(i & 0xff);
  if (p == 1) return static_cast<uint8_t>((i >> 8) & 0xff);
  return static_cast<uint8_t>((i * 7 + p) % 256);
}
inline uint8_t synth_label(int64_t i) { return static_cast<uint8_t>(i % 10); }

struct Synth {
  std::vector<uint8_t> images;  // IDX bytes
  std::vector<uint8_t> labels;
};
inline Synth synth(uint32_t count, uint32_t rows = 28, uint32_t cols = 28, uint32_t label_count = 0) {
  if (label_count == 0) label_count = count;
  std::vector<uint8_t> px(size_t{count} * rows * cols), lb(label_count);
  for (uint32_t i = 0; i < count; ++i)
    for (uint32_t p = 0; p < rows * cols; ++p) px[size_t{i} * rows * cols + p] = synth_pixel(i, p);
  for (uint32_t i = 0; i < label_count; ++i) lb[i] = synth_label(i);
  return {idx_bytes({count, rows, cols}, px), idx_bytes({label_count}, lb)};
}

// Writes the train split (or t10k) of a synthetic dataset into dir, gzip or plain.
inline void write_split(const TempDir& dir, const Synth& s, bool gz = true, const std::string& prefix = "train") {
  auto put = gz ? write_gz : write_plain;
  const std::string ext = gz ? ".gz" : "";
  put(dir.file(prefix + "-images-idx3-ubyte" + ext), s.images);
  put(dir.file(prefix + "-labels-idx1-ubyte" + ext), s.labels);
}

struct Dataset {
  braid_dataset ds = nullptr;
  Dataset() = default;
  Dataset(const Dataset&) = delete;
  Dataset& operator=(const Dataset&) = delete;
  ~Dataset() {
    if (ds) braid_dataset_release(ds);
  }
  braid_dataset* out() { return &ds; }
};

struct Iterator {
  braid_batch_iterator it = nullptr;
  Iterator() = default;
  Iterator(const Iterator&) = delete;
  Iterator& operator=(const Iterator&) = delete;
  ~Iterator() {
    if (it) braid_batch_iterator_release(it);
  }
  braid_batch_iterator* out() { return &it; }
};

// Opens the split of dir; returns the status (the handle lands in ds on success).
inline braid_status open_dir(braid_context ctx, const std::string& dir, Dataset& ds,
                             braid_dataset_split split = BRAID_SPLIT_TRAIN) {
  braid_dataset_options o = BRAID_DATASET_OPTIONS_INIT;
  o.dir = dir.c_str();
  o.split = split;
  return braid_dataset_open(ctx, &o, ds.out());
}

// One batch copied to the host.
struct HostBatch {
  std::vector<int64_t> image_shape, label_shape;
  braid_dtype image_dtype{}, label_dtype{};
  std::vector<float> images;
  std::vector<int32_t> labels;
  bool end = false;
};

inline HostBatch next_batch(braid_batch_iterator it) {
  HostBatch b;
  braid_tensor img = nullptr, lab = nullptr;
  BRAID_CHECK_OK(braid_batch_iterator_next(it, &img, &lab));
  if (!img) {
    REQUIRE(lab == nullptr);
    b.end = true;
    return b;
  }
  REQUIRE(lab != nullptr);
  test::T ti(img), tl(lab);
  int32_t nd = 0;
  int64_t shape[BRAID_MAX_DIMS] = {};
  BRAID_CHECK_OK(braid_tensor_ndim(img, &nd));
  BRAID_CHECK_OK(braid_tensor_shape(img, shape));
  b.image_shape.assign(shape, shape + nd);
  BRAID_CHECK_OK(braid_tensor_ndim(lab, &nd));
  BRAID_CHECK_OK(braid_tensor_shape(lab, shape));
  b.label_shape.assign(shape, shape + nd);
  BRAID_CHECK_OK(braid_tensor_dtype(img, &b.image_dtype));
  BRAID_CHECK_OK(braid_tensor_dtype(lab, &b.label_dtype));
  int64_t n = 0;
  BRAID_CHECK_OK(braid_tensor_numel(img, &n));
  if (b.image_dtype == BRAID_FLOAT32) {
    b.images.resize(static_cast<size_t>(n));
    BRAID_CHECK_OK(braid_tensor_to_host(img, b.images.data(), b.images.size() * sizeof(float)));
  }
  BRAID_CHECK_OK(braid_tensor_numel(lab, &n));
  if (b.label_dtype == BRAID_INT32) {
    b.labels.resize(static_cast<size_t>(n));
    BRAID_CHECK_OK(braid_tensor_to_host(lab, b.labels.data(), b.labels.size() * sizeof(int32_t)));
  }
  return b;
}

inline std::string last_error() { return braid_last_error(); }

}  // namespace dtest
