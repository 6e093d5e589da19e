// Autocast's per-thread setting (braid_autocast_set) and the operand rounding of ops/amp.h.
#include "ops/amp.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "ops/call.h"

using namespace braid;

namespace {

// (context serial, dtype) for each context this thread turned autocast on in: a handful at most. Kept
// by serial, never by address (a context made where a dead one was is another), and gone with the thread.
thread_local std::vector<std::pair<uint64_t, braid_dtype>> t_autocast;

void set_for(const Context& ctx, braid_dtype dtype) {
  auto it = std::find_if(t_autocast.begin(), t_autocast.end(), [&](const auto& e) { return e.first == ctx.serial; });
  if (dtype == BRAID_FLOAT32) {
    if (it != t_autocast.end()) t_autocast.erase(it);
  } else if (it != t_autocast.end()) {
    it->second = dtype;
  } else {
    t_autocast.emplace_back(ctx.serial, dtype);
  }
}

}  // namespace

namespace braid {

braid_dtype autocast_dtype(const Context& ctx) noexcept {
  for (const auto& [serial, dtype] : t_autocast)
    if (serial == ctx.serial) return dtype;
  return BRAID_FLOAT32;
}

AutocastPause::AutocastPause(const Context& ctx) : ctx_(ctx), prev_(autocast_dtype(ctx)) {
  set_for(ctx, BRAID_FLOAT32);
}

AutocastPause::~AutocastPause() { set_for(ctx_, prev_); }

TensorRef round_through(Tensor& x, braid_dtype dtype) {
  const TensorRef low = op::cast(&x, dtype);
  return op::cast(low.get(), BRAID_FLOAT32);
}

}  // namespace braid

BRAID_API braid_status braid_autocast_set(braid_context ctx, braid_dtype dtype, braid_dtype* prev) {
  return guard("braid_autocast_set", [&] {
    if (prev) *prev = BRAID_FLOAT32;
    const ContextRef c = use_context(ctx, "ctx");
    check_dtype(dtype, "dtype");
    if (dtype != BRAID_FLOAT32 && dtype != BRAID_BFLOAT16 && dtype != BRAID_FLOAT16)
      fail(BRAID_ERR_INVALID_ARGUMENT, "autocast_set: dtype is bfloat16 or float16 (on) or float32 (off), not ",
           dtype_name(dtype));
    if (prev) *prev = autocast_dtype(*c);
    set_for(*c, dtype);
  });
}

BRAID_API braid_status braid_autocast_get(braid_context ctx, braid_dtype* out) {
  return guard("braid_autocast_get", [&] {
    require(out, "out");
    *out = autocast_dtype(*use_context(ctx, "ctx"));
  });
}
