#include "engine/runtime/generator.h"

#include <algorithm>
#include <stdexcept>

namespace vkllm::runtime {

std::vector<float> Generator::feed(std::span<const int32_t> tokens, bool all_rows) {
  if (tokens.empty()) throw std::invalid_argument("Generator::feed: no tokens");
  std::vector<float> out;
  const auto& o = runner_.options();
  const size_t chunk =
      all_rows ? std::min(o.max_batch_tokens, o.max_logits_rows) : o.max_batch_tokens;
  for (size_t i = 0; i < tokens.size(); i += chunk) {
    const size_t n = std::min(chunk, tokens.size() - i);
    const bool last_chunk = i + n == tokens.size();
    SequenceStep s{
        &*table_, tokens.subspan(i, n),
        all_rows ? LogitsWanted::All : (last_chunk ? LogitsWanted::Last : LogitsWanted::None)};
    auto r = runner_.step(std::span(&s, 1));
    if (all_rows) {
      out.insert(out.end(), r.logits[0].begin(), r.logits[0].end());
    } else if (last_chunk) {
      out = std::move(r.logits[0]);
    }
  }
  return out;
}

int32_t Generator::feed_greedy(int32_t token) {
  SequenceStep s{&*table_, std::span(&token, 1), LogitsWanted::Last};
  return runner_.step(std::span(&s, 1), /*greedy_only=*/true).greedy[0];
}

}  // namespace vkllm::runtime
