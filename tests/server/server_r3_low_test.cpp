// Issue R3's low findings, each on the real binary: a bare-LF head and TLS bytes get 400 at once (not at the head
// deadline); one rule for integral numbers in every integer field ("too large" past int64); a denormal repetition
// penalty is refused by its field; a text part without text names what is missing; a grammar too ambiguous names its
// field; two Authorization headers are refused; with a key set, unknown routes answer 401 before 404; /v1/models
// shows the served name, not the file's path.
#include <gtest/gtest.h>

#include <poll.h>

#include "server/server_process.h"

namespace slimkv::test {
namespace {

using nlohmann::json;

void expect_400(const std::pair<int, json>& r, const std::string& param, const std::string& words) {
  EXPECT_EQ(r.first, 400) << r.second;
  ASSERT_TRUE(r.second.contains("error")) << r.second;
  EXPECT_EQ(r.second["error"]["param"], param) << r.second;
  EXPECT_NE(r.second["error"]["message"].get<std::string>().find(words), std::string::npos) << r.second;
}

struct LowTag {
  static std::vector<std::string> server_args() { return {"--header-timeout", "10"}; }
};
using ServerR3Low = SharedServerTest<LowTag>;

TEST_F(ServerR3Low, HeadsThatCanNeverParseAre400AtOnce) {
  for (const std::string& bytes : {std::string("GET /health HTTP/1.1\nHost: x\n\n"),
                                   std::string("GET /health HTTP/1.1\r\nHost: x\n"),  // incomplete: never ends
                                   std::string("\x16\x03\x01\x00\xc8\x01\x00\x00\xc4\x03\x03", 11)}) {
    double ms = -1;
    const std::string r = raw_exchange(server_->port(), bytes, 2000, &ms);
    EXPECT_EQ(r.rfind("HTTP/1.1 400", 0), 0u) << r;
    EXPECT_GE(ms, 0);
    EXPECT_LT(ms, 1000) << "answered at " << ms << " ms, not at once";  // the head deadline is 10 s
  }
  const std::string tls = raw_exchange(server_->port(), std::string("\x16\x03\x01\x00\xc8", 5));
  EXPECT_NE(tls.find("TLS"), std::string::npos) << tls;
}

TEST_F(ServerR3Low, OneRuleForIntegralNumbers) {
  const std::string base = R"({"prompt": "Once", "max_tokens": 2, )";
  EXPECT_EQ(server_->post("/v1/completions", base + R"("seed": 4.0})").first, 200);
  EXPECT_EQ(server_->post("/v1/completions", base + R"("n": 2.0})").first, 200);
  EXPECT_EQ(server_->post("/v1/completions", std::string(R"({"prompt": [1.0, 20, 30.0], "max_tokens": 2})")).first, 200);
  expect_400(server_->post("/v1/completions", base + R"("seed": 4.5})"), "seed", "must be an integer");
  expect_400(server_->post("/v1/completions", std::string(R"({"prompt": "Once", "max_tokens": 18446744073709551616})")),
             "max_tokens", "too large");
  expect_400(server_->post("/v1/completions", base + R"("seed": 1e300})"), "seed", "too large");
  expect_400(server_->post("/v1/completions", std::string(R"({"prompt": [1, 2.5], "max_tokens": 2})")), "prompt",
             "must be an integer");
  expect_400(server_->post("/v1/completions", std::string(R"({"prompt": "Once", "max_tokens": 1e12})")), "prompt",
             "maximum context length");  // an integral value, then the context's bound
}

TEST_F(ServerR3Low, FieldsAreNamed) {
  expect_400(server_->post("/v1/completions", std::string(R"({"prompt": "Once", "max_tokens": 2, "repetition_penalty": 1e-320})")),
             "repetition_penalty", "repetition_penalty");
  expect_400(server_->post("/v1/chat/completions",
                           json{{"messages", {{{"role", "user"}, {"content", {{{"type", "text"}}}}}}}}),
             "messages", "'text'");
  expect_400(server_->post("/v1/chat/completions",
                           json{{"messages", {{{"role", "user"}, {"content", {{{"type", "image_url"}}}}}}}}),
             "messages", "image_url");
  std::string alt = "(";
  for (int i = 0; i < 30000; ++i) alt += (i ? "|" : "") + std::string(static_cast<size_t>(i % 50 + 1), 'a') + "b";
  expect_400(server_->post("/v1/completions", json{{"prompt", "x"}, {"max_tokens", 2}, {"guided_regex", alt + ")"}}),
             "guided_regex", "ambiguous");
}

TEST_F(ServerR3Low, ModelsShowTheServedNameNotThePath) {
  const json m = json::parse(server_->get("/v1/models"));
  EXPECT_EQ(m["data"][0]["root"], m["data"][0]["id"]) << m;
  EXPECT_EQ(m.dump().find(default_model()), std::string::npos) << m;
}

TEST(ServerR3Auth, TheKeyComesFirstAndTwoAuthorizationHeadersAreRefused) {
  SKIP_IF_MISSING(default_model());
  ServerProcess server({"--api-key", "k1", "--expose-model-path"});
  const int port = server.port();
  EXPECT_EQ(raw_exchange(port, "GET /admin HTTP/1.1\r\nHost: x\r\n\r\n").rfind("HTTP/1.1 401", 0), 0u);
  EXPECT_EQ(raw_exchange(port, "DELETE /v1/models HTTP/1.1\r\nHost: x\r\n\r\n").rfind("HTTP/1.1 401", 0), 0u);
  EXPECT_EQ(raw_exchange(port, "GET /admin HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k1\r\n\r\n").rfind(
                "HTTP/1.1 404", 0), 0u);
  EXPECT_EQ(raw_exchange(port, "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").rfind("HTTP/1.1 200", 0),
            0u);  // open routes stay open
  const std::string two = raw_exchange(port, "GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k1\r\n"
                                            "Authorization: Bearer k2\r\n\r\n");
  EXPECT_EQ(two.rfind("HTTP/1.1 400", 0), 0u) << two;
  const std::string models = raw_exchange(port, "GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k1\r\n"
                                               "Connection: close\r\n\r\n");
  EXPECT_NE(models.find(default_model()), std::string::npos) << models;  // --expose-model-path
}

}  // namespace
}  // namespace slimkv::test
