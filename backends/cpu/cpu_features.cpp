#include "cpu_features.h"

#include <cpuid.h>

namespace braid::cpu {
namespace {

constexpr bool bit(unsigned word, int b) { return ((word >> b) & 1u) != 0; }

// xgetbv(0) where the OS has enabled it (cpuid.1:ecx.OSXSAVE), else 0: without it no AVX state is saved.
unsigned long long read_xcr0(unsigned leaf1_ecx) {
  if (!bit(leaf1_ecx, 27)) return 0;
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<unsigned long long>(hi) << 32) | lo;
}

CpuidWords read_cpuid() {
  CpuidWords w;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(0, &a, &b, &c, &d) == 0) return w;
  const unsigned max_leaf = a;
  w.vendor_ebx = b;
  w.vendor_ecx = c;
  w.vendor_edx = d;
  if (__get_cpuid(1, &a, &b, &c, &d) != 0) w.leaf1_ecx = c;
  if (max_leaf >= 7) {
    __cpuid_count(7, 0, a, b, c, d);
    w.leaf7_ebx = b;
    w.leaf7_ecx = c;
    w.leaf7_edx = d;
    const unsigned subleaves = a;
    if (subleaves >= 1) {
      __cpuid_count(7, 1, a, b, c, d);
      w.leaf7_1_eax = a;
    }
  }
  w.xcr0 = read_xcr0(w.leaf1_ecx);
  return w;
}

}  // namespace

CpuFeatures decode_cpuid(const CpuidWords& w) {
  CpuFeatures f;
  // "GenuineIntel" / "AuthenticAMD" as cpuid.0 returns them in ebx, edx, ecx.
  f.intel = w.vendor_ebx == 0x756e6547u && w.vendor_edx == 0x49656e69u && w.vendor_ecx == 0x6c65746eu;
  f.amd = w.vendor_ebx == 0x68747541u && w.vendor_edx == 0x69746e65u && w.vendor_ecx == 0x444d4163u;
  f.sse42 = bit(w.leaf1_ecx, 20);
  // The OS must save the state of the registers an ISA uses: XMM+YMM (xcr0 bits 1, 2) for AVX, and also
  // the opmask and ZMM state (bits 5-7) for AVX-512; tile state (bits 17, 18) for AMX.
  const bool ymm = (w.xcr0 & 0x6u) == 0x6u;
  const bool zmm = ymm && (w.xcr0 & 0xe0u) == 0xe0u;
  const bool tiles = (w.xcr0 & 0x60000u) == 0x60000u;
  f.avx = ymm && bit(w.leaf1_ecx, 28);
  f.fma = ymm && bit(w.leaf1_ecx, 12);
  f.avx2 = ymm && bit(w.leaf7_ebx, 5);
  f.avx512f = zmm && bit(w.leaf7_ebx, 16);
  f.avx512dq = f.avx512f && bit(w.leaf7_ebx, 17);
  f.avx512cd = f.avx512f && bit(w.leaf7_ebx, 28);
  f.avx512bw = f.avx512f && bit(w.leaf7_ebx, 30);
  f.avx512vl = f.avx512f && bit(w.leaf7_ebx, 31);
  f.avx512_bf16 = f.avx512f && bit(w.leaf7_1_eax, 5);
  f.amx_tile = tiles && bit(w.leaf7_edx, 24);
  f.amx_bf16 = f.amx_tile && bit(w.leaf7_edx, 22);
  return f;
}

const CpuFeatures& cpu_features() {
  static const CpuFeatures f = decode_cpuid(read_cpuid());
  return f;
}

const char* vector_isa(const CpuFeatures& f) {
  const bool avx512 = f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq;
  if (avx512 && f.avx512_bf16) return "avx512_bf16";
  if (avx512) return "avx512";
  if (f.avx2 && f.fma) return "avx2";
  if (f.avx) return "avx";
  if (f.sse42) return "sse4.2";
  return "baseline";
}

std::string openblas_core_for(const CpuFeatures& f) {
  const bool avx512 = f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq && f.avx512cd;
  // AMX and AVX512-BF16: OpenBLAS's Sapphire Rapids kernels (its sbgemm uses the tiles). Without AMX
  // (Zen 4, Cooper Lake) the Cooper Lake kernels: the same AVX-512 sgemm, BF16 without tiles.
  if (avx512 && f.avx512_bf16 && f.amx_bf16) return "SapphireRapids";
  if (avx512 && f.avx512_bf16) return "Cooperlake";
  if (avx512) return "SkylakeX";
  if (f.avx2 && f.fma) return f.amd ? "Zen" : "Haswell";
  return "";
}

}  // namespace braid::cpu
