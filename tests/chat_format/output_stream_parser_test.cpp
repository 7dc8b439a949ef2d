// OutputStreamParser: every case of chat_format_cases.h fed in every kind of split (1-byte chunks, fixed sizes,
// random sizes, token-like pieces) gives events whose concatenations equal parse_output's result; a call's id and
// name come first and its arguments after; text streams as it settles and a marker's start is never content.
#include "server/output_stream_parser.h"

#include <gtest/gtest.h>

#include <random>

#include "chat_format/chat_format_cases.h"

namespace slimkv::test {
namespace {

using Chunks = std::vector<std::string>;

Chunks fixed_chunks(const std::string& s, size_t n) {
  Chunks out;
  for (size_t i = 0; i < s.size(); i += n) out.push_back(s.substr(i, n));
  return out;
}

Chunks random_chunks(const std::string& s, uint32_t seed) {
  std::mt19937 rng(seed);
  Chunks out;
  for (size_t i = 0; i < s.size();) {
    size_t n = std::uniform_int_distribution<size_t>(1, 9)(rng);
    out.push_back(s.substr(i, n));
    i += n;
  }
  return out;
}

// Roughly what a tokenizer's pieces look like: a cut before '<' / '[' / '{' / a space, after '>' / ']' / '\n'.
Chunks token_chunks(const std::string& s) {
  Chunks out;
  std::string cur;
  for (char c : s) {
    if (!cur.empty() && (c == '<' || c == '[' || c == '{' || c == ' ')) out.push_back(std::move(cur)), cur.clear();
    cur += c;
    if (c == '>' || c == ']' || c == '\n') out.push_back(std::move(cur)), cur.clear();
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

std::vector<Chunks> all_splits(const std::string& s) {
  std::vector<Chunks> splits = {Chunks{s},          fixed_chunks(s, 1), fixed_chunks(s, 2),
                                fixed_chunks(s, 3), fixed_chunks(s, 7), token_chunks(s)};
  for (uint32_t seed = 1; seed <= 8; ++seed) splits.push_back(random_chunks(s, seed));
  return splits;
}

// Folds events as a client would, checking their order.
ParsedOutput fold(const std::vector<StreamEvent>& events) {
  ParsedOutput out;
  for (const StreamEvent& e : events) {
    switch (e.kind) {
      case StreamEvent::kContent:
      case StreamEvent::kReasoning:
        EXPECT_FALSE(e.text.empty());
        (e.kind == StreamEvent::kContent ? out.content : out.reasoning_content) += e.text;
        break;
      case StreamEvent::kToolCallStart:
        EXPECT_EQ(e.tool_index, static_cast<int>(out.tool_calls.size()));
        EXPECT_FALSE(e.id.empty());
        EXPECT_FALSE(e.name.empty());
        out.tool_calls.push_back(ToolCall{e.id, e.name, ""});
        break;
      case StreamEvent::kToolCallArguments:
        EXPECT_EQ(e.tool_index + 1, static_cast<int>(out.tool_calls.size()));  // the call just started
        if (!out.tool_calls.empty()) out.tool_calls.back().arguments += e.text;
        break;
    }
  }
  return out;
}

std::vector<StreamEvent> run_stream(const ChatFormatCase& c, const Chunks& chunks) {
  OutputStreamParser p(c.format, c.thinking_in_prompt, seeded_call_ids(11));
  std::vector<StreamEvent> events;
  for (const std::string& chunk : chunks) {
    auto got = p.feed(chunk);
    events.insert(events.end(), got.begin(), got.end());
  }
  auto tail = p.finish();
  events.insert(events.end(), tail.begin(), tail.end());
  EXPECT_EQ(p.saw_tool_call(), !c.calls.empty());
  return events;
}

class StreamCase : public ::testing::TestWithParam<ChatFormatCase> {};

TEST_P(StreamCase, EverySplitAddsUpToParseOutput) {
  const ChatFormatCase& c = GetParam();
  ParsedOutput whole = parse_output(c.format, c.text, c.thinking_in_prompt, seeded_call_ids(11));
  int split_no = 0;
  for (const Chunks& chunks : all_splits(c.text)) {
    SCOPED_TRACE("split " + std::to_string(split_no++) + " (" + std::to_string(chunks.size()) + " chunks)");
    ParsedOutput got = fold(run_stream(c, chunks));
    EXPECT_EQ(got.content, whole.content);
    EXPECT_EQ(got.reasoning_content, whole.reasoning_content);
    ASSERT_EQ(got.tool_calls.size(), whole.tool_calls.size());
    for (size_t i = 0; i < got.tool_calls.size(); ++i) {
      EXPECT_EQ(got.tool_calls[i].id, whole.tool_calls[i].id);
      EXPECT_EQ(got.tool_calls[i].name, whole.tool_calls[i].name);
      EXPECT_EQ(got.tool_calls[i].arguments, whole.tool_calls[i].arguments);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllFormats, StreamCase, ::testing::ValuesIn(all_chat_format_cases()),
                         [](const ::testing::TestParamInfo<ChatFormatCase>& i) { return i.param.name; });

// Byte by byte, the content released so far is always a prefix of the final content: a marker's first bytes are
// never released as content and then taken back.
TEST(OutputStreamParser, NeverReleasesAMarkerStartAsContent) {
  for (const ChatFormatCase& c : all_chat_format_cases()) {
    SCOPED_TRACE(c.name);
    OutputStreamParser p(c.format, c.thinking_in_prompt, seeded_call_ids(3));
    std::string content, reasoning;
    for (char ch : c.text) {
      for (const StreamEvent& e : p.feed(std::string_view(&ch, 1))) {
        if (e.kind == StreamEvent::kContent) content += e.text;
        if (e.kind == StreamEvent::kReasoning) reasoning += e.text;
      }
      ASSERT_EQ(c.content.substr(0, content.size()), content);
      ASSERT_EQ(c.reasoning.substr(0, reasoning.size()), reasoning);
    }
  }
}

// Text streams as soon as it cannot be a marker, not at the end.
TEST(OutputStreamParser, StreamsSettledTextBeforeTheEnd) {
  struct Live {
    ChatFormat f;
    bool think_in_prompt;
    std::string text, content_before_finish, reasoning_before_finish;
  };
  const std::vector<Live> lives = {
      {kQwen3Fmt, false, "<think>abc</think>Hello <b>world</b> <tool", "Hello <b>world</b> ", "abc"},
      {kQwen3Fmt, true, "still </thi", "", "still "},
      {kHarmonyFmt, false, "<|channel|>analysis<|message|>hmm<|end|><|start|>assistant<|channel|>final<|message|>Hi <|",
       "Hi ", "hmm"},
      {kDeepSeekFmt, false, "Look: <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function", "Look: ", ""},
      {kMistralFmt, false, "Sure [TOOL_C", "Sure ", ""},
      {kLlama3Fmt, false, "The answer {is} here", "The answer {is} here", ""},
      {kLlama3Fmt, false, " {\"name", "", ""},  // may be a call: held whole
  };
  for (const Live& l : lives) {
    SCOPED_TRACE(l.text);
    OutputStreamParser p(l.f, l.think_in_prompt, seeded_call_ids(1));
    ParsedOutput got = fold(p.feed(l.text));
    EXPECT_EQ(got.content, l.content_before_finish);
    EXPECT_EQ(got.reasoning_content, l.reasoning_before_finish);
  }
}

TEST(OutputStreamParser, CallEventsComeWhenTheCallCloses) {
  OutputStreamParser p(kQwen3Fmt, false, seeded_call_ids(5));
  EXPECT_TRUE(p.feed("<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n").empty());
  EXPECT_FALSE(p.saw_tool_call());
  auto events = p.feed("</tool_call>");
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].kind, StreamEvent::kToolCallStart);
  EXPECT_EQ(events[0].name, "f");
  EXPECT_EQ(events[0].tool_index, 0);
  EXPECT_EQ(events[1].kind, StreamEvent::kToolCallArguments);
  EXPECT_EQ(events[1].text, R"({"a":1})");
  EXPECT_TRUE(p.saw_tool_call());
  EXPECT_EQ(p.tool_call_count(), 1);
  EXPECT_TRUE(p.finish().empty());
}

}  // namespace
}  // namespace slimkv::test
