// COPY: strided N-d copy with conversion among all seven dtypes (convert.h). Also the engine behind
// DenseIn/DenseOut, which other kernels use to stage non-dense operands.
//   - same dtype, dense both sides: parallel memcpy;
//   - same dtype, a 2-D transpose inside (one side unit-stride on the last axis, the other on the
//     one before): 16x16 tiles, so both sides touch whole cache lines;
//   - same dtype otherwise: element moves by size (1/2/4/8 bytes), one instantiation per size;
//   - conversions: map() with convert<Dst, Src>.
#include "common.h"
// (common.h first: see the note at its top)
#include "convert.h"

namespace braid::cpu::kern {
namespace {

constexpr int64_t kTile = 16;  // 16x16 tiles: both sides' lines stay in L1 (measured best of 8..64)

// Whether the last two axes form a transpose: one operand walks the last axis with stride 1, the
// other walks the one before with stride 1.
bool is_transpose(const Layout<2>& L) {
  if (L.ndim < 2) return false;
  const int a = L.ndim - 1, b = L.ndim - 2;
  if (L.shape[a] < kTile / 2 || L.shape[b] < kTile / 2) return false;
  return (L.strides[0][a] == 1 && L.strides[1][a] != 1 && L.strides[1][b] == 1) ||
         (L.strides[1][a] == 1 && L.strides[0][a] != 1 && L.strides[0][b] == 1);
}

template <class E>
void transpose_copy(Exec& ex, const Layout<2>& L, E* dst, const E* src) {
  const int nd = L.ndim;
  const int64_t rows = L.shape[nd - 2], cols = L.shape[nd - 1];
  const int64_t dr = L.strides[0][nd - 2], dc = L.strides[0][nd - 1];
  const int64_t sr = L.strides[1][nd - 2], sc = L.strides[1][nd - 1];
  const int64_t row_tiles = (rows + kTile - 1) / kTile;
  // The outer axes (if any); each of their elements is one rows x cols plane.
  Layout<2> outer;
  outer.ndim = std::max(nd - 2, 1);
  outer.numel = 1;
  outer.shape[0] = 1;
  outer.strides[0][0] = outer.strides[1][0] = 0;
  for (int d = 0; d < nd - 2; ++d) {
    outer.shape[d] = L.shape[d];
    outer.strides[0][d] = L.strides[0][d];
    outer.strides[1][d] = L.strides[1][d];
    outer.numel *= L.shape[d];
  }
  // Work unit: one band of kTile rows of one plane, walked tile by tile across the columns.
  const int64_t grain = std::max<int64_t>(1, kGrain / (kTile * std::max<int64_t>(cols, 1)));
  parallel(ex, outer.numel * row_tiles, grain, [&](int64_t begin, int64_t end) {
    for (int64_t u = begin; u < end; ++u) {
      const int64_t plane = u / row_tiles, r0 = (u % row_tiles) * kTile, r1 = std::min(rows, r0 + kTile);
      int64_t od = 0, os = 0, rest = plane;
      for (int d = outer.ndim - 1; d >= 0; --d) {  // plane index -> offsets
        const int64_t i = rest % outer.shape[d];
        rest /= outer.shape[d];
        od += i * outer.strides[0][d];
        os += i * outer.strides[1][d];
      }
      for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
        const int64_t w = std::min(cols, c0 + kTile) - c0;
        for (int64_t r = r0; r < r1; ++r) {
          E* d = dst + od + r * dr + c0 * dc;
          const E* s = src + os + r * sr + c0 * sc;
          if (dc == 1)  // one side unit-stride: a single-stride inner loop
            for (int64_t c = 0; c < w; ++c) d[c] = s[c * sc];
          else
            for (int64_t c = 0; c < w; ++c) d[c * dc] = s[c];
        }
      }
    }
  });
}

template <class E>
void move_elements(Exec& ex, const Layout<2>& L, void* dst, const void* src) {
  E* d = static_cast<E*>(dst);
  const E* s = static_cast<const E*>(src);
  if (is_transpose(L)) return transpose_copy(ex, L, d, s);
  map(
      ex, L, kGrain, [](E& o, E x) { o = x; }, d, s);
}

}  // namespace

void copy_nd(Exec& ex, int ndim, const int64_t* shape, void* dst, braid_dtype dst_dt, const int64_t* dst_strides,
             const void* src, braid_dtype src_dt, const int64_t* src_strides) {
  const Layout<2> L = make_layout<2>(ndim, shape, {dst_strides, src_strides});
  if (L.numel == 0) return;
  if (dst_dt == src_dt) {
    const size_t es = dtype_size(dst_dt);
    if (L.ndim == 1 && L.inner_stride(0) == 1 && L.inner_stride(1) == 1) {
      auto* d = static_cast<std::byte*>(dst);
      const auto* s = static_cast<const std::byte*>(src);
      const int64_t bytes = L.numel * int64_t(es);
      parallel(ex, bytes, int64_t{1} << 18, [&](int64_t b, int64_t e) { std::memcpy(d + b, s + b, size_t(e - b)); });
      return;
    }
    switch (es) {
      case 1: return move_elements<uint8_t>(ex, L, dst, src);
      case 2: return move_elements<uint16_t>(ex, L, dst, src);
      case 4: return move_elements<uint32_t>(ex, L, dst, src);
      default: return move_elements<uint64_t>(ex, L, dst, src);
    }
  }
  visit_dtype(AllTypes{}, src_dt, [&]<class S>(Tag<S>) {
    visit_dtype(AllTypes{}, dst_dt, [&]<class D>(Tag<D>) {
      map(
          ex, L, kGrain, [](D& o, S x) { o = convert<D>(x); }, static_cast<D*>(dst), static_cast<const S*>(src));
    });
  });
}

KernelResult k_copy(const Call& c, Exec& ex) {
  const auto& in = c.inputs[0];
  const auto& out = c.outputs[0];
  if (!(out.dtype >= 0 && out.dtype < BRAID_DTYPE_COUNT)) return unsupported(c.op, out.dtype, "output dtype");
  copy_nd(ex, out.ndim, out.shape, view_data(out), out.dtype, out.strides, view_data(in), in.dtype, in.strides);
  return {};
}

}  // namespace braid::cpu::kern
