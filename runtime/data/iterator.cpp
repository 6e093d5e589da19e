#include "data/iterator.h"

#include <algorithm>
#include <memory>
#include <numeric>

#include "context/context.h"
#include "core/error.h"
#include "core/shape.h"
#include "data/shuffle.h"
#include "tensor/host_copy.h"
#include "tensor/tensor.h"

using namespace braid;
using namespace braid::data;

braid_batch_iterator_t::braid_batch_iterator_t(Dataset& ds, const braid_batch_iterator_options& options)
    : ds_(&ds), opt_(options), parts_(std::max(options.num_parts, 1)) {
  const int64_t n = ds.count, bs = opt_.batch_size;
  // Every part gets the same number of examples: the epoch cut to a multiple of the parts, or padded to
  // one by wrapping around (fill()), so every rank of a job takes the same number of steps.
  part_size_ = n / parts_ + (!opt_.drop_last && n % parts_ != 0 ? 1 : 0);
  // Not (m + bs - 1) / bs: that overflows for a batch size near INT64_MAX ("the whole dataset in one
  // batch"), which then gave zero batches.
  batches_ = part_size_ / bs + (!opt_.drop_last && part_size_ % bs != 0 ? 1 : 0);
  for (int v = 0; v < 256; ++v) scale_[v] = static_cast<float>(v) / 255.0f;
  ds.refs.hold();  // its own reference, not the application's
  if (opt_.prefetch > 0 && batches_ > 0) {
    free_.resize(static_cast<size_t>(opt_.prefetch));
    thread_ = std::thread([this] { producer(); });
  }
}

braid_batch_iterator_t::~braid_batch_iterator_t() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  release_dataset(ds_);
}

std::vector<int64_t> braid_batch_iterator_t::order_of(uint64_t epoch) const {
  if (opt_.shuffle) return epoch_permutation(ds_->count, opt_.seed, epoch);
  std::vector<int64_t> order(static_cast<size_t>(ds_->count));
  std::iota(order.begin(), order.end(), int64_t{0});
  return order;
}

void braid_batch_iterator_t::fill(const std::vector<int64_t>& order, int64_t b, HostBatch& out) const {
  const int64_t bs = opt_.batch_size;
  const int64_t first = b * bs;
  const int64_t size = std::min(bs, part_size_ - first);
  const int64_t pixels = ds_->image_size();
  // Sized for a full batch once; a smaller last batch uses a prefix. A batch never holds more than the
  // part, whatever batch_size says (INT64_MAX would overflow bs * pixels).
  const int64_t capacity = std::min(bs, part_size_);
  out.images.resize(static_cast<size_t>(capacity * pixels));
  out.labels.resize(static_cast<size_t>(capacity));
  out.size = size;
  for (int64_t k = 0; k < size; ++k) {
    // Position k of this part is position k * parts + part_index of the epoch's order; positions past
    // its end (the padding of the last round) wrap around to its start, as DistributedSampler pads.
    const int64_t position = ((first + k) * parts_ + opt_.part_index) % ds_->count;
    const int64_t idx = order[static_cast<size_t>(position)];
    const uint8_t* src = ds_->pixels.data() + idx * pixels;
    float* dst = out.images.data() + k * pixels;
    for (int64_t p = 0; p < pixels; ++p) dst[p] = scale_[src[p]];
    out.labels[static_cast<size_t>(k)] = ds_->labels[static_cast<size_t>(idx)];
  }
}

void braid_batch_iterator_t::producer() noexcept {
  try {
    for (uint64_t epoch = 0;; ++epoch) {
      const std::vector<int64_t> order = order_of(epoch);
      for (int64_t b = 0; b < batches_; ++b) {
        HostBatch buf;
        {
          std::unique_lock lock(mu_);
          cv_.wait(lock, [&] { return stop_ || !free_.empty(); });
          if (stop_) return;
          buf = std::move(free_.back());
          free_.pop_back();
        }
        fill(order, b, buf);  // outside the lock: this is the work that overlaps the caller's
        {
          std::lock_guard lock(mu_);
          ready_.push_back(std::move(buf));
        }
        cv_.notify_all();
      }
    }
  } catch (const std::bad_alloc&) {
    std::lock_guard lock(mu_);
    error_ = BRAID_ERR_OUT_OF_MEMORY;
    error_message_ = "the prefetch thread ran out of host memory";
  } catch (const std::exception& e) {
    std::lock_guard lock(mu_);
    error_ = BRAID_ERR_INTERNAL;
    error_message_ = cat("the prefetch thread failed: ", e.what());
  }
  cv_.notify_all();
}

HostBatch braid_batch_iterator_t::take_prepared() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return !ready_.empty() || error_ != BRAID_OK; });
  if (ready_.empty()) fail(error_, error_message_);
  HostBatch b = std::move(ready_.front());
  ready_.pop_front();
  return b;
}

void braid_batch_iterator_t::give_back(HostBatch&& b) {
  {
    std::lock_guard lock(mu_);
    free_.push_back(std::move(b));
  }
  cv_.notify_all();
}

namespace {
// Places a host array on the device as a new tensor (an upload through the engine).
TensorRef upload(Context& ctx, braid_device device, braid_dtype dtype, std::initializer_list<int64_t> shape,
                 const void* data) {
  const std::vector<int64_t> dims(shape);
  return tensor_from_host(ctx, ctx.device(device, "the iterator's device"), dtype, Shape::of(dims), data);
}
}  // namespace

void braid_batch_iterator_t::next(braid_tensor* images, braid_tensor* labels) {
  if (batch_ == batches_) {  // the end of the epoch: report it once, then start the next
    batch_ = 0;
    ++epoch_;
    sync_order_.clear();
    return;
  }
  HostBatch* b = &sync_batch_;
  if (thread_.joinable()) {
    // A batch whose upload failed stays pending and is retried, so no example is skipped.
    if (!has_pending_) {
      pending_ = take_prepared();
      has_pending_ = true;
    }
    b = &pending_;
  } else {
    if (sync_order_.empty()) sync_order_ = order_of(epoch_);
    fill(sync_order_, batch_, sync_batch_);
  }

  const int64_t n = b->size;
  TensorRef img = upload(*ds_->ctx, opt_.device, BRAID_FLOAT32, {n, 1, ds_->rows, ds_->cols}, b->images.data());
  TensorRef lab = upload(*ds_->ctx, opt_.device, BRAID_INT32, {n}, b->labels.data());
  if (has_pending_) {
    give_back(std::move(pending_));
    has_pending_ = false;
  }
  ++batch_;
  *images = img.release();
  *labels = lab.release();
}

namespace braid::data {

BatchIterator& checked_iterator(braid_batch_iterator it, const char* what) {
  return IteratorPool::instance().checked(it, what, "batch iterator");
}

void release_iterator(BatchIterator* it) noexcept {
  // The last reference takes the handle out of the live set and destroys the iterator (joins its thread).
  if (it->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) (void)IteratorPool::instance().retire(it);
}

}  // namespace braid::data
