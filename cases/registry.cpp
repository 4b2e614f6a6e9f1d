#include <algorithm>

#include "cases/case.hpp"

namespace posenc::cases {

bool Case::has_tag(const std::string& tag) const {
  return std::find(tags.begin(), tags.end(), tag) != tags.end();
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (auto family : {absolute_cases, relative_cases, attention_cases, rope_cases}) {
    for (Case& c : family()) cases.push_back(std::move(c));
  }
  return cases;
}

std::vector<Case> select(const std::vector<Case>& cases, const std::string& tag,
                         const std::string& filter) {
  std::vector<Case> selected;
  for (const Case& c : cases) {
    if ((tag.empty() || c.has_tag(tag)) &&
        (c.op + " " + c.shape).find(filter) != std::string::npos) {
      selected.push_back(c);
    }
  }
  return selected;
}

}  // namespace posenc::cases
