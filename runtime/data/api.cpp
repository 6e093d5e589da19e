// The C ABI of datasets and batch iterators (abi/braid.h, "data" section).
#include <algorithm>
#include <cstring>

#include "context/context.h"
#include "core/error.h"
#include "core/in_struct.h"
#include "data/dataset.h"
#include "data/iterator.h"

using namespace braid;
using namespace braid::data;

namespace {

// Copies an option struct honouring the caller's struct_size: an older caller's shorter struct gets
// the defaults for the fields it does not know.
template <class T>
T read_options(const T* in, const T& defaults) {
  T o = read_in_struct(in, defaults, "options");
  o.struct_size = sizeof o;
  return o;
}

}  // namespace

extern "C" {

BRAID_API braid_status braid_dataset_open(braid_context ctx, const braid_dataset_options* options, braid_dataset* out) {
  return guard("braid_dataset_open", [&] {
    require(out, "out");
    *out = nullptr;
    const ContextRef c_use = use_context(ctx, "ctx");
    Context& c = *c_use;
    const braid_dataset_options o = read_options(options, braid_dataset_options BRAID_DATASET_OPTIONS_INIT);
    *out = DatasetPool::instance().publish(open_dataset(c, o));  // owned through the handle's reference count
  });
}

BRAID_API braid_status braid_dataset_retain(braid_dataset ds) {
  return guard("braid_dataset_retain", [&] { checked_dataset(ds, "ds").refs.app_retain("ds"); });
}

BRAID_API braid_status braid_dataset_release(braid_dataset ds) {
  return guard("braid_dataset_release", [&] {
    Dataset& d = checked_dataset(ds, "ds");
    if (d.refs.app_release("ds")) (void)DatasetPool::instance().retire(&d);
  });
}

BRAID_API braid_status braid_dataset_size(braid_dataset ds, int64_t* count) {
  return guard("braid_dataset_size", [&] {
    const Dataset& d = checked_dataset(ds, "ds");
    require(count, "count");
    *count = d.count;
  });
}

BRAID_API braid_status braid_dataset_image_shape(braid_dataset ds, int32_t* ndim, int64_t* shape) {
  return guard("braid_dataset_image_shape", [&] {
    const Dataset& d = checked_dataset(ds, "ds");
    require(ndim, "ndim");
    require(shape, "shape");
    *ndim = 3;
    shape[0] = 1;
    shape[1] = d.rows;
    shape[2] = d.cols;
  });
}

BRAID_API braid_status braid_batch_iterator_create(braid_dataset ds, const braid_batch_iterator_options* options,
                                                   braid_batch_iterator* out) {
  return guard("braid_batch_iterator_create", [&] {
    require(out, "out");
    *out = nullptr;
    Dataset& d = checked_dataset(ds, "ds");
    const braid_batch_iterator_options o =
        read_options(options, braid_batch_iterator_options BRAID_BATCH_ITERATOR_OPTIONS_INIT);
    if (o.batch_size <= 0) fail(BRAID_ERR_INVALID_ARGUMENT, "options->batch_size ", o.batch_size, " must be > 0");
    if (o.prefetch < 0 || o.prefetch > 64)
      fail(BRAID_ERR_INVALID_ARGUMENT, "options->prefetch ", o.prefetch, " must be in [0, 64]");
    if (o.num_parts < 0) fail(BRAID_ERR_INVALID_ARGUMENT, "options->num_parts ", o.num_parts, " must be >= 0");
    if (o.part_index < 0 || o.part_index >= std::max(o.num_parts, 1))
      fail(BRAID_ERR_INVALID_ARGUMENT, "options->part_index ", o.part_index, " must be in [0, num_parts ",
           std::max(o.num_parts, 1), ")");
    const ContextRef ctx_use = use_context(d.ctx, "the dataset's context");
    d.ctx->device(o.device, "options->device");  // validates the index
    *out = IteratorPool::instance().publish(IteratorPool::instance().make(d, o));
  });
}

BRAID_API braid_status braid_batch_iterator_retain(braid_batch_iterator it) {
  return guard("braid_batch_iterator_retain", [&] { checked_iterator(it, "it").refs.fetch_add(1); });
}

BRAID_API braid_status braid_batch_iterator_release(braid_batch_iterator it) {
  return guard("braid_batch_iterator_release", [&] { release_iterator(&checked_iterator(it, "it")); });
}

BRAID_API braid_status braid_batch_iterator_next(braid_batch_iterator it, braid_tensor* images, braid_tensor* labels) {
  return guard("braid_batch_iterator_next", [&] {
    require(images, "images");
    require(labels, "labels");
    *images = *labels = nullptr;
    checked_iterator(it, "it").next(images, labels);
  });
}

BRAID_API braid_status braid_batch_iterator_batches(braid_batch_iterator it, int64_t* count) {
  return guard("braid_batch_iterator_batches", [&] {
    const BatchIterator& i = checked_iterator(it, "it");
    require(count, "count");
    *count = i.batches_per_epoch();
  });
}

}  // extern "C"
