#include "parallel/collectives.h"

#include <algorithm>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "context/context.h"
#include "core/dtype.h"
#include "core/error.h"
#include "engine/engine.h"
#include "ops/copy.h"
#include "ops/op_builder.h"
#include "plugin/backend.h"
#include "tensor/tensor.h"

namespace braid::parallel {
namespace {

// Part i of n of [0, total), numpy.array_split style (the first total % n parts one longer).
struct Part {
  int64_t offset, count;
};
Part part(int64_t total, int64_t n, int64_t i) {
  const int64_t base = total / n, extra = total % n;
  return {i * base + std::min(i, extra), base + (i < extra ? 1 : 0)};
}

TensorRef temp(const Tensor& like, Device& on, int64_t count) {
  return new_tensor(*like.ctx, on, like.dtype, Shape::of(std::span<const int64_t>(&count, 1)));
}

// Whether a kernel on `on` may read buffers of `peer` directly. The CPU backend's devices share the
// process's memory and its kernels resolve any of the plugin's buffers to a host address, so a
// reduction reads the other device's partial sum where it lies instead of first copying it over: a
// copy costs a read and a write of every byte, which on devices that share one memory bus is most of
// an allreduce's time.
bool peer_readable(const Device& on, const Device& peer) {
  if (&on == &peer) return true;
  return on.backend == peer.backend && on.props.kind == BRAID_DEVICE_CPU && peer.props.kind == BRAID_DEVICE_CPU &&
         on.props.host_visible && peer.props.host_visible && on.backend->name == "cpu";
}

// out[out_off..] = a[a_off..] (op) b[b_off..], `count` elements, run on out's device's comm queue.
// a and b are on out's device or peer_readable from it. out may be a (in place).
void combine(braid_binary_op op, Tensor& a, int64_t a_off, Tensor& b, int64_t b_off, Tensor& out, int64_t out_off,
             int64_t count) {
  if (count <= 0) return;
  OpBuilder k("allreduce_combine", BRAID_KOP_BINARY);
  k.operand(&out, "out");  // the op's device; a and b may be peers (not operand(): it refuses them)
  k.add_input_view(a, flat_view(a, a_off, count));
  k.add_input_view(b, flat_view(b, b_off, count));
  k.require_kernel(a.dtype);
  k.call().i[0] = op;
  if (&out == &a)
    k.add_inplace_output(out, flat_view(out, out_off, count));
  else
    k.add_overwritten_output(out, flat_view(out, out_off, count));
  k.push(out.device().comm);
}

// t[off..off+count) /= divisor, in place on t's comm queue (AVG).
void divide(Tensor& t, int64_t off, int64_t count, double divisor) {
  if (count <= 0) return;
  OpBuilder k("allreduce_average", BRAID_KOP_BINARY_SCALAR);
  k.add_input_view(k.operand(&t, "t"), flat_view(t, off, count));
  k.require_kernel(t.dtype);
  k.add_inplace_output(t, flat_view(t, off, count));
  k.call().i[0] = BRAID_BINARY_DIV;
  k.call().i[1] = 0;
  k.call().f[0] = divisor;
  k.push(t.device().comm);
}

// dst[dst_off..] = src[src_off..]: a copy kernel on dst's comm queue that reads src in place when it
// can (same device, or a peer_readable one), else a byte copy on a transfer queue.
void send(Tensor& src, int64_t src_off, Tensor& dst, int64_t dst_off, int64_t count) {
  if (count <= 0) return;
  if (&src.device() == &dst.device() || !peer_readable(dst.device(), src.device())) {
    push_range_copy("collective_copy", src, src_off, dst, dst_off, count, &dst.device().comm);
    return;
  }
  OpBuilder k("collective_copy", BRAID_KOP_COPY);
  k.operand(&dst, "out");
  k.add_input_view(src, flat_view(src, src_off, count));
  k.require_kernel(src.dtype);
  k.add_overwritten_output(dst, flat_view(dst, dst_off, count));
  k.push(dst.device().comm);
}

// Ring reduce-scatter of elements [base, base + len) of ts, around the ring `order` (indices into
// ts). Chunk c's partial sum starts at ring position c + 1 and gains one tensor per hop; after n - 1
// hops it is complete on position c. Every hop receives into a fresh temporary and reduces the
// receiver's own chunk into it (or, where the receiver can read the sender's memory, reduces the two
// straight into a fresh temporary), so the user's tensors are only read here: the engine tracks whole
// storages, and a write into one chunk of a tensor would order the reads of its other chunks after it.
// Returns the complete chunks (chunk c on ts[order[c]]'s device); with `outs`, chunk c is written
// into outs[order[c]] instead (reduce_scatter) and the returned entries are empty.
std::vector<TensorRef> ring_reduce_scatter(std::span<Tensor* const> ts, std::span<const int> order, int64_t base,
                                           int64_t len, Reduction r, std::span<Tensor* const> outs = {}) {
  const int n = static_cast<int>(order.size());
  std::vector<TensorRef> partial(static_cast<size_t>(n));
  for (int step = 1; step < n; ++step) {
    std::vector<TensorRef> received(static_cast<size_t>(n));
    std::vector<bool> direct(static_cast<size_t>(n), false);  // reduced already, reading the peer
    for (int c = 0; c < n; ++c) {                             // every send of the step before its reductions
      const Part p = part(len, n, c);
      if (p.count == 0) continue;
      Tensor& from = *ts[static_cast<size_t>(order[static_cast<size_t>((c + step) % n)])];
      Tensor& to = *ts[static_cast<size_t>(order[static_cast<size_t>((c + step + 1) % n)])];
      Tensor& src = step == 1 ? from : *partial[static_cast<size_t>(c)];
      const int64_t src_off = step == 1 ? base + p.offset : 0;
      if (peer_readable(to.device(), src.device())) {
        // No copy: the reduction reads the partial where it is.
        direct[static_cast<size_t>(c)] = true;
        const bool last = step == n - 1;
        if (last && !outs.empty()) {
          Tensor& out = *outs[static_cast<size_t>(order[static_cast<size_t>(c)])];
          combine(r.combine, src, src_off, to, base + p.offset, out, 0, p.count);
          if (r.average) divide(out, 0, p.count, n);
        } else {
          TensorRef acc = temp(to, to.device(), p.count);
          combine(r.combine, src, src_off, to, base + p.offset, *acc, 0, p.count);
          if (last && r.average) divide(*acc, 0, p.count, n);
          received[static_cast<size_t>(c)] = std::move(acc);
        }
        continue;
      }
      direct[static_cast<size_t>(c)] = false;
      TensorRef recv = temp(to, to.device(), p.count);
      send(src, src_off, *recv, 0, p.count);
      received[static_cast<size_t>(c)] = std::move(recv);
    }
    for (int c = 0; c < n; ++c) {
      const Part p = part(len, n, c);
      if (p.count == 0) continue;
      if (direct[static_cast<size_t>(c)]) {
        partial[static_cast<size_t>(c)] = std::move(received[static_cast<size_t>(c)]);
        continue;
      }
      Tensor& to = *ts[static_cast<size_t>(order[static_cast<size_t>((c + step + 1) % n)])];
      Tensor& recv = *received[static_cast<size_t>(c)];
      if (step == n - 1 && !outs.empty()) {
        Tensor& out = *outs[static_cast<size_t>(order[static_cast<size_t>(c)])];
        combine(r.combine, recv, 0, to, base + p.offset, out, 0, p.count);
        if (r.average) divide(out, 0, p.count, n);
      } else {
        combine(r.combine, recv, 0, to, base + p.offset, recv, 0, p.count);
        if (step == n - 1 && r.average) divide(recv, 0, p.count, n);
      }
      partial[static_cast<size_t>(c)] = std::move(received[static_cast<size_t>(c)]);
    }
  }
  if (!outs.empty()) partial.clear();
  return partial;
}

// The all-gather half of the ring: chunk c, complete on position c, is copied into every tensor.
// Each copy reads the chunk's owner (one hop, not n - 1): the devices that share host memory, which
// is what the CPU backend's devices are, gain nothing from forwarding, and a chain of forwards would
// again order chunks behind each other through the whole-storage tracking.
void ring_gather(std::span<Tensor* const> ts, std::span<const int> order, int64_t base, int64_t len,
                 std::span<const TensorRef> full) {
  const int n = static_cast<int>(order.size());
  for (int c = 0; c < n; ++c) {
    const Part p = part(len, n, c);
    if (p.count == 0) continue;
    for (int h = 0; h < n; ++h) {  // starting with the owner's own copy, then around the ring
      Tensor& to = *ts[static_cast<size_t>(order[static_cast<size_t>((c + h) % n)])];
      send(*full[static_cast<size_t>(c)], 0, to, base + p.offset, p.count);
    }
  }
}

std::vector<int> rotated(int n, int first) {
  std::vector<int> order(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) order[static_cast<size_t>(i)] = (first + i) % n;
  return order;
}

// Binomial tree reduce onto order[0]: at distance d = 1, 2, 4 ... position i (a multiple of 2d)
// receives position i + d's partial into a temporary and reduces its own partial into it; only the
// root's tensor is written (MPI's reduce leaves the others as they were).
void tree_reduce(std::span<Tensor* const> ts, std::span<const int> order, Reduction r) {
  const int n = static_cast<int>(order.size());
  const int64_t numel = ts[0]->shape.numel();
  std::vector<Tensor*> partial(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) partial[static_cast<size_t>(i)] = ts[static_cast<size_t>(order[static_cast<size_t>(i)])];
  std::vector<TensorRef> temps;
  for (int d = 1; d < n; d *= 2) {
    std::vector<std::pair<int, Tensor*>> received;
    for (int i = 0; i + d < n; i += 2 * d) {
      Tensor& dst = *partial[static_cast<size_t>(i)];
      Tensor& from = *partial[static_cast<size_t>(i + d)];
      if (peer_readable(dst.device(), from.device())) {
        received.emplace_back(i, &from);  // reduced below straight from where it lies
        continue;
      }
      temps.push_back(temp(dst, dst.device(), numel));
      send(from, 0, *temps.back(), 0, numel);
      received.emplace_back(i, temps.back().get());
    }
    for (auto [i, recv] : received) {
      Tensor& own = *partial[static_cast<size_t>(i)];
      if (i == 0) {
        combine(r.combine, own, 0, *recv, 0, own, 0, numel);
      } else {
        temps.push_back(temp(own, own.device(), numel));
        combine(r.combine, *recv, 0, own, 0, *temps.back(), 0, numel);
        partial[static_cast<size_t>(i)] = temps.back().get();
      }
    }
  }
  if (r.average) divide(*partial[0], 0, numel, n);
}

// Binomial tree broadcast from order[0]: the largest distance first, so every copy's source is
// already complete.
void tree_broadcast(std::span<Tensor* const> ts, std::span<const int> order) {
  const int n = static_cast<int>(order.size());
  const int64_t numel = ts[0]->shape.numel();
  int top = 1;
  while (top * 2 < n) top *= 2;
  for (int d = top; d >= 1; d /= 2)
    for (int i = 0; i + d < n; i += 2 * d)
      send(*ts[static_cast<size_t>(order[static_cast<size_t>(i)])], 0,
           *ts[static_cast<size_t>(order[static_cast<size_t>(i + d)])], 0, numel);
}

// Everything onto the first tensor (all receives at once, then the reductions one by one), then a
// copy back to each: the reduce-then-broadcast of the chapter's from-scratch version.
void naive_allreduce(std::span<Tensor* const> ts, Reduction r) {
  const int n = static_cast<int>(ts.size());
  const int64_t numel = ts[0]->shape.numel();
  Tensor& root = *ts[0];
  std::vector<TensorRef> received;
  for (int i = 1; i < n; ++i) {
    received.push_back(temp(root, root.device(), numel));
    send(*ts[static_cast<size_t>(i)], 0, *received.back(), 0, numel);
  }
  for (TensorRef& recv : received) combine(r.combine, root, 0, *recv, 0, root, 0, numel);
  if (r.average) divide(root, 0, numel, n);
  for (int i = 1; i < n; ++i) send(root, 0, *ts[static_cast<size_t>(i)], 0, numel);
}

// Slices of at least this many bytes: below twice this one device reduces the whole tensor (a slice
// per device would cost more in ops and cross-device waits than it saves). Measured: docs/BENCHMARKS.md.
constexpr uint64_t kMinDirectSliceBytes = 64u << 10;

// One COMBINE op on `on`'s comm queue over elements [off, off + count): ins[0] op ins[1] op ... written
// to every one of outs, as a part of the partitioned write `parts`.
void combine_part(Tensor& on, std::span<Tensor* const> ins, std::span<Tensor* const> outs, int64_t off, int64_t count,
                  const Reduction& r, bool average, int n, std::vector<Engine::Part>& parts) {
  OpBuilder k("allreduce_direct", BRAID_KOP_COMBINE);
  k.operand(&on, "out");  // the op's device; the others are peers it reads and writes in place
  for (Tensor* t : ins) k.add_input_view(*t, flat_view(*t, off, count));
  k.require_kernel(on.dtype);
  k.call().i[0] = r.combine;
  k.call().i[1] = average ? 1 : 0;
  k.call().f[0] = n;
  for (Tensor* t : outs) k.add_inplace_output(*t, flat_view(*t, off, count));
  parts.push_back(k.to_part(on.device().comm));
}

// Every device reduces its slice of all n tensors, reading them where they lie, and writes the result
// into that slice of every tensor: one pass over memory, with the devices' slices written at once (a
// partitioned write; the engine would otherwise order the writers of one tensor one after another).
// With at most 6 tensors (the kernel's inputs) and 4 (its outputs) a slice is one op; beyond that it
// is reduced into its own device's tensor in steps, then copied to the others four at a time.
void direct_allreduce(std::span<Tensor* const> ts, Reduction r) {
  const int n = static_cast<int>(ts.size());
  const int64_t numel = ts[0]->shape.numel();
  const uint64_t bytes = ts[0]->bytes();
  const int slices = static_cast<int>(std::clamp<uint64_t>(bytes / kMinDirectSliceBytes, 1, static_cast<uint64_t>(n)));
  std::vector<Engine::Part> parts;
  for (int d = 0; d < slices; ++d) {
    const Part p = part(numel, slices, d);
    if (p.count == 0) continue;
    Tensor& own = *ts[static_cast<size_t>(d)];
    std::vector<Tensor*> others;  // own first: it is both an input and the first output
    others.push_back(&own);
    for (Tensor* t : ts)
      if (t != &own) others.push_back(t);
    const size_t kIn = BRAID_KERNEL_MAX_INPUTS, kOut = BRAID_KERNEL_MAX_OUTPUTS;
    if (others.size() <= kIn) {
      const size_t first_outs = std::min(others.size(), kOut);
      combine_part(own, others, std::span(others).first(first_outs), p.offset, p.count, r, r.average, n, parts);
      for (size_t o = first_outs; o < others.size(); o += kOut) {
        Tensor* src = &own;
        combine_part(own, {&src, 1}, std::span(others).subspan(o, std::min(kOut, others.size() - o)), p.offset, p.count,
                     r, false, n, parts);
      }
      continue;
    }
    size_t next = std::min(others.size(), kIn);
    Tensor* self = &own;
    combine_part(own, std::span(others).first(next), {&self, 1}, p.offset, p.count, r, false, n, parts);
    while (next < others.size()) {
      std::vector<Tensor*> step{&own};
      const size_t take = std::min(others.size() - next, kIn - 1);
      step.insert(step.end(), others.begin() + static_cast<std::ptrdiff_t>(next),
                  others.begin() + static_cast<std::ptrdiff_t>(next + take));
      next += take;
      combine_part(own, step, {&self, 1}, p.offset, p.count, r, r.average && next == others.size(), n, parts);
    }
    for (size_t o = 1; o < others.size(); o += kOut)
      combine_part(own, {&self, 1}, std::span(others).subspan(o, std::min(kOut, others.size() - o)), p.offset, p.count,
                   r, false, n, parts);
  }
  std::vector<Storage*> storages;
  for (Tensor* t : ts) storages.push_back(t->storage.get());
  ts[0]->ctx->engine->push_partitioned(storages, std::move(parts), ts[0]->device().comm, "allreduce_join");
}

}  // namespace

// Whether DIRECT can run over these tensors: every device reads every other's memory and has the
// COMBINE kernel for their dtype.
bool direct_possible(std::span<Tensor* const> ts) {
  for (Tensor* t : ts)
    if (!peer_readable(ts[0]->device(), t->device()) || !t->device().supports(BRAID_KOP_COMBINE, t->dtype))
      return false;
  return true;
}

Reduction make_reduction(const braid_collective_op& op, braid_dtype dtype, const char* name) {
  Reduction r;
  switch (enum_int(op)) {
    case BRAID_COLLECTIVE_SUM: r.combine = BRAID_BINARY_ADD; break;
    case BRAID_COLLECTIVE_PROD: r.combine = BRAID_BINARY_MUL; break;
    case BRAID_COLLECTIVE_MAX: r.combine = BRAID_BINARY_MAXIMUM; break;
    case BRAID_COLLECTIVE_MIN: r.combine = BRAID_BINARY_MINIMUM; break;
    case BRAID_COLLECTIVE_AVG:
      if (!dtype_is_float(dtype))
        fail(BRAID_ERR_DTYPE, name, ": AVG needs float32 or float64, not ", dtype_name(dtype));
      r.combine = BRAID_BINARY_ADD;
      r.average = true;
      break;
    default: fail(BRAID_ERR_INVALID_ARGUMENT, name, ": invalid braid_collective_op ", enum_int(op));
  }
  if (!dtype_is_float(dtype) && !dtype_is_int(dtype))
    fail(BRAID_ERR_DTYPE, name, ": no ", dtype_name(dtype),
         " reduction (float32, float64, int32, int64: a storage type has no arithmetic; cast it first)");
  return r;
}

void check_count(int32_t count, const char* name) {
  if (count <= 0) fail(BRAID_ERR_INVALID_ARGUMENT, name, ": count must be positive, not ", count);
}

std::vector<Tensor*> checked_group(int32_t count, const braid_tensor* tensors, const char* name) {
  check_count(count, name);
  if (tensors == nullptr) fail(BRAID_ERR_INVALID_ARGUMENT, name, ": tensors is NULL");
  std::vector<Tensor*> ts;
  ts.reserve(static_cast<size_t>(count));
  for (int32_t i = 0; i < count; ++i) {
    Tensor& t = checked_tensor(tensors[i], cat("tensors[", i, "]").c_str());
    if (!ts.empty()) {
      const Tensor& first = *ts[0];
      if (t.ctx != first.ctx) fail(BRAID_ERR_INVALID_ARGUMENT, name, ": tensors[", i, "] belongs to another context");
      if (t.dtype != first.dtype)
        fail(BRAID_ERR_DTYPE, name, ": tensors[", i, "] is ", dtype_name(t.dtype), ", tensors[0] ",
             dtype_name(first.dtype));
      if (!(t.shape == first.shape))
        fail(BRAID_ERR_SHAPE, name, ": tensors[", i, "] has shape ", t.shape.str(), ", tensors[0] ", first.shape.str());
      for (const Tensor* o : ts)
        if (o->storage == t.storage)
          fail(BRAID_ERR_INVALID_ARGUMENT, name, ": tensors[", i, "] shares its storage with an earlier tensor");
    }
    ts.push_back(&t);
  }
  return ts;
}

braid_allreduce_algorithm choose_allreduce(std::span<Tensor* const> ts, uint64_t bytes) {
  if (braid_allreduce_algorithm a = ts[0]->ctx->allreduce_override; a != BRAID_ALLREDUCE_AUTO) return a;
  // Devices that read each other's memory (the CPU backend's) have no links to keep busy: what costs
  // is the bytes each kernel reads and writes. DIRECT reads every tensor once and writes it once, in
  // one pass, with the devices' slices at once. Measured (braid-bench allreduce, docs/BENCHMARKS.md).
  if (direct_possible(ts)) return BRAID_ALLREDUCE_DIRECT;
  // Small messages are latency-bound: the tree takes log2(n) rounds of whole-tensor copies, the ring
  // 2(n - 1) rounds of 1/n of it. Large ones are bandwidth-bound: the ring moves 2(n-1)/n of the data
  // through each device and spreads the reductions over all of them. Measured crossover on CPU
  // devices: docs/BENCHMARKS.md (braid-bench allreduce).
  if (ts.size() <= 2 ? bytes < (64u << 10) : bytes < (256u << 10)) return BRAID_ALLREDUCE_TREE;
  return BRAID_ALLREDUCE_RING;
}

void allreduce(std::span<Tensor* const> ts, Reduction r, braid_allreduce_algorithm algorithm) {
  const int n = static_cast<int>(ts.size());
  const int64_t numel = ts[0]->shape.numel();
  if (numel == 0) return;
  if (n == 1) {
    return;  // the reduction of one tensor is itself (AVG divides by 1)
  }
  if (algorithm == BRAID_ALLREDUCE_AUTO) algorithm = choose_allreduce(ts, ts[0]->bytes());
  const std::vector<int> order = rotated(n, 0);
  Engine::PushUnit unit(*ts[0]->ctx->engine);  // one op to every other thread's pushes (collectives.h)
  switch (algorithm) {
    case BRAID_ALLREDUCE_NAIVE: naive_allreduce(ts, r); break;
    case BRAID_ALLREDUCE_DIRECT:
      if (!direct_possible(ts))
        fail(BRAID_ERR_UNSUPPORTED,
             "allreduce: DIRECT needs devices that read each other's memory and have the "
             "COMBINE kernel for ",
             dtype_name(ts[0]->dtype), " (the CPU backend's devices)");
      direct_allreduce(ts, r);
      break;
    case BRAID_ALLREDUCE_TREE:
      tree_reduce(ts, order, r);
      tree_broadcast(ts, order);
      break;
    case BRAID_ALLREDUCE_RING: {
      std::vector<TensorRef> full = ring_reduce_scatter(ts, order, 0, numel, r);
      ring_gather(ts, order, 0, numel, full);
      break;
    }
    case BRAID_ALLREDUCE_BIRING: {
      // Half of the elements go round one way, half the other, so each link carries traffic both
      // ways. Both reduce-scatters are pushed before either gather: a gather writes the tensors the
      // other ring's reduce-scatter still reads.
      std::vector<int> reverse(order.rbegin(), order.rend());
      const int64_t half = numel / 2;
      std::vector<TensorRef> a = ring_reduce_scatter(ts, order, 0, half, r);
      std::vector<TensorRef> b = ring_reduce_scatter(ts, reverse, half, numel - half, r);
      ring_gather(ts, order, 0, half, a);
      ring_gather(ts, reverse, half, numel - half, b);
      break;
    }
    default: fail(BRAID_ERR_INVALID_ARGUMENT, "allreduce: invalid braid_allreduce_algorithm ", enum_int(algorithm));
  }
}

void reduce(std::span<Tensor* const> ts, int32_t root, Reduction r) {
  if (ts[0]->shape.numel() == 0 || ts.size() == 1) return;
  Engine::PushUnit unit(*ts[0]->ctx->engine);
  tree_reduce(ts, rotated(static_cast<int>(ts.size()), root), r);
}

void broadcast(std::span<Tensor* const> ts, int32_t root) {
  if (ts[0]->shape.numel() == 0 || ts.size() == 1) return;
  Engine::PushUnit unit(*ts[0]->ctx->engine);
  tree_broadcast(ts, rotated(static_cast<int>(ts.size()), root));
}

void all_gather(std::span<Tensor* const> ins, std::span<Tensor* const> outs) {
  const int64_t numel = ins[0]->shape.numel();
  Engine::PushUnit unit(*ins[0]->ctx->engine);
  for (size_t c = 0; c < ins.size(); ++c)
    for (size_t h = 0; h < outs.size(); ++h) {
      Tensor& to = *outs[(c + h) % outs.size()];
      send(*ins[c], 0, to, static_cast<int64_t>(c) * numel, numel);
    }
}

void reduce_scatter(std::span<Tensor* const> ins, std::span<Tensor* const> outs, Reduction r) {
  const int n = static_cast<int>(ins.size());
  const int64_t numel = ins[0]->shape.numel();
  if (numel == 0) return;
  Engine::PushUnit unit(*ins[0]->ctx->engine);
  if (n == 1) {
    send(*ins[0], 0, *outs[0], 0, numel);
    return;
  }
  ring_reduce_scatter(ins, rotated(n, 0), 0, numel, r, outs);
}

}  // namespace braid::parallel
