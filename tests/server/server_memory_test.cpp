// Issue R3 (medium: the cost bound did not bound memory): 8 big non-streamed answers at once — the probe's shape,
// chat with n=16 and top_logprobs=20 (here 160 tokens each, ~2.7 MB an answer) — leave the server's resident set
// within 10% of its idle figure once they are done. Idle = after the same burst without logprobs, so that the KV
// pages and threads those requests use are in both figures. (Before: the answers were built as JSON trees ~10x their
// size and the allocator kept them — 8 such answers of 490 tokens left 765 MB. Peaks: scripts/bench-answer-memory.)
#include <gtest/gtest.h>

#include <fstream>
#include <future>

#include "server/server_process.h"

namespace slimkv::test {
namespace {

using nlohmann::json;

// 8 requests at once; returns their answers' bytes (each must be a 200).
int64_t burst(const ServerProcess& server, const json& body) {
  std::vector<std::future<std::pair<int, std::string>>> f;
  for (int i = 0; i < 8; ++i) {
    f.push_back(std::async(std::launch::async, [&] {
      auto c = server.client();
      c.set_read_timeout(300, 0);
      auto r = c.Post("/v1/chat/completions", body.dump(), "application/json");
      return r ? std::pair{r->status, r->body} : std::pair{0, std::string()};
    }));
  }
  int64_t bytes = 0;
  for (auto& x : f) {
    auto [status, text] = x.get();
    EXPECT_EQ(status, 200) << text.substr(0, 200);
    bytes += static_cast<int64_t>(text.size());
  }
  return bytes;
}

TEST(ServerMemory, RssReturnsToIdleAfterABurstOfBigAnswers) {
  SKIP_IF_MISSING(default_model());
  ServerProcess server;
  json plain = {{"messages", {{{"role", "user"}, {"content", "Once"}}}}, {"n", 16}, {"max_tokens", 160},
                {"ignore_eos", true}};
  burst(server, plain);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const int64_t idle = process_rss_kib(server.pid());
  json big = plain;
  big["logprobs"] = true;
  big["top_logprobs"] = 20;
  const int64_t answers = burst(server, big);
  EXPECT_GT(answers, 8 * (2 << 20)) << "the answers are not as big as this test means them to be";
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const int64_t after = process_rss_kib(server.pid());
  EXPECT_LE(after, idle + idle / 10) << "idle " << idle << " KiB, after the burst " << after << " KiB, answers "
                                     << answers / 1024 << " KiB";
}

}  // namespace
}  // namespace slimkv::test
