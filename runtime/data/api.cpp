// The C ABI of datasets and batch iterators (abi/braid.h, "data" section).
// Placeholder: declared so the API links; the implementation follows.
#include "core/error.h"

using namespace braid;

namespace {
[[noreturn]] void not_yet() { fail(BRAID_ERR_UNSUPPORTED, "not implemented yet"); }
}  // namespace

extern "C" {

BRAID_API braid_status braid_dataset_open(braid_context, const braid_dataset_options*, braid_dataset* out) {
  if (out) *out = nullptr;
  return guard("braid_dataset_open", [] { not_yet(); });
}
BRAID_API braid_status braid_dataset_retain(braid_dataset) { return guard("braid_dataset_retain", [] { not_yet(); }); }
BRAID_API braid_status braid_dataset_release(braid_dataset) {
  return guard("braid_dataset_release", [] { not_yet(); });
}
BRAID_API braid_status braid_dataset_size(braid_dataset, int64_t*) {
  return guard("braid_dataset_size", [] { not_yet(); });
}
BRAID_API braid_status braid_dataset_image_shape(braid_dataset, int32_t*, int64_t*) {
  return guard("braid_dataset_image_shape", [] { not_yet(); });
}
BRAID_API braid_status braid_batch_iterator_create(braid_dataset, const braid_batch_iterator_options*,
                                                   braid_batch_iterator* out) {
  if (out) *out = nullptr;
  return guard("braid_batch_iterator_create", [] { not_yet(); });
}
BRAID_API braid_status braid_batch_iterator_retain(braid_batch_iterator) {
  return guard("braid_batch_iterator_retain", [] { not_yet(); });
}
BRAID_API braid_status braid_batch_iterator_release(braid_batch_iterator) {
  return guard("braid_batch_iterator_release", [] { not_yet(); });
}
BRAID_API braid_status braid_batch_iterator_next(braid_batch_iterator, braid_tensor* images, braid_tensor* labels) {
  if (images) *images = nullptr;
  if (labels) *labels = nullptr;
  return guard("braid_batch_iterator_next", [] { not_yet(); });
}
BRAID_API braid_status braid_batch_iterator_batches(braid_batch_iterator, int64_t*) {
  return guard("braid_batch_iterator_batches", [] { not_yet(); });
}

}  // extern "C"
