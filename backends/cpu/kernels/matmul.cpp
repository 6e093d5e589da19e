// MATMUL: op(a) @ op(b), batched, through OpenBLAS gemm. Every operand whose matrix is row-major
// (unit inner stride, row stride >= width) or column-major (the transpose of one) goes to gemm as is,
// with its row stride as the leading dimension and the transpose flag flipped for column-major, so
// dense, transposed and sliced views cost no copy. Only other views are packed into dense scratch.
#include "common.h"
// (common.h first: see the note at its top)
#include "blas.h"
#include "gemm_onednn.h"

#include <atomic>

namespace braid::cpu::kern {
namespace {

// A matrix as gemm sees it: data, leading dimension, and whether gemm must transpose it.
template <class T>
struct Mat {
  const T* p;
  int64_t ld;
  bool trans;
};

// How a rows x cols matrix with strides (rs, cs) maps onto BLAS storage: 0 = row-major,
// 1 = column-major, -1 = neither. Strides of size-1 axes are irrelevant.
struct Storage {
  int kind;
  int64_t ld;
};
Storage storage(int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  if ((cs == 1 || cols == 1) && (rows == 1 || rs >= std::max<int64_t>(cols, 1)))
    return {0, rows == 1 ? std::max<int64_t>(cols, 1) : rs};
  if ((rs == 1 || rows == 1) && (cols == 1 || cs >= std::max<int64_t>(rows, 1)))
    return {1, cols == 1 ? std::max<int64_t>(rows, 1) : cs};
  return {-1, 0};
}

// Batch, rows, cols and strides of a 2-D or 3-D view (2-D: one batch of stride 0).
struct Dims3 {
  int64_t batch, rows, cols, bs, rs, cs;
};
Dims3 dims3(const braid_buffer_view& v) {
  if (v.ndim == 3) return {v.shape[0], v.shape[1], v.shape[2], v.strides[0], v.strides[1], v.strides[2]};
  return {1, v.shape[0], v.shape[1], 0, v.strides[0], v.strides[1]};
}

// An input operand ready for gemm: the view itself, or a dense [batch, rows, cols] packed copy.
template <class T>
class Operand {
 public:
  Operand(Exec& ex, const braid_buffer_view& v, bool trans) : d_(dims3(v)) {
    const Storage s = storage(d_.rows, d_.cols, d_.rs, d_.cs);
    const T* base = data_of<const T>(v);
    if (s.kind >= 0) {
      m_ = {base, s.ld, trans != (s.kind == 1)};
      return;
    }
    // A broadcast batch (stride 0) is packed once.
    const int64_t packs = d_.bs == 0 ? 1 : d_.batch;
    const int64_t shape[3] = {packs, d_.rows, d_.cols}, src[3] = {d_.bs, d_.rs, d_.cs};
    const int64_t dst[3] = {d_.bs == 0 ? 0 : d_.rows * d_.cols, d_.cols, 1};
    buf_.resize(size_t(packs * d_.rows * d_.cols));
    copy_nd(ex, 3, shape, buf_.data(), dtype_of<T>, dst, base, dtype_of<T>, src);
    m_ = {buf_.data(), std::max<int64_t>(d_.cols, 1), trans};
    d_.bs = dst[0];
  }
  Mat<T> at(int64_t b) const { return {m_.p + b * d_.bs, m_.ld, m_.trans}; }
  int64_t batch_stride() const { return d_.bs; }

 private:
  Dims3 d_;
  Mat<T> m_{};
  std::vector<T> buf_;
};

template <class T>
void matmul_typed(Exec& ex, const Call& c) {
  const auto& va = c.inputs[0];
  const auto& vb = c.inputs[1];
  const auto& vc = c.outputs[0];
  const bool ta = c.i[0] != 0, tb = c.i[1] != 0;
  const Dims3 dc = dims3(vc);
  const Dims3 da = dims3(va);
  const int64_t B = dc.batch, M = dc.rows, N = dc.cols, K = ta ? da.rows : da.cols;
  if (B == 0 || M == 0 || N == 0) return;

  // Output: row-major as is; column-major as C^T = op(b)^T op(a)^T; otherwise dense scratch.
  const Storage so = storage(M, N, dc.rs, dc.cs);
  std::vector<T> scratch;
  T* cbase = data_of<T>(vc);
  int64_t cbs = dc.bs, ldc = so.ld;
  if (so.kind < 0) {
    scratch.resize(size_t(B * M * N));
    cbase = scratch.data();
    cbs = M * N;
    ldc = N;
  }
  const bool swap = so.kind == 1;

  if (K == 0) {  // empty inner dimension: C = 0 (BLAS may return early without writing)
    for (int64_t b = 0; b < B; ++b)
      for (int64_t i = 0; i < (swap ? N : M); ++i) std::fill_n(cbase + b * cbs + i * ldc, swap ? M : N, T(0));
  } else {
    const Operand<T> A(ex, va, ta), Bm(ex, vb, tb);
    // Small gemms of a batch each run whole on one core; a big one is split over the cores.
    auto one = [&](Exec& on, int64_t b) {
      const Mat<T> a = A.at(b), bb = Bm.at(b);
      T* cp = cbase + b * cbs;
      if (swap)
        parallel_gemm(on, !bb.trans, !a.trans, N, M, K, bb.p, bb.ld, a.p, a.ld, T(0), cp, ldc);
      else
        parallel_gemm(on, a.trans, bb.trans, M, N, K, a.p, a.ld, bb.p, bb.ld, T(0), cp, ldc);
    };
    if (B > 1 && double(M) * double(N) * double(K) < kSmallGemm) {
      parallel(ex, B, std::max<int64_t>(1, int64_t(kSmallGemm / (double(M) * double(N) * double(K) + 1.0))),
               [&](int64_t b0, int64_t b1) {
                 SerialExec serial;
                 for (int64_t b = b0; b < b1; ++b) one(serial, b);
               });
    } else {
      for (int64_t b = 0; b < B; ++b) one(ex, b);
    }
  }
  if (so.kind < 0) {
    const int64_t shape[3] = {B, M, N}, dst[3] = {dc.bs, dc.rs, dc.cs}, src[3] = {M * N, N, 1};
    copy_nd(ex, 3, shape, view_data(vc), vc.dtype, dst, scratch.data(), vc.dtype, src);
  }
}

// A [batch, rows, cols] view packed dense, in its own dtype (a broadcast batch packed once): returns the
// batch stride of the packed copy.
int64_t pack_dense(Exec& ex, const braid_buffer_view& v, std::vector<uint16_t>& out) {
  const Dims3 d = dims3(v);
  const int64_t packs = d.bs == 0 ? 1 : d.batch;
  out.resize(size_t(packs * d.rows * d.cols));
  const int64_t shape[3] = {packs, d.rows, d.cols}, src[3] = {d.bs, d.rs, d.cs};
  const int64_t dst[3] = {d.rows * d.cols, d.cols, 1};
  copy_nd(ex, 3, shape, out.data(), v.dtype, dst, view_data(v), v.dtype, src);
  return d.bs == 0 ? 0 : d.rows * d.cols;
}

// bfloat16 operands through oneDNN's bfloat16 matmul (float32 accumulation; about twice the float32
// rate on a core with AVX512-BF16), each batch's rows split over the cores. false when it did not run.
bool matmul_bf16(Exec& ex, const Call& c) {
  const auto &va = c.inputs[0], &vb = c.inputs[1], &vc = c.outputs[0];
  const bool ta = c.i[0] != 0, tb = c.i[1] != 0;
  const Dims3 dc = dims3(vc), da = dims3(va), db = dims3(vb);
  const int64_t B = dc.batch, M = dc.rows, N = dc.cols, K = ta ? da.rows : da.cols;
  if (dc.cs != 1 || dc.rs != N || (B > 1 && dc.bs != M * N) || K == 0) return false;  // the runtime's dense output
  std::vector<uint16_t> a, b;
  const int64_t abs = pack_dense(ex, va, a), bbs = pack_dense(ex, vb, b);
  const int64_t lda = da.cols, ldb = db.cols;
  float* out = data_of<float>(vc);
  std::atomic<bool> ok{true};
  for (int64_t bi = 0; bi < B && ok.load(); ++bi) {
    const uint16_t* ab = a.data() + bi * abs;
    const uint16_t* bb = b.data() + bi * bbs;
    float* cb = out + bi * M * N;
    parallel(ex, M, std::max<int64_t>(16, M / 8), [&](int64_t r0, int64_t r1) {
      // Rows r0..r1 of op(A): rows of A, or (transposed) its columns.
      const uint16_t* ar = ab + (ta ? r0 : r0 * lda);
      if (ok.load() && !onednn::gemm_bf16(ta, tb, r1 - r0, N, K, ar, lda, bb, ldb, cb + r0 * N, N)) ok.store(false);
    });
  }
  return ok.load();
}

// bfloat16 or float16 operands with a float32 result (plugin ABI 1.7, autocast): bfloat16 through
// oneDNN where it runs; otherwise both widened to float32 (exactly) into dense scratch, then the
// float32 gemm, whose accumulation is float32.
void matmul_low(Exec& ex, const Call& c) {
  if (c.inputs[0].dtype == BRAID_BFLOAT16 && matmul_bf16(ex, c)) return;
  Call wide = c;
  std::vector<float> scratch[2];
  braid_backend_buffer_t holders[2];
  for (int k = 0; k < 2; ++k) {
    const braid_buffer_view& v = c.inputs[k];
    int64_t n = 1;
    for (int d = 0; d < v.ndim; ++d) n *= v.shape[d];
    scratch[k].resize(size_t(n));
    braid_buffer_view& w = wide.inputs[k];
    contiguous_strides(v.ndim, v.shape, w.strides);  // a broadcast batch (stride 0) is expanded
    copy_nd(ex, v.ndim, v.shape, scratch[k].data(), BRAID_FLOAT32, w.strides, view_data(v), v.dtype, v.strides);
    holders[k] = {reinterpret_cast<std::byte*>(scratch[k].data()), uint64_t(n) * sizeof(float)};
    w.buffer = &holders[k];
    w.byte_offset = 0;
    w.dtype = BRAID_FLOAT32;
  }
  matmul_typed<float>(ex, wide);
}

}  // namespace

KernelResult k_matmul(const Call& c, Exec& ex) {
  if (c.inputs[0].dtype == BRAID_BFLOAT16 || c.inputs[0].dtype == BRAID_FLOAT16) {
    matmul_low(ex, c);
    return {};
  }
  visit_dtype(FloatTypes{}, c.inputs[0].dtype, [&]<class T>(Tag<T>) { matmul_typed<T>(ex, c); });
  return {};
}

}  // namespace braid::cpu::kern
