// float32 gemm through oneDNN (see gemm_onednn.h).
#include "common.h"
// (common.h first: see the note at its top)
#include "gemm_onednn.h"

#ifdef BRAID_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.h>

#include <array>
#include <map>
#include <oneapi/dnnl/dnnl.hpp>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>

#include "host.h"

extern "C" void omp_set_num_threads(int);  // libgomp: oneDNN's threading runtime in Debian's build

namespace braid::cpu::kern::onednn {
namespace {

std::atomic<bool> g_exiting{false};
std::atomic<int> g_calls_in_flight{0};

void exit_guard() {
  g_exiting.store(true);
  while (g_calls_in_flight.load() != 0) std::this_thread::yield();
}

}  // namespace

// In flight first, exiting second (both sequentially consistent): a call the guard did not wait for
// sees g_exiting set.
Call::Call() {
  g_calls_in_flight.fetch_add(1);
  admitted_ = !g_exiting.load();
  if (!admitted_) g_calls_in_flight.fetch_sub(1);
}

Call::~Call() {
  if (admitted_) g_calls_in_flight.fetch_sub(1);
}

void Call::succeeded(Kind kind) {
  static std::once_flag registered[2];
  std::call_once(registered[kind], [] { (void)std::atexit(exit_guard); });
}

// BRAID_CPU_GEMM: onednn (the default where oneDNN is built in) or openblas.
bool sgemm_in_use() {
  static const bool on = [] {
    const char* v = std::getenv("BRAID_CPU_GEMM");
    if (v == nullptr || *v == '\0' || std::strcmp(v, "onednn") == 0) return true;
    if (std::strcmp(v, "openblas") == 0) return false;
    host::log(BRAID_LOG_WARNING,
              std::string("cpu backend: BRAID_CPU_GEMM=") + v + " is neither onednn nor openblas; using onednn");
    return true;
  }();
  return on;
}

void single_threaded() {
  thread_local const bool once = (omp_set_num_threads(1), true);
  (void)once;
}

void prepare() {
  if (!sgemm_in_use()) return;
  try {
    std::thread([] {
      try {
        float a[64 * 64] = {}, c[64 * 64];
        (void)sgemm(false, false, 64, 64, 64, a, 64, a, 64, 0.0f, c, 64);
      } catch (...) {  // a failed set-up is retried by the first real gemm, which reports it
      }
    }).join();
  } catch (const std::system_error&) {  // no thread to spare: the first gemm sets oneDNN up instead
  }
}

bool sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
           float beta, float* c, int64_t ldc) {
  if (!sgemm_in_use()) return false;
  Call call;
  if (!call.admitted()) return false;
  single_threaded();
  const dnnl_status_t s = dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc);
  if (s == dnnl_success) {
    call.succeeded(Call::gemm);
    return true;
  }
  // Only a call oneDNN refused before computing goes to OpenBLAS: one that failed midway may have
  // written part of C, and a rerun with beta = 1 (an accumulating gradient) would add that part twice.
  if (s == dnnl_out_of_memory) throw std::bad_alloc();
  if (s != dnnl_invalid_arguments && s != dnnl_unimplemented)
    throw std::runtime_error("oneDNN sgemm failed (dnnl_status " + std::to_string(int(s)) + ")");
  static std::once_flag logged;
  std::call_once(logged, [s] {
    host::log(BRAID_LOG_WARNING, "cpu backend: oneDNN refused an sgemm (dnnl_status " + std::to_string(int(s)) +
                                     "); such calls run on OpenBLAS");
  });
  return false;
}

bool gemm_bf16(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const uint16_t* a, int64_t lda, const uint16_t* b,
               int64_t ldb, float* c, int64_t ldc) {
  if (!sgemm_in_use() || m <= 0 || n <= 0 || k <= 0) return false;
  Call call;
  if (!call.admitted()) return false;
  single_threaded();
  using dnnl::memory;
  static const dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  // One primitive per shape and layout (making one JIT-compiles it): a training run has a handful. Per
  // thread: a primitive's scratchpad is its own, so one primitive must not run on two threads at once.
  using Key = std::array<int64_t, 8>;
  thread_local std::map<Key, dnnl::matmul> made;
  const Key key{m, n, k, lda, ldb, ldc, ta ? 1 : 0, tb ? 1 : 0};
  const memory::desc ad({m, k}, memory::data_type::bf16, ta ? memory::dims{1, lda} : memory::dims{lda, 1});
  const memory::desc bd({k, n}, memory::data_type::bf16, tb ? memory::dims{1, ldb} : memory::dims{ldb, 1});
  const memory::desc cd({m, n}, memory::data_type::f32, memory::dims{ldc, 1});
  dnnl::matmul prim;
  try {
    auto it = made.find(key);
    if (it == made.end())
      it = made.emplace(key, dnnl::matmul(dnnl::matmul::primitive_desc(dnnl::matmul::desc(ad, bd, cd), eng))).first;
    prim = it->second;
  } catch (const dnnl::error& e) {  // a shape or CPU oneDNN has no bfloat16 matmul for: widened instead
    static std::once_flag logged;
    std::call_once(logged, [&] {
      host::log(BRAID_LOG_WARNING, std::string("cpu backend: oneDNN has no bfloat16 matmul here (") + e.what() +
                                       "); bfloat16 products are widened to float32");
    });
    return false;
  }
  dnnl::stream s(eng);
  memory am(ad, eng, const_cast<uint16_t*>(a)), bm(bd, eng, const_cast<uint16_t*>(b)), cm(cd, eng, c);
  prim.execute(s, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
  s.wait();
  call.succeeded(Call::gemm);
  return true;
}

}  // namespace braid::cpu::kern::onednn
#endif  // BRAID_HAVE_ONEDNN
