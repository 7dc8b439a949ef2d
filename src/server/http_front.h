// The HTTP/1.1 front, on Boost.Beast's parser and Asio: one I/O thread accepts and reads every connection's
// requests (idle and slow clients cost no thread), bounded before anything grows — header bytes and lines (431), a
// deadline for the whole head, the body limit (413, also for chunked bodies and before a 100 Continue), a body
// deadline, connections in all and per client address; framing refused at once (an unsupported Transfer-Encoding
// 501, Content-Length with chunked or a bad chunk 400, a body without a length 411, HTTP/1.1 without Host, folded or
// colon-less header lines 400). Complete requests run on handler threads (up to a limit, then they queue) and are
// answered in order on their connection (pipelining); a response is written whole or streamed as chunks, with a
// write deadline; keep-alive follows the request (HTTP/1.0 closes unless asked). A chunked body's chunk-size lines and
// trailer section are bounded like a head (--max-header-bytes, --max-header-lines: 431), any header or trailer field
// by the parser's own 64 KiB (431); nothing one connection sends or makes throw ends more than that connection.
// Owns: the listening socket, the connections, the handler threads. Must not know: routes, JSON or the engine.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "server/http_exchange.h"

namespace slimkv {

namespace http_front {
struct FrontState;
}

struct HttpLimits {                     // ServerConfig's flags, 1:1
  int64_t max_header_bytes = 64 << 10;  // --max-header-bytes: request line + headers (431 past it)
  int32_t max_header_lines = 100;       // --max-header-lines (431 past it)
  double header_timeout_s = 10;         // --header-timeout: from a request's first byte to its head's end (408)
  double body_timeout_s = 30;           // --body-timeout: from the head's end to the body's end (408)
  double write_timeout_s = 30;          // --write-timeout: a response (or a stream's chunk) the client does not read
  int32_t keep_alive_timeout_s = 5;     // --keep-alive-timeout: an idle connection between requests
  int64_t max_body_bytes = 8 << 20;     // --max-body-bytes (413 past it)
  int32_t max_connections = 2048;       // --max-connections: open connections in all (503 past it)
  int32_t max_connections_per_ip = 512; // --max-connections-per-ip (0: no cap)
  int32_t handler_threads = 512;        // --http-threads: requests handled at once (more queue)
};

// What the routes give the front: the handler, a check of each request's head before its body is read (auth, route,
// method, content type: an answer here is sent without reading the body, and the connection closes), and the body
// of the front's own errors (status, message).
struct HttpRoutes {
  HttpHandler handle;
  std::function<std::optional<HttpResponse>(const HttpRequest& head)> check_head;
  std::function<HttpResponse(int32_t status, const std::string& message)> error;
  // Tests only (unset in the server): called as each stage of a connection's handling begins — "accept", "head",
  // "body", "trailers" (inside the body parser, per trailer field), "write", "linger"; what it throws is handled as
  // a failure of that stage (the front's test proves each ends one connection, never the server).
  std::function<void(const char* stage)> fault_hook;
};

class HttpFront {
 public:
  HttpFront(HttpLimits limits, HttpRoutes routes);
  ~HttpFront();
  HttpFront(const HttpFront&) = delete;
  HttpFront& operator=(const HttpFront&) = delete;

  int bind(const std::string& host, int port);  // port 0: any free one; returns the port; throws Error
  void run();                                   // serves until stop(); blocking
  // Stops accepting, ends every connection's reads (idle keep-alives and slow clients at once), waits for the
  // handlers running to return and for run() to return. Idempotent; may come before run().
  void stop();
  int32_t open_connections() const;
  int32_t busy_handlers() const;

 private:
  std::shared_ptr<http_front::FrontState> state_;
};

}  // namespace slimkv
