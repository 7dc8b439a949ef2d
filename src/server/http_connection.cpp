#include <utility>  // std::exchange (Asio's headers use it without including it)

#include "server/http_connection.h"

#include <malloc.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "server/http_head.h"

namespace slimkv::http_front {

Connection::Connection(std::shared_ptr<FrontState> st, tcp::socket sock, std::string ip, int32_t port)
    : st_(std::move(st)), sock_(std::move(sock)), timer_(st_->io), ip_(std::move(ip)), port_(port) {
  fd_ = sock_.native_handle();
  beast::error_code ec;
  sock_.set_option(tcp::no_delay(true), ec);
}

Connection::~Connection() {
  std::lock_guard<std::mutex> lock(st_->mu);
  if (--st_->per_ip[ip_] <= 0) st_->per_ip.erase(ip_);
  st_->open.erase(this);
}

void Connection::close() {
  beast::error_code ec;
  timer_.cancel();
  sock_.shutdown(tcp::socket::shutdown_both, ec);
  sock_.close(ec);
}

void Connection::shutdown_both() { ::shutdown(fd_, SHUT_RDWR); }

template <class F>
void Connection::guarded(const char* name, F&& work) noexcept {
  try {
    stage(name);
    work();
  } catch (const std::length_error& e) {  // Beast's basic_fields past 64 KiB a field
    fail(name, e.what(), true);
  } catch (const std::exception& e) {
    fail(name, e.what(), false);
  } catch (...) {
    fail(name, "an unknown exception", false);
  }
}

void Connection::start() {
  guarded("head", [&] { read_head(); });
}

// Logged; a stage that reads a request answers it (the client learns why), any other closes at once.
void Connection::fail(const char* name, const char* what, bool length_error) noexcept {
  std::fprintf(stderr, "slimkv serve: connection %s:%d: %s failed: %s (this connection is closed)\n", ip_.c_str(),
               port_, name, what);
  const bool reading = std::strcmp(name, "head") == 0 || std::strcmp(name, "body") == 0 ||
                       std::strcmp(name, "trailers") == 0;
  try {
    if (!reading) return close();
    if (length_error) return refuse(431, "a header or trailer field is over the parser's limit (64 KiB a field)");
    return refuse(400, fmt::format("the request could not be read: {}", what));
  } catch (...) {
    try {
      close();
    } catch (...) {
    }
  }
}

void Connection::arm(Clock::time_point deadline) {
  timed_out_ = false;
  timer_.expires_at(deadline);
  timer_.async_wait([self = shared_from_this()](const beast::error_code& ec) {
    if (ec) return;  // cancelled: the read finished first
    self->timed_out_ = true;
    beast::error_code ignored;
    self->sock_.cancel(ignored);  // Asio's error_code overloads do not throw
  });
}

// Reads more bytes into the buffer, then continues the phase (head or body); a deadline that passes first ends
// an idle connection silently and a request being read with 408.
void Connection::read_more(Clock::time_point deadline, bool idle, size_t max_bytes) {
  arm(deadline);
  const bool body = parser_.has_value();
  sock_.async_read_some(buf_.prepare(max_bytes), [self = shared_from_this(), idle, body](const beast::error_code& ec,
                                                                                     size_t n) {
    self->guarded(body ? "body" : "head", [&] {
      self->timer_.cancel();
      if (self->timed_out_) {
        if (idle) return self->close();
        return self->refuse(408, body ? "the request body did not arrive within --body-timeout"
                                      : "the request head did not arrive within --header-timeout");
      }
      if (ec) return self->close();  // the client closed or reset: a request cut short is dropped
      self->buf_.commit(n);
      if (body) return self->read_body();
      self->read_head();
    });
  });
}

void Connection::read_head() {
  if (st_->stopping) return close();
  while (buf_.size() >= 2 && std::memcmp(buf_.data().data(), "\r\n", 2) == 0) {  // RFC 9112 2.2
    buf_.consume(2);
    head_scan_ = HeadScan{};
  }
  const std::string_view data(static_cast<const char*>(buf_.data().data()), buf_.size());
  const size_t end = data.find("\r\n\r\n");
  const size_t limit = static_cast<size_t>(st_->limits.max_header_bytes);
  if (end != std::string_view::npos) {
    if (end + 4 > limit) return refuse(431, fmt::format("the request head is over --max-header-bytes {}", limit));
    return on_head(end + 4);
  }
  if (data.size() >= limit) return refuse(431, fmt::format("the request head is over --max-header-bytes {}", limit));
  std::string why;
  if (scan_head_prefix(data, head_scan_, why) != 0) return refuse(400, why);
  const Clock::time_point now = Clock::now();
  if (data.empty()) {  // between requests: the first one gets the head's deadline, later ones the keep-alive's
    const double s = served_ == 0 ? st_->limits.header_timeout_s : st_->limits.keep_alive_timeout_s;
    return read_more(now + std::chrono::milliseconds(static_cast<int64_t>(s * 1000)), true);
  }
  if (!head_started_) {  // one deadline for the whole head, however slowly it trickles in
    head_started_ = true;
    head_deadline_ = now + std::chrono::milliseconds(static_cast<int64_t>(st_->limits.header_timeout_s * 1000));
  }
  read_more(head_deadline_, false);
}

void Connection::on_head(size_t head_bytes) {
  HeadParse p = parse_head(std::string_view(static_cast<const char*>(buf_.data().data()), head_bytes), st_->limits);
  if (p.status != 0) return refuse(p.status, p.message);
  buf_.consume(head_bytes);
  head_scan_ = HeadScan{};
  req_ = std::move(p.request);
  req_.remote_addr = ip_;
  req_.remote_port = port_;
  if (st_->routes.check_head) {
    if (std::optional<HttpResponse> r = st_->routes.check_head(req_)) {
      r->close = true;  // the body (if any) is not read
      write_response(*r, req_.version, false);
      return linger_close();
    }
  }
  parser_.emplace(st_->limits.max_header_lines, st_->routes.fault_hook);
  parser_->header_limit(static_cast<uint32_t>(std::min<int64_t>(st_->limits.max_header_bytes + 4, UINT32_MAX)));
  parser_->body_limit(static_cast<uint64_t>(st_->limits.max_body_bytes));
  parser_->eager(true);
  beast::error_code ec;
  parser_->put(net::buffer(p.raw_head), ec);  // the parser frames the body (Content-Length or chunked)
  if (ec) return refuse(400, "malformed request: " + ec.message());
  if (p.expect_continue && !parser_->is_done()) write_all("HTTP/1.1 100 Continue\r\n\r\n");
  body_deadline_ = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(st_->limits.body_timeout_s * 1000));
  guarded("body", [&] { read_body(); });
}

// Beast parses a body's data as it comes, but waits for a chunk-size line and for the whole trailer section before
// it reads them: those wait in the buffer, bounded like a head (--max-header-bytes; trailer lines --max-header-lines).
void Connection::read_body() {
  const size_t limit = static_cast<size_t>(st_->limits.max_header_bytes);
  while (!parser_->is_done()) {
    if (buf_.size() == 0) return read_more(body_deadline_, false);
    beast::error_code ec;
    const size_t used = parser_->put(buf_.data(), ec);
    buf_.consume(used);
    if (ec == bhttp::error::need_more) {
      if (used > 0) continue;
      if (buf_.size() >= limit) {
        return refuse(431, fmt::format("a chunk-size line or the trailer section is over --max-header-bytes {}", limit));
      }
      return read_more(body_deadline_, false, std::min<size_t>(16384, limit - buf_.size()));  // never past it
    }
    if (ec == bhttp::error::body_limit) {
      return refuse(413, fmt::format("the request body is over --max-body-bytes {}", st_->limits.max_body_bytes));
    }
    if (ec == bhttp::error::header_limit && parser_->trailer_lines_over()) {
      return refuse(431, fmt::format("more than --max-header-lines {} trailer lines", st_->limits.max_header_lines));
    }
    if (ec) return refuse(400, "malformed request body: " + ec.message());
  }
  dispatch();
}

void Connection::dispatch() {
  timer_.cancel();
  req_.body = parser_->take_body();
  const bool keep_alive = parser_->keep_alive();
  parser_.reset();
  head_started_ = false;
  st_->handlers.submit([self = shared_from_this(), req = std::move(req_), keep_alive]() mutable {
    self->handle(std::move(req), keep_alive);
  });
  req_ = HttpRequest{};
}

void Connection::handle(HttpRequest req, bool keep_alive) {
  req_version_ = req.version;
  bool keep = false;
  size_t body_bytes = 0;
  try {
    HttpResponse res;
    try {
      res = st_->routes.handle(req, *this);
    } catch (const std::exception& e) {
      res = st_->routes.error(500, e.what());
    }
    body_bytes = res.body.size();
    const bool ok = write_response(res, req.version, keep_alive);
    keep = ok && keep_alive && !res.close && !(res.streaming() && req.version < 11);
  } catch (const std::exception& e) {  // the answer could not be written whole: this connection ends
    std::fprintf(stderr, "slimkv serve: connection %s:%d: write failed: %s (this connection is closed)\n",
                 ip_.c_str(), port_, e.what());
  }
  // A large answer is freed by now: its pages go back to the system instead of staying in the allocator's
  // arenas (a burst of 8 answers of 10 MB each left 765 MB resident after it ended).
  if (body_bytes > (size_t{1} << 20)) malloc_trim(0);
  ++served_;
  net::post(st_->io, [self = shared_from_this(), keep] {
    if (keep) return self->guarded("head", [&] { self->read_head(); });  // the next request (maybe pipelined)
    self->guarded("linger", [&] { self->linger_close(); });
  });
}

}  // namespace slimkv::http_front

namespace slimkv::http_front {

void Connection::refuse(int32_t status, const std::string& message) {
  HttpResponse r = st_->routes.error(status, message);
  r.close = true;
  write_response(r, req_.version == 10 ? 10 : 11, false);
  linger_close();
}

void Connection::linger_close() {
  beast::error_code ec;
  sock_.shutdown(tcp::socket::shutdown_send, ec);
  if (ec) return close();
  arm(Clock::now() + std::chrono::seconds(1));
  auto drain = std::make_shared<std::function<void(int64_t)>>();
  *drain = [self = shared_from_this(), drain](int64_t left) {
    self->buf_.consume(self->buf_.size());
    self->sock_.async_read_some(self->buf_.prepare(16384), [self, drain, left](const beast::error_code& e, size_t n) {
      bool done = true;
      self->guarded("linger", [&] {
        self->buf_.commit(n);
        if (e || self->timed_out_ || left - static_cast<int64_t>(n) <= 0) return self->close();
        done = false;
        (*drain)(left - static_cast<int64_t>(n));
      });
      if (done) *drain = nullptr;  // breaks the cycle
    });
  };
  (*drain)(int64_t{8} << 20);
}

bool Connection::write_all(const std::string& bytes) {
  const Clock::time_point deadline =
      Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(st_->limits.write_timeout_s * 1000));
  for (size_t at = 0; at < bytes.size();) {
    const ssize_t n = ::send(fd_, bytes.data() + at, bytes.size() - at, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      at += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return false;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;  // the client does not read: --write-timeout
    pollfd p{fd_, POLLOUT, 0};
    ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1000)));
  }
  return true;
}

bool Connection::write_response(const HttpResponse& res, int32_t version, bool keep_alive) {
  try {
    stage("write");
  } catch (...) {
    if (res.stream.closed) res.stream.closed(false);  // a stream not written: its request is cancelled
    throw;
  }
  const bool chunked = res.streaming() && version == 11;
  const bool close = !keep_alive || res.close || (res.streaming() && !chunked) || st_->stopping;
  std::string head = fmt::format("HTTP/1.{} {} {}\r\n", version == 10 ? 0 : 1, res.status,
                                 std::string(bhttp::obsolete_reason(bhttp::int_to_status(res.status))));
  head += "Content-Type: " + res.content_type + "\r\n";
  for (const auto& [k, v] : res.headers) head += k + ": " + v + "\r\n";
  if (chunked) head += "Transfer-Encoding: chunked\r\n";
  if (!res.streaming()) head += fmt::format("Content-Length: {}\r\n", res.body.size());
  if (close) head += "Connection: close\r\n";
  else if (version == 10) head += "Connection: keep-alive\r\n";
  head += "\r\n";
  if (!res.streaming()) {
    if (res.body.size() <= (64 << 10)) return write_all(head + res.body);
    return write_all(head) && write_all(res.body);  // a large body is not copied (it may be megabytes)
  }
  bool ok = false;
  try {
    ok = write_all(head);
    for (bool done = false; ok && !done;) {
      std::string out;
      res.stream.next(out, done);
      if (!out.empty()) ok = write_all(chunked ? fmt::format("{:x}\r\n{}\r\n", out.size(), out) : out);
    }
    if (ok && chunked) ok = write_all("0\r\n\r\n");
  } catch (...) {
    if (res.stream.closed) res.stream.closed(false);  // cancelled: its blocks are freed
    throw;
  }
  if (res.stream.closed) res.stream.closed(ok);
  return ok;
}

// A FIN from the client means it is gone or only half-closed (still reading). HTTP/1.1 lets the server send
// interim (1xx) responses before the final one: one is sent (at most every 250 ms); a client that is gone answers
// it with a reset, which the next look sees.
bool Connection::client_gone() {
  pollfd p{fd_, POLLIN | POLLRDHUP, 0};
  if (::poll(&p, 1, 0) <= 0) return false;
  if (p.revents & (POLLERR | POLLHUP)) return true;
  if (!(p.revents & POLLRDHUP)) return false;
  if (req_version_ != 11) return true;  // HTTP/1.0: no interim responses; a FIN is taken as gone
  const Clock::time_point now = Clock::now();
  if (now - last_probe_ < std::chrono::milliseconds(250)) return false;
  last_probe_ = now;
  static const char kProbe[] = "HTTP/1.1 102 Processing\r\n\r\n";
  const ssize_t n = ::send(fd_, kProbe, sizeof kProbe - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
  return n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
}

}  // namespace slimkv::http_front
