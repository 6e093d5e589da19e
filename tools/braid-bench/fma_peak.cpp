// The measured float32 FMA peak of the host's cores: every thread runs independent chains of fused
// multiply-adds on the widest vectors the CPU has (AVX-512, else AVX2), enough chains to cover the FMA
// latency on two pipes, with no memory traffic. What a gemm could reach at most on these cores, at the
// clock they run now (turbo and all), measured rather than quoted from a datasheet.
#include <immintrin.h>

#include <thread>
#include <vector>

#include "bench.h"
#include "timer.h"

namespace braid::bench {
namespace {

constexpr int kChains = 12;  // > latency (4) x pipes (2): the pipes never wait on a result
constexpr long kIterations = 20'000'000;

__attribute__((target("avx512f"))) double run_avx512() {
  __m512 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i));
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (long n = 0; n < kIterations; ++n)
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  __m512 sum = acc[0];
  for (int i = 1; i < kChains; ++i) sum = _mm512_add_ps(sum, acc[i]);
  alignas(64) float out[16];
  _mm512_store_ps(out, sum);
  return out[0];
}

__attribute__((target("avx2,fma"))) double run_avx2() {
  __m256 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm256_set1_ps(static_cast<float>(i));
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (long n = 0; n < kIterations; ++n)
    for (int i = 0; i < kChains; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  __m256 sum = acc[0];
  for (int i = 1; i < kChains; ++i) sum = _mm256_add_ps(sum, acc[i]);
  alignas(32) float out[8];
  _mm256_store_ps(out, sum);
  return out[0];
}

}  // namespace

FmaPeak measure_fma_peak(int threads) {
  FmaPeak p;
  const bool avx512 = __builtin_cpu_supports("avx512f");
  if (!avx512 && !(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) return p;
  p.isa = avx512 ? "avx512" : "avx2";
  const int lanes = avx512 ? 16 : 8;
  std::vector<double> sinks(static_cast<size_t>(threads));
  tools::Stopwatch sw;
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] { sinks[static_cast<size_t>(t)] = avx512 ? run_avx512() : run_avx2(); });
  for (std::thread& th : pool) th.join();
  const double seconds = sw.seconds();
  const double flop = 2.0 * lanes * kChains * static_cast<double>(kIterations) * threads;
  p.gflops = flop / seconds * 1e-9;
  for (double s : sinks) p.sink += s;
  return p;
}

}  // namespace braid::bench
