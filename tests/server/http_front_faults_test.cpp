// Issue R3 high 1: nothing one connection sends, or makes throw, ends the server. An HttpFront in this process (plain
// routes, no model) whose test hook throws as one stage of a connection's handling begins — accept, head, body,
// trailers (inside Beast's parser, where basic_fields threw), write, linger — answers that connection (400 / 431
// where it was reading a request) or closes it, and serves the next one; a throw from a route is a 500. Real inputs
// too: a trailer section or a header field over the limits, which aborted the server, get 431.
#include <gtest/gtest.h>

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>

#include "server/http_front.h"
#include "server/server_process.h"

namespace slimkv::test {
namespace {

int fault_status(const std::string& reply) { return reply.size() >= 12 ? std::atoi(reply.substr(9, 3).c_str()) : 0; }

class FrontFaults : public ::testing::Test {
 protected:
  void SetUp() override {
    HttpRoutes r;
    r.handle = [](const HttpRequest& req, HttpPeer&) {
      if (req.path == "/throw") throw std::runtime_error("a route failed");
      HttpResponse res;
      res.body = "{\"echo\":" + std::to_string(req.body.size()) + "}";
      return res;
    };
    r.check_head = [](const HttpRequest& req) -> std::optional<HttpResponse> {
      if (req.path != "/missing") return std::nullopt;
      HttpResponse res;
      res.status = 404;
      return res;
    };
    r.error = [](int32_t status, const std::string& message) {
      HttpResponse res;
      res.status = status;
      res.body = "{\"error\":\"" + message + "\"}";
      return res;
    };
    r.fault_hook = [this](const char* stage) {
      const char* fail = fail_stage_.load();
      if (fail && std::strcmp(fail, stage) == 0) {
        ++thrown_;
        if (length_error_) throw std::length_error("field value too large");
        throw std::runtime_error(std::string("injected at ") + stage);
      }
    };
    HttpLimits lim;
    lim.handler_threads = 8;
    lim.max_header_bytes = max_header_bytes_;
    front_ = std::make_unique<HttpFront>(lim, std::move(r));
    port_ = front_->bind("127.0.0.1", 0);
    runner_ = std::thread([this] { front_->run(); });
  }
  void TearDown() override {
    front_->stop();
    runner_.join();
  }
  // The server still answers a plain request on a new connection.
  void expect_serving() {
    fail_stage_ = nullptr;
    const std::string r = raw_exchange(port_, "GET /ok HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    EXPECT_EQ(fault_status(r), 200) << r;
  }

  std::atomic<const char*> fail_stage_{nullptr};  // set by the test thread, read by the front's threads
  bool length_error_ = false;
  int64_t max_header_bytes_ = 64 << 10;
  std::atomic<int> thrown_{0};
  std::unique_ptr<HttpFront> front_;
  std::thread runner_;
  int port_ = 0;
};

const std::string kChunked =
    "POST /ok HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-Trailer: 1\r\n\r\n";

TEST_F(FrontFaults, AThrowInAnyStageEndsOneConnectionOnly) {
  // Reading stages: the request is answered (400), the connection closes, the server serves the next one.
  for (const char* stage : {"head", "body", "trailers"}) {
    SCOPED_TRACE(stage);
    fail_stage_ = stage;
    const int before = thrown_;
    // The body arrives after the head (its own read) so that the body stage begins on its own.
    const int fd = connect_loopback(port_);
    ASSERT_GE(fd, 0);
    const std::string head = "POST /ok HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
    ::send(fd, head.data(), head.size(), MSG_NOSIGNAL);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const std::string rest = "5\r\nhello\r\n0\r\nX-Trailer: 1\r\n\r\n";
    ::send(fd, rest.data(), rest.size(), MSG_NOSIGNAL);
    const std::string out = read_until_quiet(fd, 2000);
    ::close(fd);
    EXPECT_GT(thrown_, before);
    EXPECT_EQ(fault_status(out), 400) << out;
    EXPECT_NE(out.find("injected at"), std::string::npos) << out;
    expect_serving();
  }
  // Accept: the socket closes without an answer. Write: the answer is not sent, the connection closes. Linger
  // (after an answer sent without reading the body): the connection closes.
  for (const char* stage : {"accept", "write", "linger"}) {
    SCOPED_TRACE(stage);
    fail_stage_ = stage;
    const int before = thrown_;
    const std::string req = std::strcmp(stage, "linger") == 0
                                ? "POST /missing HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\n"
                                : "GET /ok HTTP/1.1\r\nHost: x\r\n\r\n";
    const std::string out = raw_exchange(port_, req);
    // The linger stage runs when the client's close reaches the server, which may be after our read ended.
    for (int i = 0; i < 200 && thrown_ == before; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    EXPECT_GT(thrown_, before);
    if (std::strcmp(stage, "linger") == 0) EXPECT_EQ(fault_status(out), 404) << out;  // sent before the linger began
    else EXPECT_EQ(out, "");
    expect_serving();
  }
}

TEST_F(FrontFaults, ALengthErrorFromTheParserIs431) {
  length_error_ = true;
  fail_stage_ = "trailers";
  const std::string out = raw_exchange(port_, kChunked);
  EXPECT_EQ(fault_status(out), 431) << out;
  expect_serving();
}

TEST_F(FrontFaults, ARouteThatThrowsIs500AndTheConnectionGoesOn) {
  const std::string out = raw_exchange(port_, "GET /throw HTTP/1.1\r\nHost: x\r\n\r\nGET /ok HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(fault_status(out), 500) << out;
  EXPECT_NE(out.find("HTTP/1.1 200", 12), std::string::npos) << out;  // the pipelined one after it
}

// The probe's reproduction: a trailer field of 70,000 bytes (65,600 aborted the server); the trailer section is
// bounded by --max-header-bytes and its lines by --max-header-lines.
TEST_F(FrontFaults, TrailersAreBoundedLikeHeaders) {
  const std::string start = "POST /ok HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n";
  for (size_t n : {size_t{65600}, size_t{70000}, size_t{1} << 20}) {
    const std::string out = raw_exchange(port_, start + "X-T: " + std::string(n, 'y') + "\r\n\r\n");
    EXPECT_EQ(fault_status(out), 431) << n << ": " << out.substr(0, 200);
  }
  std::string many = start;
  for (int i = 0; i < 101; ++i) many += "X-" + std::to_string(i) + ": y\r\n";
  const std::string lines = raw_exchange(port_, many + "\r\n");
  EXPECT_EQ(fault_status(lines), 431) << lines;
  EXPECT_NE(lines.find("trailer lines"), std::string::npos) << lines;
  const std::string small = raw_exchange(port_, start + "X-T: " + std::string(60000, 'y') + "\r\n\r\n", 300);
  EXPECT_EQ(fault_status(small), 200) << small.substr(0, 200);
  EXPECT_NE(small.find("{\"echo\":5}"), std::string::npos) << small.substr(0, 200);
  // A chunk-size line (its extensions) is held to the same bound.
  const std::string ext = raw_exchange(port_, "POST /ok HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5;e=" +
                                              std::string(200000, 'x') + "\r\nhello\r\n0\r\n\r\n");
  EXPECT_EQ(fault_status(ext), 431) << ext.substr(0, 200);
  expect_serving();
}

// A header field over Beast's 64 KiB per field is 431 whatever --max-header-bytes allows (a 70 KB Cookie aborted
// a server started with --max-header-bytes 1048576).
class FrontBigHeaders : public FrontFaults {
 protected:
  void SetUp() override {
    max_header_bytes_ = 1 << 20;
    FrontFaults::SetUp();
  }
};

TEST_F(FrontBigHeaders, AFieldOverTheParsersLimitIs431) {
  const std::string cookie = raw_exchange(port_, "GET /ok HTTP/1.1\r\nHost: x\r\nCookie: " + std::string(70000, 'c') +
                                                 "\r\n\r\n");
  EXPECT_EQ(fault_status(cookie), 431) << cookie.substr(0, 200);
  const std::string name = raw_exchange(port_, "GET /ok HTTP/1.1\r\nHost: x\r\nX" + std::string(70000, 'n') + ": 1\r\n\r\n");
  EXPECT_EQ(fault_status(name), 431) << name.substr(0, 200);
  const std::string fits = raw_exchange(port_, "GET /ok HTTP/1.1\r\nHost: x\r\nCookie: " + std::string(65000, 'c') +
                                               "\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(fault_status(fits), 200) << fits.substr(0, 200);
  // Trailers: each field is dropped, not stored, so a 200 KB one under a 1 MiB bound is read and ignored.
  const std::string trailer =
      raw_exchange(port_, "POST /ok HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                      "0\r\nX-T: " + std::string(200000, 'y') + "\r\n\r\n");
  EXPECT_EQ(fault_status(trailer), 200) << trailer.substr(0, 200);
  expect_serving();
}

}  // namespace
}  // namespace slimkv::test
