#include "server/scheduler/row_choice.h"

#include <algorithm>
#include <cmath>
#include <thread>
#include <vector>

namespace vkllm::sched {

TokenLogprob logprobs_of(std::span<const float> row, int32_t token, int top) {
  const float max = *std::max_element(row.begin(), row.end());
  double sum = 0;
  for (float x : row) sum += std::exp(double(x) - max);
  const float log_z = max + static_cast<float>(std::log(sum));
  TokenLogprob lp{token, row[token] - log_z, {}};
  if (top > 0) {
    std::vector<int32_t> ids(row.size());
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i);
    const size_t k = std::min<size_t>(top, ids.size());
    std::partial_sort(ids.begin(), ids.begin() + k, ids.end(),
                      [&](int32_t a, int32_t b) { return row[a] > row[b]; });
    for (size_t i = 0; i < k; ++i) lp.top.push_back({ids[i], row[ids[i]] - log_z});
  }
  return lp;
}

int32_t best_token(std::span<const float> row) {
  return static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin());
}

boost::asio::thread_pool& sampling_pool() {
  static boost::asio::thread_pool pool(std::clamp(std::thread::hardware_concurrency(), 1u, 8u));
  return pool;
}

}  // namespace vkllm::sched
