// The C ABI of splitting, replication and collectives (abi/braid.h, "parallel" section).
#include <cmath>
#include <numeric>
#include <vector>

#include "autograd/tape.h"
#include "context/context.h"
#include "core/dtype.h"
#include "core/error.h"
#include "ops/call.h"
#include "ops/copy.h"
#include "ops/op_builder.h"
#include "ops/params.h"
#include "parallel/collectives.h"
#include "parallel/split.h"
#include "tensor/tensor.h"

using namespace braid;
using namespace braid::parallel;

namespace {

braid_collective_options collective_options(const braid_collective_options* o) {
  return read_params<braid_collective_options>(o, BRAID_COLLECTIVE_OPTIONS_INIT, "options");
}

// New tensors of `shape` on each input's device, handed out through outs only when all exist.
std::vector<TensorRef> outputs_like(std::span<Tensor* const> ins, const Shape& shape) {
  std::vector<TensorRef> outs;
  for (Tensor* t : ins) outs.push_back(new_tensor(*t->ctx, t->device(), t->dtype, shape));
  return outs;
}

void hand_out(std::vector<TensorRef>& made, braid_tensor* outs) {
  for (size_t i = 0; i < made.size(); ++i) outs[i] = made[i].release();
}

std::vector<Tensor*> raw(std::vector<TensorRef>& refs) {
  std::vector<Tensor*> ts;
  for (auto& r : refs) ts.push_back(r.get());
  return ts;
}

int32_t checked_root(int32_t root, int32_t count, const char* name) {
  if (root < 0 || root >= count) fail(BRAID_ERR_INVALID_ARGUMENT, name, ": root ", root, " is not in [0, ", count, ")");
  return root;
}

// Whether an op reading x now is recorded by autograd: then split_and_load and replicate push ops it
// records (slices, device copies) instead of raw copies, at the price of an extra copy per part.
bool recorded(const Tensor& x) { return autograd::requires_grad(x) && x.ctx->recording.any() && x.ctx->recording.on(); }

}  // namespace

extern "C" {

BRAID_API braid_status braid_split_sizes(int64_t total, int32_t count, const double* weights, int64_t* sizes) {
  return guard("braid_split_sizes", [&] {
    // The count first: an empty list's data() is NULL in C++, and "count must be positive" is the news.
    check_count(count, "split_sizes");
    require(sizes, "sizes");
    const std::vector<int64_t> s = split_sizes(total, count, weights);
    std::copy(s.begin(), s.end(), sizes);
  });
}

BRAID_API braid_status braid_split_and_load(braid_tensor x, int32_t count, const braid_device* devices,
                                            const double* weights, braid_tensor* outs) {
  return guard("braid_split_and_load", [&] {
    check_count(count, "split_and_load");
    require(outs, "outs");
    require(devices, "devices");
    Tensor& a = checked_tensor(x, "x");
    if (a.shape.ndim < 1) fail(BRAID_ERR_SHAPE, "split_and_load: x must have a batch axis (ndim >= 1)");
    const std::vector<int64_t> sizes = split_sizes(a.shape[0], count, weights);
    const int64_t row = a.shape[0] == 0 ? 0 : a.shape.numel() / a.shape[0];
    std::vector<TensorRef> made;
    int64_t first = 0;
    for (int32_t i = 0; i < count; ++i) {
      Device& d = a.ctx->device(devices[i], cat("devices[", i, "]").c_str());
      Shape s = a.shape;
      s[0] = sizes[static_cast<size_t>(i)];
      if (recorded(a)) {
        // Ops autograd records (a slice, then a copy to the device), so the gradient of every part
        // reaches x, as through MXNet's split_and_load (slice_axis, as_in_context) and PyTorch's
        // scatter. The raw copy below is not recorded: only the parts on x's own device got one.
        std::vector<int64_t> begin(static_cast<size_t>(a.shape.ndim), 0), step(begin.size(), 1);
        std::vector<int64_t> end(a.shape.dims.begin(), a.shape.dims.begin() + a.shape.ndim);
        begin[0] = first, end[0] = first + s[0];
        const TensorRef rows = op::run(entry::slice, &a, begin.data(), end.data(), step.data());
        made.push_back(op::run(entry::copy, rows.get(), devices[i]));
      } else {
        made.push_back(new_tensor(*a.ctx, d, a.dtype, s));
        push_range_copy("split_and_load", a, first * row, *made.back(), 0, s.numel());
      }
      first += s[0];
    }
    hand_out(made, outs);
  });
}

BRAID_API braid_status braid_replicate(braid_tensor x, int32_t count, const braid_device* devices, braid_tensor* outs) {
  return guard("braid_replicate", [&] {
    check_count(count, "replicate");
    require(outs, "outs");
    require(devices, "devices");
    Tensor& a = checked_tensor(x, "x");
    std::vector<TensorRef> made;
    for (int32_t i = 0; i < count; ++i) {
      Device& d = a.ctx->device(devices[i], cat("devices[", i, "]").c_str());
      if (recorded(a)) {  // as split_and_load's parts
        made.push_back(op::run(entry::copy, &a, devices[i]));
        continue;
      }
      made.push_back(new_tensor(*a.ctx, d, a.dtype, a.shape));
      push_range_copy("replicate", a, 0, *made.back(), 0, a.shape.numel());
    }
    hand_out(made, outs);
  });
}

BRAID_API braid_status braid_allreduce(int32_t count, const braid_tensor* tensors,
                                       const braid_collective_options* options) {
  return guard("braid_allreduce", [&] {
    const braid_collective_options o = collective_options(options);
    const std::vector<Tensor*> ts = checked_group(count, tensors, "allreduce");
    if (int32_t a = enum_int(o.algorithm); a < 0 || a >= BRAID_ALLREDUCE_ALGORITHM_COUNT)
      fail(BRAID_ERR_INVALID_ARGUMENT, "allreduce: invalid braid_allreduce_algorithm ", a);
    const autograd::PauseRecording pause(ts[0]->ctx->recording);  // collectives are not recorded
    allreduce(ts, make_reduction(o.op, ts[0]->dtype, "allreduce"), o.algorithm);
  });
}

BRAID_API braid_status braid_reduce_to(int32_t count, const braid_tensor* tensors, int32_t root,
                                       const braid_collective_options* options) {
  return guard("braid_reduce_to", [&] {
    const braid_collective_options o = collective_options(options);
    const std::vector<Tensor*> ts = checked_group(count, tensors, "reduce_to");
    const autograd::PauseRecording pause(ts[0]->ctx->recording);  // collectives are not recorded
    reduce(ts, checked_root(root, count, "reduce_to"), make_reduction(o.op, ts[0]->dtype, "reduce_to"));
  });
}

BRAID_API braid_status braid_broadcast(int32_t count, const braid_tensor* tensors, int32_t root) {
  return guard("braid_broadcast", [&] {
    const std::vector<Tensor*> ts = checked_group(count, tensors, "broadcast");
    const autograd::PauseRecording pause(ts[0]->ctx->recording);  // collectives are not recorded
    broadcast(ts, checked_root(root, count, "broadcast"));
  });
}

BRAID_API braid_status braid_all_gather(int32_t count, const braid_tensor* inputs, braid_tensor* outs) {
  return guard("braid_all_gather", [&] {
    check_count(count, "all_gather");
    require(outs, "outs");
    const std::vector<Tensor*> ins = checked_group(count, inputs, "all_gather");
    Shape s = ins[0]->shape;
    if (s.ndim < 1) fail(BRAID_ERR_SHAPE, "all_gather: inputs must have an axis 0 to concatenate along");
    if (__builtin_mul_overflow(s[0], int64_t{count}, &s[0]) || !s.fits())
      fail(BRAID_ERR_SHAPE, "all_gather: ", count, " inputs of ", ins[0]->shape.str(), " have more rows than int64");
    std::vector<TensorRef> made = outputs_like(ins, s);
    // Collectives are not recorded (docs/AUTOGRAD.md): their outputs are constants, whichever devices
    // take part (the same-device copies inside are ops that would otherwise record a partial history).
    const autograd::PauseRecording pause(ins[0]->ctx->recording);
    all_gather(ins, raw(made));
    hand_out(made, outs);
  });
}

BRAID_API braid_status braid_reduce_scatter(int32_t count, const braid_tensor* inputs,
                                            const braid_collective_options* options, braid_tensor* outs) {
  return guard("braid_reduce_scatter", [&] {
    check_count(count, "reduce_scatter");
    require(outs, "outs");
    const braid_collective_options o = collective_options(options);
    const std::vector<Tensor*> ins = checked_group(count, inputs, "reduce_scatter");
    const Reduction r = make_reduction(o.op, ins[0]->dtype, "reduce_scatter");
    Shape s = ins[0]->shape;
    if (s.ndim < 1 || s[0] % count != 0)
      fail(BRAID_ERR_SHAPE, "reduce_scatter: axis 0 of ", s.str(), " must be divisible by count ", count);
    s[0] /= count;
    std::vector<TensorRef> made = outputs_like(ins, s);
    const autograd::PauseRecording pause(ins[0]->ctx->recording);  // not recorded, as all_gather
    reduce_scatter(ins, raw(made), r);
    hand_out(made, outs);
  });
}

}  // extern "C"
