// Copies the other ops and the parallel layer build on: a strided copy kernel on one device, and a
// copy of a contiguous range of elements between any two devices (runtime/parallel's collectives
// are made of these and of in-place reductions over ranges).
#pragma once
#include <cstdint>

#include "braid_backend.h"
#include "tensor/tensor.h"

namespace braid {

struct Queue;

// Pushes a strided COPY kernel from view `from` of src into view `to` of dst (same device). dst is
// only written: a copy into a whole tensor (or into a fresh one, part by part) needs no old value.
// queue: where it runs (NULL: the device's compute queue).
// Whether dev's backend has a kernel for the cast from -> to itself (docs/ABI.md, "Casts").
bool casts_directly(const Device& dev, braid_dtype from, braid_dtype to);

void push_copy_kernel(const char* name, Tensor& src, const braid_buffer_view& from, Tensor& dst,
                      const braid_buffer_view& to, Queue* queue = nullptr);

// The bool tensor of x's values where x holds only 0 and 1 (a comparison's 1/0, a logical op's): one
// cast kernel into the bool's uint8 storage, exact for 0 and 1 in every dtype. A general cast to bool
// (nonzero is true) is braid_compare_scalar's x != 0.
TensorRef bool_from_zero_one(Tensor& x);

// A 1-D view of `count` elements of t starting at element `offset` (t is row-major contiguous).
braid_buffer_view flat_view(const Tensor& t, int64_t offset, int64_t count) noexcept;

// Copies `count` elements of src from element src_offset into dst from element dst_offset (same
// dtype; any two devices, the same one included). Between devices it is a byte copy on a transfer
// queue, ordered after src's writer wherever that runs; on one device a kernel on `queue` (NULL:
// the compute queue). Between two backends without host-visible memory on either side it is staged
// through a host-memory device in double-buffered chunks (BRAID_ERR_UNSUPPORTED if none is loaded).
void push_range_copy(const char* name, Tensor& src, int64_t src_offset, Tensor& dst, int64_t dst_offset, int64_t count,
                     Queue* queue = nullptr);

}  // namespace braid
