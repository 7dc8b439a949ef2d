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

// Speculative decoding on the recurrent state (issue SD): a server whose model drafts for itself (k = 4), its
// requests sampled at temperature 0.3 with seeds, so verification stops at every row — four concurrent requests in
// a pool as small as the suite's (preempted, their draft states freed and recomputed) give the plain server's texts, streamed
// or not, with drafts accepted, and every block (draft states included) is free at the end.
TEST_F(ServerQwen3Next, SpeculativeSampledTextsEqualThePlainServersAndFreeEveryBlock) {
  const json spec = {{"method", "draft_model"}, {"model", q3n_server_model()}, {"num_speculative_tokens", 4},
                     {"adaptive", false}};
  ServerProcess s({"--max-num-batched-tokens", "64", "--max-model-len", "512", "--kv-cache-memory", "0.0024",
                   "--speculative-config", spec.dump()},  // half for the draft's pool: the target's as the suite's
                  q3n_server_model());
  std::vector<json> bodies;
  std::vector<std::string> plain;
  for (int i = 0; i < 4; ++i) {
    bodies.push_back({{"prompt", q3n_prompt(300, i + 2)}, {"max_tokens", 48}, {"temperature", 0.3},
                      {"seed", 100 + i}, {"ignore_eos", true}});
    plain.push_back(complete(bodies.back())["choices"][0]["text"]);
  }
  std::vector<std::future<std::pair<int, json>>> together;
  for (const json& b : bodies) {
    together.push_back(std::async(std::launch::async, [&s, b] { return s.post("/v1/completions", b); }));
  }
  for (int i = 0; i < 4; ++i) {
    auto [status, r] = together[i].get();
    ASSERT_EQ(status, 200) << r.dump();
    EXPECT_EQ(r["choices"][0]["text"], plain[i]) << "request " << i;
  }
  const json streamed = expect_streaming_equals_plain(s, bodies[0]);
  EXPECT_EQ(streamed["choices"][0]["text"], plain[0]);
  const std::string m = s.get("/metrics");
  const double drafted = q3n_metric(m, "slimkv:spec_decode_num_draft_tokens_total");
  const double accepted = q3n_metric(m, "slimkv:spec_decode_num_accepted_tokens_total");
  std::printf("drafted %.0f, accepted %.0f, preemptions %.0f\n", drafted, accepted,
              q3n_metric(m, "slimkv:num_preemptions_total"));
  EXPECT_GT(accepted, 0) << m;
  EXPECT_LT(accepted, drafted) << m;
  EXPECT_GT(q3n_metric(m, "slimkv:num_preemptions_total"), 0) << "four 348-token requests should preempt: " << m;
  EXPECT_EQ(q3n_metric(m, "slimkv:kv_cache_usage_perc"), 0) << m;
}

}  // namespace
}  // namespace slimkv::test
