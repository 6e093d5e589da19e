// TAKE and TAKE_BWD (abi/braid_backend.h, "Indexing kernels"): rows of x picked by an index, and the
// sum of dy's rows back into the rows they were picked from.
#include "common.h"

namespace braid::cpu::kern {

namespace {

// The index values as int64 with Python's negative indices wrapped, or the first one out of range.
struct Index {
  std::vector<int64_t> rows;
  std::string error;
};

template <class I>
Index read_index(const I* index, int64_t m, int64_t n) {
  Index out;
  out.rows.resize(size_t(m));
  for (int64_t j = 0; j < m; ++j) {
    const int64_t i = index[j];
    if (i < -n || i >= n) {
      out.error = "an index is out of range: " + std::to_string(i) + " for an axis of " + std::to_string(n);
      return out;
    }
    out.rows[size_t(j)] = i < 0 ? i + n : i;
  }
  return out;
}

Index index_of(const braid_buffer_view& v, int64_t n) {
  const int64_t m = v.shape[0];
  if (v.dtype == BRAID_INT32) return read_index(data_of<const int32_t>(v), m, n);
  return read_index(data_of<const int64_t>(v), m, n);
}

// Checks the views of a TAKE or TAKE_BWD call (x or dy first; the index's extent m is the middle one
// of `picked`) and reads the index over an axis of n; a failure in `result`.
Index checked_index(const Call& c, const braid_buffer_view& picked, int64_t n, KernelResult& result) {
  const auto &a = c.inputs[0], &index = c.inputs[1], &out = c.outputs[0];
  if (index.dtype != BRAID_INT32 && index.dtype != BRAID_INT64) {
    result = unsupported(c.op, index.dtype, "the index must be int32 or int64");
    return {};
  }
  if (a.ndim != 3 || out.ndim != 3 || index.ndim != 1 || !is_contiguous(a) || !is_contiguous(out) ||
      !is_contiguous(index) || a.shape[0] != out.shape[0] || a.shape[2] != out.shape[2] ||
      index.shape[0] != picked.shape[1]) {
    result = unsupported(c.op, a.dtype, "views must be contiguous [outer, n, inner] and an index [m]");
    return {};
  }
  Index read = index_of(index, n);
  if (!read.error.empty()) result = fail(BRAID_ERR_KERNEL, std::string(op_name(c.op)) + ": " + read.error);
  return read;
}

}  // namespace

// out[o, j, k] = x[o, index[j], k]: rows of inner elements copied as bytes, parallel over (o, j).
KernelResult k_take(const Call& c, Exec& ex) {
  const auto &x = c.inputs[0], &out = c.outputs[0];
  const int64_t n = x.shape[1], m = out.shape[1];
  KernelResult r;
  const Index index = checked_index(c, out, n, r);
  if (r.status != BRAID_OK) return r;
  const size_t row = size_t(x.shape[2]) * dtype_size(x.dtype);
  const auto* src = data_of<const std::byte>(x);
  auto* dst = data_of<std::byte>(out);
  const int64_t outer = x.shape[0];
  const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(1, x.shape[2]));
  parallel(ex, outer * m, grain, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t o = t / m, j = t % m;
      std::memcpy(dst + size_t(t) * row, src + size_t(o * n + index.rows[size_t(j)]) * row, row);
    }
  });
  return {};
}

// dx[o, r, k] = sum over j (in order) with index[j] == r of dy[o, j, k]. Each (o, r) row is written by
// one task, which zeroes it and adds its picks in increasing j: deterministic, no atomics.
KernelResult k_take_bwd(const Call& c, Exec& ex) {
  const auto &dy = c.inputs[0], &dx = c.outputs[0];
  const int64_t m = dy.shape[1], n = dx.shape[1];
  KernelResult r;
  const Index index = checked_index(c, dy, n, r);
  if (r.status != BRAID_OK) return r;
  // The picks of each row r, in increasing j: picks[first[r] .. first[r + 1]).
  std::vector<int64_t> first(size_t(n) + 1, 0);
  std::vector<int64_t> picks(static_cast<size_t>(m));
  for (int64_t row : index.rows) ++first[size_t(row) + 1];
  for (int64_t row = 0; row < n; ++row) first[size_t(row) + 1] += first[size_t(row)];
  std::vector<int64_t> fill(first.begin(), first.end() - 1);
  for (int64_t j = 0; j < m; ++j) picks[size_t(fill[size_t(index.rows[size_t(j)])]++)] = j;
  const int64_t outer = dy.shape[0], inner = dy.shape[2];
  bool done = visit_dtype(FloatTypes{}, dy.dtype, [&]<class T>(Tag<T>) {
    const T* g = data_of<const T>(dy);
    T* d = data_of<T>(dx);
    const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(1, inner));
    parallel(ex, outer * n, grain, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        const int64_t o = t / n, r = t % n;
        T* row = d + t * inner;
        std::fill(row, row + inner, T(0));
        for (int64_t p = first[size_t(r)]; p < first[size_t(r) + 1]; ++p) {
          const T* from = g + (o * m + picks[size_t(p)]) * inner;
          for (int64_t k = 0; k < inner; ++k) row[k] += from[k];
        }
      }
    });
  });
  if (!done) return unsupported(c.op, dy.dtype);
  return {};
}

}  // namespace braid::cpu::kern
