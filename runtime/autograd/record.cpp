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
    case BRAID_KOP_BINARY_SCALAR:  // comparisons and floor division are piecewise constant
      return op.call->i[0] < BRAID_BINARY_EQUAL || op.call->i[0] == BRAID_BINARY_MOD;
    case BRAID_KOP_WHERE:
    case BRAID_KOP_TAKE: return true;
    default: return op.kop < BRAID_KOP_CONV2D_BWD_DATA;  // backward ops are not differentiated again
  }
}

uint32_t version(const Tensor& t) { return t.storage->version.load(std::memory_order_relaxed); }

bool covers_whole(const Tensor& t, const braid_buffer_view& v) {
  if (v.byte_offset != t.start()) return false;
  int64_t n = 1;
  for (int d = 0; d < v.ndim; ++d) n *= v.shape[d];
  return n == t.shape.numel();
}

// The box [lo, lo + shape) of t's indices that view v of t's storage covers, when v steps through
// t's own row-major layout (a part of t, as concat's copies write); false when it cannot tell.
bool box_of(const Tensor& t, const braid_buffer_view& v, int64_t lo[BRAID_MAX_DIMS]) {
  const braid_buffer_view tv = t.view();
  const uint64_t esize = dtype_size(t.dtype);
  if (v.ndim != tv.ndim || v.byte_offset < tv.byte_offset || (v.byte_offset - tv.byte_offset) % esize != 0)
    return false;
  int64_t rel = static_cast<int64_t>((v.byte_offset - tv.byte_offset) / esize);
  for (int d = 0; d < v.ndim; ++d) {
    if (tv.strides[d] <= 0 || (v.shape[d] > 1 && v.strides[d] != tv.strides[d])) return false;
    lo[d] = rel / tv.strides[d];
    rel %= tv.strides[d];
    if (lo[d] + v.shape[d] > tv.shape[d]) return false;
  }
  return rel == 0;
}

// Whether views a and b of t's storage share no element (both parts of t's layout, apart on an axis).
bool disjoint(const Tensor& t, const braid_buffer_view& a, const braid_buffer_view& b) {
  int64_t la[BRAID_MAX_DIMS], lb[BRAID_MAX_DIMS];
  if (!box_of(t, a, la) || !box_of(t, b, lb)) return false;
  for (int d = 0; d < a.ndim; ++d)
    if (la[d] + a.shape[d] <= lb[d] || lb[d] + b.shape[d] <= la[d] || a.shape[d] == 0 || b.shape[d] == 0) return true;
  return false;
}

// Whether m's history is a reshape (or a chain of them) of a leaf, or of a leaf since detached
// (attach_grad NULL: no history of its own): the handle is then another name for that memory, and
// like the leaf it holds whatever was last written there (an optimizer's update of the leaf, a copy
// into the alias), never a stale value, as a view of a parameter in PyTorch.
bool aliases_leaf(const Meta& m) {
  const Meta* at = &m;
  while (at->producers.size() == 1) {
    const Node& n = *at->producers[0].node;
    if (!is_reshape(n) || n.in_meta.size() != 1 || !n.in_meta[0]) return false;
    at = n.in_meta[0].get();
    if (at->leaf || at->producers.empty()) return true;
  }
  return false;
}

// Whether a reader of t now reads the value t's history made: its storage has the version that history
// accounts for (Meta::accounted). Another version means something autograd does not record wrote it
// since, through this handle in part or through another handle over the same storage.
bool stale(const Tensor& t) {
  return t.ag && !t.ag->leaf && !t.ag->producers.empty() && version(t) != t.ag->accounted && !aliases_leaf(*t.ag);
}

void add_producer(Meta& m, const std::shared_ptr<Node>& node, int k) {
  m.producers.push_back({node, k});
  m.accounted = node->out_versions[static_cast<size_t>(k)];
}

// A tensor written whole by something autograd does not record (copy_into, write_host, a copy from
// another device) holds a value without history from then on. It gets a fresh Meta rather than
// clearing its own: ops recorded before the write hold the old one (Node::in_meta), and their
// gradients still reach the history of the value they read. A leaf stays a leaf, with its gradient.
void drop_history(Tensor& t) {
  if (t.ag && !t.ag->leaf && !t.ag->producers.empty() && !aliases_leaf(*t.ag)) t.ag = std::make_shared<Meta>();
}

// An op autograd does not record wrote output k into an existing tensor. Whole: a value without
// history. A part that no producer wrote (concat's part that needs no gradient, after one that does):
// the history still made everything it says, and the part, a constant, gets no gradient; the write is
// accounted for. A part some producer wrote stays unaccounted: readers see the history as stale.
void forget_overwritten(const PushedOp& op) {
  for (size_t k = 0; k < op.outputs.size(); ++k) {
    if (!(op.overwritten >> k & 1u)) continue;
    Tensor& t = *op.outputs[k];
    const braid_buffer_view& written = op.call->outputs[k];
    if (covers_whole(t, written)) {
      drop_history(t);
      continue;
    }
    if (!t.ag || t.ag->leaf || t.ag->producers.empty() || version(t) != t.ag->accounted + 1) continue;
    bool apart = true;
    for (const Producer& p : t.ag->producers)
      apart = apart && disjoint(t, written, p.node->out_views[static_cast<size_t>(p.index)]);
    if (apart) t.ag->accounted = version(t);
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
    if (!(op.overwritten >> k & 1u) || covers_whole(*t, op.call->outputs[k])) drop_history(*t);
    if (!t->ag) t->ag = std::make_shared<Meta>();
    Meta& m = *t->ag;
    node->out_meta.push_back(t->ag);
    if (m.leaf) continue;  // a leaf written by a copy stays a leaf
    add_producer(m, node, static_cast<int>(k));
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
  add_producer(*y.ag, node, 0);
}
}  // namespace

void record_reshape(Context& ctx, Tensor& x, Tensor& y) { record_unkerneled(ctx, "reshape", x, y); }

void record_device_copy(Context& ctx, Tensor& x, Tensor& y) {
  if (dtype_is_floating(x.dtype)) record_unkerneled(ctx, "device_copy", x, y);
}

void forget_history(Context&, Tensor& t) { drop_history(t); }

bool history_is_stale(const Tensor& t) { return stale(t); }

void install_recorder(Context& ctx) noexcept {
  static constexpr OpRecorder kRecorder{&record, &record_reshape, &record_device_copy, &forget_history};
  ctx.recording.install(&kRecorder);
}

}  // namespace braid::autograd
