// Fuzz target: raw bytes sent to the real HTTP front (HttpServer over HttpFront, Beast + Asio, in this process, on loopback,
// with an API key, no model attached) as one client connection, to two servers at once: one with the default head
// limits (--max-header-bytes 64 KiB, --max-header-lines 100) and a 4 KiB body limit, one with wide limits (1 MiB
// head, 2,000 lines, 256 KiB body), so that inputs of up to 256 KiB (scripts/fuzz) reach both the refusals and what
// lies past them: fields, chunk-size lines (extensions) and trailer sections over 64 KiB parsed, not refused at
// once (issue R3: a trailer field over Beast's 64 KiB per field used to abort the server). Request lines, header
// syntax, framing (Content-Length, chunked, both, neither), chunk extensions, trailers, bodies past the limit,
// pipelining. Properties, on each server: what comes back within 30 ms of quiet starts with an HTTP/1.x status
// line, and an error status carries an OpenAI error body; after every input /health still answers (503: no model)
// on a new connection within 5 s. FUZZ_HTTP_SHOW=1 prints each server's status lines for each input.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "server/http_server.h"

namespace {

int64_t transport_retries = 0;  // connections loopback refused or reset (reported at exit)

int start_server(int64_t max_body_bytes, int64_t max_header_bytes, int32_t max_header_lines) {
  slimkv::ServerConfig cfg;
  cfg.port = 0;
  cfg.api_keys = {"fuzz-key"};
  cfg.max_body_bytes = max_body_bytes;
  cfg.max_header_bytes = max_header_bytes;
  cfg.max_header_lines = max_header_lines;
  cfg.keep_alive_timeout_s = 1;
  cfg.validate();
  auto* http = new slimkv::HttpServer(cfg, 8);  // lives until the process exits
  const int p = http->bind();
  std::thread([http] { http->listen_after_bind(); }).detach();
  return p;
}

// [0]: the default head limits and a 4 KiB body; [1]: wide limits (a head, a chunk-size line or a trailer section
// of up to 1 MiB, 2,000 lines of either, a 256 KiB body): past Beast's 64 KiB per field, and past any input.
const int* server_ports() {
  static const int* ports = [] {
    static int p[2];
    p[0] = start_server(4096, 64 << 10, 100);
    p[1] = start_server(256 << 10, 1 << 20, 2000);
    std::atexit([] {
      std::fprintf(stderr, "fuzz_http_request: %lld connections retried\n", static_cast<long long>(transport_retries));
    });
    return p;
  }();
  return ports;
}

// Sends `request` and reads what comes back until the server closes the connection or has been silent for
// quiet_ms (it may be waiting for the rest of a request, as it should). False when the connection fails.
bool exchange(int port, const std::string& request, std::string& response, int quiet_ms) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return false;
  }
  // The server may answer (413, 400) and close before it has read everything: a failed send is an answer too.
  for (size_t at = 0; at < request.size();) {
    const ssize_t n = ::send(fd, request.data() + at, request.size() - at, MSG_NOSIGNAL);
    if (n <= 0) break;
    at += static_cast<size_t>(n);
  }
  char buf[8192];
  while (true) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, quiet_ms) <= 0) break;
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    response.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return true;
}

// A broken property: which server, what it answered (the head and the start of the body), then abort.
[[noreturn]] void violated(int port, const char* what, const std::string& r) {
  std::fprintf(stderr, "fuzz_http_request: the server on port %d (%s limits): %s; it answered [%s]\n", port,
               port == server_ports()[0] ? "default" : "wide", what, r.substr(0, 400).c_str());
  __builtin_trap();
}

void check_response(int port, const std::string& r) {
  if (r.empty()) return;  // closed without an answer (e.g. nothing that parsed as a request line)
  if (r.size() < 12) return;  // cut by the quiet window (not seen on loopback: answers go out in one write)
  if (r.rfind("HTTP/1.1 ", 0) != 0 && r.rfind("HTTP/1.0 ", 0) != 0) {
    violated(port, "no HTTP/1.x status line", r);  // HTTP/1.0 asks get 1.0
  }
  const int status = std::atoi(r.substr(9, 3).c_str());
  if (status < 100 || status > 599) violated(port, "a status outside 100..599", r);
  if (status < 400) return;
  const size_t head_end = r.find("\r\n\r\n");
  if (head_end == std::string::npos) return;  // cut by the quiet window
  const std::string head = r.substr(0, head_end);
  if (head.find("Transfer-Encoding: chunked") != std::string::npos) return;  // a stream (not from an error path)
  const size_t len_at = head.find("Content-Length: ");
  if (len_at == std::string::npos) violated(port, "an error without a Content-Length", r);
  const size_t len = std::strtoul(head.c_str() + len_at + 16, nullptr, 10);
  if (r.size() < head_end + 4 + len) return;  // cut by the quiet window
  const std::string body = r.substr(head_end + 4, len);
  const auto j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.contains("error") || !j["error"].contains("message")) {
    violated(port, "an error without an OpenAI error body", r);
  }
}

// One input against one server: its answer, then /health (503: no model is attached; a hang or a dead listener
// would show here). Up to three tries at /health: loopback at ~60 connections a second now and then refuses or resets
// one (a 4-tuple still in TIME_WAIT; 6 retries in 19,455 inputs of a 10 CPU-minute run, none failed thrice).
void run_one(int port, const std::string& input, std::atomic<int64_t>& retries) {
  std::string response;
  if (exchange(port, input, response, 30)) {
    if (std::getenv("FUZZ_HTTP_SHOW")) {  // what each server answered (its status lines), e.g. to check the seeds
      std::string lines;
      for (size_t at = response.find("HTTP/1."); at != std::string::npos; at = response.find("HTTP/1.", at + 1)) {
        lines += " | " + response.substr(at + 9, response.find("\r\n", at) - at - 9);
      }
      std::fprintf(stderr, "%d bytes, %s limits:%s\n", static_cast<int>(input.size()),
                   port == server_ports()[0] ? "default" : "wide", lines.c_str());
    }
    check_response(port, response);
  } else {
    ++retries;  // nothing was sent, so there is nothing to check
  }
  for (int attempt = 0;; ++attempt) {
    std::string health;
    const bool connected = exchange(port, "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", health, 5000);
    if (connected && health.rfind("HTTP/1.1 503", 0) == 0) break;
    if (attempt == 2) {
      violated(port, connected ? "/health after the input, 3 tries: no 503" : "/health after the input: no connection",
               health);
    }
    ++retries;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int* ports = server_ports();
  const std::string input(reinterpret_cast<const char*>(data), size);
  // Both servers at once (each input mostly waits out its 30 ms of quiet).
  std::atomic<int64_t> retries{0};
  std::thread wide([&] { run_one(ports[1], input, retries); });
  run_one(ports[0], input, retries);
  wide.join();
  transport_retries += retries;
  return 0;
}
