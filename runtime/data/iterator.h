// The iterator behind braid_batch_iterator. A background thread walks the epochs ahead of the caller
// and prepares up to `prefetch` batches in host buffers (gather the epoch's next indices, convert
// uint8 pixels to float32 / 255, labels to int32); next() takes the oldest prepared batch and hands
// it to braid_tensor_from_host, which places it on the device through the engine like any upload.
// With prefetch = 0 there is no thread and next() prepares the batch itself.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "braid.h"
#include "data/dataset.h"

namespace braid::data {

// One prepared mini-batch in host memory. Buffers are sized for a full batch and reused.
struct HostBatch {
  std::vector<float> images;
  std::vector<int32_t> labels;
  int64_t size = 0;  // examples in this batch (the last one may be smaller)
};

}  // namespace braid::data

struct braid_batch_iterator_t {
  std::atomic<int32_t> refs{1};

  braid_batch_iterator_t(braid::data::Dataset& ds, const braid_batch_iterator_options& options);
  ~braid_batch_iterator_t();  // stops and joins the prefetch thread, drops the dataset reference
  braid_batch_iterator_t(const braid_batch_iterator_t&) = delete;
  braid_batch_iterator_t& operator=(const braid_batch_iterator_t&) = delete;

  int64_t batches_per_epoch() const noexcept { return batches_; }
  // The next batch as two new tensors, or both NULL at the end of an epoch. Caller's thread only.
  void next(braid_tensor* images, braid_tensor* labels);

 private:
  void producer() noexcept;
  // Fills `out` with batch b of the epoch whose order is `order`.
  void fill(const std::vector<int64_t>& order, int64_t b, braid::data::HostBatch& out) const;
  std::vector<int64_t> order_of(uint64_t epoch) const;
  braid::data::HostBatch take_prepared();
  void give_back(braid::data::HostBatch&& b);

  braid::data::Dataset* ds_;  // one reference
  braid_batch_iterator_options opt_;
  int64_t parts_ = 1;      // num_parts, 0 read as 1
  int64_t part_size_ = 0;  // examples of this part per epoch (the same for every part)
  int64_t batches_ = 0;
  float scale_[256];  // pixel value -> float32 in [0, 1]

  // The caller's position: the batch next() hands out next.
  uint64_t epoch_ = 0;
  int64_t batch_ = 0;
  std::vector<int64_t> sync_order_;  // prefetch = 0: the current epoch's order
  braid::data::HostBatch sync_batch_;
  braid::data::HostBatch pending_;  // taken from the thread, not yet uploaded
  bool has_pending_ = false;

  // Shared with the prefetch thread, under mu_.
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<braid::data::HostBatch> ready_;  // prepared, in order
  std::vector<braid::data::HostBatch> free_;  // buffers to prepare into
  bool stop_ = false;
  braid_status error_ = BRAID_OK;  // the thread failed (out of memory): reported by every next()
  std::string error_message_;
  std::thread thread_;
};

namespace braid::data {
using BatchIterator = ::braid_batch_iterator_t;
// Where iterators live and how a stale handle is told apart (core/handle_pool.h).
using IteratorPool = HandlePool<BatchIterator>;
// Validates a handle from the application (NULL, released) without reading a released one.
BatchIterator& checked_iterator(braid_batch_iterator it, const char* what);
void release_iterator(BatchIterator* it) noexcept;
}  // namespace braid::data
