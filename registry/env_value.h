// Environment variables as Ollama reads them (envconfig): surrounding blanks and then quotes
// are stripped, so OLLAMA_MODELS="/data/models" and OLLAMA_NOPRUNE=' 1 ' mean what they say.
#pragma once

#include <string>

namespace vkllm::registry {

// The variable's cleaned value; empty when it is unset.
std::string env_value(const char* name);

}  // namespace vkllm::registry
