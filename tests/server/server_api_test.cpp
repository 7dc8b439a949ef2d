// The real server on stories260K: completions and chat, streaming and not, usage, stop strings, seeds, n > 1,
// prefix caching and logprobs — everything over HTTP.
#include <gtest/gtest.h>

#include "server/server_process.h"

namespace slimkv::test {
namespace {

using nlohmann::json;

struct ServerApiTag {
  static std::vector<std::string> server_args() { return {}; }
};
using ServerApi = SharedServerTest<ServerApiTag>;

// Streams `body` and returns (text, token chunks, finish_reason, usage) per choice 0.
struct Streamed {
  std::string text;
  int token_chunks = 0;
  std::string finish_reason;
  json usage;
  bool done = false, role_first = false;
};

Streamed stream(const ServerProcess& s, const std::string& path, json body) {
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  auto [status, raw] = s.post(path, body);
  EXPECT_EQ(status, 200) << raw;
  Streamed out;
  auto events = sse_events(raw.get<std::string>());
  EXPECT_GE(events.size(), 3u);
  for (size_t i = 0; i < events.size(); ++i) {
    const json& e = events[i];
    if (e == "[DONE]") {
      EXPECT_EQ(i + 1, events.size()) << "[DONE] is last";
      out.done = true;
      continue;
    }
    if (e.contains("usage") && e["choices"].empty()) {
      EXPECT_EQ(i + 2, events.size()) << "the usage chunk comes just before [DONE]";
      out.usage = e["usage"];
      continue;
    }
    const json& c = e["choices"][0];
    const bool chat = e["object"] == "chat.completion.chunk";
    if (chat && c["delta"].contains("role")) {
      out.role_first = i == 0;
      continue;
    }
    const std::string piece = chat ? c["delta"].value("content", "") : c["text"].get<std::string>();
    out.text += piece;
    if (!c["finish_reason"].is_null()) out.finish_reason = c["finish_reason"];
    if (c["finish_reason"].is_null()) ++out.token_chunks;  // the finishing chunk carries no token
  }
  return out;
}

TEST_F(ServerApi, CompletionGreedyMatchesStreamingAndUsage) {
  json body = {{"prompt", "Once upon a time"}, {"max_tokens", 24}, {"temperature", 0}};
  auto [status, r] = server_->post("/v1/completions", body);
  ASSERT_EQ(status, 200) << r;
  EXPECT_EQ(r["object"], "text_completion");
  EXPECT_EQ(r["model"], "stories260K");
  EXPECT_TRUE(r["id"].get<std::string>().rfind("cmpl-", 0) == 0);
  const std::string text = r["choices"][0]["text"];
  EXPECT_EQ(text.rfind(", there was a little girl named Lily", 0), 0u) << text;  // stories260K's greedy start
  EXPECT_EQ(r["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(r["usage"]["completion_tokens"], 24);
  EXPECT_EQ(r["usage"]["prompt_tokens"], 5);  // BOS + 4
  EXPECT_EQ(r["usage"]["total_tokens"], 29);

  Streamed s = stream(*server_, "/v1/completions", body);
  EXPECT_EQ(s.text, text);
  EXPECT_EQ(s.token_chunks, 24) << "one chunk per generated token";
  EXPECT_EQ(s.usage["completion_tokens"], 24);
  EXPECT_EQ(s.finish_reason, "length");
  EXPECT_TRUE(s.done);
}

TEST_F(ServerApi, ChatStreamingAndNot) {
  json body = {{"messages", {{{"role", "system"}, {"content", "Tell a story."}}, {{"role", "user"}, {"content", "Hi"}}}},
               {"max_completion_tokens", 12}, {"temperature", 0}};
  auto [status, r] = server_->post("/v1/chat/completions", body);
  ASSERT_EQ(status, 200) << r;
  EXPECT_EQ(r["object"], "chat.completion");
  EXPECT_EQ(r["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(r["usage"]["completion_tokens"], 12);
  Streamed s = stream(*server_, "/v1/chat/completions", body);
  EXPECT_TRUE(s.role_first) << "the first delta carries the role";
  EXPECT_EQ(s.text, r["choices"][0]["message"]["content"]);
  EXPECT_EQ(s.token_chunks, s.usage["completion_tokens"].get<int>());
  EXPECT_EQ(s.usage["prompt_tokens"], r["usage"]["prompt_tokens"]);
}

TEST_F(ServerApi, StopStringsEndTheTextAndAreNotIncluded) {
  json body = {{"prompt", "Once upon a time"}, {"max_tokens", 40}, {"temperature", 0}};
  const std::string full = server_->post("/v1/completions", body).second["choices"][0]["text"];
  const size_t at = full.find("Lily");
  ASSERT_NE(at, std::string::npos) << full;
  body["stop"] = {"Lily", "zzz-never"};
  auto [status, r] = server_->post("/v1/completions", body);
  ASSERT_EQ(status, 200) << r;
  EXPECT_EQ(r["choices"][0]["text"], full.substr(0, at));
  EXPECT_EQ(r["choices"][0]["finish_reason"], "stop");
  EXPECT_LT(r["usage"]["completion_tokens"].get<int>(), 40);
  Streamed s = stream(*server_, "/v1/completions", body);
  EXPECT_EQ(s.text, full.substr(0, at));
  EXPECT_EQ(s.finish_reason, "stop");
  EXPECT_EQ(s.token_chunks, s.usage["completion_tokens"].get<int>());
  EXPECT_EQ(s.usage["completion_tokens"], r["usage"]["completion_tokens"]);
  body["stop"] = "girl named";  // a stop string spanning several tokens, given as a plain string
  auto r2 = server_->post("/v1/completions", body).second;
  EXPECT_EQ(r2["choices"][0]["text"], full.substr(0, full.find("girl named")));
}

TEST_F(ServerApi, SeedsReproduceAndNChoicesDiffer) {
  json body = {{"prompt", "The dog"}, {"max_tokens", 20}, {"temperature", 1.0}, {"seed", 1234}};
  auto a = server_->post("/v1/completions", body).second;
  auto b = server_->post("/v1/completions", body).second;
  ASSERT_TRUE(a.contains("choices")) << a;
  EXPECT_EQ(a["choices"][0]["text"], b["choices"][0]["text"]);
  body["n"] = 3;
  auto [status, r] = server_->post("/v1/completions", body);
  ASSERT_EQ(status, 200) << r;
  ASSERT_EQ(r["choices"].size(), 3u);
  int total = 0;
  std::set<std::string> texts;
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(r["choices"][i]["index"], i);
    texts.insert(r["choices"][i]["text"].get<std::string>());
  }
  total = r["usage"]["completion_tokens"];
  EXPECT_EQ(total, 60);
  EXPECT_EQ(r["usage"]["prompt_tokens"], a["usage"]["prompt_tokens"]) << "a prompt counts once whatever n is";
  EXPECT_EQ(texts.size(), 3u) << "each choice samples with its own seed";
  EXPECT_EQ(r["choices"][0]["text"], a["choices"][0]["text"]) << "choice 0 uses the request's seed";
  auto r2 = server_->post("/v1/completions", body).second;
  EXPECT_EQ(r2["choices"], r["choices"]);
}

TEST_F(ServerApi, SecondRequestReportsCachedPrefixTokens) {
  std::string prompt = "Lily and Tom went to the park to play with the big red ball. They ran and jumped and laughed "
                       "all day long until the sun went down and it was time to go home.";
  json body = {{"prompt", prompt}, {"max_tokens", 4}, {"temperature", 0}};
  auto first = server_->post("/v1/completions", body).second;
  auto second = server_->post("/v1/completions", body).second;
  const int n_prompt = first["usage"]["prompt_tokens"];
  ASSERT_GT(n_prompt, 24);
  EXPECT_EQ(first["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
  const int cached = second["usage"]["prompt_tokens_details"]["cached_tokens"];
  EXPECT_GE(cached, n_prompt - 8) << "all full blocks but the last are reused";
  EXPECT_LT(cached, n_prompt);
  EXPECT_EQ(first["choices"], second["choices"]);
}

TEST_F(ServerApi, TokenIdPromptsAndListsOfPrompts) {
  auto [status, r] = server_->post("/v1/completions", json{{"prompt", {"Once upon", "The cat"}}, {"max_tokens", 5},
                                                          {"temperature", 0}});
  ASSERT_EQ(status, 200) << r;
  ASSERT_EQ(r["choices"].size(), 2u);
  EXPECT_EQ(r["usage"]["completion_tokens"], 10);
  auto ids = server_->post("/v1/completions", json{{"prompt", {1, 403, 407}}, {"max_tokens", 5}, {"temperature", 0}});
  EXPECT_EQ(ids.first, 200) << ids.second;
  EXPECT_EQ(ids.second["usage"]["prompt_tokens"], 3);
}

TEST_F(ServerApi, LogprobsDescribeTheChosenTokens) {
  json body = {{"prompt", "Once upon a time"}, {"max_tokens", 6}, {"temperature", 0}, {"logprobs", 2}};
  auto [status, r] = server_->post("/v1/completions", body);
  ASSERT_EQ(status, 200) << r;
  const json& lp = r["choices"][0]["logprobs"];
  ASSERT_EQ(lp["token_logprobs"].size(), 6u);
  std::string joined;
  for (size_t i = 0; i < 6; ++i) {
    joined += lp["tokens"][i].get<std::string>();
    EXPECT_LE(lp["token_logprobs"][i].get<double>(), 0.0);
    ASSERT_EQ(lp["top_logprobs"][i].size(), 2u);
    double best = -1e30;
    for (auto& [tok, v] : lp["top_logprobs"][i].items()) best = std::max(best, v.get<double>());
    EXPECT_NEAR(best, lp["token_logprobs"][i].get<double>(), 1e-5) << "greedy picks the most likely token";
  }
  EXPECT_EQ(joined, r["choices"][0]["text"]);
  json chat = {{"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"max_tokens", 3}, {"logprobs", true},
               {"top_logprobs", 1}, {"temperature", 0}};
  auto c = server_->post("/v1/chat/completions", chat).second;
  ASSERT_EQ(c["choices"][0]["logprobs"]["content"].size(), 3u) << c;
  EXPECT_EQ(c["choices"][0]["logprobs"]["content"][0]["top_logprobs"].size(), 1u);
}

TEST_F(ServerApi, ModelsAndHealth) {
  int status = 0;
  auto models = json::parse(server_->get("/v1/models", &status));
  EXPECT_EQ(status, 200);
  EXPECT_EQ(models["object"], "list");
  EXPECT_EQ(models["data"][0]["id"], "stories260K");
  EXPECT_EQ(models["data"][0]["max_model_len"], 512);
  server_->get("/health", &status);
  EXPECT_EQ(status, 200);
  auto named = server_->post("/v1/completions", json{{"model", "stories260K"}, {"prompt", "Hi"}, {"max_tokens", 2}});
  EXPECT_EQ(named.first, 200);
}

}  // namespace
}  // namespace slimkv::test
