// Suite `hw`: the hardware chapter's exercises (Dive into Deep Learning, "Hardware") measured on the
// host CPU, plus what braid's devices do with it: aligned vs unaligned loads, sequential vs strided
// and forward vs backward reads, row- vs column-major traversal, a pointer-chasing latency curve with
// the cache sizes it reveals next to what the OS reports, STREAM-like triad bandwidth on one thread
// and on every core, host<->device copies of every device braid sees, and float32 vs float64 matmul.
//
// Host measurements run on one thread unless a figure says otherwise and pin nothing. Every kernel
// returns what it computed and the suite folds it into a sink that it prints, so the compiler keeps
// the work.
#include <immintrin.h>
#include <sys/mman.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "bench.h"
#include "stats.h"
#include "timer.h"

namespace braid::bench {
namespace {

constexpr int kHwRepeat = 5;
constexpr const char* kSuite = "hw";

// What every kernel's result is folded into (printed at the end), so no work is dead code.
double g_sink = 0;

// Built by appending: GCC 12 warns (-Wrestrict, a false positive) on `"literal" + std::string`.
std::string cat(std::initializer_list<std::string_view> parts) {
  std::string s;
  for (std::string_view p : parts) s += p;
  return s;
}

// A page-aligned, zero-initialised host buffer (mmap: 2 MiB-aligned regions can get transparent huge
// pages, asked for with madvise, so the TLB does not blur the cache steps of the latency curve).
class Buffer {
 public:
  explicit Buffer(size_t bytes) : bytes_(bytes) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw Error(cat({"hw: cannot map ", std::to_string(bytes >> 20), " MiB"}));
    madvise(p, bytes, MADV_HUGEPAGE);  // a hint; fine if refused
    data_ = static_cast<char*>(p);
  }
  ~Buffer() { munmap(data_, bytes_); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  char* data() const { return data_; }
  size_t bytes() const { return bytes_; }

 private:
  char* data_ = nullptr;
  size_t bytes_ = 0;
};

std::string fmt(const char* format, double v) {
  char text[64];
  std::snprintf(text, sizeof text, format, v);
  return text;
}

void report(const Run& run, std::string name, double value, std::string unit) {
  run.out->figure(Figure{kSuite, std::move(name), value, std::move(unit), std::nullopt, 0});
}
void report(const Run& run, std::string name, double value, std::string unit, std::string baseline,
            double baseline_value) {
  run.out->figure(Figure{kSuite, std::move(name), value, std::move(unit), std::move(baseline), baseline_value});
}

// ---- aligned vs unaligned vector loads -------------------------------------------------------------
// Sums `floats` floats starting at p (any byte address) `passes` times with the widest unaligned load
// the CPU has; with p 64-byte aligned every load is one cache line, otherwise every 64-byte load
// straddles two lines (AVX-512), or every other 32-byte load does (AVX2).
__attribute__((target("avx512f"))) float sum_avx512(const char* p, size_t floats, int passes) {
  __m512 acc[8];
  for (auto& a : acc) a = _mm512_setzero_ps();
  for (int pass = 0; pass < passes; ++pass) {
    for (size_t i = 0; i < floats; i += 128)
      for (int k = 0; k < 8; ++k)
        acc[k] = _mm512_add_ps(acc[k], _mm512_loadu_ps(reinterpret_cast<const float*>(p + 4 * (i + 16 * k))));
    asm volatile("" ::: "memory");
  }
  for (int k = 1; k < 8; ++k) acc[0] = _mm512_add_ps(acc[0], acc[k]);
  alignas(64) float out[16];  // not _mm512_reduce_add_ps: GCC 12 warns inside it (-Wuninitialized)
  _mm512_store_ps(out, acc[0]);
  float s = 0;
  for (const float v : out) s += v;
  return s;
}

__attribute__((target("avx2"))) float sum_avx2(const char* p, size_t floats, int passes) {
  __m256 acc[8];
  for (auto& a : acc) a = _mm256_setzero_ps();
  for (int pass = 0; pass < passes; ++pass) {
    for (size_t i = 0; i < floats; i += 64)
      for (int k = 0; k < 8; ++k)
        acc[k] = _mm256_add_ps(acc[k], _mm256_loadu_ps(reinterpret_cast<const float*>(p + 4 * (i + 8 * k))));
    asm volatile("" ::: "memory");
  }
  for (int k = 1; k < 8; ++k) acc[0] = _mm256_add_ps(acc[0], acc[k]);
  alignas(32) float out[8];
  _mm256_store_ps(out, acc[0]);
  return out[0] + out[1] + out[2] + out[3] + out[4] + out[5] + out[6] + out[7];
}

float sum_sse(const char* p, size_t floats, int passes) {
  __m128 acc[8];
  for (auto& a : acc) a = _mm_setzero_ps();
  for (int pass = 0; pass < passes; ++pass) {
    for (size_t i = 0; i < floats; i += 32)
      for (int k = 0; k < 8; ++k)
        acc[k] = _mm_add_ps(acc[k], _mm_loadu_ps(reinterpret_cast<const float*>(p + 4 * (i + 4 * k))));
    asm volatile("" ::: "memory");
  }
  for (int k = 1; k < 8; ++k) acc[0] = _mm_add_ps(acc[0], acc[k]);
  alignas(16) float out[4];
  _mm_store_ps(out, acc[0]);
  return out[0] + out[1] + out[2] + out[3];
}

struct VectorSum {
  const char* isa;
  float (*fn)(const char*, size_t, int);
};
VectorSum vector_sum() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return {"AVX-512 (64-byte loads)", sum_avx512};
  if (__builtin_cpu_supports("avx2")) return {"AVX2 (32-byte loads)", sum_avx2};
  return {"SSE (16-byte loads)", sum_sse};
}

void alignment(const Run& run, int repeat) {
  const VectorSum vs = vector_sum();
  run.out->note(kSuite, std::string("alignment: sums of floats read with ") + vs.isa +
                            " unaligned-load instructions from a 64-byte-aligned address + offset bytes");
  struct Level {
    const char* name;
    size_t bytes;
  };
  // 16 KiB stays in L1, 512 KiB in L2, 256 MiB goes to DRAM.
  const Level levels[] = {{"l1", size_t{16} << 10}, {"l2", size_t{512} << 10}, {"dram", size_t{256} << 20}};
  const int offsets[] = {0, 1, 4, 16, 32, 63};
  Buffer buf((size_t{256} << 20) + 4096);
  for (size_t i = 0; i < buf.bytes() / 4; ++i) reinterpret_cast<float*>(buf.data())[i] = 1.0f;
  for (const Level& level : levels) {
    const size_t floats = level.bytes / 4;
    // 2 GiB read per sample (many passes over a cache-resident buffer): tens of milliseconds.
    const int passes = std::max<int>(1, static_cast<int>((size_t{2} << 30) / level.bytes));
    auto gbps = [&](int offset) {
      tools::Stopwatch sw;
      g_sink += vs.fn(buf.data() + offset, floats, passes);
      return static_cast<double>(level.bytes) * passes / sw.seconds() * 1e-9;
    };
    std::vector<std::vector<double>> samples(std::size(offsets));
    for (const int off : offsets) gbps(off);  // warm-up
    for (int r = 0; r < repeat; ++r)
      for (size_t k = 0; k < std::size(offsets); ++k) samples[k].push_back(gbps(offsets[k]));
    std::vector<double> med;
    for (auto& s : samples) med.push_back(tools::summarize(s).median);
    std::string base = "align_";
    base += level.name;
    report(run, base + "_off0", med[0], "GB/s");
    for (size_t k = 1; k < med.size(); ++k) {
      std::string name = base;
      name += "_off";
      name += std::to_string(offsets[k]);
      report(run, name, med[k], "GB/s", "offset 0 (64-byte aligned)", med[0]);
    }
    if (level.bytes <= (size_t{512} << 10)) {
      // Every byte offset 1..63 once per round in a cache; the mean against offset 0 (one sample per
      // offset and round, so the mean of the offsets' medians over the rounds).
      std::vector<std::vector<double>> per_offset(63);
      for (int r = 0; r < std::max(1, repeat / 2); ++r)
        for (int off = 1; off < 64; ++off) per_offset[static_cast<size_t>(off - 1)].push_back(gbps(off));
      double mean = 0;
      for (auto& s : per_offset) mean += tools::summarize(s).median / 63;
      report(run, base + "_mean_1_63", mean, "GB/s", "offset 0 (64-byte aligned)", med[0]);
    }
  }
}

// ---- sequential vs strided, forward vs backward -----------------------------------------------------
template <int Stride>
uint32_t sum_strided(const uint32_t* a, size_t n) {
  uint32_t s = 0;
  for (size_t i = 0; i < n; i += Stride) s += a[i];
  return s;
}
uint32_t sum_backward(const uint32_t* a, size_t n) {
  uint32_t s = 0;
  for (size_t i = n; i-- > 0;) s += a[i];
  return s;
}

void strides(const Run& run, int repeat) {
  const size_t bytes = size_t{256} << 20;  // 8x the L3 of most machines
  const size_t n = bytes / 4;
  Buffer buf(bytes);
  auto* a = reinterpret_cast<uint32_t*>(buf.data());
  for (size_t i = 0; i < n; ++i) a[i] = static_cast<uint32_t>(i);
  struct Case {
    int stride;
    uint32_t (*fn)(const uint32_t*, size_t);
  };
  const Case cases[] = {{1, sum_strided<1>}, {2, sum_strided<2>},   {4, sum_strided<4>},
                        {8, sum_strided<8>}, {16, sum_strided<16>}, {64, sum_strided<64>}};
  run.out->note(kSuite,
                "strides: uint32 sums over a 256 MiB array; GB/s of the elements read (4 bytes each), "
                "one cache line = 16 elements");
  std::vector<std::vector<double>> samples(std::size(cases) + 1);
  auto one = [&](size_t k) {
    tools::Stopwatch sw;
    double elements;
    if (k < std::size(cases)) {
      g_sink += cases[k].fn(a, n);
      elements = static_cast<double>(n / cases[k].stride);
    } else {
      g_sink += sum_backward(a, n);
      elements = static_cast<double>(n);
    }
    return elements * 4 / sw.seconds() * 1e-9;
  };
  for (size_t k = 0; k <= std::size(cases); ++k) one(k);
  for (int r = 0; r < repeat; ++r)
    for (size_t k = 0; k <= std::size(cases); ++k) samples[k].push_back(one(k));
  const double seq = tools::summarize(samples[0]).median;
  report(run, "stride_1", seq, "GB/s");
  for (size_t k = 1; k < std::size(cases); ++k)
    report(run, cat({"stride_", std::to_string(cases[k].stride)}), tools::summarize(samples[k]).median, "GB/s",
           "stride 1", seq);
  report(run, "backward_seq", tools::summarize(samples.back()).median, "GB/s", "forward (stride 1)", seq);
}

// ---- row-major vs column-major --------------------------------------------------------------------
float sum_rows(const float* m, size_t rows, size_t cols) {
  float acc[8] = {};
  for (size_t i = 0; i < rows; ++i)
    for (size_t j = 0; j < cols; ++j) acc[j & 7] += m[i * cols + j];
  float s = 0;
  for (float v : acc) s += v;
  return s;
}
float sum_cols(const float* m, size_t rows, size_t cols) {
  float acc[8] = {};
  for (size_t j = 0; j < cols; ++j)
    for (size_t i = 0; i < rows; ++i) acc[i & 7] += m[i * cols + j];
  float s = 0;
  for (float v : acc) s += v;
  return s;
}

void traversal(const Run& run, int repeat) {
  constexpr size_t kDim = 4096;
  Buffer buf(kDim * kDim * 4);
  auto* m = reinterpret_cast<float*>(buf.data());
  for (size_t i = 0; i < kDim * kDim; ++i) m[i] = 1.0f;
  auto time_ms = [&](bool rows) {
    tools::Stopwatch sw;
    g_sink += rows ? sum_rows(m, kDim, kDim) : sum_cols(m, kDim, kDim);
    return sw.seconds() * 1e3;
  };
  time_ms(true);
  time_ms(false);
  const auto [r, c] = tools::measure_interleaved<2>(std::max(3, repeat / 2 + 1),
                                                    {[&] { return time_ms(true); }, [&] { return time_ms(false); }});
  report(run, "row_major_4096sq", r.median, "ms");
  report(run, "col_major_4096sq", c.median, "ms", "row-major traversal", r.median);
}

// ---- pointer chasing --------------------------------------------------------------------------------
struct alignas(64) Line {
  Line* next;
  char pad[56];
};

// A random cyclic permutation of the first n lines (Sattolo: one cycle through all of them), so each
// load depends on the previous one and no prefetcher can guess the next address.
void build_cycle(Line* lines, size_t n, std::mt19937_64& rng) {
  std::vector<uint32_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = static_cast<uint32_t>(i);
  for (size_t i = n - 1; i > 0; --i) {
    std::uniform_int_distribution<size_t> pick(0, i - 1);
    std::swap(order[i], order[pick(rng)]);
  }
  for (size_t i = 0; i < n; ++i) lines[order[i]].next = &lines[order[(i + 1) % n]];
}

const Line* chase(const Line* p, size_t loads) {
  for (size_t i = 0; i < loads; ++i) p = p->next;
  return p;
}

uint64_t read_sysfs_size(const std::string& path) {
  std::ifstream f(path);
  std::string s;
  if (!(f >> s) || s.empty()) return 0;
  uint64_t v = std::strtoull(s.c_str(), nullptr, 10);
  const char unit = s.back();
  if (unit == 'K')
    v <<= 10;
  else if (unit == 'M')
    v <<= 20;
  else if (unit == 'G')
    v <<= 30;
  return v;
}

// Data (or unified) cache sizes of cpu0 by level, from sysfs; 0 where not reported.
std::array<uint64_t, 4> os_cache_sizes() {
  std::array<uint64_t, 4> sizes{};
  for (int index = 0; index < 8; ++index) {
    std::string dir = "/sys/devices/system/cpu/cpu0/cache/index";
    dir += std::to_string(index);
    std::ifstream level_file(dir + "/level"), type_file(dir + "/type");
    int level = 0;
    std::string type;
    if (!(level_file >> level) || !(type_file >> type)) continue;
    if (type == "Instruction" || level < 1 || level > 3) continue;
    sizes[static_cast<size_t>(level)] = read_sysfs_size(dir + "/size");
  }
  return sizes;
}

void latency(const Run& run, int repeat) {
  constexpr size_t kMin = size_t{4} << 10, kMax = size_t{512} << 20;
  constexpr size_t kLoads = size_t{1} << 22;
  Buffer buf(kMax);
  auto* lines = reinterpret_cast<Line*>(buf.data());
  std::mt19937_64 rng(14);
  std::vector<size_t> sizes;
  std::vector<double> ns;
  for (size_t ws = kMin; ws <= kMax; ws *= 2) {
    const size_t n = ws / sizeof(Line);
    build_cycle(lines, n, rng);
    const Line* p = chase(&lines[0], std::min(n, kLoads));  // warm the caches (and the TLB)
    const tools::Summary s = tools::measure(0, std::max(3, repeat / 2 + 1), [&] {
      tools::Stopwatch sw;
      p = chase(p, kLoads);
      return sw.seconds() * 1e9 / static_cast<double>(kLoads);
    });
    g_sink += static_cast<double>(reinterpret_cast<uintptr_t>(p) & 0xff);
    sizes.push_back(ws);
    ns.push_back(s.median);
    report(run, cat({"latency_", size_name(ws)}), s.median, "ns/load");
  }

  // Cache sizes from the curve. The chase walks the same cycle again and again, so once the working set
  // exceeds a cache, an LRU-like cache misses on (nearly) every load: latency steps up at the first
  // working set that does not fit. A level is detected at the first working set whose latency is more
  // than 1.5x the one before (a step spread over two doublings counts once, where it starts); the
  // cache is then larger than the working set before it and at most this one. One level's hit latency
  // is 3x or more the one above it, so its step is steep; the slower rises within a level (TLB reach,
  // a shared L3's distant slices) stay under 1.5x per doubling on a quiet machine.
  std::vector<size_t> detected;
  bool rising = false;
  for (size_t i = 0; i + 1 < ns.size(); ++i) {
    const bool jump = ns[i + 1] > 1.5 * ns[i];
    if (jump && !rising) detected.push_back(sizes[i + 1]);
    rising = jump;
  }
  const std::array<uint64_t, 4> os = os_cache_sizes();
  for (int level = 1; level <= 3; ++level) {
    std::string name = "l";
    name += std::to_string(level);
    name += "_detected";
    const size_t k = static_cast<size_t>(level - 1);
    const double found = k < detected.size() ? static_cast<double>(detected[k]) / 1024 : 0;
    const double reported = static_cast<double>(os[static_cast<size_t>(level)]) / 1024;
    if (reported > 0)
      report(run, name, found, "KiB", "OS (sysfs cpu0)", reported);
    else
      report(run, name, found, "KiB");
    std::string verdict = "L";
    verdict += std::to_string(level);
    verdict += ": the curve says ";
    if (found > 0) {
      verdict += "more than ";
      verdict += size_name(static_cast<uint64_t>(found * 1024 / 2));
      verdict += ", at most ";
      verdict += size_name(static_cast<uint64_t>(found * 1024));
    } else {
      verdict += "nothing";
    }
    verdict += ", the OS says ";
    verdict += reported > 0 ? size_name(static_cast<uint64_t>(reported * 1024)) : std::string("nothing");
    if (found > 0 && reported > 0) {
      const double r = found / reported;
      verdict += r >= 0.5 && r <= 2 ? ": within 2x" : ": NOT within 2x";
      verdict += " (";
      verdict += fmt("%.2g", r);
      verdict += "x)";
    }
    run.out->note(kSuite, verdict);
  }
}

// ---- memory bandwidth -------------------------------------------------------------------------------
void triad(double* a, const double* b, const double* c, double s, size_t n) {
  for (size_t i = 0; i < n; ++i) a[i] = b[i] + s * c[i];
}

void bandwidth(const Run& run, int repeat) {
  constexpr size_t kN = size_t{1} << 24;  // 3 arrays of 128 MiB
  constexpr int kPasses = 2;
  const int threads = run.host_cores;
  Buffer ab(kN * 8), bb(kN * 8), cb(kN * 8);
  auto* a = reinterpret_cast<double*>(ab.data());
  auto* b = reinterpret_cast<double*>(bb.data());
  auto* c = reinterpret_cast<double*>(cb.data());
  // First touch by the thread that will use each chunk (where NUMA matters, pages land on its node).
  auto for_chunks = [&](int nthreads, auto&& body) {
    std::vector<std::thread> pool;
    for (int t = 0; t < nthreads; ++t) {
      const size_t lo = kN * static_cast<size_t>(t) / static_cast<size_t>(nthreads);
      const size_t hi = kN * static_cast<size_t>(t + 1) / static_cast<size_t>(nthreads);
      pool.emplace_back([&body, lo, hi] { body(lo, hi); });
    }
    for (auto& th : pool) th.join();
  };
  for_chunks(threads, [&](size_t lo, size_t hi) {
    for (size_t i = lo; i < hi; ++i) a[i] = 0, b[i] = 1, c[i] = 2;
  });
  const double triad_bytes = 3.0 * 8 * kN * kPasses;  // STREAM's count: write-allocate traffic not counted
  auto triad_gbps = [&](int nthreads) {
    tools::Stopwatch sw;
    for (int pass = 0; pass < kPasses; ++pass)
      for_chunks(nthreads, [&](size_t lo, size_t hi) { triad(a + lo, b + lo, c + lo, 3.0, hi - lo); });
    const double seconds = sw.seconds();
    g_sink += a[kN / 2];
    return triad_bytes / seconds * 1e-9;
  };
  auto memcpy_gbps = [&] {
    tools::Stopwatch sw;
    for (int pass = 0; pass < kPasses; ++pass) std::memcpy(a, b + (pass & 1), (kN - 1) * 8);
    const double seconds = sw.seconds();
    g_sink += a[kN / 3];
    return 2.0 * 8 * (kN - 1) * kPasses / seconds * 1e-9;  // read + write, as STREAM counts its copy
  };
  triad_gbps(1);
  triad_gbps(threads);
  memcpy_gbps();
  const auto [one, all, copy] = tools::measure_interleaved<3>(
      repeat, {[&] { return triad_gbps(1); }, [&] { return triad_gbps(threads); }, memcpy_gbps});
  report(run, "triad_1thread", one.median, "GB/s", "memcpy 1 thread (read+write)", copy.median);
  std::string all_name = "triad_";
  all_name += std::to_string(threads);
  all_name += "threads";
  report(run, all_name, all.median, "GB/s", "triad 1 thread", one.median);
  report(run, "memcpy_1thread", copy.median, "GB/s");
  run.out->note(kSuite,
                "bandwidth: triad a = b + s*c over 3 x 128 MiB float64 arrays; bytes counted as STREAM "
                "does (24 per element; the write-allocate read of a is not counted). No theoretical "
                "figure: a VM does not expose its memory's channels and speed reliably (dmidecode shows "
                "the hypervisor's inventions), so memcpy of the same arrays is the reference");
}

// ---- braid's devices: host<->device copies and float32 vs float64 matmul --------------------------------
void device_copies(const Run& run, int repeat) {
  constexpr size_t kBytes = size_t{64} << 20;
  constexpr int64_t kElems = static_cast<int64_t>(kBytes / 4);
  std::vector<float> host(static_cast<size_t>(kElems)), back(static_cast<size_t>(kElems));
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(i & 0xffff);
  auto memcpy_gbps = [&] {
    tools::Stopwatch sw;
    std::memcpy(back.data(), host.data(), kBytes);
    const double seconds = sw.seconds();
    g_sink += back[12345];
    return kBytes / seconds * 1e-9;
  };
  int32_t count = 0;
  check(braid_context_device_count(run.ctx, &count), "braid_context_device_count");
  for (braid_device d = 0; d < count; ++d) {
    braid_device_info info{};
    info.struct_size = sizeof info;
    check(braid_context_device_info(run.ctx, d, &info), "braid_context_device_info");
    const std::string id = info.id;
    const int64_t shape[1] = {kElems};
    auto h2d = [&] {
      tools::Stopwatch sw;
      braid_tensor t = nullptr;
      check(braid_tensor_from_host(run.ctx, d, BRAID_FLOAT32, 1, shape, host.data(), kBytes, &t),
            "braid_tensor_from_host");
      Tensor owned(t);
      check(braid_tensor_wait_to_read(t), "braid_tensor_wait_to_read");
      return kBytes / sw.seconds() * 1e-9;
    };
    braid_tensor src = nullptr;
    check(braid_tensor_from_host(run.ctx, d, BRAID_FLOAT32, 1, shape, host.data(), kBytes, &src),
          "braid_tensor_from_host");
    const Tensor src_owned(src);
    check(braid_tensor_wait_to_read(src), "braid_tensor_wait_to_read");
    auto d2h = [&] {
      tools::Stopwatch sw;
      check(braid_tensor_to_host(src, back.data(), kBytes), "braid_tensor_to_host");
      const double seconds = sw.seconds();
      g_sink += back[kElems - 1];
      return kBytes / seconds * 1e-9;
    };
    h2d();
    d2h();
    memcpy_gbps();
    const auto [up, down, copy] = tools::measure_interleaved<3>(repeat, {h2d, d2h, memcpy_gbps});
    if (std::memcmp(back.data(), host.data(), kBytes) != 0)
      throw Error(cat({"hw: ", id, ": the round trip changed data"}));
    report(run, cat({"h2d_64MiB_", id}), up.median, "GB/s", "memcpy 1 thread", copy.median);
    report(run, cat({"d2h_64MiB_", id}), down.median, "GB/s", "memcpy 1 thread", copy.median);
    if (id.rfind("cuda", 0) == 0)
      run.out->note(kSuite, id + ": pageable host memory, staged by the CUDA backend through its pinned buffers");
  }
  run.out->note(kSuite,
                "copies: braid_tensor_from_host (+ wait) and braid_tensor_to_host of 64 MiB from/to "
                "pageable std::vector memory; a CUDA device's pinned staging is not measurable without a "
                "GPU (this machine has none unless a cuda device is listed above)");
}

void matmul_dtypes(const Run& run, int repeat) {
  constexpr int64_t kN = 1024;
  constexpr double kFlop = 2.0 * kN * kN * kN;
  int32_t count = 0;
  check(braid_context_device_count(run.ctx, &count), "braid_context_device_count");
  for (braid_device d = 0; d < count; ++d) {
    braid_device_info info{};
    info.struct_size = sizeof info;
    check(braid_context_device_info(run.ctx, d, &info), "braid_context_device_info");
    const std::string id = info.id;
    double gflops[2] = {0, 0};
    const braid_dtype dtypes[2] = {BRAID_FLOAT32, BRAID_FLOAT64};
    for (int k = 0; k < 2; ++k) {
      if (!(info.dtype_mask & (1u << dtypes[k]))) continue;
      const int64_t shape[2] = {kN, kN};
      braid_tensor a = nullptr, b = nullptr;
      check(braid_random_uniform(run.ctx, d, dtypes[k], 2, shape, -1, 1, &a), "braid_random_uniform");
      const Tensor ao(a);
      check(braid_random_uniform(run.ctx, d, dtypes[k], 2, shape, -1, 1, &b), "braid_random_uniform");
      const Tensor bo(b);
      check(braid_wait_all(run.ctx), "braid_wait_all");
      const tools::Summary s = tools::measure(1, repeat, [&] {
        tools::Stopwatch sw;
        braid_tensor c = nullptr;
        check(braid_matmul(a, b, 0, 0, &c), "braid_matmul");
        const Tensor co(c);
        check(braid_tensor_wait_to_read(c), "braid_tensor_wait_to_read");
        return kFlop / sw.seconds() * 1e-9;
      });
      gflops[k] = s.median;
    }
    if (gflops[0] > 0) report(run, cat({"matmul1024_f32_", id}), gflops[0], "GFLOP/s");
    if (gflops[1] > 0) {
      if (gflops[0] > 0)
        report(run, cat({"matmul1024_f64_", id}), gflops[1], "GFLOP/s", "float32", gflops[0]);
      else
        report(run, cat({"matmul1024_f64_", id}), gflops[1], "GFLOP/s");
    } else {
      run.out->note(kSuite, id + ": no float64 kernels (dtype_mask), so no float64 matmul");
    }
    std::string how = id;
    how += ": braid_matmul 1024x1024 + wait, ";
    if (std::string(info.backend) == "cpu") {
      how += std::to_string(info.compute_units);
      how += " core(s), OpenBLAS; ";
      how += info.properties_json ? info.properties_json : "{}";
    } else {
      how += info.name;
    }
    run.out->note(kSuite, how);
  }
  run.out->note(kSuite,
                "float16 and bfloat16 are storage types in braid (copy/cast only, no compute kernels on "
                "any backend) and braid has no int8 dtype, so only float32 vs float64 is measured");
}

}  // namespace

void suite_hw(Run& run) {
  const int repeat = run.repeat_or(kHwRepeat);
  alignment(run, repeat);
  strides(run, repeat);
  traversal(run, repeat);
  latency(run, repeat);
  bandwidth(run, repeat);
  device_copies(run, repeat);
  matmul_dtypes(run, repeat);
  run.out->note(kSuite, cat({"checksum of every kernel's results (keeps the work alive): ", fmt("%.6g", g_sink)}));
}

}  // namespace braid::bench
