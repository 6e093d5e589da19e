// Shared machinery of the CPU kernels: dtype dispatch, N-d strided iteration, parallel chunking, and
// the per-op entry points that dispatch.cpp routes to. Internal to backends/cpu/kernels/.
//
// Every kernels/*.cpp includes this header FIRST. The pragma below must precede every function
// definition in the translation unit: GCC refuses to inline across differing optimize attributes,
// so a std:: function defined before it could not be inlined into the kernels.
#pragma once
#if defined(__GNUC__) && !defined(__clang__)
// Kernels never read FP exception flags. With the default -ftrapping-math GCC will not if-convert a
// `c ? a : b` whose arm computes in floating point (the computation might trap), which blocks
// vectorising selects (relu, max, exp's range clamps). (A build flag would be tidier; note that
// "no-math-errno" cannot be set this way: GCC decides sqrt's errno semantics from the command line,
// see v_sqrt in vmath.h.)
#pragma GCC optimize("no-trapping-math")
#endif

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernel_call.h"
#include "kernels.h"

namespace braid::cpu::kern {

// ---- dtypes --------------------------------------------------------------------------------------

// 16-bit storage types; arithmetic never happens on them, only conversion (convert.h).
struct half_t {
  uint16_t bits;
};
struct bf16_t {
  uint16_t bits;
};

template <class T>
inline constexpr braid_dtype dtype_of = BRAID_DTYPE_COUNT;
template <>
inline constexpr braid_dtype dtype_of<float> = BRAID_FLOAT32;
template <>
inline constexpr braid_dtype dtype_of<double> = BRAID_FLOAT64;
template <>
inline constexpr braid_dtype dtype_of<int32_t> = BRAID_INT32;
template <>
inline constexpr braid_dtype dtype_of<int64_t> = BRAID_INT64;
template <>
inline constexpr braid_dtype dtype_of<uint8_t> = BRAID_UINT8;
template <>
inline constexpr braid_dtype dtype_of<half_t> = BRAID_FLOAT16;
template <>
inline constexpr braid_dtype dtype_of<bf16_t> = BRAID_BFLOAT16;

template <class T>
struct Tag {
  using type = T;
};
template <class... Ts>
struct Types {};
using FloatTypes = Types<float, double>;
using IntTypes = Types<int32_t, int64_t>;
using NumericTypes = Types<float, double, int32_t, int64_t>;
using AllTypes = Types<float, double, int32_t, int64_t, uint8_t, half_t, bf16_t>;

// The one dtype dispatch: calls f(Tag<T>{}) for the T of Ts whose dtype is dt; false if none is.
template <class... Ts, class F>
inline bool visit_dtype(Types<Ts...>, braid_dtype dt, F&& f) {
  return ((dt == dtype_of<Ts> && (f(Tag<Ts>{}), true)) || ...);
}

// Names and sizes, as every plugin reads them (backends/common/kernel_call.h).
using plugin::dtype_name;
using plugin::dtype_size;
using plugin::op_name;

// ---- results -------------------------------------------------------------------------------------

inline KernelResult fail(braid_status status, std::string message) { return {status, std::move(message)}; }
KernelResult unsupported(braid_kernel_op op, braid_dtype dt, const char* detail = nullptr);

// ---- views ---------------------------------------------------------------------------------------

template <class T>
inline T* data_of(const braid_buffer_view& v) {
  return reinterpret_cast<T*>(view_data(v));
}

inline int64_t numel(const braid_buffer_view& v) {
  int64_t n = 1;
  for (int d = 0; d < v.ndim; ++d) n *= v.shape[d];
  return n;
}

// Row-major dense (strides of size-1 axes do not matter).
inline bool is_contiguous(const braid_buffer_view& v) {
  int64_t expect = 1;
  for (int d = v.ndim - 1; d >= 0; --d) {
    if (v.shape[d] == 1) continue;
    if (v.strides[d] != expect) return false;
    expect *= v.shape[d];
  }
  return true;
}

// ---- strided iteration ---------------------------------------------------------------------------

// N operands walked over one shape, with per-operand element strides (0 = broadcast). Axes of
// size 1 are dropped and neighbours that are contiguous for every operand are merged, so a dense
// tensor becomes a single row and a broadcast row/column becomes two axes. Axis order is never
// changed, so the walk is always in row-major order of the logical index (RNG relies on it).
// Only the first ndim entries of shape/strides are meaningful, and only those are written: this is
// built on every kernel call, so it is not zero-filled (the tiny-tensor path counts nanoseconds).
template <int N>
struct Layout {
  int ndim;
  int64_t numel;
  int64_t shape[BRAID_MAX_DIMS];
  int64_t strides[N][BRAID_MAX_DIMS];

  int64_t inner() const { return shape[ndim - 1]; }
  int64_t inner_stride(int k) const { return strides[k][ndim - 1]; }
};

template <int N>
inline Layout<N> make_layout(int ndim, const int64_t* shape, const std::array<const int64_t*, N>& strides) {
  Layout<N> L;
  L.ndim = 0;
  L.numel = 1;
  for (int d = 0; d < ndim; ++d) L.numel *= shape[d];
  if (L.numel == 0) {
    L.ndim = 1;
    L.shape[0] = 0;
    for (int k = 0; k < N; ++k) L.strides[k][0] = 0;
    return L;
  }
  for (int d = 0; d < ndim; ++d) {
    if (shape[d] == 1) continue;
    bool merge = L.ndim > 0;
    for (int k = 0; k < N && merge; ++k) merge = L.strides[k][L.ndim - 1] == strides[k][d] * shape[d];
    if (merge) {
      L.shape[L.ndim - 1] *= shape[d];
      for (int k = 0; k < N; ++k) L.strides[k][L.ndim - 1] = strides[k][d];
    } else {
      L.shape[L.ndim] = shape[d];
      for (int k = 0; k < N; ++k) L.strides[k][L.ndim] = strides[k][d];
      ++L.ndim;
    }
  }
  if (L.ndim == 0) {  // a single element
    L.ndim = 1;
    L.shape[0] = 1;
    for (int k = 0; k < N; ++k) L.strides[k][0] = 0;
  }
  return L;
}

// Layout of views that all carry views[0]'s shape (elementwise ops; broadcast inputs use stride 0).
template <class... V>
inline Layout<1 + sizeof...(V)> layout_of(const braid_buffer_view& first, const V&... rest) {
  return make_layout<1 + sizeof...(V)>(first.ndim, first.shape, {first.strides, rest.strides...});
}

// Calls row(off, count) for each run of the walk over logical elements [begin, end): off[k] is
// operand k's element offset of the run's first element, count how many follow along the innermost
// axis (stride L.inner_stride(k)). Divisions only to find a chunk's start, then an index counter.
template <int N, class F>
inline void for_each_row(const Layout<N>& L, int64_t begin, int64_t end, F&& row) {
  if (begin >= end) return;
  const int nd = L.ndim;
  const int64_t inner = L.shape[nd - 1];
  int64_t idx[BRAID_MAX_DIMS];
  int64_t off[N];
  int64_t i0 = 0;
  for (int k = 0; k < N; ++k) off[k] = 0;
  for (int d = 0; d < nd - 1; ++d) idx[d] = 0;
  if (begin != 0) {  // divisions only for chunks that start inside the walk
    i0 = begin % inner;
    int64_t rest = begin / inner;
    for (int k = 0; k < N; ++k) off[k] = i0 * L.strides[k][nd - 1];
    for (int d = nd - 2; d >= 0; --d) {
      idx[d] = rest % L.shape[d];
      rest /= L.shape[d];
      for (int k = 0; k < N; ++k) off[k] += idx[d] * L.strides[k][d];
    }
  }
  int64_t pos = begin;
  for (;;) {
    const int64_t count = std::min(inner - i0, end - pos);
    row(static_cast<const int64_t*>(off), count);
    pos += count;
    if (pos >= end) break;
    for (int k = 0; k < N; ++k) off[k] -= i0 * L.strides[k][nd - 1];
    i0 = 0;
    for (int d = nd - 2; d >= 0; --d) {
      for (int k = 0; k < N; ++k) off[k] += L.strides[k][d];
      if (++idx[d] < L.shape[d]) break;
      for (int k = 0; k < N; ++k) off[k] -= L.strides[k][d] * L.shape[d];
      idx[d] = 0;
    }
  }
}

// ---- parallelism ---------------------------------------------------------------------------------

// Elements per task for memory-bound loops (~128 KiB of float32: big enough to amortise a task,
// small enough to balance two to a few dozen cores).
inline constexpr int64_t kGrain = 32768;
// For loops costing tens of cycles per element (transcendentals, RNG).
inline constexpr int64_t kGrainHeavy = 4096;

// Runs f(begin, end) over [0, n): inline for small n (no std::function, no allocation: the tiny-tensor
// path), else through the device arena. std::ref keeps the std::function allocation-free.
template <class F>
inline void parallel(Exec& ex, int64_t n, int64_t grain, F&& f) {
  if (n <= 0) return;
  if (n <= grain || ex.concurrency() <= 1) {
    f(int64_t{0}, n);
    return;
  }
  ex.parallel_for(n, grain, std::function<void(int64_t, int64_t)>(std::ref(f)));
}

// An Exec that runs everything on the calling thread: what a parallel_for chunk hands to the helpers
// it calls (im2col, parallel_gemm, ...) when the chunk itself is the unit of parallelism.
class SerialExec final : public Exec {
 public:
  void parallel_for(int64_t n, int64_t, const std::function<void(int64_t, int64_t)>& fn) override {
    if (n > 0) fn(0, n);
  }
  int concurrency() const override { return 1; }
};

// ---- elementwise maps ----------------------------------------------------------------------------

// Hot compute-bound loops (transcendentals, RNG, softmax) also get an AVX2+FMA clone that the loader
// picks on CPUs that have it (GCC target_clones / ifunc): the baseline build targets x86-64-v2 (SSE4.2),
// which leaves half or more of a modern core's arithmetic unused. Memory-bound loops gain nothing and
// stay single-version (code size). Clones may differ from the baseline in the last bit (FMA).
// Not under ThreadSanitizer: a clone's ifunc resolver is instrumented too, and the loader may run it
// while it relocates the plugin (IRELATIVE), before the GOT entries the instrumentation calls through
// are relocated; with the template clone in fold.h, dlopen of the TSan-built plugin crashed there.
// The sanitizer builds therefore test the baseline version of these loops (the same source).
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__ELF__) && \
    !defined(BRAID_SANITIZER_THREAD)
#define BRAID_HOT __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define BRAID_HOT
#endif

namespace detail {
// One run with a compile-time stride pattern: bit k of Mask set = operand k advances by 1, clear =
// stays (broadcast). Constant strides let the compiler vectorise and hoist broadcast loads.
template <bool Hot, unsigned Mask, class F, class Seq, class... P>
struct Fixed;
template <unsigned Mask, class F, size_t... I, class... P>
struct Fixed<false, Mask, F, std::index_sequence<I...>, P...> {
  static void run(F& f, int64_t n, P* __restrict... p) {
    for (int64_t i = 0; i < n; ++i) f(p[((Mask >> I) & 1u) ? i : 0]...);
  }
};
template <unsigned Mask, class F, size_t... I, class... P>
struct Fixed<true, Mask, F, std::index_sequence<I...>, P...> {
  BRAID_HOT static void run(F& f, int64_t n, P* __restrict... p) {
    for (int64_t i = 0; i < n; ++i) f(p[((Mask >> I) & 1u) ? i : 0]...);
  }
};
template <class F, class... P, size_t... I>
void run_strided(F& f, int64_t n, const int64_t* s, std::index_sequence<I...>, P* __restrict... p) {
  for (int64_t i = 0; i < n; ++i) f(p[i * s[I]]...);
}
template <bool Hot, class F, class... P, unsigned... M>
constexpr auto fixed_table(std::integer_sequence<unsigned, M...>) {
  using Fn = void (*)(F&, int64_t, P * ...);
  return std::array<Fn, sizeof...(M)>{&Fixed<Hot, M, F, std::index_sequence_for<P...>, P...>::run...};
}
}  // namespace detail

// Applies f(p0[i], p1[i], ...) to every element of a layout whose operands are typed pointers (to
// element 0 of each view). f takes references for written operands. Runs whose strides are all 0 or
// 1 take a specialised, vectorisable loop; anything else a strided loop. Hot: see BRAID_HOT.
template <bool Hot = false, int N, class F, class... P>
inline void map_range(const Layout<N>& L, int64_t begin, int64_t end, F& f, P*... p) {
  static_assert(sizeof...(P) == N);
  using Seq = std::index_sequence_for<P...>;
  static constexpr auto table = detail::fixed_table<Hot, F, P...>(std::make_integer_sequence<unsigned, (1u << N)>{});
  int64_t s[N];
  unsigned mask = 0;
  bool unit = true;
  for (int k = 0; k < N; ++k) {
    s[k] = L.inner_stride(k);
    unit = unit && (s[k] == 0 || s[k] == 1);
    mask |= unsigned(s[k] == 1) << k;
  }
  const auto fn = table[mask];
  for_each_row(L, begin, end, [&](const int64_t* off, int64_t count) {
    [&]<size_t... I>(std::index_sequence<I...>) {
      if (unit)
        fn(f, count, (p + off[I])...);
      else
        detail::run_strided(f, count, s, Seq{}, (p + off[I])...);
    }
    (Seq{});
  });
}

template <bool Hot = false, int N, class F, class... P>
inline void map(Exec& ex, const Layout<N>& L, int64_t grain, F f, P*... p) {
  parallel(ex, L.numel, grain, [&](int64_t b, int64_t e) { map_range<Hot>(L, b, e, f, p...); });
}

// ---- scratch -------------------------------------------------------------------------------------

// Per-thread, grow-only scratch for big temporaries (im2col columns). A fresh multi-MiB std::vector
// is fresh mmap'd memory on every call, and faulting its pages in costs more than the kernel. Each
// slot keeps its largest buffer up to kScratchKeep bytes; bigger requests are owned temporarily.
// Only the thread that calls run_kernel acquires scratch (never a parallel_for body), so a worker
// that steals another kernel's chunk never touches this thread's slots.
inline constexpr size_t kScratchKeep = size_t{64} << 20;
inline constexpr int kScratchSlots = 2;

// This thread's buffer for `slot`, grown to at least `bytes` (contents unspecified).
inline std::byte* scratch_slot(int slot, size_t bytes) {
  struct Slots {
    std::unique_ptr<std::byte[]> buf[kScratchSlots];
    size_t cap[kScratchSlots] = {};
  };
  thread_local Slots slots;
  if (slots.cap[slot] < bytes) {
    slots.buf[slot].reset();  // free first: peak memory is the new size, not old + new
    slots.cap[slot] = 0;      // (stays consistent if the allocation below throws)
    slots.buf[slot] = std::make_unique_for_overwrite<std::byte[]>(bytes);
    slots.cap[slot] = bytes;
  }
  return slots.buf[slot].get();
}

template <class T>
class Scratch {
 public:
  Scratch(int slot, size_t n) {
    const size_t bytes = std::max<size_t>(n, 1) * sizeof(T);
    if (bytes > kScratchKeep) {
      own_ = std::make_unique_for_overwrite<T[]>(std::max<size_t>(n, 1));
      ptr_ = own_.get();
    } else {
      ptr_ = reinterpret_cast<T*>(scratch_slot(slot, bytes));  // new[] alignment suits float/double
    }
  }
  T* get() const { return ptr_; }

 private:
  std::unique_ptr<T[]> own_;
  T* ptr_;
};

// ---- contiguous staging for kernels that need dense operands (copy.cpp) --------------------------

// Strided N-d copy with dtype conversion (the COPY kernel's engine).
void copy_nd(Exec& ex, int ndim, const int64_t* shape, void* dst, braid_dtype dst_dt, const int64_t* dst_strides,
             const void* src, braid_dtype src_dt, const int64_t* src_strides);

inline void contiguous_strides(int ndim, const int64_t* shape, int64_t* strides) {
  int64_t s = 1;
  for (int d = ndim - 1; d >= 0; --d) {
    strides[d] = s;
    s *= shape[d];
  }
}

// A dense row-major image of an input view: the view itself when it already is, else a packed copy.
template <class T>
class DenseIn {
 public:
  DenseIn(Exec& ex, const braid_buffer_view& v) {
    if (is_contiguous(v)) {
      ptr_ = data_of<const T>(v);
      return;
    }
    buf_.resize(size_t(numel(v)));
    int64_t st[BRAID_MAX_DIMS];
    contiguous_strides(v.ndim, v.shape, st);
    copy_nd(ex, v.ndim, v.shape, buf_.data(), v.dtype, st, view_data(v), v.dtype, v.strides);
    ptr_ = buf_.data();
  }
  const T* get() const { return ptr_; }

 private:
  const T* ptr_ = nullptr;
  std::vector<T> buf_;
};

// A dense row-major output: the view itself when it is, else scratch written back by finish().
template <class T>
class DenseOut {
 public:
  DenseOut(const braid_buffer_view& v) : view_(v) {
    if (is_contiguous(v)) {
      ptr_ = data_of<T>(v);
    } else {
      buf_.resize(size_t(numel(v)));
      ptr_ = buf_.data();
    }
  }
  T* get() const { return ptr_; }
  void finish(Exec& ex) {
    if (buf_.empty()) return;
    int64_t st[BRAID_MAX_DIMS];
    contiguous_strides(view_.ndim, view_.shape, st);
    copy_nd(ex, view_.ndim, view_.shape, view_data(view_), view_.dtype, view_.strides, buf_.data(), view_.dtype, st);
  }

 private:
  braid_buffer_view view_;
  T* ptr_ = nullptr;
  std::vector<T> buf_;
};

// ---- per-op kernels (one file per concern) -------------------------------------------------------

using Call = braid_kernel_call;
KernelResult k_fill(const Call&, Exec&);
KernelResult k_arange(const Call&, Exec&);
KernelResult k_random(const Call&, Exec&);  // uniform and normal
KernelResult k_dropout(const Call&, Exec&);
KernelResult k_copy(const Call&, Exec&);
KernelResult k_unary(const Call&, Exec&);
KernelResult k_binary(const Call&, Exec&);
KernelResult k_binary_scalar(const Call&, Exec&);
KernelResult k_reduce(const Call&, Exec&);
KernelResult k_argmax(const Call&, Exec&);
KernelResult k_matmul(const Call&, Exec&);
KernelResult k_conv2d(const Call&, Exec&);
KernelResult k_pool2d(const Call&, Exec&);
KernelResult k_batch_norm(const Call&, Exec&);
KernelResult k_softmax(const Call&, Exec&);
KernelResult k_softmax_ce(const Call&, Exec&);
KernelResult k_sgd(const Call&, Exec&);
KernelResult k_sgd_momentum(const Call&, Exec&);
KernelResult k_adam(const Call&, Exec&);
KernelResult k_conv2d_bwd_data(const Call&, Exec&);  // backward.cpp
KernelResult k_conv2d_bwd_weight(const Call&, Exec&);
KernelResult k_pool2d_bwd(const Call&, Exec&);
KernelResult k_batch_norm_bwd(const Call&, Exec&);
KernelResult k_softmax_ce_bwd(const Call&, Exec&);
KernelResult k_combine(const Call&, Exec&);            // elementwise.cpp
KernelResult k_fused_elementwise(const Call&, Exec&);  // fused.cpp
KernelResult k_where(const Call&, Exec&);              // elementwise.cpp
KernelResult k_take(const Call&, Exec&);               // indexing.cpp
KernelResult k_take_bwd(const Call&, Exec&);           // indexing.cpp

}  // namespace braid::cpu::kern
