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

namespace {

// Whether `text` contains one of filter's comma-separated parts (an empty
// filter matches everything).
bool matches(const std::string& text, const std::string& filter) {
  size_t begin = 0;
  while (true) {
    const size_t end = std::min(filter.find(',', begin), filter.size());
    if (text.find(filter.substr(begin, end - begin)) != std::string::npos) return true;
    if (end == filter.size()) return false;
    begin = end + 1;
  }
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
