// The checks every plugin makes on a braid_work before queueing it, so that bad input from a host is a
// clear BRAID_ERR_INVALID_ARGUMENT with a reason, never a crash on a queue thread. The reasons are
// static strings, so they outlive the call whatever the plugin does with them.
#pragma once
#include <cstdint>

#include "braid_backend.h"
#include "enum_value.h"
#include "kernel_call.h"

namespace braid::plugin {

// Buffer is the plugin's braid_backend_buffer_t (complete where this is instantiated), with a `size`
// in bytes. A template so that the header needs no plugin's buffer type.
template <typename Buffer>
bool buffer_range_ok(const Buffer* b, uint64_t offset, uint64_t bytes) {
  return offset <= b->size && bytes <= b->size - offset;
}

template <typename Buffer>
const char* check_copy(const braid_copy_desc& c) {
  const auto* src = static_cast<const Buffer*>(c.src_buffer);
  const auto* dst = static_cast<const Buffer*>(c.dst_buffer);
  // Each side names exactly one of a buffer and a host pointer; a zero-byte copy may name neither.
  if ((src != nullptr) == (c.src_host != nullptr) && !(c.bytes == 0 && src == nullptr))
    return "copy: exactly one of src_buffer and src_host must be set";
  if ((dst != nullptr) == (c.dst_host != nullptr) && !(c.bytes == 0 && dst == nullptr))
    return "copy: exactly one of dst_buffer and dst_host must be set";
  if (src != nullptr && !buffer_range_ok(src, c.src_offset, c.bytes)) return "copy: source range exceeds its buffer";
  if (dst != nullptr && !buffer_range_ok(dst, c.dst_offset, c.bytes)) return "copy: destination range exceeds its buffer";
  return nullptr;
}

inline const char* check_kernel(const braid_kernel_call& k) {
  if (!valid_op(k.op)) return "kernel: unknown op";
  if (k.num_inputs < 0 || k.num_inputs > BRAID_KERNEL_MAX_INPUTS) return "kernel: bad num_inputs";
  if (k.num_outputs < 0 || k.num_outputs > BRAID_KERNEL_MAX_OUTPUTS) return "kernel: bad num_outputs";
  for (int32_t i = 0; i < k.num_inputs; ++i) {
    if (k.inputs[i].buffer == nullptr) return "kernel: input without a buffer";
    if (!valid_dtype(k.inputs[i].dtype)) return "kernel: an input has an unknown dtype";
  }
  for (int32_t i = 0; i < k.num_outputs; ++i) {
    if (k.outputs[i].buffer == nullptr) return "kernel: output without a buffer";
    if (!valid_dtype(k.outputs[i].dtype)) return "kernel: an output has an unknown dtype";
  }
  return nullptr;
}

// nullptr when the work may be queued, else why not. Major 1 started with today's layouts, so a
// smaller struct_size is a host bug; a larger one is a newer host, and only the known prefix is read.
template <typename Buffer>
const char* check_work(const braid_work& w) {
  if (w.struct_size < sizeof(braid_work)) return "work: struct_size too small";
  if (w.num_waits > BRAID_MAX_WAITS) return "work: num_waits exceeds BRAID_MAX_WAITS";
  for (uint32_t i = 0; i < w.num_waits; ++i)
    if (w.waits[i] == nullptr) return "work: NULL wait semaphore";
  switch (enum_value(w.kind)) {
    case BRAID_WORK_KERNEL:
      if (w.kernel == nullptr) return "kernel work without a kernel call";
      if (w.kernel->struct_size < sizeof(braid_kernel_call)) return "kernel: struct_size too small";
      return check_kernel(*w.kernel);
    case BRAID_WORK_COPY:
      if (w.copy == nullptr) return "copy work without a copy desc";
      if (w.copy->struct_size < sizeof(braid_copy_desc)) return "copy: struct_size too small";
      return check_copy<Buffer>(*w.copy);
    case BRAID_WORK_MARKER: return nullptr;
    default: return "work: unknown kind";
  }
}

}  // namespace braid::plugin
