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
    if (cudaError_t e = cudaEventRecord(ev[b], q.stream()); e != cudaSuccess) return fail(e, "cudaEventRecord", message);
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

}  // namespace

braid_status run_copy(Queue& q, const braid_copy_desc& d, std::string& message) {
  // queue_submit checked the desc (backends/common/work_checks.h): one side each, ranges in bounds.
  const size_t n = static_cast<size_t>(d.bytes);
  if (n == 0) return BRAID_OK;
  const bool src_dev = d.src_buffer != nullptr, dst_dev = d.dst_buffer != nullptr;
  const char* src = src_dev ? static_cast<const char*>(d.src_buffer->ptr) + d.src_offset : static_cast<const char*>(d.src_host);
  char* dst = dst_dev ? static_cast<char*>(d.dst_buffer->ptr) + d.dst_offset : static_cast<char*>(d.dst_host);
  cudaError_t e = cudaSuccess;
  if (src_dev && dst_dev) {
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
