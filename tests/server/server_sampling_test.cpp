// Issue M §3 on the real binary: presence / frequency / repetition penalties and logit_bias change what greedy
// decoding picks (and their "off" values change nothing), an out-of-vocabulary logit_bias id or a value out of range
// is a 400 naming the field, best_of > n is refused by name, and POST /tokenize and /detokenize (vLLM's shapes)
// round-trip text and count exactly the prompt tokens a completion reports.
#include <gtest/gtest.h>

#include <set>

#include "server/server_process.h"

namespace slimkv::test {
namespace {

using nlohmann::json;

class ServerSampling : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    SKIP_IF_MISSING(default_model());
    server_ = new ServerProcess();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    if (!server_) GTEST_SKIP() << "no server";
  }
  static json ok(const json& body, const std::string& path = "/v1/completions") {
    auto [status, r] = server_->post(path, body);
    EXPECT_EQ(status, 200) << body.dump() << " -> " << r.dump();
    return r;
  }
  static json refused(const json& body, const std::string& param, const std::string& path = "/v1/completions") {
    auto [status, r] = server_->post(path, body);
    EXPECT_EQ(status, 400) << body.dump() << " -> " << r.dump();
    EXPECT_EQ(r["error"]["param"], param) << r.dump();
    return r;
  }
  // The generated tokens of a choice, as the completions logprobs list their texts (one entry per token).
  static std::vector<std::string> token_texts(const json& r) {
    std::vector<std::string> out;
    for (const auto& t : r["choices"][0]["logprobs"]["tokens"]) out.push_back(t.get<std::string>());
    return out;
  }
  static inline ServerProcess* server_ = nullptr;
};

const json kBase = {{"prompt", "Once upon a time"}, {"max_tokens", 64}, {"temperature", 0}, {"ignore_eos", true},
                    {"logprobs", 0}};

int repeats(const std::vector<std::string>& tokens) {  // generated tokens that repeat an earlier one
  return static_cast<int>(tokens.size() - std::set<std::string>(tokens.begin(), tokens.end()).size());
}

TEST_F(ServerSampling, PenaltiesChangeGreedyOutputAndTheirOffValuesDoNot) {
  const json plain = ok(kBase);
  const std::vector<std::string> plain_tokens = token_texts(plain);
  ASSERT_EQ(plain_tokens.size(), 64u);
  json off = kBase;
  off["presence_penalty"] = 0;
  off["frequency_penalty"] = 0.0;
  off["repetition_penalty"] = 1;
  off["logit_bias"] = json::object();
  EXPECT_EQ(ok(off)["choices"][0], plain["choices"][0]) << "off values must leave greedy output bit-identical";

  json freq = kBase;
  freq["frequency_penalty"] = 2.0;
  const std::vector<std::string> freq_tokens = token_texts(ok(freq));
  EXPECT_NE(freq_tokens, plain_tokens);
  EXPECT_LT(repeats(freq_tokens), repeats(plain_tokens)) << "frequency_penalty 2 must repeat fewer tokens";

  json pres = kBase;
  pres["presence_penalty"] = 2.0;
  const std::vector<std::string> pres_tokens = token_texts(ok(pres));
  EXPECT_NE(pres_tokens, plain_tokens);
  EXPECT_LT(repeats(pres_tokens), repeats(plain_tokens));

  json rep = kBase;
  rep["repetition_penalty"] = 2.0;
  const std::vector<std::string> rep_tokens = token_texts(ok(rep));
  EXPECT_NE(rep_tokens, plain_tokens);
  EXPECT_LT(repeats(rep_tokens), repeats(plain_tokens));

  // a negative frequency penalty favours what was already generated
  json neg = kBase;
  neg["frequency_penalty"] = -2.0;
  EXPECT_GT(repeats(token_texts(ok(neg))), repeats(plain_tokens));

  // the chat route takes them too
  const json chat = {{"messages", json::array({{{"role", "user"}, {"content", "Tell me a story"}}})},
                     {"max_tokens", 32}, {"temperature", 0}, {"ignore_eos", true}};
  json chat_pen = chat;
  chat_pen["frequency_penalty"] = 2.0;
  EXPECT_NE(ok(chat, "/v1/chat/completions")["choices"][0]["message"]["content"],
            ok(chat_pen, "/v1/chat/completions")["choices"][0]["message"]["content"]);
}

TEST_F(ServerSampling, LogitBiasOfPlus100MakesEveryGreedyTokenThatId) {
  const json ids = ok({{"prompt", "Once upon a time"}}, "/tokenize")["tokens"];
  for (int id : {300, 57}) {
    json b = {{"prompt", "Once upon a time"}, {"max_tokens", 8}, {"temperature", 0}, {"ignore_eos", true},
              {"logit_bias", {{std::to_string(id), 100}}}};
    const json r = ok(b);
    EXPECT_EQ(r["usage"]["completion_tokens"], 8);
    // the prompt's ids then eight times `id` decode to the prompt then the completion's text
    json all = ids;
    for (int i = 0; i < 8; ++i) all.push_back(id);
    EXPECT_EQ(ok({{"tokens", all}}, "/detokenize")["prompt"].get<std::string>(),
              "Once upon a time" + r["choices"][0]["text"].get<std::string>())
        << id;
  }
  // -100 on every id but one: every token is that one too
  json all_but = json::object();
  for (int id = 0; id < 512; ++id) {
    if (id != 57) all_but[std::to_string(id)] = -100;
  }
  const json r = ok({{"prompt", "Once upon a time"}, {"max_tokens", 4}, {"temperature", 0}, {"ignore_eos", true},
                     {"logit_bias", all_but}});
  json all = ids;
  for (int i = 0; i < 4; ++i) all.push_back(57);
  EXPECT_EQ(ok({{"tokens", all}}, "/detokenize")["prompt"].get<std::string>(),
            "Once upon a time" + r["choices"][0]["text"].get<std::string>());
}

TEST_F(ServerSampling, BadValuesAreRefusedByName) {
  const json base = {{"prompt", "hi"}, {"max_tokens", 2}};
  auto with = [&](const char* key, const json& v) {
    json b = base;
    b[key] = v;
    return b;
  };
  const json r = refused(with("logit_bias", {{"512", 5}}), "logit_bias");  // the vocabulary is 0..511
  EXPECT_NE(r["error"]["message"].get<std::string>().find("512"), std::string::npos) << r.dump();
  refused(with("logit_bias", {{"-1", 5}}), "logit_bias");
  refused(with("logit_bias", {{"7", 100.5}}), "logit_bias");
  refused(with("logit_bias", {{"7", "high"}}), "logit_bias");
  refused(with("logit_bias", {{"seven", 1}}), "logit_bias");
  refused(with("logit_bias", {{"7", 1}, {"07", 2}}), "logit_bias");
  refused(with("logit_bias", json::array({7})), "logit_bias");
  refused(with("presence_penalty", 2.5), "presence_penalty");
  refused(with("frequency_penalty", -2.01), "frequency_penalty");
  refused(with("frequency_penalty", "1"), "frequency_penalty");
  refused(with("repetition_penalty", 0), "repetition_penalty");
  refused(with("repetition_penalty", -1.2), "repetition_penalty");
  json chat = {{"messages", json::array({{{"role", "user"}, {"content", "Hi"}}})}, {"max_tokens", 2}};
  chat["logit_bias"] = {{"600", 1}};
  refused(chat, "logit_bias", "/v1/chat/completions");
  // best_of > n: nothing ranks extra choices here, so it is refused by name; best_of <= n passes
  json b = with("best_of", 3);
  b["n"] = 2;
  const json bo = refused(b, "best_of");
  EXPECT_NE(bo["error"]["message"].get<std::string>().find("best_of"), std::string::npos) << bo.dump();
  b["best_of"] = 2;
  EXPECT_EQ(ok(b)["choices"].size(), 2u);
  // penalties at the ends of their ranges are accepted
  json edge = with("presence_penalty", -2);
  edge["frequency_penalty"] = 2;
  edge["logit_bias"] = {{"0", -100}, {"511", 100}};
  ok(edge);
}

TEST_F(ServerSampling, TokenizeAndDetokenizeRoundTrip) {
  for (const std::string text : {"Once upon a time, there was a little girl named Lily.", "hi", "a  b\nc"}) {
    const json t = ok({{"prompt", text}}, "/tokenize");
    ASSERT_TRUE(t["tokens"].is_array()) << t.dump();
    EXPECT_EQ(t["count"], t["tokens"].size());
    EXPECT_EQ(t["max_model_len"], 512);
    EXPECT_EQ(t["tokens"][0], 1) << "BOS first (add_special_tokens defaults to true)";
    EXPECT_EQ(ok({{"tokens", t["tokens"]}}, "/detokenize")["prompt"], text);
    const json raw = ok({{"prompt", text}, {"add_special_tokens", false}}, "/tokenize");
    EXPECT_EQ(raw["count"].get<int>(), t["count"].get<int>() - 1);
    EXPECT_EQ(ok({{"tokens", raw["tokens"]}}, "/detokenize")["prompt"], text);
    // the count is the prompt_tokens a completion of the same prompt reports
    EXPECT_EQ(ok({{"prompt", text}, {"max_tokens", 1}})["usage"]["prompt_tokens"], t["count"]) << text;
  }
  const json strs = ok({{"prompt", "Once upon"}, {"return_token_strs", true}}, "/tokenize");
  ASSERT_EQ(strs["token_strs"].size(), strs["tokens"].size());
  EXPECT_TRUE(ok({{"prompt", "Once upon"}}, "/tokenize")["token_strs"].is_null());
  // chat: rendered by the server's template, counted as a chat completion counts it
  const json messages = json::array({{{"role", "system"}, {"content", "Be brief."}},
                                     {{"role", "user"}, {"content", "Tell me a story"}}});
  const json ct = ok({{"messages", messages}}, "/tokenize");
  EXPECT_EQ(ok({{"messages", messages}, {"max_tokens", 1}}, "/v1/chat/completions")["usage"]["prompt_tokens"],
            ct["count"]);
  const json no_gen = ok({{"messages", messages}, {"add_generation_prompt", false}}, "/tokenize");
  EXPECT_LT(no_gen["count"].get<int>(), ct["count"].get<int>());
  EXPECT_EQ(ok({{"messages", messages}, {"add_generation_prompt", false}, {"max_tokens", 1}},
               "/v1/chat/completions")["usage"]["prompt_tokens"],
            no_gen["count"]);
}

TEST_F(ServerSampling, TokenizeAndDetokenizeErrors) {
  const json d = refused({{"tokens", json::array({1, 512})}}, "tokens", "/detokenize");
  EXPECT_NE(d["error"]["message"].get<std::string>().find("512"), std::string::npos) << d.dump();
  refused({{"tokens", json::array({-3})}}, "tokens", "/detokenize");
  refused({{"tokens", json::array({1.5})}}, "tokens", "/detokenize");
  refused({{"tokens", "1 2"}}, "tokens", "/detokenize");
  refused(json::object(), "tokens", "/detokenize");
  refused(json::object(), "prompt", "/tokenize");
  refused({{"prompt", 5}}, "prompt", "/tokenize");
  refused({{"prompt", "a"}, {"messages", json::array({{{"role", "user"}, {"content", "x"}}})}}, "prompt", "/tokenize");
  refused({{"messages", json::array()}}, "messages", "/tokenize");
  refused({{"messages", json::array({{{"role", "user"}, {"content", "x"}}})}, {"chat_template", "{{ x }}"}},
          "chat_template", "/tokenize");
  refused({{"prompt", "a"}, {"add_special_tokens", "yes"}}, "add_special_tokens", "/tokenize");
  auto [status, r] = server_->post("/tokenize", json{{"prompt", "a"}, {"model", "other"}});
  EXPECT_EQ(status, 404) << r.dump();
  int get_status = 0;
  server_->get("/tokenize", &get_status);
  EXPECT_EQ(get_status, 405);
  auto c = server_->client();
  auto text_plain = c.Post("/detokenize", "{\"tokens\": [1]}", "text/plain");
  ASSERT_TRUE(text_plain);
  EXPECT_EQ(text_plain->status, 415);
}

}  // namespace
}  // namespace slimkv::test
