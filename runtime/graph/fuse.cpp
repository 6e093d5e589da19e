#include "graph/fuse.h"

#include <algorithm>
#include <cstring>

#include "core/dtype.h"

namespace braid::graph {
namespace {

bool elementwise(const Node& n, const Graph& g) {
  if (n.kop != BRAID_KOP_UNARY && n.kop != BRAID_KOP_BINARY && n.kop != BRAID_KOP_BINARY_SCALAR) return false;
  if (n.out.size() != 1 || !n.also_writes.empty()) return false;
  const ViewRef& o = n.out[0];
  const Value& v = g.values[at(o.value)];
  if (!dtype_is_float(o.dtype) || v.kind != ValueKind::internal || !o.covers_whole(v.bytes)) return false;
  for (const ViewRef& r : n.in)
    if (r.dtype != o.dtype) return false;
  return n.kop == BRAID_KOP_UNARY ? n.i[0] >= 0 && n.i[0] < BRAID_UNARY_COUNT
                                  : n.i[0] >= 0 && n.i[0] < BRAID_BINARY_COUNT;
}

// The fused kernel of nodes [first, first + count), or false when it does not fit (inputs, scalars,
// instructions) or would read an input that shares the result's slot other than element for element.
bool build(const Graph& g, size_t first, size_t count, Node& fused) {
  fused = Node{};
  fused.name = "fused";
  fused.kop = BRAID_KOP_FUSED_ELEMENTWISE;
  const ViewRef& result = g.nodes[first + count - 1].out[0];
  std::vector<int32_t> produced;  // value written by instruction j
  int scalars = 0;
  std::vector<int> regs_of_inputs;
  auto reg = [&](const ViewRef& r) -> int {
    for (size_t j = 0; j < produced.size(); ++j)
      if (produced[j] == r.value) return -1 - static_cast<int>(j);  // an instruction's result
    for (size_t k = 0; k < fused.in.size(); ++k)
      if (fused.in[k].same_as(r)) return static_cast<int>(k);
    if (fused.in.size() == BRAID_KERNEL_MAX_INPUTS) return 1000;
    fused.in.push_back(r);
    return static_cast<int>(fused.in.size() - 1);
  };
  struct Raw {
    int kind, op, a, b;  // a, b: >= 0 input k, < 0 instruction -1-a (resolved once inputs are known)
  };
  std::vector<Raw> code;
  for (size_t i = first; i < first + count; ++i) {
    const Node& n = g.nodes[i];
    Raw r{0, static_cast<int>(n.i[0]), reg(n.in[0]), 0};
    if (n.kop == BRAID_KOP_BINARY) {
      r.kind = 1;
      r.b = reg(n.in[1]);
    } else if (n.kop == BRAID_KOP_BINARY_SCALAR) {
      r.kind = n.i[1] != 0 ? 3 : 2;
      int s = 0;
      while (s < scalars && std::memcmp(&fused.f[s], &n.f[0], sizeof(double)) != 0) ++s;
      if (s == scalars) {
        if (scalars == 8) return false;
        fused.f[scalars++] = n.f[0];
      }
      r.b = s;
    }
    if (r.a == 1000 || r.b == 1000) return false;
    code.push_back(r);
    produced.push_back(n.out[0].value);
  }
  if (code.size() > BRAID_FUSED_MAX_INSTRS) return false;
  // An input in the result's slot is safe only when it is read at the very element written.
  const auto slot = [&](int32_t v) { return g.plan.planned && at(v) < g.plan.slot.size() ? g.plan.slot[at(v)] : -1; };
  for (const ViewRef& r : fused.in)
    if (slot(r.value) >= 0 && slot(r.value) == slot(result.value)) {
      bool same = r.covers_whole(g.values[at(r.value)].bytes) && dtype_size(r.dtype) == dtype_size(result.dtype) &&
                  r.ndim == result.ndim;
      for (int d = 0; same && d < r.ndim; ++d) same = r.strides[d] == result.strides[d];
      if (!same) return false;
    }
  const int k = static_cast<int>(fused.in.size());
  auto resolve = [k](int x) { return x >= 0 ? x : k + (-1 - x); };
  fused.i[0] = static_cast<int64_t>(code.size());
  for (size_t j = 0; j < code.size(); ++j) {
    const Raw& r = code[j];
    const int b = r.kind == 1 ? resolve(r.b) : r.b;
    const uint64_t bits = uint64_t(r.kind) | uint64_t(r.op) << 2 | uint64_t(resolve(r.a)) << 6 | uint64_t(b) << 12;
    fused.i[1 + j / 3] = static_cast<int64_t>(static_cast<uint64_t>(fused.i[1 + j / 3]) | bits << (21 * (j % 3)));
  }
  fused.out.push_back(result);
  return true;
}

}  // namespace

std::vector<FusedGroup> fusion_groups(const Graph& g) {
  std::vector<FusedGroup> groups;
  std::vector<int> readers(g.values.size(), 0);
  for (const Node& n : g.nodes)
    for (const ViewRef& r : n.in) ++readers[at(r.value)];
  for (const Output& o : g.outputs) ++readers[at(o.value)];
  auto fusable = [&](const Node& n) {
    return elementwise(n, g) && g.device->supports(BRAID_KOP_FUSED_ELEMENTWISE, n.out[0].dtype);
  };
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!fusable(g.nodes[i])) continue;
    size_t j = i + 1;
    // Extend while the next kernel is the only reader of the chain's value so far (it never has to
    // be in memory) and computes over the same shape.
    while (j < g.nodes.size() && j - i < BRAID_FUSED_MAX_INSTRS && fusable(g.nodes[j])) {
      const int32_t cur = g.nodes[j - 1].out[0].value;
      if (readers[at(cur)] != 1 || !g.nodes[j].reads_value(cur) || !g.nodes[j].out[0].same_shape(g.nodes[i].out[0]) ||
          g.nodes[j].out[0].dtype != g.nodes[i].out[0].dtype)
        break;
      ++j;
    }
    // Shorten until it fits (inputs, scalars, the slot rule).
    for (; j - i >= 2; --j) {
      FusedGroup group{i, j - i, {}};
      if (build(g, i, j - i, group.node)) {
        groups.push_back(std::move(group));
        break;
      }
    }
    if (j - i >= 2) i = j - 1;
  }
  return groups;
}

}  // namespace braid::graph
