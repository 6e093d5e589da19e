// The CPU's real vector ISA, from cpuid and xgetbv, and what it means for the BLAS library: the
// kernels braid's gemm should run, whatever the library's own detection would pick.
#pragma once
#include <string>

namespace braid::cpu {

struct CpuFeatures {
  bool intel = false, amd = false;
  bool sse42 = false, avx = false, avx2 = false, fma = false;
  // AVX-512 foundation and the subsets OpenBLAS's SkylakeX kernels use; usable only when the OS saves
  // the ZMM state (xgetbv), which probe() checks.
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512dq = false, avx512cd = false;
  bool avx512_bf16 = false;                 // Cooper Lake, Sapphire Rapids and later, Zen 4
  bool amx_tile = false, amx_bf16 = false;  // Sapphire Rapids and later (OS permission checked too)
};

// This machine's features (probed once).
const CpuFeatures& cpu_features();
// From raw cpuid words (leaf 0 vendor, leaf 1 ecx, leaf 7.0 ebx/ecx/edx, leaf 7.1 eax) and xgetbv(0):
// the parsing, apart from the instructions, so that tests can feed any CPU's words.
struct CpuidWords {
  unsigned vendor_ebx = 0, vendor_ecx = 0, vendor_edx = 0;
  unsigned leaf1_ecx = 0;
  unsigned leaf7_ebx = 0, leaf7_ecx = 0, leaf7_edx = 0, leaf7_1_eax = 0;
  unsigned long long xcr0 = 0;
};
CpuFeatures decode_cpuid(const CpuidWords& w);

// The widest vector ISA the kernels can use: "avx512_bf16", "avx512", "avx2", "avx", "sse4.2" or
// "baseline".
const char* vector_isa(const CpuFeatures& f);

// The OPENBLAS_CORETYPE whose kernels use the widest ISA the CPU has, or "" to leave OpenBLAS's own
// choice (a CPU without AVX2+FMA). Chosen from features, never from model numbers, so a CPU newer than
// the library still gets the kernels for its ISA (Debian's OpenBLAS 0.3.21 takes Emerald Rapids for a
// Prescott: a fifth of its sgemm speed).
std::string openblas_core_for(const CpuFeatures& f);

}  // namespace braid::cpu
