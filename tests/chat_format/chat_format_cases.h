// The generated texts the chat-format tests parse, per format, with the OpenAI fields each must give: a call,
// parallel calls, content around calls, reasoning with calls, and malformed syntax that must come back as content.
// Shared by the whole-text tests and the streaming equivalence tests. Must not know: the parsers' internals.
#pragma once
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "server/tool_call_format.h"

namespace slimkv::test {

struct ChatFormatCase {
  std::string name;
  ChatFormat format;
  bool thinking_in_prompt = false;
  std::string text;
  std::string content, reasoning;
  std::vector<std::pair<std::string, std::string>> calls;  // name, compact arguments
};

// gtest prints a parameter with this (the case's name rather than its bytes).
inline void PrintTo(const ChatFormatCase& c, std::ostream* os) { *os << c.name; }

inline const ChatFormat kQwen3Fmt{ToolCallFormat::kHermes, ReasoningFormat::kThinkTags};
inline const ChatFormat kLlama3Fmt{ToolCallFormat::kLlama3Json, ReasoningFormat::kNone};
inline const ChatFormat kDeepSeekFmt{ToolCallFormat::kDeepSeekV3, ReasoningFormat::kNone};
inline const ChatFormat kDeepSeekR1Fmt{ToolCallFormat::kDeepSeekV3, ReasoningFormat::kThinkTags};
inline const ChatFormat kHarmonyFmt{ToolCallFormat::kHarmony, ReasoningFormat::kHarmony};
inline const ChatFormat kMistralFmt{ToolCallFormat::kMistral, ReasoningFormat::kNone};
inline const std::string kParisArgs = R"({"location":"Paris","unit":"celsius"})";
inline const std::string kParisJson = R"({"location": "Paris", "unit": "celsius"})";

inline std::vector<ChatFormatCase> hermes_cases() {
  const std::string call = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": " + kParisJson + "}\n</tool_call>";
  const std::string call2 = "<tool_call>\n{\"name\": \"search_web\", \"arguments\": {\"query\": \"x\"}}\n</tool_call>";
  const std::string bad = "<tool_call>\n{\"name\": \"f\", \"arguments\": {bad}}\n</tool_call>";
  return {
      {"hermes_single", kQwen3Fmt, false, call, "", "", {{"get_weather", kParisArgs}}},
      {"hermes_parallel",
       kQwen3Fmt,
       false,
       call + "\n" + call2 + "\n",
       "",
       "",
       {{"get_weather", kParisArgs}, {"search_web", R"({"query":"x"})"}}},
      {"hermes_content_around",
       kQwen3Fmt,
       false,
       "Let me check.\n" + call + "\nDone.",
       "Let me check.\n\nDone.",
       "",
       {{"get_weather", kParisArgs}}},
      {"hermes_think_then_call",
       kQwen3Fmt,
       false,
       "<think>\nI should call it.\n</think>\n\n" + call,
       "",
       "\nI should call it.\n",
       {{"get_weather", kParisArgs}}},
      {"hermes_think_in_prompt",
       kQwen3Fmt,
       true,
       "I should call it.\n</think>\n\nSure. " + call,
       "\n\nSure. ",
       "I should call it.\n",
       {{"get_weather", kParisArgs}}},
      {"hermes_think_answer",
       kQwen3Fmt,
       false,
       "<think>\n2+2=4\n</think>\n\nThe answer is 4.",
       "\n\nThe answer is 4.",
       "\n2+2=4\n",
       {}},
      {"hermes_unclosed_think",
       kQwen3Fmt,
       false,
       "<think>\nstill thinking <tool_call>",
       "",
       "\nstill thinking <tool_call>",
       {}},
      {"hermes_bad_json", kQwen3Fmt, false, bad, bad, "", {}},
      {"hermes_unterminated",
       kQwen3Fmt,
       false,
       "Hi <tool_call>\n{\"name\": \"f\", \"arguments\": {}}",
       "Hi <tool_call>\n{\"name\": \"f\", \"arguments\": {}}",
       "",
       {}},
      {"hermes_unknown_structure",
       kQwen3Fmt,
       false,
       "<tool_call>{\"foo\": 1}</tool_call>",
       "<tool_call>{\"foo\": 1}</tool_call>",
       "",
       {}},
      {"hermes_good_then_bad", kQwen3Fmt, false, call + "\n" + bad, "\n" + bad, "", {{"get_weather", kParisArgs}}},
      {"hermes_string_arguments",
       kQwen3Fmt,
       false,
       R"(<tool_call>{"name": "f", "arguments": "{\"b\": 1, \"a\": [2]}"}</tool_call>)",
       "",
       "",
       {{"f", R"({"b":1,"a":[2]})"}}},
      {"hermes_unicode",
       kQwen3Fmt,
       false,
       "<tool_call>{\"name\": \"f\", \"arguments\": {\"q\": \"h\xC3\xA9llo \xE6\x9D\xB1\"}}</tool_call>",
       "",
       "",
       {{"f", "{\"q\":\"h\xC3\xA9llo \xE6\x9D\xB1\"}"}}},
      {"hermes_marker_like_text",
       kQwen3Fmt,
       false,
       "a <b> <tool <think <tool_cal",
       "a <b> <tool <think <tool_cal",
       "",
       {}},
      {"hermes_space_only", kQwen3Fmt, false, "  \n", "  \n", "", {}},
  };
}

inline std::vector<ChatFormatCase> llama3_cases() {
  const std::string call = "{\"name\": \"get_weather\", \"parameters\": " + kParisJson + "}";
  const std::string call2 = "{\"name\": \"search_web\", \"parameters\": {\"query\": \"x\"}}";
  return {
      {"llama3_single", kLlama3Fmt, false, call, "", "", {{"get_weather", kParisArgs}}},
      {"llama3_python_tag", kLlama3Fmt, false, "<|python_tag|>" + call, "", "", {{"get_weather", kParisArgs}}},
      {"llama3_parallel_semicolon",
       kLlama3Fmt,
       false,
       call + "; " + call2,
       "",
       "",
       {{"get_weather", kParisArgs}, {"search_web", R"({"query":"x"})"}}},
      {"llama3_parallel_array",
       kLlama3Fmt,
       false,
       "[" + call + ", " + call2 + "]",
       "",
       "",
       {{"get_weather", kParisArgs}, {"search_web", R"({"query":"x"})"}}},
      {"llama3_content_then_tag",
       kLlama3Fmt,
       false,
       "Sure.<|python_tag|>" + call,
       "Sure.",
       "",
       {{"get_weather", kParisArgs}}},
      {"llama3_leading_space", kLlama3Fmt, false, "\n\n" + call, "", "", {{"get_weather", kParisArgs}}},
      {"llama3_typed",
       kLlama3Fmt,
       false,
       R"({"type": "function", "name": "f", "parameters": {}})",
       "",
       "",
       {{"f", "{}"}}},
      {"llama3_plain_json", kLlama3Fmt, false, R"({"name": "Bob", "age": 3})", R"({"name": "Bob", "age": 3})", "", {}},
      {"llama3_brace_text", kLlama3Fmt, false, "{x} is a set.", "{x} is a set.", "", {}},
      {"llama3_call_then_text", kLlama3Fmt, false, call + " Let me know.", call + " Let me know.", "", {}},
      {"llama3_bad_json",
       kLlama3Fmt,
       false,
       R"({"name": "f", "parameters": {"x": }})",
       R"({"name": "f", "parameters": {"x": }})",
       "",
       {}},
      {"llama3_text_with_json_later", kLlama3Fmt, false, "Here: " + call, "Here: " + call, "", {}},
  };
}

inline std::vector<ChatFormatCase> deepseek_cases() {
  const std::string begin = "<｜tool▁calls▁begin｜>", end = "<｜tool▁calls▁end｜>";
  const std::string call =
      "<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n" + kParisJson + "\n```<｜tool▁call▁end｜>";
  const std::string call2 =
      "<｜tool▁call▁begin｜>function<｜tool▁sep｜>search_web\n```json\n{\"query\": \"x\"}\n```"
      "<｜tool▁call▁end｜>";
  const std::string bad =
      begin + "<｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n```json\n{oops}\n```<｜tool▁call▁end｜>" + end;
  return {
      {"deepseek_single", kDeepSeekFmt, false, begin + call + end, "", "", {{"get_weather", kParisArgs}}},
      {"deepseek_parallel",
       kDeepSeekFmt,
       false,
       begin + call + "\n" + call2 + end,
       "",
       "",
       {{"get_weather", kParisArgs}, {"search_web", R"({"query":"x"})"}}},
      {"deepseek_content_before",
       kDeepSeekFmt,
       false,
       "Let me look." + begin + call + end,
       "Let me look.",
       "",
       {{"get_weather", kParisArgs}}},
      {"deepseek_r1_reasoning",
       kDeepSeekR1Fmt,
       true,
       "Need the weather.\n</think>\n\n" + begin + call + end,
       "",
       "Need the weather.\n",
       {{"get_weather", kParisArgs}}},
      {"deepseek_v31_call",
       kDeepSeekFmt,
       false,
       begin + "<｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>" + kParisJson + "<｜tool▁call▁end｜>" + end,
       "",
       "",
       {{"get_weather", kParisArgs}}},
      {"deepseek_no_calls_end", kDeepSeekFmt, false, begin + call, "", "", {{"get_weather", kParisArgs}}},
      {"deepseek_bad_json", kDeepSeekFmt, false, bad, bad, "", {}},
      {"deepseek_unterminated_call",
       kDeepSeekFmt,
       false,
       "Hm " + begin + "<｜tool▁call▁begin｜>function<｜tool▁sep｜>f",
       "Hm " + begin + "<｜tool▁call▁begin｜>function<｜tool▁sep｜>f",
       "",
       {}},
  };
}

inline std::vector<ChatFormatCase> harmony_cases() {
  const std::string analysis = "<|channel|>analysis<|message|>Need the weather.<|end|>";
  const std::string call =
      "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json"
      "<|message|>" +
      kParisJson + "<|call|>";
  const std::string bad_header = "<|channel|>commentary to=functions.f <|constrain|>json<|message|>";
  return {
      {"harmony_final",
       kHarmonyFmt,
       false,
       "<|channel|>analysis<|message|>User greets.<|end|><|start|>assistant<|channel|>final<|message|>Hi "
       "there<|return|>",
       "Hi there",
       "User greets.",
       {}},
      {"harmony_reasoning_call",
       kHarmonyFmt,
       false,
       analysis + call,
       "",
       "Need the weather.",
       {{"get_weather", kParisArgs}}},
      {"harmony_template_order",
       kHarmonyFmt,
       false,
       " to=functions.get_weather<|channel|>commentary json<|message|>" + kParisJson + "<|call|>",
       "",
       "",
       {{"get_weather", kParisArgs}}},
      {"harmony_call_stop_stripped",
       kHarmonyFmt,
       false,
       analysis + call.substr(0, call.size() - 8),
       "",
       "Need the weather.",
       {{"get_weather", kParisArgs}}},
      {"harmony_final_no_return", kHarmonyFmt, false, "<|channel|>final<|message|>Hello", "Hello", "", {}},
      {"harmony_parallel",
       kHarmonyFmt,
       false,
       analysis + call +
           "<|start|>assistant<|channel|>commentary to=functions.search_web <|constrain|>json"
           "<|message|>{\"query\": \"x\"}<|call|>",
       "",
       "Need the weather.",
       {{"get_weather", kParisArgs}, {"search_web", R"({"query":"x"})"}}},
      {"harmony_bad_arguments", kHarmonyFmt, false, bad_header + "{bad<|call|>", bad_header + "{bad", "", {}},
      {"harmony_plain_text", kHarmonyFmt, false, "Hello there", "Hello there", "", {}},
      {"harmony_unknown_channel",
       kHarmonyFmt,
       false,
       "<|channel|>weird<|message|>x<|end|>",
       "<|channel|>weird<|message|>x",
       "",
       {}},
      {"harmony_preamble",
       kHarmonyFmt,
       false,
       "<|channel|>commentary<|message|>Checking now.<|end|>" + call,
       "Checking now.",
       "",
       {{"get_weather", kParisArgs}}},
      {"harmony_builtin_tool",
       kHarmonyFmt,
       false,
       "<|channel|>analysis to=browser.search<|message|>q<|call|>",
       "<|channel|>analysis to=browser.search<|message|>q",
       "",
       {}},
      {"harmony_header_unfinished", kHarmonyFmt, false, "<|channel|>analysis", "<|channel|>analysis", "", {}},
  };
}

inline std::vector<ChatFormatCase> mistral_cases() {
  const std::string call = "{\"name\": \"get_weather\", \"arguments\": " + kParisJson + "}";
  const std::string call2 = "{\"name\": \"search_web\", \"arguments\": {\"query\": \"x\"}, \"id\": \"abc123def\"}";
  return {
      {"mistral_single", kMistralFmt, false, "[TOOL_CALLS][" + call + "]", "", "", {{"get_weather", kParisArgs}}},
      {"mistral_parallel",
       kMistralFmt,
       false,
       "[TOOL_CALLS] [" + call + ", " + call2 + "]",
       "",
       "",
       {{"get_weather", kParisArgs}, {"search_web", R"({"query":"x"})"}}},
      {"mistral_v11",
       kMistralFmt,
       false,
       "[TOOL_CALLS]get_weather[ARGS]" + kParisJson + "[TOOL_CALLS]search_web[ARGS]{\"query\": \"x\"}",
       "",
       "",
       {{"get_weather", kParisArgs}, {"search_web", R"({"query":"x"})"}}},
      {"mistral_content_before",
       kMistralFmt,
       false,
       "Checking.[TOOL_CALLS][" + call + "]",
       "Checking.",
       "",
       {{"get_weather", kParisArgs}}},
      {"mistral_bad_json",
       kMistralFmt,
       false,
       "[TOOL_CALLS][{\"name\": \"f\"",
       "[TOOL_CALLS][{\"name\": \"f\"",
       "",
       {}},
      {"mistral_brackets_text", kMistralFmt, false, "[1, 2] and [TOOL", "[1, 2] and [TOOL", "", {}},
  };
}

inline std::vector<ChatFormatCase> plain_cases() {
  return {
      {"none_keeps_markers",
       ChatFormat{},
       false,
       "<tool_call>{\"name\": \"f\"}</tool_call>",
       "<tool_call>{\"name\": \"f\"}</tool_call>",
       "",
       {}},
      {"think_only",
       ChatFormat{ToolCallFormat::kNone, ReasoningFormat::kThinkTags},
       false,
       "<think>r</think>c",
       "c",
       "r",
       {}},
      {"harmony_without_tools_call_is_text",
       ChatFormat{ToolCallFormat::kNone, ReasoningFormat::kHarmony},
       false,
       "<|channel|>analysis<|message|>r<|end|><|start|>assistant<|channel|>commentary to=functions.f "
       "<|constrain|>json<|message|>{}<|call|>",
       "<|start|>assistant<|channel|>commentary to=functions.f <|constrain|>json<|message|>{}",
       "r",
       {}},
      {"think_lone_close_in_content",
       ChatFormat{ToolCallFormat::kNone, ReasoningFormat::kThinkTags},
       false,
       "a</think>b",
       "a</think>b",
       "",
       {}},
  };
}

inline std::vector<ChatFormatCase> all_chat_format_cases() {
  std::vector<ChatFormatCase> all;
  for (auto part : {hermes_cases(), llama3_cases(), deepseek_cases(), harmony_cases(), mistral_cases(), plain_cases()})
    all.insert(all.end(), part.begin(), part.end());
  return all;
}

}  // namespace slimkv::test
