// detect_chat_format on the five real templates of ../shared/data/real-tokenizers and on family names, and the
// real templates' own rendering of an assistant tool call (rendered here by the Jinja engine, the reply being the
// difference between the conversation with the call and its generation prompt) parsed back into the same call.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "jinja/template.h"
#include "server/builtin_chat_templates.h"
#include "server/output_stream_parser.h"
#include "server/tool_call_format.h"
#include "test_paths.h"

namespace slimkv::test {
namespace {

using ojson = nlohmann::ordered_json;

std::string real_dir() { return data_dir() + "/real-tokenizers"; }

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// chat_template.jinja when the family has one, else tokenizer_config.json's chat_template.
std::string real_template(const std::string& family) {
  std::string jinja = real_dir() + "/" + family + "/chat_template.jinja";
  if (exists(jinja)) return slurp(jinja);
  ojson cfg = ojson::parse(slurp(real_dir() + "/" + family + "/tokenizer_config.json"));
  return cfg.at("chat_template").get<std::string>();
}

struct RealFamily {
  const char* family;
  ChatFormat want;
};

void PrintTo(const RealFamily& f, std::ostream* os) { *os << f.family; }

class DetectRealTemplate : public ::testing::TestWithParam<RealFamily> {};

TEST_P(DetectRealTemplate, RecognisesTheFamily) {
  SKIP_IF_MISSING(real_dir() + "/" + GetParam().family + "/tokenizer_config.json");
  ChatFormat got = detect_chat_format(real_template(GetParam().family));
  EXPECT_EQ(to_string(got.tools), std::string(to_string(GetParam().want.tools)));
  EXPECT_EQ(to_string(got.reasoning), std::string(to_string(GetParam().want.reasoning)));
}

INSTANTIATE_TEST_SUITE_P(RealTokenizers, DetectRealTemplate,
                         ::testing::Values(RealFamily{"qwen3", {ToolCallFormat::kHermes, ReasoningFormat::kThinkTags}},
                                           RealFamily{"llama3", {ToolCallFormat::kLlama3Json, ReasoningFormat::kNone}},
                                           RealFamily{"deepseek_v3",
                                                      {ToolCallFormat::kDeepSeekV3, ReasoningFormat::kNone}},
                                           RealFamily{"gpt_oss", {ToolCallFormat::kHarmony, ReasoningFormat::kHarmony}},
                                           RealFamily{"mistral", {ToolCallFormat::kMistral, ReasoningFormat::kNone}}),
                         [](const ::testing::TestParamInfo<RealFamily>& i) { return std::string(i.param.family); });

TEST(DetectChatFormat, FamilyNamesAndOtherTemplates) {
  auto is = [](std::string_view src, ToolCallFormat t, ReasoningFormat r) {
    ChatFormat f = detect_chat_format(src);
    return f.tools == t && f.reasoning == r;
  };
  EXPECT_TRUE(is("qwen3", ToolCallFormat::kHermes, ReasoningFormat::kThinkTags));
  EXPECT_TRUE(is("Qwen2.5", ToolCallFormat::kHermes, ReasoningFormat::kNone));
  EXPECT_TRUE(is("llama3", ToolCallFormat::kLlama3Json, ReasoningFormat::kNone));
  EXPECT_TRUE(is("deepseek-v3", ToolCallFormat::kDeepSeekV3, ReasoningFormat::kNone));
  EXPECT_TRUE(is("deepseek-r1", ToolCallFormat::kDeepSeekV3, ReasoningFormat::kThinkTags));
  EXPECT_TRUE(is("deepseek-v4", ToolCallFormat::kNone, ReasoningFormat::kThinkTags));
  EXPECT_TRUE(is("gpt-oss", ToolCallFormat::kHarmony, ReasoningFormat::kHarmony));
  EXPECT_TRUE(is("mistral", ToolCallFormat::kMistral, ReasoningFormat::kNone));
  EXPECT_TRUE(is("gemma", ToolCallFormat::kNone, ReasoningFormat::kNone));
  EXPECT_TRUE(is("", ToolCallFormat::kNone, ReasoningFormat::kNone));
  EXPECT_TRUE(is("{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}", ToolCallFormat::kNone,
                 ReasoningFormat::kNone));
  EXPECT_TRUE(is(builtin_chat_template("llama3").value(), ToolCallFormat::kLlama3Json, ReasoningFormat::kNone));
  EXPECT_TRUE(is(builtin_chat_template("mistral").value(), ToolCallFormat::kMistral, ReasoningFormat::kNone));
  EXPECT_TRUE(is(builtin_chat_template("llama2").value(), ToolCallFormat::kNone, ReasoningFormat::kNone));
  EXPECT_TRUE(is(builtin_chat_template("gemma").value(), ToolCallFormat::kNone, ReasoningFormat::kNone));
}

TEST(DetectChatFormat, PromptOpensThinking) {
  ChatFormat think{ToolCallFormat::kNone, ReasoningFormat::kThinkTags};
  EXPECT_TRUE(prompt_opens_thinking(think, "<｜Assistant｜><think>\n"));
  EXPECT_FALSE(prompt_opens_thinking(think, "<|im_start|>assistant\n<think>\n\n</think>\n\n"));  // thinking off
  EXPECT_FALSE(prompt_opens_thinking(think, "<|im_start|>assistant\n"));
  EXPECT_FALSE(prompt_opens_thinking(think, "<think>x</think> and <think> in a user turn<|im_end|>"));
  EXPECT_FALSE(prompt_opens_thinking(ChatFormat{}, "<think>\n"));
}

// The assistant's tool-call turn as the real template renders it: render(with the call, no generation prompt)
// minus render(without it, generation prompt), less the end-of-turn token the engine stops on.
std::string rendered_reply(const std::string& family, const ojson& calls, const std::string& eot, bool null_content) {
  jinja::Template t = jinja::Template::parse(real_template(family));
  ojson cfg = ojson::parse(slurp(real_dir() + "/" + family + "/tokenizer_config.json"));
  auto token = [&](const char* key) {  // a string, or an AddedToken object's content
    ojson v = cfg.value(key, ojson());
    return v.is_object() ? v.value("content", std::string()) : v.is_string() ? v.get<std::string>() : std::string();
  };
  ojson ctx{{"bos_token", token("bos_token")}, {"eos_token", token("eos_token")}};
  ctx["messages"] = ojson::array({ojson{{"role", "user"}, {"content", "What's the weather in Paris?"}}});
  ctx["add_generation_prompt"] = true;
  std::string prompt = t.render(ctx);
  ctx["messages"].push_back(
      ojson{{"role", "assistant"}, {"content", null_content ? ojson() : ojson("")}, {"tool_calls", calls}});
  ctx["add_generation_prompt"] = false;
  std::string full = t.render(ctx);
  EXPECT_EQ(full.substr(0, prompt.size()), prompt);
  std::string reply = full.substr(std::min(prompt.size(), full.size()));
  size_t cut = eot.empty() ? std::string::npos : reply.rfind(eot);
  return cut == std::string::npos ? reply : reply.substr(0, cut);
}

ojson weather_calls(bool arguments_as_text, bool two) {
  ojson args{{"location", "Paris"}, {"unit", "celsius"}}, args2{{"query", "x"}};
  auto call = [&](const char* name, const ojson& a) {
    return ojson{{"type", "function"},
                 {"function", {{"name", name}, {"arguments", arguments_as_text ? ojson(a.dump()) : a}}}};
  };
  ojson calls = ojson::array({call("get_weather", args)});
  if (two) calls.push_back(call("search_web", args2));
  return calls;
}

struct RenderedFamily {
  const char* family;
  const char* eot;
  bool arguments_as_text;  // DeepSeek's template concatenates the arguments string (and needs content None)
  bool parallel;           // gpt-oss's template renders only the first call
};

void PrintTo(const RenderedFamily& f, std::ostream* os) { *os << f.family; }

class RealRenderedCall : public ::testing::TestWithParam<RenderedFamily> {};

TEST_P(RealRenderedCall, ParsesBackIntoTheCall) {
  const RenderedFamily& p = GetParam();
  SKIP_IF_MISSING(real_dir() + "/" + p.family + "/tokenizer_config.json");
  const ChatFormat f = detect_chat_format(real_template(p.family));
  for (bool two : {false, true}) {
    if (two && !p.parallel) continue;
    std::string reply = rendered_reply(p.family, weather_calls(p.arguments_as_text, two), p.eot, p.arguments_as_text);
    SCOPED_TRACE(reply);
    std::printf("%s reply (%d call%s): %s\n", p.family, two ? 2 : 1, two ? "s" : "", ojson(reply).dump().c_str());
    ParsedOutput out = parse_output(f, reply, false, seeded_call_ids(2));
    EXPECT_EQ(out.content, "");
    // Qwen3's template writes an empty <think>\n\n</think> block into the last assistant turn.
    EXPECT_EQ(out.reasoning_content.find_first_not_of("\n"), std::string::npos) << out.reasoning_content;
    ASSERT_EQ(out.tool_calls.size(), two ? 2u : 1u);
    EXPECT_EQ(out.tool_calls[0].name, "get_weather");
    EXPECT_EQ(out.tool_calls[0].arguments, R"({"location":"Paris","unit":"celsius"})");
    if (two) {
      EXPECT_EQ(out.tool_calls[1].arguments, R"({"query":"x"})");
    }
    OutputStreamParser stream(f, false, seeded_call_ids(2));  // byte by byte: the same calls
    std::vector<StreamEvent> events;
    for (char c : reply) {
      auto got = stream.feed(std::string_view(&c, 1));
      events.insert(events.end(), got.begin(), got.end());
    }
    auto tail = stream.finish();
    events.insert(events.end(), tail.begin(), tail.end());
    size_t i = 0;
    for (const StreamEvent& e : events) {
      if (e.kind == StreamEvent::kToolCallStart) {
        ASSERT_LT(i, out.tool_calls.size());
        EXPECT_EQ(e.id, out.tool_calls[i].id);
        EXPECT_EQ(e.name, out.tool_calls[i].name);
      } else if (e.kind == StreamEvent::kToolCallArguments) {
        EXPECT_EQ(e.text, out.tool_calls[i++].arguments);
      } else {
        EXPECT_EQ(e.text.find_first_not_of("\n"), std::string::npos) << e.text;
      }
    }
    EXPECT_EQ(i, out.tool_calls.size());
  }
}

INSTANTIATE_TEST_SUITE_P(RealTokenizers, RealRenderedCall,
                         ::testing::Values(RenderedFamily{"qwen3", "<|im_end|>", false, true},
                                           RenderedFamily{"llama3", "<|eot_id|>", false, false},
                                           RenderedFamily{"deepseek_v3", "<｜end▁of▁sentence｜>", true, true},
                                           RenderedFamily{"gpt_oss", "<|call|>", false, false}),
                         [](const ::testing::TestParamInfo<RenderedFamily>& i) { return std::string(i.param.family); });

// The rendered examples of chat_expected.jsonl (case tool_call_roundtrip): the assistant's turn in them parses.
TEST(ChatExpectedRoundtrip, AssistantTurnsParse) {
  struct Turn {
    const char* family;
    const char* from;
    const char* to;
  };
  for (const Turn& t : {Turn{"qwen3", "<tool_call>\n{\"name\": \"get_weather\"", "<|im_end|>"},
                        Turn{"llama3", "{\"name\": \"get_weather\"", "<|eot_id|>"},
                        Turn{"gpt_oss", " to=functions.get_weather", "<|start|>functions"}}) {
    SCOPED_TRACE(t.family);
    std::string path = real_dir() + "/" + t.family + "/chat_expected.jsonl";
    SKIP_IF_MISSING(path);
    std::ifstream in(path);
    std::string rendered;
    for (std::string line; std::getline(in, line);) {
      ojson j = ojson::parse(line);
      if (j["id"] == "tool_call_roundtrip") rendered = j["rendered"].get<std::string>();
    }
    size_t from = rendered.find(t.from), to = rendered.find(t.to, from);
    ASSERT_NE(from, std::string::npos);
    ASSERT_NE(to, std::string::npos);
    ParsedOutput out =
        parse_output(detect_chat_format(real_template(t.family)), rendered.substr(from, to - from), false);
    ASSERT_EQ(out.tool_calls.size(), 1u);
    EXPECT_EQ(out.tool_calls[0].name, "get_weather");
    EXPECT_EQ(out.tool_calls[0].arguments, R"({"location":"Paris","unit":"celsius"})");
    EXPECT_EQ(out.content, "");
  }
}

}  // namespace
}  // namespace slimkv::test
