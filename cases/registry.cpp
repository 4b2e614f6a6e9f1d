#include <algorithm>

#include "cases/case.hpp"

namespace posenc::cases {

bool Case::has_tag(const std::string& tag) const {
  return std::find(tags.begin(), tags.end(), tag) != tags.end();
}

const std::vector<Family>& families() {
  static const std::vector<Family> all{
      {"absolute", "absolute encodings: sinusoid P[k,2i]=sin(k w_i), P[k,2i+1]=cos(k w_i)",
       absolute_cases},
      {"relative", "relative position logits: a[i,j] = q_i . R[j - i + T - 1], and 2D",
       relative_cases},
      {"attention", "attention: softmax(scale q k^T + relative bias) v, blocks in cache",
       attention_cases},
      {"bias", "position biases without q: Swin/BEiT tables, 1D tables, T5 buckets, ALiBi",
       bias_cases},
      {"rope", "rotary embeddings: pairs rotated by position * theta^(-2j/d)", rope_cases},
  };
  return all;
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (const Family& family : families()) {
    for (Case& c : family.cases()) cases.push_back(std::move(c));
  }
  return cases;
}

std::vector<std::string> filter_parts(const std::string& filter) {
  std::vector<std::string> parts(1);
  int depth = 0;  // of the brackets open
  for (char ch : filter) {
    if (ch == ',' && depth == 0) {
      parts.emplace_back();
      continue;
    }
    if (ch == '[') ++depth;
    if (ch == ']' && depth > 0) --depth;
    parts.back() += ch;
  }
  return parts;
}

namespace {

// Whether `text` contains one of filter's parts (an empty filter matches everything).
bool matches(const std::string& text, const std::string& filter) {
  for (const std::string& part : filter_parts(filter)) {
    if (text.find(part) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

std::vector<Case> select(const std::vector<Case>& cases, const std::string& tag,
                         const std::string& filter) {
  std::vector<Case> selected;
  for (const Case& c : cases) {
    if ((tag.empty() || c.has_tag(tag)) && matches(c.op + " " + c.shape, filter)) {
      selected.push_back(c);
    }
  }
  return selected;
}

}  // namespace posenc::cases
