// The tape: a recorded op (Node) keeps what its gradient needs, and each tensor that requires a
// gradient carries a Meta. The graph is held by the tensors: an output's Meta points to the node that
// wrote it, the node holds references to its inputs. Nothing points from a node to its outputs but
// weak references, so releasing the last handle of a result frees its part of the tape.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "braid_backend.h"
#include "tensor/recorder.h"
#include "tensor/tensor.h"

namespace braid {
using Context = ::braid_context_t;
}

namespace braid::autograd {

struct Meta;

struct Node {
  const char* name = "";                  // the op's name ("slice", "transpose"... share the COPY kernel)
  braid_kernel_op kop = BRAID_KOP_COUNT;  // BRAID_KOP_COUNT: reshape (no kernel)
  int64_t i[8] = {};
  double f[8] = {};
  std::vector<TensorRef> inputs;  // the handles the op read
  // The edges: each input's Meta when the op read it. A handle gets a new Meta when its value is
  // written whole again, so a gradient reaches the history of the value this op read, not a later one.
  std::vector<std::shared_ptr<Meta>> in_meta;
  // Bit k: input k's history was stale when read (written by an op autograd does not record after its
  // producers); backward refuses to pass a gradient into it.
  uint32_t stale_inputs = 0;
  std::vector<braid_buffer_view> in_views;    // as the kernel saw them (strided copies need them)
  std::vector<uint8_t> needs;                 // input k requires a gradient
  std::vector<std::weak_ptr<Meta>> out_meta;  // the outputs' Metas (weak: outputs own their node)
  std::vector<TensorRef> outputs;             // handles over the outputs' storages, without history
  std::vector<braid_buffer_view> out_views;
  // The storages' versions (Storage::version) when the op was recorded: backward refuses to run the
  // gradient when one it reads (saved_values) has changed since, as PyTorch does.
  std::array<uint32_t, BRAID_KERNEL_MAX_INPUTS> in_versions{};  // fixed: no allocation per recorded op
  std::array<uint32_t, BRAID_KERNEL_MAX_OUTPUTS> out_versions{};
  bool freed = false;  // a backward without retain_graph released the above
};

// One producer of a tensor: node output `index`. Concat writes one tensor with several copies, so a
// tensor may have several producers, each covering a part of it.
struct Producer {
  std::shared_ptr<Node> node;
  int index = 0;
};

struct Meta {
  braid_grad_req req = BRAID_GRAD_NULL;
  bool leaf = false;  // a gradient is attached (req != NULL)
  TensorRef grad;     // the leaf's gradient buffer
  // The buffer's version when an optimizer step last used it (or when it was attached): a Trainer
  // compares against it to tell whether anything wrote the gradient since (parallel/trainer.cpp), as
  // Gluon's fresh_grad flag, which backward sets and the update clears, whichever trainer it is.
  uint32_t grad_version_used = 0;
  std::vector<Producer> producers;
  // The storage version the producers account for: the last one's write, or a later write of a part
  // none of them wrote (record.cpp). A reader that sees another version reads a value the tape did not
  // make (a stale edge).
  uint32_t accounted = 0;
  bool requires_grad() const noexcept { return leaf || !producers.empty(); }
};

inline bool requires_grad(const Tensor& t) noexcept { return t.ag && t.ag->requires_grad(); }

// A reshape's node (record_reshape): a view, whose gradient needs no value, only the input's shape.
inline bool is_reshape(const Node& n) noexcept {
  return n.kop == BRAID_KOP_COUNT && std::string_view(n.name) == "reshape";
}

using PushedOp = braid::PushedOp;

// Records the op if the calling thread records and an operand requires a gradient.
void record(Context& ctx, const PushedOp& op);
// Records reshape (a view: no kernel, so no push).
void record_reshape(Context& ctx, Tensor& x, Tensor& y);
// t was written whole by something autograd does not record (copy_into, write_host): its value has no
// history from now on; ops recorded before keep theirs.
void forget_history(Context& ctx, Tensor& t);
// Whether t's value is no longer what its recorded history made (see Meta::accounted).
bool history_is_stale(const Tensor& t);
// Records a copy of x to another device (a byte copy, not a kernel): its gradient is dy copied back
// to x's device, so a model split across devices back-propagates across them.
void record_device_copy(Context& ctx, Tensor& x, Tensor& y);
// The recorders above, for the ops layer (tensor/recorder.h): installed in the context by whatever turns
// recording on or gives a tensor a gradient.
void install_recorder(Context& ctx) noexcept;

}  // namespace braid::autograd
