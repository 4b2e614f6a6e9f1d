// POSENC_BATCH_INLINE marks per-batch helpers (a few instructions on one
// batch) that GCC's heuristics left as calls inside their kernels' loops, a
// call per batch with the loop's vectors spilled around it: the softmax's
// exponential on SSE2 (more instructions there: no FMA, no rounding), and
// on NEON the bf16 rounding, RoPE's steps and the 1D bias's clamp window;
// and the whole-batch loops of the bias passes (see_whole_batches), which
// GCC left a call per map row in add_2d (a 1024-key row 0.06 to 0.11 us).
// Only those: forcing the decode products' helpers too made GCC keep their
// sums in memory. (xsimd's own NEON functions: cmake/PosencIsa.cmake.)
#pragma once

#if defined(__GNUC__)
#define POSENC_BATCH_INLINE inline __attribute__((always_inline))
#else
#define POSENC_BATCH_INLINE inline
#endif
