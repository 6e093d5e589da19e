#include "copy.h"

#include <algorithm>
#include <cstring>

#include "buffer.h"
#include "queue.h"

namespace braid::cuda {
namespace {

bool is_pinned(const void* p) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return a.type == cudaMemoryTypeHost;
}

braid_status fail(cudaError_t e, const char* what, std::string& message) {
  cudaGetLastError();
  message = std::string(what) + ": " + cudaGetErrorString(e);
  return e == cudaErrorMemoryAllocation ? BRAID_ERR_OUT_OF_MEMORY : BRAID_ERR_DEVICE;
}

// Pageable host -> device: chunk k goes through staging buffer k % 2. Before refilling a buffer the CPU
// waits for the DMA that last read it (its event), so the memcpy of chunk k+1 overlaps the DMA of k.
braid_status upload(Queue& q, char* dst, const char* src, size_t n, std::string& message) {
  void* buf[2];
  cudaEvent_t ev[2];
  if (!q.staging(buf, ev)) return fail(cudaErrorMemoryAllocation, "pinned staging buffers", message);
  for (size_t off = 0, k = 0; off < n; off += Queue::kStageBytes, ++k) {
    const size_t len = std::min(Queue::kStageBytes, n - off);
    const int b = int(k % 2);
    if (cudaError_t e = cudaEventSynchronize(ev[b]); e != cudaSuccess) return fail(e, "staging wait", message);
    std::memcpy(buf[b], src + off, len);
    if (cudaError_t e = cudaMemcpyAsync(dst + off, buf[b], len, cudaMemcpyHostToDevice, q.stream()); e != cudaSuccess)
      return fail(e, "cudaMemcpyAsync", message);
    if (cudaError_t e = cudaEventRecord(ev[b], q.stream()); e != cudaSuccess)
      return fail(e, "cudaEventRecord", message);
  }
  return BRAID_OK;
}

// Device -> pageable host: the DMA of chunk k+1 runs while the CPU copies chunk k out of staging. The
// data must be in dst before the submission ends, so this thread waits for the last chunk.
braid_status download(Queue& q, char* dst, const char* src, size_t n, std::string& message) {
  void* buf[2];
  cudaEvent_t ev[2];
  if (!q.staging(buf, ev)) return fail(cudaErrorMemoryAllocation, "pinned staging buffers", message);
  const size_t chunks = (n + Queue::kStageBytes - 1) / Queue::kStageBytes;
  auto start = [&](size_t k) -> cudaError_t {
    const size_t off = k * Queue::kStageBytes, len = std::min(Queue::kStageBytes, n - off);
    cudaError_t e = cudaMemcpyAsync(buf[k % 2], src + off, len, cudaMemcpyDeviceToHost, q.stream());
    return e == cudaSuccess ? cudaEventRecord(ev[k % 2], q.stream()) : e;
  };
  if (chunks > 0) {
    if (cudaError_t e = start(0); e != cudaSuccess) return fail(e, "cudaMemcpyAsync", message);
  }
  for (size_t k = 0; k < chunks; ++k) {
    if (k + 1 < chunks) {
      if (cudaError_t e = start(k + 1); e != cudaSuccess) return fail(e, "cudaMemcpyAsync", message);
    }
    if (cudaError_t e = cudaEventSynchronize(ev[k % 2]); e != cudaSuccess) return fail(e, "staging wait", message);
    const size_t off = k * Queue::kStageBytes, len = std::min(Queue::kStageBytes, n - off);
    std::memcpy(dst + off, buf[k % 2], len);
  }
  return BRAID_OK;
}

// Source and destination ranges overlapping in one buffer. cudaMemcpyAsync is undefined for overlap
// (the copy engines and the driver's copy kernels move many pieces at once, in no given order), so
// this copies as memmove does: piece by piece in the order that never overwrites a byte before it was
// read (front to back when dst is below src, back to front when above), each piece through a
// temporary from the device's pool. The stream runs the copies one after another and frees the
// temporary after the last. If the pool cannot spare it, the pieces are no longer than the distance
// between src and dst, so that each piece's own ranges are disjoint and it is copied directly.
braid_status overlapping_copy(Queue& q, char* dst, const char* src, size_t n, std::string& message) {
  if (dst == src) return BRAID_OK;
  constexpr size_t kBounceBytes = size_t(64) << 20;  // bounds the temporary, not the copy
  const bool down = dst < src;
  const size_t distance = down ? size_t(src - dst) : size_t(dst - src);
  size_t piece = std::min(n, kBounceBytes);
  void* tmp = q.device().scratch_alloc(piece, q.stream());
  if (tmp == nullptr) piece = distance;
  cudaError_t e = cudaSuccess;
  for (size_t done = 0; done < n && e == cudaSuccess; done += piece) {
    const size_t len = std::min(piece, n - done), off = down ? done : n - done - len;
    if (tmp == nullptr) {
      e = cudaMemcpyAsync(dst + off, src + off, len, cudaMemcpyDeviceToDevice, q.stream());
    } else {
      e = cudaMemcpyAsync(tmp, src + off, len, cudaMemcpyDeviceToDevice, q.stream());
      if (e == cudaSuccess) e = cudaMemcpyAsync(dst + off, tmp, len, cudaMemcpyDeviceToDevice, q.stream());
    }
  }
  q.device().scratch_free(tmp, q.stream());
  return e == cudaSuccess ? BRAID_OK : fail(e, "overlapping device copy", message);
}

}  // namespace

braid_status run_copy(Queue& q, const braid_copy_desc& d, std::string& message) {
  // queue_submit checked the desc (backends/common/work_checks.h): one side each, ranges in bounds.
  const size_t n = static_cast<size_t>(d.bytes);
  if (n == 0) return BRAID_OK;
  const bool src_dev = d.src_buffer != nullptr, dst_dev = d.dst_buffer != nullptr;
  const char* src =
      src_dev ? static_cast<const char*>(d.src_buffer->ptr) + d.src_offset : static_cast<const char*>(d.src_host);
  char* dst = dst_dev ? static_cast<char*>(d.dst_buffer->ptr) + d.dst_offset : static_cast<char*>(d.dst_host);
  cudaError_t e = cudaSuccess;
  if (src_dev && dst_dev) {
    // Buffers are distinct allocations, so only ranges in one buffer can overlap.
    if (d.src_buffer == d.dst_buffer && d.src_offset < d.dst_offset + n && d.dst_offset < d.src_offset + n)
      return overlapping_copy(q, dst, src, n, message);
    if (d.src_buffer->device == d.dst_buffer->device) {
      e = cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, q.stream());
    } else {
      // Direct over NVLink/PCIe where peer access was enabled at open; without it the driver stages
      // the copy through host memory itself (still ordered on this stream).
      e = cudaMemcpyPeerAsync(dst, d.dst_buffer->device, src, d.src_buffer->device, n, q.stream());
    }
    return e == cudaSuccess ? BRAID_OK : fail(e, "device copy", message);
  }
  if (!src_dev && !dst_dev) {  // host to host: plain memcpy, once the stream's earlier work is done
    if ((e = cudaStreamSynchronize(q.stream())) != cudaSuccess) return fail(e, "cudaStreamSynchronize", message);
    std::memcpy(dst, src, n);
    return BRAID_OK;
  }
  if (dst_dev) {
    if (is_pinned(src)) {
      e = cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, q.stream());
      return e == cudaSuccess ? BRAID_OK : fail(e, "cudaMemcpyAsync", message);
    }
    return upload(q, dst, src, n, message);
  }
  if (is_pinned(dst)) {
    e = cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToHost, q.stream());
    return e == cudaSuccess ? BRAID_OK : fail(e, "cudaMemcpyAsync", message);
  }
  return download(q, dst, src, n, message);
}

}  // namespace braid::cuda
