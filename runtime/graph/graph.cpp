#include "graph/graph.h"

#include <algorithm>

#include "core/dtype.h"

namespace braid::graph {

bool ViewRef::same_as(const ViewRef& o) const noexcept {
  if (value != o.value || offset != o.offset || dtype != o.dtype || ndim != o.ndim) return false;
  for (int d = 0; d < ndim; ++d)
    if (shape[d] != o.shape[d] || strides[d] != o.strides[d]) return false;
  return true;
}

bool ViewRef::same_shape(const ViewRef& o) const noexcept {
  if (ndim != o.ndim) return false;
  for (int d = 0; d < ndim; ++d)
    if (shape[d] != o.shape[d]) return false;
  return true;
}

uint64_t ViewRef::numel() const noexcept {
  uint64_t n = 1;
  for (int d = 0; d < ndim; ++d) n *= static_cast<uint64_t>(shape[d]);
  return n;
}

bool ViewRef::covers_whole(uint64_t bytes) const noexcept {
  if (offset != 0 || numel() * dtype_size(dtype) != bytes) return false;
  int64_t expect = 1;
  for (int d = ndim - 1; d >= 0; --d) {
    if (shape[d] != 1 && strides[d] != expect) return false;
    expect *= shape[d];
  }
  return true;
}

bool Node::is_random() const noexcept {
  return kop == BRAID_KOP_RANDOM_UNIFORM || kop == BRAID_KOP_RANDOM_NORMAL || kop == BRAID_KOP_DROPOUT;
}

bool Node::reads_value(int32_t v) const noexcept {
  return std::any_of(in.begin(), in.end(), [v](const ViewRef& r) { return r.value == v; });
}

bool Node::writes_value(int32_t v) const noexcept {
  return std::any_of(out.begin(), out.end(), [v](const ViewRef& r) { return r.value == v; }) ||
         std::find(also_writes.begin(), also_writes.end(), v) != also_writes.end();
}

Graph::~Graph() {
  // Storages go back to the context's allocators, so they go before the context's reference.
  values.clear();
  if (ctx != nullptr) (void)release_context(ctx);
}

void Graph::compact_values() {
  std::vector<char> used(values.size(), 0);
  for (int32_t v : inputs) used[static_cast<size_t>(v)] = 1;
  for (const Output& o : outputs) used[static_cast<size_t>(o.value)] = 1;
  for (const Node& n : nodes) {
    for (const ViewRef& r : n.in) used[static_cast<size_t>(r.value)] = 1;
    for (const ViewRef& r : n.out) used[static_cast<size_t>(r.value)] = 1;
    for (int32_t v : n.also_writes) used[static_cast<size_t>(v)] = 1;
  }
  std::vector<int32_t> renum(values.size(), -1);
  std::vector<Value> kept;
  for (size_t v = 0; v < values.size(); ++v) {
    if (!used[v]) continue;
    renum[v] = static_cast<int32_t>(kept.size());
    kept.push_back(std::move(values[v]));
  }
  values = std::move(kept);
  auto fix = [&](int32_t& v) { v = renum[static_cast<size_t>(v)]; };
  for (int32_t& v : inputs) fix(v);
  for (Output& o : outputs) fix(o.value);
  for (Node& n : nodes) {
    for (ViewRef& r : n.in) fix(r.value);
    for (ViewRef& r : n.out) fix(r.value);
    for (int32_t& v : n.also_writes) fix(v);
  }
  drop_plan();
}

}  // namespace braid::graph
