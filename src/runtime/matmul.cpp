#include "runtime/matmul.hpp"

#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "runtime/error.hpp"
#include "runtime/isa_cap.hpp"
#include "runtime/parallel.hpp"
#include "runtime/dtype.hpp"

namespace posenc {

bool MatmulShape::operator==(const MatmulShape& o) const {
  return batch == o.batch && m == o.m && n == o.n && k == o.k && lda == o.lda &&
         ldb == o.ldb && ldc == o.ldc && batch_stride_a == o.batch_stride_a &&
         batch_stride_b == o.batch_stride_b && batch_stride_c == o.batch_stride_c &&
         transpose_b == o.transpose_b && ab_type == o.ab_type && c_type == o.c_type &&
         alpha == o.alpha && accumulate == o.accumulate && b_packed == o.b_packed;
}

namespace {

struct ShapeHash {
  size_t operator()(const MatmulShape& s) const {
    size_t h = 0;
    auto mix = [&h](int64_t v) { h = h * 1000003u ^ std::hash<int64_t>()(v); };
    for (int64_t v : {s.batch, s.m, s.n, s.k, s.lda, s.ldb, s.ldc, s.batch_stride_a,
                      s.batch_stride_b, s.batch_stride_c, int64_t(s.transpose_b),
                      int64_t(s.ab_type), int64_t(s.c_type), int64_t(s.accumulate),
                      int64_t(s.b_packed)}) {
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
};

dnnl::engine& cpu_engine() {
  max_isa();  // applies POSENC_MAX_ISA to oneDNN before its first primitive
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
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

CachedMatmul create_matmul(const MatmulShape& s) {
  const auto [a, b, c] = operand_descs(s);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (s.alpha != 1.0f) attr.set_output_scales(0, {s.alpha});
  if (s.accumulate) {
    dnnl::post_ops ops;
    ops.append_sum(1.0f);
    attr.set_post_ops(ops);
  }
  const dnnl::memory::desc b_any(b.dims(), b.data_type(), dnnl::memory::format_tag::any);
  dnnl::matmul::desc desc(a, s.b_packed ? b_any : b, c);
  dnnl::matmul::primitive_desc pd(desc, attr, cpu_engine());
  CachedMatmul mm{a, pd.weights_desc(), c, dnnl::matmul(pd), pd.scratchpad_desc().get_size(),
                  pd.impl_info_str(), b, std::nullopt};
  if (s.b_packed && mm.b != b) {
    // Packing runs on the calling thread (pack_b's callers pack per thread);
    // oneDNN's reorder would otherwise fix its thread count here.
    const OpenMpThreads single(1);
    mm.pack = dnnl::reorder(dnnl::reorder::primitive_desc(cpu_engine(), b, cpu_engine(), mm.b));
  }
  return mm;
}

class MatmulCache {
 public:
  std::shared_ptr<const CachedMatmul> get(const MatmulShape& shape) {
    {
      std::shared_lock<std::shared_mutex> lock(mutex_);
      auto it = cache_.find(shape);
      if (it != cache_.end()) return it->second;
    }
    auto created = std::make_shared<const CachedMatmul>(create_matmul(shape));
    std::unique_lock<std::shared_mutex> lock(mutex_);
    return cache_.emplace(shape, std::move(created)).first->second;
  }

 private:
  std::shared_mutex mutex_;
  std::unordered_map<MatmulShape, std::shared_ptr<const CachedMatmul>, ShapeHash> cache_;
};

MatmulCache& matmul_cache() {
  static MatmulCache cache;
  return cache;
}

std::shared_ptr<const CachedMatmul> cached_matmul(const MatmulShape& shape) {
  try {
    return matmul_cache().get(shape);
  } catch (const dnnl::error& e) {
    throw Error(POSENC_ERROR_UNSUPPORTED, std::string("oneDNN matmul: ") + e.what());
  }
}

dnnl::stream& thread_stream() {
  thread_local dnnl::stream stream(cpu_engine());
  return stream;
}

}  // namespace

namespace {

void run_matmul(const MatmulShape& shape, const void* a, const void* b, void* c);

// Runs a bf16 GEMM whose dense output width oneDNN gets wrong with its output
// rows padded to 64 columns in a per-thread buffer, then copies them out.
void run_with_padded_output(const MatmulShape& shape, const void* a, const void* b, void* c) {
  const size_t element = dtype_bytes(shape.c_type);
  MatmulShape padded = shape;
  padded.ldc = 64;
  padded.batch_stride_c = shape.m * padded.ldc;
  thread_local std::vector<uint8_t> buffer;
  buffer.resize(size_t(shape.batch * padded.batch_stride_c) * element);
  const size_t row_bytes = size_t(shape.n) * element;
  auto rows = [&](auto&& copy_row) {
    for (int64_t bi = 0; bi < shape.batch; ++bi) {
      for (int64_t i = 0; i < shape.m; ++i) {
        copy_row(buffer.data() + size_t(bi * padded.batch_stride_c + i * padded.ldc) * element,
                 static_cast<uint8_t*>(c) +
                     size_t(bi * shape.batch_stride_c + i * shape.ldc) * element);
      }
    }
  };
  if (shape.accumulate) rows([&](uint8_t* tmp, uint8_t* out) { std::memcpy(tmp, out, row_bytes); });
  run_matmul(padded, a, b, buffer.data());
  rows([&](uint8_t* tmp, uint8_t* out) { std::memcpy(out, tmp, row_bytes); });
}

}  // namespace

void matmul(const MatmulShape& shape, const void* a, const void* b, void* c) {
  if (shape.ab_type == POSENC_BF16 && shape.ldc == shape.n &&
      onednn_bf16_dense_width_is_broken(shape.n)) {
    run_with_padded_output(shape, a, b, c);
  } else {
    run_matmul(shape, a, b, c);
  }
}

namespace {

using BoundArgs = std::unordered_map<int, dnnl::memory>;
using BoundArgsByGemm = std::unordered_map<const CachedMatmul*, BoundArgs>;

// The memory objects of `mm` in `bound` (one map per thread and caller, as
// callers bind different arguments), made by make() on first use. Callers
// only rebind their pointers: no allocation per call on the hot path (cached
// GEMMs live as long as the process, so their addresses are stable keys).
template <class Make>
BoundArgs& bound_args(BoundArgsByGemm& bound, const CachedMatmul* mm, const Make& make) {
  auto found = bound.find(mm);
  if (found == bound.end()) found = bound.emplace(mm, make()).first;
  return found->second;
}

void run_matmul(const MatmulShape& shape, const void* a, const void* b, void* c) {
  const std::shared_ptr<const CachedMatmul> mm = cached_matmul(shape);
  dnnl::engine& engine = cpu_engine();
  dnnl::stream& stream = thread_stream();
  thread_local std::vector<uint8_t> scratchpad;
  if (scratchpad.size() < mm->scratchpad_bytes) scratchpad.resize(mm->scratchpad_bytes);
  thread_local BoundArgsByGemm bound;
  BoundArgs& args = bound_args(bound, mm.get(), [&] {
    const dnnl::memory::desc scratch_desc({int64_t(mm->scratchpad_bytes)}, dt::u8,
                                          dnnl::memory::format_tag::a);
    return BoundArgs{{DNNL_ARG_SRC, dnnl::memory(mm->a, engine, nullptr)},
                     {DNNL_ARG_WEIGHTS, dnnl::memory(mm->b, engine, nullptr)},
                     {DNNL_ARG_DST, dnnl::memory(mm->c, engine, nullptr)},
                     {DNNL_ARG_SCRATCHPAD, dnnl::memory(scratch_desc, engine, nullptr)}};
  });
  args[DNNL_ARG_SRC].set_data_handle(const_cast<void*>(a));
  args[DNNL_ARG_WEIGHTS].set_data_handle(const_cast<void*>(b));
  args[DNNL_ARG_DST].set_data_handle(c);
  args[DNNL_ARG_SCRATCHPAD].set_data_handle(scratchpad.data());
  mm->primitive.execute(stream, args);
  stream.wait();
}

}  // namespace

size_t packed_b_bytes(const MatmulShape& shape) {
  const std::shared_ptr<const CachedMatmul> mm = cached_matmul(shape);
  return mm->pack ? mm->b.get_size() : 0;
}

void pack_b(const MatmulShape& shape, const void* b, void* packed) {
  const std::shared_ptr<const CachedMatmul> mm = cached_matmul(shape);
  if (!mm->pack) throw Error(POSENC_ERROR_INTERNAL, "pack_b: this GEMM reads B as stored");
  dnnl::engine& engine = cpu_engine();
  thread_local BoundArgsByGemm bound;
  BoundArgs& args = bound_args(bound, mm.get(), [&] {
    return BoundArgs{{DNNL_ARG_FROM, dnnl::memory(mm->b_stored, engine, nullptr)},
                     {DNNL_ARG_TO, dnnl::memory(mm->b, engine, nullptr)}};
  });
  args[DNNL_ARG_FROM].set_data_handle(const_cast<void*>(b));
  args[DNNL_ARG_TO].set_data_handle(packed);
  dnnl::stream& stream = thread_stream();
  mm->pack->execute(stream, args);
  stream.wait();
}

bool packed_b_serves(const MatmulShape& shape, const MatmulShape& packed_for) {
  return shape == packed_for || cached_matmul(shape)->b == cached_matmul(packed_for)->b;
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

const char* onednn_matmul_impl(posenc_dtype type) {
  MatmulShape s;
  s.m = s.n = s.k = s.lda = s.ldb = s.ldc = 256;
  s.ab_type = type;
  try {
    return matmul_cache().get(s)->impl.c_str();  // cached entries live until exit
  } catch (const dnnl::error&) {
    return "unsupported";
  }
}

}  // namespace posenc
