#include "cublas_lib.h"

#include <dlfcn.h>

#include <mutex>

namespace braid::cuda {
namespace {

struct Loaded {
  std::once_flag once;
  CublasLib lib;
  bool ok = false;
  const char* why = "";
};

template <class F>
bool resolve(void* h, const char* name, F& out) {
  out = reinterpret_cast<F>(dlsym(h, name));
  return out != nullptr;
}

void load(Loaded& l) {
  // The toolkit's major version first (ABI-compatible with the headers we compiled against).
  void* h = dlopen("libcublas.so.13", RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) h = dlopen("libcublas.so", RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    l.why = "libcublas.so.13 not found";
    return;
  }
  CublasLib& b = l.lib;
  if (!resolve(h, "cublasCreate_v2", b.create) || !resolve(h, "cublasDestroy_v2", b.destroy) ||
      !resolve(h, "cublasSetStream_v2", b.set_stream) || !resolve(h, "cublasSetMathMode", b.set_math_mode) ||
      !resolve(h, "cublasSgemmStridedBatched", b.sgemm_strided_batched) ||
      !resolve(h, "cublasDgemmStridedBatched", b.dgemm_strided_batched)) {
    l.why = "libcublas lacks a needed symbol";
    dlclose(h);
    return;
  }
  l.ok = true;
}

}  // namespace

const CublasLib* cublas_lib(const char** why) {
  static Loaded l;  // one per process, like the library itself
  std::call_once(l.once, [] { load(l); });
  if (why != nullptr) *why = l.why;
  return l.ok ? &l.lib : nullptr;
}

}  // namespace braid::cuda
