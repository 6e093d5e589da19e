// Recording: OpBuilder::push hands every op here; reshape calls record_reshape.
#include <algorithm>

#include "autograd/tape.h"
#include "context/context.h"
#include "core/dtype.h"
#include "tensor/tensor.h"

namespace braid::autograd {
namespace {

// Ops whose result has no gradient with respect to their operands.
bool differentiable(const PushedOp& op) {
  switch (op.kop) {
    case BRAID_KOP_ARGMAX:
    case BRAID_KOP_FILL:
    case BRAID_KOP_ARANGE:
    case BRAID_KOP_RANDOM_UNIFORM:
    case BRAID_KOP_RANDOM_NORMAL: return false;
    case BRAID_KOP_BINARY:
    case BRAID_KOP_BINARY_SCALAR: return op.call->i[0] < BRAID_BINARY_EQUAL;  // comparisons are piecewise constant
    default: return op.kop < BRAID_KOP_CONV2D_BWD_DATA;  // backward ops are not differentiated again
  }
}

uint32_t version(const Tensor& t) { return t.storage->version.load(std::memory_order_relaxed); }

bool covers_whole(const Tensor& t, const braid_buffer_view& v) {
  if (v.byte_offset != t.storage->block.offset) return false;
  int64_t n = 1;
  for (int d = 0; d < v.ndim; ++d) n *= v.shape[d];
  return n == t.shape.numel();
}

// The version of a tensor's value its producers left: the last one's write (concat's parts are recorded
// in order). A reader that sees another version reads a value something outside the tape wrote.
uint32_t produced_version(const Meta& m) {
  uint32_t v = 0;
  for (const Producer& p : m.producers) v = std::max(v, p.node->out_versions[p.index]);
  return v;
}

// The tape edge of operand t as an op reads it now: its Meta, and whether that Meta's history is stale
// (an op autograd does not record wrote the value after its producers did, through this handle in part
// or through another handle over the same storage).
bool stale(const Tensor& t) {
  return t.ag && !t.ag->leaf && !t.ag->producers.empty() && version(t) != produced_version(*t.ag);
}

// A tensor written whole by something autograd does not record (copy_into, write_host, a copy from
// another device) holds a value without history from then on. It gets a fresh Meta rather than
// clearing its own: ops recorded before the write hold the old one (Node::in_meta), and their
// gradients still reach the history of the value they read. A leaf stays a leaf, with its gradient.
void drop_history(Tensor& t) {
  if (t.ag && !t.ag->leaf && !t.ag->producers.empty()) t.ag = std::make_shared<Meta>();
}

void forget_overwritten(const PushedOp& op) {
  for (size_t k = 0; k < op.outputs.size(); ++k) {
    Tensor* t = op.outputs[k];
    if ((op.overwritten >> k & 1u) && covers_whole(*t, op.call->outputs[k])) drop_history(*t);
  }
}

// Node input k: the operand's handle, the Meta it has now (the edge), and whether that is stale.
void add_input(Node& node, Tensor& t, const braid_buffer_view& view, size_t k) {
  t.refs.fetch_add(1, std::memory_order_relaxed);
  node.inputs.emplace_back(&t);
  node.in_meta.push_back(t.ag);
  node.in_views.push_back(view);
  if (k < node.in_versions.size()) node.in_versions[k] = version(t);
  const bool needs = requires_grad(t) && dtype_is_floating(t.dtype);
  node.needs.push_back(needs ? 1 : 0);
  if (needs && stale(t) && k < 32) node.stale_inputs |= 1u << k;
}

}  // namespace

void record(Context& ctx, const PushedOp& op) {
  const bool copy_into = op.kop == BRAID_KOP_COPY && std::string_view(op.name) == "copy_into";
  bool any = false;
  if (!op.inplace && !copy_into && ctx.recording.any() && ctx.recording.on())
    for (Tensor* t : op.operands) any = any || requires_grad(*t);
  if (!any || !differentiable(op)) {
    if (op.overwritten) forget_overwritten(op);
    return;
  }
  auto node = std::make_shared<Node>();
  node->name = op.name;
  node->kop = op.kop;
  std::copy(std::begin(op.call->i), std::end(op.call->i), node->i);
  std::copy(std::begin(op.call->f), std::end(op.call->f), node->f);
  node->inputs.reserve(op.operands.size());
  node->in_meta.reserve(op.operands.size());
  for (size_t k = 0; k < op.operands.size(); ++k) add_input(*node, *op.operands[k], op.call->inputs[k], k);
  for (size_t k = 0; k < op.outputs.size(); ++k) {
    Tensor* t = op.outputs[k];
    node->out_views.push_back(op.call->outputs[k]);
    if (k < node->out_versions.size())
      node->out_versions[k] = version(*t);  // after its own write (OpBuilder bumps first)
    node->outputs.push_back(view_tensor(*t, t->shape));
    if (!dtype_is_floating(t->dtype)) {
      node->out_meta.emplace_back();
      continue;
    }
    // A value written whole starts a new history; ops recorded before keep the old one (in_meta).
    const bool whole = !(op.overwritten >> k & 1u) || covers_whole(*t, op.call->outputs[k]);
    if (!t->ag || (whole && !t->ag->leaf && !t->ag->producers.empty())) t->ag = std::make_shared<Meta>();
    Meta& m = *t->ag;
    node->out_meta.push_back(t->ag);
    if (m.leaf) continue;  // a leaf written by a copy stays a leaf
    m.producers.push_back({node, static_cast<int>(k)});
  }
}

namespace {
// A node for an op that pushes no kernel through OpBuilder (reshape, device copies): one input x, one
// output y over x's values.
void record_unkerneled(Context& ctx, const char* name, Tensor& x, Tensor& y) {
  if (!ctx.recording.any() || !requires_grad(x) || !ctx.recording.on()) return;
  auto node = std::make_shared<Node>();
  node->name = name;
  add_input(*node, x, x.view(), 0);
  y.ag = std::make_shared<Meta>();
  node->out_meta.push_back(y.ag);
  node->outputs.push_back(view_tensor(y, y.shape));
  node->out_views.push_back(y.view());
  node->out_versions[0] = version(y);
  y.ag->producers.push_back({node, 0});
}
}  // namespace

void record_reshape(Context& ctx, Tensor& x, Tensor& y) { record_unkerneled(ctx, "reshape", x, y); }

void record_device_copy(Context& ctx, Tensor& x, Tensor& y) {
  if (dtype_is_floating(x.dtype)) record_unkerneled(ctx, "device_copy", x, y);
}

void forget_history(Context&, Tensor& t) { drop_history(t); }

void install_recorder(Context& ctx) noexcept {
  static constexpr OpRecorder kRecorder{&record, &record_reshape, &record_device_copy, &forget_history};
  ctx.recording.install(&kRecorder);
}

}  // namespace braid::autograd
