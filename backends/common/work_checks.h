// The checks every plugin makes on a braid_work before queueing it, so that bad input from a host is a
// clear BRAID_ERR_INVALID_ARGUMENT with a reason, never a crash on a queue thread. The reasons are
// static strings, so they outlive the call whatever the plugin does with them.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

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
  if (dst != nullptr && !buffer_range_ok(dst, c.dst_offset, c.bytes))
    return "copy: destination range exceeds its buffer";
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

// The most calls one KERNELS submission may carry: far beyond any graph segment, small enough that a
// count read from garbage is refused rather than copied.
inline constexpr uint32_t kMaxKernelsPerWork = uint32_t{1} << 20;

// The size of a braid_work before ABI 1.3 appended num_kernels and kernels: what an older host passes.
inline constexpr uint32_t kWorkSizeBefore13 = offsetof(braid_work, num_kernels);

// nullptr when the work may be queued, else why not. Major 1 started with the 1.0 layouts, so a
// struct_size below the 1.0 braid_work is a host bug; a host of ABI 1.2 or older passes a braid_work
// without num_kernels and kernels, which is fine for the kinds it knows (those fields are never read
// for them), while KERNELS needs the whole 1.3 struct. A larger size is a newer host, and only the
// known prefix is read.
template <typename Buffer>
const char* check_work(const braid_work& w) {
  if (w.struct_size < kWorkSizeBefore13) return "work: struct_size too small";
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
    case BRAID_WORK_KERNELS:
      if (w.struct_size < sizeof(braid_work)) return "kernels work: struct_size too small for ABI 1.3";
      if (w.kernels == nullptr) return "kernels work without kernel calls";
      if (w.num_kernels == 0) return "kernels work with num_kernels 0";
      if (w.num_kernels > kMaxKernelsPerWork) return "kernels work: num_kernels exceeds 2^20";
      for (uint32_t i = 0; i < w.num_kernels; ++i) {
        if (w.kernels[i].struct_size < sizeof(braid_kernel_call)) return "kernels: a call's struct_size is too small";
        if (const char* bad = check_kernel(w.kernels[i])) return bad;
      }
      return nullptr;
    default: return "work: unknown kind";
  }
}

// A checked work copied as far as the host's struct_size covers it, the rest zeroed: a 1.2 host's
// braid_work ends before num_kernels, so copying the whole struct would read past it.
inline braid_work copy_work(const braid_work& w) noexcept {
  braid_work out{};
  std::memcpy(static_cast<void*>(&out), &w, w.struct_size < sizeof out ? w.struct_size : sizeof out);
  return out;
}

}  // namespace braid::plugin
