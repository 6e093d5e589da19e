// A graph as JSON (docs/GRAPH.md, "Export and import"): format "braid.graph", version [1, 0]. Parameters
// are not in it; they go to a safetensors file under the names the JSON gives them.
#pragma once
#include <string>
#include <string_view>

#include "graph/graph.h"

namespace braid::graph {

inline constexpr int kFormatMajor = 1;
inline constexpr int kFormatMinor = 0;

// "MATMUL", "UNARY", ...; nullptr for a value outside the enum.
const char* kernel_op_name(braid_kernel_op op) noexcept;

std::string to_json(const Graph& g);
// Parses and checks a graph (values, kernels, views inside their values, shapes each kernel accepts).
// Params get their names and sizes but no tensors. Throws BRAID_ERR_IO naming what is wrong, or
// BRAID_ERR_UNSUPPORTED for a newer major format version.
void from_json(std::string_view text, Graph& g);

}  // namespace braid::graph
