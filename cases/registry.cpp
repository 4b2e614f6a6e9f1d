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
  for (std::string& part : parts) {
    part.erase(0, part.find_first_not_of(' '));
    part.erase(part.find_last_not_of(' ') + 1);
  }
  return parts;
}

namespace {

bool selectable(const Case& c, const std::string& tag, const std::string& part) {
  return (tag.empty() || c.has_tag(tag)) && (c.op + " " + c.shape).find(part) != std::string::npos;
}

}  // namespace

std::vector<Case> select(const std::vector<Case>& cases, const std::string& tag,
                         const std::string& filter) {
  const std::vector<std::string> parts = filter_parts(filter);
  std::vector<Case> selected;
  for (const Case& c : cases) {
    if (std::any_of(parts.begin(), parts.end(),
                    [&](const std::string& part) { return selectable(c, tag, part); })) {
      selected.push_back(c);
    }
  }
  return selected;
}

std::vector<std::string> unmatched_parts(const std::vector<Case>& cases, const std::string& tag,
                                         const std::string& filter) {
  std::vector<std::string> unmatched;
  for (const std::string& part : filter_parts(filter)) {
    if (std::none_of(cases.begin(), cases.end(),
                     [&](const Case& c) { return selectable(c, tag, part); })) {
      unmatched.push_back(part);
    }
  }
  return unmatched;
}

}  // namespace posenc::cases
