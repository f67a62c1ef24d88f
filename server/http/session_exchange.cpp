#include "server/http/session_exchange.h"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

namespace vkllm::http {

// GCC 12 with the sanitizers takes Beast's copy of a boost::optional for a read of uninitialised
// storage once it is inlined here (a false positive: the storage is only read when engaged).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
std::optional<uint64_t> SessionExchange::content_length() const {
  const auto n = parser_.content_length();
  if (n) return *n;
  return std::nullopt;
}
#pragma GCC diagnostic pop

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using asio::awaitable;
using asio::use_awaitable;

namespace {

constexpr size_t kBodyChunk = 64 * 1024;
constexpr uint64_t kDrainLimit = 256 * 1024;  // unread body bytes we still skip to keep alive
// Pipelined bytes the disconnect watch keeps for the next parse; past it the watch stops (a
// client that sends that much ahead is not leaving).
constexpr size_t kWatchKeepLimit = 64 * 1024;

}  // namespace

SessionExchange::SessionExchange(beast::tcp_stream& stream, beast::flat_buffer& buffer,
                                 bhttp::request_parser<bhttp::buffer_body>& parser,
                                 const ServerLimits& limits, BodyBudget& budget)
    : stream_(stream), buffer_(buffer), parser_(parser), limits_(limits), budget_(budget) {
  const auto& req = parser_.get();
  method_ = parse_method(std::string_view(req.method_string().data(), req.method_string().size()));
  target_ = std::string(req.target());
  version_ = req.version();
}

std::optional<std::string> SessionExchange::header(std::string_view name) const {
  const auto& req = parser_.get();
  const auto it = req.find(beast::string_view(name.data(), name.size()));
  if (it == req.end()) return std::nullopt;
  return std::string(it->value());
}

awaitable<std::string> SessionExchange::read_body() {
  std::string body;
  const auto announced = content_length();
  if (announced && *announced > limits_.body_bytes) {
    keep_alive_ = false;
    throw StatusError(413, "request body too large: " + std::to_string(*announced) +
                               " bytes, limit " + std::to_string(limits_.body_bytes));
  }
  // A known length is reserved (and allocated) at once; a chunked body as it grows.
  if (announced) {
    reserve_body_bytes(*announced);
    body.reserve(*announced);
  }
  body_deadline_ = std::chrono::steady_clock::now() + limits_.body_timeout;
  std::vector<char> buf(kBodyChunk);
  for (;;) {
    const size_t n = co_await read_body_some(buf);
    if (n == 0) break;
    if (body.size() + n > limits_.body_bytes) {
      keep_alive_ = false;
      throw StatusError(
          413, "request body too large: limit " + std::to_string(limits_.body_bytes) + " bytes");
    }
    if (body.size() + n > reserved_) reserve_body_bytes(body.size() + n - reserved_);
    body.append(buf.data(), n);
  }
  body_deadline_.reset();
  co_return body;
}

awaitable<size_t> SessionExchange::read_body_some(std::span<char> out) {
  if (parser_.is_done() || out.empty()) co_return 0;
  co_await send_continue_if_expected();
  auto& body = parser_.get().body();
  for (;;) {
    body.data = out.data();
    body.size = out.size();
    beast::error_code ec;
    auto expiry = std::chrono::steady_clock::now() + limits_.read_timeout;
    if (body_deadline_) expiry = std::min(expiry, *body_deadline_);
    stream_.expires_at(expiry);
    co_await bhttp::async_read_some(stream_, buffer_, parser_,
                                    asio::redirect_error(use_awaitable, ec));
    const size_t got = out.size() - body.size;
    if (ec == bhttp::error::need_buffer) ec = {};
    if (ec) {
      keep_alive_ = false;
      // A timeout closed the socket; a malformed body (bad chunk, trailer too large) gets
      // its 400 and the connection closes after it.
      io_failed_ = ec == beast::error::timeout || !stream_.socket().is_open();
      if (ec == beast::error::timeout) throw StatusError(408, "timed out reading request body");
      throw StatusError(400, "reading request body: " + ec.message());
    }
    if (parser_.is_done()) arm_watch();
    if (got > 0 || parser_.is_done()) co_return got;
  }
}

awaitable<void> SessionExchange::respond(unsigned status, std::string_view content_type,
                                         std::string body) {
  if (started_) throw std::logic_error("response already started");
  started_ = true;
  status_ = status;
  bhttp::response<bhttp::string_body> res{static_cast<bhttp::status>(status), version_};
  apply_headers(res, content_type);
  res.body() = std::move(body);
  res.prepare_payload();
  stream_.expires_after(limits_.write_timeout);
  try {
    if (method_ == Method::head) {
      bhttp::response_serializer<bhttp::string_body> sr{res};
      co_await bhttp::async_write_header(stream_, sr, use_awaitable);
    } else {
      co_await bhttp::async_write(stream_, res, use_awaitable);
    }
  } catch (...) {
    io_failed_ = true;
    throw;
  }
  finished_ = true;
}

awaitable<void> SessionExchange::start_chunked(unsigned status, std::string_view content_type) {
  if (started_) throw std::logic_error("response already started");
  started_ = true;
  status_ = status;
  chunked_ = version_ >= 11;
  if (!chunked_) keep_alive_ = false;  // HTTP/1.0: the body ends when the connection does
  bhttp::response<bhttp::empty_body> res{static_cast<bhttp::status>(status), version_};
  apply_headers(res, content_type);
  if (chunked_) res.chunked(true);
  co_await write_head(res);
}

awaitable<void> SessionExchange::start_sized(unsigned status, std::string_view content_type,
                                             uint64_t length) {
  if (started_) throw std::logic_error("response already started");
  started_ = true;
  status_ = status;
  chunked_ = false;
  sized_ = true;
  sized_remaining_ = length;
  bhttp::response<bhttp::empty_body> res{static_cast<bhttp::status>(status), version_};
  apply_headers(res, content_type);
  res.content_length(length);
  co_await write_head(res);
}

awaitable<void> SessionExchange::write_head(bhttp::response<bhttp::empty_body>& res) {
  bhttp::response_serializer<bhttp::empty_body> sr{res};
  stream_.expires_after(limits_.write_timeout);
  try {
    co_await bhttp::async_write_header(stream_, sr, use_awaitable);
  } catch (...) {
    io_failed_ = true;
    throw;
  }
}

awaitable<void> SessionExchange::write_chunk(std::string_view data) {
  if (!started_ || finished_) throw std::logic_error("no open chunked response");
  if (data.empty() || method_ == Method::head) co_return;
  if (sized_) {
    if (data.size() > sized_remaining_) throw std::logic_error("body longer than announced");
    sized_remaining_ -= data.size();
  }
  stream_.expires_after(limits_.write_timeout);
  try {
    if (chunked_) {
      co_await asio::async_write(stream_, bhttp::make_chunk(asio::buffer(data)), use_awaitable);
    } else {
      co_await asio::async_write(stream_, asio::buffer(data), use_awaitable);
    }
  } catch (...) {
    io_failed_ = true;
    throw;
  }
}

awaitable<void> SessionExchange::finish_chunked() {
  if (!started_ || finished_) co_return;
  finished_ = true;
  if (sized_ && sized_remaining_ != 0 && method_ != Method::head) keep_alive_ = false;
  if (!chunked_ || method_ == Method::head) co_return;
  stream_.expires_after(limits_.write_timeout);
  try {
    co_await asio::async_write(stream_, bhttp::make_chunk_last(), use_awaitable);
  } catch (...) {
    io_failed_ = true;
    throw;
  }
}

void SessionExchange::on_disconnect(std::function<void()> callback) {
  if (!watch_) watch_ = std::make_shared<DisconnectWatch>();
  if (watch_->fired) {  // already known gone: tell this one too, but not from inside its caller
    asio::post(stream_.get_executor(), [cb = std::move(callback)] { run_callback(cb); });
    return;
  }
  watch_->callbacks.push_back(std::move(callback));
  arm_watch();
}

void SessionExchange::end_watch() {
  if (!watch_) return;
  watch_->active = false;
  if (watch_->waiting) {
    beast::error_code ec;
    stream_.socket().cancel(ec);
  }
  watch_.reset();
}

awaitable<void> SessionExchange::drain_body() {
  if (parser_.is_done()) co_return;
  const auto n = content_length();
  if (!continue_sent_ && parser_.get()[bhttp::field::expect] == "100-continue") {
    keep_alive_ = false;  // the client never sent the body; the stream is out of step
    co_return;
  }
  if (!n || *n > kDrainLimit) {
    keep_alive_ = false;
    co_return;
  }
  std::vector<char> buf(kBodyChunk);
  try {
    while (co_await read_body_some(buf) > 0) {
    }
  } catch (...) {
    keep_alive_ = false;
  }
}

void SessionExchange::reserve_body_bytes(uint64_t n) {
  if (budget_.in_flight.fetch_add(n) + n > budget_.limit) {
    budget_.in_flight -= n;
    keep_alive_ = false;
    throw StatusError(503, "server busy: too many large request bodies in flight, retry later");
  }
  reserved_ += n;
}

awaitable<void> SessionExchange::send_continue_if_expected() {
  if (continue_sent_) co_return;
  continue_sent_ = true;
  if (parser_.get()[bhttp::field::expect] != "100-continue" || version_ < 11) co_return;
  bhttp::response<bhttp::empty_body> cont{bhttp::status::continue_, version_};
  stream_.expires_after(limits_.write_timeout);
  co_await bhttp::async_write(stream_, cont, use_awaitable);
}

void SessionExchange::arm_watch() {
  auto w = watch_;
  if (!w || !w->active || w->waiting || w->fired || !parser_.is_done()) return;
  if (buffer_.size() >= kWatchKeepLimit) return;
  w->waiting = true;
  stream_.socket().async_wait(tcp::socket::wait_read, [this, w](beast::error_code ec) {
    w->waiting = false;
    if (!w->active) return;  // the exchange ended; `this` may be gone
    if (ec) {
      // Cancelled while open: nobody but end_watch() cancels, so only a closed socket (a
      // timeout closed it) or a socket error means the client is unreachable.
      if (ec != asio::error::operation_aborted || !stream_.socket().is_open()) fire(*w);
      return;
    }
    const size_t room = std::min(buffer_.max_size() - buffer_.size(),
                                 kWatchKeepLimit - std::min(kWatchKeepLimit, buffer_.size()));
    if (room == 0) return;  // a client that sends this much ahead is not leaving
    auto space = buffer_.prepare(std::min<size_t>(16 * 1024, room));
    const ssize_t n =
        ::recv(stream_.socket().native_handle(), space.data(), space.size(), MSG_DONTWAIT);
    if (n > 0) {
      buffer_.commit(static_cast<size_t>(n));
    } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      fire(*w);
      return;
    }
    arm_watch();
  });
}

void SessionExchange::fire(DisconnectWatch& w) {
  w.fired = true;
  auto callbacks = std::move(w.callbacks);
  w.callbacks.clear();
  for (auto& cb : callbacks) run_callback(cb);
}

void SessionExchange::run_callback(const std::function<void()>& cb) {
  try {
    cb();
  } catch (...) {  // a callback's failure must not escape into the io_context
  }
}

}  // namespace vkllm::http
