// Suite `gemm`: a 2000x2000 float32 matmul through braid versus a direct OpenBLAS cblas_sgemm call in
// the same process and run. braid's CPU backend calls the same OpenBLAS, so the ratio is the cost of
// going through the runtime (dispatch, allocation, the wait) on a 16-GFLOP op: it should be ~1.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "bench.h"
#include "gemm_cuda.h"
#include "stats.h"
#include "timer.h"

#if BRAID_BENCH_HAVE_OPENBLAS
#include <cblas.h>
#include <dlfcn.h>
#endif

namespace braid::bench {
namespace {

constexpr int64_t kN = 2000;
constexpr int kWarmup = 1;
constexpr int kGemmRepeat = 5;
constexpr double kFlop = 2.0 * kN * kN * kN;

#if BRAID_BENCH_HAVE_OPENBLAS
// OpenBLAS as the baseline calls it: opened at run time, after the context, like the CPU backend opens
// it (not linked: a linked copy would be initialised when braid-bench starts, with OpenBLAS's own CPU
// detection, before the backend could choose the kernels for this CPU's ISA). One process holds one
// instance, so the baseline runs the same kernels as braid; `core` names them.
struct DirectBlas {
  decltype(&cblas_sgemm) sgemm = nullptr;
  decltype(&openblas_get_num_threads) get_num_threads = nullptr;
  decltype(&openblas_set_num_threads) set_num_threads = nullptr;
  std::string core;
};
DirectBlas open_direct_blas() {
  DirectBlas b;
  void* lib = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_GLOBAL);
  if (lib == nullptr) throw Error(std::string("cannot open OpenBLAS for the baseline: ") + dlerror());
  b.sgemm = reinterpret_cast<decltype(b.sgemm)>(dlsym(lib, "cblas_sgemm"));
  b.get_num_threads = reinterpret_cast<decltype(b.get_num_threads)>(dlsym(lib, "openblas_get_num_threads"));
  b.set_num_threads = reinterpret_cast<decltype(b.set_num_threads)>(dlsym(lib, "openblas_set_num_threads"));
  if (!b.sgemm || !b.get_num_threads || !b.set_num_threads)
    throw Error("OpenBLAS lacks cblas_sgemm or its thread calls");
  if (auto corename = reinterpret_cast<char* (*)()>(dlsym(lib, "openblas_get_corename"))) b.core = corename();
  return b;
}
#endif

// braid's sgemm against the measured FMA peak of the cores it ran on (target: >= 0.85x), measured
// after the gemm runs, on as many threads as the device has cores.
void report_against_peak(const Run& run, const Figure& gemm, int threads) {
  if (run.info.kind != BRAID_DEVICE_CPU) return;
  const FmaPeak peak = measure_fma_peak(threads);
  if (peak.isa.empty()) {
    run.out->note("gemm", "no FMA peak: the CPU has neither AVX-512 nor AVX2+FMA");
    return;
  }
  Figure f{"gemm",
           "sgemm_2000_vs_fma_peak",
           gemm.value,
           "GFLOP/s",
           "measured " + peak.isa + " FMA peak, " + std::to_string(threads) + " thread" + (threads == 1 ? "" : "s"),
           peak.gflops};
  run.out->figure(f);
}

Tensor uniform_2d(const Run& run) {
  const int64_t shape[2] = {kN, kN};
  braid_tensor t = nullptr;
  check(braid_random_uniform(run.ctx, run.device, BRAID_FLOAT32, 2, shape, -1.0, 1.0, &t), "braid_random_uniform");
  return Tensor(t);
}

std::vector<float> to_host(braid_tensor t) {
  std::vector<float> host(static_cast<size_t>(kN * kN));
  check(braid_tensor_to_host(t, host.data(), host.size() * sizeof(float)), "braid_tensor_to_host");
  return host;
}

}  // namespace

void suite_gemm(Run& run) {
  const int repeat = run.repeat_or(kGemmRepeat);
  const Tensor a = uniform_2d(run), b = uniform_2d(run);
  check(braid_wait_all(run.ctx), "braid_wait_all");

  // braid: push, wait for the result, drop it (the caching allocator hands the block back next run).
  std::vector<float> braid_c;
  auto braid_run = [&] {
    tools::Stopwatch sw;
    braid_tensor c = nullptr;
    check(braid_matmul(a.get(), b.get(), 0, 0, &c), "braid_matmul");
    Tensor owned(c);
    check(braid_tensor_wait_to_read(c), "braid_tensor_wait_to_read");
    const double seconds = sw.seconds();
    if (braid_c.empty()) braid_c = to_host(c);  // kept for the correctness check, outside the timing
    return kFlop / seconds * 1e-9;
  };
  Figure f{"gemm", "sgemm_2000", 0, "GFLOP/s", std::nullopt, 0};

  // On a cuda device the anchor is a direct cuBLAS call on the same GPU (gemm_cuda.cpp).
  if (run.info.backend != nullptr && std::string(run.info.backend) == "cuda") {
    const std::vector<float> ha = to_host(a.get()), hb = to_host(b.get());
    auto r = cuda_gemm_anchor(run.info.backend_index, kN, ha, hb, braid_run, kWarmup, repeat);
    if (!r) {
      f.value = tools::measure(kWarmup, repeat, braid_run).median;
      run.out->figure(f);
      run.out->note("gemm", "cuBLAS baseline skipped: braid-bench was built without CUDA, or cuBLAS did not load");
      return;
    }
    f.value = r->braid_gflops;
    f.baseline = "cuBLAS cublasSgemm (FP32, same GPU)";
    f.baseline_value = r->anchor_gflops;
    run.out->figure(f);
    double max_err = 0, max_ref = 0;
    for (size_t i = 0; i < r->product.size(); ++i) {
      max_err = std::fmax(max_err, std::fabs(static_cast<double>(braid_c[i]) - r->product[i]));
      max_ref = std::fmax(max_ref, std::fabs(static_cast<double>(r->product[i])));
    }
    const double rel = max_ref > 0 ? max_err / max_ref : max_err;
    if (rel > 1e-4) throw Error("braid's product differs from cuBLAS's: max relative error " + std::to_string(rel));
    run.out->note("gemm", "result matches cuBLAS (max relative error " + std::to_string(rel) + ")");
    return;
  }

  const int threads =
      run.info.kind == BRAID_DEVICE_CPU && run.info.compute_units > 0 ? run.info.compute_units : run.host_cores;
#if BRAID_BENCH_HAVE_OPENBLAS
  // The baseline gets the cores the CPU backend gives the device (all cores of the affinity mask for a
  // single device) as OpenBLAS threads. The setting is process-wide and the backend shares this
  // libopenblas (running it single-threaded, splitting gemms over its own arena), so it is changed
  // only while braid is idle, and restored after.
  const std::vector<float> ha = to_host(a.get()), hb = to_host(b.get());
  std::vector<float> hc(ha.size());
  const DirectBlas direct = open_direct_blas();
  run.out->note("gemm", "OpenBLAS kernels: " + direct.core +
                            " (braid_device_info's properties_json says what the CPU backend chose, and "
                            "which library runs its float32 gemms: \"sgemm\")");
  auto blas_run = [&] {
    const int previous_threads = direct.get_num_threads();
    if (previous_threads != threads) direct.set_num_threads(threads);
    tools::Stopwatch sw;
    direct.sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, kN, kN, kN, 1.0f, ha.data(), kN, hb.data(), kN, 0.0f,
                 hc.data(), kN);
    const double seconds = sw.seconds();
    if (previous_threads != threads) direct.set_num_threads(previous_threads);
    return kFlop / seconds * 1e-9;
  };
  for (int i = 0; i < kWarmup; ++i) {
    braid_run();
    blas_run();
  }
  const auto [braid_s, blas_s] = tools::measure_interleaved<2>(repeat, {braid_run, blas_run});
  f.value = braid_s.median;
  f.baseline = "openblas cblas_sgemm (" + std::to_string(threads) + " thread" + (threads == 1 ? "" : "s") + ")";
  f.baseline_value = blas_s.median;
  run.out->figure(f);

  // A fast wrong answer is no answer: compare with the baseline's product.
  double max_err = 0, max_ref = 0;
  for (size_t i = 0; i < hc.size(); ++i) {
    max_err = std::fmax(max_err, std::fabs(static_cast<double>(braid_c[i]) - hc[i]));
    max_ref = std::fmax(max_ref, std::fabs(static_cast<double>(hc[i])));
  }
  const double rel = max_ref > 0 ? max_err / max_ref : max_err;
  char rel_text[32];
  std::snprintf(rel_text, sizeof rel_text, "%.2g", rel);
  if (rel > 1e-4) throw Error(std::string("braid's product differs from OpenBLAS's: max relative error ") + rel_text);
  run.out->note("gemm", std::string("result matches OpenBLAS (max relative error ") + rel_text +
                            "); target: >= 0.97x the direct call (medians of " + std::to_string(repeat) +
                            " alternating runs)");
  report_against_peak(run, f, threads);
#else
  const tools::Summary braid_s = tools::measure(kWarmup, repeat, braid_run);
  f.value = braid_s.median;
  run.out->figure(f);
  run.out->note("gemm", "OpenBLAS baseline skipped: braid-bench was built without OpenBLAS");
  report_against_peak(run, f, threads);
#endif
}

}  // namespace braid::bench
