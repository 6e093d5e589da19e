// The graph section of abi/braid.h: tracing, passes, runs, inspection, export and import (hybrid
// functions: hybrid.cpp). The handle helpers both use are declared in graph/handles.h.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "braid.h"
#include "checkpoint/checkpoint.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/handle_pool.h"
#include "core/out_struct.h"
#include "graph/graph.h"
#include "graph/handles.h"
#include "graph/json.h"
#include "graph/passes.h"
#include "graph/run.h"
#include "graph/trace.h"
#include "ops/op_builder.h"
#include "tensor/handle_watch.h"

using namespace braid;
using namespace braid::graph;

namespace braid::graph {

braid_graph_t& checked_graph(braid_graph g, const char* what) {
  return GraphPool::instance().checked(g, what, "graph");
}

void release_returned(braid_tensor t) noexcept {
  try {
    release_app_reference(checked_tensor(t, "a hybrid function's output"));
  } catch (...) {}
}

void drop_graph(braid_graph g) noexcept {
  if (g->refs.drop()) (void)GraphPool::instance().retire(g);
}

GraphPool::Owned new_graph(Context& ctx) {
  GraphPool::Owned h = GraphPool::instance().make();
  ctx.refs.fetch_add(1);
  h->g.ctx = &ctx;
  return h;
}

std::vector<Tensor*> checked_tensors(int32_t count, const braid_tensor* ts, const char* what) {
  if (count < 0) fail(BRAID_ERR_INVALID_ARGUMENT, what, ": count is negative");
  if (count > 0) require(ts, what);
  std::vector<Tensor*> out;
  for (int32_t i = 0; i < count; ++i) out.push_back(&checked_tensor(ts[i], cat(what, "[", i, "]").c_str()));
  return out;
}

bool tensor_is_live(braid_tensor t) noexcept {
  try {
    checked_tensor(t, "t");
    return true;
  } catch (...) {
    return false;
  }
}

void optimize(Graph& g, uint32_t passes) {
  if (passes & ~uint32_t(BRAID_GRAPH_PASS_ALL))
    fail(BRAID_ERR_INVALID_ARGUMENT, "graph_optimize: unknown pass bits ", passes);
  std::lock_guard lock(g.run_mu);
  if (passes & BRAID_GRAPH_PASS_DEAD_CODE) eliminate_dead_code(g);
  if (passes & BRAID_GRAPH_PASS_COMMON_SUBEXPRESSIONS) {
    eliminate_common_subexpressions(g);
    if (passes & BRAID_GRAPH_PASS_DEAD_CODE) eliminate_dead_code(g);
  }
  if (passes & BRAID_GRAPH_PASS_FOLD_CONSTANTS) fold_constants(g);
  if (passes & BRAID_GRAPH_PASS_PLAN_MEMORY) plan_memory(g, true);
  if ((passes & ~g.passes_applied) & BRAID_GRAPH_PASS_FUSE_ELEMENTWISE)
    g.prepared = Prepared{};  // the next run prepares its calls with the fused chains
  g.passes_applied |= passes;
}

// NULL and empty paths are bad arguments (an empty path would otherwise name a temporary in the
// working directory when saving, and be "not found" when loading).
void check_paths(const char* json_path, const char* params_path, const char* what) {
  require(json_path, "json_path");
  require(params_path, "params_path");
  if (!*json_path || !*params_path) fail(BRAID_ERR_INVALID_ARGUMENT, what, ": a path is empty");
}

// index as a position in a list of count, or BRAID_ERR_INVALID_ARGUMENT naming the function.
size_t checked_index(int32_t index, size_t count, const char* what) {
  if (index < 0 || static_cast<size_t>(index) >= count)
    fail(BRAID_ERR_INVALID_ARGUMENT, what, ": index ", index, " is outside [0, ", count, ")");
  return static_cast<size_t>(index);
}

braid_graph_tensor_info tensor_info(braid_dtype dtype, const Shape& shape) {
  braid_graph_tensor_info info{};
  info.struct_size = sizeof info;
  info.dtype = dtype;
  info.ndim = shape.ndim;
  for (int d = 0; d < shape.ndim; ++d) info.shape[d] = shape[d];
  return info;
}

void hand_out(std::vector<TensorRef>& made, int32_t count, braid_tensor* outs, const char* what) {
  if (static_cast<size_t>(count) != made.size())
    fail(BRAID_ERR_INVALID_ARGUMENT, what, ": the graph has ", made.size(), " outputs, not ", count);
  for (size_t k = 0; k < made.size(); ++k) outs[k] = made[k].release();
}

}  // namespace braid::graph

extern "C" {

BRAID_API braid_status braid_graph_trace_begin(braid_context ctx, int32_t num_inputs, const braid_tensor* inputs) {
  return guard("braid_graph_trace_begin", [&] {
    const ContextRef c_use = use_context(ctx, "ctx");
    Context& c = *c_use;
    const std::vector<Tensor*> ins = checked_tensors(num_inputs, inputs, "inputs");
    trace_begin(c, ins);
  });
}

BRAID_API braid_status braid_graph_trace_end(braid_context ctx, int32_t num_outputs, const braid_tensor* outputs,
                                             braid_graph* out) {
  return guard("braid_graph_trace_end", [&] {
    if (out) *out = nullptr;
    // Whatever is wrong with the arguments (out NULL, a bad or foreign ctx, bad outputs), the trace
    // ends, as it does when something could not be captured: a thread left tracing would record
    // every later op into a trace nobody ends. Only a thread that does not trace is INVALID_STATE.
    if (!tracing()) {
      require(out, "out");
      const ContextRef ctx_use = use_context(ctx, "ctx");  // a bad handle is INVALID_ARGUMENT, as everywhere
      fail(BRAID_ERR_INVALID_STATE, "graph_trace_end: this thread does not trace (call braid_graph_trace_begin)");
    }
    try {
      require(out, "out");
      const ContextRef c_use = use_context(ctx, "ctx");
      Context& c = *c_use;
      const std::vector<Tensor*> outs = checked_tensors(num_outputs, outputs, "outputs");
      GraphPool::Owned h = new_graph(c);
      trace_end(c, outs, h->g);
      *out = GraphPool::instance().publish(std::move(h));
    } catch (...) {
      trace_abandon();
      throw;
    }
  });
}

BRAID_API braid_status braid_graph_trace_abort(void) {
  return guard("braid_graph_trace_abort", [&] { trace_abandon(); });
}

BRAID_API braid_status braid_graph_retain(braid_graph g) {
  return guard("braid_graph_retain", [&] { checked_graph(g, "g").refs.app_retain("g"); });
}

BRAID_API braid_status braid_graph_release(braid_graph g) {
  return guard("braid_graph_release", [&] {
    if (checked_graph(g, "g").refs.app_release("g")) (void)GraphPool::instance().retire(g);
  });
}

BRAID_API braid_status braid_graph_optimize(braid_graph g, uint32_t passes) {
  return guard("braid_graph_optimize", [&] { optimize(checked_graph(g, "g").g, passes); });
}

BRAID_API braid_status braid_graph_run(braid_graph g, int32_t num_inputs, const braid_tensor* inputs,
                                       int32_t num_outputs, braid_tensor* outputs) {
  return guard("braid_graph_run", [&] {
    Graph& gr = checked_graph(g, "g").g;
    if (num_outputs != static_cast<int32_t>(gr.outputs.size()))
      fail(BRAID_ERR_INVALID_ARGUMENT, "graph_run: the graph has ", gr.outputs.size(), " outputs, not ", num_outputs);
    if (num_outputs > 0) require(outputs, "outputs");
    // The count first: a count above the graph's must not make us read past the caller's array.
    if (num_inputs != static_cast<int32_t>(gr.inputs.size()))
      fail(BRAID_ERR_INVALID_ARGUMENT, "graph_run: the graph takes ", gr.inputs.size(), " inputs, not ", num_inputs);
    const std::vector<Tensor*> ins = checked_tensors(num_inputs, inputs, "inputs");
    std::vector<TensorRef> made = run(gr, ins);
    hand_out(made, num_outputs, outputs, "graph_run");
  });
}

BRAID_API braid_status braid_graph_get_info(braid_graph g, braid_graph_info* out) {
  return guard("braid_graph_get_info", [&] {
    require(out, "out");
    Graph& gr = checked_graph(g, "g").g;
    std::lock_guard lock(gr.run_mu);  // a run may be preparing its calls or plan
    braid_graph_info info{};
    info.struct_size = sizeof info;
    info.num_inputs = static_cast<int32_t>(gr.inputs.size());
    info.num_outputs = static_cast<int32_t>(gr.outputs.size());
    info.num_nodes = static_cast<int32_t>(gr.nodes.size());
    for (const Value& v : gr.values) {
      if (v.kind == ValueKind::param) ++info.num_params;
      bool is_output = false;
      for (const Output& o : gr.outputs) is_output = is_output || &gr.values[static_cast<size_t>(o.value)] == &v;
      if (v.kind == ValueKind::internal && !is_output) info.intermediate_bytes += v.bytes;
    }
    info.device = gr.device->index;
    info.pushes_per_run = pushes_per_run(gr);
    info.workspace_bytes = gr.plan.planned ? gr.plan.workspace_bytes : 0;
    info.passes = gr.passes_applied;
    info.kernels_per_run = kernels_per_run(gr);
    copy_out(out, info, "out");
  });
}

BRAID_API braid_status braid_graph_get_node(braid_graph g, int32_t index, braid_graph_node_info* out) {
  return guard("braid_graph_get_node", [&] {
    require(out, "out");
    Graph& gr = checked_graph(g, "g").g;
    const Node& n = gr.nodes[checked_index(index, gr.nodes.size(), "graph_get_node")];
    braid_graph_node_info info{};
    info.struct_size = sizeof info;
    info.name = n.name.c_str();
    info.kernel = kernel_op_name(n.kop);
    info.num_inputs = static_cast<int32_t>(n.in.size());
    info.num_outputs = static_cast<int32_t>(n.out.size());
    if (!n.out.empty()) {
      info.dtype = n.out[0].dtype;
      info.ndim = n.out[0].ndim;
      for (int d = 0; d < info.ndim; ++d) info.shape[d] = n.out[0].shape[d];
    }
    copy_out(out, info, "out");
  });
}

BRAID_API braid_status braid_graph_get_input(braid_graph g, int32_t index, braid_graph_tensor_info* out) {
  return guard("braid_graph_get_input", [&] {
    require(out, "out");
    Graph& gr = checked_graph(g, "g").g;
    const Value& v =
        gr.values[static_cast<size_t>(gr.inputs[checked_index(index, gr.inputs.size(), "graph_get_input")])];
    copy_out(out, tensor_info(v.dtype, v.shape), "out");
  });
}

BRAID_API braid_status braid_graph_get_output(braid_graph g, int32_t index, braid_graph_tensor_info* out) {
  return guard("braid_graph_get_output", [&] {
    require(out, "out");
    Graph& gr = checked_graph(g, "g").g;
    const Output& o = gr.outputs[checked_index(index, gr.outputs.size(), "graph_get_output")];
    copy_out(out, tensor_info(o.dtype, o.shape), "out");
  });
}

BRAID_API braid_status braid_graph_save(braid_graph g, const char* json_path, const char* params_path) {
  return guard("braid_graph_save", [&] {
    Graph& gr = checked_graph(g, "g").g;
    check_paths(json_path, params_path, "graph_save");
    // One file for both would leave only the JSON there: "d/a.json" and "d/./a.json" are one.
    if (same_file_path(json_path, params_path))
      fail(BRAID_ERR_INVALID_ARGUMENT, "graph_save: json_path and params_path are the same file");
    std::vector<std::string> names;
    std::vector<Tensor*> tensors;
    for (const Value& v : gr.values)
      if (v.kind == ValueKind::param) {
        names.push_back(v.name);
        tensors.push_back(v.tensor.get());
      }
    // The graph file's temporary first: a json_path that cannot be written (a missing folder, a
    // directory) fails before the parameters file is replaced.
    AtomicFile f(json_path);
    checkpoint::save_tensors(params_path, names, tensors);
    const std::string text = to_json(gr);
    f.write(text.data(), text.size());
    f.commit();
  });
}

BRAID_API braid_status braid_graph_load(braid_context ctx, braid_device device, const char* json_path,
                                        const char* params_path, braid_graph* out) {
  return guard("braid_graph_load", [&] {
    require(out, "out");
    *out = nullptr;
    const ContextRef c_use = use_context(ctx, "ctx");
    Context& c = *c_use;
    Device& dev = c.device(device, "graph_load");
    check_paths(json_path, params_path, "graph_load");
    const std::string text = read_whole_file(json_path, uint64_t{1} << 30);
    GraphPool::Owned h = new_graph(c);
    Graph& g = h->g;
    g.device = &dev;
    try {
      from_json(text, g);
    } catch (const Error& e) {
      fail(e.status(), json_path, ": ", e.what());
    }
    for (const Node& n : g.nodes) {
      const braid_dtype dt = !n.out.empty() ? n.out[0].dtype : n.in[0].dtype;
      const braid_dtype probe = n.kop == BRAID_KOP_ARGMAX || n.kop == BRAID_KOP_COPY ? n.in[0].dtype : dt;
      if (!dev.supports(n.kop, probe))
        fail(BRAID_ERR_UNSUPPORTED, "graph_load: ", dev.id, " has no ", dtype_name(probe), " kernel for '", n.name,
             "' (", kernel_op_name(n.kop), ")");
    }
    std::vector<std::string> names;
    std::vector<Value*> params;
    for (Value& v : g.values)
      if (v.kind == ValueKind::param) {
        names.push_back(v.name);
        params.push_back(&v);
      }
    std::vector<TensorRef> loaded = checkpoint::load_tensors(c, dev, params_path, names);
    for (size_t k = 0; k < params.size(); ++k) {
      TensorRef t = std::move(loaded[k]);
      Value& v = *params[k];
      if (kernel_dtype(t->dtype) != kernel_dtype(v.dtype) || t->storage->bytes != v.bytes)  // bool is uint8 there
        fail(BRAID_ERR_IO, params_path, ": \"", v.name, "\" is ", dtype_name(t->dtype), " ", t->shape.str(),
             ", the graph needs ", dtype_name(v.dtype), " ", v.shape.str());
      v.tensor = std::move(t);
    }
    *out = GraphPool::instance().publish(std::move(h));
  });
}

}  // extern "C"
