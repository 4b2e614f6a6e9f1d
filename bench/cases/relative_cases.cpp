// Position logits:
// - rel_to_abs against the seeds' pad / flatten / pad / reshape / slice
//   sequence in C++ on all threads (and, through of_memcpy, against a memcpy
//   of the output bytes);
// - 1D relative logits against the seeds' way: one GEMM to [T, 2T-1] with
//   posenc's oneDNN matmul, then that skew. of_bound sets it against
//   max(2*B*H*T*T*d FLOPs at the oneDNN GEMM rate, the output at memset
//   bandwidth); absolute_logits on the same shape is a oneDNN GEMM with the
//   same FLOPs and output, for comparison;
// - 2D relative logits, decomposed and full, against the same kind of bound.
#include <omp.h>

#include <memory>
#include <vector>

#include "bench_case.hpp"
#include "reference/relative.hpp"
#include "runtime/matmul.hpp"

namespace posenc::bench {
namespace {

constexpr double kF = sizeof(float);

// The seeds' skew of `matrices` [L, 2L-1] matrices, one matrix per task on
// all OpenMP threads (as torch runs its copies).
void pad_reshape_all(int64_t matrices, int64_t length, const float* in, float* out) {
  const int64_t workspace_floats = reference::pad_reshape_workspace(length);
#pragma omp parallel
  {
    std::vector<float> workspace(static_cast<size_t>(workspace_floats));
#pragma omp for schedule(static)
    for (int64_t m = 0; m < matrices; ++m) {
      reference::pad_reshape_rel_to_abs(length, in + m * length * (2 * length - 1),
                                        out + m * length * length, workspace.data());
    }
  }
}

// c[rows, columns] = a[rows, dim] x b[columns, dim]^T on the default threads.
void gemm_abt(int64_t rows, int64_t columns, int64_t dim, const float* a, const float* b,
              float* c) {
  MatmulShape s;
  s.m = rows;
  s.n = columns;
  s.k = dim;
  s.lda = s.ldb = dim;
  s.ldc = columns;
  s.transpose_b = true;
  matmul(s, a, b, c);
}

std::string shape_1d(int64_t batch, int64_t heads, int64_t length, int64_t dim) {
  return "B" + std::to_string(batch) + " H" + std::to_string(heads) + " T" +
         std::to_string(length) + " d" + std::to_string(dim);
}

BenchCase rel_to_abs_case(int64_t batch, int64_t heads, int64_t length) {
  struct Buffers {
    std::vector<float> in, out;
  };
  auto b = std::make_shared<Buffers>();
  const int64_t matrices = batch * heads;
  b->in.assign(size_t(matrices * length * (2 * length - 1)), 0.5f);
  b->out.assign(size_t(matrices * length * length), 0.0f);
  const double out_bytes = double(b->out.size()) * kF;
  return {"rel_to_abs",
          "B" + std::to_string(batch) + " H" + std::to_string(heads) + " L" +
              std::to_string(length),
          2 * out_bytes, out_bytes, 0,
          [=](posenc_context* ctx) {
            posenc_rel_to_abs(ctx, batch, heads, length, b->in.data(), b->out.data());
          },
          "pad/reshape",
          [=] { pad_reshape_all(matrices, length, b->in.data(), b->out.data()); }};
}

struct Buffers1d {
  std::vector<float> q, table, out, scores;
};

std::shared_ptr<Buffers1d> buffers_1d(int64_t rows, int64_t length, int64_t dim,
                                      int64_t table_rows, bool scores) {
  auto b = std::make_shared<Buffers1d>();
  b->q.assign(size_t(rows * dim), 0.5f);
  b->table.assign(size_t(table_rows * dim), 0.25f);
  b->out.assign(size_t(rows * length), 0.0f);
  if (scores) b->scores.assign(size_t(rows * (2 * length - 1)), 0.0f);
  return b;
}

// The 1D relative logits and, on the same shape, the absolute logits.
void add_1d_cases(CaseList& cases, int64_t batch, int64_t heads, int64_t length, int64_t dim) {
  const int64_t rows = batch * heads * length, distances = 2 * length - 1;
  const double flops = 2.0 * double(rows) * double(length) * double(dim);
  const double out_bytes = double(rows * length) * kF;
  auto b = buffers_1d(rows, length, dim, distances, true);
  cases.push_back({"relative_logits_1d", shape_1d(batch, heads, length, dim),
                   double(rows * dim + distances * dim) * kF + out_bytes, out_bytes, flops,
                   [=](posenc_context* ctx) {
                     posenc_relative_logits_1d(ctx, batch, heads, length, length, dim,
                                               b->q.data(), b->table.data(), 1, nullptr,
                                               b->out.data());
                   },
                   "seeds",
                   [=] {
                     gemm_abt(rows, distances, dim, b->q.data(), b->table.data(),
                              b->scores.data());
                     pad_reshape_all(batch * heads, length, b->scores.data(), b->out.data());
                   }});
  auto a = buffers_1d(rows, length, dim, length, false);
  cases.push_back({"absolute_logits", shape_1d(batch, heads, length, dim),
                   double(rows * dim + length * dim) * kF + out_bytes, out_bytes, flops,
                   [=](posenc_context* ctx) {
                     posenc_absolute_logits(ctx, batch, heads, length, length, dim,
                                            a->q.data(), a->table.data(), 1, a->out.data());
                   },
                   "", nullptr});
}

// 2D over a side x side map: decomposed, then full.
void add_2d_cases(CaseList& cases, int64_t batch, int64_t heads, int64_t side, int64_t dim) {
  struct Buffers {
    std::vector<float> q, table, rel_h, rel_w, out;
  };
  auto b = std::make_shared<Buffers>();
  const int64_t tokens = side * side, rows = batch * heads * tokens;
  b->q.assign(size_t(rows * dim), 0.5f);
  b->table.assign(size_t((2 * side - 1) * dim), 0.25f);
  b->rel_h.assign(size_t(rows * side), 0.0f);
  b->rel_w.assign(size_t(rows * side), 0.0f);
  b->out.assign(size_t(rows * tokens), 0.0f);
  // The exact products: X + Y dot products of length d per query.
  const double flops = 2.0 * double(rows) * double(2 * side) * double(dim);
  const double in_bytes = double(rows * dim + 2 * (2 * side - 1) * dim) * kF;
  const double split_bytes = double(2 * rows * side) * kF, full_bytes = double(rows * tokens) * kF;
  const std::string shape = "B" + std::to_string(batch) + " H" + std::to_string(heads) + " " +
                            std::to_string(side) + "x" + std::to_string(side) + " d" +
                            std::to_string(dim);
  cases.push_back({"relative_logits_2d_decomposed", shape, in_bytes + split_bytes, split_bytes,
                   flops,
                   [=](posenc_context* ctx) {
                     posenc_relative_logits_2d_decomposed(
                         ctx, batch, heads, side, side, dim, b->q.data(), b->table.data(),
                         b->table.data(), 1, b->rel_h.data(), b->rel_w.data());
                   },
                   "", nullptr});
  cases.push_back({"relative_logits_2d", shape, in_bytes + full_bytes, full_bytes, flops,
                   [=](posenc_context* ctx) {
                     posenc_relative_logits_2d(ctx, batch, heads, side, side, dim, b->q.data(),
                                               b->table.data(), b->table.data(), 1,
                                               b->out.data());
                   },
                   "", nullptr});
}

}  // namespace

CaseList relative_cases() {
  CaseList cases;
  cases.push_back(rel_to_abs_case(2, 8, 512));
  cases.push_back(rel_to_abs_case(1, 8, 2048));
  add_1d_cases(cases, 2, 8, 512, 64);
  add_1d_cases(cases, 1, 8, 2048, 64);
  add_2d_cases(cases, 8, 4, 14, 128);
  add_2d_cases(cases, 1, 4, 64, 64);
  return cases;
}

}  // namespace posenc::bench
