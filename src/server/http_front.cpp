#include "server/http_front.h"

#include <sys/resource.h>
#include <sys/socket.h>

#include <cstdio>
#include <thread>

#include "core/check.h"
#include "server/http_connection.h"

namespace slimkv {
namespace {

using namespace http_front;

// Each connection is a file descriptor: lift the soft limit to the hard one (Debian's default soft limit, 1024,
// is below the default --max-connections).
void raise_open_files_limit() {
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &r);
  }
}

// Over a connection cap: a short 503 (best effort, never blocking the accept loop), then the socket closes.
void turn_away(FrontState& st, tcp::socket& sock, const std::string& why) {
  HttpResponse r = st.routes.error(503, why);
  const std::string bytes = fmt::format("HTTP/1.1 503 Service Unavailable\r\nContent-Type: {}\r\nRetry-After: 1\r\n"
                                        "Content-Length: {}\r\nConnection: close\r\n\r\n{}",
                                        r.content_type, r.body.size(), r.body);
  (void)::send(sock.native_handle(), bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  beast::error_code ec;
  sock.shutdown(tcp::socket::shutdown_both, ec);
  sock.close(ec);
}

void accept_next(const std::shared_ptr<FrontState>& st);

// One accepted socket: turned away over a cap, else a connection that starts reading.
void admit(const std::shared_ptr<FrontState>& st, tcp::socket& sock) {
  if (st->routes.fault_hook) st->routes.fault_hook("accept");
  beast::error_code e2;
  const tcp::endpoint peer = sock.remote_endpoint(e2);
  const std::string ip = e2 ? std::string() : peer.address().to_string();
  std::string refusal;
  {
    std::lock_guard<std::mutex> lock(st->mu);
    const HttpLimits& lim = st->limits;
    if (static_cast<int32_t>(st->open.size()) >= lim.max_connections) {
      refusal = fmt::format("too many open connections (--max-connections {})", lim.max_connections);
    } else if (auto it = st->per_ip.find(ip);
               lim.max_connections_per_ip > 0 && it != st->per_ip.end() && it->second >= lim.max_connections_per_ip) {
      refusal = fmt::format("too many connections from {} (--max-connections-per-ip {})", ip,
                            lim.max_connections_per_ip);
    }
  }
  if (!refusal.empty()) {
    turn_away(*st, sock, refusal);
  } else if (!st->stopping) {
    auto c = std::make_shared<Connection>(st, std::move(sock), ip, e2 ? 0 : peer.port());
    {
      std::lock_guard<std::mutex> lock(st->mu);
      ++st->per_ip[ip];
      st->open[c.get()] = c;
    }
    c->start();
  }
}

void accept_next(const std::shared_ptr<FrontState>& st) {
  st->acceptor.async_accept([st](const beast::error_code& ec, tcp::socket sock) {
    if (ec) {
      if (!st->stopping && ec != net::error::operation_aborted) accept_next(st);
      return;
    }
    try {
      admit(st, sock);
    } catch (const std::exception& e) {  // this socket only: closed (if it was not taken), the loop goes on
      std::fprintf(stderr, "slimkv serve: accepting a connection failed: %s (it is closed)\n", e.what());
      beast::error_code ignored;
      sock.close(ignored);
    }
    accept_next(st);
  });
}

}  // namespace

HttpFront::HttpFront(HttpLimits limits, HttpRoutes routes)
    : state_(std::make_shared<FrontState>(limits, std::move(routes))) {}

HttpFront::~HttpFront() { stop(); }

int HttpFront::bind(const std::string& host, int port) {
  raise_open_files_limit();
  FrontState& st = *state_;
  beast::error_code ec;
  const net::ip::address addr = net::ip::make_address(host == "localhost" ? "127.0.0.1" : host, ec);
  SLIMKV_CHECK(!ec, "cannot listen on {}:{} (not an IP address)", host, port);
  const tcp::endpoint ep(addr, static_cast<uint16_t>(port));
  st.acceptor.open(ep.protocol(), ec);
  // SO_REUSEADDR only (a restart binds over TIME_WAIT); never SO_REUSEPORT: a second server on a taken port
  // must fail, not share it.
  if (!ec) st.acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) st.acceptor.bind(ep, ec);
  if (!ec) st.acceptor.listen(1024, ec);
  SLIMKV_CHECK(!ec, "cannot listen on {}:{} (in use, or not an address of this machine): {}", host, port, ec.message());
  return st.acceptor.local_endpoint().port();
}

void HttpFront::run() {
  FrontState& st = *state_;
  st.run_state = 1;
  if (!st.stopping) {
    accept_next(state_);
    // Every handler guards its own connection; should one still throw, only its connection is lost (its handler and
    // the connection it held are gone): the loop goes on serving the others.
    for (;;) {
      try {
        st.io.run();
        break;
      } catch (const std::exception& e) {
        std::fprintf(stderr, "slimkv serve: an I/O handler failed: %s (its connection is closed)\n", e.what());
      } catch (...) {
        std::fprintf(stderr, "slimkv serve: an I/O handler failed (its connection is closed)\n");
      }
    }
  }
  st.run_state = 2;
}

void HttpFront::stop() {
  FrontState& st = *state_;
  if (st.stopping.exchange(true)) {
    while (st.run_state == 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return;
  }
  // End every connection's reads and writes: idle keep-alives and slow clients close at once, a handler writing to
  // a client that does not read fails its write, a non-streaming one sees its client gone.
  std::vector<std::shared_ptr<Connection>> open;
  {
    std::lock_guard<std::mutex> lock(st.mu);
    for (auto& [ptr, weak] : st.open) {
      if (auto c = weak.lock()) open.push_back(std::move(c));
    }
  }
  for (auto& c : open) c->shutdown_both();
  open.clear();
  net::post(st.io, [&st] {
    beast::error_code ec;
    st.acceptor.close(ec);
  });
  st.handlers.shutdown();  // the handlers running return (their connections are shut)
  if (st.run_state == 1) {
    // run() returns once nothing is pending: the closed sockets' reads fail and their connections go.
    for (int tick = 0; st.run_state == 1 && tick < 2000; ++tick) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    st.io.stop();
    while (st.run_state == 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  } else {
    beast::error_code ec;
    st.acceptor.close(ec);
  }
}

int32_t HttpFront::open_connections() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return static_cast<int32_t>(state_->open.size());
}

int32_t HttpFront::busy_handlers() const { return state_->handlers.busy(); }

}  // namespace slimkv
