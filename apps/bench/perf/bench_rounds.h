// Rounds of a perf benchmark: the sweep runs several times and each row keeps its fastest pass
// (machines are noisy; the least disturbed pass is the best estimate of what the code can do).
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace kvengine {

// Row `at` (in sweep order) of round `round` measured `row`: round 0 appends it; later rounds
// replace the kept row where `row` took less time (seconds_of(row) smaller).
template <class Row, class SecondsOf>
void KeepFastestRound(std::vector<Row>& rows, size_t at, int round, const Row& row,
                      const SecondsOf& seconds_of) {
  if (round == 0) {
    rows.push_back(row);
  } else if (seconds_of(row) < seconds_of(rows[at])) {
    rows[at] = row;
  }
}

// The median of `v` (the mean of the middle two when even); 0 when empty.
inline double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0 : n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace kvengine
