#include "graph/run.h"

#include <algorithm>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>

#include "autograd/tape.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/trace_hook.h"
#include "engine/engine.h"
#include "graph/fuse.h"
#include "graph/passes.h"
#include "ops/call.h"

namespace braid::graph {
namespace {

// OpNode names must outlive the op (it may end after the graph is released): node names are few, so
// they are kept for the process's lifetime.
const char* interned(const std::string& name) {
  static std::mutex mu;
  static std::set<std::string>* names = new std::set<std::string>();  // never destroyed: ops may end late
  std::lock_guard lock(mu);
  return names->insert(name).first->c_str();
}

// The view's dtype, shape and strides; its buffer and offset are set by the caller.
void fill_shape(braid_buffer_view& v, const ViewRef& r) {
  v.buffer = nullptr;
  v.byte_offset = r.offset;
  v.dtype = r.dtype;
  v.ndim = r.ndim;
  for (int d = 0; d < r.ndim; ++d) {
    v.shape[d] = r.shape[d];
    v.strides[d] = r.strides[d];
  }
}

// The whole view, into storage s.
void fill_view(braid_buffer_view& v, const ViewRef& r, const Storage& s) {
  fill_shape(v, r);
  v.buffer = s.block.buffer;
  v.byte_offset = s.block.offset + r.offset;
}

void fill_call(braid_kernel_call& c, const Node& n) {
  c.struct_size = sizeof c;
  c.op = n.kop;
  c.num_inputs = static_cast<int32_t>(n.in.size());
  c.num_outputs = static_cast<int32_t>(n.out.size());
  std::copy(std::begin(n.i), std::end(n.i), c.i);
  std::copy(std::begin(n.f), std::end(n.f), c.f);
}

// A random kernel's seed and a new draw, as the imperative op takes one on each call.
void draw(braid_kernel_call& c, Context& ctx) {
  c.i[0] = static_cast<int64_t>(ctx.seed.load());
  c.i[1] = static_cast<int64_t>(ctx.rng_draw.fetch_add(1));
}

bool segments_supported(const Device& d) { return d.backend->abi_minor >= 3; }

void add_unique(std::vector<Storage*>& list, Storage* s) {
  if (std::find(list.begin(), list.end(), s) == list.end()) list.push_back(s);
}

void check_inputs(const Graph& g, std::span<Tensor* const> inputs) {
  if (inputs.size() != g.inputs.size())
    fail(BRAID_ERR_INVALID_ARGUMENT, "graph_run: the graph takes ", g.inputs.size(), " inputs, not ", inputs.size());
  for (size_t k = 0; k < inputs.size(); ++k) {
    const Tensor& t = *inputs[k];
    const Value& v = g.values[at(g.inputs[k])];
    if (t.ctx != g.ctx) fail(BRAID_ERR_INVALID_ARGUMENT, "graph_run: inputs[", k, "] belongs to another context");
    require_computed(t, "graph_run");
    if (t.window)  // bound by its storage, as the traced input was: a window's offset would be lost
      fail(BRAID_ERR_INVALID_ARGUMENT, "graph_run: inputs[", k,
           "] is a view into a larger tensor's memory (braid_view): pass a copy (braid_copy)");
    if (&t.device() != g.device)
      fail(BRAID_ERR_DEVICE, "graph_run: inputs[", k, "] is on ", t.device().id, ", the graph runs on ", g.device->id,
           "; copy it with braid_copy");
    if (t.dtype != v.dtype)  // a dtype the graph's kernels were not traced for: as an op refuses it
      fail(BRAID_ERR_DTYPE, "graph_run: inputs[", k, "] is ", dtype_name(t.dtype), ", the graph was traced for ",
           dtype_name(v.dtype), " (braid_hybrid keeps a graph per input signature)");
    if (!(t.shape == v.shape))
      fail(BRAID_ERR_SHAPE, "graph_run: inputs[", k, "] is ", dtype_name(t.dtype), " ", t.shape.str(),
           ", the graph was traced for ", dtype_name(v.dtype), " ", v.shape.str(),
           " (braid_hybrid keeps a graph per input signature)");
    for (size_t j = 0; j < k; ++j)
      if (inputs[j]->storage == t.storage)
        fail(BRAID_ERR_INVALID_ARGUMENT, "graph_run: inputs[", j, "] and inputs[", k, "] share a storage");
  }
}

// One engine op per node; every value a tensor of its own (run.h).
class Interpreter {
 public:
  Interpreter(Graph& g, bool record) : g_(g), ctx_(*g.ctx), record_(record), val_(g.values.size()) {
    for (size_t v = 0; v < g.values.size(); ++v)
      if (g.values[v].kind == ValueKind::param) val_[v] = op::retain(g.values[v].tensor.get());
  }

  void bind_input(size_t k, Tensor& t) { val_[at(g_.inputs[k])] = op::retain(&t); }

  void run(const Node& n) {
    Device& dev = *g_.device;
    auto node = ctx_.engine->make_node(interned(n.name), dev);
    braid_kernel_call& c = node->call;
    fill_call(c, n);
    if (n.is_random()) draw(c, ctx_);
    std::vector<Tensor*> operands, outputs;
    std::vector<Storage*> reads, writes;
    uint32_t overwritten = 0;
    bool inplace = false;
    for (size_t k = 0; k < n.in.size(); ++k) {
      const ViewRef& r = n.in[k];
      Tensor& t = handle(r, true);
      operands.push_back(&t);
      fill_view(c.inputs[k], r, *t.storage);
      add_unique(reads, t.storage.get());
    }
    ctx_.engine->throttle(dev);
    for (size_t k = 0; k < n.out.size(); ++k) {
      const ViewRef& r = n.out[k];
      const bool existed = val_[at(r.value)].get() != nullptr;
      if (!existed) {
        // The value's tensor takes the shape of the tensor the op wrote (matmul writes [2, 3] through a
        // batched [1, 2, 3] view; concat's copies write slices of it): the tape then records the
        // producers on the tensor that later readers view, not on a reshaped view of it, which no
        // reader would reach (the gradient through it was lost).
        const Value& v = g_.values[at(r.value)];
        const bool as_written = static_cast<uint64_t>(r.tshape.numel()) * dtype_size(v.dtype) == v.bytes;
        val_[at(r.value)] = new_tensor(ctx_, dev, v.dtype, as_written ? r.tshape : v.shape);
        node->out_bytes += v.bytes;
      }
      if (n.reads_value(r.value))
        inplace = true;
      else if (existed)
        overwritten |= 1u << k;
      Tensor& t = handle(r, false);
      outputs.push_back(&t);
      fill_view(c.outputs[k], r, *t.storage);
      add_unique(writes, t.storage.get());
    }
    for (int32_t v : n.also_writes) add_unique(writes, val_[at(v)]->storage.get());
    // As OpBuilder does: a write into an existing storage is a new version of it, counted before
    // autograd records this kernel (new values start at 0, so bumping them is harmless).
    if (inplace || overwritten || !n.also_writes.empty())
      for (Storage* s : writes) s->bump_version();
    if (record_ && (ctx_.recording.any() || overwritten))
      autograd::record(ctx_, {node->name, n.kop, &c, operands, outputs, overwritten, inplace});
    if (TraceHook* hook = t_trace_hook) hook->kernel({node->name, n.kop, &c, operands, outputs, writes});
    if (recording_without_running()) return;  // a trace that only records (core/trace_hook.h)
    ctx_.engine->push(std::move(node), reads, writes, dev.compute);
  }

  std::vector<TensorRef>& values() noexcept { return val_; }

  // The tensor of a value as an op saw it: the value's own tensor, or a reshaped handle over it
  // (recorded for autograd like braid_reshape). Each traced handle keeps one tensor for the run, made
  // when first used, so that a write through an alias changes that alias's history and leaves the
  // value's other handles stale, as imperative autograd sees them; a ref without a traced handle (a
  // loaded graph) gets a fresh view each time.
  Tensor& handle(const ViewRef& r, bool reading) {
    TensorRef& base = val_[at(r.value)];
    if (!base.get())
      fail(BRAID_ERR_INTERNAL, "graph: value ", r.value, reading ? " read" : " written", " before it has storage");
    if (r.handle >= 0) {
      auto it = by_handle_.find(r.handle);
      if (it != by_handle_.end() && it->second.value == r.value) return *it->second.tensor;
    }
    Tensor* t = base.get();
    const bool viewable = r.tshape.numel() == base->shape.numel() && !(r.tshape.ndim == 0 && base->shape.numel() != 1);
    // Without a traced handle the shape tells the value's own tensor; with one, an alias of the same
    // shape is a handle of its own too.
    const bool own = r.handle >= 0 ? r.handle == g_.values[at(r.value)].base_handle : true;
    if (viewable && !(own && base->shape == r.tshape)) {
      views_.push_back(view_tensor(*base, r.tshape));
      if (record_) autograd::record_reshape(ctx_, *base, *views_.back());
      t = views_.back().get();
    }
    if (r.handle >= 0) by_handle_[r.handle] = {r.value, t};
    return *t;
  }

 private:
  Graph& g_;
  Context& ctx_;
  bool record_;
  std::vector<TensorRef> val_;
  std::vector<TensorRef> views_;
  struct Bound {
    int32_t value;
    Tensor* tensor;  // held by val_ or views_
  };
  std::unordered_map<int32_t, Bound> by_handle_;
};

std::vector<TensorRef> run_interpreted(Graph& g, std::span<Tensor* const> inputs) {
  Interpreter it(g, true);
  for (size_t k = 0; k < inputs.size(); ++k) it.bind_input(k, *inputs[k]);
  for (const Node& n : g.nodes) it.run(n);
  std::vector<TensorRef> outs;
  for (const Output& o : g.outputs) {
    ViewRef r;
    r.value = o.value;
    r.tshape = o.shape;
    r.handle = o.handle;
    outs.push_back(op::retain(&it.handle(r, true)));
  }
  return outs;
}

bool wants_gradients(const Graph& g, std::span<Tensor* const> inputs) {
  Context& ctx = *g.ctx;
  if (!ctx.recording.any() || !ctx.recording.on()) return false;
  for (Tensor* t : inputs)
    if (autograd::requires_grad(*t)) return true;
  for (const Value& v : g.values)
    if (v.kind == ValueKind::param && autograd::requires_grad(*v.tensor)) return true;
  return false;
}

// Fills g.prepared: every call with its parameters' views final, and patches for the rest (run.h).
void prepare(Graph& g) {
  Prepared& p = g.prepared;
  p = Prepared{};
  std::vector<int32_t> output_of(g.values.size(), -1);
  for (size_t k = 0; k < g.outputs.size(); ++k) output_of[at(g.outputs[k].value)] = static_cast<int32_t>(k);
  const bool fuse = (g.passes_applied & BRAID_GRAPH_PASS_FUSE_ELEMENTWISE) != 0;
  const std::vector<FusedGroup> groups = fuse ? fusion_groups(g) : std::vector<FusedGroup>{};
  p.calls.reserve(g.nodes.size());
  auto place = [&](const ViewRef& r, braid_buffer_view& v, uint32_t call, bool output, size_t operand) {
    const Value& val = g.values[at(r.value)];
    if (val.kind == ValueKind::param) {
      Storage& s = *val.tensor->storage;
      fill_view(v, r, s);
      add_unique(output ? p.writes : p.reads, &s);
      return;
    }
    fill_shape(v, r);  // buffer and offset: the run's (patched)
    using S = Prepared::Source;
    const S source = val.kind == ValueKind::input ? S::input : output_of[at(r.value)] >= 0 ? S::output : S::slot;
    const int32_t index = source == S::input    ? val.input
                          : source == S::output ? output_of[at(r.value)]
                                                : g.plan.slot[at(r.value)];
    p.patches.push_back({call, output, static_cast<uint8_t>(operand), source, index, r.offset});
  };
  size_t next_group = 0;
  for (size_t i = 0, step = 1; i < g.nodes.size(); i += step) {
    const Node* node = &g.nodes[i];
    step = 1;
    if (next_group < groups.size() && groups[next_group].first == i) {  // a fused chain: one call
      node = &groups[next_group].node;
      step = groups[next_group++].count;
    }
    const Node& n = *node;
    const auto call = static_cast<uint32_t>(p.calls.size());
    braid_kernel_call& c = p.calls.emplace_back();
    fill_call(c, n);
    for (size_t k = 0; k < n.in.size(); ++k) place(n.in[k], c.inputs[k], call, false, k);
    for (size_t k = 0; k < n.out.size(); ++k) place(n.out[k], c.outputs[k], call, true, k);
    for (int32_t v : n.also_writes)
      if (g.values[at(v)].kind == ValueKind::param) add_unique(p.writes, g.values[at(v)].tensor->storage.get());
    if (n.is_random()) p.random_calls.push_back(call);
    for (const ViewRef& r : n.out)
      if (const Value& val = g.values[at(r.value)];
          val.kind == ValueKind::input &&
          std::find(p.written_inputs.begin(), p.written_inputs.end(), val.input) == p.written_inputs.end())
        p.written_inputs.push_back(val.input);
  }
  p.ready = true;
}

std::vector<TensorRef> run_segment(Graph& g, std::span<Tensor* const> inputs) {
  Context& ctx = *g.ctx;
  Device& dev = *g.device;
  if (!g.plan.planned) plan_memory(g, (g.passes_applied & BRAID_GRAPH_PASS_PLAN_MEMORY) != 0);
  if (!g.prepared.ready) prepare(g);
  const Prepared& p = g.prepared;
  // This run's outputs and workspace count towards the device's bytes in flight, and must fit under
  // its bound beside the runs already in flight: a run ahead of the device needs a workspace of its
  // own, and one queued run already hides the push (docs/ENGINE.md, "Backpressure").
  uint64_t bytes = 0;
  for (const Output& o : g.outputs) bytes += static_cast<uint64_t>(o.shape.numel()) * dtype_size(o.dtype);
  for (uint64_t size : g.plan.slot_bytes) bytes += size;
  ctx.engine->throttle(dev, bytes);
  // This run's outputs and workspace slots. The slots' handles are held until the run is pushed (a
  // released handle may be taken over by the next output of its size), then only the run holds them.
  std::vector<TensorRef> outs, slots;
  outs.reserve(g.outputs.size());
  for (const Output& o : g.outputs) outs.push_back(new_output_tensor(ctx, dev, o.dtype, o.shape));
  for (uint64_t size : g.plan.slot_bytes) {
    const auto n = static_cast<int64_t>(std::max<uint64_t>(size, 1));
    slots.push_back(new_output_tensor(ctx, dev, BRAID_UINT8, Shape::of(std::span<const int64_t>(&n, 1))));
  }
  if (p.calls.empty()) return outs;
  std::vector<braid_kernel_call> calls = p.calls;
  for (const Prepared::Patch& patch : p.patches) {
    braid_kernel_call& c = calls[patch.call];
    braid_buffer_view& v = patch.output ? c.outputs[patch.operand] : c.inputs[patch.operand];
    const Tensor& t = patch.source == Prepared::Source::input    ? *inputs[at(patch.index)]
                      : patch.source == Prepared::Source::output ? *outs[at(patch.index)]
                                                                 : *slots[at(patch.index)];
    v.buffer = t.storage->block.buffer;
    v.byte_offset = t.storage->block.offset + patch.offset;
  }
  for (uint32_t i : p.random_calls) draw(calls[i], ctx);
  std::vector<Storage*> reads = p.reads, writes = p.writes;
  for (Tensor* t : inputs) reads.push_back(t->storage.get());
  for (const TensorRef& t : outs) writes.push_back(t->storage.get());
  for (const TensorRef& t : slots) writes.push_back(t->storage.get());
  // Inputs an in-place kernel writes are writes too (the engine takes a storage in both lists).
  for (int32_t k : p.written_inputs) writes.push_back(inputs[at(k)]->storage.get());
  // The parameters and inputs the run writes in place (a training step's weights) get a new version,
  // as an imperative update would give them: a backward that saved their old values then refuses.
  for (Storage* s : p.writes) s->bump_version();
  for (int32_t k : p.written_inputs) inputs[at(k)]->storage->bump_version();
  if (segments_supported(dev)) {
    auto node = ctx.engine->make_node("graph", dev);
    node->work.kind = BRAID_WORK_KERNELS;
    node->calls = std::move(calls);
    node->out_bytes = bytes;  // the workspace counts towards the device's bytes in flight
    ctx.engine->push(std::move(node), reads, writes, dev.compute);
    return outs;
  }
  // A backend without segments (plugin ABI before 1.3, hence no fused calls either): one push per
  // kernel, each ordered over the whole run's storages.
  for (size_t i = 0; i < calls.size(); ++i) {
    auto node = ctx.engine->make_node(interned(g.nodes[i].name), dev);
    node->call = calls[i];
    node->out_bytes = i == 0 ? bytes : 0;
    ctx.engine->push(std::move(node), reads, writes, dev.compute);
  }
  return outs;
}

}  // namespace

std::vector<TensorRef> run(Graph& g, std::span<Tensor* const> inputs) {
  check_inputs(g, inputs);
  std::lock_guard lock(g.run_mu);
  if (t_trace_hook != nullptr || wants_gradients(g, inputs)) return run_interpreted(g, inputs);
  return run_segment(g, inputs);
}

std::vector<TensorRef> compute_values(Graph& g, std::span<const size_t> nodes) {
  TraceHook* hook = std::exchange(t_trace_hook, nullptr);
  struct Restore {
    TraceHook* h;
    ~Restore() { t_trace_hook = h; }
  } restore{hook};
  Interpreter it(g, false);
  for (size_t i : nodes) it.run(g.nodes[i]);
  return std::move(it.values());
}

int kernels_per_run(const Graph& g) {
  return g.prepared.ready ? static_cast<int>(g.prepared.calls.size()) : static_cast<int>(g.nodes.size());
}

int pushes_per_run(const Graph& g) {
  if (g.nodes.empty()) return 0;
  return segments_supported(*g.device) ? 1 : static_cast<int>(g.nodes.size());
}

}  // namespace braid::graph
