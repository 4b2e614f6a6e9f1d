#include "runtime/matmul.hpp"

#include <algorithm>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <unordered_map>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "runtime/blocked_layout.hpp"
#include "runtime/dtype.hpp"
#include "runtime/error.hpp"
#include "runtime/matmul_primitive.hpp"
#include "runtime/packed_tiles.hpp"
#include "runtime/parallel.hpp"
#include "runtime/thread_state.hpp"

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
  std::vector<uint8_t> depth_copy;  // A and B of a GEMM run at a padded depth
  BoundArgsByGemm gemms, packs;

  std::vector<uint8_t>& copy(GemmSlots::Copy which) {
    return which == GemmSlots::Copy::kOutput ? output_copy : depth_copy;
  }
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
  std::shared_ptr<const CachedMatmul> mm = cached_matmul_if_made(shape);
  if (mm == nullptr) throw NotPrepared();
  return mm;
}

void grow(std::vector<uint8_t>& buffer, size_t bytes) {
  if (buffer.size() < bytes) buffer.resize(bytes);
}

void execute(const dnnl::primitive& primitive, GemmSlot& slot, const BoundArgs& bound) {
  const PrimitiveRunHold hold;
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
                     dnnl::memory::desc({int64_t(mm->scratchpad_bytes)},
                                        dnnl::memory::data_type::u8, dnnl::memory::format_tag::a)}};
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

// The slot's copy buffer `which` of at least `bytes`: grown outside
// regions, checked inside.
std::vector<uint8_t>& prepared_copy(GemmSlots::Copy which, size_t bytes) {
  prepare_outside_region([&](const GemmSlots& slots) { slots.prepare_copy(which, bytes); });
  std::vector<uint8_t>& buffer = current_slot().copy(which);
  if (buffer.size() < bytes) throw NotPrepared();
  return buffer;
}

// A bf16 GEMM of the depth oneDNN cannot run (pads_depth) runs at depth
// kPaddedDepth on copies of A and B in the slot's depth_copy, A's rows and
// B's depth padded with zeros (which add nothing), B as stored.
constexpr int64_t kPaddedDepth = 64;

MatmulShape depth_padded_shape(const MatmulShape& shape) {
  MatmulShape padded = shape;
  padded.k = padded.lda = kPaddedDepth;
  padded.ldb = shape.transpose_b ? kPaddedDepth : shape.n;
  padded.batch_stride_a = shape.batch_stride_a == 0 ? 0 : shape.m * kPaddedDepth;
  padded.batch_stride_b = shape.batch_stride_b == 0 ? 0 : shape.n * kPaddedDepth;
  padded.b_packed = false;
  return padded;
}

// The copies of A and B: their batch items (one where it broadcasts) and
// each item's elements.
struct DepthCopy {
  int64_t a_items, b_items, a_item, b_item;
  int64_t a_elements() const { return a_items * a_item; }
  size_t bytes() const { return size_t(a_elements() + b_items * b_item) * sizeof(uint16_t); }
};

DepthCopy depth_copy_of(const MatmulShape& shape) {
  return DepthCopy{shape.batch_stride_a == 0 ? 1 : shape.batch,
                   shape.batch_stride_b == 0 ? 1 : shape.batch, shape.m * kPaddedDepth,
                   shape.n * kPaddedDepth};
}

// dst[r * dst_stride + j] = src[r * src_stride + j] for r < rows, j < width,
// and 0 for width <= j < dst_stride.
void copy_padded_rows(const uint16_t* src, int64_t src_stride, int64_t rows, int64_t width,
                      uint16_t* dst, int64_t dst_stride) {
  for (int64_t r = 0; r < rows; ++r) {
    std::memcpy(dst + r * dst_stride, src + r * src_stride, size_t(width) * sizeof(uint16_t));
    std::fill(dst + r * dst_stride + width, dst + (r + 1) * dst_stride, uint16_t(0));
  }
}

void run_with_padded_depth(const MatmulShape& shape, const void* a, const void* b, void* c) {
  const DepthCopy copy = depth_copy_of(shape);
  auto* a_copy =
      reinterpret_cast<uint16_t*>(prepared_copy(GemmSlots::Copy::kDepth, copy.bytes()).data());
  uint16_t* b_copy = a_copy + copy.a_elements();
  if (!binding.dry) {
    const auto* a16 = static_cast<const uint16_t*>(a);
    const auto* b16 = static_cast<const uint16_t*>(b);
    for (int64_t item = 0; item < copy.a_items; ++item) {
      copy_padded_rows(a16 + item * shape.batch_stride_a, shape.lda, shape.m, shape.k,
                       a_copy + item * copy.a_item, kPaddedDepth);
    }
    for (int64_t item = 0; item < copy.b_items; ++item) {
      uint16_t* to = b_copy + item * copy.b_item;
      const uint16_t* from = b16 + item * shape.batch_stride_b;
      if (shape.transpose_b) {  // n rows of depth k
        copy_padded_rows(from, shape.ldb, shape.n, shape.k, to, kPaddedDepth);
      } else {  // k rows of n, then zero rows
        copy_padded_rows(from, shape.ldb, shape.k, shape.n, to, shape.n);
        std::fill(to + shape.k * shape.n, to + kPaddedDepth * shape.n, uint16_t(0));
      }
    }
  }
  matmul(depth_padded_shape(shape), a_copy, b_copy, c);
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
// from c first when it accumulates, into c after.
void run_through_output_copy(const MatmulShape& shape, const MatmulShape& through,
                             const void* a, const void* b, void* c) {
  std::vector<uint8_t>& buffer = prepared_copy(GemmSlots::Copy::kOutput, output_bytes(through));
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
  if (shape.accumulate) {
    rows([&](uint8_t* kept, uint8_t* out) { std::memcpy(kept, out, row_bytes); });
  }
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
  if (pads_depth(shape)) {
    run_with_padded_depth(shape, a, b, c);
    return;
  }
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
  if (pads_depth(shape)) {
    prepare(depth_padded_shape(shape));
    prepare_copy(Copy::kDepth, depth_copy_of(shape).bytes());
    return;
  }
  const bool padded = needs_padded_output(shape);
  const std::shared_ptr<const CachedMatmul> mm =
      held_or_cached(held(), padded ? padded_shape(shape) : shape);
  for (int i = 0; i < count_; ++i) {
    gemm_args(*slot(i), mm);
    if (mm->pack) pack_args(*slot(i), mm);
  }
  if (padded) prepare_copy(Copy::kOutput, output_bytes(padded_shape(shape)));
}

void GemmSlots::hold(const MatmulShape& shape) const {
  held_or_cached(held(), pads_depth(shape) ? depth_padded_shape(shape) : shape);
}

void GemmSlots::prepare_copy(Copy which, size_t bytes) const {
  for (int i = 0; i < count_; ++i) grow(slot(i)->copy(which), bytes);
}

GemmSlots::Use::Use(const GemmSlots& slots, int slot, bool in_region, bool dry)
    : previous_slot_(binding.slot), previous_slots_(binding.slots),
      previous_in_region_(binding.in_region), previous_dry_(binding.dry) {
  binding = Binding{slots.slot(slot), &slots, in_region, dry};
}

GemmSlots::Use::~Use() {
  binding = Binding{previous_slot_, previous_slots_, previous_in_region_, previous_dry_};
}

bool pads_depth(const MatmulShape& shape) {
  return shape.ab_type == POSENC_BF16 && onednn_bf16_depth_is_broken(shape.k) &&
         onednn_bf16_gemm_is_amx();
}

size_t packed_b_bytes(const MatmulShape& shape) {
  if (pads_depth(shape)) return 0;
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
  if (const std::shared_ptr<const CachedMatmul> mm = packing_matmul(shape)) {
    reorder_b(mm, b, packed);
  }
}

bool packed_b_in_tiles(const MatmulShape& shape) {
  return primitive_for(shape)->tiles.has_value();
}

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

// Whether B packed for `whole` holds B as the GEMM of `part` reads it packed.
bool holds_packed_b_of(const CachedMatmul& whole, const MatmulShape& part) {
  const std::shared_ptr<const CachedMatmul> mm = primitive_for(part);
  return mm->b == whole.b || holds_layout_of(whole.b.data, mm->b.data);
}

}  // namespace

bool packed_b_serves(const MatmulShape& shape, const MatmulShape& packed_for) {
  if (pads_depth(shape)) return false;
  return shape == packed_for || holds_packed_b_of(*primitive_for(packed_for), shape);
}

bool matmul_on_packed_b(const MatmulShape& shape, const MatmulShape& packed_for, const void* a,
                        const void* packed_b, void* c) {
  if (pads_depth(shape)) return false;  // B as stored
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


void release_gemm_slots() {
  std::vector<std::unique_ptr<GemmSlot>>().swap(own_slots());
  decltype(HeldPrimitives::held)().swap(thread_held().held);
  ++slot_releases;
}

int64_t gemm_slot_releases() { return slot_releases; }

}  // namespace posenc
