// Random texts built from every format's markers, partial markers, JSON pieces, words and whitespace, under every
// format: parse_output never throws, and streaming the text in random chunks gives exactly parse_output's fields.
// Texts without any marker character come back unchanged as content.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

#include "server/output_stream_parser.h"
#include "server/tool_call_format.h"

namespace slimkv::test {
namespace {

const std::vector<std::string>& fragments() {
  static const std::vector<std::string> f = {
      "<think>", "</think>", "<tool_call>", "</tool_call>", "<tool_", "</thi", "<|python_tag|>", "<|python",
      "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>", "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>",
      "<｜tool▁sep｜>", "<｜tool▁", "function", "\n```json\n", "\n```", "[TOOL_CALLS]", "[TOOL_", "[ARGS]", "[CALL_ID]",
      "<|start|>", "<|start|>assistant", "<|channel|>", "analysis", "final", "commentary", " to=functions.f",
      " to=browser.x", "<|constrain|>json", " json", "<|message|>", "<|end|>", "<|call|>", "<|return|>", "<|",
      "{\"name\": \"f\", \"arguments\": {\"a\": 1}}", "{\"name\": \"g\", \"parameters\": {}}",
      "[{\"name\": \"h\", \"arguments\": {\"b\": [1, \"x\"]}}]", "{\"a\": 1}", "{", "}", "[", "]", "\"", ";", "\n", " ",
      "  \n", "hello", "wörld", "f", "name", "<b>", "\\", "\xE6\x9D\xB1",
      // whole constructs, so that valid calls appear among the noise
      "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call>",
      "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n```json\n{\"a\": 1}\n```<｜tool▁call▁end｜>"
      "<｜tool▁calls▁end｜>",
      "<|channel|>commentary to=functions.f <|constrain|>json<|message|>{\"a\": 1}<|call|>",
      "<|channel|>analysis<|message|>hmm<|end|>", "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {}}]",
      "<|python_tag|>{\"name\": \"g\", \"parameters\": {}}"};
  return f;
}

std::string random_text(std::mt19937& rng) {
  std::uniform_int_distribution<size_t> count(0, 12), pick(0, fragments().size() - 1);
  std::string s;
  for (size_t n = count(rng); n > 0; --n) s += fragments()[pick(rng)];
  return s;
}

ParsedOutput stream_fold(const ChatFormat& f, bool think, const std::string& text, std::mt19937& rng) {
  OutputStreamParser p(f, think, seeded_call_ids(9));
  std::vector<StreamEvent> events;
  for (size_t i = 0; i < text.size();) {
    size_t n = std::uniform_int_distribution<size_t>(1, 6)(rng);
    auto got = p.feed(std::string_view(text).substr(i, n));
    events.insert(events.end(), got.begin(), got.end());
    i += n;
  }
  auto tail = p.finish();
  events.insert(events.end(), tail.begin(), tail.end());
  ParsedOutput out;
  for (const StreamEvent& e : events) {
    if (e.kind == StreamEvent::kContent) out.content += e.text;
    if (e.kind == StreamEvent::kReasoning) out.reasoning_content += e.text;
    if (e.kind == StreamEvent::kToolCallStart) out.tool_calls.push_back(ToolCall{e.id, e.name, ""});
    if (e.kind == StreamEvent::kToolCallArguments) out.tool_calls.at(e.tool_index).arguments += e.text;
  }
  return out;
}

bool is_subsequence(const std::string& part, const std::string& whole) {
  size_t i = 0;
  for (char c : whole)
    if (i < part.size() && part[i] == c) ++i;
  return i == part.size();
}

TEST(RandomOutput, StreamingEqualsWholeParseForEveryFormat) {
  const ChatFormat formats[] = {{ToolCallFormat::kHermes, ReasoningFormat::kThinkTags},
                                {ToolCallFormat::kHermes, ReasoningFormat::kNone},
                                {ToolCallFormat::kLlama3Json, ReasoningFormat::kNone},
                                {ToolCallFormat::kDeepSeekV3, ReasoningFormat::kThinkTags},
                                {ToolCallFormat::kDeepSeekV3, ReasoningFormat::kNone},
                                {ToolCallFormat::kHarmony, ReasoningFormat::kHarmony},
                                {ToolCallFormat::kMistral, ReasoningFormat::kNone},
                                {ToolCallFormat::kNone, ReasoningFormat::kNone}};
  std::mt19937 rng(1234);
  int calls = 0, texts = 0;
  const char* env = std::getenv("SLIMKV_RANDOM_OUTPUT_TEXTS");  // longer runs by hand
  const int iters = env ? std::atoi(env) : 3000;
  for (int iter = 0; iter < iters; ++iter) {
    std::string text = random_text(rng);
    for (const ChatFormat& f : formats) {
      for (bool think : {false, true}) {
        SCOPED_TRACE(std::string(to_string(f.tools)) + (think ? " think " : " ") + text);
        ParsedOutput whole = parse_output(f, text, think, seeded_call_ids(9));
        ParsedOutput streamed = stream_fold(f, think, text, rng);
        ASSERT_EQ(streamed.content, whole.content);
        ASSERT_EQ(streamed.reasoning_content, whole.reasoning_content);
        ASSERT_EQ(streamed.tool_calls.size(), whole.tool_calls.size());
        for (size_t i = 0; i < whole.tool_calls.size(); ++i) {
          ASSERT_EQ(streamed.tool_calls[i].name, whole.tool_calls[i].name);
          ASSERT_EQ(streamed.tool_calls[i].arguments, whole.tool_calls[i].arguments);
        }
        // Nothing is lost: without reasoning syntax and without a valid call, the text is the content, byte for
        // byte (a malformed call included); otherwise content and reasoning are each drawn from the text in order.
        if (f.reasoning == ReasoningFormat::kNone && whole.tool_calls.empty()) {
          ASSERT_EQ(whole.content, text);
        }
        ASSERT_TRUE(is_subsequence(whole.content, text));
        ASSERT_TRUE(is_subsequence(whole.reasoning_content, text));
        calls += static_cast<int>(whole.tool_calls.size());
        ++texts;
      }
    }
  }
  EXPECT_GT(calls, 100);  // the generator does produce valid calls, not only noise
  std::printf("%d texts, %d tool calls parsed\n", texts, calls);
}

TEST(RandomOutput, TextWithoutMarkersIsContentUnchanged) {
  std::mt19937 rng(77);
  const std::string alphabet = "abc xyz\n\t{}\":,;0123456789.!?-_=";
  for (int iter = 0; iter < 500; ++iter) {
    std::string text;
    for (int n = std::uniform_int_distribution<int>(0, 40)(rng); n > 0; --n)
      text += alphabet[std::uniform_int_distribution<size_t>(0, alphabet.size() - 1)(rng)];
    for (ToolCallFormat t :
         {ToolCallFormat::kHermes, ToolCallFormat::kDeepSeekV3, ToolCallFormat::kMistral, ToolCallFormat::kNone}) {
      ParsedOutput out = parse_output(ChatFormat{t, ReasoningFormat::kThinkTags}, text, false, seeded_call_ids(1));
      ASSERT_EQ(out.content, text) << to_string(t);
      ASSERT_TRUE(out.tool_calls.empty());
    }
  }
}

}  // namespace
}  // namespace slimkv::test
