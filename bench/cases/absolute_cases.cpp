// Absolute encodings, against the naive fp32 way of the PyTorch tutorial
// (a table of std::sin / std::cos, then an add).
#include <cmath>
#include <memory>
#include <vector>

#include "bench_case.hpp"

namespace posenc::bench {
namespace {

constexpr int64_t kBatch = 8, kTokens = 1024, kDim = 512, kPosDim = 128;
constexpr double kF = sizeof(float);

void naive_sinusoid_table(float* table, int64_t length, int64_t dim) {
  for (int64_t k = 0; k < length; ++k) {
    for (int64_t i = 0; i + 1 < dim; i += 2) {
      const float div = std::exp(float(i) * -(std::log(10000.0f) / float(dim)));
      table[k * dim + i] = std::sin(float(k) * div);
      table[k * dim + i + 1] = std::cos(float(k) * div);
    }
  }
}

struct Buffers {
  std::vector<float> x, table, out;
};

std::shared_ptr<Buffers> make_buffers(size_t out_elems) {
  auto b = std::make_shared<Buffers>();
  b->x.assign(size_t(kBatch * kTokens * kDim), 0.5f);
  b->table.assign(size_t(kTokens * kDim), 0.25f);
  b->out.assign(out_elems, 0.0f);
  return b;
}

}  // namespace

CaseList absolute_cases() {
  const double elems = double(kBatch * kTokens * kDim);
  CaseList cases;
  {
    const int64_t length = 4096, dim = 512;
    auto b = make_buffers(size_t(length * dim));
    cases.push_back({"sinusoid_table", "L4096 D512", length * dim * kF, length * dim * kF, 0,
                     [b](posenc_context* ctx) {
                       posenc_sinusoid_table(ctx, 4096, 512, 0, 10000.0,
                                             POSENC_SINCOS_INTERLEAVED, POSENC_F32,
                                             b->out.data());
                     },
                     "naive", [b] { naive_sinusoid_table(b->out.data(), 4096, 512); }});
  }
  {
    auto b = make_buffers(size_t(elems));
    cases.push_back({"add_sinusoid", "B8 T1024 D512", 2 * elems * kF, elems * kF, 0,
                     [b](posenc_context* ctx) {
                       posenc_add_sinusoid(ctx, kBatch, kTokens, kDim, 0, 10000.0,
                                           POSENC_SINCOS_INTERLEAVED, b->x.data(),
                                           b->out.data());
                     },
                     "naive",
                     [b] {
                       naive_sinusoid_table(b->table.data(), kTokens, kDim);
                       for (size_t j = 0; j < b->x.size(); ++j) {
                         b->out[j] = b->x[j] + b->table[j % b->table.size()];
                       }
                     }});
  }
  {
    auto b = make_buffers(size_t(elems));
    cases.push_back({"add_learned", "B8 T1024 D512", (2 * elems + kTokens * kDim) * kF,
                     elems * kF, 0,
                     [b](posenc_context* ctx) {
                       posenc_add_learned(ctx, kBatch, kTokens, kDim, 0, b->table.data(),
                                          kTokens, b->x.data(), b->out.data());
                     },
                     "", nullptr});
  }
  {
    const double out_elems = double(kBatch * kTokens * (kDim + kPosDim));
    auto b = make_buffers(size_t(out_elems));
    cases.push_back({"concat_sinusoid", "B8 T1024 D512+128", (elems + out_elems) * kF,
                     out_elems * kF, 0,
                     [b](posenc_context* ctx) {
                       posenc_concat_sinusoid(ctx, kBatch, kTokens, kDim, kPosDim, 0, 10000.0,
                                              POSENC_SINCOS_INTERLEAVED, b->x.data(),
                                              b->out.data());
                     },
                     "", nullptr});
  }
  return cases;
}

}  // namespace posenc::bench
