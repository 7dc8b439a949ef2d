// Fuzz target: a request head (any bytes, ended by a blank line as the front cuts it) through parse_head, the pure
// check the HTTP front applies before reading a body (src/server/http_head.h). Properties: no crash or sanitizer
// report; a refusal is a 4xx/5xx status with a message; an accepted head has a method, HTTP/1.0 or 1.1, a path that
// starts with '/' (or '*'), no more header fields than the line limit, no control byte in a value, and Host once on
// HTTP/1.1.
#include <cstdint>
#include <string>

#include "server/http_head.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string head(reinterpret_cast<const char*>(data), size);
  head += "\r\n\r\n";
  head = head.substr(0, head.find("\r\n\r\n") + 4);  // the front hands over the bytes up to the first blank line
  slimkv::HttpLimits lim;
  lim.max_header_lines = 16;
  lim.max_header_bytes = 4096;
  lim.max_body_bytes = 4096;
  const slimkv::HeadParse p = slimkv::parse_head(head, lim);
  if (p.status != 0) {
    if (p.status < 400 || p.status > 599 || p.message.empty()) __builtin_trap();
    return 0;
  }
  const slimkv::HttpRequest& r = p.request;
  if (r.method.empty() || (r.version != 10 && r.version != 11)) __builtin_trap();
  if (r.path.empty() || (r.path[0] != '/' && r.path != "*")) __builtin_trap();
  if (static_cast<int32_t>(r.headers.size()) > lim.max_header_lines) __builtin_trap();
  int hosts = 0;
  for (const auto& [k, v] : r.headers) {
    for (unsigned char c : v) {
      if ((c < 32 && c != '\t') || c == 127) __builtin_trap();
    }
    hosts += k.size() == 4 && (k[0] | 32) == 'h' && (k[1] | 32) == 'o' && (k[2] | 32) == 's' && (k[3] | 32) == 't';
  }
  if (r.version == 11 && hosts != 1) __builtin_trap();
  if (p.raw_head != head) __builtin_trap();
  return 0;
}
