// The seam between the HTTP front (http_front.h: sockets, parsing, limits, keep-alive, pipelining) and the routes
// (http_server.h): one request as plain data, the response a route gives back — a whole body, or a stream of chunks
// pulled until it says it is done — and the peer a route may ask whether its client is still there.
// Must not know: the HTTP library, sockets or any route.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace slimkv {

struct HttpRequest {
  std::string method;                                      // "GET", "POST", ...
  std::string path;                                        // the target's path (origin or absolute form), no query
  std::string query;                                       // after '?', or empty
  int32_t version = 11;                                    // 10 or 11
  std::vector<std::pair<std::string, std::string>> headers;  // as received, in order
  std::string body;                                        // decoded (Content-Length or chunked)
  std::string remote_addr;
  int32_t remote_port = 0;

  // The first header of that name (case-insensitive), or "".
  const std::string& header(const std::string& name) const;
};

// Pulled by the front until done: each call appends the next bytes of the body (SSE events) to `out`, waiting a
// little for some; the front writes them as they come (HTTP/1.1 chunks).
struct HttpStream {
  std::function<void(std::string& out, bool& done)> next;
  std::function<void(bool complete)> closed;               // after the last chunk (true) or a failed write (false)
};

struct HttpResponse {
  int32_t status = 200;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers (Retry-After, WWW-Authenticate, ...)
  std::string body;
  HttpStream stream;                                       // set: the body is this stream, not `body`
  bool close = false;                                      // end the connection after this response
  std::shared_ptr<void> hold;                              // released once the response is written (or fails)

  bool streaming() const { return static_cast<bool>(stream.next); }
};

// The client of a request being handled.
class HttpPeer {
 public:
  virtual ~HttpPeer() = default;
  // True once the client is gone (its connection reset or closed both ways). A client that only half-closed (sent
  // its request, then shut down its sending side) is not gone: it still reads the answer.
  virtual bool client_gone() = 0;
};

using HttpHandler = std::function<HttpResponse(const HttpRequest&, HttpPeer&)>;

}  // namespace slimkv
