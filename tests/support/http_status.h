// For tests of request parsing: the HTTP status a StatusError thrown by `f` carries, 0 when `f`
// throws none (other exceptions pass through and fail the test).
#pragma once

#include <functional>

#include "server/http/exchange.h"

namespace vkllm::test {

inline unsigned status_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const http::StatusError& e) {
    return e.status();
  }
  return 0;
}

}  // namespace vkllm::test
