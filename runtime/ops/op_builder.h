// Builds one kernel op: validates operand handles and devices, allocates outputs, fills the kernel
// call, and pushes it to the engine with its read and write sets. Every op in ops/ goes through it,
// so validation, backpressure and dependency tracking happen the same way for all of them.
#pragma once
#include <array>
#include <memory>
#include <optional>

#include "context/context.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/shape.h"
#include "tensor/tensor.h"

namespace braid {

class OpBuilder {
 public:
  OpBuilder(const char* name, braid_kernel_op kop) : name_(name), kop_(kop) {}

  const char* name() const noexcept { return name_; }
  // For ops without tensor inputs (creation): the device they run on.
  void on_device(braid_context ctx, braid_device device);
  // A tensor operand: validated, on the op's device, read by the op. Returns the tensor.
  Tensor& input(braid_tensor t, const char* what);
  // A validated operand whose view the caller adds itself (broadcast, batched matmul...).
  Tensor& operand(braid_tensor t, const char* what);
  void add_input_view(Tensor& t, const braid_buffer_view& view);
  // An existing tensor the op overwrites in place (also read): its view becomes an output.
  void add_inplace_output(Tensor& t);
  // The same for a part of t (collectives reduce into ranges of a tensor).
  void add_inplace_output(Tensor& t, const braid_buffer_view& view);
  // An existing tensor the op overwrites entirely (not read): its view becomes an output.
  void add_overwritten_output(Tensor& t, const braid_buffer_view& view);
  // A tensor the kernel updates in place without it being one of the call's views (batch norm's
  // running statistics).
  void mark_written(Tensor& t) {
    add_write(t.storage.get());
    writes_existing_ = true;
  }
  // A new output tensor; the first allocation waits for backpressure.
  Tensor& output(braid_dtype dtype, const Shape& shape);

  braid_kernel_call& call() noexcept { return node_->call; }
  Context& context() noexcept { return *ctx_; }
  // Sets a random kernel's seed and draw (i[0], i[1]): the context generator's next draw. A trace
  // that only records (a hybrid function's first call) takes none: the graph's run draws for the
  // kernel when it runs it (graph/run.cpp), as the imperative call would have, once.
  void set_random_draw();
  Device& device() noexcept { return *device_; }
  // Fails with BRAID_ERR_UNSUPPORTED when the device's backend has no kernel for dtype.
  void require_kernel(braid_dtype dtype);
  void push(braid_queue_kind queue = BRAID_QUEUE_COMPUTE);
  // Pushes onto a given queue of the op's device (collectives: Device::comm).
  void push(Queue& queue);
  // Instead of pushing: the op as one part of a partitioned write (Engine::push_partitioned), with
  // the same backpressure and autograd hook as push(). Its outputs must be disjoint from the other
  // parts'.
  Engine::Part to_part(Queue& queue);
  // Hands output i to the application (after push).
  braid_tensor release_output(int i) noexcept { return outputs_[static_cast<size_t>(i)].release(); }

 private:
  void set_device(Context& ctx, Device& dev);
  void before_push();  // backpressure and autograd's hook
  void add_read(Storage* s);
  void add_write(Storage* s);

  const char* name_;
  braid_kernel_op kop_;
  Context* ctx_ = nullptr;
  // A creation op's context, held while the op is built (use_context). Declared before outputs_, so
  // an output not handed out is released before this reference is.
  std::optional<ContextRef> held_ctx_;
  Device* device_ = nullptr;
  std::shared_ptr<OpNode> node_;
  // Only [0, num_) of these arrays is ever read, so they are left uninitialised (zeroing them cost
  // more per tiny op than filling them).
  std::array<Storage*, OpNode::kMaxKeep> reads_, writes_;
  size_t num_reads_ = 0, num_writes_ = 0;
  std::array<TensorRef, BRAID_KERNEL_MAX_OUTPUTS> outputs_;
  // For autograd's hook in push(): the operands in kernel input order and every output.
  std::array<Tensor*, BRAID_KERNEL_MAX_INPUTS> operands_;
  std::array<Tensor*, BRAID_KERNEL_MAX_OUTPUTS> out_tensors_;
  int num_operands_ = 0;
  uint32_t overwritten_ = 0;
  bool inplace_ = false;
  bool writes_existing_ = false;  // an in-place, overwritten or marked output: push bumps the versions
  int num_new_outputs_ = 0;
  bool throttled_ = false;
};

// Throws BRAID_ERR_DTYPE unless dtype is float32 or float64.
void require_float(const Tensor& t, const char* op, const char* what);
// Throws BRAID_ERR_DTYPE unless a and b have the same dtype.
void require_same_dtype(const Tensor& a, const Tensor& b, const char* op);

}  // namespace braid
