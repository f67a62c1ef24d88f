#include "server/scheduler/context_shift.h"

#include <algorithm>

namespace vkllm::sched {

uint32_t shift_keep(int32_t num_keep, uint32_t prompt_len, bool add_bos, uint32_t limit) {
  uint32_t keep = num_keep < 0 ? prompt_len : static_cast<uint32_t>(num_keep);
  if (add_bos && num_keep >= 0) ++keep;
  return std::min(keep, limit > 0 ? limit - 1 : 0);
}

void shift_context(std::vector<int32_t>& tokens, uint32_t keep, uint32_t limit) {
  size_t total = tokens.size();
  if (total <= limit) return;
  keep = std::min(keep, limit > 0 ? limit - 1 : 0);
  // Each halving as the generating sequence meets it; a long prompt takes several at once.
  size_t discard = 0;
  while (total - discard > limit) discard += std::max<size_t>((total - discard - keep) / 2, 1);
  tokens.erase(tokens.begin() + keep, tokens.begin() + keep + static_cast<long>(discard));
}

}  // namespace vkllm::sched
