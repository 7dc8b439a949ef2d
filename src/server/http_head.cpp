#include "server/http_head.h"

#include <boost/beast/core/string.hpp>
#include <boost/beast/http.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <vector>

namespace slimkv {
namespace {

namespace bhttp = boost::beast::http;

// Beast's basic_fields keeps a field's name and value lengths in 16 bits (each + 2 <= 65535) and throws past that.
constexpr size_t kMaxFieldBytes = 65533;

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool iequal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  }
  return true;
}

std::string_view sv(boost::beast::string_view s) { return std::string_view(s.data(), s.size()); }

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The codings of every Transfer-Encoding field, in order (comma lists split, lowercased).
std::vector<std::string> codings(const std::vector<std::string_view>& values) {
  std::vector<std::string> out;
  for (std::string_view v : values) {
    for (size_t start = 0; start <= v.size();) {
      const size_t comma = std::min(v.find(',', start), v.size());
      const std::string_view t = trim(v.substr(start, comma - start));
      if (!t.empty()) out.push_back(lower(t));
      start = comma + 1;
    }
  }
  return out;
}

// The status for Beast's refusal of a head.
std::pair<int32_t, std::string> beast_refusal(const boost::beast::error_code& ec, const HttpLimits& lim) {
  if (ec == bhttp::error::header_limit) {
    return {431, fmt::format("the request head is over --max-header-bytes {}", lim.max_header_bytes)};
  }
  if (ec == bhttp::error::body_limit) {
    return {413, fmt::format("the request body is over --max-body-bytes {}", lim.max_body_bytes)};
  }
  if (ec == bhttp::error::bad_content_length) return {400, "a bad or conflicting Content-Length"};
  if (ec == bhttp::error::bad_transfer_encoding) return {400, "both Content-Length and Transfer-Encoding, or two chunked"};
  return {400, "malformed request head: " + ec.message()};
}

// The path of an origin-form ("/a?b") or absolute-form ("http://host/a?b") target, and its query.
void split_target(std::string_view target, HttpRequest& r) {
  const size_t scheme = target.find("://");
  if (scheme != std::string_view::npos && target.front() != '/') {
    const size_t slash = target.find('/', scheme + 3);
    target = slash == std::string_view::npos ? std::string_view("/") : target.substr(slash);
  }
  const size_t q = target.find('?');
  r.path = std::string(target.substr(0, q));
  r.query = q == std::string_view::npos ? "" : std::string(target.substr(q + 1));
}

}  // namespace

HeadParse parse_head(std::string_view head, const HttpLimits& lim) {
  HeadParse out;
  auto refuse = [&](int32_t status, std::string message) {
    out.status = status;
    out.message = std::move(message);
    return out;
  };
  // The raw lines first: Beast unfolds obs-fold and fails on framing before its fields can be read.
  std::vector<std::string_view> te;
  int32_t lines = 0;
  for (size_t pos = head.find("\r\n"); pos != std::string_view::npos && pos + 2 < head.size();) {
    const size_t next = head.find("\r\n", pos + 2);
    const std::string_view line = head.substr(pos + 2, next - pos - 2);
    if (line.empty()) break;
    if (line.front() == ' ' || line.front() == '\t') return refuse(400, "a folded header line (obs-fold)");
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) return refuse(400, "a header line without a colon");
    if (++lines > lim.max_header_lines) {
      return refuse(431, fmt::format("more than --max-header-lines {} header lines", lim.max_header_lines));
    }
    if (colon > kMaxFieldBytes || trim(line.substr(colon + 1)).size() > kMaxFieldBytes) {
      return refuse(431, fmt::format("a header field's name or value is over {} bytes (the parser's limit per field, "
                                     "whatever --max-header-bytes says)", kMaxFieldBytes));
    }
    if (iequal(trim(line.substr(0, colon)), "transfer-encoding")) te.push_back(line.substr(colon + 1));
    pos = next;
  }
  if (!te.empty()) {
    const std::vector<std::string> c = codings(te);
    if (c != std::vector<std::string>{"chunked"}) {
      return refuse(501, fmt::format("Transfer-Encoding '{}' is not supported (only chunked)", fmt::join(c, ", ")));
    }
  }
  bhttp::request_parser<bhttp::string_body> p;
  p.header_limit(static_cast<uint32_t>(std::min<int64_t>(lim.max_header_bytes + 4, UINT32_MAX)));
  p.body_limit(static_cast<uint64_t>(lim.max_body_bytes));
  boost::beast::error_code ec;
  p.put(boost::asio::buffer(head.data(), head.size()), ec);
  if (ec && ec != bhttp::error::need_more) {
    auto [status, message] = beast_refusal(ec, lim);
    return refuse(status, message);
  }
  if (!p.is_header_done()) return refuse(400, "malformed request head");
  const auto& m = p.get();
  HttpRequest& r = out.request;
  r.method = std::string(m.method_string());
  r.version = static_cast<int32_t>(m.version());
  if (r.version != 10 && r.version != 11) return refuse(505, "only HTTP/1.0 and HTTP/1.1 are served");
  split_target(sv(m.target()), r);
  if (r.path.empty() || (r.path[0] != '/' && r.path != "*")) {
    return refuse(400, "the request target must be a path (origin form) or an absolute URL");
  }
  int32_t hosts = 0, authorizations = 0;
  for (const auto& f : m) {
    const std::string_view value = sv(f.value());
    for (unsigned char ch : value) {
      if ((ch < 32 && ch != '\t') || ch == 127) {
        return refuse(400, fmt::format("a control byte in the value of header '{}'", std::string(f.name_string())));
      }
    }
    hosts += iequal(sv(f.name_string()), "host");
    authorizations += iequal(sv(f.name_string()), "authorization");
    r.headers.emplace_back(std::string(f.name_string()), std::string(value));
  }
  if (r.version == 11 && hosts != 1) return refuse(400, "an HTTP/1.1 request needs exactly one Host header");
  // Which credentials count would be ambiguous (as two Content-Lengths are): refused, not the first taken.
  if (authorizations > 1) return refuse(400, "more than one Authorization header");
  const bool body_method = r.method == "POST" || r.method == "PUT" || r.method == "PATCH";
  if (body_method && !p.content_length() && !p.chunked()) {
    return refuse(411, "a request body needs a Content-Length header (or Transfer-Encoding: chunked)");
  }
  const std::string& expect = r.header("Expect");
  if (!expect.empty()) {
    if (!iequal(trim(expect), "100-continue")) return refuse(417, "only Expect: 100-continue is met");
    out.expect_continue = r.version == 11;
  }
  out.raw_head = std::string(head);
  return out;
}

int32_t scan_head_prefix(std::string_view data, HeadScan& scan, std::string& why) {
  for (size_t i = scan.scanned; i < data.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(data[i]);
    if (c == '\n' && (i == 0 || data[i - 1] != '\r')) {
      why = "a line of the request head ends in a bare LF (CRLF is required)";
      return 400;
    }
    if (scan.request_line_done) continue;
    if (c == '\r') {
      scan.request_line_done = true;
    } else if (c < 0x20 || c == 0x7f) {
      why = c == 0x16 && i == 0 ? "this port speaks plain HTTP (the request looks like a TLS handshake)"
                               : "a control byte in the request line";
      return 400;
    }
  }
  scan.scanned = data.size();
  return 0;
}

const std::string& HttpRequest::header(const std::string& name) const {
  static const std::string none;
  for (const auto& [k, v] : headers) {
    if (iequal(k, name)) return v;
  }
  return none;
}

}  // namespace slimkv
