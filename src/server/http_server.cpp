#include "server/http_server.h"

#include <httplib.h>
#include <arpa/inet.h>
#include <dirent.h>
#include <malloc.h>
#include <netinet/in.h>
#include <sys/stat.h>
#include <strings.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <thread>
#include <utility>

#include "core/check.h"
#include "server/connection_threads.h"
#include "server/api_error.h"

namespace slimkv {
namespace {

void send_error(httplib::Response& res, const ApiError& e) {
  res.status = e.status;
  if (e.status == 429 || e.status == 503) res.set_header("Retry-After", "1");
  res.set_content(dump_json(e.to_json()), "application/json");
}

// Request framing and header syntax the HTTP library accepts leniently (RFC 9112 says reject): a body without
// Content-Length or chunked encoding (it waited for the read timeout), a Content-Length that is not one plain
// decimal number (negative, 2^64, repeated: request smuggling), both framings at once, header names with
// whitespace or control bytes (folded lines, no colon), values with a bare CR or a NUL. Returns the error, or
// nothing when the request may proceed.
std::optional<ApiError> framing_error(const httplib::Request& req, int64_t max_body_bytes) {
  for (const auto& [name, value] : req.headers) {
    for (unsigned char ch : name) {
      if (ch <= 32 || ch == 127 || ch == ':') {
        return ApiError(400, "malformed header line (a header name holds whitespace or a control byte)",
                        "invalid_request_error");
      }
    }
    for (unsigned char ch : value) {
      if ((ch < 32 && ch != '\t') || ch == 127) {
        return ApiError(400, "malformed header '" + name + "': a control byte in its value", "invalid_request_error");
      }
    }
  }
  if (req.method != "POST" && req.method != "PUT" && req.method != "PATCH") return std::nullopt;
  const bool chunked = strcasestr(req.get_header_value("Transfer-Encoding").c_str(), "chunked") != nullptr;
  const size_t lengths = req.get_header_value_count("Content-Length");
  if (chunked) {
    if (lengths > 0) {
      return ApiError(400, "both Content-Length and Transfer-Encoding: chunked", "invalid_request_error");
    }
    return std::nullopt;
  }
  if (lengths == 0) {
    return ApiError(411, "a request body needs a Content-Length header (or Transfer-Encoding: chunked)",
                    "invalid_request_error");
  }
  if (lengths > 1) return ApiError(400, "more than one Content-Length header", "invalid_request_error");
  const std::string v = req.get_header_value("Content-Length");
  const bool digits = !v.empty() && v.size() <= 18 && v.find_first_not_of("0123456789") == std::string::npos;
  if (!digits) return ApiError(400, "Content-Length must be one decimal number", "invalid_request_error");
  if (std::stoll(v) > max_body_bytes) {
    return ApiError(413, "the request body is too large (see --max-body-bytes)", "invalid_request_error");
  }
  return std::nullopt;
}

// An address's printable host and port (IPv4 or IPv6); port -1 for other families.
std::pair<std::string, int> host_port(const sockaddr_storage& ss) {
  char host[INET6_ADDRSTRLEN] = {0};
  if (ss.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
    ::inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
    return {host, ntohs(a->sin_port)};
  }
  if (ss.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
    ::inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
    return {host, ntohs(a->sin6_port)};
  }
  return {"", -1};
}

// Calls fn(fd, local, peer) for every connected socket of this process (those with a peer), until fn returns false.
// The library gives handlers no view of their sockets; /proc/self/fd does.
template <typename Fn>
void for_each_connected_socket(Fn fn) {
  DIR* d = ::opendir("/proc/self/fd");
  if (!d) return;
  while (dirent* e = ::readdir(d)) {
    const int fd = std::atoi(e->d_name);
    struct stat st;
    if (fd <= 2 || ::fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    sockaddr_storage local{}, peer{};
    socklen_t local_len = sizeof local, peer_len = sizeof peer;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_len) != 0 ||
        ::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0) {
      continue;  // not a connection (the listening socket has no peer)
    }
    if (!fn(fd, host_port(local), host_port(peer))) break;
  }
  ::closedir(d);
}

// The accepted socket whose peer is addr:port (the connection a handler serves), or -1.
int find_peer_socket(const std::string& addr, int port) {
  int found = -1;
  for_each_connected_socket([&](int fd, const auto&, const auto& peer) {
    if (peer.second == port && peer.first == addr) found = fd;
    return found < 0;
  });
  return found;
}

// Shuts down the reading side of every accepted connection of the server listening on local_port (their local
// port is the listening port): threads blocked reading an idle keep-alive or a slow client's request see the end
// of the stream at once, so a stop after the drain does not wait out their read timeouts. Only reading: a response
// still being written (a handler returns before the library writes its answer) goes out whole, then the
// connection ends at its next read.
void shutdown_accepted_sockets(int local_port) {
  for_each_connected_socket([&](int fd, const auto& local, const auto&) {
    if (local.second == local_port) ::shutdown(fd, SHUT_RD);
    return true;
  });
}

// The peer has closed its side (orderly FIN or reset): nothing more will be read from it, nor our answer.
bool peer_closed(int fd) {
  char c;
  const ssize_t n = ::recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

// Equal strings, in time that depends on the length only (not on where they first differ).
bool constant_time_equal(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

nlohmann::json parse_body(const std::string& body) {
  // The parser stops at a NUL and ignored what followed: a body is JSON text, so a NUL anywhere is an error.
  if (body.find('\0') != std::string::npos) {
    throw invalid_request(fmt::format("the body is not valid JSON: a NUL byte at offset {}", body.find('\0')));
  }
  try {
    return nlohmann::json::parse(body);
  } catch (const nlohmann::json::exception& e) {
    std::string what = e.what();  // "[json.exception.parse_error.101] parse error at ...": the library's tag off
    if (what.rfind("[json.exception", 0) == 0 && what.find("] ") != std::string::npos) what = what.substr(what.find("] ") + 2);
    throw invalid_request(fmt::format("the body is not valid JSON: {}", what));
  }
}

}  // namespace

HttpServer::HttpServer(ServerConfig cfg, int32_t num_handler_threads)
    : cfg_(std::move(cfg)), http_(std::make_unique<httplib::Server>()) {
  cfg_.validate();
  // One thread per connection, up to --http-threads at once (default: 512, at least max-num-seqs + 16): an idle or
  // slow client holds only its own thread, so /health and /metrics keep answering beside hundreds of them.
  const int32_t max_connections = cfg_.http_threads > 0 ? cfg_.http_threads : std::max(512, num_handler_threads);
  http_->new_task_queue = [max_connections] { return new ConnectionThreads(max_connections); };
  http_->set_tcp_nodelay(true);
  http_->set_keep_alive_timeout(cfg_.keep_alive_timeout_s);
  http_->set_payload_max_length(static_cast<size_t>(cfg_.max_body_bytes));
  http_->set_read_timeout(30, 0);
  // The library's default options add SO_REUSEPORT: a second server on the same port would then start silently and
  // take half the connections. SO_REUSEADDR only (a restart may bind over TIME_WAIT), so a taken port is an error.
  http_->set_socket_options([this](socket_t sock) {  // and remember the listening socket (see bind)
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    listen_fd_ = sock;
  });
  http_->set_write_timeout(30, 0);
  install_routes();
}

HttpServer::~HttpServer() { stop(); }

int HttpServer::bind() {
  int port = cfg_.port;
  if (port == 0) port = http_->bind_to_any_port(cfg_.host);
  else if (!http_->bind_to_port(cfg_.host, port)) port = -1;
  SLIMKV_CHECK(port > 0, "cannot listen on {}:{} (in use, or not an address of this machine)", cfg_.host, cfg_.port);
  // The Debian library listens with a backlog of 5: a burst of clients overflows it and their handshakes stall for
  // seconds. Linux lets listen() on a listening socket raise the backlog.
  if (listen_fd_ >= 0) ::listen(listen_fd_, 1024);
  bound_port_ = port;
  return port;
}

void HttpServer::listen_after_bind() {
  listen_state_ = 1;
  if (!stop_requested_) http_->listen_after_bind();
  listen_state_ = 2;
}

// The library's stop() does nothing until its listen loop runs (it checks is_running): a stop() that came first
// would leave the listener serving for ever and its join blocking (a failed start hung). So stop is requested
// first, and repeated until a listener that had started has returned.
void HttpServer::stop() {
  stop_requested_ = true;
  if (!http_) return;
  for (int tick = 0; listen_state_ == 1; ++tick) {
    http_->stop();
    // The listener returns once every connection thread has: end the reads of open connections (idle keep-alives,
    // slow clients), which would otherwise run to their timeouts (the drain's watchdog ended the process at 5 s).
    if (tick % 50 == 0 && bound_port_ > 0) shutdown_accepted_sockets(bound_port_);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void HttpServer::attach(ServeContext ctx, ServerMetrics* metrics) {
  ctx_ = std::move(ctx);
  metrics_ = metrics;
  ready_ = true;
}

void HttpServer::install_routes() {
  auto& s = *http_;
  s.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (auto e = framing_error(req, cfg_.max_body_bytes)) {
      res.set_header("Connection", "close");  // the body (if any) was not read: the stream cannot be resynced
      send_error(res, *e);
      return httplib::Server::HandlerResponse::Handled;
    }
    // /health and the dashboard's page (static; its requests to /metrics carry the key) need no key.
    if (cfg_.api_keys.empty() || req.path == "/health" || req.path == "/dashboard") {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    // The scheme is case-insensitive (RFC 7235); keys compare in constant time (no timing oracle on the prefix).
    const std::string auth = req.get_header_value("Authorization");
    bool ok = false;
    if (auth.size() > 7 && strncasecmp(auth.c_str(), "bearer ", 7) == 0) {
      const std::string given = auth.substr(7);
      for (const auto& k : cfg_.api_keys) ok |= constant_time_equal(given, k);
    }
    if (ok) return httplib::Server::HandlerResponse::Unhandled;
    res.set_header("WWW-Authenticate", "Bearer");
    send_error(res, authentication_error());
    return httplib::Server::HandlerResponse::Handled;
  });
  s.set_error_handler(httplib::Server::HandlerWithResponse([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    if (res.status == 413) {
      send_error(res, ApiError(413, "the request body is too large (see --max-body-bytes)", "invalid_request_error"));
    } else if (res.status == 404) {
      send_error(res, ApiError(404, "no route " + req.method + " " + req.path, "invalid_request_error"));
    } else {
      send_error(res, ApiError(res.status, fmt::format("HTTP error {}", res.status), "invalid_request_error"));
    }
    return httplib::Server::HandlerResponse::Handled;
  }));
  s.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "internal error";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    send_error(res, ApiError(500, what, "internal_error"));
  });
  s.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    if (draining_) return send_error(res, service_unavailable("draining: the server is shutting down"));
    if (!ready_) return send_error(res, service_unavailable("the model is loading"));
    res.set_content("{}", "application/json");
  });
  s.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
    if (!ready_) return send_error(res, service_unavailable("the model is loading"));
    nlohmann::json m = {{"id", ctx_.model_name}, {"object", "model"}, {"created", 0}, {"owned_by", "slimkv"},
                        {"root", ctx_.model->path}, {"max_model_len", ctx_.max_model_len}};
    res.set_content(dump_json({{"object", "list"}, {"data", nlohmann::json::array({m})}}), "application/json");
  });
  s.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    if (!ready_) return send_error(res, service_unavailable("the model is loading"));
    std::string text;
    ctx_.service->inspect([&](Engine& e) { text = metrics_->render(e, ctx_.model_name, cfg_.metrics_vllm_names); });
    res.set_content(text, "text/plain; version=0.0.4; charset=utf-8");
  });
  s.Get("/dashboard", [this](const httplib::Request& req, httplib::Response& res) {
    if (dashboard_html_.empty()) {
      return send_error(res, ApiError(404, "no route GET " + req.path, "invalid_request_error"));
    }
    res.set_header("Cache-Control", "no-cache");
    res.set_content(dashboard_html_, "text/html; charset=utf-8");
  });
  // POST bodies are read here, through the library's content reader, so --max-body-bytes holds for every framing:
  // the library checks its own limit only against a Content-Length, and buffered chunked bodies or bodies without
  // a length whole (300 MB seen) before a 400. Past the limit reading stops: 413, and the connection is closed.
  auto generate = [this](bool chat) {
    return [this, chat](const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader) {
      // Counted until the response is written: for a stream, until the library drops its content provider.
      ++active_;
      std::shared_ptr<void> active(nullptr, [this](void*) { --active_; });
      // A large body (up to --max-body-bytes, and its parsed copy) goes back to the system afterwards instead of
      // staying in the allocator's arenas (hundreds of MB seen after large invalid bodies). Destroyed last.
      struct TrimAfterLargeBody {
        size_t bytes = 0;
        ~TrimAfterLargeBody() {
          if (bytes > (size_t{1} << 20)) malloc_trim(0);
        }
      } trim;
      try {
        std::string text;
        bool too_large = false;
        const size_t limit = static_cast<size_t>(cfg_.max_body_bytes);
        const bool read = reader([&](const char* data, size_t n) {
          if (text.size() + n > limit) {
            too_large = true;
            return false;
          }
          text.append(data, n);
          return true;
        });
        trim.bytes = text.size();
        too_large = too_large || res.status == 413;  // a Content-Length over the limit: the library said so
        if (!read && !too_large) throw invalid_request("the request body could not be read");
        if (too_large) {
          res.set_header("Connection", "close");
          throw ApiError(413, "the request body is too large (see --max-body-bytes)", "invalid_request_error");
        }
        if (draining_) throw service_unavailable("the server is shutting down (draining); retry on another replica");
        if (!ready_) throw service_unavailable("the model is loading");
        const nlohmann::json body = parse_body(text);
        GenerationRequest g = chat ? parse_chat_request(body) : parse_completion_request(body);
        if (!g.model.empty() && g.model != ctx_.model_name) throw model_not_found(g.model);
        auto session = std::make_shared<GenerationSession>(ctx_, std::move(g));
        if (session->streaming()) {
          res.set_header("Cache-Control", "no-cache");
          res.set_chunked_content_provider(
              "text/event-stream",
              [session, active](size_t, httplib::DataSink& sink) {
                std::string bytes = session->next_events(100);
                if (!bytes.empty() && !sink.write(bytes.data(), bytes.size())) {
                  session->cancel();  // the client is gone: abort and free its KV blocks now
                  return false;
                }
                if (session->done()) sink.done();
                return true;
              },
              [session](bool success) {
                if (!success) session->cancel();
              });
          return;
        }
        // The library gives a handler no view of its socket: find it by the peer's address (once), then poll it
        // while generating, so a client that hangs up stops its generation as a stream's does (issue R defect 7).
        const int fd = find_peer_socket(req.remote_addr, req.remote_port);
        res.set_content(dump_json(session->run_to_completion([fd] { return fd >= 0 && peer_closed(fd); })),
                        "application/json");
      } catch (const ApiError& e) {
        send_error(res, e);
      } catch (const Error& e) {
        send_error(res, invalid_request(e.what()));
      }
    };
  };
  s.Post("/v1/completions", generate(false));
  s.Post("/v1/chat/completions", generate(true));
}

}  // namespace slimkv
