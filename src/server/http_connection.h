// One accepted connection of the HTTP front (http_front.h), and the front's shared state it lives in. Reads run on
// the front's I/O thread (asynchronously, under deadlines); a complete request is handed to a handler thread, which
// writes the answer itself (blocking, under the write deadline) and hands the connection back for the next request.
// Internal to the front: only http_front.cpp and http_connection.cpp include it (it brings Asio and Beast).
// Must not know: routes or JSON.
#pragma once
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "server/handler_threads.h"
#include "server/http_body_parser.h"
#include "server/http_front.h"
#include "server/http_head.h"

namespace slimkv::http_front {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

class Connection;

struct FrontState {
  FrontState(HttpLimits l, HttpRoutes r) : limits(l), routes(std::move(r)), acceptor(io), handlers(l.handler_threads) {}
  HttpLimits limits;
  HttpRoutes routes;
  net::io_context io{1};
  tcp::acceptor acceptor;
  HandlerThreads handlers;
  std::atomic<bool> stopping{false};
  std::atomic<int> run_state{0};  // 0: run() not called yet, 1: running, 2: returned
  std::mutex mu;                  // guards the two maps
  std::map<std::string, int32_t> per_ip;                   // open connections per client address
  std::unordered_map<const Connection*, std::weak_ptr<Connection>> open;
};

class Connection : public std::enable_shared_from_this<Connection>, public HttpPeer {
 public:
  Connection(std::shared_ptr<FrontState> st, tcp::socket sock, std::string ip, int32_t port);
  ~Connection() override;
  void start();                // I/O thread: reads the first request
  void close();               // I/O thread
  // I/O thread: after an answer sent without reading the whole request, stop sending, read and drop what the
  // client still sends (up to a second), then close — so the client reads the answer instead of a reset.
  void linger_close();
  void shutdown_both();       // any thread: ends reads and writes at once (stop)
  bool client_gone() override;

 private:
  void read_head();
  void read_more(Clock::time_point deadline, bool idle, size_t max_bytes = 16384);
  void on_head(size_t head_bytes);
  void read_body();
  void dispatch();
  void handle(HttpRequest req, bool keep_alive);  // a handler thread
  bool write_response(const HttpResponse& res, int32_t version, bool keep_alive);
  bool write_all(const std::string& bytes);
  // An answer from the front itself (a limit, bad framing): sent, then the connection closes.
  void refuse(int32_t status, const std::string& message);
  void arm(Clock::time_point deadline);
  // Runs one stage of this connection's handling (the fault hook first); what it throws ends this connection only:
  // answered (431 for a field over the parser's limit, else 400) where the stage reads a request, then closed.
  template <class F>
  void guarded(const char* stage, F&& work) noexcept;
  void fail(const char* stage, const char* what, bool length_error) noexcept;
  void stage(const char* name) const {
    if (st_->routes.fault_hook) st_->routes.fault_hook(name);
  }

  std::shared_ptr<FrontState> st_;
  tcp::socket sock_;
  net::steady_timer timer_;
  beast::flat_buffer buf_;
  std::optional<BodyParser> parser_;   // the body's framing (head fed again), from the head's end to the body's
  HttpRequest req_;                    // the request being read (head, then body)
  std::string ip_;
  int32_t port_ = 0;
  int fd_ = -1;
  bool timed_out_ = false;
  bool head_started_ = false;          // the current request's first byte has arrived
  HeadScan head_scan_;                 // what of the current head has been checked as it arrived (http_head.h)
  Clock::time_point head_deadline_{};
  Clock::time_point body_deadline_{};
  Clock::time_point last_probe_{};     // client_gone: the last interim response sent after the client's FIN
  int32_t served_ = 0;                 // requests answered on this connection
  int32_t req_version_ = 11;           // of the request a handler runs (client_gone's interim responses)
};

}  // namespace slimkv::http_front
