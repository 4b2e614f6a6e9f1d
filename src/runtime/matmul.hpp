// Batched GEMM through oneDNN, with primitives cached by shape and type.
//
// C[b] = alpha * A[b] x op(B[b]) (+ C[b] if accumulate), for b < batch, where
// A[b] is m x k (row stride lda), op(B[b]) is k x n: B[b] stored k x n (row
// stride ldb) or, with transpose_b, stored n x k (row stride ldb). Batch
// strides of 0 broadcast A or B across the batch. C is fp32 unless c_type
// says bf16; A and B share ab_type (fp32 or bf16), accumulation is fp32.
// Alpha 0 accumulating leaves C as it is (an Inf or NaN of A B is not
// carried into it).
//
// With b_packed (batch 1 only), b is instead B in oneDNN's own blocked
// layout for the GEMM, written by pack_b (for GEMMs that reuse one B, such
// as one head's keys for all its query blocks: the layout change is then
// paid once), or B as stored where packed_b_bytes is 0.
//
// Safe to call from many threads at once. Inside an OpenMP parallel region
// the GEMM runs on the calling thread alone.
//
// Primitives are cached by shape (runtime/matmul_primitive.hpp), least
// recently used dropped past the capacity. A GEMM runs in a slot (GemmSlots
// below): a oneDNN stream, its memory objects (made once per primitive and
// re-pointed at each call), and a user-managed scratchpad, all kept for
// later calls. A repeated shape
// therefore allocates nothing in posenc; oneDNN 2.6's execute itself builds a
// small argument map per call.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "posenc/core.h"
#include "runtime/thread_state.hpp"

namespace posenc {

struct MatmulShape {
  int64_t batch = 1;
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;
  int64_t batch_stride_a = 0, batch_stride_b = 0, batch_stride_c = 0;
  bool transpose_b = false;
  posenc_dtype ab_type = POSENC_F32;
  posenc_dtype c_type = POSENC_F32;
  float alpha = 1.0f;
  bool accumulate = false;
  bool b_packed = false;
  // The threads oneDNN's primitive is made for. 1 for the GEMMs of a task
  // (a region runs one per thread, and the serial path one at a time): made
  // for more, oneDNN fixes a split of the work at creation that it then runs
  // outside a region, on that many threads, but not inside one, so the bits
  // would depend on the thread count (as they do on oneDNN's own split:
  // an op's GEMM alone on its threads is parallel_matmul's tiles). More
  // only for the benchmarks' references, which run alone on oneDNN's own
  // threads, as many as OpenMP promises (onednn_team_threads,
  // runtime/parallel.hpp).
  int onednn_threads = 1;

  bool operator==(const MatmulShape& other) const;
};

// The shape of a dense fp32 C[m, n] = A[m, k] B[n, k]^T.
MatmulShape dense_a_bt(int64_t m, int64_t n, int64_t k);

void matmul(const MatmulShape& shape, const void* a, const void* b, void* c);

struct GemmSlot;
struct HeldPrimitives;

// While one is alive on a thread (for an op's call), that thread holds
// every primitive it makes or looks up outside its regions, and their
// threads find them there: a cache of fewer entries than the call's shapes
// cannot drop one the call still needs. The thread's last to end lets go.
class PrimitiveHold {
 public:
  PrimitiveHold();
  ~PrimitiveHold();
  PrimitiveHold(const PrimitiveHold&) = delete;
  PrimitiveHold& operator=(const PrimitiveHold&) = delete;
  HeldPrimitives& held() const { return *held_; }

 private:
  HeldPrimitives* held_;  // the constructing thread's
};

// The GEMM slots of a parallel region, one per thread: the calling thread's
// own (kept for its later calls), so that everything GEMMs need is made
// before the region starts. Slot 0 also serves the thread's calls outside
// regions. The calling thread holds what its slots use (PrimitiveHold).
class GemmSlots {
 public:
  explicit GemmSlots(int count);  // allocates any missing slot
  // Creates the primitive of `shape` (for matmul or pack_b; at a padded
  // depth, of the GEMM matmul() runs) and its memory objects, scratchpad and
  // copies in every slot, so that running it in the region allocates
  // nothing in posenc.
  void prepare(const MatmulShape& shape) const;
  // Holds the primitive of `shape` (PrimitiveHold): looked up, or made where
  // the cache dropped it; its memory objects are not made.
  void hold(const MatmulShape& shape) const;
  // A slot's buffers for copies: of GEMM outputs written there first, and
  // of A and B of a GEMM at a padded depth.
  enum class Copy { kOutput, kDepth };
  // Grows every slot's buffer `which` to at least `bytes`.
  void prepare_copy(Copy which, size_t bytes) const;
  // The primitives the calling thread holds.
  HeldPrimitives& held() const { return hold_.held(); }

  // Runs this thread's matmul() calls in slot `slot` for the scope's life.
  // In a region (in_region) they only look up what the op prepared, and
  // throw if something is missing; outside, they make what is missing for
  // every slot. With dry (outside regions), matmul() and pack_b() only make
  // what is missing and compute nothing: an op whose GEMM shapes follow its
  // tasks' control flow runs some tasks this way before its region, writing
  // into scratch, to prepare them (see PreparedProblem).
  class Use {
   public:
    Use(const GemmSlots& slots, int slot, bool in_region, bool dry = false);
    ~Use();
    Use(const Use&) = delete;
    Use& operator=(const Use&) = delete;

   private:
    GemmSlot* previous_slot_;
    const GemmSlots* previous_slots_;
    bool previous_in_region_, previous_dry_;
  };

 private:
  GemmSlot* slot(int index) const;

  PrimitiveHold hold_;
  std::vector<std::unique_ptr<GemmSlot>>* own_;
  int count_;
};

// Primitives the cache has dropped so far.
int64_t matmul_cache_evictions();

// Frees the calling thread's GEMM slots (its streams, memory objects,
// scratchpads and output copies: posenc_release_thread_memory); its next
// GEMMs make them again. Never inside an op.
void release_gemm_slots();
// How many times the calling thread has released its slots.
int64_t gemm_slot_releases();

// How many primitives `held` holds; their shapes from the first-th on, into
// `shapes` (its capacity kept), or false, writing nothing, where they are
// more than `most`.
size_t held_count(const HeldPrimitives& held);
bool held_shapes(const HeldPrimitives& held, size_t first, size_t most,
                 std::vector<MatmulShape>& shapes);

// Whether this thread prepared the GEMMs of a problem whose shapes and
// thread count `key` determines, in one of its last kRemembered calls of the
// op Tag that prepared them, with no primitive dropped and its slots not
// released since; remember() records it once prepared (with the counts of
// drops and releases before it was: one during the preparation makes the
// record stale), and the shapes the thread came to hold from the
// PreparedProblem's construction on (those held already, by the op's plan
// or an enclosing op, are held on every call). Repeated shapes, and a few
// alternating ones (a server's models or sequence lengths), then skip the
// dry run: before() holds the recorded shapes instead (lookups, where no
// thread has dropped one since), so that the call's region finds them all
// (their memory objects made by the dry run; some shapes were only looked
// up, and preparing them would allocate).
template <class Tag, size_t N>
class PreparedProblem {
 public:
  PreparedProblem(const std::array<int64_t, N>& key, const GemmSlots& gemms)
      : key_(key),
        evictions_(matmul_cache_evictions()),
        releases_(gemm_slot_releases()),
        first_held_(held_count(gemms.held())) {}
  bool before(const GemmSlots& gemms) const {
    for (const Record& r : recent().records) {
      if (r.evictions == evictions_ && r.releases == releases_ && r.key == key_) {
        for (const MatmulShape& shape : r.shapes) gemms.hold(shape);
        return true;
      }
    }
    return false;
  }
  // A call that came to hold more than kMostShapes records none (a later
  // call's region then finds them in the cache, where another thread can
  // drop one: that region's tasks are then left to the calling thread).
  void remember(const GemmSlots& gemms) const {
    Recent& r = recent();
    Record& record = r.records[r.next];
    if (record.shapes.capacity() < kMostShapes) record.shapes.reserve(kMostShapes);
    if (!held_shapes(gemms.held(), first_held_, kMostShapes, record.shapes)) {
      record.shapes.clear();
    }
    record.key = key_;
    record.evictions = evictions_;
    record.releases = releases_;
    r.next = (r.next + 1) % kRemembered;
  }

 private:
  static constexpr size_t kRemembered = 4;
  static constexpr size_t kMostShapes = 32;
  // evictions -1 (never a count): an empty record.
  struct Record {
    std::array<int64_t, N> key{};
    int64_t evictions = -1;
    int64_t releases = 0;
    std::vector<MatmulShape> shapes;  // reserved once: recording allocates nothing more
  };
  struct Recent {
    std::array<Record, kRemembered> records;
    size_t next = 0;
  };
  static Recent& recent() { return thread_state_part<Recent, Tag>(); }
  std::array<int64_t, N> key_;
  int64_t evictions_, releases_;  // when the call began
  size_t first_held_;
};

// The primitive cache's capacity (entries; at least 1) and size. The
// default, or POSENC_PRIMITIVE_CACHE_CAPACITY from the environment, holds
// the GEMMs of many shapes of every op; a primitive takes some tens of kB.
constexpr int64_t kDefaultPrimitiveCacheCapacity = 1024;
// The capacity POSENC_PRIMITIVE_CACHE_CAPACITY's text asks for: decimal
// digits of a value >= 1, else (NULL, signs, spaces, anything after the
// digits, out of range) the default.
int64_t primitive_cache_capacity_from(const char* text);
void set_matmul_cache_capacity(int64_t capacity);
int64_t matmul_cache_capacity();
int64_t matmul_cache_size();

// Whether matmul() runs `shape` at a padded depth (onednn_bf16_depth_is_broken,
// on AMX).
bool pads_depth(const MatmulShape& shape);

// Bytes of B packed for the GEMM of `shape` (b_packed set, batch 1), or 0
// when oneDNN takes B as it is stored (packing would only copy it) or
// matmul() pads its depth.
size_t packed_b_bytes(const MatmulShape& shape);

// Writes B (stored as `shape` says: ldb, transpose_b) to `packed`, of
// packed_b_bytes(shape) bytes, in the layout of the GEMM of `shape`.
// oneDNN's brgemm layouts are written tile by tile (runtime/packed_tiles.hpp)
// where that beats oneDNN's reorder (tiles_beat_reorder), any other through
// the reorder.
void pack_b(const MatmulShape& shape, const void* b, void* packed);

// pack_b through oneDNN's reorder whatever the layout (the tiles' reference).
void pack_b_by_reorder(const MatmulShape& shape, const void* b, void* packed);

// Whether pack_b writes B for `shape` tile by tile.
bool packed_b_in_tiles(const MatmulShape& shape);

// Sets rows [first, end) of B (k in [first, end)), packed by pack_b for
// `shape`, to zero: rows that a GEMM multiplies by 0 only, which must not
// hold NaN (0 times NaN is NaN). Dry, it checks that it can.
void zero_packed_b_rows(const MatmulShape& shape, void* packed, int64_t first, int64_t end);

// True if B packed for the GEMM of `packed_for` serves the GEMM of `shape`
// too: the same layout (oneDNN's can depend on m, alpha or accumulate), or
// one whose elements lie where they lie in it (shape's k and n at most
// packed_for's, e.g. a leading part of the keys, as far as oneDNN's blocks
// allow).
bool packed_b_serves(const MatmulShape& shape, const MatmulShape& packed_for);

// Runs `shape` (b_packed) on B packed for `packed_for` where that serves
// it, or else one GEMM per column block of the packed layout where each
// block's leading rows serve a GEMM of its columns alone: fewer rows of a B
// laid out column block after column block, each block holding all of
// packed_for's rows (oneDNN's brgemm layout of more than 64 columns, such
// as a causal block's values). Each block's output goes through a copy in
// the thread's slot. Returns false, computing nothing, where neither
// serves (outside regions it may still make primitives, as any call does).
bool matmul_on_packed_b(const MatmulShape& shape, const MatmulShape& packed_for, const void* a,
                        const void* packed_b, void* c);

// oneDNN 2.6.3's AMX bf16 matmul, with more than one thread configured,
// computes dense outputs (ldc == n) of 49 to 63 columns wrong and can fault
// on them; a longer row stride sends them to a slower path that is right.
// matmul() does this itself through a padded copy; callers that own their
// output layout can choose such a stride and avoid the copy.
inline bool onednn_bf16_dense_width_is_broken(int64_t columns) {
  return columns >= 49 && columns <= 63;
}

// oneDNN 2.6.3's AMX bf16 matmul (brg:avx512_core_amx_bf16) executes an
// illegal instruction for a depth k of 63 at most row and column counts (of
// depths 1 to 300, rows 1 to 200, columns 1 to 100, B as stored either way,
// 63 alone; its AVX512-BF16 kernels, brg:avx512_core_bf16, run them).
// matmul() runs such a GEMM (pads_depth) at depth 64 on copies of A and B
// padded with zeros; its B is never packed (packed_b_bytes 0).
inline bool onednn_bf16_depth_is_broken(int64_t depth) { return depth == 63; }

// Whether oneDNN multiplies bf16 in hardware (AVX512-BF16 or AMX, under the
// ISA cap). Elsewhere its bf16 GEMM, where it has one, widens the operands
// itself at a fraction of its fp32 rate (a fifth on a 2-core Xeon without
// AVX512-BF16), and AVX2 and Arm have none. Fixed for the process once
// asked, as oneDNN's ISA is.
bool onednn_bf16_gemm_is_native();
// Whether it does so on AMX.
bool onednn_bf16_gemm_is_amx();
// Whether the attention and the bottleneck block run their GEMMs in bf16,
// else widening bf16 to fp32 themselves (attention_gemm_dtype,
// ops/attention/problem.hpp): where oneDNN multiplies bf16 on AMX, or with
// AVX512-BF16 on AMD's CPUs, whose bf16 pair dot product runs at twice
// their fp32 FMAs' rate. Intel's runs at its FMAs' rate, and without AMX
// (Cooper Lake, or a Sapphire or Emerald Rapids whose OS or VM leaves AMX
// off) oneDNN 2.6's bf16 GEMM is slower than its fp32 one (README,
// "Benchmarks": 0.6x on an Emerald Rapids VM). Other vendors widen, which
// is always exact.
bool bf16_gemms_outpace_fp32();
// From now on, bf16_gemms_outpace_fp32 wherever oneDNN multiplies bf16 in
// hardware, for the tests: the bf16 GEMMs' paths on a CPU that would widen
// (tests/with_bf16_gemms.cpp).
void force_bf16_gemms();

// oneDNN's version and the ISA its primitives dispatch to, for `posenc info`.
const char* onednn_version_string();
const char* onednn_isa_string();
// The implementation oneDNN picks for an fp32 or bf16 square GEMM (e.g.
// "brg:avx512_core"); creates, but does not run, a primitive.
const char* onednn_matmul_impl(posenc_dtype type);

}  // namespace posenc
