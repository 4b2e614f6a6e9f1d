// A case: one op on one problem, described once and used by every program
// that runs ops (after oneDNN's benchdnn): the GoogleTest suite runs every
// case on every ISA path and thread count against its reference, and
// `posenc check`, `posenc demo`, `posenc bench` and posenc_bench pick cases
// by tag. Adding a case to an op is one entry in its family's file.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "posenc/posenc.h"

namespace posenc::cases {

// Benchmark sizes (T=4096 attention, 2048-token logits) are far too large
// for the reference loops in double on every ISA path and thread count, so
// each case also has a test size: the same options on a small shape with
// tails. Small cases (the checks) use one size for both.
enum class Size { full, test };

// A case's problem at one size: inputs made from fixed random seeds, the
// output, what one call moves and computes, and how to run it each way. Made
// when needed (a benchmark size can take a GB); one thread at a time runs it,
// its read-only inputs are shared with the case's other live problems
// (values.hpp). reference() is the output of the first run.
struct Problem {
  double bytes = 0;        // bytes read plus written by one call
  double write_bytes = 0;  // bytes written by one call (the memset bound)
  double flops = 0;        // floating-point operations of one call (0: memory-bound)
  // The type of the op's GEMMs: its GFLOP/s read against oneDNN's rate in it.
  posenc_dtype gemm_type = POSENC_F32;
  // The op through the C ABI, into the problem's output.
  std::function<posenc_status(posenc_context*)> run;
  // The output of the last run (bf16 widened, several outputs one after another).
  std::function<std::vector<float>()> output;
  // The same output from the naive loops in double (src/reference).
  std::function<std::vector<double>()> reference;
  // Given the reference, what each output's error is measured in (bf16
  // attention: m + |want|, values.hpp's kBf16AttentionTolerance says why);
  // empty: 1, the case's tolerance absolute.
  std::function<std::vector<double>(const std::vector<double>&)> error_units;
  // The same result the baseline way (the case's baseline_name); empty if none.
  std::function<void()> baseline;
  // How far the baseline's own way may stray beyond the case's tolerance (the
  // naive sinusoid's fp32 angles); the tests hold the baseline to it.
  double baseline_error = 0;
};

struct Case {
  std::string family;  // "absolute", "relative", "attention", "bias", "rope"
  std::string op;      // e.g. "attention_2d_f32"
  std::string shape;   // at the full size, e.g. "2D B8 H4 14x14 d128"
  std::string test_shape;
  // "check": `posenc check` and the demo's checks; "demo": timed by `posenc
  // demo`; "bench": timed by `posenc bench` and posenc_bench. Every case,
  // tagged or not, is run by the tests.
  std::vector<std::string> tags;
  // Largest |output - reference| accepted (in the problem's error_units
  // where it has them); 0: bit for bit. Masked (-inf) and NaN outputs must
  // match exactly.
  double tolerance = 0;
  // The way a problem's `baseline` computes the result ("naive",
  // "pad/reshape", "unfused", ...); a problem whose options that way does
  // not cover (a mask, a layout) has no baseline.
  std::string baseline_name;
  std::function<Problem(Size)> make;

  bool has_tag(const std::string& tag) const;
  const std::string& shape_at(Size size) const { return size == Size::full ? shape : test_shape; }
};

// An op of a family as the cases see it: how a spec (its shape and options)
// is named, and how its problem is made. op(tags, full, test) is one case.
template <class Spec>
struct Op {
  const char* family;
  const char* name;
  double tolerance;           // as Case::tolerance
  const char* baseline_name;  // as Case::baseline_name
  std::string (*describe)(const Spec&);
  Problem (*problem)(const Spec&);

  Case operator()(std::vector<std::string> tags, const Spec& full, const Spec& test) const {
    Case c;
    c.family = family;
    c.op = name;
    c.shape = describe(full);
    c.test_shape = describe(test);
    c.tags = std::move(tags);
    c.tolerance = tolerance;
    c.baseline_name = baseline_name;
    c.make = [full, test, make = problem](Size size) {
      return make(size == Size::full ? full : test);
    };
    return c;
  }
  // A case small enough to be checked at its full size.
  Case operator()(std::vector<std::string> tags, const Spec& spec) const {
    return (*this)(std::move(tags), spec, spec);
  }
};

std::vector<Case> absolute_cases();
std::vector<Case> attention_cases();
std::vector<Case> bias_cases();
std::vector<Case> relative_cases();
std::vector<Case> rope_cases();

// An op family: its name (Case::family), what it computes in one line (the
// demo's heading) and its cases. Adding a family is a line in registry.cpp.
struct Family {
  const char* name;
  const char* title;
  std::vector<Case> (*cases)();
};
const std::vector<Family>& families();

// Every family's cases.
std::vector<Case> all_cases();

// filter's comma-separated parts, without the spaces around them: a comma
// inside [...] separates none, as shapes hold some (an attention mask's
// "mask[2,1,T,T]").
std::vector<std::string> filter_parts(const std::string& filter);

// The cases with `tag` (every case if empty) whose "op shape" contains one of
// filter's parts.
std::vector<Case> select(const std::vector<Case>& cases, const std::string& tag,
                         const std::string& filter);

// filter's parts that no case with `tag` contains (each part of a filter
// given by hand is meant to select something).
std::vector<std::string> unmatched_parts(const std::vector<Case>& cases, const std::string& tag,
                                         const std::string& filter);

}  // namespace posenc::cases
