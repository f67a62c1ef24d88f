// Ollama's context shift, the one rule for a prompt too long for its window (the request cuts it
// before submitting) and for a sequence that fills its window while generating (the planner cuts
// it and recomputes): the first `keep` tokens stay, then the older half of the tokens after them
// goes (at least one), again until the tokens fit.
#pragma once

#include <cstdint>
#include <vector>

namespace vkllm::sched {

// The tokens a shift keeps at the start: `num_keep` (Ollama's option; negative: the whole
// prompt of `prompt_len` tokens), plus BOS when the tokenizer adds one (num_keep counts text
// tokens), at most limit - 1 so that every shift frees room.
uint32_t shift_keep(int32_t num_keep, uint32_t prompt_len, bool add_bos, uint32_t limit);

// Cuts `tokens` to at most `limit` (> keep) by the rule above; tokens that fit are untouched.
void shift_context(std::vector<int32_t>& tokens, uint32_t keep, uint32_t limit);

}  // namespace vkllm::sched
