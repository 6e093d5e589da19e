// Graph and tensor handle helpers that the graph C API (api.cpp) and hybrid functions (hybrid.cpp)
// share. Each throws braid::Error (core/error.h) naming the argument; the C entry points' guard turns
// it into the status.
#pragma once
#include <cstdint>
#include <vector>

#include "braid.h"
#include "core/handle_pool.h"
#include "graph/graph.h"

namespace braid::graph {

using GraphPool = HandlePool<braid_graph_t>;

braid_graph_t& checked_graph(braid_graph g, const char* what);
// Drops a reference a hybrid function handed back in an output (the application's own); a handle that
// is not a live tensor is left alone, as the failed call reports the function's error instead.
void release_returned(braid_tensor t) noexcept;
// Drops an internal reference to a graph (a hybrid function's cache entry); the last destroys it.
void drop_graph(braid_graph g) noexcept;
// A new graph handle of ctx (which it retains).
GraphPool::Owned new_graph(Context& ctx);
// The tensors of a C array of count handles, each checked ("what[i]" in messages).
std::vector<Tensor*> checked_tensors(int32_t count, const braid_tensor* ts, const char* what);
// Whether t is a live tensor handle (never reads a released one: checked_tensor's rule).
bool tensor_is_live(braid_tensor t) noexcept;
// Runs the passes (BRAID_GRAPH_PASS_* bits) on g; unknown bits are BRAID_ERR_INVALID_ARGUMENT.
void optimize(Graph& g, uint32_t passes);
// Gives the caller the references in made, as count outputs (a count other than made's is refused).
void hand_out(std::vector<TensorRef>& made, int32_t count, braid_tensor* outs, const char* what);

}  // namespace braid::graph
