#include "server/api/progress_stream.h"

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include <boost/asio/experimental/concurrent_channel.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "server/http/error_reply.h"
#include "server/http/json_text.h"
#include "server/http/streams.h"

namespace vkllm::api {
namespace {

namespace asio = boost::asio;

struct Message {
  nlohmann::json line;  // a progress object, or {"error": ...} when `failed`
  bool done = false;
  bool failed = false;
  unsigned status = 200;
};

using Channel = asio::experimental::concurrent_channel<void(boost::system::error_code, Message)>;

struct Shared {
  explicit Shared(asio::any_io_executor ex) : channel(std::move(ex), 32) {}
  Channel channel;
  std::stop_source stop;
  std::mutex send_mutex;  // progress may come from several transfer threads; keep lines whole

  // Waits while the handler is behind (back-pressure); false once the handler is gone. Polls
  // try_send instead of blocking on an async send, so nothing here depends on the session's
  // executor still running (at shutdown it no longer does).
  bool send(const Message& m) {
    std::lock_guard lock(send_mutex);
    for (;;) {
      if (stop.stop_requested() || !channel.is_open()) return false;
      if (channel.try_send(boost::system::error_code{}, Message(m))) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
};

std::mutex active_mutex;
std::vector<std::weak_ptr<Shared>> active;

void track(const std::shared_ptr<Shared>& s) {
  std::lock_guard lock(active_mutex);
  std::erase_if(active, [](const auto& w) { return w.expired(); });
  active.push_back(s);
}

}  // namespace

void cancel_progress_operations() {
  std::lock_guard lock(active_mutex);
  for (const auto& w : active) {
    if (auto s = w.lock()) {
      s->stop.request_stop();
      s->channel.close();
    }
  }
  active.clear();
}

nlohmann::json status_line(const std::string& status) {
  nlohmann::json j;
  j["status"] = status;
  return j;
}

asio::awaitable<void> run_with_progress(http::Exchange& ex, asio::thread_pool& pool, bool stream,
                                        ProgressWork work) {
  auto shared = std::make_shared<Shared>(ex.executor());
  track(shared);
  // A client that leaves stops the work at once, also with stream:false (nothing is written
  // until the end, so no write would notice). Another client pulling the same model runs its
  // own operation and takes the download over where this one stopped.
  ex.on_disconnect([weak = std::weak_ptr<Shared>(shared)] {
    if (auto s = weak.lock()) {
      s->stop.request_stop();
      s->channel.close();
    }
  });
  asio::post(pool, [shared, work = std::move(work)] {
    Message last;
    last.done = true;
    try {
      work(
          [&](const nlohmann::json& line) {
            shared->send(Message{line, false, false, 200});
          },
          shared->stop.get_token());
    } catch (const std::exception& e) {
      const http::StatusError error = http::status_error_of(e);
      last.failed = true;
      last.status = error.status();
      last.line["error"] = error.message();
    }
    shared->send(last);
  });

  http::NdjsonStream out(ex);
  std::optional<nlohmann::json> latest;
  std::optional<http::StatusError> failure;
  try {
    for (;;) {
      Message m = co_await shared->channel.async_receive(asio::use_awaitable);
      if (m.failed) {
        if (!out.started()) {
          failure.emplace(m.status, m.line["error"].get<std::string>());
          break;
        }
        co_await out.send(m.line);
        break;
      }
      if (m.done) break;
      if (stream) {
        co_await out.send(m.line);
      } else {
        latest = std::move(m.line);
      }
    }
  } catch (...) {
    shared->stop.request_stop();
    shared->channel.close();
    throw;
  }
  shared->channel.close();
  if (failure) throw *failure;
  if (stream) {
    co_await out.finish();
  } else {
    std::string body = http::json_text(latest.value_or(status_line("success")));
    co_await ex.respond(200, http::kJsonContentType, std::move(body));
  }
}

}  // namespace vkllm::api
