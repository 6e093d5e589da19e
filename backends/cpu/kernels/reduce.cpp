// REDUCE (sum, mean, max, min, L2 norm over an axis bitmask) and ARGMAX.
//
// The input's axes split into a kept layout (walks outputs) and a reduced layout (walks the elements
// folded into one output). Two shapes of loop cover the fast cases:
//   - row mode: the reduced axes end in a unit-stride run (x.sum(-1), full reductions): each output
//     folds runs with independent accumulators in vector lanes (fold.h);
//   - column mode: the kept axes end in a unit-stride run and a reduced axis is outside it
//     (x.sum(0) on a matrix, NCHW sums over N): a block of adjacent outputs accumulates together, so
//     each input row is read once, contiguously.
// Anything else uses row mode with strided runs. float32 accumulates in double; ints in 64 bits
// (wrapping). Splits depend only on shapes, never on the core count, so results are reproducible.
#include "common.h"
// (common.h first: see the note at its top)
#include "fold.h"

namespace braid::cpu::kern {
namespace {

// ---- layouts -------------------------------------------------------------------------------------

// kept: operand 0 = input strides, 1 = output strides; reduced: input strides.
struct Split {
  Layout<2> kept;
  Layout<1> red;
};

template <class IsReduced>
Split split_axes(const braid_buffer_view& in, const braid_buffer_view& out, IsReduced is_reduced) {
  int64_t ks[BRAID_MAX_DIMS], kin[BRAID_MAX_DIMS], kout[BRAID_MAX_DIMS], rs[BRAID_MAX_DIMS], rin[BRAID_MAX_DIMS];
  int nk = 0, nr = 0;
  for (int d = 0; d < in.ndim; ++d) {
    if (is_reduced(d)) {
      rs[nr] = in.shape[d];
      rin[nr++] = in.strides[d];
    } else {
      ks[nk] = in.shape[d];
      kin[nk] = in.strides[d];
      kout[nk++] = out.strides[d];
    }
  }
  return {make_layout<2>(nk, ks, {kin, kout}), make_layout<1>(nr, rs, {rin})};
}

// The kept layout without its innermost axis (column mode walks that axis itself).
Layout<2> drop_inner(const Layout<2>& L) {
  Layout<2> o = L;
  if (L.ndim == 1) {
    o.shape[0] = 1;
    o.strides[0][0] = o.strides[1][0] = 0;
    o.numel = 1;
  } else {
    o.ndim = L.ndim - 1;
    o.numel = L.numel / L.inner();
  }
  return o;
}

// Offsets (input, output) of kept element k.
inline void kept_offsets(const Layout<2>& K, int64_t k, int64_t& oin, int64_t& oout) {
  oin = oout = 0;
  for (int d = K.ndim - 1; d >= 0; --d) {
    const int64_t i = k % K.shape[d];
    k /= K.shape[d];
    oin += i * K.strides[0][d];
    oout += i * K.strides[1][d];
  }
}

constexpr int64_t kChunk = 32768;  // reduced elements per partial when one output is split
constexpr int kBlock = 256;        // outputs accumulated together in column mode

// ---- row mode ------------------------------------------------------------------------------------

template <class R, class T>
typename R::Acc fold_span(const Layout<1>& red, const T* x, int64_t begin, int64_t end) {
  typename R::Acc acc = R::init();
  const int64_t s = red.inner_stride(0);
  for_each_row(red, begin, end,
               [&](const int64_t* off, int64_t n) { acc = R::merge(acc, fold_run<R>(x + off[0], n, s)); });
  return acc;
}

template <class R, class T>
void reduce_rows(Exec& ex, const Split& sp, const T* x, T* y) {
  using Acc = typename R::Acc;
  const int64_t outputs = sp.kept.numel, count = sp.red.numel;
  if (outputs >= 8 || count <= 2 * kChunk) {
    parallel(ex, outputs, std::max<int64_t>(1, kGrain / std::max<int64_t>(count, 1)), [&](int64_t b, int64_t e) {
      for_each_row(sp.kept, b, e, [&](const int64_t* off, int64_t n) {
        for (int64_t k = 0; k < n; ++k) {
          const Acc a = fold_span<R>(sp.red, x + off[0] + k * sp.kept.inner_stride(0), 0, count);
          y[off[1] + k * sp.kept.inner_stride(1)] = R::finish(a, count);
        }
      });
    });
    return;
  }
  // Few, long reductions (a full sum): split each into fixed chunks, merge partials in order.
  const int64_t chunks = (count + kChunk - 1) / kChunk;
  std::vector<Acc> part(static_cast<size_t>(chunks));
  for (int64_t k = 0; k < outputs; ++k) {
    int64_t oin, oout;
    kept_offsets(sp.kept, k, oin, oout);
    parallel(ex, chunks, 1, [&](int64_t b, int64_t e) {
      for (int64_t c = b; c < e; ++c)
        part[size_t(c)] = fold_span<R>(sp.red, x + oin, c * kChunk, std::min(count, (c + 1) * kChunk));
    });
    Acc a = R::init();
    for (const Acc& p : part) a = R::merge(a, p);
    y[oout] = R::finish(a, count);
  }
}

// ---- column mode ---------------------------------------------------------------------------------

// acc[0..w) += x[r + c] for every reduced offset r in [rb, re).
template <class R, class T>
void fold_columns(const Layout<1>& red, const T* x, int64_t rb, int64_t re, int64_t w, typename R::Acc* acc) {
  const int64_t s = red.inner_stride(0);
  for_each_row(red, rb, re, [&](const int64_t* off, int64_t n) {
    for (int64_t j = 0; j < n; ++j) {
      const T* row = x + off[0] + j * s;
      for (int64_t c = 0; c < w; ++c) acc[c] = R::add(acc[c], row[c]);
    }
  });
}

template <class R, class T>
void reduce_columns(Exec& ex, const Split& sp, const T* x, T* y) {
  using Acc = typename R::Acc;
  const Layout<2> outer = drop_inner(sp.kept);
  const int64_t width = sp.kept.inner(), ys = sp.kept.inner_stride(1), count = sp.red.numel;
  const int64_t blocks = (width + kBlock - 1) / kBlock, tasks = outer.numel * blocks;
  auto task_origin = [&](int64_t t, int64_t& xin, int64_t& yout, int64_t& c0, int64_t& w) {
    kept_offsets(outer, t / blocks, xin, yout);
    c0 = (t % blocks) * kBlock;
    w = std::min<int64_t>(kBlock, width - c0);
  };
  const int64_t work = count * std::min<int64_t>(width, kBlock);
  if (tasks >= 8 || work <= 2 * kGrain) {
    parallel(ex, tasks, std::max<int64_t>(1, kGrain / std::max<int64_t>(work, 1)), [&](int64_t b, int64_t e) {
      Acc acc[kBlock];
      for (int64_t t = b; t < e; ++t) {
        int64_t xin, yout, c0, w;
        task_origin(t, xin, yout, c0, w);
        std::fill_n(acc, w, R::init());
        fold_columns<R>(sp.red, x + xin + c0, 0, count, w, acc);
        for (int64_t c = 0; c < w; ++c) y[yout + (c0 + c) * ys] = R::finish(acc[c], count);
      }
    });
    return;
  }
  // Few column blocks, many reduced rows (a tall matrix's column sums): split the rows into fixed
  // chunks with partial blocks, merged in order.
  const int64_t chunks = std::min<int64_t>(64, (count * width + kGrain - 1) / kGrain);
  const int64_t per = (count + chunks - 1) / chunks;
  std::vector<Acc> part(static_cast<size_t>(chunks * kBlock));
  for (int64_t t = 0; t < tasks; ++t) {
    int64_t xin, yout, c0, w;
    task_origin(t, xin, yout, c0, w);
    parallel(ex, chunks, 1, [&](int64_t b, int64_t e) {
      for (int64_t ch = b; ch < e; ++ch) {
        Acc* acc = part.data() + ch * kBlock;
        std::fill_n(acc, w, R::init());
        fold_columns<R>(sp.red, x + xin + c0, std::min(count, ch * per), std::min(count, (ch + 1) * per), w, acc);
      }
    });
    for (int64_t c = 0; c < w; ++c) {
      Acc a = part[size_t(c)];
      for (int64_t ch = 1; ch < chunks; ++ch) a = R::merge(a, part[size_t(ch * kBlock + c)]);
      y[yout + (c0 + c) * ys] = R::finish(a, count);
    }
  }
}

template <class R, class T>
void reduce_typed(Exec& ex, const Split& sp, const T* x, T* y) {
  if (sp.kept.numel == 0) return;
  const bool column = sp.red.inner_stride(0) != 1 && sp.kept.inner_stride(0) == 1 && sp.red.numel > 1;
  if (column)
    reduce_columns<R>(ex, sp, x, y);
  else
    reduce_rows<R>(ex, sp, x, y);
}

// ---- argmax --------------------------------------------------------------------------------------

// First index of the maximum; a NaN counts as the maximum (its first occurrence wins).
template <class T>
inline bool better(T x, T best) {
  if constexpr (std::is_integral_v<T>)
    return x > best;
  else
    return x > best || (x != x && best == best);
}

template <class T>
void argmax_typed(Exec& ex, const Split& sp, const T* x, int64_t* y) {
  const int64_t K = sp.red.numel, s = sp.red.inner_stride(0);
  if (sp.kept.numel == 0 || K == 0) return;
  if (s != 1 && sp.kept.inner_stride(0) == 1 && K > 1) {  // column mode
    const Layout<2> outer = drop_inner(sp.kept);
    const int64_t width = sp.kept.inner(), ys = sp.kept.inner_stride(1);
    const int64_t blocks = (width + kBlock - 1) / kBlock;
    parallel(ex, outer.numel * blocks, std::max<int64_t>(1, kGrain / (K * std::min<int64_t>(width, kBlock))),
             [&](int64_t b, int64_t e) {
               T best[kBlock];
               int64_t idx[kBlock];
               for (int64_t t = b; t < e; ++t) {
                 int64_t xin, yout;
                 kept_offsets(outer, t / blocks, xin, yout);
                 const int64_t c0 = (t % blocks) * kBlock, w = std::min<int64_t>(kBlock, width - c0);
                 const T* base = x + xin + c0;
                 std::copy_n(base, w, best);
                 std::fill_n(idx, w, 0);
                 for (int64_t k = 1; k < K; ++k) {
                   const T* row = base + k * s;
                   for (int64_t c = 0; c < w; ++c) {
                     const bool up = better(row[c], best[c]);
                     best[c] = up ? row[c] : best[c];
                     idx[c] = up ? k : idx[c];
                   }
                 }
                 for (int64_t c = 0; c < w; ++c) y[yout + (c0 + c) * ys] = idx[c];
               }
             });
    return;
  }
  parallel(ex, sp.kept.numel, std::max<int64_t>(1, kGrain / K), [&](int64_t b, int64_t e) {
    for_each_row(sp.kept, b, e, [&](const int64_t* off, int64_t n) {
      for (int64_t j = 0; j < n; ++j) {
        const T* row = x + off[0] + j * sp.kept.inner_stride(0);
        int64_t bi = 0;
        if (s == 1) {
          // Two passes over a row that stays in cache: a vectorised max (NaN wins), then the first
          // index holding it. Beats one branchy compare-and-track pass several times over.
          const T m = fold_run<MaxR<T>>(row, K, 1);
          if (m == m)
            while (row[bi] != m) ++bi;
          else
            while (row[bi] == row[bi]) ++bi;
        } else {
          T bv = row[0];
          for (int64_t k = 1; k < K; ++k)
            if (better(row[k * s], bv)) {
              bv = row[k * s];
              bi = k;
            }
        }
        y[off[1] + j * sp.kept.inner_stride(1)] = bi;
      }
    });
  });
}

}  // namespace

KernelResult k_reduce(const Call& c, Exec& ex) {
  const auto& in = c.inputs[0];
  const auto& out = c.outputs[0];
  const auto op = braid_reduce_op(c.i[0]);
  const uint64_t mask = uint64_t(c.i[1]);
  if (out.dtype != in.dtype) return unsupported(c.op, in.dtype, "output dtype must match the input's");
  const Split sp = split_axes(in, out, [&](int d) { return (mask >> d & 1u) != 0; });
  bool done = false;
  visit_dtype(NumericTypes{}, in.dtype, [&]<class T>(Tag<T>) {
    const T* x = data_of<const T>(in);
    T* y = data_of<T>(out);
    done = true;
    switch (op) {
      case BRAID_REDUCE_SUM: reduce_typed<SumR<T>>(ex, sp, x, y); break;
      case BRAID_REDUCE_MAX: reduce_typed<MaxR<T>>(ex, sp, x, y); break;
      case BRAID_REDUCE_MIN: reduce_typed<MinR<T>>(ex, sp, x, y); break;
      case BRAID_REDUCE_MEAN:
        if constexpr (std::is_floating_point_v<T>)
          reduce_typed<MeanR<T>>(ex, sp, x, y);
        else
          done = false;
        break;
      case BRAID_REDUCE_NORM:
        if constexpr (std::is_floating_point_v<T>)
          reduce_typed<NormR<T>>(ex, sp, x, y);
        else
          done = false;
        break;
      default: done = false;
    }
  });
  if (!done) return unsupported(c.op, in.dtype, ("reduce op " + std::to_string(c.i[0])).c_str());
  return {};
}

KernelResult k_argmax(const Call& c, Exec& ex) {
  const auto& in = c.inputs[0];
  const auto& out = c.outputs[0];
  const int64_t axis = c.i[0];
  if (out.dtype != BRAID_INT64) return unsupported(c.op, in.dtype, "output must be int64");
  const Split sp = split_axes(in, out, [&](int d) { return d == axis; });
  visit_dtype(NumericTypes{}, in.dtype,
              [&]<class T>(Tag<T>) { argmax_typed<T>(ex, sp, data_of<const T>(in), data_of<int64_t>(out)); });
  return {};
}

}  // namespace braid::cpu::kern
