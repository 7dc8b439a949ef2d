// Speculative decoding on the real binary (issue SD): with --speculative-config a greedy completion's text equals
// the plain server's, streamed or not; a seeded sampled one repeats itself streamed or not; /metrics' spec-decode
// counters balance (accepted <= drafted, accepted by position sums to accepted) and a request that opts out adds
// nothing to them; a client hanging up mid-speculation leaves no request running and no block held.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <future>
#include <regex>

#include "server_process.h"

namespace slimkv::test {
namespace {

using nlohmann::json;

const std::vector<std::string> kSpec = {"--speculative-config",
                                        R"({"method": "ngram", "num_speculative_tokens": 4, "adaptive": false})"};
// stories260K's own loop: the quoted sentence comes back, so prompt lookup finds drafts.
const std::string kQuoting = "Lily saw a big red ball. Lily saw a big red ball. Lily saw a big red ball. Lily saw";

// The sum of every sample of a metric family (all label sets), or -1 when it is absent.
double metric_sum(const std::string& text, const std::string& name) {
  const std::regex re("^" + name + "(\\{[^}]*\\})? ([0-9.e+-]+)$", std::regex::multiline);
  double sum = -1;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator(); ++it) {
    sum = std::max(sum, 0.0) + std::stod((*it)[2]);
  }
  return sum;
}

// A server without --speculative-config: its text for body.
std::string plain_servers_text(const json& body) {
  ServerProcess plain;
  return plain.post("/v1/completions", body).second["choices"][0]["text"];
}

TEST(ServerSpeculative, GreedyTextEqualsThePlainServersStreamedOrNotAndTheCountersBalance) {
  SKIP_IF_MISSING(default_model());
  const json body = {{"prompt", kQuoting}, {"max_tokens", 48}, {"temperature", 0}, {"ignore_eos", true}};
  const std::string plain_text = plain_servers_text(body);
  ServerProcess s(kSpec);
  const json r = expect_streaming_equals_plain(s, body);
  EXPECT_EQ(r["choices"][0]["text"], plain_text);
  EXPECT_EQ(r["usage"]["completion_tokens"], 48);
  const std::string m = s.get("/metrics");
  const double drafts = metric_sum(m, "slimkv:spec_decode_num_drafts_total");
  const double drafted = metric_sum(m, "slimkv:spec_decode_num_draft_tokens_total");
  const double accepted = metric_sum(m, "slimkv:spec_decode_num_accepted_tokens_total");
  EXPECT_GT(drafts, 0) << m;
  EXPECT_GT(accepted, 0) << "the quoted sentence is drafted and kept";
  EXPECT_LE(accepted, drafted);
  EXPECT_LE(drafted, 4 * drafts) << "at most k drafts a verify chunk";
  EXPECT_EQ(metric_sum(m, "slimkv:spec_decode_num_accepted_tokens_per_pos_total"), accepted);
  // a request that opts out adds nothing
  json off = body;
  off["speculative"] = false;
  EXPECT_EQ(s.post("/v1/completions", off).second["choices"][0]["text"], plain_text);
  EXPECT_EQ(metric_sum(s.get("/metrics"), "slimkv:spec_decode_num_drafts_total"), drafts);
}

// The draft-model method on the real binary: stories260K as its own draft, the plain server's text.
TEST(ServerSpeculative, ADraftModelGivesThePlainServersText) {
  SKIP_IF_MISSING(default_model());
  const json body = {{"prompt", kQuoting}, {"max_tokens", 32}, {"temperature", 0}, {"ignore_eos", true}};
  const std::string plain_text = plain_servers_text(body);
  ServerProcess s({"--speculative-config", R"({"method": "draft_model", "model": ")" + default_model() +
                                               R"(", "num_speculative_tokens": 3, "adaptive": false})"});
  EXPECT_EQ(expect_streaming_equals_plain(s, body)["choices"][0]["text"], plain_text);
  const std::string m = s.get("/metrics");
  EXPECT_GT(metric_sum(m, "slimkv:spec_decode_num_accepted_tokens_total"), 0) << m;
}

// The MTP method on the real binary: kjv-4k-mtp's own head drafts; the plain server's text streamed or not, a
// seeded sampled request repeats itself, and after concurrent requests nothing is running and no block is held.
TEST(ServerSpeculative, AnMtpHeadGivesThePlainServersTextAndFreesEveryBlock) {
  const std::string model = repo_dir() + "/models/kjv-4k-mtp/model.gguf";
  SKIP_IF_MISSING(model);
  const json body = {{"prompt", "And God said, Let there be light: and there was light."}, {"max_tokens", 40},
                     {"temperature", 0}, {"ignore_eos", true}};
  std::string plain_text;
  {
    ServerProcess plain({}, model);
    plain_text = plain.post("/v1/completions", body).second["choices"][0]["text"];
  }
  ServerProcess s({"--speculative-config", R"({"method": "mtp", "num_speculative_tokens": 2, "adaptive": false})",
                   "--served-model-name", "kjv-4k-mtp"},
                  model);
  EXPECT_EQ(expect_streaming_equals_plain(s, body)["choices"][0]["text"], plain_text);
  json sampled = body;
  sampled["temperature"] = 0.5;
  std::vector<std::future<std::string>> at_once;  // four seeded requests at once (lanes side by side) ...
  for (int seed = 1; seed <= 4; ++seed) {
    sampled["seed"] = seed;
    at_once.push_back(std::async(std::launch::async, [&s, b = sampled] {
      return s.post("/v1/completions", b).second["choices"][0]["text"].get<std::string>();
    }));
  }
  for (int seed = 1; seed <= 4; ++seed) {  // ... repeat one by one, streamed or not
    sampled["seed"] = seed;
    EXPECT_EQ(expect_streaming_equals_plain(s, sampled)["choices"][0]["text"], at_once[seed - 1].get()) << seed;
  }
  const std::string m = s.get("/metrics");
  const double accepted = metric_sum(m, "slimkv:spec_decode_num_accepted_tokens_total");
  EXPECT_GT(accepted, 0) << m;
  EXPECT_LE(accepted, metric_sum(m, "slimkv:spec_decode_num_draft_tokens_total"));
  EXPECT_NE(m.find("slimkv:num_requests_running{model_name=\"kjv-4k-mtp\"} 0\n"), std::string::npos) << m;
  EXPECT_NE(m.find("slimkv:kv_cache_usage_perc{model_name=\"kjv-4k-mtp\"} 0\n"), std::string::npos) << m;
}

TEST(ServerSpeculative, SeededSampledRequestsSpeculateAndRepeatStreamedOrNot) {
  SKIP_IF_MISSING(default_model());
  ServerProcess s(kSpec);
  const json body = {{"prompt", kQuoting}, {"max_tokens", 48}, {"temperature", 0.5}, {"seed", 7},
                     {"ignore_eos", true}};
  const json r = expect_streaming_equals_plain(s, body);
  EXPECT_EQ(r["usage"]["completion_tokens"], 48);
  EXPECT_GT(metric_sum(s.get("/metrics"), "slimkv:spec_decode_num_drafts_total"), 0);
}

TEST(ServerSpeculative, AClientHangingUpMidSpeculationFreesEveryBlock) {
  SKIP_IF_MISSING(default_model());
  std::vector<std::string> flags = kSpec;
  flags.insert(flags.end(), {"--max-num-seqs", "1"});  // 16 choices x 450 tokens, one at a time: seconds of work
  ServerProcess s(flags);
  const std::string body = json{{"prompt", kQuoting}, {"max_tokens", 450}, {"temperature", 0},
                                {"ignore_eos", true}, {"stream", true}, {"n", 16}}.dump();
  const int fd = connect_loopback(s.port());
  ASSERT_GE(fd, 0);
  const std::string req = "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                          "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  ASSERT_EQ(::send(fd, req.data(), req.size(), MSG_NOSIGNAL), static_cast<ssize_t>(req.size()));
  bool speculating = false;  // verify chunks under way for this request
  for (int i = 0; i < 1000 && !speculating; ++i) {
    speculating = metric_sum(s.get("/metrics"), "slimkv:spec_decode_num_drafts_total") > 20;
    if (!speculating) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(speculating) << s.get("/metrics");
  ::close(fd);
  std::string m;
  for (int i = 0; i < 300; ++i) {
    m = s.get("/metrics");
    if (m.find("slimkv:num_requests_running{model_name=\"stories260K\"} 0\n") != std::string::npos &&
        m.find("slimkv:kv_cache_usage_perc{model_name=\"stories260K\"} 0\n") != std::string::npos) {
      EXPECT_GT(metric_sum(m, "slimkv:request_success_total\\{[^}]*finished_reason=\"abort\"[^}]*\\}"), 0)
          << "choices were aborted, not finished: " << m;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ADD_FAILURE() << "still running or holding blocks after the client left: " << m;
}

}  // namespace
}  // namespace slimkv::test
