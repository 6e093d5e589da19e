#include "graph/trace.h"

#include <string>
#include <unordered_map>
#include <unordered_set>

#include "autograd/tape.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/trace_hook.h"
#include "ops/call.h"

namespace braid::graph {
namespace {

ViewRef view_ref(int32_t value, const Storage& s, const braid_buffer_view& v, const Tensor& t) {
  ViewRef r;
  r.value = value;
  r.offset = v.byte_offset - s.block.offset;
  r.dtype = v.dtype;
  r.ndim = v.ndim;
  for (int d = 0; d < v.ndim; ++d) {
    r.shape[d] = v.shape[d];
    r.strides[d] = v.strides[d];
  }
  r.tshape = t.shape;
  return r;
}

class Tracer final : public TraceHook {
 public:
  Tracer(Context& ctx, bool run_kernels) : ctx_(ctx), ctx_ref_(ctx), run_kernels_(run_kernels) {}
  // A thread that exits while it traces destroys its tracer with its thread-locals: the hook must
  // not point at it for the thread-locals destroyed after it.
  ~Tracer() override {
    if (t_trace_hook == this) t_trace_hook = nullptr;
  }

  void add_input(Tensor& t) {
    if (t.window)  // the graph binds an input's storage; a window's offset would not hold for the next one
      fail(
          BRAID_ERR_INVALID_ARGUMENT,
          "graph_trace_begin: an input is a view into a larger tensor's memory (braid_view): pass a copy (braid_copy)");
    if (seen(t.storage.get()) >= 0)
      fail(BRAID_ERR_INVALID_ARGUMENT, "graph_trace_begin: two inputs share a storage (pass each tensor once)");
    if (!device_) device_ = &t.device();
    if (&t.device() != device_)
      fail(BRAID_ERR_DEVICE, "graph_trace_begin: the inputs are on different devices (", device_->id, " and ",
           t.device().id, "); a graph runs on one device");
    Value v;
    v.kind = ValueKind::input;
    v.bytes = t.storage->bytes;
    v.dtype = t.dtype;
    v.shape = t.shape;
    v.input = static_cast<int32_t>(inputs_.size());
    const int32_t id = add_value(*t.storage, std::move(v));
    graph_values_[static_cast<size_t>(id)].base_handle = handle_of(t, id);
    inputs_.push_back(id);
  }

  void created(Storage& s) override {
    // Only storages of the traced context (an op on another is refused at trace_end anyway).
    if (!owns_device(s.device)) return;
    // A storage at the address of one seen before: that one is gone, and so is its entry.
    value_.erase(&s);
    created_[&s] = s.weak_from_this();
  }

  bool runs_kernels() const noexcept override { return run_kernels_; }

  void reshaped(Tensor& x, Tensor& y) override {
    handles_.erase(&y);  // a new handle, wherever an earlier one lived
    // A parameter reshaped before use: remember the handle it came from, the better root for autograd.
    if (x.ctx != &ctx_ || made_here(x.storage.get())) return;
    auto& slot = reshape_roots_[x.storage.get()];
    if (!slot.get()) slot = op::retain(&x);
  }

  void untraced_write(Storage& dst, Storage* src) override {
    if (src != nullptr) {
      const int32_t v = seen(src);
      if (v >= 0 && graph_values_[static_cast<size_t>(v)].kind != ValueKind::param)
        error("a copy of a traced value between devices (a graph runs on one device; copy its inputs first)");
    }
    const int32_t v = seen(&dst);
    if (v >= 0 && graph_values_[static_cast<size_t>(v)].kind != ValueKind::param)
      error("an upload or copy into a value the graph computes (only kernels are captured)");
    // A tensor that existed before the trace (a parameter, a gradient buffer) written from the host or
    // from another device: the graph would not repeat the write, so its runs would read whatever is
    // there then (a gradient buffer zeroed with write_host once, then accumulated into on every run).
    else if (!made_here(&dst))
      error(
          "an upload (write_host) or a copy from another device into a tensor made before the trace: only kernels "
          "are captured; write it with braid_copy_into from a tensor on the graph's device, or outside the trace");
    // Otherwise a constant made during tracing (from host data): captured as a parameter when read.
  }

  void kernel(const TracedKernel& k) override {
    if (!error_.empty()) return;
    if (k.operands.empty() && k.outputs.empty()) return;
    Tensor* any = !k.operands.empty() ? k.operands[0] : k.outputs[0];
    if (any->ctx != &ctx_) return error(cat("op '", k.name, "' on another context"));
    if (!device_) device_ = &any->device();
    for (Tensor* t : k.operands)
      if (&t->device() != device_)
        return error(cat("op '", k.name, "' on ", t->device().id, " (a graph runs on one device, ", device_->id, ")"));
    for (Tensor* t : k.outputs)
      if (&t->device() != device_)
        return error(cat("op '", k.name, "' on ", t->device().id, " (a graph runs on one device, ", device_->id, ")"));
    Node n;
    n.name = k.name;
    n.kop = k.kop;
    std::copy(std::begin(k.call->i), std::end(k.call->i), n.i);
    std::copy(std::begin(k.call->f), std::end(k.call->f), n.f);
    for (size_t j = 0; j < k.operands.size(); ++j) {
      Tensor& t = *k.operands[j];
      n.in.push_back(view_ref(read_value(t, k.call->inputs[j]), *t.storage, k.call->inputs[j], t));
      n.in.back().handle = handle_of(t, n.in.back().value);
    }
    for (size_t j = 0; j < k.outputs.size(); ++j) {
      Tensor& t = *k.outputs[j];
      n.out.push_back(view_ref(write_value(t, k.call->outputs[j]), *t.storage, k.call->outputs[j], t));
      n.out.back().handle = handle_of(t, n.out.back().value);
    }
    for (Storage* s : k.writes) {
      bool is_output = false;
      for (Tensor* t : k.outputs) is_output = is_output || t->storage.get() == s;
      if (is_output) continue;
      const int32_t v = seen(s);
      if (v < 0) return error(cat("op '", k.name, "' writes a storage it does not read"));
      n.also_writes.push_back(v);
    }
    nodes_.push_back(std::move(n));
  }

  void finish(std::span<Tensor* const> outputs, Graph& g) {
    if (!error_.empty()) fail(BRAID_ERR_INVALID_STATE, "graph_trace_end: tracing failed: ", error_);
    if (!device_) fail(BRAID_ERR_INVALID_ARGUMENT, "graph_trace_end: nothing was traced and there are no inputs");
    std::unordered_set<int32_t> taken;
    std::vector<Output> outs;
    for (size_t i = 0; i < outputs.size(); ++i) {
      Tensor& t = *outputs[i];
      if (t.ctx != &ctx_)
        fail(BRAID_ERR_INVALID_ARGUMENT, "graph_trace_end: outputs[", i, "] belongs to another context");
      if (&t.device() != device_)
        fail(BRAID_ERR_DEVICE, "graph_trace_end: outputs[", i, "] is on ", t.device().id, ", the graph on ",
             device_->id);
      int32_t v = seen(t.storage.get());
      const bool computed = v >= 0 && graph_values_[static_cast<size_t>(v)].kind == ValueKind::internal;
      int32_t handle = -1;                          // a copy made here is its value's own tensor
      if (!computed || taken.count(v) || t.window)  // a window of a value: its elements copied out
        v = copy_of(t, v);
      else
        handle = handle_of(t, v);
      taken.insert(v);
      outs.push_back({v, t.dtype, t.shape, handle});
    }
    g.device = device_;
    g.values = std::move(graph_values_);
    g.nodes = std::move(nodes_);
    g.inputs = std::move(inputs_);
    g.outputs = std::move(outs);
    int32_t params = 0;
    for (Value& v : g.values)
      if (v.kind == ValueKind::param) v.name = cat("param", params++);
  }

  Context& ctx() noexcept { return ctx_; }

 private:
  // One context reference for the trace's lifetime: the parameters' handles it holds go back to this
  // context when it ends, so the application releasing its last reference meanwhile (then aborting,
  // or its thread exiting) must not destroy the context first. Released after every other member
  // (declared first), as Graph releases its context after its values.

  bool owns_device(const Device* d) const noexcept {
    for (const auto& mine : ctx_.devices)
      if (mine.get() == d) return true;
    return false;
  }

  // The trace holds no storage: one the application releases is freed as it would be untraced, and
  // its address may then be reused. Entries are therefore checked against a weak reference: an
  // expired one belongs to a storage that is gone (a live storage cannot share its address).
  struct Seen {
    std::weak_ptr<Storage> storage;
    int32_t value = -1;
  };

  // The value of a live storage seen before, else -1.
  int32_t seen(Storage* s) {
    auto it = value_.find(s);
    if (it == value_.end()) return -1;
    if (it->second.storage.expired()) {
      value_.erase(it);
      return -1;
    }
    return it->second.value;
  }

  // Whether a live storage was created during the trace.
  bool made_here(Storage* s) {
    auto it = created_.find(s);
    if (it == created_.end()) return false;
    if (it->second.expired()) {
      created_.erase(it);
      return false;
    }
    return true;
  }

  int32_t add_value(Storage& s, Value v) {
    const auto id = static_cast<int32_t>(graph_values_.size());
    graph_values_.push_back(std::move(v));
    value_[&s] = {s.weak_from_this(), id};
    return id;
  }

  static void describe(Value& v, const Tensor& t, const braid_buffer_view& view) {
    v.bytes = t.storage->bytes;
    // The tensor's dtype where the view is its storage type (a bool seen as uint8), so that an
    // interpreted run makes the value a bool again; else what the view reads.
    v.dtype = kernel_dtype(t.dtype) == view.dtype ? t.dtype : view.dtype;
    ViewRef probe = view_ref(0, *t.storage, view, t);
    if (probe.covers_whole(v.bytes)) {
      v.shape = Shape::of(std::span<const int64_t>(view.shape, static_cast<size_t>(view.ndim)));
    } else {
      const int64_t n = static_cast<int64_t>(v.bytes / dtype_size(view.dtype));
      v.shape = Shape::of(std::span<const int64_t>(&n, 1));
    }
  }

  // A storage read: a value already seen, else one that existed before (or was filled from the host
  // during tracing): a parameter.
  int32_t read_value(Tensor& t, const braid_buffer_view& view) {
    Storage* s = t.storage.get();
    if (const int32_t seen_before = seen(s); seen_before >= 0) return seen_before;
    if (t.window) refuse_window_param();
    Value v;
    v.kind = ValueKind::param;
    describe(v, t, view);
    v.tensor = root_for(t);
    return with_base(add_value(*s, std::move(v)), t);
  }

  // A storage written: a value already seen, a new one made during tracing, or a parameter.
  int32_t write_value(Tensor& t, const braid_buffer_view& view) {
    Storage* s = t.storage.get();
    if (const int32_t seen_before = seen(s); seen_before >= 0) return seen_before;
    Value v;
    describe(v, t, view);
    if (made_here(s)) {
      v.kind = ValueKind::internal;
    } else {
      if (t.window) refuse_window_param();
      v.kind = ValueKind::param;
      v.tensor = root_for(t);
    }
    return with_base(add_value(*s, std::move(v)), t);
  }

  // The number of handle t over value v: the same for as long as the handle lives (an address seen
  // again with another value, or made anew by a reshape, is another handle).
  int32_t handle_of(Tensor& t, int32_t v) {
    auto [it, added] = handles_.try_emplace(&t, Handle{next_handle_, v});
    if (!added && it->second.value != v) it->second = Handle{next_handle_, v};
    if (it->second.id == next_handle_) ++next_handle_;
    return it->second.id;
  }

  // A new value's own tensor in an interpreted run: a parameter's root, else the handle that
  // brought the value in.
  int32_t with_base(int32_t v, Tensor& t) {
    Value& value = graph_values_[static_cast<size_t>(v)];
    value.base_handle = handle_of(value.tensor.get() ? *value.tensor : t, v);
    return v;
  }

  // The handle a parameter is known by: a leaf (whose gradient autograd fills) when there is one.
  TensorRef root_for(Tensor& t) {
    if (!(t.ag && t.ag->leaf)) {
      auto it = reshape_roots_.find(t.storage.get());
      if (it != reshape_roots_.end()) return op::retain(it->second.get());
    }
    return op::retain(&t);
  }

  // An output that is an input, a parameter or another output: the graph copies it into a value of
  // its own, as the function returned a separate tensor.
  // A new internal value with t's bytes, dtype and shape, for a node the graph adds to make an output.
  int32_t output_value(const Tensor& t) {
    Value nv;
    nv.kind = ValueKind::internal;
    nv.bytes = t.bytes();  // t's own elements: a window's, not its whole storage's
    nv.dtype = t.dtype;
    nv.shape = t.shape;
    graph_values_.push_back(std::move(nv));
    return static_cast<int32_t>(graph_values_.size() - 1);
  }

  int32_t copy_of(Tensor& t, int32_t v) {
    // An empty result of a traced op that needed no kernel (a concat of empty parts, a copy of an
    // empty tensor): the graph makes it with an empty fill, as there is nothing to compute.
    if (v < 0 && t.shape.numel() == 0 && made_here(t.storage.get())) return empty_value(t);
    if (v < 0) fail(BRAID_ERR_INVALID_ARGUMENT, "graph_trace_end: an output was not computed by the traced ops");
    const int32_t id = output_value(t);
    Node n;
    n.name = "copy";
    n.kop = BRAID_KOP_COPY;
    ViewRef in = view_ref(v, *t.storage, t.view(), t);
    ViewRef out = in;
    out.value = id;
    out.offset = 0;  // the new value holds only t's elements (in starts at a window's offset)
    n.in.push_back(in);
    n.out.push_back(out);
    nodes_.push_back(std::move(n));
    return id;
  }

  int32_t empty_value(Tensor& t) {
    const int32_t id = output_value(t);
    Node n;
    n.name = "full";
    n.kop = BRAID_KOP_FILL;
    n.out.push_back(view_ref(id, *t.storage, t.view(), t));
    nodes_.push_back(std::move(n));
    return id;
  }

  void error(std::string what) {
    if (error_.empty()) error_ = std::move(what);
  }

  // A parameter is a whole storage, exported and loaded as one: a window of one (braid_view) made before
  // the trace cannot stand for it.
  void refuse_window_param() {
    error(
        "a view (braid_view) made before the trace is used in it: a graph's parameters are whole tensors; use a "
        "copy, or make the view inside the traced function (braid_slice)");
  }

  Context& ctx_;
  ContextRef ctx_ref_;
  bool run_kernels_;
  Device* device_ = nullptr;
  std::unordered_map<Storage*, Seen> value_;
  std::unordered_map<Storage*, std::weak_ptr<Storage>> created_;
  std::unordered_map<Storage*, TensorRef> reshape_roots_;
  struct Handle {
    int32_t id = -1;
    int32_t value = -1;
  };
  std::unordered_map<const Tensor*, Handle> handles_;
  int32_t next_handle_ = 0;
  std::vector<Value> graph_values_;
  std::vector<Node> nodes_;
  std::vector<int32_t> inputs_;
  std::string error_;
};

thread_local std::unique_ptr<Tracer> t_tracer;

}  // namespace

bool tracing() noexcept { return t_tracer != nullptr; }

void trace_begin(Context& ctx, std::span<Tensor* const> inputs, bool run_kernels) {
  if (t_tracer) fail(BRAID_ERR_INVALID_STATE, "graph_trace_begin: this thread already traces (traces do not nest)");
  auto tracer = std::make_unique<Tracer>(ctx, run_kernels);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i]->ctx != &ctx)
      fail(BRAID_ERR_INVALID_ARGUMENT, "graph_trace_begin: inputs[", i, "] belongs to another context");
    tracer->add_input(*inputs[i]);
  }
  t_tracer = std::move(tracer);
  t_trace_hook = t_tracer.get();
}

void trace_end(Context& ctx, std::span<Tensor* const> outputs, Graph& g) {
  if (!t_tracer)
    fail(BRAID_ERR_INVALID_STATE, "graph_trace_end: this thread does not trace (call braid_graph_trace_begin)");
  if (&t_tracer->ctx() != &ctx)
    fail(BRAID_ERR_INVALID_ARGUMENT, "graph_trace_end: the trace was begun on another context");
  std::unique_ptr<Tracer> tracer = std::move(t_tracer);
  t_trace_hook = nullptr;
  tracer->finish(outputs, g);
}

void trace_abandon() noexcept {
  t_trace_hook = nullptr;
  t_tracer.reset();
}

}  // namespace braid::graph
