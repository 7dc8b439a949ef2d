// The server's pure pieces: stop strings across token boundaries, chat templates (real Jinja sources and the
// built-in names through the engine, DeepSeek-V4's renderer, plain), request parsing, and the Prometheus text writer.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "core/check.h"
#include "jinja/template_error.h"
#include "server/api_error.h"
#include "server/chat_template.h"
#include "server/completion_text.h"
#include "server/openai_request.h"
#include "server/prometheus_text.h"
#include "test_paths.h"

namespace slimkv::test {
namespace {

class PieceTokenizer : public Tokenizer {  // id -> a fixed piece of bytes
 public:
  explicit PieceTokenizer(std::vector<std::string> pieces) : pieces_(std::move(pieces)) {}
  std::vector<int32_t> encode(std::string_view, bool) const override { return {}; }
  std::string decode_token(int32_t, int32_t id) const override { return pieces_.at(id); }
  int32_t vocab_size() const override { return static_cast<int32_t>(pieces_.size()); }

 private:
  std::vector<std::string> pieces_;
};

std::string run(const PieceTokenizer& tok, std::vector<std::string> stops, const std::vector<int32_t>& ids,
                std::vector<std::string>* deltas = nullptr, bool* stopped = nullptr) {
  CompletionText t(tok, -1, std::move(stops));
  std::string out;
  for (int32_t id : ids) {
    std::string d = t.push(id);
    if (deltas) deltas->push_back(d);
    out += d;
  }
  out += t.finish();
  if (stopped) *stopped = t.stopped();
  EXPECT_EQ(out, t.text());
  return out;
}

TEST(CompletionText, StopStringsSpanTokensAndAreHeldBackUntilDecided) {
  PieceTokenizer tok({"Hello", " wor", "ld", "!", " wo", "rm", "\xE2\x82", "\xAC"});
  std::vector<std::string> deltas;
  bool stopped = false;
  EXPECT_EQ(run(tok, {"world"}, {0, 1, 2, 3}, &deltas, &stopped), "Hello ");
  EXPECT_TRUE(stopped);
  EXPECT_EQ(deltas[1], " ") << "'wor' could begin 'world': held back, the space is not";
  EXPECT_EQ(run(tok, {"world"}, {0, 4, 5, 3}, nullptr, &stopped), "Hello worm!") << "a prefix that does not complete";
  EXPECT_FALSE(stopped);
  EXPECT_EQ(run(tok, {"zzz", "llo"}, {0, 1}), "He") << "the earliest of several stop strings";
  deltas.clear();
  EXPECT_EQ(run(tok, {}, {6, 7}, &deltas), "\xE2\x82\xAC");
  EXPECT_EQ(deltas[0], "") << "never half a UTF-8 character";
  EXPECT_EQ(run(tok, {"!"}, {0, 3, 0}), "Hello") << "tokens after a stop are dropped";
}

// No recogniser: a real template file is parsed by the Jinja engine and rendered as itself. Where a built-in name
// stands for the family, the two render alike (BOS text dropped: the tokenizer adds the id).
TEST(ChatTemplate, RealTemplatesRenderThroughTheEngine) {
  const std::string dir = data_dir() + "/tokenizer-tests/chat-templates/";
  SKIP_IF_MISSING(dir);
  const std::vector<ChatMessage> m = {{"system", "Be brief."}, {"user", "Hi"}};
  const std::map<std::string, std::string> same_as = {{"Qwen-Qwen2.5-7B-Instruct.jinja", "qwen"},
                                                      {"microsoft-Phi-3.5-mini-instruct.jinja", "phi3"}};
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string file = e.path().filename().string();
    ChatTemplate t = ChatTemplate::resolve(e.path().string());
    t.set_special_tokens({"<bos>", "</s>", true});
    EXPECT_EQ(t.kind(), ChatTemplate::Kind::Jinja) << file;
    std::string text;
    try {
      text = t.render(m);
    } catch (const jinja::TemplateError& err) {  // a template may refuse a system turn (Gemma): then user only
      text = t.render({{"user", "Hi"}});
    }
    EXPECT_NE(text.find("Hi"), std::string::npos) << file << ": " << text;
    if (auto it = same_as.find(file); it != same_as.end()) {
      EXPECT_EQ(text, ChatTemplate::resolve(it->second).render(m)) << file;
    }
  }
  ChatTemplate gemma = ChatTemplate::resolve(dir + "google-gemma-2-2b-it.jinja");
  gemma.set_special_tokens({"<bos>", "<eos>", true});
  EXPECT_EQ(gemma.render({{"user", "Hi"}}), ChatTemplate::resolve("gemma").render({{"user", "Hi"}}));
  gemma.set_special_tokens({"<bos>", "<eos>", false});  // a tokenizer that adds no BOS keeps the template's text
  EXPECT_EQ(gemma.render({{"user", "Hi"}}), "<bos>" + ChatTemplate::resolve("gemma").render({{"user", "Hi"}}));
  EXPECT_EQ(ChatTemplate::resolve("qwen").name(), "qwen");
  EXPECT_THROW(ChatTemplate::resolve("no-such-template"), Error);
}

// A template's raise_exception is its rule about the input (the server answers 400 with its text); a template that
// does not parse fails at start-up, not at the first request.
TEST(ChatTemplate, RaisedRulesAndSyntaxErrors) {
  ChatTemplate t = ChatTemplate::from_jinja(
      "t", "{% if messages[0].role != 'user' %}{{ raise_exception('first must be user') }}{% endif %}ok");
  EXPECT_EQ(t.render({{"user", "a"}}), "ok");
  try {
    t.render({{"assistant", "a"}});
    ADD_FAILURE() << "no exception";
  } catch (const jinja::TemplateError& e) {
    EXPECT_EQ(e.kind(), jinja::ErrorKind::Raised);
    EXPECT_EQ(std::string(e.what()), "first must be user");
  }
  try {
    ChatTemplate::from_jinja("broken", "{% for m in messages %}");
    ADD_FAILURE() << "no exception";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not parse"), std::string::npos) << e.what();
  }
}

TEST(ChatTemplate, RendersAsTheTemplatesDo) {
  const std::vector<ChatMessage> m = {{"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello!"},
                                      {"user", "Bye"}};
  EXPECT_EQ(ChatTemplate::resolve("chatml").render(m),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
            "Hello!<|im_end|>\n<|im_start|>user\nBye<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(ChatTemplate::resolve("llama3").render({{"user", "Hi"}}),
            "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
  EXPECT_EQ(ChatTemplate::resolve("gemma").render({{"user", "Hi"}}),
            "<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n");
  EXPECT_EQ(ChatTemplate::resolve("phi3").render({{"user", "Hi"}}), "<|user|>\nHi<|end|>\n<|assistant|>\n");
  EXPECT_EQ(ChatTemplate::resolve("llama2").render(m),
            "[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST] Hello! </s><s>[INST] Bye [/INST]");
  EXPECT_EQ(ChatTemplate::resolve("mistral").render(m), "[INST]Hi[/INST]Hello!</s>[INST]Be brief.\n\nBye[/INST]");
  EXPECT_EQ(ChatTemplate::plain().render({{"user", "Hi"}}), "User: Hi\nAssistant:");
  // add_generation_prompt false: without the assistant's opening
  EXPECT_EQ(ChatTemplate::resolve("chatml").render({{"user", "Hi"}}, false), "<|im_start|>user\nHi<|im_end|>\n");
  EXPECT_EQ(ChatTemplate::resolve("gemma").render({{"user", "Hi"}}, false), "<start_of_turn>user\nHi<end_of_turn>\n");
  EXPECT_EQ(ChatTemplate::resolve("llama2").render(m, false), ChatTemplate::resolve("llama2").render(m));
  EXPECT_EQ(ChatTemplate::plain().render({{"user", "Hi"}}, false), "User: Hi\n");
}

// DeepSeek-V4's built-in renderer on the shared chat cases, with expectations derived by hand from the rules of
// DeepSeek's encoding_dsv4.py in chat mode (the BOS is the tokenizer's; no third-party render exists to compare with:
// ../shared/data/real-tokenizers/deepseek_v4/MISSING.md). Tools are not rendered (the encoder renders them only in
// system / developer turns; the server does not pass them to chat templates).
TEST(ChatTemplate, DeepSeekV4FollowsItsEncoderRules) {
  const std::string U = "<｜User｜>", A = "<｜Assistant｜></think>", E = "<｜end▁of▁sentence｜>";
  const std::map<std::string, std::string> want = {
      {"single_user", U + "Hello! How are you?" + A},
      {"system_user", "You are a concise assistant." + U + "What is the capital of France?" + A},
      {"multi_turn", U + "Hi there." + A + "Hello! How can I help you today?" + E + U + "Tell me a joke." + A +
                         "Why did the scarecrow win an award? Because he was outstanding in his field." + E + U +
                         "Another one, please." + A},
      {"multi_turn_system_no_gen", "Be brief." + U + "2+2?" + A + "4" + E},
      {"tools_given", U + "What's the weather in Paris?" + A},
  };
  const std::string path = shared_dir() + "/data/real-tokenizers/chat-cases.json";
  SKIP_IF_MISSING(path);
  std::ifstream in(path);
  int checked = 0;
  for (const auto& c : nlohmann::json::parse(in)) {
    auto it = want.find(c["id"].get<std::string>());
    if (it == want.end()) continue;
    std::vector<ChatMessage> m;
    for (const auto& x : c["messages"]) m.push_back({x["role"], x["content"].is_string() ? x["content"].get<std::string>() : ""});
    EXPECT_EQ(ChatTemplate::deepseek_v4().render(m), it->second) << it->first;
    ++checked;
  }
  EXPECT_EQ(checked, static_cast<int>(want.size()));
  // tool results join the user turn; consecutive results and a following user message are one turn
  EXPECT_EQ(ChatTemplate::deepseek_v4().render({{"user", "Weather?"}, {"assistant", "calling"}, {"tool", "sunny"},
                                                   {"tool", "22C"}, {"user", "thanks"}}),
            U + "Weather?" + A + "calling" + E + U + "<tool_result>sunny</tool_result>\n\n<tool_result>22C</tool_result>"
                "\n\nthanks" + A);
  EXPECT_EQ(ChatTemplate::resolve("deepseek-v4").kind(), ChatTemplate::Kind::DeepSeekV4);
}

TEST(OpenAiRequest, ParsesEveryFieldAndNamesTheBadOne) {
  auto r = parse_completion_request(nlohmann::json::parse(R"({"model": "m", "prompt": ["a", [1, 2]],
      "max_tokens": 7, "temperature": 0.5, "top_p": 0.9, "top_k": -1, "seed": 3, "stop": "x", "n": 2,
      "logprobs": 1, "stream": true, "stream_options": {"include_usage": true}, "ignore_eos": true, "min_tokens": 2})"));
  EXPECT_EQ(r.prompts.size(), 2u);
  EXPECT_TRUE(r.prompts[1].is_ids);
  EXPECT_EQ(*r.max_tokens, 7);
  EXPECT_EQ(r.top_k, 0);
  EXPECT_EQ(*r.seed, 3u);
  EXPECT_EQ(r.stop, std::vector<std::string>{"x"});
  EXPECT_TRUE(r.stream && r.include_usage && r.ignore_eos);
  EXPECT_EQ(r.logprobs, 1);
  auto c = parse_chat_request(nlohmann::json::parse(
      R"({"messages": [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}],
          "max_completion_tokens": 4, "max_tokens": 9, "logprobs": true})"));
  EXPECT_EQ(c.messages[0].content, "ab");
  EXPECT_EQ(*c.max_tokens, 4) << "max_completion_tokens wins";
  EXPECT_EQ(c.logprobs, 0);
  try {
    parse_completion_request(nlohmann::json::parse(R"({"prompt": "a", "top_p": "high"})"));
    FAIL();
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 400);
    EXPECT_EQ(e.param, "top_p");
    EXPECT_EQ(e.to_json()["error"]["type"], "invalid_request_error");
  }
}

TEST(PrometheusText, HistogramsAreCumulativeAndLabelsEscaped) {
  PromHistogram h({0.1, 1.0});
  for (double v : {0.05, 0.1, 0.5, 3.0}) h.observe(v);
  PromWriter w;
  w.family("x_seconds", "histogram", "help");
  w.histogram("x_seconds", {{"model_name", "a\"b\\c"}}, h);
  const std::string t = w.text();
  EXPECT_NE(t.find("x_seconds_bucket{model_name=\"a\\\"b\\\\c\",le=\"0.1\"} 2\n"), std::string::npos) << t;
  EXPECT_NE(t.find("le=\"1\"} 3\n"), std::string::npos) << t;
  EXPECT_NE(t.find("le=\"+Inf\"} 4\n"), std::string::npos) << t;
  EXPECT_NE(t.find("x_seconds_count{model_name=\"a\\\"b\\\\c\"} 4\n"), std::string::npos) << t;
  EXPECT_NE(t.find("x_seconds_sum{model_name=\"a\\\"b\\\\c\"} 3.65\n"), std::string::npos) << t;
}

}  // namespace
}  // namespace slimkv::test
