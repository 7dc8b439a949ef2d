// The framing parser of one request's body (Content-Length or chunked), on Beast's basic_parser: the head was
// checked already (http_head.h), so its fields are only read for framing and stored nowhere; the body is kept as one
// string; a chunked body's trailer fields are counted against the head's limits (lines; bytes are bounded by the
// caller's buffer check) and dropped — never inserted into Beast's basic_fields, whose 64 KiB field limit throws.
// Internal to the front (http_connection.cpp). Must not know: sockets, routes or JSON.
#pragma once
#include <boost/beast/http/basic_parser.hpp>
#include <boost/beast/http/error.hpp>

#include <cstdint>
#include <functional>
#include <string>

namespace slimkv::http_front {

class BodyParser : public boost::beast::http::basic_parser<true> {
 public:
  using error_code = boost::beast::error_code;
  using string_view = boost::beast::string_view;

  // Trailer lines past max_trailer_lines end the parse with http::error::header_limit (trailer_lines_over() true).
  // fault_hook (tests; may be empty) is called with "trailers" for each trailer field.
  BodyParser(int32_t max_trailer_lines, const std::function<void(const char*)>& fault_hook)
      : max_trailer_lines_(max_trailer_lines), fault_hook_(fault_hook) {}

  std::string take_body() { return std::move(body_); }
  bool trailer_lines_over() const { return trailer_lines_over_; }
  int32_t trailer_lines() const { return trailer_lines_; }

 private:
  void on_request_impl(boost::beast::http::verb, string_view, string_view, int, error_code&) override {}
  void on_response_impl(int, string_view, int, error_code&) override {}
  void on_field_impl(boost::beast::http::field, string_view, string_view, error_code& ec) override {
    if (!in_trailers_) return;  // the head's fields: checked and kept by parse_head
    if (fault_hook_) fault_hook_("trailers");
    if (++trailer_lines_ > max_trailer_lines_) {
      trailer_lines_over_ = true;
      ec = boost::beast::http::error::header_limit;
    }
  }
  void on_header_impl(error_code&) override { in_trailers_ = true; }  // later fields are trailers
  void on_body_init_impl(const boost::optional<std::uint64_t>& length, error_code&) override {
    if (length) body_.reserve(static_cast<size_t>(*length));  // bounded by the parser's body limit
  }
  std::size_t on_body_impl(string_view s, error_code&) override {
    body_.append(s.data(), s.size());
    return s.size();
  }
  void on_chunk_header_impl(std::uint64_t, string_view, error_code&) override {}
  std::size_t on_chunk_body_impl(std::uint64_t, string_view s, error_code&) override {
    body_.append(s.data(), s.size());
    return s.size();
  }
  void on_finish_impl(error_code&) override {}

  std::string body_;
  int32_t max_trailer_lines_;
  const std::function<void(const char*)>& fault_hook_;  // outlives the parser (the front's routes)
  int32_t trailer_lines_ = 0;
  bool in_trailers_ = false;
  bool trailer_lines_over_ = false;
};

}  // namespace slimkv::http_front
