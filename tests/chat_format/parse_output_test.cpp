// parse_output over every case of chat_format_cases.h: content, reasoning_content and tool calls (names, compact
// arguments, ids "call_" + 24 alphanumerics from the seeded generator), and malformed syntax kept as content.
#include <gtest/gtest.h>

#include <cctype>

#include "chat_format/chat_format_cases.h"
#include "server/tool_call_format.h"

namespace slimkv::test {
namespace {

bool is_call_id(const std::string& id) {
  if (id.size() != 29 || id.rfind("call_", 0) != 0) return false;
  for (size_t i = 5; i < id.size(); ++i)
    if (!std::isalnum(static_cast<unsigned char>(id[i]))) return false;
  return true;
}

class ParseOutputCase : public ::testing::TestWithParam<ChatFormatCase> {};

TEST_P(ParseOutputCase, GivesTheOpenAiFields) {
  const ChatFormatCase& c = GetParam();
  ParsedOutput out = parse_output(c.format, c.text, c.thinking_in_prompt, seeded_call_ids(7));
  EXPECT_EQ(out.content, c.content);
  EXPECT_EQ(out.reasoning_content, c.reasoning);
  ASSERT_EQ(out.tool_calls.size(), c.calls.size());
  for (size_t i = 0; i < c.calls.size(); ++i) {
    EXPECT_EQ(out.tool_calls[i].name, c.calls[i].first);
    EXPECT_EQ(out.tool_calls[i].arguments, c.calls[i].second);
    EXPECT_TRUE(is_call_id(out.tool_calls[i].id)) << out.tool_calls[i].id;
    if (i > 0) {
      EXPECT_NE(out.tool_calls[i].id, out.tool_calls[i - 1].id);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllFormats, ParseOutputCase, ::testing::ValuesIn(all_chat_format_cases()),
                         [](const ::testing::TestParamInfo<ChatFormatCase>& i) { return i.param.name; });

TEST(ParseOutput, SeededIdsRepeatAndRandomIdsDiffer) {
  std::string text = "<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>";
  auto a = parse_output(kQwen3Fmt, text, false, seeded_call_ids(1));
  auto b = parse_output(kQwen3Fmt, text, false, seeded_call_ids(1));
  auto c = parse_output(kQwen3Fmt, text, false);
  auto d = parse_output(kQwen3Fmt, text, false);
  ASSERT_EQ(a.tool_calls.size(), 1u);
  EXPECT_EQ(a.tool_calls[0].id, b.tool_calls[0].id);
  EXPECT_TRUE(is_call_id(c.tool_calls[0].id));
  EXPECT_NE(c.tool_calls[0].id, d.tool_calls[0].id);
}

TEST(ParseOutput, CallConstructParsersRejectWhatIsNotACall) {
  EXPECT_FALSE(parse_call_construct(ToolCallFormat::kHermes, "<tool_call>[1]</tool_call>"));
  EXPECT_FALSE(parse_call_construct(ToolCallFormat::kHermes, "<tool_call>{\"name\": 3}</tool_call>"));
  EXPECT_FALSE(
      parse_call_construct(ToolCallFormat::kHermes, "<tool_call>{\"name\": \"f\", \"arguments\": [1]}</tool_call>"));
  EXPECT_FALSE(parse_call_construct(ToolCallFormat::kLlama3Json, "{\"name\": \"f\"}"));  // no parameters
  EXPECT_FALSE(parse_call_construct(ToolCallFormat::kLlama3Json, "[]"));
  EXPECT_FALSE(parse_call_construct(ToolCallFormat::kMistral, "[TOOL_CALLS]"));
  EXPECT_FALSE(parse_call_construct(ToolCallFormat::kMistral, "[TOOL_CALLS]bad name[ARGS]{}"));
  EXPECT_FALSE(parse_call_construct(ToolCallFormat::kDeepSeekV3, "<｜tool▁calls▁begin｜><｜tool▁calls▁end｜>"));
  EXPECT_FALSE(parse_call_construct(ToolCallFormat::kNone, "{}"));
  EXPECT_FALSE(compact_json_arguments("{\"a\": \"\xFF\"}"));  // invalid UTF-8 is not JSON
  EXPECT_EQ(compact_json_arguments(" {\"z\": 1,\n \"a\": {\"b\": [1, 2]}} ").value(), R"({"z":1,"a":{"b":[1,2]}})");
}

TEST(ParseOutput, HarmonyHeaders) {
  auto h = parse_harmony_header("<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->kind, HarmonyHeader::kToolCall);
  EXPECT_EQ(h->function, "get_weather");
  h = parse_harmony_header(" to=functions.f<|channel|>commentary json");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->function, "f");
  EXPECT_EQ(parse_harmony_header("<|channel|>analysis")->kind, HarmonyHeader::kReasoning);
  EXPECT_EQ(parse_harmony_header("<|channel|>final")->kind, HarmonyHeader::kContent);
  EXPECT_FALSE(parse_harmony_header("<|channel|>final<|end|>x"));
  EXPECT_FALSE(parse_harmony_header("<|start|>user<|channel|>final"));
  EXPECT_FALSE(parse_harmony_header("analysis"));
  EXPECT_FALSE(parse_harmony_header("<|channel|>commentary to=functions."));
}

}  // namespace
}  // namespace slimkv::test
