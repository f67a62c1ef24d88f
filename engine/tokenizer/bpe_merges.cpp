#include "engine/tokenizer/bpe_merges.h"

#include <algorithm>
#include <functional>
#include <string_view>

#include "engine/tokenizer/tokenizer_error.h"

namespace vkllm::tokenizer {
namespace {

struct MergeCandidate {
  int32_t rank;
  int32_t left, right;        // symbol positions
  int32_t left_id, right_id;  // the symbols' tokens when queued; a merge changes them
  bool operator>(const MergeCandidate& o) const {
    return rank != o.rank ? rank > o.rank : left > o.left;
  }
};

}  // namespace

BpeMerges::BpeMerges(const Vocab& vocab, const std::vector<std::string>& merges) {
  merges_.reserve(merges.size());
  std::string merged;
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const std::string& line = merges[rank];
    const size_t space = line.find(' ', 1);
    if (space == std::string::npos) {
      throw TokenizerError("tokenizer: tokenizer.ggml.merges[" + std::to_string(rank) + "] = '" +
                           line + "' is not two tokens separated by a space");
    }
    const std::string_view left(line.data(), space);
    const std::string_view right(line.data() + space + 1, line.size() - space - 1);
    merged.assign(left).append(right);
    const int32_t l = vocab.find(left), r = vocab.find(right), m = vocab.find(merged);
    if (l < 0 || r < 0 || m < 0) continue;
    merges_.try_emplace(pair_key(l, r), Merge{static_cast<int32_t>(rank), m});
  }
}

void BpeMerges::apply(std::vector<int32_t>& ids) const {
  const auto n = static_cast<int32_t>(ids.size());
  std::vector<int32_t> prev(ids.size()), next(ids.size());
  for (int32_t i = 0; i < n; ++i) {
    prev[static_cast<size_t>(i)] = i - 1;
    next[static_cast<size_t>(i)] = i + 1 < n ? i + 1 : -1;
  }
  std::vector<MergeCandidate> queue;
  auto consider = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const int32_t l = ids[static_cast<size_t>(left)], r = ids[static_cast<size_t>(right)];
    if (l < 0 || r < 0) return;
    auto it = merges_.find(pair_key(l, r));
    if (it == merges_.end()) return;
    queue.push_back(MergeCandidate{it->second.rank, left, right, l, r});
    std::push_heap(queue.begin(), queue.end(), std::greater<>());
  };
  for (int32_t i = 0; i + 1 < n; ++i) consider(i, i + 1);
  while (!queue.empty()) {
    std::pop_heap(queue.begin(), queue.end(), std::greater<>());
    const MergeCandidate c = queue.back();
    queue.pop_back();
    const auto l = static_cast<size_t>(c.left), r = static_cast<size_t>(c.right);
    // Stale if either side has merged with something else since it was queued.
    if (ids[l] != c.left_id || ids[r] != c.right_id || next[l] != c.right) continue;
    ids[l] = merges_.find(pair_key(c.left_id, c.right_id))->second.merged;
    ids[r] = kMerged;
    next[l] = next[r];
    if (next[r] >= 0) prev[static_cast<size_t>(next[r])] = c.left;
    consider(prev[l], c.left);
    consider(c.left, next[l]);
  }
}

}  // namespace vkllm::tokenizer
