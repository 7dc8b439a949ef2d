// The disk tier on the real binary (issue T): a long prompt's prefix blocks saved when the server stops come back
// after a restart (a prefix-cache hit, the same greedy text), counted in /metrics; a bad tier flag fails the start.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "server_process.h"

namespace slimkv::test {
namespace {

using nlohmann::json;

const json kPrompt = {{"prompt", "Once upon a time, there was a little girl named Lily. She loved to play outside in "
                                 "the park with her friends. One day, she saw a big red ball under a tree and she "
                                 "wanted to play with it, but the ball belonged to a boy named Tom."},
                      {"max_tokens", 16}, {"temperature", 0}};

TEST(ServerKvOffload, APromptsPrefixSurvivesARestart) {
  SKIP_IF_MISSING(default_model());
  const std::string dir = ::testing::TempDir() + "/serve-tier-" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  const std::vector<std::string> flags = {"--kv-offload-dir", dir, "--block-size", "16"};
  std::string first_text;
  {
    ServerProcess s(flags);
    auto [st, r] = s.post("/v1/completions", kPrompt);
    ASSERT_EQ(st, 200) << r.dump();
    first_text = r["choices"][0]["text"];
    EXPECT_EQ(r["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
    ASSERT_EQ(::kill(s.pid(), SIGTERM), 0);
    EXPECT_EQ(s.wait_exit(10000), 0) << s.log();
  }
  ServerProcess s(flags);
  auto [st, r] = s.post("/v1/completions", kPrompt);
  ASSERT_EQ(st, 200) << r.dump();
  EXPECT_EQ(r["choices"][0]["text"], first_text);
  EXPECT_GT(r["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(), 0) << r.dump();
  const std::string m = s.get("/metrics");
  EXPECT_NE(m.find("slimkv:kv_offload_hits_total{model_name=\"stories260K\",tier=\"disk\"}"), std::string::npos) << m;
  EXPECT_EQ(m.find("slimkv:kv_offload_hits_total{model_name=\"stories260K\",tier=\"disk\"} 0\n"), std::string::npos);
}

TEST(ServerKvOffload, ABadTierFlagFailsTheStart) {
  SKIP_IF_MISSING(default_model());
  EXPECT_THROW(ServerProcess({"--kv-offload-dir", "/proc/no-such-place/tier"}), std::runtime_error);
  EXPECT_THROW(ServerProcess({"--kv-offload-dir", "/tmp/x", "--no-enable-prefix-caching"}), std::runtime_error);
}

}  // namespace
}  // namespace slimkv::test
