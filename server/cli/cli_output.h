// What the client commands share: a connected ApiClient, NDJSON progress streams drawn as bars,
// aligned tables, and Ollama's relative times ("2 hours ago", "4 minutes from now").
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/cli/api_client.h"

namespace vkllm::cli {

// A client for OLLAMA_HOST after a heartbeat (throws ApiError when no server answers).
ApiClient connected_client();
// POSTs `body` to `target` and draws its progress lines (pull, push, create).
int stream_with_progress(ApiClient& client, const std::string& target, const nlohmann::json& body);
// Rows of cells, columns padded as `ollama list` pads them.
void print_table(const std::vector<std::vector<std::string>>& rows);
// "Less than a minute ago", "3 hours ago"; a time in the future reads "4 minutes from now".
std::string relative_time(const std::string& rfc3339);

}  // namespace vkllm::cli
