// Trainer (abi/braid.h): data-parallel training over parameter replicas: bucketed gradient
// allreduce that overlaps backward, then the optimizer on every replica. See docs/PARALLEL.md.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "autograd/tape.h"
#include "checkpoint/checkpoint.h"
#include "context/context.h"
#include "context/recording.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/handle_pool.h"
#include "engine/storage.h"
#include "ops/call.h"
#include "ops/copy.h"
#include "ops/op_builder.h"
#include "ops/params.h"
#include "parallel/collectives.h"
#include "parallel/cross_process.h"
#include "parallel/optimizer.h"
#include "tensor/host_copy.h"
#include "tensor/tensor.h"

using namespace braid;
using namespace braid::parallel;

struct braid_trainer_t {
  std::atomic<int32_t> refs{1};
  int32_t replicas = 0, count = 0;  // params is replicas x count, replica-major
  std::vector<TensorRef> params;
  std::vector<OptimizerState> states;  // one per entry of params
  braid_trainer_options options{};
  // Parameter indices per bucket, in the order the buckets are reduced (the last parameters first:
  // backward writes their gradients first).
  std::vector<std::vector<int32_t>> buckets;
  // Per entry of params: its gradient's storage and version when the trainer last looked, and whether
  // something wrote the gradient since the last update (Gluon's fresh_grad). Backward's writes bump the
  // version (engine/storage.h); the trainer's own allreduce does too, so it looks again right after.
  struct GradSeen {
    std::weak_ptr<const Storage> storage;  // weak: identity without keeping it, and no address reuse
    uint32_t version = 0;
    bool fresh = false;
  };
  std::vector<GradSeen> seen;
  // What braid_trainer_allreduce_grads decided to skip, for the braid_trainer_update after it: a
  // gradient written between the two (clipping rewrites them all) must not make a parameter that no
  // backward reached look fresh again.
  std::optional<std::vector<uint8_t>> reduced_skip;
  // The processes to reduce across after the replicas (braid_trainer_set_process_group), or NULL.
  std::shared_ptr<CrossProcess> cross;

  // Where replica r of parameter p is (params, states, seen): in size_t, since r * count overflows
  // int32 for a caller's large counts (issue 31).
  size_t at(int32_t r, int32_t p) const {
    return static_cast<size_t>(r) * static_cast<size_t>(count) + static_cast<size_t>(p);
  }
  Tensor& param(int32_t r, int32_t p) { return *params[at(r, p)]; }
};

namespace {

using TrainerPool = HandlePool<braid_trainer_t>;

braid_trainer_t& checked_trainer(braid_trainer tr) { return TrainerPool::instance().checked(tr, "tr", "Trainer"); }

// The caller's braid_trainer_options, read as the caller's compiler laid it out. The optimizer inside
// it carries its own struct_size, and the fields after it (bucket_bytes, algorithm, flags) start
// where the caller's optimizer ends: so braid_optimizer_params may grow at its end in a later ABI
// without moving them for programs built before (docs/ABI.md, "Growing structs"). Every byte read is
// inside the caller's struct_size; a size that ends inside a field is refused as read_in_struct does.
// has_flags: whether the caller's struct has `flags` (ABI 1.6 and later).
braid_trainer_options read_trainer_options(const braid_trainer_options* in, bool& has_flags) {
  braid_trainer_options out = BRAID_TRAINER_OPTIONS_INIT;
  has_flags = in == nullptr;
  if (in == nullptr) return out;
  const uint32_t size = in->struct_size;
  constexpr size_t opt_at = offsetof(braid_trainer_options, optimizer);
  if (size < sizeof(uint32_t) || size > 4096 || (size > opt_at && size < opt_at + sizeof(uint32_t)))
    fail(BRAID_ERR_INVALID_ARGUMENT, "options->struct_size ", size,
         " is not a valid size; set it to sizeof the struct (BRAID_TRAINER_OPTIONS_INIT does)");
  if (size <= opt_at) return out;
  const auto* bytes = reinterpret_cast<const unsigned char*>(in);
  const uint32_t inner = in->optimizer.struct_size;
  if (inner < sizeof(uint32_t) || size < opt_at + inner)
    fail(BRAID_ERR_INVALID_ARGUMENT, "options->optimizer.struct_size ", inner, " does not fit options->struct_size ",
         size, "; set both with BRAID_TRAINER_OPTIONS_INIT");
  out.optimizer = checked_optimizer(&in->optimizer, "options->optimizer");
  // Where the caller's bucket_bytes is: right after its optimizer, aligned as a uint64_t.
  constexpr size_t tail_at = offsetof(braid_trainer_options, bucket_bytes);
  const size_t caller_tail_at = (opt_at + inner + alignof(uint64_t) - 1) / alignof(uint64_t) * alignof(uint64_t);
  struct Tail {
    size_t offset, size;
    void* to;
  };
  const Tail tail[] = {
      {offsetof(braid_trainer_options, bucket_bytes), sizeof out.bucket_bytes, &out.bucket_bytes},
      {offsetof(braid_trainer_options, algorithm), sizeof out.algorithm, &out.algorithm},
      {offsetof(braid_trainer_options, flags), sizeof out.flags, &out.flags},
  };
  for (const Tail& f : tail) {
    const size_t at = caller_tail_at + (f.offset - tail_at);
    if (size >= at + f.size)
      std::memcpy(f.to, bytes + at, f.size);
    else if (size > at)
      fail(BRAID_ERR_INVALID_ARGUMENT, "options->struct_size ", size,
           " ends inside a field, so it is the size of no version of the struct; set it to sizeof the struct "
           "(BRAID_TRAINER_OPTIONS_INIT does)");
    if (f.to == &out.flags) has_flags = size >= at + f.size;
  }
  return out;
}

void check_batch_size(double batch_size) {
  if (!(batch_size > 0) || !std::isfinite(batch_size))
    fail(BRAID_ERR_INVALID_ARGUMENT, "trainer: batch_size must be a positive number, not ", batch_size);
}

// A new reference to p's gradient buffer (checked at trainer_create: every parameter has one).
TensorRef grad_of(Tensor& p) {
  if (!p.ag || !p.ag->grad.get())
    fail(BRAID_ERR_INVALID_STATE, "trainer: a parameter's gradient was detached (braid_tensor_attach_grad)");
  return op::retain(p.ag->grad.get());
}

// Buckets of about `bytes` of consecutive parameters of one dtype, from the last parameter back.
std::vector<std::vector<int32_t>> make_buckets(braid_trainer_t& tr, uint64_t bytes) {
  std::vector<std::vector<int32_t>> buckets;
  uint64_t filled = 0;
  for (int32_t p = tr.count - 1; p >= 0; --p) {
    const Tensor& t = tr.param(0, p);
    const bool fits =
        !buckets.empty() && filled + t.bytes() <= bytes && tr.param(0, buckets.back().front()).dtype == t.dtype;
    if (!fits) {
      buckets.emplace_back();
      filled = 0;
    }
    buckets.back().push_back(p);
    filled += t.bytes();
  }
  return buckets;
}

// Looks at every gradient: one written since the last look is fresh (until the next update). A buffer
// not seen before (the first look, or one attached again) compares against its version when an update
// last used it or it was attached (Meta::grad_version_used), so a backward before this trainer was made
// counts, and a new zero buffer or one another trainer already used does not. With
// `after_own_write` the writes seen are the trainer's own (its allreduce), which make nothing fresh.
// Any write counts, not only backward's: a graph run that computes gradients, or zeros written on
// purpose (a replica with no rows this step).
void look_at_grads(braid_trainer_t& tr, bool after_own_write) {
  for (size_t i = 0; i < tr.params.size(); ++i) {
    Tensor& w = *tr.params[i];
    TensorRef g = grad_of(w);
    const std::shared_ptr<Storage>& s = g->storage;
    const uint32_t v = s->version.load(std::memory_order_relaxed);
    braid_trainer_t::GradSeen& seen = tr.seen[i];
    const bool same = !seen.storage.owner_before(s) && !s.owner_before(seen.storage) && !seen.storage.expired();
    if (!same) seen.fresh = false;
    const uint32_t before = same ? seen.version : w.ag->grad_version_used;
    // Nothing wrote the buffer since an update used it (this trainer's or another's): stale, whatever
    // this trainer saw before (versions only grow).
    if (!after_own_write && v == w.ag->grad_version_used)
      seen.fresh = false;
    else if (!after_own_write && v != before)
      seen.fresh = true;
    seen.storage = s;
    seen.version = v;
  }
}

// The parameters to skip this step: those whose gradient no backward wrote since the last update on
// any replica, when the options allow it (BRAID_TRAINER_IGNORE_STALE_GRAD); otherwise any stale
// gradient is refused, as Gluon's Trainer.step refuses it. A gradient fresh on some replicas and stale
// on others is refused either way: updating from it would apply the last step's gradient again, and
// skipping only some replicas would let them drift apart.
std::vector<uint8_t> stale_params(braid_trainer_t& tr) {
  look_at_grads(tr, false);
  const bool ignore = (tr.options.flags & BRAID_TRAINER_IGNORE_STALE_GRAD) != 0;
  std::vector<uint8_t> skip(static_cast<size_t>(tr.count), 0);
  for (int32_t p = 0; p < tr.count; ++p) {
    int32_t stale = 0, first_stale = -1;
    for (int32_t r = 0; r < tr.replicas; ++r)
      if (!tr.seen[tr.at(r, p)].fresh) {
        ++stale;
        if (first_stale < 0) first_stale = r;
      }
    if (stale == 0) continue;
    if (ignore && stale == tr.replicas) {
      skip[static_cast<size_t>(p)] = 1;
      continue;
    }
    fail(BRAID_ERR_INVALID_STATE, "the gradient of parameter ", p, " on ", tr.param(first_stale, p).device().id,
         " (replica ", first_stale, ") has not been written by backward since the last update",
         stale < tr.replicas ? ", while other replicas' were: each replica must run backward before a step"
         : ignore            ? ""
                             : "; set BRAID_TRAINER_IGNORE_STALE_GRAD in the options to skip parameters that "
                               "no replica used in this step");
  }
  return skip;
}

// Sums one bucket's gradients (one tensor per replica) over the replicas and, with a process group,
// over the processes: reduced onto replica 0, summed across the processes there, and copied back to
// every replica, so the network carries each bucket once per process, not once per device
// (docs/DISTRIBUTED.md, "Trainer").
void reduce_bucket(braid_trainer_t& tr, std::span<Tensor* const> group, Reduction sum) {
  if (!tr.cross) {
    allreduce(group, sum, tr.options.algorithm);
    return;
  }
  if (group.size() > 1) reduce(group, 0, sum);
  tr.cross->allreduce_sum(*group[0]);
  if (group.size() > 1) broadcast(group, 0);
}

void allreduce_grads(braid_trainer_t& tr, const std::vector<uint8_t>& skip) {
  if (tr.replicas == 1 && !tr.cross) return;
  const auto replicas = static_cast<size_t>(tr.replicas);
  for (const std::vector<int32_t>& all : tr.buckets) {
    std::vector<int32_t> bucket;
    for (int32_t p : all)
      if (!skip[static_cast<size_t>(p)]) bucket.push_back(p);
    if (bucket.empty()) continue;
    // The gradients of the bucket, replica by replica.
    std::vector<std::vector<TensorRef>> grads(replicas);
    for (int32_t r = 0; r < tr.replicas; ++r)
      for (int32_t p : bucket) grads[static_cast<size_t>(r)].push_back(grad_of(tr.param(r, p)));
    const Reduction sum = make_reduction(BRAID_COLLECTIVE_SUM, tr.param(0, bucket[0]).dtype, "trainer");
    if (bucket.size() == 1) {
      std::vector<Tensor*> group;
      for (auto& g : grads) group.push_back(g[0].get());
      reduce_bucket(tr, group, sum);
      continue;
    }
    // Several small gradients: one flat buffer per replica, so the bucket costs one collective's
    // latency instead of one per parameter. Packing and unpacking run on the comm queue too.
    int64_t total = 0;
    for (int32_t p : bucket) total += tr.param(0, p).shape.numel();
    std::vector<TensorRef> flat;
    std::vector<Tensor*> group;
    for (size_t r = 0; r < replicas; ++r) {
      Tensor& first = *grads[r][0];
      flat.push_back(
          new_tensor(*first.ctx, first.device(), first.dtype, Shape::of(std::span<const int64_t>(&total, 1))));
      int64_t at = 0;
      for (TensorRef& g : grads[r]) {
        push_range_copy("bucket_pack", *g, 0, *flat.back(), at, g->shape.numel(), &first.device().comm);
        at += g->shape.numel();
      }
      group.push_back(flat.back().get());
    }
    reduce_bucket(tr, group, sum);
    for (size_t r = 0; r < replicas; ++r) {
      int64_t at = 0;
      for (TensorRef& g : grads[r]) {
        push_range_copy("bucket_unpack", *flat[r], at, *g, 0, g->shape.numel(), &g->device().comm);
        at += g->shape.numel();
      }
    }
  }
  look_at_grads(tr, true);
}

// The bytes of its storage a tensor's view spans (strides are never negative).
std::pair<uint64_t, uint64_t> extent(const Tensor& t) {
  const braid_buffer_view v = t.view();
  uint64_t last = 0;
  for (int d = 0; d < v.ndim; ++d)
    if (v.shape[d] == 0)
      return {v.byte_offset, v.byte_offset};
    else
      last += static_cast<uint64_t>(v.shape[d] - 1) * static_cast<uint64_t>(v.strides[d]);
  return {v.byte_offset, v.byte_offset + (last + 1) * dtype_size(v.dtype)};
}

// Two parameters of one replica over the same memory would have it updated twice per step, and the
// summed gradient would depend on how the buckets fall: refused, as PyTorch refuses a parameter
// listed twice.
void check_distinct(braid_trainer_t& tr) {
  for (int32_t r = 0; r < tr.replicas; ++r)
    for (int32_t p = 1; p < tr.count; ++p)
      for (int32_t q = 0; q < p; ++q) {
        const Tensor &a = tr.param(r, p), &b = tr.param(r, q);
        if (a.storage != b.storage) continue;
        const auto [a0, a1] = extent(a);
        const auto [b0, b1] = extent(b);
        if (a0 < b1 && b0 < a1)
          fail(BRAID_ERR_INVALID_ARGUMENT, "trainer_create: parameters ", q, " and ", p, " of replica ", r,
               " share memory (a parameter listed twice, or views of one tensor)");
      }
}

// The algorithm the step's allreduces will run, checked over every parameter before any runs: DIRECT
// (asked for, or chosen by BRAID_ALLREDUCE) over devices that cannot run it fails here, so a refused
// step changes no gradient (it failed after the first buckets were summed, and each retry summed
// them again).
void check_algorithm(braid_trainer_t& tr, const char* what) {
  if (tr.replicas == 1 || tr.cross) return;  // across processes: reduce and broadcast, no allreduce here
  for (int32_t p = 0; p < tr.count; ++p) {
    std::vector<Tensor*> group;
    for (int32_t r = 0; r < tr.replicas; ++r) group.push_back(&tr.param(r, p));
    braid_allreduce_algorithm a = tr.options.algorithm;
    if (a == BRAID_ALLREDUCE_AUTO) a = choose_allreduce(group, group[0]->bytes());
    if (a == BRAID_ALLREDUCE_DIRECT && !direct_possible(group))
      fail(BRAID_ERR_UNSUPPORTED, what,
           ": the DIRECT allreduce needs devices that read each other's memory and have "
           "its kernel (the CPU backend's); parameter ",
           p, " has replicas on ", group[0]->device().id, " and others");
  }
}

// Whether braid_trainer_allreduce_grads reduced the gradients and nothing has written them since (its
// own write is what look_at_grads saw last). Then they are sums already: reducing them again (a step
// after allreduce_grads, or allreduce_grads twice; Gluon would) would multiply them by the replicas.
bool reduced_and_unchanged(braid_trainer_t& tr) {
  if (!tr.reduced_skip) return false;
  for (size_t i = 0; i < tr.params.size(); ++i) {
    TensorRef g = grad_of(*tr.params[i]);
    const braid_trainer_t::GradSeen& seen = tr.seen[i];
    const bool same = !seen.storage.owner_before(g->storage) && !g->storage.owner_before(seen.storage);
    if (!same || g->storage->version.load(std::memory_order_relaxed) != seen.version) return false;
  }
  return true;
}

void update(braid_trainer_t& tr, double batch_size, const std::vector<uint8_t>& skip) {
  const double scale = tr.options.optimizer.rescale_grad / batch_size;
  for (int32_t r = 0; r < tr.replicas; ++r)
    for (int32_t p = 0; p < tr.count; ++p) {
      if (skip[static_cast<size_t>(p)]) continue;
      const size_t i = tr.at(r, p);
      Tensor& w = tr.param(r, p);
      TensorRef g = grad_of(w);
      apply_update(tr.options.optimizer, w, *g, tr.states[i], scale);
      tr.seen[i].fresh = false;
      w.ag->grad_version_used = g->storage->version.load(std::memory_order_relaxed);
    }
}

}  // namespace

namespace braid::parallel {
void trainer_set_cross_process(braid_trainer handle, std::shared_ptr<CrossProcess> cross) {
  braid_trainer_t& tr = checked_trainer(handle);
  if (cross) {
    if (tr.param(0, 0).ctx != cross->context())
      fail(BRAID_ERR_INVALID_ARGUMENT, "the trainer's parameters and the process group are of different contexts");
    // Every process starts from process 0's parameters (as PyTorch's DDP does when it is made), and
    // every replica from its replica 0 here.
    for (int32_t p = 0; p < tr.count; ++p) {
      cross->broadcast(tr.param(0, p), 0);
      if (tr.replicas > 1) {
        std::vector<Tensor*> group;
        for (int32_t r = 0; r < tr.replicas; ++r) group.push_back(&tr.param(r, p));
        broadcast(group, 0);
      }
    }
  }
  tr.cross = std::move(cross);
  tr.reduced_skip.reset();
}
}  // namespace braid::parallel

extern "C" {

BRAID_API braid_status braid_trainer_create(int32_t num_replicas, int32_t num_params, const braid_tensor* params,
                                            const braid_trainer_options* options, braid_trainer* out) {
  return guard("braid_trainer_create", [&] {
    require(out, "out");
    *out = nullptr;
    require(params, "params");
    if (num_replicas <= 0 || num_params <= 0)
      fail(BRAID_ERR_INVALID_ARGUMENT, "trainer_create: num_replicas and num_params must be positive");
    TrainerPool::Owned tr = TrainerPool::instance().make();
    bool has_flags = false;
    tr->options = read_trainer_options(options, has_flags);
    if (int32_t a = enum_int(tr->options.algorithm); a < 0 || a >= BRAID_ALLREDUCE_ALGORITHM_COUNT)
      fail(BRAID_ERR_INVALID_ARGUMENT, "trainer_create: invalid braid_allreduce_algorithm ", a);
    if (tr->options.bucket_bytes == 0) tr->options.bucket_bytes = uint64_t{1} << 20;
    // A program built before ABI 1.6 has no flags: it keeps running where a parameter no backward
    // reaches was updated with its unwritten gradient (now skipped). A gradient fresh on some
    // replicas only, which it silently applied again, is refused for it too.
    if (!has_flags) tr->options.flags = BRAID_TRAINER_IGNORE_STALE_GRAD;
    if (tr->options.flags & ~uint64_t{BRAID_TRAINER_IGNORE_STALE_GRAD})
      fail(BRAID_ERR_INVALID_ARGUMENT, "trainer_create: unknown bits in options->flags (", tr->options.flags, ")");
    tr->replicas = num_replicas;
    tr->count = num_params;
    for (int32_t p = 0; p < num_params; ++p) {
      std::vector<braid_tensor> replicas;
      for (int32_t r = 0; r < num_replicas; ++r) {
        // In size_t: r * num_params overflowed int32 for a caller's large counts (issue 31). Checked
        // here, so that a bad handle is named by its place in params, not in the group.
        const size_t i = static_cast<size_t>(r) * static_cast<size_t>(num_params) + static_cast<size_t>(p);
        (void)checked_tensor(params[i], cat("params[", i, "]").c_str());
        replicas.push_back(params[i]);
      }
      const std::vector<Tensor*> group = checked_group(num_replicas, replicas.data(), "trainer_create");
      require_float(*group[0], "trainer_create", "a parameter");
      for (int32_t r = 1; r < num_replicas; ++r)  // replicas on one device would do each step twice there
        for (int32_t s = 0; s < r; ++s)
          if (&group[size_t(r)]->device() == &group[size_t(s)]->device())
            fail(BRAID_ERR_INVALID_ARGUMENT, "trainer_create: replicas ", s, " and ", r, " of parameter ", p,
                 " are both on ", group[size_t(r)]->device().id, " (one replica per device)");
      for (Tensor* t : group)
        if (!t->ag || !t->ag->grad.get())
          fail(BRAID_ERR_INVALID_STATE, "trainer_create: parameter ", p,
               " has no gradient attached (braid_tensor_attach_grad)");
    }
    const auto total = static_cast<size_t>(num_replicas) * static_cast<size_t>(num_params);
    for (size_t i = 0; i < total; ++i) {
      Tensor& t = checked_tensor(params[i], cat("params[", i, "]").c_str());
      t.refs.fetch_add(1, std::memory_order_relaxed);
      tr->params.emplace_back(&t);
    }
    check_distinct(*tr);
    if (tr->options.algorithm == BRAID_ALLREDUCE_DIRECT) check_algorithm(*tr, "trainer_create");
    tr->states.resize(total);
    tr->seen.resize(total);  // nothing seen: the first look compares against the versions at attach
    // The replicas start equal: replica 0's values are broadcast to the others, as PyTorch's
    // DistributedDataParallel broadcasts rank 0's parameters when it is built (replicas initialised
    // apart would train apart, silently).
    if (num_replicas > 1) {
      const autograd::PauseRecording pause(tr->params[0]->ctx->recording);  // collectives are not recorded
      for (int32_t p = 0; p < num_params; ++p) {
        std::vector<Tensor*> replicas;
        for (int32_t r = 0; r < num_replicas; ++r)
          replicas.push_back(
              tr->params[static_cast<size_t>(r) * static_cast<size_t>(num_params) + static_cast<size_t>(p)].get());
        try {
          broadcast(replicas, 0);
        } catch (const Error& e) {
          fail(e.status(), "trainer_create: broadcasting replica 0 of parameter ", p, ": ", e.what());
        }
      }
    }
    tr->buckets = make_buckets(*tr, tr->options.bucket_bytes);
    *out = TrainerPool::instance().publish(std::move(tr));
  });
}

BRAID_API braid_status braid_trainer_retain(braid_trainer tr) {
  return guard("braid_trainer_retain", [&] { checked_trainer(tr).refs.fetch_add(1); });
}

BRAID_API braid_status braid_trainer_release(braid_trainer tr) {
  return guard("braid_trainer_release", [&] {
    if (checked_trainer(tr).refs.fetch_sub(1, std::memory_order_acq_rel) == 1) (void)TrainerPool::instance().retire(tr);
  });
}

BRAID_API braid_status braid_trainer_step(braid_trainer tr, double batch_size) {
  return guard("braid_trainer_step", [&] {
    braid_trainer_t& t = checked_trainer(tr);
    // Every check before the allreduce: a refused step changes nothing.
    check_batch_size(batch_size);
    check_step(t.options.optimizer, t.options.optimizer.rescale_grad / batch_size, "trainer_step");
    check_algorithm(t, "trainer_step");
    if (reduced_and_unchanged(t)) {
      update(t, batch_size, *t.reduced_skip);  // allreduce_grads did the reduction
    } else {
      const std::vector<uint8_t> skip = stale_params(t);
      allreduce_grads(t, skip);
      update(t, batch_size, skip);
    }
    t.reduced_skip.reset();
  });
}

BRAID_API braid_status braid_trainer_allreduce_grads(braid_trainer tr) {
  return guard("braid_trainer_allreduce_grads", [&] {
    braid_trainer_t& t = checked_trainer(tr);
    check_algorithm(t, "trainer_allreduce_grads");
    if (reduced_and_unchanged(t)) return;  // already sums
    std::vector<uint8_t> skip = stale_params(t);
    allreduce_grads(t, skip);
    // The sums are not new gradients: a backward on some replicas only before the step must be refused
    // as mixed, not reduced again into the sums the others still hold.
    for (int32_t r = 0; r < t.replicas; ++r)
      for (int32_t p = 0; p < t.count; ++p)
        if (!skip[static_cast<size_t>(p)]) t.seen[t.at(r, p)].fresh = false;
    t.reduced_skip = std::move(skip);
  });
}

BRAID_API braid_status braid_trainer_update(braid_trainer tr, double batch_size) {
  return guard("braid_trainer_update", [&] {
    braid_trainer_t& t = checked_trainer(tr);
    check_batch_size(batch_size);
    check_step(t.options.optimizer, t.options.optimizer.rescale_grad / batch_size, "trainer_update");
    update(t, batch_size, t.reduced_skip ? *t.reduced_skip : stale_params(t));
    t.reduced_skip.reset();
  });
}

BRAID_API braid_status braid_trainer_set_learning_rate(braid_trainer tr, double learning_rate) {
  return guard("braid_trainer_set_learning_rate", [&] {
    braid_trainer_t& t = checked_trainer(tr);
    check_learning_rate(learning_rate, "trainer_set_learning_rate");
    t.options.optimizer.learning_rate = learning_rate;
  });
}

BRAID_API braid_status braid_trainer_learning_rate(braid_trainer tr, double* out) {
  return guard("braid_trainer_learning_rate", [&] {
    require(out, "out");
    *out = checked_trainer(tr).options.optimizer.learning_rate;
  });
}

BRAID_API braid_status braid_trainer_save_states(braid_trainer tr, const char* path) {
  return guard("braid_trainer_save_states", [&] {
    braid_trainer_t& t = checked_trainer(tr);
    if (!path) fail(BRAID_ERR_INVALID_ARGUMENT, "path is NULL");
    // Replica 0's state: every replica applies the same update to the same value, so they are equal.
    Context& ctx = *t.param(0, 0).ctx;
    Device& host = t.param(0, 0).device();
    const int32_t kind = t.options.optimizer.kind;
    const double lr = t.options.optimizer.learning_rate;
    std::vector<int64_t> steps;
    for (int32_t p = 0; p < t.count; ++p) steps.push_back(t.states[t.at(0, p)].step);
    const int64_t one = 1, n = t.count;
    std::vector<TensorRef> own;
    own.push_back(tensor_from_host(ctx, host, BRAID_INT32, Shape::of({&one, 1}), &kind));
    own.push_back(tensor_from_host(ctx, host, BRAID_FLOAT64, Shape::of({&one, 1}), &lr));
    own.push_back(tensor_from_host(ctx, host, BRAID_INT64, Shape::of({&n, 1}), steps.data()));
    std::vector<std::string> names{"optimizer", "learning_rate", "step"};
    std::vector<Tensor*> tensors{own[0].get(), own[1].get(), own[2].get()};
    for (int32_t p = 0; p < t.count; ++p) {
      const OptimizerState& st = t.states[t.at(0, p)];
      const std::pair<const char*, const TensorRef*> parts[] = {{"momentum", &st.momentum}, {"m", &st.m}, {"v", &st.v}};
      for (const auto& [name, ref] : parts)
        if (ref->get()) {
          names.push_back(cat(name, ".", p));
          tensors.push_back(ref->get());
        }
    }
    checkpoint::save_tensors(path, names, tensors);
  });
}

BRAID_API braid_status braid_trainer_load_states(braid_trainer tr, const char* path) {
  return guard("braid_trainer_load_states", [&] {
    braid_trainer_t& t = checked_trainer(tr);
    if (!path) fail(BRAID_ERR_INVALID_ARGUMENT, "path is NULL");
    Tensor& first = t.param(0, 0);
    Context& ctx = *first.ctx;
    const std::vector<std::string> present = checkpoint::tensor_names(path);
    auto has = [&](const std::string& n) { return std::find(present.begin(), present.end(), n) != present.end(); };
    const std::vector<std::string> head{"optimizer", "learning_rate", "step"};
    for (const std::string& n : head)
      if (!has(n)) fail(BRAID_ERR_INVALID_ARGUMENT, path, " is not a Trainer's states file (no \"", n, "\")");
    std::vector<TensorRef> h = checkpoint::load_tensors(ctx, first.device(), path, head);
    int32_t kind = 0;
    double lr = 0;
    if (h[0]->dtype != BRAID_INT32 || h[0]->shape.numel() != 1 || h[1]->dtype != BRAID_FLOAT64 ||
        h[1]->shape.numel() != 1 || h[2]->dtype != BRAID_INT64)
      fail(BRAID_ERR_INVALID_ARGUMENT, path, " is not a Trainer's states file (its header tensors are malformed)");
    copy_to_host(*h[0], &kind, sizeof kind);
    copy_to_host(*h[1], &lr, sizeof lr);
    if (kind != t.options.optimizer.kind)
      fail(BRAID_ERR_INVALID_ARGUMENT, path, " holds the states of optimizer kind ", kind, "; this trainer's is ",
           static_cast<int32_t>(t.options.optimizer.kind));
    if (h[2]->shape.numel() != t.count)
      fail(BRAID_ERR_INVALID_ARGUMENT, path, " holds the states of ", h[2]->shape.numel(),
           " parameters; this trainer has ", t.count);
    check_learning_rate(lr, "trainer_load_states");
    std::vector<int64_t> steps(static_cast<size_t>(t.count));
    copy_to_host(*h[2], steps.data(), steps.size() * sizeof(int64_t));
    // The state each parameter must have: momentum for SGD with momentum, both moments for Adam, once
    // it has stepped (a state that is missing would silently start again).
    const bool adam = t.options.optimizer.kind == BRAID_OPTIMIZER_ADAM;
    const bool momentum = !adam && t.options.optimizer.momentum != 0;
    std::vector<std::string> names;
    std::vector<std::pair<int32_t, int>> what;  // (parameter, 0 momentum / 1 m / 2 v) of each name
    for (int32_t p = 0; p < t.count; ++p) {
      const int64_t step = steps[static_cast<size_t>(p)];
      if (step < 0) fail(BRAID_ERR_INVALID_ARGUMENT, path, ": parameter ", p, " has a step count of ", step);
      const char* parts[] = {"momentum", "m", "v"};
      for (int i = 0; i < 3; ++i) {
        const std::string n = cat(parts[i], ".", p);
        const bool needed = step > 0 && (i == 0 ? momentum : adam);
        if (has(n)) {
          names.push_back(n);
          what.emplace_back(p, i);
        } else if (needed) {
          fail(BRAID_ERR_INVALID_ARGUMENT, path, " lacks \"", n, "\", which parameter ", p, " has after ", step,
               " steps");
        }
      }
    }
    // Everything is read and checked before the trainer changes: one read of the file per replica.
    std::vector<OptimizerState> loaded(t.states.size());
    for (int32_t r = 0; r < t.replicas; ++r) {
      std::vector<TensorRef> v = checkpoint::load_tensors(ctx, t.param(r, 0).device(), path, names);
      for (size_t j = 0; j < names.size(); ++j) {
        const auto [p, i] = what[j];
        Tensor& w = t.param(r, p);
        if (&w.device() != &t.param(r, 0).device())  // a replica's parameters on several devices
          v[j] = std::move(checkpoint::load_tensors(ctx, w.device(), path, std::span(&names[j], 1))[0]);
        if (v[j]->dtype != w.dtype || !(v[j]->shape == w.shape))
          fail(BRAID_ERR_INVALID_ARGUMENT, path, ": \"", names[j], "\" is ", dtype_name(v[j]->dtype), " ",
               v[j]->shape.str(), ", parameter ", p, " is ", dtype_name(w.dtype), " ", w.shape.str());
        OptimizerState& st = loaded[t.at(r, p)];
        (i == 0 ? st.momentum : i == 1 ? st.m : st.v) = std::move(v[j]);
      }
      for (int32_t p = 0; p < t.count; ++p) loaded[t.at(r, p)].step = steps[static_cast<size_t>(p)];
    }
    t.states = std::move(loaded);
    t.options.optimizer.learning_rate = lr;
  });
}

}  // extern "C"
