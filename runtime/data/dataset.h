// The dataset behind braid_dataset: one split of an IDX image/label pair, validated and held in host
// memory as the raw bytes (uint8 pixels, uint8 labels). Immutable after open, so any thread may read it.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "braid.h"
#include "core/handle_pool.h"

struct braid_context_t;

struct braid_dataset_t {
  // The application's references and its iterators' (core/handle_pool.h): a release beyond the
  // application's own is refused instead of freeing the dataset under an iterator.
  braid::SharedRefs refs;
  braid_context_t* ctx = nullptr;  // one reference, dropped with the dataset

  std::string name;        // "fashion-mnist"
  std::string image_path;  // the files it was read from (for messages)
  std::string label_path;
  int64_t count = 0;
  int32_t rows = 0, cols = 0;
  int32_t classes = 10;
  std::vector<uint8_t> pixels;  // count * rows * cols, row-major
  std::vector<uint8_t> labels;  // count, each < classes

  braid_dataset_t() = default;
  ~braid_dataset_t();
  braid_dataset_t(const braid_dataset_t&) = delete;
  braid_dataset_t& operator=(const braid_dataset_t&) = delete;

  int64_t image_size() const noexcept { return int64_t{rows} * cols; }
};

namespace braid::data {

using Dataset = ::braid_dataset_t;
// Where datasets live and how a stale handle is told apart (core/handle_pool.h).
using DatasetPool = HandlePool<Dataset>;

// The Debian package that installs a dataset's files ("" if there is none).
const char* debian_package(const std::string& name);

// Resolves the directory (options->dir, else $BRAID_DATA_DIR, else the package's), reads and
// validates both files of the split. Takes a reference to ctx. Not yet a live handle (publish it).
DatasetPool::Owned open_dataset(braid_context_t& ctx, const braid_dataset_options& options);

// Validates a handle from the application (NULL, released, or not a dataset) without reading a
// released one.
Dataset& checked_dataset(braid_dataset ds, const char* what);
// Drops one internal reference (an iterator's); the last one frees the dataset (and its context
// reference).
void release_dataset(Dataset* ds) noexcept;

}  // namespace braid::data
