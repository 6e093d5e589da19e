// The graph passes (docs/GRAPH.md, "Passes"). Each keeps the graph's results equal to the traced
// imperative results; each returns how many nodes it removed or changed.
#pragma once
#include <cstdint>

#include "graph/graph.h"

namespace braid::graph {

// Removes nodes whose results reach no output. Nodes that write an input or a parameter (an
// optimizer step, batch norm's running statistics) have an effect beyond the graph and stay.
int eliminate_dead_code(Graph& g);
// Merges a node into an earlier one that computes the same kernel with the same attributes from the
// same values (unchanged since): later readers read the earlier node's results. Random ops differ
// each run and are never merged.
int eliminate_common_subexpressions(Graph& g);
// Runs once, now, the nodes that depend on no input and no parameter (FILL, ARANGE and what is
// computed from them only) and makes their results constants of the graph.
int fold_constants(Graph& g);
// Places every value that is not an output in the workspace's slots: with reuse, values whose
// lifetimes do not overlap share a slot, and an elementwise result takes over its operand's slot where
// that operand is read for the last time (in place); without, each value has a slot of its own.
void plan_memory(Graph& g, bool reuse);

}  // namespace braid::graph
