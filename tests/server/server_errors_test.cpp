// Every bad input gets its status and an OpenAI-shaped error ({"error": {message, type, param, code}}), and the
// server keeps serving afterwards.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>

#include "server/server_process.h"

namespace slimkv::test {
namespace {

using nlohmann::json;

void expect_error(const std::pair<int, json>& r, int status, const std::string& param = "",
                  const std::string& substring = "") {
  EXPECT_EQ(r.first, status) << r.second;
  ASSERT_TRUE(r.second.is_object() && r.second.contains("error")) << r.second;
  const json& e = r.second["error"];
  EXPECT_TRUE(e["message"].is_string() && !e["message"].get<std::string>().empty());
  EXPECT_TRUE(e["type"].is_string());
  EXPECT_TRUE(e.contains("param") && e.contains("code"));
  if (!param.empty()) {
    EXPECT_EQ(e["param"], param) << e;
  }
  if (!substring.empty()) {
    EXPECT_NE(e["message"].get<std::string>().find(substring), std::string::npos) << e;
  }
}

struct ServerErrorsTag {
  static std::vector<std::string> server_args() { return {"--max-body-bytes", "4096"}; }
};
using ServerErrors = SharedServerTest<ServerErrorsTag>;

TEST_F(ServerErrors, InvalidJsonAndWrongTypes) {
  expect_error(server_->post("/v1/completions", std::string("{\"prompt\": ")), 400, "", "not valid JSON");
  expect_error(server_->post("/v1/completions", std::string("[1, 2]")), 400);
  expect_error(server_->post("/v1/completions", json{{"prompt", 5}}), 400, "prompt");
  expect_error(server_->post("/v1/completions", json{{"prompt", "hi"}, {"max_tokens", "ten"}}), 400, "max_tokens");
  expect_error(server_->post("/v1/completions", json{{"prompt", "hi"}, {"temperature", "hot"}}), 400, "temperature");
  expect_error(server_->post("/v1/completions", json{{"prompt", "hi"}, {"stream", "yes"}}), 400, "stream");
  expect_error(server_->post("/v1/completions", json{{"prompt", "hi"}, {"stop", 3}}), 400, "stop");
  expect_error(server_->post("/v1/completions", json{{"prompt", "hi"}, {"seed", "x"}}), 400, "seed");
  expect_error(server_->post("/v1/completions", json{{"prompt", "hi"}, {"model", 7}}), 400, "model");
  expect_error(server_->post("/v1/chat/completions", json{{"messages", "hi"}}), 400, "messages");
  expect_error(server_->post("/v1/chat/completions", json{{"messages", {{{"role", "wizard"}, {"content", "x"}}}}}),
               400, "messages");
  expect_error(server_->post("/v1/chat/completions", json{{"prompt", "hi"}}), 400, "messages");
}

TEST_F(ServerErrors, NegativeOrAbsurdNumbers) {
  expect_error(server_->post("/v1/completions", json{{"prompt", "hi"}, {"max_tokens", -1}}), 400, "max_tokens");
  expect_error(server_->post("/v1/completions", json{{"prompt", "hi"}, {"max_tokens", 0}}), 400, "max_tokens");
  expect_error(server_->post("/v1/completions", std::string(R"({"prompt": "hi", "max_tokens": 1e300})")), 400,
               "max_tokens");
  expect_error(server_->post("/v1/completions", std::string(R"({"prompt": "hi", "max_tokens": 99999999999999999999})")),
               400, "max_tokens");
  expect_error(server_->post("/v1/completions", json{{"prompt", "hi"}, {"temperature", -0.5}}), 400, "temperature");
  expect_error(server_->post("/v1/completions", json{{"prompt", "hi"}, {"temperature", 1e9}}), 400, "temperature");
  expect_error(server_->post("/v1/completions", json{{"prompt", "hi"}, {"top_p", 0}}), 400, "top_p");
  expect_error(server_->post("/v1/completions", json{{"prompt", "hi"}, {"top_p", 1.5}}), 400, "top_p");
  expect_error(server_->post("/v1/completions", json{{"prompt", "hi"}, {"n", 0}}), 400, "n");
  expect_error(server_->post("/v1/completions", json{{"prompt", "hi"}, {"n", 100000}}), 400, "n");
  expect_error(server_->post("/v1/completions", json{{"prompt", "hi"}, {"logprobs", 1000}}), 400, "logprobs");
  expect_error(server_->post("/v1/completions", json{{"prompt", "hi"}, {"min_tokens", -3}}), 400, "min_tokens");
  expect_error(server_->post("/v1/completions", json{{"prompt", "hi"}, {"max_tokens", 4}, {"min_tokens", 9}}), 400,
               "min_tokens");
}

TEST_F(ServerErrors, EmptyPromptsAndOutOfVocabularyTokens) {
  expect_error(server_->post("/v1/completions", json{{"prompt", ""}}), 400, "prompt", "empty");
  expect_error(server_->post("/v1/completions", json{{"prompt", json::array()}}), 400, "prompt", "empty");
  expect_error(server_->post("/v1/completions", json{{"prompt", {""}}}), 400, "prompt", "empty");
  expect_error(server_->post("/v1/completions", json{{"prompt", {1, 99999}}}), 400, "prompt", "outside the vocabulary");
  expect_error(server_->post("/v1/completions", json{{"prompt", {1, -2}}}), 400, "prompt", "outside the vocabulary");
  expect_error(server_->post("/v1/chat/completions", json{{"messages", json::array()}}), 400, "messages");
}

TEST_F(ServerErrors, ContextLengthUsesTheWordingClientsLookFor) {
  auto r = server_->post("/v1/completions", json{{"prompt", "Once upon a time"}, {"max_tokens", 600}});
  expect_error(r, 400, "prompt", "This model's maximum context length is 512 tokens. However, you requested 605 tokens");
  std::string long_prompt;
  for (int i = 0; i < 300; ++i) long_prompt += "dog ";
  expect_error(server_->post("/v1/chat/completions",
                             json{{"messages", {{{"role", "user"}, {"content", long_prompt}}}}, {"max_tokens", 400}}),
               400, "messages", "maximum context length is 512 tokens");
}

TEST_F(ServerErrors, UnknownModelRouteAndTooLargeBody) {
  expect_error(server_->post("/v1/completions", json{{"prompt", "hi"}, {"model", "gpt-17"}}), 404, "model");
  int status = 0;
  auto body = json::parse(server_->get("/v1/nothing", &status));
  EXPECT_EQ(status, 404);
  EXPECT_TRUE(body.contains("error"));
  expect_error(server_->post("/v1/completions", json{{"prompt", std::string(8000, 'a')}}), 413);
  EXPECT_EQ(server_->post("/v1/completions", json{{"prompt", "still serving"}, {"max_tokens", 2}}).first, 200);
}

// Issue R defect 4: the library checks its body limit only against a Content-Length; a chunked body was buffered
// whole (300 MB seen) and answered 400. Now it is read through a limit: 413, without reading the rest.
// (Reads until the server closes, unlike server_process.h's raw_exchange, which reads until it goes quiet.)
std::string exchange_until_closed(int port, const std::string& request) {
  const int fd = connect_loopback(port);
  if (fd < 0) return "";
  ::send(fd, request.data(), request.size(), MSG_NOSIGNAL);  // may stop early once the server closes
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return out;
}

std::string chunked_post(const std::string& body, size_t chunk) {
  std::string r = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
  for (size_t i = 0; i < body.size(); i += chunk) {
    const std::string part = body.substr(i, chunk);
    char len[32];
    std::snprintf(len, sizeof len, "%zx\r\n", part.size());
    r += len + part + "\r\n";
  }
  return r + "0\r\n\r\n";
}

TEST_F(ServerErrors, ChunkedBodiesObeyTheBodyLimit) {
  const std::string small = json{{"prompt", "hi"}, {"max_tokens", 2}}.dump();
  std::string r = exchange_until_closed(server_->port(), chunked_post(small, 7));
  EXPECT_EQ(r.rfind("HTTP/1.1 200", 0), 0u) << r.substr(0, 200);
  const std::string big = json{{"prompt", std::string(64 << 10, 'a')}}.dump();  // 64 KB against a 4 KB limit
  r = exchange_until_closed(server_->port(), chunked_post(big, 1000));
  EXPECT_EQ(r.rfind("HTTP/1.1 413", 0), 0u) << r.substr(0, 200);
  EXPECT_NE(r.find("--max-body-bytes"), std::string::npos) << r.substr(0, 400);
  EXPECT_EQ(server_->post("/v1/completions", json{{"prompt", "still serving"}, {"max_tokens", 2}}).first, 200);
}

// Issue R defect 10: framing the library took leniently is refused at once, before any body is read (a missing
// Content-Length used to wait for the 30 s read timeout, -5 and 2^64 likewise, two lengths were accepted), and so
// are malformed header bytes (a bare CR or a NUL).
TEST_F(ServerErrors, BadFramingAndHeaderBytesAreRefusedAtOnce) {
  const std::string head = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n";
  const std::string body = json{{"prompt", "hi"}, {"max_tokens", 2}}.dump();
  const std::string len = "Content-Length: " + std::to_string(body.size()) + "\r\n";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "HTTP/1.1 411"},
      {"Content-Length: -5\r\n", "HTTP/1.1 400"},
      {"Content-Length: 18446744073709551616\r\n", "HTTP/1.1 400"},
      {"Content-Length: 5, 5\r\n", "HTTP/1.1 400"},
      {len + "Content-Length: 3\r\n", "HTTP/1.1 400"},
      {len + "Transfer-Encoding: chunked\r\n", "HTTP/1.1 400"},
      {"Content-Length: 999999999\r\n", "HTTP/1.1 413"},
      {std::string("X-A: b\rX-C: d\r\n") + len, "HTTP/1.1 400"},
      {std::string("X-A: b\0c\r\n", 12) + len, "HTTP/1.1 400"},
  };
  for (const auto& [headers, want] : cases) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::string r = exchange_until_closed(server_->port(), head + headers + "Connection: close\r\n\r\n" + body);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(r.rfind(want, 0), 0u) << headers << " -> " << r.substr(0, 120);
    EXPECT_LT(s, 5.0) << headers << ": answered only after " << s << " s";
    EXPECT_NE(r.find("\"error\""), std::string::npos) << headers;
  }
  EXPECT_EQ(exchange_until_closed(server_->port(), head + len + "Connection: close\r\n\r\n" + body).rfind("HTTP/1.1 200", 0),
            0u);
}

// Issue R defect 10: fields this server does not implement are refused with a 400 naming them, never ignored;
// their "off" values pass (penalties and logit_bias are implemented since issue M: server_sampling_test.cpp).
// JSON errors do not leak the library's exception tags.
TEST_F(ServerErrors, UnsupportedFieldsAreRefusedNotIgnored) {
  const json base = {{"prompt", "hi"}, {"max_tokens", 2}};
  for (const auto& [name, value] :
       std::vector<std::pair<std::string, json>>{{"echo", true}, {"best_of", 3}, {"suffix", "end"},
                                                 {"tools", json::array({{{"type", "function"}}})}}) {
    json b = base;
    b[name] = value;
    expect_error(server_->post("/v1/completions", b), 400, name, "not supported");
  }
  json off = base;
  off["echo"] = false;
  off["logit_bias"] = json::object();
  off["presence_penalty"] = 0;
  off["best_of"] = 1;
  off["response_format"] = {{"type", "text"}};
  off["tools"] = json::array();
  EXPECT_EQ(server_->post("/v1/completions", off).first, 200);
  auto r = server_->post("/v1/completions", std::string("{\"prompt\": "));
  EXPECT_EQ(r.first, 400);
  EXPECT_EQ(r.second.dump().find("json.exception"), std::string::npos) << r.second.dump();
}

TEST(ServerAuth, ApiKeysOnEveryRouteButHealth) {
  SKIP_IF_MISSING(default_model());
  ServerProcess s({"--api-key", "sk-right", "--api-key", "sk-second"});
  const json body = {{"prompt", "hi"}, {"max_tokens", 2}};
  expect_error(s.post("/v1/completions", body.dump()), 401);
  expect_error(s.post("/v1/completions", body.dump(), {{"Authorization", "Bearer sk-wrong"}}), 401);
  expect_error(s.post("/v1/chat/completions", body.dump(), {{"Authorization", "sk-right"}}), 401);
  expect_error(s.post("/v1/completions", body.dump(), {{"Authorization", "Bearer sk-righ"}}), 401);
  // RFC 7235: the scheme is case-insensitive; a 401 names the scheme it wants.
  EXPECT_EQ(s.post("/v1/completions", body.dump(), {{"Authorization", "bearer sk-right"}}).first, 200);
  auto unauth = s.client().Post("/v1/completions", body.dump(), "application/json");
  ASSERT_TRUE(unauth);
  EXPECT_EQ(unauth->get_header_value("WWW-Authenticate"), "Bearer");
  EXPECT_EQ(s.post("/v1/completions", body.dump(), {{"Authorization", "Bearer sk-right"}}).first, 200);
  EXPECT_EQ(s.post("/v1/completions", body.dump(), {{"Authorization", "Bearer sk-second"}}).first, 200);
  int status = 0;
  s.get("/v1/models", &status);
  EXPECT_EQ(status, 401);
  s.get("/metrics", &status);
  EXPECT_EQ(status, 401);
  s.get("/health", &status);
  EXPECT_EQ(status, 200);
  // The dashboard's page is static and needs no key (a browser cannot send one for a page); its requests to
  // /metrics carry the key from the page's fragment.
  const std::string page = s.get("/dashboard", &status);
  EXPECT_EQ(status, 200);
  EXPECT_NE(page.find("<svg"), std::string::npos);
  EXPECT_NE(page.find("\"ttft_ms\":500"), std::string::npos) << "the seed's thresholds filled in";
  EXPECT_EQ(page.find("THRESHOLDS_JSON"), std::string::npos);
}

TEST(ServerAuth, KeysFromAFile) {
  SKIP_IF_MISSING(default_model());
  const auto path = std::filesystem::temp_directory_path() / ("slimkv-keys-" + std::to_string(::getpid()));
  std::ofstream(path) << "# keys\nsk-from-file\n\n";
  ServerProcess s({"--api-key-file", path.string()});
  const std::string body = json{{"prompt", "hi"}, {"max_tokens", 2}}.dump();
  EXPECT_EQ(s.post("/v1/completions", body, {{"Authorization", "Bearer sk-from-file"}}).first, 200);
  expect_error(s.post("/v1/completions", body, {{"Authorization", "Bearer # keys"}}), 401);
  std::filesystem::remove(path);
}

TEST(ServerDeadline, NonStreamingRequestsTimeOutAndFreeTheirBlocks) {
  SKIP_IF_MISSING(default_model());
  ServerProcess s({"--request-timeout", "0.001"});
  auto r = s.post("/v1/completions", json{{"prompt", "Once"}, {"max_tokens", 500}, {"ignore_eos", true}, {"n", 4}});
  expect_error(r, 504, "", "request-timeout");
  for (int i = 0; i < 100; ++i) {  // aborted at once: nothing left running or holding blocks
    std::string m = s.get("/metrics");
    if (m.find("slimkv:num_requests_running{model_name=\"stories260K\"} 0\n") != std::string::npos &&
        m.find("slimkv:kv_cache_usage_perc{model_name=\"stories260K\"} 0\n") != std::string::npos) {
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ADD_FAILURE() << "requests still running after the deadline: " << s.get("/metrics");
}

}  // namespace
}  // namespace slimkv::test
