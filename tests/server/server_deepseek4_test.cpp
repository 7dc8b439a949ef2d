// The real server on the synthetic DeepSeek-V4 model (CSA / HCA streams, indexer, hyper-connections): completions
// and chat (DeepSeek-V4's built-in chat renderer), streaming equals non-streaming, concurrent requests equal lone
// ones (continuous batching over the compressed streams), a long prompt crossing compression groups, a client
// hang-up frees its blocks, bad input is a 400.
#include <gtest/gtest.h>

#include <future>

#include "server/server_process.h"

namespace slimkv::test {
namespace {

using nlohmann::json;

const std::string kModel = models_dir() + "/synthetic/deepseek4/deepseek4-F32.gguf";

class ServerDeepseek4 : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (exists(kModel)) server_ = new ServerProcess({"--max-num-batched-tokens", "64", "--max-model-len", "4096"},
                                                    kModel);
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    if (!server_) {
      if (in_ci()) FAIL() << "missing " << kModel << " (CI is set: inputs must be present)";
      GTEST_SKIP() << "missing " << kModel;
    }
  }
  static json complete(const json& body) {
    auto [status, r] = server_->post("/v1/completions", body);
    EXPECT_EQ(status, 200) << r.dump();
    return r;
  }
  static inline ServerProcess* server_ = nullptr;
};

std::vector<int> prompt_ids(int n, int seed) {
  std::vector<int> ids = {1};
  for (int i = 1; i < n; ++i) ids.push_back(3 + (seed * 131 + i * 37) % 500);
  return ids;
}

TEST_F(ServerDeepseek4, StreamingEqualsNonStreamingAcrossCompressionGroups) {
  const json body = {{"prompt", prompt_ids(300, 1)}, {"max_tokens", 24}, {"temperature", 0}, {"ignore_eos", true}};
  const json r = expect_streaming_equals_plain(*server_, body);
  EXPECT_EQ(r["usage"]["prompt_tokens"], 300);
  EXPECT_EQ(r["usage"]["completion_tokens"], 24);
}

TEST_F(ServerDeepseek4, ConcurrentRequestsEqualLoneOnes) {
  std::vector<json> bodies;
  std::vector<std::string> alone;
  for (int i = 0; i < 4; ++i) {
    bodies.push_back({{"prompt", prompt_ids(40 + 70 * i, i + 2)}, {"max_tokens", 12}, {"temperature", 0},
                      {"ignore_eos", true}});
    alone.push_back(complete(bodies.back())["choices"][0]["text"]);
  }
  std::vector<std::future<json>> together;
  for (const json& b : bodies) together.push_back(std::async(std::launch::async, [b] { return complete(b); }));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(together[i].get()["choices"][0]["text"], alone[i]) << "request " << i;
}

TEST_F(ServerDeepseek4, ChatUsesTheDeepSeekV4RendererAndBadInputIs400) {
  auto [status, r] = server_->post("/v1/chat/completions",
                                   json{{"messages", {{{"role", "system"}, {"content", "Be brief."}},
                                                      {{"role", "user"}, {"content", "Once upon a time"}}}},
                                        {"max_tokens", 8}});
  ASSERT_EQ(status, 200) << r.dump();
  EXPECT_EQ(r["choices"][0]["message"]["role"], "assistant");
  EXPECT_GT(r["usage"]["prompt_tokens"].get<int>(), 10);  // the special-token text of the V4 format is in the prompt
  auto [bad, err] = server_->post("/v1/completions", json{{"prompt", "x"}, {"max_tokens", -3}});
  EXPECT_EQ(bad, 400);
  EXPECT_EQ(err["error"]["param"], "max_tokens") << err.dump();
}

TEST_F(ServerDeepseek4, AHangUpFreesTheBlocks) {
  {  // a streaming request abandoned after its first chunk
    const int fd = connect_loopback(server_->port());
    ASSERT_GE(fd, 0);
    const std::string body = json{{"prompt", prompt_ids(200, 9)}, {"max_tokens", 2000}, {"stream", true},
                                  {"ignore_eos", true}}.dump();
    const std::string req = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                            "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    ASSERT_EQ(::send(fd, req.data(), req.size(), 0), static_cast<ssize_t>(req.size()));
    char buf[256];
    ASSERT_GT(::recv(fd, buf, sizeof buf, 0), 0);
    ::close(fd);
  }
  bool idle = false;
  for (int i = 0; i < 100 && !idle; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const std::string m = server_->get("/metrics");
    idle = m.find("num_requests_running{model_name=\"deepseek4-F32\"} 0\n") != std::string::npos &&
           m.find("kv_cache_usage_perc{model_name=\"deepseek4-F32\"} 0\n") != std::string::npos;
  }
  EXPECT_TRUE(idle) << server_->get("/metrics");
}

}  // namespace
}  // namespace slimkv::test
