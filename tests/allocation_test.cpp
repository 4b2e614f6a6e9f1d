// Allocations of the ops, seen by replacing operator new and the malloc
// family in this binary (hence a binary of its own, built without the
// sanitizers, which replace them too):
// - an allocation failure injected into a two-thread call of every op family
//   either ends the call with POSENC_ERROR_OUT_OF_MEMORY and its output
//   untouched, or the call recovers and gives the bits of a normal call;
//   in a warm call on one thread, any one allocation failing (posenc's or
//   oneDNN's) is recovered from; making a C++ workspace, each failing is a
//   posenc::Error;
// - repeated calls of one shape, or of a few alternating ones, allocate
//   nothing in posenc after the first (with a caller workspace where the op
//   takes one, or with none: the op's own, kept by the thread); oneDNN's
//   execute builds a small argument map per GEMM, counted apart;
// - with what posenc allocates uninitialized (its own workspace, the
//   threads' scratch; not what std::vector zero-fills) and every caller
//   workspace filled with 0xFF or 0x7F, each op gives the bits of a call on
//   zeros: no scratch is read before it is written;
// - what a thread keeps is freed by posenc_release_thread_memory and made
//   again by its next call.
// An allocation is attributed to the object whose code called it:
// posenc (linked into this binary), oneDNN, or other (libstdc++, libgomp).
#include <link.h>
#include <gtest/gtest.h>
#include <malloc.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <new>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "compare.hpp"
#include "posenc/attention.hpp"
#include "posenc/posenc.h"
#include "runtime/matmul.hpp"

extern "C" {
void* __libc_malloc(size_t size);
void* __libc_calloc(size_t count, size_t size);
void* __libc_realloc(void* pointer, size_t size);
void* __libc_memalign(size_t alignment, size_t size);
void __libc_free(void* pointer);
}

namespace {

enum class Origin { kPosenc, kOneDnn, kOther };

enum class Mode {
  kOff,
  kCount,          // count by origin
  kFailWorkers,    // fail posenc's and oneDNN's allocations on other threads than the caller
  kFailNthCaller,  // fail the caller's fail_at-th allocation made by posenc
  kFailNthOfWarm,  // the same, made by posenc or oneDNN (which then makes no primitive)
  kPoison,         // fill posenc's allocations with fill_byte
};

std::atomic<Mode> mode{Mode::kOff};
std::atomic<std::thread::id> caller{};
std::atomic<long> counts[3];
std::atomic<long> caller_allocations{0}, fail_at{0}, failures{0};
// Whether the ops' callers pass no workspace (the op takes its own).
std::atomic<bool> ops_own_workspaces{false};
// What the callers' workspaces are filled with before each call (-1: left as
// they are), and posenc's allocations in Mode::kPoison.
std::atomic<int> fill_byte{-1};
thread_local bool in_hook = false;

// The executable code of this binary (posenc is linked in) and of oneDNN,
// found once at start-up.
struct CodeRange {
  uintptr_t low, high;
  Origin origin;
};
std::array<CodeRange, 16> code_ranges{};
size_t code_range_count = 0;

const bool code_ranges_found = [] {
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void*) {
        const bool self = info->dlpi_name == nullptr || info->dlpi_name[0] == '\0';
        const bool onednn = !self && std::strstr(info->dlpi_name, "libdnnl") != nullptr;
        if (!self && !onednn) return 0;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& segment = info->dlpi_phdr[i];
          if (segment.p_type != PT_LOAD || (segment.p_flags & PF_X) == 0) continue;
          if (code_range_count == code_ranges.size()) break;
          const uintptr_t low = info->dlpi_addr + segment.p_vaddr;
          code_ranges[code_range_count++] =
              CodeRange{low, low + segment.p_memsz, self ? Origin::kPosenc : Origin::kOneDnn};
        }
        return 0;
      },
      nullptr);
  return true;
}();

Origin origin_of(const void* code) {
  const auto address = reinterpret_cast<uintptr_t>(code);
  for (size_t i = 0; i < code_range_count; ++i) {
    if (address >= code_ranges[i].low && address < code_ranges[i].high) {
      return code_ranges[i].origin;
    }
  }
  return Origin::kOther;
}

// Whether the allocation asked for by code at `code` fails (and counts it).
bool fails(const void* code) {
  const Mode m = mode.load(std::memory_order_relaxed);
  if (m == Mode::kOff || m == Mode::kPoison || in_hook) return false;
  in_hook = true;
  const Origin origin = origin_of(code);
  bool fail = false;
  const bool on_caller = std::this_thread::get_id() == caller.load();
  if (m == Mode::kCount) {
    ++counts[int(origin)];
  } else if (origin != Origin::kOther) {
    // Only posenc's and oneDNN's: libgomp ends the process when its own fail.
    if (m == Mode::kFailWorkers) fail = !on_caller;
    // oneDNN 2.6 does not survive failures of its own while it creates a
    // primitive (dnnl_primitive_attr_create faults on a null from malloc).
    const bool counted =
        m == Mode::kFailNthOfWarm || (m == Mode::kFailNthCaller && origin == Origin::kPosenc);
    if (counted && on_caller) fail = ++caller_allocations == fail_at.load();
  }
  if (fail) ++failures;
  in_hook = false;
  return fail;
}

// p, filled with fill_byte in Mode::kPoison where posenc's code at `code`
// asked for its `size` bytes.
void* poisoned(void* p, size_t size, const void* code) {
  if (p != nullptr && mode.load(std::memory_order_relaxed) == Mode::kPoison && !in_hook) {
    in_hook = true;
    if (origin_of(code) == Origin::kPosenc) std::memset(p, fill_byte, size);
    in_hook = false;
  }
  return p;
}

void* checked_new(size_t size, const void* code) {
  if (fails(code)) throw std::bad_alloc();
  void* p = __libc_malloc(size == 0 ? 1 : size);
  if (p == nullptr) throw std::bad_alloc();
  return poisoned(p, size, code);
}

void* checked_new_aligned(size_t size, size_t alignment, const void* code) {
  if (fails(code)) throw std::bad_alloc();
  void* p = __libc_memalign(alignment, size == 0 ? 1 : size);
  if (p == nullptr) throw std::bad_alloc();
  return poisoned(p, size, code);
}

}  // namespace

#define POSENC_CALLER __builtin_return_address(0)

void* operator new(size_t size) { return checked_new(size, POSENC_CALLER); }
void* operator new[](size_t size) { return checked_new(size, POSENC_CALLER); }
void* operator new(size_t size, std::align_val_t a) {
  return checked_new_aligned(size, size_t(a), POSENC_CALLER);
}
void* operator new[](size_t size, std::align_val_t a) {
  return checked_new_aligned(size, size_t(a), POSENC_CALLER);
}
void* operator new(size_t size, const std::nothrow_t&) noexcept {
  return fails(POSENC_CALLER) ? nullptr : __libc_malloc(size == 0 ? 1 : size);
}
void* operator new[](size_t size, const std::nothrow_t&) noexcept {
  return fails(POSENC_CALLER) ? nullptr : __libc_malloc(size == 0 ? 1 : size);
}
void operator delete(void* p) noexcept { __libc_free(p); }
void operator delete[](void* p) noexcept { __libc_free(p); }
void operator delete(void* p, size_t) noexcept { __libc_free(p); }
void operator delete[](void* p, size_t) noexcept { __libc_free(p); }
void operator delete(void* p, std::align_val_t) noexcept { __libc_free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { __libc_free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { __libc_free(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { __libc_free(p); }

extern "C" {
void* malloc(size_t size) {
  return fails(POSENC_CALLER) ? nullptr : poisoned(__libc_malloc(size), size, POSENC_CALLER);
}
void* calloc(size_t count, size_t size) {
  return fails(POSENC_CALLER) ? nullptr : __libc_calloc(count, size);
}
void* realloc(void* p, size_t size) {
  return fails(POSENC_CALLER) ? nullptr : __libc_realloc(p, size);
}
void free(void* p) { __libc_free(p); }
void* memalign(size_t alignment, size_t size) {
  return fails(POSENC_CALLER) ? nullptr : __libc_memalign(alignment, size);
}
void* aligned_alloc(size_t alignment, size_t size) {
  return fails(POSENC_CALLER) ? nullptr : __libc_memalign(alignment, size);
}
int posix_memalign(void** out, size_t alignment, size_t size) {
  if (fails(POSENC_CALLER)) return ENOMEM;
  void* p = __libc_memalign(alignment, size);
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}
void* valloc(size_t size) { return memalign(size_t(sysconf(_SC_PAGESIZE)), size); }
}

namespace posenc::test {
namespace {

// One call of an op on fixed inputs, writing `floats` floats at out.
struct OpCase {
  std::string name;
  size_t floats;
  std::function<posenc_status(posenc_context*, float*)> call;
};

std::vector<float> inputs(size_t count, uint32_t seed) { return random_floats(count, seed); }

// The caller's workspace of a context and size, made once, outside the
// hooks (the test's own allocations would count as posenc's); filled with
// fill_byte unless it is -1; none with ops_own_workspaces.
void* workspace(posenc_context* context, size_t bytes) {
  if (ops_own_workspaces) return nullptr;
  struct Space {
    posenc_context* context;
    size_t bytes;
    void* memory;
  };
  static std::array<Space, 32> spaces{};
  for (Space& s : spaces) {
    if (s.memory == nullptr) s = Space{context, bytes, __libc_malloc(bytes)};
    if (s.context == context && s.bytes == bytes) {
      if (fill_byte >= 0) std::memset(s.memory, fill_byte, bytes);
      return s.memory;
    }
  }
  return nullptr;
}

const std::vector<float>& input(int which) {
  static const std::vector<float> x[4] = {inputs(1 << 16, 1), inputs(1 << 16, 2),
                                          inputs(1 << 16, 3), inputs(1 << 16, 4)};
  return x[which];
}

// posenc_attention with a workspace, on inputs 0..2 as q, k, v and input 3
// as the tables the desc uses, t's other tensors as given.
posenc_status attention(posenc_context* ctx, const posenc_attention_desc& d,
                        posenc_attention_tensors t, float* out) {
  size_t bytes = 0;
  const posenc_status sized = posenc_attention_workspace_size(ctx, &d, &bytes);
  if (sized != POSENC_OK) return sized;
  t.q = input(0).data();
  t.k = input(1).data();
  t.v = input(2).data();
  if (d.bias == POSENC_BIAS_RELATIVE_1D || d.bias == POSENC_BIAS_TABLE_2D ||
      d.bias == POSENC_BIAS_TABLE_1D || d.bias == POSENC_BIAS_T5) {
    t.table = input(3).data();
  }
  if (d.bias == POSENC_BIAS_RELATIVE_2D) {
    t.table_h = input(3).data();
    t.table_w = input(3).data() + 1024;
  }
  t.out = out;
  return posenc_attention(ctx, &d, &t, workspace(ctx, bytes), bytes);
}

// Every op family, on shapes that give both threads several tasks and
// GEMMs. Inputs live as long as the process.
const std::vector<OpCase>& op_cases() {
  static const std::vector<OpCase> cases = [] {
    static const std::vector<float>& x = input(0);
    static const std::vector<float>& y = input(1);
    static const std::vector<float>& z = input(2);
    static const std::vector<float>& w = input(3);
    std::vector<OpCase> c;
    c.push_back({"sinusoid_table_2d", 9 * 7 * 32, [](posenc_context* ctx, float* out) {
                   return posenc_sinusoid_table_2d(ctx, 9, 7, 32, 10000.0,
                                                   POSENC_SINCOS_INTERLEAVED, POSENC_F32, out);
                 }});
    c.push_back({"add_sinusoid", 2 * 37 * 24, [](posenc_context* ctx, float* out) {
                   return posenc_add_sinusoid(ctx, 2, 37, 24, 5, 10000.0, POSENC_SINCOS_SPLIT,
                                              x.data(), out);
                 }});
    c.push_back({"absolute_logits", 2 * 3 * 300 * 41, [](posenc_context* ctx, float* out) {
                   return posenc_absolute_logits(ctx, 2, 3, 300, 41, 16, x.data(), y.data(), 1,
                                                 out);
                 }});
    c.push_back({"rel_to_abs", 2 * 3 * 29 * 29, [](posenc_context* ctx, float* out) {
                   return posenc_rel_to_abs(ctx, 2, 3, 29, x.data(), out);
                 }});
    c.push_back({"relative_logits_1d", 2 * 3 * 150 * 130, [](posenc_context* ctx, float* out) {
                   return posenc_relative_logits_1d(ctx, 2, 3, 150, 130, 16, x.data(), y.data(),
                                                    1, nullptr, out);
                 }});
    c.push_back({"relative_logits_2d_decomposed", 2 * 3 * 35 * (5 + 7),
                 [](posenc_context* ctx, float* out) {
                   return posenc_relative_logits_2d_decomposed(ctx, 2, 3, 5, 7, 16, x.data(),
                                                               y.data(), z.data(), 1, out,
                                                               out + 2 * 3 * 35 * 5);
                 }});
    // SAM's order and a 3x9 key map: rows gathered into the threads' scratch.
    c.push_back({"relative_logits_2d_maps", 2 * 3 * 35 * (3 + 9),
                 [](posenc_context* ctx, float* out) {
                   posenc_relative_2d_desc d;
                   posenc_relative_2d_desc_init(&d, 2, 3, 5, 7, 16);
                   d.kv_map_height = 3;
                   d.kv_map_width = 9;
                   d.relative_order = POSENC_RELATIVE_QUERY_MINUS_KEY;
                   return posenc_relative_logits_2d_maps(ctx, &d, x.data(), y.data(), z.data(),
                                                         out, out + 2 * 3 * 35 * 3);
                 }});
    c.push_back({"relative_logits_2d", 2 * 3 * 35 * 35, [](posenc_context* ctx, float* out) {
                   return posenc_relative_logits_2d(ctx, 2, 3, 5, 7, 16, x.data(), y.data(),
                                                    z.data(), 1, out);
                 }});
    for (const posenc_attention_bias bias :
         {POSENC_BIAS_NONE, POSENC_BIAS_RELATIVE_1D, POSENC_BIAS_RELATIVE_2D}) {
      posenc_attention_desc d;
      posenc_attention_desc_init(&d, 2, 3, 70, 70, 16);
      d.bias = bias;
      d.causal = bias == POSENC_BIAS_RELATIVE_1D;
      d.map_height = bias == POSENC_BIAS_RELATIVE_2D ? 7 : 0;
      d.map_width = bias == POSENC_BIAS_RELATIVE_2D ? 10 : 0;
      const std::string name = std::string("attention_") +
                               (bias == POSENC_BIAS_NONE        ? "plain"
                                : bias == POSENC_BIAS_RELATIVE_1D ? "1d_causal"
                                                                  : "2d");
      c.push_back({name, 2 * 3 * 70 * 16, [d](posenc_context* ctx, float* out) {
                     return attention(ctx, d, posenc_attention_tensors{}, out);
                   }});
    }
    // The bias kinds without q: their tables laid out in the workspace; T5's
    // gated as WavLM's (its 320 buckets up to 800).
    for (const posenc_attention_bias bias : {POSENC_BIAS_TABLE_2D, POSENC_BIAS_TABLE_1D,
                                             POSENC_BIAS_T5, POSENC_BIAS_ALIBI}) {
      posenc_attention_desc d;
      posenc_attention_desc_init(&d, 2, 3, 70, 70, 16);
      d.bias = bias;
      d.map_height = bias == POSENC_BIAS_TABLE_2D ? 7 : 0;
      d.map_width = bias == POSENC_BIAS_TABLE_2D ? 10 : 0;
      d.max_distance = bias == POSENC_BIAS_TABLE_1D ? 9 : bias == POSENC_BIAS_T5 ? 800 : 0;
      d.num_buckets = bias == POSENC_BIAS_T5 ? 320 : 0;
      d.bias_gate = bias == POSENC_BIAS_T5;
      d.causal = bias == POSENC_BIAS_ALIBI;
      const std::string name = std::string("attention_") +
                               (bias == POSENC_BIAS_TABLE_2D   ? "table_2d"
                                : bias == POSENC_BIAS_TABLE_1D ? "table_1d"
                                : bias == POSENC_BIAS_T5       ? "t5_gated"
                                                               : "alibi");
      c.push_back({name, 2 * 3 * 70 * 16, [d](posenc_context* ctx, float* out) {
                     posenc_attention_tensors t{};
                     if (d.bias_gate) t.bias_gate = z.data();
                     return attention(ctx, d, t, out);
                   }});
    }
    // bf16 (widened to fp32 GEMMs where the attention's GEMMs do not run in bf16:
    // q, each key block's keys and values, the table rows, all in the
    // threads' scratch), the kv head's keys and values packed for its three
    // query heads, or one reader's widened per key block. The inputs' fp32
    // bits serve as bf16 pairs (the values do not matter here).
    posenc_attention_desc bf16_packed;
    posenc_attention_desc_init(&bf16_packed, 2, 3, 70, 70, 16);
    bf16_packed.dtype = POSENC_BF16;
    bf16_packed.kv_heads = 1;
    bf16_packed.bias = POSENC_BIAS_RELATIVE_1D;
    bf16_packed.max_distance = 8;
    bf16_packed.relative_values = 1;
    bf16_packed.causal = 1;
    c.push_back({"attention_bf16_packed_1d", 2 * 3 * 70 * 16,
                 [bf16_packed](posenc_context* ctx, float* out) {
                   posenc_attention_tensors t{};
                   t.value_table = input(3).data() + 2048;
                   return attention(ctx, bf16_packed, t, out);
                 }});
    posenc_attention_desc bf16_per_block;
    posenc_attention_desc_init(&bf16_per_block, 4, 2, 70, 70, 16);
    bf16_per_block.dtype = POSENC_BF16;
    c.push_back({"attention_bf16_per_block", 4 * 2 * 70 * 16,
                 [bf16_per_block](posenc_context* ctx, float* out) {
                   return attention(ctx, bf16_per_block, posenc_attention_tensors{}, out);
                 }});
    // A decode step whose keys are split into ranges (8 of 512), then merged.
    posenc_attention_desc decode;
    posenc_attention_desc_init(&decode, 1, 2, 4, 4000, 8);
    decode.bias = POSENC_BIAS_RELATIVE_1D;
    decode.max_distance = 16;
    decode.relative_values = 1;
    decode.causal = 1;
    decode.query_offset = 3996;
    c.push_back({"attention_split_decode", 2 * 4 * 8, [decode](posenc_context* ctx, float* out) {
                   posenc_attention_tensors t{};
                   t.value_table = input(3).data() + 2048;
                   return attention(ctx, decode, t, out);
                 }});
    // Multi-query attention, 8 queries of 16 heads (4 stacked a task)
    // against keys split into 5 ranges of 512: each key block packed for the
    // 4 tasks that read it.
    posenc_attention_desc split_packed;
    posenc_attention_desc_init(&split_packed, 1, 16, 8, 2049, 16);
    split_packed.kv_heads = 1;
    c.push_back({"attention_split_packed", 16 * 8 * 16,
                 [split_packed](posenc_context* ctx, float* out) {
                   return attention(ctx, split_packed, posenc_attention_tensors{}, out);
                 }});
    // v, out and the relative values of 24 columns against q and k of 8, in
    // a decode step split into key ranges (8 of 256).
    posenc_attention_desc value_dim;
    posenc_attention_desc_init(&value_dim, 1, 1, 4, 2048, 8);
    value_dim.value_head_dim = 24;
    value_dim.bias = POSENC_BIAS_RELATIVE_1D;
    value_dim.max_distance = 16;
    value_dim.relative_values = 1;
    value_dim.causal = 1;
    value_dim.query_offset = 2044;
    c.push_back({"attention_value_head_dim", 4 * 24, [value_dim](posenc_context* ctx, float* out) {
                   posenc_attention_tensors t{};
                   t.value_table = input(3).data() + 2048;
                   return attention(ctx, value_dim, t, out);
                 }});
    // Per-sequence lengths and offsets: the GEMM shapes follow the values.
    c.push_back({"attention_sequences", 3 * 2 * 150 * 16, [](posenc_context* ctx, float* out) {
                   static const int32_t kv_lengths[3] = {150, 37, 0}, q_lengths[3] = {150, 99, 1},
                                        offsets[3] = {0, -4, 20};
                   posenc_attention_desc d;
                   posenc_attention_desc_init(&d, 3, 2, 150, 150, 16);
                   d.bias = POSENC_BIAS_RELATIVE_1D;
                   d.causal = 1;
                   posenc_attention_tensors t{};
                   t.kv_lengths = kv_lengths;
                   t.q_lengths = q_lengths;
                   t.query_offsets = offsets;
                   return attention(ctx, d, t, out);
                  }});
    // Grouped kv heads (each key block packed once a thread), read in place
    // from a packed qkv (GEMM row strides of 8 heads of 16), out BTHD.
    c.push_back({"attention_gqa_packed_qkv", 2 * 4 * 70 * 16,
                 [](posenc_context* ctx, float* out) {
                   posenc_attention_desc d = posenc::attention_desc(2, 4, 70, 70, 16);
                   d.kv_heads = 2;
                   d = posenc::packed_qkv_desc(d, POSENC_LAYOUT_BTHD);
                   const posenc::PackedQkv packed = posenc::packed_qkv(70, 4, 2, 16);
                   size_t bytes = 0;
                   const posenc_status sized = posenc_attention_workspace_size(ctx, &d, &bytes);
                   if (sized != POSENC_OK) return sized;
                   posenc_attention_tensors t{};
                   t.q = x.data();
                   t.k = x.data() + packed.k_offset;
                   t.v = x.data() + packed.v_offset;
                   t.out = out;
                   return posenc_attention(ctx, &d, &t, workspace(ctx, bytes), bytes);
                 }});
    // A small problem (Swin's 7x7 windows, its 2D table): no GEMMs on any
    // path but the baseline (plan.cpp's small_problem_products).
    posenc_attention_desc window;
    posenc_attention_desc_init(&window, 4, 2, 49, 49, 16);
    window.bias = POSENC_BIAS_TABLE_2D;
    window.map_height = window.map_width = 7;
    c.push_back({"attention_small_window", 4 * 2 * 49 * 16,
                 [window](posenc_context* ctx, float* out) {
                   return attention(ctx, window, posenc_attention_tensors{}, out);
                 }});
    // 150 tokens: two tiles of the projection (parallel_matmul), a region.
    c.push_back({"bottleneck_mhsa", 5 * 16 * 30, [](posenc_context* ctx, float* out) {
                   posenc_bottleneck_desc d;
                   posenc_bottleneck_desc_init(&d, 5, 16, 5, 6, 2, 8);
                   size_t bytes = 0;
                   const posenc_status sized = posenc_bottleneck_workspace_size(ctx, &d, &bytes);
                   if (sized != POSENC_OK) return sized;
                   return posenc_bottleneck_mhsa(ctx, &d, x.data(), y.data(), z.data(),
                                                 w.data(), out, workspace(ctx, bytes), bytes);
                 }});
    // bf16 with a qkv bias and stride 2 (widened where oneDNN's bf16 GEMM is
    // not native: the inputs widened into the workspace, the fp32 block run
    // on them), on a map of its own (GEMMs not made by the case above). The
    // inputs' fp32 bits serve as bf16 pairs.
    c.push_back({"bottleneck_bf16", 2 * 16 * 2 * 3, [](posenc_context* ctx, float* out) {
                   posenc_bottleneck_desc d;
                   posenc_bottleneck_desc_init(&d, 2, 16, 5, 7, 2, 8);
                   d.dtype = POSENC_BF16;
                   d.stride = 2;
                   size_t bytes = 0;
                   const posenc_status sized = posenc_bottleneck_workspace_size(ctx, &d, &bytes);
                   if (sized != POSENC_OK) return sized;
                   const posenc_bottleneck_tensors t{x.data(), y.data(), w.data() + 2048,
                                                     z.data(), w.data(), out};
                   return posenc_bottleneck(ctx, &d, &t, workspace(ctx, bytes), bytes);
                 }});
    c.push_back({"position_bias_t5", 3 * 40 * 37, [](posenc_context* ctx, float* out) {
                   posenc_position_bias_desc d;
                   posenc_position_bias_desc_init(&d, POSENC_POSITION_BIAS_T5, 3, 40, 37);
                   return posenc_position_bias(ctx, &d, x.data(), out);
                 }});
    // BEiT's 5x2 window and class token: each head's entries prepared first.
    c.push_back({"position_bias_table_2d", 3 * 11 * 11, [](posenc_context* ctx, float* out) {
                   posenc_position_bias_desc d;
                   posenc_position_bias_desc_init(&d, POSENC_POSITION_BIAS_TABLE_2D, 3, 11, 11);
                   d.window_height = 5;
                   d.window_width = 2;
                   d.class_token = 1;
                   return posenc_position_bias(ctx, &d, x.data(), out);
                 }});
    // The table resizes: their taps and lines in the calling thread's kept
    // scratch (the relative ones run on it alone).
    c.push_back({"resize_absolute_table_2d", (1 + 20 * 23) * 24,
                 [](posenc_context* ctx, float* out) {
                   posenc_absolute_resize_desc d;
                   posenc_absolute_resize_desc_init(&d, 24, 14, 14, 20, 23);
                   return posenc_resize_absolute_table_2d(ctx, &d, x.data(), out);
                 }});
    c.push_back({"resize_relative_table", 127 * 16, [](posenc_context*, float* out) {
                   return posenc_resize_relative_table(27, 16, x.data(), 127, out);
                 }});
    c.push_back({"resize_relative_bias_table_2d", 3 * ((23 * 23) + 3),
                 [](posenc_context*, float* out) {
                   return posenc_resize_relative_bias_table_2d(3, 7, 7, 12, 12, 1, x.data(), out);
                 }});
    // Transformer-XL's query bias in the 1D relative logits.
    posenc_attention_desc query_bias;
    posenc_attention_desc_init(&query_bias, 2, 3, 70, 70, 16);
    query_bias.bias = POSENC_BIAS_RELATIVE_1D;
    query_bias.relative_query_bias = 1;
    c.push_back({"attention_query_bias", 2 * 3 * 70 * 16,
                 [query_bias](posenc_context* ctx, float* out) {
                   posenc_attention_tensors t{};
                   t.relative_query_bias = z.data();
                   return attention(ctx, query_bias, t, out);
                 }});
    // DeBERTa's disentangled bias, both ways: the whole table (its keys'
    // logits kept in the workspace) and the block pairs' windows; the first
    // two differ in num_buckets alone (their tables' rows, 16 and 1024).
    for (const auto& [name, buckets, q_len] :
         {std::tuple<const char*, int64_t, int64_t>{"attention_disentangled_whole", 8, 70},
          {"attention_disentangled_span", 0, 70},
          {"attention_disentangled_pairs", 256, 3}}) {
      posenc_attention_desc deberta;
      posenc_attention_desc_init(&deberta, 2, 3, q_len, 70, 16);
      deberta.bias = POSENC_BIAS_DISENTANGLED;
      deberta.num_buckets = buckets;
      deberta.max_distance = 512;
      c.push_back({name, size_t(2 * 3 * q_len * 16), [deberta](posenc_context* ctx, float* out) {
                     posenc_attention_tensors t{};
                     t.table = t.key_table = input(3).data();
                     return attention(ctx, deberta, t, out);
                   }});
    }
    c.push_back({"rope", 2 * 40 * 3 * 32, [](posenc_context* ctx, float* out) {
                   posenc_rope_config config;
                   posenc_rope_config_init(&config, 32);
                   posenc_rope_positions positions{};
                   positions.offset = 7;
                   return posenc_rope(ctx, &config, nullptr, &positions, POSENC_ROPE_BTHD,
                                      POSENC_F32, 2, 40, 3, 32, x.data(), out);
                 }});
    return c;
  }();
  return cases;
}

class Hook {
 public:
  explicit Hook(Mode m, long nth = 0) {
    for (auto& c : counts) c = 0;
    caller_allocations = 0;
    fail_at = nth;
    failures = 0;
    caller = std::this_thread::get_id();
    mode = m;
  }
  ~Hook() { mode = Mode::kOff; }
};

// The ops' callers pass no workspace for the life of the scope, if `own`.
class OwnWorkspaces {
 public:
  explicit OwnWorkspaces(bool own) : saved_(ops_own_workspaces) { ops_own_workspaces = own; }
  ~OwnWorkspaces() { ops_own_workspaces = saved_; }
  OwnWorkspaces(const OwnWorkspaces&) = delete;
  OwnWorkspaces& operator=(const OwnWorkspaces&) = delete;

 private:
  bool saved_;
};

posenc_context* two_threads() {
  static posenc_context* context = [] {
    posenc_context* c = nullptr;
    posenc_context_create(POSENC_ISA_AUTO, 2, &c);
    return c;
  }();
  return context;
}

std::vector<float> output_of(const OpCase& op) {
  std::vector<float> out(op.floats);
  EXPECT_EQ(op.call(two_threads(), out.data()), POSENC_OK) << op.name << posenc_last_error();
  return out;
}

bool same_bits(const float* a, const std::vector<float>& b) {
  return std::memcmp(a, b.data(), b.size() * sizeof(float)) == 0;
}

// Every allocation posenc or oneDNN makes on the OpenMP worker thread fails,
// on the first call of each shape (oneDNN's primitives not made yet): the
// worker's tasks are rerun on the calling thread, and the call gives the
// bits of a normal one (issue 13 found std::terminate here).
TEST(AllocationFailure, OnWorkerThreadsIsRecovered) {
  for (const OpCase& op : op_cases()) {
    GuardedFloats out(op.floats);
    posenc_status status;
    long failed;
    {
      const Hook hook(Mode::kFailWorkers);
      status = op.call(two_threads(), out.data());
      failed = failures;
    }
    ASSERT_EQ(status, POSENC_OK) << op.name << ": " << posenc_last_error();
    EXPECT_TRUE(out.guards_intact()) << op.name;
    EXPECT_TRUE(same_bits(out.data(), output_of(op))) << op.name;
    // Ops that run GEMMs allocate on the worker (oneDNN's execute): there
    // the test has failed something, or it has tested nothing.
    const bool runs_gemms = op.name.find("sinusoid") == std::string::npos &&
                            op.name != "rel_to_abs" && op.name != "rope" &&
                            op.name != "attention_small_window" &&
                            op.name.find("position_bias") == std::string::npos &&
                            op.name.rfind("resize", 0) == std::string::npos;
    if (runs_gemms) {
      EXPECT_GT(failed, 0) << op.name << ": no allocation failed";
    }
    std::printf("%-30s %ld allocations failed on the worker\n", op.name.c_str(), failed);
  }
}

// The n-th allocation posenc makes on the calling thread fails, for n = 1,
// 2, ... until a call completes: every call before fails with its output
// untouched (all of posenc's allocations come before the first write), or
// completes with the right bits. Then the same with no caller workspace,
// on a thread of its own: the op's own, which that thread keeps, made
// past its failures.
TEST(AllocationFailure, OnTheCallingThreadWritesNothing) {
  posenc_set_primitive_cache_capacity(1);  // the next shapes start cold
  posenc_set_primitive_cache_capacity(1024);
  posenc_context* context = two_threads();  // made before any failure
  for (const OpCase& op : op_cases()) {
    for (const bool own : {false, true}) {
      const auto attempts = [&] {
        const OwnWorkspaces workspaces(own);
        for (long n = 1;; ++n) {
          GuardedFloats out(op.floats);
          posenc_status status;
          {
            const Hook hook(Mode::kFailNthCaller, n);
            status = op.call(context, out.data());
          }
          EXPECT_TRUE(out.guards_intact()) << op.name << " n=" << n;
          if (status == POSENC_OK) {
            EXPECT_TRUE(same_bits(out.data(), output_of(op))) << op.name << " n=" << n;
            std::printf("%-30s failed %ld times, then completed%s\n", op.name.c_str(), n - 1,
                        own ? " (the op's own workspace)" : "");
            break;
          }
          ASSERT_EQ(status, POSENC_ERROR_OUT_OF_MEMORY)
              << op.name << " n=" << n << ": " << posenc_last_error();
          ASSERT_TRUE(out.payload_untouched()) << op.name << " n=" << n;
          EXPECT_NE(std::string(posenc_last_error()).find("out of memory"), std::string::npos);
        }
      };
      if (own) {
        std::thread(attempts).join();
      } else {
        attempts();
      }
    }
  }
}

// The n-th allocation posenc or oneDNN makes in a warm call on one thread
// fails (oneDNN's execute builds an argument map per GEMM), for n = 1, 2,
// ... until a call meets no failure: the task that failed runs again, and
// the call gives the bits of a normal one (it returned
// POSENC_ERROR_OUT_OF_MEMORY with part of its output written).
TEST(AllocationFailure, OnTheOnlyThreadOfAWarmCallIsRunAgain) {
  posenc_context* context = nullptr;
  ASSERT_EQ(posenc_context_create(POSENC_ISA_AUTO, 1, &context), POSENC_OK);
  for (const OpCase& op : op_cases()) {
    std::vector<float> expected(op.floats);
    ASSERT_EQ(op.call(context, expected.data()), POSENC_OK) << op.name;  // makes its shapes
    long n = 1;
    for (;; ++n) {
      GuardedFloats out(op.floats);
      posenc_status status;
      long failed;
      {
        const Hook hook(Mode::kFailNthOfWarm, n);
        status = op.call(context, out.data());
        failed = failures;
      }
      ASSERT_EQ(status, POSENC_OK) << op.name << " n=" << n << ": " << posenc_last_error();
      EXPECT_TRUE(out.guards_intact()) << op.name << " n=" << n;
      EXPECT_TRUE(same_bits(out.data(), expected)) << op.name << " n=" << n;
      if (failed == 0) break;  // past the call's allocations
    }
    std::printf("%-30s each of %ld allocations failed once, and the call completed\n",
                op.name.c_str(), n - 1);
  }
  posenc_context_destroy(context);
}

// Each allocation posenc makes while a C++ workspace is made (its context,
// its size query, its buffer) failing in turn: a posenc::Error of
// OUT_OF_MEMORY, never std::bad_alloc, the buffer's naming the workspace.
TEST(AllocationFailure, OfACppWorkspaceIsAPosencError) {
  const posenc_attention_desc desc = posenc::attention_desc(1, 2, 64, 64, 16);
  bool buffer_refused = false;
  for (long n = 1;; ++n) {
    const Hook hook(Mode::kFailNthCaller, n);
    try {
      const posenc::AttentionWorkspace workspace(posenc::Context(posenc::Isa::automatic, 1), desc);
      EXPECT_GT(workspace.size(), 0u);
      if (failures == 0) break;  // past its allocations
    } catch (const posenc::Error& e) {
      EXPECT_EQ(e.status(), POSENC_ERROR_OUT_OF_MEMORY) << "n=" << n << ": " << e.what();
      const std::string message = e.what();
      buffer_refused |= message.rfind("posenc::AttentionWorkspace: workspace", 0) == 0;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "n=" << n << ": not a posenc::Error: " << e.what();
    }
  }
  EXPECT_TRUE(buffer_refused);
}

// Every op on a thread of its own (its thread buffers made in the call,
// its OpenMP team new) with what posenc allocates uninitialized 0xFF (NaN
// as floats, -1 as integers) or 0x7F (3.4e38, a huge index), and with each
// caller workspace the same or with none (the op's own): the bits of a call
// whose caller workspace holds zeros.
TEST(Allocations, ScratchIsWrittenBeforeItIsRead) {
  std::vector<std::vector<float>> on_zeros;
  fill_byte = 0;
  for (const OpCase& op : op_cases()) on_zeros.push_back(output_of(op));
  for (const int byte : {0xFF, 0x7F}) {
    fill_byte = byte;
    for (const bool own : {false, true}) {
      for (size_t i = 0; i < op_cases().size(); ++i) {
        const OpCase& op = op_cases()[i];
        std::vector<float> out(op.floats);
        posenc_status status = POSENC_ERROR_INTERNAL;
        std::string error;
        std::thread([&] {
          const OwnWorkspaces workspaces(own);
          const Hook hook(Mode::kPoison);
          status = op.call(two_threads(), out.data());
          error = posenc_last_error();
        }).join();
        const std::string whose = std::string(own ? " (the op's own workspace)" : "") +
                                  " filled with " + std::to_string(byte);
        ASSERT_EQ(status, POSENC_OK) << op.name << whose << ": " << error;
        EXPECT_TRUE(same_bits(out.data(), on_zeros[i])) << op.name << whose;
      }
    }
  }
  fill_byte = -1;
}

// Calls 2..101 of one shape, on 1 and 2 threads, with a caller workspace
// or none (the op's own, kept by the calling thread): posenc allocates
// nothing; oneDNN's execute allocates a fixed count per GEMM (its argument
// map). Every call runs the same GEMMs: the same count, except that on two
// threads the attention's (and the BoTNet block's) thread taking over tasks
// of another's run (TaskRuns) packs their kv head's keys and values again:
// a call of those may count a few more than on one thread (3 a head here),
// never fewer, and no more than a quarter more.
TEST(Allocations, RepeatedShapesAllocateNothingInPosenc) {
  posenc_context* one = nullptr;
  ASSERT_EQ(posenc_context_create(POSENC_ISA_AUTO, 1, &one), POSENC_OK);
  for (const bool own : {false, true}) {
    const OwnWorkspaces workspaces(own);
    std::map<std::string, long> one_thread_onednn;
    for (posenc_context* ctx : {one, two_threads()}) {
      for (const OpCase& op : op_cases()) {
        std::vector<float> out(op.floats);
        ASSERT_EQ(op.call(ctx, out.data()), POSENC_OK) << op.name;  // the first may allocate
        long per_call[3] = {0, 0, 0};
        long total[3] = {0, 0, 0};
        long most_onednn = 0, fewest_onednn = LONG_MAX;
        for (int i = 0; i < 100; ++i) {
          {
            const Hook hook(Mode::kCount);
            ASSERT_EQ(op.call(ctx, out.data()), POSENC_OK) << op.name;
          }
          for (int o = 0; o < 3; ++o) {
            if (i == 0) per_call[o] = counts[o];
            total[o] += counts[o];
          }
          most_onednn = std::max(most_onednn, counts[int(Origin::kOneDnn)].load());
          fewest_onednn = std::min(fewest_onednn, counts[int(Origin::kOneDnn)].load());
        }
        std::printf("%-30s %d thread(s)%s: per call posenc %ld, oneDNN %ld, other %ld\n",
                    op.name.c_str(), posenc_context_num_threads(ctx), own ? ", own workspace" : "",
                    per_call[0], per_call[1], per_call[2]);
        EXPECT_EQ(total[int(Origin::kPosenc)], 0) << op.name << (own ? " (own workspace)" : "");
        EXPECT_EQ(total[int(Origin::kOther)], 100 * per_call[int(Origin::kOther)]) << op.name;
        const bool packs_per_thread =
            op.name.rfind("attention", 0) == 0 || op.name.rfind("bottleneck", 0) == 0;
        if (ctx == one || !packs_per_thread) {
          EXPECT_EQ(total[int(Origin::kOneDnn)], 100 * per_call[int(Origin::kOneDnn)]) << op.name;
          one_thread_onednn[op.name] = per_call[int(Origin::kOneDnn)];
        } else {
          const long on_one = one_thread_onednn[op.name];
          EXPECT_GE(fewest_onednn, on_one) << op.name;
          EXPECT_LE(most_onednn, on_one + on_one / 4) << op.name;
        }
      }
    }
  }
  posenc_context_destroy(one);
}

// A server alternating a few shapes of one op on a thread (its models'
// sequence lengths), or every op family in turn: once each has run, posenc
// allocates nothing. (relative_logits_1d's GEMMs follow its tiles, found by
// a dry run, which writes nothing, for a shape not among the thread's last
// four: six shapes in turn run it every call.)
TEST(Allocations, AlternatingShapesAllocateNothingInPosenc) {
  std::vector<std::vector<float>> outs;
  for (const OpCase& op : op_cases()) {
    outs.emplace_back(op.floats);
    ASSERT_EQ(op.call(two_threads(), outs.back().data()), POSENC_OK) << op.name;
  }
  {
    const Hook hook(Mode::kCount);
    for (int round = 0; round < 3; ++round) {
      for (size_t i = 0; i < outs.size(); ++i) {
        ASSERT_EQ(op_cases()[i].call(two_threads(), outs[i].data()), POSENC_OK);
      }
    }
    EXPECT_EQ(counts[int(Origin::kPosenc)], 0);
  }

  const std::vector<float>& q = input(0);
  const std::vector<float>& table = input(1);
  std::vector<float> out(2 * 3 * 150 * 130);
  const int64_t queries[] = {150, 97, 64, 33, 20, 7};
  auto call = [&](int64_t n) {
    return posenc_relative_logits_1d(two_threads(), 2, 3, n, 130, 16, q.data(), table.data(), 1,
                                     nullptr, out.data());
  };
  for (const int64_t n : queries) ASSERT_EQ(call(n), POSENC_OK);
  const Hook hook(Mode::kCount);
  for (int round = 0; round < 10; ++round) {
    for (const int64_t n : queries) ASSERT_EQ(call(n), POSENC_OK);
  }
  EXPECT_EQ(counts[int(Origin::kPosenc)], 0);
}

// After posenc_release_thread_memory, each op's next call makes again what
// the thread keeps (posenc allocates: its GEMM slots, its scratch) and the
// call after it allocates nothing in posenc (the GEMMs the thread had
// prepared are prepared anew, not looked up in the freed slots); both give
// the bits of a call before the release. (What the release frees is seen in
// ReleaseFreesAKeptWorkspace.)
TEST(Allocations, ReleasedThreadMemoryIsMadeAgain) {
  for (const bool own : {false, true}) {
    const OwnWorkspaces workspaces(own);
    for (const OpCase& op : op_cases()) {
      const std::string name = op.name + (own ? " (own workspace)" : "");
      const std::vector<float> before = output_of(op);
      posenc_release_thread_memory();
      for (const int call : {0, 1}) {
        std::vector<float> out(op.floats);
        {
          const Hook hook(Mode::kCount);
          ASSERT_EQ(op.call(two_threads(), out.data()), POSENC_OK) << name;
          if (call == 0) {
            EXPECT_GT(counts[int(Origin::kPosenc)], 0) << name;
          } else {
            EXPECT_EQ(counts[int(Origin::kPosenc)], 0) << name;
          }
        }
        EXPECT_TRUE(same_bits(out.data(), before)) << name << ", call " << call;
      }
    }
  }
}

// An attention's own workspace (16 threads' scratch), kept by the calling
// thread, is freed by the release: the bytes malloc holds in use (its
// arenas' and its mapped chunks') drop by at least the workspace's.
TEST(Allocations, ReleaseFreesAKeptWorkspace) {
  posenc_context* sixteen = nullptr;
  ASSERT_EQ(posenc_context_create(POSENC_ISA_AUTO, 16, &sixteen), POSENC_OK);
  posenc_attention_desc d;
  posenc_attention_desc_init(&d, 1, 1, 1024, 1024, 64);
  size_t bytes = 0;
  ASSERT_EQ(posenc_attention_workspace_size(sixteen, &d, &bytes), POSENC_OK);
  ASSERT_GT(bytes, size_t(1) << 20);
  const size_t tokens = size_t(1024 * 64);
  const std::vector<float> q = inputs(tokens, 5), k = inputs(tokens, 6), v = inputs(tokens, 7);
  std::vector<float> out(tokens);
  posenc_attention_tensors t{};
  t.q = q.data();
  t.k = k.data();
  t.v = v.data();
  t.out = out.data();
  ASSERT_EQ(posenc_attention(sixteen, &d, &t, nullptr, 0), POSENC_OK) << posenc_last_error();
  const auto in_use = [] {
    const struct mallinfo2 m = mallinfo2();
    return m.uordblks + m.hblkhd;
  };
  const size_t held = in_use();
  posenc_release_thread_memory();
  const size_t after = in_use();
  EXPECT_LE(after + bytes, held) << "of " << held << " bytes in use, " << after << " left; the "
                                 << bytes << "-byte workspace was not freed";
  posenc_context_destroy(sixteen);
}

// A primitive cache of one entry, fewer than an op's GEMM shapes: a warm
// call on 1 or 2 threads makes each of its shapes once (it holds what it
// made until it returns) and gives the bits of a call on the full cache.
// (The region's threads missed the shapes made before it, and their tasks
// ran again on the calling thread, making a primitive per GEMM: up to
// 12x slower.)
TEST(PrimitiveCache, OfOneEntryMakesEachShapeOnceACall) {
  posenc_context* one = nullptr;
  ASSERT_EQ(posenc_context_create(POSENC_ISA_AUTO, 1, &one), POSENC_OK);
  const int64_t capacity = posenc_primitive_cache_capacity();
  for (posenc_context* ctx : {one, two_threads()}) {
    for (const OpCase& op : op_cases()) {
      ASSERT_EQ(posenc_set_primitive_cache_capacity(1), POSENC_OK);
      ASSERT_EQ(posenc_set_primitive_cache_capacity(capacity), POSENC_OK);
      const int64_t before = posenc_primitive_cache_size();
      std::vector<float> expected(op.floats), out(op.floats);
      ASSERT_EQ(op.call(ctx, expected.data()), POSENC_OK) << op.name;
      // Its shapes, less one if the entry left over was one of them.
      const int64_t shapes = posenc_primitive_cache_size() - before;
      ASSERT_EQ(posenc_set_primitive_cache_capacity(1), POSENC_OK);
      ASSERT_EQ(op.call(ctx, out.data()), POSENC_OK) << op.name;  // its records go stale
      const int64_t evictions = matmul_cache_evictions();
      ASSERT_EQ(op.call(ctx, out.data()), POSENC_OK) << op.name;
      const int64_t made = matmul_cache_evictions() - evictions;  // each one made drops one
      // The workspace-size query in op.call (attention's, the bottleneck's)
      // is a call of its own: its plan makes the packing shapes again
      // (attention's sizes the keys' and the values' blocks by the first,
      // second and last key block's GEMMs: up to 5 shapes, the first two
      // blocks' keys being one; the bottleneck's plans both projections,
      // with and without a qkv bias).
      const bool bottleneck = op.name.rfind("bottleneck", 0) == 0;
      const int64_t query_shapes = bottleneck ? 4 : op.name.rfind("attention", 0) == 0 ? 5 : 0;
      EXPECT_LE(made, shapes + 1 + query_shapes)
          << op.name << " on " << posenc_context_num_threads(ctx) << " thread(s)";
      EXPECT_TRUE(same_bits(out.data(), expected)) << op.name;
    }
  }
  ASSERT_EQ(posenc_set_primitive_cache_capacity(capacity), POSENC_OK);
  posenc_context_destroy(one);
}

}  // namespace
}  // namespace posenc::test
