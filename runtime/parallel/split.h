// How a batch is split over devices: evenly, or in proportion to weights (each device's measured
// throughput, or the application's own).
#pragma once
#include <cstdint>
#include <vector>

namespace braid::parallel {

// count parts of total rows: weights NULL gives numpy.array_split's sizes; otherwise proportional
// to the weights, rounded by largest remainder (ties to the lower index) so they add up to total.
std::vector<int64_t> split_sizes(int64_t total, int32_t count, const double* weights);

}  // namespace braid::parallel
