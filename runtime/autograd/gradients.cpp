// The gradient of every differentiable op, written once, in terms of other ops (ops.h) and the
// backward kernels. Keyed by the kernel op the forward pushed (plus the attributes it recorded), so
// an op added to runtime/ops gets its gradient here and nowhere else.
#include "autograd/gradients.h"

#include <cmath>

#include "context/context.h"
#include "core/dtype.h"
#include "ops/call.h"
#include "ops/op_builder.h"
#include "tensor/tensor.h"

namespace braid::autograd {
namespace {

using op::h;

// g summed over the axes that broadcasting stretched to reach g's shape from `target`.
TensorRef sum_to(TensorRef g, const Shape& target) {
  if (g->shape == target) return g;
  const int lead = g->shape.ndim - target.ndim;
  std::vector<int32_t> axes;
  for (int d = 0; d < g->shape.ndim; ++d)
    if (d < lead || (target[d - lead] == 1 && g->shape[d] != 1)) axes.push_back(d);
  TensorRef r = op::reduce(BRAID_REDUCE_SUM, h(g), axes, true);
  return op::reshape(h(r), target);
}

// A zero of t's dtype and device, 0-d: where() broadcasts it.
TensorRef zero_of(const Tensor& t) { return op::full_as(t, Shape{}, 0.0); }

// cond ? a : b. On a device whose backend has no WHERE kernel (a plugin older than ABI 1.5), a
// product with the 0/1 condition instead: the same values, except an inf or NaN that is masked off.
TensorRef select(Tensor* cond, Tensor* a, Tensor* b) {
  if (cond->device().supports(BRAID_KOP_WHERE, a->dtype)) return op::where(cond, a, b);
  TensorRef ca = op::mul(cond, a);
  TensorRef nc = op::scalar(BRAID_BINARY_SUB, cond, 1.0, true);
  TensorRef cb = op::mul(h(nc), b);
  return op::add(h(ca), h(cb));
}

// maximum's gradient to a (minimum's with less): PyTorch's where(a == b, dy / 2, dy) masked to 0
// where a < b (a > b). A NaN on either side compares false everywhere, so the gradient passes whole
// to both operands, as PyTorch's does.
TensorRef select_greater(Tensor* dy, Tensor* a, Tensor* b, bool less) {
  TensorRef lose = op::binary(less ? BRAID_BINARY_GREATER : BRAID_BINARY_LESS, a, b);
  TensorRef tie = op::binary(BRAID_BINARY_EQUAL, a, b);
  TensorRef half = op::scalar(BRAID_BINARY_MUL, dy, 0.5);
  TensorRef shared = select(h(tie), h(half), dy);
  TensorRef z = zero_of(*dy);
  return select(h(lose), h(z), h(shared));
}

void unary_grad(Node& n, Tensor* dy, std::vector<TensorRef>& dx) {
  Tensor* x = h(n.inputs[0]);
  Tensor* y = h(n.outputs[0]);
  switch (static_cast<braid_unary_op>(n.i[0])) {
    case BRAID_UNARY_NEG: dx[0] = op::unary(BRAID_UNARY_NEG, dy); break;
    case BRAID_UNARY_ABS: {
      TensorRef s = op::unary(BRAID_UNARY_SIGN, x);
      dx[0] = op::mul(dy, h(s));
      break;
    }
    case BRAID_UNARY_EXP: dx[0] = op::mul(dy, y); break;
    case BRAID_UNARY_LOG: dx[0] = op::div(dy, x); break;
    case BRAID_UNARY_SQRT: {  // dy / (2 y)
      TensorRef t = op::scalar(BRAID_BINARY_MUL, y, 2.0);
      dx[0] = op::div(dy, h(t));
      break;
    }
    case BRAID_UNARY_RELU: {  // PyTorch's threshold_backward: 0 where y <= 0, i.e. y == 0 (a NaN passes dy)
      TensorRef off = op::scalar(BRAID_BINARY_EQUAL, y, 0.0);
      TensorRef z = zero_of(*dy);
      dx[0] = select(h(off), h(z), dy);
      break;
    }
    case BRAID_UNARY_SIGMOID: {  // dy * y * (1 - y)
      TensorRef one_minus = op::scalar(BRAID_BINARY_SUB, y, 1.0, true);
      TensorRef t = op::mul(y, h(one_minus));
      dx[0] = op::mul(dy, h(t));
      break;
    }
    case BRAID_UNARY_TANH: {  // dy * (1 - y^2)
      TensorRef sq = op::unary(BRAID_UNARY_SQUARE, y);
      TensorRef t = op::scalar(BRAID_BINARY_SUB, h(sq), 1.0, true);
      dx[0] = op::mul(dy, h(t));
      break;
    }
    case BRAID_UNARY_SQUARE: {
      TensorRef t = op::scalar(BRAID_BINARY_MUL, x, 2.0);
      dx[0] = op::mul(dy, h(t));
      break;
    }
    case BRAID_UNARY_SIGN: dx[0] = op::full_like(*x, 0.0); break;
    default: fail(BRAID_ERR_INTERNAL, "autograd: unary op ", n.i[0], " has no gradient");
  }
}

void binary_grad(Node& n, Tensor* dy, std::vector<TensorRef>& dx) {
  Tensor* a = h(n.inputs[0]);
  Tensor* b = h(n.inputs[1]);
  TensorRef ga, gb;
  switch (static_cast<braid_binary_op>(n.i[0])) {
    case BRAID_BINARY_ADD:
      if (n.needs[0]) ga = op::retain(dy);
      if (n.needs[1]) gb = op::retain(dy);
      break;
    case BRAID_BINARY_SUB:
      if (n.needs[0]) ga = op::retain(dy);
      if (n.needs[1]) gb = op::unary(BRAID_UNARY_NEG, dy);
      break;
    case BRAID_BINARY_MUL:
      if (n.needs[0]) ga = op::mul(dy, b);
      if (n.needs[1]) gb = op::mul(dy, a);
      break;
    case BRAID_BINARY_DIV:
      if (n.needs[0]) ga = op::div(dy, b);
      if (n.needs[1]) {  // -dy * a / b^2 = -dy * (y / b), in PyTorch's order (dy * y overflowed first)
        TensorRef u = op::div(h(n.outputs[0]), b);
        TensorRef t = op::mul(dy, h(u));
        gb = op::unary(BRAID_UNARY_NEG, h(t));
      }
      break;
    case BRAID_BINARY_POW:
      // As PyTorch, 0 where the formula is 0 * inf: d/da where b == 0 (a^0 is constant), d/db where
      // a == 0 and b >= 0 (0^b is 0 or 1 there). Masked by changing the operand, not by multiplying
      // the result by a mask, which would keep the NaN.
      if (n.needs[0]) {  // dy * b * a^(b-1), and 0 where b == 0 (selected: dy may be inf there)
        TensorRef bm1 = op::scalar(BRAID_BINARY_SUB, b, 1.0);
        TensorRef b0 = op::scalar(BRAID_BINARY_EQUAL, b, 0.0);
        TensorRef e = op::add(h(bm1), h(b0));
        TensorRef p = op::binary(BRAID_BINARY_POW, a, h(e));
        TensorRef t = op::mul(h(p), b);
        TensorRef g = op::mul(dy, h(t));
        TensorRef z = zero_of(*h(g));
        ga = select(h(b0), h(z), h(g));
      }
      if (n.needs[1]) {  // dy * y * log(a), with log(a + 1) = 0 where a == 0 and b >= 0
        TensorRef a0 = op::scalar(BRAID_BINARY_EQUAL, a, 0.0);
        TensorRef bneg = op::scalar(BRAID_BINARY_LESS, b, 0.0);
        TensorRef bpos = op::scalar(BRAID_BINARY_SUB, h(bneg), 1.0, true);  // 1 - (b < 0)
        TensorRef m = op::mul(h(a0), h(bpos));
        TensorRef am = op::add(a, h(m));
        TensorRef la = op::unary(BRAID_UNARY_LOG, h(am));
        TensorRef t = op::mul(h(n.outputs[0]), h(la));
        gb = op::mul(dy, h(t));
      }
      break;
    case BRAID_BINARY_MAXIMUM:
    case BRAID_BINARY_MINIMUM: {
      const bool less = n.i[0] == BRAID_BINARY_MINIMUM;
      if (n.needs[0]) ga = select_greater(dy, a, b, less);
      if (n.needs[1]) gb = select_greater(dy, b, a, less);
      break;
    }
    case BRAID_BINARY_MOD:  // a - b * floor(a / b), as PyTorch's remainder: dy, and -dy * (a // b)
      if (n.needs[0]) ga = op::retain(dy);
      if (n.needs[1]) {
        TensorRef q = op::binary(BRAID_BINARY_FLOOR_DIVIDE, a, b);
        TensorRef t = op::mul(dy, h(q));
        gb = op::unary(BRAID_UNARY_NEG, h(t));
      }
      break;
    default: return;  // comparisons and FLOOR_DIVIDE: piecewise constant, a zero gradient
  }
  if (ga.get()) dx[0] = sum_to(std::move(ga), a->shape);
  if (gb.get()) dx[1] = sum_to(std::move(gb), b->shape);
}

void binary_scalar_grad(Node& n, Tensor* dy, std::vector<TensorRef>& dx) {
  Tensor* x = h(n.inputs[0]);
  Tensor* y = h(n.outputs[0]);
  const double s = n.f[0];
  const bool rev = n.i[1] != 0;
  switch (static_cast<braid_binary_op>(n.i[0])) {
    case BRAID_BINARY_ADD: dx[0] = op::retain(dy); break;
    case BRAID_BINARY_SUB: dx[0] = op::scalar(BRAID_BINARY_MUL, dy, rev ? -1.0 : 1.0); break;
    case BRAID_BINARY_MUL: dx[0] = op::scalar(BRAID_BINARY_MUL, dy, s); break;
    case BRAID_BINARY_DIV:
      if (!rev) {
        dx[0] = op::scalar(BRAID_BINARY_MUL, dy, 1.0 / s);
      } else {  // s / x: -dy * (y / x), as for a / b
        TensorRef u = op::div(y, x);
        TensorRef t = op::mul(dy, h(u));
        dx[0] = op::unary(BRAID_UNARY_NEG, h(t));
      }
      break;
    case BRAID_BINARY_POW:
      if (!rev && s == 0.0) {  // x^0 is constant: 0, not 0 * x^-1 = NaN at x = 0 (as PyTorch)
        dx[0] = op::full_like(*x, 0.0);
      } else if (!rev) {  // x^s: dy * s * x^(s-1)
        TensorRef p = op::scalar(BRAID_BINARY_POW, x, s - 1.0);
        TensorRef t = op::scalar(BRAID_BINARY_MUL, h(p), s);
        dx[0] = op::mul(dy, h(t));
      } else if (s == 0.0) {  // 0^x: dy * y * ln 0, except 0 where x >= 0 (0^x is 0 or 1 there), as
        // PyTorch: -inf * y keeps y's sign ((-0)^-1 = -inf gives +inf), and a NaN x gives NaN.
        TensorRef gt = op::scalar(BRAID_BINARY_GREATER, x, 0.0);
        TensorRef eq = op::scalar(BRAID_BINARY_EQUAL, x, 0.0);
        TensorRef nonneg = op::add(h(gt), h(eq));             // 1 where x >= 0, 0 where x < 0 or NaN
        TensorRef l = op::unary(BRAID_UNARY_LOG, h(nonneg));  // 0, or ln 0 = -inf where x < 0
        TensorRef t = op::mul(y, h(l));
        dx[0] = op::mul(dy, h(t));
      } else {  // s^x: dy * y * ln s
        TensorRef t = op::scalar(BRAID_BINARY_MUL, y, std::log(s));
        dx[0] = op::mul(dy, h(t));
      }
      break;
    case BRAID_BINARY_MAXIMUM:
    case BRAID_BINARY_MINIMUM: {  // as select_greater, against the scalar
      const bool less = n.i[0] == BRAID_BINARY_MINIMUM;
      TensorRef lose = op::scalar(less ? BRAID_BINARY_GREATER : BRAID_BINARY_LESS, x, s);
      TensorRef tie = op::scalar(BRAID_BINARY_EQUAL, x, s);
      TensorRef half = op::scalar(BRAID_BINARY_MUL, dy, 0.5);
      TensorRef shared = select(h(tie), h(half), dy);
      TensorRef z = zero_of(*dy);
      dx[0] = select(h(lose), h(z), h(shared));
      break;
    }
    case BRAID_BINARY_MOD:
      if (!rev) {  // x % s: dy
        dx[0] = op::retain(dy);
      } else {  // s % x: -dy * (s // x)
        TensorRef q = op::scalar(BRAID_BINARY_FLOOR_DIVIDE, x, s, true);
        TensorRef t = op::mul(dy, h(q));
        dx[0] = op::unary(BRAID_UNARY_NEG, h(t));
      }
      break;
    default: return;
  }
}

void reduce_grad(Node& n, Tensor* dy, std::vector<TensorRef>& dx) {
  Tensor* x = h(n.inputs[0]);
  const braid_buffer_view& kv = n.out_views[0];  // keepdims layout
  Shape kept = Shape::of({kv.shape, size_t(kv.ndim)});
  TensorRef g = op::reshape(dy, kept);
  TensorRef y = op::reshape(h(n.outputs[0]), kept);
  const int64_t count = kept.numel() > 0 ? x->shape.numel() / kept.numel() : 0;
  TensorRef zeros = op::full_like(*x, 0.0);
  switch (static_cast<braid_reduce_op>(n.i[0])) {
    case BRAID_REDUCE_SUM: dx[0] = op::add(h(zeros), h(g)); break;
    case BRAID_REDUCE_MEAN: {
      TensorRef t = op::scalar(BRAID_BINARY_MUL, h(g), count > 0 ? 1.0 / double(count) : 0.0);
      dx[0] = op::add(h(zeros), h(t));
      break;
    }
    case BRAID_REDUCE_MAX:
    case BRAID_REDUCE_MIN: {  // split among the elements equal to the extremum
      TensorRef m = op::binary(BRAID_BINARY_EQUAL, x, h(y));
      std::vector<int32_t> axes;
      for (int d = 0; d < 32 && d < x->shape.ndim; ++d)
        if (n.i[1] >> d & 1) axes.push_back(d);
      TensorRef cnt = op::reduce(BRAID_REDUCE_SUM, h(m), axes, true);
      TensorRef share = op::div(h(g), h(cnt));
      dx[0] = op::mul(h(m), h(share));
      break;
    }
    case BRAID_REDUCE_NORM: {
      // (x / y) * g, and 0 where y == 0, as PyTorch (there x is 0, or so small its squares underflowed).
      // x / y is at most 1 in size: g / y first overflowed where y is tiny (a subnormal norm gave inf,
      // and 0 * inf NaN, where the gradient is [1, 0]).
      TensorRef y0 = op::scalar(BRAID_BINARY_EQUAL, h(y), 0.0);
      TensorRef d = op::add(h(y), h(y0));
      TensorRef u = op::div(x, h(d));
      TensorRef t = op::mul(h(u), h(g));
      TensorRef z = zero_of(*t);
      dx[0] = select(h(y0), h(z), h(t));
      break;
    }
    default: fail(BRAID_ERR_INTERNAL, "autograd: reduce op ", n.i[0], " has no gradient");
  }
}

// C = op(A) op(B). An operand broadcast over the batch (2-D, or a batch of 1) gets its gradient summed
// over the batch, as torch.matmul's does.
void matmul_grad(Node& n, Tensor* dy, std::vector<TensorRef>& dx) {
  Tensor* a = h(n.inputs[0]);
  Tensor* b = h(n.inputs[1]);
  const bool ta = n.i[0] != 0, tb = n.i[1] != 0;
  auto fit = [](TensorRef g, const Shape& s) {
    if (g->shape.ndim == 3 && s.ndim == 2)
      g = op::reduce(BRAID_REDUCE_SUM, h(g), {0}, false);
    else if (g->shape.ndim == 3 && g->shape[0] != s[0])
      g = op::reduce(BRAID_REDUCE_SUM, h(g), {0}, true);
    return g;
  };
  if (const braid_dtype low = a->dtype; low == BRAID_BFLOAT16 || low == BRAID_FLOAT16) {
    // Autocast's 16-bit product (ops/amp.h): the gradients are 16-bit products too, dy rounded to the
    // operands' dtype, summed in float32 and rounded to it (each operand's gradient in its own dtype).
    const TensorRef d = op::cast(dy, low);
    const auto mm = [](Tensor* x, Tensor* y, bool tx, bool ty) { return op::run(entry::matmul_low, x, y, tx, ty); };
    if (n.needs[0]) dx[0] = op::cast(fit(ta ? mm(b, h(d), tb, true) : mm(h(d), b, false, !tb), a->shape).get(), low);
    if (n.needs[1]) dx[1] = op::cast(fit(tb ? mm(h(d), a, true, ta) : mm(a, h(d), !ta, false), b->shape).get(), low);
    return;
  }
  if (n.needs[0]) dx[0] = fit(ta ? op::matmul(b, dy, tb, true) : op::matmul(dy, b, false, !tb), a->shape);
  if (n.needs[1]) dx[1] = fit(tb ? op::matmul(dy, a, true, ta) : op::matmul(a, dy, !ta, false), b->shape);
}

braid_conv2d_params conv_params(const Node& n) {
  braid_conv2d_params p = BRAID_CONV2D_PARAMS_INIT;
  p.stride[0] = int32_t(n.i[0]), p.stride[1] = int32_t(n.i[1]), p.padding[0] = int32_t(n.i[2]),
  p.padding[1] = int32_t(n.i[3]);
  return p;
}

void conv_grad(Node& n, Tensor* dy, std::vector<TensorRef>& dx) {
  Tensor* x = h(n.inputs[0]);
  Tensor* w = h(n.inputs[1]);
  const braid_conv2d_params p = conv_params(n);
  const braid_conv2d_params* pp = &p;
  if (n.needs[0]) dx[0] = op::run(entry::conv2d_backward_data, dy, w, x->shape.dims.data(), pp);
  if (n.needs[1]) dx[1] = op::run(entry::conv2d_backward_weight, dy, x, w->shape.dims.data(), pp);
  if (n.inputs.size() > 2 && n.needs[2]) dx[2] = op::reduce(BRAID_REDUCE_SUM, dy, {0, 2, 3}, false);
}

void pool_grad(Node& n, Tensor* dy, std::vector<TensorRef>& dx) {
  braid_pool2d_params p = BRAID_POOL2D_PARAMS_INIT;
  p.kind = static_cast<braid_pool_kind>(n.i[0]);
  p.kernel[0] = int32_t(n.i[1]), p.kernel[1] = int32_t(n.i[2]), p.stride[0] = int32_t(n.i[3]),
  p.stride[1] = int32_t(n.i[4]);
  p.padding[0] = int32_t(n.i[5]), p.padding[1] = int32_t(n.i[6]);
  const braid_pool2d_params* pp = &p;
  dx[0] = op::run(entry::pool2d_backward, dy, h(n.inputs[0]), pp);
}

void batch_norm_grad(Node& n, Tensor* dy, std::vector<TensorRef>& dx) {
  braid_tensor gx = nullptr, gg = nullptr, gb = nullptr;
  entry::batch_norm_backward(dy, h(n.inputs[0]), h(n.inputs[1]), h(n.outputs[1]), h(n.outputs[2]), int32_t(n.i[0]), &gx,
                             &gg, &gb);
  TensorRef rx(gx), rg(gg), rb(gb);
  if (n.needs[0]) dx[0] = std::move(rx);
  if (n.needs[1]) dx[1] = std::move(rg);
  if (n.needs[2]) dx[2] = std::move(rb);
}

// where(c, a, b): dy to a where c holds, to b elsewhere (each summed over its broadcast axes).
void where_grad(Node& n, Tensor* dy, std::vector<TensorRef>& dx) {
  Tensor* c = h(n.inputs[0]);
  TensorRef z = zero_of(*dy);
  if (n.needs[0]) dx[0] = op::full_like(*c, 0.0);  // piecewise constant in cond, as sign's gradient
  if (n.needs[1]) dx[1] = sum_to(select(c, dy, h(z)), n.inputs[1]->shape);
  if (n.needs[2]) dx[2] = sum_to(select(c, h(z), dy), n.inputs[2]->shape);
}

void softmax_grad(Node& n, Tensor* dy, std::vector<TensorRef>& dx) {
  Tensor* y = h(n.outputs[0]);
  const int32_t axis = int32_t(n.i[0]);
  if (n.i[1]) {  // log-softmax: dy - exp(y) * sum(dy)
    TensorRef s = op::reduce(BRAID_REDUCE_SUM, dy, {axis}, true);
    TensorRef e = op::unary(BRAID_UNARY_EXP, y);
    TensorRef t = op::mul(h(e), h(s));
    dx[0] = op::sub(dy, h(t));
  } else {  // y * (dy - sum(dy * y))
    TensorRef p = op::mul(dy, y);
    TensorRef s = op::reduce(BRAID_REDUCE_SUM, h(p), {axis}, true);
    TensorRef d = op::sub(dy, h(s));
    dx[0] = op::mul(y, h(d));
  }
}

void take_grad(Node& n, Tensor* dy, std::vector<TensorRef>& dx) {
  const Shape& xs = n.inputs[0]->shape;
  dx[0] = op::run(entry::take_backward, dy, h(n.inputs[1]), xs.dims.data(), xs.ndim, int32_t(n.i[0]));
}

void softmax_ce_grad(Node& n, Tensor* dy, std::vector<TensorRef>& dx) {
  dx[0] = op::run(entry::softmax_cross_entropy_backward, h(n.inputs[0]), h(n.inputs[1]), dy);
}

void dropout_grad(Node& n, Tensor* dy, std::vector<TensorRef>& dx) {
  TensorRef t = op::mul(dy, h(n.outputs[1]));
  // p = 1 kept nothing: the gradient is zero (scale 0, as the kernels use), not dy * 0 * inf = NaN.
  const double p = n.f[0];
  dx[0] = op::scalar(BRAID_BINARY_MUL, h(t), p < 1.0 ? 1.0 / (1.0 - p) : 0.0);
}

// A view of a recorded view moved onto another tensor's storage (same layout, other buffer).
braid_buffer_view rebase(braid_buffer_view v, const Tensor& from, const Tensor& onto) {
  v.byte_offset = v.byte_offset - from.start() + onto.start();
  v.buffer = onto.storage->block.buffer;
  v.dtype = onto.dtype;
  return v;
}

// COPY read view `from` of x and wrote view `to` of y (slice, transpose, concat part, cast, copy): the
// gradient copies dy's `to` part back into `from` of a zero gradient (no zeros when `from` is all of x).
void copy_grad(Node& n, Tensor* dy, std::vector<TensorRef>& dx) {
  Tensor* x = h(n.inputs[0]);
  Tensor* y = h(n.outputs[0]);
  if (dy->dtype != y->dtype || !dtype_is_floating(x->dtype)) return;
  const braid_buffer_view& from = n.in_views[0];
  int64_t count = 1;
  for (int d = 0; d < from.ndim; ++d) count *= from.shape[d];
  TensorRef g = count == x->shape.numel() && from.byte_offset == x->start()
                    ? new_tensor(*x->ctx, x->device(), x->dtype, x->shape)
                    : op::full_like(*x, 0.0);
  OpBuilder b("copy_backward", BRAID_KOP_COPY);
  b.add_input_view(b.operand(dy, "dy"), rebase(n.out_views[0], *y, *dy));
  b.operand(h(g), "out");
  b.require_kernel(dy->dtype);
  b.add_overwritten_output(*g, rebase(from, *x, *g));
  b.push();
  dx[0] = std::move(g);
}

}  // namespace

uint32_t saved_values(const Node& n) {
  // The first input, the second, the first output; na / nb: which operand's gradient is computed.
  constexpr uint32_t a = 1u << 0, b = 1u << 1, y = 1u << kSavedOutput;
  const bool na = !n.needs.empty() && n.needs[0], nb = n.needs.size() > 1 && n.needs[1];
  switch (n.kop) {
    case BRAID_KOP_UNARY:
      switch (static_cast<braid_unary_op>(n.i[0])) {
        case BRAID_UNARY_ABS:
        case BRAID_UNARY_LOG:
        case BRAID_UNARY_SQUARE: return a;
        case BRAID_UNARY_RELU:
        case BRAID_UNARY_EXP:
        case BRAID_UNARY_SQRT:
        case BRAID_UNARY_SIGMOID:
        case BRAID_UNARY_TANH: return y;
        default: return 0;  // neg, sign
      }
    case BRAID_KOP_BINARY:
      switch (static_cast<braid_binary_op>(n.i[0])) {
        case BRAID_BINARY_MUL: return (na ? b : 0) | (nb ? a : 0);
        case BRAID_BINARY_DIV: return (na || nb ? b : 0) | (nb ? y : 0);
        case BRAID_BINARY_POW: return a | b | (nb ? y : 0);
        case BRAID_BINARY_MAXIMUM:
        case BRAID_BINARY_MINIMUM: return a | b;
        case BRAID_BINARY_MOD: return nb ? a | b : 0;
        default: return 0;  // add, sub
      }
    case BRAID_KOP_BINARY_SCALAR: {
      const bool rev = n.i[1] != 0;
      switch (static_cast<braid_binary_op>(n.i[0])) {
        case BRAID_BINARY_DIV: return rev ? a | y : 0;
        case BRAID_BINARY_POW: return rev ? a | y : a;
        case BRAID_BINARY_MOD: return rev ? a : 0;
        case BRAID_BINARY_MAXIMUM:
        case BRAID_BINARY_MINIMUM: return a;
        default: return 0;  // add, sub, mul
      }
    }
    case BRAID_KOP_REDUCE: {
      const auto r = static_cast<braid_reduce_op>(n.i[0]);
      return r == BRAID_REDUCE_SUM || r == BRAID_REDUCE_MEAN ? 0 : a | y;
    }
    case BRAID_KOP_MATMUL:
    case BRAID_KOP_CONV2D: return (na ? b : 0) | (nb ? a : 0);  // the bias's gradient reads neither
    case BRAID_KOP_POOL2D: return a;
    case BRAID_KOP_BATCH_NORM: return a | b | (y << 1) | (y << 2);  // x, gamma, the batch mean and inv std
    case BRAID_KOP_SOFTMAX: return y;
    case BRAID_KOP_SOFTMAX_CE: return a | b;  // logits, labels
    case BRAID_KOP_DROPOUT: return y << 1;    // the mask
    case BRAID_KOP_WHERE: return a;           // the condition
    case BRAID_KOP_TAKE: return b;            // the indices
    default: return 0;                        // copies, reshape, device copies: views only
  }
}

void gradient(Node& n, std::span<Tensor* const> dy, std::vector<TensorRef>& dx) {
  dx.clear();
  dx.resize(n.inputs.size());
  Tensor* g = dy[0];
  if (is_reshape(n)) {
    dx[0] = op::reshape(g, n.inputs[0]->shape);
    return;
  }
  if (std::string_view(n.name) == "device_copy") {
    dx[0] = op::run(entry::copy, g, n.inputs[0]->device().index);
    return;
  }
  switch (n.kop) {
    case BRAID_KOP_UNARY: unary_grad(n, g, dx); break;
    case BRAID_KOP_BINARY: binary_grad(n, g, dx); break;
    case BRAID_KOP_BINARY_SCALAR: binary_scalar_grad(n, g, dx); break;
    case BRAID_KOP_REDUCE: reduce_grad(n, g, dx); break;
    case BRAID_KOP_MATMUL: matmul_grad(n, g, dx); break;
    case BRAID_KOP_CONV2D: conv_grad(n, g, dx); break;
    case BRAID_KOP_POOL2D: pool_grad(n, g, dx); break;
    case BRAID_KOP_BATCH_NORM: batch_norm_grad(n, g, dx); break;
    case BRAID_KOP_SOFTMAX: softmax_grad(n, g, dx); break;
    case BRAID_KOP_SOFTMAX_CE: softmax_ce_grad(n, g, dx); break;
    case BRAID_KOP_DROPOUT: dropout_grad(n, g, dx); break;
    case BRAID_KOP_COPY: copy_grad(n, g, dx); break;
    case BRAID_KOP_WHERE: where_grad(n, g, dx); break;
    case BRAID_KOP_TAKE: take_grad(n, g, dx); break;
    default: fail(BRAID_ERR_INTERNAL, "autograd: ", n.name, " has no gradient");
  }
  for (size_t k = 0; k < dx.size(); ++k)
    if (!n.needs[k]) dx[k] = TensorRef();
}

}  // namespace braid::autograd
