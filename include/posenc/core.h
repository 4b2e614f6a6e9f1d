/* posenc C ABI: status codes, errors, ISA selection, contexts.
 *
 * Conventions for every posenc function:
 * - Tensors are dense, row-major, fp32 unless a dtype argument says otherwise;
 *   bf16 values are passed as uint16_t bit patterns.
 * - Sizes are int64_t. An axis that counts (batch, heads, tokens, queries,
 *   keys, rows written) may be 0, as each function documents: the call
 *   checks its other arguments as usual (reading only what those checks
 *   read: lengths, offsets, position ids) and, when its outputs have no
 *   elements, returns POSENC_OK having written nothing; a tensor with no
 *   elements may be NULL and overlaps nothing. Sizes whose product
 *   overflows are POSENC_ERROR_OVERFLOW even then. Feature sizes (dim,
 *   head_dim, channels) and every other size must be >= 1 unless documented
 *   otherwise.
 * - Tensor pointers are aligned to their elements: 4 bytes for float and
 *   int32_t, 2 for bf16, 8 for int64_t and double (workspaces: any
 *   alignment). A misaligned one is POSENC_ERROR_INVALID_ARGUMENT naming it.
 * - Every function checks all its arguments before writing anything. On error
 *   it returns a non-zero status, writes nothing to its outputs, and
 *   posenc_last_error() returns a message naming the bad argument.
 * - The structs a call takes (descs, tensor lists, configs, positions) are
 *   read before anything is written, so they may lie in an output or the
 *   workspace; the tensors they point to may not, as each function says.
 * - A NULL context means the process-wide default context.
 * - Enums end in a *_MAX_ENUM sentinel (0x7FFFFFFF) that only widens their
 *   range, so that any value from 0 to INT32_MAX a caller passes is valid to
 *   check; unknown values, negative ones included, are rejected with
 *   POSENC_ERROR_INVALID_ARGUMENT.
 * - Every function is thread-safe and may be called from many threads at once.
 *   From a destructor that runs as its thread ends (a thread_local's), a
 *   call that needs the thread's kept state (see "Memory and failures")
 *   once C++ has begun destroying it (the object was made before part of
 *   it, so it ends after that part) returns POSENC_ERROR_UNSUPPORTED
 *   having written nothing. None may be called at
 *   process exit (from a static object's destructor or an atexit handler):
 *   oneDNN's own state may be gone by then. posenc_context_destroy and
 *   posenc_rope_cache_destroy are the exceptions (they only free), so that
 *   a static C++ Context or RopeCache may end then.
 * - Memory and failures: a call allocates what it needs before it writes
 *   any output, and its OpenMP threads allocate nothing in posenc: running out
 *   of memory returns POSENC_ERROR_OUT_OF_MEMORY with nothing written, never
 *   an exit. What a call allocates is kept for the calling thread's later
 *   calls: per thread its scratch and an op's own workspace where the
 *   caller gives none (about ten buffers, each up to 256 MiB, or 16 MiB per
 *   thread of the call; a call needing more allocates that buffer for
 *   itself and frees it as it returns), a oneDNN stream and scratchpad,
 *   and for each thread of its calls the memory objects of each GEMM shape
 *   run (the primitives are shared, see
 *   posenc_set_primitive_cache_capacity): some kB a shape and thread, with
 *   a full primitive cache about 14 MB for a caller of 2 threads and 76 MB
 *   for one of 32. All of it is kept until the thread exits or calls
 *   posenc_release_thread_memory. So the first call of a shape on a thread
 *   allocates, and repeating it (or alternating it with a few other shapes)
 *   allocates nothing in posenc, within those limits; oneDNN 2.6's execute
 *   still builds a small argument map per GEMM (5 allocations of a few
 *   dozen bytes, freed at once). If one of those fails, the work left to that thread is run
 *   again (on an OpenMP thread, by the calling thread once the others
 *   finish); only if that fails too (or a shape another thread dropped
 *   from the primitive cache meanwhile cannot be made again) is
 *   POSENC_ERROR_OUT_OF_MEMORY returned with part of the output written.
 *   Three exceptions posenc cannot prevent: oneDNN 2.6 itself can crash
 *   when its own allocation fails while it makes a primitive, a stream or
 *   the memory objects of a GEMM shape (the first call of a shape, on each
 *   thread); glibc ends the process when it has no memory to register the
 *   destructor of a thread's kept state, or, where posenc was loaded with
 *   dlopen (as Python loads it), for a thread's posenc thread-locals (a
 *   thread's first call, or an OpenMP thread's first task); and
 *   libgomp (GCC's OpenMP) ends it when it has no memory for a thread's
 *   OpenMP state (a thread's first call) or for a team of another size than
 *   the thread's last parallel region had (a call on another context's
 *   thread count, or with fewer tasks than threads).
 */
#ifndef POSENC_CORE_H
#define POSENC_CORE_H

#include <stddef.h>
#include <stdint.h>

/* POSENC_API marks the functions the library exports. Building posenc defines
 * POSENC_BUILDING; a program linking the static library defines POSENC_STATIC
 * (the CMake target posenc::posenc_static does); on Windows every other
 * program imports them from the DLL. */
#if defined(_WIN32)
#if defined(POSENC_STATIC)
#define POSENC_API
#elif defined(POSENC_BUILDING)
#define POSENC_API __declspec(dllexport)
#else
#define POSENC_API __declspec(dllimport)
#endif
#else
#define POSENC_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum posenc_status {
  POSENC_OK = 0,
  POSENC_ERROR_NULL_POINTER = 1,    /* a required pointer is NULL */
  POSENC_ERROR_INVALID_ARGUMENT = 2, /* a size, enum or scalar is out of range */
  POSENC_ERROR_SHAPE_MISMATCH = 3,  /* sizes that must agree do not */
  POSENC_ERROR_OVERFLOW = 4,        /* a product of sizes overflows */
  POSENC_ERROR_ALIASING = 5,        /* outputs overlap inputs where not allowed */
  POSENC_ERROR_UNSUPPORTED = 6,     /* valid, but not available here */
  POSENC_ERROR_OUT_OF_MEMORY = 7,
  POSENC_ERROR_INTERNAL = 8,
  POSENC_STATUS_MAX_ENUM = 0x7FFFFFFF
} posenc_status;

/* Instruction-set paths. AUTO picks the best the CPU has under the cap. */
typedef enum posenc_isa {
  POSENC_ISA_AUTO = 0,
  POSENC_ISA_BASELINE = 1, /* x86-64: SSE2; aarch64: the NEON path */
  POSENC_ISA_AVX2 = 2,     /* AVX2 + FMA */
  POSENC_ISA_AVX512 = 3,   /* AVX-512 F/CD/DQ/BW/VL */
  POSENC_ISA_NEON = 4,     /* aarch64 Advanced SIMD */
  POSENC_ISA_MAX_ENUM = 0x7FFFFFFF
} posenc_isa;

typedef enum posenc_dtype {
  POSENC_F32 = 0,
  POSENC_BF16 = 1, /* bfloat16 stored as uint16_t, round-to-nearest-even */
  POSENC_DTYPE_MAX_ENUM = 0x7FFFFFFF
} posenc_dtype;

/* Static string for a status, e.g. "invalid argument". */
POSENC_API const char* posenc_status_string(posenc_status status);

/* The message of the last failed call on this thread ("" if none). The
 * pointer stays valid until the next posenc call on this thread. */
POSENC_API const char* posenc_last_error(void);

/* "0.11.0" */
POSENC_API const char* posenc_version(void);

/* Lower-case name: "auto", "baseline", "avx2", "avx512", "neon"; NULL for an
 * unknown value. */
POSENC_API const char* posenc_isa_name(posenc_isa isa);

/* Parses a name as accepted by POSENC_MAX_ISA ("auto", "avx512", "avx2",
 * "baseline", "neon"; case-insensitive). */
POSENC_API posenc_status posenc_isa_from_name(const char* name, posenc_isa* isa);

/* *available = 1 if this build has the path and the CPU (and OS) support it,
 * regardless of the cap. AUTO, which names no path, is refused. */
POSENC_API posenc_status posenc_isa_available(posenc_isa isa, int* available);

/* Process-wide cap on posenc's kernels and on oneDNN. Initialized from the
 * environment variable POSENC_MAX_ISA; AUTO removes posenc's cap. On
 * x86-64 oneDNN takes one cap per process, and only before its first
 * primitive is created: once POSENC_MAX_ISA (other than auto) or a
 * posenc_set_max_isa call has capped it, or a primitive exists, any other
 * cap (lower, higher or AUTO) returns POSENC_ERROR_UNSUPPORTED and changes
 * nothing. (On aarch64 oneDNN is not capped, and the cap may change.)
 * On x86-64 the caps map to oneDNN's avx512_core_amx, avx2 and sse41 (oneDNN's
 * lowest level). A cap is a rank (baseline and neon, then avx2, then
 * avx512): another architecture's path caps at its rank (neon on x86-64 as
 * baseline). It binds the calls of the default (NULL) context and the
 * contexts created after it; a context created before it keeps its path. */
POSENC_API posenc_status posenc_set_max_isa(posenc_isa isa);
POSENC_API posenc_isa posenc_max_isa(void);

/* The best path the CPU has under the cap (never AUTO). */
POSENC_API posenc_isa posenc_best_isa(void);

/* A context fixes the ISA path and thread count of the calls made with it.
 * The path is posenc's kernels'; the oneDNN GEMMs follow the process-wide
 * cap only (one per process, below), so a context on the avx2 path of a
 * CPU whose attention runs bf16 GEMMs (AMX, AMD's AVX512-BF16) still runs
 * them.
 * isa: AUTO for the best under the cap, or a specific path, which must be
 * available and not above the cap. num_threads: 0 for OpenMP's default at call
 * time (at most POSENC_MAX_THREADS), else 1 to POSENC_MAX_THREADS (larger:
 * POSENC_ERROR_INVALID_ARGUMENT); it bounds posenc's own loops and the oneDNN
 * GEMMs of each call. Results do not depend on it. A context is immutable and
 * may be shared by threads. OpenMP (libgomp) ends the process when it cannot
 * create a thread it was asked for, which posenc cannot turn into a status:
 * under a tight memory or address-space limit, ask for fewer threads. In a
 * process forked from a thread that had run posenc's threads, every call
 * runs on one thread: libgomp cannot start that thread's team again there. */
#define POSENC_MAX_THREADS 1024
typedef struct posenc_context posenc_context;
POSENC_API posenc_status posenc_context_create(posenc_isa isa, int num_threads,
                                               posenc_context** context);
POSENC_API void posenc_context_destroy(posenc_context* context);
/* The path the context runs (never AUTO) and its thread count (0: default). */
POSENC_API posenc_isa posenc_context_isa(const posenc_context* context);
POSENC_API int posenc_context_num_threads(const posenc_context* context);

/* oneDNN primitives for the GEMMs of the shapes seen, kept in a process-wide
 * cache of at most `capacity` entries; past it the least recently used entry
 * is dropped (a call using it keeps it until it returns, so a capacity below
 * a call's shapes costs making them once a call, not once a GEMM). One entry
 * takes some tens of kB; an op shape uses one to about fifteen (an
 * attention with per-sequence lengths one more per distinct key count
 * rounded up to 32). The capacity starts at 1024, or at the environment
 * variable POSENC_PRIMITIVE_CACHE_CAPACITY (a positive integer, in digits
 * only; anything else is ignored). capacity must be >= 1; lowering it
 * drops entries at once. */
POSENC_API posenc_status posenc_set_primitive_cache_capacity(int64_t capacity);
POSENC_API int64_t posenc_primitive_cache_capacity(void);
/* The entries the cache holds now. */
POSENC_API int64_t posenc_primitive_cache_size(void);
/* The entries it has dropped since the process started (a forked child
 * counts on from its parent's count), for room or as the capacity was
 * lowered. A count that keeps growing under steady traffic
 * says its shapes outnumber the capacity: each call of a dropped shape
 * makes its primitives again (on a 2-core Sapphire Rapids about a
 * millisecond and some hundreds of allocations an attention call, against
 * tens of microseconds and none from the cache). Key lengths growing call
 * by call make new shapes; a KV cache's capacity as kv_len with the lengths
 * in kv_lengths (posenc/attention.h) does not. Added in 0.4. */
POSENC_API int64_t posenc_primitive_cache_evictions(void);

/* Frees what the calling thread keeps for its later calls (see "Memory and
 * failures" above): its scratch and the op workspaces it kept where callers
 * gave none, its oneDNN streams, scratchpads and GEMM memory objects, its
 * last RoPE angle table. Its next call of each shape makes them again. The
 * primitive cache is the process's and stays. For a thread that stays
 * alive but is done with posenc for a while, or after a large call (a
 * thread's exit frees all this anyway). Called as the thread ends, after
 * C++ began destroying posenc's state for it, it does nothing: the rest is
 * freed as the thread ends.
 * Added in 0.3. */
POSENC_API void posenc_release_thread_memory(void);

/* bf16 conversions, round-to-nearest-even; NaN stays NaN. */
POSENC_API uint16_t posenc_f32_to_bf16(float value);
POSENC_API float posenc_bf16_to_f32(uint16_t value);

#ifdef __cplusplus
}
#endif

#endif /* POSENC_CORE_H */
