// The real server on the gpt-oss test model (tests/gptoss_model.h: sinks, alternating 128-token windows, MoE with
// biases and the clamped SwiGLU): streaming equals non-streaming across the window, concurrent requests equal lone
// ones (continuous batching), a repeated prompt hits the prefix cache, and a KV pool too small for every request
// at once preempts and still gives each request its lone tokens.
#include <gtest/gtest.h>

#include <future>

#include "gptoss_model.h"
#include "server/server_process.h"

namespace slimkv::test {
namespace {

using nlohmann::json;

std::string gptoss_path() {
  static const std::string p = [] {
    const std::string path = ::testing::TempDir() + "/gptoss-server-" + std::to_string(::getpid()) + ".gguf";
    gptoss::write_model(path, DType::F32);
    return path;
  }();
  return p;
}

std::vector<int> gptoss_prompt(int n, int seed) {
  std::vector<int> ids = {1};
  for (int i = 1; i < n; ++i) ids.push_back(3 + (seed * 131 + i * 37) % 500);
  return ids;
}

double metric(const std::string& text, const std::string& name) {
  const size_t at = text.find("\n" + name + "{");
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(text.find("} ", at) + 2));
}

class ServerGptOss : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    SKIP_IF_MISSING(models_dir() + "/synthetic/llama/llama-f32.gguf");  // the vocabulary the model carries
    // 0.0015 GiB = 196 blocks of 8 tokens x 8 KiB: a 300-token request holds at most ~60, four at once ~240.
    server_ = new ServerProcess({"--max-num-batched-tokens", "64", "--max-model-len", "512", "--kv-cache-memory",
                                 "0.0015"},
                                gptoss_path());
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
    std::remove(gptoss_path().c_str());
  }
  void SetUp() override {
    if (!server_) GTEST_SKIP() << "no server";
  }
  static json complete(const json& body) {
    auto [status, r] = server_->post("/v1/completions", body);
    EXPECT_EQ(status, 200) << r.dump();
    return r;
  }
  static inline ServerProcess* server_ = nullptr;
};

TEST_F(ServerGptOss, StreamingEqualsNonStreamingAcrossTheWindow) {
  const json body = {{"prompt", gptoss_prompt(200, 1)}, {"max_tokens", 24}, {"temperature", 0}, {"ignore_eos", true}};
  const json r = expect_streaming_equals_plain(*server_, body);
  EXPECT_EQ(r["usage"]["completion_tokens"], 24);
}

TEST_F(ServerGptOss, ConcurrentRequestsEqualLoneOnesWithPrefixHitsAndPreemption) {
  std::vector<json> bodies;
  std::vector<std::string> alone;
  for (int i = 0; i < 4; ++i) {
    bodies.push_back({{"prompt", gptoss_prompt(300, i + 2)}, {"max_tokens", 12}, {"temperature", 0},
                      {"ignore_eos", true}});
    alone.push_back(complete(bodies.back())["choices"][0]["text"]);
  }
  const std::string before = server_->get("/metrics");
  std::vector<std::future<json>> together;
  for (const json& b : bodies) together.push_back(std::async(std::launch::async, [b] { return complete(b); }));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(together[i].get()["choices"][0]["text"], alone[i]) << "request " << i;
  const std::string after = server_->get("/metrics");
  EXPECT_GT(metric(after, "slimkv:prefix_cache_hits_total"), metric(before, "slimkv:prefix_cache_hits_total"))
      << "the repeated prompts should hit the prefix cache";
  EXPECT_GT(metric(after, "slimkv:num_preemptions_total"), metric(before, "slimkv:num_preemptions_total"))
      << "four 312-token requests in 196 blocks should preempt";
}

}  // namespace
}  // namespace slimkv::test
