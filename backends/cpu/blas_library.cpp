#include "blas_library.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

#include "cpu_features.h"
#include "fork_guard.h"
#include "host.h"

namespace braid::cpu {
namespace {

// The runtime soname first (what Debian's libopenblas0 alternatives provide), then the library the
// build found.
constexpr const char* kCandidates[] = {"libopenblas.so.0", BRAID_OPENBLAS_LIBRARY};

template <class F>
bool resolve(void* lib, const char* name, F& out, std::string& error) {
  out = reinterpret_cast<F>(dlsym(lib, name));
  if (out == nullptr && error.empty()) error = std::string("OpenBLAS has no ") + name;
  return out != nullptr;
}

BlasLibrary open_blas() {
  BlasLibrary b;
  // BRAID_BLAS_CORETYPE, when set, names the kernels outright. Otherwise braid's choice from the CPU's
  // features replaces any OPENBLAS_CORETYPE for the library's constructor: a value inherited from the
  // environment (one machine image for many CPUs) held an AVX-512 machine to AVX2 kernels, half its
  // sgemm speed (docs/BENCHMARKS.md). The environment is restored once the constructor has run. OpenBLAS
  // reads it only when first loaded: if the application loaded it before (its own BLAS calls), that
  // instance keeps the kernels it chose, and `core` says which.
  const char* forced = std::getenv("BRAID_BLAS_CORETYPE");
  const char* inherited = std::getenv("OPENBLAS_CORETYPE");
  const std::string saved = inherited != nullptr ? inherited : "";
  b.requested = forced != nullptr && *forced != '\0' ? forced : openblas_core_for(cpu_features());
  const bool replaced = !b.requested.empty() && b.requested != saved;
  if (replaced) setenv("OPENBLAS_CORETYPE", b.requested.c_str(), 1);
  void* lib = nullptr;
  std::string why;
  for (const char* name : kCandidates) {
    if (name == nullptr || *name == '\0') continue;
    lib = dlopen(name, RTLD_NOW | RTLD_GLOBAL);
    if (lib != nullptr) break;
    if (const char* e = dlerror(); e != nullptr && why.empty()) why = e;
  }
  if (inherited == nullptr)
    unsetenv("OPENBLAS_CORETYPE");
  else
    setenv("OPENBLAS_CORETYPE", saved.c_str(), 1);
  if (lib == nullptr) {
    b.error = "cannot open OpenBLAS: " + why;
    return b;
  }
  std::string error;
  resolve(lib, "cblas_sgemm", b.sgemm, error);
  resolve(lib, "cblas_dgemm", b.dgemm, error);
  resolve(lib, "cblas_sgemv", b.sgemv, error);
  resolve(lib, "cblas_dgemv", b.dgemv, error);
  resolve(lib, "openblas_get_num_threads", b.get_num_threads, error);
  resolve(lib, "openblas_set_num_threads", b.set_num_threads, error);
  b.error = error;
  // OpenBLAS registered its fork handlers in its constructor just now; ours must come after them, so
  // that (prepare handlers run in reverse order) ours run first (fork_guard.h).
  install_fork_guard();
  using Corename = char* (*)();
  if (auto corename = reinterpret_cast<Corename>(dlsym(lib, "openblas_get_corename"))) b.core = corename();
  // Said after loading, with the kernels OpenBLAS did choose: an instance the application loaded before
  // keeps its own, whatever braid asked for.
  if (replaced && inherited != nullptr)
    host::log(BRAID_LOG_INFO, "cpu backend: OPENBLAS_CORETYPE=" + saved + " was set; braid asked for the " +
                                  b.requested + " kernels for this CPU and OpenBLAS runs " +
                                  (b.core.empty() ? std::string("unknown") : b.core) +
                                  " (BRAID_BLAS_CORETYPE=" + saved + " keeps " + saved + ")");
  return b;  // never dlclosed: gemms may run until the process exits
}

}  // namespace

const BlasLibrary& blas() {
  // setenv/unsetenv are not safe against a concurrent getenv in another thread; this runs once, when
  // the first CPU device opens, before any of braid's threads run kernels.
  static const BlasLibrary b = open_blas();
  return b;
}

}  // namespace braid::cpu
