// Elementwise fusion (docs/GRAPH.md, "Passes"): chains of consecutive elementwise kernels become one
// FUSED_ELEMENTWISE call carrying a small program (abi/braid_backend.h), where the device's backend
// has that kernel. Applied when a run's calls are prepared, not to the graph's nodes: the graph keeps
// the portable kernels (what is exported, what autograd records), and each backend gets what it runs.
#pragma once
#include <cstddef>
#include <vector>

#include "graph/graph.h"

namespace braid::graph {

struct FusedGroup {
  size_t first = 0, count = 0;  // nodes [first, first + count)
  Node node;                    // the FUSED_ELEMENTWISE kernel that replaces them
};

// The groups of nodes that run as one fused kernel on the graph's device (in node order, disjoint,
// each of at least two nodes). Needs the memory plan (an input sharing the result's slot must be
// read element for element).
std::vector<FusedGroup> fusion_groups(const Graph& g);

}  // namespace braid::graph
