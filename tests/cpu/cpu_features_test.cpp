// The CPU backend's choice of vector ISA and OpenBLAS kernels, from cpuid words of known CPUs: a
// decision that must hold on machines the tests never run on (Intel Emerald Rapids, whose AVX-512
// Debian's OpenBLAS 0.3.21 does not detect on its own).
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#include "cpu_features.h"

using braid::cpu::CpuidWords;
using braid::cpu::decode_cpuid;
using braid::cpu::openblas_core_for;
using braid::cpu::vector_isa;

namespace {

constexpr unsigned kIntel[3] = {0x756e6547u, 0x6c65746eu, 0x49656e69u};  // ebx, ecx, edx: "GenuineIntel"
constexpr unsigned kAmd[3] = {0x68747541u, 0x444d4163u, 0x69746e65u};    // "AuthenticAMD"

// leaf 1 ecx: SSE4.2 (20), FMA (12), OSXSAVE (27), AVX (28).
constexpr unsigned kLeaf1Avx = (1u << 20) | (1u << 12) | (1u << 27) | (1u << 28);
// leaf 7 ebx: AVX2 (5); AVX-512 F (16), DQ (17), CD (28), BW (30), VL (31).
constexpr unsigned kAvx2 = 1u << 5;
constexpr unsigned kAvx512 = (1u << 16) | (1u << 17) | (1u << 28) | (1u << 30) | (1u << 31);
constexpr unsigned kAmx = (1u << 24) | (1u << 22);  // leaf 7 edx: AMX-TILE, AMX-BF16
constexpr unsigned kAvx512Bf16 = 1u << 5;           // leaf 7.1 eax
constexpr unsigned long long kXcrAvx = 0x7;         // x87, SSE, AVX state
constexpr unsigned long long kXcrAvx512 = 0xe7;     // + opmask, ZMM_Hi256, Hi16_ZMM
constexpr unsigned long long kXcrAmx = 0x600e7;     // + XTILECFG, XTILEDATA

CpuidWords cpu(const unsigned (&vendor)[3], unsigned leaf1, unsigned l7b, unsigned l7d, unsigned l71a,
               unsigned long long xcr0) {
  CpuidWords w;
  w.vendor_ebx = vendor[0];
  w.vendor_ecx = vendor[1];
  w.vendor_edx = vendor[2];
  w.leaf1_ecx = leaf1;
  w.leaf7_ebx = l7b;
  w.leaf7_edx = l7d;
  w.leaf7_1_eax = l71a;
  w.xcr0 = xcr0;
  return w;
}

}  // namespace

TEST_CASE("cpu features: the OpenBLAS kernels follow the vector ISA, not the model number") {
  // Intel Xeon of the Emerald/Sapphire Rapids generations: AVX-512 with BF16 and AMX.
  auto emerald = decode_cpuid(cpu(kIntel, kLeaf1Avx, kAvx2 | kAvx512, kAmx, kAvx512Bf16, kXcrAmx));
  CHECK(emerald.intel);
  CHECK(std::string(vector_isa(emerald)) == "avx512_bf16");
  CHECK(openblas_core_for(emerald) == "SapphireRapids");
  // Skylake-SP / Cascade Lake: AVX-512 without BF16.
  auto skylake = decode_cpuid(cpu(kIntel, kLeaf1Avx, kAvx2 | kAvx512, 0, 0, kXcrAvx512));
  CHECK(std::string(vector_isa(skylake)) == "avx512");
  CHECK(openblas_core_for(skylake) == "SkylakeX");
  // AMD Zen 4: AVX-512 and BF16, no AMX tiles.
  auto zen4 = decode_cpuid(cpu(kAmd, kLeaf1Avx, kAvx2 | kAvx512, 0, kAvx512Bf16, kXcrAvx512));
  CHECK(zen4.amd);
  CHECK(openblas_core_for(zen4) == "Cooperlake");
  // AMD EPYC Zen 2/3 and Intel Haswell..Comet Lake: AVX2 + FMA.
  auto zen3 = decode_cpuid(cpu(kAmd, kLeaf1Avx, kAvx2, 0, 0, kXcrAvx));
  CHECK(std::string(vector_isa(zen3)) == "avx2");
  CHECK(openblas_core_for(zen3) == "Zen");
  auto haswell = decode_cpuid(cpu(kIntel, kLeaf1Avx, kAvx2, 0, 0, kXcrAvx));
  CHECK(openblas_core_for(haswell) == "Haswell");
}

TEST_CASE("cpu features: an ISA counts only when the OS saves its registers") {
  // AVX-512 hardware under an OS (or hypervisor) that does not enable the ZMM state: AVX2 kernels.
  auto masked = decode_cpuid(cpu(kIntel, kLeaf1Avx, kAvx2 | kAvx512, kAmx, kAvx512Bf16, kXcrAvx));
  CHECK_FALSE(masked.avx512f);
  CHECK_FALSE(masked.amx_bf16);
  CHECK(std::string(vector_isa(masked)) == "avx2");
  CHECK(openblas_core_for(masked) == "Haswell");
  // AMX without the tile state: AVX-512 BF16 kernels without tiles.
  auto no_tiles = decode_cpuid(cpu(kIntel, kLeaf1Avx, kAvx2 | kAvx512, kAmx, kAvx512Bf16, kXcrAvx512));
  CHECK_FALSE(no_tiles.amx_tile);
  CHECK(openblas_core_for(no_tiles) == "Cooperlake");
  // No OSXSAVE: no AVX at all, whatever the feature bits say; OpenBLAS keeps its own choice.
  auto no_xsave = decode_cpuid(cpu(kIntel, kLeaf1Avx & ~(1u << 27), kAvx2 | kAvx512, 0, 0, 0));
  CHECK_FALSE(no_xsave.avx);
  CHECK(std::string(vector_isa(no_xsave)) == "sse4.2");
  CHECK(openblas_core_for(no_xsave).empty());
  // An unknown vendor with AVX2 + FMA still gets AVX2 kernels.
  const unsigned other[3] = {1, 2, 3};
  auto unknown = decode_cpuid(cpu(other, kLeaf1Avx, kAvx2, 0, 0, kXcrAvx));
  CHECK_FALSE(unknown.intel);
  CHECK_FALSE(unknown.amd);
  CHECK(openblas_core_for(unknown) == "Haswell");
}

TEST_CASE("cpu features: this machine's are consistent") {
  const auto& f = braid::cpu::cpu_features();
  INFO("vector ISA " << vector_isa(f) << ", OpenBLAS core " << openblas_core_for(f));
  CHECK_FALSE((f.intel && f.amd));  // at most one vendor
  if (f.avx512f) CHECK(f.avx2);
  if (f.avx2) CHECK(f.avx);
  if (f.amx_bf16) CHECK(f.amx_tile);
}
