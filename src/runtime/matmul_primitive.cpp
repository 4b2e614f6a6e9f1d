#include "runtime/matmul_primitive.hpp"

#include <pthread.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <new>
#include <shared_mutex>
#include <unordered_map>

#include "runtime/cpu_features.hpp"
#include "runtime/error.hpp"
#include "runtime/isa_cap.hpp"
#include "runtime/parallel.hpp"

namespace posenc {
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
  const bool packs = s.b_packed && !pads_depth(s);  // whose B is read as stored
  dnnl::matmul::desc desc(a, packs ? b_any : b, c);
  dnnl::matmul::primitive_desc pd(desc, attr, cpu_engine());
  if (packs && pd.weights_desc() != b) {
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
  MatmulCache()
      : capacity_(primitive_cache_capacity_from(std::getenv("POSENC_PRIMITIVE_CACHE_CAPACITY"))) {}

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

// PrimitiveRunHold's locks: a thread takes the one of its stripe (threads
// get stripes in turn as they first run a primitive), shared, so threads
// past kRunStripes share a lock without waiting for each other. In storage
// never destroyed, made as the library loads (no guard a fork could copy).
// The fork handler holds every one at once, and ThreadSanitizer's deadlock
// detector fails (and hung the forking thread) past 64 locks held by one
// thread: 64 stripes and the two other locks did.
constexpr int kRunStripes = 32;
struct alignas(64) RunStripe {
  std::shared_mutex lock;
};
struct RunStripes {
  RunStripe stripes[kRunStripes];
};
alignas(RunStripes) unsigned char run_stripes_storage[sizeof(RunStripes)];
RunStripes& run_stripes = *new (run_stripes_storage) RunStripes;

std::shared_mutex& this_threads_run_lock() {
  static std::atomic<unsigned> threads_seen{0};
  thread_local int stripe = -1;
  if (stripe < 0) stripe = int(threads_seen.fetch_add(1, std::memory_order_relaxed) % kRunStripes);
  return run_stripes.stripes[stripe].lock;
}

// fork() copies a lock as it is: a child forked while another thread made a
// primitive, held the cache or ran a primitive would wait for a lock forever
// at its first GEMM. posenc's are taken before the fork (in the order no
// thread nests them), so no thread is inside oneDNN then, and released after
// it in the parent. The child, on one thread, makes them anew: glibc
// releases a write-locked rwlock only for the thread id that locked it,
// which the child's thread does not have.
void lock_before_fork() {
  OnednnCacheOff::mutex().lock();
  matmul_cache().mutex().lock();
  for (RunStripe& stripe : run_stripes.stripes) stripe.lock.lock();
}
void unlock_after_fork_in_parent() {
  for (RunStripe& stripe : run_stripes.stripes) stripe.lock.unlock();
  matmul_cache().mutex().unlock();
  OnednnCacheOff::mutex().unlock();
}
void remake_locks_in_child() {
  for (RunStripe& stripe : run_stripes.stripes) new (&stripe.lock) std::shared_mutex;
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

}  // namespace

PrimitiveRunHold::PrimitiveRunHold() : lock_(this_threads_run_lock()) { lock_.lock_shared(); }
PrimitiveRunHold::~PrimitiveRunHold() { lock_.unlock_shared(); }

// Never destroyed, as the cache: destroyed at exit, they crashed threads
// still inside posenc.
dnnl::engine& cpu_engine() {
  isa_cap();  // applies POSENC_MAX_ISA to oneDNN before its first primitive
  static dnnl::engine& engine = *new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

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

std::shared_ptr<const CachedMatmul> cached_matmul_if_made(const MatmulShape& shape) {
  return matmul_cache().find(shape);
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

namespace {

// Whether oneDNN's effective ISA includes the x86 `isa` (its ISAs are bit
// sets: AMX includes AVX512-BF16). The ISA is -1 until known: an atomic
// rather than a static's guard, and asked of oneDNN under the lock held
// across fork() while primitives are made, as oneDNN detects the CPU once
// behind a guard of its own. A fork while another thread held either guard
// (on a process's first bf16 call) left the child waiting on it for good.
bool onednn_isa_includes(dnnl::cpu_isa isa) {
#if defined(__x86_64__)
  static std::atomic<int64_t> effective{-1};
  int64_t known = effective.load(std::memory_order_relaxed);
  if (known < 0) {
    const std::lock_guard<std::mutex> lock(OnednnCacheOff::mutex());
    isa_cap();  // applies the cap to oneDNN first
    known = int64_t(static_cast<unsigned>(dnnl::get_effective_cpu_isa()));
    effective.store(known, std::memory_order_relaxed);
  }
  const auto wanted = static_cast<unsigned>(isa);
  return (static_cast<unsigned>(known) & wanted) == wanted;
#else
  (void)isa;
  return false;
#endif
}

}  // namespace

bool onednn_bf16_gemm_is_native() { return onednn_isa_includes(dnnl::cpu_isa::avx512_core_bf16); }

bool onednn_bf16_gemm_is_amx() { return onednn_isa_includes(dnnl::cpu_isa::avx512_core_amx); }

namespace {
std::atomic<bool> bf16_gemms_forced{false};
}  // namespace

bool bf16_gemms_outpace_fp32() {
  return onednn_bf16_gemm_is_amx() ||
         (onednn_bf16_gemm_is_native() &&
          (cpu_is_amd() || bf16_gemms_forced.load(std::memory_order_relaxed)));
}

void force_bf16_gemms() { bf16_gemms_forced.store(true, std::memory_order_relaxed); }

const char* onednn_matmul_impl(posenc_dtype type) {
  // Kept here: the cache may drop the primitive.
  static const std::string names[2] = {impl_of_square_gemm(POSENC_F32),
                                       impl_of_square_gemm(POSENC_BF16)};
  return names[type == POSENC_BF16 ? 1 : 0].c_str();
}

int64_t primitive_cache_capacity_from(const char* text) {
  if (text == nullptr || !std::isdigit(static_cast<unsigned char>(text[0]))) {
    return kDefaultPrimitiveCacheCapacity;
  }
  errno = 0;
  char* end = nullptr;
  const long long value = std::strtoll(text, &end, 10);
  return errno == 0 && *end == '\0' && value >= 1 ? int64_t(value) : kDefaultPrimitiveCacheCapacity;
}

void set_matmul_cache_capacity(int64_t capacity) { matmul_cache().set_capacity(capacity); }
int64_t matmul_cache_capacity() { return matmul_cache().capacity(); }
int64_t matmul_cache_size() { return matmul_cache().size(); }
int64_t matmul_cache_evictions() { return matmul_cache().evictions(); }

}  // namespace posenc
