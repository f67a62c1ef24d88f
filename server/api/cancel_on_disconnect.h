// A request's cancel signal, fired when its client disconnects: the scheduler then drops the
// request's sequence at the next step (or it never starts).
#pragma once

#include <memory>

#include "server/http/exchange.h"
#include "server/requests/generation.h"

namespace vkllm::api {

inline std::shared_ptr<requests::CancelSignal> cancel_on_disconnect(http::Exchange& ex) {
  auto cancel = std::make_shared<requests::CancelSignal>();
  ex.on_disconnect([cancel] { cancel->cancel(); });
  return cancel;
}

}  // namespace vkllm::api
