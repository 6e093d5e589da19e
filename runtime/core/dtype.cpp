#include "core/dtype.h"

#include "core/error.h"

namespace braid {

size_t dtype_size(braid_dtype dtype) noexcept {
  switch (dtype) {
    case BRAID_FLOAT32:
    case BRAID_INT32: return 4;
    case BRAID_FLOAT64:
    case BRAID_INT64: return 8;
    case BRAID_UINT8:
    case BRAID_BOOL: return 1;
    case BRAID_FLOAT16:
    case BRAID_BFLOAT16: return 2;
    default: return 0;
  }
}

const char* dtype_name(braid_dtype dtype) noexcept {
  switch (dtype) {
    case BRAID_FLOAT32: return "float32";
    case BRAID_FLOAT64: return "float64";
    case BRAID_INT32: return "int32";
    case BRAID_INT64: return "int64";
    case BRAID_UINT8: return "uint8";
    case BRAID_FLOAT16: return "float16";
    case BRAID_BFLOAT16: return "bfloat16";
    case BRAID_BOOL: return "bool";
    default: return "invalid";
  }
}

braid_dtype promote_types(braid_dtype a, braid_dtype b) noexcept {
  if (a == b) return a;
  const int ca = dtype_category(a), cb = dtype_category(b);
  if (ca != cb) return ca > cb ? a : b;
  if (ca == 2 && dtype_size(a) == dtype_size(b)) return BRAID_FLOAT32;  // float16 and bfloat16: neither holds the other
  return dtype_size(a) > dtype_size(b) ? a : b;
}

braid_dtype result_type(braid_dtype a, bool a_is_0d, braid_dtype b, bool b_is_0d) noexcept {
  if (a_is_0d == b_is_0d) return promote_types(a, b);
  const braid_dtype dims = a_is_0d ? b : a, zero_d = a_is_0d ? a : b;
  return dtype_category(zero_d) > dtype_category(dims) ? zero_d : dims;
}

void check_dtype(const braid_dtype& dtype, const char* what) {
  int32_t v = enum_int(dtype);
  if (!dtype_valid(v)) fail(BRAID_ERR_INVALID_ARGUMENT, what, ": invalid dtype value ", v);
}

}  // namespace braid

extern "C" {
BRAID_API const char* braid_dtype_name(braid_dtype dtype) { return braid::dtype_name(dtype); }
BRAID_API size_t braid_dtype_size(braid_dtype dtype) { return braid::dtype_size(dtype); }
}
