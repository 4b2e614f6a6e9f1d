#include "runtime/matmul.hpp"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "runtime/error.hpp"
#include "runtime/isa_cap.hpp"
#include "runtime/packed_tiles.hpp"
#include "runtime/parallel.hpp"
#include "runtime/thread_state.hpp"
#include "runtime/dtype.hpp"

namespace posenc {

MatmulShape dense_a_bt(int64_t m, int64_t n, int64_t k) {
  MatmulShape s;
  s.m = m;
  s.n = n;
  s.k = k;
  s.lda = s.ldb = k;
  s.ldc = n;
  s.transpose_b = true;
  return s;
}

bool MatmulShape::operator==(const MatmulShape& o) const {
  return batch == o.batch && m == o.m && n == o.n && k == o.k && lda == o.lda &&
         ldb == o.ldb && ldc == o.ldc && batch_stride_a == o.batch_stride_a &&
         batch_stride_b == o.batch_stride_b && batch_stride_c == o.batch_stride_c &&
         transpose_b == o.transpose_b && ab_type == o.ab_type && c_type == o.c_type &&
         alpha == o.alpha && accumulate == o.accumulate && b_packed == o.b_packed &&
         onednn_threads == o.onednn_threads;
}

namespace {

struct ShapeHash {
  size_t operator()(const MatmulShape& s) const {
    size_t h = 0;
    auto mix = [&h](int64_t v) { h = h * 1000003u ^ std::hash<int64_t>()(v); };
    for (int64_t v : {s.batch, s.m, s.n, s.k, s.lda, s.ldb, s.ldc, s.batch_stride_a,
                      s.batch_stride_b, s.batch_stride_c, int64_t(s.transpose_b),
                      int64_t(s.ab_type), int64_t(s.c_type), int64_t(s.accumulate),
                      int64_t(s.b_packed), int64_t(s.onednn_threads)}) {
      mix(v);
    }
    float alpha = s.alpha;
    int32_t alpha_bits;
    std::memcpy(&alpha_bits, &alpha, sizeof alpha_bits);
    mix(alpha_bits);
    return h;
  }
};

using dt = dnnl::memory::data_type;

dt onednn_type(posenc_dtype type) { return type == POSENC_BF16 ? dt::bf16 : dt::f32; }

struct CachedMatmul {
  dnnl::memory::desc a, b, c;  // b: as the primitive reads it (packed or not)
  dnnl::matmul primitive;
  size_t scratchpad_bytes;
  std::string impl;  // oneDNN's implementation name, e.g. "brg:avx512_core"
  // With b_packed: B as stored, and the reorder from it to b (when they differ).
  dnnl::memory::desc b_stored;
  std::optional<dnnl::reorder> pack;
  std::optional<PackedTiles> tiles;  // b's layout where pack_tiles beats the reorder
  mutable std::atomic<uint64_t> last_used{0};  // the cache's clock at the last lookup
};

// The engine and the cache below are never destroyed: threads still inside
// posenc when the process exits keep using them (destroyed at exit, they
// crashed such threads).
dnnl::engine& cpu_engine() {
  isa_cap();  // applies POSENC_MAX_ISA to oneDNN before its first primitive
  static dnnl::engine& engine = *new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

struct OperandDescs {
  dnnl::memory::desc a, b, c;
};

OperandDescs operand_descs(const MatmulShape& s) {
  using dims = dnnl::memory::dims;
  const dt ab = onednn_type(s.ab_type), c = onednn_type(s.c_type);
  if (s.b_packed) {
    // Matrices without the batch dimension: with one, oneDNN 2.6's AMX
    // matmul copies B even when it is already in the GEMM's own layout.
    return OperandDescs{
        dnnl::memory::desc(dims{s.m, s.k}, ab, dims{s.lda, 1}),
        dnnl::memory::desc(dims{s.k, s.n}, ab, s.transpose_b ? dims{1, s.ldb} : dims{s.ldb, 1}),
        dnnl::memory::desc(dims{s.m, s.n}, c, dims{s.ldc, 1})};
  }
  // A broadcast operand has batch dimension 1; its batch stride is then
  // written as that of a dense batch, which keeps oneDNN on its fast kernels
  // (a zero stride sends it to the reference implementation).
  const int64_t a_batch = s.batch_stride_a == 0 ? 1 : s.batch;
  const int64_t b_batch = s.batch_stride_b == 0 ? 1 : s.batch;
  const int64_t a_stride = s.batch_stride_a == 0 ? s.m * s.lda : s.batch_stride_a;
  const int64_t b_rows = s.transpose_b ? s.n : s.k;
  const int64_t b_stride = s.batch_stride_b == 0 ? b_rows * s.ldb : s.batch_stride_b;
  const int64_t c_stride = s.batch == 1 ? s.m * s.ldc : s.batch_stride_c;
  const dims b_strides = s.transpose_b ? dims{b_stride, 1, s.ldb} : dims{b_stride, s.ldb, 1};
  return OperandDescs{
      dnnl::memory::desc(dims{a_batch, s.m, s.k}, ab, dims{a_stride, s.lda, 1}),
      dnnl::memory::desc(dims{b_batch, s.k, s.n}, ab, b_strides),
      dnnl::memory::desc(dims{s.batch, s.m, s.n}, c, dims{c_stride, s.ldc, 1})};
}

// oneDNN's own primitive cache is off while posenc makes its primitives
// (posenc keeps them itself, MatmulCache below). An allocation failure
// inside oneDNN's creation of a primitive that cache holds leaves its entry
// broken (a promise never kept, a key into freed memory): later creations
// of that primitive throw std::future_error, and evicting it crashes (found
// by AllocationFailure on AVX-512). Off, it never holds posenc's. The
// capacity is process-wide, so the change and its restoring are serialized;
// another oneDNN user in the process (Debian's torch shares the library)
// loses its cached primitives when posenc makes one, which is rare: once
// per GEMM shape.
class OnednnCacheOff {
 public:
  // (oneDNN's C calls: they return a status where the C++ ones throw, and
  // neither can fail for a capacity >= 0.)
  OnednnCacheOff() : lock_(mutex()) {
    dnnl_get_primitive_cache_capacity(&capacity_);
    dnnl_set_primitive_cache_capacity(0);
  }
  ~OnednnCacheOff() { dnnl_set_primitive_cache_capacity(capacity_); }
  OnednnCacheOff(const OnednnCacheOff&) = delete;
  OnednnCacheOff& operator=(const OnednnCacheOff&) = delete;

  // Held while a primitive is made, and across fork() (lock_before_fork).
  static std::mutex& mutex() {
    static std::mutex m;
    return m;
  }

 private:
  std::lock_guard<std::mutex> lock_;
  int capacity_ = 0;
};

// A packed B that oneDNN lays out plain (its gemm, which packs per call:
// no brgemm, as on the AVX2 path) with rows a multiple of 1 KiB apart, such
// as the attention's keys transposed to [head_dim, 2048] fp32: its rows
// fall on the same few cache sets. That layout with its rows 64 bytes
// further apart, or an empty desc where B is blocked or off the multiple.
// Only where packing copies B anyway (the layout is not B's as stored).
// (2-core Zen 4, AVX2 cap, cold caches: the scores GEMM 64 x 2048 x 64 ran
// at 51-57 GFLOP/s, and at 85-89 with the rows spread.)
dnnl::memory::desc rows_spread(const dnnl::memory::desc& b) {
  const dnnl_memory_desc_t& md = b.data;
  if (md.format_kind != dnnl_blocked || md.ndims != 2 || md.format_desc.blocking.inner_nblks != 0) {
    return {};
  }
  const int64_t element = int64_t(dnnl::memory::data_type_size(b.data_type()));
  dnnl::memory::dims strides(md.format_desc.blocking.strides, md.format_desc.blocking.strides + 2);
  int64_t& row_stride = strides[0] > strides[1] ? strides[0] : strides[1];
  if (row_stride * element % 1024 != 0) return {};
  row_stride += 64 / element;
  return dnnl::memory::desc(b.dims(), b.data_type(), strides);
}

std::shared_ptr<const CachedMatmul> create_matmul(const MatmulShape& s) {
  // What oneDNN makes the primitive for.
  const OpenMpThreads threads(s.onednn_threads);
  const OnednnCacheOff onednn_cache_off;
  const auto [a, b, c] = operand_descs(s);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  // Not 0: oneDNN 2.6's older gemm (gemm:jit) made with an output scale of
  // 0 leaves C as it was (unset scratch: NaN rows of attention with scale
  // 0); matmul() multiplies A B by 0 itself.
  if (s.alpha != 1.0f && s.alpha != 0.0f) attr.set_output_scales(0, {s.alpha});
  if (s.accumulate) {
    dnnl::post_ops ops;
    ops.append_sum(1.0f);
    attr.set_post_ops(ops);
  }
  const dnnl::memory::desc b_any(b.dims(), b.data_type(), dnnl::memory::format_tag::any);
  dnnl::matmul::desc desc(a, s.b_packed ? b_any : b, c);
  dnnl::matmul::primitive_desc pd(desc, attr, cpu_engine());
  if (s.b_packed && pd.weights_desc() != b) {
    const dnnl::memory::desc spread = rows_spread(pd.weights_desc());
    if (!spread.is_zero()) {
      // The same implementation or none (allow_empty: an optimization must
      // not fail a GEMM).
      const dnnl::matmul::primitive_desc spread_pd(dnnl::matmul::desc(a, spread, c), attr,
                                                   cpu_engine(), true);
      if (spread_pd && std::strcmp(spread_pd.impl_info_str(), pd.impl_info_str()) == 0) {
        pd = spread_pd;
      }
    }
  }
  // make_shared, not shared_ptr(new ...): the slots' weak_ptrs then keep the
  // entry's memory, so a dropped entry's address, their map's key, cannot be
  // reused by a new entry while they remember it (BoundArgsByGemm).
  auto mm = std::make_shared<CachedMatmul>();
  mm->a = a;
  mm->b = pd.weights_desc();
  mm->c = c;
  mm->primitive = dnnl::matmul(pd);
  mm->scratchpad_bytes = pd.scratchpad_desc().get_size();
  mm->impl = pd.impl_info_str();
  mm->b_stored = b;
  if (s.b_packed && mm->b != b) {
    // Packing runs on the calling thread (pack_b's callers pack per thread);
    // oneDNN's reorder would otherwise fix its thread count here.
    const OpenMpThreads single(1);
    mm->pack = dnnl::reorder(dnnl::reorder::primitive_desc(cpu_engine(), b, cpu_engine(), mm->b));
    if (tiles_beat_reorder(s)) mm->tiles = packed_tiles(mm->b.data);
  }
  return mm;
}

// The primitives by shape, at most capacity() of them: past it the least
// recently used is dropped (a call running it keeps it alive until it ends).
// A hit takes the shared lock only; its recency is an atomic tick.
class MatmulCache {
 public:
  MatmulCache() : capacity_(capacity_from_environment()) {}

  std::shared_ptr<const CachedMatmul> get(const MatmulShape& shape) {
    {
      std::shared_lock<std::shared_mutex> lock(mutex_);
      auto it = cache_.find(shape);
      if (it != cache_.end()) {
        it->second->last_used.store(++clock_, std::memory_order_relaxed);
        return it->second;
      }
    }
    std::shared_ptr<const CachedMatmul> created = create_matmul(shape);
    std::unique_lock<std::shared_mutex> lock(mutex_);
    auto [it, inserted] = cache_.emplace(shape, std::move(created));
    it->second->last_used.store(++clock_, std::memory_order_relaxed);
    if (inserted) evict_to(capacity_);
    return it->second;
  }

  // The entry of `shape`, or null: never creates one.
  std::shared_ptr<const CachedMatmul> find(const MatmulShape& shape) {
    std::shared_lock<std::shared_mutex> lock(mutex_);
    auto it = cache_.find(shape);
    if (it == cache_.end()) return nullptr;
    it->second->last_used.store(++clock_, std::memory_order_relaxed);
    return it->second;
  }

  void set_capacity(int64_t capacity) {
    std::unique_lock<std::shared_mutex> lock(mutex_);
    capacity_ = capacity;
    evict_to(capacity_);
  }
  int64_t capacity() {
    std::shared_lock<std::shared_mutex> lock(mutex_);
    return capacity_;
  }
  int64_t size() {
    std::shared_lock<std::shared_mutex> lock(mutex_);
    return int64_t(cache_.size());
  }
  int64_t evictions() const { return evictions_.load(std::memory_order_relaxed); }

  // Held across fork() (lock_before_fork).
  std::shared_mutex& mutex() { return mutex_; }

 private:
  static int64_t capacity_from_environment() {
    const char* text = std::getenv("POSENC_PRIMITIVE_CACHE_CAPACITY");
    if (text == nullptr) return kDefaultPrimitiveCacheCapacity;
    char* end = nullptr;
    const long long value = std::strtoll(text, &end, 10);
    return end != text && *end == '\0' && value >= 1 ? int64_t(value)
                                                      : kDefaultPrimitiveCacheCapacity;
  }

  // Drops least recently used entries until at most `capacity` remain
  // (mutex_ held exclusively).
  void evict_to(int64_t capacity) {
    while (int64_t(cache_.size()) > capacity) {
      auto oldest = cache_.begin();
      for (auto it = cache_.begin(); it != cache_.end(); ++it) {
        if (it->second->last_used.load(std::memory_order_relaxed) <
            oldest->second->last_used.load(std::memory_order_relaxed)) {
          oldest = it;
        }
      }
      cache_.erase(oldest);
      evictions_.fetch_add(1, std::memory_order_relaxed);
    }
  }

  std::shared_mutex mutex_;
  std::unordered_map<MatmulShape, std::shared_ptr<const CachedMatmul>, ShapeHash> cache_;
  std::atomic<uint64_t> clock_{0};
  std::atomic<int64_t> evictions_{0};
  int64_t capacity_;
};

MatmulCache& matmul_cache();

// fork() copies a lock as it is: a child forked while another thread made a
// primitive or held the cache would wait for it forever at its first GEMM.
// Both are taken before the fork (in the order no thread nests them) and
// released after it in the parent. The child, on one thread, makes them
// anew: glibc releases a write-locked rwlock only for the thread id that
// locked it, which the child's thread does not have.
void lock_before_fork() {
  OnednnCacheOff::mutex().lock();
  matmul_cache().mutex().lock();
}
void unlock_after_fork_in_parent() {
  matmul_cache().mutex().unlock();
  OnednnCacheOff::mutex().unlock();
}
void remake_locks_in_child() {
  new (&matmul_cache().mutex()) std::shared_mutex;
  new (&OnednnCacheOff::mutex()) std::mutex;
}

// Registered as the library loads, as each of posenc's fork handlers is,
// never from a function-local static's initializer: glibc holds its list of
// handlers locked through a fork, so a thread registering there while
// another forks would leave the child with that static's guard taken for
// good. pthread_atfork fails only without memory for the entry: forks are
// then as before.
[[maybe_unused]] const int cache_fork_handlers =
    pthread_atfork(lock_before_fork, unlock_after_fork_in_parent, remake_locks_in_child);

// Never destroyed (as cpu_engine), and in static storage: making it
// allocates nothing, so the calls that only read it cannot fail.
MatmulCache& matmul_cache() {
  alignas(MatmulCache) static unsigned char storage[sizeof(MatmulCache)];
  static MatmulCache& cache = *new (storage) MatmulCache;
  return cache;
}

// oneDNN's C++ errors as posenc's: out of memory as std::bad_alloc (the
// guard's POSENC_ERROR_OUT_OF_MEMORY), anything else as `status`.
[[noreturn]] void rethrow_onednn_error(const dnnl::error& e, posenc_status status,
                                       const char* what) {
  if (e.status == dnnl_out_of_memory) throw std::bad_alloc();
  throw Error(status, std::string(what) + ": " + e.what());
}

std::shared_ptr<const CachedMatmul> cached_matmul(const MatmulShape& shape) {
  try {
    return matmul_cache().get(shape);
  } catch (const dnnl::error& e) {
    rethrow_onednn_error(e, POSENC_ERROR_UNSUPPORTED, "oneDNN matmul");
  }
}

}  // namespace

// A primitive's memory objects, made once per GEMM slot and then only
// re-pointed: the execution arguments in the form oneDNN's C API takes.
// `owner` keeps the cache entry's address from being reused while the
// entry is here (without keeping its primitive alive once evicted).
struct BoundArgs {
  std::weak_ptr<const CachedMatmul> owner;
  std::vector<dnnl::memory> memories;
  std::vector<dnnl_exec_arg_t> args;
};

// Bound arguments by cache entry. Entries whose primitive the cache dropped
// are pruned once the map has doubled since the last pruning, so the map
// stays within about twice the live primitives this slot has run.
class BoundArgsByGemm {
 public:
  // The arguments of `mm` if made, else null.
  BoundArgs* find(const CachedMatmul* mm) {
    auto found = bound_.find(mm);
    return found == bound_.end() ? nullptr : &found->second;
  }

  // The arguments of `mm`, made by make() (a list of (argument, desc)) the
  // first time; their data handles are set by the caller.
  template <class Make>
  BoundArgs& get(const std::shared_ptr<const CachedMatmul>& mm, const Make& make) {
    auto found = bound_.find(mm.get());
    if (found != bound_.end()) return found->second;
    if (bound_.size() >= prune_at_) {
      for (auto it = bound_.begin(); it != bound_.end();) {
        it = it->second.owner.expired() ? bound_.erase(it) : std::next(it);
      }
      prune_at_ = std::max<size_t>(kMinPruneAt, 2 * bound_.size());
    }
    BoundArgs bound{mm, {}, {}};
    try {
      for (const auto& [arg, desc] : make()) {
        bound.memories.emplace_back(desc, cpu_engine(), nullptr);
        bound.args.push_back(dnnl_exec_arg_t{arg, bound.memories.back().get()});
      }
    } catch (const dnnl::error& e) {
      rethrow_onednn_error(e, POSENC_ERROR_INTERNAL, "oneDNN memory");
    }
    return bound_.emplace(mm.get(), std::move(bound)).first->second;
  }

 private:
  static constexpr size_t kMinPruneAt = 64;
  std::unordered_map<const CachedMatmul*, BoundArgs> bound_;
  size_t prune_at_ = kMinPruneAt;
};

using ArgDescs = std::vector<std::pair<int, dnnl::memory::desc>>;

// What one thread of a parallel region needs to run GEMMs: its stream, its
// user-managed scratchpad, the output of GEMMs that write C there first
// (the bf16 widths oneDNN gets wrong, the column blocks of a packed B), and
// its bound arguments (for GEMMs and for packing B).
struct GemmSlot {
  dnnl::stream stream;  // made with the first arguments (ops without GEMMs need none)
  std::vector<uint8_t> scratchpad;
  std::vector<uint8_t> output_copy;
  BoundArgsByGemm gemms, packs;
};

// The entries of the shapes a thread has made or looked up while a
// PrimitiveHold is alive on it, in that order. Written outside regions
// only; the region's threads read the calling thread's.
struct HeldPrimitives {
  std::vector<std::pair<MatmulShape, std::shared_ptr<const CachedMatmul>>> held;
  int holds = 0;  // the thread's PrimitiveHolds alive
};

namespace {

// The slots of the regions a thread runs (slot 0 is the thread itself),
// kept for its later calls.
std::vector<std::unique_ptr<GemmSlot>>& own_slots() {
  return thread_state_part<std::vector<std::unique_ptr<GemmSlot>>>();
}
HeldPrimitives& thread_held() { return thread_state_part<HeldPrimitives>(); }
thread_local int64_t slot_releases = 0;  // release_gemm_slots() calls

// Where matmul() runs on this thread: a slot of a region's GemmSlots, or
// (slot null) the thread's own slot 0. Inside a region, what a GEMM needs is
// looked up, never made: a miss throws NotPrepared, and the task is rerun
// after the region, where it is made for every slot of the region.
struct Binding {
  GemmSlot* slot = nullptr;
  const GemmSlots* slots = nullptr;
  bool in_region = false;
  bool dry = false;  // GemmSlots::Use's dry: prepare, compute nothing
};
thread_local Binding binding;

struct NotPrepared : std::exception {
  const char* what() const noexcept override { return "GEMM not prepared before the region"; }
};

GemmSlot& current_slot() {
  if (binding.slot != nullptr) return *binding.slot;
  std::vector<std::unique_ptr<GemmSlot>>& own = own_slots();
  if (own.empty()) own.push_back(std::make_unique<GemmSlot>());
  return *own.front();
}

// The entry of `shape` that `held` holds, or null.
std::shared_ptr<const CachedMatmul> find_held(const HeldPrimitives& held,
                                              const MatmulShape& shape) {
  for (const auto& [held_shape, mm] : held.held) {
    if (held_shape == shape) return mm;
  }
  return nullptr;
}

// The entry of `shape` outside regions: the one `held` holds, else the
// cache's (made if need be), then held while a PrimitiveHold is alive.
std::shared_ptr<const CachedMatmul> held_or_cached(HeldPrimitives& held, const MatmulShape& shape) {
  if (std::shared_ptr<const CachedMatmul> mm = find_held(held, shape)) return mm;
  std::shared_ptr<const CachedMatmul> mm = cached_matmul(shape);
  if (held.holds > 0) held.held.emplace_back(shape, mm);
  return mm;
}

// The entry of `shape`: inside a region the one the calling thread holds,
// or else the cache's, never made; outside, held_or_cached.
std::shared_ptr<const CachedMatmul> primitive_for(const MatmulShape& shape) {
  if (!binding.in_region) return held_or_cached(thread_held(), shape);
  if (std::shared_ptr<const CachedMatmul> mm = find_held(binding.slots->held(), shape)) {
    return mm;
  }
  std::shared_ptr<const CachedMatmul> mm = matmul_cache().find(shape);
  if (mm == nullptr) throw NotPrepared();
  return mm;
}

std::string impl_of_square_gemm(posenc_dtype type) {
  MatmulShape s;
  s.m = s.n = s.k = s.lda = s.ldb = s.ldc = 256;
  s.ab_type = type;
  try {
    return create_matmul(s)->impl;
  } catch (const dnnl::error&) {
    return "unsupported";
  }
}

void grow(std::vector<uint8_t>& buffer, size_t bytes) {
  if (buffer.size() < bytes) buffer.resize(bytes);
}

void execute(const dnnl::primitive& primitive, GemmSlot& slot, const BoundArgs& bound) {
  const dnnl_status_t status = dnnl_primitive_execute(
      primitive.get(), slot.stream.get(), int(bound.args.size()), bound.args.data());
  if (status == dnnl_out_of_memory) throw std::bad_alloc();
  if (status != dnnl_success) {
    throw Error(POSENC_ERROR_INTERNAL, "oneDNN matmul failed with status " +
                                           std::to_string(int(status)));
  }
}

void make_stream(GemmSlot& slot) {
  if (slot.stream) return;
  try {
    slot.stream = dnnl::stream(cpu_engine());
  } catch (const dnnl::error& e) {
    rethrow_onednn_error(e, POSENC_ERROR_INTERNAL, "oneDNN stream");
  }
}

BoundArgs& gemm_args(GemmSlot& slot, const std::shared_ptr<const CachedMatmul>& mm) {
  make_stream(slot);
  grow(slot.scratchpad, mm->scratchpad_bytes);
  return slot.gemms.get(mm, [&] {
    return ArgDescs{{DNNL_ARG_SRC, mm->a},
                    {DNNL_ARG_WEIGHTS, mm->b},
                    {DNNL_ARG_DST, mm->c},
                    {DNNL_ARG_SCRATCHPAD,
                     dnnl::memory::desc({int64_t(mm->scratchpad_bytes)}, dt::u8,
                                        dnnl::memory::format_tag::a)}};
  });
}

BoundArgs& pack_args(GemmSlot& slot, const std::shared_ptr<const CachedMatmul>& mm) {
  make_stream(slot);
  return slot.packs.get(mm, [&] {
    return ArgDescs{{DNNL_ARG_FROM, mm->b_stored}, {DNNL_ARG_TO, mm->b}};
  });
}

// The padded output of a bf16 GEMM whose dense width oneDNN gets wrong.
MatmulShape padded_shape(const MatmulShape& shape) {
  MatmulShape padded = shape;
  padded.ldc = 64;
  padded.batch_stride_c = shape.m * padded.ldc;
  return padded;
}

bool needs_padded_output(const MatmulShape& shape) {
  return shape.ab_type == POSENC_BF16 && shape.ldc == shape.n &&
         onednn_bf16_dense_width_is_broken(shape.n);
}

// Calls prepare(slots) on the slots of the region being finished (or the
// thread's own slot), outside regions only.
template <class Prepare>
void prepare_outside_region(const Prepare& prepare) {
  if (binding.in_region) return;
  if (binding.slots != nullptr) {
    prepare(*binding.slots);
  } else {
    prepare(GemmSlots(1));
  }
}

// Makes what `shape` needs in those slots.
void prepare_outside_region(const MatmulShape& shape) {
  prepare_outside_region([&](const GemmSlots& slots) { slots.prepare(shape); });
}

void run_matmul(const MatmulShape& shape, const void* a, const void* b, void* c) {
  const std::shared_ptr<const CachedMatmul> mm = primitive_for(shape);
  GemmSlot& slot = current_slot();
  // Outside a region the entry may be new (another thread can drop and make
  // it again since prepare_outside_region): made here then.
  BoundArgs* found = binding.in_region ? slot.gemms.find(mm.get()) : &gemm_args(slot, mm);
  if (found == nullptr || slot.scratchpad.size() < mm->scratchpad_bytes) throw NotPrepared();
  BoundArgs& bound = *found;
  bound.memories[0].set_data_handle(const_cast<void*>(a));
  bound.memories[1].set_data_handle(const_cast<void*>(b));
  bound.memories[2].set_data_handle(c);
  bound.memories[3].set_data_handle(slot.scratchpad.data());
  // Run on the threads it was made for: oneDNN's gemm-based matmul (on
  // aarch64) takes its count at execution, brgemm at creation.
  const OpenMpThreads threads(shape.onednn_threads);
  execute(mm->primitive, slot, bound);
}

// The bytes of C laid out as `shape` says (ldc, batch_stride_c).
size_t output_bytes(const MatmulShape& shape) {
  return size_t((shape.batch - 1) * shape.batch_stride_c + shape.m * shape.ldc) *
         dtype_bytes(shape.c_type);
}

// Runs the GEMM of `shape` as `through`, the same GEMM with its output laid
// out in the slot's output_copy (through's ldc and batch stride): copied
// from c first when it accumulates, into c after. The buffer is grown
// outside regions, checked inside.
void run_through_output_copy(const MatmulShape& shape, const MatmulShape& through,
                             const void* a, const void* b, void* c) {
  const size_t bytes = output_bytes(through);
  prepare_outside_region([&](const GemmSlots& slots) { slots.prepare_output_copy(bytes); });
  std::vector<uint8_t>& buffer = current_slot().output_copy;
  if (buffer.size() < bytes) throw NotPrepared();
  if (binding.dry) {  // prepares `through`, computes nothing
    matmul(through, a, b, buffer.data());
    return;
  }
  const size_t element = dtype_bytes(shape.c_type);
  const size_t row_bytes = size_t(shape.n) * element;
  auto rows = [&](auto&& copy_row) {
    for (int64_t bi = 0; bi < shape.batch; ++bi) {
      for (int64_t i = 0; i < shape.m; ++i) {
        copy_row(buffer.data() + size_t(bi * through.batch_stride_c + i * through.ldc) * element,
                 static_cast<uint8_t*>(c) +
                     size_t(bi * shape.batch_stride_c + i * shape.ldc) * element);
      }
    }
  };
  if (shape.accumulate) rows([&](uint8_t* kept, uint8_t* out) { std::memcpy(kept, out, row_bytes); });
  matmul(through, a, b, buffer.data());
  rows([&](uint8_t* kept, uint8_t* out) { std::memcpy(out, kept, row_bytes); });
}

// C[b] = 0 * C[b] over the m x n elements of `shape`'s output: 0, or NaN
// where C holds Inf or NaN.
void times_zero(const MatmulShape& shape, void* c) {
  for (int64_t bi = 0; bi < shape.batch; ++bi) {
    for (int64_t i = 0; i < shape.m; ++i) {
      const int64_t row = bi * shape.batch_stride_c + i * shape.ldc;
      for (int64_t j = 0; j < shape.n; ++j) {
        if (shape.c_type == POSENC_BF16) {
          uint16_t& x = static_cast<uint16_t*>(c)[row + j];
          x = posenc_f32_to_bf16(0.0f * posenc_bf16_to_f32(x));
        } else {
          float& x = static_cast<float*>(c)[row + j];
          x *= 0.0f;
        }
      }
    }
  }
}

}  // namespace

void matmul(const MatmulShape& shape, const void* a, const void* b, void* c) {
  // Alpha 0: the primitive computes A B (create_matmul), times 0 here;
  // accumulating, 0 * A B adds nothing and C stays as it is.
  if (shape.alpha == 0.0f && shape.accumulate) return;
  prepare_outside_region(shape);
  if (binding.dry) return;
  if (needs_padded_output(shape)) {
    // Its output rows padded to 64 columns, a width oneDNN gets right (that
    // GEMM's own matmul() multiplies by an alpha of 0).
    run_through_output_copy(shape, padded_shape(shape), a, b, c);
    return;
  }
  run_matmul(shape, a, b, c);
  if (shape.alpha == 0.0f) times_zero(shape, c);
}

size_t held_count(const HeldPrimitives& held) { return held.held.size(); }

bool held_shapes(const HeldPrimitives& held, size_t first, size_t most,
                 std::vector<MatmulShape>& shapes) {
  if (held.held.size() - first > most) return false;
  shapes.clear();
  for (size_t i = first; i < held.held.size(); ++i) shapes.push_back(held.held[i].first);
  return true;
}

PrimitiveHold::PrimitiveHold() : held_(&thread_held()) { ++held_->holds; }

PrimitiveHold::~PrimitiveHold() {
  if (--held_->holds == 0) held_->held.clear();
}

GemmSlots::GemmSlots(int count) {
  std::vector<std::unique_ptr<GemmSlot>>& own = own_slots();
  while (int(own.size()) < count) own.push_back(std::make_unique<GemmSlot>());
  own_ = &own;
  count_ = count;
}

GemmSlot* GemmSlots::slot(int index) const { return (*own_)[size_t(index)].get(); }

void GemmSlots::prepare(const MatmulShape& shape) const {
  const bool padded = needs_padded_output(shape);
  const std::shared_ptr<const CachedMatmul> mm =
      held_or_cached(held(), padded ? padded_shape(shape) : shape);
  for (int i = 0; i < count_; ++i) {
    gemm_args(*slot(i), mm);
    if (mm->pack) pack_args(*slot(i), mm);
  }
  if (padded) prepare_output_copy(output_bytes(padded_shape(shape)));
}

void GemmSlots::hold(const MatmulShape& shape) const { held_or_cached(held(), shape); }

void GemmSlots::prepare_output_copy(size_t bytes) const {
  for (int i = 0; i < count_; ++i) grow(slot(i)->output_copy, bytes);
}

GemmSlots::Use::Use(const GemmSlots& slots, int slot, bool in_region, bool dry)
    : previous_slot_(binding.slot), previous_slots_(binding.slots),
      previous_in_region_(binding.in_region), previous_dry_(binding.dry) {
  binding = Binding{slots.slot(slot), &slots, in_region, dry};
}

GemmSlots::Use::~Use() {
  binding = Binding{previous_slot_, previous_slots_, previous_in_region_, previous_dry_};
}

size_t packed_b_bytes(const MatmulShape& shape) {
  const std::shared_ptr<const CachedMatmul> mm = primitive_for(shape);
  return mm->pack ? mm->b.get_size() : 0;
}

namespace {

// The primitive of `shape`, which packs B, with what it needs made outside
// regions; null on a dry run.
std::shared_ptr<const CachedMatmul> packing_matmul(const MatmulShape& shape) {
  prepare_outside_region(shape);
  if (binding.dry) return nullptr;
  std::shared_ptr<const CachedMatmul> mm = primitive_for(shape);
  if (!mm->pack) throw Error(POSENC_ERROR_INTERNAL, "pack_b: this GEMM reads B as stored");
  return mm;
}

void reorder_b(const std::shared_ptr<const CachedMatmul>& mm, const void* b, void* packed) {
  GemmSlot& slot = current_slot();
  BoundArgs* found = binding.in_region ? slot.packs.find(mm.get()) : &pack_args(slot, mm);
  if (found == nullptr) throw NotPrepared();
  BoundArgs& bound = *found;
  bound.memories[0].set_data_handle(const_cast<void*>(b));
  bound.memories[1].set_data_handle(packed);
  execute(*mm->pack, slot, bound);
}

}  // namespace

void pack_b(const MatmulShape& shape, const void* b, void* packed) {
  const std::shared_ptr<const CachedMatmul> mm = packing_matmul(shape);
  if (mm == nullptr) return;
  if (mm->tiles) {
    pack_tiles(*mm->tiles, shape, b, packed);
  } else {
    reorder_b(mm, b, packed);
  }
}

void pack_b_by_reorder(const MatmulShape& shape, const void* b, void* packed) {
  if (const std::shared_ptr<const CachedMatmul> mm = packing_matmul(shape)) reorder_b(mm, b, packed);
}

bool packed_b_in_tiles(const MatmulShape& shape) {
  return primitive_for(shape)->tiles.has_value();
}

namespace {

// The elements of a blocked layout's inner block along dimension d: the
// product of its inner blocks of d.
int64_t inner_block(const dnnl_memory_desc_t& md, int d) {
  const dnnl_blocking_desc_t& blocking = md.format_desc.blocking;
  int64_t block = 1;
  for (int i = 0; i < blocking.inner_nblks; ++i) {
    if (blocking.inner_idxs[i] == d) block *= blocking.inner_blks[i];
  }
  return block;
}

// The offset in elements of element (k, n) of a blocked [K, N] layout:
// the outer blocks by their strides, then the inner blocks, innermost last.
int64_t blocked_offset(const dnnl_memory_desc_t& md, int64_t k, int64_t n) {
  const dnnl_blocking_desc_t& blocking = md.format_desc.blocking;
  const int64_t block[2] = {inner_block(md, 0), inner_block(md, 1)};
  int64_t within[2] = {k % block[0], n % block[1]};
  int64_t offset = md.offset0 + k / block[0] * blocking.strides[0] +
                   n / block[1] * blocking.strides[1];
  int64_t step = 1;
  for (int i = blocking.inner_nblks - 1; i >= 0; --i) {
    int64_t& index = within[blocking.inner_idxs[i]];
    offset += index % blocking.inner_blks[i] * step;
    index /= blocking.inner_blks[i];
    step *= blocking.inner_blks[i];
  }
  return offset;
}

}  // namespace

void zero_packed_b_rows(const MatmulShape& shape, void* packed, int64_t first, int64_t end) {
  prepare_outside_region(shape);
  const std::shared_ptr<const CachedMatmul> mm = primitive_for(shape);
  const dnnl_memory_desc_t& md = mm->b.data;
  if (!mm->pack || md.format_kind != dnnl_blocked || md.ndims != 2) {
    throw Error(POSENC_ERROR_INTERNAL, "zero_packed_b_rows: B is not packed in blocks");
  }
  if (binding.dry) return;
  const size_t element = dtype_bytes(shape.ab_type);
  auto* bytes = static_cast<uint8_t*>(packed) - size_t(md.offset0) * element;
  // A blocked offset is offset(k, 0) + offset(0, n) - offset0: the rows'
  // offsets are worked out once per chunk of them.
  constexpr int64_t kChunk = 64;
  int64_t row_offset[kChunk];
  for (int64_t chunk = first; chunk < end; chunk += kChunk) {
    const int64_t rows = std::min(kChunk, end - chunk);
    for (int64_t r = 0; r < rows; ++r) row_offset[r] = blocked_offset(md, chunk + r, 0);
    for (int64_t n = 0; n < md.dims[1]; ++n) {
      const int64_t column_offset = blocked_offset(md, 0, n);
      for (int64_t r = 0; r < rows; ++r) {
        std::memset(bytes + size_t(row_offset[r] + column_offset) * element, 0, element);
      }
    }
  }
}

namespace {

// Whether a buffer holding B laid out as `whole` holds B laid out as `part`
// too, each element of part at its offset in whole: the same blocks, part
// no larger, the same strides along each dimension part has more than one
// block of, and no padding of part's K (rows past it, which whole may hold,
// are never read) unless it is whole's K, padded alike (with zeros, which
// pack_b writes). Columns of whole past part's n may hold anything: each
// output column reads its own column of B only.
bool holds_layout_of(const dnnl::memory::desc& whole_desc, const dnnl::memory::desc& part_desc) {
  const dnnl_memory_desc_t& whole = whole_desc.data;
  const dnnl_memory_desc_t& part = part_desc.data;
  if (whole.format_kind != dnnl_blocked || part.format_kind != dnnl_blocked ||
      whole.ndims != 2 || part.ndims != 2 || whole.data_type != part.data_type ||
      whole.offset0 != 0 || part.offset0 != 0 || whole.extra.flags != 0 ||
      part.extra.flags != 0) {
    return false;
  }
  const bool k_unpadded = part.padded_dims[0] == part.dims[0];
  const bool k_as_whole =
      part.dims[0] == whole.dims[0] && part.padded_dims[0] == whole.padded_dims[0];
  if (!k_unpadded && !k_as_whole) return false;
  const dnnl_blocking_desc_t& wb = whole.format_desc.blocking;
  const dnnl_blocking_desc_t& pb = part.format_desc.blocking;
  if (wb.inner_nblks != pb.inner_nblks) return false;
  for (int i = 0; i < pb.inner_nblks; ++i) {
    if (wb.inner_blks[i] != pb.inner_blks[i] || wb.inner_idxs[i] != pb.inner_idxs[i]) {
      return false;
    }
  }
  for (int d = 0; d < 2; ++d) {
    if (part.dims[d] > whole.dims[d] || part.padded_dims[d] > whole.padded_dims[d] ||
        part.padded_offsets[d] != 0 || whole.padded_offsets[d] != 0) {
      return false;
    }
    if (part.padded_dims[d] / inner_block(part, d) > 1 && pb.strides[d] != wb.strides[d]) return false;
  }
  return true;
}

// Whether B packed for `whole` holds B as the GEMM of `part` reads it packed.
bool holds_packed_b_of(const CachedMatmul& whole, const MatmulShape& part) {
  const std::shared_ptr<const CachedMatmul> mm = primitive_for(part);
  return mm->b == whole.b || holds_layout_of(whole.b, mm->b);
}

}  // namespace

bool packed_b_serves(const MatmulShape& shape, const MatmulShape& packed_for) {
  return shape == packed_for || holds_packed_b_of(*primitive_for(packed_for), shape);
}

bool matmul_on_packed_b(const MatmulShape& shape, const MatmulShape& packed_for, const void* a,
                        const void* packed_b, void* c) {
  const std::shared_ptr<const CachedMatmul> whole = primitive_for(packed_for);
  if (shape == packed_for || holds_packed_b_of(*whole, shape)) {
    matmul(shape, a, packed_b, c);
    return true;
  }
  // An element's offset is F(k) + G(n), and G(j0 + j) = G(j0) + G(j) for
  // j0 a multiple of the columns' inner block: column block j0's rows lie
  // as block 0's do, and block 0 serves where holds_packed_b_of says. Each
  // block's GEMM writes a dense C (oneDNN's brgemm takes no other), copied
  // into c.
  const dnnl_memory_desc_t& md = whole->b.data;
  if (!whole->pack || md.format_kind != dnnl_blocked || md.ndims != 2 ||
      shape.n > packed_for.n) {
    return false;
  }
  const int64_t width = inner_block(md, 1);  // 1: not in column blocks
  if (width == 1 || shape.n % width != 0) return false;
  MatmulShape block = shape;
  block.n = block.ldc = width;
  // (A padded output would take the same buffer.)
  if (needs_padded_output(block) || !holds_packed_b_of(*whole, block)) return false;
  MatmulShape columns = shape;  // column block j0 of c
  columns.n = width;
  for (int64_t j0 = 0; j0 < shape.n; j0 += width) {
    run_through_output_copy(columns, block, a,
                            static_cast<const uint8_t*>(packed_b) +
                                size_t(blocked_offset(md, 0, j0)) * dtype_bytes(shape.ab_type),
                            static_cast<uint8_t*>(c) + size_t(j0) * dtype_bytes(shape.c_type));
  }
  return true;
}

const char* onednn_version_string() {
  static const std::string text = [] {
    const dnnl_version_t* v = dnnl_version();
    return std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
           std::to_string(v->patch);
  }();
  return text.c_str();
}

const char* onednn_isa_string() {
  cpu_engine();
  switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::sse41: return "sse41";
    case dnnl::cpu_isa::avx: return "avx";
    case dnnl::cpu_isa::avx2: return "avx2";
    case dnnl::cpu_isa::avx2_vnni: return "avx2_vnni";
    case dnnl::cpu_isa::avx512_core: return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni: return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16: return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx: return "avx512_core_amx";
    default: return "other";
  }
}

bool onednn_bf16_gemm_is_native() {
#if defined(__x86_64__)
  // -1 until known: an atomic rather than a static's guard, and asked of
  // oneDNN under the lock held across fork() while primitives are made, as
  // oneDNN detects the CPU once behind a guard of its own. A fork while
  // another thread held either guard (on a process's first bf16 call) left
  // the child waiting on it for good.
  static std::atomic<int> native{-1};
  int known = native.load(std::memory_order_relaxed);
  if (known < 0) {
    const std::lock_guard<std::mutex> lock(OnednnCacheOff::mutex());
    isa_cap();  // applies the cap to oneDNN first
    const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
    const auto bf16 = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_bf16);
    known = (isa & bf16) == bf16 ? 1 : 0;  // the ISAs are bit sets: AMX includes it
    native.store(known, std::memory_order_relaxed);
  }
  return known == 1;
#else
  return false;
#endif
}

const char* onednn_matmul_impl(posenc_dtype type) {
  // Kept here: the cache may drop the primitive.
  static const std::string names[2] = {impl_of_square_gemm(POSENC_F32),
                                       impl_of_square_gemm(POSENC_BF16)};
  return names[type == POSENC_BF16 ? 1 : 0].c_str();
}

void set_matmul_cache_capacity(int64_t capacity) { matmul_cache().set_capacity(capacity); }
int64_t matmul_cache_capacity() { return matmul_cache().capacity(); }
int64_t matmul_cache_size() { return matmul_cache().size(); }
int64_t matmul_cache_evictions() { return matmul_cache().evictions(); }

void release_gemm_slots() {
  std::vector<std::unique_ptr<GemmSlot>>().swap(own_slots());
  decltype(HeldPrimitives::held)().swap(thread_held().held);
  ++slot_releases;
}

int64_t gemm_slot_releases() { return slot_releases; }

}  // namespace posenc
