// What the CPU offers: CPUID feature bits that compilers' __builtin_cpu_supports does not name
// everywhere (clang 14 knows neither "f16c" nor, reliably, "avx512vnni"). These read the bit only:
// callers also check a feature that implies the OS saves the registers ("avx2" / "avx512f" via
// __builtin_cpu_supports, which tests XGETBV). And the sizes of the L1 data and last-level caches.
#pragma once

#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace kvengine {

// Bit `bit` of register `reg` (0 = EAX, 1 = EBX, 2 = ECX, 3 = EDX) of CPUID leaf/subleaf.
inline bool CpuidBit(unsigned leaf, unsigned subleaf, int reg, int bit) {
#if defined(__x86_64__) || defined(__i386__)
  unsigned r[4] = {0, 0, 0, 0};
  if (__get_cpuid_count(leaf, subleaf, &r[0], &r[1], &r[2], &r[3]) == 0) return false;
  return ((r[reg] >> bit) & 1u) != 0;
#else
  (void)leaf, (void)subleaf, (void)reg, (void)bit;
  return false;
#endif
}

inline bool CpuHasF16cBit() { return CpuidBit(1, 0, 2, 29); }        // CPUID.1:ECX.F16C
inline bool CpuHasAvx512VnniBit() { return CpuidBit(7, 0, 2, 11); }  // CPUID.7.0:ECX.AVX512_VNNI
inline bool CpuHasAvx512VbmiBit() { return CpuidBit(7, 0, 2, 1); }   // CPUID.7.0:ECX.AVX512_VBMI
inline bool CpuHasAvx512Bf16Bit() { return CpuidBit(7, 1, 0, 5); }   // CPUID.7.1:EAX.AVX512_BF16

// Bytes of one core's L1 data cache as the C library reports it (glibc reads CPUID), 0 if
// unknown.
inline long L1DataCacheBytes() {
#ifdef _SC_LEVEL1_DCACHE_SIZE
  const long bytes = sysconf(_SC_LEVEL1_DCACHE_SIZE);
  return bytes > 0 ? bytes : 0;
#else
  return 0;
#endif
}

// Bytes of the last-level cache as the C library reports it: L3, else L2 where there is no L3; 0
// if unknown. Under a hypervisor this is the host's cache (300 MiB on the 2-core Xeon VM of
// 2026-12-01), shared with other guests but still able to hold a benchmark's buffer.
inline long LastLevelCacheBytes() {
  long bytes = 0;
#ifdef _SC_LEVEL3_CACHE_SIZE
  bytes = sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
#ifdef _SC_LEVEL2_CACHE_SIZE
  if (bytes <= 0) bytes = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
  return bytes > 0 ? bytes : 0;
}

}  // namespace kvengine
