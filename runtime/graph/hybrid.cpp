// The hybrid functions of abi/braid.h (braid_hybrid_*): a function run imperatively on its first call
// with a given input signature, traced into a graph, and that graph run on later calls (GRAPH.md).
#include <algorithm>
#include <atomic>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "braid.h"
#include "core/error.h"
#include "core/handle_pool.h"
#include "graph/graph.h"
#include "graph/handles.h"
#include "graph/run.h"
#include "graph/trace.h"
#include "ops/amp.h"
#include "ops/call.h"
#include "tensor/handle_watch.h"

using namespace braid;
using namespace braid::graph;

struct braid_hybrid_t {
  std::atomic<int32_t> refs{1};
  braid_context ctx = nullptr;
  braid_hybrid_fn fn = nullptr;
  void* user = nullptr;
  int32_t num_inputs = 0, num_outputs = 0;
  uint32_t passes = 0;
  std::mutex mu;
  // Graphs by input signature (autocast, devices, dtypes, shapes); a handful, searched in order. Guarded by mu,
  // which a call holds while it runs a cached graph (runs of one graph are serialised anyway).
  std::vector<std::pair<std::vector<int64_t>, braid_graph>> cache;

  ~braid_hybrid_t() {
    for (auto& [key, g] : cache) drop_graph(g);
    cache.clear();
    if (ctx) (void)release_context(ctx);  // its own reference, not the application's
  }
};

namespace {

using HybridPool = HandlePool<braid_hybrid_t>;

braid_hybrid_t& checked_hybrid(braid_hybrid h) { return HybridPool::instance().checked(h, "h", "hybrid"); }

// Device, dtype and shape of every input, as numbers: compared on every call, so nothing is formatted.
std::vector<int64_t> signature(const Context& ctx, const std::vector<Tensor*>& ts) {
  std::vector<int64_t> key;
  key.reserve(ts.size() * 4 + 1);
  key.push_back(autocast_dtype(ctx));  // a graph keeps the precision it was traced in (docs/AMP.md)
  for (const Tensor* t : ts) {
    key.push_back(static_cast<int64_t>(reinterpret_cast<intptr_t>(&t->device())));
    key.push_back(t->dtype);
    key.push_back(t->shape.ndim);
    for (int64_t d : t->shape.span()) key.push_back(d);
  }
  return key;
}

// The cached graph of a signature (h.mu held), or null.
braid_graph find_locked(braid_hybrid_t& h, const std::vector<int64_t>& key) {
  for (auto& [k, g] : h.cache)
    if (k == key) return g;
  return nullptr;
}

// The hybrid functions whose fn runs on this thread, innermost last.
thread_local std::vector<const braid_hybrid_t*> t_running;

// Calls fn, checking that it filled every output; releases what it made on failure.
void call_fn(braid_hybrid_t& h, const braid_tensor* inputs, braid_tensor* outputs) {
  // fn calling braid_hybrid_call on its own hybrid would run itself again, inside the same trace,
  // without end (a stack overflow, not an error): refused, as a recursive hybridized block is.
  if (std::find(t_running.begin(), t_running.end(), &h) != t_running.end())
    fail(BRAID_ERR_INVALID_STATE, "hybrid_call: the function calls its own hybrid function (recursion is refused)");
  // fn gets a copy of the inputs: the caller may pass one array as inputs and outputs, and clearing
  // the outputs below must not clear the inputs fn reads.
  const std::vector<braid_tensor> ins(inputs, inputs + h.num_inputs);
  for (int32_t k = 0; k < h.num_outputs; ++k) outputs[k] = nullptr;
  struct Running {  // popped however fn returns
    explicit Running(const braid_hybrid_t* h) { t_running.push_back(h); }
    ~Running() { t_running.pop_back(); }
    Running(const Running&) = delete;
    Running& operator=(const Running&) = delete;
  };
  // An input handed back as an output must come with a reference of its own (braid_tensor_retain);
  // one that came without is retained on fn's behalf, so the caller's reference survives the call.
  // fn's own retains are counted as it makes them (a reference count would also count what other
  // threads, or braid's own handles, take and drop meanwhile).
  braid_status st;
  std::vector<int64_t> retained(ins.size(), 0);
  {
    HandleWatch watch(std::vector<const Tensor*>(ins.begin(), ins.end()));
    Running running(&h);
    clear_last_error();  // what fn's failure says is only what failed inside it, not an earlier call's
    st = h.fn(h.user, h.num_inputs, ins.data(), h.num_outputs, outputs);
    for (size_t k = 0; k < ins.size(); ++k) retained[k] = watch.net(k);
  }
  // The inputs are the caller's references: fn released one if it let go of more references than it
  // took (a dead handle, or one whose other holders lose a reference). Those it still can be are given
  // back, with one for each time fn returned the input (released below if the call fails).
  // Tensor handles are quarantined, so asking whether one is still live reads no freed memory.
  int32_t released = -1;
  for (size_t k = 0; k < ins.size(); ++k) {
    if (std::find(ins.begin(), ins.begin() + ptrdiff_t(k), ins[k]) != ins.begin() + ptrdiff_t(k))
      continue;  // counted at its first position
    const bool live = tensor_is_live(ins[k]);
    if ((retained[k] < 0 || !live) && released < 0) released = static_cast<int32_t>(k);
    if (!live) continue;
    const auto returned = std::count(outputs, outputs + h.num_outputs, ins[k]);
    for (int64_t r = retained[k]; r < returned; ++r) retain_app_reference(*ins[k]);
  }
  bool filled = true;
  for (int32_t k = 0; k < h.num_outputs; ++k) filled = filled && outputs[k] != nullptr;
  if (st != BRAID_OK || !filled || released >= 0) {
    std::string why = st != BRAID_OK ? last_error() : "";  // what fn's failed braid call said
    if (why.empty()) why = cat("it returned ", status_name(st), " without a braid call failing");
    for (int32_t k = 0; k < h.num_outputs; ++k)
      if (outputs[k]) release_returned(std::exchange(outputs[k], nullptr));
    if (st != BRAID_OK) fail(st, "hybrid_call: the function failed: ", why);
    if (released >= 0)
      fail(BRAID_ERR_INVALID_ARGUMENT, "hybrid_call: the function released inputs[", released,
           "], which belongs to the caller");
    fail(BRAID_ERR_INVALID_ARGUMENT, "hybrid_call: the function did not set every output");
  }
}

}  // namespace

extern "C" {

BRAID_API braid_status braid_hybrid_create(braid_context ctx, braid_hybrid_fn fn, void* user, int32_t num_inputs,
                                           int32_t num_outputs, uint32_t passes, braid_hybrid* out) {
  return guard("braid_hybrid_create", [&] {
    require(out, "out");
    *out = nullptr;
    const ContextRef ctx_use = use_context(ctx, "ctx");
    if (!fn) fail(BRAID_ERR_INVALID_ARGUMENT, "fn is NULL");
    if (num_inputs < 0 || num_outputs < 1)
      fail(BRAID_ERR_INVALID_ARGUMENT, "hybrid_create: needs num_inputs >= 0 and num_outputs >= 1");
    if (passes & ~uint32_t(BRAID_GRAPH_PASS_ALL))
      fail(BRAID_ERR_INVALID_ARGUMENT, "hybrid_create: unknown pass bits ", passes);
    HybridPool::Owned h = HybridPool::instance().make();
    ctx_use->refs.fetch_add(1);  // as a tensor holds it, not as the application
    h->ctx = ctx;
    h->fn = fn;
    h->user = user;
    h->num_inputs = num_inputs;
    h->num_outputs = num_outputs;
    h->passes = passes;
    *out = HybridPool::instance().publish(std::move(h));
  });
}

BRAID_API braid_status braid_hybrid_retain(braid_hybrid h) {
  return guard("braid_hybrid_retain", [&] { checked_hybrid(h).refs.fetch_add(1); });
}

BRAID_API braid_status braid_hybrid_release(braid_hybrid h) {
  return guard("braid_hybrid_release", [&] {
    if (checked_hybrid(h).refs.fetch_sub(1, std::memory_order_acq_rel) == 1) (void)HybridPool::instance().retire(h);
  });
}

BRAID_API braid_status braid_hybrid_call(braid_hybrid h, const braid_tensor* inputs, braid_tensor* outputs) {
  return guard("braid_hybrid_call", [&] {
    braid_hybrid_t& hy = checked_hybrid(h);
    require(outputs, "outputs");
    std::vector<Tensor*> ins = checked_tensors(hy.num_inputs, inputs, "inputs");
    for (Tensor* t : ins)
      if (t->ctx != hy.ctx) fail(BRAID_ERR_INVALID_ARGUMENT, "hybrid_call: an input belongs to another context");
    // Inside another trace the function runs as it is, and its ops join that trace.
    if (tracing()) return call_fn(hy, inputs, outputs);
    // A graph binds its inputs by storage, so a window (braid_view, Python's x[0]) goes in as a copy of
    // its elements: a function that writes an input in place writes that copy (docs/GRAPH.md).
    std::vector<TensorRef> copies;
    std::vector<braid_tensor> handles(inputs, inputs + hy.num_inputs);
    for (size_t k = 0; k < ins.size(); ++k)
      if (ins[k]->window) {
        copies.push_back(op::run(entry::copy, ins[k], ins[k]->storage->device->index));
        handles[k] = ins[k] = copies.back().get();
      }
    inputs = handles.data();
    const std::vector<int64_t> key = signature(*hy.ctx, ins);
    {
      std::lock_guard lock(hy.mu);
      if (braid_graph g = find_locked(hy, key)) {
        std::vector<TensorRef> made = run(g->g, ins);
        return hand_out(made, hy.num_outputs, outputs, "hybrid_call");
      }
    }
    // The first call with this signature: fn is traced without running its kernels (as MXNet's
    // first call of a hybridized block builds its graph symbolically), then the optimised graph runs.
    // So the first call computes what later calls compute, with the planned memory: tracing while
    // running would hold every intermediate the step makes at once, as imperative code does.
    trace_begin(*hy.ctx, ins, /*run_kernels=*/false);
    try {
      call_fn(hy, inputs, outputs);
    } catch (...) {
      trace_abandon();
      throw;
    }
    GraphPool::Owned g = new_graph(*hy.ctx);
    g->refs.app_refs.store(0);  // the cache's reference, not the application's (braid_hybrid_graph gives those)
    {
      // fn's outputs were never written: only their place in the graph is needed.
      struct ReleaseOutputs {
        braid_tensor* outputs;
        int32_t n;
        ~ReleaseOutputs() {
          for (int32_t k = 0; k < n; ++k)
            if (outputs[k]) release_returned(std::exchange(outputs[k], nullptr));
        }
      } release{outputs, hy.num_outputs};
      std::vector<Tensor*> outs;
      try {
        for (int32_t k = 0; k < hy.num_outputs; ++k) outs.push_back(&checked_tensor(outputs[k], "outputs"));
      } catch (...) {
        trace_abandon();
        throw;
      }
      trace_end(*hy.ctx, outs, g->g);
      optimize(g->g, hy.passes);
    }
    braid_graph published = GraphPool::instance().publish(std::move(g));
    std::lock_guard lock(hy.mu);
    braid_graph cached = find_locked(hy, key);
    if (cached) {  // another thread traced the same signature meanwhile: keep the first
      drop_graph(published);
    } else {
      hy.cache.emplace_back(key, published);
      cached = published;
    }
    std::vector<TensorRef> made = run(cached->g, ins);
    hand_out(made, hy.num_outputs, outputs, "hybrid_call");
  });
}

BRAID_API braid_status braid_hybrid_graph(braid_hybrid h, const braid_tensor* inputs, braid_graph* out) {
  return guard("braid_hybrid_graph", [&] {
    require(out, "out");
    *out = nullptr;
    braid_hybrid_t& hy = checked_hybrid(h);
    const std::vector<Tensor*> ins = checked_tensors(hy.num_inputs, inputs, "inputs");
    for (const Tensor* t : ins)
      if (t->ctx != hy.ctx) fail(BRAID_ERR_INVALID_ARGUMENT, "hybrid_graph: an input belongs to another context");
    std::lock_guard lock(hy.mu);
    braid_graph g = find_locked(hy, signature(*hy.ctx, ins));
    if (!g) fail(BRAID_ERR_NOT_FOUND, "hybrid_graph: no call with this input signature has been made yet");
    // An application reference of its own, beside the cache's (which the application cannot release).
    g->refs.app_refs.fetch_add(1);
    g->refs.refs.fetch_add(1);
    *out = g;
  });
}

}  // extern "C"
