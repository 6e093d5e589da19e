#include "cublas_lib.h"

#include <dlfcn.h>

#include <cublas_api.h>

#include <mutex>
#include <string>

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

// The major version the plugin was compiled against, by soname: first where the loader looks (the
// application's RPATH, LD_LIBRARY_PATH, ld.so.cache), then in the toolkit the plugin was built with.
// Never the unversioned name: it may be another major version, with another ABI.
#define BRAID_STR2(x) #x
#define BRAID_STR(x) BRAID_STR2(x)
constexpr const char* kSoname = "libcublas.so." BRAID_STR(CUBLAS_VER_MAJOR);

void load(Loaded& l) {
  static std::string why;  // l.why points into it: lives as long as the process
  const std::string candidates[] = {kSoname, std::string(BRAID_CUDA_TOOLKIT_LIB) + "/" + kSoname};
  void* h = nullptr;
  for (const std::string& path : candidates) {
    h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h != nullptr) break;
    if (const char* e = dlerror(); e != nullptr) {
      if (!why.empty()) why += "; ";
      why += e;
    }
  }
  if (h == nullptr) {
    l.why = why.c_str();
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
  (void)resolve(h, "cublasGemmStridedBatchedEx", b.gemm_strided_batched_ex);  // optional
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
