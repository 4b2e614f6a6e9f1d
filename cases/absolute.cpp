// Absolute encodings. Tables and the on-the-fly add are set against the
// naive fp32 way of the PyTorch tutorial (a table of std::sin / std::cos,
// then an add); and a ViT's learned table resized to another grid.
#include <cmath>
#include <memory>
#include <string>

#include "cases/case.hpp"
#include "reference/absolute.hpp"
#include "cases/values.hpp"

namespace posenc::cases {
namespace {

constexpr double kF = sizeof(float);
constexpr double kBase = 10000.0;
constexpr posenc_sincos_layout kInterleaved = POSENC_SINCOS_INTERLEAVED;
constexpr posenc_sincos_layout kSplit = POSENC_SINCOS_SPLIT;

struct Spec {
  int64_t batch, tokens, dim;
  int64_t offset;  // position of the first token
  posenc_sincos_layout layout;
  int64_t extra;  // add_learned: the table's rows; concat: the sinusoid's columns;
                  // the 2D table: the map's width (tokens = height * width)
};

std::string layout_suffix(const Spec& s) { return s.layout == kSplit ? " split" : ""; }
std::string offset_suffix(const Spec& s) {
  return s.offset != 0 ? " @" + std::to_string(s.offset) : "";
}
std::string btd(const Spec& s) {
  return "B" + std::to_string(s.batch) + " T" + std::to_string(s.tokens) + " D" +
         std::to_string(s.dim);
}

// Positions [offset, offset + length) the tutorial's way: angles in fp32,
// interleaved columns (an odd dim's last column is its sine).
void naive_sinusoid_table(float* table, int64_t offset, int64_t length, int64_t dim) {
  for (int64_t k = 0; k < length; ++k) {
    for (int64_t i = 0; i < dim; i += 2) {
      const float div = std::exp(float(i) * -(std::log(10000.0f) / float(dim)));
      const float angle = float(offset + k) * div;
      table[k * dim + i] = std::sin(angle);
      if (i + 1 < dim) table[k * dim + i + 1] = std::cos(angle);
    }
  }
}

// The naive way's error beyond fp32 rounding: its fp32 angles are off by up
// to a few ulps of the largest angle, the last position.
double naive_angle_error(const Spec& s) { return 4.8e-7 * double(s.offset + s.tokens); }

// The inputs x and add_learned's table, the output, and the naive way's table.
struct Buffers {
  Shared<float> x, table;
  std::vector<float> out, naive_table;
};

std::shared_ptr<Buffers> buffers(size_t x_elems, size_t table_elems, size_t out_elems) {
  auto b = std::make_shared<Buffers>();
  b->x = shared_floats(x_elems, 1);
  b->table = shared_floats(table_elems, 2);
  b->out.assign(out_elems, 0.0f);
  return b;
}

Problem with_output(const std::shared_ptr<Buffers>& b) {
  Problem p;
  p.output = [b] { return b->out; };
  p.bytes = double(b->out.size()) * kF;
  p.write_bytes = p.bytes;
  return p;
}

// --- sinusoid_table: P[length, dim] from position `offset`.
std::string describe_table(const Spec& s) {
  return "L" + std::to_string(s.tokens) + " D" + std::to_string(s.dim) + offset_suffix(s) +
         layout_suffix(s);
}
Problem table_problem(const Spec& s) {
  auto b = buffers(0, 0, size_t(s.tokens * s.dim));
  Problem p = with_output(b);
  p.run = [b, s](posenc_context* ctx) {
    return posenc_sinusoid_table(ctx, s.tokens, s.dim, s.offset, kBase, s.layout, POSENC_F32,
                                 b->out.data());
  };
  p.reference = [s] {
    return reference::sinusoid_table(s.tokens, s.dim, s.offset, kBase, s.layout);
  };
  if (s.layout == kInterleaved) {  // the tutorial's layout only
    p.baseline = [b, s] { naive_sinusoid_table(b->out.data(), s.offset, s.tokens, s.dim); };
    p.baseline_error = naive_angle_error(s);
  }
  return p;
}
const Op<Spec> kTable{"absolute", "sinusoid_table", 2e-6, "naive", describe_table, table_problem};
Spec table(int64_t length, int64_t dim, int64_t start, posenc_sincos_layout layout) {
  return {1, length, dim, start, layout, 0};
}

// --- sinusoid_table_2d: [height * width, dim].
std::string describe_table_2d(const Spec& s) {
  return std::to_string(s.tokens / s.extra) + "x" + std::to_string(s.extra) + " D" +
         std::to_string(s.dim) + layout_suffix(s);
}
Problem table_2d_problem(const Spec& s) {
  auto b = buffers(0, 0, size_t(s.tokens * s.dim));
  Problem p = with_output(b);
  const int64_t height = s.tokens / s.extra, width = s.extra;
  p.run = [b, s, height, width](posenc_context* ctx) {
    return posenc_sinusoid_table_2d(ctx, height, width, s.dim, kBase, s.layout, POSENC_F32,
                                    b->out.data());
  };
  p.reference = [s, height, width] {
    return reference::sinusoid_table_2d(height, width, s.dim, kBase, s.layout);
  };
  return p;
}
const Op<Spec> kTable2d{"absolute", "sinusoid_table_2d", 2e-6, "", describe_table_2d,
                        table_2d_problem};
Spec table_2d(int64_t height, int64_t width, int64_t dim, posenc_sincos_layout layout) {
  return {1, height * width, dim, 0, layout, width};
}

// --- add_sinusoid: x + P[offset : offset + tokens], no table built.
std::string describe_add(const Spec& s) { return btd(s) + offset_suffix(s) + layout_suffix(s); }
Problem add_problem(const Spec& s) {
  const size_t elems = size_t(s.batch * s.tokens * s.dim);
  auto b = buffers(elems, 0, elems);
  Problem p = with_output(b);
  p.bytes = 2.0 * double(elems) * kF;
  p.run = [b, s](posenc_context* ctx) {
    return posenc_add_sinusoid(ctx, s.batch, s.tokens, s.dim, s.offset, kBase, s.layout,
                               b->x->data(), b->out.data());
  };
  p.reference = [b, s] {
    return reference::add_sinusoid(s.batch, s.tokens, s.dim, s.offset, kBase, s.layout,
                                   b->x->data());
  };
  if (s.layout == kInterleaved) {  // the tutorial's layout only
    p.baseline = [b, s] {
      std::vector<float>& table = b->naive_table;
      table.resize(size_t(s.tokens * s.dim));
      naive_sinusoid_table(table.data(), s.offset, s.tokens, s.dim);
      const std::vector<float>& x = *b->x;
      for (size_t j = 0; j < x.size(); ++j) b->out[j] = x[j] + table[j % table.size()];
    };
    p.baseline_error = naive_angle_error(s);
  }
  return p;
}
const Op<Spec> kAdd{"absolute", "add_sinusoid", 4e-6, "naive", describe_add, add_problem};
Spec add(int64_t batch, int64_t tokens, int64_t dim, int64_t offset,
         posenc_sincos_layout layout = kInterleaved) {
  return {batch, tokens, dim, offset, layout, 0};
}

// --- add_learned: x + W[offset : offset + tokens] of W [rows, dim].
std::string describe_learned(const Spec& s) { return btd(s) + offset_suffix(s); }
Problem learned_problem(const Spec& s) {
  const size_t elems = size_t(s.batch * s.tokens * s.dim);
  auto b = buffers(elems, size_t(s.extra * s.dim), elems);
  Problem p = with_output(b);
  p.bytes = (2.0 * double(elems) + double(s.tokens * s.dim)) * kF;
  p.run = [b, s](posenc_context* ctx) {
    return posenc_add_learned(ctx, s.batch, s.tokens, s.dim, s.offset, b->table->data(),
                              s.extra, b->x->data(), b->out.data());
  };
  p.reference = [b, s] {
    return reference::add_learned(s.batch, s.tokens, s.dim, s.offset, b->table->data(),
                                  b->x->data());
  };
  return p;
}
const Op<Spec> kLearned{"absolute", "add_learned", 0.0, "", describe_learned, learned_problem};
Spec learned(int64_t batch, int64_t tokens, int64_t dim, int64_t offset, int64_t rows) {
  return {batch, tokens, dim, offset, kInterleaved, rows};
}

// --- concat_sinusoid: [x, P] along the last dimension.
std::string describe_concat(const Spec& s) {
  return btd(s) + "+" + std::to_string(s.extra) + offset_suffix(s);
}
Problem concat_problem(const Spec& s) {
  const size_t x_elems = size_t(s.batch * s.tokens * s.dim);
  auto b = buffers(x_elems, 0, size_t(s.batch * s.tokens * (s.dim + s.extra)));
  Problem p = with_output(b);
  p.bytes += double(x_elems) * kF;
  p.run = [b, s](posenc_context* ctx) {
    return posenc_concat_sinusoid(ctx, s.batch, s.tokens, s.dim, s.extra, s.offset, kBase,
                                  s.layout, b->x->data(), b->out.data());
  };
  p.reference = [b, s] {
    return reference::concat_sinusoid(s.batch, s.tokens, s.dim, s.extra, s.offset, kBase,
                                      s.layout, b->x->data());
  };
  return p;
}
const Op<Spec> kConcat{"absolute", "concat_sinusoid", 2e-6, "", describe_concat, concat_problem};
Spec concat(int64_t batch, int64_t tokens, int64_t x_dim, int64_t pos_dim, int64_t offset) {
  return {batch, tokens, x_dim, offset, kInterleaved, pos_dim};
}

// --- resize_absolute_table_2d: a ViT's learned table of one square grid to
// another (timm's resample_abs_pos_embed; without antialias,
// transformers' interpolate_pos_encoding).
struct ResizeSpec {
  int64_t dim, from, to;  // the grids' sides
  int64_t prefix;         // class and register tokens
  posenc_interpolation interpolation;
  int antialias;
};
std::string describe_resize(const ResizeSpec& s) {
  const auto grid = [](int64_t side) { return std::to_string(side) + "x" + std::to_string(side); };
  return grid(s.from) + " to " + grid(s.to) + " D" + std::to_string(s.dim) +
         (s.prefix != 0 ? " +" + std::to_string(s.prefix) : "") +
         (s.interpolation == POSENC_INTERPOLATION_BILINEAR ? " bilinear" : " bicubic") +
         (s.antialias != 0 ? " antialias" : "");
}
Problem resize_problem(const ResizeSpec& s) {
  posenc_absolute_resize_desc d;
  posenc_absolute_resize_desc_init(&d, s.dim, s.from, s.from, s.to, s.to);
  d.prefix_tokens = s.prefix;
  d.interpolation = s.interpolation;
  d.antialias = s.antialias;
  auto b = buffers(0, size_t((s.prefix + s.from * s.from) * s.dim),
                   size_t((s.prefix + s.to * s.to) * s.dim));
  Problem p = with_output(b);
  p.bytes += double(b->table->size()) * kF;
  p.run = [b, d](posenc_context* ctx) {
    return posenc_resize_absolute_table_2d(ctx, &d, b->table->data(), b->out.data());
  };
  p.reference = [b, d] { return reference::resize_absolute_table_2d(d, b->table->data()); };
  return p;
}
const Op<ResizeSpec> kResize{"absolute", "resize_absolute_table_2d", 1e-6, "", describe_resize,
                             resize_problem};

}  // namespace

std::vector<Case> absolute_cases() {
  return {
      kTable({"check"}, table(257, 65, 99990, kInterleaved)),
      kTable({}, table(300, 130, 17, kSplit)),
      kTable({"bench"}, table(4096, 512, 0, kInterleaved), table(67, 130, 0, kInterleaved)),
      kTable2d({"check"}, table_2d(7, 5, 64, kSplit)),
      kTable2d({}, table_2d(14, 9, 64, kInterleaved)),
      kAdd({"check"}, add(3, 17, 129, 5)),
      kAdd({}, add(4, 96, 130, 5)),
      kAdd({"bench"}, add(8, 1024, 512, 0), add(2, 37, 130, 0)),
      kAdd({"demo"}, add(8, 2048, 512, 0), add(2, 45, 66, 0)),
      kLearned({"check"}, learned(2, 13, 100, 3, 16)),
      kLearned({}, learned(4, 96, 130, 100, 200)),
      kLearned({"bench"}, learned(8, 1024, 512, 0, 1024), learned(2, 37, 130, 0, 37)),
      kConcat({"check"}, concat(2, 7, 5, 33, 0)),
      kConcat({}, concat(4, 96, 130, 30, 0)),
      kConcat({"bench"}, concat(8, 1024, 512, 128, 0), concat(2, 37, 130, 31, 0)),
      kResize({"check"}, {17, 7, 12, 1, POSENC_INTERPOLATION_BICUBIC, 1}),
      kResize({"check"}, {5, 13, 6, 4, POSENC_INTERPOLATION_BILINEAR, 1}),
      kResize({}, {9, 5, 11, 0, POSENC_INTERPOLATION_BICUBIC, 0}),
      // ViT-B/16 from 224 to 512 pixels (timm's defaults); DINOv2-L/14 from
      // 518 to 1036 pixels (transformers' way).
      kResize({"bench"}, {768, 14, 32, 1, POSENC_INTERPOLATION_BICUBIC, 1},
              {31, 5, 9, 1, POSENC_INTERPOLATION_BICUBIC, 1}),
      kResize({"bench"}, {1024, 37, 74, 1, POSENC_INTERPOLATION_BICUBIC, 0},
              {33, 9, 17, 1, POSENC_INTERPOLATION_BICUBIC, 0}),
  };
}

}  // namespace posenc::cases
