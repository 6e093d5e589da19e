#include "graph/passes.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <string>
#include <unordered_map>

#include "core/dtype.h"
#include "graph/run.h"

namespace braid::graph {
namespace {

std::vector<int> writer_counts(const Graph& g) {
  std::vector<int> w(g.values.size(), 0);
  for (const Node& n : g.nodes) {
    for (const ViewRef& r : n.out) ++w[at(r.value)];
    for (int32_t v : n.also_writes) ++w[at(v)];
  }
  return w;
}

bool is_output(const Graph& g, int32_t v) {
  return std::any_of(g.outputs.begin(), g.outputs.end(), [v](const Output& o) { return o.value == v; });
}

template <class T>
void append_bytes(std::string& key, const T& x) {
  key.append(reinterpret_cast<const char*>(&x), sizeof x);
}

void append_view(std::string& key, const ViewRef& r, bool with_value, uint32_t version) {
  if (with_value) {
    append_bytes(key, r.value);
    append_bytes(key, version);
    append_bytes(key, r.offset);
  }
  append_bytes(key, r.dtype);
  append_bytes(key, r.ndim);
  for (int d = 0; d < r.ndim; ++d) {
    append_bytes(key, r.shape[d]);
    append_bytes(key, r.strides[d]);
  }
}

// Kernels that update an operand or read beyond their views: never merged or folded.
bool has_side_effects(const Node& n) {
  switch (n.kop) {
    case BRAID_KOP_SGD_UPDATE:
    case BRAID_KOP_SGD_MOMENTUM:
    case BRAID_KOP_ADAM_UPDATE:
    case BRAID_KOP_COMBINE: return true;
    default: return !n.also_writes.empty();
  }
}

bool elementwise(braid_kernel_op kop) {
  return kop == BRAID_KOP_UNARY || kop == BRAID_KOP_BINARY || kop == BRAID_KOP_BINARY_SCALAR;
}

}  // namespace

int eliminate_dead_code(Graph& g) {
  std::vector<char> needed(g.values.size(), 0);
  for (const Output& o : g.outputs) needed[at(o.value)] = 1;
  std::vector<char> live(g.nodes.size(), 0);
  for (size_t i = g.nodes.size(); i-- > 0;) {
    const Node& n = g.nodes[i];
    // A random kernel stays even unread: each takes the next draw of the context's generator, so
    // removing one would shift every later kernel's draws away from what imperative execution draws.
    bool keep = n.is_random();
    auto writes = [&](int32_t v) { keep = keep || needed[at(v)] || g.values[at(v)].kind != ValueKind::internal; };
    for (const ViewRef& r : n.out) writes(r.value);
    for (int32_t v : n.also_writes) writes(v);
    if (!keep) continue;
    live[i] = 1;
    for (const ViewRef& r : n.in) needed[at(r.value)] = 1;
  }
  std::vector<Node> kept;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (live[i]) kept.push_back(std::move(g.nodes[i]));
  const int removed = static_cast<int>(g.nodes.size() - kept.size());
  g.nodes = std::move(kept);
  if (removed) g.compact_values();
  return removed;
}

int eliminate_common_subexpressions(Graph& g) {
  const std::vector<int> writers = writer_counts(g);
  std::vector<uint32_t> version(g.values.size(), 0);
  std::vector<int32_t> alias(g.values.size());
  for (size_t v = 0; v < alias.size(); ++v) alias[v] = static_cast<int32_t>(v);
  std::unordered_map<std::string, size_t> seen;
  std::vector<char> removed(g.nodes.size(), 0);
  int merged = 0;
  // A read of a merged value reads the one kept; through the removed value's own handle, it reads the
  // kept value's own handle (an interpreted run then makes no alias of it: run.cpp).
  auto redirect = [&](int32_t& value, int32_t& handle) {
    const int32_t old = value;
    value = alias[at(old)];
    if (value != old && handle >= 0 && handle == g.values[at(old)].base_handle)
      handle = g.values[at(value)].base_handle;
  };
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& n = g.nodes[i];
    for (ViewRef& r : n.in) redirect(r.value, r.handle);
    bool eligible = !n.is_random() && !has_side_effects(n) && !n.out.empty();
    for (const ViewRef& r : n.out) {
      const Value& v = g.values[at(r.value)];
      eligible = eligible && v.kind == ValueKind::internal && writers[at(r.value)] == 1 && r.covers_whole(v.bytes) &&
                 !n.reads_value(r.value);
    }
    if (eligible) {
      std::string key;
      append_bytes(key, n.kop);
      key.append(reinterpret_cast<const char*>(n.i), sizeof n.i);
      key.append(reinterpret_cast<const char*>(n.f), sizeof n.f);
      for (const ViewRef& r : n.in) append_view(key, r, true, version[at(r.value)]);
      key.push_back('|');
      for (const ViewRef& r : n.out) append_view(key, r, false, 0);
      auto [it, fresh] = seen.emplace(std::move(key), i);
      if (!fresh) {
        const Node& first = g.nodes[it->second];
        bool both_outputs = false;
        for (size_t k = 0; k < n.out.size(); ++k)
          both_outputs = both_outputs || (is_output(g, n.out[k].value) && is_output(g, first.out[k].value));
        if (!both_outputs) {
          for (size_t k = 0; k < n.out.size(); ++k) alias[at(n.out[k].value)] = first.out[k].value;
          removed[i] = 1;
          ++merged;
          continue;
        }
      }
    }
    for (const ViewRef& r : n.out) ++version[at(r.value)];
    for (int32_t v : n.also_writes) ++version[at(v)];
  }
  if (!merged) return 0;
  for (Output& o : g.outputs) redirect(o.value, o.handle);
  std::vector<Node> kept;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (!removed[i]) kept.push_back(std::move(g.nodes[i]));
  g.nodes = std::move(kept);
  g.compact_values();
  return merged;
}

int fold_constants(Graph& g) {
  std::vector<char> constant(g.values.size(), 0);
  std::vector<char> folds(g.nodes.size(), 0);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.is_random() || has_side_effects(n) || n.out.empty()) continue;
    bool all = true;
    for (const ViewRef& r : n.in) all = all && constant[at(r.value)];
    for (const ViewRef& r : n.out)
      all =
          all && g.values[at(r.value)].kind == ValueKind::internal && !is_output(g, r.value) && !n.reads_value(r.value);
    if (!all) continue;
    folds[i] = 1;
    for (const ViewRef& r : n.out) constant[at(r.value)] = 1;
  }
  // A constant that a later node overwrites would change between runs: then nothing is folded. That
  // includes a node's in-place updates beside its outputs (batch norm's running statistics).
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (folds[i]) continue;
    for (const ViewRef& r : g.nodes[i].out)
      if (constant[at(r.value)]) return 0;
    for (const int32_t v : g.nodes[i].also_writes)
      if (constant[at(v)]) return 0;
  }
  std::vector<size_t> order;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (folds[i]) order.push_back(i);
  if (order.empty()) return 0;
  // The constants that the rest of the graph reads become parameters computed now.
  std::vector<char> wanted(g.values.size(), 0);
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (!folds[i])
      for (const ViewRef& r : g.nodes[i].in)
        if (constant[at(r.value)]) wanted[at(r.value)] = 1;
  std::vector<TensorRef> made = compute_values(g, order);
  int32_t count = 0;
  for (const Value& v : g.values)
    if (v.kind == ValueKind::param && v.name.rfind("const", 0) == 0) ++count;
  for (size_t v = 0; v < g.values.size(); ++v) {
    if (!wanted[v]) continue;
    Value& val = g.values[v];
    val.kind = ValueKind::param;
    val.tensor = std::move(made[v]);
    val.name = cat("const", count++);
  }
  std::vector<Node> kept;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (!folds[i]) kept.push_back(std::move(g.nodes[i]));
  g.nodes = std::move(kept);
  g.compact_values();
  return static_cast<int>(order.size());
}

void plan_memory(Graph& g, bool reuse) {
  const size_t nv = g.values.size();
  std::vector<int> first(nv, INT_MAX), last(nv, -1);
  auto touch = [&](int32_t v, int i) {
    first[at(v)] = std::min(first[at(v)], i);
    last[at(v)] = std::max(last[at(v)], i);
  };
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    for (const ViewRef& r : n.in) touch(r.value, static_cast<int>(i));
    for (const ViewRef& r : n.out) touch(r.value, static_cast<int>(i));
    for (int32_t v : n.also_writes) touch(v, static_cast<int>(i));
  }
  std::vector<char> in_workspace(nv, 0);
  for (size_t v = 0; v < nv; ++v)
    in_workspace[v] = g.values[v].kind == ValueKind::internal && !is_output(g, static_cast<int32_t>(v)) && last[v] >= 0;
  // Buffers: groups of values that share bytes one after another (in-place chains).
  std::vector<int32_t> group(nv);
  for (size_t v = 0; v < nv; ++v) group[v] = static_cast<int32_t>(v);
  auto find = [&](int32_t v) {
    while (group[at(v)] != v) v = group[at(v)] = group[at(group[at(v)])];
    return v;
  };
  if (reuse) {
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const Node& n = g.nodes[i];
      if (!elementwise(n.kop) || n.out.size() != 1) continue;
      const ViewRef& o = n.out[0];
      const Value& ov = g.values[at(o.value)];
      if (!in_workspace[at(o.value)] || first[at(o.value)] != static_cast<int>(i) || !o.covers_whole(ov.bytes))
        continue;
      for (const ViewRef& r : n.in) {
        const Value& iv = g.values[at(r.value)];
        if (!in_workspace[at(r.value)] || last[at(r.value)] != static_cast<int>(i) || iv.bytes != ov.bytes ||
            !r.covers_whole(iv.bytes) || dtype_size(r.dtype) != dtype_size(o.dtype) || r.value == o.value)
          continue;
        group[at(o.value)] = find(r.value);
        break;
      }
    }
  }
  struct Buffer {
    int32_t root;
    uint64_t bytes = 0;
    int first = INT_MAX, last = -1;
  };
  std::unordered_map<int32_t, Buffer> buffers;
  for (size_t v = 0; v < nv; ++v) {
    if (!in_workspace[v]) continue;
    const int32_t r = find(static_cast<int32_t>(v));
    Buffer& b = buffers.try_emplace(r, Buffer{r}).first->second;
    b.bytes = std::max(b.bytes, g.values[v].bytes);
    b.first = std::min(b.first, first[v]);
    b.last = std::max(b.last, last[v]);
  }
  std::vector<const Buffer*> order;
  for (auto& [r, b] : buffers) order.push_back(&b);
  std::sort(order.begin(), order.end(), [](const Buffer* a, const Buffer* b) {
    return a->bytes != b->bytes ? a->bytes > b->bytes : a->root < b->root;
  });
  // Largest first, each into the first slot none of whose buffers is alive at the same time (a slot is
  // as large as its first, largest buffer), else into a new slot.
  std::vector<std::vector<const Buffer*>> slots;
  std::unordered_map<int32_t, int32_t> slot_of;
  for (const Buffer* b : order) {
    size_t s = slots.size();
    if (reuse)
      for (size_t k = 0; k < slots.size() && s == slots.size(); ++k) {
        bool free = true;
        for (const Buffer* o : slots[k]) free = free && (o->last < b->first || b->last < o->first);
        if (free) s = k;
      }
    if (s == slots.size()) slots.emplace_back();
    slots[s].push_back(b);
    slot_of[b->root] = static_cast<int32_t>(s);
  }
  g.plan.slot.assign(nv, -1);
  for (size_t v = 0; v < nv; ++v)
    if (in_workspace[v]) g.plan.slot[v] = slot_of.at(find(static_cast<int32_t>(v)));
  g.plan.slot_bytes.clear();
  g.plan.workspace_bytes = 0;
  for (const auto& members : slots) {
    g.plan.slot_bytes.push_back(members.front()->bytes);
    g.plan.workspace_bytes += members.front()->bytes;
  }
  g.plan.planned = true;
  g.prepared = Prepared{};
}

}  // namespace braid::graph
