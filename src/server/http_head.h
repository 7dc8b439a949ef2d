// A request head (request line + header fields, up to and including the blank line) checked as RFC 9112 asks of a
// server facing clients directly: parsed by Beast, then refused with the status that says why — 431 over the line
// count or for a field name or value over Beast's 64 KiB per field, 400 for folded (obs-fold) or colon-less lines, control bytes, a missing Host on HTTP/1.1, conflicting or
// bad framing, 501 for a Transfer-Encoding other than chunked, 411 for a body without a length, 413 for a declared
// length over the limit, 417 for an Expect other than 100-continue. Pure: what the front and the fuzz target call.
// Must not know: sockets, routes or JSON.
#pragma once
#include <string>
#include <string_view>

#include "server/http_exchange.h"
#include "server/http_front.h"

namespace slimkv {

struct HeadParse {
  int32_t status = 0;         // 0: the head is acceptable; else the status to answer with
  std::string message;        // why (for the error body)
  HttpRequest request;        // method, path, query, version, headers (no body yet)
  std::string raw_head;       // the head's bytes, for the body's framing parser
  bool expect_continue = false;
};

HeadParse parse_head(std::string_view head, const HttpLimits& limits);

// The bytes of a head as they arrive, before its end is there: a line ending in a bare LF (RFC 9112 2.2 lets a server
// refuse it; Beast does) or a control byte in the request line (TLS sent to this plain-HTTP port begins with 0x16) can
// never become an acceptable head — refused at once instead of at --header-timeout. Each byte is looked at once
// (`scan` carries over between reads of the same head). Returns 0, or 400 with `why`.
struct HeadScan {
  size_t scanned = 0;             // bytes of the head looked at so far
  bool request_line_done = false;
};
int32_t scan_head_prefix(std::string_view head_so_far, HeadScan& scan, std::string& why);

}  // namespace slimkv
