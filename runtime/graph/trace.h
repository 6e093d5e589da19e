// Tracing (docs/GRAPH.md, "Tracing"): while a thread traces, every kernel it pushes on the context is
// recorded into a graph, and also runs as usual unless the trace only records.
#pragma once
#include <memory>
#include <span>

#include "graph/graph.h"

namespace braid::graph {

// Starts tracing on the calling thread. The inputs' storages become the graph's inputs, in order.
// With run_kernels false the kernels are only recorded: their outputs are never written, and reading
// one on the host is refused until the trace ends. Fails if the thread already traces.
void trace_begin(Context& ctx, std::span<Tensor* const> inputs, bool run_kernels = true);
// Ends the calling thread's trace and fills g (whose ctx the caller has set and retained) with what
// it recorded, outputs in order. Fails, with what went wrong during tracing, if something could not
// be captured (an op on another device or context, a copy of a traced value to another device).
void trace_end(Context& ctx, std::span<Tensor* const> outputs, Graph& g);
// Ends the calling thread's trace, if any, and forgets it (an error path of the caller).
void trace_abandon() noexcept;
// Whether the calling thread traces.
bool tracing() noexcept;

}  // namespace braid::graph
