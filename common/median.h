#ifndef SMBFLEET_COMMON_MEDIAN_H_
#define SMBFLEET_COMMON_MEDIAN_H_

#include <algorithm>
#include <optional>
#include <vector>

namespace smbfleet {

// The median of `values` (the mean of the two middle ones for an even count); none when empty.
template <typename T>
std::optional<T> Median(std::vector<T> values) {
  if (values.empty()) return std::nullopt;
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + mid, values.end());
  const T upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  const T lower = *std::max_element(values.begin(), values.begin() + mid);
  return lower + (upper - lower) / 2;
}

}  // namespace smbfleet

#endif  // SMBFLEET_COMMON_MEDIAN_H_
