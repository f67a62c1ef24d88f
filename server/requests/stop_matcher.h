// Stop sequences on streamed text: text is released only once it cannot be the start of a stop
// string, so a stop string split across tokens is never emitted, and generation ends where the
// first one appears.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace vkllm::requests {

class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops);

  struct Result {
    std::string text;      // safe to emit
    bool stopped = false;  // a stop string was found; nothing after it is emitted
    std::string matched;   // which one (the earliest in the text)
  };
  Result feed(std::string_view text);
  // End of generation: whatever was held back.
  std::string flush();

 private:
  std::vector<std::string> stops_;
  std::string held_;
  bool stopped_ = false;
};

}  // namespace vkllm::requests
