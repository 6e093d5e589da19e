// Running a graph (docs/GRAPH.md, "Running"). Two ways:
//  - as segments: the whole graph is one engine op whose kernels the backend runs in order in one
//    submission (BRAID_WORK_KERNELS), over a workspace laid out by the memory plan. No shape
//    inference, validation, allocation or dependency tracking per kernel: that is the speed-up.
//  - interpreted: one engine op per node, each value its own tensor. Used where a value must be a
//    tensor of its own: while autograd records (so backward runs through the graph) or while another
//    graph is being traced (the ops are traced as the kernels they are), and for constant folding.
#pragma once
#include <span>
#include <vector>

#include "graph/graph.h"

namespace braid::graph {

// Checks the inputs against the graph's (count, context, device, dtype, shape) and runs it. Returns
// the outputs, in order. Thread-safe; runs of one graph are serialised.
std::vector<TensorRef> run(Graph& g, std::span<Tensor* const> inputs);

// Runs nodes (indices, in order) interpreted, values that no earlier node wrote being parameters;
// returns a tensor per value written (others empty). Graph inputs must not be read.
std::vector<TensorRef> compute_values(Graph& g, std::span<const size_t> nodes);

// Kernels a run submits: after the first run, with fused chains counted once; before, the nodes.
int kernels_per_run(const Graph& g);
// How many engine pushes a run makes (1 where the device's backend runs segments).
int pushes_per_run(const Graph& g);

}  // namespace braid::graph
