// The exception every tokenizer failure throws (bad vocabulary metadata, unknown model types).
#pragma once

#include <stdexcept>

namespace vkllm::tokenizer {

class TokenizerError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace vkllm::tokenizer
