// Cache lines, and software prefetch: asking the caches for memory a loop
// reads soon, where the hardware's prefetchers fall behind (rows far apart,
// or read in parts).
#pragma once

#include <cstdint>

namespace posenc {

// The cache line of the x86-64 and AArch64 CPUs posenc runs on.
inline constexpr int64_t kCacheLineBytes = 64;

// Where a prefetched line goes: the core's first level cache, or only as
// far as its second. A stream that a loop reads at memory bandwidth is
// better asked into L2: its many outstanding lines hold L1's few miss
// buffers for the whole trip from memory.
enum class CacheLevel { l1, l2 };

// Asks for the line holding p into `level`; reads nothing. An instruction
// of its own: GCC 12 deleted __builtin_prefetch from the decode kernels' key
// loops. (Inlined: a constant level picks one instruction, a level known
// at run time costs a branch.)
inline void prefetch_line(const void* p, CacheLevel level = CacheLevel::l1) {
#if defined(__x86_64__)
  if (level == CacheLevel::l1) {
    asm volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(p)));
  } else {
    asm volatile("prefetcht1 %0" : : "m"(*static_cast<const char*>(p)));
  }
#elif defined(__aarch64__)
  if (level == CacheLevel::l1) {
    asm volatile("prfm pldl1keep, [%0]" : : "r"(p));
  } else {
    asm volatile("prfm pldl2keep, [%0]" : : "r"(p));
  }
#else
  if (level == CacheLevel::l1) {
    __builtin_prefetch(p, 0, 3);
  } else {
    __builtin_prefetch(p, 0, 2);
  }
#endif
}

// Asks for the `bytes` at p into `level`, a line per 64 bytes from p on.
// Where p lies within a line, the bytes' last line is left out: for the
// rows of a matrix it is the next row's first, asked for with it (asking
// for it twice slowed the decode steps).
inline void prefetch_bytes(const void* p, int64_t bytes, CacheLevel level = CacheLevel::l1) {
  const char* at = static_cast<const char*>(p);
  for (int64_t b = 0; b < bytes; b += kCacheLineBytes) prefetch_line(at + b, level);
}

}  // namespace posenc
