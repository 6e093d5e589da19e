#include "ops/op_builder.h"

#include <algorithm>

#include "core/trace_hook.h"
#include "tensor/recorder.h"

namespace braid {

void OpBuilder::set_device(Context& ctx, Device& dev) {
  if (!device_) {
    ctx_ = &ctx;
    device_ = &dev;
    node_ = ctx.engine->make_node(name_, dev);
    node_->call.op = kop_;
    node_->work.kind = BRAID_WORK_KERNEL;
    return;
  }
  if (ctx_ != &ctx) fail(BRAID_ERR_INVALID_ARGUMENT, name_, ": operands belong to different contexts");
  if (device_ != &dev)
    fail(BRAID_ERR_DEVICE, name_, ": operands are on different devices (", device_->id, " and ", dev.id,
         "); copy one with braid_copy first");
}

void OpBuilder::on_device(braid_context ctx, braid_device device) {
  Context& c = *held_ctx_.emplace(use_context(ctx, "ctx"));
  set_device(c, c.device(device, name_));
}

void OpBuilder::add_read(Storage* s) {
  for (size_t i = 0; i < num_reads_; ++i)
    if (reads_[i] == s) return;
  reads_[num_reads_++] = s;
}

void OpBuilder::add_write(Storage* s) {
  for (size_t i = 0; i < num_writes_; ++i)
    if (writes_[i] == s) return;
  writes_[num_writes_++] = s;
}

Tensor& OpBuilder::operand(braid_tensor t, const char* what) {
  Tensor& x = checked_tensor(t, what);
  require_computed(x, name_);
  set_device(*x.ctx, x.device());
  return x;
}

Tensor& OpBuilder::input(braid_tensor t, const char* what) {
  Tensor& x = operand(t, what);
  auto& call = node_->call;
  if (call.num_inputs >= BRAID_KERNEL_MAX_INPUTS) fail(BRAID_ERR_INTERNAL, name_, ": too many inputs");
  x.write_view(call.inputs[call.num_inputs++]);
  operands_[static_cast<size_t>(num_operands_++)] = &x;
  add_read(x.storage.get());
  return x;
}

void OpBuilder::add_input_view(Tensor& t, const braid_buffer_view& view) {
  require_computed(t, name_);
  auto& call = node_->call;
  if (call.num_inputs >= BRAID_KERNEL_MAX_INPUTS) fail(BRAID_ERR_INTERNAL, name_, ": too many inputs");
  call.inputs[call.num_inputs++] = view;
  operands_[static_cast<size_t>(num_operands_++)] = &t;
  add_read(t.storage.get());
}

void OpBuilder::add_inplace_output(Tensor& t) { add_inplace_output(t, t.view()); }

void OpBuilder::add_inplace_output(Tensor& t, const braid_buffer_view& view) {
  auto& call = node_->call;
  if (call.num_outputs >= BRAID_KERNEL_MAX_OUTPUTS) fail(BRAID_ERR_INTERNAL, name_, ": too many outputs");
  out_tensors_[static_cast<size_t>(call.num_outputs)] = &t;
  call.outputs[call.num_outputs++] = view;
  inplace_ = true;
  writes_existing_ = true;
  add_read(t.storage.get());
  add_write(t.storage.get());
}

void OpBuilder::add_overwritten_output(Tensor& t, const braid_buffer_view& view) {
  auto& call = node_->call;
  if (call.num_outputs >= BRAID_KERNEL_MAX_OUTPUTS) fail(BRAID_ERR_INTERNAL, name_, ": too many outputs");
  out_tensors_[static_cast<size_t>(call.num_outputs)] = &t;
  overwritten_ |= 1u << call.num_outputs;
  writes_existing_ = true;
  call.outputs[call.num_outputs++] = view;
  add_write(t.storage.get());
}

Tensor& OpBuilder::output(braid_dtype dtype, const Shape& shape) {
  if (!device_) fail(BRAID_ERR_INTERNAL, name_, ": output before device");
  if (!throttled_) {
    ctx_->engine->throttle(*device_);
    throttled_ = true;
  }
  auto& call = node_->call;
  if (call.num_outputs >= BRAID_KERNEL_MAX_OUTPUTS) fail(BRAID_ERR_INTERNAL, name_, ": too many outputs");
  TensorRef ref = new_output_tensor(*ctx_, *device_, dtype, shape);
  Tensor& t = *ref;
  node_->out_bytes += t.storage->block.size;
  out_tensors_[static_cast<size_t>(call.num_outputs)] = &t;
  t.write_view(call.outputs[call.num_outputs++]);
  add_write(t.storage.get());
  outputs_[static_cast<size_t>(call.num_outputs - 1)] = std::move(ref);
  ++num_new_outputs_;
  return t;
}

void OpBuilder::require_kernel(braid_dtype dtype) {
  if (!device_->supports(kop_, dtype))
    fail(BRAID_ERR_UNSUPPORTED, name_, ": the ", device_->backend->name, " backend has no ", dtype_name(dtype),
         " kernel for this op on ", device_->id);
}

void OpBuilder::set_random_draw() {
  node_->call.i[0] = static_cast<int64_t>(ctx_->seed.load());
  node_->call.i[1] =
      static_cast<int64_t>(recording_without_running() ? ctx_->rng_draw.load() : ctx_->rng_draw.fetch_add(1));
}

void OpBuilder::push(braid_queue_kind queue) { push(device_->queue(queue)); }

void OpBuilder::push(Queue& queue) {
  before_push();
  // A trace that only records: the kernel is in the graph, which computes it when it runs. Its
  // outputs exist (their shapes and storages are the graph's) but are never written.
  if (recording_without_running()) {
    node_.reset();
    return;
  }
  ctx_->engine->push(std::move(node_), {reads_.data(), num_reads_}, {writes_.data(), num_writes_}, queue);
}

Engine::Part OpBuilder::to_part(Queue& queue) {
  before_push();
  // A part of a collective, across devices: never in a graph (one device), and not run while a
  // trace only records, since the other parts' kernels would read storages without memory.
  if (recording_without_running())
    fail(BRAID_ERR_INVALID_STATE, name_, ": a collective inside a hybrid function (a graph runs on one device)");
  Engine::Part part{std::move(node_), {}, {writes_.begin(), writes_.begin() + num_writes_}, &queue};
  for (size_t i = 0; i < num_reads_; ++i)
    if (std::find(part.writes.begin(), part.writes.end(), reads_[i]) == part.writes.end())
      part.reads.push_back(reads_[i]);
  return part;
}

void OpBuilder::before_push() {
  // The whole call is known only now: the backend may refuse it (plugin ABI 1.4 supports_call) before
  // autograd or a trace records it.
  if (!device_->supports_call(node_->call))
    fail(BRAID_ERR_UNSUPPORTED, name_, ": the ", device_->backend->name, " backend has no ",
         dtype_name(Device::call_dtype(node_->call)), " kernel for this op on ", device_->id);
  if (!throttled_) ctx_->engine->throttle(*device_);
  // A write into an existing storage changes a value autograd may have saved: its version counts it,
  // before the hook below records this op (which saves the versions its outputs have after it). The
  // storages of new outputs among the writes start at 0 and nothing saved them yet, so bumping them
  // too is harmless; an op with only new outputs (nearly all) skips the loop.
  if (writes_existing_)
    for (size_t i = 0; i < num_writes_; ++i) writes_[i]->bump_version();
  // The one autograd hook: every op is pushed here. mark_written (batch norm's running statistics)
  // is not an in-place update of a differentiable value.
  if (ctx_->recording.any() || overwritten_)
    if (const OpRecorder* recorder = ctx_->recording.recorder())
      recorder->op(*ctx_, {name_,
                           kop_,
                           &node_->call,
                           {operands_.data(), size_t(num_operands_)},
                           {out_tensors_.data(), size_t(node_->call.num_outputs)},
                           overwritten_,
                           inplace_});
  // Graph mode's hook (docs/GRAPH.md): the traced kernel, with every storage it writes.
  if (TraceHook* hook = t_trace_hook)
    hook->kernel({name_,
                  kop_,
                  &node_->call,
                  {operands_.data(), size_t(num_operands_)},
                  {out_tensors_.data(), size_t(node_->call.num_outputs)},
                  {writes_.data(), num_writes_}});
}

void require_float(const Tensor& t, const char* op, const char* what) {
  if (!dtype_is_float(t.dtype))
    fail(BRAID_ERR_DTYPE, op, ": ", what, " must be float32 or float64, not ", dtype_name(t.dtype));
}

void require_same_dtype(const Tensor& a, const Tensor& b, const char* op) {
  if (a.dtype != b.dtype)
    fail(BRAID_ERR_DTYPE, op, ": operands have different dtypes (", dtype_name(a.dtype), " and ", dtype_name(b.dtype),
         "); cast one with braid_cast");
}

}  // namespace braid
