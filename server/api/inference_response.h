// GenerationChunk → Ollama's /api/generate and /api/chat response objects (compat §1.5-1.7):
// streamed chunks, the final chunk with done_reason and nanosecond metrics (zero ones left out),
// and the aggregation stream:false uses.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "server/requests/generation.h"

namespace vkllm::api {

nlohmann::ordered_json tool_call_json(const prompt::ToolCall& call);
nlohmann::ordered_json logprobs_json(const std::vector<requests::TokenLogprobText>& lps);

nlohmann::ordered_json generate_chunk_json(const std::string& model,
                                           const requests::GenerationChunk& chunk);
nlohmann::ordered_json chat_chunk_json(const std::string& model,
                                       const requests::GenerationChunk& chunk);

// Appends a streamed chunk to the running total (text concatenated, final fields taken).
void accumulate(requests::GenerationChunk& total, requests::GenerationChunk&& part);

}  // namespace vkllm::api
