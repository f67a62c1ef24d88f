// Go's time.ParseDuration, as Ollama parses keep_alive strings: "300ms", "1.5h", "1h30m", "-1m",
// "0". A string without a unit (other than "0") is an error with Go's text.
#pragma once

#include <chrono>
#include <string_view>

namespace vkllm::sched {

// Throws std::invalid_argument("time: missing unit in duration \"300\"") and Go's other texts.
std::chrono::nanoseconds parse_go_duration(std::string_view text);

}  // namespace vkllm::sched
