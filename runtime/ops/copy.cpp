#include "ops/copy.h"

#include <algorithm>

#include "core/dtype.h"
#include "core/trace_hook.h"
#include "ops/op_builder.h"
#include "plugin/backend.h"

namespace braid {

namespace {

bool is_16bit_float(braid_dtype d) { return d == BRAID_FLOAT16 || d == BRAID_BFLOAT16; }

// supports(COPY, dtype) names one dtype, and a cast has two. The plugin ABI's rule (docs/ABI.md,
// "Casts"): a backend casts between any two dtypes it supports COPY for, except the pairs its own
// documentation lists, which the host refuses here. The Vulkan backend's (docs/VULKAN.md) are
// float16/bfloat16 <-> int32/int64/uint8: its 16-bit storage shaders convert to and from float32 and
// float64 only. Refused at the call, or the cast would fail only when the result is read.
bool backend_casts(const Backend& backend, braid_dtype from, braid_dtype to) {
  if (backend.name == "vulkan" && (is_16bit_float(from) || is_16bit_float(to)))
    return dtype_is_floating(from) && dtype_is_floating(to);
  return true;
}

}  // namespace

bool casts_directly(const Device& dev, braid_dtype from, braid_dtype to) {
  return from == to || backend_casts(*dev.backend, from, to);
}

namespace {
// A cast needs a COPY kernel for both ends, and the pair itself (braid_cast and concat go through a
// float where the backend lacks the pair).
void require_cast(OpBuilder& op, braid_dtype from, braid_dtype to) {
  op.require_kernel(to);
  const Device& dev = op.device();
  if (!casts_directly(dev, from, to))
    fail(BRAID_ERR_UNSUPPORTED, op.name(), ": the ", dev.backend->name, " backend has no ", dtype_name(from), " -> ",
         dtype_name(to), " cast on ", dev.id, "; cast through float32");
}
}  // namespace

void push_copy_kernel(const char* name, Tensor& src, const braid_buffer_view& from, Tensor& dst,
                      const braid_buffer_view& to, Queue* queue) {
  OpBuilder op(name, BRAID_KOP_COPY);
  op.add_input_view(op.operand(&src, "x"), from);
  op.operand(&dst, "out");
  op.require_kernel(src.dtype);
  if (dst.dtype != src.dtype) require_cast(op, src.dtype, dst.dtype);
  op.add_overwritten_output(dst, to);
  if (queue)
    op.push(*queue);
  else
    op.push();
}

TensorRef bool_from_zero_one(Tensor& x) {
  TensorRef y = new_tensor(*x.ctx, x.device(), BRAID_BOOL, x.shape);
  push_copy_kernel("to_bool", x, x.view(), *y, y->view());
  return y;
}

braid_buffer_view flat_view(const Tensor& t, int64_t offset, int64_t count) noexcept {
  braid_buffer_view v = t.view();
  v.byte_offset += static_cast<uint64_t>(offset) * dtype_size(t.dtype);
  v.ndim = 1;
  v.shape[0] = count;
  v.strides[0] = 1;
  return v;
}

namespace {

// A device whose buffers are host memory, to stage copies through: the CPU backend's first, else any.
Device* staging_device(Context& ctx) {
  for (const auto& d : ctx.devices)
    if (d->props.host_visible && d->backend->name == "cpu") return d.get();
  for (const auto& d : ctx.devices)
    if (d->props.host_visible) return d.get();
  return nullptr;
}

constexpr uint64_t kStagingChunkBytes = uint64_t{8} << 20;

// Between two backends whose memories are both device-only (CUDA and Vulkan on one machine): through
// host memory, in chunks, double-buffered. Chunk i goes source -> staging buffer i % 2 -> destination;
// the engine orders the next use of a buffer after the copy out of it, so chunk i + 1 comes in while
// chunk i goes out, and memory for staging stays at two chunks.
void push_staged_copy(const char* name, Tensor& src, int64_t src_offset, Tensor& dst, int64_t dst_offset,
                      int64_t count) {
  Context& ctx = *dst.ctx;
  Device* via = staging_device(ctx);
  if (via == nullptr)
    fail(BRAID_ERR_UNSUPPORTED, name, " from ", src.device().id, " to ", dst.device().id,
         ": neither side is host memory and no host-memory device (cpu) is loaded to stage the copy through");
  const int64_t chunk = std::max<int64_t>(1, static_cast<int64_t>(kStagingChunkBytes / dtype_size(src.dtype)));
  const int64_t first = std::min(chunk, count);
  TensorRef buffers[2] = {new_tensor(ctx, *via, src.dtype, Shape::of(std::span<const int64_t>(&first, 1))),
                          TensorRef()};
  if (count > chunk) buffers[1] = new_tensor(ctx, *via, src.dtype, Shape::of(std::span<const int64_t>(&first, 1)));
  for (int64_t at = 0, i = 0; at < count; at += chunk, ++i) {
    const int64_t n = std::min(chunk, count - at);
    Tensor& b = *buffers[i % 2];
    push_range_copy(name, src, src_offset + at, b, 0, n);
    push_range_copy(name, b, 0, dst, dst_offset + at, n);
  }
}

}  // namespace

// Between two backends one side must be host memory (else the copy is staged through host memory): a host-visible
// source is read directly by the destination's queue; otherwise (a GPU source) the source's transfer queue writes
// straight into the host-visible destination.
void push_range_copy(const char* name, Tensor& src, int64_t src_offset, Tensor& dst, int64_t dst_offset, int64_t count,
                     Queue* queue) {
  if (count <= 0) return;
  Device &from = src.device(), &to = dst.device();
  if (&from != &to && (src.storage->recorded_only || dst.storage->recorded_only))  // no memory to copy
    fail(BRAID_ERR_INVALID_STATE, name,
         ": a value a hybrid function computes cannot be copied to another device while it is traced (a graph "
         "runs on one device)");
  if (&from == &to) {
    push_copy_kernel(name, src, flat_view(src, src_offset, count), dst, flat_view(dst, dst_offset, count), queue);
    return;
  }
  dst.storage->bump_version();  // a byte copy, not a kernel: OpBuilder does not count it
  Context& ctx = *dst.ctx;
  const uint64_t esize = dtype_size(src.dtype);
  const uint64_t src_at = src.start() + static_cast<uint64_t>(src_offset) * esize;
  const uint64_t dst_at = dst.start() + static_cast<uint64_t>(dst_offset) * esize;
  Device* runs_on = &to;
  void* src_host = nullptr;
  void* dst_host = nullptr;
  if (from.backend != to.backend) {
    if (auto* host = static_cast<std::byte*>(from.api->buffer_host_pointer(src.storage->block.buffer))) {
      src_host = host + src_at;
    } else if (auto* dhost = static_cast<std::byte*>(to.api->buffer_host_pointer(dst.storage->block.buffer))) {
      dst_host = dhost + dst_at;
      runs_on = &from;
    } else {
      push_staged_copy(name, src, src_offset, dst, dst_offset, count);
      return;
    }
  }
  auto node = ctx.engine->make_node(name, *runs_on);
  node->work.kind = BRAID_WORK_COPY;
  node->copy.bytes = static_cast<uint64_t>(count) * esize;
  if (dst_host) {
    node->copy.dst_host = dst_host;
  } else {
    node->copy.dst_buffer = dst.storage->block.buffer;
    node->copy.dst_offset = dst_at;
  }
  if (src_host) {
    node->copy.src_host = src_host;
  } else {
    node->copy.src_buffer = src.storage->block.buffer;
    node->copy.src_offset = src_at;
  }
  node->host_side = src_host || dst_host;
  Storage* s = src.storage.get();
  Storage* d = dst.storage.get();
  if (TraceHook* hook = t_trace_hook) hook->untraced_write(*d, s);
  ctx.engine->throttle(*runs_on);
  ctx.engine->push(std::move(node), {&s, 1}, {&d, 1}, BRAID_QUEUE_TRANSFER);
}

}  // namespace braid
