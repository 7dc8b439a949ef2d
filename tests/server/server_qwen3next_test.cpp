// The real server on the Qwen3-Next test model (tests/qwen3next_model.h: Gated DeltaNet layers whose recurrent state
// is one KV block per sequence, and a gated full-attention layer): streaming equals non-streaming, a repeated prompt
// hits the prefix cache at its prompt boundary (the state's snapshot) with the same text, and concurrent requests in
// a KV pool too small for all of them at once (preemption: states recomputed) equal lone ones.
#include <gtest/gtest.h>

#include <future>

#include "qwen3next_model.h"
#include "server/server_process.h"

namespace slimkv::test {
namespace {

using nlohmann::json;

std::string q3n_server_model() {
  static const std::string p = [] {
    const std::string path = ::testing::TempDir() + "/qwen3next-server-" + std::to_string(::getpid()) + ".gguf";
    qwen3next::write_model(path, DType::F32);
    return path;
  }();
  return p;
}

std::vector<int> q3n_prompt(int n, int seed) {
  std::vector<int> ids = {1};
  for (int i = 1; i < n; ++i) ids.push_back(3 + (seed * 131 + i * 37) % 500);
  return ids;
}

double q3n_metric(const std::string& text, const std::string& name) {
  const size_t at = text.find("\n" + name + "{");
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(text.find("} ", at) + 2));
}

class ServerQwen3Next : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    SKIP_IF_MISSING(models_dir() + "/synthetic/llama/llama-f32.gguf");  // the vocabulary the model carries
    // 0.0012 GiB: the DeltaNet states (3 groups x 2 blocks a sequence) take up to half of it, the attention pool
    // the rest — under two sequences of --max-model-len 512 (64 blocks of 8 tokens each): four 348-token requests
    // at once need 176 attention blocks.
    server_ = new ServerProcess({"--max-num-batched-tokens", "64", "--max-model-len", "512", "--kv-cache-memory",
                                 "0.0012"},
                                q3n_server_model());
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
    std::remove(q3n_server_model().c_str());
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

TEST_F(ServerQwen3Next, StreamingEqualsNonStreaming) {
  const json body = {{"prompt", q3n_prompt(150, 1)}, {"max_tokens", 24}, {"temperature", 0}, {"ignore_eos", true}};
  const json r = expect_streaming_equals_plain(*server_, body);
  EXPECT_EQ(r["usage"]["completion_tokens"], 24);
}

TEST_F(ServerQwen3Next, ARepeatedPromptResumesFromItsStateSnapshot) {
  const json body = {{"prompt", q3n_prompt(101, 7)}, {"max_tokens", 16}, {"temperature", 0}, {"ignore_eos", true}};
  const json first = complete(body);
  const std::string before = server_->get("/metrics");
  const json second = complete(body);
  const std::string after = server_->get("/metrics");
  EXPECT_EQ(second["choices"][0]["text"], first["choices"][0]["text"]);
  EXPECT_EQ(second["usage"]["prompt_tokens_details"]["cached_tokens"], 96) << second.dump();  // (101 - 1) / 8 * 8
  EXPECT_EQ(q3n_metric(after, "slimkv:prefix_cache_hits_total") - q3n_metric(before, "slimkv:prefix_cache_hits_total"),
            96);
}

TEST_F(ServerQwen3Next, ConcurrentRequestsEqualLoneOnesUnderPreemption) {
  std::vector<json> bodies;
  std::vector<std::string> alone;
  for (int i = 0; i < 4; ++i) {
    bodies.push_back({{"prompt", q3n_prompt(300, i + 2)}, {"max_tokens", 48}, {"temperature", 0},
                      {"ignore_eos", true}});
    alone.push_back(complete(bodies.back())["choices"][0]["text"]);
  }
  const std::string before = server_->get("/metrics");
  std::vector<std::future<json>> together;
  for (const json& b : bodies) together.push_back(std::async(std::launch::async, [b] { return complete(b); }));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(together[i].get()["choices"][0]["text"], alone[i]) << "request " << i;
  const std::string after = server_->get("/metrics");
  EXPECT_GT(q3n_metric(after, "slimkv:num_preemptions_total"), q3n_metric(before, "slimkv:num_preemptions_total"))
      << "four 348-token requests (44 blocks each) in ~128 attention blocks should preempt";
}

}  // namespace
}  // namespace slimkv::test
